//! The bodies of `keryx.security-check-input` and `keryx.security-check-output`:
//! find the text a payload would send to the model or write to disk, in the
//! canonical keryx shape or any host's own, and scan it. In-process entry
//! points for the runtime; `commands/security.rs` wraps them for a spawn.

pub use crate::settings::rules_unavailable;
use serde_json::Value;

use super::ports::Verdict;
use super::scanner::{Finding, Rules, Target};
use crate::escape::escape;
use crate::settings::Settings;

/// The `--source` of the built-in `keryx.security-check-input`
/// registration: a prompt is untrusted text from outside the session.
pub const DEFAULT_INPUT_SOURCE: &str = "untrusted-external";

/// `scan` with the user's rules, or a deny naming what is wrong with them,
/// in process or spawned alike: a rule the user added must not be
/// silently dropped.
pub fn with_rules(settings: &Settings, scan: impl FnOnce(&Rules) -> Verdict) -> Verdict {
    match settings.rules() {
        Ok(rules) => scan(rules),
        Err(why) => Verdict::Deny(format!(
            "{}; fix the file (`keryx-hooks doctor` shows it)",
            rules_unavailable(why)
        )),
    }
}

/// UserPromptSubmit, as the built-in registration runs it (source
/// [`DEFAULT_INPUT_SOURCE`]): see [`check_input_from`].
pub fn check_input(payload: &Value, rules: &Rules) -> Verdict {
    check_input_from(payload, rules, DEFAULT_INPUT_SOURCE)
}

/// UserPromptSubmit: deny a prompt that carries a secret or a hidden
/// instruction. A payload without a prompt has nothing to scan. Every
/// source is scanned with the same rules (the spec gives sources no rules
/// of their own); the reason names the source the prompt came from.
pub fn check_input_from(payload: &Value, rules: &Rules, source: &str) -> Verdict {
    let Some(prompt) = prompt_of(payload) else {
        return Verdict::Allow;
    };
    let findings = rules.scan(prompt, Target::Input);
    match findings.first() {
        None => Verdict::Allow,
        Some(f) => Verdict::Deny(format!(
            "the prompt (source `{}`) contains {}{}; remove it and refer to the secret by name \
             instead (an environment variable such as `$API_TOKEN`, or a secrets manager); {}",
            source_label(source),
            f.describe(),
            more(findings.len()),
            f.how_to_proceed(super::SECURITY_CHECK_INPUT)
        )),
    }
}

/// A `--source` value as a reason shows it: escaped, at most 64 bytes.
fn source_label(source: &str) -> String {
    let source = source.trim();
    if source.is_empty() {
        return "unspecified".to_owned();
    }
    let mut end = source.len().min(64);
    while !source.is_char_boundary(end) {
        end -= 1;
    }
    let cut = if end < source.len() { "…" } else { "" };
    format!("{}{cut}", escape(&source[..end]))
}

/// PreToolUse on a write: deny content that would put a secret (or a hidden
/// instruction) on disk.
pub fn check_output(payload: &Value, rules: &Rules) -> Verdict {
    for piece in written_texts(payload) {
        let findings: Vec<Finding> = rules
            .scan(&piece.text, Target::Output)
            .into_iter()
            .filter(|f| piece.counts(f.line))
            .collect();
        if let Some(f) = findings.first() {
            return Verdict::Deny(format!(
                "{} would write {}{}; keep secrets out of files: write a placeholder and \
                 read the secret at run time from an environment variable or a secrets \
                 manager; {}",
                piece.label(f.line),
                f.describe(),
                more(findings.len()),
                f.how_to_proceed(super::SECURITY_CHECK_OUTPUT)
            ));
        }
    }
    Verdict::Allow
}

/// The write gate as the built-in registration runs it at `loc`: a write
/// of what decides enforcement is refused first (`self_protect`), then the
/// content is scanned with the user's rules.
pub fn check_output_at(payload: &Value, loc: &crate::settings::Here) -> Verdict {
    let cfg = super::ctx_guard::CtxGuardConfig::from_locations(loc);
    match super::self_protect::check_write(payload, &cfg) {
        Verdict::Allow => with_rules(loc.settings(), |rules| check_output(payload, rules)),
        deny => deny,
    }
}

fn more(n: usize) -> String {
    match n {
        0 | 1 => String::new(),
        2 => " and 1 more finding".to_owned(),
        n => format!(" and {} more findings", n - 1),
    }
}

/// The prompt of UserPromptSubmit in every host's spelling we know: keryx,
/// Claude Code, Codex, Gemini (BeforeAgent), Cursor (beforeSubmitPrompt),
/// Copilot and Kimi all call it `prompt`; some nest it under `input`.
fn prompt_of(payload: &Value) -> Option<&str> {
    payload
        .get("prompt")
        .or_else(|| payload.pointer("/input/prompt"))
        .or_else(|| payload.get("userPrompt"))
        .and_then(Value::as_str)
}

/// One stretch of text a write would put on disk.
#[derive(Debug)]
struct Piece {
    /// `Write to `a.rs``, `Edit of `a.rs``, …
    what: String,
    text: String,
    /// For a patch: which lines of `text` are added, and the file each
    /// line belongs to; findings on other lines do not count.
    patch: Option<Vec<Option<String>>>,
}

impl Piece {
    fn counts(&self, line: usize) -> bool {
        match &self.patch {
            None => true,
            Some(files) => files.get(line - 1).is_some_and(Option::is_some),
        }
    }

    fn label(&self, line: usize) -> String {
        match self
            .patch
            .as_ref()
            .and_then(|f| f.get(line - 1))
            .and_then(Option::as_ref)
        {
            Some(file) => format!("{} (the added lines for `{}`)", self.what, escape(file)),
            None => self.what.clone(),
        }
    }
}

/// The tool input, wherever this payload keeps it.
fn tool_input(payload: &Value) -> Option<&Value> {
    payload
        .get("toolInput")
        .or_else(|| payload.get("tool_input"))
        .or_else(|| payload.get("toolArgs"))
        .or_else(|| payload.get("tool_args"))
}

fn tool_name(payload: &Value) -> &str {
    payload
        .get("toolName")
        .or_else(|| payload.get("tool_name"))
        .and_then(Value::as_str)
        .unwrap_or("write")
}

/// Fields that hold what a write puts on disk, across hosts: Claude Code
/// Write `content` and Edit `new_string`, Gemini `write_file` `content` and
/// `replace` `new_string`, Copilot `create` `file_text` and `str_replace`
/// `new_str`, NotebookEdit `new_source`.
const NEW_TEXT_FIELDS: [&str; 5] = [
    "content",
    "new_string",
    "new_str",
    "file_text",
    "new_source",
];

/// Fields a patch envelope arrives in (Codex `apply_patch`).
const PATCH_FIELDS: [&str; 3] = ["command", "input", "patch"];

/// Fields that never hold new content: scanning them in the fallback would
/// deny removing a secret from a file.
const NOT_WRITTEN: [&str; 5] = ["old_string", "old_str", "file_path", "path", "description"];

fn written_texts(payload: &Value) -> Vec<Piece> {
    let tool = escape(tool_name(payload));
    let input = tool_input(payload);
    let file = input
        .and_then(|i| {
            i.get("file_path")
                .or_else(|| i.get("path"))
                .or_else(|| i.get("absolute_path"))
        })
        .or_else(|| payload.get("file_path"))
        .and_then(Value::as_str)
        .map(escape);
    let target = match &file {
        Some(f) => format!("{tool} of `{f}`"),
        None => tool.clone(),
    };
    let mut out = Vec::new();

    if let Some(input) = input {
        if let Some(s) = input.as_str() {
            // Codex's freeform apply_patch: the whole input is the envelope.
            push_patch_or_text(&mut out, &tool, &target, s);
        }
        for field in NEW_TEXT_FIELDS {
            if let Some(s) = input.get(field).and_then(Value::as_str) {
                out.push(Piece {
                    what: format!("{target} ({field})"),
                    text: s.to_owned(),
                    patch: None,
                });
            }
        }
        push_edits(&mut out, &target, input.get("edits"));
        for field in PATCH_FIELDS {
            match input.get(field) {
                Some(Value::String(s)) if is_patch(s) => {
                    push_patch_or_text(&mut out, &tool, &target, s)
                }
                Some(Value::Array(argv)) => {
                    for s in argv
                        .iter()
                        .filter_map(Value::as_str)
                        .filter(|s| is_patch(s))
                    {
                        push_patch_or_text(&mut out, &tool, &target, s);
                    }
                }
                _ => {}
            }
        }
    }
    // Cursor's afterFileEdit and Codex's top-level `input`.
    push_edits(&mut out, &target, payload.get("edits"));
    if let Some(s) = payload
        .get("input")
        .and_then(Value::as_str)
        .filter(|s| is_patch(s))
    {
        push_patch_or_text(&mut out, &tool, &target, s);
    }

    if out.is_empty()
        && let Some(Value::Object(map)) = input
    {
        // An input shape we do not know: scan every string that is not
        // known to be old content or a path, rather than let it through.
        for (k, v) in map {
            if NOT_WRITTEN.contains(&k.as_str()) {
                continue;
            }
            collect_strings(v, &mut |s| {
                out.push(Piece {
                    what: format!("{target} ({})", escape(k)),
                    text: s.to_owned(),
                    patch: None,
                });
            });
        }
    }
    out
}

fn push_edits(out: &mut Vec<Piece>, target: &str, edits: Option<&Value>) {
    let Some(Value::Array(edits)) = edits else {
        return;
    };
    for (i, e) in edits.iter().enumerate() {
        for field in NEW_TEXT_FIELDS {
            if let Some(s) = e.get(field).and_then(Value::as_str) {
                out.push(Piece {
                    what: format!("{target} (edits[{i}].{field})"),
                    text: s.to_owned(),
                    patch: None,
                });
            }
        }
    }
}

fn collect_strings(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|v| collect_strings(v, f)),
        Value::Object(m) => m.values().for_each(|v| collect_strings(v, f)),
        _ => {}
    }
}

fn is_patch(s: &str) -> bool {
    s.trim_start().starts_with("*** Begin Patch")
}

fn push_patch_or_text(out: &mut Vec<Piece>, tool: &str, target: &str, s: &str) {
    if is_patch(s) {
        let (text, files) = mask_patch(s);
        out.push(Piece {
            what: format!("{tool} patch"),
            text,
            patch: Some(files),
        });
    } else {
        out.push(Piece {
            what: target.to_owned(),
            text: s.to_owned(),
            patch: None,
        });
    }
}

/// The apply_patch envelope with everything but the added lines blanked.
/// Line numbers stay those of the envelope, so a finding's position points
/// into what the model sent; each kept line remembers its file.
///
/// ```text
/// *** Begin Patch
/// *** Add File: path      every following line is `+content`
/// *** Update File: path   hunks: `@@`, ` context`, `-removed`, `+added`
/// *** Move to: path
/// *** Delete File: path
/// *** End Patch
/// ```
fn mask_patch(patch: &str) -> (String, Vec<Option<String>>) {
    let mut text = String::with_capacity(patch.len());
    let mut files = Vec::new();
    let mut current: Option<String> = None;
    for line in patch.split('\n') {
        if let Some(rest) = line.strip_prefix("*** ") {
            for header in ["Add File: ", "Update File: ", "Delete File: ", "Move to: "] {
                if let Some(path) = rest.strip_prefix(header) {
                    current = Some(path.trim().to_owned());
                }
            }
            files.push(None);
        } else if let Some(added) = line.strip_prefix('+') {
            // Keep the column: the `+` becomes a space.
            text.push(' ');
            text.push_str(added);
            files.push(Some(current.clone().unwrap_or_else(|| "?".to_owned())));
        } else {
            files.push(None);
        }
        text.push('\n');
    }
    (text, files)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key() -> String {
        ["AKIA", "Z7Q4M2XJ5PRT3LKB"].concat()
    }

    fn deny_reason(v: Verdict) -> String {
        match v {
            Verdict::Deny(r) => r,
            Verdict::Allow => panic!("expected a deny"),
        }
    }

    fn input(payload: Value) -> Verdict {
        check_input(&payload, &Rules::builtin())
    }

    fn output(payload: Value) -> Verdict {
        check_output(&payload, &Rules::builtin())
    }

    #[test]
    fn input_denies_a_secret_prompt_with_kind_and_position_only() {
        let k = key();
        let r = deny_reason(input(
            json!({"prompt": format!("deploy with\nkey {k} please"), "sessionId": "s"}),
        ));
        assert!(r.contains("AWS access key id"), "{r}");
        assert!(r.contains("line 2, column 5"), "{r}");
        assert!(!r.contains(&k), "{r}");
        assert!(!r.contains("Z7Q4M2XJ5PRT3LKB"), "{r}");
    }

    #[test]
    fn input_reasons_name_the_source_and_every_source_is_scanned() {
        let payload = json!({"prompt": format!("key {}", key())});
        for (source, shown) in [
            ("untrusted-external", "`untrusted-external`"),
            ("user", "`user`"),
            ("", "`unspecified`"),
            ("a\u{1b}[2Jb", "`a\\x1B[2Jb`"),
        ] {
            let r = deny_reason(check_input_from(&payload, &Rules::builtin(), source));
            assert!(
                r.starts_with(&format!(
                    "the prompt (source {shown}) contains AWS access key id"
                )),
                "{source:?}: {r}"
            );
        }
        let long = "s".repeat(100);
        let r = deny_reason(check_input_from(&payload, &Rules::builtin(), &long));
        assert!(r.contains(&format!("`{}…`", "s".repeat(64))), "{r}");
        // The in-process entry point is the built-in registration's source.
        assert!(deny_reason(input(payload)).contains("(source `untrusted-external`)"));
        assert_eq!(
            check_input_from(&json!({"prompt": "hello"}), &Rules::builtin(), "user"),
            Verdict::Allow
        );
    }

    #[test]
    fn input_allows_clean_and_missing_prompts() {
        assert_eq!(
            input(json!({"prompt": "add a --json flag to list"})),
            Verdict::Allow
        );
        assert_eq!(input(json!({"event": "UserPromptSubmit"})), Verdict::Allow);
    }

    #[test]
    fn input_denies_hidden_instructions_and_counts_the_rest() {
        let r = deny_reason(input(json!({"prompt": "a\u{202E}b\u{202E}c\u{202E}"})));
        assert!(r.contains("bidi") && r.contains("2 more findings"), "{r}");
        assert!(!r.contains('\u{202E}'));
    }

    #[test]
    fn reasons_escape_user_controlled_text() {
        let r = deny_reason(output(json!({
            "tool_name": "Write",
            "tool_input": {"file_path": "/p/a\u{1b}[2J.txt", "content": key()}
        })));
        assert!(r.contains("a\\x1B[2J.txt"), "{r}");
        assert!(!r.contains('\u{1b}'));
    }

    #[test]
    fn output_scans_each_hosts_write_shapes() {
        let k = key();
        let shapes = [
            // keryx canonical
            json!({"toolName": "Write", "toolInput": {"file_path": "a.env", "content": format!("A={k}")}}),
            // Claude Code Write / Edit / MultiEdit
            json!({"tool_name": "Write", "tool_input": {"file_path": "a", "content": k}}),
            json!({"tool_name": "Edit", "tool_input": {"file_path": "a", "old_string": "x", "new_string": k}}),
            json!({"tool_name": "MultiEdit", "tool_input": {"file_path": "a", "edits": [{"old_string": "x", "new_string": k}]}}),
            // Gemini write_file / replace
            json!({"tool_name": "write_file", "tool_input": {"file_path": "a", "content": k}}),
            json!({"tool_name": "replace", "tool_input": {"file_path": "a", "old_string": "x", "new_string": k}}),
            // Copilot create / str_replace
            json!({"toolName": "create", "toolArgs": {"path": "a", "file_text": k}}),
            json!({"toolName": "edit", "toolArgs": {"path": "a", "old_str": "x", "new_str": k}}),
            // Cursor afterFileEdit
            json!({"file_path": "a", "edits": [{"old_string": "", "new_string": k}]}),
            // Codex apply_patch, in `command` (string and argv) and freeform
            json!({"tool_name": "apply_patch", "tool_input": {"command": format!("*** Begin Patch\n*** Add File: a.py\n+KEY = \"{k}\"\n*** End Patch\n")}}),
            json!({"tool_name": "apply_patch", "tool_input": {"command": ["apply_patch", format!("*** Begin Patch\n*** Update File: b.py\n@@\n-old\n+new {k}\n*** End Patch")]}}),
            json!({"tool_name": "apply_patch", "tool_input": format!("*** Begin Patch\n*** Add File: c\n+{k}\n*** End Patch")}),
            json!({"tool_name": "apply_patch", "input": format!("*** Begin Patch\n*** Add File: c\n+{k}\n*** End Patch")}),
            // An unknown shape still gets scanned.
            json!({"tool_name": "Write", "tool_input": {"file_path": "a", "body": {"text": k}}}),
        ];
        for p in shapes {
            let r = deny_reason(output(p.clone()));
            assert!(
                r.contains("AWS access key id") && !r.contains(&k),
                "{p}: {r}"
            );
        }
    }

    #[test]
    fn output_allows_removing_a_secret_and_clean_writes() {
        let k = key();
        let clean = [
            json!({"tool_name": "Edit", "tool_input": {"file_path": "a", "old_string": k, "new_string": "KEY = os.environ[\"KEY\"]"}}),
            json!({"tool_name": "apply_patch", "tool_input": {"command": format!("*** Begin Patch\n*** Update File: a.py\n@@\n-KEY = \"{k}\"\n+KEY = os.environ[\"KEY\"]\n {k} context\n*** End Patch")}}),
            json!({"tool_name": "Write", "tool_input": {"file_path": "a", "content": "fn main() {}\n"}}),
            json!({"tool_name": "Write", "tool_input": {"file_path": "a", "body": {"text": "hello"}}}),
        ];
        for p in clean {
            assert_eq!(output(p.clone()), Verdict::Allow, "{p}");
        }
    }

    #[test]
    fn patch_reasons_name_the_file_and_envelope_line() {
        let k = key();
        let patch = format!(
            "*** Begin Patch\n*** Update File: src/a.py\n@@\n ctx\n*** Add File: conf/keys.py\n+# keys\n+AWS = \"{k}\"\n*** End Patch"
        );
        let r = deny_reason(output(
            json!({"tool_name": "apply_patch", "tool_input": {"command": patch}}),
        ));
        assert!(
            r.contains("`conf/keys.py`") && r.contains("line 7, column 9"),
            "{r}"
        );
    }

    #[test]
    fn the_projects_own_source_tree_scans_clean() {
        // "Zero false denies on the project's own source tree": every file
        // written as-is through check-output.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let rules = Rules::builtin();
        let mut checked = 0;
        for dir in ["src", "tests", "adapters", "schema"] {
            for entry in walkdir::WalkDir::new(root.join(dir))
                .into_iter()
                .filter_map(Result::ok)
            {
                if !entry.file_type().is_file() {
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(entry.path()) else {
                    continue;
                };
                let payload = json!({"tool_name": "Write", "tool_input": {"file_path": entry.path(), "content": text}});
                if let Verdict::Deny(r) = check_output(&payload, &rules) {
                    panic!("{}: {r}", entry.path().display());
                }
                checked += 1;
            }
        }
        assert!(checked > 10, "walked only {checked} files");
    }
}
