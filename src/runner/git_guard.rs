//! What keeps git in the project from running a command a sandboxed hook
//! chose. Before the hook: which parts of each repository git takes
//! commands or configuration from are mounted read-only (see
//! [`protected_git_paths`]), the `.git` of every submodule or nested
//! repository the index names among them. After it: what cannot be mounted
//! over because it must stay missing (a `commondir`, the project's `.git`
//! in a project without one, the `.git` of a submodule not checked out) is
//! removed when the hook made it, and an index that gained a gitlink (git
//! would then run `git status` in a repository the hook wrote) is put back
//! as it was.

use std::path::{Path, PathBuf};

/// Parts of a repository's git directory that name commands or say where
/// git reads them (and whether each is a file): the hooks, the config, the
/// attributes and excludes of `info/`, the submodules' and the linked
/// worktrees' own git directories, and the object stores it borrows from.
/// `commondir` is bound only when it exists: an empty one breaks git.
pub(super) const GIT_DIR_PROTECTED: &[(&str, bool)] = &[
    ("hooks", false),
    ("config", true),
    ("config.worktree", true),
    ("info", false),
    ("modules", false),
    ("worktrees", false),
    ("objects/info/alternates", true),
];

const GIT_READS: &str = "git would read it";

/// How deep submodules within submodules are followed, and how many
/// gitlinks in all: a bound on the work before each hook.
const MAX_DEPTH: usize = 8;
const MAX_GITLINKS: usize = 4096;

/// What to protect before a hook runs in the project `root` and what to
/// look at after it.
#[derive(Debug, Default)]
pub(super) struct GitPlan {
    /// Paths to mount read-only, each with whether it is a file; inside the
    /// project they are made (empty) first when missing and `create` holds.
    pub protect: Vec<(PathBuf, bool)>,
    pub watch: Watch,
}

/// What is checked once the hook has ended.
#[derive(Debug, Default)]
pub(super) struct Watch {
    /// Paths that were missing and must still be, each with why: removed
    /// when the hook made them.
    absent: Vec<(PathBuf, &'static str)>,
    /// The project repository's index as it was, when its git directory is
    /// inside the project.
    index: Option<IndexBefore>,
}

#[derive(Debug)]
struct IndexBefore {
    gitdir: PathBuf,
    /// `None`: there was no index.
    bytes: Option<Vec<u8>>,
    stamp: Option<Stamp>,
    gitlinks: Option<Vec<Vec<u8>>>,
}

type Stamp = (u64, u64, u64, i64, i64, i64, i64);

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ))
}

/// The plan for the project `root` (a real path).
pub(super) fn plan(root: &Path) -> GitPlan {
    let mut plan = GitPlan::default();
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        // No repository here: git in the project uses one further up, or
        // none, until a hook plants one.
        plan.watch.must_stay_absent(dot_git, GIT_READS);
        return plan;
    };
    let gitdir = if meta.is_dir() {
        Some(dot_git.clone())
    } else {
        // A worktree or submodule: the `.git` file itself, then the git
        // directory it names and that one's common directory.
        plan.protect.push((dot_git.clone(), true));
        super::spawn::gitdir_of(&dot_git).and_then(|d| std::fs::canonicalize(d).ok())
    };
    let Some(gitdir) = gitdir else {
        return plan;
    };
    let mut dirs = vec![gitdir.clone()];
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir"))
        && let Ok(common) = std::fs::canonicalize(gitdir.join(common.trim()))
        && common != gitdir
    {
        dirs.push(common);
    }
    for dir in &dirs {
        let inside = dir.starts_with(root);
        for (rel, is_file) in GIT_DIR_PROTECTED {
            let p = dir.join(rel);
            // Outside the project it is read-only already; bind what is
            // there so that no writable path reopens it.
            if inside || p.exists() {
                plan.protect.push((p, *is_file));
            }
        }
        let commondir = dir.join("commondir");
        if commondir.exists() {
            plan.protect.push((commondir, true));
        } else if inside {
            plan.watch.must_stay_absent(commondir, GIT_READS);
        }
    }
    let index = gitdir.join("index");
    let bytes = std::fs::read(&index).ok();
    let gitlinks = match &bytes {
        Some(b) => gitlinks(&gitdir, b),
        None => Some(Vec::new()),
    };
    let mut budget = MAX_GITLINKS;
    nested(
        root,
        root,
        gitlinks.as_deref().unwrap_or_default(),
        0,
        &mut budget,
        &mut plan,
    );
    if gitdir.starts_with(root) {
        plan.watch.index = Some(IndexBefore {
            stamp: stamp(&index),
            gitdir,
            bytes,
            gitlinks,
        });
    }
    plan
}

/// The `.git` of each gitlink `links` names under the worktree `base`:
/// read-only when there (a whole git directory inside the project, since
/// nothing there is the project's own work), watched when not, and the
/// gitlinks of its own index in turn.
fn nested(
    root: &Path,
    base: &Path,
    links: &[Vec<u8>],
    depth: usize,
    budget: &mut usize,
    plan: &mut GitPlan,
) {
    use std::os::unix::ffi::OsStrExt;
    if depth >= MAX_DEPTH {
        return;
    }
    for link in links {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let rel = Path::new(std::ffi::OsStr::from_bytes(link));
        if rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            continue;
        }
        let worktree = base.join(rel);
        let dot_git = worktree.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            plan.watch.must_stay_absent(dot_git, GIT_READS);
            continue;
        };
        let gitdir = if meta.is_dir() {
            Some(dot_git.clone())
        } else {
            super::spawn::gitdir_of(&dot_git).and_then(|d| std::fs::canonicalize(d).ok())
        };
        plan.protect.push((dot_git.clone(), !meta.is_dir()));
        let Some(gitdir) = gitdir else { continue };
        if gitdir.starts_with(root) && gitdir != dot_git {
            plan.protect.push((gitdir.clone(), false));
        }
        if let Some(inner) = std::fs::read(gitdir.join("index"))
            .ok()
            .and_then(|b| gitlinks(&gitdir, &b))
        {
            nested(root, &worktree, &inner, depth + 1, budget, plan);
        }
    }
}

impl Watch {
    /// The paths that must stay missing.
    pub(super) fn absent_paths(&self) -> impl Iterator<Item = &Path> {
        self.absent.iter().map(|(p, _)| p.as_path())
    }

    /// `path` must still be missing once the hook has ended: `why` says
    /// what would read it (`git would read it`).
    pub(super) fn must_stay_absent(&mut self, path: PathBuf, why: &'static str) {
        self.absent.push((path, why));
    }

    /// Undoes what the hook did that would have git run its commands, and
    /// says what that was; empty when it did nothing of the kind. Called
    /// once the hook and everything it started have ended.
    pub(super) fn check(&self) -> Vec<String> {
        let mut undone = Vec::new();
        for (path, why) in &self.absent {
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
            let shown = crate::escape::escape(&path.display().to_string());
            undone.push(match removed {
                Ok(()) => format!("it created `{shown}` ({why}); removed"),
                Err(e) => format!(
                    "it created `{shown}` ({why}), and it could not be removed ({e}); remove it yourself"
                ),
            });
        }
        if let Some(before) = &self.index
            && let Some(why) = before.check()
        {
            undone.push(why);
        }
        undone
    }
}

impl IndexBefore {
    fn check(&self) -> Option<String> {
        let index = self.gitdir.join("index");
        if stamp(&index) == self.stamp {
            return None;
        }
        let after = std::fs::read(&index).ok();
        let added: Vec<String> = match (&after, &self.gitlinks) {
            (None, _) => return None,
            (Some(bytes), Some(before)) => match gitlinks(&self.gitdir, bytes) {
                Some(now) => now
                    .into_iter()
                    .filter(|l| !before.contains(l))
                    .map(|l| String::from_utf8_lossy(&l).into_owned())
                    .collect(),
                None => vec!["(an index that cannot be read)".into()],
            },
            // What was there could not be read either: it is put back.
            (Some(bytes), None) if Some(bytes) != self.bytes.as_ref() => {
                vec!["(an index that cannot be read)".into()]
            }
            (Some(_), None) => Vec::new(),
        };
        if added.is_empty() {
            return None;
        }
        let shown = crate::escape::escape(&added.join("`, `"));
        Some(match self.restore() {
            Ok(()) => format!(
                "it added the gitlink `{shown}` to the index, which would make git run in a repository it wrote; the index was put back as it was"
            ),
            Err(e) => format!(
                "it added the gitlink `{shown}` to the index, which would make git run in a repository it wrote, and the index could not be put back ({e}); run `git rm --cached` on it before any other git command"
            ),
        })
    }

    /// Puts the index back, under git's own lock (`index.lock`), so a git
    /// command running at the same time is not overwritten half-way.
    fn restore(&self) -> std::io::Result<()> {
        use std::io::Write;
        let index = self.gitdir.join("index");
        let lock = self.gitdir.join("index.lock");
        let mut tries = 0;
        let mut file = loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock)
            {
                Ok(f) => break f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 20 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => return Err(e),
            }
        };
        let done = match &self.bytes {
            Some(bytes) => file
                .write_all(bytes)
                .and_then(|()| file.sync_all())
                .and_then(|()| std::fs::rename(&lock, &index)),
            None => std::fs::remove_file(&index),
        };
        let _ = std::fs::remove_file(&lock);
        done
    }
}

/// The paths of the gitlinks (mode 160000) in the index `bytes` of the git
/// directory `gitdir`, with those of the shared index a split index names;
/// `None` when it cannot be read as an index.
pub(super) fn gitlinks(gitdir: &Path, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    // SHA-1, then SHA-256: the wrong length does not parse.
    [20, 32].into_iter().find_map(|hash| {
        let (mut links, shared) = parse(bytes, hash)?;
        if let Some(oid) = shared {
            let name = format!("sharedindex.{}", crate::base::text::hex(&oid));
            let base = std::fs::read(gitdir.join(name)).ok()?;
            links.extend(parse(&base, hash)?.0);
        }
        Some(links)
    })
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The gitlinks of one index file, and the shared index its `link`
/// extension names, if any.
#[allow(clippy::type_complexity)]
fn parse(b: &[u8], hash: usize) -> Option<(Vec<Vec<u8>>, Option<Vec<u8>>)> {
    if b.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(b, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(b, 8)? as usize;
    let end = b.len().checked_sub(hash)?;
    let mut at = 12;
    let mut name: Vec<u8> = Vec::new();
    let mut links = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = be32(b, at + 24)?;
        at += 40 + hash;
        let flags = u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        if version == 4 {
            // A varint of how much of the previous name to drop, then the
            // rest of this one, NUL-terminated.
            let mut strip: usize = 0;
            loop {
                let byte = *b.get(at)?;
                at += 1;
                strip = strip
                    .checked_mul(128)?
                    .checked_add(usize::from(byte & 0x7f))?;
                if byte & 0x80 == 0 {
                    break;
                }
                strip = strip.checked_add(1)?;
            }
            name.truncate(name.len().checked_sub(strip)?);
            let len = b.get(at..end)?.iter().position(|&c| c == 0)?;
            name.extend_from_slice(&b[at..at + len]);
            at += len + 1;
        } else {
            let len = match usize::from(flags & 0xfff) {
                0xfff => b.get(at..end)?.iter().position(|&c| c == 0)?,
                n => n,
            };
            name.clear();
            name.extend_from_slice(b.get(at..at + len)?);
            let next = start + ((at + len - start + 8) & !7);
            if b.get(at + len..next)?.iter().any(|&c| c != 0) {
                return None;
            }
            at = next;
        }
        if at > end {
            return None;
        }
        if mode & 0o170000 == 0o160000 {
            links.push(name.clone());
        }
    }
    let mut shared = None;
    while at + 8 <= end {
        let sig = b.get(at..at + 4)?;
        let size = be32(b, at + 4)? as usize;
        let data = b.get(at + 8..(at + 8).checked_add(size)?)?;
        if sig == b"link" {
            let oid = data.get(..hash)?;
            if oid.iter().any(|&c| c != 0) {
                shared = Some(oid.to_vec());
            }
        }
        at += 8 + size;
    }
    (at == end).then_some((links, shared))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    }

    #[test]
    fn gitlinks_are_read_from_every_index_version() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        git(p, &["init", "-q"]);
        for i in 0..5 {
            std::fs::write(p.join(format!("file-{i}.txt")), "x").unwrap();
        }
        std::fs::create_dir_all(p.join("a-very/long/directory/name")).unwrap();
        std::fs::write(p.join("a-very/long/directory/name/f"), "y").unwrap();
        git(p, &["add", "."]);
        let oid = "0123456789abcdef0123456789abcdef01234567";
        for path in ["sub/inner", "zz-last"] {
            git(
                p,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    &format!("160000,{oid},{path}"),
                ],
            );
        }
        for version in ["2", "3", "4"] {
            git(p, &["update-index", "--index-version", version]);
            let bytes = std::fs::read(p.join(".git/index")).unwrap();
            let links = gitlinks(&p.join(".git"), &bytes).expect(version);
            assert_eq!(
                links,
                [b"sub/inner".to_vec(), b"zz-last".to_vec()],
                "{version}"
            );
        }
        git(p, &["update-index", "--split-index"]);
        git(
            p,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{oid},b"),
            ],
        );
        let bytes = std::fs::read(p.join(".git/index")).unwrap();
        let mut links = gitlinks(&p.join(".git"), &bytes).unwrap();
        links.sort();
        links.dedup();
        assert_eq!(links.len(), 3, "{links:?}");
        assert_eq!(gitlinks(p, b"DIRC garbage"), None);
    }
}
