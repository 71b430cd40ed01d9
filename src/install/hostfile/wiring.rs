//! What we write into a host config and how we know it again: the shim
//! command line (`'<abs binary>' run <host> <HostEvent> --snapshot <key>`),
//! the entry shape each host reads, and the per-event timeout, which must
//! stay above the shim's own worst case for that event. Claude Code kills a
//! hook at its timeout and then lets the tool run, so a host timeout shorter
//! than the shim's would turn a gate's fail-closed deny into an allow.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{json as jsonfile, toml as tomlfile};
use crate::config::model::Registration;
use crate::events::Event;
use crate::hosts::{Adapter, ConfigFormat, HostEvent};
use crate::runner::GRACE;
use crate::runtime::fire::MAX_PARALLEL;

/// Process start, config load, session lock and the payload read, on a
/// loaded machine: added once to every event's budget.
pub const STARTUP_MARGIN_MS: u64 = 2_000;
/// The least any event gets, even one with no hook on it: the shim still
/// starts, loads the config and answers.
pub const MIN_BUDGET_MS: u64 = 5_000;

/// One event as we want it wired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    /// The host's own event name (`PreToolUse`, `BeforeTool`, `preToolUse`).
    pub host_event: String,
    pub command: String,
    /// In the host's own unit ([`Adapter::timeout_unit`]).
    pub timeout: u64,
    /// The event can gate (Cursor gets `failClosed: true` on it).
    pub gate: bool,
}

// ------------------------------------------------------------------ command

pub use crate::hosts::shim_command::{
    ShimCommand, is_ours, parse_shim_command, sh_quote, shim_command,
};

// ------------------------------------------------------------------ timeouts

/// The longest the shim can take on `event` with these registrations: gates
/// run one after another (each up to its timeout plus the kill grace),
/// observers and context hooks alongside them, at most [`MAX_PARALLEL`] at
/// a time.
fn fire_worst_ms(regs: &[Registration], event: Event) -> u64 {
    let grace = GRACE.as_millis() as u64;
    let cost = |r: &Registration| r.clamped_timeout_ms() + grace;
    let on_event = || regs.iter().filter(move |r| r.enabled && r.event == event);
    let gate = |r: &Registration| event.is_gate_capable() && r.class.has_decision_power();
    let gates: u64 = on_event().filter(|r| gate(r)).map(cost).sum();
    let others: Vec<u64> = on_event().filter(|r| !gate(r)).map(cost).collect();
    let rounds = others.len().div_ceil(MAX_PARALLEL) as u64;
    let parallel = others.iter().copied().max().unwrap_or(0) * rounds;
    gates.max(parallel)
}

/// The shim's worst case for one host event, in milliseconds: every hook
/// that may run there, whatever its matcher (we wire match-all and match
/// inside the shim), plus the bridged SubagentStart gates at the host's
/// subagent tool, plus [`STARTUP_MARGIN_MS`]; never below [`MIN_BUDGET_MS`].
pub fn worst_case_ms(regs: &[Registration], host: &Adapter, ev: &HostEvent) -> u64 {
    let event = ev.event();
    let mut worst = fire_worst_ms(regs, event);
    // A payload may refine the event (Gemini's AfterTool with an error is a
    // PostToolUseFailure); cover what it may become.
    if event == Event::PostToolUse {
        worst = worst.max(fire_worst_ms(regs, Event::PostToolUseFailure));
    }
    if let Some(bridge) = host.bridge_for(Event::SubagentStart)
        && bridge.via == event
    {
        worst += fire_worst_ms(regs, Event::SubagentStart);
    }
    (worst + STARTUP_MARGIN_MS).max(MIN_BUDGET_MS)
}

/// The timeout, in the host's unit, each event `host` wires needs for
/// `regs`: the shim's worst case there ([`worst_case_ms`]).
pub fn needed_timeouts<'a>(
    host: &'a Adapter,
    regs: &'a [Registration],
) -> impl Iterator<Item = (&'a str, u64)> + 'a {
    host.events().iter().filter(|e| e.wired()).map(move |ev| {
        (
            ev.name(),
            host.timeout_unit()
                .from_millis(worst_case_ms(regs, host, ev)),
        )
    })
}

/// Every event `host` wires, with its command and a timeout in the host's
/// unit that is never below the shim's worst case.
pub fn desired(host: &Adapter, binary: &Path, key: &str, regs: &[Registration]) -> Vec<Desired> {
    host.events()
        .iter()
        .filter(|e| e.wired())
        .map(|ev| Desired {
            host_event: ev.name().to_owned(),
            command: shim_command(binary, host.name(), ev.name(), key),
            timeout: host
                .timeout_unit()
                .from_millis(worst_case_ms(regs, host, ev)),
            gate: ev.can_deny() && ev.event().is_gate_capable(),
        })
        .collect()
}

// ------------------------------------------------------------------ shapes

/// How one host's file is laid out.
#[derive(Debug, Clone, Copy)]
pub enum Format {
    Json(jsonfile::Shape),
    Toml(tomlfile::Shape),
    /// A plugin file that only we write, loaded by the host from a directory
    /// (OpenCode); see `install::plugin`.
    PluginFile,
}

/// Claude Code's `{"hooks": {Event: [{matcher, hooks: [...]}]}}`, which
/// plugin and extension `hooks/hooks.json` files use on every host.
pub const NESTED_JSON: jsonfile::Shape = CLAUDE;

const CLAUDE: jsonfile::Shape = jsonfile::Shape {
    nested: true,
    version: false,
    command_keys: &["command"],
    timeout_keys: &["timeout"],
};
const CURSOR: jsonfile::Shape = jsonfile::Shape {
    nested: false,
    version: true,
    command_keys: &["command"],
    timeout_keys: &["timeout"],
};
const COPILOT: jsonfile::Shape = jsonfile::Shape {
    nested: false,
    version: true,
    command_keys: &["bash", "command"],
    timeout_keys: &["timeoutSec", "timeout"],
};

/// The file layout of `host`; `None` when there is nothing to install into.
/// Hosts not named here read the Claude Code layout (JSON) or the Codex one
/// (TOML), which is what most hosts copy.
pub fn format(host: &Adapter) -> Option<Format> {
    Some(match (host.name(), host.config_files().format) {
        (_, ConfigFormat::None) => return None,
        (_, ConfigFormat::Plugin) => Format::PluginFile,
        ("cursor", _) => Format::Json(CURSOR),
        ("copilot", _) => Format::Json(COPILOT),
        ("kimi", _) => Format::Toml(tomlfile::Shape::Flat),
        (_, ConfigFormat::Json) => Format::Json(CLAUDE),
        (_, ConfigFormat::Toml) => Format::Toml(tomlfile::Shape::Nested),
    })
}

/// The item that goes into the host's list for one event.
pub fn entry(host: &Adapter, d: &Desired) -> Value {
    let matcher = host.match_all();
    let command_handler = |extra_first: Option<(&str, &str)>| {
        let mut h = Map::new();
        if let Some((k, v)) = extra_first {
            h.insert(k.into(), v.into());
        }
        h.insert("type".into(), "command".into());
        h.insert("command".into(), d.command.clone().into());
        h.insert("timeout".into(), d.timeout.into());
        Value::Object(h)
    };
    let group = |handler: Value| {
        let mut g = Map::new();
        if let Some(m) = matcher {
            g.insert("matcher".into(), m.into());
        }
        g.insert("hooks".into(), json!([handler]));
        Value::Object(g)
    };
    match host.name() {
        "cursor" => {
            let mut h = Map::new();
            h.insert("command".into(), d.command.clone().into());
            if let Some(m) = matcher {
                h.insert("matcher".into(), m.into());
            }
            h.insert("timeout".into(), d.timeout.into());
            if d.gate {
                // A crash or any non-zero exit would otherwise let the action through.
                h.insert("failClosed".into(), true.into());
            }
            Value::Object(h)
        }
        "copilot" => {
            let mut h = Map::new();
            h.insert("type".into(), "command".into());
            h.insert("bash".into(), d.command.clone().into());
            if let Some(m) = matcher {
                h.insert("matcher".into(), m.into());
            }
            h.insert("timeoutSec".into(), d.timeout.into());
            Value::Object(h)
        }
        "kimi" => {
            let mut h = Map::new();
            h.insert("event".into(), d.host_event.clone().into());
            if let Some(m) = matcher {
                h.insert("matcher".into(), m.into());
            }
            h.insert("command".into(), d.command.clone().into());
            h.insert("timeout".into(), d.timeout.into());
            Value::Object(h)
        }
        // Gemini lists hooks by name in `/hooks`.
        "gemini-cli" => group(command_handler(Some(("name", "keryx-hooks")))),
        _ => group(command_handler(None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::{HookClass, Scope};

    #[test]
    fn command_round_trips() {
        let bin = Path::new("/opt/my tools/it's/keryx-hooks");
        let c = shim_command(bin, "claude-code", "PreToolUse", "keryx-0123456789ab");
        assert_eq!(
            c,
            r"'/opt/my tools/it'\''s/keryx-hooks' run claude-code PreToolUse --snapshot keryx-0123456789ab"
        );
        let p = parse_shim_command(&c, None).unwrap();
        assert_eq!(p.binary, "/opt/my tools/it's/keryx-hooks");
        assert_eq!(
            (p.host.as_str(), p.host_event.as_str()),
            ("claude-code", "PreToolUse")
        );
        assert_eq!(p.snapshot.as_deref(), Some("keryx-0123456789ab"));
        let odd = shim_command(
            Path::new("/b/keryx-hooks"),
            "codex",
            "Stop",
            "my hooks-0123",
        );
        assert_eq!(
            parse_shim_command(&odd, None).unwrap().snapshot.as_deref(),
            Some("my hooks-0123")
        );
    }

    #[test]
    fn recognises_ours_and_only_ours() {
        let me = Some(Path::new("/tmp/x/renamed-bin"));
        assert!(is_ours("keryx-hooks run cursor stop", "cursor", None));
        assert!(is_ours(
            "\"/usr/local/bin/keryx-hooks\" run cursor stop",
            "cursor",
            None
        ));
        assert!(is_ours(
            "'/tmp/x/renamed-bin' run cursor stop --snapshot k",
            "cursor",
            me
        ));
        assert!(!is_ours("keryx-hooks run claude-code Stop", "cursor", None));
        assert!(!is_ours("keryx-hooks list", "cursor", None));
        assert!(!is_ours("my-keryx-hooks run cursor stop", "cursor", None));
        assert!(!is_ours("echo keryx-hooks run cursor stop", "cursor", None));
        assert!(!is_ours(
            "keryx-hooks run cursor stop | tee log",
            "cursor",
            None
        ));
        assert!(!is_ours("'unterminated run cursor stop", "cursor", None));
    }

    fn reg(id: &str, event: Event, class: HookClass, timeout_ms: u64) -> Registration {
        let mut r = crate::builtins::registrations().remove(0);
        r.id = id.into();
        r.event = event;
        r.class = class;
        r.timeout_ms = timeout_ms;
        r.scope = Scope::User;
        r
    }

    #[test]
    fn timeouts_cover_the_shims_worst_case_in_each_unit() {
        let builtins = crate::builtins::registrations();
        let claude = crate::hosts::adapter("claude-code").unwrap();
        let gemini = crate::hosts::adapter("gemini-cli").unwrap();
        let pre = |h: &Adapter| {
            desired(h, Path::new("/b/keryx-hooks"), "k", &builtins)
                .into_iter()
                .map(|d| (d.host_event, d.timeout))
                .collect::<Vec<_>>()
        };
        // Built-ins only: three PreToolUse gates of 5 s, each + 0.5 s grace, + 2 s.
        let c = pre(claude);
        assert!(c.contains(&("PreToolUse".into(), 19)), "{c:?}");
        assert!(c.contains(&("Stop".into(), 8)), "{c:?}");
        let g = pre(gemini);
        assert!(g.contains(&("BeforeTool".into(), 18_500)), "{g:?}");

        // A user gate on PreToolUse and one on SubagentStart (bridged to the
        // Agent tool's PreToolUse in Claude Code) both count.
        let mut regs = builtins.clone();
        regs.push(reg("slow-gate", Event::PreToolUse, HookClass::Gate, 60_000));
        regs.push(reg(
            "sub-gate",
            Event::SubagentStart,
            HookClass::Gate,
            10_000,
        ));
        regs.push(reg("watch", Event::PreToolUse, HookClass::Observe, 60_000));
        let ev = claude
            .events()
            .iter()
            .find(|e| e.name() == "PreToolUse")
            .unwrap();
        assert_eq!(
            worst_case_ms(&regs, claude, ev),
            3 * 5_500 + 60_500 + 10_500 + 2_000
        );
        let codex = crate::hosts::adapter("codex").unwrap();
        let ev = codex
            .events()
            .iter()
            .find(|e| e.name() == "PreToolUse")
            .unwrap();
        assert_eq!(worst_case_ms(&regs, codex, ev), 3 * 5_500 + 60_500 + 2_000);

        // An event with nothing on it still gets the floor.
        let ev = claude
            .events()
            .iter()
            .find(|e| e.name() == "PreCompact")
            .unwrap();
        assert_eq!(worst_case_ms(&regs, claude, ev), MIN_BUDGET_MS);

        // A disabled gate costs nothing.
        let mut off = reg("off", Event::Stop, HookClass::Gate, 60_000);
        off.enabled = false;
        regs.push(off);
        let ev = claude.events().iter().find(|e| e.name() == "Stop").unwrap();
        assert_eq!(worst_case_ms(&regs, claude, ev), 5_500 + 2_000);
    }

    #[test]
    fn entry_shapes() {
        let d = Desired {
            host_event: "preToolUse".into(),
            command: "c".into(),
            timeout: 19,
            gate: true,
        };
        let cursor = crate::hosts::adapter("cursor").unwrap();
        assert_eq!(
            entry(cursor, &d),
            json!({"command": "c", "timeout": 19, "failClosed": true})
        );
        let copilot = crate::hosts::adapter("copilot").unwrap();
        assert_eq!(
            entry(copilot, &d),
            json!({"type": "command", "bash": "c", "timeoutSec": 19})
        );
        let claude = crate::hosts::adapter("claude-code").unwrap();
        assert_eq!(
            entry(claude, &d),
            json!({"matcher": "*", "hooks": [{"type": "command", "command": "c", "timeout": 19}]})
        );
        let kimi = crate::hosts::adapter("kimi").unwrap();
        assert_eq!(
            entry(kimi, &d),
            json!({"event": "preToolUse", "command": "c", "timeout": 19})
        );
        assert!(format(crate::hosts::adapter("keryx").unwrap()).is_none());
    }
}
