//! `keryx-hooks test --rule <id>`: runs one rule, in this process, against
//! a call built from `--command`, `--path` (`--file`) or a payload file, and
//! prints its decision and what it matched. Nothing is spawned; a rule that
//! is switched off is still run, and said to be off.

use serde_json::{Value, json};

use crate::cli::TestArgs;
use crate::config::rules::Rule;
use crate::error::{CmdResult, CommandError, ExitStatus};
use crate::escape::escape;
use crate::events::Event;
use crate::output;
use crate::rules::{Call, RuleSet, packs};
use crate::runtime::types::EventInput;

pub fn run(id: &str, args: &TestArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    let (mut loaded, _) = crate::pipeline::load_layers(&loc, None, None);
    if !loaded.ok() {
        for d in loaded.errors() {
            output::err_line(&d.to_string());
        }
        return Err(
            CommandError::config("the hook config does not load").hint("keryx-hooks validate")
        );
    }
    crate::trust::apply(&mut loaded, &loc);
    // Every rule, the switched-off ones included: testing one is asking.
    let all = RuleSet::new(
        packs::rules()
            .into_iter()
            .chain(&loaded.rules)
            .cloned()
            .collect(),
    );
    let Some(rule) = all.get(id) else {
        return Err(
            CommandError::user(format!("no rule `{}`", escape(id))).hint("keryx-hooks list")
        );
    };
    let event = match &args.event {
        Some(e) => e.parse::<Event>().map_err(CommandError::user)?,
        None => rule.on.first().copied().unwrap_or(Event::PreToolUse),
    };
    let input = match &args.payload_file {
        Some(p) => super::test::input_from_file(p, event)?,
        None => synthetic(rule, event, args)?,
    };
    let call = Call::new(&input, crate::rules::call::places(&loc));
    let hit = crate::rules::run(rule, &call);
    let off = rule.is_off(&loaded.rules_off);
    if args.json {
        output::line(
            &json!({
                "rule": rule.id,
                "on": !off,
                "decision": rule.decision.as_str(),
                "matched": hit.as_ref().map(|h| h.matched.clone()),
                "reason": rule.reason,
            })
            .to_string(),
        );
        return Ok(ExitStatus::Success);
    }
    output::line(&format!(
        "rule `{}` ({}){}",
        escape(&rule.id),
        origin(rule),
        if off {
            ", switched off in your hooks file"
        } else {
            ""
        }
    ));
    match hit {
        Some(h) => {
            output::line(&format!("  decision: {}", rule.decision.as_str()));
            output::line(&format!("  matched:  {}", h.matched));
            output::line(&format!("  reason:   {}", escape(&rule.reason)));
        }
        None => output::line("  does not match this call"),
    }
    Ok(ExitStatus::Success)
}

/// Where a rule comes from, for a person.
pub(crate) fn origin(rule: &Rule) -> String {
    match (&rule.pack, &rule.source) {
        (Some(p), _) => format!("pack `{}`", escape(p)),
        (None, Some(path)) => format!("{}, `{}`", rule.scope, escape(&path.display().to_string())),
        (None, None) => rule.scope.to_string(),
    }
}

/// The call `--command`, `--path` or `--file` describe, of `--tool` where
/// it names one.
fn synthetic(rule: &Rule, event: Event, args: &TestArgs) -> Result<EventInput, CommandError> {
    let mut input = EventInput::new(event, "keryx-hooks-test");
    input.cwd = std::env::current_dir().ok();
    let path = args
        .path
        .clone()
        .or_else(|| args.file.as_ref().map(|f| f.to_string_lossy().into_owned()));
    let (tool, tool_input): (String, Value) = match (&args.command, path) {
        (Some(c), _) => ("Bash".into(), json!({"command": c})),
        (None, Some(p)) => (
            args.tool.clone().unwrap_or_else(|| "Write".into()),
            json!({"file_path": p, "content": ""}),
        ),
        (None, None) => {
            return Err(CommandError::user(format!(
                "say what call to test `{}` on",
                escape(&rule.id)
            ))
            .hint(format!(
                "keryx-hooks test --rule {} --command '<cmd>' (or --path P, --payload FILE)",
                escape(&rule.id)
            )));
        }
    };
    input
        .fields
        .insert("toolCallId".into(), json!("test-call-1"));
    input.fields.insert("toolName".into(), json!(tool));
    input.fields.insert("toolInput".into(), tool_input);
    Ok(input)
}
