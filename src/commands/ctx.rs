//! `keryx-hooks ctx hook <host>`: the spawned body of `keryx.ctx-guard`.
//! Reads one PreToolUse payload for a shell tool on stdin and denies a
//! command that would pour secrets into, or flood, the model's context;
//! `[ctx_guard] max_cat_bytes` in runtime.toml sets the `cat` size limit.

use crate::builtins::ctx_guard::{self, CtxGuardConfig};
use crate::cli::CtxHookArgs;
use crate::error::CmdResult;
use crate::events::Event;

pub fn hook(args: &CtxHookArgs) -> CmdResult {
    super::shared::answer(&args.host, Event::PreToolUse, |payload, loc| {
        let cfg = CtxGuardConfig::from_locations(loc);
        ctx_guard::check_with(payload, &cfg)
    })
}
