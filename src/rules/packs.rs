//! The default packs: `src/rules/packs/<pack>.toml`, compiled into the
//! binary, each a `version` and one `[[rule]]` table per rule in the JSON
//! format's TOML spelling. They are turned into that JSON shape and
//! compiled once per process, on first use.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::config::rules::{self, Rule};

/// Every shipped pack: (pack id, its TOML). Add a pack here with
/// `("name", include_str!("packs/name.toml"))`.
pub const PACKS: &[(&str, &str)] = &[];

/// The rules of every shipped pack, compiled. A pack that does not compile
/// is left out and logged (a test keeps that from shipping).
pub fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let mut out = Vec::new();
        for (pack, text) in PACKS {
            match compile_pack(pack, text) {
                Ok(rules) => out.extend(rules),
                Err(e) => tracing::warn!(pack, "rule pack left out: {e}"),
            }
        }
        out
    })
}

/// Compiles one pack's TOML: every rule or the first error, naming the
/// pack and the rule.
pub fn compile_pack(pack: &str, text: &str) -> Result<Vec<Rule>, String> {
    let doc = text
        .parse::<toml_edit::DocumentMut>()
        .map_err(|e| format!("pack `{pack}`: invalid TOML: {e}"))?;
    let json = table_to_json(doc.as_table());
    for key in json.keys() {
        if !matches!(key.as_str(), "version" | "rule" | "description") {
            return Err(format!("pack `{pack}`: unknown key `{key}`"));
        }
    }
    let list = match json.get("rule") {
        None => return Ok(Vec::new()),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(format!("pack `{pack}`: `rule` must be `[[rule]]` tables")),
    };
    let mut out: Vec<Rule> = Vec::new();
    for v in &list {
        let r = rules::compile(v, Some(pack)).map_err(|e| format!("pack `{pack}`: {e}"))?;
        if out.iter().any(|o| o.id == r.id) {
            return Err(format!("pack `{pack}`: rule `{}` is defined twice", r.id));
        }
        out.push(r);
    }
    Ok(out)
}

fn table_to_json(t: &toml_edit::Table) -> Map<String, Value> {
    t.iter()
        .filter_map(|(k, item)| item_to_json(item).map(|v| (k.to_owned(), v)))
        .collect()
}

fn item_to_json(item: &toml_edit::Item) -> Option<Value> {
    match item {
        toml_edit::Item::None => None,
        toml_edit::Item::Value(v) => Some(value_to_json(v)),
        toml_edit::Item::Table(t) => Some(Value::Object(table_to_json(t))),
        toml_edit::Item::ArrayOfTables(a) => Some(Value::Array(
            a.iter().map(|t| Value::Object(table_to_json(t))).collect(),
        )),
    }
}

fn value_to_json(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as T;
    match v {
        T::String(s) => Value::String(s.value().clone()),
        T::Integer(i) => Value::from(*i.value()),
        T::Float(f) => Value::from(*f.value()),
        T::Boolean(b) => Value::Bool(*b.value()),
        T::Datetime(d) => Value::String(d.value().to_string()),
        T::Array(a) => Value::Array(a.iter().map(value_to_json).collect()),
        T::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_owned(), value_to_json(v)))
                .collect(),
        ),
    }
}
