//! The built-in layer: the five built-in hooks' ids, events, matchers and
//! classes, in the spec's fixed order. It is configuration like the user's
//! and the project's layers; what each built-in does is `builtins/`.

use std::collections::BTreeMap;

use crate::config::matcher::Matcher;
use crate::config::model::{
    BuiltinPort, CommandSpec, Handler, HookClass, Network, Registration, RunsIn, SELF_EXE, Scope,
};
use crate::events::Event;

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

/// The canonical tools ctx-guard reads: the shell, the Read/Grep-like tools
/// that can pour a secret file into the context, and every MCP tool, which
/// is judged by what its arguments do.
pub const CTX_GUARD_TOOLS: &str = "^(Bash|Read|Grep|mcp__.+)$";

/// Every canonical tool that writes a file (each host's own names map onto
/// these in its adapter, `tools`), and every MCP tool, whose arguments may
/// name a file it writes.
pub const WRITE_TOOLS: &str = "^(Write|Edit|MultiEdit|NotebookEdit|mcp__.+)$";

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
        protocol: None,
    })
}

fn reg(id: &str, event: Event, matcher: &str, class: HookClass, handler: Handler) -> Registration {
    Registration {
        id: id.to_owned(),
        event,
        matcher: Matcher::compile(matcher).expect("built-in matchers compile"),
        condition: None,
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
    let native = crate::adapter::native().name();
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
