//! "Did you mean …?" for a name the config does not know: the nearest of
//! the names it does (a property, an enum value, an event), by case and
//! separators first, then by edit distance, then as a unique prefix or
//! part. A hint is offered only when one name stands out: a wrong
//! suggestion is worse than none.

/// The candidate `word` most likely means, if one is close enough.
pub fn near_miss<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let w = fold(word);
    if w.is_empty() {
        return None;
    }
    let folded: Vec<(&'a str, String)> = candidates.iter().map(|c| (*c, fold(c))).collect();
    // `runs_in`, `RunsIn`, `timeout-ms`: the same name spelled another way.
    if let Some((c, _)) = folded.iter().find(|(_, f)| *f == w) {
        return Some(c);
    }
    // A typo: few edits for the word's length; among equals, the one that
    // shares the longest start (`sandboxed` is `sandbox`, not `unsandboxed`).
    let limit = (w.chars().count() / 3).max(1);
    let best = folded
        .iter()
        .map(|(c, f)| {
            (
                crate::base::text::edit_distance(&w, f),
                common_prefix(&w, f),
                *c,
            )
        })
        .filter(|(d, _, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    if let Some((_, _, c)) = best {
        return Some(c);
    }
    // A shortened or lengthened name (`timeout`, `environment`), or a part
    // of one (`advisory`): only when exactly one name fits.
    let unique = |fits: &dyn Fn(&str) -> bool| {
        let mut it = folded.iter().filter(|(_, f)| fits(f));
        match (it.next(), it.next()) {
            (Some((c, _)), None) => Some(*c),
            _ => None,
        }
    };
    let shorter_len = |f: &str| w.len().min(f.len());
    unique(&|f| shorter_len(f) >= 3 && (f.starts_with(&w) || w.starts_with(f))).or_else(|| {
        unique(&|f| 2 * shorter_len(f) >= w.len().max(f.len()) && (f.contains(&w) || w.contains(f)))
    })
}

/// Lowercase, without `_`, `-`, `.` and spaces.
fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REGISTRATION: &[&str] = &[
        "id",
        "matcher",
        "command",
        "class",
        "timeoutMs",
        "runsIn",
        "network",
        "sandbox",
        "appliesToChildAgents",
        "profiles",
        "enabled",
        "description",
    ];
    const COMMAND: &[&str] = &["argv", "cwd", "env", "envPassthrough"];
    const CLASS: &[&str] = &["gate", "gate-advisory", "observe", "context"];
    const RUNS_IN: &[&str] = &["sandbox", "unsandboxed"];

    #[test]
    fn near_misses_find_the_name_meant() {
        for (word, among, meant) in [
            ("timeout", REGISTRATION, "timeoutMs"),
            ("timeout_ms", REGISTRATION, "timeoutMs"),
            ("matchers", REGISTRATION, "matcher"),
            ("runs_in", REGISTRATION, "runsIn"),
            ("runsin", REGISTRATION, "runsIn"),
            ("RunsIn", REGISTRATION, "runsIn"),
            ("profile", REGISTRATION, "profiles"),
            ("appliesToChildren", REGISTRATION, "appliesToChildAgents"),
            ("env_passthrough", COMMAND, "envPassthrough"),
            ("envPassThrough", COMMAND, "envPassthrough"),
            ("environment", COMMAND, "env"),
            ("args", COMMAND, "argv"),
            ("observer", CLASS, "observe"),
            ("gates", CLASS, "gate"),
            ("advisory", CLASS, "gate-advisory"),
            ("gate_advisory", CLASS, "gate-advisory"),
            ("Context", CLASS, "context"),
            ("sandboxed", RUNS_IN, "sandbox"),
            ("unsandbox", RUNS_IN, "unsandboxed"),
        ] {
            assert_eq!(near_miss(word, among), Some(meant), "{word}");
        }
    }

    #[test]
    fn nothing_is_suggested_for_what_is_not_close() {
        for (word, among) in [
            ("failOpen", REGISTRATION),
            ("trusted", REGISTRATION),
            ("x", REGISTRATION),
            ("", REGISTRATION),
            ("blocker", CLASS),
            ("host", RUNS_IN),
            ("readable", &["writable"][..]),
        ] {
            assert_eq!(near_miss(word, among), None, "{word}");
        }
    }

    #[test]
    fn distances() {
        assert_eq!(crate::base::text::edit_distance("", ""), 0);
        assert_eq!(crate::base::text::edit_distance("abc", ""), 3);
        assert_eq!(crate::base::text::edit_distance("kitten", "sitting"), 3);
        assert_eq!(crate::base::text::edit_distance("observer", "observe"), 1);
    }
}
