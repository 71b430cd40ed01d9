//! The five built-in hooks, in their fixed order. Three spawn this binary
//! (`ctx hook`, `security check-input`, `security check-output`); two run
//! in-process through injectable ports.

pub mod ctx_guard;
pub mod impact;
pub mod learning;
pub mod ports;
pub use crate::secrets as scanner;
pub mod script_file;
pub mod security;
pub mod self_protect;
pub mod shell;

pub use crate::config::builtin::*;

use crate::config::model::{Handler, Registration, RunsIn, Scope};
use crate::settings::Here;

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
use crate::runtime::reply::HookReply;
use crate::runtime::types::{EventInput, Outcome};

/// Runs one of the two in-process built-ins through its port (the no-op
/// defaults unless `runtime.toml` enables the shipped ones).
/// `first_edit` says whether this is the session's first edit of the file;
/// `run_id` is the event's (`KERYX_RUN_ID`).
// TODO(typed-errors): a typed error once `runtime::fire::BuiltinRunner`
// carries one; `commands::test` (and the `fire` bench tool) build that
// closure with a `String` error.
pub fn run_port(
    port: Port,
    input: &EventInput,
    first_edit: bool,
    run_id: &str,
    loc: &Here,
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
            sink.record(&obs)
                .map(|()| HookReply::default())
                .map_err(|e| e.to_string())
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
            let result = impact
                .evidence_for(&ports::ImpactEvidenceInput {
                    session_id: input.session_id.clone(),
                    file_path: path.into(),
                    tool_name: input.tool_name().unwrap_or_default().to_owned(),
                    project_root: loc.project_root_or_cwd().to_path_buf(),
                    first_edit_in_session: true,
                })
                .map_err(|e| e.to_string())?;
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
// TODO(typed-errors): it never fails; its type is
// `runtime::fire::InProcessCommand`'s, which `commands::test`,
// `commands::explain` and the `fire` bench tool take with a `String` error.
pub fn run_in_process(
    reg: &crate::config::model::Registration,
    payload: &serde_json::Value,
    loc: &Here,
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
