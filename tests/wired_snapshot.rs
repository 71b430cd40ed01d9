//! `run` by hand and `explain` read the snapshot the host's wiring names,
//! as the host does, unless `--snapshot` names one; `explain` says which
//! on stderr, and `run` only to a person at a terminal, never on stdout.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{Env, claude_bash, read_json};

/// A hook source at `dir` whose one PreToolUse gate denies with `reason`.
fn gate_source(env: &Env, dir: &Path, reason: &str) {
    env.write(
        dir.join("hooks.json"),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            {"id": "says", "class": "gate", "runsIn": "unsandboxed",
             "command": {"argv": ["/bin/sh", "-c", format!("cat >/dev/null; echo '{reason}' >&2; exit 2")]}}
        ]}})
        .to_string(),
    );
}

/// Claude Code's answer when a gate denies with `reason`.
fn denied(reason: &str) -> String {
    format!(
        "{}\n",
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
               "permissionDecision": "deny", "permissionDecisionReason": reason}})
    )
}

/// A Bash call, each with its own id: a repeated call is answered as the
/// first one was, whatever the hooks are now.
fn payload(env: &Env) -> String {
    call(env).to_string()
}

fn call(env: &Env) -> Value {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    claude_bash(env, &format!("toolu_wired_{n}"), "ls")
}

/// Every command line our wiring put in `settings`.
fn wired_commands(settings: &Path) -> Vec<String> {
    let v: Value = read_json(settings);
    v["hooks"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|groups| groups.as_array().unwrap().clone())
        .flat_map(|g| g["hooks"].as_array().unwrap().clone())
        .map(|h| h["command"].as_str().unwrap().to_owned())
        .filter(|c| c.contains(" run claude-code "))
        .collect()
}

#[test]
fn run_by_hand_reads_the_snapshot_the_host_runs() {
    let env = Env::new();
    gate_source(&env, &env.keryx_home(), "from the snapshot");
    env.run(&["install", "claude-code"]).code(0);
    gate_source(&env, &env.keryx_home(), "from the live file");
    let key = env.snapshot_key();

    // The host always names the snapshot: the lookup is only ever made by
    // hand.
    let commands = wired_commands(&env.claude_settings());
    assert!(!commands.is_empty());
    for c in &commands {
        // By its directory: no variable can point the host's shim elsewhere.
        let dir = env.snapshot_root().join(&key);
        assert!(
            c.ends_with(&format!(" --snapshot {}", dir.display())),
            "{c}"
        );
    }
    let host = env.run_stdin(
        &["run", "claude-code", "PreToolUse", "--snapshot", &key],
        payload(&env),
    );
    host.code(0);
    assert_eq!(
        (host.stdout.as_str(), host.stderr.as_str()),
        (denied("from the snapshot").as_str(), "")
    );

    // By hand, without a terminal: the same answer, nothing else said.
    let by_hand = env.run_stdin(&["run", "claude-code", "PreToolUse"], payload(&env));
    by_hand.code(0);
    assert_eq!(
        (by_hand.stdout.as_str(), by_hand.stderr.as_str()),
        (denied("from the snapshot").as_str(), "")
    );

    // At a terminal, a person is told which file was read; stdout is
    // still only the answer.
    let at_terminal = env.run_on_terminal(&["run", "claude-code", "PreToolUse"], payload(&env));
    at_terminal.code(0);
    assert_eq!(
        at_terminal.stdout,
        format!(
            "keryx-hooks: reading snapshot `{key}` (what claude-code runs: \
             `~/.claude/settings.json` wires it), not `~/.keryx/hooks.json`\n{}",
            denied("from the snapshot")
        )
    );
    // The host's own command line says nothing more at a terminal.
    let named = env.run_on_terminal(
        &["run", "claude-code", "PreToolUse", "--snapshot", &key],
        payload(&env),
    );
    assert_eq!(named.stdout, denied("from the snapshot"));

    // Nothing wired: the live file, and nothing to say.
    env.run(&["uninstall", "claude-code"]).code(0);
    let live = env.run_on_terminal(&["run", "claude-code", "PreToolUse"], payload(&env));
    assert_eq!(live.stdout, denied("from the live file"));
}

#[test]
fn explain_says_on_stderr_which_hooks_file_it_reads() {
    let env = Env::new();
    gate_source(&env, &env.keryx_home(), "live or snapshot");
    let explain = |extra: &[&str]| {
        let mut args = vec!["explain", "claude-code", "PreToolUse", "--json"];
        args.extend_from_slice(extra);
        let run = env.run_stdin(&args, payload(&env));
        run.code(0);
        (run.json(), run.stderr.clone())
    };
    let (v, stderr) = explain(&[]);
    assert_eq!(
        stderr,
        "note: reading the live `~/.keryx/hooks.json`: no claude-code wiring names a snapshot\n"
    );
    assert_eq!(
        (&v["userLayer"], &v["snapshot"], &v["snapshotFrom"]),
        (&json!("live"), &Value::Null, &Value::Null)
    );

    env.run(&["install", "claude-code"]).code(0);
    let key = env.snapshot_key();
    let (v, stderr) = explain(&[]);
    assert_eq!(
        stderr,
        format!(
            "note: reading snapshot `{key}` (what claude-code runs: `~/.claude/settings.json` \
             wires it), not `~/.keryx/hooks.json`\n"
        )
    );
    assert_eq!(
        (&v["userLayer"], &v["snapshot"], &v["snapshotFrom"]),
        (&json!("wired"), &json!(key), &json!(env.claude_settings()))
    );

    let (v, stderr) = explain(&["--snapshot", "keryx-000000000000"]);
    assert_eq!(
        stderr,
        "note: reading snapshot `keryx-000000000000` (named by --snapshot), not `~/.keryx/hooks.json`\n"
    );
    assert_eq!(v["userLayer"], "named");
    assert_eq!(v["answer"]["kind"], "config-invalid", "{v:#}");
}

/// With several wirings of the host recorded, the user-scope one wins; a
/// project-scope one counts only in its project.
#[test]
fn a_user_wiring_wins_and_a_project_wiring_counts_in_its_project() {
    let env = Env::new();
    let team = env.home.join("team-hooks");
    gate_source(&env, &env.keryx_home(), "user source");
    gate_source(&env, &team, "team source");
    let team_key = crate::common::snapshot_key_of(&team);
    env.run(&[
        "install",
        "claude-code",
        "--scope",
        "project",
        "--source",
        team.to_str().unwrap(),
    ])
    .code(0);
    let by_hand = |cwd: &Path| {
        let mut p = call(&env);
        p["cwd"] = json!(cwd);
        let run = env.run_stdin(&["explain", "claude-code", "PreToolUse"], p.to_string());
        run.code(0);
        let answer = env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string());
        (answer.stdout, run.stderr)
    };
    assert_eq!(
        by_hand(&env.project),
        (
            denied("team source"),
            format!(
                "note: reading snapshot `{team_key}` (what claude-code runs: `{}` wires it), \
                 not `~/.keryx/hooks.json`\n",
                env.project.join(".claude/settings.json").display()
            )
        )
    );
    // Another directory is not that project.
    let elsewhere = env.home.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    assert_eq!(
        by_hand(&elsewhere),
        (
            denied("user source"),
            "note: reading the live `~/.keryx/hooks.json`: no claude-code wiring names a snapshot\n"
                .to_owned()
        )
    );

    env.run(&["install", "claude-code"]).code(0);
    gate_source(&env, &env.keryx_home(), "changed since");
    let user_key = env.snapshot_key();
    let user_wins = (
        denied("user source"),
        format!(
            "note: reading snapshot `{user_key}` (what claude-code runs: \
             `~/.claude/settings.json` wires it), not `~/.keryx/hooks.json`\n"
        ),
    );
    assert_eq!(by_hand(&env.project), user_wins);
    assert_eq!(by_hand(&elsewhere), user_wins);
}

/// A manifest still records a wiring another install has since pointed
/// at another snapshot: the key read is the one the host file names now.
#[test]
fn the_snapshot_read_is_the_one_the_host_file_names_now() {
    let env = Env::new();
    let other = env.home.join("other-hooks");
    gate_source(&env, &env.keryx_home(), "first install");
    gate_source(&env, &other, "second install");
    env.run(&["install", "claude-code"]).code(0);
    env.run(&[
        "install",
        "claude-code",
        "--source",
        other.to_str().unwrap(),
    ])
    .code(0);
    let run = env.run_stdin(&["run", "claude-code", "PreToolUse"], payload(&env));
    assert_eq!(run.stdout, denied("second install"));
    let explain = env.run_stdin(
        &["explain", "claude-code", "PreToolUse", "--json"],
        payload(&env),
    );
    assert_eq!(
        explain.json()["snapshot"],
        json!(crate::common::snapshot_key_of(&other))
    );
}

/// Copies the installed snapshot `key` to `root`, its hooks.json replaced
/// by an empty layer and its manifest rewritten to match, as an agent that
/// wanted the built-ins off would.
fn forge_snapshot(env: &Env, root: &Path, key: &str) {
    let from = env.snapshot_root().join(key);
    let to = root.join(key);
    std::fs::create_dir_all(&to).unwrap();
    let empty = r#"{"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [{"id": "keryx.ctx-guard", "enabled": false}]}}"#;
    env.write(to.join("hooks.json"), empty);
    let mut manifest: Value = read_json(from.join("manifest.json"));
    for f in manifest["files"].as_array_mut().unwrap() {
        if f["path"] == "hooks.json" {
            f["sha256"] = json!(keryx_hooks::hash::digest_bytes(empty.as_bytes()));
        }
    }
    env.write(to.join("manifest.json"), manifest.to_string());
}

/// The exact command the host runs for PreToolUse, run as the host runs it
/// (`sh -c`) with `extra` in its environment.
fn as_the_host_runs(env: &Env, extra: &[(&str, &Path)], stdin: String) -> crate::common::Run {
    let command = wired_commands(&env.claude_settings())
        .into_iter()
        .find(|c| c.contains(" PreToolUse "))
        .unwrap();
    let mut sh = env.program("/bin/sh");
    sh.args(["-c", &command]);
    for (k, v) in extra {
        sh.env(k, v);
    }
    crate::common::run_fed(sh, stdin.into_bytes())
}

#[test]
fn no_variable_points_the_hosts_shim_at_another_snapshot() {
    let env = Env::new();
    gate_source(&env, &env.keryx_home(), "from the snapshot");
    env.run(&["install", "claude-code"]).code(0);
    let key = env.snapshot_key();
    // An agent's `export KERYX_SNAPSHOT_ROOT=…` in ~/.bashrc, or a HOME
    // moved by the host's environment, with a forged snapshot there.
    let elsewhere = env.home.parent().unwrap().join("elsewhere");
    forge_snapshot(&env, &elsewhere.join(".agentic/hooks-snapshot"), &key);
    for (var, value) in [
        (
            "KERYX_SNAPSHOT_ROOT",
            elsewhere.join(".agentic/hooks-snapshot"),
        ),
        ("HOME", elsewhere.clone()),
    ] {
        let r = as_the_host_runs(&env, &[(var, &value)], payload(&env));
        r.code(0);
        assert_eq!(r.stdout, denied("from the snapshot"), "{var}: {}", r.stderr);
    }
}

#[test]
fn a_wiring_naming_a_snapshot_inside_the_project_is_refused() {
    let env = Env::new();
    gate_source(&env, &env.keryx_home(), "from the snapshot");
    env.run(&["install", "claude-code"]).code(0);
    let key = env.snapshot_key();
    let planted = env.project.join(".cache/snaps");
    forge_snapshot(&env, &planted, &key);
    let r = env.run_stdin(
        &[
            "run",
            "claude-code",
            "PreToolUse",
            "--snapshot",
            &planted.join(&key).to_string_lossy(),
        ],
        payload(&env),
    );
    r.code(0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "deny",
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("resolves inside the project"),
        "{}",
        r.stdout
    );
}
