//! `keryx-hooks export`: ships the invocation records the shim appended to
//! each session's `records.jsonl` to an OpenTelemetry collector over
//! OTLP/HTTP, as log records (the record's fields as attributes) and, per
//! hook, a run count and a duration histogram. Nothing here runs under
//! `run`: the shim only appends, and this command, run by hand or as a
//! service, reads from a persisted cursor.
//!
//! Exactly once: a batch's log records are sent, and only when the
//! collector answers 2xx does the cursor move past them, in the same
//! atomic write that keeps the batch's metrics as pending; the metrics are
//! then sent and cleared the same way. An outage (refused connection,
//! 429, 502, 503, 504, a timeout) is retried with backoff and then leaves
//! the cursor where it was; a crash between a 2xx and the cursor write is
//! the one case that can send a batch twice.

pub mod http;
pub mod proto;
pub mod settings;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::escape::escape;
use proto::{Msg, any_json, any_str, key_value};
use settings::ExportSettings;

/// The most log records in one request.
pub const BATCH: usize = 512;
/// The largest `records.jsonl` line exported; a longer one (which the shim
/// never writes: reasons and summaries are capped) is skipped with a warning.
const MAX_LINE: usize = 256 * 1024;

/// How far each session's `records.jsonl` has been shipped, and the
/// metrics of a batch whose log records were accepted but whose metrics
/// were not yet. Files are named by their session directory and known by
/// device and inode: a file with another inode under the same name (a
/// pruned session whose id came back) is read from its start.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Cursor {
    pub version: u32,
    pub files: BTreeMap<String, FileCursor>,
    /// Hex of an `ExportMetricsServiceRequest` still to send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_metrics: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileCursor {
    pub dev: u64,
    pub ino: u64,
    pub offset: u64,
}

/// The exporter's files: `<state>/export/cursor.json` and its lock.
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn at(state_dir: &Path) -> Store {
        Store {
            dir: state_dir.join("export"),
        }
    }

    pub fn cursor_file(&self) -> PathBuf {
        self.dir.join("cursor.json")
    }

    /// Holds the exporter lock, so two exporters never ship the same
    /// records; an error when another one holds it.
    pub fn lock(&self) -> Result<File, String> {
        crate::base::fs::create_private_dir(&self.dir)
            .map_err(|e| format!("cannot create `{}`: {e}", self.dir.display()))?;
        let path = self.dir.join("lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("cannot open `{}`: {e}", path.display()))?;
        match f.try_lock() {
            Ok(()) => Ok(f),
            Err(_) => Err(format!(
                "another `keryx-hooks export` is running (it holds `{}`)",
                escape(&path.display().to_string())
            )),
        }
    }

    /// The cursor; a missing file is the start. A cursor that cannot be
    /// read is an error, never a silent restart (which would send
    /// everything again).
    pub fn load(&self) -> Result<Cursor, String> {
        let path = self.cursor_file();
        match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                format!(
                    "`{}` is not an export cursor ({e}); move it away to send every record again",
                    path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Cursor {
                version: 1,
                ..Cursor::default()
            }),
            Err(e) => Err(format!("cannot read `{}`: {e}", path.display())),
        }
    }

    /// Writes the cursor whole or not at all (a new file renamed over the
    /// old, synced).
    pub fn save(&self, c: &Cursor) -> Result<(), String> {
        let path = self.cursor_file();
        let tmp = self.dir.join("cursor.json.new");
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(crate::base::fs::FILE_MODE)
                .open(&tmp)?;
            f.write_all(&serde_json::to_vec(c).map_err(std::io::Error::other)?)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            File::open(&self.dir)?.sync_all()
        };
        write().map_err(|e| format!("cannot write `{}`: {e}", path.display()))
    }
}

/// One batch read from the record files: the lines, and where each file's
/// cursor moves once they are accepted.
#[derive(Debug, Default)]
pub struct Batch {
    pub lines: Vec<Value>,
    pub advance: BTreeMap<String, FileCursor>,
    /// Lines that were not JSON records, skipped (they still advance).
    pub skipped: usize,
}

/// Up to `max` complete record lines past the cursor, files in name
/// order. Files the cursor knows that are gone are dropped from it.
pub fn read_batch(sessions: &Path, cursor: &mut Cursor, max: usize) -> Batch {
    let mut batch = Batch::default();
    let mut names: Vec<String> = std::fs::read_dir(sessions)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("records.jsonl").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    cursor.files.retain(|n, _| names.contains(n));
    for name in names {
        if batch.lines.len() >= max {
            break;
        }
        let path = sessions.join(&name).join("records.jsonl");
        let Ok(mut f) = File::open(&path) else {
            continue;
        };
        let Ok(meta) = f.metadata() else { continue };
        let known = cursor.files.get(&name).copied().unwrap_or_default();
        let from =
            if (known.dev, known.ino) == (meta.dev(), meta.ino()) && known.offset <= meta.len() {
                known.offset
            } else {
                0
            };
        if from == meta.len() {
            cursor.files.insert(
                name,
                FileCursor {
                    dev: meta.dev(),
                    ino: meta.ino(),
                    offset: from,
                },
            );
            continue;
        }
        let mut bytes = Vec::new();
        if f.seek(SeekFrom::Start(from)).is_err()
            || f.take(meta.len() - from).read_to_end(&mut bytes).is_err()
        {
            continue;
        }
        let mut offset = from;
        let mut rest = &bytes[..];
        while batch.lines.len() < max {
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                break;
            };
            let line = &rest[..nl];
            rest = &rest[nl + 1..];
            offset += nl as u64 + 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Value>(line) {
                Ok(v) if v.is_object() && line.len() <= MAX_LINE => {
                    let mut v = v;
                    crate::session::records::fill_from_dir(&mut v, &name);
                    batch.lines.push(v);
                }
                _ => batch.skipped += 1,
            }
        }
        batch.advance.insert(
            name,
            FileCursor {
                dev: meta.dev(),
                ino: meta.ino(),
                offset,
            },
        );
    }
    batch
}

/// The text fields that may quote a command line or a file's content:
/// redacted with the secret rules before they leave the machine.
const REDACTED: [&str; 3] = ["/summary", "/record/reason", "/skippedBecause"];

/// `line` with the secret rules (the built-in ones and the person's own
/// `[security]` rules) applied to its free-text fields.
pub fn redact(mut line: Value, rules: &crate::secrets::Rules) -> Value {
    for pointer in REDACTED {
        if let Some(field) = line.pointer_mut(pointer)
            && let Some(text) = field.as_str()
        {
            let clean = rules.redact(text);
            if clean != text {
                *field = Value::from(clean);
            }
        }
    }
    line
}

/// Nanoseconds since the epoch of `2026-12-01T19:30:00.000Z` (any number
/// of fraction digits); `None` for other text.
pub fn unix_nanos(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = t.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !t.ends_with('Z') {
        return None;
    }
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let frac = match b[19] {
        b'Z' => 0,
        b'.' => {
            let digits = &t[20..t.len() - 1];
            if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|c| c.is_ascii_digit())
            {
                return None;
            }
            format!("{digits:0<9}").parse::<u64>().ok()?
        }
        _ => return None,
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    u64::try_from(secs).ok().map(|s| s * 1_000_000_000 + frac)
}

/// `resource.v1.Resource` of this machine's records.
fn resource() -> Msg {
    let mut r = Msg::default();
    r.msg(1, &key_value("service.name", &any_str("keryx-hooks")));
    r.msg(
        1,
        &key_value("service.version", &any_str(env!("CARGO_PKG_VERSION"))),
    );
    if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        r.msg(1, &key_value("host.name", &any_str(h.trim())));
    }
    r
}

/// `common.v1.InstrumentationScope { name = 1; version = 2 }`.
fn scope() -> Msg {
    let mut s = Msg::default();
    s.str(1, "keryx-hooks").str(2, env!("CARGO_PKG_VERSION"));
    s
}

/// The attributes of one line: every field, nested objects flattened with
/// dots (`record.hookId`), arrays as arrays, nulls left out.
fn attributes(prefix: &str, v: &Value, out: &mut Msg) {
    let Value::Object(map) = v else { return };
    for (k, item) in map {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        if item.is_object() {
            attributes(&key, item, out);
        } else if let Some(value) = any_json(item) {
            out.msg(6, &key_value(&key, &value));
        }
    }
}

fn text<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |at, k| at.get(k))?.as_str()
}

/// `ExportLogsServiceRequest` for the lines: one `LogRecord` each
/// (`time_unix_nano` 1, `severity_number` 2, `severity_text` 3, `body` 5,
/// `attributes` 6, `observed_time_unix_nano` 11, `event_name` 12).
pub fn logs_request(lines: &[Value], observed: u64) -> Vec<u8> {
    let mut scope_logs = Msg::default();
    scope_logs.msg(1, &scope());
    for line in lines {
        let mut rec = Msg::default();
        if let Some(t) = text(line, &["time"]).and_then(unix_nanos) {
            rec.fixed64(1, t);
        }
        let outcome = text(line, &["record", "outcome"]).unwrap_or("none");
        let failed = line
            .get("record")
            .and_then(|r| r.get("failure"))
            .is_some_and(|f| !f.is_null());
        let (number, severity) = if failed {
            (17, "ERROR")
        } else if outcome == "deny" {
            (13, "WARN")
        } else {
            (9, "INFO")
        };
        rec.uint(2, number).str(3, severity);
        let mut body = format!(
            "{} {} {}",
            text(line, &["record", "hookId"]).unwrap_or("-"),
            text(line, &["record", "event"]).unwrap_or("-"),
            outcome
        );
        if let Some(reason) = text(line, &["record", "reason"]) {
            body.push_str(": ");
            body.push_str(reason);
        }
        rec.msg(5, &any_str(&body));
        attributes("", line, &mut rec);
        rec.fixed64(11, observed);
        rec.str(12, "keryx.hook_invocation");
        scope_logs.msg(2, &rec);
    }
    let mut resource_logs = Msg::default();
    resource_logs.msg(1, &resource()).msg(2, &scope_logs);
    let mut req = Msg::default();
    req.msg(1, &resource_logs);
    req.0
}

/// Per hook, event and host: how many runs and their durations.
#[derive(Debug, Default, Clone, Copy)]
struct Runs {
    count: u64,
    sum_ms: u64,
    min_ms: u64,
    max_ms: u64,
}

/// `ExportMetricsServiceRequest` for the lines' hook runs, as deltas over
/// the batch's time span: `keryx.hook.runs` (a monotonic `Sum`, field 7,
/// of integer points) and `keryx.hook.duration` (a `Histogram`, field 9,
/// in milliseconds, one bucket, with sum, min and max), one point per
/// hook id, event and host. `None` when no line is a hook run.
pub fn metrics_request(lines: &[Value]) -> Option<Vec<u8>> {
    let mut runs: BTreeMap<(String, String, String), Runs> = BTreeMap::new();
    let (mut start, mut end) = (u64::MAX, 0u64);
    for line in lines {
        let Some(hook) = text(line, &["record", "hookId"]) else {
            continue;
        };
        let key = (
            hook.to_owned(),
            text(line, &["record", "event"]).unwrap_or("").to_owned(),
            text(line, &["host"]).unwrap_or("").to_owned(),
        );
        let ms = line
            .get("record")
            .and_then(|r| r.get("durationMs"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let r = runs.entry(key).or_default();
        r.min_ms = if r.count == 0 { ms } else { r.min_ms.min(ms) };
        r.max_ms = r.max_ms.max(ms);
        r.count += 1;
        r.sum_ms += ms;
        if let Some(t) = text(line, &["time"]).and_then(unix_nanos) {
            start = start.min(t);
            end = end.max(t);
        }
    }
    if runs.is_empty() {
        return None;
    }
    if start > end {
        let now = now_nanos();
        (start, end) = (now, now);
    }
    let attrs = |(hook, event, host): &(String, String, String)| {
        vec![
            key_value("hook.id", &any_str(hook)),
            key_value("event", &any_str(event)),
            key_value("host", &any_str(host)),
        ]
    };
    let mut sum = Msg::default();
    let mut hist = Msg::default();
    for (key, r) in &runs {
        let mut p = Msg::default();
        p.fixed64(2, start).fixed64(3, end).fixed64(6, r.count);
        for a in attrs(key) {
            p.msg(7, &a);
        }
        sum.msg(1, &p);
        let mut h = Msg::default();
        h.fixed64(2, start)
            .fixed64(3, end)
            .fixed64(4, r.count)
            .double(5, r.sum_ms as f64)
            .packed_fixed64(6, &[r.count])
            .double(11, r.min_ms as f64)
            .double(12, r.max_ms as f64);
        for a in attrs(key) {
            h.msg(9, &a);
        }
        hist.msg(1, &h);
    }
    // AggregationTemporality DELTA = 1; Sum.is_monotonic = 3.
    sum.uint(2, 1).uint(3, 1);
    hist.uint(2, 1);
    let mut runs_metric = Msg::default();
    runs_metric
        .str(1, "keryx.hook.runs")
        .str(2, "Hook runs recorded by keryx-hooks")
        .str(3, "{run}")
        .msg(7, &sum);
    let mut duration_metric = Msg::default();
    duration_metric
        .str(1, "keryx.hook.duration")
        .str(2, "How long each hook run took")
        .str(3, "ms")
        .msg(9, &hist);
    let mut scope_metrics = Msg::default();
    scope_metrics
        .msg(1, &scope())
        .msg(2, &runs_metric)
        .msg(2, &duration_metric);
    let mut resource_metrics = Msg::default();
    resource_metrics.msg(1, &resource()).msg(2, &scope_metrics);
    let mut req = Msg::default();
    req.msg(1, &resource_metrics);
    Some(req.0)
}

pub fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// What came of sending one request.
#[derive(Debug)]
pub enum Sent {
    /// 2xx; with what the collector says it rejected, if anything.
    Accepted(Option<proto::PartialSuccess>),
    /// Worth trying again (no connection, 429, 502, 503, 504), after at
    /// least the delay the collector asked for.
    Retry {
        why: String,
        after: Option<Duration>,
    },
    /// Refused for good (any other status): sending it again changes nothing.
    Refused(String),
}

/// POSTs one request to `<endpoint><path>`.
pub fn send(s: &ExportSettings, path: &str, body: &[u8]) -> Sent {
    let answer = match http::post(&s.endpoint, path, &s.headers, body) {
        Ok(a) => a,
        Err(e) => {
            return Sent::Retry {
                why: format!("{}{path}: {e}", s.endpoint_text),
                after: None,
            };
        }
    };
    let detail = || {
        let body = String::from_utf8_lossy(&answer.body);
        let body = body.trim();
        let cut: String = body.chars().take(200).collect();
        format!(
            "{}{path} answered {}{}",
            s.endpoint_text,
            answer.status,
            if cut.is_empty() {
                String::new()
            } else {
                format!(": {}", escape(&cut))
            }
        )
    };
    match answer.status {
        200..=299 => match proto::partial_success(&answer.body) {
            Ok(p) => Sent::Accepted(p),
            Err(e) => Sent::Accepted(Some(proto::PartialSuccess {
                rejected: 0,
                message: format!("accepted, but {e}"),
            })),
        },
        429 | 502 | 503 | 504 => Sent::Retry {
            why: detail(),
            after: answer.retry_after.map(Duration::from_secs),
        },
        _ => Sent::Refused(detail()),
    }
}

/// How often and how long to try one request again.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Attempts after the first; `None` for as long as it takes.
    pub attempts: Option<u32>,
    pub first: Duration,
    pub max: Duration,
}

impl Retry {
    pub fn delay(&self, attempt: u32, asked: Option<Duration>) -> Duration {
        let backoff = self
            .first
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max);
        asked.map_or(backoff, |a| {
            a.min(self.max.max(Duration::from_secs(60))).max(backoff)
        })
    }
}

/// What one pass of the exporter did.
#[derive(Debug, Default)]
pub struct Shipped {
    pub records: usize,
    pub batches: usize,
    pub skipped: usize,
    /// Log records the collector said it rejected (partial success).
    pub rejected: i64,
    /// Metric data points it said it rejected.
    pub rejected_points: i64,
}

/// Why a pass stopped before shipping everything.
#[derive(Debug)]
pub struct Stopped {
    pub why: String,
    /// What was shipped before it stopped.
    pub shipped: Shipped,
}

/// Sends one request until it is accepted or the retries run out;
/// `report` hears each failed attempt.
fn deliver(
    s: &ExportSettings,
    path: &str,
    body: &[u8],
    retry: Retry,
    report: &mut dyn FnMut(&str),
) -> Result<Option<proto::PartialSuccess>, String> {
    let mut attempt = 0u32;
    loop {
        let (why, after) = match send(s, path, body) {
            Sent::Accepted(p) => return Ok(p),
            Sent::Refused(why) if retry.attempts.is_some() => {
                return Err(format!("the collector refused the batch: {why}"));
            }
            Sent::Refused(why) => (why, Some(retry.max)),
            Sent::Retry { why, after } => (why, after),
        };
        if retry.attempts.is_some_and(|n| attempt >= n) {
            return Err(format!(
                "the collector did not accept the batch after {} attempt(s): {why}",
                attempt + 1
            ));
        }
        let wait = retry.delay(attempt, after);
        report(&format!(
            "{why}; trying again in {:.1}s",
            wait.as_secs_f64()
        ));
        std::thread::sleep(wait);
        attempt += 1;
    }
}

/// Ships every record past the cursor, a batch at a time, and returns
/// what it shipped; stops at the first batch the collector does not take.
pub fn ship(
    s: &ExportSettings,
    sessions: &Path,
    store: &Store,
    batch_size: usize,
    rules: &crate::secrets::Rules,
    retry: Retry,
    report: &mut dyn FnMut(&str),
) -> Result<Shipped, Stopped> {
    let mut shipped = Shipped::default();
    let stop = |why: String, shipped: Shipped| Stopped { why, shipped };
    let mut cursor = match store.load() {
        Ok(c) => c,
        Err(why) => return Err(stop(why, shipped)),
    };
    loop {
        if let Some(hex) = cursor.pending_metrics.clone() {
            let body = unhex(&hex).unwrap_or_default();
            match deliver(s, "/v1/metrics", &body, retry, report) {
                Ok(p) => note_partial(p, "data point(s)", &mut shipped.rejected_points, report),
                Err(why) => return Err(stop(why, shipped)),
            }
            cursor.pending_metrics = None;
            if let Err(why) = store.save(&cursor) {
                return Err(stop(why, shipped));
            }
        }
        let mut next = cursor.clone();
        let batch = read_batch(sessions, &mut next, batch_size);
        shipped.skipped += batch.skipped;
        if batch.skipped > 0 {
            report(&format!(
                "{} line(s) of records.jsonl are not JSON records and were skipped",
                batch.skipped
            ));
        }
        next.files.extend(batch.advance.clone());
        if batch.lines.is_empty() {
            if next != cursor
                && let Err(why) = store.save(&next)
            {
                return Err(stop(why, shipped));
            }
            return Ok(shipped);
        }
        let lines: Vec<Value> = batch.lines.into_iter().map(|l| redact(l, rules)).collect();
        let body = logs_request(&lines, now_nanos());
        match deliver(s, "/v1/logs", &body, retry, report) {
            Ok(p) => note_partial(p, "log record(s)", &mut shipped.rejected, report),
            Err(why) => return Err(stop(why, shipped)),
        }
        next.pending_metrics = metrics_request(&lines).map(|m| hex(&m));
        if let Err(why) = store.save(&next) {
            return Err(stop(why, shipped));
        }
        cursor = next;
        shipped.records += lines.len();
        shipped.batches += 1;
    }
}

fn note_partial(
    p: Option<proto::PartialSuccess>,
    what: &str,
    rejected: &mut i64,
    report: &mut dyn FnMut(&str),
) {
    // OTLP: a partial success is accepted; what it rejected is not to be
    // sent again.
    if let Some(p) = p {
        *rejected += p.rejected;
        report(&format!(
            "the collector accepted the batch but rejected {} {what}{}",
            p.rejected,
            if p.message.is_empty() {
                String::new()
            } else {
                format!(": {}", escape(&p.message))
            }
        ));
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_times_are_unix_nanoseconds() {
        assert_eq!(unix_nanos("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            unix_nanos("2026-12-01T19:30:00.250Z"),
            Some(1_796_153_400_250_000_000)
        );
        assert_eq!(
            unix_nanos("2000-03-01T00:00:01Z"),
            Some(951_868_801_000_000_000)
        );
        assert_eq!(unix_nanos("2026-13-01T00:00:00Z"), None);
        assert_eq!(unix_nanos("yesterday"), None);
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(
            unhex(&hex(&[0, 1, 0xfe, 0xff])).unwrap(),
            [0, 1, 0xfe, 0xff]
        );
    }

    #[test]
    fn a_batch_stops_at_a_partial_line_and_a_replaced_file_starts_over() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path().join("codex-s1");
        std::fs::create_dir_all(&s).unwrap();
        let f = s.join("records.jsonl");
        std::fs::write(&f, "{\"a\":1}\nnot json\n{\"a\":2}\n{\"a\":").unwrap();
        let mut c = Cursor::default();
        let b = read_batch(d.path(), &mut c, 10);
        assert_eq!(b.lines.len(), 2);
        assert_eq!(b.skipped, 1);
        assert_eq!(b.lines[0]["host"], "codex");
        assert_eq!(b.lines[0]["sessionId"], "s1");
        c.files.extend(b.advance);
        assert_eq!(c.files["codex-s1"].offset, 25);
        assert!(read_batch(d.path(), &mut c.clone(), 10).lines.is_empty());
        std::fs::remove_file(&f).unwrap();
        std::fs::write(&f, "{\"a\":3}\n").unwrap();
        let b = read_batch(d.path(), &mut c, 10);
        assert_eq!(
            b.lines.len(),
            1,
            "a new file under the old name is read from its start"
        );
    }

    #[test]
    fn reasons_and_summaries_are_redacted() {
        // Built at run time, so this file holds no key-shaped literal.
        let key = format!("AKIA{}", "IOSFODNN7EXAMPL2");
        let line = serde_json::json!({
            "summary": format!("aws --key {key}"),
            "record": {"reason": format!("saw {key}"), "hookId": "h"}
        });
        let out = redact(line, crate::secrets::builtin_rules()).to_string();
        assert!(!out.contains(&key), "{out}");
        assert!(out.contains("REDACTED"), "{out}");
    }
}
