//! Fire, compose and record one event under its session: de-duplicated
//! deliveries, the session lock, the Stop-block counter, the first-edit
//! set, and the bridged SubagentStart.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::config::model::{BuiltinPort, Handler, Profile, Registration};
use crate::events::Event;
use crate::hosts::Adapter;
use crate::runtime::fire::{self, FireContext};
use crate::runtime::reply::HookReply;
use crate::runtime::types::{EventInput, FireResult, Outcome, RecordEntry, RecordKind};
use crate::session::calls::{self, Calls, Claim};
use crate::session::{Delivered, Locked, Session};

use super::prepare::*;
use super::record::*;
use super::select::*;
use super::*;

/// The file a Write/Edit touches, for the first-edit set.
pub(crate) fn edited_path(input: &EventInput) -> Option<String> {
    let ti = input.tool_input()?;
    ["file_path", "filePath", "path"]
        .iter()
        .find_map(|k| ti.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
}

/// What firing one event takes, decided before any state is touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Work {
    /// No registration applies: no state, no record, nothing spawned.
    Nothing,
    /// Only built-ins answered in this process: pure, so one pass under the
    /// session lock, and a repeated delivery is simply evaluated again.
    InProcess,
    /// Something runs as a process or through an enabled port: de-duplicated
    /// by tool call, and the session lock is not held while it runs.
    Spawns,
}

impl Work {
    pub(crate) fn of(sel: &Selection, profile: Profile) -> Work {
        let mut selected = sel
            .main
            .selected()
            .into_iter()
            .chain(sel.bridged.iter().flat_map(|(_, t)| t.selected()))
            .peekable();
        if selected.peek().is_none() {
            return Work::Nothing;
        }
        // The learning observer is one append through its own lock: it
        // keeps a gated call on the in-process path.
        if selected.all(|r| {
            crate::builtins::answers_in_process(r, profile)
                || matches!(r.handler, Handler::Builtin(BuiltinPort::LearningObserver))
        }) {
            Work::InProcess
        } else {
            Work::Spawns
        }
    }
}

/// The SubagentStart a host cannot fire itself, enforced at the PreToolUse
/// of its subagent tool: the event to fire alongside `input`, if any.
pub(crate) fn bridged_subagent_start(
    adapter: &Adapter,
    input: &EventInput,
    inherited: &[String],
) -> Option<EventInput> {
    let bridge = adapter.bridge_for(Event::SubagentStart)?;
    if input.event != bridge.via || input.tool_name() != Some(bridge.tool) {
        return None;
    }
    let mut sub = EventInput::new(Event::SubagentStart, input.session_id.clone());
    sub.interactive = input.interactive;
    sub.parent_session_id = Some(input.session_id.clone());
    sub.fields.insert(
        "subagentId".into(),
        json!(input.tool_call_id().unwrap_or("")),
    );
    sub.fields
        .insert("parentSessionId".into(), json!(input.session_id));
    sub.fields.insert("spawnKind".into(), json!("external"));
    sub.fields
        .insert("inheritedHookIds".into(), json!(inherited));
    Some(sub)
}

/// Whether one spawn reaches keryx twice, at the bridge and as the host's
/// own SubagentStart (Claude Code, Copilot, Kimi Code): then each hook runs
/// once, the gates at the bridge (where a deny stops the spawn) and every
/// other SubagentStart hook at the host's event (where context reaches the
/// subagent).
pub(crate) fn spawn_is_split(adapter: &Adapter) -> bool {
    adapter.bridge_for(Event::SubagentStart).is_some()
        && adapter.host_event_for(Event::SubagentStart).is_some()
}

/// What phase 1 read and decided under the session lock.
pub(crate) struct Ids {
    run_id: String,
    seq: u64,
    first_edit: bool,
    stop_blocks: u32,
    /// The files the agent wrote earlier in the session, for a shell call
    /// (a script among them that it runs was written by the agent).
    agent_written: Vec<PathBuf>,
}

/// The files `input` (a PreToolUse) writes, resolved: a file tool's path,
/// a patch's files, a shell redirect's target, what `tee`, `cp` and inline
/// code write; and whether it is a shell call, which may run one of the
/// files written before.
pub(crate) fn writes_of(input: &EventInput, loc: &crate::settings::Here) -> (Vec<String>, bool) {
    if input.event != Event::PreToolUse {
        return (Vec::new(), false);
    }
    let call = crate::rules::Call::new(input, crate::rules::call::places(loc));
    let shell = !call.command_lines().is_empty();
    let written = call
        .paths()
        .iter()
        .filter(|r| r.access == crate::config::rules::Access::Write)
        .map(|r| r.resolved.to_string_lossy().into_owned())
        .collect();
    (written, shell)
}

/// Records `written` in the session's state and gives back what the agent
/// wrote before, when `shell` asks for it.
fn note_writes(l: &mut Locked, written: &[String], shell: bool) -> Vec<PathBuf> {
    let before = if shell {
        l.state.written.iter().map(PathBuf::from).collect()
    } else {
        Vec::new()
    };
    for w in written {
        l.state.wrote(w);
    }
    before
}

/// Phase 1: the sequence number, the run id and the first-edit decision.
pub(crate) fn take_ids(l: &mut Locked, input: &EventInput, track_edits: bool) -> Ids {
    let seq = l.state.next_seq();
    let event = input.event;
    if event == Event::UserPromptSubmit || l.state.run_id.is_none() || input.run_id.is_some() {
        let fresh = input.run_id.clone().unwrap_or_else(|| format!("run-{seq}"));
        if l.state.run_id.as_deref() != Some(&fresh) {
            l.state.stop_blocks = 0;
        }
        l.state.run_id = Some(fresh);
    }
    let mut first_edit = false;
    if track_edits
        && event == Event::PreToolUse
        && matches!(input.tool_name(), Some("Write" | "Edit"))
        && let Some(p) = edited_path(input)
    {
        first_edit = l.state.first_edit(&p);
    }
    Ids {
        run_id: l.state.run_id.clone().unwrap_or_default(),
        seq,
        first_edit,
        stop_blocks: l.state.stop_blocks,
        agent_written: Vec::new(),
    }
}

/// One event between selection and its answer: what the stages after
/// `select` share, each adding to it.
pub(crate) struct EventRun<'a, 'r> {
    adapter: &'a Adapter,
    p: &'a Prepared,
    sel: &'a Selection<'r>,
    /// The session's state, unless nothing runs.
    session: Option<Session>,
    /// This delivery's claim on its tool call, for the replays.
    claimed: Option<calls::Claimed>,
    /// The session lock, held through firing for in-process work.
    held: Option<Locked>,
    ids: Ids,
    /// What to say to the person.
    notices: Vec<String>,
    /// The entries of hooks that fit the call but did not run.
    skipped: Vec<RecordEntry>,
    /// The Stop-block counter to save.
    stop_blocks: u32,
    /// When the hooks must be done: the host's timeout for the event, less
    /// the time answering takes (see [`super::budget`]).
    deadline: Option<std::time::Instant>,
}

impl<'a, 'r> EventRun<'a, 'r> {
    /// De-duplication and phase 1 under the session lock (the sequence
    /// number, the run id, the first-edit decision). `Err` is the answer
    /// when the event ends here (a replayed delivery, a lock held
    /// elsewhere), already recorded.
    pub(crate) fn begin(
        adapter: &'a Adapter,
        p: &'a Prepared,
        sel: &'a Selection<'r>,
        notices: Vec<String>,
        skipped: Vec<RecordEntry>,
    ) -> Result<Self, FireResult> {
        let (input, loc, profile) = (&p.input, &p.loc, p.profile);
        let event = input.event;
        let work = Work::of(sel, profile);
        let session = match work {
            Work::Nothing => None,
            _ => Some(Session::at(
                loc.session_dir(adapter.name(), &input.session_id),
            )),
        };
        let shim = |kind, r: &FireResult| record_shim(adapter, Some(input), loc, kind, event, r);

        // De-duplication is keyed by session, tool call and question, not
        // by host: Cursor and Copilot also run the Claude Code wiring for
        // one call.
        let claimed = match input.tool_call_id().filter(|_| work == Work::Spawns) {
            None => None,
            Some(id) => {
                let key = calls::question_key(input, id, profile);
                match Calls::at(loc.calls_dir(&input.session_id)).claim(&key, calls::WAIT) {
                    Claim::Answered(d) => {
                        let r = replay(&d);
                        shim(RecordKind::DuplicateDelivery, &r);
                        return Err(r);
                    }
                    Claim::First(c) => Some(c),
                    Claim::Unavailable(why) => {
                        let r = unavailable(event, format!("keryx-hooks: {why}"), notices);
                        shim(RecordKind::Unavailable, &r);
                        return Err(r);
                    }
                }
            }
        };

        // Phase 1, under the session lock. In-process work keeps the lock
        // through firing (microseconds) so the whole event is one read and
        // one write of the state.
        let track_edits = sel
            .main
            .selected()
            .iter()
            .any(|r| matches!(r.handler, Handler::Builtin(BuiltinPort::ImpactEvidence)));
        let mut held: Option<Locked> = None;
        let mut ids = Ids {
            run_id: input.run_id.clone().unwrap_or_default(),
            seq: 0,
            first_edit: false,
            stop_blocks: 0,
            agent_written: Vec::new(),
        };
        let (written, shell) = writes_of(input, loc);
        // Even when nothing else runs, what the agent writes is remembered.
        let session = match session {
            None if !written.is_empty() => Some(Session::at(
                loc.session_dir(adapter.name(), &input.session_id),
            )),
            s => s,
        };
        let work_needs_lock = work != Work::Nothing;
        match session.as_ref().map(Session::lock) {
            Some(Ok(mut l)) if !work_needs_lock => {
                ids.agent_written = note_writes(&mut l, &written, shell);
                if let Err(e) = l.save() {
                    tracing::warn!("could not save the session state: {e}");
                }
            }
            Some(Ok(mut l)) => {
                ids = take_ids(&mut l, input, track_edits);
                ids.agent_written = note_writes(&mut l, &written, shell);
                if work == Work::Spawns {
                    if let Err(e) = l.save() {
                        tracing::warn!("could not save the session state: {e}");
                    }
                } else {
                    held = Some(l);
                }
            }
            Some(Err(e)) if crate::session::lock_timed_out(&e) => {
                let why = format!(
                    "keryx-hooks: the session lock `{}` is held by another process: {e}",
                    session
                        .as_ref()
                        .map_or_else(PathBuf::new, |s| s.dir().join("lock"))
                        .display()
                );
                let result = unavailable(event, why, notices);
                shim(RecordKind::Unavailable, &result);
                // Later deliveries of this call repeat the deny, not wait for it.
                if let Some(c) = claimed {
                    c.answer(&delivered(&result));
                }
                return Err(result);
            }
            Some(Err(e)) => tracing::warn!("session state unavailable: {e}"),
            None => {}
        }
        if ids.run_id.is_empty() {
            ids.run_id = "run-0".into();
        }
        if work == Work::Spawns {
            crate::runner::install_signal_handlers();
            // Hooks run in the project root: be there, so spawning one
            // needs no chdir of its own (see runner::spawn).
            let base = loc.project_root_or_cwd();
            if std::env::current_dir().ok().as_deref() != Some(base) {
                let _ = std::env::set_current_dir(base);
            }
        }
        let stop_blocks = ids.stop_blocks;
        // Only a process can outlast the host: in-process work takes
        // microseconds, so the host's files are read only for this.
        let deadline = (work == Work::Spawns)
            .then(|| super::budget::host_timeout(adapter, &p.host_event, p.layer.key(), loc))
            .flatten()
            .map(|budget| {
                let started = super::record::STARTED
                    .get()
                    .copied()
                    .unwrap_or_else(std::time::Instant::now);
                super::budget::deadline(started, budget)
            });
        Ok(EventRun {
            adapter,
            p,
            sel,
            session,
            claimed,
            held,
            ids,
            notices,
            skipped,
            stop_blocks,
            deadline,
        })
    }

    /// Fires what selection chose: the event, then the SubagentStart
    /// bridged at this call, if any.
    pub(crate) fn fire(&self) -> FireResult {
        let (input, loc) = (&self.p.input, &self.p.loc);
        let (first_edit, run_id) = (self.ids.first_edit, self.ids.run_id.as_str());
        let builtin = |port, inp: &EventInput| -> Result<HookReply, String> {
            crate::builtins::run_port(port, inp, first_edit, run_id, loc)
        };
        let in_process = |reg: &Registration, payload: &Value| {
            crate::builtins::run_in_process(reg, payload, loc)
        };
        let ambient = |k: &str| std::env::var(k).ok();
        let ctx = FireContext {
            profile: self.p.profile,
            project_root: loc.project_root.as_deref(),
            cwd: &loc.cwd,
            run_id: &self.ids.run_id,
            builtin: &builtin,
            in_process: &in_process,
            ambient: &ambient,
            host_env: self.adapter.hook_env(),
            locations: loc,
            deadline: self.deadline,
        };
        // Rules first: in this process, and a deny answers at once, with
        // nothing spawned.
        let rules = crate::rules::RuleSet::for_loaded(&self.p.loaded);
        let mut hits = if rules.is_empty() {
            Vec::new()
        } else {
            let mut call = crate::rules::Call::new(input, crate::rules::call::places(loc));
            call.agent_written = self.ids.agent_written.clone();
            rules.evaluate(&call)
        };
        // What the person allowed once from a terminal.
        let once = super::allow_once::apply(&mut hits, input, loc);
        let with_once = |mut result: FireResult| {
            result.notices.extend(once.notices.iter().cloned());
            result.matched_rules.extend(once.waived.iter().cloned());
            result
        };
        if crate::rules::denies(&hits, input.event) {
            let mut result = FireResult::none();
            let by = hits
                .iter()
                .find(|h| h.decision == crate::config::rules::Decision::Deny)
                .map_or("a rule", |h| h.id.as_str());
            let selected = self
                .sel
                .main
                .selected()
                .into_iter()
                .map(|r| (r, input.event));
            let bridged = self
                .sel
                .bridged
                .iter()
                .flat_map(|(sub, t)| t.selected().into_iter().map(|r| (r, sub.event)));
            for (reg, event) in selected.chain(bridged) {
                result.not_reached.push(fire::not_run(
                    reg,
                    event,
                    format!("not run: rule `{by}` already denied this call"),
                ));
            }
            crate::rules::compose_into(&hits, input.event, &mut result);
            return with_once(result);
        }
        let mut result = with_once(fire::fire_selected(&self.sel.main.selected(), input, &ctx));
        crate::rules::compose_into(&hits, input.event, &mut result);
        if let Some((sub, trace)) = &self.sel.bridged
            && result.outcome == Outcome::Deny
        {
            // The call is denied already: the spawn it would start never
            // happens, and the answer does not wait for its gates.
            for reg in trace.selected() {
                result.not_reached.push(fire::not_run(
                    reg,
                    sub.event,
                    "not run: the call that would start the subagent was already denied".into(),
                ));
            }
        } else if let Some((sub, trace)) = &self.sel.bridged {
            let s = fire::fire_selected(&trace.selected(), sub, &ctx);
            if s.outcome == Outcome::Deny && result.outcome != Outcome::Deny {
                result.outcome = Outcome::Deny;
                result.reason = s.reason.clone();
            }
            result.matched_rules.extend(s.matched_rules);
            result.anomalies.extend(s.anomalies);
            result.records.extend(s.records);
            result.not_reached.extend(s.not_reached);
        }
        result
    }

    /// What the shim adds to the hooks' answer: the ids a child agent
    /// inherits, the Stop-loop guard, the notices.
    pub(crate) fn compose(&mut self, result: &mut FireResult) {
        let (event, loc) = (self.p.input.event, &self.p.loc);
        if event == Event::SubagentStart {
            result.inherited_hook_ids = Some(self.p.inherited.clone());
        }
        if event == Event::Stop {
            let blocks = self.ids.stop_blocks;
            self.stop_blocks = if result.outcome != Outcome::Deny {
                0
            } else if blocks >= STOP_BLOCK_LIMIT {
                result.outcome = Outcome::Allow;
                result.reason = None;
                result.matched_rules.push("stop-loop-guard".into());
                self.notices.push(format!(
                    "keryx-hooks: a Stop hook blocked {STOP_BLOCK_LIMIT} times in a row; letting this turn end"
                ));
                0
            } else {
                blocks + 1
            };
        }
        if event == Event::SessionStart {
            crate::session::prune(&loc.sessions_dir());
        }
        result.notices.append(&mut self.notices);
    }

    /// Phase 3: the records (one O_APPEND write, no lock needed) and, for
    /// Stop, the block counter under the lock; then the answer for replays.
    pub(crate) fn record(self, result: &FireResult) {
        let (adapter, input, loc) = (self.adapter, &self.p.input, &self.p.loc);
        let event = input.event;
        let correlation = input.tool_call_id().map_or_else(
            || format!("{}-{}", input.session_id, self.ids.seq),
            str::to_owned,
        );
        let locked = match self.held {
            Some(l) => Some(l),
            None if event == Event::Stop => self.session.as_ref().and_then(|s| s.lock().ok()),
            None => None,
        };
        // One O_APPEND write, whether or not the lock is held.
        let mut entries = self.skipped;
        entries.extend(RecordEntry::hooks(result));
        if !entries.is_empty() {
            let ctx = record_context(adapter, input, loc);
            let dir = loc.session_dir(adapter.name(), &input.session_id);
            let run_id = &self.ids.run_id;
            let appended = match &self.session {
                Some(s) => s.append_records(&ctx, &entries, &correlation, run_id),
                None => Session::at(dir).append_records(&ctx, &entries, &correlation, run_id),
            };
            if let Err(e) = appended {
                tracing::warn!("could not append records: {e}");
            }
        }
        if let Some(mut l) = locked {
            l.state.stop_blocks = self.stop_blocks;
            let _ = l.save();
        }
        if let Some(c) = self.claimed {
            c.answer(&delivered(result));
        }
        // Answers are only needed while a call can still be re-delivered;
        // the end of a turn is a good moment to forget the old ones.
        let calls_dir = loc.calls_dir(&input.session_id);
        if matches!(event, Event::Stop | Event::SessionEnd) && calls_dir.is_dir() {
            Calls::at(calls_dir).prune(calls::KEEP);
        }
    }
}

/// The answer later deliveries of this call repeat.
pub(crate) fn delivered(result: &FireResult) -> Delivered {
    Delivered {
        pending: false,
        outcome: result.outcome.as_str().to_owned(),
        reason: result.reason.clone(),
        additional_context: result.additional_context.clone(),
    }
}

/// The second delivery of one tool call: repeat the first answer.
pub(crate) fn replay(d: &Delivered) -> FireResult {
    let mut r = FireResult::none();
    r.outcome = Outcome::parse(&d.outcome).unwrap_or(Outcome::Deny);
    r.reason = d.reason.clone();
    r.additional_context = d.additional_context.clone();
    r.matched_rules.push("duplicate-delivery".into());
    r
}
