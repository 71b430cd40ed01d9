//! `keryx-hooks test <id>`: runs one hook once through the real runner (the
//! in-process built-ins through their ports) against a synthetic call, one
//! built from `--tool`/`--command`/`--file`, or a file, and reports the
//! payload it read, what it did and what a failure would mean.

use crate::error::ExitStatus;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::cli::TestArgs;
use crate::config::matcher::Matcher;
use crate::config::model::{Profile, Registration, Scope};
use crate::error::{CmdResult, CommandError};
use crate::escape::escape;
use crate::events::Event;
use crate::output;
use crate::runtime::fire::{self, FireContext, Invocation};
use crate::runtime::reply::HookReply;
use crate::runtime::select;
use crate::runtime::semantics::{self, Effect};
use crate::runtime::types::{EventInput, Outcome};

/// Captured output shown per stream.
const SHOW_BYTES: usize = 4096;

pub fn run(args: &TestArgs) -> CmdResult {
    if let Some(rule) = &args.rule {
        return super::test_rule::run(rule, args);
    }
    let id = args.id.as_deref().unwrap_or_default();
    let loc = super::here();
    super::print_location_warnings(&loc);
    let profile = super::profile_or_settings(args.profile, &loc);
    let user_file = match &args.snapshot {
        Some(k) => {
            let dir = loc.snapshot_dir(k);
            if !dir.is_dir() {
                return Err(CommandError::user(format!(
                    "snapshot `{}` is not installed (no `{}`)",
                    escape(k),
                    escape(&dir.display().to_string())
                ))
                .hint("keryx-hooks status"));
            }
            Some(dir.join("hooks.json"))
        }
        None => None,
    };
    let (mut loaded, _) = crate::pipeline::load_layers(&loc, user_file, None);
    if !loaded.ok() {
        for d in loaded.errors() {
            output::err_line(&d.to_string());
        }
        return Err(
            CommandError::config("the hook config does not load").hint("keryx-hooks validate")
        );
    }
    let before: Vec<(String, Scope)> = loaded
        .registrations
        .iter()
        .map(|r| (r.id.clone(), r.scope))
        .collect();
    let mut notices = Vec::new();
    let trust =
        crate::trust::apply_for_run(&mut loaded, &loc, &mut notices, Event::SessionStart, true);
    let event = match &args.event {
        Some(e) => Some(e.parse::<Event>().map_err(CommandError::user)?),
        None => None,
    };
    let candidates: Vec<&Registration> = loaded
        .registrations
        .iter()
        .filter(|r| r.id == id && event.is_none_or(|e| r.event == e))
        .collect();
    // A tool call is tested on the hook's first tool event.
    let wants_call = args.tool.is_some() || args.command.is_some() || args.file.is_some();
    let first = candidates
        .iter()
        .find(|r| !wants_call || r.event.is_per_tool())
        .or(candidates.first());
    let Some(reg) = first.copied() else {
        let was_project = before.iter().any(|(i, s)| i == id && *s == Scope::Project);
        if was_project {
            return Err(CommandError::user(format!(
                "`{}` is a project command hook that is not trusted; refusing to run it",
                escape(id)
            ))
            .hint("review it with `keryx-hooks trust`"));
        }
        return Err(CommandError::user(format!(
            "no hook `{}`{}",
            escape(id),
            event.map(|e| format!(" on {e}")).unwrap_or_default()
        ))
        .hint("keryx-hooks list"));
    };
    let input = match &args.payload_file {
        Some(p) => input_from_file(p, reg.event)?,
        None => synthetic(reg, flag_call(args, reg)?),
    };
    let builtin = |port, inp: &EventInput| -> Result<HookReply, String> {
        crate::builtins::run_port(port, inp, true, "test-run", &loc)
    };
    let in_process =
        |r: &Registration, payload: &Value| crate::builtins::run_in_process(r, payload, &loc);
    let ambient = |k: &str| std::env::var(k).ok();
    let ctx = FireContext {
        profile,
        project_root: loc.project_root.as_deref(),
        cwd: &loc.cwd,
        run_id: "test-run",
        builtin: &builtin,
        in_process: &in_process,
        ambient: &ambient,
        host_env: &[],
        locations: &loc,
        // A person at `test` waits for every hook.
        deadline: None,
    };
    // The selection `run` makes: a hook its matcher (or profile, a
    // disable, runtime.toml) keeps out of this payload is not run, and
    // says so.
    let filters = select::Filters::for_run(profile, Some(&trust), loc.settings(), &loaded);
    // The payload a command hook gets on stdin (a built-in reads the event
    // in this process; it is shown in the same shape).
    let payload = fire::hook_payload(reg, &input, &ctx);
    let on_stdin = reg.command().is_some();
    if let Some(not_run) = select::verdict(reg, &input, &filters) {
        let why = not_run.text();
        if args.json {
            output::json(&json!({
                "hookId": reg.id,
                "event": reg.event.as_str(),
                "fires": false,
                "why": why,
                "because": not_run.code(),
                "payload": payload,
                "payloadSent": false,
            }));
        } else {
            show_payload(
                "payload (not sent: the hook does not fire for it):",
                &payload,
            );
            output::line(&format!(
                "hook {} on {} does not fire for this payload: {why}; `run` would not run it",
                escape(&reg.id),
                reg.event
            ));
        }
        return Ok(ExitStatus::Success);
    }
    let inv = fire::invoke_command(reg, &input, &payload, &ctx);
    let sent = Sent {
        payload: &payload,
        on_stdin,
    };
    report(args.json, reg, &inv, &sent, profile, input.decide_outcome);
    Ok(if inv.result.is_ok() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The canonical tools a synthetic call can be of, in the order one is
/// picked for a matcher.
const TOOLS: [&str; 10] = [
    "Bash",
    "Write",
    "Edit",
    "MultiEdit",
    "Read",
    "Grep",
    "Glob",
    "Agent",
    "WebFetch",
    "WebSearch",
];

/// The tools `--file` makes a call of.
const FILE_TOOLS: [&str; 4] = ["Write", "Edit", "MultiEdit", "Read"];

/// Where a synthetic call writes or reads when no `--file` is given: a
/// file of that name in the current directory (the project, as a tool
/// call's path would be), which no test relies on existing.
fn test_file() -> String {
    std::env::current_dir()
        .unwrap_or_else(|_| std::path::PathBuf::from("/"))
        .join("keryx-hooks-test.txt")
        .to_string_lossy()
        .into_owned()
}

/// A tool call to test: the tool and its input.
struct Call {
    tool: String,
    input: Value,
}

/// The call `--tool`, `--command` and `--file` describe, if any; an error
/// when they do not fit together or `reg` is not on a tool event.
fn flag_call(args: &TestArgs, reg: &Registration) -> Result<Option<Call>, CommandError> {
    if args.tool.is_none() && args.command.is_none() && args.file.is_none() {
        return Ok(None);
    }
    if !reg.event.is_per_tool() {
        return Err(CommandError::user(format!(
            "`--tool`, `--command` and `--file` describe a tool call, and `{}` runs on {}",
            escape(&reg.id),
            reg.event
        ))
        .hint(format!(
            "keryx-hooks test {} --payload-file PATH",
            escape(&reg.id)
        )));
    }
    // `bash` is `Bash`; a tool keryx has no name for (an MCP tool) is as given.
    let named = args.tool.as_deref().map(|t| {
        TOOLS
            .into_iter()
            .find(|k| k.eq_ignore_ascii_case(t))
            .map_or_else(|| t.to_owned(), str::to_owned)
    });
    if let Some(command) = &args.command {
        if let Some(t) = named.as_deref().filter(|t| *t != "Bash") {
            return Err(CommandError::user(format!(
                "`--command` makes a Bash call, not a `{}` call",
                escape(t)
            )));
        }
        return Ok(Some(Call {
            tool: "Bash".into(),
            input: json!({"command": command}),
        }));
    }
    if let Some(file) = &args.file {
        let tool = match named {
            Some(t) if FILE_TOOLS.contains(&t.as_str()) => t,
            Some(t) => {
                return Err(CommandError::user(format!(
                    "`--file` makes a {} call, not a `{}` call",
                    FILE_TOOLS.join(", "),
                    escape(&t)
                )));
            }
            None => FILE_TOOLS
                .into_iter()
                .find(|t| reg.matcher.matches(t))
                .unwrap_or("Write")
                .to_owned(),
        };
        let path = crate::paths::absolute(file).to_string_lossy().into_owned();
        let input = tool_input(&tool, &path);
        return Ok(Some(Call { tool, input }));
    }
    let tool = named.unwrap_or_default();
    let input = tool_input(&tool, &test_file());
    Ok(Some(Call { tool, input }))
}

/// A plausible input for a call of `tool`, on `path` where it takes one.
fn tool_input(tool: &str, path: &str) -> Value {
    match tool {
        "Bash" => json!({"command": "echo keryx-hooks test"}),
        "Write" => json!({"file_path": path, "content": "hello\n"}),
        "Edit" => json!({"file_path": path, "old_string": "a", "new_string": "b"}),
        "MultiEdit" => {
            json!({"file_path": path, "edits": [{"old_string": "a", "new_string": "b"}]})
        }
        "Read" => json!({"file_path": path}),
        "Grep" | "Glob" => json!({"pattern": "keryx-hooks"}),
        "Agent" => json!({"description": "keryx-hooks test", "prompt": "keryx-hooks test"}),
        "WebFetch" => json!({"url": "https://example.com/", "prompt": "keryx-hooks test"}),
        "WebSearch" => json!({"query": "keryx-hooks test"}),
        _ => json!({}),
    }
}

/// A payload that makes `reg` match: the call given, or a tool its
/// matcher accepts.
fn synthetic(reg: &Registration, call: Option<Call>) -> EventInput {
    let mut input = EventInput::new(reg.event, "keryx-hooks-test");
    let call = call.unwrap_or_else(|| {
        let tool = match &reg.matcher {
            Matcher::Exact(names) => names.first().cloned().unwrap_or_else(|| "Bash".into()),
            m => TOOLS
                .into_iter()
                .find(|t| m.matches(t))
                .unwrap_or("Bash")
                .into(),
        };
        Call {
            input: tool_input(&tool, &test_file()),
            tool,
        }
    });
    let f = &mut input.fields;
    match reg.event {
        Event::PreToolUse | Event::PostToolUse | Event::PostToolUseFailure => {
            let Call {
                tool,
                input: tool_input,
            } = call;
            f.insert("toolCallId".into(), json!("test-call-1"));
            f.insert("toolName".into(), json!(tool));
            f.insert("toolInput".into(), tool_input);
            if reg.event == Event::PostToolUse {
                f.insert("toolOutput".into(), json!({"stdout": "keryx-hooks test\n"}));
            }
            if reg.event == Event::PostToolUseFailure {
                f.insert("error".into(), json!({"message": "Exit code 1"}));
            }
        }
        Event::UserPromptSubmit => {
            f.insert("prompt".into(), json!("keryx-hooks test prompt"));
        }
        Event::PreCompact => {
            f.insert("reason".into(), json!("manual"));
        }
        Event::SubagentStart => {
            f.insert("subagentId".into(), json!("test-subagent"));
            f.insert("spawnKind".into(), json!("internal"));
            f.insert("inheritedHookIds".into(), json!([]));
        }
        Event::SubagentStop => {
            f.insert("subagentId".into(), json!("test-subagent"));
            f.insert("outcome".into(), json!("completed"));
        }
        Event::SessionEnd => {
            f.insert("endReason".into(), json!("other"));
        }
        Event::SessionStart | Event::Stop => {}
    }
    input
}

/// A payload document: canonical camelCase fields, or their snake_case aliases.
pub(super) fn input_from_file(path: &Path, event: Event) -> Result<EventInput, CommandError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CommandError::user(format!("cannot read `{}`", path.display())).cause(e))?;
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| CommandError::user(format!("`{}` is not JSON", path.display())).cause(e))?;
    let obj = v.as_object().ok_or_else(|| {
        CommandError::user(format!("`{}` must hold a JSON object", path.display()))
    })?;
    let mut input = EventInput::new(
        event,
        obj.get("sessionId")
            .or(obj.get("session_id"))
            .and_then(Value::as_str)
            .unwrap_or("keryx-hooks-test"),
    );
    let aliases = [
        ("tool_name", "toolName"),
        ("tool_input", "toolInput"),
        ("tool_response", "toolOutput"),
        ("tool_use_id", "toolCallId"),
        ("stop_hook_active", "stopHookActive"),
    ];
    let mut fields = Map::new();
    for (k, val) in obj {
        let name = aliases
            .iter()
            .find(|(a, _)| a == k)
            .map_or(k.as_str(), |(_, c)| c);
        fields.insert(name.to_owned(), val.clone());
    }
    if let Some(o) = obj
        .get("decideOutcome")
        .and_then(Value::as_str)
        .and_then(Outcome::parse)
    {
        input.decide_outcome = o;
    }
    input.fields = fields;
    Ok(input)
}

fn show(bytes: &[u8], truncated: bool) -> (String, bool) {
    let cut = bytes.len() > SHOW_BYTES;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(SHOW_BYTES)]).into_owned();
    (text, truncated || cut)
}

/// The payload a hook was run with, and whether it went to its stdin (a
/// built-in reads the event in this process instead).
struct Sent<'a> {
    payload: &'a Value,
    on_stdin: bool,
}

/// `heading`, then `payload` as pretty JSON indented under it.
fn show_payload(heading: &str, payload: &Value) {
    output::line(heading);
    for l in crate::escape::json_text(payload).lines() {
        output::line(&format!("  {l}"));
    }
}

fn report(
    as_json: bool,
    reg: &Registration,
    inv: &Invocation,
    sent: &Sent,
    profile: Profile,
    decide: Outcome,
) {
    let (stdout, so_cut) = show(&inv.stdout, inv.stdout_truncated);
    let (stderr, se_cut) = show(&inv.stderr, inv.stderr_truncated);
    let (decision, reason, context, failure, effect) = match &inv.result {
        Ok(reply) => (
            reply.decision.map(Outcome::as_str),
            reply.reason.clone(),
            reply.additional_context.clone(),
            None,
            None,
        ),
        Err((kind, msg)) => {
            let effect = match semantics::on_failure(reg.class, reg.event, profile, *kind, decide) {
                Effect::Deny(code) => format!("fails closed: the {} is denied ({code})", reg.event),
                Effect::Proceed(code) => format!(
                    "fails open: the {} proceeds with a warning ({code})",
                    reg.event
                ),
            };
            (None, Some(msg.clone()), None, Some(*kind), Some(effect))
        }
    };
    if as_json {
        output::json(&json!({
            "hookId": reg.id,
            "event": reg.event.as_str(),
            "scope": reg.scope.as_str(),
            "class": reg.class.as_str(),
            "profile": profile.as_str(),
            "runsIn": reg.effective_runs_in(profile).as_str(),
            "sandboxWritable": reg.sandbox_writable,
            "decision": decision,
            "reason": reason,
            "additionalContext": context,
            "failure": failure,
            "failureEffect": effect,
            "exitCode": inv.exit_code,
            "durationMs": inv.duration.as_millis() as u64,
            "stdout": stdout,
            "stdoutTruncated": so_cut,
            "stderr": stderr,
            "stderrTruncated": se_cut,
            "payload": sent.payload,
            "payloadSent": sent.on_stdin,
        }));
        return;
    }
    output::line(&format!(
        "hook {} on {} ({} {}, runsIn={}, profile {})",
        escape(&reg.id),
        reg.event,
        reg.scope,
        reg.class,
        reg.effective_runs_in(profile),
        profile
    ));
    if let Some(w) = super::shared::writable_text(reg) {
        output::line(&w);
    }
    show_payload(
        if sent.on_stdin {
            "payload sent on stdin:"
        } else {
            "payload (a built-in reads the event in this process; nothing is sent on stdin):"
        },
        sent.payload,
    );
    match &failure {
        None => output::line(&format!(
            "decision: {}",
            decision.unwrap_or("none (silent approve)")
        )),
        Some(kind) => output::line(&format!(
            "failure: {} ({})",
            serde_json::to_value(kind)
                .unwrap_or_default()
                .as_str()
                .unwrap_or(""),
            escape(reason.as_deref().unwrap_or(""))
        )),
    }
    if failure.is_none()
        && let Some(r) = &reason
    {
        output::line(&format!("reason: {}", escape(r)));
    }
    if let Some(c) = &context {
        output::line(&format!("additionalContext: {}", escape(c)));
    }
    if let Some(e) = &effect {
        output::line(&format!("under {profile} this {e}"));
    }
    output::line(&format!(
        "exit code: {}  duration: {} ms",
        inv.exit_code.map_or("none".into(), |c| c.to_string()),
        inv.duration.as_millis()
    ));
    for (name, text, cut) in [("stdout", &stdout, so_cut), ("stderr", &stderr, se_cut)] {
        if !text.is_empty() {
            output::line(&format!("{name}{}:", if cut { " (truncated)" } else { "" }));
            for l in text.lines() {
                output::line(&format!("  {}", escape(l)));
            }
        }
    }
}
