//! `keryx-hooks allow-once [CODE]`: the person lets one call a rule
//! refused through that rule, once. The refusal named the code; this shows
//! the call it stands for and asks, in a terminal only (there is no
//! `--yes`: an agent without a terminal cannot answer). Without a code it
//! lists the refused calls that can still be allowed.

use std::io::IsTerminal;

use crate::cli::AllowOnceArgs;
use crate::error::{CmdResult, CommandError, ExitStatus};
use crate::escape::escape;
use crate::output;
use crate::pipeline::allow_once::{self, Call, GRANT_SECS, PENDING_SECS};

pub fn run(args: &AllowOnceArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let Some(code) = args.code.as_deref() else {
        let calls = allow_once::pending(&loc);
        if calls.is_empty() {
            output::line(&format!(
                "No refused call to allow: a code lasts {} minutes after the refusal that names it.",
                PENDING_SECS / 60
            ));
        }
        for c in &calls {
            output::line(&describe(c));
        }
        return Ok(ExitStatus::Success);
    };
    let Some(call) = allow_once::find(&loc, code) else {
        return Err(CommandError::user(format!(
            "no refused call has the code `{}`",
            escape(code)
        ))
        .hint(format!(
            "a code is named in the refusal and lasts {} minutes; `keryx-hooks allow-once` lists the ones still open",
            PENDING_SECS / 60
        )));
    };
    output::line(&describe(&call));
    if !std::io::stdin().is_terminal() {
        return Err(
            CommandError::user("there is no terminal to ask in; nothing was allowed").hint(
                format!(
                    "run `keryx-hooks allow-once {}` yourself, in a terminal",
                    call.code
                ),
            ),
        );
    }
    if !super::shared::ask(&format!(
        "Let exactly this call through `{}` once, within {} minutes?",
        escape(&call.rule),
        GRANT_SECS / 60
    ))? {
        output::line("Not allowed; nothing was written.");
        return Ok(ExitStatus::Failure);
    }
    allow_once::grant(&loc, &call)
        .map_err(|why| CommandError::internal("could not record the allowance").cause(why))?;
    output::line(&format!(
        "Allowed once: the next identical call passes `{}` (other rules, built-in guards and hooks still judge it).",
        escape(&call.rule)
    ));
    Ok(ExitStatus::Success)
}

fn describe(c: &Call) -> String {
    let tool = c
        .tool
        .as_deref()
        .map(|t| format!(" {}", escape(t)))
        .unwrap_or_default();
    let project = c
        .project
        .as_ref()
        .map(|p| format!(" in `{}`", escape(&p.display().to_string())))
        .unwrap_or_default();
    format!(
        "{}  {}{tool}: rule `{}` matched {}{project}",
        c.code,
        escape(&c.event),
        escape(&c.rule),
        c.matched
    )
}
