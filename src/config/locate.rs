//! Maps a JSON pointer back to a line and column in the source text, so a
//! schema error can be reported as `path:line:col`. Runs only on documents
//! that already parsed, so the input is well-formed.

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
}
