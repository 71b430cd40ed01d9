//! Host adapters as data plus one engine: each `adapters/<host>/adapter.json`
//! says how to decode that host's payloads into an `EventInput` and encode a
//! `FireResult` back; adding a host is a folder. build.rs checks every file
//! and turns it into a `static` [`Adapter`] at build time, so looking up a
//! host reads data already in the binary: no parsing, no allocation.

mod decode;
mod encode;
mod keryx;
pub mod loads;
pub mod shim_command;
pub mod stdin_guard;

#[cfg(test)]
pub(crate) use crate::adapter::ADAPTER_SOURCES;
pub use crate::adapter::{
    Adapter, AlsoRead, AlsoRuns, Bridge, ConfigFiles, ConfigFormat, FailClosedSwitch, Failing,
    HomeEnv, HookReview, HostEvent, HostSandbox, Import, ImportReads, Layout, Package, PackageKind,
    ProjectTrust, Reads, RunsFrom, ShimFailure, ShimFallback, Sibling, TimeoutUnit,
};
pub use crate::adapter::{adapter, all, closest, host_names, lookup, native};
pub use decode::DecodeError;
pub use encode::Encoded;

#[cfg(test)]
mod tests;
