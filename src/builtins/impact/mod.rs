//! The shipped impact-evidence provider (`[impact] enabled = true` in
//! runtime.toml): on a session's first edit of a file, tells the model who
//! depends on it — the files that import it (Rust `mod`/`use`, Python
//! `import`, JS/TS `import`/`require`, Go `import`), its related tests, and
//! the lines of MEMORY.md, AGENTS.md and CLAUDE.md that mention it — and,
//! when `ask_when_importers_at_least` is set, asks before a first edit of a
//! widely imported file. Lookups answer from a persistent import index
//! ([`index`]) that a consult only re-checks, so the hook stays fast on a
//! large repository; the walk honours .gitignore and every list is capped.

pub mod extract;
pub mod index;
pub mod walk;

pub use crate::settings::{ImpactLimits, ImpactSettings};
use std::path::{Component, Path, PathBuf};

use self::extract::Lang;
use self::index::{Index, Kind};
use super::ports::{ImpactEvidenceInput, ImpactEvidenceProvider, ImpactEvidenceResult, PortError};

/// Why the evidence for a file cannot be gathered.
#[derive(Debug, thiserror::Error)]
pub enum ImpactError {
    #[error("project root `{}` is not a directory", root.display())]
    RootNotADirectory { root: PathBuf },
}

/// Finds importers, related tests and memory caveats in the project tree.
#[derive(Debug, Clone)]
pub struct RepoImpactProvider {
    limits: ImpactLimits,
    /// Where the import index of each project is kept; `None` builds one
    /// per consult and keeps nothing.
    cache_dir: Option<PathBuf>,
    /// Ask before a first edit of a file imported by at least this many
    /// files (`ask_when_importers_at_least`; off when `None`).
    ask_threshold: Option<usize>,
}

/// One consult's findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The additional context, or `None` when there is nothing to say.
    pub context: Option<String>,
    /// How many files import the edited one (all, not only those listed).
    pub importers: usize,
    /// Whether the consult asks for confirmation.
    pub ask: bool,
    /// How the index was obtained.
    pub index: index::Source,
}

impl RepoImpactProvider {
    pub fn new(limits: ImpactLimits, cache_dir: Option<PathBuf>) -> Self {
        RepoImpactProvider {
            limits,
            cache_dir,
            ask_threshold: None,
        }
    }

    /// The provider `[impact]` describes.
    pub fn from_settings(s: ImpactSettings, cache_dir: Option<PathBuf>) -> Self {
        RepoImpactProvider::new(s.limits, cache_dir).with_ask_threshold(s.ask_threshold)
    }

    pub fn with_ask_threshold(mut self, n: Option<usize>) -> Self {
        self.ask_threshold = n;
        self
    }

    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    pub fn ask_threshold(&self) -> Option<usize> {
        self.ask_threshold
    }

    /// The evidence for `file` (absolute, or relative to `root`), or `None`
    /// when there is nothing to say.
    pub fn evidence(&self, root: &Path, file: &Path) -> Result<Option<String>, ImpactError> {
        Ok(self.report(root, file)?.context)
    }

    /// The full findings for `file`.
    pub fn report(&self, root: &Path, file: &Path) -> Result<Report, ImpactError> {
        let root = crate::paths::absolute(root);
        let file = crate::paths::absolute(&root.join(file));
        let Ok(rel) = file.strip_prefix(&root) else {
            // Outside the project: not ours to describe.
            return Ok(Report {
                context: None,
                importers: 0,
                ask: false,
                index: index::Source::Loaded,
            });
        };
        let rel = slash_path(rel);
        if !root.is_dir() {
            return Err(ImpactError::RootNotADirectory { root });
        }
        let target = Target::new(&rel);
        let settings = index::Settings {
            max_files: self.limits.max_files,
            max_file_bytes: self.limits.max_file_bytes,
        };
        let (idx, source) = index::fresh(&root, self.cache_dir.as_deref(), &settings, target.lang);
        let importers = importers(&root, &idx, &target);
        let tests = related_tests(&idx, &target, self.limits.max_entries);
        let caveats = caveats(&root, &target, self.limits.max_entries);
        let ask = self.ask_threshold.is_some_and(|n| importers.len() >= n);
        let mut report = Report {
            context: None,
            importers: importers.len(),
            ask,
            index: source,
        };
        if importers.is_empty() && tests.is_empty() && caveats.is_empty() {
            return Ok(report);
        }
        let mut out = format!(
            "Impact evidence for `{}` (first edit in this session):\n",
            crate::escape::escape(&rel)
        );
        if let (true, Some(n)) = (ask, self.ask_threshold) {
            out.push_str(&format!(
                "- confirm this edit: {} files import it (runtime.toml `[impact] ask_when_importers_at_least = {n}`)\n",
                importers.len()
            ));
        }
        let list = |label: &str, items: &[&str], total: usize| {
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
                "- note in `{}:{line}`: {}\n",
                crate::escape::escape(file),
                crate::escape::escape(text)
            ));
        }
        if idx.truncated {
            out.push_str(&format!(
                "- (only the first {} files of the project were searched)\n",
                self.limits.max_files
            ));
        }
        report.context = Some(truncate(out, self.limits.max_context_bytes));
        Ok(report)
    }
}

impl ImpactEvidenceProvider for RepoImpactProvider {
    fn evidence_for(&self, input: &ImpactEvidenceInput) -> Result<ImpactEvidenceResult, PortError> {
        if !input.first_edit_in_session {
            return Ok(ImpactEvidenceResult::default());
        }
        let report = self.report(&input.project_root, &input.file_path)?;
        Ok(ImpactEvidenceResult {
            additional_context: report.context,
            decision_ask: report.ask,
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

fn parent(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

/// The edited file, in the shapes each language refers to it by.
struct Target {
    rel: String,
    dir: String,
    stem: String,
    name: String,
    lang: Option<Lang>,
}

impl Target {
    fn new(rel: &str) -> Target {
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
        Target {
            rel: rel.to_owned(),
            dir: dir.to_owned(),
            stem: stem.to_owned(),
            name: name.to_owned(),
            lang: Lang::of(&name.to_ascii_lowercase()),
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

/// `s` is `needle`, or starts with it followed by `sep`.
fn under(s: &str, needle: &str, sep: &str) -> bool {
    s.strip_prefix(needle)
        .is_some_and(|r| r.is_empty() || r.starts_with(sep))
}

/// The files whose imports name the target, in walk order.
fn importers<'a>(root: &Path, idx: &'a Index, t: &Target) -> Vec<&'a str> {
    let Some(lang) = t.lang else {
        return Vec::new();
    };
    // Whether `f` has an import `pred` accepts; `needle` is a substring
    // every such import has, to skip most files with one search.
    let names = |f: &index::FileRec, needle: &str, pred: &dyn Fn(&str) -> bool| {
        idx.str(f.imports).contains(needle) && idx.imports(f).any(pred)
    };
    let candidates = idx
        .files
        .iter()
        .filter(|f| f.kind == Kind::Source(lang) && idx.rel(f) != t.rel);
    let rels = |it: &mut dyn Iterator<Item = &'a index::FileRec>| -> Vec<&'a str> {
        it.map(|f| idx.rel(f)).collect()
    };
    match lang {
        Lang::Rust => {
            let (crate_dir, segments) = extract::rust_module(&t.rel);
            let path = segments.join("::");
            // Inside its crate: `crate::a::b`, from files of the same crate.
            let internal = (!segments.is_empty()).then(|| format!("crate::{path}"));
            // Elsewhere: `my_crate::a::b` (for a crate root, any use of it).
            let external = rust_crate_name(root, &crate_dir).map(|n| {
                if segments.is_empty() {
                    n
                } else {
                    format!("{n}::{path}")
                }
            });
            let hit = |needle: &Option<String>, s: &str| {
                needle.as_deref().is_some_and(|n| under(s, n, "::"))
            };
            let has = |f: &index::FileRec, needle: &Option<String>| {
                needle
                    .as_deref()
                    .is_some_and(|n| names(f, n, &|s| hit(needle, s)))
            };
            rels(&mut candidates.filter(|f| {
                has(f, &external)
                    || (has(f, &internal) && extract::rust_module(idx.rel(f)).0 == crate_dir)
            }))
        }
        Lang::Python => {
            let module = extract::python_module(&t.rel);
            if module.is_empty() {
                return Vec::new();
            }
            rels(&mut candidates.filter(|f| names(f, &module, &|s| under(s, &module, "."))))
        }
        Lang::Js => {
            let noext = t.rel.rsplit_once('.').map_or(t.rel.as_str(), |(p, _)| p);
            let index_dir = (t.stem == "index").then_some(t.dir.as_str());
            let names_target = |s: &str| {
                let stripped = s
                    .rsplit_once('.')
                    .filter(|(_, e)| extract::JS_EXTS.contains(e))
                    .map(|(p, _)| p);
                s == noext || stripped == Some(noext) || index_dir == Some(s)
            };
            let needle = index_dir.unwrap_or(noext);
            rels(&mut candidates.filter(|f| names(f, needle, &names_target)))
        }
        Lang::Go => {
            // Go imports packages: the directory, not the file.
            let Some(import) = go_import_path(root, &t.dir) else {
                return Vec::new();
            };
            rels(
                &mut candidates
                    .filter(|f| parent(idx.rel(f)) != t.dir && names(f, &import, &|s| s == import)),
            )
        }
    }
}

/// The crate name other crates use for the crate rooted in `crate_dir`
/// (`src/`, `crates/x/src/`, `tests/`, …): its package's Cargo.toml, else
/// the repository's.
fn rust_crate_name(root: &Path, crate_dir: &str) -> Option<String> {
    let dir = crate_dir.trim_end_matches('/');
    let dir = dir.strip_suffix("/bin").unwrap_or(dir);
    let package = match dir.rsplit_once('/') {
        Some((p, _)) => p,
        None => "",
    };
    index::package_name(&root.join(package).join("Cargo.toml"))
        .or_else(|| index::package_name(&root.join("Cargo.toml")))
}

/// The import path of the Go package in `dir`, from the nearest go.mod.
fn go_import_path(root: &Path, dir: &str) -> Option<String> {
    let mut base = dir;
    loop {
        if let Ok(text) = std::fs::read_to_string(root.join(base).join("go.mod"))
            && let Some(module) = text.lines().find_map(|l| {
                l.trim()
                    .strip_prefix("module ")
                    .map(|m| m.trim().trim_matches('"').to_owned())
            })
        {
            let sub = dir.strip_prefix(base).unwrap_or("").trim_start_matches('/');
            return Some(if sub.is_empty() {
                module
            } else {
                format!("{module}/{sub}")
            });
        }
        if base.is_empty() {
            return None;
        }
        base = parent(base);
    }
}

/// Test files named after the edited one, in the usual conventions.
fn related_tests<'a>(idx: &'a Index, t: &Target, max: usize) -> Vec<&'a str> {
    let subject = t.module_name();
    if subject.is_empty() {
        return Vec::new();
    }
    let strip_prefix = |s: &'a str, p: &str| {
        s.get(..p.len())
            .filter(|h| h.eq_ignore_ascii_case(p))
            .map(|_| &s[p.len()..])
    };
    let strip_suffix = |s: &'a str, p: &str| {
        s.len().checked_sub(p.len()).and_then(|at| {
            s.get(at..)
                .filter(|t| t.eq_ignore_ascii_case(p))
                .map(|_| &s[..at])
        })
    };
    let mut out = Vec::new();
    for f in &idx.files {
        let rel = idx.rel(f);
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let stem = name.split('.').next().unwrap_or(name);
        // Cheap rejection first: most files are not named after the subject.
        if stem.len() < subject.len() || rel == t.rel {
            continue;
        }
        let stripped = strip_prefix(stem, "test_")
            .or_else(|| strip_suffix(stem, "_test"))
            .or_else(|| strip_suffix(stem, "_spec"))
            .or_else(|| strip_suffix(stem, "_tests"));
        let core = stripped.unwrap_or(stem);
        if !core.eq_ignore_ascii_case(subject) {
            continue;
        }
        let lower = name.to_ascii_lowercase();
        let dotted_test = lower.contains(".test.") || lower.contains(".spec.");
        let in_test_dir = dir.split('/').any(|d| {
            ["tests", "test", "__tests__", "spec", "specs", "testdata"]
                .iter()
                .any(|t| d.eq_ignore_ascii_case(t))
        });
        if stripped.is_some() || dotted_test || in_test_dir {
            out.push(rel);
            if out.len() >= max {
                break;
            }
        }
    }
    out
}

/// Lines of the agent memory files that mention the edited file: those in
/// the project root and in each directory down to the file's.
fn caveats(root: &Path, t: &Target, max: usize) -> Vec<(String, usize, String)> {
    let mut dirs = vec![String::new()];
    let mut acc = String::new();
    for part in t.dir.split('/').filter(|p| !p.is_empty()) {
        acc = walk::join(&acc, part);
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
            let rel = walk::join(&dir, file);
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
mod tests;
