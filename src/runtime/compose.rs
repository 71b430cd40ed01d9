//! Tighten-only composition: hooks can turn allow into ask or deny, or ask
//! into deny, and never loosen anything. A policy deny is untouchable. What
//! hooks add to the model's context passes the secret rules first.

use crate::events::Event;
use crate::runtime::types::Outcome;

/// The stricter of two outcomes (`none` counts as allow).
pub fn tighten(current: Outcome, hook: Outcome) -> Outcome {
    let norm = |o| {
        if o == Outcome::None {
            Outcome::Allow
        } else {
            o
        }
    };
    norm(current).max(norm(hook))
}

/// decide()'s outcome composed with the hooks' decisions, then headless
/// fail-closed. Returns the outcome and whether headless rules applied.
pub fn compose_decision(
    event: Event,
    policy: Outcome,
    hooks: &[Outcome],
    interactive: bool,
) -> (Outcome, bool) {
    if policy == Outcome::Deny {
        return (Outcome::Deny, false);
    }
    let mut out = hooks.iter().fold(policy, |acc, h| tighten(acc, *h));
    if out == Outcome::Ask && event.ask_means_deny() {
        out = Outcome::Deny;
    }
    if out == Outcome::Ask && !interactive {
        return (Outcome::Deny, true);
    }
    (out, false)
}

/// A hook's additionalContext as it may reach the model.
#[derive(Debug, PartialEq, Eq)]
pub struct ScreenedContext {
    pub text: String,
    /// What was redacted (kinds and positions, never the secret), when
    /// anything was.
    pub findings: Option<String>,
}

/// `context` with every secret the built-in rules find replaced by
/// `[REDACTED:<rule>]` and hidden-instruction characters escaped: a hook
/// (or what it read) must not pour a credential into the model's context.
pub fn screen_context(context: &str) -> ScreenedContext {
    use crate::secrets::{Target, builtin_rules};
    let rules = builtin_rules();
    let findings = rules.scan(context, Target::Input);
    if findings.is_empty() {
        return ScreenedContext {
            text: context.to_owned(),
            findings: None,
        };
    }
    let described: Vec<String> = findings.iter().take(5).map(|f| f.describe()).collect();
    let more = findings.len().saturating_sub(described.len());
    let mut detail = described.join("; ");
    if more > 0 {
        detail.push_str(&format!("; and {more} more"));
    }
    ScreenedContext {
        text: rules.redact(context),
        findings: Some(format!("redacted from additionalContext: {detail}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::*;

    #[test]
    fn rules() {
        let e = Event::PreToolUse;
        assert_eq!(
            compose_decision(e, Deny, &[Allow], true),
            (Deny, false),
            "policy deny untouchable"
        );
        assert_eq!(compose_decision(e, Allow, &[Deny], true).0, Deny);
        assert_eq!(compose_decision(e, Ask, &[Deny], true).0, Deny);
        assert_eq!(compose_decision(e, Allow, &[Ask], true).0, Ask);
        assert_eq!(compose_decision(e, Ask, &[Ask], true).0, Ask);
        assert_eq!(
            compose_decision(e, Ask, &[Allow], true).0,
            Ask,
            "allow never loosens"
        );
        assert_eq!(compose_decision(e, Allow, &[Allow, None], true).0, Allow);
        assert_eq!(
            compose_decision(e, Allow, &[Ask], false),
            (Deny, true),
            "headless fail-closed"
        );
        assert_eq!(
            compose_decision(Event::SubagentStart, Allow, &[Ask], true).0,
            Deny
        );
        assert_eq!(compose_decision(Event::Stop, Allow, &[], true).0, Allow);
    }

    #[test]
    fn context_secrets_are_redacted_and_reported() {
        let key = ["AKIA", "Z7Q4M2XJ5PRT3LKB"].concat();
        let s = screen_context(&format!("deploy notes\nkey: {key}\n"));
        assert!(!s.text.contains(&key), "{}", s.text);
        assert!(
            s.text.contains("[REDACTED:aws-access-key-id]"),
            "{}",
            s.text
        );
        let found = s.findings.unwrap();
        assert!(
            found.contains("AWS access key id")
                && found.contains("line 2")
                && !found.contains(&key),
            "{found}"
        );
        let clean = screen_context("src/api.rs imports this file");
        assert_eq!(clean.text, "src/api.rs imports this file");
        assert!(clean.findings.is_none());
    }
}
