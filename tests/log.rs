//! The audit trail: what `run` records for each event (hooks, held-back
//! hooks, the shim's own denials, replays), checked against
//! `schema/hook-record.schema.json`, and read back with `keryx-hooks log`.

use serde_json::{Value, json};

use crate::common::{Env, claude_bash, json_lines};

fn run_pre_tool(env: &Env, payload: &Value) {
    env.run_stdin(&["run", "claude-code", "PreToolUse"], payload.to_string());
}

/// `log --json` with `args`, each line parsed.
fn log_json(env: &Env, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["log", "--json"];
    all.extend_from_slice(args);
    let run = env.run(&all);
    run.code(0);
    json_lines(&run.stdout)
}

/// Every line of every session's records.jsonl, checked against the schema.
pub(crate) fn validate_all(env: &Env) -> usize {
    let schema: Value =
        serde_json::from_str(include_str!("../schema/hook-record.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let sessions = env.home.join(".local/state/keryx/sessions");
    let mut n = 0;
    for d in std::fs::read_dir(sessions).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(d.path().join("records.jsonl")) else {
            continue;
        };
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{line}\n{errors:#?}");
            n += 1;
        }
    }
    n
}

#[test]
fn a_denied_call_shows_in_log_deny_with_its_hook_and_reason() {
    let env = Env::new();
    run_pre_tool(&env, &claude_bash(&env, "toolu_deny", "cat .env"));
    run_pre_tool(&env, &claude_bash(&env, "toolu_ok", "ls -la"));

    let run = env.run(&["log", "--deny"]);
    run.code(0)
        .stdout_has("keryx.ctx-guard")
        .stdout_has("Bash cat .env")
        .stdout_has("deny")
        .stdout_has(".env");
    assert!(!run.stdout.contains("ls -la"), "{}", run.stdout);

    let denied = log_json(&env, &["--deny"]);
    assert_eq!(denied.len(), 1, "{denied:#?}");
    let d = &denied[0];
    assert_eq!(d["kind"], "hook");
    assert_eq!(d["host"], "claude-code");
    assert_eq!(d["tool"], "Bash");
    assert_eq!(d["summary"], "cat .env");
    assert_eq!(d["correlationId"], "toolu_deny");
    assert_eq!(d["projectRoot"], json!(env.project));
    assert_eq!(d["record"]["hookId"], "keryx.ctx-guard");
    assert_eq!(d["record"]["changedOutcome"], true);
    assert!(
        d["record"]["reason"].as_str().unwrap().contains(".env"),
        "{d}"
    );
    assert!(validate_all(&env) >= 2);
}

#[test]
fn log_filters_by_hook_host_session_project_time_and_count() {
    let env = Env::new();
    for (i, cmd) in ["cat .env", "ls", "pwd"].iter().enumerate() {
        run_pre_tool(&env, &claude_bash(&env, &format!("toolu_{i}"), cmd));
    }
    let all = log_json(&env, &[]);
    assert!(all.len() >= 3, "{all:#?}");
    let session = all[0]["sessionId"].as_str().unwrap().to_owned();

    assert_eq!(log_json(&env, &["-n", "1"]).len(), 1);
    assert_eq!(log_json(&env, &["--host", "claude-code"]).len(), all.len());
    assert_eq!(log_json(&env, &["--host", "codex"]).len(), 0);
    // A host's short name filters as its name.
    assert_eq!(log_json(&env, &["--host", "claude"]).len(), all.len());
    assert_eq!(log_json(&env, &["--session", &session]).len(), all.len());
    assert_eq!(log_json(&env, &["--session", "other"]).len(), 0);
    assert_eq!(
        log_json(&env, &["--project", env.project.to_str().unwrap()]).len(),
        all.len()
    );
    assert_eq!(log_json(&env, &["--project", "/nowhere"]).len(), 0);
    assert_eq!(log_json(&env, &["--since", "1h"]).len(), all.len());
    assert_eq!(log_json(&env, &["--since", "2999-01-01"]).len(), 0);
    let guard = log_json(&env, &["--hook", "keryx.ctx-guard"]);
    assert_eq!(guard.len(), 3);
    // Newest last.
    assert_eq!(guard[2]["summary"], "pwd");
    env.run(&["log", "--since", "yesterday"])
        .code(1)
        .stderr_has("--since");
}

#[test]
fn an_invalid_config_and_a_broken_payload_leave_shim_records() {
    let env = Env::new();
    env.write(env.user_hooks(), "{ not json");
    run_pre_tool(&env, &claude_bash(&env, "toolu_cfg", "ls"));
    env.run_stdin(&["run", "claude-code", "PreToolUse"], "[[[");

    let cfg = log_json(&env, &["--hook", "keryx-hooks", "--deny"]);
    let kinds: Vec<&str> = cfg.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"config-invalid"), "{cfg:#?}");
    assert!(kinds.contains(&"payload-invalid"), "{cfg:#?}");
    let c = cfg.iter().find(|r| r["kind"] == "config-invalid").unwrap();
    assert!(
        c["record"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("hook-config-invalid"),
        "{c}"
    );
    assert_eq!(c["summary"], "ls");
    env.run(&["log"])
        .code(0)
        .stdout_has("deny [config-invalid]");
    validate_all(&env);
}

#[test]
fn a_replayed_delivery_and_a_held_back_project_hook_are_recorded() {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            {"id": "counter", "class": "gate", "runsIn": "unsandboxed",
             "command": {"argv": ["/bin/sh", "-c", "echo counted >&2; exit 2"]}}
        ]}})
        .to_string(),
    );
    env.write(
        env.project_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            {"id": "proj-gate", "matcher": "Bash", "class": "gate",
             "command": {"argv": ["/bin/sh", "-c", "exit 0"]}}
        ]}})
        .to_string(),
    );
    let p = claude_bash(&env, "toolu_dup", "ls");
    run_pre_tool(&env, &p);
    run_pre_tool(&env, &p);

    let all = log_json(&env, &["-n", "0"]);
    let of = |kind: &str| all.iter().filter(|r| r["kind"] == kind).count();
    assert_eq!(of("duplicate-delivery"), 1, "{all:#?}");
    let dup = all
        .iter()
        .find(|r| r["kind"] == "duplicate-delivery")
        .unwrap();
    assert_eq!(dup["record"]["outcome"], "deny");
    assert_eq!(dup["record"]["reason"], "counted");
    // Only the held-back hook of this project (built-ins runtime.toml
    // leaves off are skipped too, for their own reason).
    let skipped: Vec<&Value> = all
        .iter()
        .filter(|r| r["kind"] == "skipped" && r["record"]["scope"] == "project")
        .collect();
    assert_eq!(skipped.len(), 1, "{all:#?}");
    assert_eq!(skipped[0]["record"]["hookId"], "proj-gate");
    assert_eq!(skipped[0]["skippedBecause"], "untrusted");
    env.run(&["log", "--hook", "proj-gate"])
        .code(0)
        .stdout_has("skipped");
    validate_all(&env);
}

#[test]
fn a_hidden_character_in_a_call_never_reaches_the_table_raw() {
    let env = Env::new();
    run_pre_tool(
        &env,
        &claude_bash(&env, "toolu_bidi", "cat .env # \u{202e}txt.exe"),
    );
    let run = env.run(&["log"]);
    run.code(0).stdout_has("\\u{202E}");
    assert!(!run.stdout.contains('\u{202e}'), "{}", run.stdout);
}

#[test]
fn log_follow_prints_records_as_they_are_appended() {
    use std::io::BufRead;
    use std::process::Stdio;
    let env = Env::new();
    run_pre_tool(&env, &claude_bash(&env, "toolu_before", "ls"));
    let mut child = env
        .cmd(&["log", "--follow", "--json", "--deny"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // Nothing denied yet; then a denial appears while it follows.
    std::thread::sleep(std::time::Duration::from_millis(700));
    run_pre_tool(&env, &claude_bash(&env, "toolu_after", "cat .env"));
    let got = rx.recv_timeout(std::time::Duration::from_secs(10));
    child.kill().unwrap();
    child.wait().unwrap();
    let line = got.expect("a followed record");
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["correlationId"], "toolu_after", "{v}");
    assert_eq!(v["record"]["outcome"], "deny");
}
