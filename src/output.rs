//! The only place that writes to stdout. Under `run`, stdout is the host
//! protocol: exactly one JSON object or nothing.
#![allow(clippy::print_stdout)]

use std::io::Write;

/// Writes `text` to stdout as is; a closed pipe is not an error worth a panic.
pub fn stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Writes `text` and a newline.
pub fn line(text: &str) {
    stdout(&format!("{text}\n"));
}

/// Pretty JSON and a newline.
pub fn json(value: &serde_json::Value) {
    line(&serde_json::to_string_pretty(value).unwrap_or_default());
}

/// Writes one line to stderr.
pub fn err_line(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{text}");
}
