//! What several commands share: asking on a terminal, finding the project
//! and its trust store, resolving host and scope arguments, the frame of
//! the spawned built-in bodies, and a few lines of text. Commands import
//! this, never each other.

/// Asks `question` on the terminal; anything but yes is no.
pub(crate) mod hooks_file;
pub(crate) mod imported;
pub(crate) mod shim_probe;

use crate::error::ExitStatus;
use crate::settings::Here;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::builtins::ports::Verdict;
use crate::cli::ScopeArg;
use crate::config::model::Registration;
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::events::Event;
use crate::hosts::Adapter;
use crate::hosts::stdin_guard::{self, Limits};
use crate::install::hostfile;
use crate::install::hostfile::Scope;
use crate::output;
use crate::runtime::types::{FireResult, Outcome};
use crate::trust::Store;

pub(crate) fn ask(question: &str) -> Result<bool, CommandError> {
    output::stdout(&format!("{question} [y/N] "));
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// The project root, or a user error saying there is none.
pub(crate) fn project_root(loc: &Here) -> Result<PathBuf, CommandError> {
    loc.project_root.clone().ok_or_else(|| {
        CommandError::user(format!(
            "`{}` is not inside a project (no git toplevel or `.metaproject` above it)",
            escape(&loc.cwd.display().to_string())
        ))
        .hint("run this from inside the project whose hooks you mean")
    })
}

/// The trust store, or a refusal saying why it cannot be used.
pub(crate) fn open_store(loc: &Here) -> Result<Store, CommandError> {
    Store::locate(loc).map_err(|why| {
        CommandError::user("refusing to use the trust store; nothing was read or written")
            .cause(escape(&why.to_string()))
            .hint("set XDG_DATA_HOME to a directory outside the project that only you can write")
    })
}

/// `sandbox.writable: a, b` (escaped), when the registration widens its
/// sandbox; shared with `test` and `trust`.
pub(crate) fn writable_text(r: &Registration) -> Option<String> {
    (!r.sandbox_writable.is_empty()).then(|| {
        format!(
            "sandbox.writable: {}",
            r.sandbox_writable
                .iter()
                .map(|p| escape(p))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// What `KERYX_HOOKS=off` in this environment means, when it is set.
pub(crate) fn kill_switch() -> Option<String> {
    (crate::env_vars::get(crate::env_vars::KERYX_HOOKS).as_deref() == Some("off")).then(|| {
        "KERYX_HOOKS=off is set in this environment: in every session started from it no hook runs and no gate guards anything".to_owned()
    })
}

pub(crate) fn scope(arg: ScopeArg) -> Scope {
    match arg {
        ScopeArg::User => Scope::User,
        ScopeArg::Project => Scope::Project,
    }
}

/// The adapters for `names` (names or aliases), each once, in the order
/// given: hosts with a config file or plugin to wire.
pub(crate) fn resolve_hosts(names: &[String]) -> Result<Vec<&'static Adapter>, CommandError> {
    super::resolve_hosts(
        names,
        &hostfile::wirable_hosts(),
        "hosts that can be wired",
        |host| {
            format!(
                "{} runs keryx-hooks itself (`keryx-hooks run {} <event>`); there is nothing to wire",
                host.display_name(),
                host.name()
            )
        },
    )
}

/// Where `--format plugin` writes packages without `--out`, under the home.
pub(crate) const DEFAULT_PLUGIN_DIR: &str = ".agentic/hooks-plugins";

/// The shared frame of the three spawned built-ins: read the payload,
/// resolve locations from its `cwd`, run `body`, print the answer for
/// `host`, exit as that host expects.
pub(crate) fn answer(
    host: &str,
    event: Event,
    body: impl FnOnce(&Value, &Here) -> Verdict,
) -> CmdResult {
    let host = canonical_host(host);
    let (payload, verdict) = match stdin_guard::read_json(std::io::stdin(), &Limits::default()) {
        Ok(payload) => {
            let loc = Here::resolve(&payload_cwd(&payload));
            let v = body(&payload, &loc);
            (payload, v)
        }
        Err(e) => (
            Value::Null,
            Verdict::Deny(format!(
                "keryx-hooks could not read the hook payload: {}",
                escape(&e.to_string())
            )),
        ),
    };
    Ok(emit(host, event, &payload, &verdict))
}

/// The spec and older configs say `claude` and `gemini`.
pub(crate) fn canonical_host(host: &str) -> &str {
    crate::hosts::lookup(host).map_or(host, |a| a.name())
}

pub(crate) fn payload_cwd(payload: &Value) -> PathBuf {
    payload
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| Path::new("/").to_path_buf())
}

pub(crate) fn emit(host: &str, event: Event, payload: &Value, verdict: &Verdict) -> ExitStatus {
    let reason = match verdict {
        Verdict::Allow => return ExitStatus::Success,
        Verdict::Deny(r) => r,
    };
    let known = crate::hosts::adapter(host);
    let adapter = known.filter(|a| !a.is_native());
    let Some(adapter) = adapter else {
        if known.is_none() {
            // An unknown host: answer in every shape we can. The JSON for a
            // caller that reads it, exit 2 and stderr for one that does not
            // (every host documents exit 2 as blocking).
            output::stdout(&verdict.to_stdout());
            output::err_line(reason);
            return ExitStatus::Usage;
        }
        output::stdout(&verdict.to_stdout());
        return ExitStatus::Success;
    };
    let host_event = payload
        .get("hook_event_name")
        .and_then(Value::as_str)
        .or_else(|| adapter.host_event_for(event))
        .unwrap_or(event.as_str());
    let mut result = FireResult::none();
    result.outcome = Outcome::Deny;
    result.reason = Some(reason.clone());
    let encoded = adapter.encode(host_event, event, &result);
    output::stdout(&encoded.stdout);
    if !encoded.stderr.is_empty() {
        output::err_line(encoded.stderr.trim_end());
    }
    ExitStatus::Host(encoded.exit_code)
}
