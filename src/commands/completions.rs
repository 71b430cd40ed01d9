//! `keryx-hooks completions <shell>` and `keryx-hooks man`: the shell
//! completion script and the manual page, generated from the same clap
//! definitions as `--help`, so they never disagree with the binary.

use crate::error::ExitStatus;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};
use crate::error::CmdResult;

pub fn completions(args: &CompletionsArgs) -> CmdResult {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "keryx-hooks", &mut script);
    crate::output::stdout(&String::from_utf8_lossy(&script));
    Ok(ExitStatus::Success)
}

pub fn man() -> CmdResult {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| {
            crate::error::CommandError::internal(format!("could not render the manual page: {e}"))
        })?;
    crate::output::stdout(&String::from_utf8_lossy(&page));
    Ok(ExitStatus::Success)
}
