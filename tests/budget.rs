//! The shim answers within the time its host waits, whatever the hooks do:
//! the host's timeout for the event is read from the wiring, a gate still
//! running at the end of it denies, observers never hold up the answer (a
//! deny does not wait for them at all), and `install` counts the project's
//! hooks in the timeouts it writes.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{
    Env, Run, claude_bash, claude_payload, project_hooks, read_json, sh_hook, user_hooks,
};

/// A hook that sleeps `secs` (its own timeout 60 s), leaving `marker`
/// behind when it was not stopped.
fn sleeper(id: &str, class: &str, secs: u32, marker: &Path) -> Value {
    let mut h = sh_hook(
        id,
        class,
        &format!("cat >/dev/null; sleep {secs}; touch '{}'", marker.display()),
    );
    h["timeoutMs"] = json!(60_000);
    h
}

/// `claude-code <event>` as the wiring `install` wrote runs it, timed.
fn run_wired(env: &Env, event: &str, payload: &Value) -> (Run, Duration) {
    let key = env.snapshot_key();
    let started = Instant::now();
    let run = env.run_stdin(
        &["run", "claude-code", event, "--snapshot", &key],
        payload.to_string(),
    );
    (run, started.elapsed())
}

/// The timeout our wiring of `event` has in `~/.claude/settings.json`.
fn wired_timeout(env: &Env, event: &str) -> u64 {
    let v = read_json(env.claude_settings());
    v["hooks"][event][0]["hooks"][0]["timeout"]
        .as_u64()
        .unwrap_or_else(|| panic!("no timeout on {event}: {v:#}"))
}

/// Sets the timeout our wiring of `event` has, as a person editing the
/// host's settings would.
fn set_wired_timeout(env: &Env, event: &str, secs: u64) {
    let mut v = read_json(env.claude_settings());
    v["hooks"][event][0]["hooks"][0]["timeout"] = json!(secs);
    env.write(env.claude_settings(), v.to_string());
}

/// The session of the captured Claude Code payloads.
const SESSION: &str = "8096d6db-4c67-4eea-8411-16039ce906a8";

fn record_of<'a>(records: &'a [Value], id: &str) -> &'a Value {
    records
        .iter()
        .map(|r| &r["record"])
        .find(|r| r["hookId"] == id)
        .unwrap_or_else(|| panic!("no record of `{id}`: {records:#?}"))
}

#[test]
fn a_deny_does_not_wait_for_a_trusted_project_observer_that_sleeps() {
    let env = Env::new();
    env.run(&["install", "claude-code"]).code(0);
    // Added after the install: its 30 s are in no timeout Claude Code has.
    let marker = env.project.join("observer-finished");
    project_hooks(
        &env,
        json!({"PreToolUse": [sleeper("slow-watch", "observe", 30, &marker)]}),
    );
    env.run(&["trust", "--yes"]).code(0);

    // The built-in ctx-guard denies reading `.env`.
    let (run, took) = run_wired(&env, "PreToolUse", &claude_bash(&env, "call-1", "cat .env"));
    run.code(0);
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    assert!(
        took < Duration::from_secs(10),
        "the deny waited {took:?} for an observer"
    );
    let records = env.records("claude-code", SESSION);
    let watch = record_of(&records, "slow-watch");
    let why = watch["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("a deny does not wait for observers"),
        "{watch:#}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(!marker.exists(), "the observer was left running");
}

#[test]
fn a_gate_still_running_when_the_hosts_timeout_nears_denies_in_time() {
    let env = Env::new();
    env.run(&["install", "claude-code"]).code(0);
    // The person gave Claude Code 3 s for PreToolUse.
    set_wired_timeout(&env, "PreToolUse", 3);
    let gate_done = env.project.join("gate-finished");
    let watch_done = env.project.join("observer-finished");
    project_hooks(
        &env,
        json!({"PreToolUse": [
            sleeper("hangs", "gate", 30, &gate_done),
            sleeper("watches", "observe", 30, &watch_done),
        ]}),
    );
    env.run(&["trust", "--yes"]).code(0);

    let (run, took) = run_wired(&env, "PreToolUse", &claude_bash(&env, "call-1", "ls"));
    run.code(0);
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("hook-over-budget") && reason.contains("`hangs`"),
        "{reason}"
    );
    assert!(
        took < Duration::from_secs(3),
        "answered after {took:?}, when Claude Code had given up"
    );
    let records = env.records("claude-code", SESSION);
    assert_eq!(record_of(&records, "hangs")["failure"], "timeout");
    assert_eq!(record_of(&records, "watches")["failure"], "timeout");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!gate_done.exists() && !watch_done.exists());
}

#[test]
fn an_observer_past_the_budget_is_stopped_and_the_event_answered_in_time() {
    let env = Env::new();
    env.run(&["install", "claude-code"]).code(0);
    set_wired_timeout(&env, "PostToolUse", 2);
    let done = env.project.join("observer-finished");
    project_hooks(
        &env,
        json!({"PostToolUse": [sleeper("late-watch", "observe", 30, &done)]}),
    );
    env.run(&["trust", "--yes"]).code(0);
    let mut payload = claude_payload(&env, "PostToolUse-basic-Bash.json");
    payload["tool_use_id"] = json!("call-1");
    let (run, took) = run_wired(&env, "PostToolUse", &payload);
    run.code(0);
    assert_eq!(run.stdout, "");
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    let records = env.records("claude-code", SESSION);
    let watch = record_of(&records, "late-watch");
    assert_eq!(watch["failure"], "timeout", "{watch:#}");
    assert!(
        watch["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("time budget"),
        "{watch:#}"
    );
}

#[test]
fn install_counts_the_projects_hooks_in_a_user_scope_timeout() {
    let env = Env::new();
    env.run(&["install", "claude-code"]).code(0);
    let built_ins = wired_timeout(&env, "PreToolUse");
    let mut gate = sh_hook("slow-gate", "gate", "cat >/dev/null");
    gate["timeoutMs"] = json!(30_000);
    project_hooks(&env, json!({"PreToolUse": [gate]}));
    env.run(&["install", "claude-code"]).code(0);
    // The built-ins' 18.5 s, then 30 s and the kill grace: 49 s.
    assert_eq!(built_ins, 19);
    assert_eq!(wired_timeout(&env, "PreToolUse"), 49);
}

#[test]
fn hooks_that_need_more_than_a_host_allows_are_said_at_install() {
    let env = Env::new();
    let gates: Vec<Value> = (0..10)
        .map(|i| {
            let mut g = sh_hook(&format!("gate-{i}"), "gate", "cat >/dev/null");
            g["timeoutMs"] = json!(60_000);
            g
        })
        .collect();
    user_hooks(&env, json!({"PreToolUse": gates}));
    let run = env.run(&["install", "kimi"]);
    run.stdout_has("at most 600 s");
    let text = std::fs::read_to_string(env.home.join(".kimi-code/config.toml")).unwrap();
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    let pre = doc["hooks"]
        .as_array_of_tables()
        .unwrap()
        .iter()
        .find(|t| t["event"].as_str() == Some("PreToolUse"))
        .unwrap()["timeout"]
        .as_integer();
    assert_eq!(pre, Some(600), "{text}");
    env.run(&["doctor"]).stdout_has("at most 600 s");
}
