//! The layer table: which top-level module of `src/` may use which. A
//! module may use its own layer and every layer below it, never one above;
//! with every module in one layer, that also rules out a cycle between two
//! of them. The test reads every `crate::…` path in `src/` (tests and
//! `#[cfg(test)]` modules excepted) and fails on an arrow that points up,
//! naming the file. Arrows up that are still to be taken out are listed in
//! [`KNOWN_UPWARD`] with the reason they are there; the list only shrinks:
//! an entry that no longer occurs fails too, so it is taken out with the
//! arrow.
//!
//! This table is the one a newcomer reads first (docs/ARCHITECTURE.md
//! repeats it in words).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom first. A module not in the table fails the test.
const LAYERS: &[&[&str]] = &[
    // Leaves: no crate imports at all.
    &["base", "env_vars", "error", "escape", "output", "textfile"],
    // Where everything is; the log file.
    &["paths", "log"],
    // The ten canonical events, the source hash and the secret rules every
    // layer shares.
    &["events", "hash", "secrets"],
    // The hosts as data: every adapter file, typed, and looking one up.
    &["adapter"],
    // Hook configuration: model, schema, layered loading.
    &["config"],
    // runtime.toml.
    &["settings"],
    // Processes: spawn, sandbox, environment allowlist.
    &["runner"],
    // Project trust.
    &["trust"],
    // The runtime: event types, codec, select, fire, compose.
    &["runtime"],
    // Host adapters: decode and encode.
    &["hosts"],
    // Per-session state and records; shipping the records to a collector.
    &["session", "export"],
    // The five built-ins.
    &["builtins"],
    // Rules as data, evaluated in-process with the built-ins' shell reader.
    &["rules"],
    // The snapshot installer and host-file editors.
    &["install"],
    // The event pipeline the commands compose.
    &["pipeline"],
    // The command line and the commands.
    &["cli", "commands"],
];

/// Arrows up still in the code: (from, to, why). Take one out with the
/// arrow; never add one.
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[];

fn layer_of() -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for (i, layer) in LAYERS.iter().enumerate() {
        for module in *layer {
            assert!(m.insert(*module, i).is_none(), "{module} is in two layers");
        }
    }
    m
}

/// The source without `#[cfg(test)]` modules, comments and string
/// literals, which may name `crate::` paths without using them.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let b = text.as_bytes();
    let find = |from: usize, pat: &[u8]| {
        b[from..]
            .windows(pat.len())
            .position(|w| w == pat)
            .map_or(b.len(), |n| from + n)
    };
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            i = find(i, b"\n");
        } else if b[i..].starts_with(b"r#\"") {
            i = (find(i + 3, b"\"#") + 2).min(b.len());
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if b[i] == b'\'' && i + 2 < b.len() && b[i + 2] == b'\'' {
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every top-level module each file of `module` uses: `crate::x` paths and
/// `use crate::{x, y}` groups.
fn arrows(src: &Path) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for entry in walk(src) {
        let rel = entry
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.ends_with("tests.rs") || rel == "lib.rs" || rel == "main.rs" {
            continue;
        }
        let module = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_owned();
        let code = code_of(&std::fs::read_to_string(&entry).unwrap());
        let mut used: Vec<String> = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    used.push(name);
                }
            } else {
                used.push(
                    rest.chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect(),
                );
            }
        }
        for to in used {
            if !to.is_empty() && to != module && to != "self" {
                out.entry((module.clone(), to))
                    .or_default()
                    .insert(rel.clone());
            }
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let layers = layer_of();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut up: Vec<String> = Vec::new();
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for ((from, to), files) in arrows(&src) {
        let f = *layers
            .get(from.as_str())
            .unwrap_or_else(|| panic!("src/{from} is not in the layer table"));
        let Some(&t) = layers.get(to.as_str()) else {
            panic!("`crate::{to}` (used in {files:?}) is not in the layer table");
        };
        if t <= f {
            continue;
        }
        if KNOWN_UPWARD.iter().any(|(a, b, _)| *a == from && *b == to) {
            seen.insert((from.clone(), to.clone()));
            continue;
        }
        up.push(format!(
            "{from} → {to} (in {})",
            files.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    assert!(
        up.is_empty(),
        "arrows up the layer table:\n  {}",
        up.join("\n  ")
    );
    let stale: Vec<String> = KNOWN_UPWARD
        .iter()
        .filter(|(a, b, _)| !seen.contains(&((*a).to_owned(), (*b).to_owned())))
        .map(|(a, b, _)| format!("{a} → {b}"))
        .collect();
    assert!(
        stale.is_empty(),
        "KNOWN_UPWARD lists arrows that no longer occur; take them out: {stale:?}"
    );
}

#[test]
fn every_module_of_src_is_in_the_layer_table() {
    let layers = layer_of();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" || name == "main" || p.extension().is_some_and(|x| x != "rs") {
            continue;
        }
        assert!(
            layers.contains_key(name.as_str()),
            "src/{name} is not in the layer table"
        );
    }
    // And the table names nothing that is gone.
    for name in layers.keys() {
        assert!(
            src.join(name).is_dir() || src.join(format!("{name}.rs")).is_file(),
            "the layer table names `{name}`, which src/ does not have"
        );
    }
}
