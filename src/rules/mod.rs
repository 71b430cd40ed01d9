//! Rules as data, evaluated in the shim's own process (docs/RULES.md): the
//! compiled-in packs beside the rules of the loaded hooks files, indexed by
//! event and tool so a call only looks at the rules that fit it, and a
//! rule's decision composed into the event's answer tighten-only. Parsing
//! and compiling live in `crate::config::rules`; nothing here compiles a
//! pattern or reads a file.

pub mod call;
pub mod eval;
pub mod need;
pub mod pack_toml;
pub mod packs;

use std::collections::HashMap;

use crate::config::load::Loaded;
use crate::config::model::{HookClass, Scope};
use crate::config::rules::{Decision, Rule};
use crate::events::Event;
use crate::runtime::compose;
use crate::runtime::fire::reason_text;
use crate::runtime::types::{FireResult, HookInvocationRecord, Outcome};

pub use call::Call;

/// The rules in force for one event, indexed.
#[derive(Debug, Default)]
pub struct RuleSet<'a> {
    entries: Vec<Entry<'a>>,
    /// Per event (by its place in [`Event::ALL`]): rules naming exact tools,
    /// by tool, and the rest (every tool, or a glob).
    by_event: Vec<EventIndex>,
}

/// A rule of a hooks file, or a pack's, compiled when first needed.
#[derive(Debug)]
enum Entry<'a> {
    Owned(Box<Rule>),
    Loaded(&'a Rule),
    Pack(&'static packs::PackRule),
}

impl Entry<'_> {
    fn rule(&self) -> Option<&Rule> {
        match self {
            Entry::Owned(r) => Some(r.as_ref()),
            Entry::Loaded(r) => Some(r),
            Entry::Pack(p) => p.rule(),
        }
    }

    /// Whether `call` could meet the rule at all (a pack rule's need);
    /// `false` is certain, and spares compiling the rule.
    fn may_match(&self, call: &Call) -> bool {
        match self {
            Entry::Pack(p) => p.need.met(call),
            Entry::Owned(_) | Entry::Loaded(_) => true,
        }
    }

    fn on(&self) -> &[Event] {
        match self {
            Entry::Owned(r) => &r.on,
            Entry::Loaded(r) => &r.on,
            Entry::Pack(p) => p.on,
        }
    }

    fn tools(&self) -> Vec<&str> {
        match self {
            Entry::Owned(r) => r.tools.iter().map(|g| g.text.as_str()).collect(),
            Entry::Loaded(r) => r.tools.iter().map(|g| g.text.as_str()).collect(),
            Entry::Pack(p) => p.tools.to_vec(),
        }
    }
}

#[derive(Debug, Default, Clone)]
struct EventIndex {
    exact: HashMap<String, Vec<usize>>,
    other: Vec<usize>,
}

/// One rule that matched a call.
#[derive(Debug, Clone)]
pub struct Hit {
    pub id: String,
    pub decision: Decision,
    pub reason: String,
    pub notice: Option<String>,
    pub scope: Scope,
    /// What about the call it matched: ``command `git reset --hard` ``.
    pub matched: String,
}

impl Hit {
    /// The line recorded for it: ``rule `x` matched command `…` ``.
    pub fn describe(&self) -> String {
        format!(
            "rule {} matched {}",
            crate::escape::escape(&self.id),
            self.matched
        )
    }
}

impl<'a> RuleSet<'a> {
    /// `rules` as given, indexed (none switched off).
    pub fn new(rules: Vec<Rule>) -> RuleSet<'static> {
        RuleSet::index(
            rules
                .into_iter()
                .map(|r| Entry::Owned(Box::new(r)))
                .collect(),
        )
    }

    fn index(entries: Vec<Entry<'a>>) -> RuleSet<'a> {
        let mut by_event = vec![EventIndex::default(); Event::ALL.len()];
        for (i, entry) in entries.iter().enumerate() {
            let tools = entry.tools();
            let exact = !tools.is_empty() && tools.iter().all(|t| !t.contains(['*', '?']));
            for e in entry.on() {
                let ix = &mut by_event[event_slot(*e)];
                if exact {
                    for t in &tools {
                        ix.exact.entry((*t).to_owned()).or_default().push(i);
                    }
                } else {
                    ix.other.push(i);
                }
            }
        }
        RuleSet { entries, by_event }
    }

    /// The packs, then the rules of `loaded`'s files (the untrusted
    /// project's already taken out by trust), less what the user's own
    /// file switches off. Nothing is compiled or copied here.
    pub fn for_loaded(loaded: &'a Loaded) -> RuleSet<'a> {
        let off = &loaded.rules_off;
        let entries = packs::entries()
            .iter()
            .filter(|p| !p.is_off(off))
            .map(Entry::Pack)
            .chain(
                loaded
                    .rules
                    .iter()
                    .filter(|r| !r.is_off(off))
                    .map(Entry::Loaded),
            )
            .collect();
        RuleSet::index(entries)
    }

    /// Whether there is no rule at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every rule, compiled.
    pub fn rules(&self) -> Vec<&Rule> {
        self.entries.iter().filter_map(Entry::rule).collect()
    }

    pub fn get(&self, id: &str) -> Option<&Rule> {
        self.entries
            .iter()
            .filter_map(Entry::rule)
            .find(|r| r.id == id)
    }

    /// The places of the entries the index keeps for `event` on `tool`,
    /// in load order.
    fn candidates(&self, event: Event, tool: Option<&str>) -> Vec<usize> {
        let ix = &self.by_event[event_slot(event)];
        let mut at: Vec<usize> = tool
            .and_then(|t| ix.exact.get(t))
            .into_iter()
            .flatten()
            .chain(&ix.other)
            .copied()
            .collect();
        at.sort_unstable();
        at.dedup();
        at
    }

    /// The rules that look at `event` on `tool`, in load order.
    pub fn fitting(&self, event: Event, tool: Option<&str>) -> Vec<&Rule> {
        self.candidates(event, tool)
            .into_iter()
            .filter_map(|i| self.entries[i].rule())
            .filter(|r| r.fits_tool(tool))
            .collect()
    }

    /// Every rule that matches `call`, in load order. A pack rule whose
    /// need the call does not meet is passed over uncompiled.
    pub fn evaluate(&self, call: &Call) -> Vec<Hit> {
        self.candidates(call.event, call.tool)
            .into_iter()
            .map(|i| &self.entries[i])
            .filter(|e| e.may_match(call))
            .filter_map(Entry::rule)
            .filter(|r| r.fits_tool(call.tool))
            .filter_map(|r| run(r, call))
            .collect()
    }
}

/// Runs one rule on `call`, whatever its events and tools.
pub fn run(rule: &Rule, call: &Call) -> Option<Hit> {
    let matched = eval::matches(&rule.cond, call)?;
    Some(Hit {
        id: rule.id.clone(),
        decision: rule.decision,
        reason: rule.reason.clone(),
        notice: rule.notice.clone(),
        scope: rule.scope,
        matched: if matched.is_empty() {
            "the call".into()
        } else {
            matched
        },
    })
}

/// The ordinary commands of everyday work (one a line, `#` comments) that
/// a rule should not fire on; `validate` warns when one does.
pub const ORDINARY_COMMANDS: &str = include_str!("ordinary-commands.txt");

/// The first ordinary command `rule` matches, as a Bash call from a
/// project inside `guard`'s home.
pub fn first_ordinary_match(
    rule: &Rule,
    guard: &crate::builtins::ctx_guard::CtxGuardConfig,
) -> Option<String> {
    if !rule.on.contains(&Event::PreToolUse) || !rule.fits_tool(Some("Bash")) {
        return None;
    }
    let cwd = guard.home.as_ref().map(|h| h.join("proj"));
    ORDINARY_COMMANDS
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .find(|line| {
            let mut input = crate::runtime::types::EventInput::new(Event::PreToolUse, "validate");
            input.cwd = cwd.clone();
            input
                .fields
                .insert("toolName".into(), serde_json::json!("Bash"));
            input
                .fields
                .insert("toolInput".into(), serde_json::json!({"command": line}));
            run(rule, &Call::new(&input, guard.clone())).is_some()
        })
        .map(str::to_owned)
}

fn event_slot(e: Event) -> usize {
    Event::ALL.iter().position(|x| *x == e).unwrap_or(0)
}

/// The strictest decision among `hits`.
pub fn strictest(hits: &[Hit]) -> Option<Decision> {
    hits.iter().map(|h| h.decision).min()
}

/// The outcome a decision stands for on `event`: ask where the event
/// cannot ask is a deny; warn and log decide nothing.
fn outcome_of(d: Decision, event: Event) -> Outcome {
    match d {
        Decision::Deny => Outcome::Deny,
        Decision::Ask if event.ask_means_deny() => Outcome::Deny,
        Decision::Ask => Outcome::Ask,
        Decision::Warn | Decision::Log => Outcome::Allow,
    }
}

/// Whether `hits` deny a call on `event` outright: then nothing else runs.
pub fn denies(hits: &[Hit], event: Event) -> bool {
    event.is_gate_capable()
        && hits
            .iter()
            .any(|h| outcome_of(h.decision, event) == Outcome::Deny)
}

/// Composes the rules' `hits` into `result`, the hooks' answer: the
/// strictest outcome wins and a rule never loosens one; a deny or ask
/// gives its reason (unless a hook already denied), a warn its reason as
/// context, a notice a line for the person; every hit is recorded.
pub fn compose_into(hits: &[Hit], event: Event, result: &mut FireResult) {
    let mut contexts = Vec::new();
    for h in hits {
        let outcome = outcome_of(h.decision, event);
        let before = result.outcome;
        if event.is_gate_capable() && matches!(outcome, Outcome::Deny | Outcome::Ask) {
            let base = if before == Outcome::None {
                Outcome::Allow
            } else {
                before
            };
            result.outcome = compose::tighten(base, outcome);
            let replaces =
                result.reason.is_none() || (outcome == Outcome::Deny && before != Outcome::Deny);
            if result.outcome == outcome && replaces {
                result.reason = Some(reason_text(&h.reason));
            }
            result.matched_rules.push(format!("rule:{}", h.id));
        }
        if h.decision == Decision::Warn {
            contexts.push(reason_text(&h.reason));
        }
        if let Some(n) = h.notice.as_deref().filter(|n| !n.trim().is_empty()) {
            result.notices.push(reason_text(&format!(
                "{}: {}",
                crate::escape::escape(&h.id),
                n.trim()
            )));
        }
        result.records.push(HookInvocationRecord {
            hook_id: h.id.clone(),
            event: event.as_str(),
            class: match h.decision {
                Decision::Deny | Decision::Ask => HookClass::Gate,
                Decision::Warn => HookClass::Context,
                Decision::Log => HookClass::Observe,
            },
            scope: h.scope,
            outcome: match h.decision {
                Decision::Deny | Decision::Ask if event.is_gate_capable() => outcome,
                Decision::Deny | Decision::Ask => Outcome::None,
                Decision::Warn | Decision::Log => Outcome::Allow,
            },
            failure: None,
            reason: Some(h.describe()),
            duration_ms: 0,
            changed_outcome: result.outcome != before,
            exit_code: None,
        });
    }
    if !contexts.is_empty() {
        let joined = contexts.join("\n\n");
        result.additional_context = Some(match result.additional_context.take() {
            Some(c) => format!("{joined}\n\n{c}"),
            None => joined,
        });
    }
}

#[cfg(test)]
mod tests;
