//! The eighteen cases agent-harness-adapter 0.2.2 was measured against as a
//! Claude Code PreToolUse bridge (research/peer-robustness.md), run the same
//! way through `keryx-hooks run claude-code PreToolUse` with the captured
//! Bash payload: the hook's decision reaches Claude unchanged, a failure or
//! bad input never becomes an allow because of the shim, every run ends in
//! bounded time, no process is left behind, and memory does not grow with
//! what the hook or the host sends.

use std::time::Duration;

use serde_json::{Value, json};

use super::{SLACK, eventually, is_dead, read_pids, run_limited, spawn, wait};
use crate::common::{Env, Run, claude_bash, deny_reason, read_json, user_hooks};

/// One gate on Claude Code's PreToolUse, unsandboxed like the peer's hooks.
fn gate(env: &Env, argv: Value, timeout_ms: u64) {
    user_hooks(
        env,
        json!({"PreToolUse": [{"id": "peer", "class": "gate", "matcher": "Bash", "runsIn": "unsandboxed",
                               "timeoutMs": timeout_ms, "command": {"argv": argv}}]}),
    );
}

fn sh_gate(env: &Env, script: &str, timeout_ms: u64) {
    gate(env, json!(["/bin/sh", "-c", script]), timeout_ms);
}

fn timed_pre_tool(env: &Env, call: &str) -> (Run, Duration) {
    let payload = claude_bash(env, call, "echo hi-from-bash").to_string();
    let child = spawn(env, &["run", "claude-code", "PreToolUse"], payload, false);
    let (out, took) = wait(child, Duration::from_secs(60));
    (Run::from(out), took)
}

/// The session record of hook `peer` for tool call `call`.
fn peer_record(env: &Env, call: &str) -> Value {
    let p = claude_bash(env, call, "");
    env.records("claude-code", p["session_id"].as_str().unwrap())
        .into_iter()
        .find(|l| l["correlationId"] == call && l["record"]["hookId"] == "peer")
        .unwrap_or_else(|| panic!("no record of `peer` for {call}"))["record"]
        .clone()
}

#[track_caller]
fn all_dead(pids: &[i32]) {
    assert!(!pids.is_empty(), "the hook wrote no pids");
    assert!(
        eventually(Duration::from_secs(2), || pids.iter().all(|p| is_dead(*p))),
        "hook processes survived: {pids:?}"
    );
}

#[test]
fn peer_01_exit_2_with_a_reason_on_stderr_is_a_deny_with_that_reason() {
    let env = Env::new();
    sh_gate(
        &env,
        "echo 'blocked-by-exit2-hook: case1 reason' >&2; exit 2",
        5000,
    );
    let (run, _) = timed_pre_tool(&env, "p1");
    run.code(0);
    assert_eq!(deny_reason(&run), "blocked-by-exit2-hook: case1 reason");
}

#[test]
fn peer_02_a_hook_specific_output_deny_is_a_deny_with_its_reason() {
    let env = Env::new();
    sh_gate(
        &env,
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"DENY-REASON-peer"}}'"#,
        5000,
    );
    let (run, _) = timed_pre_tool(&env, "p2");
    run.code(0);
    assert_eq!(deny_reason(&run), "DENY-REASON-peer");
    assert_eq!(run.stdout.trim().lines().count(), 1);
}

#[test]
fn peer_03_a_hook_that_sleeps_is_killed_at_its_timeout_and_denies() {
    let env = Env::new();
    let pids = env.project.join("pids");
    sh_gate(
        &env,
        &format!("sleep 60 & echo $$ $! > {}; wait", pids.display()),
        1000,
    );
    let (run, took) = timed_pre_tool(&env, "p3");
    run.code(0);
    assert!(
        deny_reason(&run).starts_with("hook-timeout: hook `peer` did not finish within 1000 ms"),
        "{}",
        run.stdout
    );
    assert!(took < Duration::from_millis(1500) + SLACK, "took {took:?}");
    all_dead(&read_pids(&pids));
}

#[test]
fn peer_04_a_term_ignoring_hook_is_killed_at_its_timeout_and_denies() {
    let env = Env::new();
    let pids = env.project.join("pids");
    sh_gate(
        &env,
        &format!(
            "trap '' TERM; sleep 60 & echo $$ $! > {}; wait; wait",
            pids.display()
        ),
        1000,
    );
    let (run, took) = timed_pre_tool(&env, "p4");
    run.code(0);
    assert!(
        deny_reason(&run).starts_with("hook-timeout"),
        "{}",
        run.stdout
    );
    assert!(took < Duration::from_millis(1500) + SLACK, "took {took:?}");
    all_dead(&read_pids(&pids));
}

/// A host that signals only its direct child (`timeout --foreground`, a
/// TERM-only host) must not leak the hook: keryx-hooks kills every hook
/// group it started before it dies.
#[test]
fn peer_04_a_host_that_terminates_only_the_shim_leaks_no_hook() {
    let env = Env::new();
    let pids = env.project.join("pids");
    sh_gate(
        &env,
        &format!(
            "trap '' TERM; sleep 60 & echo $$ $! > {}; wait; wait",
            pids.display()
        ),
        30_000,
    );
    let payload = claude_bash(&env, "p4b", "echo hi-from-bash").to_string();
    let child = spawn(&env, &["run", "claude-code", "PreToolUse"], payload, false);
    assert!(
        eventually(Duration::from_secs(10), || read_pids(&pids).len() == 2),
        "the hook never started"
    );
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let (out, took) = wait(child, Duration::from_secs(5));
    assert!(took < SLACK, "took {took:?} to die of SIGTERM");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGTERM));
    all_dead(&read_pids(&pids));
}

#[test]
fn peer_05_a_grandchild_holding_stdout_cannot_hold_the_answer_past_timeout_and_grace() {
    for (call, first) in [
        ("p5", "echo '{}'"),
        ("p5b", r#"echo '{"decision":"deny","reason":"late deny"}'"#),
    ] {
        let env = Env::new();
        let pids = env.project.join("pids");
        // The background sleep inherits the hook's stdout and keeps it open.
        sh_gate(
            &env,
            &format!("{first}; sleep 60 & echo $! > {}", pids.display()),
            1000,
        );
        let (run, took) = timed_pre_tool(&env, call);
        run.code(0);
        // The spec's rule: the call resolves at the timeout plus the grace,
        // as a timeout; a gate's timeout is a deny, never a late allow.
        assert!(
            deny_reason(&run).starts_with("hook-timeout"),
            "{call}: {}",
            run.stdout
        );
        assert!(
            took < Duration::from_millis(1500) + SLACK,
            "{call}: took {took:?}"
        );
        all_dead(&read_pids(&pids));
    }
}

#[test]
fn peer_06_a_100_mb_stdout_is_capped_and_memory_stays_bounded() {
    let env = Env::new();
    sh_gate(&env, "yes allow | head -c 100000000", 30_000);
    let payload = claude_bash(&env, "p6", "echo hi-from-bash").to_string();
    // 64 MiB of heap for keryx-hooks: buffering the output whole (as the
    // peer does, ≈2×) would abort it.
    let (run, took) = run_limited(
        &env,
        64 * 1024,
        &["run", "claude-code", "PreToolUse"],
        payload.as_bytes(),
    );
    run.code(0);
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert!(
        run.stdout.len() < 4096,
        "{} bytes on stdout",
        run.stdout.len()
    );
    // A reply cut at the cap is not read: it fails like a crash, and a
    // gate that fails denies.
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    assert_eq!(peer_record(&env, "p6")["failure"], "crash");
}

#[test]
fn peer_07_a_100_mb_stderr_is_capped_and_the_reason_is_bounded() {
    let env = Env::new();
    sh_gate(&env, "yes denied | head -c 100000000 >&2; exit 2", 30_000);
    let payload = claude_bash(&env, "p7", "echo hi-from-bash").to_string();
    let (run, took) = run_limited(
        &env,
        64 * 1024,
        &["run", "claude-code", "PreToolUse"],
        payload.as_bytes(),
    );
    run.code(0);
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let reason = deny_reason(&run);
    assert!(reason.starts_with("denied\ndenied\n"), "{}", &reason[..40]);
    assert!(
        reason.ends_with("…[truncated]"),
        "{}",
        &reason[reason.len() - 40..]
    );
    assert!(
        reason.len() <= 4000 + "…[truncated]".len(),
        "{}",
        reason.len()
    );
}

#[test]
fn peer_08_a_gate_that_exits_1_denies() {
    let env = Env::new();
    sh_gate(&env, "exit 1", 5000);
    let (run, _) = timed_pre_tool(&env, "p8");
    run.code(0);
    assert_eq!(deny_reason(&run), "hook-crashed: hook `peer` exited 1");
}

#[test]
fn peer_09_a_command_that_does_not_exist_denies_with_the_path_and_a_fix() {
    let env = Env::new();
    gate(&env, json!(["/nonexistent/hook"]), 5000);
    let (run, _) = timed_pre_tool(&env, "p9");
    run.code(0);
    let reason = deny_reason(&run);
    assert!(reason.starts_with("hook-crashed: hook `peer`"), "{reason}");
    assert!(
        reason.contains("`/nonexistent/hook` does not exist; check the path"),
        "{reason}"
    );
}

/// Invalid JSON on exit 0. The spec's failure table makes malformed gate
/// output a silent approve unless what it gated was already an ask, which
/// it then denies. So: never an explicit allow to the host (silence leaves
/// Claude Code's own permission rules in charge), the failure is recorded,
/// and through the keryx protocol an ask becomes a deny. docs/SECURITY.md
/// says where this differs from the catalogue.
#[test]
fn peer_10_invalid_json_from_a_gate_never_turns_an_ask_into_an_allow() {
    malformed_is_recorded_and_denies_an_ask("{\"hookSpecificOutput\": not json", "p10");
}

#[test]
fn peer_11_an_unknown_decision_is_malformed_and_never_turns_an_ask_into_an_allow() {
    malformed_is_recorded_and_denies_an_ask(
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"maybe"}}"#,
        "p11",
    );
}

fn malformed_is_recorded_and_denies_an_ask(output: &str, call: &str) {
    let env = Env::new();
    sh_gate(&env, &format!("echo '{output}'"), 5000);
    let (run, _) = timed_pre_tool(&env, call);
    run.code(0);
    assert_eq!(run.stdout, "", "never an explicit allow");
    let rec = peer_record(&env, call);
    assert_eq!(rec["failure"], "malformed", "{rec}");

    let payload = json!({"event": "PreToolUse", "sessionId": "s", "cwd": env.project,
        "toolName": "Bash", "toolCallId": format!("{call}-ask"), "toolInput": {"command": "ls"},
        "decideOutcome": "ask"});
    let v = env
        .run_stdin(&["run", "keryx", "PreToolUse"], payload.to_string())
        .json();
    assert_eq!(v["outcome"], "deny", "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .starts_with("hook-malformed-output: hook `peer`"),
        "{v}"
    );
}

#[test]
fn peer_12_an_input_rewrite_never_reaches_the_host() {
    let env = Env::new();
    sh_gate(
        &env,
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo REWRITTEN-BY-HOOK"}}}'"#,
        5000,
    );
    let (run, _) = timed_pre_tool(&env, "p12");
    run.code(0);
    // Allow is silence, and the rewrite is dropped (the spec's rule).
    assert_eq!(run.stdout, "");
    assert!(!run.stderr.contains("REWRITTEN"));
}

/// The hooks of cases 13 to 16 must never run: a marker proves they did
/// not, once a good payload has shown that it does run.
fn marker_gate(env: &Env) -> std::path::PathBuf {
    let marker = env.project.join("hook-ran");
    sh_gate(env, &format!("touch {}", marker.display()), 5000);
    timed_pre_tool(env, "marker-check").0.code(0);
    assert!(marker.exists(), "the marker gate does not run");
    std::fs::remove_file(&marker).unwrap();
    marker
}

#[test]
fn peer_13_a_50_mb_payload_is_refused_within_bounded_memory() {
    let env = Env::new();
    let marker = marker_gate(&env);
    let mut big = br#"{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": ""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 50 << 20));
    big.extend(br#""}}"#);
    let (run, took) = run_limited(&env, 48 * 1024, &["run", "claude-code", "PreToolUse"], &big);
    run.code(0);
    assert!(
        deny_reason(&run).contains("stdin is larger than 16777216 bytes"),
        "{}",
        run.stdout
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(!marker.exists(), "the hook ran on a refused payload");
}

#[test]
fn peer_14_to_16_unreadable_payloads_deny_and_run_no_hook() {
    let env = Env::new();
    let marker = marker_gate(&env);
    let cases: [(&str, Vec<u8>, &str); 3] = [
        (
            "14 invalid UTF-8",
            b"{\"session_id\": \"s\", \"tool_name\": \"Bash\", \"tool_input\": {\"command\": \"\xff\xfe\"}}"
                .to_vec(),
            "not valid UTF-8",
        ),
        ("15 [ x 200000", "[".repeat(200_000).into_bytes(), "nested deeper"),
        ("16 empty", Vec::new(), "stdin was empty"),
    ];
    for (name, stdin, needle) in cases {
        let run = env.run_stdin(&["run", "claude-code", "PreToolUse"], &stdin);
        run.code(0);
        let reason = deny_reason(&run);
        assert!(reason.contains(needle), "{name}: {reason}");
        assert!(!marker.exists(), "{name}: the hook ran on a stub");
    }
}

#[test]
fn peer_17_stdin_held_open_is_answered_without_waiting_for_eof() {
    let env = Env::new();
    let got = env.project.join("payload.json");
    sh_gate(
        &env,
        &format!("cat > {}; echo 'seen' >&2; exit 2", got.display()),
        5000,
    );
    let payload = claude_bash(&env, "p17", "echo hi-from-bash").to_string();
    let child = spawn(&env, &["run", "claude-code", "PreToolUse"], payload, true);
    let (out, took) = wait(child, Duration::from_secs(20));
    assert!(took < Duration::from_secs(5), "waited {took:?} for EOF");
    let run = Run::from(out);
    assert_eq!(deny_reason(&run), "seen");
    let seen: Value = read_json(&got);
    assert_eq!(seen["tool_input"]["command"], "echo hi-from-bash");
}

#[test]
fn peer_18_a_secret_in_the_hosts_environment_never_reaches_the_hook() {
    let env = Env::new().env("AHA_SECRET_TOKEN", "s3cr3t");
    sh_gate(
        &env,
        "echo \"hook sees AHA_SECRET_TOKEN=${AHA_SECRET_TOKEN:-nothing}\" >&2; exit 2",
        5000,
    );
    let (run, _) = timed_pre_tool(&env, "p18");
    assert_eq!(deny_reason(&run), "hook sees AHA_SECRET_TOKEN=nothing");
}
