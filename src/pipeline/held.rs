//! Notices held back from a host's answer for the person. Where a deny's
//! stderr is what the model reads (Kimi gives it to the model as the tool
//! result), a notice beside the deny would reach the model, and a notice
//! names commands only a person should run (`keryx-hooks trust`). Such
//! notices are kept in the state dir instead, and `keryx-hooks status`
//! shows those of the last 7 days.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::events::Event;
use crate::hosts::Adapter;
use crate::paths::Locations;
use crate::runtime::types::FireResult;

/// How long a held notice is shown.
pub const KEEP: Duration = Duration::from_secs(7 * 24 * 3600);
/// At most this many are kept; older ones give way.
const MAX_KEPT: usize = 200;

/// One notice kept from a host's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Held {
    /// RFC 3339, UTC.
    pub time: String,
    pub host: String,
    pub session_id: Option<String>,
    pub notice: String,
}

/// Where they are kept.
pub fn file(loc: &Locations) -> PathBuf {
    loc.state_dir.join("held-notices.jsonl")
}

/// Takes the notices out of `result` when its answer on `host_event` would
/// hand them to the model (see [`Adapter::holds_notices`]), and keeps them
/// for the person.
pub(crate) fn hold(
    adapter: &Adapter,
    host_event: &str,
    event: Event,
    result: &mut FireResult,
    loc: &Locations,
    session_id: Option<&str>,
) {
    if !adapter.holds_notices(host_event, event, result) {
        return;
    }
    let time = crate::base::time::timestamp_now();
    let held: Vec<Held> = std::mem::take(&mut result.notices)
        .into_iter()
        .map(|notice| Held {
            time: time.clone(),
            host: adapter.name().to_owned(),
            session_id: session_id.map(str::to_owned),
            notice,
        })
        .collect();
    if let Err(e) = append(&file(loc), &held) {
        tracing::warn!("could not keep {} notices for the person: {e}", held.len());
    }
}

fn append(path: &Path, held: &[Held]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        crate::base::fs::create_private_dir(dir)?;
    }
    let mut kept = read_all(path);
    if kept.len() + held.len() > MAX_KEPT {
        kept.extend_from_slice(held);
        let from = kept.len() - MAX_KEPT;
        let text: String = kept[from..].iter().map(line).collect();
        return crate::paths::write_cache_file(path, text.as_bytes());
    }
    let text: String = held.iter().map(line).collect();
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(text.as_bytes())
}

fn line(h: &Held) -> String {
    let mut s = serde_json::to_string(h).unwrap_or_default();
    s.push('\n');
    s
}

fn read_all(path: &Path) -> Vec<Held> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The notices held in the last [`KEEP`], oldest first.
pub fn recent(loc: &Locations) -> Vec<Held> {
    let since = crate::base::time::rfc3339(std::time::SystemTime::now() - KEEP);
    read_all(&file(loc))
        .into_iter()
        .filter(|h| h.time >= since)
        .collect()
}
