//! The typed form of one `adapters/<host>/adapter.json` and the questions the
//! rest of the crate asks of a host (can it gate, can it ask, where is its
//! config). Nothing here is parsed at run time: build.rs reads every adapter
//! file, checks it as strictly as a typed parse would (unknown keys, missing
//! fields, wrong types and unknown enum values fail the build, naming the
//! file and the field) and writes each adapter as a `static` of these types,
//! so every string is `&'static str`, every list a `&'static [T]`, every
//! name-to-name table a slice sorted by key, and every output template a
//! [`Json`] tree in the file's own key order.

use serde_json::{Map, Value};

use crate::events::Event;

/// A name-to-name table (`tools`, a field's `values`), sorted by key.
pub(super) type Table = &'static [(&'static str, &'static str)];

/// The value `key` maps to in a [`Table`].
pub(super) fn table_get(table: Table, key: &str) -> Option<&'static str> {
    table
        .binary_search_by(|(k, _)| (*k).cmp(key))
        .ok()
        .map(|i| table[i].1)
}

/// A JSON value written into the binary: an output template or a `skip`'s
/// `equals`. Objects keep the adapter file's key order; numbers are
/// integers (build.rs refuses any other number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    dead_code,
    reason = "build.rs emits the variants the adapter files use"
)]
pub(super) enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Str(&'static str),
    Arr(&'static [Json]),
    Obj(&'static [(&'static str, Json)]),
}

impl Json {
    /// The same value as a `serde_json::Value`.
    pub fn to_value(self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(b),
            Json::Int(n) => Value::from(n),
            Json::Str(s) => Value::String(s.to_owned()),
            Json::Arr(items) => Value::Array(items.iter().map(|j| j.to_value()).collect()),
            Json::Obj(entries) => Value::Object(object(entries)),
        }
    }

    /// Whether `v` is this value, as `Value`'s own `==` would say (an
    /// integer never equals a float, objects compare regardless of order).
    pub fn matches(self, v: &Value) -> bool {
        match (self, v) {
            (Json::Null, Value::Null) => true,
            (Json::Bool(a), Value::Bool(b)) => a == *b,
            (Json::Int(a), Value::Number(b)) => b.as_i64() == Some(a),
            (Json::Str(a), Value::String(b)) => a == b,
            (Json::Arr(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.matches(y))
            }
            (Json::Obj(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, x)| b.get(*k).is_some_and(|y| x.matches(y)))
            }
            _ => false,
        }
    }
}

/// A static object's entries as a `serde_json` object, in order.
pub(super) fn object(entries: &[(&'static str, Json)]) -> Map<String, Value> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.to_value()))
        .collect()
}

/// One host, as its adapter file describes it.
#[derive(Debug)]
pub struct Adapter {
    pub(super) name: &'static str,
    pub(super) display_name: &'static str,
    /// Other names people type for the host (`claude`), for the human
    /// commands; never `run`'s.
    pub(super) aliases: &'static [&'static str],
    /// How notices reach the person on events without a `notice` of their
    /// own. Never the model's context: a notice names a command to run,
    /// and only a person should be told to run it.
    pub(super) notice: Option<Output>,
    pub(super) encoder: EncoderKind,
    pub(super) sources: &'static [&'static str],
    pub(super) timeout: Timeout,
    pub(super) config_files: ConfigFiles,
    pub(super) match_all: Option<&'static str>,
    pub(super) closes_stdin: bool,
    pub(super) exit_rule: &'static str,
    pub(super) passthrough: bool,
    pub(super) host_fields: bool,
    /// The variables the host sets for its own hooks, passed through the
    /// environment allowlist when the shim runs under this host.
    pub(super) hook_env: &'static [&'static str],
    pub(super) ignore: &'static [&'static str],
    pub(super) fields: &'static [FieldMap],
    /// Host tool name → canonical tool name, sorted by host name.
    pub(super) tools: Table,
    pub(super) mcp: Option<Mcp>,
    /// In file order, which is the order the installer wires them.
    pub(super) events: &'static [HostEvent],
    pub(super) unmapped: &'static [&'static str],
    pub(super) bridges: &'static [BridgeSpec],
    pub(super) notes: &'static [&'static str],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EncoderKind {
    Template,
    Keryx,
}

/// The unit a host's own config expresses hook timeouts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

#[derive(Debug)]
pub(super) struct Timeout {
    pub unit: TimeoutUnit,
    pub default: Option<u64>,
}

/// Where a host reads its hook registrations, before `~` and `homeEnv` are
/// resolved (that happens in `paths`).
#[derive(Debug)]
pub struct ConfigFiles {
    pub format: ConfigFormat,
    pub user: &'static [&'static str],
    pub project: &'static [&'static str],
    pub home_env: Option<HomeEnv>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug)]
pub struct HomeEnv {
    pub var: &'static str,
    pub replaces: &'static str,
}

/// One payload field mapping: the first `from` path present wins. A `from`
/// written as one string is a one-element list.
#[derive(Debug)]
pub(super) struct FieldMap {
    pub to: &'static str,
    pub from: &'static [&'static str],
    /// `type` in the file; `string` when absent.
    pub kind: ValueKind,
    pub transform: Option<Transform>,
    pub required: bool,
    /// Host values renamed to canonical ones (Copilot's `source: "new"` is
    /// `startup`), sorted by host value; values not listed pass through
    /// unchanged.
    pub values: Table,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    dead_code,
    reason = "build.rs emits the variants the adapter files use"
)]
pub(super) enum ValueKind {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transform {
    Tool,
    Json,
    Error,
    Positive,
    Text,
}

#[derive(Debug)]
pub(super) struct Mcp {
    pub prefix: &'static str,
    pub server_path: Option<&'static str>,
    pub tool_path: Option<&'static str>,
    pub default_server: Option<&'static str>,
}

/// One host event and how it maps and answers.
#[derive(Debug)]
pub struct HostEvent {
    pub(super) name: &'static str,
    pub(super) event: Event,
    /// `wire` in the file; true when absent.
    pub(super) wire: bool,
    pub(super) fields: &'static [FieldMap],
    pub(super) require: &'static [&'static str],
    pub(super) refine: Option<Refine>,
    pub(super) skip: Option<Skip>,
    pub(super) deny: Option<Output>,
    pub(super) ask: Option<Output>,
    pub(super) context: Option<Output>,
    pub(super) notice: Option<Output>,
}

impl HostEvent {
    /// The host's own name for the event (`BeforeTool`, `preToolUse`, …).
    pub fn name(&self) -> &'static str {
        self.name
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

#[derive(Debug)]
pub(super) struct Refine {
    pub when: &'static str,
    pub event: Event,
}

/// A delivery that repeats what another host event already reported (Qwen
/// Code re-fires UserPromptSubmit with an empty prompt after every tool
/// round; Copilot fires agentStop inside a subagent before its
/// subagentStop): skipped when the payload path is present, or, with
/// `equals`, when it holds that value.
#[derive(Debug)]
pub(super) struct Skip {
    pub when: &'static str,
    pub equals: Option<Json>,
    pub why: &'static str,
}

/// One kind of answer in the host's shape: a stdout object (placeholders
/// `$reason`, `$context`, `$notices`), a stderr line, an exit code.
#[derive(Debug)]
pub struct Output {
    /// The stdout object's entries, in file order.
    pub(super) stdout: Option<&'static [(&'static str, Json)]>,
    pub(super) stderr: Option<&'static str>,
    pub(super) exit: u8,
}

#[derive(Debug)]
pub(super) struct BridgeSpec {
    pub event: Event,
    pub via: Event,
    pub tool: &'static str,
}

/// An event the host cannot gate, enforced at another event for one
/// canonical tool: SubagentStart gates run at the PreToolUse of `Agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bridge<'a> {
    pub event: Event,
    pub via: Event,
    pub tool: &'a str,
}

impl Adapter {
    /// The `<host>` argument of `run`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn display_name(&self) -> &'static str {
        self.display_name
    }

    /// Other names the human commands accept for the host (`claude` for
    /// claude-code), in file order.
    pub fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }

    /// `hookEnv`: names (a `*` suffix for a prefix) of the variables the
    /// host sets for its hooks, which its hooks get through the allowlist.
    pub fn hook_env(&self) -> &'static [&'static str] {
        self.hook_env
    }

    /// Where the facts in the adapter file come from.
    pub fn sources(&self) -> &'static [&'static str] {
        self.sources
    }

    /// Whether the host speaks the keryx native protocol (the caller gets the
    /// whole composed result back instead of a host-shaped answer).
    pub fn is_native(&self) -> bool {
        self.encoder == EncoderKind::Keryx
    }

    /// Every host event the adapter maps, in file order.
    pub fn events(&self) -> &'static [HostEvent] {
        self.events
    }

    /// The host events the installer registers, with their canonical event.
    pub fn wired_events(&self) -> impl Iterator<Item = (&'static str, Event)> + use<> {
        self.events
            .iter()
            .filter(|e| e.wire)
            .map(|e| (e.name, e.event))
    }

    /// Host events that exist but are deliberately not handled.
    pub fn unmapped_events(&self) -> &'static [&'static str] {
        self.unmapped
    }

    pub(super) fn host_event(&self, host_event: &str) -> Option<&'static HostEvent> {
        self.events.iter().find(|e| e.name == host_event)
    }

    /// The canonical event a host event maps to; `None` for unknown and
    /// unmapped host events. A payload may still refine it (Gemini's AfterTool
    /// with an error decodes as PostToolUseFailure).
    pub fn canonical_event(&self, host_event: &str) -> Option<Event> {
        self.host_event(host_event).map(|e| e.event)
    }

    /// The wired host event for a canonical event (`PreToolUse` → `BeforeTool`).
    pub fn host_event_for(&self, event: Event) -> Option<&'static str> {
        self.events
            .iter()
            .find(|e| e.wire && e.event == event)
            .map(|e| e.name)
    }

    fn mapped(&self, event: Event) -> impl Iterator<Item = &'static HostEvent> + use<> {
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
    pub fn bridge_for(&self, event: Event) -> Option<Bridge<'static>> {
        if self.can_gate(event) {
            return None;
        }
        self.bridges
            .iter()
            .find(|b| b.event == event)
            .map(|b| Bridge {
                event: b.event,
                via: b.via,
                tool: b.tool,
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
    pub fn match_all(&self) -> Option<&'static str> {
        self.match_all
    }

    /// Whether the host closes stdin after the payload (the guard never
    /// depends on it; this is for `doctor`).
    pub fn closes_stdin(&self) -> bool {
        self.closes_stdin
    }

    /// The host's exit-code rule, one sentence.
    pub fn exit_rule(&self) -> &'static str {
        self.exit_rule
    }

    /// Known limitations, one sentence each.
    pub fn notes(&self) -> &'static [&'static str] {
        self.notes
    }

    /// A host tool name in canonical form, without payload context (an MCP
    /// name that needs the payload to find its server comes back unchanged).
    pub fn canonical_tool(&self, host_tool: &str) -> String {
        super::decode::canonical_tool(self, host_tool, &Value::Null)
    }
}
