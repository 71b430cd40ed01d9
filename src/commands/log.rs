//! `keryx-hooks log`: what the hooks decided, and why, across every
//! session's `records.jsonl` (newest last). Filters by time, session, host,
//! project, hook and denial; prints a table, or with `--json` the records
//! themselves as JSON lines. Lines written before a field existed still
//! show, with `-` where it is missing; a line that is not JSON is skipped
//! and counted on stderr.

use crate::error::ExitStatus;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::cli::LogArgs;
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::output;
use crate::session::records::StoredRecord;

/// Widest a table cell is shown; longer text is cut with `…`.
const TOOL_WIDTH: usize = 48;
const REASON_WIDTH: usize = 100;

/// What to keep.
#[derive(Debug, Default)]
pub struct Filter {
    /// RFC 3339 time; records before it (or without a time) are left out.
    pub since: Option<String>,
    pub session: Option<String>,
    pub host: Option<String>,
    pub project: Option<PathBuf>,
    pub hook: Option<String>,
    pub deny: bool,
}

impl Filter {
    fn keeps(&self, r: &StoredRecord) -> bool {
        if let Some(since) = &self.since
            && r.time.as_deref().is_none_or(|t| t < since.as_str())
        {
            return false;
        }
        if self
            .session
            .as_deref()
            .is_some_and(|w| r.session_id.as_deref() != Some(w))
        {
            return false;
        }
        if self
            .host
            .as_deref()
            .is_some_and(|w| r.host.as_deref() != Some(w))
        {
            return false;
        }
        if let Some(p) = &self.project
            && r.project_root
                .as_deref()
                .is_none_or(|root| !Path::new(root).starts_with(p))
        {
            return false;
        }
        if self
            .hook
            .as_deref()
            .is_some_and(|w| r.record.hook_id.as_deref() != Some(w))
        {
            return false;
        }
        if self.deny && r.record.outcome.as_deref() != Some("deny") {
            return false;
        }
        true
    }
}

/// One line of a `records.jsonl`: the record, and the line as written
/// (with the host and session its directory names filled in), which
/// `--json` prints as it is.
#[derive(Debug, Clone)]
pub struct Line {
    pub record: StoredRecord,
    pub json: Value,
}

impl Line {
    /// `None` when `json` is not a record (not a JSON object).
    pub fn of(json: Value) -> Option<Line> {
        Some(Line {
            record: StoredRecord::of(&json)?,
            json,
        })
    }
}

pub fn run(args: &LogArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let now = SystemTime::now();
    let filter = Filter {
        since: args
            .since
            .as_deref()
            .map(|s| parse_since(s, now))
            .transpose()
            .map_err(|e| CommandError::user(e.to_string()))?,
        session: args.session.clone(),
        host: args
            .host
            .as_deref()
            .map(|h| super::resolve_host(h).map(|a| a.name().to_owned()))
            .transpose()?,
        project: args.project.as_ref().map(|p| {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            std::fs::canonicalize(&abs).unwrap_or(abs)
        }),
        hook: args.hook.clone(),
        deny: args.deny,
    };
    let sessions = loc.sessions_dir();
    let mut offsets = Offsets::new();
    let (records, bad) = read_new(&sessions, &mut offsets);
    if bad > 0 {
        output::err_line(&format!(
            "warning: {bad} line(s) of records.jsonl are not JSON records and were skipped"
        ));
    }
    let kept = select(records, &filter, args.lines);
    if args.json {
        for r in &kept {
            output::line(&r.json.to_string());
        }
    } else if kept.is_empty() {
        output::line("no records match");
    } else {
        output::stdout(&render(&kept));
    }
    if args.follow {
        follow(&sessions, &filter, args.json, &mut offsets);
    }
    Ok(ExitStatus::Success)
}

/// How far each `records.jsonl` has been read.
type Offsets = std::collections::HashMap<PathBuf, u64>;

/// `--follow`: every half second, the records appended since, as they
/// come; until stdout closes or the command is interrupted.
fn follow(sessions: &Path, filter: &Filter, json: bool, offsets: &mut Offsets) {
    use std::io::Write;
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let (records, _) = read_new(sessions, offsets);
        let kept = select(records, filter, 0);
        if kept.is_empty() {
            continue;
        }
        let text = if json {
            kept.iter().map(|r| format!("{}\n", r.json)).collect()
        } else {
            rows_text(&kept, false)
        };
        let mut out = std::io::stdout().lock();
        if out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}

/// `--since`: `30m`, `1h`, `2d` before `now`, a date (`2026-12-01`, its
/// start in UTC) or an RFC 3339 UTC time; as the RFC 3339 text records
/// carry, which compares in time order.
pub fn parse_since(s: &str, now: SystemTime) -> Result<String, BadSince> {
    let bad = || BadSince {
        given: s.to_owned(),
    };
    let s = s.trim();
    if let Some(unit) = s.chars().last().filter(|c| "smhd".contains(*c)) {
        let n: u64 = s[..s.len() - 1].parse().map_err(|_| bad())?;
        let secs = match unit {
            's' => n,
            'm' => n * 60,
            'h' => n * 3600,
            _ => n * 86_400,
        };
        let at = now
            .checked_sub(Duration::from_secs(secs))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        return Ok(crate::base::time::rfc3339(at));
    }
    let b = s.as_bytes();
    let date = b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    if !date {
        return Err(bad());
    }
    if b.len() == 10 {
        return Ok(format!("{s}T00:00:00.000Z"));
    }
    if b[10] == b'T' && s.ends_with('Z') && s.is_ascii() {
        return Ok(s.to_owned());
    }
    Err(bad())
}

/// A `--since` that is neither a duration nor a date.
#[derive(Debug, thiserror::Error)]
#[error(
    "`--since {}`: expected a duration such as `30m`, `1h` or `2d`, or a date such as `2026-12-01`",
    escape(given)
)]
pub struct BadSince {
    given: String,
}

/// Every record under `sessions`, and how many lines were not records.
/// The host and session of a line written before they were recorded come
/// from its directory's name.
pub fn read_all(sessions: &Path) -> (Vec<Line>, usize) {
    read_new(sessions, &mut Offsets::new())
}

/// Like [`read_all`], only the complete lines past each file's offset,
/// which then moves past them.
fn read_new(sessions: &Path, offsets: &mut Offsets) -> (Vec<Line>, usize) {
    let mut out = Vec::new();
    let mut bad = 0;
    let Ok(dirs) = std::fs::read_dir(sessions) else {
        return (out, 0);
    };
    for d in dirs.flatten() {
        let path = d.path().join("records.jsonl");
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let from = offsets.get(&path).copied().unwrap_or(0) as usize;
        // A file shorter than its offset was replaced: read it again.
        let from = if from > bytes.len() { 0 } else { from };
        let Some(end) = bytes[from..].iter().rposition(|b| *b == b'\n') else {
            continue;
        };
        let end = from + end + 1;
        offsets.insert(path, end as u64);
        let text = String::from_utf8_lossy(&bytes[from..end]);
        let name = d.file_name().to_string_lossy().into_owned();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let line = serde_json::from_str::<Value>(line).ok().and_then(|mut v| {
                crate::session::records::fill_from_dir(&mut v, &name);
                Line::of(v)
            });
            match line {
                Some(line) => out.push(line),
                None => bad += 1,
            }
        }
    }
    (out, bad)
}

/// The records `filter` keeps, oldest first, the last `n` of them (all
/// with 0). Records without a time sort first.
pub fn select(mut records: Vec<Line>, filter: &Filter, n: usize) -> Vec<Line> {
    records.retain(|r| filter.keeps(&r.record));
    records.sort_by(|a, b| {
        let t = |r: &Line| r.record.time.clone().unwrap_or_default();
        t(a).cmp(&t(b))
    });
    if n > 0 && records.len() > n {
        records.drain(..records.len() - n);
    }
    records
}

/// `s` escaped, on one line, cut to `width` characters.
fn cell(s: &str, width: usize) -> String {
    let one = s.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    let e = escape(&one);
    if e.chars().count() <= width {
        return e;
    }
    let mut cut: String = e.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The table: one row per record, columns padded to their widest cell.
pub fn render(records: &[Line]) -> String {
    rows_text(records, true)
}

fn rows_text(records: &[Line], header: bool) -> String {
    let dash = |o: Option<&str>| o.unwrap_or("-").to_owned();
    let mut rows: Vec<[String; 8]> = vec![[
        "TIME".into(),
        "HOST".into(),
        "PROJECT".into(),
        "EVENT".into(),
        "TOOL".into(),
        "HOOK".into(),
        "OUTCOME".into(),
        "REASON".into(),
    ]];
    for Line { record: r, .. } in records {
        let inv = &r.record;
        let time = r.time.as_deref().map_or("-".to_owned(), |t| {
            t.get(..19).unwrap_or(t).replacen('T', " ", 1)
        });
        let project = r.project_root.as_deref().map(|p| {
            Path::new(p)
                .file_name()
                .map_or_else(|| p.to_owned(), |n| n.to_string_lossy().into_owned())
        });
        let tool = match (r.tool.as_deref(), r.summary.as_deref()) {
            (Some(t), Some(sum)) => format!("{t} {sum}"),
            (Some(t), None) => t.to_owned(),
            (None, _) => "-".to_owned(),
        };
        let kind = r.kind.as_deref().unwrap_or("hook");
        let mut outcome = if kind == "skipped" {
            "skipped".to_owned()
        } else {
            dash(inv.outcome.as_deref())
        };
        if let Some(f) = &inv.failure {
            outcome.push_str(&format!(" ({f})"));
        }
        if !matches!(kind, "hook" | "skipped") {
            outcome.push_str(&format!(" [{kind}]"));
        }
        let reason = inv.reason.as_deref().or(r.skipped_because.as_deref());
        rows.push([
            time,
            cell(&dash(r.host.as_deref()), 20),
            cell(&dash(project.as_deref()), 24),
            cell(&dash(inv.event.as_deref()), 20),
            cell(&tool, TOOL_WIDTH),
            cell(&dash(inv.hook_id.as_deref()), 32),
            cell(&outcome, 40),
            cell(&dash(reason), REASON_WIDTH),
        ]);
    }
    let mut widths = [0usize; 8];
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows.iter().skip(usize::from(!header)) {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(c);
            } else {
                line.push_str(c);
                line.extend(std::iter::repeat_n(' ', widths[i] - c.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../tests/fixtures/records/records.jsonl");

    fn fixture() -> Vec<Line> {
        FIXTURE
            .lines()
            .map(|l| Line::of(serde_json::from_str(l).unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn the_table_shows_each_record_on_one_escaped_line() {
        let all = select(fixture(), &Filter::default(), 50);
        insta::assert_snapshot!(render(&all));
    }

    #[test]
    fn filters_keep_what_they_name() {
        let count = |f: Filter| select(fixture(), &f, 0).len();
        let all = count(Filter::default());
        assert_eq!(all, FIXTURE.lines().count());
        assert_eq!(
            count(Filter {
                deny: true,
                ..Filter::default()
            }),
            2
        );
        assert_eq!(
            count(Filter {
                since: Some("2026-12-01T20:00:00.000Z".into()),
                ..Filter::default()
            }),
            4
        );
        assert_eq!(
            count(Filter {
                hook: Some("ctx-guard".into()),
                ..Filter::default()
            }),
            1
        );
        assert_eq!(
            count(Filter {
                host: Some("codex".into()),
                ..Filter::default()
            }),
            1
        );
        assert_eq!(
            count(Filter {
                project: Some("/home/u/work".into()),
                ..Filter::default()
            }),
            4
        );
        let last = select(fixture(), &Filter::default(), 2);
        assert_eq!(last.len(), 2);
        assert_eq!(last[1].json["time"], "2026-12-01T21:05:00.000Z");
    }

    #[test]
    fn since_reads_durations_dates_and_times() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_157_667);
        assert_eq!(parse_since("1h", now).unwrap(), "2026-12-01T19:41:07.000Z");
        assert_eq!(parse_since("30m", now).unwrap(), "2026-12-01T20:11:07.000Z");
        assert_eq!(parse_since("2d", now).unwrap(), "2026-11-29T20:41:07.000Z");
        assert_eq!(
            parse_since("2026-12-01", now).unwrap(),
            "2026-12-01T00:00:00.000Z"
        );
        assert_eq!(
            parse_since("2026-12-01T10:00:00Z", now).unwrap(),
            "2026-12-01T10:00:00Z"
        );
        for bad in ["", "h", "yesterday", "1y", "2026-1-01", "2026-12-01 10:00"] {
            assert!(parse_since(bad, now).is_err(), "{bad}");
        }
    }

    /// A line from an older version (no `kind`, `time` or `host`) and one
    /// from a later one (a field and an outcome this version does not
    /// know, a field in another shape) are both listed; `--json` prints
    /// each line as it was written.
    #[test]
    fn lines_of_other_versions_are_listed_as_they_are() {
        let old = r#"{"type":"hook_invocation","correlationId":"c","runId":"r","artifactRef":null,"record":{"hookId":"old","event":"Stop","class":"observe","scope":"user","outcome":"none","durationMs":1,"changedOutcome":false}}"#;
        let later = r#"{"type":"hook_invocation","schemaVersion":2,"kind":"hook","time":"2026-12-02T08:00:00.000Z","host":"codex","sessionId":"s9","projectRoot":7,"tool":"Bash","summary":"ls","record":{"hookId":"new","event":"PreToolUse","outcome":"defer","durationMs":"3 ms","budget":{"ms":5}},"addedLater":[1,2]}"#;
        let lines: Vec<Line> = [old, later]
            .iter()
            .map(|l| Line::of(serde_json::from_str(l).unwrap()).unwrap())
            .collect();
        let kept = select(lines, &Filter::default(), 0);
        assert_eq!(kept.len(), 2);
        let table = render(&kept);
        assert!(table.contains("old") && table.contains("none"), "{table}");
        let row = table.lines().find(|l| l.contains("new")).unwrap();
        assert!(row.contains("codex") && row.contains("defer"), "{row}");
        assert_eq!(kept[1].json.to_string(), later);
        assert_eq!(
            select(
                kept,
                &Filter {
                    hook: Some("new".into()),
                    ..Filter::default()
                },
                0
            )
            .len(),
            1
        );
    }

    #[test]
    fn old_lines_take_host_and_session_from_their_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("claude-code-abc-1");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("records.jsonl"),
            "{\"type\":\"hook_invocation\",\"correlationId\":\"c\",\"runId\":\"r\",\"artifactRef\":null,\"record\":{\"hookId\":\"h\",\"event\":\"Stop\",\"class\":\"observe\",\"scope\":\"user\",\"outcome\":\"none\",\"durationMs\":1,\"changedOutcome\":false}}\nnot json\n",
        )
        .unwrap();
        let (records, bad) = read_all(tmp.path());
        assert_eq!(bad, 1);
        assert_eq!(records[0].record.host.as_deref(), Some("claude-code"));
        assert_eq!(records[0].json["sessionId"], "abc-1");
        assert!(render(&records).contains("claude-code"));
    }
}
