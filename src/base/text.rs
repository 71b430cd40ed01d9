//! Text in bounded bytes, and hex.

/// What a cut text ends with.
pub const TRUNCATED: &str = "…[truncated]";

/// `text` in at most `max` bytes, [`TRUNCATED`] included when it is cut.
pub fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let (kept, _) = truncate_utf8(text, max.saturating_sub(TRUNCATED.len()));
    format!("{kept}{TRUNCATED}")
}

pub fn truncate_utf8(s: &str, max: usize) -> (&str, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], true)
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}
