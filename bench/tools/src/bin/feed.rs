//! `feed FILE CMD [ARGS...]`: replaces itself with CMD, whose stdin is FILE.
//!
//! hyperfine 1.15 (Debian bookworm) has no `--input` and gives commands an
//! empty stdin, and a shell redirect (`cmd < file`) adds a shell start per
//! run. `feed` costs one extra `execve` of a tiny binary and no fork; the
//! suite measures that cost (`feed FILE /bin/true` beside `/bin/true`) and
//! reports it, so it can be subtracted.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(file), Some(cmd)) = (args.next(), args.next()) else {
        eprintln!("usage: feed FILE CMD [ARGS...]");
        return ExitCode::from(2);
    };
    let stdin = match std::fs::File::open(&file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("feed: {}: {e}", file.to_string_lossy());
            return ExitCode::from(2);
        }
    };
    let err = Command::new(&cmd)
        .args(args)
        .stdin(Stdio::from(stdin))
        .exec();
    eprintln!("feed: cannot run {}: {err}", cmd.to_string_lossy());
    ExitCode::from(127)
}
