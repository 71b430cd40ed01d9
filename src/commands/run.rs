//! `keryx-hooks run <host> <event>`: what hosts execute for every event.
//! Read the payload (bounded), decode it with the host's adapter, load the
//! layered config, select, fire, compose, record, and answer in the host's
//! own shape: one stage after another over one event ([`handle`]).
//!
//! Nothing but protocol output reaches stdout, and no failure here turns a
//! gate into an allow: on gate-capable events a broken shim denies.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Instant;

use serde_json::{Value, json};

use crate::cli::RunArgs;
use crate::config::load::{self, Loaded};
use crate::config::model::{BuiltinPort, Handler, Profile, Registration};
use crate::config::{self};
use crate::env_vars;
use crate::escape::escape;
use crate::hosts::{self, Adapter, stdin_guard};
use crate::install::wired::WiredSnapshot;
use crate::paths::Locations;
use crate::runtime::events::Event;
use crate::runtime::fire::{self, FireContext};
use crate::runtime::reply::HookReply;
use crate::runtime::select::{self, NotRun, Trace};
use crate::runtime::types::{
    EventInput, FireResult, Outcome, RecordContext, RecordEntry, RecordKind,
};
use crate::session::calls::{self, Calls, Claim};
use crate::session::{Delivered, Locked, Session};

/// Consecutive Stop blocks after which a Stop gate stops blocking the turn.
pub const STOP_BLOCK_LIMIT: u32 = 8;

/// Said at SessionStart when `KERYX_HOOKS=off` is set.
pub const OFF_NOTICE: &str = "keryx-hooks is off in this session's environment (KERYX_HOOKS=off): no hook runs and no gate guards this session";

/// Settings for one event, resolved from the arguments.
pub struct RunSettings {
    pub host: String,
    pub host_event: String,
    pub snapshot: Option<String>,
    pub profile: Option<Profile>,
    pub headless: bool,
}

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
fn unspeakable(msg: &str) -> ExitCode {
    crate::output::err_line(&format!("keryx-hooks: {msg}"));
    tracing::error!("{msg}");
    ExitCode::from(2)
}

/// `run` with arguments clap could not parse: answer the host instead of
/// exiting with clap's usage code.
pub fn run_with_bad_args(args: &[std::ffi::OsString], error: &str) -> ExitCode {
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
pub fn run_after_panic(args: &RunArgs) -> ExitCode {
    tracing::error!("keryx-hooks panicked while handling the event");
    let Some(adapter) = hosts::adapter(&args.host) else {
        return unspeakable("keryx-hooks failed inside while handling the event");
    };
    let (event, result) = panic_result(adapter, &args.event);
    emit(adapter, &args.event, event, &result)
}

fn panic_result(adapter: &Adapter, host_event: &str) -> (Event, FireResult) {
    broken_result(
        adapter,
        host_event,
        "keryx-hooks failed inside while handling this event (see `keryx-hooks.log`); the event is denied",
    )
}

/// What a shim that cannot work answers on `host_event`: a deny on the
/// gate-capable events (an unknown host event is taken for one).
fn broken_result(
    adapter: &Adapter,
    host_event: &str,
    reason: impl Into<String>,
) -> (Event, FireResult) {
    let event = adapter.canonical_event(host_event);
    let result = FireResult::broken(event, reason);
    (event.unwrap_or(Event::PreToolUse), result)
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s).trim_start_matches("error: ")
}

/// When this event started, for the duration of entries no hook made.
static STARTED: OnceLock<Instant> = OnceLock::new();

fn elapsed_ms() -> u64 {
    STARTED.get().map_or(0, |t| t.elapsed().as_millis() as u64)
}

/// Who, where and what call, for the records of `input`.
fn record_context(adapter: &Adapter, input: &EventInput, loc: &Locations) -> RecordContext {
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
fn record_shim(
    adapter: &Adapter,
    input: Option<&EventInput>,
    loc: &Locations,
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
const UNKNOWN_SESSION: &str = "unknown-session";

/// Where an event without a decoded payload is recorded.
fn cwd_locations() -> Locations {
    Locations::resolve(&std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")))
}

pub fn run(args: &RunArgs) -> ExitCode {
    let _ = STARTED.set(Instant::now());
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
            return ExitCode::SUCCESS;
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
    let result = handle(adapter, event, &settings);
    emit(adapter, &settings.host_event, event, &result)
}

fn emit(adapter: &Adapter, host_event: &str, event: Event, result: &FireResult) -> ExitCode {
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
    ExitCode::from(enc.exit_code)
}

/// One event as a sequence of stages (ARCHITECTURE §1): read → decode and
/// locate/load ([`prepare`]) → select ([`selection`], the trace `explain`
/// and `test` read too) → fire → compose → record; `run` then encodes.
/// Every failure becomes a result, never a panic or an exit code of its own.
fn handle(adapter: &Adapter, event: Event, s: &RunSettings) -> FireResult {
    // read
    let payload = stdin_guard::read_json(std::io::stdin().lock(), &stdin_guard::Limits::default())
        .map_err(|e| e.to_string());
    // decode, locate, load
    let p = match prepare(adapter, event, s, payload) {
        Ok(p) => {
            note_layer(adapter, &p.layer, &p.loc);
            p
        }
        Err(Stopped::Quiet) => return FireResult::none(),
        Err(Stopped::Shim(a)) => {
            if let Some(layer) = &a.layer {
                note_layer(adapter, layer, &a.loc);
            }
            record_shim(adapter, a.input.as_ref(), &a.loc, a.kind, event, &a.result);
            return a.result;
        }
    };
    let mut notices = p.notices.clone();
    if let Some(line) = trust_news(adapter, &p.input, &p.loc, &p.trust, &p.loaded) {
        notices.push(line);
    }
    // select
    let all = select::in_load_order(&p.loaded, &p.trust);
    let sel = selection(adapter, &p, &all);
    let skipped = skipped_entries(&sel, p.profile);
    // fire, compose, record
    let mut ev = match EventRun::begin(adapter, &p, &sel, notices, skipped) {
        Ok(ev) => ev,
        Err(answer) => return answer,
    };
    let mut result = ev.fire();
    ev.compose(&mut result);
    ev.record(&result);
    result
}

/// Tells a person who runs `run` by hand, on a terminal, that it reads the
/// snapshot the host's wiring names rather than the live file. Never on
/// stdout (the host protocol), and never when a host runs it: a host passes
/// `--snapshot` and gives no terminal.
fn note_layer(adapter: &Adapter, layer: &UserLayer, loc: &Locations) {
    use std::io::IsTerminal;
    if matches!(layer, UserLayer::Wired(_)) && std::io::stderr().is_terminal() {
        crate::output::err_line(&format!("keryx-hooks: {}", layer.describe(adapter, loc)));
    }
}

/// Every hook that fit the call but does not run (held back by trust,
/// disabled, another profile, left off in runtime.toml), as a `skipped`
/// entry with the reason. When nothing runs at all, only a held-back hook
/// is worth a write of its own: an event no hook applies to stays free of
/// disk writes (the hot path), and a hook someone turned off says so
/// whenever its event leaves records anyway.
fn skipped_entries(sel: &Selection, profile: Profile) -> Vec<RecordEntry> {
    let nothing_runs = Work::of(sel, profile) == Work::Nothing;
    sel.skipped()
        .filter(|(_, why)| !nothing_runs || matches!(why, NotRun::Trust(_)))
        .map(|(r, why)| skipped_entry(r, why))
        .collect()
}

/// What the shim answers when it stops before selecting any hook.
pub(crate) enum Stopped {
    /// The adapter leaves this payload alone: nothing to do, nothing said.
    Quiet,
    /// An answer no hook made.
    Shim(Box<ShimAnswer>),
}

/// An answer no hook made, recorded as `kind`.
pub(crate) struct ShimAnswer {
    pub kind: RecordKind,
    pub result: FireResult,
    pub input: Option<EventInput>,
    pub loc: Locations,
    /// Where the user layer was read from, once it was chosen.
    pub layer: Option<UserLayer>,
}

/// Where the user layer is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UserLayer {
    /// The snapshot `--snapshot` names: what a host runs (it always
    /// passes one).
    Named(String),
    /// No `--snapshot`: the snapshot the host's wiring of this event names,
    /// so a run by hand reads what the host reads.
    Wired(WiredSnapshot),
    /// No `--snapshot`, and no wiring of this host names a snapshot: the
    /// live `$KERYX_HOME/hooks.json`.
    Live,
}

impl UserLayer {
    /// The layer for `s` at `loc`. The manifests are only read without
    /// `--snapshot`, which a host always passes: never on a host's event.
    fn choose(adapter: &Adapter, s: &RunSettings, loc: &Locations) -> UserLayer {
        match &s.snapshot {
            Some(key) => UserLayer::Named(key.clone()),
            None => crate::install::wired::wired_snapshot(loc, adapter, &s.host_event)
                .map_or(UserLayer::Live, UserLayer::Wired),
        }
    }

    pub fn key(&self) -> Option<&str> {
        match self {
            UserLayer::Named(k) => Some(k),
            UserLayer::Wired(w) => Some(&w.key),
            UserLayer::Live => None,
        }
    }

    /// Which hooks file is read and why, in one line for a person.
    pub fn describe(&self, adapter: &Adapter, loc: &Locations) -> String {
        let live = crate::paths::tilde(&loc.user_hooks_file(), &loc.home);
        match self {
            UserLayer::Named(k) => format!(
                "reading snapshot `{}` (named by --snapshot), not `{live}`",
                escape(k)
            ),
            UserLayer::Wired(w) => format!(
                "reading snapshot `{}` (what {} runs: `{}` wires it), not `{live}`",
                escape(&w.key),
                adapter.name(),
                crate::paths::tilde(&w.path, &loc.home)
            ),
            UserLayer::Live => format!(
                "reading the live `{live}`: no {} wiring names a snapshot",
                adapter.name()
            ),
        }
    }
}

/// One event, decoded, located and with its config loaded and trust
/// applied: what selection works on.
pub(crate) struct Prepared {
    pub input: EventInput,
    pub loc: Locations,
    pub profile: Profile,
    /// What to say to the person so far.
    pub notices: Vec<String>,
    /// The config, the untrusted project hooks taken out.
    pub loaded: Loaded,
    pub trust: crate::trust::ProjectTrust,
    /// The hook ids a child agent inherits.
    pub inherited: Vec<String>,
    /// Where the user layer was read from.
    pub layer: UserLayer,
}

/// Decodes `payload` with the host's adapter, locates the project, loads
/// the layered config (the snapshot's user layer when the wiring names
/// one) and applies trust. Runs no hook and writes nothing.
pub(crate) fn prepare(
    adapter: &Adapter,
    event: Event,
    s: &RunSettings,
    payload: Result<Value, String>,
) -> Result<Prepared, Stopped> {
    let payload = match payload {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(host = adapter.name(), event = %event, "unreadable payload: {e}");
            return Err(Stopped::Shim(Box::new(ShimAnswer {
                kind: RecordKind::PayloadInvalid,
                result: unavailable(
                    event,
                    format!("keryx-hooks could not read the {event} payload: {e}"),
                    Vec::new(),
                ),
                input: None,
                loc: cwd_locations(),
                layer: None,
            })));
        }
    };
    let mut input = match adapter.decode(&s.host_event, &payload) {
        Ok(i) => i,
        Err(e @ hosts::DecodeError::Skipped { .. }) => {
            tracing::debug!(host = adapter.name(), event = %event, "{e}");
            return Err(Stopped::Quiet);
        }
        Err(e) => {
            tracing::warn!(host = adapter.name(), event = %event, "undecodable payload: {e}");
            return Err(Stopped::Shim(Box::new(ShimAnswer {
                kind: RecordKind::PayloadInvalid,
                result: unavailable(
                    event,
                    format!("keryx-hooks could not decode the {event} payload: {e}"),
                    Vec::new(),
                ),
                input: None,
                loc: cwd_locations(),
                layer: None,
            })));
        }
    };
    if s.headless {
        input.interactive = false;
    }
    let cwd = input
        .cwd
        .clone()
        .filter(|c| c.is_absolute())
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")));
    let loc = Locations::resolve(&cwd);
    crate::runner::set_probe_cache_dir(loc.state_dir.clone());
    let layer = UserLayer::choose(adapter, s, &loc);
    let user_file = layer.key().map(|k| loc.snapshot_dir(k).join("hooks.json"));
    let sources = config::sources(&loc, user_file.clone());
    let mut loaded = load::load(&sources);
    let set_aside = crate::trust::set_aside_broken_untrusted_project(&mut loaded, &sources, &loc);
    if let (Some(key), Some(file)) = (layer.key(), &user_file)
        && !loc.snapshot_dir(key).is_dir()
    {
        loaded
            .diagnostics
            .push(crate::config::diagnostic::Diagnostic::error(
                "hook-snapshot-missing",
                format!(
                    "snapshot `{key}` is not installed (no `{}`); run `keryx-hooks doctor --fix`",
                    file.display()
                ),
            ));
    }
    // The flag, then what the host says, then the user's runtime.toml:
    // the strictest profile when that file is broken.
    let named = s.profile.or(input.profile);
    let profile = named.unwrap_or_else(|| loc.settings().profile());
    input.profile = Some(profile);

    let mut notices: Vec<String> = loc.warnings.clone();
    if event == Event::SessionStart {
        notices.extend(set_aside);
    }
    if named.is_none()
        && let Some(why) = loc.settings().profile_fallback()
    {
        // Said in the log on every event, and to the user once a session,
        // the way the host shows SessionStart notices: never on stdout.
        tracing::warn!("{why}");
        if event == Event::SessionStart {
            notices.push(format!("keryx-hooks: {why}"));
        }
    }
    // At most one drift line, at SessionStart, for a host wired to a
    // snapshot: a resync is the user's call, so it is said, never done.
    if event == Event::SessionStart
        && let Some(key) = layer.key()
        && let Some(line) = crate::install::classify::session_start_line(&loc, key)
    {
        notices.push(line);
    }
    if !loaded.ok() {
        let result = config_invalid(event, &loaded, notices);
        return Err(Stopped::Shim(Box::new(ShimAnswer {
            kind: RecordKind::ConfigInvalid,
            result,
            input: Some(input),
            loc,
            layer: Some(layer),
        })));
    }
    let trust =
        crate::trust::apply_for_run(&mut loaded, &loc, &mut notices, event, !input.interactive);

    // A child agent inherits every hook id, idle ports included: it runs
    // the same config and decides for itself what is idle.
    let inherited = fire::inherited_hook_ids(&loaded.registrations);
    if input.event == Event::SubagentStart {
        // Computed here, never what the caller claims.
        input
            .fields
            .insert("inheritedHookIds".into(), json!(inherited));
    }
    Ok(Prepared {
        input,
        loc,
        profile,
        notices,
        loaded,
        trust,
        inherited,
        layer,
    })
}

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
    let mut f = select::Filters::for_run(p.profile, Some(&p.trust), p.loc.settings(), &p.loaded);
    if p.input.event == Event::SubagentStart && split {
        f.split = Some(select::SplitSpawn::HostEvent);
    }
    let main = Trace::of(all.iter().copied(), &p.input, &f);
    let bridged = bridged_subagent_start(adapter, &p.input, &p.inherited).map(|sub| {
        f.split = split.then_some(select::SplitSpawn::Bridge);
        let t = Trace::of(all.iter().copied(), &sub, &f);
        (sub, t)
    });
    Selection { main, bridged }
}

/// The entry of a hook that fit the call but did not run.
fn skipped_entry(reg: &Registration, why: &NotRun) -> RecordEntry {
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

/// A project's hooks stopped running mid-session: its file was edited
/// after it was trusted, or the trusted hooks were taken out of it. Said to
/// the person on the first event that sees it, not only at the next
/// SessionStart. Small files in the session dir remember what was said and
/// which hooks SessionStart found trusted; a trusted project pays nothing,
/// one without command hooks one failed open.
fn trust_news(
    adapter: &Adapter,
    input: &EventInput,
    loc: &Locations,
    trust: &crate::trust::ProjectTrust,
    loaded: &Loaded,
) -> Option<String> {
    use crate::trust::TrustState;
    const SAID: &str = "trust-notice";
    const TRUSTED: &str = "trusted-hooks";
    let dir = loc.session_dir(adapter.name(), &input.session_id);
    let remember = |name: &str, text: &str| {
        let written = crate::base::fs::create_private_dir(&dir)
            .and_then(|()| crate::paths::write_cache_file(&dir.join(name), text.as_bytes()));
        if let Err(e) = written {
            tracing::warn!("could not remember `{name}` for the session: {e}");
        }
    };
    let start = input.event == Event::SessionStart;
    match &trust.state {
        TrustState::Trusted if start => {
            let mut ids: Vec<&str> = Vec::new();
            for r in crate::trust::digest::command_hooks(&loaded.registrations) {
                if !ids.contains(&r.id.as_str()) {
                    ids.push(&r.id);
                }
            }
            remember(TRUSTED, &ids.join("\n"));
            None
        }
        TrustState::NoCommandHooks if !start && loc.project_root.is_some() => {
            let gone = std::fs::read_to_string(dir.join(TRUSTED)).ok()?;
            let _ = std::fs::remove_file(dir.join(TRUSTED));
            let ids: Vec<String> = gone
                .lines()
                .filter(|l| !l.is_empty())
                .map(|id| format!("`{}`", crate::escape::escape(id)))
                .collect();
            (!ids.is_empty()).then(|| {
                format!(
                    "keryx-hooks: the project hooks {} that you trusted at the start of this session are no longer in `.metaproject/hooks.json`; they stopped guarding this session (check `git diff .metaproject/hooks.json`)",
                    ids.join(", ")
                )
            })
        }
        _ if trust.hook_ids.is_empty() => None,
        _ => {
            let said = format!(
                "{} {} {}",
                trust.state.as_str(),
                trust.digest,
                trust.hook_ids.join(",")
            );
            if std::fs::read_to_string(dir.join(SAID)).ok().as_deref() == Some(said.as_str()) {
                return None;
            }
            remember(SAID, &said);
            // SessionStart says it in full already.
            if start {
                return None;
            }
            crate::trust::held_back_notice(trust, !input.interactive)
        }
    }
}

/// The shim cannot do its work for this event (an unreadable payload, a
/// lock someone else holds): a deny on every gate-capable event, Stop
/// included, with the reason (ARCHITECTURE §5); nothing on the others. A
/// Stop that ended the turn here would let whatever garbled or stalled the
/// shim decide that the turn's end gates never run.
fn unavailable(event: Event, reason: String, notices: Vec<String>) -> FireResult {
    tracing::error!("{reason}");
    let mut r = FireResult::none();
    if event.is_gate_capable() {
        r.outcome = Outcome::Deny;
        r.reason = Some(reason);
        r.matched_rules.push("keryx-hooks-unavailable".into());
    }
    r.notices = notices;
    r
}

/// The config errors a host is shown, at most: the rest are `validate`'s.
const CONFIG_ERRORS_SHOWN: usize = 3;
/// One config error line in a reason, at most.
const CONFIG_ERROR_BYTES: usize = 600;

fn config_invalid(event: Event, loaded: &Loaded, mut notices: Vec<String>) -> FireResult {
    let errors: Vec<String> = loaded.errors().map(|d| d.to_string()).collect();
    let first = errors.first().cloned().unwrap_or_default();
    tracing::error!("hook config invalid: {first}");
    let mut r = FireResult::none();
    if event.is_gate_capable() {
        r.outcome = Outcome::Deny;
        r.reason = Some(config_invalid_reason(&errors));
        r.matched_rules.push("hook-config-invalid".into());
    }
    notices.push(fire::reason_text(&format!(
        "keryx-hooks: the hook config is invalid, so every gate-capable event is denied until it is fixed: {}",
        first.lines().next().unwrap_or("")
    )));
    r.notices = notices;
    r
}

/// A few lines, each the first line of one error, then where the whole
/// list is: never more than a reason may be.
fn config_invalid_reason(errors: &[String]) -> String {
    let mut lines: Vec<String> = errors
        .iter()
        .take(CONFIG_ERRORS_SHOWN)
        .map(|e| crate::base::text::cap(e.lines().next().unwrap_or(""), CONFIG_ERROR_BYTES))
        .collect();
    if errors.len() > CONFIG_ERRORS_SHOWN {
        lines.push(format!("and {} more", errors.len() - CONFIG_ERRORS_SHOWN));
    }
    fire::reason_text(&format!(
        "hook-config-invalid: {} (run `keryx-hooks validate`)",
        lines.join("\n")
    ))
}

/// The file a Write/Edit touches, for the first-edit set.
fn edited_path(input: &EventInput) -> Option<String> {
    let ti = input.tool_input()?;
    ["file_path", "filePath", "path"]
        .iter()
        .find_map(|k| ti.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
}

/// What firing one event takes, decided before any state is touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
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
    fn of(sel: &Selection, profile: Profile) -> Work {
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
fn bridged_subagent_start(
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
fn spawn_is_split(adapter: &Adapter) -> bool {
    adapter.bridge_for(Event::SubagentStart).is_some()
        && adapter.host_event_for(Event::SubagentStart).is_some()
}

/// What phase 1 read and decided under the session lock.
struct Ids {
    run_id: String,
    seq: u64,
    first_edit: bool,
    stop_blocks: u32,
}

/// Phase 1: the sequence number, the run id and the first-edit decision.
fn take_ids(l: &mut Locked, input: &EventInput, track_edits: bool) -> Ids {
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
    }
}

/// One event between selection and its answer: what the stages after
/// `select` share, each adding to it.
struct EventRun<'a, 'r> {
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
}

impl<'a, 'r> EventRun<'a, 'r> {
    /// De-duplication and phase 1 under the session lock (the sequence
    /// number, the run id, the first-edit decision). `Err` is the answer
    /// when the event ends here (a replayed delivery, a lock held
    /// elsewhere), already recorded.
    fn begin(
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
        };
        match session.as_ref().map(Session::lock) {
            Some(Ok(mut l)) => {
                ids = take_ids(&mut l, input, track_edits);
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
        })
    }

    /// Fires what selection chose: the event, then the SubagentStart
    /// bridged at this call, if any.
    fn fire(&self) -> FireResult {
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
        };
        let mut result = fire::fire_selected(&self.sel.main.selected(), input, &ctx);
        if let Some((sub, trace)) = &self.sel.bridged {
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
    fn compose(&mut self, result: &mut FireResult) {
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
    fn record(self, result: &FireResult) {
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
fn delivered(result: &FireResult) -> Delivered {
    Delivered {
        pending: false,
        outcome: result.outcome.as_str().to_owned(),
        reason: result.reason.clone(),
        additional_context: result.additional_context.clone(),
    }
}

/// The second delivery of one tool call: repeat the first answer.
fn replay(d: &Delivered) -> FireResult {
    let mut r = FireResult::none();
    r.outcome = Outcome::parse(&d.outcome).unwrap_or(Outcome::Deny);
    r.reason = d.reason.clone();
    r.additional_context = d.additional_context.clone();
    r.matched_rules.push("duplicate-delivery".into());
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::types::Outcome;

    /// After a panic a gate-capable event is denied as by a broken shim,
    /// in the host's own shape; an event that cannot gate stays silent.
    #[test]
    fn a_panic_denies_gate_capable_events_only() {
        let claude = hosts::adapter("claude-code").unwrap();
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
        let gemini = hosts::adapter("gemini-cli").unwrap();
        let (event, result) = panic_result(gemini, "BeforeTool");
        assert_eq!((event, result.outcome), (Event::PreToolUse, Outcome::Deny));
    }
}
