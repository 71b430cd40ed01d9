//! `keryx-hooks hosts [--detected]`: the agent hosts keryx-hooks knows, read
//! from the adapters: each one's short names, the directory that shows it is
//! set up here (its user config path's, moved by the same `*_HOME` variables
//! `install` follows), and what `install` and `import` do with it. With
//! `--detected`, only the names of the hosts set up here, one a line, for
//! scripts (install/install.sh wires those); when there is none it exits 1
//! and says how to wire one anyway.

use crate::error::ExitStatus;
use crate::settings::Here;
use std::path::Path;

use crate::cli::HostsArgs;
use crate::error::CmdResult;
use crate::escape::escape;
use crate::hosts::{self, Adapter};
use crate::install::hostfile;
use crate::install::{import, plugin};
use crate::output;

pub fn run(args: &HostsArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let detected = hostfile::detected_hosts(&loc);
    if args.detected {
        if detected.is_empty() {
            output::err_line(&none_found(&loc));
            return Ok(ExitStatus::Failure);
        }
        for h in &detected {
            output::line(h.name());
        }
        return Ok(ExitStatus::Success);
    }
    output::stdout(&table(&loc, &detected));
    if detected.is_empty() {
        output::line(
            "\nNo host is set up here; wire one anyway with `keryx-hooks install <host>`.",
        );
    } else {
        let names: Vec<&str> = detected.iter().map(|h| h.name()).collect();
        output::line(&format!(
            "\nWire the hosts set up here: `keryx-hooks install {}`",
            names.join(" ")
        ));
    }
    Ok(ExitStatus::Success)
}

/// Why `--detected` found nothing, and the command that wires a host anyway.
fn none_found(loc: &Here) -> String {
    let dirs: Vec<String> = hostfile::wirable_hosts()
        .iter()
        .filter_map(|h| hostfile::host_dir(h, loc))
        .map(|d| format!("`{}`", shown(&d, loc)))
        .collect();
    let names: Vec<&str> = hostfile::wirable_hosts().iter().map(|h| h.name()).collect();
    format!(
        "no agent host found: none of {} exists\n\
         hint: `keryx-hooks install <host>` wires one anyway (creating its directory), <host> one of: {}",
        dirs.join(", "),
        names.join(", ")
    )
}

/// One row per adapter: name, its directory (and whether it exists), what
/// `install` writes, whether `import` reads it, its short names.
fn table(loc: &Here, detected: &[&'static Adapter]) -> String {
    let rows: Vec<[String; 5]> = hosts::all()
        .map(|h| {
            let dir = match hostfile::host_dir(h, loc) {
                Some(d) if detected.iter().any(|f| f.name() == h.name()) => {
                    format!("{} (found)", shown(&d, loc))
                }
                Some(d) => shown(&d, loc),
                None => "-".to_owned(),
            };
            [
                h.name().to_owned(),
                dir,
                install_kind(h).to_owned(),
                if import::reads(h) { "yes" } else { "no" }.to_owned(),
                h.aliases().join(", "),
            ]
        })
        .collect();
    let header = [
        "host",
        "config directory",
        "install writes",
        "import",
        "also",
    ]
    .map(str::to_owned);
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What `install` writes for `host`.
fn install_kind(host: &Adapter) -> &'static str {
    if hostfile::wiring::format(host).is_none() {
        "- (runs keryx-hooks itself)"
    } else if plugin::kind(host).is_some_and(|k| k.kind() == crate::hosts::PackageKind::HookScripts)
    {
        "hook files"
    } else if hostfile::is_plugin_file_host(host) {
        "plugin file"
    } else if plugin::kind(host).is_some() {
        "settings or plugin"
    } else {
        "settings"
    }
}

/// `path` with the home shown as `~`, escaped for the terminal.
fn shown(path: &Path, loc: &Here) -> String {
    let text = match path.strip_prefix(&loc.home) {
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => path.display().to_string(),
    };
    escape(&text)
}
