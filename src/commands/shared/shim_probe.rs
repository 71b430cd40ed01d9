//! `doctor`'s live run of a wiring: the exact command a host file holds,
//! run through `sh -c` as the hosts run it, fed a tool call in that host's
//! own payload shape, and its answer read with that host's rules. Two
//! calls: a harmless `true` that must come back allowed, and a read of
//! `~/.ssh/id_rsa` that the built-in ctx-guard must deny. The shim runs in
//! an empty directory with a throwaway state directory, so the calls leave
//! no session records for `log` and no learning observations.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::base::process;
use crate::env_vars;
use crate::events::Event;
use crate::hosts::Adapter;
use crate::runtime::native;
use crate::runtime::types::{EventInput, Outcome};

/// How long one probe call may take: a shim that answers slower than this
/// on a trivial call is reported as hung.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// The session id the probe calls carry.
const SESSION: &str = "keryx-doctor-probe";

/// What the two calls showed.
pub(crate) struct Probe {
    /// `Err` says what was wrong with the answer to the harmless call.
    pub allow: Result<(), String>,
    /// Likewise for the call the built-ins deny (an allow is wrong too).
    pub deny: Result<(), String>,
}

/// The host event `adapter` fires before a tool runs, if it wires one.
pub(crate) fn tool_event(adapter: &Adapter) -> Option<&'static str> {
    adapter
        .events()
        .iter()
        .find(|e| e.wired() && e.event() == Event::PreToolUse && e.can_deny())
        .map(|e| e.name())
}

/// Runs `command` as `adapter` would on `host_event`: the harmless call,
/// then (when that one worked) the one the built-ins deny.
pub(crate) fn probe(adapter: &Adapter, host_event: &str, command: &str) -> Probe {
    let allow = call(adapter, host_event, command, "true").and_then(|d| match d {
        Some(Outcome::Deny | Outcome::Ask) => {
            Err("it refused a harmless `true` (a hook of yours denies it?)".to_owned())
        }
        _ => Ok(()),
    });
    if let Err(e) = &allow {
        return Probe {
            deny: Err(e.clone()),
            allow,
        };
    }
    let deny = call(adapter, host_event, command, "cat ~/.ssh/id_rsa");
    Probe {
        allow,
        deny: deny.and_then(|d| match d {
            Some(Outcome::Deny | Outcome::Ask) => Ok(()),
            _ => Err(
                "it let `cat ~/.ssh/id_rsa` through, which the built-in `keryx.ctx-guard` denies (is it disabled?)"
                    .to_owned(),
            ),
        }),
    }
}

/// One call: the decision the host would read, or what went wrong.
fn call(
    adapter: &Adapter,
    host_event: &str,
    command: &str,
    shell: &str,
) -> Result<Option<Outcome>, String> {
    let (Ok(cwd), Ok(state)) = (tempfile::tempdir(), tempfile::tempdir()) else {
        return Err("cannot make a temporary directory".into());
    };
    let payload = payload(adapter, cwd.path(), shell);
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", command])
        .current_dir(cwd.path())
        .env(env_vars::XDG_STATE_HOME, state.path());
    let f = match process::run(cmd, payload.to_string().as_bytes(), PROBE_TIMEOUT) {
        Ok(f) => f,
        Err(e) => return Err(format!("`sh` cannot start: {e}")),
    };
    let said = |what: &str| {
        let tail = f.stderr.trim().lines().last().unwrap_or_default();
        if tail.is_empty() {
            what.to_owned()
        } else {
            format!("{what}: {}", crate::escape::escape(tail))
        }
    };
    if f.timed_out {
        Err(format!(
            "it did not answer within {} s",
            PROBE_TIMEOUT.as_secs()
        ))
    } else {
        match f.code {
            None => Err("it was killed by a signal".to_owned()),
            Some(127) => Err(said("the command was not found (exit 127)")),
            Some(code) => {
                read(adapter, host_event, code, &f.stdout, &f.stderr).map_err(|e| said(&e))
            }
        }
    }
}

/// A `Bash` call of `shell` in `adapter`'s payload shape for `host_event`.
fn payload(adapter: &Adapter, cwd: &Path, shell: &str) -> Value {
    let mut input = EventInput::new(Event::PreToolUse, SESSION);
    input.cwd = Some(cwd.to_path_buf());
    input.fields.insert("toolName".into(), json!("Bash"));
    input
        .fields
        .insert("toolInput".into(), json!({ "command": shell }));
    input
        .fields
        .insert("toolCallId".into(), json!("keryx-doctor-call"));
    native::payload(adapter, &input)
}

/// The decision `adapter` reads from an answer; `Err` when it would read a
/// failed hook, or the answer is not the one JSON object the shim prints.
fn read(
    adapter: &Adapter,
    host_event: &str,
    code: i32,
    stdout: &str,
    stderr: &str,
) -> Result<Option<Outcome>, String> {
    let text = stdout.trim();
    let object = if text.is_empty() {
        None
    } else {
        match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => Some(v),
            _ => return Err("it printed something other than one JSON object".into()),
        }
    };
    if let Some(protocol) = adapter.hook_protocol() {
        return match native::read(
            protocol,
            Event::PreToolUse,
            code,
            stdout.as_bytes(),
            stderr.as_bytes(),
        ) {
            Some(Ok(reply)) => Ok(reply.decision),
            Some(Err((_, why))) => Err(why),
            None => Err(format!(
                "it exited {code}, which {} reads as a failed hook",
                adapter.display_name()
            )),
        };
    }
    // A host whose answers only our own plugin reads: the deny template's
    // fixed entries make a deny.
    if code != 0 {
        return Err(format!("it exited {code}"));
    }
    let deny = adapter
        .events()
        .iter()
        .find(|e| e.name() == host_event)
        .and_then(|e| e.deny.as_ref())
        .and_then(|d| d.stdout);
    let denies = match (deny, &object) {
        (Some(entries), Some(answer)) => entries.iter().all(|(k, v)| {
            matches!(v, crate::adapter::Json::Str(s) if s.starts_with('$'))
                || v.matches(answer.get(*k).unwrap_or(&Value::Null))
        }),
        _ => false,
    };
    Ok(denies.then_some(Outcome::Deny))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe's payload reads back, on every host it can probe, as the
    /// Bash call it stands for.
    #[test]
    fn the_payload_is_each_hosts_own_shape() {
        for a in crate::hosts::all() {
            let Some(ev) = tool_event(a) else { continue };
            let p = payload(a, Path::new("/tmp/x"), "true");
            let input = a
                .decode(ev, &p)
                .unwrap_or_else(|e| panic!("{}: {e:?}: {p}", a.name()));
            assert_eq!(input.event, Event::PreToolUse, "{}", a.name());
            assert_eq!(
                input.str_field("toolName"),
                Some("Bash"),
                "{}: {p}",
                a.name()
            );
            assert_eq!(
                input.fields.get("toolInput").and_then(|t| t.get("command")),
                Some(&json!("true")),
                "{}: {p}",
                a.name()
            );
        }
    }
}
