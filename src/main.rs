//! The binary's entry point. keryx-hooks starts once per tool call, so it
//! skips what the standard runtime does before `main` that a short-lived
//! shim does not use: finding the main thread's stack bounds (the C
//! library reads and parses `/proc/self/maps`) and installing a stack
//! overflow handler on an alternate signal stack, a dozen system calls and
//! a twentieth of a no-match event's instructions (docs/PERFORMANCE.md).
//!
//! What the runtime does that matters is done here, the same way: file
//! descriptors 0–2 are made to exist (so no file the shim opens can take
//! the place of stdout, where the host reads its answer), SIGPIPE is
//! ignored (a closed pipe is an error to handle, not a silent death), a
//! panic exits 101 after the panic hook has printed it, and stdout is
//! flushed on the way out (`std::process::exit`).
// The test harness brings its own `main`.
#![cfg_attr(not(test), no_main)]

#[cfg(not(test))]
use keryx_hooks::error::ExitStatus;

#[cfg(not(test))]
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    // SAFETY: called once, first, on the only thread: nothing else uses
    // the file descriptors or signal dispositions yet.
    unsafe { prepare_process() };
    // The C library hands argc and argv to the standard library's own
    // initialiser, so `args_os` is the real command line here too.
    let status = std::panic::catch_unwind(|| keryx_hooks::main(std::env::args_os().collect()))
        .unwrap_or(ExitStatus::Panic);
    // `exit` flushes stdout first.
    std::process::exit(i32::from(status.code()))
}

/// Opens `/dev/null` on any of fds 0–2 that is closed, and ignores SIGPIPE,
/// as the standard runtime does before `main`.
///
/// # Safety
/// Only before any other thread exists and before any file is opened.
#[cfg(not(test))]
#[allow(unsafe_code)]
unsafe fn prepare_process() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of three pollfd for the call.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } >= 0;
    for pfd in &fds {
        let closed = if polled {
            pfd.revents & libc::POLLNVAL != 0
        } else {
            // SAFETY: F_GETFD on any integer is defined; -1 means closed.
            (unsafe { libc::fcntl(pfd.fd, libc::F_GETFD) }) == -1
        };
        if closed {
            // SAFETY: a NUL-terminated path; the lowest free descriptor,
            // the closed one, is what open returns.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
    // SAFETY: installing SIG_IGN has no handler to be unsafe in.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}
