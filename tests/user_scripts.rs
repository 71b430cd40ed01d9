//! A user hook's relative script resolves in the directory of the user
//! hooks file the shim read (an installed snapshot, or `$KERYX_HOME` for
//! the live file), never in the project, while the hook still runs in the
//! project root; `validate` and `doctor` name a script that is missing
//! there, and `test` runs the same copy `run` does.

use serde_json::{Value, json};

use crate::common::{Env, claude_bash};

/// A Claude Code PreToolUse payload for the call `call` in `env`'s project
/// (each call once: a second delivery repeats the first answer).
/// A user gate on Bash. `runs_in` is where it runs: a test home lies under
/// /tmp, which the sandbox replaces, so only an argv[0] (bound in by the
/// runner) is visible there.
fn gate_file(env: &Env, argv: Value, runs_in: &str) {
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            {"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"},
            {"id": "gate", "class": "gate", "matcher": "Bash", "runsIn": runs_in, "command": {"argv": argv}}
        ]}})
        .to_string(),
    );
}

/// A gate that denies with `word` and the directory it runs in.
fn gate_script(word: &str) -> String {
    format!("#!/bin/sh\ncat >/dev/null\necho \"{word} in $(pwd)\" >&2\nexit 2\n")
}

fn reason(run: &crate::common::Run) -> String {
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn an_installed_user_hook_runs_the_snapshots_script_from_the_project() {
    let env = Env::new();
    gate_file(&env, json!(["./scripts/gate.sh"]), "sandbox");
    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        &gate_script("snapshot-v1"),
    );
    // A script of the same name in the project is never the one that runs.
    env.script(env.project.join("scripts/gate.sh"), &gate_script("project"));
    env.run(&["install", "claude-code"]).code(0);
    // The live script changes after install: the snapshot's copy still runs.
    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        &gate_script("live-v2"),
    );

    let key = env.snapshot_key();
    let shim = [
        "run",
        "claude-code",
        "PreToolUse",
        "--snapshot",
        key.as_str(),
    ];
    let why = reason(&env.run_stdin(
        &shim,
        claude_bash(&env, "toolu_first", "echo hi-from-bash").to_string(),
    ));
    let project = env.project.to_str().unwrap();
    assert!(why.contains(&format!("snapshot-v1 in {project}")), "{why}");

    env.run(&["doctor", "--fix"]);
    let why = reason(&env.run_stdin(
        &shim,
        claude_bash(&env, "toolu_second", "echo hi-from-bash").to_string(),
    ));
    assert!(why.contains(&format!("live-v2 in {project}")), "{why}");

    // `test` reads the live file, so it runs the script beside it, also in
    // the project.
    let r = env.run(&["test", "gate", "--json"]);
    assert!(r.stdout.contains("live-v2 in "), "{}", r.stdout);
    assert!(!r.stdout.contains("project in "), "{}", r.stdout);
}

#[test]
fn test_with_a_snapshot_runs_what_the_wired_host_runs() {
    let env = Env::new();
    gate_file(&env, json!(["./scripts/gate.sh"]), "sandbox");
    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        &gate_script("snapshot-v1"),
    );
    env.run(&["install", "claude-code"]).code(0);
    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        &gate_script("live-v2"),
    );
    let key = env.snapshot_key();
    let r = env.run(&["test", "gate", "--json", "--snapshot", key.as_str()]);
    assert!(r.stdout.contains("snapshot-v1 in "), "{}", r.stdout);
    assert!(!r.stdout.contains("live-v2"), "{}", r.stdout);
    // A snapshot that is not installed is an error that names it.
    let r = env.run(&["test", "gate", "--snapshot", "no-such-snapshot"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("no-such-snapshot"), "{}", r.stderr);
}

#[test]
fn a_script_argument_resolves_beside_the_user_file_too() {
    let env = Env::new();
    gate_file(&env, json!(["/bin/sh", "scripts/gate.sh"]), "unsandboxed");
    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        &gate_script("user-dir"),
    );
    env.script(env.project.join("scripts/gate.sh"), &gate_script("project"));
    let why = reason(&env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "toolu_first", "echo hi-from-bash").to_string(),
    ));
    assert!(why.contains("user-dir in "), "{why}");
}

#[test]
fn validate_and_doctor_name_a_user_script_missing_from_its_directory() {
    let env = Env::new();
    gate_file(&env, json!(["bash", "./scripts/missing.sh"]), "sandbox");
    // In the project it exists; that does not count.
    env.script(
        env.project.join("scripts/missing.sh"),
        &gate_script("project"),
    );
    let r = env.run(&["validate"]);
    r.code(1);
    let missing = env.keryx_home().join("scripts/missing.sh");
    assert!(
        r.stdout.contains("hook-user-script-missing"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("`gate`"), "{}", r.stdout);
    assert!(r.stdout.contains(missing.to_str().unwrap()), "{}", r.stdout);

    let v = env.run(&["doctor", "--json"]).json();
    let checks = v["checks"].as_array().unwrap_or_else(|| panic!("{v:#}"));
    let c = checks
        .iter()
        .find(|c| c["name"] == "user-scripts")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(c["status"], "fail", "{c}");
    assert!(c["detail"].as_str().unwrap().contains("missing.sh"), "{c}");

    env.script(&missing, &gate_script("user"));
    env.run(&["validate"]).code(0);
}
