//! De-duplication of one tool call delivered more than once: Cursor and
//! Copilot also run the Claude Code wiring, and a user may wire one host
//! twice (user and project settings), so one call can reach `run` several
//! times, at once or one after another. The first delivery fires; the others
//! wait for its answer and repeat it.
//!
//! A session's calls live in one file, `sessions/calls-<session>/slots`: 64
//! fixed slots of 4 KiB, a call in the slot its key hashes to, each slot
//! read and rewritten in place under a brief `flock` of the file. A later
//! call evicts an answered one. Creating a file costs 0.1–0.5 ms on a
//! journalling filesystem and rewriting 4 KiB of one a few microseconds, so
//! the file is made once per session, not once per call. A call whose slot
//! is held by another call still running, or whose answer does not fit in a
//! slot, uses a file of its own (named by the whole hash, created with
//! `O_EXCL`); every delivery looks for that file before it claims a slot.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::model::Profile;
use crate::runtime::types::EventInput;

use super::{Delivered, FILE_MODE, LOCK_WAIT, age, lock_within, open_in, read_at};

/// How long a later delivery waits for the first one's answer; past this
/// (the first delivery crashed, or outlived every host timeout) it fires on
/// its own.
pub const WAIT: Duration = Duration::from_secs(70);
/// Answers older than this are removed by [`Calls::prune`].
pub const KEEP: Duration = Duration::from_secs(3600);
/// How often a waiting delivery looks again.
const POLL: Duration = Duration::from_millis(20);
/// Slots in a session's `slots` file, and the bytes of each: a record is
/// JSON ended by a NUL (the file starts sparse, all NULs).
const SLOTS: u64 = 64;
const SLOT_BYTES: usize = 4096;

/// The de-duplication directory of one session.
pub struct Calls {
    dir: PathBuf,
}

/// What a delivery does with a tool call.
pub enum Claim {
    /// This delivery is the first (or the first one gave up): fire, then
    /// [`Claimed::answer`].
    First(Claimed),
    /// An earlier delivery already answered: repeat it.
    Answered(Delivered),
    /// The slots stayed locked past [`LOCK_WAIT`] (someone else holds
    /// them): nothing can be known about this call, so the shim answers as
    /// a broken shim does.
    Unavailable(String),
}

/// The claim of the first delivery; its answer is written through it.
pub struct Claimed {
    held: Held,
    key: String,
}

enum Held {
    /// Nowhere to write the answer (the state dir is not writable, or the
    /// slot was busy and its own file could not be made): fire anyway.
    Nothing,
    /// A slot, claimed with a pending record for this key.
    Slot(Slot, PathBuf),
    /// This call's own file, created empty with `O_EXCL`.
    Own(File),
}

/// One call's slot in the session's `slots` file.
struct Slot {
    file: File,
    offset: u64,
}

/// One slot's content: the call it holds, and its answer once given.
/// Stored as [`SlotWire`], the same fields side by side.
#[derive(Clone, Serialize, Deserialize)]
#[serde(from = "SlotWire", into = "SlotWire")]
struct SlotRecord {
    key: String,
    /// When the call was claimed (Unix seconds): a pending claim older than
    /// [`WAIT`] was abandoned.
    at: u64,
    /// The answer did not fit: it is in the call's own file.
    spilled: bool,
    /// Some call of this slot has a file of its own (its slot was busy, or
    /// its answer spilled): only then does a delivery look for one, since
    /// looking up a name that is not there costs a directory search.
    own_files: bool,
    delivered: Delivered,
}

/// A slot as JSON: the answer's fields beside the call's. Spelled out rather
/// than `#[serde(flatten)]`, whose buffering made reading a slot several
/// times dearer on every gated call.
#[derive(Serialize, Deserialize)]
struct SlotWire {
    key: String,
    at: u64,
    #[serde(default)]
    spilled: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    own_files: bool,
    #[serde(default)]
    pending: bool,
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default, rename = "additionalContext")]
    additional_context: Option<String>,
}

impl From<SlotWire> for SlotRecord {
    fn from(w: SlotWire) -> Self {
        SlotRecord {
            key: w.key,
            at: w.at,
            spilled: w.spilled,
            own_files: w.own_files,
            delivered: Delivered {
                pending: w.pending,
                outcome: w.outcome,
                reason: w.reason,
                additional_context: w.additional_context,
            },
        }
    }
}

impl From<SlotRecord> for SlotWire {
    fn from(r: SlotRecord) -> Self {
        SlotWire {
            key: r.key,
            at: r.at,
            spilled: r.spilled,
            own_files: r.own_files,
            pending: r.delivered.pending,
            outcome: r.delivered.outcome,
            reason: r.delivered.reason,
            additional_context: r.delivered.additional_context,
        }
    }
}

impl SlotRecord {
    fn stale(&self, wait: Duration) -> bool {
        unix_now().saturating_sub(self.at) > wait.as_secs()
    }
}

/// The de-duplication key of one tool call: the event, the host's tool call
/// id and a digest of the question asked (the canonical tool name, the tool
/// input, the policy engine's outcome, whether anyone can answer an ask and
/// the profile). A later delivery is repeated the first answer only when it
/// asks the same question; a tool call id reused for another command, or
/// with a stricter outcome decided, is evaluated afresh. The session is the
/// directory the key lives in ([`crate::paths::Locations::calls_dir`]).
pub fn question_key(input: &EventInput, tool_call_id: &str, profile: Profile) -> String {
    let question = serde_json::json!([
        input.tool_name(),
        input.tool_input(),
        input.decide_outcome.as_str(),
        input.interactive,
        profile.as_str(),
    ]);
    let mut canon = Vec::new();
    canonical_json(&question, &mut canon);
    let digest = Sha256::digest(&canon);
    format!(
        "{}:{tool_call_id}:{}",
        input.event.as_str(),
        crate::base::text::hex(&digest[..16])
    )
}

/// `v` as JSON with every object's keys sorted, so two spellings of one
/// value (the order a host happened to write the keys in) give one text.
fn canonical_json(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, k);
                out.push(b':');
                canonical_json(&map[k], out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(item, out);
            }
            out.push(b']');
        }
        leaf => {
            let _ = serde_json::to_writer(&mut *out, leaf);
        }
    }
}

impl Calls {
    /// The directory of one session's calls; created on the first claim.
    pub fn at(dir: PathBuf) -> Calls {
        Calls { dir }
    }

    fn digest(key: &str) -> [u8; 16] {
        let d = Sha256::digest(key.as_bytes());
        let mut out = [0; 16];
        out.copy_from_slice(&d[..16]);
        out
    }

    /// Where in the slots file the call with `digest` lives.
    fn slot_offset(digest: &[u8; 16]) -> u64 {
        u64::from(digest[0]) % SLOTS * SLOT_BYTES as u64
    }

    fn own_path(&self, digest: &[u8; 16]) -> PathBuf {
        self.dir.join(crate::base::text::hex(digest))
    }

    /// Claims `key`, or waits (up to `wait`) for the answer of whoever did.
    pub fn claim(&self, key: &str, wait: Duration) -> Claim {
        let digest = Self::digest(key);
        let own = self.own_path(&digest);
        let first = |held| Claimed::first(held, key);
        let mut opts = OpenOptions::new();
        opts.read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(FILE_MODE);
        let Ok(file) = open_in(&self.dir, "slots", &opts) else {
            // Cannot de-duplicate here (read-only state dir, …): fire.
            return first(Held::Nothing);
        };
        let slot = Slot {
            file,
            offset: Self::slot_offset(&digest),
        };
        let deadline = Instant::now() + wait;
        loop {
            match lock_within(&slot.file, LOCK_WAIT) {
                Ok(()) => {}
                Err(e) if super::lock_timed_out(&e) => {
                    return Claim::Unavailable(format!(
                        "the de-duplication slots `{}` are locked: {e}",
                        self.dir.join("slots").display()
                    ));
                }
                Err(_) => return first(Held::Nothing),
            }
            let record = slot.read();
            match &record {
                Some(r) if r.key == key && r.spilled => {
                    let _ = slot.file.unlock();
                    return self.claim_own(&own, key, deadline, wait);
                }
                Some(r) if r.key == key && !r.delivered.pending => {
                    let _ = slot.file.unlock();
                    return Claim::Answered(r.delivered.clone());
                }
                Some(r) if r.key == key => {
                    if Instant::now() < deadline && !r.stale(wait) {
                        let _ = slot.file.unlock();
                        std::thread::sleep(POLL);
                        continue;
                    }
                    // The first delivery never answered: take the call over.
                    slot.write_pending(key, r.own_files);
                    let _ = slot.file.unlock();
                    return first(Held::Slot(slot, own));
                }
                _ => {}
            }
            let own_files = record.as_ref().is_some_and(|r| r.own_files);
            if own_files && own.symlink_metadata().is_ok() {
                // Claimed in its own file while the slot was busy.
                let _ = slot.file.unlock();
                return self.claim_own(&own, key, deadline, wait);
            }
            let busy = match record {
                Some(r) if r.delivered.pending && !r.stale(wait) => r,
                _ => {
                    slot.write_pending(key, own_files);
                    let _ = slot.file.unlock();
                    return first(Held::Slot(slot, own));
                }
            };
            // Another call still running holds the slot: this one gets its
            // own file, made while the slots are locked so that a second
            // delivery of this call, which looks for it under the same lock,
            // cannot miss it.
            let made = create_own(&own);
            if !busy.own_files {
                let marked = SlotRecord {
                    own_files: true,
                    ..busy
                };
                if let Err(e) = slot.write(&marked) {
                    tracing::warn!("could not mark a de-duplication slot: {e}");
                }
            }
            let _ = slot.file.unlock();
            return match made {
                Ok(file) => first(Held::Own(file)),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    self.claim_own(&own, key, deadline, wait)
                }
                Err(_) => first(Held::Nothing),
            };
        }
    }

    /// The claim of a call in its own file: created empty by the first
    /// delivery, then filled with the answer in one write.
    fn claim_own(&self, path: &Path, key: &str, deadline: Instant, wait: Duration) -> Claim {
        let first = |held| Claimed::first(held, key);
        loop {
            match create_own(path) {
                Ok(file) => return first(Held::Own(file)),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(_) => return first(Held::Nothing),
            }
            if let Some(answer) = read_own_answer(path) {
                return Claim::Answered(answer);
            }
            let abandoned = std::fs::metadata(path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| age(t) > wait);
            if Instant::now() >= deadline || abandoned {
                let file = OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(path)
                    .ok();
                return first(file.map_or(Held::Nothing, Held::Own));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Removes answers older than `keep`. Best effort.
    pub fn prune(&self, keep: Duration) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut removed = 0;
        for e in entries.flatten() {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| age(t) >= keep);
            if old && std::fs::remove_file(e.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Slot {
    /// The slot's record; `None` when it is empty, or was left half-written.
    fn read(&self) -> Option<SlotRecord> {
        let mut buf = vec![0; SLOT_BYTES];
        let len = read_at(&self.file, &mut buf, self.offset).ok()?;
        let end = buf[..len].iter().position(|&b| b == 0).unwrap_or(len);
        serde_json::from_slice(&buf[..end]).ok()
    }

    /// Writes `record`, NUL-ended; `Ok(false)` when it does not fit.
    fn write(&self, record: &SlotRecord) -> std::io::Result<bool> {
        let mut bytes = serde_json::to_vec(record)?;
        if bytes.len() >= SLOT_BYTES {
            return Ok(false);
        }
        bytes.push(0);
        self.file.write_all_at(&bytes, self.offset)?;
        Ok(true)
    }

    fn write_pending(&self, key: &str, own_files: bool) {
        let record = SlotRecord {
            key: key.to_owned(),
            at: unix_now(),
            spilled: false,
            own_files,
            delivered: Delivered {
                pending: true,
                ..Delivered::default()
            },
        };
        match self.write(&record) {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                "a tool call id of {} bytes is too long to de-duplicate",
                key.len()
            ),
            Err(e) => tracing::warn!("could not claim a tool call for de-duplication: {e}"),
        }
    }

    /// Writes the answer of `key` if the slot still holds its claim (a
    /// delivery that waited past [`WAIT`] may have taken the call over, or
    /// another call the slot); one too long for a slot goes to `own`.
    fn answer(&self, key: String, answer: &Delivered, own: &Path) -> std::io::Result<()> {
        lock_within(&self.file, LOCK_WAIT)?;
        let result = match self.read() {
            Some(r) if r.key == key && r.delivered.pending => {
                let mut record = SlotRecord {
                    key,
                    at: r.at,
                    spilled: false,
                    own_files: r.own_files,
                    delivered: answer.clone(),
                };
                match self.write(&record)? {
                    true => Ok(()),
                    false => {
                        let bytes = serde_json::to_vec(answer)?;
                        OpenOptions::new()
                            .write(true)
                            .create(true)
                            .truncate(true)
                            .mode(FILE_MODE)
                            .open(own)?
                            .write_all(&bytes)?;
                        record.spilled = true;
                        record.own_files = true;
                        record.delivered = Delivered::default();
                        self.write(&record).map(|_| ())
                    }
                }
            }
            _ => Ok(()),
        };
        let _ = self.file.unlock();
        result
    }
}

/// Creates a call's own file, empty; fails when it exists already.
fn create_own(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
}

/// A finished answer in a call's own file; `None` while the file is empty
/// (claimed, pending) or not yet whole.
fn read_own_answer(path: &Path) -> Option<Delivered> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice::<Delivered>(&bytes)
        .ok()
        .filter(|d| !d.pending)
}

impl Claimed {
    /// This delivery fires, holding `held` to answer through.
    fn first(held: Held, key: &str) -> Claim {
        Claim::First(Claimed {
            held,
            key: key.to_owned(),
        })
    }

    /// Writes the answer for later deliveries, in one write.
    pub fn answer(self, answer: &Delivered) {
        let written = match self.held {
            Held::Nothing => return,
            Held::Own(mut file) => serde_json::to_vec(answer)
                .map_err(std::io::Error::from)
                .and_then(|bytes| file.write_all(&bytes)),
            Held::Slot(slot, own) => slot.answer(self.key, answer, &own),
        };
        if let Err(e) = written {
            tracing::warn!("could not record the answer for de-duplication: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first delivery's claim of `key`; a test failure if it was not.
    fn first(calls: &Calls, key: &str) -> Claimed {
        match calls.claim(key, WAIT) {
            Claim::First(c) => c,
            Claim::Answered(d) => panic!("`{key}` was answered ({d:?}) instead of fired"),
            Claim::Unavailable(why) => panic!("`{key}` was unavailable: {why}"),
        }
    }

    /// The answer repeated for `key`; a test failure if it fired again.
    fn answered(calls: &Calls, key: &str) -> Delivered {
        match calls.claim(key, WAIT) {
            Claim::Answered(d) => d,
            Claim::First(_) => panic!("`{key}` fired again instead of repeating its answer"),
            Claim::Unavailable(why) => panic!("`{key}` was unavailable: {why}"),
        }
    }

    fn answer(outcome: &str) -> Delivered {
        Delivered {
            pending: false,
            outcome: outcome.into(),
            reason: Some("r".into()),
            additional_context: None,
        }
    }

    #[test]
    fn the_first_delivery_fires_and_later_ones_repeat_its_answer() {
        let tmp = tempfile::tempdir().unwrap();
        let calls = Calls::at(tmp.path().join("calls-s"));
        let c = first(&calls, "PreToolUse:t1");
        c.answer(&answer("deny"));
        assert_eq!(answered(&calls, "PreToolUse:t1"), answer("deny"));
        assert!(matches!(
            calls.claim("PreToolUse:t2", WAIT),
            Claim::First(_)
        ));
    }

    #[test]
    fn a_concurrent_delivery_waits_for_the_answer() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("calls-s");
        let calls = Calls::at(dir.clone());
        let c = first(&calls, "k");
        waits_for_the_answer(&dir, "k", c, "allow");
    }

    #[test]
    fn an_abandoned_claim_is_taken_over_after_the_wait() {
        let tmp = tempfile::tempdir().unwrap();
        let calls = Calls::at(tmp.path().join("calls-s"));
        let abandoned = first(&calls, "k");
        drop(abandoned);
        let Claim::First(c) = calls.claim("k", Duration::from_millis(60)) else {
            panic!("an unanswered claim must not block forever");
        };
        c.answer(&answer("deny"));
        assert!(matches!(calls.claim("k", WAIT), Claim::Answered(_)));
    }

    /// A claim left pending by a delivery that died long ago: the next
    /// delivery takes the call over at once instead of waiting it out, and
    /// another call takes the slot instead of going to a file of its own.
    #[test]
    fn a_claim_older_than_the_wait_is_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("calls-s");
        let calls = Calls::at(dir.clone());
        let other = same_slot_as("k");
        drop(first(&calls, "k"));
        let old = slot_of(&dir, "k");
        let mut record = old.read().unwrap();
        assert!(record.delivered.pending);
        record.at -= WAIT.as_secs() + 5;
        assert!(old.write(&record).unwrap());

        let started = Instant::now();
        let c = first(&calls, "k");
        assert!(started.elapsed() < Duration::from_secs(5), "waited it out");
        c.answer(&answer("deny"));
        assert_eq!(answered(&calls, "k").outcome, "deny");

        let mut record = old.read().unwrap();
        record.delivered.pending = true;
        record.at -= WAIT.as_secs() + 5;
        assert!(old.write(&record).unwrap());
        drop(first(&calls, &other));
        assert_eq!(files(&dir), ["slots"], "a stale claim kept its slot");
    }

    /// A key other than `key` (and named apart from it) that lands in the
    /// same slot.
    fn same_slot_as(key: &str) -> String {
        let slot = Calls::slot_offset(&Calls::digest(key));
        (0..)
            .map(|i| format!("{key}-other-{i}"))
            .find(|k| Calls::slot_offset(&Calls::digest(k)) == slot)
            .unwrap()
    }

    /// `key`'s slot in the slots file under `dir`, opened for the test to
    /// read or write behind the claims' back.
    fn slot_of(dir: &Path, key: &str) -> Slot {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.join("slots"))
            .unwrap();
        Slot {
            file,
            offset: Calls::slot_offset(&Calls::digest(key)),
        }
    }

    /// A second delivery of `key`, started while its first delivery `c`
    /// still runs, must wait and then repeat `c`'s answer.
    fn waits_for_the_answer(dir: &Path, key: &str, c: Claimed, outcome: &str) {
        let waiter = {
            let (dir, key) = (dir.to_path_buf(), key.to_owned());
            std::thread::spawn(move || Calls::at(dir).claim(&key, WAIT))
        };
        std::thread::sleep(Duration::from_millis(100));
        c.answer(&answer(outcome));
        match waiter.join().unwrap() {
            Claim::Answered(d) => assert_eq!(d.outcome, outcome),
            Claim::First(_) => panic!("the second delivery of `{key}` fired instead of waiting"),
            Claim::Unavailable(why) => panic!("`{key}` was unavailable: {why}"),
        }
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_thousand_calls_leave_one_file_and_the_latest_answers() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("calls-s");
        let calls = Calls::at(dir.clone());
        for i in 0..1000 {
            first(&calls, &format!("PreToolUse:t{i}")).answer(&answer(if i % 2 == 0 {
                "allow"
            } else {
                "deny"
            }));
        }
        assert_eq!(files(&dir), ["slots"]);
        assert!(std::fs::metadata(dir.join("slots")).unwrap().len() <= SLOTS * SLOT_BYTES as u64);
        assert_eq!(
            answered(&calls, "PreToolUse:t999").outcome,
            "deny",
            "the latest call fired again"
        );
    }

    #[test]
    fn an_answer_too_long_for_a_slot_is_kept_in_its_own_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("calls-s");
        let calls = Calls::at(dir.clone());
        let c = first(&calls, "k");
        let long = Delivered {
            pending: false,
            outcome: "deny".into(),
            reason: Some("r".repeat(3 * SLOT_BYTES)),
            additional_context: None,
        };
        c.answer(&long);
        assert_eq!(files(&dir).len(), 2, "{:?}", files(&dir));
        assert_eq!(answered(&calls, "k"), long, "a long answer was lost");
    }

    #[test]
    fn a_call_whose_slot_is_busy_gets_its_own_file_and_both_are_repeated() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("calls-s");
        let calls = Calls::at(dir.clone());
        let other = same_slot_as("k");
        let running = first(&calls, "k");
        let c = first(&calls, &other);
        assert_eq!(files(&dir).len(), 2, "{:?}", files(&dir));
        c.answer(&answer("deny"));
        running.answer(&answer("allow"));
        assert_eq!(
            answered(&calls, &other).outcome,
            "deny",
            "the call in its own file fired again"
        );
        assert_eq!(
            answered(&calls, "k").outcome,
            "allow",
            "the call in the slot fired again"
        );
    }

    #[test]
    fn a_delivery_looks_for_the_calls_own_file_before_it_takes_a_free_slot() {
        let tmp = tempfile::tempdir().unwrap();
        let calls = Calls::at(tmp.path().join("calls-s"));
        let other = same_slot_as("k");
        let running = first(&calls, "k");
        let own = first(&calls, &other);
        // The slot is free again, but `other` is still running in its own
        // file: a second delivery of it must wait there, not claim the slot.
        running.answer(&answer("allow"));
        waits_for_the_answer(&tmp.path().join("calls-s"), &other, own, "deny");
    }

    #[test]
    fn a_call_in_its_own_file_is_found_after_its_slot_changed_hands() {
        let tmp = tempfile::tempdir().unwrap();
        let calls = Calls::at(tmp.path().join("calls-s"));
        let other = same_slot_as("k");
        let third = same_slot_as(&other);
        assert_ne!(third, other);
        let running = first(&calls, "k");
        let own = first(&calls, &other);
        own.answer(&answer("deny"));
        running.answer(&answer("allow"));
        let next = first(&calls, &third);
        next.answer(&answer("allow"));
        assert_eq!(
            answered(&calls, &other).outcome,
            "deny",
            "the call in its own file was forgotten"
        );
    }

    #[test]
    fn a_half_written_slot_is_claimed_afresh() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("calls-s");
        let calls = Calls::at(dir.clone());
        let c = first(&calls, "k");
        c.answer(&answer("allow"));
        let slot = slot_of(&dir, "k");
        slot.file
            .write_all_at(b"{\"key\":\"k\",\"pend\0", slot.offset)
            .unwrap();
        let c = first(&calls, "k");
        c.answer(&answer("deny"));
        assert!(matches!(calls.claim("k", WAIT), Claim::Answered(d) if d.outcome == "deny"));
    }

    #[test]
    fn a_late_answer_does_not_overwrite_the_delivery_that_took_over() {
        let tmp = tempfile::tempdir().unwrap();
        let calls = Calls::at(tmp.path().join("calls-s"));
        let slow = first(&calls, "k");
        let Claim::First(taker) = calls.claim("k", Duration::from_millis(60)) else {
            panic!("an unanswered claim must not block forever");
        };
        let other = same_slot_as("k");
        taker.answer(&answer("deny"));
        let next = first(&calls, &other);
        // The first delivery answers at last, after its slot moved on.
        slow.answer(&answer("allow"));
        next.answer(&answer("allow"));
        assert_eq!(
            answered(&calls, &other).outcome,
            "allow",
            "the late answer clobbered the slot"
        );
    }

    #[test]
    fn prune_keeps_recent_answers() {
        let tmp = tempfile::tempdir().unwrap();
        let calls = Calls::at(tmp.path().join("calls-s"));
        let c = first(&calls, "k");
        c.answer(&answer("allow"));
        assert_eq!(calls.prune(KEEP), 0);
        assert_eq!(calls.prune(Duration::ZERO), 1);
        assert!(matches!(calls.claim("k", WAIT), Claim::First(_)));
    }
}
