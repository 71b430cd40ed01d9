//! keryx-hooks: the keryx lifecycle-hook runtime, packaged as a shim that
//! agent hosts run once per event, plus the installer that wires it in.
//!
//! `main` parses, dispatches to one command, prints any error, and maps the
//! result onto the exit-code table: 0 ok, 1 a problem found or a user error,
//! 2 usage. `run` is the exception: its exit code belongs to the host
//! protocol and is chosen by the host's adapter.

pub mod adapter;
pub mod base;
pub mod builtins;
pub mod cli;
pub mod commands;
pub mod config;
pub mod env_vars;
pub mod error;
pub mod escape;
pub mod events;
pub mod hash;
pub mod hosts;
pub mod install;
pub mod log;
pub mod output;
pub mod paths;
pub mod pipeline;
pub mod rules;
pub mod runner;
pub mod runtime;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod textfile;
pub mod trust;

use crate::error::ExitStatus;
use std::ffi::OsString;

use clap::Parser;

use crate::cli::{Cli, Command};

pub fn main(args: Vec<OsString>) -> ExitStatus {
    // `run` happens on every tool call: its plain forms skip building the
    // whole command-line parser.
    if let Some(a) = cli::RunArgs::parse_plain(&args) {
        return run(&a);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if args.get(1).is_some_and(|a| a == "run") && e.use_stderr() => {
            // Under `run` the exit code belongs to the host protocol.
            return commands::run::run_with_bad_args(&args, &e.to_string());
        }
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitStatus::Usage
            } else {
                ExitStatus::Success
            };
        }
    };
    let result = match &cli.command {
        Command::Run(a) => return run(a),
        Command::Test(a) => commands::test::run(a),
        Command::List(a) => commands::list::run(a),
        Command::Validate(a) => commands::validate::run(a),
        Command::Trust(a) => commands::trust::run(a),
        Command::Untrust(a) => commands::untrust::run(a),
        Command::AllowOnce(a) => commands::allow_once::run(a),
        Command::Enable(a) => commands::toggle::enable(a),
        Command::Disable(a) => commands::toggle::disable(a),
        Command::Init(a) => commands::init::run(a),
        Command::Hosts(a) => commands::hosts::run(a),
        Command::Install(a) => commands::install::run(a),
        Command::Uninstall(a) => commands::uninstall::run(a),
        Command::Import(a) => commands::import::run(a),
        Command::Status(a) => commands::status::run(a),
        Command::Doctor(a) => commands::doctor::run(a),
        Command::Log(a) => commands::log::run(a),
        Command::Explain(a) => commands::explain::run(a),
        Command::Security(cli::SecurityCommand::CheckInput(a)) => {
            commands::security::check_input(a)
        }
        Command::Security(cli::SecurityCommand::CheckOutput(a)) => {
            commands::security::check_output(a)
        }
        Command::Ctx(cli::CtxCommand::Hook(a)) => commands::ctx::hook(a),
        Command::Completions(a) => commands::completions::completions(a),
        Command::Man => commands::completions::man(),
    };
    // What these commands changed is keryx-hooks' own doing: the sessions
    // running are not told of it as a change made outside.
    let changes_enforcement = match &cli.command {
        Command::Trust(_)
        | Command::Untrust(_)
        | Command::AllowOnce(_)
        | Command::Enable(_)
        | Command::Disable(_)
        | Command::Init(_)
        | Command::Install(_)
        | Command::Uninstall(_)
        | Command::Import(_) => true,
        Command::Doctor(a) => a.fix,
        _ => false,
    };
    if changes_enforcement {
        let cwd = std::env::current_dir().unwrap_or_default();
        install::watch::acknowledge(&paths::Locations::resolve(&cwd));
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            output::err_line(&e.to_string());
            ExitStatus::of_error(e.kind)
        }
    }
}

fn run(args: &cli::RunArgs) -> ExitStatus {
    log::init(|| {
        paths::Locations::resolve(&std::env::current_dir().unwrap_or_default()).log_file()
    });
    // A panic is answered like a broken shim: gate-capable events denied.
    std::panic::catch_unwind(|| commands::run::run(args))
        .unwrap_or_else(|_| commands::run::run_after_panic(args))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command, RunArgs};

    fn argv(words: &[&str]) -> Vec<std::ffi::OsString> {
        std::iter::once("keryx-hooks")
            .chain(words.iter().copied())
            .map(Into::into)
            .collect()
    }

    /// Wherever the plain reader answers, it answers as clap does; where it
    /// declines, clap decides (an error, help, or a form it left to clap).
    #[test]
    fn the_plain_run_reader_agrees_with_clap() {
        let cases: &[&[&str]] = &[
            &["run", "claude-code", "PreToolUse"],
            &["run", "codex", "Stop", "--headless"],
            &["run", "--headless", "codex", "Stop"],
            &[
                "run",
                "claude-code",
                "SessionStart",
                "--snapshot",
                "default",
            ],
            &["run", "claude-code", "SessionStart", "--snapshot=default"],
            &[
                "run",
                "gemini-cli",
                "BeforeTool",
                "--profile",
                "unattended-untrusted",
            ],
            &[
                "run",
                "gemini-cli",
                "BeforeTool",
                "--profile=read-only-review",
            ],
            &["run", "x", "y", "--profile", "nonsense"],
            &["run", "x", "y", "--profile"],
            &["run", "x", "y", "--snapshot"],
            &["run", "x", "y", "--snapshot", "--headless"],
            &["run", "x", "y", "--snapshot=a", "--snapshot=b"],
            &["run", "x", "y", "--headless", "--headless"],
            &["run", "x", "y", "--headless=true"],
            &["run", "x"],
            &["run", "x", "y", "z"],
            &["run", "x", "y", "--bogus"],
            &["run", "x", "y", "-h"],
            &["run", "--help"],
            &["run", "x", "--", "y"],
            &["run", "-", "y"],
            &["list"],
            &[],
        ];
        for words in cases {
            let args = argv(words);
            let clap = Cli::try_parse_from(&args)
                .ok()
                .and_then(|c| match c.command {
                    Command::Run(a) => Some(a),
                    _ => None,
                });
            if let Some(plain) = RunArgs::parse_plain(&args) {
                assert_eq!(Some(plain), clap, "{words:?}");
            }
        }
        assert!(RunArgs::parse_plain(&argv(&["run", "claude-code", "PreToolUse"])).is_some());
        for words in [
            &["run", "a", "b", "--snapshot", "k", "--headless"][..],
            &["run", "a", "b", "--profile=read-only-review"],
            &["run", "a", "b", "--profile", "unattended-untrusted"],
        ] {
            assert!(RunArgs::parse_plain(&argv(words)).is_some(), "{words:?}");
        }
    }
}
