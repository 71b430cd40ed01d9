//! The failure-semantics table: what a hook's timeout, crash or malformed
//! output does to the outcome, per class and profile, with the SessionStart
//! override and the malformed-output asymmetry. Pure.

use crate::config::model::{HookClass, Profile};
use crate::events::Event;
use crate::runtime::types::{FailureKind, Outcome};

/// What a failure does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Fail closed: deny, with this reason code.
    Deny(&'static str),
    /// Fail open: the lifecycle proceeds; record this anomaly.
    Proceed(&'static str),
}

/// The reason code a gate's failure denies with.
pub fn gate_code(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Timeout => "hook-timeout",
        FailureKind::Crash | FailureKind::Refused => "hook-crashed",
        FailureKind::SandboxUnavailable => "hook-sandbox-unavailable",
        FailureKind::Malformed => "hook-malformed-output",
    }
}

/// `outcome_so_far` is what the hook was gating: decide()'s outcome composed
/// with the hooks that ran before it.
pub fn on_failure(
    class: HookClass,
    event: Event,
    profile: Profile,
    kind: FailureKind,
    outcome_so_far: Outcome,
) -> Effect {
    let open = match class {
        HookClass::Gate | HookClass::GateAdvisory if event == Event::SessionStart => "hook-failed",
        HookClass::Gate | HookClass::GateAdvisory if !event.is_gate_capable() => "hook-failed",
        HookClass::Gate => gate_code(kind),
        HookClass::GateAdvisory => "hook-advisory-failed",
        HookClass::Observe => "hook-observer-failed",
        HookClass::Context => "hook-context-failed",
    };
    if event == Event::SessionStart || !event.is_gate_capable() {
        return Effect::Proceed(open);
    }
    match class {
        HookClass::Gate => {
            if kind == FailureKind::Malformed && outcome_so_far != Outcome::Ask {
                // A broken hook must never be what turns an ask into an
                // approval; on anything else malformed output is a silent approve.
                Effect::Proceed("hook-malformed-output")
            } else {
                Effect::Deny(gate_code(kind))
            }
        }
        HookClass::GateAdvisory if profile == Profile::UnattendedUntrusted => {
            Effect::Deny("hook-advisory-failed")
        }
        _ => Effect::Proceed(open),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FailureKind::*;

    const KINDS: [FailureKind; 5] = [Timeout, Crash, Malformed, SandboxUnavailable, Refused];

    #[test]
    fn gate_fails_closed_in_every_profile() {
        for &p in Profile::ALL {
            assert_eq!(
                on_failure(
                    HookClass::Gate,
                    Event::PreToolUse,
                    p,
                    Timeout,
                    Outcome::Allow
                ),
                Effect::Deny("hook-timeout")
            );
            assert_eq!(
                on_failure(HookClass::Gate, Event::Stop, p, Crash, Outcome::Allow),
                Effect::Deny("hook-crashed")
            );
            assert_eq!(
                on_failure(
                    HookClass::Gate,
                    Event::UserPromptSubmit,
                    p,
                    SandboxUnavailable,
                    Outcome::Allow
                ),
                Effect::Deny("hook-sandbox-unavailable")
            );
            assert_eq!(
                on_failure(
                    HookClass::Gate,
                    Event::SubagentStart,
                    p,
                    Refused,
                    Outcome::Allow
                ),
                Effect::Deny("hook-crashed")
            );
        }
    }

    #[test]
    fn malformed_gate_denies_only_an_ask() {
        for &p in Profile::ALL {
            assert_eq!(
                on_failure(
                    HookClass::Gate,
                    Event::PreToolUse,
                    p,
                    Malformed,
                    Outcome::Allow
                ),
                Effect::Proceed("hook-malformed-output")
            );
            assert_eq!(
                on_failure(
                    HookClass::Gate,
                    Event::PreToolUse,
                    p,
                    Malformed,
                    Outcome::Ask
                ),
                Effect::Deny("hook-malformed-output")
            );
        }
    }

    #[test]
    fn advisory_is_profile_aware() {
        for kind in KINDS {
            for p in [Profile::ReadOnlyReview, Profile::MonitoredTrustedLocal] {
                assert_eq!(
                    on_failure(
                        HookClass::GateAdvisory,
                        Event::PreToolUse,
                        p,
                        kind,
                        Outcome::Allow
                    ),
                    Effect::Proceed("hook-advisory-failed")
                );
            }
            assert_eq!(
                on_failure(
                    HookClass::GateAdvisory,
                    Event::PreToolUse,
                    Profile::UnattendedUntrusted,
                    kind,
                    Outcome::Allow
                ),
                Effect::Deny("hook-advisory-failed")
            );
        }
    }

    #[test]
    fn observe_and_context_always_fail_open() {
        for &p in Profile::ALL {
            for kind in KINDS {
                for e in Event::ALL {
                    assert_eq!(
                        on_failure(HookClass::Observe, e, p, kind, Outcome::Ask),
                        Effect::Proceed("hook-observer-failed")
                    );
                    assert_eq!(
                        on_failure(HookClass::Context, e, p, kind, Outcome::Ask),
                        Effect::Proceed("hook-context-failed")
                    );
                }
            }
        }
    }

    #[test]
    fn session_start_never_denies() {
        for &p in Profile::ALL {
            for kind in KINDS {
                for &class in HookClass::ALL {
                    assert!(matches!(
                        on_failure(class, Event::SessionStart, p, kind, Outcome::Ask),
                        Effect::Proceed(_)
                    ));
                }
            }
        }
    }
}
