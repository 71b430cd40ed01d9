//! The persistent import index: every file of the project (walk order,
//! .gitignore honoured), every directory's mtime, and for each source file
//! its mtime, size and the imports [`extract`] found. It lives in the
//! provider's cache directory, one file per project root.
//!
//! A consult reads only the files of the edited file's language (the
//! others are read by the first consult that needs them). With a saved
//! index it re-checks only what can be stale: each directory's mtime
//! (files came or went: re-list that directory), the stamps of that
//! language's files (re-read the changed ones), and the
//! `.gitignore`/`Cargo.toml` files the rest depends on (a changed ignore
//! rule or crate name rebuilds, reusing every unchanged file's imports). An
//! mtime within [`RACY_NS`] of the scan is not trusted, so a write in the
//! same clock tick as a read is never missed.
//!
//! The file is written to a temporary file in the same directory and
//! renamed over the old one, so concurrent hooks never see half an index; a
//! file that fails its checksum, version or root check is rebuilt, never an
//! error. Its size and the number of indexes kept are bounded.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::extract::{self, Lang, RustNames};
use super::walk::{self, Scope, Walked, join, mtime_of, nanos, walk_order};

/// Bumped whenever the file layout or what `extract` records changes.
pub const VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"KXIMPIDX";
/// Magic, version, checksum of the rest.
const HEADER: usize = 20;
/// Modification times this close to the scan may hide a later write in
/// the same tick (coarse filesystems tick in seconds): not trusted.
pub const RACY_NS: i64 = 2_000_000_000;
/// A stamp or mtime that never matches: re-check next time.
const UNKNOWN: i64 = i64::MIN;
/// Larger indexes are used but not saved.
pub const MAX_INDEX_BYTES: usize = 64 << 20;
/// Index files kept in the cache directory (one per project).
pub const MAX_INDEXES: usize = 16;
const MAX_CRATE_NAMES: usize = 64;

/// What the index knows about a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Listed only (related tests go by name).
    Plain,
    Source(Lang),
    /// Its rules shape the walk: a change rebuilds.
    GitIgnore,
    /// Its package name is a crate `use` paths may start with.
    CargoToml,
}

impl Kind {
    pub fn of(rel: &str) -> Kind {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        match name {
            ".gitignore" => Kind::GitIgnore,
            "Cargo.toml" => Kind::CargoToml,
            _ => Lang::of(name).map_or(Kind::Plain, Kind::Source),
        }
    }

    fn code(self) -> u8 {
        match self {
            Kind::Plain => 0,
            Kind::Source(Lang::Rust) => 1,
            Kind::Source(Lang::Python) => 2,
            Kind::Source(Lang::Js) => 3,
            Kind::Source(Lang::Go) => 4,
            Kind::GitIgnore => 5,
            Kind::CargoToml => 6,
        }
    }

    fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            0 => Kind::Plain,
            1 => Kind::Source(Lang::Rust),
            2 => Kind::Source(Lang::Python),
            3 => Kind::Source(Lang::Js),
            4 => Kind::Source(Lang::Go),
            5 => Kind::GitIgnore,
            6 => Kind::CargoToml,
            _ => return None,
        })
    }

    /// Whether the file's content matters (so its stamp is kept).
    fn tracked(self) -> bool {
        self != Kind::Plain
    }
}

/// A file's modification time and size when it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    mtime: i64,
    size: u64,
}

impl Stamp {
    const UNKNOWN: Stamp = Stamp {
        mtime: UNKNOWN,
        size: 0,
    };

    fn of(meta: &std::fs::Metadata, now: i64) -> Stamp {
        let mtime = meta.modified().map(nanos).unwrap_or(UNKNOWN);
        Stamp {
            mtime: trusted(mtime, now),
            size: meta.len(),
        }
    }

    fn matches(&self, meta: &std::fs::Metadata) -> bool {
        self.mtime != UNKNOWN
            && meta.modified().ok().map(nanos) == Some(self.mtime)
            && meta.len() == self.size
    }
}

/// `mtime`, or [`UNKNOWN`] when it is too close to `now` to trust.
fn trusted(mtime: i64, now: i64) -> i64 {
    if mtime >= now.saturating_sub(RACY_NS) {
        UNKNOWN
    } else {
        mtime
    }
}

/// A stretch of [`Index`]'s text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    start: u32,
    len: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRec {
    pub rel: Span,
    pub kind: Kind,
    pub stamp: Stamp,
    /// The imports, one per line.
    pub imports: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirRec {
    pub rel: Span,
    pub mtime: i64,
}

/// What an index was built for: a saved one built for anything else is
/// not reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub max_files: usize,
    pub max_file_bytes: u64,
}

/// Paths and import lists live end to end in one string, so loading an
/// index allocates a handful of buffers rather than one per entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// The project root's path, as bytes.
    key: Vec<u8>,
    settings: Settings,
    /// `.git/info/exclude`'s mtime (its rules shape the walk).
    exclude_mtime: i64,
    /// The walk stopped at `max_files`.
    pub truncated: bool,
    pub crate_names: Vec<String>,
    text: String,
    /// In walk order; the root first.
    pub dirs: Vec<DirRec>,
    /// In walk order.
    pub files: Vec<FileRec>,
}

/// The index must be rebuilt (reusing unchanged files' imports).
#[derive(Debug)]
struct Rebuild;

/// How a consult got its index, for tests and the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// No usable saved index: walked the tree, read the language's files.
    Built,
    /// A saved index had to be rebuilt (ignore rules or crate names
    /// changed), reusing the imports of unchanged files.
    Rebuilt,
    /// A saved index, with what changed re-read.
    Refreshed,
    /// A saved index, unchanged.
    Loaded,
}

/// The index file for `root` in `cache_dir`.
pub fn index_file(cache_dir: &Path, root: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    cache_dir.join(format!("{}.idx", crate::base::text::hex(&digest[..8])))
}

/// The index of `root`, up to date for a lookup of a `lang` file: the
/// saved one refreshed, else a new one; saved when it changed.
pub fn fresh(
    root: &Path,
    cache_dir: Option<&Path>,
    settings: &Settings,
    lang: Option<Lang>,
) -> (Index, Source) {
    let key = root.as_os_str().as_encoded_bytes().to_vec();
    let file = cache_dir.map(|d| index_file(d, root));
    let saved = file
        .as_deref()
        .and_then(load)
        .filter(|i| i.key == key && i.settings == *settings);
    let (index, source) = match saved {
        Some(mut idx) => match idx.refresh(root, lang) {
            Ok(false) => (idx, Source::Loaded),
            Ok(true) => (idx, Source::Refreshed),
            Err(Rebuild) => (build(root, settings, Some(&idx), lang), Source::Rebuilt),
        },
        None => (build(root, settings, None, lang), Source::Built),
    };
    if source != Source::Loaded
        && let (Some(dir), Some(file)) = (cache_dir, &file)
        && let Err(e) = save(&index, dir, file)
    {
        tracing::debug!("impact index not saved to `{}`: {e}", file.display());
    }
    (index, source)
}

fn now() -> i64 {
    nanos(std::time::SystemTime::now())
}

/// Walks `root` and reads its files of `lang`; `previous` lends the
/// imports of files whose stamp has not changed.
pub fn build(
    root: &Path,
    settings: &Settings,
    previous: Option<&Index>,
    lang: Option<Lang>,
) -> Index {
    let now = now();
    let walked = walk::walk_root(root, settings.max_files);
    let mut idx = Index {
        key: root.as_os_str().as_encoded_bytes().to_vec(),
        settings: settings.clone(),
        exclude_mtime: exclude_mtime(root, now),
        truncated: walked.truncated,
        crate_names: Vec::new(),
        text: String::with_capacity(walked.files.len() * 64),
        dirs: Vec::with_capacity(walked.dirs.len()),
        files: Vec::with_capacity(walked.files.len()),
    };
    for d in walked.dirs {
        let rel = idx.push(&d.rel);
        idx.dirs.push(DirRec {
            rel,
            mtime: d.mtime.map_or(UNKNOWN, |m| trusted(m, now)),
        });
    }
    for rel in walked.files {
        idx.add_file(&rel, &mut Vec::new());
    }
    idx.crate_names = crate_names(root, &idx, &[]);
    // Only the files of the language looked up are read now. The others
    // keep what `previous` knew of them (their stamps are checked when a
    // lookup needs them) or wait, unread, for the first such lookup.
    let (todo, later): (Vec<usize>, Vec<usize>) = (0..idx.files.len())
        .filter(|i| idx.files[*i].kind.tracked())
        .partition(|i| match idx.files[*i].kind {
            Kind::Source(l) => Some(l) == lang,
            _ => true,
        });
    idx.carry(&later, previous);
    idx.fill(root, &todo, now, previous);
    idx
}

fn exclude_mtime(root: &Path, now: i64) -> i64 {
    mtime_of(&root.join(".git/info/exclude")).map_or(0, |m| trusted(m, now))
}

/// The package names of the Cargo.toml files (but those `removed`), as
/// crate names.
fn crate_names(root: &Path, idx: &Index, removed: &[bool]) -> Vec<String> {
    let mut names: Vec<String> = idx
        .files
        .iter()
        .enumerate()
        .filter(|(i, f)| f.kind == Kind::CargoToml && !removed.get(*i).copied().unwrap_or(false))
        .take(MAX_CRATE_NAMES * 4)
        .filter_map(|(_, f)| package_name(&root.join(idx.str(f.rel))))
        .collect();
    names.sort_unstable();
    names.dedup();
    names.truncate(MAX_CRATE_NAMES);
    names
}

/// `[package] name` of a Cargo.toml, `-` turned into `_`.
pub fn package_name(cargo_toml: &Path) -> Option<String> {
    let text = std::fs::read_to_string(cargo_toml).ok()?;
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    let name = doc.get("package")?.get("name")?.as_str()?.replace('-', "_");
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .then_some(name)
}

/// What reading one file gave.
enum Got {
    /// Its imports, extracted now.
    Fresh(Stamp, Vec<String>),
    /// Unchanged since `previous` read it: its imports there.
    Reused(Stamp, usize),
    /// Only its stamp (not a source, too big, unreadable, not UTF-8).
    Stamp(Stamp),
}

fn str_at(text: &str, s: Span) -> &str {
    text.get(s.start as usize..s.start as usize + s.len as usize)
        .unwrap_or("")
}

impl Index {
    /// The text of a span.
    pub fn str(&self, s: Span) -> &str {
        str_at(&self.text, s)
    }

    /// A file's path, relative to the root and `/`-separated.
    pub fn rel(&self, f: &FileRec) -> &str {
        self.str(f.rel)
    }

    /// The import strings of `f`.
    pub fn imports<'a>(&'a self, f: &FileRec) -> impl Iterator<Item = &'a str> + 'a {
        self.str(f.imports).split('\n').filter(|s| !s.is_empty())
    }

    fn push(&mut self, s: &str) -> Span {
        let start = self.text.len() as u32;
        self.text.push_str(s);
        Span {
            start,
            len: s.len() as u32,
        }
    }

    /// Gives the source files at `later` the stamp and imports `previous`
    /// recorded for them, unchecked: a lookup of their language checks the
    /// stamp before it trusts the imports.
    fn carry(&mut self, later: &[usize], previous: Option<&Index>) {
        let Some(prev) = previous else {
            return;
        };
        let prior: HashMap<&str, &FileRec> = prev
            .files
            .iter()
            .filter(|f| matches!(f.kind, Kind::Source(_)))
            .map(|f| (prev.rel(f), f))
            .collect();
        let rust_reusable = prev.crate_names == self.crate_names;
        for &i in later {
            let Kind::Source(lang) = self.files[i].kind else {
                continue;
            };
            let Some(old) = prior.get(self.rel(&self.files[i])).copied() else {
                continue;
            };
            if old.kind == self.files[i].kind && (lang != Lang::Rust || rust_reusable) {
                let imports = self.push(prev.str(old.imports));
                self.files[i].stamp = old.stamp;
                self.files[i].imports = imports;
            }
        }
    }

    /// Reads the files at `todo` (stamps and imports), in parallel.
    fn fill(&mut self, root: &Path, todo: &[usize], now: i64, previous: Option<&Index>) {
        if todo.is_empty() {
            return;
        }
        let names = RustNames::new(&self.crate_names);
        let max_bytes = self.settings.max_file_bytes;
        let rust_reusable = previous.is_some_and(|p| p.crate_names == self.crate_names);
        let prior: HashMap<&str, usize> = previous
            .map(|p| {
                p.files
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| matches!(f.kind, Kind::Source(_)))
                    .map(|(i, f)| (p.rel(f), i))
                    .collect()
            })
            .unwrap_or_default();
        let this = &*self;
        let scratch = || (Vec::new(), PathBuf::new());
        let reads = par_map_with(todo, scratch, |(buf, path), &i| {
            let f = &this.files[i];
            let rel = this.rel(f);
            at(path, root, rel);
            let Kind::Source(lang) = f.kind else {
                return Got::Stamp(
                    std::fs::metadata(&*path).map_or(Stamp::UNKNOWN, |m| Stamp::of(&m, now)),
                );
            };
            if let (Some(prev), Some(&j)) = (previous, prior.get(rel))
                && (lang != Lang::Rust || rust_reusable)
                && let Ok(meta) = std::fs::metadata(&*path)
                && prev.files[j].stamp.matches(&meta)
            {
                return Got::Reused(Stamp::of(&meta, now), j);
            }
            read_source(path, lang, rel, max_bytes, now, &names, buf)
        });
        let more: usize = reads
            .iter()
            .map(|g| match g {
                Got::Fresh(_, imports) => imports.iter().map(|s| s.len() + 1).sum(),
                Got::Reused(_, j) => previous.map_or(0, |p| p.files[*j].imports.len as usize),
                Got::Stamp(_) => 0,
            })
            .sum();
        self.text.reserve(more);
        for (&i, got) in todo.iter().zip(reads) {
            let (stamp, imports) = match got {
                Got::Fresh(stamp, imports) => (stamp, self.push(&imports.join("\n"))),
                Got::Reused(stamp, j) => {
                    let text = previous.map_or("", |p| p.str(p.files[j].imports));
                    (stamp, self.push(text))
                }
                Got::Stamp(stamp) => (stamp, Span::default()),
            };
            self.files[i].stamp = stamp;
            self.files[i].imports = imports;
        }
    }

    /// Brings a saved index up to date for a lookup of a `lang` file.
    /// `Ok(true)` when something changed.
    fn refresh(&mut self, root: &Path, lang: Option<Lang>) -> Result<bool, Rebuild> {
        let now = now();
        if exclude_mtime(root, now) != self.exclude_mtime || self.exclude_mtime == UNKNOWN {
            return Err(Rebuild);
        }
        let this = &*self;
        let dir_mtimes: Vec<Option<i64>> = par_map_with(&self.dirs, PathBuf::new, |path, d| {
            at(path, root, this.str(d.rel));
            mtime_of(path)
        });
        let changed_dirs: Vec<usize> = (0..self.dirs.len())
            .filter(|&i| self.dirs[i].mtime == UNKNOWN || dir_mtimes[i] != Some(self.dirs[i].mtime))
            .collect();
        let check: Vec<usize> = (0..self.files.len())
            .filter(|&i| match self.files[i].kind {
                Kind::Plain => false,
                Kind::Source(l) => Some(l) == lang,
                Kind::GitIgnore | Kind::CargoToml => true,
            })
            .collect();
        let mut todo = this.stale(root, &check);
        if todo.iter().any(|&i| self.files[i].kind == Kind::GitIgnore) {
            return Err(Rebuild);
        }
        if changed_dirs.is_empty() && todo.is_empty() {
            return Ok(false);
        }
        let mut removed = vec![false; self.files.len()];
        let mut dir_removed = vec![false; self.dirs.len()];
        let before = (self.files.len(), self.dirs.len());
        if !changed_dirs.is_empty() {
            if self.truncated {
                return Err(Rebuild);
            }
            self.patch(
                root,
                &changed_dirs,
                &dir_mtimes,
                now,
                (&mut removed, &mut dir_removed),
                &mut todo,
            )?;
            let kept = self.files.len() - removed.iter().filter(|r| **r).count();
            if kept > self.settings.max_files {
                return Err(Rebuild);
            }
        }
        let cargo = |i: usize| self.files[i].kind == Kind::CargoToml;
        let cargo_touched =
            todo.iter().any(|&i| cargo(i)) || (0..before.0).any(|i| removed[i] && cargo(i));
        todo.retain(|&i| !removed[i]);
        if cargo_touched && crate_names(root, self, &removed) != self.crate_names {
            return Err(Rebuild);
        }
        self.fill(root, &todo, now, None);
        let added = self.files.len() > before.0 || self.dirs.len() > before.1;
        if removed.iter().any(|r| *r) {
            let mut keep = removed.iter().map(|r| !r);
            self.files.retain(|_| keep.next().unwrap_or(true));
        }
        if dir_removed.iter().any(|r| *r) {
            let mut keep = dir_removed.iter().map(|r| !r);
            self.dirs.retain(|_| keep.next().unwrap_or(true));
        }
        if added {
            let text = &self.text;
            self.files
                .sort_by(|a, b| walk_order(str_at(text, a.rel), str_at(text, b.rel)));
            self.dirs
                .sort_by(|a, b| walk_order(str_at(text, a.rel), str_at(text, b.rel)));
        }
        Ok(true)
    }

    /// Re-lists the directories whose mtime changed: drops what is gone,
    /// walks what is new (its tracked files queued on `todo`).
    fn patch(
        &mut self,
        root: &Path,
        changed: &[usize],
        mtimes: &[Option<i64>],
        now: i64,
        (removed, dir_removed): (&mut Vec<bool>, &mut Vec<bool>),
        todo: &mut Vec<usize>,
    ) -> Result<(), Rebuild> {
        // The entries of each changed directory, by name, as they were.
        let text = self.text.clone();
        let changed_rels: HashSet<&str> = changed
            .iter()
            .map(|&i| str_at(&text, self.dirs[i].rel))
            .collect();
        let mut child_files: HashMap<&str, Vec<(&str, usize)>> = HashMap::new();
        for (i, f) in self.files.iter().enumerate() {
            let (parent, name) = split_rel(str_at(&text, f.rel));
            if changed_rels.contains(parent) {
                child_files.entry(parent).or_default().push((name, i));
            }
        }
        let mut child_dirs: HashMap<&str, Vec<(&str, usize)>> = HashMap::new();
        for (i, d) in self.dirs.iter().enumerate().skip(1) {
            let (parent, name) = split_rel(str_at(&text, d.rel));
            if changed_rels.contains(parent) {
                child_dirs.entry(parent).or_default().push((name, i));
            }
        }
        for &di in changed {
            if dir_removed[di] {
                continue;
            }
            let rel = str_at(&text, self.dirs[di].rel).to_owned();
            let listing = match mtimes[di] {
                Some(_) => {
                    let mut scope = Scope::for_dir(root, &rel);
                    walk::list(root, &rel, &mut scope).map(|l| (l, scope))
                }
                None => None,
            };
            let Some((listing, mut scope)) = listing else {
                if rel.is_empty() {
                    return Err(Rebuild);
                }
                self.remove_subtree(&rel, removed, dir_removed);
                continue;
            };
            let old_files: HashMap<&str, usize> = child_files
                .get(rel.as_str())
                .into_iter()
                .flatten()
                .filter(|(_, i)| !removed[*i])
                .map(|(n, i)| (*n, *i))
                .collect();
            let new_files: HashSet<&str> = listing.files.iter().map(String::as_str).collect();
            for (name, &i) in &old_files {
                if !new_files.contains(name) {
                    if self.files[i].kind == Kind::GitIgnore {
                        return Err(Rebuild);
                    }
                    removed[i] = true;
                }
            }
            for name in &listing.files {
                if !old_files.contains_key(name.as_str()) {
                    if name == ".gitignore" {
                        return Err(Rebuild);
                    }
                    self.add_file(&join(&rel, name), todo);
                }
            }
            let old_dirs: HashMap<&str, usize> = child_dirs
                .get(rel.as_str())
                .into_iter()
                .flatten()
                .filter(|(_, j)| !dir_removed[*j])
                .map(|(n, j)| (*n, *j))
                .collect();
            let new_dirs: HashSet<&str> = listing.dirs.iter().map(String::as_str).collect();
            for (name, _) in old_dirs.iter().filter(|(n, _)| !new_dirs.contains(*n)) {
                self.remove_subtree(&join(&rel, name), removed, dir_removed);
            }
            for name in listing
                .dirs
                .iter()
                .filter(|n| !old_dirs.contains_key(n.as_str()))
            {
                let mut walked = Walked::default();
                walk::walk(
                    root,
                    &join(&rel, name),
                    &mut scope,
                    self.settings.max_files,
                    &mut walked,
                );
                for d in walked.dirs {
                    let span = self.push(&d.rel);
                    self.dirs.push(DirRec {
                        rel: span,
                        mtime: d.mtime.map_or(UNKNOWN, |m| trusted(m, now)),
                    });
                    dir_removed.push(false);
                }
                for f in walked.files {
                    self.add_file(&f, todo);
                }
            }
            removed.resize(self.files.len(), false);
            self.dirs[di].mtime = mtimes[di].map_or(UNKNOWN, |m| trusted(m, now));
        }
        Ok(())
    }

    /// Which of the files at `check` changed since they were read.
    fn stale(&self, root: &Path, check: &[usize]) -> Vec<usize> {
        let changed = par_map_with(check, PathBuf::new, |path, &i| {
            let f = &self.files[i];
            at(path, root, self.rel(f));
            std::fs::symlink_metadata(&*path).map_or(true, |m| !f.stamp.matches(&m))
        });
        check
            .iter()
            .zip(changed)
            .filter(|(_, changed)| *changed)
            .map(|(i, _)| *i)
            .collect()
    }

    fn add_file(&mut self, rel: &str, todo: &mut Vec<usize>) {
        let kind = Kind::of(rel);
        if kind.tracked() {
            todo.push(self.files.len());
        }
        let rel = self.push(rel);
        self.files.push(FileRec {
            rel,
            kind,
            stamp: Stamp::UNKNOWN,
            imports: Span::default(),
        });
    }

    fn remove_subtree(&self, dir: &str, removed: &mut [bool], dir_removed: &mut [bool]) {
        let inside = |rel: &str| {
            rel.strip_prefix(dir)
                .is_some_and(|r| r.is_empty() || r.starts_with('/'))
        };
        for (i, d) in self.dirs.iter().enumerate() {
            if i < dir_removed.len() && inside(self.str(d.rel)) {
                dir_removed[i] = true;
            }
        }
        for (i, f) in self.files.iter().enumerate() {
            if i < removed.len() && inside(self.rel(f)) {
                removed[i] = true;
            }
        }
    }
}

/// `dir/name` → (`dir`, `name`); a top-level name has the root, `""`.
fn split_rel(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

/// `root/rel` in `path`, reusing its buffer: no allocation per file.
fn at(path: &mut PathBuf, root: &Path, rel: &str) {
    path.clear();
    path.push(root);
    if !rel.is_empty() {
        path.push(rel);
    }
}

fn read_source(
    path: &Path,
    lang: Lang,
    rel: &str,
    max_bytes: u64,
    now: i64,
    names: &RustNames,
    buf: &mut Vec<u8>,
) -> Got {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Got::Stamp(Stamp::UNKNOWN);
    };
    let Ok(meta) = file.metadata() else {
        return Got::Stamp(Stamp::UNKNOWN);
    };
    let stamp = Stamp::of(&meta, now);
    if meta.len() > max_bytes {
        return Got::Stamp(stamp);
    }
    // Exactly the size the stamp records: a file that shrank meanwhile
    // fails here and is read again next time (its stamp will differ).
    buf.clear();
    buf.resize(meta.len() as usize, 0);
    if file.read_exact(buf).is_err() {
        return Got::Stamp(Stamp::UNKNOWN);
    }
    match std::str::from_utf8(buf) {
        Ok(text) => Got::Fresh(stamp, extract::extract(lang, rel, text, names)),
        Err(_) => Got::Stamp(stamp),
    }
}

/// `f` over `items` on up to four threads, results in order.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    par_map_with(items, || (), |(), item| f(item))
}

/// [`par_map`] with per-thread scratch state from `init`, for many small
/// items (taken 64 at a time; a short list is mapped on this thread).
pub fn par_map_with<T: Sync, S, R: Send>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    par_chunks(items, 64, init, f)
}

/// `f` over `items`, one item at a time on up to four threads: for a few
/// large items (whole subtrees), results in order.
pub fn par_map_each<T: Sync, S, R: Send>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    par_chunks(items, 1, init, f)
}

fn par_chunks<T: Sync, S, R: Send>(
    items: &[T],
    chunk: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4);
    if threads <= 1 || items.len() <= chunk {
        let mut state = init();
        return items.iter().map(|i| f(&mut state, i)).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut state = init();
        let mut done = Vec::new();
        loop {
            let n = next.fetch_add(1, Ordering::Relaxed);
            let start = n * chunk;
            if start >= items.len() {
                break;
            }
            let end = (start + chunk).min(items.len());
            let out: Vec<R> = items[start..end].iter().map(|i| f(&mut state, i)).collect();
            done.push((n, out));
        }
        done
    };
    let mut parts = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut all = work();
        for h in helpers {
            match h.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    parts.sort_unstable_by_key(|(n, _)| *n);
    parts.into_iter().flat_map(|(_, r)| r).collect()
}

// ---- the file ---------------------------------------------------------

/// A saved index, or `None` when it is missing, too big, or not one this
/// build wrote intact.
pub fn load(file: &Path) -> Option<Index> {
    let mut f = std::fs::File::open(file).ok()?;
    let len = f.metadata().ok()?.len();
    if len > MAX_INDEX_BYTES as u64 {
        return None;
    }
    let mut bytes = Vec::with_capacity(len as usize);
    f.read_to_end(&mut bytes).ok()?;
    decode(bytes)
}

fn save(index: &Index, dir: &Path, file: &Path) -> std::io::Result<()> {
    let bytes = encode(index);
    if bytes.len() > MAX_INDEX_BYTES {
        return Err(std::io::Error::other(format!(
            "{} bytes is over the {MAX_INDEX_BYTES}-byte bound",
            bytes.len()
        )));
    }
    crate::paths::write_cache_file(file, &bytes)?;
    prune(dir);
    Ok(())
}

/// Keeps the newest [`MAX_INDEXES`] indexes, and drops temporary files a
/// crashed writer left more than an hour ago.
fn prune(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let mut indexes = Vec::new();
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let modified = e.metadata().and_then(|m| m.modified()).ok();
        if name.starts_with(crate::paths::CACHE_TEMP_PREFIX) {
            if modified.is_some_and(|m| m < hour_ago) {
                let _ = std::fs::remove_file(e.path());
            }
        } else if name.ends_with(".idx") {
            indexes.push((modified, e.path()));
        }
    }
    if indexes.len() > MAX_INDEXES {
        indexes.sort();
        for (_, path) in &indexes[..indexes.len() - MAX_INDEXES] {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A word-at-a-time hash, to tell an intact file from a damaged one.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(a))
            .wrapping_mul(0x0000_0100_0000_01b3)
            .rotate_left(29);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ (h >> 31)
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: usize) {
        self.0
            .extend_from_slice(&u32::try_from(v).unwrap_or(u32::MAX).to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len());
        self.0.extend_from_slice(b);
    }
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<usize> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Some(u32::from_le_bytes(a) as usize)
    }
    fn u64(&mut self) -> Option<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Some(u64::from_le_bytes(a))
    }
    fn i64(&mut self) -> Option<i64> {
        self.u64().map(|v| v as i64)
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()?;
        self.take(n)
    }
    /// A count of items of at least `min` bytes each, checked against what
    /// is left so a damaged count cannot ask for a huge allocation.
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = self.u32()?;
        (n.saturating_mul(min) <= self.b.len() - self.pos).then_some(n)
    }
}

fn encode(idx: &Index) -> Vec<u8> {
    // Only the text some entry still uses, in entry order.
    let mut text = String::with_capacity(idx.text.len());
    let mut keep = |s: Span| -> (usize, usize) {
        let start = text.len();
        text.push_str(idx.str(s));
        (start, s.len as usize)
    };
    let dirs: Vec<((usize, usize), i64)> =
        idx.dirs.iter().map(|d| (keep(d.rel), d.mtime)).collect();
    let files: Vec<((usize, usize), (usize, usize))> = idx
        .files
        .iter()
        .map(|f| (keep(f.rel), keep(f.imports)))
        .collect();
    // The header's checksum is filled in once the body is written.
    let mut w = Writer(Vec::with_capacity(
        20 + text.len() + 40 * (dirs.len() + files.len()),
    ));
    w.0.extend_from_slice(MAGIC);
    w.0.extend_from_slice(&VERSION.to_le_bytes());
    w.u64(0);
    w.bytes(&idx.key);
    w.u64(idx.settings.max_files as u64);
    w.u64(idx.settings.max_file_bytes);
    w.i64(idx.exclude_mtime);
    w.u8(u8::from(idx.truncated));
    w.u32(idx.crate_names.len());
    for n in &idx.crate_names {
        w.bytes(n.as_bytes());
    }
    w.u32(dirs.len());
    for ((start, len), mtime) in dirs {
        w.u32(start);
        w.u32(len);
        w.i64(mtime);
    }
    w.u32(files.len());
    for (f, ((rs, rl), (is, il))) in idx.files.iter().zip(files) {
        w.u32(rs);
        w.u32(rl);
        w.u8(f.kind.code());
        w.i64(f.stamp.mtime);
        w.u64(f.stamp.size);
        w.u32(is);
        w.u32(il);
    }
    // Last, so loading can keep it in place.
    w.bytes(text.as_bytes());
    let mut out = w.0;
    let sum = checksum(&out[HEADER..]);
    out[HEADER - 8..HEADER].copy_from_slice(&sum.to_le_bytes());
    out
}

fn decode(mut bytes: Vec<u8>) -> Option<Index> {
    let mut head = Reader { b: &bytes, pos: 0 };
    if head.take(8)? != MAGIC || head.u32()? != VERSION as usize {
        return None;
    }
    let sum = head.u64()?;
    let body_at = head.pos;
    let body = &bytes[body_at..];
    if checksum(body) != sum {
        return None;
    }
    let mut r = Reader { b: body, pos: 0 };
    let key = r.bytes()?.to_vec();
    let settings = Settings {
        max_files: usize::try_from(r.u64()?).ok()?,
        max_file_bytes: r.u64()?,
    };
    let exclude_mtime = r.i64()?;
    let truncated = r.u8()? != 0;
    let n = r.count(4)?;
    let crate_names = (0..n)
        .map(|_| std::str::from_utf8(r.bytes()?).ok().map(str::to_owned))
        .collect::<Option<Vec<_>>>()?;
    let span = |r: &mut Reader<'_>| -> Option<Span> {
        Some(Span {
            start: u32::try_from(r.u32()?).ok()?,
            len: u32::try_from(r.u32()?).ok()?,
        })
    };
    let n = r.count(16)?;
    let mut dirs = Vec::with_capacity(n);
    for _ in 0..n {
        dirs.push(DirRec {
            rel: span(&mut r)?,
            mtime: r.i64()?,
        });
    }
    let n = r.count(33)?;
    let mut files = Vec::with_capacity(n);
    for _ in 0..n {
        let rel = span(&mut r)?;
        let kind = Kind::from_code(r.u8()?)?;
        let stamp = Stamp {
            mtime: r.i64()?,
            size: r.u64()?,
        };
        let imports = span(&mut r)?;
        files.push(FileRec {
            rel,
            kind,
            stamp,
            imports,
        });
    }
    let text_len = r.u32()?;
    let text_at = body_at + r.pos;
    if text_at.checked_add(text_len)? != bytes.len() {
        return None;
    }
    // The text is the file's tail: keep the buffer, drop the rest.
    bytes.drain(..text_at);
    let text = String::from_utf8(bytes).ok()?;
    // Every span must cut the text at character boundaries.
    let fits = |s: &Span| {
        text.get(s.start as usize..s.start as usize + s.len as usize)
            .is_some()
    };
    let root_first = dirs.first().is_some_and(|d| d.rel.len == 0);
    if !root_first
        || !dirs.iter().all(|d| fits(&d.rel))
        || !files.iter().all(|f| fits(&f.rel) && fits(&f.imports))
    {
        return None;
    }
    Some(Index {
        key,
        settings,
        exclude_mtime,
        truncated,
        crate_names,
        text,
        dirs,
        files,
    })
}
