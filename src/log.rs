//! The log file: `$XDG_STATE_HOME/keryx/keryx-hooks.log`, bounded by
//! rotating to `.1` past 1 MiB. Under `run`, stdout is the host protocol, so
//! diagnostics go here instead. `KERYX_LOG` sets the level (default warn).

use std::path::Path;

use crate::env_vars;

const MAX_LOG_BYTES: u64 = 1 << 20;

/// Installs the file logger; any failure just leaves logging off.
pub fn init(log_file: &Path) {
    let level = match env_vars::get(env_vars::KERYX_LOG).as_deref() {
        Some("off") => return,
        Some("error") => tracing::Level::ERROR,
        Some("info") => tracing::Level::INFO,
        Some("debug") => tracing::Level::DEBUG,
        Some("trace") => tracing::Level::TRACE,
        _ => tracing::Level::WARN,
    };
    if let Some(dir) = log_file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if std::fs::metadata(log_file).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = std::fs::rename(log_file, log_file.with_extension("log.1"));
    }
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_file)
    else {
        return;
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
}
