//! Starting one hook and driving its three pipes to the end: the payload in,
//! stdout and stderr out (capped), all from one `poll` loop, so no thread is
//! ever left blocked on a pipe that an escaped grandchild keeps open.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use super::git_guard::Watch;
use super::groups::{LiveGroup, Spawning};
use super::sandbox::{
    self, Confinement, Launcher, LauncherError, LauncherKind, LauncherSearch, Mount,
};
use super::{
    Cancel, Exit, GRACE, MAX_TIMEOUT, MIN_TIMEOUT, OUTPUT_CAP, PROJECT_PROTECTED, Sandbox,
    SandboxSpec, SpawnOutcome, SpawnRequest, sys,
};
use crate::escape::escape;

/// What `PATH` means when the hook's environment has none (execvp's own).
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
const CHUNK: usize = 64 * 1024;
/// The first read buffer: most hooks print a line or nothing, and a 64 KiB
/// buffer would cost a 64 KiB memset and fresh pages on every call. It grows
/// to [`CHUNK`] the first time a read fills it.
const FIRST_CHUNK: usize = 4 * 1024;
/// The launcher's fd for the seccomp program: the first after stdio.
const SECCOMP_FD: i32 = 3;
/// How often the leader is checked for exit once its pipes are closed.
const MAX_EXIT_POLL: Duration = Duration::from_millis(10);
/// How often a cancellable run looks at its [`Cancel`].
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// Why a hook did not start, or how its end was lost. Paths and names are
/// escaped when shown: the hook's configuration chose them.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("the hook's command is empty; give it an `argv` whose first element is the program")]
    EmptyCommand,
    #[error(
        "`{}` was not found on the hook's PATH `{}`; use an absolute path, or install it",
        escape(program),
        escape(path)
    )]
    NotOnPath { program: String, path: String },
    #[error(
        "the hook's working directory `{}` does not exist or is not a directory",
        shown(cwd)
    )]
    NoWorkingDirectory { cwd: PathBuf },
    #[error(
        "`{}` does not exist; check the path (a relative one resolves against the hook's working directory)",
        shown(program)
    )]
    Missing { program: PathBuf },
    #[error("`{}` cannot be read: {error}", shown(program))]
    Unreadable {
        program: PathBuf,
        #[source]
        error: io::Error,
    },
    #[error("`{}` is a directory, not a program", shown(program))]
    IsADirectory { program: PathBuf },
    #[error("`{0}` is not executable; run `chmod +x {0}`", shown(program))]
    NotExecutable { program: PathBuf },
    #[error(
        "the interpreter `{}` on the `#!` line of `{}` does not exist; {}",
        escape(&interpreter.display().to_string()),
        shown(program),
        interpreter_advice(interpreter)
    )]
    NoInterpreter {
        program: PathBuf,
        interpreter: PathBuf,
    },
    /// The exec itself failed, for a program that passes every check.
    #[error("{}", exec_failure(program, error))]
    Exec {
        program: PathBuf,
        #[source]
        error: io::Error,
    },
    #[error("could not hand the seccomp filter to the sandbox: {error}")]
    Seccomp {
        #[source]
        error: io::Error,
    },
    /// `what` is `project`, `writable path`, `working directory` or
    /// `program`.
    #[error("the sandbox {what} `{}` cannot be used: {error}", shown(path))]
    SandboxPath {
        what: &'static str,
        path: PathBuf,
        #[source]
        error: io::Error,
    },
    #[error(
        "the hook's working directory `{}` is under /tmp, which is private inside the \
         sandbox; run it from the project",
        shown(cwd)
    )]
    PrivateTmp { cwd: PathBuf },
    #[error("unknown wait status {status:?}")]
    UnknownStatus { status: std::process::ExitStatus },
    #[error("the hook's exit status was lost: {error}")]
    StatusLost {
        #[source]
        error: io::Error,
    },
    #[error("driving the hook's pipes failed: {error}")]
    Pipes {
        #[source]
        error: io::Error,
    },
}

impl SpawnError {
    /// The outcome of a hook that failed so.
    fn exit(self) -> Exit {
        Exit::SpawnFailed(self.to_string())
    }
}

/// A path as a message shows it, escaped.
fn shown(path: &Path) -> String {
    escape(&path.display().to_string())
}

fn interpreter_advice(interpreter: &Path) -> &'static str {
    if interpreter.display().to_string().ends_with('\r') {
        "the file has Windows (CRLF) line endings; convert it with `dos2unix`"
    } else {
        "fix the `#!` line (e.g. `#!/usr/bin/env bash`) or install the interpreter"
    }
}

/// Runs `req` to completion and reports how it ended. Blocking, and safe to
/// call from many threads at once. A required sandbox is looked up with
/// [`super::find_launcher`].
pub fn spawn(req: &SpawnRequest) -> SpawnOutcome {
    spawn_cancellable(req, None)
}

/// [`spawn`], ended early when `cancel` is raised: a run that has not
/// started does not start, and a running one is killed as at its deadline
/// ([`Exit::Cancelled`]).
pub fn spawn_cancellable(req: &SpawnRequest, cancel: Option<&Cancel>) -> SpawnOutcome {
    if cancel.is_some_and(Cancel::raised) {
        return SpawnOutcome::not_started(Exit::Cancelled, Duration::ZERO);
    }
    match &req.sandbox {
        SandboxSpec::None => run(req, None, false, cancel),
        SandboxSpec::Required(s) => {
            let search = LauncherSearch {
                pin: Ok(s.launcher.as_deref()),
                project: s.project.as_deref(),
                cwd: Some(&req.cwd),
            };
            with_launcher(req, &super::find_launcher(&search), cancel)
        }
    }
}

/// [`spawn`] with the launcher decided by the caller (`Err` = none usable,
/// with the reason); only consulted when `req.sandbox` requires one.
pub fn spawn_with_launcher(
    req: &SpawnRequest,
    launcher: &Result<Launcher, LauncherError>,
) -> SpawnOutcome {
    with_launcher(req, launcher, None)
}

fn with_launcher(
    req: &SpawnRequest,
    launcher: &Result<Launcher, LauncherError>,
    cancel: Option<&Cancel>,
) -> SpawnOutcome {
    match (&req.sandbox, launcher) {
        (SandboxSpec::Required(_), Err(reason)) => {
            SpawnOutcome::not_started(Exit::SandboxUnavailable(reason.to_string()), Duration::ZERO)
        }
        (SandboxSpec::Required(_), Ok(l)) => run(req, Some(l), true, cancel),
        (SandboxSpec::None, _) => run(req, None, false, cancel),
    }
}

/// Runs `req` under `launcher`; `forget` drops the cached probe verdict
/// when the launcher itself fails (never from the probe, which holds it).
pub(super) fn spawn_confined(
    req: &SpawnRequest,
    launcher: &Launcher,
    forget: bool,
) -> SpawnOutcome {
    run(req, Some(launcher), forget, None)
}

fn run(
    req: &SpawnRequest,
    launcher: Option<&Launcher>,
    forget: bool,
    cancel: Option<&Cancel>,
) -> SpawnOutcome {
    let started = Instant::now();
    let not_started = |exit: Exit| SpawnOutcome::not_started(exit, started.elapsed());
    let confinement = match (&req.sandbox, launcher) {
        (SandboxSpec::Required(s), Some(l)) => Some((l, s)),
        _ => None,
    };
    let program = match resolve_program(req) {
        Ok(p) => p,
        Err(e) => return not_started(e.exit()),
    };
    // Kept open until the launcher has started: it reads the seccomp
    // program from this pipe.
    let mut seccomp_pipe: Option<OwnedFd> = None;
    let mut watch: Option<Watch> = None;
    let mut cmd = match confinement {
        None => {
            // A descriptor the shim inherited without close-on-exec must not
            // reach the hook. Marked in the parent, once per spawn, so the
            // standard library can still start the hook without a fork.
            sys::cloexec_from(3);
            let mut cmd = Command::new(&program);
            cmd.arg0(&req.argv[0]).args(&req.argv[1..]);
            cmd
        }
        Some((launcher, sandbox)) => {
            let program_fd = if launcher.kind == LauncherKind::Bubblewrap {
                match sandbox::seccomp_program().map(sys::pipe_with) {
                    Some(Ok(fd)) => Some(fd),
                    Some(Err(error)) => return not_started(SpawnError::Seccomp { error }.exit()),
                    None => None,
                }
            } else {
                None
            };
            let seccomp_fd = program_fd.as_ref().map(|_| SECCOMP_FD);
            match confine_watched(launcher, &program, req, sandbox, seccomp_fd) {
                Ok((args, w)) => {
                    watch = Some(w);
                    let mut cmd = Command::new(&launcher.program);
                    cmd.args(args);
                    let keep = program_fd.as_ref().map(AsRawFd::as_raw_fd);
                    // SAFETY: the closure only makes async-signal-safe
                    // syscalls (dup2, fcntl, close_range) on plain integers.
                    #[allow(unsafe_code)]
                    unsafe {
                        cmd.pre_exec(move || sys::only_stdio_and(keep, SECCOMP_FD));
                    }
                    seccomp_pipe = program_fd;
                    cmd
                }
                Err(e) => return not_started(e.exit()),
            }
        }
    };
    // A hook that runs where we already are needs no chdir: without one the
    // standard library can start it with posix_spawn (a vfork) instead of a
    // full fork, which matters for a static binary, where the chdir-capable
    // posix_spawn cannot be looked up (`run` moves to the project root before
    // it spawns anything).
    if std::env::current_dir().ok().as_deref() != Some(req.cwd.as_path()) {
        cmd.current_dir(&req.cwd);
    }
    cmd.env_clear()
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());

    let spawned = spawn_registered(&mut cmd);
    drop(seccomp_pipe);
    let (mut child, group) = match spawned {
        Ok(started) => started,
        Err(e) => return not_started(why_not_started(req, program, e).exit()),
    };
    let pid = child.id();
    let timeout = req.timeout.clamp(MIN_TIMEOUT, MAX_TIMEOUT);
    let mut io = Pipes::new(&mut child, &req.stdin);
    let ended = io.pump(pid, started + timeout, cancel);

    let exit = match ended {
        Ended::Exited => {
            // Unregister before reaping: once reaped, the pgid may be reused.
            drop(group);
            match child.wait() {
                Ok(status) => match (status.code(), status.signal()) {
                    (Some(code), _) => Exit::Code(code),
                    (None, Some(sig)) => Exit::Signal(sig),
                    (None, None) => SpawnError::UnknownStatus { status }.exit(),
                },
                // ECHILD: something reaped it first (SIGCHLD ignored in
                // this process), so its status is lost.
                Err(error) => SpawnError::StatusLost { error }.exit(),
            }
        }
        Ended::Deadline | Ended::Cancelled | Ended::Broken(_) => {
            sys::kill_group(pid as i32);
            let grace_end = Instant::now() + GRACE;
            if !io.drain_until(grace_end) {
                tracing::warn!(
                    pid,
                    argv0 = %escape(&req.argv[0]),
                    "a process outside the hook's group (setsid?) still holds its stdout/stderr \
                     {GRACE:?} after the kill; abandoning the pipes"
                );
            }
            reap_killed(child, group, pid, grace_end);
            match ended {
                Ended::Broken(error) => SpawnError::Pipes { error }.exit(),
                Ended::Cancelled => {
                    tracing::info!(pid, argv0 = %escape(&req.argv[0]), "hook stopped: its event was answered; group killed");
                    Exit::Cancelled
                }
                _ => {
                    tracing::info!(pid, argv0 = %escape(&req.argv[0]), ?timeout, "hook timed out; group killed");
                    Exit::Timeout
                }
            }
        }
    };
    let (stdout, stdout_truncated) = io.out.finish();
    let (stderr, stderr_truncated) = io.err.finish();
    if let (Exit::Code(1), Some((l, _)), true) = (&exit, confinement, forget)
        && l.kind == LauncherKind::Bubblewrap
        && stderr.starts_with(b"bwrap: ")
    {
        // Most likely the launcher broke since it was probed: probe afresh
        // next time rather than trusting the cached verdict for a day.
        sandbox::forget_probe(&l.program);
    }
    if stdout_truncated || stderr_truncated {
        tracing::debug!(
            pid,
            stdout_truncated,
            stderr_truncated,
            "hook output capped at {OUTPUT_CAP} bytes"
        );
    }
    // Everything the hook started has ended with the sandbox (its own pid
    // namespace): what it left in the project can be looked at now.
    let undone = watch.map(|w| w.check()).unwrap_or_default();
    SpawnOutcome {
        exit,
        stdout,
        stdout_truncated,
        stderr,
        stderr_truncated,
        duration: started.elapsed(),
        undone,
    }
}

/// Starts `cmd` and registers its group, with no moment in between where a
/// terminating signal could leave it orphaned. ETXTBSY is retried: a script
/// another thread just wrote can be briefly held open by a concurrent fork.
fn spawn_registered(cmd: &mut Command) -> io::Result<(Child, LiveGroup)> {
    let mut attempt = 0;
    loop {
        let spawning = Spawning::begin();
        match cmd.spawn() {
            Ok(child) => {
                let group = LiveGroup::register(child.id() as i32);
                drop(spawning);
                return Ok((child, group));
            }
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempt < 5 => {
                drop(spawning);
                attempt += 1;
                std::thread::sleep(Duration::from_millis(10 * attempt));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reaps a leader that was just SIGKILLed, without blocking past the end of
/// the grace period (a process stuck in the kernel can outlive SIGKILL).
fn reap_killed(mut child: Child, group: LiveGroup, pid: u32, give_up: Instant) {
    let mut backoff = Duration::from_micros(50);
    loop {
        match sys::has_exited(pid) {
            Ok(false) if Instant::now() < give_up => {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_EXIT_POLL);
            }
            Ok(false) => {
                tracing::warn!(
                    pid,
                    "hook leader survived SIGKILL for {GRACE:?}; reaping it in the background"
                );
                drop(group);
                std::thread::spawn(move || child.wait());
                return;
            }
            _ => break,
        }
    }
    drop(group);
    let _ = child.wait();
}

enum Ended {
    /// Both output pipes reached EOF and the leader exited, in time.
    Exited,
    /// The deadline passed first.
    Deadline,
    /// The run was cancelled first.
    Cancelled,
    /// poll itself failed; treated like a deadline so nothing is left running.
    Broken(io::Error),
}

/// Up to [`OUTPUT_CAP`] bytes of one stream; the rest is counted as lost.
#[derive(Default)]
struct Capture {
    buf: Vec<u8>,
    truncated: bool,
}

impl Capture {
    fn push(&mut self, data: &[u8]) {
        let room = OUTPUT_CAP - self.buf.len();
        let take = data.len().min(room);
        if data.len() > room {
            self.truncated = true;
        }
        let want = self.buf.len() + take;
        if want > self.buf.capacity() {
            // Grow by doubling, but never past the cap: memory stays bounded
            // by OUTPUT_CAP however much the hook writes.
            let target = (self.buf.capacity() * 2).max(want).min(OUTPUT_CAP);
            self.buf.reserve_exact(target - self.buf.len());
        }
        self.buf.extend_from_slice(&data[..take]);
    }

    fn finish(&mut self) -> (Vec<u8>, bool) {
        (std::mem::take(&mut self.buf), self.truncated)
    }
}

struct Pipes<'a> {
    stdin: Option<ChildStdin>,
    payload: &'a [u8],
    written: usize,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    out: Capture,
    err: Capture,
    chunk: Vec<u8>,
}

impl<'a> Pipes<'a> {
    fn new(child: &mut Child, payload: &'a [u8]) -> Self {
        let stdin = child.stdin.take().filter(|_| !payload.is_empty());
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let fds = [
            stdin.as_ref().map(AsRawFd::as_raw_fd),
            stdout.as_ref().map(AsRawFd::as_raw_fd),
            stderr.as_ref().map(AsRawFd::as_raw_fd),
        ];
        for fd in fds.into_iter().flatten() {
            if let Err(e) = sys::set_nonblocking(fd) {
                tracing::warn!("could not make a hook pipe non-blocking: {e}");
            }
        }
        Pipes {
            stdin,
            payload,
            written: 0,
            stdout,
            stderr,
            out: Capture::default(),
            err: Capture::default(),
            chunk: vec![0; FIRST_CHUNK],
        }
    }

    fn outputs_open(&self) -> bool {
        self.stdout.is_some() || self.stderr.is_some()
    }

    /// Feeds stdin and drains both outputs until the outputs are closed and
    /// the leader has exited, or the deadline. A leader that exits while a
    /// descendant still holds its stdout is not done: the call only ends at
    /// EOF, which is what the spec's timeout rule asks for.
    fn pump(&mut self, pid: u32, deadline: Instant, cancel: Option<&Cancel>) -> Ended {
        let mut backoff = Duration::from_micros(50);
        // Opened the first time the outputs are closed before the exit can
        // be waited for — the usual order, since an exiting process closes
        // its files first.
        let mut exit_fd: Option<Option<OwnedFd>> = None;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ended::Deadline;
            }
            if cancel.is_some_and(Cancel::raised) {
                return Ended::Cancelled;
            }
            let mut wait = deadline - now;
            if cancel.is_some() {
                wait = wait.min(CANCEL_POLL);
            }
            if !self.outputs_open() {
                match sys::has_exited(pid) {
                    Ok(true) => return Ended::Exited,
                    Ok(false) => {}
                    Err(e) => return Ended::Broken(e),
                }
                if self.stdin.is_none() {
                    // Nothing left to feed or drain: wake at the exit itself.
                    if let Some(fd) = exit_fd.get_or_insert_with(|| sys::pidfd_open(pid)) {
                        let mut fds = [libc::pollfd {
                            fd: fd.as_raw_fd(),
                            events: libc::POLLIN,
                            revents: 0,
                        }];
                        match sys::poll(&mut fds, Some(wait)) {
                            // Readable means exited: the check above sees
                            // it next; should it not yet, sleep rather
                            // than spin on a pidfd that stays readable.
                            Ok(_) if fds[0].revents != 0 => exit_fd = Some(None),
                            Ok(_) => {}
                            Err(e) => return Ended::Broken(e),
                        }
                        continue;
                    }
                }
                // It closed its outputs but runs on (and may still be
                // reading stdin), and no pidfd says when it ends: check
                // again soon.
                wait = wait.min(backoff);
                backoff = (backoff * 2).min(MAX_EXIT_POLL);
                if self.stdin.is_none() {
                    std::thread::sleep(wait);
                    continue;
                }
            }
            if let Err(e) = self.poll_once(Some(wait), true) {
                return Ended::Broken(e);
            }
        }
    }

    /// After the kill: drains what is left until EOF or `until`, then lets
    /// go of every pipe. Whether both outputs reached EOF.
    fn drain_until(&mut self, until: Instant) -> bool {
        self.stdin = None;
        while self.outputs_open() {
            let now = Instant::now();
            if now >= until || self.poll_once(Some(until - now), false).is_err() {
                break;
            }
        }
        let eof = !self.outputs_open();
        self.stdout = None;
        self.stderr = None;
        eof
    }

    fn poll_once(&mut self, timeout: Option<Duration>, feed: bool) -> io::Result<()> {
        const STDIN: usize = 0;
        const STDOUT: usize = 1;
        const STDERR: usize = 2;
        let pollfd = |fd: Option<i32>, events| libc::pollfd {
            fd: fd.unwrap_or(-1), // poll ignores negative fds
            events,
            revents: 0,
        };
        let stdin_fd = self.stdin.as_ref().filter(|_| feed).map(AsRawFd::as_raw_fd);
        let mut fds = [
            pollfd(stdin_fd, libc::POLLOUT),
            pollfd(self.stdout.as_ref().map(AsRawFd::as_raw_fd), libc::POLLIN),
            pollfd(self.stderr.as_ref().map(AsRawFd::as_raw_fd), libc::POLLIN),
        ];
        if sys::poll(&mut fds, timeout)? == 0 {
            return Ok(());
        }
        if fds[STDIN].revents != 0 {
            self.feed();
        }
        if fds[STDOUT].revents != 0 {
            read_into(&mut self.stdout, &mut self.out, &mut self.chunk);
        }
        if fds[STDERR].revents != 0 {
            read_into(&mut self.stderr, &mut self.err, &mut self.chunk);
        }
        Ok(())
    }

    fn feed(&mut self) {
        let Some(stdin) = self.stdin.as_mut() else {
            return;
        };
        let end = (self.written + CHUNK).min(self.payload.len());
        match stdin.write(&self.payload[self.written..end]) {
            Ok(n) => {
                self.written += n;
                if self.written == self.payload.len() {
                    self.stdin = None; // close: the hook sees EOF
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            // EPIPE: the hook exited or closed stdin without reading it all,
            // which is its right.
            Err(_) => self.stdin = None,
        }
    }
}

fn read_into<R: Read>(pipe: &mut Option<R>, capture: &mut Capture, chunk: &mut Vec<u8>) {
    let Some(reader) = pipe.as_mut() else {
        return;
    };
    match reader.read(chunk) {
        Ok(0) => *pipe = None,
        Ok(n) => {
            capture.push(&chunk[..n]);
            if n == chunk.len() {
                // A hook that fills the small buffer writes a lot: read a
                // pipe's worth at a time from now on.
                chunk.resize(CHUNK, 0);
            }
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) => {}
        Err(_) => *pipe = None,
    }
}

/// `argv[0]` as the path that will be executed, or why it cannot be: the
/// checks a shell would make, done up front so each failure gets its own
/// message and hint instead of a bare ENOENT.
fn resolve_program(req: &SpawnRequest) -> Result<PathBuf, SpawnError> {
    let arg0 = req.argv.first().map(String::as_str).unwrap_or("");
    if arg0.is_empty() {
        return Err(SpawnError::EmptyCommand);
    }
    if arg0.contains('/') {
        // An absolute arg0 replaces cwd; collecting the components drops
        // the `./` so messages show a clean path.
        let path: PathBuf = req.cwd.join(arg0).components().collect();
        if matches!(req.sandbox, SandboxSpec::None) {
            // Checked only if it fails to start ([`why_not_started`]): the
            // checks cost a few syscalls on every call and the exec makes
            // them anyway. A launcher would start and fail in its place.
            return Ok(path);
        }
        check_cwd(req)?;
        return check_executable(&path).map(|()| path);
    }
    check_cwd(req)?;
    let path_var = req
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map_or(DEFAULT_PATH, |(_, v)| v.as_str());
    let mut found_unusable = None;
    // Relative PATH entries are skipped: they would resolve inside the
    // project, letting a repository plant the program a hook runs.
    for dir in std::env::split_paths(path_var).filter(|d| d.is_absolute()) {
        let candidate = dir.join(arg0);
        if candidate.is_file() {
            match check_executable(&candidate) {
                Ok(()) => return Ok(candidate),
                Err(e) => found_unusable = found_unusable.or(Some(e)),
            }
        }
    }
    Err(found_unusable.unwrap_or_else(|| SpawnError::NotOnPath {
        program: arg0.to_owned(),
        path: path_var.to_owned(),
    }))
}

fn check_cwd(req: &SpawnRequest) -> Result<(), SpawnError> {
    if req.cwd.is_dir() {
        return Ok(());
    }
    Err(SpawnError::NoWorkingDirectory {
        cwd: req.cwd.clone(),
    })
}

/// Why `program` did not start: the first of the checks a user can act on
/// that fails, else the exec error itself.
fn why_not_started(req: &SpawnRequest, program: PathBuf, error: io::Error) -> SpawnError {
    match check_cwd(req).and_then(|()| check_executable(&program)) {
        Err(e) => e,
        Ok(()) => SpawnError::Exec { program, error },
    }
}

fn check_executable(path: &Path) -> Result<(), SpawnError> {
    let program = || path.to_path_buf();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(SpawnError::Missing { program: program() });
        }
        Err(error) => {
            return Err(SpawnError::Unreadable {
                program: program(),
                error,
            });
        }
    };
    if meta.is_dir() {
        return Err(SpawnError::IsADirectory { program: program() });
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(SpawnError::NotExecutable { program: program() });
    }
    if let Some(interpreter) = shebang_interpreter(path)
        && interpreter.is_absolute()
        && !interpreter.is_file()
    {
        return Err(SpawnError::NoInterpreter {
            program: program(),
            interpreter,
        });
    }
    Ok(())
}

/// The interpreter path on a `#!` line, if the file starts with one.
fn shebang_interpreter(path: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let mut file = std::fs::File::open(path).ok()?;
    let n = file.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next()?;
    // The kernel splits on space and tab only, so a CRLF file's `\r` stays
    // part of the interpreter name, as it will for the real exec.
    let interp = line
        .split(|&b| b == b' ' || b == b'\t')
        .find(|w| !w.is_empty())?;
    Some(PathBuf::from(String::from_utf8_lossy(interp).into_owned()))
}

/// The exec error of a program that passes [`check_executable`].
fn exec_failure(program: &Path, e: &io::Error) -> String {
    let shown = shown(program);
    match e.raw_os_error() {
        Some(libc::ENOENT) => format!(
            "`{shown}` could not be executed (no such file): its `#!` interpreter or dynamic \
             loader is missing; check the `#!` line, or line endings (`\\r\\n`) after it"
        ),
        Some(libc::EACCES) => format!(
            "`{shown}` could not be executed (permission denied); run `chmod +x {shown}`, and \
             check that its filesystem is not mounted `noexec`"
        ),
        Some(libc::ENOEXEC) => format!(
            "`{shown}` is not a program this system can run; a script needs a `#!` line such as \
             `#!/bin/sh`"
        ),
        Some(libc::ETXTBSY) => format!(
            "`{shown}` could not be executed: it is still open for writing (text file busy)"
        ),
        Some(libc::E2BIG) => {
            format!("`{shown}` could not be executed: its argv and env are too large")
        }
        _ if e.kind() == io::ErrorKind::InvalidInput => {
            format!("`{shown}` could not be executed: its argv or env contains a NUL byte")
        }
        _ => format!("`{shown}` could not be executed: {e}"),
    }
}

/// The launcher's argv for a confined run. bwrap's /tmp is private, so a
/// hook kept under /tmp outside the writable paths (a hermetic test home) has
/// its own directory bound read-only, and a cwd there is refused.
#[cfg(test)]
pub(super) fn confine(
    launcher: &Launcher,
    program: &Path,
    req: &SpawnRequest,
    sandbox: &Sandbox,
    seccomp_fd: Option<i32>,
) -> Result<Vec<OsString>, SpawnError> {
    confine_watched(launcher, program, req, sandbox, seccomp_fd).map(|(argv, _)| argv)
}

/// [`confine`], with what to check in the project once the hook has ended.
pub(super) fn confine_watched(
    launcher: &Launcher,
    program: &Path,
    req: &SpawnRequest,
    sandbox: &Sandbox,
    seccomp_fd: Option<i32>,
) -> Result<(Vec<OsString>, Watch), SpawnError> {
    let real = |p: &Path, what| {
        std::fs::canonicalize(p).map_err(|error| SpawnError::SandboxPath {
            what,
            path: p.to_path_buf(),
            error,
        })
    };
    let project = match &sandbox.project {
        Some(p) => Some(real(p, "project")?),
        None => None,
    };
    // A writable path inside the project was resolved and checked by the
    // caller: it is bound as it was checked, as long as none of its
    // components has become a symlink since (resolving it again would follow
    // one a hook planted in the meantime out of the project).
    let writable = sandbox
        .writable
        .iter()
        .map(|w| match &project {
            Some(root) if w.starts_with(root) && w != root => {
                plain_below(root, w).map_err(|error| SpawnError::SandboxPath {
                    what: "writable path",
                    path: w.clone(),
                    error,
                })
            }
            _ => real(w, "writable path"),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = real(&req.cwd, "working directory")?;
    let mut mounts = Vec::new();
    if !sandbox.network {
        // Sockets and other per-user runtime state; a real directory only
        // (`/var/run` is usually a link to `/run`).
        for dir in ["/run", "/var/run"] {
            if is_real_dir(Path::new(dir)) {
                mounts.push(Mount::HideDir(PathBuf::from(dir)));
            }
        }
    }
    let is_writable = |p: &Path| project.iter().chain(&writable).any(|w| p.starts_with(w));
    if launcher.kind == LauncherKind::Bubblewrap {
        let hidden = |p: &Path| p.starts_with("/tmp") && !is_writable(p);
        if hidden(&cwd) && project.is_none() {
            // A session started under /tmp, outside any project: its
            // directory is seen read-only (/tmp itself stays the private one).
            if cwd != Path::new("/tmp") {
                mounts.push(Mount::ReadOnly(cwd.clone()));
            }
        } else if hidden(&cwd) {
            return Err(SpawnError::PrivateTmp { cwd });
        }
        let real_program = real(program, "program")?;
        if hidden(&real_program) {
            // Its directory, for the scripts it sources, unless that is /tmp
            // itself, which would undo the private /tmp.
            mounts.push(Mount::ReadOnly(match real_program.parent() {
                Some(dir) if dir != Path::new("/tmp") => dir.to_path_buf(),
                _ => real_program,
            }));
        }
    }
    // A later mount over an earlier one wins, so: the writable paths, then
    // what is protected in them; then what is hidden (a bind of a project
    // that holds the home, a `.metaproject` there or above it, would show
    // it again); last the writable paths inside a hidden one (the hook's
    // cache under the state directory).
    let hides = hidden_mounts(sandbox);
    let in_hidden = |p: &Path| {
        hides
            .iter()
            .any(|m| matches!(m, Mount::HideDir(h) | Mount::HideFile(h) if p.starts_with(h)))
    };
    let (late, early): (Vec<PathBuf>, Vec<PathBuf>) =
        writable.iter().cloned().partition(|w| in_hidden(w));
    // A path granted inside a protected host directory (a hook's own state
    // file in `.codex/`) goes over the protection, which covers the rest.
    let in_protected = |w: &Path| {
        project.as_ref().is_some_and(|root| {
            crate::paths::PROJECT_PROTECTED
                .iter()
                .any(|p| w.starts_with(root.join(p)) && w != root.join(p))
        })
    };
    let (over_protected, early): (Vec<PathBuf>, Vec<PathBuf>) =
        early.into_iter().partition(|w| in_protected(w));
    if let Some(root) = &project {
        mounts.push(Mount::Bind(root.clone()));
    }
    mounts.extend(early.into_iter().map(Mount::Bind));
    let mut watch = Watch::default();
    if let Some(root) = &project {
        // sandbox-exec denies a path whether it exists or not; bubblewrap
        // needs something there to mount over.
        let create = launcher.kind == LauncherKind::Bubblewrap;
        watch = protect_project(root, create, &mut mounts);
    }
    mounts.extend(over_protected.into_iter().map(Mount::Bind));
    for m in hides {
        if !mounts.contains(&m) {
            mounts.push(m);
        }
    }
    mounts.extend(late.into_iter().map(Mount::Bind));
    let c = Confinement {
        cwd: &cwd,
        mounts: &mounts,
        network: sandbox.network,
        seccomp_fd,
    };
    Ok((launcher.wrap(program, &req.argv[1..], &c), watch))
}

fn is_real_dir(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

/// The credential stores under the home and the extra hidden paths, each
/// by its real path, those that exist.
fn hidden_mounts(sandbox: &Sandbox) -> Vec<Mount> {
    let mut mounts = Vec::new();
    let mut paths: Vec<PathBuf> = sandbox.hidden.clone();
    let home = sandbox
        .home
        .as_deref()
        .and_then(|h| std::fs::canonicalize(h).ok());
    if let Some(home) = &home {
        paths.extend(super::HOME_SECRETS.iter().map(|rel| home.join(rel)));
        if let Ok(entries) = std::fs::read_dir(home.join(".cargo")) {
            paths.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("credentials"))
                    .map(|e| e.path()),
            );
        }
    }
    for path in paths {
        let real = match &home {
            Some(home) if path.starts_with(home) => real_below(home, &path),
            _ => std::fs::canonicalize(&path).ok(),
        };
        let Some(real) = real else {
            continue;
        };
        let Ok(meta) = std::fs::metadata(&real) else {
            continue;
        };
        let mount = if meta.is_dir() {
            Mount::HideDir(real)
        } else {
            Mount::HideFile(real)
        };
        if !mounts.contains(&mount) {
            mounts.push(mount);
        }
    }
    mounts
}

/// Makes read-only, under the writable project `root`, what runs later
/// outside the sandbox ([`PROJECT_PROTECTED`], and what git takes commands
/// from, see [`super::git_guard`]), and every existing `.kimi*`. A missing
/// one is created empty first, so that it can be mounted over: the hook can
/// then neither write it nor create it. Each one's parent inside the
/// project is bound onto itself, so it cannot be renamed away either.
/// Without `create` a missing one is named as it is, and so is what must
/// stay missing. Returns what to check once the hook has ended.
fn protect_project(root: &Path, create: bool, mounts: &mut Vec<Mount>) -> Watch {
    let mut protect: Vec<(PathBuf, bool)> = PROJECT_PROTECTED
        .iter()
        .map(|rel| (root.join(rel), false))
        .collect();
    if let Ok(entries) = std::fs::read_dir(root) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".kimi") && !PROJECT_PROTECTED.contains(&name.as_ref()) {
                protect.push((e.path(), false));
            }
        }
    }
    let mut git = super::git_guard::plan(root);
    // What a host loads code or starts commands from: a missing directory
    // is made to be mounted over; a missing file (an empty `opencode.json`
    // or `.mcp.json` would break its host) must stay missing instead.
    for (_, rel) in crate::adapter::project_code() {
        let covered = PROJECT_PROTECTED
            .iter()
            .any(|p| rel.strip_prefix(p).is_some_and(|r| r.starts_with('/')));
        if covered {
            continue;
        }
        let is_dir = rel.ends_with('/');
        let path = root.join(rel.trim_end_matches('/'));
        if is_dir || std::fs::symlink_metadata(&path).is_ok() {
            protect.push((path, !is_dir));
        } else {
            git.watch.must_stay_absent(path, "a host would load it");
        }
    }
    protect.extend(git.protect);
    if !create {
        protect.extend(git.watch.absent_paths().map(|p| (p.to_path_buf(), false)));
    }
    for (path, is_file) in protect {
        if std::fs::symlink_metadata(&path).is_err() {
            if !create {
                mounts.push(Mount::ReadOnly(path));
                continue;
            }
            if !create_placeholder(&path, is_file) {
                continue;
            }
        }
        // A symlink is followed to where it leads; one that leads out of the
        // project is read-only there already.
        let real = if path.starts_with(root) {
            real_below(root, &path)
        } else {
            std::fs::canonicalize(&path).ok()
        };
        let Some(real) = real else {
            continue;
        };
        // Inside what is read-only already: nothing to add, and a pin of
        // its parent would make that writable again.
        let covered = mounts
            .iter()
            .any(|m| matches!(m, Mount::ReadOnly(r) | Mount::Empty(r) if real.starts_with(r)));
        if covered {
            continue;
        }
        let mut parent = real.parent();
        let mut pins = Vec::new();
        while let Some(p) = parent {
            if p == root || !p.starts_with(root) {
                break;
            }
            pins.push(Mount::Bind(p.to_path_buf()));
            parent = p.parent();
        }
        for pin in pins.into_iter().rev() {
            if !mounts.contains(&pin) {
                mounts.push(pin);
            }
        }
        // An empty directory (most often the placeholder just made) needs
        // no bind of itself: see [`Mount::Empty`].
        let ro = if is_empty_dir(&real) {
            Mount::Empty(real)
        } else {
            Mount::ReadOnly(real)
        };
        if !mounts.contains(&ro) {
            mounts.push(ro);
        }
    }
    git.watch
}

/// A directory with nothing in it (`path` is a real path: no link).
fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

/// The real path of `path`, which lies under the real directory `base`:
/// `path` itself when no component below `base` is a symlink (one `lstat`
/// per component, where `canonicalize` reads every component of the whole
/// path again), else what `canonicalize` says; `None` when it is missing.
fn real_below(base: &Path, path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix(base).ok()?;
    let mut at = base.to_path_buf();
    for part in rel.components() {
        if !matches!(part, std::path::Component::Normal(_)) {
            return std::fs::canonicalize(path).ok();
        }
        at.push(part);
        let meta = std::fs::symlink_metadata(&at).ok()?;
        if meta.file_type().is_symlink() {
            return std::fs::canonicalize(path).ok();
        }
    }
    Some(at)
}

/// `path`, under the real directory `root`, when no component of it below
/// `root` is a symlink (one `lstat` each); else why not.
fn plain_below(root: &Path, path: &Path) -> io::Result<PathBuf> {
    let rel = path.strip_prefix(root).map_err(io::Error::other)?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        if !matches!(part, std::path::Component::Normal(_)) {
            return Err(io::Error::other("it is not a plain path"));
        }
        at.push(part);
        if std::fs::symlink_metadata(&at)?.file_type().is_symlink() {
            return Err(io::Error::other(format!(
                "`{}` became a symlink after it was checked",
                shown(&at)
            )));
        }
    }
    Ok(at)
}

/// An empty directory (or file) where a protected path is missing.
fn create_placeholder(path: &Path, is_file: bool) -> bool {
    let made = if is_file {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map(drop)
    } else {
        std::fs::create_dir_all(path)
    };
    match made {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => true,
        Err(e) => {
            tracing::debug!("could not create `{}` to protect it: {e}", path.display());
            false
        }
    }
}

/// Where the `gitdir:` line of the `.git` file `dot_git` points.
pub(super) fn gitdir_of(dot_git: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(dot_git).ok()?;
    if meta.len() > 4096 {
        return None;
    }
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let base = dot_git.parent()?;
    Some(base.join(target))
}
