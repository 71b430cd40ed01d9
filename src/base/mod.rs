//! Leaves every other module may use and that use nothing of the crate:
//! text capping and hex, UTC time stamps, private directories. Nothing here
//! knows about hooks, hosts or configuration.

pub mod fs;
pub mod text;
pub mod time;
