//! Every environment variable keryx-hooks reads, named once.

pub const HOME: &str = "HOME";
pub const PATH: &str = "PATH";
pub const KERYX_HOME: &str = "KERYX_HOME";
pub const KERYX_HOOKS: &str = "KERYX_HOOKS";
pub const KERYX_SNAPSHOT_ROOT: &str = "KERYX_SNAPSHOT_ROOT";
pub const KERYX_LOG: &str = "KERYX_LOG";
pub const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
pub const XDG_STATE_HOME: &str = "XDG_STATE_HOME";
pub const NO_COLOR: &str = "NO_COLOR";

/// Inherited by hook processes, only when already set (the spec's allowlist).
pub const HOOK_INHERITED: [&str; 6] = ["PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TERM"];

pub fn get(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
