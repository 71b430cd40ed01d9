//! `keryx-hooks security check-input [--source S] [--runtime HOST]` and
//! `keryx-hooks security check-output [--runtime HOST]`: the spawned bodies
//! of `keryx.security-check-input` and `keryx.security-check-output`.
//!
//! Both read one JSON payload on stdin and answer in the hook stdout
//! contract: nothing for allow; for deny, `{"decision":"deny","reason":…}`
//! under `--runtime keryx`, or the host's own deny shape (from its adapter)
//! when a host runs the command directly. A payload that cannot be read is
//! a deny, never a silent allow: these are gates.

use super::shared::answer;

use crate::builtins::security;
use crate::cli::{CheckInputArgs, CheckOutputArgs};
use crate::error::CmdResult;
use crate::events::Event;

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
