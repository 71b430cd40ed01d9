//! The literals a regular expression's every match holds: one of them is
//! in any text the expression matches, so a text that holds none of them
//! is passed over without the expression ever being compiled (compiling
//! is most of what a pattern costs a one-call process). Read from the
//! expression as regex-syntax, which the `regex` crate parses with, reads
//! it; build.rs uses the same functions for the shipped packs' patterns.

use regex_syntax::hir::{Class, Hir, HirKind};

/// More literals than this are no quicker to look for than the compiled
/// expression is to build.
const MAX_LITERALS: usize = 64;

/// A text every match holds (one of a list of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal {
    pub bytes: Vec<u8>,
    /// ASCII letters in it match in either case (a `(?i)` pattern's, in
    /// lower case): to be looked for without regard to ASCII case, and
    /// only in an ASCII text (Unicode also folds `K`, the Kelvin sign, and
    /// `ſ` with ASCII letters; a text holding other than ASCII goes to the
    /// expression).
    pub fold: bool,
}

/// `source` parsed as the `regex` crate parses it (`case_insensitive` as
/// the pattern is built), or the parser's error.
pub fn parse(source: &str, case_insensitive: bool) -> Result<Hir, regex_syntax::Error> {
    regex_syntax::ParserBuilder::new()
        .case_insensitive(case_insensitive)
        .build()
        .parse(source)
}

/// The literals one of which every match of `hir` holds, or `None` when
/// there is no such short list (the expression can match without any
/// fixed text, or only with one of too many).
pub fn required(hir: &Hir) -> Option<Vec<Literal>> {
    usable(needed(hir)?)
}

fn usable(lits: Vec<Literal>) -> Option<Vec<Literal>> {
    (!lits.is_empty() && lits.len() <= MAX_LITERALS && lits.iter().all(|l| !l.bytes.is_empty()))
        .then_some(lits)
}

/// The longest shortest literal rejects the most texts; then the shorter
/// list, then one that minds case.
fn score(lits: &[Literal]) -> (usize, std::cmp::Reverse<usize>, std::cmp::Reverse<usize>) {
    let shortest = lits.iter().map(|l| l.bytes.len()).min().unwrap_or(0);
    let folds = lits.iter().filter(|l| l.fold).count();
    (
        shortest,
        std::cmp::Reverse(lits.len()),
        std::cmp::Reverse(folds),
    )
}

fn better(best: &mut Option<Vec<Literal>>, candidate: Option<Vec<Literal>>) {
    let Some(c) = candidate.and_then(usable) else {
        return;
    };
    if best.as_ref().is_none_or(|b| score(&c) > score(b)) {
        *best = Some(c);
    }
}

/// What every text `hir` matches holds: each piece of a sequence must
/// match, each branch of an alternation may, a repetition of at least one
/// holds what its piece holds.
fn needed(hir: &Hir) -> Option<Vec<Literal>> {
    if let Some(one) = single(hir) {
        return Some(vec![one]);
    }
    match hir.kind() {
        HirKind::Capture(c) => needed(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => needed(&r.sub),
        HirKind::Alternation(branches) => {
            let mut out: Vec<Literal> = Vec::new();
            for b in branches {
                for l in needed(b)? {
                    if !out.contains(&l) {
                        out.push(l);
                    }
                }
            }
            Some(out)
        }
        HirKind::Concat(parts) => {
            // A run of single characters and strings is one literal;
            // anything else ends it and may give a list of its own.
            let mut best = None;
            let mut run: Option<Literal> = None;
            for p in parts {
                match single(p) {
                    Some(l) => run = Some(run.map_or(l.clone(), |r| join(r, &l))),
                    None => {
                        better(&mut best, run.take().map(|r| vec![r]));
                        better(&mut best, needed(p));
                    }
                }
            }
            better(&mut best, run.map(|r| vec![r]));
            best
        }
        _ => None,
    }
}

/// `hir` as one literal, when it matches exactly one text (up to ASCII
/// case).
fn single(hir: &Hir) -> Option<Literal> {
    match hir.kind() {
        HirKind::Literal(l) => Some(Literal {
            bytes: l.0.to_vec(),
            fold: false,
        }),
        HirKind::Class(c) => one_character(c),
        HirKind::Capture(c) => single(&c.sub),
        HirKind::Concat(parts) => {
            let mut out: Option<Literal> = None;
            for p in parts {
                let l = single(p)?;
                out = Some(out.map_or(l.clone(), |o| join(o, &l)));
            }
            out
        }
        _ => None,
    }
}

fn join(a: Literal, b: &Literal) -> Literal {
    let fold = a.fold || b.fold;
    let mut bytes = a.bytes;
    bytes.extend_from_slice(&b.bytes);
    if fold {
        bytes.make_ascii_lowercase();
    }
    Literal { bytes, fold }
}

/// A class of one character, or of one ASCII letter in both cases (and
/// whatever else Unicode folds with it, which an ASCII text cannot hold).
fn one_character(c: &Class) -> Option<Literal> {
    let Class::Unicode(u) = c else {
        return None;
    };
    let mut chars = Vec::new();
    for r in u.ranges() {
        let (start, end) = (u32::from(r.start()), u32::from(r.end()));
        if end - start >= 4 || chars.len() > 4 {
            return None;
        }
        chars.extend((start..=end).filter_map(char::from_u32));
    }
    if let [one] = chars[..] {
        return Some(Literal {
            bytes: one.to_string().into_bytes(),
            fold: false,
        });
    }
    let ascii: Vec<char> = chars.iter().copied().filter(char::is_ascii).collect();
    match ascii[..] {
        [a, b] if a != b && a.is_ascii_alphabetic() && a.eq_ignore_ascii_case(&b) => {
            Some(Literal {
                bytes: vec![a.to_ascii_lowercase() as u8],
                fold: true,
            })
        }
        _ => None,
    }
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

    fn lits(source: &str) -> Option<Vec<(String, bool)>> {
        let hir = parse(source, false).unwrap();
        required(&hir).map(|l| {
            l.into_iter()
                .map(|l| (String::from_utf8(l.bytes).unwrap(), l.fold))
                .collect()
        })
    }

    fn exact(words: &[&str]) -> Vec<(String, bool)> {
        words.iter().map(|w| ((*w).to_owned(), false)).collect()
    }

    #[test]
    fn every_match_holds_one_of_the_literals() {
        assert_eq!(lits(r"^Bash$").unwrap(), exact(&["Bash"]));
        assert_eq!(
            lits(r"^\+?([^:]*:)?(refs/heads/)?(main|master)$").unwrap(),
            exact(&["main", "master"])
        );
        assert_eq!(
            lits(r"\b(printenv|env)\b").unwrap(),
            exact(&["printenv", "env"])
        );
        assert_eq!(lits(r"(\w+|:)\s*\(\)\s*\{").unwrap(), exact(&["()"]));
        // Nothing every match must hold: no prefilter.
        assert_eq!(lits(r".*"), None);
        assert_eq!(lits(r"."), None);
        assert_eq!(lits(r"a?"), None);
        assert_eq!(lits(r"[a-z]+"), None);
        assert_eq!(lits(r"x|.*"), None);
    }

    #[test]
    fn a_case_insensitive_pattern_gives_folded_literals() {
        assert_eq!(
            lits(r"(?i)\btruncate\s+(table\s+)?\w").unwrap(),
            [("truncate".to_owned(), true)]
        );
        assert_eq!(
            lits(r"(?i)system\.net\.sockets").unwrap(),
            [("system.net.sockets".to_owned(), true)]
        );
        // Mixed: the case-sensitive part is still a literal.
        assert_eq!(lits(r"ABC(?i:de)").unwrap(), [("abcde".to_owned(), true)]);
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
