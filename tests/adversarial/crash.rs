//! `kill -9` at random points of the commands that write files: `install`,
//! `doctor --fix`, `trust` and `enable`/`disable`, until 100 kills have
//! landed part-way through each. After every kill each file they write
//! parses and is the old or the new version; after the next run that
//! succeeds, no temp file is left. Delays are uniform between zero and the
//! command's measured duration, so kills fall all through it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use keryx_hooks::install::manifest;
use serde_json::{Value, json};

use super::temp_files;
use crate::common::{Env, Rng, project_hooks, sh_hook, user_hooks, walk_files};

/// Kills that must land while the command is still running.
const KILLS: usize = 100;
/// Rounds allowed to get there; a machine so fast that fewer than a
/// quarter of the kills land fails loudly instead of passing idly.
const MAX_ROUNDS: usize = 400;

/// Starts `args`, SIGKILLs it after `delay`; whether it was still running.
fn kill_after(env: &Env, dir: &Path, args: &[&str], delay: Duration) -> bool {
    let mut child = env
        .cmd(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let landed = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    landed
}

/// Runs `args` to completion, which must succeed; how long it took.
#[track_caller]
fn timed(env: &Env, dir: &Path, args: &[&str]) -> Duration {
    let start = Instant::now();
    let out = env.cmd(args).current_dir(dir).output().unwrap();
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// The median of `runs` timings of the alternation `a`, `b`, `a`, …
fn typical(env: &Env, dir: &Path, a: &[&str], b: &[&str]) -> Duration {
    let mut t: Vec<Duration> = (0..6)
        .map(|i| timed(env, dir, if i % 2 == 0 { a } else { b }))
        .collect();
    t.sort();
    t[t.len() / 2]
}

/// Calls `round(n, delay, seed)` until [`KILLS`] of them report a kill that
/// landed mid-run.
fn kill_loop(what: &str, typical: Duration, mut round: impl FnMut(usize, Duration, u64) -> bool) {
    let mut rng = Rng::from_clock();
    let seed = rng.0;
    let (mut landed, mut n) = (0, 0);
    while landed < KILLS && n < MAX_ROUNDS {
        if round(n, rng.below(typical), seed) {
            landed += 1;
        }
        n += 1;
    }
    assert_eq!(
        landed, KILLS,
        "{what}: only {landed} of {n} kills landed mid-run (seed {seed}, typical run {typical:?})"
    );
}

#[track_caller]
fn no_temp_files(dirs: &[&Path]) {
    let left: Vec<PathBuf> = dirs.iter().flat_map(|d| temp_files(d)).collect();
    assert!(
        left.is_empty(),
        "temp files survived the next run: {left:#?}"
    );
}

fn read(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// Every snapshot directory (not a temp one) has a manifest that parses
/// and matches it. A manifest write killed before its rename leaves its
/// temp copy inside the snapshot; that copy is the only extra file allowed
/// here, and [`no_temp_files`] holds the next run to removing it.
#[track_caller]
fn snapshots_consistent(root: &Path, ctx: &str) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.')
            || name.contains(".tmp-")
            || name.contains(".old-")
            || name.contains(".del-")
        {
            continue;
        }
        let m = manifest::read(&e.path()).unwrap_or_else(|err| {
            panic!("{ctx}: snapshot `{name}` has no readable manifest: {err}")
        });
        if let Err(err) = manifest::verify(&e.path(), &m) {
            let err = err.to_string();
            let stray_manifest_temp =
                err.contains("`.manifest.tmp-") && err.ends_with("is not in its manifest");
            assert!(
                stray_manifest_temp,
                "{ctx}: snapshot `{name}` does not match its manifest: {err}"
            );
        }
    }
}

/// Temp copies of host files (`.<file>.keryx-tmp-*`) are left out: that
/// leak is pinned by the ignored `crash_*_host_file_temp_*` tests below.
fn temp_files_but_host_file_copies(dir: &Path) -> Vec<PathBuf> {
    temp_files(dir)
        .into_iter()
        .filter(|p| !p.to_string_lossy().contains(".keryx-tmp-"))
        .collect()
}

#[test]
fn crash_install_and_uninstall_killed_anywhere_leave_each_host_file_old_or_new() {
    let env = Env::new();
    let claude = env.write(
        env.claude_settings(),
        "{\n  \"model\": \"opus\",\n  \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify.sh\"}]}]}\n}\n",
    );
    let codex = env.write(
        env.home.join(".codex/config.toml"),
        "# mine\nmodel = \"o3\"\n",
    );
    user_hooks(&env, json!({}));
    let (install, uninstall): (&[&str], &[&str]) = (
        &["install", "claude-code", "codex"],
        &["uninstall", "claude-code", "codex"],
    );
    timed(&env, &env.project, install);
    let wired = (read(&claude).unwrap(), read(&codex).unwrap());
    timed(&env, &env.project, uninstall);
    let plain = (read(&claude).unwrap(), read(&codex).unwrap());
    let typical = typical(&env, &env.project, install, uninstall);
    let snapshots = env.snapshot_root();

    kill_loop("install/uninstall", typical, |n, delay, seed| {
        let args = if read(&claude).as_ref() == Some(&wired.0) {
            uninstall
        } else {
            install
        };
        let landed = kill_after(&env, &env.project, args, delay);
        let ctx = format!("round {n} ({args:?} killed after {delay:?}, seed {seed})");
        let now = (read(&claude).unwrap(), read(&codex).unwrap());
        assert!(
            now.0 == wired.0 || now.0 == plain.0,
            "{ctx}: settings.json is neither version:\n{}",
            String::from_utf8_lossy(&now.0)
        );
        assert!(
            now.1 == wired.1 || now.1 == plain.1,
            "{ctx}: config.toml is neither version:\n{}",
            String::from_utf8_lossy(&now.1)
        );
        snapshots_consistent(&snapshots, &ctx);
        landed
    });
    timed(&env, &env.project, install);
    assert_eq!(read(&claude).unwrap(), wired.0);
    assert_eq!(read(&codex).unwrap(), wired.1);
    assert_eq!(
        temp_files_but_host_file_copies(&env.home),
        Vec::<PathBuf>::new()
    );
}

/// A hook source of a few files whose bytes depend on `version`.
fn write_source(env: &Env, version: u8) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    files.insert(
        "hooks.json".to_owned(),
        format!(r#"{{"schemaVersion": "1.0.0", "hooks": {{}}, "$schema": "v{version}"}}"#)
            .into_bytes(),
    );
    for i in 0..24 {
        files.insert(
            format!("scripts/s{i:02}.sh"),
            vec![b'a' + version + (i % 5) as u8; 8 * 1024],
        );
    }
    for (rel, bytes) in &files {
        env.write(env.keryx_home().join(rel), bytes);
    }
    files
}

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walk_files(dir) {
        let rel = e.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
        if rel != "manifest.json" {
            out.insert(rel, std::fs::read(&e).unwrap());
        }
    }
    out
}

/// Claude Code's settings, each wired event counted: all once, except
/// PreToolUse, which a round may have unwired (0) and doctor rewires (1).
#[track_caller]
fn claude_wiring(path: &Path, ctx: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap_or_else(|e| panic!("{ctx}: settings.json is not JSON ({e}):\n{text}"));
    let mut pre = 0;
    for (ev, _) in keryx_hooks::hosts::adapter("claude-code")
        .unwrap()
        .wired_events()
    {
        let n = text
            .matches(&format!(" run claude-code {ev} --snapshot "))
            .count();
        if ev == "PreToolUse" {
            assert!(n <= 1, "{ctx}: PreToolUse wired {n} times");
            pre = n;
        } else {
            assert_eq!(n, 1, "{ctx}: {ev} wired {n} times:\n{text}");
        }
    }
    pre
}

#[test]
fn crash_doctor_fix_killed_anywhere_leaves_the_snapshot_and_wiring_old_or_new() {
    let env = Env::new();
    let a = write_source(&env, 0);
    timed(&env, &env.project, &["install", "claude-code"]);
    let b = write_source(&env, 10);
    let claude = env.claude_settings();
    let root = env.snapshot_root();
    let dir = env.snapshot_dir();
    let unwire = |ctx: &str| {
        let mut v: Value = serde_json::from_slice(&read(&claude).unwrap()).unwrap();
        v["hooks"].as_object_mut().unwrap().remove("PreToolUse");
        std::fs::write(&claude, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        assert_eq!(claude_wiring(&claude, ctx), 0);
    };
    let fix: &[&str] = &["doctor", "--fix"];
    let mut version = 10;
    let typical = {
        let mut t: Vec<Duration> = (0..5)
            .map(|i| {
                version = if version == 0 { 10 } else { 0 };
                write_source(&env, version);
                if i % 2 == 0 {
                    unwire("measure");
                }
                timed(&env, &env.project, fix)
            })
            .collect();
        t.sort();
        t[2]
    };
    assert_eq!(claude_wiring(&claude, "after measuring"), 1);

    kill_loop("doctor --fix", typical, |n, delay, seed| {
        let ctx = format!("round {n} (killed after {delay:?}, seed {seed})");
        // Point the source at the version the snapshot does not hold, and
        // every other round take a host event out so there is wiring to redo.
        let next = if tree(&dir) == a { 10 } else { 0 };
        write_source(&env, next);
        if n % 2 == 0 {
            unwire(&ctx);
        }
        let landed = kill_after(&env, &env.project, fix, delay);
        let snap = tree(&dir);
        assert!(
            snap == a || snap == b,
            "{ctx}: the snapshot is neither version"
        );
        snapshots_consistent(&root, &ctx);
        claude_wiring(&claude, &ctx);
        landed
    });
    timed(&env, &env.project, fix);
    assert_eq!(claude_wiring(&claude, "after the last fix"), 1);
    assert_eq!(tree(&dir), tree(&env.keryx_home()));
    assert_eq!(
        temp_files_but_host_file_copies(&env.home),
        Vec::<PathBuf>::new()
    );
}

#[track_caller]
fn store(env: &Env, ctx: &str) -> Value {
    let path = env.home.join(".local/share/keryx/hook-trust.json");
    match std::fs::read(&path) {
        Err(_) => json!({"projects": {}}),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{ctx}: the trust store is not JSON ({e})")),
    }
}

fn digest(env: &Env, dir: &Path) -> Value {
    let out = env
        .cmd(&["list", "--json"])
        .current_dir(dir)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["projectTrust"]["digest"].clone()
}

#[test]
fn crash_trust_killed_anywhere_leaves_the_store_old_or_new_and_loses_no_record() {
    let env = Env::new();
    project_hooks(&env, json!({"Stop": [sh_hook("mine", "observe", "true")]}));
    let other = env.project.parent().unwrap().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    env.write(
        other.join(".metaproject/hooks.json"),
        json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [sh_hook("theirs", "observe", "true")]}}).to_string(),
    );
    timed(&env, &other, &["trust", "--yes"]);
    let key = env.project.display().to_string();
    let other_key = other.display().to_string();
    let other_record = store(&env, "setup")["projects"][&other_key].clone();
    let d = digest(&env, &env.project);
    let (trust, untrust): (&[&str], &[&str]) = (&["trust", "--yes"], &["untrust"]);
    let typical = typical(&env, &env.project, trust, untrust);

    kill_loop("trust/untrust", typical, |n, delay, seed| {
        let trusted = store(&env, "before")["projects"].get(&key).is_some();
        let args = if trusted { untrust } else { trust };
        let landed = kill_after(&env, &env.project, args, delay);
        let ctx = format!("round {n} ({args:?} killed after {delay:?}, seed {seed})");
        let s = store(&env, &ctx);
        assert_eq!(
            s["projects"][&other_key], other_record,
            "{ctx}: another project's trust was lost"
        );
        let mine = &s["projects"][&key];
        assert!(mine.is_null() || mine["digest"] == d, "{ctx}: {mine}");
        landed
    });
    timed(&env, &env.project, trust);
    timed(&env, &env.project, untrust);
    no_temp_files(&[&env.home]);
}

#[test]
fn crash_enable_and_disable_killed_anywhere_leave_the_file_and_trust_old_or_new() {
    let env = Env::new();
    project_hooks(&env, json!({"Stop": [sh_hook("mine", "observe", "true")]}));
    timed(&env, &env.project, &["trust", "--yes"]);
    let (disable, enable): (&[&str], &[&str]) = (&["disable", "mine"], &["enable", "mine"]);
    timed(&env, &env.project, disable);
    let off = (
        read(&env.project_hooks()).unwrap(),
        digest(&env, &env.project),
    );
    timed(&env, &env.project, enable);
    let on = (
        read(&env.project_hooks()).unwrap(),
        digest(&env, &env.project),
    );
    assert_ne!(off.1, on.1);
    let typical = typical(&env, &env.project, disable, enable);
    let key = env.project.display().to_string();

    kill_loop("enable/disable", typical, |n, delay, seed| {
        let args = if read(&env.project_hooks()).unwrap() == on.0 {
            disable
        } else {
            enable
        };
        let landed = kill_after(&env, &env.project, args, delay);
        let ctx = format!("round {n} ({args:?} killed after {delay:?}, seed {seed})");
        let file = read(&env.project_hooks()).unwrap();
        assert!(
            file == on.0 || file == off.0,
            "{ctx}: hooks.json is neither version:\n{}",
            String::from_utf8_lossy(&file)
        );
        serde_json::from_slice::<Value>(&file).unwrap();
        // Trust follows the file, or lags one step behind it (the write of
        // the file and of the store are two atomic steps): never anything else.
        let recorded = &store(&env, &ctx)["projects"][&key]["digest"];
        assert!(*recorded == on.1 || *recorded == off.1, "{ctx}: {recorded}");
        landed
    });
    timed(&env, &env.project, enable);
    timed(&env, &env.project, disable);
    no_temp_files(&[&env.home, &env.project]);
}

/// Kills `a`/`b` (alternating) at random points until a host file's temp
/// copy is left behind, then runs `a` to completion: the copy must be gone.
fn host_file_temp_is_removed_by_the_next_run(env: &Env, a: &[&str], b: &[&str]) {
    let typical = typical(env, &env.project, a, b);
    let mut rng = Rng::from_clock();
    let seed = rng.0;
    let host_temps = || {
        temp_files(&env.home)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(".keryx-tmp-"))
            .collect::<Vec<_>>()
    };
    let mut n = 0;
    while host_temps().is_empty() {
        assert!(
            n < 400,
            "no kill left a host-file temp copy in {n} rounds (seed {seed})"
        );
        kill_after(
            env,
            &env.project,
            if n % 2 == 0 { a } else { b },
            rng.below(typical),
        );
        n += 1;
    }
    timed(env, &env.project, a);
    assert_eq!(
        host_temps(),
        Vec::<PathBuf>::new(),
        "after {n} rounds (seed {seed})"
    );
}

#[test]
fn crash_install_host_file_temp_copies_are_removed_by_the_next_install() {
    let env = Env::new();
    env.write(env.claude_settings(), "{}\n");
    env.write(env.home.join(".codex/config.toml"), "model = \"o3\"\n");
    user_hooks(&env, json!({}));
    host_file_temp_is_removed_by_the_next_run(
        &env,
        &["install", "claude-code", "codex"],
        &["uninstall", "claude-code", "codex"],
    );
}

#[test]
fn crash_doctor_fix_host_file_temp_copies_are_removed_by_the_next_fix() {
    let env = Env::new();
    write_source(&env, 0);
    timed(&env, &env.project, &["install", "claude-code"]);
    let claude = env.claude_settings();
    let wired = read(&claude).unwrap();
    let mut unwired: Value = serde_json::from_slice(&wired).unwrap();
    unwired["hooks"]
        .as_object_mut()
        .unwrap()
        .remove("PreToolUse");
    let unwired = serde_json::to_string_pretty(&unwired).unwrap();
    // Each round starts unwired, so `doctor --fix` has a host file to write.
    std::fs::write(&claude, &unwired).unwrap();
    timed(&env, &env.project, &["doctor", "--fix"]);
    let host_temps = || {
        temp_files(&env.home)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains(".keryx-tmp-"))
            .collect::<Vec<_>>()
    };
    // The temp copy lives only while the host file is written, a few
    // milliseconds of the run: watch its directory and kill -9 the moment a
    // copy shows up (a kill that comes after the rename leaves none; retry).
    let claude_dir = claude.parent().unwrap().to_path_buf();
    let copy_in_sight = || {
        std::fs::read_dir(&claude_dir).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".keryx-tmp-")
        })
    };
    let mut n = 0;
    while host_temps().is_empty() {
        assert!(n < 100, "no kill left a host-file temp copy in {n} runs");
        std::fs::write(&claude, &unwired).unwrap();
        let mut child = env
            .cmd(&["doctor", "--fix"])
            .current_dir(&env.project)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        while child.try_wait().unwrap().is_none() {
            if copy_in_sight() {
                let _ = child.kill();
                break;
            }
        }
        let _ = child.wait();
        n += 1;
    }
    std::fs::write(&claude, &unwired).unwrap();
    timed(&env, &env.project, &["doctor", "--fix"]);
    assert_eq!(host_temps(), Vec::<PathBuf>::new(), "after {n} runs");
}
