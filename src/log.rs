//! The log file: `$XDG_STATE_HOME/keryx/keryx-hooks.log`, bounded by
//! rotating to `.1` past 1 MiB. Under `run`, stdout is the host protocol, so
//! diagnostics go here instead. `KERYX_LOG` sets the level (default warn).
//!
//! The file is opened when there is something to write, not before: most
//! events log nothing, and `run` happens on every tool call. For the same
//! reason the subscriber is this file's own: one line per event, `time
//! LEVEL target: message key=value …`, with no span registry to set up
//! (the crate has no spans), which a general-purpose subscriber allocates
//! on every start.
//!
//! Every control (but the line end), bidi and zero-width character is
//! written escaped: messages quote payload and hook text, and the log is
//! read on a terminal (`tail`, `less`).

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use crate::env_vars;

const MAX_LOG_BYTES: u64 = 1 << 20;

/// Installs the file logger. `log_file` is called once, on the first line
/// to write; any failure then just drops the line.
pub fn init(log_file: impl FnOnce() -> PathBuf + Send + Sync + 'static) {
    let level = match env_vars::get(env_vars::KERYX_LOG).as_deref() {
        Some("off") => return,
        Some("error") => Level::ERROR,
        Some("info") => Level::INFO,
        Some("debug") => Level::DEBUG,
        Some("trace") => Level::TRACE,
        _ => Level::WARN,
    };
    let _ = tracing::subscriber::set_global_default(FileLog {
        level,
        log: LazyLog::new(log_file),
    });
}

/// Writes each event at or above `level` as one line of the lazy log.
struct FileLog {
    level: Level,
    log: LazyLog,
}

impl Subscriber for FileLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= self.level
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::from_level(self.level))
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let _ = self.log.make_writer().write_all(line(event).as_bytes());
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// `2026-12-02T01:20:00.123Z  WARN keryx_hooks::commands::run: message k=v`.
fn line(event: &Event<'_>) -> String {
    let meta = event.metadata();
    let mut line = format!(
        "{} {:>5} {}: ",
        crate::base::time::timestamp_now(),
        meta.level(),
        meta.target()
    );
    let mut fields = Fields {
        message: String::new(),
        rest: String::new(),
    };
    event.record(&mut fields);
    line.push_str(&fields.message);
    line.push_str(&fields.rest);
    line.push('\n');
    line
}

/// An event's message, then its other fields as ` key=value`.
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        }
    }
}

/// Where the log goes, resolved and rotated on first use.
struct LazyLog {
    locate: std::sync::Mutex<Option<Box<dyn FnOnce() -> PathBuf + Send + Sync>>>,
    path: OnceLock<PathBuf>,
}

impl LazyLog {
    fn new(locate: impl FnOnce() -> PathBuf + Send + Sync + 'static) -> Self {
        LazyLog {
            locate: std::sync::Mutex::new(Some(Box::new(locate))),
            path: OnceLock::new(),
        }
    }

    fn path(&self) -> &Path {
        self.path.get_or_init(|| {
            let locate = self.locate.lock().ok().and_then(|mut l| l.take());
            let path = locate.map(|f| f()).unwrap_or_default();
            if let Some(dir) = path.parent() {
                let _ = crate::base::fs::create_private_dir(dir);
            }
            if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
                let _ = std::fs::rename(&path, path.with_extension("log.1"));
            }
            path
        })
    }
}

/// One log line's writer: the file opened for append, or nowhere.
enum LineWriter {
    File(File),
    Nowhere,
}

impl Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let LineWriter::File(f) = self else {
            return Ok(buf.len());
        };
        f.write_all(crate::escape::escape_text(&String::from_utf8_lossy(buf)).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            LineWriter::File(f) => f.flush(),
            LineWriter::Nowhere => Ok(()),
        }
    }
}

impl LazyLog {
    fn make_writer(&self) -> LineWriter {
        let path = self.path();
        if path.as_os_str().is_empty() {
            return LineWriter::Nowhere;
        }
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(crate::base::fs::FILE_MODE)
            .open(path)
            .map_or(LineWriter::Nowhere, LineWriter::File)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One line per event at or above the level: time, level, target,
    /// message, then the other fields; nothing below the level.
    #[test]
    fn events_are_lines_with_their_fields() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keryx-hooks.log");
        let f2 = file.clone();
        let log = FileLog {
            level: Level::WARN,
            log: LazyLog::new(move || f2),
        };
        tracing::subscriber::with_default(log, || {
            tracing::warn!(host = "codex", n = 3, "a payload: {}", "bad");
            tracing::info!("not written");
            tracing::error!("second");
        });
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let (time, rest) = lines[0].split_once(' ').unwrap();
        assert!(time.ends_with('Z') && time.len() == 24, "{time}");
        assert_eq!(
            rest,
            " WARN keryx_hooks::log::tests: a payload: bad host=codex n=3"
        );
        assert!(lines[1].ends_with("ERROR keryx_hooks::log::tests: second"));
    }

    #[test]
    fn the_file_appears_with_the_first_line_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/keryx/keryx-hooks.log");
        let f2 = file.clone();
        let log = LazyLog::new(move || f2);
        assert!(!file.exists());
        let mut w = log.make_writer();
        w.write_all(b"one\n").unwrap();
        drop(w);
        let mut w = log.make_writer();
        w.write_all(b"two\n").unwrap();
        drop(w);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");
    }

    #[test]
    fn the_log_and_its_new_directories_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/keryx/keryx-hooks.log");
        let f2 = file.clone();
        LazyLog::new(move || f2)
            .make_writer()
            .write_all(b"one\n")
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        assert_eq!(mode(&dir.path().join("state")), 0o700);
    }

    #[test]
    fn hidden_characters_are_written_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keryx-hooks.log");
        let f2 = file.clone();
        let log = LazyLog::new(move || f2);
        log.make_writer()
            .write_all("cmd \u{202E}txt\r\u{1b}[2J\n".as_bytes())
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "cmd \\u202Etxt\\x0D\\x1B[2J\n"
        );
    }

    #[test]
    fn a_full_log_rotates_on_first_use() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keryx-hooks.log");
        std::fs::write(&file, vec![b'x'; (MAX_LOG_BYTES + 1) as usize]).unwrap();
        let f2 = file.clone();
        let log = LazyLog::new(move || f2);
        log.make_writer().write_all(b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
        assert!(dir.path().join("keryx-hooks.log.1").exists());
    }
}
