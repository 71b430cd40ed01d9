//! The snapshot installer (ARCHITECTURE §6): copying a hook source into a
//! session-stable snapshot, the one source-hash function, the manifest, the
//! drift classifier, and the host-config editors that wire hosts to it.

pub mod classify;
pub mod hash;
pub mod hostfile;
pub mod manifest;
pub mod snapshot;
