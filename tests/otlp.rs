//! `keryx-hooks export` against a loopback OTLP/HTTP receiver
//! (tests/otlp/receiver.py) that decodes every request with the official
//! OpenTelemetry protobuf definitions (`opentelemetry-proto`, installed by
//! tests/otlp/install.sh, which tests/run.sh runs). Records are written by
//! real `keryx-hooks run` calls; the receiver goes down and comes back
//! mid-stream, refuses, and answers partial successes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Env, aws_key, claude_bash, json_lines};

fn python() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/otlp-venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run tests/otlp/install.sh (tests/run.sh does) to install the receiver's opentelemetry-proto",
        p.display()
    );
    p
}

/// A running receiver, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
}

impl Receiver {
    fn start(out: &Path, port: u16, extra: &[&str]) -> Receiver {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/receiver.py");
        let mut child = Command::new(python())
            .arg(script)
            .args(["--port", &port.to_string(), "--out"])
            .arg(out)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the receiver did not start: {line:?}"));
        Receiver { child, port }
    }

    /// Waits for a `--stop-after` receiver to exit by itself.
    fn wait_exit(mut self) {
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the receiver did not stop"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn configure(env: &Env, port: u16) {
    configure_with(env, port, "");
}

fn configure_with(env: &Env, port: u16, more: &str) {
    env.write(
        env.keryx_home().join("runtime.toml"),
        format!(
            "[export]\nendpoint = \"http://127.0.0.1:{port}\"\nheaders = {{ authorization = \"Bearer test-token\" }}\n{more}"
        ),
    );
}

/// `n` real shim calls: every other one a command the context guard denies.
fn calls(env: &Env, from: usize, n: usize) {
    for i in from..from + n {
        let command = if i % 2 == 0 {
            "cat .env".to_owned()
        } else {
            format!("ls -la dir{i}")
        };
        env.run_stdin(
            &["run", "claude-code", "PreToolUse"],
            claude_bash(env, &format!("toolu_{i:03}"), &command).to_string(),
        );
    }
}

/// Every line the shim wrote, across sessions.
fn local_records(env: &Env) -> Vec<Value> {
    let sessions = env.home.join(".local/state/keryx/sessions");
    let mut out = Vec::new();
    for d in std::fs::read_dir(sessions).unwrap().flatten() {
        if let Ok(text) = std::fs::read_to_string(d.path().join("records.jsonl")) {
            out.extend(json_lines(&text));
        }
    }
    out
}

/// What identifies a record: its call and hook.
fn key_of_local(r: &Value) -> String {
    format!(
        "{}|{}|{}|{}",
        r["correlationId"].as_str().unwrap_or(""),
        r["record"]["hookId"].as_str().unwrap_or(""),
        r["kind"].as_str().unwrap_or(""),
        r["time"].as_str().unwrap_or("")
    )
}

/// The decoded requests the receiver wrote.
fn received(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out)
        .map(|t| json_lines(&t))
        .unwrap_or_default()
}

/// A decoded attribute list as key → AnyValue (as MessageToDict writes it).
fn attrs(list: &Value) -> BTreeMap<String, Value> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|kv| (kv["key"].as_str().unwrap().to_owned(), kv["value"].clone()))
        .collect()
}

fn str_attr(a: &BTreeMap<String, Value>, k: &str) -> String {
    a.get(k)
        .and_then(|v| v["stringValue"].as_str())
        .unwrap_or_else(|| panic!("no string attribute {k}: {a:?}"))
        .to_owned()
}

/// Every log record received, in order.
fn log_records(reqs: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for r in reqs.iter().filter(|r| r["path"] == "/v1/logs") {
        assert!(r.get("error").is_none(), "undecodable: {r}");
        assert_eq!(r["headers"]["authorization"], "Bearer test-token");
        for rl in r["request"]["resourceLogs"].as_array().unwrap() {
            let res = attrs(&rl["resource"]["attributes"]);
            assert_eq!(str_attr(&res, "service.name"), "keryx-hooks");
            for sl in rl["scopeLogs"].as_array().unwrap() {
                assert_eq!(sl["scope"]["name"], "keryx-hooks");
                out.extend(sl["logRecords"].as_array().unwrap().iter().cloned());
            }
        }
    }
    out
}

fn key_of_received(l: &Value) -> String {
    let a = attrs(&l["attributes"]);
    let s = |k: &str| {
        a.get(k)
            .and_then(|v| v["stringValue"].as_str())
            .unwrap_or("")
            .to_owned()
    };
    format!(
        "{}|{}|{}|{}",
        s("correlationId"),
        s("record.hookId"),
        s("kind"),
        s("time")
    )
}

/// Per hook id: runs and summed duration from the metrics received.
fn metric_totals(reqs: &[Value]) -> BTreeMap<String, (u64, u64, f64)> {
    let mut out: BTreeMap<String, (u64, u64, f64)> = BTreeMap::new();
    for r in reqs.iter().filter(|r| r["path"] == "/v1/metrics") {
        assert!(r.get("error").is_none(), "undecodable: {r}");
        for rm in r["request"]["resourceMetrics"].as_array().unwrap() {
            for sm in rm["scopeMetrics"].as_array().unwrap() {
                for m in sm["metrics"].as_array().unwrap() {
                    match m["name"].as_str().unwrap() {
                        "keryx.hook.runs" => {
                            assert_eq!(
                                m["sum"]["aggregationTemporality"],
                                "AGGREGATION_TEMPORALITY_DELTA"
                            );
                            assert_eq!(m["sum"]["isMonotonic"], true);
                            for p in m["sum"]["dataPoints"].as_array().unwrap() {
                                let hook = str_attr(&attrs(&p["attributes"]), "hook.id");
                                let n: u64 = p["asInt"].as_str().unwrap().parse().unwrap();
                                out.entry(hook).or_default().0 += n;
                            }
                        }
                        "keryx.hook.duration" => {
                            assert_eq!(m["unit"], "ms");
                            for p in m["histogram"]["dataPoints"].as_array().unwrap() {
                                let hook = str_attr(&attrs(&p["attributes"]), "hook.id");
                                let n: u64 = p["count"].as_str().unwrap().parse().unwrap();
                                let e = out.entry(hook).or_default();
                                e.1 += n;
                                e.2 += p["sum"].as_f64().unwrap_or(0.0);
                            }
                        }
                        other => panic!("unexpected metric {other}"),
                    }
                }
            }
        }
    }
    out
}

/// Every local record arrived exactly once, with its fields as attributes,
/// and the metrics add up to the local records.
fn assert_exactly_once(env: &Env, out: &Path) {
    let local = local_records(env);
    let reqs = received(out);
    let logs = log_records(&reqs);
    let mut want: Vec<String> = local.iter().map(key_of_local).collect();
    let mut got: Vec<String> = logs.iter().map(key_of_received).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "every record once");
    let mut dedup = got.clone();
    dedup.dedup();
    assert_eq!(dedup.len(), got.len(), "a record arrived twice");

    let mut runs: BTreeMap<String, (u64, u64, f64)> = BTreeMap::new();
    for r in &local {
        let e = runs
            .entry(r["record"]["hookId"].as_str().unwrap().to_owned())
            .or_default();
        e.0 += 1;
        e.1 += 1;
        e.2 += r["record"]["durationMs"].as_f64().unwrap();
    }
    assert_eq!(metric_totals(&reqs), runs, "runs and durations per hook");
}

fn cursor(env: &Env) -> PathBuf {
    env.home.join(".local/state/keryx/export/cursor.json")
}

#[test]
fn every_record_arrives_once_across_a_receiver_restart() {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("received.jsonl");
    calls(&env, 0, 6);
    assert!(
        !env.home.join(".local/state/keryx/export").exists(),
        "run never touches the exporter's state"
    );

    // Down after the first batch's logs and metrics: the second batch
    // finds no collector, is tried again, and the export stops.
    let first = Receiver::start(&out, 0, &["--stop-after", "2"]);
    let port = first.port;
    configure(&env, port);
    let run = env.run(&["export", "--batch", "4", "--retries", "1"]);
    run.code(1)
        .stderr_has("export stopped")
        .stderr_has("trying again");
    first.wait_exit();
    assert_eq!(log_records(&received(&out)).len(), 4);
    let at_outage = std::fs::read(cursor(&env)).unwrap();

    // Records keep coming while it is down; an export then changes nothing.
    calls(&env, 6, 3);
    env.run(&["export", "--batch", "4", "--retries", "0"])
        .code(1);
    assert_eq!(
        std::fs::read(cursor(&env)).unwrap(),
        at_outage,
        "the cursor waits"
    );

    // Back up: the rest, once.
    let second = Receiver::start(&out, port, &[]);
    let rest = local_records(&env).len() - 4;
    env.run(&["export", "--batch", "4"])
        .code(0)
        .stdout_has(&format!(
            "exported {rest} record(s) in {} batch(es)",
            rest.div_ceil(4)
        ));
    assert_exactly_once(&env, &out);

    // --follow ships as records come, rides out a restart, and resumes.
    let mut follow = env
        .cmd(&["export", "--follow", "--batch", "3", "--interval", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    calls(&env, 9, 4);
    wait_for(&env, &out);
    drop(second);
    calls(&env, 13, 5);
    std::thread::sleep(Duration::from_millis(1500));
    let third = Receiver::start(&out, port, &[]);
    wait_for(&env, &out);
    let _ = follow.kill();
    let _ = follow.wait();
    drop(third);
    assert_exactly_once(&env, &out);

    // The fields as attributes, for one denial.
    let logs = log_records(&received(&out));
    let deny = logs
        .iter()
        .find(|l| key_of_received(l).starts_with("toolu_000|keryx.ctx-guard"))
        .expect("the first denial");
    let a = attrs(&deny["attributes"]);
    assert_eq!(str_attr(&a, "host"), "claude-code");
    assert_eq!(str_attr(&a, "record.outcome"), "deny");
    assert_eq!(str_attr(&a, "record.event"), "PreToolUse");
    assert_eq!(str_attr(&a, "tool"), "Bash");
    assert_eq!(str_attr(&a, "summary"), "cat .env");
    assert!(str_attr(&a, "record.reason").contains(".env"));
    assert_eq!(a["record.changedOutcome"]["boolValue"], true);
    assert!(a["record.durationMs"]["intValue"].is_string());
    assert_eq!(deny["severityText"], "WARN");
    assert_eq!(deny["eventName"], "keryx.hook_invocation");
    assert!(
        deny["body"]["stringValue"]
            .as_str()
            .unwrap()
            .starts_with("keryx.ctx-guard PreToolUse deny: ")
    );
    let local = local_records(&env);
    let t = local
        .iter()
        .find(|r| key_of_local(r) == key_of_received(deny))
        .unwrap()["time"]
        .as_str()
        .unwrap()
        .to_owned();
    let nanos: u64 = deny["timeUnixNano"].as_str().unwrap().parse().unwrap();
    assert_eq!(&t[..19], &format_secs(nanos / 1_000_000_000)[..19], "{t}");
}

/// Waits until every local record has arrived.
fn wait_for(env: &Env, out: &Path) {
    let started = Instant::now();
    loop {
        let want = local_records(env).len();
        let got = log_records(&received(out)).len();
        if got >= want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "only {got} of {want} records arrived"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn format_secs(secs: u64) -> String {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_refusing_collector_keeps_the_cursor_and_a_partial_success_moves_it() {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("received.jsonl");
    calls(&env, 0, 3);

    // The agent cannot start an export.
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "toolu_exp", "keryx-hooks export --follow").to_string(),
    );
    assert!(
        crate::common::deny_reason(&run).contains("only a person"),
        "{}",
        run.stdout
    );

    // No collector set: said, with where to set one.
    env.run(&["export"])
        .code(1)
        .stderr_has("no collector is set")
        .stderr_has("[export]");

    // 401 is not tried again: the export stops at once, nothing moves.
    let refusing = Receiver::start(&out, 0, &["--answer", "401"]);
    configure(&env, refusing.port);
    let started = Instant::now();
    env.run(&["export"])
        .code(1)
        .stderr_has("the collector refused the batch")
        .stderr_has("answered 401");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a 401 is not retried"
    );
    assert!(
        !cursor(&env).exists(),
        "nothing was accepted, so there is no cursor"
    );
    drop(refusing);

    // 503 is tried again, then given up on; still nothing moves.
    let busy = Receiver::start(&out, 0, &["--answer", "503"]);
    configure(&env, busy.port);
    env.run(&["export", "--retries", "1"])
        .code(1)
        .stderr_has("answered 503")
        .stderr_has("trying again")
        .stderr_has("after 2 attempt(s)");
    assert!(!cursor(&env).exists());
    drop(busy);
    assert!(
        received(&out).is_empty(),
        "refused requests are not recorded"
    );

    // A partial success is accepted: reported, and not sent again.
    let partial = Receiver::start(&out, 0, &["--partial", "1"]);
    configure(&env, partial.port);
    env.run(&["export"])
        .code(0)
        .stderr_has("rejected 1 log record(s): the test collector drops some")
        .stdout_has(&format!("exported {} record(s)", local_records(&env).len()))
        .stdout_has("the collector rejected 1 of them");
    let n = received(&out).len();
    env.run(&["export"])
        .code(0)
        .stdout_has("exported 0 record(s)");
    assert_eq!(received(&out).len(), n, "nothing is sent twice");
    drop(partial);
    assert_exactly_once(&env, &out);
}

#[test]
fn secrets_in_reasons_are_redacted_before_they_leave() {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("received.jsonl");
    let key = aws_key();
    // A reason that quotes a key, as a gate that echoes the command does.
    crate::common::user_hooks(
        &env,
        serde_json::json!({"PreToolUse": [crate::common::sh_hook(
            "echo-gate",
            "gate",
            &format!("cat >/dev/null; echo '{{\"decision\":\"deny\",\"reason\":\"saw {key} and TEAMTOK-{}\"}}'", "12345678"),
        )]}),
    );
    env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "toolu_key", &format!("aws --key {key} s3 ls")).to_string(),
    );
    let receiver = Receiver::start(&out, 0, &[]);
    // The person's own rules redact too.
    configure_with(
        &env,
        receiver.port,
        "[[security.rules]]\nid = \"team-token\"\nregex = 'TEAMTOK-[0-9]{8}'\n",
    );
    env.run(&["export"]).code(0);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains(&key), "{text}");
    assert!(!text.contains("TEAMTOK-1"), "{text}");
    assert!(text.contains("saw [REDACTED"), "{text}");
    let logs = log_records(&received(&out));
    let gate = logs
        .iter()
        .map(|l| attrs(&l["attributes"]))
        .find(|a| str_attr(a, "record.hookId") == "echo-gate")
        .expect("the gate's record");
    let reason = str_attr(&gate, "record.reason");
    assert!(reason.starts_with("saw [REDACTED"), "{reason}");
    assert!(reason.contains(" and [REDACTED"), "{reason}");
    let local = local_records(&env);
    assert!(
        local.iter().any(|r| r["record"]["reason"]
            .as_str()
            .is_some_and(|t| t.contains(&key) && t.contains("TEAMTOK-12345678"))),
        "the local record keeps what the hook said; only the export redacts"
    );
}
