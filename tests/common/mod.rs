//! The test builder: a hermetic home, files to seed, a command to run, and
//! stdout, stderr and exit status checked together, in a snapshot of the
//! whole output ([`cmd_snapshot!`]) with what differs between runs (temp
//! paths, times, durations, snapshot keys, the version) replaced by
//! placeholders ([`Filters`]).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_keryx-hooks");

/// The `PATH` of [`Env::fixed`]: the system directories, where `sh`, `git`
/// and `bwrap` are.
pub const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A temp home with a project directory (a git toplevel) inside it.
pub struct Env {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub extra_env: Vec<(String, String)>,
}

impl Env {
    pub fn new() -> Env {
        Env::in_dir(tempfile::tempdir().unwrap())
    }

    /// A hermetic home whose environment is the same on every machine:
    /// `PATH` is the system's, not the one the tests run with. For
    /// snapshots of whole outputs.
    pub fn fixed() -> Env {
        Env::new().env("PATH", SYSTEM_PATH)
    }

    /// A hermetic home in `tmp` (e.g. one under /var/tmp, which a sandboxed
    /// hook sees; the sandbox's /tmp is its own).
    pub fn in_dir(tmp: tempfile::TempDir) -> Env {
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let home = root.join("home");
        let project = root.join("work/proj");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(project.join(".git")).unwrap();
        Env {
            tmp,
            home,
            project,
            extra_env: Vec::new(),
        }
    }

    pub fn keryx_home(&self) -> PathBuf {
        self.home.join(".keryx")
    }

    pub fn user_hooks(&self) -> PathBuf {
        self.keryx_home().join("hooks.json")
    }

    pub fn project_hooks(&self) -> PathBuf {
        self.project.join(".metaproject/hooks.json")
    }

    /// Claude Code's user settings, `~/.claude/settings.json`.
    pub fn claude_settings(&self) -> PathBuf {
        self.home.join(".claude/settings.json")
    }

    /// Where `install` keeps the snapshots (`$KERYX_SNAPSHOT_ROOT`).
    pub fn snapshot_root(&self) -> PathBuf {
        self.home.join(".agentic/hooks-snapshot")
    }

    /// The key of `$KERYX_HOME`'s snapshot.
    pub fn snapshot_key(&self) -> String {
        snapshot_key_of(&self.keryx_home())
    }

    /// `$KERYX_HOME`'s snapshot.
    pub fn snapshot_dir(&self) -> PathBuf {
        self.snapshot_root().join(self.snapshot_key())
    }

    /// The state `run` keeps for `host`'s session `session`.
    pub fn session_dir(&self, host: &str, session: &str) -> PathBuf {
        self.home
            .join(".local/state/keryx/sessions")
            .join(format!("{host}-{session}"))
    }

    /// The session's `records.jsonl`, each line parsed (a line that is not
    /// JSON fails the test); empty when there is none.
    #[track_caller]
    pub fn records(&self, host: &str, session: &str) -> Vec<Value> {
        let path = self.session_dir(host, session).join("records.jsonl");
        json_lines(&std::fs::read_to_string(&path).unwrap_or_default())
    }

    /// Writes `content` at `path`, creating parents.
    pub fn write(&self, path: impl AsRef<Path>, content: impl AsRef<[u8]>) -> PathBuf {
        let path = path.as_ref();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        path.to_path_buf()
    }

    /// Writes an executable script.
    pub fn script(&self, path: impl AsRef<Path>, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = self.write(path, body);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    pub fn env(mut self, k: &str, v: impl Into<String>) -> Self {
        self.extra_env.push((k.to_owned(), v.into()));
        self
    }

    /// The binary with a cleared, hermetic environment, run in the project.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.program(BIN);
        c.args(args);
        c
    }

    /// `program` in the binary's hermetic environment, in the project.
    pub fn program(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.current_dir(&self.project)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("KERYX_SNAPSHOT_ROOT", self.snapshot_root())
            .stdin(Stdio::null());
        for (k, v) in &self.extra_env {
            c.env(k, v);
        }
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.cmd(args).output().unwrap())
    }

    /// Runs the binary as a person does, its stdout and stderr a terminal
    /// (util-linux `script` gives it one) and `stdin` read from a file;
    /// what the terminal showed is the stdout, line ends as `\n`.
    pub fn run_on_terminal(&self, args: &[&str], stdin: impl AsRef<[u8]>) -> Run {
        let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
        let input = self.write(self.tmp.path().join("terminal-stdin"), stdin);
        let mut line = quote(BIN);
        for a in args {
            line.push(' ');
            line.push_str(&quote(a));
        }
        line.push_str(&format!(" < {}", quote(&input.to_string_lossy())));
        let out = self
            .program("script")
            .args(["-qec", &line, "/dev/null"])
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot start `script` ({e}): install util-linux (`apt-get install -y util-linux`)")
            });
        let mut run = Run::from(out);
        run.stdout = run.stdout.replace("\r\n", "\n");
        run
    }

    /// Runs with `stdin` piped in.
    pub fn run_stdin(&self, args: &[&str], stdin: impl AsRef<[u8]>) -> Run {
        run_fed(self.cmd(args), stdin.as_ref().to_vec())
    }

    /// Runs in `dir` instead of the project.
    pub fn run_in(&self, dir: &Path, args: &[&str]) -> Run {
        Run::from(self.cmd(args).current_dir(dir).output().unwrap())
    }

    /// Runs in `dir` with `stdin` piped in.
    pub fn run_in_stdin(&self, dir: &Path, args: &[&str], stdin: impl AsRef<[u8]>) -> Run {
        let mut cmd = self.cmd(args);
        cmd.current_dir(dir);
        run_fed(cmd, stdin.as_ref().to_vec())
    }
}

/// Starts `cmd` with stdout and stderr piped and `stdin` written from a
/// thread, which then closes it, or with `keep_open` holds it open for
/// longer than any test waits.
pub fn spawn_fed(
    mut cmd: Command,
    stdin: Vec<u8>,
    keep_open: bool,
) -> (std::process::Child, std::thread::JoinHandle<()>) {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut sin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = sin.write_all(&stdin);
        if keep_open {
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
    });
    (child, writer)
}

/// Runs `cmd` to the end with `stdin` written and closed.
pub fn run_fed(cmd: Command, stdin: Vec<u8>) -> Run {
    let (child, writer) = spawn_fed(cmd, stdin, false);
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    Run::from(out)
}

/// What a run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Run {
    #[track_caller]
    pub fn code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    #[track_caller]
    pub fn stdout_has(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}:\n{}\nstdout:\n{}",
            self.stderr,
            self.stdout
        );
        self
    }

    /// The same run with only the first `n` lines of its stdout (for a
    /// snapshot of how a long output starts).
    pub fn first_lines(&self, n: usize) -> Run {
        let mut stdout: String = self.stdout.lines().take(n).collect::<Vec<_>>().join("\n");
        stdout.push('\n');
        Run {
            code: self.code,
            stdout,
            stderr: self.stderr.clone(),
        }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// An AWS access key id the secret scanners catch, built by concatenation
/// so that no test file holds a key-shaped string.
pub fn aws_key() -> String {
    ["AKIA", "Z7Q4M2XJ5PRT3LKB"].concat()
}

// ------------------------------------------------------ files and payloads

/// Writes `$KERYX_HOME/hooks.json` with `hooks` under their events.
pub fn user_hooks(env: &Env, hooks: Value) {
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": hooks}).to_string(),
    );
}

/// Writes `.metaproject/hooks.json` with `hooks` under their events.
pub fn project_hooks(env: &Env, hooks: Value) {
    env.write(
        env.project_hooks(),
        serde_json::to_string_pretty(&json!({"schemaVersion": "1.0.0", "hooks": hooks})).unwrap(),
    );
}

/// An unsandboxed `/bin/sh -c script` registration.
pub fn sh_hook(id: &str, class: &str, script: &str) -> Value {
    json!({"id": id, "class": class, "runsIn": "unsandboxed",
           "command": {"argv": ["/bin/sh", "-c", script]}})
}

/// The JSON file at `path`.
#[track_caller]
pub fn read_json(path: impl AsRef<Path>) -> Value {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON ({e}):\n{text}", path.display()))
}

/// Each line of `text` parsed as JSON.
#[track_caller]
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("a line is not JSON ({e}): {l:?}"))
        })
        .collect()
}

/// How many lines the file at `path` has (0 when there is none): how many
/// times a hook that appends a line per run has run.
pub fn lines_in(path: impl AsRef<Path>) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// Every file below `dir` (none when it does not exist).
pub fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// Every file below `dir`, relative path → bytes.
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    walk_files(dir)
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&p).unwrap();
            (rel, bytes)
        })
        .collect()
}

/// The permission bits of `path`.
#[track_caller]
pub fn mode(path: impl AsRef<Path>) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let path = path.as_ref();
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// A captured payload: `tests/fixtures/payloads/<host>/<name>`.
pub fn fixture(host: &str, name: &str) -> Value {
    let p = format!(
        "{}/tests/fixtures/payloads/{host}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A captured Claude Code payload, pointed at `env`'s project.
pub fn claude_payload(env: &Env, name: &str) -> Value {
    let mut p = fixture("claude-code", name);
    p["cwd"] = json!(env.project);
    p
}

/// A Claude Code PreToolUse of Bash `command` with tool call id `call`, in
/// `env`'s project.
pub fn claude_bash(env: &Env, call: &str, command: &str) -> Value {
    let mut p = claude_payload(env, "PreToolUse-basic-Bash.json");
    p["tool_use_id"] = json!(call);
    p["tool_input"]["command"] = json!(command);
    p
}

/// `permissionDecisionReason` of a Claude Code deny; panics on anything else.
#[track_caller]
pub fn deny_reason(run: &Run) -> String {
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// xorshift64; the seed goes into failure messages.
pub struct Rng(pub u64);

impl Rng {
    /// Seeded from the clock, so each run tries other values.
    pub fn from_clock() -> Rng {
        Rng(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `[0, max]`.
    pub fn below(&mut self, max: std::time::Duration) -> std::time::Duration {
        std::time::Duration::from_micros(self.next() % (max.as_micros() as u64 + 1))
    }
}

// ------------------------------------------------------------ snapshots

/// Runs a command and snapshots what it did, with insta: whether it
/// succeeded, its exit code, its stdout and its stderr, in one text, after
/// `filters` replaced what differs between runs.
///
/// ```ignore
/// let env = Env::fixed();
/// cmd_snapshot!(env.filters(), env.cmd(&["validate"]), @r"
/// success: true
/// exit_code: 0
/// ----- stdout -----
/// ok: no hook files present; only the built-ins are active
///
/// ----- stderr -----
/// ");
/// ```
///
/// The command is a [`Command`] (or `&mut Command`); `stdin = bytes` feeds
/// it a standard input, which is otherwise empty. Evaluates to the [`Run`],
/// unfiltered, for further checks.
macro_rules! cmd_snapshot {
    ($filters:expr, $cmd:expr, @$snapshot:literal) => {{
        #[allow(unused_mut)]
        let mut cmd = $cmd;
        let run = $crate::common::Run::from(cmd.output().unwrap());
        ::insta::assert_snapshot!($crate::common::render(&$filters, &run), @$snapshot);
        run
    }};
    ($filters:expr, $cmd:expr, stdin = $stdin:expr, @$snapshot:literal) => {{
        let run = $crate::common::run_fed($cmd, ::std::convert::AsRef::<[u8]>::as_ref(&$stdin).to_vec());
        ::insta::assert_snapshot!($crate::common::render(&$filters, &run), @$snapshot);
        run
    }};
}
pub(crate) use cmd_snapshot;

/// The text [`cmd_snapshot!`] compares: success, exit code, stdout and
/// stderr, each output filtered.
pub fn render(filters: &Filters, run: &Run) -> String {
    format!(
        "success: {}\nexit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}\n",
        run.code == 0,
        run.code,
        filters.apply(&run.stdout),
        filters.apply(&run.stderr),
    )
}

/// Replacements applied in order, each a regular expression and the
/// placeholder it becomes.
#[derive(Clone, Default)]
pub struct Filters(Vec<(regex::Regex, String)>);

impl Filters {
    /// `text`, literally, becomes `placeholder`.
    pub fn literal(self, text: impl AsRef<str>, placeholder: &str) -> Filters {
        self.regex(&regex::escape(text.as_ref()), placeholder)
    }

    /// Each match of `pattern` becomes `with` (which may name groups: `$1`).
    pub fn regex(mut self, pattern: &str, with: &str) -> Filters {
        let re = regex::Regex::new(pattern).unwrap_or_else(|e| panic!("filter {pattern:?}: {e}"));
        self.0.push((re, with.to_owned()));
        self
    }

    /// The snapshot key of the hook source `source` becomes `placeholder`.
    pub fn snapshot_key(self, source: &Path, placeholder: &str) -> Filters {
        self.literal(snapshot_key_of(source), placeholder)
    }

    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (re, with) in &self.0 {
            out = re.replace_all(&out, with.as_str()).into_owned();
        }
        out
    }
}

/// The key `install` gives the snapshot of the source `source` (a
/// canonical path): its name without the leading dot, then the first 12
/// hex digits of the SHA-256 of its path.
pub fn snapshot_key_of(source: &Path) -> String {
    use sha2::{Digest, Sha256};
    let name = source.file_name().unwrap().to_string_lossy();
    let digest = Sha256::digest(source.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}", name.trim_start_matches('.'), &hex[..12])
}

impl Env {
    /// The filters for this home: the binary's path `[BIN]`, the project
    /// `[PROJECT]`, the home `[HOME]`, the temp root `[ROOT]`, the key of
    /// `$KERYX_HOME`'s snapshot `[KEY]`, RFC 3339 times and `log`'s times
    /// `[TIME]`, how long a hook took (`duration: [MS] ms`, `"durationMs":
    /// [MS]`; timeouts stay) and the crate's version `[VERSION]`.
    pub fn filters(&self) -> Filters {
        let root = self.home.parent().unwrap();
        let mut f = Filters::default()
            .literal(BIN, "[BIN]")
            .literal(self.project.display().to_string(), "[PROJECT]")
            .literal(self.home.display().to_string(), "[HOME]")
            .literal(root.display().to_string(), "[ROOT]");
        if self.tmp.path() != root {
            f = f.literal(self.tmp.path().display().to_string(), "[ROOT]");
        }
        f.snapshot_key(&self.keryx_home(), "[KEY]")
            .regex(
                r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
                "[TIME]",
            )
            // `log`'s column keeps its width.
            .regex(
                r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\b",
                "[TIME]             ",
            )
            .regex(r"\bduration: \d+ ms\b", "duration: [MS] ms")
            .regex(r#"("durationMs":\s*)\d+"#, "${1}[MS]")
            .regex(
                &format!(r"\b{}\b", regex::escape(env!("CARGO_PKG_VERSION"))),
                "[VERSION]",
            )
    }
}
