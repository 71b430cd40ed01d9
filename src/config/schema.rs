//! The one hook-config schema (embedded from `schema/`), its validators, and
//! the validation cache that keeps schema compilation off the hot path.
//!
//! The cache only ever saves work: a hit skips the JSON Schema pass, but the
//! typed conversion in `load` enforces every constraint again, so a planted
//! or stale cache entry can never make an invalid file load. The one check
//! that lives only here is the duplicate-key refusal (a parsed value no
//! longer shows duplicates); the cache sits in the user's own state
//! directory, so only the user could plant an entry that skips it.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::diagnostic::Diagnostic;
use crate::config::locate::{duplicate_key, line_col, locate};
use crate::config::suggest;

pub const HOOK_CONFIG_SCHEMA: &str = include_str!("../../schema/hook-config.schema.json");

fn schema_value() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA
        .get_or_init(|| serde_json::from_str(HOOK_CONFIG_SCHEMA).expect("embedded schema is JSON"))
}

fn compile(value: &Value) -> jsonschema::Validator {
    jsonschema::draft202012::new(value).expect("embedded schema compiles")
}

/// A validator for one `$defs` entry, for precise errors on `oneOf` entries.
fn def_validator(name: &str) -> jsonschema::Validator {
    let mut v = schema_value().clone();
    let obj = v.as_object_mut().expect("schema is an object");
    obj.retain(|k, _| k == "$schema" || k == "$defs");
    obj.insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
    compile(&v)
}

/// Schema errors for `doc`, each located in `text`, and the first key that
/// `text` repeats within one object.
///
/// A duplicate key is refused rather than resolved: parsers keep one of the
/// two silently (this one and `JSON.parse` the last), so a reviewer reading
/// the file top-down, or another tool, could see a different command than
/// the one that runs.
pub fn validate(doc: &Value, text: &str, path: &Path) -> Vec<Diagnostic> {
    let validator = compile(schema_value());
    let mut out = Vec::new();
    if let Some(dup) = duplicate_key(text) {
        out.push(
            Diagnostic::error(
                "hook-config-duplicate-key",
                format!(
                    "the key `{}` appears twice in one object; which one counts is ambiguous, so the file is refused: keep one",
                    dup.key
                ),
            )
            .at(path)
            .pointer(dup.pointer)
            .line_col(Some(line_col(text, dup.offset))),
        );
    }
    for err in validator.iter_errors(doc) {
        let pointer = err.instance_path().as_str().to_owned();
        let is_entry = matches!(
            err.kind(),
            jsonschema::error::ValidationErrorKind::OneOfNotValid { .. }
                | jsonschema::error::ValidationErrorKind::OneOfMultipleValid { .. }
        );
        if is_entry {
            // Judge the entry against the shape it is trying to be.
            let entry = doc.pointer(&pointer).unwrap_or(&Value::Null);
            let branch = if looks_like_override(entry) {
                "disableOverride"
            } else {
                "registration"
            };
            let sub = def_validator(branch);
            let mut any = false;
            for sub_err in sub.iter_errors(entry) {
                any = true;
                let p = format!("{pointer}{}", sub_err.instance_path().as_str());
                out.push(schema_diag(&sub_err, &p, text, path, branch));
            }
            if any {
                continue;
            }
        }
        out.push(schema_diag(&err, &pointer, text, path, ""));
    }
    out
}

/// An entry with an id in the `keryx.` namespace and nothing but the
/// override keys is meant as a disable-only override.
pub fn looks_like_override(entry: &Value) -> bool {
    let Some(obj) = entry.as_object() else {
        return false;
    };
    let keryx_id = obj
        .get("id")
        .and_then(Value::as_str)
        .is_some_and(|id| id.starts_with("keryx."));
    keryx_id
        && obj
            .keys()
            .all(|k| matches!(k.as_str(), "id" | "enabled" | "acknowledge"))
}

fn schema_diag(
    err: &jsonschema::ValidationError,
    pointer: &str,
    text: &str,
    path: &Path,
    branch: &str,
) -> Diagnostic {
    let shape = match branch {
        "registration" => " (as a hook registration)",
        "disableOverride" => " (as a disable-only override)",
        _ => "",
    };
    let hint = near_miss_hint(err)
        .map(|h| format!("; {h}"))
        .unwrap_or_default();
    Diagnostic::error("hook-config-schema", format!("{err}{shape}{hint}"))
        .at(path)
        .pointer(pointer)
        .line_col(locate(text, pointer))
}

/// "did you mean …?" for a name the schema does not know at that place:
/// an unknown property (against the names the schema gives that object,
/// then the objects inside it and around it) or a value outside an enum.
fn near_miss_hint(err: &jsonschema::ValidationError) -> Option<String> {
    use jsonschema::error::ValidationErrorKind as Kind;
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    match err.kind() {
        Kind::AdditionalProperties { unexpected } => {
            // The keyword's location names the object schema it belongs to.
            let at = err.schema_path().as_str();
            let object = at.strip_suffix("/additionalProperties")?;
            let hints: Vec<String> = unexpected
                .iter()
                .filter_map(|k| {
                    let (name, place) = property_hint(k, object)?;
                    let named = if unexpected.len() > 1 && name != k.as_str() {
                        format!(" for `{k}`")
                    } else {
                        String::new()
                    };
                    Some(format!("`{name}`{place}{named}"))
                })
                .collect();
            (!hints.is_empty()).then(|| format!("did you mean {}?", and_list(&hints)))
        }
        Kind::Enum { options } => {
            let given = err.instance().as_str()?;
            let options = names(options);
            let options: Vec<&str> = options.iter().map(String::as_str).collect();
            suggest::near_miss(given, &options).map(|o| format!("did you mean `{o}`?"))
        }
        Kind::Constant { expected_value } => {
            let given = err.instance().as_str()?;
            let want = expected_value.as_str()?;
            suggest::near_miss(given, &[want]).map(|o| format!("did you mean `{o}`?"))
        }
        _ => None,
    }
}

/// Where an unknown property `key` of the object schema at `object` (a
/// pointer into the schema) was probably meant to go: a property of that
/// object, of an object inside it (`cwd` belongs in `command`), or of the
/// object around it (`timeoutMs` is the registration's, not the command's).
fn property_hint(key: &str, object: &str) -> Option<(&'static str, String)> {
    let schema = schema_value();
    let props = |at: &str| -> Vec<&'static str> {
        schema
            .pointer(&format!("{at}/properties"))
            .and_then(Value::as_object)
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default()
    };
    let here = props(object);
    if let Some(p) = suggest::near_miss(key, &here) {
        return Some((p, String::new()));
    }
    for inner in &here {
        let inside = props(&format!("{object}/properties/{inner}"));
        if let Some(p) = suggest::near_miss(key, &inside) {
            return Some((p, format!(" inside `{inner}`")));
        }
    }
    // `/…/properties/<name>`: the object around this one, and this one's name.
    let (outer, name) = object.rsplit_once("/properties/")?;
    let around: Vec<&str> = props(outer).into_iter().filter(|p| *p != name).collect();
    suggest::near_miss(key, &around).map(|p| (p, format!(" beside `{name}`")))
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// What a cache entry vouches for besides the document: this version, the
/// schema, and the checks `validate` makes beyond it (an entry cached before
/// one was added must not skip it). Folded at compile time, so an event
/// hashes only the document, not the 4 KB schema with it. FNV-1a suffices
/// here: it only tells builds apart; the document itself is SHA-256.
const VALIDATOR_ID: u64 = fnv1a(&[
    env!("CARGO_PKG_VERSION").as_bytes(),
    HOOK_CONFIG_SCHEMA.as_bytes(),
    b"duplicate-keys",
]);

const fn fnv1a(parts: &[&[u8]]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut p = 0;
    while p < parts.len() {
        let part = parts[p];
        let mut i = 0;
        while i < part.len() {
            h = (h ^ part[i] as u64).wrapping_mul(PRIME);
            i += 1;
        }
        h = (h ^ 0xff).wrapping_mul(PRIME); // ends the part: no two splits agree
        p += 1;
    }
    h
}

/// The key a validated document is cached under: its bytes and this binary.
pub fn cache_key(bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(VALIDATOR_ID.to_le_bytes());
    h.update(bytes);
    crate::base::text::hex(&h.finalize())
}

/// Whether `key` was recorded as schema-valid in `cache_dir`.
pub fn cache_hit(cache_dir: &Path, key: &str) -> bool {
    // The name is the key and entries are only ever renamed into place
    // whole, so an entry that exists is one this binary wrote: one `statx`,
    // not an open and a read.
    std::fs::symlink_metadata(cache_dir.join(key)).is_ok_and(|m| m.is_file())
}

/// Records `key` as schema-valid. Failure to write only costs speed.
pub fn cache_store(cache_dir: &Path, key: &str) {
    let _ = crate::paths::write_cache_file(&cache_dir.join(key), key.as_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(
            crate::base::text::hex(&[0x00, 0x0f, 0xa5, 0xff]),
            "000fa5ff"
        );
        assert_eq!(crate::base::text::hex(&[]), "");
    }
}
