//! `install --host-sandbox`: the host's own OS sandbox for the agent's
//! commands, set so they cannot write what decides enforcement. The text
//! guards read a command; a program the agent wrote earlier and then ran is
//! not read, and only the kernel stops its writes. The deny list is the one
//! the guards protect ([`self_protect::enforcement_paths`]). Settings are
//! merged and only ever tightened; each change is recorded (in the state
//! directory) so `uninstall` takes back exactly what was added.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::hostfile::{self, Change, HostFileError, file, json};
use crate::builtins::ctx_guard::CtxGuardConfig;
use crate::builtins::self_protect;
use crate::hosts::{Adapter, HostSandbox};
use crate::settings::Here;

/// Whether keryx-hooks can set `host`'s sandbox (its adapter says how).
pub fn supports(host: &Adapter) -> bool {
    host.host_sandbox().is_some()
}

/// The hosts whose sandbox this can set, by name, for messages.
pub fn hosts() -> Vec<&'static str> {
    crate::hosts::all()
        .filter(|a| supports(a))
        .map(|a| a.name())
        .collect()
}

fn path(dotted: &str) -> Vec<String> {
    dotted.split('.').map(str::to_owned).collect()
}

/// The settings that must hold, each with its tight value.
fn switches(spec: &HostSandbox) -> impl Iterator<Item = (Vec<String>, bool)> + '_ {
    let on = spec.require_true.iter().map(|p| (path(p), true));
    let off = spec.require_false.iter().map(|p| (path(p), false));
    on.chain(off)
}

/// One change made to a host file, in the order made; undone in reverse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Edit {
    /// `key: value` added to the object at `parent`.
    AddKey {
        parent: Vec<String>,
        key: String,
        value: Value,
    },
    /// The value at `path` was `old` and became `new`.
    Replace {
        path: Vec<String>,
        old: Value,
        new: Value,
    },
    /// `value` appended to the array at `path`.
    AddItem { path: Vec<String>, value: Value },
}

/// The deny entries for what decides enforcement here, each absolute path
/// spelled as the host reads one (Claude Code: `//` + the path).
pub fn deny_list(loc: &Here, spec: &HostSandbox) -> Vec<String> {
    self_protect::enforcement_paths(&CtxGuardConfig::from_locations(loc))
        .iter()
        .map(|p| format!("{}{}", spec.absolute_prefix, p.display()))
        .collect()
}

/// Whether `entry` (as a person may have written it) denies `wanted`.
fn same_path(entry: &str, wanted: &str) -> bool {
    // `//p`, `/p` and `/p/` name the same absolute path in every user file.
    let norm = |s: &str| {
        let s = s.trim_end_matches('/');
        match s.strip_prefix("//") {
            Some(rest) => format!("/{rest}"),
            None => s.to_owned(),
        }
    };
    norm(entry) == norm(wanted)
}

/// How far the host file's sandbox covers `deny`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    /// `enabled: true`, `failIfUnavailable: true`, `allowUnsandboxedCommands: false`.
    pub on: bool,
    /// Entries of `deny` the file does not name.
    pub missing: Vec<String>,
}

impl Coverage {
    pub fn complete(&self) -> bool {
        self.on && self.missing.is_empty()
    }
}

pub fn coverage(
    text: &str,
    spec: &HostSandbox,
    deny: &[String],
) -> Result<Coverage, HostFileError> {
    let mut on = true;
    for (p, want) in switches(spec) {
        on &= json::value_at(text, &p)? == Some(Value::Bool(want));
    }
    let have: Vec<String> = match json::value_at(text, &path(spec.deny_write))? {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let missing = deny
        .iter()
        .filter(|d| !have.iter().any(|h| same_path(h, d)))
        .cloned()
        .collect();
    Ok(Coverage { on, missing })
}

/// Adds to the object at `parent` the members that make `rest` hold
/// `leaf`, creating the objects on the way.
fn nested(rest: &[String], leaf: Value) -> Value {
    rest.iter().rev().fold(leaf, |v, k| {
        Value::Object([(k.clone(), v)].into_iter().collect())
    })
}

/// Makes `path` hold `leaf` (creating objects on the way) when nothing is
/// there; an existing value is left to `existing`.
fn ensure(
    text: &mut String,
    edits: &mut Vec<Edit>,
    target: &[String],
    leaf: Value,
) -> Result<Option<Value>, HostFileError> {
    for depth in 0..target.len() {
        let here = &target[..=depth];
        match json::value_at(text, here)? {
            Some(v) if depth + 1 == target.len() => return Ok(Some(v)),
            Some(Value::Object(_)) => continue,
            Some(_) => {
                return Err(HostFileError::FailedCheck {
                    why: format!("`{}` is not an object", here.join(".")),
                });
            }
            None => {
                let parent = target[..depth].to_vec();
                let key = target[depth].clone();
                let value = nested(&target[depth + 1..], leaf);
                *text = json::insert_member(text, &parent, &key, &value)?;
                edits.push(Edit::AddKey { parent, key, value });
                return Ok(None);
            }
        }
    }
    unreachable!("a target path is never empty")
}

/// `text` with the sandbox on and every entry of `deny` denied, and the
/// edits that made it. What is already tighter stays as it is.
pub fn apply(
    text: &str,
    spec: &HostSandbox,
    deny: &[String],
) -> Result<(String, Vec<Edit>), HostFileError> {
    let mut out = text.to_owned();
    let mut edits = Vec::new();
    for (target, want) in switches(spec) {
        if let Some(old) = ensure(&mut out, &mut edits, &target, Value::Bool(want))?
            && old != Value::Bool(want)
        {
            out = json::replace_at(&out, &target, &Value::Bool(want))?;
            edits.push(Edit::Replace {
                path: target,
                old,
                new: Value::Bool(want),
            });
        }
    }
    let target = path(spec.deny_write);
    let all: Value = deny.iter().map(|d| Value::String(d.clone())).collect();
    match ensure(&mut out, &mut edits, &target, all)? {
        None => {}
        Some(Value::Array(have)) => {
            for d in deny {
                if !have
                    .iter()
                    .any(|h| h.as_str().is_some_and(|h| same_path(h, d)))
                {
                    let value = Value::String(d.clone());
                    out = json::push_item(&out, &target, &value)?;
                    edits.push(Edit::AddItem {
                        path: target.clone(),
                        value,
                    });
                }
            }
        }
        Some(_) => {
            return Err(HostFileError::FailedCheck {
                why: format!("`{}` is not a list", target.join(".")),
            });
        }
    }
    Ok((out, edits))
}

/// `text` with `edits` taken back, last first. An edit whose result was
/// changed since (a key the person filled in, a value set again) stays,
/// and is returned as kept.
pub fn undo(text: &str, edits: &[Edit]) -> Result<(String, Vec<Edit>), HostFileError> {
    let mut out = text.to_owned();
    let mut kept = Vec::new();
    for e in edits.iter().rev() {
        match e {
            Edit::AddKey { parent, key, value } => {
                let mut at = parent.clone();
                at.push(key.clone());
                if json::value_at(&out, &at)?.as_ref() == Some(value) {
                    out = json::remove_member(&out, parent, key)?;
                } else {
                    kept.push(e.clone());
                }
            }
            Edit::Replace { path, old, new } => {
                if json::value_at(&out, path)?.as_ref() == Some(new) {
                    out = json::replace_at(&out, path, old)?;
                } else {
                    kept.push(e.clone());
                }
            }
            Edit::AddItem { path, value } => {
                out = json::remove_item(&out, path, value)?;
            }
        }
    }
    kept.reverse();
    Ok((out, kept))
}

/// How `path`'s sandbox covers what decides enforcement here, for
/// `status` and `doctor`.
pub fn state(loc: &Here, spec: &HostSandbox, path: &Path) -> Result<Coverage, HostFileError> {
    let text = file::read(&file::resolve(path)?)?.unwrap_or_default();
    coverage(&text, spec, &deny_list(loc, spec))
}

/// `state` in one line: `on, covers all 16 places` or why not.
pub fn describe(c: &Coverage) -> String {
    match (c.on, c.missing.len()) {
        (false, _) => "off".to_owned(),
        (true, 0) => "on, denying the agent's commands every place keryx-hooks protects".to_owned(),
        (true, n) => format!(
            "on, but not denying {n} place{} keryx-hooks protects ({})",
            if n == 1 { "" } else { "s" },
            c.missing
                .iter()
                .map(|m| format!("`{}`", crate::escape::escape(m)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The command that turns it on for `host` at `scope`.
pub fn fix_command(host: &Adapter, scope: hostfile::Scope) -> String {
    match scope {
        hostfile::Scope::User => format!("keryx-hooks install {} --host-sandbox", host.name()),
        hostfile::Scope::Project => format!(
            "keryx-hooks install {} --scope project --host-sandbox",
            host.name()
        ),
    }
}

// ------------------------------------------------------------------ the record

type Record = BTreeMap<String, Vec<Edit>>;

fn read_record(loc: &Here) -> Result<Record, HostFileError> {
    let p = loc.host_sandbox_record();
    match file::read(&p)? {
        None => Ok(Record::new()),
        Some(text) => serde_json::from_str(&text).map_err(|e| HostFileError::FailedCheck {
            why: format!("`{}` does not read: {e}", p.display()),
        }),
    }
}

fn write_record(loc: &Here, record: &Record) -> Result<(), HostFileError> {
    let p = loc.host_sandbox_record();
    if record.is_empty() {
        return match std::fs::symlink_metadata(&p) {
            Ok(_) => file::remove(&p),
            Err(_) => Ok(()),
        };
    }
    std::fs::create_dir_all(&loc.state_dir).map_err(|error| HostFileError::Write {
        path: p.clone(),
        what: "create the directory of",
        error,
    })?;
    let text = serde_json::to_string_pretty(record).expect("edits always serialize") + "\n";
    file::write_atomic(&p, &text, 0o600)
}

/// Whether `path` has sandbox settings recorded as added by install.
pub fn recorded(loc: &Here, path: &Path) -> bool {
    read_record(loc).is_ok_and(|r| r.contains_key(&key_of(path)))
}

fn key_of(path: &Path) -> String {
    crate::paths::absolute(path).to_string_lossy().into_owned()
}

/// One host file's sandbox outcome.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub path: PathBuf,
    pub change: Change,
    pub diff: String,
    /// Edits uninstall left because they were changed since.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<Edit>,
}

/// Sets the sandbox in `path` (already wired; its backup already taken).
pub fn install(
    loc: &Here,
    spec: &HostSandbox,
    path: &Path,
    dry_run: bool,
) -> Result<Report, HostFileError> {
    let deny = deny_list(loc, spec);
    let real = file::resolve(path)?;
    let before = file::read(&real)?.unwrap_or_default();
    let (after, edits) = apply(&before, spec, &deny).map_err(|e| HostFileError::Edit {
        path: path.to_path_buf(),
        error: Box::new(e),
    })?;
    let mut report = Report {
        path: path.to_path_buf(),
        change: Change::Unchanged,
        diff: String::new(),
        kept: Vec::new(),
    };
    if after == before {
        return Ok(report);
    }
    report.change = Change::Updated;
    report.diff = hostfile::diff::unified(&path.display().to_string(), Some(&before), Some(&after));
    if !dry_run {
        // Recorded first: a change written but not recorded could not be undone.
        let mut record = read_record(loc)?;
        record.entry(key_of(path)).or_default().extend(edits);
        write_record(loc, &record)?;
        let mode = file::mode(&real).unwrap_or(file::NEW_FILE_MODE);
        file::write_atomic(&real, &after, mode)?;
    }
    Ok(report)
}

/// Takes back what install added to `path`; `None` when it added nothing.
pub fn uninstall(loc: &Here, path: &Path, dry_run: bool) -> Result<Option<Report>, HostFileError> {
    let mut record = read_record(loc)?;
    let Some(edits) = record.get(&key_of(path)).cloned() else {
        return Ok(None);
    };
    let real = file::resolve(path)?;
    let Some(before) = file::read(&real)? else {
        if !dry_run {
            record.remove(&key_of(path));
            write_record(loc, &record)?;
        }
        return Ok(None);
    };
    let (after, kept) = undo(&before, &edits).map_err(|e| HostFileError::Edit {
        path: path.to_path_buf(),
        error: Box::new(e),
    })?;
    let report = Report {
        path: path.to_path_buf(),
        change: if after == before {
            Change::Unchanged
        } else {
            Change::Updated
        },
        diff: hostfile::diff::unified(&path.display().to_string(), Some(&before), Some(&after)),
        kept,
    };
    if !dry_run {
        if after != before {
            let mode = file::mode(&real).unwrap_or(file::NEW_FILE_MODE);
            file::write_atomic(&real, &after, mode)?;
        }
        record.remove(&key_of(path));
        write_record(loc, &record)?;
    }
    Ok(Some(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> &'static HostSandbox {
        crate::hosts::all()
            .find_map(|a| a.host_sandbox())
            .expect("an adapter declares its host sandbox")
    }

    fn deny() -> Vec<String> {
        vec![
            "//h/.keryx/hooks.json".into(),
            "//h/.claude/settings.json".into(),
        ]
    }

    #[test]
    fn apply_then_undo_gives_the_original_bytes() {
        for original in [
            "{}\n",
            "{\n  \"model\": \"opus\"\n}\n",
            "{\n    \"hooks\": {},\n    \"sandbox\": {\"enabled\": false}\n}\n",
            "{\"sandbox\": {\"filesystem\": {\"denyWrite\": [\"~/.ssh\"]}}}",
        ] {
            let (after, edits) = apply(original, spec(), &deny()).unwrap();
            let c = coverage(&after, spec(), &deny()).unwrap();
            assert!(c.complete(), "{original}: {after}");
            serde_json::from_str::<Value>(&after).unwrap();
            let (back, kept) = undo(&after, &edits).unwrap();
            assert_eq!(back, original);
            assert!(kept.is_empty());
            let (again, more) = apply(&after, spec(), &deny()).unwrap();
            assert_eq!(again, after, "a second apply changes nothing");
            assert!(more.is_empty());
        }
    }

    #[test]
    fn a_tighter_sandbox_is_kept_and_a_looser_one_tightened() {
        let original = r#"{"sandbox": {"enabled": true, "allowUnsandboxedCommands": true,
            "filesystem": {"denyWrite": ["/h/.keryx/hooks.json/", "//etc"]}}}"#;
        let (after, edits) = apply(original, spec(), &deny()).unwrap();
        let v: Value = serde_json::from_str(&after).unwrap();
        assert_eq!(v["sandbox"]["allowUnsandboxedCommands"], false);
        assert_eq!(v["sandbox"]["failIfUnavailable"], true);
        assert_eq!(
            v["sandbox"]["filesystem"]["denyWrite"],
            serde_json::json!([
                "/h/.keryx/hooks.json/",
                "//etc",
                "//h/.claude/settings.json"
            ])
        );
        assert_eq!(edits.len(), 3, "{edits:?}");
        assert_eq!(undo(&after, &edits).unwrap().0, original);
    }

    #[test]
    fn what_the_person_changed_since_stays() {
        let (after, edits) = apply("{}", spec(), &deny()).unwrap();
        let edited = after.replace("\"enabled\": true", "\"enabled\": true, \"mine\": 1");
        let (back, kept) = undo(&edited, &edits).unwrap();
        assert_eq!(kept.len(), 1, "{kept:?}");
        let v: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(v["sandbox"]["mine"], 1);
        assert!(v["sandbox"].get("failIfUnavailable").is_none());
    }

    #[test]
    fn a_sandbox_that_is_not_an_object_is_refused() {
        assert!(apply(r#"{"sandbox": true}"#, spec(), &deny()).is_err());
        assert!(
            apply(
                r#"{"sandbox": {"filesystem": {"denyWrite": "x"}}}"#,
                spec(),
                &deny()
            )
            .is_err()
        );
    }
}
