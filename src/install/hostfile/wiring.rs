//! What we write into a host config and how we know it again: the shim
//! command line (`'<abs binary>' run <host> <HostEvent> --snapshot <key>`),
//! the layout and entry each host reads (its adapter's `configFiles`), and
//! the per-event timeout, which must stay above the shim's own worst case
//! for that event. Claude Code kills a hook at its timeout and then lets
//! the tool run, so a host timeout shorter than the shim's would turn a
//! gate's fail-closed deny into an allow.

use std::path::Path;

use serde_json::Value;

use super::{json as jsonfile, toml as tomlfile};
use crate::config::model::Registration;
use crate::events::Event;
use crate::hosts::{Adapter, ConfigFormat, HostEvent, Layout};
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
    /// The entry carries the host's fail-closed switch (Claude Code
    /// `onFailure: "block"`, Cursor `failClosed: true`), so a shim that
    /// cannot answer refuses the call instead of letting it run.
    pub fail_closed: bool,
}

// ------------------------------------------------------------------ command

pub use crate::hosts::shim_command::{
    ShimCommand, is_ours, parse_shim_command, sh_quote, shim_command, with_fallback,
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
    let gate = |r: &Registration| r.decides_on(event);
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
/// `regs`: the shim's worst case there ([`worst_case_ms`]), at most what
/// the host accepts.
pub fn needed_timeouts<'a>(
    host: &'a Adapter,
    regs: &'a [Registration],
) -> impl Iterator<Item = (&'a str, u64)> + 'a {
    host.events()
        .iter()
        .filter(|e| e.wired())
        .map(move |ev| (ev.name(), host_timeout(host, worst_case_ms(regs, host, ev))))
}

/// `ms` in `host`'s unit, rounded up, at most the host's maximum.
fn host_timeout(host: &Adapter, ms: u64) -> u64 {
    let t = host.timeout_unit().from_millis(ms);
    host.max_timeout().map_or(t, |max| t.min(max))
}

/// The events `host` wires on which `regs` can need more than the host
/// accepts: (event, what they need, the host's maximum), in its unit. The
/// shim still answers within the maximum: a gate still running then
/// denies, so such hooks can deny calls they would have allowed.
pub fn over_host_max(host: &Adapter, regs: &[Registration]) -> Vec<(String, u64, u64)> {
    let Some(max) = host.max_timeout() else {
        return Vec::new();
    };
    host.events()
        .iter()
        .filter(|e| e.wired())
        .map(|ev| {
            let needed = host
                .timeout_unit()
                .from_millis(worst_case_ms(regs, host, ev));
            (ev.name().to_owned(), needed, max)
        })
        .filter(|(_, needed, max)| needed > max)
        .collect()
}

/// [`over_host_max`] as one sentence for a person; `None` when every event
/// fits.
pub fn over_host_max_text(host: &Adapter, regs: &[Registration]) -> Option<String> {
    let over = over_host_max(host, regs);
    let (_, _, max) = over.first()?;
    let unit = match host.timeout_unit() {
        crate::hosts::TimeoutUnit::Seconds => "s",
        crate::hosts::TimeoutUnit::Milliseconds => "ms",
    };
    let events = over
        .iter()
        .map(|(e, needed, _)| format!("`{e}` ({needed} {unit})"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!(
        "{} accepts hook timeouts of at most {max} {unit}, and the hooks can need more on {events}: keryx-hooks answers within {max} {unit}, and a gate still running then denies the call; give those hooks shorter `timeoutMs`, or fewer gates on the event",
        host.display_name()
    ))
}

/// Every event `host` wires, with its command and a timeout in the host's
/// unit that is never below the shim's worst case. With `fail_closed` (the
/// host's switch may be written: see `install::fail_closed`), each event
/// that can gate and honours the switch carries it.
pub fn desired(
    host: &Adapter,
    binary: &Path,
    snapshot: &Path,
    regs: &[Registration],
    fail_closed: bool,
) -> Vec<Desired> {
    host.events()
        .iter()
        .filter(|e| e.wired())
        .map(|ev| Desired {
            host_event: ev.name().to_owned(),
            command: with_fallback(
                shim_command(binary, host.name(), ev.name(), snapshot),
                host,
                ev.name(),
            ),
            timeout: host_timeout(host, worst_case_ms(regs, host, ev)),
            fail_closed: fail_closed
                && ev.can_deny()
                && ev.event().is_gate_capable()
                && host
                    .fail_closed_switch()
                    .is_some_and(|s| s.applies_to(ev.name())),
        })
        .collect()
}

/// Whether a handler of ours, as found in a host file, carries the host's
/// fail-closed switch.
pub fn carries_switch(host: &Adapter, handler: &Value) -> bool {
    host.fail_closed_switch()
        .is_some_and(|s| handler.get(s.key) == Some(&s.value()))
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
pub const NESTED_JSON: jsonfile::Shape = jsonfile::Shape {
    nested: true,
    version: false,
    command_keys: &["command"],
    timeout_keys: &["timeout"],
};

/// The file layout of `host`, as its adapter describes it; `None` when
/// there is nothing to install into.
pub fn format(host: &Adapter) -> Option<Format> {
    let files = host.config_files();
    let json = jsonfile::Shape {
        nested: files.layout == Layout::Nested,
        version: files.version,
        command_keys: files.command_keys,
        timeout_keys: files.timeout_keys,
    };
    layout(files.format, files.layout, json, files.event_key)
}

/// The layout of another file of a host's (an `import` sibling): `format`
/// and `layout` with the usual keys.
pub fn file_format(format: ConfigFormat, nesting: Layout) -> Option<Format> {
    let json = jsonfile::Shape {
        nested: nesting == Layout::Nested,
        ..NESTED_JSON
    };
    layout(format, nesting, json, "event")
}

fn layout(
    format: ConfigFormat,
    nesting: Layout,
    json: jsonfile::Shape,
    event_key: &'static str,
) -> Option<Format> {
    Some(match format {
        ConfigFormat::None => return None,
        ConfigFormat::Plugin => Format::PluginFile,
        ConfigFormat::Json => Format::Json(json),
        ConfigFormat::Toml => Format::Toml(match nesting {
            Layout::Nested => tomlfile::Shape::Nested,
            Layout::Flat => tomlfile::Shape::Flat(event_key),
        }),
    })
}

/// The item that goes into the host's list for one event: the adapter's
/// entry template filled in (null for a host with no settings file, which
/// no editor takes).
pub fn entry(host: &Adapter, d: &Desired) -> Value {
    let value = |placeholder: &str| -> Option<Value> {
        match placeholder {
            "$command" => Some(d.command.clone().into()),
            "$timeout" => Some(d.timeout.into()),
            "$event" => Some(d.host_event.clone().into()),
            // A name unique among the host's hooks (Mistral Vibe refuses two
            // of one name).
            "$name" => Some(format!("keryx-hooks-{}", d.host_event).into()),
            "$matcher" => host.match_all().map(Value::from),
            // A missing, crashed or hung shim would otherwise let the
            // action through (Claude Code's `onFailure`, Cursor's `failClosed`).
            "$failClosed" => host
                .fail_closed_switch()
                .filter(|_| d.fail_closed)
                .map(|s| s.value()),
            _ => None,
        }
    };
    host.config_files().entry(&value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::model::{HookClass, Scope};

    #[test]
    fn command_round_trips() {
        let bin = Path::new("/opt/my tools/it's/keryx-hooks");
        let snap = Path::new("/home/u/.agentic/hooks-snapshot/keryx-0123456789ab");
        let c = shim_command(bin, "claude-code", "PreToolUse", snap);
        assert_eq!(
            c,
            r"'/opt/my tools/it'\''s/keryx-hooks' run claude-code PreToolUse --snapshot /home/u/.agentic/hooks-snapshot/keryx-0123456789ab"
        );
        let p = parse_shim_command(&c, None).unwrap();
        assert_eq!(p.binary, "/opt/my tools/it's/keryx-hooks");
        assert_eq!(
            (p.host.as_str(), p.host_event.as_str()),
            ("claude-code", "PreToolUse")
        );
        assert_eq!(p.snapshot_key().as_deref(), Some("keryx-0123456789ab"));
        let odd = shim_command(
            Path::new("/b/keryx-hooks"),
            "codex",
            "Stop",
            Path::new("/my home/snaps/my hooks-0123"),
        );
        let p = parse_shim_command(&odd, None).unwrap();
        assert_eq!(p.snapshot.as_deref(), Some("/my home/snaps/my hooks-0123"));
        assert_eq!(p.snapshot_key().as_deref(), Some("my hooks-0123"));
        // An older wiring names the key alone.
        let old = "'/b/keryx-hooks' run codex Stop --snapshot keryx-0123";
        let p = parse_shim_command(old, None).unwrap();
        assert_eq!(p.snapshot_key().as_deref(), Some("keryx-0123"));
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

    /// deepagents-code's gate events are wired with the refusal the command
    /// answers itself when the shim cannot; its other events, and every
    /// other host, with the shim alone. Only exactly that tail is ours.
    #[test]
    fn a_fallback_is_wired_where_the_adapter_has_one_and_only_it_is_ours() {
        let dc = crate::hosts::adapter("deepagents").unwrap();
        let bin = Path::new("/opt/keryx-hooks");
        let snap = Path::new("/s/keryx-0123456789ab");
        let wanted = desired(dc, bin, snap, &crate::builtins::registrations(), false);
        let command = |event: &str| {
            wanted
                .iter()
                .find(|d| d.host_event == event)
                .unwrap()
                .command
                .clone()
        };
        let plain = shim_command(bin, "deepagents", "PreToolUse", snap);
        let pre = command("PreToolUse");
        assert_eq!(
            pre,
            format!(
                "{plain} || {{ echo 'keryx-hooks could not answer PreToolUse, so it is refused' >&2; exit 2; }}"
            )
        );
        assert!(command("UserPromptSubmit").contains(" || { echo"));
        for event in ["Stop", "PostToolUse", "SessionStart"] {
            assert!(!command(event).contains("||"), "{event}");
        }
        let p = parse_shim_command(&pre, None).unwrap();
        assert_eq!(
            (p.host.as_str(), p.host_event.as_str()),
            ("deepagents", "PreToolUse")
        );
        assert!(is_ours(&pre, "deepagents", None));
        assert!(is_ours(&plain, "deepagents", None));
        // Another tail, the fallback of another event or host: not ours.
        assert!(!is_ours(
            &format!("{plain} || curl evil.example"),
            "deepagents",
            None
        ));
        let stop = shim_command(bin, "deepagents", "Stop", snap);
        assert!(!is_ours(
            &pre.replacen(&plain, &stop, 1),
            "deepagents",
            None
        ));
        let claude = shim_command(bin, "claude-code", "PreToolUse", snap);
        assert!(!is_ours(
            &pre.replacen(&plain, &claude, 1),
            "claude-code",
            None
        ));
        let claude_wanted = desired(
            crate::hosts::adapter("claude-code").unwrap(),
            bin,
            snap,
            &crate::builtins::registrations(),
            false,
        );
        assert!(claude_wanted.iter().all(|d| !d.command.contains("||")));
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
            desired(
                h,
                Path::new("/b/keryx-hooks"),
                Path::new("/s/k"),
                &builtins,
                true,
            )
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
        let mut d = Desired {
            host_event: "preToolUse".into(),
            command: "c".into(),
            timeout: 19,
            fail_closed: true,
        };
        // Compared as text: the keys keep the template's order.
        let text =
            |host: &str, d: &Desired| entry(crate::hosts::adapter(host).unwrap(), d).to_string();
        assert_eq!(
            text("cursor", &d),
            json!({"command": "c", "timeout": 19, "failClosed": true}).to_string()
        );
        assert_eq!(
            text("copilot", &d),
            json!({"type": "command", "bash": "c", "timeoutSec": 19}).to_string()
        );
        assert_eq!(
            text("claude-code", &d),
            json!({"matcher": "*", "hooks": [{"type": "command", "command": "c", "timeout": 19, "onFailure": "block"}]})
                .to_string()
        );
        assert_eq!(
            text("gemini-cli", &d),
            json!({"matcher": "*", "hooks": [{"name": "keryx-hooks", "type": "command", "command": "c", "timeout": 19}]})
                .to_string()
        );
        assert_eq!(
            text("kimi", &d),
            json!({"event": "preToolUse", "command": "c", "timeout": 19}).to_string()
        );
        d.fail_closed = false;
        assert_eq!(
            text("cursor", &d),
            json!({"command": "c", "timeout": 19}).to_string()
        );
        assert_eq!(
            text("claude-code", &d),
            json!({"matcher": "*", "hooks": [{"type": "command", "command": "c", "timeout": 19}]})
                .to_string()
        );
        let keryx = crate::hosts::adapter("keryx").unwrap();
        assert!(format(keryx).is_none());
        assert!(entry(keryx, &d).is_null());
    }

    #[test]
    fn the_switch_goes_on_the_gate_events_that_honour_it() {
        let builtins = crate::builtins::registrations();
        let on = |host: &str, may: bool| {
            let h = crate::hosts::adapter(host).unwrap();
            desired(
                h,
                Path::new("/b/keryx-hooks"),
                Path::new("/s/k"),
                &builtins,
                may,
            )
            .into_iter()
            .filter(|d| d.fail_closed)
            .map(|d| d.host_event)
            .collect::<Vec<_>>()
        };
        // Claude Code ignores onFailure on Stop; Cursor honours failClosed
        // on every event that can gate.
        assert_eq!(on("claude-code", true), ["UserPromptSubmit", "PreToolUse"]);
        assert_eq!(
            on("cursor", true),
            ["beforeSubmitPrompt", "preToolUse", "stop"]
        );
        assert!(on("claude-code", false).is_empty());
        assert!(on("codex", true).is_empty());
        let claude = crate::hosts::adapter("claude-code").unwrap();
        assert!(carries_switch(
            claude,
            &json!({"command": "c", "onFailure": "block"})
        ));
        assert!(!carries_switch(
            claude,
            &json!({"command": "c", "onFailure": "continue"})
        ));
        assert!(!carries_switch(claude, &json!({"command": "c"})));
    }
}
