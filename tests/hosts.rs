//! Host names as people type them: every command takes the hosts its
//! adapters say, a host's short name (its adapter's `aliases`) is accepted
//! by the human commands and reported by the host's name, and a name no
//! host has is refused with the nearest host and the list.

use keryx_hooks::hosts;

use crate::common::{Env, claude_bash};

/// The hosts `install` wires, as its hint lists them.
fn wirable() -> String {
    hosts::host_names()
        .iter()
        .filter(|n| **n != "keryx")
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn short_host_names_are_accepted_and_reported_by_the_host_name() {
    let env = Env::new();
    let run = env.run(&["install", "claude", "qwen", "gemini", "gemini-cli"]);
    run.code(0)
        .stdout_has("Claude Code: wired")
        .stdout_has("Qwen Code: wired")
        .stdout_has("Gemini CLI: wired");
    assert_eq!(
        run.stdout.matches("Gemini CLI: wired").count(),
        1,
        "a host named twice is wired once:\n{}",
        run.stdout
    );
    let settings = std::fs::read_to_string(env.home.join(".claude/settings.json")).unwrap();
    assert!(
        settings.contains(" run claude-code PreToolUse "),
        "{settings}"
    );
    assert!(!settings.contains(" run claude "), "{settings}");

    env.run(&["status"]).code(0).stdout_has("qwen-code");
    env.run(&["import", "qwen", "--dry-run"]).code(0);
    let explained = env.run_stdin(
        &["explain", "claude", "PreToolUse", "--json"],
        claude_bash(&env, "toolu_1", "ls").to_string(),
    );
    explained.code(0);
    assert_eq!(explained.json()["host"], "claude-code");
    env.run(&["uninstall", "claude", "qwen", "gemini"]).code(0);
    assert!(!env.home.join(".claude/settings.json").exists());
    assert!(!env.home.join(".qwen/settings.json").exists());
}

#[test]
fn a_misspelt_host_is_refused_with_the_nearest_host_and_the_list() {
    let env = Env::new();
    let run = env.run(&["install", "claud"]);
    run.code(1)
        .stderr_has("error: unknown host `claud`")
        .stderr_has(&format!(
            "hint: did you mean `claude-code`? hosts that can be wired: {}",
            wirable()
        ));
    assert_eq!(run.stdout, "");
    env.run(&["uninstall", "opencod"])
        .code(1)
        .stderr_has("did you mean `opencode`?");
    // Only hosts the command takes are suggested: Cursor's hooks cannot be
    // imported, so a typo of it gets the list alone.
    env.run(&["import", "cursr"])
        .code(1)
        .stderr_has("error: unknown host `cursr`")
        .stderr_has(
            "hint: hosts to import from: claude-code, codex, copilot, gemini-cli, kimi, qwen-code",
        );
    env.run(&["import", "geminii"])
        .code(1)
        .stderr_has("did you mean `gemini-cli`?");
    env.run(&["explain", "qwen-cod", "PreToolUse"])
        .code(1)
        .stderr_has("did you mean `qwen-code`? known hosts: claude-code, codex");
    env.run(&["log", "--host", "copilott"])
        .code(1)
        .stderr_has("did you mean `copilot`?");
    // Nothing near: the list alone.
    env.run(&["install", "vim"])
        .code(1)
        .stderr_has(&format!("hint: hosts that can be wired: {}\n", wirable()));
    assert!(!env.home.join(".keryx").exists(), "nothing was written");
}

/// `run`'s host word is what `install` wrote into the host's config and
/// what `status`, `doctor` and `uninstall` read back, so it takes names
/// only: an alias there is an unknown host, answered as before.
#[test]
fn run_takes_host_names_only() {
    let env = Env::new();
    env.run_stdin(&["run", "claude", "PreToolUse"], "{}")
        .code(2)
        .stderr_has("unknown host `claude`");
}
