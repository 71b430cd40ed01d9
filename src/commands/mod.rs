//! One file per command; each reads like that command's manual.

pub mod allow_once;
pub mod completions;
pub mod ctx;
pub mod doctor;
pub mod explain;
pub mod export;
pub mod hosts;
pub mod import;
pub mod init;
pub mod install;
pub mod list;
pub mod log;
pub mod run;
pub mod security;
pub(crate) mod shared;
pub mod status;
pub mod test;
pub mod test_rule;
pub mod toggle;
pub mod trust;
pub mod uninstall;
pub mod untrust;
pub mod validate;

use crate::settings::Here;
use std::path::PathBuf;

use crate::config::model::Profile;
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::hosts::Adapter;

/// Locations for a human command run from the current directory.
pub fn here() -> Here {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    Here::resolve(&cwd)
}

/// Prints location warnings (e.g. a refused KERYX_HOME) to stderr.
pub fn print_location_warnings(loc: &Here) {
    for w in &loc.warnings {
        crate::output::err_line(&format!("warning: {}", crate::escape::escape(w)));
    }
}

/// The profile for a command: `--profile`, else the one `run` uses when
/// the host names none (runtime.toml's), with a warning on stderr when a
/// broken file makes that the strictest.
pub fn profile_or_settings(flag: Option<Profile>, loc: &Here) -> Profile {
    if let Some(p) = flag {
        return p;
    }
    if let Some(why) = loc.settings().profile_fallback() {
        crate::output::err_line(&format!("warning: {why}"));
    }
    loc.settings().profile()
}

/// The hosts a person named, each once, in the order given: a host's name
/// or one of its aliases (`claude` is claude-code), among `offered`, the
/// hosts the command takes, which `offered_are` describes in the hint
/// (`hosts that can be wired`). A host outside them is refused with
/// `refused`'s message; a name no host has is refused with the nearest
/// offered host as a suggestion.
pub fn resolve_hosts(
    names: &[String],
    offered: &[&'static Adapter],
    offered_are: &str,
    refused: impl Fn(&Adapter) -> String,
) -> Result<Vec<&'static Adapter>, CommandError> {
    let list = || {
        offered
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out: Vec<&'static Adapter> = Vec::new();
    for name in names {
        let host = match crate::hosts::lookup(name) {
            Some(h) if offered.iter().any(|o| o.name() == h.name()) => h,
            Some(h) => {
                return Err(
                    CommandError::user(refused(h)).hint(format!("{offered_are}: {}", list()))
                );
            }
            None => {
                let guess = crate::hosts::closest(name, offered)
                    .map(|h| format!("did you mean `{}`? ", h.name()))
                    .unwrap_or_default();
                return Err(
                    CommandError::user(format!("unknown host `{}`", escape(name)))
                        .hint(format!("{guess}{offered_are}: {}", list())),
                );
            }
        };
        if !out.iter().any(|h| h.name() == host.name()) {
            out.push(host);
        }
    }
    Ok(out)
}

/// The one host a person named, among every adapter (`explain`, `log --host`).
pub fn resolve_host(name: &str) -> Result<&'static Adapter, CommandError> {
    let every: Vec<&'static Adapter> = crate::hosts::all().collect();
    let mut one = resolve_hosts(&[name.to_owned()], &every, "known hosts", |_| String::new())?;
    Ok(one.remove(0))
}

/// `install <hosts>` at user scope, as the person would type it: how
/// `import` brings the snapshot the hosts read up to date after moving
/// hooks into it. Through here, so that no command imports another.
pub(crate) fn reinstall(hosts: Vec<String>) -> CmdResult {
    install::run(&crate::cli::InstallArgs {
        hosts,
        scope: crate::cli::ScopeArg::User,
        format: crate::cli::FormatArg::Settings,
        out: None,
        source: None,
        host_sandbox: false,
        dry_run: false,
        json: false,
    })
}
