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
pub mod output;
pub mod paths;
pub mod runtime;
pub mod session;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

pub fn main(args: Vec<OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match &cli.command {
        Command::Run(_) => Err(error::CommandError::internal(
            "`run` is not available in this build",
        )),
        Command::List(a) => commands::list::run(a),
        Command::Validate(a) => commands::validate::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            output::err_line(&e.to_string());
            ExitCode::from(1)
        }
    }
}
