//! Many processes at once, as hosts and users produce them: 64 events of
//! one session, ten installers racing on the same host files, and trust
//! being granted, withdrawn or invalidated while events fire.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::temp_files;
use crate::common::{Env, Run, claude_bash, claude_payload, project_hooks, sh_hook, user_hooks};

/// Starts `run claude-code <event>` with `payload` written and stdin closed.
fn start(env: &Env, dir: &Path, event: &str, payload: &Value) -> Child {
    let mut c = env
        .cmd(&["run", "claude-code", event])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    c
}

/// 64 `run` processes of one session at once: 48 PreToolUse calls with
/// distinct tool call ids and 8 UserPromptSubmit, both gated, and 8
/// PostToolUse observed. Every invocation is recorded exactly once, every
/// line is JSON, each hook ran once per event, and the session state
/// counted every event.
#[test]
fn concurrency_64_runs_on_one_session_record_every_invocation_once() {
    let env = Env::new();
    let ran = env.project.join("ran.log");
    let log = |tag: &str| {
        format!(
            "cat > /dev/null; echo \"{tag} $KERYX_HOOK_EVENT\" >> {}",
            ran.display()
        )
    };
    user_hooks(
        &env,
        json!({
            "PreToolUse": [sh_hook("gate64", "gate", &log("gate"))],
            "UserPromptSubmit": [sh_hook("gate64", "gate", &log("gate"))],
            "PostToolUse": [sh_hook("obs64", "observe", &log("obs"))],
        }),
    );
    let pre = claude_payload(&env, "PreToolUse-basic-Bash.json");
    let session = pre["session_id"].as_str().unwrap().to_owned();
    let mut events: Vec<(&str, Value, Option<String>)> = Vec::new();
    for i in 0..48 {
        let id = format!("toolu_par_{i:02}");
        events.push(("PreToolUse", claude_bash(&env, &id, "ls"), Some(id)));
    }
    for i in 0..8 {
        let id = format!("toolu_post_{i:02}");
        let mut p = claude_payload(&env, "PostToolUse-basic-Bash.json");
        p["session_id"] = json!(session);
        p["tool_use_id"] = json!(id);
        events.push(("PostToolUse", p, Some(id)));
        let mut p = claude_payload(&env, "UserPromptSubmit-basic.json");
        p["session_id"] = json!(session);
        p["prompt"] = json!(format!("prompt {i}"));
        events.push(("UserPromptSubmit", p, None));
    }
    assert_eq!(events.len(), 64);
    let children: Vec<Child> = events
        .iter()
        .map(|(ev, p, _)| start(&env, &env.project, ev, p))
        .collect();
    for (c, (ev, _, _)) in children.into_iter().zip(&events) {
        let run = Run::from(c.wait_with_output().unwrap());
        run.code(0);
        assert_eq!(
            run.stdout, "",
            "{ev}: a clean gate is an allow, which is silence"
        );
    }

    let lines = env.records("claude-code", &session);
    let mut per: BTreeMap<(String, String), usize> = BTreeMap::new();
    for l in &lines {
        assert_eq!(l["type"], "hook_invocation");
        let key = (
            l["correlationId"].as_str().unwrap().to_owned(),
            l["record"]["hookId"].as_str().unwrap().to_owned(),
        );
        *per.entry(key).or_default() += 1;
    }
    assert!(
        per.values().all(|n| *n == 1),
        "an invocation was recorded twice: {:?}",
        per.iter().filter(|(_, n)| **n > 1).collect::<Vec<_>>()
    );
    for (ev, _, id) in &events {
        if let Some(id) = id {
            let hook = if *ev == "PreToolUse" {
                "gate64"
            } else {
                "obs64"
            };
            assert!(
                per.contains_key(&(id.clone(), hook.to_owned())),
                "no {hook} record for {id}"
            );
        }
    }
    // Events without a tool call id correlate by the session's sequence:
    // eight distinct numbers, each taken by exactly one event.
    let seqs: BTreeSet<u64> = per
        .keys()
        .filter(|(c, h)| h == "gate64" && c.starts_with(&format!("{session}-")))
        .map(|(c, _)| c.rsplit('-').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(seqs.len(), 8, "{seqs:?}");
    assert!(seqs.iter().all(|s| (1..=64).contains(s)), "{seqs:?}");

    let ran = std::fs::read_to_string(&ran).unwrap();
    assert_eq!(ran.matches("gate PreToolUse").count(), 48);
    assert_eq!(ran.matches("gate UserPromptSubmit").count(), 8);
    assert_eq!(ran.matches("obs PostToolUse").count(), 8);

    let state: Value = serde_json::from_slice(
        &std::fs::read(env.session_dir("claude-code", &session).join("state.json")).unwrap(),
    )
    .expect("state.json parses");
    assert_eq!(state["seq"], 64, "{state}");
    assert_eq!(state["stopBlocks"], 0);
    assert!(
        state["runId"].as_str().is_some_and(|r| !r.is_empty()),
        "{state}"
    );
    // Every answer left for re-deliveries is finished and names one of
    // these calls: a slot (4 KiB, NUL-ended JSON, in `slots`) holds the
    // latest call that used it, and a call that found its slot busy has a
    // file of its own.
    let calls = env
        .home
        .join(format!(".local/state/keryx/sessions/calls-{session}"));
    let keys: BTreeSet<String> = events
        .iter()
        .filter_map(|(ev, _, id)| id.as_ref().map(|id| format!("{ev}:{id}")))
        .collect();
    let mut answers = 0;
    for e in std::fs::read_dir(&calls).unwrap() {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        if path.file_name().unwrap() == "slots" {
            for slot in bytes.chunks(4096) {
                let end = slot.iter().position(|&b| b == 0).unwrap_or(slot.len());
                if end == 0 {
                    continue;
                }
                let answer: Value =
                    serde_json::from_slice(&slot[..end]).expect("a slot record parses");
                assert_eq!(answer["pending"], false, "{answer}");
                // `<event>:<tool call id>:<digest of the question>`.
                let key = answer["key"].as_str().unwrap_or_default();
                let call = key.rsplit_once(':').map_or(key, |(call, _)| call);
                assert!(keys.contains(call), "{answer}");
                answers += 1;
            }
        } else {
            let answer: Value =
                serde_json::from_slice(&bytes).expect("a de-duplication answer parses");
            assert_eq!(answer["pending"], false, "{}: {answer}", path.display());
            answers += 1;
        }
    }
    assert!((1..=56).contains(&answers), "{answers} answers");
}

/// Ten `install claude-code codex` at once into one home: each file is
/// valid, holds the foreign entries and ours exactly once, nothing is left
/// half-written, and one more install changes no byte.
#[test]
fn concurrency_10_installs_into_one_home_leave_valid_files_with_our_entries_once() {
    let env = Env::new();
    let claude_seed = "{\n  \"model\": \"opus\",\n  \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify.sh\"}]}]}\n}\n";
    let codex_seed = "# mine\nmodel = \"o3\"\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n";
    let claude_file = env.write(env.claude_settings(), claude_seed);
    let codex_file = env.write(env.home.join(".codex/config.toml"), codex_seed);
    user_hooks(&env, json!({}));
    let children: Vec<Child> = (0..10)
        .map(|_| {
            env.cmd(&["install", "claude-code", "codex"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        Run::from(c.wait_with_output().unwrap()).code(0);
    }
    let check = |host: &str, text: &str| {
        for (ev, _) in keryx_hooks::hosts::adapter(host).unwrap().wired_events() {
            let needle = format!(" run {host} {ev} --snapshot ");
            assert_eq!(text.matches(&needle).count(), 1, "{needle} in\n{text}");
        }
    };
    let claude_text = std::fs::read_to_string(&claude_file).unwrap();
    keryx_hooks::install::hostfile::json::parse(&claude_text).expect("valid JSON");
    assert!(claude_text.starts_with("{\n  \"model\": \"opus\",\n"));
    assert_eq!(claude_text.matches("notify.sh").count(), 1);
    check("claude-code", &claude_text);
    let codex_text = std::fs::read_to_string(&codex_file).unwrap();
    let doc: toml_edit::DocumentMut = codex_text.parse().expect("valid TOML");
    assert_eq!(
        doc["mcp_servers"]["docs"]["command"].as_str(),
        Some("docs-mcp")
    );
    check("codex", &codex_text);
    for f in [&claude_file, &codex_file] {
        let bak = f.with_file_name(format!(
            "{}.keryx-hooks.bak",
            f.file_name().unwrap().to_string_lossy()
        ));
        let seed = if f == &claude_file {
            claude_seed
        } else {
            codex_seed
        };
        assert_eq!(std::fs::read_to_string(bak).unwrap(), seed);
    }
    assert_eq!(temp_files(&env.home), Vec::<std::path::PathBuf>::new());
    let snapshots = env.snapshot_root();
    let dirs: Vec<_> = std::fs::read_dir(&snapshots).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 1, "one snapshot");
    let m = keryx_hooks::install::manifest::read(&dirs[0].path()).unwrap();
    keryx_hooks::install::manifest::verify(&dirs[0].path(), &m).unwrap();

    env.run(&["install", "claude-code", "codex"]).code(0);
    assert_eq!(std::fs::read_to_string(&claude_file).unwrap(), claude_text);
    assert_eq!(std::fs::read_to_string(&codex_file).unwrap(), codex_text);
}

/// Runs `args` in `dir` until `stop`, returning how many runs succeeded.
fn churn(env: &Env, dir: &Path, args: &[&[&str]], stop: &AtomicBool) -> usize {
    let mut ok = 0;
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) {
        let run = Run::from(
            env.cmd(args[i % args.len()])
                .current_dir(dir)
                .output()
                .unwrap(),
        );
        assert!(
            run.code == 0,
            "{:?} failed while events fired:\n{}",
            args[i % args.len()],
            run.stderr
        );
        ok += 1;
        i += 1;
    }
    ok
}

/// `trust` and `untrust` rewriting the store while events fire. A trusted
/// project's gate either runs (trusted at that moment) or is held back; a
/// project whose file was never trusted never runs, whatever the store is
/// going through; and the store always parses.
#[test]
fn concurrency_trust_and_untrust_while_events_fire_never_run_untrusted_content() {
    let env = Env::new();
    let good_log = env.project.join("good.log");
    let evil_log = env.project.join("evil.log");
    let gate = |tag: &str, log: &Path| json!({"PreToolUse": [sh_hook(tag, "gate", &format!("echo x >> {}; echo {tag} >&2; exit 2", log.display()))]});
    project_hooks(&env, gate("good-gate", &good_log));
    env.run(&["trust", "--yes"]).code(0);
    let never = env.project.parent().unwrap().join("never");
    std::fs::create_dir_all(never.join(".git")).unwrap();
    env.write(
        never.join(".metaproject/hooks.json"),
        json!({"schemaVersion": "1.0.0", "hooks": gate("evil-gate", &evil_log)}).to_string(),
    );
    let churners: Vec<_> = (0..2)
        .map(|i| {
            let dir = env.project.parent().unwrap().join(format!("other-{i}"));
            std::fs::create_dir_all(dir.join(".git")).unwrap();
            env.write(
                dir.join(".metaproject/hooks.json"),
                json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [sh_hook("oo", "observe", "true")]}}).to_string(),
            );
            dir
        })
        .collect();

    let stop = AtomicBool::new(false);
    let (answers, churned) = std::thread::scope(|s| {
        let mut handles = vec![s.spawn(|| {
            churn(
                &env,
                &env.project,
                &[&["untrust"], &["trust", "--yes"]],
                &stop,
            )
        })];
        for dir in &churners {
            handles.push(s.spawn(|| churn(&env, dir, &[&["trust", "--yes"], &["untrust"]], &stop)));
        }
        let mut answers = Vec::new();
        let until = Instant::now() + Duration::from_secs(6);
        let mut i = 0;
        while Instant::now() < until || i < 40 {
            let batch: Vec<(bool, Child)> = (0..8)
                .map(|k| {
                    i += 1;
                    let in_never = k % 2 == 1;
                    let dir = if in_never { &never } else { &env.project };
                    let mut p = claude_bash(&env, &format!("tc-{i}"), "ls");
                    p["cwd"] = json!(dir);
                    (in_never, start(&env, dir, "PreToolUse", &p))
                })
                .collect();
            for (in_never, c) in batch {
                answers.push((in_never, Run::from(c.wait_with_output().unwrap())));
            }
        }
        stop.store(true, Ordering::SeqCst);
        let churned: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        (answers, churned)
    });
    assert!(churned > 10, "the store was rewritten only {churned} times");

    let mut good = 0;
    for (in_never, run) in &answers {
        run.code(0);
        if !super::answered(run) {
            continue; // held back: the trusted project was untrusted then
        }
        let reason = crate::common::deny_reason(run);
        assert!(
            !in_never,
            "a never-trusted project's gate answered: {reason}"
        );
        assert_eq!(reason, "good-gate");
        good += 1;
    }
    assert!(!evil_log.exists(), "a never-trusted hook ran");
    let ran = std::fs::read_to_string(&good_log).unwrap_or_default();
    assert_eq!(
        ran.lines().count(),
        good,
        "every run of the gate answered, once"
    );
    assert!(
        good > 0,
        "the trusted gate never ran in {} events",
        answers.len()
    );
    let store = env.home.join(".local/share/keryx/hook-trust.json");
    serde_json::from_slice::<Value>(&std::fs::read(&store).unwrap()).expect("the store parses");
}

/// A writer swapping the hooks file between the trusted version and an
/// untrusted one (atomic renames) while events fire: the untrusted version
/// never runs, the trusted one does.
#[test]
fn concurrency_a_racing_writer_swapping_the_hooks_file_never_runs_the_untrusted_version() {
    let env = Env::new();
    let good_log = env.project.join("good.log");
    let evil_log = env.project.join("evil.log");
    let text = |tag: &str, log: &Path| {
        serde_json::to_string_pretty(&json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            sh_hook(tag, "gate", &format!("echo x >> {}; echo {tag} >&2; exit 2", log.display()))
        ]}}))
        .unwrap()
    };
    let good = text("good-gate", &good_log);
    let evil = text("evil-gate", &evil_log);
    env.write(env.project_hooks(), &good);
    env.run(&["trust", "--yes"]).code(0);

    let stop = AtomicBool::new(false);
    let answers = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let dir = env.project.join(".metaproject");
            let mut swaps = 0;
            while !stop.load(Ordering::SeqCst) {
                for body in [&evil, &good] {
                    let tmp = dir.join(format!(".swap-{swaps}"));
                    std::fs::write(&tmp, body).unwrap();
                    std::fs::rename(&tmp, env.project_hooks()).unwrap();
                    swaps += 1;
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
            swaps
        });
        let mut answers = Vec::new();
        for i in 0..12 {
            let batch: Vec<Child> = (0..8)
                .map(|k| {
                    start(
                        &env,
                        &env.project,
                        "PreToolUse",
                        &claude_bash(&env, &format!("sw-{i}-{k}"), "ls"),
                    )
                })
                .collect();
            for c in batch {
                answers.push(Run::from(c.wait_with_output().unwrap()));
            }
        }
        stop.store(true, Ordering::SeqCst);
        assert!(writer.join().unwrap() > 20);
        answers
    });
    let mut good_runs = 0;
    for run in &answers {
        run.code(0);
        // Silence, or a notice that the changed file's hooks did not run.
        if super::answered(run) {
            let reason = crate::common::deny_reason(run);
            assert_eq!(reason, "good-gate", "the untrusted version answered");
            good_runs += 1;
        }
    }
    assert!(!evil_log.exists(), "the untrusted version ran");
    assert!(good_runs > 0, "the trusted version never ran");
    assert_eq!(
        std::fs::read_to_string(&good_log).unwrap().lines().count(),
        good_runs
    );
}
