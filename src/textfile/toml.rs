//! TOML seen as JSON: how the host-file code, the Codex review reader and
//! the write gate compare TOML host files with what they expect.

use serde_json::{Map, Value as Json};
use toml_edit::{Item, TableLike, Value};

/// A TOML item as JSON (dates become strings): how the host-file code,
/// the Codex review reader and the self-protection check compare TOML.
pub fn item_json(item: &Item) -> Json {
    match item {
        Item::None => Json::Null,
        Item::Value(v) => value_json(v),
        Item::Table(t) => table_json(t),
        Item::ArrayOfTables(a) => Json::Array(a.iter().map(|t| table_json(t)).collect()),
    }
}

fn value_json(v: &Value) -> Json {
    match v {
        Value::String(s) => Json::from(s.value().as_str()),
        Value::Integer(i) => Json::from(*i.value()),
        Value::Float(f) => Json::from(*f.value()),
        Value::Boolean(b) => Json::from(*b.value()),
        Value::Datetime(d) => Json::from(d.value().to_string()),
        Value::Array(a) => Json::Array(a.iter().map(value_json).collect()),
        Value::InlineTable(t) => table_json(t),
    }
}

/// A TOML table as a JSON object, as [`item_json`].
pub fn table_json(t: &dyn TableLike) -> Json {
    let mut m = Map::new();
    for (k, item) in t.iter() {
        m.insert(k.to_owned(), item_json(item));
    }
    Json::Object(m)
}
