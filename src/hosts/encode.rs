//! [`FireResult`] → the host's stdout, stderr and exit code, from the
//! adapter's output templates. Allow is always silence: an explicit allow
//! would skip the host's own permission prompt (loosen) or be rejected.

use serde_json::{Map, Value};

use super::keryx;
use crate::adapter::{Adapter, EncoderKind, HostEvent, Json, Output};
use crate::events::Event;
use crate::runtime::types::{FireResult, Outcome};

/// What `run` writes back to the host: at most one JSON object on stdout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Encoded {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: u8,
}

impl Encoded {
    /// Nothing on stdout, nothing on stderr, exit 0: "no objection".
    pub fn is_silent(&self) -> bool {
        self.stdout.is_empty() && self.stderr.is_empty() && self.exit_code == 0
    }
}

/// Every host documents exit 2 as its blocking code, so it is the last resort
/// for a deny on a host event the adapter does not know.
const BLOCKING_EXIT: u8 = 2;

struct Values<'a> {
    reason: &'a str,
    context: Option<&'a str>,
    notices: Option<&'a str>,
}

impl Values<'_> {
    fn get(&self, placeholder: &str) -> Option<&str> {
        match placeholder {
            "$reason" => Some(self.reason),
            "$context" => self.context,
            "$notices" => self.notices,
            _ => None,
        }
    }
}

/// Accumulates several answers (a deny plus context) into one reply.
#[derive(Default)]
struct Reply {
    stdout: Map<String, Value>,
    stderr: Vec<String>,
    exit: u8,
}

impl Reply {
    fn add(&mut self, out: &Output, values: &Values<'_>) {
        if let Some(template) = out.stdout {
            merge(&mut self.stdout, fill_object(template, values));
        }
        if let Some(line) = out.stderr {
            let text = values.get(line).unwrap_or(line);
            self.stderr.push(text.to_owned());
        }
        self.exit = self.exit.max(out.exit);
    }

    fn finish(self) -> Encoded {
        let stdout = if self.stdout.is_empty() {
            String::new()
        } else {
            let mut s = Value::Object(self.stdout).to_string();
            s.push('\n');
            s
        };
        let stderr = if self.stderr.is_empty() {
            String::new()
        } else {
            let mut s = self.stderr.join("\n");
            s.push('\n');
            s
        };
        Encoded {
            stdout,
            stderr,
            exit_code: self.exit,
        }
    }
}

/// The template as a value with its placeholder strings replaced; only
/// whole values are placeholders, so text from hooks is never interpreted.
fn fill(template: &Json, values: &Values<'_>) -> Value {
    match *template {
        Json::Str(s) => Value::String(values.get(s).unwrap_or(s).to_owned()),
        Json::Obj(entries) => Value::Object(fill_object(entries, values)),
        Json::Arr(items) => Value::Array(items.iter().map(|v| fill(v, values)).collect()),
        Json::Null | Json::Bool(_) | Json::Int(_) => template.to_value(),
    }
}

fn fill_object(entries: &[(&'static str, Json)], values: &Values<'_>) -> Map<String, Value> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), fill(v, values)))
        .collect()
}

/// Deep merge; two different strings at one key are both kept.
fn merge(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(Value::Object(a)), Value::Object(b)) => merge(a, b),
            (Some(Value::String(a)), Value::String(b)) => {
                if *a != b {
                    a.push_str("\n\n");
                    a.push_str(&b);
                }
            }
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// The reason a deny carries: the hooks' own, else one naming the rules, so
/// no host ever gets an empty reason (Codex treats that as a failed hook).
fn reason_text(result: &FireResult) -> String {
    match result.reason.as_deref().map(str::trim) {
        Some(r) if !r.is_empty() => r.to_owned(),
        _ if result.matched_rules.is_empty() => "blocked by a keryx hook".to_owned(),
        _ => format!(
            "blocked by keryx hook `{}`",
            result.matched_rules.join("`, `")
        ),
    }
}

fn non_empty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.trim().is_empty())
}

impl Adapter {
    /// Encodes a composed result for `host_event`. `event` is the canonical
    /// event the decoder produced (it may be a refinement of the host event).
    pub fn encode(&self, host_event: &str, event: Event, result: &FireResult) -> Encoded {
        if self.encoder == EncoderKind::Keryx {
            return keryx::encode(result);
        }
        let reason = reason_text(result);
        let blocking = matches!(result.outcome, Outcome::Deny | Outcome::Ask);

        let Some(spec) = self.host_event(host_event) else {
            if blocking && event.is_gate_capable() {
                return Encoded {
                    stdout: String::new(),
                    stderr: format!("{reason}\n"),
                    exit_code: BLOCKING_EXIT,
                };
            }
            return Encoded::default();
        };

        let notices = result.notices.join("\n");
        let notices = non_empty(Some(notices.as_str()));
        let values = Values {
            reason: &reason,
            context: non_empty(result.additional_context.as_deref()),
            notices,
        };

        let mut reply = Reply::default();
        let decision = decision_output(spec, event, result.outcome);
        if let Some(out) = decision {
            reply.add(out, &values);
        } else if blocking {
            tracing::debug!(host = %self.name, host_event, "this host cannot gate the event; the decision is dropped");
        }
        if values.context.is_some()
            && let Some(out) = &spec.context
        {
            reply.add(out, &values);
        }
        if values.notices.is_some()
            && !self.holds_notices(host_event, event, result)
            && let Some(out) = spec.notice.as_ref().or(self.notice.as_ref())
        {
            reply.add(out, &values);
        }
        reply.finish()
    }

    /// Whether the notices of `result` must be kept out of its answer on
    /// `host_event`: the answer is a deny on stderr, the host gives that
    /// stderr to the model (`denyStderrReachesModel`), and the notices
    /// would go to stderr too. The caller holds them for the person.
    pub fn holds_notices(&self, host_event: &str, event: Event, result: &FireResult) -> bool {
        if !self.deny_stderr_reaches_model || result.notices.is_empty() {
            return false;
        }
        let Some(spec) = self.host_event(host_event) else {
            return false;
        };
        let on_stderr = |o: &Output| o.stderr.is_some();
        decision_output(spec, event, result.outcome).is_some_and(on_stderr)
            && spec
                .notice
                .as_ref()
                .or(self.notice.as_ref())
                .is_some_and(on_stderr)
    }
}

/// The output a decision is answered with on one host event; `None` for an
/// allow, or a decision the event cannot carry.
fn decision_output(spec: &HostEvent, event: Event, outcome: Outcome) -> Option<&Output> {
    match outcome {
        Outcome::Deny => spec.deny.as_ref(),
        // Tighten-only: where the host has no ask, or no one to answer it
        // (SubagentStart), the ask is sent as a deny.
        Outcome::Ask if event.ask_means_deny() => spec.deny.as_ref(),
        Outcome::Ask => spec.ask.as_ref().or(spec.deny.as_ref()),
        Outcome::Allow | Outcome::None => None,
    }
}
