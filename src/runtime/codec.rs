//! buildHookStdin: the one payload shape every hook receives, whatever host
//! fired the event — base fields, the event's camelCase fields from the
//! spec's table, and their Claude Code snake_case aliases; then the host's
//! own fields as it sent them, where its adapter keeps them, under every
//! name the canonical payload does not use.

use serde_json::{Map, Value, json};

use crate::config::model::Profile;
use crate::events::Event;
use crate::runtime::types::EventInput;

pub const PAYLOAD_SCHEMA_VERSION: &str = "1.0.0";

/// The camelCase fields each event carries (beyond the base fields), and
/// the snake_case alias each one also gets, if any.
fn event_fields(event: Event) -> &'static [(&'static str, Option<&'static str>)] {
    match event {
        Event::SessionStart => &[
            ("projectRoot", None),
            ("policyProfile", None),
            ("contextHash", None),
            ("provider", None),
            ("model", None),
            ("source", Some("source")),
        ],
        Event::UserPromptSubmit => &[("prompt", Some("prompt"))],
        Event::PreToolUse => &[
            ("toolCallId", Some("tool_use_id")),
            ("toolName", Some("tool_name")),
            ("toolInput", Some("tool_input")),
            ("risk", None),
            ("policyProfile", None),
        ],
        Event::PostToolUse => &[
            ("toolCallId", Some("tool_use_id")),
            ("toolName", Some("tool_name")),
            ("toolInput", Some("tool_input")),
            ("toolOutput", Some("tool_response")),
            ("policyDecision", None),
        ],
        Event::PostToolUseFailure => &[
            ("toolCallId", Some("tool_use_id")),
            ("toolName", Some("tool_name")),
            ("toolInput", Some("tool_input")),
            ("error", None),
        ],
        Event::PreCompact => &[("reason", None), ("tokenCount", None)],
        Event::Stop => &[
            ("stopReason", None),
            ("stopHookActive", Some("stop_hook_active")),
        ],
        Event::SubagentStart => &[
            ("subagentId", None),
            ("parentSessionId", None),
            ("spawnKind", None),
            ("inheritedHookIds", None),
        ],
        Event::SubagentStop => &[
            ("subagentId", None),
            ("outcome", None),
            ("escalationStop", None),
        ],
        Event::SessionEnd => &[("endReason", None)],
    }
}

/// The keys every payload has, whatever the event.
const BASE_KEYS: [&str; 9] = [
    "schemaVersion",
    "timestamp",
    "hookId",
    "event",
    "sessionId",
    "runId",
    "hook_event_name",
    "session_id",
    "cwd",
];

/// Fields only keryx itself decides, on any event.
const KERYX_KEYS: [&str; 13] = [
    "projectRoot",
    "policyProfile",
    "contextHash",
    "risk",
    "policyDecision",
    "decideOutcome",
    "interactive",
    "inheritedHookIds",
    "parentSessionId",
    "spawnKind",
    "subagentId",
    "outcome",
    "escalationStop",
];

/// Whether `key` belongs to the canonical payload of `event`: a host field
/// by that name is never passed through, so a host cannot put words in
/// keryx's mouth (a `risk` or `inheritedHookIds` of its own).
fn is_canonical_key(event: Event, key: &str) -> bool {
    BASE_KEYS.contains(&key)
        || KERYX_KEYS.contains(&key)
        || event_fields(event)
            .iter()
            .any(|(name, alias)| *name == key || *alias == Some(key))
}

/// Everything a payload needs beyond the event itself.
pub struct PayloadContext<'a> {
    pub hook_id: &'a str,
    pub run_id: &'a str,
    pub timestamp: &'a str,
    pub profile: Profile,
    pub project_root: Option<&'a str>,
}

/// The JSON payload for one hook.
pub fn build_hook_stdin(input: &EventInput, ctx: &PayloadContext) -> Value {
    let mut p = Map::new();
    p.insert("schemaVersion".into(), json!(PAYLOAD_SCHEMA_VERSION));
    p.insert("timestamp".into(), json!(ctx.timestamp));
    p.insert("hookId".into(), json!(ctx.hook_id));
    p.insert("event".into(), json!(input.event.as_str()));
    p.insert("sessionId".into(), json!(input.session_id));
    p.insert("runId".into(), json!(ctx.run_id));
    p.insert("hook_event_name".into(), json!(input.event.as_str()));
    p.insert("session_id".into(), json!(input.session_id));
    // The session's cwd as the host reported it; the project root is
    // `projectRoot` (and `CLAUDE_PROJECT_DIR`).
    match input.cwd.as_deref().filter(|c| c.is_absolute()) {
        Some(cwd) => {
            p.insert("cwd".into(), json!(cwd));
        }
        None => {
            if let Some(root) = ctx.project_root {
                p.insert("cwd".into(), json!(root));
            }
        }
    }
    if let Some(root) = ctx.project_root {
        p.insert("projectRoot".into(), json!(root));
    }
    for &(name, alias) in event_fields(input.event) {
        let value = match name {
            "policyProfile" => Some(json!(ctx.profile.as_str())),
            "projectRoot" => ctx.project_root.map(|r| json!(r)),
            "parentSessionId" => input
                .parent_session_id
                .as_ref()
                .map(|s| json!(s))
                .or_else(|| input.fields.get(name).cloned()),
            _ => input.fields.get(name).cloned(),
        };
        if let Some(v) = value {
            if let Some(a) = alias {
                p.insert(a.into(), v.clone());
            }
            p.insert(name.into(), v);
        }
    }
    for (k, v) in &input.host_fields {
        if !p.contains_key(k) && !is_canonical_key(input.event, k) {
            p.insert(k.clone(), v.clone());
        }
    }
    Value::Object(p)
}

/// RFC 3339 UTC timestamp with milliseconds, without a date library.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::format_timestamp;

    fn ctx() -> PayloadContext<'static> {
        PayloadContext {
            hook_id: "h",
            run_id: "r1",
            timestamp: "2026-01-01T00:00:00.000Z",
            profile: Profile::MonitoredTrustedLocal,
            project_root: Some("/p"),
        }
    }

    #[test]
    fn pre_tool_use_has_base_fields_and_aliases() {
        let mut input = EventInput::new(Event::PreToolUse, "s1");
        input.fields.insert("toolName".into(), json!("Bash"));
        input
            .fields
            .insert("toolInput".into(), json!({"command": "ls"}));
        input.fields.insert("toolCallId".into(), json!("t1"));
        input
            .fields
            .insert("somethingElse".into(), json!("dropped"));
        let p = build_hook_stdin(&input, &ctx());
        for (k, v) in [
            ("schemaVersion", json!("1.0.0")),
            ("hookId", json!("h")),
            ("event", json!("PreToolUse")),
            ("hook_event_name", json!("PreToolUse")),
            ("sessionId", json!("s1")),
            ("session_id", json!("s1")),
            ("runId", json!("r1")),
            ("cwd", json!("/p")),
            ("toolName", json!("Bash")),
            ("tool_name", json!("Bash")),
            ("tool_input", json!({"command": "ls"})),
            ("policyProfile", json!("monitored-trusted-local")),
        ] {
            assert_eq!(p[k], v, "{k}");
        }
        assert!(
            p.get("somethingElse").is_none(),
            "only the event's own fields pass"
        );
    }

    /// A hook written for the host gets the host's own fields as it sent
    /// them (Claude Code's `agent_id`, `transcript_path`, …), `cwd` is the
    /// session's cwd and the project root is `projectRoot`; a host field
    /// by a canonical name never overrides or adds to keryx's own.
    #[test]
    fn host_fields_ride_along_but_never_speak_for_keryx() {
        let mut input = EventInput::new(Event::SubagentStart, "s1");
        input.cwd = Some("/p/sub/dir".into());
        input.fields.insert("inheritedHookIds".into(), json!(["a"]));
        for (k, v) in [
            ("session_id", json!("s1")),
            ("cwd", json!("/p/sub/dir")),
            ("agent_id", json!("a1")),
            ("agent_type", json!("general-purpose")),
            ("transcript_path", json!("/t.jsonl")),
            ("permission_mode", json!("default")),
            ("prompt_id", json!("p1")),
            ("inheritedHookIds", json!(["forged"])),
            ("risk", json!("low")),
            ("hookId", json!("forged")),
        ] {
            input.host_fields.insert(k.into(), v);
        }
        let p = build_hook_stdin(&input, &ctx());
        for (k, v) in [
            ("agent_id", json!("a1")),
            ("agent_type", json!("general-purpose")),
            ("transcript_path", json!("/t.jsonl")),
            ("permission_mode", json!("default")),
            ("prompt_id", json!("p1")),
            ("cwd", json!("/p/sub/dir")),
            ("projectRoot", json!("/p")),
            ("inheritedHookIds", json!(["a"])),
            ("hookId", json!("h")),
        ] {
            assert_eq!(p[k], v, "{k}");
        }
        assert!(p.get("risk").is_none(), "{p:#}");
    }

    #[test]
    fn post_tool_use_aliases_tool_response() {
        let mut input = EventInput::new(Event::PostToolUse, "s");
        input
            .fields
            .insert("toolOutput".into(), json!({"stdout": "x"}));
        let p = build_hook_stdin(&input, &ctx());
        assert_eq!(p["tool_response"], json!({"stdout": "x"}));
    }

    #[test]
    fn timestamps() {
        assert_eq!(format_timestamp(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_timestamp(1_795_910_400, 5),
            "2026-11-29T00:00:00.005Z"
        );
        assert_eq!(format_timestamp(951_782_400, 0), "2000-02-29T00:00:00.000Z");
    }
}
