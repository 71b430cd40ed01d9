//! The handful of libc calls std does not wrap: poll, non-blocking pipes,
//! group kill, a non-reaping wait, a pidfd and signal dispositions. Each unsafe call
//! sits alone in a tiny function so its SAFETY argument stays local.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// `poll(2)` on `fds`, retried on EINTR; `None` waits forever.
#[allow(unsafe_code)]
pub(super) fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ms = match timeout {
        None => -1,
        // Round up so a sub-millisecond remainder does not become a busy loop.
        Some(t) => t.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int,
    };
    loop {
        // SAFETY: `fds` is a valid, exclusively borrowed slice of pollfd for
        // the whole call and its length is passed alongside it.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Puts `fd`, a pipe this process just made, in non-blocking mode, so a
/// full or empty pipe never parks the thread that drives all three pipes.
/// A new pipe has no other status flag to keep (F_SETFL ignores the access
/// mode), so this is one `fcntl`, not a read and a write of the flags.
#[allow(unsafe_code)]
pub(super) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl with F_SETFL only sets status flags of an fd the caller
    // owns; no memory is passed.
    let rc = unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Sends SIGKILL to every process in group `pgid`. Async-signal-safe.
#[allow(unsafe_code)]
pub(super) fn kill_group(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: killpg takes plain integers; pgid > 1 so it can never mean
    // "our own group" (0) or "every process" (-1 / 1).
    let rc = unsafe { libc::killpg(pgid, libc::SIGKILL) };
    rc == 0
}

/// A pidfd for child `pid` (Linux 5.3+): it polls readable once the child
/// has exited, so its exit can be waited for with a timeout and no sleep.
/// `None` where the kernel or a seccomp filter refuses it.
#[allow(unsafe_code)]
pub(super) fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1;
    // no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the kernel just returned this fd to us and nothing else owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Whether child `pid` has terminated, without reaping it: while it is a
/// zombie its pid, and so its process-group id, cannot be reused, which
/// keeps a later `killpg` from reaching a stranger.
#[allow(unsafe_code)]
pub(super) fn has_exited(pid: u32) -> io::Result<bool> {
    // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid, exclusively borrowed siginfo_t that waitid
    // fills in; WNOWAIT leaves the child waitable for std's `Child::wait`.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if rc < 0 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::EINTR) => Ok(false),
            // Already reaped by someone else: it has certainly exited.
            Some(libc::ECHILD) => Ok(true),
            _ => Err(err),
        };
    }
    // With WNOHANG and nothing to report the kernel leaves it zeroed.
    Ok(info.si_signo == libc::SIGCHLD)
}

/// Installs `handler` for `sig` (SA_RESTART). When the signal was ignored
/// (`nohup`), the ignore is restored and `false` returned: whoever started
/// us asked for that.
#[allow(unsafe_code)]
pub(super) fn set_handler(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) -> bool {
    // SAFETY: both sigaction structs are fully initialised locals; the
    // handler is an `extern "C" fn(c_int)` as the kernel ABI expects, and
    // only calls async-signal-safe functions.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, &action, &mut old) != 0 {
            return false;
        }
        if old.sa_sigaction == libc::SIG_IGN {
            libc::sigaction(sig, &old, std::ptr::null_mut());
            false
        } else {
            true
        }
    }
}

/// Restores the default SIGCHLD action. An ignored SIGCHLD survives exec,
/// and with it the kernel reaps children itself, losing every exit status.
#[allow(unsafe_code)]
pub(super) fn default_sigchld() {
    // SAFETY: signal() takes plain integers and touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
    }
}

/// Restores the default action for `sig` and raises it again, so whoever
/// waits for us sees the signal death they caused. Async-signal-safe.
#[allow(unsafe_code)]
pub(super) fn reraise_default(sig: libc::c_int) {
    // SAFETY: signal() and raise() are async-signal-safe and take plain
    // integers; inside the handler `sig` is blocked, so it is delivered
    // (and terminates us) as soon as the handler returns.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// The real uid, part of the sandbox probe cache key (root and a user get
/// different answers from the same bwrap).
#[allow(unsafe_code)]
pub(super) fn uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;

/// `close_range(2)` (Linux 5.9+; the close-on-exec flag 5.11+) through the
/// raw syscall, so an older C library does not matter.
#[allow(unsafe_code)]
fn close_range(first: libc::c_uint, flags: libc::c_uint) -> bool {
    // SAFETY: close_range takes plain integers and touches no memory; it
    // only closes (or marks) descriptors from `first` up.
    unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, flags) == 0 }
}

/// Marks every descriptor from `first` up close-on-exec, in this process:
/// one syscall, or on a kernel without it a walk of `/proc/self/fd`.
#[allow(unsafe_code)]
pub(super) fn cloexec_from(first: RawFd) {
    if close_range(first as libc::c_uint, CLOSE_RANGE_CLOEXEC) {
        return;
    }
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<RawFd> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd >= first)
        .collect();
    for fd in fds {
        // SAFETY: F_GETFD/F_SETFD only read and set the descriptor flags of
        // `fd`; on a descriptor that has just been closed they fail.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

/// A close-on-exec pipe whose write end already holds `bytes` (less than a
/// pipe buffer) and is closed: the read end, never one of fds 0-2.
#[allow(unsafe_code)]
pub(super) fn pipe_with(bytes: &[u8]) -> io::Result<OwnedFd> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these two descriptors, owned by no one else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let mut file = std::fs::File::from(write);
    std::io::Write::write_all(&mut file, bytes)?;
    drop(file);
    if fds[0] > 2 {
        return Ok(read);
    }
    // SAFETY: F_DUPFD_CLOEXEC duplicates a descriptor we own to a new one.
    let moved = unsafe { libc::fcntl(fds[0], libc::F_DUPFD_CLOEXEC, 3) };
    if moved < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fcntl just returned this new descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

/// In a forked child before exec: leaves fds 0-2 and, when `keep` is
/// given, that descriptor moved to `at` (without close-on-exec); closes
/// every other one. Async-signal-safe: syscalls on integers only.
#[allow(unsafe_code)]
pub(super) fn only_stdio_and(keep: Option<RawFd>, at: RawFd) -> io::Result<()> {
    let first = match keep {
        Some(fd) => {
            // SAFETY: dup2 and fcntl take plain integers; dup2 onto `at`
            // replaces whatever the child had there, which it does not need.
            let rc = unsafe {
                if fd == at {
                    libc::fcntl(at, libc::F_SETFD, 0)
                } else {
                    libc::dup2(fd, at)
                }
            };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            at + 1
        }
        None => 3,
    };
    if !close_range(first as libc::c_uint, 0) {
        // No close_range: close up to the descriptor limit one by one.
        // SAFETY: sysconf takes an integer; close on an fd that is not open
        // fails harmlessly.
        let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(256, 65536) as RawFd;
        for fd in first..max {
            unsafe { libc::close(fd) };
        }
    }
    Ok(())
}
