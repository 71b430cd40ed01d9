//! One file per command; each reads like that command's manual.

pub mod ctx;
pub mod doctor;
pub mod install;
pub mod list;
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
