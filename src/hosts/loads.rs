//! Whether a host would load a settings file, read the way that host reads
//! it (its adapter's `reads`): a file it cannot load runs none of its
//! hooks, so `status` and `doctor` call it broken rather than wired, the
//! installer does not edit it, and the write gate refuses to leave one.

use serde_json::Value;

use crate::adapter::{ConfigFormat, Reads};
use crate::textfile::json::{self, Node};

/// Why a host reading `text` as `format` with `reads` would not load it,
/// or `None` when it would (an empty file is no settings).
pub fn load_error(format: ConfigFormat, reads: Reads, text: &str) -> Option<String> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if body.trim().is_empty() {
        return None;
    }
    match format {
        ConfigFormat::Toml => body
            .parse::<toml_edit::DocumentMut>()
            .err()
            .map(|e| format!("it is not valid TOML: {}", e.message())),
        ConfigFormat::Json => json_error(reads, body),
        ConfigFormat::Plugin | ConfigFormat::None => None,
    }
}

fn json_error(reads: Reads, body: &str) -> Option<String> {
    let value = if reads.comments {
        // The host strips comments, then parses what is left strictly.
        let node = match json::parse(body) {
            Ok(n) => n,
            Err(e) => return Some(format!("it is not valid JSON: {e}")),
        };
        if let Some(why) = beyond_comments(body, &node) {
            return Some(why);
        }
        json::to_value(body, &node)
    } else {
        match serde_json::from_str::<Value>(body) {
            Ok(v) => v,
            Err(e) => return Some(format!("it is not plain JSON: {e}")),
        }
    };
    if reads.unique_keys
        && let Ok(node) = json::parse(body)
        && let Some(key) = duplicate_key(&node)
    {
        return Some(format!(
            "it gives the key `{}` twice",
            crate::escape::escape(&key)
        ));
    }
    if reads.typed_hooks {
        return hooks_type_error(&value);
    }
    None
}

/// What a comment-stripping host still refuses: a trailing comma, or a
/// number out of range.
fn beyond_comments(body: &str, node: &Node) -> Option<String> {
    let Some(c) = &node.container else {
        let leaf = &body[node.start..node.end];
        let number = leaf.starts_with(|ch: char| ch == '-' || ch.is_ascii_digit());
        return (number && serde_json::from_str::<Value>(leaf).is_err())
            .then(|| format!("its number `{leaf}` is out of range"));
    };
    if c.children.last().is_some_and(|ch| ch.comma.is_some()) {
        return Some("it has a trailing comma".to_owned());
    }
    c.children
        .iter()
        .find_map(|ch| beyond_comments(body, &ch.value))
}

fn duplicate_key(node: &Node) -> Option<String> {
    let c = node.container.as_ref()?;
    if c.object {
        let mut seen: Vec<&str> = Vec::new();
        for k in c.children.iter().filter_map(|ch| ch.key.as_deref()) {
            if seen.contains(&k) {
                return Some(k.to_owned());
            }
            seen.push(k);
        }
    }
    c.children.iter().find_map(|ch| duplicate_key(&ch.value))
}

/// A wrong type where a host that checks its hooks table looks: `hooks`
/// not an object, an event not a list, a group or handler not an object, a
/// `matcher` or `command` not a string, a `timeout` not a number.
fn hooks_type_error(doc: &Value) -> Option<String> {
    let hooks = doc.get("hooks")?;
    let wrong = |at: String, what: &str| Some(format!("its `{at}` is not {what}"));
    let Value::Object(events) = hooks else {
        return wrong("hooks".into(), "an object");
    };
    for (event, groups) in events {
        let Value::Array(groups) = groups else {
            return wrong(format!("hooks.{event}"), "a list");
        };
        for (i, group) in groups.iter().enumerate() {
            let at = format!("hooks.{event}[{i}]");
            let Value::Object(g) = group else {
                return wrong(at, "an object");
            };
            if g.get("matcher").is_some_and(|m| !m.is_string()) {
                return wrong(format!("{at}.matcher"), "a string");
            }
            let Some(handlers) = g.get("hooks") else {
                continue;
            };
            let Value::Array(handlers) = handlers else {
                return wrong(format!("{at}.hooks"), "a list");
            };
            for (j, h) in handlers.iter().enumerate() {
                let at = format!("{at}.hooks[{j}]");
                let Value::Object(h) = h else {
                    return wrong(at, "an object");
                };
                if h.get("command").is_some_and(|c| !c.is_string()) {
                    return wrong(format!("{at}.command"), "a string");
                }
                if h.get("timeout").is_some_and(|t| !t.is_number()) {
                    return wrong(format!("{at}.timeout"), "a number");
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: Reads = Reads {
        comments: false,
        unique_keys: false,
        typed_hooks: false,
    };

    #[test]
    fn each_host_reads_its_file_as_strictly_as_it_does() {
        let json = |reads: Reads, t: &str| load_error(ConfigFormat::Json, reads, t);
        let jsonc = Reads {
            comments: true,
            ..STRICT
        };
        let typed = Reads {
            typed_hooks: true,
            ..STRICT
        };
        let unique = Reads {
            unique_keys: true,
            ..STRICT
        };
        assert_eq!(json(STRICT, "{\"a\": 1}"), None);
        assert_eq!(json(STRICT, ""), None);
        assert!(json(STRICT, "{\"a\": 1,}").is_some());
        assert!(json(STRICT, "// c\n{\"a\": 1}").is_some());
        assert!(json(STRICT, "{\"a\": 1e400}").is_some());
        assert_eq!(json(jsonc, "// c\n{\"a\": /* x */ 1}"), None);
        assert!(
            json(jsonc, "{\"a\": [1,]}")
                .unwrap()
                .contains("trailing comma")
        );
        assert!(json(jsonc, "{\"a\": 1e400}").is_some());
        assert_eq!(json(STRICT, "{\"a\": 1, \"a\": 2}"), None);
        assert!(
            json(unique, "{\"a\": 1, \"a\": 2}")
                .unwrap()
                .contains("`a` twice")
        );
        assert!(json(typed, "{\"hooks\": []}").unwrap().contains("`hooks`"));
        assert!(
            json(
                typed,
                r#"{"hooks": {"Stop": [{"hooks": [{"command": "x", "timeout": "30"}]}]}}"#
            )
            .unwrap()
            .contains("hooks.Stop[0].hooks[0].timeout")
        );
        assert_eq!(
            json(
                typed,
                r#"{"hooks": {"Stop": [{"matcher": "*", "hooks": [{"command": "x", "timeout": 30}]}]}}"#
            ),
            None
        );
        assert!(load_error(ConfigFormat::Toml, STRICT, "[hooks\n").is_some());
        assert_eq!(load_error(ConfigFormat::Toml, STRICT, "a = 1\n"), None);
    }
}
