//! The first hour: nothing a person does by the book leaves every agent
//! denied. A resync never installs a source that fails `install`'s checks,
//! an untrusted project cannot take every agent down, hooks are never
//! moved into a sandbox that cannot start, and `init` works after
//! `install` and `import`.

use serde_json::{Value, json};

use crate::common::{Env, claude_bash, claude_payload, read_json};

/// A pinned launcher that does not exist: no sandbox works here.
const NO_SANDBOX: &str = "[sandbox]\nlauncher = \"/nonexistent/bwrap\"\n";

fn installed(env: &Env) -> String {
    std::fs::create_dir_all(env.home.join(".claude")).unwrap();
    env.run(&["install", "claude-code"]).code(0);
    snapshot_key(env)
}

fn snapshot_key(env: &Env) -> String {
    let dir = env.snapshot_root();
    let keys: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    keys[0].clone()
}

fn snapshot_hooks(env: &Env, key: &str) -> String {
    std::fs::read_to_string(
        env.home
            .join(".agentic/hooks-snapshot")
            .join(key)
            .join("hooks.json"),
    )
    .unwrap()
}

/// What the wired shim answers to a Claude Code Bash call of `command`.
fn answer(env: &Env, key: &str, command: &str) -> String {
    let r = env.run_stdin(
        &["run", "claude-code", "PreToolUse", "--snapshot", key],
        claude_bash(env, "call-1", command).to_string(),
    );
    r.code(0);
    r.stdout.clone()
}

fn session_start(env: &Env, key: &str) -> String {
    let p = claude_payload(env, "SessionStart-basic-startup.json");
    let r = env.run_stdin(
        &["run", "claude-code", "SessionStart", "--snapshot", key],
        p.to_string(),
    );
    r.code(0);
    r.stdout.clone()
}

const GATE_ON_A_SCRIPT: &str = r#"{"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
  {"id": "my-gate", "class": "gate", "matcher": "Bash", "command": {"argv": ["./scripts/gate.sh"]}}
]}}"#;

#[test]
fn doctor_fix_keeps_the_last_good_snapshot_when_the_source_does_not_load() {
    let env = Env::new();
    let key = installed(&env);
    let good = snapshot_hooks(&env, &key);
    env.write(
        env.user_hooks(),
        r#"{"schemaVersion":"1.0.0","hooks":{"PreToolUse":[{"id":"x","#,
    );
    for args in [&["doctor", "--fix"][..], &["doctor", "--fix", "--yes"][..]] {
        let r = env.run(args);
        r.code(1)
            .stdout_has("not fixed: resync")
            .stdout_has("sessions keep running as it is")
            .stdout_has("invalid JSON");
        assert!(!r.stdout.contains("fixed: resync: copied"), "{}", r.stdout);
        assert_eq!(snapshot_hooks(&env, &key), good);
    }
    assert_eq!(
        answer(&env, &key, "ls"),
        "",
        "an ordinary call still passes"
    );
}

#[test]
fn doctor_fix_yes_refuses_a_gate_whose_script_is_missing() {
    let env = Env::new();
    let key = installed(&env);
    let good = snapshot_hooks(&env, &key);
    env.write(env.user_hooks(), GATE_ON_A_SCRIPT);
    env.run(&["doctor", "--fix", "--yes"])
        .code(1)
        .stdout_has("not fixed: resync")
        .stdout_has("hook-user-script-missing")
        .stdout_has("put the script beside");
    assert_eq!(snapshot_hooks(&env, &key), good);
    assert_eq!(answer(&env, &key, "ls"), "");

    // `install` refuses the same source, and names the fix.
    env.run(&["install", "claude-code"])
        .code(1)
        .stderr_has("fails its checks, so no host was wired and no snapshot changed")
        .stderr_has("hint: put the script beside");
    assert_eq!(snapshot_hooks(&env, &key), good);

    // With the script in place, the resync goes through.
    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        "#!/bin/sh\nexit 0\n",
    );
    env.run(&["doctor", "--fix", "--yes"])
        .stdout_has("fixed: resync: copied");
    assert!(snapshot_hooks(&env, &key).contains("my-gate"));
}

#[test]
fn nothing_moves_hooks_into_a_sandbox_that_does_not_work_here() {
    let env = Env::new();
    let key = installed(&env);
    let good = snapshot_hooks(&env, &key);
    env.write(env.keryx_home().join("runtime.toml"), NO_SANDBOX);
    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        "#!/bin/sh\nexit 0\n",
    );
    env.write(env.user_hooks(), GATE_ON_A_SCRIPT);
    env.run(&["install", "claude-code"])
        .code(1)
        .stderr_has("`my-gate` runs sandboxed and no sandbox launcher works here")
        .stderr_has("install bubblewrap");
    env.run(&["doctor", "--fix", "--yes"])
        .code(1)
        .stdout_has("no sandbox launcher works here")
        .stdout_has("install bubblewrap");
    assert_eq!(snapshot_hooks(&env, &key), good);
    assert_eq!(answer(&env, &key, "ls"), "");

    // `import` moves nothing either: the host keeps running its hook.
    let settings = env.write(
        env.claude_settings(),
        serde_json::to_string_pretty(&json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo checked"}]}
        ]}}))
        .unwrap(),
    );
    let before = std::fs::read_to_string(&settings).unwrap();
    let hooks_before = std::fs::read_to_string(env.user_hooks()).unwrap();
    env.run(&["import", "claude-code"])
        .code(1)
        .stderr_has("need a sandbox that does not work here; nothing was moved")
        .stderr_has("install bubblewrap");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), before);
    assert_eq!(
        std::fs::read_to_string(env.user_hooks()).unwrap(),
        hooks_before
    );

    // A hook that needs no sandbox installs without one.
    env.write(
        env.user_hooks(),
        GATE_ON_A_SCRIPT.replace("\"class\"", "\"runsIn\": \"unsandboxed\", \"class\""),
    );
    env.run(&["install", "claude-code"]).code(0);
    assert!(snapshot_hooks(&env, &key).contains("my-gate"));
}

#[test]
fn a_broken_project_file_the_person_never_trusted_denies_nothing_and_is_said_once() {
    let env = Env::new();
    let key = installed(&env);
    env.write(
        env.project_hooks(),
        "{\"schemaVersion\": \"1.0.0\", \"hooks\": {",
    );
    assert_eq!(answer(&env, &key, "ls"), "");
    let said = session_start(&env, &key);
    let v: Value = serde_json::from_str(&said).unwrap();
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(
        msg.contains("does not load and you have not trusted this project, so it is ignored"),
        "{msg}"
    );
    assert!(msg.contains("invalid JSON"), "{msg}");
    // `list` and `doctor` say the same, as a warning; `validate` still fails.
    env.run(&["list"])
        .code(0)
        .stderr_has("hook-project-config-ignored");
    env.run(&["validate"]).code(1).stdout_has("invalid JSON");
}

#[test]
fn a_broken_project_file_in_a_project_the_person_trusted_still_denies() {
    let env = Env::new();
    let key = installed(&env);
    env.script(env.project.join("gate.sh"), "#!/bin/sh\nexit 0\n");
    env.write(
        env.project_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
          {"id": "p-gate", "class": "gate", "matcher": "Bash", "command": {"argv": ["./gate.sh"]}, "runsIn": "unsandboxed"}
        ]}}"#,
    );
    env.run(&["trust", "--yes"]).code(0);
    env.write(
        env.project_hooks(),
        "{\"schemaVersion\": \"1.0.0\", \"hooks\": {",
    );
    let out = answer(&env, &key, "ls");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "deny",
        "{out}"
    );
    assert!(out.contains("hook-config-invalid"), "{out}");
}

#[test]
fn init_fills_the_file_install_created_and_adds_beside_imported_hooks() {
    let env = Env::new();
    installed(&env);
    env.run(&["init"])
        .code(0)
        .stdout_has("wrote")
        .stdout_has("the examples are live");
    let v: Value = read_json(env.user_hooks());
    assert_eq!(v["hooks"]["PreToolUse"][0]["id"], "example-no-force-push");
    env.run(&["init"])
        .code(0)
        .stdout_has("already has the example hooks");

    // A file with hooks of its own (as `import` leaves it) gets the examples beside them.
    let env = Env::new();
    env.write(
        env.user_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {"Stop": [
          {"id": "mine", "class": "observe", "command": {"argv": ["/bin/true"]}}
        ]}}"#,
    );
    env.run(&["init"])
        .code(0)
        .stdout_has(
            "added `example-no-force-push` (PreToolUse) and `example-edit-log` (PostToolUse)",
        )
        .stdout_has("beside the 1 hook already there");
    let text = std::fs::read_to_string(env.user_hooks()).unwrap();
    assert!(
        text.contains("\"mine\"") && text.contains("example-edit-log"),
        "{text}"
    );
    env.run(&["validate"]).code(0);
}

#[test]
fn init_force_keeps_a_backup_and_lists_what_it_drops() {
    let env = Env::new();
    let mine = r#"{"schemaVersion": "1.0.0", "hooks": {"Stop": [
      {"id": "mine", "class": "observe", "command": {"argv": ["/bin/true"]}}
    ]}}"#;
    env.write(env.user_hooks(), mine);
    env.run(&["init", "--force"])
        .code(0)
        .stdout_has("hooks.json.bak")
        .stdout_has("it no longer has `mine`");
    let backup = env.keryx_home().join("hooks.json.bak");
    assert_eq!(std::fs::read_to_string(backup).unwrap(), mine);

    // A file that does not load is not merged into; `--force` keeps it too.
    let env = Env::new();
    env.write(env.user_hooks(), "{ not json");
    env.run(&["init"])
        .code(1)
        .stderr_has("does not load")
        .stderr_has("--force");
    env.run(&["init", "--force"])
        .code(0)
        .stdout_has("the old file did not load");
    assert_eq!(
        std::fs::read_to_string(env.keryx_home().join("hooks.json.bak")).unwrap(),
        "{ not json"
    );
}

/// A snapshot is what its manifest says, checked on every event: emptied,
/// deleted or rewritten, or without its manifest, it is a broken config
/// (gate-capable events denied, the person told), never loaded silently.
#[test]
fn a_snapshot_that_no_longer_matches_its_manifest_denies() {
    for tamper in ["empty", "delete", "rewrite", "manifest"] {
        let env = Env::new();
        let key = installed(&env);
        assert_eq!(answer(&env, &key, "ls"), "");
        let dir = env.home.join(".agentic/hooks-snapshot").join(&key);
        match tamper {
            "empty" => std::fs::write(dir.join("hooks.json"), "").unwrap(),
            "delete" => std::fs::remove_file(dir.join("hooks.json")).unwrap(),
            "rewrite" => std::fs::write(
                dir.join("hooks.json"),
                r#"{"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [{"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"}]}}"#,
            )
            .unwrap(),
            _ => std::fs::remove_file(dir.join("manifest.json")).unwrap(),
        }
        let out = answer(&env, &key, "ls");
        let v: Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{tamper}: {e}: {out}"));
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecision"], "deny",
            "{tamper}: {out}"
        );
        assert!(out.contains("hook-snapshot-tampered"), "{tamper}: {out}");
        // doctor --fix takes the snapshot again (a directory without its
        // manifest is moved away and installed again), and the guards are back.
        if tamper == "manifest" {
            std::fs::remove_dir_all(&dir).unwrap();
            env.run(&["install", "claude-code"]).code(0);
        } else {
            env.run(&["doctor", "--fix", "--yes"]);
        }
        assert_eq!(answer(&env, &key, "ls"), "", "{tamper} after doctor --fix");
    }
}
