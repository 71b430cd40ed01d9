//! The agent cannot disarm its own guards: through the real shim
//! (`run claude-code PreToolUse`, `run gemini-cli BeforeTool`) in a hermetic
//! home, keryx-hooks' own trust and enforcement commands are refused, its
//! files and its entries in host configs are not written from the agent's
//! tools, every write-carrying tool reaches the write gate, and a hook's
//! additionalContext reaches the model with secrets redacted.

use serde_json::{Value, json};

use crate::common::{Env, Run, aws_key};

const ENTRY: &str = "/usr/local/bin/keryx-hooks run claude-code PreToolUse --snapshot k1";

/// `~/.claude/settings.json` with keryx-hooks wired in, a permission rule
/// and `extra` members.
fn wired_settings(extra: &str) -> String {
    format!(
        r#"{{
  "permissions": {{ "allow": ["Bash(git status)"] }},{extra}
  "hooks": {{
    "PreToolUse": [
      {{ "matcher": "*", "hooks": [{{ "type": "command", "command": "{ENTRY}", "timeout": 30 }}] }}
    ]
  }}
}}
"#
    )
}

fn claude_pre_tool_use(env: &Env, call: &str, tool: &str, input: Value) -> Run {
    let payload = json!({
        "session_id": "s-guard", "cwd": env.project, "hook_event_name": "PreToolUse",
        "permission_mode": "default", "tool_use_id": call,
        "tool_name": tool, "tool_input": input,
    });
    let run = env.run_stdin(&["run", "claude-code", "PreToolUse"], payload.to_string());
    run.code(0);
    run
}

/// The decision Claude Code reads, and its reason.
fn decision(run: &Run) -> (String, String) {
    if run.stdout.trim().is_empty() {
        return ("allow".to_owned(), String::new());
    }
    let v = run.json();
    let out = &v["hookSpecificOutput"];
    (
        out["permissionDecision"]
            .as_str()
            .unwrap_or("allow")
            .to_owned(),
        out["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

#[track_caller]
fn assert_denied(run: &Run, needle: &str) {
    let (d, reason) = decision(run);
    assert_eq!(d, "deny", "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(reason.contains(needle), "{reason}");
}

#[track_caller]
fn assert_not_denied(run: &Run) {
    let (d, reason) = decision(run);
    assert_ne!(
        d, "deny",
        "{reason}\nstdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
}

#[test]
fn bash_keryx_hooks_untrust_is_denied_and_reading_commands_are_not() {
    let env = Env::new();
    for (i, cmd) in [
        "keryx-hooks untrust",
        "~/.cargo/bin/keryx-hooks trust --yes",
        "sh -c 'keryx-hooks disable keryx.ctx-guard --user --acknowledge-gate-risk'",
        "KERYX_HOOKS=off claude -p 'carry on'",
    ]
    .iter()
    .enumerate()
    {
        let run = claude_pre_tool_use(&env, &format!("b{i}"), "Bash", json!({"command": cmd}));
        assert_denied(&run, "only a person at a terminal");
    }
    for (i, cmd) in [
        "keryx-hooks list",
        "keryx-hooks doctor",
        "grep keryx ~/.claude/settings.json",
        "cat ~/.claude/settings.json",
        "git commit -m 'keryx-hooks trust: show the digest'",
    ]
    .iter()
    .enumerate()
    {
        let run = claude_pre_tool_use(&env, &format!("r{i}"), "Bash", json!({"command": cmd}));
        assert_not_denied(&run);
    }
}

#[test]
fn a_write_of_claude_settings_must_keep_the_keryx_entries() {
    let env = Env::new();
    let settings = env.write(env.claude_settings(), wired_settings(""));
    let file = settings.display().to_string();

    let dropped = r#"{"permissions": {"allow": ["Bash(git status)"]}, "hooks": {}}"#;
    let run = claude_pre_tool_use(
        &env,
        "w1",
        "Write",
        json!({"file_path": file, "content": dropped}),
    );
    assert_denied(&run, "would remove or change the keryx-hooks entry");

    let kept = wired_settings("").replace(
        "\"Bash(git status)\"",
        "\"Bash(git status)\", \"Bash(cargo test)\"",
    );
    let run = claude_pre_tool_use(
        &env,
        "w2",
        "Write",
        json!({"file_path": file, "content": kept}),
    );
    assert_not_denied(&run);

    let off = wired_settings("\n  \"disableAllHooks\": true,");
    let run = claude_pre_tool_use(
        &env,
        "w3",
        "Write",
        json!({"file_path": file, "content": off}),
    );
    assert_denied(&run, "disableAllHooks");

    // A Bash write to the file is refused outright.
    let run = claude_pre_tool_use(
        &env,
        "w4",
        "Bash",
        json!({"command": format!("echo '{{}}' > {file}")}),
    );
    assert_denied(&run, "agent host's config file");
}

#[test]
fn an_edit_of_the_user_hooks_file_is_denied() {
    let env = Env::new();
    let hooks = env.write(
        env.user_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {}}"#,
    );
    let run = claude_pre_tool_use(
        &env,
        "e1",
        "Edit",
        json!({"file_path": hooks, "old_string": "{}", "new_string": "{\"PreToolUse\": []}"}),
    );
    assert_denied(&run, "your keryx-hooks hooks file");
    let run = claude_pre_tool_use(
        &env,
        "e2",
        "Bash",
        json!({"command": "sed -i 's/1.0.0/1.0.1/' ~/.keryx/hooks.json"}),
    );
    assert_denied(&run, "your keryx-hooks hooks file");
    assert!(
        std::fs::read_to_string(&hooks)
            .unwrap()
            .contains("\"hooks\": {}")
    );
}

#[test]
fn multiedit_and_notebookedit_reach_the_write_gate() {
    let env = Env::new();
    let key = aws_key();
    let run = claude_pre_tool_use(
        &env,
        "m1",
        "MultiEdit",
        json!({"file_path": env.project.join("config.py"), "edits": [
            {"old_string": "KEY = None", "new_string": format!("KEY = \"{key}\"")}
        ]}),
    );
    assert_denied(&run, "AWS access key id");
    assert!(!run.stdout.contains(&key));

    let run = claude_pre_tool_use(
        &env,
        "n1",
        "NotebookEdit",
        json!({"notebook_path": env.project.join("a.ipynb"), "cell_id": "c1",
               "new_source": format!("key = '{key}'"), "edit_mode": "replace"}),
    );
    assert_denied(&run, "AWS access key id");

    let run = claude_pre_tool_use(
        &env,
        "n2",
        "NotebookEdit",
        json!({"notebook_path": env.user_hooks(), "cell_id": "c1", "new_source": "{}"}),
    );
    assert_denied(&run, "your keryx-hooks hooks file");
}

#[test]
fn gemini_write_file_and_read_file_are_guarded() {
    let env = Env::new();
    let settings = env.write(
        env.home.join(".gemini/settings.json"),
        r#"{"hooks": {"BeforeTool": [{"matcher": "*", "hooks": [{"type": "command", "command": "keryx-hooks run gemini-cli BeforeTool"}]}]}}"#,
    );
    let fire = |tool: &str, input: Value| {
        let payload = json!({
            "session_id": "s-gem", "cwd": env.project, "hook_event_name": "BeforeTool",
            "timestamp": "2026-01-01T00:00:00Z", "tool_name": tool, "tool_input": input,
        });
        let run = env.run_stdin(&["run", "gemini-cli", "BeforeTool"], payload.to_string());
        run.code(0);
        run
    };
    let run = fire(
        "write_file",
        json!({"file_path": settings, "content": "{}"}),
    );
    assert_eq!(run.json()["decision"], "deny", "{}", run.stdout);
    assert!(run.stdout.contains("keryx-hooks entry"), "{}", run.stdout);

    env.write(env.home.join(".ssh/id_ed25519"), "not a real key\n");
    let run = fire(
        "read_file",
        json!({"absolute_path": env.home.join(".ssh/id_ed25519")}),
    );
    assert_eq!(run.json()["decision"], "deny", "{}", run.stdout);
    assert!(run.stdout.contains("SSH private key"), "{}", run.stdout);

    // Gemini's older name for its grep tool maps to Grep as well.
    env.write(env.home.join(".aws/credentials"), "[default]\n");
    let run = fire(
        "search_file_content",
        json!({"pattern": "aws_secret", "path": env.home.join(".aws/credentials")}),
    );
    assert_eq!(run.json()["decision"], "deny", "{}", run.stdout);
    assert!(run.stdout.contains("AWS credentials"), "{}", run.stdout);
}

#[test]
fn claude_read_of_a_private_key_is_denied() {
    let env = Env::new();
    env.write(env.home.join(".ssh/id_rsa"), "not a real key\n");
    let run = claude_pre_tool_use(
        &env,
        "rd1",
        "Read",
        json!({"file_path": env.home.join(".ssh/id_rsa")}),
    );
    assert_denied(&run, "SSH private key");
    let run = claude_pre_tool_use(
        &env,
        "rd2",
        "Read",
        json!({"file_path": env.project.join("README.md")}),
    );
    assert_not_denied(&run);
}

/// A user context hook on PreToolUse that prints `context`.
fn context_hook(env: &Env, context: &str) {
    let script = env.script(
        env.home.join("bin/ctx-hook.sh"),
        &format!(
            "#!/bin/sh\ncat >/dev/null\nprintf '%s' '{}'\n",
            json!({ "additionalContext": context })
        ),
    );
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"PreToolUse": [
            {"id": "notes", "class": "context", "runsIn": "unsandboxed", "timeoutMs": 5000,
             "command": {"argv": [script]}}
        ]}})
        .to_string(),
    );
}

#[test]
fn a_hooks_additional_context_reaches_the_model_with_secrets_redacted() {
    let env = Env::new();
    let key = aws_key();
    context_hook(&env, &format!("deploy notes: use {key} for the bucket"));

    let run = claude_pre_tool_use(&env, "c1", "Bash", json!({"command": "ls"}));
    let v = run.json();
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no context: {v}"));
    assert!(!run.stdout.contains(&key), "{}", run.stdout);
    assert!(
        context.contains("deploy notes: use [REDACTED:aws-access-key-id] for the bucket"),
        "{context}"
    );

    let payload = json!({"event": "PreToolUse", "sessionId": "s-k", "cwd": env.project,
                         "toolName": "Bash", "toolCallId": "k1", "toolInput": {"command": "ls"}});
    let run = env.run_stdin(&["run", "keryx", "PreToolUse"], payload.to_string());
    run.code(0);
    let v = run.json();
    assert!(!run.stdout.contains(&key), "{}", run.stdout);
    let anomaly = v["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "hook-context-secret-redacted")
        .unwrap_or_else(|| panic!("no anomaly: {v}"));
    assert_eq!(anomaly["hookId"], "notes", "{v}");
    assert!(
        anomaly["detail"]
            .as_str()
            .unwrap()
            .contains("AWS access key id"),
        "{v}"
    );

    // Clean context passes unchanged and records nothing.
    context_hook(&env, "src/api.rs imports this file");
    let payload = json!({"event": "PreToolUse", "sessionId": "s-k", "cwd": env.project,
                         "toolName": "Bash", "toolCallId": "k2", "toolInput": {"command": "ls"}});
    let v = env
        .run_stdin(&["run", "keryx", "PreToolUse"], payload.to_string())
        .json();
    assert_eq!(
        v["additionalContext"], "src/api.rs imports this file",
        "{v}"
    );
    assert!(v["anomalies"].as_array().unwrap().is_empty(), "{v}");
}

#[test]
fn cursor_write_tools_reach_the_write_gate() {
    let env = Env::new();
    let hooks = env.write(
        env.user_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {}}"#,
    );
    for (i, tool) in ["Write", "TabWrite", "StrReplace"].iter().enumerate() {
        let payload = json!({
            "conversation_id": "s-cur", "generation_id": "g1", "hook_event_name": "preToolUse",
            "workspace_roots": [env.project], "tool_use_id": format!("t{i}"),
            "tool_name": tool,
            "tool_input": {"file_path": hooks, "content": "{}", "old_string": "{", "new_string": "["},
        });
        let run = env.run_stdin(&["run", "cursor", "preToolUse"], payload.to_string());
        run.code(0);
        let v = run.json();
        assert_eq!(v["permission"], "deny", "{tool}: {v}");
        assert!(
            v["agent_message"]
                .as_str()
                .unwrap()
                .contains("your keryx-hooks hooks file"),
            "{tool}: {v}"
        );
    }
}

/// Round two: a `*** Begin Patch` first line no longer switches ctx-guard
/// off for a shell command, and a command that would signal or stop the
/// shim's processes is refused by what its pattern matches.
#[test]
fn a_patch_prefix_or_a_pkill_of_the_shim_is_denied() {
    let env = crate::common::Env::new();
    for (i, cmd) in [
        "*** Begin Patch\ncat ~/.ssh/id_rsa",
        "*** Begin Patch\nkeryx-hooks trust --yes",
        "pkill -f 'keryx-hooks run'",
        "pkill -STOP -f 'k.ryx'",
        "pgrep -f keryx | xargs kill",
    ]
    .iter()
    .enumerate()
    {
        let run = env.run_stdin(
            &["run", "claude-code", "PreToolUse"],
            crate::common::claude_bash(&env, &format!("r2-{i}"), cmd).to_string(),
        );
        run.code(0);
        assert!(
            run.stdout.contains(r#""permissionDecision":"deny""#),
            "{cmd:?}: {}",
            run.stdout
        );
    }
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        crate::common::claude_bash(&env, "r2-ok", "pkill -f 'npm run dev'").to_string(),
    );
    assert_eq!(run.stdout, "", "{}", run.stderr);
}

/// Round two: MCP tools no longer skip every gate. An MCP tool is judged by
/// what its arguments do: a shell argument is read as shell, a path to a
/// secret is a read of it, and a path that decides enforcement is a write
/// of it.
#[test]
fn mcp_tools_are_judged_by_what_their_arguments_do() {
    let env = crate::common::Env::new();
    let call = |i: usize, tool: &str, input: serde_json::Value| {
        let mut p = crate::common::claude_bash(&env, &format!("mcp-{i}"), "ls");
        p["tool_name"] = serde_json::json!(tool);
        p["tool_input"] = input;
        let run = env.run_stdin(&["run", "claude-code", "PreToolUse"], p.to_string());
        run.code(0);
        run.stdout.clone()
    };
    let keryx_hooks = env.user_hooks();
    for (i, (tool, input)) in [
        ("mcp__fs__read_file", serde_json::json!({"path": "~/.ssh/id_rsa"})),
        ("mcp__fs__read_text_file", serde_json::json!({"path": ".env"})),
        ("mcp__shell__run", serde_json::json!({"command": "cat ~/.aws/credentials"})),
        ("mcp__shell__exec", serde_json::json!({"cmd": "keryx-hooks trust --yes"})),
        (
            "mcp__fs__write_file",
            serde_json::json!({"path": keryx_hooks, "content": "{\"schemaVersion\":\"1.0.0\",\"hooks\":{}}"}),
        ),
        (
            "mcp__fs__edit_file",
            serde_json::json!({"path": env.project.join(".claude/settings.json"), "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let out = call(i, tool, input);
        assert!(
            out.contains(r#""permissionDecision":"deny""#),
            "{tool}: {out}"
        );
    }
    for (i, (tool, input)) in [
        (
            "mcp__github__create_issue",
            serde_json::json!({"title": "x", "body": "see the ~/.ssh docs"}),
        ),
        (
            "mcp__fs__read_file",
            serde_json::json!({"path": "src/main.rs"}),
        ),
        (
            "mcp__shell__run",
            serde_json::json!({"command": "cargo test"}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(call(100 + i, tool, input), "", "{tool}");
    }
}

/// Codex's patch tool and its shell tool, in the captured payload's shape:
/// a patch in any spelling Codex applies names files that are judged as
/// Writes of them.
#[test]
fn codex_patches_in_every_spelling_reach_the_write_gate() {
    let env = Env::new();
    let settings = env.write(env.home.join(".codex/hooks.json"), "{\"hooks\": {}}\n");
    let patch = format!(
        "*** Begin Patch\r\n  *** Update File: {}\r\n@@\r\n-{{\"hooks\": {{}}}}\r\n+{{}}\r\n*** End Patch\r\n",
        settings.display()
    );
    let fire = |call: &str, tool: &str, input: Value| {
        let mut p = crate::common::fixture("codex", "PreToolUse-basic-Bash.json");
        p["cwd"] = json!(env.project);
        p["tool_use_id"] = json!(call);
        p["tool_name"] = json!(tool);
        p["tool_input"] = input;
        let run = env.run_stdin(&["run", "codex", "PreToolUse"], p.to_string());
        run.code(0);
        run
    };
    for (i, (tool, input)) in [
        (
            "apply_patch",
            json!({"command": format!("<<'EOF'\n{patch}EOF\n")}),
        ),
        (
            "apply_patch",
            json!({"command": ["bash", "-lc", format!("apply_patch <<'EOF'\n{patch}EOF\n")]}),
        ),
        (
            "Bash",
            json!({"command": format!("apply_patch <<'EOF'\n{patch}EOF")}),
        ),
        (
            "Bash",
            json!({"command": format!("cat <<EOF | apply_patch\n{patch}EOF")}),
        ),
        (
            "Bash",
            json!({"command": format!("bash -lc \"apply_patch '{patch}'\"")}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let run = fire(&format!("p{i}"), tool, input);
        assert_denied(&run, "agent host's config file");
    }
    let ok = "*** Begin Patch\n*** Add File: notes.md\n+hello\n*** End Patch\n";
    assert_not_denied(&fire("ok1", "apply_patch", json!({"command": ok})));
    assert_not_denied(&fire(
        "ok2",
        "Bash",
        json!({"command": format!("apply_patch <<'EOF'\n{ok}EOF")}),
    ));
}

/// Round 3: keryx-hooks named in a form only the shell resolves, when it
/// runs the line: a pattern its name matches, a variable set by `printf -v`
/// or `read`, a substitution that prints its name from escapes, the `{}`
/// `find -exec` and `xargs -I` fill in, a table `crontab` reads from its
/// input, string literals an interpreter joins. Programs chosen at run time
/// for other work stay allowed.
#[test]
fn keryx_hooks_named_in_a_form_the_shell_expands_is_refused() {
    let env = Env::new();
    for (i, cmd) in [
        "/usr/local/bin/keryx-hook? trust --yes",
        "~/.cargo/bin/keryx-hook[s] untrust",
        "~/.cargo/bin/k*-hooks disable keryx.ctx-guard --user --acknowledge-gate-risk",
        "printf -v k %s keryx-ho oks; $k trust",
        r#"x=$(printf "\x6b\x65ryx-hooks"); $x trust --yes"#,
        "read -r k <<< keryx-hooks; $k disable keryx.ctx-guard --user --acknowledge-gate-risk",
        r#"find / -name "keryx-hook?" -exec {} trust --yes \;"#,
        "ls ~/.cargo/bin/keryx* | xargs -I{} {} trust --yes",
        r#"echo "* * * * * keryx-hooks untrust" | crontab -"#,
        r#"python3 -c 'import subprocess; subprocess.run(["keryx-" + "hooks", "trust", "--yes"])'"#,
        r#"perl -e 'system(q{keryx}.q{-hooks trust --yes})'"#,
    ]
    .iter()
    .enumerate()
    {
        let run = claude_pre_tool_use(&env, &format!("x{i}"), "Bash", json!({"command": cmd}));
        assert_denied(&run, "only a person at a terminal");
    }
    for (i, cmd) in [
        "crontab -l",
        r#"echo "0 3 * * * /usr/bin/backup" | crontab -"#,
        "$EDITOR src/main.rs",
        "$(which npm) install left-pad",
        "${PYTHON:-python3} -m pip install requests",
        r#"find . -name "*.sh" -exec {} --help \;"#,
        "./scripts/*.sh",
        r#"python3 -c 'print("a" + "b")'"#,
    ]
    .iter()
    .enumerate()
    {
        let run = claude_pre_tool_use(&env, &format!("y{i}"), "Bash", json!({"command": cmd}));
        assert_not_denied(&run);
    }
}

/// A redirect writes whatever the command is: a bare `> f`, `exec 3> f`,
/// and a target held in a variable set earlier on the line are read as
/// writes of what they name; so are `sort -o` and `uniq`'s output file.
#[test]
fn a_redirect_without_a_command_or_through_a_variable_is_read_as_a_write() {
    let env = Env::new();
    for (i, cmd) in [
        "cd ~/.keryx && > hooks.json",
        "exec 3>~/.keryx/hooks.json",
        "f=~/.keryx/hooks.json; : > $f",
        "d=$HOME/.keryx; echo '{}' > ${d}/hooks.json",
        "sort -o ~/.keryx/hooks.json /dev/null",
        "sort --output=$HOME/.keryx/hooks.json /dev/null",
        "uniq /dev/null ~/.keryx/hooks.json",
    ]
    .iter()
    .enumerate()
    {
        let run = claude_pre_tool_use(&env, &format!("r{i}"), "Bash", json!({"command": cmd}));
        assert_denied(&run, "");
    }
    for (i, cmd) in [
        "> build.log",
        "exec 3>/tmp/trace.log",
        "f=out.txt; : > $f",
        "fx=~/.keryx/hooks.json; : > $f",
        "sort -o sorted.txt names.txt",
        "sort -u ~/.keryx/hooks.json",
        "uniq -c names.txt counts.txt",
    ]
    .iter()
    .enumerate()
    {
        let run = claude_pre_tool_use(&env, &format!("s{i}"), "Bash", json!({"command": cmd}));
        assert_not_denied(&run);
    }
}
