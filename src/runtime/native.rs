//! Host-native hooks (`command.protocol`): a command written for one
//! host's hooks gets that host's payload and is read with that host's
//! rules, as its adapter's `hookProtocol` describes them. Moving a hook
//! into keryx-hooks then changes nothing it can see: the bytes the host
//! sent when that host fired the event, otherwise the event in the host's
//! shape (its tool and field names); its exit code, stdout and stderr
//! meaning what they mean there; its crash or timeout having the host's
//! effect unless the person chose fail-closed. Pure.

use serde_json::{Map, Value};

use crate::adapter::{
    Adapter, AskReading, FieldMap, HookProtocol, On, Transform, lookup_path as get,
};
use crate::events::Event;
use crate::runtime::reply::HookReply;
use crate::runtime::types::{EventInput, FailureKind, Outcome};

/// The payload a hook written for `host` gets for `input`.
pub fn payload(host: &Adapter, input: &EventInput) -> Value {
    if let Some(o) = input.origin.as_ref().filter(|o| o.host == host.name()) {
        return Value::Object(o.payload.clone());
    }
    let mut p = Map::new();
    let host_event = host
        .events()
        .iter()
        .find(|e| e.event() == input.event && e.wire)
        .or_else(|| host.events().iter().find(|e| e.event() == input.event));
    if let Some(key) = host.hook_protocol().and_then(|h| h.event_field) {
        let name = host_event.map_or(input.event.as_str(), |e| e.name());
        p.insert(key.to_owned(), Value::String(name.to_owned()));
    }
    let maps = host
        .fields
        .iter()
        .chain(host_event.into_iter().flat_map(|e| e.fields.iter()));
    for map in maps {
        let Some(value) = canonical_value(input, map.to) else {
            continue;
        };
        // Where a host reads a field from several places, the one named
        // like the canonical field is its own spelling (Copilot's
        // `sessionId`, not the `parentAgentId` a subagent's payload has).
        let Some(path) = map
            .from
            .iter()
            .find(|f| **f == map.to)
            .or_else(|| map.from.first())
        else {
            continue;
        };
        set_once(&mut p, path, host_value(host, map, input, value));
    }
    Value::Object(p)
}

/// What the canonical event holds under `to`: a slot of the input or one
/// of its fields.
fn canonical_value(input: &EventInput, to: &str) -> Option<Value> {
    let text = |s: &str| Some(Value::String(s.to_owned()));
    match to {
        "sessionId" => text(&input.session_id),
        "runId" => input.run_id.as_deref().and_then(text),
        "cwd" => input
            .cwd
            .as_deref()
            .and_then(|c| text(&c.to_string_lossy())),
        "parentSessionId" => input.parent_session_id.as_deref().and_then(text),
        "policyProfile" => input.profile.and_then(|p| text(p.as_str())),
        "interactive" => Some(Value::Bool(input.interactive)),
        "decideOutcome" | "projectRoot" => None,
        _ => input.fields.get(to).filter(|v| !v.is_null()).cloned(),
    }
}

/// `value` as the host spells it: its own tool names and values.
fn host_value(host: &Adapter, map: &FieldMap, input: &EventInput, value: Value) -> Value {
    let Value::String(s) = &value else {
        return value;
    };
    if map.transform == Some(Transform::Tool) {
        // The name the host used, when it was this host's name.
        if let Some(own) = input.str_field("hostToolName")
            && host.canonical_tool(own) == *s
        {
            return Value::String(own.to_owned());
        }
        return match host.tools.iter().find(|(_, c)| c == s) {
            Some((own, _)) => Value::String((*own).to_owned()),
            None => value,
        };
    }
    match map.values.iter().find(|(_, c)| c == s) {
        Some((own, _)) => Value::String((*own).to_owned()),
        None => value,
    }
}

/// Sets `path` to `value` unless an earlier field map set it already.
fn set_once(p: &mut Map<String, Value>, path: &str, value: Value) {
    let mut keys = path.split('.').peekable();
    let mut at = p;
    while let Some(k) = keys.next() {
        if keys.peek().is_none() {
            at.entry(k.to_owned()).or_insert(value);
            return;
        }
        let next = at
            .entry(k.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        let Value::Object(m) = next else { return };
        at = m;
    }
}

fn on(list: &[On], event: Event) -> bool {
    list.iter().any(|o| o.0 == event)
}

/// What a hook written for a host with `protocol` said by exiting `code`,
/// read with that host's rules: `Some(Err)` is a failed hook, whose effect
/// [`failure_denies`] gives. `None` for an exit the host reads like any
/// other non-zero exit (a failed hook), which the caller words.
pub fn read(
    protocol: &HookProtocol,
    event: Event,
    code: i32,
    stdout: &[u8],
    stderr: &[u8],
) -> Option<Result<HookReply, (FailureKind, String)>> {
    let failed = |why: &str| Some(Err((FailureKind::Crash, why.to_owned())));
    let err_text = String::from_utf8_lossy(stderr).trim().to_owned();
    match code {
        0 => {
            let reply = read_stdout(protocol, event, stdout);
            // Codex takes a deny without a reason as a hook that failed.
            let bare_deny = reply.decision == Some(Outcome::Deny)
                && reply.reason.as_deref().is_none_or(|r| r.trim().is_empty());
            if protocol.deny_needs_reason && bare_deny {
                return failed("denied without a reason, which its host counts as a failed hook");
            }
            if reply.decision == Some(Outcome::Ask) {
                match protocol.ask {
                    AskReading::Ask => {}
                    AskReading::Failed => {
                        return failed(
                            "answered ask, which its host rejects as unsupported (a failed hook)",
                        );
                    }
                    AskReading::Nothing => {
                        return Some(Ok(HookReply {
                            decision: None,
                            reason: None,
                            ..reply
                        }));
                    }
                }
            }
            Some(Ok(reply))
        }
        2 if on(protocol.exit2_denies, event) => {
            if protocol.exit2_needs_stderr && err_text.is_empty() {
                return failed(
                    "exited 2 with nothing on stderr, which its host counts as a failed hook",
                );
            }
            let reason = protocol
                .exit2_reason
                .map(str::to_owned)
                .or_else(|| (!err_text.is_empty()).then(|| err_text.clone()));
            Some(Ok(HookReply {
                decision: Some(Outcome::Deny),
                reason,
                ..HookReply::default()
            }))
        }
        2 if on(protocol.exit2_context, event) => Some(Ok(HookReply {
            additional_context: (!err_text.is_empty()).then_some(err_text),
            ..HookReply::default()
        })),
        // Exit 2 where the host gives it no meaning is a failed hook,
        // never the spec's exit-2 deny.
        2 => failed(&match err_text.lines().last() {
            Some(last) => format!("exited 2: {last}"),
            None => "exited 2".to_owned(),
        }),
        _ => None,
    }
}

/// Stdout on exit 0: a JSON answer read at the host's paths, or text that
/// is context or a notice where the host makes it one, and nothing
/// elsewhere (every host ignores stdout it cannot read).
fn read_stdout(protocol: &HookProtocol, event: Event, stdout: &[u8]) -> HookReply {
    let text = String::from_utf8_lossy(stdout);
    let text = text.trim();
    if text.is_empty() {
        return HookReply::default();
    }
    let Some(answer) = serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
    else {
        let mut reply = HookReply::default();
        if on(protocol.text_context, event) {
            reply.additional_context = Some(text.to_owned());
        } else if on(protocol.text_notice, event) {
            reply.system_message = Some(text.to_owned());
        }
        return reply;
    };
    let first = |paths: &[&str]| {
        paths
            .iter()
            .find_map(|p| get(&answer, p).and_then(Value::as_str))
            .map(str::to_owned)
    };
    let decision = paths_decision(&answer, protocol.decision).or_else(|| {
        protocol
            .denies_when_false
            .iter()
            .any(|p| get(&answer, p) == Some(&Value::Bool(false)))
            .then_some(Outcome::Deny)
    });
    let mut reason = first(protocol.reason);
    // A stop answered with the agent's next message keeps it going.
    let followup = (event == Event::Stop)
        .then(|| first(protocol.followup))
        .flatten()
        .filter(|t| !t.trim().is_empty());
    let decision = match (decision, followup) {
        (None, Some(text)) => {
            reason.get_or_insert(text);
            Some(Outcome::Deny)
        }
        (d, _) => d,
    };
    let context: Vec<&str> = protocol
        .context
        .iter()
        .filter_map(|p| get(&answer, p).and_then(Value::as_str))
        .filter(|c| !c.trim().is_empty())
        .collect();
    let mut reply = HookReply {
        decision,
        additional_context: (!context.is_empty()).then(|| context.join("\n")),
        reason,
        attempted_rewrite: answer.get("updatedInput").is_some()
            || get(&answer, "hookSpecificOutput.updatedInput").is_some(),
        system_message: first(protocol.notice),
    };
    if reply.decision == Some(Outcome::Deny) && !protocol.blocks(event) {
        // After the fact a block is feedback: its reason goes to the model.
        reply.decision = None;
        if let Some(r) = reply.reason.take() {
            reply.additional_context = Some(match reply.additional_context.take() {
                Some(c) => format!("{r}\n{c}"),
                None => r,
            });
        }
    }
    reply
}

fn paths_decision(answer: &Value, paths: &[&str]) -> Option<Outcome> {
    paths.iter().find_map(|p| {
        match get(answer, p)?.as_str()? {
            "allow" | "approve" => Some(Outcome::Allow),
            "ask" => Some(Outcome::Ask),
            "deny" | "block" => Some(Outcome::Deny),
            // A word the host does not know: it reads no decision.
            _ => None,
        }
    })
}

/// Whether a failure of a hook written for a host with `protocol` denies
/// on `event`, as it does there.
pub fn failure_denies(protocol: &HookProtocol, event: Event, kind: FailureKind) -> bool {
    match kind {
        FailureKind::Timeout => on(protocol.timeout_denies, event),
        FailureKind::Malformed => false,
        FailureKind::Crash | FailureKind::Refused | FailureKind::SandboxUnavailable => {
            on(protocol.error_denies, event)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> &'static Adapter {
        crate::adapter::lookup(name).unwrap()
    }

    fn proto(name: &str) -> &'static HookProtocol {
        host(name).hook_protocol().unwrap()
    }

    #[test]
    fn the_hosts_own_payload_when_it_fired_the_event() {
        let raw = serde_json::json!({"toolName": "bash", "toolArgs": {"command": "ls"}, "sessionId": "s", "extra": 1});
        let copilot = host("copilot");
        let input = copilot.decode("preToolUse", &raw).unwrap();
        assert_eq!(payload(copilot, &input), raw);
    }

    #[test]
    fn another_hosts_event_in_this_hosts_shape() {
        let raw = serde_json::json!({"toolName": "bash", "toolArgs": {"command": "git reset --hard"}, "sessionId": "s1", "cwd": "/p"});
        let input = host("copilot").decode("preToolUse", &raw).unwrap();
        let p = payload(host("claude-code"), &input);
        assert_eq!(p["hook_event_name"], "PreToolUse");
        assert_eq!(p["tool_name"], "Bash");
        assert_eq!(p["tool_input"]["command"], "git reset --hard");
        assert_eq!(p["session_id"], "s1");
        assert_eq!(p["cwd"], "/p");
        // And back: a Claude Code event for a Copilot hook.
        let raw = serde_json::json!({"hook_event_name": "PreToolUse", "session_id": "s2", "cwd": "/p", "tool_name": "Write", "tool_input": {"file_path": "/p/a"}});
        let input = host("claude-code").decode("PreToolUse", &raw).unwrap();
        let p = payload(host("copilot"), &input);
        assert_eq!(p["toolName"], "create");
        assert_eq!(p["toolArgs"]["file_path"], "/p/a");
        assert_eq!(p["sessionId"], "s2");
    }

    /// A failed hook is `Err`, whether the host gives the exit its own
    /// meaning or reads it as any other non-zero exit.
    fn reply(h: &str, event: Event, code: i32, out: &str, err: &str) -> Result<HookReply, String> {
        read(proto(h), event, code, out.as_bytes(), err.as_bytes())
            .unwrap_or_else(|| Err((FailureKind::Crash, format!("exited {code}"))))
            .map_err(|e| e.1)
    }

    #[test]
    fn exit_codes_mean_what_they_mean_to_the_host() {
        let pre = Event::PreToolUse;
        let d = reply("claude-code", pre, 2, "", "no").unwrap();
        assert_eq!(
            (d.decision, d.reason.as_deref()),
            (Some(Outcome::Deny), Some("no"))
        );
        assert!(reply("claude-code", pre, 1, "", "oops").is_err());
        // Codex: exit 2 needs a reason on stderr.
        assert!(reply("codex", pre, 2, "", "").is_err());
        assert_eq!(
            reply("codex", pre, 2, "", "r").unwrap().decision,
            Some(Outcome::Deny)
        );
        // Copilot denies on exit 2 without passing stderr on; exit 2
        // elsewhere is a failed hook.
        let c = reply("copilot", pre, 2, "", "secret").unwrap();
        assert_eq!(c.reason.as_deref(), Some("hook exited with code 2"));
        assert!(reply("copilot", Event::UserPromptSubmit, 2, "", "x").is_err());
        // PostToolUse exit 2 under Claude Code is feedback for the model.
        let f = reply("claude-code", Event::PostToolUse, 2, "", "fix lint").unwrap();
        assert_eq!(f.additional_context.as_deref(), Some("fix lint"));
        assert_eq!(f.decision, None);
    }

    #[test]
    fn an_ask_means_what_it_means_to_the_host() {
        let pre = Event::PreToolUse;
        let ask = r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"sure?"}}"#;
        let c = reply("claude-code", pre, 0, ask, "").unwrap();
        assert_eq!(
            (c.decision, c.reason.as_deref()),
            (Some(Outcome::Ask), Some("sure?"))
        );
        // Codex rejects the answer as unsupported: the hook failed.
        let x = reply("codex", pre, 0, ask, "").unwrap_err();
        assert!(x.contains("ask"), "{x}");
        // Kimi reads no decision and runs the tool.
        let k = reply("kimi", pre, 0, ask, "").unwrap();
        assert_eq!((k.decision, k.reason), (None, None));
    }

    /// Cursor's stop hook keeps the agent going by naming its next message
    /// (`followup_message`): a block of the stop with that message as the
    /// reason. An empty one, or the same field on another event, or under
    /// a host that does not read it, says nothing.
    #[test]
    fn a_cursor_stop_followup_keeps_the_agent_going() {
        let stop = Event::Stop;
        let f = reply(
            "cursor",
            stop,
            0,
            r#"{"followup_message":"fix the proof"}"#,
            "",
        )
        .unwrap();
        assert_eq!(
            (f.decision, f.reason.as_deref()),
            (Some(Outcome::Deny), Some("fix the proof"))
        );
        let empty = reply("cursor", stop, 0, r#"{"followup_message":" "}"#, "").unwrap();
        assert_eq!(empty.decision, None);
        let elsewhere = r#"{"followup_message":"x"}"#;
        let p = reply("cursor", Event::PostToolUse, 0, elsewhere, "").unwrap();
        assert_eq!((p.decision, p.additional_context), (None, None));
        assert_eq!(
            reply("claude-code", stop, 0, elsewhere, "")
                .unwrap()
                .decision,
            None
        );
    }

    #[test]
    fn stdout_is_read_at_the_hosts_paths() {
        let pre = Event::PreToolUse;
        let c = reply(
            "copilot",
            pre,
            0,
            r#"{"permissionDecision":"deny","permissionDecisionReason":"r"}"#,
            "",
        )
        .unwrap();
        assert_eq!(
            (c.decision, c.reason.as_deref()),
            (Some(Outcome::Deny), Some("r"))
        );
        // Claude Code reads the flat Copilot shape as nothing.
        let n = reply(
            "claude-code",
            pre,
            0,
            r#"{"permissionDecision":"deny"}"#,
            "",
        )
        .unwrap();
        assert_eq!(n.decision, None);
        let g = reply(
            "gemini-cli",
            pre,
            0,
            r#"{"decision":"deny","reason":"g"}"#,
            "",
        )
        .unwrap();
        assert_eq!(g.decision, Some(Outcome::Deny));
        // Plain text: context on SessionStart for Claude Code, nothing for
        // Copilot, a line for the person under Gemini.
        let s = Event::SessionStart;
        assert_eq!(
            reply("claude-code", s, 0, "hello", "")
                .unwrap()
                .additional_context
                .as_deref(),
            Some("hello")
        );
        assert_eq!(
            reply("copilot", s, 0, "hello", "").unwrap(),
            HookReply::default()
        );
        assert_eq!(
            reply("gemini-cli", pre, 0, "hi", "")
                .unwrap()
                .system_message
                .as_deref(),
            Some("hi")
        );
        // Garbage never fails: every host ignores it.
        assert_eq!(
            reply("claude-code", pre, 0, "{not json", "").unwrap(),
            HookReply::default()
        );
        // A block after the fact is feedback.
        let b = reply(
            "claude-code",
            Event::PostToolUse,
            0,
            r#"{"decision":"block","reason":"lint"}"#,
            "",
        )
        .unwrap();
        assert_eq!(
            (b.decision, b.additional_context.as_deref()),
            (None, Some("lint"))
        );
    }

    #[test]
    fn failures_have_the_hosts_effect() {
        assert!(!failure_denies(
            proto("claude-code"),
            Event::PreToolUse,
            FailureKind::Crash
        ));
        assert!(failure_denies(
            proto("copilot"),
            Event::PreToolUse,
            FailureKind::Crash
        ));
        assert!(!failure_denies(
            proto("copilot"),
            Event::PreToolUse,
            FailureKind::Timeout
        ));
        assert!(!failure_denies(
            proto("copilot"),
            Event::Stop,
            FailureKind::Crash
        ));
        let bare = r#"{"decision":"block"}"#;
        assert!(reply("codex", Event::PreToolUse, 0, bare, "").is_err());
        let claude = reply("claude-code", Event::PreToolUse, 0, bare, "").unwrap();
        assert_eq!(claude.decision, Some(Outcome::Deny));
    }
}
