//! `manifest.json` inside each snapshot: which source it was taken from, that
//! source's hash, every file with its digest and exec bit, the binary that
//! took it and the hosts wired to it. Its presence is also what makes a
//! directory "ours" for the bounded delete.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::SnapshotError;
use super::hash::{self, Stamp, StampKey};

pub const MANIFEST_FILE: &str = "manifest.json";
pub const SCHEMA_VERSION: &str = "1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: String,
    /// The canonical source directory.
    pub source_path: String,
    /// [`hash::source_hash`] of the source as copied.
    pub source_hash: String,
    pub files: Vec<FileEntry>,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub binary_path: String,
    pub binary_version: String,
    /// Hosts wired to this snapshot, sorted.
    pub hosts: Vec<String>,
    /// Where each host was wired to this snapshot: one entry per host, scope
    /// and file (or plugin directory), sorted. `status`, `doctor` and
    /// `uninstall` check a wiring where it was made (a project-scope wiring
    /// in that project), not wherever they happen to run. Manifests written
    /// before this field existed have none; their `hosts` are checked in
    /// every config file the host reads.
    #[serde(default)]
    pub wirings: Vec<Wiring>,
}

/// One host wired to a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Wiring {
    pub host: String,
    pub scope: WiringScope,
    pub format: WiringFormat,
    /// The absolute path of the host config file (`settings`) or of what was
    /// generated (`plugin`: the plugin, extension or plugin-file path).
    pub path: String,
    /// For a project-scope wiring, the project it was made for (its hooks
    /// are in the host's timeouts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WiringScope {
    User,
    Project,
}

impl WiringScope {
    pub fn as_str(self) -> &'static str {
        match self {
            WiringScope::User => "user",
            WiringScope::Project => "project",
        }
    }
}

/// How a host was wired: entries merged into its own settings file, or a
/// package in the host's own plugin format that only we write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WiringFormat {
    Settings,
    Plugin,
}

impl WiringFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            WiringFormat::Settings => "settings",
            WiringFormat::Plugin => "plugin",
        }
    }
}

/// What the SessionStart check needs of a manifest, read without the
/// per-file list (which it never uses and which is most of the file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub schema_version: String,
    pub source_path: String,
    pub source_hash: String,
    #[serde(default)]
    pub hosts: Vec<String>,
    #[serde(default)]
    pub wirings: Vec<Wiring>,
}

impl From<&Manifest> for Summary {
    fn from(m: &Manifest) -> Summary {
        Summary {
            schema_version: m.schema_version.clone(),
            source_path: m.source_path.clone(),
            source_hash: m.source_hash.clone(),
            hosts: m.hosts.clone(),
            wirings: m.wirings.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: String,
    pub sha256: String,
    pub executable: bool,
}

impl Manifest {
    /// Whether two manifests describe the same snapshot (everything but the
    /// time it was taken), so a resync with nothing new writes nothing.
    pub fn same_snapshot(&self, other: &Manifest) -> bool {
        Manifest {
            created_at: String::new(),
            ..self.clone()
        } == Manifest {
            created_at: String::new(),
            ..other.clone()
        }
    }

    /// The source hash recomputed from the file list (it must equal
    /// `source_hash`, since both come from [`hash::combine`]).
    pub fn files_hash(&self) -> String {
        let mut files: Vec<&FileEntry> = self.files.iter().collect();
        files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        hash::combine(
            files
                .into_iter()
                .map(|f| (f.path.as_str(), f.executable, f.sha256.as_str())),
        )
    }
}

/// Reads the manifest of the snapshot at `dir` for the SessionStart check:
/// only the source, its hash and the wiring, each checked for shape; the
/// file list is skipped unparsed (`status` and `doctor` read and check all
/// of it with [`read`]).
pub fn read_summary(dir: &Path) -> Result<Summary, SnapshotError> {
    read_checked(dir, check_summary)
}

/// The manifest in `dir`, parsed as `T` and passed by `check`.
fn read_checked<T: serde::de::DeserializeOwned>(
    dir: &Path,
    check: fn(&T) -> Result<(), SnapshotError>,
) -> Result<T, SnapshotError> {
    let path = dir.join(MANIFEST_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(error) => return Err(SnapshotError::Read { path, error }),
    };
    let m: T = match serde_json::from_slice(&bytes) {
        Ok(m) => m,
        Err(error) => return Err(SnapshotError::NotAManifest { path, error }),
    };
    match check(&m) {
        Ok(()) => Ok(m),
        Err(e) => Err(SnapshotError::InvalidManifest {
            path,
            error: Box::new(e),
        }),
    }
}

/// [`read_summary`] through a memo at `memo` (a file under the state
/// dir): the summary saved with the manifest file's stamp, so that a
/// manifest unchanged since is not read again. The SessionStart check runs
/// this; a manifest of 1,000 files is ~160 KB. A memo that is missing,
/// stale or unreadable only costs the read.
pub fn read_summary_memo(dir: &Path, memo: &Path) -> Result<Summary, SnapshotError> {
    #[derive(Serialize, Deserialize)]
    struct Memo {
        version: u32,
        manifest: String,
        stamp: String,
        summary: Summary,
    }
    const MEMO_VERSION: u32 = 1;
    let path = dir.join(MANIFEST_FILE);
    let Some((stamp, racy)) = manifest_stamp(&path) else {
        return read_summary(dir);
    };
    let manifest = path.to_string_lossy();
    let remembered = std::fs::read(memo)
        .ok()
        .and_then(|b| serde_json::from_slice::<Memo>(&b).ok())
        .filter(|m| m.version == MEMO_VERSION && m.manifest == manifest && m.stamp == stamp)
        .map(|m| m.summary)
        .filter(|s| check_summary(s).is_ok());
    if let Some(s) = remembered {
        return Ok(s);
    }
    let summary = read_summary(dir)?;
    // A manifest written within the racy window could change again without
    // its stamp changing: not remembered until it is older.
    if !racy {
        let m = Memo {
            version: MEMO_VERSION,
            manifest: manifest.into_owned(),
            stamp,
            summary,
        };
        let bytes = serde_json::to_vec(&m).map_err(std::io::Error::other);
        if let Err(e) = bytes.and_then(|b| crate::paths::write_cache_file(memo, &b)) {
            tracing::debug!("manifest memo not written: {e}");
        }
        return Ok(m.summary);
    }
    Ok(summary)
}

/// The manifest file's stamp (the one the stat cache keeps for a source
/// file), and whether it changed too recently to vouch for its contents.
fn manifest_stamp(path: &Path) -> Option<(String, bool)> {
    let stamp = Stamp::of(&std::fs::metadata(path).ok()?);
    let racy = stamp.racy(SystemTime::now());
    Some((StampKey::new(stamp, false).as_str().to_owned(), racy))
}

fn check_summary(s: &Summary) -> Result<(), SnapshotError> {
    if s.schema_version != SCHEMA_VERSION {
        return Err(SnapshotError::SchemaVersion {
            found: s.schema_version.clone(),
        });
    }
    if !Path::new(&s.source_path).is_absolute() {
        return Err(SnapshotError::SourcePathNotAbsolute);
    }
    if !is_hex64(&s.source_hash) {
        return Err(SnapshotError::SourceHashNotSha256);
    }
    if let Some(w) = s.wirings.iter().find(|w| !Path::new(&w.path).is_absolute()) {
        return Err(SnapshotError::WiringNotAbsolute {
            host: w.host.clone(),
            path: w.path.clone(),
        });
    }
    Ok(())
}

/// Reads and checks the manifest of the snapshot at `dir`.
pub fn read(dir: &Path) -> Result<Manifest, SnapshotError> {
    read_checked(dir, check)
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A path a manifest may name: relative, no `..`, no empty or `.` parts.
fn safe_rel(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

fn check(m: &Manifest) -> Result<(), SnapshotError> {
    check_summary(&Summary::from(m))?;
    for f in &m.files {
        if !safe_rel(&f.path) || f.path == MANIFEST_FILE {
            return Err(SnapshotError::PathNotAllowed {
                path: f.path.clone(),
            });
        }
        if !is_hex64(&f.sha256) {
            return Err(SnapshotError::MalformedSha256 {
                path: f.path.clone(),
            });
        }
    }
    if !m.files.iter().any(|f| f.path == "hooks.json") {
        return Err(SnapshotError::NoHooksJson);
    }
    if m.files_hash() != m.source_hash {
        return Err(SnapshotError::HashMismatch);
    }
    Ok(())
}

/// Writes `m` into `dir` (temp file, fsync, rename), so a reader never sees
/// half a manifest.
pub fn write(dir: &Path, m: &Manifest) -> Result<(), SnapshotError> {
    use std::io::Write;
    let fail = |error| SnapshotError::WriteManifest {
        dir: dir.to_path_buf(),
        error,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".manifest.tmp-")
        .tempfile_in(dir)
        .map_err(fail)?;
    let mut text = serde_json::to_string_pretty(m).map_err(SnapshotError::Serialize)?;
    text.push('\n');
    tmp.write_all(text.as_bytes()).map_err(fail)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(dir.join(MANIFEST_FILE))
        .map_err(|e| fail(e.error))?;
    Ok(())
}

/// Checks that the snapshot at `dir` holds exactly the files its manifest
/// lists, with those digests and exec bits; the first difference is the error.
pub fn verify(dir: &Path, m: &Manifest) -> Result<(), SnapshotError> {
    let mut expected: std::collections::BTreeMap<&str, &FileEntry> =
        m.files.iter().map(|f| (f.path.as_str(), f)).collect();
    for entry in walkdir::WalkDir::new(dir).follow_links(false).min_depth(1) {
        let entry = entry.map_err(SnapshotError::Walk)?;
        let rel = entry
            .path()
            .strip_prefix(dir)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .into_owned();
        let ft = entry.file_type();
        if ft.is_dir() || rel == MANIFEST_FILE {
            continue;
        }
        if !ft.is_file() {
            return Err(SnapshotError::NotRegular { rel });
        }
        let Some(want) = expected.remove(rel.as_str()) else {
            return Err(SnapshotError::NotInManifest { rel });
        };
        let meta = match entry.metadata() {
            Ok(m) => m,
            Err(error) => return Err(SnapshotError::ReadEntry { rel, error }),
        };
        if (meta.permissions().mode() & 0o111 != 0) != want.executable {
            return Err(SnapshotError::ExecBit { rel });
        }
        let bytes = hash::read_capped(entry.path(), &rel)?;
        if hash::digest_bytes(&bytes) != want.sha256 {
            return Err(SnapshotError::Differs { rel });
        }
    }
    match expected.keys().next() {
        Some(missing) => Err(SnapshotError::Missing {
            rel: (*missing).to_owned(),
        }),
        None => Ok(()),
    }
}

/// Now, as RFC 3339 UTC with second precision (no date crate for one field).
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

fn rfc3339(secs: u64) -> String {
    let (y, m, d, hh, mm, ss) = crate::base::time::civil_utc(secs as i64);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_599), "2025-12-31T23:59:59Z");
    }

    /// The SessionStart check's memo gives what the manifest says, whatever
    /// happened to the manifest or the memo since.
    #[test]
    fn the_summary_memo_follows_the_manifest() {
        let snap = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let memo = state.path().join("memo").join("k.json");
        let manifest = |source: &str| Manifest {
            schema_version: SCHEMA_VERSION.into(),
            source_path: source.into(),
            source_hash: "a".repeat(64),
            files: vec![],
            created_at: now_rfc3339(),
            binary_path: "/bin/keryx-hooks".into(),
            binary_version: "0".into(),
            hosts: vec!["claude-code".into()],
            wirings: vec![],
        };
        write(snap.path(), &manifest("/src/one")).unwrap();
        // Just written: too fresh to remember.
        let s = read_summary_memo(snap.path(), &memo).unwrap();
        assert_eq!(s.source_path, "/src/one");
        assert!(!memo.exists());
        std::thread::sleep(super::super::hash::RACY_WINDOW + std::time::Duration::from_millis(100));
        assert_eq!(read_summary_memo(snap.path(), &memo).unwrap(), s);
        assert!(memo.is_file(), "an older manifest is remembered");
        assert_eq!(read_summary_memo(snap.path(), &memo).unwrap(), s);

        // A new manifest (written as install writes it) is read, not the memo.
        write(snap.path(), &manifest("/src/two")).unwrap();
        let two = read_summary_memo(snap.path(), &memo).unwrap();
        assert_eq!(two.source_path, "/src/two");

        // A memo that is not ours, or broken, costs only the read.
        for junk in ["{", "{\"version\":9}", ""] {
            std::fs::write(&memo, junk).unwrap();
            assert_eq!(read_summary_memo(snap.path(), &memo).unwrap(), two);
        }
        // A broken manifest is an error, whatever the memo says.
        std::fs::write(snap.path().join(MANIFEST_FILE), "{").unwrap();
        assert!(read_summary_memo(snap.path(), &memo).is_err());
    }

    #[test]
    fn rejects_unsafe_paths_and_inconsistent_hashes() {
        let f = |p: &str| FileEntry {
            path: p.into(),
            sha256: "0".repeat(64),
            executable: false,
        };
        let mut m = Manifest {
            schema_version: SCHEMA_VERSION.into(),
            source_path: "/src".into(),
            source_hash: String::new(),
            files: vec![f("hooks.json")],
            created_at: now_rfc3339(),
            binary_path: "/bin/keryx-hooks".into(),
            binary_version: "0".into(),
            hosts: vec![],
            wirings: vec![],
        };
        m.source_hash = m.files_hash();
        assert!(check(&m).is_ok());
        for bad in ["../x", "/etc/passwd", "a//b", "./a", "manifest.json"] {
            let mut b = m.clone();
            b.files.push(f(bad));
            b.source_hash = b.files_hash();
            assert!(check(&b).is_err(), "{bad}");
        }
        let mut b = m.clone();
        b.source_hash = "1".repeat(64);
        assert!(
            check(&b)
                .unwrap_err()
                .to_string()
                .contains("does not match")
        );
    }
}
