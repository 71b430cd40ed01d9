//! Rules as data (docs/RULES.md): the typed, compiled form of a `rules`
//! entry, and the reading of `rules`/`rules_off` from a hooks file. Every
//! regular expression and glob is compiled here, once, so a bad pattern is
//! a load error naming the file and the rule, and evaluation (in
//! `crate::rules`) never compiles anything.

use std::path::{Path, PathBuf};

use std::sync::OnceLock;

use regex::{Regex, RegexBuilder};
use serde_json::{Map, Value};

use crate::config::diagnostic::Diagnostic;
use crate::config::locate::locate;
use crate::config::model::Scope;
use crate::events::Event;

/// What a rule decides when it matches, strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Decision {
    Deny,
    Ask,
    Warn,
    Log,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Deny => "deny",
            Decision::Ask => "ask",
            Decision::Warn => "warn",
            Decision::Log => "log",
        }
    }

    fn parse(s: &str) -> Option<Decision> {
        [Decision::Deny, Decision::Ask, Decision::Warn, Decision::Log]
            .into_iter()
            .find(|d| d.as_str() == s)
    }
}

/// The named path sets a `path` condition may use.
pub const PATH_SETS: &[&str] = &[
    "credentials",
    "shell-startup",
    "git-hooks",
    "launch-agents",
    "cron",
    "systemd-units",
    "ci-workflows",
    "keryx",
    "agent-written",
];

/// Which kind of access a `path` condition looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Any,
}

impl Access {
    /// Whether a path reached with `how` counts for a condition on `self`.
    pub fn covers(self, how: Access) -> bool {
        self == Access::Any || how == Access::Any || self == how
    }
}

/// A regular expression checked when its rule is read and compiled the
/// first time a call reaches it: a shim process answers one call, and most
/// of a pack's patterns are never tried on it (a rule's program or tool
/// does not fit), so compiling them all would be most of the call's cost.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    case_insensitive: bool,
    compiled: OnceLock<Option<Regex>>,
}

impl Pattern {
    /// Checks `source`'s syntax now (unless a shipped pack's rule is
    /// being read); builds it later.
    pub fn new(source: String, case_insensitive: bool) -> Result<Pattern, String> {
        if CHECK_SYNTAX.with(std::cell::Cell::get) {
            regex_syntax::ParserBuilder::new()
                .case_insensitive(case_insensitive)
                .build()
                .parse(&source)
                .map_err(|e| format!("invalid regular expression `{source}`: {e}"))?;
        }
        Ok(Pattern {
            source,
            case_insensitive,
            compiled: OnceLock::new(),
        })
    }

    /// The compiled expression; `None` (logged once) when it is over the
    /// size limit, which then matches nothing.
    fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| {
                RegexBuilder::new(&self.source)
                    .case_insensitive(self.case_insensitive)
                    .size_limit(1 << 20)
                    .build()
                    .inspect_err(|e| tracing::warn!("rule pattern left out: {e}"))
                    .ok()
            })
            .as_ref()
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.regex().is_some_and(|r| r.is_match(text))
    }

    pub fn find<'t>(&self, text: &'t str) -> Option<regex::Match<'t>> {
        self.regex().and_then(|r| r.find(text))
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }
}

thread_local! {
    /// Whether [`Pattern::new`] checks syntax: on, except while
    /// [`compile`] reads a shipped pack's rule.
    static CHECK_SYNTAX: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Sets [`CHECK_SYNTAX`] for one [`compile`], and puts it back.
struct SyntaxCheck(bool);

impl SyntaxCheck {
    fn set(on: bool) -> SyntaxCheck {
        SyntaxCheck(CHECK_SYNTAX.with(|c| c.replace(on)))
    }
}

impl Drop for SyntaxCheck {
    fn drop(&mut self) {
        CHECK_SYNTAX.with(|c| c.set(self.0));
    }
}

/// A gitignore-style glob, compiled. Home-relative globs (`~/…`) are
/// matched against paths written the same way.
#[derive(Debug, Clone)]
pub struct Glob {
    pub text: String,
    pub re: Pattern,
}

#[derive(Debug, Clone)]
pub struct PathCond {
    pub globs: Vec<Glob>,
    pub set: Option<String>,
    pub access: Access,
}

#[derive(Debug, Clone, Default)]
pub struct CommandCond {
    pub program: Vec<String>,
    pub subcommand: Vec<String>,
    pub flag: Vec<String>,
    pub arg: Vec<Pattern>,
    pub piped_into: Vec<String>,
    pub redirect_to: Option<PathCond>,
    pub inline_code: Vec<Pattern>,
    /// Patterns on the strings inline code assembles from literal
    /// fragments split inside a word.
    pub assembled: Vec<Pattern>,
    /// A path condition on the local script file the command runs.
    pub script: Option<Box<PathCond>>,
}

#[derive(Debug, Clone)]
pub struct UrlCond {
    pub host: Vec<Glob>,
    pub scheme: Vec<String>,
    pub carries_secret: Option<bool>,
}

#[derive(Debug, Clone)]
pub struct McpCond {
    pub server: Vec<Glob>,
    pub tool: Vec<Glob>,
    pub arg: Vec<Pattern>,
}

/// A `match`: every part must hold.
#[derive(Debug, Clone)]
pub enum Cond {
    All(Vec<Cond>),
    Any(Vec<Cond>),
    Not(Box<Cond>),
    Command(CommandCond),
    Path(PathCond),
    Url(UrlCond),
    Mcp(McpCond),
    Prompt(Vec<Pattern>),
    Text(Vec<Pattern>),
}

/// One compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// `<pack>/<id>` for a pack's rule.
    pub id: String,
    pub pack: Option<String>,
    pub description: Option<String>,
    pub on: Vec<Event>,
    /// Tool-name globs; empty is every tool.
    pub tools: Vec<Glob>,
    pub cond: Cond,
    pub decision: Decision,
    pub reason: String,
    pub notice: Option<String>,
    pub scope: Scope,
    /// The hooks file it came from; `None` for a compiled-in pack.
    pub source: Option<PathBuf>,
}

impl Rule {
    /// Whether the rule looks at `tool` (`None`: an event without a tool).
    pub fn fits_tool(&self, tool: Option<&str>) -> bool {
        self.tools.is_empty() || tool.is_some_and(|t| self.tools.iter().any(|g| g.re.is_match(t)))
    }

    /// Whether `rules_off` (pack ids and rule ids) switches this rule off.
    pub fn is_off(&self, off: &[String]) -> bool {
        off.iter()
            .any(|o| *o == self.id || self.pack.as_deref() == Some(o.as_str()))
    }
}

/// What a hooks file holds besides its hooks.
#[derive(Debug, Clone, Default)]
pub struct FileRules {
    pub rules: Vec<Rule>,
    pub rules_off: Vec<String>,
}

/// Reads `rules` and `rules_off` from a parsed hooks file. A `rules_off`
/// outside the user's own file, a bad pattern, an empty `match` or an
/// unknown set is an error naming the file, the rule and the problem.
pub fn from_doc(
    doc: &Value,
    text: &str,
    path: &Path,
    scope: Scope,
) -> Result<FileRules, Vec<Diagnostic>> {
    let err = |msg: String, pointer: String| {
        Diagnostic::error("hook-config-rule", msg)
            .at(path)
            .line_col(locate(text, &pointer))
            .pointer(pointer)
    };
    let mut out = FileRules::default();
    let mut errors = Vec::new();
    if let Some(off) = doc.get("rules_off") {
        if scope != Scope::User {
            errors.push(err(
                format!(
                    "`rules_off` in `{}`: only your own hooks file switches rules off (a project only adds)",
                    path.display()
                ),
                "/rules_off".into(),
            ));
        } else {
            match off.as_array() {
                Some(list) if list.iter().all(Value::is_string) => {
                    out.rules_off = list
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect();
                }
                _ => errors.push(err(
                    "`rules_off` must be a list of pack or rule ids".into(),
                    "/rules_off".into(),
                )),
            }
        }
    }
    let list = match doc.get("rules") {
        None => &Vec::new(),
        Some(Value::Array(list)) => list,
        Some(_) => {
            errors.push(err("`rules` must be a list".into(), "/rules".into()));
            return Err(errors);
        }
    };
    for (i, v) in list.iter().enumerate() {
        match compile(v, None) {
            Ok(mut rule) => {
                if out.rules.iter().any(|r| r.id == rule.id) {
                    errors.push(err(
                        format!("`{}`: rule `{}` is defined twice", path.display(), rule.id),
                        format!("/rules/{i}/id"),
                    ));
                }
                rule.scope = scope;
                rule.source = Some(path.to_path_buf());
                out.rules.push(rule);
            }
            Err(e) => errors.push(err(
                format!("`{}`: {e}", path.display()),
                format!("/rules/{i}"),
            )),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Compiles one rule as written (JSON, or a pack's TOML turned into the
/// same shape). `pack` prefixes its id. The error names the rule.
pub fn compile(v: &Value, pack: Option<&str>) -> Result<Rule, String> {
    // A shipped pack's patterns are checked by its tests
    // ([`compile_checked`]), not on each call.
    compile_with(v, pack, pack.is_none())
}

/// [`compile`], with every pattern's syntax checked, a pack's too.
pub fn compile_checked(v: &Value, pack: Option<&str>) -> Result<Rule, String> {
    compile_with(v, pack, true)
}

fn compile_with(v: &Value, pack: Option<&str>, check_syntax: bool) -> Result<Rule, String> {
    let _syntax = SyntaxCheck::set(check_syntax);
    let obj = v.as_object().ok_or("a rule must be an object")?;
    let id = obj
        .get("id")
        .and_then(Value::as_str)
        .ok_or("a rule needs an `id`")?;
    // A pack may spell its rules' ids with the pack's prefix or without.
    let id = pack
        .and_then(|p| id.strip_prefix(p)?.strip_prefix('/'))
        .unwrap_or(id);
    let named = |e: String| format!("rule `{id}`: {e}");
    if !valid_rule_id(id) {
        return Err(named(
            "an id is lower-case letters, digits, `.`, `_` and `-`".into(),
        ));
    }
    known_keys(
        obj,
        &[
            "id",
            "description",
            "on",
            "tools",
            "match",
            "decision",
            "reason",
            "notice",
        ],
    )
    .map_err(named)?;
    let full = match pack {
        Some(p) => format!("{p}/{id}"),
        None => id.to_owned(),
    };
    let strings = |key: &str| -> Result<Option<Vec<String>>, String> {
        match obj.get(key) {
            None => Ok(None),
            Some(v) => string_list(v).map(Some).map_err(|e| format!("`{key}` {e}")),
        }
    };
    let on = match strings("on").map_err(named)? {
        None => vec![Event::PreToolUse],
        Some(names) => names
            .iter()
            .map(|n| n.parse::<Event>())
            .collect::<Result<_, _>>()
            .map_err(named)?,
    };
    let tools = strings("tools")
        .map_err(named)?
        .unwrap_or_default()
        .iter()
        .map(|t| glob_anchored(t, false))
        .collect::<Result<_, _>>()
        .map_err(named)?;
    let decision = obj
        .get("decision")
        .and_then(Value::as_str)
        .and_then(Decision::parse)
        .ok_or_else(|| named("`decision` is one of deny, ask, warn, log".into()))?;
    let reason = obj
        .get("reason")
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| named("a rule needs a `reason`".into()))?
        .to_owned();
    let text_of = |key: &str| -> Result<Option<String>, String> {
        match obj.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(named(format!("`{key}` must be a string"))),
        }
    };
    let m = obj
        .get("match")
        .ok_or_else(|| named("a rule needs a `match`".into()))?;
    let cond = condition(m).map_err(|e| named(format!("`match`: {e}")))?;
    Ok(Rule {
        id: full,
        pack: pack.map(str::to_owned),
        description: text_of("description")?,
        on,
        tools,
        cond,
        decision,
        reason,
        notice: text_of("notice")?,
        scope: Scope::Builtin,
        source: None,
    })
}

/// `[a-z0-9][a-z0-9._-]*`.
pub fn valid_rule_id(id: &str) -> bool {
    let mut b = id.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"._-".contains(&c))
}

fn known_keys(obj: &Map<String, Value>, keys: &[&str]) -> Result<(), String> {
    match obj.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(format!("unknown key `{k}` (known: {})", keys.join(", "))),
        None => Ok(()),
    }
}

fn string_list(v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) if a.is_empty() => Err("is an empty list and can never match".into()),
        Value::Array(a) if a.iter().all(Value::is_string) => Ok(a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()),
        _ => Err("must be a list of strings".into()),
    }
}

fn regexes(v: &Value) -> Result<Vec<Pattern>, String> {
    string_list(v)?
        .into_iter()
        .map(|p| Pattern::new(p, false))
        .collect()
}

fn condition(v: &Value) -> Result<Cond, String> {
    let obj = v.as_object().ok_or("a condition must be an object")?;
    if obj.is_empty() {
        return Err("a condition must not be empty (it would match every call)".into());
    }
    known_keys(
        obj,
        &[
            "command", "path", "url", "mcp", "prompt", "text", "any", "not",
        ],
    )?;
    let mut all = Vec::new();
    for (key, v) in obj {
        let c = match key.as_str() {
            "command" => Cond::Command(command(v)?),
            "path" => Cond::Path(path(v)?),
            "url" => Cond::Url(url(v)?),
            "mcp" => Cond::Mcp(mcp(v)?),
            "prompt" => Cond::Prompt(non_empty(regexes(v), "prompt")?),
            "text" => Cond::Text(non_empty(regexes(v), "text")?),
            "any" => {
                let list = v
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .ok_or("`any` must be a non-empty list of conditions")?;
                Cond::Any(list.iter().map(condition).collect::<Result<_, _>>()?)
            }
            "not" => Cond::Not(Box::new(condition(v)?)),
            _ => unreachable!("checked by known_keys"),
        };
        all.push(c);
    }
    Ok(if all.len() == 1 {
        all.remove(0)
    } else {
        Cond::All(all)
    })
}

fn non_empty<T>(r: Result<Vec<T>, String>, key: &str) -> Result<Vec<T>, String> {
    match r {
        Ok(v) if v.is_empty() => Err(format!("`{key}` is empty and can never match")),
        Ok(v) => Ok(v),
        Err(e) => Err(format!("`{key}`: {e}")),
    }
}

fn object<'v>(v: &'v Value, what: &str, keys: &[&str]) -> Result<&'v Map<String, Value>, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("`{what}` must be an object"))?;
    if obj.is_empty() {
        return Err(format!("`{what}` must not be empty"));
    }
    known_keys(obj, keys).map_err(|e| format!("`{what}`: {e}"))?;
    Ok(obj)
}

fn list_of(obj: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    obj.get(key)
        .map_or(Ok(Vec::new()), string_list)
        .map_err(|e| format!("`{key}` {e}"))
}

fn command(v: &Value) -> Result<CommandCond, String> {
    let obj = object(
        v,
        "command",
        &[
            "program",
            "subcommand",
            "flag",
            "arg",
            "piped_into",
            "redirect_to",
            "inline_code",
            "assembled",
            "script",
        ],
    )?;
    let res = |key: &str| {
        obj.get(key)
            .map_or(Ok(Vec::new()), regexes)
            .map_err(|e| format!("`command.{key}`: {e}"))
    };
    Ok(CommandCond {
        program: list_of(obj, "program")?,
        subcommand: list_of(obj, "subcommand")?,
        flag: list_of(obj, "flag")?,
        arg: res("arg")?,
        piped_into: list_of(obj, "piped_into")?,
        redirect_to: obj.get("redirect_to").map(path).transpose()?,
        inline_code: res("inline_code")?,
        assembled: res("assembled")?,
        script: obj.get("script").map(path).transpose()?.map(Box::new),
    })
}

fn path(v: &Value) -> Result<PathCond, String> {
    let obj = object(v, "path", &["glob", "set", "access"])?;
    let globs = list_of(obj, "glob")?
        .iter()
        .map(|g| path_glob(g))
        .collect::<Result<_, _>>()?;
    let set = match obj.get("set") {
        None => None,
        Some(Value::String(s)) if PATH_SETS.contains(&s.as_str()) => Some(s.clone()),
        Some(Value::String(s)) => {
            return Err(format!(
                "unknown path set `{s}` (known: {})",
                PATH_SETS.join(", ")
            ));
        }
        Some(_) => return Err("`path.set` must be a string".into()),
    };
    let access = match obj.get("access").map(|a| a.as_str()) {
        None | Some(Some("any")) => Access::Any,
        Some(Some("read")) => Access::Read,
        Some(Some("write")) => Access::Write,
        Some(_) => return Err("`path.access` is one of read, write, any".into()),
    };
    if set.is_none() && obj.get("glob").is_none() {
        return Err("`path` needs a `glob` or a `set`".into());
    }
    Ok(PathCond { globs, set, access })
}

fn url(v: &Value) -> Result<UrlCond, String> {
    let obj = object(v, "url", &["host", "scheme", "carries_secret"])?;
    let carries_secret = match obj.get("carries_secret") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err("`url.carries_secret` must be true or false".into()),
    };
    Ok(UrlCond {
        host: list_of(obj, "host")?
            .iter()
            .map(|h| glob_anchored(&h.to_ascii_lowercase(), true))
            .collect::<Result<_, _>>()?,
        scheme: list_of(obj, "scheme")?
            .iter()
            .map(|s| s.to_ascii_lowercase())
            .collect(),
        carries_secret,
    })
}

fn mcp(v: &Value) -> Result<McpCond, String> {
    let obj = object(v, "mcp", &["server", "tool", "arg"])?;
    let globs = |key: &str| -> Result<Vec<Glob>, String> {
        list_of(obj, key)?
            .iter()
            .map(|g| glob_anchored(g, false))
            .collect()
    };
    Ok(McpCond {
        server: globs("server")?,
        tool: globs("tool")?,
        arg: obj
            .get("arg")
            .map_or(Ok(Vec::new()), regexes)
            .map_err(|e| format!("`mcp.arg`: {e}"))?,
    })
}

/// A whole-string glob (`*` is any text, `?` one character) for names and
/// hosts.
fn glob_anchored(g: &str, case_insensitive: bool) -> Result<Glob, String> {
    let mut re = String::from("^");
    for c in g.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    let re = Pattern::new(re, case_insensitive).map_err(|e| format!("invalid glob `{g}`: {e}"))?;
    Ok(Glob {
        text: g.to_owned(),
        re,
    })
}

/// A gitignore-style path glob: without a `/` it matches a name at any
/// depth; `~/` is the home and `/` the root; otherwise it matches a run of
/// trailing components (`.github/workflows/*`). `**` crosses directories,
/// `*` and `?` do not; a trailing `/` also covers what is inside.
pub fn path_glob(g: &str) -> Result<Glob, String> {
    if g.is_empty() {
        return Err("an empty path glob".into());
    }
    let (prefix, body) = if let Some(rest) = g.strip_prefix("~/") {
        ("^~/", rest)
    } else if let Some(rest) = g.strip_prefix('/') {
        ("^/", rest)
    } else {
        ("(^|/)", g)
    };
    // A glob that names a directory covers what is inside it, as in
    // gitignore; a trailing `/` says the same.
    let body = body.strip_suffix('/').unwrap_or(body);
    let mut re = String::from(prefix);
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                // `**/` is zero or more directories; a bare `**` anything.
                if chars.get(i + 2) == Some(&'/') {
                    re.push_str("(.*/)?");
                    i += 3;
                } else {
                    re.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push_str("(/.*)?$");
    let re = Pattern::new(re, false).map_err(|e| format!("invalid glob `{g}`: {e}"))?;
    Ok(Glob {
        text: g.to_owned(),
        re,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(m: Value) -> Result<Rule, String> {
        compile(
            &json!({"id": "r", "match": m, "decision": "deny", "reason": "no"}),
            None,
        )
    }

    #[test]
    fn a_bad_regex_names_the_rule_and_the_pattern() {
        let e = rule(json!({"command": {"arg": ["(unclosed"]}})).unwrap_err();
        assert!(e.starts_with("rule `r`: "), "{e}");
        assert!(e.contains("invalid regular expression `(unclosed`"), "{e}");
    }

    #[test]
    fn an_empty_match_and_an_unknown_set_are_refused() {
        let e = rule(json!({})).unwrap_err();
        assert!(e.contains("must not be empty"), "{e}");
        let e = rule(json!({"command": {}})).unwrap_err();
        assert!(e.contains("`command` must not be empty"), "{e}");
        let e = rule(json!({"path": {"set": "secrets"}})).unwrap_err();
        assert!(e.contains("unknown path set `secrets`"), "{e}");
        let e = rule(json!({"prompt": []})).unwrap_err();
        assert!(e.contains("can never match"), "{e}");
        let e = rule(json!({"command": {"program": []}})).unwrap_err();
        assert!(
            e.contains("`program` is an empty list and can never match"),
            "{e}"
        );
        let e = rule(json!({"command": {"programme": ["git"]}})).unwrap_err();
        assert!(e.contains("unknown key `programme`"), "{e}");
    }

    #[test]
    fn a_pack_rule_is_named_after_its_pack() {
        let r = compile(
            &json!({"id": "git-reset-hard", "match": {"command": {"program": "git"}},
                    "decision": "ask", "reason": "careful"}),
            Some("destructive"),
        )
        .unwrap();
        assert_eq!(r.id, "destructive/git-reset-hard");
        assert_eq!(r.on, [Event::PreToolUse]);
        let prefixed = compile(
            &json!({"id": "destructive/git-reset-hard", "match": {"command": {"program": "git"}},
                    "decision": "ask", "reason": "careful"}),
            Some("destructive"),
        )
        .unwrap();
        assert_eq!(prefixed.id, "destructive/git-reset-hard");
        assert!(r.is_off(&["destructive".into()]));
        assert!(r.is_off(&["destructive/git-reset-hard".into()]));
        assert!(!r.is_off(&["destructive/other".into()]));
    }

    #[test]
    fn rules_off_belongs_to_the_user_file_only() {
        let doc = json!({"schemaVersion": "1.0.0", "hooks": {}, "rules_off": ["destructive"]});
        let p = Path::new("/p/.metaproject/hooks.json");
        let e = from_doc(&doc, &doc.to_string(), p, Scope::Project).unwrap_err();
        assert!(
            e[0].message.contains("/p/.metaproject/hooks.json"),
            "{}",
            e[0].message
        );
        assert!(e[0].message.contains("only your own hooks file"));
        let ok = from_doc(&doc, &doc.to_string(), p, Scope::User).unwrap();
        assert_eq!(ok.rules_off, ["destructive"]);
    }

    #[test]
    fn path_globs_read_like_gitignore() {
        let m = |g: &str, p: &str| path_glob(g).unwrap().re.is_match(p);
        assert!(m(".env*", "/repo/app/.env.local"));
        assert!(!m(".env*", "/repo/app/env"));
        assert!(m("~/.ssh/", "~/.ssh/id_rsa"));
        assert!(m("~/.ssh/*", "~/.ssh/id_rsa"));
        assert!(!m("~/.ssh/*", "/other/.ssh/id_rsa"));
        assert!(m(".github/workflows/", "/repo/.github/workflows/ci.yml"));
        assert!(m("/etc/cron*", "/etc/cron.d/job"));
        assert!(m("src/**/*.rs", "/r/src/a/b/c.rs"));
        assert!(m("src/**/*.rs", "/r/src/c.rs"));
    }
}
