//! `keryx-hooks import <host>... [--scope user|project] [--dry-run] [--json]
//! [--undo]`: moves a host's own hook entries into keryx-hooks. Each shell
//! command hook on an event keryx has becomes a registration in
//! `$KERYX_HOME/hooks.json` (or the project's `.metaproject/hooks.json`),
//! with `/bin/sh -c <command>` as the host runs it and exactly the grants
//! its command shows it needs; then it is taken out of the host config so
//! it does not run twice. What keryx cannot run stays with the host, with
//! the reason. The host file's bytes from before are kept (a backup beside
//! it and a record in the state directory), and `--undo` (or `uninstall`)
//! puts them back and removes the imported registrations.

use crate::error::ExitStatus;
use crate::settings::Here;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::cli::ImportArgs;
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::hosts::Adapter;
use crate::install::hostfile::{self, Scope, file};
use crate::install::import::{self, Outcome, Planned};
use crate::install::preflight;
use crate::output;

use super::shared::hooks_file::*;
use super::shared::imported::*;

pub fn run(args: &ImportArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let hosts = resolve_hosts(&args.hosts)?;
    let scope = super::shared::scope(args.scope);
    let hooks_file = hooks_file(&loc, scope)?;
    if args.undo {
        return undo_command(&loc, &hosts, scope, &hooks_file, args.dry_run, args.json);
    }

    let existing = existing_ids(&hooks_file)?;
    let mut plan: Vec<Planned> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut files: Vec<(&'static Adapter, import::SourceFile, String)> = Vec::new();
    let root = loc.project_root.clone();
    let read_script = |word: &str| read_script(word, &loc, root.as_deref());
    for host in &hosts {
        for src in import::source_files(host, scope, &loc) {
            if scope == Scope::Project
                && let Err(e) = file::refuse_outside(&src.path, loc.project_root_or_cwd())
            {
                errors.push(format!("{}: {e}", host.display_name()));
                continue;
            }
            let text = match file::resolve(&src.path).and_then(|r| file::read(&r)) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) => {
                    errors.push(format!("{}: {e}", host.display_name()));
                    continue;
                }
            };
            match import::list(&text, src.format) {
                Ok(listed) => {
                    plan.extend(import::plan_file(
                        host,
                        scope,
                        &src,
                        &listed,
                        &read_script,
                        args.fail_closed,
                    ));
                    files.push((host, src, text));
                }
                Err(e) => errors.push(format!(
                    "{}: `{}`: {e}",
                    host.display_name(),
                    src.path.display()
                )),
            }
        }
    }

    // A plugin's or extension's hooks are listed, never moved.
    for host in &hosts {
        for pkg in import::package_files(host, scope, &loc) {
            let listed = file::read(&pkg.file.path)
                .ok()
                .flatten()
                .and_then(|text| import::list_package(&text, &pkg).ok());
            match listed {
                Some(listed) => plan.extend(import::plan_package(host, &pkg, &listed)),
                None => errors.push(format!(
                    "{}: `{}` cannot be read as a hooks file",
                    host.display_name(),
                    pkg.file.path.display()
                )),
            }
        }
    }

    // Each id once: the same handler twice is one registration.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut new_regs: Vec<(&'static str, Value)> = Vec::new();
    for p in &plan {
        if let Outcome::Import(i) = &p.outcome
            && seen.insert(i.id.clone())
            && !existing.contains(&i.id)
        {
            new_regs.push((i.event, i.registration.clone()));
        }
    }

    // Moved into a sandbox that cannot start here, each hook would fail
    // (a gate then denies every call): refuse before anything is written.
    let sandboxed: Vec<String> = new_regs
        .iter()
        .filter(|(_, r)| r.get("runsIn").and_then(Value::as_str) != Some("unsandboxed"))
        .filter_map(|(_, r)| r.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    if let Some(p) = preflight::sandbox_problem(&loc, &sandboxed) {
        if !args.json {
            print_plan(&plan, &hooks_file, true, new_regs.len());
        }
        return Err(CommandError::config(
            "the hooks to import need a sandbox that does not work here; nothing was moved",
        )
        .cause(p.what)
        .hint(p.fix));
    }

    let mut changed_files: Vec<PathBuf> = Vec::new();
    if !args.dry_run {
        if !new_regs.is_empty() {
            add_registrations(&loc, scope, &hooks_file, &new_regs)?;
        }
        for (host, src, _) in &files {
            let picked: Vec<&Planned> = plan
                .iter()
                .filter(|p| p.file == src.path && matches!(p.outcome, Outcome::Import(_)))
                .collect();
            if picked.is_empty() {
                continue;
            }
            match take_out(&loc, host, scope, src, &picked, &hooks_file) {
                Ok(true) => changed_files.push(src.path.clone()),
                Ok(false) => {}
                Err(e) => errors.push(format!("{}: {e}", host.display_name())),
            }
        }
    }

    let wired = hosts_wired(&loc, &hosts, scope);
    let mut notes = notes(scope, &hosts, &wired, &plan, !args.dry_run && !args.json);
    // A user hook runs from the snapshot the host is wired to: bring it up
    // to date now, or the moved hooks would run nowhere until the next install.
    let resync = to_resync(&hosts, &wired, |h| {
        plan.iter()
            .any(|p| p.host == h && matches!(p.outcome, Outcome::Import(_)))
    });
    if args.json && scope == Scope::User && !resync.is_empty() && !new_regs.is_empty() {
        notes.push(format!(
            "the installed snapshot does not hold the imported hooks yet: `keryx-hooks install {}`",
            resync.join(" ")
        ));
    }
    if args.json {
        output::json(&json!({
            "ok": errors.is_empty(),
            "dryRun": args.dry_run,
            "scope": scope,
            "hooksFile": hooks_file,
            "hooks": plan,
            "added": new_regs.len(),
            "changedFiles": changed_files,
            "errors": errors,
            "notes": notes,
        }));
    } else {
        print_plan(&plan, &hooks_file, args.dry_run, new_regs.len());
        for e in &errors {
            output::err_line(&format!("error: {}", escape(e)));
        }
        for n in &notes {
            output::line(&format!("note: {n}"));
        }
        if args.dry_run {
            output::line("dry run: nothing was written");
        }
    }
    let mut resync_failed = false;
    if scope == Scope::User
        && !args.dry_run
        && !args.json
        && !resync.is_empty()
        && !new_regs.is_empty()
    {
        output::line("updating the snapshot the hosts read your hooks from:");
        let code = super::reinstall(resync)?;
        resync_failed = code != ExitStatus::Success;
    }
    Ok(if errors.is_empty() && !resync_failed {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The adapters for `names` (names or aliases), each once; only hosts
/// `import` reads.
fn resolve_hosts(names: &[String]) -> Result<Vec<&'static Adapter>, CommandError> {
    super::resolve_hosts(names, &import::hosts(), "hosts to import from", |host| {
        format!("cannot import hooks from `{}`", host.name())
    })
}

// ------------------------------------------------------------------ host files

fn undo_command(
    loc: &Here,
    hosts: &[&'static Adapter],
    scope: Scope,
    hooks_file: &Path,
    dry_run: bool,
    json: bool,
) -> CmdResult {
    let mut all = Vec::new();
    for host in hosts {
        all.extend(undo(loc, host, scope, hooks_file, dry_run));
    }
    let mut failed = all.iter().any(|u| u.error.is_some());
    // The snapshot the hosts run still holds the registrations just
    // removed: with the native hooks back, each would run twice until it
    // is brought up to date, so it is now.
    let wired = hosts_wired(loc, hosts, scope);
    let resync = to_resync(hosts, &wired, |h| {
        all.iter().any(|u| u.host == h && !u.removed_ids.is_empty())
    });
    if json {
        let mut v = json!({"ok": !failed, "dryRun": dry_run, "undone": all});
        if !dry_run && scope == Scope::User && !resync.is_empty() {
            v["notes"] = json!([format!(
                "the installed snapshot still holds the removed hooks: `keryx-hooks install {}`",
                resync.join(" ")
            )]);
        }
        output::json(&v);
    } else {
        print_undone(hosts, &all, dry_run);
        if dry_run {
            output::line("dry run: nothing was written");
        }
    }
    if scope == Scope::User && !dry_run && !json && !resync.is_empty() {
        output::line("updating the snapshot the hosts read your hooks from:");
        failed |= super::reinstall(resync)? != ExitStatus::Success;
    }
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

// ------------------------------------------------------------------ output

/// The hosts among `hosts` that run keryx-hooks from a snapshot (`wired`)
/// and whose hooks this command `touched`: their snapshot is out of date.
fn to_resync(
    hosts: &[&'static Adapter],
    wired: &[String],
    touched: impl Fn(&str) -> bool,
) -> Vec<String> {
    hosts
        .iter()
        .map(|h| h.name())
        .filter(|h| wired.iter().any(|w| w == h) && touched(h))
        .map(str::to_owned)
        .collect()
}

/// The hosts among `hosts` that already run keryx-hooks at `scope`.
fn hosts_wired(loc: &Here, hosts: &[&'static Adapter], scope: Scope) -> Vec<String> {
    hosts
        .iter()
        .filter(|h| {
            hostfile::config_files(h, scope, loc)
                .iter()
                .chain(hostfile::config_files(h, Scope::User, loc).iter())
                .any(|p| hostfile::wired_events(h, p).is_ok_and(|e| !e.is_empty()))
        })
        .map(|h| h.name().to_owned())
        .collect()
}

fn notes(
    scope: Scope,
    hosts: &[&'static Adapter],
    wired: &[String],
    plan: &[Planned],
    resyncs: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    let imported = |h: &str| {
        plan.iter()
            .any(|p| p.host == h && matches!(p.outcome, Outcome::Import(_)))
    };
    for h in hosts {
        if imported(h.name()) && !wired.iter().any(|w| w == h.name()) {
            notes.push(format!(
                "{} does not run keryx-hooks yet, so the imported hooks do not run until you wire it: `keryx-hooks install {}`",
                h.display_name(),
                h.name()
            ));
        } else if imported(h.name()) && scope == Scope::User && !resyncs {
            notes.push(format!(
                "{} reads your hooks from the installed snapshot: `keryx-hooks install {}` (or `keryx-hooks doctor --fix`) brings it up to date",
                h.display_name(),
                h.name()
            ));
        }
    }
    if scope == Scope::Project && plan.iter().any(|p| matches!(p.outcome, Outcome::Import(_))) {
        notes.push(
            "project hooks run only once you trust them: review them with `keryx-hooks trust`"
                .to_owned(),
        );
    }
    notes
}

fn print_plan(plan: &[Planned], hooks_file: &Path, dry_run: bool, added: usize) {
    let shown = format!("`{}`", escape(&hooks_file.display().to_string()));
    if plan.is_empty() {
        output::line("no hooks of their own in these hosts' configs; nothing to import");
        return;
    }
    for p in plan {
        let what = p
            .command
            .as_deref()
            .map(|c| format!("`{}`", escape(c)))
            .unwrap_or_else(|| "(not a command)".into());
        let matcher = p
            .matcher
            .as_deref()
            .filter(|m| !m.is_empty() && *m != "*")
            .map(|m| format!(" [{}]", escape(m)))
            .unwrap_or_default();
        match &p.outcome {
            Outcome::Import(i) => {
                output::line(&format!(
                    "{} {}{matcher} {what}: {} `{}` ({} on {}, timeout {} ms)",
                    p.host,
                    escape(&p.host_event),
                    if dry_run {
                        "would import as"
                    } else {
                        "imported as"
                    },
                    i.id,
                    i.class,
                    i.event,
                    i.timeout_ms
                ));
                output::line(&format!(
                    "  keeps its {} hook contract (its payload, its reading of the answer); {}",
                    crate::hosts::adapter(i.protocol).map_or(i.protocol, |a| a.display_name()),
                    i.failure
                ));
                for n in &i.notes {
                    output::line(&format!("  {}", escape(n)));
                }
                if i.grants.why.is_empty() {
                    output::line("  granted nothing beyond the sandbox's defaults");
                }
                for w in &i.grants.why {
                    output::line(&format!("  granted {}", escape(w)));
                }
            }
            Outcome::Leave { reason } => output::line(&format!(
                "{} {}{matcher} {what}: stays with the host: {}",
                p.host,
                escape(&p.host_event),
                escape(reason)
            )),
        }
    }
    output::line(&format!(
        "{added} new registration{} {} {shown}",
        if added == 1 { "" } else { "s" },
        if dry_run { "would go to" } else { "in" }
    ));
}
