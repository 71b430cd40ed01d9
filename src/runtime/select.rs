//! Selection: which registrations fire for one event, and for every one
//! that does not, why. `run`, `test` and `explain` all go through
//! [`verdict`], so they cannot disagree on whether a hook fires.

use std::path::{Path, PathBuf};

use crate::config::load::Loaded;
use crate::config::model::{BuiltinPort, Handler, Profile, Registration, Scope};
use crate::escape::escape;
use crate::events::Event;
use crate::runtime::types::EventInput;
use crate::trust::ProjectTrust;

/// Why one registration does not fire for an event, in the order the
/// checks are made: the first that applies is the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRun {
    /// It is registered on another event.
    OtherEvent,
    /// Its matcher does not accept this tool.
    Matcher { matcher: String, tool: String },
    /// Its `if` does not name this call.
    Condition { condition: String },
    /// `enabled: false`, in the file named (when known).
    Disabled { by: Option<PathBuf> },
    /// Its `profiles` leave out the session's profile.
    Profile(Profile),
    /// A project command hook held back by trust (`untrusted`, `changed`,
    /// `store-refused`).
    Trust(&'static str),
    /// A built-in port runtime.toml leaves off (`learning`, `impact`).
    RuntimeToml(&'static str),
    /// A SubagentStart gate whose spawn was already gated at the bridge.
    RanAtBridge,
    /// A SubagentStart hook without decision power, run at the host's own
    /// SubagentStart instead of at the bridge.
    RunsAtHostEvent,
}

impl NotRun {
    /// The stable name (`skippedBecause`, `explain --json`).
    pub fn code(&self) -> &'static str {
        match self {
            NotRun::OtherEvent => "other-event",
            NotRun::Matcher { .. } => "matcher",
            NotRun::Condition { .. } => "if",
            NotRun::Disabled { .. } => "disabled",
            NotRun::Profile(_) => "profile",
            NotRun::Trust(state) => state,
            NotRun::RuntimeToml(_) => "runtime-toml",
            NotRun::RanAtBridge => "ran-at-bridge",
            NotRun::RunsAtHostEvent => "runs-at-host-event",
        }
    }

    /// Whether the hook was in the running for this very call (its event
    /// and matcher fit): only those leave a `skipped` record.
    pub fn considered(&self) -> bool {
        !matches!(
            self,
            NotRun::OtherEvent | NotRun::Matcher { .. } | NotRun::Condition { .. }
        )
    }

    /// The reason in plain words.
    pub fn text(&self) -> String {
        match self {
            NotRun::OtherEvent => "it is registered on another event".into(),
            NotRun::Matcher { matcher, tool } => format!(
                "its matcher `{}` does not match the tool `{}`",
                escape(matcher),
                escape(tool)
            ),
            NotRun::Condition { condition } => {
                format!("its `if` `{}` does not name this call", escape(condition))
            }
            NotRun::Disabled { by: Some(p) } => format!(
                "it is disabled (\"enabled\": false in `{}`)",
                escape(&p.display().to_string())
            ),
            NotRun::Disabled { by: None } => "it is disabled".into(),
            NotRun::Profile(p) => format!("it does not apply to the {p} profile"),
            NotRun::Trust("changed") => {
                "the project's hooks changed since you trusted them (see `keryx-hooks trust`)"
                    .into()
            }
            NotRun::Trust("store-refused") => {
                "the trust store cannot be used, so no project command hook runs".into()
            }
            NotRun::Trust(state) => {
                format!("the project's hooks are {state} (see `keryx-hooks trust`)")
            }
            NotRun::RuntimeToml("learning") => {
                "runtime.toml turns it off (`[learning] enabled = false`)".into()
            }
            NotRun::RuntimeToml(table) => {
                format!("runtime.toml leaves it off (`[{table}] enabled` is not true)")
            }
            NotRun::RanAtBridge => {
                "this spawn's gates already ran at the subagent tool call".into()
            }
            NotRun::RunsAtHostEvent => {
                "it runs at the host's own SubagentStart, where its context reaches the subagent"
                    .into()
            }
        }
    }
}

/// Which half of a spawn that reaches keryx twice this event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitSpawn {
    /// The host's own SubagentStart: every hook but the gates.
    HostEvent,
    /// The SubagentStart fired at the subagent tool call: only the gates.
    Bridge,
}

/// What selection looks at besides the registration and the event.
pub struct Filters<'a> {
    pub profile: Profile,
    /// The trust verdict whose held-back hooks do not run.
    pub trust: Option<&'a ProjectTrust>,
    /// `[learning] enabled` and `[impact] enabled` in runtime.toml.
    pub learning: bool,
    pub impact: bool,
    /// Which file turned a built-in off, by id.
    pub disabled_by: &'a [(String, PathBuf)],
    pub split: Option<SplitSpawn>,
}

impl<'a> Filters<'a> {
    /// Only the registration's own fields count: for a set that trust and
    /// runtime.toml have already been applied to.
    pub fn plain(profile: Profile) -> Filters<'static> {
        Filters {
            profile,
            trust: None,
            learning: true,
            impact: true,
            disabled_by: &[],
            split: None,
        }
    }

    /// Everything `run` looks at for `loaded` (trust already applied).
    pub fn for_run(
        profile: Profile,
        trust: Option<&'a ProjectTrust>,
        settings: &crate::settings::Settings,
        loaded: &'a Loaded,
    ) -> Filters<'a> {
        Filters {
            profile,
            trust,
            learning: settings.learning.is_some(),
            impact: settings.impact.is_some(),
            disabled_by: &loaded.disabled_by,
            split: None,
        }
    }
}

/// The one selection rule: `None` when `reg` fires for `input`.
pub fn verdict(reg: &Registration, input: &EventInput, f: &Filters) -> Option<NotRun> {
    if reg.event != input.event {
        return Some(NotRun::OtherEvent);
    }
    let tool = input.tool_name().unwrap_or("");
    if input.event.is_per_tool() && !reg.matcher.matches(tool) {
        return Some(NotRun::Matcher {
            matcher: reg.matcher.source(),
            tool: tool.to_owned(),
        });
    }
    if let Some(c) = &reg.condition {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        if !c.matches(
            tool,
            input.tool_input(),
            input.cwd.as_deref(),
            home.as_deref(),
        ) {
            return Some(NotRun::Condition {
                condition: c.source().to_owned(),
            });
        }
    }
    if let Some(off) = standing(reg, f) {
        return Some(off);
    }
    let gate = reg.class.has_decision_power();
    match f.split {
        Some(SplitSpawn::HostEvent) if reg.event == Event::SubagentStart && gate => {
            Some(NotRun::RanAtBridge)
        }
        Some(SplitSpawn::Bridge) if reg.event == Event::SubagentStart && !gate => {
            Some(NotRun::RunsAtHostEvent)
        }
        _ => None,
    }
}

/// What keeps `reg` from firing on any call, whatever the call is: a
/// disable, the profile, trust, runtime.toml. `None` when it is on (what
/// `list` shows as its effective state).
pub fn standing(reg: &Registration, f: &Filters) -> Option<NotRun> {
    if !reg.enabled {
        return Some(NotRun::Disabled {
            by: disabled_by(reg, f.disabled_by),
        });
    }
    if !reg.applies_to_profile(f.profile) {
        return Some(NotRun::Profile(f.profile));
    }
    if let Some(t) = f.trust
        && t.holds_back(reg)
    {
        return Some(NotRun::Trust(t.state.as_str()));
    }
    idle_port(reg, f.learning, f.impact).map(NotRun::RuntimeToml)
}

/// The runtime.toml table a built-in port waits for, while it is off.
pub fn idle_port(reg: &Registration, learning: bool, impact: bool) -> Option<&'static str> {
    match reg.handler {
        Handler::Builtin(BuiltinPort::LearningObserver) if !learning => Some("learning"),
        Handler::Builtin(BuiltinPort::ImpactEvidence) if !impact => Some("impact"),
        _ => None,
    }
}

fn disabled_by(reg: &Registration, overrides: &[(String, PathBuf)]) -> Option<PathBuf> {
    if reg.scope != Scope::Builtin {
        return reg.source.clone();
    }
    overrides
        .iter()
        .rev()
        .find(|(id, _)| *id == reg.id)
        .map(|(_, p)| p.clone())
}

/// One registration and what selection made of it.
#[derive(Debug, Clone)]
pub struct Considered<'r> {
    pub reg: &'r Registration,
    pub not_run: Option<NotRun>,
}

/// Every registration in load order, each selected or with its reason.
#[derive(Debug, Clone)]
pub struct Trace<'r> {
    pub event: Event,
    pub entries: Vec<Considered<'r>>,
}

impl<'r> Trace<'r> {
    /// Traces `input` over `regs` (in load order).
    pub fn of(
        regs: impl IntoIterator<Item = &'r Registration>,
        input: &EventInput,
        f: &Filters,
    ) -> Trace<'r> {
        Trace {
            event: input.event,
            entries: regs
                .into_iter()
                .map(|reg| Considered {
                    reg,
                    not_run: verdict(reg, input, f),
                })
                .collect(),
        }
    }

    /// The registrations that fire, in load order.
    pub fn selected(&self) -> Vec<&'r Registration> {
        self.entries
            .iter()
            .filter(|c| c.not_run.is_none())
            .map(|c| c.reg)
            .collect()
    }

    /// The hooks that fit this call but do not run, with why.
    pub fn skipped(&self) -> impl Iterator<Item = (&'r Registration, &NotRun)> {
        self.entries.iter().filter_map(|c| match &c.not_run {
            Some(n) if n.considered() => Some((c.reg, n)),
            _ => None,
        })
    }
}

/// `loaded`'s registrations with the ones trust held back put back in
/// their place: every registration in load order.
pub fn in_load_order<'r>(loaded: &'r Loaded, trust: &'r ProjectTrust) -> Vec<&'r Registration> {
    let mut all: Vec<&Registration> = loaded
        .registrations
        .iter()
        .chain(&trust.held_back)
        .collect();
    all.sort_by(|a, b| {
        (a.scope, a.index)
            .cmp(&(b.scope, b.index))
            .then_with(|| a.id.cmp(&b.id))
    });
    all
}

/// The file of a registration, for display.
pub fn source_text(reg: &Registration) -> String {
    reg.source
        .as_deref()
        .map_or_else(|| "built-in".to_owned(), |p: &Path| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins;
    use serde_json::json;

    fn bash(cmd: &str) -> EventInput {
        let mut i = EventInput::new(Event::PreToolUse, "s");
        i.fields.insert("toolName".into(), json!("Bash"));
        i.fields.insert("toolInput".into(), json!({"command": cmd}));
        i
    }

    #[test]
    fn the_first_reason_that_applies_is_given() {
        let regs = builtins::registrations();
        let input = bash("ls");
        let t = Trace::of(&regs, &input, &Filters::plain(Profile::DEFAULT));
        for c in &t.entries {
            if c.reg.event != Event::PreToolUse {
                assert_eq!(c.not_run, Some(NotRun::OtherEvent), "{}", c.reg.id);
            }
        }
        let mut off = regs.clone();
        for r in &mut off {
            r.enabled = false;
        }
        let by = vec![(
            builtins::CTX_GUARD.to_owned(),
            PathBuf::from("/home/u/.keryx/hooks.json"),
        )];
        let f = Filters {
            disabled_by: &by,
            ..Filters::plain(Profile::DEFAULT)
        };
        let t = Trace::of(&off, &input, &f);
        let guard = t
            .entries
            .iter()
            .find(|c| c.reg.id == builtins::CTX_GUARD && c.reg.event == Event::PreToolUse)
            .unwrap();
        assert_eq!(
            guard.not_run,
            Some(NotRun::Disabled {
                by: Some("/home/u/.keryx/hooks.json".into())
            })
        );
        assert!(t.selected().is_empty());
    }

    #[test]
    fn idle_ports_wait_for_runtime_toml() {
        let regs = builtins::registrations();
        let input = bash("ls");
        let f = Filters {
            learning: false,
            ..Filters::plain(Profile::DEFAULT)
        };
        let t = Trace::of(&regs, &input, &f);
        let skipped: Vec<_> = t
            .skipped()
            .map(|(r, n)| (r.id.as_str(), n.code()))
            .collect();
        assert!(skipped.contains(&("keryx.learning-observer", "runtime-toml")));
    }
}
