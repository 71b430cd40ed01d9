//! `keryx-hooks untrust`: withdraws trust for this project, so its command
//! hooks stop running until it is trusted again. Like `trust`, it refuses a
//! store that resolves inside the project rather than touch it.

use crate::error::ExitStatus;

use crate::cli::UntrustArgs;
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::output;

pub fn run(_args: &UntrustArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let root = super::shared::project_root(&loc)?;
    let store = super::shared::open_store(&loc)?;
    let shown = escape(&root.display().to_string());
    let had = store
        .get(&root)
        .map_err(|why| CommandError::internal("could not read the trust store").cause(why))?
        .is_some();
    if !had {
        output::line(&format!("`{shown}` was not trusted; nothing to withdraw."));
        return Ok(ExitStatus::Success);
    }
    store
        .write(&root, None)
        .map_err(|why| CommandError::internal("could not withdraw trust").cause(why))?;
    output::line(&format!(
        "Withdrew trust for `{shown}`: its command hooks no longer run. `keryx-hooks trust` reviews and trusts them again."
    ));
    Ok(ExitStatus::Success)
}
