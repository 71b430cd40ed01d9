//! The generator build.rs runs on each `adapters/<host>/adapter.json`: the
//! file's `Value` read into the Rust literal of its [`Adapter`] (the types
//! of src/hosts/spec.rs), so the adapters are `static` data and nothing is
//! parsed at run time. It is as strict as a typed parse of the file would
//! be: an unknown key, a missing or mistyped field, a key twice in one
//! object (an event twice, say), an unknown enum value or canonical event,
//! or a number that is not an integer fails the build with a message naming
//! the file and the field (as a JSON pointer). Absent fields get the
//! defaults the engine documents: `wire` true, `type` string, `exit` 0,
//! lists and tables empty, flags false, options `None` (as `null` is).
//!
//! Compiled twice: into build.rs, and into the crate's unit tests, which
//! hold it to those rules.
//!
//! [`Adapter`]: super::spec::Adapter

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The ten canonical events of src/runtime/events.rs, each emitted as the
/// `Event` variant of the same name.
const EVENTS: [&str; 10] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
];

/// The literal of the `Adapter` that the adapter file `text` describes,
/// `file` naming it in the panic at the first thing wrong with it.
pub fn adapter(file: &str, text: &str) -> String {
    let mut out = String::new();
    literal(file, text).render(0, &mut out);
    out
}

fn literal(file: &str, text: &str) -> Lit {
    let doc = parse_strict(text).unwrap_or_else(|e| panic!("{file}: {e}"));
    Gen { file }.adapter(&doc)
}

// ------------------------------------------------------------ strict JSON

/// The file as a `Value` (keys in file order), refusing a key that appears
/// twice in one object: a typed parse refuses a struct field twice, and
/// an event, tool or template key twice would otherwise be silently lost.
fn parse_strict(text: &str) -> Result<Value, serde_json::Error> {
    let mut d = serde_json::Deserializer::from_str(text);
    let v = Strict(String::new()).deserialize(&mut d)?;
    d.end()?;
    Ok(v)
}

/// Reads one value at this JSON pointer.
struct Strict(String);

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        Ok(Value::from(n))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict(format!("{}/{}", self.0, out.len())))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                let what = if self.0 == "/events" { "event" } else { "key" };
                return Err(de::Error::custom(format!(
                    "{}: {what} `{key}` twice",
                    or_root(&self.0)
                )));
            }
            let v = map.next_value_seed(Strict(pointer(&self.0, &key)))?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// `path` extended by one object key, as a JSON pointer.
fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn or_root(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

// ---------------------------------------------------------- Rust literals

/// A Rust expression, printed on one line when it fits and indented
/// otherwise.
enum Lit {
    Atom(String),
    Struct(&'static str, Vec<(&'static str, Lit)>),
    Slice(Vec<Lit>),
    Tuple(Vec<Lit>),
    /// `Some(x)`, `Json::Arr(x)`: a path applied to one expression.
    Wrap(&'static str, Box<Lit>),
}

const WIDTH: usize = 100;

impl Lit {
    fn str(s: &str) -> Lit {
        Lit::Atom(format!("{s:?}"))
    }

    fn some(l: Lit) -> Lit {
        Lit::Wrap("Some", Box::new(l))
    }

    fn none() -> Lit {
        Lit::Atom("None".into())
    }

    fn flat(&self, out: &mut String) {
        let list = |items: &mut dyn Iterator<Item = &Lit>, out: &mut String| {
            for (i, l) in items.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                l.flat(out);
            }
        };
        match self {
            Lit::Atom(s) => out.push_str(s),
            Lit::Struct(name, fields) => {
                out.push_str(name);
                out.push_str(" {");
                for (i, (f, l)) in fields.iter().enumerate() {
                    out.push_str(if i > 0 { ", " } else { " " });
                    out.push_str(f);
                    out.push_str(": ");
                    l.flat(out);
                }
                out.push_str(" }");
            }
            Lit::Slice(items) => {
                out.push_str("&[");
                list(&mut items.iter(), out);
                out.push(']');
            }
            Lit::Tuple(items) => {
                out.push('(');
                list(&mut items.iter(), out);
                out.push(')');
            }
            Lit::Wrap(path, inner) => {
                out.push_str(path);
                out.push('(');
                inner.flat(out);
                out.push(')');
            }
        }
    }

    /// Appends the expression, `indent` being the current line's indent.
    fn render(&self, indent: usize, out: &mut String) {
        let mut one = String::new();
        self.flat(&mut one);
        let column = out.len() - out.rfind('\n').map_or(0, |i| i + 1);
        if column + one.len() <= WIDTH {
            out.push_str(&one);
            return;
        }
        let pad = " ".repeat(indent + 4);
        let close = " ".repeat(indent);
        match self {
            Lit::Atom(s) => out.push_str(s),
            Lit::Struct(name, fields) => {
                out.push_str(name);
                out.push_str(" {\n");
                for (f, l) in fields {
                    out.push_str(&pad);
                    out.push_str(f);
                    out.push_str(": ");
                    l.render(indent + 4, out);
                    out.push_str(",\n");
                }
                out.push_str(&close);
                out.push('}');
            }
            Lit::Slice(items) | Lit::Tuple(items) => {
                let (open, end) = if matches!(self, Lit::Slice(_)) {
                    ("&[\n", ']')
                } else {
                    ("(\n", ')')
                };
                out.push_str(open);
                for l in items {
                    out.push_str(&pad);
                    l.render(indent + 4, out);
                    out.push_str(",\n");
                }
                out.push_str(&close);
                out.push(end);
            }
            Lit::Wrap(path, inner) => {
                out.push_str(path);
                out.push('(');
                inner.render(indent, out);
                out.push(')');
            }
        }
    }
}

// ------------------------------------------------------ adapter → literal

/// Reads one adapter file's `Value` into the literal of its `Adapter`,
/// panicking at the first field a typed parse would refuse.
struct Gen<'a> {
    file: &'a str,
}

/// One JSON object whose keys have been checked against a struct's fields.
struct Obj<'a> {
    path: String,
    map: &'a Map<String, Value>,
}

impl Obj<'_> {
    fn at(&self, key: &str) -> String {
        pointer(&self.path, key)
    }
}

impl Gen<'_> {
    fn fail(&self, path: &str, what: impl fmt::Display) -> ! {
        panic!("{}: {}: {what}", self.file, or_root(path))
    }

    fn expected(&self, path: &str, what: &str, v: &Value) -> ! {
        self.fail(path, format!("expected {what}, found {}", type_name(v)))
    }

    /// `v` as an object with no key outside `fields`.
    fn object<'v>(&self, path: &str, v: &'v Value, fields: &[&str]) -> Obj<'v> {
        let Some(map) = v.as_object() else {
            self.expected(path, "an object", v)
        };
        for key in map.keys() {
            if !fields.contains(&key.as_str()) {
                self.fail(
                    path,
                    format!(
                        "unknown field `{key}`, expected one of `{}`",
                        fields.join("`, `")
                    ),
                );
            }
        }
        Obj {
            path: path.to_owned(),
            map,
        }
    }

    /// A field without a default.
    fn req<'v>(&self, o: &Obj<'v>, key: &str) -> &'v Value {
        o.map
            .get(key)
            .unwrap_or_else(|| self.fail(&o.path, format!("missing field `{key}`")))
    }

    /// An optional field: absent and `null` are both `None`.
    fn opt<'v>(&self, o: &Obj<'v>, key: &str) -> Option<&'v Value> {
        o.map.get(key).filter(|v| !v.is_null())
    }

    fn string(&self, path: &str, v: &Value) -> Lit {
        match v.as_str() {
            Some(s) => Lit::str(s),
            None => self.expected(path, "a string", v),
        }
    }

    fn req_str(&self, o: &Obj, key: &str) -> Lit {
        self.string(&o.at(key), self.req(o, key))
    }

    fn opt_str(&self, o: &Obj, key: &str) -> Lit {
        match self.opt(o, key) {
            Some(v) => Lit::some(self.string(&o.at(key), v)),
            None => Lit::none(),
        }
    }

    fn boolean(&self, path: &str, v: &Value) -> Lit {
        match v.as_bool() {
            Some(b) => Lit::Atom(b.to_string()),
            None => self.expected(path, "a boolean", v),
        }
    }

    fn req_bool(&self, o: &Obj, key: &str) -> Lit {
        self.boolean(&o.at(key), self.req(o, key))
    }

    /// A flag that is `default` when absent (a present `null` is refused).
    fn flag(&self, o: &Obj, key: &str, default: bool) -> Lit {
        match o.map.get(key) {
            Some(v) => self.boolean(&o.at(key), v),
            None => Lit::Atom(default.to_string()),
        }
    }

    fn strings(&self, path: &str, v: &Value) -> Lit {
        let Some(items) = v.as_array() else {
            self.expected(path, "a list of strings", v)
        };
        Lit::Slice(
            items
                .iter()
                .enumerate()
                .map(|(i, s)| self.string(&format!("{path}/{i}"), s))
                .collect(),
        )
    }

    fn req_strings(&self, o: &Obj, key: &str) -> Lit {
        self.strings(&o.at(key), self.req(o, key))
    }

    /// A list that is empty when absent.
    fn list(&self, o: &Obj, key: &str, item: impl Fn(&str, &Value) -> Lit) -> Lit {
        let Some(v) = o.map.get(key) else {
            return Lit::Slice(Vec::new());
        };
        let path = o.at(key);
        let Some(items) = v.as_array() else {
            self.expected(&path, "a list", v)
        };
        Lit::Slice(
            items
                .iter()
                .enumerate()
                .map(|(i, x)| item(&format!("{path}/{i}"), x))
                .collect(),
        )
    }

    fn default_strings(&self, o: &Obj, key: &str) -> Lit {
        match o.map.get(key) {
            Some(v) => self.strings(&o.at(key), v),
            None => Lit::Slice(Vec::new()),
        }
    }

    /// A string-to-string object as a table sorted by key; empty when absent.
    fn table(&self, o: &Obj, key: &str) -> Lit {
        let Some(v) = o.map.get(key) else {
            return Lit::Slice(Vec::new());
        };
        let path = o.at(key);
        let Some(map) = v.as_object() else {
            self.expected(&path, "an object of strings", v)
        };
        let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
        pairs.sort_by(|a, b| a.0.cmp(b.0));
        Lit::Slice(
            pairs
                .into_iter()
                .map(|(k, v)| Lit::Tuple(vec![Lit::str(k), self.string(&pointer(&path, k), v)]))
                .collect(),
        )
    }

    /// One of `allowed` (the lowercase file spellings), as `Type::Variant`.
    fn enumerated(&self, path: &str, v: &Value, ty: &str, allowed: &[&str]) -> Lit {
        let Some(s) = v.as_str() else {
            self.expected(path, &format!("one of `{}`", allowed.join("`, `")), v)
        };
        if !allowed.contains(&s) {
            self.fail(
                path,
                format!(
                    "unknown variant `{s}`, expected one of `{}`",
                    allowed.join("`, `")
                ),
            );
        }
        let mut variant = String::new();
        for (i, c) in s.chars().enumerate() {
            variant.push(if i == 0 { c.to_ascii_uppercase() } else { c });
        }
        Lit::Atom(format!("{ty}::{variant}"))
    }

    fn event(&self, path: &str, v: &Value) -> Lit {
        let Some(s) = v.as_str() else {
            self.expected(path, "a canonical event name", v)
        };
        if !EVENTS.contains(&s) {
            self.fail(
                path,
                format!(
                    "unknown event `{s}`, expected one of `{}`",
                    EVENTS.join("`, `")
                ),
            );
        }
        Lit::Atom(format!("Event::{s}"))
    }

    fn req_event(&self, o: &Obj, key: &str) -> Lit {
        self.event(&o.at(key), self.req(o, key))
    }

    fn integer(&self, path: &str, v: &Value, max: u64) -> Lit {
        match v.as_u64() {
            Some(n) if n <= max => Lit::Atom(n.to_string()),
            _ => self.expected(path, &format!("an integer from 0 to {max}"), v),
        }
    }

    fn json(&self, path: &str, v: &Value) -> Lit {
        match v {
            Value::Null => Lit::Atom("Json::Null".into()),
            Value::Bool(b) => Lit::Atom(format!("Json::Bool({b})")),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Lit::Atom(format!("Json::Int({i})")),
                None => self.fail(
                    path,
                    format!("the number {n} is not supported: only integers that fit an i64 are"),
                ),
            },
            Value::String(s) => Lit::Atom(format!("Json::Str({s:?})")),
            Value::Array(items) => Lit::Wrap(
                "Json::Arr",
                Box::new(Lit::Slice(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, x)| self.json(&format!("{path}/{i}"), x))
                        .collect(),
                )),
            ),
            Value::Object(map) => Lit::Wrap("Json::Obj", Box::new(self.entries(path, map))),
        }
    }

    /// An object's entries in file order, as `&[("key", Json), …]`.
    fn entries(&self, path: &str, map: &Map<String, Value>) -> Lit {
        Lit::Slice(
            map.iter()
                .map(|(k, v)| Lit::Tuple(vec![Lit::str(k), self.json(&pointer(path, k), v)]))
                .collect(),
        )
    }

    fn adapter(&self, doc: &Value) -> Lit {
        let o = self.object(
            "",
            doc,
            &[
                "$schema",
                "name",
                "displayName",
                "aliases",
                "notice",
                "encoder",
                "sources",
                "timeout",
                "configFiles",
                "matchAll",
                "closesStdin",
                "exitRule",
                "passthrough",
                "hostFields",
                "hookEnv",
                "ignore",
                "fields",
                "tools",
                "mcp",
                "events",
                "unmapped",
                "bridges",
                "notes",
            ],
        );
        if let Some(v) = self.opt(&o, "$schema") {
            self.string(&o.at("$schema"), v);
        }
        Lit::Struct(
            "Adapter",
            vec![
                ("name", self.req_str(&o, "name")),
                ("display_name", self.req_str(&o, "displayName")),
                ("aliases", self.default_strings(&o, "aliases")),
                ("notice", self.opt_output(&o, "notice")),
                (
                    "encoder",
                    self.enumerated(
                        &o.at("encoder"),
                        self.req(&o, "encoder"),
                        "EncoderKind",
                        &["template", "keryx"],
                    ),
                ),
                ("sources", self.default_strings(&o, "sources")),
                (
                    "timeout",
                    self.timeout(&o.at("timeout"), self.req(&o, "timeout")),
                ),
                (
                    "config_files",
                    self.config_files(&o.at("configFiles"), self.req(&o, "configFiles")),
                ),
                ("match_all", self.opt_str(&o, "matchAll")),
                ("closes_stdin", self.req_bool(&o, "closesStdin")),
                ("exit_rule", self.req_str(&o, "exitRule")),
                ("passthrough", self.flag(&o, "passthrough", false)),
                ("host_fields", self.flag(&o, "hostFields", false)),
                ("hook_env", self.default_strings(&o, "hookEnv")),
                ("ignore", self.default_strings(&o, "ignore")),
                (
                    "fields",
                    self.list(&o, "fields", |p, v| self.field_map(p, v)),
                ),
                ("tools", self.table(&o, "tools")),
                (
                    "mcp",
                    match self.opt(&o, "mcp") {
                        Some(v) => Lit::some(self.mcp(&o.at("mcp"), v)),
                        None => Lit::none(),
                    },
                ),
                (
                    "events",
                    self.events(&o.at("events"), self.req(&o, "events")),
                ),
                ("unmapped", self.default_strings(&o, "unmapped")),
                (
                    "bridges",
                    self.list(&o, "bridges", |p, v| self.bridge(p, v)),
                ),
                ("notes", self.default_strings(&o, "notes")),
            ],
        )
    }

    fn timeout(&self, path: &str, v: &Value) -> Lit {
        let o = self.object(path, v, &["unit", "default"]);
        Lit::Struct(
            "Timeout",
            vec![
                (
                    "unit",
                    self.enumerated(
                        &o.at("unit"),
                        self.req(&o, "unit"),
                        "TimeoutUnit",
                        &["seconds", "milliseconds"],
                    ),
                ),
                (
                    "default",
                    match self.opt(&o, "default") {
                        Some(v) => Lit::some(self.integer(&o.at("default"), v, u64::MAX)),
                        None => Lit::none(),
                    },
                ),
            ],
        )
    }

    fn config_files(&self, path: &str, v: &Value) -> Lit {
        let o = self.object(path, v, &["format", "user", "project", "homeEnv"]);
        let home_env = match self.opt(&o, "homeEnv") {
            Some(v) => {
                let path = o.at("homeEnv");
                let h = self.object(&path, v, &["var", "replaces"]);
                Lit::some(Lit::Struct(
                    "HomeEnv",
                    vec![
                        ("var", self.req_str(&h, "var")),
                        ("replaces", self.req_str(&h, "replaces")),
                    ],
                ))
            }
            None => Lit::none(),
        };
        Lit::Struct(
            "ConfigFiles",
            vec![
                (
                    "format",
                    self.enumerated(
                        &o.at("format"),
                        self.req(&o, "format"),
                        "ConfigFormat",
                        &["json", "toml", "plugin", "none"],
                    ),
                ),
                ("user", self.req_strings(&o, "user")),
                ("project", self.req_strings(&o, "project")),
                ("home_env", home_env),
            ],
        )
    }

    fn field_map(&self, path: &str, v: &Value) -> Lit {
        let o = self.object(
            path,
            v,
            &["to", "from", "type", "transform", "required", "values"],
        );
        // `from` is one path or a list of them; one path is a list of one.
        let from_path = o.at("from");
        let from = match self.req(&o, "from") {
            Value::String(s) => Lit::Slice(vec![Lit::str(s)]),
            Value::Array(items) => Lit::Slice(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| match s.as_str() {
                        Some(s) => Lit::str(s),
                        None => self.expected(
                            &format!("{from_path}/{i}"),
                            "a string (in a list of strings)",
                            s,
                        ),
                    })
                    .collect(),
            ),
            other => self.expected(&from_path, "a string or a list of strings", other),
        };
        let kind = match o.map.get("type") {
            Some(v) => self.enumerated(
                &o.at("type"),
                v,
                "ValueKind",
                &["string", "boolean", "number", "object", "array", "any"],
            ),
            None => Lit::Atom("ValueKind::String".into()),
        };
        let transform = match self.opt(&o, "transform") {
            Some(v) => Lit::some(self.enumerated(
                &o.at("transform"),
                v,
                "Transform",
                &["tool", "json", "error", "positive", "text"],
            )),
            None => Lit::none(),
        };
        Lit::Struct(
            "FieldMap",
            vec![
                ("to", self.req_str(&o, "to")),
                ("from", from),
                ("kind", kind),
                ("transform", transform),
                ("required", self.flag(&o, "required", false)),
                ("values", self.table(&o, "values")),
            ],
        )
    }

    fn mcp(&self, path: &str, v: &Value) -> Lit {
        let o = self.object(
            path,
            v,
            &["prefix", "serverPath", "toolPath", "defaultServer"],
        );
        Lit::Struct(
            "Mcp",
            vec![
                ("prefix", self.req_str(&o, "prefix")),
                ("server_path", self.opt_str(&o, "serverPath")),
                ("tool_path", self.opt_str(&o, "toolPath")),
                ("default_server", self.opt_str(&o, "defaultServer")),
            ],
        )
    }

    /// The events object, in file order (the order the installer wires them).
    fn events(&self, path: &str, v: &Value) -> Lit {
        let Some(map) = v.as_object() else {
            self.expected(path, "an object of host events", v)
        };
        Lit::Slice(
            map.iter()
                .map(|(name, ev)| self.host_event(&pointer(path, name), name, ev))
                .collect(),
        )
    }

    fn host_event(&self, path: &str, name: &str, v: &Value) -> Lit {
        let o = self.object(
            path,
            v,
            &[
                "event", "wire", "fields", "require", "refine", "skip", "deny", "ask", "context",
                "notice",
            ],
        );
        let refine = match self.opt(&o, "refine") {
            Some(v) => {
                let r = self.object(&o.at("refine"), v, &["when", "event"]);
                Lit::some(Lit::Struct(
                    "Refine",
                    vec![
                        ("when", self.req_str(&r, "when")),
                        ("event", self.req_event(&r, "event")),
                    ],
                ))
            }
            None => Lit::none(),
        };
        let skip = match self.opt(&o, "skip") {
            Some(v) => {
                let s = self.object(&o.at("skip"), v, &["when", "equals", "why"]);
                let equals = match self.opt(&s, "equals") {
                    Some(v) => Lit::some(self.json(&s.at("equals"), v)),
                    None => Lit::none(),
                };
                Lit::some(Lit::Struct(
                    "Skip",
                    vec![
                        ("when", self.req_str(&s, "when")),
                        ("equals", equals),
                        ("why", self.req_str(&s, "why")),
                    ],
                ))
            }
            None => Lit::none(),
        };
        Lit::Struct(
            "HostEvent",
            vec![
                ("name", Lit::str(name)),
                ("event", self.req_event(&o, "event")),
                ("wire", self.flag(&o, "wire", true)),
                (
                    "fields",
                    self.list(&o, "fields", |p, v| self.field_map(p, v)),
                ),
                ("require", self.default_strings(&o, "require")),
                ("refine", refine),
                ("skip", skip),
                ("deny", self.opt_output(&o, "deny")),
                ("ask", self.opt_output(&o, "ask")),
                ("context", self.opt_output(&o, "context")),
                ("notice", self.opt_output(&o, "notice")),
            ],
        )
    }

    fn opt_output(&self, o: &Obj, key: &str) -> Lit {
        let Some(v) = self.opt(o, key) else {
            return Lit::none();
        };
        let path = o.at(key);
        let out = self.object(&path, v, &["stdout", "stderr", "exit"]);
        let stdout = match self.opt(&out, "stdout") {
            Some(Value::Object(map)) => Lit::some(self.entries(&out.at("stdout"), map)),
            Some(other) => self.expected(&out.at("stdout"), "an object", other),
            None => Lit::none(),
        };
        let exit = match out.map.get("exit") {
            Some(v) => self.integer(&out.at("exit"), v, u8::MAX.into()),
            None => Lit::Atom("0".into()),
        };
        Lit::some(Lit::Struct(
            "Output",
            vec![
                ("stdout", stdout),
                ("stderr", self.opt_str(&out, "stderr")),
                ("exit", exit),
            ],
        ))
    }

    fn bridge(&self, path: &str, v: &Value) -> Lit {
        let o = self.object(path, v, &["event", "via", "tool"]);
        Lit::Struct(
            "BridgeSpec",
            vec![
                ("event", self.req_event(&o, "event")),
                ("via", self.req_event(&o, "via")),
                ("tool", self.req_str(&o, "tool")),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{EVENTS, WIDTH, adapter, literal};
    use crate::runtime::events::Event;

    const FILE: &str = "adapters/t/adapter.json";

    /// The smallest adapter the generator takes, with one event.
    fn base() -> Value {
        json!({
            "name": "t",
            "displayName": "T",
            "encoder": "template",
            "timeout": { "unit": "seconds" },
            "configFiles": { "format": "json", "user": [], "project": [] },
            "closesStdin": false,
            "exitRule": "exit 0",
            "events": {
                "E": { "event": "Stop", "fields": [{ "to": "reason", "from": "why" }] }
            }
        })
    }

    /// The generated literal on one line, or the build failure's message.
    fn generate_text(text: &str) -> Result<String, String> {
        let one_line = || {
            let mut out = String::new();
            literal(FILE, text).flat(&mut out);
            out
        };
        std::panic::catch_unwind(one_line).map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default()
        })
    }

    /// `base()` with the value at `pointer` replaced (or added, for a new
    /// key of an existing object; removed, for `None`).
    fn generate_with(pointer: &str, value: Option<Value>) -> Result<String, String> {
        let mut doc = base();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let obj = doc
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{pointer}"));
        match value {
            Some(v) => obj.insert(key.to_owned(), v),
            None => obj.remove(key),
        };
        generate_text(&doc.to_string())
    }

    fn accepted(pointer: &str, value: Value) -> String {
        generate_with(pointer, Some(value.clone()))
            .unwrap_or_else(|e| panic!("{pointer} = {value}: {e}"))
    }

    fn refused(pointer: &str, value: Option<Value>) -> String {
        let e = generate_with(pointer, value.clone())
            .expect_err(&format!("{pointer} = {value:?} should fail the build"));
        assert!(e.starts_with(&format!("{FILE}: ")), "{e}");
        e
    }

    /// What build.rs wrote for each real adapter is this generator's output,
    /// laid out to be read: a line too long for [`WIDTH`] is broken at its
    /// fields and items, so only a single long string exceeds it.
    #[test]
    fn the_generated_file_is_this_generators_readable_output() {
        let data = include_str!(concat!(env!("OUT_DIR"), "/adapter_data.rs"));
        for (name, text) in crate::hosts::ADAPTER_SOURCES {
            let id = name.to_ascii_uppercase().replace('-', "_");
            let literal = adapter(&format!("adapters/{name}/adapter.json"), text);
            assert!(
                data.contains(&format!("pub(super) static {id}: Adapter = {literal};\n")),
                "{name}"
            );
            let mut one_line = String::new();
            super::literal(name, text).flat(&mut one_line);
            assert!(one_line.len() > WIDTH && literal.lines().count() > 1);
            for line in literal.lines().filter(|l| l.len() > WIDTH) {
                let s = line.trim_start();
                let s = s.split_once(": \"").map_or(s, |(_, rest)| rest);
                let s = s.trim_end_matches(',');
                assert!(
                    s.ends_with('"') && !s.contains("\", \""),
                    "{name}: a long line is one string: {line}"
                );
            }
        }
    }

    #[test]
    fn the_canonical_events_are_the_runtimes() {
        let names: Vec<&str> = Event::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(EVENTS[..], names[..]);
    }

    #[test]
    fn absent_fields_get_their_defaults() {
        let out = generate_text(&base().to_string()).unwrap();
        for default in [
            "notice: None",
            "sources: &[]",
            "default: None",
            "match_all: None",
            "passthrough: false",
            "host_fields: false",
            "hook_env: &[]",
            "ignore: &[]",
            "tools: &[]",
            "mcp: None",
            "wire: true",
            "kind: ValueKind::String",
            "transform: None",
            "required: false",
            "values: &[]",
            "require: &[]",
            "refine: None",
            "skip: None",
            "deny: None",
            "unmapped: &[]",
            "bridges: &[]",
            "notes: &[]",
        ] {
            assert!(out.contains(default), "{default} in\n{out}");
        }
        let out = accepted("/events/E/deny", json!({ "stderr": "$reason" }));
        assert!(
            out.contains(
                r#"deny: Some(Output { stdout: None, stderr: Some("$reason"), exit: 0 })"#
            ),
            "{out}"
        );
    }

    /// `null` is `None` for every optional field, as a typed parse reads it.
    #[test]
    fn null_is_none_for_optional_fields() {
        for pointer in [
            "/matchAll",
            "/notice",
            "/mcp",
            "/$schema",
            "/timeout/default",
        ] {
            accepted(pointer, Value::Null);
        }
        let out = accepted(
            "/events/E/skip",
            json!({ "when": "x", "equals": null, "why": "y" }),
        );
        assert!(out.contains("equals: None"), "{out}");
    }

    /// `from` is a string or a list of strings, and nothing else; one
    /// string is a list of one.
    #[test]
    fn from_is_a_string_or_a_list_of_strings() {
        let from = "/events/E/fields/0/from";
        for (value, literal) in [
            (json!("a"), r#"from: &["a"]"#),
            (json!("a\"b"), r#"from: &["a\"b"]"#),
            (json!(["a", "b"]), r#"from: &["a", "b"]"#),
            (json!([]), "from: &[]"),
        ] {
            let out = accepted(from, value);
            assert!(out.contains(literal), "{literal} in\n{out}");
        }
        for bad in [
            json!(1),
            json!([1]),
            json!(null),
            json!({ "a": "b" }),
            json!(["a", ["b"]]),
        ] {
            let e = refused(from, Some(bad.clone()));
            assert!(e.contains(from), "{bad}: {e}");
            assert!(e.contains("a string"), "{bad}: {e}");
        }
    }

    #[test]
    fn tables_are_sorted_and_templates_keep_the_files_order() {
        let out = accepted("/tools", json!({ "b": "Bash", "a": "Agent" }));
        assert!(
            out.contains(r#"tools: &[("a", "Agent"), ("b", "Bash")]"#),
            "{out}"
        );
        let out = accepted(
            "/events/E/deny",
            json!({ "stdout": { "z": 1, "a": [true, null, -2, "$reason"], "m": {} }, "exit": 2 }),
        );
        assert!(
            out.contains(
                r#"("z", Json::Int(1)), ("a", Json::Arr(&[Json::Bool(true), Json::Null, Json::Int(-2), Json::Str("$reason")])), ("m", Json::Obj(&[]))"#
            ),
            "{out}"
        );
        assert!(out.contains("exit: 2"), "{out}");
        let out = accepted(
            "/events",
            json!({ "Z": { "event": "Stop" }, "A": { "event": "PreToolUse", "wire": false } }),
        );
        let (z, a) = (out.find(r#"name: "Z""#), out.find(r#"name: "A""#));
        assert!(z.is_some() && a.is_some() && z < a, "{out}");
        assert!(
            out.contains("event: Event::PreToolUse, wire: false"),
            "{out}"
        );
    }

    /// Every file error fails the build, naming the file, the field's JSON
    /// pointer and what is wrong.
    #[test]
    fn what_a_typed_parse_refuses_fails_the_build() {
        let cases: [(&str, Option<Value>, &str); 27] = [
            ("/extra", Some(json!(1)), "/: unknown field `extra`"),
            (
                "/events/E/frm",
                Some(json!("x")),
                "/events/E: unknown field `frm`",
            ),
            (
                "/events/E/fields/0/kind",
                Some(json!("any")),
                "/events/E/fields/0: unknown field `kind`",
            ),
            (
                "/mcp",
                Some(json!({ "prefix": "mcp_", "server": "x" })),
                "/mcp: unknown field `server`",
            ),
            (
                "/events/E/deny",
                Some(json!({ "stdout": { "a": "$reason" }, "code": 2 })),
                "/events/E/deny: unknown field `code`",
            ),
            ("/name", None, "/: missing field `name`"),
            ("/events", None, "/: missing field `events`"),
            ("/events/E/event", None, "/events/E: missing field `event`"),
            (
                "/events/E/refine",
                Some(json!({ "when": "x" })),
                "/events/E/refine: missing field `event`",
            ),
            (
                "/configFiles/homeEnv",
                Some(json!({ "var": "X" })),
                "/configFiles/homeEnv: missing field `replaces`",
            ),
            (
                "/events/E/event",
                Some(json!("BeforeTool")),
                "/events/E/event: unknown event `BeforeTool`",
            ),
            (
                "/bridges",
                Some(json!([{ "event": "SubagentStart", "via": "Nope", "tool": "Agent" }])),
                "/bridges/0/via: unknown event `Nope`",
            ),
            (
                "/encoder",
                Some(json!("Template")),
                "/encoder: unknown variant `Template`",
            ),
            (
                "/timeout/unit",
                Some(json!("minutes")),
                "/timeout/unit: unknown variant `minutes`",
            ),
            (
                "/configFiles/format",
                Some(json!("yaml")),
                "/configFiles/format: unknown variant `yaml`",
            ),
            (
                "/events/E/fields/0/type",
                Some(json!("int")),
                "/events/E/fields/0/type: unknown variant `int`",
            ),
            (
                "/events/E/fields/0/transform",
                Some(json!("upper")),
                "/events/E/fields/0/transform: unknown variant `upper`",
            ),
            (
                "/events/E/deny",
                Some(json!({ "stdout": { "a": 1.5 } })),
                "/events/E/deny/stdout/a: the number 1.5 is not supported",
            ),
            (
                "/events/E/deny",
                Some(json!({ "exit": 300 })),
                "/events/E/deny/exit: expected an integer from 0 to 255, found a number",
            ),
            (
                "/events/E/deny",
                Some(json!({ "stdout": "x" })),
                "/events/E/deny/stdout: expected an object, found a string",
            ),
            (
                "/timeout/default",
                Some(json!(1.5)),
                "/timeout/default: expected an integer",
            ),
            (
                "/events/E/wire",
                Some(json!(null)),
                "/events/E/wire: expected a boolean, found null",
            ),
            (
                "/closesStdin",
                Some(json!("no")),
                "/closesStdin: expected a boolean, found a string",
            ),
            (
                "/sources",
                Some(json!(null)),
                "/sources: expected a list of strings, found null",
            ),
            (
                "/tools",
                Some(json!({ "a/b": 1 })),
                "/tools/a~1b: expected a string, found a number",
            ),
            (
                "/events",
                Some(json!(["Stop"])),
                "/events: expected an object of host events, found an array",
            ),
            (
                "/events/E/require",
                Some(json!(["a", 1])),
                "/events/E/require/1: expected a string, found a number",
            ),
        ];
        for (pointer, value, message) in cases {
            let e = refused(pointer, value);
            assert!(e.contains(message), "{pointer}: {e}");
        }
    }

    /// A key twice in one object fails too: an event twice, a tool twice, a
    /// struct field twice.
    #[test]
    fn a_key_twice_fails_the_build() {
        let text = base().to_string();
        for (from, to, message) in [
            (
                r#""events":{"E":"#,
                r#""events":{"E":{"event":"Stop"},"E":"#,
                "/events: event `E` twice",
            ),
            (
                r#""name":"t""#,
                r#""name":"t","name":"t""#,
                "/: key `name` twice",
            ),
            (
                r#""unit":"seconds""#,
                r#""unit":"seconds","unit":"seconds""#,
                "/timeout: key `unit` twice",
            ),
        ] {
            assert!(text.contains(from), "{from} in {text}");
            let e = generate_text(&text.replacen(from, to, 1)).unwrap_err();
            assert!(e.starts_with(&format!("{FILE}: ")), "{e}");
            assert!(e.contains(message), "{e}");
        }
        let text = base().to_string().replacen(
            r#""closesStdin""#,
            r#""tools":{"a":"Agent","a":"Bash"},"closesStdin""#,
            1,
        );
        let e = generate_text(&text).unwrap_err();
        assert!(e.contains("/tools: key `a` twice"), "{e}");
    }

    #[test]
    fn text_that_is_not_json_fails_the_build() {
        let e = generate_text("{").unwrap_err();
        assert!(e.starts_with(&format!("{FILE}: ")), "{e}");
        let e = generate_text(&format!("{} 1", base())).unwrap_err();
        assert!(e.contains("trailing characters"), "{e}");
    }
}
