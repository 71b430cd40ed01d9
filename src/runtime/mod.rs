//! The hook runtime: the event table, the payload codec, selection, firing,
//! failure semantics and composition.

pub mod codec;
pub mod compose;
pub use crate::events;
pub mod fire;
pub mod native;
pub mod reply;
pub mod select;
pub mod semantics;
pub mod types;
