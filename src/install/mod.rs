//! The snapshot installer (ARCHITECTURE §6): copying a hook source into a
//! session-stable snapshot, the one source-hash function, the manifest, the
//! drift classifier, the host-config editors that wire hosts to it (with
//! each host's fail-closed switch where every copy of it knows the switch),
//! the hosts' own plugin formats, Codex's hook-review state, and the review of
//! the commands a resync would start running.

pub mod classify;
pub mod codex_trust;
mod error;
pub mod fail_closed;
pub use crate::hash;
pub mod host_sandbox;
pub mod hostfile;
pub mod import;
pub mod manifest;
mod own_dir;
pub mod plugin;
pub mod preflight;
pub mod resync;
pub mod snapshot;
pub mod watch;
pub mod wired;

pub use error::SnapshotError;
