//! What a resync would change in what runs: the command hooks a hook
//! source defines that its installed snapshot does not run yet (new, or
//! changed in anything the trust digest covers), shown the way `trust`
//! shows a project's commands. `doctor --fix` and `install` show them before
//! they replace a snapshot, and `doctor --fix` asks (or needs `--yes`).

use std::path::Path;

use serde_json::Value;

use super::manifest::MANIFEST_FILE;
use crate::config::load::{self, Loaded};
use crate::config::model::{Registration, Scope};
use crate::escape::escape;
use crate::paths::Locations;
use crate::trust::{digest, display};

/// The command hooks a resync of `source` into `snapshot_dir` would start
/// running.
#[derive(Debug, Clone)]
pub struct CommandChanges {
    /// New or changed in the source, in file order.
    pub new: Vec<Registration>,
    /// Ids the snapshot runs that the source no longer defines.
    pub removed: Vec<String>,
}

/// What a resync would change, or `None` when it starts no command the
/// snapshot does not already run: there is no snapshot yet (the first
/// install is the review), the source does not load (a resync of it runs
/// nothing: its gates deny), or only files, descriptions or formatting
/// changed.
pub fn command_changes(
    source: &Path,
    snapshot_dir: &Path,
    loc: &Locations,
) -> Option<CommandChanges> {
    if !snapshot_dir.join(MANIFEST_FILE).is_file() {
        return None;
    }
    let live = load_hooks(&source.join("hooks.json"), loc);
    if !live.ok() {
        return None;
    }
    let snap = load_hooks(&snapshot_dir.join("hooks.json"), loc);
    let shape = |r: &Registration| -> Value { digest::canonical(&[r])["hooks"][0].clone() };
    let commands = |l: &Loaded| -> Vec<Registration> {
        l.registrations
            .iter()
            .filter(|r| r.scope == Scope::User && r.command().is_some())
            .cloned()
            .collect()
    };
    let (live, snap) = (commands(&live), commands(&snap));
    let known: Vec<Value> = snap.iter().map(shape).collect();
    let mut new: Vec<Registration> = live
        .iter()
        .filter(|r| !known.contains(&shape(r)))
        .cloned()
        .collect();
    if new.is_empty() {
        return None;
    }
    new.sort_by_key(|r| r.index);
    let mut removed: Vec<String> = snap
        .iter()
        .filter(|r| !live.iter().any(|l| l.id == r.id))
        .map(|r| r.id.clone())
        .collect();
    removed.dedup();
    Some(CommandChanges { new, removed })
}

fn load_hooks(file: &Path, loc: &Locations) -> Loaded {
    load::load(&load::Sources {
        user_file: file.to_path_buf(),
        project_file: None,
        project_root: None,
        cache_dir: Some(loc.config_cache_dir()),
    })
}

impl CommandChanges {
    /// The review: a header naming the source and snapshot, then each new
    /// or changed hook as `trust` shows one (every character that needed
    /// it escaped), then what goes away.
    pub fn render(&self, source: &Path, key: &str) -> String {
        let hooks: Vec<&Registration> = self.new.iter().collect();
        let (blocks, flagged) = display::command_blocks(&hooks, source);
        let n = self.new.len();
        let mut out = format!(
            "`{}` has {n} command {} that snapshot `{}` does not run yet (new or changed); a resync makes every session run {}, exactly as shown:\n",
            escape(&source.display().to_string()),
            if n == 1 { "hook" } else { "hooks" },
            escape(key),
            if n == 1 { "it" } else { "them" },
        );
        out.push_str(&blocks);
        out.push('\n');
        if !self.removed.is_empty() {
            out.push_str(&format!(
                "no longer in the source: {}\n",
                self.removed
                    .iter()
                    .map(|id| format!("`{}`", escape(id)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if flagged {
            out.push_str(
                "note: some text above contained control, escape, bidi-override, zero-width or other invisible characters; they are shown as \\xHH / \\uHHHH escapes, not as written\n",
            );
        }
        out
    }

    /// The ids of the new or changed hooks, each once, escaped.
    pub fn ids(&self) -> String {
        let mut ids: Vec<String> = Vec::new();
        for r in &self.new {
            let id = format!("`{}`", escape(&r.id));
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids.join(", ")
    }
}
