//! The five built-in hooks, in their fixed order. Three spawn this binary
//! (`ctx hook`, `security check-input`, `security check-output`); two run
//! in-process through injectable ports.

pub mod ctx_guard;
pub mod impact;
pub mod learning;
pub mod ports;
pub mod scanner;
pub mod security;
pub mod self_protect;
pub mod shell;

use std::collections::BTreeMap;

use crate::config::matcher::Matcher;
use crate::config::model::{
    BuiltinPort, CommandSpec, Handler, HookClass, Network, Registration, RunsIn, SELF_EXE, Scope,
};
use crate::runtime::events::Event;

pub const CTX_GUARD: &str = "keryx.ctx-guard";
pub const SECURITY_CHECK_INPUT: &str = "keryx.security-check-input";
pub const SECURITY_CHECK_OUTPUT: &str = "keryx.security-check-output";
pub const LEARNING_OBSERVER: &str = "keryx.learning-observer";
pub const IMPACT_EVIDENCE: &str = "keryx.impact-evidence";

pub const IDS: [&str; 5] = [
    CTX_GUARD,
    SECURITY_CHECK_INPUT,
    SECURITY_CHECK_OUTPUT,
    LEARNING_OBSERVER,
    IMPACT_EVIDENCE,
];

/// The canonical tools ctx-guard reads: the shell, and the Read/Grep-like
/// tools that can pour a secret file into the context.
pub const CTX_GUARD_TOOLS: &str = "Bash|Read|Grep";

/// Every canonical tool that writes a file; each host's own names map onto
/// these in its adapter (`tools`).
pub const WRITE_TOOLS: &str = "Write|Edit|MultiEdit|NotebookEdit";

/// The seven events the learning observer records, and the observation
/// kind each maps to.
pub const LEARNING_OBSERVER_EVENT_KIND: [(Event, &str); 7] = [
    (Event::PreToolUse, "tool-start"),
    (Event::PostToolUse, "tool-complete"),
    (Event::PostToolUseFailure, "tool-failed"),
    (Event::UserPromptSubmit, "user-prompt"),
    (Event::SessionStart, "session-start"),
    (Event::Stop, "turn-stop"),
    (Event::SessionEnd, "session-end"),
];

/// The class of built-in `id`, if it is one.
pub fn class_of(id: &str) -> Option<HookClass> {
    match id {
        CTX_GUARD | SECURITY_CHECK_INPUT | SECURITY_CHECK_OUTPUT => Some(HookClass::Gate),
        IMPACT_EVIDENCE => Some(HookClass::GateAdvisory),
        LEARNING_OBSERVER => Some(HookClass::Observe),
        _ => None,
    }
}

fn command(args: &[&str]) -> Handler {
    let mut argv = vec![SELF_EXE.to_owned()];
    argv.extend(args.iter().map(|s| (*s).to_owned()));
    Handler::Command(CommandSpec {
        argv,
        cwd: None,
        env: BTreeMap::new(),
        env_passthrough: Vec::new(),
    })
}

fn reg(id: &str, event: Event, matcher: &str, class: HookClass, handler: Handler) -> Registration {
    Registration {
        id: id.to_owned(),
        event,
        matcher: Matcher::compile(matcher).expect("built-in matchers compile"),
        class,
        handler,
        timeout_ms: Registration::DEFAULT_TIMEOUT_MS,
        runs_in: RunsIn::Sandbox,
        network: Network::None,
        sandbox_writable: Vec::new(),
        applies_to_child_agents: true,
        profiles: Vec::new(),
        enabled: true,
        description: None,
        scope: Scope::Builtin,
        source: None,
        index: 0,
    }
}

/// The built-in layer, in the spec's order.
pub fn registrations() -> Vec<Registration> {
    // Run by hand, the built-ins answer as the native host's hooks.
    let native = crate::hosts::native().name();
    let mut out = vec![
        reg(
            CTX_GUARD,
            Event::PreToolUse,
            CTX_GUARD_TOOLS,
            HookClass::Gate,
            command(&["ctx", "hook", native]),
        ),
        reg(
            SECURITY_CHECK_INPUT,
            Event::UserPromptSubmit,
            "*",
            HookClass::Gate,
            command(&[
                "security",
                "check-input",
                "--source",
                "untrusted-external",
                "--runtime",
                native,
            ]),
        ),
        reg(
            SECURITY_CHECK_OUTPUT,
            Event::PreToolUse,
            WRITE_TOOLS,
            HookClass::Gate,
            command(&["security", "check-output", "--runtime", native]),
        ),
    ];
    for (event, _) in LEARNING_OBSERVER_EVENT_KIND {
        out.push(reg(
            LEARNING_OBSERVER,
            event,
            "*",
            HookClass::Observe,
            Handler::Builtin(BuiltinPort::LearningObserver),
        ));
    }
    out.push(reg(
        IMPACT_EVIDENCE,
        Event::PreToolUse,
        "Write|Edit",
        HookClass::GateAdvisory,
        Handler::Builtin(BuiltinPort::ImpactEvidence),
    ));
    for (i, r) in out.iter_mut().enumerate() {
        r.index = i;
    }
    out
}

/// True when `reg` is a built-in command hook that [`run_in_process`]
/// answers in this process under `profile`: no spawn and no side effect, so
/// running it again for a repeated delivery gives the same answer.
pub fn answers_in_process(reg: &Registration, profile: crate::config::model::Profile) -> bool {
    reg.scope == Scope::Builtin
        && matches!(reg.handler, Handler::Command(_))
        && !profile.isolation_required()
        && reg.effective_runs_in(profile) == RunsIn::Unsandboxed
        && matches!(
            reg.id.as_str(),
            SECURITY_CHECK_INPUT | SECURITY_CHECK_OUTPUT | CTX_GUARD
        )
}

use crate::config::model::BuiltinPort as Port;
use crate::paths::Locations;
use crate::runtime::reply::HookReply;
use crate::runtime::types::{EventInput, Outcome};

/// Runs one of the two in-process built-ins through its port (the no-op
/// defaults unless `runtime.toml` enables the shipped ones).
/// `first_edit` says whether this is the session's first edit of the file;
/// `run_id` is the event's (`KERYX_RUN_ID`).
pub fn run_port(
    port: Port,
    input: &EventInput,
    first_edit: bool,
    run_id: &str,
    loc: &Locations,
) -> Result<HookReply, String> {
    let (sink, impact) = ports::ports_from(loc.settings(), &loc.state_dir);
    match port {
        Port::LearningObserver => {
            let Some(kind) = ports::ObservationKind::for_event(input.event) else {
                return Ok(HookReply::default());
            };
            let obs = ports::LearningObservation {
                kind,
                session_id: input.session_id.clone(),
                // The run id every hook of this event is given.
                run_id: run_id.to_owned(),
                timestamp: crate::base::time::timestamp_now(),
                payload: serde_json::Value::Object(input.fields.clone()),
            };
            sink.record(&obs).map(|()| HookReply::default())
        }
        Port::ImpactEvidence => {
            let path = input.tool_input().and_then(|ti| {
                ["file_path", "filePath", "path"]
                    .iter()
                    .find_map(|k| ti.get(*k).and_then(serde_json::Value::as_str))
            });
            let (Some(path), true) = (path, first_edit) else {
                return Ok(HookReply::default());
            };
            let result = impact.evidence_for(&ports::ImpactEvidenceInput {
                session_id: input.session_id.clone(),
                file_path: path.into(),
                tool_name: input.tool_name().unwrap_or_default().to_owned(),
                project_root: loc.project_root_or_cwd().to_path_buf(),
                first_edit_in_session: true,
            })?;
            Ok(HookReply {
                decision: result.decision_ask.then_some(Outcome::Ask),
                additional_context: result.additional_context,
                reason: result
                    .decision_ask
                    .then(|| "impact evidence asks for a review of this edit".to_owned()),
                attempted_rewrite: false,
                system_message: None,
            })
        }
    }
}

/// Runs a built-in command hook in this process instead of spawning this
/// binary: same verdict, without a process spawn on every tool call. Only
/// called when the hook runs unsandboxed; `None` means spawn it.
pub fn run_in_process(
    reg: &crate::config::model::Registration,
    payload: &serde_json::Value,
    loc: &Locations,
) -> Option<Result<HookReply, String>> {
    if reg.scope != crate::config::model::Scope::Builtin {
        return None;
    }
    let settings = loc.settings();
    let verdict = match reg.id.as_str() {
        SECURITY_CHECK_INPUT => {
            security::with_rules(settings, |r| security::check_input(payload, r))
        }
        SECURITY_CHECK_OUTPUT => security::check_output_at(payload, loc),
        CTX_GUARD => {
            ctx_guard::check_with(payload, &ctx_guard::CtxGuardConfig::from_locations(loc))
        }
        _ => return None,
    };
    Some(Ok(match verdict {
        ports::Verdict::Allow => HookReply::default(),
        ports::Verdict::Deny(reason) => HookReply {
            decision: Some(Outcome::Deny),
            reason: Some(reason),
            ..HookReply::default()
        },
    }))
}
