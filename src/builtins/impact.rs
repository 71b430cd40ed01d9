//! The shipped impact-evidence provider (`[impact] enabled = true` in
//! runtime.toml): on a session's first edit of a file, tells the model who
//! depends on it — the files that import it (Rust `mod`/`use`, Python
//! `import`, JS/TS `import`/`require`, Go `import`), its related tests, and
//! the lines of MEMORY.md, AGENTS.md and CLAUDE.md that mention it. The
//! walk honours .gitignore and every list is capped, so the context stays
//! small and the hook stays fast on a large repository.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use regex::Regex;
use toml_edit::TableLike;

use super::ports::{
    ImpactEvidenceInput, ImpactEvidenceProvider, ImpactEvidenceResult, int_setting,
};

/// The bounds, from `[impact]` in runtime.toml.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImpactLimits {
    /// Files walked at most (`max_files`); a bigger repository is sampled
    /// in walk order, and the context says so.
    pub max_files: usize,
    /// Entries per list (`max_entries`).
    pub max_entries: usize,
    /// Files larger than this are not read for imports (`max_file_bytes`).
    pub max_file_bytes: u64,
    /// The whole additional context (`max_context_bytes`).
    pub max_context_bytes: usize,
}

impl Default for ImpactLimits {
    fn default() -> Self {
        ImpactLimits {
            max_files: 50_000,
            max_entries: 10,
            max_file_bytes: 512 * 1024,
            max_context_bytes: 4096,
        }
    }
}

impl ImpactLimits {
    pub fn from_table(t: Option<&dyn TableLike>) -> ImpactLimits {
        let d = ImpactLimits::default();
        ImpactLimits {
            max_files: int_setting(t, "max_files", d.max_files as u64) as usize,
            max_entries: (int_setting(t, "max_entries", d.max_entries as u64) as usize).max(1),
            max_file_bytes: int_setting(t, "max_file_bytes", d.max_file_bytes),
            max_context_bytes: (int_setting(t, "max_context_bytes", d.max_context_bytes as u64)
                as usize)
                .max(256),
        }
    }
}

/// Finds importers, related tests and memory caveats in the project tree.
#[derive(Debug, Clone)]
pub struct RepoImpactProvider {
    limits: ImpactLimits,
    /// Reserved for a persistent import index (warm runs); unused so far.
    cache_dir: Option<PathBuf>,
}

impl RepoImpactProvider {
    pub fn new(limits: ImpactLimits, cache_dir: Option<PathBuf>) -> Self {
        RepoImpactProvider { limits, cache_dir }
    }

    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    /// The evidence for `file` (absolute, or relative to `root`), or `None`
    /// when there is nothing to say.
    pub fn evidence(&self, root: &Path, file: &Path) -> Result<Option<String>, String> {
        let root = crate::paths::absolute(root);
        let file = crate::paths::absolute(&root.join(file));
        let Ok(rel) = file.strip_prefix(&root) else {
            return Ok(None); // outside the project: not ours to describe
        };
        let rel = slash_path(rel);
        if !root.is_dir() {
            return Err(format!(
                "project root `{}` is not a directory",
                root.display()
            ));
        }
        let walk = walk(&root, self.limits.max_files);
        let target = Target::new(&rel, &root);
        let importers = importers(&root, &walk.files, &target, &self.limits);
        let tests = related_tests(&walk.files, &target, self.limits.max_entries);
        let caveats = caveats(&root, &target, self.limits.max_entries);
        if importers.is_empty() && tests.is_empty() && caveats.is_empty() {
            return Ok(None);
        }
        let mut out = format!(
            "Impact evidence for `{}` (first edit in this session):\n",
            crate::escape::escape(&rel)
        );
        let list = |label: &str, items: &[String], total: usize| {
            let shown = items
                .iter()
                .map(|i| format!("`{}`", crate::escape::escape(i)))
                .collect::<Vec<_>>()
                .join(", ");
            let more = if total > items.len() {
                format!(" (+{} more)", total - items.len())
            } else {
                String::new()
            };
            format!("- {label}: {shown}{more}\n")
        };
        if !importers.is_empty() {
            let total = importers.len();
            out.push_str(&list(
                "imported by",
                &importers[..total.min(self.limits.max_entries)],
                total,
            ));
        }
        if !tests.is_empty() {
            out.push_str(&list("related tests", &tests, tests.len()));
        }
        for (file, line, text) in &caveats {
            out.push_str(&format!(
                "- note in `{file}:{line}`: {}\n",
                crate::escape::escape(text)
            ));
        }
        if walk.truncated {
            out.push_str(&format!(
                "- (only the first {} files of the project were searched)\n",
                self.limits.max_files
            ));
        }
        Ok(Some(truncate(out, self.limits.max_context_bytes)))
    }
}

impl ImpactEvidenceProvider for RepoImpactProvider {
    fn evidence_for(&self, input: &ImpactEvidenceInput) -> Result<ImpactEvidenceResult, String> {
        if !input.first_edit_in_session {
            return Ok(ImpactEvidenceResult::default());
        }
        let context = self.evidence(&input.project_root, &input.file_path)?;
        // Advisory only: the shipped provider informs, it never asks.
        Ok(ImpactEvidenceResult {
            additional_context: context,
            decision_ask: false,
        })
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut end = max.saturating_sub(4);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push_str("…\n");
    s
}

fn slash_path(p: &Path) -> String {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The project's files (relative, `/`-separated), .gitignore honoured.
struct Walk {
    files: Vec<String>,
    truncated: bool,
}

fn walk(root: &Path, max_files: usize) -> Walk {
    let mut ignores: HashMap<PathBuf, Vec<IgnoreRule>> = HashMap::new();
    let mut files = Vec::new();
    let mut truncated = false;
    let mut it = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = it.next() {
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        if path == root {
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        let is_dir = entry.file_type().is_dir();
        if is_dir && matches!(name.as_ref(), ".git" | ".hg" | ".svn" | ".jj") {
            it.skip_current_dir();
            continue;
        }
        let rel = slash_path(path.strip_prefix(root).unwrap_or(path));
        if is_ignored(root, &rel, is_dir, &mut ignores) {
            if is_dir {
                it.skip_current_dir();
            }
            continue;
        }
        if entry.file_type().is_file() {
            if files.len() >= max_files {
                truncated = true;
                break;
            }
            files.push(rel);
        }
    }
    Walk { files, truncated }
}

/// One .gitignore line, compiled.
struct IgnoreRule {
    regex: Regex,
    negate: bool,
    dir_only: bool,
}

fn load_ignores(dir: &Path) -> Vec<IgnoreRule> {
    let Ok(text) = std::fs::read_to_string(dir.join(".gitignore")) else {
        return Vec::new();
    };
    text.lines().filter_map(compile_ignore).collect()
}

fn compile_ignore(line: &str) -> Option<IgnoreRule> {
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
    let mut re = String::from(if anchored { "^" } else { "(?:^|/)" });
    let bytes: Vec<char> = pat.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            '*' if bytes.get(i + 1) == Some(&'*') => {
                if bytes.get(i + 2) == Some(&'/') {
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
            '[' => {
                let close = bytes[i + 1..]
                    .iter()
                    .position(|&c| c == ']')
                    .map(|p| p + i + 1);
                match close {
                    Some(end) => {
                        let body: String = bytes[i + 1..end].iter().collect();
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
    Regex::new(&re).ok().map(|regex| IgnoreRule {
        regex,
        negate,
        dir_only,
    })
}

/// Whether `rel` is ignored by the .gitignore files of its ancestors, the
/// deepest and last matching rule winning.
fn is_ignored(
    root: &Path,
    rel: &str,
    is_dir: bool,
    cache: &mut HashMap<PathBuf, Vec<IgnoreRule>>,
) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    let mut ignored = false;
    let mut dir = root.to_path_buf();
    for depth in 0..parts.len() {
        let rules = cache
            .entry(dir.clone())
            .or_insert_with_key(|d| load_ignores(d));
        let sub = parts[depth..].join("/");
        for rule in rules.iter() {
            if (!rule.dir_only || is_dir) && rule.regex.is_match(&sub) {
                ignored = !rule.negate;
            }
        }
        dir.push(parts[depth]);
    }
    ignored
}

/// The edited file, in the shapes each language refers to it by.
struct Target {
    rel: String,
    dir: String,
    stem: String,
    ext: String,
    name: String,
    root: PathBuf,
}

impl Target {
    fn new(rel: &str, root: &Path) -> Target {
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
        Target {
            rel: rel.to_owned(),
            dir: dir.to_owned(),
            stem: stem.to_owned(),
            ext: ext.to_ascii_lowercase(),
            name: name.to_owned(),
            root: root.to_path_buf(),
        }
    }

    /// Stems that name a directory's module rather than the file.
    fn generic(&self) -> bool {
        matches!(
            self.stem.as_str(),
            "mod" | "lib" | "main" | "index" | "__init__" | "__main__"
        )
    }

    /// The name other files use: the directory's for `mod.rs`/`index.ts`.
    fn module_name(&self) -> &str {
        if self.generic() {
            self.dir.rsplit('/').next().unwrap_or(&self.stem)
        } else {
            &self.stem
        }
    }
}

/// Whether the file at a relative path, with this text, imports the target.
type Finder = Box<dyn Fn(&str, &str) -> bool>;

const JS_EXTS: [&str; 9] = ["js", "jsx", "ts", "tsx", "mjs", "cjs", "mts", "cts", "vue"];

fn importers(root: &Path, files: &[String], t: &Target, limits: &ImpactLimits) -> Vec<String> {
    let finder: Finder = match t.ext.as_str() {
        "rs" => rust_finder(t),
        "py" => python_finder(t),
        "go" => go_finder(t),
        e if JS_EXTS.contains(&e) => js_finder(t),
        _ => return Vec::new(),
    };
    let family: &[&str] = match t.ext.as_str() {
        "rs" => &["rs"],
        "py" => &["py"],
        "go" => &["go"],
        _ => &JS_EXTS,
    };
    // Go imports packages: the directory, not the file.
    let needle = match t.ext.as_str() {
        "go" => t.dir.rsplit('/').next().unwrap_or("").to_owned(),
        _ => t.module_name().to_owned(),
    };
    let mut out = Vec::new();
    for f in files {
        if *f == t.rel {
            continue;
        }
        let ext = f.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        if !family.contains(&ext) {
            continue;
        }
        let path = root.join(f);
        if std::fs::metadata(&path)
            .map(|m| m.len() > limits.max_file_bytes)
            .unwrap_or(true)
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        // Every way of importing names the module somewhere in the file.
        if !text.contains(&needle) {
            continue;
        }
        if finder(f, &text) {
            out.push(f.clone());
        }
    }
    out
}

fn word_re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("impact patterns are built from escaped names")
}

fn rust_finder(t: &Target) -> Finder {
    let m = regex::escape(t.module_name());
    // `src/a/b.rs` is `a::b`; the file declaring it says `mod b;`.
    let src_rel = t.rel.split_once("src/").map(|(_, r)| r).unwrap_or(&t.rel);
    let mut segments: Vec<String> = src_rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if t.generic() {
        segments.pop();
    }
    let path = segments
        .iter()
        .map(|s| regex::escape(s))
        .collect::<Vec<_>>()
        .join("::");
    let crate_name = cargo_crate_name(&t.root).map(|n| regex::escape(&n));
    let mut uses = vec![format!(r"\bcrate::{path}\b")];
    if let Some(c) = crate_name {
        uses.push(format!(r"\b{c}::{path}\b"));
    }
    let uses = word_re(&format!("(?:{})", uses.join("|")));
    let decl = word_re(&format!(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+{m}\s*;"));
    let relative = word_re(&format!(r"\b(?:super|self)::{m}\b"));
    let module_dir = if t.generic() {
        t.dir
            .rsplit_once('/')
            .map(|(d, _)| d)
            .unwrap_or("")
            .to_owned()
    } else {
        t.dir.clone()
    };
    Box::new(move |f: &str, text: &str| {
        let f_dir = f.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        let near = f_dir == module_dir
            || f_dir.starts_with(&format!("{module_dir}/"))
            || module_dir.starts_with(f_dir);
        uses.is_match(text) || (near && (decl.is_match(text) || relative.is_match(text)))
    })
}

fn cargo_crate_name(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("Cargo.toml")).ok()?;
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    Some(doc.get("package")?.get("name")?.as_str()?.replace('-', "_"))
}

fn python_finder(t: &Target) -> Finder {
    let mut parts: Vec<&str> = t.rel.trim_end_matches(".py").split('/').collect();
    if parts.first() == Some(&"src") {
        parts.remove(0);
    }
    if t.stem == "__init__" {
        parts.pop();
    }
    let dotted = parts
        .iter()
        .map(|p| regex::escape(p))
        .collect::<Vec<_>>()
        .join(r"\.");
    let (package, name) = match parts.split_last() {
        Some((last, pkg)) => (
            pkg.iter()
                .map(|p| regex::escape(p))
                .collect::<Vec<_>>()
                .join(r"\."),
            regex::escape(last),
        ),
        None => (String::new(), String::new()),
    };
    let absolute = word_re(&format!(
        r"(?m)^\s*(?:from\s+{dotted}(?:\.[\w.]+)?\s+import\b|import\s+{dotted}\b|from\s+{package}\s+import\s+[^\n]*\b{name}\b)"
    ));
    let relative = word_re(&format!(
        r"(?m)^\s*(?:from\s+\.{name}\s+import\b|from\s+\.\s+import\s+[^\n]*\b{name}\b)"
    ));
    let dir = t.dir.clone();
    Box::new(move |f: &str, text: &str| {
        let f_dir = f.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        absolute.is_match(text) || (f_dir == dir && relative.is_match(text))
    })
}

fn go_finder(t: &Target) -> Finder {
    let module = std::fs::read_to_string(t.root.join("go.mod"))
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("module ").map(|s| s.trim().to_owned()))
        });
    let Some(module) = module else {
        return Box::new(|_, _| false);
    };
    let import = if t.dir.is_empty() {
        module
    } else {
        format!("{module}/{}", t.dir)
    };
    let quoted = format!("\"{import}\"");
    let dir = t.dir.clone();
    Box::new(move |f: &str, text: &str| {
        let f_dir = f.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        f_dir != dir && text.contains(&quoted)
    })
}

fn js_finder(t: &Target) -> Finder {
    static SPEC: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let spec = SPEC.get_or_init(|| {
        word_re(r#"(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*|\bexport\s+\*\s+from\s*)['"](\.{1,2}/[^'"]*)['"]"#)
    });
    let target_noext = t
        .rel
        .rsplit_once('.')
        .map(|(p, _)| p.to_owned())
        .unwrap_or_else(|| t.rel.clone());
    let target_index_dir = (t.stem == "index").then(|| t.dir.clone());
    Box::new(move |f: &str, text: &str| {
        let f_dir = f.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        spec.captures_iter(text).any(|c| {
            let resolved = normalize(&format!("{f_dir}/{}", &c[1]));
            let stripped = resolved
                .rsplit_once('.')
                .filter(|(_, e)| JS_EXTS.contains(e))
                .map(|(p, _)| p.to_owned());
            resolved == target_noext
                || stripped.as_deref() == Some(&target_noext)
                || target_index_dir.as_deref() == Some(resolved.as_str())
        })
    })
}

/// `a/./b/../c` → `a/c`, without touching the filesystem.
fn normalize(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.join("/")
}

/// Test files named after the edited one, in the usual conventions.
fn related_tests(files: &[String], t: &Target, max: usize) -> Vec<String> {
    let subject = t.module_name().to_ascii_lowercase();
    if subject.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for f in files {
        if *f == t.rel {
            continue;
        }
        let lower = f.to_ascii_lowercase();
        let (dir, name) = lower.rsplit_once('/').unwrap_or(("", &lower));
        let stem = name.split('.').next().unwrap_or(name);
        let in_test_dir = dir.split('/').any(|d| {
            matches!(
                d,
                "tests" | "test" | "__tests__" | "spec" | "specs" | "testdata"
            )
        });
        let stripped = stem
            .strip_prefix("test_")
            .or_else(|| stem.strip_suffix("_test"))
            .or_else(|| stem.strip_suffix("_spec"))
            .or_else(|| stem.strip_suffix("_tests"));
        let dotted_test = name.contains(".test.") || name.contains(".spec.");
        let named_test = stripped.is_some() || dotted_test;
        let core = stripped.unwrap_or(stem);
        if (named_test || in_test_dir) && core == subject {
            out.push(f.clone());
            if out.len() >= max {
                break;
            }
        }
    }
    out
}

/// Lines of the agent memory files that mention the edited file.
fn caveats(root: &Path, t: &Target, max: usize) -> Vec<(String, usize, String)> {
    let mut dirs = vec![String::new()];
    let mut acc = String::new();
    for part in t.dir.split('/').filter(|p| !p.is_empty()) {
        acc = if acc.is_empty() {
            part.to_owned()
        } else {
            format!("{acc}/{part}")
        };
        dirs.push(acc.clone());
    }
    // A bare `mod.rs` or `index.ts` is mentioned everywhere; only the full
    // path identifies those.
    let names: Vec<&str> = if t.generic() || t.name.len() < 5 {
        vec![&t.rel]
    } else {
        vec![&t.rel, &t.name]
    };
    let mut out = Vec::new();
    for dir in dirs {
        for file in ["MEMORY.md", "AGENTS.md", "CLAUDE.md"] {
            let rel = if dir.is_empty() {
                file.to_owned()
            } else {
                format!("{dir}/{file}")
            };
            let Ok(text) = std::fs::read_to_string(root.join(&rel)) else {
                continue;
            };
            for (i, line) in text.lines().enumerate() {
                if names.iter().any(|n| line.contains(n)) {
                    let mut l = line.trim().to_owned();
                    if l.len() > 200 {
                        let mut end = 200;
                        while !l.is_char_boundary(end) {
                            end -= 1;
                        }
                        l.truncate(end);
                        l.push('…');
                    }
                    out.push((rel.clone(), i + 1, l));
                    if out.len() >= max {
                        return out;
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, c).unwrap();
        }
        dir
    }

    fn evidence(dir: &tempfile::TempDir, file: &str) -> String {
        RepoImpactProvider::new(ImpactLimits::default(), None)
            .evidence(dir.path(), Path::new(file))
            .unwrap()
            .unwrap_or_default()
    }

    #[test]
    fn rust_mod_and_use() {
        let d = repo(&[
            ("Cargo.toml", "[package]\nname = \"my-crate\"\n"),
            ("src/lib.rs", "pub mod net;\n"),
            ("src/net/mod.rs", "pub mod http;\nmod other;\n"),
            ("src/net/http.rs", "pub fn get() {}\n"),
            ("src/net/other.rs", "use super::http::get;\n"),
            ("src/app.rs", "use crate::net::http;\n"),
            ("src/unrelated.rs", "fn http() {}\n"),
            ("tests/http.rs", "use my_crate::net::http;\n"),
            (
                "AGENTS.md",
                "# Notes\n- src/net/http.rs: keep the retry loop bounded\n- other stuff\n",
            ),
        ]);
        let e = evidence(&d, "src/net/http.rs");
        assert!(
            e.contains("`src/net/mod.rs`")
                && e.contains("`src/net/other.rs`")
                && e.contains("`src/app.rs`"),
            "{e}"
        );
        assert!(e.contains("`tests/http.rs`"), "{e}");
        assert!(!e.contains("unrelated"), "{e}");
        assert!(
            e.contains("note in `AGENTS.md:2`: - src/net/http.rs: keep the retry loop bounded"),
            "{e}"
        );
    }

    #[test]
    fn python_js_and_go_imports() {
        let d = repo(&[
            ("pkg/util.py", "def f(): pass\n"),
            ("pkg/a.py", "from pkg.util import f\n"),
            ("pkg/b.py", "from . import util\n"),
            ("c.py", "import pkg.util as u\n"),
            ("d.py", "import pkgutil\n"),
            ("tests/test_util.py", "from pkg import util\n"),
            ("web/lib/format.ts", "export const f = 1;\n"),
            ("web/app.tsx", "import { f } from './lib/format';\n"),
            ("web/x.js", "const f = require('./lib/format.ts');\n"),
            ("web/y.js", "import './lib/formatter';\n"),
            ("web/lib/format.test.ts", "import { f } from './format';\n"),
            ("go.mod", "module example.com/svc\n\ngo 1.22\n"),
            ("internal/store/db.go", "package store\n"),
            (
                "cmd/main.go",
                "import (\n\t\"example.com/svc/internal/store\"\n)\n",
            ),
        ]);
        let py = evidence(&d, "pkg/util.py");
        assert!(
            py.contains("`pkg/a.py`") && py.contains("`pkg/b.py`") && py.contains("`c.py`"),
            "{py}"
        );
        assert!(
            !py.contains("`d.py`") && py.contains("related tests: `tests/test_util.py`"),
            "{py}"
        );
        let js = evidence(&d, "web/lib/format.ts");
        assert!(
            js.contains("`web/app.tsx`") && js.contains("`web/x.js`") && !js.contains("`web/y.js`"),
            "{js}"
        );
        assert!(
            js.contains("related tests: `web/lib/format.test.ts`"),
            "{js}"
        );
        let go = evidence(&d, "internal/store/db.go");
        assert!(go.contains("`cmd/main.go`"), "{go}");
    }

    #[test]
    fn gitignore_is_honoured() {
        let d = repo(&[
            (".gitignore", "target/\n*.gen.rs\n/vendor\n!keep.gen.rs\n"),
            ("src/a.rs", "pub fn x() {}\n"),
            ("src/b.gen.rs", "use crate::a;\n"),
            ("src/keep.gen.rs", "use crate::a;\n"),
            ("target/debug/c.rs", "use crate::a;\n"),
            ("vendor/d.rs", "use crate::a;\n"),
            ("sub/.gitignore", "local.rs\n"),
            ("sub/local.rs", "use crate::a;\n"),
            ("sub/seen.rs", "use crate::a;\n"),
        ]);
        let e = evidence(&d, "src/a.rs");
        assert!(
            e.contains("`src/keep.gen.rs`") && e.contains("`sub/seen.rs`"),
            "{e}"
        );
        for hidden in ["b.gen.rs", "target/", "vendor/", "sub/local.rs"] {
            assert!(!e.contains(hidden), "{hidden} should be ignored: {e}");
        }
    }

    #[test]
    fn lists_and_context_are_capped() {
        let mut files: Vec<(String, String)> = (0..40)
            .map(|i| (format!("src/m{i}.rs"), "use crate::core;\n".to_owned()))
            .collect();
        files.push(("src/core.rs".into(), String::new()));
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let d = repo(&refs);
        let e = evidence(&d, "src/core.rs");
        assert!(e.contains("(+30 more)"), "{e}");
        let tiny = ImpactLimits {
            max_context_bytes: 256,
            ..ImpactLimits::default()
        };
        let e = RepoImpactProvider::new(tiny, None)
            .evidence(d.path(), Path::new("src/core.rs"))
            .unwrap()
            .unwrap();
        assert!(e.len() <= 256, "{}", e.len());
    }

    #[test]
    fn only_the_first_edit_gets_evidence_and_outside_files_get_none() {
        let d = repo(&[("src/a.rs", ""), ("src/b.rs", "use crate::a;\n")]);
        let p = RepoImpactProvider::new(ImpactLimits::default(), None);
        let mut input = ImpactEvidenceInput {
            session_id: "s".into(),
            file_path: d.path().join("src/a.rs"),
            tool_name: "Edit".into(),
            project_root: d.path().to_path_buf(),
            first_edit_in_session: true,
        };
        let r = p.evidence_for(&input).unwrap();
        assert!(r.additional_context.unwrap().contains("`src/b.rs`"));
        assert!(!r.decision_ask);
        input.first_edit_in_session = false;
        assert_eq!(
            p.evidence_for(&input).unwrap(),
            ImpactEvidenceResult::default()
        );
        input.first_edit_in_session = true;
        input.file_path = PathBuf::from("/etc/hosts");
        assert_eq!(
            p.evidence_for(&input).unwrap(),
            ImpactEvidenceResult::default()
        );
    }

    #[test]
    fn gitignore_patterns() {
        let m = |pat: &str, path: &str| compile_ignore(pat).unwrap().regex.is_match(path);
        assert!(m("*.log", "a/b/x.log"));
        assert!(m("/build", "build") && !m("/build", "src/build"));
        assert!(m("docs/**/*.md", "docs/a/b/c.md") && m("docs/**/*.md", "docs/c.md"));
        assert!(m("**/node_modules", "a/node_modules"));
        assert!(m("x[0-9].txt", "x1.txt") && !m("x[!0-9].txt", "x1.txt"));
        assert!(compile_ignore("# comment").is_none());
    }
}
