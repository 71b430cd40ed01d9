//! Runs one hook command as a child process: argv without a shell, a cleared
//! environment, its own process group, bounded output, a hard deadline, and
//! an OS sandbox when asked. Everything here blocks; nothing starts a runtime.

mod env;
mod git_guard;
mod groups;
mod sandbox;
mod spawn;
mod sys;

#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use env::{hook_env, hook_env_with, name_matches};
pub use groups::{install_signal_handlers, kill_all_live_groups};
pub use sandbox::{
    HOME_SECRETS, Launcher, LauncherError, LauncherKind, LauncherSearch, PROJECT_PROTECTED,
    find_launcher, macos_profile, probe_bwrap, set_probe_cache_dir,
};
pub use spawn::{SpawnError, spawn, spawn_cancellable, spawn_with_launcher};

/// Bytes kept from each of stdout and stderr; the rest is read and dropped.
pub const OUTPUT_CAP: usize = 1 << 20;

/// How long to wait for the pipes to close after the group was killed.
pub const GRACE: Duration = Duration::from_millis(500);

/// The bounds every timeout is clamped to (the spec's `timeoutMs` range).
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether (and how) the hook is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSpec {
    None,
    /// Never silently downgraded to `None`.
    Required(Sandbox),
}

/// What a confined hook may touch: the filesystem is read-only except the
/// project (minus [`PROJECT_PROTECTED`]), `writable` and a private `/tmp`;
/// the credential stores under `home` and `hidden` cannot be read; no
/// network unless `network`, and never a Unix socket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// Writable, except the paths that run later outside the sandbox
    /// (`.git/hooks`, `.git/config`, the hosts' project config).
    pub project: Option<PathBuf>,
    /// Writable as a whole: the hook's own cache, `sandbox.writable`.
    pub writable: Vec<PathBuf>,
    /// The user's home: its credential stores ([`HOME_SECRETS`]) are hidden.
    pub home: Option<PathBuf>,
    /// Hidden as well: keryx's own data and state directories, and without
    /// network the runtime directory (`$XDG_RUNTIME_DIR`).
    pub hidden: Vec<PathBuf>,
    pub network: bool,
    /// `[sandbox] launcher` from runtime.toml, when pinned.
    pub launcher: Option<PathBuf>,
}

/// One hook process to run.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    /// Executed directly: `argv[0]` is a path or a name looked up on the
    /// `PATH` in `env`.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The complete environment of the hook (see [`hook_env`]).
    pub env: Vec<(String, String)>,
    /// Written once, then the hook's stdin is closed.
    pub stdin: Vec<u8>,
    /// Clamped to [`MIN_TIMEOUT`], [`MAX_TIMEOUT`].
    pub timeout: Duration,
    pub sandbox: SandboxSpec,
}

/// How a hook run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Killed by this signal. Under bubblewrap a signal death arrives as
    /// `Code(128 + n)`, because bwrap reports it that way.
    Signal(i32),
    /// The deadline passed, or the hook's pipes were still held open by a
    /// descendant when it did; the process group has been SIGKILLed.
    Timeout,
    /// The hook never started: the message names the path and a fix.
    SpawnFailed(String),
    /// A sandbox was required and no working launcher exists here.
    SandboxUnavailable(String),
    /// Its [`Cancel`] was raised (the event was answered without it): not
    /// started, or its process group SIGKILLed.
    Cancelled,
}

/// A stop signal shared by the runs of one event that its answer does not
/// wait for (observers, once the call is denied): see
/// [`spawn_cancellable`].
#[derive(Debug, Default)]
pub struct Cancel(AtomicBool);

impl Cancel {
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Everything observed about one hook run.
#[derive(Debug, Clone)]
pub struct SpawnOutcome {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr: Vec<u8>,
    pub stderr_truncated: bool,
    pub duration: Duration,
    /// What a sandboxed hook did in the project that would have had git
    /// run a command it chose, each undone as far as possible; empty
    /// otherwise.
    pub undone: Vec<String>,
}

impl SpawnOutcome {
    fn not_started(exit: Exit, duration: Duration) -> Self {
        SpawnOutcome {
            exit,
            stdout: Vec::new(),
            stdout_truncated: false,
            stderr: Vec::new(),
            stderr_truncated: false,
            duration,
            undone: Vec::new(),
        }
    }
}
