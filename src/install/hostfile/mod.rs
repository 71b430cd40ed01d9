//! Host config files: where each host reads its hook registrations, which
//! entries in them are ours, and the one way they change: merged, never
//! overwritten. Our entries are recognised by the binary path plus
//! ` run <host> `; everything else in the file (foreign entries, keys, order,
//! comments, formatting) is left byte for byte, and a file is written only
//! when its bytes change, atomically, under a lock, after a one-time backup.

pub(crate) mod diff;
mod error;
pub(crate) mod file;
pub mod json;
pub mod toml;
pub mod wiring;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::load;
use crate::config::model::Registration;
use crate::hosts::{Adapter, ConfigFiles};
use crate::paths::Locations;

pub use error::HostFileError;
pub use wiring::Format;
pub use wiring::{
    Desired, ShimCommand, desired, needed_timeouts, parse_shim_command, shim_command, worst_case_ms,
};

/// Which of a host's config files: the user's own, or the project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    User,
    Project,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// One of our entries found in a host config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WiredEntry {
    /// The host event it is registered under (for Kimi, its `event` field).
    pub host_event: String,
    pub command: String,
    /// The binary the command runs, as written.
    pub binary: String,
    /// The `--snapshot` key, if the command names one.
    pub snapshot_key: Option<String>,
    /// In the host's own unit.
    pub timeout: Option<u64>,
    /// It carries the host's fail-closed switch (`onFailure: "block"`).
    pub fail_closed: bool,
}

// ------------------------------------------------------------------ locations

/// The hosts `install` can wire (a settings file or a plugin file to write
/// into), sorted by name: every adapter but those that run keryx-hooks
/// themselves.
pub fn wirable_hosts() -> Vec<&'static Adapter> {
    crate::hosts::all()
        .filter(|a| wiring::format(a).is_some())
        .collect()
}

/// Every file `host` may read its hooks from at `scope`, in the adapter's
/// order (Kimi has two CLIs, each with its own file). Empty for a host with
/// nothing to install into, or no project-scope file.
pub fn config_files(host: &Adapter, scope: Scope, loc: &Locations) -> Vec<PathBuf> {
    let files = host.config_files();
    if wiring::format(host).is_none() {
        return Vec::new();
    }
    match scope {
        Scope::User => files
            .user
            .iter()
            .map(|p| user_path(files, p, loc))
            .collect(),
        Scope::Project => {
            let root = loc.project_root_or_cwd();
            files.project.iter().map(|p| root.join(p)).collect()
        }
    }
}

/// A user path of an adapter (`~/.codex/config.toml`) on this machine: its
/// `homeEnv` prefix replaced by that variable's directory when it is set
/// (and absolute), else `~` by the home.
pub(crate) fn user_path(files: &ConfigFiles, p: &str, loc: &Locations) -> PathBuf {
    let relocated = files.home_env.as_ref().and_then(|h| {
        let rest = p.strip_prefix(h.replaces)?;
        let base = crate::env_vars::get(h.var).filter(|b| Path::new(b).is_absolute())?;
        Some(PathBuf::from(format!("{base}{rest}")))
    });
    relocated.unwrap_or_else(|| match p.strip_prefix("~/") {
        Some(rest) => loc.home.join(rest),
        None => PathBuf::from(p),
    })
}

/// The directory whose presence shows `host` is set up for this user: the
/// top directory of its first user config path (`~/.claude`,
/// `~/.kimi-code`), one deeper under `~/.config`, which many programs
/// share (`~/.config/opencode`), moved by the adapter's `homeEnv` as its
/// files are (`$CODEX_HOME`, `$XDG_CONFIG_HOME/opencode`). `None` for a
/// host with no user config file in a directory of its own.
pub fn host_dir(host: &Adapter, loc: &Locations) -> Option<PathBuf> {
    // A host that runs keryx-hooks itself has nothing set up to find.
    wiring::format(host)?;
    let files = host.config_files();
    let rest = files.user.first()?.strip_prefix("~/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    let depth = if parts[0] == ".config" { 2 } else { 1 };
    // The file itself is never the directory.
    if parts.len() <= depth {
        return None;
    }
    Some(user_path(
        files,
        &format!("~/{}", parts[..depth].join("/")),
        loc,
    ))
}

/// The hosts set up for this user, sorted by name: those whose
/// [`host_dir`] exists.
pub fn detected_hosts(loc: &Locations) -> Vec<&'static Adapter> {
    wirable_hosts()
        .into_iter()
        .filter(|h| host_dir(h, loc).is_some_and(|d| d.is_dir()))
        .collect()
}

/// The file `host` reads at `scope`: the first candidate whose directory
/// exists (the host is set up there), else the first.
pub fn config_file(host: &Adapter, scope: Scope, loc: &Locations) -> Option<PathBuf> {
    let all = config_files(host, scope, loc);
    all.iter()
        .find(|p| p.parent().is_some_and(Path::is_dir))
        .or(all.first())
        .cloned()
}

/// The files `install` writes: every candidate whose directory exists, or
/// the first when none does.
/// A host whose plugin file is loaded from every candidate directory
/// (OpenCode) gets exactly one: [`config_file`].
pub fn install_targets(host: &Adapter, scope: Scope, loc: &Locations) -> Vec<PathBuf> {
    if is_plugin_file_host(host) {
        return config_file(host, scope, loc).into_iter().collect();
    }
    let all = config_files(host, scope, loc);
    let present: Vec<PathBuf> = all
        .iter()
        .filter(|p| p.parent().is_some_and(Path::is_dir))
        .cloned()
        .collect();
    if present.is_empty() {
        all.into_iter().take(1).collect()
    } else {
        present
    }
}

/// Whether `host` is wired through a plugin file that only we write
/// (OpenCode) rather than entries merged into a settings file.
pub fn is_plugin_file_host(host: &Adapter) -> bool {
    matches!(wiring::format(host), Some(Format::PluginFile))
}

// ------------------------------------------------------------------ editors

fn current_exe() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok())
}

/// The binary hosts are wired to run: this one, by its canonical path.
pub fn shim_binary() -> Result<PathBuf, HostFileError> {
    current_exe().ok_or(HostFileError::NoBinary)
}

/// The editor for one host's file format.
struct Editor<'a> {
    host: &'a Adapter,
    format: Format,
    current: Option<PathBuf>,
}

impl<'a> Editor<'a> {
    fn new(host: &'a Adapter) -> Result<Editor<'a>, HostFileError> {
        let format = wiring::format(host).ok_or(HostFileError::RunsItself {
            host: host.display_name(),
        })?;
        Editor::with_format(host, format)
    }

    fn with_format(host: &'a Adapter, format: Format) -> Result<Editor<'a>, HostFileError> {
        if matches!(format, Format::PluginFile) {
            return Err(HostFileError::PluginFileHost {
                host: host.display_name(),
            });
        }
        Ok(Editor {
            host,
            format,
            current: current_exe(),
        })
    }

    fn ours(&self, command: &str) -> bool {
        wiring::is_ours(command, self.host.name(), self.current.as_deref())
    }

    fn install(&self, text: &str, wanted: &[Desired]) -> Result<String, HostFileError> {
        let ours = |c: &str| self.ours(c);
        let entries: Vec<json::Entry> = wanted
            .iter()
            .map(|d| json::Entry {
                key: d.host_event.clone(),
                item: wiring::entry(self.host, d),
            })
            .collect();
        match self.format {
            Format::Json(shape) => json::install(text, &shape, &entries, &ours),
            Format::Toml(shape) => toml::install(text, shape, &entries, &ours),
            Format::PluginFile => Err(HostFileError::PluginFileEdit),
        }
    }

    fn uninstall(&self, text: &str) -> Result<String, HostFileError> {
        let ours = |c: &str| self.ours(c);
        match self.format {
            Format::Json(shape) => json::uninstall(text, &shape, &ours),
            Format::Toml(shape) => toml::uninstall(text, shape, &ours),
            Format::PluginFile => Err(HostFileError::PluginFileEdit),
        }
    }

    fn find(&self, text: &str) -> Result<Vec<WiredEntry>, HostFileError> {
        let ours = |c: &str| self.ours(c);
        let found = match self.format {
            Format::Json(shape) => json::find(text, &shape, &ours)?,
            Format::Toml(shape) => toml::find(text, shape, &ours)?,
            Format::PluginFile => return Err(HostFileError::PluginFileEdit),
        };
        Ok(found
            .into_iter()
            .map(|f| {
                let parsed = parse_shim_command(&f.command, self.current.as_deref());
                WiredEntry {
                    host_event: f.key,
                    binary: parsed
                        .as_ref()
                        .map(|p| p.binary.clone())
                        .unwrap_or_default(),
                    snapshot_key: parsed.and_then(|p| p.installed_key()),
                    fail_closed: wiring::carries_switch(self.host, &f.handler),
                    command: f.command,
                    timeout: f.timeout,
                }
            })
            .collect())
    }

    /// What uninstall leaves of `base` after an install into it: when the
    /// current file comes down to the same, ours were the only change since.
    fn residue(&self, base: &str, found: &[WiredEntry]) -> Option<String> {
        let installed = self.install(base, &desired_like(found)).ok()?;
        self.uninstall(&installed).ok()
    }
}

/// Our entries in `config_file` (nothing when the file does not exist). For
/// a plugin-file host, the entries the generated plugin file declares.
pub fn wired_events(host: &Adapter, config_file: &Path) -> Result<Vec<WiredEntry>, HostFileError> {
    if is_plugin_file_host(host) {
        return super::plugin::wired_events(host, config_file);
    }
    let ed = Editor::new(host)?;
    let real = file::resolve(config_file)?;
    if let Some(text) = file::read(&real)?
        && let Some(e) = unloadable(host, &text)
    {
        return Err(HostFileError::In {
            path: config_file.to_path_buf(),
            error: Box::new(e),
        });
    }
    entries_in(&ed, config_file)
}

/// Why `host` would not load its settings file `path` as it is now, if it
/// would not (`None` too when the file cannot be read at all).
pub fn load_problem(host: &Adapter, path: &Path) -> Option<String> {
    let text = file::read(&file::resolve(path).ok()?).ok()??;
    unloadable(host, &text).map(|e| e.to_string())
}

/// Why `host` would not load a settings file holding `text`, read as that
/// host reads it: a file it skips is broken, not wired, and not edited.
fn unloadable(host: &Adapter, text: &str) -> Option<HostFileError> {
    let files = host.config_files();
    crate::hosts::loads::load_error(files.format, files.reads, text).map(|why| {
        HostFileError::HostWouldNotLoad {
            host: host.display_name(),
            why,
        }
    })
}

/// Our entries in a `{"hooks": {...}}` file in Claude Code's nested layout
/// (a plugin's or extension's `hooks/hooks.json`), for `host`'s commands.
pub fn wired_in_hooks_json(host: &Adapter, file: &Path) -> Result<Vec<WiredEntry>, HostFileError> {
    let ed = Editor::with_format(host, Format::Json(wiring::NESTED_JSON))?;
    entries_in(&ed, file)
}

/// `{"hooks": {...}}` holding exactly `wanted`, in Claude Code's nested
/// layout with `host`'s entry shape, pretty-printed; the text a plugin's
/// `hooks/hooks.json` is built from.
pub fn render_hooks_json(host: &Adapter, wanted: &[Desired]) -> Result<String, HostFileError> {
    let ed = Editor::with_format(host, Format::Json(wiring::NESTED_JSON))?;
    ed.install("", wanted)
}

fn entries_in(ed: &Editor<'_>, config_file: &Path) -> Result<Vec<WiredEntry>, HostFileError> {
    let real = file::resolve(config_file)?;
    match file::read(&real)? {
        None => Ok(Vec::new()),
        Some(text) => ed.find(&text).map_err(|e| HostFileError::In {
            path: config_file.to_path_buf(),
            error: Box::new(e),
        }),
    }
}

/// `text` without our entries for `host`, laid out as `format`.
pub fn strip_wiring(host: &Adapter, format: Format, text: &str) -> Result<String, HostFileError> {
    Editor::with_format(host, format)?.uninstall(text)
}

/// `base` wired exactly as `like` is: our entries in `like` put into
/// `base` (or, when `like` has none, `base` without ours).
pub fn rewire_like(
    host: &Adapter,
    format: Format,
    base: &str,
    like: &str,
) -> Result<String, HostFileError> {
    let ed = Editor::with_format(host, format)?;
    let found = ed.find(like)?;
    if found.is_empty() {
        return ed.uninstall(base);
    }
    ed.install(base, &desired_like(&found))
}

/// The entries that install `found` again, as they are.
fn desired_like(found: &[WiredEntry]) -> Vec<Desired> {
    found
        .iter()
        .map(|f| Desired {
            host_event: f.host_event.clone(),
            command: f.command.clone(),
            timeout: f.timeout.unwrap_or(1),
            fail_closed: f.fail_closed,
        })
        .collect()
}

// ------------------------------------------------------------------ changes

/// What happened (or, in a dry run, would happen) to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Unchanged,
    Created,
    Updated,
    /// Uninstall put back the exact bytes from before the first install.
    Restored,
    /// Uninstall removed a file that only we had created.
    Removed,
}

/// One file's outcome.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileReport {
    pub path: PathBuf,
    pub change: Change,
    /// A unified diff of the change (empty when unchanged).
    pub diff: String,
    /// The one-time backup of the original, when one exists afterwards.
    pub backup: Option<PathBuf>,
    /// Our entries after the change.
    pub entries: Vec<WiredEntry>,
    /// Our entries the change took out.
    pub removed: Vec<WiredEntry>,
}

impl FileReport {
    /// The report of a file left as it was, before anything is known.
    pub fn unchanged(path: &Path) -> FileReport {
        FileReport {
            path: path.to_path_buf(),
            change: Change::Unchanged,
            diff: String::new(),
            backup: None,
            entries: Vec::new(),
            removed: Vec::new(),
        }
    }
}

/// An error in the text of `path` (which never names the file), as the
/// refusal to edit it.
fn prefixed(path: &Path, e: HostFileError) -> HostFileError {
    HostFileError::Edit {
        path: path.to_path_buf(),
        error: Box::new(e),
    }
}

/// Reads `path` under its directory's lock and hands the text to `f`.
fn locked<T>(
    path: &Path,
    create_dir: bool,
    f: impl FnOnce(&Path, Option<String>) -> Result<T, HostFileError>,
) -> Result<T, HostFileError> {
    let real = file::resolve(path)?;
    let lock = file::lock_parent(&real, create_dir)?;
    if lock.is_some() {
        // What a killed write of this file (or of its backup) left behind.
        file::remove_leftovers(&real);
        file::remove_leftovers(&file::backup_path(&real));
    }
    let before = file::read(&real)?;
    let result = f(&real, before);
    drop(lock);
    result
}

/// Wires `wanted` into `path`: our entries added or updated in place, stale
/// ones of ours removed, nothing else touched.
pub fn install(
    host: &Adapter,
    path: &Path,
    wanted: &[Desired],
    dry_run: bool,
) -> Result<FileReport, HostFileError> {
    if is_plugin_file_host(host) {
        return super::plugin::install(host, path, wanted, dry_run);
    }
    let ed = Editor::new(host)?;
    locked(path, !dry_run, |real, before| {
        // Wiring a file the host skips would look wired and run nothing.
        if let Some(e) = before.as_deref().and_then(|b| unloadable(host, b)) {
            return Err(prefixed(path, e));
        }
        let base = before.as_deref().unwrap_or("");
        let after = ed.install(base, wanted).map_err(|e| prefixed(path, e))?;
        let entries = ed.find(&after).map_err(|e| prefixed(path, e))?;
        let backup_file = file::backup_path(real);
        let mut report = FileReport {
            entries,
            ..FileReport::unchanged(path)
        };
        if before.as_deref() != Some(after.as_str()) {
            report.change = if before.is_some() {
                Change::Updated
            } else {
                Change::Created
            };
            report.diff =
                diff::unified(&path.display().to_string(), before.as_deref(), Some(&after));
            if !dry_run {
                let mode = file::mode(real).unwrap_or(file::NEW_FILE_MODE);
                if let Some(original) = &before
                    && std::fs::symlink_metadata(&backup_file).is_err()
                {
                    file::write_atomic(&backup_file, original, mode)?;
                }
                file::write_atomic(real, &after, mode)?;
            }
        }
        if std::fs::symlink_metadata(&backup_file).is_ok() {
            report.backup = Some(backup_file);
        }
        Ok(report)
    })
}

/// Takes our entries out of `path`. When they were the only change since
/// the first install, the original bytes come back exactly (from the backup,
/// or by removing a file we created).
pub fn uninstall(host: &Adapter, path: &Path, dry_run: bool) -> Result<FileReport, HostFileError> {
    if is_plugin_file_host(host) {
        return super::plugin::uninstall(host, path, dry_run);
    }
    let ed = Editor::new(host)?;
    locked(path, false, |real, before| {
        let backup_file = file::backup_path(real);
        let mut report = FileReport::unchanged(path);
        let Some(before) = before else {
            return Ok(report);
        };
        let stripped = ed.uninstall(&before).map_err(|e| prefixed(path, e))?;
        if stripped == before {
            report.backup = std::fs::symlink_metadata(&backup_file)
                .ok()
                .map(|_| backup_file);
            return Ok(report);
        }
        report.removed = ed.find(&before).map_err(|e| prefixed(path, e))?;
        let backup = file::read(&backup_file).ok().flatten();
        let restore = backup.filter(|b| {
            ed.find(b).is_ok_and(|f| f.is_empty())
                && ed.residue(b, &report.removed).as_deref() == Some(stripped.as_str())
        });
        let after: Option<String> = match restore {
            Some(original) => {
                report.change = Change::Restored;
                Some(original)
            }
            None if std::fs::symlink_metadata(&backup_file).is_err()
                && ed.residue("", &report.removed).as_deref() == Some(stripped.as_str()) =>
            {
                report.change = Change::Removed;
                None
            }
            None => {
                report.change = Change::Updated;
                Some(stripped)
            }
        };
        report.diff = diff::unified(&path.display().to_string(), Some(&before), after.as_deref());
        if !dry_run {
            match &after {
                Some(text) => {
                    let mode = file::mode(real).unwrap_or(file::NEW_FILE_MODE);
                    file::write_atomic(real, text, mode)?;
                }
                None => file::remove(real)?,
            }
            // The backup has served its purpose once the original is back.
            if report.change == Change::Restored {
                let _ = file::remove(&backup_file);
            }
        }
        if std::fs::symlink_metadata(&backup_file).is_ok() {
            report.backup = Some(backup_file);
        }
        Ok(report)
    })
}

// ------------------------------------------------------------------ hosts

/// The registrations the host timeouts must cover: the built-ins, the hook
/// source's `hooks.json` (what the snapshot will hold) and the hooks of the
/// project here, at either scope: a user-scope wiring runs in this project
/// too. (Another project's hooks get what the wiring gives; the shim
/// answers within it.) Errors are the loader's diagnostics.
pub fn budget_registrations(
    source: &Path,
    loc: &Locations,
) -> Result<Vec<Registration>, Vec<String>> {
    let sources = load::Sources {
        user_file: source.join("hooks.json"),
        project_file: loc.project_hooks_file(),
        project_root: loc.project_root.clone(),
        cache_dir: Some(loc.config_cache_dir()),
    };
    loaded_registrations(&sources)
}

/// [`budget_registrations`] at project scope for the project at
/// `project_root` (a recorded wiring, wherever this runs from).
pub fn budget_registrations_in(
    source: &Path,
    project_root: &Path,
    loc: &Locations,
) -> Result<Vec<Registration>, Vec<String>> {
    let here = Locations::resolve(project_root);
    let sources = load::Sources {
        user_file: source.join("hooks.json"),
        project_file: here.project_hooks_file(),
        project_root: here.project_root.clone(),
        cache_dir: Some(loc.config_cache_dir()),
    };
    loaded_registrations(&sources)
}

fn loaded_registrations(sources: &load::Sources) -> Result<Vec<Registration>, Vec<String>> {
    let loaded = load::load(sources);
    if loaded.ok() {
        Ok(loaded.registrations)
    } else {
        Err(loaded.errors().map(|d| d.to_string()).collect())
    }
}

/// Wires every event of `host` to snapshot `key` in each file the host
/// reads at `scope` (see [`install_targets`]), with timeouts covering
/// `regs`. At project scope a file (or its directory) that resolves outside
/// the project is refused before anything is written. One result per file; an empty list means the host has no file
/// at that scope.
pub fn wire_host(
    host: &Adapter,
    scope: Scope,
    loc: &Locations,
    key: &str,
    regs: &[Registration],
    dry_run: bool,
) -> Result<Vec<FileReport>, HostFileError> {
    let binary = shim_binary()?;
    let fail_closed = super::fail_closed::verdict(host, &loc.home).writes();
    let wanted = desired(host, &binary, &loc.snapshot_dir(key), regs, fail_closed);
    let targets = install_targets(host, scope, loc);
    if scope == Scope::Project {
        let root = loc.project_root_or_cwd();
        for path in &targets {
            file::refuse_outside(path, root)?;
        }
    }
    targets
        .iter()
        .map(|path| install(host, path, &wanted, dry_run))
        .collect()
}

/// Takes our entries out of every file `host` reads at `scope`.
pub fn unwire_host(
    host: &Adapter,
    scope: Scope,
    loc: &Locations,
    dry_run: bool,
) -> Result<Vec<FileReport>, HostFileError> {
    config_files(host, scope, loc)
        .iter()
        .map(|path| uninstall(host, path, dry_run))
        .collect()
}

/// Our entries per (host, file).
pub type Wired = Vec<(&'static str, PathBuf, Vec<WiredEntry>)>;

/// Every (host, file, entries) of ours reachable from here: user files and
/// this project's, for every host with a config file. `Err` names a file
/// that could not be read, so a caller deciding what is still referenced
/// can keep everything rather than guess.
pub fn all_wired(loc: &Locations) -> Result<Wired, HostFileError> {
    let mut out = Vec::new();
    for name in crate::hosts::host_names() {
        let Some(host) = crate::hosts::adapter(name) else {
            continue;
        };
        for scope in [Scope::User, Scope::Project] {
            for path in config_files(host, scope, loc) {
                let entries = wired_events(host, &path)?;
                if !entries.is_empty() {
                    out.push((*name, path, entries));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn wanted(host: &Adapter) -> Vec<Desired> {
        let regs = crate::builtins::registrations();
        desired(
            host,
            Path::new("/opt/bin/keryx-hooks"),
            Path::new("/s/keryx-0123456789ab"),
            &regs,
            true,
        )
    }

    #[test]
    fn install_backup_restore_cycle_per_host() {
        let seeds = [
            (
                "claude-code",
                "{\n  \"model\": \"opus\",\n  \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]}\n}\n",
            ),
            (
                "gemini-cli",
                "{\n  // mine\n  \"hooks\": {}, \"ui\": {\"theme\": \"dark\"}}",
            ),
            (
                "cursor",
                "{\n  \"version\": 1,\n  \"hooks\": {\n    \"stop\": [\n      { \"command\": \"./audit.sh\" }\n    ]\n  }\n}\n",
            ),
            ("copilot", ""),
            (
                "codex",
                "model = \"o3\"\nmcp_servers = { a = { command = \"x\" } }\n",
            ),
            (
                "kimi",
                "[[hooks]]\nevent = \"Stop\"\ncommand = \"notify\"\n",
            ),
        ];
        for (name, seed) in seeds {
            let host = crate::hosts::adapter(name).unwrap();
            let tmp = tempfile::tempdir().unwrap();
            let path = tmp.path().join("conf").join("file");
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, seed).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
            let w = wanted(host);

            let r = install(host, &path, &w, true).unwrap();
            assert_eq!(r.change, Change::Updated, "{name}");
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                seed,
                "{name}: dry run wrote"
            );

            let r = install(host, &path, &w, false).unwrap();
            assert_eq!(r.entries.len(), w.len(), "{name}");
            let once = std::fs::read(&path).unwrap();
            assert_eq!(
                std::fs::read_to_string(r.backup.unwrap()).unwrap(),
                seed,
                "{name}"
            );
            assert_eq!(file::mode(&path), Some(0o640), "{name}");
            let r = install(host, &path, &w, false).unwrap();
            assert_eq!(r.change, Change::Unchanged, "{name}");
            assert_eq!(std::fs::read(&path).unwrap(), once, "{name}");

            let found = wired_events(host, &path).unwrap();
            assert_eq!(found.len(), w.len(), "{name}");
            assert!(
                found
                    .iter()
                    .all(|f| f.snapshot_key.as_deref() == Some("keryx-0123456789ab"))
            );

            let r = uninstall(host, &path, false).unwrap();
            assert_eq!(r.change, Change::Restored, "{name}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), seed, "{name}");
            assert!(r.backup.is_none(), "{name}: backup left");
            assert_eq!(
                uninstall(host, &path, false).unwrap().change,
                Change::Unchanged
            );
        }
    }

    #[test]
    fn created_files_go_away_and_user_edits_stay() {
        let host = crate::hosts::adapter("claude-code").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(".claude/settings.json");
        let r = install(host, &path, &wanted(host), false).unwrap();
        assert_eq!(r.change, Change::Created);
        assert!(r.backup.is_none());
        assert_eq!(
            uninstall(host, &path, false).unwrap().change,
            Change::Removed
        );
        assert!(!path.exists());

        install(host, &path, &wanted(host), false).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen('{', "{\n  \"model\": \"opus\",", 1)).unwrap();
        let r = uninstall(host, &path, false).unwrap();
        assert_eq!(r.change, Change::Updated);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v, serde_json::json!({"model": "opus"}));
    }

    #[test]
    fn refusals_write_nothing() {
        let host = crate::hosts::adapter("claude-code").unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let bad = tmp.path().join("bad.json");
        std::fs::write(&bad, "{\"hooks\": {\"Stop\": [}").unwrap();
        let e = install(host, &bad, &wanted(host), false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 1") && e.contains("nothing was written"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(&bad).unwrap(),
            "{\"hooks\": {\"Stop\": [}"
        );
        assert!(!file::backup_path(&bad).exists());

        let latin1 = tmp.path().join("latin1.json");
        std::fs::write(&latin1, b"{\"a\": \"caf\xe9\"}").unwrap();
        assert!(
            install(host, &latin1, &wanted(host), false)
                .unwrap_err()
                .to_string()
                .contains("UTF-8")
        );

        let dead = tmp.path().join("dead.json");
        std::os::unix::fs::symlink(tmp.path().join("nowhere.json"), &dead).unwrap();
        assert!(
            install(host, &dead, &wanted(host), false)
                .unwrap_err()
                .to_string()
                .contains("does not exist")
        );
        assert!(
            std::fs::symlink_metadata(&dead)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            uninstall(host, &tmp.path().join("none.json"), false)
                .unwrap()
                .change,
            Change::Unchanged
        );
    }

    #[test]
    fn locations() {
        let tmp = tempfile::tempdir().unwrap();
        let mut loc = Locations::resolve(tmp.path());
        loc.home = tmp.path().join("home");
        loc.project_root = Some(tmp.path().join("proj"));
        let claude = crate::hosts::adapter("claude-code").unwrap();
        assert_eq!(
            config_file(claude, Scope::User, &loc),
            Some(loc.home.join(".claude/settings.json"))
        );
        assert_eq!(
            config_file(claude, Scope::Project, &loc),
            Some(tmp.path().join("proj/.claude/settings.json"))
        );
        let kimi = crate::hosts::adapter("kimi").unwrap();
        assert_eq!(config_file(kimi, Scope::Project, &loc), None);
        assert_eq!(
            install_targets(kimi, Scope::User, &loc),
            vec![loc.home.join(".kimi-code/config.toml")]
        );
        // Kimi Code reads only ~/.kimi-code; ~/.kimi is the legacy CLI's.
        std::fs::create_dir_all(loc.home.join(".kimi")).unwrap();
        assert_eq!(
            install_targets(kimi, Scope::User, &loc),
            vec![loc.home.join(".kimi-code/config.toml")]
        );
        assert!(
            config_files(crate::hosts::adapter("keryx").unwrap(), Scope::User, &loc).is_empty()
        );
    }

    /// The directory that shows a host is set up is the top of its user
    /// path, one deeper under `~/.config`. (Those moved by a `homeEnv`
    /// variable are checked by the integration tests, which set it.)
    #[test]
    fn a_hosts_own_directory_is_the_top_of_its_user_path() {
        let tmp = tempfile::tempdir().unwrap();
        let mut loc = Locations::resolve(tmp.path());
        loc.home = tmp.path().join("home");
        let dir = |name: &str| host_dir(crate::hosts::adapter(name).unwrap(), &loc);
        for (name, want) in [
            ("claude-code", ".claude"),
            ("cursor", ".cursor"),
            ("gemini-cli", ".gemini"),
            ("qwen-code", ".qwen"),
        ] {
            assert_eq!(dir(name), Some(loc.home.join(want)), "{name}");
        }
        assert_eq!(dir("keryx"), None);
        let found = || -> Vec<&str> { detected_hosts(&loc).iter().map(|h| h.name()).collect() };
        assert!(!found().contains(&"claude-code"));
        std::fs::create_dir_all(loc.home.join(".qwen")).unwrap();
        std::fs::create_dir_all(loc.home.join(".claude")).unwrap();
        let found = found();
        assert!(found.contains(&"claude-code") && found.contains(&"qwen-code"));
        assert!(!found.contains(&"cursor") && !found.contains(&"gemini-cli"));
    }
}
