//! Case a-spawn, the least a shim pays for one gate: the floor, plus one
//! hook (`spawner CMD [ARGS...]`) started the way a careful shim starts it —
//! in its own process group, the payload on a pipe to its stdin, its stdout
//! and stderr drained through pipes — and waited for. No config, no state,
//! no record, no timeout. What this costs above the floor, less `/bin/true`
//! spawned straight from hyperfine (b), is what one spawn costs in a fresh
//! process beyond b; the rest of (d) − (c) is the runtime's own work.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(cmd) = args.next() else {
        eprintln!("usage: spawner CMD [ARGS...]");
        return ExitCode::from(2);
    };
    let mut payload = Vec::new();
    let _ = std::io::stdin().lock().read_to_end(&mut payload);
    let mut child = match Command::new(&cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("spawner: cannot run {}: {e}", cmd.to_string_lossy());
            return ExitCode::from(127);
        }
    };
    // A hook may exit without reading its stdin: a broken pipe is its right.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&payload);
    }
    let mut sink = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_end(&mut sink);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_end(&mut sink);
    }
    let _ = child.wait();
    let _ = std::io::stdout().lock().write_all(b"{}\n");
    ExitCode::SUCCESS
}
