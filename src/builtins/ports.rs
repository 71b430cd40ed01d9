//! The in-process interfaces of the built-ins: the [`Verdict`] of the three
//! gate bodies, and the two ports of the spec's "Extension points for W3 and
//! W8" (`LearningObservationSink`, `ImpactEvidenceProvider`) with their
//! no-op defaults and the runtime.toml switch that picks the shipped ones.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::events::Event;
use crate::settings::{SettingError, Settings};

/// What a gate body decided. A deny carries its reason, already escaped
/// and free of any secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny(String),
}

impl Verdict {
    /// The hook stdout contract: nothing for allow, one JSON object for deny.
    pub fn to_stdout(&self) -> String {
        match self {
            Verdict::Allow => String::new(),
            Verdict::Deny(reason) => {
                let mut s = serde_json::json!({"decision": "deny", "reason": reason}).to_string();
                s.push('\n');
                s
            }
        }
    }
}

/// The seven observation kinds of the learning observer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObservationKind {
    ToolStart,
    ToolComplete,
    ToolFailed,
    UserPrompt,
    SessionStart,
    TurnStop,
    SessionEnd,
}

impl ObservationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ObservationKind::ToolStart => "tool-start",
            ObservationKind::ToolComplete => "tool-complete",
            ObservationKind::ToolFailed => "tool-failed",
            ObservationKind::UserPrompt => "user-prompt",
            ObservationKind::SessionStart => "session-start",
            ObservationKind::TurnStop => "turn-stop",
            ObservationKind::SessionEnd => "session-end",
        }
    }

    /// The kind for `event`, or `None` for the three events the observer is
    /// not registered on. Kept in step with `LEARNING_OBSERVER_EVENT_KIND`
    /// by a test.
    pub fn for_event(event: Event) -> Option<ObservationKind> {
        Some(match event {
            Event::PreToolUse => ObservationKind::ToolStart,
            Event::PostToolUse => ObservationKind::ToolComplete,
            Event::PostToolUseFailure => ObservationKind::ToolFailed,
            Event::UserPromptSubmit => ObservationKind::UserPrompt,
            Event::SessionStart => ObservationKind::SessionStart,
            Event::Stop => ObservationKind::TurnStop,
            Event::SessionEnd => ObservationKind::SessionEnd,
            Event::PreCompact | Event::SubagentStart | Event::SubagentStop => return None,
        })
    }
}

/// One observation, the spec's `LearningObservation`: the raw event
/// payload passed straight through; redaction is the sink's job.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LearningObservation {
    pub kind: ObservationKind,
    pub session_id: String,
    pub run_id: String,
    pub timestamp: String,
    pub payload: Value,
}

/// Why a port failed: the learning sink did not record an observation, or
/// impact evidence could not be gathered.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("learning sink `{}`: {error}", dir.display())]
    Sink {
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// The user's secret rules do not load, so nothing may be stored.
    #[error("nothing recorded: {}", super::security::rules_unavailable(why))]
    Unredactable { why: SettingError },
    #[error(transparent)]
    Impact(#[from] super::impact::ImpactError),
}

/// W3's port. An error is reported as `hook-observer-failed` and never
/// blocks anything (the observer's class is observe).
pub trait LearningObservationSink: Send + Sync {
    fn record(&self, obs: &LearningObservation) -> Result<(), PortError>;
}

/// The spec's `ImpactEvidenceInput`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImpactEvidenceInput {
    pub session_id: String,
    pub file_path: PathBuf,
    pub tool_name: String,
    pub project_root: PathBuf,
    /// Always true when the runtime calls a provider: it consults providers
    /// only on a session's first edit of a file.
    pub first_edit_in_session: bool,
}

/// The spec's `ImpactEvidenceResult`: context to add, and whether to ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImpactEvidenceResult {
    pub additional_context: Option<String>,
    pub decision_ask: bool,
}

/// W8's port. The hook is gate-advisory: an error is a failure classified
/// per profile by the runtime, like any other gate-advisory hook's.
pub trait ImpactEvidenceProvider: Send + Sync {
    fn evidence_for(&self, input: &ImpactEvidenceInput) -> Result<ImpactEvidenceResult, PortError>;
}

/// The default sink: records nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopSink;

impl LearningObservationSink for NoopSink {
    fn record(&self, _: &LearningObservation) -> Result<(), PortError> {
        Ok(())
    }
}

/// The default provider: no context, no escalation.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopImpact;

impl ImpactEvidenceProvider for NoopImpact {
    fn evidence_for(&self, _: &ImpactEvidenceInput) -> Result<ImpactEvidenceResult, PortError> {
        Ok(ImpactEvidenceResult::default())
    }
}

/// The sink when learning is on but the secret rules cannot load: an
/// observation is never stored with weaker redaction than the user asked
/// for, so each one fails as `hook-observer-failed` (an observer fails open)
/// and nothing is written.
struct Unredactable(SettingError);

impl LearningObservationSink for Unredactable {
    fn record(&self, _: &LearningObservation) -> Result<(), PortError> {
        Err(PortError::Unredactable {
            why: self.0.clone(),
        })
    }
}

/// The ports runtime.toml asks for: the shipped JSONL sink when
/// `[learning] enabled = true`, the shipped repository provider when
/// `[impact] enabled = true`, and the no-ops otherwise. A file that is
/// missing, unreadable or invalid also gives the no-ops (`keryx-hooks
/// doctor` reports it); learning whose secret rules do not load gives
/// `Unredactable`.
pub fn ports_from(
    settings: &Settings,
    state_dir: &Path,
) -> (
    Box<dyn LearningObservationSink>,
    Box<dyn ImpactEvidenceProvider>,
) {
    let sink: Box<dyn LearningObservationSink> = match &settings.learning {
        None => Box::new(NoopSink),
        // No `[security]` table: the built-in rules, compiled only when a
        // string of the observation could hold a secret.
        Some(limits) if !settings.has_security_table() => {
            Box::new(super::learning::JsonlSink::new(
                state_dir.join("learning"),
                super::learning::Redactor::Builtin,
                *limits,
            ))
        }
        Some(limits) => match settings.rules() {
            Ok(rules) => Box::new(super::learning::JsonlSink::new(
                state_dir.join("learning"),
                rules.clone(),
                *limits,
            )),
            Err(why) => Box::new(Unredactable(why.clone())),
        },
    };
    let provider: Box<dyn ImpactEvidenceProvider> = match settings.impact {
        None => Box::new(NoopImpact),
        Some(impact) => Box::new(super::impact::RepoImpactProvider::from_settings(
            impact,
            Some(state_dir.join("impact-cache")),
        )),
    };
    (sink, provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_match_the_registration_table() {
        for (event, kind) in super::super::LEARNING_OBSERVER_EVENT_KIND {
            assert_eq!(
                ObservationKind::for_event(event).map(ObservationKind::as_str),
                Some(kind)
            );
        }
        let mapped = Event::ALL
            .iter()
            .filter(|e| ObservationKind::for_event(**e).is_some())
            .count();
        assert_eq!(mapped, 7);
    }

    #[test]
    fn verdict_stdout_is_silence_or_one_deny_object() {
        assert_eq!(Verdict::Allow.to_stdout(), "");
        let v: Value = serde_json::from_str(&Verdict::Deny("no \"x\"".into()).to_stdout()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"decision": "deny", "reason": "no \"x\""})
        );
    }

    #[test]
    fn noop_ports_do_nothing() {
        let obs = LearningObservation {
            kind: ObservationKind::ToolStart,
            session_id: "s".into(),
            run_id: "r".into(),
            timestamp: "t".into(),
            payload: Value::Null,
        };
        assert!(NoopSink.record(&obs).is_ok());
        let input = ImpactEvidenceInput {
            session_id: "s".into(),
            file_path: "a.rs".into(),
            tool_name: "Edit".into(),
            project_root: "/p".into(),
            first_edit_in_session: true,
        };
        assert_eq!(
            NoopImpact.evidence_for(&input).ok(),
            Some(ImpactEvidenceResult::default())
        );
    }

    /// What a failed port says, word for word.
    #[test]
    fn a_failed_port_says_where() {
        let sink = PortError::Sink {
            dir: PathBuf::from("/state/learning"),
            error: std::io::Error::other("disk full"),
        };
        assert_eq!(
            sink.to_string(),
            "learning sink `/state/learning`: disk full"
        );
        let provider = super::super::impact::RepoImpactProvider::new(
            crate::settings::ImpactLimits::default(),
            None,
        );
        let err = provider
            .evidence_for(&ImpactEvidenceInput {
                session_id: "s".into(),
                file_path: PathBuf::from("a.rs"),
                tool_name: "Write".into(),
                project_root: PathBuf::from("/nonexistent/project"),
                first_edit_in_session: true,
            })
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "project root `/nonexistent/project` is not a directory"
        );
    }

    fn prompt_observation() -> LearningObservation {
        LearningObservation {
            kind: ObservationKind::UserPrompt,
            session_id: "s1".into(),
            run_id: "r".into(),
            timestamp: "t".into(),
            payload: serde_json::json!({"prompt": "hi"}),
        }
    }

    #[test]
    fn runtime_toml_switches_the_shipped_ports_on() {
        let home = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let obs = prompt_observation();
        let file = home.path().join("runtime.toml");
        // Turned off: a no-op, nothing written.
        std::fs::write(&file, "[learning]\nenabled = false\n").unwrap();
        let (sink, _) = ports_from(&Settings::read(&file), state.path());
        sink.record(&obs).unwrap();
        assert!(!state.path().join("learning").exists());
        // No file: the learning sink is on (the spec's default).
        std::fs::remove_file(&file).unwrap();
        let (sink, _) = ports_from(&Settings::read(&file), state.path());
        sink.record(&obs).unwrap();
        assert!(state.path().join("learning/observations.jsonl").is_file());
        std::fs::remove_dir_all(state.path().join("learning")).unwrap();

        std::fs::write(
            &file,
            "[learning]\nenabled = true\n[impact]\nenabled = true\n",
        )
        .unwrap();
        let (sink, _) = ports_from(&Settings::read(&file), state.path());
        sink.record(&obs).unwrap();
        assert!(state.path().join("learning").is_dir());
    }

    #[test]
    fn the_sink_records_nothing_when_the_user_s_rules_do_not_load() {
        let home = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let file = home.path().join("runtime.toml");
        std::fs::write(
            &file,
            "[learning]\nenabled = true\n[[security.rules]]\nid = \"x\"\nregex = '('\n",
        )
        .unwrap();
        let (sink, _) = ports_from(&Settings::read(&file), state.path());
        let obs = prompt_observation();
        let err = sink.record(&obs).unwrap_err().to_string();
        assert!(
            err.starts_with("nothing recorded: keryx-hooks cannot load its secret rules: "),
            "{err}"
        );
        assert!(!state.path().join("learning").exists());
    }
}
