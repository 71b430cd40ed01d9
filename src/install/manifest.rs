//! `manifest.json` inside each snapshot: which source it was taken from, that
//! source's hash, every file with its digest and exec bit, the binary that
//! took it and the hosts wired to it. Its presence is also what makes a
//! directory "ours" for the bounded delete.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::hash;

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

/// Reads and checks the manifest of the snapshot at `dir`.
pub fn read(dir: &Path) -> Result<Manifest, String> {
    let path = dir.join(MANIFEST_FILE);
    let bytes =
        std::fs::read(&path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| format!("`{}` is not a keryx-hooks manifest: {e}", path.display()))?;
    check(&m).map_err(|e| format!("`{}` is invalid: {e}", path.display()))?;
    Ok(m)
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

fn check(m: &Manifest) -> Result<(), String> {
    if m.schema_version != SCHEMA_VERSION {
        return Err(format!(
            "schemaVersion `{}` is not `{SCHEMA_VERSION}` (written by another keryx-hooks version)",
            m.schema_version
        ));
    }
    if !Path::new(&m.source_path).is_absolute() {
        return Err("sourcePath is not absolute".into());
    }
    if !is_hex64(&m.source_hash) {
        return Err("sourceHash is not a sha256".into());
    }
    for f in &m.files {
        if !safe_rel(&f.path) || f.path == MANIFEST_FILE {
            return Err(format!("file path `{}` is not allowed", f.path));
        }
        if !is_hex64(&f.sha256) {
            return Err(format!("the sha256 of `{}` is malformed", f.path));
        }
    }
    if !m.files.iter().any(|f| f.path == "hooks.json") {
        return Err("it lists no `hooks.json`".into());
    }
    if m.files_hash() != m.source_hash {
        return Err("sourceHash does not match the file list".into());
    }
    Ok(())
}

/// Writes `m` into `dir` (temp file, fsync, rename), so a reader never sees
/// half a manifest.
pub fn write(dir: &Path, m: &Manifest) -> Result<(), String> {
    use std::io::Write;
    let fail = |e: std::io::Error| format!("cannot write the manifest in `{}`: {e}", dir.display());
    let mut tmp = tempfile::Builder::new()
        .prefix(".manifest.tmp-")
        .tempfile_in(dir)
        .map_err(fail)?;
    let mut text = serde_json::to_string_pretty(m).map_err(|e| e.to_string())?;
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
pub fn verify(dir: &Path, m: &Manifest) -> Result<(), String> {
    let mut expected: std::collections::BTreeMap<&str, &FileEntry> =
        m.files.iter().map(|f| (f.path.as_str(), f)).collect();
    for entry in walkdir::WalkDir::new(dir).follow_links(false).min_depth(1) {
        let entry = entry.map_err(|e| format!("cannot read the snapshot: {e}"))?;
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
            return Err(format!("`{rel}` in the snapshot is not a regular file"));
        }
        let Some(want) = expected.remove(rel.as_str()) else {
            return Err(format!("`{rel}` in the snapshot is not in its manifest"));
        };
        let meta = entry
            .metadata()
            .map_err(|e| format!("cannot read `{rel}`: {e}"))?;
        if (meta.permissions().mode() & 0o111 != 0) != want.executable {
            return Err(format!("the exec bit of `{rel}` differs from the manifest"));
        }
        let bytes = hash::read_capped(entry.path(), &rel)?;
        if hash::digest_bytes(&bytes) != want.sha256 {
            return Err(format!("`{rel}` differs from the manifest"));
        }
    }
    match expected.keys().next() {
        Some(missing) => Err(format!("`{missing}` is missing from the snapshot")),
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
    let (y, m, d, hh, mm, ss) = crate::runtime::codec::civil_utc(secs as i64);
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
        };
        m.source_hash = m.files_hash();
        assert_eq!(check(&m), Ok(()));
        for bad in ["../x", "/etc/passwd", "a//b", "./a", "manifest.json"] {
            let mut b = m.clone();
            b.files.push(f(bad));
            b.source_hash = b.files_hash();
            assert!(check(&b).is_err(), "{bad}");
        }
        let mut b = m.clone();
        b.source_hash = "1".repeat(64);
        assert!(check(&b).unwrap_err().contains("does not match"));
    }
}
