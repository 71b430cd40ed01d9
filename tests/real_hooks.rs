//! Real public hooks (tests/fixtures/real-hooks/, each with its origin and
//! licence) for the hosts `import` reads, replayed twice with payloads built
//! from that host's captured payloads: once the way the host runs them (a
//! model of each host's contract, below, taken from the captures in each
//! host's notes, or from the host's documentation where marked), once moved
//! with `keryx-hooks import <host>` and fired with `keryx-hooks run <host>
//! <Event>`, the shim's answer read back with the same host rules. Compared:
//! the decision, the reason or context text, the message for the person, the
//! files the hook wrote and how often it ran.
//!
//! `REAL_HOOKS_REPORT=1` prints a table of every case and a summary line
//! (`same N of M (P%)`) instead of failing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{Env, Run, fixture, lines_in, run_fed};

/// Cases that behave differently under keryx-hooks, each with the reason.
/// The same list is in docs/IMPORT.md ("Real hooks that behave differently").
/// A case that differs and is not here fails, and so does one listed here
/// that now behaves the same.
const DIFFERS: &[(&str, &str)] = &[
    (
        "01-block-dangerous-commands/rm-home",
        "the built-in ctx-guard denies `rm -rf ~/` first (it would remove keryx-hooks' own files); a deny ends the chain, so the hook never runs and its log line is not written",
    ),
    (
        "02-protect-secrets/read-env",
        "the built-in ctx-guard denies a Read of `.env` first, with its own reason; the hook never runs and its log line is not written",
    ),
    (
        "02-protect-secrets/cat-env",
        "the built-in ctx-guard denies `cat .env` first, with its own reason; the hook never runs and its log line is not written",
    ),
    (
        "10-config-guard/rm-mcp",
        "the built-in ctx-guard denies `rm .mcp.json` first (a file Claude Code starts commands from); the decision is the same (deny), but the hook never runs and its log line is not written",
    ),
    (
        "22-serena-awareness/first-prompt",
        "it builds its marker directory in the project's `.claude/` in Python (`Path(…) / \".claude\" / …`), which import does not recognise as a write; with no grant the sandbox keeps `.claude/` read-only, creating the marker fails, and the first prompt gets no context",
    ),
    (
        "25-pr-provenance-stamp/stamp",
        "an explicit allow is never passed on (the spec's no-loosening of explicit allows: it would skip the host's permission prompt), and a hook's updatedInput is not applied, so the PR body goes out without the stamp",
    ),
    (
        "50-copilot-tool-guardian/rm-root",
        "the built-in ctx-guard denies `rm -rf /` first; the decision is the same (deny), but the hook never runs and its log line is not written",
    ),
    (
        "70-cd-git-allow/cd-git-log",
        "an explicit allow is never passed on (the spec's no-loosening of explicit allows: it would skip the host's permission prompt), so the cd+git compound still gets the host's prompt",
    ),
    (
        "88-file-lock-validator/write-mcp-json",
        "the built-in write gate (`keryx.security-check-output`) denies the Write of `.mcp.json` first (a file Claude Code starts commands from); the decision is the same (deny), with keryx-hooks' reason instead of the hook's",
    ),
    (
        "11-git-safety-check/force-push-warns-only",
        "the default `destructive` rule pack asks before a force-push (`destructive/git-push-force`), where the hook only warns; switch the rule off with `rules_off` to keep the hook's reading",
    ),
    (
        "39-codex-git-guard/force-push",
        "the default `destructive` rule pack denies a force-push to main first (`destructive/git-push-force-main`); the decision is the same (deny), with the rule's reason, and the hook never runs",
    ),
    (
        "96-codex-devkit-safety/reset-hard",
        "the default `destructive` rule pack asks before `git reset --hard` (`destructive/git-reset-hard`), and Codex has no ask, so keryx-hooks denies with the rule's reason; the hook itself answers ask, which Codex rejects as unsupported and runs the command; switch the rule off with `rules_off` to keep Codex's reading",
    ),
    (
        "96-codex-devkit-safety/drop-table",
        "two hooks on the call: the first denies (exit 2) and a deny ends the chain, so the second, an audit logger, does not run and `.devkit/audit.log` is not written; Codex runs both",
    ),
    (
        "107-cursor-protected-path-guard/write-elsewhere",
        "the hook answers `allow`; keryx-hooks never passes an explicit allow on, so Cursor still asks",
    ),
    (
        "121-copilot-git-guards/git-commit",
        "four guards on the call: the first denies and a deny ends the chain, so the three after it do not run; Copilot CLI runs them all, and none of them changes the decision (deny)",
    ),
    (
        "121-copilot-git-guards/git-push",
        "the push guard denies and a deny ends the chain, so the two guards after it do not run; the decision is the same (deny)",
    ),
    (
        "121-copilot-git-guards/amend",
        "the commit guard denies first and a deny ends the chain, so the three guards after it do not run; the decision is the same (deny)",
    ),
    (
        "99-copilot-hooks-demo/plain-bash",
        "the hook answers `allow` for every call it does not deny; keryx-hooks never passes an explicit allow on (it would skip the host's permission request), so Copilot CLI still asks",
    ),
];

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/real-hooks");

// ------------------------------------------------------------------ hosts

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Host {
    Claude,
    Codex,
    Gemini,
    Copilot,
    Cursor,
}

/// How a host lists its hooks: Claude-shaped groups (`matcher` plus a
/// `hooks` list of commands) or a flat list of commands per event.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Grouped,
    Flat,
}

/// One host's model: what it is called, how its hooks file is laid out,
/// which payload field its matchers test per event, and which of its events
/// `keryx-hooks install` wires to the shim.
struct HostModel {
    host: Host,
    name: &'static str,
    layout: Layout,
    /// `(event, payload field the matcher is tested against)`; events not
    /// listed have no matcher (every entry runs).
    matcher_fields: &'static [(&'static str, &'static str)],
    /// The host events the shim is wired to.
    shim_events: &'static [&'static str],
    /// The key of the command in an entry (Copilot: `bash`, else `command`).
    command_keys: &'static [&'static str],
}

const HOSTS: &[HostModel] = &[
    HostModel {
        host: Host::Claude,
        name: "claude-code",
        layout: Layout::Grouped,
        matcher_fields: &[
            ("PreToolUse", "tool_name"),
            ("PostToolUse", "tool_name"),
            ("PostToolUseFailure", "tool_name"),
            ("SessionStart", "source"),
            ("Notification", "notification_type"),
        ],
        shim_events: &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PreCompact",
            "Stop",
            "SubagentStart",
            "SubagentStop",
            "SessionEnd",
        ],
        command_keys: &["command"],
    },
    // Codex CLI 0.171.0 (captures: codex/NOTES.md): Claude-shaped hooks.json;
    // the matcher is tested against Claude's tool names (`Bash` matches
    // exec_command).
    HostModel {
        host: Host::Codex,
        name: "codex",
        layout: Layout::Grouped,
        matcher_fields: &[
            ("PreToolUse", "tool_name"),
            ("PostToolUse", "tool_name"),
            ("SessionStart", "source"),
        ],
        shim_events: &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
        ],
        command_keys: &["command"],
    },
    // Gemini CLI 0.61.0 (captures: gemini-cli/NOTES.md): Claude-shaped
    // groups in settings.json or an extension's hooks/hooks.json, its own
    // event and tool names.
    HostModel {
        host: Host::Gemini,
        name: "gemini-cli",
        layout: Layout::Grouped,
        matcher_fields: &[
            ("BeforeTool", "tool_name"),
            ("AfterTool", "tool_name"),
            ("SessionStart", "source"),
            ("SessionEnd", "reason"),
        ],
        shim_events: &[
            "SessionStart",
            "BeforeAgent",
            "BeforeTool",
            "AfterTool",
            "AfterAgent",
            "SessionEnd",
        ],
        command_keys: &["command"],
    },
    // Copilot CLI 1.0.102 (captures: copilot/NOTES.md): `{version, hooks:
    // {event: [{type, bash, cwd, env, timeoutSec}]}}`, camelCase events, no
    // matchers.
    HostModel {
        host: Host::Copilot,
        name: "copilot",
        layout: Layout::Flat,
        matcher_fields: &[],
        shim_events: &[
            "sessionStart",
            "userPromptSubmitted",
            "preToolUse",
            "postToolUse",
            "postToolUseFailure",
            "preCompact",
            "agentStop",
            "subagentStart",
            "subagentStop",
            "sessionEnd",
        ],
        command_keys: &["bash", "command"],
    },
    // Cursor (no offline CLI exists, see cursor/NOTES.md: the model is its
    // hooks documentation): `{version: 1, hooks: {event: [{command}]}}`.
    HostModel {
        host: Host::Cursor,
        name: "cursor",
        layout: Layout::Flat,
        matcher_fields: &[],
        shim_events: &[
            "sessionStart",
            "beforeSubmitPrompt",
            "preToolUse",
            "postToolUse",
            "postToolUseFailure",
            "preCompact",
            "stop",
            "subagentStart",
            "subagentStop",
            "sessionEnd",
        ],
        command_keys: &["command"],
    },
];

fn model(host: Host) -> &'static HostModel {
    HOSTS.iter().find(|m| m.host == host).unwrap()
}

/// Where a fixture's hooks come from: the file (or directory) in the
/// fixture that holds them, the host, the `import` scope, where the host
/// reads it (`~` the home, `$PROJECT` the project, `{hook}` the fixture's
/// name) and where the hook's own files go.
struct Source {
    file: &'static str,
    host: Host,
    scope: &'static str,
    config: &'static str,
    files: &'static str,
    package: Package,
}

#[derive(Clone, Copy, PartialEq)]
enum Package {
    /// The host's own settings or hooks file.
    File,
    /// A Claude Code plugin (`.claude-plugin/plugin.json`, `hooks/hooks.json`,
    /// commands using `${CLAUDE_PLUGIN_ROOT}`), installed from a marketplace.
    ClaudePlugin,
    /// A Gemini CLI extension (`gemini-extension.json`, `hooks/hooks.json`,
    /// commands using `${extensionPath}`).
    GeminiExtension,
}

const SOURCES: &[Source] = &[
    Source {
        file: "settings.json",
        host: Host::Claude,
        scope: "user",
        config: "~/.claude/settings.json",
        files: "~/.claude/hooks",
        package: Package::File,
    },
    Source {
        file: "claude-plugin",
        host: Host::Claude,
        scope: "user",
        config: "~/.claude/plugins/cache/corpus/{hook}/1.0.0/hooks/hooks.json",
        files: "~/.claude/plugins/cache/corpus/{hook}/1.0.0",
        package: Package::ClaudePlugin,
    },
    Source {
        file: "codex-hooks.json",
        host: Host::Codex,
        scope: "user",
        config: "~/.codex/hooks.json",
        files: "~/.codex/hooks",
        package: Package::File,
    },
    Source {
        file: "gemini-settings.json",
        host: Host::Gemini,
        scope: "user",
        config: "~/.gemini/settings.json",
        files: "~/.gemini/hooks",
        package: Package::File,
    },
    Source {
        file: "gemini-project-settings.json",
        host: Host::Gemini,
        scope: "project",
        config: "$PROJECT/.gemini/settings.json",
        files: "$PROJECT/.gemini/hooks",
        package: Package::File,
    },
    Source {
        file: "gemini-extension",
        host: Host::Gemini,
        scope: "user",
        config: "~/.gemini/extensions/{hook}/hooks/hooks.json",
        files: "~/.gemini/extensions/{hook}",
        package: Package::GeminiExtension,
    },
    Source {
        file: "copilot-hooks.json",
        host: Host::Copilot,
        scope: "user",
        config: "~/.copilot/hooks/{hook}.json",
        files: "~/.copilot/hooks",
        package: Package::File,
    },
    Source {
        file: "copilot-project-hooks.json",
        host: Host::Copilot,
        scope: "project",
        config: "$PROJECT/.github/hooks/{hook}.json",
        files: "$PROJECT/.github/hooks",
        package: Package::File,
    },
    Source {
        file: "cursor-hooks.json",
        host: Host::Cursor,
        scope: "user",
        config: "~/.cursor/hooks.json",
        files: "~/.cursor/hooks",
        package: Package::File,
    },
    Source {
        file: "cursor-project-hooks.json",
        host: Host::Cursor,
        scope: "project",
        config: "$PROJECT/.cursor/hooks.json",
        files: "$PROJECT/.cursor/hooks",
        package: Package::File,
    },
];

/// Files in a fixture that are about it, not part of the hook.
const META: &[&str] = &["origin.toml", "cases.json", "LICENSE", "NOTICE"];

// ------------------------------------------------------------------ cases

struct Case {
    hook: String,
    name: String,
    event: String,
    payload: Value,
    expect: String,
    setup: Vec<String>,
    source: &'static Source,
    dir: PathBuf,
}

impl Case {
    fn id(&self) -> String {
        format!("{}/{}", self.hook, self.name)
    }

    fn model(&self) -> &'static HostModel {
        model(self.source.host)
    }

    /// A path of the source's (`~`, `$PROJECT`, `{hook}`) in `env`.
    fn path(&self, template: &str, env: &Env) -> PathBuf {
        let t = template.replace("{hook}", &self.hook);
        if let Some(rest) = t.strip_prefix("~/") {
            env.home.join(rest)
        } else if let Some(rest) = t.strip_prefix("$PROJECT/") {
            env.project.join(rest)
        } else {
            PathBuf::from(t)
        }
    }

    /// The hooks file as the fixture holds it.
    fn config(&self) -> Value {
        let p = match self.source.package {
            Package::File => self.dir.join(self.source.file),
            _ => self.dir.join(self.source.file).join("hooks/hooks.json"),
        };
        read_json(&p)
    }
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A captured payload of `host` as a template (Cursor, which could not be
/// run, has payloads built from its documentation in the corpus itself).
fn payload_template(host: Host, name: &str) -> Value {
    match host {
        Host::Cursor => read_json(&Path::new(FIXTURES).join("payloads/cursor").join(name)),
        _ => fixture(model(host).name, name),
    }
}

fn cases() -> Vec<Case> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .filter(|p| p.file_name().unwrap().to_string_lossy().as_bytes()[0].is_ascii_digit())
        .collect();
    dirs.sort();
    let mut out = vec![];
    for dir in dirs {
        let hook = dir.file_name().unwrap().to_string_lossy().into_owned();
        let found: Vec<&'static Source> = SOURCES
            .iter()
            .filter(|s| dir.join(s.file).exists())
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{hook}: one hooks source, found {}",
            found.len()
        );
        let source = found[0];
        assert!(dir.join("origin.toml").is_file(), "{hook}: no origin.toml");
        let cases: Value = read_json(&dir.join("cases.json"));
        for c in cases.as_array().unwrap() {
            let mut payload = payload_template(source.host, c["payload"].as_str().unwrap());
            if let Some(set) = c.get("set").and_then(Value::as_object) {
                for (k, v) in set {
                    if v.is_null() {
                        payload.as_object_mut().unwrap().remove(k);
                    } else {
                        payload[k] = v.clone();
                    }
                }
            }
            out.push(Case {
                hook: hook.clone(),
                name: c["name"].as_str().unwrap().to_owned(),
                event: c["event"].as_str().unwrap().to_owned(),
                payload,
                expect: c["expect"].as_str().unwrap().to_owned(),
                setup: c["setup"]
                    .as_array()
                    .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default(),
                source,
                dir: dir.clone(),
            });
        }
    }
    out
}

/// `$PROJECT` and `$HOME` in the payload are the side's directories; the
/// host's working-directory fields are the project.
fn payload_for(case: &Case, env: &Env) -> Value {
    let project = env.project.to_string_lossy().into_owned();
    let home = env.home.to_string_lossy().into_owned();
    let text = case
        .payload
        .to_string()
        .replace("$PROJECT", &project)
        .replace("$HOME", &home);
    let mut p: Value = serde_json::from_str(&text).unwrap();
    p["cwd"] = json!(project);
    if case.source.host == Host::Cursor {
        p["workspace_roots"] = json!([project]);
    }
    p
}

// ------------------------------------------------------------------ sides

/// One side of the replay: a hermetic home with the hook installed where
/// its host reads it, counting wrappers for the interpreters on PATH, and
/// the case's setup run.
struct Side {
    env: Env,
    path: String,
    env_file: PathBuf,
}

const MARKER: &str = ".hook-runs";

/// The programs whose starts count as runs of a hook (each start appends a
/// line to the project's marker file, on both sides alike).
const COUNTED: &[&str] = &[
    "node", "python3", "jq", "bash", "date", "git", "cat", "head", "grep",
];

/// What the hooks need on the machine.
const NEEDED: &[&str] = &["node", "python3", "jq", "bash", "git", "uv"];

fn side(case: &Case) -> Side {
    let env = home_outside_tmp();
    install_hook(case, &env);
    let bin = env.home.join("bin");
    let marker = env.project.join(MARKER);
    for tool in COUNTED {
        let real = which(tool);
        env.script(
            bin.join(tool),
            &format!(
                "#!/bin/sh\necho {tool} >> '{}' 2>/dev/null\nexec '{}' \"$@\"\n",
                marker.display(),
                real.display()
            ),
        );
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env_file = env.home.join(".claude/session-env/hook.sh");
    env.write(&env_file, "");
    for step in &case.setup {
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(step)
            .current_dir(&env.project)
            .env_clear()
            .env("HOME", &env.home)
            .env("PATH", &path)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            // Both sides make the same commits: hashes must not depend on
            // the second each side ran in.
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: setup `{step}`: {}",
            case.id(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The setup's own starts are not the hook's.
    let _ = std::fs::remove_file(&marker);
    Side {
        env,
        path,
        env_file,
    }
}

/// Puts the fixture's hooks where the host reads them: its hooks file, and
/// the hook's own files beside it (a plugin or extension whole, registered
/// as installed and enabled).
fn install_hook(case: &Case, env: &Env) {
    let s = case.source;
    let files = case.path(s.files, env);
    match s.package {
        Package::File => {
            copy_hook_files(&case.dir, &files, Some(s.file));
            let config = case.path(s.config, env);
            env.write(
                &config,
                serde_json::to_string_pretty(&case.config()).unwrap(),
            );
        }
        Package::ClaudePlugin => {
            copy_hook_files(&case.dir.join(s.file), &files, None);
            let id = format!("{}@corpus", case.hook);
            env.write(
                env.home.join(".claude/plugins/installed_plugins.json"),
                serde_json::to_string_pretty(&json!({
                    "version": 2,
                    "plugins": {&id: [{
                        "scope": "user",
                        "installPath": files,
                        "version": "1.0.0",
                        "installedAt": "2026-01-01T00:00:00.000Z",
                        "lastUpdated": "2026-01-01T00:00:00.000Z"
                    }]}
                }))
                .unwrap(),
            );
            env.write(
                env.claude_settings(),
                serde_json::to_string_pretty(&json!({"enabledPlugins": {&id: true}})).unwrap(),
            );
        }
        Package::GeminiExtension => {
            copy_hook_files(&case.dir.join(s.file), &files, None);
        }
    }
}

/// A hermetic home like `Env::new`'s, but under /var/tmp rather than /tmp:
/// inside the sandbox /tmp is private, so a home there would hide the
/// host's hook directories from the hooks, which no real home does (and the
/// target directory lies inside this repository, which keryx-hooks refuses
/// as a home).
fn home_outside_tmp() -> Env {
    Env::in_dir(tempfile::tempdir_in("/var/tmp").unwrap())
}

fn copy_hook_files(from: &Path, to: &Path, skip: Option<&str>) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if META.contains(&name.as_str()) || Some(name.as_str()) == skip {
            continue;
        }
        if p.is_dir() {
            copy_hook_files(&p, &to.join(&name), None);
        } else {
            std::fs::copy(&p, to.join(&name)).unwrap();
            let mode = std::fs::metadata(&p).unwrap().permissions().mode();
            std::fs::set_permissions(to.join(&name), std::fs::Permissions::from_mode(mode))
                .unwrap();
        }
    }
}

fn which(tool: &str) -> PathBuf {
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .unwrap();
    let p = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        !p.is_empty(),
        "`{tool}` is not installed; the real-hooks corpus needs {NEEDED:?} (tests/run.sh installs them)"
    );
    std::fs::canonicalize(p).unwrap()
}

/// The environment the host gives its hooks (and so the shim, which it runs
/// as one of them), beyond HOME and PATH.
fn host_env(case: &Case, s: &Side) -> Vec<(String, String)> {
    let project = s.env.project.to_string_lossy().into_owned();
    let home = &s.env.home;
    let mut v: Vec<(&str, String)> = match case.source.host {
        // Claude Code 2.1.332 (hook-env-PreToolUse.txt).
        Host::Claude => vec![
            ("CLAUDE_PROJECT_DIR", project.clone()),
            ("CLAUDECODE", "1".into()),
        ],
        // Codex 0.171.0: only CODEX_HOME beyond the inherited environment.
        Host::Codex => vec![("CODEX_HOME", home.join(".codex").display().to_string())],
        // Gemini CLI 0.61.0 (hook-env-BeforeTool.txt).
        Host::Gemini => vec![
            ("GEMINI_PROJECT_DIR", project.clone()),
            ("GEMINI_CWD", project.clone()),
            (
                "GEMINI_SESSION_ID",
                case.payload["session_id"].as_str().unwrap_or("").into(),
            ),
            ("CLAUDE_PROJECT_DIR", project.clone()),
        ],
        // Copilot CLI 1.0.102 (NOTES: hook env).
        Host::Copilot => vec![
            ("COPILOT_CLI", "1".into()),
            ("COPILOT_HOME", home.join(".copilot").display().to_string()),
            ("COPILOT_PROJECT_DIR", project.clone()),
            ("CLAUDE_PROJECT_DIR", project.clone()),
        ],
        // Cursor (documentation).
        Host::Cursor => vec![
            ("CURSOR_PROJECT_DIR", project.clone()),
            ("CURSOR_VERSION", "1.7.0".into()),
            ("CLAUDE_PROJECT_DIR", project.clone()),
        ],
    };
    if case.source.host == Host::Claude && case.event == "SessionStart" {
        v.push(("CLAUDE_ENV_FILE", s.env_file.display().to_string()));
    }
    if case.source.package == Package::ClaudePlugin {
        v.push((
            "CLAUDE_PLUGIN_ROOT",
            case.path(case.source.files, &s.env).display().to_string(),
        ));
    }
    v.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

// ------------------------------------------------------------------ answers

/// What the person and the model end up with, in the host's terms.
#[derive(Debug, Default, Clone, PartialEq)]
struct Answer {
    /// `deny`, `ask`, `allow`, `block` (prompt, stop or post-tool), or none.
    decision: Option<String>,
    /// The reason the model is given for a decision.
    reason: String,
    /// Text added to the model's context.
    context: String,
    /// Text shown to the person.
    system_message: String,
}

/// How each host reads one hook's exit code and output. `code` is -1 for a
/// hook that was killed (a timeout).
fn contract(host: Host, event: &str, code: i32, stdout: &str, stderr: &str) -> Answer {
    match host {
        Host::Claude => claude_contract(event, code, stdout, stderr),
        Host::Codex => codex_contract(event, code, stdout, stderr),
        Host::Gemini => gemini_contract(event, code, stdout, stderr),
        Host::Copilot => copilot_contract(event, code, stdout),
        Host::Cursor => cursor_contract(event, code, stdout),
    }
}

fn as_object(stdout: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(stdout.trim()) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    }
}

fn text(v: &Value, keys: &[&str]) -> String {
    keys.iter()
        .find_map(|k| v.pointer(k).and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned()
}

/// Claude Code's reading of one hook's exit code and output, as observed
/// with Claude Code 2.1.332 in the captures' contract experiments (their
/// letters in the comments).
fn claude_contract(event: &str, code: i32, stdout: &str, stderr: &str) -> Answer {
    let mut a = Answer::default();
    match code {
        // (a), (c2): exit 2 blocks with stderr as the reason; stdout is not
        // read. On Stop it keeps Claude going with stderr (documented alike).
        2 => {
            // Blocking is only possible where the event can block.
            if matches!(
                event,
                "PreToolUse" | "UserPromptSubmit" | "Stop" | "SubagentStop" | "PostToolUse"
            ) {
                a.decision = Some(block_word(event).to_owned());
                a.reason = stderr.trim().to_owned();
            }
        }
        // (i): exit 0 with output that is not one JSON object is plain text,
        // and (d2): plain text on SessionStart (and UserPromptSubmit, d3's
        // place) is context for the model.
        0 => match as_object(stdout) {
            // (b1)–(b3), (c1), (e), (h), (d1), (d3): the JSON fields.
            Some(v) => a = claude_json(event, &v),
            None => {
                if matches!(event, "SessionStart" | "UserPromptSubmit") {
                    a.context = stdout.trim().to_owned();
                }
            }
        },
        // (a2): any other exit is a non-blocking error; nothing reaches the
        // model and the call goes on.
        _ => {}
    }
    a
}

/// Claude Code's reading of a JSON answer: `permissionDecision` and its
/// reason (b1, b2, b3), a top-level block decision with its reason (c1, e,
/// h), `additionalContext` (d1, d3) and `systemMessage`.
fn claude_json(event: &str, v: &Value) -> Answer {
    let mut a = Answer::default();
    let hso = &v["hookSpecificOutput"];
    if let Some(d) = hso["permissionDecision"].as_str() {
        a.decision = Some(d.to_owned());
        a.reason = text(hso, &["/permissionDecisionReason"]);
    }
    if v["decision"].as_str() == Some("block") {
        a.decision = Some(block_word(event).to_owned());
        a.reason = text(v, &["/reason"]);
    }
    a.context = text(hso, &["/additionalContext"]);
    a.system_message = text(v, &["/systemMessage"]);
    a
}

/// Codex CLI 0.171.0. Observed (codex/NOTES.md): PreToolUse's
/// `permissionDecision: deny` and exit 2 with stderr both block the command
/// with that text (x-pre-deny, x-pre-exit2); Stop's `decision: block`
/// continues with the reason (x-stop-block). From its documentation: JSON
/// is read only on exit 0, in Claude Code's shape; exit 2 blocks with
/// stderr, and exit 2 with nothing on stderr is a failed hook (the call
/// goes on); a PreToolUse `allow` or `ask` is rejected as unsupported (a
/// failed hook: the call goes on); plain stdout on SessionStart and UserPromptSubmit is context;
/// other exits are failures that change nothing.
fn codex_contract(event: &str, code: i32, stdout: &str, stderr: &str) -> Answer {
    let mut a = Answer::default();
    match code {
        2 if !stderr.trim().is_empty() => {
            if matches!(
                event,
                "PreToolUse" | "UserPromptSubmit" | "Stop" | "PostToolUse"
            ) {
                a.decision = Some(block_word(event).to_owned());
                a.reason = stderr.trim().to_owned();
            }
        }
        0 => match as_object(stdout) {
            Some(v) => {
                a = claude_json(event, &v);
                // Codex's output parser accepts only deny on PreToolUse: an
                // `allow` or `ask` is rejected as unsupported, the hook
                // counts as failed, and the command runs.
                if matches!(a.decision.as_deref(), Some("allow" | "ask")) {
                    a = Answer::default();
                }
            }
            None => {
                if matches!(event, "SessionStart" | "UserPromptSubmit") {
                    a.context = stdout.trim().to_owned();
                }
            }
        },
        _ => {}
    }
    a
}

/// Gemini CLI 0.61.0. Observed (gemini-cli/NOTES.md): BeforeTool's
/// `decision: deny` and exit 2 with stderr block the tool with that text
/// (g-bt-deny, g-bt-exit2); BeforeAgent's `decision: block` blocks the
/// prompt (g-ba-block) and its `additionalContext` reaches the model
/// (g-ba-ctx); AfterAgent's `decision: block` continues with the reason
/// (g-aa-block). From its documentation: `systemMessage` is shown to the
/// person, exit 0 with plain text (not JSON) is shown to the person too,
/// `additionalContext` of SessionStart and AfterTool reaches the model,
/// `allow` changes nothing, and any other exit is a warning only.
fn gemini_contract(event: &str, code: i32, stdout: &str, stderr: &str) -> Answer {
    let blocks = matches!(event, "BeforeTool" | "BeforeAgent" | "AfterAgent");
    let word = if event == "BeforeTool" {
        "deny"
    } else {
        "block"
    };
    let mut a = Answer::default();
    match code {
        2 if blocks => {
            a.decision = Some(word.to_owned());
            a.reason = stderr.trim().to_owned();
        }
        0 => match as_object(stdout) {
            Some(v) => {
                if blocks && matches!(v["decision"].as_str(), Some("deny" | "block")) {
                    a.decision = Some(word.to_owned());
                    a.reason = text(&v, &["/reason"]);
                }
                if matches!(event, "BeforeAgent" | "SessionStart" | "AfterTool") {
                    a.context = text(&v, &["/hookSpecificOutput/additionalContext"]);
                }
                a.system_message = text(&v, &["/systemMessage"]);
            }
            None => a.system_message = stdout.trim().to_owned(),
        },
        _ => {}
    }
    a
}

/// Copilot CLI 1.0.102, all observed (copilot/NOTES.md): on preToolUse,
/// `permissionDecision: deny` denies with its reason (a), `ask` denies as
/// it cannot ask (f), `allow` skips the permission request (g), exit 2
/// denies without passing stderr on (b), any other non-zero exit denies
/// (fails closed, c), a timeout lets the call run (d) and so does output
/// that is not JSON (e); `additionalContext` reaches the model on
/// preToolUse (h), sessionStart (i), userPromptSubmitted (j2) and
/// postToolUse (k); `decision: block` blocks a prompt (j1) and continues
/// after agentStop (l); exit 2 on other events is ignored (j3, u), and on
/// postToolUseFailure its stderr (or `additionalContext`) reaches the
/// model (q, q2).
fn copilot_contract(event: &str, code: i32, stdout: &str) -> Answer {
    let mut a = Answer::default();
    if event == "preToolUse" && code != 0 && code != -1 {
        a.decision = Some("deny".into());
        return a;
    }
    if code != 0 {
        return a;
    }
    let Some(v) = as_object(stdout) else {
        return a;
    };
    match event {
        "preToolUse" => {
            match v["permissionDecision"].as_str() {
                Some("deny" | "ask") => {
                    a.decision = Some("deny".into());
                    a.reason = text(&v, &["/permissionDecisionReason"]);
                }
                Some("allow") => a.decision = Some("allow".into()),
                _ => {}
            }
            a.context = text(&v, &["/additionalContext"]);
        }
        "userPromptSubmitted" | "agentStop" | "subagentStop" => {
            if v["decision"].as_str() == Some("block") {
                a.decision = Some("block".into());
                a.reason = text(&v, &["/reason"]);
            }
            if event == "userPromptSubmitted" {
                a.context = text(&v, &["/additionalContext"]);
            }
        }
        "sessionStart" | "postToolUse" | "postToolUseFailure" => {
            a.context = text(&v, &["/additionalContext"]);
        }
        _ => {}
    }
    a
}

/// Cursor, from its hooks documentation (no run was possible): the
/// `before*` gates answer `permission` (`allow`, `deny`, `ask`) with
/// `agent_message` for the model and `user_message` for the person
/// (camelCase in older releases); exit 2 denies; any other failure lets the
/// action go on (hooks fail open unless `failClosed`); beforeSubmitPrompt's
/// `continue: false` blocks the prompt; stop's `followup_message` sends the
/// agent on; sessionStart's `additional_context` reaches the model; output
/// of the `after*` events is not read.
fn cursor_contract(event: &str, code: i32, stdout: &str) -> Answer {
    let gate = matches!(
        event,
        "beforeShellExecution" | "beforeMCPExecution" | "beforeReadFile" | "preToolUse"
    );
    let mut a = Answer::default();
    if code == 2 && gate {
        a.decision = Some("deny".into());
        return a;
    }
    if code != 0 {
        return a;
    }
    let Some(v) = as_object(stdout) else {
        return a;
    };
    match event {
        _ if gate => {
            if let Some(p) = v["permission"].as_str() {
                a.decision = Some(p.to_owned());
                a.reason = text(&v, &["/agent_message", "/agentMessage"]);
                a.system_message = text(&v, &["/user_message", "/userMessage"]);
            }
        }
        "beforeSubmitPrompt" if v["continue"].as_bool() == Some(false) => {
            a.decision = Some("block".into());
            a.reason = text(&v, &["/user_message", "/userMessage"]);
        }
        "stop" | "subagentStop" => {
            let follow = text(&v, &["/followup_message"]);
            if !follow.is_empty() {
                a.decision = Some("block".into());
                a.reason = follow;
            }
        }
        "sessionStart" => a.context = text(&v, &["/additional_context"]),
        _ => {}
    }
    a
}

/// How restrictive a decision is.
fn rank(d: Option<&str>) -> u8 {
    match d {
        None => 0,
        Some("allow") => 1,
        Some("ask") => 2,
        Some(_) => 3,
    }
}

/// What Claude Code (and Codex) call a block on `event`.
fn block_word(event: &str) -> &'static str {
    if event == "PreToolUse" {
        "deny"
    } else {
        "block"
    }
}

// ------------------------------------------------------------------ runs

/// One command of the host's hooks file for an event.
struct Entry {
    matcher: Option<String>,
    command: String,
    env: Vec<(String, String)>,
    cwd: Option<String>,
}

fn entries(case: &Case, config: &Value) -> Vec<Entry> {
    let m = case.model();
    let list = config["hooks"][&case.event]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let command = |h: &Value| {
        m.command_keys
            .iter()
            .find_map(|k| h[*k].as_str())
            .map(str::to_owned)
    };
    let mut out = vec![];
    for group in list {
        match m.layout {
            Layout::Grouped => {
                for h in group["hooks"].as_array().into_iter().flatten() {
                    if let Some(c) = command(h) {
                        out.push(Entry {
                            matcher: group["matcher"].as_str().map(str::to_owned),
                            command: c,
                            env: vec![],
                            cwd: None,
                        });
                    }
                }
            }
            Layout::Flat => {
                if let Some(c) = command(&group) {
                    out.push(Entry {
                        matcher: group["matcher"].as_str().map(str::to_owned),
                        command: c,
                        env: group["env"]
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                            .collect(),
                        cwd: group["cwd"].as_str().map(str::to_owned),
                    });
                }
            }
        }
    }
    out
}

/// The hosts' matcher rules: empty or `*` is every call, a plain `A|B` list
/// is exact names, anything else an unanchored regex, tested against the
/// event's field in [`HostModel::matcher_fields`]; events without one have
/// no matcher.
fn matches(case: &Case, matcher: Option<&str>, payload: &Value) -> bool {
    let m = match matcher {
        None | Some("") | Some("*") => return true,
        Some(m) => m,
    };
    let Some((_, field)) = case
        .model()
        .matcher_fields
        .iter()
        .find(|(e, _)| *e == case.event)
    else {
        return true;
    };
    let subject = payload[*field].as_str().unwrap_or_default();
    if m.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '|')
    {
        m.split('|').any(|n| n == subject)
    } else {
        regex::Regex::new(m).unwrap().is_match(subject)
    }
}

/// Runs the case's entries the way its host does: each command with
/// `/bin/sh -c` (Gemini first substitutes `${extensionPath}`), the payload
/// on stdin, in the project (Cursor runs a user hook in `~/.cursor`,
/// Copilot in the entry's `cwd` below the project), with the host's
/// environment and the entry's own, the answers combined in order.
fn as_host_runs(case: &Case, s: &Side) -> Answer {
    let payload = payload_for(case, &s.env);
    let mut answer = Answer::default();
    let files = case.path(case.source.files, &s.env);
    for e in entries(case, &case.config()) {
        if !matches(case, e.matcher.as_deref(), &payload) {
            continue;
        }
        let command = e
            .command
            .replace("${extensionPath}", &files.to_string_lossy())
            .replace("${workspacePath}", &s.env.project.to_string_lossy());
        let cwd = match (case.source.host, case.source.scope) {
            (Host::Cursor, "user") => s.env.home.join(".cursor"),
            _ => s.env.project.join(e.cwd.as_deref().unwrap_or(".")),
        };
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(command)
            .current_dir(cwd)
            .env_clear()
            .env("HOME", &s.env.home)
            .env("PATH", &s.path)
            .envs(host_env(case, s))
            .envs(e.env.iter().cloned())
            .stdin(Stdio::piped());
        let run = run_fed(cmd, payload.to_string().into_bytes());
        let a = contract(
            case.source.host,
            &case.event,
            run.code,
            &run.stdout,
            &run.stderr,
        );
        // With several hooks on one call the most restrictive answer wins.
        if rank(a.decision.as_deref()) > rank(answer.decision.as_deref()) {
            answer.decision = a.decision;
            answer.reason = a.reason;
        }
        answer.context.push_str(&a.context);
        answer.system_message.push_str(&a.system_message);
    }
    answer
}

/// The commands the host still runs for the case's event after `import`:
/// those left in its hooks file (what keryx-hooks has no event for, or
/// cannot express, stays with the host, which keeps running it), or all of
/// a plugin's or extension's while it stays installed as it was.
fn kept_by_host(case: &Case, env: &Env) -> Vec<String> {
    let config = case.path(case.source.config, env);
    let Ok(text) = std::fs::read_to_string(&config) else {
        return vec![];
    };
    let Ok(now) = serde_json::from_str::<Value>(&text) else {
        return vec![];
    };
    if case.source.package == Package::ClaudePlugin {
        let settings = read_json(&env.claude_settings());
        if settings["enabledPlugins"][format!("{}@corpus", case.hook)] != json!(true) {
            return vec![];
        }
    }
    let before: Vec<String> = entries(case, &case.config())
        .into_iter()
        .map(|e| e.command)
        .collect();
    entries(case, &now)
        .into_iter()
        .map(|e| e.command)
        .filter(|c| before.contains(c))
        .collect()
}

/// Moves the hooks with `import` (and trusts the project's copy, as a
/// person would after a project import), then fires the event through the
/// shim. `Ok(None)` when the entries stayed with the host: then the host
/// runs them as before, and the shim must not run them a second time
/// (checked by the run count, which the caller compares). `Err` when the
/// import failed or left a hooks source it could have moved.
fn through_keryx(case: &Case, s: &Side) -> Result<Option<Answer>, String> {
    let env = &s.env;
    let m = case.model();
    let import = env.run(&["import", m.name, "--scope", case.source.scope]);
    if import.code != 0 {
        return Err(format!(
            "import failed: {}",
            first_line(&import.stderr, &import.stdout)
        ));
    }
    if case.source.scope == "project" {
        let trust = env.run(&["trust", "--yes"]);
        if trust.code != 0 {
            return Err(format!(
                "trust failed: {}",
                first_line(&trust.stderr, &trust.stdout)
            ));
        }
    }
    let kept = !kept_by_host(case, env).is_empty();
    // A package's hooks stay with the host, which keeps running them; import
    // must say so rather than report nothing to import.
    if kept && case.source.package != Package::File {
        if !import
            .stdout
            .contains("stays with the host: it comes with the")
        {
            return Err(format!(
                "`import {}` did not list the {} as staying with the host: {}",
                m.name,
                match case.source.package {
                    Package::ClaudePlugin => "plugin's hooks/hooks.json",
                    _ => "extension's hooks/hooks.json",
                },
                first_line(&import.stdout, &import.stderr)
            ));
        }
        return Ok(None);
    }
    if !m.shim_events.contains(&case.event.as_str()) {
        if !kept {
            return Err(format!(
                "the {} entry left the host's hooks file, but keryx-hooks is not wired to that event",
                case.event
            ));
        }
        return Ok(None);
    }
    let payload = payload_for(case, env);
    let mut cmd = env.cmd(&["run", m.name, &case.event]);
    cmd.env("PATH", &s.path).envs(host_env(case, s));
    let run = run_fed(cmd, payload.to_string().into_bytes());
    if kept {
        if runs(env) != 0 {
            return Err("the entry stayed with the host and the shim ran it too".into());
        }
        return Ok(None);
    }
    Ok(Some(keryx_answer(case, &run)))
}

fn first_line(a: &str, b: &str) -> String {
    let t = if a.trim().is_empty() { b } else { a };
    t.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// The shim's reply read back with the host's rules.
fn keryx_answer(case: &Case, run: &Run) -> Answer {
    contract(
        case.source.host,
        &case.event,
        run.code,
        &run.stdout,
        &run.stderr,
    )
}

// ------------------------------------------------------------------ files

/// Files under the home and the project, by path with digit runs folded
/// (dated log names), with a digest of their bytes. Left out: what
/// `import` and keryx-hooks themselves write (the host's hooks file and its
/// backups, keryx-hooks' own state), the counting wrappers and their marker.
fn files(case: &Case, env: &Env) -> BTreeMap<String, u64> {
    let config = case.path(case.source.config, env);
    let settings = env.claude_settings();
    let skip = |p: &Path| {
        let s = p.to_string_lossy();
        s.starts_with(&*config.to_string_lossy())
            || s.starts_with(&*settings.to_string_lossy())
            || s.ends_with("installed_plugins.json")
    };
    // npm keeps its own logs and update checks under ~/.npm.
    let home_skip = [
        ".keryx", ".agentic", ".local", ".config", ".cache", ".npm", "bin",
    ];
    let mut out = BTreeMap::new();
    walk(env, &env.home, &env.home, "~", &home_skip, &skip, &mut out);
    walk(
        env,
        &env.project,
        &env.project,
        "project",
        // Object names hash the commit's time, which differs between the two
        // runs; the index, the branch ref and COMMIT_EDITMSG show a commit.
        &[MARKER, ".metaproject", ".git/logs", ".git/objects"],
        &skip,
        &mut out,
    );
    out
}

fn walk(
    env: &Env,
    root: &Path,
    dir: &Path,
    label: &str,
    skip_rel: &[&str],
    skip: &dyn Fn(&Path) -> bool,
    out: &mut BTreeMap<String, u64>,
) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd {
        let p = e.unwrap().path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        // The sandbox's own placeholders (created empty so that they can be
        // mounted read-only), not anything a hook wrote.
        let placeholder = [".git/config", ".git/config.worktree"].contains(&rel.as_str())
            && std::fs::metadata(&p).is_ok_and(|m| m.len() == 0);
        if placeholder || skip(&p) || skip_rel.iter().any(|s| rel.starts_with(s)) {
            continue;
        }
        if p.is_dir() {
            walk(env, root, &p, label, skip_rel, skip, out);
        } else {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            let bytes = std::fs::read(&p).unwrap_or_default();
            // The two sides use two homes: a file naming its own side's
            // directories is the same file.
            String::from_utf8_lossy(&bytes)
                .replace(&*env.project.to_string_lossy(), "$PROJECT")
                .replace(&*env.home.to_string_lossy(), "$HOME")
                .hash(&mut h);
            let folded: String = rel
                .split(|c: char| c.is_ascii_digit())
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join("N");
            out.insert(format!("{label}/{folded}"), h.finish());
        }
    }
}

/// The files a run created or changed, given the listing before it.
fn written(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Vec<String> {
    after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect()
}

fn runs(env: &Env) -> usize {
    lines_in(env.project.join(MARKER))
}

/// `a` with the side's own directories named `$PROJECT` and `$HOME` (the two
/// runs use two homes) and, on the host's side, the terminal colour
/// sequences a hook writes dropped: keryx-hooks passes a hook's text on
/// without them (escape::hook_text), and that is the text the hosts show.
fn normalised(mut a: Answer, s: &Side, colours: bool) -> Answer {
    let sgr = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap();
    // A clock time a hook prints (`at 15:11:30`): the two runs start in
    // different seconds.
    let clock = regex::Regex::new(r"\b\d\d:\d\d:\d\d\b").unwrap();
    let project = s.env.project.to_string_lossy().into_owned();
    let home = s.env.home.to_string_lossy().into_owned();
    for t in [&mut a.reason, &mut a.context, &mut a.system_message] {
        let mut v = t.replace(&project, "$PROJECT").replace(&home, "$HOME");
        v = clock.replace_all(&v, "HH:MM:SS").into_owned();
        if colours {
            v = sgr.replace_all(&v, "").into_owned();
        }
        *t = v;
    }
    a
}

// ------------------------------------------------------------------ compare

/// Why a case differs, or `None` when both runs agree; `Err` when the case
/// does not exercise what it says under the host model (a fixture error).
fn compare(case: &Case) -> Result<Option<String>, String> {
    let host = side(case);
    let before = files(case, &host.env);
    let want = normalised(as_host_runs(case, &host), &host, true);
    let want_files = written(&before, &files(case, &host.env));
    let want_runs = runs(&host.env);
    // The case exercises what it says it does.
    let got_kind = match (&want.decision, want.context.is_empty()) {
        (Some(d), _) => d.clone(),
        (None, false) => "context".to_owned(),
        // Only a message for the person, where the case says so.
        (None, true) if !want.system_message.is_empty() && case.expect == "message" => {
            "message".to_owned()
        }
        (None, true) => "none".to_owned(),
    };
    let expect = if case.expect == "deny" && !matches!(case.event.as_str(), "PreToolUse") {
        // A Claude-shaped deny off PreToolUse is a block.
        if matches!(case.source.host, Host::Claude | Host::Codex) {
            "block"
        } else {
            "deny"
        }
    } else {
        case.expect.as_str()
    };
    if got_kind != expect {
        return Err(format!(
            "{}: the {} run answered {got_kind}, the case expects {expect}: {want:?}",
            case.id(),
            case.model().name
        ));
    }
    if want_runs == 0 {
        return Err(format!(
            "{}: the hook never ran under the host model",
            case.id()
        ));
    }

    let keryx = side(case);
    let before = files(case, &keryx.env);
    let got = match through_keryx(case, &keryx) {
        Ok(Some(a)) => normalised(a, &keryx, false),
        Ok(None) => return Ok(None),
        Err(e) => return Ok(Some(e)),
    };
    let got_files = written(&before, &files(case, &keryx.env));
    let got_runs = runs(&keryx.env);

    let name = case.model().name;
    let mut why = vec![];
    if got.decision != want.decision {
        why.push(format!(
            "decision {:?} where {name} has {:?}",
            got.decision, want.decision
        ));
    }
    if !want.reason.is_empty() && !got.reason.contains(want.reason.trim()) {
        why.push(format!("reason {:?} lacks {:?}", got.reason, want.reason));
    }
    if !want.context.is_empty() && !got.context.contains(want.context.trim()) {
        why.push(format!(
            "context {:?} lacks {:?}",
            got.context, want.context
        ));
    }
    if !want.system_message.is_empty() && !got.system_message.contains(want.system_message.trim()) {
        why.push(format!(
            "message {:?} lacks {:?}",
            got.system_message, want.system_message
        ));
    }
    if got_files != want_files {
        why.push(format!(
            "wrote {got_files:?} where {name}'s run wrote {want_files:?}"
        ));
    }
    if got_runs != want_runs {
        why.push(format!("ran {got_runs} times, under {name} {want_runs}"));
    }
    Ok((!why.is_empty()).then(|| why.join("; ")))
}

#[test]
fn real_hooks_behave_as_under_their_host() {
    for tool in NEEDED {
        which(tool);
    }
    let report_mode = std::env::var_os("REAL_HOOKS_REPORT").is_some_and(|v| v == "1");
    // `REAL_HOOKS_ONLY=122-,125-` (report mode only) replays just the hooks
    // whose directory starts with one of the prefixes.
    let only: Vec<String> = std::env::var("REAL_HOOKS_ONLY")
        .ok()
        .filter(|_| report_mode)
        .map(|v| v.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let mut cases = cases();
    if !only.is_empty() {
        cases.retain(|c| only.iter().any(|p| c.hook.starts_with(p.as_str())));
    }
    let hooks: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.hook.as_str()).collect();
    assert!(
        !only.is_empty() || (hooks.len() >= 62 && cases.len() >= 130),
        "{} hooks, {} cases",
        hooks.len(),
        cases.len()
    );
    for h in HOSTS.iter().filter(|_| only.is_empty()) {
        assert!(
            cases.iter().any(|c| c.source.host == h.host),
            "no case for {}",
            h.name
        );
    }
    let mut differ = vec![];
    let mut failures = vec![];
    let mut table = vec![];
    let mut broken = vec![];
    for case in &cases {
        let outcome = match compare(case) {
            Ok(o) => o,
            Err(e) => {
                broken.push(e);
                continue;
            }
        };
        let listed = DIFFERS.iter().find(|(id, _)| *id == case.id());
        match (&outcome, listed) {
            (Some(why), None) => {
                failures.push(format!("{}: differs and is not listed: {why}", case.id()))
            }
            (None, Some(_)) => failures.push(format!(
                "{}: listed as differing but behaves the same",
                case.id()
            )),
            _ => {}
        }
        table.push(format!(
            "{:<52} {:<11} {:<7} {}",
            case.id(),
            case.model().name,
            if outcome.is_some() { "differs" } else { "same" },
            outcome.as_deref().unwrap_or("")
        ));
        if outcome.is_some() {
            differ.push(case.id());
        }
    }
    for (id, _) in DIFFERS.iter().filter(|_| only.is_empty()) {
        assert!(
            cases.iter().any(|c| c.id() == *id),
            "listed case {id} does not exist"
        );
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    let same = cases.len() - differ.len();
    let summary = format!(
        "same {same} of {} ({}%), {} hooks",
        cases.len(),
        same * 100 / cases.len(),
        hooks.len()
    );
    if report_mode {
        use std::fmt::Write as _;
        let mut out = format!(
            "{:<52} {:<11} {:<7} what differed\n",
            "case", "host", "outcome"
        );
        for row in &table {
            let _ = writeln!(out, "{row}");
        }
        for h in HOSTS {
            let of: Vec<&Case> = cases.iter().filter(|c| c.source.host == h.host).collect();
            let d = of.iter().filter(|c| differ.contains(&c.id())).count();
            let _ = writeln!(out, "{}: same {} of {}", h.name, of.len() - d, of.len());
        }
        let _ = writeln!(out, "{summary}");
        use std::io::Write as _;
        std::io::stdout().lock().write_all(out.as_bytes()).unwrap();
        return;
    }
    assert!(failures.is_empty(), "{}\n{summary}", failures.join("\n"));
    // Nine in ten behave as under their host; the rest are in DIFFERS.
    assert!(
        same * 10 >= cases.len() * 9,
        "{summary}; differ: {differ:?}"
    );
}

#[test]
fn the_docs_list_the_cases_that_differ() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/IMPORT.md")).unwrap();
    let section = readme
        .split("### Real hooks that behave differently")
        .nth(1)
        .expect("docs/IMPORT.md has a \"Real hooks that behave differently\" section");
    let section = section.split("\n#").next().unwrap();
    for (id, _) in DIFFERS {
        assert!(section.contains(id), "docs/IMPORT.md does not list {id}");
    }
}

#[test]
fn every_fixture_names_its_origin_and_licence() {
    for e in std::fs::read_dir(FIXTURES).unwrap() {
        let dir = e.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !dir.is_dir() || !name.as_bytes()[0].is_ascii_digit() {
            continue;
        }
        let origin = std::fs::read_to_string(dir.join("origin.toml")).unwrap();
        for key in ["repo =", "license =", "kind ="] {
            assert!(origin.contains(key), "{name}/origin.toml has no `{key}`");
        }
        // A copy carries its licence text; a replica says it is one.
        if origin.contains("kind = \"vendored\"") {
            assert!(
                dir.join("LICENSE").is_file(),
                "{name} is vendored without its LICENSE"
            );
        } else {
            assert!(
                origin.contains("kind = \"replica\""),
                "{name}/origin.toml: kind is \"vendored\" or \"replica\""
            );
        }
    }
}
