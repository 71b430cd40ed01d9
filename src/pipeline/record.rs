//! Records of decisions no hook made (a broken payload, an invalid config,
//! the shim's own failure, a replayed answer), and the clock their
//! durations are measured from.

use crate::settings::Here;
use std::sync::OnceLock;
use std::time::Instant;

use crate::events::Event;
use crate::hosts::Adapter;
use crate::runtime::types::{EventInput, FireResult, RecordContext, RecordEntry, RecordKind};
use crate::session::Session;

/// When this event started, for the duration of entries no hook made.
pub(crate) static STARTED: OnceLock<Instant> = OnceLock::new();

pub(crate) fn elapsed_ms() -> u64 {
    STARTED.get().map_or(0, |t| t.elapsed().as_millis() as u64)
}

/// Who, where and what call, for the records of `input`.
pub(crate) fn record_context(adapter: &Adapter, input: &EventInput, loc: &Here) -> RecordContext {
    RecordContext {
        host: adapter.name().to_owned(),
        session_id: input.session_id.clone(),
        project_root: loc
            .project_root
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
        tool: input
            .event
            .is_per_tool()
            .then(|| input.tool_name().map(str::to_owned))
            .flatten(),
        summary: input
            .event
            .is_per_tool()
            .then(|| crate::session::call_summary(input))
            .flatten(),
    }
}

/// Records a decision no hook made (a broken payload, an invalid config,
/// the shim's own failure, a replayed answer). Best effort: an entry that
/// cannot be written never changes the answer.
pub(crate) fn record_shim(
    adapter: &Adapter,
    input: Option<&EventInput>,
    loc: &Here,
    kind: RecordKind,
    event: Event,
    result: &FireResult,
) {
    let ctx = match input {
        Some(i) => record_context(adapter, i, loc),
        None => RecordContext {
            host: adapter.name().to_owned(),
            session_id: UNKNOWN_SESSION.to_owned(),
            project_root: loc
                .project_root
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
            tool: None,
            summary: None,
        },
    };
    let correlation = input
        .and_then(EventInput::tool_call_id)
        .map_or_else(|| format!("{}-0", ctx.session_id), str::to_owned);
    let run_id = input.and_then(|i| i.run_id.clone()).unwrap_or_default();
    let entry = RecordEntry::shim(kind, event, result, elapsed_ms());
    let session = Session::at(loc.session_dir(adapter.name(), &ctx.session_id));
    if let Err(e) = session.append_records(&ctx, &[entry], &correlation, &run_id) {
        tracing::warn!("could not append records: {e}");
    }
}

/// The session a payload that could not be decoded is recorded under.
pub(crate) const UNKNOWN_SESSION: &str = "unknown-session";
