//! End-to-end: the real host CLIs (Claude Code, Codex, Gemini CLI, OpenCode,
//! Copilot CLI, Qwen Code, Kimi Code), installed from npm by
//! `tests/e2e/install-hosts.sh`, run headless and offline against a loopback
//! mock of their model API (`tests/e2e/mock_llm.py`), with hooks in their own
//! config. Asserts go on what the model received (the mock's log).
//!
//! Each host runs twice per behaviour: once with a plain shell hook (proves the
//! harness and the host contract) and once through `keryx-hooks run <host>
//! <event>` with a user `~/.keryx/hooks.json` (proves keryx works in the host).
//! The Chat Completions hosts (`ChatHost`) run only through keryx, wired by
//! the real `keryx-hooks install <host>`.
//! See tests/e2e/README.md for how to write more.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::BIN;

/// A host run that takes longer than this has hung: it is killed and the test
/// fails with its stderr. Runs take 1-10 s; the margin is for loaded CI machines.
const HOST_TIMEOUT: Duration = Duration::from_secs(120);
/// Keep the temp home/project of every run (path printed in failures).
const KEEP_ENV: &str = "KERYX_E2E_KEEP";
/// Where install-hosts.sh puts the hosts (default `<repo>/.cache/hosts`).
const HOSTS_DIR_ENV: &str = "KERYX_E2E_HOSTS_DIR";
const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

// ------------------------------------------------------------------ hosts

/// An agent host CLI under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    ClaudeCode,
    Codex,
    GeminiCli,
}

/// A lifecycle moment, named per host by [`Host::event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Before a tool runs: `PreToolUse` / `PreToolUse` / `BeforeTool`.
    PreTool,
    /// Session start: `SessionStart` everywhere.
    SessionStart,
    /// The agent is about to yield: `Stop` / `Stop` / `AfterAgent`.
    Stop,
}

impl Host {
    /// The name `keryx-hooks run` and install-hosts.sh know the host by.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::Codex => "codex",
            Host::GeminiCli => "gemini-cli",
        }
    }

    /// The host's own event name for `moment`.
    pub fn event(self, moment: Moment) -> &'static str {
        match (self, moment) {
            (Host::GeminiCli, Moment::PreTool) => "BeforeTool",
            (Host::GeminiCli, Moment::Stop) => "AfterAgent",
            (_, Moment::PreTool) => "PreToolUse",
            (_, Moment::SessionStart) => "SessionStart",
            (_, Moment::Stop) => "Stop",
        }
    }

    /// A hook matcher that selects the host's shell tool (Codex maps its
    /// `exec_command` to `Bash` for hooks).
    pub fn shell_matcher(self) -> &'static str {
        match self {
            Host::ClaudeCode | Host::Codex => "Bash",
            Host::GeminiCli => "run_shell_command",
        }
    }

    /// Which mock_llm.py API the host speaks.
    fn api(self) -> &'static str {
        match self {
            Host::ClaudeCode => "anthropic",
            Host::Codex => "openai",
            Host::GeminiCli => "gemini",
        }
    }

    fn bin_name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude",
            Host::Codex => "codex",
            Host::GeminiCli => "gemini",
        }
    }

    /// The installed CLI, installing it first if needed (once per process;
    /// the script itself is idempotent and locks against parallel tests).
    pub fn binary(self) -> PathBuf {
        static DONE: [OnceLock<()>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        DONE[self as usize].get_or_init(|| install_host(self));
        hosts_dir()
            .join(self.name())
            .join("node_modules/.bin")
            .join(self.bin_name())
    }

    /// Where the host reads the hook config that [`Host::run`] writes.
    pub fn hooks_file(self, project: &Path, home: &Path) -> PathBuf {
        match self {
            Host::ClaudeCode => project.join(".claude/settings.json"),
            Host::Codex => codex_home(home).join("hooks.json"),
            Host::GeminiCli => project.join(".gemini/settings.json"),
        }
    }

    /// Runs the host headless in `project` with `HOME=home`: writes `hooks`
    /// (the host's own `{"hooks": {...}}` shape, see [`hooks_config`]) where
    /// the host reads it, starts the mock scripted by `scenario`, runs
    /// `prompt`, waits (killing it after [`HOST_TIMEOUT`]) and collects what
    /// the model API received. Never asserts on the outcome: see [`HostRun`].
    pub fn run(
        self,
        project: &Path,
        home: &Path,
        hooks: &Value,
        scenario: &Scenario,
        prompt: &str,
    ) -> HostRun {
        let bin = self.binary();
        let work = home
            .parent()
            .unwrap_or(home)
            .join(format!("mock-{}", self.name()));
        std::fs::create_dir_all(&work).unwrap();
        let mock = Mock::start(self.api(), scenario, &work);

        let hooks_file = self.hooks_file(project, home);
        let mut cmd = Command::new(&bin);
        cmd.current_dir(project)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .env("KERYX_SNAPSHOT_ROOT", home.join(".agentic/hooks-snapshot"))
            .stdin(Stdio::null());
        let base_url = format!("http://127.0.0.1:{}", mock.port);
        match self {
            Host::ClaudeCode => {
                write_json(&hooks_file, hooks);
                cmd.env("ANTHROPIC_BASE_URL", &base_url)
                    .env("ANTHROPIC_API_KEY", "sk-ant-e2e-mock")
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("DISABLE_TELEMETRY", "1")
                    .env("DISABLE_AUTOUPDATER", "1")
                    .env("DISABLE_ERROR_REPORTING", "1")
                    // As root Claude Code refuses --dangerously-skip-permissions.
                    .args([
                        "-p",
                        prompt,
                        "--output-format",
                        "json",
                        "--allowedTools",
                        "Bash",
                    ]);
            }
            Host::Codex => {
                let codex_home = codex_home(home);
                write_json(&hooks_file, hooks);
                write(
                    &codex_home.join("config.toml"),
                    &format!(
                        r#"model = "gpt-mock"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"#
                    ),
                );
                cmd.env("CODEX_HOME", &codex_home)
                    .env("OPENAI_API_KEY", "sk-e2e-mock")
                    .args([
                        "exec",
                        "--skip-git-repo-check",
                        // Without it `codex exec` silently runs no hooks (trust gating).
                        "--dangerously-bypass-hook-trust",
                        "--json",
                        prompt,
                    ]);
            }
            Host::GeminiCli => {
                write_json(&hooks_file, hooks);
                // With only the base-URL variable Gemini picks the "gateway" auth
                // type and exits 41; pinning the API-key auth keeps the URL honoured.
                write_json(
                    &home.join(".gemini/settings.json"),
                    &json!({
                        "security": {"auth": {"selectedType": "gemini-api-key"}},
                        "privacy": {"usageStatisticsEnabled": false},
                        "telemetry": {"enabled": false}
                    }),
                );
                cmd.env("GOOGLE_GEMINI_BASE_URL", &base_url)
                    .env("GEMINI_API_KEY", "e2e-mock-key")
                    // Project hooks only run in a trusted folder.
                    .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
                    // Skips the re-exec of node with a bigger heap: ~1 s per run.
                    .env("GEMINI_CLI_NO_RELAUNCH", "true")
                    .args(["-p", prompt, "--yolo", "-o", "json"]);
            }
        }

        let out = run_with_timeout(cmd, &work, HOST_TIMEOUT);
        let requests = mock.requests();
        drop(mock);
        let result = parse_result(self, &out.stdout);
        let run = HostRun {
            host: self,
            code: out.code,
            stdout: out.stdout,
            stderr: out.stderr,
            result,
            requests,
            dir: home.parent().unwrap_or(home).to_path_buf(),
        };
        if out.timed_out {
            panic!(
                "{} did not finish within {HOST_TIMEOUT:?} and was killed\n{}",
                self.name(),
                run.describe()
            );
        }
        run
    }
}

fn codex_home(home: &Path) -> PathBuf {
    home.join(".codex")
}

fn hosts_dir() -> PathBuf {
    std::env::var_os(HOSTS_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(MANIFEST_DIR).join(".cache/hosts"))
}

fn install_script() -> PathBuf {
    Path::new(MANIFEST_DIR).join("tests/e2e/install-hosts.sh")
}

fn install_host(host: Host) {
    let script = install_script();
    let out = Command::new("bash")
        .arg(&script)
        .arg(host.name())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run `bash {}`: {e}", script.display()));
    assert!(
        out.status.success(),
        "installing {} failed; run `tests/e2e/install-hosts.sh {}` by hand (needs node and npm, \
         e.g. `apt-get install -y nodejs npm`, and the npm registry):\n{}{}",
        host.name(),
        host.name(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// ------------------------------------------------------------------ scenario

/// What the mock model answers: one step per assistant turn, chosen by the
/// number of assistant turns already in the request.
#[derive(Debug, Clone, Default)]
pub struct Scenario {
    steps: Vec<Value>,
    /// The steps that answer a subagent (a request whose first user text
    /// holds `SUBAGENT_TASK`).
    subagent: Vec<Value>,
}

impl Scenario {
    pub fn new() -> Scenario {
        Scenario::default()
    }

    /// A turn that calls the host's shell tool (`Bash` / `exec_command` /
    /// `run_shell_command`) with `command`.
    pub fn shell(self, command: &str) -> Scenario {
        self.step(json!([{ "shell": command }]))
    }

    /// A turn that answers with `text` and no tool call.
    pub fn text(self, text: &str) -> Scenario {
        self.step(json!([{ "text": text }]))
    }

    /// A raw turn: a list of `{"text"}`, `{"shell"}` or `{"tool", "input"}` items.
    pub fn step(mut self, items: Value) -> Scenario {
        self.steps.push(items);
        self
    }

    /// A raw turn of the subagent's script.
    pub fn subagent_step(mut self, items: Value) -> Scenario {
        self.subagent.push(items);
        self
    }

    pub fn to_json(&self) -> Value {
        json!({ "steps": self.steps, "subagent": self.subagent })
    }
}

// ------------------------------------------------------------------ hook configs

/// The `{"hooks": {...}}` document all three hosts read (Claude Code
/// `.claude/settings.json`, Codex `hooks.json`, Gemini `.gemini/settings.json`),
/// from `(host event, matcher, shell command)` entries.
pub fn hooks_config(entries: &[(&str, &str, String)]) -> Value {
    let mut hooks = serde_json::Map::new();
    for (event, matcher, command) in entries {
        let list = hooks.entry(event.to_string()).or_insert_with(|| json!([]));
        list.as_array_mut().unwrap().push(json!({
            "matcher": matcher,
            // No "timeout": Claude Code and Codex read seconds, Gemini CLI
            // milliseconds; every host's default (about a minute) is fine.
            "hooks": [{ "type": "command", "command": command }]
        }));
    }
    json!({ "hooks": hooks })
}

/// The shell command a host runs to hand `event` to keryx-hooks.
pub fn keryx_command(host: Host, event: &str) -> String {
    format!("{} run {} {}", sh_quote(BIN), host.name(), event)
}

/// Single-quotes `s` for a POSIX shell.
pub fn sh_quote(s: impl AsRef<str>) -> String {
    format!("'{}'", s.as_ref().replace('\'', r"'\''"))
}

// ------------------------------------------------------------------ environment

/// A temp root holding `home/` (the host's and keryx's HOME), `proj/` (a git
/// repository, the host's cwd) and `hooks/` (scripts the tests write).
pub struct E2eEnv {
    /// Removed on drop unless KERYX_E2E_KEEP is set.
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
}

impl E2eEnv {
    pub fn new() -> E2eEnv {
        let mut tmp = tempfile::Builder::new()
            .prefix("keryx-e2e-")
            .tempdir()
            .unwrap();
        if std::env::var_os(KEEP_ENV).is_some() {
            tmp.disable_cleanup(true);
        }
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let home = root.join("home");
        let project = root.join("proj");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let git = Command::new("git")
            .args(["init", "-q", "."])
            .current_dir(&project)
            .env("HOME", &home)
            .output()
            .expect("git not found: install it (`apt-get install -y git`)");
        assert!(
            git.status.success(),
            "git init failed: {}",
            String::from_utf8_lossy(&git.stderr)
        );
        E2eEnv {
            _tmp: tmp,
            root,
            home,
            project,
        }
    }

    /// Writes an executable `/bin/sh` script under `root/hooks/`.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.root.join("hooks").join(name);
        write(&path, &format!("#!/bin/sh\n{body}"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// `hooks/deny-echo.sh`: a gate that appends a line to `gate.calls` per
    /// call and denies any `echo` command (exit 2, `reason` on stderr).
    pub fn deny_echo_gate(&self, reason: &str) -> PathBuf {
        self.script(
            "deny-echo.sh",
            &format!(
                r#"payload=$(cat)
echo call >> {calls}
case "$payload" in
  *'"command":"echo '*|*'"command": "echo '*)
    echo {reason} >&2
    exit 2 ;;
esac
exit 0
"#,
                calls = sh_quote(self.path("gate.calls").to_str().unwrap()),
                reason = sh_quote(reason),
            ),
        )
    }

    /// Writes the keryx user config `~/.keryx/hooks.json`.
    pub fn keryx_user_hooks(&self, config: &Value) -> PathBuf {
        let path = self.home.join(".keryx/hooks.json");
        write_json(&path, config);
        path
    }

    /// A path under the temp root (for marker files and hook logs).
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Lines a hook appended to `root/<name>` (empty when it never ran).
    pub fn lines(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.path(name))
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    pub fn run(&self, host: Host, hooks: &Value, scenario: &Scenario) -> HostRun {
        host.run(
            &self.project,
            &self.home,
            hooks,
            scenario,
            "run the scenario",
        )
    }
}

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn write_json(path: &Path, value: &Value) {
    write(path, &serde_json::to_string_pretty(value).unwrap());
}

// ------------------------------------------------------------------ the mock

struct Mock {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Mock {
    fn start(api: &str, scenario: &Scenario, work: &Path) -> Mock {
        let scenario_path = work.join("scenario.json");
        let log = work.join("requests.jsonl");
        write_json(&scenario_path, &scenario.to_json());
        let _ = std::fs::remove_file(&log);
        let script = Path::new(MANIFEST_DIR).join("tests/e2e/mock_llm.py");
        let stderr = File::create(work.join("mock.stderr")).unwrap();
        let mut child = Command::new("python3")
            .arg(&script)
            .args([api, "0"])
            .arg(&scenario_path)
            .arg(&log)
            // The mock exits when this pipe closes, even if the test is killed.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the mock model API (python3 not found? install it: `apt-get install -y python3`): {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the mock model API did not start (`python3 {} {api} 0 …`):\n{}",
                script.display(),
                std::fs::read_to_string(work.join("mock.stderr")).unwrap_or_default()
            )
        });
        Mock { child, port, log }
    }

    /// Every request so far, one JSON object per line of the log.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("mock log line is not JSON ({e}): {l}"))
            })
            .collect()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------------ processes

struct Finished {
    code: i32,
    stdout: String,
    stderr: String,
    timed_out: bool,
}

/// Runs `cmd` in its own process group with output to files, kills the whole
/// group after `timeout` (and, when it exits, any helper it left behind).
fn run_with_timeout(mut cmd: Command, work: &Path, timeout: Duration) -> Finished {
    let out_path = work.join("host.stdout");
    let err_path = work.join("host.stderr");
    cmd.stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pgid = child.id();
    let start = Instant::now();
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break (Some(status), false);
        }
        if start.elapsed() > timeout {
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // The group is ours: the host and whatever hooks or helpers it spawned.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
    let status = status.or_else(|| child.wait().ok());
    Finished {
        code: status.and_then(|s| s.code()).unwrap_or(-1),
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        timed_out,
    }
}

fn parse_result(host: Host, stdout: &str) -> Option<Value> {
    match host {
        // `codex exec --json`: one event per line.
        Host::Codex => Some(Value::Array(
            stdout
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        )),
        _ => {
            let start = stdout.find('{')?;
            let end = stdout.rfind('}')?;
            serde_json::from_str(&stdout[start..=end]).ok()
        }
    }
}

// ------------------------------------------------------------------ results

/// What one host run did and what the model API received.
#[derive(Debug)]
pub struct HostRun {
    pub host: Host,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// The host's machine-readable output: Claude Code `-p --output-format
    /// json`, Gemini `-o json`, Codex `exec --json` events as an array.
    pub result: Option<Value>,
    /// Every request the mock received (see tests/e2e/mock_llm.py for the shape).
    pub requests: Vec<Value>,
    /// The temp root (kept when KERYX_E2E_KEEP is set).
    pub dir: PathBuf,
}

/// What a run recorded of the model API, for both kinds of host run.
pub trait ModelLog {
    /// Every request the mock received (see tests/e2e/mock_llm.py).
    fn requests(&self) -> &[Value];
    /// The host's name, its exit code and the run's temp root.
    fn header(&self) -> (&str, i32, &Path);
    /// The host's stderr and stdout.
    fn outputs(&self) -> (&str, &str);
    /// What a failure message shows of one agent-loop request's body.
    fn detail(&self, body: &Value) -> String;

    /// The run's story for failure messages: exit, requests, stderr, stdout.
    fn describe(&self) -> String {
        let (name, code, dir) = self.header();
        let mut s = format!("== {name} exit {code} (files: {})\n", dir.display());
        if std::env::var_os(KEEP_ENV).is_none() {
            s.push_str(&format!("   (set {KEEP_ENV}=1 to keep them)\n"));
        }
        s.push_str(&format!("== model requests ({}):\n", self.requests().len()));
        for r in self.requests() {
            let detail = if r["kind"] == "main" {
                self.detail(&r["body"])
            } else {
                String::new()
            };
            s.push_str(&format!(
                "  #{} {} {} kind={} step={} reply={}\n     {detail}\n",
                r["seq"],
                r["method"].as_str().unwrap_or(""),
                r["path"].as_str().unwrap_or(""),
                r["kind"].as_str().unwrap_or(""),
                r["step"],
                clip(&r["reply"].to_string(), 300),
            ));
        }
        let (stderr, stdout) = self.outputs();
        s.push_str(&format!("== stderr:\n{}\n", tail(stderr, 6000)));
        s.push_str(&format!("== stdout:\n{}\n", tail(stdout, 3000)));
        s
    }

    /// The agent-loop model calls, in order (side calls such as Gemini's
    /// routing classifier or token counting are left out). Index = step.
    fn main_requests(&self) -> Vec<&Value> {
        self.requests()
            .iter()
            .filter(|r| r["kind"] == "main")
            .collect()
    }

    /// The body of main request `i`; fails the test with the run's story if absent.
    #[track_caller]
    fn body(&self, i: usize) -> &Value {
        match self.main_requests().get(i) {
            Some(r) => &r["body"],
            None => panic!("no model request #{i}\n{}", self.describe()),
        }
    }
}

impl ModelLog for HostRun {
    fn requests(&self) -> &[Value] {
        &self.requests
    }
    fn header(&self) -> (&str, i32, &Path) {
        (self.host.name(), self.code, &self.dir)
    }
    fn outputs(&self) -> (&str, &str) {
        (&self.stderr, &self.stdout)
    }
    fn detail(&self, body: &Value) -> String {
        self.request_detail(body)
    }
}

impl ModelLog for ChatRun {
    fn requests(&self) -> &[Value] {
        &self.requests
    }
    fn header(&self) -> (&str, i32, &Path) {
        (self.host.name(), self.code, &self.dir)
    }
    fn outputs(&self) -> (&str, &str) {
        (&self.stderr, &self.stdout)
    }
    fn detail(&self, body: &Value) -> String {
        self.request_detail(body)
    }
}

impl HostRun {
    /// Everything the model sees in a request (system prompt and
    /// conversation), as one JSON string to search.
    pub fn model_view(&self, body: &Value) -> String {
        let keys: &[&str] = match self.host {
            Host::ClaudeCode => &["system", "messages"],
            Host::Codex => &["instructions", "input"],
            Host::GeminiCli => &["systemInstruction", "contents"],
        };
        keys.iter()
            .map(|k| body[*k].to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Tool results carried by a request (Claude `tool_result`, Codex
    /// `function_call_output`, Gemini `functionResponse`), as text.
    pub fn tool_results(&self, body: &Value) -> Vec<String> {
        let mut out = Vec::new();
        match self.host {
            Host::ClaudeCode => {
                for m in arr(&body["messages"]) {
                    for c in arr(&m["content"]) {
                        if c["type"] == "tool_result" {
                            out.push(text_of(&c["content"]));
                        }
                    }
                }
            }
            Host::Codex => {
                for item in arr(&body["input"]) {
                    if item["type"] == "function_call_output" {
                        out.push(text_of(&item["output"]));
                    }
                }
            }
            Host::GeminiCli => {
                for c in arr(&body["contents"]) {
                    for p in arr(&c["parts"]) {
                        if p["functionResponse"].is_object() {
                            out.push(p["functionResponse"]["response"].to_string());
                        }
                    }
                }
            }
        }
        out
    }

    /// The text of the last user turn of a request (where a Stop-hook
    /// continuation reason lands).
    pub fn last_user_text(&self, body: &Value) -> String {
        match self.host {
            Host::ClaudeCode => arr(&body["messages"])
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .map(|m| text_of(&m["content"]))
                .unwrap_or_default(),
            Host::Codex => arr(&body["input"])
                .iter()
                .rev()
                .find(|i| i["type"] == "message" && i["role"] == "user")
                .map(|i| text_of(&i["content"]))
                .unwrap_or_default(),
            Host::GeminiCli => arr(&body["contents"])
                .iter()
                .rev()
                .find(|c| c["role"] == "user")
                .map(|c| text_of(&c["parts"]))
                .unwrap_or_default(),
        }
    }

    /// The host's final answer as it reported it.
    pub fn final_text(&self) -> Option<String> {
        let r = self.result.as_ref()?;
        match self.host {
            Host::ClaudeCode => r["result"].as_str().map(str::to_owned),
            Host::GeminiCli => r["response"].as_str().map(str::to_owned),
            Host::Codex => arr(r)
                .iter()
                .rev()
                .find(|e| e["item"]["type"] == "agent_message")
                .and_then(|e| e["item"]["text"].as_str().map(str::to_owned)),
        }
    }

    /// What a failure message shows of one agent-loop request.
    fn request_detail(&self, body: &Value) -> String {
        format!(
            "tool_results={} last_user={}",
            clip(&format!("{:?}", self.tool_results(body)), 400),
            clip(&self.last_user_text(body), 300)
        )
    }
}

fn arr(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// All text inside a content value (string, blocks, nested tool results).
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => ["text", "content", "output"]
            .iter()
            .filter_map(|k| o.get(*k))
            .map(text_of)
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    format!("{}…", s.chars().take(n).collect::<String>())
}

fn tail(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut i = s.len() - n;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

// ------------------------------------------------------------------ the behaviours

const DENY_REASON: &str = "E2E-DENY-REASON: echo is not allowed here";
const CONTEXT: &str = "E2E-SESSIONSTART-CONTEXT-7F3A";
const STOP_REASON: &str = "E2E-STOP-BLOCK-REASON: also run the tests";

/// Which kind of hook command a behaviour is wired through.
#[derive(Debug, Clone, Copy)]
enum Via {
    /// The host runs a plain shell script (the captured experiments).
    Script,
    /// The host runs `keryx-hooks run <host> <event>`; the script is a
    /// keryx hook registered in `~/.keryx/hooks.json`.
    Keryx,
}

/// Wires `script` (a hook body that reads the payload on stdin) into the host
/// for `moment`, directly or behind keryx as a hook of `class`. Returns the
/// host hook config.
fn wire(env: &E2eEnv, host: Host, via: Via, moment: Moment, class: &str, script: &Path) -> Value {
    let event = host.event(moment);
    match via {
        Via::Script => {
            let matcher = if moment == Moment::PreTool {
                host.shell_matcher()
            } else {
                ""
            };
            hooks_config(&[(event, matcher, sh_quote(script.to_str().unwrap()))])
        }
        Via::Keryx => {
            let keryx_event = match moment {
                Moment::PreTool => "PreToolUse",
                Moment::SessionStart => "SessionStart",
                Moment::Stop => "Stop",
            };
            let mut registration = json!({
                "id": format!("e2e-{}", keryx_event.to_lowercase()),
                "class": class,
                // No sandbox launcher is assumed on test machines.
                "runsIn": "unsandboxed",
                "timeoutMs": 20000,
                "command": { "argv": ["/bin/sh", script] }
            });
            if moment == Moment::PreTool {
                // Any tool name the adapter reports; the script looks at the command.
                registration["matcher"] = json!("*");
            }
            // The built-in Bash gate would otherwise answer first; these tests
            // pin down the user hook's path through the host.
            let ctx_guard_off = json!({ "id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate" });
            let mut hooks = serde_json::Map::new();
            hooks.insert("PreToolUse".into(), json!([ctx_guard_off]));
            hooks
                .entry(keryx_event)
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .unwrap()
                .push(registration);
            env.keryx_user_hooks(&json!({ "schemaVersion": "1.0.0", "hooks": hooks }));
            let matcher = if moment == Moment::PreTool { "*" } else { "" };
            hooks_config(&[(event, matcher, keryx_command(host, event))])
        }
    }
}

/// The failure story of a behaviour run: for keryx wiring, first what
/// `keryx-hooks validate` and a direct `keryx-hooks run` say in this home
/// (the quickest way to see why the host's hook did nothing), then the run.
fn explain(env: &E2eEnv, via: Via, moment: Moment, run: &HostRun) -> String {
    let mut s = String::new();
    if let Via::Keryx = via {
        let event = run.host.event(moment);
        for (args, stdin) in [
            (vec!["validate"], ""),
            (vec!["run", run.host.name(), event], "{}"),
        ] {
            let out = Command::new(BIN)
                .args(&args)
                .current_dir(&env.project)
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", &env.home)
                .env(
                    "KERYX_SNAPSHOT_ROOT",
                    env.home.join(".agentic/hooks-snapshot"),
                )
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    use std::io::Write;
                    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
                    child.wait_with_output()
                });
            s.push_str(&format!(
                "== probe: keryx-hooks {} <<< {stdin:?}\n",
                args.join(" ")
            ));
            match out {
                Ok(o) => s.push_str(&format!(
                    "   exit {:?}\n   stdout: {}\n   stderr: {}\n",
                    o.status.code(),
                    clip(String::from_utf8_lossy(&o.stdout).trim(), 1500),
                    clip(String::from_utf8_lossy(&o.stderr).trim(), 1500)
                )),
                Err(e) => s.push_str(&format!("   cannot run {BIN}: {e}\n")),
            }
        }
    }
    s.push_str(&run.describe());
    s
}

/// A PreToolUse-style hook that denies `echo` (exit 2, reason on stderr): the
/// command never runs and the reason reaches the next model request.
fn pre_tool_deny(host: Host, via: Via) {
    let env = E2eEnv::new();
    let marker = env.path("denied-command-ran");
    let script = env.deny_echo_gate(DENY_REASON);
    let hooks = wire(&env, host, via, Moment::PreTool, "gate", &script);
    let scenario = Scenario::new()
        .shell(&format!(
            "echo e2e > {}",
            sh_quote(marker.to_str().unwrap())
        ))
        .text("final text.");
    let run = env.run(host, &hooks, &scenario);

    let why = || explain(&env, via, Moment::PreTool, &run);
    assert_eq!(run.code, 0, "the host failed\n{}", why());
    assert!(
        !env.lines("gate.calls").is_empty(),
        "the PreToolUse hook never ran\n{}",
        why()
    );
    assert!(
        !marker.exists(),
        "the denied command ran (`{}` exists)\n{}",
        marker.display(),
        why()
    );
    assert_eq!(
        run.main_requests().len(),
        2,
        "expected a tool turn and a final turn\n{}",
        why()
    );
    let results = run.tool_results(run.body(1));
    assert!(
        results.iter().any(|r| r.contains(DENY_REASON)),
        "the deny reason did not reach the model; tool results: {results:?}\n{}",
        why()
    );
    assert_eq!(
        run.final_text().as_deref(),
        Some("final text."),
        "{}",
        why()
    );
}

/// A SessionStart hook that adds context: the context reaches the model.
fn session_start_context(host: Host, via: Via) {
    let env = E2eEnv::new();
    let output = match via {
        // The host's own shape (Claude Code convention, read by all three).
        Via::Script => json!({
            "hookSpecificOutput": { "hookEventName": "SessionStart", "additionalContext": CONTEXT }
        }),
        // keryx's own shape.
        Via::Keryx => json!({ "additionalContext": CONTEXT }),
    };
    let script = env.script(
        "session-context.sh",
        &format!(
            "cat >> {log}\necho >> {log}\necho call >> {calls}\nprintf '%s\\n' {out}\n",
            log = sh_quote(env.path("session-start.log").to_str().unwrap()),
            calls = sh_quote(env.path("session-start.calls").to_str().unwrap()),
            out = sh_quote(output.to_string()),
        ),
    );
    let hooks = wire(&env, host, via, Moment::SessionStart, "context", &script);
    let run = env.run(host, &hooks, &Scenario::new().text("final text."));

    let why = || explain(&env, via, Moment::SessionStart, &run);
    assert_eq!(run.code, 0, "the host failed\n{}", why());
    assert!(
        !env.lines("session-start.calls").is_empty(),
        "the SessionStart hook never ran\n{}",
        why()
    );
    assert!(
        run.model_view(run.body(0)).contains(CONTEXT),
        "the SessionStart context did not reach the first model request\n{}",
        why()
    );
}

/// A Stop hook that blocks once: the host continues the turn with the
/// reason as the next user input, exactly once, then finishes.
fn stop_block_once(host: Host, via: Via) {
    let env = E2eEnv::new();
    let log = sh_quote(env.path("stop.log").to_str().unwrap());
    let calls = sh_quote(env.path("stop.calls").to_str().unwrap());
    let body = match via {
        // Host contract: block unless the host says a Stop hook already continued.
        Via::Script => format!(
            r#"payload=$(cat)
printf '%s\n' "$payload" >> {log}
echo call >> {calls}
case "$payload" in
  *'"stop_hook_active":true'*|*'"stop_hook_active": true'*) exit 0 ;;
esac
printf '%s\n' {out}
"#,
            out = sh_quote(json!({ "decision": "block", "reason": STOP_REASON }).to_string()),
        ),
        // keryx gate: deny the first stop only (keryx payloads need not carry
        // the host's loop flag, so the script keeps its own count).
        Via::Keryx => format!(
            r#"payload=$(cat)
printf '%s\n' "$payload" >> {log}
echo call >> {calls}
if [ "$(wc -l < {calls})" -gt 1 ]; then exit 0; fi
echo {reason} >&2
exit 2
"#,
            reason = sh_quote(STOP_REASON),
        ),
    };
    let script = env.script("stop-once.sh", &body);
    let hooks = wire(&env, host, via, Moment::Stop, "gate", &script);
    let scenario = Scenario::new()
        .text("first final text.")
        .text("second final text.")
        .text("third final text.");
    let run = env.run(host, &hooks, &scenario);

    let why = || explain(&env, via, Moment::Stop, &run);
    assert_eq!(run.code, 0, "the host failed\n{}", why());
    let calls = env.lines("stop.calls").len();
    assert_eq!(
        calls,
        2,
        "the Stop hook ran {calls} times, expected 2 (block, then allow)\n{}",
        why()
    );
    assert_eq!(
        run.main_requests().len(),
        2,
        "the Stop block should continue the turn exactly once\n{}",
        why()
    );
    let continued = run.last_user_text(run.body(1));
    assert!(
        continued.contains(STOP_REASON),
        "the continuation did not carry the Stop reason; last user input: {continued:?}\n{}",
        why()
    );
    assert!(
        !run.model_view(run.body(0)).contains(STOP_REASON),
        "the Stop reason was in the first request already\n{}",
        why()
    );
    let final_text = run.final_text().unwrap_or_default();
    assert!(
        final_text.ends_with("second final text."),
        "final answer {final_text:?}\n{}",
        why()
    );
}

macro_rules! host_tests {
    ($module:ident, $host:expr) => {
        mod $module {
            use super::*;

            #[test]
            fn script_pre_tool_deny_blocks_the_command_and_tells_the_model() {
                pre_tool_deny($host, Via::Script);
            }

            #[test]
            fn script_session_start_context_reaches_the_model() {
                session_start_context($host, Via::Script);
            }

            #[test]
            fn script_stop_block_continues_the_turn_once() {
                stop_block_once($host, Via::Script);
            }

            #[test]
            fn keryx_gate_denies_echo_and_tells_the_model() {
                pre_tool_deny($host, Via::Keryx);
            }

            #[test]
            fn keryx_session_start_context_reaches_the_model() {
                session_start_context($host, Via::Keryx);
            }

            #[test]
            fn keryx_stop_gate_continues_the_turn_once() {
                stop_block_once($host, Via::Keryx);
            }
        }
    };
}

host_tests!(claude_code, Host::ClaudeCode);
host_tests!(codex, Host::Codex);
host_tests!(gemini_cli, Host::GeminiCli);

/// With only the built-ins (no user or project hooks), an ordinary shell
/// command runs, and ctx-guard denies reading a secret file into the model's
/// context: the file's content never reaches the model.
fn builtins_guard_the_default_config(host: Host) {
    let env = E2eEnv::new();
    // Built at run time so this file itself does not look like it holds one.
    let planted = ["e2e", "planted", "dotenv", "content"].join("-");
    std::fs::write(env.project.join(".env"), format!("TOKEN={planted}\n")).unwrap();
    let marker = env.path("ordinary-ran");
    let pre = host.event(Moment::PreTool);
    let hooks = hooks_config(&[(pre, "*", keryx_command(host, pre))]);
    let scenario = Scenario::new()
        .shell(&format!("touch {}", sh_quote(marker.to_str().unwrap())))
        .shell("cat .env")
        .text("final text.");
    let run = env.run(host, &hooks, &scenario);
    assert_eq!(run.code, 0, "the host failed\n{}", run.describe());
    assert!(
        marker.exists(),
        "an ordinary command was blocked by the default config\n{}",
        run.describe()
    );
    let seen: String = run.requests.iter().map(|r| r.to_string()).collect();
    assert!(
        !seen.contains(&planted),
        "the secret reached the model\n{}",
        run.describe()
    );
    let last = run.main_requests().len() - 1;
    let results = run.tool_results(run.body(last));
    assert!(
        results.iter().any(|r| r.contains(".env")),
        "the ctx-guard reason did not reach the model: {results:?}\n{}",
        run.describe()
    );
}

#[test]
fn claude_code_builtins_guard_the_default_config() {
    builtins_guard_the_default_config(Host::ClaudeCode);
}

#[test]
fn codex_builtins_guard_the_default_config() {
    builtins_guard_the_default_config(Host::Codex);
}

/// The real Claude Code hands a keryx hook Claude's own fields as Claude
/// sent them, next to the canonical ones, with the session's cwd.
#[test]
fn claude_code_hooks_get_claudes_own_fields() {
    let env = E2eEnv::new();
    let log = env.path("payloads.log");
    let script = env.script(
        "record.sh",
        &format!(
            "tr -d '\\n' >> {log}\necho >> {log}\n",
            log = sh_quote(log.to_str().unwrap())
        ),
    );
    let hooks = wire(
        &env,
        Host::ClaudeCode,
        Via::Keryx,
        Moment::PreTool,
        "observe",
        &script,
    );
    let scenario = Scenario::new().shell("echo fields").text("final text.");
    let run = env.run(Host::ClaudeCode, &hooks, &scenario);
    let why = || explain(&env, Via::Keryx, Moment::PreTool, &run);
    assert_eq!(run.code, 0, "Claude Code failed\n{}", why());
    let lines = env.lines("payloads.log");
    let payload: Value = lines
        .first()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("the hook never ran: {lines:?}\n{}", why()));
    for key in [
        "transcript_path",
        "permission_mode",
        "prompt_id",
        "tool_use_id",
    ] {
        assert!(
            payload[key].is_string(),
            "`{key}` missing: {payload:#}\n{}",
            why()
        );
    }
    assert_eq!(payload["cwd"], json!(env.project), "{payload:#}");
    assert_eq!(payload["projectRoot"], json!(env.project), "{payload:#}");
    assert_eq!(payload["tool_name"], "Bash", "{payload:#}");
    assert_eq!(payload["hookId"], "e2e-pretooluse", "{payload:#}");
}

/// A SessionStart hook that exports a variable through `CLAUDE_ENV_FILE`
/// reaches the session's shell commands under Claude Code itself, and does
/// the same once `install` + `import` moved it into keryx-hooks.
#[test]
fn claude_code_env_file_exports_reach_the_session_after_import() {
    let carried = |import: bool| -> Vec<String> {
        let env = E2eEnv::new();
        let script = env.script(
            "export-env.sh",
            "cat >/dev/null\necho 'export E2E_CARRIED=from-env-file' >> \"$CLAUDE_ENV_FILE\"\n",
        );
        let own = hooks_config(&[("SessionStart", "", script.display().to_string())]);
        let project_hooks = if import {
            write_json(&env.home.join(".claude/settings.json"), &own);
            keryx_in(&env, &["install", "claude-code"]);
            let moved = keryx_in(&env, &["import", "claude-code"]);
            assert!(moved.contains("imported as"), "{moved}");
            json!({})
        } else {
            own
        };
        let scenario = Scenario::new()
            .shell("echo value=$E2E_CARRIED")
            .text("final text.");
        let run = env.run(Host::ClaudeCode, &project_hooks, &scenario);
        assert_eq!(run.code, 0, "Claude Code failed\n{}", run.describe());
        run.tool_results(run.body(1))
    };
    let native = carried(false);
    assert!(
        native.iter().any(|r| r.contains("value=from-env-file")),
        "under Claude Code itself the export reaches the shell: {native:?}"
    );
    let imported = carried(true);
    assert!(
        imported.iter().any(|r| r.contains("value=from-env-file")),
        "after import the export reaches the shell: {imported:?}"
    );
}

// ------------------------------------------------------------------ packaging and trust

/// `keryx-hooks <args>` in `env`'s home and project (hermetic), asserting success.
fn keryx_in(env: &E2eEnv, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "KERYX_SNAPSHOT_ROOT",
            env.home.join(".agentic/hooks-snapshot"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "keryx-hooks {args:?} failed:\n{text}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The real Claude Code loads the plugin `install --format plugin` wrote,
/// with `--plugin-dir` and nothing in its settings: the plugin passes the
/// host's own strict validation, and its hooks run keryx-hooks, whose gate
/// (from the snapshot) denies the command and tells the model why.
#[test]
fn claude_code_runs_the_generated_plugins_hooks_with_plugin_dir() {
    const REASON: &str = "E2E-PLUGIN-DENY: echo is not allowed here";
    let env = E2eEnv::new();
    let marker = env.path("denied-command-ran");
    let script = env.deny_echo_gate(REASON);
    env.keryx_user_hooks(
        &json!({ "schemaVersion": "1.0.0", "hooks": { "PreToolUse": [
            { "id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate" },
            { "id": "no-echo", "class": "gate", "matcher": "*", "runsIn": "unsandboxed",
              "timeoutMs": 20000, "command": { "argv": ["/bin/sh", script] } }
        ]}}),
    );
    let out_dir = env.path("plugins");
    let said = keryx_in(
        &env,
        &[
            "install",
            "claude-code",
            "--format",
            "plugin",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(said.contains("--plugin-dir"), "{said}");
    let plugin = out_dir.join("claude-code");
    assert!(
        !env.home.join(".claude/settings.json").exists(),
        "--format plugin wrote the settings"
    );

    let bin = Host::ClaudeCode.binary();
    let validate = Command::new(&bin)
        .args(["plugin", "validate"])
        .arg(&plugin)
        .args(["--strict", "--json"])
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&validate.stdout).unwrap_or_else(|e| {
        panic!(
            "`claude plugin validate --json` printed no JSON ({e}):\n{}{}",
            String::from_utf8_lossy(&validate.stdout),
            String::from_utf8_lossy(&validate.stderr)
        )
    });
    assert_eq!(report["success"], true, "{report:#}");
    let provided = report["provides"]["hooks"].as_array().unwrap();
    assert_eq!(
        provided.len(),
        keryx_hooks::hosts::adapter("claude-code")
            .unwrap()
            .wired_events()
            .count(),
        "{report:#}"
    );

    let work = env.root.join("mock-claude-plugin");
    std::fs::create_dir_all(&work).unwrap();
    let scenario = Scenario::new()
        .shell(&format!(
            "echo e2e > {}",
            sh_quote(marker.to_str().unwrap())
        ))
        .text("final text.");
    let mock = Mock::start("anthropic", &scenario, &work);
    let mut cmd = Command::new(&bin);
    cmd.current_dir(&env.project)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .env(
            "KERYX_SNAPSHOT_ROOT",
            env.home.join(".agentic/hooks-snapshot"),
        )
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", mock.port),
        )
        .env("ANTHROPIC_API_KEY", "sk-ant-e2e-mock")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .stdin(Stdio::null())
        .args([
            "-p",
            "run the scenario",
            "--output-format",
            "json",
            "--allowedTools",
            "Bash",
            "--plugin-dir",
        ])
        .arg(&plugin);
    let out = run_with_timeout(cmd, &work, HOST_TIMEOUT);
    let requests = mock.requests();
    drop(mock);
    let run = HostRun {
        host: Host::ClaudeCode,
        code: out.code,
        result: parse_result(Host::ClaudeCode, &out.stdout),
        stdout: out.stdout,
        stderr: out.stderr,
        requests,
        dir: env.root.clone(),
    };
    assert!(!out.timed_out, "Claude Code hung\n{}", run.describe());
    assert_eq!(run.code, 0, "Claude Code failed\n{}", run.describe());
    assert!(
        !env.lines("gate.calls").is_empty(),
        "the plugin's hooks never ran the gate\n{}",
        run.describe()
    );
    assert!(
        !marker.exists(),
        "the denied command ran\n{}",
        run.describe()
    );
    let results = run.tool_results(run.body(1));
    assert!(
        results.iter().any(|r| r.contains(REASON)),
        "the deny reason did not reach the model: {results:?}\n{}",
        run.describe()
    );
}

/// Codex's own view of its hooks (`codex app-server`, `hooks/list`) for
/// `cwd`: each hook's key, trust status and current hash.
fn codex_hooks_list(env: &E2eEnv) -> Vec<Value> {
    use std::io::Write;
    let mut child = Command::new(Host::Codex.binary())
        .arg("app-server")
        .current_dir(&env.project)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &env.home)
        .env("CODEX_HOME", codex_home(&env.home))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("codex app-server does not start");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"clientInfo": {"name": "keryx-e2e", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list",
               "params": {"cwds": [env.project]}}),
    ] {
        writeln!(stdin, "{msg}").unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let answer = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(v) if v["id"] == 2 => break v,
            Ok(_) => continue,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("codex app-server did not answer hooks/list within 60 s");
            }
        }
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    answer["result"]["data"][0]["hooks"]
        .as_array()
        .unwrap_or_else(|| panic!("unexpected hooks/list answer: {answer:#}"))
        .clone()
}

/// The `codex-review` check of `keryx-hooks doctor --json` in `env`.
fn doctor_codex_review(env: &E2eEnv) -> Value {
    let out = Command::new(BIN)
        .args(["doctor", "--json"])
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "KERYX_SNAPSHOT_ROOT",
            env.home.join(".agentic/hooks-snapshot"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "codex-review")
        .cloned()
        .unwrap_or_else(|| panic!("no codex-review check: {v:#}"))
}

/// The real Codex and `doctor` agree on hook review: after `install codex`
/// Codex lists our hooks as untrusted and doctor warns; once the trust is
/// recorded as `/hooks` records it (each hook's own current hash, as Codex
/// reports it, under `[hooks.state."<key>"]`), Codex lists them as trusted
/// and the warning clears; a change to one hook makes both ask again.
#[test]
fn codex_hook_review_is_read_where_codex_records_it() {
    let env = E2eEnv::new();
    keryx_in(&env, &["install", "codex"]);
    let ours = |hooks: &[Value]| -> Vec<Value> {
        hooks
            .iter()
            .filter(|h| {
                h["command"]
                    .as_str()
                    .is_some_and(|c| c.contains(" run codex "))
            })
            .cloned()
            .collect()
    };
    let listed = ours(&codex_hooks_list(&env));
    let events = keryx_hooks::hosts::adapter("codex")
        .unwrap()
        .wired_events()
        .count();
    assert_eq!(listed.len(), events, "{listed:#?}");
    assert!(
        listed.iter().all(|h| h["trustStatus"] == "untrusted"),
        "{listed:#?}"
    );
    assert_eq!(doctor_codex_review(&env)["status"], "warn");

    // What trusting them in `/hooks` writes.
    let config = codex_home(&env.home).join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    for h in &listed {
        text.push_str(&format!(
            "\n[hooks.state.{}]\ntrusted_hash = {}\n",
            serde_json::to_string(h["key"].as_str().unwrap()).unwrap(),
            serde_json::to_string(h["currentHash"].as_str().unwrap()).unwrap()
        ));
    }
    std::fs::write(&config, text).unwrap();
    let listed = ours(&codex_hooks_list(&env));
    assert!(
        listed.iter().all(|h| h["trustStatus"] == "trusted"),
        "{listed:#?}"
    );
    let check = doctor_codex_review(&env);
    assert_eq!(check["status"], "ok", "{check:#}");

    // A longer PreToolUse timeout: Codex sees the hook as modified, doctor too.
    env.keryx_user_hooks(
        &json!({ "schemaVersion": "1.0.0", "hooks": { "PreToolUse": [
            { "id": "slow-gate", "class": "gate", "matcher": "*", "runsIn": "unsandboxed",
              "timeoutMs": 30000, "command": { "argv": ["/bin/true"] } }
        ]}}),
    );
    keryx_in(&env, &["install", "codex"]);
    let listed = ours(&codex_hooks_list(&env));
    let modified: Vec<&Value> = listed
        .iter()
        .filter(|h| h["trustStatus"] != "trusted")
        .collect();
    assert_eq!(modified.len(), 1, "{listed:#?}");
    assert_eq!(modified[0]["eventName"], "preToolUse");
    assert_eq!(modified[0]["trustStatus"], "modified");
    let check = doctor_codex_review(&env);
    assert_eq!(check["status"], "warn", "{check:#}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("1 changed since you trusted them"),
        "{check:#}"
    );
}

/// The real Codex adds the plugin `install codex --format plugin` wrote,
/// through the one-plugin marketplace beside it, and lists its hooks (as
/// untrusted, and `doctor` warns); trusted the way Codex records a
/// plugin's hook (`trusted_hash` of the hook, `trusted_content_hash` of the
/// plugin's files), both agree it is trusted.
#[test]
fn codex_adds_the_generated_plugin_and_doctor_follows_its_review() {
    let env = E2eEnv::new();
    let out_dir = env.path("plugins");
    keryx_in(
        &env,
        &[
            "install",
            "codex",
            "--format",
            "plugin",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let codex = |args: &[&str]| {
        let out = Command::new(Host::Codex.binary())
            .args(args)
            .current_dir(&env.project)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &env.home)
            .env("CODEX_HOME", codex_home(&env.home))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "codex {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    std::fs::create_dir_all(codex_home(&env.home)).unwrap();
    codex(&[
        "plugin",
        "marketplace",
        "add",
        out_dir.join("codex").to_str().unwrap(),
    ]);
    codex(&["plugin", "add", "keryx-hooks@keryx-hooks"]);

    let listed: Vec<Value> = codex_hooks_list(&env)
        .into_iter()
        .filter(|h| h["pluginId"] == "keryx-hooks@keryx-hooks")
        .collect();
    let events = keryx_hooks::hosts::adapter("codex")
        .unwrap()
        .wired_events()
        .count();
    assert_eq!(listed.len(), events, "{listed:#?}");
    assert!(
        listed.iter().all(|h| h["trustStatus"] == "untrusted"
            && h["command"]
                .as_str()
                .is_some_and(|c| c.contains(" run codex "))),
        "{listed:#?}"
    );
    assert_eq!(doctor_codex_review(&env)["status"], "warn");

    let config = codex_home(&env.home).join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    for h in &listed {
        let current = h["currentHash"].as_str().unwrap();
        let (hook, content) = current
            .split_once('/')
            .unwrap_or_else(|| panic!("a plugin hook's hash has two parts: {current}"));
        text.push_str(&format!(
            "\n[hooks.state.{}]\ntrusted_hash = {}\ntrusted_content_hash = {}\n",
            serde_json::to_string(h["key"].as_str().unwrap()).unwrap(),
            serde_json::to_string(hook).unwrap(),
            serde_json::to_string(content).unwrap()
        ));
    }
    std::fs::write(&config, text).unwrap();
    let listed: Vec<Value> = codex_hooks_list(&env)
        .into_iter()
        .filter(|h| h["pluginId"] == "keryx-hooks@keryx-hooks")
        .collect();
    assert!(
        listed.iter().all(|h| h["trustStatus"] == "trusted"),
        "{listed:#?}"
    );
    let check = doctor_codex_review(&env);
    assert_eq!(check["status"], "ok", "{check:#}");
}

// ------------------------------------------------------------------ Chat Completions hosts

/// The hosts that speak OpenAI Chat Completions (mock API `chat`), driven
/// through what `keryx-hooks install <host>` wrote into the temp HOME: the
/// test only adds the host's provider settings pointing at the mock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatHost {
    OpenCode,
    Copilot,
    QwenCode,
    Kimi,
    Kilo,
    DeepAgents,
    Vibe,
    Pi,
    Cline,
}

impl ChatHost {
    pub fn name(self) -> &'static str {
        match self {
            ChatHost::OpenCode => "opencode",
            ChatHost::Copilot => "copilot",
            ChatHost::QwenCode => "qwen-code",
            ChatHost::Kimi => "kimi",
            ChatHost::Kilo => "kilo",
            ChatHost::DeepAgents => "deepagents",
            ChatHost::Vibe => "vibe",
            ChatHost::Pi => "pi",
            ChatHost::Cline => "cline",
        }
    }

    /// The installed CLI (installing it, and Node 22 where needed, first).
    fn binary(self) -> PathBuf {
        static DONE: [OnceLock<()>; 9] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        DONE[self as usize].get_or_init(|| install_named(self.name()));
        let bin = match self {
            ChatHost::OpenCode => "opencode",
            // The native binary the npm loader would pick.
            ChatHost::Copilot => "copilot-linux-x64",
            ChatHost::QwenCode => "qwen",
            ChatHost::Kimi => "kimi",
            ChatHost::Kilo => "kilo",
            ChatHost::Pi => "pi",
            ChatHost::Cline => "cline",
            // A virtual environment from PyPI, not npm.
            ChatHost::DeepAgents => {
                return hosts_dir().join(self.name()).join("venv/bin/dcode");
            }
            ChatHost::Vibe => {
                return hosts_dir().join(self.name()).join("venv/bin/vibe");
            }
        };
        hosts_dir()
            .join(self.name())
            .join("node_modules/.bin")
            .join(bin)
    }

    /// PATH for the host: Qwen Code and Kimi Code need Node ≥ 22, which
    /// install-hosts.sh puts in `node22/`.
    fn path(self) -> String {
        let path = std::env::var("PATH").unwrap_or_default();
        match self {
            ChatHost::QwenCode | ChatHost::Kimi => format!(
                "{}:{path}",
                hosts_dir().join("node22/node_modules/.bin").display()
            ),
            _ => path,
        }
    }

    /// Runs `prompt` headless in `env`'s project against the mock scripted
    /// by `scenario`, after adding the provider settings to the host's
    /// config (next to the hooks `install` wrote).
    pub fn run(self, env: &E2eEnv, scenario: &Scenario, prompt: &str) -> ChatRun {
        let bin = self.binary();
        let (home, project) = (&env.home, &env.project);
        let work = env.root.join(format!("mock-{}", self.name()));
        std::fs::create_dir_all(&work).unwrap();
        let mock = Mock::start("chat", scenario, &work);
        let base_url = format!("http://127.0.0.1:{}/v1", mock.port);
        let mut cmd = Command::new(&bin);
        cmd.current_dir(project)
            .env_clear()
            .env("PATH", self.path())
            .env("HOME", home)
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .env("CI", "true")
            .env("KERYX_SNAPSHOT_ROOT", home.join(".agentic/hooks-snapshot"))
            .stdin(Stdio::null());
        match self {
            ChatHost::OpenCode => {
                write_json(
                    &project.join("opencode.json"),
                    &json!({
                        "model": "mock/mock-model",
                        "small_model": "mock/mock-model",
                        "autoupdate": false,
                        "share": "disabled",
                        "permission": {"bash": "allow", "edit": "allow", "webfetch": "allow"},
                        "provider": {"mock": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "Mock",
                            "options": {"baseURL": base_url, "apiKey": "sk-e2e-mock"},
                            "models": {"mock-model": {"name": "Mock Model", "tool_call": true,
                                "limit": {"context": 128000, "output": 4096}}}
                        }}
                    }),
                );
                // OpenCode installs its plugin package into every config
                // folder that has a plugin before loading it; the pinned
                // copy install-hosts.sh put beside the CLI keeps the run
                // offline (and ~30 s shorter).
                let config_dir = home.join(".config/opencode");
                copy_tree(&hosts_dir().join("opencode/config-deps"), &config_dir);
                cmd.env("XDG_CONFIG_HOME", home.join(".config"))
                    .env("XDG_DATA_HOME", home.join(".local/share"))
                    .env("XDG_CACHE_HOME", home.join(".cache"))
                    .env("XDG_STATE_HOME", home.join(".local/state"))
                    .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
                    .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
                    .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
                    .env("OPENCODE_DISABLE_SHARE", "1")
                    .env("OPENCODE_DISABLE_CLAUDE_CODE", "1")
                    .args(["run", "--format", "json", prompt]);
            }
            ChatHost::Copilot => {
                // BYOK and offline: no GitHub login.
                cmd.env("COPILOT_HOME", home.join(".copilot"))
                    .env("COPILOT_OFFLINE", "true")
                    .env("COPILOT_PROVIDER_BASE_URL", &base_url)
                    .env("COPILOT_PROVIDER_API_KEY", "sk-e2e-mock")
                    .env("COPILOT_MODEL", "gpt-4.1")
                    .env("COPILOT_AUTO_UPDATE", "false")
                    .args([
                        "-p",
                        prompt,
                        "--allow-all-tools",
                        "--no-auto-update",
                        "--no-color",
                    ]);
            }
            ChatHost::QwenCode => {
                let file = home.join(".qwen/settings.json");
                let mut settings: Value = std::fs::read_to_string(&file)
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or_else(|| json!({}));
                for (k, v) in [
                    ("security", json!({"auth": {"selectedType": "openai"}})),
                    ("model", json!({"name": "qwen3-coder-plus"})),
                    ("privacy", json!({"usageStatisticsEnabled": false})),
                    ("telemetry", json!({"enabled": false})),
                ] {
                    settings[k] = v;
                }
                write_json(&file, &settings);
                cmd.env("OPENAI_BASE_URL", &base_url)
                    .env("OPENAI_API_KEY", "sk-e2e-mock")
                    .env("OPENAI_MODEL", "qwen3-coder-plus")
                    .args([
                        "--auth-type",
                        "openai",
                        "--yolo",
                        "--output-format",
                        "json",
                        prompt,
                    ]);
            }
            ChatHost::Kimi => {
                let kimi_home = home.join(".kimi-code");
                let file = kimi_home.join("config.toml");
                let hooks = std::fs::read_to_string(&file).unwrap_or_default();
                // Top-level keys and the provider tables first, then the
                // [[hooks]] install wrote.
                write(
                    &file,
                    &format!(
                        r#"default_model = "mock/mock-model"
telemetry = false
auto_session_title = false

[providers.mock]
type = "openai"
base_url = "{base_url}"
api_key = "sk-e2e-mock"

[models."mock/mock-model"]
provider = "mock"
model = "mock-model"
max_context_size = 128000

{hooks}"#
                    ),
                );
                cmd.env("KIMI_CODE_HOME", &kimi_home).args([
                    "-p",
                    prompt,
                    "--output-format",
                    "stream-json",
                ]);
            }
            ChatHost::Kilo => {
                // OpenCode's config schema, in Kilo Code's own file name.
                write_json(
                    &project.join("kilo.json"),
                    &json!({
                        "model": "mock/mock-model",
                        "small_model": "mock/mock-model",
                        "autoupdate": false,
                        "share": "disabled",
                        "permission": {"bash": "allow", "edit": "allow", "webfetch": "allow"},
                        "provider": {"mock": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "Mock",
                            "options": {"baseURL": base_url, "apiKey": "sk-e2e-mock"},
                            "models": {"mock-model": {"name": "Mock Model", "tool_call": true,
                                "limit": {"context": 128000, "output": 4096}}}
                        }}
                    }),
                );
                cmd.env("XDG_CONFIG_HOME", home.join(".config"))
                    .env("XDG_DATA_HOME", home.join(".local/share"))
                    .env("XDG_CACHE_HOME", home.join(".cache"))
                    .env("XDG_STATE_HOME", home.join(".local/state"))
                    .env("KILO_DISABLE_MODELS_FETCH", "1")
                    .env("KILO_DISABLE_AUTOUPDATE", "1")
                    .env("KILO_DISABLE_LSP_DOWNLOAD", "1")
                    .env("KILO_DISABLE_SHARE", "1")
                    .env("KILO_DISABLE_CLAUDE_CODE", "1")
                    .env("KILO_NO_DAEMON", "1")
                    .env("KILO_DISABLE_SESSION_INGEST", "1")
                    .env("KILO_TELEMETRY_LEVEL", "off")
                    .env("KILO_DISABLE_PRESENCE", "1")
                    .args(["run", "--format", "json", prompt]);
            }
            ChatHost::DeepAgents => {
                // LangChain's ChatOpenAI, on Chat Completions rather than
                // the Responses API; `-n` is headless, `-S all` lets the
                // shell tool run any command.
                cmd.env("OPENAI_BASE_URL", &base_url)
                    .env("OPENAI_API_KEY", "sk-e2e-mock")
                    .env("TERM", "dumb")
                    .args([
                        "-n",
                        prompt,
                        "-M",
                        "openai:mock-model",
                        "-S",
                        "all",
                        "--no-tracing",
                        "--model-params",
                        r#"{"use_responses_api": false}"#,
                    ]);
            }
            ChatHost::Vibe => {
                // Its own config.toml beside the hooks.toml install wrote;
                // `--trust` as a person who trusts the folder.
                write(
                    &home.join(".vibe/config.toml"),
                    &format!(
                        r#"active_model = "mock"
enable_update_checks = false
enable_auto_update = false
enable_telemetry = false
enable_otel = false

[[providers]]
name = "mock"
api_base = "{base_url}"
api_key_env_var = "MOCK_API_KEY"
api_style = "openai"

[models.mock]
name = "mock-model"
provider = "mock"
alias = "mock"
"#
                    ),
                );
                cmd.env("MOCK_API_KEY", "sk-e2e-mock")
                    .env("TERM", "dumb")
                    .args([
                        "-p",
                        prompt,
                        "--output",
                        "json",
                        "--auto-approve",
                        "--trust",
                    ]);
            }
            ChatHost::Pi => {
                // A custom provider in models.json; the extension install
                // generated is discovered from ~/.pi/agent/extensions/.
                write_json(
                    &home.join(".pi/agent/models.json"),
                    &json!({"providers": {"mock": {
                        "baseUrl": base_url, "api": "openai-completions", "apiKey": "sk-e2e-mock",
                        "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                        "models": [{"id": "mock-model", "reasoning": false,
                            "contextWindow": 128000, "maxTokens": 4096}]
                    }}}),
                );
                cmd.env("PI_OFFLINE", "1").env("TERM", "dumb").args([
                    "-p",
                    "--mode",
                    "json",
                    "--provider",
                    "mock",
                    "--model",
                    "mock-model",
                    prompt,
                ]);
            }
            ChatHost::Cline => {
                // What `cline auth -p openai-compatible …` writes; `--json`
                // runs the prompt headless in act mode with auto-approve.
                write_json(
                    &home.join(".cline/data/settings/providers.json"),
                    &json!({"version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
                        "providers": {"openai-compatible": {"settings": {
                            "provider": "openai-compatible", "apiKey": "sk-e2e-mock",
                            "model": "mock-model", "baseUrl": base_url},
                            "updatedAt": "2026-12-04T00:00:00.000Z",
                            "tokenSource": "manual"}}}),
                );
                cmd.env("TERM", "dumb").args(["--json", prompt]);
            }
        }
        let out = run_with_timeout(cmd, &work, HOST_TIMEOUT);
        let requests = mock.requests();
        drop(mock);
        let run = ChatRun {
            host: self,
            code: out.code,
            stdout: out.stdout,
            stderr: out.stderr,
            requests,
            dir: env.root.clone(),
        };
        if out.timed_out {
            panic!(
                "{} did not finish within {HOST_TIMEOUT:?} and was killed\n{}",
                self.name(),
                run.describe()
            );
        }
        run
    }
}

/// Copies the files under `from` into `to` (`cp -a`).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from.join("."))
        .arg(to)
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "cannot copy {} to {}; run `tests/e2e/install-hosts.sh opencode`",
        from.display(),
        to.display()
    );
}

/// install-hosts.sh for one host by name; a failure names the command that
/// fixes it.
fn install_named(name: &str) {
    let script = install_script();
    let out = Command::new("bash")
        .arg(&script)
        .arg(name)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run `bash {}`: {e}", script.display()));
    assert!(
        out.status.success(),
        "installing {name} failed; run `tests/e2e/install-hosts.sh {name}` by hand (needs node and npm, \
         e.g. `apt-get install -y nodejs npm`, and the npm registry):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What one Chat Completions host run did and what the model API received.
#[derive(Debug)]
pub struct ChatRun {
    pub host: ChatHost,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub requests: Vec<Value>,
    pub dir: PathBuf,
}

impl ChatRun {
    /// Everything the model sees (all messages, system included), as JSON text.
    pub fn model_view(&self, body: &Value) -> String {
        body["messages"].to_string()
    }

    /// The `role: "tool"` results in a request, as text.
    pub fn tool_results(&self, body: &Value) -> Vec<String> {
        arr(&body["messages"])
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| text_of(&m["content"]))
            .collect()
    }

    /// The text of every user message after the first assistant turn
    /// (where a Stop continuation lands).
    pub fn user_text_after_first_turn(&self, body: &Value) -> String {
        let msgs = arr(&body["messages"]);
        let first_assistant = msgs
            .iter()
            .position(|m| m["role"] == "assistant")
            .unwrap_or(msgs.len());
        msgs[first_assistant..]
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| text_of(&m["content"]))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What a failure message shows of one agent-loop request.
    fn request_detail(&self, body: &Value) -> String {
        let last = arr(&body["messages"])
            .last()
            .map(|m| text_of(&m["content"]))
            .unwrap_or_default();
        format!(
            "tool_results={} last={}",
            clip(&format!("{:?}", self.tool_results(body)), 400),
            clip(&last, 300)
        )
    }
}

const PROMPT_REASON: &str = "E2E-PROMPT-BLOCKED: no secrets in prompts";
const PROMPT_WORD: &str = "E2E-FORBIDDEN-WORD";

/// `keryx-hooks install <host>` in `env` after writing the keryx user
/// config `hooks` (the built-in Bash gate off, so the user gate answers).
fn keryx_install(env: &E2eEnv, host: ChatHost, mut hooks: serde_json::Map<String, Value>) {
    hooks
        .entry("PreToolUse")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .unwrap()
        .insert(
            0,
            json!({ "id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate" }),
        );
    env.keryx_user_hooks(&json!({ "schemaVersion": "1.0.0", "hooks": hooks }));
    keryx_in(env, &["install", host.name()]);
}

fn gate(id: &str, script: &Path) -> Value {
    json!({ "id": id, "class": "gate", "matcher": "*", "runsIn": "unsandboxed",
            "timeoutMs": 20000, "command": { "argv": ["/bin/sh", script] } })
}

/// A keryx PreToolUse gate denies the shell command: it never runs, and the
/// reason is the tool result the model reads next.
fn chat_pre_tool_deny(host: ChatHost) {
    let env = E2eEnv::new();
    let marker = env.path("denied-command-ran");
    let script = env.deny_echo_gate(DENY_REASON);
    let mut hooks = serde_json::Map::new();
    hooks.insert("PreToolUse".into(), json!([gate("e2e-no-echo", &script)]));
    keryx_install(&env, host, hooks);
    let scenario = Scenario::new()
        .shell(&format!(
            "echo e2e > {}",
            sh_quote(marker.to_str().unwrap())
        ))
        .text("final text.");
    let run = host.run(&env, &scenario, "run the scenario");
    let why = || run.describe();
    assert_eq!(run.code, 0, "the host failed\n{}", why());
    assert!(
        !env.lines("gate.calls").is_empty(),
        "the keryx gate never ran\n{}",
        why()
    );
    assert!(!marker.exists(), "the denied command ran\n{}", why());
    let results = run.tool_results(run.body(1));
    assert!(
        results.iter().any(|r| r.contains(DENY_REASON)),
        "the deny reason did not reach the model; tool results: {results:?}\n{}",
        why()
    );
}

/// A keryx UserPromptSubmit gate blocks the prompt: the model never sees it.
fn chat_prompt_block(host: ChatHost) {
    let env = E2eEnv::new();
    let script = env.script(
        "prompt-gate.sh",
        &format!(
            r#"payload=$(cat)
echo call >> {calls}
case "$payload" in
  *{word}*) echo {reason} >&2; exit 2 ;;
esac
exit 0
"#,
            calls = sh_quote(env.path("prompt.calls").to_str().unwrap()),
            word = sh_quote(PROMPT_WORD),
            reason = sh_quote(PROMPT_REASON),
        ),
    );
    let mut hooks = serde_json::Map::new();
    hooks.insert(
        "UserPromptSubmit".into(),
        json!([gate("e2e-prompt-gate", &script)]),
    );
    keryx_install(&env, host, hooks);
    let scenario = Scenario::new().text("you should not see this.");
    let run = host.run(
        &env,
        &scenario,
        &format!("please do {PROMPT_WORD} right now"),
    );
    let why = || run.describe();
    assert!(
        !env.lines("prompt.calls").is_empty(),
        "the keryx prompt gate never ran\n{}",
        why()
    );
    let leaked: Vec<_> = run
        .requests
        .iter()
        .filter(|r| r["body"].to_string().contains(PROMPT_WORD))
        .collect();
    assert!(
        leaked.is_empty(),
        "the blocked prompt reached the model API\n{}",
        why()
    );
}

/// keryx SessionStart context reaches the first model request.
fn chat_session_start_context(host: ChatHost) {
    chat_context_reaches_the_model(host, "SessionStart", CONTEXT);
}

/// keryx UserPromptSubmit context reaches the model with the prompt (the
/// only channel Kimi Code has).
fn chat_prompt_context(host: ChatHost) {
    chat_context_reaches_the_model(host, "UserPromptSubmit", "E2E-PROMPT-CONTEXT-51C9");
}

/// A context hook on `event` whose text must be in the first model request.
fn chat_context_reaches_the_model(host: ChatHost, event: &str, text: &str) {
    let env = E2eEnv::new();
    let script = env.script(
        "context.sh",
        &format!(
            "cat >/dev/null\necho call >> {calls}\nprintf '%s\\n' {out}\n",
            calls = sh_quote(env.path("ctx.calls").to_str().unwrap()),
            out = sh_quote(json!({ "additionalContext": text }).to_string()),
        ),
    );
    let mut hooks = serde_json::Map::new();
    hooks.insert(
        event.into(),
        json!([{ "id": "e2e-context", "class": "context", "runsIn": "unsandboxed",
                 "timeoutMs": 20000, "command": { "argv": ["/bin/sh", script] } }]),
    );
    keryx_install(&env, host, hooks);
    let run = host.run(
        &env,
        &Scenario::new().text("final text."),
        "run the scenario",
    );
    let why = || run.describe();
    assert_eq!(run.code, 0, "the host failed\n{}", why());
    assert!(
        !env.lines("ctx.calls").is_empty(),
        "the {event} hook never ran\n{}",
        why()
    );
    assert!(
        run.model_view(run.body(0)).contains(text),
        "the {event} context did not reach the first model request\n{}",
        why()
    );
}

/// keryx PostToolUse context is appended to the tool result the model
/// reads next.
fn chat_post_tool_context(host: ChatHost) {
    let env = E2eEnv::new();
    let text = "E2E-POST-TOOL-CONTEXT-7D21";
    let script = env.script(
        "context.sh",
        &format!(
            "cat >/dev/null\necho call >> {calls}\nprintf '%s\\n' {out}\n",
            calls = sh_quote(env.path("ctx.calls").to_str().unwrap()),
            out = sh_quote(json!({ "additionalContext": text }).to_string()),
        ),
    );
    let mut hooks = serde_json::Map::new();
    hooks.insert(
        "PostToolUse".into(),
        json!([{ "id": "e2e-context", "class": "context", "matcher": "*", "runsIn": "unsandboxed",
                 "timeoutMs": 20000, "command": { "argv": ["/bin/sh", script] } }]),
    );
    keryx_install(&env, host, hooks);
    let scenario = Scenario::new().shell("echo hi").text("final text.");
    let run = host.run(&env, &scenario, "run the scenario");
    let why = || run.describe();
    assert_eq!(run.code, 0, "the host failed\n{}", why());
    assert!(
        !env.lines("ctx.calls").is_empty(),
        "the PostToolUse hook never ran\n{}",
        why()
    );
    let results = run.tool_results(run.body(1));
    assert!(
        results.iter().any(|r| r.contains(text) && r.contains("hi")),
        "the PostToolUse context is not in the tool result: {results:?}\n{}",
        why()
    );
}

/// A keryx Stop gate that blocks once: the host continues the turn with
/// the reason, exactly once.
fn chat_stop_block_once(host: ChatHost) {
    let env = E2eEnv::new();
    let calls = sh_quote(env.path("stop.calls").to_str().unwrap());
    let script = env.script(
        "stop-once.sh",
        &format!(
            r#"cat >/dev/null
echo call >> {calls}
if [ "$(wc -l < {calls})" -gt 1 ]; then exit 0; fi
echo {reason} >&2
exit 2
"#,
            reason = sh_quote(STOP_REASON),
        ),
    );
    let mut hooks = serde_json::Map::new();
    hooks.insert("Stop".into(), json!([gate("e2e-stop-once", &script)]));
    keryx_install(&env, host, hooks);
    let scenario = Scenario::new()
        .text("first final text.")
        .text("second final text.")
        .text("third final text.");
    let run = host.run(&env, &scenario, "run the scenario");
    let why = || run.describe();
    assert_eq!(run.code, 0, "the host failed\n{}", why());
    assert!(
        !env.lines("stop.calls").is_empty(),
        "the Stop gate never ran\n{}",
        why()
    );
    assert_eq!(
        run.main_requests().len(),
        2,
        "the Stop block should continue the turn exactly once\n{}",
        why()
    );
    let continued = match host {
        // Vibe revises the turn: the answer the gate refused is left out of
        // the history and the reason is the last user message.
        ChatHost::Vibe => arr(&run.body(1)["messages"])
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(|m| text_of(&m["content"]))
            .unwrap_or_default(),
        _ => run.user_text_after_first_turn(run.body(1)),
    };
    assert!(
        continued.contains(STOP_REASON),
        "the continuation did not carry the Stop reason: {continued:?}\n{}",
        why()
    );
}

macro_rules! chat_host_tests {
    ($module:ident, $host:expr, [$($behaviour:ident),*]) => {
        mod $module {
            use super::*;
            $(
                #[test]
                fn $behaviour() {
                    super::$behaviour($host);
                }
            )*
        }
    };
}

chat_host_tests!(
    opencode,
    ChatHost::OpenCode,
    [
        chat_pre_tool_deny,
        chat_prompt_block,
        chat_session_start_context,
        chat_prompt_context
    ]
);
chat_host_tests!(
    kilo,
    ChatHost::Kilo,
    [
        chat_pre_tool_deny,
        chat_prompt_block,
        chat_session_start_context,
        chat_prompt_context
    ]
);
chat_host_tests!(
    deepagents,
    ChatHost::DeepAgents,
    [
        chat_pre_tool_deny,
        chat_prompt_block,
        chat_session_start_context,
        chat_prompt_context,
        chat_stop_block_once
    ]
);
chat_host_tests!(
    pi,
    ChatHost::Pi,
    [
        chat_pre_tool_deny,
        chat_prompt_block,
        chat_session_start_context,
        chat_prompt_context,
        chat_post_tool_context,
        chat_stop_block_once
    ]
);
chat_host_tests!(
    vibe,
    ChatHost::Vibe,
    [
        chat_pre_tool_deny,
        chat_post_tool_context,
        chat_stop_block_once
    ]
);
chat_host_tests!(
    copilot,
    ChatHost::Copilot,
    [
        chat_pre_tool_deny,
        chat_prompt_block,
        chat_session_start_context,
        chat_prompt_context,
        chat_stop_block_once
    ]
);
chat_host_tests!(
    qwen_code,
    ChatHost::QwenCode,
    [
        chat_pre_tool_deny,
        chat_prompt_block,
        chat_session_start_context,
        chat_prompt_context,
        chat_stop_block_once
    ]
);
chat_host_tests!(
    kimi,
    ChatHost::Kimi,
    [
        chat_pre_tool_deny,
        chat_prompt_block,
        chat_prompt_context,
        chat_stop_block_once
    ]
);

/// The real deepagents-code, which lets a call run when a hook fails, wired
/// by the real `install`: the PreToolUse and UserPromptSubmit commands
/// answer the refusal themselves (exit 2, the reason on stderr) when the
/// keryx binary is gone, so not even the prompt goes out; and when only the
/// PreToolUse shim is gone or killed, the tool does not run and the model
/// reads why.
#[test]
fn deepagents_refuses_the_tool_when_its_shim_is_gone_or_killed() {
    let host = ChatHost::DeepAgents;
    let env = E2eEnv::new();
    host.binary();
    let old = env.path("old/keryx-hooks");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &old).unwrap();
    let out = Command::new(&old)
        .args(["install", host.name()])
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "KERYX_SNAPSHOT_ROOT",
            env.home.join(".agentic/hooks-snapshot"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "install failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let hooks_file = env.home.join(".deepagents/hooks.json");
    let read = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(&hooks_file).unwrap()).unwrap()
    };
    for event in ["PreToolUse", "UserPromptSubmit"] {
        let command = read()["hooks"][event][0]["hooks"][0]["command"].clone();
        assert!(
            command.as_str().unwrap().contains(" || { echo "),
            "{event}: {command}"
        );
    }
    let marker = env.path("tool-ran");
    let scenario = Scenario::new()
        .shell(&format!(
            "echo ran > {}",
            sh_quote(marker.to_str().unwrap())
        ))
        .text("final text.");

    // The binary moved away: the prompt is refused, no model call.
    std::fs::remove_file(&old).unwrap();
    let run = host.run(&env, &scenario, "run the scenario");
    assert!(run.main_requests().is_empty(), "{}", run.describe());
    assert!(
        run.stdout
            .contains("keryx-hooks could not answer UserPromptSubmit, so it is refused"),
        "{}",
        run.describe()
    );

    // Only the PreToolUse shim gone, then killed: the tool does not run.
    std::fs::copy(BIN, &old).unwrap();
    let killed = env.script("killed/keryx-hooks", "kill -9 $$");
    for shim in [env.path("gone/keryx-hooks"), killed] {
        let mut v = read();
        let pre = &mut v["hooks"]["PreToolUse"][0]["hooks"][0];
        let (_, rest) = pre["command"]
            .as_str()
            .unwrap()
            .split_once(" run ")
            .unwrap();
        pre["command"] = json!(format!("{} run {rest}", sh_quote(shim.to_str().unwrap())));
        write_json(&hooks_file, &v);
        let run = host.run(&env, &scenario, "run the scenario");
        let why = || run.describe();
        assert_eq!(run.code, 0, "deepagents-code failed\n{}", why());
        assert!(!marker.exists(), "the tool ran\n{}", why());
        let results = run.tool_results(run.body(1));
        assert!(
            results
                .iter()
                .any(|r| r.contains("keryx-hooks could not answer PreToolUse, so it is refused")),
            "{results:?}\n{}",
            why()
        );
    }
}

/// The real Pi with the extension `install` generated: with keryx-hooks
/// gone, the prompt is refused before any model call; with only the tool
/// call wired and keryx-hooks gone, killed, hung past the event's budget
/// (Pi itself would wait forever) or answering garbage, the extension
/// refuses the tool call, so the tool does not run and the model reads why;
/// the run ends normally.
#[test]
fn pi_refuses_the_tool_when_its_shim_is_gone_killed_or_hung() {
    let host = ChatHost::Pi;
    let env = E2eEnv::new();
    host.binary();
    keryx_in(&env, &["install", host.name()]);
    let file = env.home.join(".pi/agent/extensions/keryx-hooks.ts");
    let generated = std::fs::read_to_string(&file).unwrap();
    let wiring_line = generated
        .lines()
        .find(|l| l.starts_with("const WIRING = "))
        .unwrap()
        .to_owned();
    let wiring: Value = serde_json::from_str(
        wiring_line
            .trim_start_matches("const WIRING = ")
            .trim_end_matches(';'),
    )
    .unwrap();
    let marker = env.path("tool-ran");
    let scenario = Scenario::new()
        .shell(&format!(
            "echo ran > {}",
            sh_quote(marker.to_str().unwrap())
        ))
        .text("final text.");
    let gone = env.path("gone/keryx-hooks");
    let mut w = wiring.clone();
    w["binary"] = json!(gone.to_str().unwrap());
    write(
        &file,
        &generated.replace(&wiring_line, &format!("const WIRING = {w};")),
    );
    let run = host.run(&env, &scenario, "run the scenario");
    assert_eq!(run.code, 0, "{}", run.describe());
    assert!(run.main_requests().is_empty(), "{}", run.describe());
    assert!(
        run.stderr.contains("the prompt is refused"),
        "{}",
        run.describe()
    );

    let killed = env.script("killed/keryx-hooks", "kill -9 $$");
    let hung = env.script("hung/keryx-hooks", "exec sleep 60");
    let garbage = env.script("garbage/keryx-hooks", "cat >/dev/null; echo '{not json'");
    for (shim, why_refused) in [
        (gone, "cannot run keryx-hooks"),
        (killed, "keryx-hooks exited with status"),
        (hung, "did not answer tool_call within 1500 ms"),
        (garbage, "something that is not JSON"),
    ] {
        let mut w = wiring.clone();
        w["binary"] = json!(shim.to_str().unwrap());
        w["events"] = json!({ "tool_call": 1500 });
        let text = generated.replace(&wiring_line, &format!("const WIRING = {w};"));
        write(&file, &text);
        let run = host.run(&env, &scenario, "run the scenario");
        let why = || run.describe();
        assert_eq!(run.code, 0, "Pi failed\n{}", why());
        assert!(!marker.exists(), "the tool ran\n{}", why());
        let results = run.tool_results(run.body(1));
        assert!(
            results
                .iter()
                .any(|r| r.contains(why_refused) && r.contains("the tool call is refused")),
            "{results:?}\n{}",
            why()
        );
    }
}

/// The real Mistral Vibe, wired by the real `install` with `strict = true`
/// on `pre_tool`: when the keryx binary is gone or killed, Vibe itself
/// refuses the call, so the tool does not run; the turn goes on and the
/// model reads the failure as the tool result.
#[test]
fn vibe_refuses_the_tool_when_its_shim_is_gone_or_killed() {
    let host = ChatHost::Vibe;
    let env = E2eEnv::new();
    host.binary();
    keryx_in(&env, &["install", host.name()]);
    let hooks_file = env.home.join(".vibe/hooks.toml");
    let marker = env.path("tool-ran");
    let scenario = Scenario::new()
        .shell(&format!(
            "echo ran > {}",
            sh_quote(marker.to_str().unwrap())
        ))
        .text("final text.");
    let killed = env.script("killed/keryx-hooks", "kill -9 $$");
    for shim in [env.path("gone/keryx-hooks"), killed] {
        let mut doc: toml_edit::DocumentMut = std::fs::read_to_string(&hooks_file)
            .unwrap()
            .parse()
            .unwrap();
        let pre = doc["hooks"]
            .as_array_of_tables_mut()
            .unwrap()
            .iter_mut()
            .find(|t| t["type"].as_str() == Some("pre_tool"))
            .unwrap();
        assert_eq!(pre["strict"].as_bool(), Some(true), "{pre}");
        let command = pre["command"].as_str().unwrap().to_owned();
        let (_, rest) = command.split_once(" run ").unwrap();
        pre["command"] =
            toml_edit::value(format!("{} run {rest}", sh_quote(shim.to_str().unwrap())));
        write(&hooks_file, &doc.to_string());
        let run = host.run(&env, &scenario, "run the scenario");
        let why = || run.describe();
        assert_eq!(run.code, 0, "Mistral Vibe failed\n{}", why());
        assert!(!marker.exists(), "the tool ran\n{}", why());
        assert_eq!(run.tool_results(run.body(1)).len(), 1, "{}", why());
    }
}

/// A Copilot subagent (the general-purpose agent through `task`) sends its
/// events with its own id as `sessionId`: keryx files them under the parent
/// session (the subagent's tool call carries `agentId`), runs the
/// SubagentStart hook once, and the subagent's own agentStop is not the
/// session's Stop.
#[test]
fn copilot_subagent_events_belong_to_the_parent_session() {
    let env = E2eEnv::new();
    let record = |name: &str| {
        let log = env.path(&format!("{name}.log"));
        let script = env.script(
            &format!("{name}.sh"),
            &format!(
                "tr -d '\\n' >> {log}\necho >> {log}\n",
                log = sh_quote(log.to_str().unwrap())
            ),
        );
        json!({ "id": format!("e2e-{}", name.to_lowercase()), "class": "observe", "matcher": "*",
                "runsIn": "unsandboxed", "timeoutMs": 20000, "command": { "argv": ["/bin/sh", script] } })
    };
    let mut hooks = serde_json::Map::new();
    for event in ["SessionStart", "PreToolUse", "SubagentStart", "Stop"] {
        hooks.insert(event.into(), json!([record(event)]));
    }
    keryx_install(&env, ChatHost::Copilot, hooks);
    let scenario = Scenario::new()
        .step(
            json!([{ "tool": "task", "input": { "agent_type": "general-purpose",
            "description": "sub job", "prompt": "SUBAGENT_TASK: run echo", "name": "sub" } }]),
        )
        .text("all done.")
        .subagent_step(json!([{ "shell": "echo hi-from-subagent" }]))
        .subagent_step(json!([{ "text": "sub done." }]));
    let run = ChatHost::Copilot.run(&env, &scenario, "run the scenario");
    let why = || run.describe();
    assert_eq!(run.code, 0, "Copilot failed\n{}", why());
    let payloads = |name: &str| -> Vec<Value> {
        env.lines(&format!("{name}.log"))
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let start = payloads("SessionStart");
    assert_eq!(start.len(), 1, "{start:#?}\n{}", why());
    let session = start[0]["sessionId"].clone();
    let pre = payloads("PreToolUse");
    let inside: Vec<&Value> = pre
        .iter()
        .filter(|p| p["tool_input"]["command"] == "echo hi-from-subagent")
        .collect();
    assert_eq!(inside.len(), 1, "{pre:#?}\n{}", why());
    assert_eq!(inside[0]["sessionId"], session, "{pre:#?}");
    assert!(inside[0]["agentId"].is_string(), "{pre:#?}");
    assert_ne!(inside[0]["agentId"], session, "{pre:#?}");
    let spawned = payloads("SubagentStart");
    assert_eq!(spawned.len(), 1, "{spawned:#?}\n{}", why());
    let stops = payloads("Stop");
    assert_eq!(stops.len(), 1, "{stops:#?}\n{}", why());
    assert_eq!(stops[0]["sessionId"], session, "{stops:#?}");
}

/// One subagent spawn in the real Claude Code reaches keryx twice (the
/// PreToolUse of Agent, then Claude's own SubagentStart): a SubagentStart
/// gate and a SubagentStart observer each run once, and the observer sees
/// keryx's own `inheritedHookIds`.
#[test]
fn claude_code_runs_each_subagent_start_hook_once_per_spawn() {
    let env = E2eEnv::new();
    let record = |name: &str, class: &str| {
        let log = env.path(&format!("{name}.log"));
        let script = env.script(
            &format!("{name}.sh"),
            &format!(
                "tr -d '\\n' >> {log}\necho >> {log}\n",
                log = sh_quote(log.to_str().unwrap())
            ),
        );
        json!({ "id": name, "class": class, "runsIn": "unsandboxed", "timeoutMs": 20000,
                "command": { "argv": ["/bin/sh", script] } })
    };
    env.keryx_user_hooks(&json!({ "schemaVersion": "1.0.0", "hooks": {
        "PreToolUse": [{ "id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate" }],
        "SubagentStart": [record("spawn-gate", "gate"), record("spawn-log", "observe")]
    }}));
    let hooks = hooks_config(&[
        (
            "PreToolUse",
            "*",
            keryx_command(Host::ClaudeCode, "PreToolUse"),
        ),
        (
            "SubagentStart",
            "",
            keryx_command(Host::ClaudeCode, "SubagentStart"),
        ),
    ]);
    let scenario = Scenario::new()
        .step(
            json!([{ "tool": "Agent", "input": { "description": "echo in subagent",
            "prompt": "SUBAGENT_TASK: say hi", "subagent_type": "general-purpose" } }]),
        )
        .text("all done.")
        .subagent_step(json!([{ "text": "sub done." }]));
    let run = env.run(Host::ClaudeCode, &hooks, &scenario);
    let why = || run.describe();
    assert_eq!(run.code, 0, "Claude Code failed\n{}", why());
    let gate = env.lines("spawn-gate.log");
    let log = env.lines("spawn-log.log");
    assert_eq!(
        gate.len(),
        1,
        "the gate ran {} times\n{}",
        gate.len(),
        why()
    );
    assert_eq!(
        log.len(),
        1,
        "the observer ran {} times\n{}",
        log.len(),
        why()
    );
    let seen: Value = serde_json::from_str(&log[0]).unwrap();
    assert!(
        seen["inheritedHookIds"]
            .as_array()
            .is_some_and(|ids| ids.contains(&json!("spawn-gate"))),
        "{seen:#}"
    );
}

// ------------------------------------------------------------------ fail closed

/// Installs `host` with a copy of the keryx binary at `root/old/keryx-hooks`
/// (the one a person later moves or deletes), with the real host CLI on
/// `PATH` so install asks its version.
fn install_with_copy(env: &E2eEnv, host: Host) -> PathBuf {
    let old = env.path("old/keryx-hooks");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &old).unwrap();
    let host_bin = host.binary();
    let path = format!(
        "{}:{}",
        host_bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(&old)
        .args(["install", host.name()])
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", path)
        .env(
            "KERYX_SNAPSHOT_ROOT",
            env.home.join(".agentic/hooks-snapshot"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "install failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    old
}

/// The real Claude Code, wired by the real `install` (which found it new
/// enough and wrote `onFailure: "block"`), refuses the prompt when the
/// keryx binary it runs is gone, and a tool call when the shim on
/// PreToolUse is gone or hangs past the host's timeout.
#[test]
fn claude_code_refuses_the_tool_when_its_shim_is_gone_or_hung() {
    let env = E2eEnv::new();
    let old = install_with_copy(&env, Host::ClaudeCode);
    let settings_file = env.home.join(".claude/settings.json");
    let read = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap()
    };
    let settings = read();
    for event in ["PreToolUse", "UserPromptSubmit"] {
        assert_eq!(
            settings["hooks"][event][0]["hooks"][0]["onFailure"], "block",
            "{settings}"
        );
    }

    let marker = env.path("tool-ran");
    let scenario = Scenario::new()
        .shell(&format!(
            "echo ran > {}",
            sh_quote(marker.to_str().unwrap())
        ))
        .text("final text.");

    // The binary moved away: not even the prompt goes out.
    std::fs::remove_file(&old).unwrap();
    let run = env.run(Host::ClaudeCode, &json!({}), &scenario);
    assert_eq!(run.code, 0, "Claude Code failed\n{}", run.describe());
    assert!(run.main_requests().is_empty(), "{}", run.describe());
    assert!(
        run.stdout
            .contains("blocking because onFailure is \\\"block\\\""),
        "{}",
        run.describe()
    );

    // Only the PreToolUse shim gone, then hung (the host's timeout cut to
    // 2 s to keep the run short): the tool does not run either way.
    std::fs::copy(BIN, &old).unwrap();
    let hang = env.script("hang/keryx-hooks", "sleep 60");
    for (shim, timeout, says) in [
        (
            env.path("gone/keryx-hooks"),
            None,
            "failed; blocking because onFailure",
        ),
        (hang, Some(2), "timed out; blocking because onFailure"),
    ] {
        let mut v = read();
        let pre = &mut v["hooks"]["PreToolUse"][0]["hooks"][0];
        let (_, rest) = pre["command"]
            .as_str()
            .unwrap()
            .split_once(" run ")
            .unwrap();
        let command = format!("{} run {rest}", sh_quote(shim.to_str().unwrap()));
        pre["command"] = json!(command);
        if let Some(t) = timeout {
            pre["timeout"] = json!(t);
        }
        write_json(&settings_file, &v);
        let run = env.run(Host::ClaudeCode, &json!({}), &scenario);
        assert_eq!(run.code, 0, "Claude Code failed\n{}", run.describe());
        assert!(!marker.exists(), "the tool ran\n{}", run.describe());
        let results = run.tool_results(run.body(1));
        assert!(
            results.iter().any(|r| r.contains(says)),
            "{results:?}\n{}",
            run.describe()
        );
    }
}

// ------------------------------------------------------------------ the host's own sandbox

/// Fails, naming the command that installs them, when the programs the
/// host's sandbox needs on Linux are missing.
fn require_programs(programs: &[&str]) {
    for p in programs {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "`{p}` is not installed; the host sandbox needs it (`apt-get install -y bubblewrap socat`)"
        );
    }
}

/// What a Claude Code session did with two programs the agent wrote with
/// one call and ran with the next: one appends to keryx-hooks' own
/// `~/.keryx/hooks.json`, one creates the project's
/// `.claude/settings.local.json`; both name their target in pieces, a
/// spelling the text guards do not read. Then an ordinary write in the
/// project. keryx-hooks is installed for real, with `--host-sandbox` or not.
struct UnreadWrite {
    run: HostRun,
    hooks_before: Vec<u8>,
    hooks_after: Vec<u8>,
    local_settings_written: bool,
    project_file: Option<String>,
}

fn claude_code_unread_spelling_write(host_sandbox: bool) -> UnreadWrite {
    require_programs(&["bwrap", "socat"]);
    let env = E2eEnv::new();
    // This is about the last layer: the rule that asks before a script the
    // agent wrote runs (`obfuscation/runs-agent-written-script`) would stop
    // the run first, so it is switched off, as a person who runs such
    // scripts would.
    let hooks_file = env.home.join(".keryx/hooks.json");
    std::fs::create_dir_all(hooks_file.parent().unwrap()).unwrap();
    std::fs::write(
        &hooks_file,
        json!({"schemaVersion": "1.0.0", "hooks": {},
               "rules_off": ["obfuscation/runs-agent-written-script"]})
        .to_string(),
    )
    .unwrap();
    if host_sandbox {
        keryx_in(&env, &["install", "claude-code", "--host-sandbox"]);
    } else {
        keryx_in(&env, &["install", "claude-code"]);
    }
    let hooks_before = std::fs::read(&hooks_file).unwrap();
    let scenario = Scenario::new()
        .shell(concat!(
            "printf '%s\\n' 'import os' ",
            "'p = os.path.join(os.environ[\"HOME\"], \".ke\" + \"ryx\", \"hoo\" + \"ks.json\")' ",
            "'open(p, \"a\").write(\"\\n\")' > w1.py && ",
            "printf '%s\\n' 'import os' ",
            "'open(os.path.join(\".cl\" + \"aude\", \"settings.lo\" + \"cal.json\"), \"w\").write(\"{}\")' > w2.py && ",
            "echo written"
        ))
        .shell("python3 w1.py && echo w1=ok; python3 w2.py && echo w2=ok")
        .shell("echo ordinary > notes.txt && echo w3=ok")
        .text("final text.");
    let run = env.run(Host::ClaudeCode, &json!({}), &scenario);
    assert_eq!(run.code, 0, "Claude Code failed\n{}", run.describe());
    UnreadWrite {
        hooks_before,
        hooks_after: std::fs::read(&hooks_file).unwrap(),
        local_settings_written: env.project.join(".claude/settings.local.json").exists(),
        project_file: std::fs::read_to_string(env.project.join("notes.txt")).ok(),
        run,
    }
}

/// With `install --host-sandbox` Claude Code runs the agent's commands in
/// its own sandbox, which denies them keryx-hooks' hooks file and the
/// project's local settings however the command spells them; the project
/// stays writable.
#[test]
fn claude_code_host_sandbox_denies_a_write_the_guards_cannot_read() {
    let w = claude_code_unread_spelling_write(true);
    let run = &w.run;
    let scripts = run.tool_results(run.body(1));
    assert!(
        scripts.iter().any(|r| r.contains("written")),
        "the agent could not write its scripts in the project: {scripts:?}\n{}",
        run.describe()
    );
    let ran = run.tool_results(run.body(2));
    assert!(
        !ran.iter()
            .any(|r| r.contains("w1=ok") || r.contains("w2=ok")),
        "a write went through the sandbox: {ran:?}\n{}",
        run.describe()
    );
    assert!(
        ran.iter().any(|r| r.contains("Read-only file system")),
        "the writes did not fail on the sandbox: {ran:?}\n{}",
        run.describe()
    );
    assert_eq!(
        w.hooks_after,
        w.hooks_before,
        "the hooks file changed\n{}",
        run.describe()
    );
    assert!(!w.local_settings_written, "{}", run.describe());
    assert_eq!(
        w.project_file.as_deref(),
        Some("ordinary\n"),
        "an ordinary write in the project failed\n{}",
        run.describe()
    );
}

/// The same session without `--host-sandbox`: the guards do not read the
/// programs, so both writes land. This is what the sandbox closes, and what
/// shows the test above can fail.
#[test]
fn claude_code_without_host_sandbox_the_unread_write_lands() {
    let w = claude_code_unread_spelling_write(false);
    let run = &w.run;
    let ran = run.tool_results(run.body(2));
    assert!(
        ran.iter().any(|r| r.contains("w1=ok")) && ran.iter().any(|r| r.contains("w2=ok")),
        "the writes did not run: {ran:?}\n{}",
        run.describe()
    );
    assert_ne!(w.hooks_after, w.hooks_before, "{}", run.describe());
    assert!(w.local_settings_written, "{}", run.describe());
    assert_eq!(w.project_file.as_deref(), Some("ordinary\n"));
}

/// Cline CLI 3.0.65 with the hook files `install cline` wrote: a keryx
/// deny on its shell tool aborts the whole task before the command runs
/// (Cline's cancel: no further model call, and Cline shows the reason to
/// nobody, so `keryx-hooks log` is where the person reads it); with the
/// binary gone, or killed part-way, the PreToolUse file answers the same
/// refusal itself.
#[test]
fn cline_deny_aborts_the_task_and_a_missing_or_killed_shim_refuses() {
    let host = ChatHost::Cline;
    let env = E2eEnv::new();
    host.binary();
    let gate_script = env.script(
        "deny-commands-echo.sh",
        &format!(
            r#"payload=$(cat)
echo call >> {calls}
case "$payload" in
  *'"commands":["echo '*) echo {reason} >&2; exit 2 ;;
esac
exit 0
"#,
            calls = sh_quote(env.path("gate.calls").to_str().unwrap()),
            reason = sh_quote(DENY_REASON),
        ),
    );
    let mut hooks = serde_json::Map::new();
    hooks.insert(
        "PreToolUse".into(),
        json!([gate("e2e-no-echo", &gate_script)]),
    );
    keryx_install(&env, host, hooks);
    let marker = env.path("tool-ran");
    let scenario = Scenario::new()
        .step(json!([{ "tool": "run_commands", "input": {
            "commands": [format!("echo ran > {}", sh_quote(marker.to_str().unwrap()))] } }]))
        .text("final text.");

    let run = host.run(&env, &scenario, "run the scenario");
    let why = || run.describe();
    assert_eq!(run.code, 0, "cline failed\n{}", why());
    assert!(
        !env.lines("gate.calls").is_empty(),
        "the gate never ran\n{}",
        why()
    );
    assert!(!marker.exists(), "the denied command ran\n{}", why());
    assert_eq!(run.main_requests().len(), 1, "the task went on\n{}", why());
    assert!(run.stdout.contains("aborted"), "{}", why());
    let log = keryx_in(&env, &["log"]);
    assert!(
        log.contains(DENY_REASON),
        "the person cannot read why:\n{log}"
    );

    // The binary gone, then killed part-way: the file answers the refusal.
    let pre = env.home.join(".cline/hooks/PreToolUse");
    let wired = std::fs::read_to_string(&pre).unwrap();
    let killed = env.script("killed/keryx-hooks", "printf '{\"contin'\nkill -9 $$");
    for shim in [env.path("gone/keryx-hooks"), killed] {
        let (_, rest) = wired.split_once("answer=$(").unwrap();
        let (binary, _) = rest.split_once(" run ").unwrap();
        std::fs::write(
            &pre,
            wired.replace(binary, &sh_quote(shim.to_str().unwrap())),
        )
        .unwrap();
        let run = host.run(&env, &scenario, "run the scenario");
        let why = || run.describe();
        assert_eq!(run.code, 0, "cline failed\n{}", why());
        assert!(
            !marker.exists(),
            "the tool ran with {}\n{}",
            shim.display(),
            why()
        );
        assert_eq!(run.main_requests().len(), 1, "the task went on\n{}", why());
    }
}
