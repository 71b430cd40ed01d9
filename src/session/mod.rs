//! Per-session state on disk. A host runs one process per event, so nothing
//! survives in memory: run ids, the first-edit set, the Stop-loop counter,
//! answers already given (de-duplication) and the record stream live under
//! `$XDG_STATE_HOME/keryx/sessions/<host>-<session>/`, guarded by a lock;
//! de-duplication answers in [`calls`].

pub mod calls;
pub mod records;

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::runtime::types::{HookInvocationRecord, RecordContext, RecordEntry, RecordKind};

/// Sessions untouched for this long are pruned.
pub const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// Remembered first edits.
const MAX_FIRST_EDITS: usize = 10_000;
/// Remembered files the agent wrote.
const MAX_WRITTEN: usize = 2_000;
/// How long the shim waits for a lock it shares with other processes (the
/// session lock, the de-duplication slots). Every holder keeps them for
/// microseconds, so a lock still held after this is held by something
/// else: a background job, a hook, another user's process. The shim then
/// answers as a broken shim does instead of waiting on: a host that times
/// the hook out runs the tool ungated (Claude Code does), and the shortest
/// host timeout keryx installs is well above this.
pub const LOCK_WAIT: Duration = Duration::from_secs(2);
pub use crate::base::fs::{DIR_MODE, FILE_MODE, create_private_dir};

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct State {
    /// Deterministic per-session sequence for correlation ids.
    pub seq: u64,
    /// The current run id (the host's turn id, or our own).
    pub run_id: Option<String>,
    pub first_edits: Vec<String>,
    /// Consecutive Stop blocks in the current run.
    pub stop_blocks: u32,
    /// The files the agent wrote in this session (resolved paths, oldest
    /// first): a script among them that a command then runs was written by
    /// the agent, not by a person.
    pub written: Vec<String>,
}

/// The answer given to one tool call, repeated to its later deliveries.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Delivered {
    /// The first delivery is still running.
    pub pending: bool,
    pub outcome: String,
    pub reason: Option<String>,
    pub additional_context: Option<String>,
}

impl State {
    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// True the first time `path` is seen in this session (and remembers it).
    pub fn first_edit(&mut self, path: &str) -> bool {
        if self.first_edits.iter().any(|p| p == path) {
            return false;
        }
        if self.first_edits.len() >= MAX_FIRST_EDITS {
            self.first_edits.remove(0);
        }
        self.first_edits.push(path.to_owned());
        true
    }

    /// Remembers that the agent wrote `path` (once; the oldest is forgotten
    /// past [`MAX_WRITTEN`]).
    pub fn wrote(&mut self, path: &str) {
        if self.written.iter().any(|p| p == path) {
            return;
        }
        if self.written.len() >= MAX_WRITTEN {
            self.written.remove(0);
        }
        self.written.push(path.to_owned());
    }
}

/// One session's directory; created by the first write into it.
pub struct Session {
    dir: PathBuf,
}

/// Holds the session lock (an `flock` on `lock`); the state is read and
/// written back through one descriptor of `state.json` ([`Locked::save`]).
pub struct Locked {
    _lock: File,
    file: File,
    /// How long `state.json` is: a save shorter than this truncates the
    /// rest; one as long or longer needs no truncate.
    file_len: u64,
    pub state: State,
}

impl Session {
    pub fn at(dir: PathBuf) -> Session {
        Session { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the session lock and reads the state. A corrupt state file is
    /// replaced by a fresh state rather than failing the event.
    pub fn lock(&self) -> std::io::Result<Locked> {
        let mut opts = OpenOptions::new();
        opts.read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(FILE_MODE);
        let lock = open_in(&self.dir, "lock", &opts)?;
        lock_within(&lock, LOCK_WAIT)?;
        let file = opts.open(self.dir.join("state.json"))?;
        let bytes = read_all(&file);
        let state = serde_json::from_slice(&bytes).ok().unwrap_or_default();
        Ok(Locked {
            _lock: lock,
            file,
            file_len: bytes.len() as u64,
            state,
        })
    }

    /// Appends `hook_invocation` entries to `records.jsonl`, one line each,
    /// in one `O_APPEND` write: concurrent appenders never interleave or
    /// overwrite each other's lines, so this needs no lock.
    pub fn append_records(
        &self,
        ctx: &RecordContext,
        entries: &[RecordEntry],
        correlation: &str,
        run_id: &str,
    ) -> std::io::Result<()> {
        append_records(&self.dir, ctx, entries, correlation, run_id)
    }
}

impl Locked {
    /// Rewrites the state in one write, in place, while still locked. Every
    /// reader takes the same lock first, so nobody sees a half-written
    /// file; after a crash mid-write the file is read back as a fresh
    /// state (one duplicate delivery re-evaluated at worst). No temp file,
    /// no fsync: this runs on every tool call and durability buys nothing
    /// for per-session bookkeeping.
    pub fn save(&mut self) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(&self.state)?;
        self.file.write_all_at(&bytes, 0)?;
        // The state mostly grows (its sequence number does): a truncate to
        // the same length would still cost a journalled inode update.
        let len = bytes.len() as u64;
        if len < self.file_len {
            self.file.set_len(len)?;
        }
        self.file_len = len;
        Ok(())
    }
}

/// Opens `dir/name`, making `dir` (and its missing parents, [`DIR_MODE`])
/// first only when it is missing: the directory exists on every event but a
/// session's first, so the common case costs one `open`.
pub(crate) fn open_in(dir: &Path, name: &str, opts: &OpenOptions) -> std::io::Result<File> {
    let path = dir.join(name);
    match opts.open(&path) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            create_private_dir(dir)?;
            opts.open(&path)
        }
        r => r,
    }
}

/// Why a lock was not taken: [`LOCK_WAIT`] passed with someone else still
/// holding it.
pub fn lock_timed_out(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::TimedOut
}

/// Takes the exclusive `flock` of `file`, polling without blocking until
/// `wait` has passed; then fails with [`ErrorKind::TimedOut`]. A blocking
/// `flock` would wait as long as any other holder likes, a shared lock
/// taken on a read-only descriptor included.
pub fn lock_within(file: &File, wait: Duration) -> std::io::Result<()> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::Error(e)) => return Err(e),
            Err(TryLockError::WouldBlock) => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(std::io::Error::new(
                ErrorKind::TimedOut,
                format!(
                    "a lock is still held by another process after {} s",
                    wait.as_secs_f32()
                ),
            ));
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The whole file, read from its start with `pread` (a file rewritten in
/// place: its length is whatever the last writer left). A read error ends
/// it early.
pub(crate) fn read_all(file: &File) -> Vec<u8> {
    let mut buf = vec![0; 1024];
    let mut len = 0;
    loop {
        match read_at(file, &mut buf[len..], len as u64) {
            Ok(n) if len + n == buf.len() => {
                len += n;
                buf.resize(len * 2, 0);
            }
            Ok(n) => {
                len += n;
                break;
            }
            Err(_) => break,
        }
    }
    buf.truncate(len);
    buf
}

/// Fills `buf` from `offset` with `pread`, stopping early only at the end
/// of the file; how many bytes it read.
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut len = 0;
    while len < buf.len() {
        match file.read_at(&mut buf[len..], offset + len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(len)
}

/// How long ago `t` was (zero for a time in the future).
fn age(t: SystemTime) -> Duration {
    SystemTime::now().duration_since(t).unwrap_or_default()
}

/// Version of the `records.jsonl` line shape
/// (`schema/hook-record.schema.json`): fields are only ever added.
pub const RECORD_SCHEMA_VERSION: u32 = 1;
/// A record's `reason` is kept to this many bytes.
pub const MAX_RECORD_REASON_BYTES: usize = 500;
/// A call's summary is kept to this many characters.
pub const MAX_SUMMARY_CHARS: usize = 120;

/// A short summary of a tool call for its records: the command's first
/// line or the path it touches, with every secret the built-in rules know
/// redacted, then cut to [`MAX_SUMMARY_CHARS`]. Redacted before it is cut,
/// so a cut never leaves part of a secret behind.
pub fn call_summary(input: &crate::runtime::types::EventInput) -> Option<String> {
    use serde_json::Value;
    let ti = input.tool_input()?;
    let (text, more) = match ti.get("command").and_then(Value::as_str) {
        Some(c) => {
            let mut lines = c.trim().lines();
            let first = lines.next().unwrap_or("").trim();
            (first, lines.next().is_some())
        }
        None => {
            let keys = [
                "file_path",
                "filePath",
                "path",
                "notebook_path",
                "url",
                "pattern",
                "query",
            ];
            let found = keys
                .iter()
                .find_map(|k| ti.get(*k).and_then(Value::as_str))?;
            (found, false)
        }
    };
    if text.is_empty() {
        return None;
    }
    let redacted = if may_hold_secret(text) {
        crate::secrets::builtin_rules().redact(text)
    } else {
        text.to_owned()
    };
    let mut out: String = redacted.chars().take(MAX_SUMMARY_CHARS).collect();
    if more || out.len() < redacted.len() {
        out.push('…');
    }
    Some(out)
}

// The built-in rules' keywords, listed by build.rs: `SECRET_KEYWORDS`, and
// by first byte, `SECRET_KEYWORDS_BY_FIRST`, and the byte pairs they start
// with, `SECRET_KEYWORD_PAIRS`.
include!(concat!(env!("OUT_DIR"), "/secret_keywords.rs"));

/// Every rule's keywords, lowercased as the scanner matches them, each
/// once. A table made at build time: reading them out of the rules file
/// cost a sixth of a Read call's instructions.
#[cfg(test)]
fn secret_keywords() -> impl Iterator<Item = &'static str> {
    SECRET_KEYWORDS.iter().copied()
}

/// Whether a built-in rule could find anything in `text`. The scanner runs
/// a rule only when one of its keywords is in the text, the one rule
/// without keywords (`aws-access-key-id`) needs 20 capitals and digits in
/// a row, every rule's secret is a run of 8 or more token
/// characters unless an `@` carries it (a URL or DSN password), and the
/// hidden-instruction characters are not ASCII: text this says no to comes
/// out of `redact` unchanged, without compiling the rules (which costs
/// more than the whole gated call). `git add .` never gets that far.
pub(crate) fn may_hold_secret(text: &str) -> bool {
    if !text.is_ascii() {
        return true;
    }
    let token = |b: u8| b.is_ascii_alphanumeric() || b"+/=_.~%-".contains(&b);
    let (mut upper, mut run, mut longest) = (0, 0, 0);
    for b in text.bytes() {
        // The keyword-less AWS key id is 20 capitals and digits in a row
        // (a four-letter prefix and 16 of `A-Z2-7`); counted over the
        // capitals and all digits, so a lowercase id never counts.
        upper = if b.is_ascii_uppercase() || b.is_ascii_digit() {
            upper + 1
        } else {
            0
        };
        if upper >= 20 {
            return true;
        }
        run = if token(b) { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    if longest < 8 && !text.contains('@') {
        return false;
    }
    holds_secret_keyword(text.as_bytes())
}

/// Whether an ASCII `text` holds a built-in keyword, in any case: one pass,
/// trying at each byte only the keywords that start with it and its
/// successor (every keyword has two bytes or more).
fn holds_secret_keyword(text: &[u8]) -> bool {
    let lower = |b: u8| usize::from(b.to_ascii_lowercase() & 0x7f);
    (0..text.len().saturating_sub(1)).any(|i| {
        let rest = &text[i..];
        let first = lower(rest[0]);
        SECRET_KEYWORD_PAIRS[first] & (1u128 << lower(rest[1])) != 0
            && SECRET_KEYWORDS_BY_FIRST[first].iter().any(|k| {
                rest.get(..k.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(k.as_bytes()))
            })
    })
}

fn append_records(
    dir: &Path,
    ctx: &RecordContext,
    entries: &[RecordEntry],
    correlation: &str,
    run_id: &str,
) -> std::io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    /// One line of `records.jsonl`, written straight from its parts.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Line<'a> {
        #[serde(rename = "type")]
        line_type: &'static str,
        schema_version: u32,
        kind: RecordKind,
        time: &'a str,
        host: &'a str,
        session_id: &'a str,
        correlation_id: &'a str,
        run_id: &'a str,
        artifact_ref: Option<()>,
        project_root: Option<&'a str>,
        tool: Option<&'a str>,
        summary: Option<&'a str>,
        record: &'a HookInvocationRecord,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        anomalies: &'a [crate::runtime::types::Anomaly],
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped_because: Option<&'a str>,
    }
    let time = crate::base::time::rfc3339(SystemTime::now());
    let mut buf = Vec::new();
    for entry in entries {
        let mut record = entry.record.clone();
        if let Some(r) = &record.reason {
            record.reason = Some(crate::base::text::cap(r, MAX_RECORD_REASON_BYTES));
        }
        let line = Line {
            line_type: "hook_invocation",
            schema_version: RECORD_SCHEMA_VERSION,
            kind: entry.kind,
            time: &time,
            host: &ctx.host,
            session_id: &ctx.session_id,
            correlation_id: correlation,
            run_id,
            artifact_ref: None,
            project_root: ctx.project_root.as_deref(),
            tool: ctx.tool.as_deref(),
            summary: ctx.summary.as_deref(),
            record: &record,
            anomalies: &entry.anomalies,
            skipped_because: entry.skipped_because.as_deref(),
        };
        serde_json::to_writer(&mut buf, &line)?;
        buf.push(b'\n');
    }
    let mut opts = OpenOptions::new();
    opts.create(true).append(true).mode(FILE_MODE);
    open_in(dir, "records.jsonl", &opts)?.write_all(&buf)
}

/// Removes session directories not modified for [`MAX_AGE`]. Best effort.
pub fn prune(sessions_dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(sessions_dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let stale = e
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| age(t) > MAX_AGE);
        if stale
            && e.file_type().is_ok_and(|t| t.is_dir())
            && std::fs::remove_dir_all(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn concurrent_appends_keep_every_line() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        std::thread::scope(|s| {
            for t in 0..16 {
                let dir = dir.clone();
                s.spawn(move || {
                    let session = Session::at(dir);
                    let mut l = session.lock().unwrap();
                    let seq = l.state.next_seq();
                    let rec = HookInvocationRecord {
                        hook_id: format!("h{t}"),
                        event: "Stop",
                        class: crate::config::model::HookClass::Observe,
                        scope: crate::config::model::Scope::User,
                        outcome: crate::runtime::types::Outcome::None,
                        failure: None,
                        reason: None,
                        duration_ms: 1,
                        changed_outcome: false,
                        exit_code: Some(0),
                    };
                    let entry = RecordEntry {
                        kind: RecordKind::Hook,
                        record: rec,
                        anomalies: Vec::new(),
                        skipped_because: None,
                    };
                    session
                        .append_records(&RecordContext::default(), &[entry], &seq.to_string(), "r")
                        .unwrap();
                    l.save().unwrap();
                });
            }
        });
        let text = std::fs::read_to_string(dir.join("records.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 16);
        for line in text.lines() {
            serde_json::from_str::<Value>(line).unwrap();
        }
        let state: State =
            serde_json::from_slice(&std::fs::read(dir.join("state.json")).unwrap()).unwrap();
        assert_eq!(state.seq, 16);
    }

    #[test]
    fn a_shorter_state_leaves_no_tail_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let session = Session::at(tmp.path().join("s"));
        let read_back = || -> State {
            serde_json::from_slice(&std::fs::read(tmp.path().join("s/state.json")).unwrap())
                .unwrap()
        };
        let long = "r".repeat(200);

        // Within one lock: long, then shorter, then longer again.
        let mut l = session.lock().unwrap();
        l.state.run_id = Some(long.clone());
        l.save().unwrap();
        l.state.run_id = Some("short".into());
        l.save().unwrap();
        assert_eq!(read_back().run_id.as_deref(), Some("short"));
        l.state.run_id = Some(long.clone());
        l.save().unwrap();
        drop(l);
        assert_eq!(read_back().run_id.as_deref(), Some(long.as_str()));

        // Across locks: the length read is what a shorter save truncates.
        let mut l = session.lock().unwrap();
        l.state.run_id = Some("s".into());
        l.save().unwrap();
        drop(l);
        assert_eq!(read_back().run_id.as_deref(), Some("s"));
        let len = std::fs::metadata(tmp.path().join("s/state.json"))
            .unwrap()
            .len();
        assert_eq!(len, serde_json::to_vec(&read_back()).unwrap().len() as u64);
    }

    #[test]
    fn a_lock_held_elsewhere_times_out_and_a_free_one_is_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("lock");
        let holder = File::create(&path).unwrap();
        // A shared lock on a read-only descriptor is enough to block.
        let reader = File::open(&path).unwrap();
        reader.lock_shared().unwrap();
        let started = Instant::now();
        let e = lock_within(&holder, Duration::from_millis(150)).unwrap_err();
        assert!(lock_timed_out(&e), "{e}");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(150) && took < Duration::from_secs(2),
            "{took:?}"
        );
        drop(reader);
        lock_within(&holder, Duration::from_millis(150)).unwrap();
    }

    #[test]
    fn new_session_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state/sessions/s");
        let session = Session::at(dir.clone());
        session.lock().unwrap().save().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        for d in [
            tmp.path().join("state"),
            tmp.path().join("state/sessions"),
            dir.clone(),
        ] {
            assert_eq!(mode(&d), DIR_MODE, "{}", d.display());
        }
        for f in ["lock", "state.json"] {
            assert_eq!(mode(&dir.join(f)), FILE_MODE, "{f}");
        }
    }

    #[test]
    fn rfc3339_formats_utc_to_the_millisecond() {
        let at = |secs: u64, ms: u64| {
            crate::base::time::rfc3339(
                SystemTime::UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms),
            )
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(1_796_157_667, 123), "2026-12-01T20:41:07.123Z");
        // A leap day, and the last second of a leap year.
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_735_689_599, 999), "2024-12-31T23:59:59.999Z");
    }

    #[test]
    fn a_call_summary_is_redacted_before_it_is_cut() {
        use crate::events::Event;
        use crate::runtime::types::EventInput;
        let mut input = EventInput::new(Event::PreToolUse, "s");
        // Built at run time, so this file holds no key-shaped literal.
        let key = format!("AKIA{}", "IOSFODNN7EXAMPL2");
        let key = key.as_str();
        input.fields.insert(
            "toolInput".into(),
            serde_json::json!({"command": format!("aws --key {key} s3 ls\necho two")}),
        );
        let s = call_summary(&input).unwrap();
        assert!(!s.contains(key), "{s}");
        assert!(s.starts_with("aws --key [REDACTED:"), "{s}");
        assert!(s.ends_with('…'), "{s}");
        input.fields.insert(
            "toolInput".into(),
            serde_json::json!({"command": "x".repeat(400)}),
        );
        assert_eq!(
            call_summary(&input).unwrap().chars().count(),
            MAX_SUMMARY_CHARS + 1
        );
        input.fields.insert(
            "toolInput".into(),
            serde_json::json!({"file_path": "/p/src/main.rs", "content": "x"}),
        );
        assert_eq!(call_summary(&input).unwrap(), "/p/src/main.rs");
    }

    /// The built-in secret rules, read here for the screen's tests.
    const SECRET_RULES: &str = include_str!("../builtins/secret-rules.toml");

    /// The keyword table build.rs makes is every keyword of every rule as
    /// a TOML parser reads the file, lowercased, each once.
    #[test]
    fn the_keyword_table_is_every_rules_keywords() {
        let doc: toml_edit::DocumentMut = SECRET_RULES.parse().unwrap();
        let mut want: Vec<String> = Vec::new();
        for rule in doc["rule"].as_array_of_tables().unwrap() {
            for k in rule
                .get("keywords")
                .and_then(|k| k.as_array())
                .into_iter()
                .flatten()
            {
                let k = k.as_str().unwrap().to_ascii_lowercase();
                if !want.contains(&k) {
                    want.push(k);
                }
            }
        }
        let have: Vec<&str> = secret_keywords().collect();
        assert_eq!(have, want);
        assert!(have.len() > 50, "{}", have.len());
    }

    /// The one-pass keyword check finds exactly what a case-insensitive
    /// substring search per keyword finds, at the start, the end, inside
    /// and across a keyword's boundary.
    #[test]
    fn the_keyword_pass_agrees_with_a_search_per_keyword() {
        let plain = |t: &str| {
            let lower = t.to_ascii_lowercase();
            secret_keywords().any(|k| lower.contains(k))
        };
        let mut texts: Vec<String> = vec![
            String::new(),
            "/var/tmp/project/src/main.rs".into(),
            "8096d6db-4c67-4eea-8411-16039ce906a8".into(),
            "cargo test --workspace".into(),
        ];
        for k in secret_keywords() {
            let upper = k.to_ascii_uppercase();
            texts.push(k.to_owned());
            texts.push(format!("xx{upper}"));
            texts.push(format!("{k}yy"));
            texts.push(format!("a {k} b"));
            // Every proper prefix: no keyword is found from a part of it
            // unless the part is itself a keyword.
            for end in 1..k.len() {
                texts.push(format!("zz{}", &k[..end]));
            }
        }
        for t in &texts {
            assert_eq!(holds_secret_keyword(t.as_bytes()), plain(t), "{t:?}");
        }
        assert!(texts.iter().filter(|t| plain(t)).count() > 200);
    }

    #[test]
    fn the_secret_screen_knows_every_rule_and_lets_only_plain_text_skip_the_rules() {
        /// The rule the screen knows runs without keywords.
        const KEYWORDLESS_RULE: &str = "aws-access-key-id";
        // Every rule but one names keywords, each on one `keywords = [` line
        // the screen reads; a new rule without them must be screened too.
        let rules = SECRET_RULES.matches("\n[[rule]]").count();
        let with_keywords = SECRET_RULES
            .lines()
            .filter(|l| l.starts_with("keywords = ["))
            .count();
        assert_eq!(rules, with_keywords + 1);
        let keywordless: Vec<&str> = SECRET_RULES
            .split("\n[[rule]]")
            .skip(1)
            .filter(|r| !r.contains("\nkeywords = ["))
            .collect();
        assert_eq!(keywordless.len(), 1);
        assert!(
            keywordless[0].contains(&format!("id = \"{KEYWORDLESS_RULE}\"")),
            "{}",
            keywordless[0]
        );
        assert!(secret_keywords().count() >= with_keywords);
        assert!(secret_keywords().any(|k| k == "bearer"));

        let rules = crate::secrets::builtin_rules();
        for plain in [
            "ls -la",
            "git status",
            "cargo test --lib",
            "rm -rf target",
            "git add .",
            "gh pr list",
            // Call and session ids: long, random, lowercase.
            "tbab1ae6b9b75434b97d5732df73057a4",
            "8096d6db-4c67-4eea-8411-16039ce906a8",
        ] {
            assert!(!may_hold_secret(plain), "{plain}");
            assert_eq!(rules.redact(plain), plain);
        }
        for risky in [
            "curl -H 'Authorization: Bearer abc.def.ghi' x",
            concat!(
                "aws configure set aws_access_key_id AKIA",
                "IOSFODNN7EXAMPL2"
            ),
            "export TOKEN=abcd",
            "echo \u{202e}x",
            "psql postgres://u:p@h/db",
        ] {
            assert!(may_hold_secret(risky), "{risky}");
        }
    }

    #[test]
    fn the_secret_screen_passes_every_line_the_rules_would_change() {
        // The secrets corpus is stored reversed, so no scanner flags it.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/secrets/secrets.jsonl"
        );
        let rules = crate::secrets::builtin_rules();
        let mut changed = 0;
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let text: String = v["text"].as_str().unwrap().chars().rev().collect();
            for l in text.lines() {
                if rules.redact(l) != l {
                    changed += 1;
                    assert!(may_hold_secret(l), "{l}");
                }
            }
        }
        assert!(changed > 100, "{changed}");
    }

    #[test]
    fn a_long_reason_is_capped_in_the_record_line() {
        let tmp = tempfile::tempdir().unwrap();
        let session = Session::at(tmp.path().join("s"));
        let entry = RecordEntry {
            kind: RecordKind::Skipped,
            record: HookInvocationRecord {
                hook_id: "h".into(),
                event: "Stop",
                class: crate::config::model::HookClass::Gate,
                scope: crate::config::model::Scope::Project,
                outcome: crate::runtime::types::Outcome::None,
                failure: None,
                reason: Some("é".repeat(2000)),
                duration_ms: 0,
                changed_outcome: false,
                exit_code: None,
            },
            anomalies: Vec::new(),
            skipped_because: Some("untrusted".into()),
        };
        session
            .append_records(&RecordContext::default(), &[entry], "c", "r")
            .unwrap();
        let text = std::fs::read_to_string(tmp.path().join("s/records.jsonl")).unwrap();
        let v: Value = serde_json::from_str(text.trim()).unwrap();
        let reason = v["record"]["reason"].as_str().unwrap();
        assert!(reason.ends_with("…[truncated]"), "{reason}");
        assert!(reason.len() <= MAX_RECORD_REASON_BYTES, "{}", reason.len());
        assert_eq!(v["kind"], "skipped");
        assert_eq!(v["skippedBecause"], "untrusted");
        assert_eq!(v["schemaVersion"], RECORD_SCHEMA_VERSION);
        assert_eq!(v["type"], "hook_invocation");
    }

    #[test]
    fn first_edit_only_once() {
        let mut s = State::default();
        assert!(s.first_edit("/a"));
        assert!(!s.first_edit("/a"));
        assert!(s.first_edit("/b"));
    }

    #[test]
    fn written_files_are_remembered_once_and_bounded() {
        let mut s = State::default();
        s.wrote("/p/a.sh");
        s.wrote("/p/a.sh");
        assert_eq!(s.written, ["/p/a.sh"]);
        for i in 0..MAX_WRITTEN {
            s.wrote(&format!("/p/{i}"));
        }
        assert_eq!(s.written.len(), MAX_WRITTEN);
        assert!(!s.written.iter().any(|p| p == "/p/a.sh"));
        let back: State = serde_json::from_str(r#"{"seq":1}"#).unwrap();
        assert!(back.written.is_empty());
    }
}
