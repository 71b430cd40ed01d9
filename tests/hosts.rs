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
    // Only hosts the command takes are suggested: OpenCode's hooks (a
    // plugin) cannot be imported, so a typo of it gets the list alone.
    env.run(&["import", "opencod"])
        .code(1)
        .stderr_has("error: unknown host `opencod`")
        .stderr_has(
            "hint: hosts to import from: claude-code, codex, copilot, cursor, deepagents, gemini-cli, kimi, qwen-code",
        );
    env.run(&["import", "geminii"])
        .code(1)
        .stderr_has("did you mean `gemini-cli`?");
    env.run(&["explain", "qwen-cod", "PreToolUse"])
        .code(1)
        .stderr_has("did you mean `qwen-code`? known hosts: claude-code, cline, codex");
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
            "cursor",
            "deepagents",
            "gemini-cli",
            "kimi",
            "qwen-code",
            "vibe",
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
        .stderr_has("no agent host found: none of `~/.claude`, `~/.cline`, `~/.codex`")
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

// ------------------------------------------------------ hosts are data

/// Where a host's name may be written outside `src/hosts/` and the tests:
/// the product's own word `keryx`, which these places use as a directory
/// name or a text to look for, not as the `keryx` host.
const NOT_A_HOST: [(&str, &str); 4] = [
    // `$XDG_DATA_HOME/keryx`, `$XDG_STATE_HOME/keryx`.
    ("src/paths.rs", "keryx"),
    // A script too deep to read that names keryx-hooks (or `KERYX_…`).
    ("src/builtins/self_protect.rs", "keryx"),
    // The rules' named path set of keryx-hooks' own places.
    ("src/config/rules.rs", "keryx"),
    ("src/rules/eval.rs", "keryx"),
];

/// No production code outside `src/hosts/` names a host: every host fact
/// is in its adapter, and code asks the adapter. Fails listing each string
/// literal that is a host's name or alias, outside `#[cfg(test)]` items
/// and `tests.rs` files.
#[test]
fn no_code_outside_the_adapters_names_a_host() {
    let names: Vec<&str> = hosts::all()
        .flat_map(|a| std::iter::once(a.name()).chain(a.aliases().iter().copied()))
        .collect();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut test_only: Vec<std::path::PathBuf> = Vec::new();
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(src.parent().unwrap()).unwrap();
        let rel = rel.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(file).unwrap();
        let scan = scan(&text);
        // `#[cfg(test)] mod x;` names a file that is test code.
        let dir = if file.ends_with("mod.rs") || file.ends_with("lib.rs") {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        for m in &scan.test_modules {
            test_only.push(dir.join(format!("{m}.rs")));
            test_only.push(dir.join(m).join("mod.rs"));
        }
        if rel.starts_with("src/hosts/") || file.ends_with("tests.rs") {
            continue;
        }
        for (line, s) in scan.strings {
            if names.contains(&s.as_str()) && !NOT_A_HOST.contains(&(rel.as_str(), s.as_str())) {
                found.push((file.clone(), format!("{rel}:{line}: \"{s}\"")));
            }
        }
    }
    let found: Vec<String> = found
        .into_iter()
        .filter(|(f, _)| !test_only.contains(f))
        .map(|(_, at)| at)
        .collect();
    assert!(
        found.is_empty(),
        "host names in code outside src/hosts/ (put the fact in the host's adapter and ask it):\n{}",
        found.join("\n")
    );
    // The scanner sees what it is for.
    let probe = scan(
        "const A: &str = \"claude\"; // \"codex\"\n\
         fn f() { let c = '\"'; let r = r#\"kimi\"#; g(\"cursor\", '\\'', '\\n', \"\\\"q\") }\n\
         #[cfg(test)]\nmod tests { const B: &str = \"gemini\"; }\n\
         #[cfg(test)]\nmod more;\n",
    );
    assert_eq!(
        probe.strings,
        [
            (1, "claude".to_owned()),
            (2, "kimi".to_owned()),
            (2, "cursor".to_owned()),
            (2, "\\\"q".to_owned())
        ]
    );
    assert_eq!(probe.test_modules, ["more"]);
}

fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// What [`scan`] finds in a Rust file.
#[derive(Default)]
struct Scan {
    /// Each string literal outside `#[cfg(test)]` items, by line.
    strings: Vec<(usize, String)>,
    /// The modules declared `#[cfg(test)] mod name;`, in files of their own.
    test_modules: Vec<String>,
}

/// A small Rust lexer: string literals (plain, raw, byte), skipping
/// comments, character literals and every `#[cfg(test)]` item.
fn scan(text: &str) -> Scan {
    let b = text.as_bytes();
    let mut out = Scan::default();
    let (mut i, mut line) = (0, 1);
    // Inside a `#[cfg(test)]` item: the brace depth that ends it, and
    // whether its `{` has been seen.
    let mut skip: Option<(usize, bool)> = None;
    let mut depth = 0usize;
    let mut item_start = 0usize;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
        }
        if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(b.len(), |n| i + n);
            continue;
        }
        if text[i..].starts_with("/*") {
            let mut nest = 0;
            while i < b.len() {
                if text[i..].starts_with("/*") {
                    nest += 1;
                    i += 2;
                } else if text[i..].starts_with("*/") {
                    nest -= 1;
                    i += 2;
                    if nest == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
            continue;
        }
        if skip.is_none() && text[i..].starts_with("#[cfg(test)]") {
            skip = Some((depth, false));
            i += "#[cfg(test)]".len();
            item_start = i;
            continue;
        }
        // A string: `"…"`, `b"…"`, `r#"…"#`, `br"…"`.
        let raw = text[i..]
            .strip_prefix("br")
            .or_else(|| text[i..].strip_prefix('r'))
            .filter(|rest| rest.starts_with(['"', '#']))
            .filter(|_| i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        if let Some(rest) = raw {
            let hashes = rest.len() - rest.trim_start_matches('#').len();
            if rest[hashes..].starts_with('"') {
                let open = b.len() - rest.len() + hashes + 1;
                let close = format!("\"{}", "#".repeat(hashes));
                let end = open + text[open..].find(&close).unwrap();
                let s = &text[open..end];
                if skip.is_none() {
                    out.strings.push((line, s.to_owned()));
                }
                line += s.matches('\n').count();
                i = end + close.len();
                continue;
            }
        }
        if c == b'"' {
            let mut s = String::new();
            let start_line = line;
            i += 1;
            while b[i] != b'"' {
                if b[i] == b'\\' {
                    s.push(b[i] as char);
                    i += 1;
                }
                if b[i] == b'\n' {
                    line += 1;
                }
                s.push(b[i] as char);
                i += 1;
            }
            i += 1;
            if skip.is_none() {
                out.strings.push((start_line, s));
            }
            continue;
        }
        // A character literal (`'"'`, `'\''`), not a lifetime.
        if c == b'\'' {
            let rest = &text[i + 1..];
            let len = if let Some(escaped) = rest.strip_prefix('\\') {
                escaped.get(1..).and_then(|e| e.find('\'')).map(|n| n + 2)
            } else {
                rest.chars()
                    .next()
                    .filter(|ch| rest[ch.len_utf8()..].starts_with('\''))
                    .map(char::len_utf8)
            };
            if let Some(len) = len {
                i += len + 2;
                continue;
            }
        }
        match c {
            b'{' => {
                depth += 1;
                if let Some((d, seen)) = &mut skip
                    && !*seen
                    && depth == *d + 1
                {
                    *seen = true;
                }
            }
            b'}' => {
                depth -= 1;
                if let Some((d, true)) = skip
                    && depth == d
                {
                    skip = None;
                }
            }
            b';' => {
                if let Some((d, false)) = skip
                    && depth == d
                {
                    let item = text[item_start..i].trim();
                    if let Some(name) = item
                        .rsplit('\n')
                        .next()
                        .and_then(|l| l.trim().strip_prefix("mod "))
                        .or_else(|| item.strip_prefix("mod "))
                    {
                        out.test_modules.push(name.trim().to_owned());
                    }
                    skip = None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}
