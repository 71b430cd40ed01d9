//! The secret and hidden-instruction scanner behind `keryx.security-check-*`
//! and the learning sink's redaction. Rules are data (`secret-rules.toml`,
//! plus the user's `[[security.rules]]`), compiled once per process; a
//! finding carries a kind and a position, never the secret itself.

use std::sync::{Arc, OnceLock};

use memchr::memmem;
use regex::bytes::{Regex, RegexBuilder};
use toml_edit::{DocumentMut, Item, TableLike};

/// The rules file itself, which the tests read whole; the binary carries
/// it as build.rs split it (`BUILTIN_RULE_DEFS`).
#[cfg(test)]
const BUILTIN_RULES: &str = include_str!("builtins/secret-rules.toml");

/// Rule ids of the hidden-instruction carriers, which are code, not regexes.
pub const TAG_CHARACTERS: &str = "unicode-tag-characters";
pub const BIDI_OVERRIDE: &str = "bidi-override";
pub const ZERO_WIDTH_RUN: &str = "zero-width-run";

/// This many zero-width characters in a row carry data; one or two occur in
/// ordinary Persian, Indic and emoji text.
const ZERO_WIDTH_RUN_MIN: usize = 3;

/// Stop collecting after this many findings: the gate needs the first, the
/// redactor needs them all, and nothing needs an unbounded list.
const MAX_FINDINGS: usize = 1000;

/// Where the scanned text is headed; a rule may apply to one side only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A prompt about to reach the model.
    Input,
    /// Content about to be written to disk.
    Output,
}

/// One thing the scanner found. `start..end` is the byte span of the secret
/// (for redaction); `line` and `column` (1-based, column in characters) are
/// for the reason. There is deliberately no field holding the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule_id: String,
    pub kind: String,
    pub start: usize,
    pub end: usize,
    pub line: usize,
    pub column: usize,
}

impl Finding {
    /// `AWS access key id (rule `aws-access-key-id`) at line 3, column 14`,
    /// escaped: kinds and ids of user rules come from a file.
    pub fn describe(&self) -> String {
        format!(
            "{} (rule `{}`) at line {}, column {}",
            crate::escape::escape(&self.kind),
            crate::escape::escape(&self.rule_id),
            self.line,
            self.column
        )
    }

    /// The way on after `gate` (a built-in's id) denied for this finding,
    /// when the person judges the finding wrong: this rule off for them
    /// alone, or the gate off for their user scope (an acknowledged risk).
    pub fn how_to_proceed(&self, gate: &str) -> String {
        format!(
            "if this is not a secret, switch the rule off for yourself with \
             `[security] disable = [\"{}\"]` in $KERYX_HOME/runtime.toml, or turn the \
             gate off for your user scope with `keryx-hooks disable {} --user \
             --acknowledge-gate-risk`",
            crate::escape::escape(&self.rule_id),
            crate::escape::escape(gate)
        )
    }
}

#[derive(Debug, Clone)]
struct Rule {
    id: String,
    kind: String,
    keywords: Vec<String>,
    /// One of these is also in the (lowercased) text of every match: a
    /// text without any is not searched, and the regex not compiled.
    requires: Vec<String>,
    /// One searcher per keyword (SIMD substring search, built once).
    finders: Vec<memmem::Finder<'static>>,
    /// Every match lies on one line and holds a keyword: the regex runs
    /// only over the lines that hold one, not over the whole text.
    per_line: bool,
    /// Runs over the ASCII-lowercased text (same byte offsets).
    lowercase: bool,
    min_entropy: Option<f64>,
    random_shape: bool,
    input: bool,
    output: bool,
    /// The regexes, compiled on first use: most events carry no keyword of
    /// most rules, so a shim that compiled all of them at start would pay
    /// milliseconds for nothing. Shared between clones.
    matchers: Arc<OnceLock<Matchers>>,
    /// A built-in rule's index among secret-rules.toml's `[[rule]]` tables,
    /// compiled from there when first needed; a user's rule is compiled as
    /// it loads, so a broken one is an error at once.
    builtin: Option<usize>,
}

#[derive(Debug)]
struct Matchers {
    regex: Regex,
    /// The capture group holding the secret; 0 is the whole match.
    group: usize,
    /// A group named `user`: a secret equal to it is a development default.
    user_group: Option<usize>,
    /// The group named `name`, which `skip_names` and `names` read.
    name_group: Option<usize>,
    /// What drops a candidate, compiled when the regex first finds one:
    /// most texts with a rule's keyword hold no match of its regex (a path
    /// with `key` in it, an id with `sk`), and these lists cost three times
    /// the regex to compile.
    filters: OnceLock<Filters>,
}

#[derive(Debug)]
struct Filters {
    allow: Option<Regex>,
    /// A match on a line this finds is dropped (case-insensitive).
    skip_lines: Option<Regex>,
    /// A match whose whole name (group `name`, widened to the identifier
    /// around it, last `.` part) this finds is dropped (case-insensitive).
    skip_names: Option<Regex>,
    /// A match whose name (as for `skip_names`) this does not find is
    /// dropped (case-insensitive).
    names: Option<Regex>,
}

impl Rule {
    fn matchers(&self) -> &Matchers {
        self.matchers.get_or_init(|| {
            compile_matchers(self.builtin_table(), &self.id)
                .unwrap_or_else(|e| panic!("secret-rules.toml: {e}"))
        })
    }

    fn filters(&self) -> &Filters {
        let m = self.matchers();
        m.filters.get_or_init(|| {
            compile_filters(self.builtin_table(), &self.id, m.name_group)
                .unwrap_or_else(|e| panic!("secret-rules.toml: {e}"))
        })
    }

    fn builtin_table(&self) -> &'static dyn TableLike {
        builtin_table(self.builtin.expect("a user rule is compiled as it loads"))
    }
}

/// Why runtime.toml's `[security]` cannot be applied. `file` names the
/// file as the caller shows it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    #[error("{file}: `security` must be a table (`[security]`)")]
    NotATable { file: String },
    #[error("{file}: `security.disable` must be a list of rule ids")]
    DisableNotAList { file: String },
    #[error("{file}: `security.disable`: no rule with id `{id}`")]
    NoSuchRule { file: String, id: String },
    #[error("{file}: `security.rules` must be an array of tables")]
    RulesNotTables { file: String },
    #[error("{file}: `security.rules[{index}]`: {problem}")]
    BadRule {
        file: String,
        index: usize,
        problem: RuleProblem,
    },
    #[error(
        "{file}: `security.rules[{index}]`: rule id `{id}` already exists; choose another id \
         (a built-in can be switched off with `[security] disable = [\"{id}\"]`)"
    )]
    DuplicateId {
        file: String,
        index: usize,
        id: String,
    },
}

/// What is wrong with one `[[security.rules]]` table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleProblem {
    #[error("missing string field `id`")]
    MissingId,
    #[error(
        "rule id `{}` must be non-empty letters, digits, `-` or `_`",
        crate::escape::escape(id)
    )]
    BadId { id: String },
    #[error("rule `{id}`: missing string field `regex`")]
    MissingRegex { id: String },
    #[error("rule `{id}`: `{field}` must be {expected}")]
    WrongType {
        id: String,
        field: &'static str,
        expected: &'static str,
    },
    #[error("rule `{id}`: `per_line` needs `keywords`")]
    PerLineWithoutKeywords { id: String },
    #[error(
        "rule `{id}`: `applies` has `{}`; expected \"input\" or \"output\"",
        crate::escape::escape(value)
    )]
    BadApplies { id: String, value: String },
    #[error("rule `{id}`: invalid `{field}`: {}", regex_error(error))]
    InvalidRegex {
        id: String,
        field: &'static str,
        #[source]
        error: regex::Error,
    },
    #[error("rule `{id}`: `group` is too large")]
    GroupTooLarge { id: String },
    #[error("rule `{id}`: the regex has no capture group {group}")]
    NoSuchGroup { id: String, group: usize },
    #[error("rule `{id}`: `{field}` needs a capture group named `name`")]
    NeedsNameGroup { id: String, field: &'static str },
}

/// A compiled rule set. Cloning is cheap (compiled regexes are shared).
#[derive(Debug, Clone)]
pub struct Rules {
    rules: Vec<Rule>,
    tag_characters: bool,
    bidi_override: bool,
    zero_width_run: bool,
    /// `per_line` rules search only their keywords' lines; off only in
    /// the test that compares both ways.
    windows: bool,
    /// A long text's built-in keywords are found with the index; off only
    /// in the test that compares both ways.
    index: bool,
}

static BUILTIN: OnceLock<Rules> = OnceLock::new();

impl Rules {
    /// The built-in rules, compiled on first use and shared for the life of
    /// the process (the runtime calls the scanner on every tool call).
    pub fn builtin() -> Rules {
        builtin_rules().clone()
    }

    /// The built-in rules plus the user's `[[security.rules]]` and minus
    /// their `[security] disable` list: `security` is runtime.toml's
    /// `security` item, read by [`crate::settings`]; `where_` names the file
    /// in errors. Anything wrong is an error, because silently dropping a
    /// user's rule would let secrets through that they asked to stop.
    pub fn with_user(security: Option<&Item>, where_: &str) -> Result<Rules, RuleError> {
        let mut rules = Rules::builtin();
        rules.apply_user(security, where_)?;
        Ok(rules)
    }

    /// Applies a runtime.toml's `[security]` table to this rule set.
    fn apply_user(&mut self, security: Option<&Item>, where_: &str) -> Result<(), RuleError> {
        let Some(security) = security else {
            return Ok(());
        };
        let file = || where_.to_owned();
        let security = security
            .as_table_like()
            .ok_or_else(|| RuleError::NotATable { file: file() })?;
        if let Some(disable) = security.get("disable") {
            let ids =
                string_list(disable).ok_or_else(|| RuleError::DisableNotAList { file: file() })?;
            for id in ids {
                if !self.disable(&id) {
                    return Err(RuleError::NoSuchRule { file: file(), id });
                }
            }
        }
        if let Some(item) = security.get("rules") {
            let tables =
                tables_of(item).ok_or_else(|| RuleError::RulesNotTables { file: file() })?;
            for (index, t) in tables.into_iter().enumerate() {
                let rule = compile_rule(t).map_err(|problem| RuleError::BadRule {
                    file: file(),
                    index,
                    problem,
                })?;
                if self.has_id(&rule.id) {
                    return Err(RuleError::DuplicateId {
                        file: file(),
                        index,
                        id: rule.id,
                    });
                }
                self.rules.push(rule);
            }
        }
        Ok(())
    }

    fn has_id(&self, id: &str) -> bool {
        [TAG_CHARACTERS, BIDI_OVERRIDE, ZERO_WIDTH_RUN].contains(&id)
            || self.rules.iter().any(|r| r.id == id)
    }

    /// Switches off the rule `id`; whether there was one.
    fn disable(&mut self, id: &str) -> bool {
        match id {
            TAG_CHARACTERS => self.tag_characters = false,
            BIDI_OVERRIDE => self.bidi_override = false,
            ZERO_WIDTH_RUN => self.zero_width_run = false,
            _ => {
                let before = self.rules.len();
                self.rules.retain(|r| r.id != id);
                return self.rules.len() != before;
            }
        }
        true
    }

    /// The ids of every active rule, carriers included, in scan order.
    pub fn ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.rules.iter().map(|r| r.id.as_str()).collect();
        for (on, id) in [
            (self.tag_characters, TAG_CHARACTERS),
            (self.bidi_override, BIDI_OVERRIDE),
            (self.zero_width_run, ZERO_WIDTH_RUN),
        ] {
            if on {
                ids.push(id);
            }
        }
        ids
    }

    /// Every finding in `text` for `target`, ordered by position.
    pub fn scan(&self, text: &str, target: Target) -> Vec<Finding> {
        let mut spans = self.secret_spans(text, Some(target), MAX_FINDINGS);
        spans.extend(self.carrier_spans(text));
        spans.sort_by_key(|s| (s.1, s.2));
        spans.truncate(MAX_FINDINGS);
        let mut lines = LineIndex::new(text);
        spans
            .into_iter()
            .map(|(rule, start, end)| {
                let (line, column) = lines.position(start);
                Finding {
                    rule_id: rule.0.to_owned(),
                    kind: rule.1.to_owned(),
                    start,
                    end,
                    line,
                    column,
                }
            })
            .collect()
    }

    /// `text` with every secret replaced by `[REDACTED:<rule id>]` and every
    /// hidden-instruction character escaped, for anything we store.
    pub fn redact(&self, text: &str) -> String {
        // No cap here: a secret left unredacted because many came before it
        // would be a leak.
        let mut spans = self.secret_spans(text, None, usize::MAX);
        spans.sort_by_key(|s| (s.1, std::cmp::Reverse(s.2)));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for ((id, _), start, end) in spans {
            if start < at {
                // Overlaps a span already replaced (two rules, one secret).
                at = at.max(end);
                continue;
            }
            push_escaping_carriers(&mut out, &text[at..start]);
            out.push_str("[REDACTED:");
            out.push_str(id);
            out.push(']');
            at = end;
        }
        push_escaping_carriers(&mut out, &text[at.min(text.len())..]);
        out
    }

    /// (rule (id, kind), start, end) of each accepted regex match, for the
    /// rules that apply to `target` (every rule when `None`).
    fn secret_spans<'r>(
        &'r self,
        text: &str,
        target: Option<Target>,
        limit: usize,
    ) -> Vec<((&'r str, &'r str), usize, usize)> {
        let bytes = text.as_bytes();
        let mut lower: Option<String> = None;
        let mut out = Vec::new();
        let mut windows: Vec<(usize, usize)> = Vec::new();
        // Searched once, on the first rule that needs it: `Some(None)` when
        // there is no index on this CPU.
        let mut found: Option<Option<Found>> = None;
        for rule in &self.rules {
            let applies = match target {
                Some(Target::Input) => rule.input,
                Some(Target::Output) => rule.output,
                None => rule.input || rule.output,
            };
            if !applies {
                continue;
            }
            windows.clear();
            if !rule.keywords.is_empty() || rule.lowercase {
                let lower = lower.get_or_insert_with(|| text.to_ascii_lowercase());
                let lower = lower.as_bytes();
                if self.index && found.is_none() && lower.len() >= INDEX_MIN {
                    found = Some(keyword_index().map(|index| (index, index.find(lower))));
                }
                // Each keyword's positions from the index, for a built-in rule.
                let indexed = match (&found, rule.builtin) {
                    (Some(Some((index, found))), Some(_)) => Some(
                        rule.keywords
                            .iter()
                            .filter_map(|k| index.keywords.iter().position(|i| i == k))
                            .map(|i| &found[i])
                            .collect::<Vec<_>>(),
                    ),
                    _ => None,
                };
                if !rule.keywords.is_empty() {
                    let per_line = rule.per_line && self.windows;
                    match (indexed, per_line) {
                        (Some(positions), true) => {
                            keyword_lines(
                                lower,
                                positions.iter().map(|p| p.iter().copied()),
                                &mut windows,
                            );
                        }
                        (Some(positions), false) => {
                            if positions.iter().all(|p| p.is_empty()) {
                                continue;
                            }
                        }
                        (None, true) => {
                            keyword_lines(
                                lower,
                                rule.finders.iter().map(|f| f.find_iter(lower)),
                                &mut windows,
                            );
                        }
                        (None, false) => {
                            if !rule.finders.iter().any(|f| f.find(lower).is_some()) {
                                continue;
                            }
                        }
                    }
                    if per_line && windows.is_empty() {
                        continue;
                    }
                }
            }
            if !rule.requires.is_empty() {
                let lower = lower.get_or_insert_with(|| text.to_ascii_lowercase());
                let lower = lower.as_bytes();
                if !rule
                    .requires
                    .iter()
                    .any(|r| memmem::find(lower, r.as_bytes()).is_some())
                {
                    continue;
                }
            }
            if windows.is_empty() {
                windows.push((0, bytes.len()));
            }
            // ASCII lowercasing keeps every byte offset, so spans found in
            // the lowercased text index the original.
            let haystack = match (&lower, rule.lowercase) {
                (Some(l), true) => l.as_bytes(),
                _ => bytes,
            };
            let m_ = rule.matchers();
            let mut locs = m_.regex.capture_locations();
            for &(from, to) in &windows {
                #[cfg(test)]
                SEARCHED.with(|s| s.borrow_mut().push((rule.id.clone(), to - from)));
                // A window ends at a line's end: the text after it cannot
                // change a line-local match (`\b`, `$` see a newline there).
                let window = &haystack[..to];
                let mut at = from;
                while at <= to {
                    let Some(whole) = m_.regex.captures_read_at(&mut locs, window, at) else {
                        break;
                    };
                    at = if whole.is_empty() {
                        whole.end() + 1
                    } else {
                        whole.end()
                    };
                    let group = |i: usize| locs.get(i).map(|(s, e)| s..e);
                    let Some(m) = group(m_.group) else {
                        continue;
                    };
                    let secret = &bytes[m.clone()];
                    if let Some(min) = rule.min_entropy
                        && entropy(secret) < min
                    {
                        continue;
                    }
                    if rule.random_shape && !random_shape(secret) {
                        continue;
                    }
                    let f = rule.filters();
                    if f.allow.as_ref().is_some_and(|a| a.is_match(secret)) {
                        continue;
                    }
                    if let Some(skip) = &f.skip_lines
                        && skip.is_match(line_of(bytes, m.start))
                    {
                        continue;
                    }
                    let name = || {
                        m_.name_group
                            .and_then(group)
                            .map(|n| name_around(bytes, n.start, n.end))
                    };
                    if let Some(names) = &f.names
                        && !name().is_some_and(|n| names.is_match(n))
                    {
                        continue;
                    }
                    if let Some(skip) = &f.skip_names
                        && name().is_some_and(|n| skip.is_match(n))
                    {
                        continue;
                    }
                    if let Some(u) = m_.user_group
                        && group(u).is_some_and(|u| &bytes[u] == secret)
                    {
                        continue;
                    }
                    // A span must not split a UTF-8 character: regexes run over
                    // bytes, and `redact` slices the str.
                    let (start, end) = (floor_char(text, m.start), ceil_char(text, m.end));
                    out.push(((rule.id.as_str(), rule.kind.as_str()), start, end));
                    if out.len() >= limit {
                        return out;
                    }
                }
            }
        }
        out
    }

    fn carrier_spans(&self, text: &str) -> Vec<((&'static str, &'static str), usize, usize)> {
        let mut out = Vec::new();
        if !(self.tag_characters || self.bidi_override || self.zero_width_run) {
            return out;
        }
        let bytes = text.as_bytes();
        // Consecutive carriers of one class form a run; a regex over their
        // UTF-8 bytes finds them without decoding the whole text.
        let mut found = carrier_regex()
            .find_iter(bytes)
            .map(|m| (m.start(), m.end(), classify(&bytes[m.range()])));
        let mut pending = found.next();
        while let Some((start, mut end, class)) = pending {
            let mut count = 1;
            pending = found.next();
            while let Some((s, e, c)) = pending {
                if s != end || c != class {
                    break;
                }
                end = e;
                count += 1;
                pending = found.next();
            }
            match class {
                Carrier::Tag if self.tag_characters => {
                    let after_flag = bytes[..start].ends_with("\u{1F3F4}".as_bytes());
                    if !(after_flag && is_flag_tag_sequence(&text[start..end])) {
                        out.push((
                            (TAG_CHARACTERS, "Unicode tag characters (hidden text)"),
                            start,
                            end,
                        ));
                    }
                }
                Carrier::Bidi if self.bidi_override => {
                    // Each override is its own finding: each reorders text.
                    let mut at = start;
                    for c in text[start..end].chars() {
                        out.push((
                            (BIDI_OVERRIDE, "bidirectional override character"),
                            at,
                            at + c.len_utf8(),
                        ));
                        at += c.len_utf8();
                    }
                }
                Carrier::ZeroWidth if self.zero_width_run && count >= ZERO_WIDTH_RUN_MIN => {
                    out.push(((ZERO_WIDTH_RUN, "run of zero-width characters"), start, end));
                }
                _ => {}
            }
            if out.len() >= MAX_FINDINGS {
                break;
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carrier {
    Tag,
    Bidi,
    ZeroWidth,
}

/// The UTF-8 encodings of every carrier character: tags U+E0000–E007F,
/// bidi U+202A–202E and U+2066–2069, zero-width U+200B–200D,
/// U+2060–2064, U+FEFF, U+180E.
fn carrier_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        build_regex(
            r"\xF3\xA0[\x80\x81][\x80-\xBF]|\xE2\x80[\x8B-\x8D\xAA-\xAE]|\xE2\x81[\xA0-\xA4\xA6-\xA9]|\xEF\xBB\xBF|\xE1\xA0\x8E",
        )
        .expect("carrier regex compiles")
    })
}

fn classify(utf8: &[u8]) -> Carrier {
    match utf8 {
        [0xF3, ..] => Carrier::Tag,
        [0xE2, 0x80, 0xAA..=0xAE] | [0xE2, 0x81, 0xA6..=0xA9] => Carrier::Bidi,
        _ => Carrier::ZeroWidth,
    }
}

/// One built-in rule as build.rs read it: the fields every event needs
/// (which keywords wake it), and its own `[[rule]]` section, parsed for its
/// regexes only when the rule first runs.
pub(crate) struct BuiltinRuleDef {
    id: &'static str,
    kind: &'static str,
    keywords: &'static [&'static str],
    requires: &'static [&'static str],
    lowercase: bool,
    per_line: bool,
    random_shape: bool,
    min_entropy: Option<f64>,
    section: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/secret_rule_defs.rs"));

/// The `[[rule]]` table of built-in rule `index`, parsed on first use.
fn builtin_table(index: usize) -> &'static dyn TableLike {
    static PARSED: OnceLock<Vec<OnceLock<DocumentMut>>> = OnceLock::new();
    let slots = PARSED.get_or_init(|| BUILTIN_RULE_DEFS.iter().map(|_| OnceLock::new()).collect());
    let doc = slots[index].get_or_init(|| {
        BUILTIN_RULE_DEFS[index]
            .section
            .parse()
            .expect("secret-rules.toml is valid TOML")
    });
    doc.get("rule")
        .and_then(tables_of)
        .and_then(|t| t.into_iter().next())
        .expect("a section is one [[rule]] table")
}

pub fn builtin_rules() -> &'static Rules {
    BUILTIN.get_or_init(|| {
        let mut rules = Rules {
            rules: Vec::with_capacity(BUILTIN_RULE_DEFS.len()),
            tag_characters: true,
            bidi_override: true,
            zero_width_run: true,
            windows: true,
            index: true,
        };
        for (i, def) in BUILTIN_RULE_DEFS.iter().enumerate() {
            assert!(!rules.has_id(def.id), "duplicate rule id {}", def.id);
            rules.rules.push(Rule {
                id: def.id.to_owned(),
                kind: def.kind.to_owned(),
                keywords: def.keywords.iter().map(|k| (*k).to_owned()).collect(),
                requires: def.requires.iter().map(|k| (*k).to_owned()).collect(),
                finders: keyword_finders(def.keywords),
                per_line: def.per_line,
                lowercase: def.lowercase,
                min_entropy: def.min_entropy,
                random_shape: def.random_shape,
                input: true,
                output: true,
                matchers: Arc::new(OnceLock::new()),
                builtin: Some(i),
            });
        }
        rules
    })
}

/// The fields a rule may have, in `secret-rules.toml` and in a user's
/// `[[security.rules]]`.
pub const RULE_FIELDS: [&str; 15] = [
    "id",
    "kind",
    "regex",
    "group",
    "keywords",
    "requires",
    "per_line",
    "lowercase",
    "min_entropy",
    "random_shape",
    "allow",
    "skip_lines",
    "skip_names",
    "names",
    "applies",
];

/// A user's rule from its table, its regexes compiled now, so a broken one
/// is an error as it loads (the built-in rules come from `BUILTIN_RULE_DEFS`).
fn compile_rule(t: &dyn TableLike) -> Result<Rule, RuleProblem> {
    let str_field = |k: &str| t.get(k).and_then(Item::as_str).map(str::to_owned);
    let id = str_field("id").ok_or(RuleProblem::MissingId)?;
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(RuleProblem::BadId { id });
    }
    let kind = str_field("kind").unwrap_or_else(|| id.clone());
    if str_field("regex").is_none() {
        return Err(RuleProblem::MissingRegex { id });
    }
    let wrong = |field, expected| RuleProblem::WrongType {
        id: id.clone(),
        field,
        expected,
    };
    // Both are matched in the lowercased text.
    let lowercase_list = |field| -> Result<Vec<String>, RuleProblem> {
        match t.get(field) {
            Some(k) => Ok(string_list(k)
                .ok_or_else(|| wrong(field, "a list of strings"))?
                .into_iter()
                .map(|k| k.to_ascii_lowercase())
                .collect()),
            None => Ok(Vec::new()),
        }
    };
    let keywords = lowercase_list("keywords")?;
    let requires = lowercase_list("requires")?;
    let min_entropy = match t.get("min_entropy") {
        Some(v) => Some(
            v.as_float()
                .or_else(|| v.as_integer().map(|i| i as f64))
                .ok_or_else(|| wrong("min_entropy", "a number"))?,
        ),
        None => None,
    };
    let lowercase = match t.get("lowercase") {
        Some(v) => v
            .as_bool()
            .ok_or_else(|| wrong("lowercase", "true or false"))?,
        None => false,
    };
    let per_line = match t.get("per_line") {
        Some(v) => v
            .as_bool()
            .ok_or_else(|| wrong("per_line", "true or false"))?,
        None => false,
    };
    if per_line && keywords.is_empty() {
        return Err(RuleProblem::PerLineWithoutKeywords { id });
    }
    let random_shape = match t.get("random_shape") {
        Some(v) => v
            .as_bool()
            .ok_or_else(|| wrong("random_shape", "true or false"))?,
        None => false,
    };
    let (input, output) = match t.get("applies") {
        Some(a) => {
            let list = string_list(a).ok_or_else(|| wrong("applies", "a list"))?;
            let mut io = (false, false);
            for s in &list {
                match s.as_str() {
                    "input" => io.0 = true,
                    "output" => io.1 = true,
                    other => {
                        return Err(RuleProblem::BadApplies {
                            id,
                            value: other.to_owned(),
                        });
                    }
                }
            }
            io
        }
        None => (true, true),
    };
    let matchers = compile_matchers(t, &id)?;
    let _ = matchers
        .filters
        .set(compile_filters(t, &id, matchers.name_group)?);
    let finders = keyword_finders(&keywords);
    Ok(Rule {
        id,
        kind,
        keywords,
        requires,
        finders,
        per_line,
        lowercase,
        min_entropy,
        random_shape,
        input,
        output,
        matchers: Arc::new(OnceLock::from(matchers)),
        builtin: None,
    })
}

/// One SIMD substring searcher per keyword.
fn keyword_finders<K: AsRef<[u8]>>(keywords: &[K]) -> Vec<memmem::Finder<'static>> {
    keywords
        .iter()
        .map(|k| memmem::Finder::new(k.as_ref()).into_owned())
        .collect()
}

/// A rule's regexes: `regex` with its groups, `allow`, `skip_lines`,
/// `skip_names` and `names`.
fn compile_matchers(t: &dyn TableLike, id: &str) -> Result<Matchers, RuleProblem> {
    let id = || id.to_owned();
    let pattern = t
        .get("regex")
        .and_then(Item::as_str)
        .ok_or_else(|| RuleProblem::MissingRegex { id: id() })?;
    let regex = build_regex(pattern).map_err(|error| RuleProblem::InvalidRegex {
        id: id(),
        field: "regex",
        error,
    })?;
    let group = match t.get("group") {
        Some(g) => {
            let n = g
                .as_integer()
                .filter(|n| *n >= 0)
                .ok_or_else(|| RuleProblem::WrongType {
                    id: id(),
                    field: "group",
                    expected: "a non-negative integer",
                })?;
            let n = usize::try_from(n).map_err(|_| RuleProblem::GroupTooLarge { id: id() })?;
            if n >= regex.captures_len() {
                return Err(RuleProblem::NoSuchGroup { id: id(), group: n });
            }
            n
        }
        None => secret_group_index(&regex).unwrap_or(0),
    };
    let user_group = regex.capture_names().position(|n| n == Some("user"));
    let name_group = regex.capture_names().position(|n| n == Some("name"));
    Ok(Matchers {
        regex,
        group,
        user_group,
        name_group,
        filters: OnceLock::new(),
    })
}

/// A rule's `allow`, `skip_lines`, `skip_names` and `names`.
fn compile_filters(
    t: &dyn TableLike,
    id: &str,
    name_group: Option<usize>,
) -> Result<Filters, RuleProblem> {
    let allow = regex_list(t, id, "allow", |joined| format!("^(?:{joined})$"))?;
    let skip_lines = regex_list(t, id, "skip_lines", |joined| format!("(?i:{joined})"))?;
    let name_list = |field| -> Result<Option<Regex>, RuleProblem> {
        let list = regex_list(t, id, field, |joined| format!("(?i:{joined})"))?;
        if list.is_some() && name_group.is_none() {
            return Err(RuleProblem::NeedsNameGroup {
                id: id.to_owned(),
                field,
            });
        }
        Ok(list)
    };
    Ok(Filters {
        allow,
        skip_lines,
        skip_names: name_list("skip_names")?,
        names: name_list("names")?,
    })
}

/// A rule's list of regexes (`allow`, `skip_lines`) joined into one, each
/// alternative in its own group, wrapped by `whole`.
fn regex_list(
    t: &dyn TableLike,
    id: &str,
    field: &'static str,
    whole: impl Fn(&str) -> String,
) -> Result<Option<Regex>, RuleProblem> {
    let Some(a) = t.get(field) else {
        return Ok(None);
    };
    let list = string_list(a).ok_or_else(|| RuleProblem::WrongType {
        id: id.to_owned(),
        field,
        expected: "a list of regexes",
    })?;
    let joined = list
        .iter()
        .map(|p| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    build_regex(&whole(&joined))
        .map(Some)
        .map_err(|error| RuleProblem::InvalidRegex {
            id: id.to_owned(),
            field,
            error,
        })
}

/// The name a `name` group found, widened to the whole identifier it sits
/// in (`next` + `Token`, `KmsKey` + `Id`), and of a dotted path only the
/// last part (`spring.datasource.password` is `password`), without leading
/// dashes (`--client-token`).
fn name_around(bytes: &[u8], start: usize, end: usize) -> &[u8] {
    let ident = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
    let start = bytes[..start]
        .iter()
        .rposition(|b| !ident(b))
        .map_or(0, |i| i + 1);
    let end = bytes[end..]
        .iter()
        .position(|b| !ident(b))
        .map_or(bytes.len(), |i| end + i);
    let name = &bytes[start..end];
    let name = match name.iter().rposition(|&b| b == b'.') {
        Some(dot) if dot + 1 < name.len() => &name[dot + 1..],
        _ => name,
    };
    let dashes = name.iter().take_while(|&&b| b == b'-').count();
    &name[dashes..]
}

/// How far apart two keyword lines may be and still be searched as one
/// window: one regex search over a few lines between them costs less than
/// starting a second.
const WINDOW_GAP: usize = 256;

/// The lines of `lower` that hold an occurrence of a keyword, as sorted,
/// merged `(from, to)` byte windows: `from` is the newline before the line
/// (so a match may start on it, as `[\n:]_auth` or `\ssig=` do), `to` the
/// end of the line. `occurrences` yields each keyword's positions in
/// ascending order. Windows covering most of the text become one.
fn keyword_lines<I, P>(lower: &[u8], occurrences: I, out: &mut Vec<(usize, usize)>)
where
    I: IntoIterator<Item = P>,
    P: IntoIterator<Item = usize>,
{
    for positions in occurrences {
        let mut covered = 0;
        for at in positions {
            if at < covered {
                continue;
            }
            let from = memchr::memrchr(b'\n', &lower[..at]).unwrap_or(0);
            let to = memchr::memchr(b'\n', &lower[at..]).map_or(lower.len(), |i| at + i);
            out.push((from, to));
            covered = to;
        }
    }
    if out.len() > 1 {
        out.sort_unstable();
        let mut merged = 0;
        for i in 1..out.len() {
            if out[i].0 <= out[merged].1 + WINDOW_GAP {
                out[merged].1 = out[merged].1.max(out[i].1);
            } else {
                merged += 1;
                out[merged] = out[i];
            }
        }
        out.truncate(merged + 1);
    }
    let searched: usize = out.iter().map(|(f, t)| t - f).sum();
    if searched > lower.len() / 2 {
        out.clear();
        out.push((0, lower.len()));
    }
}

/// From this length on, a text's built-in keywords are all found in one
/// pass ([`KeywordIndex`]) instead of one substring search per keyword.
const INDEX_MIN: usize = 16 << 10;

/// Keywords of at least this many bytes go into the multi-keyword search;
/// shorter ones (`gh`, `sk`, `q~`) would make it stop at nearly every byte
/// and keep their own substring search.
const INDEX_KEYWORD_MIN: usize = 3;

/// How many keywords one SIMD multi-keyword searcher (Teddy) holds: more
/// share its few buckets and slow every candidate down; measured, groups
/// of 12 to 16 cost the least over a MiB of code or config.
const INDEX_GROUP: usize = 14;

/// Every keyword of the built-in rules, and searchers that find all their
/// occurrences in a text in a few passes.
struct KeywordIndex {
    /// Distinct lowercase keywords; a built-in rule's `keyword_ids` index this.
    keywords: Vec<String>,
    /// Leftmost-first searchers over the long keywords, longest first within
    /// a group, each pattern with the keywords it implies at its start
    /// (itself and every keyword that is a prefix of it).
    groups: Vec<(aho_corasick::packed::Searcher, Vec<Vec<usize>>)>,
    /// The short keywords, each searched alone, and whether a `per_line`
    /// rule needs all its positions (otherwise the first says enough).
    short: Vec<(usize, memmem::Finder<'static>, bool)>,
}

impl KeywordIndex {
    fn new(keywords: Vec<String>, positions: &[bool]) -> Option<KeywordIndex> {
        let mut long: Vec<usize> = (0..keywords.len())
            .filter(|&k| keywords[k].len() >= INDEX_KEYWORD_MIN)
            .collect();
        long.sort_by_key(|&k| std::cmp::Reverse(keywords[k].len()));
        let mut groups = Vec::new();
        for chunk in long.chunks(INDEX_GROUP) {
            let searcher = aho_corasick::packed::Config::new()
                .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
                .builder()
                .extend(chunk.iter().map(|&k| &keywords[k]))
                .build()?;
            let implies = chunk
                .iter()
                .map(|&k| {
                    (0..keywords.len())
                        .filter(|&p| keywords[k].starts_with(keywords[p].as_str()))
                        .collect()
                })
                .collect();
            groups.push((searcher, implies));
        }
        let short = (0..keywords.len())
            .filter(|&k| keywords[k].len() < INDEX_KEYWORD_MIN)
            .map(|k| {
                let finder = memmem::Finder::new(keywords[k].as_bytes()).into_owned();
                (k, finder, positions[k])
            })
            .collect();
        Some(KeywordIndex {
            keywords,
            groups,
            short,
        })
    }

    /// Each keyword's positions in `lower`, ascending (of a short keyword no
    /// `per_line` rule has, only the first). A searcher reports
    /// one pattern per start position (the longest, as it comes first), so
    /// the search resumes one byte after each start rather than after its
    /// end, and a reported pattern also stands for the keywords that are
    /// its prefixes: no occurrence of any keyword is hidden by another.
    fn find(&self, lower: &[u8]) -> Vec<Vec<usize>> {
        let mut found = vec![Vec::new(); self.keywords.len()];
        for (searcher, implies) in &self.groups {
            let mut at = 0;
            while let Some(m) = searcher.find_in(lower, aho_corasick::Span::from(at..lower.len())) {
                for &k in &implies[m.pattern().as_usize()] {
                    found[k].push(m.start());
                }
                at = m.start() + 1;
            }
        }
        for (k, finder, all) in &self.short {
            let mut at = 0;
            while let Some(i) = finder.find(&lower[at..]) {
                found[*k].push(at + i);
                if !all {
                    break;
                }
                at += i + 1;
            }
        }
        for positions in &mut found {
            positions.sort_unstable();
            positions.dedup();
        }
        found
    }
}

/// The index and each of its keywords' positions in one text.
type Found = (&'static KeywordIndex, Vec<Vec<usize>>);

/// The built-in rules' keyword index, built on the first long text; `None`
/// where the CPU has no SIMD searcher (each keyword is then searched alone).
fn keyword_index() -> Option<&'static KeywordIndex> {
    static INDEX: OnceLock<Option<KeywordIndex>> = OnceLock::new();
    INDEX
        .get_or_init(|| {
            let rules = builtin_rules();
            let mut keywords: Vec<String> = Vec::new();
            let mut positions: Vec<bool> = Vec::new();
            for rule in &rules.rules {
                for k in &rule.keywords {
                    match keywords.iter().position(|have| have == k) {
                        Some(i) => positions[i] |= rule.per_line,
                        None => {
                            keywords.push(k.clone());
                            positions.push(rule.per_line);
                        }
                    }
                }
            }
            KeywordIndex::new(keywords, &positions)
        })
        .as_ref()
}

#[cfg(test)]
thread_local! {
    /// (rule id, bytes) of every window a rule's regex searched.
    static SEARCHED: std::cell::RefCell<Vec<(String, usize)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The line of `bytes` that holds offset `at`, without its newline.
fn line_of(bytes: &[u8], at: usize) -> &[u8] {
    let start = bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let end = bytes[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| at + i);
    &bytes[start..end]
}

/// Byte regexes with ASCII semantics: Unicode-aware `\b` would push the
/// engine off its fast path on any non-ASCII text, and secrets are ASCII.
fn build_regex(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(4 << 20)
        .build()
}

/// A regex error in one line: the regex crate's own message draws the
/// pattern with a caret over several lines, which a deny reason or a
/// `doctor` line would show as escapes.
fn regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    last.trim().trim_start_matches("error: ").to_owned()
}

fn secret_group_index(regex: &Regex) -> Option<usize> {
    regex.capture_names().position(|n| n == Some("secret"))
}

fn string_list(item: &Item) -> Option<Vec<String>> {
    item.as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn tables_of(item: &Item) -> Option<Vec<&dyn TableLike>> {
    if let Some(aot) = item.as_array_of_tables() {
        return Some(aot.iter().map(|t| t as &dyn TableLike).collect());
    }
    item.as_array()?
        .iter()
        .map(|v| v.as_inline_table().map(|t| t as &dyn TableLike))
        .collect()
}

/// Shannon entropy in bits per byte.
pub fn entropy(s: &[u8]) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in s {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Whether `s` looks machine-generated rather than written: it has a digit
/// and a letter, and some segment of [`RANDOM_SEGMENT_MIN`] bytes or more
/// (split at `-_./:@,` and spaces) changes between letters and digits or
/// symbols [`RANDOM_SEGMENT_CHANGES`] times or more
/// (`prod-db-credentials-2024`, `user-settings-v2` and `pkcs15token` are
/// words, `a8Kd93jQ…` is not). It must also not count up or down
/// (`0123456789abcdef` and `abcd1234defg5678` are fixtures, not keys).
pub fn random_shape(s: &[u8]) -> bool {
    if !(s.iter().any(u8::is_ascii_digit) && s.iter().any(u8::is_ascii_alphabetic)) {
        return false;
    }
    if counts_in_steps(s) {
        return false;
    }
    s.split(|b| matches!(b, b'-' | b'_' | b'.' | b'/' | b':' | b'@' | b',' | b' '))
        .any(|seg| {
            seg.len() >= RANDOM_SEGMENT_MIN
                && seg
                    .windows(2)
                    .filter(|w| w[0].is_ascii_alphabetic() != w[1].is_ascii_alphabetic())
                    .count()
                    >= RANDOM_SEGMENT_CHANGES
        })
}

/// The shortest stretch between separators that [`random_shape`] takes
/// for machine-made: shorter ones are words, versions and years.
const RANDOM_SEGMENT_MIN: usize = 8;

/// How often such a segment must change between letters and the rest:
/// `pkcs15token` and `utf8string` are words around a number.
const RANDOM_SEGMENT_CHANGES: usize = 3;

/// Whether most neighbouring bytes differ by exactly one (`abcdef`, `987`).
fn counts_in_steps(s: &[u8]) -> bool {
    let steps = s.windows(2).filter(|w| w[0].abs_diff(w[1]) == 1).count();
    steps * 2 > s.len()
}

fn is_tag(c: char) -> bool {
    ('\u{E0000}'..='\u{E007F}').contains(&c)
}

/// England, Scotland and Wales flags: U+1F3F4, two to six tag letters or
/// digits, then CANCEL TAG. The only ordinary use of tag characters.
fn is_flag_tag_sequence(run: &str) -> bool {
    let tags: Vec<char> = run.chars().collect();
    let Some((&last, body)) = tags.split_last() else {
        return false;
    };
    last == '\u{E007F}'
        && (2..=6).contains(&body.len())
        && body.iter().all(|&c| {
            ('\u{E0030}'..='\u{E0039}').contains(&c) || ('\u{E0061}'..='\u{E007A}').contains(&c)
        })
}

fn is_bidi_override(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn is_zero_width(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{180E}')
}

fn push_escaping_carriers(out: &mut String, s: &str) {
    if s.is_ascii() {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        if is_tag(c) || is_bidi_override(c) || is_zero_width(c) {
            out.push_str(&format!("\\u{{{:X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Byte offset → (line, column), for offsets asked in increasing order.
struct LineIndex<'a> {
    text: &'a str,
    at: usize,
    line: usize,
    line_start: usize,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        LineIndex {
            text,
            at: 0,
            line: 1,
            line_start: 0,
        }
    }

    fn position(&mut self, offset: usize) -> (usize, usize) {
        if offset < self.at {
            *self = LineIndex::new(self.text);
        }
        let bytes = self.text.as_bytes();
        for (i, &b) in bytes[self.at..offset].iter().enumerate() {
            if b == b'\n' {
                self.line += 1;
                self.line_start = self.at + i + 1;
            }
        }
        self.at = offset;
        let column = self.text[self.line_start..offset].chars().count() + 1;
        (self.line, column)
    }
}

#[cfg(test)]
mod tests {
    //! Every rule has a positive and a negative case. Secrets are built by
    //! concatenation so this file itself never looks like it holds one (the
    //! project's own source must scan clean, and push protection agrees).

    use super::*;

    fn j(parts: &[&str]) -> String {
        parts.concat()
    }

    fn ids(text: &str, target: Target) -> Vec<String> {
        Rules::builtin()
            .scan(text, target)
            .into_iter()
            .map(|f| f.rule_id)
            .collect()
    }

    #[track_caller]
    fn hit(rule: &str, text: &str) {
        for target in [Target::Input, Target::Output] {
            let found = ids(text, target);
            assert!(
                found.iter().any(|f| f == rule),
                "{rule} should match {text:?} ({target:?}); found {found:?}"
            );
        }
    }

    #[track_caller]
    fn miss(text: &str) {
        for target in [Target::Input, Target::Output] {
            let found = ids(text, target);
            assert!(
                found.is_empty(),
                "{text:?} should be clean ({target:?}); found {found:?}"
            );
        }
    }

    /// A fixed pseudo-random alphanumeric string; the same on every run.
    fn noise(n: usize, seed: u64) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                A[(x % A.len() as u64) as usize] as char
            })
            .collect()
    }

    /// [`noise`] over another alphabet.
    fn noise_of(alphabet: &[u8], n: usize, seed: u64) -> String {
        noise(n, seed)
            .bytes()
            .map(|b| alphabet[b as usize % alphabet.len()] as char)
            .collect()
    }

    fn hex(n: usize, seed: u64) -> String {
        noise_of(b"0123456789abcdef", n, seed)
    }

    fn letters(n: usize, seed: u64) -> String {
        noise_of(
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
            n,
            seed,
        )
    }

    fn base64(n: usize, seed: u64) -> String {
        noise_of(
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            n,
            seed,
        )
    }

    /// The rule that reports first in `text`, on both sides.
    #[track_caller]
    fn first(rule: &str, text: &str) {
        for target in [Target::Input, Target::Output] {
            let found = ids(text, target);
            assert_eq!(
                found.first().map(String::as_str),
                Some(rule),
                "{text:?} ({target:?}): {found:?}"
            );
        }
    }

    #[test]
    fn builtin_rules_compile_and_every_one_is_tested_below() {
        // Built-in regexes compile on first use: compile every one here.
        for rule in &builtin_rules().rules {
            let m = rule.matchers();
            assert!(m.group < m.regex.captures_len(), "{}", rule.id);
            // And the filters, which compile on a rule's first candidate.
            let _ = rule.filters();
        }
        let ids = Rules::builtin()
            .ids()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>();
        let tested = [
            "aws-access-key-id",
            "aws-secret-access-key",
            "gcp-api-key",
            "gcp-oauth-client-secret",
            "gcp-oauth-access-token",
            "azure-storage-key",
            "azure-sas-token",
            "azure-ad-client-secret",
            "github-token",
            "gitlab-token",
            "bitbucket-token",
            "npm-token",
            "npmrc-auth-token",
            "pypi-token",
            "rubygems-token",
            "crates-io-token",
            "nuget-api-key",
            "docker-hub-token",
            "slack-token",
            "slack-webhook",
            "stripe-secret-key",
            "twilio-api-key",
            "twilio-auth-token",
            "sendgrid-api-key",
            "mailgun-api-key",
            "mailgun-private-key",
            "shopify-token",
            "atlassian-api-token",
            "datadog-api-key",
            "heroku-api-key",
            "heroku-platform-token",
            "digitalocean-token",
            "linear-api-key",
            "notion-token",
            "huggingface-token",
            "openai-api-key",
            "anthropic-api-key",
            "private-key-block",
            "putty-private-key",
            "age-secret-key",
            "jwt",
            "url-password",
            "dsn-password",
            "connection-string-password",
            "bearer-token",
            "secret-assignment",
            "secret-assignment-env",
            "secret-assignment-inline",
            TAG_CHARACTERS,
            BIDI_OVERRIDE,
            ZERO_WIDTH_RUN,
        ];
        assert_eq!(
            ids, tested,
            "a new rule needs a positive and a negative test here"
        );
    }

    #[test]
    fn aws_access_key_id() {
        hit(
            "aws-access-key-id",
            &j(&["key ", "AKIA", "Z7Q4M2XJ5PRT3LKB", " done"]),
        );
        hit("aws-access-key-id", &j(&["ASIA", "Y3N6B2V7C4X5Z2QW"]));
        miss(&j(&["AKIA", "IOSFODNN7", "EXAMPLE"])); // AWS's published example
        miss(&j(&["AKIA", "XXXXXXXXXXXXXXXX"]));
        miss("AKIAsmall and BAKIAZ7Q4M2XJ5PRT3LKB glued");
    }

    #[test]
    fn aws_secret_access_key() {
        let s = j(&["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYzq7Jd93kLm"]);
        hit(
            "aws-secret-access-key",
            &format!("aws_secret_access_key = {s}\n"),
        );
        hit(
            "aws-secret-access-key",
            &format!("secretAccessKey: \"{s}\""),
        );
        miss(&j(&[
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/",
            "bPxRfiCYEXAMPLEKEY",
        ]));
        miss("aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}");
    }

    #[test]
    fn github_token() {
        hit("github-token", &j(&["ghp", "_", &noise(36, 1)]));
        hit(
            "github-token",
            &j(&["github_pat", "_", &noise(22, 2), "_", &noise(59, 3)]),
        );
        miss(&j(&["ghp", "_", &"x".repeat(36)]));
        miss("ghp_short and gh_pages");
    }

    #[test]
    fn gitlab_token() {
        hit("gitlab-token", &j(&["glpat", "-", &noise(20, 4)]));
        miss(&j(&["glpat", "-", "xxxxxxxxxxxxxxxxxxxx"]));
        miss("glpat-short");
    }

    #[test]
    fn slack_token_and_webhook() {
        hit(
            "slack-token",
            &j(&[
                "xoxb",
                "-",
                "2400189537",
                "-",
                "5371045896",
                "-",
                &noise(24, 5),
            ]),
        );
        miss("xoxb-not-a-token");
        hit(
            "slack-webhook",
            &j(&[
                "https://hooks.slack",
                ".com/services/",
                "T0A1B2C3D/",
                "B9Z8Y7X6W/",
                &noise(24, 6),
            ]),
        );
        miss("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX");
    }

    #[test]
    fn stripe_secret_key() {
        hit("stripe-secret-key", &j(&["sk", "_live_", &noise(24, 7)]));
        hit("stripe-secret-key", &j(&["rk", "_test_", &noise(24, 8)]));
        miss(&j(&["pk", "_live_", &noise(24, 9)])); // publishable keys are public
        miss(&j(&["sk", "_live_", "xxxxxxxxxxxxxxxxxxxxxxxx"]));
    }

    #[test]
    fn openai_api_key() {
        hit(
            "openai-api-key",
            &j(&["sk-", &noise(20, 10), "T3Blbk", "FJ", &noise(20, 11)]),
        );
        hit("openai-api-key", &j(&["sk-proj-", &noise(64, 12)]));
        miss("sk-learn is a library; sk-proj-short");
    }

    #[test]
    fn anthropic_api_key() {
        hit(
            "anthropic-api-key",
            &j(&["sk-ant-", "api03-", &noise(93, 13), "AA"]),
        );
        miss("sk-ant-api03-short");
        let found = ids(&j(&["sk-ant-", "api03-", &noise(93, 14)]), Target::Input);
        assert!(!found.contains(&"openai-api-key".to_owned()), "{found:?}");
    }

    #[test]
    fn private_key_block() {
        let key = j(&[
            "-----BEGIN OPENSSH ",
            "PRIVATE KEY-----\n",
            &noise(70, 15),
            "\n",
            &noise(70, 16),
            "\n",
            "-----END OPENSSH ",
            "PRIVATE KEY-----\n",
        ]);
        hit("private-key-block", &key);
        // JSON-escaped newlines, as a key pasted inside a JSON string.
        hit(
            "private-key-block",
            &j(&[
                "\"-----BEGIN RSA ",
                "PRIVATE KEY-----\\n",
                &noise(64, 17),
                "\\n\"",
            ]),
        );
        // A PEM parser's marker constant is not a key.
        miss("if line == \"-----BEGIN RSA PRIVATE KEY-----\" { start = true; }");
        miss("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n");
    }

    #[test]
    fn private_key_redaction_covers_every_line() {
        let body2 = noise(70, 19);
        let key = j(&[
            "before\n-----BEGIN EC ",
            "PRIVATE KEY-----\n",
            &noise(64, 18),
            "\n",
            &body2,
            "\n",
            "-----END EC ",
            "PRIVATE KEY-----\nafter",
        ]);
        let red = Rules::builtin().redact(&key);
        assert!(!red.contains(&body2), "{red}");
        assert_eq!(red, "before\n[REDACTED:private-key-block]\nafter");
    }

    #[test]
    fn jwt() {
        let t = j(&[
            "eyJhbGciOiJSUzI1NiJ9",
            ".",
            "eyJzdWIiOiJhbGljZSIsImV4cCI6MTcwMH0",
            ".",
            &noise(43, 20),
        ]);
        hit("jwt", &format!("token {t} end"));
        miss(&j(&[
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
            ".",
            "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ",
            ".",
            "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        ]));
        miss("eyJhbGciOiJIUzI1NiJ9 alone is only a header");
    }

    #[test]
    fn url_password() {
        hit(
            "url-password",
            &j(&["postgres://app:", "s3cr3t-Pa55", "@db.internal:5432/app"]),
        );
        hit(
            "url-password",
            &j(&["https://bot:", "ghx", "Tok3n", "@github.com/org/repo.git"]),
        );
        miss("postgres://postgres:postgres@localhost:5432/test");
        miss("postgres://user:password@localhost/db and mysql://root:${DB_PASSWORD}@db/x");
        miss("redis://:{password}@host and http://[::1]:8080/path and ssh://git@github.com/x");
        miss("https://example.com:8080/a@b");
    }

    #[test]
    fn bearer_token() {
        hit(
            "bearer-token",
            &j(&["Authorization: Bearer ", &noise(40, 21)]),
        );
        miss("Authorization: Bearer $TOKEN");
        miss("the bearer of this letter is expected-to-arrive-tomorrow");
    }

    #[test]
    fn secret_assignment_quoted() {
        hit(
            "secret-assignment",
            &j(&["api_key = \"", &noise(32, 22), "\""]),
        );
        hit(
            "secret-assignment",
            &j(&["{\"clientSecret\": \"", &noise(28, 23), "\"}"]),
        );
        hit(
            "secret-assignment",
            &j(&["const API_KEY: &str = \"", &noise(32, 24), "\";"]),
        );
        hit(
            "secret-assignment",
            &j(&["token := \"", "8f3a9c1e7b2d4f6a", "0c9e8d7f6a5b4c3d", "\""]),
        );
        miss("api_key = \"your-api-key-here\"");
        miss("secret_name = \"prod-db-credentials-2024\"");
        miss("let token = lexer.next_token_or_default_value();");
        miss("password = \"aaaaaaaaaaaaaaaaaaaa1\"");
    }

    #[test]
    fn secret_assignment_env() {
        hit(
            "secret-assignment-env",
            &j(&["export DB_PASSWORD=", &noise(24, 25), "\n"]),
        );
        hit(
            "secret-assignment-env",
            &j(&["session_key: ", &noise(32, 26)]),
        );
        miss("TOKENIZERS_PARALLELISM=false\nMAX_TOKENS=4096\n");
        miss("GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}");
    }

    #[test]
    fn gcp_keys() {
        first(
            "gcp-api-key",
            &j(&["const k = \"AI", "za", &noise(35, 30), "\";"]),
        );
        miss(&j(&["AI", "za", &"x".repeat(35)]));
        miss("AIzaShort");
        first(
            "gcp-oauth-client-secret",
            &j(&["GOCS", "PX-", &noise(28, 31)]),
        );
        miss("GOCSPX-xxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        first(
            "gcp-oauth-access-token",
            &j(&["Authorization: ya", "29.", &noise(60, 32)]),
        );
        miss("ya29.short");
    }

    #[test]
    fn azure_storage_key_and_sas() {
        let conn = j(&[
            "DefaultEndpointsProtocol=https;AccountName=acme;Account",
            "Key=",
            &base64(86, 33),
            "==;EndpointSuffix=core.windows.net",
        ]);
        first("azure-storage-key", &conn);
        first(
            "azure-storage-key",
            &j(&[
                "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;Shared",
                "AccessKey=",
                &base64(43, 34),
                "=",
            ]),
        );
        // Azurite's published development key.
        miss(&j(&[
            "Account",
            "Key=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        ]));
        miss("AccountKey=<your-account-key>");
        let sas = j(&[
            "https://acme.blob.core.windows.net/c?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2030-01-01T00:00:00Z&spr=https&s",
            "ig=",
            &noise(43, 35),
            "%3D",
        ]);
        first("azure-sas-token", &sas);
        miss("https://x.blob.core.windows.net/c?sv=2022-11-02&sig=REDACTED");
    }

    #[test]
    fn azure_ad_client_secret() {
        first(
            "azure-ad-client-secret",
            &j(&["client_secret: ", &noise(3, 36), "8Q", "~", &noise(34, 37)]),
        );
        miss("the path ~/x and abc8Q~short");
    }

    #[test]
    fn bitbucket_and_atlassian_tokens() {
        first("bitbucket-token", &j(&["AT", "BB", &noise(32, 38)]));
        first(
            "bitbucket-token",
            &j(&["ATCT", "T3xFfGN0", &noise(120, 39)]),
        );
        miss("ATBBxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        first(
            "atlassian-api-token",
            &j(&["ATAT", "T3xFfGF0", &noise(180, 40), "=", &hex(8, 41)]),
        );
        miss("ATATT3 is a prefix");
    }

    #[test]
    fn package_registry_tokens() {
        first(
            "npm-token",
            &j(&["ENV NPM_TOKEN=", "np", "m_", &noise(36, 42)]),
        );
        miss(&j(&["np", "m_", &"x".repeat(36)]));
        miss("npm_config_registry and npm_lifecycle_event");
        first(
            "npmrc-auth-token",
            &j(&[
                "//registry.npmjs.org/:_auth",
                "Token=",
                &noise(8, 43),
                "-",
                &hex(4, 44),
                "-4",
                &hex(3, 45),
                "-a",
                &hex(3, 46),
                "-",
                &hex(12, 47),
            ]),
        );
        miss("//registry.npmjs.org/:_authToken=${NPM_TOKEN}");
        first(
            "pypi-token",
            &j(&["pypi", "-AgEIcHlwaS5vcmc", &noise(70, 48)]),
        );
        miss("pypi-AgEIcHlwaS5vcmc");
        first("rubygems-token", &j(&["ruby", "gems_", &hex(48, 49)]));
        miss("rubygems_is_a_word");
        first("crates-io-token", &j(&["token = c", "io", &noise(32, 50)]));
        miss("ciocolatamolefinabrunamoltobuonaesquisitax");
        first(
            "nuget-api-key",
            &j(&[
                "o",
                "y2",
                &noise_of(b"abcdefghijklmnopqrstuvwxyz0123456789", 43, 51),
            ]),
        );
        miss("oy2short");
        first("docker-hub-token", &j(&["dckr", "_pat_", &noise(27, 52)]));
        miss("dckr_pat_short");
    }

    #[test]
    fn saas_tokens() {
        first(
            "slack-token",
            &j(&[
                "xa",
                "pp-1-A0",
                &noise(9, 53).to_uppercase(),
                "-1234567890123-",
                &hex(64, 54),
            ]),
        );
        first("stripe-secret-key", &j(&["wh", "sec_", &noise(32, 55)]));
        first("twilio-api-key", &j(&["S", "K", &hex(32, 56)]));
        miss(&j(&["S", "K", &"0".repeat(32)]));
        first(
            "twilio-auth-token",
            &j(&["TWILIO_AUTH", "_TOKEN=", &hex(32, 57)]),
        );
        hit(
            "twilio-auth-token",
            &j(&[
                "Client(\"A",
                "C",
                &hex(32, 58),
                "\", \"",
                &hex(32, 59),
                "\")",
            ]),
        );
        miss("twilio_auth_token = os.environ['TWILIO_AUTH_TOKEN']");
        first(
            "sendgrid-api-key",
            &j(&["S", "G.", &noise(22, 60), ".", &noise(43, 61)]),
        );
        miss("SG.short.also");
        first("mailgun-api-key", &j(&["ke", "y-", &hex(32, 62)]));
        first(
            "mailgun-private-key",
            &j(&["mailgun ", &hex(32, 63), "-", &hex(8, 64), "-", &hex(8, 65)]),
        );
        miss("key-value store");
        first("shopify-token", &j(&["sh", "pat_", &hex(32, 66)]));
        first("shopify-token", &j(&["sh", "pss_", &hex(32, 67)]));
        miss("shpat_short");
        first("datadog-api-key", &j(&["DD_API", "_KEY=", &hex(32, 68)]));
        first(
            "datadog-api-key",
            &j(&["datadog_app", "_key: ", &hex(40, 69)]),
        );
        miss("DD_API_KEY=${DD_API_KEY}");
        first(
            "heroku-api-key",
            &j(&[
                "HEROKU_API",
                "_KEY=",
                &hex(8, 70),
                "-",
                &hex(4, 71),
                "-",
                &hex(4, 72),
                "-",
                &hex(4, 73),
                "-",
                &hex(12, 74),
            ]),
        );
        miss("heroku_app_name = my-app-1234");
        first(
            "heroku-platform-token",
            &j(&["HR", "KU-AA", &noise(58, 75)]),
        );
        first("digitalocean-token", &j(&["do", "p_v1_", &hex(64, 76)]));
        first("digitalocean-token", &j(&["do", "o_v1_", &hex(64, 77)]));
        miss("dop_v1_short");
        first("linear-api-key", &j(&["li", "n_api_", &noise(40, 78)]));
        miss("lin_api_short");
        first("notion-token", &j(&["secr", "et_", &noise(43, 79)]));
        first("notion-token", &j(&["nt", "n_", &noise(46, 80)]));
        miss("secret_key_base_for_the_application_server_side");
        first("huggingface-token", &j(&["h", "f_", &letters(34, 81)]));
        miss("hf_hub_download and hf_transfer");
    }

    #[test]
    fn putty_and_age_keys() {
        let ppk = j(&[
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 2\n",
            &base64(64, 82),
            "\n",
            &base64(4, 83),
            "\nPrivate",
            "-Lines: 1\n",
            &base64(44, 84),
            "\nPrivate-MAC: ",
            &hex(64, 85),
            "\n",
        ]);
        first("putty-private-key", &ppk);
        miss("Private-Lines: 1\nsee the docs\n");
        first(
            "age-secret-key",
            &j(&[
                "AGE-SECRET",
                "-KEY-1",
                &noise_of(b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58, 86),
            ]),
        );
        miss("AGE-SECRET-KEY-1 is the prefix");
    }

    #[test]
    fn database_dsn_and_connection_string() {
        first(
            "url-password",
            &j(&[
                "mongodb+srv://app:",
                &noise(16, 87),
                "@cluster0.abcde.mongodb.net/db",
            ]),
        );
        first(
            "url-password",
            &j(&["redis://:", &noise(20, 88), "@cache:6379/0"]),
        );
        first(
            "url-password",
            &j(&["mysql://root:", "Xk9mP2vL", "@db:3306/app"]),
        );
        first(
            "dsn-password",
            &j(&[
                "dsn := \"app:",
                &noise(16, 89),
                "@tcp(db:3306)/app?parseTime=true\"",
            ]),
        );
        miss("root:password@tcp(localhost:3306)/test and u:${DB_PASS}@tcp(db)/x");
        first(
            "connection-string-password",
            &j(&[
                "Server=db;Database=app;User Id=sa;Pass",
                "word=",
                &noise(18, 90),
                ";",
            ]),
        );
        first(
            "connection-string-password",
            &j(&[
                "jdbc:postgresql://db:5432/app?user=app&pass",
                "word=",
                &noise(18, 91),
            ]),
        );
        miss("Server=db;User Id=sa;Password=<your-password>;");
        miss("Server=db;User Id=sa;Password=${DB_PASSWORD};");
        miss("https://x.test/?password=reset-requested");
    }

    #[test]
    fn generic_secrets_in_many_languages() {
        let v = || noise(40, 92);
        for text in [
            j(&[
                "SECRET",
                "_KEY = 'django-insecure-",
                &noise(12, 93),
                "#(",
                &noise(20, 94),
                "'",
            ]),
            j(&[
                "export const STRIPE_WEBHOOK_SIGNING = { api",
                "Key: \"",
                &v(),
                "\" };",
            ]),
            j(&["const HMAC", "_KEY: &[u8] = b\"", &hex(64, 95), "\";"]),
            j(&["  \"Client", "Secret\": \"", &v(), "\","]),
            j(&["ENV API_TO", "KEN ", &v()]),
            j(&["ARG SERVICE_PASS", "WORD=", &v()]),
            j(&["    - \"DB_PASS", "WORD=", &v(), "\""]),
            j(&["spring.datasource.pass", "word=", &v()]),
            j(&["private static final String API_KEY = \"", &v(), "\";"]),
            j(&["  client_secret: ", &v()]),
        ] {
            let found = ids(&text, Target::Output);
            assert!(
                found.iter().any(|f| f.starts_with("secret-assignment")),
                "{text:?}: {found:?}"
            );
        }
        for text in [
            "api_key = \"user-settings-v2-cache\"",
            "(&rfc2985::PKCS_9_AT_PKCS_15_TOKEN, \"pkcs-9-at-pkcs15Token\"),",
            "SECRET_KEY = os.environ['SECRET_KEY']",
            "key = \"0123456789abcdef0123\"",
            "\"integrity\": \"sha512-Yp8Ql2Uq0Nb6yZ3B1KxqXc4vYpE0mS8wA2tR1oHn3LfQe==\"",
            "checksum = \"4e3c1f2a9b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f\"",
            "public_key = \"MCowBQYDK2VwAyEA9k3jH2sLx0QmZp8vRt6yWn4cBf1aUe7o\"",
            "password: ENC[AES256_GCM,data:Zm9vYmFy1234,iv:abcd,type:str]",
            "token = \"{{ vault_token }}\"",
            "SECRET_KEY=changeme",
            "api_key: <your-api-key-here>",
            "test_secret = \"k3Jd9sLq2Mx8Zp4Tn7Vb\"",
            "API_TOKEN=xxxxxxxxxxxxxxxxxxxxxxxx",
            // Names of identifiers, references and cursors; code; dictionary keys.
            "\"KmsKeyId\": \"arn:aws:kms:us-east-1:123456789012:key/f7bc0f8e-1a3a-4ace-9faa\"",
            "\"NextToken\": \"77X1ebypsI7os+X2lhHsZLGNCDK3nNGpwRdFpicSOHgcX1/QMoniUAKcpR3kj3ts3P\"",
            "\"ClientToken\": \"5236cffc-ee13-4a32-bb5b-388d9da09d96\"",
            "    tokens = antlr4.CommonTokenStream(lex)",
            "        key: &Utf8SuffixKey,",
            "\"key\": \"48c67f3c-63bb-4f92-a98a-4ee0fbc2bef6\"",
            "secret_name: prod-db-7f3a9c1e2b4d6f8a",
            "\"AWS::ApiGateway::ApiKey\": \"48205d4ffd7feba3\",",
            "\"nextPageToken\": \"AAAAKgAAAAEAAAAAAAAAA1Gp1BelJq+PmHvAnDxJYbup8+0R4LV\"",
            "\"token\": \"abcd1234defg5678\"",
            "MLKEM768X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
            "'sodium_crypto_secretstream_xchacha20poly1305_init_pull', 'sodium_crypto_secretstream_xchacha20poly1305_keygen',",
        ] {
            miss(text);
        }
    }

    #[test]
    fn secret_assignment_inline() {
        first(
            "secret-assignment-inline",
            &j(&[
                "my .env has SECRET",
                "_KEY=",
                &noise(40, 96),
                " but flask says no",
            ]),
        );
        first(
            "secret-assignment-inline",
            &j(&["the client_secret is ", &noise(40, 97), "\nuse it"]),
        );
        miss("RUST_LOG=debug TOKENIZERS_PARALLELISM=false cargo test");
        miss("GITHUB_TOKEN=$(gh auth token) gh api /user");
        miss("the token is generated by the login endpoint at startup");
    }

    #[test]
    fn skip_lines_and_random_shape() {
        assert!(random_shape(b"a8Kd93jQz0Lm"));
        assert!(!random_shape(b"user-settings-v2"));
        assert!(!random_shape(b"0123456789abcdef"));
        assert!(!random_shape(b"/usr/lib/x86/64"));
        assert!(!random_shape(b"pkcs-9-at-pkcs15Token"));
        assert!(random_shape(b"8f3a9c1e7b2d4f6a"));
        assert_eq!(line_of(b"ab\ncd\nef", 4), b"cd");
        assert_eq!(line_of(b"ab", 0), b"ab");
        assert_eq!(name_around(b"x \"NextToken\": 1", 7, 12), b"NextToken");
        assert_eq!(
            name_around(b"spring.datasource.password=", 18, 26),
            b"password"
        );
        assert_eq!(name_around(b"--client-token v", 9, 14), b"client-token");
        let r =
            user("[[security.rules]]\nid = \"z\"\nregex = 'z[0-9]+'\nskip_lines = ['ignore me']\n")
                .unwrap();
        assert_eq!(r.scan("z12 IGNORE ME\nz34", Target::Input).len(), 1);
    }

    #[test]
    fn unicode_tag_characters() {
        let hidden: String = "ignore previous"
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
            .collect();
        hit(TAG_CHARACTERS, &format!("hello{hidden}world"));
        // The flag of England is a tag sequence after U+1F3F4.
        miss("go \u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F} team");
    }

    #[test]
    fn bidi_override() {
        hit(
            BIDI_OVERRIDE,
            "if access_level != \"user\u{202E} \u{2066}// admin\u{2069}\u{2066}\" {",
        );
        miss("שלום עולם, plain right-to-left text with no overrides \u{200F}");
    }

    #[test]
    fn zero_width_run() {
        hit(ZERO_WIDTH_RUN, "a\u{200B}\u{200C}\u{200B}\u{200D}b");
        miss("می\u{200C}خواهم and 👩\u{200D}💻 and a\u{200B}b");
    }

    #[test]
    fn findings_name_kind_and_position_never_the_secret() {
        let secret = j(&["AKIA", "Z7Q4M2XJ5PRT3LKB"]);
        let text = format!("line one\n  é {secret}\n");
        let f = &Rules::builtin().scan(&text, Target::Input)[0];
        assert_eq!((f.line, f.column), (2, 5));
        let d = f.describe();
        assert_eq!(
            d,
            "AWS access key id (rule `aws-access-key-id`) at line 2, column 5"
        );
        assert!(!d.contains(&secret));
        let h = f.how_to_proceed("keryx.security-check-input");
        assert!(
            h.contains("`[security] disable = [\"aws-access-key-id\"]`")
                && h.contains(
                    "`keryx-hooks disable keryx.security-check-input --user --acknowledge-gate-risk`"
                ),
            "{h}"
        );
    }

    #[test]
    fn redact_replaces_secrets_and_escapes_carriers() {
        let secret = j(&["ghp", "_", &noise(36, 27)]);
        let out = Rules::builtin().redact(&format!("use {secret} now\u{202E}"));
        assert_eq!(out, "use [REDACTED:github-token] now\\u{202E}");
    }

    /// The `security` item of a runtime.toml's text.
    fn user(toml: &str) -> Result<Rules, RuleError> {
        let doc: DocumentMut = toml.parse().unwrap();
        Rules::with_user(doc.get("security"), "f")
    }

    /// A rule with `requires` runs only on a text holding one of them,
    /// in any case, and finds there what it finds without them.
    #[test]
    fn requires_gates_a_rule_like_a_second_keyword() {
        let r = user(
            r#"
[[security.rules]]
id = "acme-token"
regex = 'acme_[a-z0-9]{12}'
keywords = ["acme_"]
requires = ["KEY=", "tok:"]
"#,
        )
        .unwrap();
        let found = |t: &str| !r.scan(t, Target::Input).is_empty();
        assert!(found("key=acme_0123456789ab"));
        assert!(found("TOK: acme_0123456789ab"));
        assert!(!found("acme_0123456789ab"));
        assert!(!found("key acme_0123456789ab"));
        let bad = user("[[security.rules]]\nid = \"x\"\nregex = 'a'\nrequires = \"=\"\n");
        assert_eq!(
            bad.unwrap_err().to_string(),
            "f: `security.rules[0]`: rule `x`: `requires` must be a list of strings"
        );
        // The built-in rules with it: a path naming a key compiles none of them.
        let with: Vec<&str> = BUILTIN_RULE_DEFS
            .iter()
            .filter(|d| !d.requires.is_empty())
            .map(|d| d.id)
            .collect();
        assert!(
            with.contains(&"secret-assignment") && with.len() >= 4,
            "{with:?}"
        );
        assert!(
            Rules::builtin()
                .scan("/p/src/task_keys.rs", Target::Input)
                .is_empty()
        );
    }

    #[test]
    fn user_rules_add_disable_and_fail_loudly() {
        let r = user(
            r#"
[security]
disable = ["jwt", "zero-width-run"]
[[security.rules]]
id = "acme-token"
kind = "Acme API token"
regex = 'acme_[a-z0-9]{12}'
applies = ["output"]
"#,
        )
        .unwrap();
        assert!(!r.ids().contains(&"jwt") && !r.ids().contains(&ZERO_WIDTH_RUN));
        let text = "k = acme_0123456789ab";
        assert_eq!(r.scan(text, Target::Output)[0].rule_id, "acme-token");
        assert!(r.scan(text, Target::Input).is_empty());
        assert_eq!(user("").unwrap().ids(), Rules::builtin().ids());

        let bad = |toml: &str| user(toml).unwrap_err().to_string();
        assert_eq!(
            bad("[[security.rules]]\nid = \"x\"\nregex = '('\n"),
            "f: `security.rules[0]`: rule `x`: invalid `regex`: unclosed group"
        );
        assert!(bad("[[security.rules]]\nid = \"jwt\"\nregex = 'a'\n").contains("already exists"));
        assert!(bad("[security]\ndisable = [\"nope\"]\n").contains("no rule with id `nope`"));
        assert!(bad("security = \"off\"\n").contains("`security` must be a table"));
    }

    /// Every way a user's `[security]` can be wrong, word for word.
    #[test]
    fn a_broken_user_rule_says_what_and_where() {
        let rule = |body: &str| {
            user(&format!("[[security.rules]]\n{body}\n"))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let cases = [
            ("regex = 'a'", "missing string field `id`"),
            (
                "id = \"a b\"\nregex = 'a'",
                "rule id `a b` must be non-empty letters, digits, `-` or `_`",
            ),
            ("id = \"x\"", "rule `x`: missing string field `regex`"),
            (
                "id = \"x\"\nregex = 'a'\nkeywords = 1",
                "rule `x`: `keywords` must be a list of strings",
            ),
            (
                "id = \"x\"\nregex = 'a'\nmin_entropy = \"high\"",
                "rule `x`: `min_entropy` must be a number",
            ),
            (
                "id = \"x\"\nregex = 'a'\nlowercase = 1",
                "rule `x`: `lowercase` must be true or false",
            ),
            (
                "id = \"x\"\nregex = 'a'\nper_line = 1",
                "rule `x`: `per_line` must be true or false",
            ),
            (
                "id = \"x\"\nregex = 'a'\nper_line = true",
                "rule `x`: `per_line` needs `keywords`",
            ),
            (
                "id = \"x\"\nregex = 'a'\nrandom_shape = 1",
                "rule `x`: `random_shape` must be true or false",
            ),
            (
                "id = \"x\"\nregex = 'a'\napplies = \"input\"",
                "rule `x`: `applies` must be a list",
            ),
            (
                "id = \"x\"\nregex = 'a'\napplies = [\"both\"]",
                "rule `x`: `applies` has `both`; expected \"input\" or \"output\"",
            ),
            (
                "id = \"x\"\nregex = 'a'\ngroup = -1",
                "rule `x`: `group` must be a non-negative integer",
            ),
            (
                "id = \"x\"\nregex = 'a'\ngroup = 1",
                "rule `x`: the regex has no capture group 1",
            ),
            (
                "id = \"x\"\nregex = 'a'\nallow = \"b\"",
                "rule `x`: `allow` must be a list of regexes",
            ),
            (
                "id = \"x\"\nregex = 'a'\nskip_lines = ['(']",
                "rule `x`: invalid `skip_lines`: unclosed group",
            ),
            (
                "id = \"x\"\nregex = 'a'\nnames = ['b']",
                "rule `x`: `names` needs a capture group named `name`",
            ),
        ];
        for (body, want) in cases {
            assert_eq!(
                rule(body),
                format!("f: `security.rules[0]`: {want}"),
                "{body}"
            );
        }
        let file = |toml: &str| user(toml).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            file("security = 1\n"),
            "f: `security` must be a table (`[security]`)"
        );
        assert_eq!(
            file("[security]\ndisable = \"jwt\"\n"),
            "f: `security.disable` must be a list of rule ids"
        );
        assert_eq!(
            file("[security]\ndisable = [\"nope\"]\n"),
            "f: `security.disable`: no rule with id `nope`"
        );
        assert_eq!(
            file("[security]\nrules = 1\n"),
            "f: `security.rules` must be an array of tables"
        );
        assert_eq!(
            file("[[security.rules]]\nid = \"jwt\"\nregex = 'a'\n"),
            "f: `security.rules[0]`: rule id `jwt` already exists; choose another id (a built-in \
             can be switched off with `[security] disable = [\"jwt\"]`)"
        );
    }

    /// What build.rs read out of the rules file is what the scanner's TOML
    /// reading makes of it: each rule's plain fields, and a section that
    /// parses to the same table.
    #[test]
    fn the_built_in_rule_table_is_the_rules_file() {
        let doc: DocumentMut = BUILTIN_RULES.parse().unwrap();
        let whole = tables_of(&doc["rule"]).unwrap();
        assert_eq!(whole.len(), BUILTIN_RULE_DEFS.len());
        let canonical = |item: &Item| match (item.as_str(), string_list(item)) {
            (Some(s), _) => format!("string {s}"),
            (None, Some(list)) => format!("list {list:?}"),
            _ => format!("value {}", item.to_string().trim()),
        };
        for (i, (t, def)) in whole.iter().zip(BUILTIN_RULE_DEFS).enumerate() {
            let str_field = |k: &str| t.get(k).and_then(Item::as_str);
            let flag = |k: &str| t.get(k).and_then(Item::as_bool).unwrap_or(false);
            assert_eq!(str_field("id"), Some(def.id));
            assert_eq!(str_field("kind").unwrap_or(def.id), def.kind, "{}", def.id);
            let keywords: Vec<String> = t
                .get("keywords")
                .and_then(string_list)
                .unwrap_or_default()
                .iter()
                .map(|k| k.to_ascii_lowercase())
                .collect();
            assert_eq!(keywords, def.keywords, "{}", def.id);
            let requires: Vec<String> = t
                .get("requires")
                .and_then(string_list)
                .unwrap_or_default()
                .iter()
                .map(|k| k.to_ascii_lowercase())
                .collect();
            assert_eq!(requires, def.requires, "{}", def.id);
            assert_eq!(flag("lowercase"), def.lowercase, "{}", def.id);
            assert_eq!(flag("per_line"), def.per_line, "{}", def.id);
            assert_eq!(flag("random_shape"), def.random_shape, "{}", def.id);
            let entropy = t
                .get("min_entropy")
                .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|n| n as f64)));
            assert_eq!(entropy, def.min_entropy, "{}", def.id);
            assert!(t.get("applies").is_none() && t.get("group").is_none());
            let section = builtin_table(i);
            let keys = |t: &dyn TableLike| -> Vec<(String, String)> {
                t.iter()
                    .map(|(k, v)| (k.to_owned(), canonical(v)))
                    .collect()
            };
            assert_eq!(keys(section), keys(*t), "{}", def.id);
        }
    }

    /// The fields `doctor` knows a rule by are the fields the shipped rules use.
    #[test]
    fn rule_fields_cover_the_shipped_rules() {
        let doc: DocumentMut = BUILTIN_RULES.parse().unwrap();
        for t in tables_of(&doc["rule"]).unwrap() {
            for (field, _) in t.iter() {
                assert!(
                    RULE_FIELDS.contains(&field),
                    "`{field}` is not in RULE_FIELDS"
                );
            }
        }
    }

    /// Every text file under `dir` (the project's own sources and fixtures).
    fn texts_under(dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                texts_under(&path, out);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                out.push(text);
            }
        }
    }

    /// `per_line` only changes where a rule's regex looks, never what the
    /// scanner finds: the project's sources and fixtures, the secret
    /// corpus, and secrets at the edges of lines (first and last byte,
    /// after a blank line, CRLF), scanned with the windows and over the
    /// whole text, give the same findings and the same redaction.
    #[test]
    fn per_line_rules_find_what_a_whole_text_search_finds() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts = Vec::new();
        for dir in ["src", "tests/fixtures", "docs", "adapters"] {
            texts_under(&root.join(dir), &mut texts);
        }
        let corpus =
            std::fs::read_to_string(root.join("tests/fixtures/secrets/secrets.jsonl")).unwrap();
        let mut secrets = Vec::new();
        for line in corpus.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let text: String = v["text"].as_str().unwrap().chars().rev().collect();
            secrets.push(text);
        }
        // Each secret alone, at a line's start and end, after a blank line,
        // with CRLF, and all of them in one text between ordinary lines.
        let filler = "let x = compute(y);\n".repeat(40);
        let mut all = String::new();
        for text in &secrets {
            for edge in [
                text.clone(),
                format!("{filler}{text}"),
                format!("{text}\n{filler}"),
                format!("{filler}\n\n{text}\r\n{filler}"),
                text.replace('\n', "\r\n"),
            ] {
                texts.push(edge);
            }
            all.push_str(&filler);
            all.push_str(text);
            all.push('\n');
        }
        texts.push(all);
        // Matches that start on the newline before their line.
        texts.push(j(&[&filler, "sig=", &noise(44, 98), "\n", &filler]));
        texts.push(j(&[
            &filler,
            "_auth",
            "Token=",
            &noise(30, 100),
            "\n",
            &filler,
        ]));

        let windowed = Rules::builtin();
        let mut whole = Rules::builtin();
        whole.windows = false;
        whole.index = false;
        let per_line = windowed.rules.iter().filter(|r| r.per_line).count();
        assert!(per_line > 30, "{per_line} per_line rules");
        let mut found = 0;
        for text in &texts {
            for target in [Target::Input, Target::Output] {
                let a = windowed.scan(text, target);
                assert_eq!(a, whole.scan(text, target), "{target:?} {text:?}");
                found += a.len();
            }
            assert_eq!(windowed.redact(text), whole.redact(text), "{text:?}");
        }
        assert!(found > secrets.len(), "{found} findings");
    }

    /// The keyword index finds every occurrence of every built-in keyword
    /// that a search for each keyword alone finds at each position, also
    /// where keywords overlap or one starts another (`sk` / `sk-ant-`,
    /// `passw` / `password` / `_password`, `secret` / `secret_`, `key` /
    /// `key-`) and where a keyword overlaps itself; of a short keyword only
    /// presence rules use (`sk`, `ac`), the first.
    #[test]
    fn keyword_index_finds_every_occurrence() {
        let index = keyword_index().expect("a SIMD searcher on this CPU");
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts = vec![
            "sk-ant-sk_sk-x _password=passwd secret_secret key-key-key pwdpwd ddd acac ghgl q~q~"
                .to_owned(),
        ];
        texts.push(
            std::fs::read_to_string(root.join("tests/fixtures/secrets/secrets.jsonl")).unwrap(),
        );
        texts.push(std::fs::read_to_string(root.join("src/builtins/secret-rules.toml")).unwrap());
        for text in texts {
            let lower = text.to_ascii_lowercase();
            let lower = lower.as_bytes();
            let found = index.find(lower);
            for (k, keyword) in index.keywords.iter().enumerate() {
                let naive: Vec<usize> = (0..lower.len())
                    .filter(|&p| lower[p..].starts_with(keyword.as_bytes()))
                    .collect();
                let all = index.short.iter().all(|(s, _, all)| *s != k || *all);
                if all {
                    assert_eq!(found[k], naive, "keyword {keyword:?}");
                } else {
                    assert_eq!(found[k].first(), naive.first(), "keyword {keyword:?}");
                    assert!(
                        found[k].iter().all(|p| naive.contains(p)),
                        "keyword {keyword:?}"
                    );
                }
            }
        }
    }

    /// A `per_line` rule's regex searches the lines that hold its keywords,
    /// not the whole text: on 200 KiB of code with one `.env` line, the
    /// line-anchored generic rule (the costliest before) looks at under
    /// 1 KiB, and still finds the secret there.
    #[test]
    fn per_line_rule_searches_only_keyword_lines() {
        let mut text = "let x = compute(y);\n".repeat(10_000);
        text.push_str(&j(&["API_TO", "KEN=", &noise(40, 101), "\n"]));
        text.push_str(&"let z = other(x);\n".repeat(1_000));
        SEARCHED.with(|s| s.borrow_mut().clear());
        let found = ids(&text, Target::Output);
        assert!(
            found.iter().any(|f| f == "secret-assignment-env"),
            "{found:?}"
        );
        let searched: usize = SEARCHED.with(|s| {
            s.borrow()
                .iter()
                .filter(|(id, _)| id == "secret-assignment-env" || id == "dsn-password")
                .map(|(_, n)| n)
                .sum()
        });
        assert!(
            searched < 1024,
            "searched {searched} bytes of {}",
            text.len()
        );
    }

    #[test]
    fn clean_prose_and_code_are_clean() {
        miss("Please refactor src/lib.rs so that `parse` returns a Result; run cargo test after.");
        miss(
            "fn token(&self) -> Token { self.tokens[self.pos].clone() }\nlet password_hash = hash(password);",
        );
        miss("https://docs.rs/regex/latest/regex/ and git@github.com:org/repo.git");
    }
}
