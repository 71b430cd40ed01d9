//! bench/secrets-sweep.sh: every text file under the given directories
//! written, as a Write, through `security::check_output` (the body of
//! `keryx.security-check-output`), in process. Prints each deny with its
//! reason (a rule and a position, never the text found), then one line:
//!
//!     files  MiB  denied  percent  scan_ms  us_per_KiB
//!
//! Usage: secrets-sweep DIR...
//!        secrets-sweep --per-rule FILE   (time of each rule alone on FILE)

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use keryx_hooks::builtins::ports::Verdict;
use keryx_hooks::secrets::Rules;
use keryx_hooks::builtins::security;

/// Files larger than this are left out, as the hook's payload limit would.
const MAX_FILE: u64 = 1 << 20;

fn main() -> ExitCode {
    let dirs: Vec<String> = std::env::args().skip(1).collect();
    if dirs.is_empty() {
        eprintln!("usage: secrets-sweep DIR...");
        return ExitCode::FAILURE;
    }
    if dirs.len() == 2 && dirs[0] == "--per-rule" {
        return per_rule(Path::new(&dirs[1]));
    }
    let rules = Rules::builtin();
    let (mut files, mut bytes, mut denied) = (0usize, 0usize, 0usize);
    let mut spent = Duration::ZERO;
    for dir in &dirs {
        let mut paths = Vec::new();
        walk(Path::new(dir), &mut paths);
        paths.sort();
        for path in paths {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let rel = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            let payload = serde_json::json!({
                "tool_name": "Write",
                "tool_input": {"file_path": rel, "content": text},
            });
            let start = Instant::now();
            let verdict = security::check_output(&payload, &rules);
            spent += start.elapsed();
            files += 1;
            bytes += text.len();
            if let Verdict::Deny(reason) = verdict {
                denied += 1;
                println!("deny: {}: {reason}", path.display());
            }
        }
    }
    let ms = spent.as_secs_f64() * 1000.0;
    println!(
        "{files} files  {:.1} MiB  {denied} denied  {:.4} %  {ms:.0} ms  {:.2} us/KiB",
        bytes as f64 / f64::from(1 << 20),
        denied as f64 * 100.0 / files.max(1) as f64,
        ms * 1000.0 / (bytes as f64 / 1024.0).max(1.0)
    );
    ExitCode::SUCCESS
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            if !matches!(entry.file_name().to_str(), Some(".git" | "target")) {
                walk(&path, out);
            }
        } else if kind.is_file() && entry.metadata().is_ok_and(|m| m.len() <= MAX_FILE) {
            out.push(path);
        }
    }
}

/// Each rule alone (every other switched off) over one file: where a
/// scan's time goes.
fn per_rule(file: &Path) -> ExitCode {
    let Ok(text) = std::fs::read_to_string(file) else {
        eprintln!("{}: unreadable", file.display());
        return ExitCode::FAILURE;
    };
    let all: Vec<String> = Rules::builtin()
        .ids()
        .iter()
        .map(|s| s.to_string())
        .collect();
    for id in &all {
        let others: Vec<String> = all
            .iter()
            .filter(|o| *o != id)
            .map(|o| format!("{o:?}"))
            .collect();
        let doc: toml_edit::DocumentMut =
            format!("[security]\ndisable = [{}]\n", others.join(", "))
                .parse()
                .expect("toml");
        let rules = Rules::with_user(doc.get("security"), "per-rule").expect("rules");
        let mut best = f64::MAX;
        for _ in 0..15 {
            let start = Instant::now();
            let found = rules.scan(&text, keryx_hooks::secrets::Target::Output);
            std::hint::black_box(found);
            best = best.min(start.elapsed().as_secs_f64() * 1000.0);
        }
        println!("{best:>8.3} ms  {id}");
    }
    ExitCode::SUCCESS
}
