//! The first stages of an event: decode the payload with the host's
//! adapter, locate the project, choose the user layer (the snapshot the
//! wiring names), load the layered config and apply trust. Runs no hook
//! and writes nothing; a stop here is an answer no hook made.

use crate::hosts::shim_command::SnapshotArg;
use crate::settings::Here;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::config::load::{self, Loaded};
use crate::config::model::Profile;
use crate::config::{self};
use crate::escape::escape;
use crate::events::Event;
use crate::hosts::stdin_guard::StdinError;
use crate::hosts::{self, Adapter};
use crate::install::SnapshotError;
use crate::install::wired::WiredSnapshot;
use crate::paths::Locations;
use crate::runtime::fire::{self};
use crate::runtime::types::{EventInput, FireResult, Outcome, RecordKind};

use super::*;

/// Where an event without a decoded payload is recorded.
pub(crate) fn cwd_locations() -> Here {
    Here::resolve(&std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")))
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
    pub loc: Here,
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
    pub(crate) fn choose(adapter: &Adapter, s: &RunSettings, loc: &Here) -> UserLayer {
        match &s.snapshot {
            Some(arg) => UserLayer::Named(SnapshotArg(arg).key().to_owned()),
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
    pub loc: Here,
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
    /// The host's own name for the event (`BeforeTool`).
    pub host_event: String,
}

/// Decodes `payload` with the host's adapter, locates the project, loads
/// the layered config (the snapshot's user layer when the wiring names
/// one) and applies trust. Runs no hook and writes nothing.
pub(crate) fn prepare(
    adapter: &Adapter,
    event: Event,
    s: &RunSettings,
    payload: Result<Value, StdinError>,
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
    let named_root = s.snapshot.as_deref().and_then(|a| SnapshotArg(a).root());
    let loc = Here::new(crate::paths::Locations::resolve_named(&cwd, named_root));
    crate::runner::set_probe_cache_dir(loc.state_dir.clone());
    let layer = UserLayer::choose(adapter, s, &loc);
    let user_file = layer.key().map(|k| loc.snapshot_dir(k).join("hooks.json"));
    // An installed snapshot is what its manifest says, checked on every
    // event on the bytes the loader parses: an emptied, deleted or
    // rewritten hooks.json (or a missing manifest) is a broken config.
    let manifest = layer.key().map(|k| {
        let dir = loc.snapshot_dir(k);
        crate::install::manifest::read(&dir).and_then(|m| {
            m.files
                .iter()
                .find(|f| f.path == "hooks.json")
                .map(|f| f.sha256.clone())
                .ok_or(SnapshotError::ManifestLacksHooksJson)
        })
    });
    let digest = manifest.as_ref().and_then(|m| m.as_ref().ok()).cloned();
    let (mut loaded, set_aside) = load_layers(&loc, user_file.clone(), digest.as_deref());
    if let (Some(key), Some(file)) = (layer.key(), &user_file) {
        use crate::config::diagnostic::Diagnostic;
        if let Some(why) = loc.snapshot_refusal() {
            loaded.diagnostics.push(Diagnostic::error(
                "hook-snapshot-refused",
                format!("{why}; run `keryx-hooks doctor --fix`"),
            ));
        } else if !loc.snapshot_dir(key).is_dir() {
            loaded.diagnostics.push(Diagnostic::error(
                "hook-snapshot-missing",
                format!(
                    "snapshot `{key}` is not installed (no `{}`); run `keryx-hooks doctor --fix`",
                    file.display()
                ),
            ));
        } else if let Some(Err(why)) = &manifest {
            loaded.diagnostics.push(Diagnostic::error(
                "hook-snapshot-tampered",
                format!(
                    "snapshot `{key}` cannot be checked against its manifest ({}); move `{}` away, then run `keryx-hooks install <host>...` to take it again",
                    escape(&why.to_string()),
                    escape(&loc.snapshot_dir(key).display().to_string())
                ),
            ));
        }
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
        host_event: s.host_event.clone(),
    })
}

/// A project's hooks stopped running mid-session: its file was edited
/// after it was trusted, or the trusted hooks were taken out of it. Said to
/// the person on the first event that sees it, not only at the next
/// SessionStart. Small files in the session dir remember what was said and
/// which hooks SessionStart found trusted; a trusted project pays nothing,
/// one without command hooks one failed open.
pub(crate) fn trust_news(
    adapter: &Adapter,
    input: &EventInput,
    loc: &Here,
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
pub(crate) fn unavailable(event: Event, reason: String, notices: Vec<String>) -> FireResult {
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
pub(crate) const CONFIG_ERRORS_SHOWN: usize = 3;
/// One config error line in a reason, at most.
pub(crate) const CONFIG_ERROR_BYTES: usize = 600;

pub(crate) fn config_invalid(
    event: Event,
    loaded: &Loaded,
    mut notices: Vec<String>,
) -> FireResult {
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
pub(crate) fn config_invalid_reason(errors: &[String]) -> String {
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

/// The layered config as `run` reads it: the built-ins, the user layer
/// (`user_file`, a snapshot's, else the live file) and the project's. A
/// project file that does not load in a project never trusted is set
/// aside; the notice that says so is returned beside the load.
/// `user_digest` is the sha256 the user file must have (a snapshot's).
pub(crate) fn load_layers(
    loc: &Here,
    user_file: Option<PathBuf>,
    user_digest: Option<&str>,
) -> (Loaded, Option<String>) {
    let sources = config::sources(loc, user_file);
    let mut loaded = load::load_with(&sources, user_digest);
    let set_aside =
        crate::trust::set_aside_broken_untrusted_project(&mut loaded, &sources, user_digest, loc);
    (loaded, set_aside)
}
