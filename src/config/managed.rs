//! The managed layer: a root-owned hooks file at a fixed system path,
//! loaded above the user and project layers. The path is a constant of the
//! binary; no environment variable moves it, so a process running as the
//! person (an agent included) cannot point the shim at a layer of its own.
//! Every load stats the file and each directory above it: a managed layer
//! a non-root user or group could write is refused, which fails the load,
//! and a failed load denies every gate-capable event with the reason.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::config::diagnostic::Diagnostic;

/// The managed directory.
pub const DIR: &str = "/etc/keryx";
/// The managed hooks file in [`DIR`].
pub const HOOKS_FILE: &str = "hooks.json";

/// The managed hooks file, when the managed directory exists; `None`
/// (one stat) on a machine without one.
pub fn hooks_file() -> Option<PathBuf> {
    std::fs::symlink_metadata(DIR).ok()?;
    Some(Path::new(DIR).join(HOOKS_FILE))
}

/// Why `meta` (of `path`) is not safe to trust as root's, if it is not:
/// not owned by root, writable by its group when that group is not root's,
/// or writable by others.
pub fn unsafe_owner(path: &Path, meta: &std::fs::Metadata) -> Option<String> {
    let mode = meta.mode();
    if meta.uid() != 0 {
        return Some(format!(
            "`{}` is owned by uid {}, not root",
            path.display(),
            meta.uid()
        ));
    }
    if mode & 0o020 != 0 && meta.gid() != 0 {
        return Some(format!(
            "`{}` is writable by group gid {} (mode {:o})",
            path.display(),
            meta.gid(),
            mode & 0o7777
        ));
    }
    if mode & 0o002 != 0 {
        return Some(format!(
            "`{}` is writable by every user (mode {:o})",
            path.display(),
            mode & 0o7777
        ));
    }
    None
}

/// Checks that `path` (a managed file, absent or present) and every
/// directory above it, symlinks resolved, are root's and writable by no
/// one else. One stat per component.
pub fn check_owner(path: &Path) -> Result<(), Diagnostic> {
    let refuse = |why: String| {
        Diagnostic::error(
            "managed-layer-insecure",
            format!(
                "the managed layer is refused: {why}; a file a non-root user can change cannot hold policy above that user. Fix: `chown root:root` and `chmod go-w` it (as root), or remove `{DIR}`"
            ),
        )
        .at(path)
    };
    let real = match std::fs::canonicalize(path) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::symlink_metadata(path) {
                // A dangling symlink: its target could be created by anyone
                // who can write where it points.
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(refuse(format!(
                        "`{}` is a symlink to a file that does not exist",
                        path.display()
                    )));
                }
                _ => path
                    .parent()
                    .and_then(|p| std::fs::canonicalize(p).ok())
                    .unwrap_or_else(|| Path::new(DIR).to_path_buf()),
            }
        }
        Err(e) => return Err(refuse(format!("cannot read `{}`: {e}", path.display()))),
    };
    for p in real.ancestors() {
        let meta = std::fs::metadata(p)
            .map_err(|e| refuse(format!("cannot read `{}`: {e}", p.display())))?;
        if let Some(why) = unsafe_owner(p, &meta) {
            return Err(refuse(why));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_writable_by_others_is_refused() {
        let dir = std::env::temp_dir().join(format!("keryx-managed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("hooks.json");
        std::fs::write(&f, "{}").unwrap();
        let meta = std::fs::metadata(&f).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o646)).unwrap();
        let loose = std::fs::metadata(&f).unwrap();
        let said = unsafe_owner(&f, &loose);
        if meta.uid() == 0 {
            assert!(said.unwrap().contains("writable by every user"));
        } else {
            assert!(said.unwrap().contains("not root"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
