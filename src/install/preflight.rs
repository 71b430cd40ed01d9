//! The checks a hook source must pass before it becomes the snapshot every
//! session runs: its `hooks.json` loads, every script a user hook names is
//! beside it, and a sandbox launcher works here when one of its hooks runs
//! sandboxed. `install`, `doctor --fix` and `import` all ask this one
//! function, so no path copies in a source whose gates would deny every
//! call; the last good snapshot keeps running instead.

use crate::settings::Here;
use std::path::Path;

use crate::config::load::{self, Loaded};
use crate::config::model::{Registration, RunsIn};
use crate::escape::escape;
use crate::runner::LauncherError;

/// One reason a source may not be snapshotted, and what fixes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub what: String,
    pub fix: String,
}

/// The bubblewrap hint, worded once for every command that needs it.
pub const SANDBOX_FIX: &str = "install bubblewrap (`sudo apt-get install bubblewrap`, `sudo dnf install bubblewrap`, `sudo pacman -S bubblewrap`), or mark the hooks that need no confinement `\"runsIn\": \"unsandboxed\"`";

/// Every problem with `source` as a snapshot; empty when it may be copied.
pub fn check(source: &Path, loc: &Here) -> Vec<Problem> {
    let file = source.join("hooks.json");
    let loaded = load::load(&load::Sources {
        user_file: file.clone(),
        project_file: None,
        project_root: None,
        cache_dir: Some(loc.config_cache_dir()),
    });
    let mut out = config_problems(&loaded, &file);
    if !out.is_empty() {
        return out;
    }
    out.extend(
        load::missing_user_scripts(&loaded.registrations)
            .iter()
            .map(|d| Problem {
                what: escape(&d.to_string()),
                fix: format!(
                    "put the script beside `{}` (or fix its path in argv)",
                    escape(&file.display().to_string())
                ),
            }),
    );
    out.extend(sandbox_problem(
        loc,
        &needing_sandbox(&loaded.registrations, loc),
    ));
    out
}

fn config_problems(loaded: &Loaded, file: &Path) -> Vec<Problem> {
    loaded
        .errors()
        .map(|d| Problem {
            what: escape(&d.to_string()),
            fix: format!(
                "fix `{}` (`keryx-hooks validate` lists every error)",
                escape(&file.display().to_string())
            ),
        })
        .collect()
}

/// The ids of the enabled command hooks in `regs` that run sandboxed under
/// the profile `run` uses when a host names none.
pub fn needing_sandbox(regs: &[Registration], loc: &Here) -> Vec<String> {
    let profile = loc.settings().profile();
    let mut ids: Vec<String> = regs
        .iter()
        .filter(|r| r.enabled && r.command().is_some())
        .filter(|r| r.effective_runs_in(profile) == RunsIn::Sandbox)
        .map(|r| r.id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Whether a sandbox launcher works here, or why not.
pub fn launcher_works(loc: &Here) -> Result<(), LauncherError> {
    let search = crate::runner::LauncherSearch {
        pin: loc.settings().launcher.as_ref().map(Option::as_deref),
        project: loc.project_root.as_deref(),
        cwd: Some(&loc.cwd),
    };
    crate::runner::find_launcher(&search).map(|_| ())
}

/// The problem when `ids` need a sandbox and none works here.
pub fn sandbox_problem(loc: &Here, ids: &[String]) -> Option<Problem> {
    if ids.is_empty() {
        return None;
    }
    let why = launcher_works(loc).err()?;
    Some(Problem {
        what: format!(
            "{} run{} sandboxed and no sandbox launcher works here ({}); {} would deny every call",
            ids.iter()
                .map(|i| format!("`{}`", escape(i)))
                .collect::<Vec<_>>()
                .join(", "),
            if ids.len() == 1 { "s" } else { "" },
            escape(&why.to_string()),
            if ids.len() == 1 { "it" } else { "they" },
        ),
        fix: SANDBOX_FIX.to_owned(),
    })
}

/// The problems as lines: each `what`, then each distinct fix as a hint.
pub fn render(problems: &[Problem]) -> (Vec<String>, Vec<String>) {
    let whats = problems.iter().map(|p| p.what.clone()).collect();
    let mut fixes: Vec<String> = Vec::new();
    for p in problems {
        if !fixes.contains(&p.fix) {
            fixes.push(p.fix.clone());
        }
    }
    (whats, fixes)
}
