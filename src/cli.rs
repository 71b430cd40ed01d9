//! Command-line types (clap derive). The `///` comments are the help text.
//! These types stop at `commands/`: nothing below sees clap.

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::{Parser, Subcommand};

use crate::config::model::Profile;
use crate::hosts::Adapter;

/// One hook config that guards every coding agent you use: the keryx
/// lifecycle-hook runtime, a per-event shim for each agent host, and the
/// installer that wires it in.
#[derive(Debug, Parser)]
#[command(
    name = "keryx-hooks",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Handle one event from an agent host (this is what hosts run).
    Run(RunArgs),
    /// Show the merged, resolved hook registrations.
    List(ListArgs),
    /// Check the user and project hook files.
    Validate(ValidateArgs),
    /// Run one hook once and show the payload it read and its answer.
    Test(TestArgs),
    /// Review this project's command hooks and trust exactly this version.
    Trust(TrustArgs),
    /// Withdraw trust for this project's command hooks.
    Untrust(UntrustArgs),
    /// Let one call a rule refused through that rule once (the refusal names its code; needs a terminal).
    AllowOnce(AllowOnceArgs),
    /// Turn a hook back on in the project file (or your own with --user).
    Enable(EnableArgs),
    /// Turn a hook off in the project file (or your own with --user).
    Disable(DisableArgs),
    /// Write a starting hooks.json with an example gate and observer (and their scripts).
    Init(InitArgs),
    /// List the agent hosts, which are set up here, and what install and import do with each.
    Hosts(HostsArgs),
    /// Snapshot your hooks and wire keryx-hooks into agent hosts (merges, never overwrites).
    Install(InstallArgs),
    /// Take keryx-hooks out of agent hosts' configs, leaving everything else as it was.
    Uninstall(UninstallArgs),
    /// Move a host's own hooks into keryx-hooks, so they run once, sandboxed.
    Import(ImportArgs),
    /// Show whether each hook snapshot is current and wired (exit 1 when not).
    Status(StatusArgs),
    /// Check the installation; with --fix, repair what can be repaired.
    Doctor(DoctorArgs),
    /// Show what the hooks decided and why, across sessions (newest last).
    Log(LogArgs),
    /// Ship the hook records to an OpenTelemetry collector (OTLP/HTTP), from where the last export stopped.
    Export(ExportArgs),
    /// For one payload, which hooks `run` would fire, why the others would not, and its answer (runs no hook).
    Explain(ExplainArgs),
    /// Built-in hook bodies: scan a prompt or a write for secrets (payload on stdin).
    #[command(subcommand)]
    Security(SecurityCommand),
    /// Built-in hook body: the context guard for shell commands (payload on stdin).
    #[command(subcommand)]
    Ctx(CtxCommand),
    /// Print a shell completion script (e.g. `keryx-hooks completions bash > ~/.local/share/bash-completion/completions/keryx-hooks`).
    Completions(CompletionsArgs),
    /// Print the manual page (roff), e.g. `keryx-hooks man | man -l -`.
    Man,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Subcommand)]
pub enum SecurityCommand {
    /// Deny a prompt that carries a secret or a hidden instruction.
    CheckInput(CheckInputArgs),
    /// Deny a write whose content would put a secret on disk.
    CheckOutput(CheckOutputArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckInputArgs {
    /// Where the prompt came from, e.g. `untrusted-external`; every source is scanned alike.
    #[arg(long, value_name = "S", default_value = "untrusted-external")]
    pub source: String,
    /// Whose payload and answer shape: `keryx`, or a host when run directly as its hook.
    #[arg(long, value_name = "HOST", default_value = crate::hosts::native().name(), value_parser = HostWord::ANY)]
    pub runtime: String,
}

#[derive(Debug, clap::Args)]
pub struct CheckOutputArgs {
    /// Whose payload and answer shape: `keryx`, or a host when run directly as its hook.
    #[arg(long, value_name = "HOST", default_value = crate::hosts::native().name(), value_parser = HostWord::ANY)]
    pub runtime: String,
}

#[derive(Debug, Subcommand)]
pub enum CtxCommand {
    /// Deny a shell command that would pour secrets into, or flood, the model's context.
    Hook(CtxHookArgs),
}

#[derive(Debug, clap::Args)]
pub struct CtxHookArgs {
    /// Whose payload and answer shape: `keryx`, or a host when run directly as its hook.
    #[arg(value_parser = HostWord::ANY)]
    pub host: String,
}

#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct RunArgs {
    /// The host that fired the event, by its name (as `install` wrote it).
    #[arg(value_parser = HostWord::ANY)]
    pub host: String,
    /// The host's own event name, e.g. `PreToolUse` or `BeforeTool`.
    pub event: String,
    /// Read the user layer from this installed snapshot, named by its
    /// directory (as hosts pass it) or its key (by hand the default is the
    /// one the host's wiring of this event names, else the live
    /// `$KERYX_HOME/hooks.json`).
    #[arg(long, value_name = "KEY|DIR")]
    pub snapshot: Option<String>,
    /// Security profile for this event.
    #[arg(long, value_name = "ID", value_parser = parse_profile)]
    pub profile: Option<Profile>,
    /// The session cannot prompt anyone: asks become denies.
    #[arg(long)]
    pub headless: bool,
}

impl RunArgs {
    /// `run`'s arguments read without building the whole command line
    /// parser, for the plain forms hosts write (`run HOST EVENT` with
    /// `--snapshot K`, `--profile P`, `--headless`). Anything else (help, an
    /// unknown flag, a missing or extra word, a bad value, non-UTF-8) is
    /// `None` and goes through clap, which gives the same result or the
    /// proper error.
    pub fn parse_plain(args: &[std::ffi::OsString]) -> Option<RunArgs> {
        let mut words = args.iter().skip(1).map(|a| a.to_str());
        if words.next()?? != "run" {
            return None;
        }
        let mut positional = Vec::new();
        let (mut snapshot, mut profile, mut headless) = (None, None, false);
        while let Some(word) = words.next() {
            let word = word?;
            let (flag, inline) = match word.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v)),
                _ => (word, None),
            };
            match flag {
                "--headless" if inline.is_none() && !headless => headless = true,
                "--snapshot" | "--profile" => {
                    let value = match inline {
                        Some(v) => v,
                        None => words.next()??,
                    };
                    if value.is_empty() || (inline.is_none() && value.starts_with('-')) {
                        return None;
                    }
                    if flag == "--snapshot" {
                        snapshot.is_none().then_some(())?;
                        snapshot = Some(value.to_owned());
                    } else {
                        profile.is_none().then_some(())?;
                        profile = Some(Profile::parse(value)?);
                    }
                }
                _ if word.starts_with('-') => return None,
                _ => positional.push(word.to_owned()),
            }
        }
        let [host, event]: [String; 2] = positional.try_into().ok()?;
        Some(RunArgs {
            host,
            event,
            snapshot,
            profile,
            headless,
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print the stable JSON shape (schema/list-output.schema.json).
    #[arg(long)]
    pub json: bool,
    /// Show the effective sandboxing for this profile (default: the one
    /// `run` uses, from runtime.toml).
    #[arg(long, value_name = "ID", value_parser = parse_profile)]
    pub profile: Option<Profile>,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Print diagnostics as JSON.
    #[arg(long)]
    pub json: bool,
    /// Accepted for pipelines that want a stable invocation; changes nothing.
    #[arg(long)]
    pub ci: bool,
}

#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// Trust without asking, for scripts; review the printed commands first.
    #[arg(long)]
    pub yes: bool,
    /// Trust commands that contain control, escape, bidi or zero-width
    /// characters (shown escaped in the review); refused without it.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct UntrustArgs {}

#[derive(Debug, clap::Args)]
pub struct AllowOnceArgs {
    /// The code the refusal named; without one, the refused calls that can be allowed are listed.
    pub code: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct EnableArgs {
    /// The hook id, e.g. `lint-on-edit` or `keryx.learning-observer`.
    pub id: String,
    /// Edit your own `$KERYX_HOME/hooks.json` instead of the project's.
    #[arg(long)]
    pub user: bool,
}

#[derive(Debug, clap::Args)]
pub struct DisableArgs {
    /// The hook id, e.g. `lint-on-edit` or `keryx.learning-observer`.
    pub id: String,
    /// Edit your own `$KERYX_HOME/hooks.json` instead of the project's.
    #[arg(long)]
    pub user: bool,
    /// Required to turn off a built-in gate (only possible with --user).
    #[arg(long)]
    pub acknowledge_gate_risk: bool,
}

/// Which of a host's config files to edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    /// Your own config (`~/.claude/settings.json`, `~/.codex/config.toml`, …).
    User,
    /// This project's config (`.claude/settings.json`, `.codex/config.toml`, …).
    Project,
}

/// How `install` wires a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Merge our entries into the host's settings file.
    Settings,
    /// Write the host's own package instead: a Claude Code plugin, a Gemini
    /// CLI extension or a Codex plugin (OpenCode gets its plugin file either
    /// way; the other hosts have no package).
    Plugin,
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// `user`: `$KERYX_HOME/hooks.json` and `$KERYX_HOME/scripts/`.
    /// `project`: `.metaproject/hooks.json` and `.metaproject/hooks/`.
    #[arg(long, value_enum, default_value = "user")]
    pub scope: ScopeArg,
    /// Replace the files when they already exist.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct HostsArgs {
    /// Print only the names of the hosts set up here (their config directory
    /// exists, e.g. `~/.claude` or `$CODEX_HOME`), one a line, for scripts;
    /// exit 1, saying where it looked, when there is none.
    #[arg(long)]
    pub detected: bool,
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Hosts to wire, by name or short name (OpenCode always gets a generated
    /// plugin file in its plugin directory).
    #[arg(required = true, value_name = "HOST", value_parser = HostWord::WIRABLE)]
    pub hosts: Vec<String>,
    /// Edit your own host configs or this project's.
    #[arg(long, value_enum, default_value = "user")]
    pub scope: ScopeArg,
    /// `settings`: edit the host's settings file. `plugin`: generate the host's own
    /// plugin or extension under --out, holding only our hooks, and print how to load it.
    #[arg(long, value_enum, default_value = "settings")]
    pub format: FormatArg,
    /// Where `--format plugin` writes the packages, one directory per host
    /// (default `~/.agentic/hooks-plugins`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// The hook source to snapshot (default `$KERYX_HOME`, i.e. `~/.keryx`).
    #[arg(long, value_name = "DIR")]
    pub source: Option<std::path::PathBuf>,
    /// Also turn on the host's own OS sandbox for the agent's commands, set so
    /// they cannot write keryx-hooks' files, the binary or the host configs
    /// (Claude Code; needs bubblewrap and socat on Linux). Undone by `uninstall`.
    #[arg(long)]
    pub host_sandbox: bool,
    /// Print what would change, as a diff, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print a machine-readable report.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    /// Hosts to unwire, by name or short name (their settings entries, and the
    /// plugins `install --format plugin` generated).
    #[arg(required = true, value_name = "HOST", value_parser = HostWord::WIRABLE)]
    pub hosts: Vec<String>,
    /// Edit your own host configs or this project's.
    #[arg(long, value_enum, default_value = "user")]
    pub scope: ScopeArg,
    /// Print what would change, as a diff, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Hosts whose hooks to move, by name or short name.
    #[arg(required = true, value_name = "HOST", value_parser = HostWord::IMPORTABLE)]
    pub hosts: Vec<String>,
    /// Your own host configs (into `$KERYX_HOME/hooks.json`) or this
    /// project's (into `.metaproject/hooks.json`, which then needs `trust`).
    #[arg(long, value_enum, default_value = "user")]
    pub scope: ScopeArg,
    /// Print what would be imported and granted, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    /// Put the host configs back as they were before the import and remove
    /// the imported registrations.
    #[arg(long)]
    pub undo: bool,
    /// Make every imported gate deny when it crashes or times out, instead
    /// of failing as its host makes it fail (most hosts let the call
    /// through).
    #[arg(long, conflicts_with = "undo")]
    pub fail_closed: bool,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Keep shipping records as they are appended, retrying without end (for a service).
    #[arg(long)]
    pub follow: bool,
    /// Without --follow: how many times to try a batch again before giving up (exit 1).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub retries: u32,
    /// With --follow: seconds between looks for new records.
    #[arg(long, value_name = "SECS", default_value_t = 2)]
    pub interval: u64,
    /// The most records in one request.
    #[arg(long, value_name = "N", default_value_t = crate::export::BATCH, value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub batch: usize,
}

#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// Only records this recent: `30m`, `1h`, `2d`, or since a date (`2026-12-01`, UTC).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only this session (the host's session id).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only this host, by name or short name.
    #[arg(long, value_name = "H", value_parser = HostWord::ANY)]
    pub host: Option<String>,
    /// Only events in this project (or below it).
    #[arg(long, value_name = "DIR")]
    pub project: Option<std::path::PathBuf>,
    /// Only this hook id (`keryx-hooks` for decisions no hook made).
    #[arg(long, value_name = "ID")]
    pub hook: Option<String>,
    /// Only denials.
    #[arg(long)]
    pub deny: bool,
    /// Print the full records as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Keep printing records as they are appended (stop with Ctrl-C).
    #[arg(long)]
    pub follow: bool,
    /// Show the last N matching records (0 = all).
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 50)]
    pub lines: usize,
}

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The host whose payload this is, by name or short name.
    #[arg(value_parser = HostWord::ANY)]
    pub host: String,
    /// The host's own event name, e.g. `PreToolUse` or `BeforeTool`.
    pub event: String,
    /// Read the payload from this file instead of stdin.
    #[arg(long, value_name = "F")]
    pub payload_file: Option<std::path::PathBuf>,
    /// Print the explanation as JSON.
    #[arg(long)]
    pub json: bool,
    /// Read the user layer from this installed snapshot (default: the one the host's wiring of this event names).
    #[arg(long, value_name = "KEY")]
    pub snapshot: Option<String>,
    /// Security profile, as `run --profile`.
    #[arg(long, value_name = "ID", value_parser = parse_profile)]
    pub profile: Option<Profile>,
    /// As `run --headless`: asks become denies.
    #[arg(long)]
    pub headless: bool,
}

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print the state as JSON.
    #[arg(long)]
    pub json: bool,
    /// Report only this hook source (default: `$KERYX_HOME` and every installed snapshot).
    #[arg(long, value_name = "DIR")]
    pub source: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Resync stale snapshots, rewire their hosts, prune old session state, then check again.
    #[arg(long)]
    pub fix: bool,
    /// With --fix: resync without asking when a source has new or changed command hooks (they are still shown).
    #[arg(long, requires = "fix")]
    pub yes: bool,
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
    /// Check only this hook source (default: `$KERYX_HOME` and every installed snapshot).
    #[arg(long, value_name = "DIR")]
    pub source: Option<std::path::PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The hook id, e.g. `no-rm-rf-root` or `keryx.ctx-guard`.
    #[arg(required_unless_present = "rule")]
    pub id: Option<String>,
    /// Run one rule instead of a hook, e.g. `destructive/git-reset-hard`:
    /// prints its decision and what it matched (nothing is spawned).
    #[arg(long, value_name = "ID", conflicts_with = "id")]
    pub rule: Option<String>,
    /// With --rule: test a call on this path (a Write unless --tool names
    /// another tool; relative to the current directory).
    #[arg(long, value_name = "PATH", requires = "rule", conflicts_with_all = ["payload_file", "command", "file"])]
    pub path: Option<String>,
    /// Which of the hook's events to test (default: its first; with
    /// --tool, --command or --file, its first tool event).
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
    /// A JSON payload to send instead of the synthetic one.
    #[arg(long, visible_alias = "payload", value_name = "PATH")]
    pub payload_file: Option<std::path::PathBuf>,
    /// Test a call of this tool (`Bash`, `Write`, `Edit`, `Read`, an MCP
    /// tool…) instead of one the hook's matcher picks.
    #[arg(long, value_name = "NAME", conflicts_with = "payload_file")]
    pub tool: Option<String>,
    /// Test a Bash call running this command.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["payload_file", "file"])]
    pub command: Option<String>,
    /// Test a call on this file (relative to the current directory): a
    /// Write, Edit, MultiEdit or Read, the one --tool names, else the first
    /// the hook's matcher accepts.
    #[arg(long, value_name = "PATH", conflicts_with = "payload_file")]
    pub file: Option<std::path::PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Report what a failure would do under this profile (default: the one
    /// `run` uses, from runtime.toml).
    #[arg(long, value_name = "ID", value_parser = parse_profile)]
    pub profile: Option<Profile>,
    /// Read the user layer from this installed snapshot (what a host wired
    /// with `run --snapshot K` runs, scripts included), not `$KERYX_HOME`.
    #[arg(long, value_name = "K")]
    pub snapshot: Option<String>,
}

/// A `<HOST>` word. Its possible values, which `--help` lists and the
/// completions offer, are the hosts the command takes, read from the
/// adapters. The word itself is passed on as typed: the human commands
/// resolve a short name or suggest the nearest host, and `run` answers an
/// unknown host in the host protocol, never with a usage error.
#[derive(Clone, Copy)]
pub struct HostWord {
    hosts: fn() -> Vec<&'static Adapter>,
}

impl HostWord {
    /// Every adapter, `keryx` too: `run`, `explain`, `log --host`.
    pub const ANY: HostWord = HostWord { hosts: every_host };
    /// The hosts with a config file or plugin to wire: `install`, `uninstall`.
    pub const WIRABLE: HostWord = HostWord {
        hosts: crate::install::hostfile::wirable_hosts,
    };
    /// The hosts whose own hooks `import` reads.
    pub const IMPORTABLE: HostWord = HostWord {
        hosts: crate::install::import::hosts,
    };
}

fn every_host() -> Vec<&'static Adapter> {
    crate::hosts::all().collect()
}

impl TypedValueParser for HostWord {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new((self.hosts)().into_iter().map(|a| {
            let also = a
                .aliases()
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let help = if also.is_empty() {
                a.display_name().to_owned()
            } else {
                format!("{}; also {also}", a.display_name())
            };
            PossibleValue::new(a.name()).help(help)
        })))
    }
}

/// A `--profile` that names no profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "unknown profile `{given}`; expected one of: {}",
        Profile::ALL.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
    )]
    Unknown { given: String },
}

/// `--profile`'s value parser.
pub fn parse_profile(s: &str) -> Result<Profile, ProfileError> {
    Profile::parse(s).ok_or_else(|| ProfileError::Unknown {
        given: s.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Cli;

    /// An unknown `--profile` reads the same through clap as it always has.
    #[test]
    fn an_unknown_profile_names_the_profiles() {
        let err = Cli::try_parse_from(["keryx-hooks", "list", "--profile", "nonsense"])
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            err.lines().next(),
            Some(
                "error: invalid value 'nonsense' for '--profile <ID>': unknown profile \
                 `nonsense`; expected one of: read-only-review, monitored-trusted-local, \
                 unattended-untrusted"
            )
        );
    }
}
