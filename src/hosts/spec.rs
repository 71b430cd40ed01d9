//! The typed form of one `adapters/<host>/adapter.json` and the questions the
//! rest of the crate asks of a host (can it gate, can it ask, where is its
//! config). Parsing is plain serde, cheap enough to run on every event.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::runtime::events::Event;

/// One host, as its adapter file describes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Adapter {
    #[serde(rename = "$schema", default)]
    _schema: Option<String>,
    pub(super) name: String,
    display_name: String,
    /// How notices reach the person on events without a `notice` of their
    /// own. Never the model's context: a notice names a command to run,
    /// and only a person should be told to run it.
    #[serde(default)]
    pub(super) notice: Option<Output>,
    pub(super) encoder: EncoderKind,
    #[serde(default)]
    sources: Vec<String>,
    timeout: Timeout,
    config_files: ConfigFiles,
    #[serde(default)]
    match_all: Option<String>,
    closes_stdin: bool,
    exit_rule: String,
    #[serde(default)]
    pub(super) passthrough: bool,
    #[serde(default)]
    pub(super) host_fields: bool,
    /// The variables the host sets for its own hooks, passed through the
    /// environment allowlist when the shim runs under this host.
    #[serde(default)]
    hook_env: Vec<String>,
    #[serde(default)]
    pub(super) ignore: Vec<String>,
    #[serde(default)]
    pub(super) fields: Vec<FieldMap>,
    #[serde(default)]
    pub(super) tools: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) mcp: Option<Mcp>,
    #[serde(deserialize_with = "ordered_events")]
    events: Vec<HostEvent>,
    #[serde(default)]
    unmapped: Vec<String>,
    #[serde(default)]
    bridges: Vec<BridgeSpec>,
    #[serde(default)]
    notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum EncoderKind {
    Template,
    Keryx,
}

/// The unit a host's own config expresses hook timeouts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeoutUnit {
    Seconds,
    Milliseconds,
}

impl TimeoutUnit {
    /// A keryx timeout (milliseconds) in this unit, rounded up so a host
    /// never kills a hook earlier than its registration allows.
    pub fn from_millis(self, ms: u64) -> u64 {
        match self {
            TimeoutUnit::Seconds => ms.div_ceil(1000),
            TimeoutUnit::Milliseconds => ms,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Timeout {
    unit: TimeoutUnit,
    #[serde(default)]
    default: Option<u64>,
}

/// Where a host reads its hook registrations, before `~` and `homeEnv` are
/// resolved (that happens in `paths`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigFiles {
    pub format: ConfigFormat,
    pub user: Vec<String>,
    pub project: Vec<String>,
    #[serde(default)]
    pub home_env: Option<HomeEnv>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigFormat {
    Json,
    Toml,
    /// The host loads a plugin file from a directory (OpenCode); the
    /// installer generates the whole file instead of editing one.
    Plugin,
    /// The host runs the binary itself; there is nothing to install into.
    None,
}

/// `var`, when set, replaces the `replaces` prefix (e.g. `~/.codex`) of the
/// user paths.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HomeEnv {
    pub var: String,
    pub replaces: String,
}

/// One payload field mapping: the first `from` path present wins.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FieldMap {
    pub to: String,
    #[serde(deserialize_with = "one_or_many")]
    pub from: Vec<String>,
    #[serde(default, rename = "type")]
    pub kind: ValueKind,
    #[serde(default)]
    pub transform: Option<Transform>,
    #[serde(default)]
    pub required: bool,
    /// Host values renamed to canonical ones (Copilot's `source: "new"` is
    /// `startup`); values not listed pass through unchanged.
    #[serde(default)]
    pub values: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum ValueKind {
    #[default]
    String,
    Boolean,
    Number,
    Object,
    Array,
    Any,
}

impl ValueKind {
    pub fn accepts(self, v: &Value) -> bool {
        match self {
            ValueKind::String => v.is_string(),
            ValueKind::Boolean => v.is_boolean(),
            ValueKind::Number => v.is_number(),
            ValueKind::Object => v.is_object(),
            ValueKind::Array => v.is_array(),
            ValueKind::Any => true,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ValueKind::String => "a string",
            ValueKind::Boolean => "a boolean",
            ValueKind::Number => "a number",
            ValueKind::Object => "an object",
            ValueKind::Array => "an array",
            ValueKind::Any => "any value",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Transform {
    Tool,
    Json,
    Error,
    Positive,
    Text,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Mcp {
    pub prefix: String,
    #[serde(default)]
    pub server_path: Option<String>,
    #[serde(default)]
    pub tool_path: Option<String>,
    #[serde(default)]
    pub default_server: Option<String>,
}

/// One host event and how it maps and answers.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostEvent {
    #[serde(skip)]
    name: String,
    #[serde(deserialize_with = "canonical_event")]
    event: Event,
    #[serde(default = "yes")]
    wire: bool,
    #[serde(default)]
    pub(super) fields: Vec<FieldMap>,
    #[serde(default)]
    pub(super) require: Vec<String>,
    #[serde(default)]
    pub(super) refine: Option<Refine>,
    #[serde(default)]
    pub(super) skip: Option<Skip>,
    #[serde(default)]
    pub(super) deny: Option<Output>,
    #[serde(default)]
    pub(super) ask: Option<Output>,
    #[serde(default)]
    pub(super) context: Option<Output>,
    #[serde(default)]
    pub(super) notice: Option<Output>,
}

impl HostEvent {
    /// The host's own name for the event (`BeforeTool`, `preToolUse`, …).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The canonical event it maps to (before any payload refinement).
    pub fn event(&self) -> Event {
        self.event
    }

    /// Whether the installer registers it (false for aliases of a wired event).
    pub fn wired(&self) -> bool {
        self.wire
    }

    /// Whether a deny on this host event reaches the host at all.
    pub fn can_deny(&self) -> bool {
        self.deny.is_some()
    }

    /// Whether this host event has its own ask (otherwise an ask is sent as a deny).
    pub fn can_ask(&self) -> bool {
        self.ask.is_some()
    }

    /// Whether additional context reaches the model on this host event.
    pub fn can_add_context(&self) -> bool {
        self.context.is_some()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Refine {
    pub when: String,
    #[serde(deserialize_with = "canonical_event")]
    pub event: Event,
}

/// A delivery that repeats what another host event already reported (Qwen
/// Code re-fires UserPromptSubmit with an empty prompt after every tool
/// round; Copilot fires agentStop inside a subagent before its
/// subagentStop): skipped when the payload path is present, or, with
/// `equals`, when it holds that value.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Skip {
    pub when: String,
    #[serde(default)]
    pub equals: Option<Value>,
    pub why: String,
}

/// One kind of answer in the host's shape: a stdout object (placeholders
/// `$reason`, `$context`, `$notices`), a stderr line, an exit code.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    #[serde(default)]
    pub(super) stdout: Option<Map<String, Value>>,
    #[serde(default)]
    pub(super) stderr: Option<String>,
    #[serde(default)]
    pub(super) exit: u8,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BridgeSpec {
    #[serde(deserialize_with = "canonical_event")]
    event: Event,
    #[serde(deserialize_with = "canonical_event")]
    via: Event,
    tool: String,
}

/// An event the host cannot gate, enforced at another event for one
/// canonical tool: SubagentStart gates run at the PreToolUse of `Agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bridge<'a> {
    pub event: Event,
    pub via: Event,
    pub tool: &'a str,
}

fn yes() -> bool {
    true
}

fn canonical_event<'de, D: Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
    let s = String::deserialize(d)?;
    s.parse().map_err(serde::de::Error::custom)
}

/// A string or a list of strings, read with a visitor that takes either
/// straight from the parser: an untagged enum would first buffer each value
/// into serde's generic form and then try both shapes, which cost a tenth
/// of parsing an adapter (parsed on every `run`).
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct OneOrMany;
    impl<'de> serde::de::Visitor<'de> for OneOrMany {
        type Value = Vec<String>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a string or a list of strings")
        }

        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
            Ok(vec![s.to_owned()])
        }

        fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Self::Value, E> {
            Ok(vec![s])
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(s) = seq.next_element::<String>()? {
                out.push(s);
            }
            Ok(out)
        }
    }
    d.deserialize_any(OneOrMany)
}

/// Keeps the file's event order, which is the order the installer wires them.
/// Each event is read straight into a [`HostEvent`], without a `Value` tree
/// in between: the adapter is parsed on every `run`.
fn ordered_events<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<HostEvent>, D::Error> {
    struct Events;
    impl<'de> serde::de::Visitor<'de> for Events {
        type Value = Vec<HostEvent>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of host events")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out: Vec<HostEvent> = Vec::new();
            while let Some(name) = map.next_key::<String>()? {
                if out.iter().any(|e| e.name == name) {
                    return Err(serde::de::Error::custom(format!("event `{name}` twice")));
                }
                let mut ev: HostEvent = map
                    .next_value()
                    .map_err(|e| serde::de::Error::custom(format!("event `{name}`: {e}")))?;
                ev.name = name;
                out.push(ev);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Events)
}

impl Adapter {
    pub(super) fn parse(text: &str) -> Result<Adapter, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The `<host>` argument of `run`.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn display_name(&self) -> &str {
        &self.display_name
    }

    /// `hookEnv`: names (a `*` suffix for a prefix) of the variables the
    /// host sets for its hooks, which its hooks get through the allowlist.
    pub fn hook_env(&self) -> &[String] {
        &self.hook_env
    }

    /// Where the facts in the adapter file come from.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// Whether the host speaks the keryx native protocol (the caller gets the
    /// whole composed result back instead of a host-shaped answer).
    pub fn is_native(&self) -> bool {
        self.encoder == EncoderKind::Keryx
    }

    /// Every host event the adapter maps, in file order.
    pub fn events(&self) -> &[HostEvent] {
        &self.events
    }

    /// The host events the installer registers, with their canonical event.
    pub fn wired_events(&self) -> impl Iterator<Item = (&str, Event)> {
        self.events
            .iter()
            .filter(|e| e.wire)
            .map(|e| (e.name.as_str(), e.event))
    }

    /// Host events that exist but are deliberately not handled.
    pub fn unmapped_events(&self) -> &[String] {
        &self.unmapped
    }

    pub(super) fn host_event(&self, host_event: &str) -> Option<&HostEvent> {
        self.events.iter().find(|e| e.name == host_event)
    }

    /// The canonical event a host event maps to; `None` for unknown and
    /// unmapped host events. A payload may still refine it (Gemini's AfterTool
    /// with an error decodes as PostToolUseFailure).
    pub fn canonical_event(&self, host_event: &str) -> Option<Event> {
        self.host_event(host_event).map(|e| e.event)
    }

    /// The wired host event for a canonical event (`PreToolUse` → `BeforeTool`).
    pub fn host_event_for(&self, event: Event) -> Option<&str> {
        self.events
            .iter()
            .find(|e| e.wire && e.event == event)
            .map(|e| e.name.as_str())
    }

    fn mapped(&self, event: Event) -> impl Iterator<Item = &HostEvent> {
        self.events.iter().filter(move |e| e.event == event)
    }

    /// Whether an ask can reach a person on this host (on PreToolUse, the one
    /// place an ask means anything); otherwise asks are sent as denies.
    pub fn can_ask(&self) -> bool {
        match self.encoder {
            EncoderKind::Keryx => true,
            EncoderKind::Template => self.events.iter().any(|e| e.ask.is_some()),
        }
    }

    /// Whether a deny on `event` changes what the host does. Only the four
    /// gate-capable events can; a host may still lack a way to say it.
    pub fn can_gate(&self, event: Event) -> bool {
        if !event.is_gate_capable() {
            return false;
        }
        match self.encoder {
            EncoderKind::Keryx => true,
            EncoderKind::Template => self.mapped(event).any(|e| e.deny.is_some()),
        }
    }

    /// Where the gates of an event this host cannot gate are enforced instead.
    pub fn bridge_for(&self, event: Event) -> Option<Bridge<'_>> {
        if self.can_gate(event) {
            return None;
        }
        self.bridges
            .iter()
            .find(|b| b.event == event)
            .map(|b| Bridge {
                event: b.event,
                via: b.via,
                tool: &b.tool,
            })
    }

    pub fn timeout_unit(&self) -> TimeoutUnit {
        self.timeout.unit
    }

    /// The host's default hook timeout, in [`Adapter::timeout_unit`].
    pub fn default_timeout(&self) -> Option<u64> {
        self.timeout.default
    }

    pub fn config_files(&self) -> &ConfigFiles {
        &self.config_files
    }

    /// The host's match-everything matcher; `None` means omit the matcher.
    pub fn match_all(&self) -> Option<&str> {
        self.match_all.as_deref()
    }

    /// Whether the host closes stdin after the payload (the guard never
    /// depends on it; this is for `doctor`).
    pub fn closes_stdin(&self) -> bool {
        self.closes_stdin
    }

    /// The host's exit-code rule, one sentence.
    pub fn exit_rule(&self) -> &str {
        &self.exit_rule
    }

    /// Known limitations, one sentence each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// A host tool name in canonical form, without payload context (an MCP
    /// name that needs the payload to find its server comes back unchanged).
    pub fn canonical_tool(&self, host_tool: &str) -> String {
        super::decode::canonical_tool(self, host_tool, &Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::one_or_many;

    fn read(json: &str) -> Result<Vec<String>, serde_json::Error> {
        one_or_many(&mut serde_json::Deserializer::from_str(json))
    }

    /// `from` is a string or a list of strings, and nothing else.
    #[test]
    fn one_or_many_takes_a_string_or_a_list_of_strings() {
        assert_eq!(read(r#""a""#).unwrap(), ["a"]);
        assert_eq!(read(r#""a\"b""#).unwrap(), ["a\"b"]);
        assert_eq!(read(r#"["a", "b"]"#).unwrap(), ["a", "b"]);
        assert!(read("[]").unwrap().is_empty());
        for bad in ["1", "[1]", "null", r#"{"a": "b"}"#, r#"["a", ["b"]]"#] {
            let e = read(bad).unwrap_err().to_string();
            assert!(
                e.contains("a string or a list of strings") || e.contains("a string"),
                "{bad}: {e}"
            );
        }
    }
}
