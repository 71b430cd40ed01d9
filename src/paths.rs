//! Every location keryx-hooks reads or writes (ARCHITECTURE §3), and the
//! refusals that keep a project from steering them: a `KERYX_HOME` or data
//! directory that resolves inside the project is never used.

use std::path::{Component, Path, PathBuf};

use crate::env_vars;

/// The inputs every location is computed from, captured once.
#[derive(Debug, Clone)]
pub struct Locations {
    pub home: PathBuf,
    /// `$KERYX_HOME`, or `~/.keryx`, after the inside-the-project refusal.
    pub keryx_home: PathBuf,
    pub data_dir: PathBuf,
    pub state_dir: PathBuf,
    pub snapshot_root: PathBuf,
    /// The project root, when there is one.
    pub project_root: Option<PathBuf>,
    /// The directory the event happened in.
    pub cwd: PathBuf,
    /// Warnings produced while resolving (e.g. a refused KERYX_HOME).
    pub warnings: Vec<String>,
}

impl Locations {
    /// Resolves every location for work happening in `cwd`.
    pub fn resolve(cwd: &Path) -> Locations {
        let home = env_vars::get(env_vars::HOME)
            .map(PathBuf::from)
            .or_else(dirs::home_dir)
            .unwrap_or_else(|| PathBuf::from("/"));
        let cwd = absolute(cwd);
        let project_root = find_project_root(&cwd, &home);
        let mut warnings = Vec::new();

        let default_keryx_home = home.join(".keryx");
        let keryx_home = match env_vars::get(env_vars::KERYX_HOME).map(PathBuf::from) {
            Some(dir) if dir.is_absolute() => match &project_root {
                Some(root) if is_inside(&dir, root) => {
                    warnings.push(format!(
                        "KERYX_HOME `{}` resolves inside the project `{}`; using `{}` instead",
                        dir.display(),
                        root.display(),
                        default_keryx_home.display()
                    ));
                    default_keryx_home
                }
                _ => dir,
            },
            Some(dir) => {
                warnings.push(format!(
                    "KERYX_HOME `{}` is not an absolute path; using `{}` instead",
                    dir.display(),
                    default_keryx_home.display()
                ));
                default_keryx_home
            }
            None => default_keryx_home,
        };
        let xdg = |var: &str, fallback: &str| {
            env_vars::get(var)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .unwrap_or_else(|| home.join(fallback))
        };
        let data_dir = xdg(env_vars::XDG_DATA_HOME, ".local/share").join("keryx");
        let state_dir = xdg(env_vars::XDG_STATE_HOME, ".local/state").join("keryx");
        let snapshot_root = env_vars::get(env_vars::KERYX_SNAPSHOT_ROOT)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".agentic/hooks-snapshot"));
        Locations {
            home,
            keryx_home,
            data_dir,
            state_dir,
            snapshot_root,
            project_root,
            cwd,
            warnings,
        }
    }

    pub fn user_hooks_file(&self) -> PathBuf {
        self.keryx_home.join("hooks.json")
    }

    pub fn runtime_settings_file(&self) -> PathBuf {
        self.keryx_home.join("runtime.toml")
    }

    pub fn project_hooks_file(&self) -> Option<PathBuf> {
        self.project_root
            .as_ref()
            .map(|r| r.join(".metaproject").join("hooks.json"))
    }

    pub fn trust_store(&self) -> PathBuf {
        self.data_dir.join("hook-trust.json")
    }

    /// Why the trust store cannot be used for this project, if it cannot.
    pub fn trust_store_refusal(&self) -> Option<String> {
        let root = self.project_root.as_ref()?;
        is_inside(&self.data_dir, root).then(|| {
            format!(
                "the trust store directory `{}` resolves inside the project `{}`",
                self.data_dir.display(),
                root.display()
            )
        })
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.state_dir.join("sessions")
    }

    pub fn session_dir(&self, host: &str, session: &str) -> PathBuf {
        self.sessions_dir()
            .join(format!("{host}-{}", sanitize_component(session)))
    }

    pub fn log_file(&self) -> PathBuf {
        self.state_dir.join("keryx-hooks.log")
    }

    pub fn config_cache_dir(&self) -> PathBuf {
        self.state_dir.join("config-cache")
    }

    pub fn snapshot_dir(&self, key: &str) -> PathBuf {
        self.snapshot_root.join(sanitize_component(key))
    }

    /// The directory used for `KERYX_PROJECT_ROOT` and hook cwd.
    pub fn project_root_or_cwd(&self) -> &Path {
        self.project_root.as_deref().unwrap_or(&self.cwd)
    }
}

/// A session id or key turned into one safe path component.
pub fn sanitize_component(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .take(128)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    match cleaned.as_str() {
        "" | "." | ".." => "_".to_owned(),
        _ => cleaned,
    }
}

/// `path` made absolute and lexically normalised (no filesystem access).
pub fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The real path of `path`; for a path that does not exist yet, the real
/// path of its nearest existing ancestor with the rest appended.
pub fn real_path(path: &Path) -> PathBuf {
    let path = absolute(path);
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path,
        }
    }
}

/// Whether `path` resolves to `root` or somewhere below it. Symlinks are
/// resolved on both sides, and the comparison ignores ASCII case so a
/// case-insensitive filesystem cannot be used to slip past it.
pub fn is_inside(path: &Path, root: &Path) -> bool {
    let path = real_path(path);
    let root = real_path(root);
    let lower = |p: &Path| p.to_string_lossy().to_ascii_lowercase();
    let (p, r) = (lower(&path), lower(&root));
    p == r || p.starts_with(&format!("{}/", r.trim_end_matches('/')))
}

/// The project root for `cwd`: the git toplevel found by walking up for
/// `.git` (never by spawning git); when that is `$HOME` or one of its
/// ancestors, or there is none, the nearest directory holding `.metaproject`.
pub fn find_project_root(cwd: &Path, home: &Path) -> Option<PathBuf> {
    let git_top = cwd.ancestors().find(|dir| is_git_marker(&dir.join(".git")));
    let home_real = real_path(home);
    match git_top {
        Some(top) if !is_inside(&home_real, top) => Some(top.to_path_buf()),
        _ => cwd
            .ancestors()
            .find(|dir| dir.join(".metaproject").symlink_metadata().is_ok())
            .map(Path::to_path_buf),
    }
}

/// A `.git` directory, or a `.git` file of a worktree or submodule, which is
/// read (never executed) to confirm it is a gitfile.
fn is_git_marker(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => true,
        Ok(m) if m.is_file() && m.len() < 4096 => std::fs::read(path)
            .map(|bytes| bytes.starts_with(b"gitdir:"))
            .unwrap_or(false),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_never_escapes() {
        assert_eq!(sanitize_component("../../etc"), ".._.._etc");
        assert_eq!(sanitize_component(".."), "_");
        assert_eq!(sanitize_component("abc-123"), "abc-123");
    }

    #[test]
    fn git_toplevel_and_home_fallback() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let proj = home.join("code/proj");
        std::fs::create_dir_all(proj.join("src")).unwrap();
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        assert_eq!(find_project_root(&proj.join("src"), &home).unwrap(), proj);

        // A dotfiles repo at $HOME: fall back to the nearest .metaproject.
        std::fs::remove_dir(proj.join(".git")).unwrap();
        std::fs::create_dir_all(home.join(".git")).unwrap();
        assert_eq!(find_project_root(&proj.join("src"), &home), None);
        std::fs::create_dir_all(proj.join(".metaproject")).unwrap();
        assert_eq!(find_project_root(&proj.join("src"), &home).unwrap(), proj);

        // A worktree's .git file counts; a stray .git file does not.
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: /elsewhere/.git/worktrees/wt\n").unwrap();
        assert_eq!(find_project_root(&wt, &home).unwrap(), wt);
        std::fs::write(wt.join(".git"), "rm -rf /").unwrap();
        assert_eq!(find_project_root(&wt, &home), None);
    }
}
