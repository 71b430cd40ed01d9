//! The default packs: `src/rules/packs/<pack>.toml`, compiled into the
//! binary, each a `version` and one `[[rule]]` table per rule in the JSON
//! format's TOML spelling. They are turned into that JSON shape; each rule
//! is compiled the first time a call it looks at comes along.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::config::rules::{self, Rule};
use crate::events::Event;

/// Every shipped pack: (pack id, its TOML). Add a pack here with
/// `("name", include_str!("packs/name.toml"))`.
pub const PACKS: &[(&str, &str)] = &[
    ("destructive", include_str!("packs/destructive.toml")),
    ("exfiltration", include_str!("packs/exfiltration.toml")),
    ("persistence", include_str!("packs/persistence.toml")),
    (
        "secrets-in-context",
        include_str!("packs/secrets-in-context.toml"),
    ),
    ("supply-chain", include_str!("packs/supply-chain.toml")),
    ("mcp", include_str!("packs/mcp.toml")),
    ("obfuscation", include_str!("packs/obfuscation.toml")),
];

/// One pack rule as the shim first sees it: what it looks at, read from
/// the TOML, and the rule itself, compiled only when a call it fits comes
/// along (an event's answer pays for the patterns it uses, not for every
/// pack's).
#[derive(Debug)]
pub struct PackRule {
    pub id: String,
    pub pack: &'static str,
    pub on: Vec<Event>,
    /// Tool names or globs as written; empty is every tool.
    pub tools: Vec<String>,
    doc: Value,
    compiled: OnceLock<Option<Rule>>,
}

impl PackRule {
    /// The compiled rule; `None` (logged) when it does not compile, which
    /// a test keeps from shipping.
    pub fn rule(&self) -> Option<&Rule> {
        self.compiled
            .get_or_init(|| match rules::compile(&self.doc, Some(self.pack)) {
                Ok(r) => Some(r),
                Err(e) => {
                    tracing::warn!(pack = self.pack, "rule left out: {e}");
                    None
                }
            })
            .as_ref()
    }

    /// Whether it has been compiled in this process.
    #[cfg(test)]
    pub(crate) fn is_compiled(&self) -> bool {
        self.compiled.get().is_some()
    }

    /// Whether `rules_off` switches it off.
    pub fn is_off(&self, off: &[String]) -> bool {
        off.iter().any(|o| *o == self.id || o == self.pack)
    }
}

/// Every shipped pack's rules, read but not compiled. A pack whose TOML
/// does not read is left out and logged.
pub fn entries() -> &'static [PackRule] {
    static ENTRIES: OnceLock<Vec<PackRule>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        let mut out = Vec::new();
        for (pack, text) in PACKS {
            match read_pack(pack, text) {
                Ok(list) => out.extend(list),
                Err(e) => tracing::warn!(pack, "rule pack left out: {e}"),
            }
        }
        out
    })
}

/// The rules of every shipped pack, all compiled (for the tools that show
/// or check them all).
pub fn rules() -> Vec<&'static Rule> {
    entries().iter().filter_map(PackRule::rule).collect()
}

pub fn read_pack(pack: &'static str, text: &str) -> Result<Vec<PackRule>, String> {
    let list = pack_rules(pack, text)?;
    let mut out = Vec::new();
    for doc in list {
        let bare = doc.get("id").and_then(Value::as_str).unwrap_or_default();
        let bare = bare
            .strip_prefix(pack)
            .and_then(|b| b.strip_prefix('/'))
            .unwrap_or(bare);
        let strings = |key: &str| -> Vec<String> {
            match doc.get(key) {
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            }
        };
        let on = match doc.get("on") {
            None => vec![Event::PreToolUse],
            Some(_) => strings("on")
                .iter()
                .filter_map(|e| e.parse().ok())
                .collect(),
        };
        out.push(PackRule {
            id: format!("{pack}/{bare}"),
            pack,
            on,
            tools: strings("tools"),
            doc,
            compiled: OnceLock::new(),
        });
    }
    Ok(out)
}

/// Compiles one pack's TOML: every rule or the first error, naming the
/// pack and the rule.
pub fn compile_pack(pack: &str, text: &str) -> Result<Vec<Rule>, String> {
    let list = pack_rules(pack, text)?;
    let mut out: Vec<Rule> = Vec::new();
    for v in &list {
        let r = rules::compile_checked(v, Some(pack)).map_err(|e| format!("pack `{pack}`: {e}"))?;
        if out.iter().any(|o| o.id == r.id) {
            return Err(format!("pack `{pack}`: rule `{}` is defined twice", r.id));
        }
        out.push(r);
    }
    Ok(out)
}

/// A pack's `[[rule]]` tables in the JSON shape.
fn pack_rules(pack: &str, text: &str) -> Result<Vec<Value>, String> {
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
