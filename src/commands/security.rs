//! `keryx-hooks security check-input [--source S] [--runtime HOST]` and
//! `keryx-hooks security check-output [--runtime HOST]`: the spawned bodies
//! of `keryx.security-check-input` and `keryx.security-check-output`.
//!
//! Both read one JSON payload on stdin and answer in the hook stdout
//! contract: nothing for allow; for deny, `{"decision":"deny","reason":…}`
//! under `--runtime keryx`, or the host's own deny shape (from its adapter)
//! when a host runs the command directly. A payload that cannot be read is
//! a deny, never a silent allow: these are gates.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::builtins::ports::Verdict;
use crate::builtins::security;
use crate::cli::{CheckInputArgs, CheckOutputArgs};
use crate::error::CmdResult;
use crate::escape::escape;
use crate::hosts::stdin_guard::{self, Limits};
use crate::output;
use crate::paths::Locations;
use crate::runtime::events::Event;
use crate::runtime::types::{FireResult, Outcome};

pub fn check_input(args: &CheckInputArgs) -> CmdResult {
    // A prompt from any source is scanned with the same rules; a deny names
    // the source, so the reason (and the hook_invocation record that
    // carries it) says where the prompt came from.
    answer(&args.runtime, Event::UserPromptSubmit, |payload, loc| {
        security::with_rules(loc.settings(), |rules| {
            security::check_input_from(payload, rules, &args.source)
        })
    })
}

pub fn check_output(args: &CheckOutputArgs) -> CmdResult {
    answer(&args.runtime, Event::PreToolUse, security::check_output_at)
}

/// The shared frame of the three spawned built-ins: read the payload,
/// resolve locations from its `cwd`, run `body`, print the answer for
/// `host`, exit as that host expects.
pub(crate) fn answer(
    host: &str,
    event: Event,
    body: impl FnOnce(&Value, &Locations) -> Verdict,
) -> CmdResult {
    let host = canonical_host(host);
    let (payload, verdict) = match stdin_guard::read_json(std::io::stdin(), &Limits::default()) {
        Ok(payload) => {
            let loc = Locations::resolve(&payload_cwd(&payload));
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
fn canonical_host(host: &str) -> &str {
    match host {
        "claude" => "claude-code",
        "gemini" => "gemini-cli",
        other => other,
    }
}

fn payload_cwd(payload: &Value) -> PathBuf {
    payload
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| Path::new("/").to_path_buf())
}

fn emit(host: &str, event: Event, payload: &Value, verdict: &Verdict) -> ExitCode {
    let reason = match verdict {
        Verdict::Allow => return ExitCode::SUCCESS,
        Verdict::Deny(r) => r,
    };
    let adapter = crate::hosts::adapter(host).filter(|_| host != "keryx");
    let Some(adapter) = adapter else {
        if host != "keryx" {
            // An unknown host: answer in every shape we can. The JSON for a
            // caller that reads it, exit 2 and stderr for one that does not
            // (every host documents exit 2 as blocking).
            output::stdout(&verdict.to_stdout());
            output::err_line(reason);
            return ExitCode::from(2);
        }
        output::stdout(&verdict.to_stdout());
        return ExitCode::SUCCESS;
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
    ExitCode::from(encoded.exit_code)
}
