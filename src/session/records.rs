//! `records.jsonl` read back: one line as [`StoredRecord`], the fields
//! `Session::append_records` writes. Lines from every version are read:
//! a field a line lacks (written before it existed) or holds in another
//! shape is `None`, and fields this version does not know are ignored.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One line of `records.jsonl`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StoredRecord {
    /// `hook`, `skipped`, `config-invalid`, …; `None` on lines written
    /// before every line had one (they are hook invocations).
    #[serde(deserialize_with = "text")]
    pub kind: Option<String>,
    /// RFC 3339, UTC.
    #[serde(deserialize_with = "text")]
    pub time: Option<String>,
    #[serde(deserialize_with = "text")]
    pub host: Option<String>,
    #[serde(deserialize_with = "text")]
    pub session_id: Option<String>,
    #[serde(deserialize_with = "text")]
    pub project_root: Option<String>,
    #[serde(deserialize_with = "text")]
    pub tool: Option<String>,
    #[serde(deserialize_with = "text")]
    pub summary: Option<String>,
    /// The hook invocation (the runtime's `HookInvocationRecord`); every
    /// field `None` when the line has none.
    #[serde(deserialize_with = "invocation")]
    pub record: StoredInvocation,
    #[serde(deserialize_with = "text")]
    pub skipped_because: Option<String>,
}

/// The `record` of a line: the runtime's `HookInvocationRecord`, with its
/// enums as the text they are written as, so a value a later version adds
/// still shows.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StoredInvocation {
    #[serde(deserialize_with = "text")]
    pub hook_id: Option<String>,
    #[serde(deserialize_with = "text")]
    pub event: Option<String>,
    /// `none`, `allow`, `ask` or `deny`.
    #[serde(deserialize_with = "text")]
    pub outcome: Option<String>,
    /// `timeout`, `crash`, … when the hook failed.
    #[serde(deserialize_with = "text")]
    pub failure: Option<String>,
    #[serde(deserialize_with = "text")]
    pub reason: Option<String>,
}

impl StoredRecord {
    /// The line `v` (a JSON object) as a record; `None` for anything else.
    pub fn of(v: &Value) -> Option<StoredRecord> {
        v.is_object()
            .then(|| StoredRecord::deserialize(v).ok())
            .flatten()
    }
}

/// A string field; any other value reads as absent.
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// The `record` object; anything else reads as one with no fields.
fn invocation<'de, D: Deserializer<'de>>(d: D) -> Result<StoredInvocation, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(StoredInvocation::deserialize(&v).unwrap_or_default())
}

/// Names the host and session of a line written before lines carried
/// them, from its session directory's name (`<host>-<session>`); the
/// longest host name that prefixes it wins. A line that names its host,
/// or is no object, is left as it is.
pub fn fill_from_dir(v: &mut Value, dir: &str) {
    if !v.is_object() || v.get("host").is_some() {
        return;
    }
    let Some(host) = crate::hosts::host_names()
        .iter()
        .filter(|h| dir.starts_with(&format!("{h}-")))
        .max_by_key(|h| h.len())
    else {
        return;
    };
    v["host"] = Value::from(*host);
    if v.get("sessionId").is_none() {
        v["sessionId"] = Value::from(&dir[host.len() + 1..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_field_is_optional_and_unknown_ones_are_ignored() {
        let r = StoredRecord::of(&json!({
            "time": 5,
            "host": "codex",
            "record": {"hookId": "h", "outcome": "later", "durationMs": "x"},
            "addedLater": {"a": 1},
        }))
        .unwrap();
        assert_eq!(r.time, None);
        assert_eq!(r.host.as_deref(), Some("codex"));
        assert_eq!(r.record.hook_id.as_deref(), Some("h"));
        assert_eq!(r.record.outcome.as_deref(), Some("later"));
        assert_eq!(r.record.event, None);
        let bare = StoredRecord::of(&json!({"record": "not an object"})).unwrap();
        assert!(bare.record.hook_id.is_none() && bare.kind.is_none());
        assert!(StoredRecord::of(&json!([1])).is_none());
    }
}
