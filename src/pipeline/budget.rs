//! The time a host gives the shim for one event: the timeout of the entry
//! that runs it in the host's own config files (the shortest when several
//! do), read only when a hook is about to run as a process. Every hook runs
//! inside it, less a reserve for writing the answer; a host that gives up
//! first would read no answer at all, and Claude Code then runs the tool.

use std::time::{Duration, Instant};

use crate::hosts::Adapter;
use crate::install::hostfile::{self, Scope};
use crate::paths::Locations;

/// What answering takes after the last hook: the records, the answer, the
/// exit, and the time the host spent starting us before our clock began.
pub const ANSWER_RESERVE: Duration = Duration::from_millis(1_000);

/// The host's timeout for `host_event`, from our entries for it in the
/// files `adapter` reads here (user scope, and this project's): those
/// naming `snapshot` when any do, else all of ours on that event; an entry
/// without a timeout has the host's default. `None` when no entry is found
/// (a plugin-wired host, a hand-written command line, the keryx shell):
/// then only the hooks' own timeouts bound the event.
pub fn host_timeout(
    adapter: &Adapter,
    host_event: &str,
    snapshot: Option<&str>,
    loc: &Locations,
) -> Option<Duration> {
    let mut entries = Vec::new();
    for scope in [Scope::User, Scope::Project] {
        for path in hostfile::config_files(adapter, scope, loc) {
            match hostfile::wired_events(adapter, &path) {
                Ok(found) => {
                    entries.extend(found.into_iter().filter(|e| e.host_event == host_event))
                }
                Err(e) => tracing::debug!("budget: `{}` not read: {e}", path.display()),
            }
        }
    }
    let named = entries
        .iter()
        .any(|e| snapshot.is_some() && e.snapshot_key.as_deref() == snapshot);
    let unit = adapter.timeout_unit();
    entries
        .iter()
        .filter(|e| !named || e.snapshot_key.as_deref() == snapshot)
        .filter_map(|e| e.timeout.or(adapter.default_timeout()))
        .map(|t| Duration::from_millis(unit.to_millis(t)))
        .min()
}

/// When the hooks of an event that started at `started` must be done, for
/// a host that waits `budget`: the budget less [`ANSWER_RESERVE`] (a fifth
/// of a short budget).
pub fn deadline(started: Instant, budget: Duration) -> Instant {
    started + budget - ANSWER_RESERVE.min(budget / 5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_kept_out_of_the_budget() {
        let t = Instant::now();
        assert_eq!(
            deadline(t, Duration::from_secs(19)),
            t + Duration::from_secs(18)
        );
        assert_eq!(
            deadline(t, Duration::from_secs(2)),
            t + Duration::from_millis(1_600)
        );
    }
}
