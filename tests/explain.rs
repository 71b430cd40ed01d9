//! `keryx-hooks explain`: the selection `run` makes, told for one payload,
//! checked against what `run` itself records for the same payload.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::common::{Env, claude_bash, claude_payload, json_lines};

/// A user hooks file on PreToolUse: one hook that runs, and one kept out
/// by each of matcher, profile and a disable.
fn configure(env: &Env) {
    let allow = |id: &str| {
        json!({"id": id, "class": "gate", "runsIn": "unsandboxed", "timeoutMs": 3000,
               "command": {"argv": ["/bin/sh", "-c", "cat >/dev/null"]}})
    };
    let mut writes = allow("writes-only");
    writes["matcher"] = json!("Write");
    let mut review = allow("review-only");
    review["profiles"] = json!(["read-only-review"]);
    let mut off = allow("turned-off");
    off["enabled"] = json!(false);
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            allow("always"), writes, review, off,
            {"id": "keryx.learning-observer", "enabled": false}
        ]}})
        .to_string(),
    );
    // A project command hook nobody trusted.
    env.write(
        env.project_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            {"id": "project-gate", "class": "gate", "runsIn": "unsandboxed",
             "command": {"argv": ["/bin/sh", "-c", "cat >/dev/null"]}}
        ]}})
        .to_string(),
    );
}

fn explain(env: &Env, payload: &Value) -> Value {
    let run = env.run_stdin(
        &["explain", "claude-code", "PreToolUse", "--json"],
        payload.to_string(),
    );
    run.code(0);
    run.json()
}

/// `(hookId, notRun)` of explain's PreToolUse registrations that fit the
/// call: `notRun` is `null` for the ones that run.
fn considered(v: &Value) -> BTreeSet<(String, String)> {
    v["registrations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !matches!(r["notRun"].as_str(), Some("other-event" | "matcher")))
        .map(|r| {
            (
                r["hookId"].as_str().unwrap().to_owned(),
                r["notRun"].as_str().unwrap_or("runs").to_owned(),
            )
        })
        .collect()
}

/// What `run` recorded for tool call `call`: `(hookId, kind or
/// skippedBecause)`, a gate the denial kept from running counted as
/// selected ("runs"), which is what explain says of it.
fn recorded(env: &Env, call: &str) -> BTreeSet<(String, String)> {
    let log = env.run(&["log", "--json", "-n", "0"]);
    log.code(0);
    json_lines(&log.stdout)
        .into_iter()
        .filter(|v| v["correlationId"] == call)
        .map(|v| {
            let what = match (v["kind"].as_str().unwrap(), v["skippedBecause"].as_str()) {
                ("hook", _) | ("skipped", Some("already-denied")) => "runs".to_owned(),
                (_, why) => why.unwrap().to_owned(),
            };
            (v["record"]["hookId"].as_str().unwrap().to_owned(), what)
        })
        .collect()
}

#[test]
fn explain_and_run_agree_on_every_hook_considered() {
    let env = Env::new();
    configure(&env);
    let mut write = claude_payload(&env, "PreToolUse-basic-Bash.json");
    write["tool_use_id"] = json!("toolu_write");
    write["tool_name"] = json!("Write");
    write["tool_input"] = json!({"file_path": "notes.txt", "content": "hi\n"});
    for (call, payload) in [
        ("toolu_ls", claude_bash(&env, "toolu_ls", "ls -la")),
        ("toolu_env", claude_bash(&env, "toolu_env", "cat .env")),
        ("toolu_write", write),
    ] {
        let said = explain(&env, &payload);
        env.run_stdin(&["run", "claude-code", "PreToolUse"], payload.to_string())
            .code(0);
        assert_eq!(considered(&said), recorded(&env, call), "{call}: {said:#}");
    }
    let said = explain(&env, &claude_bash(&env, "toolu_ls", "ls -la"));
    let reason = |id: &str| {
        said["registrations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["hookId"] == id && r["event"] == "PreToolUse")
            .unwrap_or_else(|| panic!("no {id} in {said:#}"))
            .clone()
    };
    assert_eq!(reason("always")["runs"], true);
    assert_eq!(reason("writes-only")["notRun"], "matcher");
    assert_eq!(reason("review-only")["notRun"], "profile");
    assert_eq!(reason("turned-off")["notRun"], "disabled");
    assert!(
        reason("turned-off")["why"]
            .as_str()
            .unwrap()
            .contains(&env.user_hooks().display().to_string()),
        "{said:#}"
    );
    let observer = reason("keryx.learning-observer");
    assert_eq!(observer["notRun"], "disabled");
    assert!(
        observer["why"]
            .as_str()
            .unwrap()
            .contains(&env.user_hooks().display().to_string()),
        "{observer}"
    );
    assert_eq!(reason("project-gate")["notRun"], "untrusted");
    assert_eq!(said["answer"]["outcome"], Value::Null, "{said:#}");
    assert_eq!(said["answer"]["dependsOn"], json!(["always"]));
}

#[test]
fn every_hook_considered_leaves_a_record_with_its_reason() {
    let env = Env::new();
    configure(&env);
    env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "toolu_env", "cat .env").to_string(),
    )
    .code(0);
    let log = env.run(&["log", "--json", "-n", "0"]);
    let lines: Vec<Value> = log
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |id: &str| {
        lines
            .iter()
            .find(|v| v["record"]["hookId"] == id)
            .unwrap_or_else(|| panic!("no record of {id}: {lines:#?}"))
    };
    assert_eq!(of("keryx.ctx-guard")["kind"], "hook");
    let not_reached = of("always");
    assert_eq!(not_reached["kind"], "skipped");
    assert_eq!(not_reached["skippedBecause"], "already-denied");
    assert!(
        not_reached["record"]["reason"]
            .as_str()
            .unwrap()
            .contains("keryx.ctx-guard"),
        "{not_reached}"
    );
    for (id, because) in [
        ("review-only", "profile"),
        ("turned-off", "disabled"),
        ("keryx.learning-observer", "disabled"),
        ("project-gate", "untrusted"),
    ] {
        let v = of(id);
        assert_eq!(v["kind"], "skipped", "{v}");
        assert_eq!(v["skippedBecause"], because, "{v}");
        assert!(
            v["record"]["reason"]
                .as_str()
                .unwrap()
                .starts_with("not run: ")
        );
    }
    // A matcher that does not fit is not a hook considered.
    assert!(lines.iter().all(|v| v["record"]["hookId"] != "writes-only"));
    // All of it in one append: one line per hook, each with the same time.
    assert!(lines.iter().all(|v| v["time"] == lines[0]["time"]));
    assert_eq!(crate::log::validate_all(&env), lines.len());
}

#[test]
fn test_says_what_explain_says_for_a_hook_that_does_not_fire() {
    let env = Env::new();
    configure(&env);
    for (id, because) in [("review-only", "profile"), ("turned-off", "disabled")] {
        let v = env.run(&["test", id, "--json"]).json();
        assert_eq!(v["fires"], false, "{v}");
        assert_eq!(v["because"], because, "{v}");
    }
}

#[test]
fn a_built_in_gate_is_evaluated_in_process_and_nothing_is_recorded() {
    let env = Env::new();
    let said = explain(&env, &claude_bash(&env, "toolu_env", "cat .env"));
    assert_eq!(said["answer"]["outcome"], "deny", "{said:#}");
    assert_eq!(said["answer"]["decidedBy"], "keryx.ctx-guard");
    assert!(said["answer"]["reason"].as_str().unwrap().contains(".env"));
    assert_eq!(said["tool"], "Bash");
    assert_eq!(said["summary"], "cat .env");
    // explain writes no record and keeps no session state.
    assert!(!env.home.join(".local/state/keryx/sessions").exists());
}

#[test]
fn an_invalid_config_is_explained_as_the_denial_run_gives() {
    let env = Env::new();
    env.write(env.user_hooks(), "{ not json");
    let said = explain(&env, &claude_bash(&env, "toolu_x", "ls"));
    assert_eq!(said["answer"]["outcome"], "deny");
    assert_eq!(said["answer"]["kind"], "config-invalid");
    assert!(
        said["answer"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("hook-config-invalid"),
        "{said:#}"
    );
}

#[test]
fn the_human_explanation_reads_like_this() {
    let env = Env::new();
    configure(&env);
    let payload = env.write(
        env.tmp.path().join("payload.json"),
        claude_bash(&env, "toolu_ls", "ls -la").to_string(),
    );
    let run = env.run(&[
        "explain",
        "claude-code",
        "PreToolUse",
        "--payload-file",
        payload.to_str().unwrap(),
    ]);
    run.code(0);
    insta::assert_snapshot!(env.filters().apply(&run.stdout));
}

#[test]
fn explain_reads_the_snapshot_the_hosts_wiring_names() {
    let env = Env::new();
    let allow = json!({"id": "in-snapshot", "class": "gate", "runsIn": "unsandboxed",
                       "command": {"argv": ["/bin/sh", "-c", "cat >/dev/null"]}});
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [allow]}}).to_string(),
    );
    env.run(&["install", "claude-code"]).code(0);
    // The live file changes after the snapshot: run still reads the snapshot.
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": []}}).to_string(),
    );
    let said = explain(&env, &claude_bash(&env, "toolu_s", "ls"));
    let key = said["snapshot"]
        .as_str()
        .unwrap_or_else(|| panic!("{said:#}"));
    assert!(key.starts_with("keryx-"), "{said:#}");
    assert!(
        said["snapshotFrom"]
            .as_str()
            .unwrap()
            .ends_with(".claude/settings.json"),
        "{said:#}"
    );
    let ids: Vec<&str> = said["registrations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["runs"] == true)
        .map(|r| r["hookId"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"in-snapshot"), "{ids:?}");
    // `--snapshot` names another one; the live file is read without one.
    let run = env.run_stdin(
        &[
            "explain",
            "claude-code",
            "PreToolUse",
            "--json",
            "--snapshot",
            "keryx-000000000000",
        ],
        claude_bash(&env, "toolu_s", "ls").to_string(),
    );
    assert_eq!(run.json()["answer"]["kind"], "config-invalid");
}

#[test]
fn a_sandboxed_hook_without_a_sandbox_is_said_to_fail_as_run_fails_it() {
    let env = Env::new();
    env.write(
        env.keryx_home().join("runtime.toml"),
        "[sandbox]\nlauncher = \"/nonexistent/bwrap\"\n",
    );
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [
            {"id": "boxed", "class": "observe", "command": {"argv": ["true"]}}
        ]}})
        .to_string(),
    );
    let payload = json!({"session_id": "s-box", "hook_event_name": "Stop", "cwd": env.project});
    let said = env
        .run_stdin(
            &["explain", "claude-code", "Stop", "--json"],
            payload.to_string(),
        )
        .json();
    let boxed = said["registrations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["hookId"] == "boxed")
        .unwrap()
        .clone();
    assert_eq!(boxed["runs"], true, "{said:#}");
    assert!(
        boxed["note"]
            .as_str()
            .unwrap()
            .contains("sandbox-unavailable"),
        "{boxed}"
    );
    env.run_stdin(&["run", "claude-code", "Stop"], payload.to_string());
    let log = env.run(&["log", "--json", "--hook", "boxed"]);
    let rec: Value = serde_json::from_str(log.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(rec["record"]["failure"], "sandbox-unavailable", "{rec}");
}

#[test]
fn an_event_keryx_does_not_handle_is_explained_as_run_answers_it() {
    let env = Env::new();
    let run = env.run_stdin(&["explain", "claude-code", "PostToolBatch", "--json"], "{}");
    run.code(0);
    let v = run.json();
    assert_eq!(v["answer"]["kind"], "unmapped", "{v:#}");
    assert_eq!(v["answer"]["outcome"], "none");
    // run says nothing for it either.
    let run = env.run_stdin(&["run", "claude-code", "PostToolBatch"], "{}");
    run.code(0);
    assert_eq!(run.stdout, "");
    // An event no host has is a user error.
    env.run_stdin(&["explain", "claude-code", "NoSuchEvent"], "{}")
        .code(1)
        .stderr_has("has no event");
}
