//! `if`: a registration on a tool event narrowed to the calls a permission
//! rule names, in Claude Code's syntax, so a hook moved from Claude Code
//! runs on exactly the calls it ran on there:
//!
//! - `Bash(git push *)`: the command, or any one of the commands it chains
//!   (`&&`, `||`, `;`, `|`, a newline), its leading `NAME=value` words
//!   dropped, matches the pattern, where `*` is any text; a pattern ending
//!   in ` *` also matches the bare command, and the older `npm test:*` is
//!   `npm test` alone or followed by arguments.
//! - `Write(.env*)`, `Edit(src/**)`, `Read(~/.ssh/**)`: the call's file
//!   matches a gitignore-style pattern: without a `/` it names a file or
//!   directory at any depth; `//p` is the absolute path `/p`, `~/p` is in
//!   the home, and anything else is relative to the session's directory;
//!   `*` stays within a directory, `**` crosses them.
//! - `WebFetch(domain:example.com)`: the URL's host is that domain or
//!   under it.
//! - A tool name alone (`Bash`, `mcp__github__create_issue`): that tool.
//!
//! Patterns become anchored regular expressions (linear-time matching).

use std::path::Path;

use regex::Regex;
use serde_json::Value;

/// Why an `if` cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConditionError {
    #[error("`{0}` is not a permission rule (`Tool` or `Tool(pattern)`)")]
    Shape(String),
    #[error(
        "keryx-hooks matches `{tool}(…)` patterns only for Bash, file tools and WebFetch(domain:…)"
    )]
    Unsupported { tool: String },
}

#[derive(Debug, Clone)]
enum Pattern {
    /// Any call of the tool.
    Tool,
    Command(Regex),
    Path(PathPattern),
    Domain(String),
}

#[derive(Debug, Clone)]
enum Anchor {
    /// `//p`: absolute.
    Root,
    /// `~/p`: in the home.
    Home,
    /// Relative to the session's directory.
    Cwd,
    /// No `/`: a name at any depth.
    Anywhere,
}

#[derive(Debug, Clone)]
struct PathPattern {
    anchor: Anchor,
    /// Matches the path after the anchor (or a whole path, for `Anywhere`).
    re: Regex,
}

/// A compiled `if`.
#[derive(Debug, Clone)]
pub struct Condition {
    source: String,
    tool: String,
    pattern: Pattern,
}

const FILE_TOOLS: &[&str] = &["Read", "Write", "Edit", "MultiEdit", "NotebookEdit"];

impl Condition {
    pub fn compile(source: &str) -> Result<Condition, ConditionError> {
        let shape = || ConditionError::Shape(source.to_owned());
        let s = source.trim();
        let (tool, inner) = match s.find('(') {
            None => (s, None),
            Some(i) => {
                let rest = s[i + 1..].strip_suffix(')').ok_or_else(shape)?;
                (&s[..i], Some(rest))
            }
        };
        let name_ok = !tool.is_empty()
            && tool
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !name_ok {
            return Err(shape());
        }
        let pattern = match inner {
            None => Pattern::Tool,
            Some(p) if p.is_empty() || p == "*" => Pattern::Tool,
            Some(p) if tool == "Bash" => Pattern::Command(command_regex(p)),
            Some(p) if FILE_TOOLS.contains(&tool) => Pattern::Path(path_pattern(p)),
            Some(p) if tool == "WebFetch" && p.starts_with("domain:") => {
                Pattern::Domain(p["domain:".len()..].to_ascii_lowercase())
            }
            Some(_) => {
                return Err(ConditionError::Unsupported {
                    tool: tool.to_owned(),
                });
            }
        };
        Ok(Condition {
            source: source.to_owned(),
            tool: tool.to_owned(),
            pattern,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether a call of `tool` with `input` is one the rule names; `cwd`
    /// and `home` anchor relative and `~/` paths.
    pub fn matches(
        &self,
        tool: &str,
        input: Option<&Value>,
        cwd: Option<&Path>,
        home: Option<&Path>,
    ) -> bool {
        if tool != self.tool {
            return false;
        }
        let field = |k: &str| input.and_then(|i| i.get(k)).and_then(Value::as_str);
        match &self.pattern {
            Pattern::Tool => true,
            Pattern::Command(re) => {
                let Some(command) = field("command") else {
                    return false;
                };
                re.is_match(command.trim()) || subcommands(command).any(|c| re.is_match(&c))
            }
            Pattern::Path(p) => {
                let Some(file) = field("file_path")
                    .or_else(|| field("notebook_path"))
                    .or_else(|| field("path"))
                else {
                    return false;
                };
                p.matches(Path::new(file), cwd, home)
            }
            Pattern::Domain(d) => field("url")
                .and_then(url_host)
                .is_some_and(|h| h == *d || h.ends_with(&format!(".{d}"))),
        }
    }
}

impl PathPattern {
    fn matches(&self, file: &Path, cwd: Option<&Path>, home: Option<&Path>) -> bool {
        let absolute = match (file.is_absolute(), cwd) {
            (true, _) => file.to_path_buf(),
            (false, Some(c)) => c.join(file),
            (false, None) => return false,
        };
        let text = absolute.to_string_lossy();
        let base = match self.anchor {
            Anchor::Anywhere => return self.re.is_match(&text),
            Anchor::Root => Some(Path::new("/")),
            Anchor::Home => home,
            Anchor::Cwd => cwd,
        };
        let Some(base) = base else { return false };
        absolute
            .strip_prefix(base)
            .is_ok_and(|rel| self.re.is_match(&rel.to_string_lossy()))
    }
}

/// A command pattern as an anchored expression: `*` is any text; a
/// trailing ` *` and the older `:*` also take the bare command.
fn command_regex(p: &str) -> Regex {
    let (body, optional_args) = if let Some(b) = p.strip_suffix(":*") {
        (b, true)
    } else if let Some(b) = p.strip_suffix(" *") {
        (b, true)
    } else {
        (p, false)
    };
    let mut re = String::from("^");
    for (i, part) in body.split('*').enumerate() {
        if i > 0 {
            re.push_str(".*");
        }
        re.push_str(&regex::escape(part));
    }
    if optional_args {
        re.push_str("(\\s.*)?");
    }
    re.push('$');
    build(&re)
}

fn path_pattern(p: &str) -> PathPattern {
    let (anchor, rest) = if let Some(r) = p.strip_prefix("//") {
        (Anchor::Root, r)
    } else if let Some(r) = p.strip_prefix("~/") {
        (Anchor::Home, r)
    } else if let Some(r) = p.strip_prefix("./") {
        (Anchor::Cwd, r)
    } else if let Some(r) = p.strip_prefix('/') {
        (Anchor::Cwd, r)
    } else if p.trim_end_matches('/').contains('/') {
        (Anchor::Cwd, p)
    } else {
        (Anchor::Anywhere, p)
    };
    let rest = rest.trim_end_matches('/');
    let glob = glob_regex(rest);
    // A directory named matches every file under it, as in gitignore.
    let re = match anchor {
        Anchor::Anywhere => format!("(^|/){glob}(/.*)?$"),
        _ => format!("^{glob}(/.*)?$"),
    };
    PathPattern {
        anchor,
        re: build(&re),
    }
}

fn glob_regex(g: &str) -> String {
    let mut out = String::new();
    let mut chars = g.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                if chars.peek() == Some(&'/') {
                    chars.next();
                    out.push_str("(.*/)?");
                } else {
                    out.push_str(".*");
                }
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out
}

fn build(re: &str) -> Regex {
    regex::RegexBuilder::new(re)
        .size_limit(1 << 20)
        .build()
        .unwrap_or_else(|_| Regex::new("$^").expect("the empty language compiles"))
}

/// The commands `command` chains, quotes respected, each without its
/// leading `NAME=value` words.
fn subcommands(command: &str) -> impl Iterator<Item = String> + '_ {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (Some(_), '\\') => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (None, ';' | '\n' | '|' | '&') => {
                if matches!(chars.peek(), Some('|' | '&')) {
                    chars.next();
                }
                parts.push(std::mem::take(&mut cur));
            }
            (None, c) => cur.push(c),
        }
    }
    parts.push(cur);
    parts.into_iter().filter_map(|p| {
        let words: Vec<&str> = p.split_whitespace().collect();
        let start = words
            .iter()
            .position(|w| !is_assignment(w))
            .unwrap_or(words.len());
        let rest = words[start..].join(" ");
        (!rest.is_empty()).then_some(rest)
    })
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty()
            && !k.starts_with(|c: char| c.is_ascii_digit())
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bash(rule: &str, command: &str) -> bool {
        Condition::compile(rule).unwrap().matches(
            "Bash",
            Some(&json!({ "command": command })),
            None,
            None,
        )
    }

    fn file(rule: &str, tool: &str, path: &str) -> bool {
        Condition::compile(rule).unwrap().matches(
            tool,
            Some(&json!({ "file_path": path })),
            Some(Path::new("/p")),
            Some(Path::new("/home/u")),
        )
    }

    #[test]
    fn commands_match_by_subcommand() {
        assert!(bash("Bash(git push *)", "git push origin main"));
        assert!(bash("Bash(git push *)", "git push"));
        assert!(!bash("Bash(git push *)", "git pushy"));
        assert!(bash(
            "Bash(git push *--force*)",
            "cd x && git push --force origin"
        ));
        assert!(bash("Bash(git push *)", "FOO=1 git push"));
        assert!(!bash("Bash(git push *)", "echo 'a && git push'"));
        assert!(bash("Bash(npm run test:*)", "npm run test -- --watch"));
        assert!(bash("Bash(npm run test:*)", "npm run test"));
        assert!(!bash("Bash(rm *)", "ls"));
        assert!(bash("Bash", "anything"));
        assert!(!Condition::compile("Bash(git *)").unwrap().matches(
            "Write",
            Some(&json!({"command": "git x"})),
            None,
            None
        ));
    }

    #[test]
    fn paths_match_like_gitignore() {
        assert!(file("Write(.env*)", "Write", "/p/.env.local"));
        assert!(file("Write(.env*)", "Write", "/p/deep/.env"));
        assert!(!file("Write(.env*)", "Write", "/p/env.txt"));
        assert!(file("Edit(src/**)", "Edit", "/p/src/a/b.rs"));
        assert!(file("Edit(src/**)", "Edit", "src/a.rs"));
        assert!(!file("Edit(src/**)", "Edit", "/p/lib/src/a.rs"));
        assert!(file("Edit(*.ts)", "Edit", "/p/x/y.ts"));
        assert!(!file("Edit(src/*.ts)", "Edit", "/p/src/x/y.ts"));
        assert!(file("Read(~/.ssh/**)", "Read", "/home/u/.ssh/id_rsa"));
        assert!(file("Read(//etc/**)", "Read", "/etc/passwd"));
        assert!(file("Edit(docs)", "Edit", "/p/docs/a.md"));
    }

    #[test]
    fn domains_and_what_is_refused() {
        let c = Condition::compile("WebFetch(domain:example.com)").unwrap();
        let at = |u: &str| c.matches("WebFetch", Some(&json!({ "url": u })), None, None);
        assert!(at("https://example.com/x"));
        assert!(at("https://api.example.com"));
        assert!(!at("https://example.com.evil.net/"));
        assert!(Condition::compile("Grep(foo)").is_err());
        assert!(Condition::compile("Bash(git").is_err());
        assert!(Condition::compile("tool_input.command matches 'x'").is_err());
        assert!(Condition::compile("mcp__github__create_issue").is_ok());
    }
}
