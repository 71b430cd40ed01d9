//! Rendering of repository-controlled text for a human: control, escape,
//! bidi-override, zero-width and every other invisible character become
//! visible `\xHH` / `\uHHHH` escapes, so a committed file cannot repaint
//! the terminal or hide text between the characters a reader sees.

/// Whether `c` must never reach a terminal raw: a control character, or
/// one that renders as nothing (or as blank space) while still being part
/// of what runs.
pub fn is_dangerous(c: char) -> bool {
    c.is_control() // C0, DEL, C1 (incl. 8-bit CSI 0x9b)
        || is_invisible(c)
}

/// Every Unicode `Default_Ignorable_Code_Point` (DerivedCoreProperties:
/// soft hyphen, combining grapheme joiner, zero-width and bidi controls,
/// invisible operators, Hangul fillers, variation selectors, tag
/// characters, ...), the blank fillers that are not in that list but render
/// as nothing (the braille blank), and the line and paragraph separators,
/// which some terminals and viewers break lines at.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD                      // soft hyphen
            | 0x034F                // combining grapheme joiner
            | 0x061C                // Arabic letter mark
            | 0x115F..=0x1160       // Hangul choseong / jungseong fillers
            | 0x17B4..=0x17B5       // Khmer inherent vowels
            | 0x180B..=0x180F       // Mongolian variation selectors, vowel separator
            | 0x200B..=0x200F       // zero-width space/joiners, LRM, RLM
            | 0x2028..=0x2029       // line and paragraph separators
            | 0x202A..=0x202E       // bidi embeddings and overrides
            | 0x2060..=0x206F       // word joiner, invisible operators, bidi isolates, deprecated format
            | 0x2800                // braille pattern blank
            | 0x3164                // Hangul filler
            | 0xFE00..=0xFE0F       // variation selectors
            | 0xFEFF                // zero-width no-break space / BOM
            | 0xFFA0                // halfwidth Hangul filler
            | 0xFFF0..=0xFFF8       // unassigned specials
            | 0x1BCA0..=0x1BCA3     // shorthand format controls
            | 0x1D173..=0x1D17A     // musical symbol format controls
            | 0xE0000..=0xE0FFF // tags, variation selectors supplement
    )
}

/// `c` as the escape [`escape`] writes for it.
pub fn escaped_char(c: char) -> String {
    match c as u32 {
        u @ 0..=0xFF => format!("\\x{u:02X}"),
        u @ 0x100..=0xFFFF => format!("\\u{u:04X}"),
        u => format!("\\u{{{u:X}}}"),
    }
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
        if c == '\\' {
            out.push_str("\\\\");
        } else if is_dangerous(c) {
            flagged = true;
            out.push_str(&escaped_char(c));
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
        if hidden(c) {
            out.push_str(&escaped_char(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// A hook's own words (a deny reason, a `systemMessage`) for the host: the
/// colour sequences a hook writes for a terminal (`ESC [ <digits and ;> m`,
/// as in `\033[1;31m`) are dropped, since the model and a host's UI get
/// text, and every other dangerous character is escaped as [`escape_text`]
/// does (a screen clear or a cursor move stays visible as `\x1B[2J`).
pub fn hook_text(s: &str) -> String {
    if !s.contains('\u{1b}') {
        return escape_text(s);
    }
    let mut plain = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('\u{1b}') {
        plain.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let params = after.strip_prefix('[').map(|p| {
            p.len()
                - p.trim_start_matches(|c: char| c.is_ascii_digit() || c == ';')
                    .len()
        });
        match params {
            Some(n) if after[1 + n..].starts_with('m') => rest = &after[n + 2..],
            _ => {
                plain.push('\u{1b}');
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    escape_text(&plain)
}

/// Like [`escape_flagged`] for a value that may be a script: a line break
/// is not hidden text, so it is kept as a real line break followed by
/// `continuation` (the caller's indent and gutter, so a script line can
/// never pass for a line of the surrounding display), and a tab is kept as
/// it is (it only ever moves the cursor forward, over nothing). Neither
/// sets the flag; everything else is escaped as [`escape`] does.
pub fn escape_lines(s: &str, continuation: &str) -> (String, bool) {
    let mut out = String::with_capacity(s.len() + 8);
    let mut flagged = false;
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => {
                out.push('\n');
                out.push_str(continuation);
            }
            '\t' => out.push('\t'),
            c if is_dangerous(c) => {
                flagged = true;
                out.push_str(&escaped_char(c));
            }
            c => out.push(c),
        }
    }
    (out, flagged)
}

/// `v` as pretty JSON that is safe on a terminal and still the same JSON:
/// every dangerous character in a string (serde_json escapes only C0
/// controls) is written as a JSON `\uXXXX` escape, so the text can be
/// copied back into a file and parses to `v`.
pub fn json_text(v: &serde_json::Value) -> String {
    let raw = serde_json::to_string_pretty(v).unwrap_or_default();
    let mut out = String::with_capacity(raw.len());
    // Outside its strings, pretty JSON holds nothing dangerous but its
    // own line breaks; inside them every C0 control is already escaped.
    for c in raw.chars() {
        if c != '\n' && is_dangerous(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_is_the_same_json_with_nothing_invisible() {
        let v = serde_json::json!({
            "command": "echo \u{202E}txt.exe \u{1b}[2J \u{9b} \u{7f} \u{E0041} a\\b \"q\"\nnext",
            "n": [1, 2],
        });
        let text = json_text(&v);
        assert!(
            !text.chars().any(|c| c != '\n' && is_dangerous(c)),
            "{text}"
        );
        assert!(
            text.contains("\\u202e") && text.contains("\\udb40\\udc41"),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
        let plain = serde_json::json!({"a": "b"});
        assert_eq!(
            json_text(&plain),
            serde_json::to_string_pretty(&plain).unwrap()
        );
    }

    #[test]
    fn hook_text_drops_colours_and_keeps_other_escapes_visible() {
        assert_eq!(
            hook_text("\u{1b}[1;31m❌ blocked\u{1b}[0m: use uv"),
            "❌ blocked: use uv"
        );
        assert_eq!(hook_text("\u{1b}[mreset"), "reset");
        assert_eq!(hook_text("a\u{1b}[2Jb"), "a\\x1B[2Jb");
        assert_eq!(hook_text("a\u{1b}]8;;x\u{7}b"), "a\\x1B]8;;x\\x07b");
        assert_eq!(hook_text("tail \u{1b}[31"), "tail \\x1B[31");
        assert_eq!(hook_text("x\u{200B}y\nz"), "x\\u200By\nz");
    }

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

    /// Every Default_Ignorable_Code_Point range, both ends, and the blank
    /// fillers: none of them reaches a terminal raw.
    #[test]
    fn every_invisible_character_is_escaped() {
        let ends = [
            0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180F, 0x200B, 0x200F,
            0x2028, 0x2029, 0x202A, 0x202E, 0x2060, 0x2065, 0x206A, 0x206F, 0x2800, 0x3164, 0xFE00,
            0xFE0F, 0xFEFF, 0xFFA0, 0xFFF0, 0xFFF8, 0x1BCA0, 0x1BCA3, 0x1D173, 0x1D17A, 0xE0000,
            0xE0100, 0xE0FFF,
        ];
        for u in ends {
            let c = char::from_u32(u).unwrap();
            let (out, flagged) = escape_flagged(&format!("a{c}b"));
            assert!(flagged, "U+{u:04X} passed raw");
            assert!(!out.contains(c), "U+{u:04X} passed raw");
            let hex = if u > 0xFFFF {
                format!("\\u{{{u:X}}}")
            } else if u > 0xFF {
                format!("\\u{u:04X}")
            } else {
                format!("\\x{u:02X}")
            };
            assert_eq!(out, format!("a{hex}b"));
            assert!(!escape_text(&c.to_string()).contains(c));
        }
        // Neighbours that render as themselves stay as they are.
        for c in ['\u{00AC}', '\u{0350}', '\u{2801}', '\u{FE10}', 'é', '→'] {
            assert_eq!(escape_flagged(&c.to_string()), (c.to_string(), false));
        }
    }

    #[test]
    fn a_script_keeps_its_lines_and_tabs() {
        assert_eq!(
            escape_lines("set -e\n\techo \\ok\nexit 0", "  | "),
            ("set -e\n  | \techo \\\\ok\n  | exit 0".to_owned(), false)
        );
        assert_eq!(
            escape_lines("a\r\nb\u{00AD}", "|"),
            ("a\\x0D\n|b\\xAD".to_owned(), true)
        );
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
