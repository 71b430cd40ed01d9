//! The in-process cost of firing one event, for bench/run.sh's note on the
//! runtime's bound ("firing an event with no matching hook costs under
//! 0.2 ms inside the process"): `fire::fire` with the built-in layer as
//! `run` passes it (idle ports dropped), measured in this process over many
//! calls, so no process start, payload read or config load is counted.
//! Prints one line per case:
//!
//!     name  median_us  p90_us  min_us  calls
//!
//! Usage: fire [ROUNDS]   (each round times 1,000 calls; default 30 rounds)

use std::path::Path;
use std::time::Instant;

use keryx_hooks::builtins;
use keryx_hooks::config::model::{Profile, Registration};
use keryx_hooks::events::Event;
use keryx_hooks::runtime::fire::{self, FireContext};
use keryx_hooks::runtime::reply::HookReply;
use keryx_hooks::runtime::types::EventInput;
use serde_json::{json, Value};

const CALLS: usize = 1000;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30);
    let home = std::env::temp_dir().join(format!("keryx-fire-bench-{}", std::process::id()));
    let no_settings = keryx_hooks::settings::Settings::read(&home.join("runtime.toml"));
    // The built-ins `run` fires under a default runtime.toml: a port whose
    // table is off (impact, by default) is left out, as selection does.
    let regs: Vec<Registration> = builtins::registrations()
        .into_iter()
        .filter(|r| {
            keryx_hooks::runtime::select::idle_port(
                r,
                no_settings.learning.is_some(),
                no_settings.impact.is_some(),
            )
            .is_none()
        })
        .collect();
    let loc = keryx_hooks::settings::Here::resolve(&std::env::temp_dir());

    let read = pre_tool("Read", json!({"file_path": "/p/src/main.rs"}));
    let bash = pre_tool("Bash", json!({"command": "cargo test --workspace"}));
    let prompt = {
        let mut i = EventInput::new(Event::UserPromptSubmit, "s");
        i.fields
            .insert("prompt".into(), json!("make the build green"));
        i
    };
    let cases: [(&str, &EventInput); 3] = [
        ("no-match (PreToolUse Read, built-ins only)", &read),
        ("ctx-guard in-process (PreToolUse Bash)", &bash),
        (
            "security-check-input in-process (UserPromptSubmit)",
            &prompt,
        ),
    ];
    for (name, input) in cases {
        let mut per_call_us: Vec<f64> = (0..rounds)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..CALLS {
                    std::hint::black_box(fire_once(&regs, input, &loc));
                }
                start.elapsed().as_secs_f64() * 1e6 / CALLS as f64
            })
            .collect();
        per_call_us.sort_by(f64::total_cmp);
        let at = |q: f64| per_call_us[((per_call_us.len() - 1) as f64 * q).round() as usize];
        println!(
            "{name}\t{:.2}\t{:.2}\t{:.2}\t{}",
            at(0.5),
            at(0.9),
            per_call_us[0],
            rounds * CALLS
        );
    }
}

fn pre_tool(tool: &str, tool_input: Value) -> EventInput {
    let mut i = EventInput::new(Event::PreToolUse, "s");
    i.fields.insert("toolName".into(), json!(tool));
    i.fields.insert("toolCallId".into(), json!("toolu_1"));
    i.fields.insert("toolInput".into(), tool_input);
    i
}

fn fire_once(
    regs: &[Registration],
    input: &EventInput,
    loc: &keryx_hooks::settings::Here,
) -> keryx_hooks::runtime::types::FireResult {
    let builtin = |_, _: &EventInput| -> Result<HookReply, String> { Ok(HookReply::default()) };
    let in_process =
        |reg: &Registration, payload: &Value| builtins::run_in_process(reg, payload, loc);
    let ambient = |_: &str| -> Option<String> { None };
    let ctx = FireContext {
        profile: Profile::DEFAULT,
        project_root: Some(Path::new("/p")),
        cwd: Path::new("/p"),
        run_id: "run-1",
        builtin: &builtin,
        in_process: &in_process,
        ambient: &ambient,
        locations: loc,
        host_env: &[],
        deadline: None,
    };
    fire::fire(regs, input, &ctx)
}
