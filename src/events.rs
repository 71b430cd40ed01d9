//! The ten canonical lifecycle events and what each one is allowed to do.
//! Every host event is mapped onto one of these before anything runs.

use std::fmt;
use std::str::FromStr;

/// One of the ten keryx lifecycle events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Event {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    Stop,
    SubagentStart,
    SubagentStop,
    SessionEnd,
}

impl Event {
    pub const ALL: [Event; 10] = [
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::PreToolUse,
        Event::PostToolUse,
        Event::PostToolUseFailure,
        Event::PreCompact,
        Event::Stop,
        Event::SubagentStart,
        Event::SubagentStop,
        Event::SessionEnd,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
            Event::PreCompact => "PreCompact",
            Event::Stop => "Stop",
            Event::SubagentStart => "SubagentStart",
            Event::SubagentStop => "SubagentStop",
            Event::SessionEnd => "SessionEnd",
        }
    }

    /// Only these four can change the composed outcome at all.
    pub fn is_gate_capable(self) -> bool {
        matches!(
            self,
            Event::PreToolUse | Event::UserPromptSubmit | Event::Stop | Event::SubagentStart
        )
    }

    /// SubagentStop is observe-only in the spec, but a host can let a hook
    /// keep a subagent working (Claude Code reads exit 2 or `decision:
    /// "block"` there as it does on Stop). A hook written for such a host
    /// keeps that power once imported: see [`HookProtocol::blocks`].
    ///
    /// [`HookProtocol::blocks`]: crate::adapter::spec::HookProtocol::blocks
    pub fn blocks_only_natively(self) -> bool {
        self == Event::SubagentStop
    }

    /// Per-tool events match their matcher against the tool name; every other
    /// event's matcher must be `"*"`.
    pub fn is_per_tool(self) -> bool {
        matches!(
            self,
            Event::PreToolUse | Event::PostToolUse | Event::PostToolUseFailure
        )
    }

    /// SubagentStart has no approval surface: an ask there is a deny.
    pub fn ask_means_deny(self) -> bool {
        self == Event::SubagentStart
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Event {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Event::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| format!("unknown event `{s}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_four_gate_capable_and_three_per_tool() {
        let gates: Vec<_> = Event::ALL
            .into_iter()
            .filter(|e| e.is_gate_capable())
            .collect();
        assert_eq!(
            gates,
            [
                Event::UserPromptSubmit,
                Event::PreToolUse,
                Event::Stop,
                Event::SubagentStart
            ]
        );
        let per_tool: Vec<_> = Event::ALL.into_iter().filter(|e| e.is_per_tool()).collect();
        assert_eq!(
            per_tool,
            [
                Event::PreToolUse,
                Event::PostToolUse,
                Event::PostToolUseFailure
            ]
        );
        for e in Event::ALL {
            assert_eq!(e.as_str().parse::<Event>().unwrap(), e);
        }
        assert!("preToolUse".parse::<Event>().is_err());
    }
}
