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
use crate::builtins::shell::{Redirect, RedirectOp, Script};
use crate::builtins::{script_file, self_protect};
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
    /// Inline interpreter code and `sh -c` bodies it runs, and the text
    /// of the local script file it runs as interpreter code.
    pub inline: Vec<String>,
    /// The strings its inline code builds by joining literal fragments
    /// split inside a word (`"~/.s"+"sh/id_rsa"`, `"GITHUB_"+"TOKEN"`).
    pub assembled: Vec<String>,
    /// The local script file it runs (`bash x.sh`, `python3 x.py`,
    /// `./x.sh`), as written.
    pub script: Option<String>,
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
    /// The files the agent wrote earlier in this session, resolved (the
    /// session's record; empty where there is none).
    pub agent_written: Vec<PathBuf>,
    commands: OnceCell<Vec<Simple>>,
    /// The text of the shell scripts the call runs from files.
    script_texts: OnceCell<Vec<String>>,
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
            agent_written: Vec::new(),
            commands: OnceCell::new(),
            script_texts: OnceCell::new(),
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

    /// Every simple command the call's shell lines run, those of the
    /// local shell scripts they run included.
    pub fn commands(&self) -> &[Simple] {
        self.commands.get_or_init(|| {
            let mut out = Vec::new();
            let mut scripts = Vec::new();
            let at = Place {
                cwd: self.cwd.as_deref(),
                home: self.home(),
            };
            for line in self.command_lines() {
                flatten(line, 0, &at, &mut out, &mut scripts);
            }
            let _ = self.script_texts.set(scripts);
            out
        })
    }

    /// A patch the call applies (Codex's `apply_patch`, reported as an
    /// edit whose input is the patch envelope).
    fn patch(&self) -> Option<&'a str> {
        if !matches!(self.tool, Some("Edit" | "Write" | "MultiEdit")) {
            return None;
        }
        self.input_str("command")
            .or_else(|| self.input_str("patch"))
            .or_else(|| self.input_str("input"))
            .or_else(|| self.tool_input?.as_str())
            .filter(|t| self_protect::patch_files(t).is_some())
    }

    /// The raw text a `text` condition reads: the command lines, the text
    /// of the shell scripts they run, and the content the call writes.
    pub fn texts(&self) -> Vec<&str> {
        let mut out = self.command_lines();
        if !out.is_empty() {
            self.commands();
            out.extend(
                self.script_texts
                    .get()
                    .into_iter()
                    .flatten()
                    .map(String::as_str),
            );
        }
        for k in ["content", "new_string", "new_source"] {
            out.extend(self.input_str(k));
        }
        if let Some(p) = self.patch() {
            out.push(p);
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
            if let Some(files) = self.patch().and_then(self_protect::patch_files) {
                for f in files {
                    self.reach(&f, Access::Write, &mut out);
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
                for code in &c.inline {
                    for f in inline_writes(code) {
                        self.reach(f, Access::Write, &mut out);
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

/// Where a call's relative paths are resolved from.
struct Place<'p> {
    cwd: Option<&'p Path>,
    home: Option<&'p Path>,
}

/// Reads `src` into simple commands, nested scripts included: `sh -c`
/// bodies, and the local script files a command runs (a shell script's
/// commands are read like the command line's, an interpreter's code like
/// `python -c` code). `scripts` gathers the shell scripts' text.
fn flatten(src: &str, depth: usize, at: &Place, out: &mut Vec<Simple>, scripts: &mut Vec<String>) {
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
        let script_file = script_file::script_of(argv).map(|(f, _)| f.to_owned());
        let loaded = (depth < MAX_NESTING)
            .then(|| script_file::load(argv, at.cwd, at.home))
            .flatten();
        let mut shell_text = None;
        match loaded {
            Some((script_file::Lang::Code, text)) => inline.push(text),
            Some((script_file::Lang::Shell, text)) => shell_text = Some(text),
            None => {}
        }
        let assembled = inline.iter().flat_map(|c| assembled(c)).collect();
        out.push(Simple {
            argv: argv.to_vec(),
            redirects: cmd.redirects.clone(),
            piped_into,
            inline,
            assembled,
            script: script_file,
        });
        if let Some(inner) = nested
            && depth < MAX_NESTING
        {
            flatten(&inner, depth + 1, at, out, scripts);
        }
        if let Some(text) = shell_text {
            flatten(&text, depth + 1, at, out, scripts);
            scripts.push(text);
        }
    }
}

/// The strings `code` builds by joining two or more string literals
/// (`"a"+"b"`, `'a' . 'b'`, Python's `"a" "b"`) where a join falls inside
/// a word (a letter, digit or `_` on both sides of it): the way a payload
/// keeps `.ssh`, a token's name or a host out of sight of a pattern. A
/// join at a word's edge (`"Hello, " + "world"`, `base + "/" + "v1"`) is
/// ordinary and not reported.
pub fn assembled(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // Reads the literal opening at `i`: its text and the index after it.
    let literal = |i: usize| -> Option<(String, usize)> {
        let q = *b.get(i)?;
        if q != b'"' && q != b'\'' {
            return None;
        }
        let mut j = i + 1;
        while j < b.len() && b[j] != q && b[j] != b'\n' {
            j += if b[j] == b'\\' { 2 } else { 1 };
        }
        (j < b.len() && b[j] == q).then(|| (code[i + 1..j].to_owned(), j + 1))
    };
    let skip_ws = |mut j: usize| {
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        j
    };
    while i < b.len() {
        let Some((first, mut end)) = literal(i) else {
            i += 1;
            continue;
        };
        let mut joined = first;
        let mut inside_word = false;
        loop {
            let mut j = skip_ws(end);
            if matches!(b.get(j), Some(b'+' | b'.')) && b.get(j + 1) != Some(&b'=') {
                j = skip_ws(j + 1);
            } else if j == end {
                break; // `"a""b"` without a space is not Python's join
            }
            let Some((next, after)) = literal(j) else {
                break;
            };
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if word(joined.chars().last()) && word(next.chars().next()) {
                inside_word = true;
            }
            joined.push_str(&next);
            end = after;
        }
        if inside_word && joined.len() <= 4096 {
            out.push(joined);
        }
        i = end;
    }
    out
}

/// The files inline code opens for writing: `open("x", "w")`,
/// `writeFileSync("x", …)`, `File.write("x", …)`, perl `open(F, ">x")`.
fn inline_writes(code: &str) -> Vec<&str> {
    static WRITES: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r#"(?:\bopen\s*\(\s*["']([^"'\n]+)["']\s*,\s*["'][^"']*[wax]|\b(?:writeFileSync|writeFile|appendFileSync|appendFile|createWriteStream)\s*\(\s*["']([^"'\n]+)["']|\bFile\.(?:write|open)\s*\(\s*["']([^"'\n]+)["']\s*(?:,\s*["'][wa])?|\bopen\s*\(?\s*\w+\s*,\s*["']\+?>>?\s*([^"'\n]+)["']|Path\s*\(\s*["']([^"'\n]+)["']\s*\)\s*\.write_(?:text|bytes))"#,
        )
        .expect("a valid pattern")
    });
    WRITES
        .captures_iter(code)
        .filter_map(|c| (1..=5).find_map(|i| c.get(i)).map(|m| m.as_str().trim()))
        .filter(|p| !p.is_empty())
        .collect()
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
