//! `keryx-hooks explain <host> <event>`: for one payload, every
//! registration in load order, whether `run` would fire it and, if not,
//! why; then what `run` would answer. No hook is run: the built-in gates
//! that answer in this process (they start no process and write nothing)
//! are evaluated, every other hook is named as what the answer depends on.

use crate::error::ExitStatus;

use serde_json::{Value, json};

use crate::cli::ExplainArgs;
use crate::config::model::{Registration, RunsIn};
use crate::config::rules::Decision;
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::events::Event;
use crate::hosts::{Adapter, stdin_guard};
use crate::output;
use crate::pipeline::{self as run, Prepared, RunSettings, Stopped, UserLayer};
use crate::runtime::codec::{self, PayloadContext};
use crate::runtime::compose;
use crate::runtime::select::{self, Trace};
use crate::runtime::types::{EventInput, Outcome};

pub fn run(args: &ExplainArgs) -> CmdResult {
    let adapter = super::resolve_host(&args.host)?;
    let Some(event) = adapter.canonical_event(&args.event) else {
        if adapter.unmapped_events().contains(&args.event.as_str()) {
            // `run` answers such an event with nothing at all.
            let note = format!(
                "{} {}: keryx-hooks has no canonical event for it, so run reads nothing and answers nothing",
                adapter.name(),
                escape(&args.event)
            );
            if args.json {
                output::json(&json!({
                    "host": adapter.name(),
                    "event": null,
                    "hostEvent": args.event,
                    "registrations": [],
                    "answer": {"outcome": "none", "reason": null, "kind": "unmapped", "note": note},
                }));
            } else {
                output::line(&note);
            }
            return Ok(ExitStatus::Success);
        }
        return Err(CommandError::user(format!(
            "host `{}` has no event `{}` that keryx-hooks handles",
            adapter.name(),
            escape(&args.event)
        )));
    };
    let payload = match &args.payload_file {
        Some(p) => {
            let f = std::fs::File::open(p).map_err(|e| {
                CommandError::user(format!("cannot read `{}`", p.display())).cause(e)
            })?;
            stdin_guard::read_json(f, &stdin_guard::Limits::default())
        }
        None => stdin_guard::read_json(std::io::stdin().lock(), &stdin_guard::Limits::default()),
    };
    // Without --snapshot, `prepare` reads the snapshot the host's wiring
    // names, as `run` does; which one is said on stderr.
    let settings = RunSettings {
        host: adapter.name().to_owned(),
        host_event: args.event.clone(),
        snapshot: args.snapshot.clone(),
        profile: args.profile,
        headless: args.headless,
    };
    let off = crate::env_vars::get(crate::env_vars::KERYX_HOOKS).as_deref() == Some("off");
    let report = match run::prepare(adapter, event, &settings, payload) {
        Ok(p) => {
            say_layer(adapter, &p.layer, &p.loc);
            explained(adapter, &p, off)
        }
        Err(stopped) => {
            let layer = match &stopped {
                Stopped::Shim(a) => a.layer.as_ref().map(|l| {
                    say_layer(adapter, l, &a.loc);
                    l.clone()
                }),
                Stopped::Quiet => None,
            };
            stopped_report(adapter, event, stopped, layer.as_ref(), off)
        }
    };
    if args.json {
        output::json(&report);
    } else {
        for l in human(&report) {
            output::line(&l);
        }
    }
    Ok(ExitStatus::Success)
}

/// Which hooks file is read and why, on stderr: the report itself may be JSON.
fn say_layer(adapter: &Adapter, layer: &UserLayer, loc: &crate::paths::Locations) {
    output::err_line(&format!("note: {}", layer.describe(adapter, loc)));
}

/// The report's fields for the user layer: `snapshot` (its key, or null
/// for the live file), `snapshotFrom` (the host file whose wiring names
/// it) and `userLayer` (`named`, `wired` or `live`).
fn layer_fields(layer: Option<&UserLayer>) -> (Value, Value, Value) {
    match layer {
        Some(UserLayer::Named(k)) => (json!(k), Value::Null, json!("named")),
        Some(UserLayer::Wired(w)) => (json!(w.key), json!(w.path), json!("wired")),
        Some(UserLayer::Live) => (Value::Null, Value::Null, json!("live")),
        None => (Value::Null, Value::Null, Value::Null),
    }
}

fn stopped_report(
    adapter: &Adapter,
    event: Event,
    stopped: Stopped,
    layer: Option<&UserLayer>,
    off: bool,
) -> Value {
    let answer = match stopped {
        Stopped::Quiet => json!({
            "outcome": "none",
            "reason": null,
            "kind": "skipped-payload",
            "note": "the host's adapter leaves this payload alone: run answers nothing",
        }),
        Stopped::Shim(a) => json!({
            "outcome": a.result.outcome.as_str(),
            "reason": a.result.reason,
            "kind": serde_json::to_value(a.kind).unwrap_or_default(),
            "note": "no hook is selected: the shim answers by itself",
        }),
    };
    let (snapshot, from, user_layer) = layer_fields(layer);
    json!({
        "host": adapter.name(),
        "event": event.as_str(),
        "keryxHooksOff": off,
        "snapshot": snapshot,
        "snapshotFrom": from,
        "userLayer": user_layer,
        "registrations": [],
        "answer": if off { off_answer() } else { answer },
    })
}

fn off_answer() -> Value {
    json!({
        "outcome": "none",
        "reason": null,
        "kind": "off",
        "note": "KERYX_HOOKS=off is set: run answers nothing and no hook runs",
    })
}

fn explained(adapter: &Adapter, p: &Prepared, off: bool) -> Value {
    let all = select::in_load_order(&p.loaded, &p.trust);
    let sel = run::selection(adapter, p, &all);
    let mut gates = Gates::default();
    let main = entries(&sel.main, &p.input, p, &mut gates);
    let bridged = sel.bridged.as_ref().map(|(sub, t)| {
        json!({
            "event": sub.event.as_str(),
            "registrations": entries(t, sub, p, &mut gates),
        })
    });
    let mut answer = if off {
        off_answer()
    } else {
        gates.answer(&p.input)
    };
    // The rules that look at this call, and what each matched.
    let set = crate::rules::RuleSet::for_loaded(&p.loaded);
    let call = crate::rules::Call::new(&p.input, crate::rules::call::places(&p.loc));
    let mut rules = Vec::new();
    for r in set.fitting(p.input.event, call.tool) {
        let hit = crate::rules::run(r, &call);
        if !off
            && let Some(h) = &hit
            && matches!(h.decision, Decision::Deny | Decision::Ask)
            && p.input.event.is_gate_capable()
        {
            let now = answer["outcome"].as_str().and_then(Outcome::parse);
            let theirs = if h.decision == Decision::Deny || p.input.event.ask_means_deny() {
                Outcome::Deny
            } else {
                Outcome::Ask
            };
            // A deny answers before any hook; an ask tightens a known
            // answer (one that depends on a hook may still be a deny).
            let tightens = match now {
                Some(o) => compose::tighten(o, theirs) != o,
                None => theirs == Outcome::Deny,
            };
            if tightens {
                answer = json!({
                    "outcome": theirs.as_str(),
                    "decidedBy": format!("rule {}", h.id),
                    "reason": h.reason,
                });
            }
        }
        rules.push(json!({
            "id": r.id,
            "decision": r.decision.as_str(),
            "pack": r.pack,
            "matched": hit.map(|h| h.matched),
        }));
    }
    let (snapshot, from, user_layer) = layer_fields(Some(&p.layer));
    json!({
        "host": adapter.name(),
        "event": p.input.event.as_str(),
        "keryxHooksOff": off,
        "tool": p.input.event.is_per_tool().then(|| p.input.tool_name()).flatten(),
        "summary": p.input.event.is_per_tool().then(|| crate::session::call_summary(&p.input)).flatten(),
        "profile": p.profile.as_str(),
        "interactive": p.input.interactive,
        "snapshot": snapshot,
        "snapshotFrom": from,
        "userLayer": user_layer,
        "trust": p.trust.state.as_str(),
        "registrations": main,
        "bridged": bridged,
        "rules": rules,
        "answer": answer,
    })
}

/// The gates in the order `run` fires them, with what the in-process
/// ones answered.
#[derive(Default)]
struct Gates {
    /// (hook id, `Some(decision)` when evaluated here, the reason).
    seen: Vec<(String, Option<Outcome>, Option<String>)>,
}

impl Gates {
    fn answer(&self, input: &EventInput) -> Value {
        let event = input.event;
        if !event.is_gate_capable() && self.seen.is_empty() {
            return json!({
                "outcome": "none",
                "reason": null,
                "kind": "no-decision",
                "note": format!("{event} carries no decision: run answers with context and notices only"),
            });
        }
        let policy = if event == Event::PreToolUse {
            input.decide_outcome
        } else {
            Outcome::Allow
        };
        let mut outcomes = Vec::new();
        let mut depends = Vec::new();
        let mut decided_by = None;
        let mut reason = None;
        let mut so_far = policy;
        for (id, decision, why) in &self.seen {
            if so_far == Outcome::Deny {
                break;
            }
            match decision {
                Some(d) => {
                    outcomes.push(*d);
                    let before = so_far;
                    so_far = compose::tighten(so_far, *d);
                    if so_far == Outcome::Ask && event.ask_means_deny() {
                        so_far = Outcome::Deny;
                    }
                    if so_far != before && matches!(d, Outcome::Deny | Outcome::Ask) {
                        decided_by = Some(id.clone());
                        reason.clone_from(why);
                    }
                }
                None => depends.push(id.clone()),
            }
        }
        let (composed, _) = compose::compose_decision(event, policy, &outcomes, input.interactive);
        if !depends.is_empty() && composed != Outcome::Deny {
            return json!({
                "outcome": null,
                "reason": null,
                "kind": "depends",
                "dependsOn": depends,
                "note": format!(
                    "{} if the hooks it depends on allow; they are commands explain does not run",
                    composed.as_str()
                ),
            });
        }
        json!({
            "outcome": composed.as_str(),
            "reason": if composed == Outcome::Allow { None } else { reason },
            "kind": "evaluated",
            "decidedBy": decided_by,
            "dependsOn": depends,
            "note": "the built-in gates were evaluated in this process; no hook was run",
        })
    }
}

/// One trace as JSON, the selected gates noted in `gates`.
fn entries(trace: &Trace, input: &EventInput, p: &Prepared, gates: &mut Gates) -> Vec<Value> {
    trace
        .entries
        .iter()
        .map(|c| {
            let reg = c.reg;
            let mut v = json!({
                "hookId": reg.id,
                "event": reg.event.as_str(),
                "scope": reg.scope.as_str(),
                "class": reg.class.as_str(),
                "matcher": reg.matcher.source(),
                "source": select::source_text(reg),
                "runs": c.not_run.is_none(),
                "notRun": c.not_run.as_ref().map(select::NotRun::code),
                "why": c.not_run.as_ref().map(select::NotRun::text),
            });
            if c.not_run.is_none() {
                if let Some(note) = caveat(reg, p) {
                    v["note"] = json!(note);
                }
                // A host-native hook gets its host's payload, not the
                // spec's: show the bytes it will read.
                if let Some(proto) = reg.command().and_then(|c| c.protocol) {
                    v["protocol"] = json!(proto.host.name());
                    v["payload"] = crate::runtime::native::payload(proto.host, input);
                }
                if reg.decides_on(input.event) {
                    let (decision, why) = evaluate(reg, input, p);
                    if let Some(d) = decision {
                        v["evaluated"] = json!(d.as_str());
                    }
                    gates.seen.push((reg.id.clone(), decision, why));
                }
            }
            v
        })
        .collect()
}

/// What will happen to a selected hook before it gets to answer.
fn caveat(reg: &Registration, p: &Prepared) -> Option<String> {
    reg.command()?;
    let runs_in = reg.effective_runs_in(p.profile);
    if runs_in == RunsIn::Unsandboxed && p.profile.isolation_required() {
        return Some(format!(
            "runsIn \"unsandboxed\" is refused under the {} profile: it fails as refused",
            p.profile
        ));
    }
    if runs_in == RunsIn::Sandbox {
        // The launcher `run` would use (probed once, then cached on disk,
        // as `run` and `doctor` do).
        let search = crate::runner::LauncherSearch {
            pin: p.loc.settings().launcher.as_ref().map(Option::as_deref),
            project: p.loc.project_root.as_deref(),
            cwd: Some(&p.loc.cwd),
        };
        if let Err(why) = crate::runner::find_launcher(&search) {
            return Some(format!(
                "the sandbox is unavailable ({}): it fails as sandbox-unavailable",
                escape(&why.to_string())
            ));
        }
    }
    None
}

/// A built-in gate answered in this process, the way `run` answers it
/// without a spawn; `None` for a hook explain will not run.
fn evaluate(
    reg: &Registration,
    input: &EventInput,
    p: &Prepared,
) -> (Option<Outcome>, Option<String>) {
    if !crate::builtins::answers_in_process(reg, p.profile) {
        return (None, None);
    }
    let root = p
        .loc
        .project_root
        .as_ref()
        .map(|r| r.to_string_lossy().into_owned());
    let payload = codec::build_hook_stdin(
        input,
        &PayloadContext {
            hook_id: &reg.id,
            run_id: "explain",
            timestamp: &crate::base::time::timestamp_now(),
            profile: p.profile,
            project_root: root.as_deref(),
        },
    );
    match crate::builtins::run_in_process(reg, &payload, &p.loc) {
        Some(Ok(reply)) => (
            Some(reply.decision.unwrap_or(Outcome::Allow)),
            reply
                .reason
                .as_deref()
                .map(crate::runtime::fire::reason_text),
        ),
        Some(Err(e)) => (
            Some(Outcome::Deny),
            Some(crate::runtime::fire::reason_text(&e)),
        ),
        None => (None, None),
    }
}

/// The human report: a header, one line per registration, the answer.
fn human(r: &Value) -> Vec<String> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_owned();
    let mut out = Vec::new();
    let mut head = format!("{} {}", s(&r["host"]), s(&r["event"]));
    if let Some(tool) = r["tool"].as_str() {
        head.push_str(&format!(": {}", escape(tool)));
        if let Some(sum) = r["summary"].as_str() {
            head.push_str(&format!(" {}", escape(sum)));
        }
    }
    out.push(head);
    if let Some(p) = r["profile"].as_str() {
        let snap = match (r["snapshot"].as_str(), r["snapshotFrom"].as_str()) {
            (Some(k), Some(f)) => format!("snapshot {k} (as `{}` wires it)", escape(f)),
            (Some(k), None) => format!("snapshot {k}"),
            _ => "the live user hooks file".to_owned(),
        };
        out.push(format!(
            "profile {p}, {snap}, project hooks {}",
            s(&r["trust"])
        ));
    }
    let mut section = |label: Option<String>, regs: &Value| {
        if let Some(l) = label {
            out.push(l);
        }
        // Hooks on other events, one line: (id, [their events]).
        let mut elsewhere: Vec<(String, Vec<String>)> = Vec::new();
        for e in regs.as_array().into_iter().flatten() {
            let id = escape(&s(&e["hookId"]));
            if e["notRun"] == "other-event" {
                match elsewhere.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, evs)) => evs.push(s(&e["event"])),
                    None => elsewhere.push((id, vec![s(&e["event"])])),
                }
                continue;
            }
            let what = format!(
                "{id} ({} {}, {})",
                s(&e["scope"]),
                s(&e["class"]),
                escape(&s(&e["source"]))
            );
            if e["runs"] == true {
                let mut line = format!("  runs     {what}");
                if let Some(d) = e["evaluated"].as_str() {
                    line.push_str(&format!(": answers {d} (evaluated in this process)"));
                }
                if let Some(n) = e["note"].as_str() {
                    line.push_str(&format!("; {n}"));
                }
                out.push(line);
                if let (Some(host), false) = (e["protocol"].as_str(), e["payload"].is_null()) {
                    out.push(format!(
                        "           gets the {host} payload: {}",
                        escape(&e["payload"].to_string())
                    ));
                }
            } else {
                out.push(format!("  not run  {what}: {}", s(&e["why"])));
            }
        }
        if !elsewhere.is_empty() {
            let list: Vec<String> = elsewhere
                .into_iter()
                .map(|(id, evs)| format!("{id} ({})", evs.join(", ")))
                .collect();
            out.push(format!("  on other events: {}", list.join("; ")));
        }
    };
    section(None, &r["registrations"]);
    if r["bridged"].is_object() {
        section(
            Some(format!(
                "and the {} fired at this call:",
                s(&r["bridged"]["event"])
            )),
            &r["bridged"]["registrations"],
        );
    }
    // Rules that match, each with what it matched; those that do not, by
    // count (the default packs alone are dozens), the person's own by id.
    let mut unmatched_packs = 0usize;
    for rule in r["rules"].as_array().into_iter().flatten() {
        let id = escape(&s(&rule["id"]));
        let decision = s(&rule["decision"]);
        match rule["matched"].as_str() {
            Some(m) => out.push(format!("  rule     {id} ({decision}): matched {m}")),
            None if rule["pack"].is_string() => unmatched_packs += 1,
            None => out.push(format!("  rule     {id} ({decision}): does not match")),
        }
    }
    if unmatched_packs > 0 {
        out.push(format!(
            "  rules    {unmatched_packs} more from the default packs fit this call and do not match (`explain --json` lists them)"
        ));
    }
    let a = &r["answer"];
    let mut line = match a["outcome"].as_str() {
        Some(o) => format!("run would answer: {o}"),
        None => format!(
            "run would answer: depends on {}",
            a["dependsOn"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| format!("`{}`", escape(d.as_str().unwrap_or(""))))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if let Some(by) = a["decidedBy"].as_str() {
        line.push_str(&format!(" (by {})", escape(by)));
    }
    if let Some(reason) = a["reason"].as_str() {
        line.push_str(&format!(": {}", escape(reason)));
    }
    out.push(line);
    if let Some(n) = a["note"].as_str() {
        out.push(format!("  {n}"));
    }
    out
}
