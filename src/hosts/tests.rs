//! Unit tests for the adapter data and the engine: schema validity, decode of
//! every captured payload, and exact encodings per host and event.

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::events::Event;
use crate::runtime::types::{EventInput, FireResult, Outcome};

const SCHEMA: &str = include_str!("../../schema/adapter.schema.json");

fn host(name: &str) -> &'static Adapter {
    adapter(name).unwrap_or_else(|| panic!("no adapter `{name}`"))
}

fn result(outcome: Outcome, reason: Option<&str>, context: Option<&str>) -> FireResult {
    let mut r = FireResult::none();
    r.outcome = outcome;
    r.reason = reason.map(str::to_owned);
    r.additional_context = context.map(str::to_owned);
    r
}

fn deny(reason: &str) -> FireResult {
    result(Outcome::Deny, Some(reason), None)
}

fn ask(reason: &str) -> FireResult {
    result(Outcome::Ask, Some(reason), None)
}

fn context(text: &str) -> FireResult {
    result(Outcome::None, None, Some(text))
}

/// Encodes for a host event, using the adapter's own canonical mapping.
fn enc(host_name: &str, host_event: &str, r: &FireResult) -> Encoded {
    let a = host(host_name);
    let event = a
        .canonical_event(host_event)
        .unwrap_or_else(|| panic!("{host_name} has no event {host_event}"));
    a.encode(host_event, event, r)
}

fn out(stdout: &str) -> Encoded {
    Encoded {
        stdout: format!("{stdout}\n"),
        stderr: String::new(),
        exit_code: 0,
    }
}

// ---------------------------------------------------------------- the data

#[test]
fn every_host_is_embedded() {
    assert_eq!(
        host_names(),
        [
            "claude-code",
            "cline",
            "codex",
            "copilot",
            "cursor",
            "deepagents",
            "gemini-cli",
            "keryx",
            "kilo",
            "kimi",
            "opencode",
            "pi",
            "qwen-code",
            "vibe"
        ]
    );
    for name in host_names() {
        assert_eq!(
            host(name).name(),
            *name,
            "adapter name must equal its folder"
        );
    }
    assert!(adapter("nope").is_none());
}

#[test]
fn exactly_one_host_speaks_the_native_protocol() {
    let native: Vec<&str> = all().filter(|a| a.is_native()).map(|a| a.name()).collect();
    assert_eq!(native, ["keryx"]);
    assert_eq!(super::native().name(), "keryx");
}

/// Each alias names one host: none is a host's name or another host's
/// alias, so `lookup` can never be ambiguous.
#[test]
fn aliases_name_one_host_each() {
    let mut seen: Vec<&str> = host_names().to_vec();
    for a in all() {
        for alias in a.aliases() {
            assert!(
                !seen.contains(alias),
                "`{alias}` (an alias of {}) is already a host's name or alias",
                a.name()
            );
            seen.push(alias);
        }
    }
    for (alias, host) in [
        ("claude", "claude-code"),
        ("gemini", "gemini-cli"),
        ("qwen", "qwen-code"),
        ("kimi-code", "kimi"),
        ("copilot-cli", "copilot"),
        ("github-copilot", "copilot"),
        ("open-code", "opencode"),
        ("kilo-code", "kilo"),
        ("kilocode", "kilo"),
        ("deepagents-code", "deepagents"),
        ("dcode", "deepagents"),
        ("cline-cli", "cline"),
    ] {
        assert_eq!(lookup(alias).map(|a| a.name()), Some(host), "{alias}");
        assert!(adapter(alias).is_none(), "`run` takes only names: {alias}");
    }
    for name in host_names() {
        assert_eq!(lookup(name).map(|a| a.name()), Some(*name));
    }
    assert!(lookup("nope").is_none());
}

#[test]
fn a_misspelt_host_suggests_the_nearest_one() {
    let every: Vec<&'static Adapter> = all().collect();
    let guess = |typed: &str| closest(typed, &every).map(|a| a.name());
    assert_eq!(guess("claud"), Some("claude-code"));
    assert_eq!(guess("Claude-Code"), Some("claude-code"));
    assert_eq!(guess("claude code"), Some("claude-code"));
    assert_eq!(guess("gem"), Some("gemini-cli"));
    assert_eq!(guess("gemini-code"), Some("gemini-cli"));
    assert_eq!(guess("qwen3"), Some("qwen-code"));
    assert_eq!(guess("curser"), Some("cursor"));
    assert_eq!(guess("opencod"), Some("opencode"));
    assert_eq!(guess("kimi-k2"), Some("kimi"));
    // A start shared by several hosts, or nothing near: no guess.
    assert_eq!(guess("co"), None);
    assert_eq!(guess("vim"), None);
    assert_eq!(guess(""), None);
    // Only among the hosts offered.
    let installable: Vec<&'static Adapter> = every
        .iter()
        .copied()
        .filter(|a| a.name() != "keryx")
        .collect();
    assert!(closest("keryx", &installable).is_none());
}

#[test]
fn every_adapter_file_validates_against_the_schema() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    for (name, text) in ADAPTER_SOURCES {
        let doc: Value = serde_json::from_str(text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{} at {}", e, e.instance_path().as_str()))
            .collect();
        assert!(
            errors.is_empty(),
            "adapters/{name}/adapter.json:\n{}",
            errors.join("\n")
        );
    }
}

#[test]
fn the_schema_rejects_what_the_engine_could_not_use() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let base: Value = serde_json::from_str(ADAPTER_SOURCES[0].1).unwrap();
    let broken = [
        ("/events/PreToolUse/event", json!("BeforeTool")),
        ("/tools/Task", json!("bash")),
        ("/fields/0/to", json!("session")),
        ("/events/PreToolUse/deny", json!({"exit": 300})),
        ("/timeout/unit", json!("minutes")),
    ];
    for (pointer, value) in broken {
        let mut doc = base.clone();
        *doc.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer}")) = value;
        assert!(!validator.is_valid(&doc), "{pointer} should be rejected");
    }
}

/// Every placeholder in a template of each kind.
fn placeholders(v: &Value, into: &mut Vec<String>) {
    match v {
        Value::String(s) if s.starts_with('$') => into.push(s.clone()),
        Value::Object(m) => m.values().for_each(|v| placeholders(v, into)),
        Value::Array(a) => a.iter().for_each(|v| placeholders(v, into)),
        _ => {}
    }
}

#[test]
fn adapter_data_is_consistent() {
    for (name, text) in ADAPTER_SOURCES {
        let doc: Value = serde_json::from_str(text).unwrap();
        let a = host(name);
        let events = doc["events"].as_object().unwrap();
        for unmapped in a.unmapped_events() {
            assert!(
                !events.contains_key(*unmapped),
                "{name}: {unmapped} is both mapped and unmapped"
            );
        }
        let host_tos: Vec<&str> = doc["fields"]
            .as_array()
            .map(|f| f.iter().map(|m| m["to"].as_str().unwrap()).collect())
            .unwrap_or_default();
        for (ev_name, ev) in events {
            let mut tos = host_tos.clone();
            if let Some(f) = ev["fields"].as_array() {
                tos.extend(f.iter().map(|m| m["to"].as_str().unwrap()));
            }
            for req in ev["require"].as_array().into_iter().flatten() {
                let req = req.as_str().unwrap();
                assert!(
                    tos.contains(&req) || doc["passthrough"] == true,
                    "{name}/{ev_name}: required `{req}` has no mapping"
                );
            }
            for (kind, allowed) in [
                ("deny", "$reason"),
                ("ask", "$reason"),
                ("context", "$context"),
                ("notice", "$notices"),
            ] {
                let mut found = Vec::new();
                placeholders(&ev[kind], &mut found);
                for p in found {
                    assert_eq!(p, allowed, "{name}/{ev_name}/{kind} uses {p}");
                }
                let o = &ev[kind];
                if o.is_object() && o.get("stdout").is_none() && o.get("stderr").is_none() {
                    panic!("{name}/{ev_name}/{kind} says nothing");
                }
            }
            // A deny must carry its reason somewhere the host shows it.
            for kind in ["deny", "ask"] {
                if ev[kind].is_object() {
                    let mut found = Vec::new();
                    placeholders(&ev[kind], &mut found);
                    assert!(
                        found.iter().any(|p| p == "$reason"),
                        "{name}/{ev_name}/{kind} drops the reason"
                    );
                }
            }
        }
        // One wired host event per canonical event, or gates would run twice.
        for e in Event::ALL {
            let wired = a.wired_events().filter(|(_, c)| *c == e).count();
            assert!(wired <= 1, "{name}: {e} wired {wired} times");
        }
        for e in Event::ALL {
            if let Some(b) = a.bridge_for(e) {
                assert!(
                    a.can_gate(b.via),
                    "{name}: bridge for {e} goes through {} which cannot gate",
                    b.via
                );
                assert!(!a.can_gate(e));
            }
        }
        assert!(!a.exit_rule().is_empty());
        if let Some(also) = a.also_runs() {
            assert!(
                adapter(also.host).is_some() && also.host != a.name(),
                "{name}: alsoRuns names another host"
            );
        }
        if let Some(h) = &a.config_files().home_env {
            assert!(
                a.config_env().contains(&h.var),
                "{name}: `homeEnv` moves its config, so `configEnv` names it"
            );
        }
        if let Some(trust) = a.project_trust() {
            assert!(trust.warning.contains("$file"), "{name}: which file?");
            assert!(!a.config_files().project.is_empty(), "{name}");
        }
    }
}

// ------------------------------------------- the generated data vs the files

/// One adapter file read plainly with serde_json, in one normal form: every
/// field present, absent ones at their documented defaults, `null` options
/// as `null`, `from` always a list, the name tables sorted by key; events
/// and output templates in file order.
mod normal {
    use serde_json::{Map, Value, json};

    fn or(v: &Value, key: &str, default: Value) -> Value {
        v.get(key).cloned().unwrap_or(default)
    }

    fn opt(v: &Value, key: &str, f: impl Fn(&Value) -> Value) -> Value {
        match v.get(key) {
            None | Some(Value::Null) => Value::Null,
            Some(x) => f(x),
        }
    }

    fn sorted(v: &Value, key: &str) -> Value {
        let mut pairs: Vec<(String, Value)> = v
            .get(key)
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        Value::Object(pairs.into_iter().collect())
    }

    fn list(v: &Value, key: &str, f: impl Fn(&Value) -> Value) -> Value {
        match v.get(key) {
            Some(Value::Array(items)) => items.iter().map(f).collect(),
            None => json!([]),
            Some(other) => panic!("{key} is {other}"),
        }
    }

    pub fn output(o: &Value) -> Value {
        json!({
            "stdout": opt(o, "stdout", Value::clone),
            "stderr": opt(o, "stderr", Value::clone),
            "exit": or(o, "exit", json!(0)),
        })
    }

    pub fn field(f: &Value) -> Value {
        let from = match &f["from"] {
            Value::String(s) => json!([s]),
            other => other.clone(),
        };
        json!({
            "to": f["to"],
            "from": from,
            "type": or(f, "type", json!("string")),
            "transform": opt(f, "transform", Value::clone),
            "required": or(f, "required", json!(false)),
            "values": sorted(f, "values"),
        })
    }

    pub fn event(e: &Value) -> Value {
        json!({
            "event": e["event"],
            "wire": or(e, "wire", json!(true)),
            "fields": list(e, "fields", field),
            "require": or(e, "require", json!([])),
            "refine": opt(e, "refine", |r| json!({ "when": r["when"], "event": r["event"] })),
            "skip": opt(e, "skip", |s| json!({
                "when": s["when"],
                "equals": opt(s, "equals", Value::clone),
                "why": s["why"],
            })),
            "deny": opt(e, "deny", output),
            "ask": opt(e, "ask", output),
            "context": opt(e, "context", output),
            "notice": opt(e, "notice", output),
        })
    }

    pub fn adapter(doc: &Value) -> Map<String, Value> {
        let events: Map<String, Value> = doc["events"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, e)| (k.clone(), event(e)))
            .collect();
        let v = json!({
            "name": doc["name"],
            "displayName": doc["displayName"],
            "aliases": or(doc, "aliases", json!([])),
            "notice": opt(doc, "notice", output),
            "encoder": doc["encoder"],
            "sources": or(doc, "sources", json!([])),
            "timeout": {
                "unit": doc["timeout"]["unit"],
                "default": opt(&doc["timeout"], "default", Value::clone),
            },
            "configFiles": {
                "format": doc["configFiles"]["format"],
                "user": doc["configFiles"]["user"],
                "project": doc["configFiles"]["project"],
                "homeEnv": opt(&doc["configFiles"], "homeEnv", |h| json!({
                    "var": h["var"],
                    "replaces": h["replaces"],
                })),
            },
            "matchAll": opt(doc, "matchAll", Value::clone),
            "closesStdin": doc["closesStdin"],
            "exitRule": doc["exitRule"],
            "passthrough": or(doc, "passthrough", json!(false)),
            "hostFields": or(doc, "hostFields", json!(false)),
            "hookEnv": or(doc, "hookEnv", json!([])),
            "ignore": or(doc, "ignore", json!([])),
            "fields": list(doc, "fields", field),
            "tools": sorted(doc, "tools"),
            "mcp": opt(doc, "mcp", |m| json!({
                "prefix": m["prefix"],
                "serverPath": opt(m, "serverPath", Value::clone),
                "toolPath": opt(m, "toolPath", Value::clone),
                "defaultServer": opt(m, "defaultServer", Value::clone),
            })),
            "events": events,
            "unmapped": or(doc, "unmapped", json!([])),
            "bridges": list(doc, "bridges", |b| json!({
                "event": b["event"],
                "via": b["via"],
                "tool": b["tool"],
            })),
            "notes": or(doc, "notes", json!([])),
        });
        let Value::Object(m) = v else { unreachable!() };
        m
    }
}

/// A generated adapter in [`normal`]'s form, read from the static data
/// alone: what the engine will see, written the way the file says it.
mod from_static {
    use serde_json::{Map, Value, json};

    use crate::adapter::{
        Adapter, ConfigFormat, EncoderKind, FieldMap, Output, Table, TimeoutUnit, Transform,
        ValueKind,
    };

    fn opt<T>(o: Option<T>, f: impl Fn(T) -> Value) -> Value {
        o.map_or(Value::Null, f)
    }

    fn table(t: Table) -> Value {
        assert!(
            t.windows(2).all(|w| w[0].0 < w[1].0),
            "a table is sorted by key, each key once: {t:?}"
        );
        Value::Object(t.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect())
    }

    fn output(o: &Output) -> Value {
        json!({
            "stdout": opt(o.stdout, |s| Value::Object(crate::adapter::object(s))),
            "stderr": o.stderr,
            "exit": o.exit,
        })
    }

    fn kind(k: ValueKind) -> &'static str {
        match k {
            ValueKind::String => "string",
            ValueKind::Boolean => "boolean",
            ValueKind::Number => "number",
            ValueKind::Object => "object",
            ValueKind::Array => "array",
            ValueKind::Any => "any",
        }
    }

    fn transform(t: Transform) -> &'static str {
        match t {
            Transform::Tool => "tool",
            Transform::Json => "json",
            Transform::Error => "error",
            Transform::Positive => "positive",
            Transform::Text => "text",
        }
    }

    fn fields(f: &[FieldMap]) -> Value {
        f.iter()
            .map(|m| {
                json!({
                    "to": m.to,
                    "from": m.from,
                    "type": kind(m.kind),
                    "transform": m.transform.map(transform),
                    "required": m.required,
                    "values": table(m.values),
                })
            })
            .collect()
    }

    pub fn adapter(a: &Adapter) -> Map<String, Value> {
        let events: Map<String, Value> = a
            .events
            .iter()
            .map(|e| {
                let v = json!({
                    "event": e.event.as_str(),
                    "wire": e.wire,
                    "fields": fields(e.fields),
                    "require": e.require,
                    "refine": opt(e.refine.as_ref(), |r| json!({
                        "when": r.when,
                        "event": r.event.as_str(),
                    })),
                    "skip": opt(e.skip.as_ref(), |s| json!({
                        "when": s.when,
                        "equals": opt(s.equals, |j| j.to_value()),
                        "why": s.why,
                    })),
                    "deny": opt(e.deny.as_ref(), output),
                    "ask": opt(e.ask.as_ref(), output),
                    "context": opt(e.context.as_ref(), output),
                    "notice": opt(e.notice.as_ref(), output),
                });
                (e.name.to_owned(), v)
            })
            .collect();
        let files = &a.config_files;
        let v = json!({
            "name": a.name,
            "displayName": a.display_name,
            "aliases": a.aliases,
            "notice": opt(a.notice.as_ref(), output),
            "encoder": match a.encoder {
                EncoderKind::Template => "template",
                EncoderKind::Keryx => "keryx",
            },
            "sources": a.sources,
            "timeout": {
                "unit": match a.timeout.unit {
                    TimeoutUnit::Seconds => "seconds",
                    TimeoutUnit::Milliseconds => "milliseconds",
                },
                "default": a.timeout.default,
            },
            "configFiles": {
                "format": match files.format {
                    ConfigFormat::Json => "json",
                    ConfigFormat::Toml => "toml",
                    ConfigFormat::Plugin => "plugin",
                    ConfigFormat::None => "none",
                },
                "user": files.user,
                "project": files.project,
                "homeEnv": opt(files.home_env.as_ref(), |h| json!({
                    "var": h.var,
                    "replaces": h.replaces,
                })),
            },
            "matchAll": a.match_all,
            "closesStdin": a.closes_stdin,
            "exitRule": a.exit_rule,
            "passthrough": a.passthrough,
            "hostFields": a.host_fields,
            "hookEnv": a.hook_env,
            "ignore": a.ignore,
            "fields": fields(a.fields),
            "tools": table(a.tools),
            "mcp": opt(a.mcp.as_ref(), |m| json!({
                "prefix": m.prefix,
                "serverPath": m.server_path,
                "toolPath": m.tool_path,
                "defaultServer": m.default_server,
            })),
            "events": events,
            "unmapped": a.unmapped,
            "bridges": a.bridges.iter().map(|b| json!({
                "event": b.event.as_str(),
                "via": b.via.as_str(),
                "tool": b.tool,
            })).collect::<Value>(),
            "notes": a.notes,
        });
        let Value::Object(m) = v else { unreachable!() };
        m
    }
}

/// build.rs's static data says what a plain serde_json reading of each
/// file says, field by field, in the same order: the events and every
/// output template in file order (compared as serialised text, so order
/// counts), the defaults where the file says nothing, and every template
/// rendered back to a `Value` equal to the file's object.
#[test]
fn the_generated_adapters_are_their_files() {
    assert_eq!(
        ADAPTER_SOURCES.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        host_names(),
        "one static per adapter file"
    );
    for (name, text) in ADAPTER_SOURCES {
        let doc: Value = serde_json::from_str(text).unwrap();
        let want = normal::adapter(&doc);
        let got = from_static::adapter(host(name));
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        );
        for (key, w) in &want {
            if key == "events" {
                continue;
            }
            assert_eq!(got[key].to_string(), w.to_string(), "{name}: {key}");
        }
        let (got_events, want_events) = (got["events"].as_object().unwrap(), &want["events"]);
        assert_eq!(
            got_events.keys().collect::<Vec<_>>(),
            want_events.as_object().unwrap().keys().collect::<Vec<_>>(),
            "{name}: the events, in file order"
        );
        for (ev, w) in want_events.as_object().unwrap() {
            assert_eq!(got_events[ev].to_string(), w.to_string(), "{name}/{ev}");
        }
        assert_eq!(
            Value::Object(got).to_string(),
            Value::Object(want).to_string()
        );

        // The accessors the rest of the crate uses, against the file.
        let a = host(name);
        let events = doc["events"].as_object().unwrap();
        assert_eq!(
            a.events().iter().map(|e| e.name()).collect::<Vec<_>>(),
            events.keys().map(String::as_str).collect::<Vec<_>>(),
            "{name}"
        );
        for (ev, e) in events {
            let wired = e.get("wire").is_none_or(|w| w == true);
            let canonical: Event = e["event"].as_str().unwrap().parse().unwrap();
            assert_eq!(a.canonical_event(ev), Some(canonical), "{name}/{ev}");
            let spec = a.host_event(ev).unwrap();
            assert_eq!(spec.wired(), wired, "{name}/{ev}");
            assert_eq!(spec.can_deny(), e["deny"].is_object(), "{name}/{ev}");
            assert_eq!(spec.can_ask(), e["ask"].is_object(), "{name}/{ev}");
            assert_eq!(
                spec.can_add_context(),
                e["context"].is_object(),
                "{name}/{ev}"
            );
            for (kind, out) in [
                ("deny", &spec.deny),
                ("ask", &spec.ask),
                ("context", &spec.context),
                ("notice", &spec.notice),
            ] {
                if let Some(stdout) = out.as_ref().and_then(|o| o.stdout) {
                    assert_eq!(
                        Value::Object(crate::adapter::object(stdout)),
                        e[kind]["stdout"],
                        "{name}/{ev}/{kind}"
                    );
                }
            }
            if let Some(equals) = spec.skip.as_ref().and_then(|s| s.equals) {
                assert!(equals.matches(&e["skip"]["equals"]), "{name}/{ev}");
            }
        }
        let wired: Vec<&str> = events
            .iter()
            .filter(|(_, e)| e.get("wire").is_none_or(|w| w == true))
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(
            a.wired_events().map(|(n, _)| n).collect::<Vec<_>>(),
            wired,
            "{name}"
        );
        for (host_tool, canonical) in doc["tools"].as_object().into_iter().flatten() {
            assert_eq!(
                a.canonical_tool(host_tool),
                *canonical,
                "{name}: {host_tool}"
            );
        }
        assert_eq!(a.is_native(), doc["encoder"] == "keryx", "{name}");
        assert_eq!(a.match_all(), doc["matchAll"].as_str(), "{name}");
        assert_eq!(
            a.default_timeout(),
            doc["timeout"]["default"].as_u64(),
            "{name}"
        );
    }
}

/// Every field of each generated adapter, whatever fields the spec types
/// have, is what those types read from its file: the literal build.rs
/// wrote compiles to the value it was written from.
#[test]
fn every_field_of_a_generated_adapter_is_what_the_types_read_from_its_file() {
    for (name, text) in ADAPTER_SOURCES {
        let read = crate::adapter::generate::read(&format!("adapters/{name}/adapter.json"), text);
        assert_eq!(format!("{read:#?}"), format!("{:#?}", host(name)), "{name}");
    }
}

/// Every host with a settings file says what entry install writes into
/// it, with known placeholders only: the command under the first of its
/// command keys and the timeout under the first of its timeout keys (in
/// the first handler of a nested layout's group), and the event in a flat
/// TOML list, which names it in each entry; the fail-closed switch under
/// its own key.
#[test]
fn every_settings_file_has_an_entry_the_editors_read_back() {
    for a in all() {
        let files = a.config_files();
        let name = a.name();
        if !matches!(files.format, ConfigFormat::Json | ConfigFormat::Toml) {
            assert!(
                files.entry.is_none(),
                "{name}: an entry with no settings file"
            );
            continue;
        }
        let template = files.entry.unwrap_or_else(|| panic!("{name}: no entry"));
        for p in template.placeholders() {
            assert!(
                [
                    "$command",
                    "$timeout",
                    "$event",
                    "$matcher",
                    "$failClosed",
                    "$name"
                ]
                .contains(&p),
                "{name}: unknown placeholder {p}"
            );
        }
        let v = files.entry(&|p| Some(json!(p))).unwrap();
        let handler = match files.layout {
            Layout::Nested => &v["hooks"][0],
            Layout::Flat => &v,
        };
        assert_eq!(handler[files.command_keys[0]], "$command", "{name}");
        assert_eq!(handler[files.timeout_keys[0]], "$timeout", "{name}");
        if files.format == ConfigFormat::Toml && files.layout == Layout::Flat {
            assert_eq!(v[files.event_key], "$event", "{name}");
        }
        // The fail-closed switch goes where the host reads it, and only a
        // host that has one writes it.
        match a.fail_closed_switch() {
            Some(s) => {
                assert_eq!(handler[s.key], "$failClosed", "{name}");
                for e in s.events {
                    assert!(
                        a.events().iter().any(|ev| ev.name() == *e && ev.can_deny()),
                        "{name}: the switch names `{e}`, which is no gate event"
                    );
                }
            }
            None => assert!(
                !template.placeholders().contains(&"$failClosed"),
                "{name}: `$failClosed` without a `shimFailure.switch`"
            ),
        }
        assert!(
            !(files.version && files.format == ConfigFormat::Toml),
            "{name}: `version` is for JSON files"
        );
    }
}

/// A `from` written as one string is a list of one path, and a list stays
/// the list the file wrote.
#[test]
fn a_from_of_one_string_is_a_list_of_one() {
    let (mut one, mut many) = (0, 0);
    for (name, text) in ADAPTER_SOURCES {
        let doc: Value = serde_json::from_str(text).unwrap();
        let a = host(name);
        let mut pairs: Vec<(&Value, &crate::adapter::FieldMap)> = Vec::new();
        let file_fields = |v: &Value| v["fields"].as_array().cloned().unwrap_or_default();
        let host_wide = file_fields(&doc);
        assert_eq!(host_wide.len(), a.fields.len(), "{name}");
        pairs.extend(host_wide.iter().zip(a.fields));
        let per_event: Vec<(Vec<Value>, &crate::adapter::HostEvent)> = doc["events"]
            .as_object()
            .unwrap()
            .values()
            .zip(a.events())
            .map(|(e, h)| (file_fields(e), h))
            .collect();
        for (file, h) in &per_event {
            assert_eq!(file.len(), h.fields.len(), "{name}/{}", h.name());
            pairs.extend(file.iter().zip(h.fields));
        }
        for (f, m) in pairs {
            match &f["from"] {
                Value::String(s) => {
                    one += 1;
                    assert_eq!(m.from, [s.as_str()], "{name}: {f}");
                }
                Value::Array(list) => {
                    many += 1;
                    assert_eq!(
                        m.from,
                        list.iter().map(|p| p.as_str().unwrap()).collect::<Vec<_>>()
                    );
                }
                other => panic!("{name}: from {other}"),
            }
        }
    }
    assert!(
        one > 0 && many > 0,
        "both shapes occur in the files ({one}, {many})"
    );
}

/// `Json::matches` says what `==` on the equal `Value` says.
#[test]
fn a_static_json_value_matches_as_value_equality_does() {
    use crate::adapter::Json;
    let tree = Json::Obj(&[
        ("a", Json::Int(1)),
        (
            "b",
            Json::Arr(&[Json::Null, Json::Bool(true), Json::Str("x")]),
        ),
        ("c", Json::Int(-3)),
    ]);
    assert_eq!(
        tree.to_value(),
        json!({"a": 1, "b": [null, true, "x"], "c": -3})
    );
    assert_eq!(
        tree.to_value().to_string(),
        r#"{"a":1,"b":[null,true,"x"],"c":-3}"#,
        "keys in the static order"
    );
    for (v, same) in [
        (json!({"a": 1, "b": [null, true, "x"], "c": -3}), true),
        (json!({"c": -3, "b": [null, true, "x"], "a": 1}), true),
        (json!({"a": 1.0, "b": [null, true, "x"], "c": -3}), false),
        (json!({"a": 1, "b": [null, true, "x"]}), false),
        (
            json!({"a": 1, "b": [null, true, "x"], "c": -3, "d": 0}),
            false,
        ),
        (json!({"a": 1, "b": [true, null, "x"], "c": -3}), false),
        (json!({"a": "1", "b": [null, true, "x"], "c": -3}), false),
        (json!([1]), false),
        (Value::Null, false),
    ] {
        assert_eq!(tree.matches(&v), same, "{v}");
        assert_eq!(tree.to_value() == v, same, "{v}");
    }
    for (j, v) in [
        (Json::Null, json!(null)),
        (Json::Bool(false), json!(false)),
        (Json::Int(i64::MAX), json!(i64::MAX)),
        (Json::Int(i64::MIN), json!(i64::MIN)),
        (Json::Str(""), json!("")),
        (Json::Arr(&[]), json!([])),
        (Json::Obj(&[]), json!({})),
    ] {
        assert!(j.matches(&v), "{v}");
        assert_eq!(j.to_value(), v);
    }
    assert!(!Json::Int(1).matches(&json!(true)));
    assert!(!Json::Null.matches(&json!(false)));
    assert!(!Json::Arr(&[]).matches(&json!({})));
}

#[test]
fn capabilities_per_host() {
    use Event::*;
    // (host, can ask, gateable events, bridged SubagentStart)
    let table: [(&str, bool, &[Event], bool); 12] = [
        // Captured: a cancel on PreToolUse aborts the task; nothing else gates.
        ("cline", false, &[PreToolUse], true),
        (
            "keryx",
            true,
            &[UserPromptSubmit, PreToolUse, Stop, SubagentStart],
            false,
        ),
        (
            "claude-code",
            true,
            &[UserPromptSubmit, PreToolUse, Stop],
            true,
        ),
        ("codex", false, &[UserPromptSubmit, PreToolUse, Stop], false),
        (
            "gemini-cli",
            true,
            &[UserPromptSubmit, PreToolUse, Stop],
            true,
        ),
        ("cursor", false, &[UserPromptSubmit, PreToolUse, Stop], true),
        ("copilot", true, &[UserPromptSubmit, PreToolUse, Stop], true),
        ("kimi", false, &[UserPromptSubmit, PreToolUse, Stop], true),
        // Captured: a throw in chat.message stops the prompt.
        ("opencode", false, &[UserPromptSubmit, PreToolUse], true),
        ("kilo", false, &[UserPromptSubmit, PreToolUse], true),
        (
            "deepagents",
            false,
            &[UserPromptSubmit, PreToolUse, Stop],
            true,
        ),
        (
            "qwen-code",
            true,
            &[UserPromptSubmit, PreToolUse, Stop],
            true,
        ),
    ];
    for (name, can_ask, gates, bridged) in table {
        let a = host(name);
        assert_eq!(a.can_ask(), can_ask, "{name} can_ask");
        let actual: Vec<Event> = Event::ALL.into_iter().filter(|e| a.can_gate(*e)).collect();
        assert_eq!(actual, gates, "{name} can_gate");
        let bridge = a.bridge_for(SubagentStart);
        assert_eq!(bridge.is_some(), bridged, "{name} bridge");
        if let Some(b) = bridge {
            assert_eq!(
                (b.event, b.via, b.tool),
                (SubagentStart, PreToolUse, "Agent")
            );
        }
        assert!(a.bridge_for(PreToolUse).is_none());
    }
}

#[test]
fn timeouts_and_config_files() {
    assert_eq!(host("claude-code").timeout_unit(), TimeoutUnit::Seconds);
    assert_eq!(host("gemini-cli").timeout_unit(), TimeoutUnit::Milliseconds);
    assert_eq!(host("gemini-cli").default_timeout(), Some(60_000));
    assert_eq!(TimeoutUnit::Seconds.from_millis(1500), 2);
    assert_eq!(TimeoutUnit::Seconds.from_millis(5000), 5);
    assert_eq!(TimeoutUnit::Milliseconds.from_millis(1500), 1500);

    let cc = host("claude-code").config_files();
    assert_eq!(cc.format, ConfigFormat::Json);
    assert_eq!(cc.user, ["~/.claude/settings.json"]);
    assert_eq!(cc.project, [".claude/settings.json"]);
    let cx = host("codex").config_files();
    assert_eq!(cx.format, ConfigFormat::Toml);
    assert_eq!(cx.home_env.as_ref().map(|h| h.var), Some("CODEX_HOME"));
    assert_eq!(host("keryx").config_files().format, ConfigFormat::None);
    assert_eq!(
        host("gemini-cli").host_event_for(Event::PreToolUse),
        Some("BeforeTool")
    );
    assert_eq!(host("cursor").host_event_for(Event::Stop), Some("stop"));
    assert_eq!(
        host("gemini-cli").host_event_for(Event::SubagentStart),
        None
    );
}

// ---------------------------------------------------------------- decode

fn fixtures(host_name: &str) -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/payloads")
        .join(host_name);
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (name, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

const CANONICAL_TOOLS: [&str; 5] = ["Bash", "Write", "Edit", "Read", "Agent"];

#[test]
fn every_captured_payload_decodes() {
    for host_name in ["claude-code", "codex", "gemini-cli"] {
        let a = host(host_name);
        let files = fixtures(host_name);
        assert!(
            files.len() >= 10,
            "{host_name}: only {} fixtures",
            files.len()
        );
        for (file, payload) in files {
            let host_event = file.split('-').next().unwrap();
            assert_eq!(payload["hook_event_name"], host_event, "{file}");
            match a.decode(host_event, &payload) {
                Ok(input) => {
                    assert_eq!(Some(input.event), a.canonical_event(host_event), "{file}");
                    assert_eq!(
                        input.session_id,
                        payload["session_id"].as_str().unwrap(),
                        "{file}"
                    );
                    assert_eq!(
                        input.cwd.as_deref().and_then(|p| p.to_str()),
                        payload["cwd"].as_str(),
                        "{file}"
                    );
                    if input.event.is_per_tool() {
                        let tool = input.tool_name().unwrap();
                        assert!(CANONICAL_TOOLS.contains(&tool), "{file}: tool {tool}");
                        assert!(input.tool_input().is_some_and(Value::is_object), "{file}");
                    }
                    if input.event == Event::UserPromptSubmit {
                        assert!(input.str_field("prompt").is_some(), "{file}");
                    }
                }
                Err(DecodeError::UnmappedEvent { .. }) => {
                    assert!(a.unmapped_events().contains(&host_event), "{file}");
                }
                Err(e) => panic!("{host_name}/{file}: {e}"),
            }
        }
    }
}

fn fixture(host_name: &str, file: &str) -> Value {
    fixtures(host_name)
        .into_iter()
        .find(|(n, _)| n == file)
        .unwrap_or_else(|| panic!("{host_name}/{file}"))
        .1
}

fn decode(host_name: &str, host_event: &str, payload: &Value) -> EventInput {
    host(host_name)
        .decode(host_event, payload)
        .unwrap_or_else(|e| panic!("{host_name} {host_event}: {e}"))
}

#[test]
fn claude_code_fields() {
    let p = fixture("claude-code", "PreToolUse-basic-Bash.json");
    let i = decode("claude-code", "PreToolUse", &p);
    assert_eq!(i.event, Event::PreToolUse);
    assert_eq!(
        i.run_id.as_deref(),
        Some("543fcedb-4fcd-4c38-a2e4-6fccc57d291a")
    );
    assert_eq!(i.tool_call_id(), Some("toolu_01_0"));
    assert_eq!(i.tool_input().unwrap()["command"], "echo hi-from-bash");
    assert_eq!(i.str_field("permissionMode"), Some("default"));
    assert!(i.fields.get("hostToolName").is_none());

    let p = fixture("claude-code", "PostToolUseFailure-basic-Bash-fail.json");
    let i = decode("claude-code", "PostToolUseFailure", &p);
    assert_eq!(
        i.fields["error"],
        json!({"message": "Exit code 3\nfailing", "code": 3})
    );

    let p = fixture("claude-code", "PreToolUse-subagent-Bash-insubagent.json");
    let i = decode("claude-code", "PreToolUse", &p);
    assert_eq!(i.str_field("agentId"), Some("aafc2124613cdd507"));
    assert_eq!(i.str_field("agentType"), Some("general-purpose"));

    let i = decode(
        "claude-code",
        "SessionStart",
        &fixture("claude-code", "SessionStart-basic-startup.json"),
    );
    assert_eq!(i.run_id, None, "the first SessionStart has no prompt_id");
    assert_eq!(i.str_field("source"), Some("startup"));
    assert_eq!(i.str_field("projectRoot"), Some("/home/dev/cc/proj"));

    let i = decode(
        "claude-code",
        "Stop",
        &fixture("claude-code", "Stop-stopblock-2.json"),
    );
    assert_eq!(i.fields["stopHookActive"], true);
    let i = decode(
        "claude-code",
        "SubagentStart",
        &fixture("claude-code", "SubagentStart-subagent.json"),
    );
    assert_eq!(i.str_field("subagentId"), Some("aafc2124613cdd507"));
    let i = decode(
        "claude-code",
        "PreCompact",
        &fixture("claude-code", "PreCompact-compact.json"),
    );
    assert_eq!(i.str_field("reason"), Some("manual"));
    let i = decode(
        "claude-code",
        "SessionEnd",
        &fixture("claude-code", "SessionEnd-basic.json"),
    );
    assert_eq!(i.str_field("endReason"), Some("other"));
    assert!(i.interactive, "decode never decides interactivity");
}

#[test]
fn codex_fields() {
    let i = decode(
        "codex",
        "PreToolUse",
        &fixture("codex", "PreToolUse-basic-Bash.json"),
    );
    assert_eq!(
        i.run_id.as_deref(),
        Some("01a22983-34b9-7552-bbad-cb18e7110cb2")
    );
    assert_eq!(i.tool_call_id(), Some("call_2_0"));
    let i = decode(
        "codex",
        "PostToolUse",
        &fixture("codex", "PostToolUse-failcmd-Bash-fail.json"),
    );
    assert_eq!(i.event, Event::PostToolUse, "Codex has no failure event");
    assert_eq!(i.fields["toolOutput"], "failing\n");
    let p = json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "apply_patch",
        "tool_input": {"command": "*** Begin Patch"}, "tool_use_id": "c"});
    let i = decode("codex", "PreToolUse", &p);
    assert_eq!(i.tool_name(), Some("Edit"));
    assert_eq!(i.str_field("hostToolName"), Some("apply_patch"));
    let p = json!({"session_id": "s", "tool_name": "mcp__fs__read", "tool_input": {}});
    assert_eq!(
        decode("codex", "PreToolUse", &p).tool_name(),
        Some("mcp__fs__read")
    );
}

#[test]
fn gemini_fields() {
    let i = decode(
        "gemini-cli",
        "BeforeTool",
        &fixture("gemini-cli", "BeforeTool-basic-run_shell_command.json"),
    );
    assert_eq!(i.event, Event::PreToolUse);
    assert_eq!(i.tool_name(), Some("Bash"));
    assert_eq!(i.str_field("hostToolName"), Some("run_shell_command"));
    assert_eq!(i.tool_call_id(), None);
    assert_eq!(i.run_id, None);

    let mut p = fixture("gemini-cli", "AfterTool-basic-run_shell_command.json");
    assert_eq!(
        decode("gemini-cli", "AfterTool", &p).event,
        Event::PostToolUse
    );
    p["tool_response"]["error"] = json!({"message": "boom", "type": "execution_failed"});
    let i = decode("gemini-cli", "AfterTool", &p);
    assert_eq!(i.event, Event::PostToolUseFailure);
    assert_eq!(
        i.fields["error"],
        json!({"message": "boom", "code": "execution_failed"})
    );

    let i = decode(
        "gemini-cli",
        "AfterAgent",
        &fixture("gemini-cli", "AfterAgent-afteragentblock-2.json"),
    );
    assert_eq!(i.event, Event::Stop);
    assert_eq!(i.fields["stopHookActive"], true);
    let i = decode(
        "gemini-cli",
        "BeforeAgent",
        &fixture("gemini-cli", "BeforeAgent-basic.json"),
    );
    assert_eq!(i.str_field("prompt"), Some("run the echo"));

    let p = json!({"session_id": "s", "tool_name": "mcp_github_create_issue", "tool_input": {},
        "mcp_context": {"server_name": "github", "tool_name": "create_issue"}});
    assert_eq!(
        decode("gemini-cli", "BeforeTool", &p).tool_name(),
        Some("mcp__github__create_issue")
    );
    let p = json!({"session_id": "s", "tool_name": "mcp_github_create_issue", "tool_input": {}});
    assert_eq!(
        decode("gemini-cli", "BeforeTool", &p).tool_name(),
        Some("mcp_github_create_issue"),
        "without mcp_context the server cannot be told from the tool"
    );
}

#[test]
fn cursor_fields() {
    let p = json!({
        "conversation_id": "conv", "generation_id": "gen", "hook_event_name": "preToolUse",
        "workspace_roots": ["/repo"], "transcript_path": null,
        "tool_name": "Shell", "tool_input": {"command": "ls"}, "tool_use_id": "call_1\nctc_1"
    });
    let i = decode("cursor", "preToolUse", &p);
    assert_eq!(
        (i.session_id.as_str(), i.run_id.as_deref()),
        ("conv", Some("gen"))
    );
    assert_eq!(i.cwd.as_deref(), Some(Path::new("/repo")));
    assert_eq!(i.tool_name(), Some("Bash"));
    assert!(i.fields.get("transcriptPath").is_none(), "null is absent");

    let p = json!({"conversation_id": "c", "tool_name": "MCP:ctx_execute", "tool_input": "{\"code\":\"1\"}"});
    let i = decode("cursor", "preToolUse", &p);
    assert_eq!(i.tool_name(), Some("mcp__unknown__ctx_execute"));
    assert_eq!(i.tool_input(), Some(&json!({"code": "1"})));

    let i = decode(
        "cursor",
        "stop",
        &json!({"conversation_id": "c", "status": "completed", "loop_count": 2}),
    );
    assert_eq!(
        (i.event, i.str_field("stopReason")),
        (Event::Stop, Some("completed"))
    );
    assert_eq!(i.fields["stopHookActive"], true);
    let i = decode(
        "cursor",
        "sessionStart",
        &json!({"session_id": "s", "conversation_id": "c", "workspace_roots": ["/r"]}),
    );
    assert_eq!(i.session_id, "c");
    assert_eq!(i.str_field("projectRoot"), Some("/r"));
}

#[test]
fn copilot_fields_in_both_dialects() {
    let camel = json!({"sessionId": "s", "timestamp": 1, "cwd": "/r", "toolName": "bash",
        "toolArgs": "{\"command\":\"ls\"}"});
    let i = decode("copilot", "preToolUse", &camel);
    assert_eq!(i.tool_name(), Some("Bash"));
    assert_eq!(i.tool_input(), Some(&json!({"command": "ls"})));
    let snake = json!({"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/r",
        "tool_name": "Bash", "tool_input": {"command": "ls"}});
    let i = decode("copilot", "preToolUse", &snake);
    assert_eq!(i.tool_name(), Some("Bash"));
    assert_eq!(i.tool_input(), Some(&json!({"command": "ls"})));
    let i = decode(
        "copilot",
        "postToolUseFailure",
        &json!({"sessionId": "s", "toolName": "view", "error": "no such file"}),
    );
    assert_eq!(
        (i.event, i.tool_name()),
        (Event::PostToolUseFailure, Some("Read"))
    );
    assert_eq!(i.fields["error"], json!({"message": "no such file"}));
}

#[test]
fn kimi_fields() {
    let p = json!({"hook_event_name": "PreToolUse", "session_id": "session_abc", "cwd": "/p",
        "tool_name": "Shell", "tool_input": {"command": "rm -rf /"}, "tool_call_id": "t1"});
    let i = decode("kimi", "PreToolUse", &p);
    assert_eq!(
        (i.tool_name(), i.tool_call_id()),
        (Some("Bash"), Some("t1"))
    );
    let i = decode(
        "kimi",
        "PreCompact",
        &json!({"session_id": "s", "trigger": "auto", "token_count": 12000}),
    );
    assert_eq!(
        (i.str_field("reason"), &i.fields["tokenCount"]),
        (Some("auto"), &json!(12000))
    );
}

/// Kimi Code 2.1.0 as captured: the prompt is a list of content parts, the
/// tools have Claude's names, the user file is `~/.kimi-code/config.toml`.
#[test]
fn kimi_code_captured_payloads() {
    let a = host("kimi");
    for (file, payload) in fixtures("kimi") {
        let host_event = file.split('-').next().unwrap();
        let i = a
            .decode(host_event, &payload)
            .unwrap_or_else(|e| panic!("kimi/{file}: {e}"));
        assert_eq!(i.session_id, payload["session_id"].as_str().unwrap());
        if i.event.is_per_tool() {
            let tool = i.tool_name().unwrap();
            assert!(CANONICAL_TOOLS.contains(&tool), "{file}: tool {tool}");
        }
        assert_eq!(i.host_fields["client_type"], "kimi_code_cli", "{file}");
    }
    let i = decode(
        "kimi",
        "UserPromptSubmit",
        &fixture("kimi", "UserPromptSubmit-basic.json"),
    );
    assert_eq!(i.str_field("prompt"), Some("run echo please"));
    let parts = json!({"session_id": "s", "prompt": [
        {"type": "text", "text": "first"}, {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "rm -rf /"}]});
    let i = decode("kimi", "UserPromptSubmit", &parts);
    assert_eq!(i.str_field("prompt"), Some("first\nrm -rf /"));
    let bad = json!({"session_id": "s", "prompt": [{"type": "text", "text": 3}]});
    assert!(matches!(
        a.decode("UserPromptSubmit", &bad),
        Err(DecodeError::WrongType { field, .. }) if field == "prompt"
    ));
    assert_eq!(a.config_files().user, ["~/.kimi-code/config.toml"]);
    assert_eq!(
        a.config_files().home_env.as_ref().map(|h| h.var),
        Some("KIMI_CODE_HOME")
    );
}

/// Copilot CLI 1.0.102 as captured: `source: "new"`, and a subagent's
/// events filed under the parent session.
#[test]
fn copilot_captured_payloads() {
    let a = host("copilot");
    for (file, payload) in fixtures("copilot") {
        let host_event = file.split('-').next().unwrap();
        match a.decode(host_event, &payload) {
            Ok(i) => {
                let parent = payload["parentAgentId"]
                    .as_str()
                    .or(payload["sessionId"].as_str())
                    .or(payload["session_id"].as_str())
                    .unwrap();
                assert_eq!(i.session_id, parent, "{file}");
                if i.event.is_per_tool() {
                    assert!(i.tool_input().is_some_and(Value::is_object), "{file}");
                }
            }
            Err(DecodeError::Skipped { .. }) => {
                assert!(payload.get("parentAgentId").is_some(), "{file}");
            }
            Err(e) => panic!("copilot/{file}: {e}"),
        }
    }
    let i = decode(
        "copilot",
        "sessionStart",
        &fixture("copilot", "sessionStart-basic.json"),
    );
    assert_eq!(i.str_field("source"), Some("startup"));
    assert_eq!(i.host_fields["source"], "new");

    let start = fixture("copilot", "subagentStart-subagent.json");
    let i = decode("copilot", "subagentStart", &start);
    assert_eq!(i.event, Event::SubagentStart);
    assert_eq!(i.session_id, "32cd57dd-19d7-41e9-9a8f-753eb16c0155");
    assert_eq!(
        i.str_field("subagentId"),
        Some("25165b9d-bc1a-40d9-872d-6b75e0443df8")
    );
    let inside = fixture("copilot", "preToolUse-subagent-bash.json");
    let i = decode("copilot", "preToolUse", &inside);
    assert_eq!(i.session_id, "32cd57dd-19d7-41e9-9a8f-753eb16c0155");
    assert_eq!(
        i.str_field("agentId"),
        Some("25165b9d-bc1a-40d9-872d-6b75e0443df8")
    );
    // The subagent's agentStop is not a second session's Stop, and its task
    // prompt is not a new user prompt.
    for (event, file) in [
        ("agentStop", "agentStop-subagent.json"),
        ("userPromptSubmitted", "userPromptSubmitted-subagent-2.json"),
    ] {
        let p = fixture("copilot", file);
        assert!(p.get("parentAgentId").is_some(), "{file}");
        assert!(
            matches!(a.decode(event, &p), Err(DecodeError::Skipped { .. })),
            "{file}"
        );
    }
    let stop = decode(
        "copilot",
        "agentStop",
        &fixture("copilot", "agentStop-subagent-2.json"),
    );
    assert_eq!(stop.event, Event::Stop);
    let end = decode(
        "copilot",
        "subagentStop",
        &fixture("copilot", "subagentStop-subagent.json"),
    );
    assert_eq!(
        (end.event, end.session_id.as_str()),
        (Event::SubagentStop, "32cd57dd-19d7-41e9-9a8f-753eb16c0155")
    );
}

/// Qwen Code 0.24.4 as captured: Claude's payloads with its own tool
/// names, and UserPromptSubmit re-fired with an empty prompt per tool
/// round, which is skipped (not a new prompt).
#[test]
fn qwen_code_captured_payloads() {
    let a = host("qwen-code");
    let mut skipped = 0;
    for (file, payload) in fixtures("qwen-code") {
        let host_event = file.split('-').next().unwrap();
        assert_eq!(payload["hook_event_name"], host_event, "{file}");
        match a.decode(host_event, &payload) {
            Ok(i) => {
                assert_eq!(i.session_id, payload["session_id"].as_str().unwrap());
                assert_eq!(Some(i.event), a.canonical_event(host_event), "{file}");
                if i.event.is_per_tool() {
                    let tool = i.tool_name().unwrap();
                    assert!(CANONICAL_TOOLS.contains(&tool), "{file}: tool {tool}");
                    assert!(i.tool_input().is_some_and(Value::is_object), "{file}");
                    assert!(i.tool_call_id().is_some_and(|c| c.starts_with("toolu_")));
                }
                if i.event == Event::UserPromptSubmit {
                    assert!(!i.str_field("prompt").unwrap().is_empty(), "{file}");
                }
            }
            Err(DecodeError::Skipped { .. }) => {
                assert_eq!(payload["prompt"], "", "{file}");
                skipped += 1;
            }
            Err(e) => panic!("qwen-code/{file}: {e}"),
        }
    }
    assert!(skipped >= 2, "{skipped}");
    let i = decode(
        "qwen-code",
        "PreToolUse",
        &fixture("qwen-code", "PreToolUse-subagent-run_shell_command.json"),
    );
    assert_eq!(i.fields["hostToolName"], "run_shell_command");
    assert_eq!(i.str_field("agentId"), Some("general-purpose-call_0_0"));
    assert_eq!(host("qwen-code").timeout_unit(), TimeoutUnit::Seconds);
    let files = host("qwen-code").config_files();
    assert_eq!(
        (files.user, files.project),
        (&["~/.qwen/settings.json"][..], &[".qwen/settings.json"][..])
    );
    assert_eq!(
        enc("qwen-code", "PreToolUse", &deny("no")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        )
    );
    assert_eq!(
        enc("qwen-code", "UserPromptSubmit", &deny("no")),
        out(r#"{"decision":"block","reason":"no"}"#)
    );
    assert_eq!(
        enc("qwen-code", "Stop", &deny("again")),
        out(r#"{"decision":"block","reason":"again"}"#)
    );
}

/// deepagents-code 0.1.88 as captured: Claude's payloads, its shell tool
/// already called `Bash`, `task` its subagent tool; PermissionRequest and
/// Notification fire for every call and are not wired; answers in Claude's
/// shape, an ask sent as a deny (headless dcode approves by itself).
#[test]
fn deepagents_captured_payloads() {
    let a = host("deepagents");
    let mut unmapped = 0;
    let files = fixtures("deepagents");
    assert!(files.len() >= 40, "{}", files.len());
    for (file, payload) in files {
        let host_event = file.split('-').next().unwrap();
        assert_eq!(payload["hook_event_name"], host_event, "{file}");
        match a.decode(host_event, &payload) {
            Ok(i) => {
                assert_eq!(i.session_id, payload["session_id"].as_str().unwrap());
                assert_eq!(Some(i.event), a.canonical_event(host_event), "{file}");
                assert_eq!(i.run_id.as_deref(), payload["prompt_id"].as_str(), "{file}");
                if i.event.is_per_tool() {
                    let tool = i.tool_name().unwrap();
                    assert!(CANONICAL_TOOLS.contains(&tool), "{file}: tool {tool}");
                    assert!(i.tool_input().is_some_and(Value::is_object), "{file}");
                    assert!(i.tool_call_id().is_some_and(|c| c.starts_with("call_")));
                }
                if i.event == Event::UserPromptSubmit {
                    assert!(!i.str_field("prompt").unwrap().is_empty(), "{file}");
                }
            }
            Err(DecodeError::UnmappedEvent { .. }) => {
                assert!(a.unmapped_events().contains(&host_event), "{file}");
                unmapped += 1;
            }
            Err(e) => panic!("deepagents/{file}: {e}"),
        }
    }
    assert!(unmapped >= 5, "{unmapped}");
    let task = decode(
        "deepagents",
        "PreToolUse",
        &fixture("deepagents", "PreToolUse-subagent-task.json"),
    );
    assert_eq!(task.tool_name(), Some("Agent"));
    let failure = decode(
        "deepagents",
        "PostToolUseFailure",
        &fixture("deepagents", "PostToolUseFailure-basic-Bash.json"),
    );
    assert_eq!(failure.tool_name(), Some("Bash"));
    let stop = decode(
        "deepagents",
        "Stop",
        &fixture("deepagents", "Stop-stopblock-2.json"),
    );
    assert_eq!(stop.fields["stopHookActive"], true);
    assert_eq!(a.timeout_unit(), TimeoutUnit::Seconds);
    assert!(!a.can_ask());
    let files = a.config_files();
    assert_eq!(
        (files.user, files.project),
        (
            &["~/.deepagents/hooks.json"][..],
            &[".deepagents/hooks.json"][..]
        )
    );
    assert_eq!(
        enc("deepagents", "PreToolUse", &deny("no")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        )
    );
    assert_eq!(
        enc("deepagents", "UserPromptSubmit", &deny("no")),
        out(r#"{"decision":"block","reason":"no"}"#)
    );
    assert_eq!(
        enc("deepagents", "Stop", &deny("again")),
        out(r#"{"decision":"block","reason":"again"}"#)
    );
}

/// Mistral Vibe 3.0.3 as captured: three events, the shell tool named
/// `file_system.bash`; a deny and a Stop continuation answer
/// `{decision: deny, reason}`, post_tool context goes under
/// `hook_specific_output.additional_context`; no ask.
#[test]
fn vibe_captured_payloads() {
    let a = host("vibe");
    let files = fixtures("vibe");
    assert!(files.len() >= 10, "{}", files.len());
    for (file, payload) in files {
        let host_event = file.split('-').next().unwrap();
        assert_eq!(payload["hook_event_name"], host_event, "{file}");
        let i = a
            .decode(host_event, &payload)
            .unwrap_or_else(|e| panic!("vibe/{file}: {e}"));
        assert_eq!(i.session_id, payload["session_id"].as_str().unwrap());
        assert_eq!(Some(i.event), a.canonical_event(host_event), "{file}");
        if i.event.is_per_tool() {
            assert_eq!(i.tool_name(), Some("Bash"), "{file}");
            assert!(i.tool_input().is_some_and(Value::is_object), "{file}");
            assert!(i.tool_call_id().is_some_and(|c| c.starts_with("call_")));
        }
    }
    assert_eq!(
        [
            a.canonical_event("pre_tool"),
            a.canonical_event("post_tool"),
            a.canonical_event("post_agent")
        ],
        [
            Some(Event::PreToolUse),
            Some(Event::PostToolUse),
            Some(Event::Stop)
        ]
    );
    assert_eq!(a.host_event_for(Event::UserPromptSubmit), None);
    assert_eq!(a.host_event_for(Event::SessionStart), None);
    assert_eq!(a.timeout_unit(), TimeoutUnit::Seconds);
    assert!(!a.can_ask());
    let files = a.config_files();
    assert_eq!(
        (files.user, files.project, files.event_key),
        (
            &["~/.vibe/hooks.toml"][..],
            &[".vibe/hooks.toml"][..],
            "type"
        )
    );
    assert_eq!(
        enc("vibe", "pre_tool", &deny("no")),
        out(r#"{"decision":"deny","reason":"no"}"#)
    );
    assert_eq!(
        enc("vibe", "post_agent", &deny("again")),
        out(r#"{"decision":"deny","reason":"again"}"#)
    );
    assert_eq!(
        enc("vibe", "post_tool", &context("lint: 2 warnings")),
        out(r#"{"hook_specific_output":{"additional_context":"lint: 2 warnings"}}"#)
    );
    let switch = a.fail_closed_switch().unwrap();
    assert!(switch.applies_to("pre_tool") && !switch.applies_to("post_tool"));
}

/// Every host's own fields reach its hooks as it sent them (Claude Code's
/// `agent_id`, `transcript_path`, …), beside the canonical ones.
#[test]
fn host_fields_are_kept_as_sent() {
    let p = fixture("claude-code", "PreToolUse-subagent-Bash-insubagent.json");
    let i = decode("claude-code", "PreToolUse", &p);
    assert_eq!(&Value::Object(i.host_fields.clone()), &p);
    for name in host_names().iter().filter(|n| **n != "keryx") {
        assert!(host(name).host_fields, "{name} keeps no host fields");
    }
}

#[test]
fn keryx_native_payload() {
    let p = json!({"event": "PreToolUse", "sessionId": "s1", "runId": "r1", "cwd": "/w",
        "policyProfile": "read-only-review", "interactive": false, "decideOutcome": "ask",
        "parentSessionId": "p0", "toolCallId": "c1", "toolName": "Bash",
        "toolInput": {"command": "ls"}, "risk": "low"});
    let i = decode("keryx", "PreToolUse", &p);
    assert_eq!(i.session_id, "s1");
    assert_eq!(i.run_id.as_deref(), Some("r1"));
    assert_eq!(
        i.profile,
        Some(crate::config::model::Profile::ReadOnlyReview)
    );
    assert!(!i.interactive);
    assert_eq!(i.decide_outcome, Outcome::Ask);
    assert_eq!(i.parent_session_id.as_deref(), Some("p0"));
    assert_eq!(i.tool_call_id(), Some("c1"));
    assert_eq!(i.fields["risk"], "low");
    for slot in [
        "event",
        "sessionId",
        "runId",
        "cwd",
        "policyProfile",
        "interactive",
        "decideOutcome",
    ] {
        assert!(
            !i.fields.contains_key(slot),
            "{slot} must not leak into fields"
        );
    }
    let bad = json!({"sessionId": "s", "decideOutcome": "maybe", "toolName": "Bash"});
    assert_eq!(
        host("keryx").decode("PreToolUse", &bad).unwrap_err(),
        DecodeError::BadValue {
            field: "decideOutcome".into(),
            value: "maybe".into()
        }
    );
}

#[test]
fn decode_errors_name_the_field() {
    let cc = host("claude-code");
    assert_eq!(
        cc.decode("PreToolUse", &json!({"tool_name": "Bash"}))
            .unwrap_err(),
        DecodeError::Missing {
            field: "session_id".into(),
            canonical: "sessionId".into()
        }
    );
    assert_eq!(
        cc.decode("PreToolUse", &json!({"session_id": "s"}))
            .unwrap_err(),
        DecodeError::Missing {
            field: "tool_name".into(),
            canonical: "toolName".into()
        }
    );
    assert_eq!(
        cc.decode("PreToolUse", &json!({"session_id": 7, "tool_name": "Bash"}))
            .unwrap_err(),
        DecodeError::WrongType {
            field: "session_id".into(),
            expected: "a string",
            found: "a number"
        }
    );
    assert_eq!(
        cc.decode(
            "PreToolUse",
            &json!({"session_id": "s", "tool_name": "Bash", "cwd": ["/x"]})
        )
        .unwrap_err(),
        DecodeError::WrongType {
            field: "cwd".into(),
            expected: "a string",
            found: "an array"
        }
    );
    assert_eq!(
        cc.decode("PreToolUse", &json!([1])).unwrap_err(),
        DecodeError::NotAnObject
    );
    assert_eq!(
        cc.decode("PreToolUse", &json!({"session_id": "s", "tool_name": 3}))
            .unwrap_err(),
        DecodeError::WrongType {
            field: "tool_name".into(),
            expected: "a string",
            found: "a number"
        }
    );
    assert!(matches!(
        cc.decode("Bogus", &json!({})),
        Err(DecodeError::UnknownEvent { .. })
    ));
    assert!(matches!(
        cc.decode("Notification", &json!({})),
        Err(DecodeError::UnmappedEvent { .. })
    ));
    assert_eq!(
        host("cursor")
            .decode("preToolUse", &json!({"tool_name": "Shell"}))
            .unwrap_err()
            .to_string(),
        "payload field `conversation_id` or `session_id` is missing (needed for `sessionId`)"
    );
    // An optional field of an unexpected type is an error naming it too:
    // dropping it would let a gate run on a guess.
    assert_eq!(
        cc.decode(
            "Stop",
            &json!({"session_id": "s", "stop_hook_active": "yes"})
        )
        .unwrap_err(),
        DecodeError::WrongType {
            field: "stop_hook_active".into(),
            expected: "a boolean",
            found: "a string"
        }
    );
    assert_eq!(
        host("kimi")
            .decode("UserPromptSubmit", &json!({"session_id": "s", "prompt": 7}))
            .unwrap_err()
            .to_string(),
        "payload field `prompt` should be a string or a list of text parts, found a number"
    );
}

// ---------------------------------------------------------------- encode

#[test]
fn allow_and_none_are_silence_on_every_template_host() {
    for name in host_names().iter().filter(|n| **n != "keryx") {
        let a = host(name);
        for ev in a.events() {
            for outcome in [Outcome::Allow, Outcome::None] {
                let e = a.encode(ev.name(), ev.event(), &result(outcome, Some("fine"), None));
                assert!(e.is_silent(), "{name}/{}: {e:?}", ev.name());
            }
        }
    }
}

#[test]
fn claude_code_encodings() {
    assert_eq!(
        enc("claude-code", "PreToolUse", &deny("no rm")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no rm"}}"#
        )
    );
    assert_eq!(
        enc("claude-code", "PreToolUse", &ask("really?")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"really?"}}"#
        )
    );
    assert_eq!(
        enc(
            "claude-code",
            "PreToolUse",
            &result(Outcome::Deny, Some("no"), Some("ctx"))
        ),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no","additionalContext":"ctx"}}"#
        )
    );
    assert_eq!(
        enc("claude-code", "UserPromptSubmit", &deny("not that")),
        out(r#"{"decision":"block","reason":"not that"}"#)
    );
    assert_eq!(
        enc("claude-code", "UserPromptSubmit", &ask("not that")),
        out(r#"{"decision":"block","reason":"not that"}"#),
        "no ask on prompts: tightened to a block"
    );
    assert_eq!(
        enc("claude-code", "UserPromptSubmit", &context("branch main")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"branch main"}}"#
        )
    );
    assert_eq!(
        enc("claude-code", "Stop", &deny("run the tests too")),
        out(r#"{"decision":"block","reason":"run the tests too"}"#)
    );
    assert_eq!(
        enc("claude-code", "SessionStart", &context("hello")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"hello"}}"#
        )
    );
    assert_eq!(
        enc("claude-code", "PostToolUse", &context("lint: 2 warnings")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint: 2 warnings"}}"#
        )
    );
    // SubagentStart cannot block in Claude Code: the deny is the bridge's job.
    assert!(enc("claude-code", "SubagentStart", &deny("no")).is_silent());
    assert!(enc("claude-code", "PostToolUse", &deny("late")).is_silent());
    assert!(enc("claude-code", "SessionEnd", &context("bye")).is_silent());
}

#[test]
fn notices_reach_the_person_never_the_models_context() {
    let mut r = context("ctx");
    r.notices = vec![
        "hooks snapshot is stale: run `keryx-hooks doctor --fix`".into(),
        "gate x disabled".into(),
    ];
    let n = "hooks snapshot is stale: run `keryx-hooks doctor --fix`\\ngate x disabled";
    // The model gets the hooks' context only; the notice, which names a
    // command to run, goes where the person reads it.
    assert_eq!(
        enc("claude-code", "SessionStart", &r),
        out(&format!(
            r#"{{"hookSpecificOutput":{{"hookEventName":"SessionStart","additionalContext":"ctx"}},"systemMessage":"{n}"}}"#
        ))
    );
    let mut only = FireResult::none();
    only.notices = vec!["drift".into()];
    for host in ["codex", "gemini-cli"] {
        assert_eq!(
            enc(host, "SessionStart", &only),
            out(r#"{"systemMessage":"drift"}"#),
            "{host}"
        );
    }
    let on_stderr = Encoded {
        stdout: String::new(),
        stderr: "drift\n".into(),
        exit_code: 0,
    };
    for (host, event) in [
        ("cursor", "sessionStart"),
        ("copilot", "sessionStart"),
        ("kimi", "SessionStart"),
    ] {
        assert_eq!(enc(host, event, &only), on_stderr, "{host}");
    }
    // A notice raised mid-session (trust revoked by an edit) is said on the
    // event it is raised on, next to whatever that event answers.
    assert_eq!(
        enc("claude-code", "PreToolUse", &only),
        out(r#"{"systemMessage":"drift"}"#)
    );
    let mut denied = deny("no");
    denied.notices = vec!["drift".into()];
    let both = enc("claude-code", "PreToolUse", &denied);
    assert!(
        both.stdout.contains(r#""permissionDecision":"deny""#),
        "{both:?}"
    );
    assert!(
        both.stdout.contains(r#""systemMessage":"drift""#),
        "{both:?}"
    );
    // Kimi hands a deny's stderr to the model: the notice stays out of it
    // (the pipeline holds it for `status`); on an allow it is said.
    let kimi_deny = enc("kimi", "PreToolUse", &denied);
    assert_eq!(kimi_deny.stderr, "no\n", "{kimi_deny:?}");
    assert!(host("kimi").holds_notices("PreToolUse", Event::PreToolUse, &denied));
    assert!(!host("claude-code").holds_notices("PreToolUse", Event::PreToolUse, &denied));
    assert!(!host("kimi").holds_notices("PreToolUse", Event::PreToolUse, &only));
    // No adapter routes notices into the model's context.
    for (name, text) in ADAPTER_SOURCES {
        assert!(!text.contains("noticesInContext"), "{name}");
        let doc: Value = serde_json::from_str(text).unwrap();
        let mut found = Vec::new();
        placeholders(&doc["notice"], &mut found);
        if doc["encoder"] == "template" {
            assert_eq!(found, ["$notices"], "{name} has a notice channel");
        }
    }
    // Kimi Code shows the model no SessionStart output at all (captured:
    // `{"message"}`, additionalContext and plain stdout all tried).
    assert!(
        !host("kimi")
            .host_event("SessionStart")
            .unwrap()
            .can_add_context()
    );
}

#[test]
fn codex_encodings() {
    assert_eq!(
        enc("codex", "PreToolUse", &deny("CODEX-DENY")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"CODEX-DENY"}}"#
        )
    );
    // Codex has no ask: it would mark the hook failed and run the tool.
    assert_eq!(
        enc("codex", "PreToolUse", &ask("sure?")),
        enc("codex", "PreToolUse", &deny("sure?"))
    );
    assert_eq!(
        enc("codex", "Stop", &deny("run tests too")),
        out(r#"{"decision":"block","reason":"run tests too"}"#)
    );
    assert_eq!(
        enc("codex", "UserPromptSubmit", &deny("no")),
        out(r#"{"decision":"block","reason":"no"}"#)
    );
    assert_eq!(
        enc("codex", "SubagentStart", &context("you are a reviewer")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"you are a reviewer"}}"#
        )
    );
}

#[test]
fn codex_deny_reason_is_never_empty() {
    for reason in [None, Some(""), Some("   ")] {
        let mut r = result(Outcome::Deny, reason, None);
        let e = enc("codex", "PreToolUse", &r);
        let v: Value = serde_json::from_str(&e.stdout).unwrap();
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecisionReason"],
            "blocked by a keryx hook"
        );
        r.matched_rules = vec!["keryx-hooks-unavailable".into()];
        let e = enc("codex", "Stop", &r);
        let v: Value = serde_json::from_str(&e.stdout).unwrap();
        assert_eq!(
            v["reason"],
            "blocked by keryx hook `keryx-hooks-unavailable`"
        );
    }
}

#[test]
fn gemini_encodings() {
    assert_eq!(
        enc("gemini-cli", "BeforeTool", &deny("GEMINI-DENY")),
        out(r#"{"decision":"deny","reason":"GEMINI-DENY"}"#)
    );
    assert_eq!(
        enc("gemini-cli", "BeforeTool", &ask("confirm?")),
        out(r#"{"decision":"ask","reason":"confirm?","systemMessage":"confirm?"}"#)
    );
    assert_eq!(
        enc("gemini-cli", "BeforeAgent", &deny("nope")),
        out(r#"{"decision":"block","reason":"nope"}"#)
    );
    assert_eq!(
        enc("gemini-cli", "BeforeAgent", &context("GEMINI-BA-CTX")),
        out(
            r#"{"hookSpecificOutput":{"hookEventName":"BeforeAgent","additionalContext":"GEMINI-BA-CTX"}}"#
        )
    );
    assert_eq!(
        enc("gemini-cli", "AfterAgent", &deny("run tests too")),
        out(r#"{"decision":"block","reason":"run tests too"}"#)
    );
    assert_eq!(
        enc("gemini-cli", "AfterTool", &context("note")),
        out(r#"{"hookSpecificOutput":{"hookEventName":"AfterTool","additionalContext":"note"}}"#)
    );
    // A refined AfterTool (a failure) answers through the same host event.
    let a = host("gemini-cli");
    assert_eq!(
        a.encode("AfterTool", Event::PostToolUseFailure, &context("note")),
        enc("gemini-cli", "AfterTool", &context("note"))
    );
}

#[test]
fn cursor_encodings() {
    assert_eq!(
        enc("cursor", "preToolUse", &deny("no")),
        out(r#"{"permission":"deny","user_message":"no","agent_message":"no"}"#)
    );
    assert_eq!(
        enc("cursor", "preToolUse", &ask("no")),
        enc("cursor", "preToolUse", &deny("no")),
        "ask is a deny since 2.4.21"
    );
    assert_eq!(
        enc("cursor", "beforeSubmitPrompt", &deny("no")),
        out(r#"{"continue":false,"user_message":"no"}"#)
    );
    assert_eq!(
        enc("cursor", "stop", &deny("run tests too")),
        out(r#"{"followup_message":"run tests too"}"#)
    );
    assert_eq!(
        enc("cursor", "postToolUse", &context("c")),
        out(r#"{"additional_context":"c"}"#)
    );
    assert!(enc("cursor", "beforeSubmitPrompt", &context("c")).is_silent());
}

#[test]
fn copilot_encodings() {
    assert_eq!(
        enc("copilot", "preToolUse", &deny("no")),
        out(r#"{"permissionDecision":"deny","permissionDecisionReason":"no"}"#)
    );
    assert_eq!(
        enc("copilot", "preToolUse", &ask("sure?")),
        out(r#"{"permissionDecision":"ask","permissionDecisionReason":"sure?"}"#)
    );
    assert_eq!(
        enc("copilot", "agentStop", &deny("again")),
        out(r#"{"decision":"block","reason":"again"}"#)
    );
    assert_eq!(
        enc("copilot", "postToolUse", &context("c")),
        out(r#"{"additionalContext":"c"}"#)
    );
    assert_eq!(
        enc("copilot", "postToolUseFailure", &context("retry with -f")),
        Encoded {
            stdout: "{\"additionalContext\":\"retry with -f\"}\n".into(),
            stderr: String::new(),
            exit_code: 2
        }
    );
    // Captured: a block stops the prompt before any model call, and
    // additionalContext is appended to it.
    assert_eq!(
        enc("copilot", "userPromptSubmitted", &deny("no")),
        out(r#"{"decision":"block","reason":"no"}"#)
    );
    // Captured: a user message after the tool result.
    assert_eq!(
        enc("copilot", "preToolUse", &context("c")),
        out(r#"{"additionalContext":"c"}"#)
    );
    assert_eq!(
        enc("copilot", "userPromptSubmitted", &context("branch main")),
        out(r#"{"additionalContext":"branch main"}"#)
    );
    assert!(enc("copilot", "subagentStart", &deny("no")).is_silent());
}

#[test]
fn kimi_encodings() {
    let blocked = |reason: &str| Encoded {
        stdout: String::new(),
        stderr: format!("{reason}\n"),
        exit_code: 2,
    };
    assert_eq!(enc("kimi", "PreToolUse", &deny("no rm")), blocked("no rm"));
    assert_eq!(enc("kimi", "PreToolUse", &ask("sure?")), blocked("sure?"));
    assert_eq!(enc("kimi", "UserPromptSubmit", &deny("no")), blocked("no"));
    assert_eq!(enc("kimi", "Stop", &deny("again")), blocked("again"));
    assert_eq!(
        enc("kimi", "UserPromptSubmit", &context("branch main")),
        out(r#"{"message":"branch main"}"#)
    );
}

#[test]
fn an_ask_on_subagent_start_is_a_deny() {
    // keryx has no approval surface for spawns; neither has any host.
    let a = host("claude-code");
    assert_eq!(
        a.encode("PreToolUse", Event::SubagentStart, &ask("spawn?")),
        enc("claude-code", "PreToolUse", &deny("spawn?"))
    );
}

#[test]
fn keryx_returns_the_whole_result() {
    let mut r = deny("no");
    r.matched_rules = vec!["team.no-rm".into()];
    r.notices = vec!["n".into()];
    let e = enc("keryx", "PreToolUse", &r);
    assert_eq!(e.exit_code, 0);
    assert!(e.stderr.is_empty());
    assert_eq!(
        e.stdout,
        "{\"outcome\":\"deny\",\"reason\":\"no\",\"matchedRules\":[\"team.no-rm\"],\"anomalies\":[],\"records\":[],\"notices\":[\"n\"]}\n"
    );
    let e = enc("keryx", "Stop", &FireResult::none());
    assert_eq!(
        e.stdout,
        "{\"outcome\":\"none\",\"matchedRules\":[],\"anomalies\":[],\"records\":[],\"notices\":[]}\n"
    );
}

#[test]
fn a_deny_for_an_unknown_host_event_still_blocks() {
    let a = host("claude-code");
    let e = a.encode("SomeFutureEvent", Event::PreToolUse, &deny("shim broken"));
    assert_eq!(
        e,
        Encoded {
            stdout: String::new(),
            stderr: "shim broken\n".into(),
            exit_code: 2
        }
    );
    assert!(
        a.encode("SomeFutureEvent", Event::PostToolUse, &deny("x"))
            .is_silent()
    );
}

#[test]
fn every_encoding_is_one_json_object_or_nothing() {
    let samples = [
        deny("r"),
        ask("r"),
        context("c"),
        result(Outcome::Deny, Some("r"), Some("c")),
    ];
    for name in host_names() {
        let a = host(name);
        for ev in a.events() {
            for r in &samples {
                let e = a.encode(ev.name(), ev.event(), r);
                if e.stdout.is_empty() {
                    continue;
                }
                assert!(
                    e.stdout.ends_with('\n') && e.stdout.matches('\n').count() == 1,
                    "{name}: {:?}",
                    e.stdout
                );
                let v: Value = serde_json::from_str(&e.stdout).unwrap();
                assert!(v.is_object(), "{name}/{}", ev.name());
                assert!(
                    !e.stdout.contains("\"allow\""),
                    "{name}/{}: never an explicit allow",
                    ev.name()
                );
            }
        }
    }
}

/// Every host install can wire says what a shim that cannot answer does
/// there, so `doctor` can name the hosts where the tool then runs.
#[test]
fn every_wirable_host_records_how_it_fails() {
    for a in all().filter(|a| a.config_files().format != ConfigFormat::None) {
        assert!(a.shim_failure().is_some(), "{}: no shimFailure", a.name());
    }
}

/// Cline CLI 3.0.65 as captured: one payload shape of its own for every
/// event, the tool call under `tool_call`/`tool_result` (the legacy
/// `preToolUse.parameters` holds every value as a string and is not read),
/// the session its root session; a deny is Cline's cancel, context its
/// contextModification.
#[test]
fn cline_captured_payloads() {
    let a = host("cline");
    let files = fixtures("cline");
    assert!(files.len() >= 15, "{}", files.len());
    for (file, payload) in files {
        let host_event = file.split('-').next().unwrap();
        let i = a
            .decode(host_event, &payload)
            .unwrap_or_else(|e| panic!("cline/{file}: {e}"));
        assert_eq!(
            i.session_id,
            payload["sessionContext"]["rootSessionId"].as_str().unwrap()
        );
        assert_eq!(Some(i.event), a.canonical_event(host_event), "{file}");
        assert_eq!(i.run_id.as_deref(), payload["taskId"].as_str(), "{file}");
        if i.event.is_per_tool() {
            assert!(i.tool_input().is_some_and(Value::is_object), "{file}");
            assert!(i.tool_call_id().is_some_and(|c| c.starts_with("call_")));
        }
    }
    let spawn = decode(
        "cline",
        "PreToolUse",
        &fixture("cline", "PreToolUse-subagent.json"),
    );
    assert_eq!(spawn.tool_name(), Some("Agent"));
    let shell = decode(
        "cline",
        "PreToolUse",
        &fixture("cline", "PreToolUse-basic.json"),
    );
    assert_eq!(shell.tool_name(), Some("run_commands"));
    assert!(shell.tool_input().unwrap()["commands"].is_array());
    assert!(!a.can_ask());
    assert_eq!(a.timeout_unit(), TimeoutUnit::Seconds);
    assert_eq!(
        enc("cline", "PreToolUse", &deny("no")),
        out(r#"{"cancel":true,"errorMessage":"no"}"#)
    );
    for e in ["UserPromptSubmit", "TaskError", "PreCompact"] {
        assert!(a.unmapped_events().contains(&e), "{e}");
    }
}
