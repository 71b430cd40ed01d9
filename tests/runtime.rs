//! The runtime through the keryx native protocol: real hook processes, the
//! failure table per class and profile, composition, records, the kill
//! switch and the fail-closed runtime.

use serde_json::{Value, json};

use crate::common::{Env, read_json, user_hooks};

/// A user hooks file with `hooks` under their events; the built-in gates
/// that would otherwise answer first are left in place unless a test turns
/// them off.
/// One command registration.
fn hook(id: &str, class: &str, script: &str) -> Value {
    json!({"id": id, "class": class, "runsIn": "unsandboxed", "timeoutMs": 3000,
           "command": {"argv": ["/bin/sh", "-c", script]}})
}

/// The same hook, run in the sandbox (the default), which every profile allows.
fn sandboxed(mut h: Value) -> Value {
    h.as_object_mut().unwrap().remove("runsIn");
    h
}

fn fire(env: &Env, event: &str, extra: Value) -> Value {
    let mut payload = json!({"event": event, "sessionId": "s-1", "cwd": env.project});
    if event.contains("Tool") {
        payload["toolName"] = json!("Bash");
        payload["toolCallId"] = json!(format!("call-{}", rand_id()));
        payload["toolInput"] = json!({"command": "ls"});
    }
    for (k, v) in extra.as_object().unwrap() {
        payload[k] = v.clone();
    }
    let run = env.run_stdin(&["run", "keryx", event], payload.to_string());
    run.code(0);
    run.json()
}

fn rand_id() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn anomaly_kinds(v: &Value) -> Vec<String> {
    v["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap().to_owned())
        .collect()
}

const PROFILES: [&str; 3] = [
    "read-only-review",
    "monitored-trusted-local",
    "unattended-untrusted",
];

#[test]
fn exit_2_denies_with_stderr_as_the_reason() {
    let env = Env::new();
    user_hooks(
        &env,
        json!({"UserPromptSubmit": [hook("no", "gate", "echo '  nope, not this  ' >&2; exit 2")]}),
    );
    let v = fire(&env, "UserPromptSubmit", json!({"prompt": "hello"}));
    assert_eq!(v["outcome"], "deny");
    assert_eq!(v["reason"], "nope, not this");
    assert_eq!(
        v["records"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["hookId"] == "no")
            .unwrap()["exitCode"],
        2
    );
}

#[test]
fn gate_failures_fail_closed_in_every_profile() {
    for profile in PROFILES {
        for (script, code) in [
            ("sleep 30", "hook-timeout"),
            ("exit 1", "hook-crashed"),
            ("kill -9 $$", "hook-crashed"),
        ] {
            let env = Env::new();
            let mut h = sandboxed(hook("gg", "gate", script));
            h["timeoutMs"] = json!(300);
            user_hooks(&env, json!({"Stop": [h]}));
            let v = fire(&env, "Stop", json!({"policyProfile": profile}));
            assert_eq!(v["outcome"], "deny", "{profile} {script}: {v}");
            assert!(
                v["reason"].as_str().unwrap().starts_with(code),
                "{profile} {script}: {v}"
            );
        }
    }
}

#[test]
fn a_missing_argv0_fails_a_gate_closed_with_a_hint() {
    let env = Env::new();
    let mut h = hook("gg", "gate", "");
    h["command"] = json!({"argv": ["/nonexistent/hook.sh"]});
    user_hooks(&env, json!({"Stop": [h]}));
    let v = fire(&env, "Stop", json!({}));
    assert_eq!(v["outcome"], "deny");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/hook.sh"),
        "{v}"
    );
}

#[test]
fn malformed_gate_output_approves_an_allow_but_denies_an_ask() {
    let env = Env::new();
    user_hooks(
        &env,
        json!({
            "PreToolUse": [{"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"},
                           hook("mm", "gate", "echo 'rc noise'; echo '{\"decision\":\"deny\"}'")]
        }),
    );
    let v = fire(&env, "PreToolUse", json!({"decideOutcome": "allow"}));
    assert_eq!(v["outcome"], "allow", "{v}");
    assert!(anomaly_kinds(&v).contains(&"hook-malformed-output".into()));
    let v = fire(&env, "PreToolUse", json!({"decideOutcome": "ask"}));
    assert_eq!(v["outcome"], "deny", "{v}");
}

#[test]
fn gate_advisory_fails_open_except_unattended() {
    for profile in PROFILES {
        let env = Env::new();
        user_hooks(
            &env,
            json!({"UserPromptSubmit": [sandboxed(hook("adv", "gate-advisory", "exit 1"))]}),
        );
        let v = fire(
            &env,
            "UserPromptSubmit",
            json!({"prompt": "p", "policyProfile": profile}),
        );
        let want = if profile == "unattended-untrusted" {
            "deny"
        } else {
            "allow"
        };
        assert_eq!(v["outcome"], want, "{profile}: {v}");
        if want == "allow" {
            assert!(anomaly_kinds(&v).contains(&"hook-advisory-failed".into()));
        }
    }
}

#[test]
fn observers_and_context_hooks_fail_open_and_cannot_decide() {
    for profile in PROFILES {
        let env = Env::new();
        user_hooks(
            &env,
            json!({"Stop": [
                sandboxed(hook("obs-crash", "observe", "exit 1")),
                sandboxed(hook("obs-deny", "observe", "echo no >&2; exit 2")),
                sandboxed(hook("ctx-bad", "context", "echo garbage"))
            ]}),
        );
        let v = fire(&env, "Stop", json!({"policyProfile": profile}));
        assert_eq!(v["outcome"], "allow", "{profile}: {v}");
        let kinds = anomaly_kinds(&v);
        for k in [
            "hook-observer-failed",
            "hook-decision-ignored",
            "hook-context-failed",
        ] {
            assert!(
                kinds.contains(&k.to_owned()),
                "{profile}: {k} missing in {kinds:?}"
            );
        }
    }
}

#[test]
fn nothing_fails_closed_on_session_start() {
    let env = Env::new();
    user_hooks(
        &env,
        json!({"SessionStart": [hook("gg", "gate", "exit 1"), hook("cc", "context", "echo '{\"additionalContext\":\"CTX-1\"}'")]}),
    );
    let v = fire(&env, "SessionStart", json!({}));
    assert_eq!(v["outcome"], "none");
    assert_eq!(v["additionalContext"], "CTX-1");
}

#[test]
fn a_policy_deny_is_untouchable_and_hooks_are_not_consulted() {
    let env = Env::new();
    let marker = env.project.join("gate-ran");
    user_hooks(
        &env,
        json!({"PreToolUse": [
            {"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"},
            hook("gg", "gate", &format!("touch {}", marker.display()))
        ]}),
    );
    let v = fire(&env, "PreToolUse", json!({"decideOutcome": "deny"}));
    assert_eq!(v["outcome"], "deny");
    assert!(!marker.exists(), "a gate ran after decide() denied");
}

#[test]
fn a_hook_ask_tightens_allow_and_headless_turns_it_into_deny() {
    let env = Env::new();
    user_hooks(
        &env,
        json!({"PreToolUse": [
            {"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"},
            hook("asker", "gate", "echo '{\"decision\":\"ask\",\"reason\":\"check this\"}'")
        ]}),
    );
    let v = fire(
        &env,
        "PreToolUse",
        json!({"decideOutcome": "allow", "interactive": true}),
    );
    assert_eq!(v["outcome"], "ask");
    assert_eq!(v["reason"], "check this");
    let v = fire(
        &env,
        "PreToolUse",
        json!({"decideOutcome": "allow", "interactive": false}),
    );
    assert_eq!(v["outcome"], "deny");
    let rules: Vec<&str> = v["matchedRules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"headless-fail-closed") && rules.contains(&"hook:asker"),
        "{rules:?}"
    );
    let v = fire(&env, "PreToolUse", json!({"decideOutcome": "ask"}));
    assert_eq!(v["outcome"], "ask", "an ask on an ask is a no-op");
}

#[test]
fn a_hook_allow_never_loosens() {
    let env = Env::new();
    user_hooks(
        &env,
        json!({"PreToolUse": [
            {"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"},
            hook("yes", "gate", "echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"approve\"}}'")
        ]}),
    );
    assert_eq!(
        fire(&env, "PreToolUse", json!({"decideOutcome": "ask"}))["outcome"],
        "ask"
    );
}

#[test]
fn subagent_start_treats_ask_as_deny_and_records_inherited_ids() {
    let env = Env::new();
    let mut parent_only = hook("parent-only", "observe", "true");
    parent_only["appliesToChildAgents"] = json!(false);
    user_hooks(
        &env,
        json!({"SubagentStart": [hook("asker", "gate", "echo '{\"decision\":\"ask\"}'"), parent_only]}),
    );
    let v = fire(
        &env,
        "SubagentStart",
        json!({"subagentId": "a1", "spawnKind": "internal"}),
    );
    assert_eq!(v["outcome"], "deny");
    let ids: Vec<&str> = v["inheritedHookIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"asker") && !ids.contains(&"parent-only"),
        "{ids:?}"
    );
    assert_eq!(
        ids.iter()
            .filter(|i| **i == "keryx.learning-observer")
            .count(),
        1,
        "one entry per id"
    );
}

#[test]
fn gates_run_in_order_and_the_first_deny_stops_the_rest() {
    let env = Env::new();
    let marker = env.project.join("second-ran");
    user_hooks(
        &env,
        json!({"Stop": [
            hook("first", "gate", "echo '{\"decision\":\"deny\",\"reason\":\"first\",\"additionalContext\":\"kept\"}'"),
            hook("second", "gate", &format!("touch {}", marker.display()))
        ]}),
    );
    let v = fire(&env, "Stop", json!({}));
    assert_eq!(v["outcome"], "deny");
    assert_eq!(v["reason"], "first");
    assert_eq!(
        v["additionalContext"], "kept",
        "context already produced is kept"
    );
    assert!(!marker.exists());
}

/// Five observers that each wait for all five to have started: only a
/// parallel runner lets them finish; a sequential one would time them out.
#[test]
fn observers_run_in_parallel() {
    let env = Env::new();
    let dir = env.project.join("starts");
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(
        "touch {d}/$KERYX_HOOK_ID; i=0; while [ $(ls {d} | wc -l) -lt 5 ]; do i=$((i+1)); [ $i -gt 200 ] && exit 1; sleep 0.02; done",
        d = dir.display()
    );
    let hooks: Vec<Value> = (1..=5)
        .map(|i| hook(&format!("o{i}"), "observe", &script))
        .collect();
    user_hooks(&env, json!({"SessionEnd": hooks}));
    let v = fire(&env, "SessionEnd", json!({"endReason": "other"}));
    assert!(
        !anomaly_kinds(&v).contains(&"hook-observer-failed".into()),
        "{v}"
    );
}

#[test]
fn the_environment_is_exactly_the_allowlist() {
    let env = Env::new()
        .env("SUPER_SECRET_TOKEN", "hunter2")
        .env("LANG", "C.UTF-8");
    let out = env.project.join("env.txt");
    let mut h = hook("ee", "observe", &format!("env > {}", out.display()));
    h["command"]["env"] = json!({"MY_SETTING": "on"});
    user_hooks(&env, json!({"Stop": [h]}));
    fire(&env, "Stop", json!({}));
    let text = std::fs::read_to_string(&out).unwrap();
    let names: Vec<&str> = text.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(!text.contains("hunter2"), "{text}");
    for want in [
        "PATH",
        "HOME",
        "LANG",
        "KERYX_HOOK_EVENT",
        "KERYX_HOOK_ID",
        "KERYX_SESSION_ID",
        "KERYX_RUN_ID",
        "KERYX_PROJECT_ROOT",
        "KERYX_POLICY_PROFILE",
        "CLAUDE_PROJECT_DIR",
        "MY_SETTING",
    ] {
        assert!(names.contains(&want), "{want} missing:\n{text}");
    }
    let allowed = [
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "LC_ALL",
        "TERM",
        "KERYX_HOOK_EVENT",
        "KERYX_HOOK_ID",
        "KERYX_SESSION_ID",
        "KERYX_RUN_ID",
        "KERYX_PROJECT_ROOT",
        "KERYX_POLICY_PROFILE",
        "CLAUDE_PROJECT_DIR",
        "MY_SETTING",
        "PWD",
        "SHLVL",
        "_",
        "OLDPWD",
    ];
    for n in names {
        assert!(
            allowed.contains(&n),
            "unexpected variable {n} reached the hook"
        );
    }
}

#[test]
fn the_payload_is_the_codec_shape_and_no_field_comes_back() {
    let env = Env::new();
    let out = env.project.join("payload.json");
    user_hooks(
        &env,
        json!({"PostToolUse": [hook("pp", "observe", &format!("cat > {}", out.display()))]}),
    );
    fire(&env, "PostToolUse", json!({"toolOutput": {"stdout": "x"}}));
    let p: Value = read_json(&out);
    for k in [
        "schemaVersion",
        "timestamp",
        "hookId",
        "event",
        "sessionId",
        "runId",
        "hook_event_name",
        "session_id",
        "cwd",
        "toolCallId",
        "toolName",
        "toolInput",
        "toolOutput",
        "tool_name",
        "tool_input",
        "tool_response",
    ] {
        assert!(p.get(k).is_some(), "{k} missing from {p}");
    }
    assert_eq!(p["hookId"], "pp");
}

#[test]
fn an_attempted_input_rewrite_is_dropped_and_recorded() {
    let env = Env::new();
    user_hooks(
        &env,
        json!({"PreToolUse": [
            {"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"},
            hook("rw", "gate", "echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\",\"updatedInput\":{\"command\":\"rm -rf /\"}}}'")
        ]}),
    );
    let v = fire(&env, "PreToolUse", json!({}));
    assert_eq!(v["outcome"], "allow");
    assert_eq!(
        anomaly_kinds(&v)
            .iter()
            .filter(|k| *k == "hook-attempted-input-rewrite")
            .count(),
        1
    );
    assert!(
        !v.to_string().contains("rm -rf"),
        "the rewrite never travels on"
    );
}

#[test]
fn unsandboxed_hooks_are_refused_under_unattended_untrusted() {
    let env = Env::new();
    user_hooks(&env, json!({"Stop": [hook("uu", "gate", "true")]}));
    let v = fire(
        &env,
        "Stop",
        json!({"policyProfile": "unattended-untrusted"}),
    );
    assert_eq!(v["outcome"], "deny");
    let rec = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["hookId"] == "uu")
        .unwrap()
        .clone();
    assert_eq!(rec["failure"], "refused");
}

#[test]
fn a_sandboxed_hook_cannot_write_outside_the_project() {
    let env = Env::new();
    // Not under /tmp: the sandbox's /tmp is a private tmpfs, where a write
    // would succeed without reaching the host and prove nothing.
    let outside_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outside = outside_dir.path().join("outside.txt");
    let inside = env.project.join("inside.txt");
    let mut h = hook(
        "ss",
        "gate",
        &format!(
            "touch {}; touch {} || echo '{{\"decision\":\"deny\",\"reason\":\"confined\"}}'",
            inside.display(),
            outside.display()
        ),
    );
    h.as_object_mut().unwrap().remove("runsIn");
    user_hooks(&env, json!({"Stop": [h]}));
    let v = fire(&env, "Stop", json!({}));
    assert!(
        inside.exists(),
        "the project is writable in the sandbox: {v}"
    );
    assert!(!outside.exists(), "wrote outside the project");
    assert_eq!(v["reason"], "confined");
}

#[test]
fn records_land_in_the_session_stream_with_correlation_ids() {
    let env = Env::new();
    user_hooks(&env, json!({"Stop": [hook("oo", "observe", "true")]}));
    fire(&env, "Stop", json!({}));
    fire(&env, "Stop", json!({}));
    let dir = env.home.join(".local/state/keryx/sessions/keryx-s-1");
    let text = std::fs::read_to_string(dir.join("records.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ours: Vec<&Value> = lines
        .iter()
        .filter(|l| l["record"]["hookId"] == "oo")
        .collect();
    assert_eq!(ours.len(), 2);
    assert!(ours.iter().all(|l| l["type"] == "hook_invocation"));
    assert_ne!(ours[0]["correlationId"], ours[1]["correlationId"]);
    for k in [
        "hookId",
        "event",
        "class",
        "scope",
        "outcome",
        "durationMs",
        "changedOutcome",
    ] {
        assert!(ours[0]["record"].get(k).is_some(), "{k}");
    }
}

#[test]
fn keryx_hooks_off_reads_nothing_and_runs_nothing() {
    let env = Env::new().env("KERYX_HOOKS", "off");
    let marker = env.project.join("ran");
    env.write(env.user_hooks(), "this is not json");
    let run = env.run_stdin(&["run", "claude-code", "Stop"], "{}");
    run.code(0);
    assert_eq!(run.stdout, "");
    assert!(!marker.exists());
}

#[test]
fn an_invalid_config_denies_every_gate_capable_event_and_nothing_else() {
    let env = Env::new();
    env.write(env.user_hooks(), "{ not json");
    for event in ["PreToolUse", "UserPromptSubmit", "Stop", "SubagentStart"] {
        let v = fire(&env, event, json!({"prompt": "p"}));
        assert_eq!(v["outcome"], "deny", "{event}");
        assert!(
            v["reason"]
                .as_str()
                .unwrap()
                .starts_with("hook-config-invalid"),
            "{v}"
        );
    }
    for event in ["PostToolUse", "SessionEnd", "PreCompact"] {
        let v = fire(&env, event, json!({}));
        assert_eq!(v["outcome"], "none", "{event}");
    }
    let v = fire(&env, "SessionStart", json!({}));
    assert!(
        v["notices"].to_string().contains("hook config is invalid"),
        "{v}"
    );
}

#[test]
fn the_test_command_runs_one_hook_and_explains_failures() {
    let env = Env::new();
    user_hooks(
        &env,
        json!({"Stop": [hook("slow", "gate", "sleep 5")], "PostToolUse": [hook("hi", "observe", "echo hello; exit 0")]}),
    );
    let mut h: Value = read_json(env.user_hooks());
    h["hooks"]["Stop"][0]["timeoutMs"] = json!(200);
    env.write(env.user_hooks(), h.to_string());
    let v = env.run(&["test", "slow", "--json"]).json();
    assert_eq!(v["failure"], "timeout");
    assert!(
        v["failureEffect"]
            .as_str()
            .unwrap()
            .contains("fails closed"),
        "{v}"
    );
    let run = env.run(&["test", "hi"]);
    run.code(1).stdout_has("failure: malformed");
    env.run(&["test", "nope"])
        .code(1)
        .stderr_has("no hook `nope`");
}

/// A project's command hooks run only once trusted, and stop when what
/// runs changes; the session-start notice names them meanwhile.
#[test]
fn project_hooks_run_only_while_trusted() {
    let env = Env::new();
    let marker = env.project.join("project-hook-ran");
    let config = |script: &str| {
        json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [
            {"id": "proj-obs", "class": "observe", "runsIn": "unsandboxed",
             "command": {"argv": ["/bin/sh", "-c", script]}}
        ]}})
        .to_string()
    };
    let touch = format!("touch {}", marker.display());
    env.write(env.project_hooks(), config(&touch));

    fire(&env, "Stop", json!({}));
    assert!(!marker.exists(), "an untrusted project hook ran");
    let v = fire(&env, "SessionStart", json!({}));
    let notices = v["notices"].to_string();
    assert!(
        notices.contains("proj-obs") && notices.contains("keryx-hooks trust"),
        "{notices}"
    );

    env.run(&["trust", "--yes"]).code(0);
    fire(&env, "Stop", json!({}));
    assert!(marker.exists(), "a trusted project hook did not run");

    std::fs::remove_file(&marker).unwrap();
    env.write(
        env.project_hooks(),
        config(&format!("{touch}; echo changed")),
    );
    fire(&env, "Stop", json!({}));
    assert!(!marker.exists(), "a project hook changed since trusted ran");
    env.run(&["test", "proj-obs"])
        .code(1)
        .stderr_has("not trusted");
}

// ---------------------------------------------------------------- reason caps

/// The most a reason a host is shown may be, its truncation marker included.
const REASON_CAP: usize = 4000;

/// A PreToolUse answered by one user gate running `script` (the built-in
/// gate that would answer first turned off).
fn gate_answer(script: &str) -> Value {
    let env = Env::new();
    user_hooks(
        &env,
        json!({"PreToolUse": [
            {"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"},
            hook("long", "gate", script)
        ]}),
    );
    fire(&env, "PreToolUse", json!({}))
}

fn assert_capped(text: &str) {
    assert!(text.len() <= REASON_CAP, "{} bytes", text.len());
    assert!(
        text.ends_with("…[truncated]"),
        "{}",
        &text[text.len() - 40..]
    );
}

#[test]
fn a_denial_reason_that_grows_when_escaped_is_still_capped() {
    // 3000 right-to-left overrides: 9000 bytes, each shown as a 6-byte escape.
    let v = gate_answer(
        "cat >/dev/null; i=0; while [ $i -lt 3000 ]; do printf '\\342\\200\\256'; i=$((i+1)); done >&2; exit 2",
    );
    assert_eq!(v["outcome"], "deny", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.starts_with("\\u202E"), "{}", &reason[..20]);
    assert_capped(reason);
}

#[test]
fn a_failing_gates_reason_is_capped() {
    // A crash: the last stderr line becomes part of the fail-closed reason.
    let v = gate_answer("cat >/dev/null; head -c 9000 /dev/zero | tr '\\0' x >&2; exit 1");
    assert_eq!(v["outcome"], "deny", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.contains("hook `long`"), "{}", &reason[..60]);
    assert_capped(reason);
}

#[test]
fn a_system_message_notice_is_capped() {
    let v = gate_answer(
        "cat >/dev/null; printf '{\"systemMessage\": \"'; head -c 9000 /dev/zero | tr '\\0' y; printf '\"}'",
    );
    let notice = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|n| n.as_str().filter(|n| n.starts_with("long: ")))
        .unwrap_or_else(|| panic!("{v}"));
    assert_capped(notice);
}

#[test]
fn an_invalid_config_is_a_few_lines_and_the_way_to_the_rest() {
    let env = Env::new();
    let bad: Vec<Value> = (0..6)
        .map(|i| {
            json!({"id": format!("bad id {i} {}", "z".repeat(2000)), "class": "gate",
                        "command": {"argv": ["true"]}})
        })
        .collect();
    user_hooks(&env, json!({"PreToolUse": bad}));
    let v = fire(&env, "PreToolUse", json!({}));
    assert_eq!(v["outcome"], "deny", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.len() <= REASON_CAP, "{} bytes", reason.len());
    assert!(reason.starts_with("hook-config-invalid: "), "{reason}");
    assert!(reason.ends_with("(run `keryx-hooks validate`)"), "{reason}");
    assert!(reason.lines().count() <= 5, "{reason}");
    assert!(reason.contains("and 3 more"), "{reason}");
}
