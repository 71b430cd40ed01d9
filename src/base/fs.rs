//! Files and directories only their owner may read.

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

/// Private directories: owner only.
pub const DIR_MODE: u32 = 0o700;
/// Private files: owner only.
pub const FILE_MODE: u32 = 0o600;

/// Makes `dir` and its missing parents, each [`DIR_MODE`] (before the
/// umask, which can only take bits away). Existing directories are left as
/// they are.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}
