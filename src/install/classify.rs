//! The drift classifier (ARCHITECTURE §6, the spec's
//! `lib/hooks-staleness-core.sh`): is a hook source's snapshot missing,
//! half wired, stale, or current? States are evaluated in that order and are
//! mutually exclusive. It never fails its caller: an internal error comes
//! back as a warning, and a warning is never read as `current`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::SnapshotError;
use super::hash;
use super::hostfile::HostFileError;
use super::manifest::{self, Manifest, Summary, Wiring, WiringFormat, WiringScope};
use super::snapshot;
use crate::escape::escape;
use crate::hash::SourceError;
use crate::hosts::{self, ConfigFormat};
use crate::paths::Locations;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriftState {
    /// No snapshot for this source.
    NeverMigrated,
    /// A snapshot exists, but some host it records does not point at it for
    /// every event it maps (or it records no host at all).
    HalfApplied,
    /// Wired, but the live source differs from the snapshot.
    StaleButStable,
    Current,
}

impl DriftState {
    /// The stable name used in output and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftState::NeverMigrated => "never_migrated",
            DriftState::HalfApplied => "half_applied",
            DriftState::StaleButStable => "stale_but_stable",
            DriftState::Current => "current",
        }
    }

    /// One sentence a user can act on.
    pub fn meaning(self) -> &'static str {
        match self {
            DriftState::NeverMigrated => "no snapshot has been taken of this source",
            DriftState::HalfApplied => {
                "the snapshot exists, but not every host that should use it is wired to it \
                 with timeouts that cover its hooks"
            }
            DriftState::StaleButStable => {
                "the source has changed since the snapshot was taken; sessions still run the snapshot"
            }
            DriftState::Current => "the snapshot matches the source and every host points at it",
        }
    }
}

/// One host the manifest records as using the snapshot: where it was wired,
/// or `None` for a manifest written before wirings were recorded (then every
/// config file the host reads counts).
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a> {
    pub host: &'a str,
    pub wiring: Option<&'a Wiring>,
}

/// Answers "does this recorded host point at snapshot `key` for every event
/// it maps?". A parameter so the classifier can be tested without host files.
pub type WiredCheck<'a> = &'a dyn Fn(&Recorded<'_>, &str) -> Result<bool, SnapshotError>;

/// One recorded host and whether it is wired where the manifest says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostWiring {
    pub host: String,
    /// `None` for a host recorded without a wiring (an older manifest).
    pub wiring: Option<Wiring>,
    pub wired: bool,
}

impl HostWiring {
    /// Why the host would not load the settings file it is recorded as
    /// wired in, read as that host reads it: such a file is broken, not
    /// wired, whatever keryx-hooks' entries in it say.
    pub fn broken(&self) -> Option<String> {
        let w = self
            .wiring
            .as_ref()
            .filter(|w| w.format == WiringFormat::Settings)?;
        let adapter = hosts::adapter(&self.host)?;
        super::hostfile::load_problem(adapter, Path::new(&w.path))
    }

    /// `claude-code` or `claude-code (project settings, `/p/.claude/settings.json`)`.
    pub fn describe(&self) -> String {
        match &self.wiring {
            None => escape(&self.host),
            Some(w) => format!(
                "{} ({} {}, `{}`)",
                escape(&self.host),
                w.scope.as_str(),
                w.format.as_str(),
                escape(&w.path)
            ),
        }
    }
}

/// Everything the classifier found out about one source.
#[derive(Debug, Clone)]
pub struct Assessment {
    pub state: DriftState,
    pub source: PathBuf,
    pub key: String,
    pub dir: PathBuf,
    pub manifest: Option<Manifest>,
    /// The live source hash, when the classifier got that far.
    pub live_hash: Option<String>,
    /// The hosts the manifest records (each wiring once), and whether each
    /// is wired.
    pub hosts: Vec<HostWiring>,
}

impl Assessment {
    /// The recorded hosts that are not wired where the manifest says.
    pub fn unwired(&self) -> impl Iterator<Item = &HostWiring> {
        self.hosts.iter().filter(|h| !h.wired)
    }
}

/// The drift state of `source`'s snapshot under `snapshot_root`.
pub fn classify(
    source: &Path,
    snapshot_root: &Path,
    hosts_wired_check: WiredCheck,
) -> Result<DriftState, SnapshotError> {
    assess(source, snapshot_root, None, hosts_wired_check).map(|a| a.state)
}

/// [`classify`] with the details, and the source-hash stat cache `cache`.
pub fn assess(
    source: &Path,
    snapshot_root: &Path,
    cache: Option<&Path>,
    wired: WiredCheck,
) -> Result<Assessment, SnapshotError> {
    let key = snapshot::snapshot_key(source);
    let dir = snapshot_root.join(&key);
    assess_at(source, key, dir, cache, wired)
}

fn assess_at(
    source: &Path,
    key: String,
    dir: PathBuf,
    cache: Option<&Path>,
    wired: WiredCheck,
) -> Result<Assessment, SnapshotError> {
    match std::fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // "Never migrated" only means something for a hook source.
            if !source.join("hooks.json").is_file() {
                return Err(SourceError::NoHooksJson {
                    root: source.to_path_buf(),
                }
                .into());
            }
            return Ok(Assessment {
                state: DriftState::NeverMigrated,
                source: source.to_path_buf(),
                key,
                dir,
                manifest: None,
                live_hash: None,
                hosts: Vec::new(),
            });
        }
        Err(error) => return Err(SnapshotError::Read { path: dir, error }),
        Ok(_) => {}
    }
    let m = manifest::read(&dir)?;
    let mut a = assess_summary(source, key, dir, &Summary::from(&m), cache, wired)?;
    a.manifest = Some(m);
    Ok(a)
}

/// Every host a manifest records, each wiring once, then the hosts recorded
/// without a wiring.
pub fn recorded(s: &Summary) -> Vec<Recorded<'_>> {
    let mut out: Vec<Recorded> = s
        .wirings
        .iter()
        .map(|w| Recorded {
            host: &w.host,
            wiring: Some(w),
        })
        .collect();
    for host in &s.hosts {
        if !s.wirings.iter().any(|w| &w.host == host) {
            out.push(Recorded { host, wiring: None });
        }
    }
    out
}

/// The states after `never_migrated`, for a snapshot whose manifest is read.
fn assess_summary(
    source: &Path,
    key: String,
    dir: PathBuf,
    s: &Summary,
    cache: Option<&Path>,
    wired: WiredCheck,
) -> Result<Assessment, SnapshotError> {
    let mut hosts = Vec::new();
    for r in recorded(s) {
        hosts.push(HostWiring {
            host: r.host.to_owned(),
            wiring: r.wiring.cloned(),
            wired: wired(&r, &key)?,
        });
    }
    let half = hosts.is_empty() || hosts.iter().any(|h| !h.wired);
    let mut a = Assessment {
        state: DriftState::HalfApplied,
        source: source.to_path_buf(),
        key,
        dir,
        manifest: None,
        live_hash: None,
        hosts,
    };
    if !half {
        let live = hash::source_hash(source, cache)?;
        a.state = if live == s.source_hash {
            DriftState::Current
        } else {
            DriftState::StaleButStable
        };
        a.live_hash = Some(live);
    }
    Ok(a)
}

/// The hook sources worth reporting: `explicit` alone when given; otherwise
/// `$KERYX_HOME` (when it holds a `hooks.json`) and the source of every
/// installed snapshot, each once.
pub fn known_sources(loc: &Locations, explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(s) = explicit {
        return vec![crate::paths::absolute(s)];
    }
    let mut out: Vec<PathBuf> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    let mut add = |p: PathBuf| {
        let k = snapshot::snapshot_key(&p);
        if !keys.contains(&k) {
            keys.push(k);
            out.push(p);
        }
    };
    if loc.user_hooks_file().is_file() {
        add(loc.keryx_home.clone());
    }
    for s in snapshot::installed(&loc.snapshot_root) {
        if let Ok(m) = s.manifest {
            add(PathBuf::from(m.source_path));
        }
    }
    out
}

/// Where the SessionStart check remembers the summary of snapshot `key`'s
/// manifest (see [`manifest::read_summary_memo`]); the key is made a safe
/// file name as for the snapshot's own directory.
pub fn manifest_memo(loc: &Locations, key: &str) -> PathBuf {
    loc.state_dir
        .join("manifest-memo")
        .join(format!("{}.json", crate::paths::sanitize_component(key)))
}

/// The stat cache [`assess`] should use for `source`.
pub fn cache_for(loc: &Locations, source: &Path) -> PathBuf {
    hash::cache_file(&loc.state_dir, source)
}

/// The one SessionStart line for the snapshot `key` a host runs us with, or
/// `None` when it is current. Fail-open: a missing snapshot is left to the
/// loader's own diagnostic, and a panic in here costs the line, nothing else.
pub fn session_start_line(loc: &Locations, key: &str) -> Option<String> {
    let started = Instant::now();
    let line = std::panic::catch_unwind(|| drift_line(loc, key)).unwrap_or_else(|_| {
        Some(format!(
            "keryx-hooks: could not check whether hook snapshot `{}` is current; run `keryx-hooks doctor --fix`",
            escape(key)
        ))
    });
    tracing::debug!(
        elapsed_us = started.elapsed().as_micros() as u64,
        drift = line.is_some(),
        "SessionStart drift check"
    );
    line
}

fn drift_line(loc: &Locations, key: &str) -> Option<String> {
    let dir = loc.snapshot_dir(key);
    if !dir.is_dir() {
        return None;
    }
    let wired = |r: &Recorded<'_>, key: &str| recorded_wired(loc, r, key);
    let result = manifest::read_summary_memo(&dir, &manifest_memo(loc, key)).and_then(|m| {
        let source = PathBuf::from(&m.source_path);
        let cache = cache_for(loc, &source);
        assess_summary(
            &source,
            key.to_owned(),
            dir.clone(),
            &m,
            Some(&cache),
            &wired,
        )
    });
    let key = escape(key);
    match result {
        Ok(a) => match a.state {
            DriftState::Current | DriftState::NeverMigrated => None,
            DriftState::StaleButStable => Some(format!(
                "keryx-hooks: your hook source `{}` has changed since snapshot `{key}` was taken, so \
                 sessions still run the old hooks; run `keryx-hooks doctor --fix` to resync",
                escape(&a.source.to_string_lossy())
            )),
            DriftState::HalfApplied => {
                let mut missing: Vec<&str> = a.unwired().map(|h| h.host.as_str()).collect();
                missing.dedup();
                Some(format!(
                    "keryx-hooks: hook snapshot `{key}` is not wired, with timeouts that cover its hooks, into every host that should use it{}; \
                     run `keryx-hooks doctor --fix`",
                    if missing.is_empty() {
                        String::new()
                    } else {
                        format!(" (not: {})", escape(&missing.join(", ")))
                    }
                ))
            }
        },
        Err(w) => Some(format!(
            "keryx-hooks: could not check whether hook snapshot `{key}` is current ({}); run `keryx-hooks doctor --fix`",
            escape(&w.to_string())
        )),
    }
}

/// Whether a recorded host points at snapshot `key` for every event it maps:
/// in the file or plugin the wiring names, wherever that is (a project-scope
/// wiring is checked in its project, not in the current directory); for a
/// host recorded without a wiring, in any config file it reads from here.
pub fn recorded_wired(loc: &Locations, r: &Recorded<'_>, key: &str) -> Result<bool, SnapshotError> {
    let Some(w) = r.wiring else {
        return host_wired(loc, r.host, key);
    };
    let adapter = hosts::adapter(r.host).ok_or_else(|| unknown_host(r.host))?;
    let path = Path::new(&w.path);
    let entries = match w.format {
        WiringFormat::Settings => match super::hostfile::wired_events(adapter, path) {
            // A file the host does not load wires nothing; `status` says why.
            Err(e) if e.host_would_not_load() => return Ok(false),
            r => r?,
        },
        WiringFormat::Plugin => super::plugin::wired_events(adapter, path)?,
    };
    let project = match w.scope {
        WiringScope::User => None,
        WiringScope::Project => Some(
            w.project
                .as_deref()
                .map(Path::new)
                .unwrap_or(loc.project_root_or_cwd()),
        ),
    };
    Ok(all_events_at(adapter, &entries, key)
        && timeouts_cover(loc, adapter, &entries, key, project))
}

/// Whether each of our entries for snapshot `key` in `entries` has a
/// timeout at least what the snapshot's hooks need on that event (see
/// [`short_timeouts`]).
pub fn timeouts_cover(
    loc: &Locations,
    host: &hosts::Adapter,
    entries: &[WiredEntry],
    key: &str,
    project: Option<&Path>,
) -> bool {
    short_timeouts(loc, host, entries, key, project).is_empty()
}

/// One wired event whose host timeout is below what the hooks need there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortTimeout {
    pub host_event: String,
    /// Both in the host's own unit.
    pub timeout: u64,
    pub needed: u64,
}

/// Our entries for snapshot `key` in `entries` whose timeout is below what
/// the snapshot's hooks need on that event (at project scope, with the
/// hooks of the project at `project` too): a host kills a hook at its
/// timeout and Claude Code then lets the tool run, so a timeout below a
/// gate's is a gate that can be outwaited. An entry without a timeout gets
/// the host's default and is not judged; when the hooks do not load, the
/// loader's own diagnostics report that instead.
pub fn short_timeouts(
    loc: &Locations,
    host: &hosts::Adapter,
    entries: &[WiredEntry],
    key: &str,
    project: Option<&Path>,
) -> Vec<ShortTimeout> {
    let Some(regs) = snapshot_registrations(loc, key, project) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, needed) in super::hostfile::needed_timeouts(host, &regs) {
        for e in entries
            .iter()
            .filter(|e| e.host_event == event && e.snapshot_key.as_deref() == Some(key))
        {
            if let Some(timeout) = e.timeout.filter(|t| *t < needed) {
                out.push(ShortTimeout {
                    host_event: event.to_owned(),
                    timeout,
                    needed,
                });
            }
        }
    }
    out
}

/// What the host timeouts of a wiring to snapshot `key` must cover: its
/// hooks, the built-ins and the project's (the project at `project` for a
/// project-scope wiring, else the one here). `None` when the snapshot is
/// not installed or its hooks do not load (the loader reports that).
pub fn snapshot_registrations(
    loc: &Locations,
    key: &str,
    project: Option<&Path>,
) -> Option<Vec<crate::config::model::Registration>> {
    let dir = loc.snapshot_dir(key);
    if !dir.join(manifest::MANIFEST_FILE).is_file() {
        return None;
    }
    match project {
        Some(root) => super::hostfile::budget_registrations_in(&dir, root, loc),
        None => super::hostfile::budget_registrations(&dir, loc),
    }
    .ok()
}

/// Whether `entries` wire every event `host` maps to snapshot `key`.
pub fn all_events_at(host: &hosts::Adapter, entries: &[WiredEntry], key: &str) -> bool {
    host.wired_events().all(|(event, _)| {
        entries
            .iter()
            .any(|e| e.host_event == event && e.snapshot_key.as_deref() == Some(key))
    })
}

/// The wiring scope a config-file scope is recorded as.
pub fn wiring_scope(scope: Scope) -> WiringScope {
    match scope {
        Scope::User => WiringScope::User,
        Scope::Project => WiringScope::Project,
    }
}

/// Whether `host` points at snapshot `key` for every event it maps, in any
/// config file it reads (user or project scope). A host the user runs by
/// hand (`keryx`) has nothing to wire.
pub fn host_wired(loc: &Locations, host: &str, key: &str) -> Result<bool, SnapshotError> {
    let adapter = hosts::adapter(host).ok_or_else(|| unknown_host(host))?;
    if adapter.config_files().format == ConfigFormat::None {
        return Ok(true);
    }
    let mut error = None;
    for HostFile {
        path: file,
        entries,
        scope,
    } in host_config_entries(loc, adapter)
    {
        let project = (scope == Scope::Project).then(|| loc.project_root_or_cwd());
        match entries {
            Ok(entries) => {
                if all_events_at(adapter, &entries, key)
                    && timeouts_cover(loc, adapter, &entries, key, project)
                {
                    return Ok(true);
                }
            }
            Err(e) if e.names(&file) => error = Some(e),
            Err(e) => {
                error = Some(HostFileError::In {
                    path: file,
                    error: Box::new(e),
                });
            }
        }
    }
    error.map_or(Ok(false), |e| Err(e.into()))
}

fn unknown_host(host: &str) -> SnapshotError {
    SnapshotError::UnknownHost {
        host: host.to_owned(),
    }
}

pub use super::hostfile::{Scope, WiredEntry};

/// One host config file that exists, with our entries in it.
#[derive(Debug)]
pub struct HostFile {
    pub scope: Scope,
    pub path: PathBuf,
    pub entries: Result<Vec<WiredEntry>, HostFileError>,
}

/// Every existing config file `host` reads (user scope, then this
/// project's) with our entries in it, or why it could not be read. A file
/// is listed once: run from the home directory (or through a link to it),
/// the project-scope file is the user file, and counts as that.
pub fn host_config_entries(loc: &Locations, host: &hosts::Adapter) -> Vec<HostFile> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<(u64, u64)> = Vec::new();
    [Scope::User, Scope::Project]
        .into_iter()
        .flat_map(|scope| {
            super::hostfile::config_files(host, scope, loc)
                .into_iter()
                .map(move |path| (scope, path))
        })
        .filter(|(_, path)| std::fs::symlink_metadata(path).is_ok())
        .filter(|(_, path)| match std::fs::metadata(path) {
            Ok(m) if seen.contains(&(m.dev(), m.ino())) => false,
            Ok(m) => {
                seen.push((m.dev(), m.ino()));
                true
            }
            Err(_) => true,
        })
        .map(|(scope, path)| HostFile {
            entries: super::hostfile::wired_events(host, &path),
            scope,
            path,
        })
        .collect()
}

/// One source and what the classifier said about it.
pub struct SourceStatus {
    pub source: PathBuf,
    /// Whether this is `$KERYX_HOME`, the source used without `--source`.
    pub is_default: bool,
    pub result: Result<Assessment, SnapshotError>,
}

impl SourceStatus {
    pub fn current(&self) -> bool {
        matches!(&self.result, Ok(a) if a.state == DriftState::Current)
    }

    /// The command that moves this source towards `current`.
    pub fn fix(&self) -> Option<String> {
        match &self.result {
            Ok(a) => fix_for(a, self.is_default),
            Err(_) => Some("keryx-hooks doctor".to_owned()),
        }
    }
}

fn fix_for(a: &Assessment, is_default: bool) -> Option<String> {
    let with_source = |cmd: &str| {
        if is_default {
            cmd.to_owned()
        } else {
            format!("{cmd} --source '{}'", escape(&a.source.to_string_lossy()))
        }
    };
    match a.state {
        DriftState::Current => None,
        DriftState::NeverMigrated => Some(with_source("keryx-hooks install <host>...")),
        DriftState::HalfApplied if a.hosts.is_empty() => {
            Some(with_source("keryx-hooks install <host>..."))
        }
        DriftState::HalfApplied | DriftState::StaleButStable => {
            Some(with_source("keryx-hooks doctor --fix"))
        }
    }
}

/// Classifies every known source (see [`known_sources`]) with the
/// stat cache, so a repeated `status` reads no unchanged file.
pub fn assess_all(loc: &Locations, explicit: Option<&Path>) -> Vec<SourceStatus> {
    known_sources(loc, explicit)
        .into_iter()
        .map(|source| {
            let cache = cache_for(loc, &source);
            let wired = |r: &Recorded<'_>, k: &str| recorded_wired(loc, r, k);
            let result = assess(&source, &loc.snapshot_root, Some(&cache), &wired);
            SourceStatus {
                is_default: super::snapshot::snapshot_key(&source)
                    == super::snapshot::snapshot_key(&loc.keryx_home),
                source,
                result,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(root: &Path, rel: &str, body: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
    }

    #[test]
    fn every_state_in_order() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("hooks");
        let root = t.path().join("snap");
        write(&src, "hooks.json", "{}");
        let wired_none = |_: &Recorded<'_>, _: &str| Ok(false);
        let wired_all = |_: &Recorded<'_>, _: &str| Ok(true);
        let broken = |_: &Recorded<'_>, _: &str| Err(unknown_host("nowhere"));

        assert_eq!(
            classify(&src, &root, &wired_all).ok(),
            Some(DriftState::NeverMigrated)
        );
        snapshot::sync(&src, &root, &[], false).unwrap();
        // No host recorded: nothing points at it yet.
        assert_eq!(
            classify(&src, &root, &wired_all).ok(),
            Some(DriftState::HalfApplied)
        );
        snapshot::sync(&src, &root, &["claude-code".into()], false).unwrap();
        assert_eq!(
            classify(&src, &root, &wired_none).ok(),
            Some(DriftState::HalfApplied)
        );
        assert_eq!(
            classify(&src, &root, &wired_all).ok(),
            Some(DriftState::Current)
        );
        write(&src, "extra.sh", "echo");
        assert_eq!(
            classify(&src, &root, &wired_all).ok(),
            Some(DriftState::StaleButStable)
        );
        // Half applied wins over stale: the order is the contract.
        assert_eq!(
            classify(&src, &root, &wired_none).ok(),
            Some(DriftState::HalfApplied)
        );
        // Errors are warnings, never current.
        assert!(classify(&src, &root, &broken).is_err());
        std::fs::remove_file(src.join("hooks.json")).unwrap();
        assert!(classify(&src, &root, &wired_all).is_err());
        write(&src, "hooks.json", "{}");
        let dir = root.join(snapshot::snapshot_key(&src));
        std::fs::write(dir.join("manifest.json"), "{").unwrap();
        assert!(classify(&src, &root, &wired_all).is_err());
    }

    /// The SessionStart check's warm path (nothing changed, stat cache
    /// filled) must stay well under the 5 ms budget; the best of a few runs
    /// keeps a loaded machine from failing it by accident.
    #[test]
    fn warm_check_is_cheap() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("hooks");
        let root = t.path().join("snap");
        write(&src, "hooks.json", "{}");
        for i in 0..40 {
            write(
                &src,
                &format!("scripts/s{i}.sh"),
                &"echo hello\n".repeat(200),
            );
            std::fs::set_permissions(
                src.join(format!("scripts/s{i}.sh")),
                std::fs::Permissions::from_mode(0o755),
            )
            .unwrap();
        }
        snapshot::sync(&src, &root, &["claude-code".into()], false).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let cache = t.path().join("cache.json");
        let wired = |_: &Recorded<'_>, _: &str| Ok(true);
        assess(&src, &root, Some(&cache), &wired).unwrap();
        let best = (0..5)
            .map(|_| {
                let s = Instant::now();
                let reads = hash::content_reads();
                let a = assess(&src, &root, Some(&cache), &wired).unwrap();
                assert_eq!(a.state, DriftState::Current);
                assert_eq!(hash::content_reads(), reads);
                s.elapsed()
            })
            .min()
            .unwrap();
        assert!(best.as_micros() < 5000, "warm drift check took {best:?}");
    }
}
