//! `import`: a host's own hooks move into keryx-hooks (once, with the grants
//! they need), what keryx cannot run stays with the host, and `--undo` or
//! `uninstall` puts the host file back byte for byte.

use serde_json::{Value, json};

use crate::common::{Env, claude_bash, claude_payload, read_json};

/// A gate that counts its runs in the project and denies `rm -rf`.
const GATE: &str = "#!/bin/sh\necho run >> \"$CLAUDE_PROJECT_DIR/gate-runs\"\nif grep -q 'rm -rf'; then echo 'no rm -rf here' >&2; exit 2; fi\nexit 0\n";

const GATE_COMMAND: &str = "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/block-rm.sh";

/// A Claude Code settings file with hooks of every kind `import` meets.
fn claude_settings_with_hooks(env: &Env) -> String {
    // In the project: a sandboxed hook sees the project, and the test's
    // home sits under the sandbox's private /tmp.
    env.script(env.project.join(".claude/hooks/block-rm.sh"), GATE);
    let gate = GATE_COMMAND;
    serde_json::to_string_pretty(&json!({
        "model": "opus",
        "hooks": {
            "PreToolUse": [{
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": gate, "timeout": 10}]
            }],
            "PostToolUse": [{
                "matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": "cat >> ~/.claude/logs/edits.jsonl"}]
            }],
            "Notification": [{
                "hooks": [{"type": "command", "command": "notify-send \"$DISPLAY\" 'Claude needs you'"}]
            }],
            "Stop": [{
                "hooks": [{"type": "prompt", "prompt": "Are all tasks done?"}]
            }]
        }
    }))
    .unwrap()
        + "\n"
}

/// The backups import keeps in the state directory.
fn import_backups(env: &Env) -> Vec<std::path::PathBuf> {
    let dir = env.home.join(".local/state/keryx/imports");
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "bak"))
        .collect();
    found.sort();
    found
}

fn read(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn ids(hooks_file: &std::path::Path) -> Vec<String> {
    let v: Value = read_json(hooks_file);
    v["hooks"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|l| l.as_array().unwrap().iter())
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

fn entry(hooks_file: &std::path::Path, event: &str) -> Value {
    let v: Value = read_json(hooks_file);
    let list = v["hooks"][event].as_array().unwrap().clone();
    assert_eq!(list.len(), 1, "{event}: {list:?}");
    list[0].clone()
}

#[test]
fn claude_code_hooks_move_and_the_rest_stays_with_the_host() {
    let env = Env::new();
    let settings = env.write(env.claude_settings(), claude_settings_with_hooks(&env));
    let original = read(&settings);

    let r = env.run(&["import", "claude-code", "--scope", "user"]);
    r.code(0)
        .stdout_has("stays with the host: keryx-hooks has no `Notification` event")
        .stdout_has("a `type: \"prompt\"` hook is not a shell command")
        .stdout_has("granted sandbox.writable `~/.claude/logs`")
        .stdout_has("granted nothing beyond the sandbox's defaults")
        .stdout_has("2 new registrations");

    let hooks = env.user_hooks();
    let doc: Value = serde_json::from_str(&read(&hooks)).unwrap();
    assert_eq!(
        doc["$schema"],
        "https://keryx.dev/schema/hook-config.schema.json"
    );
    let gate = entry(&hooks, "PreToolUse");
    assert_eq!(gate["class"], "gate");
    assert_eq!(gate["matcher"], "Bash");
    assert_eq!(gate["timeoutMs"], 10_000, "Claude's timeout is in seconds");
    assert_eq!(
        gate["command"]["argv"],
        json!(["/bin/sh", "-c", GATE_COMMAND])
    );
    let log = entry(&hooks, "PostToolUse");
    assert_eq!(log["matcher"], "Edit|Write");
    assert_eq!(log["sandbox"]["writable"], json!(["~/.claude/logs"]));
    assert_eq!(log["timeoutMs"], 60_000, "Claude's default 600 s, capped");

    // The host keeps only what keryx-hooks cannot run, the rest as it was.
    let left: Value = serde_json::from_str(&read(&settings)).unwrap();
    assert_eq!(left["model"], "opus");
    assert_eq!(
        left["hooks"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["Notification", "Stop"]
    );
    assert_eq!(left["hooks"]["Stop"][0]["hooks"][0]["type"], "prompt");
    // The backup is in the state directory, not beside the host file.
    assert!(
        !env.home
            .join(".claude/settings.json.keryx-import.bak")
            .exists()
    );
    let backups = import_backups(&env);
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(read(&backups[0]), original);
    env.run(&["validate"]).code(0);

    // Run again: nothing new, nothing changed.
    let (hooks_once, settings_once) = (read(&hooks), read(&settings));
    env.run(&["import", "claude-code"])
        .code(0)
        .stdout_has("stays with the host");
    assert_eq!(read(&hooks), hooks_once);
    assert_eq!(read(&settings), settings_once);

    // Undo: the host file's bytes come back, the registrations go.
    env.run(&["import", "--undo", "claude-code"])
        .code(0)
        .stdout_has("as it was before the import; removed 2 imported hooks");
    assert_eq!(read(&settings), original);
    assert!(ids(&hooks).is_empty(), "{}", read(&hooks));
    assert!(import_backups(&env).is_empty());
    env.run(&["import", "--undo", "claude-code"])
        .code(0)
        .stdout_has("nothing imported to undo");
}

#[test]
fn an_imported_gate_runs_once_and_its_exit_2_denies() {
    let env = Env::new();
    env.write(env.claude_settings(), claude_settings_with_hooks(&env));
    env.run(&["import", "claude-code", "--scope", "user"])
        .code(0);
    let runs = env.project.join("gate-runs");

    let deny = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "c1", "rm -rf build").to_string(),
    );
    deny.code(0);
    let out: Value = serde_json::from_str(&deny.stdout).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "deny",
        "{}",
        deny.stdout
    );
    assert!(
        out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("no rm -rf here"),
        "{}",
        deny.stdout
    );
    assert_eq!(read(&runs), "run\n", "the imported gate ran exactly once");

    let allow = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "c2", "ls").to_string(),
    );
    allow.code(0);
    assert!(!allow.stdout.contains("\"deny\""), "{}", allow.stdout);
    assert_eq!(read(&runs), "run\nrun\n");

    // The log hook writes where it did under Claude Code, through its grant.
    let post = claude_payload(&env, "PostToolUse-basic-Edit.json");
    env.run_stdin(&["run", "claude-code", "PostToolUse"], post.to_string())
        .code(0);
    let logged = read(&env.home.join(".claude/logs/edits.jsonl"));
    assert!(logged.contains("PostToolUse"), "{logged}");
}

#[test]
fn a_dry_run_prints_the_plan_and_writes_nothing() {
    let env = Env::new();
    let settings = env.write(env.claude_settings(), claude_settings_with_hooks(&env));
    let original = read(&settings);
    env.run(&["import", "claude-code", "--dry-run"])
        .code(0)
        .stdout_has("would import as `claude-code-pretooluse-block-rm-sh-")
        .stdout_has("dry run: nothing was written");
    let r = env.run(&["import", "claude-code", "--dry-run", "--json"]);
    r.code(0);
    let v = r.json();
    assert_eq!(v["dryRun"], true);
    let hooks = v["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 4, "{v:#}");
    let post = hooks
        .iter()
        .find(|h| h["hostEvent"] == "PostToolUse")
        .unwrap();
    assert_eq!(post["action"], "import");
    assert_eq!(post["grants"]["writable"], json!(["~/.claude/logs"]));
    assert!(
        post["grants"]["why"][0]
            .as_str()
            .unwrap()
            .contains("~/.claude/logs/edits.jsonl")
    );
    let note = hooks
        .iter()
        .find(|h| h["hostEvent"] == "Notification")
        .unwrap();
    assert_eq!(note["action"], "leave");
    assert_eq!(read(&settings), original);
    assert!(!env.user_hooks().exists());
    assert!(import_backups(&env).is_empty());
}

#[test]
fn project_hooks_need_trust_before_they_run() {
    let env = Env::new();
    env.script(env.project.join(".claude/hooks/gate.sh"), GATE);
    let settings = env.write(
        env.project.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/gate.sh"}
        ]}]}})
        .to_string(),
    );
    let original = read(&settings);
    env.run(&["import", "claude-code", "--scope", "project"])
        .code(0)
        .stdout_has("`keryx-hooks trust`");
    assert_eq!(ids(&env.project_hooks()).len(), 1);
    let runs = env.project.join("gate-runs");
    env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "c1", "rm -rf x").to_string(),
    );
    assert!(!runs.exists(), "an untrusted project hook ran");

    env.run(&["trust", "--yes"]).code(0);
    let r = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "c2", "rm -rf x").to_string(),
    );
    assert!(r.stdout.contains("\"deny\""), "{}", r.stdout);
    assert_eq!(read(&runs), "run\n");

    env.run(&["import", "--undo", "--scope", "project", "claude-code"])
        .code(0);
    assert_eq!(read(&settings), original);
}

#[test]
fn install_points_at_import_and_uninstall_undoes_it() {
    let env = Env::new();
    let settings = env.write(env.claude_settings(), claude_settings_with_hooks(&env));
    let original = read(&settings);
    env.run(&["install", "claude-code"])
        .code(0)
        .stdout_has("has 2 hooks of its own")
        .stdout_has("`keryx-hooks import claude-code`");
    env.run(&["import", "claude-code"])
        .code(0)
        .stdout_has("updating the snapshot the hosts read your hooks from");
    let wired: Value = serde_json::from_str(&read(&settings)).unwrap();
    let shim = wired["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(shim.contains(" run claude-code PreToolUse"), "{shim}");
    assert!(!wired.to_string().contains("block-rm.sh"));
    // The host runs the snapshot, which now holds the imported gate.
    let key = shim.rsplit(' ').next().unwrap();
    let r = env.run_stdin(
        &["run", "claude-code", "PreToolUse", "--snapshot", key],
        claude_bash(&env, "c1", "rm -rf build").to_string(),
    );
    assert!(r.stdout.contains("no rm -rf here"), "{}", r.stdout);
    env.run(&["uninstall", "claude-code"])
        .code(0)
        .stdout_has("as it was before the import");
    assert_eq!(read(&settings), original);
    assert!(ids(&env.user_hooks()).is_empty());

    // Import first, then install, then uninstall: the same bytes again.
    env.run(&["import", "claude-code"]).code(0);
    env.run(&["install", "claude-code"]).code(0);
    env.run(&["uninstall", "claude-code"]).code(0);
    assert_eq!(read(&settings), original);
}

// ------------------------------------------------------------------ other hosts

#[test]
fn gemini_cli_tool_names_and_milliseconds() {
    let env = Env::new();
    let settings = env.write(
        env.home.join(".gemini/settings.json"),
        json!({"ui": {"theme": "dark"}, "hooks": {
            "BeforeTool": [{"matcher": "run_shell_command", "hooks": [
                {"type": "command", "name": "no-rm", "command": "/opt/hooks/bt-deny.sh", "timeout": 3000}
            ]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]
        }})
        .to_string(),
    );
    let original = read(&settings);
    env.run(&["import", "gemini-cli"])
        .code(0)
        .stdout_has("matcher `run_shell_command` becomes `Bash`");
    let e = entry(&env.user_hooks(), "PreToolUse");
    assert_eq!(e["matcher"], "Bash");
    assert_eq!(e["timeoutMs"], 3000, "Gemini's timeout is in milliseconds");
    assert_eq!(e["class"], "gate");
    let left: Value = serde_json::from_str(&read(&settings)).unwrap();
    assert_eq!(left["ui"]["theme"], "dark");
    assert!(left["hooks"].get("BeforeTool").is_none());
    assert!(left["hooks"].get("Notification").is_some());
    env.run(&["import", "--undo", "gemini-cli"]).code(0);
    assert_eq!(read(&settings), original);
}

#[test]
fn codex_config_toml_and_hooks_json() {
    let env = Env::new();
    let toml_text = "model = \"o3\"\n\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"/opt/cx/pre-deny.sh\"\ntimeout = 20\n\n[[hooks.PermissionRequest]]\n[[hooks.PermissionRequest.hooks]]\ntype = \"command\"\ncommand = \"/opt/cx/perm.sh\"\n";
    let config = env.write(env.home.join(".codex/config.toml"), toml_text);
    let hooks_json = env.write(
        env.home.join(".codex/hooks.json"),
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/opt/cx/stop-block.sh"}]}]}})
            .to_string(),
    );
    let hooks_json_text = read(&hooks_json);
    env.run(&["import", "codex"])
        .code(0)
        .stdout_has("keryx-hooks has no `PermissionRequest` event");
    let pre = entry(&env.user_hooks(), "PreToolUse");
    assert_eq!(pre["timeoutMs"], 20_000);
    assert_eq!(pre["matcher"], "Bash");
    assert_eq!(entry(&env.user_hooks(), "Stop")["class"], "gate");
    let left = read(&config);
    assert!(
        left.contains("model = \"o3\"") && left.contains("perm.sh"),
        "{left}"
    );
    assert!(!left.contains("pre-deny.sh"), "{left}");
    assert!(!read(&hooks_json).contains("stop-block.sh"));
    env.run(&["import", "--undo", "codex"]).code(0);
    assert_eq!(read(&config), toml_text);
    assert_eq!(read(&hooks_json), hooks_json_text);
}

/// deepagents-code's hooks.json is Claude Code's format: its hooks move in
/// with its tool names, and `--undo` puts the file back.
#[test]
fn deepagents_hooks_json() {
    let env = Env::new();
    let file = env.write(
        env.home.join(".deepagents/hooks.json"),
        json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "/opt/d/hook PreToolUse", "timeout": 30}
            ]}],
            "Notification": [{"matcher": "*", "hooks": [
                {"type": "command", "command": "/opt/d/hook Notification"}
            ]}]
        }})
        .to_string(),
    );
    let original = read(&file);
    env.run(&["import", "deepagents"]).code(0);
    let pre = entry(&env.user_hooks(), "PreToolUse");
    assert_eq!(pre["matcher"], "Bash");
    assert_eq!(pre["timeoutMs"], 30_000);
    assert!(read(&file).contains("Notification"));
    assert!(!read(&file).contains("/opt/d/hook PreToolUse"));
    env.run(&["import", "--undo", "deepagents"]).code(0);
    assert_eq!(read(&file), original);
}

#[test]
fn qwen_code_settings() {
    let env = Env::new();
    let settings = env.write(
        env.home.join(".qwen/settings.json"),
        json!({"model": {"name": "qwen3-coder-plus"}, "hooks": {
            "PreToolUse": [{"matcher": "run_shell_command|edit", "hooks": [
                {"type": "command", "command": "/opt/q/hook PreToolUse", "timeout": 30}
            ]}],
            "SessionStart": [{"matcher": "*", "hooks": [
                {"type": "command", "command": "cat ./CONTEXT.md", "timeout": 30}
            ]}],
            "Notification": [{"matcher": "*", "hooks": [
                {"type": "command", "command": "/opt/q/hook Notification", "timeout": 30}
            ]}]
        }})
        .to_string(),
    );
    let original = read(&settings);
    env.run(&["import", "qwen-code"]).code(0);
    let pre = entry(&env.user_hooks(), "PreToolUse");
    assert_eq!(pre["matcher"], "Bash|Edit");
    assert_eq!(pre["timeoutMs"], 30_000);
    assert_eq!(entry(&env.user_hooks(), "SessionStart")["class"], "context");
    assert!(read(&settings).contains("Notification"));
    env.run(&["import", "--undo", "qwen-code"]).code(0);
    assert_eq!(read(&settings), original);
}

#[test]
fn copilot_hook_files_beside_ours() {
    let env = Env::new();
    let mine = env.write(
        env.home.join(".copilot/hooks/mine.json"),
        json!({"version": 1, "hooks": {
            "preToolUse": [{"type": "command", "bash": "/opt/cp/hook.sh preToolUse", "timeoutSec": 15}],
            "notification": [{"type": "command", "bash": "/opt/cp/hook.sh notification"}]
        }})
        .to_string(),
    );
    let original = read(&mine);
    env.run(&["import", "copilot"])
        .code(0)
        .stdout_has("no `notification` event");
    let pre = entry(&env.user_hooks(), "PreToolUse");
    assert_eq!(pre["timeoutMs"], 15_000);
    assert_eq!(
        pre["command"]["argv"],
        json!(["/bin/sh", "-c", "/opt/cp/hook.sh preToolUse"])
    );
    assert!(!read(&mine).contains("preToolUse\""));
    env.run(&["import", "--undo", "copilot"]).code(0);
    assert_eq!(read(&mine), original);
}

#[test]
fn kimi_flat_hooks_list() {
    let env = Env::new();
    let text = "default_model = \"k2\"\n\n[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"Shell\"\ncommand = \"/opt/k/hook.sh PreToolUse\"\ntimeout = 30\n\n[[hooks]]\nevent = \"Notification\"\ncommand = \"/opt/k/hook.sh Notification\"\ntimeout = 30\n";
    let config = env.write(env.home.join(".kimi-code/config.toml"), text);
    env.run(&["import", "kimi"])
        .code(0)
        .stdout_has("no `Notification` event");
    let pre = entry(&env.user_hooks(), "PreToolUse");
    assert_eq!(pre["matcher"], "Bash");
    assert_eq!(pre["timeoutMs"], 30_000);
    let left = read(&config);
    assert!(
        left.contains("Notification") && !left.contains("hook.sh PreToolUse"),
        "{left}"
    );
    env.run(&["import", "--undo", "kimi"]).code(0);
    assert_eq!(read(&config), text);
}

#[test]
fn hosts_it_cannot_read_are_refused() {
    let env = Env::new();
    env.run(&["import", "opencode"])
        .code(1)
        .stderr_has("cannot import hooks from `opencode`");
    env.run(&["import", "kilo"])
        .code(1)
        .stderr_has("cannot import hooks from `kilo`");
}

#[test]
fn a_host_file_edited_between_imports_is_undone_as_far_as_it_can_be() {
    let env = Env::new();
    let settings = env.write(env.claude_settings(), claude_settings_with_hooks(&env));
    env.run(&["import", "claude-code"]).code(0);
    // A hook added to the host after the first import, then imported too.
    let mut v: Value = serde_json::from_str(&read(&settings)).unwrap();
    v["hooks"]["SessionEnd"] = json!([{"hooks": [
        {"type": "command", "command": "echo bye >> \"$CLAUDE_PROJECT_DIR/ended\""}
    ]}]);
    let with_new = serde_json::to_string_pretty(&v).unwrap();
    std::fs::write(&settings, &with_new).unwrap();
    env.run(&["import", "claude-code"])
        .code(0)
        .stdout_has("1 new registration ");
    assert_eq!(ids(&env.user_hooks()).len(), 3);
    assert!(!read(&settings).contains("SessionEnd"));

    // The second import comes back exactly; the first cannot (the file
    // was edited after it), so it stays, and the error names the backup.
    env.run(&["import", "--undo", "claude-code"])
        .code(1)
        .stderr_has("changed since the import")
        .stderr_has(".bak");
    assert_eq!(read(&settings), with_new);
    assert_eq!(ids(&env.user_hooks()).len(), 2);
    assert_eq!(import_backups(&env).len(), 1);
}

#[test]
fn what_a_repository_wrote_is_shown_escaped() {
    let env = Env::new();
    env.write(
        env.project.join(".claude/settings.json"),
        json!({"hooks": {"Pre\u{1b}[2JToolUse": [{"hooks": [
            {"type": "command", "command": "echo \u{1b}[31mhi"}
        ]}]}})
        .to_string(),
    );
    let r = env.run(&["import", "claude-code", "--scope", "project", "--dry-run"]);
    r.code(0).stdout_has("stays with the host");
    assert!(!r.stdout.contains('\u{1b}'), "{}", r.stdout);
}

// ------------------------------------------------ the host's own contract

/// A Copilot CLI safety gate as people write them: it reads Copilot's own
/// tool name (`bash`, not `Bash`) and answers in Copilot's flat shape.
const COPILOT_GATE: &str = "#!/bin/sh\nin=$(cat)\necho run >> \"$CLAUDE_PROJECT_DIR/copilot-runs\"\ncase \"$in\" in\n  *'\"toolName\":\"bash\"'*'git reset --hard'*) echo '{\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"no hard resets\"}' ;;\nesac\nexit 0\n";

fn copilot_pre(env: &Env, command: &str) -> String {
    json!({
        "sessionId": "s-copilot",
        "timestamp": 1,
        "cwd": env.project,
        "toolName": "bash",
        "toolArgs": {"command": command, "description": "run it"}
    })
    .to_string()
}

#[test]
fn a_copilot_gate_gets_copilots_payload_from_every_host() {
    let env = Env::new();
    let script = env.project.join(".github/hooks/no-reset.sh");
    env.script(&script, COPILOT_GATE);
    env.write(
        env.home.join(".copilot/hooks/mine.json"),
        json!({"version": 1, "hooks": {
            "preToolUse": [{"type": "command", "bash": script.display().to_string(), "timeoutSec": 10}]
        }})
        .to_string(),
    );
    env.run(&["import", "copilot"])
        .code(0)
        .stdout_has("keeps its GitHub Copilot CLI hook contract");
    let pre = entry(&env.user_hooks(), "PreToolUse");
    assert_eq!(pre["command"]["protocol"], "copilot");
    assert_eq!(pre["class"], "gate");

    let deny = env.run_stdin(
        &["run", "copilot", "preToolUse"],
        copilot_pre(&env, "git reset --hard HEAD~3"),
    );
    deny.code(0);
    let out: Value = serde_json::from_str(&deny.stdout).unwrap();
    assert_eq!(out["permissionDecision"], "deny", "{}", deny.stdout);
    assert!(deny.stdout.contains("no hard resets"), "{}", deny.stdout);

    // The same gate guards Claude Code: it gets the event in Copilot's shape.
    let from_claude = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "c1", "git reset --hard").to_string(),
    );
    from_claude.code(0);
    assert!(
        from_claude.stdout.contains("no hard resets"),
        "{}",
        from_claude.stdout
    );
    let allow = env.run_stdin(&["run", "copilot", "preToolUse"], copilot_pre(&env, "ls"));
    allow.code(0);
    assert!(!allow.stdout.contains("deny"), "{}", allow.stdout);
    assert_eq!(read(&env.project.join("copilot-runs")), "run\nrun\nrun\n");
}

#[test]
fn failures_have_the_effect_their_host_gives_them() {
    let env = Env::new();
    let hooks = env.project.join(".codex/hooks");
    // Codex: exit 2 with nothing on stderr is a failed hook; the command runs.
    env.script(
        hooks.join("quiet.sh"),
        "#!/bin/sh\ncat >/dev/null\nexit 2\n",
    );
    env.write(
        env.home.join(".codex/hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": hooks.join("quiet.sh").display().to_string()}
        ]}]}})
        .to_string(),
    );
    env.run(&["import", "codex"]).code(0);
    let payload = json!({
        "session_id": "s-codex", "turn_id": "t", "cwd": env.project,
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "tool_use_id": "u1"
    });
    let out = env.run_stdin(&["run", "codex", "PreToolUse"], payload.to_string());
    out.code(0);
    assert!(!out.stdout.contains("deny"), "{}", out.stdout);
    assert!(
        out.stdout.contains("as under OpenAI Codex CLI"),
        "the person is told the hook failed: {}",
        out.stdout
    );
}

#[test]
fn a_failing_notifier_never_blocks_stopping_and_fail_closed_is_a_choice() {
    let env = Env::new();
    let hooks = env.project.join(".claude/hooks");
    // A desktop notifier that cannot reach the bus, and a gate whose
    // crash its author may want to deny.
    env.script(
        hooks.join("notify.sh"),
        "#!/bin/sh\ncat >/dev/null\necho 'no bus' >&2\nexit 1\n",
    );
    env.script(
        hooks.join("gate.sh"),
        "#!/bin/sh\ncat >/dev/null\n[ -f \"$CLAUDE_PROJECT_DIR/ok\" ] || exit 1\necho '{\"decision\":\"block\",\"reason\":\"r\"}'\nexit 2\n",
    );
    let settings = |gate: bool| {
        let mut hooks_obj = json!({"Stop": [{"hooks": [
            {"type": "command", "command": hooks.join("notify.sh").display().to_string()}
        ]}]});
        if gate {
            hooks_obj["PreToolUse"] = json!([{"matcher": "Bash", "hooks": [
                {"type": "command", "command": hooks.join("gate.sh").display().to_string()}
            ]}]);
        }
        json!({ "hooks": hooks_obj }).to_string()
    };
    env.write(env.claude_settings(), settings(false));
    env.run(&["import", "claude-code"])
        .code(0)
        .stdout_has("never answers with a decision");
    assert_eq!(entry(&env.user_hooks(), "Stop")["class"], "observe");
    let stop = env.run_stdin(
        &["run", "claude-code", "Stop"],
        claude_payload(&env, "Stop-basic.json").to_string(),
    );
    stop.code(0);
    assert!(!stop.stdout.contains("block"), "{}", stop.stdout);

    env.write(env.claude_settings(), settings(true));
    env.run(&["import", "claude-code", "--fail-closed"])
        .code(0)
        .stdout_has("a crash or timeout denies (fail-closed)");
    let pre = entry(&env.user_hooks(), "PreToolUse");
    assert_eq!(pre["command"]["failClosed"], true);
    let deny = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "c1", "ls").to_string(),
    );
    deny.code(0);
    assert!(deny.stdout.contains("\"deny\""), "{}", deny.stdout);
}

#[test]
fn claude_codes_if_is_kept_so_a_guard_runs_only_where_it_did() {
    let env = Env::new();
    let hooks = env.project.join(".claude/hooks");
    env.script(
        hooks.join("env-guard.sh"),
        "#!/bin/sh\ncat >/dev/null\necho run >> \"$CLAUDE_PROJECT_DIR/env-guard-runs\"\necho 'not the env file' >&2\nexit 2\n",
    );
    env.write(
        env.claude_settings(),
        json!({"hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [
            {"type": "command", "if": "Write(.env*)", "command": hooks.join("env-guard.sh").display().to_string()}
        ]}]}})
        .to_string(),
    );
    env.run(&["import", "claude-code"]).code(0);
    assert_eq!(entry(&env.user_hooks(), "PreToolUse")["if"], "Write(.env*)");
    let write = |path: &str| {
        let p = json!({
            "session_id": "s", "cwd": env.project, "hook_event_name": "PreToolUse",
            "tool_name": "Write", "tool_use_id": "t",
            "tool_input": {"file_path": env.project.join(path), "content": "x"}
        });
        let out = env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string());
        out.code(0);
        out.stdout.clone()
    };
    assert!(!write("src/main.rs").contains("deny"));
    assert!(write(".env.local").contains("not the env file"));
    assert_eq!(read(&env.project.join("env-guard-runs")), "run\n");
}

#[test]
fn undo_resyncs_the_snapshot_so_nothing_runs_twice() {
    let env = Env::new();
    let settings = env.write(env.claude_settings(), claude_settings_with_hooks(&env));
    env.run(&["install", "claude-code"]).code(0);
    env.run(&["import", "claude-code"]).code(0);
    let wired: Value = serde_json::from_str(&read(&settings)).unwrap();
    let shim = wired["hooks"]["PreToolUse"][0]["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|h| {
            h["command"]
                .as_str()
                .filter(|c| c.contains(" run claude-code PreToolUse"))
        })
        .unwrap()
        .to_owned();
    let key = shim.rsplit(' ').next().unwrap().to_owned();
    let runs = env.project.join("gate-runs");
    let fire = |id: &str| {
        env.run_stdin(
            &["run", "claude-code", "PreToolUse", "--snapshot", &key],
            claude_bash(&env, id, "ls").to_string(),
        )
        .code(0);
    };
    fire("c1");
    assert_eq!(read(&runs), "run\n", "the snapshot runs the imported gate");

    env.run(&["import", "--undo", "claude-code"])
        .code(0)
        .stdout_has("updating the snapshot the hosts read your hooks from");
    // The host runs its own entry again; keryx-hooks no longer does.
    let restored = read(&settings);
    assert!(restored.contains("block-rm.sh"), "{restored}");
    fire("c2");
    assert_eq!(
        read(&runs),
        "run\n",
        "the gate ran through keryx-hooks after the undo"
    );
}

#[test]
fn a_moved_script_fails_validate_and_doctor_loudly() {
    let env = Env::new();
    env.write(env.claude_settings(), claude_settings_with_hooks(&env));
    env.run(&["import", "claude-code"]).code(0);
    env.run(&["validate"]).code(0);
    let script = env.project.join(".claude/hooks/block-rm.sh");
    std::fs::rename(&script, env.project.join("block-rm.sh")).unwrap();
    env.run(&["validate"])
        .code(1)
        .stdout_has("hook-imported-script-missing")
        .stdout_has(".claude/hooks/block-rm.sh");
    let doctor = env.run(&["doctor"]);
    assert_ne!(doctor.code, 0, "{}", doctor.stdout);
    assert!(doctor.stdout.contains("block-rm.sh"), "{}", doctor.stdout);
}

#[test]
fn a_subagent_stop_block_is_carried_back_to_claude_code() {
    let env = Env::new();
    let hooks = env.project.join(".claude/hooks");
    // A "finish the checklist first" hook: it keeps a subagent working
    // until a marker exists, as Claude Code lets it.
    env.script(
        hooks.join("checklist.sh"),
        "#!/bin/sh\ncat >/dev/null\n[ -f \"$CLAUDE_PROJECT_DIR/done\" ] && exit 0\necho 'run the tests first' >&2\nexit 2\n",
    );
    env.write(
        env.claude_settings(),
        json!({"hooks": {"SubagentStop": [{"hooks": [
            {"type": "command", "command": hooks.join("checklist.sh").display().to_string()}
        ]}]}})
        .to_string(),
    );
    env.run(&["import", "claude-code"]).code(0);
    assert_eq!(entry(&env.user_hooks(), "SubagentStop")["class"], "gate");

    let stop = || {
        env.run_stdin(
            &["run", "claude-code", "SubagentStop"],
            claude_payload(&env, "SubagentStop-subagent.json").to_string(),
        )
    };
    let blocked = stop();
    blocked.code(0);
    let out: Value = serde_json::from_str(&blocked.stdout).unwrap();
    assert_eq!(out["decision"], "block", "{}", blocked.stdout);
    assert!(
        out["reason"]
            .as_str()
            .unwrap()
            .contains("run the tests first"),
        "{}",
        blocked.stdout
    );

    env.write(env.project.join("done"), "");
    let finished = stop();
    finished.code(0);
    assert!(!finished.stdout.contains("block"), "{}", finished.stdout);
}

#[test]
fn explain_shows_the_payload_a_host_native_hook_gets() {
    let env = Env::new();
    let script = env.project.join(".github/hooks/no-reset.sh");
    env.script(&script, COPILOT_GATE);
    env.write(
        env.home.join(".copilot/hooks/mine.json"),
        json!({"version": 1, "hooks": {
            "preToolUse": [{"type": "command", "bash": script.display().to_string(), "timeoutSec": 10}]
        }})
        .to_string(),
    );
    env.run(&["import", "copilot"]).code(0);
    // Fired by Claude Code, the Copilot gate reads Copilot's shape.
    let payload = claude_bash(&env, "c1", "git reset --hard").to_string();
    let explained = env.run_stdin(
        &["explain", "claude-code", "PreToolUse", "--json"],
        payload.clone(),
    );
    explained.code(0);
    let v = explained.json();
    let hook = v["registrations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["protocol"] == "copilot")
        .unwrap_or_else(|| panic!("no copilot hook in {v}"));
    assert_eq!(hook["payload"]["toolName"], "bash", "{hook}");
    assert_eq!(
        hook["payload"]["toolArgs"]["command"], "git reset --hard",
        "{hook}"
    );
    let human = env.run_stdin(&["explain", "claude-code", "PreToolUse"], payload);
    human.code(0);
    assert!(
        human.stdout.contains("gets the copilot payload: {")
            && human.stdout.contains(r#""toolName":"bash""#),
        "{}",
        human.stdout
    );
}

/// The hooks that come with a host's enabled plugins (Claude Code's
/// registry, Codex's plugin cache, Kimi Code's installed list) are found
/// and listed as staying with the host; a disabled plugin's are not.
#[test]
fn enabled_plugins_hooks_of_every_host_are_listed_as_staying_with_it() {
    let env = Env::new();
    let hooks_json = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh"}
    ]}]}})
    .to_string();

    // Claude Code: installed_plugins.json and settings' enabledPlugins.
    let cc = env.home.join(".claude/plugins/cache");
    for name in ["on", "off"] {
        env.write(cc.join(name).join("hooks/hooks.json"), &hooks_json);
    }
    env.write(
        env.home.join(".claude/plugins/installed_plugins.json"),
        json!({"version": 2, "plugins": {
            "on@mp": [{"installPath": cc.join("on")}],
            "off@mp": [{"installPath": cc.join("off")}]
        }})
        .to_string(),
    );
    env.write(
        env.claude_settings(),
        json!({"enabledPlugins": {"on@mp": true, "off@mp": false}}).to_string(),
    );

    // Codex: ~/.codex/plugins/cache/<marketplace>/<name>/<version>, turned
    // on in config.toml.
    let cx = env.home.join(".codex/plugins/cache/mp");
    env.write(cx.join("cx-on/0.1.0/hooks/hooks.json"), &hooks_json);
    env.write(cx.join("cx-off/0.1.0/hooks/hooks.json"), &hooks_json);
    env.write(
        env.home.join(".codex/config.toml"),
        "[plugins.\"cx-on@mp\"]\nenabled = true\n\n[plugins.\"cx-off@mp\"]\nenabled = false\n",
    );

    // Kimi Code: plugins/installed.json, hooks in the plugin's manifest.
    let km = env.home.join(".kimi-code/plugins");
    let manifest = json!({"name": "p", "hooks": [
        {"event": "PreToolUse", "matcher": "Shell", "command": "sh ./guard.sh", "timeout": 5}
    ]})
    .to_string();
    env.write(km.join("km-on/kimi.plugin.json"), &manifest);
    env.write(km.join("km-off/.kimi-plugin/plugin.json"), &manifest);
    env.write(
        km.join("installed.json"),
        json!({"version": 1, "plugins": [
            {"id": "km-on", "root": km.join("km-on"), "enabled": true},
            {"id": "km-off", "root": km.join("km-off"), "enabled": false}
        ]})
        .to_string(),
    );

    for (host, on, off) in [
        ("claude-code", "on@mp", "off@mp"),
        ("codex", "cx-on@mp", "cx-off@mp"),
        ("kimi", "km-on", "km-off"),
    ] {
        let r = env.run(&["import", host, "--dry-run"]);
        r.code(0)
            .stdout_has(&format!("comes with the plugin `{on}`"));
        assert!(
            !r.stdout.contains(&format!("`{off}`")),
            "{host}: a disabled plugin's hooks are listed:\n{}",
            r.stdout
        );
        assert!(!r.stdout.contains("nothing to import"), "{}", r.stdout);
    }
}
