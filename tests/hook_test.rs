//! `keryx-hooks test <id>`: the call to test built from `--tool`,
//! `--command` and `--file`, and the payload shown exactly as the hook
//! read it on its stdin, before what the hook answered.

use serde_json::{Value, json};

use crate::common::{Env, Run, read_json};

/// A user gate on PreToolUse (matcher `matcher`) that keeps what it reads
/// on stdin in `got.json` under the home and denies `rm -rf`.
fn recording_gate(env: &Env, matcher: &str) {
    let got = env.home.join("got.json");
    let script = env.script(
        env.home.join("hooks/record.sh"),
        &format!(
            "#!/bin/sh\ncat > '{}'\nif grep -q 'rm -rf' '{}'; then echo 'no rm -rf' >&2; exit 2; fi\n",
            got.display(),
            got.display()
        ),
    );
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {
            "PreToolUse": [{"id": "record", "class": "gate", "matcher": matcher,
                            "runsIn": "unsandboxed", "command": {"argv": [script]}}],
            "Stop": [{"id": "at-stop", "class": "observe", "runsIn": "unsandboxed",
                      "command": {"argv": ["true"]}}]
        }})
        .to_string(),
    );
}

/// What the gate read on its last run.
fn received(env: &Env) -> Value {
    read_json(env.home.join("got.json"))
}

/// The JSON printed under `heading`, indented by two spaces.
fn shown_payload(run: &Run, heading: &str) -> Value {
    let mut lines = run.stdout.lines().skip_while(|l| *l != heading).skip(1);
    let mut text = String::new();
    for l in lines.by_ref() {
        match l.strip_prefix("  ") {
            Some(rest) => text.push_str(rest),
            None => break,
        }
        text.push('\n');
    }
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{}", run.stdout))
}

#[test]
fn test_shows_the_payload_the_hook_read_before_its_answer() {
    let env = Env::new();
    recording_gate(&env, "Bash");
    let run = env.run(&["test", "record", "--command", "rm -rf build"]);
    run.code(0);
    assert_eq!(run.stderr, "");
    // Byte for byte what the hook read, timestamp included.
    assert_eq!(
        shown_payload(&run, "payload sent on stdin:"),
        received(&env),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!(env.filters().apply(&run.stdout), @r#"
    hook record on PreToolUse (user gate, runsIn=unsandboxed, profile monitored-trusted-local)
    payload sent on stdin:
      {
        "schemaVersion": "1.0.0",
        "timestamp": "[TIME]",
        "hookId": "record",
        "event": "PreToolUse",
        "sessionId": "keryx-hooks-test",
        "runId": "test-run",
        "hook_event_name": "PreToolUse",
        "session_id": "keryx-hooks-test",
        "cwd": "[PROJECT]",
        "projectRoot": "[PROJECT]",
        "tool_use_id": "test-call-1",
        "toolCallId": "test-call-1",
        "tool_name": "Bash",
        "toolName": "Bash",
        "tool_input": {
          "command": "rm -rf build"
        },
        "toolInput": {
          "command": "rm -rf build"
        },
        "policyProfile": "monitored-trusted-local"
      }
    decision: deny
    reason: no rm -rf
    exit code: 2  duration: [MS] ms
    stderr:
      no rm -rf
    "#);
    // The same payload is a field of the JSON report.
    let v = env
        .run(&["test", "record", "--command", "ls", "--json"])
        .json();
    assert_eq!(v["payload"], received(&env), "{v:#}");
    assert_eq!(v["payloadSent"], true);
    assert_eq!(v["decision"], Value::Null);
    assert_eq!(v["payload"]["toolInput"], json!({"command": "ls"}));
}

#[test]
fn file_makes_the_call_the_tool_or_the_matcher_names() {
    let env = Env::new();
    recording_gate(&env, "Edit|Read");
    let input = |args: &[&str]| {
        let mut all = vec!["test", "record", "--json"];
        all.extend_from_slice(args);
        let run = env.run(&all);
        run.code(0);
        let v = run.json();
        assert_eq!(v["payload"], received(&env), "{v:#}");
        (
            v["payload"]["toolName"].as_str().unwrap().to_owned(),
            v["payload"]["toolInput"].clone(),
        )
    };
    let path = env.project.join("src/main.rs").display().to_string();
    // The first of Write, Edit, MultiEdit, Read the matcher accepts; a
    // relative path is the current directory's.
    assert_eq!(
        input(&["--file", "src/main.rs"]),
        (
            "Edit".to_owned(),
            json!({"file_path": path, "old_string": "a", "new_string": "b"})
        )
    );
    assert_eq!(
        input(&["--file", &path, "--tool", "read"]),
        ("Read".to_owned(), json!({"file_path": path}))
    );
    // `--tool` alone: a call of that tool with an input of its shape.
    assert_eq!(
        input(&["--tool", "Read"]),
        (
            "Read".to_owned(),
            json!({"file_path": env.project.join("keryx-hooks-test.txt")})
        )
    );
}

#[test]
fn a_call_the_hook_does_not_match_is_shown_and_not_sent() {
    let env = Env::new();
    recording_gate(&env, "Bash");
    let run = env.run(&["test", "record", "--file", "notes.txt", "--json"]);
    run.code(0);
    let v = run.json();
    assert_eq!(v["fires"], false, "{v:#}");
    assert_eq!(v["because"], "matcher");
    assert_eq!(v["payloadSent"], false);
    assert_eq!(v["payload"]["toolName"], "Write");
    assert_eq!(
        v["payload"]["toolInput"],
        json!({"file_path": env.project.join("notes.txt"), "content": "hello\n"})
    );
    assert!(!env.home.join("got.json").exists(), "the hook ran");
    let run = env.run(&["test", "record", "--tool", "Write"]);
    run.code(0);
    assert_eq!(
        shown_payload(&run, "payload (not sent: the hook does not fire for it):")["toolName"],
        "Write"
    );
    assert_eq!(
        run.stdout.lines().last().unwrap(),
        "hook record on PreToolUse does not fire for this payload: its matcher `Bash` does not \
         match the tool `Write`; `run` would not run it"
    );
}

#[test]
fn call_flags_that_do_not_fit_are_refused() {
    let env = Env::new();
    recording_gate(&env, "*");
    let refused = |args: &[&str], code: i32| {
        let run = env.run(args);
        run.code(code);
        assert_eq!(run.stdout, "");
        run.stderr
    };
    assert_eq!(
        refused(&["test", "at-stop", "--command", "ls"], 1),
        "error: `--tool`, `--command` and `--file` describe a tool call, and `at-stop` runs on Stop\n\
         hint: keryx-hooks test at-stop --payload-file PATH\n"
    );
    assert_eq!(
        refused(&["test", "record", "--command", "ls", "--tool", "Write"], 1),
        "error: `--command` makes a Bash call, not a `Write` call\n"
    );
    assert_eq!(
        refused(&["test", "record", "--file", "a", "--tool", "Bash"], 1),
        "error: `--file` makes a Write, Edit, MultiEdit, Read call, not a `Bash` call\n"
    );
    // One way to give the payload at a time: a usage error.
    let payload = env.write(env.home.join("p.json"), "{}");
    for flag in [["--command", "ls"], ["--tool", "Bash"], ["--file", "a.txt"]] {
        let mut args = vec![
            "test",
            "record",
            "--payload-file",
            payload.to_str().unwrap(),
        ];
        args.extend(flag);
        assert!(refused(&args, 2).contains("cannot be used with"));
    }
    assert!(
        refused(&["test", "record", "--command", "ls", "--file", "a"], 2)
            .contains("cannot be used with")
    );
    assert!(!env.home.join("got.json").exists(), "the hook ran");
}

#[test]
fn a_built_in_gate_is_tested_on_the_command_given() {
    let env = Env::new();
    let run = env.run(&["test", "keryx.ctx-guard", "--command", "cat .env", "--json"]);
    run.code(0);
    let v = run.json();
    assert_eq!(v["decision"], "deny", "{v:#}");
    assert_eq!(v["payload"]["toolInput"], json!({"command": "cat .env"}));
    assert_eq!(v["payload"]["hookId"], "keryx.ctx-guard");
    assert_eq!(v["payloadSent"], true);
}
