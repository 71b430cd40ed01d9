//! What a hook source is, and the one function that hashes it (ARCHITECTURE
//! §6). Sync, `status`, `doctor` and the SessionStart check all go through
//! [`list_source`] and [`combine`], so they can never disagree about which
//! files count. A stat cache lets a warm check skip reading file contents,
//! which is what keeps the SessionStart drift check under its time budget.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::schema::hex;

/// A single file larger than this is refused: a hook source is config and
/// scripts, and a snapshot is copied on every resync.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Directories that are never part of a source, at any depth: version
/// control, build output and dependency trees are not hooks.
pub const SKIPPED_DIRS: [&str; 3] = [".git", "target", "node_modules"];

/// Bumped whenever [`combine`] changes, so old stored hashes never match.
const HASH_DOMAIN: &[u8] = b"keryx-hooks source hash v1\n";

/// A file changed this recently may change again within the same timestamp
/// tick without its stat changing, so its digest is not cached (git's
/// "racy clean" problem). Two seconds covers one-second filesystems.
const RACY_WINDOW: Duration = Duration::from_secs(2);

const CACHE_VERSION: u32 = 1;

/// One file of a source, as found by [`list_source`].
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// `/`-separated path relative to the source root.
    pub rel: String,
    /// The file whose bytes are read: the entry itself, or the in-source
    /// file a symlink resolves to (a snapshot holds copies, never links back
    /// into the live source).
    pub path: PathBuf,
    /// Permission bits (`0o777`); setuid and friends are dropped.
    pub mode: u32,
    pub executable: bool,
    pub stamp: Stamp,
}

/// What the stat cache compares: a file whose stamp is unchanged is assumed
/// to have unchanged contents. ctime is included because nothing short of
/// changing the clock can set it back, unlike mtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub dev: u64,
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            size: m.size(),
            mtime_ns: m
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.mtime_nsec()),
            ctime_ns: m
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.ctime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
        }
    }

    /// Whether the file changed so recently that the stamp cannot vouch for it.
    fn racy(&self, now: SystemTime) -> bool {
        let now_ns = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        let window = RACY_WINDOW.as_nanos() as i64;
        now_ns - self.mtime_ns.max(self.ctime_ns) < window
    }
}

/// A directory of a source, so a snapshot can recreate it with its mode.
#[derive(Debug, Clone)]
pub struct SourceDir {
    pub rel: String,
    pub mode: u32,
}

/// Everything [`list_source`] found.
#[derive(Debug)]
pub struct Listing {
    /// The canonical source directory.
    pub root: PathBuf,
    /// Sorted by `rel`, byte-wise, which is the hash order.
    pub files: Vec<SourceFile>,
    /// Parents before children.
    pub dirs: Vec<SourceDir>,
    /// Entries left out, one sentence each (symlinks leading out of the
    /// source, sockets, …).
    pub warnings: Vec<String>,
}

/// The files that make up the hook source at `source`: `hooks.json` and
/// everything beside it, without [`SKIPPED_DIRS`]. Symlinks are not
/// followed out of the source; one that resolves to a file inside it counts
/// as that file. Fails on a missing `hooks.json`, a file over
/// [`MAX_FILE_BYTES`], a name that is not UTF-8, or an unreadable directory.
pub fn list_source(source: &Path) -> Result<Listing, String> {
    let root = std::fs::canonicalize(source)
        .map_err(|e| format!("the hook source `{}` cannot be read: {e}", source.display()))?;
    if !root.is_dir() {
        return Err(format!(
            "the hook source `{}` is not a directory",
            root.display()
        ));
    }
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut warnings = Vec::new();
    let walker = walkdir::WalkDir::new(&root)
        .follow_links(false)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            !(e.file_type().is_dir()
                && SKIPPED_DIRS
                    .iter()
                    .any(|s| e.file_name() == std::ffi::OsStr::new(s)))
        });
    for entry in walker {
        let entry = entry.map_err(|e| format!("cannot read the hook source: {e}"))?;
        let rel_path = entry.path().strip_prefix(&root).unwrap_or(entry.path());
        let rel = rel_path
            .to_str()
            .ok_or_else(|| {
                format!(
                    "`{}` has a name that is not UTF-8; rename it or move it out of the source",
                    entry.path().display()
                )
            })?
            .to_owned();
        let ft = entry.file_type();
        if ft.is_dir() {
            let m = entry
                .metadata()
                .map_err(|e| format!("cannot read `{}`: {e}", entry.path().display()))?;
            dirs.push(SourceDir {
                rel,
                mode: m.permissions().mode() & 0o777,
            });
        } else if ft.is_file() {
            let m = entry
                .metadata()
                .map_err(|e| format!("cannot read `{}`: {e}", entry.path().display()))?;
            files.push(source_file(rel, entry.path().to_path_buf(), &m)?);
        } else if ft.is_symlink() {
            match resolve_link(entry.path(), &root) {
                Ok((target, m)) => files.push(source_file(rel, target, &m)?),
                Err(why) => warnings.push(format!("left out `{rel}`: {why}")),
            }
        } else {
            warnings.push(format!(
                "left out `{rel}`: not a regular file, directory or symlink"
            ));
        }
    }
    if !files.iter().any(|f| f.rel == "hooks.json") {
        return Err(format!(
            "`{}` has no `hooks.json`, so it is not a hook source",
            root.display()
        ));
    }
    files.sort_by(|a, b| a.rel.as_bytes().cmp(b.rel.as_bytes()));
    Ok(Listing {
        root,
        files,
        dirs,
        warnings,
    })
}

fn source_file(rel: String, path: PathBuf, m: &std::fs::Metadata) -> Result<SourceFile, String> {
    if m.size() > MAX_FILE_BYTES {
        return Err(too_big(&rel, m.size()));
    }
    let mode = m.permissions().mode() & 0o777;
    Ok(SourceFile {
        rel,
        path,
        mode,
        executable: mode & 0o111 != 0,
        stamp: Stamp::of(m),
    })
}

fn too_big(rel: &str, size: u64) -> String {
    format!(
        "`{rel}` is {:.1} MB; a hook source may not hold files over {} MB (snapshots copy \
         every file on each resync), so move it out of the source",
        size as f64 / (1024.0 * 1024.0),
        MAX_FILE_BYTES / (1024 * 1024)
    )
}

/// A symlink counts only as a regular file inside the source: following one
/// out would make the snapshot depend on files nobody reviews as hooks, and
/// following a directory link could loop.
fn resolve_link(link: &Path, root: &Path) -> Result<(PathBuf, std::fs::Metadata), String> {
    let target = std::fs::canonicalize(link).map_err(|_| "a dangling symlink".to_owned())?;
    if !target.starts_with(root) {
        return Err(format!(
            "a symlink to `{}`, outside the source",
            target.display()
        ));
    }
    let m = std::fs::metadata(&target).map_err(|e| format!("cannot read its target: {e}"))?;
    if !m.is_file() {
        return Err("a symlink to a directory (not followed)".to_owned());
    }
    Ok((target, m))
}

/// The source hash over `(relative path, exec bit, content digest)` of every
/// file, in `rel` order. Digests stand in for contents so that cached and
/// freshly read files hash alike.
pub fn combine<'a>(entries: impl IntoIterator<Item = (&'a str, bool, &'a str)>) -> String {
    let mut h = Sha256::new();
    h.update(HASH_DOMAIN);
    for (rel, executable, digest) in entries {
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(if executable { b"x" } else { b"-" });
        h.update([0]);
        h.update(digest.as_bytes());
        h.update(b"\n");
    }
    hex(&h.finalize())
}

/// The sha256 of `bytes`, hex.
pub fn digest_bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Reads a file (never more than the size cap, even if it grows meanwhile).
pub fn read_capped(path: &Path, rel: &str) -> Result<Vec<u8>, String> {
    note_content_read();
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read `{rel}`: {e}"))?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read `{rel}`: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(rel, bytes.len() as u64));
    }
    Ok(bytes)
}

/// The hash of the hook source at `source` (see [`combine`]). With `cache`
/// (a file under the state dir, see [`cache_file`]), files whose stat is
/// unchanged since the last call are not read again; the cache is rewritten
/// only when it changed, and a cache that cannot be read or written only
/// costs time, never correctness.
pub fn source_hash(source: &Path, cache: Option<&Path>) -> Result<String, String> {
    let listing = list_source(source)?;
    let mut stored = cache
        .and_then(|p| StatCache::read(p, &listing.root))
        .unwrap_or_else(|| StatCache::empty(&listing.root));
    let now = SystemTime::now();
    let mut dirty = false;
    let mut digests = Vec::with_capacity(listing.files.len());
    for f in &listing.files {
        let cached = stored
            .entries
            .get(&f.rel)
            .filter(|e| e.stamp == f.stamp)
            .map(|e| e.sha256.clone());
        let digest = match cached {
            Some(d) => d,
            None => {
                let d = digest_bytes(&read_capped(&f.path, &f.rel)?);
                if f.stamp.racy(now) {
                    dirty |= stored.entries.remove(&f.rel).is_some();
                } else {
                    stored.entries.insert(
                        f.rel.clone(),
                        CacheEntry {
                            stamp: f.stamp,
                            sha256: d.clone(),
                        },
                    );
                    dirty = true;
                }
                d
            }
        };
        digests.push(digest);
    }
    let before = stored.entries.len();
    // A set, not a scan per entry: the scan made this quadratic in the
    // number of files (half a million comparisons for 1,000 files).
    let present: std::collections::HashSet<&_> = listing.files.iter().map(|f| &f.rel).collect();
    stored.entries.retain(|rel, _| present.contains(rel));
    dirty |= stored.entries.len() != before;
    if dirty
        && let Some(path) = cache
        && let Err(e) = stored.write(path)
    {
        tracing::debug!("source-hash cache not written: {e}");
    }
    Ok(combine(
        listing
            .files
            .iter()
            .zip(&digests)
            .map(|(f, d)| (f.rel.as_str(), f.executable, d.as_str())),
    ))
}

/// Where the stat cache for `source` lives under the state dir: one small
/// file per source, so two sources never evict each other.
pub fn cache_file(state_dir: &Path, source: &Path) -> PathBuf {
    state_dir
        .join("source-hash")
        .join(format!("{}.json", super::snapshot::snapshot_key(source)))
}

#[derive(Debug, Serialize, Deserialize)]
struct StatCache {
    version: u32,
    source: PathBuf,
    entries: BTreeMap<String, CacheEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct CacheEntry {
    stamp: Stamp,
    sha256: String,
}

impl StatCache {
    fn empty(root: &Path) -> StatCache {
        StatCache {
            version: CACHE_VERSION,
            source: root.to_path_buf(),
            entries: BTreeMap::new(),
        }
    }

    /// The cache for `root`, or `None` when absent, corrupt, from another
    /// version or for another source (a key collision must not leak digests).
    fn read(path: &Path, root: &Path) -> Option<StatCache> {
        let bytes = std::fs::read(path).ok()?;
        let c: StatCache = serde_json::from_slice(&bytes).ok()?;
        (c.version == CACHE_VERSION && c.source == root).then_some(c)
    }

    /// Atomic replace, so a concurrent reader sees the old or the new cache.
    fn write(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(&serde_json::to_vec(self).map_err(std::io::Error::other)?)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

// Counts content reads on this thread, so a test can prove that a warm hash
// reads nothing (reads are the cost the cache exists to avoid).
thread_local! {
    static CONTENT_READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn note_content_read() {
    CONTENT_READS.with(|c| c.set(c.get() + 1));
}

/// How many file contents this thread has read through this module.
#[cfg(test)]
pub(crate) fn content_reads() -> u64 {
    CONTENT_READS.with(std::cell::Cell::get)
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

    fn source() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        write(t.path(), "hooks.json", "{}", 0o644);
        write(t.path(), "scripts/a.sh", "echo a", 0o755);
        write(t.path(), "scripts/b.txt", "b", 0o644);
        t
    }

    #[test]
    fn skips_vcs_build_and_dependency_dirs_and_sorts_bytewise() {
        let t = source();
        write(t.path(), ".git/HEAD", "ref", 0o644);
        write(t.path(), "sub/target/x", "x", 0o644);
        write(t.path(), "node_modules/m/i.js", "x", 0o644);
        write(t.path(), "a.txt", "x", 0o644);
        write(t.path(), "a/b", "x", 0o644);
        let l = list_source(t.path()).unwrap();
        let rels: Vec<_> = l.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            [
                "a.txt",
                "a/b",
                "hooks.json",
                "scripts/a.sh",
                "scripts/b.txt"
            ]
        );
        assert!(l.files[3].executable && !l.files[4].executable);
    }

    #[test]
    fn hash_covers_path_exec_bit_and_content() {
        let t = source();
        let h0 = source_hash(t.path(), None).unwrap();
        assert_eq!(h0, source_hash(t.path(), None).unwrap());
        std::fs::set_permissions(
            t.path().join("scripts/b.txt"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let h1 = source_hash(t.path(), None).unwrap();
        assert_ne!(h0, h1);
        write(t.path(), "scripts/b.txt", "B", 0o755);
        let h2 = source_hash(t.path(), None).unwrap();
        assert_ne!(h1, h2);
        std::fs::rename(
            t.path().join("scripts/b.txt"),
            t.path().join("scripts/c.txt"),
        )
        .unwrap();
        assert_ne!(h2, source_hash(t.path(), None).unwrap());
    }

    #[test]
    fn refuses_big_files_missing_hooks_json_and_links_out() {
        let t = source();
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret", "s", 0o600);
        std::os::unix::fs::symlink(outside.path().join("secret"), t.path().join("out")).unwrap();
        std::os::unix::fs::symlink("scripts/a.sh", t.path().join("in")).unwrap();
        std::os::unix::fs::symlink("scripts", t.path().join("dirlink")).unwrap();
        let l = list_source(t.path()).unwrap();
        let rels: Vec<_> = l.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(rels, ["hooks.json", "in", "scripts/a.sh", "scripts/b.txt"]);
        assert!(l.files[1].executable);
        assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);

        let f = std::fs::File::create(t.path().join("big.bin")).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = source_hash(t.path(), None).unwrap_err();
        assert!(e.contains("`big.bin`") && e.contains("10 MB"), "{e}");

        std::fs::remove_file(t.path().join("big.bin")).unwrap();
        std::fs::remove_file(t.path().join("hooks.json")).unwrap();
        assert!(
            source_hash(t.path(), None)
                .unwrap_err()
                .contains("no `hooks.json`")
        );
    }

    /// The proof that the stat cache is used: after one cold hash, a second
    /// hash of the unchanged source reads no file contents at all, and a
    /// changed file is read again (and only that one).
    #[test]
    fn warm_hash_reads_no_contents() {
        let t = source();
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = cache_dir.path().join("c.json");
        // Files this fresh are "racy" and deliberately not cached.
        std::thread::sleep(RACY_WINDOW + Duration::from_millis(100));

        let r0 = content_reads();
        let cold = source_hash(t.path(), Some(&cache)).unwrap();
        assert_eq!(content_reads() - r0, 3);

        let r1 = content_reads();
        let warm = source_hash(t.path(), Some(&cache)).unwrap();
        assert_eq!(content_reads() - r1, 0, "a warm hash must read nothing");
        assert_eq!(cold, warm);
        assert_eq!(warm, source_hash(t.path(), None).unwrap());

        write(t.path(), "scripts/b.txt", "c", 0o644); // same size, new content
        let r2 = content_reads();
        let changed = source_hash(t.path(), Some(&cache)).unwrap();
        assert_eq!(content_reads() - r2, 1);
        assert_ne!(changed, warm);
        // Racy again: read until it ages, never trusted from the cache.
        let r3 = content_reads();
        source_hash(t.path(), Some(&cache)).unwrap();
        assert_eq!(content_reads() - r3, 1);
    }

    #[test]
    fn a_cache_for_another_source_is_ignored() {
        let a = source();
        let b = source();
        write(b.path(), "scripts/b.txt", "other", 0o644);
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = cache_dir.path().join("c.json");
        source_hash(a.path(), Some(&cache)).unwrap();
        assert_eq!(
            source_hash(b.path(), Some(&cache)).unwrap(),
            source_hash(b.path(), None).unwrap()
        );
    }
}
