//! Maps a JSON pointer back to a line and column in the source text, so a
//! schema error can be reported as `path:line:col`, and finds duplicate
//! object keys, which a parsed value no longer shows. Runs only on
//! documents that already parsed, so the input is well-formed.

use std::collections::HashSet;

/// 1-based line and column of the value at `pointer` in `text`.
pub fn locate(text: &str, pointer: &str) -> Option<(usize, usize)> {
    let tokens: Vec<String> = if pointer.is_empty() {
        Vec::new()
    } else {
        pointer
            .strip_prefix('/')?
            .split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect()
    };
    let bytes = text.as_bytes();
    let mut pos = skip_ws(bytes, 0);
    for token in &tokens {
        pos = match bytes.get(pos)? {
            b'{' => find_member(bytes, pos, token)?,
            b'[' => find_element(bytes, pos, token.parse().ok()?)?,
            _ => return None,
        };
    }
    Some(line_col(text, pos))
}

pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// End of the string starting at `i` (which is the opening quote).
fn skip_string(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// End of the value starting at `i`, without recursion.
fn skip_value(b: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    loop {
        if j >= b.len() {
            return j;
        }
        match b[j] {
            b'"' => {
                j = skip_string(b, j);
                if depth == 0 {
                    return j;
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j + 1;
                }
            }
            b',' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => return j,
            _ => {}
        }
        j += 1;
    }
}

fn find_member(b: &[u8], open: usize, key: &str) -> Option<usize> {
    let mut i = skip_ws(b, open + 1);
    while i < b.len() && b[i] != b'}' {
        let key_end = skip_string(b, i);
        let raw = std::str::from_utf8(&b[i..key_end]).ok()?;
        let name: String = serde_json::from_str(raw).ok()?;
        i = skip_ws(b, key_end);
        i = skip_ws(b, i + 1); // ':'
        if name == key {
            return Some(i);
        }
        i = skip_ws(b, skip_value(b, i));
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    None
}

fn find_element(b: &[u8], open: usize, index: usize) -> Option<usize> {
    let mut i = skip_ws(b, open + 1);
    let mut n = 0;
    while i < b.len() && b[i] != b']' {
        if n == index {
            return Some(i);
        }
        i = skip_ws(b, skip_value(b, i));
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
        n += 1;
    }
    None
}

/// One object key that appears twice in the same object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    pub key: String,
    /// JSON pointer of the member (object pointer + `/` + key).
    pub pointer: String,
    /// Byte offset of the second occurrence in the text.
    pub offset: usize,
}

enum Frame {
    Object {
        pointer: String,
        keys: HashSet<String>,
        key: Option<String>,
        want_key: bool,
    },
    Array {
        pointer: String,
        count: usize,
    },
}

/// The first key that appears twice within one object of `text`, if any.
/// A parser keeps one of the two silently (serde_json and `JSON.parse` the
/// last), so a reader of the file and the program may see different values.
/// Iterative: nesting depth costs no stack.
pub fn duplicate_key(text: &str) -> Option<DuplicateKey> {
    let b = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    // The pointer of a value that starts now, counting it in its array.
    let child = |stack: &mut Vec<Frame>| -> String {
        match stack.last_mut() {
            None => String::new(),
            Some(Frame::Object { pointer, key, .. }) => {
                format!("{pointer}/{}", escape_token(key.as_deref().unwrap_or("")))
            }
            Some(Frame::Array { pointer, count }) => {
                *count += 1;
                format!("{pointer}/{}", *count - 1)
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'{' => {
                let pointer = child(&mut stack);
                stack.push(Frame::Object {
                    pointer,
                    keys: HashSet::new(),
                    key: None,
                    want_key: true,
                });
                i += 1;
            }
            b'[' => {
                let pointer = child(&mut stack);
                stack.push(Frame::Array { pointer, count: 0 });
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
            }
            b',' => {
                if let Some(Frame::Object { want_key, .. }) = stack.last_mut() {
                    *want_key = true;
                }
                i += 1;
            }
            b'"' => {
                let end = skip_string(b, i);
                match stack.last_mut() {
                    Some(Frame::Object {
                        pointer,
                        keys,
                        key,
                        want_key,
                    }) if *want_key => {
                        let name: String = std::str::from_utf8(&b[i..end])
                            .ok()
                            .and_then(|raw| serde_json::from_str(raw).ok())
                            .unwrap_or_default();
                        if !keys.insert(name.clone()) {
                            return Some(DuplicateKey {
                                pointer: format!("{pointer}/{}", escape_token(&name)),
                                key: name,
                                offset: i,
                            });
                        }
                        *key = Some(name);
                        *want_key = false;
                    }
                    _ => {
                        child(&mut stack);
                    }
                }
                i = end;
            }
            b':' | b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            _ => {
                // A number, true, false or null.
                child(&mut stack);
                while i < b.len()
                    && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    i += 1;
                }
            }
        }
    }
    None
}

fn escape_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_values() {
        let text = "{\n  \"a\": [1, {\"b\": \"x\"}],\n  \"c/d\": {\"e\": true}\n}";
        assert_eq!(locate(text, ""), Some((1, 1)));
        assert_eq!(locate(text, "/a"), Some((2, 8)));
        assert_eq!(locate(text, "/a/1/b"), Some((2, 18)));
        assert_eq!(locate(text, "/c~1d/e"), Some((3, 16)));
        assert_eq!(locate(text, "/missing"), None);
    }

    #[test]
    fn finds_duplicate_keys_at_any_depth() {
        assert_eq!(
            duplicate_key(r#"{"a": 1, "b": {"a": 2}, "c": [{"a": 1}, {"a": 2}]}"#),
            None
        );
        let d = duplicate_key(r#"{"a": 1, "b": 2, "a": 3}"#).unwrap();
        assert_eq!(
            (d.key.as_str(), d.pointer.as_str(), d.offset),
            ("a", "/a", 17)
        );
        let text =
            r#"{"hooks": {"Stop": [1, {"id": "x", "command": {"argv": [], "a/b": 1, "a/b": 2}}]}}"#;
        let d = duplicate_key(text).unwrap();
        assert_eq!(d.pointer, "/hooks/Stop/1/command/a~1b");
        // Equal strings in values, or keys of sibling objects, are not keys twice.
        assert_eq!(
            duplicate_key(r#"{"a": "a", "b": ["a", "a"], "c": {"a": {"a": null}}}"#),
            None
        );
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(duplicate_key(&deep), None);
    }
}
