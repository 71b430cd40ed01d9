//! One call as rules see it: its shell commands (every simple command,
//! through wrappers, `sh -c`, `eval`, substitutions and pipelines, read as
//! ctx-guard reads them), the paths and URLs it reaches, its MCP arguments
//! and its text. Each is worked out at most once, and only when a rule
//! asks for it.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::builtins::ctx_guard::{
    CtxGuardConfig, basename, path_like, skip_options, unwrap_wrappers,
};
use crate::builtins::self_protect;
use crate::builtins::shell::{Redirect, RedirectOp, Script};
use crate::config::rules::Access;
use crate::events::Event;
use crate::runtime::types::EventInput;

/// Where the home and keryx-hooks' own places are for an event resolved
/// at `loc`, as ctx-guard knows them; unlike the guard's own config this
/// reads no settings file.
pub fn places(loc: &crate::settings::Here) -> CtxGuardConfig {
    CtxGuardConfig {
        max_cat_bytes: crate::builtins::ctx_guard::DEFAULT_MAX_CAT_BYTES,
        home: Some(loc.home.clone()),
        keryx_home: Some(loc.keryx_home.clone()),
        data_dir: Some(loc.data_dir.clone()),
        state_dir: Some(loc.state_dir.clone()),
        snapshot_root: Some(loc.snapshot_root.clone()),
        binary: None,
    }
}

/// Scripts nested deeper than this (`sh -c "sh -c '…'"`) are not read.
const MAX_NESTING: usize = 4;

/// Keys of an MCP tool's arguments that carry a shell command line (as
/// ctx-guard reads them).
const SHELL_ARGS: [&str; 5] = ["command", "cmd", "script", "shell", "commandLine"];

/// One simple command, its wrappers taken off.
#[derive(Debug, Clone, Default)]
pub struct Simple {
    pub argv: Vec<String>,
    pub redirects: Vec<Redirect>,
    /// The programs its output flows into through `|`.
    pub piped_into: Vec<String>,
    /// Inline interpreter code and `sh -c` bodies it runs.
    pub inline: Vec<String>,
}

impl Simple {
    pub fn program(&self) -> Option<&str> {
        self.argv.first().map(|p| basename(p))
    }

    /// The command for a message: short and escaped.
    pub fn shown(&self) -> String {
        short(&crate::builtins::ctx_guard::joined_words(&self.argv))
    }
}

/// A path the call reaches, as written and as it resolves.
#[derive(Debug, Clone)]
pub struct Reached {
    pub written: String,
    pub resolved: PathBuf,
    pub access: Access,
    /// The spellings it is compared in, worked out once.
    pub(crate) forms: OnceCell<Vec<String>>,
}

impl Reached {
    pub fn new(written: &str, resolved: PathBuf, access: Access) -> Reached {
        Reached {
            written: written.to_owned(),
            resolved,
            access,
            forms: OnceCell::new(),
        }
    }
}

/// A URL (or a bare host a network tool is pointed at).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub text: String,
    pub scheme: String,
    pub host: String,
    /// Userinfo, path and query: where a secret could ride along.
    pub rest: String,
}

/// The call, and what rules look at in it.
pub struct Call<'a> {
    pub event: Event,
    pub tool: Option<&'a str>,
    pub tool_input: Option<&'a Value>,
    pub prompt: Option<&'a str>,
    pub cwd: Option<PathBuf>,
    pub guard: CtxGuardConfig,
    commands: OnceCell<Vec<Simple>>,
    paths: OnceCell<Vec<Reached>>,
    urls: OnceCell<Vec<Url>>,
}

impl<'a> Call<'a> {
    /// The call `input` stands for; `guard` says where the home and
    /// keryx-hooks' own places are.
    pub fn new(input: &'a EventInput, guard: CtxGuardConfig) -> Call<'a> {
        Call {
            event: input.event,
            tool: input.tool_name(),
            tool_input: input.tool_input(),
            prompt: input.str_field("prompt"),
            cwd: input.cwd.clone(),
            guard,
            commands: OnceCell::new(),
            paths: OnceCell::new(),
            urls: OnceCell::new(),
        }
    }

    pub fn home(&self) -> Option<&Path> {
        self.guard.home.as_deref()
    }

    fn input_str(&self, key: &str) -> Option<&'a str> {
        self.tool_input?.get(key)?.as_str()
    }

    pub fn is_mcp(&self) -> bool {
        self.tool.is_some_and(|t| t.starts_with("mcp__"))
    }

    /// The shell command lines of the call: a `Bash` command, or an MCP
    /// argument that carries one.
    pub fn command_lines(&self) -> Vec<&'a str> {
        if self.tool == Some("Bash") {
            return self.input_str("command").into_iter().collect();
        }
        if self.is_mcp() {
            return SHELL_ARGS
                .iter()
                .filter_map(|k| self.input_str(k))
                .collect();
        }
        Vec::new()
    }

    /// Every simple command the call's shell lines run.
    pub fn commands(&self) -> &[Simple] {
        self.commands.get_or_init(|| {
            let mut out = Vec::new();
            for line in self.command_lines() {
                flatten(line, 0, &mut out);
            }
            out
        })
    }

    /// The raw text a `text` condition reads: the command lines and the
    /// content the call writes.
    pub fn texts(&self) -> Vec<&'a str> {
        let mut out = self.command_lines();
        for k in ["content", "new_string", "new_source"] {
            out.extend(self.input_str(k));
        }
        if let Some(edits) = self
            .tool_input
            .and_then(|t| t.get("edits"))
            .and_then(Value::as_array)
        {
            out.extend(
                edits
                    .iter()
                    .filter_map(|e| e.get("new_string").and_then(Value::as_str)),
            );
        }
        out
    }

    /// `mcp__server__tool` split into its two names.
    pub fn mcp_names(&self) -> Option<(&'a str, &'a str)> {
        self.tool?.strip_prefix("mcp__")?.split_once("__")
    }

    /// Every string argument of an MCP call, at any depth.
    pub fn mcp_strings(&self) -> Vec<&'a str> {
        let mut out = Vec::new();
        if self.is_mcp()
            && let Some(v) = self.tool_input
        {
            strings(v, &mut out);
        }
        out
    }

    /// Every path the call reaches.
    pub fn paths(&self) -> &[Reached] {
        self.paths.get_or_init(|| {
            let mut out = Vec::new();
            let file_access = match self.tool {
                Some("Write" | "Edit" | "MultiEdit" | "NotebookEdit") => Access::Write,
                _ => Access::Read,
            };
            for k in ["file_path", "path", "notebook_path", "filePath"] {
                if let Some(p) = self.input_str(k) {
                    self.reach(p, file_access, &mut out);
                }
            }
            for c in self.commands() {
                let name = c.program().unwrap_or("");
                let operands = operands(&c.argv);
                let last = operands.len().saturating_sub(1);
                for (i, op) in operands.iter().enumerate() {
                    if path_like(op) {
                        self.reach(op, operand_access(name, i == last), &mut out);
                    }
                }
                for r in &c.redirects {
                    if let Some(how) = redirect_access(r.op) {
                        self.reach(&r.target, how, &mut out);
                    }
                }
            }
            for s in self.mcp_strings() {
                if path_like(s) {
                    self.reach(s, Access::Any, &mut out);
                }
            }
            out
        })
    }

    fn reach(&self, written: &str, access: Access, out: &mut Vec<Reached>) {
        let Some(resolved) = self.resolve(written) else {
            return;
        };
        out.push(Reached::new(written, resolved, access));
    }

    /// `written` as an absolute path: `~` is the home, a relative path is
    /// taken from the call's cwd. `None` when it cannot be placed.
    pub fn resolve(&self, written: &str) -> Option<PathBuf> {
        let p = if written == "~" {
            self.home()?.to_path_buf()
        } else if let Some(rest) = written.strip_prefix("~/") {
            self.home()?.join(rest)
        } else if written.starts_with('/') {
            PathBuf::from(written)
        } else {
            self.cwd.as_deref()?.join(written)
        };
        Some(crate::paths::absolute(&p))
    }

    /// Every URL the call reaches: in command words, a fetch tool's `url`,
    /// MCP arguments.
    pub fn urls(&self) -> &[Url] {
        self.urls.get_or_init(|| {
            let mut out = Vec::new();
            let mut push = |u: Option<Url>| {
                if let Some(u) = u
                    && !out.contains(&u)
                {
                    out.push(u);
                }
            };
            for c in self.commands() {
                let network = c.program().is_some_and(is_network_tool);
                for w in c.argv.iter().skip(1) {
                    for u in find_urls(w) {
                        push(Some(u));
                    }
                    if network && !w.starts_with('-') && !w.contains("://") {
                        push(bare_host(w));
                    }
                }
            }
            if let Some(u) = self.input_str("url") {
                for u in find_urls(u) {
                    push(Some(u));
                }
            }
            for s in self.mcp_strings() {
                for u in find_urls(s) {
                    push(Some(u));
                }
            }
            out
        })
    }
}

fn strings<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// Reads `src` into simple commands, nested scripts included.
fn flatten(src: &str, depth: usize, out: &mut Vec<Simple>) {
    let script = Script::parse(src);
    for (i, cmd) in script.commands.iter().enumerate() {
        let argv = unwrap_all(&cmd.words);
        let name = argv.first().map_or("", |p| basename(p));
        let piped_into = script
            .downstream(i)
            .filter_map(|d| {
                let argv = unwrap_all(&d.words);
                let name = basename(argv.first()?);
                // A shell or interpreter counts when it reads its program
                // from the pipe (`| sh`, `| python3 -`), not when it is
                // given one (`| python3 -m json.tool`).
                (!is_interpreter(name) || reads_program_from_stdin(argv)).then(|| name.to_owned())
            })
            .collect();
        // `env -S 'cmd'` leaves nothing after the wrapper: read its words.
        let nested = self_protect::nested(name, argv).or_else(|| {
            cmd.words
                .first()
                .and_then(|first| self_protect::nested(basename(first), &cmd.words))
        });
        let mut inline: Vec<String> = nested.iter().cloned().collect();
        if !argv.is_empty() {
            inline.extend(self_protect::interpreter_code(name, argv));
        }
        out.push(Simple {
            argv: argv.to_vec(),
            redirects: cmd.redirects.clone(),
            piped_into,
            inline,
        });
        if let Some(inner) = nested
            && depth < MAX_NESTING
        {
            flatten(&inner, depth + 1, out);
        }
    }
}

/// The wrappers ctx-guard strips (`sudo`, `env`, `timeout 5`, …), and
/// `xargs` with its options, until a real program is left. A wrapper with
/// nothing after it is the program itself (`env | curl …` prints the
/// environment).
fn unwrap_all(words: &[String]) -> &[String] {
    let mut w = unwrap_wrappers(words);
    if w.is_empty() {
        return words;
    }
    for _ in 0..4 {
        if w.first().is_some_and(|p| basename(p) == "xargs") {
            let valued = [
                "-I", "-i", "-n", "-P", "-L", "-l", "-d", "-E", "-e", "-s", "-a",
            ];
            let inner = unwrap_wrappers(skip_options(&w[1..], &valued, false));
            if inner.is_empty() {
                break;
            }
            w = inner;
        } else {
            break;
        }
    }
    w
}

fn is_interpreter(name: &str) -> bool {
    let bare = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        bare,
        "sh" | "bash"
            | "zsh"
            | "dash"
            | "ksh"
            | "mksh"
            | "ash"
            | "fish"
            | "busybox"
            | "python"
            | "pypy"
            | "perl"
            | "ruby"
            | "node"
            | "nodejs"
            | "php"
            | "deno"
            | "bun"
            | "lua"
            | "luajit"
            | "tclsh"
            | "pwsh"
            | "powershell"
            | "osascript"
    )
}

/// An interpreter given no program (no script operand other than `-`, no
/// `-c`, `-e`, `-m`, `-r`, `--eval`): it runs what comes on its input.
fn reads_program_from_stdin(argv: &[String]) -> bool {
    for a in argv.iter().skip(1) {
        match a.as_str() {
            "-" | "-s" | "--" => return true,
            "-c" | "-e" | "-E" | "-m" | "-r" | "-p" | "--eval" | "--print" | "-Command"
            | "-File" => return false,
            a if a.starts_with("--") => {}
            // A short cluster ending in a program flag: `-lc`, `-pe`.
            a if a.starts_with('-') && a.len() > 1 => {
                if a.ends_with(['c', 'e', 'm']) {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// The words after the program that are not options.
pub fn operands(argv: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut only = false;
    for a in argv.iter().skip(1) {
        if !only && a == "--" {
            only = true;
        } else if only || !a.starts_with('-') {
            out.push(a.as_str());
        }
    }
    out
}

/// How a command reaches a path operand: the programs that change what
/// they are given write it (for a copy, only its last operand).
fn operand_access(program: &str, last: bool) -> Access {
    match program {
        "rm" | "rmdir" | "unlink" | "shred" | "truncate" | "touch" | "tee" | "chmod" | "chown"
        | "chgrp" | "mkdir" | "sed" | "perl" => Access::Write,
        "cp" | "mv" | "ln" | "install" | "rsync" | "scp" if last => Access::Write,
        "cp" | "mv" | "ln" | "install" | "rsync" | "scp" => Access::Read,
        _ => Access::Read,
    }
}

fn redirect_access(op: RedirectOp) -> Option<Access> {
    match op {
        RedirectOp::Write | RedirectOp::Append | RedirectOp::WriteBoth | RedirectOp::AppendBoth => {
            Some(Access::Write)
        }
        RedirectOp::ReadWrite => Some(Access::Any),
        RedirectOp::Read => Some(Access::Read),
        RedirectOp::DupOut | RedirectOp::DupIn | RedirectOp::HereDoc | RedirectOp::HereString => {
            None
        }
    }
}

/// Whether `r` writes a file (`>`, `>>`, `&>`, `<>`).
pub fn writes(r: &Redirect) -> bool {
    matches!(redirect_access(r.op), Some(Access::Write | Access::Any))
}

fn is_network_tool(p: &str) -> bool {
    matches!(
        p,
        "curl"
            | "wget"
            | "http"
            | "https"
            | "xh"
            | "nc"
            | "ncat"
            | "netcat"
            | "telnet"
            | "ssh"
            | "scp"
            | "sftp"
            | "ftp"
            | "rsync"
            | "socat"
    )
}

static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b([a-z][a-z0-9+.-]{0,15})://([^\s'"<>`]+)"#).expect("a valid pattern")
});

fn find_urls(text: &str) -> Vec<Url> {
    URL.captures_iter(text)
        .filter_map(|c| {
            let scheme = c.get(1)?.as_str().to_ascii_lowercase();
            let after = c.get(2)?.as_str();
            let (authority, rest_path) = match after.find(['/', '?', '#']) {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, ""),
            };
            let (userinfo, hostport) = match authority.rsplit_once('@') {
                Some((u, h)) => (u, h),
                None => ("", authority),
            };
            let host = host_of(hostport);
            (!host.is_empty()).then(|| Url {
                text: c.get(0).map_or("", |m| m.as_str()).to_owned(),
                scheme,
                host,
                rest: format!("{userinfo} {rest_path}"),
            })
        })
        .collect()
}

/// The host of `host[:port]` or `[v6]:port`, lower-case.
fn host_of(hostport: &str) -> String {
    let h = if let Some(v6) = hostport.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        hostport.split(':').next().unwrap_or("")
    };
    h.trim_end_matches('.').to_ascii_lowercase()
}

/// `example.com/x`, `user@host`, `10.0.0.1:8080`: a network tool's operand
/// that names a host without a scheme.
fn bare_host(w: &str) -> Option<Url> {
    let (userinfo, rest) = match w.split_once('@') {
        Some((u, r)) => (u, r),
        None => ("", w),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    // `host:path` (scp) as well as `host:port`.
    let host = host_of(authority);
    let dotted = host.contains('.')
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && !host.ends_with(".sh")
        && !host.starts_with('.');
    (dotted || host == "localhost").then(|| Url {
        text: w.to_owned(),
        scheme: String::new(),
        host,
        rest: format!("{userinfo} {path}"),
    })
}

/// Text for a message: escaped and at most 80 characters.
pub fn short(s: &str) -> String {
    const MAX: usize = 80;
    let s = crate::escape::escape(s);
    if s.chars().count() <= MAX {
        return s;
    }
    let kept: String = s.chars().take(MAX - 1).collect();
    format!("{kept}…")
}
