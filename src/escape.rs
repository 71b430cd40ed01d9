//! Rendering of repository-controlled text for a human: control, escape,
//! bidi-override and zero-width characters become visible `\xHH` /
//! `\uHHHH` escapes, so a committed file cannot repaint the terminal.

/// Whether `c` must never reach a terminal raw.
pub fn is_dangerous(c: char) -> bool {
    let u = c as u32;
    c.is_control()                       // C0, DEL, C1 (incl. 8-bit CSI 0x9b)
        || (0x200B..=0x200F).contains(&u) // zero-width space/joiners, LRM, RLM
        || (0x202A..=0x202E).contains(&u) // bidi embeddings and overrides
        || (0x2060..=0x2064).contains(&u) // word joiner, invisible operators
        || (0x2066..=0x2069).contains(&u) // bidi isolates
        || u == 0x061C                    // Arabic letter mark
        || u == 0xFEFF                    // zero-width no-break space / BOM
        || u == 0x180E                    // Mongolian vowel separator
        || (0xE0000..=0xE007F).contains(&u) // tag characters
}

/// `s` with every dangerous character escaped; a backslash is doubled so
/// the rendering is unambiguous.
pub fn escape(s: &str) -> String {
    escape_flagged(s).0
}

/// Like [`escape`], also saying whether anything needed escaping.
pub fn escape_flagged(s: &str) -> (String, bool) {
    if !s.chars().any(|c| is_dangerous(c) || c == '\\') {
        return (s.to_owned(), false);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut flagged = false;
    for c in s.chars() {
        let u = c as u32;
        if c == '\\' {
            out.push_str("\\\\");
        } else if is_dangerous(c) {
            flagged = true;
            if u <= 0xFF {
                out.push_str(&format!("\\x{u:02X}"));
            } else if u <= 0xFFFF {
                out.push_str(&format!("\\u{u:04X}"));
            } else {
                out.push_str(&format!("\\u{{{u:X}}}"));
            }
        } else {
            out.push(c);
        }
    }
    (out, flagged)
}

/// `s` for display as prose — a deny reason in a host's UI, a log line:
/// every dangerous character but the line break and the tab escaped as in
/// [`escape`], and backslashes kept as they are (they are not ambiguous in
/// text nobody parses back).
pub fn escape_text(s: &str) -> String {
    let hidden = |c: char| c != '\n' && c != '\t' && is_dangerous(c);
    if !s.chars().any(hidden) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c as u32 {
            _ if !hidden(c) => out.push(c),
            u @ 0..=0xFF => out.push_str(&format!("\\x{u:02X}")),
            u @ 0x100..=0xFFFF => out.push_str(&format!("\\u{u:04X}")),
            u => out.push_str(&format!("\\u{{{u:X}}}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_tricks() {
        assert_eq!(escape("plain"), "plain");
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\x1B[2Jb");
        assert_eq!(escape("\u{202E}evil"), "\\u202Eevil");
        assert_eq!(escape("x\u{200B}y"), "x\\u200By");
        assert_eq!(escape("\u{9b}"), "\\x9B");
        assert_eq!(escape("\u{E0041}"), "\\u{E0041}");
        assert_eq!(escape("a\\b"), "a\\\\b");
        assert!(escape_flagged("\r").1);
        assert!(!escape_flagged("a\\b").1);
    }

    #[test]
    fn prose_keeps_line_breaks_and_backslashes() {
        assert_eq!(
            escape_text("two\nlines\tand C:\\x"),
            "two\nlines\tand C:\\x"
        );
        assert_eq!(escape_text("ok\u{202E}txt.exe\r"), "ok\\u202Etxt.exe\\x0D");
        assert_eq!(escape_text("\u{E0041}"), "\\u{E0041}");
    }
}
