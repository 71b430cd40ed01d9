//! What `import` took out of a host file and how to put it back: the
//! record of each step, the backups, and the undo that `import --undo` and
//! `uninstall` share.

use crate::settings::Here;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::escape::escape;
use crate::hosts::Adapter;
use crate::install::hostfile::{self, HostFileError, Scope, file};
use crate::install::import::{self, Outcome, Planned};
use crate::output;

use super::hooks_file::*;

/// Scripts larger than this are not read for the grant detection.
pub(crate) const MAX_SCRIPT_BYTES: u64 = 256 * 1024;

/// The text of a script a command names, when it is a readable local file.
pub(crate) fn read_script(word: &str, loc: &Here, root: Option<&Path>) -> Option<String> {
    let project = root.unwrap_or(&loc.cwd);
    let path = if let Some(rest) = word
        .strip_prefix("~/")
        .or_else(|| word.strip_prefix("$HOME/"))
        .or_else(|| word.strip_prefix("${HOME}/"))
    {
        loc.home.join(rest)
    } else if let Some((_, rest)) = word.split_once("_PROJECT_DIR}/") {
        project.join(rest)
    } else if let Some((_, rest)) = word.split_once("_PROJECT_DIR/") {
        project.join(rest)
    } else if let Some(rest) = word.strip_prefix("./") {
        project.join(rest)
    } else if !word.starts_with('/') {
        project.join(word)
    } else {
        PathBuf::from(word)
    };
    // Never a credential store, whatever a command names.
    if crate::paths::HOME_SECRETS
        .iter()
        .any(|secret| crate::paths::is_inside(&path, &loc.home.join(secret)))
    {
        return None;
    }
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SCRIPT_BYTES {
        return None;
    }
    String::from_utf8(std::fs::read(&path).ok()?).ok()
}

/// What `import` remembers of one host file it edited, to undo it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Record {
    pub host: String,
    pub scope: String,
    pub file: PathBuf,
    /// The hooks file the registrations went to.
    pub hooks_file: PathBuf,
    /// One per import that changed the file, oldest first; undone newest first.
    pub steps: Vec<Step>,
}

/// One import's change to a host file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Step {
    /// The host file before this import.
    pub before: String,
    /// The host file as this import left it.
    pub after: String,
    /// The registrations this import took from it.
    pub ids: Vec<String>,
}

/// How many of `host`'s own hooks at `scope` `import` would move (for
/// `install`'s note).
pub(crate) fn importable(loc: &Here, host: &Adapter, scope: Scope) -> usize {
    if !import::reads(host) {
        return 0;
    }
    let root = loc.project_root.clone();
    let read = |w: &str| read_script(w, loc, root.as_deref());
    import::source_files(host, scope, loc)
        .iter()
        .filter_map(|src| {
            let text = file::resolve(&src.path)
                .and_then(|r| file::read(&r))
                .ok()??;
            let listed = import::list(&text, src.format).ok()?;
            Some(
                import::plan_file(host, scope, src, &listed, &read, false)
                    .iter()
                    .filter(|p| matches!(p.outcome, Outcome::Import(_)))
                    .count(),
            )
        })
        .sum()
}

pub(crate) fn record_path(loc: &Here, real: &Path) -> PathBuf {
    let hash = Sha256::digest(real.as_os_str().as_encoded_bytes());
    loc.state_dir
        .join("imports")
        .join(format!("{}.json", crate::base::text::hex(&hash[..8])))
}

/// Where the host file's bytes from before its first import are kept: in
/// the state directory beside its record, never in the repository (where
/// an auto-commit would pick it up).
pub(crate) fn backup_path(loc: &Here, real: &Path) -> PathBuf {
    record_path(loc, real).with_extension("bak")
}

/// `<file>.keryx-import.bak` beside the host file, where earlier versions
/// kept the backup; removed with the record.
fn legacy_backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".keryx-import.bak");
    path.with_file_name(name)
}

pub(crate) fn read_record(path: &Path) -> Option<Record> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

pub(crate) fn write_record(path: &Path, r: &Record) -> Result<(), HostFileError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(HostFileError::RecordDir)?;
    }
    let text = serde_json::to_string_pretty(r).expect("a record serializes");
    file::write_atomic(path, &text, 0o600)
}

/// Takes the picked handlers out of one host file, keeping its bytes from
/// before in a backup and a record. Whether the file changed.
pub(crate) fn take_out(
    loc: &Here,
    host: &Adapter,
    scope: Scope,
    src: &import::SourceFile,
    picked: &[&Planned],
    hooks_file: &Path,
) -> Result<bool, HostFileError> {
    let real = file::resolve(&src.path)?;
    let _lock = file::lock_parent(&real, false)?;
    let Some(before) = file::read(&real)? else {
        return Ok(false);
    };
    let pairs: BTreeSet<(String, String)> = picked
        .iter()
        .filter_map(|p| Some((p.host_event.clone(), p.command.clone()?)))
        .collect();
    let pick = |key: &str, c: &str| pairs.contains(&(key.to_owned(), c.to_owned()));
    let after =
        import::remove(&before, src.format, &pick).map_err(|e| HostFileError::NotTakenOut {
            path: src.path.clone(),
            error: Box::new(e),
        })?;
    let ids: Vec<String> = picked
        .iter()
        .filter_map(|p| match &p.outcome {
            Outcome::Import(i) => Some(i.id.clone()),
            Outcome::Leave { .. } => None,
        })
        .collect();
    if after == before {
        return Ok(false);
    }
    let rec_path = record_path(loc, &real);
    let mut record = read_record(&rec_path)
        .filter(|r| r.host == host.name() && !r.steps.is_empty())
        .unwrap_or(Record {
            host: host.name().to_owned(),
            scope: scope.as_str().to_owned(),
            file: src.path.clone(),
            hooks_file: hooks_file.to_path_buf(),
            steps: Vec::new(),
        });
    record.steps.push(Step {
        before: before.clone(),
        after: after.clone(),
        ids,
    });
    // The backup is the file before the first import, written once.
    let backup = backup_path(loc, &real);
    let mode = file::mode(&real).unwrap_or(file::NEW_FILE_MODE);
    if std::fs::symlink_metadata(&backup).is_err() {
        if let Some(dir) = backup.parent() {
            std::fs::create_dir_all(dir).map_err(HostFileError::RecordDir)?;
        }
        file::write_atomic(&backup, &record.steps[0].before, 0o600)?;
    }
    write_record(&rec_path, &record)?;
    file::write_atomic(&real, &after, mode)?;
    Ok(true)
}

/// Every import record for `host` at `scope` whose registrations went to
/// `hooks_file`.
pub(crate) fn records_for(
    loc: &Here,
    host: &Adapter,
    scope: Scope,
    hooks_file: &Path,
) -> Vec<(PathBuf, Record)> {
    let dir = loc.state_dir.join("imports");
    let mut out: Vec<(PathBuf, Record)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| read_record(&p).map(|r| (p, r)))
        .filter(|(_, r)| {
            r.host == host.name() && r.scope == scope.as_str() && r.hooks_file == hooks_file
        })
        .collect();
    out.sort_by(|a, b| a.1.file.cmp(&b.1.file));
    out
}

/// What undoing one record did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Undone {
    pub host: String,
    pub file: PathBuf,
    pub restored: bool,
    pub removed_ids: Vec<String>,
    pub error: Option<String>,
}

/// Puts back every host file an import of `host` at `scope` edited and
/// removes the registrations it added. A file changed since only by
/// keryx-hooks' own wiring gets its old bytes back with that wiring kept;
/// one changed otherwise is left alone, with the error saying where its
/// old bytes are.
pub(crate) fn undo(
    loc: &Here,
    host: &Adapter,
    scope: Scope,
    hooks_file: &Path,
    dry_run: bool,
) -> Vec<Undone> {
    let mut out = Vec::new();
    for (rec_path, mut r) in records_for(loc, host, scope, hooks_file) {
        let mut u = Undone {
            host: host.name().to_owned(),
            file: r.file.clone(),
            restored: false,
            removed_ids: Vec::new(),
            error: None,
        };
        // Newest first: each step's `after` is what the next one undoes from.
        let mut dry_current: Option<String> = None;
        while let Some(step) = r.steps.last().cloned() {
            match restore_step(loc, host, &r.file, &step, dry_run, &mut dry_current) {
                Ok(()) => {
                    if !dry_run
                        && let Err(e) = remove_registrations(loc, scope, hooks_file, &step.ids)
                    {
                        u.error = Some(e.to_string());
                        break;
                    }
                    u.removed_ids.extend(step.ids.iter().cloned());
                    r.steps.pop();
                }
                Err(e) => {
                    u.error = Some(e.to_string());
                    break;
                }
            }
        }
        u.restored = r.steps.is_empty();
        if !dry_run {
            if r.steps.is_empty() {
                let _ = std::fs::remove_file(&rec_path);
                if let Ok(real) = file::resolve(&r.file) {
                    let _ = file::remove(&backup_path(loc, &real));
                    let _ = file::remove(&legacy_backup_path(&real));
                }
            } else if let Err(e) = write_record(&rec_path, &r) {
                u.error.get_or_insert(e.to_string());
            }
        }
        out.push(u);
    }
    out
}

/// Undoes one step on the host file (in a dry run, on `dry_current`, the
/// text the steps undone so far would leave).
pub(crate) fn restore_step(
    loc: &Here,
    host: &Adapter,
    path: &Path,
    r: &Step,
    dry_run: bool,
    dry_current: &mut Option<String>,
) -> Result<(), HostFileError> {
    let real = file::resolve(path)?;
    // Codex's `hooks.json` is JSON beside its TOML config.
    let format = match hostfile::wiring::format(host) {
        Some(hostfile::Format::Toml(_)) if path.extension().is_some_and(|x| x == "json") => {
            hostfile::Format::Json(hostfile::wiring::NESTED_JSON)
        }
        Some(f) => f,
        None => {
            return Err(HostFileError::NoConfigFile {
                host: host.display_name(),
            });
        }
    };
    let _lock = file::lock_parent(&real, !dry_run)?;
    let current = match dry_current.take() {
        Some(t) => t,
        None => file::read(&real)?.unwrap_or_default(),
    };
    let target = if current == r.after {
        r.before.clone()
    } else {
        // Only keryx-hooks' own wiring changed since: keep it.
        let strip = |t: &str| hostfile::strip_wiring(host, format, t);
        match (strip(&current), strip(&r.after)) {
            (Ok(a), Ok(b)) if a == b => hostfile::rewire_like(host, format, &r.before, &current)?,
            _ => {
                return Err(HostFileError::ChangedSinceImport {
                    path: path.to_path_buf(),
                    backup: backup_path(loc, &real),
                });
            }
        }
    };
    if dry_run {
        *dry_current = Some(target);
        return Ok(());
    }
    if target == current {
        return Ok(());
    }
    let mode = file::mode(&real).unwrap_or(file::NEW_FILE_MODE);
    file::write_atomic(&real, &target, mode)?;
    // An install after the import backed up the imported state; its
    // original is now the one from before the import.
    let install_backup = file::backup_path(&real);
    if file::read(&install_backup).ok().flatten().as_deref() == Some(r.after.as_str()) {
        file::write_atomic(&install_backup, &r.before, mode)?;
    }
    Ok(())
}

/// The undo lines for people, also used by `uninstall`.
pub(crate) fn print_undone(hosts: &[&'static Adapter], all: &[Undone], dry_run: bool) {
    for host in hosts {
        let mine: Vec<&Undone> = all.iter().filter(|u| u.host == host.name()).collect();
        if mine.is_empty() && !dry_run {
            output::line(&format!(
                "{}: nothing imported to undo",
                host.display_name()
            ));
        }
        for u in mine {
            let f = format!("`{}`", escape(&u.file.display().to_string()));
            match &u.error {
                Some(e) => {
                    output::err_line(&format!("error: {}: {}", host.display_name(), escape(e)))
                }
                None => output::line(&format!(
                    "{}: {} {f} as it was before the import; {} {} imported hooks",
                    host.display_name(),
                    if dry_run { "would restore" } else { "restored" },
                    if dry_run { "would remove" } else { "removed" },
                    u.removed_ids.len()
                )),
            }
        }
    }
}
