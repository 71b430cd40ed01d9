//! The per-user trust store: one small JSON file at
//! `Locations::trust_store()`, keyed by the real path of each project root.
//! It is never read or written when it resolves inside the project, or when
//! its directory or file could be written by someone else, because trust
//! state a repository (or another user) can plant is no trust at all.
//! Writes are read-modify-write under an advisory lock, then an atomic
//! replace, so concurrent `trust` runs never lose each other's records, and
//! a write killed half-way leaves the old store and a temp file that the
//! next opening of the store removes (under the same lock).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::paths::{self, Locations};

/// The format version written into the store.
const STORE_VERSION: u64 = 1;
/// A store larger than this is not ours.
const MAX_STORE_BYTES: u64 = 16 * 1024 * 1024;

/// What was approved for one project root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The command-line digest (the spec's rule).
    pub digest: String,
    /// The digest with in-project argv files pinned, recorded at the same
    /// time so turning `trust.pin_scripts` on later needs no new prompt
    /// while those files are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_digest: Option<String>,
    /// The ids approved, for a human reading the store.
    #[serde(default)]
    pub hook_ids: Vec<String>,
    /// Seconds since the Unix epoch.
    #[serde(default)]
    pub trusted_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoreFile {
    #[serde(default)]
    schema_version: u64,
    #[serde(default)]
    projects: BTreeMap<String, Record>,
}

/// Why the trust store cannot be used, read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Where it is makes it unusable (it resolves inside the project, or
    /// its data directory was refused); the reason is the locations'.
    #[error("{reason}")]
    Refused { reason: String },
    /// It, or its directory, could have been written by someone else.
    #[error(transparent)]
    Owner(#[from] paths::OwnerError),
    #[error("cannot read `{}`: {error}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("cannot write `{}`: {error}", path.display())]
    Unwritable {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("`{}` is larger than {MAX_STORE_BYTES} bytes; it is not a trust store", path.display())]
    TooLarge { path: PathBuf },
    #[error(
        "`{}` is not a readable trust store ({error}); move it aside to start over",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        #[source]
        error: serde_json::Error,
    },
    #[error(
        "`{}` was written by a newer keryx-hooks (store version {version})",
        path.display()
    )]
    Newer { path: PathBuf, version: u64 },
    /// The records could not be encoded.
    #[error(transparent)]
    Encode(serde_json::Error),
}

/// A store that passed every refusal check.
#[derive(Debug, Clone)]
pub struct Store {
    pub path: PathBuf,
    dir: PathBuf,
}

/// The key a project root is stored under: its real path, so a symlinked
/// or differently spelled path to the same checkout shares one record and
/// a second clone never does.
pub fn key(project_root: &Path) -> String {
    paths::real_path(project_root)
        .to_string_lossy()
        .into_owned()
}

impl Store {
    /// The store for `loc`, or why it must not be used. Does not create it.
    pub fn locate(loc: &Locations) -> Result<Store, StoreError> {
        if let Some(reason) = loc.trust_store_refusal() {
            return Err(StoreError::Refused { reason });
        }
        let path = loc.trust_store();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for p in [&dir, &path] {
            check_ownership(p)?;
        }
        let store = Store { path, dir };
        if !stale_temps(&store.dir).is_empty() {
            // Rare (a write was killed), so the lock is only taken then, and
            // never waited for: `run` opens the store on every event, and
            // whoever holds the lock (a write in progress, or a process
            // holding it on purpose) must not stall a gate.
            if let Ok(lock) = store.lock_file()
                && lock.try_lock().is_ok()
            {
                remove_stale_temps(&store.dir);
            }
        }
        Ok(store)
    }

    /// Takes the store's advisory lock; every write holds it throughout.
    fn lock(&self) -> std::io::Result<std::fs::File> {
        let lock = self.lock_file()?;
        lock.lock()?;
        Ok(lock)
    }

    /// The lock file, opened (and made, 0600, when missing), not locked.
    fn lock_file(&self) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.dir.join("hook-trust.json.lock"))
    }

    /// The record for `project_root`, if there is one.
    pub fn get(&self, project_root: &Path) -> Result<Option<Record>, StoreError> {
        Ok(self.read()?.projects.remove(&key(project_root)))
    }

    /// Sets (or with `None`, removes) the record for `project_root`.
    /// Returns whether a record was there before.
    pub fn write(&self, project_root: &Path, record: Option<Record>) -> Result<bool, StoreError> {
        let why = |error| StoreError::Unwritable {
            path: self.path.clone(),
            error,
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(why)?;
        // Creating the directory may have put something new in place; look again.
        check_ownership(&self.dir)?;
        let lock = self.lock().map_err(why)?;
        remove_stale_temps(&self.dir);
        // Read under the lock: another `trust` may have written since `open`.
        check_ownership(&self.path)?;
        let mut store = self.read()?;
        let key = key(project_root);
        let had = match record {
            Some(r) => store.projects.insert(key, r).is_some(),
            None => store.projects.remove(&key).is_some(),
        };
        store.schema_version = STORE_VERSION;
        let mut bytes = serde_json::to_vec_pretty(&store).map_err(StoreError::Encode)?;
        bytes.push(b'\n');
        write_atomic(&self.path, &bytes, 0o600).map_err(why)?;
        drop(lock);
        Ok(had)
    }

    fn read(&self) -> Result<StoreFile, StoreError> {
        let path = || self.path.clone();
        let unreadable = |error| StoreError::Unreadable {
            path: path(),
            error,
        };
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreFile::default()),
            Err(e) => return Err(unreadable(e)),
        };
        let mut bytes = Vec::new();
        file.take(MAX_STORE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
        if bytes.len() as u64 > MAX_STORE_BYTES {
            return Err(StoreError::TooLarge { path: path() });
        }
        let store: StoreFile =
            serde_json::from_slice(&bytes).map_err(|error| StoreError::Corrupt {
                path: path(),
                error,
            })?;
        if store.schema_version > STORE_VERSION {
            return Err(StoreError::Newer {
                path: path(),
                version: store.schema_version,
            });
        }
        Ok(store)
    }
}

/// Refuses a path (when it exists) that someone else could have written;
/// see [`paths::check_owner`].
fn check_ownership(path: &Path) -> Result<(), paths::OwnerError> {
    paths::check_owner(path)
}

/// Temp files an interrupted write left in the store's directory (a
/// `kill -9` between creating and renaming one).
fn stale_temps(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(TEMP_PREFIX)
                && name.ends_with(TEMP_SUFFIX)
                && e.file_type().is_ok_and(|t| t.is_file())
        })
        .map(|e| e.path())
        .collect()
}

/// Removes [`stale_temps`]. Only with the store lock held, so no write in
/// progress can own one of them.
fn remove_stale_temps(dir: &Path) {
    for p in stale_temps(dir) {
        let _ = std::fs::remove_file(p);
    }
}

const TEMP_PREFIX: &str = ".keryx-hooks-";
const TEMP_SUFFIX: &str = ".tmp";

/// Replaces `path` with `bytes` atomically: a temp file in the same
/// directory, fsynced, renamed over the target, then the directory fsynced
/// so the rename itself survives a crash. Readers see the old file or the
/// new one, never half of each.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_in(dir: &Path) -> Store {
        Store {
            path: dir.join("keryx/hook-trust.json"),
            dir: dir.join("keryx"),
        }
    }

    fn record(d: &str) -> Record {
        Record {
            digest: d.into(),
            pinned_digest: None,
            hook_ids: vec!["a".into()],
            trusted_at: 1,
        }
    }

    #[test]
    fn set_get_remove_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        let proj = tmp.path().join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        assert_eq!(store.get(&proj).unwrap(), None);
        assert!(!store.write(&proj, Some(record("sha256:1"))).unwrap());
        assert_eq!(store.get(&proj).unwrap(), Some(record("sha256:1")));
        // A symlink to the same checkout is the same project.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&proj, &link).unwrap();
        assert_eq!(store.get(&link).unwrap(), Some(record("sha256:1")));
        assert!(store.write(&proj, None).unwrap());
        assert_eq!(store.get(&proj).unwrap(), None);
        let mode = std::fs::metadata(&store.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn refuses_a_world_writable_store() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        std::fs::create_dir_all(&store.dir).unwrap();
        std::fs::write(&store.path, "{}").unwrap();
        std::fs::set_permissions(&store.path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let err = check_ownership(&store.path).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "`{}` is writable by every user (mode 666)",
                store.path.display()
            )
        );
        std::fs::set_permissions(&store.path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check_ownership(&store.path).is_ok());
    }

    #[test]
    fn a_corrupt_store_is_an_error_not_an_empty_one() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        std::fs::create_dir_all(&store.dir).unwrap();
        std::fs::write(&store.path, "not json").unwrap();
        assert!(store.get(tmp.path()).is_err());
        assert!(store.write(tmp.path(), Some(record("x"))).is_err());
        assert_eq!(std::fs::read(&store.path).unwrap(), b"not json");
        let json_error = serde_json::from_slice::<StoreFile>(b"not json").unwrap_err();
        assert_eq!(
            store.write(tmp.path(), None).unwrap_err().to_string(),
            format!(
                "`{}` is not a readable trust store ({json_error}); move it aside to start over",
                store.path.display()
            )
        );
        std::fs::write(&store.path, r#"{"schemaVersion": 9}"#).unwrap();
        assert_eq!(
            store.get(tmp.path()).unwrap_err().to_string(),
            format!(
                "`{}` was written by a newer keryx-hooks (store version 9)",
                store.path.display()
            )
        );
    }
}
