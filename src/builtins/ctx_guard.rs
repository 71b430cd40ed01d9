//! The body of `keryx.ctx-guard`: a context guard for Bash and the host's
//! Read/Grep-like tools. It parses the command line (`shell.rs`) and denies
//! three things only: pouring a secret file or keychain entry into the
//! model's context, flooding the context (an unbounded recursive search from
//! `/` or `$HOME`, `cat` of a huge file), and disarming keryx-hooks itself
//! (`self_protect.rs`: changing trust or enforcement, writing what decides
//! it). Every reason names a bounded alternative. It is deliberately
//! conservative: a command it cannot read with confidence is allowed (unless
//! it reaches for keryx-hooks), and a corpus of ordinary commands in the
//! tests must all pass.

pub use crate::settings::DEFAULT_MAX_CAT_BYTES;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use super::ports::Verdict;
use super::self_protect;
use super::shell::{Command, Script};
use crate::escape::escape;

/// `bash -c` inside `bash -c` … stops being ordinary long before this.
const MAX_NESTING: usize = 4;

/// What the guard needs from its surroundings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtxGuardConfig {
    pub max_cat_bytes: u64,
    /// The user's home, so `/home/me/.ssh/id_rsa` and `~/.ssh/id_rsa` are
    /// the same path, and `find ~` is recognised.
    pub home: Option<PathBuf>,
    /// What decides enforcement, which the agent may not write: the user
    /// layer (`hooks.json`, `runtime.toml`) here, the trust store in
    /// `data_dir`, the installed snapshots and the state directory.
    pub keryx_home: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub snapshot_root: Option<PathBuf>,
    /// The keryx-hooks binary the hosts run (this one): replacing or
    /// removing it leaves every host hook failing, which hosts let pass.
    pub binary: Option<PathBuf>,
}

impl Default for CtxGuardConfig {
    fn default() -> Self {
        let home = crate::env_vars::get(crate::env_vars::HOME).map(PathBuf::from);
        match home {
            Some(h) => CtxGuardConfig::for_home(&h),
            None => CtxGuardConfig {
                max_cat_bytes: DEFAULT_MAX_CAT_BYTES,
                home: None,
                keryx_home: None,
                data_dir: None,
                state_dir: None,
                snapshot_root: None,
                binary: None,
            },
        }
    }
}

impl CtxGuardConfig {
    /// Defaults, with `ctx_guard.max_cat_bytes` from runtime.toml (its
    /// default when the file is broken or the value is not a size, which
    /// `doctor` reports).
    pub fn from_settings(settings: &crate::settings::Settings) -> CtxGuardConfig {
        CtxGuardConfig {
            max_cat_bytes: settings.max_cat_bytes,
            ..CtxGuardConfig::default()
        }
    }

    /// The guard for an event resolved at `loc`: its home and every place
    /// that decides enforcement, as the runtime itself uses them.
    pub fn from_locations(loc: &crate::settings::Here) -> CtxGuardConfig {
        CtxGuardConfig {
            max_cat_bytes: loc.settings().max_cat_bytes,
            home: Some(loc.home.clone()),
            keryx_home: Some(loc.keryx_home.clone()),
            data_dir: Some(loc.data_dir.clone()),
            state_dir: Some(loc.state_dir.clone()),
            snapshot_root: Some(loc.snapshot_root.clone()),
            binary: Some(crate::paths::self_exe().to_path_buf()),
        }
    }

    /// The default limits and the default locations under `home` (for
    /// tests and the no-settings entry point).
    pub fn for_home(home: &Path) -> CtxGuardConfig {
        CtxGuardConfig {
            max_cat_bytes: DEFAULT_MAX_CAT_BYTES,
            home: Some(home.to_path_buf()),
            keryx_home: Some(home.join(".keryx")),
            data_dir: Some(home.join(".local/share/keryx")),
            state_dir: Some(home.join(".local/state/keryx")),
            snapshot_root: Some(home.join(".agentic/hooks-snapshot")),
            binary: None,
        }
    }
}

/// The in-process entry point on a canonical payload, with default settings.
pub fn check(payload: &Value) -> Verdict {
    static DEFAULT: OnceLock<CtxGuardConfig> = OnceLock::new();
    check_with(payload, DEFAULT.get_or_init(CtxGuardConfig::default))
}

/// [`check`] with explicit settings. Reads the command from the canonical
/// payload or any host's own (`tool_input.command` for Claude Code, Codex,
/// Gemini's `run_shell_command`; `command` for Cursor's
/// beforeShellExecution; `toolArgs.command` for Copilot).
pub fn check_with(payload: &Value, cfg: &CtxGuardConfig) -> Verdict {
    let input = payload
        .get("toolInput")
        .or_else(|| payload.get("tool_input"))
        .or_else(|| payload.get("toolArgs"));
    let tool = payload
        .get("toolName")
        .or_else(|| payload.get("tool_name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if tool == "apply_patch" {
        return Verdict::Allow; // Codex puts patches in `command` too.
    }
    if let Some(input) = input
        && READ_TOOLS.contains(&tool)
    {
        return verdict(read_tool(tool, input, cfg));
    }
    if tool.starts_with("mcp__") {
        let cwd = payload
            .get("cwd")
            .and_then(Value::as_str)
            .map(PathBuf::from);
        return mcp_tool(tool, input, cwd.as_deref(), cfg);
    }
    let command = input
        .and_then(|i| i.get("command"))
        .or_else(|| payload.get("command"));
    let cwd = input
        .and_then(|i| i.get("cwd").or_else(|| i.get("workdir")))
        .or_else(|| payload.get("cwd"))
        .and_then(Value::as_str)
        .map(PathBuf::from);
    match command {
        Some(Value::String(s)) => check_command(s, cwd.as_deref(), cfg),
        Some(Value::Array(argv)) => {
            // Codex sends an argv; `bash -lc SCRIPT` is the usual shape.
            let argv: Vec<String> = argv
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            let script = Script {
                commands: vec![Command {
                    words: argv,
                    ..Command::default()
                }],
                ..Script::default()
            };
            let src = script.commands[0].words.join(" ");
            verdict(Guard::new(cfg, &src).script(&script, cwd, Default::default()))
        }
        _ => Verdict::Allow,
    }
}

/// Checks one command line run in `cwd` (unknown: `None`).
///
/// A shell command is always read as shell, whatever it starts with: a
/// patch envelope is the patch tool's, and a Bash line that looks like one
/// (`*** Begin Patch` then commands) runs those commands.
pub fn check_command(command: &str, cwd: Option<&Path>, cfg: &CtxGuardConfig) -> Verdict {
    let script = Script::parse(command);
    verdict(Guard::new(cfg, command).script(
        &script,
        cwd.map(Path::to_path_buf),
        Default::default(),
    ))
}

/// Argument names whose value an MCP tool runs as a shell command.
const SHELL_ARGS: [&str; 5] = ["command", "cmd", "script", "shell", "commandLine"];

/// An MCP tool, judged by what its input does rather than by its name: an
/// argument it runs as shell ([`SHELL_ARGS`]) is read as a shell command,
/// and a string argument that is a path to a secret is a read of it (its
/// contents would reach the model).
fn mcp_tool(
    tool: &str,
    input: Option<&Value>,
    cwd: Option<&Path>,
    cfg: &CtxGuardConfig,
) -> Verdict {
    let mut args: Vec<(String, &str)> = Vec::new();
    if let Some(input) = input {
        string_args(input, "", &mut args);
    }
    for (key, text) in &args {
        if SHELL_ARGS.contains(&key.as_str()) {
            if let Verdict::Deny(r) = check_command(text, cwd, cfg) {
                return Verdict::Deny(format!("{r} (run by `{}`)", escape(tool)));
            }
        } else if path_like(text)
            && let Some(kind) = secret_path(text, cfg.home.as_deref())
        {
            let f = escape(text);
            return Verdict::Deny(format!(
                "ctx-guard: `{}` given `{f}` would put the contents of {} into the model's context; {}",
                escape(tool),
                kind.describe(),
                kind.alternative(&f)
            ));
        }
    }
    Verdict::Allow
}

/// Every string in `v` with the name of the member holding it (an array's
/// elements take their array's name).
pub(super) fn string_args<'v>(v: &'v Value, key: &str, out: &mut Vec<(String, &'v str)>) {
    match v {
        Value::String(s) => out.push((key.to_owned(), s)),
        Value::Array(a) => a.iter().for_each(|x| string_args(x, key, out)),
        Value::Object(m) => m.iter().for_each(|(k, x)| string_args(x, k, out)),
        _ => {}
    }
}

/// A string that is a path and nothing else: one line, no spaces, and
/// shaped like one (`/…`, `~/…`, `./…`, `a/b`, or a dot file).
pub(crate) fn path_like(s: &str) -> bool {
    !s.is_empty()
        && s.len() < 4096
        && !s.contains(char::is_whitespace)
        && (s.starts_with('/') || s.starts_with('~') || s.starts_with('.') || s.contains('/'))
}

/// Read/Grep-like tools, canonical and as hosts name them (Gemini
/// `read_file`, `read_many_files`, `grep_search`, `search_file_content`;
/// Copilot `view`; Kimi `ReadFile`; OpenCode `read`, `grep`).
const READ_TOOLS: [&str; 11] = [
    "Read",
    "Grep",
    "read_file",
    "read_many_files",
    "grep_search",
    "search_file_content",
    "view",
    "ReadFile",
    "read",
    "grep",
    "rg",
];

/// A Read/Grep-like tool pointed at a secret file, whose content would
/// reach the model (a search that prints only names or counts does not).
fn read_tool(tool: &str, input: &Value, cfg: &CtxGuardConfig) -> Option<String> {
    let mode = input
        .get("output_mode")
        .or_else(|| input.get("outputMode"))
        .and_then(Value::as_str);
    if matches!(mode, Some("files_with_matches" | "count")) {
        return None;
    }
    let mut paths: Vec<&str> = ["file_path", "filePath", "absolute_path", "path", "dir_path"]
        .iter()
        .filter_map(|k| input.get(*k).and_then(Value::as_str))
        .collect();
    // A search's file filter names what it reads too (`glob: ".env*"`).
    for key in ["glob", "include"] {
        if let Some(g) = input.get(key).and_then(Value::as_str) {
            paths.push(g);
        }
    }
    for key in ["paths", "include"] {
        if let Some(Value::Array(many)) = input.get(key) {
            paths.extend(many.iter().filter_map(Value::as_str));
        }
    }
    let (file, kind) = paths
        .into_iter()
        .find_map(|p| secret_path(p, cfg.home.as_deref()).map(|k| (p, k)))?;
    let f = escape(file);
    Some(format!(
        "ctx-guard: `{}` of `{f}` would put the contents of {} into the model's context; {}",
        escape(tool),
        kind.describe(),
        kind.alternative(&f)
    ))
}

fn verdict(reason: Option<String>) -> Verdict {
    match reason {
        Some(r) => Verdict::Deny(r),
        None => Verdict::Allow,
    }
}

/// Whether output is a secret's or a flood's problem: what hides one
/// (`| wc -l`) does not always bound the other (`| grep x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Concern {
    Secret,
    Flood,
}

pub(super) struct Guard<'a> {
    pub(super) cfg: &'a CtxGuardConfig,
    depth: usize,
    /// The text this script was parsed from, for the self-protection
    /// checks that read what a shell will read on its stdin.
    pub(super) src: &'a str,
    /// Only the self-protection checks apply: this is a nested script
    /// whose output does not reach the model.
    protect_only: bool,
}

impl<'a> Guard<'a> {
    fn new(cfg: &'a CtxGuardConfig, src: &'a str) -> Guard<'a> {
        Guard {
            cfg,
            depth: 0,
            src,
            protect_only: false,
        }
    }

    /// A guard that only resolves paths, for the file tools.
    pub(super) fn paths_only(cfg: &'a CtxGuardConfig) -> Guard<'a> {
        Guard::new(cfg, "")
    }

    /// `defs`: names the enclosing line gave (`CMD=…; bash -c "$CMD"`).
    fn script(
        &self,
        script: &Script,
        mut cwd: Option<PathBuf>,
        mut defs: self_protect::Defs,
    ) -> Option<String> {
        if let Some(r) = self_protect::groups(self, script, cwd.as_deref()) {
            return Some(r);
        }
        for (i, cmd) in script.commands.iter().enumerate() {
            if let Some(r) = self_protect::command(self, script, i, &mut defs, cwd.as_deref()) {
                return Some(r);
            }
            let argv = unwrap_wrappers(&cmd.words);
            let name = argv.first().map_or("", |first| basename(first));
            // A `cd` in a subshell or a substitution moves what follows it
            // there too: assumed to last, so no relative path is misread.
            if matches!(name, "cd" | "pushd") {
                cwd = self.cd(cwd.as_deref(), argv.get(1).map(String::as_str));
                continue;
            }
            // `env -S 'cmd'` leaves nothing after the wrapper: read its words.
            let inner = self_protect::nested(name, argv)
                .or_else(|| {
                    let w = &cmd.words;
                    w.first()
                        .and_then(|first| self_protect::nested(basename(first), w))
                })
                .or_else(|| self_protect::piped_script(script, i, name, argv));
            if let Some(inner) = inner {
                if self.depth >= MAX_NESTING {
                    if let Some(r) = self_protect::too_deep(&inner) {
                        return Some(r);
                    }
                } else {
                    let parsed = Script::parse(&inner);
                    let g = Guard {
                        cfg: self.cfg,
                        depth: self.depth + 1,
                        src: &inner,
                        protect_only: self.protect_only
                            || !reaches_context(script, i, Concern::Secret),
                    };
                    if let Some(r) = g.script(&parsed, cwd.clone(), defs.clone()) {
                        return Some(r);
                    }
                }
            }
            // A local shell script the command runs is read like the line:
            // `bash x.sh` with `cat ~/.ssh/id_rsa` in x.sh prints the key.
            if self.depth < MAX_NESTING
                && let Some((super::script_file::Lang::Shell, text)) =
                    super::script_file::load(argv, cwd.as_deref(), self.cfg.home.as_deref())
            {
                let g = Guard {
                    cfg: self.cfg,
                    depth: self.depth + 1,
                    src: &text,
                    protect_only: self.protect_only || !reaches_context(script, i, Concern::Secret),
                };
                if let Some(r) = g.script(&Script::parse(&text), cwd.clone(), Default::default()) {
                    let file = super::script_file::script_of(argv).map_or("", |(f, _)| f);
                    return Some(format!("{r} (in the script `{}` it runs)", escape(file)));
                }
            }
            if self.protect_only {
                continue;
            }
            if argv.is_empty() {
                if let Some(r) = self.redirected_secret(script, i) {
                    return Some(r);
                }
                continue;
            }
            if let Some(r) = self.secret(script, i, name, argv) {
                return Some(r);
            }
            if let Some(r) = self.flood(script, i, name, argv, cwd.as_deref()) {
                return Some(r);
            }
        }
        None
    }

    fn cd(&self, cwd: Option<&Path>, arg: Option<&str>) -> Option<PathBuf> {
        match arg {
            None | Some("~") => self.cfg.home.clone(),
            Some("-") => None,
            Some(a) if a.starts_with("~/") => self.cfg.home.as_ref().map(|h| h.join(&a[2..])),
            Some(a) if a.starts_with('/') => Some(PathBuf::from(a)),
            Some(a) if a.contains('$') => None,
            Some(a) => cwd.map(|c| crate::paths::absolute(&c.join(a))),
        }
    }

    /// A reader pointed at a secret file, or a keychain query, whose output
    /// reaches the model.
    fn secret(&self, script: &Script, i: usize, name: &str, argv: &[String]) -> Option<String> {
        let cmd = &script.commands[i];
        if let Some(what) = keychain_query(name, argv)
            && reaches_context(script, i, Concern::Secret)
        {
            return Some(format!(
                "ctx-guard: `{}` would print {what} into the model's context; ask the user to \
                 provide the value through an environment variable instead",
                show(argv)
            ));
        }
        if let Some(r) = self.copied_secret(script, i, name, argv) {
            return Some(r);
        }
        if let Some(r) = self.key_tool(script, i, name, argv) {
            return Some(r);
        }
        let reader = Reader::of(name)?;
        if reader.silent(argv) {
            return None;
        }
        let mut files: Vec<&str> = reader.operands(argv);
        files.extend(
            cmd.redirects
                .iter()
                .filter(|r| r.reads_file())
                .map(|r| r.target.as_str()),
        );
        let (file, kind) = files
            .into_iter()
            .find_map(|f| secret_path(f, self.cfg.home.as_deref()).map(|k| (f, k)))?;
        if !reaches_context(script, i, Concern::Secret) {
            return None;
        }
        Some(format!(
            "ctx-guard: `{}` would put the contents of `{}` ({}) into the model's context; {}",
            show(argv),
            escape(file),
            kind.describe(),
            kind.alternative(&escape(file))
        ))
    }

    /// The first file fed to command `i` through `<` that holds a secret.
    fn stdin_secret<'s>(&self, script: &'s Script, i: usize) -> Option<(&'s str, SecretKind)> {
        script.commands[i]
            .redirects
            .iter()
            .filter(|r| r.reads_file())
            .find_map(|r| {
                secret_path(&r.target, self.cfg.home.as_deref()).map(|k| (r.target.as_str(), k))
            })
    }

    /// A secret file read by the shell itself: `$(<.env)`, whose text
    /// becomes words of its owner, or the input of a compound command
    /// (`while read -r l; do echo "$l"; done < .env`) whose body prints.
    fn redirected_secret(&self, script: &Script, i: usize) -> Option<String> {
        let (file, kind) = self.stdin_secret(script, i)?;
        let cmd = &script.commands[i];
        let shown = if cmd.substitution_of.is_some() {
            if !pipeline_end_reaches(script, i, Concern::Secret) {
                return None;
            }
            format!("$(<{file})")
        } else {
            if cmd.redirects.iter().any(|r| r.hides_stdout()) {
                return None;
            }
            // The body: what ran since the previous compound ended.
            let start = script.commands[..i]
                .iter()
                .rposition(|c| c.words.is_empty() && c.substitution_of.is_none())
                .map_or(0, |k| k + 1);
            let prints = (start..i).any(|j| {
                let c = &script.commands[j];
                let argv = unwrap_wrappers(&c.words);
                let name = argv.first().map_or("", |w| basename(w));
                let echoes = matches!(name, "echo" | "printf" | "print")
                    || Reader::of(name)
                        .is_some_and(|r| !r.silent(argv) && r.operands(argv).is_empty());
                echoes && c.substitution_of.is_none() && reaches_context(script, j, Concern::Secret)
            });
            if !prints {
                return None;
            }
            format!("… done < {file}")
        };
        Some(format!(
            "ctx-guard: `{}` would put the contents of `{}` ({}) into the model's context; {}",
            escape(&shown),
            escape(file),
            kind.describe(),
            kind.alternative(&escape(file))
        ))
    }

    /// A secret copied to the terminal: `cp .env /dev/stdout`, `dd
    /// if=.env.production` (dd writes to stdout by default), `tee < .env`,
    /// `xargs < .env`.
    fn copied_secret(
        &self,
        script: &Script,
        i: usize,
        name: &str,
        argv: &[String],
    ) -> Option<String> {
        let home = self.cfg.home.as_deref();
        let found = match name {
            "cp" | "mv" | "install" | "rsync" => {
                let ops = operands_after_options(argv);
                let (dest, sources) = ops.split_last()?;
                if !is_terminal_path(dest) {
                    return None;
                }
                sources
                    .iter()
                    .find_map(|f| secret_path(f, home).map(|k| (f.to_string(), k, *dest)))
            }
            "dd" => {
                let arg = |key: &str| {
                    argv.iter()
                        .skip(1)
                        .find_map(|a| a.strip_prefix(key).map(str::to_owned))
                };
                let dest = arg("of=");
                if dest.as_deref().is_some_and(|d| !is_terminal_path(d)) {
                    return None;
                }
                let source = arg("if=").map_or_else(
                    || self.stdin_secret(script, i).map(|(f, k)| (f.to_owned(), k)),
                    |f| secret_path(&f, home).map(|k| (f, k)),
                );
                source.map(|(f, k)| (f, k, if dest.is_some() { "of" } else { "stdout" }))
            }
            "tee" | "xargs" => self
                .stdin_secret(script, i)
                .map(|(f, k)| (f.to_owned(), k, "stdout")),
            _ => return None,
        };
        let (file, kind, dest) = found?;
        let to_device =
            dest != "stdout" && dest != "/dev/stdout" && dest != "/dev/fd/1" && dest != "of";
        if !to_device && !reaches_context(script, i, Concern::Secret) {
            return None;
        }
        Some(format!(
            "ctx-guard: `{}` would put the contents of `{}` ({}) into the model's context; {}",
            show(argv),
            escape(&file),
            kind.describe(),
            kind.alternative(&escape(&file))
        ))
    }

    /// `openssl` and `gpg` printing private key material: a key read with
    /// `-in`/`-inkey`/`-key` and written to stdout as text or PEM, a new
    /// key generated without `-out`, or `gpg --export-secret-keys` without
    /// `--output`.
    fn key_tool(&self, script: &Script, i: usize, name: &str, argv: &[String]) -> Option<String> {
        let has = |f: &str| argv.iter().any(|a| a == f);
        let value_of = |flags: &[&str]| {
            argv.windows(2)
                .find(|w| flags.contains(&w[0].as_str()))
                .map(|w| w[1].as_str())
        };
        let out_to_stdout = |flags: &[&str]| value_of(flags).is_none_or(is_terminal_path);
        let (what, file) = match name {
            "openssl" => {
                let sub = argv.get(1).map(String::as_str)?;
                match sub {
                    "rsa" | "pkey" | "ec" | "dsa" | "pkcs8" | "pkcs12" => {
                        let file = value_of(&["-in", "-inkey", "-key"])?;
                        let kind = secret_path(file, self.cfg.home.as_deref())?;
                        // The public half, a check or `-nokeys` print no secret.
                        let public =
                            has("-pubout") || has("-nokeys") || has("-check") && !has("-text");
                        let silent = has("-noout") && !has("-text");
                        if public || silent || !out_to_stdout(&["-out"]) {
                            return None;
                        }
                        (kind.describe(), file.to_owned())
                    }
                    "genrsa" | "genpkey" | "gendsa" | "ecparam"
                        if sub != "ecparam" || has("-genkey") =>
                    {
                        if !out_to_stdout(&["-out"]) || has("-noout") {
                            return None;
                        }
                        ("a newly generated private key", String::new())
                    }
                    _ => return None,
                }
            }
            "gpg" | "gpg2" => {
                let exports = has("--export-secret-keys") || has("--export-secret-subkeys");
                if !exports || !out_to_stdout(&["-o", "--output"]) {
                    return None;
                }
                ("your GPG secret keys", String::new())
            }
            _ => return None,
        };
        if !reaches_context(script, i, Concern::Secret) {
            return None;
        }
        let about = if file.is_empty() {
            String::new()
        } else {
            format!(" of `{}`", escape(&file))
        };
        Some(format!(
            "ctx-guard: `{}` would print {what}{about} into the model's context; write it to a file \
             with `-out FILE` (openssl) or `--output FILE` (gpg), or print only the public half \
             (`openssl pkey -in KEY -pubout`)",
            show(argv)
        ))
    }

    fn flood(
        &self,
        script: &Script,
        i: usize,
        name: &str,
        argv: &[String],
        cwd: Option<&Path>,
    ) -> Option<String> {
        let (what, alternative) = match name {
            "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" => {
                let reader = Reader::of(name)?;
                if reader.silent(argv) || !reader.recursive(argv) || reader.depth_bounded(argv) {
                    return None;
                }
                let roots = reader.operands(argv);
                let root = self.huge_root_of(&roots, cwd)?;
                (
                    format!("searches {root} recursively"),
                    "search the project instead (`grep -rn PATTERN .`) or bound the output (`… | head -n 100`)",
                )
            }
            "find" => {
                let f = FindArgs::parse(argv);
                if f.bounded || f.silent {
                    return None;
                }
                let root = self.huge_root_of(&f.roots, cwd)?;
                (
                    format!("walks {root}"),
                    "start from a narrower directory with a depth limit (`find /usr/lib -maxdepth 3 -name X`) or bound the output (`… | head -n 100`)",
                )
            }
            "ls" | "tree" | "du" => {
                let flags = short_flags(argv);
                let recursive = match name {
                    "ls" => flags.contains('R') || argv.iter().any(|a| a == "--recursive"),
                    "tree" => {
                        !flags.contains('L')
                            && !argv
                                .iter()
                                .any(|a| a.starts_with("--max-depth") || a == "-d")
                    }
                    _ => {
                        (flags.contains('a') || argv.iter().any(|a| a == "--all"))
                            && !flags.contains('d')
                            && !flags.contains('s')
                            && !argv
                                .iter()
                                .any(|a| a.starts_with("--max-depth") || a == "--summarize")
                    }
                };
                if !recursive {
                    return None;
                }
                let ops: Vec<&str> = argv[1..]
                    .iter()
                    .filter(|a| !a.starts_with('-'))
                    .map(String::as_str)
                    .collect();
                let root = self.huge_root_of(&ops, cwd)?;
                (
                    format!("lists {root} recursively"),
                    "list one level (`ls -la DIR`) or bound the depth (`tree -L 2 DIR`, `find DIR -maxdepth 2`)",
                )
            }
            "cat" | "tac" | "nl" | "bat" | "batcat" | "less" | "more" => {
                return self.big_file(script, i, argv, cwd);
            }
            _ => return None,
        };
        if !reaches_context(script, i, Concern::Flood) {
            return None;
        }
        Some(format!(
            "ctx-guard: `{}` {what}, which would flood the model's context; {alternative}",
            show(argv)
        ))
    }

    fn big_file(
        &self,
        script: &Script,
        i: usize,
        argv: &[String],
        cwd: Option<&Path>,
    ) -> Option<String> {
        let limit = self.cfg.max_cat_bytes;
        let (file, size) = operands_after_options(argv).into_iter().find_map(|f| {
            let path = self.resolve(f, cwd)?;
            let meta = std::fs::metadata(&path).ok()?;
            (meta.is_file() && meta.len() > limit).then_some((f, meta.len()))
        })?;
        if !reaches_context(script, i, Concern::Flood) {
            return None;
        }
        let f = escape(file);
        Some(format!(
            "ctx-guard: `{}` would pour {} into the model's context (`{f}`; the limit is {}); read part of it \
             instead: `head -n 200 {f}`, `tail -n 200 {f}` or `grep -n PATTERN {f}`",
            show(argv),
            human_bytes(size),
            human_bytes(limit)
        ))
    }

    /// The absolute path `word` names, if it can be known without running
    /// anything.
    pub(super) fn resolve(&self, word: &str, cwd: Option<&Path>) -> Option<PathBuf> {
        if word.contains('$') || word.contains('*') || word.contains('?') || word.starts_with('-') {
            return None;
        }
        if word == "~" {
            return self.cfg.home.clone();
        }
        if let Some(rest) = word.strip_prefix("~/") {
            return self.cfg.home.as_ref().map(|h| h.join(rest));
        }
        if word.starts_with('/') {
            return Some(PathBuf::from(word));
        }
        cwd.map(|c| c.join(word))
    }

    /// `"/ (the whole filesystem)"` or `"~ (your home directory)"` when one
    /// of `roots` (or the cwd, when there are none) is such a place.
    fn huge_root_of(&self, roots: &[&str], cwd: Option<&Path>) -> Option<String> {
        let mut candidates: Vec<PathBuf> =
            roots.iter().filter_map(|r| self.resolve(r, cwd)).collect();
        if roots.is_empty()
            && let Some(c) = cwd
        {
            candidates.push(c.to_path_buf());
        }
        candidates.iter().find_map(|p| {
            let p = crate::paths::absolute(p);
            if p == Path::new("/") {
                Some("`/` (the whole filesystem)".to_owned())
            } else if self
                .cfg
                .home
                .as_deref()
                .is_some_and(|h| crate::paths::absolute(h) == p)
            {
                Some("`~` (your whole home directory)".to_owned())
            } else if ["/home", "/Users"].iter().any(|h| Path::new(h) == p) {
                Some(format!("`{}` (every user's home)", p.display()))
            } else {
                None
            }
        })
    }
}

/// Whether the output of command `i` can reach the model: not redirected
/// to a file, not swallowed by a sink downstream, not captured into a
/// variable. Unsure means yes.
fn reaches_context(script: &Script, i: usize, concern: Concern) -> bool {
    let cmd = &script.commands[i];
    if cmd.redirects.iter().any(|r| r.hides_stdout()) {
        return false;
    }
    let mut last = None;
    for (j, d) in script.commands.iter().enumerate().skip(i + 1) {
        if d.pipeline == cmd.pipeline && d.stage > cmd.stage {
            if sink_hides(d, concern) {
                return false;
            }
            last = Some(j);
        }
    }
    pipeline_end_reaches(script, last.unwrap_or(i), concern)
}

/// Where the last stage of a pipeline writes: the terminal, its group's
/// stdout, or a command substitution.
fn pipeline_end_reaches(script: &Script, end: usize, concern: Concern) -> bool {
    let cmd = &script.commands[end];
    let (mut group, mut substitution) = (cmd.group, cmd.substitution_of);
    while let Some(g) = group {
        let grp = &script.groups[g];
        if grp.redirects.iter().any(|r| r.hides_stdout()) {
            return false;
        }
        let mut last = None;
        for (j, d) in script.commands.iter().enumerate() {
            if d.pipeline == grp.pipeline && d.stage > grp.stage {
                if sink_hides(d, concern) {
                    return false;
                }
                last = Some(j);
            }
        }
        if let Some(j) = last {
            return pipeline_end_reaches(script, j, concern);
        }
        group = grp.group;
        substitution = grp.substitution_of.or(substitution);
    }
    match substitution {
        None => true,
        Some(owner) => match concern {
            // `$(…)` becomes words of its owner: safe when the owner only
            // stores them (`export $(grep -v '^#' .env | xargs)`).
            Concern::Secret => {
                let o = &script.commands[owner];
                let stores = o.words.is_empty()
                    || matches!(
                        o.words.first().map(String::as_str),
                        Some(
                            "export"
                                | "local"
                                | "declare"
                                | "typeset"
                                | "readonly"
                                | "eval"
                                | "source"
                                | "."
                        )
                    );
                !stores && owner < end && reaches_context(script, owner, concern)
            }
            // Words, not a stream: a list of paths, not a flood.
            Concern::Flood => false,
        },
    }
}

/// A downstream command that swallows what it reads.
fn sink_hides(cmd: &Command, concern: Concern) -> bool {
    if cmd.redirects.iter().any(|r| r.hides_stdout()) {
        return true;
    }
    let argv = unwrap_wrappers(&cmd.words);
    let Some(first) = argv.first() else {
        return false;
    };
    let name = basename(first);
    if matches!(
        name,
        "wc" | "md5sum"
            | "sha1sum"
            | "sha224sum"
            | "sha256sum"
            | "sha384sum"
            | "sha512sum"
            | "b2sum"
            | "shasum"
            | "cksum"
            | "sum"
            | "true"
            | ":"
    ) {
        return true;
    }
    if argv
        .iter()
        .any(|a| a == "--password-stdin" || a == "--with-token")
    {
        return true;
    }
    if let Some(r) = Reader::of(name)
        && r.silent(argv)
    {
        return true;
    }
    concern == Concern::Flood
        && matches!(
            name,
            "head" | "tail" | "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" | "less" | "more"
        )
}

/// Strips `sudo`, `env`, `nice`, `timeout 5` and friends off the front.
pub(crate) fn unwrap_wrappers(words: &[String]) -> &[String] {
    let mut w = words;
    for _ in 0..8 {
        let Some(first) = w.first() else { return w };
        let (valued, skip_assignments): (&[&str], bool) = match basename(first) {
            "sudo" | "doas" => (
                &["-u", "-g", "-C", "-p", "-h", "-U", "-r", "-t", "-D"],
                false,
            ),
            "env" => (&["-u", "-C", "-S", "--unset", "--chdir"], true),
            "nice" => (&["-n", "--adjustment"], false),
            "ionice" => (&["-c", "-n", "-p", "-P", "-u"], false),
            "stdbuf" => (&["-i", "-o", "-e"], false),
            "nohup" | "time" | "builtin" | "unbuffer" | "chronic" | "coproc" => (&[], false),
            "exec" => (&["-a"], false),
            "command" => {
                if w.get(1).is_some_and(|a| a == "-v" || a == "-V") {
                    return &[]; // a lookup, not a run
                }
                (&[], false)
            }
            "timeout" => {
                let rest = skip_options(&w[1..], &["-s", "-k", "--signal", "--kill-after"], false);
                // The duration comes before the command.
                w = rest.get(1..).unwrap_or(&[]);
                continue;
            }
            _ => return w,
        };
        w = skip_options(&w[1..], valued, skip_assignments);
    }
    w
}

pub(crate) fn skip_options<'a>(
    mut w: &'a [String],
    valued: &[&str],
    skip_assignments: bool,
) -> &'a [String] {
    while let Some(a) = w.first() {
        if a == "--" {
            return &w[1..];
        }
        if a.starts_with('-') && a.len() > 1 {
            let takes_value = valued.contains(&a.as_str());
            w = &w[if takes_value { 2.min(w.len()) } else { 1 }..];
        } else if skip_assignments && a.contains('=') {
            w = &w[1..];
        } else {
            break;
        }
    }
    w
}

/// The script run by `bash -c SCRIPT`, `sh -lc SCRIPT`, `eval WORDS…`.
pub(super) fn nested_script(name: &str, argv: &[String]) -> Option<String> {
    match name {
        "bash" | "sh" | "zsh" | "dash" | "ksh" => {
            let at = argv[1..]
                .iter()
                .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))?;
            argv.get(at + 2).cloned()
        }
        "eval" => Some(argv[1..].join(" ")),
        _ => None,
    }
}

/// A keychain or secret-store query that prints a secret.
fn keychain_query(name: &str, argv: &[String]) -> Option<&'static str> {
    let sub = argv.get(1).map(String::as_str);
    match (name, sub) {
        ("security", Some("find-generic-password" | "find-internet-password")) => {
            let prints = argv[2..].iter().any(|a| {
                a.starts_with('-') && !a.starts_with("--") && (a.contains('w') || a.contains('g'))
            });
            prints.then_some("a macOS keychain password")
        }
        ("security", Some("dump-keychain" | "export")) => Some("macOS keychain contents"),
        ("secret-tool", Some("lookup" | "search")) => Some("a secret from the desktop keyring"),
        ("kwallet-query", _) if argv.iter().any(|a| a == "-r" || a == "--read-password") => {
            Some("a KWallet password")
        }
        _ => None,
    }
}

/// The commands that print (part of) the files they are given, and how to
/// tell their file operands from their options.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reader {
    /// The first operand is a pattern or program, not a file (grep, sed…).
    script_first: bool,
    /// Options that make the script come from an option instead.
    script_options: &'static [&'static str],
    /// Options taking the next word as their value.
    valued: &'static [&'static str],
    /// Short option letters taking a value (`-A3`, `-m 1`).
    valued_letters: &'static str,
    /// Options after which nothing file content is printed (`grep -q`).
    silent_long: &'static [&'static str],
    silent_letters: &'static str,
    kind: ReaderKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReaderKind {
    Grep,
    Rg,
    Sed,
    Plain,
}

const GREP: Reader = Reader {
    script_first: true,
    script_options: &["-e", "-f", "--regexp", "--file"],
    valued: &[
        "-e",
        "-f",
        "-m",
        "-A",
        "-B",
        "-C",
        "-d",
        "-D",
        "--regexp",
        "--file",
        "--max-count",
        "--include",
        "--exclude",
        "--exclude-dir",
        "--exclude-from",
        "--label",
        "--after-context",
        "--before-context",
        "--context",
        "--directories",
        "--devices",
        "--binary-files",
    ],
    valued_letters: "efmABCdD",
    silent_long: &[
        "--quiet",
        "--silent",
        "--count",
        "--files-with-matches",
        "--files-without-match",
    ],
    silent_letters: "qclL",
    kind: ReaderKind::Grep,
};

const RG: Reader = Reader {
    script_first: true,
    script_options: &["-e", "-f", "--regexp", "--file"],
    valued: &[
        "-e",
        "-f",
        "-g",
        "-t",
        "-T",
        "-m",
        "-A",
        "-B",
        "-C",
        "-M",
        "-j",
        "-E",
        "-r",
        "-d",
        "--regexp",
        "--file",
        "--glob",
        "--iglob",
        "--type",
        "--type-not",
        "--type-add",
        "--max-count",
        "--max-depth",
        "--depth",
        "--max-columns",
        "--threads",
        "--encoding",
        "--replace",
        "--pre",
        "--pre-glob",
        "--sort",
        "--sortr",
        "--colors",
        "--engine",
        "--ignore-file",
        "--max-filesize",
        "--context",
        "--after-context",
        "--before-context",
        "--path-separator",
        "-G",
        "--file-search-regex",
    ],
    valued_letters: "efgtTmABCMjErdG",
    silent_long: &[
        "--quiet",
        "--count",
        "--count-matches",
        "--files-with-matches",
        "--files-without-match",
        "--files",
    ],
    // Not `L`: for rg that is --follow.
    silent_letters: "qcl",
    kind: ReaderKind::Rg,
};

const SED: Reader = Reader {
    script_first: true,
    script_options: &["-e", "-f", "--expression", "--file"],
    valued: &["-e", "-f", "-l", "--expression", "--file", "--line-length"],
    valued_letters: "efl",
    // In-place editing prints nothing.
    silent_long: &["--in-place"],
    silent_letters: "i",
    kind: ReaderKind::Sed,
};

const AWK: Reader = Reader {
    script_first: true,
    script_options: &["-f", "--file"],
    valued: &["-f", "-v", "-F", "--file", "--assign", "--field-separator"],
    valued_letters: "fvF",
    silent_long: &[],
    silent_letters: "",
    kind: ReaderKind::Plain,
};

const JQ: Reader = Reader {
    script_first: true,
    script_options: &["-f", "--from-file"],
    valued: &[
        "-f",
        "--from-file",
        "--indent",
        "-L",
        "--arg",
        "--argjson",
        "--slurpfile",
        "--rawfile",
        "--args",
        "--jsonargs",
    ],
    valued_letters: "fL",
    silent_long: &[],
    silent_letters: "",
    kind: ReaderKind::Plain,
};

/// Plain readers take every non-option word as a file. Option values
/// (`head -n 5`) land among the operands too, which is harmless: a number
/// never names a secret.
const PLAIN: Reader = Reader {
    script_first: false,
    script_options: &[],
    valued: &[],
    valued_letters: "",
    silent_long: &[],
    silent_letters: "",
    kind: ReaderKind::Plain,
};

impl Reader {
    pub(super) fn of(name: &str) -> Option<Reader> {
        Some(match name {
            "grep" | "egrep" | "fgrep" | "zgrep" | "ag" | "ack" => GREP,
            "rg" => RG,
            "sed" | "gsed" => SED,
            "awk" | "gawk" | "mawk" | "nawk" => AWK,
            "jq" | "yq" | "gojq" => JQ,
            "cat" | "tac" | "nl" | "less" | "more" | "most" | "head" | "tail" | "bat"
            | "batcat" | "base64" | "base32" | "basenc" | "xxd" | "hexdump" | "hd" | "od"
            | "strings" | "diff" | "sort" | "uniq" | "cut" | "column" | "fold" | "fmt"
            | "paste" | "pr" | "expand" | "rev" | "view" | "zcat" | "zless" | "iconv" | "tr" => {
                PLAIN
            }
            _ => return None,
        })
    }

    /// Whether one option word switches content output off.
    fn is_silent_word(&self, a: &str) -> bool {
        if a.starts_with("--") {
            return self
                .silent_long
                .iter()
                .any(|l| a == *l || a.starts_with(&format!("{l}=")));
        }
        let Some(letters) = a.strip_prefix('-') else {
            return false;
        };
        // Letters after a valued one are its value (`-m1`, `-eq`).
        letters
            .chars()
            .take_while(|c| !self.valued_letters.contains(*c))
            .any(|c| self.silent_letters.contains(c))
    }

    /// Whether the options mean nothing of the files' content is printed.
    pub(super) fn silent(&self, argv: &[String]) -> bool {
        self.options(argv).iter().any(|a| self.is_silent_word(a))
    }

    /// The option words (with values skipped), up to `--`.
    fn options<'a>(&self, argv: &'a [String]) -> Vec<&'a str> {
        self.split(argv).0
    }

    /// The file operands.
    pub(super) fn operands<'a>(&self, argv: &'a [String]) -> Vec<&'a str> {
        self.split(argv).1
    }

    fn split<'a>(&self, argv: &'a [String]) -> (Vec<&'a str>, Vec<&'a str>) {
        let mut options = Vec::new();
        let mut operands = Vec::new();
        let mut script_given = false;
        let mut it = argv.iter().skip(1).map(String::as_str);
        let mut only_operands = false;
        while let Some(a) = it.next() {
            if only_operands || a == "-" || !a.starts_with('-') {
                operands.push(a);
                continue;
            }
            if a == "--" {
                only_operands = true;
                continue;
            }
            options.push(a);
            if self
                .script_options
                .iter()
                .any(|o| a == *o || a.starts_with(&format!("{o}=")))
            {
                script_given = true;
            }
            let takes_next = if a.starts_with("--") {
                !a.contains('=') && self.valued.contains(&a)
            } else {
                // `-A3` carries its value; `-A 3` and `-iA 3` take the next.
                let letters = &a[1..];
                match letters
                    .char_indices()
                    .find(|(_, c)| self.valued_letters.contains(*c))
                {
                    Some((k, c)) => {
                        if "ef".contains(c) && self.script_first {
                            script_given = true;
                        }
                        k + c.len_utf8() == letters.len()
                    }
                    None => self.valued.contains(&a),
                }
            };
            if takes_next {
                let two = matches!(a, "--arg" | "--argjson" | "--slurpfile" | "--rawfile");
                it.next();
                if two {
                    it.next();
                }
            }
        }
        if self.script_first && !script_given && !operands.is_empty() {
            operands.remove(0);
        }
        (options, operands)
    }

    /// Whether this search descends into directories.
    fn recursive(&self, argv: &[String]) -> bool {
        match self.kind {
            ReaderKind::Rg => true,
            ReaderKind::Grep if matches!(argv.first().map(|a| basename(a)), Some("ag" | "ack")) => {
                true
            }
            ReaderKind::Grep => self.options(argv).iter().any(|a| {
                matches!(
                    *a,
                    "--recursive" | "--dereference-recursive" | "--directories=recurse"
                ) || (!a.starts_with("--")
                    && a[1..]
                        .chars()
                        .take_while(|c| !self.valued_letters.contains(*c))
                        .any(|c| c == 'r' || c == 'R'))
            }),
            _ => false,
        }
    }

    /// `rg --max-depth 2`, `ag --depth 2`: a shallow search is bounded.
    fn depth_bounded(&self, argv: &[String]) -> bool {
        let shallow = |n: &str| n.parse::<u32>().is_ok_and(|n| n <= 3);
        argv.windows(2).any(|w| match w[0].as_str() {
            "--max-depth" | "--depth" => shallow(&w[1]),
            "-d" => self.kind == ReaderKind::Rg && shallow(&w[1]),
            _ => false,
        }) || argv.iter().any(|a| {
            a.strip_prefix("--max-depth=")
                .or_else(|| a.strip_prefix("--depth="))
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| n <= 3)
        })
    }
}

/// `find [-H|-L|-P] [roots…] [expression]`, as much as ctx-guard needs.
struct FindArgs<'a> {
    roots: Vec<&'a str>,
    /// `-maxdepth N` (N ≤ 3) or `-quit`.
    bounded: bool,
    /// Only actions that print nothing (`-delete`, `-exec …`).
    silent: bool,
}

impl<'a> FindArgs<'a> {
    fn parse(argv: &'a [String]) -> FindArgs<'a> {
        let mut i = 1;
        while argv
            .get(i)
            .is_some_and(|a| matches!(a.as_str(), "-H" | "-L" | "-P") || a.starts_with("-O"))
        {
            i += 1;
        }
        if argv.get(i).is_some_and(|a| a == "-D") {
            i += 2;
        }
        let mut roots = Vec::new();
        while let Some(a) = argv.get(i) {
            if a.starts_with('-') || a == "(" || a == "!" || a == "," || a == "\\(" {
                break;
            }
            roots.push(a.as_str());
            i += 1;
        }
        let expr = argv.get(i..).unwrap_or(&[]);
        let bounded = expr.windows(2).any(|w| {
            matches!(w[0].as_str(), "-maxdepth" | "-depth")
                && w[1].parse::<u32>().is_ok_and(|n| n <= 3)
        }) || expr.iter().any(|a| a == "-quit");
        let has = |names: &[&str]| expr.iter().any(|a| names.contains(&a.as_str()));
        let silent = has(&[
            "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ]) && !has(&["-print", "-print0", "-printf", "-ls"]);
        if roots.is_empty() {
            roots.push(".");
        }
        FindArgs {
            roots,
            bounded,
            silent,
        }
    }
}

/// What kind of secret a path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SecretKind {
    Dotenv,
    SshPrivateKey,
    SshDir,
    KeyFile,
    AwsCredentials,
    Netrc,
    DockerConfig,
    Keychain,
    CredentialStore,
}

impl SecretKind {
    pub(super) fn describe(self) -> &'static str {
        match self {
            SecretKind::Dotenv => "a dotenv file, which holds secrets",
            SecretKind::SshPrivateKey => "an SSH private key",
            SecretKind::SshDir => "your SSH directory",
            SecretKind::KeyFile => "a key or certificate file",
            SecretKind::AwsCredentials => "AWS credentials",
            SecretKind::Netrc => "stored login passwords",
            SecretKind::DockerConfig => "Docker registry credentials",
            SecretKind::Keychain => "a keychain",
            SecretKind::CredentialStore => "stored credentials",
        }
    }

    /// A way to get what is usually wanted without printing the secret;
    /// each suggestion passes this guard.
    fn alternative(self, f: &str) -> String {
        match self {
            SecretKind::Dotenv => format!(
                "check that a variable is set with `grep -q '^NAME=' {f}` or count entries with `grep -c = {f}`; \
                 load it without printing with `set -a; . {f}; set +a`"
            ),
            SecretKind::SshPrivateKey | SecretKind::SshDir => {
                format!("show a key's fingerprint with `ssh-keygen -lf {f}`, or read the public half (`*.pub`)")
            }
            SecretKind::KeyFile => format!(
                "inspect a certificate with `openssl x509 -in {f} -noout -subject -dates`, or a key's public half \
                 with `openssl pkey -in {f} -pubout`"
            ),
            SecretKind::AwsCredentials => "check the identity in use with `aws sts get-caller-identity` or `aws configure list`".to_owned(),
            SecretKind::Netrc | SecretKind::CredentialStore => {
                format!("check that an entry exists with `grep -c HOSTNAME {f}`")
            }
            SecretKind::DockerConfig => "check logins with `docker info` or your credential helper's `list`".to_owned(),
            SecretKind::Keychain => "ask the user to provide the value through an environment variable".to_owned(),
        }
    }
}

/// Dotfile templates that hold placeholders, not secrets.
const TEMPLATE_SUFFIXES: [&str; 9] = [
    ".example",
    ".sample",
    ".template",
    ".tmpl",
    ".tpl",
    ".dist",
    ".defaults",
    ".default",
    ".schema",
];

/// Paths (as trailing component sequences) that hold credentials. A `*`
/// in the path given to a command may stand for any one component.
const SECRET_TAILS: &[(&[&str], SecretKind)] = &[
    (&[".aws", "credentials"], SecretKind::AwsCredentials),
    (&[".aws", "sso", "cache"], SecretKind::AwsCredentials),
    (&[".aws", "cli", "cache"], SecretKind::AwsCredentials),
    (&[".docker", "config.json"], SecretKind::DockerConfig),
    (&[".kube", "config"], SecretKind::CredentialStore),
    (&[".config", "gh", "hosts.yml"], SecretKind::CredentialStore),
    (&[".gnupg", "private-keys-v1.d"], SecretKind::KeyFile),
    (&[".gnupg", "secring.gpg"], SecretKind::KeyFile),
    (&["library", "keychains"], SecretKind::Keychain),
    (&[".local", "share", "keyrings"], SecretKind::Keychain),
    (
        &[".config", "gcloud", "application_default_credentials.json"],
        SecretKind::CredentialStore,
    ),
    (
        &[".config", "gcloud", "credentials.db"],
        SecretKind::CredentialStore,
    ),
    (&[".cargo", "credentials"], SecretKind::CredentialStore),
    (&[".cargo", "credentials.toml"], SecretKind::CredentialStore),
    (
        &[".terraform.d", "credentials.tfrc.json"],
        SecretKind::CredentialStore,
    ),
    (
        &[".azure", "accesstokens.json"],
        SecretKind::CredentialStore,
    ),
    (
        &[".azure", "msal_token_cache.json"],
        SecretKind::CredentialStore,
    ),
    (
        &[".azure", "msal_token_cache.bin"],
        SecretKind::CredentialStore,
    ),
    (
        &[".azure", "service_principal_entries.json"],
        SecretKind::CredentialStore,
    ),
    (&[".config", "hub"], SecretKind::CredentialStore),
    (
        &[".config", "glab-cli", "config.yml"],
        SecretKind::CredentialStore,
    ),
    (
        &[".config", "doctl", "config.yaml"],
        SecretKind::CredentialStore,
    ),
    (
        &[".config", "containers", "auth.json"],
        SecretKind::DockerConfig,
    ),
    (
        &[".config", "rclone", "rclone.conf"],
        SecretKind::CredentialStore,
    ),
    (
        &[".config", "hcloud", "cli.toml"],
        SecretKind::CredentialStore,
    ),
    (
        &[".pulumi", "credentials.json"],
        SecretKind::CredentialStore,
    ),
    (&[".gem", "credentials"], SecretKind::CredentialStore),
    (
        &[".m2", "settings-security.xml"],
        SecretKind::CredentialStore,
    ),
    (
        &[".config", "gcloud", "access_tokens.db"],
        SecretKind::CredentialStore,
    ),
    (
        &[".config", "gcloud", "legacy_credentials"],
        SecretKind::CredentialStore,
    ),
    (&["etc", "shadow"], SecretKind::CredentialStore),
    (&["etc", "gshadow"], SecretKind::CredentialStore),
];

/// Directories whose files are (mostly) credentials.
const SECRET_DIRS: [(&str, SecretKind); 4] = [
    (".aws", SecretKind::AwsCredentials),
    (".gnupg", SecretKind::KeyFile),
    ("keychains", SecretKind::Keychain),
    ("keyrings", SecretKind::Keychain),
];

/// Basenames that are credential stores wherever they are.
const SECRET_NAMES: &[(&str, SecretKind)] = &[
    (".netrc", SecretKind::Netrc),
    ("_netrc", SecretKind::Netrc),
    (".git-credentials", SecretKind::Netrc),
    (".pgpass", SecretKind::Netrc),
    (".pypirc", SecretKind::CredentialStore),
    (".my.cnf", SecretKind::CredentialStore),
    (".vault-token", SecretKind::CredentialStore),
    (".s3cfg", SecretKind::CredentialStore),
    (".boto", SecretKind::CredentialStore),
    (".databrickscfg", SecretKind::CredentialStore),
];

/// Whether `word` (an argument, quotes removed) names a secret.
pub(crate) fn secret_path(word: &str, home: Option<&Path>) -> Option<SecretKind> {
    if word.is_empty() || word.starts_with('-') {
        return None;
    }
    let mut path = word.to_owned();
    if let Some(h) = home.and_then(Path::to_str).filter(|h| h.len() > 1)
        && let Some(rest) = path.strip_prefix(h)
        && (rest.is_empty() || rest.starts_with('/'))
    {
        path = format!("~{rest}");
    }
    // Case-insensitive: macOS filesystems are, and `.ENV` is still a .env.
    let lower = path.to_ascii_lowercase();
    let comps: Vec<&str> = lower
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let (&base, dirs) = comps.split_last()?;
    let in_home = dirs == ["~"];

    if let Some(ssh) = comps.iter().position(|c| *c == ".ssh") {
        if ssh == comps.len() - 1 {
            return Some(SecretKind::SshDir);
        }
        let public =
            base.ends_with(".pub") || base.starts_with("known_hosts") || base == "authorized_keys";
        if !public {
            return Some(if is_ssh_key_name(base) {
                SecretKind::SshPrivateKey
            } else {
                SecretKind::SshDir
            });
        }
        return None;
    }
    if is_ssh_key_name(base) && !base.ends_with(".pub") {
        return Some(SecretKind::SshPrivateKey);
    }
    let templated = |c: &str| TEMPLATE_SUFFIXES.iter().any(|s| c.ends_with(s));
    if comps.iter().any(|c| c.starts_with(".env") && !templated(c)) {
        return Some(SecretKind::Dotenv);
    }
    if base.ends_with(".env") && !templated(base) {
        return Some(SecretKind::Dotenv);
    }
    if [".pem", ".key", ".p12", ".pfx"]
        .iter()
        .any(|s| base.ends_with(s))
    {
        return Some(SecretKind::KeyFile);
    }
    if base.ends_with(".keychain") || base.ends_with(".keychain-db") {
        return Some(SecretKind::Keychain);
    }
    for (tail, kind) in SECRET_TAILS {
        // The tail itself, or anything under it.
        let matches = |w: &[&str]| w.iter().zip(tail.iter()).all(|(g, lit)| glob_match(g, lit));
        if comps.windows(tail.len()).any(matches) {
            return Some(*kind);
        }
    }
    // A bare `*` is not taken to mean `_netrc`: `cat *` is ordinary.
    let named = |n: &str| glob_match(base, n) && !base.starts_with(['*', '?']);
    if let Some((_, k)) = SECRET_NAMES.iter().find(|(n, _)| named(n)) {
        return Some(*k);
    }
    if in_home && named(".npmrc") {
        return Some(SecretKind::CredentialStore);
    }
    // A directory of nothing but credentials, searched as a whole
    // (`grep -r region ~/.aws`).
    SECRET_DIRS
        .iter()
        .find(|(d, _)| base == *d)
        .map(|(_, k)| *k)
}

fn is_ssh_key_name(base: &str) -> bool {
    ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "identity"]
        .iter()
        .any(|p| base.starts_with(p))
}

/// Shell-glob match of `glob` (from the command) against the literal name
/// `lit`: `*` and `?`, and a leading dot is never matched by a wildcard.
pub(super) fn glob_match(glob: &str, lit: &str) -> bool {
    if !glob.contains(['*', '?']) {
        return glob == lit;
    }
    if lit.starts_with('.') && !glob.starts_with('.') {
        return false;
    }
    // Greedy with one backtrack point (the last `*`): linear in practice,
    // never exponential, whatever the model puts in a command.
    let (g, l) = (glob.as_bytes(), lit.as_bytes());
    let (mut gi, mut li) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while li < l.len() {
        match g.get(gi) {
            Some(b'*') => {
                star = Some((gi, li));
                gi += 1;
            }
            Some(&c) if c == b'?' || c == l[li] => {
                gi += 1;
                li += 1;
            }
            _ => match star {
                Some((sg, sl)) => {
                    gi = sg + 1;
                    li = sl + 1;
                    star = Some((sg, sl + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|&c| c == b'*')
}

/// A destination that is the terminal the model reads: stdout or a tty.
fn is_terminal_path(p: &str) -> bool {
    matches!(
        p,
        "-" | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/tty"
            | "/dev/fd/1"
            | "/dev/fd/2"
            | "/proc/self/fd/1"
            | "/proc/self/fd/2"
    ) || p.starts_with("/dev/pts/")
}

pub(crate) fn basename(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

/// Letters of every short-option cluster (`-laR` → `laR`).
fn short_flags(argv: &[String]) -> String {
    argv.iter()
        .skip(1)
        .filter(|a| a.starts_with('-') && !a.starts_with("--"))
        .flat_map(|a| a.chars().skip(1))
        .collect()
}

pub(super) fn operands_after_options(argv: &[String]) -> Vec<&str> {
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

/// `argv` as one line, an empty word or one with blanks in quotes.
pub(crate) fn joined_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if a.is_empty() || a.contains([' ', '\t', '\n']) {
                format!("'{a}'")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command for a reason: escaped and short.
pub(super) fn show(argv: &[String]) -> String {
    let joined = joined_words(argv);
    const MAX: usize = 80;
    if joined.len() <= MAX {
        return escape(&joined);
    }
    let mut end = MAX;
    while !joined.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", escape(&joined[..end]))
}

fn human_bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f >= KIB * KIB {
        format!("{:.1} MiB", f / KIB / KIB)
    } else if f >= KIB {
        format!("{:.0} KiB", f / KIB)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cfg() -> CtxGuardConfig {
        CtxGuardConfig {
            max_cat_bytes: 1024,
            ..CtxGuardConfig::for_home(Path::new("/home/dev"))
        }
    }

    fn run(cmd: &str) -> Verdict {
        check_command(cmd, Some(Path::new("/home/dev/proj")), &cfg())
    }

    #[track_caller]
    fn denied(cmd: &str, needle: &str) {
        match run(cmd) {
            Verdict::Deny(r) => assert!(r.contains(needle), "{cmd:?}: {r}"),
            Verdict::Allow => panic!("{cmd:?} should be denied"),
        }
    }

    #[track_caller]
    fn allowed(cmd: &str) {
        if let Verdict::Deny(r) = run(cmd) {
            panic!("{cmd:?} should be allowed: {r}");
        }
    }

    #[test]
    fn dotenv_through_every_reader() {
        for cmd in [
            "cat .env",
            "cat ./.env.local",
            "less config/.env.production",
            "head -n 5 .env",
            "tail -f .env",
            "grep KEY .env",
            "grep -i 'api' .env.development",
            "rg SECRET .env",
            "sed -n '1,5p' .env",
            "awk -F= '{print $2}' .env",
            "base64 .env",
            "base64 < .env",
            "cat < .env",
            "xxd .envrc",
            "strings prod.env",
            "cat .env*",
            "cat .env | grep KEY",
            "cd app && cat .env",
            "sudo cat /srv/app/.env",
            "env FOO=1 cat .env",
            "bash -c 'cat .env'",
            "sh -lc \"head .env\"",
            "eval cat .env",
            "echo $(cat .env)",
            "diff .env .env.example",
            "(cat .env)",
            "cat .ENV",
            "cat .envs/.production/.postgres",
            "jq . .env.json",
        ] {
            denied(cmd, "dotenv");
        }
    }

    #[test]
    fn dotenv_uses_that_print_nothing_are_allowed() {
        for cmd in [
            "cat .env.example",
            "cp .env.example .env",
            "grep -q '^API_KEY=' .env",
            "grep -c = .env",
            "grep -l KEY .env .env.local",
            "cat .env | wc -l",
            "sha256sum .env",
            "cat .env > /tmp/backup",
            "cat .env >/dev/null",
            "export $(grep -v '^#' .env | xargs)",
            "set -a; . .env; set +a",
            "source .env && npm start",
            "docker run --env-file .env app",
            "ls -la .env",
            "test -f .env && echo present",
            "sed -i 's/DEBUG=1/DEBUG=0/' .env",
            "grep .env .gitignore",
            "echo '.env' >> .gitignore",
            "git check-ignore .env",
            "TOKEN=$(cat .env | grep TOKEN | cut -d= -f2) && curl -H \"x: $TOKEN\" localhost",
            "cat .env.sample .env.template",
            "vim .env",
        ] {
            allowed(cmd);
        }
    }

    #[test]
    fn ssh_keys_and_directory() {
        denied("cat ~/.ssh/id_rsa", "SSH private key");
        denied("cat $HOME/.ssh/id_ed25519", "SSH private key");
        denied("cat /home/dev/.ssh/id_ecdsa", "SSH private key");
        denied("cat id_rsa", "SSH private key");
        denied("base64 -w0 ~/.ssh/id_ed25519_sk", "SSH private key");
        denied("cat ~/.ssh/config", "SSH directory");
        denied("cat ~/.ssh/*", "SSH");
        denied("grep -r Host ~/.ssh", "SSH");
        allowed("cat ~/.ssh/id_ed25519.pub");
        allowed("cat ~/.ssh/*.pub");
        allowed("cat ~/.ssh/known_hosts");
        allowed("ssh-keygen -lf ~/.ssh/id_rsa");
        allowed("ls -la ~/.ssh");
        allowed("ssh-add ~/.ssh/id_ed25519");
        allowed("chmod 600 ~/.ssh/id_rsa");
    }

    #[test]
    fn key_files_and_credential_stores() {
        denied("cat server.pem", "key or certificate");
        denied("cat certs/tls.key", "key or certificate");
        denied("head -c 100 bundle.p12", "key or certificate");
        denied("cat ~/.aws/credentials", "AWS credentials");
        denied("cat ${HOME}/.aws/credentials", "AWS credentials");
        denied("grep aws_secret ~/.aws/credentials", "AWS credentials");
        denied("cat ~/.aws/*", "AWS credentials");
        denied("cat ~/.netrc", "stored login passwords");
        denied("cat ~/.git-credentials", "stored login passwords");
        denied("cat ~/.docker/config.json", "Docker");
        denied("jq '.auths' ~/.docker/config.json", "Docker");
        denied("cat ~/.kube/config", "stored credentials");
        denied("cat ~/Library/Keychains/login.keychain-db", "keychain");
        allowed("cat ~/.aws/config");
        allowed("aws configure list");
        allowed("openssl x509 -in server.pem -noout -subject");
        allowed("ls certs/*.pem");
        allowed("cp server.key /etc/nginx/");
        allowed("cat .npmrc");
    }

    #[test]
    fn secrets_read_the_way_the_shell_reads_them() {
        for (cmd, needle) in [
            ("cp .env /dev/stdout", "dotenv"),
            ("cp -v config/.env.production /dev/tty", "dotenv"),
            ("dd if=.env.production", "dotenv"),
            ("dd if=.env of=/dev/stdout status=none", "dotenv"),
            ("dd < .env", "dotenv"),
            ("tee < .env", "dotenv"),
            ("tee /dev/null < .env", "dotenv"),
            ("xargs < .env", "dotenv"),
            ("echo \"$(<.env)\"", "dotenv"),
            ("printf '%s\\n' \"$(< .env.local)\"", "dotenv"),
            ("while read -r l; do echo \"$l\"; done < .env", "dotenv"),
            (
                "while IFS= read -r line; do printf '%s\\n' \"$line\"; done < ~/.aws/credentials",
                "AWS",
            ),
            ("openssl rsa -in server.key -text", "key or certificate"),
            (
                "openssl rsa -in server.key -noout -text",
                "key or certificate",
            ),
            ("openssl pkey -in ~/.ssh/id_rsa", "SSH private key"),
            ("openssl pkcs12 -in bundle.p12 -nodes", "key or certificate"),
            ("openssl genrsa 2048", "newly generated private key"),
            (
                "gpg --armor --export-secret-keys me@example.com",
                "GPG secret keys",
            ),
            ("cat ~/.cargo/credentials.toml", "stored credentials"),
            ("cat ~/.cargo/credentials", "stored credentials"),
            (
                "cat ~/.terraform.d/credentials.tfrc.json",
                "stored credentials",
            ),
            ("cat ~/.azure/accessTokens.json", "stored credentials"),
            ("jq . ~/.azure/msal_token_cache.json", "stored credentials"),
            ("cat ~/.config/gh/hosts.yml", "stored credentials"),
            ("cat ~/.docker/config.json", "Docker"),
            ("cat ~/.kube/config", "stored credentials"),
            ("cat ~/.git-credentials", "stored login passwords"),
            ("cat ~/.pgpass", "stored login passwords"),
            ("cat ~/.vault-token", "stored credentials"),
            ("cat ~/.config/containers/auth.json", "Docker"),
            ("cat ~/.pulumi/credentials.json", "stored credentials"),
        ] {
            denied(cmd, needle);
        }
        for cmd in [
            "cp .env .env.backup",
            "cp .env /tmp/keep",
            "cp .env.example /dev/stdout",
            "dd if=.env of=/tmp/copy",
            "dd if=/dev/zero of=disk.img bs=1M count=1",
            "tee out.log < input.txt",
            "while read -r k v; do export \"$k=$v\"; done < .env",
            "while read -r l; do echo \"$l\"; done < .env > /dev/null",
            "while read -r f; do echo \"$f\"; done < files.txt",
            "export FOO=\"$(<.env.example)\"",
            "KEY=$(<.env)",
            "openssl x509 -in server.pem -noout -subject -dates",
            "openssl x509 -in cert.crt -text -noout",
            "openssl pkey -in server.key -pubout",
            "openssl rsa -in server.key -check -noout",
            "openssl rsa -in server.key -out server.nopass.key",
            "openssl genrsa -out server.key 2048",
            "openssl req -new -key server.key -out server.csr",
            "gpg --armor --export me@example.com",
            "gpg --export-secret-keys --output backup.gpg me@example.com",
            "ls ~/.cargo",
            "cat ~/.cargo/config.toml",
            "cat ~/.azure/config",
        ] {
            allowed(cmd);
        }
    }

    #[test]
    fn keychain_queries() {
        denied("security find-generic-password -s github -w", "keychain");
        denied(
            "security find-internet-password -gs example.com",
            "keychain",
        );
        denied("security dump-keychain", "keychain");
        denied("secret-tool lookup service github", "keyring");
        allowed("security find-generic-password -s github");
        allowed("security list-keychains");
        allowed("keryx-hooks security check-input --runtime keryx");
    }

    #[test]
    fn floods() {
        denied("grep -r password /", "whole filesystem");
        denied("grep -rn TODO ~", "home directory");
        denied("grep -R foo $HOME", "home directory");
        denied("rg foo /", "whole filesystem");
        denied("rg foo ~", "home directory");
        denied("find / -name '*.conf'", "whole filesystem");
        denied("find ~ -type f", "home directory");
        denied("find $HOME -name node_modules", "home directory");
        denied("cd / && find . -name x", "whole filesystem");
        denied("cd && grep -r x .", "home directory");
        denied("ls -R /", "whole filesystem");
        denied("ls -laR ~", "home directory");
        denied("tree ~", "home directory");
        denied(
            "sudo find / -name libssl.so 2>/dev/null",
            "whole filesystem",
        );
        denied("find /home -name '*.log'", "every user");
    }

    #[test]
    fn bounded_searches_are_allowed() {
        for cmd in [
            "grep -r foo .",
            "grep -rn TODO src/",
            "rg foo",
            "find . -name '*.rs'",
            "find / -maxdepth 2 -name foo",
            "find / -name libssl.so -quit",
            "find / -name x 2>/dev/null | head -n 20",
            "find ~ -name '*.pyc' -delete",
            "find ~/code -name Cargo.toml",
            "grep -r foo / | head",
            "grep -rq foo ~",
            "grep -rl foo / | wc -l",
            "rg --max-depth 2 foo ~",
            "find / -name '*.conf' > /tmp/confs.txt",
            "ls -la /",
            "ls ~",
            "tree -L 2 ~",
            "du -sh ~",
            "for f in $(find / -name '*.so'); do :; done",
            "(find / -name x) | head -5",
        ] {
            allowed(cmd);
        }
    }

    #[test]
    fn big_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.log"), vec![b'x'; 4096]).unwrap();
        std::fs::write(dir.path().join("small.txt"), b"hi").unwrap();
        let check = |c: &str| check_command(c, Some(dir.path()), &cfg());
        match check("cat big.log") {
            Verdict::Deny(r) => assert!(
                r.contains("4 KiB") && r.contains("head -n 200 big.log"),
                "{r}"
            ),
            Verdict::Allow => panic!("cat big.log should be denied"),
        }
        assert!(matches!(
            check(&format!("cat {}/big.log", dir.path().display())),
            Verdict::Deny(_)
        ));
        for ok in [
            "cat small.txt",
            "cat big.log | head",
            "cat big.log | grep x",
            "tail -n 50 big.log",
            "cat big.log > copy",
            "cat missing.txt",
            "wc -l big.log",
        ] {
            assert_eq!(check(ok), Verdict::Allow, "{ok}");
        }
    }

    #[test]
    fn payload_shapes() {
        let deny = |p: Value| matches!(check_with(&p, &cfg()), Verdict::Deny(_));
        assert!(deny(
            json!({"toolName": "Bash", "toolInput": {"command": "cat .env"}})
        ));
        assert!(deny(
            json!({"tool_name": "Bash", "tool_input": {"command": "cat .env"}})
        ));
        assert!(deny(
            json!({"tool_name": "run_shell_command", "tool_input": {"command": "cat .env"}})
        ));
        assert!(deny(
            json!({"hook_event_name": "beforeShellExecution", "command": "cat .env", "cwd": "/p"})
        ));
        assert!(deny(
            json!({"toolName": "bash", "toolArgs": {"command": "cat .env"}})
        ));
        assert!(deny(
            json!({"tool_name": "shell", "tool_input": {"command": ["bash", "-lc", "cat .env"]}})
        ));
        assert!(deny(
            json!({"tool_name": "shell", "tool_input": {"command": ["cat", ".env"]}})
        ));
        assert!(!deny(
            json!({"tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\n cat .env\n*** End Patch"}})
        ));
        assert!(!deny(
            json!({"toolName": "Bash", "toolInput": {"command": "cargo test"}})
        ));
        assert!(!deny(json!({"toolName": "Bash"})));
        // Self-protection reads every shape too.
        assert!(deny(
            json!({"tool_name": "shell", "tool_input": {"command": ["bash", "-lc", "keryx-hooks untrust"]}})
        ));
        assert!(deny(
            json!({"tool_name": "shell", "tool_input": {"command": ["keryx-hooks", "disable", "keryx.ctx-guard", "--user"]}})
        ));
        assert!(deny(
            json!({"hook_event_name": "beforeShellExecution", "command": "KERYX_HOOKS=off claude", "cwd": "/p"})
        ));
        assert!(!deny(
            json!({"tool_name": "shell", "tool_input": {"command": ["keryx-hooks", "list"]}})
        ));
    }

    #[test]
    fn reasons_are_escaped() {
        let Verdict::Deny(r) = run("cat '.env\u{1b}[2J'") else {
            panic!()
        };
        assert!(r.contains("\\x1B[2J") && !r.contains('\u{1b}'), "{r}");
    }

    #[test]
    fn runtime_toml_sets_the_cat_limit() {
        use crate::settings::Settings;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("runtime.toml");
        let limit = |p: &Path| CtxGuardConfig::from_settings(&Settings::read(p)).max_cat_bytes;
        assert_eq!(limit(&p), DEFAULT_MAX_CAT_BYTES);
        std::fs::write(&p, "[ctx_guard]\nmax_cat_bytes = 10\n").unwrap();
        assert_eq!(limit(&p), 10);
    }

    #[test]
    fn random_command_soup_never_panics() {
        let mut tokens: Vec<&str> = "cat grep rg -r -e -f -q find / ~ .env id_rsa | && ; $( ) ( ` ' \" > < 2>&1 \
             head bash -c sudo -u timeout env x=1 -- security find-generic-password -w cd .. { } << EOF ls \
             -R tree du -a -maxdepth eval xargs wc jq --arg sed -i awk keryx-hooks untrust doctor --fix \
             KERYX_HOOKS=off alias kh=keryx-hooks ln -s cp mv rm tee ~/.keryx/hooks.json .claude/settings.json \
             python3 find -exec {} \\; $(which $K"
            .split_whitespace()
            .collect();
        tokens.push("\n");
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let n = (next() % 14) as usize;
            let mut cmd = String::new();
            for _ in 0..n {
                cmd.push_str(tokens[(next() % tokens.len() as u64) as usize]);
                if next() % 4 != 0 {
                    cmd.push(' ');
                }
            }
            let _ = run(&cmd);
        }
    }

    #[test]
    fn keryx_trust_and_enforcement_changes_are_refused_by_any_path() {
        for cmd in [
            "keryx-hooks untrust",
            "keryx-hooks trust --yes",
            "keryx-hooks trust --force --yes",
            "keryx-hooks disable keryx.ctx-guard --user --acknowledge-gate-risk",
            "keryx-hooks enable team.lint",
            "keryx-hooks install claude-code",
            "keryx-hooks uninstall",
            "keryx-hooks import ./hooks",
            "keryx-hooks doctor --fix",
            "keryx-hooks doctor --json --fix",
            "/usr/local/bin/keryx-hooks untrust",
            "~/.cargo/bin/keryx-hooks trust --yes",
            "$HOME/.cargo/bin/keryx-hooks trust --yes",
            "./target/release/keryx-hooks disable keryx.ctx-guard --user",
            "../keryx/target/debug/keryx-hooks uninstall claude-code",
            "'keryx-hooks' untrust",
            "k\\eryx-hooks untrust",
            "cargo run --bin keryx-hooks -- untrust",
            "cargo run -q -p keryx-hooks -- disable keryx.ctx-guard --user",
        ] {
            denied(cmd, "only a person at a terminal");
        }
    }

    #[test]
    fn keryx_changes_are_refused_inside_wrappers_and_nested_shells() {
        for cmd in [
            "sh -c 'keryx-hooks untrust'",
            "bash -lc \"keryx-hooks trust --yes\"",
            "bash -c 'bash -c \"keryx-hooks untrust\"'",
            "eval keryx-hooks untrust",
            "eval \"$(echo keryx-hooks untrust)\"; keryx-hooks untrust",
            "env keryx-hooks untrust",
            "env -i PATH=/usr/bin keryx-hooks untrust",
            "env -S 'keryx-hooks untrust'",
            "sudo keryx-hooks uninstall",
            "sudo -u me keryx-hooks trust --yes",
            "nohup keryx-hooks untrust &",
            "timeout 5 keryx-hooks untrust",
            "command keryx-hooks untrust",
            "exec keryx-hooks untrust",
            "nice -n 5 keryx-hooks untrust",
            "setsid keryx-hooks untrust",
            "echo untrust | xargs keryx-hooks",
            "echo ctx | xargs -n1 keryx-hooks disable",
            "xargs -I{} keryx-hooks {} < cmds",
            "find . -maxdepth 0 -exec keryx-hooks untrust \\;",
            "watch -n 1 keryx-hooks untrust",
            "su -c 'keryx-hooks untrust' me",
            "script -qc 'keryx-hooks untrust' /dev/null",
            "flock /tmp/l keryx-hooks untrust",
            "true && keryx-hooks untrust",
            "cd /tmp; keryx-hooks untrust",
            "(keryx-hooks untrust)",
            "echo $(keryx-hooks untrust)",
            "keryx-hooks untrust > /dev/null 2>&1",
            "alias kh=keryx-hooks; kh untrust",
            "K=/usr/local/bin/keryx-hooks; $K untrust",
            "\"$(command -v keryx-hooks)\" untrust",
            "$(which keryx-hooks) trust --yes",
            "$KERYX_BIN untrust",
            "kh() { keryx-hooks \"$@\"; }; kh untrust",
            "keryx-hooks $SUB",
            "echo 'keryx-hooks untrust' | sh",
            "bash <<< 'keryx-hooks untrust'",
            "bash <<'EOF'\nkeryx-hooks untrust\nEOF",
            "python3 -c 'import subprocess; subprocess.run([\"keryx-hooks\", \"untrust\"])'",
            "perl -e 'system(\"keryx-hooks disable keryx.ctx-guard --user\")'",
            "node -e 'require(\"child_process\").execSync(\"keryx-hooks untrust\")'",
        ] {
            denied(cmd, "only a person at a terminal");
        }
    }

    #[test]
    fn keryx_hooks_off_for_a_child_is_refused() {
        for cmd in [
            "KERYX_HOOKS=off claude -p 'do it'",
            "KERYX_HOOKS=0 codex exec 'x'",
            "env KERYX_HOOKS=off claude",
            "env -u FOO KERYX_HOOKS=off gemini",
            "sudo KERYX_HOOKS=off claude",
            "export KERYX_HOOKS=off",
            "export KERYX_HOOKS=off; claude -p x",
            "declare -x KERYX_HOOKS=off",
            "KERYX_HOOKS=off; export KERYX_HOOKS; claude",
            "KERYX_HOOKS=$OFF claude",
            "setenv KERYX_HOOKS off",
            "launchctl setenv KERYX_HOOKS off",
            "bash -c 'KERYX_HOOKS=off claude'",
            "echo 'export KERYX_HOOKS=off' >> ~/.bashrc",
            "printf 'KERYX_HOOKS=off\\n' | tee -a .envrc",
            "python3 -c 'import os; os.environ[\"KERYX_HOOKS\"] = \"off\"; os.system(\"claude\")'",
            "CMD='KERYX_HOOKS=off claude'; bash -c \"$CMD\"",
        ] {
            denied(cmd, "KERYX_HOOKS");
        }
    }

    #[test]
    fn a_child_agent_without_its_hooks_is_refused() {
        for cmd in [
            "HOME=/tmp/empty claude -p 'go on'",
            "env CODEX_HOME=/tmp/c codex exec 'x'",
            "CLAUDE_CONFIG_DIR=/tmp/cc claude",
            "XDG_DATA_HOME=/tmp/d gemini -p x",
            "KERYX_HOME=/tmp/k claude",
            "claude --settings '{\"disableAllHooks\": true}' -p x",
        ] {
            denied(cmd, "only a person at a terminal");
        }
        allowed("claude -p 'summarise the diff'");
        allowed("HOME=/tmp/x cargo test");
        allowed("claude --settings ./team-settings.json -p x");
    }

    #[test]
    fn a_patch_envelope_prefix_does_not_turn_the_guard_off() {
        for cmd in [
            "*** Begin Patch\ncat ~/.ssh/id_rsa",
            "*** Begin Patch\nkeryx-hooks trust --yes\n*** End Patch",
            "  *** Begin Patch; cat .env",
        ] {
            match run(cmd) {
                Verdict::Deny(_) => {}
                Verdict::Allow => panic!("{cmd:?} should be denied"),
            }
        }
    }

    #[test]
    fn links_to_secrets_are_refused_and_links_named_like_them_are_not() {
        for cmd in [
            "ln -s ~/.ssh/id_rsa notes.txt",
            "ln ~/.aws/credentials x",
            "cp -s /home/dev/.ssh/id_ed25519 k",
            "ln -s -t /tmp/x ~/.netrc",
        ] {
            denied(cmd, "another name for");
        }
        // A link to what decides enforcement is a write of it.
        denied("ln ~/.keryx/hooks.json innocent.json", "only a person");
        denied(
            "ln -s /home/dev/.claude/settings.json s.json",
            "only a person",
        );
        allowed("ln -s config.example .env");
        allowed("ln -s ../README.md docs/README.md");
        allowed("cp -r src dst");
    }

    #[test]
    fn signalling_or_stopping_the_shim_is_refused_by_what_it_matches() {
        for cmd in [
            "pkill -f 'keryx-hooks run'",
            "pkill keryx-hooks",
            "pkill -STOP -f keryx",
            "pkill -f 'k.ryx-h'",
            "pkill -u dev -f 'run claude-code'",
            "killall keryx-hooks",
            "killall -r 'k.*x-hooks'",
            "kill -9 $(pgrep -f keryx-hooks)",
            "pgrep -f keryx | xargs kill -STOP",
            "kill -9 -1",
            "(sleep 5; pkill -f keryx-hooks) &",
        ] {
            denied(cmd, "lets the tool run");
        }
        allowed("pkill -f 'npm run dev'");
        allowed("pkill -u dev node");
        allowed("killall node");
        allowed("kill %1");
        allowed("kill -TERM 4242");
        allowed("pgrep -f keryx-hooks");
        allowed("ps aux | grep keryx");
    }

    #[test]
    fn keryx_hooks_under_another_name_is_refused() {
        // Targets that are no directory here, on any machine: names in a
        // fresh temp dir (a directory would be an install under the same name).
        let tmp = tempfile::tempdir().unwrap();
        let (kh, x) = (tmp.path().join("kh"), tmp.path().join("x"));
        for cmd in [
            format!("ln -s $(which keryx-hooks) {}", kh.display()),
            "ln -s ~/.cargo/bin/keryx-hooks ~/bin/kh".to_owned(),
            format!(
                "cp /usr/local/bin/keryx-hooks {x} && {x} untrust",
                x = x.display()
            ),
            "CMD='keryx-hooks untrust'; bash -c \"$CMD\"".to_owned(),
            "printf '%s' keryx-hooks\\ untrust | bash".to_owned(),
        ] {
            denied(&cmd, "only a person at a terminal");
        }
        allowed("cp target/release/keryx-hooks ~/.cargo/bin/keryx-hooks");
        allowed("cp target/release/keryx-hooks ~/.cargo/bin/");
        allowed("install -m 755 target/release/keryx-hooks /usr/local/bin/");
    }

    #[test]
    fn a_keryx_subcommand_not_known_to_only_read_is_refused() {
        // Not a list of what changes: every word in a subcommand's place
        // that is not a reading subcommand, including ones added later.
        for cmd in [
            "keryx-hooks allow-once 3f9a21c0",
            "keryx-hooks init --scope user --force",
            "keryx-hooks import claude-code",
            "keryx-hooks --profile relaxed trust --yes",
            "keryx-hooks some-future-subcommand",
        ] {
            denied(cmd, "only a person at a terminal");
        }
    }

    #[test]
    fn reading_keryx_commands_and_mentions_stay_allowed() {
        for cmd in [
            "keryx-hooks list",
            "keryx-hooks list --json",
            "keryx-hooks validate --ci",
            "keryx-hooks test team.lint --event PreToolUse",
            "keryx-hooks status",
            "keryx-hooks doctor",
            "keryx-hooks doctor --json",
            "keryx-hooks log",
            "keryx-hooks explain keryx.ctx-guard",
            "keryx-hooks --help",
            "keryx-hooks --version",
            "keryx-hooks help trust",
            "keryx-hooks trust --help",
            "keryx-hooks disable -h",
            "keryx-hooks install --dry-run claude-code",
            "keryx-hooks uninstall --dry-run",
            "keryx-hooks import claude-code --dry-run",
            "keryx-hooks hosts",
            "keryx-hooks completions bash",
            "~/.cargo/bin/keryx-hooks list",
            "./target/debug/keryx-hooks status --json",
            "keryx-hooks run claude-code PreToolUse < payload.json",
            "keryx-hooks security check-input --runtime keryx",
            "cargo run --bin keryx-hooks -- list",
            "cargo run -- untrust",
            "which keryx-hooks",
            "command -v keryx-hooks",
            "echo 'run keryx-hooks trust to review the hooks'",
            "git commit -m 'keryx-hooks trust: show the digest'",
            "grep -rn 'keryx-hooks untrust' docs/",
            "grep keryx ~/.claude/settings.json",
            "cat ~/.claude/settings.json",
            "jq .hooks ~/.claude/settings.json",
            "cat ~/.keryx/hooks.json",
            "cat ~/.local/share/keryx/hook-trust.json",
            "echo $KERYX_HOOKS",
            "env | grep KERYX_HOOKS",
            "KERYX_HOOKS=on claude -p x",
            "unset KERYX_HOOKS",
            "git commit -m 'docs: KERYX_HOOKS=off prints one line'",
            "cat <<EOF > notes.md\nkeryx-hooks untrust\nEOF",
            "bash scripts/check.sh",
            "sh ./configure",
            "python3 -c 'print(1)'",
            "$PKG install ripgrep && keryx-hooks list",
            "\"$PYTHON\" -m pip install keryx-hooks",
        ] {
            allowed(cmd);
        }
    }

    #[test]
    fn writes_to_what_decides_enforcement_are_refused() {
        for (cmd, what) in [
            ("echo '{}' > ~/.keryx/hooks.json", "hooks file"),
            ("echo '{}' >> $HOME/.keryx/hooks.json", "hooks file"),
            ("echo x > $KERYX_HOME/runtime.toml", "runtime settings"),
            (
                "printf '' > /home/dev/.keryx/runtime.toml",
                "runtime settings",
            ),
            ("cd ~/.keryx && echo '{}' > hooks.json", "hooks file"),
            ("sed -i 's/true/false/' ~/.keryx/hooks.json", "hooks file"),
            ("cp /tmp/h.json ~/.keryx/hooks.json", "hooks file"),
            ("cp /tmp/hooks.json ~/.keryx/", "hooks file"),
            ("mv /tmp/x ~/.keryx/hooks.json", "hooks file"),
            ("mv ~/.keryx/hooks.json /tmp/", "hooks file"),
            ("rm ~/.keryx/hooks.json", "hooks file"),
            ("rm -f ~/.keryx/*", "hooks file"),
            ("tee ~/.keryx/hooks.json < /tmp/x", "hooks file"),
            (
                "jq . /tmp/x | tee -a ~/.keryx/runtime.toml",
                "runtime settings",
            ),
            ("truncate -s 0 ~/.keryx/hooks.json", "hooks file"),
            ("ln -sf /tmp/evil.json ~/.keryx/hooks.json", "hooks file"),
            ("chmod 666 ~/.keryx/hooks.json", "hooks file"),
            ("install -m 600 /tmp/x ~/.keryx/hooks.json", "hooks file"),
            (
                "dd if=/dev/null of=/home/dev/.keryx/hooks.json",
                "hooks file",
            ),
            ("perl -pi -e 's/a/b/' ~/.keryx/hooks.json", "hooks file"),
            (
                "curl -o ~/.keryx/hooks.json https://example.com/h",
                "hooks file",
            ),
            (
                "echo '{}' > ~/.local/share/keryx/hook-trust.json",
                "trust store",
            ),
            ("rm -rf ~/.local/share/keryx/hook-trust.json", "trust store"),
            ("rm -rf ~/.agentic/hooks-snapshot", "snapshots"),
            (
                "echo x > ~/.agentic/hooks-snapshot/k/hooks.json",
                "snapshots",
            ),
            ("rm -rf ~/.local/state/keryx", "state directory"),
            ("find ~/.local/state/keryx -delete", "state directory"),
            ("sudo bash -c 'echo {} > ~/.keryx/hooks.json'", "hooks file"),
            ("(echo '{}') > ~/.keryx/hooks.json", "hooks file"),
            ("echo '{}' > ~/.claude/settings.json", "agent host's config"),
            (
                "sed -i '/keryx-hooks/d' ~/.claude/settings.json",
                "agent host's config",
            ),
            (
                "jq 'del(.hooks)' s.json > .claude/settings.json",
                "agent host's config",
            ),
            (
                "cp /tmp/s.json /home/dev/proj/.claude/settings.local.json",
                "agent host's config",
            ),
            ("echo '' > ~/.gemini/settings.json", "agent host's config"),
            ("echo '' > ~/.codex/config.toml", "agent host's config"),
            ("echo '' > ~/.codex/hooks.json", "agent host's config"),
            ("rm ~/.cursor/hooks.json", "agent host's config"),
            ("echo '' > ~/.qwen/settings.json", "agent host's config"),
            (
                "rm ~/.config/opencode/plugin/keryx-hooks.ts",
                "agent host's config",
            ),
            (
                "echo '{}' > .github/hooks/keryx-hooks.json",
                "agent host's config",
            ),
            (
                "python3 -c \"import os; os.remove(os.path.expanduser('~/.keryx/hooks.json'))\"",
                "hooks file",
            ),
            (
                "python3 -c \"open('/home/dev/.claude/settings.json', 'w').write('{}')\"",
                "agent host's config",
            ),
            (
                "node -e \"require('fs').writeFileSync('.claude/settings.json', '{}')\"",
                "agent host's config",
            ),
        ] {
            denied(cmd, what);
        }
    }

    #[test]
    fn the_binary_hosts_run_is_not_replaced_or_removed() {
        let cfg = CtxGuardConfig {
            binary: Some(PathBuf::from("/home/dev/.cargo/bin/keryx-hooks")),
            ..cfg()
        };
        let run = |c: &str| check_command(c, Some(Path::new("/home/dev/proj")), &cfg);
        for cmd in [
            "rm ~/.cargo/bin/keryx-hooks",
            "cp /tmp/fake ~/.cargo/bin/keryx-hooks",
            "echo '#!/bin/sh' > ~/.cargo/bin/keryx-hooks",
            "chmod -x /home/dev/.cargo/bin/keryx-hooks",
            "mv ~/.cargo/bin/keryx-hooks /tmp/",
        ] {
            assert!(
                matches!(run(cmd), Verdict::Deny(ref r) if r.contains("binary")),
                "{cmd}: {:?}",
                run(cmd)
            );
        }
        // An upgrade puts a keryx-hooks in its place.
        for cmd in [
            "cp target/release/keryx-hooks ~/.cargo/bin/keryx-hooks",
            "install -m 755 ./keryx-hooks /home/dev/.cargo/bin/keryx-hooks",
            "rm -rf target",
        ] {
            assert_eq!(run(cmd), Verdict::Allow, "{cmd}");
        }
    }

    #[test]
    fn a_relative_write_is_judged_without_a_cwd_in_the_payload() {
        // Without a project the canonical payload has no cwd; the tool runs
        // where the shim does.
        let v = check_command("echo '{}' > .claude/settings.json", None, &cfg());
        assert!(
            matches!(&v, Verdict::Deny(r) if r.contains("agent host's config")),
            "{v:?}"
        );
    }

    #[test]
    fn ordinary_writes_and_reads_of_those_files_stay_allowed() {
        for cmd in [
            "echo x > notes.txt",
            "cp ~/.keryx/hooks.json /tmp/backup.json",
            "diff ~/.keryx/hooks.json /tmp/backup.json",
            "cat ~/.claude/settings.json | jq .permissions",
            "grep -n keryx-hooks ~/.claude/settings.json",
            "cp .claude/settings.json /tmp/settings.bak",
            "rm -rf node_modules target",
            "rm -rf ~/.cache/pip",
            "rm -rf .github",
            "mkdir -p .claude",
            "echo '{}' > /tmp/settings.json",
            "sed -i 's/a/b/' src/main.rs",
            "git commit -am 'update .claude/settings.json'",
            "python3 -c \"import json; print(json.load(open('/home/dev/.claude/settings.json')))\"",
            "python3 -c \"open('out.txt', 'w').write('x')\"",
        ] {
            allowed(cmd);
        }
    }

    #[test]
    fn read_like_tools_are_guarded_for_secret_paths() {
        let deny = |p: Value| matches!(check_with(&p, &cfg()), Verdict::Deny(_));
        assert!(deny(
            json!({"toolName": "Read", "toolInput": {"file_path": "/home/dev/.ssh/id_rsa"}})
        ));
        assert!(deny(
            json!({"toolName": "Read", "toolInput": {"file_path": "/home/dev/proj/.env"}})
        ));
        assert!(deny(
            json!({"toolName": "Grep", "toolInput": {"pattern": "KEY", "path": "/home/dev/.aws/credentials", "output_mode": "content"}})
        ));
        assert!(deny(
            json!({"tool_name": "read_many_files", "tool_input": {"paths": ["README.md", "/home/dev/.netrc"]}})
        ));
        assert!(deny(
            json!({"tool_name": "read_file", "tool_input": {"absolute_path": "/home/dev/.ssh/id_ed25519"}})
        ));
        assert!(deny(
            json!({"toolName": "Grep", "toolInput": {"pattern": "KEY", "glob": "**/.env*", "output_mode": "content"}})
        ));
        assert!(deny(
            json!({"tool_name": "read_many_files", "tool_input": {"include": ["src/**", "*.pem"]}})
        ));
        assert!(!deny(
            json!({"toolName": "Grep", "toolInput": {"pattern": "fn main", "glob": "*.rs"}})
        ));
        assert!(!deny(
            json!({"toolName": "Read", "toolInput": {"file_path": "/home/dev/proj/src/main.rs"}})
        ));
        assert!(!deny(
            json!({"toolName": "Read", "toolInput": {"file_path": "/home/dev/.ssh/id_rsa.pub"}})
        ));
        assert!(!deny(
            json!({"toolName": "Grep", "toolInput": {"pattern": "KEY", "path": "/home/dev/proj/.env", "output_mode": "files_with_matches"}})
        ));
        assert!(!deny(
            json!({"toolName": "Read", "toolInput": {"file_path": "/home/dev/.claude/settings.json"}})
        ));
    }

    #[test]
    fn glob_matching() {
        assert!(glob_match("*", "credentials"));
        assert!(glob_match("cred*", "credentials"));
        assert!(!glob_match("*", ".netrc"));
        assert!(glob_match(".n*", ".netrc"));
        assert!(!glob_match("config", "credentials"));
        assert!(glob_match("c*t*s", "credentials") && !glob_match("c*x", "credentials"));
        assert!(glob_match("?redential?", "credentials") && glob_match("**", "x"));
        // Many stars against a long name: answered at once, not exponentially.
        let stars = "*a".repeat(30) + "b";
        assert!(!glob_match(&stars, &"a".repeat(60)));
    }
}
