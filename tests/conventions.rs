//! Claude Code's hook conventions as keryx-hooks honours them on every host
//! that follows them: plain stdout as context where Claude reads it so, a
//! hook's `systemMessage` for the person, the reason of an exit 2 taken from
//! the JSON on stdout, the host's own hook variables and a registration's
//! `envPassthrough` through the environment allowlist.

use serde_json::{Value, json};

use crate::common::Env;

fn fixture(name: &str) -> Value {
    let p = format!(
        "{}/tests/fixtures/payloads/claude-code/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn payload(env: &Env, name: &str) -> Value {
    let mut p = fixture(name);
    p["cwd"] = json!(env.project);
    p
}

/// User hooks on `event`, the built-in ctx-guard off where it would gate.
fn user_hooks(env: &Env, event: &str, hooks: Value) {
    let mut list = vec![];
    if event == "PreToolUse" {
        list.push(json!({"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"}));
    }
    list.extend(hooks.as_array().unwrap().iter().cloned());
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {event: list}}).to_string(),
    );
}

#[test]
fn plain_stdout_is_context_on_session_start_and_prompts_only() {
    let env = Env::new();
    let say = env.script(
        env.home.join("hooks/say.sh"),
        "#!/bin/sh\ncat >/dev/null\necho 'branch: main'\necho 'open issues: 3'\n",
    );
    for event in ["SessionStart", "UserPromptSubmit"] {
        user_hooks(
            &env,
            event,
            json!([{"id": "say", "class": "context", "runsIn": "unsandboxed",
                    "command": {"argv": [say]}}]),
        );
        let file = if event == "SessionStart" {
            "SessionStart-basic-startup.json"
        } else {
            "UserPromptSubmit-basic.json"
        };
        let run = env.run_stdin(
            &["run", "claude-code", event],
            payload(&env, file).to_string(),
        );
        run.code(0);
        let v = run.json();
        let ctx = v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or_default();
        assert!(ctx.contains("branch: main\nopen issues: 3"), "{event}: {v}");
    }
    // Elsewhere plain text is still no answer (malformed, so not context).
    user_hooks(
        &env,
        "PostToolUse",
        json!([{"id": "say", "class": "context", "matcher": "Bash", "runsIn": "unsandboxed",
                "command": {"argv": [say]}}]),
    );
    let run = env.run_stdin(
        &["run", "claude-code", "PostToolUse"],
        payload(&env, "PostToolUse-basic-Bash.json").to_string(),
    );
    run.code(0);
    assert!(!run.stdout.contains("branch: main"), "{}", run.stdout);
}

#[test]
fn a_system_message_reaches_the_person_and_not_the_model() {
    let env = Env::new();
    let hook = env.script(
        env.home.join("hooks/fmt.sh"),
        "#!/bin/sh\ncat >/dev/null\necho '{\"systemMessage\":\"formatted 3 files\",\"additionalContext\":\"ctx line\"}'\n",
    );
    user_hooks(
        &env,
        "UserPromptSubmit",
        json!([{"id": "fmt", "class": "context", "runsIn": "unsandboxed",
                "command": {"argv": [hook]}}]),
    );
    let run = env.run_stdin(
        &["run", "claude-code", "UserPromptSubmit"],
        payload(&env, "UserPromptSubmit-basic.json").to_string(),
    );
    run.code(0);
    let v = run.json();
    let said = v["systemMessage"].as_str().unwrap_or_default();
    assert!(said.contains("fmt: formatted 3 files"), "{v}");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        ctx.contains("ctx line") && !ctx.contains("formatted"),
        "{v}"
    );
}

#[test]
fn exit_2_with_a_decision_json_uses_its_reason() {
    let env = Env::new();
    let hook = env.script(
        env.home.join("hooks/block.sh"),
        "#!/bin/sh\ncat >/dev/null\necho '{\"decision\":\"block\",\"reason\":\"rm -rf is not allowed here\"}'\necho 'generic stderr' >&2\nexit 2\n",
    );
    user_hooks(
        &env,
        "PreToolUse",
        json!([{"id": "block", "class": "gate", "matcher": "Bash", "runsIn": "unsandboxed",
                "command": {"argv": [hook]}}]),
    );
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        payload(&env, "PreToolUse-basic-Bash.json").to_string(),
    );
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("rm -rf is not allowed here"), "{reason}");
    assert!(!reason.contains("generic stderr"), "{reason}");
}

#[test]
fn host_hook_variables_and_env_passthrough_reach_the_hook_and_nothing_else() {
    let env = Env::new();
    let dump = env.home.join("env.txt");
    let hook = env.script(
        env.home.join("hooks/env.sh"),
        &format!("#!/bin/sh\ncat >/dev/null\nenv > '{}'\n", dump.display()),
    );
    user_hooks(
        &env,
        "Stop",
        json!([{"id": "env-dump", "class": "observe", "runsIn": "unsandboxed",
                "command": {"argv": [hook], "envPassthrough": ["NOTIFY_URL"]}}]),
    );
    let env = env
        .env("CLAUDE_ENV_FILE", "/s/claude-env")
        .env("CLAUDE_PLUGIN_ROOT", "/s/plugin")
        .env("CLAUDE_CODE_MESSAGING_TOKEN", "tok")
        .env("CODEX_HOME", "/s/codex")
        .env("NOTIFY_URL", "https://example.invalid/hook")
        .env("AWS_SECRET_ACCESS_KEY", "hunter2");
    let seen = |host: &str| -> String {
        let _ = std::fs::remove_file(&dump);
        let text = std::fs::read_to_string(format!(
            "{}/tests/fixtures/payloads/{host}/Stop-basic.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let mut p: Value = serde_json::from_str(&text).unwrap();
        p["cwd"] = json!(env.project);
        env.run_stdin(&["run", host, "Stop"], p.to_string()).code(0);
        std::fs::read_to_string(&dump).unwrap()
    };
    let has = |text: &str, line: &str| text.lines().any(|l| l == line);
    let names = |text: &str, name: &str| text.lines().any(|l| l.starts_with(name));
    let under_claude = seen("claude-code");
    for line in [
        "CLAUDE_ENV_FILE=/s/claude-env",
        "CLAUDE_PLUGIN_ROOT=/s/plugin",
        "NOTIFY_URL=https://example.invalid/hook",
    ] {
        assert!(has(&under_claude, line), "{line}: {under_claude}");
    }
    for name in [
        "CODEX_HOME=",
        "AWS_SECRET_ACCESS_KEY=",
        "CLAUDE_CODE_MESSAGING_TOKEN=",
    ] {
        assert!(!names(&under_claude, name), "{name}: {under_claude}");
    }
    // Another host's variables are that host's own.
    let under_codex = seen("codex");
    assert!(has(&under_codex, "CODEX_HOME=/s/codex"), "{under_codex}");
    assert!(
        has(&under_codex, "NOTIFY_URL=https://example.invalid/hook"),
        "{under_codex}"
    );
    assert!(!names(&under_codex, "CLAUDE_ENV_FILE="), "{under_codex}");
}

#[test]
fn env_passthrough_is_validated_and_listed() {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [
            {"id": "notify", "class": "observe", "command": {"argv": ["/bin/true"], "envPassthrough": ["DISPLAY", "DBUS_SESSION_BUS_ADDRESS"]}}
        ]}})
        .to_string(),
    );
    env.run(&["list"])
        .code(0)
        .stdout_has("env passed through: DISPLAY DBUS_SESSION_BUS_ADDRESS");
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [
            {"id": "notify", "class": "observe", "command": {"argv": ["/bin/true"], "envPassthrough": ["BAD=NAME"]}}
        ]}})
        .to_string(),
    );
    let run = env.run(&["validate"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
}
