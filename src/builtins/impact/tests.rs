use std::time::{Duration, SystemTime};

use super::index::{self, Source};
use super::*;

fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (p, c) in files {
        write(dir.path(), p, c);
    }
    age(dir.path());
    dir
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Moves every mtime a minute back, out of the racy window, so a warm
/// consult trusts what the first one read.
fn age(root: &Path) {
    let then = SystemTime::now() - Duration::from_secs(60);
    for e in walkdir::WalkDir::new(root).contents_first(true) {
        let e = e.unwrap();
        let f = std::fs::File::open(e.path()).unwrap();
        f.set_modified(then).unwrap();
    }
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
        (
            "src/grouped.rs",
            "use crate::net::{self, http::get as g};\n",
        ),
        ("src/inline.rs", "fn f() { crate::net::http::get() }\n"),
        ("src/unrelated.rs", "fn http() {}\nuse crate::net::https;\n"),
        ("tests/http.rs", "use my_crate::net::http;\n"),
        ("tests/other_crate.rs", "use crate::net::http;\n"),
        (
            "AGENTS.md",
            "# Notes\n- src/net/http.rs: keep the retry loop bounded\n- other stuff\n",
        ),
    ]);
    let e = evidence(&d, "src/net/http.rs");
    assert!(
        e.contains("imported by: `src/app.rs`, `src/grouped.rs`, `src/inline.rs`, `src/net/mod.rs`, `src/net/other.rs`, `tests/http.rs`\n"),
        "{e}"
    );
    assert!(e.contains("related tests: `tests/http.rs`"), "{e}");
    assert!(
        !e.contains("unrelated") && !e.contains("other_crate"),
        "{e}"
    );
    assert!(
        e.contains("note in `AGENTS.md:2`: - src/net/http.rs: keep the retry loop bounded"),
        "{e}"
    );
    // The crate root is imported by the crates that use it by name.
    let e = evidence(&d, "src/lib.rs");
    assert!(e.contains("imported by: `tests/http.rs`\n"), "{e}");
}

#[test]
fn python_js_and_go_imports() {
    let d = repo(&[
        ("pkg/__init__.py", ""),
        ("pkg/util.py", "def f(): pass\n"),
        ("pkg/a.py", "from pkg.util import f\n"),
        ("pkg/b.py", "from . import util\n"),
        ("pkg/sub/c.py", "from ..util import f\n"),
        ("c.py", "import pkg.util as u\n"),
        ("d.py", "import pkgutil\n"),
        ("e.py", "from pkg import (\n    other,\n    util,\n)\n"),
        ("tests/test_util.py", "from pkg import util\n"),
        ("web/lib/format.ts", "export const f = 1;\n"),
        ("web/app.tsx", "import { f } from './lib/format';\n"),
        ("web/x.js", "const f = require('./lib/format.ts');\n"),
        ("web/y.js", "import './lib/formatter';\n"),
        ("web/lib/format.test.ts", "import { f } from './format';\n"),
        ("go.mod", "module example.com/svc\n\ngo 1.22\n"),
        ("internal/store/db.go", "package store\n"),
        (
            "internal/store/db_test.go",
            "package store\n\nimport \"testing\"\n",
        ),
        (
            "cmd/main.go",
            "package main\n\nimport (\n\t\"example.com/svc/internal/store\"\n)\n",
        ),
        (
            "cmd/other.go",
            "package main\n\nimport \"example.com/svc/internal/storage\"\n",
        ),
    ]);
    let py = evidence(&d, "pkg/util.py");
    assert!(
        py.contains(
            "imported by: `c.py`, `e.py`, `pkg/a.py`, `pkg/b.py`, `pkg/sub/c.py`, `tests/test_util.py`\n"
        ),
        "{py}"
    );
    assert!(py.contains("related tests: `tests/test_util.py`"), "{py}");
    let js = evidence(&d, "web/lib/format.ts");
    assert!(
        js.contains("imported by: `web/app.tsx`, `web/lib/format.test.ts`, `web/x.js`\n"),
        "{js}"
    );
    assert!(
        js.contains("related tests: `web/lib/format.test.ts`"),
        "{js}"
    );
    let go = evidence(&d, "internal/store/db.go");
    assert!(go.contains("imported by: `cmd/main.go`\n"), "{go}");
    assert!(
        go.contains("related tests: `internal/store/db_test.go`"),
        "{go}"
    );
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
        ("src/sub/.gitignore", "local.rs\n"),
        ("src/sub/local.rs", "use crate::a;\n"),
        ("src/sub/seen.rs", "use crate::a;\n"),
        (".git/info/exclude", "src/private.rs\n"),
        ("src/private.rs", "use crate::a;\n"),
    ]);
    let e = evidence(&d, "src/a.rs");
    assert!(
        e.contains("imported by: `src/keep.gen.rs`, `src/sub/seen.rs`\n"),
        "{e}"
    );
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
    let few = ImpactLimits {
        max_files: 5,
        ..ImpactLimits::default()
    };
    let e = RepoImpactProvider::new(few, None)
        .evidence(d.path(), Path::new("src/core.rs"))
        .unwrap()
        .unwrap();
    assert!(
        e.contains("(only the first 5 files of the project were searched)"),
        "{e}"
    );
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
fn a_widely_imported_file_asks_once_the_threshold_is_set() {
    let d = repo(&[
        ("src/core.rs", ""),
        ("src/a.rs", "use crate::core;\n"),
        ("src/b.rs", "use crate::core::x;\n"),
        ("src/leaf.rs", ""),
    ]);
    let input = |file: &str| ImpactEvidenceInput {
        session_id: "s".into(),
        file_path: d.path().join(file),
        tool_name: "Edit".into(),
        project_root: d.path().to_path_buf(),
        first_edit_in_session: true,
    };
    let at = |n: Option<usize>| {
        RepoImpactProvider::new(ImpactLimits::default(), None).with_ask_threshold(n)
    };
    let r = at(Some(2)).evidence_for(&input("src/core.rs")).unwrap();
    assert!(r.decision_ask);
    let context = r.additional_context.unwrap();
    assert!(
        context.contains(
            "confirm this edit: 2 files import it (runtime.toml `[impact] ask_when_importers_at_least = 2`)"
        ),
        "{context}"
    );
    assert!(
        !at(Some(3))
            .evidence_for(&input("src/core.rs"))
            .unwrap()
            .decision_ask
    );
    assert!(
        !at(None)
            .evidence_for(&input("src/core.rs"))
            .unwrap()
            .decision_ask
    );
    let leaf = at(Some(1)).evidence_for(&input("src/leaf.rs")).unwrap();
    assert_eq!(leaf, ImpactEvidenceResult::default());

    let table = |text: &str| {
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        ImpactSettings::from_table(doc.get("impact").and_then(toml_edit::Item::as_table_like))
            .ask_threshold
    };
    assert_eq!(
        table("[impact]\nask_when_importers_at_least = 5\n"),
        Some(5)
    );
    assert_eq!(table("[impact]\nask_when_importers_at_least = 0\n"), None);
    assert_eq!(table("[impact]\nask_when_importers_at_least = -3\n"), None);
    assert_eq!(
        table("[impact]\nask_when_importers_at_least = \"x\"\n"),
        None
    );
    assert_eq!(table("[impact]\nenabled = true\n"), None);
}

// ---- the persistent index -----------------------------------------------

struct Cached {
    repo: tempfile::TempDir,
    cache: tempfile::TempDir,
}

impl Cached {
    fn new(files: &[(&str, &str)]) -> Cached {
        Cached {
            repo: repo(files),
            cache: tempfile::tempdir().unwrap(),
        }
    }

    fn provider(&self) -> RepoImpactProvider {
        RepoImpactProvider::new(
            ImpactLimits::default(),
            Some(self.cache.path().join("impact-cache")),
        )
    }

    fn report(&self, file: &str) -> Report {
        self.provider()
            .report(self.repo.path(), Path::new(file))
            .unwrap()
    }

    fn importers(&self, file: &str) -> (String, Source) {
        let r = self.report(file);
        let line = r
            .context
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("- imported by: ").map(str::to_owned))
            .unwrap_or_default();
        (line, r.index)
    }

    fn index_file(&self) -> PathBuf {
        index::index_file(
            &self.cache.path().join("impact-cache"),
            &crate::paths::absolute(self.repo.path()),
        )
    }
}

fn small_repo() -> Cached {
    Cached::new(&[
        ("Cargo.toml", "[package]\nname = \"app\"\n"),
        ("src/lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("src/a.rs", "pub fn x() {}\n"),
        ("src/b.rs", "use crate::a::x;\n"),
        ("src/c.rs", "fn y() {}\n"),
        ("web/util.ts", "export const u = 1;\n"),
        ("web/main.ts", "import { u } from './util';\n"),
    ])
}

#[test]
fn a_warm_consult_reuses_the_saved_index() {
    let c = small_repo();
    let cold = c.importers("src/a.rs");
    assert_eq!(cold, ("`src/b.rs`, `src/lib.rs`".into(), Source::Built));
    assert!(c.index_file().is_file());
    let warm = c.importers("src/a.rs");
    assert_eq!(warm, ("`src/b.rs`, `src/lib.rs`".into(), Source::Loaded));
    // A consult reads only its own language: the TypeScript files are read
    // by the first TypeScript consult, into the same index.
    let saved = index::load(&c.index_file()).unwrap();
    let main_ts = saved
        .files
        .iter()
        .find(|f| saved.rel(f) == "web/main.ts")
        .unwrap();
    assert_eq!(saved.imports(main_ts).count(), 0, "not read yet");
    assert_eq!(
        c.importers("web/util.ts"),
        ("`web/main.ts`".into(), Source::Refreshed)
    );
    assert_eq!(
        c.importers("web/util.ts"),
        ("`web/main.ts`".into(), Source::Loaded)
    );
    assert_eq!(c.importers("src/a.rs").1, Source::Loaded);
    // Without a cache directory nothing is kept.
    let p = RepoImpactProvider::new(ImpactLimits::default(), None);
    let r = p.report(c.repo.path(), Path::new("src/a.rs")).unwrap();
    assert_eq!(r.index, Source::Built);
}

#[test]
fn a_changed_file_is_picked_up() {
    let c = small_repo();
    c.importers("src/a.rs");
    write(c.repo.path(), "src/c.rs", "use crate::a;\nfn y() {}\n");
    assert_eq!(
        c.importers("src/a.rs"),
        (
            "`src/b.rs`, `src/c.rs`, `src/lib.rs`".into(),
            Source::Refreshed
        )
    );
    // Same size, same mtime as when it was read a moment ago: still re-read,
    // because a fresh mtime is never trusted.
    let path = c.repo.path().join("src/c.rs");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, "use crate::b;\nfn y() {}\n").unwrap();
    std::fs::File::open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(
        c.importers("src/a.rs"),
        ("`src/b.rs`, `src/lib.rs`".into(), Source::Refreshed)
    );
}

#[test]
fn added_and_deleted_files_and_directories_are_picked_up() {
    let c = small_repo();
    c.importers("src/a.rs");
    std::fs::remove_file(c.repo.path().join("src/b.rs")).unwrap();
    write(c.repo.path(), "src/deep/er/d.rs", "use crate::a;\n");
    write(
        c.repo.path(),
        "web/extra.ts",
        "import { u } from './util';\n",
    );
    let (line, source) = c.importers("src/a.rs");
    assert_eq!(line, "`src/deep/er/d.rs`, `src/lib.rs`");
    assert_eq!(source, Source::Refreshed);
    // The new TypeScript file was read too, though the lookup was for Rust.
    assert_eq!(
        c.importers("web/util.ts").0,
        "`web/extra.ts`, `web/main.ts`"
    );
    std::fs::remove_dir_all(c.repo.path().join("src/deep")).unwrap();
    assert_eq!(c.importers("src/a.rs").0, "`src/lib.rs`");
    let saved = index::load(&c.index_file()).unwrap();
    assert!(saved.files.iter().all(|f| !saved.rel(f).contains("deep")));
    assert!(
        saved
            .dirs
            .iter()
            .all(|d| !saved.str(d.rel).contains("deep"))
    );
}

#[test]
fn a_changed_gitignore_or_crate_name_rebuilds() {
    let c = small_repo();
    write(c.repo.path(), "tests/it.rs", "use app::a;\n");
    age(c.repo.path());
    assert_eq!(
        c.importers("src/a.rs").0,
        "`src/b.rs`, `src/lib.rs`, `tests/it.rs`"
    );
    write(c.repo.path(), ".gitignore", "src/b.rs\n");
    assert_eq!(
        c.importers("src/a.rs"),
        ("`src/lib.rs`, `tests/it.rs`".into(), Source::Rebuilt)
    );
    write(
        c.repo.path(),
        "Cargo.toml",
        "[package]\nname = \"renamed\"\n",
    );
    assert_eq!(
        c.importers("src/a.rs"),
        ("`src/lib.rs`".into(), Source::Rebuilt)
    );
}

#[test]
fn a_rebuild_carries_what_it_knew_of_the_other_languages() {
    let c = small_repo();
    assert_eq!(
        c.importers("web/util.ts"),
        ("`web/main.ts`".into(), Source::Built)
    );
    write(c.repo.path(), ".gitignore", "src/c.rs\n");
    let past = SystemTime::now() - Duration::from_secs(30);
    for p in [
        c.repo.path().join(".gitignore"),
        c.repo.path().to_path_buf(),
    ] {
        std::fs::File::open(p).unwrap().set_modified(past).unwrap();
    }
    assert_eq!(
        c.importers("src/a.rs"),
        ("`src/b.rs`, `src/lib.rs`".into(), Source::Rebuilt)
    );
    // The TypeScript imports came over unread, and their stamps still hold.
    assert_eq!(
        c.importers("web/util.ts"),
        ("`web/main.ts`".into(), Source::Loaded)
    );
}

#[test]
fn a_corrupt_or_foreign_index_is_rebuilt_not_an_error() {
    let c = small_repo();
    c.importers("src/a.rs");
    let file = c.index_file();
    let good = std::fs::read(&file).unwrap();

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x55;
    let mut newer = good.clone();
    newer[8] = newer[8].wrapping_add(1); // the version
    for bad in [
        flipped,
        newer,
        good[..good.len() / 2].to_vec(),
        b"not an index".to_vec(),
        Vec::new(),
    ] {
        std::fs::write(&file, &bad).unwrap();
        assert!(index::load(&file).is_none());
        assert_eq!(
            c.importers("src/a.rs"),
            ("`src/b.rs`, `src/lib.rs`".into(), Source::Built)
        );
        assert!(index::load(&file).is_some(), "rewritten intact");
    }
    // An index of another root under this root's name is not used.
    let other = small_repo();
    other.importers("src/a.rs");
    std::fs::copy(other.index_file(), &file).unwrap();
    assert_eq!(c.importers("src/a.rs").1, Source::Built);
    // Nor one built with other limits.
    let p = RepoImpactProvider::new(
        ImpactLimits {
            max_files: 100,
            ..ImpactLimits::default()
        },
        Some(c.cache.path().join("impact-cache")),
    );
    let r = p.report(c.repo.path(), Path::new("src/a.rs")).unwrap();
    assert_eq!(r.index, Source::Built);
}

#[test]
fn concurrent_builders_leave_one_intact_index() {
    let c = small_repo();
    let expected = "`src/b.rs`, `src/lib.rs`".to_owned();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let c = &c;
                s.spawn(move || {
                    // Half of them change a file first, so writers differ.
                    if i % 2 == 1 {
                        write(c.repo.path(), &format!("src/new{i}.rs"), "fn z() {}\n");
                    }
                    (0..5)
                        .map(|_| c.importers("src/a.rs").0)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for got in h.join().unwrap() {
                assert_eq!(got, expected);
            }
        }
    });
    let saved = index::load(&c.index_file()).expect("an intact index");
    assert!(saved.files.iter().any(|f| saved.rel(f) == "src/a.rs"));
    let leftovers: Vec<_> = std::fs::read_dir(c.cache.path().join("impact-cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn the_cache_keeps_a_bounded_number_of_indexes() {
    let c = small_repo();
    let dir = c.cache.path().join("impact-cache");
    std::fs::create_dir_all(&dir).unwrap();
    let old = SystemTime::now() - Duration::from_secs(7200);
    for i in 0..index::MAX_INDEXES + 4 {
        let f = dir.join(format!("{i:016x}.idx"));
        std::fs::write(&f, b"x").unwrap();
        std::fs::File::open(&f).unwrap().set_modified(old).unwrap();
    }
    let stale_tmp = dir.join(".tmp-crashed.idx");
    std::fs::write(&stale_tmp, b"x").unwrap();
    std::fs::File::open(&stale_tmp)
        .unwrap()
        .set_modified(old)
        .unwrap();
    c.importers("src/a.rs");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), index::MAX_INDEXES, "{names:?}");
    assert!(c.index_file().is_file(), "the newest index is kept");
    assert!(!stale_tmp.exists());
}
