//! `keryx-hooks import <host>... [--scope user|project] [--dry-run] [--json]
//! [--undo]`: moves a host's own hook entries into keryx-hooks. Each shell
//! command hook on an event keryx has becomes a registration in
//! `$KERYX_HOME/hooks.json` (or the project's `.metaproject/hooks.json`),
//! with `/bin/sh -c <command>` as the host runs it and exactly the grants
//! its command shows it needs; then it is taken out of the host config so
//! it does not run twice. What keryx cannot run stays with the host, with
//! the reason. The host file's bytes from before are kept (a backup beside
//! it and a record in the state directory), and `--undo` (or `uninstall`)
//! puts them back and removes the imported registrations.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::cli::ImportArgs;
use crate::config::load;
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::hosts::Adapter;
use crate::install::hostfile::{self, Scope, file};
use crate::install::import::{self, Outcome, Planned, SCHEMA_URL};
use crate::install::preflight;
use crate::output;
use crate::paths::Locations;
use crate::textfile::edit::{self, Op, Seg};

/// Scripts larger than this are not read for the grant detection.
const MAX_SCRIPT_BYTES: u64 = 256 * 1024;

/// What `import` remembers of one host file it edited, to undo it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
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
pub struct Step {
    /// The host file before this import.
    pub before: String,
    /// The host file as this import left it.
    pub after: String,
    /// The registrations this import took from it.
    pub ids: Vec<String>,
}

pub fn run(args: &ImportArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let hosts = resolve_hosts(&args.hosts)?;
    let scope = super::shared::scope(args.scope);
    let hooks_file = hooks_file(&loc, scope)?;
    if args.undo {
        return undo_command(&loc, &hosts, scope, &hooks_file, args.dry_run, args.json);
    }

    let existing = existing_ids(&hooks_file)?;
    let mut plan: Vec<Planned> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let mut files: Vec<(&'static Adapter, import::SourceFile, String)> = Vec::new();
    let root = loc.project_root.clone();
    let read_script = |word: &str| read_script(word, &loc, root.as_deref());
    for host in &hosts {
        for src in import::source_files(host, scope, &loc) {
            if scope == Scope::Project
                && let Err(e) = file::refuse_outside(&src.path, loc.project_root_or_cwd())
            {
                errors.push(format!("{}: {e}", host.display_name()));
                continue;
            }
            let text = match file::resolve(&src.path).and_then(|r| file::read(&r)) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) => {
                    errors.push(format!("{}: {e}", host.display_name()));
                    continue;
                }
            };
            match import::list(&text, src.format) {
                Ok(listed) => {
                    plan.extend(import::plan_file(host, scope, &src, &listed, &read_script));
                    files.push((host, src, text));
                }
                Err(e) => errors.push(format!(
                    "{}: `{}`: {e}",
                    host.display_name(),
                    src.path.display()
                )),
            }
        }
    }

    // Each id once: the same handler twice is one registration.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut new_regs: Vec<(&'static str, Value)> = Vec::new();
    for p in &plan {
        if let Outcome::Import(i) = &p.outcome
            && seen.insert(i.id.clone())
            && !existing.contains(&i.id)
        {
            new_regs.push((i.event, i.registration.clone()));
        }
    }

    // Moved into a sandbox that cannot start here, each hook would fail
    // (a gate then denies every call): refuse before anything is written.
    let sandboxed: Vec<String> = new_regs
        .iter()
        .filter(|(_, r)| r.get("runsIn").and_then(Value::as_str) != Some("unsandboxed"))
        .filter_map(|(_, r)| r.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    if let Some(p) = preflight::sandbox_problem(&loc, &sandboxed) {
        if !args.json {
            print_plan(&plan, &hooks_file, true, new_regs.len());
        }
        return Err(CommandError::config(
            "the hooks to import need a sandbox that does not work here; nothing was moved",
        )
        .cause(p.what)
        .hint(p.fix));
    }

    let mut changed_files: Vec<PathBuf> = Vec::new();
    if !args.dry_run {
        if !new_regs.is_empty() {
            add_registrations(&loc, scope, &hooks_file, &new_regs)?;
        }
        for (host, src, _) in &files {
            let picked: Vec<&Planned> = plan
                .iter()
                .filter(|p| p.file == src.path && matches!(p.outcome, Outcome::Import(_)))
                .collect();
            if picked.is_empty() {
                continue;
            }
            match take_out(&loc, host, scope, src, &picked, &hooks_file) {
                Ok(true) => changed_files.push(src.path.clone()),
                Ok(false) => {}
                Err(e) => errors.push(format!("{}: {e}", host.display_name())),
            }
        }
    }

    let wired = hosts_wired(&loc, &hosts, scope);
    let mut notes = notes(scope, &hosts, &wired, &plan, !args.dry_run && !args.json);
    // A user hook runs from the snapshot the host is wired to: bring it up
    // to date now, or the moved hooks would run nowhere until the next install.
    let resync: Vec<String> = hosts
        .iter()
        .filter(|h| wired.iter().any(|w| w == h.name()))
        .filter(|h| {
            plan.iter()
                .any(|p| p.host == h.name() && matches!(p.outcome, Outcome::Import(_)))
        })
        .map(|h| h.name().to_owned())
        .collect();
    if args.json && scope == Scope::User && !resync.is_empty() && !new_regs.is_empty() {
        notes.push(format!(
            "the installed snapshot does not hold the imported hooks yet: `keryx-hooks install {}`",
            resync.join(" ")
        ));
    }
    if args.json {
        output::json(&json!({
            "ok": errors.is_empty(),
            "dryRun": args.dry_run,
            "scope": scope,
            "hooksFile": hooks_file,
            "hooks": plan,
            "added": new_regs.len(),
            "changedFiles": changed_files,
            "errors": errors,
            "notes": notes,
        }));
    } else {
        print_plan(&plan, &hooks_file, args.dry_run, new_regs.len());
        for e in &errors {
            output::err_line(&format!("error: {}", escape(e)));
        }
        for n in &notes {
            output::line(&format!("note: {n}"));
        }
        if args.dry_run {
            output::line("dry run: nothing was written");
        }
    }
    let mut resync_failed = false;
    if scope == Scope::User
        && !args.dry_run
        && !args.json
        && !resync.is_empty()
        && !new_regs.is_empty()
    {
        output::line("updating the snapshot the hosts read your hooks from:");
        let code = super::install::run(&crate::cli::InstallArgs {
            hosts: resync,
            scope: crate::cli::ScopeArg::User,
            format: crate::cli::FormatArg::Settings,
            out: None,
            source: None,
            dry_run: false,
            json: false,
        })?;
        resync_failed = code != ExitCode::SUCCESS;
    }
    Ok(if errors.is_empty() && !resync_failed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// How many of `host`'s own hooks at `scope` `import` would move (for
/// `install`'s note).
pub fn importable(loc: &Locations, host: &Adapter, scope: Scope) -> usize {
    if !import::HOSTS.contains(&host.name()) {
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
                import::plan_file(host, scope, src, &listed, &read)
                    .iter()
                    .filter(|p| matches!(p.outcome, Outcome::Import(_)))
                    .count(),
            )
        })
        .sum()
}

/// The hooks file `import` writes at `scope`, when there is one here.
pub fn hooks_file_at(loc: &Locations, scope: Scope) -> Option<PathBuf> {
    hooks_file(loc, scope).ok()
}

/// The adapters for `names` (names or aliases), each once; only hosts
/// `import` reads.
fn resolve_hosts(names: &[String]) -> Result<Vec<&'static Adapter>, CommandError> {
    super::resolve_hosts(names, &import::hosts(), "hosts to import from", |host| {
        format!("cannot import hooks from `{}`", host.name())
    })
}

/// Where the registrations go: `$KERYX_HOME/hooks.json`, or the project's.
fn hooks_file(loc: &Locations, scope: Scope) -> Result<PathBuf, CommandError> {
    match scope {
        Scope::User => Ok(loc.user_hooks_file()),
        Scope::Project => {
            let root = super::shared::project_root(loc)?;
            if let Some(why) = &loc.project_refusal {
                return Err(CommandError::user(
                    "refusing to edit the hooks of a project that belongs to another user",
                )
                .cause(escape(why)));
            }
            Ok(root.join(".metaproject").join("hooks.json"))
        }
    }
}

/// The text of a script a command names, when it is a readable local file.
fn read_script(word: &str, loc: &Locations, root: Option<&Path>) -> Option<String> {
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
    } else {
        PathBuf::from(word)
    };
    // Never a credential store, whatever a command names.
    if crate::runner::HOME_SECRETS
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

fn existing_ids(hooks_file: &Path) -> Result<BTreeSet<String>, CommandError> {
    let Some(doc) = read_hooks(hooks_file)? else {
        return Ok(BTreeSet::new());
    };
    Ok(doc
        .1
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|e| e.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect())
}

fn read_hooks(path: &Path) -> Result<Option<(String, Value)>, CommandError> {
    match std::fs::read(path) {
        Ok(bytes) => load::parse_config_bytes(path, &bytes)
            .map(Some)
            .map_err(|d| {
                CommandError::config(format!("`{}` does not load", path.display()))
                    .cause(d)
                    .hint("keryx-hooks validate")
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CommandError::user(format!("cannot read `{}`", path.display())).cause(e)),
    }
}

fn new_hooks_file() -> String {
    format!(
        "{{\n  \"$schema\": \"{SCHEMA_URL}\",\n  \"schemaVersion\": \"1.0.0\",\n  \"hooks\": {{}}\n}}\n"
    )
}

/// Rewrites the hooks file with `ops` applied, as text (formatting, order
/// and every other entry kept), after checking that it still loads.
fn edit_hooks(
    loc: &Locations,
    scope: Scope,
    path: &Path,
    ops: impl Fn(&Value) -> Vec<Op>,
) -> Result<(), CommandError> {
    let failed = |e: String| {
        CommandError::internal(format!(
            "could not edit `{}`; nothing was written",
            path.display()
        ))
        .cause(e)
    };
    let real = crate::paths::real_path(path);
    if let Some(dir) = real.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _lock = file::lock_parent(&real, true).map_err(failed)?;
    let (text, mut doc) = match read_hooks(&real)? {
        Some(t) => t,
        None => {
            let t = new_hooks_file();
            let v = serde_json::from_str(&t).expect("valid");
            (t, v)
        }
    };
    let mut d = edit::Doc::new(&text);
    for op in ops(&doc) {
        d.apply(&op).map_err(failed)?;
        edit::apply_value(&mut doc, &op).map_err(failed)?;
    }
    let reparsed: Value = serde_json::from_str(d.text()).map_err(|e| failed(e.to_string()))?;
    if serde_json::to_vec(&reparsed).ok() != serde_json::to_vec(&doc).ok() {
        return Err(failed(
            "the edited text does not say what was intended".into(),
        ));
    }
    if d.text() == text && real.exists() {
        return Ok(());
    }
    // The result must load as it will be read.
    let staged = real.with_file_name(format!(
        ".{}.keryx-import-check",
        real.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::write(&staged, d.text())?;
    let mut sources = crate::config::sources(loc, None);
    match scope {
        Scope::User => sources.user_file = staged.clone(),
        Scope::Project => sources.project_file = Some(staged.clone()),
    }
    let loaded = load::load(&sources);
    let _ = std::fs::remove_file(&staged);
    if let Some(e) = loaded.errors().find(|e| {
        e.to_string()
            .contains(&*staged.file_name().unwrap_or_default().to_string_lossy())
    }) {
        return Err(failed(e.to_string()));
    }
    let mode = file::mode(&real).unwrap_or(file::NEW_FILE_MODE);
    file::write_atomic(&real, d.text(), mode).map_err(failed)
}

/// Adds `regs` (event, registration) to the hooks file.
pub(crate) fn add_registrations(
    loc: &Locations,
    scope: Scope,
    path: &Path,
    regs: &[(&'static str, Value)],
) -> Result<(), CommandError> {
    edit_hooks(loc, scope, path, |doc| {
        let mut ops = Vec::new();
        let mut created: Vec<&str> = Vec::new();
        if doc.get("hooks").is_none() {
            ops.push(Op::Insert(Vec::new(), "hooks".into(), json!({})));
        }
        for (event, reg) in regs {
            let path = vec![edit::key("hooks"), edit::key(event)];
            let present = doc
                .get("hooks")
                .and_then(|h| h.get(*event))
                .is_some_and(Value::is_array)
                || created.contains(event);
            if present {
                ops.push(Op::Push(path, reg.clone()));
            } else {
                ops.push(Op::Insert(
                    vec![edit::key("hooks")],
                    (*event).to_owned(),
                    json!([reg]),
                ));
                created.push(event);
            }
        }
        ops
    })
}

/// Removes the registrations with these ids from the hooks file.
fn remove_registrations(
    loc: &Locations,
    scope: Scope,
    path: &Path,
    ids: &[String],
) -> Result<(), CommandError> {
    if !path.exists() {
        return Ok(());
    }
    edit_hooks(loc, scope, path, |doc| {
        let mut ops = Vec::new();
        for (event, entries) in doc
            .get("hooks")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let Some(list) = entries.as_array() else {
                continue;
            };
            for (i, e) in list.iter().enumerate().rev() {
                if e.get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| ids.iter().any(|x| x == id))
                {
                    ops.push(Op::Remove(vec![
                        edit::key("hooks"),
                        edit::key(event),
                        Seg::Index(i),
                    ]));
                }
            }
        }
        ops
    })
}

// ------------------------------------------------------------------ host files

fn record_path(loc: &Locations, real: &Path) -> PathBuf {
    let hash = Sha256::digest(real.as_os_str().as_encoded_bytes());
    loc.state_dir
        .join("imports")
        .join(format!("{}.json", crate::base::text::hex(&hash[..8])))
}

/// `<file>.keryx-import.bak`, beside the host file.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".keryx-import.bak");
    path.with_file_name(name)
}

fn read_record(path: &Path) -> Option<Record> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn write_record(path: &Path, r: &Record) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let text = serde_json::to_string_pretty(r).expect("a record serializes");
    file::write_atomic(path, &text, 0o600)
}

/// Takes the picked handlers out of one host file, keeping its bytes from
/// before in a backup and a record. Whether the file changed.
fn take_out(
    loc: &Locations,
    host: &Adapter,
    scope: Scope,
    src: &import::SourceFile,
    picked: &[&Planned],
    hooks_file: &Path,
) -> Result<bool, String> {
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
    let after = import::remove(&before, src.format, &pick)
        .map_err(|e| format!("`{}`: {e}; nothing was taken out", src.path.display()))?;
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
    let backup = backup_path(&real);
    let mode = file::mode(&real).unwrap_or(file::NEW_FILE_MODE);
    if std::fs::symlink_metadata(&backup).is_err() {
        file::write_atomic(&backup, &record.steps[0].before, mode)?;
    }
    write_record(&rec_path, &record)?;
    file::write_atomic(&real, &after, mode)?;
    Ok(true)
}

/// Every import record for `host` at `scope` whose registrations went to
/// `hooks_file`.
fn records_for(
    loc: &Locations,
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
pub struct Undone {
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
pub fn undo(
    loc: &Locations,
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
            match restore_step(host, &r.file, &step, dry_run, &mut dry_current) {
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
                    u.error = Some(e);
                    break;
                }
            }
        }
        u.restored = r.steps.is_empty();
        if !dry_run {
            if r.steps.is_empty() {
                let _ = std::fs::remove_file(&rec_path);
                if let Ok(real) = file::resolve(&r.file) {
                    let _ = file::remove(&backup_path(&real));
                }
            } else if let Err(e) = write_record(&rec_path, &r) {
                u.error.get_or_insert(e);
            }
        }
        out.push(u);
    }
    out
}

/// Undoes one step on the host file (in a dry run, on `dry_current`, the
/// text the steps undone so far would leave).
fn restore_step(
    host: &Adapter,
    path: &Path,
    r: &Step,
    dry_run: bool,
    dry_current: &mut Option<String>,
) -> Result<(), String> {
    let real = file::resolve(path)?;
    // Codex's `hooks.json` is JSON beside its TOML config.
    let format = match hostfile::wiring::format(host) {
        Some(hostfile::Format::Toml(_)) if path.extension().is_some_and(|x| x == "json") => {
            hostfile::Format::Json(hostfile::wiring::NESTED_JSON)
        }
        Some(f) => f,
        None => return Err(format!("{} has no config file", host.display_name())),
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
                return Err(format!(
                    "`{}` changed since the import; its bytes from before are in `{}`",
                    path.display(),
                    backup_path(&real).display()
                ));
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

fn undo_command(
    loc: &Locations,
    hosts: &[&'static Adapter],
    scope: Scope,
    hooks_file: &Path,
    dry_run: bool,
    json: bool,
) -> CmdResult {
    let mut all = Vec::new();
    for host in hosts {
        all.extend(undo(loc, host, scope, hooks_file, dry_run));
    }
    let failed = all.iter().any(|u| u.error.is_some());
    if json {
        output::json(&json!({"ok": !failed, "dryRun": dry_run, "undone": all}));
    } else {
        print_undone(hosts, &all, dry_run);
        if dry_run {
            output::line("dry run: nothing was written");
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The undo lines for people, also used by `uninstall`.
pub fn print_undone(hosts: &[&'static Adapter], all: &[Undone], dry_run: bool) {
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

// ------------------------------------------------------------------ output

/// The hosts among `hosts` that already run keryx-hooks at `scope`.
fn hosts_wired(loc: &Locations, hosts: &[&'static Adapter], scope: Scope) -> Vec<String> {
    hosts
        .iter()
        .filter(|h| {
            hostfile::config_files(h, scope, loc)
                .iter()
                .chain(hostfile::config_files(h, Scope::User, loc).iter())
                .any(|p| hostfile::wired_events(h, p).is_ok_and(|e| !e.is_empty()))
        })
        .map(|h| h.name().to_owned())
        .collect()
}

fn notes(
    scope: Scope,
    hosts: &[&'static Adapter],
    wired: &[String],
    plan: &[Planned],
    resyncs: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    let imported = |h: &str| {
        plan.iter()
            .any(|p| p.host == h && matches!(p.outcome, Outcome::Import(_)))
    };
    for h in hosts {
        if imported(h.name()) && !wired.iter().any(|w| w == h.name()) {
            notes.push(format!(
                "{} does not run keryx-hooks yet, so the imported hooks do not run until you wire it: `keryx-hooks install {}`",
                h.display_name(),
                h.name()
            ));
        } else if imported(h.name()) && scope == Scope::User && !resyncs {
            notes.push(format!(
                "{} reads your hooks from the installed snapshot: `keryx-hooks install {}` (or `keryx-hooks doctor --fix`) brings it up to date",
                h.display_name(),
                h.name()
            ));
        }
    }
    if scope == Scope::Project && plan.iter().any(|p| matches!(p.outcome, Outcome::Import(_))) {
        notes.push(
            "project hooks run only once you trust them: review them with `keryx-hooks trust`"
                .to_owned(),
        );
    }
    notes
}

fn print_plan(plan: &[Planned], hooks_file: &Path, dry_run: bool, added: usize) {
    let shown = format!("`{}`", escape(&hooks_file.display().to_string()));
    if plan.is_empty() {
        output::line("no hooks of their own in these hosts' configs; nothing to import");
        return;
    }
    for p in plan {
        let what = p
            .command
            .as_deref()
            .map(|c| format!("`{}`", escape(c)))
            .unwrap_or_else(|| "(not a command)".into());
        let matcher = p
            .matcher
            .as_deref()
            .filter(|m| !m.is_empty() && *m != "*")
            .map(|m| format!(" [{}]", escape(m)))
            .unwrap_or_default();
        match &p.outcome {
            Outcome::Import(i) => {
                output::line(&format!(
                    "{} {}{matcher} {what}: {} `{}` ({} on {}, timeout {} ms)",
                    p.host,
                    escape(&p.host_event),
                    if dry_run {
                        "would import as"
                    } else {
                        "imported as"
                    },
                    i.id,
                    i.class,
                    i.event,
                    i.timeout_ms
                ));
                for n in &i.notes {
                    output::line(&format!("  {}", escape(n)));
                }
                if i.grants.why.is_empty() {
                    output::line("  granted nothing beyond the sandbox's defaults");
                }
                for w in &i.grants.why {
                    output::line(&format!("  granted {}", escape(w)));
                }
            }
            Outcome::Leave { reason } => output::line(&format!(
                "{} {}{matcher} {what}: stays with the host: {}",
                p.host,
                escape(&p.host_event),
                escape(reason)
            )),
        }
    }
    output::line(&format!(
        "{added} new registrations {} {shown}",
        if dry_run { "would go to" } else { "in" }
    ));
}
