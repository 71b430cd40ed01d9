//! State a repository, a hook or another process must not be able to plant
//! or stall: the user layer and the state dirs resolve outside the project,
//! state is private to its user, no lock is waited on past a bound, a
//! de-duplicated answer is repeated only for the same question, and an
//! unreadable payload denies every gate-capable event.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::adversarial::wait;
use crate::common::{
    Env, Run, claude_bash, claude_payload, deny_reason, lines_in, mode, sh_hook, spawn_fed,
    user_hooks,
};

/// A shell script line that appends `tag` to `file`.
fn mark(file: &Path, tag: &str) -> String {
    format!("echo {tag} >> '{}'", file.display())
}

// --- No wait the shim cannot bound -------------------------------------

/// A shared `flock` on `file`, held by a background `flock -s` (which opens
/// the file read-only) until the holder is dropped.
struct Holder(Child);

impl Holder {
    fn take(file: &Path) -> Holder {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        if !file.exists() {
            std::fs::write(file, "").unwrap();
        }
        let child = Command::new("flock")
            .arg("-s")
            .arg(file)
            .args(["sleep", "120"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Held once an exclusive try fails.
        let start = Instant::now();
        while Command::new("flock")
            .args(["-n", "-x"])
            .arg(file)
            .arg("true")
            .status()
            .unwrap()
            .success()
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "flock never held"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Holder(child)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs a gated PreToolUse with a watchdog far past the bound, so a shim
/// that waits on the lock fails the test instead of hanging it.
fn gated_pre_tool_use_under(env: &Env, payload: &Value) -> (Run, Duration) {
    let (child, writer) = spawn_fed(
        env.cmd(&["run", "claude-code", "PreToolUse"]),
        payload.to_string().into_bytes(),
        false,
    );
    let (out, took) = wait(child, Duration::from_secs(40));
    let _ = writer.join();
    (Run::from(out), took)
}

#[test]
fn a_held_session_lock_denies_a_gated_call_within_the_bound() {
    let env = Env::new();
    let ran = env.home.join("ran");
    user_hooks(
        &env,
        json!({"PreToolUse": [sh_hook("gate", "gate", &mark(&ran, "gate"))]}),
    );
    let payload = claude_bash(&env, "toolu_lock", "echo hi");
    let session = payload["session_id"].as_str().unwrap().to_owned();
    let _held = Holder::take(&env.session_dir("claude-code", &session).join("lock"));
    let (run, took) = gated_pre_tool_use_under(&env, &payload);
    run.code(0);
    let reason = deny_reason(&run);
    assert!(reason.contains("session lock"), "{reason}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(!ran.exists(), "the gate ran without the session state");
}

#[test]
fn held_de_duplication_slots_deny_a_gated_call_within_the_bound() {
    let env = Env::new();
    let ran = env.home.join("ran");
    user_hooks(
        &env,
        json!({"PreToolUse": [sh_hook("gate", "gate", &mark(&ran, "gate"))]}),
    );
    let payload = claude_bash(&env, "toolu_slots", "echo hi");
    let session = payload["session_id"].as_str().unwrap().to_owned();
    let slots = env
        .home
        .join(".local/state/keryx/sessions")
        .join(format!("calls-{session}"))
        .join("slots");
    let _held = Holder::take(&slots);
    let (run, took) = gated_pre_tool_use_under(&env, &payload);
    run.code(0);
    let reason = deny_reason(&run);
    assert!(reason.contains("de-duplication slots"), "{reason}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

// --- An unreadable payload denies every gate-capable event ------------------

const UNREADABLE: [&str; 3] = ["", "garbage", r#"{"session_id": "s", "stop_hook_a"#];

#[test]
fn an_unreadable_stop_payload_blocks_the_turn_end_on_claude_code_codex_and_gemini() {
    let env = Env::new();
    for (host, event) in [
        ("claude-code", "Stop"),
        ("codex", "Stop"),
        ("gemini-cli", "AfterAgent"),
    ] {
        for stdin in UNREADABLE {
            let run = env.run_stdin(&["run", host, event], stdin);
            run.code(0);
            let v = run.json();
            assert_eq!(v["decision"], "block", "{host} {event} {stdin:?}: {v}");
            assert!(
                v["reason"]
                    .as_str()
                    .unwrap()
                    .contains("could not read the Stop payload"),
                "{host} {event} {stdin:?}: {v}"
            );
        }
    }
}

#[test]
fn an_undecodable_stop_payload_blocks_too() {
    let env = Env::new();
    let run = env.run_stdin(&["run", "claude-code", "Stop"], "[1, 2]");
    run.code(0);
    let v = run.json();
    assert_eq!(v["decision"], "block", "{v}");
    assert!(
        v["reason"].as_str().unwrap().contains("could not decode"),
        "{v}"
    );
}

// --- De-duplication repeats an answer only for the same question -----------

/// A user-layer gate that appends each command it sees to `log` and denies
/// any command that mentions `danger`.
fn counting_gate(env: &Env) -> PathBuf {
    let log = env.home.join("seen");
    let script = format!(
        "cmd=$(cat); echo \"$cmd\" >> '{}'; case \"$cmd\" in *danger*) echo no >&2; exit 2;; esac",
        log.display()
    );
    user_hooks(
        env,
        json!({"PreToolUse": [sh_hook("gate", "gate", &script)]}),
    );
    log
}

#[test]
fn a_reused_tool_call_id_with_another_command_is_evaluated_afresh() {
    let env = Env::new();
    let log = counting_gate(&env);
    let first = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "toolu_same", "echo harmless").to_string(),
    );
    first.code(0);
    assert_eq!(first.stdout, "", "the harmless call was not allowed");
    let second = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "toolu_same", "echo danger").to_string(),
    );
    second.code(0);
    let _ = deny_reason(&second);
    assert_eq!(lines_in(&log), 2);

    // The same question again is still a repeat: the gate does not run.
    let third = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "toolu_same", "echo danger").to_string(),
    );
    let _ = deny_reason(&third);
    assert_eq!(lines_in(&log), 2, "the same question was evaluated twice");
}

#[test]
fn a_stricter_decide_outcome_for_a_reused_id_does_not_get_the_old_allow() {
    let env = Env::new();
    let _ = counting_gate(&env);
    let keryx = |decide: &str| {
        let payload = json!({"event": "PreToolUse", "sessionId": "s-decide", "cwd": env.project,
            "toolName": "Bash", "toolCallId": "call-1", "toolInput": {"command": "ls"},
            "decideOutcome": decide});
        let run = env.run_stdin(&["run", "keryx", "PreToolUse"], payload.to_string());
        run.code(0);
        run.json()
    };
    assert_eq!(keryx("allow")["outcome"], "allow");
    let v = keryx("deny");
    assert_eq!(v["outcome"], "deny", "{v}");
}

#[test]
fn session_ids_that_sanitize_alike_do_not_share_state() {
    let env = Env::new();
    let log = counting_gate(&env);
    for session in ["sess/3", "sess_3"] {
        let mut p = claude_bash(&env, "toolu_shared", "echo hi");
        p["session_id"] = json!(session);
        let run = env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string());
        run.code(0);
        assert_eq!(run.stdout, "", "{session}: {}", run.stderr);
    }
    assert_eq!(
        lines_in(&log),
        2,
        "the second session got the first one's answer"
    );
    let sessions = env.home.join(".local/state/keryx/sessions");
    let mut names: Vec<String> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("claude-code-"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.contains(&"claude-code-sess_3".to_owned()),
        "{names:?}"
    );
}

// --- State is private to its user ------------------------------------------

/// Every directory and file below `root`, with its mode.
fn modes_below(root: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        out.push((dir.clone(), mode(&dir)));
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push((path.clone(), mode(&path)));
            }
        }
    }
    out
}

#[test]
fn state_and_trust_files_are_made_private() {
    let env = Env::new();
    let _ = counting_gate(&env);
    // A gated call (session dir, records, state, lock, de-dup slots, the
    // config cache), an unreadable payload (the log).
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "toolu_modes", "echo hi").to_string(),
    );
    run.code(0);
    env.run_stdin(&["run", "claude-code", "PreToolUse"], "garbage")
        .code(0);
    let state = env.home.join(".local/state/keryx");
    let found = modes_below(&state);
    for name in [
        "records.jsonl",
        "state.json",
        "lock",
        "slots",
        "keryx-hooks.log",
        "config-cache",
    ] {
        assert!(
            found.iter().any(|(p, _)| p.file_name().unwrap() == name),
            "no {name} below {}: {found:?}",
            state.display()
        );
    }
    for (path, m) in &found {
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(*m, want, "{} is {m:o}", path.display());
    }

    // The trust store, its lock and its directory.
    crate::common::project_hooks(
        &env,
        json!({"PreToolUse": [sh_hook("project-gate", "gate", "exit 0")]}),
    );
    env.run(&["trust", "--yes"]).code(0);
    let data = env.home.join(".local/share/keryx");
    let found = modes_below(&data);
    assert!(
        found
            .iter()
            .any(|(p, _)| p.file_name().unwrap() == "hook-trust.json.lock"),
        "{found:?}"
    );
    for (path, m) in &found {
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(*m, want, "{} is {m:o}", path.display());
    }
}

// --- The user layer cannot be planted from the repository -------------------

/// Writes `dir/hooks.json` with a PreToolUse gate that marks `marker` and
/// denies with reason `planted`, and a SessionStart hook that marks it too.
fn plant(dir: &Path, marker: &Path) {
    let script = format!("{}; echo planted >&2; exit 2", mark(marker, "ran"));
    let hooks = json!({"schemaVersion": "1.0.0", "hooks": {
        "PreToolUse": [sh_hook("planted-gate", "gate", &script)],
        "SessionStart": [sh_hook("planted-start", "observe", &mark(marker, "ran"))],
    }});
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("hooks.json"), hooks.to_string()).unwrap();
}

/// `keryx-hooks args` in `dir` with `vars` set over the hermetic ones.
fn run_with(env: &Env, dir: &Path, vars: &[(&str, &str)], args: &[&str], stdin: &str) -> Run {
    let mut cmd = env.cmd(args);
    cmd.current_dir(dir);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    crate::common::run_fed(cmd, stdin.as_bytes().to_vec())
}

/// With `vars` set and the cwd `dir`: the planted hooks are not listed, a
/// gated call is not denied by them and they do not run, and `list` warns
/// with `warning` (naming the variable).
#[track_caller]
fn not_the_user_layer(env: &Env, dir: &Path, vars: &[(&str, &str)], marker: &Path, warning: &str) {
    let list = run_with(env, dir, vars, &["list", "--json"], "");
    list.code(0);
    let hooks = list.json()["hooks"].to_string();
    assert!(!hooks.contains("planted"), "{vars:?}: listed: {hooks}");
    let mut payload = claude_bash(env, "toolu_planted", "echo hi");
    payload["cwd"] = json!(dir);
    let run = run_with(
        env,
        dir,
        vars,
        &["run", "claude-code", "PreToolUse"],
        &payload.to_string(),
    );
    run.code(0);
    assert!(
        !run.stdout.contains("planted"),
        "{vars:?}: the planted gate answered: {}",
        run.stdout
    );
    assert!(!marker.exists(), "{vars:?}: a planted hook ran");
    list.stderr_has(warning);
}

#[test]
fn home_at_proc_self_cwd_does_not_load_the_repositorys_hooks() {
    let env = Env::new();
    let marker = env.home.join("planted-ran");
    plant(&env.project.join(".keryx"), &marker);
    not_the_user_layer(
        &env,
        &env.project,
        &[("HOME", "/proc/self/cwd")],
        &marker,
        "warning: HOME `/proc/self/cwd`",
    );
    let list = run_with(
        &env,
        &env.project,
        &[("HOME", "/proc/self/cwd")],
        &["list"],
        "",
    );
    list.stderr_has("resolves inside the project");
}

#[test]
fn a_relative_home_does_not_load_the_repositorys_hooks() {
    let env = Env::new();
    let marker = env.home.join("planted-ran");
    plant(&env.project.join(".keryx"), &marker);
    for home in [".", "./", "sub/.."] {
        not_the_user_layer(
            &env,
            &env.project,
            &[("HOME", home)],
            &marker,
            &format!("warning: HOME `{home}` is not an absolute path"),
        );
    }
}

#[test]
fn keryx_home_in_a_checkout_without_git_is_refused() {
    let env = Env::new();
    let tarball = env.home.parent().unwrap().join("work/tarball");
    let planted = tarball.join("config/keryx");
    let marker = env.home.join("planted-ran");
    plant(&planted, &marker);
    let planted = planted.display().to_string();
    not_the_user_layer(
        &env,
        &tarball,
        &[("KERYX_HOME", &planted)],
        &marker,
        &format!("warning: KERYX_HOME `{planted}` resolves inside the project `"),
    );
}

#[test]
fn a_session_in_a_submodule_cannot_plant_the_user_layer_in_the_superproject() {
    let env = Env::new();
    // `proj` is the superproject; `proj/vendor/lib` a submodule, whose
    // `.git` is a gitfile.
    let sub = env.project.join("vendor/lib");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join(".git"), "gitdir: ../../.git/modules/lib\n").unwrap();
    let marker = env.home.join("planted-ran");
    let planted = env.project.join("tools/keryx");
    plant(&planted, &marker);
    plant(&env.project.join("tools/home/.keryx"), &marker);
    let planted = planted.display().to_string();
    let fake_home = env.project.join("tools/home").display().to_string();
    not_the_user_layer(
        &env,
        &sub,
        &[("KERYX_HOME", &planted)],
        &marker,
        &format!(
            "warning: KERYX_HOME `{planted}` resolves inside the project `{}`",
            env.project.display()
        ),
    );
    not_the_user_layer(
        &env,
        &sub,
        &[("HOME", &fake_home)],
        &marker,
        &format!(
            "warning: HOME `{fake_home}` resolves inside the project `{}`",
            env.project.display()
        ),
    );
}

#[test]
fn a_snapshot_root_inside_the_project_is_refused() {
    let env = Env::new();
    let marker = env.home.join("planted-ran");
    let root = env.project.join(".cache/snapshots");
    plant(&root.join("src-0123456789ab"), &marker);
    let root = root.display().to_string();
    let vars = [("KERYX_SNAPSHOT_ROOT", root.as_str())];
    let args = [
        "run",
        "claude-code",
        "SessionStart",
        "--snapshot",
        "src-0123456789ab",
    ];
    let run = run_with(
        &env,
        &env.project,
        &vars,
        &args,
        &claude_payload(&env, "SessionStart-basic-startup.json").to_string(),
    );
    run.code(0);
    let v = run.json();
    let said = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        said.contains(&format!(
            "KERYX_SNAPSHOT_ROOT `{root}` resolves inside the project"
        )),
        "{v}"
    );
    assert!(!marker.exists(), "a planted snapshot hook ran");
    // A gated call is not answered by the planted snapshot either.
    let args = [
        "run",
        "claude-code",
        "PreToolUse",
        "--snapshot",
        "src-0123456789ab",
    ];
    let run = run_with(
        &env,
        &env.project,
        &vars,
        &args,
        &claude_bash(&env, "toolu_snap", "echo hi").to_string(),
    );
    assert!(!run.stdout.contains("planted"), "{}", run.stdout);
    assert!(!marker.exists(), "a planted snapshot hook ran");
}

#[test]
fn a_state_dir_inside_the_project_is_refused() {
    let env = Env::new();
    let inside = env.project.join("build/state");
    let inside_s = inside.display().to_string();
    let run = run_with(
        &env,
        &env.project,
        &[("XDG_STATE_HOME", &inside_s)],
        &["run", "claude-code", "PreToolUse"],
        &claude_bash(&env, "toolu_state", "echo hi").to_string(),
    );
    run.code(0);
    assert!(!inside.exists(), "state was written into the project");
    assert!(env.home.join(".local/state/keryx/sessions").is_dir());
    run_with(
        &env,
        &env.project,
        &[("XDG_STATE_HOME", &inside_s)],
        &["list"],
        "",
    )
    .stderr_has(&format!(
        "warning: XDG_STATE_HOME `{inside_s}` resolves inside the project"
    ));
}

#[test]
fn a_held_trust_store_lock_does_not_stall_a_gated_call() {
    let env = Env::new();
    let _ = counting_gate(&env);
    // Project hooks: `run` opens the trust store to judge them.
    crate::common::project_hooks(
        &env,
        json!({"PreToolUse": [sh_hook("project-gate", "gate", "exit 0")]}),
    );
    let data = env.home.join(".local/share/keryx");
    // A temp file a killed `trust` left behind makes `run` clean up under
    // the store's lock.
    env.write(data.join(".keryx-hooks-left.tmp"), "{}");
    let _held = Holder::take(&data.join("hook-trust.json.lock"));
    let (run, took) = gated_pre_tool_use_under(&env, &claude_bash(&env, "toolu_store", "echo hi"));
    run.code(0);
    assert!(!run.stdout.contains("deny"), "{}", run.stdout);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_trust_store_in_the_superproject_is_refused_from_a_submodule() {
    let env = Env::new();
    let sub = env.project.join("vendor/lib");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join(".git"), "gitdir: ../../.git/modules/lib\n").unwrap();
    env.write(
        sub.join(".metaproject/hooks.json"),
        json!({"schemaVersion": "1.0.0", "hooks": {
            "PreToolUse": [sh_hook("sub-gate", "gate", "exit 0")]}})
        .to_string(),
    );
    let data = env.project.join("share").display().to_string();
    let list = run_with(
        &env,
        &sub,
        &[("XDG_DATA_HOME", &data)],
        &["list", "--json"],
        "",
    );
    list.code(0);
    let v = list.json();
    assert_eq!(v["projectTrust"]["state"], "store-refused", "{v}");
    assert!(
        v["projectTrust"]["reason"]
            .as_str()
            .unwrap()
            .contains(&format!(
                "resolves inside the project `{}`",
                env.project.display()
            )),
        "{v}"
    );
    run_with(
        &env,
        &sub,
        &[("XDG_DATA_HOME", &data)],
        &["trust", "--yes"],
        "",
    )
    .code(1)
    .stderr_has("refusing to use the trust store");
    assert!(!env.project.join("share").exists(), "the store was written");
}
