//! `keryx-hooks validate [--json] [--ci]`: checks the user and project hook
//! files. Exit 1 on any load error or a user hook's script missing from the
//! user hooks' directory; an argv[0] that does not resolve otherwise is a
//! warning, never an error.

use crate::error::ExitStatus;
use std::path::Path;

use serde_json::json;

use crate::cli::ValidateArgs;
use crate::config::diagnostic::Diagnostic;
use crate::config::model::{Handler, Registration, Scope};
use crate::config::{self, load};
use crate::error::CmdResult;
use crate::escape::escape;
use crate::output;

pub fn run(args: &ValidateArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let sources = config::sources(&loc, None);
    let mut loaded = load::load(&sources);
    let missing = load::missing_user_scripts(&loaded.registrations);
    loaded.diagnostics.extend(missing);
    let moved =
        load::missing_imported_scripts(&loaded.registrations, loc.project_root_or_cwd(), &loc.home);
    loaded.diagnostics.extend(moved);
    for r in loaded
        .registrations
        .iter()
        .filter(|r| r.scope != Scope::Builtin)
    {
        if let Some(d) = unresolved_argv0(r, loc.project_root_or_cwd()) {
            loaded.diagnostics.push(d);
        }
    }
    // A rule that fires on everyday work is a rule people switch off.
    let guard = crate::rules::call::places(&loc);
    let packs = crate::rules::packs::rules();
    for r in packs.into_iter().chain(&loaded.rules) {
        if let Some(cmd) = crate::rules::first_ordinary_match(r, &guard) {
            let mut d = Diagnostic::warning(
                "rule-matches-ordinary-command",
                format!(
                    "rule `{}` matches the ordinary command `{}`; it would {} everyday work",
                    escape(&r.id),
                    escape(&cmd),
                    r.decision.as_str()
                ),
            );
            if let Some(p) = &r.source {
                d = d.at(p);
            }
            loaded.diagnostics.push(d);
        }
    }
    let ok = loaded.ok();
    if args.json {
        output::json(&json!({
            "ok": ok,
            "files": {
                "user": sources.user_file,
                "project": sources.project_file,
            },
            "diagnostics": loaded.diagnostics,
        }));
    } else {
        for d in &loaded.diagnostics {
            output::line(&d.to_string());
        }
        if ok {
            let checked: Vec<String> = loaded
                .files
                .iter()
                .map(|f| format!("`{}`", escape(&f.path.display().to_string())))
                .collect();
            if checked.is_empty() {
                output::line("ok: no hook files present; only the built-ins are active");
            } else {
                output::line(&format!("ok: {} valid", checked.join(" and ")));
            }
        }
    }
    Ok(if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// Best effort, no execution: does argv[0] name something runnable?
fn unresolved_argv0(r: &Registration, base: &Path) -> Option<Diagnostic> {
    let Handler::Command(c) = &r.handler else {
        return None;
    };
    let argv0 = c.argv.first()?;
    if r.user_scripts().iter().any(|(i, _)| *i == 0) {
        // Checked as a user script, in the user hooks' directory.
        return None;
    }
    let resolves = if argv0.contains('/') {
        let dir = c
            .cwd
            .as_deref()
            .map_or_else(|| base.to_path_buf(), |d| base.join(d));
        is_executable(&dir.join(argv0))
    } else {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| is_executable(&d.join(argv0))))
    };
    (!resolves).then(|| {
        let mut d = Diagnostic::warning(
            "hook-argv0-unresolved",
            format!(
                "`{}`: argv[0] `{argv0}` does not resolve to an executable file",
                r.id
            ),
        );
        if let Some(src) = &r.source {
            d = d.at(src.clone());
        }
        d
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
