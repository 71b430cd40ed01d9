//! Leaves every other module may use and that use nothing of the crate:
//! text capping and hex, UTC time stamps, private directories, a bounded
//! run of a short-lived program. Nothing here
//! knows about hooks, hosts or configuration.

pub mod fs;
pub mod process;
pub mod text;
pub mod time;
