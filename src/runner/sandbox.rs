//! OS sandbox launchers: bubblewrap on Linux, sandbox-exec on macOS. Owns
//! finding one (never where the project or another user could plant it),
//! proving it actually works here (a cached probe, because it runs on hook
//! invocations), the wrapper argv for a confined hook, and the seccomp
//! filter that keeps every Unix socket out of its reach.

pub use crate::paths::{HOME_SECRETS, PROJECT_PROTECTED};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Exit, Sandbox, SandboxSpec, SpawnRequest, sys};
use crate::escape::escape;
use crate::settings::SettingError;

/// Which wrapper a [`Launcher`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LauncherKind {
    Bubblewrap,
    SandboxExec,
}

/// A sandbox wrapper that was proven to work on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    pub kind: LauncherKind,
    pub program: PathBuf,
    /// Why this one: `pinned in runtime.toml`, `system directory` or
    /// `PATH entry`.
    pub source: &'static str,
    /// Proven by the probe: this bubblewrap mounts a tmpfs with the mode
    /// `--perms` gives it, so an empty protected directory can be covered
    /// by a tmpfs no one can write (no mount table to read, as a bind
    /// needs) instead of a read-only bind of itself.
    pub empty_as_tmpfs: bool,
}

/// Why there is no usable sandbox launcher here. Paths that come from the
/// environment or a setting are escaped when shown.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LauncherError {
    #[error("no sandbox launcher is supported on {os}")]
    Unsupported { os: &'static str },
    /// `[sandbox] launcher` is set but unusable; `why` is the setting's.
    #[error("the pinned launcher cannot be used: {why}")]
    PinUnusable { why: SettingError },
    #[error(
        "bubblewrap (`bwrap`) is not installed; install it (e.g. `apt-get install bubblewrap`) \
         or mark the hook `runsIn: \"unsandboxed\"` where the profile allows it"
    )]
    NotInstalled,
    #[error("`{}` cannot be used: {error}", shown(program))]
    Unresolvable {
        program: PathBuf,
        #[source]
        error: Arc<std::io::Error>,
    },
    /// `place` is `project` or `working directory`.
    #[error(
        "`{}` is inside the {place}, which could have planted it; \
         pin a system one with `[sandbox] launcher` in runtime.toml",
        shown(program)
    )]
    Planted {
        program: PathBuf,
        place: &'static str,
    },
    #[error("`{}` cannot be inspected", path.display())]
    Uninspectable { path: PathBuf },
    #[error(
        "`{}` belongs to uid {owner}, not to you or root, so it could be replaced",
        shown(path)
    )]
    ForeignOwner { path: PathBuf, owner: u32 },
    #[error(
        "`{}` is writable by others (mode {mode:o}), so it could be replaced",
        shown(path)
    )]
    WritableByOthers { path: PathBuf, mode: u32 },
    /// The program could not be stat'ed before its probe.
    #[error("`{}` does not exist", program.display())]
    Unstatable { program: PathBuf },
    /// The program is not a regular file.
    #[error("`{}` does not exist", shown(program))]
    NotAFile { program: PathBuf },
    #[error("cannot prepare the sandbox probe: {error}")]
    ProbeSetup {
        #[source]
        error: Arc<std::io::Error>,
    },
    #[error("`{}` did not start a sandbox within {}s", shown(program), PROBE_TIMEOUT.as_secs())]
    ProbeTimeout { program: PathBuf },
    /// The probe ran and failed: how it ended, and the last of what it
    /// printed on stderr.
    #[error(
        "`{}` cannot create a sandbox here ({}{}); {}",
        shown(program),
        describe(exit),
        detail_text(stderr),
        probe_advice(*kind)
    )]
    ProbeFailed {
        program: PathBuf,
        kind: LauncherKind,
        exit: Exit,
        stderr: String,
    },
}

/// A path as a message shows it: escaped, since a setting or `PATH` chose it.
fn shown(path: &Path) -> String {
    escape(&path.display().to_string())
}

fn detail_text(stderr: &str) -> String {
    let detail = escape(stderr.trim());
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

fn probe_advice(kind: LauncherKind) -> &'static str {
    match kind {
        LauncherKind::Bubblewrap => {
            "user namespaces may be disabled: check `sysctl user.max_user_namespaces`, \
             `kernel.unprivileged_userns_clone` and, on Ubuntu, \
             `kernel.apparmor_restrict_unprivileged_userns`"
        }
        LauncherKind::SandboxExec => "check that `sandbox-exec` runs a trivial profile",
    }
}

/// Where a launcher may come from: `pin` (`[sandbox] launcher` in
/// runtime.toml) when set, else the system directories, then the absolute
/// `PATH` entries outside `project` and `cwd`.
#[derive(Debug, Clone)]
pub struct LauncherSearch<'a> {
    /// `Err` = the setting is there but unusable (fail closed).
    pub pin: Result<Option<&'a Path>, &'a SettingError>,
    pub project: Option<&'a Path>,
    pub cwd: Option<&'a Path>,
}

impl LauncherSearch<'_> {
    /// No pin, nothing to keep it out of.
    pub const ANY: LauncherSearch<'static> = LauncherSearch {
        pin: Ok(None),
        project: None,
        cwd: None,
    };
}

/// Bumped whenever [`bwrap_args`] changes, so a cached probe of the old
/// flags is not trusted for the new ones.
const BWRAP_FLAGS_VERSION: u32 = 3;
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// A positive probe on disk is re-checked after this long anyway.
const PROBE_CACHE_TTL: Duration = Duration::from_secs(24 * 60 * 60);
const PROBE_CACHE_FILE: &str = "sandbox-probe.json";

static PROBE_CACHE_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Lets positive probe results persist under `dir` (the state dir), so a
/// shim started once per event does not pay a bwrap start each time. First
/// call wins.
pub fn set_probe_cache_dir(dir: PathBuf) {
    let _ = PROBE_CACHE_DIR.set(dir);
}

/// The launcher usable here, or why there is none. Probed once per process
/// (per bwrap path and mtime), and across processes through the file set by
/// [`set_probe_cache_dir`].
pub fn find_launcher(search: &LauncherSearch) -> Result<Launcher, LauncherError> {
    #[cfg(target_os = "linux")]
    {
        let (program, source) = find_bwrap(search)?;
        probe_cached(&program, LauncherKind::Bubblewrap).map(|l| Launcher { source, ..l })
    }
    #[cfg(target_os = "macos")]
    {
        let _ = search;
        probe_cached(
            Path::new("/usr/bin/sandbox-exec"),
            LauncherKind::SandboxExec,
        )
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = search;
        Err(LauncherError::Unsupported {
            os: std::env::consts::OS,
        })
    }
}

const SYSTEM: &str = "system directory";
const PINNED: &str = "pinned in runtime.toml";
const ON_PATH: &str = "PATH entry";

/// The bubblewrap to use: the pinned one, else the first found in the
/// system directories, then on `PATH`; never one in the project or the
/// cwd, nor one (or in a directory) someone else could replace.
#[cfg(target_os = "linux")]
fn find_bwrap(search: &LauncherSearch) -> Result<(PathBuf, &'static str), LauncherError> {
    match search.pin {
        Err(why) => {
            return Err(LauncherError::PinUnusable { why: why.clone() });
        }
        Ok(Some(pin)) => {
            return launcher_refusal(pin, search)
                .map_or_else(|| Ok((pin.to_path_buf(), PINNED)), Err);
        }
        Ok(None) => {}
    }
    let path = crate::env_vars::get(crate::env_vars::PATH).unwrap_or_default();
    find_bwrap_in(&["/usr/bin", "/usr/local/bin", "/bin"], &path, search)
}

/// The first usable `bwrap` in `system`, then in the absolute entries of
/// the `PATH` value `path`.
pub(super) fn find_bwrap_in(
    system: &[&str],
    path: &str,
    search: &LauncherSearch,
) -> Result<(PathBuf, &'static str), LauncherError> {
    let system = system.iter().map(|d| (PathBuf::from(d), SYSTEM));
    let on_path = std::env::split_paths(path)
        .filter(|d| d.is_absolute())
        .map(|d| (d, ON_PATH));
    let mut refused = None;
    for (dir, source) in system.into_iter().chain(on_path) {
        let candidate = dir.join("bwrap");
        if !candidate.is_file() {
            continue;
        }
        match launcher_refusal(&candidate, search) {
            None => return Ok((candidate, source)),
            Some(why) => refused = refused.or(Some(why)),
        }
    }
    Err(refused.unwrap_or(LauncherError::NotInstalled))
}

/// Why `program` must not be the launcher: inside the project or the cwd
/// (a repository could plant it), or it or its directory is writable by
/// someone else or owned by another user than you or root.
pub(super) fn launcher_refusal(program: &Path, search: &LauncherSearch) -> Option<LauncherError> {
    use std::os::unix::fs::MetadataExt;
    let real = match std::fs::canonicalize(program) {
        Ok(r) => r,
        Err(error) => {
            return Some(LauncherError::Unresolvable {
                program: program.to_path_buf(),
                error: Arc::new(error),
            });
        }
    };
    for (place, root) in [
        ("project", search.project),
        ("working directory", search.cwd),
    ] {
        if let Some(root) = root
            && crate::paths::is_inside(&real, root)
        {
            return Some(LauncherError::Planted {
                program: program.to_path_buf(),
                place,
            });
        }
    }
    let me = sys::uid();
    let checked = [Some(real.as_path()), real.parent()];
    for path in checked.into_iter().flatten() {
        let Ok(meta) = std::fs::metadata(path) else {
            return Some(LauncherError::Uninspectable {
                path: path.to_path_buf(),
            });
        };
        let mode = meta.mode();
        if meta.uid() != 0 && meta.uid() != me {
            return Some(LauncherError::ForeignOwner {
                path: path.to_path_buf(),
                owner: meta.uid(),
            });
        }
        // The sticky bit keeps others from replacing a file in a shared
        // directory, but a launcher does not belong in one anyway.
        if mode & 0o022 != 0 {
            return Some(LauncherError::WritableByOthers {
                path: path.to_path_buf(),
                mode: mode & 0o7777,
            });
        }
    }
    None
}

/// Proves `program` is a bubblewrap that can build the sandbox hooks run in,
/// by running `true` inside exactly that sandbox. Uncached; `doctor` and the
/// tests call it with any path.
pub fn probe_bwrap(program: &Path) -> Result<Launcher, LauncherError> {
    probe(program, LauncherKind::Bubblewrap)
}

type ProbeKey = (PathBuf, u128, u64);

fn probe_key(program: &Path) -> Option<ProbeKey> {
    let meta = std::fs::metadata(program).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((program.to_path_buf(), mtime, meta.len()))
}

type Verdict = Result<Launcher, LauncherError>;
static PROBES: Mutex<Vec<(ProbeKey, Verdict)>> = Mutex::new(Vec::new());

fn probe_cached(program: &Path, kind: LauncherKind) -> Result<Launcher, LauncherError> {
    let Some(key) = probe_key(program) else {
        return Err(LauncherError::Unstatable {
            program: program.to_path_buf(),
        });
    };
    // Held across the probe so concurrent hooks wait for one probe instead
    // of each starting their own.
    let mut probes = PROBES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, result)) = probes.iter().find(|(k, _)| *k == key) {
        return result.clone();
    }
    let dir = PROBE_CACHE_DIR.get();
    let result = match dir.and_then(|d| read_disk_cache(d, &key, kind)) {
        Some(launcher) => Ok(launcher),
        None => {
            let result = probe(program, kind);
            if let (Ok(launcher), Some(dir)) = (&result, dir) {
                write_disk_cache(dir, &key, launcher);
            }
            result
        }
    };
    probes.push((key, result.clone()));
    result
}

/// Drops any cached verdict for `program`: a sandboxed run just failed in a
/// way that looks like the launcher, not the hook.
pub(super) fn forget_probe(program: &Path) {
    let mut probes = PROBES.lock().unwrap_or_else(|e| e.into_inner());
    probes.retain(|((p, _, _), _)| p != program);
    if let Some(dir) = PROBE_CACHE_DIR.get() {
        let _ = std::fs::remove_file(dir.join(PROBE_CACHE_FILE));
    }
}

/// The probe's script: a seccomp filter must be active, and a Unix socket
/// listening outside (its path given as `$1`, visible inside) must not
/// accept a connection. `perl` is part of every Debian-like base system;
/// where it is missing the filter check stands alone.
pub(super) const PROBE_SCRIPT: &str = r#"#!/bin/sh
mode=
while read -r key value rest; do
  [ "$key" = "Seccomp:" ] && mode=$value
done < /proc/self/status
if [ "$mode" != 2 ]; then
  echo "no seccomp filter is active inside the sandbox" >&2
  exit 3
fi
[ -x /usr/bin/perl ] || exit 0
exec /usr/bin/perl -MSocket -e '
  socket(my $s, AF_UNIX, SOCK_STREAM, 0) or exit 0;
  connect($s, pack_sockaddr_un($ARGV[0])) or exit 0;
  print STDERR "a Unix socket outside the sandbox accepted a connection\n";
  exit 4' "$1"
"#;

fn probe(program: &Path, kind: LauncherKind) -> Result<Launcher, LauncherError> {
    if !program.is_file() {
        return Err(LauncherError::NotAFile {
            program: program.to_path_buf(),
        });
    }
    let setup = |error| LauncherError::ProbeSetup {
        error: Arc::new(error),
    };
    let launcher = Launcher {
        kind,
        program: program.to_path_buf(),
        source: SYSTEM,
        empty_as_tmpfs: false,
    };
    let scratch = tempfile::Builder::new()
        .prefix("keryx-sandbox-probe-")
        .tempdir()
        .map_err(setup)?;
    let mut _listener = None;
    let argv = match kind {
        LauncherKind::Bubblewrap => {
            use std::os::unix::fs::PermissionsExt;
            let script = scratch.path().join("probe.sh");
            let socket = scratch.path().join("probe.sock");
            let prepared = std::fs::write(&script, PROBE_SCRIPT)
                .and_then(|()| {
                    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700))
                })
                .and_then(|()| std::os::unix::net::UnixListener::bind(&socket));
            _listener = Some(prepared.map_err(setup)?);
            vec![
                script.to_string_lossy().into_owned(),
                socket.to_string_lossy().into_owned(),
            ]
        }
        LauncherKind::SandboxExec => {
            let (program, mut args) = true_command();
            args.insert(0, program.to_string_lossy().into_owned());
            args
        }
    };
    let req = SpawnRequest {
        argv,
        cwd: PathBuf::from("/"),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        stdin: Vec::new(),
        timeout: PROBE_TIMEOUT,
        sandbox: SandboxSpec::Required(Sandbox::default()),
    };
    let started = std::time::Instant::now();
    let out = super::spawn::spawn_confined(&req, &launcher, false);
    tracing::debug!(program = %program.display(), exit = ?out.exit, elapsed = ?started.elapsed(), "sandbox probe");
    match out.exit {
        Exit::Code(0) => Ok(Launcher {
            empty_as_tmpfs: kind == LauncherKind::Bubblewrap && tmpfs_takes_perms(program),
            ..launcher
        }),
        Exit::Timeout => Err(LauncherError::ProbeTimeout {
            program: program.to_path_buf(),
        }),
        exit => Err(LauncherError::ProbeFailed {
            program: program.to_path_buf(),
            kind,
            exit,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }),
    }
}

/// Whether `program` (a bubblewrap that just built a sandbox) mounts a
/// tmpfs with the mode `--perms` sets, which not every version takes.
fn tmpfs_takes_perms(program: &Path) -> bool {
    let (truth, args) = true_command();
    std::process::Command::new(program)
        .args(["--ro-bind", "/", "/", "--perms", "0555", "--tmpfs", "/tmp"])
        .args(["--unshare-all", "--die-with-parent", "--"])
        .arg(truth)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn describe(exit: &Exit) -> String {
    match exit {
        Exit::Code(c) => format!("exit {c}"),
        Exit::Signal(s) => format!("signal {s}"),
        Exit::Timeout => "timeout".into(),
        Exit::Cancelled => "cancelled".into(),
        Exit::SpawnFailed(m) | Exit::SandboxUnavailable(m) => m.clone(),
    }
}

fn true_command() -> (PathBuf, Vec<String>) {
    ["/bin/true", "/usr/bin/true"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .map(|p| (p, Vec::new()))
        .unwrap_or_else(|| (PathBuf::from("/bin/sh"), vec!["-c".into(), ":".into()]))
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

fn cache_record(key: &ProbeKey, kind: LauncherKind) -> serde_json::Value {
    serde_json::json!({
        "program": key.0.to_string_lossy(),
        "mtimeNs": key.1.to_string(),
        "len": key.2,
        "kind": format!("{kind:?}"),
        "flags": BWRAP_FLAGS_VERSION,
        "uid": sys::uid(),
        "bootId": boot_id(),
    })
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn read_disk_cache(dir: &Path, key: &ProbeKey, kind: LauncherKind) -> Option<Launcher> {
    let path = dir.join(PROBE_CACHE_FILE);
    let bytes = std::fs::read(&path).ok()?;
    let mut stored: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let fields = stored.as_object_mut()?;
    let checked_at = fields.remove("checkedAt")?.as_u64()?;
    let empty_as_tmpfs = fields.remove("emptyAsTmpfs")?.as_bool()?;
    let fresh = now_secs().saturating_sub(checked_at) < PROBE_CACHE_TTL.as_secs();
    (fresh && stored == cache_record(key, kind)).then(|| Launcher {
        kind,
        program: key.0.clone(),
        source: SYSTEM,
        empty_as_tmpfs,
    })
}

fn write_disk_cache(dir: &Path, key: &ProbeKey, launcher: &Launcher) {
    let mut record = cache_record(key, launcher.kind);
    record["checkedAt"] = now_secs().into();
    record["emptyAsTmpfs"] = launcher.empty_as_tmpfs.into();
    let written =
        crate::paths::write_cache_file(&dir.join(PROBE_CACHE_FILE), record.to_string().as_bytes());
    if let Err(e) = written {
        tracing::debug!(
            "could not cache the sandbox probe in `{}`: {e}",
            dir.display()
        );
    }
}

/// One mount of the sandbox's filesystem view, in the order applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Mount {
    /// Writable, as on the host.
    Bind(PathBuf),
    /// Read-only: protected inside a writable path, or a hook's own
    /// directory under the private /tmp.
    ReadOnly(PathBuf),
    /// A directory that cannot be read: an empty tmpfs over it.
    HideDir(PathBuf),
    /// A file that cannot be read: `/dev/null` over it.
    HideFile(PathBuf),
    /// An empty directory that must stay as it is, protected like
    /// [`Mount::ReadOnly`]: under bubblewrap that can, a tmpfs of mode 0555
    /// over it (nothing written there reaches the host, and it cannot be
    /// renamed or removed), which costs bubblewrap far less than a bind.
    Empty(PathBuf),
}

/// What a confined hook may touch. Paths are canonical.
pub(super) struct Confinement<'a> {
    pub cwd: &'a Path,
    pub mounts: &'a [Mount],
    pub network: bool,
    /// The fd (in the launcher) that carries the seccomp program.
    pub seccomp_fd: Option<i32>,
}

impl Launcher {
    /// The arguments that follow `self.program` to run `program args`
    /// confined by `c`.
    pub(super) fn wrap(&self, program: &Path, args: &[String], c: &Confinement) -> Vec<OsString> {
        let mut argv: Vec<OsString> = match self.kind {
            LauncherKind::Bubblewrap => bwrap_args(c, self.empty_as_tmpfs),
            LauncherKind::SandboxExec => sandbox_exec_args(c.mounts, c.network),
        };
        argv.push(program.as_os_str().to_owned());
        argv.extend(args.iter().map(OsString::from));
        argv
    }
}

/// Worked out on Linux 6.x as root and as `nobody`, with bubblewrap 0.8:
/// - `--unshare-all` includes `--unshare-user-try`, so where user
///   namespaces are unavailable to root it still confines with the others.
/// - `--cap-drop ALL` is essential as root: without it the hook keeps every
///   capability and can `mount -o remount,rw /` through the read-only root.
/// - `--tmpfs /tmp` (and, without network, `/run`) comes before the binds,
///   so a path under it that is bound stays visible; the hidden paths come
///   before the writable binds too, so a hook cache under the hidden state
///   directory is still there.
/// - A protected path is a mount point, which cannot be renamed or removed
///   (EBUSY); its parent inside the project is bound onto itself for the
///   same reason, so `mv .git x` cannot swap a fresh `.git` in.
/// - `--seccomp` reads the program from the fd and closes it before the
///   hook starts.
/// - An empty protected directory is a tmpfs of mode 0555 where the
///   bubblewrap takes `--perms` for it (`empty_as_tmpfs`): every bind makes
///   bubblewrap read and parse the whole mount table again, a tmpfs does
///   not. With no capability left the hook cannot write in it; a chmod by
///   its owner could, but only into that tmpfs, which ends with the hook.
fn bwrap_args(c: &Confinement, empty_as_tmpfs: bool) -> Vec<OsString> {
    let mut a: Vec<OsString> = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        .map(OsString::from)
        .to_vec();
    a.extend(["--tmpfs", "/tmp"].map(OsString::from));
    // `--tmpfs` takes no source; a read-only one is `--perms 0555` first.
    let mut push = |flag: &str, src: &Path, dest: &Path| {
        if flag == "--perms-tmpfs" {
            a.extend(["--perms", "0555", "--tmpfs"].map(OsString::from));
        } else {
            a.push(flag.into());
        }
        if !flag.ends_with("tmpfs") {
            a.push(src.into());
        }
        a.push(dest.into());
    };
    for m in c.mounts {
        match m {
            Mount::Bind(p) => push("--bind", p, p),
            Mount::ReadOnly(p) => push("--ro-bind", p, p),
            Mount::HideDir(p) => push("--tmpfs", p, p),
            Mount::HideFile(p) => push("--ro-bind", Path::new("/dev/null"), p),
            Mount::Empty(p) if empty_as_tmpfs => push("--perms-tmpfs", p, p),
            Mount::Empty(p) => push("--ro-bind", p, p),
        }
    }
    a.push("--unshare-all".into());
    if c.network {
        a.push("--share-net".into());
    }
    a.extend(["--cap-drop", "ALL", "--die-with-parent", "--new-session"].map(OsString::from));
    if let Some(fd) = c.seccomp_fd {
        a.push("--seccomp".into());
        a.push(fd.to_string().into());
    }
    a.push("--chdir".into());
    a.push(c.cwd.into());
    a.push("--".into());
    a
}

/// The paths travel as `-D` parameters (`W` writable, `P` protected, `H`
/// hidden), so no path ever needs quoting inside the profile text.
fn sandbox_exec_args(mounts: &[Mount], network: bool) -> Vec<OsString> {
    let mut w = Vec::new();
    let mut p = Vec::new();
    let mut h = Vec::new();
    for m in mounts {
        match m {
            Mount::Bind(path) => w.push(path),
            Mount::ReadOnly(path) | Mount::Empty(path) => p.push(path),
            Mount::HideDir(path) | Mount::HideFile(path) => h.push(path),
        }
    }
    let mut a: Vec<OsString> = vec![
        "-p".into(),
        macos_profile(w.len(), p.len(), h.len(), network).into(),
    ];
    for (letter, paths) in [("W", &w), ("P", &p), ("H", &h)] {
        for (i, path) in paths.iter().enumerate() {
            let mut def = OsString::from(format!("-D {letter}{i}="));
            def.push(path);
            a.push(def);
        }
    }
    a
}

/// The sandbox-exec profile: reads allowed, writes only under the
/// `W0..W{n}` parameters, the per-user temp dirs and a few devices; never
/// under the protected `P0..` (existing or not: a subpath rule needs no
/// file), never a read of the hidden `H0..`; no network and no Unix socket
/// unless asked. macOS has no private /tmp: /tmp stays read-only.
pub fn macos_profile(writable: usize, protected: usize, hidden: usize, network: bool) -> String {
    let subpaths = |letter: &str, n: usize| -> String {
        (0..n)
            .map(|i| format!("  (subpath (param \"{letter}{i}\"))\n"))
            .collect()
    };
    let mut p = String::from("(version 1)\n(allow default)\n(deny file-write*)\n");
    p.push_str("(allow file-write*\n");
    p.push_str(&subpaths("W", writable));
    p.push_str("  (subpath \"/private/var/folders\")\n");
    p.push_str("  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\")\n");
    p.push_str("  (regex #\"^/dev/fd/\"))\n");
    if protected > 0 {
        p.push_str("(deny file-write*\n");
        p.push_str(&subpaths("P", protected));
        p.push_str(")\n");
    }
    if hidden > 0 {
        p.push_str("(deny file-read* file-write*\n");
        p.push_str(&subpaths("H", hidden));
        p.push_str(")\n");
    }
    if !network {
        p.push_str("(deny network*)\n");
        p.push_str("(deny network-outbound (remote unix-socket))\n");
    }
    p
}

/// The seccomp program bubblewrap loads for the hook: `socket(AF_UNIX, …)`
/// fails with EPERM (so no filesystem socket outside, such as the Docker or
/// D-Bus socket or an ssh/gpg agent, can be reached), and so does io_uring,
/// which could create one behind the filter's back. `socketpair` stays
/// allowed: its sockets reach nothing outside. Any other architecture's
/// syscalls (x32, or one the filter does not know) fail as well. `None` on
/// an architecture this filter is not written for.
pub(super) fn seccomp_program() -> Option<&'static [u8]> {
    static PROGRAM: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    PROGRAM.get_or_init(seccomp::build).as_deref()
}

mod seccomp {
    //! A classic-BPF seccomp filter, assembled by hand (a few instructions
    //! do not need a library).

    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const JGT_K: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;
    const NR: u32 = 0; // offsetof(struct seccomp_data, nr)
    const ARCH: u32 = 4;
    const ARG0: u32 = 16; // the low 32 bits of args[0] (little-endian)
    const AF_UNIX: u32 = libc::AF_UNIX as u32;
    const IO_URING_FIRST: u32 = 425; // io_uring_setup, _enter, _register
    const IO_URING_LAST: u32 = 427;

    /// One architecture: its audit id, `socket`'s number, numbers denied
    /// outright (`socketcall`, whose arguments the filter cannot see), and
    /// where a second ABI's numbers start (x32), denied too.
    struct Abi {
        arch: u32,
        socket: u32,
        deny: &'static [u32],
        deny_from: Option<u32>,
    }

    #[cfg(target_arch = "x86_64")]
    const ABIS: &[Abi] = &[
        Abi {
            arch: 0xc000_003e, // AUDIT_ARCH_X86_64
            socket: 41,
            deny: &[],
            deny_from: Some(0x4000_0000),
        },
        Abi {
            arch: 0x4000_0003, // AUDIT_ARCH_I386
            socket: 359,
            deny: &[102],
            deny_from: None,
        },
    ];
    #[cfg(target_arch = "aarch64")]
    const ABIS: &[Abi] = &[
        Abi {
            arch: 0xc000_00b7, // AUDIT_ARCH_AARCH64
            socket: 198,
            deny: &[],
            deny_from: None,
        },
        Abi {
            arch: 0x4000_0028, // AUDIT_ARCH_ARM
            socket: 281,
            deny: &[],
            deny_from: None,
        },
    ];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const ABIS: &[Abi] = &[];

    #[derive(Clone, Copy)]
    enum To {
        Next,
        Allow,
        Deny,
        CheckArg,
        Abi(usize),
    }

    enum Ins {
        Load(u32),
        Jump(u16, u32, To, To),
        Ret(u32),
    }

    pub(super) fn build() -> Option<Vec<u8>> {
        if ABIS.is_empty() {
            return None;
        }
        // Each ABI's block, then the shared tail: CheckArg, Allow, Deny.
        let mut blocks: Vec<Vec<Ins>> = Vec::new();
        for (i, abi) in ABIS.iter().enumerate() {
            let other = if i + 1 < ABIS.len() {
                To::Abi(i + 1)
            } else {
                To::Deny
            };
            let mut b = vec![Ins::Load(ARCH), Ins::Jump(JEQ_K, abi.arch, To::Next, other)];
            b.push(Ins::Load(NR));
            if let Some(from) = abi.deny_from {
                b.push(Ins::Jump(JGE_K, from, To::Deny, To::Next));
            }
            for nr in abi.deny {
                b.push(Ins::Jump(JEQ_K, *nr, To::Deny, To::Next));
            }
            b.push(Ins::Jump(JEQ_K, abi.socket, To::CheckArg, To::Next));
            b.push(Ins::Jump(JGE_K, IO_URING_FIRST, To::Next, To::Allow));
            b.push(Ins::Jump(JGT_K, IO_URING_LAST, To::Allow, To::Deny));
            blocks.push(b);
        }
        let starts: Vec<usize> = blocks
            .iter()
            .scan(0, |at, b| {
                let start = *at;
                *at += b.len();
                Some(start)
            })
            .collect();
        let check_arg: usize = blocks.iter().map(Vec::len).sum();
        let allow = check_arg + 2;
        let deny = allow + 1;
        blocks.push(vec![
            Ins::Load(ARG0),
            Ins::Jump(JEQ_K, AF_UNIX, To::Deny, To::Allow),
            Ins::Ret(RET_ALLOW),
            Ins::Ret(RET_EPERM),
        ]);
        let target = |to: To, pc: usize| -> Option<u8> {
            let abs = match to {
                To::Next => pc + 1,
                To::Allow => allow,
                To::Deny => deny,
                To::CheckArg => check_arg,
                To::Abi(i) => starts[i],
            };
            u8::try_from(abs.checked_sub(pc + 1)?).ok()
        };
        let mut out = Vec::new();
        for (pc, ins) in blocks.into_iter().flatten().enumerate() {
            let (code, jt, jf, k) = match ins {
                Ins::Load(off) => (LD_W_ABS, 0, 0, off),
                Ins::Jump(op, k, t, f) => (op, target(t, pc)?, target(f, pc)?, k),
                Ins::Ret(k) => (RET_K, 0, 0, k),
            };
            out.extend_from_slice(&code.to_ne_bytes());
            out.push(jt);
            out.push(jf);
            out.extend_from_slice(&k.to_ne_bytes());
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launcher(kind: LauncherKind) -> Launcher {
        Launcher {
            kind,
            program: "/usr/bin/bwrap".into(),
            source: SYSTEM,
            empty_as_tmpfs: false,
        }
    }

    #[test]
    fn bwrap_argv_shape() {
        let l = launcher(LauncherKind::Bubblewrap);
        let mounts = [
            Mount::HideDir("/run".into()),
            Mount::ReadOnly("/tmp/h".into()),
            Mount::HideFile("/home/u/.netrc".into()),
            Mount::Bind("/p".into()),
            Mount::ReadOnly("/p/.claude".into()),
        ];
        let c = Confinement {
            cwd: Path::new("/p"),
            mounts: &mounts,
            network: false,
            seccomp_fd: Some(3),
        };
        let argv = l.wrap(Path::new("/tmp/h/hook.sh"), &["a b".into()], &c);
        let s: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(
            s.join(" "),
            "--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run \
             --ro-bind /tmp/h /tmp/h --ro-bind /dev/null /home/u/.netrc --bind /p /p \
             --ro-bind /p/.claude /p/.claude --unshare-all --cap-drop ALL --die-with-parent \
             --new-session --seccomp 3 --chdir /p -- /tmp/h/hook.sh a b"
        );
        let with_net = l.wrap(Path::new("/x"), &[], &Confinement { network: true, ..c });
        assert!(with_net.iter().any(|a| a == "--share-net"));
    }

    #[test]
    fn macos_profile_denies_protected_hidden_and_sockets() {
        let p = macos_profile(2, 1, 1, false);
        assert!(p.contains("(subpath (param \"W0\"))") && p.contains("(subpath (param \"W1\"))"));
        // The deny rules come after the allow, so they win.
        let allow = p.find("(allow file-write*").unwrap();
        let deny_write = p
            .find("(deny file-write*\n  (subpath (param \"P0\"))")
            .unwrap();
        let deny_read = p
            .find("(deny file-read* file-write*\n  (subpath (param \"H0\"))")
            .unwrap();
        assert!(allow < deny_write && deny_write < deny_read, "{p}");
        assert!(p.contains("(deny network*)"));
        assert!(p.contains("(deny network-outbound (remote unix-socket))"));
        let open = macos_profile(0, 0, 0, true);
        assert!(
            !open.contains("network") && !open.contains("param \"P"),
            "{open}"
        );
        let l = launcher(LauncherKind::SandboxExec);
        let mounts = [
            Mount::Bind("/a \"b".into()),
            Mount::ReadOnly("/a \"b/.git/hooks".into()),
            Mount::HideDir("/u/.ssh".into()),
            Mount::HideFile("/u/.netrc".into()),
        ];
        let c = Confinement {
            cwd: Path::new("/"),
            mounts: &mounts,
            network: true,
            seccomp_fd: None,
        };
        let argv = l.wrap(Path::new("/h"), &[], &c);
        let s: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(
            s[2..],
            [
                "-D W0=/a \"b",
                "-D P0=/a \"b/.git/hooks",
                "-D H0=/u/.ssh",
                "-D H1=/u/.netrc",
                "/h"
            ]
        );
        assert!(s[1].contains("(param \"H1\")"));
    }

    #[test]
    fn seccomp_program_is_whole_instructions_with_jumps_in_range() {
        let Some(prog) = seccomp_program() else {
            panic!("no seccomp filter for this architecture");
        };
        assert_eq!(prog.len() % 8, 0);
        let n = prog.len() / 8;
        for (pc, ins) in prog.chunks(8).enumerate() {
            let code = u16::from_ne_bytes([ins[0], ins[1]]);
            if code & 0x07 == 0x05 {
                // A conditional jump lands inside the program.
                assert!(pc + 1 + (ins[2] as usize) < n && pc + 1 + (ins[3] as usize) < n);
            }
        }
        // It ends in ALLOW then EPERM.
        let last = &prog[prog.len() - 16..];
        assert_eq!(
            u32::from_ne_bytes(last[4..8].try_into().unwrap()),
            0x7fff_0000
        );
        assert_eq!(
            u32::from_ne_bytes(last[12..16].try_into().unwrap()),
            0x0005_0000 | libc::EPERM as u32
        );
    }

    #[test]
    fn probe_cache_file_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let key: ProbeKey = (PathBuf::from("/usr/bin/bwrap"), 42, 7);
        let kind = LauncherKind::Bubblewrap;
        assert_eq!(read_disk_cache(dir.path(), &key, kind), None);
        let probed = Launcher {
            empty_as_tmpfs: true,
            ..launcher(kind)
        };
        write_disk_cache(dir.path(), &key, &probed);
        let hit = read_disk_cache(dir.path(), &key, kind).expect("fresh entry is a hit");
        assert_eq!(hit.program, key.0);
        assert!(hit.empty_as_tmpfs, "what the probe found is kept");
        // A replaced binary (new mtime) is probed again.
        let newer: ProbeKey = (key.0.clone(), 43, 7);
        assert_eq!(read_disk_cache(dir.path(), &newer, kind), None);
        // So is an entry older than the TTL.
        let path = dir.path().join(PROBE_CACHE_FILE);
        let mut stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        stored["checkedAt"] = (now_secs() - PROBE_CACHE_TTL.as_secs() - 1).into();
        std::fs::write(&path, stored.to_string()).unwrap();
        assert_eq!(read_disk_cache(dir.path(), &key, kind), None);
    }
}
