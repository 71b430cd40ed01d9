//! One file per command; each reads like that command's manual.

pub mod completions;
pub mod ctx;
pub mod doctor;
pub mod explain;
pub mod import;
pub mod init;
pub mod install;
pub mod list;
pub mod log;
pub mod run;
pub mod security;
pub mod status;
pub mod test;
pub mod toggle;
pub mod trust;
pub mod uninstall;
pub mod untrust;
pub mod validate;

use std::path::PathBuf;

use crate::config::model::Profile;
use crate::paths::Locations;

/// Locations for a human command run from the current directory.
pub fn here() -> Locations {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    Locations::resolve(&cwd)
}

/// Prints location warnings (e.g. a refused KERYX_HOME) to stderr.
pub fn print_location_warnings(loc: &Locations) {
    for w in &loc.warnings {
        crate::output::err_line(&format!("warning: {}", crate::escape::escape(w)));
    }
}

/// The profile for a command: `--profile`, else the one `run` uses when
/// the host names none (runtime.toml's), with a warning on stderr when a
/// broken file makes that the strictest.
pub fn profile_or_settings(flag: Option<Profile>, loc: &Locations) -> Profile {
    if let Some(p) = flag {
        return p;
    }
    if let Some(why) = loc.settings().profile_fallback() {
        crate::output::err_line(&format!("warning: {why}"));
    }
    loc.settings().profile()
}
