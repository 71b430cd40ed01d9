//! Which installed snapshot a host reads its user hooks from: the one its
//! wiring names. `run` by hand and `explain` read that one when no
//! `--snapshot` is given, so they see what the host runs, not the live
//! `$KERYX_HOME/hooks.json`. Hosts themselves always pass `--snapshot`, so
//! this is never on the path of an event a host fires.

use std::path::{Path, PathBuf};

use super::hostfile;
use super::manifest::{self, Wiring, WiringFormat, WiringScope};
use super::{classify, plugin, snapshot};
use crate::hosts::{Adapter, ConfigFormat};
use crate::paths::Locations;

/// A snapshot a host's wiring names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WiredSnapshot {
    pub key: String,
    pub scope: WiringScope,
    /// The host config file (or plugin) whose entry names it.
    pub path: PathBuf,
}

/// The snapshot `host`'s wiring of `host_event` names, found through the
/// wirings the snapshots' manifests record. When several are recorded, a
/// user-scope wiring comes before a project-scope one (which counts only
/// for the project at `loc`), then the one whose file path sorts first;
/// the first whose file still wires `host_event` wins, with the key that
/// file names (another install may have pointed it at a newer snapshot
/// since). A host recorded without a wiring (a manifest older than
/// wirings) is looked for in every config file it reads. `None` when
/// nothing wires the host, or for a host with nothing to wire (`keryx`).
pub fn wired_snapshot(loc: &Locations, host: &Adapter, host_event: &str) -> Option<WiredSnapshot> {
    if host.config_files().format == ConfigFormat::None {
        return None;
    }
    let here = loc.project_root_or_cwd();
    let mut wirings: Vec<Wiring> = Vec::new();
    let mut unrecorded = false;
    for key in snapshot::installed_keys(&loc.snapshot_root) {
        let Ok(m) = manifest::read_summary(&loc.snapshot_dir(&key)) else {
            continue;
        };
        let mut theirs = m
            .wirings
            .iter()
            .filter(|w| w.host == host.name())
            .peekable();
        if theirs.peek().is_none() && m.hosts.iter().any(|h| h == host.name()) {
            unrecorded = true;
        }
        wirings.extend(
            theirs
                .filter(|w| {
                    w.scope == WiringScope::User
                        || w.project.as_deref().is_some_and(|p| Path::new(p) == here)
                })
                .cloned(),
        );
    }
    wirings.sort_by(|a, b| (a.scope, &a.path).cmp(&(b.scope, &b.path)));
    wirings.dedup_by(|a, b| a.path == b.path);
    for w in &wirings {
        let path = Path::new(&w.path);
        let entries = match w.format {
            WiringFormat::Settings => hostfile::wired_events(host, path),
            WiringFormat::Plugin => plugin::wired_events(host, path),
        };
        if let Some(key) = key_for(entries.ok().as_deref(), host_event) {
            return Some(WiredSnapshot {
                key,
                scope: w.scope,
                path: path.to_path_buf(),
            });
        }
    }
    if !unrecorded {
        return None;
    }
    classify::host_config_entries(loc, host)
        .into_iter()
        .find_map(|file| {
            let key = key_for(file.entries.ok().as_deref(), host_event)?;
            Some(WiredSnapshot {
                key,
                scope: classify::wiring_scope(file.scope),
                path: file.path,
            })
        })
}

/// The snapshot key our entry for `host_event` names, if there is one.
fn key_for(entries: Option<&[classify::WiredEntry]>, host_event: &str) -> Option<String> {
    entries?
        .iter()
        .filter(|e| e.host_event == host_event)
        .find_map(|e| e.snapshot_key.clone())
}
