//! The secret scanners (`keryx.security-check-input` and
//! `keryx.security-check-output`) over a corpus, the way a benchmark would
//! measure them: what share of secret-carrying prompts and files they deny,
//! and how many ordinary ones they wrongly deny. docs/SECRETS.md reports
//! the numbers this prints.
//!
//! - Secret-carrying items: tests/fixtures/secrets/secrets.jsonl, written by
//!   make.py beside it (fresh random values in each provider's documented
//!   shape; stored reversed, see make.py).
//! - Ordinary items, all real: the shell commands of
//!   tests/fixtures/commands/ as prompts; this project's own files; and
//!   the source files of some of its dependencies, read from the cargo
//!   registry where the build unpacked them, at the versions Cargo.lock
//!   pins (crates.io packages are immutable and checksummed there, so the
//!   set is the same on every machine that built this test). Nothing is
//!   copied into this repository.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use keryx_hooks::builtins::ports::Verdict;
use keryx_hooks::builtins::security::{check_input, check_output};
use keryx_hooks::secrets::Rules;
use serde_json::{Value, json};

/// Dependencies whose sources are read as ordinary code: MIT or Apache-2.0
/// crates this project builds on every platform, of many file kinds (Rust,
/// Markdown, TOML, JSON, YAML, shell, test vectors).
const DEPENDENCIES: [&str; 13] = [
    "assert_cmd",
    "clap_builder",
    "dirs",
    "fs4",
    "insta",
    "regex",
    "serde",
    "serde_json",
    "sha2",
    "tempfile",
    "thiserror",
    "toml_edit",
    "walkdir",
];

/// Files larger than this are left out (generated tables, not code).
const MAX_FILE: u64 = 512 * 1024;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn is_deny(v: &Verdict) -> Option<&str> {
    match v {
        Verdict::Deny(r) => Some(r),
        Verdict::Allow => None,
    }
}

fn prompt(text: &str) -> Value {
    json!({"event": "UserPromptSubmit", "prompt": text})
}

fn write(file: &str, text: &str) -> Value {
    json!({"tool_name": "Write", "tool_input": {"file_path": file, "content": text}})
}

struct SecretItem {
    provider: String,
    target: String,
    file: Option<String>,
    text: String,
    secret: String,
}

fn unreverse(s: &str) -> String {
    s.chars().rev().collect()
}

fn secret_items() -> Vec<SecretItem> {
    let path = root().join("tests/fixtures/secrets/secrets.jsonl");
    let text = std::fs::read_to_string(&path).expect("secrets.jsonl");
    text.lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("a JSON line");
            let s = |k: &str| v[k].as_str().map(str::to_owned);
            SecretItem {
                provider: s("provider").expect("provider"),
                target: s("target").expect("target"),
                file: s("file"),
                text: unreverse(&s("text").expect("text")),
                secret: unreverse(&s("value").expect("value")),
            }
        })
        .collect()
}

/// Every text file under `dir`, sorted, at most [`MAX_FILE`] bytes.
fn text_files(dir: &Path, skip: &[&Path]) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !skip.iter().any(|s| e.path().starts_with(s)))
        .filter_map(Result::ok)
    {
        if !entry.file_type().is_file() || entry.metadata().map_or(true, |m| m.len() > MAX_FILE) {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(entry.path()) {
            out.push((entry.path().to_owned(), text));
        }
    }
    out
}

/// `name-version` of each of [`DEPENDENCIES`] that Cargo.lock pins, from
/// crates.io.
fn pinned_dependencies() -> Vec<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    let doc: toml_edit::DocumentMut = lock.parse().expect("Cargo.lock is TOML");
    let mut out = Vec::new();
    for pkg in doc["package"].as_array_of_tables().expect("[[package]]") {
        let name = pkg["name"].as_str().unwrap_or_default();
        let from_crates_io = pkg
            .get("source")
            .and_then(|s| s.as_str())
            .is_some_and(|s| s.contains("crates.io-index"));
        if DEPENDENCIES.contains(&name) && from_crates_io {
            out.push(format!("{name}-{}", pkg["version"].as_str().unwrap()));
        }
    }
    out
}

/// Where cargo unpacked registry sources: `$CARGO_HOME/registry/src/*/`.
fn registry_dirs() -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let src = home.join("registry/src");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&src)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (the registry sources the build used)",
                src.display()
            )
        })
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

/// The ordinary corpus: (label, payload, is a prompt).
fn ordinary_items() -> Vec<(String, Value, bool)> {
    let mut items = Vec::new();
    // Real commands, as a person would paste them into a prompt.
    for name in ["ordinary.txt", "denied.txt"] {
        let path = root().join("tests/fixtures/commands").join(name);
        let text = std::fs::read_to_string(&path).expect("command corpus");
        for line in text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        {
            let command = line.rsplit('\t').next().unwrap_or(line);
            items.push((
                format!("{name}: {command}"),
                prompt(&format!("run `{command}` and tell me what it prints")),
                true,
            ));
        }
    }
    // This project's own files, as writes and (the Markdown) as prompts.
    let own_skip = [
        root().join("target"),
        root().join(".git"),
        // Installed host CLIs and benchmark tools (git-ignored, not ours).
        root().join(".cache"),
        root().join("tests/fixtures/secrets"),
    ];
    let own_skip: Vec<&Path> = own_skip.iter().map(PathBuf::as_path).collect();
    let mut own = 0;
    for (path, text) in text_files(root(), &own_skip) {
        let label = path.strip_prefix(root()).unwrap().display().to_string();
        if label.ends_with(".md") {
            items.push((format!("{label} (prompt)"), prompt(&text), true));
        }
        items.push((label.clone(), write(&label, &text), false));
        own += 1;
    }
    assert!(own > 100, "only {own} files of this project");
    // Dependencies' sources, at the pinned versions.
    let registries = registry_dirs();
    for dep in pinned_dependencies() {
        let dir = registries
            .iter()
            .map(|r| r.join(&dep))
            .find(|d| d.is_dir())
            .unwrap_or_else(|| {
                panic!("{dep}: not unpacked under $CARGO_HOME/registry/src (build the tests first)")
            });
        let files = text_files(&dir, &[]);
        assert!(!files.is_empty(), "{dep}: no text files");
        for (path, text) in files {
            let label = format!("{dep}/{}", path.strip_prefix(&dir).unwrap().display());
            items.push((label.clone(), write(&label, &text), false));
        }
    }
    items
}

#[test]
fn the_scanners_catch_98_percent_of_secrets_and_deny_nothing_ordinary() {
    let rules = Rules::builtin();
    // The numbers, printed whether the test passes or fails (docs/SECRETS.md).
    let mut report = String::new();

    // Secrets.
    let secrets = secret_items();
    assert!(secrets.len() >= 300, "{} secret items", secrets.len());
    let mut per_provider: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut missed = Vec::new();
    let mut leaky = Vec::new();
    for item in &secrets {
        let verdict = match item.target.as_str() {
            "input" => check_input(&prompt(&item.text), &rules),
            _ => check_output(
                &write(item.file.as_deref().unwrap_or("f"), &item.text),
                &rules,
            ),
        };
        let entry = per_provider.entry(&item.provider).or_default();
        entry.1 += 1;
        match is_deny(&verdict) {
            Some(reason) => {
                entry.0 += 1;
                // Kind, place and the way on; never the secret.
                let gate = match item.target.as_str() {
                    "input" => "keryx.security-check-input",
                    _ => "keryx.security-check-output",
                };
                let helps = reason.contains("(rule `")
                    && reason.contains(", column ")
                    && reason.contains("environment variable")
                    && reason.contains(&format!(
                        "`keryx-hooks disable {gate} --user --acknowledge-gate-risk`"
                    ));
                if reason.contains(&item.secret) || !helps {
                    leaky.push(format!("{}: {reason}", item.provider));
                }
            }
            None => missed.push(format!(
                "{} ({}, {})",
                item.provider,
                item.target,
                item.file.as_deref().unwrap_or("prompt")
            )),
        }
    }
    let caught: usize = per_provider.values().map(|v| v.0).sum();
    let rate = caught as f64 * 100.0 / secrets.len() as f64;
    writeln!(
        report,
        "secret-carrying items: {caught} of {} caught ({rate:.1} %)",
        secrets.len()
    )
    .unwrap();
    for (provider, (c, n)) in &per_provider {
        writeln!(report, "  {provider:<14} {c:>3} / {n:<3}").unwrap();
    }
    for m in &missed {
        writeln!(report, "  missed: {m}").unwrap();
    }

    // Ordinary material.
    let ordinary = ordinary_items();
    assert!(ordinary.len() >= 1000, "{} ordinary items", ordinary.len());
    let (mut prompts, mut files, mut bytes) = (0, 0, 0);
    let mut false_denies = Vec::new();
    for (label, payload, is_prompt) in &ordinary {
        let verdict = if *is_prompt {
            prompts += 1;
            bytes += payload["prompt"].as_str().map_or(0, str::len);
            check_input(payload, &rules)
        } else {
            files += 1;
            bytes += payload["tool_input"]["content"]
                .as_str()
                .map_or(0, str::len);
            check_output(payload, &rules)
        };
        if let Some(reason) = is_deny(&verdict) {
            false_denies.push(format!("{label}: {reason}"));
        }
    }
    writeln!(
        report,
        "ordinary items: {} ({prompts} prompts, {files} files, {} KiB): {} denied",
        ordinary.len(),
        bytes / 1024,
        false_denies.len()
    )
    .unwrap();
    {
        use std::io::Write as _;
        // Straight to stdout: the harness shows it even for a passing test.
        std::io::stdout().write_all(report.as_bytes()).unwrap();
    }
    for d in &false_denies {
        writeln!(report, "  false deny: {d}").unwrap();
    }

    assert!(
        leaky.is_empty(),
        "reasons must name kind, place and the way on, never the secret: {leaky:#?}"
    );
    assert!(false_denies.is_empty(), "false denies: {false_denies:#?}");
    assert!(rate >= 98.0, "caught {rate:.1} %; missed: {missed:#?}");
}
