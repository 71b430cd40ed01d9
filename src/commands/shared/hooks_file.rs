//! The hooks file edited as text (`import` and `init` add registrations,
//! `import --undo` and `uninstall` remove them): formatting, order and every
//! other entry kept, and the result checked to load before it is written.

use crate::settings::Here;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::config::load;
use crate::error::CommandError;
use crate::escape::escape;
use crate::install::hostfile::{Scope, file};
use crate::install::import::SCHEMA_URL;
use crate::textfile::edit::{self, Op, Seg};

/// The hooks file `import` writes at `scope`, when there is one here.
pub(crate) fn hooks_file_at(loc: &Here, scope: Scope) -> Option<PathBuf> {
    hooks_file(loc, scope).ok()
}

/// Where the registrations go: `$KERYX_HOME/hooks.json`, or the project's.
pub(crate) fn hooks_file(loc: &Here, scope: Scope) -> Result<PathBuf, CommandError> {
    match scope {
        Scope::User => Ok(loc.user_hooks_file()),
        Scope::Project => {
            let root = super::project_root(loc)?;
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

pub(crate) fn existing_ids(hooks_file: &Path) -> Result<BTreeSet<String>, CommandError> {
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

pub(crate) fn read_hooks(path: &Path) -> Result<Option<(String, Value)>, CommandError> {
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

pub(crate) fn new_hooks_file() -> String {
    format!(
        "{{\n  \"$schema\": \"{SCHEMA_URL}\",\n  \"schemaVersion\": \"1.0.0\",\n  \"hooks\": {{}}\n}}\n"
    )
}

/// Rewrites the hooks file with `ops` applied, as text (formatting, order
/// and every other entry kept), after checking that it still loads.
pub(crate) fn edit_hooks(
    loc: &Here,
    scope: Scope,
    path: &Path,
    ops: impl Fn(&Value) -> Vec<Op>,
) -> Result<(), CommandError> {
    let failed = |e: &dyn std::fmt::Display| {
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
    let _lock = file::lock_parent(&real, true).map_err(|e| failed(&e))?;
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
        d.edit(&op).map_err(|e| failed(&e))?;
        edit::edit_value(&mut doc, &op).map_err(|e| failed(&e))?;
    }
    let reparsed: Value = serde_json::from_str(d.text()).map_err(|e| failed(&e))?;
    if serde_json::to_vec(&reparsed).ok() != serde_json::to_vec(&doc).ok() {
        return Err(failed(&"the edited text does not say what was intended"));
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
        return Err(failed(&e));
    }
    let mode = file::mode(&real).unwrap_or(file::NEW_FILE_MODE);
    file::write_atomic(&real, d.text(), mode).map_err(|e| failed(&e))
}

/// Adds `regs` (event, registration) to the hooks file.
pub(crate) fn add_registrations(
    loc: &Here,
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
pub(crate) fn remove_registrations(
    loc: &Here,
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
