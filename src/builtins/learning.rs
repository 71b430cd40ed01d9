//! The shipped learning sink, on unless `[learning] enabled = false`: one
//! JSONL line per observation under the state directory, redacted with the
//! secret scanner (the user's rules included) and bounded three ways (bytes
//! per record, bytes per session, bytes per file with rotation), so the
//! observer, once on, can never leak or grow without limit.

pub use crate::settings::LearningLimits as Limits;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::ports::{LearningObservation, LearningObservationSink, ObservationKind, PortError};
use super::scanner::Rules;
use crate::events::Event;
use crate::paths::session_component;

/// The file every record is appended to; rotated to `observations.N.jsonl`.
pub const FILE: &str = "observations.jsonl";
const LOCK: &str = ".lock";
/// Observations are the user's prompts and tool calls: owner-only.
const FILE_MODE: u32 = 0o600;
const SESSIONS: &str = "sessions";
/// Per-session counters untouched this long are from finished sessions.
const COUNTER_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The observation for `event`, if the learning observer records it.
pub fn observation_for(
    event: Event,
    session_id: &str,
    run_id: &str,
    timestamp: &str,
    payload: Value,
) -> Option<LearningObservation> {
    Some(LearningObservation {
        kind: ObservationKind::for_event(event)?,
        session_id: session_id.to_owned(),
        run_id: run_id.to_owned(),
        timestamp: timestamp.to_owned(),
        payload,
    })
}

/// Appends redacted, bounded observations to `<dir>/observations.jsonl`.
/// Every host event is its own process, so all state (the per-session byte
/// counts) is on disk, and every write happens under `<dir>/.lock`.
#[derive(Debug, Clone)]
pub struct JsonlSink {
    dir: PathBuf,
    rules: Redactor,
    limits: Limits,
}

/// The secret rules an observation is redacted with.
#[derive(Debug, Clone)]
pub enum Redactor {
    /// A rule set the user's `[security]` table shaped.
    Rules(Rules),
    /// The built-in rules, compiled only for a string one of them could
    /// match: an observation of an ordinary call (most of them) never
    /// compiles a rule. Redacts exactly what the built-in rule set does.
    Builtin,
}

impl Redactor {
    pub fn redact(&self, s: &str) -> String {
        match self {
            Redactor::Rules(r) => r.redact(s),
            Redactor::Builtin if crate::session::may_hold_secret(s) => {
                super::scanner::builtin_rules().redact(s)
            }
            Redactor::Builtin => s.to_owned(),
        }
    }
}

impl From<Rules> for Redactor {
    fn from(r: Rules) -> Redactor {
        Redactor::Rules(r)
    }
}

impl JsonlSink {
    pub fn new(dir: impl Into<PathBuf>, rules: impl Into<Redactor>, limits: Limits) -> JsonlSink {
        JsonlSink {
            dir: dir.into(),
            rules: rules.into(),
            limits,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&self, obs: &LearningObservation) -> std::io::Result<()> {
        let open_lock = || {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(FILE_MODE)
                .open(self.dir.join(LOCK))
        };
        // The directories exist after the first observation: made only
        // when the lock cannot be opened for want of them.
        let lock = match open_lock() {
            Ok(f) if self.dir.join(SESSIONS).is_dir() => f,
            _ => {
                create_private_dir(&self.dir)?;
                create_private_dir(&self.dir.join(SESSIONS))?;
                open_lock()?
            }
        };
        // Bounded like every lock on the event path: a lock held elsewhere
        // costs this observation, never the event.
        crate::session::lock_within(&lock, crate::session::LOCK_WAIT)?;

        let counter_path = self
            .dir
            .join(SESSIONS)
            .join(format!("{}.bytes", session_component(&obs.session_id)));
        // One open of the counter, read now and rewritten in place below.
        let counter_file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(FILE_MODE)
            .open(&counter_path)?;
        let mut counter = Counter::read(&counter_file);
        if counter.capped {
            return Ok(());
        }
        let mut line = bounded_record(obs, &self.rules, self.limits.max_record_bytes);
        if counter.bytes + line.len() as u64 > self.limits.max_session_bytes {
            // Say once that the rest of this session was dropped, so a
            // reader does not take silence for inactivity.
            line = capped_marker(obs);
            counter.capped = true;
        }
        self.rotate_if_needed(line.len() as u64)?;
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(FILE_MODE)
            .open(self.dir.join(FILE))?;
        f.write_all(line.as_bytes())?;
        counter.bytes += line.len() as u64;
        counter.write(&counter_file)
    }

    fn rotate_if_needed(&self, incoming: u64) -> std::io::Result<()> {
        let live = self.dir.join(FILE);
        let size = std::fs::metadata(&live).map(|m| m.len()).unwrap_or(0);
        if size == 0 || size + incoming <= self.limits.max_file_bytes {
            return Ok(());
        }
        let rotated = |n: usize| self.dir.join(format!("observations.{n}.jsonl"));
        let _ = std::fs::remove_file(rotated(self.limits.keep_files.max(1)));
        for n in (1..self.limits.keep_files.max(1)).rev() {
            let _ = std::fs::rename(rotated(n), rotated(n + 1));
        }
        if self.limits.keep_files == 0 {
            std::fs::remove_file(&live)?;
        } else {
            std::fs::rename(&live, rotated(1))?;
        }
        self.prune_counters();
        Ok(())
    }

    /// Rotation is rare, so it is when finished sessions' counters go.
    fn prune_counters(&self) {
        let Ok(entries) = std::fs::read_dir(self.dir.join(SESSIONS)) else {
            return;
        };
        let now = SystemTime::now();
        for e in entries.flatten() {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > COUNTER_TTL);
            if old {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

impl LearningObservationSink for JsonlSink {
    fn record(&self, obs: &LearningObservation) -> Result<(), PortError> {
        self.write(obs).map_err(|error| PortError::Sink {
            dir: self.dir.clone(),
            error,
        })
    }
}

/// Bytes a session has written, and whether it hit its cap.
#[derive(Debug, Default)]
struct Counter {
    bytes: u64,
    capped: bool,
}

impl Counter {
    fn read(file: &File) -> Counter {
        let text = crate::session::read_all(file);
        let s = String::from_utf8_lossy(&text);
        let mut parts = s.split_whitespace();
        Counter {
            bytes: parts.next().and_then(|n| n.parse().ok()).unwrap_or(0),
            capped: parts.next() == Some("capped"),
        }
    }

    /// Rewrites the counter in place: one `pwrite` at the start, the file
    /// cut to it.
    fn write(&self, file: &File) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let flag = if self.capped { " capped" } else { "" };
        let text = format!("{}{flag}", self.bytes);
        file.write_all_at(text.as_bytes(), 0)?;
        file.set_len(text.len() as u64)
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    // Observations are the user's prompts and tool calls: owner-only.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn capped_marker(obs: &LearningObservation) -> String {
    let mut s = json!({
        "kind": "session-capped",
        "sessionId": obs.session_id,
        "runId": obs.run_id,
        "timestamp": obs.timestamp,
        "payload": {"note": "this session reached max_session_bytes; later observations were dropped"},
    })
    .to_string();
    s.push('\n');
    s
}

/// The observation as one JSON line of at most `max` bytes: every string
/// redacted first (so truncation can never cut a secret into a fragment the
/// scanner no longer recognises), then long strings shortened until it
/// fits, then the payload dropped if even that is not enough.
pub fn bounded_record(obs: &LearningObservation, rules: &Redactor, max: usize) -> String {
    let payload = redact_value(&obs.payload, rules);
    let (session_id, run_id, timestamp) = (
        rules.redact(&obs.session_id),
        rules.redact(&obs.run_id),
        rules.redact(&obs.timestamp),
    );
    /// One line, in this key order, written straight from its parts.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Line<'a> {
        kind: &'a str,
        session_id: &'a str,
        run_id: &'a str,
        timestamp: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
        payload: &'a Value,
    }
    let envelope = |payload: &Value, truncated: bool| {
        let line = Line {
            kind: obs.kind.as_str(),
            session_id: &session_id,
            run_id: &run_id,
            timestamp: &timestamp,
            truncated,
            payload,
        };
        let mut s = serde_json::to_string(&line).unwrap_or_default();
        s.push('\n');
        s
    };
    let line = envelope(&payload, false);
    if line.len() <= max {
        return line;
    }
    let original = line.len();
    let mut cap = longest_string(&payload).min(max);
    while cap >= 16 {
        cap /= 2;
        let line = envelope(&shorten_strings(&payload, cap), true);
        if line.len() <= max {
            return line;
        }
    }
    let line = envelope(
        &json!({"omitted": "payload larger than max_record_bytes", "bytes": original}),
        true,
    );
    if line.len() <= max {
        line
    } else {
        // Only a pathological session or run id gets here.
        let mut s = json!({"kind": obs.kind.as_str(), "truncated": true}).to_string();
        s.push('\n');
        s
    }
}

fn redact_value(v: &Value, rules: &Redactor) -> Value {
    match v {
        Value::String(s) => Value::String(rules.redact(s)),
        Value::Array(a) => Value::Array(a.iter().map(|v| redact_value(v, rules)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (rules.redact(k), redact_value(v, rules)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn longest_string(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(longest_string).max().unwrap_or(0),
        Value::Object(m) => m.values().map(longest_string).max().unwrap_or(0),
        _ => 0,
    }
}

fn shorten_strings(v: &Value, cap: usize) -> Value {
    match v {
        Value::String(s) if s.len() > cap => {
            let mut end = cap;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            Value::String(format!("{}…[{} bytes cut]", &s[..end], s.len() - end))
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| shorten_strings(v, cap)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), shorten_strings(v, cap)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(session: &str, payload: Value) -> LearningObservation {
        observation_for(
            Event::PreToolUse,
            session,
            "run-1",
            "2026-11-29T00:00:00.000Z",
            payload,
        )
        .unwrap()
    }

    fn lines(dir: &Path, file: &str) -> Vec<Value> {
        std::fs::read_to_string(dir.join(file))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// A line's keys come in a fixed order, `truncated` only when strings
    /// were shortened, and a secret in a key, a value or an id is redacted.
    #[test]
    fn a_line_is_its_envelope_then_the_payload() {
        let o = obs("s-1", json!({"b": "two", "a": [1, "x"]}));
        assert_eq!(
            bounded_record(&o, &Redactor::Builtin, 8192),
            concat!(
                r#"{"kind":"tool-start","sessionId":"s-1","runId":"run-1","#,
                r#""timestamp":"2026-11-29T00:00:00.000Z","payload":{"b":"two","a":[1,"x"]}}"#,
                "\n"
            )
        );
        let long = obs("s-1", json!({"text": "y".repeat(2000)}));
        let line = bounded_record(&long, &Redactor::Builtin, 600);
        assert!(line.len() <= 600, "{line}");
        assert!(
            line.starts_with(concat!(
                r#"{"kind":"tool-start","sessionId":"s-1","runId":"run-1","#,
                r#""timestamp":"2026-11-29T00:00:00.000Z","truncated":true,"payload":{"text":"yyy"#
            )),
            "{line}"
        );
        let key = concat!("ghp_", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5");
        let secret = obs(key, json!({ key: key }));
        let line = bounded_record(&secret, &Redactor::Builtin, 8192);
        assert!(!line.contains(key), "{line}");
    }

    #[test]
    fn observation_kinds_follow_the_event_table() {
        assert!(observation_for(Event::PreCompact, "s", "r", "t", Value::Null).is_none());
        assert_eq!(
            observation_for(Event::Stop, "s", "r", "t", Value::Null)
                .unwrap()
                .kind,
            ObservationKind::TurnStop
        );
    }

    #[test]
    fn records_are_redacted_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let sink = JsonlSink::new(dir.path().join("l"), Rules::builtin(), Limits::default());
        let key = ["AKIA", "Z7Q4M2XJ5PRT3LKB"].concat();
        sink.record(&obs(
            "s1",
            json!({"toolName": "Bash", "toolInput": {"command": format!("echo {key}")}}),
        ))
        .unwrap();
        let raw = std::fs::read_to_string(dir.path().join("l").join(FILE)).unwrap();
        assert!(!raw.contains(&key), "{raw}");
        let recs = lines(&dir.path().join("l"), FILE);
        assert_eq!(recs[0]["kind"], "tool-start");
        assert_eq!(
            recs[0]["payload"]["toolInput"]["command"],
            "echo [REDACTED:aws-access-key-id]"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("l"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn the_lazy_built_in_redactor_redacts_what_the_rule_set_does() {
        let rules = Rules::builtin();
        let mut texts: Vec<String> = Vec::new();
        // Every secret of the corpus (stored reversed), and the lines of
        // this crate's own sources: what an observation of ordinary work is.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let corpus =
            std::fs::read_to_string(root.join("tests/fixtures/secrets/secrets.jsonl")).unwrap();
        for line in corpus.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            texts.push(v["text"].as_str().unwrap().chars().rev().collect());
        }
        for file in [
            "src/builtins/learning.rs",
            "src/commands/run.rs",
            "README.md",
        ] {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            texts.extend(text.lines().map(str::to_owned));
        }
        let mut redacted = 0;
        for t in &texts {
            let want = rules.redact(t);
            redacted += usize::from(want != *t);
            assert_eq!(Redactor::Builtin.redact(t), want, "{t}");
        }
        assert!(redacted >= 300, "{redacted}");

        let dir = tempfile::tempdir().unwrap();
        let sink = JsonlSink::new(dir.path(), Redactor::Builtin, Limits::default());
        let key = ["AKIA", "Z7Q4M2XJ5PRT3LKB"].concat();
        sink.record(&obs(
            "s1",
            json!({"toolInput": {"command": format!("echo {key}")}}),
        ))
        .unwrap();
        let raw = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(
            !raw.contains(&key) && raw.contains("[REDACTED:aws-access-key-id]"),
            "{raw}"
        );
    }

    #[test]
    fn a_record_never_exceeds_its_byte_limit() {
        let rules = Redactor::from(Rules::builtin());
        for payload in [
            json!({"toolOutput": "x".repeat(100_000)}),
            json!({"a": "é".repeat(20_000), "b": ["y".repeat(9000), 1, null]}),
            json!((0..3000).map(|i| format!("k{i}")).collect::<Vec<_>>()),
        ] {
            let line = bounded_record(&obs("s", payload), &rules, 8192);
            assert!(line.len() <= 8192, "{}", line.len());
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["truncated"], true);
        }
        let small = bounded_record(&obs("s", json!({"prompt": "hi"})), &rules, 8192);
        assert!(!small.contains("truncated"));
    }

    #[test]
    fn a_session_stops_at_its_cap_with_one_marker() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_session_bytes: 1000,
            ..Limits::default()
        };
        let sink = JsonlSink::new(dir.path(), Rules::builtin(), limits);
        for _ in 0..20 {
            sink.record(&obs("busy", json!({"prompt": "p".repeat(100)})))
                .unwrap();
        }
        sink.record(&obs("other", json!({"prompt": "q"}))).unwrap();
        let recs = lines(dir.path(), FILE);
        let busy: Vec<&Value> = recs.iter().filter(|r| r["sessionId"] == "busy").collect();
        assert!(busy.len() < 10, "{}", busy.len());
        assert_eq!(busy.last().unwrap()["kind"], "session-capped");
        assert_eq!(
            busy.iter()
                .filter(|r| r["kind"] == "session-capped")
                .count(),
            1
        );
        assert!(recs.iter().any(|r| r["sessionId"] == "other"));
    }

    #[test]
    fn the_file_rotates_and_keeps_a_bounded_number() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_file_bytes: 4096,
            keep_files: 2,
            ..Limits::default()
        };
        let sink = JsonlSink::new(dir.path(), Rules::builtin(), limits);
        for i in 0..200 {
            sink.record(&obs(&format!("s{i}"), json!({"prompt": "z".repeat(200)})))
                .unwrap();
        }
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".jsonl"))
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        for n in names {
            assert!(
                std::fs::metadata(dir.path().join(&n)).unwrap().len() <= 4096,
                "{n}"
            );
        }
    }

    #[test]
    fn hostile_session_ids_stay_inside_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let sink = JsonlSink::new(dir.path().join("l"), Rules::builtin(), Limits::default());
        sink.record(&obs("../../escape", json!({}))).unwrap();
        assert!(!dir.path().join("escape.bytes").exists());
        let counter = format!(
            "l/sessions/{}.bytes",
            crate::paths::session_component("../../escape")
        );
        assert!(dir.path().join(counter).exists());
        // Ids that sanitize alike keep counters of their own.
        sink.record(&obs(".._.._escape", json!({}))).unwrap();
        assert!(dir.path().join("l/sessions/.._.._escape.bytes").exists());
        assert_eq!(
            std::fs::read_dir(dir.path().join("l/sessions"))
                .unwrap()
                .count(),
            2
        );
    }

    #[test]
    fn limits_come_from_the_learning_table() {
        let doc: toml_edit::DocumentMut =
            "[learning]\nenabled = true\nmax_record_bytes = 4096\nkeep_files = 5\n"
                .parse()
                .unwrap();
        let l = Limits::from_table(doc.get("learning").and_then(toml_edit::Item::as_table_like));
        assert_eq!(
            (l.max_record_bytes, l.keep_files, l.max_session_bytes),
            (4096, 5, 1024 * 1024)
        );
    }
}
