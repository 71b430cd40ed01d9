//! `keryx-hooks uninstall <host>... [--scope user|project] [--dry-run]`:
//! takes only our entries out of each host's config (recognised by the
//! binary path plus ` run <host> `). When they were the only change since
//! the first install, the file gets its original bytes back. The packages
//! `install --format plugin` generated for these hosts at this scope (as
//! the snapshots' manifests record them) are removed too, file by file; so
//! is OpenCode's plugin file. The manifests forget those wirings, and a
//! snapshot nothing is wired to any more is deleted — only if it carries
//! our manifest. Unwiring a host that was never wired changes nothing.
//! Hooks `import` moved out of the host go back first, byte for byte, and
//! their registrations leave the hooks file.

use crate::error::ExitStatus;
use crate::settings::Here;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::cli::UninstallArgs;
use crate::error::CmdResult;
use crate::escape::escape;
use crate::hosts::Adapter;
use crate::install::classify::{self, wiring_scope};
use crate::install::hostfile::{self, Change, FileReport, Scope};
use crate::install::manifest::WiringFormat;
use crate::install::{host_sandbox, plugin, snapshot};
use crate::output;
use crate::paths::{self};

pub fn run(args: &UninstallArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let hosts = super::shared::resolve_hosts(&args.hosts)?;
    let scope = super::shared::scope(args.scope);
    let dry_run = args.dry_run;

    let mut failed = false;
    // Snapshot key -> the (host, file) wirings this run took out.
    let mut released: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut release = |host: &Adapter, report: &FileReport| {
        let path = paths::absolute(&report.path).to_string_lossy().into_owned();
        for key in report.removed.iter().filter_map(|e| e.snapshot_key.clone()) {
            released
                .entry(key)
                .or_default()
                .insert((host.name().to_owned(), path.clone()));
        }
    };
    let import_target = super::shared::hooks_file::hooks_file_at(&loc, scope);
    for host in &hosts {
        let name = host.display_name();
        // Hooks `import` moved out of this host go back first, so the
        // host file then holds exactly what our wiring was added to.
        if let Some(hooks_file) = &import_target {
            let undone = super::shared::imported::undo(&loc, host, scope, hooks_file, dry_run);
            failed |= undone.iter().any(|u| u.error.is_some());
            if !undone.is_empty() {
                super::shared::imported::print_undone(&[*host], &undone, dry_run);
            }
        }
        let files = hostfile::config_files(host, scope, &loc);
        let packages = recorded_packages(&loc, host, scope);
        if files.is_empty() && packages.is_empty() {
            output::line(&format!(
                "{name}: no {}-scope config file; nothing to remove",
                scope.as_str()
            ));
        }
        for path in files {
            // A committed link to the user's own settings must not take the
            // user-scope wiring out.
            let outside = match scope {
                Scope::Project => {
                    hostfile::file::refuse_outside(&path, loc.project_root_or_cwd()).err()
                }
                Scope::User => None,
            };
            if let Some(e) = outside {
                failed = true;
                output::err_line(&format!("error: {name}: {}", escape(&e.to_string())));
                continue;
            }
            // The host sandbox install added goes first, so the file then
            // holds exactly what the wiring was added to.
            match host_sandbox::uninstall(&loc, &path, dry_run) {
                Ok(None) => {}
                Ok(Some(r)) => print_sandbox(name, &r, dry_run),
                Err(e) => {
                    failed = true;
                    output::err_line(&format!("error: {name}: {}", escape(&e.to_string())));
                    continue;
                }
            }
            match hostfile::uninstall(host, &path, dry_run) {
                Ok(report) => {
                    release(host, &report);
                    print_file(name, &report, dry_run);
                }
                Err(e) => {
                    failed = true;
                    output::err_line(&format!("error: {name}: {}", escape(&e.to_string())));
                }
            }
        }
        for path in packages {
            match plugin::uninstall(host, &path, dry_run) {
                Ok(report) => {
                    release(host, &report);
                    print_file(name, &report, dry_run);
                }
                Err(e) => {
                    failed = true;
                    output::err_line(&format!("error: {name}: {}", escape(&e.to_string())));
                }
            }
        }
    }

    if !dry_run && !released.is_empty() {
        failed |= !forget(&loc, scope, &released);
    }
    if dry_run {
        output::line("dry run: nothing was written");
    }
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn print_sandbox(name: &str, r: &host_sandbox::Report, dry_run: bool) {
    let path = escape(&r.path.display().to_string());
    if r.change != Change::Unchanged {
        let verb = if dry_run { "would take" } else { "took" };
        output::line(&format!(
            "{name}: {verb} the host sandbox settings keryx-hooks added out of `{path}`"
        ));
        if dry_run {
            output::stdout(&r.diff);
        }
    }
    if !r.kept.is_empty() {
        output::line(&format!(
            "{name}: {} host sandbox settings in `{path}` were changed since install and stay as they are",
            r.kept.len()
        ));
    }
}

/// The packages generated for `host` at `scope` that some snapshot's
/// manifest records (OpenCode's plugin file is among its config files
/// already), plus the default package directory when one of ours is there.
fn recorded_packages(loc: &Here, host: &Adapter, scope: Scope) -> Vec<PathBuf> {
    if plugin::kind(host).is_none() || hostfile::is_plugin_file_host(host) {
        return Vec::new();
    }
    let mut out: BTreeSet<PathBuf> = snapshot::installed(&loc.snapshot_root)
        .into_iter()
        .filter_map(|s| s.manifest.ok())
        .flat_map(|m| m.wirings)
        .filter(|w| {
            w.host == host.name()
                && w.scope == wiring_scope(scope)
                && w.format == WiringFormat::Plugin
        })
        .map(|w| PathBuf::from(w.path))
        .collect();
    let default = plugin::package_dir(&loc.home.join(super::shared::DEFAULT_PLUGIN_DIR), host);
    if scope == Scope::User && plugin::wired_events(host, &default).is_ok_and(|e| !e.is_empty()) {
        out.insert(default);
    }
    out.into_iter().collect()
}

/// The manifests forget the wirings taken out; a snapshot left with no
/// wiring and no host is deleted (bounded: only a directory with our
/// manifest). Hosts recorded without a wiring (older manifests) stay while
/// a config file reachable from here still points at the snapshot. Returns
/// false when something could not be done.
fn forget(
    loc: &Here,
    scope: Scope,
    released: &BTreeMap<String, BTreeSet<(String, String)>>,
) -> bool {
    let wired = match hostfile::all_wired(loc) {
        Ok(w) => w,
        Err(e) => {
            output::err_line(&format!(
                "warning: snapshots kept: cannot tell which are still in use ({})",
                escape(&e.to_string())
            ));
            return true;
        }
    };
    let mut ok = true;
    for (key, taken) in released {
        let still: BTreeSet<String> = wired
            .iter()
            .filter(|(_, _, entries)| {
                entries
                    .iter()
                    .any(|e| e.snapshot_key.as_deref() == Some(key))
            })
            .map(|(host, _, _)| (*host).to_owned())
            .collect();
        let mut had_wirings = false;
        let updated = snapshot::update_wirings(&loc.snapshot_root, key, |hosts, wirings| {
            had_wirings = !wirings.is_empty();
            wirings.retain(|w| {
                !(w.scope == wiring_scope(scope)
                    && taken.contains(&(w.host.clone(), w.path.clone())))
            });
            hosts.retain(|h| still.contains(h));
        });
        let m = match updated {
            Ok(m) => m,
            Err(e) => {
                // No manifest to update: nothing more to do for this key.
                if snapshot::installed(&loc.snapshot_root)
                    .iter()
                    .any(|s| &s.key == key)
                {
                    output::err_line(&format!("warning: {}", escape(&e.to_string())));
                }
                continue;
            }
        };
        if !m.wirings.is_empty() || !m.hosts.is_empty() {
            continue;
        }
        // Without recorded wirings, another project may still be wired to
        // it at project scope: only a user-scope uninstall lets it go.
        if scope == Scope::Project && !had_wirings {
            continue;
        }
        match snapshot::remove_snapshot(&loc.snapshot_root, key) {
            Ok(true) => {
                // The drift check's memo of its manifest goes with it.
                let _ = std::fs::remove_file(classify::manifest_memo(loc, key));
                output::line(&format!(
                    "removed snapshot `{}` (nothing is wired to it any more)",
                    escape(key)
                ))
            }
            Ok(false) => {}
            Err(e) => {
                ok = false;
                output::err_line(&format!("error: {}", escape(&e.to_string())));
            }
        }
    }
    ok
}

fn print_file(name: &str, r: &FileReport, dry_run: bool) {
    let path = format!("`{}`", escape(&r.path.display().to_string()));
    let n = r.removed.len();
    let (remove, restore) = if dry_run {
        ("would remove", "restoring")
    } else {
        ("removed", "restored")
    };
    let exists = Path::new(&r.path).exists();
    output::line(&match r.change {
        Change::Unchanged if exists => format!("{name}: nothing of keryx-hooks in {path}"),
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
