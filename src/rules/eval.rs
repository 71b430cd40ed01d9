//! Whether a compiled condition holds for a call, and what part of the
//! call it matched (for the reason, the record and `test --rule`). Every
//! pattern was compiled at load; the `regex` crate matches in linear time.

use std::path::Path;
use std::sync::LazyLock;

use crate::builtins::ctx_guard::secret_path;
use crate::builtins::self_protect::keryx_places;
use crate::config::rules::{
    CommandCond, Cond, Glob, McpCond, PathCond, Pattern, Reading, UrlCond, path_glob,
};
use crate::rules::call::{Call, Reached, Simple, operands, short, writes};
use crate::secrets::{Target, builtin_rules};

/// `Some(what matched)` when `cond` holds for `call`.
pub fn matches(cond: &Cond, call: &Call) -> Option<String> {
    match cond {
        Cond::All(all) => {
            let mut parts = Vec::new();
            for c in all {
                let m = matches(c, call)?;
                if !m.is_empty() {
                    parts.push(m);
                }
            }
            Some(parts.join(", "))
        }
        Cond::Any(any) => any.iter().find_map(|c| matches(c, call)),
        Cond::Not(c) => match matches(c, call) {
            Some(_) => None,
            None => Some(String::new()),
        },
        Cond::Command(c) => call
            .commands()
            .iter()
            .find(|s| command_holds(c, s, call))
            .map(|s| format!("command `{}`", s.shown())),
        Cond::Path(p) => call
            .paths()
            .iter()
            .find(|r| p.access.covers(r.access) && path_holds(p, r, call))
            .map(|r| format!("path `{}`", short(&r.written))),
        Cond::Url(u) => call
            .urls()
            .iter()
            .find(|x| url_holds(u, x))
            .map(|x| format!("url `{}`", short(&x.text))),
        Cond::Mcp(m) => mcp_holds(m, call),
        Cond::Prompt(res) => {
            let p = call.prompt?;
            first_match(res, p).map(|m| format!("prompt `{}`", short(m)))
        }
        Cond::Text(res) => call
            .texts()
            .into_iter()
            .find_map(|t| first_match(res, t))
            .map(|m| format!("text `{}`", short(m))),
    }
}

fn first_match<'t>(res: &[Pattern], text: &'t str) -> Option<&'t str> {
    res.iter().find_map(|r| r.find(text)).map(|m| m.as_str())
}

/// `python3.11` is also `python3` and `python`.
pub(crate) fn program_is(name: &str, wanted: &str) -> bool {
    if name == wanted {
        return true;
    }
    let bare = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if bare == wanted {
        return true;
    }
    // Drop one trailing `.N` at a time: python3.11 → python3.
    let mut n = name;
    while let Some((head, tail)) = n.rsplit_once('.') {
        if tail.is_empty() || !tail.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        if head == wanted {
            return true;
        }
        n = head;
    }
    false
}

/// Options of a program that take a value before its subcommand.
fn global_valued(program: &str) -> &'static [&'static str] {
    match program {
        "git" => &[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--exec-path",
        ],
        "docker" | "podman" => &["-H", "--host", "--context", "-c", "--config", "-l"],
        "kubectl" => &["-n", "--namespace", "--context", "--kubeconfig", "-s"],
        "npm" | "pnpm" | "yarn" => &["--prefix", "-C", "--dir"],
        "cargo" => &["-C", "--config", "-Z"],
        _ => &[],
    }
}

/// The first operand after the program's global options.
pub fn subcommand(argv: &[String]) -> Option<&str> {
    let program = argv
        .first()
        .map_or("", |p| crate::builtins::ctx_guard::basename(p));
    let valued = global_valued(program);
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        if a == "--" {
            return argv.get(i + 1).map(String::as_str);
        }
        if !a.starts_with('-') || a == "-" {
            return Some(a);
        }
        i += if valued.contains(&a.as_str()) { 2 } else { 1 };
    }
    None
}

/// Whether `flag` (as a rule writes it) is given in `argv`, in any
/// spelling: `--force`, `--force=…`; `-f` also inside `-fd`.
fn has_flag(argv: &[String], flag: &str) -> bool {
    for a in argv.iter().skip(1) {
        if a == "--" {
            break;
        }
        if a == flag {
            return true;
        }
        if flag.starts_with("--") {
            if a.strip_prefix(flag).is_some_and(|r| r.starts_with('=')) {
                return true;
            }
        } else if let Some(letter) = flag.strip_prefix('-').filter(|l| l.chars().count() == 1)
            && a.starts_with('-')
            && !a.starts_with("--")
            && a[1..].chars().all(|c| c.is_ascii_alphabetic())
            && a[1..].contains(letter)
        {
            return true;
        }
    }
    false
}

fn command_holds(c: &CommandCond, s: &Simple, call: &Call) -> bool {
    let needs_program = !c.program.is_empty()
        || !c.subcommand.is_empty()
        || !c.flag.is_empty()
        || !c.arg.is_empty()
        || c.script.is_some();
    if needs_program && s.argv.is_empty() {
        return false;
    }
    let name = s.program().unwrap_or("");
    (c.program.is_empty() || c.program.iter().any(|p| program_is(name, p)))
        && (c.subcommand.is_empty()
            || subcommand(&s.argv).is_some_and(|sub| c.subcommand.iter().any(|w| w == sub)))
        && (c.flag.is_empty() || c.flag.iter().any(|f| has_flag(&s.argv, f)))
        && (c.arg.is_empty()
            || operands(&s.argv)
                .iter()
                .any(|op| c.arg.iter().any(|r| r.is_match(op))))
        && (c.piped_into.is_empty()
            || s.piped_into
                .iter()
                .any(|p| c.piped_into.iter().any(|w| program_is(p, w))))
        && c.redirect_to.as_ref().is_none_or(|p| {
            s.redirects.iter().filter(|r| writes(r)).any(|r| {
                call.resolve(&r.target).is_some_and(|resolved| {
                    let reached =
                        Reached::new(&r.target, resolved, crate::config::rules::Access::Write);
                    path_holds(p, &reached, call)
                })
            })
        })
        && (c.inline_code.is_empty()
            || s.inline
                .iter()
                .any(|code| c.inline_code.iter().any(|r| r.is_match(code))))
        && (c.assembled.is_empty()
            || s.assembled
                .iter()
                .any(|text| c.assembled.iter().any(|r| r.is_match(text))))
        && c.script.as_ref().is_none_or(|p| {
            s.script.as_deref().is_some_and(|f| {
                call.resolve(f).is_some_and(|resolved| {
                    let reached = Reached::new(f, resolved, crate::config::rules::Access::Read);
                    path_holds(p, &reached, call)
                })
            })
        })
}

/// The ways a path is compared: as resolved, home-relative (`~/…`), and
/// where a symlink leads (one `realpath`, once per path).
fn spellings<'r>(r: &'r Reached, home: Option<&Path>) -> &'r [String] {
    r.forms.get_or_init(|| forms(r, home))
}

fn forms(r: &Reached, home: Option<&Path>) -> Vec<String> {
    let mut out = vec![r.resolved.to_string_lossy().into_owned()];
    if let Ok(real) = std::fs::canonicalize(&r.resolved)
        && real != r.resolved
    {
        out.push(real.to_string_lossy().into_owned());
    }
    if let Some(h) = home.filter(|h| h.as_os_str().len() > 1) {
        let tilde: Vec<String> = out
            .iter()
            .filter_map(|p| {
                Path::new(p)
                    .strip_prefix(h)
                    .ok()
                    .map(|rest| format!("~/{}", rest.display()))
            })
            .collect();
        out.extend(tilde);
    }
    out
}

fn path_holds(p: &PathCond, r: &Reached, call: &Call) -> bool {
    let forms = spellings(r, call.home());
    let glob_ok = p.globs.is_empty()
        || forms
            .iter()
            .any(|f| p.globs.iter().any(|g| g.re.is_match(f)));
    let set_ok = p
        .set
        .as_deref()
        .is_none_or(|set| forms.iter().any(|f| in_set(set, f, call)));
    glob_ok && set_ok
}

/// The sets that are plain globs. A set's directory covers what is in it,
/// not the directory itself (`mkdir -p .github/workflows` writes no
/// workflow).
static SET_GLOBS: LazyLock<Vec<(&'static str, Vec<Glob>)>> = LazyLock::new(|| {
    let sets: &[(&str, &[&str])] = &[
        (
            "shell-startup",
            &[
                "~/.bashrc",
                "~/.zshrc",
                "~/.profile",
                "~/.bash_profile",
                "~/.bash_login",
                "~/.zprofile",
                "~/.zshenv",
                "~/.zlogin",
                "~/.config/fish/config.fish",
                "/etc/profile*",
                "/etc/bash.bashrc",
                "/etc/zshrc",
                "/etc/zsh/",
            ],
        ),
        ("git-hooks", &[".git/hooks/*"]),
        (
            "launch-agents",
            &[
                "~/Library/LaunchAgents/*",
                "/Library/LaunchAgents/*",
                "/Library/LaunchDaemons/*",
            ],
        ),
        (
            "cron",
            &["/etc/cron*", "/var/spool/cron/*", "/etc/anacrontab"],
        ),
        (
            "systemd-units",
            &[
                "~/.config/systemd/*",
                "/etc/systemd/*",
                "/lib/systemd/system/*",
            ],
        ),
        (
            "ci-workflows",
            &[
                ".github/workflows/*",
                ".gitlab-ci.yml",
                ".circleci/*",
                "azure-pipelines.yml",
                "Jenkinsfile",
            ],
        ),
    ];
    sets.iter()
        .map(|(name, globs)| {
            let compiled = globs
                .iter()
                .map(|g| path_glob(g, Reading::CHECKED).expect("a valid built-in glob"))
                .collect();
            (*name, compiled)
        })
        .collect()
});

fn in_set(set: &str, path: &str, call: &Call) -> bool {
    match set {
        // An ssh `config` names hosts, not secrets.
        "credentials" => {
            secret_path(path, call.home()).is_some() && !path.ends_with("/.ssh/config")
        }
        "keryx" => keryx_places(&call.guard)
            .iter()
            .any(|(_, place)| Path::new(path).starts_with(place)),
        "agent-written" => call.agent_written.iter().any(|w| Path::new(path) == w),
        _ => SET_GLOBS
            .iter()
            .find(|(name, _)| *name == set)
            .is_some_and(|(_, globs)| globs.iter().any(|g| g.re.is_match(path))),
    }
}

fn url_holds(u: &UrlCond, x: &crate::rules::call::Url) -> bool {
    (u.host.is_empty() || u.host.iter().any(|g| g.re.is_match(&x.host)))
        && (u.scheme.is_empty() || u.scheme.contains(&x.scheme))
        && u.carries_secret.is_none_or(|want| {
            let found =
                token_shaped(&x.rest) || !builtin_rules().scan(&x.rest, Target::Input).is_empty();
            found == want
        })
}

/// A value shaped like a known service's token: its prefix and a long
/// tail. The scanner wants a token's exact length and checksum, which
/// keeps it quiet on text; in a URL's query, user part or path, a
/// truncated or made-up token (`?t=ghp_…` a few characters short) is sent
/// for the same reason a real one would be.
pub fn token_shaped(text: &str) -> bool {
    static TOKEN: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(^|[^A-Za-z0-9])((gh[pousr]_[A-Za-z0-9]{20,})|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|sk-(ant-|proj-)?[A-Za-z0-9_-]{32,}|sk_live_[A-Za-z0-9]{16,}|AKIA[0-9A-Z]{16}|npm_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,}|AIza[0-9A-Za-z_-]{30,}|pypi-[A-Za-z0-9_-]{40,})",
        )
        .expect("a valid pattern")
    });
    TOKEN.is_match(text)
}

fn mcp_holds(m: &McpCond, call: &Call) -> Option<String> {
    let (server, tool) = call.mcp_names()?;
    if !m.server.is_empty() && !m.server.iter().any(|g| g.re.is_match(server)) {
        return None;
    }
    if !m.tool.is_empty() && !m.tool.iter().any(|g| g.re.is_match(tool)) {
        return None;
    }
    let shown = format!("mcp `{}`", short(&format!("{server}/{tool}")));
    if m.arg.is_empty() {
        return Some(shown);
    }
    call.mcp_strings()
        .into_iter()
        .find_map(|s| first_match(&m.arg, s))
        .map(|hit| format!("{shown} argument `{}`", short(hit)))
}
