//! The project's files as git sees them: a sorted depth-first walk that
//! skips VCS directories and symlinks and honours `.git/info/exclude` and
//! every `.gitignore` on the way down (the deepest, last matching rule
//! wins; an ignored directory is never entered). Most rules are a name or
//! a `*.ext`, matched without a regex.

use std::path::Path;

use regex::Regex;

/// A walked directory: its path relative to the root (`""` for the root)
/// and its modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkedDir {
    pub rel: String,
    pub mtime: Option<i64>,
}

/// Everything under one directory, in walk order.
#[derive(Debug, Default)]
pub struct Walked {
    pub dirs: Vec<WalkedDir>,
    pub files: Vec<String>,
    /// The file cap was reached: the walk stopped there.
    pub truncated: bool,
}

/// Directories of version-control systems, never walked.
const VCS_DIRS: [&str; 4] = [".git", ".hg", ".svn", ".jj"];

/// Nanoseconds since the epoch (negative before it).
pub fn nanos(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

pub fn mtime_of(path: &Path) -> Option<i64> {
    let m = std::fs::symlink_metadata(path).ok()?;
    m.modified().ok().map(nanos)
}

/// `a` joined to `b` with a `/`, `b` alone when `a` is the root.
pub fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_owned()
    } else {
        format!("{a}/{b}")
    }
}

/// The ignore rules in force in one directory: one level per directory
/// with rules, outermost first.
#[derive(Debug, Default, Clone)]
pub struct Scope {
    levels: Vec<Level>,
}

#[derive(Debug, Clone)]
struct Level {
    /// The directory the rules belong to (`""` for the root).
    base: String,
    rules: Vec<IgnoreRule>,
}

impl Scope {
    /// The rules in force inside `dir` from the root and every directory
    /// above `dir` (not `dir`'s own, which listing it adds).
    pub fn for_dir(root: &Path, dir: &str) -> Scope {
        let mut scope = Scope::default();
        scope.push_root_excludes(root);
        if dir.is_empty() {
            return scope;
        }
        let mut base = String::new();
        scope.push_file(root, &base);
        let parts: Vec<&str> = dir.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            base = join(&base, part);
            scope.push_file(root, &base);
        }
        scope
    }

    fn push_root_excludes(&mut self, root: &Path) {
        if let Ok(text) = std::fs::read_to_string(root.join(".git/info/exclude")) {
            let rules: Vec<IgnoreRule> = text.lines().filter_map(compile_ignore).collect();
            if !rules.is_empty() {
                self.levels.push(Level {
                    base: String::new(),
                    rules,
                });
            }
        }
    }

    /// Adds `dir`'s own `.gitignore`; true when it had rules (pop them
    /// when leaving the directory).
    fn push_file(&mut self, root: &Path, dir: &str) -> bool {
        let Ok(text) = std::fs::read_to_string(root.join(dir).join(".gitignore")) else {
            return false;
        };
        let rules: Vec<IgnoreRule> = text.lines().filter_map(compile_ignore).collect();
        if rules.is_empty() {
            return false;
        }
        self.levels.push(Level {
            base: dir.to_owned(),
            rules,
        });
        true
    }

    fn pop(&mut self) {
        self.levels.pop();
    }

    /// Whether `rel` (named `name`) is ignored.
    pub fn ignored(&self, rel: &str, name: &str, is_dir: bool) -> bool {
        let mut ignored = false;
        for level in &self.levels {
            let sub = if level.base.is_empty() {
                rel
            } else {
                match rel
                    .strip_prefix(level.base.as_str())
                    .and_then(|r| r.strip_prefix('/'))
                {
                    Some(sub) => sub,
                    None => continue,
                }
            };
            for rule in &level.rules {
                if (!rule.dir_only || is_dir) && rule.matches(sub, name) {
                    ignored = !rule.negate;
                }
            }
        }
        ignored
    }
}

/// One directory's entries, sorted, the ignored ones and symlinks left out.
#[derive(Debug, Default)]
pub struct Listing {
    pub files: Vec<String>,
    pub dirs: Vec<String>,
    /// Whether the directory has a `.gitignore` with rules (now pushed on
    /// the scope).
    pub pushed: bool,
}

/// Lists `dir` under `scope`, whose rules it extends with `dir`'s own
/// `.gitignore` (`Listing::pushed`). `None` when it cannot be read.
pub fn list(root: &Path, dir: &str, scope: &mut Scope) -> Option<Listing> {
    let rd = std::fs::read_dir(root.join(dir)).ok()?;
    let mut entries: Vec<(String, std::fs::FileType)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let ft = e.file_type().ok()?;
            let name = e.file_name().into_string().ok()?;
            Some((name, ft))
        })
        .collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut out = Listing::default();
    if entries
        .iter()
        .any(|(n, ft)| n == ".gitignore" && ft.is_file())
    {
        out.pushed = scope.push_file(root, dir);
    }
    for (name, ft) in entries {
        let rel = join(dir, &name);
        if ft.is_dir() {
            if !VCS_DIRS.contains(&name.as_str()) && !scope.ignored(&rel, &name, true) {
                out.dirs.push(name);
            }
        } else if ft.is_file() && !scope.ignored(&rel, &name, false) {
            out.files.push(name);
        }
    }
    Some(out)
}

/// Walks `dir` (relative to `root`, not ignored under `scope`) depth
/// first, in name order, recording at most `max_files` files.
pub fn walk(root: &Path, dir: &str, scope: &mut Scope, max_files: usize, out: &mut Walked) {
    walk_dir(root, dir, scope, max_files, out);
}

/// [`walk`] from the root, the root's subdirectories walked on separate
/// threads and joined in walk order: the same dirs and files, the same cap.
pub fn walk_root(root: &Path, max_files: usize) -> Walked {
    let mut scope = Scope::for_dir(root, "");
    let mut out = Walked::default();
    out.dirs.push(WalkedDir {
        rel: String::new(),
        mtime: mtime_of(root),
    });
    let Some(listing) = list(root, "", &mut scope) else {
        return out;
    };
    let subtrees = super::index::par_map_each(
        &listing.dirs,
        || scope.clone(),
        |scope, name| {
            let mut w = Walked::default();
            walk_dir(root, name, scope, max_files, &mut w);
            w
        },
    );
    let mut subtrees = subtrees.into_iter();
    let (mut f, mut d) = (0, 0);
    while f < listing.files.len() || d < listing.dirs.len() {
        let take_file = match (listing.files.get(f), listing.dirs.get(d)) {
            (Some(a), Some(b)) => a < b,
            (Some(_), None) => true,
            _ => false,
        };
        if take_file {
            if out.files.len() >= max_files {
                out.truncated = true;
                break;
            }
            out.files.push(listing.files[f].clone());
            f += 1;
            continue;
        }
        d += 1;
        let Some(sub) = subtrees.next() else { break };
        out.dirs.extend(sub.dirs);
        let room = max_files - out.files.len();
        if sub.truncated || sub.files.len() > room {
            out.files.extend(sub.files.into_iter().take(room));
            out.truncated = true;
            break;
        }
        out.files.extend(sub.files);
    }
    out
}

/// False once the cap is reached.
fn walk_dir(root: &Path, dir: &str, scope: &mut Scope, max_files: usize, out: &mut Walked) -> bool {
    out.dirs.push(WalkedDir {
        rel: dir.to_owned(),
        mtime: mtime_of(&root.join(dir)),
    });
    let Some(listing) = list(root, dir, scope) else {
        return true;
    };
    // Files and directories interleaved by name, as a sorted walk meets them.
    let (mut f, mut d) = (0, 0);
    let mut go_on = true;
    while go_on && (f < listing.files.len() || d < listing.dirs.len()) {
        let take_file = match (listing.files.get(f), listing.dirs.get(d)) {
            (Some(a), Some(b)) => a < b,
            (Some(_), None) => true,
            _ => false,
        };
        if take_file {
            if out.files.len() >= max_files {
                out.truncated = true;
                go_on = false;
            } else {
                out.files.push(join(dir, &listing.files[f]));
            }
            f += 1;
        } else {
            go_on = walk_dir(root, &join(dir, &listing.dirs[d]), scope, max_files, out);
            d += 1;
        }
    }
    if listing.pushed {
        scope.pop();
    }
    go_on
}

/// Component-wise order of relative paths: the order of a sorted walk.
pub fn walk_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.split('/').cmp(b.split('/'))
}

/// One .gitignore line, compiled.
#[derive(Debug, Clone)]
pub struct IgnoreRule {
    pattern: Pattern,
    negate: bool,
    dir_only: bool,
}

#[derive(Debug, Clone)]
enum Pattern {
    /// `name`: the entry's name equals it, at any depth.
    Name(String),
    /// `*.ext`: the entry's name ends with it, at any depth.
    Suffix(String),
    /// A glob without a slash, matched against the entry's name.
    NameGlob(Regex),
    /// `a/b` or `/b`: the path below the .gitignore's directory equals it.
    Path(String),
    /// A glob with a slash, matched against that path.
    PathGlob(Regex),
}

impl IgnoreRule {
    /// `sub` is the entry's path below the rule's directory.
    pub fn matches(&self, sub: &str, name: &str) -> bool {
        match &self.pattern {
            Pattern::Name(n) => name == n,
            Pattern::Suffix(s) => name.len() > s.len() && name.ends_with(s.as_str()),
            Pattern::NameGlob(re) => re.is_match(name),
            Pattern::Path(p) => sub == p,
            Pattern::PathGlob(re) => re.is_match(sub),
        }
    }
}

pub fn compile_ignore(line: &str) -> Option<IgnoreRule> {
    let line = line.trim_end();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (negate, pat) = match line.strip_prefix('!') {
        Some(p) => (true, p),
        None => (false, line.strip_prefix('\\').unwrap_or(line)),
    };
    let (dir_only, pat) = match pat.strip_suffix('/') {
        Some(p) => (true, p),
        None => (false, pat),
    };
    // A slash anywhere but the end anchors the pattern to its directory.
    let anchored = pat.contains('/');
    let pat = pat.strip_prefix('/').unwrap_or(pat);
    if pat.is_empty() {
        return None;
    }
    let wild = |s: &str| s.contains(['*', '?', '[', '\\']);
    let pattern = match (anchored, wild(pat)) {
        (false, false) => Pattern::Name(pat.to_owned()),
        (false, true) if pat.starts_with('*') && !wild(&pat[1..]) => {
            Pattern::Suffix(pat[1..].to_owned())
        }
        (false, true) => Pattern::NameGlob(glob_regex(pat)?),
        (true, false) => Pattern::Path(pat.to_owned()),
        (true, true) => Pattern::PathGlob(glob_regex(pat)?),
    };
    Some(IgnoreRule {
        pattern,
        negate,
        dir_only,
    })
}

/// A gitignore glob as an anchored regex: `*` and `?` stay within one
/// component, `**/` spans any number of them, `[…]` is a class.
fn glob_regex(pat: &str) -> Option<Regex> {
    let mut re = String::from("^");
    let chars: Vec<char> = pat.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if chars.get(i + 1) == Some(&'*') => {
                if chars.get(i + 2) == Some(&'/') {
                    re.push_str("(?:.*/)?");
                    i += 3;
                } else {
                    re.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '\\' if i + 1 < chars.len() => {
                re.push_str(&regex::escape(&chars[i + 1].to_string()));
                i += 2;
                continue;
            }
            '[' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&c| c == ']')
                    .map(|p| p + i + 1);
                match close {
                    Some(end) => {
                        let body: String = chars[i + 1..end].iter().collect();
                        let body = body
                            .strip_prefix('!')
                            .map(|b| format!("^{b}"))
                            .unwrap_or(body);
                        re.push('[');
                        re.push_str(&body.replace('\\', "\\\\"));
                        re.push(']');
                        i = end + 1;
                        continue;
                    }
                    None => re.push_str("\\["),
                }
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push('$');
    Regex::new(&re).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pat: &str, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        compile_ignore(pat).unwrap().matches(path, name)
    }

    #[test]
    fn gitignore_patterns() {
        assert!(m("*.log", "a/b/x.log") && !m("*.log", "a/b/x.logs"));
        assert!(m("/build", "build") && !m("/build", "src/build"));
        assert!(m("build", "src/build"));
        assert!(m("docs/**/*.md", "docs/a/b/c.md") && m("docs/**/*.md", "docs/c.md"));
        assert!(m("**/node_modules", "a/node_modules") && m("**/node_modules", "node_modules"));
        assert!(m("x[0-9].txt", "x1.txt") && !m("x[!0-9].txt", "x1.txt"));
        assert!(m("a?c", "dir/abc") && !m("a?c", "dir/a/c"));
        assert!(m("\\#lit", "#lit"));
        assert!(compile_ignore("# comment").is_none() && compile_ignore("/").is_none());
    }

    #[test]
    fn walk_is_sorted_honours_ignores_and_caps() {
        let d = tempfile::tempdir().unwrap();
        for p in [
            "b.rs",
            "a/z.rs",
            "a/b.rs",
            "a-b.rs",
            "skip/x.rs",
            "keep.log",
            "x.log",
            ".git/HEAD",
        ] {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        std::fs::write(d.path().join(".gitignore"), "skip/\n*.log\n!keep.log\n").unwrap();
        let mut out = Walked::default();
        walk(
            d.path(),
            "",
            &mut Scope::for_dir(d.path(), ""),
            100,
            &mut out,
        );
        assert_eq!(
            out.files,
            [
                ".gitignore",
                "a/b.rs",
                "a/z.rs",
                "a-b.rs",
                "b.rs",
                "keep.log"
            ]
        );
        let mut sorted = out.files.clone();
        sorted.sort_by(|a, b| walk_order(a, b));
        assert_eq!(sorted, out.files);
        let dirs: Vec<&str> = out.dirs.iter().map(|d| d.rel.as_str()).collect();
        assert_eq!(dirs, ["", "a"]);

        let parallel = walk_root(d.path(), 100);
        assert_eq!(parallel.files, out.files);
        assert_eq!(parallel.dirs, out.dirs);
        assert!(!parallel.truncated);

        let mut capped = Walked::default();
        walk(
            d.path(),
            "",
            &mut Scope::for_dir(d.path(), ""),
            2,
            &mut capped,
        );
        assert_eq!(capped.files, [".gitignore", "a/b.rs"]);
        assert!(capped.truncated);
        for cap in 0..7 {
            let mut seq = Walked::default();
            walk(
                d.path(),
                "",
                &mut Scope::for_dir(d.path(), ""),
                cap,
                &mut seq,
            );
            let par = walk_root(d.path(), cap);
            assert_eq!(
                (par.files, par.truncated),
                (seq.files, seq.truncated),
                "cap {cap}"
            );
        }
    }
}
