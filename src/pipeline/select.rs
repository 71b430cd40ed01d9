//! Which registrations fire for the event, in load order, and why each
//! other one that fits the call does not (the trace `explain` and `test`
//! read).

use crate::config::model::Registration;
use crate::events::Event;
use crate::hosts::Adapter;
use crate::runtime::select::{self as runtime_select, NotRun, Trace};
use crate::runtime::types::{EventInput, Outcome, RecordEntry, RecordKind};

use super::event_run::*;
use super::prepare::*;

/// What fires for one event: the trace of the event itself and, at the
/// subagent tool call of a host that cannot fire SubagentStart itself, the
/// bridged SubagentStart's.
pub(crate) struct Selection<'r> {
    pub main: Trace<'r>,
    pub bridged: Option<(EventInput, Trace<'r>)>,
}

impl<'r> Selection<'r> {
    /// Every hook that fit the call but does not run, with why.
    pub fn skipped(&self) -> impl Iterator<Item = (&'r Registration, &NotRun)> {
        self.main
            .skipped()
            .chain(self.bridged.iter().flat_map(|(_, t)| t.skipped()))
    }
}

/// The one selection `run` and `explain` make, over `all` (every
/// registration in load order, held-back ones included).
pub(crate) fn selection<'r>(
    adapter: &Adapter,
    p: &Prepared,
    all: &[&'r Registration],
) -> Selection<'r> {
    let split = spawn_is_split(adapter);
    let mut f =
        runtime_select::Filters::for_run(p.profile, Some(&p.trust), p.loc.settings(), &p.loaded);
    if p.input.event == Event::SubagentStart && split {
        f.split = Some(runtime_select::SplitSpawn::HostEvent);
    }
    let main = Trace::of(all.iter().copied(), &p.input, &f);
    let bridged = bridged_subagent_start(adapter, &p.input, &p.inherited).map(|sub| {
        f.split = split.then_some(runtime_select::SplitSpawn::Bridge);
        let t = Trace::of(all.iter().copied(), &sub, &f);
        (sub, t)
    });
    Selection { main, bridged }
}

/// The entry of a hook that fit the call but did not run.
pub(crate) fn skipped_entry(reg: &Registration, why: &NotRun) -> RecordEntry {
    RecordEntry {
        kind: RecordKind::Skipped,
        record: crate::runtime::types::HookInvocationRecord {
            hook_id: reg.id.clone(),
            event: reg.event.as_str(),
            class: reg.class,
            scope: reg.scope,
            outcome: Outcome::None,
            failure: None,
            reason: Some(format!("not run: {}", why.text())),
            duration_ms: 0,
            changed_outcome: false,
            exit_code: None,
        },
        anomalies: Vec::new(),
        skipped_because: Some(why.code().to_owned()),
    }
}
