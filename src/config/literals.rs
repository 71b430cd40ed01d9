//! The literals a regular expression's every match holds: one of them is
//! in any text the expression matches, so a text that holds none of them
//! is passed over without the expression ever being compiled (compiling
//! is most of what a pattern costs a one-call process). Read with
//! regex-syntax, which the `regex` crate itself parses with; build.rs
//! uses the same function for the shipped packs' patterns.

use regex_syntax::hir::Hir;
use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};

/// More literals than this are no quicker to look for than the compiled
/// expression is to build.
const MAX_LITERALS: usize = 64;

/// `source` parsed as the `regex` crate parses it (`case_insensitive` as
/// the pattern is built), or the parser's error.
pub fn parse(source: &str, case_insensitive: bool) -> Result<Hir, regex_syntax::Error> {
    regex_syntax::ParserBuilder::new()
        .case_insensitive(case_insensitive)
        .build()
        .parse(source)
}

/// The literals one of which every match of `hir` holds, or `None` when
/// there is no such short list (the expression can match the empty text,
/// or too many different texts start and end it).
pub fn required(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    let prefixes = Extractor::new().kind(ExtractKind::Prefix).extract(hir);
    let suffixes = Extractor::new().kind(ExtractKind::Suffix).extract(hir);
    let best = [usable(&prefixes), usable(&suffixes)]
        .into_iter()
        .flatten()
        // The longest shortest literal rejects the most texts; then the
        // shorter list.
        .max_by_key(|lits| {
            let shortest = lits.iter().map(Vec::len).min().unwrap_or(0);
            (shortest, std::cmp::Reverse(lits.len()))
        })?;
    Some(best)
}

/// A finite list of non-empty literals (each a prefix, or a suffix, of
/// every match it stands for), each once.
fn usable(seq: &Seq) -> Option<Vec<Vec<u8>>> {
    let lits = seq.literals()?;
    if lits.is_empty() || lits.len() > MAX_LITERALS || lits.iter().any(|l| l.is_empty()) {
        return None;
    }
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(lits.len());
    for l in lits {
        if !out.iter().any(|o| o.as_slice() == l.as_bytes()) {
            out.push(l.as_bytes().to_vec());
        }
    }
    Some(out)
}

/// The longest run of plain characters in a glob (`*`, `?` and `**/`,
/// which may stand for nothing at all, are its wildcards): every text the
/// glob matches holds it.
pub fn glob_literal(glob: &str) -> String {
    glob.replace("**/", "*")
        .split(['*', '?'])
        .max_by_key(|run| run.len())
        .unwrap_or("")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(source: &str) -> Option<Vec<String>> {
        let hir = parse(source, false).unwrap();
        required(&hir).map(|l| {
            l.into_iter()
                .map(|b| String::from_utf8(b).unwrap())
                .collect()
        })
    }

    #[test]
    fn every_match_holds_one_of_the_literals() {
        assert_eq!(lits(r"^Bash$").unwrap(), ["Bash"]);
        let push = lits(r"^\+?([^:]*:)?(refs/heads/)?(main|master)$").unwrap();
        assert!(
            push.iter()
                .all(|l| l.ends_with("main") || l.ends_with("master")),
            "{push:?}"
        );
        let env = lits(r"\b(printenv|env)\b").unwrap();
        assert!(env.contains(&"env".to_owned()), "{env:?}");
        // Nothing every match must hold: no prefilter.
        assert_eq!(lits(r".*"), None);
        assert_eq!(lits(r"a?"), None);
        assert_eq!(lits(r"[a-z]+"), None);
    }

    #[test]
    fn a_case_insensitive_pattern_keeps_every_spelling() {
        let hir = parse("(?i)drop", false).unwrap();
        let l = required(&hir).unwrap();
        assert!(l.iter().any(|b| b == b"DROP") && l.iter().any(|b| b == b"dRoP"));
    }

    #[test]
    fn a_glob_holds_its_longest_plain_run() {
        assert_eq!(glob_literal("~/.ssh/*"), "~/.ssh/");
        assert_eq!(glob_literal(".env*"), ".env");
        assert_eq!(glob_literal("mcp__*"), "mcp__");
        assert_eq!(glob_literal("*"), "");
        // `**/` may be no directory at all: `**/x` matches `x`.
        assert_eq!(glob_literal("**/x"), "x");
        assert_eq!(glob_literal("src/**/*.rs"), "src/");
    }
}
