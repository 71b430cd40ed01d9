use serde_json::json;

use super::*;

const ENTRY: &str = "/usr/local/bin/keryx-hooks run claude-code PreToolUse --snapshot k1";

/// A temp home with Claude Code wired in: our entry next to someone else's
/// and a permission rule.
struct Home {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    cfg: CtxGuardConfig,
}

impl Home {
    fn new() -> Home {
        let tmp = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(tmp.path()).unwrap();
        let cfg = CtxGuardConfig::for_home(&home);
        let h = Home {
            _tmp: tmp,
            home,
            cfg,
        };
        h.write(
            ".claude/settings.json",
            &claude_settings(ENTRY, 30, "*", ""),
        );
        h
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    fn path(&self, rel: &str) -> String {
        self.home.join(rel).display().to_string()
    }

    #[track_caller]
    fn denied(&self, payload: Value, needle: &str) {
        match check_write(&payload, &self.cfg) {
            Verdict::Deny(r) => assert!(r.contains(needle), "{payload}: {r}"),
            Verdict::Allow => panic!("{payload} should be denied"),
        }
    }

    #[track_caller]
    fn allowed(&self, payload: Value) {
        if let Verdict::Deny(r) = check_write(&payload, &self.cfg) {
            panic!("{payload} should be allowed: {r}");
        }
    }
}

fn claude_settings(command: &str, timeout: u64, matcher: &str, extra: &str) -> String {
    format!(
        r#"{{
  "permissions": {{ "allow": ["Bash(git status)"] }},{extra}
  "hooks": {{
    "PreToolUse": [
      {{ "matcher": "{matcher}", "hooks": [{{ "type": "command", "command": "{command}", "timeout": {timeout} }}] }},
      {{ "matcher": "Bash", "hooks": [{{ "type": "command", "command": "lint-hook" }}] }}
    ]
  }}
}}
"#
    )
}

fn write(path: &str, content: &str) -> Value {
    json!({"tool_name": "Write", "tool_input": {"file_path": path, "content": content}})
}

fn edit(path: &str, old: &str, new: &str) -> Value {
    json!({"tool_name": "Edit", "tool_input": {"file_path": path, "old_string": old, "new_string": new}})
}

#[test]
fn keryx_own_files_are_never_written_by_a_file_tool() {
    let h = Home::new();
    h.write(".keryx/hooks.json", "{}");
    h.denied(
        write(&h.path(".keryx/hooks.json"), "{}"),
        "your keryx-hooks hooks file",
    );
    h.denied(
        edit(&h.path(".keryx/runtime.toml"), "a", "b"),
        "runtime settings",
    );
    h.denied(
        write(&h.path(".local/share/keryx/hook-trust.json"), "{}"),
        "trust store",
    );
    h.denied(
        write(&h.path(".agentic/hooks-snapshot/k1/hooks.json"), "{}"),
        "snapshots",
    );
    h.denied(
        write(&h.path(".local/state/keryx/sessions/x/state.json"), "{}"),
        "state directory",
    );
    h.denied(
        json!({"tool_name": "NotebookEdit", "tool_input": {"notebook_path": h.path(".keryx/hooks.json"), "new_source": "x"}}),
        "hooks file",
    );
    h.denied(
        json!({"tool_name": "MultiEdit", "tool_input": {"file_path": h.path(".keryx/hooks.json"), "edits": [{"old_string": "{", "new_string": "["}]}}),
        "hooks file",
    );
    // Relative to the payload's cwd, and through `~`.
    h.denied(
        json!({"tool_name": "Write", "cwd": h.path(".keryx"), "tool_input": {"file_path": "hooks.json", "content": "{}"}}),
        "hooks file",
    );
    // Codex's apply_patch names its files inside the envelope.
    let patch = format!(
        "*** Begin Patch\n*** Update File: {}\n@@\n-a\n+b\n*** End Patch",
        h.path(".keryx/hooks.json")
    );
    h.denied(
        json!({"tool_name": "apply_patch", "tool_input": {"command": patch}}),
        "hooks file",
    );
    h.allowed(write(&h.path("proj/src/main.rs"), "fn main() {}\n"));
    h.allowed(write(&h.path(".keryx-notes.md"), "x"));
}

#[test]
fn a_host_config_write_is_judged_by_its_keryx_entries() {
    let h = Home::new();
    let file = h.path(".claude/settings.json");
    // Dropping our entry, or changing its command, timeout or matcher.
    h.denied(
        write(
            &file,
            r#"{"permissions": {"allow": ["Bash(git status)"]}, "hooks": {}}"#,
        ),
        "would remove or change the keryx-hooks entry",
    );
    h.denied(write(&file, "{}"), "keryx-hooks entry");
    h.denied(write(&file, ""), "keryx-hooks entry");
    h.denied(
        write(&file, &claude_settings(ENTRY, 1, "*", "")),
        "keryx-hooks entry",
    );
    h.denied(
        write(&file, &claude_settings(ENTRY, 30, "NoSuchTool", "")),
        "keryx-hooks entry",
    );
    h.denied(
        write(
            &file,
            &claude_settings(
                "/usr/local/bin/keryx-hooks run claude-code PreToolUse --snapshot k2",
                30,
                "*",
                "",
            ),
        ),
        "keryx-hooks entry",
    );
    h.denied(write(&file, "{ not json"), "cannot be read");
    // Keeping it and turning hooks off another way.
    h.denied(
        write(
            &file,
            &claude_settings(ENTRY, 30, "*", "\n  \"disableAllHooks\": true,"),
        ),
        "disableAllHooks",
    );
    h.denied(
        write(
            &file,
            &claude_settings(ENTRY, 30, "*", "\n  \"env\": {\"KERYX_HOOKS\": \"off\"},"),
        ),
        "KERYX_HOOKS",
    );
    // Keeping it and changing anything else goes through.
    let more = claude_settings(ENTRY, 30, "*", "").replace(
        "\"Bash(git status)\"",
        "\"Bash(git status)\", \"Bash(cargo test)\"",
    );
    h.allowed(write(&file, &more));
    h.allowed(write(
        &file,
        &claude_settings(ENTRY, 30, "*", "\n  \"model\": \"opus\","),
    ));
    // Someone else's entry is not ours to protect.
    h.allowed(write(
        &file,
        &claude_settings(ENTRY, 30, "*", "").replace("lint-hook", "other-hook"),
    ));
}

#[test]
fn a_host_config_edit_is_judged_by_what_it_does_to_the_file() {
    let h = Home::new();
    let file = h.path(".claude/settings.json");
    let entry_line = format!("\"command\": \"{ENTRY}\", \"timeout\": 30");
    h.denied(
        edit(&file, &entry_line, "\"command\": \"true\", \"timeout\": 30"),
        "keryx-hooks entry",
    );
    h.denied(
        edit(&file, "\"timeout\": 30", "\"timeout\": 1"),
        "keryx-hooks entry",
    );
    h.denied(
        edit(&file, "\"matcher\": \"*\"", "\"matcher\": \"Nope\""),
        "keryx-hooks entry",
    );
    // Breaking the JSON around our entry loses it too.
    h.denied(edit(&file, "\"hooks\": {", "\"hooks\": "), "cannot be read");
    h.allowed(edit(
        &file,
        "\"Bash(git status)\"",
        "\"Bash(git status)\", \"Bash(ls)\"",
    ));
    h.allowed(edit(&file, "lint-hook", "lint-hook --fast"));
    // An old string that is not there as written: the host may still apply
    // it (curly quotes match straight ones in Claude Code), so it is not
    // let through unchecked.
    h.denied(edit(&file, "no such text", ""), "cannot be checked");
    // MultiEdit and OpenCode's spelling, edit by edit.
    h.denied(
        json!({"tool_name": "MultiEdit", "tool_input": {"file_path": file, "edits": [
            {"old_string": "git status", "new_string": "git diff"},
            {"old_string": ENTRY, "new_string": "true"}
        ]}}),
        "keryx-hooks entry",
    );
    h.allowed(
        json!({"tool_name": "MultiEdit", "tool_input": {"file_path": file, "edits": [
            {"old_string": "git status", "new_string": "git diff"}
        ]}}),
    );
    h.denied(
        json!({"tool": "edit", "tool_name": "edit", "tool_input": {"filePath": file, "oldString": ENTRY, "newString": "x"}}),
        "keryx-hooks entry",
    );
    // A notebook edit cannot be judged entry by entry.
    h.denied(
        json!({"tool_name": "NotebookEdit", "tool_input": {"notebook_path": file, "new_source": "x"}}),
        "entry by entry",
    );
}

#[test]
fn every_hosts_config_files_are_covered() {
    let h = Home::new();
    // Gemini CLI: the same nested JSON, its own tool names.
    let gemini = h.write(
        ".gemini/settings.json",
        r#"{"hooks": {"BeforeTool": [{"matcher": "*", "hooks": [{"type": "command", "command": "keryx-hooks run gemini-cli BeforeTool"}]}]}}"#,
    );
    h.denied(
        json!({"tool_name": "write_file", "tool_input": {"file_path": gemini, "content": "{}"}}),
        "Gemini",
    );
    // Codex: TOML.
    let codex = h.write(
        ".codex/config.toml",
        "model = \"o3\"\n\n[[hooks.PreToolUse]]\nmatcher = \"*\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"keryx-hooks run codex PreToolUse\"\ntimeout = 30\n",
    );
    h.denied(
        edit(&codex.display().to_string(), "timeout = 30", "timeout = 1"),
        "keryx-hooks entry",
    );
    h.allowed(edit(
        &codex.display().to_string(),
        "model = \"o3\"",
        "model = \"o4\"",
    ));
    // Cursor: flat JSON.
    let cursor = h.write(
        ".cursor/hooks.json",
        r#"{"version": 1, "hooks": {"preToolUse": [{"command": "keryx-hooks run cursor preToolUse"}]}}"#,
    );
    h.denied(
        write(
            &cursor.display().to_string(),
            r#"{"version": 1, "hooks": {}}"#,
        ),
        "Cursor",
    );
    // A project's settings.local.json, wherever the project is.
    let local = h.write(
        "proj/.claude/settings.local.json",
        &claude_settings(ENTRY, 30, "*", ""),
    );
    h.denied(
        write(&local.display().to_string(), "{}"),
        "keryx-hooks entry",
    );
    // OpenCode's plugin file is generated whole.
    let plugin = h.write(
        ".config/opencode/plugin/keryx-hooks.ts",
        "export default {}\n",
    );
    h.denied(
        write(&plugin.display().to_string(), "export default {x}\n"),
        "generates that file whole",
    );
    // A host file without our entries is the user's own business.
    let plain = h.write(".qwen/settings.json", r#"{"model": "x"}"#);
    h.allowed(write(&plain.display().to_string(), "{}"));
}

#[test]
fn keryx_hooks_off_in_a_startup_file_is_refused() {
    let h = Home::new();
    let rc = h.write(".bashrc", "alias ll='ls -l'\n");
    let rc = rc.display().to_string();
    h.denied(
        write(&rc, "alias ll='ls -l'\nexport KERYX_HOOKS=off\n"),
        "KERYX_HOOKS",
    );
    h.denied(
        edit(
            &rc,
            "alias ll='ls -l'",
            "alias ll='ls -l'\nexport KERYX_HOOKS=off",
        ),
        "KERYX_HOOKS",
    );
    h.denied(
        write(&h.path("proj/.envrc"), "export KERYX_HOOKS=0\n"),
        "KERYX_HOOKS",
    );
    h.allowed(write(&rc, "alias ll='ls -la'\n"));
    h.allowed(write(
        &h.path("proj/docs/notes.md"),
        "KERYX_HOOKS=off turns it off\n",
    ));
}

#[test]
fn a_host_config_that_cannot_be_read_is_not_taken_for_an_empty_one() {
    use std::os::unix::fs::PermissionsExt;
    let h = Home::new();
    let file = h.home.join(".claude/settings.json");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    let readable = std::fs::read(&file).is_ok(); // root reads anyway
    let verdict = check_write(&write(&file.display().to_string(), "{}"), &h.cfg);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    match verdict {
        Verdict::Deny(r) => assert!(
            r.contains("keryx-hooks entry") || r.contains("cannot be read"),
            "{r}"
        ),
        Verdict::Allow => panic!("allowed (readable: {readable})"),
    }
    // A path that is not a regular file.
    let dir = h.home.join(".gemini/settings.json");
    std::fs::create_dir_all(&dir).unwrap();
    h.denied(write(&dir.display().to_string(), "{}"), "cannot be read");
}

#[test]
fn the_binary_hosts_run_is_not_written_by_a_file_tool() {
    let mut h = Home::new();
    let bin = h.write(".cargo/bin/keryx-hooks", "#!/bin/sh\n");
    h.cfg.binary = Some(bin.clone());
    h.denied(
        write(&bin.display().to_string(), "#!/bin/sh\nexit 0\n"),
        "binary",
    );
    h.allowed(write(&h.path(".cargo/bin/other"), "x"));
}

#[test]
fn a_host_file_write_must_leave_a_file_the_host_loads_without_its_switches() {
    let h = Home::new();
    // A project's settings with no keryx-hooks entries yet (not wired).
    let file = h.path("proj/.claude/settings.json");
    h.write(
        "proj/.claude/settings.json",
        "{\n  \"model\": \"opus\"\n}\n",
    );
    h.denied(
        write(&file, "{\"disableAllHooks\": true, \"x\": 1e400}"),
        "",
    );
    // Invalid for a strict reader: a trailing comma, a comment, a number out of range.
    for bad in ["{\"model\": \"opus\",}", "{\"model\": \"opus\" // mine\n}"] {
        h.denied(write(&file, bad), "would not load");
    }
    h.denied(write(&file, "{\"x\": 1e400}"), "cannot be read");
    // Gemini CLI's own switches, and env entries that move keryx-hooks' inputs.
    let gemini = h.path(".gemini/settings.json");
    h.write(".gemini/settings.json", "{}\n");
    h.denied(
        write(&gemini, "{\"hooksConfig\": {\"enabled\": false}}"),
        "hooksConfig.enabled",
    );
    h.denied(
        write(
            &gemini,
            "{\"hooksConfig\": {\"disabled\": [\"keryx-hooks\"]}}",
        ),
        "hooksConfig.disabled",
    );
    for var in [
        "KERYX_HOME",
        "KERYX_SNAPSHOT_ROOT",
        "HOME",
        "XDG_STATE_HOME",
        "LD_PRELOAD",
    ] {
        h.denied(
            write(
                &file,
                &format!("{{\"env\": {{\"{var}\": \"/tmp/elsewhere\"}}}}"),
            ),
            var,
        );
    }
    // Ordinary settings still go through.
    h.allowed(write(
        &file,
        "{\"model\": \"sonnet\", \"env\": {\"RUST_LOG\": \"debug\"}}",
    ));
    h.allowed(write(&gemini, "{\"hooksConfig\": {\"enabled\": true}}"));
}

#[test]
fn a_link_under_an_innocent_name_is_the_file_it_names() {
    let h = Home::new();
    h.write(
        ".claude/settings.json",
        &claude_settings(ENTRY, 30, "*", ""),
    );
    // A symlink to the host file, and a hard link to keryx-hooks' own file.
    let link = h.path("notes/innocent.json");
    std::fs::create_dir_all(std::path::Path::new(&link).parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(h.path(".claude/settings.json"), &link).unwrap();
    h.denied(write(&link, "{}"), "keryx-hooks entry");
    h.write(".keryx/hooks.json", "{}");
    let hard = h.path("notes/other.json");
    std::fs::hard_link(h.path(".keryx/hooks.json"), &hard).unwrap();
    h.denied(write(&hard, "{}"), "hooks file");
}

/// The agent CLIs and the variables that move a host's config come from
/// the adapters (`executables`, `configEnv`): every one the guard knew
/// when they were written here is still known, and nothing else.
#[test]
fn the_agent_clis_and_relocating_variables_are_the_adapters() {
    for cli in [
        "claude",
        "codex",
        "gemini",
        "cursor-agent",
        "copilot",
        "kimi",
        "kimi-code",
        "opencode",
        "qwen",
        "keryx",
    ] {
        assert!(is_agent_cli(cli), "{cli}");
    }
    for other in ["cargo", "claude-code", "gemini-cli", "node"] {
        assert!(!is_agent_cli(other), "{other}");
    }
    for var in [
        "HOME",
        "KERYX_HOME",
        "KERYX_SNAPSHOT_ROOT",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CONFIG_HOME",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "COPILOT_HOME",
        "KIMI_CODE_HOME",
        "GEMINI_CLI_HOME",
    ] {
        assert!(relocates(var), "{var}");
    }
    for other in ["PATH", "TMPDIR", "CLAUDE_ENV_FILE"] {
        assert!(!relocates(other), "{other}");
    }
}

/// The other files hosts read hooks from (their adapters' `alsoRead`) are
/// host files as the settings files are.
#[test]
fn the_other_hook_files_hosts_read_are_protected() {
    let h = Home::new();
    let (user, project) = host_files(&h.cfg);
    assert!(
        user.iter().any(
            |f| f.path == h.home.join(".codex/hooks.json") && f.host_name == "OpenAI Codex CLI"
        )
    );
    for tail in [".codex/hooks.json", ".claude/settings.local.json"] {
        let want: Vec<String> = tail.split('/').map(str::to_owned).collect();
        assert!(project.iter().any(|(t, _)| *t == want), "{tail}");
        assert!(maybe_host_file(&h.home.join("p").join(tail)), "{tail}");
    }
    assert!(!maybe_host_file(Path::new("/tmp/notes.json")));
}

#[test]
fn a_command_is_judged_by_what_it_changes_not_by_how_it_is_spelled() {
    let h = Home::new();
    h.write(".keryx/hooks.json", "{}");
    std::fs::create_dir_all(h.home.join("proj")).unwrap();
    let cwd = h.home.join("proj");
    let run = |cmd: &str| crate::builtins::ctx_guard::check_command(cmd, Some(&cwd), &h.cfg);
    let hooks = h.path(".keryx/hooks.json");
    let keryx = h.path(".keryx");
    let claude = h.path(".claude");
    for cmd in [
        // A program that is not known to only read changes what it names.
        format!("gzip {hooks}"),
        format!("vim -es -c 'normal dd' -c wq {hooks}"),
        format!("ed -s {hooks} <<< $'1d\\nw'"),
        format!("truncate -s0 {hooks}"),
        format!("shred -u {hooks}"),
        format!("chmod 000 {hooks}"),
        // A directory that directly holds a protected file.
        format!("tar -xf /tmp/evil.tar -C {keryx}"),
        format!("cp -rT /tmp/forged {keryx}"),
        format!("rsync -a /tmp/forged/ {claude}"),
        format!("find {keryx} -name '*.json' -exec rm {{}} +"),
        format!("mv /tmp/forged {keryx}"),
        format!("cp /tmp/x -t {keryx}"),
        // Into the directory first, then a relative name.
        "(cd ~/.keryx && rm hooks.json)".to_string(),
        "pushd ~/.keryx && rm hooks.json".to_string(),
        "cd ~/.keryx; : > hooks.json".to_string(),
        "echo $(cd ~/.keryx && rm hooks.json)".to_string(),
        // The program's name spelled another way.
        "$'\\x6b\\x65\\x72\\x79\\x78-hooks' trust --yes".to_string(),
        "$'\\153eryx-hooks' trust --yes".to_string(),
        "{keryx-hooks,trust,--yes}".to_string(),
        "coproc keryx-hooks trust --yes".to_string(),
        "env -S 'keryx-hooks trust --yes'".to_string(),
        // A script handed to a shell or a scheduler on stdin.
        "echo 'keryx-hooks trust --yes' | at now".to_string(),
        "printf 'rm ~/.keryx/hooks.json\\n' | sh".to_string(),
        format!("echo 'rm {hooks}' | bash"),
    ] {
        assert!(
            matches!(run(&cmd), Verdict::Deny(_)),
            "{cmd:?} should be denied"
        );
    }
    for cmd in [
        format!("cat {hooks}"),
        format!("jq . {hooks}"),
        format!("ls -la {keryx}"),
        format!("find {keryx} -name '*.json'"),
        format!("sha256sum {hooks}"),
        format!("diff {hooks} /tmp/other.json"),
        "cd ~/.keryx && ls".to_string(),
        "git status && git diff && git add -A && git commit -m wip".to_string(),
        "cargo build --release".to_string(),
        "gzip notes.txt".to_string(),
        "cp -r src /tmp/backup".to_string(),
        "tar -xf release.tar".to_string(),
        "echo 'ls' | sh".to_string(),
        "keryx-hooks status".to_string(),
    ] {
        if let Verdict::Deny(r) = run(&cmd) {
            panic!("{cmd:?} should be allowed: {r}");
        }
    }
}

#[test]
fn what_a_host_loads_code_or_starts_commands_from_is_never_written_by_the_agent() {
    let h = Home::new();
    for (rel, host) in [
        ("proj/opencode.json", "OpenCode"),
        ("proj/opencode.jsonc", "OpenCode"),
        ("proj/.mcp.json", "Claude Code"),
        ("proj/.vscode/tasks.json", "Cursor"),
        ("proj/.github/copilot/mcp.json", "Copilot"),
        ("proj/.claude/hooks/fmt.sh", "Claude Code"),
        ("proj/.gemini/extensions/x/gemini-extension.json", "Gemini"),
        ("proj/.opencode/plugin/p.ts", "OpenCode"),
    ] {
        h.denied(write(&h.path(rel), "{}\n"), host);
        h.denied(
            edit(&h.path(rel), "a", "b"),
            "loads code or starts commands",
        );
    }
    // One table, the adapters': every entry is protected in any project,
    // a host's wiring file by its content, the rest outright.
    for (_, rel) in crate::adapter::project_code() {
        let path = h.path(&format!("proj/{}", rel.trim_end_matches('/')));
        let path = if rel.ends_with('/') {
            format!("{path}/x")
        } else {
            path
        };
        assert!(protected(&h.cfg, Path::new(&path)).is_some(), "{rel}");
    }
    // A host's wiring file among them is still judged by its content.
    h.allowed(write(
        &h.path(".claude/settings.json"),
        &claude_settings(ENTRY, 30, "*", ""),
    ));
    h.allowed(write(&h.path("proj/src/opencode.md"), "notes\n"));
    h.allowed(write(&h.path("proj/.vscode/extensions.json"), "{}\n"));
}

// ------------------------------------------------------ Codex patch spellings

/// A patch that changes `file` (and a harmless one beside it).
fn patch_of(file: &str) -> String {
    format!(
        "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** Update File: {file}\n@@\n-{{}}\n+{{\"hooks\": {{}}}}\n*** End Patch\n"
    )
}

fn codex_patch(input: Value) -> Value {
    json!({"tool_name": "apply_patch", "tool_input": input})
}

impl Home {
    /// A shell line as ctx-guard reads it, run in `~/proj`.
    fn shell(&self, cmd: &str) -> Verdict {
        let cwd = self.home.join("proj");
        std::fs::create_dir_all(&cwd).unwrap();
        crate::builtins::ctx_guard::check_command(cmd, Some(&cwd), &self.cfg)
    }

    #[track_caller]
    fn shell_denied(&self, cmd: &str, needle: &str) {
        match self.shell(cmd) {
            Verdict::Deny(r) => assert!(r.contains(needle), "{cmd:?}: {r}"),
            Verdict::Allow => panic!("{cmd:?} should be denied"),
        }
    }

    #[track_caller]
    fn shell_allowed(&self, cmd: &str) {
        if let Verdict::Deny(r) = self.shell(cmd) {
            panic!("{cmd:?} should be allowed: {r}");
        }
    }
}

#[test]
fn a_patch_wrapped_in_a_here_document_is_read_as_a_patch() {
    let h = Home::new();
    let settings = h.path(".claude/settings.json");
    // Codex strips `<<'EOF'` … `EOF` around the envelope before applying it.
    for open in ["<<'EOF'", "<<EOF", "<<\"EOF\""] {
        let wrapped = format!("{open}\n{}EOF\n", patch_of(&settings));
        h.denied(
            codex_patch(json!({"command": wrapped})),
            "agent host's config file",
        );
        h.denied(
            codex_patch(json!({"command": ["apply_patch", wrapped]})),
            "agent host's config file",
        );
    }
    // From the shell: a here-document into apply_patch, or piped into it.
    h.shell_denied(
        &format!("apply_patch <<'EOF'\n{}EOF", patch_of(&settings)),
        "agent host's config file",
    );
    h.shell_denied(
        &format!("cat <<EOF | apply_patch\n{}EOF", patch_of(&settings)),
        "agent host's config file",
    );
    h.shell_allowed(&format!(
        "apply_patch <<'EOF'\n{}EOF",
        patch_of("src/main.rs")
    ));
}

#[test]
fn indented_or_padded_patch_markers_are_read() {
    let h = Home::new();
    h.write(".keryx/hooks.json", "{}");
    let hooks = h.path(".keryx/hooks.json");
    let settings = h.path(".claude/settings.json");
    for patch in [
        format!("  *** Begin Patch  \n  *** Update File: {hooks}  \n@@\n-a\n+b\n*** End Patch"),
        format!("*** Begin Patch\n\t*** Add File: {hooks}\n+{{}}\n*** End Patch"),
        format!("*** Begin Patch\n    *** Delete File:   {hooks}\n*** End Patch"),
        format!(
            "*** Begin Patch\n*** Update File: src/a.json\n   *** Move to: {settings}\n@@\n-a\n+b\n*** End Patch"
        ),
    ] {
        h.denied(codex_patch(json!({"command": patch})), "keryx-hooks");
    }
    h.allowed(codex_patch(json!({"command": format!(
        "  *** Begin Patch\n  *** Update File: src/a.json\n   *** Move to: src/b.json\n@@\n-a\n+b\n*** End Patch"
    )})));
}

#[test]
fn a_patch_in_a_shell_commands_argument_is_read_as_a_patch() {
    let h = Home::new();
    let settings = h.path(".claude/settings.json");
    h.shell_denied(
        &format!("apply_patch \"{}\"", patch_of(&settings)),
        "agent host's config file",
    );
    h.shell_denied(
        &format!("applypatch '{}'", patch_of(&settings)),
        "agent host's config file",
    );
    // `printf` and `$'…'` turn `\n` into the line ends of the patch.
    let escaped = patch_of(&settings).replace('\n', "\\n");
    h.shell_denied(
        &format!("printf '{escaped}' | apply_patch"),
        "agent host's config file",
    );
    h.shell_denied(
        &format!("apply_patch $'{escaped}'"),
        "agent host's config file",
    );
    // The same through the shell tool as an argv.
    let argv = json!({"tool_name": "Bash", "tool_input": {"command": ["apply_patch", patch_of(&settings)]}});
    assert!(matches!(
        crate::builtins::ctx_guard::check_with(&argv, &h.cfg),
        Verdict::Deny(_)
    ));
    // Still read as shell: what follows the patch runs.
    h.shell_denied(
        &format!(
            "apply_patch <<'EOF'\n{}EOF\nkeryx-hooks trust --yes",
            patch_of("src/main.rs")
        ),
        "trust",
    );
}

#[test]
fn a_patch_run_through_bash_lc_is_read_as_a_patch() {
    let h = Home::new();
    let settings = h.path(".claude/settings.json");
    let script = format!("apply_patch <<'EOF'\n{}EOF\n", patch_of(&settings));
    // Codex takes the patch out of `bash -lc` given to its patch tool…
    h.denied(
        codex_patch(json!({"command": ["bash", "-lc", script]})),
        "agent host's config file",
    );
    // …and out of its shell tool, where `cd DIR &&` moves the patch there.
    h.denied(
        codex_patch(json!({"command": ["bash", "-lc", format!(
            "cd .claude && apply_patch <<'EOF'\n{}EOF\n",
            patch_of("settings.json")
        )]})),
        "agent host's config file",
    );
    h.shell_denied(
        &format!("bash -lc \"{script}\""),
        "agent host's config file",
    );
    h.shell_denied(
        &format!(
            "cd ~/.claude && apply_patch <<'EOF'\n{}EOF",
            patch_of("settings.json")
        ),
        "agent host's config file",
    );
}

#[test]
fn a_patch_with_crlf_line_ends_is_read_as_a_patch() {
    let h = Home::new();
    let settings = h.path(".claude/settings.json");
    let crlf = patch_of(&settings).replace('\n', "\r\n");
    h.denied(
        codex_patch(json!({"command": format!("<<'EOF'\r\n{crlf}EOF\r\n")})),
        "agent host's config file",
    );
    h.shell_denied(
        &format!("apply_patch <<'EOF'\r\n{crlf}EOF\r\n"),
        "agent host's config file",
    );
    let argv = json!({"tool_name": "Bash", "tool_input": {"command": ["apply_patch", crlf]}});
    assert!(matches!(
        crate::builtins::ctx_guard::check_with(&argv, &h.cfg),
        Verdict::Deny(_)
    ));
}

#[test]
fn a_patch_file_fed_to_apply_patch_or_codex_is_read_as_a_patch() {
    let h = Home::new();
    let settings = h.path(".claude/settings.json");
    h.write("proj/fix.patch", &patch_of(&settings));
    h.shell_denied("apply_patch < fix.patch", "agent host's config file");
    h.shell_denied("cat fix.patch | apply_patch", "agent host's config file");
    h.shell_denied(
        &format!("codex --codex-run-as-apply-patch '{}'", patch_of(&settings)),
        "agent host's config file",
    );
    h.write("proj/ok.patch", &patch_of("src/main.rs"));
    h.shell_allowed("apply_patch < ok.patch");
}

#[test]
fn a_patch_adding_keryx_hooks_off_to_a_startup_file_is_refused() {
    let h = Home::new();
    let bashrc = h.path(".bashrc");
    h.write(".bashrc", "alias ll='ls -l'\n");
    let patch = format!(
        "*** Begin Patch\n*** Update File: {bashrc}\n@@\n alias ll='ls -l'\n+export KERYX_HOOKS=off\n*** End Patch"
    );
    h.denied(codex_patch(json!({"command": patch})), "KERYX_HOOKS");
    h.shell_denied(&format!("apply_patch <<'EOF'\n{patch}\nEOF"), "KERYX_HOOKS");
    h.allowed(codex_patch(json!({"command": format!(
        "*** Begin Patch\n*** Update File: {bashrc}\n@@\n alias ll='ls -l'\n+export EDITOR=vim\n*** End Patch"
    )})));
}

#[test]
fn the_hosts_own_sandbox_is_not_loosened_by_a_file_tool() {
    let h = Home::new();
    let settings = claude_settings(
        ENTRY,
        30,
        "*",
        r#"
  "sandbox": { "enabled": true, "allowUnsandboxedCommands": false, "filesystem": { "denyWrite": ["//h/.keryx/hooks.json"] } },"#,
    );
    let file = h.write(".claude/settings.json", &settings);
    let file = file.to_str().unwrap();
    h.denied(
        edit(file, "\"enabled\": true", "\"enabled\": false"),
        "`sandbox.enabled`",
    );
    h.denied(
        edit(
            file,
            "\"allowUnsandboxedCommands\": false",
            "\"allowUnsandboxedCommands\": true",
        ),
        "`sandbox.allowUnsandboxedCommands`",
    );
    h.denied(
        edit(file, "\"//h/.keryx/hooks.json\"", "\"//h/other\""),
        "off the host sandbox's",
    );
    h.denied(
        write(file, &claude_settings(ENTRY, 30, "*", "")),
        "`sandbox.enabled`",
    );
    // Tightening, and everything else, goes through.
    h.allowed(edit(
        file,
        "\"//h/.keryx/hooks.json\"",
        "\"//h/.keryx/hooks.json\", \"//h/more\"",
    ));
    h.allowed(edit(file, "git status", "git diff"));
}
