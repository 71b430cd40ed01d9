//! The built-in hook bodies as the runtime spawns them (`security
//! check-input`, `security check-output`, `ctx hook`) and as hosts run them
//! directly; and ctx-guard against the command corpora in
//! tests/fixtures/commands/.

use std::path::Path;

use keryx_hooks::builtins::ctx_guard::{self, CtxGuardConfig};
use keryx_hooks::builtins::ports::Verdict;
use serde_json::json;

use crate::common::{Env, Run, aws_key};

/// The reason of a deny in keryx's own answer shape (`decision`, `reason`),
/// which the built-in bodies print; fails on anything else.
fn keryx_deny_reason(run: &Run) -> String {
    run.code(0);
    let v = run.json();
    assert_eq!(v["decision"], "deny", "{v}");
    v["reason"].as_str().unwrap().to_owned()
}

#[test]
fn check_input_denies_a_prompt_carrying_an_aws_key() {
    let env = Env::new();
    let key = aws_key();
    let payload = json!({
        "event": "UserPromptSubmit", "sessionId": "s", "cwd": env.project,
        "prompt": format!("use {key} to deploy"), "hook_event_name": "UserPromptSubmit",
    });
    let run = env.run_stdin(
        &[
            "security",
            "check-input",
            "--source",
            "untrusted-external",
            "--runtime",
            "keryx",
        ],
        payload.to_string(),
    );
    let reason = keryx_deny_reason(&run);
    assert!(
        reason.contains("AWS access key id") && reason.contains("line 1, column 5"),
        "{reason}"
    );
    assert!(!run.stdout.contains(&key) && !run.stderr.contains(&key));
    assert_eq!(run.stdout.lines().count(), 1);
}

#[test]
fn check_input_is_silent_on_a_clean_prompt() {
    let env = Env::new();
    let run = env.run_stdin(
        &["security", "check-input", "--runtime", "keryx"],
        json!({"prompt": "rename `parse` to `parse_args`", "cwd": env.project}).to_string(),
    );
    run.code(0);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "");
}

#[test]
fn check_input_answers_claude_code_in_its_own_shape() {
    let env = Env::new();
    let payload = json!({"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": env.project,
                         "prompt": format!("key={}", aws_key())});
    let run = env.run_stdin(
        &["security", "check-input", "--runtime", "claude-code"],
        payload.to_string(),
    );
    run.code(0);
    let v = run.json();
    assert_eq!(v["decision"], "block", "{v}");
    assert!(v["reason"].as_str().unwrap().contains("AWS access key id"));
}

#[test]
fn check_output_denies_a_write_of_a_secret_for_keryx_and_claude_code() {
    let env = Env::new();
    let key = aws_key();
    let keryx = json!({"event": "PreToolUse", "toolName": "Write", "cwd": env.project,
                       "toolInput": {"file_path": "config.py", "content": format!("\n\nKEY = \"{key}\"\n")}});
    let run = env.run_stdin(
        &["security", "check-output", "--runtime", "keryx"],
        keryx.to_string(),
    );
    let reason = keryx_deny_reason(&run);
    assert!(
        reason.contains("`config.py`") && reason.contains("line 3, column 8"),
        "{reason}"
    );
    assert!(!run.stdout.contains(&key));

    let claude = json!({"session_id": "s", "hook_event_name": "PreToolUse", "cwd": env.project,
                        "tool_name": "Edit",
                        "tool_input": {"file_path": "a.py", "old_string": "x", "new_string": key}});
    let run = env.run_stdin(
        &["security", "check-output", "--runtime", "claude-code"],
        claude.to_string(),
    );
    run.code(0);
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
}

#[test]
fn check_output_allows_clean_writes_silently() {
    let env = Env::new();
    let payload = json!({"toolName": "Write", "toolInput": {"file_path": "a.rs", "content": "fn main() {}\n"}});
    let run = env.run_stdin(&["security", "check-output"], payload.to_string());
    run.code(0);
    assert_eq!(run.stdout, "");
}

#[test]
fn user_rules_in_runtime_toml_are_applied_and_a_broken_file_denies() {
    let env = Env::new();
    let payload = json!({"toolName": "Write", "cwd": env.project,
                         "toolInput": {"file_path": "a", "content": "t = acme_0123456789abcdef"}});
    let args = ["security", "check-output", "--runtime", "keryx"];
    assert_eq!(env.run_stdin(&args, payload.to_string()).stdout, "");

    env.write(
        env.keryx_home().join("runtime.toml"),
        "[[security.rules]]\nid = \"acme-token\"\nkind = \"Acme token\"\nregex = 'acme_[0-9a-f]{16}'\n",
    );
    let reason = keryx_deny_reason(&env.run_stdin(&args, payload.to_string()));
    assert!(
        reason.contains("Acme token (rule `acme-token`)"),
        "{reason}"
    );

    env.write(
        env.keryx_home().join("runtime.toml"),
        "[[security.rules]]\nid = \"x\"\nregex = '('\n",
    );
    let clean = json!({"toolName": "Write", "cwd": env.project, "toolInput": {"file_path": "a", "content": "ok"}});
    let reason = keryx_deny_reason(&env.run_stdin(&args, clean.to_string()));
    assert!(
        reason.contains("cannot load its secret rules") && reason.contains("runtime.toml"),
        "{reason}"
    );
}

#[test]
fn an_unreadable_payload_is_a_deny_not_an_allow() {
    let env = Env::new();
    for args in [
        &["security", "check-input", "--runtime", "keryx"][..],
        &["security", "check-output", "--runtime", "keryx"][..],
        &["ctx", "hook", "keryx"][..],
    ] {
        let reason = keryx_deny_reason(&env.run_stdin(args, "{not json"));
        assert!(
            reason.contains("could not read the hook payload"),
            "{args:?}: {reason}"
        );
    }
}

#[test]
fn ctx_hook_denies_cat_dotenv_and_allows_ordinary_commands() {
    let env = Env::new();
    let payload = |cmd: &str| {
        json!({"event": "PreToolUse", "toolName": "Bash", "cwd": env.project,
               "toolInput": {"command": cmd}, "tool_input": {"command": cmd}})
        .to_string()
    };
    let reason = keryx_deny_reason(&env.run_stdin(&["ctx", "hook", "keryx"], payload("cat .env")));
    assert!(
        reason.contains("dotenv") && reason.contains("grep -q"),
        "{reason}"
    );

    let run = env.run_stdin(
        &["ctx", "hook", "keryx"],
        payload("git status && cargo test 2>&1 | tail -20"),
    );
    run.code(0);
    assert_eq!(run.stdout, "");
}

#[test]
fn ctx_hook_answers_each_host_in_its_own_shape() {
    let env = Env::new();
    let claude = json!({"session_id": "s", "hook_event_name": "PreToolUse", "cwd": env.project,
                        "tool_name": "Bash", "tool_input": {"command": "cat ~/.aws/credentials"}});
    let run = env.run_stdin(&["ctx", "hook", "claude-code"], claude.to_string());
    run.code(0);
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("AWS credentials")
    );

    let gemini = json!({"session_id": "s", "hook_event_name": "BeforeTool", "cwd": env.project,
                        "tool_name": "run_shell_command", "tool_input": {"command": "grep -r password /"}});
    let run = env.run_stdin(&["ctx", "hook", "gemini-cli"], gemini.to_string());
    run.code(0);
    let v = run.json();
    assert_eq!(v["decision"], "deny", "{v}");
    assert!(v["reason"].as_str().unwrap().contains("whole filesystem"));
}

#[test]
fn ctx_hook_reads_the_cat_limit_from_runtime_toml() {
    let env = Env::new();
    env.write(env.project.join("big.log"), vec![b'x'; 5000]);
    let payload =
        json!({"toolName": "Bash", "cwd": env.project, "toolInput": {"command": "cat big.log"}})
            .to_string();
    let run = env.run_stdin(&["ctx", "hook", "keryx"], &payload);
    run.code(0);
    assert_eq!(run.stdout, "", "5000 bytes is under the default limit");

    env.write(
        env.keryx_home().join("runtime.toml"),
        "[ctx_guard]\nmax_cat_bytes = 1000\n",
    );
    let reason = keryx_deny_reason(&env.run_stdin(&["ctx", "hook", "keryx"], &payload));
    assert!(
        reason.contains("big.log") && reason.contains("tail -n 200"),
        "{reason}"
    );
}

fn corpus(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/commands")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

fn corpus_cfg() -> CtxGuardConfig {
    CtxGuardConfig::for_home(Path::new("/home/dev"))
}

const CORPUS_CWD: &str = "/home/dev/proj";

#[test]
fn ctx_guard_denies_none_of_the_ordinary_command_corpus() {
    let commands = corpus("ordinary.txt");
    assert!(
        commands.len() >= 300,
        "the corpus has {} commands",
        commands.len()
    );
    let cfg = corpus_cfg();
    let denied: Vec<String> = commands
        .iter()
        .filter_map(
            |c| match ctx_guard::check_command(c, Some(Path::new(CORPUS_CWD)), &cfg) {
                Verdict::Deny(r) => Some(format!("{c}\n    -> {r}")),
                Verdict::Allow => None,
            },
        )
        .collect();
    assert!(denied.is_empty(), "false denies:\n{}", denied.join("\n"));
}

#[test]
fn ctx_guard_denies_every_command_of_the_secret_and_flood_corpus() {
    let cfg = corpus_cfg();
    let mut wrong = Vec::new();
    for line in corpus("denied.txt") {
        let (expect, command) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("no tab in {line:?}"));
        match ctx_guard::check_command(command, Some(Path::new(CORPUS_CWD)), &cfg) {
            Verdict::Deny(r) if r.contains(expect) => {}
            Verdict::Deny(r) => wrong.push(format!("{command}: reason lacks {expect:?}: {r}")),
            Verdict::Allow => wrong.push(format!("{command}: allowed")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn ctx_guard_payload_through_the_in_process_entry_point() {
    let deny = ctx_guard::check(
        &json!({"toolName": "Bash", "toolInput": {"command": "base64 ~/.ssh/id_rsa"}}),
    );
    assert!(
        matches!(deny, Verdict::Deny(ref r) if r.contains("SSH private key")),
        "{deny:?}"
    );
    let allow = ctx_guard::check(&json!({"toolName": "Bash", "toolInput": {"command": "ls -la"}}));
    assert_eq!(allow, Verdict::Allow);
}

#[test]
fn the_learning_sink_records_redacted_observations_once_enabled() {
    let env = Env::new();
    let key = aws_key();
    // A distinct call id per event: the shim drops a repeated one.
    let fire = |event: &str, call: &str| {
        let payload = json!({
            "event": event, "sessionId": "s-learn", "cwd": env.project,
            "toolName": "Bash", "toolCallId": call, "toolInput": {"command": "env"},
            "toolOutput": format!("AWS_ACCESS_KEY_ID={key}"),
        });
        env.run_stdin(&["run", "keryx", event], payload.to_string())
            .code(0);
    };
    let log = env
        .home
        .join(".local/state/keryx/learning/observations.jsonl");
    env.write(
        env.keryx_home().join("runtime.toml"),
        "[learning]\nenabled = false\n",
    );
    fire("PostToolUse", "c1");
    assert!(
        !log.exists(),
        "the sink runs though runtime.toml turns it off"
    );

    // On by default.
    std::fs::remove_file(env.keryx_home().join("runtime.toml")).unwrap();
    fire("PostToolUse", "c2");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(&key), "{text}");
    let rec: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(rec["kind"], "tool-complete", "{rec}");
    assert_eq!(rec["sessionId"], "s-learn");
    assert!(text.contains("[REDACTED:aws-access-key-id]"), "{text}");
}

#[test]
fn impact_evidence_reaches_the_model_on_the_first_edit_only() {
    let env = Env::new();
    env.write(env.project.join("src/lib.rs"), "pub mod store;\n");
    env.write(env.project.join("src/store.rs"), "pub fn get() {}\n");
    env.write(env.project.join("src/api.rs"), "use crate::store::get;\n");
    env.write(env.project.join("tests/store.rs"), "#[test]\nfn t() {}\n");
    env.write(
        env.keryx_home().join("runtime.toml"),
        "[impact]\nenabled = true\n",
    );
    let edit = |call: &str| {
        let payload = json!({
            "event": "PreToolUse", "sessionId": "s-impact", "cwd": env.project,
            "toolName": "Edit", "toolCallId": call,
            "toolInput": {"file_path": env.project.join("src/store.rs"), "old_string": "get", "new_string": "fetch"},
        });
        let run = env.run_stdin(&["run", "keryx", "PreToolUse"], payload.to_string());
        run.code(0);
        run.json()
    };
    let first = edit("e1");
    let context = first["additionalContext"].as_str().unwrap_or_default();
    assert!(
        context.contains("`src/api.rs`") && context.contains("`src/lib.rs`"),
        "{first}"
    );
    assert!(
        context.contains("related tests: `tests/store.rs`"),
        "{first}"
    );
    assert_ne!(first["outcome"], "deny", "{first}");
    let second = edit("e2");
    assert!(second.get("additionalContext").is_none(), "{second}");
}

#[test]
fn check_input_names_the_source_in_its_reason() {
    let env = Env::new();
    let payload = json!({"prompt": format!("use {} now", aws_key()), "cwd": env.project});
    for (args, source) in [
        (
            &["security", "check-input", "--source", "user-typed"][..],
            "user-typed",
        ),
        (&["security", "check-input"][..], "untrusted-external"),
    ] {
        let reason = keryx_deny_reason(&env.run_stdin(args, payload.to_string()));
        assert!(
            reason.starts_with(&format!(
                "the prompt (source `{source}`) contains AWS access key id"
            )),
            "{reason}"
        );
    }
    // Every source is scanned alike: a clean prompt passes from any.
    let run = env.run_stdin(
        &["security", "check-input", "--source", "user-typed"],
        json!({"prompt": "tidy the README", "cwd": env.project}).to_string(),
    );
    run.code(0);
    assert_eq!(run.stdout, "");
}

/// A crate whose `src/core.rs` three files import, with the shipped impact
/// provider asking at two importers.
fn impact_ask_env() -> Env {
    let env = Env::new();
    env.write(
        env.project.join("Cargo.toml"),
        "[package]\nname = \"app\"\n",
    );
    env.write(
        env.project.join("src/lib.rs"),
        "pub mod a;\npub mod b;\npub mod core;\n",
    );
    env.write(env.project.join("src/core.rs"), "pub fn f() {}\n");
    env.write(env.project.join("src/a.rs"), "use crate::core::f;\n");
    env.write(env.project.join("src/b.rs"), "use crate::core;\n");
    env.write(
        env.keryx_home().join("runtime.toml"),
        "[impact]\nenabled = true\nask_when_importers_at_least = 2\n",
    );
    env
}

#[test]
fn impact_ask_is_off_by_default() {
    let env = impact_ask_env();
    env.write(
        env.keryx_home().join("runtime.toml"),
        "[impact]\nenabled = true\n",
    );
    let payload = json!({
        "event": "PreToolUse", "sessionId": "s-off", "cwd": env.project,
        "toolName": "Edit", "toolCallId": "e1",
        "toolInput": {"file_path": env.project.join("src/core.rs"), "old_string": "f", "new_string": "g"},
    });
    let run = env.run_stdin(&["run", "keryx", "PreToolUse"], payload.to_string());
    run.code(0);
    let v = run.json();
    assert_ne!(v["outcome"], "ask", "{v}");
    assert_ne!(v["outcome"], "deny", "{v}");
    let context = v["additionalContext"].as_str().unwrap_or_default();
    assert!(
        context.contains("imported by: `src/a.rs`, `src/b.rs`, `src/lib.rs`"),
        "{v}"
    );
    assert!(!context.contains("confirm this edit"), "{v}");
}

#[test]
fn impact_ask_through_run_keryx_asks_once_and_headless_denies() {
    let env = impact_ask_env();
    let edit = |session: &str, call: &str, file: &str, extra: &[&str]| {
        let payload = json!({
            "event": "PreToolUse", "sessionId": session, "cwd": env.project,
            "toolName": "Edit", "toolCallId": call,
            "toolInput": {"file_path": env.project.join(file), "old_string": "f", "new_string": "g"},
        });
        let mut args = vec!["run", "keryx", "PreToolUse"];
        args.extend_from_slice(extra);
        let run = env.run_stdin(&args, payload.to_string());
        run.code(0);
        run.json()
    };
    let first = edit("s-ask", "e1", "src/core.rs", &[]);
    assert_eq!(first["outcome"], "ask", "{first}");
    assert_eq!(
        first["reason"], "impact evidence asks for a review of this edit",
        "{first}"
    );
    let context = first["additionalContext"].as_str().unwrap_or_default();
    assert!(
        context.contains(
            "confirm this edit: 3 files import it (runtime.toml `[impact] ask_when_importers_at_least = 2`)"
        ),
        "{first}"
    );
    // Only the session's first edit of the file is consulted.
    let second = edit("s-ask", "e2", "src/core.rs", &[]);
    assert_ne!(second["outcome"], "ask", "{second}");
    // A file below the threshold (nothing imports src/a.rs) does not ask.
    let leaf = edit("s-ask", "e3", "src/a.rs", &[]);
    assert_ne!(leaf["outcome"], "ask", "{leaf}");
    // No one to answer: the ask becomes a deny.
    let headless = edit("s-headless", "e1", "src/core.rs", &["--headless"]);
    assert_eq!(headless["outcome"], "deny", "{headless}");
}

#[test]
fn impact_ask_reaches_hosts_as_ask_or_as_deny_where_they_cannot_ask() {
    let env = impact_ask_env();
    let file = env.project.join("src/core.rs");

    // Claude Code can ask.
    let claude = json!({
        "session_id": "s-cc", "cwd": env.project, "hook_event_name": "PreToolUse",
        "tool_name": "Edit", "tool_use_id": "toolu_1", "permission_mode": "default",
        "tool_input": {"file_path": file, "old_string": "f", "new_string": "g", "replace_all": false},
    });
    let run = env.run_stdin(&["run", "claude-code", "PreToolUse"], claude.to_string());
    run.code(0);
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask", "{v}");
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecisionReason"],
        "impact evidence asks for a review of this edit",
        "{v}"
    );

    // Kimi has no ask: the same edit is denied, exit 2 with the reason.
    let kimi = json!({
        "session_id": "s-kimi", "cwd": env.project, "hook_event_name": "PreToolUse",
        "tool_name": "WriteFile", "tool_call_id": "k1",
        "tool_input": {"path": file, "content": "pub fn g() {}\n"},
    });
    let run = env.run_stdin(&["run", "kimi", "PreToolUse"], kimi.to_string());
    run.code(2);
    assert!(
        run.stderr
            .contains("impact evidence asks for a review of this edit"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_learning_observer_runs_once_per_mapped_event_in_process_and_list_says_when_it_is_off() {
    let env = Env::new();
    let events = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SessionEnd",
    ];
    for (i, event) in events.iter().chain(&["PreCompact"]).enumerate() {
        let payload = json!({
            "event": event, "sessionId": "s-once", "cwd": env.project, "prompt": "hi",
            "toolName": "Bash", "toolCallId": format!("once-{i}"), "toolInput": {"command": "ls"},
            "error": {"message": "Exit code 1"}, "reason": "manual",
        });
        env.run_stdin(&["run", "keryx", event], payload.to_string())
            .code(0);
    }
    let dir = env.home.join(".local/state/keryx");
    let kinds: Vec<String> = std::fs::read_to_string(dir.join("learning/observations.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "session-start",
            "user-prompt",
            "tool-start",
            "tool-complete",
            "tool-failed",
            "turn-stop",
            "session-end"
        ],
    );
    let records = std::fs::read_to_string(dir.join("sessions/keryx-s-once/records.jsonl")).unwrap();
    let observed = records
        .lines()
        .filter(|l| {
            l.contains(r#""hookId":"keryx.learning-observer""#) && l.contains(r#""kind":"hook""#)
        })
        .count();
    assert_eq!(observed, 7, "{records}");
    // Each observation carries the run id its event's hooks were given.
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(dir.join("learning/observations.jsonl"))
            .unwrap()
            .lines()
            .nth(1)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["kind"], "user-prompt");
    assert!(
        first["runId"].as_str().unwrap().starts_with("run-"),
        "{first}"
    );
    // The gated Bash call stayed on the in-process path: no per-call
    // de-duplication state, which only calls that spawn keep.
    assert!(!dir.join("sessions/calls-s-once").exists());

    env.write(
        env.keryx_home().join("runtime.toml"),
        "[learning]\nenabled = false\n",
    );
    let v = env.run(&["list", "--json"]).json();
    let observer = v["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "keryx.learning-observer")
        .unwrap();
    assert_eq!(observer["state"], "runtime-toml", "{observer}");
}
