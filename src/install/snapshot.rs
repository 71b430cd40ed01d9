//! Snapshot sync (ARCHITECTURE §6): the hook source is copied into
//! `<root>/<key>.tmp-*`, fsynced, and swapped into `<root>/<key>` in one
//! rename, so a running session reads either the old snapshot or the new one,
//! never a mix, and a `git pull` in the source changes nothing until a sync.
//! Deletes are bounded: only directories inside the root that carry our
//! manifest, or leftovers named after our own temp scheme.

pub use crate::paths::snapshot_key;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::SnapshotError;
use super::hash::{self, Listing};
use super::manifest::{self, FileEntry, MANIFEST_FILE, Manifest, Wiring};
use crate::paths;

/// What [`sync`] did (or, with `dry_run`, would do).
#[derive(Debug, Clone)]
pub struct SyncReport {
    pub key: String,
    /// `<root>/<key>`.
    pub dir: PathBuf,
    pub source_hash: String,
    /// Whether the snapshot was (or would be) replaced.
    pub changed: bool,
    /// Entries of the source left out of the snapshot, one sentence each.
    pub warnings: Vec<String>,
}

/// Length of the random part of our temp names; leftovers are recognised by
/// exactly this shape, which no real key can have (keys end in `-<hex>`).
const RAND_LEN: usize = 16;
const LEFTOVER_KINDS: [&str; 3] = [".tmp-", ".old-", ".del-"];

/// Copies the hook source into its snapshot under `snapshot_root` and
/// records `hosts` (added to those already recorded) in the manifest.
///
/// Nothing is written when the snapshot already holds exactly this source
/// (`changed: false`). Any failure, a full disk included, leaves the
/// installed snapshot as it was and removes the temp copy.
pub fn sync(
    source: &Path,
    snapshot_root: &Path,
    hosts: &[String],
    dry_run: bool,
) -> Result<SyncReport, SnapshotError> {
    let listing = hash::list_source(source)?;
    let source = listing.root.clone();
    let source_str = source
        .to_str()
        .ok_or_else(|| SnapshotError::SourceNotUtf8 {
            path: source.clone(),
        })?
        .to_owned();
    let root = paths::absolute(snapshot_root);
    let root_real = paths::real_path(&root);
    if root_real.starts_with(&source) {
        return Err(SnapshotError::RootInSource {
            root,
            hook_source: source,
        });
    }
    if source.starts_with(&root_real) {
        return Err(SnapshotError::SourceInRoot {
            hook_source: source,
            root,
        });
    }
    if listing.files.iter().any(|f| f.rel == MANIFEST_FILE) {
        return Err(SnapshotError::OwnManifest);
    }
    let key = snapshot_key(&source);
    let dir = root.join(&key);
    let mut report = SyncReport {
        key: key.clone(),
        dir: dir.clone(),
        source_hash: String::new(),
        changed: true,
        warnings: listing.warnings.clone(),
    };

    if dry_run {
        let mut digests = Vec::new();
        for f in &listing.files {
            digests.push(hash::digest_bytes(&hash::read_capped(
                &f.path(&listing.root),
                &f.rel,
            )?));
        }
        report.source_hash = hash::combine(
            listing
                .files
                .iter()
                .zip(&digests)
                .map(|(f, d)| (f.rel.as_str(), f.executable, d.as_str())),
        );
        report.changed = match manifest::read(&dir) {
            Ok(m) => {
                let (path, version) = binary();
                m.source_hash != report.source_hash
                    || !hosts.iter().all(|h| m.hosts.contains(h))
                    || m.binary_path != path
                    || m.binary_version != version
                    || manifest::verify(&dir, &m).is_err()
            }
            Err(_) => true,
        };
        return Ok(report);
    }

    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&root)
        .map_err(|error| SnapshotError::CreateRoot {
            root: root.clone(),
            error,
        })?;
    let _lock = lock_dir(&root)?;
    clean_leftovers(&root, &key, true);

    let existing = match std::fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(SnapshotError::Read { path: dir, error }),
        Ok(m) if m.is_dir() => {
            Some(
                manifest::read(&dir).map_err(|e| SnapshotError::NotASnapshot {
                    dir: dir.clone(),
                    error: Box::new(e),
                })?,
            )
        }
        Ok(_) => return Err(SnapshotError::NotADirectory { dir }),
    };
    let mut all_hosts: Vec<String> = existing
        .as_ref()
        .map(|m| m.hosts.clone())
        .unwrap_or_default();
    all_hosts.extend(hosts.iter().cloned());
    all_hosts.sort();
    all_hosts.dedup();

    // A TempDir removes itself on every early return below, so a failed
    // build (ENOSPC included) leaves no temp copy behind.
    let tmp = tempfile::Builder::new()
        .prefix(&format!("{key}.tmp-"))
        .rand_bytes(RAND_LEN)
        .tempdir_in(&root)
        .map_err(|e| write_error(&root, "the temp directory", e))?;
    let files = build(&listing, tmp.path()).map_err(|e| untouched(&dir, e))?;
    let (binary_path, binary_version) = binary();
    let m = Manifest {
        schema_version: manifest::SCHEMA_VERSION.to_owned(),
        source_path: source_str,
        source_hash: String::new(),
        files,
        created_at: manifest::now_rfc3339(),
        binary_path,
        binary_version,
        hosts: all_hosts,
        wirings: existing
            .as_ref()
            .map(|m| m.wirings.clone())
            .unwrap_or_default(),
    };
    let m = Manifest {
        source_hash: m.files_hash(),
        ..m
    };
    report.source_hash = m.source_hash.clone();
    if let Some(old) = &existing
        && old.same_snapshot(&m)
        && manifest::verify(&dir, old).is_ok()
    {
        report.changed = false;
        return Ok(report);
    }
    manifest::write(tmp.path(), &m).map_err(|e| untouched(&dir, e))?;
    seal(&listing, tmp.path()).map_err(|e| untouched(&dir, e))?;
    let tmp = tmp.keep();
    if let Err(e) = swap(&tmp, &dir, &root, &key, existing.is_some()) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(untouched(&dir, e));
    }
    let _ = File::open(&root).and_then(|d| d.sync_all());
    Ok(report)
}

/// Replaces the recorded hosts of the snapshot `key` (for `uninstall`,
/// which must drop a host; [`sync`] only ever adds). Wirings of hosts no
/// longer listed are dropped with them.
pub fn set_hosts(snapshot_root: &Path, key: &str, hosts: &[String]) -> Result<(), SnapshotError> {
    update_wirings(snapshot_root, key, |recorded, wirings| {
        *recorded = hosts.to_vec();
        wirings.retain(|w| hosts.contains(&w.host));
    })
    .map(|_| ())
}

/// Changes what the manifest of snapshot `key` records about its hosts:
/// `edit` gets the host list and the wirings; afterwards the host list is
/// sorted, de-duplicated and holds every wired host, and the wirings are
/// sorted and de-duplicated. The manifest is rewritten (atomically, under
/// the root's lock) only when that changed anything; the snapshot's files
/// are never touched. Returns the manifest as it is afterwards.
pub fn update_wirings(
    snapshot_root: &Path,
    key: &str,
    edit: impl FnOnce(&mut Vec<String>, &mut Vec<Wiring>),
) -> Result<Manifest, SnapshotError> {
    let dir = snapshot_root.join(checked_key(key)?);
    let _lock = lock_dir(snapshot_root)?;
    let mut m = manifest::read(&dir)?;
    let before = (m.hosts.clone(), m.wirings.clone());
    edit(&mut m.hosts, &mut m.wirings);
    m.wirings.sort();
    m.wirings.dedup();
    m.hosts.extend(m.wirings.iter().map(|w| w.host.clone()));
    m.hosts.sort();
    m.hosts.dedup();
    if (&m.hosts, &m.wirings) != (&before.0, &before.1) {
        manifest::write(&dir, &m)?;
    }
    Ok(m)
}

/// Deletes the snapshot `key`, but only a directory directly inside the root
/// that carries our manifest; anything else is refused and left alone.
/// `Ok(false)` when there was nothing to delete.
pub fn remove_snapshot(snapshot_root: &Path, key: &str) -> Result<bool, SnapshotError> {
    let key = checked_key(key)?;
    if !snapshot_root.is_dir() {
        return Ok(false);
    }
    let dir = snapshot_root.join(key);
    let _lock = lock_dir(snapshot_root)?;
    match std::fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            clean_leftovers(snapshot_root, key, false);
            return Ok(false);
        }
        Err(error) => return Err(SnapshotError::Read { path: dir, error }),
        Ok(m) if !m.is_dir() => return Err(SnapshotError::NotASnapshotDir { dir }),
        Ok(_) => {}
    }
    manifest::read(&dir).map_err(|e| SnapshotError::NoManifest {
        dir: dir.clone(),
        error: Box::new(e),
    })?;
    // Rename first so the key disappears at once, then delete at leisure; a
    // `.del-` leftover is never restored.
    let gone = reserve(snapshot_root, key, ".del-")?;
    std::fs::rename(&dir, &gone).map_err(|error| SnapshotError::Remove {
        path: dir.clone(),
        error,
    })?;
    let _ = std::fs::remove_dir_all(&gone);
    clean_leftovers(snapshot_root, key, false);
    Ok(true)
}

/// One installed snapshot found under the root.
#[derive(Debug)]
pub struct Installed {
    pub key: String,
    pub dir: PathBuf,
    pub manifest: Result<Manifest, SnapshotError>,
}

/// Every snapshot directory under `snapshot_root`, sorted by key; temp
/// leftovers are not snapshots and are skipped.
pub fn installed(snapshot_root: &Path) -> Vec<Installed> {
    installed_keys(snapshot_root)
        .into_iter()
        .map(|key| {
            let dir = snapshot_root.join(&key);
            Installed {
                manifest: manifest::read(&dir),
                key,
                dir,
            }
        })
        .collect()
}

/// The key of every snapshot directory under `snapshot_root`, sorted;
/// temp leftovers are not snapshots and are skipped.
pub fn installed_keys(snapshot_root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(snapshot_root) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| leftover_of(name).is_none())
        .collect();
    out.sort();
    out
}

/// Temp, old and half-deleted directories left by killed syncs under the
/// root (for `doctor`).
pub fn leftovers(snapshot_root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(snapshot_root) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| leftover_of(n).is_some())
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Clears what killed runs left under the root, for every key (for
/// `doctor --fix`); returns how many could not be removed.
pub fn clean_all_leftovers(snapshot_root: &Path) -> usize {
    let Ok(_lock) = lock_dir(snapshot_root) else {
        return leftovers(snapshot_root).len();
    };
    let keys: std::collections::BTreeSet<String> = leftovers(snapshot_root)
        .iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            leftover_of(name).map(|(k, _)| k.to_owned())
        })
        .collect();
    for key in keys {
        clean_leftovers(snapshot_root, &key, true);
    }
    leftovers(snapshot_root).len()
}

fn checked_key(key: &str) -> Result<&str, SnapshotError> {
    if key.is_empty() || paths::sanitize_component(key) != key || leftover_of(key).is_some() {
        return Err(SnapshotError::NotAKey {
            key: key.to_owned(),
        });
    }
    Ok(key)
}

/// `(key, kind)` when `name` is one of our temp names: `<key><kind><16 alnum>`.
fn leftover_of(name: &str) -> Option<(&str, &'static str)> {
    LEFTOVER_KINDS.iter().find_map(|kind| {
        let cut = name.len().checked_sub(RAND_LEN + kind.len())?;
        let (key, rest) = name.split_at_checked(cut)?;
        let rand = rest.strip_prefix(kind)?;
        (!key.is_empty() && rand.bytes().all(|b| b.is_ascii_alphanumeric())).then_some((key, *kind))
    })
}

/// Removes what killed runs left for `key`. If a run died between moving
/// the old snapshot away and moving the new one in, the old one is put back
/// first (when `recover`), so the key is never left missing.
fn clean_leftovers(root: &Path, key: &str, recover: bool) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut found: Vec<(PathBuf, &'static str)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            let (k, kind) = leftover_of(&name)?;
            (k == key).then(|| (e.path(), kind))
        })
        .collect();
    let dir = root.join(key);
    if recover && std::fs::symlink_metadata(&dir).is_err() {
        let restorable = found.iter().position(|(p, kind)| {
            *kind == ".old-" && manifest::read(p).is_ok_and(|m| manifest::verify(p, &m).is_ok())
        });
        if let Some(i) = restorable
            && std::fs::rename(&found[i].0, &dir).is_ok()
        {
            found.remove(i);
        }
    }
    for (p, _) in found {
        let is_link = std::fs::symlink_metadata(&p).is_ok_and(|m| !m.is_dir());
        let _ = if is_link {
            std::fs::remove_file(&p)
        } else {
            std::fs::remove_dir_all(&p)
        };
    }
}

/// An empty, uniquely named directory `<key><kind><random>` to rename onto.
fn reserve(root: &Path, key: &str, kind: &str) -> Result<PathBuf, SnapshotError> {
    tempfile::Builder::new()
        .prefix(&format!("{key}{kind}"))
        .rand_bytes(RAND_LEN)
        .tempdir_in(root)
        .map(tempfile::TempDir::keep)
        .map_err(|e| write_error(root, "a temp directory", e))
}

/// Serialises syncs and deletes under one root (a second installer waits):
/// without it one run could clean up another's temp copy mid-build. An
/// advisory lock on the root directory itself leaves no lock file behind.
fn lock_dir(root: &Path) -> Result<File, SnapshotError> {
    let f = File::open(root).map_err(|error| SnapshotError::Open {
        path: root.to_path_buf(),
        error,
    })?;
    f.lock().map_err(|error| SnapshotError::Lock {
        path: root.to_path_buf(),
        error,
    })?;
    Ok(f)
}

/// Copies every listed file into `tmp`, returning the manifest entries. The
/// digest is of the bytes actually written, so the manifest describes the
/// copy even if the source changes meanwhile.
fn build(listing: &Listing, tmp: &Path) -> Result<Vec<FileEntry>, SnapshotError> {
    for d in &listing.dirs {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(tmp.join(&d.rel))
            .map_err(|e| write_error(tmp, &d.rel, e))?;
    }
    let mut entries = Vec::with_capacity(listing.files.len());
    for f in &listing.files {
        let bytes = hash::read_capped(&f.path(&listing.root), &f.rel)?;
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(tmp.join(&f.rel))
            .map_err(|e| write_error(tmp, &f.rel, e))?;
        out.write_all(&bytes)
            .map_err(|e| write_error(tmp, &f.rel, e))?;
        out.set_permissions(std::fs::Permissions::from_mode(f.mode))
            .map_err(|e| write_error(tmp, &f.rel, e))?;
        entries.push(FileEntry {
            path: f.rel.clone(),
            sha256: hash::digest_bytes(&bytes),
            executable: f.executable,
        });
    }
    Ok(entries)
}

/// Gives directories their modes (the owner keeps full access, so the old
/// snapshot can always be deleted) and fsyncs every file and directory, so
/// the rename can only ever publish a complete copy.
fn seal(listing: &Listing, tmp: &Path) -> Result<(), SnapshotError> {
    for f in &listing.files {
        File::open(tmp.join(&f.rel))
            .and_then(|h| h.sync_all())
            .map_err(|e| write_error(tmp, &f.rel, e))?;
    }
    let root_mode = std::fs::metadata(&listing.root)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0o755);
    let dirs = listing
        .dirs
        .iter()
        .rev()
        .map(|d| (tmp.join(&d.rel), d.mode))
        .chain([(tmp.to_path_buf(), root_mode)]);
    for (path, mode) in dirs {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode | 0o700))
            .and_then(|()| File::open(&path)?.sync_all())
            .map_err(|e| write_error(tmp, &path.to_string_lossy(), e))?;
    }
    Ok(())
}

/// Publishes `tmp` as `dir`. With an existing snapshot, Linux swaps the two
/// in one `renameat2(RENAME_EXCHANGE)`; elsewhere (or on a filesystem
/// without it) the old one is renamed away and the new one in, and a kill in
/// between is repaired by the next sync (see [`clean_leftovers`]).
fn swap(
    tmp: &Path,
    dir: &Path,
    root: &Path,
    key: &str,
    replace: bool,
) -> Result<(), SnapshotError> {
    let fail = SnapshotError::Swap;
    if !replace {
        return std::fs::rename(tmp, dir).map_err(fail);
    }
    #[cfg(target_os = "linux")]
    match exchange(tmp, dir) {
        Ok(()) => {
            // `tmp` now holds the old snapshot.
            let _ = std::fs::remove_dir_all(tmp);
            return Ok(());
        }
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {}
        Err(e) => return Err(fail(e)),
    }
    let old = reserve(root, key, ".old-")?;
    std::fs::rename(dir, &old).map_err(fail)?;
    if let Err(e) = std::fs::rename(tmp, dir) {
        let _ = std::fs::rename(&old, dir);
        return Err(fail(e));
    }
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let b = std::ffi::CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both arguments are NUL-terminated strings that outlive the
    // call, which only reads them; the flags are a plain integer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn binary() -> (String, String) {
    let path = std::env::current_exe()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    (path, env!("CARGO_PKG_VERSION").to_owned())
}

fn write_error(dir: &Path, what: &str, error: std::io::Error) -> SnapshotError {
    SnapshotError::Write {
        dir: dir.to_path_buf(),
        what: what.to_owned(),
        error,
    }
}

fn untouched(dir: &Path, e: SnapshotError) -> SnapshotError {
    SnapshotError::Unchanged {
        dir: dir.to_path_buf(),
        error: Box::new(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, body: &str, mode: u32) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("team-hooks");
        write(&src, "hooks.json", "{}", 0o644);
        write(&src, "bin/gate.sh", "#!/bin/sh\nexit 0\n", 0o755);
        write(&src, ".git/config", "x", 0o644);
        let root = t.path().join("snap");
        (t, src, root)
    }

    #[test]
    fn key_is_basename_and_path_digest() {
        let (_t, src, _) = setup();
        let k = snapshot_key(&src);
        assert!(
            k.starts_with("team-hooks-") && k.len() == "team-hooks-".len() + 12,
            "{k}"
        );
        assert_eq!(k, snapshot_key(&src.join("bin/..")));
        let t2 = tempfile::tempdir().unwrap();
        let dot = t2.path().join(".keryx");
        std::fs::create_dir(&dot).unwrap();
        assert!(snapshot_key(&dot).starts_with("keryx-"));
        assert!(leftover_of(&k).is_none());
    }

    #[test]
    fn sync_copies_modes_and_writes_only_on_change() {
        let (_t, src, root) = setup();
        let r = sync(&src, &root, &["claude-code".into()], false).unwrap();
        assert!(r.changed);
        assert_eq!(r.source_hash, hash::source_hash(&src, None).unwrap());
        let m = manifest::read(&r.dir).unwrap();
        assert_eq!(m.hosts, ["claude-code"]);
        assert_eq!(m.files.len(), 2);
        assert!(!r.dir.join(".git").exists());
        let mode = std::fs::metadata(r.dir.join("bin/gate.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        manifest::verify(&r.dir, &m).unwrap();

        let again = sync(&src, &root, &["claude-code".into()], false).unwrap();
        assert!(!again.changed);
        assert_eq!(
            manifest::read(&r.dir).unwrap(),
            m,
            "unchanged means unwritten"
        );

        let dry = sync(&src, &root, &["codex".into()], true).unwrap();
        assert!(dry.changed);
        assert_eq!(
            manifest::read(&r.dir).unwrap(),
            m,
            "a dry run writes nothing"
        );

        let both = sync(&src, &root, &["codex".into()], false).unwrap();
        assert!(both.changed);
        assert_eq!(
            manifest::read(&r.dir).unwrap().hosts,
            ["claude-code", "codex"]
        );
        write(&src, "hooks.json", "{ }", 0o644);
        let newer = sync(&src, &root, &[], false).unwrap();
        assert!(newer.changed && newer.source_hash != r.source_hash);
        assert_eq!(
            std::fs::read_to_string(r.dir.join("hooks.json")).unwrap(),
            "{ }"
        );
        assert!(leftovers(&root).is_empty());
    }

    #[test]
    fn a_tampered_snapshot_is_rebuilt() {
        let (_t, src, root) = setup();
        let r = sync(&src, &root, &[], false).unwrap();
        std::fs::write(r.dir.join("bin/gate.sh"), "evil").unwrap();
        assert!(sync(&src, &root, &[], false).unwrap().changed);
        assert_eq!(
            std::fs::read_to_string(r.dir.join("bin/gate.sh")).unwrap(),
            "#!/bin/sh\nexit 0\n"
        );
    }

    #[test]
    fn leftovers_are_cleaned_and_a_missing_snapshot_recovered() {
        let (_t, src, root) = setup();
        let r = sync(&src, &root, &[], false).unwrap();
        // A run killed between "old away" and "new in".
        let old = root.join(format!("{}.old-{}", r.key, "a".repeat(RAND_LEN)));
        std::fs::rename(&r.dir, &old).unwrap();
        let half = root.join(format!("{}.tmp-{}", r.key, "b".repeat(RAND_LEN)));
        std::fs::create_dir_all(half.join("bin")).unwrap();
        // Another source's name that merely looks alike is never touched.
        let other = root.join(format!("{}.tmp-x", r.key));
        std::fs::create_dir_all(&other).unwrap();
        clean_leftovers(&root, &r.key, true);
        assert!(r.dir.join("hooks.json").exists());
        assert!(!old.exists() && !half.exists());
        assert!(other.exists());
    }

    #[test]
    fn bounded_delete() {
        let (_t, src, root) = setup();
        let r = sync(&src, &root, &[], false).unwrap();
        let foreign = root.join("foreign-0123456789ab");
        std::fs::create_dir_all(&foreign).unwrap();
        std::fs::write(foreign.join("keep"), "x").unwrap();
        assert!(
            remove_snapshot(&root, "foreign-0123456789ab")
                .unwrap_err()
                .to_string()
                .contains("left alone")
        );
        assert!(foreign.join("keep").exists());
        assert!(remove_snapshot(&root, "../x").is_err());
        assert!(remove_snapshot(&root, &r.key).unwrap());
        assert!(!r.dir.exists());
        assert!(!remove_snapshot(&root, &r.key).unwrap());
        assert!(leftovers(&root).is_empty());
    }

    #[test]
    fn refuses_a_root_inside_the_source() {
        let (_t, src, _) = setup();
        let e = sync(&src, &src.join("snap"), &[], false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("copy itself"), "{e}");
    }
}
