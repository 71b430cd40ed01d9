//! `keryx-hooks status [--json] [--source DIR]`: for each hook source, the
//! drift state of its snapshot and whether every host recorded in it is
//! wired to it — checked where the manifest says it was wired (scope,
//! format and file), so a project-scope wiring is checked in its project
//! from anywhere. Exits 1 when anything is not `current` (a check that could
//! not run counts as not current), so scripts and CI can gate on it.

use crate::error::ExitStatus;
use crate::settings::Here;

use serde_json::{Value, json};

use crate::cli::StatusArgs;
use crate::error::CmdResult;
use crate::escape::escape;
use crate::install::classify::{DriftState, HostWiring, SourceStatus, assess_all};
use crate::install::host_sandbox;
use crate::install::manifest::WiringFormat;
use crate::output;
use crate::paths::snapshot_key;

pub fn run(args: &StatusArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let sources = assess_all(&loc, args.source.as_deref());
    let ok = sources.iter().all(SourceStatus::current);
    let off = super::shared::kill_switch();
    let held = crate::pipeline::held::recent(&loc);
    if args.json {
        output::json(&json!({
            "schemaVersion": "1",
            "ok": ok,
            "hooksOff": off.is_some(),
            "heldNotices": held,
            "snapshotRoot": loc.snapshot_root,
            "sources": sources.iter().map(|s| to_json(&loc, s)).collect::<Vec<_>>(),
        }));
    } else if sources.is_empty() {
        output::line(&format!(
            "no hook source: `{}` does not exist and no snapshot is installed under `{}`",
            loc.user_hooks_file().display(),
            loc.snapshot_root.display()
        ));
    } else {
        for s in &sources {
            output::stdout(&to_text(&loc, s));
        }
    }
    if !held.is_empty() && !args.json {
        output::stdout(&held_text(&held));
    }
    if let (Some(off), false) = (&off, args.json) {
        output::err_line(&format!("warning: {off}"));
    }
    Ok(if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The notices kept from a host's answer because it would have handed them
/// to the model (a deny on Kimi), for the person to read here.
fn held_text(held: &[crate::pipeline::held::Held]) -> String {
    let mut out = String::from(
        "notices of the last 7 days kept from the model (its host gives a deny's stderr to the model):\n",
    );
    for h in held {
        out.push_str(&format!(
            "  {} {}: {}\n",
            h.time,
            escape(&h.host),
            crate::runtime::fire::reason_text(&h.notice)
        ));
    }
    out
}

/// The host sandbox in a wired settings file of a host that has one.
fn sandbox_of(loc: &Here, h: &HostWiring) -> Option<host_sandbox::Coverage> {
    let w = h
        .wiring
        .as_ref()
        .filter(|w| w.format == WiringFormat::Settings)?;
    let spec = crate::hosts::adapter(&h.host)?.host_sandbox()?;
    host_sandbox::state(loc, spec, std::path::Path::new(&w.path)).ok()
}

fn to_json(loc: &Here, st: &SourceStatus) -> Value {
    let mut v = json!({
        "source": st.source,
        "key": snapshot_key(&st.source),
        "state": Value::Null,
        "warning": Value::Null,
        "fix": st.fix(),
    });
    match &st.result {
        Ok(a) => {
            v["key"] = json!(a.key);
            v["snapshotDir"] = json!(a.dir);
            v["state"] = json!(a.state.as_str());
            v["snapshotHash"] = json!(a.manifest.as_ref().map(|m| &m.source_hash));
            v["liveHash"] = json!(a.live_hash);
            v["createdAt"] = json!(a.manifest.as_ref().map(|m| &m.created_at));
            v["hosts"] = a
                .hosts
                .iter()
                .map(|h| {
                    json!({
                        "host": h.host,
                        "scope": h.wiring.as_ref().map(|w| w.scope.as_str()),
                        "format": h.wiring.as_ref().map(|w| w.format.as_str()),
                        "path": h.wiring.as_ref().map(|w| &w.path),
                        "wired": h.wired,
                        "broken": h.broken(),
                        "hostSandbox": sandbox_of(loc, h),
                    })
                })
                .collect();
        }
        Err(w) => v["warning"] = json!(w.to_string()),
    }
    v
}

fn to_text(loc: &Here, st: &SourceStatus) -> String {
    let src = escape(&st.source.to_string_lossy());
    let mut s = match &st.result {
        Ok(a) => {
            let mut s = format!(
                "`{src}` → snapshot `{}`: {}\n  {}\n",
                escape(&a.key),
                a.state.as_str(),
                a.state.meaning()
            );
            for h in &a.hosts {
                let state = match h.broken() {
                    Some(why) => format!("broken: {}", escape(&why)),
                    None if h.wired => "wired".to_owned(),
                    None => "not wired".to_owned(),
                };
                s.push_str(&format!("  {}: {state}\n", h.describe()));
                if let Some(c) = sandbox_of(loc, h) {
                    s.push_str(&format!(
                        "    host sandbox: {}\n",
                        host_sandbox::describe(&c)
                    ));
                }
            }
            if a.hosts.iter().any(|h| h.broken().is_some()) {
                // `doctor --fix` does not overwrite a file it cannot read.
                s.push_str(
                    "  hint: fix the broken file by hand, then run `keryx-hooks doctor --fix`\n",
                );
                return s;
            }
            if a.state == DriftState::HalfApplied && a.hosts.is_empty() {
                s.push_str("  no host is recorded as using it\n");
            }
            s
        }
        Err(w) => format!(
            "`{src}`: unknown\n  warning: the state could not be determined: {}\n",
            escape(&w.to_string())
        ),
    };
    if let Some(fix) = st.fix() {
        s.push_str(&format!("  hint: run `{fix}`\n"));
    }
    s
}
