#!/usr/bin/env bash
# Compares ctx-guard's hand-written shell reader (src/builtins/shell.rs) with
# brush-parser, a maintained POSIX/bash parser, on the same corpus of real
# commands (tests/fixtures/commands/*.txt): how many each accepts, and the
# time per command. The comparison builds in a scratch crate under
# target/shell-parsers, so brush-parser never enters the project's own
# dependency tree.
#
#   bench/shell-parsers.sh [BRUSH_VERSION]     (default 0.4)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$REPO/target/shell-parsers"
mkdir -p "$DIR/src"
cat >"$DIR/Cargo.toml" <<TOML
[package]
name = "shell-parsers"
version = "0.0.0"
edition = "2021"
publish = false
[workspace]
[dependencies]
brush-parser = "${1:-0.4}"
keryx-hooks = { path = "$REPO" }
[profile.release]
lto = "thin"
codegen-units = 4
TOML
cat >"$DIR/src/main.rs" <<'RS'
use std::io::BufRead;
use std::time::Instant;

fn main() {
    let mut lines = Vec::new();
    for path in std::env::args().skip(1) {
        let f = std::fs::File::open(&path).expect("corpus file");
        for line in std::io::BufReader::new(f).lines() {
            let line = line.unwrap();
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            // denied.txt is `<needle> TAB <command>`.
            let cmd = line.split_once('\t').map_or(line.as_str(), |(_, c)| c).to_owned();
            lines.push(cmd);
        }
    }
    let opts = brush_parser::ParserOptions::default();
    let brush = |s: &str| {
        brush_parser::tokenize_str(s)
            .map_err(|e| format!("{e:?}"))
            .and_then(|t| brush_parser::parse_tokens(&t, &opts).map_err(|e| format!("{e:?}")))
    };
    let rounds = 50;
    let t = Instant::now();
    let mut rejected = Vec::new();
    for r in 0..rounds {
        for l in &lines {
            if let Err(e) = brush(l) {
                if r == 0 {
                    rejected.push((l.clone(), e));
                }
            }
        }
    }
    let brush_us = t.elapsed().as_secs_f64() * 1e6 / (rounds * lines.len()) as f64;
    let t = Instant::now();
    let mut too_deep = 0;
    for r in 0..rounds {
        for l in &lines {
            let s = keryx_hooks::builtins::shell::Script::parse(l);
            if r == 0 && s.too_deep {
                too_deep += 1;
            }
        }
    }
    let ours_us = t.elapsed().as_secs_f64() * 1e6 / (rounds * lines.len()) as f64;
    println!("{} commands", lines.len());
    println!("brush-parser: {} accepted, {} rejected, {brush_us:.2} us/command", lines.len() - rejected.len(), rejected.len());
    println!("ctx-guard's reader: {} read, {too_deep} past its nesting cap, {ours_us:.2} us/command", lines.len() - too_deep);
    for (l, e) in &rejected {
        println!("brush-parser rejected: {l}\n    {}", &e[..e.len().min(160)]);
    }
}
RS
cd "$DIR"
cargo build --release --quiet
echo "brush-parser's dependency tree: $(cargo tree --prefix none -e normal -p brush-parser | sort -u | wc -l) crates"
./target/release/shell-parsers "$REPO"/tests/fixtures/commands/*.txt
