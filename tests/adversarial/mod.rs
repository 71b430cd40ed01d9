//! The adversarial suite: the security catalogue's cases (`case_NN_*`),
//! the peer-robustness cases (`peer_NN_*`), concurrency, `kill -9` at
//! random points, and attempts to get around project trust. Every test
//! drives the real binary in a hermetic home and asserts the safe outcome.
//! docs/SECURITY.md maps each catalogue case and each control to the test
//! that proves it, including the cases proved elsewhere in the suite.

mod bypass;
mod catalogue;
mod concurrency;
mod crash;
mod peer;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Env, Run, spawn_fed};

/// Slack on every upper time bound, for a loaded 2-core CI machine.
pub const SLACK: Duration = Duration::from_millis(2500);

/// Whether a Claude Code answer carries a decision: a notice alone
/// (`systemMessage`, said to the person) is not one.
pub fn answered(run: &Run) -> bool {
    !run.stdout.trim().is_empty() && run.json().get("hookSpecificOutput").is_some()
}

/// Starts `keryx-hooks args` with `stdin` written from a thread (and then
/// closed unless `keep_open`), stdout and stderr piped.
pub fn spawn(env: &Env, args: &[&str], stdin: impl Into<Vec<u8>>, keep_open: bool) -> Child {
    spawn_fed(env.cmd(args), stdin.into(), keep_open).0
}

/// Waits for `child` at most `limit`, killing it when the limit passes.
#[track_caller]
pub fn wait(mut child: Child, limit: Duration) -> (Output, Duration) {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), start.elapsed());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs the binary under `sh -c 'ulimit -d KIB; exec …'`, so every heap
/// allocation past `data_kib` KiB fails and aborts it: a run that succeeds
/// used less.
pub fn run_limited(env: &Env, data_kib: u64, args: &[&str], stdin: &[u8]) -> (Run, Duration) {
    let cmd = env.cmd(&[]);
    let mut sh = std::process::Command::new("/bin/sh");
    sh.arg("-c")
        .arg(format!("ulimit -d {data_kib} && exec \"$0\" \"$@\""))
        .arg(crate::common::BIN)
        .args(args)
        .current_dir(&env.project)
        .env_clear()
        .envs(
            cmd.get_envs()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = sh.spawn().unwrap();
    let mut sin = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = sin.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    (Run::from(out), start.elapsed())
}

/// The pids a hook wrote, one per line.
pub fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Dead, or a zombie nobody has reaped yet.
pub fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Polls `done` until it holds or `limit` passes; the last answer.
pub fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

/// SIGKILLs `pid` (cleanup of a process a test expected to survive).
pub fn kill9(pid: i32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}

/// The log file's bytes (empty when there is none).
pub fn log_bytes(env: &Env) -> Vec<u8> {
    std::fs::read(env.home.join(".local/state/keryx/keryx-hooks.log")).unwrap_or_default()
}

/// Every file or directory below `dir` whose name marks it as a temp copy
/// one of our writers makes (host files, trust store, hooks-file edits,
/// snapshots and their manifests).
pub fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let is_temp = name.contains(".keryx-tmp-")
                || (name.starts_with(".keryx-hooks-") && name.ends_with(".tmp"))
                || name.contains(".tmp-")
                || name.contains(".old-")
                || name.contains(".del-");
            if is_temp {
                out.push(e.path());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Gives `path` (recursively) to uid/gid 65534, as another local user's
/// files would be. Needs root or CAP_CHOWN, which the suite has in CI.
pub fn chown_to_nobody(path: &Path) {
    let status = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(path)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "chown to uid 65534 failed: these tests need root or CAP_CHOWN (run the suite as root, as CI does)"
    );
}

/// Gives `path` back to the user running the tests.
pub fn chown_to_me(path: &Path) {
    let me = std::process::Command::new("id").arg("-u").output().unwrap();
    let uid = String::from_utf8_lossy(&me.stdout).trim().to_owned();
    let status = std::process::Command::new("chown")
        .arg("-R")
        .arg(&uid)
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}
