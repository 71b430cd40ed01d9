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
    let settings = std::fs::read_to_string(env.claude_settings()).unwrap();
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
    assert!(!env.claude_settings().exists());
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

/// Each command's hosts: `install` and `uninstall` every host with a file
/// to wire (all but `keryx`, which runs keryx-hooks itself), `import` the
/// hosts whose own hooks it reads, `run` and `explain` every adapter.
fn hosts_of(command: &str) -> Vec<&'static str> {
    let all = hosts::host_names().to_vec();
    match command {
        "install" | "uninstall" => all.into_iter().filter(|n| *n != "keryx").collect(),
        "import" => vec![
            "claude-code",
            "codex",
            "copilot",
            "gemini-cli",
            "kimi",
            "qwen-code",
        ],
        _ => all,
    }
}

/// `--help` and the completions name exactly the hosts each command takes,
/// as the adapters say, with their short names in the long help.
#[test]
fn help_and_completions_list_each_commands_hosts_from_the_adapters() {
    let env = Env::new();
    let bash = env.run(&["completions", "bash"]);
    bash.code(0);
    for command in ["install", "uninstall", "import", "run", "explain"] {
        let want = hosts_of(command);
        let short = env.run(&[command, "-h"]);
        short
            .code(0)
            .stdout_has(&format!("[possible values: {}]", want.join(", ")));
        let long = env.run(&[command, "--help"]);
        long.code(0);
        for name in &want {
            let a = hosts::adapter(name).unwrap();
            long.stdout_has(&format!("- {name}:"))
                .stdout_has(a.display_name());
            for alias in a.aliases() {
                long.stdout_has(&format!("`{alias}`"));
            }
        }
        // The words bash completes after `keryx-hooks <command>`.
        let case = format!("keryx__subcmd__hooks__subcmd__{command})");
        let opts = bash
            .stdout
            .lines()
            .skip_while(|l| l.trim() != case)
            .nth(1)
            .unwrap_or_else(|| panic!("no `{case}` in the bash completions"));
        let offered: Vec<&str> = opts
            .trim()
            .trim_start_matches("opts=\"")
            .trim_end_matches('"')
            .split(' ')
            .filter(|w| hosts::host_names().contains(w))
            .collect();
        assert_eq!(offered, want, "bash completes `{command}` with: {opts}");
    }
    // `log --host` completes every host too.
    assert!(
        bash.stdout
            .contains(&format!("compgen -W \"{}\"", hosts_of("log").join(" "))),
        "{}",
        bash.stdout
    );
}

/// `hosts --detected` names the hosts whose own directory exists, found
/// where `install` would write (the `*_HOME` variables and
/// `XDG_CONFIG_HOME` move them), one a line; with none it exits 1 and names
/// the command that wires one anyway.
#[test]
fn hosts_detected_names_the_hosts_set_up_here() {
    let env = Env::new();
    let none = env.run(&["hosts", "--detected"]);
    none.code(1)
        .stderr_has("no agent host found: none of `~/.claude`, `~/.codex`")
        .stderr_has(&format!(
            "hint: `keryx-hooks install <host>` wires one anyway (creating its directory), <host> one of: {}",
            wirable()
        ));
    assert_eq!(none.stdout, "");

    let elsewhere = env.home.parent().unwrap().join("elsewhere");
    for dir in [".claude", ".copilot", ".config/opencode"] {
        std::fs::create_dir_all(env.home.join(dir)).unwrap();
    }
    for dir in ["codex", "kimi"] {
        std::fs::create_dir_all(elsewhere.join(dir)).unwrap();
    }
    let env = env
        .env("CODEX_HOME", elsewhere.join("codex").to_str().unwrap())
        .env("KIMI_CODE_HOME", elsewhere.join("kimi").to_str().unwrap())
        // ~/.copilot exists, but Copilot is told to live elsewhere.
        .env("COPILOT_HOME", elsewhere.join("copilot").to_str().unwrap());
    let found = env.run(&["hosts", "--detected"]);
    found.code(0);
    assert_eq!(found.stdout, "claude-code\ncodex\nkimi\nopencode\n");
    assert_eq!(found.stderr, "");

    let table = env.run(&["hosts"]);
    table
        .code(0)
        .stdout_has("~/.claude (found)")
        .stdout_has(&format!("{} (found)", elsewhere.join("codex").display()))
        .stdout_has("~/.config/opencode (found)")
        .stdout_has("`keryx-hooks install claude-code codex kimi opencode`");
    for name in hosts::host_names() {
        table.stdout_has(&format!("\n{name} "));
    }
    assert!(
        !table.stdout.contains("copilot (found)"),
        "{}",
        table.stdout
    );
}
