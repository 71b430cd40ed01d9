//! `keryx-hooks install <host>... [--scope user|project] [--source DIR]
//! [--dry-run] [--json]`: copies the hook source into its snapshot, then
//! wires every event each host maps to `'<this binary>' run <host> <Event>
//! --snapshot <key>`, with the host's match-everything matcher and a
//! timeout (in the host's unit) above the shim's worst case for the event.
//! Host files are merged, never overwritten; running it again changes
//! nothing. With `--dry-run` it prints the diff and writes nothing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::cli::{InstallArgs, ScopeArg};
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::hosts::{Adapter, TimeoutUnit};
use crate::install::hostfile::{self, Change, FileReport, Scope};
use crate::install::snapshot;
use crate::output;
use crate::paths::{self, Locations};

/// The user hooks file a fresh machine starts with.
const STARTER_HOOKS: &str = "{\n  \"schemaVersion\": \"1.0.0\",\n  \"hooks\": {}\n}\n";

/// The arguments, resolved.
struct Settings {
    hosts: Vec<&'static Adapter>,
    scope: Scope,
    source: PathBuf,
    /// `$KERYX_HOME`, which install may create; a `--source` must exist.
    default_source: bool,
    dry_run: bool,
    json: bool,
}

/// What happened to one host.
struct HostOutcome {
    host: &'static Adapter,
    files: Vec<FileReport>,
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
    // A host without a file at this scope fails alone, before anything is written.
    let (wirable, unwirable): (Vec<&'static Adapter>, Vec<&'static Adapter>) = s
        .hosts
        .iter()
        .partition(|h| !hostfile::config_files(h, s.scope, &loc).is_empty());
    let mut outcomes: Vec<HostOutcome> = unwirable
        .into_iter()
        .map(|host| HostOutcome {
            host,
            files: Vec::new(),
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
        return Ok(ExitCode::from(1));
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
    let regs = hostfile::budget_registrations(&s.source, s.scope, &loc).map_err(|errors| {
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
        match hostfile::wire_host(host, s.scope, &loc, &key, &regs, s.dry_run) {
            Ok(files) => HostOutcome {
                host,
                files,
                error: None,
            },
            Err(e) => HostOutcome {
                host,
                files: Vec::new(),
                error: Some(e),
            },
        }
    }));
    let notes = notes(&s, &loc, &outcomes);
    let failed = outcomes.iter().any(|o| o.error.is_some());

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
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn settings(args: &InstallArgs, loc: &Locations) -> Result<Settings, CommandError> {
    let (source, default_source) = match &args.source {
        Some(dir) => (paths::absolute(dir), false),
        None => (loc.keryx_home.clone(), true),
    };
    Ok(Settings {
        hosts: resolve_hosts(&args.hosts)?,
        scope: scope(args.scope),
        source,
        default_source,
        dry_run: args.dry_run,
        json: args.json,
    })
}

pub(crate) fn scope(arg: ScopeArg) -> Scope {
    match arg {
        ScopeArg::User => Scope::User,
        ScopeArg::Project => Scope::Project,
    }
}

/// The adapters for `names`, each once, in the order given.
pub(crate) fn resolve_hosts(names: &[String]) -> Result<Vec<&'static Adapter>, CommandError> {
    let installable: Vec<&str> = crate::hosts::host_names()
        .iter()
        .copied()
        .filter(|n| crate::hosts::adapter(n).is_some_and(|a| hostfile::wiring::format(a).is_some()))
        .collect();
    let mut out: Vec<&'static Adapter> = Vec::new();
    for name in names {
        let Some(host) = crate::hosts::adapter(name) else {
            return Err(
                CommandError::user(format!("unknown host `{}`", escape(name))).hint(format!(
                    "hosts that can be wired: {}",
                    installable.join(", ")
                )),
            );
        };
        if hostfile::wiring::format(host).is_none() {
            return Err(CommandError::user(format!(
                "{} runs keryx-hooks itself (`keryx-hooks run {} <event>`); there is nothing to wire",
                host.display_name(),
                host.name()
            ))
            .hint(format!("hosts that can be wired: {}", installable.join(", "))));
        }
        if !out.iter().any(|h| h.name() == host.name()) {
            out.push(host);
        }
    }
    Ok(out)
}

/// Things the user has to know or do after this install.
fn notes(s: &Settings, loc: &Locations, outcomes: &[HostOutcome]) -> Vec<String> {
    let mut notes = Vec::new();
    let changed = |name: &str| {
        outcomes
            .iter()
            .any(|o| o.host.name() == name && o.files.iter().any(|f| f.change != Change::Unchanged))
    };
    if changed("codex") {
        notes.push(
            "Codex runs new or changed hooks only after you review them: open `/hooks` in Codex and trust the keryx-hooks entries (until then they do not run)."
                .to_owned(),
        );
    }
    // Cursor and Copilot also read Claude Code's settings files.
    let claude_wired = outcomes.iter().any(|o| o.host.name() == "claude-code")
        || hostfile::all_wired(loc)
            .unwrap_or_default()
            .iter()
            .any(|(host, _, _)| *host == "claude-code");
    for o in outcomes {
        if matches!(o.host.name(), "cursor" | "copilot") && claude_wired && o.error.is_none() {
            notes.push(format!(
                "{} also runs the hooks in Claude Code's settings files (Cursor when third-party hooks are on), so one event may reach keryx-hooks through both wirings.",
                o.host.display_name()
            ));
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
    loc: &Locations,
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
                    output::line(&format!("{name}: {} already wired", shown(&f.path)));
                    continue;
                }
                (_, false) => "wired",
                (_, true) => "would wire",
            };
            let new = if f.change == Change::Created {
                "new file "
            } else {
                ""
            };
            let mut line = format!(
                "{name}: {verb} {} events in {new}{} (timeouts {})",
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
    for n in notes {
        output::line(&format!("note: {n}"));
    }
    if s.dry_run {
        output::line("dry run: nothing was written");
    }
}

fn report_json(
    s: &Settings,
    loc: &Locations,
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
            })
        })
        .collect();
    json!({
        "ok": outcomes.iter().all(|o| o.error.is_none()),
        "dryRun": s.dry_run,
        "scope": s.scope,
        "source": s.source,
        "snapshot": snapshot,
        "hosts": hosts,
        "notes": notes,
    })
}
