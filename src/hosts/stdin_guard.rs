//! Bounded read of one JSON payload: first-byte, idle and absolute timeouts
//! and a byte cap. Done as soon as one complete JSON value is in, never
//! waiting for EOF (Claude Code does not always close a hook's stdin).

use std::fmt;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long and how much to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// From the start until the first byte.
    pub first_byte: Duration,
    /// Between two reads, once data has started.
    pub idle: Duration,
    /// For the whole read, however steadily bytes arrive.
    pub deadline: Duration,
    pub max_bytes: usize,
}

impl Limits {
    pub const MAX_BYTES: usize = 16 << 20;
}

impl Default for Limits {
    /// Hosts write the payload as soon as they spawn the hook; these leave
    /// room for a loaded machine while staying far inside every host's hook
    /// timeout.
    fn default() -> Self {
        Limits {
            first_byte: Duration::from_secs(5),
            idle: Duration::from_secs(2),
            deadline: Duration::from_secs(10),
            max_bytes: Limits::MAX_BYTES,
        }
    }
}

/// Which clock ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    FirstByte,
    Idle,
    Deadline,
}

impl fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutPhase::FirstByte => "no first byte",
            TimeoutPhase::Idle => "no more bytes",
            TimeoutPhase::Deadline => "the overall deadline passed",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StdinError {
    #[error("stdin was empty")]
    Empty,
    #[error("stdin is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("timed out reading stdin ({phase}) after {bytes} bytes")]
    Timeout { phase: TimeoutPhase, bytes: usize },
    #[error("stdin is not valid UTF-8 (byte {offset})")]
    InvalidUtf8 { offset: usize },
    #[error("stdin is not valid JSON at line {line}, column {col}: {msg}")]
    InvalidJson {
        line: usize,
        col: usize,
        msg: String,
    },
    #[error("stdin JSON is nested deeper than {limit} levels")]
    TooDeep { limit: usize },
    #[error("reading stdin failed: {0}")]
    Io(#[from] io::Error),
}

/// The deepest nesting serde_json parses (its recursion limit is 128 levels,
/// exclusive): anything deeper could never parse, so the scanner stops there
/// without recursing.
pub const MAX_DEPTH: usize = 127;

/// Reads one JSON value from `reader` (normally stdin) within `limits`.
///
/// Bytes after the first complete value are left unread or ignored.
pub fn read_json(mut reader: impl Read + AsFd, limits: &Limits) -> Result<Value, StdinError> {
    let start = Instant::now();
    let deadline = start + limits.deadline;
    let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
    // Most payloads are a few KB. A 64 KiB buffer zeroed up front costs a
    // memset and fresh pages on every event, so reads start small and only
    // a payload that fills the buffer switches to pipe-sized reads.
    let mut chunk = vec![0u8; 8 * 1024];
    let mut scanner = Scanner::default();
    let mut end: Option<usize> = None;

    while end.is_none() {
        let (until, phase) = if buf.is_empty() {
            (start + limits.first_byte, TimeoutPhase::FirstByte)
        } else {
            (Instant::now() + limits.idle, TimeoutPhase::Idle)
        };
        let (until, phase) = if deadline <= until {
            (deadline, TimeoutPhase::Deadline)
        } else {
            (until, phase)
        };
        if !wait_readable(reader.as_fd(), until)? {
            return Err(StdinError::Timeout {
                phase,
                bytes: buf.len(),
            });
        }
        let n = match reader.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            break;
        }
        if n == chunk.len() && n < 64 * 1024 {
            chunk.resize(64 * 1024, 0);
        }
        let take = match scanner.feed(&chunk[..n]) {
            Scan::More => n,
            Scan::Done(at) => {
                end = Some(buf.len() + at);
                at
            }
            Scan::TooDeep => return Err(StdinError::TooDeep { limit: MAX_DEPTH }),
        };
        if buf.len() + take > limits.max_bytes {
            return Err(StdinError::TooLarge {
                limit: limits.max_bytes,
            });
        }
        buf.extend_from_slice(&chunk[..take]);
    }

    let bytes = &buf[..end.unwrap_or(buf.len())];
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(StdinError::Empty);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| StdinError::InvalidUtf8 {
        offset: e.valid_up_to(),
    })?;
    serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        if full.starts_with("recursion limit exceeded") {
            return StdinError::TooDeep { limit: MAX_DEPTH };
        }
        let msg = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(m, _)| m)
            .to_owned();
        StdinError::InvalidJson {
            line: e.line(),
            col: e.column(),
            msg,
        }
    })
}

/// Waits until `fd` has something to read (data, EOF or an error) or `until`
/// passes; `Ok(false)` on timeout.
fn wait_readable(fd: BorrowedFd<'_>, until: Instant) -> io::Result<bool> {
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        // Round up: a sub-millisecond remainder must not become a busy loop.
        let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        match poll_in(fd, ms) {
            Ok(ready) => return Ok(ready),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

#[allow(unsafe_code)]
fn poll_in(fd: BorrowedFd<'_>, timeout_ms: i32) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid, exclusively borrowed pollfd for the whole
    // call (nfds = 1), and `fd` is borrowed, so the descriptor stays open.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if pfd.revents & libc::POLLNVAL != 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // POLLHUP and POLLERR also mean "read now": it returns EOF or the error.
    Ok(rc > 0)
}

enum Scan {
    More,
    /// The value ends just before this index of the chunk.
    Done(usize),
    TooDeep,
}

/// Finds where the first top-level JSON value ends, without parsing it:
/// string-aware bracket counting, iterative, so depth costs nothing but a
/// counter. Malformed input just ends early and the parser reports it.
#[derive(Default)]
struct Scanner {
    depth: usize,
    in_string: bool,
    escaped: bool,
    started: bool,
    /// A top-level number or literal, which only whitespace or EOF can end.
    bare: bool,
}

impl Scanner {
    fn feed(&mut self, chunk: &[u8]) -> Scan {
        for (i, &b) in chunk.iter().enumerate() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.depth == 0 {
                        return Scan::Done(i + 1);
                    }
                }
                continue;
            }
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => {
                    if self.bare {
                        return Scan::Done(i);
                    }
                }
                _ if self.bare => {}
                b'"' => {
                    self.in_string = true;
                    self.started = true;
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    self.started = true;
                    if self.depth > MAX_DEPTH {
                        return Scan::TooDeep;
                    }
                }
                b'}' | b']' => {
                    if self.depth <= 1 {
                        return Scan::Done(i + 1);
                    }
                    self.depth -= 1;
                }
                _ => {
                    if self.depth == 0 && !self.started {
                        self.bare = true;
                        self.started = true;
                    }
                }
            }
        }
        Scan::More
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::thread;

    fn quick() -> Limits {
        Limits {
            first_byte: Duration::from_millis(300),
            idle: Duration::from_millis(300),
            deadline: Duration::from_secs(3),
            max_bytes: Limits::MAX_BYTES,
        }
    }

    /// Writes `data` from a thread and closes the pipe.
    fn feed_and_close(data: Vec<u8>, limits: &Limits) -> Result<Value, StdinError> {
        let (reader, mut writer) = io::pipe().unwrap();
        let t = thread::spawn(move || {
            let _ = writer.write_all(&data);
        });
        let r = read_json(reader, limits);
        t.join().unwrap();
        r
    }

    #[test]
    fn reads_an_object_and_ignores_what_follows() {
        let v = feed_and_close(
            br#"{"a":"}{\"]","b":[1,{"c":2}]} {"x":1}"#.to_vec(),
            &quick(),
        )
        .unwrap();
        assert_eq!(v, serde_json::json!({"a": "}{\"]", "b": [1, {"c": 2}]}));
    }

    #[test]
    fn top_level_scalars() {
        assert_eq!(feed_and_close(b" 42".to_vec(), &quick()).unwrap(), 42);
        assert_eq!(
            feed_and_close(br#""s\"x""#.to_vec(), &quick()).unwrap(),
            "s\"x"
        );
        assert_eq!(feed_and_close(b"true\n".to_vec(), &quick()).unwrap(), true);
    }

    #[test]
    fn empty_and_blank_input_are_empty() {
        assert!(matches!(
            feed_and_close(Vec::new(), &quick()),
            Err(StdinError::Empty)
        ));
        assert!(matches!(
            feed_and_close(b" \n\t ".to_vec(), &quick()),
            Err(StdinError::Empty)
        ));
    }

    #[test]
    fn truncated_input_is_invalid_json_with_a_position() {
        match feed_and_close(br#"{"session_id": "abc", "tool"#.to_vec(), &quick()) {
            Err(StdinError::InvalidJson { line, col, msg }) => {
                assert_eq!(line, 1);
                assert!(col > 20, "{col}");
                assert!(msg.contains("EOF"), "{msg}");
            }
            other => panic!("{other:?}"),
        }
        match feed_and_close(b"{\"a\":\n  nope}".to_vec(), &quick()) {
            Err(StdinError::InvalidJson { line, .. }) => assert_eq!(line, 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_utf8_is_its_own_error() {
        let r = feed_and_close(b"{\"a\":\"\xff\xfe\"}".to_vec(), &quick());
        assert!(
            matches!(r, Err(StdinError::InvalidUtf8 { offset: 6 })),
            "{r:?}"
        );
    }

    #[test]
    fn fifty_megabytes_is_too_large_and_fast() {
        let started = Instant::now();
        let (reader, mut writer) = io::pipe().unwrap();
        let t = thread::spawn(move || {
            let block = vec![b' '; 1 << 20];
            let _ = writer.write_all(b"[");
            for _ in 0..50 {
                if writer.write_all(&block).is_err() {
                    break; // the reader gave up, as it should
                }
            }
        });
        let r = read_json(reader, &quick());
        assert!(
            matches!(r, Err(StdinError::TooLarge { limit }) if limit == Limits::MAX_BYTES),
            "{r:?}"
        );
        t.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn deep_nesting_is_a_clean_error_without_recursion() {
        let started = Instant::now();
        let mut data = vec![b'['; 200_000];
        data.extend(vec![b']'; 200_000]);
        let r = feed_and_close(data, &quick());
        assert!(
            matches!(r, Err(StdinError::TooDeep { limit: MAX_DEPTH })),
            "{r:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn the_deepest_accepted_nesting_still_parses() {
        let mut data = vec![b'['; MAX_DEPTH];
        data.extend(vec![b']'; MAX_DEPTH]);
        let r = feed_and_close(data, &quick());
        assert!(r.is_ok(), "the scanner's limit is serde's: {r:?}");
        let mut data = vec![b'['; MAX_DEPTH + 1];
        data.extend(vec![b']'; MAX_DEPTH + 1]);
        let r = feed_and_close(data, &quick());
        assert!(matches!(r, Err(StdinError::TooDeep { .. })), "{r:?}");
    }

    #[test]
    fn a_writer_that_never_closes_is_answered_at_once() {
        let (reader, mut writer) = io::pipe().unwrap();
        writer
            .write_all(br#"{"session_id":"s","hook_event_name":"Stop"}"#)
            .unwrap();
        let started = Instant::now();
        let limits = Limits {
            idle: Duration::from_secs(5),
            ..quick()
        };
        let v = read_json(reader, &limits).unwrap();
        assert_eq!(v["session_id"], "s");
        assert!(started.elapsed() < Duration::from_secs(1));
        drop(writer);
    }

    #[test]
    fn first_byte_timeout() {
        let (reader, writer) = io::pipe().unwrap();
        let started = Instant::now();
        let r = read_json(reader, &quick());
        assert!(
            matches!(
                r,
                Err(StdinError::Timeout {
                    phase: TimeoutPhase::FirstByte,
                    bytes: 0
                })
            ),
            "{r:?}"
        );
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(290) && took < Duration::from_secs(2),
            "{took:?}"
        );
        drop(writer);
    }

    #[test]
    fn idle_timeout_after_a_partial_value() {
        let (reader, mut writer) = io::pipe().unwrap();
        writer.write_all(br#"{"session_id":"#).unwrap();
        let r = read_json(reader, &quick());
        assert!(
            matches!(
                r,
                Err(StdinError::Timeout {
                    phase: TimeoutPhase::Idle,
                    bytes: 14
                })
            ),
            "{r:?}"
        );
        drop(writer);
    }

    #[test]
    fn deadline_stops_a_trickle() {
        let (reader, mut writer) = io::pipe().unwrap();
        let t = thread::spawn(move || {
            let _ = writer.write_all(b"[");
            for _ in 0..100 {
                thread::sleep(Duration::from_millis(20));
                if writer.write_all(b"1,").is_err() {
                    break;
                }
            }
        });
        let limits = Limits {
            deadline: Duration::from_millis(250),
            ..quick()
        };
        let started = Instant::now();
        let r = read_json(reader, &limits);
        assert!(
            matches!(
                r,
                Err(StdinError::Timeout {
                    phase: TimeoutPhase::Deadline,
                    ..
                })
            ),
            "{r:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(1));
        t.join().unwrap();
    }

    #[test]
    fn scanner_finds_the_end_across_chunks() {
        let mut s = Scanner::default();
        assert!(matches!(s.feed(br#"{"a":"x\"#), Scan::More));
        assert!(matches!(s.feed(br#""}"#), Scan::More));
        assert!(matches!(s.feed(br#""} tail"#), Scan::Done(2)));
    }
}
