//! Tighten-only composition: hooks can turn allow into ask or deny, or ask
//! into deny, and never loosen anything. A policy deny is untouchable.

use crate::runtime::events::Event;
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
}
