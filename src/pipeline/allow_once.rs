//! One exact call allowed once, by the person, from a terminal.
//!
//! A call a rule denies or asks about is given a short code, derived from
//! the rule, the event, the call (tool and input, or prompt) and the
//! project; the refusal names it. The person runs `keryx-hooks allow-once
//! CODE` in a terminal, sees the call and confirms; the next time exactly
//! that call arrives within [`GRANT_SECS`], that rule lets it through, once.
//! Only the rule is waived: built-in guards, other rules and hooks still
//! judge the call. The agent cannot do this itself: ctx-guard refuses every
//! keryx-hooks subcommand not known to only read, `allow-once` wants a
//! terminal, and the codes live in keryx-hooks' state directory, which the
//! guards protect like its other files.
//!
//! Best effort on the hot path: a grant that cannot be read or removed is
//! not used (the rule decides as always); a code that cannot be recorded is
//! not offered.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::rules::Decision;
use crate::paths::Locations;
use crate::rules::Hit;
use crate::runtime::types::EventInput;

/// How long a code can be allowed after the refusal that named it.
pub const PENDING_SECS: u64 = 3600;
/// How long an allowed call waits to be made again.
pub const GRANT_SECS: u64 = 600;
/// Hex digits in a code.
const CODE_LEN: usize = 10;

/// A refused call the person may allow once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Call {
    pub code: String,
    pub rule: String,
    pub event: String,
    /// The tool, for a tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What the rule matched, as the refusal showed it.
    pub matched: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
    /// Seconds since the epoch: refused, then allowed.
    pub refused_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_at: Option<u64>,
}

fn dir(loc: &Locations) -> PathBuf {
    loc.state_dir.join("allow-once")
}

fn pending_file(loc: &Locations, code: &str) -> PathBuf {
    dir(loc).join("pending").join(format!("{code}.json"))
}

fn granted_file(loc: &Locations, code: &str) -> PathBuf {
    dir(loc).join("granted").join(format!("{code}.json"))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether `code` has the shape of a code (and so names no other path).
pub fn is_code(code: &str) -> bool {
    code.len() == CODE_LEN
        && code
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The code of `rule` refusing `input` in `project`: the same for the same
/// call made again, different for any other call, rule or project.
pub fn code(rule: &str, input: &EventInput, project: Option<&Path>) -> String {
    let field = |k: &str| input.fields.get(k).cloned().unwrap_or(Value::Null);
    let what = json!([
        rule,
        input.event.as_str(),
        field("toolName"),
        field("toolInput"),
        field("prompt"),
        project.map(|p| p.display().to_string()),
    ]);
    let digest = crate::hash::digest_bytes(what.to_string().as_bytes());
    digest.chars().take(CODE_LEN).collect()
}

fn read(path: &Path) -> Option<Call> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn write(path: &Path, call: &Call) -> std::io::Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    crate::base::fs::create_private_dir(parent)?;
    let bytes = serde_json::to_vec_pretty(call).map_err(std::io::Error::other)?;
    crate::trust::store::write_atomic(path, &bytes, 0o600)
}

/// What [`apply`] did besides dropping hits: lines for the person.
#[derive(Debug, Default)]
pub struct Applied {
    pub notices: Vec<String>,
    /// `allow-once:<rule>` for each rule waived, for the record.
    pub waived: Vec<String>,
}

/// Takes out of `hits` each deny or ask the person allowed once for this
/// exact call (using the grant up), and names the code in the reason of
/// every other deny or ask, recording it as pending.
pub fn apply(hits: &mut Vec<Hit>, input: &EventInput, loc: &Locations) -> Applied {
    let mut out = Applied::default();
    if !input.event.is_gate_capable() {
        return out;
    }
    let project = loc.project_root.as_deref();
    let t = now();
    hits.retain_mut(|h| {
        if !matches!(h.decision, Decision::Deny | Decision::Ask) {
            return true;
        }
        let code = code(&h.id, input, project);
        let granted = granted_file(loc, &code);
        if let Some(g) = read(&granted)
            && g.rule == h.id
            && g.allowed_at.is_some_and(|a| t.saturating_sub(a) <= GRANT_SECS)
            && std::fs::remove_file(&granted).is_ok()
        {
            out.notices.push(format!(
                "allowed once by you (`keryx-hooks allow-once {code}`): rule `{}` let {} through",
                crate::escape::escape(&h.id),
                h.matched
            ));
            out.waived.push(format!("allow-once:{}", h.id));
            return false;
        }
        let pending = pending_file(loc, &code);
        let known = read(&pending).is_some_and(|p| t.saturating_sub(p.refused_at) <= PENDING_SECS);
        let call = Call {
            code: code.clone(),
            rule: h.id.clone(),
            event: input.event.as_str().to_owned(),
            tool: input
                .fields
                .get("toolName")
                .and_then(Value::as_str)
                .map(str::to_owned),
            matched: h.matched.clone(),
            project: project.map(Path::to_path_buf),
            refused_at: t,
            allowed_at: None,
        };
        if known || write(&pending, &call).is_ok() {
            h.reason = format!(
                "{}\n(If this exact call is wanted, the person can allow it once by running `keryx-hooks allow-once {code}` in their own terminal.)",
                h.reason.trim_end()
            );
        }
        true
    });
    out
}

/// The refused calls waiting to be allowed, newest first; expired ones are
/// removed.
pub fn pending(loc: &Locations) -> Vec<Call> {
    let t = now();
    let Ok(entries) = std::fs::read_dir(dir(loc).join("pending")) else {
        return Vec::new();
    };
    let mut out: Vec<Call> = entries
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let call = read(&path)?;
            if t.saturating_sub(call.refused_at) > PENDING_SECS {
                let _ = std::fs::remove_file(&path);
                return None;
            }
            Some(call)
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.refused_at));
    out
}

/// The pending call with `code`, when it is still within its hour.
pub fn find(loc: &Locations, code: &str) -> Option<Call> {
    if !is_code(code) {
        return None;
    }
    read(&pending_file(loc, code)).filter(|c| now().saturating_sub(c.refused_at) <= PENDING_SECS)
}

/// Allows `call` once: the grant is written, the pending record removed.
pub fn grant(loc: &Locations, call: &Call) -> std::io::Result<()> {
    let mut g = call.clone();
    g.allowed_at = Some(now());
    write(&granted_file(loc, &call.code), &g)?;
    let _ = std::fs::remove_file(pending_file(loc, &call.code));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;

    fn input(command: &str) -> EventInput {
        let mut i = EventInput::new(Event::PreToolUse, "s1");
        i.fields.insert("toolName".into(), json!("Bash"));
        i.fields
            .insert("toolInput".into(), json!({"command": command}));
        i
    }

    #[test]
    fn a_code_names_one_call_of_one_rule_in_one_project() {
        let p = Some(Path::new("/p"));
        let a = code("destructive/git-reset-hard", &input("git reset --hard"), p);
        assert!(is_code(&a), "{a}");
        assert_eq!(
            a,
            code("destructive/git-reset-hard", &input("git reset --hard"), p)
        );
        assert_ne!(
            a,
            code(
                "destructive/git-reset-hard",
                &input("git reset --hard HEAD~1"),
                p
            )
        );
        assert_ne!(a, code("other", &input("git reset --hard"), p));
        assert_ne!(
            a,
            code(
                "destructive/git-reset-hard",
                &input("git reset --hard"),
                Some(Path::new("/q"))
            )
        );
        assert!(!is_code("../../x.json"));
        assert!(!is_code("ABCDEF0123"));
    }
}
