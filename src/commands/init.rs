//! `keryx-hooks init [--scope user|project] [--force]`: writes a starting
//! `hooks.json` with one example gate and one example observer, each with a
//! `description`, and their scripts beside it, so a first hook needs no
//! reading of the source. User scope: `$KERYX_HOME/hooks.json` and
//! `$KERYX_HOME/scripts/` (a relative argv in a user hook resolves beside the
//! file it was read from, so the installed snapshot's copy runs). Project
//! scope: `.metaproject/hooks.json` and `.metaproject/hooks/` (argv relative
//! to the project root; the hooks run once you `trust` them). Nothing is
//! overwritten without `--force`.

use crate::error::ExitStatus;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::cli::{InitArgs, ScopeArg};
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::output;

/// The example gate: denies a plain force push (exit 2, reason on stderr).
const GATE: &str = r#"#!/bin/sh
# Example gate for keryx-hooks (PreToolUse, Bash).
# keryx-hooks sends one JSON payload on stdin. Exit 2 denies the call with
# stderr as the reason; exit 0 with nothing on stdout lets it through.
payload=$(cat)
case "$payload" in
  *'git push --force"'* | *'git push --force '* | *'git push -f"'* | *'git push -f '*)
    echo "force pushes are denied by the example gate; use --force-with-lease" >&2
    exit 2
    ;;
esac
exit 0
"#;

/// The example observer: records which tool finished, never answers.
const OBSERVER: &str = r#"#!/bin/sh
# Example observer for keryx-hooks (PostToolUse, Write|Edit).
# An observer never decides: whatever it prints or exits with, the call
# stands. This one appends a line per edit to a log in the hook's cache
# directory (XDG_CACHE_HOME is writable inside the sandbox).
log="${XDG_CACHE_HOME:-$HOME/.cache}/keryx-example/edits.log"
mkdir -p "$(dirname "$log")"
payload=$(cat)
printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(printf '%s' "$payload" | head -c 200)" >> "$log"
exit 0
"#;

struct Layout {
    config: PathBuf,
    scripts: PathBuf,
    /// How the config's argv names a script directory.
    argv_dir: &'static str,
}

fn layout(scope: ScopeArg) -> Result<Layout, CommandError> {
    let loc = super::here();
    super::print_location_warnings(&loc);
    match scope {
        ScopeArg::User => Ok(Layout {
            config: loc.user_hooks_file(),
            scripts: loc.keryx_home.join("scripts"),
            argv_dir: "./scripts",
        }),
        ScopeArg::Project => {
            let root = loc.project_root.clone().ok_or_else(|| {
                CommandError::user("not in a project: no git toplevel or `.metaproject` above here")
                    .hint("run it inside your repository, or use `--scope user`")
            })?;
            let meta = root.join(".metaproject");
            Ok(Layout {
                config: meta.join("hooks.json"),
                scripts: meta.join("hooks"),
                argv_dir: "./.metaproject/hooks",
            })
        }
    }
}

fn config(argv_dir: &str) -> serde_json::Value {
    json!({
        "$schema": "https://keryx.dev/schema/hook-config.schema.json",
        "schemaVersion": "1.0.0",
        "hooks": {
            "PreToolUse": [{
                "id": "example-no-force-push",
                "description": "Example gate: denies a Bash `git push --force` (or `-f`) and says to use --force-with-lease; every other call passes. Edit or replace example-gate.sh.",
                "matcher": "Bash",
                "class": "gate",
                "command": {"argv": [format!("{argv_dir}/example-gate.sh")]},
                "timeoutMs": 3000
            }],
            "PostToolUse": [{
                "id": "example-edit-log",
                "description": "Example observer: appends a line per Write or Edit to keryx-example/edits.log in the hook's cache directory; it never blocks anything.",
                "matcher": "Write|Edit",
                "class": "observe",
                "command": {"argv": [format!("{argv_dir}/example-observer.sh")]},
                "timeoutMs": 3000
            }]
        }
    })
}

pub fn run(args: &InitArgs) -> CmdResult {
    let l = layout(args.scope)?;
    let gate = l.scripts.join("example-gate.sh");
    let observer = l.scripts.join("example-observer.sh");
    let examples = config(l.argv_dir);
    let existing = existing_config(&l.config)?;

    // A script of the person's own under an example's name is theirs.
    let scripts = [(&gate, GATE), (&observer, OBSERVER)];
    let differing: Vec<&PathBuf> = scripts
        .iter()
        .filter(|(p, body)| p.exists() && std::fs::read(p).ok().as_deref() != Some(body.as_bytes()))
        .map(|(p, _)| *p)
        .collect();
    if !args.force && !differing.is_empty() {
        return Err(CommandError::user(format!(
            "{} already exist{} with other content; nothing was written",
            list(&differing),
            if differing.len() == 1 { "s" } else { "" }
        ))
        .hint("`keryx-hooks init --force` replaces them (keeping a `.bak` copy of each)"));
    }

    let mut wrote: Vec<String> = Vec::new();
    match (&existing, args.force) {
        // Missing, or as empty as `install` creates it: the examples are the file.
        (Existing::Absent, _) | (Existing::Empty, _) => {
            write(&l.config, &pretty(&examples), false)?;
            wrote.push(format!("wrote {}", shown(&l.config)));
        }
        (Existing::Hooks(ids), false) => {
            let adding = missing_examples(&examples, ids);
            if !adding.is_empty() {
                let loc = super::here();
                super::shared::hooks_file::add_registrations(
                    &loc,
                    scope(args.scope),
                    &l.config,
                    &adding,
                )?;
                wrote.push(format!(
                    "added {} to {}, beside the {} hook{} already there",
                    adding
                        .iter()
                        .map(|(e, r)| format!("`{}` ({e})", r["id"].as_str().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join(" and "),
                    shown(&l.config),
                    ids.len(),
                    if ids.len() == 1 { "" } else { "s" }
                ));
            }
        }
        (Existing::Unloadable(why), false) => {
            return Err(CommandError::config(format!(
                "{} does not load, so the examples cannot be added to it; nothing was written",
                shown(&l.config)
            ))
            .cause(why)
            .hint("fix it (`keryx-hooks validate`), or `keryx-hooks init --force` to replace it, keeping a `.bak` copy"));
        }
        (existing, true) => {
            let backup = backup(&l.config)?;
            write(&l.config, &pretty(&examples), false)?;
            wrote.push(format!(
                "replaced {} (the old file is {}){}",
                shown(&l.config),
                shown(&backup),
                match existing {
                    Existing::Hooks(ids) if !dropped(&examples, ids).is_empty() => format!(
                        "; it no longer has {}",
                        dropped(&examples, ids)
                            .iter()
                            .map(|i| format!("`{}`", escape(i)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Existing::Unloadable(_) => "; the old file did not load".to_owned(),
                    _ => String::new(),
                }
            ));
        }
    }
    for (path, body) in scripts {
        if path.exists() && std::fs::read(path).ok().as_deref() == Some(body.as_bytes()) {
            continue;
        }
        if path.exists() {
            let b = backup(path)?;
            wrote.push(format!("kept your {} as {}", shown(path), shown(&b)));
        }
        write(path, body, true)?;
        wrote.push(format!("wrote {}", shown(path)));
    }
    if wrote.is_empty() {
        output::line(&format!(
            "{} already has the example hooks; nothing was written",
            shown(&l.config)
        ));
    }
    for w in &wrote {
        output::line(w);
    }
    output::line("next: `keryx-hooks validate`, then `keryx-hooks test example-no-force-push`");
    if args.scope == ScopeArg::Project {
        output::line("project hooks run once you review them with `keryx-hooks trust`");
    } else if let Some(dir) = l.config.parent().filter(|_| snapshot_installed(&l.config)) {
        output::line(&resync_examples(dir, &examples));
    } else {
        output::line(
            "`keryx-hooks install <host>` snapshots them and wires keryx-hooks into a host",
        );
    }
    Ok(ExitStatus::Success)
}

/// What is at the config path already.
enum Existing {
    Absent,
    /// Loads and registers nothing (what `install` creates on a fresh machine).
    Empty,
    /// Loads; the ids it registers.
    Hooks(Vec<String>),
    /// Present but not a hooks file this runtime reads; why.
    Unloadable(String),
}

fn existing_config(path: &Path) -> Result<Existing, CommandError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Absent),
        Err(e) => {
            return Err(CommandError::user(format!("cannot read {}", shown(path))).cause(e));
        }
    };
    let doc = match crate::config::load::parse_config_bytes(path, &bytes) {
        Ok((_, doc)) => doc,
        Err(d) => return Ok(Existing::Unloadable(d.to_string())),
    };
    let Some(hooks) = doc.get("hooks").and_then(serde_json::Value::as_object) else {
        return Ok(Existing::Unloadable("it has no `hooks` object".to_owned()));
    };
    let ids: Vec<String> = hooks
        .values()
        .filter_map(serde_json::Value::as_array)
        .flatten()
        .filter_map(|e| e.get("id").and_then(serde_json::Value::as_str))
        .map(str::to_owned)
        .collect();
    // Every event's list empty (an entry without an id is still an entry).
    let empty = hooks
        .values()
        .all(|v| v.as_array().is_some_and(Vec::is_empty));
    Ok(if empty {
        Existing::Empty
    } else {
        Existing::Hooks(ids)
    })
}

/// The example registrations whose ids the file does not have yet.
fn missing_examples(
    examples: &serde_json::Value,
    ids: &[String],
) -> Vec<(&'static str, serde_json::Value)> {
    let mut out = Vec::new();
    for event in ["PreToolUse", "PostToolUse"] {
        for r in examples["hooks"][event].as_array().into_iter().flatten() {
            if !ids.iter().any(|i| Some(i.as_str()) == r["id"].as_str()) {
                out.push((event, r.clone()));
            }
        }
    }
    out
}

/// The ids in `ids` that are not examples: what `--force` drops.
fn dropped<'a>(examples: &serde_json::Value, ids: &'a [String]) -> Vec<&'a String> {
    let kept = missing_examples(examples, &[]);
    ids.iter()
        .filter(|i| {
            !kept
                .iter()
                .any(|(_, r)| r["id"].as_str() == Some(i.as_str()))
        })
        .collect()
}

/// Copies `path` to `<path>.bak` (`.bak.1`, `.bak.2`… when taken) and
/// returns the copy.
fn backup(path: &Path) -> Result<PathBuf, CommandError> {
    let mut n = 0;
    let target = loop {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(if n == 0 {
            ".bak".to_owned()
        } else {
            format!(".bak.{n}")
        });
        let t = path.with_file_name(name);
        if std::fs::symlink_metadata(&t).is_err() {
            break t;
        }
        n += 1;
    };
    std::fs::copy(path, &target).map_err(|e| {
        CommandError::user(format!(
            "cannot keep a copy of {} as {}",
            shown(path),
            shown(&target)
        ))
        .cause(e)
    })?;
    Ok(target)
}

/// Copies the source into the snapshot the hosts run when the only
/// commands that would start running are the examples just written (what
/// the person asked for by running `init`); anything else new in the
/// source is left for `doctor --fix`, which shows it first. Returns the
/// line saying which.
fn resync_examples(source: &Path, examples: &serde_json::Value) -> String {
    use crate::install::{preflight, resync, snapshot};
    let loc = super::here();
    let key = snapshot::snapshot_key(source);
    let example_ids: Vec<String> = missing_examples(examples, &[])
        .iter()
        .filter_map(|(_, r)| r["id"].as_str().map(str::to_owned))
        .collect();
    let later = "your agents run the installed snapshot: `keryx-hooks doctor --fix` shows what is new and copies it in";
    if let Some(changes) = resync::command_changes(source, &loc.snapshot_dir(&key), &loc)
        && !changes.new.iter().all(|r| example_ids.contains(&r.id))
    {
        return later.to_owned();
    }
    if !preflight::check(source, &loc).is_empty() {
        return later.to_owned();
    }
    match snapshot::sync(source, &loc.snapshot_root, &[], false) {
        Ok(_) => format!(
            "copied into snapshot `{}`, which your agents run: the examples are live",
            escape(&key)
        ),
        Err(e) => format!("{later} (copying now failed: {})", escape(&e.to_string())),
    }
}

/// Whether an installed snapshot copies the directory holding `config`.
fn snapshot_installed(config: &Path) -> bool {
    let loc = super::here();
    let Some(dir) = config.parent() else {
        return false;
    };
    let key = crate::paths::snapshot_key(dir);
    loc.snapshot_dir(&key).is_dir()
}

fn scope(s: ScopeArg) -> crate::install::hostfile::Scope {
    match s {
        ScopeArg::User => crate::install::hostfile::Scope::User,
        ScopeArg::Project => crate::install::hostfile::Scope::Project,
    }
}

fn pretty(v: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    text.push('\n');
    text
}

fn shown(p: &Path) -> String {
    format!("`{}`", escape(&p.display().to_string()))
}

fn list(paths: &[&PathBuf]) -> String {
    paths
        .iter()
        .map(|p| shown(p))
        .collect::<Vec<_>>()
        .join(", ")
}

fn write(path: &Path, text: &str, executable: bool) -> Result<(), CommandError> {
    use std::os::unix::fs::PermissionsExt;
    let shown = escape(&path.display().to_string());
    let fail = |e: std::io::Error| CommandError::user(format!("cannot write `{shown}`")).cause(e);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::write(path, text).map_err(fail)?;
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(fail)?;
    Ok(())
}
