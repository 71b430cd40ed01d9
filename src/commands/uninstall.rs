//! `keryx-hooks uninstall <host>... [--scope user|project] [--dry-run]`:
//! takes only our entries out of each host's config (recognised by the
//! binary path plus ` run <host> `). When they were the only change since
//! the first install, the file gets its original bytes back. A snapshot no
//! host here points at any more is deleted, and only if it carries our
//! manifest. Unwiring a host that was never wired changes nothing.

use std::collections::BTreeSet;
use std::process::ExitCode;

use crate::cli::UninstallArgs;
use crate::error::CmdResult;
use crate::escape::escape;
use crate::install::hostfile::{self, Change, FileReport, Scope};
use crate::install::snapshot;
use crate::output;

pub fn run(args: &UninstallArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let hosts = super::install::resolve_hosts(&args.hosts)?;
    let scope = super::install::scope(args.scope);
    let dry_run = args.dry_run;

    let mut failed = false;
    let mut released: BTreeSet<String> = BTreeSet::new();
    for host in &hosts {
        let name = host.display_name();
        let files = hostfile::config_files(host, scope, &loc);
        if files.is_empty() {
            output::line(&format!(
                "{name}: no {}-scope config file; nothing to remove",
                scope.as_str()
            ));
        }
        for path in files {
            match hostfile::uninstall(host, &path, dry_run) {
                Ok(report) => {
                    released.extend(report.removed.iter().filter_map(|e| e.snapshot_key.clone()));
                    print_file(name, &report, dry_run);
                }
                Err(e) => {
                    failed = true;
                    output::err_line(&format!("error: {name}: {}", escape(&e)));
                }
            }
        }
    }

    // Snapshots: keep every one still referenced; the manifest forgets the
    // hosts that no longer point at it.
    let wired = if !dry_run && !released.is_empty() {
        hostfile::all_wired(&loc)
            .map_err(|e| {
                output::err_line(&format!(
                    "warning: snapshots kept: cannot tell which are still in use ({})",
                    escape(&e)
                ));
            })
            .ok()
    } else {
        None
    };
    if let Some(wired) = wired {
        for key in &released {
            let still: BTreeSet<String> = wired
                .iter()
                .filter(|(_, _, entries)| {
                    entries
                        .iter()
                        .any(|e| e.snapshot_key.as_deref() == Some(key))
                })
                .map(|(host, _, _)| (*host).to_owned())
                .collect();
            if !still.is_empty() {
                let hosts: Vec<String> = still.into_iter().collect();
                if let Err(e) = snapshot::set_hosts(&loc.snapshot_root, key, &hosts) {
                    output::err_line(&format!("warning: {}", escape(&e)));
                }
                continue;
            }
            // Another project may still be wired to it at project scope;
            // only a user-scope uninstall lets the snapshot go.
            if scope == Scope::Project {
                continue;
            }
            match snapshot::remove_snapshot(&loc.snapshot_root, key) {
                Ok(true) => output::line(&format!(
                    "removed snapshot `{}` (no host here points at it any more)",
                    escape(key)
                )),
                Ok(false) => {}
                Err(e) => {
                    failed = true;
                    output::err_line(&format!("error: {}", escape(&e)));
                }
            }
        }
    }
    if dry_run {
        output::line("dry run: nothing was written");
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_file(name: &str, r: &FileReport, dry_run: bool) {
    let path = format!("`{}`", escape(&r.path.display().to_string()));
    let n = r.removed.len();
    let (remove, restore) = if dry_run {
        ("would remove", "restoring")
    } else {
        ("removed", "restored")
    };
    output::line(&match r.change {
        Change::Unchanged if r.path.exists() => format!("{name}: nothing of keryx-hooks in {path}"),
        Change::Unchanged => format!("{name}: not wired (no {path})"),
        Change::Restored => {
            format!("{name}: {remove} {n} entries from {path}, {restore} its original bytes")
        }
        Change::Removed => format!("{name}: {remove} {path}, which held only keryx-hooks entries"),
        Change::Created | Change::Updated => format!("{name}: {remove} {n} entries from {path}"),
    });
    if dry_run {
        output::stdout(&r.diff);
    }
}
