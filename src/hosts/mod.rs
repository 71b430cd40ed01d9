//! Host adapters as data plus one engine: each `adapters/<host>/adapter.json`
//! says how to decode that host's payloads into an `EventInput` and encode a
//! `FireResult` back; adding a host is a folder. build.rs checks every file
//! and turns it into a `static` [`Adapter`] at build time, so looking up a
//! host reads data already in the binary: no parsing, no allocation.

mod decode;
mod encode;
/// Also build.rs's: compiled here only for its tests.
#[cfg(test)]
mod generate;
mod keryx;
pub mod shim_command;
mod spec;
pub mod stdin_guard;

pub use decode::DecodeError;
pub use encode::Encoded;
pub use spec::{Adapter, Bridge, ConfigFiles, ConfigFormat, HomeEnv, HostEvent, TimeoutUnit};

include!(concat!(env!("OUT_DIR"), "/adapters.rs"));

/// The adapters build.rs generated, one `static` per host, and the table
/// of them sorted by name.
mod data {
    use super::spec::*;
    use crate::runtime::events::Event;

    include!(concat!(env!("OUT_DIR"), "/adapter_data.rs"));
}

/// The adapter for `host` (`claude-code`, `gemini-cli`, …); `None` for a
/// host with no folder.
pub fn adapter(host: &str) -> Option<&'static Adapter> {
    let table = data::ADAPTERS;
    table
        .binary_search_by(|(name, _)| (*name).cmp(host))
        .ok()
        .map(|i| table[i].1)
}

/// Every host with an adapter, sorted by name.
pub fn host_names() -> &'static [&'static str] {
    data::HOST_NAMES
}

#[cfg(test)]
mod tests;
