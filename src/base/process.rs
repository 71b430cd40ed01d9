//! Running a short-lived program to completion within a deadline: stdin
//! written and closed, stdout kept up to a cap, the whole process group
//! killed when time is up. For the quick questions the human commands ask
//! other programs (`claude --version`, `doctor`'s live probe of a wiring),
//! never for hooks (those go through `runner`).

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most stdout kept.
const MAX_OUTPUT: usize = 64 * 1024;

/// How a bounded run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The exit code; `None` when a signal ended it or it was killed.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// It was still running at the deadline and was killed.
    pub timed_out: bool,
    pub elapsed: Duration,
}

/// Runs `cmd` with `stdin` as its input (closed after), in its own process
/// group, killing the group after `timeout`. `Err` only when it cannot
/// start.
pub fn run(mut cmd: Command, stdin: &[u8], timeout: Duration) -> std::io::Result<Finished> {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let pgid = child.id();
    let input = stdin.to_vec();
    let mut pipe_in = child.stdin.take();
    // A child that never reads must not block us on a full pipe.
    let writer = std::thread::spawn(move || {
        if let Some(p) = pipe_in.as_mut() {
            let _ = p.write_all(&input);
        }
    });
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(p) = pipe {
                let _ = p.take(MAX_OUTPUT as u64).read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = start + timeout;
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait()? {
            break (Some(status), false);
        }
        if Instant::now() >= deadline {
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The group is the child's own: whatever it left behind (a grandchild
    // holding the pipes) goes with it, so the readers end.
    kill_group(pgid);
    let status = status.or_else(|| child.wait().ok());
    let _ = writer.join();
    Ok(Finished {
        code: status.and_then(|s| s.code()),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        timed_out,
        elapsed: start.elapsed(),
    })
}

#[allow(unsafe_code)]
fn kill_group(pgid: u32) {
    let Ok(pgid) = i32::try_from(pgid) else {
        return;
    };
    // SAFETY: kill(2) with a negative pid signals the process group this
    // module created for the child; no memory is shared.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn feeds_stdin_and_keeps_stdout() {
        let f = run(
            sh("cat; echo done >&2; exit 3"),
            b"hello",
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(
            (f.code, f.stdout.as_str(), f.stderr.as_str(), f.timed_out),
            (Some(3), "hello", "done\n", false)
        );
    }

    #[test]
    fn kills_what_outlives_the_deadline_with_its_children() {
        let f = run(
            sh("(sleep 30; echo late) & sleep 30"),
            b"",
            Duration::from_millis(200),
        )
        .unwrap();
        assert!(f.timed_out);
        assert_eq!(f.code, None);
        assert!(f.elapsed < Duration::from_secs(5), "{:?}", f.elapsed);
        assert_eq!(f.stdout, "");
    }
}
