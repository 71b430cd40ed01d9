//! Snapshots and drift through the real binary: every drift state produced
//! and classified by `status`, `doctor --fix` repairing them, the
//! SessionStart drift line, `kill -9` in the middle of a sync, a full disk
//! (a tiny tmpfs in a private mount namespace), wirings recorded with their
//! scope and checked where they were made, and Codex's hook review.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use keryx_hooks::install::{manifest, snapshot};
use serde_json::{Value, json};

use crate::common::{BIN, Env, Rng, Run, files_under, read_json};

const HOOKS: &str = r#"{"schemaVersion": "1.0.0", "hooks": {}}"#;

/// A hook source in `$KERYX_HOME`: hooks.json and a script beside it.
fn with_source() -> Env {
    let env = Env::new();
    env.write(env.user_hooks(), HOOKS);
    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        "#!/bin/sh\nexit 0\n",
    );
    env
}

/// Wires Claude Code the way `install claude-code` does: the snapshot
/// records the host, and every event the adapter maps runs the shim at it.
fn wire_claude(env: &Env, skip_event: Option<&str>) {
    let key = env.snapshot_key();
    snapshot::sync(
        &env.keryx_home(),
        &env.snapshot_root(),
        &["claude-code".into()],
        false,
    )
    .unwrap();
    let adapter = keryx_hooks::hosts::adapter("claude-code").unwrap();
    let mut hooks = serde_json::Map::new();
    for (event, _) in adapter.wired_events() {
        if Some(event) == skip_event {
            continue;
        }
        let command = format!(
            "'{BIN}' run claude-code {event} --snapshot {}",
            env.snapshot_root().join(&key).display()
        );
        hooks.insert(
            event.to_owned(),
            json!([{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 600}]}]),
        );
    }
    env.write(
        env.claude_settings(),
        serde_json::to_string_pretty(&json!({"hooks": hooks})).unwrap(),
    );
}

fn status(env: &Env) -> (i32, Value) {
    let r = env.run(&["status", "--json"]);
    let v = r.json();
    (r.code, v)
}

/// The state `status --json` reports for `$KERYX_HOME`.
fn state(env: &Env) -> String {
    let (code, v) = status(env);
    let s = v["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == env.snapshot_key())
        .unwrap_or_else(|| panic!("no status for the source: {v:#}"));
    let state = s["state"].as_str().unwrap_or("warning").to_owned();
    assert_eq!(code, if state == "current" { 0 } else { 1 }, "{v:#}");
    state
}

fn session_start(env: &Env) -> Run {
    let payload = json!({
        "session_id": "s-1",
        "cwd": env.project,
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    let r = env.run_stdin(
        &[
            "run",
            "claude-code",
            "SessionStart",
            "--snapshot",
            &env.snapshot_key(),
        ],
        payload.to_string(),
    );
    r.code(0);
    r
}

#[test]
fn status_with_nothing_installed_says_so() {
    let env = Env::new();
    env.run(&["status"])
        .code(0)
        .stdout_has("no hook source")
        .stdout_has(".keryx/hooks.json");
    // A directory that is not a hook source is a warning, not "never migrated".
    let (code, v) = {
        let r = env.run(&["status", "--json", "--source", "/nonexistent"]);
        (r.code, r.json())
    };
    assert_eq!(code, 1);
    assert!(
        v["sources"][0]["warning"]
            .as_str()
            .unwrap()
            .contains("not a hook source"),
        "{v:#}"
    );
}

#[test]
fn every_drift_state_is_produced_and_classified() {
    let env = with_source();
    assert_eq!(state(&env), "never_migrated");
    env.run(&["status"])
        .code(1)
        .stdout_has("never_migrated")
        .stdout_has("hint: run `keryx-hooks install <host>...`");

    // A snapshot no host uses yet.
    snapshot::sync(&env.keryx_home(), &env.snapshot_root(), &[], false).unwrap();
    assert_eq!(state(&env), "half_applied");

    // Recorded for Claude Code, but one mapped event is not wired.
    wire_claude(&env, Some("Stop"));
    assert_eq!(state(&env), "half_applied");
    env.run(&["status"])
        .code(1)
        .stdout_has("claude-code: not wired");

    wire_claude(&env, None);
    assert_eq!(state(&env), "current");
    env.run(&["status"])
        .code(0)
        .stdout_has("claude-code: wired");

    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        "#!/bin/sh\necho changed\nexit 0\n",
    );
    assert_eq!(state(&env), "stale_but_stable");
    env.run(&["status"])
        .code(1)
        .stdout_has("hint: run `keryx-hooks doctor --fix`");

    // Half applied is reported before stale: the order is the contract.
    wire_claude(&env, Some("PreToolUse"));
    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        "#!/bin/sh\nexit 1\n",
    );
    assert_eq!(state(&env), "half_applied");

    // A broken manifest is a warning, never current.
    std::fs::write(env.snapshot_dir().join("manifest.json"), "{").unwrap();
    let (code, v) = status(&env);
    assert_eq!(code, 1);
    let s = &v["sources"][0];
    assert!(s["state"].is_null(), "{v:#}");
    assert!(s["warning"].as_str().unwrap().contains("manifest"), "{v:#}");
}

#[test]
fn doctor_fix_repairs_stale_but_stable() {
    let env = with_source();
    wire_claude(&env, None);
    env.write(env.user_hooks(), format!("{HOOKS}\n"));
    assert_eq!(state(&env), "stale_but_stable");

    let r = env.run(&["doctor", "--json"]);
    let v = r.json();
    let drift = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with("drift"))
        .unwrap();
    assert_eq!(drift["status"], "warn");
    assert_eq!(drift["fix"], "keryx-hooks doctor --fix");

    let r = env.run(&["doctor", "--fix", "--json"]);
    let v = r.json();
    assert!(
        v["fixes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["action"] == "resync" && f["ok"] == true),
        "{v:#}"
    );
    assert!(
        v["fixed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("drift")),
        "{v:#}"
    );
    assert_eq!(state(&env), "current");
    // What the snapshot holds is the edited source.
    assert_eq!(
        std::fs::read_to_string(env.snapshot_dir().join("hooks.json")).unwrap(),
        format!("{HOOKS}\n")
    );
    // A second --fix has nothing to do and changes nothing.
    let manifest_before = std::fs::read(env.snapshot_dir().join("manifest.json")).unwrap();
    env.run(&["doctor", "--fix"])
        .stdout_has("--fix: nothing to do");
    assert_eq!(
        std::fs::read(env.snapshot_dir().join("manifest.json")).unwrap(),
        manifest_before
    );
}

#[test]
fn doctor_fix_rewires_a_half_applied_host() {
    let env = with_source();
    wire_claude(&env, Some("Stop"));
    let mut v: Value = read_json(env.claude_settings());
    v["model"] = json!("opus");
    env.write(
        env.claude_settings(),
        serde_json::to_string_pretty(&v).unwrap(),
    );
    assert_eq!(state(&env), "half_applied");

    let r = env.run(&["doctor", "--fix", "--json"]);
    let v = r.json();
    let rewire = v["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["action"] == "rewire")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(rewire["ok"], true, "{v:#}");
    assert_eq!(state(&env), "current");
    let after: Value = read_json(env.claude_settings());
    assert_eq!(after["model"], "opus", "foreign keys survive the rewire");
    assert!(
        after["hooks"]["Stop"]
            .to_string()
            .contains(&env.snapshot_key())
    );
}

/// The installer and the classifier agree: `install claude-code` gives
/// `current`, an edit of the source gives `stale_but_stable`.
#[test]
fn install_then_edit_then_doctor_fix() {
    let env = with_source();
    env.run(&["install", "claude-code"]).code(0);
    assert_eq!(state(&env), "current");
    env.script(env.keryx_home().join("scripts/new.sh"), "#!/bin/sh\n");
    assert_eq!(state(&env), "stale_but_stable");
    assert!(session_start(&env).stdout.contains("doctor --fix"));
    env.run(&["doctor", "--fix"]);
    assert_eq!(state(&env), "current");
    assert!(env.snapshot_dir().join("scripts/new.sh").is_file());
}

#[test]
fn doctor_fix_on_half_applied_says_what_it_could_not_fix() {
    let env = with_source();
    env.run(&["doctor", "--fix"]);
    // Synced, but nothing records a host: the fix names the install command.
    assert_eq!(state(&env), "half_applied");
    let r = env.run(&["doctor", "--fix", "--json"]);
    r.code(1);
    let v = r.json();
    let rewire = v["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["action"] == "rewire")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(rewire["ok"], false);
    assert_eq!(rewire["command"], "keryx-hooks install <host>...");
}

#[test]
fn session_start_drift_line_appears_after_a_change_and_clears_after_doctor_fix() {
    let env = with_source();
    wire_claude(&env, None);
    let quiet = session_start(&env);
    assert!(!quiet.stdout.contains("doctor --fix"), "{}", quiet.stdout);

    env.script(
        env.keryx_home().join("scripts/gate.sh"),
        "#!/bin/sh\necho new\nexit 0\n",
    );
    let r = session_start(&env);
    let v = r.json();
    let msg = v["systemMessage"].as_str().unwrap_or_default();
    assert!(msg.contains("keryx-hooks doctor --fix"), "{v:#}");
    assert!(msg.contains("has changed since snapshot"), "{v:#}");
    assert_eq!(
        r.stdout.matches("has changed since snapshot").count(),
        // Once as a message, once in the context the model sees.
        msg.matches("has changed").count()
            + v["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap_or_default()
                .matches("has changed")
                .count(),
    );
    assert_eq!(msg.matches("has changed since snapshot").count(), 1);

    env.run(&["doctor", "--fix"]);
    let after = session_start(&env);
    assert!(!after.stdout.contains("doctor --fix"), "{}", after.stdout);

    // Fail-open: an unreadable manifest costs a warning line, never the event.
    std::fs::write(env.snapshot_dir().join("manifest.json"), "{").unwrap();
    let broken = session_start(&env);
    assert!(
        broken.stdout.contains("could not check"),
        "{}",
        broken.stdout
    );
}

#[test]
fn doctor_reports_checks_as_data_and_prunes_stale_sessions() {
    let env = with_source();
    wire_claude(&env, None);
    let old = env.home.join(".local/state/keryx/sessions/claude-code-old");
    std::fs::create_dir_all(&old).unwrap();
    let touched = Command::new("touch")
        .args(["-d", "10 days ago"])
        .arg(&old)
        .status()
        .unwrap();
    assert!(touched.success());

    let v = env.run(&["doctor", "--json"]).json();
    let checks = v["checks"].as_array().unwrap();
    for c in checks {
        assert!(c["name"].is_string() && c["detail"].is_string(), "{c}");
        assert!(["ok", "warn", "fail"].contains(&c["status"].as_str().unwrap()));
    }
    let by_name = |n: &str| {
        checks
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no `{n}` check: {v:#}"))
    };
    assert_eq!(by_name("binary (claude-code)")["status"], "ok");
    assert_eq!(by_name("wiring (claude-code)")["status"], "ok");
    assert_eq!(
        by_name(&format!("snapshot ({})", env.snapshot_key()))["status"],
        "ok"
    );
    assert_eq!(by_name("config")["status"], "ok");
    assert_eq!(by_name("project-trust")["status"], "ok");
    assert_eq!(by_name("sessions")["status"], "warn");
    assert!(checks.iter().any(|c| c["name"] == "sandbox"));

    // A tampered snapshot fails the manifest check until --fix rebuilds it.
    std::fs::write(
        env.snapshot_dir().join("scripts/gate.sh"),
        "#!/bin/sh\nexit 0 # evil\n",
    )
    .unwrap();
    let v = env.run(&["doctor", "--json"]).json();
    let snap = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == format!("snapshot ({})", env.snapshot_key()))
        .unwrap()
        .clone();
    assert_eq!(snap["status"], "fail");
    assert!(snap["detail"].as_str().unwrap().contains("differs"));

    let r = env.run(&["doctor", "--fix", "--json"]);
    let v = r.json();
    r.code(0);
    assert!(!old.exists(), "stale session dir pruned");
    let open: Vec<&str> = v["notFixed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        !open
            .iter()
            .any(|n| n.starts_with("snapshot") || *n == "sessions"),
        "{v:#}"
    );
}

/// The host config names a binary that is gone: doctor fails and names the
/// command that rewires it.
#[test]
fn doctor_flags_a_missing_binary_and_a_dangling_snapshot() {
    let env = with_source();
    wire_claude(&env, None);
    let text = std::fs::read_to_string(env.claude_settings()).unwrap();
    env.write(
        env.claude_settings(),
        text.replace(BIN, "/nonexistent/keryx-hooks")
            .replace(&env.snapshot_key(), "gone-0123456789ab"),
    );
    let r = env.run(&["doctor", "--json"]);
    r.code(1);
    let v = r.json();
    let checks = v["checks"].as_array().unwrap();
    let bin = checks
        .iter()
        .find(|c| c["name"] == "binary (claude-code)")
        .unwrap();
    assert_eq!(bin["status"], "fail");
    assert_eq!(bin["fix"], "keryx-hooks install claude-code");
    let wiring = checks
        .iter()
        .find(|c| c["name"] == "wiring (claude-code)")
        .unwrap();
    assert_eq!(wiring["status"], "fail");
    assert!(
        wiring["detail"]
            .as_str()
            .unwrap()
            .contains("gone-0123456789ab")
    );
}

// ------------------------------------------------------------------ kill -9

/// A source big enough that a sync takes a while: 150 files of 32 KiB whose
/// bytes depend on `version`.
fn write_version(env: &Env, version: u8) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    files.insert("hooks.json".to_owned(), HOOKS.as_bytes().to_vec());
    for i in 0..150 {
        files.insert(
            format!("scripts/s{i:03}.sh"),
            vec![b'a' + version + (i % 7) as u8; 32 * 1024],
        );
    }
    for (rel, bytes) in &files {
        env.write(env.keryx_home().join(rel), bytes);
    }
    files
}

#[test]
fn kill_9_mid_sync_never_leaves_a_half_snapshot() {
    let env = Env::new();
    let a = write_version(&env, 0);
    let b_files = {
        let mut b = a.clone();
        for (rel, bytes) in b.iter_mut() {
            if rel != "hooks.json" {
                bytes.iter_mut().for_each(|x| *x += 10);
            }
        }
        b
    };
    env.run(&["doctor", "--fix"]);
    let dir = env.snapshot_dir();
    let without_manifest = |t: &BTreeMap<String, Vec<u8>>| {
        let mut t = t.clone();
        t.remove("manifest.json");
        t
    };
    assert_eq!(without_manifest(&files_under(&dir)), a);

    // How long one full resync takes, to spread the kills across it.
    write_version(&env, 10);
    let t0 = Instant::now();
    env.run(&["doctor", "--fix"]);
    let full = t0.elapsed();
    assert_eq!(without_manifest(&files_under(&dir)), b_files);

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(seed);
    let mut interrupted = 0;
    for round in 0..50 {
        // Point the source at whichever version the snapshot does not hold.
        let now = without_manifest(&files_under(&dir));
        let next = if now == a { 10 } else { 0 };
        write_version(&env, next);
        let mut child = env
            .cmd(&["doctor", "--fix"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let delay = Duration::from_micros(rng.next() % (full.as_micros() as u64 * 6 / 5 + 1));
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();

        let snap = files_under(&dir);
        let files = without_manifest(&snap);
        assert!(
            files == a || files == b_files,
            "round {round} (seed {seed}, kill after {delay:?}): the snapshot is neither version"
        );
        let m = manifest::read(&dir).unwrap();
        manifest::verify(&dir, &m)
            .unwrap_or_else(|e| panic!("round {round}: manifest does not match: {e}"));
        if snapshot::leftovers(&env.snapshot_root())
            .iter()
            .any(|p| p.file_name().unwrap().to_string_lossy().contains(".tmp-"))
        {
            interrupted += 1;
        }
    }
    assert!(
        interrupted > 0,
        "no kill landed while a temp copy existed (seed {seed}, one resync takes {full:?}); \
         the test did not exercise the window"
    );

    env.run(&["doctor", "--fix"]);
    let names: Vec<String> = std::fs::read_dir(env.snapshot_root())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [env.snapshot_key()], "leftovers after the next run");
}

// ------------------------------------------------------------------ ENOSPC

/// A resync that runs out of space (a 512 KiB tmpfs as the snapshot root, in
/// a private mount namespace so nothing leaks) leaves the installed snapshot
/// byte-identical, removes its temp copy and exits non-zero.
#[test]
fn enospc_leaves_the_original_snapshot_identical() {
    let env = with_source();
    let snap_root = env.snapshot_root();
    std::fs::create_dir_all(&snap_root).unwrap();
    let out = env.home.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let big = env.home.join("big.bin");
    std::fs::write(&big, vec![7u8; 700 * 1024]).unwrap();

    let script = r#"
set -e
mount -t tmpfs -o size=512k tmpfs "$ROOT"
"$BIN" doctor --fix > "$OUT/first.txt" 2>&1 || true
(cd "$ROOT" && find . -type f -exec sha256sum {} + | sort) > "$OUT/before"
cp "$BIG" "$KERYX_SRC/big.bin"
set +e
"$BIN" doctor --fix --json > "$OUT/fix.json" 2> "$OUT/fix.err"
echo $? > "$OUT/rc"
(cd "$ROOT" && find . | sort) > "$OUT/after-list"
(cd "$ROOT" && find . -type f -exec sha256sum {} + | sort) > "$OUT/after"
"#;
    let base = env.cmd(&[]);
    let mut c = Command::new("unshare");
    c.args(["--user", "--map-root-user", "--mount", "sh", "-c", script])
        .current_dir(&env.project)
        .env_clear();
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.env("ROOT", &snap_root)
        .env("BIN", BIN)
        .env("OUT", &out)
        .env("BIG", &big)
        .env("KERYX_SRC", env.keryx_home());
    let r = Run::from(c.output().expect(
        "`unshare` (util-linux) is needed for the ENOSPC test: it mounts a tiny tmpfs in a private namespace",
    ));
    assert_eq!(
        r.code, 0,
        "unshare/mount failed (user namespaces must be available):\n{}",
        r.stderr
    );
    let read = |n: &str| std::fs::read_to_string(out.join(n)).unwrap();
    let before = read("before");
    assert!(
        before.contains("./") && before.contains("hooks.json"),
        "{before}\n{}",
        read("first.txt")
    );
    assert_eq!(read("after"), before, "the installed snapshot changed");
    assert!(
        !read("after-list").contains(".tmp-"),
        "{}",
        read("after-list")
    );
    assert_eq!(read("rc").trim(), "1");
    let v: Value = serde_json::from_str(&read("fix.json")).unwrap();
    let resync = v["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["action"] == "resync")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(resync["ok"], false);
    let detail = resync["detail"].as_str().unwrap();
    assert!(detail.contains("No space left on device"), "{detail}");
    assert!(detail.contains("is unchanged"), "{detail}");
}

// ------------------------------------------------------------------ scope

/// `env`'s command run from another directory than the project.
/// The one source `status --json` reports, run from `dir`.
fn source_status_in(env: &Env, dir: &Path) -> Value {
    let r = env.run_in(dir, &["status", "--json"]);
    let v = r.json();
    v["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == env.snapshot_key())
        .cloned()
        .unwrap_or_else(|| panic!("{v:#}"))
}

#[test]
fn a_project_scope_wiring_is_recorded_and_checked_in_its_project_from_anywhere() {
    let env = with_source();
    env.run(&["install", "claude-code", "--scope", "project"])
        .code(0);
    let settings = env.project.join(".claude/settings.json");
    let m = manifest::read(&env.snapshot_dir()).unwrap();
    assert_eq!(m.hosts, ["claude-code"]);
    assert_eq!(
        serde_json::to_value(&m.wirings).unwrap(),
        json!([{
            "host": "claude-code",
            "scope": "project",
            "format": "settings",
            "path": settings,
            "project": env.project,
        }])
    );

    // Checked in the project, whether status runs there or elsewhere (not
    // in the home: a home that is the cwd is inside the project unless it
    // is the password database's, and the test's is not).
    let elsewhere = env.home.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    for dir in [&env.project, &elsewhere] {
        let s = source_status_in(&env, dir);
        assert_eq!(s["state"], "current", "from {}: {s:#}", dir.display());
        assert_eq!(s["hosts"][0]["scope"], "project");
        assert_eq!(s["hosts"][0]["path"], json!(settings));
    }
    env.run_in(&elsewhere, &["status"])
        .code(0)
        .stdout_has("claude-code (project settings, ");

    // Our entries leave the project file: half applied, and doctor --fix,
    // run from elsewhere, rewires the project's file (not the user's).
    env.write(&settings, "{\"model\": \"opus\"}\n");
    let s = source_status_in(&env, &elsewhere);
    assert_eq!(s["state"], "half_applied", "{s:#}");
    assert_eq!(s["hosts"][0]["wired"], false);
    let r = env.run_in(&elsewhere, &["doctor", "--fix", "--json"]);
    let v = r.json();
    assert!(
        v["fixes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["action"] == "rewire" && f["ok"] == true),
        "{v:#}"
    );
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(text.contains("\"model\": \"opus\""), "{text}");
    assert!(
        text.contains(&format!("/{}\"", env.snapshot_key())),
        "{text}"
    );
    assert!(
        !env.claude_settings().exists(),
        "the user's settings were written"
    );
    assert_eq!(source_status_in(&env, &elsewhere)["state"], "current");

    // A second project wired to the same snapshot, then deleted: doctor
    // --fix forgets its wiring instead of recreating the project.
    let other = env.tmp.path().join("work/other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    let other = std::fs::canonicalize(other).unwrap();
    env.run_in(&other, &["install", "claude-code", "--scope", "project"])
        .code(0);
    assert_eq!(
        manifest::read(&env.snapshot_dir()).unwrap().wirings.len(),
        2
    );
    std::fs::remove_dir_all(&other).unwrap();
    assert_eq!(source_status_in(&env, &elsewhere)["state"], "half_applied");
    let v = env
        .run_in(&elsewhere, &["doctor", "--fix", "--json"])
        .json();
    assert!(
        v["fixes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["action"] == "forget" && f["ok"] == true),
        "{v:#}"
    );
    assert!(!other.exists(), "doctor --fix recreated a deleted project");
    assert_eq!(source_status_in(&env, &elsewhere)["state"], "current");

    // Uninstall at project scope: the entries go, the manifest forgets the
    // wiring, and with nothing wired any more the snapshot goes too.
    env.run(&["uninstall", "claude-code", "--scope", "project"])
        .code(0)
        .stdout_has("removed snapshot");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "{\"model\": \"opus\"}\n"
    );
    assert!(!env.snapshot_dir().exists());
}

#[test]
fn scope_and_format_are_recorded_per_wiring_and_uninstall_forgets_only_its_own() {
    let env = with_source();
    env.run(&["install", "claude-code"]).code(0);
    env.run(&["install", "claude-code", "--scope", "project"])
        .code(0);
    env.run(&["install", "gemini-cli", "--format", "plugin"])
        .code(0);
    let m = manifest::read(&env.snapshot_dir()).unwrap();
    let got: Vec<(&str, &str, &str)> = m
        .wirings
        .iter()
        .map(|w| (w.host.as_str(), w.scope.as_str(), w.format.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("claude-code", "user", "settings"),
            ("claude-code", "project", "settings"),
            ("gemini-cli", "user", "plugin"),
        ]
    );
    assert_eq!(m.hosts, ["claude-code", "gemini-cli"]);
    assert_eq!(state(&env), "current");

    env.run(&["uninstall", "claude-code"]).code(0);
    let m = manifest::read(&env.snapshot_dir()).unwrap();
    let got: Vec<(&str, &str)> = m
        .wirings
        .iter()
        .map(|w| (w.host.as_str(), w.scope.as_str()))
        .collect();
    assert_eq!(got, [("claude-code", "project"), ("gemini-cli", "user")]);
    assert_eq!(state(&env), "current");
    assert!(
        std::fs::read_to_string(env.project.join(".claude/settings.json"))
            .unwrap()
            .contains(" run claude-code ")
    );
}

// ------------------------------------------------------------------ Codex review

fn codex_review(env: &Env) -> Vec<Value> {
    let v = env.run(&["doctor", "--json"]).json();
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "codex-review")
        .cloned()
        .collect()
}

/// Records trust for every keryx-hooks entry in the user's Codex config the
/// way Codex's `/hooks` does: `[hooks.state."<file>:<event>:<group>:<handler>"]
/// trusted_hash = "sha256:…"` in that same file.
fn trust_in_codex(env: &Env) {
    use keryx_hooks::install::codex_trust;
    let cfg = env.home.join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    for e in codex_trust::review(&cfg, false, &cfg).unwrap() {
        text.push_str(&format!(
            "\n[hooks.state.{}]\ntrusted_hash = \"{}\"\n",
            serde_json::to_string(&e.key).unwrap(),
            e.hash
        ));
    }
    std::fs::write(&cfg, text).unwrap();
}

#[test]
fn doctor_reports_codex_review_until_codex_records_the_trust() {
    let env = with_source();
    env.run(&["install", "codex"])
        .code(0)
        .stdout_has("`keryx-hooks doctor` reports them until Codex records the trust");
    let events = keryx_hooks::hosts::adapter("codex")
        .unwrap()
        .wired_events()
        .count();
    let checks = codex_review(&env);
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0]["status"], "warn");
    let detail = checks[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("{events} of {events} keryx-hooks entries"))
            && detail.contains("never reviewed"),
        "{detail}"
    );
    assert!(
        checks[0]["fix"].as_str().unwrap().contains("/hooks"),
        "{checks:#?}"
    );

    trust_in_codex(&env);
    let checks = codex_review(&env);
    assert_eq!(checks[0]["status"], "ok", "{checks:#?}");
    assert!(
        checks[0]["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("Codex trusts all {events}")),
        "{checks:#?}"
    );
    // The trust survives a reinstall that changes nothing.
    env.run(&["install", "codex"]).code(0);
    assert_eq!(codex_review(&env)[0]["status"], "ok");

    // A new gate lengthens the PreToolUse timeout: that hook changed, and
    // Codex will ask again; so does doctor.
    env.write(
        env.user_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            {"id": "slow-gate", "class": "gate", "matcher": "*", "runsIn": "unsandboxed",
             "timeoutMs": 30000, "command": {"argv": ["/bin/true"]}}]}}"#,
    );
    env.run(&["install", "codex"]).code(0);
    let checks = codex_review(&env);
    assert_eq!(checks[0]["status"], "warn", "{checks:#?}");
    assert!(
        checks[0]["detail"]
            .as_str()
            .unwrap()
            .contains("1 changed since you trusted them"),
        "{checks:#?}"
    );
}

/// Our Claude Code entry's timeout on `event`, in seconds.
fn claude_timeout(env: &Env, event: &str) -> u64 {
    let v: Value = read_json(env.claude_settings());
    v["hooks"][event]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap().iter())
        .find(|h| h["command"].as_str().unwrap().contains(" run claude-code "))
        .and_then(|h| h["timeout"].as_u64())
        .unwrap()
}

fn set_claude_timeout(env: &Env, event: &str, timeout: u64) {
    let mut v: Value = read_json(env.claude_settings());
    for g in v["hooks"][event].as_array_mut().unwrap() {
        for h in g["hooks"].as_array_mut().unwrap() {
            if h["command"].as_str().unwrap().contains(" run claude-code ") {
                h["timeout"] = json!(timeout);
            }
        }
    }
    env.write(
        env.claude_settings(),
        serde_json::to_string_pretty(&v).unwrap(),
    );
}

const SLOW_GATE: &str = r#"{"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
  {"id": "slow-gate", "matcher": "Bash", "class": "gate", "timeoutMs": 30000,
   "command": {"argv": ["/bin/sh", "-c", "sleep 1\nexit 0"]}}
]}}"#;

/// A resync that would start running a command the snapshot does not run
/// yet shows it as `trust` does and, with no terminal, needs `--yes`;
/// without it nothing is copied and the way to apply it is named.
#[test]
fn doctor_fix_shows_new_commands_and_needs_yes_to_resync_them() {
    let env = with_source();
    env.run(&["install", "claude-code"]).code(0);
    assert_eq!(state(&env), "current");
    env.write(env.user_hooks(), SLOW_GATE);
    assert_eq!(state(&env), "stale_but_stable");

    let r = env.run(&["doctor", "--fix"]);
    r.code(1)
        .stdout_has(&format!(
            "has 1 command hook that snapshot `{}` does not run yet (new or changed)",
            env.snapshot_key()
        ))
        .stdout_has("hook `slow-gate` on PreToolUse\n")
        .stdout_has("  argv: \"/bin/sh\" \"-c\" \"sleep 1\n    | exit 0\"\n")
        .stdout_has("not fixed: resync: ")
        .stdout_has("there is no terminal to ask in and `--yes` was not given")
        .stdout_has("  run: keryx-hooks doctor --fix --yes");
    assert_eq!(
        std::fs::read_to_string(env.snapshot_dir().join("hooks.json")).unwrap(),
        HOOKS,
        "resynced without consent"
    );
    assert_eq!(state(&env), "stale_but_stable");
    let v = env.run(&["doctor", "--fix", "--json"]).json();
    assert_eq!(v["resyncReviews"][0]["resynced"], false, "{v:#}");
    assert_eq!(v["resyncReviews"][0]["hookIds"], json!(["slow-gate"]));

    env.run(&["doctor", "--fix", "--yes"])
        .code(0)
        .stdout_has("hook `slow-gate` on PreToolUse")
        .stdout_has("fixed: resync: copied");
    assert_eq!(
        std::fs::read_to_string(env.snapshot_dir().join("hooks.json")).unwrap(),
        SLOW_GATE
    );
    // The host's timeout now covers the 30 s gate, and status agrees.
    assert!(claude_timeout(&env, "PreToolUse") >= 32);
    assert_eq!(state(&env), "current");
    // Nothing new: no question, nothing to do.
    env.run(&["doctor", "--fix"])
        .code(0)
        .stdout_has("--fix: nothing to do");
}

/// A host timeout below what the snapshot's hooks need is not `current`:
/// the host would kill the shim before the gate answers, and Claude Code
/// then runs the tool. `doctor` names it and `--fix` rewrites it.
#[test]
fn a_host_timeout_below_the_hooks_is_half_applied_and_fix_rewrites_it() {
    let env = with_source();
    env.write(env.user_hooks(), SLOW_GATE);
    env.run(&["install", "claude-code"]).code(0);
    let wired = claude_timeout(&env, "PreToolUse");
    assert!(wired >= 32, "{wired}");
    assert_eq!(state(&env), "current");

    set_claude_timeout(&env, "PreToolUse", 19);
    assert_eq!(state(&env), "half_applied");
    let v = env.run(&["doctor", "--json"]).json();
    let check = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "timeouts (claude-code)")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(check["status"], "fail");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("`PreToolUse` 19 s where its hooks need {wired} s")),
        "{check:#}"
    );
    assert!(session_start(&env).stdout.contains("doctor --fix"));

    env.run(&["doctor", "--fix"])
        .code(0)
        .stdout_has("fixed: rewire: wired claude-code");
    assert_eq!(claude_timeout(&env, "PreToolUse"), wired);
    assert_eq!(state(&env), "current");

    // The same at project scope, where the project's own gates count too.
    env.write(
        env.project_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
          {"id": "slower", "class": "gate", "timeoutMs": 50000, "command": {"argv": ["/bin/true"]}}]}}"#,
    );
    env.run(&["install", "claude-code", "--scope", "project"])
        .code(0);
    let project_file = env.project.join(".claude/settings.json");
    let timeout_in = |path: &Path| -> u64 {
        let v: Value = read_json(path);
        v["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"]
            .as_u64()
            .unwrap()
    };
    let project_wired = timeout_in(&project_file);
    assert!(project_wired >= 82, "{project_wired}");
    let text = std::fs::read_to_string(&project_file).unwrap();
    env.write(
        &project_file,
        text.replace(&format!("\"timeout\": {project_wired}"), "\"timeout\": 40"),
    );
    assert_eq!(timeout_in(&project_file), 40);
    assert_eq!(state(&env), "half_applied");
    env.run(&["doctor", "--fix"]).code(0);
    assert_eq!(timeout_in(&project_file), project_wired);
    assert_eq!(state(&env), "current");
}

/// `install` over an existing snapshot shows the commands it starts
/// running, as `doctor --fix` does; once they are in, nothing is shown.
#[test]
fn install_shows_the_commands_a_resync_starts_running() {
    let env = with_source();
    env.run(&["install", "claude-code"]).code(0);
    env.write(env.user_hooks(), SLOW_GATE);
    let v = env
        .run(&["install", "claude-code", "--dry-run", "--json"])
        .json();
    assert!(
        v["notes"][0].as_str().unwrap().contains(
            "would start running new or changed command hooks from the source: `slow-gate`"
        ),
        "{v:#}"
    );
    env.run(&["install", "claude-code"])
        .code(0)
        .stdout_has(&format!(
            "has 1 command hook that snapshot `{}` does not run yet",
            env.snapshot_key()
        ))
        .stdout_has("  argv: \"/bin/sh\" \"-c\" \"sleep 1\n    | exit 0\"\n");
    let again = env.run(&["install", "claude-code"]);
    again.code(0);
    assert!(
        !again.stdout.contains("does not run yet"),
        "{}",
        again.stdout
    );
}

/// On a terminal `doctor --fix` asks before a resync that starts new
/// commands: anything but yes keeps the snapshot, yes copies it.
#[test]
fn doctor_fix_asks_on_a_terminal_before_a_resync_with_new_commands() {
    let env = with_source();
    env.run(&["install", "claude-code"]).code(0);
    env.write(env.user_hooks(), SLOW_GATE);
    let snap = env.snapshot_dir().join("hooks.json");

    let no = crate::trust::on_a_terminal(&env, "doctor --fix", || {}, "n\n");
    assert_eq!(no.code, 1, "{}", no.stdout);
    assert!(
        no.stdout.contains("hook `slow-gate` on PreToolUse"),
        "{}",
        no.stdout
    );
    assert!(
        no.stdout
            .contains("Resync the snapshot with these commands? [y/N]"),
        "{}",
        no.stdout
    );
    assert!(
        no.stdout.contains("you did not confirm it"),
        "{}",
        no.stdout
    );
    assert_eq!(std::fs::read_to_string(&snap).unwrap(), HOOKS);

    let yes = crate::trust::on_a_terminal(&env, "doctor --fix", || {}, "y\n");
    assert_eq!(yes.code, 0, "{}", yes.stdout);
    assert!(
        yes.stdout.contains("fixed: resync: copied"),
        "{}",
        yes.stdout
    );
    assert_eq!(std::fs::read_to_string(&snap).unwrap(), SLOW_GATE);
    assert_eq!(state(&env), "current");
}

/// A resync the user did not confirm leaves the old snapshot running, so a
/// rewire's timeouts cover that snapshot's hooks, not the source's.
#[test]
fn a_declined_resync_still_rewires_timeouts_for_what_the_snapshot_runs() {
    let env = with_source();
    env.write(env.user_hooks(), SLOW_GATE);
    env.run(&["install", "claude-code"]).code(0);
    let wired = claude_timeout(&env, "PreToolUse");
    env.write(
        env.user_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
          {"id": "fast-gate", "class": "gate", "timeoutMs": 1000, "command": {"argv": ["/bin/true"]}}]}}"#,
    );
    set_claude_timeout(&env, "PreToolUse", 19);
    env.run(&["doctor", "--fix"])
        .code(1)
        .stdout_has("not fixed: resync: ")
        .stdout_has("fixed: rewire: wired claude-code");
    assert_eq!(claude_timeout(&env, "PreToolUse"), wired);
    assert_eq!(state(&env), "stale_but_stable");
}

/// On a terminal `install` asks before it replaces a snapshot with new
/// commands; a no writes nothing.
#[test]
fn install_asks_on_a_terminal_before_replacing_a_snapshot_with_new_commands() {
    let env = with_source();
    env.run(&["install", "claude-code"]).code(0);
    let settings = std::fs::read(env.claude_settings()).unwrap();
    env.write(env.user_hooks(), SLOW_GATE);
    let snap = env.snapshot_dir().join("hooks.json");
    let no = crate::trust::on_a_terminal(&env, "install claude-code", || {}, "n\n");
    assert_eq!(no.code, 1, "{}", no.stdout);
    assert!(
        no.stdout
            .contains("Replace the snapshot with these commands? [y/N]"),
        "{}",
        no.stdout
    );
    assert!(no.stdout.contains("Not installed; nothing was written."));
    assert_eq!(std::fs::read_to_string(&snap).unwrap(), HOOKS);
    assert_eq!(std::fs::read(env.claude_settings()).unwrap(), settings);
    let yes = crate::trust::on_a_terminal(&env, "install claude-code", || {}, "y\n");
    assert_eq!(yes.code, 0, "{}", yes.stdout);
    assert_eq!(std::fs::read_to_string(&snap).unwrap(), SLOW_GATE);
}

/// A wiring an older keryx-hooks wrote names the snapshot by its key
/// alone, which the environment could point elsewhere: it still answers
/// (nothing is denied for it), `status` counts it as not wired, and
/// `doctor --fix` names the snapshot by its directory.
#[test]
fn a_wiring_by_key_alone_still_answers_and_doctor_fix_names_the_directory() {
    let env = with_source();
    wire_claude(&env, None);
    let settings = env.claude_settings();
    let dir_form = std::fs::read_to_string(&settings).unwrap();
    let key = env.snapshot_key();
    let root = env.snapshot_root().join(&key).display().to_string();
    env.write(&settings, dir_form.replace(&root, &key));
    assert_ne!(state(&env), "current");

    let pre = env.run_stdin(
        &["run", "claude-code", "PreToolUse", "--snapshot", &key],
        crate::common::claude_bash(&env, "legacy-1", "ls").to_string(),
    );
    pre.code(0);
    assert!(!pre.stdout.contains("deny"), "{}", pre.stdout);

    env.run(&["doctor", "--fix"]);
    let fixed = std::fs::read_to_string(&settings).unwrap();
    assert!(fixed.contains(&format!("--snapshot {root}")), "{fixed}");
    assert_eq!(state(&env), "current");
}
