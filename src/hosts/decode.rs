//! Host payload → [`EventInput`], driven by an adapter's field mappings.
//! Every mapped field is strict: a field of an unexpected type is an error
//! naming it, never silently dropped (a gate must not run on a guess, and a
//! prompt gate that saw no prompt would pass everything).

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::adapter::{
    Adapter, FieldMap, Transform, ValueKind, lookup_path as lookup, table_get, type_name,
};
use crate::config::model::Profile;
use crate::runtime::types::{EventInput, Outcome};

/// Why a payload could not be decoded; names the host field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("host `{host}` has no event `{event}`")]
    UnknownEvent { host: String, event: String },
    #[error("host `{host}` event `{event}` is not handled by keryx-hooks")]
    UnmappedEvent { host: String, event: String },
    #[error("the payload is not a JSON object")]
    NotAnObject,
    #[error("payload field `{field}` is missing (needed for `{canonical}`)")]
    Missing { field: String, canonical: String },
    #[error("payload field `{field}` should be {expected}, found {found}")]
    WrongType {
        field: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("payload field `{field}` has an unknown value `{value}`")]
    BadValue { field: String, value: String },
    /// Not a failure: the delivery repeats what another event already
    /// reported, and there is nothing to run for it.
    #[error("host `{host}` event `{event}` is skipped: {why}")]
    Skipped {
        host: String,
        event: String,
        why: String,
    },
}

/// The slots of [`EventInput`] that are not payload fields.
#[derive(Default)]
struct Slots {
    session_id: Option<String>,
    run_id: Option<String>,
    cwd: Option<String>,
    profile: Option<Profile>,
    interactive: Option<bool>,
    decide_outcome: Option<Outcome>,
    parent_session_id: Option<String>,
}

impl Slots {
    fn is_slot(name: &str) -> bool {
        matches!(
            name,
            "sessionId"
                | "runId"
                | "cwd"
                | "policyProfile"
                | "interactive"
                | "decideOutcome"
                | "parentSessionId"
        )
    }

    fn is_set(&self, name: &str) -> bool {
        match name {
            "sessionId" => self.session_id.is_some(),
            "runId" => self.run_id.is_some(),
            "cwd" => self.cwd.is_some(),
            "policyProfile" => self.profile.is_some(),
            "interactive" => self.interactive.is_some(),
            "decideOutcome" => self.decide_outcome.is_some(),
            "parentSessionId" => self.parent_session_id.is_some(),
            _ => false,
        }
    }

    fn set(&mut self, name: &str, field: &str, v: &Value) -> Result<(), DecodeError> {
        let text = || {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| wrong_type(field, ValueKind::String, v))
        };
        match name {
            "sessionId" => self.session_id = Some(text()?),
            "runId" => self.run_id = Some(text()?),
            "cwd" => self.cwd = Some(text()?),
            "parentSessionId" => self.parent_session_id = Some(text()?),
            "policyProfile" => {
                let s = text()?;
                self.profile = Some(Profile::parse(&s).ok_or_else(|| bad_value(field, &s))?);
            }
            "decideOutcome" => {
                let s = text()?;
                self.decide_outcome = Some(Outcome::parse(&s).ok_or_else(|| bad_value(field, &s))?);
            }
            "interactive" => {
                self.interactive = Some(
                    v.as_bool()
                        .ok_or_else(|| wrong_type(field, ValueKind::Boolean, v))?,
                )
            }
            _ => unreachable!("checked by Slots::is_slot"),
        }
        Ok(())
    }
}

fn wrong_type(field: &str, expected: ValueKind, v: &Value) -> DecodeError {
    DecodeError::WrongType {
        field: field.to_owned(),
        expected: expected.as_str(),
        found: type_name(v),
    }
}

fn bad_value(field: &str, value: &str) -> DecodeError {
    DecodeError::BadValue {
        field: field.to_owned(),
        value: value.to_owned(),
    }
}

/// A host tool name in canonical form: the adapter's table first, then its
/// MCP naming rule; anything else passes through unchanged.
pub(super) fn canonical_tool(adapter: &Adapter, name: &str, payload: &Value) -> String {
    if let Some(canonical) = table_get(adapter.tools, name) {
        return canonical.to_owned();
    }
    if let Some(mcp) = &adapter.mcp
        && let Some(rest) = name.strip_prefix(mcp.prefix)
    {
        let from_payload = |p: Option<&str>| {
            p.and_then(|p| lookup(payload, p))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let server =
            from_payload(mcp.server_path).or_else(|| mcp.default_server.map(str::to_owned));
        let tool = from_payload(mcp.tool_path).unwrap_or_else(|| rest.to_owned());
        if let Some(server) = server {
            return format!("mcp__{server}__{tool}");
        }
    }
    name.to_owned()
}

impl Adapter {
    /// A host tool name in canonical form, without payload context (an MCP
    /// name that needs the payload to find its server comes back unchanged).
    pub fn canonical_tool(&self, host_tool: &str) -> String {
        canonical_tool(self, host_tool, &Value::Null)
    }
}

/// `{message, code?}` from a string (Claude's `Exit code 3\n…`) or an object.
fn error_object(v: &Value) -> Value {
    match v {
        Value::String(s) => {
            let code = s
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("Exit code "))
                .and_then(|n| n.trim().parse::<i64>().ok());
            match code {
                Some(c) => json!({ "message": s, "code": c }),
                None => json!({ "message": s }),
            }
        }
        Value::Object(m) => {
            let message = m
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string());
            match m
                .get("code")
                .or_else(|| m.get("type"))
                .filter(|c| !c.is_null())
            {
                Some(code) => json!({ "message": message, "code": code }),
                None => json!({ "message": message }),
            }
        }
        other => json!({ "message": other.to_string() }),
    }
}

/// A prompt as text: a string as is, a list of content parts (Kimi Code's
/// `[{"type":"text","text":…}]`) as its text parts joined by newlines;
/// `None` for anything else.
fn prompt_text(v: &Value) -> Option<Value> {
    match v {
        Value::String(_) => Some(v.clone()),
        Value::Array(parts) => {
            let mut texts = Vec::with_capacity(parts.len());
            for part in parts {
                match part {
                    Value::String(s) => texts.push(s.as_str()),
                    Value::Object(m) => match m.get("text") {
                        Some(Value::String(s)) => texts.push(s.as_str()),
                        // A part with no text (an image, a file) adds none.
                        None | Some(Value::Null) if m.get("type") != Some(&json!("text")) => {}
                        _ => return None,
                    },
                    _ => return None,
                }
            }
            Some(Value::String(texts.join("\n")))
        }
        _ => None,
    }
}

fn apply_transform(adapter: &Adapter, t: Option<Transform>, v: &Value, payload: &Value) -> Value {
    match t {
        None => v.clone(),
        Some(Transform::Text) => prompt_text(v).unwrap_or_else(|| v.clone()),
        Some(Transform::Tool) => match v.as_str() {
            Some(name) => Value::String(canonical_tool(adapter, name, payload)),
            None => v.clone(),
        },
        // Some hosts (Cursor MCP, older Copilot) send arguments as a JSON
        // string; hooks want the object.
        Some(Transform::Json) => match v.as_str() {
            Some(s) => match serde_json::from_str::<Value>(s) {
                Ok(parsed @ (Value::Object(_) | Value::Array(_))) => parsed,
                _ => v.clone(),
            },
            None => v.clone(),
        },
        Some(Transform::Error) => error_object(v),
        Some(Transform::Positive) => Value::Bool(v.as_f64().is_some_and(|n| n > 0.0)),
    }
}

impl Adapter {
    /// Decodes one payload for `host_event` into the canonical event input.
    pub fn decode(&self, host_event: &str, payload: &Value) -> Result<EventInput, DecodeError> {
        let Some(spec) = self.host_event(host_event) else {
            let (host, event) = (self.name.to_owned(), host_event.to_owned());
            return Err(if self.unmapped_events().contains(&host_event) {
                DecodeError::UnmappedEvent { host, event }
            } else {
                DecodeError::UnknownEvent { host, event }
            });
        };
        let obj = payload.as_object().ok_or(DecodeError::NotAnObject)?;

        let mut event = spec.event();
        if let Some(r) = &spec.refine
            && lookup(payload, r.when).is_some()
        {
            event = r.event;
        }

        if let Some(skip) = &spec.skip
            && let Some(v) = lookup(payload, skip.when)
            && skip.equals.is_none_or(|e| e.matches(v))
        {
            return Err(DecodeError::Skipped {
                host: self.name.to_owned(),
                event: host_event.to_owned(),
                why: skip.why.to_owned(),
            });
        }

        let mut slots = Slots::default();
        let mut fields = Map::new();
        let mut consumed: Vec<&str> = Vec::new();
        // Event-level mappings first, so they win over the host-wide ones.
        for map in spec.fields.iter().chain(self.fields.iter()) {
            if slots.is_set(map.to) || fields.contains_key(map.to) {
                continue;
            }
            let Some((path, v)) = map
                .from
                .iter()
                .find_map(|p| lookup(payload, p).map(|v| (*p, v)))
            else {
                if map.required {
                    return Err(missing(map));
                }
                continue;
            };
            consumed.push(path.split('.').next().unwrap_or(path));
            if Slots::is_slot(map.to) {
                slots.set(map.to, path, v)?;
                continue;
            }
            if map.transform == Some(Transform::Text) && prompt_text(v).is_none() {
                return Err(DecodeError::WrongType {
                    field: path.to_owned(),
                    expected: "a string or a list of text parts",
                    found: type_name(v),
                });
            }
            if !map.kind.accepts(v) {
                return Err(wrong_type(path, map.kind, v));
            }
            let mut value = apply_transform(self, map.transform, v, payload);
            if let Some(renamed) = value.as_str().and_then(|s| table_get(map.values, s)) {
                value = Value::String(renamed.to_owned());
            }
            if map.transform == Some(Transform::Tool)
                && let (Some(host), Some(canonical)) = (v.as_str(), value.as_str())
                && host != canonical
            {
                fields.insert("hostToolName".into(), v.clone());
            }
            fields.insert(map.to.to_owned(), value);
        }

        if self.passthrough {
            for (k, v) in obj {
                if !consumed.contains(&k.as_str())
                    && !self.ignore.iter().any(|i| i == k)
                    && !fields.contains_key(k)
                {
                    fields.insert(k.clone(), v.clone());
                }
            }
        }

        for &name in spec.require {
            let present = fields.get(name).is_some_and(|v| !v.is_null()) || slots.is_set(name);
            if !present {
                let field = spec
                    .fields
                    .iter()
                    .chain(self.fields.iter())
                    .find(|m| m.to == name)
                    .map(|m| m.from.join("` or `"))
                    .unwrap_or_else(|| name.to_owned());
                return Err(DecodeError::Missing {
                    field,
                    canonical: name.to_owned(),
                });
            }
        }

        let Some(session_id) = slots.session_id else {
            return Err(DecodeError::Missing {
                field: self
                    .fields
                    .iter()
                    .find(|m| m.to == "sessionId")
                    .map(|m| m.from.join("` or `"))
                    .unwrap_or_else(|| "sessionId".into()),
                canonical: "sessionId".into(),
            });
        };
        let mut input = EventInput::new(event, session_id);
        input.run_id = slots.run_id;
        input.cwd = slots.cwd.map(PathBuf::from);
        input.profile = slots.profile;
        if let Some(i) = slots.interactive {
            input.interactive = i;
        }
        if let Some(o) = slots.decide_outcome {
            input.decide_outcome = o;
        }
        input.parent_session_id = slots.parent_session_id;
        input.fields = fields;
        if self.host_fields {
            input.host_fields = obj.clone();
        }
        input.origin = Some(crate::runtime::types::Origin {
            host: self.name,
            event: spec.name,
            payload: obj.clone(),
        });
        Ok(input)
    }
}

fn missing(map: &FieldMap) -> DecodeError {
    DecodeError::Missing {
        field: map.from.join("` or `"),
        canonical: map.to.to_owned(),
    }
}
