//! The registry of hook process groups still running, so a SIGTERM, SIGINT
//! or SIGHUP sent to keryx-hooks kills them before it dies instead of leaving
//! orphans (qwen-code#10100). Lock-free, because the signal handler walks it.

use std::sync::Once;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use super::sys;

/// Far above any real number of concurrent hooks; a full table only costs
/// the signal-time kill of the extra groups, never the run itself.
const SLOTS: usize = 1024;

static LIVE: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
/// Spawns between fork and registration: a group the handler cannot see yet.
static SPAWNING: AtomicUsize = AtomicUsize::new(0);
/// The terminating signal, once one arrived.
static TERMINATING: AtomicI32 = AtomicI32::new(0);

/// Held from just before a fork until its group is registered. If a
/// terminating signal arrived meanwhile, the last spawn to finish does what
/// the handler could not: kill every group, including its own, and die.
pub(super) struct Spawning(());

impl Spawning {
    pub(super) fn begin() -> Spawning {
        SPAWNING.fetch_add(1, Ordering::SeqCst);
        Spawning(())
    }
}

impl Drop for Spawning {
    fn drop(&mut self) {
        if SPAWNING.fetch_sub(1, Ordering::SeqCst) == 1 {
            let sig = TERMINATING.load(Ordering::SeqCst);
            if sig != 0 {
                kill_all_live_groups();
                sys::reraise_default(sig);
            }
        }
    }
}

/// A registered group; dropping it unregisters (it does not kill).
pub(super) struct LiveGroup {
    slot: Option<usize>,
}

impl LiveGroup {
    pub(super) fn register(pgid: i32) -> LiveGroup {
        for (i, slot) in LIVE.iter().enumerate() {
            if slot
                .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return LiveGroup { slot: Some(i) };
            }
        }
        tracing::warn!(
            pgid,
            "more than {SLOTS} live hook groups; this one is not killed if keryx-hooks is signalled"
        );
        LiveGroup { slot: None }
    }
}

impl Drop for LiveGroup {
    fn drop(&mut self) {
        if let Some(i) = self.slot.take() {
            LIVE[i].store(0, Ordering::SeqCst);
        }
    }
}

/// SIGKILLs every hook process group that is still registered.
/// Async-signal-safe: atomic loads and `killpg` only.
pub fn kill_all_live_groups() {
    for slot in &LIVE {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            sys::kill_group(pgid);
        }
    }
}

extern "C" fn on_terminate(sig: libc::c_int) {
    TERMINATING.store(sig, Ordering::SeqCst);
    kill_all_live_groups();
    // With a spawn in flight its group is not registered yet; dying now
    // would orphan it, so the last such spawn finishes the job (Spawning).
    if SPAWNING.load(Ordering::SeqCst) == 0 {
        sys::reraise_default(sig);
    }
}

/// On SIGTERM, SIGINT or SIGHUP: kill every live hook group, then die of
/// the same signal. A signal that was ignored when we started (`nohup`)
/// stays ignored. Also puts SIGCHLD back to its default, which hook exit
/// statuses depend on. Idempotent.
pub fn install_signal_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        sys::default_sigchld();
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            sys::set_handler(sig, on_terminate);
        }
    });
}
