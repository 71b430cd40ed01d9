//! The canonical shapes that flow through the runtime: what happened (an
//! [`EventInput`], decoded from any host) and what the hooks made of it (a
//! [`FireResult`], encoded back into any host's shape).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::model::{HookClass, Profile, Scope};
use crate::events::Event;

/// allow < ask < deny, plus `none` for "no hook said anything".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    None,
    Allow,
    Ask,
    Deny,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::None => "none",
            Outcome::Allow => "allow",
            Outcome::Ask => "ask",
            Outcome::Deny => "deny",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        match s {
            "allow" => Some(Outcome::Allow),
            "ask" => Some(Outcome::Ask),
            "deny" => Some(Outcome::Deny),
            "none" => Some(Outcome::None),
            _ => None,
        }
    }
}

/// One event, in canonical form, as a host reported it.
#[derive(Debug, Clone)]
pub struct EventInput {
    pub event: Event,
    pub session_id: String,
    /// The host's turn or prompt id, when it has one.
    pub run_id: Option<String>,
    pub cwd: Option<std::path::PathBuf>,
    pub profile: Option<Profile>,
    /// Whether anyone can answer an ask; `false` turns asks into denies.
    pub interactive: bool,
    /// The policy engine's outcome for PreToolUse (keryx shell passes it;
    /// other hosts decide afterwards, so it is `Allow`).
    pub decide_outcome: Outcome,
    pub parent_session_id: Option<String>,
    /// The event's camelCase payload fields from the spec's table
    /// (`toolCallId`, `toolName`, `toolInput`, `toolOutput`, `error`,
    /// `prompt`, `reason`, `tokenCount`, `stopReason`, `subagentId`,
    /// `spawnKind`, `outcome`, `endReason`, `projectRoot`, …), plus
    /// `stopHookActive` where the host reports it.
    pub fields: Map<String, Value>,
    /// The payload as the host sent it, for hosts whose adapter keeps it
    /// (`hostFields`): hooks written for that host get its own fields next
    /// to the canonical ones. Empty otherwise.
    pub host_fields: Map<String, Value>,
    /// The event as the host sent it, for hooks written for that host
    /// (`command.protocol`). `None` when no host sent it (`keryx-hooks
    /// test`, the keryx shell).
    pub origin: Option<Origin>,
}

/// Which host sent an event, its own name for it, and its payload.
#[derive(Debug, Clone)]
pub struct Origin {
    pub host: &'static str,
    pub event: &'static str,
    pub payload: Map<String, Value>,
}

impl EventInput {
    pub fn new(event: Event, session_id: impl Into<String>) -> Self {
        EventInput {
            event,
            session_id: session_id.into(),
            run_id: None,
            cwd: None,
            profile: None,
            interactive: true,
            decide_outcome: Outcome::Allow,
            parent_session_id: None,
            fields: Map::new(),
            host_fields: Map::new(),
            origin: None,
        }
    }

    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    pub fn tool_name(&self) -> Option<&str> {
        self.str_field("toolName")
    }

    pub fn tool_call_id(&self) -> Option<&str> {
        self.str_field("toolCallId")
    }

    pub fn tool_input(&self) -> Option<&Value> {
        self.fields.get("toolInput")
    }
}

/// The failure kinds of the spec's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    Timeout,
    Crash,
    Malformed,
    SandboxUnavailable,
    Refused,
}

/// Something worth recording that is not a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Anomaly {
    /// e.g. `hook-decision-ignored`, `hook-context-truncated`.
    pub kind: String,
    pub hook_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One hook invocation, exactly the spec's HookInvocationRecord.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookInvocationRecord {
    pub hook_id: String,
    pub event: &'static str,
    pub class: HookClass,
    pub scope: Scope,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub duration_ms: u64,
    pub changed_outcome: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// What one line of `records.jsonl` stands for (its `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecordKind {
    /// A hook was invoked.
    Hook,
    /// A hook that would have applied did not run (an untrusted or changed
    /// project hook held back).
    Skipped,
    /// No hook ran: the hook config is invalid (`hook-config-invalid`).
    ConfigInvalid,
    /// No hook ran: the payload could not be read or decoded.
    PayloadInvalid,
    /// No hook ran: the shim itself could not work (`keryx-hooks-unavailable`).
    Unavailable,
    /// A repeated delivery of a tool call, answered from the first one.
    DuplicateDelivery,
}

/// One entry to append: the spec's record plus what only the line carries.
#[derive(Debug, Clone)]
pub struct RecordEntry {
    pub kind: RecordKind,
    pub record: HookInvocationRecord,
    /// The anomalies this hook caused.
    pub anomalies: Vec<Anomaly>,
    /// Why a skipped hook did not run (`untrusted`, `changed`, …).
    pub skipped_because: Option<String>,
}

impl RecordEntry {
    /// One entry per invocation in `result`, each with its own anomalies,
    /// then one per gate the call's denial kept from running.
    pub fn hooks(result: &FireResult) -> Vec<RecordEntry> {
        let ran = result.records.iter().map(|r| RecordEntry {
            kind: RecordKind::Hook,
            record: r.clone(),
            anomalies: result
                .anomalies
                .iter()
                .filter(|a| a.hook_id == r.hook_id)
                .cloned()
                .collect(),
            skipped_because: None,
        });
        let not_reached = result.not_reached.iter().map(|r| RecordEntry {
            kind: RecordKind::Skipped,
            record: r.clone(),
            anomalies: Vec::new(),
            skipped_because: Some(NOT_REACHED.to_owned()),
        });
        ran.chain(not_reached).collect()
    }

    /// An entry for a decision no hook made (`hook_id` names the shim).
    pub fn shim(kind: RecordKind, event: Event, result: &FireResult, duration_ms: u64) -> Self {
        RecordEntry {
            kind,
            record: HookInvocationRecord {
                hook_id: SHIM_HOOK_ID.to_owned(),
                event: event.as_str(),
                class: HookClass::Gate,
                scope: Scope::Builtin,
                outcome: result.outcome,
                failure: None,
                reason: result.reason.clone(),
                duration_ms,
                changed_outcome: result.outcome == Outcome::Deny,
                exit_code: None,
            },
            anomalies: result.anomalies.clone(),
            skipped_because: None,
        }
    }
}

/// The `skippedBecause` of a gate that never ran because the call was
/// already denied.
pub const NOT_REACHED: &str = "already-denied";

/// The `hookId` of entries no hook produced.
pub const SHIM_HOOK_ID: &str = "keryx-hooks";

/// The event around a batch of entries: when, which host and session,
/// where, and what call.
#[derive(Debug, Clone, Default)]
pub struct RecordContext {
    pub host: String,
    pub session_id: String,
    pub project_root: Option<String>,
    /// The canonical tool name, on per-tool events.
    pub tool: Option<String>,
    /// A short, redacted summary of the call.
    pub summary: Option<String>,
}

impl Serialize for HookClass {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// What firing one event came to: the keryx native protocol's stdout
/// (ARCHITECTURE §4), and what every host adapter encodes from.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FireResult {
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
    pub matched_rules: Vec<String>,
    pub anomalies: Vec<Anomaly>,
    pub records: Vec<HookInvocationRecord>,
    /// Lines the user should see (untrusted project hooks, drift, disabled
    /// gates). Hosts show them as user-visible context on SessionStart.
    pub notices: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inherited_hook_ids: Option<Vec<String>>,
    /// Selected gates that never ran because the call was already denied
    /// (by the policy or an earlier gate): recorded, never said.
    #[serde(skip)]
    pub not_reached: Vec<HookInvocationRecord>,
}

impl FireResult {
    /// Nothing fired and nothing was said.
    pub fn none() -> Self {
        FireResult {
            outcome: Outcome::None,
            reason: None,
            additional_context: None,
            matched_rules: Vec::new(),
            anomalies: Vec::new(),
            records: Vec::new(),
            notices: Vec::new(),
            inherited_hook_ids: None,
            not_reached: Vec::new(),
        }
    }

    /// The shim could not work at all: deny on gate-capable events, with a
    /// reason naming the problem; nothing on the others. Stop is the
    /// exception: a "deny" there would feed the error back to the agent as
    /// its next instruction, turn after turn, and guards nothing.
    pub fn broken(event: Option<Event>, reason: impl Into<String>) -> Self {
        let gate = event.is_none_or(|e| e.is_gate_capable() && e != Event::Stop);
        let mut r = FireResult::none();
        if gate {
            r.outcome = Outcome::Deny;
            r.reason = Some(reason.into());
            r.matched_rules.push("keryx-hooks-unavailable".into());
        }
        r
    }
}
