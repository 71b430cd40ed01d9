//! `install` / `uninstall` in lefthook's form: seed a host file with foreign
//! entries (comments and trailing commas for JSON, inline tables and dotted
//! keys for TOML) → install → foreign entries intact, ours once → install
//! again → byte-identical → uninstall → the original bytes. Plus timeouts in
//! each host's unit, concurrent installs, `kill -9` mid-install, refusals,
//! install/install.sh, and the real Claude Code running the snapshot.

use std::hash::{BuildHasher, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{BIN, Env};
use crate::e2e::{E2eEnv, Host, Scenario, sh_quote};

/// One host's user config, seeded with someone else's hooks.
struct Seed {
    host: &'static str,
    rel: &'static str,
    text: &'static str,
    /// Lines of the seed that must survive install verbatim.
    keep: &'static [&'static str],
}

const SEEDS: &[Seed] = &[
    Seed {
        host: "claude-code",
        rel: ".claude/settings.json",
        text: r#"{
  // personal settings
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [{ "type": "command", "command": "lint.sh", "timeout": 30 }] },
    ],
    /* desktop notifications */
    "Notification": [{ "hooks": [{ "type": "command", "command": "notify-send done" }] }],
  },
  "permissions": { "allow": ["Bash(ls)"] },
}
"#,
        keep: &[
            "  // personal settings",
            r#"      { "matcher": "Bash", "hooks": [{ "type": "command", "command": "lint.sh", "timeout": 30 }] },"#,
            "    /* desktop notifications */",
            r#"  "permissions": { "allow": ["Bash(ls)"] },"#,
        ],
    },
    Seed {
        host: "gemini-cli",
        rel: ".gemini/settings.json",
        text: "\u{feff}{\r\n  \"ui\": {\"theme\": \"dark\"},\r\n  \"hooks\": {\r\n    \"BeforeTool\": [\r\n      {\"matcher\": \"write_file\", \"hooks\": [{\"name\": \"sec\", \"type\": \"command\", \"command\": \"sec.sh\", \"timeout\": 5000}]}\r\n    ]\r\n  }\r\n}\r\n",
        keep: &[
            "  \"ui\": {\"theme\": \"dark\"},\r",
            "      {\"matcher\": \"write_file\", \"hooks\": [{\"name\": \"sec\", \"type\": \"command\", \"command\": \"sec.sh\", \"timeout\": 5000}]},\r",
        ],
    },
    Seed {
        host: "cursor",
        rel: ".cursor/hooks.json",
        text: "{\n  \"version\": 1,\n  \"hooks\": {\n    \"stop\": [\n      { \"command\": \"./audit.sh\", \"timeout\": 10 }\n    ]\n  }\n}\n",
        keep: &["      { \"command\": \"./audit.sh\", \"timeout\": 10 },"],
    },
    Seed {
        host: "codex",
        rel: ".codex/config.toml",
        text: r#"# codex config
model = "o3" # pinned
mcp_servers = { docs = { command = "docs-mcp", args = ["--stdio"] } }
hooks.state."sha256:0f1e" = { trusted = true }

[[hooks.PreToolUse]]
matcher = "^Bash$"

[[hooks.PreToolUse.hooks]]
type = "command"
command = "python3 policy.py"
timeout = 30

[profiles.fast]
model = "o4-mini"
"#,
        keep: &[
            "model = \"o3\" # pinned",
            "mcp_servers = { docs = { command = \"docs-mcp\", args = [\"--stdio\"] } }",
            "hooks.state.\"sha256:0f1e\" = { trusted = true }",
            "command = \"python3 policy.py\"",
            "[profiles.fast]",
        ],
    },
    Seed {
        host: "kimi",
        rel: ".kimi-code/config.toml",
        text: "default_model = \"kimi-k2\"\n\n[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"Bash\"\ncommand = \"node ~/.kimi-code/hooks/check.mjs\" # theirs\ntimeout = 5\n",
        keep: &["command = \"node ~/.kimi-code/hooks/check.mjs\" # theirs"],
    },
];

fn wired_events(host: &str) -> Vec<String> {
    keryx_hooks::hosts::adapter(host)
        .unwrap()
        .wired_events()
        .map(|(e, _)| e.to_owned())
        .collect()
}

/// How many times each wired event's shim command appears.
#[track_caller]
fn assert_ours_once(host: &str, text: &str) {
    for ev in wired_events(host) {
        let needle = format!(" run {host} {ev} --snapshot ");
        assert_eq!(text.matches(&needle).count(), 1, "{needle:?} in:\n{text}");
    }
}

#[track_caller]
fn assert_parses(path: &Path) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} unreadable: {e}", path.display()));
    if path.extension().is_some_and(|e| e == "toml") {
        text.parse::<toml_edit::DocumentMut>()
            .unwrap_or_else(|e| panic!("{} is not TOML: {e}\n{text}", path.display()));
    } else {
        let body = text.trim_start_matches('\u{feff}');
        keryx_hooks::install::hostfile::json::parse(body)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}\n{text}", path.display()));
    }
}

#[test]
fn install_twice_is_byte_identical_and_uninstall_restores_the_seed_per_host() {
    for seed in SEEDS {
        let env = Env::new();
        let path = env.write(env.home.join(seed.rel), seed.text);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let host = seed.host;

        env.run(&["install", host]).code(0).stdout_has("wired");
        let once = std::fs::read(&path).unwrap();
        let text = String::from_utf8(once.clone()).unwrap();
        for line in seed.keep {
            assert!(text.contains(line), "{host}: lost {line:?}:\n{text}");
        }
        assert_ours_once(host, &text);
        assert_parses(&path);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600,
            "{host}: mode"
        );
        let backup = path.with_file_name(format!(
            "{}.keryx-hooks.bak",
            path.file_name().unwrap().to_str().unwrap()
        ));
        assert_eq!(
            std::fs::read_to_string(&backup).unwrap(),
            seed.text,
            "{host}: backup"
        );

        env.run(&["install", host])
            .code(0)
            .stdout_has("already wired");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            once,
            "{host}: second install changed bytes"
        );

        env.run(&["uninstall", host])
            .code(0)
            .stdout_has("restored its original bytes");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            seed.text,
            "{host}: not restored"
        );
        assert!(!backup.exists(), "{host}: backup left behind");
        let snapshots = std::fs::read_dir(env.home.join(".agentic/hooks-snapshot")).unwrap();
        assert_eq!(
            snapshots.count(),
            0,
            "{host}: the snapshot outlived the last host"
        );

        // Never installed now: a no-op.
        env.run(&["uninstall", host])
            .code(0)
            .stdout_has("nothing of keryx-hooks");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), seed.text);
    }
}

#[test]
fn a_file_we_created_is_removed_again_and_the_snapshot_goes_with_the_last_host() {
    let env = Env::new();
    let copilot = env.home.join(".copilot/hooks/keryx-hooks.json");
    let other = env.write(
        env.home.join(".copilot/hooks/team.json"),
        "{\"version\": 1, \"hooks\": {}}\n",
    );
    let claude = env.home.join(".claude/settings.json");
    env.run(&["install", "copilot", "claude-code"])
        .code(0)
        .stdout_has("new file");
    let text = std::fs::read_to_string(&copilot).unwrap();
    assert_ours_once("copilot", &text);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], 1);
    assert!(
        v["hooks"]["preToolUse"][0]["bash"]
            .as_str()
            .unwrap()
            .contains(" run copilot preToolUse ")
    );
    let snapshots = env.home.join(".agentic/hooks-snapshot");
    assert_eq!(std::fs::read_dir(&snapshots).unwrap().count(), 1);

    // One host left: the snapshot stays; the manifest forgets copilot.
    env.run(&["uninstall", "copilot"])
        .code(0)
        .stdout_has("which held only keryx-hooks entries");
    assert!(!copilot.exists());
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        "{\"version\": 1, \"hooks\": {}}\n"
    );
    assert_eq!(std::fs::read_dir(&snapshots).unwrap().count(), 1);
    let snap = std::fs::read_dir(&snapshots)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(snap.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["hosts"], json!(["claude-code"]), "{manifest}");

    env.run(&["uninstall", "claude-code"])
        .code(0)
        .stdout_has("removed snapshot");
    assert!(!claude.exists());
    assert_eq!(std::fs::read_dir(&snapshots).unwrap().count(), 0);
}

#[test]
fn timeouts_are_written_in_each_hosts_unit_above_the_shims_worst_case() {
    let env = Env::new();
    // A 20 s user gate on PreToolUse, on top of the three 5 s built-in gates:
    // 3 × (5 + 0.5) + (20 + 0.5) + 2 s margin = 39 s.
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [{
            "id": "slow-gate", "class": "gate", "matcher": "*", "runsIn": "unsandboxed",
            "timeoutMs": 20000, "command": {"argv": ["/bin/true"]}
        }]}})
        .to_string(),
    );
    let out = env.run(&[
        "install",
        "claude-code",
        "gemini-cli",
        "cursor",
        "copilot",
        "codex",
        "kimi",
        "--json",
    ]);
    out.code(0);
    let report = out.json();
    let timeout = |host: &str, event: &str| -> u64 {
        let h = report["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["host"] == host)
            .unwrap();
        let entries = h["files"][0]["entries"].as_array().unwrap();
        let e = entries.iter().find(|e| e["hostEvent"] == event).unwrap();
        e["timeout"].as_u64().unwrap()
    };
    assert_eq!(timeout("claude-code", "PreToolUse"), 39);
    assert_eq!(timeout("gemini-cli", "BeforeTool"), 39_000);
    assert_eq!(timeout("cursor", "preToolUse"), 39);
    assert_eq!(timeout("copilot", "preToolUse"), 39);
    assert_eq!(timeout("codex", "PreToolUse"), 39);
    assert_eq!(timeout("kimi", "PreToolUse"), 39);
    // Only the built-in observer on Stop: 5.5 s + 2 s, rounded up in seconds.
    assert_eq!(timeout("claude-code", "Stop"), 8);
    assert_eq!(timeout("gemini-cli", "AfterAgent"), 7_500);

    // What the files say, in each host's own key.
    let read = |rel: &str| std::fs::read_to_string(env.home.join(rel)).unwrap();
    let claude: Value = serde_json::from_str(&read(".claude/settings.json")).unwrap();
    assert_eq!(claude["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 39);
    assert_eq!(claude["hooks"]["PreToolUse"][0]["matcher"], "*");
    let gemini: Value = serde_json::from_str(&read(".gemini/settings.json")).unwrap();
    assert_eq!(
        gemini["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"],
        39_000
    );
    let cursor: Value = serde_json::from_str(&read(".cursor/hooks.json")).unwrap();
    assert_eq!(cursor["hooks"]["preToolUse"][0]["timeout"], 39);
    assert_eq!(cursor["hooks"]["preToolUse"][0]["failClosed"], true);
    assert_eq!(cursor["hooks"]["postToolUse"][0].get("failClosed"), None);
    let copilot: Value = serde_json::from_str(&read(".copilot/hooks/keryx-hooks.json")).unwrap();
    assert_eq!(copilot["hooks"]["preToolUse"][0]["timeoutSec"], 39);
    assert!(read(".codex/config.toml").contains("timeout = 39"));
    assert!(read(".kimi-code/config.toml").contains("timeout = 39"));

    // A slower gate later: a reinstall updates the number in place.
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [{
            "id": "slow-gate", "class": "gate", "matcher": "*", "runsIn": "unsandboxed",
            "timeoutMs": 60000, "command": {"argv": ["/bin/true"]}
        }]}})
        .to_string(),
    );
    env.run(&["install", "claude-code"]).code(0);
    let claude: Value = serde_json::from_str(&read(".claude/settings.json")).unwrap();
    assert_eq!(claude["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 79);
    assert_eq!(claude["hooks"]["PreToolUse"].as_array().unwrap().len(), 1);
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let env = Env::new();
    let path = env.write(
        env.home.join(".claude/settings.json"),
        "{\"model\": \"opus\"}\n",
    );
    let out = env.run(&["install", "claude-code", "--dry-run"]);
    out.code(0)
        .stdout_has("would wire 10 events")
        .stdout_has("-{\"model\": \"opus\"}\n+{\"model\": \"opus\", \"hooks\": {")
        .stdout_has("+  \"SessionStart\": [")
        .stdout_has("dry run: nothing was written");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"model\": \"opus\"}\n"
    );
    assert!(
        !env.home.join(".agentic").exists(),
        "the dry run made a snapshot"
    );
    assert!(!env.keryx_home().exists(), "the dry run created ~/.keryx");

    let out = env.run(&["install", "claude-code", "--dry-run", "--json"]);
    out.code(0);
    let v = out.json();
    assert_eq!(v["dryRun"], true);
    assert_eq!(v["hosts"][0]["files"][0]["change"], "updated");
    assert!(
        v["hosts"][0]["files"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("+  \"SessionStart\"")
    );

    env.run(&["install", "claude-code"]).code(0);
    let installed = std::fs::read(&path).unwrap();
    env.run(&["uninstall", "claude-code", "--dry-run"])
        .code(0)
        .stdout_has("would remove 10 entries")
        .stdout_has("-  \"SessionStart\": [");
    assert_eq!(std::fs::read(&path).unwrap(), installed);
}

#[test]
fn unreadable_files_are_refused_with_no_write() {
    let env = Env::new();
    let bad = "{\n  \"hooks\": {\"Stop\": [}\n}\n";
    let claude = env.write(env.home.join(".claude/settings.json"), bad);
    let out = env.run(&["install", "claude-code"]);
    out.code(1)
        .stderr_has("line 2")
        .stderr_has("nothing was written");
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), bad);
    assert!(
        !claude
            .with_file_name("settings.json.keryx-hooks.bak")
            .exists()
    );

    let latin1 = env.write(
        env.home.join(".gemini/settings.json"),
        b"{\"ui\": \"caf\xe9\"}",
    );
    env.run(&["install", "gemini-cli"])
        .code(1)
        .stderr_has("not UTF-8");
    assert_eq!(std::fs::read(&latin1).unwrap(), b"{\"ui\": \"caf\xe9\"}");

    std::fs::create_dir_all(env.home.join(".cursor")).unwrap();
    let dead = env.home.join(".cursor/hooks.json");
    std::os::unix::fs::symlink(env.home.join("dotfiles/cursor-hooks.json"), &dead).unwrap();
    env.run(&["install", "cursor"])
        .code(1)
        .stderr_has("which does not exist");
    assert!(
        std::fs::symlink_metadata(&dead)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    let toml = env.write(env.home.join(".codex/config.toml"), "hooks = \"off\"\n");
    env.run(&["install", "codex"])
        .code(1)
        .stderr_has("`hooks` is not a table");
    assert_eq!(std::fs::read_to_string(&toml).unwrap(), "hooks = \"off\"\n");

    // A live symlink is edited through, and stays a symlink.
    let real = env.write(
        env.home.join("dotfiles/kimi.toml"),
        "default_model = \"k2\"\n",
    );
    std::fs::create_dir_all(env.home.join(".kimi-code")).unwrap();
    let link = env.home.join(".kimi-code/config.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    env.run(&["install", "kimi"]).code(0);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_ours_once("kimi", &std::fs::read_to_string(&real).unwrap());

    env.run(&["install", "nonsense"])
        .code(1)
        .stderr_has("unknown host `nonsense`");
    env.run(&["install", "keryx"])
        .code(1)
        .stderr_has("nothing to wire");
    env.run(&["install", "kimi", "--scope", "project"])
        .code(1)
        .stderr_has("no project-scope config file");
}

#[test]
fn project_scope_writes_the_project_file_and_an_old_binary_path_is_replaced() {
    let env = Env::new();
    let path = env.write(
        env.project.join(".claude/settings.json"),
        "{\"hooks\": {\"Stop\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\", \"command\": \"'/old/place/keryx-hooks' run claude-code Stop\"}]}]}}",
    );
    env.run(&["install", "claude-code", "--scope", "project"])
        .code(0);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_ours_once("claude-code", &text);
    assert!(!text.contains("/old/place/"), "{text}");
    assert!(!env.home.join(".claude/settings.json").exists());
    env.run(&["uninstall", "claude-code", "--scope", "project"])
        .code(0);
    assert!(
        !std::fs::read_to_string(&path)
            .unwrap()
            .contains(" run claude-code ")
    );
}

#[test]
fn a_failed_write_leaves_the_original_and_no_temp_file() {
    let env = Env::new();
    let seed = "{\"model\": \"opus\"}\n";
    let path = env.write(env.home.join(".claude/settings.json"), seed);
    env.write(
        env.user_hooks(),
        "{\"schemaVersion\": \"1.0.0\", \"hooks\": {}}",
    );
    // A 1 KiB file-size limit: the snapshot and the backup fit, the wired
    // settings (about 3 KiB) do not, so its write fails as on a full disk.
    let out = Command::new("sh")
        .args([
            "-c",
            "trap '' XFSZ; ulimit -f 2; exec \"$0\" install claude-code",
            BIN,
        ])
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "KERYX_SNAPSHOT_ROOT",
            env.home.join(".agentic/hooks-snapshot"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the file is unchanged"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), seed);
    let leftovers: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("keryx-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
}

#[test]
fn snapshots_are_kept_when_a_host_file_cannot_be_read() {
    let env = Env::new();
    env.run(&["install", "claude-code"]).code(0);
    env.write(env.home.join(".gemini/settings.json"), "{ broken");
    env.run(&["uninstall", "claude-code"])
        .code(0)
        .stderr_has("snapshots kept");
    let snapshots = std::fs::read_dir(env.home.join(".agentic/hooks-snapshot")).unwrap();
    assert_eq!(snapshots.count(), 1);
}

/// Settings.json seeded with a foreign hook, for the race and crash tests.
const CLAUDE_SEED: &str = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint.sh\"}]}\n    ]\n  }\n}\n";

#[test]
fn ten_concurrent_installs_leave_valid_files_with_our_entries_once() {
    let env = Env::new();
    let claude = env.write(env.home.join(".claude/settings.json"), CLAUDE_SEED);
    let codex = env.write(env.home.join(".codex/config.toml"), "model = \"o3\"\n");
    env.write(
        env.user_hooks(),
        "{\"schemaVersion\": \"1.0.0\", \"hooks\": {}}",
    );
    let children: Vec<_> = (0..10)
        .map(|_| {
            env.cmd(&["install", "claude-code", "codex"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "an install failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(&claude).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "lint.sh"
    );
    assert_ours_once("claude-code", &text);
    let toml = std::fs::read_to_string(&codex).unwrap();
    toml.parse::<toml_edit::DocumentMut>().unwrap();
    assert_ours_once("codex", &toml);
    assert_eq!(toml.matches("[[hooks.PreToolUse]]").count(), 1);
    assert_eq!(
        std::fs::read_to_string(claude.with_file_name("settings.json.keryx-hooks.bak")).unwrap(),
        CLAUDE_SEED
    );
}

fn random_below(n: u64) -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish() % n.max(1)
}

#[test]
fn kill_9_at_random_points_never_leaves_an_unparsable_host_file() {
    let env = Env::new();
    let claude = env.write(env.home.join(".claude/settings.json"), CLAUDE_SEED);
    let codex = env.write(env.home.join(".codex/config.toml"), "model = \"o3\"\n");
    env.write(
        env.user_hooks(),
        "{\"schemaVersion\": \"1.0.0\", \"hooks\": {}}",
    );

    // How long one write takes here, to spread the kills across it.
    let start = Instant::now();
    env.run(&["install", "claude-code", "codex"]).code(0);
    env.run(&["uninstall", "claude-code", "codex"]).code(0);
    let span = (start.elapsed().as_micros() as u64 / 2).max(2_000);

    // Until 50 runs were killed part-way (a run that finished first does
    // not count), bounded so a machine too fast to hit one fails loudly.
    let mut killed = 0;
    let mut i = 0;
    while killed < 50 && i < 400 {
        i += 1;
        // Alternate so every run has something to write.
        let verb = if i % 2 == 0 { "install" } else { "uninstall" };
        let mut child = env
            .cmd(&[verb, "claude-code", "codex"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(random_below(span)));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();

        for path in [&claude, &codex] {
            assert_parses(path);
        }
        let text = std::fs::read_to_string(&claude).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["model"], "opus", "run {i}: {text}");
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "lint.sh",
            "run {i}"
        );
        let ours = text.matches(" run claude-code ").count();
        assert!(
            ours == 0 || ours == 10,
            "run {i}: half-wired ({ours} entries):\n{text}"
        );
    }
    assert_eq!(killed, 50, "only {killed} of {i} runs were killed mid-way");
    // Afterwards the next install still converges.
    env.run(&["install", "claude-code", "codex"]).code(0);
    assert_ours_once("claude-code", &std::fs::read_to_string(&claude).unwrap());
    assert_ours_once("codex", &std::fs::read_to_string(&codex).unwrap());
}

/// Installs shellcheck when it is missing and we may (root, apt); otherwise
/// fails with the command that would.
fn shellcheck() -> &'static str {
    let present = || {
        Command::new("shellcheck")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !present() {
        let _ = Command::new("sh")
            .args([
                "-c",
                "[ \"$(id -u)\" -eq 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck",
            ])
            .stdin(Stdio::null())
            .status();
    }
    assert!(
        present(),
        "shellcheck not found; install it: `apt-get install -y shellcheck`"
    );
    "shellcheck"
}

fn install_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("install/install.sh")
}

#[test]
fn install_sh_is_shellcheck_clean() {
    let out = Command::new(shellcheck())
        .arg(install_sh())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "shellcheck install/install.sh:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn install_sh_wires_the_hosts_it_finds_or_those_named() {
    let env = Env::new();
    std::fs::create_dir_all(env.home.join(".claude")).unwrap();
    std::fs::create_dir_all(env.home.join(".gemini")).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new("sh")
            .arg(install_sh())
            .args(args)
            .current_dir(&env.project)
            .env_clear()
            .env("HOME", &env.home)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env(
                "KERYX_SNAPSHOT_ROOT",
                env.home.join(".agentic/hooks-snapshot"),
            )
            // Skips the cargo build: the binary under test is the one built.
            .env("KERYX_HOOKS_BIN", BIN)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "install.sh failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = run(&[]);
    assert!(
        out.contains("Claude Code: wired") && out.contains("Gemini CLI: wired"),
        "{out}"
    );
    assert!(!env.home.join(".codex").exists(), "{out}");
    assert_ours_once(
        "claude-code",
        &std::fs::read_to_string(env.home.join(".claude/settings.json")).unwrap(),
    );
    assert!(env.user_hooks().is_file(), "no starter hooks.json");

    let out = run(&["codex"]);
    assert!(out.contains("OpenAI Codex CLI: wired"), "{out}");
    assert_ours_once(
        "codex",
        &std::fs::read_to_string(env.home.join(".codex/config.toml")).unwrap(),
    );
}

/// The real Claude Code, wired by `install claude-code` into a temp home: a
/// deny gate in the user hooks source fires from the snapshot, and editing
/// the live source afterwards changes nothing until the next sync.
#[test]
fn e2e_claude_code_runs_hooks_from_the_installed_snapshot() {
    const REASON: &str = "E2E-INSTALL-DENY: echo is not allowed here";
    let env = E2eEnv::new();
    let marker = env.path("denied-command-ran");
    let script = env.script(
        "deny-echo.sh",
        &format!(
            r#"payload=$(cat)
echo call >> {calls}
case "$payload" in
  *'"command":"echo '*|*'"command": "echo '*)
    echo {reason} >&2
    exit 2 ;;
esac
exit 0
"#,
            calls = sh_quote(env.path("gate.calls").to_str().unwrap()),
            reason = sh_quote(REASON),
        ),
    );
    let ctx_guard_off =
        json!({ "id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate" });
    env.keryx_user_hooks(
        &json!({ "schemaVersion": "1.0.0", "hooks": { "PreToolUse": [
            ctx_guard_off,
            { "id": "no-echo", "class": "gate", "matcher": "*", "runsIn": "unsandboxed",
              "timeoutMs": 20000, "command": { "argv": ["/bin/sh", script] } }
        ]}}),
    );

    let out = Command::new(BIN)
        .args(["install", "claude-code"])
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "KERYX_SNAPSHOT_ROOT",
            env.home.join(".agentic/hooks-snapshot"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "install failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let settings = std::fs::read_to_string(env.home.join(".claude/settings.json")).unwrap();
    assert!(
        settings.contains(" run claude-code PreToolUse --snapshot "),
        "{settings}"
    );

    // The live source loses its gate; the snapshot the host reads keeps it.
    env.keryx_user_hooks(&json!({ "schemaVersion": "1.0.0", "hooks": {} }));

    let scenario = Scenario::new()
        .shell(&format!(
            "echo e2e > {}",
            sh_quote(marker.to_str().unwrap())
        ))
        .text("final text.");
    // The host's project settings stay empty: the wiring is the user's.
    let run = env.run(Host::ClaudeCode, &json!({}), &scenario);
    assert_eq!(run.code, 0, "Claude Code failed\n{}", run.describe());
    assert!(
        !env.lines("gate.calls").is_empty(),
        "the gate from the snapshot never ran\n{settings}\n{}",
        run.describe()
    );
    assert!(
        !marker.exists(),
        "the denied command ran\n{}",
        run.describe()
    );
    let results = run.tool_results(run.body(1));
    assert!(
        results.iter().any(|r| r.contains(REASON)),
        "the deny reason did not reach the model: {results:?}\n{}",
        run.describe()
    );
}
