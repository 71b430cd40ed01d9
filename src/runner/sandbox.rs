//! OS sandbox launchers: bubblewrap on Linux, sandbox-exec on macOS. Owns
//! finding one, proving it actually works here (a cached probe, because it
//! runs on hook invocations) and the wrapper argv for a confined hook.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Exit, SandboxSpec, SpawnRequest, sys};
use crate::escape::escape;

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
}

/// Bumped whenever [`bwrap_args`] changes, so a cached probe of the old
/// flags is not trusted for the new ones.
const BWRAP_FLAGS_VERSION: u32 = 1;
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
pub fn sandbox_launcher() -> Result<Launcher, String> {
    #[cfg(target_os = "linux")]
    {
        let program = find_bwrap().ok_or_else(|| {
            "bubblewrap (`bwrap`) is not installed; install it (e.g. `apt-get install bubblewrap`) \
             or mark the hook `runsIn: \"unsandboxed\"` where the profile allows it"
                .to_owned()
        })?;
        probe_cached(&program, LauncherKind::Bubblewrap)
    }
    #[cfg(target_os = "macos")]
    {
        probe_cached(
            Path::new("/usr/bin/sandbox-exec"),
            LauncherKind::SandboxExec,
        )
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        Err(format!(
            "no sandbox launcher is supported on {}",
            std::env::consts::OS
        ))
    }
}

/// Proves `program` is a bubblewrap that can build the sandbox hooks run in,
/// by running `true` inside exactly that sandbox. Uncached; `doctor` and the
/// tests call it with any path.
pub fn probe_bwrap(program: &Path) -> Result<Launcher, String> {
    probe(program, LauncherKind::Bubblewrap)
}

#[cfg(target_os = "linux")]
fn find_bwrap() -> Option<PathBuf> {
    let system = ["/usr/bin", "/usr/local/bin", "/bin"].map(PathBuf::from);
    let path = crate::env_vars::get(crate::env_vars::PATH).unwrap_or_default();
    let on_path = std::env::split_paths(&path).filter(|d| d.is_absolute());
    system
        .into_iter()
        .chain(on_path)
        .map(|dir| dir.join("bwrap"))
        .find(|p| p.is_file())
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

type Verdict = Result<Launcher, String>;
static PROBES: Mutex<Vec<(ProbeKey, Verdict)>> = Mutex::new(Vec::new());

fn probe_cached(program: &Path, kind: LauncherKind) -> Result<Launcher, String> {
    let Some(key) = probe_key(program) else {
        return Err(format!("`{}` does not exist", program.display()));
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
            if let (Ok(_), Some(dir)) = (&result, dir) {
                write_disk_cache(dir, &key, kind);
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

fn probe(program: &Path, kind: LauncherKind) -> Result<Launcher, String> {
    let shown = escape(&program.display().to_string());
    if !program.is_file() {
        return Err(format!("`{shown}` does not exist"));
    }
    let launcher = Launcher {
        kind,
        program: program.to_path_buf(),
    };
    let (true_program, true_args) = true_command();
    let nothing = Confinement {
        cwd: Path::new("/"),
        writable: &[],
        readable: &[],
        network: false,
    };
    let mut argv = launcher.wrap(&true_program, &true_args, &nothing);
    argv.insert(0, program.as_os_str().to_owned());
    let req = SpawnRequest {
        argv: argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        cwd: PathBuf::from("/"),
        env: Vec::new(),
        stdin: Vec::new(),
        timeout: PROBE_TIMEOUT,
        sandbox: SandboxSpec::None,
    };
    let started = std::time::Instant::now();
    let out = super::spawn(&req);
    tracing::debug!(program = %program.display(), exit = ?out.exit, elapsed = ?started.elapsed(), "sandbox probe");
    let detail = String::from_utf8_lossy(&out.stderr);
    let detail = escape(detail.trim());
    match out.exit {
        Exit::Code(0) => Ok(launcher),
        Exit::Timeout => Err(format!(
            "`{shown}` did not start a sandbox within {}s",
            PROBE_TIMEOUT.as_secs()
        )),
        exit => Err(format!(
            "`{shown}` cannot create a sandbox here ({}{}); {}",
            describe(&exit),
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            },
            match kind {
                LauncherKind::Bubblewrap => {
                    "user namespaces may be disabled: check `sysctl user.max_user_namespaces`, \
                     `kernel.unprivileged_userns_clone` and, on Ubuntu, \
                     `kernel.apparmor_restrict_unprivileged_userns`"
                }
                LauncherKind::SandboxExec => "check that `sandbox-exec` runs a trivial profile",
            }
        )),
    }
}

fn describe(exit: &Exit) -> String {
    match exit {
        Exit::Code(c) => format!("exit {c}"),
        Exit::Signal(s) => format!("signal {s}"),
        Exit::Timeout => "timeout".into(),
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
    let checked_at = stored.as_object_mut()?.remove("checkedAt")?.as_u64()?;
    let fresh = now_secs().saturating_sub(checked_at) < PROBE_CACHE_TTL.as_secs();
    (fresh && stored == cache_record(key, kind)).then(|| Launcher {
        kind,
        program: key.0.clone(),
    })
}

fn write_disk_cache(dir: &Path, key: &ProbeKey, kind: LauncherKind) {
    let mut record = cache_record(key, kind);
    record["checkedAt"] = now_secs().into();
    let written =
        crate::paths::write_cache_file(&dir.join(PROBE_CACHE_FILE), record.to_string().as_bytes());
    if let Err(e) = written {
        tracing::debug!(
            "could not cache the sandbox probe in `{}`: {e}",
            dir.display()
        );
    }
}

/// What a confined hook may touch. Paths are canonical.
pub(super) struct Confinement<'a> {
    pub cwd: &'a Path,
    pub writable: &'a [PathBuf],
    /// Made visible read-only where the sandbox would otherwise hide them
    /// (the hook's own directory under bwrap's private /tmp).
    pub readable: &'a [PathBuf],
    pub network: bool,
}

impl Launcher {
    /// The arguments that follow `self.program` to run `program args`
    /// confined by `c`.
    pub(super) fn wrap(&self, program: &Path, args: &[String], c: &Confinement) -> Vec<OsString> {
        let mut argv: Vec<OsString> = match self.kind {
            LauncherKind::Bubblewrap => bwrap_args(c),
            LauncherKind::SandboxExec => sandbox_exec_args(c.writable, c.network),
        };
        argv.push(program.as_os_str().to_owned());
        argv.extend(args.iter().map(OsString::from));
        argv
    }
}

/// Worked out on Linux 6.x as root and as `nobody`:
/// - `--unshare-all` includes `--unshare-user-try`, so where user
///   namespaces are unavailable to root it still confines with the others.
/// - `--cap-drop ALL` is essential as root: without it the hook keeps every
///   capability and can `mount -o remount,rw /` through the read-only root.
/// - `--tmpfs /tmp` comes before the binds, so a path under /tmp that is
///   bound stays visible.
fn bwrap_args(c: &Confinement) -> Vec<OsString> {
    let mut a: Vec<OsString> = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        .map(OsString::from)
        .to_vec();
    a.extend(["--tmpfs", "/tmp"].map(OsString::from));
    let binds = (c.readable.iter().map(|p| ("--ro-bind", p)))
        .chain(c.writable.iter().map(|p| ("--bind", p)));
    for (flag, path) in binds {
        a.push(flag.into());
        a.push(path.into());
        a.push(path.into());
    }
    a.push("--unshare-all".into());
    if c.network {
        a.push("--share-net".into());
    }
    a.extend(
        [
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--chdir",
        ]
        .map(OsString::from),
    );
    a.push(c.cwd.into());
    a.push("--".into());
    a
}

/// The writable paths travel as `-D` parameters, so no path ever needs
/// quoting inside the profile text.
fn sandbox_exec_args(writable: &[PathBuf], network: bool) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["-p".into(), macos_profile(writable.len(), network).into()];
    for (i, path) in writable.iter().enumerate() {
        let mut def = OsString::from(format!("-D W{i}="));
        def.push(path);
        a.push(def);
    }
    a
}

/// The sandbox-exec profile: reads allowed, writes only under the
/// `W0..W{n}` parameters, the per-user temp dirs and a few devices, network
/// denied unless asked. macOS has no private /tmp: /tmp stays read-only.
pub fn macos_profile(writable: usize, network: bool) -> String {
    let mut p = String::from("(version 1)\n(allow default)\n(deny file-write*)\n");
    p.push_str("(allow file-write*\n");
    for i in 0..writable {
        p.push_str(&format!("  (subpath (param \"W{i}\"))\n"));
    }
    p.push_str("  (subpath \"/private/var/folders\")\n");
    p.push_str("  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\")\n");
    p.push_str("  (regex #\"^/dev/fd/\"))\n");
    if !network {
        p.push_str("(deny network*)\n");
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bwrap_argv_shape() {
        let l = Launcher {
            kind: LauncherKind::Bubblewrap,
            program: "/usr/bin/bwrap".into(),
        };
        let c = Confinement {
            cwd: Path::new("/p"),
            writable: &[PathBuf::from("/p")],
            readable: &[PathBuf::from("/tmp/h")],
            network: false,
        };
        let argv = l.wrap(Path::new("/tmp/h/hook.sh"), &["a b".into()], &c);
        let s: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(
            s.join(" "),
            "--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --ro-bind /tmp/h /tmp/h \
             --bind /p /p --unshare-all --cap-drop ALL --die-with-parent --new-session \
             --chdir /p -- /tmp/h/hook.sh a b"
        );
        let with_net = l.wrap(Path::new("/x"), &[], &Confinement { network: true, ..c });
        assert!(with_net.iter().any(|a| a == "--share-net"));
    }

    #[test]
    fn macos_profile_shape() {
        let p = macos_profile(2, false);
        assert!(p.contains("(subpath (param \"W0\"))") && p.contains("(subpath (param \"W1\"))"));
        assert!(p.contains("(deny network*)"));
        assert!(!macos_profile(0, true).contains("network"));
        let l = Launcher {
            kind: LauncherKind::SandboxExec,
            program: "/usr/bin/sandbox-exec".into(),
        };
        let c = Confinement {
            cwd: Path::new("/"),
            writable: &[PathBuf::from("/a \"b")],
            readable: &[],
            network: true,
        };
        let argv = l.wrap(Path::new("/h"), &[], &c);
        assert_eq!(argv[2], "-D W0=/a \"b");
        assert_eq!(argv[3], "/h");
    }

    #[test]
    fn probe_cache_file_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let key: ProbeKey = (PathBuf::from("/usr/bin/bwrap"), 42, 7);
        let kind = LauncherKind::Bubblewrap;
        assert_eq!(read_disk_cache(dir.path(), &key, kind), None);
        write_disk_cache(dir.path(), &key, kind);
        let hit = read_disk_cache(dir.path(), &key, kind).expect("fresh entry is a hit");
        assert_eq!(hit.program, key.0);
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
