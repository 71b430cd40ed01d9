//! De-duplication of one tool call delivered more than once: Cursor and
//! Copilot also run the Claude Code wiring, and a user may wire one host
//! twice (user and project settings), so one call can reach `run` several
//! times, at once or one after another. The first delivery fires; the others
//! wait for its answer and repeat it.
//!
//! One small file per call under `sessions/calls-<session>/`, named by a hash
//! of the key: created empty with `O_EXCL` by the first delivery (the claim),
//! then filled with the answer in one write. No lock and no rewrite of a
//! shared file, so the cost is the same on the thousandth call of a session
//! as on the first.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use super::Delivered;

/// How long a later delivery waits for the first one's answer; past this
/// (the first delivery crashed, or outlived every host timeout) it fires on
/// its own.
pub const WAIT: Duration = Duration::from_secs(70);
/// Answers older than this are removed by [`Calls::prune`].
pub const KEEP: Duration = Duration::from_secs(3600);

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
}

/// The claim of the first delivery; its answer is written through it.
pub struct Claimed {
    file: Option<File>,
}

impl Calls {
    pub fn open(dir: PathBuf) -> std::io::Result<Calls> {
        std::fs::create_dir_all(&dir)?;
        Ok(Calls { dir })
    }

    /// The directory as it is, without creating it (for pruning).
    pub fn at(dir: PathBuf) -> Calls {
        Calls { dir }
    }

    fn path(&self, key: &str) -> PathBuf {
        let digest = Sha256::digest(key.as_bytes());
        let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(name)
    }

    /// Claims `key`, or waits (up to `wait`) for the answer of whoever did.
    pub fn claim(&self, key: &str, wait: Duration) -> Claim {
        let path = self.path(key);
        let deadline = Instant::now() + wait;
        loop {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => return Claim::First(Claimed { file: Some(file) }),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                // Cannot de-duplicate here (read-only state dir, …): fire.
                Err(_) => return Claim::First(Claimed { file: None }),
            }
            if let Some(answer) = read_answer(&path) {
                return Claim::Answered(answer);
            }
            let abandoned = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > wait);
            if Instant::now() >= deadline || abandoned {
                // The first delivery never answered: take the call over.
                let file = OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(&path)
                    .ok();
                return Claim::First(Claimed { file });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Removes answers older than `keep`. Best effort.
    pub fn prune(&self, keep: Duration) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let now = SystemTime::now();
        let mut removed = 0;
        for e in entries.flatten() {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age >= keep);
            if old && std::fs::remove_file(e.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

/// A finished answer; `None` while the file is empty (claimed, pending) or
/// not yet whole.
fn read_answer(path: &Path) -> Option<Delivered> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice::<Delivered>(&bytes)
        .ok()
        .filter(|d| !d.pending)
}

impl Claimed {
    /// Writes the answer for later deliveries, in one write.
    pub fn answer(self, answer: &Delivered) {
        let (Some(mut file), Ok(bytes)) = (self.file, serde_json::to_vec(answer)) else {
            return;
        };
        if let Err(e) = file.write_all(&bytes) {
            tracing::warn!("could not record the answer for de-duplication: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let calls = Calls::open(tmp.path().join("calls-s")).unwrap();
        let Claim::First(c) = calls.claim("PreToolUse:t1", WAIT) else {
            panic!("first delivery must fire");
        };
        c.answer(&answer("deny"));
        match calls.claim("PreToolUse:t1", WAIT) {
            Claim::Answered(d) => assert_eq!(d, answer("deny")),
            Claim::First(_) => panic!("second delivery fired again"),
        }
        assert!(matches!(
            calls.claim("PreToolUse:t2", WAIT),
            Claim::First(_)
        ));
    }

    #[test]
    fn a_concurrent_delivery_waits_for_the_answer() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("calls-s");
        let calls = Calls::open(dir.clone()).unwrap();
        let Claim::First(c) = calls.claim("k", WAIT) else {
            panic!()
        };
        let waiter = std::thread::spawn(move || Calls::open(dir).unwrap().claim("k", WAIT));
        std::thread::sleep(Duration::from_millis(100));
        c.answer(&answer("allow"));
        match waiter.join().unwrap() {
            Claim::Answered(d) => assert_eq!(d.outcome, "allow"),
            Claim::First(_) => panic!("the waiter fired instead of waiting"),
        }
    }

    #[test]
    fn an_abandoned_claim_is_taken_over_after_the_wait() {
        let tmp = tempfile::tempdir().unwrap();
        let calls = Calls::open(tmp.path().join("calls-s")).unwrap();
        let Claim::First(abandoned) = calls.claim("k", WAIT) else {
            panic!()
        };
        drop(abandoned);
        let Claim::First(c) = calls.claim("k", Duration::from_millis(60)) else {
            panic!("an unanswered claim must not block forever");
        };
        c.answer(&answer("deny"));
        assert!(matches!(calls.claim("k", WAIT), Claim::Answered(_)));
    }

    #[test]
    fn prune_keeps_recent_answers() {
        let tmp = tempfile::tempdir().unwrap();
        let calls = Calls::open(tmp.path().join("calls-s")).unwrap();
        let Claim::First(c) = calls.claim("k", WAIT) else {
            panic!()
        };
        c.answer(&answer("allow"));
        assert_eq!(calls.prune(KEEP), 0);
        assert_eq!(calls.prune(Duration::ZERO), 1);
        assert!(matches!(calls.claim("k", WAIT), Claim::First(_)));
    }
}
