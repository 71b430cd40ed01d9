//! What decides enforcement, watched between a session's events: the user
//! hooks file, `runtime.toml`, the trust store, every host config file the
//! hosts read and the snapshot's hooks file. A change made outside
//! keryx-hooks is told to the person on the next PostToolUse. Cheap: one
//! `stat` per file (size, mtime, device and inode), never a read. A change
//! keryx-hooks' own commands make is acknowledged by them
//! ([`acknowledge`]), so it is not told.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::hostfile::{self, Scope};
use crate::escape::escape;
use crate::paths::Locations;

/// The session's record of the files as the last event saw them.
const SESSION_FILE: &str = "enforcement-files.json";
/// The files as keryx-hooks' own commands last left them, in the state dir.
/// In a directory of its own under the state directory, so that a write
/// killed before its rename leaves a temp file only there, swept by the
/// next write ([`write`]).
const ACK_FILE: &str = "enforcement-files/ack.json";

/// One file as `stat` sees it; `None` fields for a file that is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    len: u64,
    mtime_ns: i128,
    dev: u64,
    ino: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        len: m.len(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        dev: m.dev(),
        ino: m.ino(),
    })
}

type Stamps = BTreeMap<PathBuf, Option<Stamp>>;

/// The files watched from `loc`, with `snapshot_file` (the hooks file of
/// the snapshot this host runs).
fn watched(loc: &Locations, snapshot_file: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![
        loc.user_hooks_file(),
        loc.runtime_settings_file(),
        loc.trust_store(),
    ];
    for host in hostfile::wirable_hosts() {
        for scope in [Scope::User, Scope::Project] {
            out.extend(hostfile::config_files(host, scope, loc));
        }
    }
    out.extend(snapshot_file.map(Path::to_path_buf));
    out.sort();
    out.dedup();
    out
}

fn stamps(paths: &[PathBuf]) -> Stamps {
    paths.iter().map(|p| (p.clone(), stamp(p))).collect()
}

fn read(path: &Path) -> Option<Stamps> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn write(path: &Path, stamps: &Stamps) {
    // A temp file left by a write that was killed before its rename (only
    // this module writes in the ack directory; a session's own directory is
    // written under the session lock).
    if path.ends_with(ACK_FILE)
        && let Some(dir) = path.parent()
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        for e in entries.flatten() {
            if e.file_name()
                .to_string_lossy()
                .starts_with(crate::paths::CACHE_TEMP_PREFIX)
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let written = serde_json::to_vec(stamps)
        .map_err(std::io::Error::other)
        .and_then(|b| crate::paths::write_cache_file(path, &b));
    if let Err(e) = written {
        tracing::warn!("could not record `{}`: {e}", path.display());
    }
}

/// Records the watched files as they are now as keryx-hooks' own doing:
/// run after a command that changes them (install, uninstall, trust,
/// untrust, enable, disable, init, import, doctor --fix), so the sessions
/// running do not tell the person of a change they made themselves.
pub fn acknowledge(loc: &Locations) {
    let mut paths = watched(loc, None);
    // Every installed snapshot's hooks file: any may be the one a host runs.
    if let Ok(dirs) = std::fs::read_dir(&loc.snapshot_root) {
        paths.extend(dirs.flatten().map(|d| d.path().join("hooks.json")));
    }
    let mut ack = read(&loc.state_dir.join(ACK_FILE)).unwrap_or_default();
    ack.extend(stamps(&paths));
    write(&loc.state_dir.join(ACK_FILE), &ack);
}

/// The watched files changed since `session_dir`'s last look that
/// keryx-hooks' own commands did not change, and records what they are now.
/// `tell` is false for an event that only takes the first look
/// (SessionStart): the session's baseline.
pub fn changed_outside(
    loc: &Locations,
    session_dir: &Path,
    snapshot_file: Option<&Path>,
    tell: bool,
) -> Vec<PathBuf> {
    let now = stamps(&watched(loc, snapshot_file));
    let record = session_dir.join(SESSION_FILE);
    let before = read(&record);
    let mut out = Vec::new();
    if let (Some(before), true) = (&before, tell) {
        let ack = read(&loc.state_dir.join(ACK_FILE)).unwrap_or_default();
        for (path, stamp) in &now {
            let Some(was) = before.get(path) else {
                continue; // not watched at the last look (another project)
            };
            if was != stamp && ack.get(path) != Some(stamp) {
                out.push(path.clone());
            }
        }
    }
    if before.as_ref() != Some(&now) {
        write(&record, &now);
    }
    out
}

/// The notice for the person naming `changed`.
pub fn notice(changed: &[PathBuf]) -> Option<String> {
    let names: Vec<String> = changed
        .iter()
        .map(|p| format!("`{}`", escape(&p.display().to_string())))
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "keryx-hooks: {} changed outside keryx-hooks during this session; {} what decides which hooks run and what they enforce. If you did not make this change, check it (`keryx-hooks status`, `keryx-hooks doctor`)",
            names.join(", "),
            if names.len() == 1 { "it is" } else { "they are" },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_outside_keryx_is_found_and_one_it_made_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        let mut loc = Locations::resolve(tmp.path());
        loc.home = home.clone();
        loc.keryx_home = home.join(".keryx");
        loc.data_dir = home.join("data");
        loc.state_dir = home.join("state");
        loc.snapshot_root = home.join("snapshots");
        loc.project_root = None;
        let settings = home.join(".claude/settings.json");
        std::fs::write(&settings, "{}").unwrap();
        let session = tmp.path().join("session");
        // The first look is the baseline, told or not.
        assert!(changed_outside(&loc, &session, None, false).is_empty());
        assert!(changed_outside(&loc, &session, None, true).is_empty());

        std::fs::write(&settings, "{\"disableAllHooks\": true}").unwrap();
        assert_eq!(
            changed_outside(&loc, &session, None, true),
            std::slice::from_ref(&settings)
        );
        // Told once: the record now has it.
        assert!(changed_outside(&loc, &session, None, true).is_empty());

        // The same size, written again by keryx-hooks' own command.
        std::fs::write(&settings, "{\"disableAllHooks\": fals}").unwrap();
        acknowledge(&loc);
        assert!(changed_outside(&loc, &session, None, true).is_empty());

        // Removed, or replaced by another file under the same name.
        std::fs::remove_file(&settings).unwrap();
        assert_eq!(
            changed_outside(&loc, &session, None, true),
            std::slice::from_ref(&settings)
        );
        let hooks = loc.user_hooks_file();
        std::fs::create_dir_all(hooks.parent().unwrap()).unwrap();
        std::fs::write(&hooks, "{}").unwrap();
        assert_eq!(changed_outside(&loc, &session, None, true), [hooks]);
        assert!(
            notice(&[settings])
                .unwrap()
                .contains(".claude/settings.json")
        );
    }
}
