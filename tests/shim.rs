//! `run <host> <event>` as hosts drive it: bad input never panics, hangs or
//! turns a gate into an allow; per-session state under concurrency; the
//! Stop-loop guard; de-duplication of double deliveries.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Env, claude_bash, claude_payload, deny_reason, fixture, read_json};

#[test]
fn bad_payloads_deny_gates_and_stay_silent_elsewhere() {
    let env = Env::new();
    let nested = "[".repeat(200_000);
    let truncated = r#"{"session_id": "s", "tool_name": "Ba"#;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "empty"),
        ("truncated", truncated.as_bytes().to_vec(), "JSON"),
        (
            "invalid utf-8",
            b"{\"session_id\": \"\xff\xfe\"}".to_vec(),
            "UTF-8",
        ),
        ("nested", nested.into_bytes(), "deep"),
        ("not an object", b"[1, 2]".to_vec(), "object"),
        (
            "missing fields",
            br#"{"hook_event_name": "PreToolUse"}"#.to_vec(),
            "session_id",
        ),
        (
            "wrong type",
            br#"{"session_id": 7, "tool_name": "Bash", "tool_input": {}}"#.to_vec(),
            "session_id",
        ),
    ];
    for (name, stdin, needle) in cases {
        let start = Instant::now();
        let run = env.run_stdin(&["run", "claude-code", "PreToolUse"], &stdin);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{name} took {:?}",
            start.elapsed()
        );
        run.code(0);
        let reason = deny_reason(&run);
        assert!(
            reason.to_lowercase().contains(&needle.to_lowercase()),
            "{name}: {reason}"
        );

        let run = env.run_stdin(&["run", "claude-code", "PostToolUse"], &stdin);
        run.code(0);
        assert_eq!(run.stdout, "", "{name}: a non-gate event says nothing");
    }
}

#[test]
fn a_50_mb_payload_is_refused_quickly_with_bounded_memory() {
    let env = Env::new();
    let mut big =
        br#"{"session_id": "s", "tool_name": "Bash", "tool_input": {"command": ""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 50 << 20));
    big.extend(br#""}}"#);
    let run = env.run_stdin(&["run", "claude-code", "PreToolUse"], &big);
    run.code(0);
    assert!(
        deny_reason(&run).contains("larger than 16777216 bytes"),
        "{}",
        run.stdout
    );
}

#[test]
fn stdin_that_never_closes_is_not_waited_for() {
    let env = Env::new();
    let payload = claude_bash(&env, "t-open", "ls");
    let mut child = env
        .cmd(&["run", "claude-code", "PreToolUse"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.to_string().as_bytes()).unwrap();
    stdin.flush().unwrap();
    // stdin stays open, as Claude Code sometimes leaves it.
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert!(start.elapsed() < Duration::from_secs(5), "waited for EOF");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "ls is allowed: silence"
    );
}

#[test]
fn usage_errors_under_run_are_never_an_accidental_exit_2() {
    let env = Env::new();
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse", "--no-such-flag"],
        "{}",
    );
    run.code(0);
    assert!(deny_reason(&run).contains("bad arguments"));
    let run = env.run_stdin(&["run", "claude-code", "PostToolBatch"], "{}");
    run.code(0);
    assert_eq!(run.stdout, "", "an event keryx does not map is ignored");
    // A host nobody can speak to: a deliberate block, with the reason.
    env.run_stdin(&["run", "no-such-host", "PreToolUse"], "{}")
        .code(2)
        .stderr_has("unknown host");
    env.run_stdin(&["run", "claude-code", "PreTooluse"], "{}")
        .code(2)
        .stderr_has("no event");
}

#[test]
fn allow_is_silence_and_every_answer_is_one_json_object() {
    let env = Env::new();
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "t1", "ls -la").to_string(),
    );
    run.code(0);
    assert_eq!(run.stdout, "");
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "t2", "cat ~/.ssh/id_rsa").to_string(),
    );
    run.code(0);
    let _ = deny_reason(&run);
    assert_eq!(run.stdout.trim().lines().count(), 1);
}

#[test]
fn a_second_delivery_of_one_tool_call_runs_nothing_and_repeats_the_answer() {
    let env = Env::new();
    let count = env.project.join("count");
    env.write(env.user_hooks(), json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
        {"id": "counter", "class": "gate", "runsIn": "unsandboxed",
         "command": {"argv": ["/bin/sh", "-c", format!("echo x >> {}; echo counted >&2; exit 2", count.display())]}}
    ]}}).to_string());
    let payload = claude_bash(&env, "dup-1", "ls").to_string();
    let first = env.run_stdin(&["run", "claude-code", "PreToolUse"], &payload);
    let second = env.run_stdin(&["run", "claude-code", "PreToolUse"], &payload);
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(deny_reason(&second), "counted");
    assert_eq!(
        std::fs::read_to_string(&count).unwrap().lines().count(),
        1,
        "the hook ran once"
    );
}

#[test]
fn a_stop_gate_stops_blocking_after_8_in_a_row() {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [
            {"id": "always", "class": "gate", "runsIn": "unsandboxed",
             "command": {"argv": ["/bin/sh", "-c", "echo 'keep going' >&2; exit 2"]}}
        ]}})
        .to_string(),
    );
    let mut p = claude_payload(&env, "Stop-basic.json");
    let mut blocked = 0;
    for i in 0..9 {
        p["stop_hook_active"] = json!(i > 0);
        let run = env.run_stdin(&["run", "claude-code", "Stop"], p.to_string());
        run.code(0);
        if run.stdout.contains("\"block\"") {
            blocked += 1;
        } else {
            assert_eq!(i, 8, "stopped blocking early, at {i}");
        }
    }
    assert_eq!(blocked, 8);
}

/// 32 events of one session at once (hosts run tool calls in parallel):
/// every record is present once and the stream is valid JSONL.
#[test]
fn concurrent_events_of_one_session_keep_every_record() {
    let env = Env::new();
    env.write(env.user_hooks(), json!({"schemaVersion": "1.0.0", "hooks": {"PostToolUse": [
        {"id": "obs", "class": "observe", "runsIn": "unsandboxed", "command": {"argv": ["true"]}}
    ]}}).to_string());
    let base = claude_payload(&env, "PostToolUse-basic-Bash.json");
    let session = base["session_id"].as_str().unwrap().to_owned();
    let children: Vec<_> = (0..32)
        .map(|i| {
            let mut p = base.clone();
            p["tool_use_id"] = json!(format!("par-{i}"));
            let mut c = env
                .cmd(&["run", "claude-code", "PostToolUse"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            c.stdin
                .take()
                .unwrap()
                .write_all(p.to_string().as_bytes())
                .unwrap();
            c
        })
        .collect();
    for c in children {
        assert!(c.wait_with_output().unwrap().status.success());
    }
    let records = env.home.join(format!(
        ".local/state/keryx/sessions/claude-code-{session}/records.jsonl"
    ));
    let text = std::fs::read_to_string(records).unwrap();
    let mut ids: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("valid JSONL"))
        .filter(|l| l["record"]["hookId"] == "obs")
        .map(|l| l["correlationId"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 32);
}

#[test]
fn session_start_prunes_session_dirs_older_than_7_days() {
    let env = Env::new();
    let sessions = env.home.join(".local/state/keryx/sessions");
    let old = sessions.join("claude-code-old");
    let fresh = sessions.join("claude-code-fresh");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&fresh).unwrap();
    let status = Command::new("touch")
        .args(["-d", "8 days ago"])
        .arg(&old)
        .status()
        .unwrap();
    assert!(status.success());
    let p = claude_payload(&env, "SessionStart-basic-startup.json");
    env.run_stdin(&["run", "claude-code", "SessionStart"], p.to_string())
        .code(0);
    assert!(!old.exists(), "a stale session dir survived");
    assert!(fresh.exists());
}

#[test]
fn an_event_no_hook_applies_to_touches_no_state() {
    // Only the built-ins, none enabled for Glob (the learning observer
    // turned off): nothing to run, nothing to record, so nothing is
    // written.
    let env = Env::new();
    env.write(
        env.keryx_home().join("runtime.toml"),
        "[learning]\nenabled = false\n",
    );
    let mut p = claude_payload(&env, "PreToolUse-basic-Bash.json");
    p["tool_name"] = json!("Glob");
    p["tool_input"] = json!({"pattern": "src/**/*.rs"});
    env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string())
        .code(0);
    let state = env.home.join(".local/state/keryx");
    assert!(
        !state.join("sessions").exists(),
        "state written for an event nothing applies to"
    );
    assert!(!state.join("keryx-hooks.log").exists(), "an empty log file");
}

#[test]
fn in_process_built_ins_record_each_delivery_without_de_duplication_state() {
    // ctx-guard answers in-process: the same call delivered twice is simply
    // judged twice, alike, and each judgement leaves its record.
    let env = Env::new();
    let p = claude_bash(&env, "inproc-1", "cat .env");
    let first = env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string());
    let second = env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string());
    assert_eq!(first.stdout, second.stdout);
    assert!(deny_reason(&first).contains(".env"), "{}", first.stdout);
    let dir = env.session_dir("claude-code", p["session_id"].as_str().unwrap());
    let records = std::fs::read_to_string(dir.join("records.jsonl")).unwrap();
    let guard: Vec<Value> = records
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["record"]["hookId"] == "keryx.ctx-guard")
        .collect();
    assert_eq!(guard.len(), 2, "{records}");
    assert!(guard.iter().all(|r| r["record"]["outcome"] == "deny"));
    let state: Value = read_json(dir.join("state.json"));
    assert_eq!(state["seq"], 2, "one state update per event: {state}");
    let calls = env.home.join(format!(
        ".local/state/keryx/sessions/calls-{}",
        p["session_id"].as_str().unwrap()
    ));
    assert!(!calls.exists(), "de-duplication state for in-process work");
}

#[test]
fn an_enabled_learning_sink_is_invoked_and_an_idle_one_is_not() {
    let env = Env::new();
    env.write(
        env.keryx_home().join("runtime.toml"),
        "[learning]\nenabled = false\n",
    );
    let mut p = claude_payload(&env, "PreToolUse-basic-Bash.json");
    p["tool_name"] = json!("Glob");
    p["tool_input"] = json!({"pattern": "src/**/*.rs"});
    p["tool_use_id"] = json!("learn-1");
    env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string())
        .code(0);
    let records = env
        .session_dir("claude-code", p["session_id"].as_str().unwrap())
        .join("records.jsonl");
    assert!(!records.exists(), "an idle port left a record");

    // On by default.
    std::fs::remove_file(env.keryx_home().join("runtime.toml")).unwrap();
    p["tool_use_id"] = json!("learn-2");
    env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string())
        .code(0);
    let text = std::fs::read_to_string(&records).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("keryx.learning-observer") && l.contains(r#""kind":"hook""#)),
        "{text}"
    );
    let learning = env.home.join(".local/state/keryx/learning");
    assert!(learning.is_dir(), "the shipped sink wrote nothing");
}

#[test]
fn a_deny_reason_reaches_the_host_with_hidden_characters_made_visible() {
    let env = Env::new();
    env.write(env.user_hooks(), json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
        {"id": "bidi", "class": "gate", "runsIn": "unsandboxed",
         "command": {"argv": ["/bin/sh", "-c", "printf 'see \\342\\200\\256fdp.exe\\nnext line' >&2; exit 2"]}}
    ]}}).to_string());
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "bidi-1", "ls").to_string(),
    );
    assert_eq!(deny_reason(&run), "see \\u202Efdp.exe\nnext line");
}

// ---------------------------------------------------------------- host fidelity

/// Lines a hook appended to `path` (empty when it never ran).
fn lines_of(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// A hook script that appends its payload (one line) to `log`.
fn recorder(env: &Env, name: &str, log: &std::path::Path) -> std::path::PathBuf {
    env.script(
        env.home.join(format!("hooks/{name}.sh")),
        &format!(
            "#!/bin/sh\ntr -d '\\n' >> '{}'\necho >> '{}'\n",
            log.display(),
            log.display()
        ),
    )
}

/// One subagent spawn in Claude Code reaches keryx twice, at PreToolUse of
/// Agent (the bridge, where a deny stops it) and at Claude's own
/// SubagentStart: each SubagentStart hook runs once, the gate at the bridge
/// and the observer at SubagentStart, with keryx's own `inheritedHookIds`.
#[test]
fn one_subagent_spawn_runs_each_subagent_start_hook_once() {
    let env = Env::new();
    let gate_log = env.home.join("gate.log");
    let obs_log = env.home.join("obs.log");
    let gate = recorder(&env, "gate", &gate_log);
    let obs = recorder(&env, "obs", &obs_log);
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"SubagentStart": [
            {"id": "spawn-gate", "class": "gate", "runsIn": "unsandboxed",
             "command": {"argv": [gate]}},
            {"id": "spawn-log", "class": "observe", "runsIn": "unsandboxed",
             "command": {"argv": [obs]}}
        ]}})
        .to_string(),
    );
    let pre = claude_payload(&env, "PreToolUse-subagent-Agent.json");
    env.run_stdin(&["run", "claude-code", "PreToolUse"], pre.to_string())
        .code(0);
    let mut start = claude_payload(&env, "SubagentStart-subagent.json");
    start["inheritedHookIds"] = json!(["forged"]);
    env.run_stdin(&["run", "claude-code", "SubagentStart"], start.to_string())
        .code(0);
    assert_eq!(lines_of(&gate_log).len(), 1, "{:?}", lines_of(&gate_log));
    let seen = lines_of(&obs_log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let payload: Value = serde_json::from_str(&seen[0]).unwrap();
    let ids = payload["inheritedHookIds"].as_array().unwrap();
    assert!(ids.contains(&json!("spawn-gate")), "{payload:#}");
    assert!(!ids.contains(&json!("forged")), "{payload:#}");
}

/// A caller of the native protocol cannot tell a SubagentStart hook which
/// hooks the child inherits: keryx computes it.
#[test]
fn inherited_hook_ids_are_computed_never_taken_from_the_caller() {
    let env = Env::new();
    let log = env.home.join("obs.log");
    let obs = recorder(&env, "obs", &log);
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"SubagentStart": [
            {"id": "spawn-log", "class": "observe", "runsIn": "unsandboxed",
             "command": {"argv": [obs]}}
        ]}})
        .to_string(),
    );
    let payload = json!({"event": "SubagentStart", "sessionId": "s1", "cwd": env.project,
        "subagentId": "a1", "inheritedHookIds": ["forged"]});
    env.run_stdin(&["run", "keryx", "SubagentStart"], payload.to_string())
        .code(0);
    let seen = lines_of(&log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let p: Value = serde_json::from_str(&seen[0]).unwrap();
    assert!(
        !p["inheritedHookIds"]
            .as_array()
            .unwrap()
            .contains(&json!("forged")),
        "{p:#}"
    );
    assert!(
        p["inheritedHookIds"]
            .as_array()
            .unwrap()
            .contains(&json!("spawn-log")),
        "{p:#}"
    );
}

/// A hook written for Claude Code gets Claude's own fields as Claude sent
/// them, `cwd` is the session's cwd, the project root is `projectRoot`, and
/// `CLAUDE_PROJECT_DIR` is what Claude set (a linked worktree's main
/// checkout), else the project root.
#[test]
fn claude_hooks_get_claudes_own_fields_and_the_sessions_cwd() {
    let env = Env::new();
    let sub = env.project.join("crates/core");
    std::fs::create_dir_all(&sub).unwrap();
    let log = env.home.join("pre.log");
    let dir_log = env.home.join("dir.log");
    let hook = env.script(
        env.home.join("hooks/pre.sh"),
        &format!(
            "#!/bin/sh\ntr -d '\\n' >> '{log}'\necho >> '{log}'\necho \"$CLAUDE_PROJECT_DIR\" >> '{dirs}'\n",
            log = log.display(),
            dirs = dir_log.display()
        ),
    );
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            {"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"},
            {"id": "pre-log", "class": "observe", "matcher": "*", "runsIn": "unsandboxed",
             "command": {"argv": [hook]}}
        ]}})
        .to_string(),
    );
    let mut p = fixture("claude-code", "PreToolUse-subagent-Bash-insubagent.json");
    p["cwd"] = json!(sub);
    env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string())
        .code(0);
    let main = env.home.join("main-checkout");
    std::fs::create_dir_all(&main).unwrap();
    let env = env.env("CLAUDE_PROJECT_DIR", main.to_str().unwrap());
    p["tool_use_id"] = json!("toolu_other");
    env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string())
        .code(0);

    let seen = lines_of(&log);
    assert_eq!(seen.len(), 2, "{seen:?}");
    let got: Value = serde_json::from_str(&seen[0]).unwrap();
    for key in [
        "agent_id",
        "agent_type",
        "transcript_path",
        "permission_mode",
        "prompt_id",
    ] {
        assert_eq!(got[key], p[key], "{key}: {got:#}");
    }
    assert_eq!(got["cwd"], json!(sub), "{got:#}");
    assert_eq!(got["projectRoot"], json!(env.project), "{got:#}");
    assert_eq!(
        lines_of(&dir_log),
        [
            env.project.to_str().unwrap().to_owned(),
            main.to_str().unwrap().to_owned()
        ]
    );
}

/// Kimi Code sends the prompt as a list of content parts: a prompt gate sees
/// its text and blocks it (exit 2, the reason on stderr).
#[test]
fn a_kimi_prompt_gate_sees_the_prompt_parts() {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"UserPromptSubmit": [
            {"id": "no-secrets", "class": "gate", "runsIn": "unsandboxed",
             "command": {"argv": ["/bin/sh", "-c",
                "case \"$(cat)\" in *'\"prompt\":\"run echo please'*) echo 'no echo prompts' >&2; exit 2;; esac"]}}
        ]}})
        .to_string(),
    );
    let mut p = fixture("kimi", "UserPromptSubmit-basic.json");
    p["cwd"] = json!(env.project);
    let run = env.run_stdin(&["run", "kimi", "UserPromptSubmit"], p.to_string());
    run.code(2);
    run.stderr_has("no echo prompts");
}

/// Inside a Copilot subagent every event carries the subagent's id as
/// `sessionId`: its agentStop is not the session's Stop (a Stop gate does
/// not block it), while the main agent's agentStop still is.
#[test]
fn a_copilot_subagents_stop_is_not_the_sessions_stop() {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [
            {"id": "always", "class": "gate", "runsIn": "unsandboxed",
             "command": {"argv": ["/bin/sh", "-c", "cat >/dev/null; echo 'keep going' >&2; exit 2"]}}
        ]}})
        .to_string(),
    );
    let mut sub = fixture("copilot", "agentStop-subagent.json");
    sub["cwd"] = json!(env.project);
    let run = env.run_stdin(&["run", "copilot", "agentStop"], sub.to_string());
    run.code(0);
    assert_eq!(run.stdout, "", "the subagent's stop was gated");
    let mut main = fixture("copilot", "agentStop-subagent-2.json");
    main["cwd"] = json!(env.project);
    let run = env.run_stdin(&["run", "copilot", "agentStop"], main.to_string());
    run.code(0);
    run.stdout_has("\"block\"");
}

/// Qwen Code re-fires UserPromptSubmit with an empty prompt after every
/// tool round: a prompt gate runs for the prompt once, and the re-fires
/// run nothing and say nothing.
#[test]
fn qwens_empty_prompt_re_fires_are_not_new_prompts() {
    let env = Env::new();
    let log = env.home.join("ups.log");
    let gate = recorder(&env, "ups", &log);
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"UserPromptSubmit": [
            {"id": "prompt-gate", "class": "gate", "runsIn": "unsandboxed",
             "command": {"argv": [gate]}}
        ]}})
        .to_string(),
    );
    for name in [
        "UserPromptSubmit-basic.json",
        "UserPromptSubmit-basic-2.json",
        "UserPromptSubmit-basic-3.json",
    ] {
        let mut p = fixture("qwen-code", name);
        p["cwd"] = json!(env.project);
        let run = env.run_stdin(&["run", "qwen-code", "UserPromptSubmit"], p.to_string());
        run.code(0);
        assert_eq!(run.stdout, "", "{name}");
    }
    let seen = lines_of(&log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("\"prompt\":\"run echo please\""),
        "{seen:?}"
    );
}

/// A host that starts the shim with stdin, stdout or stderr closed: the
/// closed descriptor is /dev/null before anything is opened, so no file
/// the shim opens (a lock, the records) can take the place of stdout,
/// where the answer is written. Seen from /proc while the shim waits for
/// a payload that never ends.
#[test]
fn closed_standard_descriptors_are_dev_null_before_anything_is_opened() {
    let env = Env::new();
    let base = env.cmd(&["run", "claude-code", "PreToolUse"]);
    for fd in [1, 2] {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!("exec \"$0\" run claude-code PreToolUse {fd}>&-"))
            .arg(base.get_program())
            .current_dir(&env.project)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in base.get_envs() {
            if let Some(v) = v {
                sh.env(k, v);
            }
        }
        let mut child = sh.spawn().unwrap();
        // Half a payload, and stdin held open: the shim waits in its reader.
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(b"{\"session_id\":")
            .unwrap();
        let link = format!("/proc/{}/fd/{fd}", child.id());
        let deadline = Instant::now() + Duration::from_secs(5);
        let target = loop {
            // Once the shim runs (after `exec`), its fd table is final.
            let exe = std::fs::read_link(format!("/proc/{}/exe", child.id()));
            if exe.is_ok_and(|e| e.ends_with("keryx-hooks")) {
                std::thread::sleep(Duration::from_millis(100));
                break std::fs::read_link(&link).ok();
            }
            assert!(Instant::now() < deadline, "the shim did not start");
            std::thread::sleep(Duration::from_millis(5));
        };
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            target.as_deref(),
            Some(std::path::Path::new("/dev/null")),
            "fd {fd}"
        );
    }
}
