//! `$KERYX_HOME/runtime.toml` through the real binary: a broken file fails
//! closed (the strictest profile for `run`, `list` and `test` alike, no
//! learning record with weaker redaction), and `doctor` names every problem.

use serde_json::{Value, json};

use crate::common::{Env, Run};

fn runtime_toml(env: &Env, text: &str) {
    env.write(env.keryx_home().join("runtime.toml"), text);
}

/// A user observer on Stop that runs unsandboxed: the strictest profile
/// refuses it, every other runs it.
fn unsandboxed_probe(env: &Env) {
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [{
            "id": "probe", "class": "observe", "runsIn": "unsandboxed",
            "command": {"argv": ["/bin/sh", "-c", "exit 0"]},
        }]}})
        .to_string(),
    );
}

fn stop(env: &Env, args: &[&str]) -> Value {
    let mut argv = vec!["run", "keryx", "Stop"];
    argv.extend_from_slice(args);
    let run = env.run_stdin(
        &argv,
        json!({"event": "Stop", "sessionId": "s-1", "cwd": env.project}).to_string(),
    );
    run.code(0);
    assert_eq!(run.stderr, "", "`run` keeps stderr for the host's protocol");
    run.json()
}

/// The probe's failure, or `None` when it ran cleanly.
fn probe_failure(v: &Value) -> Option<String> {
    let rec = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["hookId"] == "probe")
        .unwrap_or_else(|| panic!("the probe has no record: {v}"));
    rec["failure"].as_str().map(str::to_owned)
}

fn doctor_checks(env: &Env) -> (Run, Vec<Value>) {
    let run = env.run(&["doctor", "--json"]);
    let checks = run.json()["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "runtime.toml")
        .cloned()
        .collect();
    (run, checks)
}

#[test]
fn a_broken_runtime_toml_runs_under_the_strictest_profile() {
    let env = Env::new();
    unsandboxed_probe(&env);
    runtime_toml(&env, "profile = \"read-only-review\"\n");
    assert_eq!(probe_failure(&stop(&env, &[])), None);

    for text in [
        // A stricter profile, then a syntax error: the file says nothing.
        "profile = \"read-only-review\"\n[trust\n",
        // Misspelt, and of the wrong type.
        "profile = \"unattended\"\n",
        "profile = 3\n",
    ] {
        runtime_toml(&env, text);
        assert_eq!(
            probe_failure(&stop(&env, &[])).as_deref(),
            Some("refused"),
            "{text}"
        );
        // A profile named on the command line still wins.
        assert_eq!(
            probe_failure(&stop(&env, &["--profile", "read-only-review"])),
            None,
            "{text}"
        );
    }

    // Said in the log, and once a session through the host's own channel.
    let log = std::fs::read_to_string(env.home.join(".local/state/keryx/keryx-hooks.log"))
        .expect("the log");
    assert!(
        log.contains("`profile` is 3") || log.contains("`profile` must be a string"),
        "{log}"
    );
    assert!(log.contains("using the strictest profile, `unattended-untrusted`"));
    let run = env.run_stdin(
        &["run", "claude-code", "SessionStart"],
        json!({"session_id": "s-2", "hook_event_name": "SessionStart", "source": "startup",
               "cwd": env.project})
        .to_string(),
    );
    run.code(0);
    assert_eq!(run.stderr, "");
    let v = run.json();
    let message = v["systemMessage"].as_str().unwrap_or_default();
    assert!(
        message.contains("`profile` must be a string")
            && message.contains("using the strictest profile, `unattended-untrusted`"),
        "{v}"
    );
}

#[test]
fn list_and_test_use_the_profile_run_uses() {
    let env = Env::new();
    unsandboxed_probe(&env);
    let list_profile = |env: &Env, args: &[&str]| {
        let mut argv = vec!["list", "--json"];
        argv.extend_from_slice(args);
        let run = env.run(&argv);
        run.code(0);
        let v = run.json();
        let input = v["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == "keryx.security-check-input")
            .unwrap()["effectiveRunsIn"]
            .clone();
        (v["profile"].clone(), input, run.stderr.clone())
    };
    let test_profile = |env: &Env| {
        let v = env.run(&["test", "probe", "--json"]).json();
        (v["profile"].clone(), v["failure"].clone())
    };
    assert_eq!(
        list_profile(&env, &[]),
        (
            json!("monitored-trusted-local"),
            json!("unsandboxed"),
            "".into()
        )
    );

    runtime_toml(&env, "profile = \"unattended-untrusted\"\n");
    assert_eq!(
        list_profile(&env, &[]),
        (json!("unattended-untrusted"), json!("sandbox"), "".into())
    );
    assert_eq!(
        test_profile(&env),
        (json!("unattended-untrusted"), json!("refused"))
    );
    assert_eq!(
        list_profile(&env, &["--profile", "read-only-review"]).0,
        "read-only-review"
    );

    runtime_toml(&env, "profile = \"read-only-review\"\n[trust\n");
    let (profile, _, stderr) = list_profile(&env, &[]);
    assert_eq!(profile, "unattended-untrusted");
    assert!(
        stderr.contains("warning: ")
            && stderr.contains("is not valid TOML at line 2, column 7")
            && stderr.contains("using the strictest profile"),
        "{stderr}"
    );
    let run = env.run(&["test", "probe", "--json"]);
    run.stderr_has("using the strictest profile");
    assert_eq!(run.json()["profile"], "unattended-untrusted");
}

#[test]
fn the_learning_sink_records_nothing_when_the_secret_rules_do_not_load() {
    let env = Env::new();
    runtime_toml(
        &env,
        "[learning]\nenabled = true\n[[security.rules]]\nid = \"mine\"\nregex = '('\n",
    );
    let payload = json!({
        "event": "PostToolUse", "sessionId": "s-learn", "cwd": env.project,
        "toolName": "Bash", "toolCallId": "c1", "toolInput": {"command": "env"},
        "toolOutput": "MINE=value",
    });
    let run = env.run_stdin(&["run", "keryx", "PostToolUse"], payload.to_string());
    run.code(0);
    let v = run.json();
    let anomaly = v["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["hookId"] == "keryx.learning-observer")
        .unwrap_or_else(|| panic!("no observer anomaly: {v}"))
        .clone();
    assert_eq!(anomaly["kind"], "hook-observer-failed", "{v}");
    assert!(
        anomaly["detail"]
            .as_str()
            .unwrap()
            .contains("nothing recorded: keryx-hooks cannot load its secret rules"),
        "{v}"
    );
    assert_ne!(v["outcome"], "deny", "an observer never decides: {v}");
    assert!(
        !env.home.join(".local/state/keryx/learning").exists(),
        "nothing is stored with weaker redaction"
    );
}

/// Doctor's runtime.toml check is the only one, ok, with a detail `detail_ok` accepts.
fn assert_one_ok_check(env: &Env, detail_ok: impl Fn(&str) -> bool) {
    let (_, checks) = doctor_checks(env);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0]["status"], "ok");
    assert!(
        detail_ok(checks[0]["detail"].as_str().unwrap()),
        "{checks:#?}"
    );
}

#[test]
fn doctor_reports_every_problem_in_runtime_toml() {
    let env = Env::new();
    assert_one_ok_check(&env, |d| {
        d.contains("every setting has its default (profile `monitored-trusted-local`)")
    });

    // A rule that does not compile: the gates deny every prompt, and
    // doctor says so with the very message they deny with.
    runtime_toml(&env, "[[security.rules]]\nid = \"x\"\nregex = '('\n");
    let prompt =
        json!({"event": "UserPromptSubmit", "sessionId": "s", "cwd": env.project, "prompt": "hi"});
    let run = env.run_stdin(&["run", "keryx", "UserPromptSubmit"], prompt.to_string());
    let v = run.json();
    assert_eq!(v["outcome"], "deny", "{v}");
    let reason = v["reason"].as_str().unwrap();
    let message = reason
        .split("; fix the file")
        .next()
        .unwrap()
        .trim_start_matches("keryx-hooks cannot load its secret rules")
        .to_owned();
    assert!(
        reason.starts_with("keryx-hooks cannot load its secret rules: ")
            && reason.contains("`security.rules[0]`: rule `x`: invalid `regex`: unclosed group"),
        "{reason}"
    );
    let (run, checks) = doctor_checks(&env);
    run.code(1);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0]["status"], "fail");
    let detail = checks[0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("keryx-hooks cannot load its secret rules") && detail.contains(&message),
        "{detail}\nvs the gate's: {reason}"
    );
    assert!(detail.contains("deny every prompt"), "{detail}");

    // A syntax error, with its line and column, is one problem.
    runtime_toml(&env, "profile = \"read-only-review\"\n[trust\n");
    let (run, checks) = doctor_checks(&env);
    run.code(1);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    let detail = checks[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("is not valid TOML at line 2, column 7")
            && detail.contains("the profile is the strictest (`unattended-untrusted`)"),
        "{detail}"
    );

    // Unknown keys warn and name the nearest known one; wrong types fail
    // where they change a guard and warn elsewhere.
    runtime_toml(
        &env,
        "profile = \"read-only-review\"\n[learning]\nenabeld = true\nkeep_files = \"3\"\n\
         [ctx_guard]\nmax_cat_bytes = \"1k\"\n[imapct]\nenabled = true\n",
    );
    let (_, checks) = doctor_checks(&env);
    let got: Vec<(String, String, String)> = checks
        .iter()
        .map(|c| {
            (
                c["status"].as_str().unwrap().to_owned(),
                c["detail"].as_str().unwrap().to_owned(),
                c["fix"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let has = |status: &str, detail: &str| {
        got.iter()
            .any(|(s, d, _)| s == status && d.contains(detail))
    };
    assert!(
        has(
            "fail",
            "`ctx_guard.max_cat_bytes` (line 6) must be a non-negative integer, not a string"
        ),
        "{got:#?}"
    );
    assert!(
        has(
            "warn",
            "unknown key `learning.enabeld` (line 3), which keryx-hooks does not read; did you mean `learning.enabled`?"
        ),
        "{got:#?}"
    );
    assert!(
        has(
            "warn",
            "`learning.keep_files` (line 4) must be a non-negative integer"
        ),
        "{got:#?}"
    );
    assert!(
        has("warn", "unknown table `imapct` (line 7)") && has("warn", "did you mean `impact`?"),
        "{got:#?}"
    );
    assert_eq!(got.len(), 4, "{got:#?}");
    assert!(
        got.iter()
            .any(|(_, _, fix)| fix.starts_with("rename it to `learning.enabled` in `")),
        "{got:#?}"
    );

    runtime_toml(&env, "profile = \"read-only-review\"\n");
    assert_one_ok_check(&env, |d| d.ends_with("loads; profile `read-only-review`"));
}

#[test]
fn a_runtime_toml_over_1_mib_is_refused_not_cut_short() {
    let env = Env::new();
    // Valid TOML in its first MiB, so a reader that stops there sees a
    // well-formed file with pinning off.
    let mut text = "[trust]\npin_scripts = false\n".to_owned();
    while text.len() <= 1024 * 1024 {
        text.push_str("# a long comment line that pads the file past one MiB\n");
    }
    runtime_toml(&env, &text);
    let run = env.run(&["list", "--json"]);
    run.code(0);
    let v = run.json();
    assert_eq!(v["projectTrust"]["pinScripts"], true, "{v}");
    assert!(
        v["projectTrust"]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("is larger than 1 MiB, so it is not a settings file"),
        "{v}"
    );
    assert_eq!(v["profile"], "unattended-untrusted");
}

/// `[export]` of a fixture as JSON, for the schema.
fn export_json(item: &toml_edit::Item) -> serde_json::Value {
    fn value(v: &toml_edit::Value) -> serde_json::Value {
        match v {
            toml_edit::Value::String(s) => serde_json::json!(s.value()),
            toml_edit::Value::Integer(i) => serde_json::json!(i.value()),
            toml_edit::Value::Boolean(b) => serde_json::json!(b.value()),
            toml_edit::Value::InlineTable(t) => {
                serde_json::Value::Object(t.iter().map(|(k, v)| (k.to_owned(), value(v))).collect())
            }
            other => panic!("no [export] value looks like {other}"),
        }
    }
    let t = item.as_table_like().expect("[export] is a table");
    serde_json::Value::Object(
        t.iter()
            .map(|(k, v)| (k.to_owned(), value(v.as_value().expect("a value"))))
            .collect(),
    )
}

/// schema/export-settings.schema.json and the exporter's own reader accept
/// and refuse the same `[export]` fixtures.
#[test]
fn export_settings_fixtures_agree_with_the_schema_and_the_reader() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema/export-settings.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/export");
    let mut seen = 0;
    for (dir, valid) in [("valid", true), ("invalid", false)] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let path = entry.path();
            let text = std::fs::read_to_string(&path).unwrap();
            let doc: toml_edit::DocumentMut = text.parse().unwrap();
            let json = export_json(&doc["export"]);
            let errors: Vec<String> = validator
                .iter_errors(&json)
                .map(|e| e.to_string())
                .collect();
            assert_eq!(
                errors.is_empty(),
                valid,
                "schema on {}: {json} {errors:?}",
                path.display()
            );
            let read = keryx_hooks::export::settings::resolve(std::slice::from_ref(&path));
            assert_eq!(
                read.is_ok(),
                valid,
                "reader on {}: {read:?}",
                path.display()
            );
            if let Err(why) = read {
                assert!(why.contains("export"), "{why}");
            }
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} fixtures");
}
