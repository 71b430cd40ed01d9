//! The agent cannot disarm its own guards. `keryx.ctx-guard` refuses shell
//! commands that change keryx-hooks' trust or enforcement (`keryx-hooks
//! trust`, `disable`, `install`, … by any path, alias or wrapper, and
//! `KERYX_HOOKS=off` for a child) or write what decides enforcement;
//! `keryx.security-check-output` refuses the same writes from the host's
//! file tools. Host config files are judged by content: an edit that keeps
//! every keryx-hooks entry as it is goes through.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Value, json};

use super::ctx_guard::{
    CtxGuardConfig, Guard, Reader, basename, glob_match, nested_script, show, skip_options,
    unwrap_wrappers,
};
use super::ports::Verdict;
use super::shell::{Command, RedirectOp, Script};
use crate::escape::escape;
use crate::hosts::{self, ConfigFormat};

/// Why only a person changes these things, appended to every refusal.
const ONLY_A_PERSON: &str = "only a person at a terminal changes keryx-hooks' trust or enforcement; \
     if this change is wanted, ask the user to make it themselves";

/// Subcommands that change nothing: reading, checking, the hook bodies.
/// Every other word in a subcommand's place (`trust`, `install`,
/// `allow-once`, a subcommand added later, a word the guard misreads as
/// one) is taken to change trust, wiring or which hooks run.
const READING: [&str; 13] = [
    "list",
    "validate",
    "test",
    "status",
    "doctor",
    "log",
    "explain",
    "run",
    "security",
    "ctx",
    "help",
    "hosts",
    "completions",
];

// ------------------------------------------------------------------ shell

/// Names an earlier part of the same command line gave to things:
/// `alias kh=keryx-hooks`, `K=/usr/local/bin/keryx-hooks`.
#[derive(Debug, Default, Clone)]
pub(super) struct Defs {
    names: Vec<(String, String)>,
}

impl Defs {
    /// `word` with each `$name` or `${name}` defined earlier on the line
    /// replaced by its value (the last definition wins).
    fn substituted(&self, word: &str) -> String {
        let mut out = word.to_owned();
        for (name, value) in self.names.iter().rev() {
            if !name.starts_with('$') {
                continue;
            }
            let mut from = 0;
            while let Some(at) = out[from..].find(name.as_str()) {
                let start = from + at;
                let end = start + name.len();
                let whole = name.ends_with('}')
                    || !out[end..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
                if whole {
                    out.replace_range(start..end, value);
                    from = start + value.len();
                } else {
                    from = end;
                }
            }
        }
        out
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.names
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Group redirects (`( … ) > ~/.keryx/hooks.json`) that write what decides
/// enforcement.
pub(super) fn groups(g: &Guard, script: &Script, cwd: Option<&Path>) -> Option<String> {
    for grp in &script.groups {
        for r in &grp.redirects {
            if writes(r.op)
                && let Some(reason) = target_refusal(g, &r.target, Access::Write, cwd, "( … )")
            {
                return Some(reason);
            }
        }
    }
    None
}

/// The self-protection checks for command `i` of `script`.
pub(super) fn command(
    g: &Guard,
    script: &Script,
    i: usize,
    defs: &mut Defs,
    cwd: Option<&Path>,
) -> Option<String> {
    let cmd = &script.commands[i];
    if let Some(r) = disarming_env(cmd) {
        return Some(r);
    }
    // Remember definitions for the commands after this one.
    // A quoted value (`CMD='a b'`) leaves the assignment among the words.
    let quoted_assignment = |w: &String| {
        w.split_once('=').is_some_and(|(n, _)| {
            !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !n.starts_with(|c: char| c.is_ascii_digit())
        })
    };
    if cmd.words.iter().all(quoted_assignment) {
        for a in cmd.assignments.iter().chain(&cmd.words) {
            if let Some((n, v)) = a.split_once('=') {
                defs.names.push((format!("${n}"), v.to_owned()));
                defs.names.push((format!("${{{n}}}"), v.to_owned()));
            }
        }
    }
    let head = cmd.words.first().map(String::as_str);
    if head == Some("alias") {
        for a in &cmd.words[1..] {
            if let Some((n, v)) = a.split_once('=') {
                defs.names.push((n.to_owned(), v.to_owned()));
            }
        }
    }
    if matches!(
        head,
        Some("export" | "declare" | "typeset" | "local" | "readonly")
    ) {
        for a in &cmd.words[1..] {
            if let Some((n, v)) = a.split_once('=') {
                defs.names.push((format!("${n}"), v.to_owned()));
                defs.names.push((format!("${{{n}}}"), v.to_owned()));
            }
        }
    }
    if let Some(r) = renamed_binary(g, script, cmd) {
        return Some(r);
    }
    if let Some(r) = relocated_agent(cmd) {
        return Some(r);
    }
    if let Some(r) = signals_keryx(script, cmd, g.src) {
        return Some(r);
    }
    if let Some(r) = links_a_secret(g, cmd) {
        return Some(r);
    }
    // A redirect writes whatever the command is, a bare `> f` or
    // `exec 3> f` too, and its target may be a variable set earlier on
    // the line (`f=~/.keryx/hooks.json; : > $f`).
    for r in cmd.redirects.iter().filter(|r| writes(r.op)) {
        let shown = if cmd.words.is_empty() {
            format!("> {}", r.target)
        } else {
            show(&cmd.words)
        };
        for target in [r.target.clone(), defs.substituted(&r.target)] {
            if let Some(reason) = target_refusal(g, &target, Access::Write, cwd, &shown) {
                return Some(reason);
            }
        }
    }
    let words = brace_expanded(&cmd.words);
    let argv = unwrap_wrappers(&words);
    for cand in candidates(argv, defs) {
        if let Some(r) = keryx_invocation(g, script, &cand) {
            return Some(r);
        }
        // `CMD='KERYX_HOOKS=off claude'; bash -c "$CMD"`.
        if cand
            .argv
            .iter()
            .take_while(|w| w.contains('='))
            .any(|w| sets_off(w))
        {
            return Some(format!(
                "ctx-guard: `KERYX_HOOKS` set to turn keryx-hooks off (`{}`) would run without its guards; {ONLY_A_PERSON}",
                show(&cand.argv)
            ));
        }
        let Some(first) = cand.argv.first() else {
            continue;
        };
        let name = basename(first);
        if let Some(code) = interpreter_code(name, &cand.argv) {
            if let Some(r) = disarming_text(&code).or_else(|| disarming_text(&concatenated(&code)))
            {
                return Some(format!(
                    "ctx-guard: `{}` {r}; {ONLY_A_PERSON}",
                    show(&cand.argv)
                ));
            }
            if let Some(what) = code_writes_protected(g.cfg, &code) {
                return Some(format!(
                    "ctx-guard: `{}` looks like it writes {what}; {ONLY_A_PERSON}",
                    show(&cand.argv)
                ));
            }
        }
        if let Some(r) = shell_patch(g, script, i, &cand.argv, cwd) {
            return Some(r);
        }
        if reads_script_from_stdin(name, &cand.argv)
            && let Some(r) = disarming_text(g.src)
        {
            return Some(format!(
                "ctx-guard: a shell (or `at`, `crontab`) reading its script from its input {r}; {ONLY_A_PERSON}"
            ));
        }
        // `cp target/release/keryx-hooks ~/.cargo/bin/`: an upgrade.
        let upgrade = matches!(name, "cp" | "install" | "mv" | "ln" | "rsync") && {
            let ops: Vec<&String> = cand.argv[1..]
                .iter()
                .filter(|a| !a.starts_with('-'))
                .collect();
            ops.split_last()
                .is_some_and(|(_, sources)| sources.iter().any(|a| basename(a) == "keryx-hooks"))
        };
        for (word, access) in write_targets(cmd, name, &cand.argv) {
            if let Some(r) = target_refusal(g, &word, access, cwd, &show(&cand.argv)) {
                return Some(r);
            }
            if let Some(r) = binary_refusal(g, &word, access, cwd, upgrade, &cand.argv) {
                return Some(r);
            }
        }
        // What it writes may come from earlier in its pipeline
        // (`printf 'KERYX_HOOKS=off' | tee -a .envrc`).
        let upstream = script.commands[..i]
            .iter()
            .filter(|d| d.pipeline == cmd.pipeline && d.stage < cmd.stage);
        if writes_a_file(cmd, name, &cand.argv)
            && let Some(what) = std::iter::once(cmd)
                .chain(upstream)
                .flat_map(|c| &c.words)
                .find_map(|w| disarming_text(w))
        {
            return Some(format!(
                "ctx-guard: `{}` writes text that {what}; {ONLY_A_PERSON}",
                show(&cand.argv)
            ));
        }
    }
    None
}

/// `words` with each brace list expanded as the shell would
/// (`{keryx-hooks,trust}` is two words, `~/.keryx/{a,b}.json` two paths);
/// one level, no sequences (`{1..3}`), at most 64 words from each.
pub(super) fn brace_expanded(words: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let open = w.find('{');
        let close = open.and_then(|o| w[o..].find('}').map(|c| o + c));
        match (open, close) {
            (Some(o), Some(c)) if w[o + 1..c].contains(',') && !w[o + 1..c].contains('{') => {
                let (pre, post) = (&w[..o], &w[c + 1..]);
                out.extend(
                    w[o + 1..c]
                        .split(',')
                        .take(64)
                        .map(|item| format!("{pre}{item}{post}")),
                );
            }
            _ => out.push(w.clone()),
        }
    }
    out
}

/// A shell command that runs Codex's `apply_patch` (`applypatch`, `codex
/// --codex-run-as-apply-patch`): still read as shell, and the patch it is
/// given (its arguments, a here-document or here-string, text piped into
/// it, a file on its input or `cat` into it) is read as a patch too, each
/// file it touches judged as a Write of it.
fn shell_patch(
    g: &Guard,
    script: &Script,
    i: usize,
    argv: &[String],
    cwd: Option<&Path>,
) -> Option<String> {
    let name = basename(argv.first()?);
    // The flag is read whatever the program is called: a host's binary
    // may be started under any name.
    let applies = patch::PROGRAMS.contains(&name) || argv.iter().any(|a| a == patch::CODEX_FLAG);
    if !applies {
        return None;
    }
    // The line's own text holds every literal way to hand it the patch;
    // escaped line ends count, as `printf` and `$'…'` make them real.
    let mut text = argv[1..].join("\n");
    text.push('\n');
    text.push_str(&patch::with_escaped_lines(g.src));
    let cmd = &script.commands[i];
    let mut files: Vec<&String> = cmd
        .redirects
        .iter()
        .filter(|r| r.reads_file())
        .map(|r| &r.target)
        .collect();
    for up in script.commands[..i]
        .iter()
        .filter(|d| d.pipeline == cmd.pipeline && d.stage < cmd.stage)
    {
        let w = unwrap_wrappers(&up.words);
        if w.first().is_some_and(|f| basename(f) == "cat") {
            files.extend(w[1..].iter().filter(|a| !a.starts_with('-')));
        }
    }
    for f in files {
        if let Some(path) = expand(g, f, cwd)
            && let Ok(Some(body)) = read_bounded(&path)
        {
            text.push('\n');
            text.push_str(&body);
        }
    }
    patch_refusal(g.cfg, name, &text, &|f| {
        expand(g, f, cwd).into_iter().collect()
    })
}

/// The script a shell (or `at`, `batch`) reads from a pipe of literal
/// text: `echo 'rm ~/.keryx/hooks.json' | sh`, `printf '…' | at now`.
pub(super) fn piped_script(
    script: &Script,
    i: usize,
    name: &str,
    argv: &[String],
) -> Option<String> {
    if !reads_script_from_stdin(name, argv) {
        return None;
    }
    let cmd = &script.commands[i];
    if cmd.stage == 0 {
        return None;
    }
    let text: Vec<String> = script.commands[..i]
        .iter()
        .filter(|d| d.pipeline == cmd.pipeline && d.stage < cmd.stage)
        .filter_map(|d| {
            let w = unwrap_wrappers(&d.words);
            match w.first().map(|f| basename(f)) {
                Some("echo") => Some(
                    w[1..]
                        .iter()
                        .filter(|a| !matches!(a.as_str(), "-n" | "-e" | "-E"))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                Some("printf") => Some(w[1..].join(" ").replace("\\n", "\n")),
                _ => None,
            }
        })
        .collect();
    (!text.is_empty()).then(|| text.join("\n"))
}

/// `ln` (or `cp -l`/`--link`, `cp -s`) of a secret file: another name for
/// it, under which a later read would not be seen for what it is.
fn links_a_secret(g: &Guard, cmd: &Command) -> Option<String> {
    let argv = unwrap_wrappers(&cmd.words);
    let name = basename(argv.first()?);
    let links = name == "ln"
        || (name == "cp"
            && argv[1..].iter().any(|a| {
                a == "--link"
                    || a == "--symbolic-link"
                    || (a.starts_with('-')
                        && !a.starts_with("--")
                        && (a.contains('l') || a.contains('s')))
            }));
    if !links {
        return None;
    }
    let home = g.cfg.home.as_deref();
    // The sources: every operand but the link's own name (the last one,
    // unless `-t DIR` names where the links go).
    let mut operands: Vec<&String> = Vec::new();
    let mut target_dir = false;
    let mut skip = false;
    for a in &argv[1..] {
        if skip {
            skip = false;
        } else if a == "-t" || a == "--target-directory" {
            target_dir = true;
            skip = true;
        } else if a.starts_with("--target-directory=") {
            target_dir = true;
        } else if !a.starts_with('-') {
            operands.push(a);
        }
    }
    if !target_dir && operands.len() >= 2 {
        operands.pop();
    }
    operands
        .into_iter()
        .find_map(|a| super::ctx_guard::secret_path(a, home).map(|k| (a, k)))
        .map(|(a, kind)| {
            format!(
                "ctx-guard: `{}` makes another name for {} (`{}`), under which reading it would not be seen for what it is",
                show(argv),
                kind.describe(),
                escape(a)
            )
        })
}

/// How a running shim looks to `pkill`, `killall` and `ps`: its process
/// name, and command lines as hosts start it.
const SHIM_PROCESS_LINES: [&str; 4] = [
    "keryx-hooks",
    "keryx-hooks run claude-code PreToolUse --snapshot keryx-0123456789ab",
    "/usr/local/bin/keryx-hooks run codex PreToolUse",
    "/opt/bin/keryx-hooks run gemini-cli BeforeTool --snapshot keryx-0123456789ab",
];

/// A command that signals or stops the shim's processes, judged by what
/// it would match rather than how it is spelled: a `pkill`/`pgrep`-style
/// pattern (a regular expression, as pkill reads it) or a `killall` name
/// that matches a running shim, a `kill` whose targets come from text that
/// names keryx-hooks (`kill $(pgrep -f keryx)`), `xargs kill` fed from such
/// text, or a signal to every process of the user (`kill -9 -1`). A host
/// whose shim is killed or stopped lets the tool run.
fn signals_keryx(script: &Script, cmd: &Command, src: &str) -> Option<String> {
    let argv = unwrap_wrappers(&cmd.words);
    let name = basename(argv.first()?);
    let operands: Vec<&String> = argv[1..]
        .iter()
        .filter(|a| !a.starts_with('-') || a.len() == 1)
        .collect();
    let insensitive = argv[1..].iter().any(|a| a == "-i" || a == "--ignore-case");
    let matches_shim = |pattern: &str| {
        regex::RegexBuilder::new(pattern)
            .case_insensitive(insensitive)
            .size_limit(1 << 20)
            .build()
            .map_or_else(
                |_| pattern.to_lowercase().contains("keryx"),
                |re| SHIM_PROCESS_LINES.iter().any(|l| re.is_match(l)),
            )
    };
    let names_keryx = |w: &str| w.to_lowercase().contains("keryx");
    let refuse = |what: &str| {
        Some(format!(
            "ctx-guard: `{}` {what}; a host whose hook is killed or stopped lets the tool run; {ONLY_A_PERSON}",
            show(argv)
        ))
    };
    let stage_names_keryx = || {
        script
            .commands
            .iter()
            .filter(|c| c.pipeline == cmd.pipeline && c.stage < cmd.stage)
            .flat_map(|c| &c.words)
            .any(|w| names_keryx(w))
    };
    match name {
        "pkill" => pkill_pattern(&argv[1..])
            .filter(|p| matches_shim(p))
            .and_then(|_| refuse("signals processes its pattern matches, keryx-hooks' among them")),
        "killall" | "skill" | "slay" | "snice" => {
            let by_regex = argv[1..].iter().any(|a| a == "-r" || a == "--regexp");
            operands
                .iter()
                .any(|p| {
                    if by_regex {
                        matches_shim(p)
                    } else {
                        names_keryx(p) || **p == "keryx-hooks"
                    }
                })
                .then_some(())
                .and_then(|()| refuse("signals keryx-hooks' processes"))
        }
        "kill" => {
            // Its targets may come from a substitution anywhere on the line.
            if argv[1..].iter().any(|a| a == "-1") || names_keryx(src) || stage_names_keryx() {
                return refuse("signals keryx-hooks' processes");
            }
            None
        }
        "xargs" => {
            let runs = argv[1..]
                .iter()
                .find(|a| !a.starts_with('-'))
                .map(|a| basename(a));
            (matches!(runs, Some("kill" | "pkill" | "killall")) && stage_names_keryx())
                .then_some(())
                .and_then(|()| refuse("signals the keryx-hooks processes fed to it"))
        }
        _ => None,
    }
}

/// The pattern operand of `pkill` args: the first word that is neither an
/// option nor the value of one.
fn pkill_pattern(args: &[String]) -> Option<&str> {
    const WITH_VALUE: [&str; 18] = [
        "-u",
        "-U",
        "-g",
        "-G",
        "-P",
        "-s",
        "-t",
        "-F",
        "--signal",
        "--euid",
        "--uid",
        "--group",
        "--pgroup",
        "--parent",
        "--session",
        "--terminal",
        "--pidfile",
        "--ns",
    ];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if WITH_VALUE.contains(&a.as_str()) {
            it.next();
        } else if !a.starts_with('-') || a == "-" {
            return Some(a);
        }
    }
    None
}

/// The script a command runs as text: `bash -c`, `eval`, `su -c`,
/// `script -c`, `flock -c`, `env -S`, `watch 'cmd'`.
pub(crate) fn nested(name: &str, argv: &[String]) -> Option<String> {
    if let Some(s) = nested_script(name, argv) {
        return Some(s);
    }
    // `-c SCRIPT`, also at the end of a cluster (`script -qc SCRIPT`).
    let after = |flags: &[&str]| {
        argv.windows(2)
            .find(|w| {
                let a = w[0].as_str();
                flags.contains(&a)
                    || (a.starts_with('-') && !a.starts_with("--") && a.ends_with('c'))
            })
            .map(|w| w[1].clone())
    };
    match name {
        "su" | "runuser" | "script" | "flock" => after(&["--command"]),
        // `env -S 'a b' c`: the split string, then the words after it.
        "env" => argv
            .iter()
            .position(|w| w == "-S" || w == "--split-string")
            .filter(|&i| i + 1 < argv.len())
            .map(|i| argv[i + 1..].join(" "))
            .or_else(|| {
                argv.iter()
                    .find_map(|a| a.strip_prefix("--split-string=").map(str::to_owned))
            }),
        "watch" => {
            let rest = skip_options(&argv[1..], &["-n", "--interval", "-d"], false);
            (!rest.is_empty()).then(|| rest.join(" "))
        }
        _ => None,
    }
}

/// A script nested deeper than the guard reads, that reaches for
/// keryx-hooks: refused rather than guessed at.
pub(super) fn too_deep(inner: &str) -> Option<String> {
    (inner.contains("keryx") || inner.contains("KERYX")).then(|| {
        format!(
            "ctx-guard: a command nested this deeply that names keryx-hooks is not run; {ONLY_A_PERSON}"
        )
    })
}

/// `KERYX_HOOKS=off` (any value but `on`) set for a child, exported or
/// assigned: `KERYX_HOOKS=off claude`, `env KERYX_HOOKS=off …`,
/// `export KERYX_HOOKS=off`, `setenv KERYX_HOOKS off`.
fn sets_off(w: &str) -> bool {
    w.strip_prefix("KERYX_HOOKS=")
        .is_some_and(|v| v.trim_matches(['"', '\'']) != "on")
}

fn disarming_env(cmd: &Command) -> Option<String> {
    let argv = unwrap_wrappers(&cmd.words);
    let prefix = &cmd.words[..cmd.words.len() - argv.len()];
    let first = argv.first().map(|w| basename(w));
    let declares = matches!(
        first,
        Some("export" | "declare" | "typeset" | "local" | "readonly")
    );
    let setenv = matches!(first, Some("setenv" | "launchctl" | "systemctl" | "tmux"))
        && argv
            .iter()
            .position(|w| w == "KERYX_HOOKS")
            .is_some_and(|at| argv.get(at + 1).is_some_and(|v| v != "on"));
    // `sudo VAR=value cmd` leaves the assignment at the front.
    let leading = argv
        .iter()
        .take_while(|w| w.contains('=') && !w.starts_with('-'));
    let hit = cmd.assignments.iter().any(|a| sets_off(a))
        || prefix.iter().any(|w| sets_off(w))
        || leading.clone().any(|w| sets_off(w))
        || (declares && argv.iter().any(|w| sets_off(w)))
        || setenv
        || (matches!(first, Some("systemctl")) && argv.iter().any(|w| sets_off(w)));
    hit.then(|| {
        format!(
            "ctx-guard: `KERYX_HOOKS` set to turn keryx-hooks off (`{}`) would run without its guards; {ONLY_A_PERSON}",
            show(&cmd.words)
        )
    })
}

/// `ln -s "$(which keryx-hooks)" /tmp/kh`, `cp ~/.cargo/bin/keryx-hooks x`:
/// keryx-hooks under a name the guard would not recognise later. Copying
/// or linking it under its own name (`cp target/release/keryx-hooks
/// ~/.cargo/bin/`) is an ordinary install and is left alone.
fn renamed_binary(g: &Guard, script: &Script, cmd: &Command) -> Option<String> {
    let argv = unwrap_wrappers(&cmd.words);
    let name = basename(argv.first()?);
    if !matches!(name, "ln" | "cp" | "install" | "mv") {
        return None;
    }
    let ops: Vec<&String> = argv[1..].iter().filter(|a| !a.starts_with('-')).collect();
    let [sources @ .., dest] = ops.as_slice() else {
        return None;
    };
    let ours = |w: &str| basename(w) == "keryx-hooks" || (dynamic(w) && names_keryx(script, g.src));
    if sources.is_empty() || !sources.iter().any(|s| ours(s)) {
        return None;
    }
    let dest_name = basename(dest.trim_end_matches('/'));
    let into_dir = dest.ends_with('/') || g.resolve(dest, None).is_some_and(|p| p.is_dir());
    if into_dir || dest_name == "keryx-hooks" {
        return None;
    }
    Some(format!(
        "ctx-guard: `{}` would give keryx-hooks another name (`{}`), which its guard would not \
         recognise; {ONLY_A_PERSON}",
        show(argv),
        escape(dest_name)
    ))
}

/// Whether `program` is an agent host's own CLI (its adapter's
/// `executables`), which starts a session of its own.
fn is_agent_cli(program: &str) -> bool {
    hosts::all().any(|a| a.executables().contains(&program))
}

/// Whether `var` moves where a host or keryx-hooks reads its config: a
/// child agent started with one of them set runs without the user's hooks.
/// keryx-hooks' own and the XDG ones, and every host's (its adapter's
/// `configEnv`).
fn relocates(var: &str) -> bool {
    const OURS: [&str; 6] = [
        "HOME",
        "KERYX_HOME",
        "KERYX_SNAPSHOT_ROOT",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CONFIG_HOME",
    ];
    OURS.contains(&var) || hosts::all().any(|a| a.config_env().contains(&var))
}

/// `HOME=/tmp/x claude -p …`, `env CODEX_HOME=/tmp/c codex exec …`,
/// `claude --settings '{"disableAllHooks": true}'`: a child agent session
/// that would not load keryx-hooks.
fn relocated_agent(cmd: &Command) -> Option<String> {
    let argv = unwrap_wrappers(&cmd.words);
    let first = argv.first()?;
    if !is_agent_cli(basename(first)) {
        return None;
    }
    let prefix = &cmd.words[..cmd.words.len() - argv.len()];
    let var = cmd
        .assignments
        .iter()
        .chain(prefix)
        .filter_map(|a| a.split_once('=').map(|(n, _)| n))
        .find(|n| relocates(n));
    if let Some(var) = var {
        return Some(format!(
            "ctx-guard: `{}` would start an agent session with `{var}` moved, so it would not load \
             keryx-hooks or the hooks you set up; {ONLY_A_PERSON}",
            show(&cmd.words)
        ));
    }
    let settings = argv
        .windows(2)
        .find_map(|w| (w[0] == "--settings").then_some(w[1].as_str()));
    if let Some(text) = settings
        && disarming_text(text).is_some()
    {
        return Some(format!(
            "ctx-guard: `{}` would start an agent session with its hooks turned off; {ONLY_A_PERSON}",
            show(argv)
        ));
    }
    None
}

/// One way a command line may end up running a program.
struct Candidate {
    argv: Vec<String>,
    /// `xargs`: more arguments come from the input.
    from_input: bool,
}

/// `argv`, then what each exec-style wrapper in front of it runs (`xargs
/// CMD`, `find -exec CMD ;`, `setsid CMD`, `chroot DIR CMD`, …), with
/// aliases and variables from earlier in the line substituted.
fn candidates(argv: &[String], defs: &Defs) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut cur: Vec<String> = argv.to_vec();
    let mut from_input = false;
    for _ in 0..8 {
        if let Some(first) = cur.first()
            && let Some(value) = defs.get(first)
        {
            let mut sub: Vec<String> = value.split_whitespace().map(str::to_owned).collect();
            sub.extend(cur.drain(1..));
            cur = unwrap_wrappers(&sub).to_vec();
        }
        let Some(first) = cur.first() else { break };
        let name = basename(first).to_owned();
        let next: Option<Vec<String>> = match name.as_str() {
            "xargs" => {
                from_input = true;
                Some(
                    skip_options(
                        &cur[1..],
                        &[
                            "-I",
                            "-L",
                            "-n",
                            "-P",
                            "-s",
                            "-d",
                            "-E",
                            "-a",
                            "--max-args",
                            "--max-procs",
                            "--delimiter",
                            "--arg-file",
                            "--max-lines",
                        ],
                        false,
                    )
                    .to_vec(),
                )
            }
            "find" => {
                let at = cur
                    .iter()
                    .position(|w| matches!(w.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"));
                at.map(|at| {
                    cur[at + 1..]
                        .iter()
                        .take_while(|w| *w != ";" && *w != "+" && *w != "\\;")
                        .cloned()
                        .collect()
                })
            }
            "setsid" | "caffeinate" | "chronic" | "unbuffer" | "proxychains" | "proxychains4"
            | "torsocks" | "firejail" | "catchsegv" => Some(
                cur[1..]
                    .iter()
                    .skip_while(|w| w.starts_with('-'))
                    .cloned()
                    .collect(),
            ),
            "strace" | "ltrace" => {
                Some(skip_options(&cur[1..], &["-o", "-e", "-p", "-s", "-u"], false).to_vec())
            }
            "chroot" | "taskset" | "chrt" => {
                let rest = skip_options(&cur[1..], &[], false);
                Some(rest.get(1..).unwrap_or(&[]).to_vec())
            }
            "flock" => {
                let rest = skip_options(&cur[1..], &["-w", "--timeout", "-E"], false);
                Some(rest.get(1..).unwrap_or(&[]).to_vec())
            }
            "nsenter" | "unshare" | "runuser" | "systemd-run" => Some(
                skip_options(
                    &cur[1..],
                    &["-t", "-u", "-g", "-p", "--unit", "--property"],
                    false,
                )
                .to_vec(),
            ),
            "cargo" => cargo_run(&cur),
            _ => None,
        };
        out.push(Candidate {
            argv: cur.clone(),
            from_input,
        });
        match next {
            Some(n) if !n.is_empty() => cur = unwrap_wrappers(&n).to_vec(),
            _ => break,
        }
    }
    out
}

/// `cargo run [--bin|-p keryx-hooks] … -- ARGS` runs keryx-hooks with ARGS.
fn cargo_run(argv: &[String]) -> Option<Vec<String>> {
    if argv.get(1).map(String::as_str) != Some("run") {
        return None;
    }
    let sep = argv.iter().position(|w| w == "--")?;
    let names_us = argv[..sep]
        .windows(2)
        .any(|w| matches!(w[0].as_str(), "--bin" | "-p" | "--package") && w[1] == "keryx-hooks")
        || argv[..sep]
            .iter()
            .any(|w| w == "--bin=keryx-hooks" || w == "--package=keryx-hooks");
    names_us.then(|| {
        let mut v = vec!["keryx-hooks".to_owned()];
        v.extend(argv[sep + 1..].iter().cloned());
        v
    })
}

/// Whether a word is not a literal (an expansion the guard cannot read).
fn dynamic(w: &str) -> bool {
    w.contains('$') || w.contains("`…`")
}

/// A run of keryx-hooks that changes trust or enforcement.
fn keryx_invocation(g: &Guard, script: &Script, cand: &Candidate) -> Option<String> {
    let first = cand.argv.first()?;
    // `$(which keryx-hooks) trust`: a program chosen at run time by a
    // substitution on a line that names keryx-hooks; `$KERYX_BIN trust`.
    let substituted = first.contains("$(…)") || first.contains("`…`");
    let named_var = first.starts_with('$') && first.to_ascii_uppercase().contains("KERYX");
    // `/usr/local/bin/keryx-hook? trust`: the shell runs what the pattern
    // matches, so a pattern keryx-hooks' name matches is keryx-hooks.
    let pattern_matches_us = basename(first).contains(['*', '?'])
        && !first.contains('$')
        && glob_match(basename(first), "keryx-hooks");
    let args = &cand.argv[1..];
    let ours = basename(first) == "keryx-hooks"
        || (substituted && names_keryx(script, g.src))
        || named_var
        || pattern_matches_us
        || (chosen_at_run_time(first) && only_keryx_would_take(args));
    if !ours {
        return None;
    }
    let what = changing_subcommand(args, cand.from_input)?;
    Some(format!(
        "ctx-guard: `{}` would {what}; {ONLY_A_PERSON} (reading commands such as `keryx-hooks list`, \
         `status`, `doctor` and `explain` are fine)",
        show(&cand.argv)
    ))
}

/// A program word the shell only knows when it runs the line: an
/// expansion (`$k` set by `printf -v` or `read`, `$(printf '\x6b…')`), a
/// pattern (`keryx-hook[s]`, `*`), or the name `find -exec` and `xargs -I`
/// put in (`{}`).
fn chosen_at_run_time(w: &str) -> bool {
    dynamic(w) || w.contains("{}") || basename(w).contains(['*', '?', '['])
}

/// Whether a program chosen at run time with `args` can only be keryx-hooks
/// changing enforcement: its first word is a subcommand no other common
/// tool has (`trust`, `untrust`, `allow-once`) or one of keryx-hooks'
/// changing subcommands with an argument that names keryx or is a
/// keryx-hooks switch (`disable keryx.ctx-guard`, `--acknowledge-gate-risk`).
fn only_keryx_would_take(args: &[String]) -> bool {
    let Some(sub) = args.iter().find(|a| !a.starts_with('-')) else {
        return false;
    };
    if matches!(sub.as_str(), "trust" | "untrust" | "allow-once") {
        return true;
    }
    let changing = matches!(
        sub.as_str(),
        "enable" | "disable" | "install" | "uninstall" | "import" | "init" | "doctor"
    );
    changing
        && args.iter().any(|a| {
            a.to_ascii_lowercase().contains("keryx")
                || a.starts_with("--acknowledge-gate-risk")
                || a == "--host-sandbox"
        })
}

fn names_keryx(script: &Script, src: &str) -> bool {
    src.contains("keryx-hooks")
        || script
            .commands
            .iter()
            .flat_map(|c| &c.words)
            .any(|w| w.contains("keryx-hooks"))
}

/// What running keryx-hooks with `args` would change, if anything.
fn changing_subcommand(args: &[String], from_input: bool) -> Option<String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return None;
    }
    let Some(sub) = args.iter().find(|a| !a.starts_with('-') || dynamic(a)) else {
        // Only options (`--version`); under xargs the subcommand comes from
        // the input and cannot be read.
        return from_input.then(|| "run a keryx-hooks subcommand read from its input".to_owned());
    };
    if dynamic(sub) {
        return Some("run a keryx-hooks subcommand chosen at run time".to_owned());
    }
    if from_input && !READING.contains(&sub.as_str()) {
        // `xargs -I{} keryx-hooks {}`: the input decides.
        return Some("run a keryx-hooks subcommand read from its input".to_owned());
    }
    let rest = &args[args.iter().position(|a| a == sub).unwrap_or(0) + 1..];
    let any_dynamic = rest.iter().any(|a| dynamic(a));
    let flag = |f: &str| {
        rest.iter()
            .any(|a| a == f || a.starts_with(&format!("{f}=")))
    };
    match sub.as_str() {
        "install" | "uninstall" | "import" if flag("--dry-run") && !any_dynamic => None,
        "doctor" if flag("--fix") || any_dynamic => {
            Some("change what keryx-hooks enforces (`doctor --fix`)".to_owned())
        }
        s if READING.contains(&s) => None,
        s => Some(format!("change what keryx-hooks enforces (`{s}`)")),
    }
}

/// The files a patch envelope (Codex's `apply_patch`) writes; `None` when
/// `text` is not one.
pub(crate) fn patch_files(text: &str) -> Option<Vec<String>> {
    patch::is_patch(text).then(|| patch::files(text))
}

/// The program text of `python -c CODE`, `perl -e CODE`, `node -e CODE`, ….
pub(crate) fn interpreter_code(name: &str, argv: &[String]) -> Option<String> {
    let flags: &[&str] = if name.starts_with("python") || name == "pypy" || name == "pypy3" {
        &["-c"]
    } else {
        match name {
            "perl" | "ruby" => &["-e", "-E"],
            "node" | "nodejs" | "bun" | "deno" => &["-e", "--eval", "-p", "--print", "eval"],
            "php" => &["-r"],
            "lua" | "luajit" => &["-e"],
            "osascript" => &["-e"],
            _ => return None,
        }
    };
    let mut out = String::new();
    for w in argv.windows(2) {
        let a = w[0].as_str();
        // `perl -pe CODE`, `perl -i -pe CODE`: the flag ends a cluster.
        let cluster = a.starts_with('-')
            && !a.starts_with("--")
            && flags
                .iter()
                .any(|f| f.len() == 2 && a.ends_with(&f[1..]) && a.len() > 1);
        if flags.contains(&a) || cluster {
            out.push_str(&w[1]);
            out.push('\n');
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A shell with no script operand reads its script from its input:
/// `echo 'keryx-hooks trust' | sh`, `bash <<EOF`, `bash <<< '…'`,
/// `source /dev/stdin`.
fn reads_script_from_stdin(name: &str, argv: &[String]) -> bool {
    match name {
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "fish" | "mksh" | "busybox" => {
            let operands = argv[1..]
                .iter()
                .filter(|a| !a.starts_with('-') && !a.starts_with('+'))
                .count();
            let c_flag = argv[1..]
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'));
            (operands == 0 && !c_flag) || argv[1..].iter().any(|a| a == "-s")
        }
        "source" | "." => argv
            .get(1)
            .is_some_and(|f| f.starts_with("/dev/stdin") || f.starts_with("/dev/fd/") || f == "-"),
        // `at now`, `batch`: a job read from the input, run later.
        "at" | "batch" => !argv[1..]
            .iter()
            .any(|a| matches!(a.as_str(), "-f" | "-l" | "-r" | "-d" | "-c")),
        // `crontab -`: the table read from the input runs every minute it
        // names, long after this call.
        "crontab" => {
            let operands: Vec<&String> = argv[1..]
                .iter()
                .filter(|a| !a.starts_with('-') || *a == "-")
                .collect();
            !argv[1..]
                .iter()
                .any(|a| matches!(a.as_str(), "-l" | "-r" | "-e" | "-i"))
                && (operands.is_empty() || operands.iter().any(|a| *a == "-"))
        }
        _ => false,
    }
}

/// `code` with adjacent string literals joined as the interpreter joins
/// them: `"keryx-" + "hooks"` (Python, JavaScript, Ruby), `'keryx-' .
/// 'hooks'` and `q{keryx}.q{-hooks}` (Perl), `'keryx-' 'hooks'` (Python).
fn concatenated(code: &str) -> String {
    static JOIN: OnceLock<Regex> = OnceLock::new();
    JOIN.get_or_init(|| Regex::new(r#"["'}]\s*(?:[+.]\s*)?(?:qq?\{|["'])"#).expect("valid regex"))
        .replace_all(code, "")
        .into_owned()
}

/// Program or script text that would disarm keryx-hooks, described.
fn disarming_text(text: &str) -> Option<&'static str> {
    static PATTERNS: OnceLock<[Regex; 3]> = OnceLock::new();
    if !text.contains("keryx-hooks")
        && !text.contains("KERYX_HOOKS")
        && !text.contains("disableAllHooks")
    {
        return None;
    }
    let [sub, env, all] = PATTERNS.get_or_init(|| {
        [
            Regex::new(
                r#"keryx-hooks["'\],\s\\]{1,8}(?:trust|untrust|enable|disable|install|uninstall|import)\b|keryx-hooks["'\],\s\\]{1,8}doctor\b[^\n]{0,40}--fix"#,
            )
            .expect("valid regex"),
            Regex::new(r#"KERYX_HOOKS["'\]]*\s*[=:,]\s*["']?([A-Za-z0-9_$-]*)"#)
                .expect("valid regex"),
            Regex::new(r#"disableAllHooks["']?\s*[:=]\s*true"#).expect("valid regex"),
        ]
    });
    if sub.is_match(text) {
        return Some("would run a keryx-hooks subcommand that changes trust or enforcement");
    }
    if env
        .captures_iter(text)
        .any(|c| c.get(1).is_some_and(|v| v.as_str() != "on"))
    {
        return Some("would set `KERYX_HOOKS` to turn keryx-hooks off");
    }
    if all.is_match(text) {
        return Some("would turn every hook off (`disableAllHooks`)");
    }
    None
}

/// Best effort for `python -c`, `perl -e` and the like: the program names
/// a protected file and does something that writes or removes files.
fn code_writes_protected(cfg: &CtxGuardConfig, code: &str) -> Option<String> {
    const WRITES: [&str; 22] = [
        "'w'",
        "\"w\"",
        "'a'",
        "\"a\"",
        "'w+'",
        "\"w+\"",
        "write",
        "unlink",
        "remove",
        "rename",
        "replace(",
        "rmtree",
        "truncate",
        "chmod",
        "copyfile",
        "copy(",
        "move(",
        "rmSync",
        "open(F, \">",
        "open(my $f, '>",
        ">>",
        "dump(",
    ];
    if !WRITES.iter().any(|w| code.contains(w)) {
        return None;
    }
    let home = cfg.home.as_deref();
    let forms = |p: &Path| -> Vec<String> {
        let mut v = vec![p.display().to_string()];
        if let Some(rel) = home.and_then(|h| p.strip_prefix(h).ok()) {
            v.push(format!("~/{}", rel.display()));
            v.push(format!("/{}", rel.display()));
        }
        v
    };
    let mut places: Vec<(String, PathBuf)> = keryx_places(cfg)
        .into_iter()
        .map(|(w, p)| (w.to_owned(), p))
        .collect();
    let (user, project) = host_files(cfg);
    places.extend(
        user.into_iter()
            .map(|h| ("an agent host's config file".to_owned(), h.path)),
    );
    if let Some((what, p)) = places
        .into_iter()
        .find(|(_, p)| forms(p).iter().any(|f| code.contains(f.as_str())))
    {
        return Some(format!("{what} (`{}`)", escape(&p.display().to_string())));
    }
    project.into_iter().find_map(|(tail, h)| {
        let t = tail.join("/");
        code.contains(&t).then(|| {
            format!(
                "an agent host's config file (`{}` for {})",
                escape(&t),
                h.host_name
            )
        })
    })
}

fn writes(op: RedirectOp) -> bool {
    matches!(
        op,
        RedirectOp::Write
            | RedirectOp::Append
            | RedirectOp::ReadWrite
            | RedirectOp::WriteBoth
            | RedirectOp::AppendBoth
    )
}

/// How a command touches a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Creates, overwrites or changes it.
    Write,
    /// Removes or moves it away (and so everything below it).
    Remove,
    /// A program not known to only read what it names: changes it, or,
    /// for a directory, what is in it (`tar -x -C DIR`, `rsync … DIR/`).
    Change,
}

/// Whether the command writes some file (a redirect, `tee`, `sed -i`, …).
fn writes_a_file(cmd: &Command, name: &str, argv: &[String]) -> bool {
    cmd.redirects
        .iter()
        .any(|r| writes(r.op) && r.target != "/dev/null")
        || matches!(name, "tee" | "sponge" | "dd")
        || (matches!(name, "sed" | "gsed") && Reader::of(name).is_some_and(|r| r.silent(argv)))
}

/// The words naming what a command writes or removes.
fn write_targets(cmd: &Command, name: &str, argv: &[String]) -> Vec<(String, Access)> {
    let mut out: Vec<(String, Access)> = cmd
        .redirects
        .iter()
        .filter(|r| writes(r.op))
        .map(|r| (r.target.clone(), Access::Write))
        .collect();
    let operands = || -> Vec<String> {
        let mut v = Vec::new();
        let mut only = false;
        for a in argv.iter().skip(1) {
            if !only && a == "--" {
                only = true;
            } else if only || !a.starts_with('-') {
                v.push(a.clone());
            }
        }
        v
    };
    let mut all = |access: Access, words: Vec<String>| {
        out.extend(words.into_iter().map(|w| (w, access)));
    };
    match name {
        "tee" | "sponge" | "truncate" | "chmod" | "chown" | "chgrp" | "chattr" | "setfacl"
        | "touch" | "patch" => all(Access::Write, operands()),
        "rm" | "unlink" | "rmdir" | "shred" | "srm" | "trash" | "trash-put" | "gio" => {
            all(Access::Remove, operands())
        }
        "sed" | "gsed" => {
            if let Some(r) = Reader::of(name)
                && r.silent(argv)
            {
                all(
                    Access::Write,
                    r.operands(argv).into_iter().map(str::to_owned).collect(),
                );
            }
        }
        "perl" => {
            let in_place = argv[1..]
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains('i'));
            if in_place {
                let mut files = Vec::new();
                let mut skip = false;
                for a in &argv[1..] {
                    if skip {
                        skip = false;
                    } else if a.starts_with('-') {
                        skip = a.ends_with('e') || a.ends_with('E');
                    } else {
                        files.push(a.clone());
                    }
                }
                all(Access::Write, files);
            }
        }
        "dd" => all(
            Access::Write,
            argv.iter()
                .filter_map(|a| a.strip_prefix("of=").map(str::to_owned))
                .collect(),
        ),
        // `sort -o FILE`, `--output=FILE`, `-oFILE`: the output file.
        "sort" => {
            let mut files: Vec<String> = argv
                .windows(2)
                .filter(|w| w[0] == "-o" || w[0] == "--output")
                .map(|w| w[1].clone())
                .collect();
            files.extend(argv[1..].iter().filter_map(|a| {
                a.strip_prefix("--output=")
                    .or_else(|| a.strip_prefix("-o").filter(|f| !f.is_empty()))
                    .map(str::to_owned)
            }));
            all(Access::Write, files);
        }
        // `uniq IN OUT`: the second operand is written.
        "uniq" => all(
            Access::Write,
            operands().into_iter().skip(1).take(1).collect(),
        ),
        "curl" | "wget" => {
            let flags: &[&str] = if name == "curl" {
                &["-o", "--output"]
            } else {
                &["-O", "--output-document"]
            };
            let mut files: Vec<String> = argv
                .windows(2)
                .filter(|w| flags.contains(&w[0].as_str()))
                .map(|w| w[1].clone())
                .collect();
            files.extend(argv.iter().filter_map(|a| {
                a.strip_prefix("--output=")
                    .or_else(|| a.strip_prefix("--output-document="))
                    .map(str::to_owned)
            }));
            all(Access::Write, files);
        }
        "cp" | "mv" | "install" | "ln" | "rsync" | "scp" => {
            let valued: &[&str] = match name {
                "install" => &["-m", "-o", "-g", "-t", "-S", "--mode", "--owner", "--group"],
                "cp" | "mv" | "ln" => &["-t", "-S", "--suffix", "--target-directory"],
                _ => &["-e", "--rsh", "-f", "--filter", "--exclude", "--include"],
            };
            let mut ops = Vec::new();
            let mut target_dir = None;
            let mut i = 1;
            let mut only = false;
            while let Some(a) = argv.get(i) {
                if !only && a == "--" {
                    only = true;
                } else if !only && a.starts_with('-') && a.len() > 1 {
                    if let Some(d) = a.strip_prefix("--target-directory=") {
                        target_dir = Some(d.to_owned());
                    } else if valued.contains(&a.as_str()) {
                        if a == "-t" || a == "--target-directory" {
                            target_dir = argv.get(i + 1).cloned();
                        }
                        i += 1;
                    }
                } else {
                    ops.push(a.clone());
                }
                i += 1;
            }
            let (sources, dest) = match target_dir {
                Some(d) => (ops, Some(d)),
                None if ops.len() >= 2 => {
                    let d = ops.pop();
                    (ops, d)
                }
                None if name == "ln" => {
                    // `ln -s TARGET`: the link is TARGET's name, here.
                    let name = ops.first().map(|t| basename(t).to_owned());
                    (Vec::new(), name)
                }
                None => (ops, None),
            };
            if let Some(d) = dest {
                for s in &sources {
                    all(Access::Write, vec![format!("{d}/{}", basename(s))]);
                }
                all(Access::Write, vec![d]);
            }
            match name {
                "mv" => all(Access::Remove, sources),
                // A link to what decides enforcement is a way to write it
                // under another name.
                "ln" => all(Access::Write, sources),
                _ => {}
            }
        }
        "find" if argv.iter().any(|a| a == "-delete") => {
            let roots: Vec<String> = argv[1..]
                .iter()
                .take_while(|a| !a.starts_with('-') && *a != "(" && *a != "!")
                .cloned()
                .collect();
            all(Access::Remove, roots);
        }
        _ if !only_reads(name, argv) => {
            // Every operand, and the value of every `--opt=VALUE`.
            let words = argv[1..]
                .iter()
                .filter_map(|a| match a.strip_prefix("--") {
                    Some(opt) => opt.split_once('=').map(|(_, v)| v.to_owned()),
                    None => (!a.starts_with('-') || a.len() == 1).then(|| a.clone()),
                })
                .collect();
            all(Access::Change, words);
        }
        _ => {}
    }
    if matches!(name, "cp" | "mv" | "install" | "rsync" | "scp" | "ln") {
        // `cp -rT SRC ~/.keryx`, `rsync -a SRC/ ~/.claude/`: the
        // destination directory's own files are replaced.
        let last = argv[1..]
            .iter()
            .rev()
            .find(|a| !a.starts_with('-'))
            .cloned();
        let target = argv
            .windows(2)
            .find(|w| w[0] == "-t" || w[0] == "--target-directory")
            .map(|w| w[1].clone())
            .or(last);
        if let Some(t) = target.filter(|_| argv.len() > 2) {
            out.push((t, Access::Change));
        }
    }
    out
}

/// The refusal for a command that would `access` the path `word` names,
/// when that path decides enforcement.
fn target_refusal(
    g: &Guard,
    word: &str,
    access: Access,
    cwd: Option<&Path>,
    shown: &str,
) -> Option<String> {
    if word == "/dev/null" || word.is_empty() {
        return None;
    }
    let cfg = g.cfg;
    let what = if word.contains(['*', '?']) {
        glob_hit(cfg, &expand(g, word, cwd)?)?
    } else {
        let path = expand(g, word, cwd)?;
        match protected(cfg, &path) {
            Some(p) => p.describe(),
            None if access == Access::Remove => inside_removed(cfg, &path)?,
            None if access == Access::Change => directly_holds(cfg, &path)?,
            None => return None,
        }
    };
    Some(format!(
        "ctx-guard: `{shown}` would {} {what}; {ONLY_A_PERSON}{}",
        match access {
            Access::Write => "write",
            Access::Remove => "remove",
            Access::Change => "change",
        },
        if what.contains("agent host's config") {
            " (other changes to that file go through the host's Edit tool, which keeps keryx-hooks' entries)"
        } else {
            ""
        }
    ))
}

/// A write or removal of the keryx-hooks binary the hosts run, other than
/// putting another keryx-hooks in its place. With the binary gone or
/// broken every host hook fails, and hosts let the tool run.
fn binary_refusal(
    g: &Guard,
    word: &str,
    access: Access,
    cwd: Option<&Path>,
    upgrade: bool,
    argv: &[String],
) -> Option<String> {
    let binary = g.cfg.binary.as_deref()?;
    if upgrade && access != Access::Remove {
        return None;
    }
    let path = expand(g, word, cwd)?;
    let hit = crate::paths::real_path(&path) == crate::paths::real_path(binary);
    hit.then(|| {
        format!(
            "ctx-guard: `{}` would {} the keryx-hooks binary the agent hosts run (`{}`); {ONLY_A_PERSON}",
            show(argv),
            match access {
                Access::Write | Access::Change => "change",
                Access::Remove => "remove",
            },
            escape(&binary.display().to_string())
        )
    })
}

/// `word` as an absolute path: `~`, the variables that name keryx's own
/// places, and the cwd resolved.
fn expand(g: &Guard, word: &str, cwd: Option<&Path>) -> Option<PathBuf> {
    let cfg = g.cfg;
    // The canonical payload carries no cwd without a project: the shim runs
    // where the host started it, which is where the tool runs too.
    let here = std::env::current_dir().ok();
    let cwd = cwd.or(here.as_deref());
    let vars: [(&str, Option<PathBuf>); 5] = [
        ("KERYX_HOME", cfg.keryx_home.clone()),
        ("KERYX_SNAPSHOT_ROOT", cfg.snapshot_root.clone()),
        (
            "XDG_DATA_HOME",
            cfg.data_dir
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf),
        ),
        (
            "XDG_STATE_HOME",
            cfg.state_dir
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf),
        ),
        (
            "XDG_CONFIG_HOME",
            crate::env_vars::get("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| cfg.home.as_ref().map(|h| h.join(".config"))),
        ),
    ];
    let mut word = word.to_owned();
    for (var, value) in &vars {
        for form in [format!("${var}"), format!("${{{var}}}")] {
            if let Some(rest) = word.strip_prefix(&form)
                && (rest.is_empty() || rest.starts_with('/'))
                && let Some(v) = value
            {
                word = format!("{}{rest}", v.display());
            }
        }
    }
    if !word.contains(['*', '?']) {
        return g.resolve(&word, cwd).map(|p| crate::paths::absolute(&p));
    }
    // A glob is kept in its components; the caller matches it.
    let joined = if word.starts_with('/') {
        PathBuf::from(&word)
    } else if let Some(rest) = word.strip_prefix("~/") {
        cfg.home.as_ref()?.join(rest)
    } else {
        cwd?.join(&word)
    };
    Some(crate::paths::absolute(&joined))
}

// ------------------------------------------------------------------ paths

/// Something that decides enforcement.
#[derive(Debug, Clone)]
enum Protected {
    /// keryx-hooks' own file or directory: never written by the agent.
    Keryx(&'static str, PathBuf),
    /// An agent host's config file, where keryx-hooks is wired in.
    HostConfig(HostFile),
    /// A project file (or directory) from which an agent host loads code
    /// or starts commands, outside every sandboxed hook: the host's name.
    HostCode(&'static str, PathBuf),
}

impl Protected {
    fn describe(&self) -> String {
        match self {
            Protected::Keryx(what, p) => format!("{what} (`{}`)", escape(&p.display().to_string())),
            Protected::HostConfig(h) => format!(
                "an agent host's config file (`{}`, where keryx-hooks is wired into {})",
                escape(&h.path.display().to_string()),
                h.host_name
            ),
            Protected::HostCode(host, p) => format!(
                "a file {host} loads code or starts commands from (`{}`), which would run outside any sandbox",
                escape(&p.display().to_string())
            ),
        }
    }
}

/// One host config file and how to read keryx-hooks' entries in it.
#[derive(Debug, Clone)]
struct HostFile {
    path: PathBuf,
    host_name: &'static str,
    format: ConfigFormat,
    /// How strictly the host reads it.
    reads: hosts::Reads,
}

/// keryx-hooks' own places.
pub(crate) fn keryx_places(cfg: &CtxGuardConfig) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    if let Some(k) = &cfg.keryx_home {
        out.push(("your keryx-hooks hooks file", k.join("hooks.json")));
        out.push(("keryx-hooks' runtime settings", k.join("runtime.toml")));
    }
    if let Some(d) = &cfg.data_dir {
        out.push(("the hook trust store", d.join("hook-trust.json")));
    }
    if let Some(s) = &cfg.snapshot_root {
        out.push(("the installed hook snapshots", s.clone()));
    }
    if let Some(s) = &cfg.state_dir {
        out.push(("keryx-hooks' state directory", s.clone()));
    }
    out
}

/// What decides enforcement, as absolute paths an OS sandbox can deny
/// writes to: keryx-hooks' own places, the binary the hosts run and every
/// host's user config file. Project files are named by their tails in any
/// directory, which a path list cannot express; they are not here.
pub fn enforcement_paths(cfg: &CtxGuardConfig) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = keryx_places(cfg).into_iter().map(|(_, p)| p).collect();
    out.extend(cfg.binary.clone());
    out.extend(host_files(cfg).0.into_iter().map(|h| h.path));
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| p.is_absolute() && seen.insert(p.clone()));
    out
}

/// Every host config file: each adapter's user files (with its home
/// variable applied) and project files (matched in any directory, as
/// trailing components), then the other files each host reads hooks from
/// (its `alsoRead`; user paths as written).
fn host_files(cfg: &CtxGuardConfig) -> (Vec<HostFile>, Vec<(Vec<String>, HostFile)>) {
    let home = cfg.home.as_deref();
    let user_path = |p: &str, relocate: Option<&hosts::HomeEnv>| -> Option<PathBuf> {
        if let Some(h) = relocate
            && let Some(rest) = p.strip_prefix(h.replaces)
            && let Some(base) = crate::env_vars::get(h.var).filter(|b| Path::new(b).is_absolute())
        {
            return Some(PathBuf::from(format!("{base}{rest}")));
        }
        match p.strip_prefix("~/") {
            Some(rest) => home.map(|h| h.join(rest)),
            None => Some(PathBuf::from(p)),
        }
    };
    let mut user = Vec::new();
    let mut project = Vec::new();
    let tail = |p: &str| -> Vec<String> { p.split('/').map(str::to_owned).collect() };
    for name in hosts::host_names() {
        let Some(adapter) = hosts::adapter(name) else {
            continue;
        };
        let files = adapter.config_files();
        if files.format == ConfigFormat::None {
            continue;
        }
        let host_name = adapter.display_name();
        for p in files.user {
            if let Some(path) = user_path(p, files.home_env.as_ref()) {
                user.push(HostFile {
                    path,
                    host_name,
                    format: files.format,
                    reads: files.reads,
                });
            }
        }
        for p in files.project {
            project.push((
                tail(p),
                HostFile {
                    path: PathBuf::from(p),
                    host_name,
                    format: files.format,
                    reads: files.reads,
                },
            ));
        }
    }
    let format_of = |p: &str| {
        if p.ends_with(".toml") {
            ConfigFormat::Toml
        } else {
            ConfigFormat::Json
        }
    };
    for adapter in hosts::all() {
        let also = &adapter.config_files().also_read;
        let host_name = adapter.display_name();
        for p in also.user {
            if let Some(path) = user_path(p, None) {
                user.push(HostFile {
                    path,
                    host_name,
                    format: format_of(p),
                    reads: hosts::Reads::default(),
                });
            }
        }
        for p in also.project {
            project.push((
                tail(p),
                HostFile {
                    path: PathBuf::from(p),
                    host_name,
                    format: format_of(p),
                    reads: hosts::Reads::default(),
                },
            ));
        }
    }
    (user, project)
}

/// Whether `path` might name one of the host files: its file name ends
/// some adapter's user, project or other hook file. Cheap, so every host's
/// paths are only resolved for a path that could matter.
fn maybe_host_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let tail = format!("/{name}");
    hosts::all().any(|a| {
        let files = a.config_files();
        [
            files.user,
            files.project,
            files.also_read.user,
            files.also_read.project,
        ]
        .iter()
        .any(|paths| paths.iter().any(|p| p.ends_with(&tail)))
    })
}

/// The refusal when `path` is the keryx-hooks binary the hosts run.
fn the_hosts_binary(cfg: &CtxGuardConfig, tool: &str, path: &Path, verb: &str) -> Option<String> {
    let binary = cfg.binary.as_ref()?;
    (crate::paths::real_path(path) == crate::paths::real_path(binary)).then(|| {
        format!(
            "keryx-hooks: `{}` {verb} the keryx-hooks binary the agent hosts run (`{}`); {ONLY_A_PERSON}",
            escape(tool),
            escape(&binary.display().to_string())
        )
    })
}

/// An MCP tool given a path that decides enforcement (keryx-hooks' files,
/// an agent host's config, the binary the hosts run), in any string
/// argument: refused, since what the tool does with it cannot be checked
/// the way a Write's content is.
fn mcp_write_refusal(
    tool: &str,
    input: &Value,
    cfg: &CtxGuardConfig,
    resolve: &dyn Fn(&str) -> Option<PathBuf>,
) -> Option<String> {
    let mut args: Vec<(String, &str)> = Vec::new();
    super::ctx_guard::string_args(input, "", &mut args);
    for (_, s) in args
        .into_iter()
        .filter(|(_, s)| super::ctx_guard::path_like(s))
    {
        let Some(path) = resolve(s) else { continue };
        if let Some(r) = the_hosts_binary(cfg, tool, &path, "is given") {
            return Some(r);
        }
        if let Some(p) = protected(cfg, &path) {
            return Some(refusal(
                tool,
                &p,
                "an MCP tool's use of a path cannot be checked the way a Write's content is",
            ));
        }
    }
    None
}

/// What `path` is, when it decides enforcement.
///
/// Recognised by what `path` is, not how it is spelled: its real path (a
/// symlink under an innocent name is the file it points at) and, for a
/// file with more than one name, its device and inode (a hard link is the
/// file itself).
fn protected(cfg: &CtxGuardConfig, path: &Path) -> Option<Protected> {
    let real = crate::paths::real_path(path);
    for (what, p) in keryx_places(cfg) {
        if crate::paths::may_be_inside(path, &p) || crate::paths::may_be_inside(&real, &p) {
            return Some(Protected::Keryx(what, p));
        }
    }
    if let Some(p) = hard_link_of(cfg, path) {
        return Some(p);
    }
    if !maybe_host_file(path) && !maybe_host_file(&real) {
        return project_code(path);
    }
    let (user, project) = host_files(cfg);
    if let Some(h) = user
        .into_iter()
        .find(|h| crate::paths::may_be_inside(path, &h.path))
    {
        return Some(Protected::HostConfig(h));
    }
    let real = crate::paths::real_path(path);
    for candidate in [path.to_path_buf(), real] {
        let comps: Vec<String> = candidate
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_ascii_lowercase())
            .collect();
        for (tail, h) in &project {
            let n = tail.len();
            if comps.len() >= n
                && comps[comps.len() - n..]
                    .iter()
                    .zip(tail)
                    .all(|(c, t)| *c == t.to_ascii_lowercase())
            {
                let mut h = h.clone();
                h.path = candidate.clone();
                return Some(Protected::HostConfig(h));
            }
        }
    }
    project_code(path)
}

/// `path` when it is (or lies in) one of the project paths a host loads
/// code or starts commands from ([`crate::adapter::project_code`]), by its
/// trailing components (`.vscode/tasks.json`) or, for a directory, by the
/// components it lies under (`.claude/hooks/fmt.sh`); as spelled or as its
/// real path. A host's own config file among them is a [`HostFile`],
/// judged by its content, before this is asked.
fn project_code(path: &Path) -> Option<Protected> {
    let lower = |p: &Path| -> Vec<String> {
        p.components()
            .map(|c| c.as_os_str().to_string_lossy().to_ascii_lowercase())
            .collect()
    };
    for candidate in [path.to_path_buf(), crate::paths::real_path(path)] {
        let comps = lower(&candidate);
        for (host, rel) in crate::adapter::project_code() {
            let tail: Vec<String> = rel
                .trim_end_matches('/')
                .split('/')
                .map(str::to_ascii_lowercase)
                .collect();
            let hit = if rel.ends_with('/') {
                (0..comps.len()).any(|i| comps[i..].starts_with(&tail))
            } else {
                comps.ends_with(&tail)
            };
            if hit {
                return Some(Protected::HostCode(host, candidate));
            }
        }
    }
    None
}

/// What removing the directory `path` would take with it.
fn inside_removed(cfg: &CtxGuardConfig, path: &Path) -> Option<String> {
    for (what, p) in keryx_places(cfg) {
        if p.exists() && crate::paths::may_be_inside(&p, path) {
            return Some(format!(
                "a directory holding {what} (`{}`)",
                escape(&p.display().to_string())
            ));
        }
    }
    let (user, project) = host_files(cfg);
    if let Some(h) = user
        .iter()
        .find(|h| h.path.exists() && crate::paths::may_be_inside(&h.path, path))
    {
        return Some(format!(
            "a directory holding an agent host's config file (`{}`)",
            escape(&h.path.display().to_string())
        ));
    }
    // `rm -rf .claude`: a directory named like the start of a project file.
    let last = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    project
        .iter()
        .find(|(tail, _)| {
            tail.len() > 1
                && tail[0].to_ascii_lowercase() == last
                && path.join(tail[1..].iter().collect::<PathBuf>()).exists()
        })
        .map(|(tail, h)| {
            format!(
                "a directory holding an agent host's config file (`{}` for {})",
                escape(&tail.join("/")),
                h.host_name
            )
        })
}

/// The directory `path` when it directly holds something that decides
/// enforcement (`~/.keryx`, `~/.claude`, a project's `.claude`): a
/// program writing into it (`tar -x -C`, `rsync`, `cp -T`) can replace
/// that file. The home and the project root, which hold everything, are
/// left to the programs that name the file itself.
fn directly_holds(cfg: &CtxGuardConfig, path: &Path) -> Option<String> {
    let real = crate::paths::real_path(path);
    if !real.is_dir()
        || cfg
            .home
            .as_deref()
            .is_some_and(|h| crate::paths::real_path(h) == real)
    {
        return None;
    }
    let held = |p: &Path| {
        p.exists()
            && p.parent()
                .is_some_and(|d| crate::paths::real_path(d) == real)
    };
    if let Some((what, p)) = keryx_places(cfg).into_iter().find(|(_, p)| held(p)) {
        return Some(format!(
            "a directory holding {what} (`{}`)",
            escape(&p.display().to_string())
        ));
    }
    let (user, project) = host_files(cfg);
    if let Some(h) = user.iter().find(|h| held(&h.path)) {
        return Some(format!(
            "a directory holding an agent host's config file (`{}`)",
            escape(&h.path.display().to_string())
        ));
    }
    project
        .iter()
        .find(|(tail, _)| {
            tail.len() == 2
                && real
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(&tail[0]))
                && real.join(&tail[1]).exists()
        })
        .map(|(tail, h)| {
            format!(
                "a directory holding an agent host's config file (`{}` for {})",
                escape(&tail.join("/")),
                h.host_name
            )
        })
}

/// Programs that only read the files they name, unless a flag says
/// otherwise; any other program naming what decides enforcement is taken
/// to change it (by effect, not by spelling: `gzip`, `vim -es`, `ed`,
/// `tar -x -C`, `git -C … checkout` all write).
fn only_reads(name: &str, argv: &[String]) -> bool {
    const READERS: &[&str] = &[
        "cat",
        "bat",
        "batcat",
        "less",
        "more",
        "most",
        "head",
        "tail",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "ls",
        "ll",
        "dir",
        "exa",
        "eza",
        "lsd",
        "tree",
        "stat",
        "file",
        "wc",
        "du",
        "df",
        "diff",
        "cmp",
        "comm",
        "md5sum",
        "sha1sum",
        "sha224sum",
        "sha256sum",
        "sha384sum",
        "sha512sum",
        "b2sum",
        "cksum",
        "sum",
        "readlink",
        "realpath",
        "basename",
        "dirname",
        "jq",
        "gojq",
        "jless",
        "fx",
        "nl",
        "od",
        "xxd",
        "hexdump",
        "strings",
        "echo",
        "printf",
        "test",
        "[",
        "[[",
        "cd",
        "pushd",
        "popd",
        "pwd",
        "which",
        "type",
        "whereis",
        "locate",
        "fd",
        "fdfind",
        "lsattr",
        "getfacl",
        "namei",
        "column",
        "sort",
        "uniq",
        "cut",
        "tr",
        "fold",
        "fmt",
        "expand",
        "unexpand",
        "rev",
        "tac",
        "paste",
        "join",
        "source",
        ".",
        "keryx-hooks",
    ];
    match name {
        // Rewrites the file in place with `-i inplace`.
        "awk" | "gawk" => !argv
            .windows(2)
            .any(|w| w[0] == "-i" && w[1].contains("inplace")),
        "yq" => !argv[1..]
            .iter()
            .any(|a| a == "-i" || a == "--inplace" || a.starts_with("-i")),
        "find" => !argv[1..].iter().any(|a| {
            matches!(
                a.as_str(),
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        "git" => {
            const READING_GIT: &[&str] = &[
                "status",
                "log",
                "diff",
                "show",
                "blame",
                "ls-files",
                "ls-tree",
                "rev-parse",
                "grep",
                "describe",
                "shortlog",
                "cat-file",
                "rev-list",
                "reflog",
                "add",
                "commit",
                "whatchanged",
                "annotate",
                "check-ignore",
                "check-attr",
            ];
            let sub = skip_options(&argv[1..], &["-C", "-c", "--git-dir", "--work-tree"], false);
            sub.first()
                .is_some_and(|s| READING_GIT.contains(&s.as_str()))
        }
        _ => READERS.contains(&name),
    }
}

/// `path` when it is another name (a hard link) of one of keryx-hooks'
/// files or a user host config file: same device and inode.
fn hard_link_of(cfg: &CtxGuardConfig, path: &Path) -> Option<Protected> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file() && m.nlink() > 1)?;
    let same =
        |p: &Path| std::fs::metadata(p).is_ok_and(|o| o.dev() == m.dev() && o.ino() == m.ino());
    if let Some((what, p)) = keryx_places(cfg).into_iter().find(|(_, p)| same(p)) {
        return Some(Protected::Keryx(what, p));
    }
    let (user, _) = host_files(cfg);
    user.into_iter()
        .find(|h| same(&h.path))
        .map(Protected::HostConfig)
}

/// A glob like `~/.keryx/*` that matches something protected.
fn glob_hit(cfg: &CtxGuardConfig, pattern: &Path) -> Option<String> {
    let pat: Vec<String> = pattern
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let first_glob = pat.iter().position(|c| c.contains(['*', '?']))?;
    let dir: PathBuf = pat[..first_glob].iter().collect();
    let (user, _) = host_files(cfg);
    let mut all: Vec<(String, PathBuf)> = keryx_places(cfg)
        .into_iter()
        .map(|(w, p)| (w.to_owned(), p))
        .collect();
    all.extend(
        user.into_iter()
            .map(|h| ("an agent host's config file".to_owned(), h.path)),
    );
    all.into_iter().find_map(|(what, p)| {
        let rel = p.strip_prefix(&dir).ok()?;
        let comps: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let n = pat.len() - first_glob;
        // The pattern reaches the protected path or a directory above it.
        let hit = comps.len() >= n
            && pat[first_glob..]
                .iter()
                .zip(&comps)
                .all(|(g, c)| glob_match(g, c));
        hit.then(|| format!("{what} (`{}`)", escape(&p.display().to_string())))
    })
}

// ------------------------------------------------------------------ file tools

/// The write gate's self-protection: a Write/Edit/MultiEdit/NotebookEdit
/// (or a host's equivalent) of what decides enforcement. keryx-hooks' own
/// files are never written; a host config file is, as long as every
/// keryx-hooks entry in it stays as it is and no setting turns hooks off.
pub fn check_write(payload: &Value, cfg: &CtxGuardConfig) -> Verdict {
    match write_refusal(payload, cfg) {
        Some(r) => Verdict::Deny(r),
        None => Verdict::Allow,
    }
}

fn write_refusal(payload: &Value, cfg: &CtxGuardConfig) -> Option<String> {
    let input = payload
        .get("toolInput")
        .or_else(|| payload.get("tool_input"))
        .or_else(|| payload.get("toolArgs"))
        .or_else(|| payload.get("tool_args"));
    let tool = payload
        .get("toolName")
        .or_else(|| payload.get("tool_name"))
        .and_then(Value::as_str)
        .unwrap_or("write");
    let cwd = input
        .and_then(|i| i.get("cwd"))
        .or_else(|| payload.get("cwd"))
        .and_then(Value::as_str)
        .map(PathBuf::from);
    let g = Guard::paths_only(cfg);
    let resolve = |p: &str| expand(&g, p, cwd.as_deref());

    // An MCP tool is judged by what its arguments name, whatever the tool
    // is called: a path that decides enforcement may be written by it.
    if tool.starts_with("mcp__") {
        return mcp_write_refusal(tool, input?, cfg, &resolve);
    }

    // A patch names its files inside (Codex apply_patch), in any spelling
    // Codex applies: padded or indented markers, any line ending, wrapped
    // in a here-document or in the shell script Codex reads it out of.
    let texts: Vec<String> = input
        .into_iter()
        .flat_map(|i| {
            let argv = i.get("command").and_then(Value::as_array).map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            [
                i.as_str().map(str::to_owned),
                i.get("command").and_then(Value::as_str).map(str::to_owned),
                argv,
                i.get("input").and_then(Value::as_str).map(str::to_owned),
                i.get("patch").and_then(Value::as_str).map(str::to_owned),
            ]
        })
        .chain([payload
            .get("input")
            .and_then(Value::as_str)
            .map(str::to_owned)])
        .flatten()
        .filter(|s| patch::is_patch(s))
        .collect();
    if !texts.is_empty() {
        let text = texts.join("\n");
        let mut bases = vec![cwd.clone()];
        for dir in patch::workdirs(&text) {
            let base = expand(&g, &dir, cwd.as_deref());
            bases.push(base);
        }
        return patch_refusal(cfg, tool, &text, &|file| {
            bases
                .iter()
                .filter_map(|base| expand(&g, file, base.as_deref()))
                .collect()
        });
    }

    let input = input?;
    let file = [
        "file_path",
        "filePath",
        "path",
        "absolute_path",
        "notebook_path",
    ]
    .iter()
    .find_map(|k| input.get(*k).and_then(Value::as_str))
    .or_else(|| payload.get("file_path").and_then(Value::as_str))?;
    let path = resolve(file)?;
    if let Some(r) = startup_file_refusal(tool, &path, input) {
        return Some(r);
    }
    if let Some(r) = the_hosts_binary(cfg, tool, &path, "would change") {
        return Some(r);
    }
    let p = protected(cfg, &path)?;
    let host = match &p {
        Protected::Keryx(..) | Protected::HostCode(..) => return Some(refusal(tool, &p, "")),
        Protected::HostConfig(h) => h,
    };
    let current = match read_bounded(&host.path) {
        Ok(c) => c,
        // Unreadable is not "no entries": refuse rather than guess.
        Err(why) => {
            return Some(refusal(
                tool,
                &p,
                &format!("its current content cannot be read to check ({why})"),
            ));
        }
    };
    let edits = host_edits(input, payload);
    let proposed = match (&edits, &current) {
        (Some(Change::Whole(text)), _) => Some(text.clone()),
        (Some(Change::Replace(list)), Some(cur)) => apply_edits(cur, list),
        // No such file: the host's edit fails on its own.
        (Some(Change::Replace(_)), None) => return None,
        (None, _) => None,
    };
    let Some(proposed) = proposed else {
        return Some(refusal(
            tool,
            &p,
            match edits {
                // The host may still apply it (Claude Code's Edit matches
                // curly quotes as straight ones): what cannot be checked
                // is not let through.
                Some(Change::Replace(_)) => {
                    "its old text is not in the file as it is, so the change cannot be checked"
                }
                _ => "this kind of change cannot be checked entry by entry",
            },
        ));
    };
    if host.format == ConfigFormat::Plugin {
        return (current.as_deref() != Some(proposed.as_str()))
            .then(|| refusal(tool, &p, "keryx-hooks generates that file whole"));
    }
    let before = current.as_deref().unwrap_or("");
    let (old_entries, old_off) = (
        entries(before, host.format).unwrap_or_default(),
        turned_off(before, host.format),
    );
    let Some(new_entries) = entries(&proposed, host.format) else {
        return Some(refusal(
            tool,
            &p,
            "the new content cannot be read, so what it does to the host cannot be checked",
        ));
    };
    if let Some(why) = host_would_not_load(before, &proposed, host.format, host.reads) {
        return Some(refusal(tool, &p, &why));
    }
    if let Some(lost) = old_entries.iter().find(|e| !new_entries.contains(e)) {
        return Some(refusal(
            tool,
            &p,
            &format!(
                "it would remove or change the keryx-hooks entry `{}`",
                escape(&lost.shown)
            ),
        ));
    }
    let new_off = turned_off(&proposed, host.format);
    if let Some(off) = new_off.iter().find(|o| !old_off.contains(o)) {
        return Some(refusal(tool, &p, &format!("it would {off}")));
    }
    if let Some(why) = sandbox_loosened(host, before, &proposed) {
        return Some(refusal(tool, &p, &why));
    }
    None
}

/// Whether `after` loosens the host's own sandbox for the agent's commands
/// that `before` set: a switch taken off its strict value, or a path taken
/// off its deny list. Turning the sandbox off would undo what stops the
/// writes the guards cannot read.
fn sandbox_loosened(host: &HostFile, before: &str, after: &str) -> Option<String> {
    let spec = hosts::all()
        .filter(|a| a.display_name() == host.host_name)
        .find_map(|a| a.host_sandbox())?;
    let old = document(before, host.format)?;
    let new = document(after, host.format).unwrap_or(Value::Null);
    let at = |doc: &Value, dotted: &str| -> Option<Value> {
        dotted.split('.').try_fold(doc, |v, k| v.get(k)).cloned()
    };
    let switches = spec
        .require_true
        .iter()
        .map(|p| (p, true))
        .chain(spec.require_false.iter().map(|p| (p, false)));
    for (dotted, strict) in switches {
        if at(&old, dotted) == Some(Value::Bool(strict))
            && at(&new, dotted) != Some(Value::Bool(strict))
        {
            return Some(format!(
                "it would loosen the host's sandbox for the agent's commands (`{dotted}`)"
            ));
        }
    }
    let list = |doc: &Value| -> Vec<Value> {
        match at(doc, spec.deny_write) {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        }
    };
    let kept = list(&new);
    list(&old).iter().find(|d| !kept.contains(d)).map(|d| {
        format!(
            "it would take `{}` off the host sandbox's `{}`",
            escape(&d.to_string()),
            spec.deny_write
        )
    })
}

/// Shell startup and environment files a session's environment comes from.
const STARTUP_FILES: [&str; 12] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".kshrc",
    ".envrc",
    "config.fish",
    "environment",
    ".pam_environment",
];

/// A Write or Edit that adds `KERYX_HOOKS=off` (or the like) to a shell
/// startup file or `.envrc`, so that later sessions start without their
/// guards.
fn startup_file_refusal(tool: &str, path: &Path, input: &Value) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    if !STARTUP_FILES.contains(&name) {
        return None;
    }
    let s = |keys: &[&str], v: &Value| {
        keys.iter()
            .filter_map(|k| v.get(*k).and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    };
    const NEW: [&str; 4] = ["content", "new_string", "new_str", "newString"];
    const OLD: [&str; 3] = ["old_string", "old_str", "oldString"];
    let mut new = s(&NEW, input);
    let mut old = s(&OLD, input);
    if let Some(Value::Array(edits)) = input.get("edits") {
        for e in edits {
            new.push('\n');
            new.push_str(&s(&NEW, e));
            old.push('\n');
            old.push_str(&s(&OLD, e));
        }
    }
    if input.get("content").is_some() {
        old = read_bounded(path).ok().flatten().unwrap_or_default();
    }
    let what = disarming_text(&new)?;
    if disarming_text(&old) == Some(what) {
        return None;
    }
    Some(format!(
        "keryx-hooks: `{}` of `{}` {what} for every session started from it; {ONLY_A_PERSON}",
        escape(tool),
        escape(&path.display().to_string())
    ))
}

fn refusal(tool: &str, p: &Protected, why: &str) -> String {
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(" ({why})")
    };
    let other = if matches!(p, Protected::HostConfig(_)) {
        "; other changes to that file are fine when they keep every keryx-hooks entry as it is"
    } else {
        ""
    };
    format!(
        "keryx-hooks: `{}` would change {}{why}; {ONLY_A_PERSON}{other}",
        escape(tool),
        p.describe()
    )
}

/// The files a patch touches, each judged as a Write of it: keryx-hooks'
/// own files, what a host loads code from and the binary the hosts run are
/// never written; a host config file is refused too, since a patch of it
/// cannot be checked entry by entry; a shell startup file may not gain
/// `KERYX_HOOKS=off`. `resolve` gives every path a file name may be.
fn patch_refusal(
    cfg: &CtxGuardConfig,
    tool: &str,
    text: &str,
    resolve: &dyn Fn(&str) -> Vec<PathBuf>,
) -> Option<String> {
    for file in patch::files(text) {
        for path in resolve(&file) {
            if let Some(r) = the_hosts_binary(cfg, tool, &path, "would change") {
                return Some(r);
            }
            if let Some(p) = protected(cfg, &path) {
                return Some(refusal(
                    tool,
                    &p,
                    "a patch cannot be checked entry by entry",
                ));
            }
            let added = json!({ "content": patch::added(text) });
            if let Some(r) = startup_file_refusal(tool, &path, &added) {
                return Some(r);
            }
        }
    }
    None
}

/// What a file tool would do to the file.
enum Change {
    Whole(String),
    Replace(Vec<Edit>),
}

struct Edit {
    old: String,
    new: String,
    all: bool,
}

/// The change in every host's spelling: Write `content` (Copilot
/// `file_text`), Edit `old_string`/`new_string` (Copilot `old_str`/`new_str`,
/// OpenCode `oldString`/`newString`), MultiEdit and Cursor `edits`. `None`
/// for anything else (NotebookEdit, an unknown shape).
fn host_edits(input: &Value, payload: &Value) -> Option<Change> {
    let s = |v: &Value, keys: &[&str]| {
        keys.iter()
            .find_map(|k| v.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
    };
    if input.get("notebook_path").is_some() {
        return None;
    }
    if let Some(text) = s(input, &["content", "file_text"]) {
        return Some(Change::Whole(text));
    }
    let edit = |v: &Value| -> Option<Edit> {
        Some(Edit {
            old: s(v, &["old_string", "old_str", "oldString"])?,
            new: s(v, &["new_string", "new_str", "newString"])?,
            all: ["replace_all", "replaceAll"]
                .iter()
                .any(|k| v.get(*k).and_then(Value::as_bool) == Some(true)),
        })
    };
    if let Some(e) = edit(input) {
        return Some(Change::Replace(vec![e]));
    }
    let list = input
        .get("edits")
        .or_else(|| payload.get("edits"))
        .and_then(Value::as_array)?;
    list.iter()
        .map(edit)
        .collect::<Option<Vec<_>>>()
        .map(Change::Replace)
}

/// `text` after `edits`, in order, as the host applies them; `None` when
/// an old string is not there (the host refuses the edit).
fn apply_edits(text: &str, edits: &[Edit]) -> Option<String> {
    let mut out = text.to_owned();
    for e in edits {
        if e.old.is_empty() || !out.contains(&e.old) {
            return None;
        }
        out = if e.all {
            out.replace(&e.old, &e.new)
        } else {
            out.replacen(&e.old, &e.new, 1)
        };
    }
    Some(out)
}

/// A host file's current text: `None` when there is no such file, an error
/// when it cannot be read (capped: a host file is small, and a path to
/// `/dev/zero` must not hang the gate).
fn read_bounded(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    const CAP: u64 = 4 * 1024 * 1024;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > CAP {
        return Err(format!("larger than {CAP} bytes"));
    }
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(CAP).read_to_end(&mut buf))
        .map_err(|e| e.to_string())?;
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| "not UTF-8".to_owned())
}

/// One keryx-hooks entry as the host sees it: the handler with its event
/// and matcher, canonically serialised.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    key: String,
    shown: String,
}

/// The keryx-hooks entries in a host file: every handler whose command the
/// installer recognises as ours (`keryx-hooks run <host> <event>`), with
/// the keys above it (the event), its group's matcher and the handler
/// itself. `None` when the text cannot be read as the host reads it.
fn entries(text: &str, format: ConfigFormat) -> Option<Vec<Entry>> {
    let doc = document(text, format)?;
    let mut out = Vec::new();
    walk(&doc, &mut Vec::new(), None, &mut out);
    Some(out)
}

fn document(text: &str, format: ConfigFormat) -> Option<Value> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if body.trim().is_empty() {
        return Some(Value::Null);
    }
    match format {
        ConfigFormat::Toml => {
            let doc: toml_edit::DocumentMut = body.parse().ok()?;
            Some(crate::textfile::toml::table_json(doc.as_table()))
        }
        _ => {
            let node = crate::textfile::json::parse(body).ok()?;
            Some(crate::textfile::json::to_value(body, &node))
        }
    }
}

fn walk(v: &Value, keys: &mut Vec<String>, matcher: Option<&Value>, out: &mut Vec<Entry>) {
    match v {
        Value::Object(m) => {
            let matcher = m.get("matcher").or(matcher);
            let ours = ["command", "bash"].iter().any(|k| {
                m.get(*k).and_then(Value::as_str).is_some_and(|c| {
                    crate::hosts::shim_command::parse_shim_command(
                        c,
                        Some(crate::paths::self_exe()),
                    )
                    .is_some()
                })
            });
            if ours {
                let handler = serde_json::to_string(v).unwrap_or_default();
                let command = ["command", "bash"]
                    .iter()
                    .find_map(|k| m.get(*k).and_then(Value::as_str))
                    .unwrap_or("");
                out.push(Entry {
                    key: format!(
                        "{}|{}|{handler}",
                        keys.join("."),
                        matcher.map(Value::to_string).unwrap_or_default()
                    ),
                    shown: command.to_owned(),
                });
                return;
            }
            for (k, child) in m {
                keys.push(k.clone());
                walk(child, keys, matcher, out);
                keys.pop();
            }
        }
        Value::Array(a) => a.iter().for_each(|c| walk(c, keys, matcher, out)),
        _ => {}
    }
}

/// Whether a host that loaded `before` would fail to load `after`, read
/// the way that host reads it (`status` and `doctor` read it so too): a
/// trailing comma, a comment where the host takes none or a number out of
/// range makes a strict host skip the whole file, hooks and all, while ours
/// would still look wired.
fn host_would_not_load(
    before: &str,
    after: &str,
    format: ConfigFormat,
    reads: hosts::Reads,
) -> Option<String> {
    let load = |t: &str| hosts::loads::load_error(format, reads, t);
    if load(before).is_some() {
        return None;
    }
    load(after).map(|why| {
        format!(
            "the host would not load the file it leaves ({}), and would then run none of its hooks",
            escape(&why)
        )
    })
}

/// Environment names that, set in a host's `env` table, move what
/// keryx-hooks reads (its files, its snapshot, its home) or load code into
/// every process the host starts.
const RELOCATING_ENV: [&str; 11] = [
    "KERYX_HOME",
    "KERYX_SNAPSHOT_ROOT",
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
];

/// Settings in a host file that turn hooks (or keryx-hooks) off: Claude
/// Code's `disableAllHooks`, and `KERYX_HOOKS` set in an environment table.
fn turned_off(text: &str, format: ConfigFormat) -> Vec<String> {
    let mut out = Vec::new();
    let Some(doc) = document(text, format) else {
        return out;
    };
    fn scan(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    if k == "disableAllHooks" && child.as_bool() == Some(true) {
                        out.push("turn every hook off (`disableAllHooks`)".to_owned());
                    } else if k == "KERYX_HOOKS" && child.as_str() != Some("on") {
                        out.push("set `KERYX_HOOKS` to turn keryx-hooks off".to_owned());
                    } else if k == "hooksConfig" {
                        // Gemini CLI's switches for its hooks.
                        if child.get("enabled").and_then(Value::as_bool) == Some(false) {
                            out.push(
                                "turn the host's hooks off (`hooksConfig.enabled`)".to_owned(),
                            );
                        }
                        if let Some(Value::Array(names)) = child.get("disabled") {
                            for n in names {
                                out.push(format!(
                                    "turn off the host's hook `{}` (`hooksConfig.disabled`)",
                                    escape(&n.to_string())
                                ));
                            }
                        }
                        scan(child, out);
                    } else if k == "env"
                        && let Value::Object(vars) = child
                    {
                        for name in vars.keys().filter(|n| RELOCATING_ENV.contains(&n.as_str())) {
                            out.push(format!(
                                "set `{}` for every process the host starts, which moves what keryx-hooks reads or loads code into it",
                                escape(name)
                            ));
                        }
                        scan(child, out);
                    } else {
                        scan(child, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|c| scan(c, out)),
            _ => {}
        }
    }
    scan(&doc, &mut out);
    out
}

mod patch;

#[cfg(test)]
mod tests;
