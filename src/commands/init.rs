//! `keryx-hooks init [--scope user|project] [--force]`: writes a starting
//! `hooks.json` with one example gate and one example observer, each with a
//! `description`, and their scripts beside it, so a first hook needs no
//! reading of the source. User scope: `$KERYX_HOME/hooks.json` and
//! `$KERYX_HOME/scripts/` (a relative argv in a user hook resolves beside the
//! file it was read from, so the installed snapshot's copy runs). Project
//! scope: `.metaproject/hooks.json` and `.metaproject/hooks/` (argv relative
//! to the project root; the hooks run once you `trust` them). Nothing is
//! overwritten without `--force`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    if !args.force {
        let present: Vec<String> = [&l.config, &gate, &observer]
            .into_iter()
            .filter(|p| p.exists())
            .map(|p| format!("`{}`", escape(&p.display().to_string())))
            .collect();
        if !present.is_empty() {
            return Err(CommandError::user(format!(
                "{} already exist{}; nothing was written",
                present.join(", "),
                if present.len() == 1 { "s" } else { "" }
            ))
            .hint("`keryx-hooks init --force` replaces them"));
        }
    }
    let mut text = serde_json::to_string_pretty(&config(l.argv_dir)).unwrap_or_default();
    text.push('\n');
    write(&l.config, &text, false)?;
    write(&gate, GATE, true)?;
    write(&observer, OBSERVER, true)?;
    for p in [&l.config, &gate, &observer] {
        output::line(&format!("wrote {}", escape(&p.display().to_string())));
    }
    output::line("next: `keryx-hooks validate`, then `keryx-hooks test example-no-force-push`");
    if args.scope == ScopeArg::Project {
        output::line("project hooks run once you review them with `keryx-hooks trust`");
    } else {
        output::line(
            "`keryx-hooks install <host>` snapshots them and wires keryx-hooks into a host",
        );
    }
    Ok(ExitCode::SUCCESS)
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
