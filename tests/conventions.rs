//! Claude Code's hook conventions as keryx-hooks honours them on every host
//! that follows them: plain stdout as context where Claude reads it so, a
//! hook's `systemMessage` for the person, the reason of an exit 2 taken from
//! the JSON on stdout, the host's own hook variables and a registration's
//! `envPassthrough` through the environment allowlist.

use serde_json::{Value, json};

use crate::common::{Env, claude_payload, fixture, user_hooks};

/// User hooks on `event`, the built-in ctx-guard off where it would gate.
fn user_hooks_on(env: &Env, event: &str, hooks: Value) {
    let mut list = vec![];
    if event == "PreToolUse" {
        list.push(json!({"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"}));
    }
    list.extend(hooks.as_array().unwrap().iter().cloned());
    user_hooks(env, json!({event: list}));
}

#[test]
fn plain_stdout_is_context_on_session_start_and_prompts_only() {
    let env = Env::new();
    let say = env.script(
        env.home.join("hooks/say.sh"),
        "#!/bin/sh\ncat >/dev/null\necho 'branch: main'\necho 'open issues: 3'\n",
    );
    for event in ["SessionStart", "UserPromptSubmit"] {
        user_hooks_on(
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
            claude_payload(&env, file).to_string(),
        );
        run.code(0);
        let v = run.json();
        let ctx = v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or_default();
        assert!(ctx.contains("branch: main\nopen issues: 3"), "{event}: {v}");
    }
    // Elsewhere plain text is still no answer (malformed, so not context).
    user_hooks_on(
        &env,
        "PostToolUse",
        json!([{"id": "say", "class": "context", "matcher": "Bash", "runsIn": "unsandboxed",
                "command": {"argv": [say]}}]),
    );
    let run = env.run_stdin(
        &["run", "claude-code", "PostToolUse"],
        claude_payload(&env, "PostToolUse-basic-Bash.json").to_string(),
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
    user_hooks_on(
        &env,
        "UserPromptSubmit",
        json!([{"id": "fmt", "class": "context", "runsIn": "unsandboxed",
                "command": {"argv": [hook]}}]),
    );
    let run = env.run_stdin(
        &["run", "claude-code", "UserPromptSubmit"],
        claude_payload(&env, "UserPromptSubmit-basic.json").to_string(),
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
    user_hooks_on(
        &env,
        "PreToolUse",
        json!([{"id": "block", "class": "gate", "matcher": "Bash", "runsIn": "unsandboxed",
                "command": {"argv": [hook]}}]),
    );
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_payload(&env, "PreToolUse-basic-Bash.json").to_string(),
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
    user_hooks_on(
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
        let mut p = fixture(host, "Stop-basic.json");
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

/// `validate` on a user file holding `hooks`.
fn validate(hooks: Value) -> crate::common::Run {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": hooks}).to_string(),
    );
    env.run(&["validate"])
}

#[test]
fn an_unknown_event_says_what_it_looks_like() {
    let hook = json!([{"id": "notify", "class": "observe", "command": {"argv": ["/bin/true"]}}]);
    let r = validate(json!({ "Notification": hook }));
    r.code(1);
    r.stdout_has("unknown event `Notification`")
        .stdout_has("Claude Code")
        .stdout_has("has no event for")
        .stdout_has("host's own settings");
    assert!(!r.stdout.contains("was unexpected"), "{}", r.stdout);
    let r = validate(json!({ "PermissionRequest": hook }));
    r.code(1);
    r.stdout_has("has no event for");
    // A host's name for a keryx event, and a keryx event misspelt.
    let r = validate(json!({ "BeforeTool": hook }));
    r.code(1);
    r.stdout_has("Gemini CLI").stdout_has("`PreToolUse`");
    let r = validate(json!({ "pretooluse": hook }));
    r.code(1);
    r.stdout_has("spelled `PreToolUse`");
}

#[test]
fn a_permission_rule_matcher_is_an_error() {
    for rule in ["Bash(rm:*)", "Bash(git push:*)", "Read(./.env)"] {
        let r = validate(json!({"PreToolUse": [
            {"id": "guard", "class": "gate", "matcher": rule, "command": {"argv": ["/bin/true"]}}
        ]}));
        r.code(1);
        r.stdout_has("hook-matcher-permission-rule")
            .stdout_has("tool-name regex");
    }
    // Real regexes with parentheses stay regexes.
    validate(json!({"PreToolUse": [
        {"id": "guard", "class": "gate", "matcher": "^(Write|Edit)$", "command": {"argv": ["/bin/true"]}},
        {"id": "mcp", "class": "gate", "matcher": "mcp__(github|gitlab)__.*", "command": {"argv": ["/bin/true"]}}
    ]}))
    .code(0);
}

#[test]
fn a_timeout_under_100_ms_warns_that_it_is_milliseconds() {
    let r = validate(json!({"Stop": [
        {"id": "tests", "class": "observe", "timeoutMs": 10, "command": {"argv": ["/bin/true"]}}
    ]}));
    r.code(0);
    r.stdout_has("hook-timeout-short")
        .stdout_has("`timeoutMs: 10000`");
    let r = validate(json!({"Stop": [
        {"id": "tests", "class": "observe", "timeoutMs": 100, "command": {"argv": ["/bin/true"]}}
    ]}));
    assert!(!r.stdout.contains("hook-timeout-short"), "{}", r.stdout);
}

#[test]
fn test_applies_the_matcher_like_run() {
    let env = Env::new();
    let deny = env.script(
        env.home.join("hooks/deny.sh"),
        "#!/bin/sh\ncat >/dev/null\necho no >&2\nexit 2\n",
    );
    user_hooks_on(
        &env,
        "PreToolUse",
        json!([{"id": "write-gate", "class": "gate", "matcher": "Write", "runsIn": "unsandboxed",
                "command": {"argv": [deny]}}]),
    );
    let bash = env.write(
        env.home.join("bash.json"),
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}).to_string(),
    );
    let r = env.run(&[
        "test",
        "write-gate",
        "--payload-file",
        bash.to_str().unwrap(),
    ]);
    r.code(0);
    r.stdout_has("does not fire").stdout_has("`Write`");
    assert!(!r.stdout.contains("deny"), "{}", r.stdout);
    // `run` agrees: nothing fires, so no deny.
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_payload(&env, "PreToolUse-basic-Bash.json").to_string(),
    );
    run.code(0);
    assert!(!run.stdout.contains("deny"), "{}", run.stdout);
    // A Write payload does fire it.
    let write = env.write(
        env.home.join("write.json"),
        json!({"tool_name": "Write", "tool_input": {"file_path": "/tmp/x", "content": ""}})
            .to_string(),
    );
    let r = env.run(&[
        "test",
        "write-gate",
        "--payload-file",
        write.to_str().unwrap(),
    ]);
    r.stdout_has("deny");
}
