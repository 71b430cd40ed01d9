//! A pack's TOML in the JSON shape of a `rules` entry: the one reading of
//! a pack, shared by build.rs (which turns the shipped packs into static
//! data) and by the tools that read a pack's text.

use serde_json::{Map, Value};

/// A pack's `[[rule]]` tables in the JSON shape.
pub fn pack_rules(pack: &str, text: &str) -> Result<Vec<Value>, String> {
    let doc = text
        .parse::<toml_edit::DocumentMut>()
        .map_err(|e| format!("pack `{pack}`: invalid TOML: {e}"))?;
    let mut json = table_to_json(doc.as_table());
    for key in json.keys() {
        if !matches!(key.as_str(), "version" | "rule" | "description") {
            return Err(format!("pack `{pack}`: unknown key `{key}`"));
        }
    }
    match json.remove("rule") {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(format!("pack `{pack}`: `rule` must be `[[rule]]` tables")),
    }
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

/// The bare id of a pack's rule (a pack may write it with its prefix).
pub fn bare_id<'v>(pack: &str, rule: &'v Value) -> &'v str {
    let id = rule.get("id").and_then(Value::as_str).unwrap_or_default();
    id.strip_prefix(pack)
        .and_then(|b| b.strip_prefix('/'))
        .unwrap_or(id)
}

/// A string or a list of strings, as a list (anything else: empty).
pub fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}
