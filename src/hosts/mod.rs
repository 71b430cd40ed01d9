//! Host adapters as data plus one engine: each `adapters/<host>/adapter.json`
//! (embedded at build time) says how to decode that host's payloads into an
//! `EventInput` and encode a `FireResult` back; adding a host is a folder.

mod decode;
mod encode;
mod keryx;
mod spec;
pub mod stdin_guard;

use std::sync::OnceLock;

pub use decode::DecodeError;
pub use encode::Encoded;
pub use spec::{Adapter, Bridge, ConfigFiles, ConfigFormat, HomeEnv, HostEvent, TimeoutUnit};

include!(concat!(env!("OUT_DIR"), "/adapters.rs"));

/// The adapter for `host` (`claude-code`, `gemini-cli`, …), parsed from the
/// embedded data on first use; `None` for a host with no folder.
pub fn adapter(host: &str) -> Option<&'static Adapter> {
    static PARSED: OnceLock<Vec<OnceLock<Adapter>>> = OnceLock::new();
    let index = ADAPTER_SOURCES.iter().position(|(name, _)| *name == host)?;
    let slots = PARSED.get_or_init(|| ADAPTER_SOURCES.iter().map(|_| OnceLock::new()).collect());
    Some(slots[index].get_or_init(|| {
        let (name, text) = ADAPTER_SOURCES[index];
        // The files are compiled in and checked by the unit tests, so a parse
        // failure here is a build defect, not a user error.
        Adapter::parse(text).unwrap_or_else(|e| panic!("adapters/{name}/adapter.json: {e}"))
    }))
}

/// Every host with an adapter, sorted by name.
pub fn host_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| ADAPTER_SOURCES.iter().map(|(name, _)| *name).collect())
}

#[cfg(test)]
mod tests;
