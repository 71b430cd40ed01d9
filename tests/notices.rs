//! What turns a guard off is said to the person, never only to the model:
//! notices travel on the host's user channel (systemMessage, stderr) and
//! never in the context the model reads; a trusted project file edited
//! mid-session is said on the very next event; `KERYX_HOOKS=off` is said at
//! SessionStart and by `doctor` and `status`.

use serde_json::{Value, json};

use crate::common::{Env, Run, claude_payload};

const GATE: &str = r#"{
  "schemaVersion": "1.0.0",
  "hooks": {
    "PreToolUse": [
      {
        "id": "no-echo",
        "matcher": "Bash",
        "class": "gate",
        "command": {"argv": ["/bin/sh", "-c", "echo 'no echo here' >&2; exit 2"]}
      }
    ]
  }
}
"#;

fn event(env: &Env, name: &str, fixture_name: &str, call: &str) -> Run {
    let mut p = claude_payload(env, fixture_name);
    p["session_id"] = json!("notice-session");
    if name == "PreToolUse" {
        p["tool_use_id"] = json!(call);
        p["tool_input"]["command"] = json!("echo hi");
    }
    let run = env.run_stdin(&["run", "claude-code", name], p.to_string());
    run.code(0);
    run
}

fn pre_tool_answer(env: &Env, call: &str) -> Value {
    let run = event(env, "PreToolUse", "PreToolUse-basic-Bash.json", call);
    if run.stdout.trim().is_empty() {
        Value::Null
    } else {
        run.json()
    }
}

#[test]
fn an_edit_that_revokes_trust_is_said_to_the_person_on_the_next_event() {
    let env = Env::new();
    env.write(env.project_hooks(), GATE);
    env.run(&["trust", "--yes"]).code(0);
    let v = pre_tool_answer(&env, "call-1");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    assert!(v.get("systemMessage").is_none(), "{v}");

    // The agent (or anyone) edits the trusted file mid-session.
    env.write(env.project_hooks(), GATE.replace("exit 2", "exit 0"));
    let v = pre_tool_answer(&env, "call-2");
    assert!(v.get("hookSpecificOutput").is_none(), "held back: {v}");
    let said = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        said.contains("`no-echo`") && said.contains("changed since you trusted"),
        "{v}"
    );
    // Said once, not on every tool call after it.
    assert_eq!(pre_tool_answer(&env, "call-3"), Value::Null);

    // Put back and trusted again, then changed again: said again.
    env.write(env.project_hooks(), GATE);
    env.run(&["trust", "--yes"]).code(0);
    let v = pre_tool_answer(&env, "call-4");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    env.write(env.project_hooks(), GATE.replace("exit 2", "exit 1"));
    let v = pre_tool_answer(&env, "call-5");
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("`no-echo`"),
        "{v}"
    );
}

#[test]
fn session_start_notices_never_reach_the_models_context() {
    let env = Env::new();
    env.write(env.project_hooks(), GATE);
    let run = event(&env, "SessionStart", "SessionStart-basic-startup.json", "");
    let v = run.json();
    let said = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        said.contains("`no-echo`") && said.contains("keryx-hooks trust"),
        "{v}"
    );
    assert!(
        !v.to_string().contains("additionalContext"),
        "a notice naming a command reached the model: {v}"
    );
    // Said at SessionStart, so the first tool call does not repeat it.
    assert_eq!(pre_tool_answer(&env, "call-1"), Value::Null);
}

#[test]
fn keryx_hooks_off_is_said_at_session_start_and_by_doctor_and_status() {
    let env = Env::new().env("KERYX_HOOKS", "off");
    env.write(env.user_hooks(), GATE);
    let v = event(&env, "SessionStart", "SessionStart-basic-startup.json", "").json();
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("keryx-hooks is off in this session's environment"),
        "{v}"
    );
    assert!(!v.to_string().contains("additionalContext"), "{v}");
    // Off means off: the gate does not run, and tool calls stay quiet.
    assert_eq!(pre_tool_answer(&env, "call-1"), Value::Null);

    let doctor = env.run(&["doctor", "--json"]).json();
    let check = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "KERYX_HOOKS")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(check["status"], "warn", "{doctor}");
    assert!(check["fix"].as_str().unwrap().contains("unset KERYX_HOOKS"));
    env.run(&["doctor"]).stdout_has("KERYX_HOOKS=off is set");
    env.run(&["status"]).stderr_has("KERYX_HOOKS=off is set");
    assert_eq!(env.run(&["status", "--json"]).json()["hooksOff"], true);

    // Without it, doctor has no such check.
    let on = Env::new();
    let doctor = on.run(&["doctor", "--json"]).json();
    assert!(
        !doctor["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "KERYX_HOOKS")
    );
}

#[test]
fn trusted_hooks_taken_out_of_the_project_file_are_said_on_the_next_event() {
    for emptied in [false, true] {
        let env = Env::new();
        env.write(env.project_hooks(), GATE);
        env.run(&["trust", "--yes"]).code(0);
        let start = event(&env, "SessionStart", "SessionStart-basic-startup.json", "");
        assert!(start.stdout.trim().is_empty(), "{}", start.stdout);
        assert_eq!(
            pre_tool_answer(&env, "call-1")["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        if emptied {
            env.write(
                env.project_hooks(),
                r#"{"schemaVersion": "1.0.0", "hooks": {}}"#,
            );
        } else {
            std::fs::remove_file(env.project_hooks()).unwrap();
        }
        let v = pre_tool_answer(&env, "call-2");
        let said = v["systemMessage"].as_str().unwrap_or_default();
        assert!(
            said.contains("`no-echo`") && said.contains("stopped guarding this session"),
            "{v}"
        );
        assert!(v.get("hookSpecificOutput").is_none(), "{v}");
        assert_eq!(pre_tool_answer(&env, "call-3"), Value::Null, "said once");
    }
}

/// Kimi gives a deny's stderr to the model as the tool result: a notice
/// raised on a denied call is kept out of that stderr and held for the
/// person, whom `status` shows it.
#[test]
fn on_kimi_a_denys_stderr_carries_no_notice_and_status_shows_it() {
    let env = Env::new();
    env.write(env.project_hooks(), GATE);
    env.run(&["trust", "--yes"]).code(0);
    // Edited after it was trusted: the next event has a notice to give.
    env.write(env.project_hooks(), GATE.replace("exit 2", "exit 0"));
    let mut p = crate::common::fixture("kimi", "PreToolUse-basic-Bash.json");
    p["cwd"] = json!(env.project);
    // The built-in ctx-guard denies reading `.env`.
    p["tool_input"]["command"] = json!("cat .env");
    let run = env.run_stdin(&["run", "kimi", "PreToolUse"], p.to_string());
    run.code(2);
    assert!(
        run.stderr.contains(".env"),
        "no deny reason: {}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("no-echo") && !run.stderr.contains("keryx-hooks trust"),
        "a notice went to the model with the deny: {}",
        run.stderr
    );
    let status = env.run(&["status"]);
    status.stdout_has("kept from the model");
    status.stdout_has("`no-echo`");
    let held = &env.run(&["status", "--json"]).json()["heldNotices"];
    assert_eq!(held[0]["host"], "kimi", "{held}");

    // On an allow there is no deny on stderr to share: said as before.
    let mut p = crate::common::fixture("kimi", "PreToolUse-basic-Bash.json");
    p["cwd"] = json!(env.project);
    p["tool_call_id"] = json!("call_0_1");
    env.write(env.project_hooks(), GATE.replace("exit 2", "exit 1"));
    let run = env.run_stdin(&["run", "kimi", "PreToolUse"], p.to_string());
    run.code(0);
    assert!(run.stderr.contains("`no-echo`"), "{}", run.stderr);
}

/// Claude Code's settings rewritten behind keryx-hooks' back mid-session
/// (here: every hook turned off) is said to the person after the next tool
/// runs, naming the file, once; a change `keryx-hooks install` makes is not.
#[test]
fn a_protected_file_changed_outside_keryx_is_said_after_the_next_tool() {
    let env = Env::new();
    env.run(&["install", "claude-code"]).code(0);
    let settings = env.claude_settings();
    let post = || event(&env, "PostToolUse", "PostToolUse-basic-Bash.json", "");
    event(&env, "SessionStart", "SessionStart-basic-startup.json", "");
    let quiet = post();
    assert!(
        !quiet.stdout.contains("changed outside"),
        "{}",
        quiet.stdout
    );

    let text = std::fs::read_to_string(&settings).unwrap();
    env.write(
        &settings,
        text.replacen('{', "{\n  \"disableAllHooks\": true,", 1),
    );
    let run = post();
    let said = if run.stdout.trim().is_empty() {
        String::new()
    } else {
        run.json()["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        said.contains("changed outside keryx-hooks"),
        "{}",
        run.stdout
    );
    assert!(said.contains(".claude/settings.json"), "{said}");
    assert!(!run.stdout.contains("additionalContext"), "{}", run.stdout);
    // Said once.
    let again = post();
    assert!(
        !again.stdout.contains("changed outside"),
        "{}",
        again.stdout
    );
}

#[test]
fn a_change_keryx_install_makes_is_not_said_as_one_made_outside() {
    let env = Env::new();
    event(&env, "SessionStart", "SessionStart-basic-startup.json", "");
    let post = || event(&env, "PostToolUse", "PostToolUse-basic-Bash.json", "");
    assert!(!post().stdout.contains("changed outside"));
    // Creates the user hooks file, the snapshot and Claude Code's settings.
    env.run(&["install", "claude-code"]).code(0);
    assert!(env.claude_settings().is_file());
    let run = post();
    assert!(!run.stdout.contains("changed outside"), "{}", run.stdout);
    // A change outside it after that still is.
    env.write(
        env.user_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {}}"#,
    );
    let run = post();
    assert!(run.stdout.contains("changed outside"), "{}", run.stdout);
    assert!(run.stdout.contains(".keryx/hooks.json"), "{}", run.stdout);
}
