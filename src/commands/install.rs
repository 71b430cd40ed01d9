//! `keryx-hooks install <host>... [--scope user|project] [--source DIR]
//! [--format settings|plugin] [--out DIR] [--dry-run] [--json]`: copies the
//! hook source into its snapshot, then wires every event each host maps to
//! `'<this binary>' run <host> <Event> --snapshot <key>`, with the host's
//! match-everything matcher and a timeout (in the host's unit) above the
//! shim's worst case for the event. Host files are merged, never
//! overwritten; with `--format plugin` the host's own package is generated
//! under `--out` instead (OpenCode always gets its plugin file). Each wiring
//! (host, scope, format, file) is recorded in the snapshot's manifest, for
//! `status`, `doctor` and `uninstall`. Running it again changes nothing.
//! With `--dry-run` it prints the diff and writes nothing. Replacing an
//! existing snapshot with command hooks it does not run yet shows them first
//! (as `trust` shows a project's) and, on a terminal, asks.

use super::shared::{DEFAULT_PLUGIN_DIR, resolve_hosts, scope};
use crate::error::ExitStatus;
use crate::settings::Here;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::cli::{FormatArg, InstallArgs};
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::hosts::{Adapter, HookReview, TimeoutUnit};
use crate::install::classify::wiring_scope;
use crate::install::hostfile::{self, Change, FileReport, Scope};
use crate::install::manifest::{Wiring, WiringFormat};
use crate::install::{
    SnapshotError, fail_closed, host_sandbox, plugin, preflight, resync, snapshot,
};
use crate::output;
use crate::paths::{self};

/// The user hooks file a fresh machine starts with.
const STARTER_HOOKS: &str = "{\n  \"schemaVersion\": \"1.0.0\",\n  \"hooks\": {}\n}\n";

/// The arguments, resolved.
struct Settings {
    hosts: Vec<&'static Adapter>,
    scope: Scope,
    /// `--format plugin`.
    plugins: bool,
    /// Where packages go (`--out`, or [`DEFAULT_PLUGIN_DIR`]).
    out: PathBuf,
    source: PathBuf,
    /// `$KERYX_HOME`, which install may create; a `--source` must exist.
    default_source: bool,
    /// `--host-sandbox`.
    host_sandbox: bool,
    dry_run: bool,
    json: bool,
}

/// What happened to one host.
struct HostOutcome {
    host: &'static Adapter,
    files: Vec<FileReport>,
    /// With `--host-sandbox`: the sandbox settings per file.
    sandbox: Vec<host_sandbox::Report>,
    error: Option<String>,
}

pub fn run(args: &InstallArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let s = settings(args, &loc)?;

    if !s.source.is_dir() && !s.default_source {
        return Err(CommandError::user(format!(
            "the hook source `{}` is not a directory",
            escape(&s.source.display().to_string())
        ))
        .hint("pass a directory holding hooks.json, or leave out --source to use `$KERYX_HOME`"));
    }
    if s.plugins
        && let Some(h) = s.hosts.iter().find(|h| plugin::kind(h).is_none())
    {
        return Err(CommandError::user(format!(
            "{} has no plugin or extension format",
            h.display_name()
        ))
        .hint(format!(
            "wire it with `--format settings` (the default); packages exist for {}",
            plugin::hosts()
                .iter()
                .map(|h| h.name())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if s.host_sandbox {
        if s.plugins {
            return Err(CommandError::user(
                "--host-sandbox edits the host's settings file; a plugin cannot carry it",
            )
            .hint("run it with `--format settings` (the default)"));
        }
        if let Some(h) = s.hosts.iter().find(|h| !host_sandbox::supports(h)) {
            return Err(CommandError::user(format!(
                "--host-sandbox is not available for {}",
                h.display_name()
            ))
            .hint(format!(
                "leave it out for {}; it sets the sandbox of {}",
                h.name(),
                host_sandbox::hosts().join(", ")
            )));
        }
    }
    // A host without a file at this scope fails alone, before anything is written.
    let (wirable, unwirable): (Vec<&'static Adapter>, Vec<&'static Adapter>) =
        s.hosts.iter().partition(|h| {
            (s.plugins && !hostfile::is_plugin_file_host(h))
                || !hostfile::config_files(h, s.scope, &loc).is_empty()
        });
    let mut outcomes: Vec<HostOutcome> = unwirable
        .into_iter()
        .map(|host| HostOutcome {
            host,
            files: Vec::new(),
            sandbox: Vec::new(),
            error: Some(format!(
                "no {}-scope config file to wire (try `--scope {}`)",
                s.scope.as_str(),
                match s.scope {
                    Scope::User => "project",
                    Scope::Project => "user",
                }
            )),
        })
        .collect();
    if wirable.is_empty() {
        let notes = Vec::new();
        if s.json {
            output::json(&report_json(&s, &loc, None, "", &outcomes, &notes));
        } else {
            print_outcomes(&s, &outcomes, &notes);
        }
        return Ok(ExitStatus::Failure);
    }
    let starter = s.source.join("hooks.json");
    if s.default_source && !s.dry_run && std::fs::symlink_metadata(&starter).is_err() {
        // A fresh machine: the built-in hooks alone are worth wiring, and
        // the snapshot needs a hooks file to copy.
        std::fs::create_dir_all(&s.source)
            .and_then(|()| std::fs::write(&starter, STARTER_HOOKS))
            .map_err(|e| {
                CommandError::internal(format!("cannot create `{}`", starter.display())).cause(e)
            })?;
        if !s.json {
            output::line(&format!(
                "created {} with no hooks of your own yet; the built-in hooks are active",
                shown(&starter)
            ));
        }
    }
    // The same checks every resync path makes: a source whose gates would
    // deny every call never becomes the snapshot sessions run.
    let problems = preflight::check(&s.source, &loc);
    if !problems.is_empty() {
        let (whats, fixes) = preflight::render(&problems);
        return Err(whats
            .iter()
            .fold(
                CommandError::config(format!(
                    "the hook source `{}` fails its checks, so no host was wired and no snapshot changed",
                    escape(&s.source.display().to_string())
                )),
                |e, w| e.cause(w),
            )
            .hint(fixes.join("; ")));
    }
    let regs = hostfile::budget_registrations(&s.source, &loc).map_err(|errors| {
        errors
            .iter()
            .fold(
                CommandError::config(format!(
                    "the hooks in `{}` do not load, so no host was wired",
                    escape(&s.source.display().to_string())
                )),
                |e, d| e.cause(d),
            )
            .hint("keryx-hooks validate")
    })?;

    let names: Vec<String> = wirable.iter().map(|h| h.name().to_owned()).collect();
    // Replacing a snapshot with commands it does not run yet: show them,
    // and on a terminal ask (`install` is itself the request, so without a
    // terminal it goes ahead, with the commands shown).
    let key = snapshot::snapshot_key(&s.source);
    let mut notes_before = Vec::new();
    if let Some(changes) = resync::command_changes(&s.source, &loc.snapshot_root.join(&key), &loc) {
        if s.json {
            notes_before.push(format!(
                "snapshot `{}` {} new or changed command hooks from the source: {}",
                escape(&key),
                if s.dry_run {
                    "would start running"
                } else {
                    "now runs"
                },
                changes.ids()
            ));
        } else {
            output::stdout(&changes.render(&s.source, &key));
        }
        if !s.dry_run
            && !s.json
            && std::io::stdin().is_terminal()
            && !super::shared::ask("Replace the snapshot with these commands?")?
        {
            output::line("Not installed; nothing was written.");
            return Ok(ExitStatus::Failure);
        }
    }
    // A dry run on a fresh machine has no source to copy yet.
    let sync = if !(s.dry_run && s.default_source && !starter.is_file()) {
        Some(
            snapshot::sync(&s.source, &loc.snapshot_root, &names, s.dry_run).map_err(|e| {
                CommandError::internal(format!(
                    "cannot snapshot `{}`; no host was wired",
                    escape(&s.source.display().to_string())
                ))
                .cause(e)
            })?,
        )
    } else {
        None
    };
    let key = sync
        .as_ref()
        .map_or_else(|| snapshot::snapshot_key(&s.source), |r| r.key.clone());

    outcomes.extend(wirable.into_iter().map(|host| {
        let result = if s.plugins && !hostfile::is_plugin_file_host(host) {
            hostfile::shim_binary().and_then(|binary| {
                let fail_closed = fail_closed::verdict(host, &loc.home).writes();
                let wanted =
                    hostfile::desired(host, &binary, &loc.snapshot_dir(&key), &regs, fail_closed);
                plugin::install(host, &plugin::package_dir(&s.out, host), &wanted, s.dry_run)
                    .map(|f| vec![f])
            })
        } else {
            hostfile::wire_host(host, s.scope, &loc, &key, &regs, s.dry_run)
        };
        let result = result.and_then(|files| {
            let sandbox = match host.host_sandbox().filter(|_| s.host_sandbox) {
                Some(spec) => files
                    .iter()
                    .map(|f| host_sandbox::install(&loc, spec, &f.path, s.dry_run))
                    .collect::<Result<Vec<_>, _>>()?,
                None => Vec::new(),
            };
            Ok((files, sandbox))
        });
        match result {
            Ok((files, sandbox)) => HostOutcome {
                host,
                files,
                sandbox,
                error: None,
            },
            Err(e) => HostOutcome {
                host,
                files: Vec::new(),
                sandbox: Vec::new(),
                error: Some(e.to_string()),
            },
        }
    }));
    let mut notes = notes(&s, &loc, &outcomes, &regs);
    notes.splice(0..0, notes_before);
    let mut failed = outcomes.iter().any(|o| o.error.is_some());
    if !s.dry_run
        && let Err(e) = record_wirings(&s, &loc, &key, &outcomes)
    {
        failed = true;
        notes.push(format!(
            "the hosts are wired, but the snapshot's manifest could not record where ({e}); `status` and `doctor` check them as before"
        ));
    }

    if s.json {
        output::json(&report_json(
            &s,
            &loc,
            sync.as_ref(),
            &key,
            &outcomes,
            &notes,
        ));
    } else {
        print_human(&s, &loc, sync.as_ref(), &key, &outcomes, &notes);
    }
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Records in the snapshot's manifest where each host was wired (host,
/// scope, format, absolute path), so `status`, `doctor` and `uninstall`
/// check and undo it there.
fn record_wirings(
    s: &Settings,
    loc: &Here,
    key: &str,
    outcomes: &[HostOutcome],
) -> Result<(), SnapshotError> {
    let wirings: Vec<Wiring> = outcomes
        .iter()
        .filter(|o| o.error.is_none())
        .flat_map(|o| {
            o.files.iter().map(move |f| Wiring {
                host: o.host.name().to_owned(),
                scope: wiring_scope(s.scope),
                format: if s.plugins || hostfile::is_plugin_file_host(o.host) {
                    WiringFormat::Plugin
                } else {
                    WiringFormat::Settings
                },
                path: paths::absolute(&f.path).to_string_lossy().into_owned(),
                project: (s.scope == Scope::Project)
                    .then(|| loc.project_root_or_cwd().to_string_lossy().into_owned()),
            })
        })
        .collect();
    if wirings.is_empty() {
        return Ok(());
    }
    snapshot::update_wirings(&loc.snapshot_root, key, |_, recorded| {
        recorded.extend(wirings);
    })
    .map(|_| ())
}

fn settings(args: &InstallArgs, loc: &Here) -> Result<Settings, CommandError> {
    let (source, default_source) = match &args.source {
        Some(dir) => (paths::absolute(dir), false),
        None => (loc.keryx_home.clone(), true),
    };
    Ok(Settings {
        hosts: resolve_hosts(&args.hosts)?,
        scope: scope(args.scope),
        plugins: args.format == FormatArg::Plugin,
        out: args
            .out
            .as_deref()
            .map(paths::absolute)
            .unwrap_or_else(|| loc.home.join(DEFAULT_PLUGIN_DIR)),
        source,
        default_source,
        host_sandbox: args.host_sandbox,
        dry_run: args.dry_run,
        json: args.json,
    })
}

/// Things the user has to know or do after this install.
fn notes(
    s: &Settings,
    loc: &Here,
    outcomes: &[HostOutcome],
    regs: &[crate::config::model::Registration],
) -> Vec<String> {
    let mut notes = Vec::new();
    for o in outcomes.iter().filter(|o| o.error.is_none()) {
        notes.extend(hostfile::wiring::over_host_max_text(o.host, regs));
    }
    let changed = |o: &HostOutcome| o.files.iter().any(|f| f.change != Change::Unchanged);
    if outcomes
        .iter()
        .any(|o| o.host.reviews_hooks() == Some(HookReview::CodexTrustedHash) && changed(o))
    {
        notes.push(
            "Codex runs new or changed hooks only after you review them: open `/hooks` in Codex and trust the keryx-hooks entries (until then they do not run); `keryx-hooks doctor` reports them until Codex records the trust."
                .to_owned(),
        );
    }
    if s.scope == Scope::Project {
        for o in outcomes.iter().filter(|o| changed(o)) {
            if let Some(trust) = o.host.project_trust()
                && !notes.iter().any(|n| n == trust.note)
            {
                notes.push(trust.note.to_owned());
            }
        }
    }
    // A host that also runs another host's hook files (Cursor and Copilot
    // run Claude Code's), wired with that host too.
    for o in outcomes.iter().filter(|o| o.error.is_none()) {
        let Some(also) = o.host.also_runs() else {
            continue;
        };
        let other_wired = outcomes.iter().any(|x| x.host.name() == also.host)
            || hostfile::all_wired(loc)
                .unwrap_or_default()
                .iter()
                .any(|(host, _, _)| *host == also.host);
        if other_wired {
            notes.push(also.note.to_owned());
        }
    }
    for o in outcomes.iter().filter(|o| o.error.is_none()) {
        let n = super::shared::imported::importable(loc, o.host, s.scope);
        if n > 0 {
            notes.push(format!(
                "{} also has {n} hooks of its own, which it keeps running outside keryx-hooks; `keryx-hooks import {}{}` moves them in, so they run once, sandboxed and logged.",
                o.host.display_name(),
                o.host.name(),
                if s.scope == Scope::Project { " --scope project" } else { "" }
            ));
        }
    }
    // The host's fail-closed switch: written, or why not.
    for o in outcomes
        .iter()
        .filter(|o| o.error.is_none() && !o.files.is_empty())
    {
        let Some(sw) = o.host.fail_closed_switch() else {
            continue;
        };
        let host = o.host.display_name();
        let value = format!("`{}: {}`", sw.key, sw.value());
        match fail_closed::verdict(o.host, &loc.home) {
            fail_closed::Verdict::Withhold { why } => notes.push(format!(
                "{host}: {why}; until then a missing, killed or hung keryx-hooks lets {host} run the tool. Install or update every copy to {} or later (and remove older ones), then run `keryx-hooks doctor --fix`.",
                sw.min_version.unwrap_or("a version that knows it")
            )),
            _ if changed(o) && sw.min_version.is_some() => notes.push(format!(
                "{host}: tool calls and prompts are wired with {value}, so if keryx-hooks is missing, killed or hung {host} refuses them instead of letting them run. After moving or reinstalling keryx-hooks, run `keryx-hooks doctor --fix` from a terminal to point {host} at the new binary."
            )),
            _ => {}
        }
    }
    if s.scope == Scope::User && loc.project_hooks_file().is_some_and(|p| p.is_file()) {
        notes.push(
            "Host timeouts cover the built-in and your own hooks; for this project's gates too, also run `keryx-hooks install --scope project <host>...`."
                .to_owned(),
        );
    }
    notes
}

fn unit_name(unit: TimeoutUnit) -> &'static str {
    match unit {
        TimeoutUnit::Seconds => "s",
        TimeoutUnit::Milliseconds => "ms",
    }
}

/// `19 s PreToolUse; 8 s Stop, SessionStart` from a file's entries.
fn timeouts_line(host: &Adapter, f: &FileReport) -> String {
    let mut groups: Vec<(u64, Vec<&str>)> = Vec::new();
    for e in &f.entries {
        let t = e.timeout.unwrap_or(0);
        match groups.iter_mut().find(|(g, _)| *g == t) {
            Some((_, evs)) => evs.push(&e.host_event),
            None => groups.push((t, vec![&e.host_event])),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.0));
    groups
        .iter()
        .map(|(t, evs)| format!("{t} {} {}", unit_name(host.timeout_unit()), evs.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn shown(p: &Path) -> String {
    format!("`{}`", escape(&p.display().to_string()))
}

fn print_human(
    s: &Settings,
    loc: &Here,
    sync: Option<&snapshot::SyncReport>,
    key: &str,
    outcomes: &[HostOutcome],
    notes: &[String],
) {
    let would = if s.dry_run { "would be " } else { "" };
    match sync {
        Some(r) => {
            let state = if r.changed {
                format!("{would}updated")
            } else {
                "unchanged".to_owned()
            };
            output::line(&format!(
                "snapshot `{}` of {}: {state} ({})",
                escape(key),
                shown(&s.source),
                shown(&r.dir)
            ));
            for w in &r.warnings {
                output::err_line(&format!("warning: {}", escape(w)));
            }
        }
        None => output::line(&format!(
            "snapshot `{}` of {}: would be created ({})",
            escape(key),
            shown(&s.source),
            shown(&loc.snapshot_dir(key))
        )),
    }
    print_outcomes(s, outcomes, notes);
}

fn print_outcomes(s: &Settings, outcomes: &[HostOutcome], notes: &[String]) {
    for o in outcomes {
        let name = o.host.display_name();
        if let Some(e) = &o.error {
            output::err_line(&format!("error: {name}: {}", escape(e)));
            continue;
        }
        for f in &o.files {
            let verb = match (f.change, s.dry_run) {
                (Change::Unchanged, _) => {
                    output::line(&format!(
                        "{name}: {} already wired ({} events)",
                        shown(&f.path),
                        f.entries.len()
                    ));
                    continue;
                }
                (_, false) => "wired",
                (_, true) => "would wire",
            };
            let what = match plugin::kind(o.host) {
                Some(k) if s.plugins || hostfile::is_plugin_file_host(o.host) => {
                    format!("{} ", k.noun())
                }
                _ => String::new(),
            };
            let new = match (f.change == Change::Created, what.is_empty()) {
                (true, true) => "new file ",
                (true, false) => "new ",
                _ => "",
            };
            let mut line = format!(
                "{name}: {verb} {} events in {new}{what}{} (timeouts {})",
                f.entries.len(),
                shown(&f.path),
                timeouts_line(o.host, f)
            );
            if let Some(b) = &f.backup
                && !s.dry_run
            {
                line.push_str(&format!("; original kept at {}", shown(b)));
            }
            output::line(&line);
            if s.dry_run {
                output::stdout(&f.diff);
            }
        }
    }
    for o in outcomes.iter().filter(|o| o.error.is_none()) {
        for r in &o.sandbox {
            let state = match (r.change, s.dry_run) {
                (Change::Unchanged, _) => "already on",
                (_, false) => "turned on",
                (_, true) => "would be turned on",
            };
            output::line(&format!(
                "{}: host sandbox {state} in {}: the agent's commands cannot write keryx-hooks' files, the binary or the host configs",
                o.host.display_name(),
                shown(&r.path)
            ));
            if s.dry_run && r.change != Change::Unchanged {
                output::stdout(&r.diff);
            }
        }
    }
    for o in outcomes.iter().filter(|o| o.error.is_none()) {
        if !(s.plugins || hostfile::is_plugin_file_host(o.host)) {
            continue;
        }
        for f in &o.files {
            if let Some(how) = plugin::how_to_load(o.host, &f.path) {
                output::line(&format!("{}: {how}", o.host.display_name()));
            }
        }
    }
    for n in notes {
        output::line(&format!("note: {n}"));
    }
    if s.dry_run {
        output::line("dry run: nothing was written");
    }
}

fn report_json(
    s: &Settings,
    loc: &Here,
    sync: Option<&snapshot::SyncReport>,
    key: &str,
    outcomes: &[HostOutcome],
    notes: &[String],
) -> Value {
    let snapshot = match sync {
        Some(r) => json!({
            "key": r.key,
            "dir": r.dir,
            "sourceHash": r.source_hash,
            "changed": r.changed,
            "warnings": r.warnings,
        }),
        None if key.is_empty() => Value::Null,
        None => json!({
            "key": key,
            "dir": loc.snapshot_dir(key),
            "sourceHash": null,
            "changed": true,
            "warnings": [],
        }),
    };
    let hosts: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            json!({
                "host": o.host.name(),
                "displayName": o.host.display_name(),
                "ok": o.error.is_none(),
                "error": o.error,
                "timeoutUnit": match o.host.timeout_unit() {
                    TimeoutUnit::Seconds => "seconds",
                    TimeoutUnit::Milliseconds => "milliseconds",
                },
                "files": o.files,
                "hostSandbox": o.sandbox,
                "load": o.files.iter()
                    .filter(|_| s.plugins || hostfile::is_plugin_file_host(o.host))
                    .filter_map(|f| plugin::how_to_load(o.host, &f.path))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "ok": outcomes.iter().all(|o| o.error.is_none()),
        "dryRun": s.dry_run,
        "scope": s.scope,
        "format": if s.plugins { "plugin" } else { "settings" },
        "out": if s.plugins { Some(&s.out) } else { None },
        "source": s.source,
        "snapshot": snapshot,
        "hosts": hosts,
        "notes": notes,
    })
}
