//! Tool-name matchers, with Claude Code's documented semantics: `"*"`, `""`
//! or omitted match everything; a value made only of letters, digits, `_`,
//! `-` and `|` is a list of exact names; anything else is an unanchored
//! regular expression. Compiled once per load.

use regex::Regex;

/// Why a matcher does not compile.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MatcherError {
    /// Not a regular expression the engine takes; its own message.
    #[error(transparent)]
    Regex(#[from] regex::Error),
}

#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Exact(Vec<String>),
    Regex(Regex),
}

impl Matcher {
    /// Compiles `source`; the error is the regex engine's own message.
    pub fn compile(source: &str) -> Result<Matcher, MatcherError> {
        if source.is_empty() || source == "*" {
            return Ok(Matcher::All);
        }
        let is_name_list = source
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'|');
        if is_name_list {
            return Ok(Matcher::Exact(
                source
                    .split('|')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ));
        }
        regex::RegexBuilder::new(source)
            .size_limit(1 << 20)
            .build()
            .map(Matcher::Regex)
            .map_err(MatcherError::from)
    }

    pub fn matches(&self, tool_name: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Exact(names) => names.iter().any(|n| n == tool_name),
            Matcher::Regex(re) => re.is_match(tool_name),
        }
    }

    pub fn is_all(&self) -> bool {
        matches!(self, Matcher::All)
    }

    /// The source form, for display and digests.
    pub fn source(&self) -> String {
        match self {
            Matcher::All => "*".to_owned(),
            Matcher::Exact(names) => names.join("|"),
            Matcher::Regex(re) => re.as_str().to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_forms() {
        for all in ["", "*"] {
            assert!(Matcher::compile(all).unwrap().matches("Anything"));
        }
        let exact = Matcher::compile("Write|Edit").unwrap();
        assert!(exact.matches("Write") && exact.matches("Edit"));
        assert!(!exact.matches("NotebookEdit") && !exact.matches("Writer"));
        let re = Matcher::compile("Edit.*").unwrap();
        assert!(
            re.matches("NotebookEdit"),
            "regexes are unanchored, as in Claude Code"
        );
        let mcp = Matcher::compile("mcp__.*__write").unwrap();
        assert!(mcp.matches("mcp__fs__write") && !mcp.matches("Write"));
        assert!(Matcher::compile("(").is_err());
    }
}
