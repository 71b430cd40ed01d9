//! `keryx-hooks list [--json] [--profile ID]`: the merged, resolved
//! registration set, one row per hook id and shape, with the sandboxing
//! that is actually in effect under the profile.

use super::shared::writable_text;
use crate::error::ExitStatus;

use serde_json::{Value, json};

use crate::cli::ListArgs;
use crate::config::model::{Handler, Profile, Registration};
use crate::error::CmdResult;
use crate::escape::escape;
use crate::output;
use crate::runtime::select::{self, Filters, NotRun};
use crate::trust::display as trust_display;

pub fn run(args: &ListArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let profile = super::profile_or_settings(args.profile, &loc);
    let (mut loaded, _) = crate::pipeline::load_layers(&loc, None, None);
    let all_rules = rule_rows(&loaded);
    // Untrusted project hooks leave the loaded set but stay visible here, marked.
    let trust = crate::trust::apply(&mut loaded, &loc);
    let rule_rows: Vec<RuleRow> = all_rules
        .into_iter()
        .map(|mut r| {
            if r.state == "on"
                && !loaded.rules.iter().any(|l| l.id == r.rule.id)
                && r.rule.pack.is_none()
            {
                r.state = "waiting for trust";
            }
            r
        })
        .collect();
    let shown = trust_display::with_held_back(&loaded.registrations, &trust);
    let rows = rows(&shown);
    let filters = Filters::for_run(profile, Some(&trust), loc.settings(), &loaded);

    if args.json {
        output::json(&json!({
            "schemaVersion": "1",
            "profile": profile.as_str(),
            "ok": loaded.ok(),
            "diagnostics": loaded.diagnostics,
            "disabledBuiltinGates": loaded.disabled_builtin_gates,
            "projectTrust": trust_display::to_json(&trust),
            "hooks": rows.iter().map(|r| {
                let mut v = row_json(r, profile);
                let off = select::standing(r.first, &filters);
                v["state"] = json!(off.as_ref().map_or("on", NotRun::code));
                v["stateReason"] = json!(off.as_ref().map(NotRun::text));
                if let Some(t) = trust_display::row_json(&trust, r.first) {
                    v["trust"] = t;
                }
                v
            }).collect::<Vec<_>>(),
            "rules": rule_rows.iter().map(|r| json!({
                "id": r.rule.id,
                "pack": r.rule.pack,
                "scope": r.rule.scope.as_str(),
                "source": r.rule.source,
                "events": r.rule.on.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
                "tools": r.rule.tools.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(),
                "decision": r.rule.decision.as_str(),
                "state": r.state,
                "description": r.rule.description,
            })).collect::<Vec<_>>(),
        }));
    } else {
        for d in &loaded.diagnostics {
            output::err_line(&d.to_string());
        }
        if !loaded.ok() {
            output::err_line(
                "error: the hook config does not load; every gate-capable event is denied (hook-config-invalid) until it is fixed",
            );
            output::err_line("hint: run `keryx-hooks validate` for the details");
        }
        for w in &trust.warnings {
            output::err_line(&format!("warning: {}", escape(w)));
        }
        if let Some(header) = trust_display::list_header(&trust) {
            output::line(&header);
        }
        for r in &rows {
            let text = row_text(r, profile, select::standing(r.first, &filters));
            match trust_display::row_mark(&trust, r.first) {
                Some(mark) => output::stdout(&trust_display::mark_row_text(&text, mark)),
                None => output::stdout(&text),
            }
        }
        if !rule_rows.is_empty() {
            output::line("rules:");
        }
        for r in &rule_rows {
            output::line(&format!(
                "  {}  {}  {}  ({}){}",
                escape(&r.rule.id),
                r.rule.decision.as_str(),
                r.state,
                super::test_rule::origin(&r.rule),
                r.rule
                    .description
                    .as_deref()
                    .map(|d| format!(": {}", escape(d)))
                    .unwrap_or_default()
            ));
        }
    }
    Ok(if loaded.ok() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// A rule as `list` shows it: the packs' and every file's, with whether it
/// is on.
struct RuleRow {
    rule: crate::config::rules::Rule,
    state: &'static str,
}

/// Taken before trust trims the loaded set, so held-back rules still show.
fn rule_rows(loaded: &crate::config::load::Loaded) -> Vec<RuleRow> {
    crate::rules::packs::rules()
        .into_iter()
        .chain(&loaded.rules)
        .map(|r| RuleRow {
            rule: r.clone(),
            state: if r.is_off(&loaded.rules_off) {
                "off"
            } else {
                "on"
            },
        })
        .collect()
}

/// Registrations of one id and scope that differ only in their event.
pub struct Row<'a> {
    pub first: &'a Registration,
    pub events: Vec<&'static str>,
}

fn same_shape(a: &Registration, b: &Registration) -> bool {
    a.id == b.id
        && a.scope == b.scope
        && a.class == b.class
        && a.handler == b.handler
        && a.matcher.source() == b.matcher.source()
        && a.timeout_ms == b.timeout_ms
        && a.runs_in == b.runs_in
        && a.enabled == b.enabled
        && a.applies_to_child_agents == b.applies_to_child_agents
        && a.profiles == b.profiles
        && a.network == b.network
        && a.sandbox_writable == b.sandbox_writable
}

pub fn rows(regs: &[Registration]) -> Vec<Row<'_>> {
    let mut out: Vec<Row> = Vec::new();
    for r in regs {
        match out.iter_mut().find(|row| same_shape(row.first, r)) {
            Some(row) => row.events.push(r.event.as_str()),
            None => out.push(Row {
                first: r,
                events: vec![r.event.as_str()],
            }),
        }
    }
    out
}

fn handler_text(h: &Handler) -> String {
    match h {
        Handler::Command(c) => {
            let mut s = format!(
                "command: {}",
                c.argv
                    .iter()
                    .map(|a| escape(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            if let Some(cwd) = &c.cwd {
                s.push_str(&format!("\n  cwd: {}", escape(cwd)));
            }
            for (k, v) in &c.env {
                s.push_str(&format!("\n  env: {}={}", escape(k), escape(v)));
            }
            if !c.env_passthrough.is_empty() {
                let names: Vec<String> = c.env_passthrough.iter().map(|n| escape(n)).collect();
                s.push_str(&format!("\n  env passed through: {}", names.join(" ")));
            }
            s
        }
        Handler::Builtin(p) => format!("in-process: {p:?} port"),
    }
}

/// Per event of `row`, the hosts that cannot enforce its decisions there
/// (no gate and no bridge), so a gate is never assumed to guard everywhere.
fn ungated(row: &Row) -> Vec<(&'static str, Vec<&'static str>)> {
    let r = row.first;
    if !r.class.has_decision_power() {
        return Vec::new();
    }
    row.events
        .iter()
        .filter_map(|name| {
            let event = name.parse::<crate::events::Event>().ok()?;
            if !event.is_gate_capable() {
                return None;
            }
            let hosts: Vec<&'static str> = crate::hosts::host_names()
                .iter()
                .copied()
                .filter(|h| {
                    crate::hosts::adapter(h)
                        .is_some_and(|a| !a.can_gate(event) && a.bridge_for(event).is_none())
                })
                .collect();
            (!hosts.is_empty()).then_some((*name, hosts))
        })
        .collect()
}

fn row_text(row: &Row, profile: Profile, off: Option<NotRun>) -> String {
    let r = row.first;
    let mut s = format!(
        "{}\n  scope={} class={} enabled={} appliesToChildAgents={}\n  events={} matcher={} timeoutMs={}",
        escape(&r.id),
        r.scope,
        r.class,
        r.enabled,
        r.applies_to_child_agents,
        row.events.join(","),
        escape(&r.matcher.source()),
        r.timeout_ms,
    );
    if let Some(c) = &r.condition {
        s.push_str(&format!(" if={}", escape(c.source())));
    }
    if let Some(p) = r.command().and_then(|c| c.protocol) {
        s.push_str(&format!(" protocol={}", p.host.name()));
        if p.fail_closed {
            s.push_str(" failClosed=true");
        }
    }
    if r.command().is_some() {
        s.push_str(&format!(" runsIn={}", r.effective_runs_in(profile)));
        if r.network == crate::config::model::Network::Restricted {
            // No proxy allowlist is configurable yet, so the sandbox keeps
            // its network namespace empty: say so rather than imply access.
            s.push_str(" network=restricted (no proxy configured: no network)");
        }
    }
    if !r.profiles.is_empty() {
        s.push_str(&format!(
            " profiles={}",
            r.profiles
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    s.push_str(&format!("\n  {}\n", handler_text(&r.handler)));
    let runs_in = match r.command() {
        Some(_) => format!("runsIn={}", r.effective_runs_in(profile)),
        None => "in this process".to_owned(),
    };
    match off {
        None => s.push_str(&format!("  effective: on, {runs_in}\n")),
        Some(why) => s.push_str(&format!("  effective: off, {}\n", why.text())),
    }
    if let Some(w) = writable_text(r) {
        s.push_str(&format!("  {w}\n"));
    }
    for (event, hosts) in ungated(row) {
        s.push_str(&format!("  cannot gate {event} on: {}\n", hosts.join(", ")));
    }
    s
}

fn row_json(row: &Row, profile: Profile) -> Value {
    let r = row.first;
    let handler = match &r.handler {
        Handler::Command(c) => {
            json!({"kind": "command", "argv": c.argv, "cwd": c.cwd, "env": c.env, "envPassthrough": c.env_passthrough, "protocol": c.protocol.map(|p| p.host.name()), "failClosed": c.protocol.map(|p| p.fail_closed)})
        }
        Handler::Builtin(p) => json!({"kind": "builtin", "port": format!("{p:?}")}),
    };
    json!({
        "id": r.id,
        "scope": r.scope.as_str(),
        "class": r.class.as_str(),
        "enabled": r.enabled,
        "appliesToChildAgents": r.applies_to_child_agents,
        "events": row.events,
        "matcher": r.matcher.source(),
        "if": r.condition.as_ref().map(|c| c.source()),
        "timeoutMs": r.timeout_ms,
        "runsIn": r.runs_in.as_str(),
        "effectiveRunsIn": r.effective_runs_in(profile).as_str(),
        "network": r.network.as_str(),
        "effectiveNetwork": "none",
        "sandboxWritable": r.sandbox_writable,
        "ungatedOn": ungated(row).into_iter().map(|(e, h)| (e.to_owned(), json!(h))).collect::<serde_json::Map<_, _>>(),
        "profiles": r.profiles.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        "handler": handler,
        "source": r.source,
        "description": r.description,
    })
}
