//! `keryx-hooks enable <id> [--user]` and
//! `keryx-hooks disable <id> [--user] [--acknowledge-gate-risk]`: flip a
//! hook's `enabled` in `.metaproject/hooks.json` (or your own hooks file
//! with `--user`), or, for a built-in, add or remove a disable-only override
//! that `_keryxManaged.managedHookIds` records as ours.
//!
//! The file is edited as text, touching only the bytes that change, and the
//! result must load before it replaces the original (atomically, under a
//! lock). A project file that was trusted before the edit is re-trusted for
//! the result, since the user just approved that change; an untrusted one
//! stays untrusted and the command says so.

use crate::error::ExitStatus;
use crate::settings::Here;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::base::text::hex;
use crate::builtins;
use crate::cli::{DisableArgs, EnableArgs};
use crate::config::diagnostic::Diagnostic;
use crate::config::load::{self, Loaded};
use crate::config::model::Scope;
use crate::config::schema;
use crate::config::{self};
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::output;
use crate::paths::{self};
use crate::textfile::edit::{self, Op, Seg, key};
use crate::trust::{self, Store, TrustState};

/// What a file created from nothing starts as.
const NEW_FILE: &str = "{\n  \"schemaVersion\": \"1.0.0\",\n  \"hooks\": {}\n}\n";
const ACKNOWLEDGE: &str = "disable-builtin-gate";
const BOM: &str = "\u{feff}";

struct Request<'a> {
    id: &'a str,
    user: bool,
    enable: bool,
    acknowledge: bool,
}

pub fn enable(args: &EnableArgs) -> CmdResult {
    toggle(&Request {
        id: &args.id,
        user: args.user,
        enable: true,
        acknowledge: false,
    })
}

pub fn disable(args: &DisableArgs) -> CmdResult {
    toggle(&Request {
        id: &args.id,
        user: args.user,
        enable: false,
        acknowledge: args.acknowledge_gate_risk,
    })
}

fn toggle(req: &Request) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let scope = if req.user {
        Scope::User
    } else {
        Scope::Project
    };
    let (target, root) = if req.user {
        (loc.user_hooks_file(), None)
    } else {
        let root = super::shared::project_root(&loc)?;
        if let Some(why) = &loc.project_refusal {
            return Err(CommandError::user(
                "refusing to edit the hooks of a project that belongs to another user",
            )
            .cause(escape(why)));
        }
        (root.join(".metaproject").join("hooks.json"), Some(root))
    };
    let shown = format!("`{}`", escape(&target.display().to_string()));
    check_policy(req, scope)?;

    // Write through a symlink to its target (a dotfiles-managed hooks file
    // stays a symlink), but never out of the project.
    let real_target = paths::real_path(&target);
    if let Some(root) = &root
        && !paths::is_inside(&real_target, root)
    {
        return Err(CommandError::user(format!(
            "{shown} resolves to `{}`, outside the project; refusing to write through it",
            escape(&real_target.display().to_string())
        )));
    }
    let _lock = lock_for(&loc, &real_target)?;

    let before = load::load(&config::sources(&loc, None));
    refuse_errors(&before, &target, "does not load; fix it before editing it")?;
    let original = load::read_config_bytes(&target, root.as_deref()).map_err(diag_error)?;
    let (text, doc, bom) = match &original {
        Some(bytes) => {
            let (text, doc) = load::parse_config_bytes(&target, bytes).map_err(diag_error)?;
            (text, doc, bytes.starts_with(BOM.as_bytes()))
        }
        None => (
            NEW_FILE.to_owned(),
            serde_json::from_str(NEW_FILE).expect("valid"),
            false,
        ),
    };

    let other_scope_has = before
        .registrations
        .iter()
        .any(|r| r.id == req.id && r.scope != scope && r.scope != Scope::Builtin);
    let (ops, done) = match plan(req, scope, &doc, &text, &shown, other_scope_has)? {
        Plan::Nothing(msg) => {
            output::line(&msg);
            return Ok(ExitStatus::Success);
        }
        Plan::Edit { ops, done } => (ops, done),
    };

    // The same edit on the text and on the value must agree exactly, key
    // order included (`Value`'s own equality ignores order, so compare the
    // serialised forms).
    let mut edited = edit::Doc::new(&text);
    let mut expected = doc.clone();
    for op in &ops {
        edited.edit(op).map_err(edit_failed)?;
        edit::edit_value(&mut expected, op).map_err(edit_failed)?;
    }
    let reparsed: Value = serde_json::from_str(edited.text()).map_err(edit_failed)?;
    if serde_json::to_vec(&reparsed).ok() != serde_json::to_vec(&expected).ok() {
        return Err(edit_failed(
            "the edited text does not say what was intended",
        ));
    }
    let new_bytes = if bom {
        format!("{BOM}{}", edited.text())
    } else {
        edited.text().to_owned()
    };

    // Stage next to the real file, then load the staged copy in its place.
    let dir = real_target
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    std::fs::create_dir_all(&dir)?;
    remove_stale_temps(&dir);
    let mode = std::fs::metadata(&real_target)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    let mut staged = tempfile::Builder::new()
        .prefix(".keryx-hooks-")
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    staged.write_all(new_bytes.as_bytes())?;
    staged
        .as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    staged.as_file().sync_all()?;
    let mut sources = config::sources(&loc, None);
    match scope {
        Scope::User => sources.user_file = staged.path().to_path_buf(),
        _ => sources.project_file = Some(staged.path().to_path_buf()),
    }
    let after = load::load(&sources);
    refuse_errors(
        &after,
        staged.path(),
        "would not load after this edit; nothing was written",
    )?;
    let note = check_effect(req, scope, &after)?;

    // Someone else's write since we read it wins: start over rather than
    // overwrite it.
    let current = match std::fs::read(&real_target) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    if current != original {
        return Err(CommandError::user(format!(
            "{shown} changed while it was being edited; nothing was written"
        ))
        .hint("run the command again"));
    }
    staged.persist(&real_target).map_err(|e| e.error)?;
    std::fs::File::open(&dir)?.sync_all()?;

    output::line(&done);
    if let Some(note) = note {
        output::line(&note);
    }
    if let Some(root) = &root {
        return carry_trust(&loc, root, &before, &after, &shown);
    }
    if std::fs::read_dir(&loc.snapshot_root).is_ok_and(|mut d| d.next().is_some()) {
        output::line(
            "note: hosts wired to an installed snapshot read a copy of this file; `keryx-hooks doctor --fix` brings it up to date",
        );
    }
    Ok(ExitStatus::Success)
}

/// The spec's rules on who may turn which built-in off, before any file is
/// touched.
fn check_policy(req: &Request, scope: Scope) -> Result<(), CommandError> {
    if !req.id.starts_with("keryx.") {
        return Ok(());
    }
    let id = escape(req.id);
    let Some(class) = builtins::class_of(req.id) else {
        return Err(
            CommandError::user(format!("there is no built-in hook `{id}`"))
                .hint(format!("the built-ins are {}", builtins::IDS.join(", "))),
        );
    };
    if req.enable || !class.has_decision_power() {
        return Ok(());
    }
    match scope {
        Scope::Project => Err(CommandError::user(format!(
            "`{id}` is a built-in {class} hook; a project file can never turn it off"
        ))
        .hint(format!(
            "to turn it off for yourself only: `keryx-hooks disable {id} --user --acknowledge-gate-risk`"
        ))),
        _ if !req.acknowledge => Err(CommandError::user(format!(
            "`{id}` is a built-in {class} hook that can block what it finds; turning it off needs `--acknowledge-gate-risk`"
        ))
        .hint(format!(
            "`keryx-hooks disable {id} --user --acknowledge-gate-risk` (every session start will name it while it is off)"
        ))),
        _ => Ok(()),
    }
}

enum Plan {
    Nothing(String),
    Edit { ops: Vec<Op>, done: String },
}

/// One entry of `hooks.<event>`.
struct Entry<'a> {
    event: &'a str,
    index: usize,
    obj: &'a Map<String, Value>,
}

impl Entry<'_> {
    fn path(&self) -> Vec<Seg> {
        vec![key("hooks"), key(self.event), Seg::Index(self.index)]
    }
}

fn entries<'a>(doc: &'a Value, id: &str) -> Vec<Entry<'a>> {
    let mut out = Vec::new();
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, list) in hooks {
        for (index, entry) in list.as_array().into_iter().flatten().enumerate() {
            if let Some(obj) = entry.as_object()
                && obj.get("id").and_then(Value::as_str) == Some(id)
            {
                out.push(Entry { event, index, obj });
            }
        }
    }
    out
}

fn plan(
    req: &Request,
    scope: Scope,
    doc: &Value,
    text: &str,
    shown: &str,
    other_scope_has: bool,
) -> Result<Plan, CommandError> {
    let id = escape(req.id);
    let user_flag = if scope == Scope::User { " --user" } else { "" };
    if let Some(class) = builtins::class_of(req.id) {
        let overrides: Vec<Entry> = entries(doc, req.id)
            .into_iter()
            .filter(|e| schema::looks_like_override(&Value::Object(e.obj.clone())))
            .collect();
        let gate = class.has_decision_power();
        if req.enable {
            return enable_builtin(req.id, doc, text, &overrides, shown, user_flag);
        }
        let effective = |e: &Entry| !gate || e.obj.get("acknowledge").is_some();
        if overrides.iter().any(effective) {
            return Ok(Plan::Nothing(format!(
                "`{id}` is already turned off in {shown}; nothing changed."
            )));
        }
        if let Some(e) = overrides.first() {
            // A hand-written override the loader ignores for want of the
            // acknowledgement the user has now given: complete it, keep it theirs.
            return Ok(Plan::Edit {
                ops: vec![Op::Insert(
                    e.path(),
                    "acknowledge".into(),
                    json!(ACKNOWLEDGE),
                )],
                done: format!(
                    "Turned off the built-in gate `{id}` for you: acknowledged the existing override in {shown}."
                ),
            });
        }
        let event = builtins::registrations()
            .into_iter()
            .find(|r| r.id == req.id)
            .map(|r| r.event.as_str())
            .expect("every built-in id has a registration");
        let mut entry = json!({"id": req.id, "enabled": false});
        if gate {
            entry["acknowledge"] = json!(ACKNOWLEDGE);
        }
        let mut ops = vec![if doc["hooks"].get(event).is_some() {
            Op::Push(vec![key("hooks"), key(event)], entry)
        } else {
            Op::Insert(vec![key("hooks")], event.to_owned(), json!([entry]))
        }];
        match doc.get("_keryxManaged") {
            None => ops.push(Op::Insert(
                vec![],
                "_keryxManaged".into(),
                json!({"managedHookIds": [req.id]}),
            )),
            Some(m) => match m.get("managedHookIds").and_then(Value::as_array) {
                None => ops.push(Op::Insert(
                    vec![key("_keryxManaged")],
                    "managedHookIds".into(),
                    json!([req.id]),
                )),
                Some(ids) if !ids.iter().any(|v| v == req.id) => ops.push(Op::Push(
                    vec![key("_keryxManaged"), key("managedHookIds")],
                    json!(req.id),
                )),
                Some(_) => {}
            },
        }
        let done = if gate {
            format!(
                "Turned off the built-in gate `{id}` for you in {shown}. It guards no session until you turn it back on, and every session start says so: `keryx-hooks enable {id} --user`."
            )
        } else {
            format!(
                "Turned off `{id}` in {shown}. `keryx-hooks enable {id}{user_flag}` turns it back on."
            )
        };
        return Ok(Plan::Edit { ops, done });
    }

    let regs: Vec<Entry> = entries(doc, req.id)
        .into_iter()
        .filter(|e| !schema::looks_like_override(&Value::Object(e.obj.clone())))
        .collect();
    if regs.is_empty() {
        let hint = if other_scope_has && scope == Scope::Project {
            "it is one of your own hooks: add `--user`".to_owned()
        } else if other_scope_has {
            "it is a project hook: run this without `--user`".to_owned()
        } else {
            "`keryx-hooks list` shows every hook id".to_owned()
        };
        return Err(CommandError::user(format!("there is no hook `{id}` in {shown}")).hint(hint));
    }
    let mut ops = Vec::new();
    for e in &regs {
        let now = e
            .obj
            .get("enabled")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        if now == req.enable {
            continue;
        }
        ops.push(if e.obj.contains_key("enabled") {
            let mut p = e.path();
            p.push(key("enabled"));
            Op::Set(p, json!(req.enable))
        } else {
            Op::Insert(e.path(), "enabled".into(), json!(req.enable))
        });
    }
    let verb = if req.enable { "enabled" } else { "disabled" };
    if ops.is_empty() {
        return Ok(Plan::Nothing(format!(
            "`{id}` is already {verb} in {shown}; nothing changed."
        )));
    }
    let events = if regs.len() > 1 {
        format!(" (on {} events)", regs.len())
    } else {
        String::new()
    };
    let capital = if req.enable { "Enabled" } else { "Disabled" };
    Ok(Plan::Edit {
        ops,
        done: format!("{capital} `{id}`{events} in {shown}."),
    })
}

fn enable_builtin(
    id: &str,
    doc: &Value,
    text: &str,
    overrides: &[Entry],
    shown: &str,
    user_flag: &str,
) -> Result<Plan, CommandError> {
    let esc = escape(id);
    if overrides.is_empty() {
        return Ok(Plan::Nothing(format!(
            "`{esc}` is not turned off in {shown}; nothing changed."
        )));
    }
    let managed_ids: Vec<&Value> = doc
        .pointer("/_keryxManaged/managedHookIds")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    if !managed_ids.iter().any(|v| *v == id) {
        let e = &overrides[0];
        let at = crate::config::locate::locate(text, &format!("/hooks/{}/{}", e.event, e.index))
            .map(|(l, _)| format!(" at line {l}"))
            .unwrap_or_default();
        return Err(CommandError::user(format!(
            "the override turning `{esc}` off in {shown}{at} was not added by keryx-hooks (it is not in `_keryxManaged.managedHookIds`), so it looks hand-written; leaving it alone"
        ))
        .hint("remove that entry by hand if you want the hook back on"));
    }
    let mut ops = Vec::new();
    // Highest index first, so earlier paths stay valid; an event left with
    // nothing goes, so disable-then-enable gives back the original bytes.
    let hooks = doc.get("hooks").and_then(Value::as_object);
    let mut events: Vec<&str> = overrides.iter().map(|e| e.event).collect();
    events.dedup();
    for event in events {
        let total = hooks
            .and_then(|h| h.get(event))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let mut mine: Vec<usize> = overrides
            .iter()
            .filter(|e| e.event == event)
            .map(|e| e.index)
            .collect();
        if mine.len() == total {
            ops.push(Op::Remove(vec![key("hooks"), key(event)]));
            continue;
        }
        mine.sort_unstable_by(|a, b| b.cmp(a));
        ops.extend(
            mine.into_iter()
                .map(|i| Op::Remove(vec![key("hooks"), key(event), Seg::Index(i)])),
        );
    }
    let managed_obj = doc.get("_keryxManaged").and_then(Value::as_object);
    let positions: Vec<usize> = managed_ids
        .iter()
        .enumerate()
        .filter(|(_, v)| **v == id)
        .map(|(i, _)| i)
        .collect();
    if positions.len() == managed_ids.len() && managed_obj.is_some_and(|m| m.len() == 1) {
        ops.push(Op::Remove(vec![key("_keryxManaged")]));
    } else {
        ops.extend(positions.into_iter().rev().map(|i| {
            Op::Remove(vec![
                key("_keryxManaged"),
                key("managedHookIds"),
                Seg::Index(i),
            ])
        }));
    }
    Ok(Plan::Edit {
        ops,
        done: format!(
            "Turned `{esc}` back on in {shown} (removed the override keryx-hooks had added{}).",
            if user_flag.is_empty() { "" } else { " for you" }
        ),
    })
}

/// Confirms the loaded result does what was asked. Returns a note when
/// another file still decides otherwise (an override in the other scope).
fn check_effect(
    req: &Request,
    scope: Scope,
    after: &Loaded,
) -> Result<Option<String>, CommandError> {
    if !after.ok() {
        // The other file does not load; our own file was checked already.
        return Ok(None);
    }
    let builtin = builtins::class_of(req.id).is_some();
    let mine: Vec<bool> = after
        .registrations
        .iter()
        .filter(|r| r.id == req.id && r.scope == if builtin { Scope::Builtin } else { scope })
        .map(|r| r.enabled)
        .collect();
    if mine.iter().all(|e| *e == req.enable) {
        return Ok(None);
    }
    if builtin && req.enable {
        return Ok(Some(format!(
            "note: `{}` is still off: the other hooks file turns it off too",
            escape(req.id)
        )));
    }
    Err(CommandError::internal(
        "the edited file loads, but does not have the intended effect; nothing was written",
    ))
}

/// Re-records trust for a project file that was trusted before the edit;
/// says it stays untrusted otherwise.
fn carry_trust(loc: &Here, root: &Path, before: &Loaded, after: &Loaded, shown: &str) -> CmdResult {
    let was = trust::evaluate(before, loc);
    match &was.state {
        TrustState::NoCommandHooks => {}
        TrustState::Trusted => {
            let record = trust::record_for(after, root);
            let now = if was.pin_scripts {
                record.pinned_digest.clone().unwrap_or_default()
            } else {
                record.digest.clone()
            };
            if now == was.digest {
                output::line(&format!(
                    "{shown} stays trusted: the edit changes no command hook."
                ));
            } else {
                let stored = Store::locate(loc).and_then(|s| s.write(root, Some(record)));
                if let Err(why) = stored {
                    return Err(CommandError::internal(
                        "the edit was written, but trust could not be re-recorded for it",
                    )
                    .cause(escape(&why.to_string()))
                    .hint("review and trust the new version with `keryx-hooks trust`"));
                }
                output::line(&format!(
                    "Trust carried over: {shown} was trusted and you just approved this change, so trust was re-recorded for the new version."
                ));
            }
        }
        other => {
            let why = match other {
                TrustState::Changed => "changed since you trusted it",
                TrustState::StoreRefused(_) => "not trusted (the trust store cannot be used)",
                _ => "not trusted",
            };
            output::line(&format!(
                "{shown} is {why}, so its command hooks still do not run; review and trust it with `keryx-hooks trust`."
            ));
        }
    }
    Ok(ExitStatus::Success)
}

/// Errors the load attributes to `path` (or to no file) refuse the edit.
fn refuse_errors(loaded: &Loaded, path: &Path, what: &str) -> Result<(), CommandError> {
    let errors: Vec<&Diagnostic> = loaded
        .errors()
        .filter(|d| d.path.is_none() || d.path.as_deref() == Some(path))
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let mut e = CommandError::config(format!("`{}` {what}", escape(&path.display().to_string())));
    for d in errors {
        e = e.cause(d);
    }
    Err(e.hint("keryx-hooks validate"))
}

fn diag_error(d: Diagnostic) -> CommandError {
    CommandError::config("the hooks file cannot be edited")
        .cause(d)
        .hint("keryx-hooks validate")
}

fn edit_failed(e: impl std::fmt::Display) -> CommandError {
    CommandError::internal("could not edit the hooks file; nothing was written").cause(e)
}

/// Removes staged copies an interrupted edit (`kill -9` before the rename)
/// left beside the file. Runs under the edit lock, so none is in use.
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(".keryx-hooks-")
            && name.ends_with(".tmp")
            && e.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Serialises keryx-hooks edits of one file. The lock lives in the state
/// directory, not beside the file, so a project never gains a stray file.
fn lock_for(loc: &Here, real_target: &Path) -> Result<std::fs::File, CommandError> {
    let dir: PathBuf = loc.state_dir.join("locks");
    std::fs::create_dir_all(&dir)?;
    let name = hex(&Sha256::digest(real_target.as_os_str().as_encoded_bytes()));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!("hooks-{}.lock", &name[..16])))?;
    file.lock()?;
    Ok(file)
}
