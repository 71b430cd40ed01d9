//! The fuzz targets' properties without a fuzzer: every committed seed
//! (`fuzz/seeds/<target>/`) and every input a fuzzer once failed on
//! (`tests/fixtures/fuzz/<target>/`) goes through the same checks the
//! targets run, taken from `fuzz/src/lib.rs` itself.

use std::path::{Path, PathBuf};

#[path = "../fuzz/src/lib.rs"]
mod properties;

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `check` on every seed and past failure of `target`; reports every
/// input that fails, not just the first.
fn replay(target: &str, check: fn(&[u8]), past_failures: usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = inputs(&root.join("fuzz/seeds").join(target));
    let regressions = inputs(&root.join("tests/fixtures/fuzz").join(target));
    assert!(
        seeds.len() >= 10,
        "fuzz/seeds/{target} holds {} inputs",
        seeds.len()
    );
    assert_eq!(
        regressions.len(),
        past_failures,
        "tests/fixtures/fuzz/{target} changed; update the count here"
    );
    let mut failed = Vec::new();
    for file in seeds.iter().chain(&regressions) {
        let data = std::fs::read(file).expect("a readable input");
        if let Err(panic) = std::panic::catch_unwind(|| check(&data)) {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failed.push(format!("{}: {why}", file.display()));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn host_payload_decoding_and_encoding() {
    replay("host_payload", properties::host_payload, 0);
}

#[test]
fn hook_reply_parser() {
    replay("hook_reply", properties::hook_reply, 0);
}

#[test]
fn config_loading() {
    replay("config_load", properties::config_load, 2);
}

#[test]
fn json_host_file_editor() {
    replay("hostfile_json", properties::hostfile_json, 1);
}

#[test]
fn toml_host_file_editor() {
    replay("hostfile_toml", properties::hostfile_toml, 2);
}
