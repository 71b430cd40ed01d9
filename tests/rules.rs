//! Rules as data through the real shim: a user hooks file with rules, a
//! Claude Code PreToolUse, and the answer in Claude's shape (deny, ask, a
//! warn as context) with the rule and what it matched in the record.

use serde_json::{Value, json};

use crate::common::{Env, claude_bash, claude_payload};

/// The default packs (docs/RULES.md), switched off so these tests are about
/// the rules they write.
const PACKS: [&str; 7] = [
    "destructive",
    "exfiltration",
    "persistence",
    "secrets-in-context",
    "supply-chain",
    "mcp",
    "obfuscation",
];

fn with_rules(env: &Env, rules: Value) {
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {}, "rules": rules, "rules_off": PACKS})
            .to_string(),
    );
}

fn rules() -> Value {
    json!([
        {"id": "no-force-push-main", "tools": ["Bash"],
         "match": {"command": {"program": ["git"], "subcommand": ["push"],
                               "flag": ["--force", "-f"], "arg": ["^(origin/)?main$"]}},
         "decision": "deny", "reason": "Force-pushing main rewrites shared history."},
        {"id": "reset-hard", "tools": ["Bash"],
         "match": {"command": {"program": ["git"], "subcommand": ["reset"], "flag": ["--hard"]}},
         "decision": "ask", "reason": "git reset --hard drops uncommitted work."},
        {"id": "curl-note", "tools": ["Bash"],
         "match": {"url": {"host": ["*.example.org"]}},
         "decision": "warn", "reason": "That host is a test host.", "notice": "curl to a test host"}
    ])
}

fn answer(env: &Env, call: &str, command: &str) -> Value {
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(env, call, command).to_string(),
    );
    run.code(0);
    // Allow is silence.
    if run.stdout.trim().is_empty() {
        return Value::Null;
    }
    run.json()
}

fn session(env: &Env) -> String {
    claude_payload(env, "PreToolUse-basic-Bash.json")["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn record_of<'r>(records: &'r [Value], id: &str) -> &'r Value {
    records
        .iter()
        .map(|r| &r["record"])
        .find(|r| r["hookId"] == id)
        .unwrap_or_else(|| panic!("no record for {id}: {records:?}"))
}

#[test]
fn a_rule_denies_asks_and_warns_in_claudes_shape_and_is_recorded() {
    let env = Env::new();
    with_rules(&env, rules());

    let v = answer(&env, "c1", "sudo env X=1 git push -f origin main");
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{v}");
    assert!(
        out["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("rewrites shared history"),
        "{v}"
    );

    let v = answer(&env, "c2", "cd repo && sh -c 'git reset --hard HEAD~1'");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask", "{v}");
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("drops uncommitted work"),
        "{v}"
    );

    let v = answer(&env, "c3", "curl -s https://api.example.org/v1");
    assert!(
        v["hookSpecificOutput"].get("permissionDecision").is_none(),
        "{v}"
    );
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("That host is a test host."),
        "{v}"
    );
    // The notice is for the person, not the model.
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("curl-note: curl to a test host"),
        "{v}"
    );

    // An ordinary command: no rule, no answer of theirs.
    let v = answer(&env, "c4", "git push origin feature");
    assert!(!v.to_string().contains("rewrites shared history"), "{v}");

    let records = env.records("claude-code", &session(&env));
    let deny = record_of(&records, "no-force-push-main");
    assert_eq!(deny["outcome"], "deny", "{deny}");
    assert_eq!(
        deny["reason"], "rule no-force-push-main matched command `git push -f origin main`",
        "{deny}"
    );
    let ask = record_of(&records, "reset-hard");
    assert_eq!(ask["outcome"], "ask", "{ask}");
    assert!(
        ask["reason"]
            .as_str()
            .unwrap()
            .contains("matched command `git reset --hard HEAD~1`"),
        "{ask}"
    );
    let warn = record_of(&records, "curl-note");
    assert!(
        warn["reason"]
            .as_str()
            .unwrap()
            .contains("matched url `https://api.example.org/v1`"),
        "{warn}"
    );
    // The deny answered at once: the built-in gate was not run for it.
    let gate = records
        .iter()
        .find(|r| r["correlationId"] == "c1" && r["record"]["hookId"] == "keryx.ctx-guard")
        .unwrap();
    assert_eq!(gate["kind"], "skipped", "{gate}");
    assert_eq!(
        gate["record"]["reason"],
        "not run: rule `no-force-push-main` already denied this call"
    );
}

#[test]
fn a_bad_rule_fails_the_load_naming_file_rule_and_pattern() {
    let env = Env::new();
    with_rules(
        &env,
        json!([{"id": "broken", "match": {"command": {"arg": ["(x"]}},
                "decision": "deny", "reason": "r"}]),
    );
    let v = answer(&env, "c1", "echo hi");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    let run = env.run(&["validate"]);
    run.code(1);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("hooks.json"), "{all}");
    assert!(all.contains("rule `broken`"), "{all}");
    assert!(all.contains("invalid regular expression `(x`"), "{all}");
}

#[test]
fn a_projects_rules_wait_for_trust_and_it_cannot_switch_rules_off() {
    let env = Env::new();
    env.write(
        env.project_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {},
               "rules": [{"id": "no-echo", "tools": ["Bash"],
                          "match": {"command": {"program": ["echo"]}},
                          "decision": "deny", "reason": "project says no echo"}]})
        .to_string(),
    );
    let v = answer(&env, "c1", "echo hi");
    assert!(!v.to_string().contains("project says no echo"), "{v}");
    // The person is told at session start, as for held-back hooks.
    let start = env.run_stdin(
        &["run", "claude-code", "SessionStart"],
        claude_payload(&env, "SessionStart-basic-startup.json").to_string(),
    );
    start
        .code(0)
        .stdout_has("project rule `no-echo` did not run");
    env.run(&["trust", "--yes"])
        .code(0)
        .stdout_has("rule `no-echo` (deny): project says no echo");
    let v = answer(&env, "c2", "echo hi");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");

    env.write(
        env.project_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {}, "rules_off": ["destructive"]}).to_string(),
    );
    let run = env.run(&["validate"]);
    run.code(1);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains(".metaproject/hooks.json"), "{all}");
    assert!(all.contains("only your own hooks file"), "{all}");
}

#[test]
fn list_validate_explain_and_test_name_the_rules() {
    let env = Env::new();
    let mut all = rules();
    all.as_array_mut().unwrap().push(json!({
        "id": "every-status", "description": "Too broad.", "tools": ["Bash"],
        "match": {"command": {"program": ["git"], "subcommand": ["status"]}},
        "decision": "log", "reason": "logged"
    }));
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {}, "rules": all,
               "rules_off": ([&PACKS[..], &["curl-note"]].concat())})
        .to_string(),
    );

    let list = env.run(&["list"]);
    list.code(0)
        .stdout_has("rules:")
        .stdout_has("no-force-push-main  deny  on  (user, `")
        .stdout_has("curl-note  warn  off  (user, `")
        .stdout_has("every-status  log  on  (user, `");
    let listed = env.run(&["list", "--json"]).json();
    let ids: Vec<&str> = listed["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["scope"] == "user")
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "no-force-push-main",
            "reset-hard",
            "curl-note",
            "every-status"
        ]
    );

    // A rule that fires on everyday work is valid, and warned about.
    let validate = env.run(&["validate"]);
    validate
        .code(0)
        .stdout_has("rule `every-status` matches the ordinary command `git status`");
    assert!(
        !validate.stdout.contains("no-force-push-main"),
        "{}",
        validate.stdout
    );

    let test = env.run(&[
        "test",
        "--rule",
        "no-force-push-main",
        "--command",
        "timeout 9 git push --force origin/main",
    ]);
    test.code(0)
        .stdout_has("rule `no-force-push-main` (user, `")
        .stdout_has("decision: deny")
        .stdout_has("matched:  command `git push --force origin/main`");
    env.run(&[
        "test",
        "--rule",
        "no-force-push-main",
        "--command",
        "git push",
    ])
    .code(0)
    .stdout_has("does not match this call");
    env.run(&["test", "--rule", "nope", "--command", "ls"])
        .code(1)
        .stderr_has("no rule `nope`");
    let payload = env.write(
        env.home.join("payload.json"),
        json!({"tool_name": "Bash", "tool_input": {"command": "git reset --hard"}}).to_string(),
    );
    env.run(&[
        "test",
        "--rule",
        "reset-hard",
        "--payload",
        payload.to_str().unwrap(),
    ])
    .code(0)
    .stdout_has("decision: ask");

    let explain = env.run_stdin(
        &["explain", "claude-code", "PreToolUse"],
        claude_bash(&env, "e1", "git reset --hard").to_string(),
    );
    explain
        .code(0)
        .stdout_has("rule     reset-hard (ask): matched command `git reset --hard`")
        .stdout_has("rule     no-force-push-main (deny): does not match")
        .stdout_has("run would answer: ask (by rule reset-hard)");
}

#[test]
fn ctx_guard_lets_the_read_only_rule_tools_run() {
    let env = Env::new();
    with_rules(&env, rules());
    for (i, command) in [
        "keryx-hooks list",
        "keryx-hooks validate",
        "keryx-hooks test --rule no-force-push-main --command 'git push -f origin main'",
        "keryx-hooks explain claude-code PreToolUse < payload.json",
    ]
    .into_iter()
    .enumerate()
    {
        let v = answer(&env, &format!("t{i}"), command);
        assert!(
            v["hookSpecificOutput"].get("permissionDecision").is_none(),
            "{command}: {v}"
        );
    }
}

/// The schema and the rule compiler agree: every valid fixture passes the
/// published schema, and every invalid rule fixture fails it too (the
/// loader reports the compiler's message, which names the rule).
#[test]
fn the_schema_and_the_rule_compiler_agree_on_the_fixtures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: Value =
        serde_json::from_str(include_str!("../schema/hook-config.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let valid = read(&root.join("tests/fixtures/configs/valid/rules.json"));
    let errors: Vec<String> = validator
        .iter_errors(&valid)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let mut checked = 0;
    for entry in std::fs::read_dir(root.join("tests/fixtures/configs/invalid")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("rule-") && name.ends_with(".json")) {
            continue;
        }
        // The empty list and the bad regex are the compiler's alone to see
        // (the schema has no regex dialect); the rest both refuse.
        if name == "rule-bad-regex.json" {
            continue;
        }
        assert!(
            !validator.is_valid(&read(&path)),
            "{name} passes the schema"
        );
        checked += 1;
    }
    assert!(checked >= 6, "{checked}");
}

#[test]
fn list_json_with_rules_matches_its_published_schema() {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/configs/valid/rules.json"
        ))
        .unwrap(),
    );
    let schema: Value =
        serde_json::from_str(include_str!("../schema/list-output.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let v = env.run(&["list", "--json"]).json();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{v:#}");
    let rules: Vec<&Value> = v["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["scope"] == "user")
        .collect();
    assert_eq!(rules.len(), 7, "{v:#}");
    assert_eq!(rules[1]["tools"], json!(["Bash"]));
    assert_eq!(rules[5]["events"], json!(["UserPromptSubmit"]));
}

#[test]
fn a_rule_composes_with_a_hooks_allow_and_deny() {
    let env = Env::new();
    let file = |script: &str| {
        json!({"schemaVersion": "1.0.0",
               "hooks": {"PreToolUse": [crate::common::sh_hook("gate", "gate", script)]},
               "rules": [{"id": "ask-on-rm", "tools": ["Bash"],
                          "match": {"command": {"program": "rm"}},
                          "decision": "ask", "reason": "rule asks about rm"},
                         {"id": "warn-on-rm", "tools": ["Bash"],
                          "match": {"command": {"program": "rm"}},
                          "decision": "warn", "reason": "rule warns about rm"}],
               "rules_off": PACKS})
        .to_string()
    };
    // The hook allows: the rule's ask wins.
    env.write(env.user_hooks(), file("cat >/dev/null; exit 0"));
    let v = answer(&env, "a1", "rm notes.txt");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask", "{v}");
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("rule asks about rm"),
        "{v}"
    );
    // The hook denies: its deny and reason stand; the warn is still context.
    env.write(
        env.user_hooks(),
        file("cat >/dev/null; echo '{\"decision\":\"deny\",\"reason\":\"hook says no\"}'"),
    );
    let v = answer(&env, "a2", "rm notes.txt");
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{v}");
    assert_eq!(out["permissionDecisionReason"], "hook says no", "{v}");
}

/// `keryx-hooks allow-once CODE` typed by a person: stdin, stdout and
/// stderr a terminal (util-linux `script`), answering `answer`.
fn allow_once_at_terminal(env: &Env, code: &str, answer: &str) -> crate::common::Run {
    let line = format!("'{}' allow-once '{code}'", crate::common::BIN);
    let mut cmd = env.program("script");
    cmd.args(["-qec", &line, "/dev/null"]);
    crate::common::run_fed(cmd, format!("{answer}\n").into_bytes())
}

fn once_code(reason: &str) -> String {
    let at = reason
        .find("keryx-hooks allow-once ")
        .unwrap_or_else(|| panic!("no code in {reason}"));
    reason[at + "keryx-hooks allow-once ".len()..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect()
}

#[test]
fn a_person_allows_one_refused_call_once_from_a_terminal_and_no_one_else_can() {
    let env = Env::new();
    with_rules(&env, rules());
    let cmd = "git push --force origin main";
    let denied = |call: &str| {
        let v = answer(&env, call, cmd);
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let reason = denied("c1");
    let code = once_code(&reason);
    assert_eq!(code.len(), 10, "{reason}");
    // The same call refused again names the same code; another call another.
    assert_eq!(once_code(&denied("c2")), code);
    let other = answer(&env, "c3", "git push -f origin main");
    assert_ne!(
        once_code(
            other["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap()
        ),
        code
    );

    // Listed for the person; without a terminal nothing is allowed.
    env.run(&["allow-once"])
        .code(0)
        .stdout_has(&code)
        .stdout_has(cmd);
    env.run_stdin(&["allow-once", &code], "y\n")
        .code(1)
        .stderr_has("no terminal");
    denied("c4");
    // A code that is not one, or not open, is refused with the reason.
    env.run(&["allow-once", "../../x"])
        .code(1)
        .stderr_has("no refused call");
    // Declined at the terminal: nothing changes.
    let no = allow_once_at_terminal(&env, &code, "n");
    assert!(no.stdout.contains("Not allowed"), "{}", no.stdout);
    denied("c5");

    // Confirmed: exactly the next identical call passes that rule, and the
    // person is told; the one after is refused again.
    let yes = allow_once_at_terminal(&env, &code, "y");
    assert!(
        yes.stdout.contains("Allowed once"),
        "{}{}",
        yes.stdout,
        yes.stderr
    );
    let v = answer(&env, "c6", cmd);
    assert_ne!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("allowed once by you"),
        "{v}"
    );
    denied("c7");
    // The agent's own attempt is refused by ctx-guard before it can ask.
    let v = answer(&env, "c8", &format!("keryx-hooks allow-once {code}"));
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
}
