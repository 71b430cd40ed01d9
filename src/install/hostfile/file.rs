//! Reading and replacing one host file without ever leaving it half
//! written: an advisory lock on its directory (every installer run takes it,
//! so concurrent installs serialise), a temp file in the same directory,
//! fsync, rename, fsync of the directory. The original is backed up once.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::HostFileError;

/// Mode of a file we create: what hosts create themselves.
pub const NEW_FILE_MODE: u32 = 0o644;

/// The file to edit behind `path`: a symlink is followed (dotfile managers
/// link these files), a dead one is refused rather than replaced by a file.
pub fn resolve(path: &Path) -> Result<PathBuf, HostFileError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(path.to_path_buf()),
        Err(error) => Err(HostFileError::Read {
            path: path.to_path_buf(),
            error,
        }),
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(real) if real.is_dir() => Err(HostFileError::LinksToDirectory {
                path: path.to_path_buf(),
            }),
            Ok(real) => Ok(real),
            Err(_) => {
                let target = std::fs::read_link(path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into());
                Err(HostFileError::DeadLink {
                    path: path.to_path_buf(),
                    target,
                })
            }
        },
        Ok(m) if m.is_dir() => Err(HostFileError::Directory {
            path: path.to_path_buf(),
        }),
        Ok(_) => Ok(path.to_path_buf()),
    }
}

/// Holds the advisory lock on a directory until dropped.
pub struct DirLock(#[allow(dead_code)] File);

/// Locks `dir` (flock on the directory itself, so no lock file is left
/// beside the user's config).
pub fn lock(dir: &Path) -> Result<DirLock, HostFileError> {
    let f = File::open(dir).map_err(|error| HostFileError::Open {
        path: dir.to_path_buf(),
        error,
    })?;
    f.lock().map_err(|error| HostFileError::Lock {
        path: dir.to_path_buf(),
        error,
    })?;
    Ok(DirLock(f))
}

/// Locks the directory `path` lives in, creating it first when `create` is
/// set; a directory that does not exist (a dry run) is not locked.
pub fn lock_parent(path: &Path, create: bool) -> Result<Option<DirLock>, HostFileError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if create {
        std::fs::create_dir_all(dir).map_err(|error| HostFileError::CreateDir {
            path: dir.to_path_buf(),
            error,
        })?;
    }
    if dir.is_dir() {
        lock(dir).map(Some)
    } else {
        Ok(None)
    }
}

/// A host file larger than this is refused: settings files are a few KiB,
/// and a link to `/dev/zero` or a huge file must not exhaust memory.
pub const MAX_HOST_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The file's text, `None` when it does not exist; a file that is not UTF-8
/// is refused (it cannot be edited without changing bytes we do not own),
/// and so is anything but a regular file (a FIFO, a device: it is opened
/// without blocking and never read) or a file over [`MAX_HOST_FILE_BYTES`].
pub fn read(path: &Path) -> Result<Option<String>, HostFileError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |error| HostFileError::Read {
        path: path.to_path_buf(),
        error,
    };
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cannot(e)),
        Ok(f) => f,
    };
    let m = f.metadata().map_err(cannot)?;
    if !m.is_file() {
        return Err(HostFileError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    let too_big = || HostFileError::TooLarge {
        path: path.to_path_buf(),
    };
    if m.len() > MAX_HOST_FILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(m.len() as usize);
    f.take(MAX_HOST_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_HOST_FILE_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| HostFileError::NotUtf8 {
            path: path.to_path_buf(),
            offset: e.utf8_error().valid_up_to(),
        })
}

/// Refuses `path` (a project-scope host file, which may not exist yet)
/// when it, or the directory it would be created in, resolves outside
/// `root`: a committed `.claude/settings.json -> ~/.claude/settings.json`
/// (or a linked `.claude` directory) would otherwise have `install --scope
/// project` write the user's own config, or `/etc`.
pub fn refuse_outside(path: &Path, root: &Path) -> Result<(), HostFileError> {
    let real_root = std::fs::canonicalize(root).map_err(|error| HostFileError::ProjectRoot {
        root: root.to_path_buf(),
        error,
    })?;
    // The deepest part of `path` that exists is what a write goes through.
    let mut probe = path.to_path_buf();
    let real = loop {
        match std::fs::canonicalize(&probe) {
            Ok(real) => break real,
            Err(_) if std::fs::symlink_metadata(&probe).is_ok() => {
                // A dangling link: `resolve` names it; here it leads nowhere
                // we can check, so it is refused too.
                return Err(HostFileError::LeadsNowhere { path: probe });
            }
            Err(_) => match probe.parent() {
                Some(p) if !p.as_os_str().is_empty() => probe = p.to_path_buf(),
                _ => return Ok(()),
            },
        }
    };
    if real.starts_with(&real_root) {
        return Ok(());
    }
    Err(HostFileError::OutsideProject {
        path: path.to_path_buf(),
        real,
        root: real_root,
    })
}

pub fn mode(path: &Path) -> Option<u32> {
    std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

/// `<file>.keryx-hooks.bak`, beside the file.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".keryx-hooks.bak");
    path.with_file_name(name)
}

/// Replaces `path` with `text` in one rename; `mode` is kept. On any error
/// the original is untouched and the temp file is gone.
pub fn write_atomic(path: &Path, text: &str, mode: u32) -> Result<(), HostFileError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let fail = |what, error| HostFileError::Write {
        path: path.to_path_buf(),
        what,
        error,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(path))
        .tempfile_in(dir)
        .map_err(|e| fail("create a temp file for", e))?;
    tmp.write_all(text.as_bytes())
        .map_err(|e| fail("write", e))?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| fail("set the mode of", e))?;
    tmp.as_file().sync_all().map_err(|e| fail("flush", e))?;
    tmp.persist(path).map_err(|e| fail("replace", e.error))?;
    // The rename itself is durable only once the directory is.
    let _ = File::open(dir).and_then(|d| d.sync_all());
    Ok(())
}

/// The prefix of [`write_atomic`]'s temp files for `path`.
fn temp_prefix(path: &Path) -> String {
    format!(
        ".{}.keryx-tmp-",
        path.file_name().unwrap_or_default().to_string_lossy()
    )
}

/// Removes the temp copies a killed [`write_atomic`] left beside `path`
/// (`.<file>.keryx-tmp-*`, regular files only). Call it holding the
/// directory's lock: every write makes its temp file under that lock, so
/// any temp file there then is a leftover. Best effort: a leftover that
/// cannot be removed is left for the next run.
pub fn remove_leftovers(path: &Path) {
    let dir = path.parent().unwrap_or(Path::new("."));
    let prefix = temp_prefix(path);
    let Ok(entries) = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return;
    };
    for e in entries.flatten() {
        let ours = e
            .file_name()
            .to_str()
            .is_some_and(|n| n.len() > prefix.len() && n.starts_with(&prefix));
        if ours && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Removes a file we created, durably.
pub fn remove(path: &Path) -> Result<(), HostFileError> {
    std::fs::remove_file(path).map_err(|error| HostFileError::Remove {
        path: path.to_path_buf(),
        error,
    })?;
    if let Some(dir) = path.parent() {
        let _ = File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftover_temp_copies_of_this_file_only_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("settings.json");
        let left = tmp.path().join(".settings.json.keryx-tmp-a1B2c3");
        let other = tmp.path().join(".other.json.keryx-tmp-a1B2c3");
        let bare = tmp.path().join(".settings.json.keryx-tmp-");
        for p in [&left, &other, &bare] {
            std::fs::write(p, "x").unwrap();
        }
        std::fs::create_dir(tmp.path().join(".settings.json.keryx-tmp-dir")).unwrap();
        remove_leftovers(&f);
        assert!(!left.exists());
        assert!(other.exists() && bare.exists());
        assert!(tmp.path().join(".settings.json.keryx-tmp-dir").is_dir());
        write_atomic(&f, "{}", NEW_FILE_MODE).unwrap();
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".settings.json.keryx-tmp-") && n.len() > 25)
            .collect();
        assert_eq!(names, [".settings.json.keryx-tmp-dir"]);
    }

    #[test]
    fn symlinks_dead_links_and_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real.json");
        std::fs::write(&real, "{}").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = tmp.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let resolved = resolve(&link).unwrap();
        assert_eq!(resolved, std::fs::canonicalize(&real).unwrap());
        write_atomic(&resolved, "{\"a\": 1}", mode(&resolved).unwrap()).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "{\"a\": 1}");
        assert_eq!(mode(&real), Some(0o600));

        let dead = tmp.path().join("dead.json");
        std::os::unix::fs::symlink(tmp.path().join("gone/x.json"), &dead).unwrap();
        assert!(
            resolve(&dead)
                .unwrap_err()
                .to_string()
                .contains("does not exist")
        );

        let bin = tmp.path().join("bin.json");
        std::fs::write(&bin, b"{\"a\": \"\xff\"}").unwrap();
        assert!(read(&bin).unwrap_err().to_string().contains("not UTF-8"));
        assert_eq!(read(&tmp.path().join("none.json")).unwrap(), None);
        assert_eq!(
            backup_path(&real).file_name().unwrap(),
            "real.json.keryx-hooks.bak"
        );
    }
}
