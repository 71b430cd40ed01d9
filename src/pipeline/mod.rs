//! The event pipeline every command that handles an event composes:
//! prepare (decode, locate, load, trust) → select → fire → compose →
//! record. `run` reads the payload, calls [`handle`] and encodes the answer
//! for the host; `explain` and `test` stop after [`selection`]. Nothing here
//! writes to stdout.

pub mod allow_once;
pub mod budget;
pub mod event_run;
pub mod held;
pub mod prepare;
pub mod record;
pub mod select;

pub(crate) use event_run::*;
pub(crate) use prepare::*;
pub(crate) use record::*;
pub(crate) use select::*;

use crate::settings::Here;
use serde_json::Value;

use crate::config::model::Profile;
use crate::events::Event;
use crate::hosts::Adapter;
use crate::hosts::stdin_guard::StdinError;
use crate::runtime::select::{self as runtime_select, NotRun};
use crate::runtime::types::{FireResult, RecordEntry};

/// Consecutive Stop blocks after which a Stop gate stops blocking the turn.
pub const STOP_BLOCK_LIMIT: u32 = 8;

/// Said at SessionStart when `KERYX_HOOKS=off` is set.
pub const OFF_NOTICE: &str = "keryx-hooks is off in this session's environment (KERYX_HOOKS=off): no hook runs and no gate guards this session";

/// Settings for one event, resolved from the arguments.
pub(crate) struct RunSettings {
    pub host: String,
    pub host_event: String,
    pub snapshot: Option<String>,
    pub profile: Option<Profile>,
    pub headless: bool,
}

pub(crate) fn panic_result(adapter: &Adapter, host_event: &str) -> (Event, FireResult) {
    broken_result(
        adapter,
        host_event,
        "keryx-hooks failed inside while handling this event (see `keryx-hooks.log`); the event is denied",
    )
}

/// What a shim that cannot work answers on `host_event`: a deny on the
/// gate-capable events (an unknown host event is taken for one).
pub(crate) fn broken_result(
    adapter: &Adapter,
    host_event: &str,
    reason: impl Into<String>,
) -> (Event, FireResult) {
    let event = adapter.canonical_event(host_event);
    let result = FireResult::broken(event, reason);
    (event.unwrap_or(Event::PreToolUse), result)
}

/// One event as a sequence of stages (ARCHITECTURE §1): the payload `run`
/// read → decode and
/// locate/load ([`prepare`]) → select ([`selection`], the trace `explain`
/// and `test` read too) → fire → compose → record; `run` then encodes.
/// Every failure becomes a result, never a panic or an exit code of its own.
/// `note_layer` hears which user layer was read (for a person at a terminal).
pub(crate) fn handle(
    adapter: &Adapter,
    event: Event,
    s: &RunSettings,
    payload: Result<Value, StdinError>,
    note_layer: impl Fn(&UserLayer, &Here),
) -> FireResult {
    // decode, locate, load
    let p = match prepare(adapter, event, s, payload) {
        Ok(p) => {
            note_layer(&p.layer, &p.loc);
            p
        }
        Err(Stopped::Quiet) => return FireResult::none(),
        Err(Stopped::Shim(a)) => {
            if let Some(layer) = &a.layer {
                note_layer(layer, &a.loc);
            }
            record_shim(adapter, a.input.as_ref(), &a.loc, a.kind, event, &a.result);
            let mut result = a.result;
            let session = a.input.as_ref().map(|i| i.session_id.as_str());
            held::hold(adapter, &s.host_event, event, &mut result, &a.loc, session);
            return result;
        }
    };
    let hold = |result: &mut FireResult| {
        let session = Some(p.input.session_id.as_str());
        held::hold(
            adapter,
            &s.host_event,
            p.input.event,
            result,
            &p.loc,
            session,
        );
    };
    let mut notices = p.notices.clone();
    if let Some(line) = trust_news(adapter, &p.input, &p.loc, &p.trust, &p.loaded) {
        notices.push(line);
    }
    if let Some(line) = enforcement_news(adapter, &p) {
        notices.push(line);
    }
    // select
    let all = runtime_select::in_load_order(&p.loaded, &p.trust);
    let sel = selection(adapter, &p, &all);
    let skipped = skipped_entries(&sel, p.profile);
    // fire, compose, record
    let mut ev = match EventRun::begin(adapter, &p, &sel, notices, skipped) {
        Ok(ev) => ev,
        Err(mut answer) => {
            hold(&mut answer);
            return answer;
        }
    };
    let mut result = ev.fire();
    ev.compose(&mut result);
    ev.record(&result);
    hold(&mut result);
    result
}

/// What decides enforcement changed since the session's last look, and
/// not by keryx-hooks' own commands: told to the person after a tool ran
/// (PostToolUse), the event where a tool's change shows. SessionStart takes
/// the first look; other events do not look, so each costs nothing.
fn enforcement_news(adapter: &Adapter, p: &prepare::Prepared) -> Option<String> {
    use crate::install::watch;
    let event = p.input.event;
    let tell = matches!(event, Event::PostToolUse | Event::PostToolUseFailure);
    if !tell && event != Event::SessionStart {
        return None;
    }
    let dir = p.loc.session_dir(adapter.name(), &p.input.session_id);
    let snapshot = p
        .layer
        .key()
        .map(|k| p.loc.snapshot_dir(k).join("hooks.json"));
    watch::notice(&watch::changed_outside(
        &p.loc,
        &dir,
        snapshot.as_deref(),
        tell,
    ))
}

/// Every hook that fit the call but does not run (held back by trust,
/// disabled, another profile, left off in runtime.toml), as a `skipped`
/// entry with the reason. When nothing runs at all, only a held-back hook
/// is worth a write of its own: an event no hook applies to stays free of
/// disk writes (the hot path), and a hook someone turned off says so
/// whenever its event leaves records anyway.
pub(crate) fn skipped_entries(sel: &Selection, profile: Profile) -> Vec<RecordEntry> {
    let nothing_runs = Work::of(sel, profile) == Work::Nothing;
    sel.skipped()
        .filter(|(_, why)| !nothing_runs || matches!(why, NotRun::Trust(_)))
        .map(|(r, why)| skipped_entry(r, why))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::types::Outcome;

    /// After a panic a gate-capable event is denied as by a broken shim,
    /// in the host's own shape; an event that cannot gate stays silent.
    #[test]
    fn a_panic_denies_gate_capable_events_only() {
        let claude = crate::hosts::adapter("claude-code").unwrap();
        let (event, result) = panic_result(claude, "PreToolUse");
        assert_eq!((event, result.outcome), (Event::PreToolUse, Outcome::Deny));
        assert_eq!(result.matched_rules, ["keryx-hooks-unavailable"]);
        let answer = claude.encode("PreToolUse", event, &result);
        assert!(
            answer.stdout.contains(r#""permissionDecision":"deny""#),
            "{answer:?}"
        );
        assert!(answer.stdout.contains("failed inside"), "{answer:?}");
        let (event, result) = panic_result(claude, "PostToolUse");
        assert_eq!((event, result.outcome), (Event::PostToolUse, Outcome::None));
        let gemini = crate::hosts::adapter("gemini-cli").unwrap();
        let (event, result) = panic_result(gemini, "BeforeTool");
        assert_eq!((event, result.outcome), (Event::PreToolUse, Outcome::Deny));
    }
}
