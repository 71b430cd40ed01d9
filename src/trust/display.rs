//! What a human sees about trust: the review `keryx-hooks trust` prints
//! before asking, and the header, row marks and JSON that `list` shows.
//! A committed hooks file is attacker-controlled, so every id, matcher,
//! argv token, cwd, env pair and description goes through `escape` and the
//! review says when anything had to be escaped. A line break or a tab in an
//! argv token or env value is a script, not hidden text: it is shown on its
//! lines, each continuation behind a `|` gutter so a script line can never
//! pass for a line of the review.

use std::path::Path;

use serde_json::{Value, json};

use crate::config::model::{Registration, RunsIn};
use crate::escape::{escape_flagged, escape_lines, is_dangerous};
use crate::trust::digest;
use crate::trust::{ProjectTrust, TrustState};

/// What starts each continuation line of a multi-line argv token or env
/// value in the review.
const CONTINUATION: &str = "    | ";

/// Escapes repository-controlled text, remembering whether anything needed
/// it and which characters did.
#[derive(Default)]
struct Esc {
    flagged: bool,
    found: Vec<char>,
}

impl Esc {
    fn note(&mut self, s: &str, flagged: bool, lines: bool) {
        if !flagged {
            return;
        }
        self.flagged = true;
        let hidden = s
            .chars()
            .filter(|c| is_dangerous(*c) && !(lines && matches!(c, '\n' | '\t')));
        for c in hidden {
            if !self.found.contains(&c) {
                self.found.push(c);
            }
        }
    }

    fn text(&mut self, s: &str) -> String {
        let (out, flagged) = escape_flagged(s);
        self.note(s, flagged, false);
        out
    }

    /// Quoted, so token boundaries and spaces inside a token are visible;
    /// `escape` already doubles backslashes, so `\"` is unambiguous.
    fn quoted(&mut self, s: &str) -> String {
        format!("\"{}\"", self.text(s).replace('"', "\\\""))
    }

    /// [`Esc::quoted`] for an argv token or env value: line breaks and tabs
    /// are kept (see [`escape_lines`]) and do not count as hidden.
    fn script(&mut self, s: &str) -> String {
        let (out, flagged) = escape_lines(s, CONTINUATION);
        self.note(s, flagged, true);
        format!("\"{}\"", out.replace('"', "\\\""))
    }
}

/// The review of every command hook `hooks` would register, in file order.
pub fn review(trust: &ProjectTrust, hooks: &[&Registration], root: &Path) -> String {
    let mut esc = Esc::default();
    let mut hooks: Vec<&Registration> = hooks.to_vec();
    hooks.sort_by_key(|r| r.index);
    let file = trust
        .file
        .clone()
        .unwrap_or_else(|| root.join(".metaproject/hooks.json"));
    let mut out = format!(
        "`{}` defines {} command {}. Trusting it lets {} run, exactly as shown:\n",
        esc.text(&file.display().to_string()),
        hooks.len(),
        if hooks.len() == 1 { "hook" } else { "hooks" },
        if hooks.len() == 1 { "it" } else { "them" },
    );
    for r in &hooks {
        out.push('\n');
        out.push_str(&hook_block(r, root, &mut esc));
    }
    out.push('\n');
    match &trust.state {
        TrustState::Changed => out.push_str(
            "note: this file changed since you last trusted it; its command hooks do not run until you trust this version\n",
        ),
        TrustState::Untrusted => out.push_str(
            "note: this project is not trusted yet; its command hooks do not run until you trust it\n",
        ),
        _ => {}
    }
    if trust.pin_scripts {
        out.push_str(
            "note: `trust.pin_scripts` is on: editing any in-project file named above revokes trust\n",
        );
    }
    if esc.flagged {
        out.push_str(
            "note: some text above contained control, escape, bidi-override, zero-width or other invisible characters; they are shown as \\xHH / \\uHHHH escapes, not as written\n",
        );
    }
    out
}

/// The review blocks of `hooks` alone (in the order given), as the trust
/// review shows them, and whether anything had to be escaped; `root` is the
/// directory whose files the commands may name.
pub fn command_blocks(hooks: &[&Registration], root: &Path) -> (String, bool) {
    let mut esc = Esc::default();
    let mut out = String::new();
    for r in hooks {
        out.push('\n');
        out.push_str(&hook_block(r, root, &mut esc));
    }
    (out, esc.flagged)
}

/// The distinct characters the review of `hooks` had to escape (control,
/// escape, bidi-override, zero-width or other invisible characters): text
/// that reads one way and runs another, which `trust` only records with
/// `--force`; in the order they first appear, each written as its escape
/// (`\xAD`). A script's line breaks and tabs do not count.
pub fn hidden_characters(hooks: &[&Registration], root: &Path) -> Vec<String> {
    let mut esc = Esc::default();
    for r in hooks {
        hook_block(r, root, &mut esc);
    }
    esc.found
        .iter()
        .map(|c| crate::escape::escaped_char(*c))
        .collect()
}

fn hook_block(r: &Registration, root: &Path, esc: &mut Esc) -> String {
    let cmd = r.command().expect("only command hooks are reviewed");
    let profiles = if r.profiles.is_empty() {
        "all".to_owned()
    } else {
        r.profiles
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut s = format!(
        "hook `{}` on {}\n  matcher={} class={} runsIn={} network={}\n  timeoutMs={} appliesToChildAgents={} profiles={} enabled={}\n",
        esc.text(&r.id),
        r.event,
        esc.quoted(&r.matcher.source()),
        r.class,
        r.runs_in,
        r.network,
        r.timeout_ms,
        r.applies_to_child_agents,
        profiles,
        r.enabled,
    );
    if let Some(d) = &r.description {
        s.push_str(&format!("  description: {}\n", esc.text(d)));
    }
    let argv: Vec<String> = cmd.argv.iter().map(|a| esc.script(a)).collect();
    s.push_str(&format!("  argv: {}\n", argv.join(" ")));
    match &cmd.cwd {
        Some(cwd) => s.push_str(&format!("  cwd: {}\n", esc.quoted(cwd))),
        None => s.push_str("  cwd: (the project root)\n"),
    }
    for (k, v) in &cmd.env {
        s.push_str(&format!("  env: {}={}\n", esc.text(k), esc.script(v)));
    }
    for name in &cmd.env_passthrough {
        s.push_str(&format!(
            "  env passed through: {} (its value where the host runs)\n",
            esc.text(name)
        ));
    }
    for f in digest::project_files(r, root) {
        s.push_str(&format!(
            "  file: {} is a file in this project; trust covers this command line, not what that file contains: read it too\n",
            esc.quoted(&f.rel)
        ));
    }
    if r.runs_in == RunsIn::Unsandboxed {
        s.push_str(
            "  warning: runs unsandboxed, outside the OS sandbox, with your full permissions\n",
        );
    }
    s
}

/// The line `list` prints above the rows when project hooks are held back.
pub fn list_header(trust: &ProjectTrust) -> Option<String> {
    if trust.hook_ids.is_empty() {
        return None;
    }
    let file = trust
        .file
        .as_deref()
        .map(|f| format!("`{}`", crate::escape::escape(&f.display().to_string())))
        .unwrap_or_else(|| "`.metaproject/hooks.json`".into());
    Some(match &trust.state {
        TrustState::Changed => format!(
            "project trust: {file} changed since you trusted it; rows marked trust=changed since trusted do not run (review and trust this version: `keryx-hooks trust`)"
        ),
        TrustState::StoreRefused(why) => format!(
            "project trust: the trust store cannot be used ({}), so nothing in {file} is trusted; rows marked trust=untrusted do not run",
            crate::escape::escape(why)
        ),
        _ => format!(
            "project trust: {file} is not trusted; rows marked trust=untrusted do not run (review and trust it: `keryx-hooks trust`)"
        ),
    })
}

/// The `trust=` value for a `list` row, when the row is held back.
pub fn row_mark(trust: &ProjectTrust, reg: &Registration) -> Option<&'static str> {
    if !trust.holds_back(reg) {
        return None;
    }
    Some(match trust.state {
        TrustState::Changed => "changed since trusted",
        _ => "untrusted",
    })
}

/// `projectTrust` in `list --json`.
pub fn to_json(trust: &ProjectTrust) -> Value {
    json!({
        "state": trust.state.as_str(),
        "reason": match &trust.state {
            TrustState::StoreRefused(why) => Some(why.as_str()),
            _ => None,
        },
        "projectRoot": trust.project_root,
        "file": trust.file,
        "digest": trust.digest,
        "pinScripts": trust.pin_scripts,
        "hookIds": trust.hook_ids,
        "warnings": trust.warnings,
    })
}

/// The per-row `trust` value in `list --json`: the state for a project
/// command hook; other rows have none (the published schema says string).
pub fn row_json(trust: &ProjectTrust, reg: &Registration) -> Option<Value> {
    if reg.scope != crate::config::model::Scope::Project || reg.command().is_none() {
        return None;
    }
    Some(if trust.holds_back(reg) {
        json!(trust.state.as_str())
    } else {
        json!("trusted")
    })
}

/// `regs` plus the held-back registrations, in merge order, for `list`.
pub fn with_held_back(regs: &[Registration], trust: &ProjectTrust) -> Vec<Registration> {
    let mut all: Vec<Registration> = regs.iter().chain(&trust.held_back).cloned().collect();
    all.sort_by(|a, b| {
        (a.scope, a.index)
            .cmp(&(b.scope, b.index))
            .then_with(|| a.id.cmp(&b.id))
    });
    all
}

/// A `list` row with ` trust=<mark>` at the end of its `scope=` line.
pub fn mark_row_text(text: &str, mark: &str) -> String {
    let mut out = String::with_capacity(text.len() + mark.len() + 8);
    let mut marked = false;
    for line in text.split_inclusive('\n') {
        if !marked && line.trim_start().starts_with("scope=") {
            out.push_str(line.trim_end_matches('\n'));
            out.push_str(&format!(" trust={mark}\n"));
            marked = true;
        } else {
            out.push_str(line);
        }
    }
    out
}
