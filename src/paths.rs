//! Every location keryx-hooks reads or writes (ARCHITECTURE §3), and the
//! refusals that keep a project (or another local user) from steering them:
//! a `KERYX_HOME` or data directory that resolves inside the project is
//! never used, a `KERYX_HOME` someone else could write is never used, and a
//! project owned by someone else does not get its hooks loaded.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::env_vars;

/// Paths under a project root that run later outside the sandbox, so a
/// sandboxed hook never writes them: keryx's own project file and every
/// host's project configuration (what git runs from is the runner's own
/// business). Those missing are created empty before the hook starts, so
/// that they can be mounted read-only and the hook cannot create them.
pub const PROJECT_PROTECTED: &[&str] = &[
    ".metaproject",
    ".claude",
    ".gemini",
    ".codex",
    ".cursor",
    ".github/hooks",
    ".qwen",
    ".kimi",
    ".kimi-code",
    ".opencode",
];

/// Credential stores under the home, never readable inside the sandbox
/// (`~/.cargo/credentials*` is matched by prefix).
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
];

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
    /// Why the project's hooks file is not read, when it is not: the
    /// project (its root, `.metaproject` or `hooks.json`) belongs to another
    /// user, as git's `safe.directory` check refuses (CVE-2022-24765).
    pub project_refusal: Option<String>,
    /// Why the data directory (the trust store) must not be used: it
    /// resolves inside the outermost repository around `cwd`.
    data_dir_refusal: Option<String>,
    /// Why the snapshot directory a host's wiring names must not be read.
    snapshot_refusal: Option<String>,
    /// The directory the event happened in.
    pub cwd: PathBuf,
    /// Warnings produced while resolving (e.g. a refused KERYX_HOME).
    pub warnings: Vec<String>,
}

impl Locations {
    /// Resolves every location for work happening in `cwd`.
    ///
    /// `HOME`, `KERYX_HOME`, `XDG_STATE_HOME` and `KERYX_SNAPSHOT_ROOT` that
    /// are relative or resolve inside the project ([`Containment`]) are
    /// refused with a warning: `HOME` falls back to the password database's
    /// home, the others to their default under the home. An
    /// `XDG_DATA_HOME` inside the project refuses the trust store instead
    /// ([`Self::trust_store_refusal`]). Every accepted value is kept as its
    /// real path, so a `/proc/self/cwd` or a symlink is not followed again
    /// later, from another directory, to somewhere else.
    pub fn resolve(cwd: &Path) -> Locations {
        Locations::resolve_named(cwd, None)
    }

    /// [`Self::resolve`] for a host's event whose wiring names the
    /// snapshot by its directory (`--snapshot /…/keryx-…`): its parent is
    /// the snapshot root, whatever `KERYX_SNAPSHOT_ROOT` or `HOME` say. One
    /// that is relative, resolves inside the project or is writable by
    /// another user is refused ([`Self::snapshot_refusal`]).
    pub fn resolve_named(cwd: &Path, named_root: Option<&Path>) -> Locations {
        let _scope = ResolveScope::enter();
        let cwd = absolute(cwd);
        let containment = Containment::new(&cwd);
        let mut warnings = Vec::new();

        let home = match env_vars::get(env_vars::HOME) {
            None => passwd_home().unwrap_or_else(|| PathBuf::from("/")),
            Some(raw) => {
                let fallback = || passwd_home().unwrap_or_else(|| PathBuf::from("/"));
                containment
                    .accept(env_vars::HOME, &raw, &mut warnings, &fallback)
                    .unwrap_or_else(fallback)
            }
        };
        let project_root = find_project_root(&cwd, &home);

        let default_keryx_home = home.join(".keryx");
        let keryx_home = match env_vars::get(env_vars::KERYX_HOME) {
            None => default_keryx_home,
            Some(raw) => {
                let fallback = || default_keryx_home.clone();
                match containment.accept(env_vars::KERYX_HOME, &raw, &mut warnings, &fallback) {
                    None => default_keryx_home,
                    Some(dir) => {
                        match check_owner(&dir).and_then(|()| check_owner(&dir.join("hooks.json")))
                        {
                            Ok(()) => dir,
                            Err(why) => {
                                warnings.push(format!(
                                    "KERYX_HOME is not used: {why}; using `{}` instead",
                                    default_keryx_home.display()
                                ));
                                default_keryx_home
                            }
                        }
                    }
                }
            }
        };
        let dir_from =
            |var: &str, default: PathBuf, warnings: &mut Vec<String>| match env_vars::get(var) {
                None => default,
                Some(raw) => containment
                    .accept(var, &raw, warnings, &|| default.clone())
                    .unwrap_or(default),
            };
        // XDG_DATA_HOME is taken as it is spelled (relative excepted, as
        // the XDG spec says): one inside the project is never used either,
        // but by refusing the trust store, not by reading another one.
        let data_dir = env_vars::get(env_vars::XDG_DATA_HOME)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map_or_else(|| home.join(".local/share"), |p| real_path(&p))
            .join("keryx");
        let state_dir = dir_from(
            env_vars::XDG_STATE_HOME,
            home.join(".local/state"),
            &mut warnings,
        )
        .join("keryx");
        let mut snapshot_refusal = None;
        let snapshot_root = match named_root {
            None => dir_from(
                env_vars::KERYX_SNAPSHOT_ROOT,
                home.join(".agentic/hooks-snapshot"),
                &mut warnings,
            ),
            Some(named) => {
                let real = real_path(named);
                let why = if !named.is_absolute() {
                    Some("it is not an absolute path".to_owned())
                } else if let Some(root) = containment.root_around(&real) {
                    Some(format!(
                        "it resolves inside the project `{}`",
                        root.display()
                    ))
                } else {
                    check_owner(&real).err().map(|e| e.to_string())
                };
                if let Some(why) = why {
                    snapshot_refusal = Some(format!(
                        "the snapshot directory the wiring names, `{}`, is refused: {why}",
                        crate::escape::escape(&named.to_string_lossy())
                    ));
                }
                real
            }
        };
        let data_dir_refusal = containment.root_around(&real_path(&data_dir)).map(|root| {
            format!(
                "the trust store directory `{}` resolves inside the project `{}`",
                data_dir.display(),
                root.display()
            )
        });
        let project_refusal = project_root.as_deref().and_then(foreign_project);
        if let Some(why) = &project_refusal {
            warnings.push(format!(
                "the project's hooks are not loaded: {why}; a project another user owns could change them after you trusted them"
            ));
        }
        Locations {
            home,
            keryx_home,
            data_dir,
            state_dir,
            snapshot_root,
            project_root,
            project_refusal,
            data_dir_refusal,
            snapshot_refusal,
            cwd,
            warnings,
        }
    }

    /// Why the snapshot the wiring names is not read, when it is not.
    pub fn snapshot_refusal(&self) -> Option<&str> {
        self.snapshot_refusal.as_deref()
    }

    pub fn user_hooks_file(&self) -> PathBuf {
        self.keryx_home.join("hooks.json")
    }

    pub fn runtime_settings_file(&self) -> PathBuf {
        self.keryx_home.join("runtime.toml")
    }

    /// `<project root>/.metaproject/hooks.json`; `None` without a project,
    /// or when the project belongs to another user ([`Self::project_refusal`]).
    pub fn project_hooks_file(&self) -> Option<PathBuf> {
        if self.project_refusal.is_some() {
            return None;
        }
        self.project_root
            .as_ref()
            .map(|r| r.join(".metaproject").join("hooks.json"))
    }

    pub fn trust_store(&self) -> PathBuf {
        self.data_dir.join("hook-trust.json")
    }

    /// Why the trust store cannot be used for this project, if it cannot:
    /// its directory resolves inside the project root, or inside the
    /// outermost repository around the work ([`Containment`]).
    pub fn trust_store_refusal(&self) -> Option<String> {
        if let Some(why) = &self.data_dir_refusal {
            return Some(why.clone());
        }
        let root = self.project_root.as_ref()?;
        may_be_inside(&self.data_dir, root).then(|| {
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
            .join(format!("{host}-{}", session_component(session)))
    }

    /// One session's de-duplication directory, shared by every host that
    /// delivers its tool calls.
    pub fn calls_dir(&self, session: &str) -> PathBuf {
        self.sessions_dir()
            .join(format!("calls-{}", session_component(session)))
    }

    /// What `install --host-sandbox` changed in each host file, so
    /// `uninstall` takes back exactly that.
    pub fn host_sandbox_record(&self) -> PathBuf {
        self.state_dir.join("host-sandbox.json")
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

/// What "inside the project" means for refusing a location: the outermost
/// git toplevel around the real cwd (a submodule's, a worktree's or a
/// nested repository's `.git` cannot narrow it to itself), or, when there
/// is none, the nearest directory holding `.metaproject`, else the cwd
/// itself (a tarball checkout is a project too).
///
/// One exception: the password database's home and its ancestors are never
/// the project. A dotfiles repository at `~` makes `~` the outermost
/// toplevel around every checkout below it; were `~` the project, every
/// real location (`~/.keryx`, `~/.local/state`) would be "inside" and
/// refused. So toplevels that are the home or above it are skipped (as
/// [`find_project_root`] skips them), and work in `~` itself, or above it,
/// has no project to refuse anything for.
///
/// Built cheaply: only the directories around `cwd` are looked at, and the
/// password database only when some location falls inside the outermost
/// candidate.
struct Containment {
    /// Real paths: every git toplevel around the cwd, outermost first.
    tops: Vec<PathBuf>,
    /// The nearest directory holding `.metaproject`, looked for only when
    /// no toplevel will do.
    meta: std::cell::OnceCell<Option<PathBuf>>,
    cwd: PathBuf,
    root: std::cell::OnceCell<Option<PathBuf>>,
}

impl Containment {
    fn new(cwd: &Path) -> Containment {
        let cwd = real_path(cwd);
        let mut tops: Vec<PathBuf> = cwd
            .ancestors()
            .filter(|dir| is_git_marker(&dir.join(".git")))
            .map(Path::to_path_buf)
            .collect();
        tops.reverse();
        Containment {
            tops,
            meta: std::cell::OnceCell::new(),
            cwd,
            root: std::cell::OnceCell::new(),
        }
    }

    fn meta(&self) -> Option<&PathBuf> {
        self.meta
            .get_or_init(|| {
                self.cwd
                    .ancestors()
                    .find(|dir| dir.join(".metaproject").symlink_metadata().is_ok())
                    .map(Path::to_path_buf)
            })
            .as_ref()
    }

    /// The outermost candidate, before the home is asked about: whatever
    /// is outside it is outside the project.
    fn widest(&self) -> &Path {
        self.tops
            .first()
            .or_else(|| self.meta())
            .unwrap_or(&self.cwd)
    }

    /// The project, the home and its ancestors skipped; `None` when every
    /// candidate is one of them.
    fn root(&self) -> Option<&Path> {
        self.root
            .get_or_init(|| self.root_for(passwd_home().map(|h| real_path(&h)).as_deref()))
            .as_deref()
    }

    /// [`Self::root`] for the (real) home `home`.
    fn root_for(&self, home: Option<&Path>) -> Option<PathBuf> {
        let allowed = |dir: &&PathBuf| home.is_none_or(|h| !under(h, dir, false));
        self.tops
            .iter()
            .find(allowed)
            .or_else(|| self.meta().filter(allowed))
            .or_else(|| Some(&self.cwd).filter(allowed))
            .cloned()
    }

    /// The project `real` (a real path) lies in, if it lies in one.
    fn root_around(&self, real: &Path) -> Option<&Path> {
        if !under(real, self.widest(), true) {
            return None;
        }
        self.root().filter(|root| under(real, root, true))
    }

    /// `raw`, the value of `var`, as a real path, or `None` (and a warning
    /// naming what `fallback` gives instead) when it is relative or
    /// resolves inside the project.
    fn accept(
        &self,
        var: &str,
        raw: &str,
        warnings: &mut Vec<String>,
        fallback: &dyn Fn() -> PathBuf,
    ) -> Option<PathBuf> {
        let path = Path::new(raw);
        if !path.is_absolute() {
            warnings.push(format!(
                "{var} `{}` is not an absolute path; using `{}` instead",
                crate::escape::escape(raw),
                fallback().display()
            ));
            return None;
        }
        let real = real_path(path);
        let Some(root) = self.root_around(&real) else {
            return Some(real);
        };
        let resolved = if real.as_path() == path {
            String::new()
        } else {
            format!(" (`{}`)", real.display())
        };
        warnings.push(format!(
            "{var} `{}`{resolved} resolves inside the project `{}`; using `{}` instead",
            crate::escape::escape(raw),
            root.display(),
            fallback().display()
        ));
        None
    }
}

/// The effective user's home directory in the password database (never
/// `$HOME`, which whoever starts the process sets), looked up once.
pub fn passwd_home() -> Option<PathBuf> {
    static HOME: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HOME.get_or_init(lookup_passwd_home).clone()
}

#[allow(unsafe_code)]
fn lookup_passwd_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf: Vec<libc::c_char> = vec![0; 1024];
    loop {
        // SAFETY: `passwd` is plain integers and pointers, for which all
        // zeroes is a valid value; getpwuid_r only writes it.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is to live memory of ours: `pwd`, `found`,
        // and `buf` with its true length. getpwuid_r writes the strings it
        // returns into `buf` and points `pwd`'s fields at them.
        let rc = unsafe {
            libc::getpwuid_r(
                libc::geteuid(),
                &mut pwd,
                buf.as_mut_ptr(),
                buf.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || found.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        // SAFETY: on success `pw_dir` points at a NUL-terminated string in
        // `buf`, which outlives this borrow (copied out before `buf` goes).
        let dir = unsafe { std::ffi::CStr::from_ptr(pwd.pw_dir) };
        let dir = Path::new(std::ffi::OsStr::from_bytes(dir.to_bytes()));
        return dir.is_absolute().then(|| dir.to_path_buf());
    }
}

/// A session id as one path component, injectively: an id that already is
/// a safe name (at most 128 of `A-Z a-z 0-9 . _ -`, not `.` or `..`) is
/// used as it is; any other id is its sanitized start, a `+` (which no safe
/// name holds) and 128 bits of the SHA-256 of the whole id. So `sess/3`
/// and `sess_3`, or two long ids that share their first 128 characters,
/// never share a session's state.
pub fn session_component(session: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if session.len() <= 128 && session.chars().all(safe) && !matches!(session, "" | "." | "..") {
        return session.to_owned();
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(session.as_bytes());
    let start: String = session.chars().take(48).collect();
    format!(
        "{}+{}",
        sanitize_component(&start),
        crate::base::text::hex(&digest[..16])
    )
}

/// How [`write_cache_file`]'s temp files are named.
pub const CACHE_TEMP_PREFIX: &str = ".tmp-";

/// Replaces the cache file `path` with `bytes` in one rename (its directory
/// created as needed), so a concurrent reader sees the old file or the new
/// one. Not fsynced: a cache lost in a crash only costs the time to rebuild.
/// New directories are 0700 and the file 0600 (the temp file's mode).
/// The temp file is `.tmp-…` beside it ([`CACHE_TEMP_PREFIX`]), the name a
/// cache's own pruning looks for when a writer was killed before the rename.
pub fn write_cache_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::base::fs::create_private_dir(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(CACHE_TEMP_PREFIX)
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// This binary's own path (for built-ins that run as a process of it),
/// looked up once, when first needed: it costs a `/proc` lookup.
pub fn self_exe() -> &'static Path {
    static EXE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| std::env::current_exe().unwrap_or_else(|_| PathBuf::from("keryx-hooks")))
}

/// `path` for a person to read: `~/…` below `home`, escaped.
pub fn tilde(path: &Path, home: &Path) -> String {
    let shown = match path.strip_prefix(home) {
        Ok(rest) if home.is_absolute() && home != Path::new("/") => {
            format!("~/{}", rest.display())
        }
        _ => path.display().to_string(),
    };
    crate::escape::escape(&shown)
}

/// `path` made absolute and lexically normalised (no filesystem access).
pub fn absolute(path: &Path) -> PathBuf {
    if is_plain_absolute(path) {
        return path.to_path_buf();
    }
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    lexical(&joined)
}

/// `path` with `.` dropped and each `..` taking the component before it.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
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

/// Whether `path` is absolute and already in the form [`absolute`] gives:
/// no `.` or `..` component, no doubled or trailing slash.
fn is_plain_absolute(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let b = path.as_os_str().as_bytes();
    b.first() == Some(&b'/')
        && (b.len() == 1
            || b.last() != Some(&b'/')
                && b.split(|&c| c == b'/')
                    .skip(1)
                    .all(|part| !matches!(part, b"" | b"." | b"..")))
}

/// The real path of `path`; for a path that does not exist yet, the real
/// path of its nearest existing ancestor with the rest appended.
pub fn real_path(path: &Path) -> PathBuf {
    let path = absolute(path);
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = canonicalize(existing) {
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

thread_local! {
    /// While [`Locations::resolve`] runs: the real path of every path it
    /// has resolved. It resolves the cwd, the home and each directory under
    /// it two or three times over; the C library's `realpath` asks the
    /// kernel about every component each time (about 30 `readlink` calls
    /// per event). Scoped to one `resolve`, so no other check ever sees a
    /// remembered answer.
    static RESOLVED: std::cell::RefCell<Option<Vec<(PathBuf, PathBuf)>>> =
        const { std::cell::RefCell::new(None) };
}

/// `std::fs::canonicalize`, remembered while [`Locations::resolve`] runs.
/// Inside that scope a path is walked from the longest prefix already
/// resolved, one `lstat` per new component; a component that is a symlink
/// hands the whole path to the C library, as outside the scope.
fn canonicalize(path: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    RESOLVED.with(|r| {
        let mut guard = r.borrow_mut();
        let Some(seen) = guard.as_mut().filter(|_| path.is_absolute()) else {
            return std::fs::canonicalize(path);
        };
        // Compared as bytes: `Path`'s `==` parses both into components,
        // which costs more than the calls it saves.
        let bytes = path.as_os_str().as_bytes();
        let mut from: (usize, PathBuf) = (0, PathBuf::from("/"));
        for (p, real) in seen.iter() {
            let known = p.as_os_str().as_bytes();
            let prefix = bytes.starts_with(known)
                && (bytes.len() == known.len() || bytes[known.len()] == b'/');
            if prefix && known.len() >= from.0 {
                from = (known.len(), real.clone());
            }
        }
        let (start, mut real) = from;
        let mut spelled = match start {
            0 => PathBuf::from("/"),
            _ => PathBuf::from(std::ffi::OsStr::from_bytes(&bytes[..start])),
        };
        for part in Path::new(std::ffi::OsStr::from_bytes(&bytes[start..])).components() {
            let name = match part {
                Component::RootDir | Component::CurDir => continue,
                Component::Normal(name) => name,
                // Not made by `absolute`; resolved the C library's way.
                Component::ParentDir | Component::Prefix(_) => return std::fs::canonicalize(path),
            };
            let next = real.join(name);
            if std::fs::symlink_metadata(&next)?.file_type().is_symlink() {
                let resolved = std::fs::canonicalize(path)?;
                seen.push((path.to_path_buf(), resolved.clone()));
                return Ok(resolved);
            }
            real = next;
            spelled.push(name);
            seen.push((spelled.clone(), real.clone()));
        }
        Ok(real)
    })
}

/// Remembers real paths until dropped (see `RESOLVED`).
struct ResolveScope;

impl ResolveScope {
    fn enter() -> ResolveScope {
        RESOLVED.with(|r| *r.borrow_mut() = Some(Vec::new()));
        ResolveScope
    }
}

impl Drop for ResolveScope {
    fn drop(&mut self) {
        RESOLVED.with(|r| *r.borrow_mut() = None);
    }
}

/// Whether `path` resolves to `root` or somewhere below it, symlinks
/// resolved on both sides and compared exactly. This is the test for
/// accepting something as the project's own (its hooks file, a file its
/// argv names): on a case-sensitive filesystem `/p/PROJ` is another
/// directory than `/p/proj`, never part of it.
pub fn is_inside(path: &Path, root: &Path) -> bool {
    under(&real_path(path), &real_path(root), false)
}

/// Like [`is_inside`], but also true when only ASCII case differs. This is
/// the test for refusing (a `KERYX_HOME` or data directory in the project):
/// on a case-insensitive filesystem `/p/PROJ` *is* `/p/proj`, and a refusal
/// that one spelling slips past is no refusal.
pub fn may_be_inside(path: &Path, root: &Path) -> bool {
    under(&real_path(path), &real_path(root), true)
}

fn under(path: &Path, root: &Path, fold_case: bool) -> bool {
    let text = |p: &Path| {
        let s = p.to_string_lossy().into_owned();
        if fold_case { s.to_ascii_lowercase() } else { s }
    };
    let (p, r) = (text(path), text(root));
    p == r || p.starts_with(&format!("{}/", r.trim_end_matches('/')))
}

/// Why [`check_owner`] refuses a path: someone else could have written it.
#[derive(Debug, thiserror::Error)]
pub enum OwnerError {
    #[error("cannot inspect `{}`: {error}", path.display())]
    Uninspectable {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("`{}` is owned by uid {owner}, not by you (uid {you})", path.display())]
    OtherOwner { path: PathBuf, owner: u32, you: u32 },
    #[error("`{}` is writable by every user (mode {mode:o})", path.display())]
    WorldWritable { path: PathBuf, mode: u32 },
    #[error(
        "`{}` is writable by group {group} (mode {mode:o}), which is not your own group",
        path.display()
    )]
    GroupWritable {
        path: PathBuf,
        group: u32,
        mode: u32,
    },
}

/// Refuses a path (when it exists) that someone else could have written:
/// owned by another user (root excepted: it can write anything anyway),
/// writable by everyone, or writable by a group that is not the user's own
/// primary group (user-private groups, the default on most Linux
/// distributions, leave the home group-writable by the user alone; a shared
/// group does not). Git's `safe.directory` check is the model
/// (CVE-2022-24765), with OpenSSH's exception for root.
pub fn check_owner(path: &Path) -> Result<(), OwnerError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(OwnerError::Uninspectable {
                path: path.to_path_buf(),
                error,
            });
        }
    };
    let (uid, gid) = ids();
    let mode = meta.permissions().mode();
    if meta.uid() != uid && meta.uid() != 0 {
        return Err(OwnerError::OtherOwner {
            path: path.to_path_buf(),
            owner: meta.uid(),
            you: uid,
        });
    }
    if mode & 0o002 != 0 {
        return Err(OwnerError::WorldWritable {
            path: path.to_path_buf(),
            mode: mode & 0o7777,
        });
    }
    if mode & 0o020 != 0 && meta.gid() != gid {
        return Err(OwnerError::GroupWritable {
            path: path.to_path_buf(),
            group: meta.gid(),
            mode: mode & 0o7777,
        });
    }
    Ok(())
}

/// Why the project at `root` belongs to someone else, if it does: its root,
/// its `.metaproject` or its hooks file (where it leads) is owned by another
/// user than you or root. Only ownership counts here, as in git: a
/// group-writable checkout is a team's ordinary setup, and its hooks still
/// need `keryx-hooks trust`.
fn foreign_project(root: &Path) -> Option<String> {
    let (uid, _) = ids();
    let meta = root.join(".metaproject");
    [root.to_path_buf(), meta.clone(), meta.join("hooks.json")]
        .iter()
        .find_map(|p| {
            let owner = std::fs::metadata(p).ok()?.uid();
            (owner != uid && owner != 0).then(|| {
                format!(
                    "`{}` is owned by uid {owner}, not by you (uid {uid})",
                    p.display()
                )
            })
        })
}

/// The effective user and group ids.
#[allow(unsafe_code)]
fn ids() -> (u32, u32) {
    // SAFETY: geteuid and getegid take no arguments, cannot fail and touch
    // no memory of ours.
    unsafe { (libc::geteuid(), libc::getegid()) }
}

/// The project root for `cwd`: the git toplevel found by walking up for
/// `.git` (never by spawning git); when that is `$HOME` or one of its
/// ancestors, or there is none, the nearest directory holding `.metaproject`.
pub fn find_project_root(cwd: &Path, home: &Path) -> Option<PathBuf> {
    let git_top = cwd.ancestors().find(|dir| is_git_marker(&dir.join(".git")));
    match git_top {
        Some(top) if !under(&real_path(home), &real_path(top), false) => Some(top.to_path_buf()),
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

/// The snapshot key of a source: its basename (leading dots dropped, so the
/// snapshot of `~/.keryx` is not a hidden directory) and 12 hex of the
/// sha256 of its canonical path, so two checkouts named alike never share.
pub fn snapshot_key(source: &Path) -> String {
    let canon = std::fs::canonicalize(source).unwrap_or_else(|_| absolute(source));
    let base = canon
        .file_name()
        .map(|n| n.to_string_lossy().trim_start_matches('.').to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "source".to_owned());
    let digest = crate::base::text::hex(&<sha2::Sha256 as sha2::Digest>::digest(
        canon.as_os_str().as_encoded_bytes(),
    ));
    let mut base = sanitize_component(&base);
    base.truncate(100);
    format!("{base}-{}", &digest[..12])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real paths are remembered only inside one `resolve`: a symlink
    /// changed meanwhile is seen by every check after it.
    #[cfg(unix)]
    #[test]
    fn real_paths_are_remembered_only_while_resolving() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        for d in ["a", "b"] {
            std::fs::create_dir(base.join(d)).unwrap();
        }
        let link = base.join("link");
        std::os::unix::fs::symlink(base.join("a"), &link).unwrap();
        let repoint = || {
            std::fs::remove_file(&link).unwrap();
            std::os::unix::fs::symlink(base.join("b"), &link).unwrap();
        };
        {
            let _scope = ResolveScope::enter();
            assert_eq!(real_path(&link), base.join("a"));
            repoint();
            // The same resolve asks the kernel once per path.
            assert_eq!(real_path(&link), base.join("a"));
        }
        assert_eq!(real_path(&link), base.join("b"));
        let _ = Locations::resolve(&base);
        assert!(RESOLVED.with(|r| r.borrow().is_none()));
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(base.join("a"), &link).unwrap();
        assert_eq!(real_path(&link), base.join("a"));
    }

    /// Walked from remembered prefixes, a real path is what the C
    /// library's gives: through absolute, relative and chained links, a
    /// dangling link, a loop, a file in the middle and a missing name, in
    /// an order that reuses every prefix.
    #[test]
    fn a_resolve_gives_the_c_librarys_real_paths() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_path_buf();
        for d in ["a/b/c", "x/y"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("a/file"), "").unwrap();
        symlink(base.join("a/b"), base.join("abs")).unwrap();
        symlink("b/c", base.join("a/rel")).unwrap();
        symlink("../abs", base.join("x/chain")).unwrap();
        symlink("nowhere", base.join("a/dangling")).unwrap();
        symlink("loop2", base.join("loop1")).unwrap();
        symlink("loop1", base.join("loop2")).unwrap();
        let paths = [
            "a/b/c",
            "a/b",
            "a",
            "a/b/c/d",
            "abs",
            "abs/c",
            "abs/c/none",
            "a/rel",
            "a/rel/x",
            "x/chain",
            "x/chain/c",
            "x/y",
            "x/y/z",
            "a/dangling",
            "a/dangling/q",
            "loop1",
            "loop1/z",
            "a/file",
            "a/file/z",
            "missing",
            "missing/deeper",
            "",
            "a/./b",
        ];
        let _scope = ResolveScope::enter();
        for round in 0..2 {
            for p in paths {
                let path = base.join(p);
                let want = std::fs::canonicalize(&path).map_err(|e| e.kind());
                let got = canonicalize(&path).map_err(|e| e.kind());
                assert_eq!(got, want, "round {round}: {}", path.display());
            }
        }
        assert_eq!(canonicalize(Path::new("/")).unwrap(), Path::new("/"));
    }

    /// The shortcut for a path already plain gives what the component
    /// walk gives, for every spelling that needs the walk.
    #[test]
    fn a_plain_absolute_path_is_its_own_absolute_form() {
        let walk = |p: &str| lexical(Path::new(p));
        for p in [
            "/",
            "/a",
            "/a/b.c",
            "/a/.b",
            "/a/..b",
            "/a/b/",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/..",
            "/.",
            "/a/.",
            "/a/..",
            "//a",
            "/a/b/../../..",
            "/a/...",
        ] {
            assert_eq!(absolute(Path::new(p)), walk(p), "{p}");
        }
        assert!(is_plain_absolute(Path::new("/a/.b/..c/...")));
        for p in ["/a/", "/a//b", "/a/./b", "/a/..", "a/b", ""] {
            assert!(!is_plain_absolute(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn sanitize_never_escapes() {
        assert_eq!(sanitize_component("../../etc"), ".._.._etc");
        assert_eq!(sanitize_component(".."), "_");
        assert_eq!(sanitize_component("abc-123"), "abc-123");
    }

    #[test]
    fn session_components_are_injective() {
        assert_eq!(session_component("sess_3"), "sess_3");
        assert_eq!(session_component("8096d6db-4c67"), "8096d6db-4c67");
        let slash = session_component("sess/3");
        assert!(slash.starts_with("sess_3+"), "{slash}");
        assert_ne!(slash, session_component("sess\\3"));
        let long = "a".repeat(200);
        assert_ne!(
            session_component(&long),
            session_component(&format!("{long}b"))
        );
        for odd in ["", ".", "..", "../../etc", "a\nb"] {
            let c = session_component(odd);
            assert!(!c.contains('/') && c != "." && c != "..", "{odd:?} → {c:?}");
        }
    }

    #[test]
    fn the_containment_root_is_the_outermost_repository_but_never_the_home() {
        let tmp = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(tmp.path()).unwrap().join("home");
        let proj = home.join("src/proj");
        let sub = proj.join("vendor/lib");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        std::fs::write(sub.join(".git"), "gitdir: ../../.git/modules/lib\n").unwrap();
        let root = |cwd: &Path| Containment::new(cwd).root_for(Some(&home));
        // A submodule does not narrow the project to itself.
        assert_eq!(root(&sub).unwrap(), proj);
        // A dotfiles repository at the home is skipped, not the project.
        std::fs::create_dir_all(home.join(".git")).unwrap();
        assert_eq!(root(&sub).unwrap(), proj);
        assert_eq!(Containment::new(&sub).widest(), home);
        let loose = home.join("Downloads/tarball");
        std::fs::create_dir_all(&loose).unwrap();
        assert_eq!(root(&loose).unwrap(), loose);
        // Work in the home (or above it) has no project.
        assert_eq!(root(&home), None);
        assert_eq!(root(home.parent().unwrap()), None);
        // Without a home to skip, the outermost toplevel is the project.
        assert_eq!(Containment::new(&sub).root_for(None).unwrap(), home);
    }

    #[test]
    fn acceptance_is_exact_and_refusal_folds_case() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let proj = base.join("proj");
        let upper = base.join("PROJ");
        std::fs::create_dir_all(proj.join("sub")).unwrap();
        std::fs::create_dir_all(&upper).unwrap();
        assert!(is_inside(&proj.join("sub/x"), &proj));
        assert!(is_inside(&proj, &proj));
        assert!(!is_inside(&base.join("proj-other"), &proj));
        // A different directory on this case-sensitive filesystem.
        assert!(!is_inside(&upper.join("x"), &proj));
        assert!(may_be_inside(&upper.join("x"), &proj));
        assert!(!may_be_inside(&base.join("projx"), &proj));
        // Symlinks are resolved on both sides.
        std::os::unix::fs::symlink(proj.join("sub"), base.join("link")).unwrap();
        assert!(is_inside(&base.join("link/new-file"), &proj));
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
