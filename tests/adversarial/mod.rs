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

use serde_json::{Value, json};

use crate::common::{Env, Run, run_fed, spawn_fed};

/// Slack on every upper time bound, for a loaded 2-core CI machine.
pub const SLACK: Duration = Duration::from_millis(2500);

/// Writes `$KERYX_HOME/hooks.json` with `hooks` under their events.
pub fn user_hooks(env: &Env, hooks: Value) {
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": hooks}).to_string(),
    );
}

/// Writes `.metaproject/hooks.json` with `hooks` under their events.
pub fn project_hooks(env: &Env, hooks: Value) {
    env.write(
        env.project_hooks(),
        serde_json::to_string_pretty(&json!({"schemaVersion": "1.0.0", "hooks": hooks})).unwrap(),
    );
}

/// An unsandboxed `/bin/sh -c script` registration.
pub fn sh_hook(id: &str, class: &str, script: &str) -> Value {
    json!({"id": id, "class": class, "runsIn": "unsandboxed",
           "command": {"argv": ["/bin/sh", "-c", script]}})
}

/// A captured Claude Code payload, pointed at `env`'s project.
pub fn claude(env: &Env, name: &str) -> Value {
    let mut v = crate::common::fixture("claude-code", name);
    v["cwd"] = json!(env.project);
    v
}

pub use crate::common::claude_bash;

/// Whether a Claude Code answer carries a decision: a notice alone
/// (`systemMessage`, said to the person) is not one.
pub fn answered(run: &Run) -> bool {
    !run.stdout.trim().is_empty() && run.json().get("hookSpecificOutput").is_some()
}

/// `permissionDecisionReason` of a Claude Code deny; panics on anything else.
#[track_caller]
pub fn deny_reason(run: &Run) -> String {
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Starts `keryx-hooks args` with `stdin` written from a thread (and then
/// closed unless `keep_open`), stdout and stderr piped.
pub fn spawn(env: &Env, args: &[&str], stdin: impl Into<Vec<u8>>, keep_open: bool) -> Child {
    spawn_fed(env.cmd(args), stdin.into(), keep_open).0
}

/// Runs `keryx-hooks args` in `dir` with `stdin` written and closed.
pub fn run_in(env: &Env, dir: &Path, args: &[&str], stdin: &[u8]) -> Run {
    let mut cmd = env.cmd(args);
    cmd.current_dir(dir);
    run_fed(cmd, stdin.to_vec())
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

/// The session's `records.jsonl`, each line parsed (a line that is not
/// JSON fails the test).
#[track_caller]
pub fn records(env: &Env, host: &str, session: &str) -> Vec<Value> {
    let path = session_dir(env, host, session).join("records.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("a line of {} is not JSON ({e}): {l:?}", path.display()))
        })
        .collect()
}

pub fn session_dir(env: &Env, host: &str, session: &str) -> PathBuf {
    env.home
        .join(".local/state/keryx/sessions")
        .join(format!("{host}-{session}"))
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

/// xorshift64, seeded from the clock; the seed goes into failure messages.
pub struct Rng(pub u64);

impl Rng {
    pub fn from_clock() -> Rng {
        Rng(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `[0, max]`.
    pub fn below(&mut self, max: Duration) -> Duration {
        Duration::from_micros(self.next() % (max.as_micros() as u64 + 1))
    }
}
