//! What a hook source is, and the one function that hashes it (ARCHITECTURE
//! §6). Sync, `status`, `doctor` and the SessionStart check all go through
//! [`list_source`] and [`combine`], so they can never disagree about which
//! files count. A stat cache lets a warm check skip reading file contents,
//! which is what keeps the SessionStart drift check under its time budget.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::base::text::hex;

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
pub(super) const RACY_WINDOW: Duration = Duration::from_secs(2);

/// Bumped whenever the stat cache's layout changes; an older cache is
/// ignored and rewritten.
const CACHE_VERSION: u32 = 3;

/// One file of a source, as found by [`list_source`].
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// `/`-separated path relative to the source root.
    pub rel: String,
    /// For a symlink, the in-source file it resolves to (a snapshot holds
    /// copies, never links back into the live source); see [`SourceFile::path`].
    pub link_target: Option<PathBuf>,
    /// Permission bits (`0o777`); setuid and friends are dropped.
    pub mode: u32,
    pub executable: bool,
    pub stamp: Stamp,
}

impl SourceFile {
    /// The file whose bytes are read: the entry itself (under `root`, the
    /// listing's root), or the file a symlink resolves to. Not stored, since
    /// the warm SessionStart check never reads a file.
    pub fn path(&self, root: &Path) -> PathBuf {
        match &self.link_target {
            Some(t) => t.clone(),
            None => root.join(&self.rel),
        }
    }
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
    pub(super) fn of(m: &std::fs::Metadata) -> Stamp {
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

    /// Size, mtime, ctime, inode and device: the fields a stamp compares.
    fn fields(&self) -> [u64; 5] {
        [
            self.size,
            self.mtime_ns as u64,
            self.ctime_ns as u64,
            self.ino,
            self.dev,
        ]
    }

    /// Whether the file changed so recently that the stamp cannot vouch for it.
    pub(super) fn racy(&self, now: SystemTime) -> bool {
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

/// Why a hook source cannot be listed, read or hashed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("the hook source `{}` cannot be read: {error}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("the hook source `{}` is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error("cannot read the hook source: `{}`: {error}", dir.display())]
    UnreadableDir {
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(
        "`{}` has a name that is not UTF-8; rename it or move it out of the source",
        path.display()
    )]
    NotUtf8 { path: PathBuf },
    /// A file of the source, or an entry of one of its directories.
    #[error("cannot read `{}`: {error}", path.display())]
    UnreadableFile {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("`{}` has no `hooks.json`, so it is not a hook source", root.display())]
    NoHooksJson { root: PathBuf },
    #[error(
        "`{rel}` is {:.1} MB; a hook source may not hold files over {} MB (snapshots copy \
         every file on each resync), so move it out of the source",
        megabytes(*size),
        MAX_FILE_BYTES / (1024 * 1024)
    )]
    TooLarge { rel: String, size: u64 },
}

fn megabytes(size: u64) -> f64 {
    size as f64 / (1024.0 * 1024.0)
}

/// Why an entry of a source is left out of it (a warning, not an error).
#[derive(Debug, thiserror::Error)]
enum LeftOut {
    #[error("a dangling symlink")]
    Dangling,
    #[error("a symlink to `{}`, outside the source", .0.display())]
    Outside(PathBuf),
    #[error("cannot read its target: {0}")]
    Unreadable(#[source] std::io::Error),
    #[error("a symlink to a directory (not followed)")]
    Directory,
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
///
/// The walk is a plain `read_dir` per directory (the entry type comes from
/// the directory itself, so only files are stat'ed) and one byte-wise sort
/// at the end: this runs on every SessionStart, where a per-directory sort
/// of path components cost more than the stat calls.
pub fn list_source(source: &Path) -> Result<Listing, SourceError> {
    let mut listing = walk(source)?;
    listing.sort();
    Ok(listing)
}

impl Listing {
    /// Files by `rel` (the hash order); directories parents first.
    fn sort(&mut self) {
        self.files
            .sort_unstable_by(|a, b| a.rel.as_bytes().cmp(b.rel.as_bytes()));
        // A path sorts after every prefix of it.
        self.dirs
            .sort_unstable_by(|a, b| a.rel.as_bytes().cmp(b.rel.as_bytes()));
        self.warnings.sort();
    }
}

/// [`list_source`] in the order the directories gave their entries.
fn walk(source: &Path) -> Result<Listing, SourceError> {
    let root = std::fs::canonicalize(source).map_err(|error| SourceError::Unreadable {
        path: source.to_path_buf(),
        error,
    })?;
    if !root.is_dir() {
        return Err(SourceError::NotADirectory { path: root });
    }
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut warnings = Vec::new();
    // (directory, its path relative to the root; empty for the root)
    let mut pending: Vec<(PathBuf, String)> = vec![(root.clone(), String::new())];
    while let Some((dir, dir_rel)) = pending.pop() {
        let unreadable_dir = |error| SourceError::UnreadableDir {
            dir: dir.clone(),
            error,
        };
        let entries = std::fs::read_dir(&dir).map_err(unreadable_dir)?;
        for entry in entries {
            let entry = entry.map_err(unreadable_dir)?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(SourceError::NotUtf8 { path: entry.path() });
            };
            let mut rel = String::with_capacity(dir_rel.len() + 1 + name.len());
            if !dir_rel.is_empty() {
                rel.push_str(&dir_rel);
                rel.push('/');
            }
            rel.push_str(name);
            let unreadable = |error| SourceError::UnreadableFile {
                path: dir.join(name),
                error,
            };
            let ft = entry.file_type().map_err(unreadable)?;
            if ft.is_dir() {
                if SKIPPED_DIRS.contains(&name) {
                    continue;
                }
                let m = entry.metadata().map_err(unreadable)?;
                dirs.push(SourceDir {
                    rel: rel.clone(),
                    mode: m.permissions().mode() & 0o777,
                });
                pending.push((entry.path(), rel));
            } else if ft.is_file() {
                let m = entry.metadata().map_err(unreadable)?;
                files.push(source_file(rel, None, &m)?);
            } else if ft.is_symlink() {
                match resolve_link(&entry.path(), &root) {
                    Ok((target, m)) => files.push(source_file(rel, Some(target), &m)?),
                    Err(why) => warnings.push(format!("left out `{rel}`: {why}")),
                }
            } else {
                warnings.push(format!(
                    "left out `{rel}`: not a regular file, directory or symlink"
                ));
            }
        }
    }
    if !files.iter().any(|f| f.rel == "hooks.json") {
        return Err(SourceError::NoHooksJson { root });
    }
    Ok(Listing {
        root,
        files,
        dirs,
        warnings,
    })
}

fn source_file(
    rel: String,
    link_target: Option<PathBuf>,
    m: &std::fs::Metadata,
) -> Result<SourceFile, SourceError> {
    if m.size() > MAX_FILE_BYTES {
        return Err(SourceError::TooLarge {
            rel,
            size: m.size(),
        });
    }
    let mode = m.permissions().mode() & 0o777;
    Ok(SourceFile {
        rel,
        link_target,
        mode,
        executable: mode & 0o111 != 0,
        stamp: Stamp::of(m),
    })
}

/// A symlink counts only as a regular file inside the source: following one
/// out would make the snapshot depend on files nobody reviews as hooks, and
/// following a directory link could loop.
fn resolve_link(link: &Path, root: &Path) -> Result<(PathBuf, std::fs::Metadata), LeftOut> {
    let target = std::fs::canonicalize(link).map_err(|_| LeftOut::Dangling)?;
    if !target.starts_with(root) {
        return Err(LeftOut::Outside(target));
    }
    let m = std::fs::metadata(&target).map_err(LeftOut::Unreadable)?;
    if !m.is_file() {
        return Err(LeftOut::Directory);
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
pub fn read_capped(path: &Path, rel: &str) -> Result<Vec<u8>, SourceError> {
    note_content_read();
    let unreadable = |error| SourceError::UnreadableFile {
        path: PathBuf::from(rel),
        error,
    };
    let f = std::fs::File::open(path).map_err(unreadable)?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(SourceError::TooLarge {
            rel: rel.to_owned(),
            size: bytes.len() as u64,
        });
    }
    Ok(bytes)
}

/// The hash of the hook source at `source` (see [`combine`]). With `cache`
/// (a file under the state dir, see [`cache_file`]), files whose stat is
/// unchanged since the last call are not read again; the cache is rewritten
/// only when it changed, and a cache that cannot be read or written only
/// costs time, never correctness.
///
/// The warm path (nothing changed since the cache was written) reads only
/// the cache's first line: when the listing's [`fingerprint`] (every name
/// and stamp) is the one stored there, so is the source hash. No file
/// content is read, no per-file row is parsed and nothing is sorted: the
/// fingerprint is taken in the order the directories gave their entries,
/// which only changes when a directory does (and then the fingerprint
/// differs, and the full check below runs).
pub fn source_hash(source: &Path, cache: Option<&Path>) -> Result<String, SourceError> {
    let mut listing = walk(source)?;
    let stamps = fingerprint(&listing.files);
    if let Some(hash) = cache.and_then(|p| warm_hash(p, &listing.root, &stamps)) {
        return Ok(hash);
    }
    listing.sort();
    let bytes = cache.and_then(|p| std::fs::read(p).ok());
    let stored = bytes
        .as_deref()
        .and_then(|b| StatCache::parse(b, &listing.root));
    let known: HashMap<&str, &CacheRow> = stored
        .as_ref()
        .map(|c| c.files.iter().map(|r| (&*r.0, r)).collect())
        .unwrap_or_default();
    let now = SystemTime::now();
    let mut digests = Vec::with_capacity(listing.files.len());
    let mut rows: Vec<CacheRow> = Vec::with_capacity(listing.files.len());
    let mut complete = true;
    for f in &listing.files {
        let cached = known
            .get(f.rel.as_str())
            .filter(|r| r.matches(f))
            .map(|r| r.sha256().to_owned());
        let digest = match cached {
            Some(d) => d,
            None => digest_bytes(&read_capped(&f.path(&listing.root), &f.rel)?),
        };
        if f.stamp.racy(now) {
            complete = false;
        } else {
            rows.push(CacheRow::of(f, &digest));
        }
        digests.push(digest);
    }
    let hash = combine(
        listing
            .files
            .iter()
            .zip(&digests)
            .map(|(f, d)| (f.rel.as_str(), f.executable, d.as_str())),
    );
    let fresh = StatCache {
        head: CacheHead {
            version: CACHE_VERSION,
            source: Cow::Owned(listing.root.to_string_lossy().into_owned()),
            hash: complete.then_some(Cow::Borrowed(hash.as_str())),
            stamps: complete.then_some(Cow::Borrowed(stamps.as_str())),
        },
        files: rows,
    };
    let changed = stored.as_ref().is_none_or(|old| *old != fresh);
    if changed
        && let Some(path) = cache
        && let Err(e) = fresh.write(path)
    {
        tracing::debug!("source-hash cache not written: {e}");
    }
    Ok(hash)
}

/// One file's whole-content digest, as [`whole_file_digests`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileDigest {
    /// The sha256 of every byte, hex.
    Sha256(String),
    /// Larger than the cap given; not read.
    TooLarge(u64),
    /// Could not be stat'ed or read.
    Unreadable(std::io::ErrorKind),
}

/// The digest of every byte of each `(rel, path)` in `files` (`rel` names
/// the file under `root` in the cache), streamed, so no file is held in
/// memory; a file larger than `cap` is not read. With `cache` (a stat cache
/// in the layout [`source_hash`] uses, for `root`), a file whose stamp is
/// unchanged since its digest was stored is not read again; a file that
/// changed during its read, or too recently for its stamp to vouch for it,
/// is not stored. A cache that cannot be read or written only costs time.
pub fn whole_file_digests(
    root: &Path,
    files: &[(String, PathBuf)],
    cap: u64,
    cache: Option<&Path>,
) -> Vec<FileDigest> {
    let bytes = cache.and_then(|p| {
        let mut b = Vec::new();
        std::fs::File::open(p)
            .and_then(|f| f.take(MAX_CACHE_BYTES).read_to_end(&mut b))
            .ok()?;
        Some(b)
    });
    let stored = bytes.as_deref().and_then(|b| StatCache::parse(b, root));
    let known: HashMap<&str, &CacheRow> = stored
        .as_ref()
        .map(|c| c.files.iter().map(|r| (&*r.0, r)).collect())
        .unwrap_or_default();
    let now = SystemTime::now();
    let mut entries: Vec<SourceFile> = Vec::new();
    let mut digests: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(files.len());
    for (rel, path) in files {
        let m = match std::fs::metadata(path) {
            Ok(m) if m.is_file() => m,
            Ok(_) => {
                out.push(FileDigest::Unreadable(std::io::ErrorKind::InvalidInput));
                continue;
            }
            Err(e) => {
                out.push(FileDigest::Unreadable(e.kind()));
                continue;
            }
        };
        if m.size() > cap {
            out.push(FileDigest::TooLarge(m.size()));
            continue;
        }
        let mode = m.permissions().mode() & 0o777;
        let f = SourceFile {
            rel: rel.clone(),
            link_target: Some(path.clone()),
            mode,
            executable: mode & 0o111 != 0,
            stamp: Stamp::of(&m),
        };
        if let Some(row) = known.get(rel.as_str()).filter(|r| r.matches(&f)) {
            let d = row.sha256().to_owned();
            out.push(FileDigest::Sha256(d.clone()));
            digests.push(d);
            entries.push(f);
            continue;
        }
        let digest = stream_digest(path, cap);
        if let FileDigest::Sha256(d) = &digest {
            let stable = std::fs::metadata(path).is_ok_and(|after| Stamp::of(&after) == f.stamp);
            if stable && !f.stamp.racy(now) {
                digests.push(d.clone());
                entries.push(f);
            }
        }
        out.push(digest);
    }
    let mut rows: Vec<CacheRow> = entries
        .iter()
        .zip(&digests)
        .map(|(f, d)| CacheRow::of(f, d))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let fresh = StatCache {
        head: CacheHead {
            version: CACHE_VERSION,
            source: Cow::Owned(root.to_string_lossy().into_owned()),
            hash: None,
            stamps: None,
        },
        files: rows,
    };
    if let Some(path) = cache
        && stored.as_ref().is_none_or(|old| *old != fresh)
        && let Err(e) = fresh.write(path)
    {
        tracing::debug!("whole-file digest cache not written: {e}");
    }
    out
}

/// A digest cache is small (a path and two short strings per file); one
/// larger than this is not read.
const MAX_CACHE_BYTES: u64 = 4 * 1024 * 1024;

/// The sha256 of every byte of `path`, read in pieces; more than `cap`
/// bytes (the file grew since it was stat'ed) is [`FileDigest::TooLarge`].
fn stream_digest(path: &Path, cap: u64) -> FileDigest {
    note_content_read();
    let mut h = Sha256::new();
    let read = std::fs::File::open(path).and_then(|f| {
        let mut limited = f.take(cap + 1);
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            let n = limited.read(&mut buf)?;
            if n == 0 {
                return Ok(total);
            }
            total += n as u64;
            h.update(&buf[..n]);
        }
    });
    match read {
        Ok(total) if total > cap => FileDigest::TooLarge(total),
        Ok(_) => FileDigest::Sha256(hex(&h.finalize())),
        Err(e) => FileDigest::Unreadable(e.kind()),
    }
}

/// Where the stat cache for `source` lives under the state dir: one small
/// file per source, so two sources never evict each other.
pub fn cache_file(state_dir: &Path, source: &Path) -> PathBuf {
    state_dir
        .join("source-hash")
        .join(format!("{}.json", crate::paths::snapshot_key(source)))
}

/// One file in the cache: `[rel, stamp, sha256]`, where the stamp is the
/// exec bit and the stat fields in hex (see [`StampKey`]): three strings,
/// borrowed from the file's bytes, so a warm check parses no numbers and
/// allocates nothing per file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct CacheRow<'a>(
    #[serde(borrow)] Cow<'a, str>,
    #[serde(borrow)] Cow<'a, str>,
    #[serde(borrow)] Cow<'a, str>,
);

impl<'a> CacheRow<'a> {
    fn of(f: &'a SourceFile, sha256: &str) -> CacheRow<'a> {
        CacheRow(
            Cow::Borrowed(&f.rel),
            Cow::Owned(StampKey::of(f).as_str().to_owned()),
            Cow::Owned(sha256.to_owned()),
        )
    }

    /// Whether `f` is this file, unchanged since its digest was taken.
    fn matches(&self, f: &SourceFile) -> bool {
        self.0 == f.rel.as_str() && self.1 == StampKey::of(f).as_str()
    }

    fn sha256(&self) -> &str {
        &self.2
    }
}

/// `x` or `-` for the exec bit, then size, mtime, ctime, inode and device
/// in lowercase hex, dot-separated: built on the stack, compared as text.
pub(super) struct StampKey {
    buf: [u8; 6 + 5 * 16],
    len: usize,
}

impl StampKey {
    fn of(f: &SourceFile) -> StampKey {
        StampKey::new(f.stamp, f.executable)
    }

    pub(super) fn new(s: Stamp, executable: bool) -> StampKey {
        let mut k = StampKey {
            buf: [0; 6 + 5 * 16],
            len: 0,
        };
        k.push(if executable { b'x' } else { b'-' });
        for (i, n) in s.fields().into_iter().enumerate() {
            if i > 0 {
                k.push(b'.');
            }
            k.push_hex(n);
        }
        k
    }

    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    fn push_hex(&mut self, n: u64) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let nibbles = (16 - (n.leading_zeros() / 4) as usize).max(1);
        for i in (0..nibbles).rev() {
            self.push(DIGITS[((n >> (i * 4)) & 0xf) as usize]);
        }
    }

    pub(super) fn as_str(&self) -> &str {
        // Only ASCII was pushed.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

/// One digest of every file's name and stamp, in the order given: equal
/// for two listings in one order exactly when they have the same files,
/// each with the same exec bit and stat fields.
fn fingerprint(files: &[SourceFile]) -> String {
    let mut h = Sha256::new();
    for f in files {
        // The name (NUL-free, so NUL ends it), then the exec bit and the
        // stat fields as fixed-width bytes: nothing to format per file.
        let mut fixed = [0u8; 1 + 5 * 8];
        fixed[0] = u8::from(f.executable);
        for (i, n) in f.stamp.fields().into_iter().enumerate() {
            fixed[1 + i * 8..9 + i * 8].copy_from_slice(&n.to_le_bytes());
        }
        h.update(f.rel.as_bytes());
        h.update([0]);
        h.update(fixed);
    }
    hex(&h.finalize())
}

/// The stored source hash, when the cache at `path` is for `root`, holds
/// one, and was written for a listing with this [`fingerprint`]. Reads only
/// the cache's first line.
fn warm_hash(path: &Path, root: &Path, stamps: &str) -> Option<String> {
    use std::io::BufRead;
    let mut line = Vec::with_capacity(1024);
    std::io::BufReader::with_capacity(4096, std::fs::File::open(path).ok()?)
        .take(MAX_HEAD_BYTES)
        .read_until(b'\n', &mut line)
        .ok()?;
    let head = CacheHead::parse(&line, root)?;
    (head.stamps? == stamps).then(|| head.hash.map(Cow::into_owned))?
}

/// The cache's first line is at most this long (a path and two digests).
const MAX_HEAD_BYTES: u64 = 64 * 1024;

/// The stat cache of one source, two lines of JSON: the head, then every
/// file that was not racy when the cache was written, in listing order.
#[derive(Debug, PartialEq, Eq)]
struct StatCache<'a> {
    head: CacheHead<'a>,
    files: Vec<CacheRow<'a>>,
}

/// The first line: what a warm check reads. `hash` (the source hash) and
/// `stamps` (the listing's [`fingerprint`]) are there only when every file
/// of the source is in the rows.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct CacheHead<'a> {
    version: u32,
    #[serde(borrow)]
    source: Cow<'a, str>,
    #[serde(borrow)]
    hash: Option<Cow<'a, str>>,
    #[serde(borrow)]
    stamps: Option<Cow<'a, str>>,
}

impl<'a> CacheHead<'a> {
    /// The head in `line` when it is this version's and for `root` (a key
    /// collision must not leak digests).
    fn parse(line: &'a [u8], root: &Path) -> Option<CacheHead<'a>> {
        let h: CacheHead = serde_json::from_slice(line).ok()?;
        (h.version == CACHE_VERSION && Path::new(&*h.source) == root).then_some(h)
    }
}

impl<'a> StatCache<'a> {
    /// The cache in `bytes` for `root`, or `None` when corrupt, from another
    /// version or for another source.
    fn parse(bytes: &'a [u8], root: &Path) -> Option<StatCache<'a>> {
        let at = bytes.iter().position(|b| *b == b'\n')?;
        let head = CacheHead::parse(&bytes[..at], root)?;
        let files = serde_json::from_slice(&bytes[at + 1..]).ok()?;
        Some(StatCache { head, files })
    }

    /// Atomic replace, so a concurrent reader sees the old or the new cache.
    fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(&self.head).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        serde_json::to_writer(&mut bytes, &self.files).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        crate::paths::write_cache_file(path, &bytes)
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
        assert_eq!(
            l.warnings,
            [
                "left out `dirlink`: a symlink to a directory (not followed)".to_owned(),
                format!(
                    "left out `out`: a symlink to `{}`, outside the source",
                    std::fs::canonicalize(outside.path().join("secret"))
                        .unwrap()
                        .display()
                ),
            ]
        );

        let f = std::fs::File::create(t.path().join("big.bin")).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = source_hash(t.path(), None).unwrap_err().to_string();
        assert_eq!(
            e,
            "`big.bin` is 10.0 MB; a hook source may not hold files over 10 MB (snapshots copy \
             every file on each resync), so move it out of the source"
        );

        std::fs::remove_file(t.path().join("big.bin")).unwrap();
        std::fs::remove_file(t.path().join("hooks.json")).unwrap();
        assert!(
            source_hash(t.path(), None)
                .unwrap_err()
                .to_string()
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

    /// Whole-file digests: every byte counts, a file over the cap is not
    /// read, and a warm call with the stat cache reads nothing.
    #[test]
    fn whole_file_digests_hash_everything_and_cache_by_stamp() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        write(&root, "a.sh", "echo a", 0o755);
        write(&root, "big.bin", "", 0o644);
        std::fs::File::options()
            .write(true)
            .open(root.join("big.bin"))
            .unwrap()
            .set_len(101)
            .unwrap();
        let files = vec![
            ("a.sh".to_owned(), root.join("a.sh")),
            ("big.bin".to_owned(), root.join("big.bin")),
            ("gone".to_owned(), root.join("gone")),
        ];
        let cache = root.join("cache/pins.json");
        std::thread::sleep(RACY_WINDOW + Duration::from_millis(100));
        let r0 = content_reads();
        let cold = whole_file_digests(&root, &files, 100, Some(&cache));
        assert_eq!(content_reads() - r0, 1);
        assert_eq!(
            cold,
            [
                FileDigest::Sha256(digest_bytes(b"echo a")),
                FileDigest::TooLarge(101),
                FileDigest::Unreadable(std::io::ErrorKind::NotFound),
            ]
        );
        let r1 = content_reads();
        assert_eq!(whole_file_digests(&root, &files, 100, Some(&cache)), cold);
        assert_eq!(content_reads() - r1, 0, "a warm call must read nothing");
        // Same size, new bytes: the stamp moved, so it is read again.
        write(&root, "a.sh", "echo b", 0o755);
        let warm = whole_file_digests(&root, &files, 100, Some(&cache));
        assert_eq!(warm[0], FileDigest::Sha256(digest_bytes(b"echo b")));
        // A cache for another root is never used.
        let other = whole_file_digests(&root.join("x"), &files[..1], 100, Some(&cache));
        assert_eq!(other[0], FileDigest::Sha256(digest_bytes(b"echo b")));
    }

    #[test]
    fn stamp_keys_are_hex_and_cover_every_field() {
        let t = source();
        let l = list_source(t.path()).unwrap();
        let f = &l.files[1];
        let k = StampKey::of(f);
        let s = f.stamp;
        assert_eq!(
            k.as_str(),
            format!(
                "x{:x}.{:x}.{:x}.{:x}.{:x}",
                s.size, s.mtime_ns as u64, s.ctime_ns as u64, s.ino, s.dev
            )
        );
        let mut zero = f.clone();
        zero.executable = false;
        zero.stamp = Stamp {
            size: 0,
            mtime_ns: -1,
            ctime_ns: 0,
            ino: u64::MAX,
            dev: 255,
        };
        assert_eq!(
            StampKey::of(&zero).as_str(),
            "-0.ffffffffffffffff.0.ffffffffffffffff.ff"
        );
    }

    /// A cache in the old layout (version 1, nested objects) is ignored and
    /// replaced, never misread.
    #[test]
    fn an_old_cache_is_rewritten() {
        let t = source();
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = cache_dir.path().join("c.json");
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::write(
            &cache,
            serde_json::to_vec(&serde_json::json!({
                "version": 1,
                "source": root,
                "entries": {"hooks.json": {"stamp": {"size": 2, "mtime_ns": 0, "ctime_ns": 0, "ino": 0, "dev": 0}, "sha256": "0"}}
            }))
            .unwrap(),
        )
        .unwrap();
        let h = source_hash(t.path(), Some(&cache)).unwrap();
        assert_eq!(h, source_hash(t.path(), None).unwrap());
        let bytes = std::fs::read(&cache).unwrap();
        let head = bytes.split(|b| *b == b'\n').next().unwrap();
        let v: serde_json::Value = serde_json::from_slice(head).unwrap();
        assert_eq!(v["version"], CACHE_VERSION);
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
