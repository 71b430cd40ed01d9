//! `install` / `uninstall` in lefthook's form: seed a host file with foreign
//! entries (comments and trailing commas for JSON, inline tables and dotted
//! keys for TOML) → install → foreign entries intact, ours once → install
//! again → byte-identical → uninstall → the original bytes. Plus timeouts in
//! each host's unit, concurrent installs, `kill -9` mid-install, refusals,
//! install/install.sh, the real Claude Code running the snapshot, the hosts'
//! plugin formats (`--format plugin`), and OpenCode's generated plugin file,
//! run under Node, and its payloads through the shim.

use std::hash::{BuildHasher, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{BIN, Env, Run, files_under, read_json};
use crate::e2e::{E2eEnv, Host, ModelLog, Scenario, sh_quote};

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
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [{ "type": "command", "command": "lint.sh", "timeout": 30 }] }
    ],
    "Notification": [{ "hooks": [{ "type": "command", "command": "notify-send done" }] }]
  },
  "permissions": { "allow": ["Bash(ls)"] }
}
"#,
        keep: &[
            r#"  "model": "opus","#,
            r#"      { "matcher": "Bash", "hooks": [{ "type": "command", "command": "lint.sh", "timeout": 30 }] }"#,
            r#"    "Notification": [{ "hooks": [{ "type": "command", "command": "notify-send done" }] }]"#,
            r#"  "permissions": { "allow": ["Bash(ls)"] }"#,
        ],
    },
    Seed {
        host: "gemini-cli",
        rel: ".gemini/settings.json",
        text: "\u{feff}{\r\n  // personal settings\r\n  \"ui\": {\"theme\": \"dark\"},\r\n  \"hooks\": {\r\n    \"BeforeTool\": [\r\n      {\"matcher\": \"write_file\", \"hooks\": [{\"name\": \"sec\", \"type\": \"command\", \"command\": \"sec.sh\", \"timeout\": 5000}]}\r\n    ]\r\n  }\r\n}\r\n",
        keep: &[
            "  // personal settings\r",
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
        host: "deepagents",
        rel: ".deepagents/hooks.json",
        text: "{\n  \"hooks\": {\n    \"PostToolUse\": [\n      { \"matcher\": \"Write|Edit\", \"hooks\": [{ \"type\": \"command\", \"command\": \"ruff format\", \"timeout\": 20 }] }\n    ]\n  }\n}\n",
        keep: &[
            "      { \"matcher\": \"Write|Edit\", \"hooks\": [{ \"type\": \"command\", \"command\": \"ruff format\", \"timeout\": 20 }] },",
        ],
    },
    Seed {
        host: "kimi",
        rel: ".kimi-code/config.toml",
        text: "default_model = \"kimi-k2\"\n\n[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"Bash\"\ncommand = \"node ~/.kimi-code/hooks/check.mjs\" # theirs\ntimeout = 5\n",
        keep: &["command = \"node ~/.kimi-code/hooks/check.mjs\" # theirs"],
    },
    Seed {
        host: "vibe",
        rel: ".vibe/hooks.toml",
        text: "# my hooks\n[[hooks]]\nname = \"fmt\" # theirs\ntype = \"post_tool\"\nmatch = \"file_system.write_file\"\ncommand = \"ruff format\"\ntimeout = 20.0\n\n[[hooks]]\nname = \"audit\"\ntype = \"pre_tool\"\ncommand = \"./audit.sh\"\nstrict = true\n",
        keep: &[
            "# my hooks",
            "name = \"fmt\" # theirs",
            "match = \"file_system.write_file\"",
            "timeout = 20.0",
            "command = \"./audit.sh\"\nstrict = true",
        ],
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
        let snapshots = std::fs::read_dir(env.snapshot_root()).unwrap();
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
    let claude = env.claude_settings();
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
    let snapshots = env.snapshot_root();
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
    let manifest: Value = read_json(snap.join("manifest.json"));
    assert_eq!(manifest["hosts"], json!(["claude-code"]), "{manifest}");
    // What the SessionStart drift check remembered of this snapshot's
    // manifest is removed with the snapshot.
    let memo = env
        .home
        .join(".local/state/keryx/manifest-memo")
        .join(format!(
            "{}.json",
            snap.file_name().unwrap().to_string_lossy()
        ));
    env.write(&memo, "{}");

    env.run(&["uninstall", "claude-code"])
        .code(0)
        .stdout_has("removed snapshot");
    assert!(!claude.exists());
    assert_eq!(std::fs::read_dir(&snapshots).unwrap().count(), 0);
    assert!(!memo.exists());
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
        "deepagents",
        "vibe",
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
    assert_eq!(timeout("deepagents", "PreToolUse"), 39);
    assert_eq!(timeout("kimi", "PreToolUse"), 39);
    assert_eq!(timeout("vibe", "pre_tool"), 39);
    assert_eq!(timeout("vibe", "post_agent"), 8);
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
    let path = env.write(env.claude_settings(), "{\"model\": \"opus\"}\n");
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
    let claude = env.write(env.claude_settings(), bad);
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

/// Copilot ignores a repository's hooks in a folder it does not trust
/// (captured with Copilot CLI 1.0.102): a project install says so.
#[test]
fn a_copilot_project_install_says_the_folder_must_be_trusted() {
    let env = Env::new();
    let run = env.run(&["install", "copilot", "--scope", "project"]);
    run.code(0);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("only in a folder it trusts"), "{said}");
    assert!(env.project.join(".github/hooks/keryx-hooks.json").is_file());
    let doctor: Value = serde_json::from_str(&env.run(&["doctor", "--json"]).stdout).unwrap();
    let check = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "copilot-trust")
        .unwrap_or_else(|| panic!("no copilot-trust check: {doctor:#}"));
    assert_eq!(check["status"], "warn", "{check:#}");
    let run = env.run(&["install", "copilot"]);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(!said.contains("only in a folder it trusts"), "{said}");
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
    assert!(!env.claude_settings().exists());
    env.run(&["uninstall", "claude-code", "--scope", "project"])
        .code(0);
    assert!(
        !std::fs::read_to_string(&path)
            .unwrap()
            .contains(" run claude-code ")
    );
}

/// A committed symlink must not make `install --scope project` write
/// outside the project: not a linked settings file (to the user's own, or
/// to `/etc`), not a linked `.claude` directory, not a dangling link.
#[test]
fn project_scope_never_writes_through_a_symlink_out_of_the_project() {
    let env = Env::new();
    let users = env.write(env.claude_settings(), "{\"model\": \"opus\"}\n");
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    let link = env.project.join(".claude/settings.json");
    std::os::unix::fs::symlink(&users, &link).unwrap();
    for args in [
        &["install", "claude-code", "--scope", "project"][..],
        &["install", "claude-code", "--scope", "project", "--dry-run"][..],
    ] {
        env.run(args)
            .code(1)
            .stderr_has("outside the project")
            .stderr_has("refusing to write a project-scope file there");
    }
    assert_eq!(
        std::fs::read_to_string(&users).unwrap(),
        "{\"model\": \"opus\"}\n"
    );
    assert!(
        !users
            .with_file_name("settings.json.keryx-hooks.bak")
            .exists()
    );
    // Nor does uninstalling at project scope take the user's own wiring out.
    env.run(&["install", "claude-code"]).code(0);
    let wired = std::fs::read_to_string(&users).unwrap();
    assert_ours_once("claude-code", &wired);
    env.run(&["uninstall", "claude-code", "--scope", "project"])
        .code(1)
        .stderr_has("outside the project");
    assert_eq!(std::fs::read_to_string(&users).unwrap(), wired);
    env.run(&["uninstall", "claude-code"]).code(0);
    assert_eq!(
        std::fs::read_to_string(&users).unwrap(),
        "{\"model\": \"opus\"}\n"
    );

    // To a system file: refused the same way (and never even read for a write).
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
    env.run(&["install", "claude-code", "--scope", "project"])
        .code(1)
        .stderr_has("resolves to `/etc/passwd`, outside the project");

    // The whole `.claude` directory linked to the user's.
    std::fs::remove_file(&link).unwrap();
    std::fs::remove_dir(env.project.join(".claude")).unwrap();
    std::os::unix::fs::symlink(env.home.join(".claude"), env.project.join(".claude")).unwrap();
    env.run(&["install", "claude-code", "--scope", "project"])
        .code(1)
        .stderr_has("outside the project");
    assert_eq!(
        std::fs::read_to_string(&users).unwrap(),
        "{\"model\": \"opus\"}\n"
    );
    // A link to a directory that does not exist yet is not followed either.
    std::fs::remove_file(env.project.join(".claude")).unwrap();
    std::os::unix::fs::symlink(env.home.join("elsewhere"), env.project.join(".claude")).unwrap();
    env.run(&["install", "claude-code", "--scope", "project"])
        .code(1)
        .stderr_has("leads nowhere");
    assert!(!env.home.join("elsewhere").exists());

    // A link that stays inside the project is fine.
    std::fs::remove_file(env.project.join(".claude")).unwrap();
    let inside = env.write(env.project.join("config/claude.json"), "{}\n");
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    std::os::unix::fs::symlink(&inside, &link).unwrap();
    env.run(&["install", "claude-code", "--scope", "project"])
        .code(0);
    assert_ours_once("claude-code", &std::fs::read_to_string(&inside).unwrap());
}

/// `doctor` and `status` read host files bounded and never block: a
/// settings file linked to `/dev/zero`, a FIFO, or a file over the cap is
/// reported as unreadable, not read.
#[test]
fn doctor_reads_host_files_bounded_and_never_blocks() {
    let env = Env::new();
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    let settings = env.project.join(".claude/settings.json");
    std::os::unix::fs::symlink("/dev/zero", &settings).unwrap();
    let fifo = env.project.join(".gemini/settings.json");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let big = env.claude_settings();
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    std::fs::File::create(&big)
        .unwrap()
        .set_len(4 * 1024 * 1024 + 1)
        .unwrap();

    let started = Instant::now();
    let mut child = env
        .cmd(&["doctor", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: a run that reads /dev/zero or waits on the FIFO is killed.
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("doctor did not finish: it read /dev/zero or blocked on a FIFO");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let details: Vec<String> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["detail"].as_str().unwrap().to_owned())
        .collect();
    let has = |needle: &str| details.iter().any(|d| d.contains(needle));
    assert!(has("is not a regular file"), "{details:#?}");
    assert!(has("larger than 4 MiB"), "{details:#?}");
    assert!(
        details
            .iter()
            .filter(|d| d.contains("is not a regular file"))
            .count()
            >= 2,
        "/dev/zero and the FIFO: {details:#?}"
    );
}

#[test]
fn a_failed_write_leaves_the_original_and_no_temp_file() {
    let env = Env::new();
    let seed = "{\"model\": \"opus\"}\n";
    let path = env.write(env.claude_settings(), seed);
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
        .env("KERYX_SNAPSHOT_ROOT", env.snapshot_root())
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
    let snapshots = std::fs::read_dir(env.snapshot_root()).unwrap();
    assert_eq!(snapshots.count(), 1);
}

/// Settings.json seeded with a foreign hook, for the race and crash tests.
const CLAUDE_SEED: &str = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint.sh\"}]}\n    ]\n  }\n}\n";

#[test]
fn ten_concurrent_installs_leave_valid_files_with_our_entries_once() {
    let env = Env::new();
    let claude = env.write(env.claude_settings(), CLAUDE_SEED);
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
    let claude = env.write(env.claude_settings(), CLAUDE_SEED);
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
    std::fs::create_dir_all(env.home.join(".qwen")).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new("sh")
            .arg(install_sh())
            .args(args)
            .current_dir(&env.project)
            .env_clear()
            .env("HOME", &env.home)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("KERYX_SNAPSHOT_ROOT", env.snapshot_root())
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
        out.contains("Claude Code: wired")
            && out.contains("Gemini CLI: wired")
            && out.contains("Qwen Code: wired"),
        "{out}"
    );
    assert!(!env.home.join(".codex").exists(), "{out}");
    // Completions and the manual page are installed from the binary itself.
    let data = env.home.join(".local/share");
    let bash = std::fs::read_to_string(data.join("bash-completion/completions/keryx-hooks"))
        .unwrap_or_default();
    assert!(
        bash.contains("doctor") && bash.contains("--snapshot"),
        "{out}"
    );
    for f in [
        "zsh/site-functions/_keryx-hooks",
        "fish/vendor_completions.d/keryx-hooks.fish",
    ] {
        assert!(
            data.join(f).metadata().is_ok_and(|m| m.len() > 100),
            "{f}: {out}"
        );
    }
    let man = std::fs::read_to_string(data.join("man/man1/keryx-hooks.1")).unwrap_or_default();
    assert!(man.contains(".TH keryx-hooks 1"), "{out}");
    assert_ours_once(
        "claude-code",
        &std::fs::read_to_string(env.claude_settings()).unwrap(),
    );
    assert!(env.user_hooks().is_file(), "no starter hooks.json");

    let out = run(&["codex"]);
    assert!(out.contains("OpenAI Codex CLI: wired"), "{out}");
    assert_ours_once(
        "codex",
        &std::fs::read_to_string(env.home.join(".codex/config.toml")).unwrap(),
    );
}

/// install/install.sh as a fresh machine runs it, with the binary under
/// test (`KERYX_HOOKS_BIN` skips the build) and `path` as its PATH.
fn install_sh_in(env: &Env, path: &std::ffi::OsStr) -> Command {
    let mut c = Command::new("/bin/sh");
    c.arg(install_sh())
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", path)
        .env("KERYX_SNAPSHOT_ROOT", env.snapshot_root())
        .env("KERYX_HOOKS_BIN", BIN)
        .stdin(Stdio::null());
    c
}

/// With no host set up, install.sh wires nothing and says how to wire one
/// by name with the binary it installed (not by running itself again).
#[test]
fn install_sh_with_no_host_found_names_the_command_that_wires_one() {
    let env = Env::new();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let run = Run::from(install_sh_in(&env, &path).output().unwrap());
    run.code(0)
        .stdout_has("keryx-hooks is installed; no host was wired.")
        .stderr_has("no agent host found: none of `~/.claude`")
        .stderr_has("`keryx-hooks install <host>`")
        .stderr_has("qwen-code");
    assert!(!run.stderr.contains("install.sh"), "{}", run.stderr);
    assert!(!env.home.join(".claude").exists());
}

/// A directory of symlinks to just `tools`, found on the test's PATH, to
/// run install.sh with as its whole PATH.
fn path_of(env: &Env, name: &str, tools: &[&str]) -> PathBuf {
    let dir = env.home.parent().unwrap().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for tool in tools {
        let found = std::env::split_paths(&path)
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("`{tool}` is not on PATH; install.sh needs it"));
        std::os::unix::fs::symlink(found, dir.join(tool)).unwrap();
    }
    dir
}

/// Without bubblewrap and without a terminal, install.sh stops before the
/// build, printing the package manager's command (never running it), and
/// goes on only when KERYX_HOOKS_NO_SANDBOX=1 accepts that sandboxed hooks
/// will not run.
#[test]
fn install_sh_without_bubblewrap_stops_with_the_command_that_installs_it() {
    let env = Env::new();
    let tools = ["dirname", "uname", "id", "mkdir"];
    let path = path_of(&env, "bin", &tools);
    let ran = env.home.parent().unwrap().join("apt-get-ran");
    env.script(
        path.join("apt-get"),
        &format!("#!/bin/sh\n: >'{}'\nexit 1\n", ran.display()),
    );
    let data = env.home.join(".local/share");

    let run = Run::from(install_sh_in(&env, path.as_os_str()).output().unwrap());
    run.code(1)
        .stderr_has("error: bubblewrap (`bwrap`) is not installed")
        .stderr_has("apt-get install -y bubblewrap\n")
        .stderr_has("KERYX_HOOKS_NO_SANDBOX=1 goes on without one")
        .stderr_has("fails as sandbox-unavailable");
    assert!(!ran.exists(), "apt-get was run without asking");
    assert!(!data.exists(), "install.sh went on: {run:?}");

    // No package manager it knows: the package to look for.
    let bare = path_of(&env, "bare", &tools);
    Run::from(install_sh_in(&env, bare.as_os_str()).output().unwrap())
        .code(1)
        .stderr_has("install the `bubblewrap` package with your system's package manager");

    let run = Run::from(
        install_sh_in(&env, path.as_os_str())
            .env("KERYX_HOOKS_NO_SANDBOX", "1")
            .output()
            .unwrap(),
    );
    run.code(0)
        .stderr_has("warning: no bubblewrap (`bwrap`): sandboxed hooks will not run")
        .stdout_has("keryx-hooks is installed; no host was wired.");
    assert!(data.join("man/man1/keryx-hooks.1").is_file(), "{run:?}");
    assert!(!ran.exists());
}

/// The real Claude Code, wired by `install claude-code` into a temp home: a
/// deny gate in the user hooks source fires from the snapshot, and editing
/// the live source afterwards changes nothing until the next sync.
#[test]
fn e2e_claude_code_runs_hooks_from_the_installed_snapshot() {
    const REASON: &str = "E2E-INSTALL-DENY: echo is not allowed here";
    let env = E2eEnv::new();
    let marker = env.path("denied-command-ran");
    let script = env.deny_echo_gate(REASON);
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

// ------------------------------------------------------------------ plugin formats

/// The one snapshot's manifest, as JSON.
fn only_manifest(env: &Env) -> Value {
    let root = env.snapshot_root();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let text = std::fs::read_to_string(dirs.remove(0).join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn plugin_format_writes_each_hosts_package_once_and_uninstall_removes_only_it() {
    // (host, manifest file, what must be in it)
    let cases = [
        (
            "claude-code",
            ".claude-plugin/plugin.json",
            "\"author\"",
            "plugin",
        ),
        (
            "gemini-cli",
            "gemini-extension.json",
            "\"version\"",
            "extension",
        ),
        (
            "codex",
            ".codex-plugin/plugin.json",
            "\"version\"",
            "plugin",
        ),
    ];
    for (host, manifest_file, needle, noun) in cases {
        let env = Env::new();
        let out = env.home.join("pkgs");
        let out_s = out.to_str().unwrap();
        let r = env.run(&["install", host, "--format", "plugin", "--out", out_s]);
        r.code(0)
            .stdout_has(&format!(
                "events in new {noun} `{}`",
                out.join(host).display()
            ))
            .stdout_has(" it ");
        let dir = out.join(host);
        let m: Value = read_json(dir.join(manifest_file));
        assert_eq!(m["name"], "keryx-hooks", "{host}");
        assert!(
            std::fs::read_to_string(dir.join(manifest_file))
                .unwrap()
                .contains(needle),
            "{host}"
        );
        // hooks/hooks.json: every mapped event once, and nothing but ours.
        let hooks_text = std::fs::read_to_string(dir.join("hooks/hooks.json")).unwrap();
        assert_ours_once(host, &hooks_text);
        let hooks: Value = serde_json::from_str(&hooks_text).unwrap();
        let commands: Vec<&str> = hooks["hooks"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|groups| groups.as_array().unwrap())
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .map(|h| h["command"].as_str().unwrap())
            .collect();
        assert_eq!(commands.len(), wired_events(host).len(), "{host}");
        assert!(
            commands
                .iter()
                .all(|c| c.starts_with(&format!("{} run {host} ", sh_quote(BIN)))),
            "{host}: {commands:?}"
        );
        // Nothing was written into the host's settings.
        assert!(!env.claude_settings().exists(), "{host}");
        assert!(!env.home.join(".codex/config.toml").exists(), "{host}");
        assert!(!env.home.join(".gemini/settings.json").exists(), "{host}");
        // The manifest records the package.
        let manifest = only_manifest(&env);
        assert_eq!(
            manifest["wirings"],
            json!([{"host": host, "scope": "user", "format": "plugin", "path": dir}]),
            "{host}"
        );

        let before = files_under(&dir);
        env.run(&["install", host, "--format", "plugin", "--out", out_s])
            .code(0)
            .stdout_has("already wired");
        assert_eq!(
            files_under(&dir),
            before,
            "{host}: second install changed bytes"
        );

        env.run(&["status"]).code(0).stdout_has("current");
        let d = env.run(&["doctor", "--json"]);
        let checks = d.json()["checks"].clone();
        let plugin_check = checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == format!("plugin ({host})"))
            .unwrap_or_else(|| panic!("{host}: no plugin check in {checks:#}"));
        assert_eq!(plugin_check["status"], "ok", "{plugin_check}");

        // A file of the user's beside ours survives the uninstall.
        let notes = env.write(dir.join("NOTES.md"), "mine\n");
        env.run(&["uninstall", host])
            .code(0)
            .stdout_has("which held only keryx-hooks entries");
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine\n");
        assert_eq!(
            files_under(&dir).keys().collect::<Vec<_>>(),
            ["NOTES.md"],
            "{host}"
        );
        assert_eq!(
            std::fs::read_dir(env.snapshot_root()).unwrap().count(),
            0,
            "{host}: the snapshot outlived its last wiring"
        );
    }
}

#[test]
fn plugin_format_is_refused_for_hosts_without_one_and_never_overwrites_a_stranger() {
    let env = Env::new();
    for host in ["cursor", "copilot", "kimi"] {
        env.run(&["install", host, "--format", "plugin"])
            .code(1)
            .stderr_has("has no plugin or extension format")
            .stderr_has("--format settings");
    }
    let out = env.home.join("pkgs");
    let theirs = env.write(
        out.join("claude-code/.claude-plugin/plugin.json"),
        r#"{"name": "their-plugin"}"#,
    );
    env.run(&[
        "install",
        "claude-code",
        "--format",
        "plugin",
        "--out",
        out.to_str().unwrap(),
    ])
    .code(1)
    .stderr_has("is not a keryx-hooks plugin");
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        r#"{"name": "their-plugin"}"#
    );
    assert!(!out.join("claude-code/hooks").exists());
}

/// Where OpenCode's plugin file goes at each scope.
fn opencode_file(env: &Env, project: bool) -> PathBuf {
    if project {
        env.project.join(".opencode/plugin/keryx-hooks.ts")
    } else {
        env.home.join(".config/opencode/plugin/keryx-hooks.ts")
    }
}

#[test]
fn opencode_gets_a_generated_plugin_file_at_each_scope() {
    for project in [false, true] {
        let env = Env::new();
        let scope = if project { "project" } else { "user" };
        let file = opencode_file(&env, project);
        // Someone else's plugin in the same directory.
        let theirs = env.write(
            file.with_file_name("theirs.ts"),
            "export const Theirs = async () => ({});\n",
        );
        env.run(&["install", "opencode", "--scope", scope])
            .code(0)
            .stdout_has("events in new plugin")
            .stdout_has("OpenCode: it is loaded when OpenCode next starts");
        let text = std::fs::read_to_string(&file).unwrap();
        // String-level checks of the TypeScript: ours, the wiring, the API.
        assert!(text.starts_with("// Generated by keryx-hooks"), "{text}");
        assert!(text.contains("import { spawn } from \"node:child_process\";"));
        assert!(text.contains("export const KeryxHooksPlugin = async ("));
        assert!(text.contains("hooks[\"tool.execute.before\"] = async (input, output) =>"));
        assert!(text.contains("throw new Error(answer.reason || \"denied by keryx-hooks\")"));
        let wiring_line = text
            .lines()
            .find_map(|l| l.strip_prefix("const WIRING = "))
            .unwrap();
        let wiring: Value = serde_json::from_str(wiring_line.strip_suffix(';').unwrap()).unwrap();
        assert_eq!(wiring["binary"], BIN);
        assert_eq!(wiring["host"], "opencode");
        let events: Vec<&String> = wiring["events"].as_object().unwrap().keys().collect();
        assert_eq!(events, wired_events("opencode").iter().collect::<Vec<_>>());
        // Milliseconds, above the shim's worst case (3 built-in gates of 5 s).
        assert!(
            wiring["events"]["tool.execute.before"].as_u64().unwrap() >= 16_500,
            "{wiring}"
        );
        let manifest = only_manifest(&env);
        assert_eq!(manifest["wirings"][0]["host"], "opencode");
        assert_eq!(manifest["wirings"][0]["scope"], scope);
        assert_eq!(manifest["wirings"][0]["format"], "plugin");
        assert_eq!(manifest["wirings"][0]["path"], json!(file));

        env.run(&["install", "opencode", "--scope", scope])
            .code(0)
            .stdout_has("already wired");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "{scope}");
        env.run(&["status"]).code(0).stdout_has("current");

        env.run(&["uninstall", "opencode", "--scope", scope])
            .code(0)
            .stdout_has("which held only keryx-hooks entries");
        assert!(!file.exists(), "{scope}");
        assert_eq!(
            std::fs::read_to_string(&theirs).unwrap(),
            "export const Theirs = async () => ({});\n"
        );
    }
}

/// Kilo Code, an OpenCode fork, gets the same plugin in its own
/// directories (it does not load `.opencode/`), calling `run kilo`; the
/// run, status and uninstall follow it there, and OpenCode's are untouched.
#[test]
fn kilo_gets_the_opencode_plugin_in_its_own_directories() {
    for project in [false, true] {
        let env = Env::new();
        let scope = if project { "project" } else { "user" };
        let file = if project {
            env.project.join(".kilo/plugins/keryx-hooks.ts")
        } else {
            env.home.join(".config/kilo/plugins/keryx-hooks.ts")
        };
        env.run(&["install", "kilo", "--scope", scope])
            .code(0)
            .stdout_has("events in new plugin")
            .stdout_has("Kilo Code: it is loaded when Kilo Code next starts");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("// Generated by keryx-hooks"), "{text}");
        assert!(text.contains("`keryx-hooks install kilo`"), "{text}");
        let wiring_line = text
            .lines()
            .find_map(|l| l.strip_prefix("const WIRING = "))
            .unwrap();
        let wiring: Value = serde_json::from_str(wiring_line.strip_suffix(';').unwrap()).unwrap();
        assert_eq!(wiring["binary"], BIN);
        assert_eq!(wiring["host"], "kilo");
        let events: Vec<&String> = wiring["events"].as_object().unwrap().keys().collect();
        assert_eq!(events, wired_events("kilo").iter().collect::<Vec<_>>());
        assert!(!opencode_file(&env, project).exists(), "{scope}");
        let manifest = only_manifest(&env);
        assert_eq!(manifest["wirings"][0]["host"], "kilo");
        assert_eq!(manifest["wirings"][0]["path"], json!(file));
        env.run(&["status"]).code(0).stdout_has("current");

        // The shim answers Kilo Code's events as OpenCode's: a built-in
        // deny of `cat .env` for the plugin to throw.
        let mut payload = opencode_fixture("tool.execute.before-basic-bash.json");
        payload["tool_input"]["command"] = json!("cat .env");
        payload["cwd"] = json!(env.project);
        let answer: Value = serde_json::from_str(
            &env.run_stdin(&["run", "kilo", "tool.execute.before"], payload.to_string())
                .code(0)
                .stdout,
        )
        .unwrap();
        assert_eq!(answer["decision"], "deny", "{answer}");

        env.run(&["install", "kilo", "--scope", scope])
            .code(0)
            .stdout_has("already wired");
        env.run(&["uninstall", "kilo", "--scope", scope])
            .code(0)
            .stdout_has("which held only keryx-hooks entries");
        assert!(!file.exists(), "{scope}");
    }
}

/// OpenCode's argument shapes for each hook the plugin registers, and the
/// fixture the payload it builds must match (key for key).
const OPENCODE_CALLS: &[(&str, &str, &str)] = &[
    (
        "tool.execute.before",
        r#"[{"tool": "bash", "sessionID": "ses_1", "callID": "call_1"}, {"args": {"command": "ls -la", "description": "Lists"}}]"#,
        "tool.execute.before-basic-bash.json",
    ),
    (
        "tool.execute.before",
        r#"[{"tool": "edit", "sessionID": "ses_1", "callID": "call_2"}, {"args": {"filePath": "/p/notes.txt", "oldString": "a", "newString": "b", "replaceAll": false}}]"#,
        "tool.execute.before-basic-edit.json",
    ),
    (
        "tool.execute.after",
        r#"[{"tool": "bash", "sessionID": "ses_1", "callID": "call_1", "args": {"command": "ls -la", "description": "Lists"}}, {"title": "ls", "output": "README.md\n", "metadata": {}}]"#,
        "tool.execute.after-basic-bash.json",
    ),
    (
        "chat.message",
        r#"[{"sessionID": "ses_1"}, {"message": {}, "parts": [{"type": "text", "text": "list the files"}]}]"#,
        "chat.message-basic.json",
    ),
    (
        "event",
        r#"[{"event": {"type": "session.created", "properties": {"info": {"id": "ses_1"}}}}]"#,
        "session.created-basic.json",
    ),
    (
        "event",
        r#"[{"event": {"type": "session.idle", "properties": {"sessionID": "ses_1"}}}]"#,
        "session.idle-basic.json",
    ),
];

fn opencode_fixture(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/payloads/opencode")
        .join(name);
    read_json(&p)
}

/// Runs `node` on `script` (an ES module) with `env`'s hermetic variables,
/// so the keryx-hooks the plugin spawns sees the test's home; fails the
/// test unless it exits 0.
fn node(env: &Env, script: &Path) -> std::process::Output {
    let out = Command::new("node")
        .arg(script)
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("XDG_DATA_HOME", env.home.join(".local/share"))
        .env("XDG_STATE_HOME", env.home.join(".local/state"))
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .env("KERYX_SNAPSHOT_ROOT", env.snapshot_root())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("node not found ({e}); install Node.js: `apt-get install -y nodejs`")
        });
    assert!(
        out.status.success(),
        "node failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The generated plugin, loaded by Node as OpenCode would load it (it is
/// written in the JavaScript subset of TypeScript, so Node can): each hook
/// sends the payload the fixtures show, a deny from keryx-hooks is thrown,
/// an allowed call is not, and a missing binary or one that does not answer
/// within the event's budget refuses the call.
#[test]
fn the_generated_opencode_plugin_runs_under_node_and_throws_a_deny() {
    let env = Env::new();
    env.run(&["install", "opencode"]).code(0);
    let plugin_ts = std::fs::read_to_string(opencode_file(&env, false)).unwrap();
    let work = env.home.join("node");

    // 1. With a capture script as the binary: the payload of every hook.
    let capture = env.script(
        work.join("capture.sh"),
        &format!(
            "#!/bin/sh\ncat > \"{}/$3.$$.json\"\n",
            work.join("captured").display()
        ),
    );
    std::fs::create_dir_all(work.join("captured")).unwrap();
    let captured_plugin = plugin_ts.replacen(
        &format!("\"binary\":{}", serde_json::to_string(BIN).unwrap()),
        &format!(
            "\"binary\":{}",
            serde_json::to_string(capture.to_str().unwrap()).unwrap()
        ),
        1,
    );
    assert_ne!(
        captured_plugin, plugin_ts,
        "the binary is not in the wiring line"
    );
    env.write(work.join("capture-plugin.mjs"), &captured_plugin);
    let mut driver = String::from(
        "import { KeryxHooksPlugin } from './capture-plugin.mjs';\n\
         const hooks = await KeryxHooksPlugin({ directory: '/home/user/project' });\n",
    );
    for (i, (hook, args, _)) in OPENCODE_CALLS.iter().enumerate() {
        driver.push_str(&format!(
            "await hooks[{hook:?}](...{args});\nawait new Promise((r) => setTimeout(r, 5));\n// {i}\n"
        ));
    }
    let script = env.write(work.join("capture-driver.mjs"), &driver);
    node(&env, &script);
    let captured: Vec<Value> = std::fs::read_dir(work.join("captured"))
        .unwrap()
        .map(|e| read_json(e.unwrap().path()))
        .collect();
    for (_, _, fixture) in OPENCODE_CALLS {
        let want = opencode_fixture(fixture);
        let event = want["hook_event_name"].as_str().unwrap();
        let keys = |v: &Value| {
            let mut k: Vec<String> = v
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            k.sort();
            k
        };
        let sent = captured
            .iter()
            .find(|c| {
                c["hook_event_name"] == event
                    && keys(&c["tool_input"]).len() == keys(&want["tool_input"]).len()
                    && c["tool_name"] == want["tool_name"]
            })
            .unwrap_or_else(|| panic!("no {fixture}-shaped payload in {captured:#?}"));
        assert_eq!(keys(sent), keys(&want), "{fixture}: {sent}");
        if want["tool_input"].is_object() {
            assert_eq!(
                keys(&sent["tool_input"]),
                keys(&want["tool_input"]),
                "{fixture}"
            );
        }
    }

    // 2. With the real binary: `cat .env` is denied by the built-in
    // ctx-guard and thrown; `ls` is not; a missing binary refuses the call.
    env.write(work.join("plugin.mjs"), &plugin_ts);
    let missing = plugin_ts.replacen(
        &format!("\"binary\":{}", serde_json::to_string(BIN).unwrap()),
        "\"binary\":\"/nonexistent/keryx-hooks\"",
        1,
    );
    env.write(work.join("missing-plugin.mjs"), &missing);
    // A keryx-hooks that never answers, and a 300 ms budget.
    let sleeper = env.script(work.join("sleeper.sh"), "#!/bin/sh\nexec sleep 30\n");
    let budget = serde_json::to_string(
        &serde_json::from_str::<Value>(
            plugin_ts
                .lines()
                .find_map(|l| l.strip_prefix("const WIRING = "))
                .unwrap()
                .strip_suffix(';')
                .unwrap(),
        )
        .unwrap()["events"]["tool.execute.before"],
    )
    .unwrap();
    let slow = plugin_ts
        .replacen(
            &format!("\"binary\":{}", serde_json::to_string(BIN).unwrap()),
            &format!(
                "\"binary\":{}",
                serde_json::to_string(sleeper.to_str().unwrap()).unwrap()
            ),
            1,
        )
        .replacen(
            &format!("\"tool.execute.before\":{budget}"),
            "\"tool.execute.before\":300",
            1,
        );
    assert!(slow.contains("\"tool.execute.before\":300"), "{slow}");
    env.write(work.join("slow-plugin.mjs"), &slow);
    let driver = r#"import { KeryxHooksPlugin } from './plugin.mjs';
import { KeryxHooksPlugin as Missing } from './missing-plugin.mjs';
import { KeryxHooksPlugin as Slow } from './slow-plugin.mjs';
const call = async (plugin, command) => {
  const hooks = await plugin({ directory: process.cwd() });
  try {
    await hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_node", callID: command }, { args: { command } });
    return "allowed";
  } catch (e) {
    return "thrown: " + e.message;
  }
};
console.log(JSON.stringify({
  env: await call(KeryxHooksPlugin, "cat .env"),
  ls: await call(KeryxHooksPlugin, "ls"),
  missing: await call(Missing, "ls"),
  slow: await call(Slow, "ls"),
}));
"#;
    let script = env.write(work.join("driver.mjs"), driver);
    let out = node(&env, &script);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let env_answer = v["env"].as_str().unwrap();
    assert!(
        env_answer.starts_with("thrown: ") && env_answer.contains(".env"),
        "{v}"
    );
    assert_eq!(v["ls"], "allowed", "{v}");
    let missing = v["missing"].as_str().unwrap();
    assert!(
        missing.starts_with("thrown: keryx-hooks: cannot run keryx-hooks"),
        "{v}"
    );
    assert_eq!(
        v["slow"],
        "thrown: keryx-hooks: keryx-hooks did not answer tool.execute.before within 300 ms; the tool call is refused",
        "{v}"
    );
}

/// What OpenCode 1.18.33 was seen to honour, through the generated plugin
/// under Node: a prompt deny is thrown from `chat.message` (the prompt
/// never reaches the model), prompt context becomes an extra text part,
/// SessionStart context a system message, and a subagent's child session
/// (a parentID) is filed under its parent: its tool calls carry the
/// child's id as agent_id, its prompt is not sent, its idle is a
/// SubagentStop.
#[test]
fn the_generated_opencode_plugin_gates_prompts_carries_context_and_knows_child_sessions() {
    let env = Env::new();
    env.run(&["install", "opencode"]).code(0);
    let plugin_ts = std::fs::read_to_string(opencode_file(&env, false)).unwrap();
    let work = env.home.join("node");
    let captured = work.join("captured");
    std::fs::create_dir_all(&captured).unwrap();
    let stub = env.script(
        work.join("stub.sh"),
        &format!(
            r#"#!/bin/sh
payload=$(cat)
n=$(ls '{dir}' | wc -l)
printf '%s' "$payload" > '{dir}'/$n.$3.json
case "$3:$payload" in
  chat.message:*forbidden*) echo '{{"decision":"deny","reason":"NO-FORBIDDEN-PROMPTS"}}' ;;
  chat.message:*) echo '{{"additionalContext":"PROMPT-CTX"}}' ;;
  session.created:*) echo '{{"additionalContext":"SESSION-CTX"}}' ;;
esac
"#,
            dir = captured.display()
        ),
    );
    let plugin = plugin_ts.replacen(
        &format!("\"binary\":{}", serde_json::to_string(BIN).unwrap()),
        &format!(
            "\"binary\":{}",
            serde_json::to_string(stub.to_str().unwrap()).unwrap()
        ),
        1,
    );
    assert_ne!(plugin, plugin_ts);
    env.write(work.join("plugin.mjs"), &plugin);
    let driver = r#"import { KeryxHooksPlugin } from './plugin.mjs';
const hooks = await KeryxHooksPlugin({ directory: process.cwd() });
const created = (id, parentID) => hooks.event({ event: { type: "session.created", properties: { info: parentID ? { id, parentID } : { id } } } });
const said = {};
await created("ses_top");
const system = [];
await hooks["experimental.chat.system.transform"]({ sessionID: "ses_top" }, { system });
said.system = system;
const ok = { message: {}, parts: [{ id: "prt_1", messageID: "msg_1", sessionID: "ses_top", type: "text", text: "list the files" }] };
await hooks["chat.message"]({ sessionID: "ses_top" }, ok);
said.parts = ok.parts.map((p) => p.text);
try {
  await hooks["chat.message"]({ sessionID: "ses_top" }, { message: {}, parts: [{ type: "text", text: "do the forbidden thing" }] });
  said.denied = "not thrown";
} catch (e) {
  said.denied = e.message;
}
await created("ses_child", "ses_top");
await hooks["chat.message"]({ sessionID: "ses_child" }, { message: {}, parts: [{ type: "text", text: "the task" }] });
await hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_child", callID: "c1" }, { args: { command: "ls" } });
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_child" } } });
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_top" } } });
console.log(JSON.stringify(said));
"#;
    let script = env.write(work.join("driver.mjs"), driver);
    let out = node(&env, &script);
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["system"], json!(["SESSION-CTX"]), "{said}");
    assert_eq!(
        said["parts"],
        json!(["list the files", "PROMPT-CTX"]),
        "{said}"
    );
    assert_eq!(said["denied"], "NO-FORBIDDEN-PROMPTS", "{said}");

    let mut sent: Vec<(usize, String, Value)> = std::fs::read_dir(&captured)
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let (n, rest) = name.split_once('.').unwrap();
            let event = rest.strip_suffix(".json").unwrap().to_owned();
            let v = read_json(captured.join(&name));
            (n.parse().unwrap(), event, v)
        })
        .collect();
    sent.sort_by_key(|s| s.0);
    let events: Vec<&str> = sent.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(
        events,
        [
            "session.created",
            "chat.message",
            "chat.message",
            "tool.execute.before",
            "session.idle",
            "session.idle"
        ],
        "{sent:#?}"
    );
    assert_eq!(sent[3].2["session_id"], "ses_top");
    assert_eq!(sent[3].2["agent_id"], "ses_child");
    assert_eq!(sent[4].2["session_id"], "ses_top");
    assert_eq!(sent[4].2["subagent_session_id"], "ses_child");
    assert!(sent[5].2.get("subagent_session_id").is_none());

    // The shim reads them so: the child's idle is a SubagentStop of the
    // parent session, which no Stop gate blocks.
    let a = keryx_hooks::hosts::adapter("opencode").unwrap();
    let idle = a.decode("session.idle", &sent[4].2).unwrap();
    assert_eq!(
        (
            idle.event,
            idle.session_id.as_str(),
            idle.str_field("subagentId")
        ),
        (
            keryx_hooks::events::Event::SubagentStop,
            "ses_top",
            Some("ses_child")
        )
    );
}

/// Every OpenCode payload fixture through `run opencode <event>`: a deny on
/// the tool call that reads `.env`, silence or one JSON object elsewhere.
#[test]
fn opencode_payload_fixtures_go_through_the_shim() {
    let env = Env::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/payloads/opencode");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 7, "{names:?}");
    for name in names {
        let mut payload = opencode_fixture(&name);
        payload["cwd"] = json!(env.project);
        let event = payload["hook_event_name"].as_str().unwrap().to_owned();
        assert!(name.starts_with(&format!("{event}-")), "{name}");
        let r = env.run_stdin(&["run", "opencode", &event], payload.to_string());
        r.code(0);
        if name.contains("denied") {
            let v = r.json();
            assert_eq!(v["decision"], "deny", "{name}: {v}");
            assert!(
                v["reason"].as_str().unwrap().contains(".env"),
                "{name}: {v}"
            );
        } else if !r.stdout.trim().is_empty() {
            let v = r.json();
            assert_ne!(v["decision"], "deny", "{name}: {v}");
        }
    }
}

#[test]
fn doctor_checks_a_host_file_once_when_the_project_scope_is_the_user_file() {
    // Run from the home directory, a host's project-scope file is its user
    // file; a project whose `.claude` links to the home's is the same case.
    let env = Env::new();
    env.run(&["install", "claude-code"]).code(0);
    std::os::unix::fs::symlink(env.home.join(".claude"), env.project.join(".claude")).unwrap();
    let v: Value = serde_json::from_str(&env.run(&["doctor", "--json"]).stdout).unwrap();
    let names: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for name in ["binary (claude-code)", "wiring (claude-code)"] {
        assert_eq!(
            names.iter().filter(|n| **n == name).count(),
            1,
            "{names:#?}"
        );
    }
}

#[test]
fn doctor_reports_disabled_built_in_gates_unsandboxed_user_hooks_and_drift_by_name() {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            {"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"},
            {"id": "loose", "class": "observe", "runsIn": "unsandboxed",
             "command": {"argv": ["true"]}},
            {"id": "boxed", "class": "observe", "command": {"argv": ["true"]}}
        ]}})
        .to_string(),
    );
    let v: Value = serde_json::from_str(&env.run(&["doctor", "--json"]).stdout).unwrap();
    let check = |name: &str| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} check: {v:#}"))
            .clone()
    };
    let gates = check("builtin-gates");
    assert_eq!(gates["status"], "warn");
    let detail = gates["detail"].as_str().unwrap();
    assert!(detail.contains("`keryx.ctx-guard`"), "{detail}");
    assert!(
        detail.contains(&env.user_hooks().display().to_string()),
        "{detail}"
    );
    let loose = check("unsandboxed-hooks");
    assert_eq!(loose["status"], "warn");
    let detail = loose["detail"].as_str().unwrap();
    assert!(
        detail.contains("`loose`") && !detail.contains("boxed"),
        "{detail}"
    );
    // The drift state keeps its name in JSON; the detail says it in words.
    let drift = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with("drift ("))
        .unwrap();
    assert_eq!(drift["state"], "never_migrated", "{drift}");
    assert!(
        drift["detail"]
            .as_str()
            .unwrap()
            .contains("no snapshot has been taken of this source")
    );
}

/// `install --host-sandbox` merges Claude Code's sandbox settings into the
/// file it wires, keeps what the person already denies and tightens what
/// they loosened, changes nothing the second time, shows in `status` and
/// `doctor`, and `uninstall` gives back the original bytes.
#[test]
fn host_sandbox_merges_tightens_reports_and_uninstalls_to_the_original_bytes() {
    let env = Env::new();
    let seed = r#"{
  "model": "opus",
  "sandbox": {
    "enabled": true,
    "allowUnsandboxedCommands": true,
    "filesystem": { "denyWrite": ["~/.ssh"] }
  }
}
"#;
    let path = env.write(env.home.join(".claude/settings.json"), seed);

    env.run(&["install", "claude-code", "--host-sandbox", "--dry-run"])
        .code(0)
        .stdout_has("host sandbox would be turned on")
        .stdout_has("\"failIfUnavailable\": true");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        seed,
        "dry run wrote"
    );

    env.run(&["install", "claude-code", "--host-sandbox"])
        .code(0)
        .stdout_has("host sandbox turned on");
    let once = std::fs::read(&path).unwrap();
    let v: Value = serde_json::from_slice(&once).unwrap();
    let sandbox = &v["sandbox"];
    assert_eq!(sandbox["enabled"], true, "{v:#}");
    assert_eq!(sandbox["failIfUnavailable"], true, "{v:#}");
    assert_eq!(sandbox["allowUnsandboxedCommands"], false, "{v:#}");
    let deny: Vec<&str> = sandbox["filesystem"]["denyWrite"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(
        deny[0], "~/.ssh",
        "the person's entry stays first: {deny:?}"
    );
    for protected in [
        env.keryx_home().join("hooks.json"),
        env.keryx_home().join("runtime.toml"),
        env.snapshot_root(),
        path.clone(),
        env.home.join(".codex/config.toml"),
    ] {
        let entry = format!("/{}", protected.display());
        assert!(deny.contains(&entry.as_str()), "{entry} not in {deny:?}");
    }
    assert!(
        deny.iter().any(|d| d.ends_with("/keryx-hooks")),
        "the binary the hosts run is not denied: {deny:?}"
    );
    assert_ours_once("claude-code", &String::from_utf8_lossy(&once));

    env.run(&["install", "claude-code", "--host-sandbox"])
        .code(0)
        .stdout_has("host sandbox already on");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        once,
        "second install changed bytes"
    );

    let status = env.run(&["status", "--json"]);
    status.code(0);
    assert_eq!(
        status.json()["sources"][0]["hosts"][0]["hostSandbox"],
        json!({"on": true, "missing": []})
    );
    let doctor = env.run(&["doctor", "--json"]).json();
    let check = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "host sandbox (claude-code)")
        .cloned()
        .unwrap_or_else(|| panic!("no host sandbox check: {doctor:#}"));
    assert_eq!(check["status"], "ok", "{check:#}");

    env.run(&["uninstall", "claude-code"])
        .code(0)
        .stdout_has("took the host sandbox settings keryx-hooks added out")
        .stdout_has("restored its original bytes");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        seed,
        "not restored"
    );

    // Wired without it, doctor says how to turn it on.
    env.run(&["install", "claude-code"]).code(0);
    let doctor = env.run(&["doctor", "--json"]).json();
    let check = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "host sandbox (claude-code)")
        .cloned()
        .unwrap();
    assert_eq!(check["status"], "warn", "{check:#}");
    assert_eq!(
        check["fix"],
        "keryx-hooks install claude-code --host-sandbox"
    );
}

/// A host whose sandbox keryx-hooks cannot set, or a plugin, is refused
/// before anything is written.
#[test]
fn host_sandbox_is_refused_where_it_cannot_be_set() {
    let env = Env::new();
    env.run(&["install", "codex", "--host-sandbox"])
        .code(1)
        .stderr_has("--host-sandbox is not available for OpenAI Codex CLI");
    env.run(&[
        "install",
        "claude-code",
        "--host-sandbox",
        "--format",
        "plugin",
    ])
    .code(1)
    .stderr_has("a plugin cannot carry it");
    assert!(!env.home.join(".codex").exists());
    assert!(!env.home.join(".claude").exists());
}

/// Mistral Vibe: one `[[hooks]]` table per event in `~/.vibe/hooks.toml`,
/// each with a name of its own (Vibe refuses two of one name), `type` the
/// event, and `strict = true` on `pre_tool` alone, so a failing shim refuses
/// a tool call but never blanks a tool's output or a turn; at project scope
/// the file Vibe reads only in a trusted folder, which install says.
#[test]
fn vibe_gets_named_entries_with_strict_on_the_gate_only() {
    let env = Env::new();
    env.run(&["install", "vibe"])
        .code(0)
        .stdout_has("wired 3 events");
    let path = env.home.join(".vibe/hooks.toml");
    let doc: toml_edit::DocumentMut = std::fs::read_to_string(&path).unwrap().parse().unwrap();
    let hooks = doc["hooks"].as_array_of_tables().unwrap();
    let mut seen = Vec::new();
    for t in hooks.iter() {
        let ty = t["type"].as_str().unwrap().to_owned();
        assert_eq!(t["name"].as_str().unwrap(), format!("keryx-hooks-{ty}"));
        assert_eq!(t["match"].as_str(), Some("*"));
        assert!(
            t["command"]
                .as_str()
                .unwrap()
                .contains(&format!(" run vibe {ty} --snapshot ")),
            "{t}"
        );
        assert_eq!(
            t.get("strict").and_then(|v| v.as_bool()),
            (ty == "pre_tool").then_some(true),
            "{ty}"
        );
        seen.push(ty);
    }
    assert_eq!(seen, ["pre_tool", "post_tool", "post_agent"]);
    env.run(&["status"]).code(0).stdout_has("wired");
    env.run(&["doctor"])
        .stdout_has("sets `strict: true` on `pre_tool`");

    // The shim answers in Vibe's shape: a deny with the reason, context
    // appended to the tool result.
    let payload = json!({
        "session_id": "s1", "cwd": env.project.to_str().unwrap(), "hook_event_name": "pre_tool",
        "tool_name": "file_system.bash", "tool_call_id": "c1",
        "tool_input": {"command": "cat ~/.ssh/id_rsa", "timeout": 120}
    });
    let out = env.run_stdin(&["run", "vibe", "pre_tool"], payload.to_string());
    out.code(0);
    let answer = out.json();
    assert_eq!(answer["decision"], "deny", "{answer}");
    assert!(
        answer["reason"].as_str().unwrap().contains("ssh"),
        "{answer}"
    );

    env.run(&["uninstall", "vibe"]).code(0);
    assert!(!path.exists(), "the file install created is removed again");

    env.run(&["install", "vibe", "--scope", "project"])
        .code(0)
        .stdout_has(".vibe/hooks.toml");
    assert!(env.project.join(".vibe/hooks.toml").exists());
}

/// Pi gets a generated extension in its own extension directory, beside a
/// person's own extensions, which stay byte for byte: ours once, a second
/// install changes nothing, uninstall removes only ours; the shim answers
/// the payload the extension builds for a tool call with a deny.
#[test]
fn pi_gets_a_generated_extension_beside_the_persons_own() {
    for project in [false, true] {
        let env = Env::new();
        let scope = if project { "project" } else { "user" };
        let dir = if project {
            env.project.join(".pi/extensions")
        } else {
            env.home.join(".pi/agent/extensions")
        };
        let theirs_text =
            "export default function (pi) { pi.on(\"tool_call\", async () => undefined); }\n";
        let theirs = env.write(dir.join("mine.ts"), theirs_text);
        let file = dir.join("keryx-hooks.ts");
        env.run(&["install", "pi", "--scope", scope])
            .code(0)
            .stdout_has("events in new extension")
            .stdout_has("it is loaded when Pi next starts");
        let once = std::fs::read_to_string(&file).unwrap();
        assert!(once.starts_with("// Generated by keryx-hooks"), "{once}");
        assert!(once.contains("export default function keryxHooks(pi)"));
        let wiring_line = once
            .lines()
            .find_map(|l| l.strip_prefix("const WIRING = "))
            .unwrap();
        let wiring: Value = serde_json::from_str(wiring_line.strip_suffix(';').unwrap()).unwrap();
        assert_eq!(wiring["binary"], BIN);
        assert_eq!(wiring["host"], "pi");
        let events: Vec<&String> = wiring["events"].as_object().unwrap().keys().collect();
        assert_eq!(events, wired_events("pi").iter().collect::<Vec<_>>());
        env.run(&["status"]).code(0).stdout_has("current");

        let payload = json!({
            "session_id": "2026-12-04T15-42-35-793Z_01a2", "cwd": env.project,
            "tool_call_id": "call_0_0", "tool_name": "bash",
            "tool_input": {"command": "cat .env"}
        });
        let answer: Value = serde_json::from_str(
            &env.run_stdin(&["run", "pi", "tool_call"], payload.to_string())
                .code(0)
                .stdout,
        )
        .unwrap();
        assert_eq!(answer["decision"], "deny", "{answer}");
        assert!(answer["reason"].as_str().is_some_and(|r| !r.is_empty()));

        env.run(&["install", "pi", "--scope", scope])
            .code(0)
            .stdout_has("already wired");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), once, "{scope}");
        env.run(&["uninstall", "pi", "--scope", scope])
            .code(0)
            .stdout_has("which held only keryx-hooks entries");
        assert!(!file.exists(), "{scope}");
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), theirs_text);
    }
}

/// Cline gets one generated executable per event in its hooks directory,
/// beside the person's own hook files, which install and uninstall leave
/// byte for byte; Cline runs the file with the event on stdin, and the
/// PreToolUse file answers a deny as Cline's cancel, or the same refusal
/// when the binary is gone.
#[test]
fn cline_gets_one_hook_file_per_event_beside_the_persons_own() {
    for project in [false, true] {
        let env = Env::new();
        let scope = if project { "project" } else { "user" };
        let dir = if project {
            env.project.join(".clinerules/hooks")
        } else {
            env.home.join(".cline/hooks")
        };
        std::fs::create_dir_all(&dir).unwrap();
        let theirs = "#!/bin/sh\necho '{\"contextModification\":\"theirs\"}'\n";
        std::fs::write(dir.join("PreToolUse.sh"), theirs).unwrap();
        std::fs::write(dir.join("TaskError"), theirs).unwrap();
        env.run(&["install", "cline", "--scope", scope])
            .code(0)
            .stdout_has("Cline CLI");
        for ev in wired_events("cline") {
            let f = dir.join(&ev);
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(
                text.starts_with("#!/bin/sh\n# Generated by keryx-hooks"),
                "{text}"
            );
            assert!(
                text.contains(&format!(" run cline {ev} --snapshot ")),
                "{text}"
            );
            let mode = std::fs::metadata(&f).unwrap().permissions().mode();
            assert_eq!(mode & 0o111, 0o111, "{ev} is executable");
        }
        let manifest = only_manifest(&env);
        assert_eq!(manifest["wirings"][0]["host"], "cline");
        env.run(&["status"]).code(0).stdout_has("current");

        // Cline's PreToolUse payload for an edit of a git hook (its editor
        // tool, as captured): a built-in refuses it, answered as Cline's
        // cancel.
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/payloads/cline/PreToolUse-basic.json");
        let mut payload = read_json(&fixture);
        let hook = env.project.join(".git/hooks/pre-commit");
        payload["tool_call"]["name"] = json!("editor");
        payload["tool_call"]["input"] = json!({"path": hook, "old_text": "a", "new_text": "b"});
        payload["workspaceInfo"]["rootPath"] = json!(env.project);
        let run_file = |stdin: &Value| -> String {
            let mut c = env.program(dir.join("PreToolUse"));
            c.stdin(Stdio::piped()).stdout(Stdio::piped());
            let mut child = c.spawn().unwrap();
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(stdin.to_string().as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            String::from_utf8(out.stdout).unwrap()
        };
        let answer: Value = serde_json::from_str(&run_file(&payload)).unwrap();
        assert_eq!(answer["cancel"], true, "{answer}");
        assert!(
            answer["errorMessage"]
                .as_str()
                .unwrap()
                .contains("git hook"),
            "{answer}"
        );

        env.run(&["install", "cline", "--scope", scope])
            .code(0)
            .stdout_has("already wired");
        env.run(&["uninstall", "cline", "--scope", scope]).code(0);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["PreToolUse.sh", "TaskError"], "{scope}");
        assert_eq!(
            std::fs::read_to_string(dir.join("PreToolUse.sh")).unwrap(),
            theirs
        );
    }
}
