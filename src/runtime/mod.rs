//! The hook runtime: the event table, the payload codec, selection, firing,
//! failure semantics and composition.

pub mod events;
pub mod types;
