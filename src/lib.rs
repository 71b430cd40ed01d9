//! keryx-hooks: the keryx lifecycle-hook runtime, packaged as a shim that
//! agent hosts run once per event, plus the installer that wires it in.
//!
//! `main` parses, dispatches to one command, prints any error, and maps the
//! result onto the exit-code table: 0 ok, 1 a problem found or a user error,
//! 2 usage. `run` is the exception: its exit code belongs to the host
//! protocol and is chosen by the host's adapter.

pub mod builtins;
pub mod cli;
pub mod commands;
pub mod config;
pub mod env_vars;
pub mod error;
pub mod escape;
pub mod hosts;
pub mod install;
pub mod log;
pub mod output;
pub mod paths;
pub mod runner;
pub mod runtime;
pub mod session;
pub mod trust;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

pub fn main(args: Vec<OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if args.get(1).is_some_and(|a| a == "run") && e.use_stderr() => {
            // Under `run` the exit code belongs to the host protocol.
            return commands::run::run_with_bad_args(&args, &e.to_string());
        }
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match &cli.command {
        Command::Run(a) => {
            log::init(
                &paths::Locations::resolve(&std::env::current_dir().unwrap_or_default()).log_file(),
            );
            return commands::run::run(a);
        }
        Command::Test(a) => commands::test::run(a),
        Command::List(a) => commands::list::run(a),
        Command::Validate(a) => commands::validate::run(a),
        Command::Trust(a) => commands::trust::run(a),
        Command::Untrust(a) => commands::untrust::run(a),
        Command::Enable(a) => commands::toggle::enable(a),
        Command::Disable(a) => commands::toggle::disable(a),
        Command::Install(a) => commands::install::run(a),
        Command::Uninstall(a) => commands::uninstall::run(a),
        Command::Status(a) => commands::status::run(a),
        Command::Doctor(a) => commands::doctor::run(a),
        Command::Security(cli::SecurityCommand::CheckInput(a)) => {
            commands::security::check_input(a)
        }
        Command::Security(cli::SecurityCommand::CheckOutput(a)) => {
            commands::security::check_output(a)
        }
        Command::Ctx(cli::CtxCommand::Hook(a)) => commands::ctx::hook(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            output::err_line(&e.to_string());
            ExitCode::from(1)
        }
    }
}
