//! Codex's review of new hooks (an adapter's `reviewsHooks:
//! "codex-trusted-hash"`). Codex runs a hook that is not managed by an
//! administrator only after the user has trusted it in `/hooks`, and it
//! records that trust in the user's own config (`$CODEX_HOME/config.toml`,
//! default `~/.codex/config.toml`), whatever file the hook lives in:
//!
//! ```toml
//! [hooks.state."/home/me/.codex/config.toml:pre_tool_use:0:0"]
//! trusted_hash = "sha256:…"
//! ```
//!
//! The key is the hook's source file, its event in snake case and its
//! position (matcher group, handler); for a plugin's hook the source is
//! `<plugin>@<marketplace>:hooks/hooks.json`. The hash is a sha256 over a
//! normalized identity of the hook — event, matcher and handler, serialized
//! as JSON with sorted keys — so editing the command, timeout or matcher
//! makes the trust stale and Codex asks again ("modified since last
//! trusted"). Observed in Codex 0.171.0: the hashes computed here equal the
//! `currentHash` its `app-server` reports in `hooks/list`, and writing that
//! hash as above is exactly what trusting the hook in `/hooks` does. A
//! plugin's hook is reported as `<hook hash>/<hash of the plugin's files>`
//! and trusted as `trusted_hash = "<hook hash>"` plus `trusted_content_hash =
//! "<hash of the plugin's files>"` (a stale content hash makes Codex ask
//! again; none at all does not). The files' hash is Codex's own and is not
//! recomputed here: for a plugin only the hook's hash is compared.

use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::hostfile::{self, HostFileError, file};
use crate::base::text::hex;
use crate::hosts::HookReview;

/// Codex's longest timeout for these events, in seconds (it clamps longer
/// ones and says so at start-up).
const CLAMPED_EVENTS: [(&str, u64); 1] = [("SessionEnd", 3)];
/// Events whose matcher Codex ignores (and leaves out of the hash).
const NO_MATCHER_EVENTS: [&str; 3] = ["UserPromptSubmit", "Stop", "Interrupt"];
/// Codex's default hook timeout, in seconds.
const DEFAULT_TIMEOUT_SEC: u64 = 600;

/// Where one of our hooks stands with Codex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// Trusted as it is now: Codex runs it.
    Trusted,
    /// Never trusted: Codex does not run it until the user reviews it.
    New,
    /// Trusted once, changed since: Codex does not run it until reviewed again.
    Changed,
    /// Turned off in `/hooks` (`enabled = false`).
    Disabled,
}

/// One of our hooks in a Codex hooks source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Codex's key for it: `<source>:<event>:<group>:<handler>`.
    pub key: String,
    /// The host event (`PreToolUse`).
    pub event: String,
    /// `sha256:<hex>` of its normalized identity.
    pub hash: String,
    pub review: Review,
}

/// The `<source>` part of Codex's keys for a plugin's `hooks/hooks.json`.
const PLUGIN_SOURCE_SUFFIX: &str = ":hooks/hooks.json";

/// Codex's snake-case label of a host event: `PreToolUse` → `pre_tool_use`.
pub fn event_label(event: &str) -> String {
    let mut out = String::with_capacity(event.len() + 4);
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The hash Codex gives one command hook: sha256 over the JSON, keys
/// sorted and absent values left out, of `{event_name, matcher, hooks:
/// [{type, command, timeout, async, statusMessage}]}`, with the matcher
/// dropped where Codex ignores it and the timeout defaulted and clamped as
/// Codex does.
pub fn hook_hash(
    event: &str,
    matcher: Option<&str>,
    command: &str,
    timeout: Option<u64>,
    is_async: bool,
    status_message: Option<&str>,
) -> String {
    let mut timeout = timeout.unwrap_or(DEFAULT_TIMEOUT_SEC).max(1);
    if let Some((_, max)) = CLAMPED_EVENTS.iter().find(|(e, _)| *e == event) {
        timeout = timeout.min(*max);
    }
    let matcher = matcher.filter(|_| !NO_MATCHER_EVENTS.contains(&event));
    // Keys in byte order, as Codex's canonical form sorts them.
    let mut handler = Map::new();
    handler.insert("async".into(), is_async.into());
    handler.insert("command".into(), command.into());
    if let Some(m) = status_message {
        handler.insert("statusMessage".into(), m.into());
    }
    handler.insert("timeout".into(), timeout.into());
    handler.insert("type".into(), "command".into());
    let mut identity = Map::new();
    identity.insert("event_name".into(), event_label(event).into());
    identity.insert("hooks".into(), Value::Array(vec![Value::Object(handler)]));
    if let Some(m) = matcher {
        identity.insert("matcher".into(), m.into());
    }
    let text = serde_json::to_string(&Value::Object(identity)).unwrap_or_default();
    format!("sha256:{}", hex(&Sha256::digest(text.as_bytes())))
}

/// What the user config records per key: `(trusted_hash, enabled)`.
type States = Vec<(String, Option<String>, Option<bool>)>;

/// The `[hooks.state]` table of the user's Codex config; empty when the
/// file does not exist.
fn states(user_config: &Path) -> Result<States, HostFileError> {
    let Some(text) = file::read(&file::resolve(user_config)?)? else {
        return Ok(Vec::new());
    };
    let doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| unparsable(user_config, "TOML", e))?;
    let Some(state) = doc
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(toml_edit::Item::as_table_like)
    else {
        return Ok(Vec::new());
    };
    Ok(state
        .iter()
        .map(|(key, item)| {
            let hash = item
                .get("trusted_hash")
                .and_then(toml_edit::Item::as_str)
                .map(str::to_owned);
            let enabled = item.get("enabled").and_then(toml_edit::Item::as_bool);
            (key.trim().to_owned(), hash, enabled)
        })
        .collect())
}

fn unparsable(path: &Path, format: &'static str, e: impl std::fmt::Display) -> HostFileError {
    HostFileError::Unparsable {
        path: path.to_path_buf(),
        format,
        message: e.to_string(),
    }
}

/// Our hooks in one Codex hooks source and where each stands with Codex.
///
/// `source` is the file holding them: a `config.toml` (user or project
/// layer) or a plugin's `hooks/hooks.json`; `plugin` says which, and for a
/// plugin the key's source is `<name>@<marketplace>:hooks/hooks.json`
/// (matched on its suffix). `user_config` is where Codex keeps trust.
pub fn review(
    source: &Path,
    plugin: bool,
    user_config: &Path,
) -> Result<Vec<Entry>, HostFileError> {
    // Our entries name the host whose adapter reviews hooks this way.
    let host = crate::hosts::all()
        .find(|a| a.reviews_hooks() == Some(HookReview::CodexTrustedHash))
        .map_or("", |a| a.name());
    let Some(text) = file::read(&file::resolve(source)?)? else {
        return Ok(Vec::new());
    };
    let hooks: Value = if plugin {
        let v: Value = serde_json::from_str(&text).map_err(|e| unparsable(source, "JSON", e))?;
        v.get("hooks").cloned().unwrap_or(Value::Null)
    } else {
        let doc: toml_edit::DocumentMut =
            text.parse().map_err(|e| unparsable(source, "TOML", e))?;
        doc.get("hooks")
            .map(super::hostfile::toml::item_json)
            .unwrap_or(Value::Null)
    };
    let states = states(user_config)?;
    let current = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok());
    // Codex names the file by the path it loaded it from; accept either
    // spelling of a path with a symlink in it.
    let sources: Vec<String> = if plugin {
        Vec::new()
    } else {
        let mut s = vec![source.display().to_string()];
        if let Ok(real) = std::fs::canonicalize(source) {
            s.push(real.display().to_string());
        }
        s
    };
    let mut out = Vec::new();
    let Some(events) = hooks.as_object() else {
        return Ok(out);
    };
    for (event, groups) in events {
        if event == "state" {
            continue;
        }
        let label = event_label(event);
        for (g, group) in groups
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            let matcher = group.get("matcher").and_then(Value::as_str);
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .enumerate()
            {
                let Some(command) = handler.get("command").and_then(Value::as_str) else {
                    continue;
                };
                if !hostfile::wiring::is_ours(command, host, current.as_deref()) {
                    continue;
                }
                let hash = hook_hash(
                    event,
                    matcher,
                    command,
                    handler.get("timeout").and_then(Value::as_u64),
                    handler
                        .get("async")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    handler.get("statusMessage").and_then(Value::as_str),
                );
                let position = format!(":{label}:{g}:{h}");
                let state = states.iter().find(|(key, _, _)| {
                    if plugin {
                        key.ends_with(&format!("{PLUGIN_SOURCE_SUFFIX}{position}"))
                            && key.starts_with(&format!("{}@", super::plugin::PACKAGE_NAME))
                    } else {
                        sources.iter().any(|s| *key == format!("{s}{position}"))
                    }
                });
                let key = match state {
                    Some((k, _, _)) => k.clone(),
                    None if plugin => format!(
                        "{}@…{PLUGIN_SOURCE_SUFFIX}{position}",
                        super::plugin::PACKAGE_NAME
                    ),
                    None => format!("{}{position}", sources[0]),
                };
                let trusted = state.and_then(|(_, t, _)| t.as_deref());
                let review = match (state.and_then(|(_, _, e)| *e), trusted) {
                    (Some(false), _) => Review::Disabled,
                    (_, Some(t)) if t == hash => Review::Trusted,
                    (_, Some(_)) => Review::Changed,
                    (_, None) => Review::New,
                };
                out.push(Entry {
                    key,
                    event: event.clone(),
                    hash,
                    review,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes Codex 0.171.0 reported (`app-server`, `hooks/list`) for these
    /// hooks in a user `config.toml`: the matcher kept, dropped where
    /// Codex ignores it, and the SessionEnd timeout clamped from 8 to 3 s.
    #[test]
    fn hashes_match_what_codex_reports() {
        let cmd = |ev: &str| {
            format!("'/opt/keryx/bin/keryx-hooks' run codex {ev} --snapshot keryx-0123456789ab")
        };
        assert_eq!(
            hook_hash(
                "PreToolUse",
                Some("*"),
                &cmd("PreToolUse"),
                Some(19),
                false,
                None
            ),
            "sha256:e17a929b2608bac93c41ccee150b4509aa97f41a65e587036aedda6e49f7ce89"
        );
        assert_eq!(
            hook_hash(
                "UserPromptSubmit",
                Some("*"),
                &cmd("UserPromptSubmit"),
                Some(8),
                false,
                None
            ),
            "sha256:28b313eeb8f923f947ca54ebb71ca3416ccecda7faf96d668b7e2b7ca960be51"
        );
        assert_eq!(
            hook_hash(
                "SessionEnd",
                Some("*"),
                &cmd("SessionEnd"),
                Some(8),
                false,
                None
            ),
            "sha256:356ead4335c19f36c4ed4aa03a8f7da4292bcbc583369c7f53678cc5834a0dad"
        );
        assert_eq!(
            hook_hash("Stop", Some("*"), &cmd("Stop"), Some(8), false, None),
            "sha256:9aeb07537ae49a36ed9a4a145494d3cedc40d14aaf1ffa35a151e3999fcb1a80"
        );
        assert_eq!(
            hook_hash("Stop", None, "echo other", None, false, None),
            "sha256:6c809232879e7b395cebff7e2948458815867d284465aff3b230d7834b76a8e0"
        );
        assert_eq!(event_label("SubagentStart"), "subagent_start");
    }

    #[test]
    fn review_reads_trust_from_the_user_config() {
        let t = tempfile::tempdir().unwrap();
        let cfg = t.path().join("config.toml");
        let cmd = "'/opt/keryx/bin/keryx-hooks' run codex Stop --snapshot keryx-0123456789ab";
        let hash = hook_hash("Stop", None, cmd, Some(8), false, None);
        let hooks = format!(
            "[[hooks.Stop]]\nhooks = [{{ type = \"command\", command = \"echo other\" }}]\n\n\
             [[hooks.Stop]]\nmatcher = \"*\"\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"{cmd}\"\ntimeout = 8\n"
        );
        std::fs::write(&cfg, &hooks).unwrap();
        let r = review(&cfg, false, &cfg).unwrap();
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].review, Review::New);
        assert_eq!(r[0].key, format!("{}:stop:1:0", cfg.display()));

        let trusted = format!(
            "{hooks}\n[hooks.state.\"{}:stop:1:0\"]\ntrusted_hash = \"{hash}\"\n",
            cfg.display()
        );
        std::fs::write(&cfg, &trusted).unwrap();
        assert_eq!(
            review(&cfg, false, &cfg).unwrap()[0].review,
            Review::Trusted
        );

        std::fs::write(&cfg, trusted.replace("timeout = 8", "timeout = 9")).unwrap();
        assert_eq!(
            review(&cfg, false, &cfg).unwrap()[0].review,
            Review::Changed
        );

        std::fs::write(&cfg, format!("{trusted}enabled = false\n")).unwrap();
        assert_eq!(
            review(&cfg, false, &cfg).unwrap()[0].review,
            Review::Disabled
        );
    }
}
