//! Parsing what a hook printed on a clean exit: empty (silent approve), the
//! native `{decision, additionalContext, reason}` object, or the Claude Code
//! shape, whose `systemMessage` is a line for the person. On the events
//! where Claude Code reads plain text as context (SessionStart,
//! UserPromptSubmit), non-JSON text is that context; anything else is
//! malformed. No other field is ever read back.

use serde_json::Value;

use crate::runtime::types::Outcome;

/// What a hook said on exit 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookReply {
    pub decision: Option<Outcome>,
    pub additional_context: Option<String>,
    pub reason: Option<String>,
    /// `updatedInput` was present: parsed, dropped, recorded once.
    pub attempted_rewrite: bool,
    /// `systemMessage`: shown to the person as a notice, never the model.
    pub system_message: Option<String>,
}

/// Why what a hook printed on exit 0 is not an answer (the hook then fails
/// as malformed).
#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    #[error("stdout is not valid UTF-8")]
    NotUtf8,
    #[error("stdout is not a JSON object: {error}")]
    NotJson {
        #[source]
        error: serde_json::Error,
    },
    #[error("stdout is JSON but not an object")]
    NotAnObject,
    #[error("`hookSpecificOutput` is not an object")]
    SpecificNotAnObject,
    #[error("`{field}` is not a string")]
    NotAString { field: &'static str },
    #[error("`{field}` has an unrecognised value `{value}`")]
    UnknownDecision { field: &'static str, value: String },
    #[error(
        "conflicting decisions: `decision` says {} and `permissionDecision` says {}",
        decision.as_str(),
        permission_decision.as_str()
    )]
    ConflictingDecisions {
        decision: Outcome,
        permission_decision: Outcome,
    },
}

fn decision_word(s: &str) -> Option<Outcome> {
    match s {
        "allow" | "approve" => Some(Outcome::Allow),
        "ask" => Some(Outcome::Ask),
        "deny" | "block" => Some(Outcome::Deny),
        _ => None,
    }
}

/// Parses a hook's stdout. `Err` carries why it is malformed.
pub fn parse(stdout: &[u8]) -> Result<HookReply, ReplyError> {
    let text = std::str::from_utf8(stdout).map_err(|_| ReplyError::NotUtf8)?;
    if text.trim().is_empty() {
        return Ok(HookReply::default());
    }
    let value: Value =
        serde_json::from_str(text.trim()).map_err(|error| ReplyError::NotJson { error })?;
    let obj = value.as_object().ok_or(ReplyError::NotAnObject)?;
    let specific = match obj.get("hookSpecificOutput") {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => Some(o),
        Some(_) => return Err(ReplyError::SpecificNotAnObject),
    };
    let string = |v: Option<&Value>, field| -> Result<Option<String>, ReplyError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ReplyError::NotAString { field }),
        }
    };
    let word = |v: Option<&Value>, field| -> Result<Option<Outcome>, ReplyError> {
        match string(v, field)? {
            None => Ok(None),
            Some(value) => match decision_word(&value) {
                Some(o) => Ok(Some(o)),
                None => Err(ReplyError::UnknownDecision { field, value }),
            },
        }
    };
    let top = word(obj.get("decision"), "decision")?;
    let nested = word(
        specific.and_then(|s| s.get("permissionDecision")),
        "permissionDecision",
    )?;
    let decision = match (top, nested) {
        (Some(a), Some(b)) if a != b => {
            return Err(ReplyError::ConflictingDecisions {
                decision: a,
                permission_decision: b,
            });
        }
        (a, b) => a.or(b),
    };
    let context = match (
        string(obj.get("additionalContext"), "additionalContext")?,
        string(
            specific.and_then(|s| s.get("additionalContext")),
            "additionalContext",
        )?,
    ) {
        (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
        (a, b) => a.or(b),
    };
    let reason = string(obj.get("reason"), "reason")?.or(string(
        specific.and_then(|s| s.get("permissionDecisionReason")),
        "permissionDecisionReason",
    )?);
    let attempted_rewrite = obj.contains_key("updatedInput")
        || specific.is_some_and(|s| s.contains_key("updatedInput"));
    let system_message = string(obj.get("systemMessage"), "systemMessage")?;
    Ok(HookReply {
        decision,
        additional_context: context,
        reason,
        attempted_rewrite,
        system_message,
    })
}

/// Parses a hook's stdout on `event`. On SessionStart and UserPromptSubmit
/// (where Claude Code reads plain stdout as context) text that is not JSON
/// is additional context. Text with a line that opens a JSON object stays
/// malformed: it reads as an answer that went wrong (a gate's deny behind
/// shell noise), and taking it as context would let that deny pass.
pub fn parse_for(stdout: &[u8], event: crate::events::Event) -> Result<HookReply, ReplyError> {
    use crate::events::Event;
    let err = match parse(stdout) {
        Ok(reply) => return Ok(reply),
        Err(e) => e,
    };
    if !matches!(event, Event::SessionStart | Event::UserPromptSubmit) {
        return Err(err);
    }
    let Ok(text) = std::str::from_utf8(stdout) else {
        return Err(err);
    };
    if text.lines().any(|l| l.trim_start().starts_with(['{', '['])) {
        return Err(err);
    }
    Ok(HookReply {
        additional_context: Some(text.trim_end().to_owned()),
        ..HookReply::default()
    })
}

/// The reason of a hook that exited 2: a deny decision JSON on stdout with
/// a reason (Claude Code reads it so), else the stderr text, else a generic
/// line. The outcome is a deny whatever stdout says.
pub fn exit2_reason(stdout: &[u8], stderr: &[u8]) -> String {
    if let Ok(reply) = parse(stdout)
        && reply.decision == Some(Outcome::Deny)
        && let Some(reason) = reply.reason.filter(|r| !r.trim().is_empty())
    {
        return reason;
    }
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        "the hook exited 2 (deny) without a reason".to_owned()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_whitespace_are_silent_approve() {
        assert_eq!(parse(b"").unwrap(), HookReply::default());
        assert_eq!(parse(b" \n\t").unwrap(), HookReply::default());
    }

    #[test]
    fn native_shape() {
        let r = parse(br#"{"decision":"deny","reason":"no","additionalContext":"ctx"}"#).unwrap();
        assert_eq!(r.decision, Some(Outcome::Deny));
        assert_eq!(r.reason.as_deref(), Some("no"));
        assert_eq!(r.additional_context.as_deref(), Some("ctx"));
    }

    #[test]
    fn claude_shape_with_legacy_aliases() {
        let r = parse(br#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"block","permissionDecisionReason":"R"}}"#).unwrap();
        assert_eq!(r.decision, Some(Outcome::Deny));
        assert_eq!(r.reason.as_deref(), Some("R"));
        let r = parse(br#"{"hookSpecificOutput":{"permissionDecision":"approve"}}"#).unwrap();
        assert_eq!(r.decision, Some(Outcome::Allow));
        let r = parse(br#"{"decision":"block","reason":"stop"}"#).unwrap();
        assert_eq!(r.decision, Some(Outcome::Deny));
    }

    #[test]
    fn malformed_outputs() {
        for bad in [
            &b"not json"[..],
            b"[1,2]",
            b"\"deny\"",
            br#"{"decision":"maybe"}"#,
            br#"{"decision":"allow","hookSpecificOutput":{"permissionDecision":"deny"}}"#,
            br#"{"reason": 5}"#,
            b"\xff\xfe",
            b"rc noise\n{\"decision\":\"deny\"}",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        // Word for word: the reason a malformed hook fails with.
        let why = |bad: &[u8]| parse(bad).unwrap_err().to_string();
        let json_error = serde_json::from_str::<Value>("not json").unwrap_err();
        assert_eq!(
            why(b"not json"),
            format!("stdout is not a JSON object: {json_error}")
        );
        assert_eq!(why(b"[1,2]"), "stdout is JSON but not an object");
        assert_eq!(why(b"\xff\xfe"), "stdout is not valid UTF-8");
        assert_eq!(
            why(br#"{"hookSpecificOutput": 1}"#),
            "`hookSpecificOutput` is not an object"
        );
        assert_eq!(why(br#"{"reason": 5}"#), "`reason` is not a string");
        assert_eq!(
            why(br#"{"hookSpecificOutput":{"permissionDecision":"maybe"}}"#),
            "`permissionDecision` has an unrecognised value `maybe`"
        );
        assert_eq!(
            why(br#"{"decision":"allow","hookSpecificOutput":{"permissionDecision":"deny"}}"#),
            "conflicting decisions: `decision` says allow and `permissionDecision` says deny"
        );
    }

    #[test]
    fn plain_text_is_context_only_where_claude_reads_it_so() {
        use crate::events::Event;
        let r = parse_for(b"branch: main\nclean tree\n", Event::SessionStart).unwrap();
        assert_eq!(
            r.additional_context.as_deref(),
            Some("branch: main\nclean tree")
        );
        assert_eq!(r.decision, None);
        let r = parse_for(b"remember the style guide", Event::UserPromptSubmit).unwrap();
        assert_eq!(
            r.additional_context.as_deref(),
            Some("remember the style guide")
        );
        assert!(parse_for(b"plain", Event::PreToolUse).is_err());
        assert!(parse_for(b"plain", Event::Stop).is_err());
        // A JSON answer behind noise is still malformed, never context.
        assert!(parse_for(b"noise\n{\"decision\":\"deny\"}", Event::UserPromptSubmit).is_err());
        assert!(parse_for(b"\xff", Event::SessionStart).is_err());
        // JSON keeps its meaning.
        let r = parse_for(
            br#"{"decision":"block","reason":"no"}"#,
            Event::UserPromptSubmit,
        )
        .unwrap();
        assert_eq!(r.decision, Some(Outcome::Deny));
    }

    #[test]
    fn system_message_is_read() {
        let r = parse(br#"{"systemMessage":"formatted 3 files"}"#).unwrap();
        assert_eq!(r.system_message.as_deref(), Some("formatted 3 files"));
        assert!(parse(br#"{"systemMessage":3}"#).is_err());
    }

    #[test]
    fn exit2_reason_prefers_a_deny_json_reason() {
        assert_eq!(
            exit2_reason(
                br#"{"decision":"block","reason":"tests fail"}"#,
                b"stderr line"
            ),
            "tests fail"
        );
        assert_eq!(
            exit2_reason(
                br#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"R"}}"#,
                b""
            ),
            "R"
        );
        assert_eq!(
            exit2_reason(br#"{"decision":"allow","reason":"fine"}"#, b"no"),
            "no"
        );
        assert_eq!(exit2_reason(b"junk", b" why \n"), "why");
        assert_eq!(
            exit2_reason(b"", b""),
            "the hook exited 2 (deny) without a reason"
        );
    }

    #[test]
    fn rewrite_is_only_flagged() {
        let r = parse(br#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"x"}}}"#).unwrap();
        assert!(r.attempted_rewrite);
        assert_eq!(r.decision, Some(Outcome::Allow));
    }
}
