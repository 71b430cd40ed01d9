//! `keryx-hooks run <host> <event>`: what hosts execute for every event.
//! Read the payload (bounded), decode it with the host's adapter, load the
//! layered config, select, fire, compose, record, and answer in the host's
//! own shape. The stages are [`crate::pipeline`]; this file reads and answers.
//!
//! Nothing but protocol output reaches stdout, and no failure here turns a
//! gate into an allow: on gate-capable events a broken shim denies.

use crate::error::ExitStatus;
use crate::settings::Here;
use std::io::Write;
use std::time::Instant;

use crate::cli::RunArgs;
use crate::env_vars;
use crate::events::Event;
use crate::hosts::{self, Adapter, stdin_guard};
use crate::pipeline::{self, OFF_NOTICE, RunSettings, UserLayer, broken_result, panic_result};
use crate::runtime::fire::{self};
use crate::runtime::types::FireResult;

impl From<&RunArgs> for RunSettings {
    fn from(a: &RunArgs) -> Self {
        RunSettings {
            host: a.host.clone(),
            host_event: a.event.clone(),
            snapshot: a.snapshot.clone(),
            profile: a.profile,
            headless: a.headless,
        }
    }
}

/// Deliberate block for a host we cannot speak to: exit 2 with a reason on
/// stderr is the one blocking signal hook hosts share.
fn unspeakable(msg: &str) -> ExitStatus {
    crate::output::err_line(&format!("keryx-hooks: {msg}"));
    tracing::error!("{msg}");
    ExitStatus::Usage
}

/// `run` with arguments clap could not parse: answer the host instead of
/// exiting with clap's usage code.
pub fn run_with_bad_args(args: &[std::ffi::OsString], error: &str) -> ExitStatus {
    let pos: Vec<String> = args
        .iter()
        .skip(2)
        .map(|a| a.to_string_lossy().into_owned())
        .filter(|a| !a.starts_with('-'))
        .collect();
    let Some(adapter) = pos.first().and_then(|h| hosts::adapter(h)) else {
        return unspeakable(&format!("bad arguments to `run`: {error}"));
    };
    let host_event = pos.get(1).cloned().unwrap_or_default();
    let (event, result) = broken_result(
        adapter,
        &host_event,
        format!("keryx-hooks: bad arguments to `run`: {}", first_line(error)),
    );
    emit(adapter, &host_event, event, &result)
}

/// The answer after `run` panicked: what a broken shim answers, so a
/// gate-capable event is denied instead of the host reading a crash as
/// "carry on" (Claude Code runs the tool after a hook's exit 101). The
/// panic message itself went to stderr and the log.
pub fn run_after_panic(args: &RunArgs) -> ExitStatus {
    tracing::error!("keryx-hooks panicked while handling the event");
    let Some(adapter) = hosts::adapter(&args.host) else {
        return unspeakable("keryx-hooks failed inside while handling the event");
    };
    let (event, result) = panic_result(adapter, &args.event);
    emit(adapter, &args.event, event, &result)
}

pub fn run(args: &RunArgs) -> ExitStatus {
    let _ = pipeline::record::STARTED.set(Instant::now());
    let settings = RunSettings::from(args);
    let Some(adapter) = hosts::adapter(&settings.host) else {
        return unspeakable(&format!(
            "unknown host `{}`; known hosts: {}",
            crate::escape::escape(&settings.host),
            hosts::host_names().join(", ")
        ));
    };
    let Some(event) = adapter.canonical_event(&settings.host_event) else {
        if adapter
            .unmapped_events()
            .contains(&settings.host_event.as_str())
        {
            // A host event keryx has no canonical event for (e.g. Claude
            // Code's PostToolBatch): nothing to run, nothing to say.
            return ExitStatus::Success;
        }
        return unspeakable(&format!(
            "host `{}` has no event `{}` that keryx-hooks handles",
            adapter.name(),
            crate::escape::escape(&settings.host_event)
        ));
    };
    if env_vars::get(env_vars::KERYX_HOOKS).as_deref() == Some("off") {
        // The one switch that turns every guard off is said to the person
        // once a session, so it is never only in the environment.
        let mut off = FireResult::none();
        if event == Event::SessionStart {
            off.notices.push(OFF_NOTICE.to_owned());
        }
        return emit(adapter, &settings.host_event, event, &off);
    }
    let payload = stdin_guard::read_json(std::io::stdin().lock(), &stdin_guard::Limits::default());
    let result = pipeline::handle(adapter, event, &settings, payload, |layer, loc| {
        note_layer(adapter, layer, loc)
    });
    emit(adapter, &settings.host_event, event, &result)
}

fn emit(adapter: &Adapter, host_event: &str, event: Event, result: &FireResult) -> ExitStatus {
    // Whatever the path to it, the reason a host shows is capped.
    let capped;
    let result = match &result.reason {
        Some(r) if fire::reason_text(r) != *r => {
            capped = FireResult {
                reason: Some(fire::reason_text(r)),
                ..result.clone()
            };
            &capped
        }
        _ => result,
    };
    let enc = adapter.encode(host_event, event, result);
    if !enc.stdout.is_empty() {
        crate::output::stdout(&enc.stdout);
    }
    if !enc.stderr.is_empty() {
        let _ = std::io::stderr().write_all(enc.stderr.as_bytes());
    }
    ExitStatus::Host(enc.exit_code)
}

/// Tells a person who runs `run` by hand, on a terminal, that it reads the
/// snapshot the host's wiring names rather than the live file. Never on
/// stdout (the host protocol), and never when a host runs it: a host passes
/// `--snapshot` and gives no terminal.
fn note_layer(adapter: &Adapter, layer: &UserLayer, loc: &Here) {
    use std::io::IsTerminal;
    if matches!(layer, UserLayer::Wired(_)) && std::io::stderr().is_terminal() {
        crate::output::err_line(&format!("keryx-hooks: {}", layer.describe(adapter, loc)));
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s).trim_start_matches("error: ")
}
