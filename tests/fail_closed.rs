//! A shim that cannot answer: install writes the host's fail-closed switch
//! (Claude Code `onFailure: "block"`) only when every copy of the host
//! found knows it, and says why not otherwise; `doctor` names the hosts
//! where a missing, killed or hung shim lets the tool run, runs the exact
//! command each host file holds with a payload in the host's shape, and
//! `doctor --fix` points a wiring whose binary moved at this one. The real
//! Claude Code refusing a tool call through a dead wiring is in `e2e`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{BIN, Env, SYSTEM_PATH, read_json};

/// A fake `claude` in `dir` that says it is `version`.
fn fake_claude(dir: &Path, version: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("claude");
    std::fs::write(&p, format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// An env whose `PATH` starts with its own `bin/`.
fn env_with_bin() -> (Env, PathBuf) {
    let base = Env::new();
    let bin = base.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let env = base.env("PATH", format!("{}:{SYSTEM_PATH}", bin.display()));
    (env, bin)
}

/// `(event, onFailure)` of every handler in Claude Code's user settings.
fn on_failure(env: &Env) -> Vec<(String, Option<String>)> {
    let v = read_json(env.claude_settings_user());
    let mut out = Vec::new();
    for (event, groups) in v["hooks"].as_object().unwrap() {
        for g in groups.as_array().unwrap() {
            for h in g["hooks"].as_array().unwrap() {
                out.push((
                    event.clone(),
                    h.get("onFailure")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                ));
            }
        }
    }
    out
}

trait UserSettings {
    fn claude_settings_user(&self) -> PathBuf;
}

impl UserSettings for Env {
    fn claude_settings_user(&self) -> PathBuf {
        self.home.join(".claude/settings.json")
    }
}

#[test]
fn on_failure_is_written_only_when_every_claude_found_knows_it() {
    let (env, bin) = env_with_bin();

    // No `claude` anywhere: not written, and install says why.
    env.run(&["install", "claude-code"]).code(0).stdout_has(
        "no `claude` was found on PATH or where Claude Code installs itself, so `onFailure: \"block\"`",
    );
    assert!(on_failure(&env).iter().all(|(_, f)| f.is_none()));

    // A new enough Claude Code on PATH: on the two gates it honours it on.
    fake_claude(&bin, "2.1.332");
    env.run(&["install", "claude-code"])
        .code(0)
        .stdout_has("wired with `onFailure: \"block\"`")
        .stdout_has("run `keryx-hooks doctor --fix`");
    let mut blocked: Vec<String> = on_failure(&env)
        .into_iter()
        .filter(|(_, f)| f.as_deref() == Some("block"))
        .map(|(e, _)| e)
        .collect();
    blocked.sort();
    assert_eq!(blocked, ["PreToolUse", "UserPromptSubmit"]);
    env.run(&["doctor"])
        .code(0)
        .stdout_has("ok    fail-closed (claude-code): ")
        .stdout_has("sets `onFailure: \"block\"` on `UserPromptSubmit`, `PreToolUse`");

    // An older copy an editor bundles: taken out again, and said so.
    let ext = env
        .home
        .join(".vscode/extensions/anthropic.claude-code-2.1.200-linux-x64/resources/native-binary");
    fake_claude(&ext, "2.1.200");
    env.run(&["doctor"])
        .code(0)
        .stdout_has("warn  fail-closed (claude-code): ")
        .stdout_has("is 2.1.200, older than 2.1.295");
    env.run(&["install", "claude-code"])
        .code(0)
        .stdout_has("is 2.1.200, older than 2.1.295");
    assert!(on_failure(&env).iter().all(|(_, f)| f.is_none()));

    // Updated: `doctor --fix` puts it back.
    fake_claude(&ext, "2.1.400");
    env.run(&["doctor", "--fix"]).code(0);
    assert_eq!(
        on_failure(&env)
            .iter()
            .filter(|(_, f)| f.as_deref() == Some("block"))
            .count(),
        2
    );
}

#[test]
fn doctor_names_the_hosts_that_fail_open_and_runs_each_wiring() {
    let (env, bin) = env_with_bin();
    fake_claude(&bin, "2.1.332");
    env.run(&[
        "install",
        "claude-code",
        "codex",
        "gemini-cli",
        "copilot",
        "kimi",
    ])
    .code(0);
    let out = env.run(&["doctor"]);
    out.code(0)
        .stdout_has("warn  fail-closed (codex): OpenAI Codex CLI lets the tool run when keryx-hooks is missing, killed or hung")
        .stdout_has("warn  fail-closed (gemini-cli): Gemini CLI lets the tool run when keryx-hooks is killed or hung")
        .stdout_has("warn  fail-closed (copilot): GitHub Copilot CLI lets the tool run when keryx-hooks is hung")
        .stdout_has("warn  fail-closed (kimi): ");
    for host in ["claude-code", "codex", "gemini-cli", "copilot", "kimi"] {
        out.stdout_has(&format!("ok    live ({host}): "));
    }
    // The probe calls leave nothing for `log`.
    assert!(!env.home.join(".local/state/keryx/sessions").exists());
    let log = env.run(&["log"]);
    assert!(!log.stdout.contains("PreToolUse"), "{}", log.stdout);

    // JSON carries the same checks.
    let v = env.run(&["doctor", "--json"]).json();
    let live = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with("live (")))
        .count();
    assert_eq!(live, 5, "{v}");
}

#[test]
fn a_moved_binary_fails_the_live_check_and_doctor_fix_points_the_host_at_this_one() {
    let (env, bin) = env_with_bin();
    fake_claude(&bin, "2.1.332");
    let old = env.tmp.path().join("old/bin/keryx-hooks");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &old).unwrap();
    env.run(&["init"]).code(0);
    let mut c = env.program(&old);
    c.args(["install", "claude-code"]);
    assert!(c.status().unwrap().success());
    std::fs::remove_file(&old).unwrap();

    env.run(&["doctor"])
        .code(1)
        .stdout_has("fail  live (claude-code): the `PreToolUse` command in ")
        .stdout_has("the command was not found (exit 127)")
        .stdout_has("fix: keryx-hooks doctor --fix");
    env.run(&["doctor", "--fix"])
        .code(0)
        .stdout_has("fixed: rewire: wired claude-code");
    env.run(&["doctor"])
        .code(0)
        .stdout_has("ok    live (claude-code): ");
    let text = std::fs::read_to_string(env.claude_settings_user()).unwrap();
    assert!(!text.contains(&*old.to_string_lossy()), "{text}");
}

#[test]
fn a_hung_wiring_is_reported_within_the_probe_timeout() {
    let (env, _) = env_with_bin();
    env.run(&["install", "codex"]).code(0);
    // The wiring's binary replaced by one that never answers.
    let config = env.home.join(".codex/config.toml");
    let hang = env.script(
        env.tmp.path().join("hang/keryx-hooks"),
        "#!/bin/sh\nsleep 60\n",
    );
    let text = std::fs::read_to_string(&config).unwrap();
    let bin = std::fs::canonicalize(BIN).unwrap();
    std::fs::write(
        &config,
        text.replace(&*bin.to_string_lossy(), &hang.to_string_lossy()),
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    env.run(&["doctor"])
        .code(1)
        .stdout_has("fail  live (codex): ")
        .stdout_has("it did not answer within 3 s");
    assert!(t0.elapsed() < std::time::Duration::from_secs(15));
}
