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

/// How a rule's patterns are read: a parameter of every [`compile_with`].
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    /// Parse every regular expression now, so a bad one is an error
    /// naming the rule. A shipped pack's are parsed by its tests instead.
    pub check_syntax: bool,
    pub literals: Literals,
}

/// Where a pattern's prefilter (the literals every match holds) comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Literals {
    /// No prefilter: every text goes to the compiled expression (to show
    /// that the prefilters change no answer).
    Off,
    /// From parsing the pattern.
    Parsed,
    /// Found when the binary was built (a shipped pack's patterns), by
    /// source, sorted.
    Known(&'static [(&'static str, &'static [Lit])]),
}

/// A literal as build.rs writes it: its bytes, and whether ASCII letters
/// in it match either case ([`crate::config::literals::Literal`]).
pub type Lit = (&'static [u8], bool);

/// Whether `text` holds `bytes` (`fold`: in any ASCII case, and a text
/// holding other than ASCII always may, see
/// [`crate::config::literals::Literal`]).
pub fn holds(text: &str, bytes: &[u8], fold: bool) -> bool {
    if !fold {
        return memchr::memmem::find(text.as_bytes(), bytes).is_some();
    }
    if !text.is_ascii() {
        return true;
    }
    let (Some(&first), hay) = (bytes.first(), text.as_bytes()) else {
        return true;
    };
    let rest = &bytes[1..];
    let mut from = 0;
    while let Some(i) = memchr::memchr2(
        first.to_ascii_lowercase(),
        first.to_ascii_uppercase(),
        &hay[from..],
    ) {
        let at = from + i + 1;
        if hay
            .get(at..at + rest.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(rest))
        {
            return true;
        }
        from = at;
    }
    false
}

impl Reading {
    /// A person's rule: every pattern parsed, a bad one refused.
    pub const CHECKED: Reading = Reading {
        check_syntax: true,
        literals: Literals::Parsed,
    };

    fn prefilter(&self) -> bool {
        self.literals != Literals::Off
    }
}

/// A regular expression, checked (or not) when its rule is read, and
/// compiled the first time a call reaches it with a text that holds one
/// of the literals its every match holds: a shim process answers one
/// call, and most of a pack's patterns are never tried on it, or tried on
/// texts they plainly cannot match, so compiling them all would be most
/// of the call's cost.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    case_insensitive: bool,
    prefilter: Prefilter,
    compiled: OnceLock<Option<Regex>>,
}

/// What a text must be or hold before the expression is tried on it.
#[derive(Debug, Clone)]
enum Prefilter {
    /// Anything may match.
    Any,
    /// One of these (found when the binary was built).
    Known(&'static [Lit]),
    /// One of these.
    Holds(Box<[crate::config::literals::Literal]>),
    /// Exactly this text and nothing else: a glob without wildcards,
    /// which needs no expression at all.
    Exact(Box<str>),
}

impl Pattern {
    /// Checks `source`'s syntax now if `how` says so, and finds its
    /// prefilter; builds it later.
    pub fn new(source: String, case_insensitive: bool, how: Reading) -> Result<Pattern, String> {
        let parsed = if how.check_syntax || how.literals == Literals::Parsed {
            match crate::config::literals::parse(&source, case_insensitive) {
                Ok(hir) => Some(hir),
                Err(e) if how.check_syntax => {
                    return Err(format!("invalid regular expression `{source}`: {e}"));
                }
                // Left to the compile, which then leaves the pattern out.
                Err(_) => None,
            }
        } else {
            None
        };
        let prefilter = match how.literals {
            Literals::Off => Prefilter::Any,
            Literals::Parsed => parsed
                .as_ref()
                .and_then(crate::config::literals::required)
                .map_or(Prefilter::Any, |lits| Prefilter::Holds(lits.into())),
            Literals::Known(table) => table
                .binary_search_by(|(s, _)| (*s).cmp(source.as_str()))
                .map_or(Prefilter::Any, |i| Prefilter::Known(table[i].1)),
        };
        Ok(Pattern::glob(source, case_insensitive, prefilter))
    }

    /// A pattern with the prefilter given (a glob's: every character
    /// escaped, so never a syntax error).
    fn glob(source: String, case_insensitive: bool, prefilter: Prefilter) -> Pattern {
        Pattern {
            source,
            case_insensitive,
            prefilter,
            compiled: OnceLock::new(),
        }
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

    /// Whether `text` could match at all: `false` is certain, `true` is
    /// for the expression to settle.
    fn may_match(&self, text: &str) -> bool {
        match &self.prefilter {
            Prefilter::Any => true,
            Prefilter::Known(lits) => lits.iter().any(|(l, fold)| holds(text, l, *fold)),
            Prefilter::Holds(lits) => lits.iter().any(|l| holds(text, &l.bytes, l.fold)),
            Prefilter::Exact(exact) => text == &**exact,
        }
    }

    pub fn is_match(&self, text: &str) -> bool {
        if let Prefilter::Exact(exact) = &self.prefilter {
            return text == &**exact;
        }
        self.may_match(text) && self.regex().is_some_and(|r| r.is_match(text))
    }

    pub fn find<'t>(&self, text: &'t str) -> Option<regex::Match<'t>> {
        if !self.may_match(text) {
            return None;
        }
        self.regex().and_then(|r| r.find(text))
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the expression has been compiled in this process.
    pub fn is_compiled(&self) -> bool {
        self.compiled.get().is_some()
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
/// same shape), every pattern checked. `pack` prefixes its id. The error
/// names the rule.
pub fn compile(v: &Value, pack: Option<&str>) -> Result<Rule, String> {
    compile_with(v, pack, Reading::CHECKED)
}

/// [`compile`], reading the rule's patterns as `how` says.
pub fn compile_with(v: &Value, pack: Option<&str>, how: Reading) -> Result<Rule, String> {
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
        .map(|t| glob_anchored(t, false, how))
        .collect();
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
    let cond = condition(m, how).map_err(|e| named(format!("`match`: {e}")))?;
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

fn regexes(v: &Value, how: Reading) -> Result<Vec<Pattern>, String> {
    string_list(v)?
        .into_iter()
        .map(|p| Pattern::new(p, false, how))
        .collect()
}

fn condition(v: &Value, how: Reading) -> Result<Cond, String> {
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
            "command" => Cond::Command(command(v, how)?),
            "path" => Cond::Path(path(v, how)?),
            "url" => Cond::Url(url(v, how)?),
            "mcp" => Cond::Mcp(mcp(v, how)?),
            "prompt" => Cond::Prompt(non_empty(regexes(v, how), "prompt")?),
            "text" => Cond::Text(non_empty(regexes(v, how), "text")?),
            "any" => {
                let list = v
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .ok_or("`any` must be a non-empty list of conditions")?;
                Cond::Any(
                    list.iter()
                        .map(|c| condition(c, how))
                        .collect::<Result<_, _>>()?,
                )
            }
            "not" => Cond::Not(Box::new(condition(v, how)?)),
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

fn command(v: &Value, how: Reading) -> Result<CommandCond, String> {
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
            .map_or(Ok(Vec::new()), |v| regexes(v, how))
            .map_err(|e| format!("`command.{key}`: {e}"))
    };
    Ok(CommandCond {
        program: list_of(obj, "program")?,
        subcommand: list_of(obj, "subcommand")?,
        flag: list_of(obj, "flag")?,
        arg: res("arg")?,
        piped_into: list_of(obj, "piped_into")?,
        redirect_to: obj.get("redirect_to").map(|v| path(v, how)).transpose()?,
        inline_code: res("inline_code")?,
        assembled: res("assembled")?,
        script: obj
            .get("script")
            .map(|v| path(v, how))
            .transpose()?
            .map(Box::new),
    })
}

fn path(v: &Value, how: Reading) -> Result<PathCond, String> {
    let obj = object(v, "path", &["glob", "set", "access"])?;
    let globs = list_of(obj, "glob")?
        .iter()
        .map(|g| path_glob(g, how))
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

fn url(v: &Value, how: Reading) -> Result<UrlCond, String> {
    let obj = object(v, "url", &["host", "scheme", "carries_secret"])?;
    let carries_secret = match obj.get("carries_secret") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err("`url.carries_secret` must be true or false".into()),
    };
    Ok(UrlCond {
        host: list_of(obj, "host")?
            .iter()
            .map(|h| glob_anchored(&h.to_ascii_lowercase(), true, how))
            .collect(),
        scheme: list_of(obj, "scheme")?
            .iter()
            .map(|s| s.to_ascii_lowercase())
            .collect(),
        carries_secret,
    })
}

fn mcp(v: &Value, how: Reading) -> Result<McpCond, String> {
    let obj = object(v, "mcp", &["server", "tool", "arg"])?;
    let globs = |key: &str| -> Result<Vec<Glob>, String> {
        Ok(list_of(obj, key)?
            .iter()
            .map(|g| glob_anchored(g, false, how))
            .collect())
    };
    Ok(McpCond {
        server: globs("server")?,
        tool: globs("tool")?,
        arg: obj
            .get("arg")
            .map_or(Ok(Vec::new()), |v| regexes(v, how))
            .map_err(|e| format!("`mcp.arg`: {e}"))?,
    })
}

/// A whole-string glob (`*` is any text, `?` one character) for names and
/// hosts.
fn glob_anchored(g: &str, case_insensitive: bool, how: Reading) -> Glob {
    let mut re = String::from("^");
    for c in g.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    // A case-insensitive expression also matches letters Unicode folds
    // together (the Kelvin sign for `k`): it gets no prefilter.
    let prefilter = if !how.prefilter() || case_insensitive {
        Prefilter::Any
    } else if !g.contains(['*', '?']) {
        Prefilter::Exact(g.into())
    } else {
        literal_prefilter(&crate::config::literals::glob_literal(g))
    };
    Glob {
        text: g.to_owned(),
        re: Pattern::glob(re, case_insensitive, prefilter),
    }
}

/// Texts that hold `lit` (anything, when it is empty).
fn literal_prefilter(lit: &str) -> Prefilter {
    if lit.is_empty() {
        Prefilter::Any
    } else {
        Prefilter::Holds(Box::new([crate::config::literals::Literal {
            bytes: lit.as_bytes().to_vec(),
            fold: false,
        }]))
    }
}

/// A gitignore-style path glob: without a `/` it matches a name at any
/// depth; `~/` is the home and `/` the root; otherwise it matches a run of
/// trailing components (`.github/workflows/*`). `**` crosses directories,
/// `*` and `?` do not; a trailing `/` also covers what is inside.
pub fn path_glob(g: &str, how: Reading) -> Result<Glob, String> {
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
    let prefilter = if how.prefilter() {
        literal_prefilter(&crate::config::literals::glob_literal(body))
    } else {
        Prefilter::Any
    };
    Ok(Glob {
        text: g.to_owned(),
        re: Pattern::glob(re, false, prefilter),
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
        let m = |g: &str, p: &str| path_glob(g, Reading::CHECKED).unwrap().re.is_match(p);
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
