//! `$KERYX_HOME/runtime.toml`, the user's settings that are not hooks, read
//! and checked in one place. [`Settings::read`] parses the file once (`run`
//! reads it on every event, through [`Here::settings`]), gives each
//! setting as a typed value, and names every problem by its key, for
//! `doctor`. A broken file never loosens a guard: see [`Settings::profile`].
//!
//! [`Locations::settings`]: crate::paths::Locations::settings

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use toml_edit::{Item, Table, TableLike};

use crate::config::model::Profile;
use crate::escape::escape;
use crate::paths::Locations;
use crate::secrets::{self as scanner, Rules};

/// Where work happens ([`Locations`]) with its `runtime.toml`, read on
/// first use and then kept: one process handles one event, and every reader
/// of a setting shares this one parse. Everything of [`Locations`] is
/// reached through it as well.
#[derive(Debug, Clone)]
pub struct Here {
    pub loc: Locations,
    settings: std::sync::OnceLock<Settings>,
}

impl Here {
    pub fn new(loc: Locations) -> Here {
        Here {
            loc,
            settings: std::sync::OnceLock::new(),
        }
    }

    /// [`Locations::resolve`] for work happening in `cwd`.
    pub fn resolve(cwd: &Path) -> Here {
        Here::new(Locations::resolve(cwd))
    }

    /// The settings in [`Locations::runtime_settings_file`], read once.
    pub fn settings(&self) -> &Settings {
        self.settings
            .get_or_init(|| Settings::read(&self.loc.runtime_settings_file()))
    }
}

impl std::ops::Deref for Here {
    type Target = Locations;
    fn deref(&self) -> &Locations {
        &self.loc
    }
}

/// A larger file is not a settings file: it is refused whole, never read
/// in part (a cut at a line end can leave valid TOML that lost keys).
pub const MAX_BYTES: usize = 1024 * 1024;

/// The profile a broken file gives. It is the only one of the three whose
/// isolation is required-fail-closed: no hook runs unsandboxed (the
/// built-in gates included) and a failing gate-advisory hook denies
/// instead of proceeding. The other two differ from it only by allowing
/// more, so when the file cannot say which one the user chose, this one
/// cannot be looser than their choice.
pub const STRICTEST: Profile = Profile::UnattendedUntrusted;

/// How much a problem weakens what the user set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// A setting that guards nothing keeps its default, or a key is unknown.
    Warn,
    /// A guard is not as the user set it: a gate denies everything, the
    /// profile is the strictest, or a guard's own setting has its default.
    Fail,
}

/// One thing wrong with the file, display-ready (escaped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key or table it is about (`learning.enabled`,
    /// `security.rules[0].kewords`); `None` for the file as a whole.
    pub key: Option<String>,
    pub severity: Severity,
    /// One line: where, what is wrong, and what applies instead.
    pub message: String,
    /// What to do about it.
    pub fix: String,
}

/// What a key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// One of the three profile names.
    Profile,
    Bool,
    /// A non-negative integer.
    Size,
    /// Checked by compiling the rules ([`Settings::rules`]).
    Rules,
    /// An absolute path.
    Path,
    /// `[export]`: checked by the exporter, which reads it
    /// (`crate::export::settings`); `run` never does.
    Export,
}

/// Every key the file has: table, name, what it holds, and what a wrong
/// value costs. A key that guards something is a [`Severity::Fail`].
const KEYS: [(&str, &str, Kind, Severity); 19] = [
    ("", "profile", Kind::Profile, Severity::Fail),
    // A broken pin fails closed: no sandboxed hook runs until it is fixed.
    ("sandbox", "launcher", Kind::Path, Severity::Fail),
    ("trust", "pin_scripts", Kind::Bool, Severity::Fail),
    ("security", "disable", Kind::Rules, Severity::Fail),
    ("security", "rules", Kind::Rules, Severity::Fail),
    ("ctx_guard", "max_cat_bytes", Kind::Size, Severity::Fail),
    ("learning", "enabled", Kind::Bool, Severity::Warn),
    ("learning", "max_record_bytes", Kind::Size, Severity::Warn),
    ("learning", "max_session_bytes", Kind::Size, Severity::Warn),
    ("learning", "max_file_bytes", Kind::Size, Severity::Warn),
    ("learning", "keep_files", Kind::Size, Severity::Warn),
    // Impact evidence is gate-advisory: it can ask before an edit.
    ("impact", "enabled", Kind::Bool, Severity::Fail),
    (
        "impact",
        "ask_when_importers_at_least",
        Kind::Size,
        Severity::Fail,
    ),
    ("impact", "max_files", Kind::Size, Severity::Warn),
    ("impact", "max_entries", Kind::Size, Severity::Warn),
    ("impact", "max_file_bytes", Kind::Size, Severity::Warn),
    ("impact", "max_context_bytes", Kind::Size, Severity::Warn),
    // Where `keryx-hooks export` sends records; guards nothing.
    ("export", "endpoint", Kind::Export, Severity::Warn),
    ("export", "headers", Kind::Export, Severity::Warn),
];

/// Every key the file may have, dotted (`trust.pin_scripts`).
pub fn keys() -> impl Iterator<Item = String> {
    KEYS.iter().map(|(t, k, ..)| dotted(t, k))
}

fn dotted(table: &str, key: &str) -> String {
    if table.is_empty() {
        key.to_owned()
    } else {
        format!("{table}.{key}")
    }
}

/// The tables, with the severity of the one key (or the worst key) in them.
fn table_severity(name: &str) -> Option<Severity> {
    KEYS.iter()
        .filter(|(t, ..)| !t.is_empty() && *t == name)
        .map(|k| k.3)
        .max()
}

/// Why runtime.toml as a whole cannot be used; every setting then has its
/// fail-closed value or its default.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FileError {
    #[error("cannot read `{}`: {error}", path.display())]
    Unreadable { path: PathBuf, error: IoError },
    #[error("`{}` is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("`{}` is larger than 1 MiB, so it is not a settings file", path.display())]
    TooLarge { path: PathBuf },
    #[error("`{}` is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf },
    /// `at` is the 1-based line and column; `message` the parser's, in one
    /// line.
    #[error("`{}` is not valid TOML{}: {message}", path.display(), line_and_column(*at))]
    NotToml {
        path: PathBuf,
        at: Option<(usize, usize)>,
        message: String,
    },
}

/// An I/O error, shared so that [`Settings`] (which holds one when the file
/// cannot be read) can be cloned and compared; equal when it reads the same.
#[derive(Debug, Clone)]
pub struct IoError(std::sync::Arc<std::io::Error>);

impl std::fmt::Display for IoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for IoError {
    fn eq(&self, other: &IoError) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}

/// Why one setting cannot be used (it then fails closed), or why the whole
/// file cannot.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingError {
    #[error(transparent)]
    File(#[from] FileError),
    /// `nearest` is the profile a typo away, if one is.
    #[error(
        "`profile` is \"{given}\"{}, which is not a profile; {}",
        at_line(*line),
        profile_hint(*nearest)
    )]
    UnknownProfile {
        given: String,
        line: Option<usize>,
        nearest: Option<&'static str>,
    },
    #[error("`profile` must be a string{}, not {found}", at_line(*line))]
    ProfileNotAString {
        line: Option<usize>,
        found: &'static str,
    },
    #[error("`{}`: `trust.pin_scripts` must be true or false, not {found}", path.display())]
    PinScriptsNotABool { path: PathBuf, found: &'static str },
    #[error("`{}`: `trust` must be a table, not {found}", path.display())]
    TrustNotATable { path: PathBuf, found: &'static str },
    #[error("`{}`: `sandbox.launcher` must be an absolute path", path.display())]
    LauncherNotAbsolute { path: PathBuf },
    #[error("`{}`: `sandbox` must be a table", path.display())]
    SandboxNotATable { path: PathBuf },
    /// The user's `[security]` does not compile.
    #[error(transparent)]
    Rules(#[from] scanner::RuleError),
}

/// ` (line N)`, or nothing.
fn at_line(line: Option<usize>) -> String {
    line.map(|l| format!(" (line {l})")).unwrap_or_default()
}

/// ` at line L, column C`, or nothing.
fn line_and_column(at: Option<(usize, usize)>) -> String {
    at.map(|(line, column)| format!(" at line {line}, column {column}"))
        .unwrap_or_default()
}

fn profile_hint(nearest: Option<&str>) -> String {
    nearest
        .map(|n| format!("did you mean `{n}`?"))
        .unwrap_or_else(|| format!("expected one of {}", profile_names()))
}

/// The settings, as the runtime uses them.
#[derive(Debug, Clone)]
pub struct Settings {
    pub path: PathBuf,
    /// Whether the file exists (a broken one does).
    pub exists: bool,
    /// Why the file could not be read or parsed (raw); every setting then
    /// has its fail-closed value or its default.
    pub broken: Option<FileError>,
    /// `profile` as written: `Ok(None)` when absent, `Err(why)` (raw) when
    /// it is not a profile.
    profile: Result<Option<Profile>, SettingError>,
    /// `trust.pin_scripts`, or why it cannot be read (raw).
    pub pin_scripts: Result<bool, SettingError>,
    /// `sandbox.launcher`: the bubblewrap to use instead of searching, or
    /// why the setting cannot be used (raw; sandboxed hooks then fail).
    pub launcher: Result<Option<PathBuf>, SettingError>,
    /// `ctx_guard.max_cat_bytes`.
    pub max_cat_bytes: u64,
    /// `[learning]`, unless `enabled = false` (on by default).
    pub learning: Option<LearningLimits>,
    /// `[impact]`, when `enabled = true`.
    pub impact: Option<ImpactSettings>,
    /// The `security` item, compiled into [`Settings::rules`] on first use:
    /// most events never scan anything.
    security: Option<Item>,
    rules: OnceLock<Result<Rules, SettingError>>,
    /// Every problem found by reading, [`Settings::rules`]' aside.
    problems: Vec<Problem>,
}

impl Settings {
    /// The settings in `path`. Never fails: an absent file is every
    /// default, a broken one fails closed and says why.
    pub fn read(path: &Path) -> Settings {
        let mut s = Settings {
            path: path.to_path_buf(),
            exists: true,
            broken: None,
            profile: Ok(None),
            pin_scripts: Ok(false),
            launcher: Ok(None),
            max_cat_bytes: DEFAULT_MAX_CAT_BYTES,
            learning: Some(LearningLimits::default()),
            impact: None,
            security: None,
            rules: OnceLock::new(),
            problems: Vec::new(),
        };
        match read_limited(path) {
            Ok(None) => s.exists = false,
            Ok(Some(text)) => match toml_edit::Document::parse(text.as_str()) {
                Ok(doc) => s.take(doc.as_table(), &text),
                Err(e) => s.break_with(not_toml(path, &text, &e)),
            },
            Err(why) => s.break_with(why),
        }
        s
    }

    /// The profile when neither `--profile` nor the host names one (`run`,
    /// `list`, `test` and `doctor` alike): `profile` as written, the
    /// default when it is absent, and [`STRICTEST`] when the file cannot be
    /// read or parsed or `profile` is not one of the three, so a broken file
    /// never loosens a stricter choice.
    pub fn profile(&self) -> Profile {
        match (&self.broken, &self.profile) {
            (Some(_), _) | (None, Err(_)) => STRICTEST,
            (None, Ok(p)) => p.unwrap_or(Profile::DEFAULT),
        }
    }

    /// When [`Settings::profile`] is the strictest because the file is
    /// broken: the one line (escaped) that says so.
    pub fn profile_fallback(&self) -> Option<String> {
        let why = match (&self.broken, &self.profile) {
            (Some(why), _) => why.to_string(),
            (None, Err(why)) => format!("`{}`: {why}", self.path.display()),
            (None, Ok(_)) => return None,
        };
        Some(format!(
            "{}; using the strictest profile, `{STRICTEST}`, until it is fixed (`keryx-hooks doctor` shows every problem)",
            escape(&why)
        ))
    }

    /// The built-in secret rules with the user's `[security]` applied, or
    /// why they cannot be (raw): then the secret gates deny everything and
    /// the learning sink records nothing, because a rule the user added
    /// must never be silently dropped.
    /// Whether runtime.toml has a `[security]` table (its own rules or
    /// switched-off built-ins).
    pub fn has_security_table(&self) -> bool {
        self.security.is_some()
    }

    pub fn rules(&self) -> Result<&Rules, &SettingError> {
        self.rules
            .get_or_init(|| match &self.broken {
                Some(why) => Err(why.clone().into()),
                None => Rules::with_user(
                    self.security.as_ref(),
                    &format!("`{}`", self.path.display()),
                )
                .map_err(SettingError::from),
            })
            .as_ref()
    }

    /// Every problem, those that weaken a guard first. Compiles the secret
    /// rules.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = self.problems.clone();
        if self.broken.is_none()
            && let Err(why) = self.rules()
        {
            out.push(Problem {
                key: Some("security".into()),
                severity: Severity::Fail,
                message: format!(
                    "{}; `keryx.security-check-input` and `keryx.security-check-output` deny every prompt \
                     and Write/Edit until it is fixed, and the learning sink records nothing",
                    rules_unavailable(why)
                ),
                fix: format!("fix `[security]` in `{}`", self.shown()),
            });
        }
        out.sort_by_key(|p| std::cmp::Reverse(p.severity));
        out
    }

    fn shown(&self) -> String {
        escape(&self.path.display().to_string())
    }

    fn break_with(&mut self, why: FileError) {
        self.problems.push(Problem {
            key: None,
            severity: Severity::Fail,
            message: format!(
                "{}; until it is fixed the profile is the strictest (`{STRICTEST}`), `trust.pin_scripts` is true, \
                 `keryx.security-check-input` and `keryx.security-check-output` deny every prompt and Write/Edit, \
                 and every other setting has its default",
                escape(&why.to_string())
            ),
            fix: format!("fix `{}`", self.shown()),
        });
        self.pin_scripts = Err(why.clone().into());
        self.launcher = Err(why.clone().into());
        self.broken = Some(why);
    }

    /// Takes every setting from the parsed file and notes every problem.
    fn take(&mut self, root: &Table, text: &str) {
        let mut found = Found {
            text,
            shown: self.shown(),
            problems: Vec::new(),
        };
        found.unknown_keys(root);
        for (table, key, kind, _) in KEYS {
            let (item, line) = match lookup(root, table, key) {
                Lookup::Absent => continue,
                Lookup::NotATable(item) => {
                    if table != "security" {
                        found.not_a_table(table, item);
                    }
                    continue;
                }
                Lookup::At(item, line) => (item, line),
            };
            let ok = match kind {
                Kind::Profile | Kind::Rules | Kind::Export => true,
                Kind::Bool => item.as_bool().is_some(),
                Kind::Size => size(item).is_some(),
                Kind::Path => item
                    .as_str()
                    .is_some_and(|p| p.is_empty() || Path::new(p).is_absolute()),
            };
            if !ok {
                found.wrong_type(table, key, kind, item, line);
            }
        }

        self.profile = match lookup(root, "", "profile") {
            Lookup::At(item, line) => match item.as_str() {
                Some(p) => {
                    Profile::parse(p)
                        .map(Some)
                        .ok_or_else(|| SettingError::UnknownProfile {
                            given: p.to_owned(),
                            line: found.line(line),
                            nearest: nearest(p, Profile::ALL.iter().map(|p| p.as_str())),
                        })
                }
                None => Err(SettingError::ProfileNotAString {
                    line: found.line(line),
                    found: type_name(item),
                }),
            },
            _ => Ok(None),
        };
        if let Err(why) = &self.profile {
            found.problems.push(Problem {
                key: Some("profile".into()),
                severity: Severity::Fail,
                message: format!(
                    "{}; `run`, `list`, `test` and `doctor` use the strictest profile, `{STRICTEST}`, until it is fixed",
                    escape(&why.to_string())
                ),
                fix: format!(
                    "set `profile` in `{}` to one of {}",
                    found.shown,
                    profile_names()
                ),
            });
        }

        let table = |name: &str| root.get(name).and_then(Item::as_table_like);
        self.pin_scripts = match lookup(root, "trust", "pin_scripts") {
            Lookup::Absent => Ok(false),
            Lookup::At(item, _) => item
                .as_bool()
                .ok_or_else(|| SettingError::PinScriptsNotABool {
                    path: self.path.clone(),
                    found: type_name(item),
                }),
            Lookup::NotATable(item) => Err(SettingError::TrustNotATable {
                path: self.path.clone(),
                found: type_name(item),
            }),
        };
        self.launcher = match lookup(root, "sandbox", "launcher") {
            Lookup::Absent => Ok(None),
            Lookup::At(item, _) => match item.as_str() {
                Some("") => Ok(None),
                Some(p) if Path::new(p).is_absolute() => Ok(Some(PathBuf::from(p))),
                _ => Err(SettingError::LauncherNotAbsolute {
                    path: self.path.clone(),
                }),
            },
            Lookup::NotATable(_) => Err(SettingError::SandboxNotATable {
                path: self.path.clone(),
            }),
        };
        self.max_cat_bytes =
            int_setting(table("ctx_guard"), "max_cat_bytes", DEFAULT_MAX_CAT_BYTES);
        let enabled = |name: &str, default: bool| {
            table(name)
                .and_then(|t| t.get("enabled"))
                .and_then(Item::as_bool)
                .unwrap_or(default)
        };
        // The learning observer is on unless runtime.toml turns it off (the
        // spec's default); impact evidence is off unless it is turned on.
        self.learning =
            enabled("learning", true).then(|| LearningLimits::from_table(table("learning")));
        self.impact = enabled("impact", false).then(|| ImpactSettings::from_table(table("impact")));
        self.security = root.get("security").cloned();
        self.problems = found.problems;
    }
}

/// An integer setting from a runtime.toml table, or `default` when it is
/// absent or not a non-negative integer (which `doctor` reports).
pub(crate) fn int_setting(t: Option<&dyn TableLike>, key: &str, default: u64) -> u64 {
    t.and_then(|t| t.get(key)).and_then(size).unwrap_or(default)
}

/// A non-negative integer.
fn size(item: &Item) -> Option<u64> {
    item.as_integer().and_then(|i| u64::try_from(i).ok())
}

enum Lookup<'a> {
    Absent,
    /// The key's table is there but is not a table.
    NotATable(&'a Item),
    /// The value, and the line of its key.
    At(&'a Item, Option<usize>),
}

fn lookup<'a>(root: &'a Table, table: &str, key: &str) -> Lookup<'a> {
    let holder: &'a dyn TableLike = if table.is_empty() {
        root
    } else {
        match root.get(table) {
            None => return Lookup::Absent,
            Some(item) => match item.as_table_like() {
                Some(t) => t,
                None => return Lookup::NotATable(item),
            },
        }
    };
    match holder.get_key_value(key) {
        None => Lookup::Absent,
        Some((k, item)) => Lookup::At(item, k.span().map(|s| s.start)),
    }
}

/// The problems found while reading one parsed file.
struct Found<'a> {
    text: &'a str,
    /// The file's path, escaped.
    shown: String,
    problems: Vec<Problem>,
}

impl Found<'_> {
    /// The line of a byte offset into the file.
    fn line(&self, offset: Option<usize>) -> Option<usize> {
        offset.map(|o| line_col(self.text, o).0)
    }

    /// ` (line N)` for a byte offset into the file.
    fn at(&self, offset: Option<usize>) -> String {
        at_line(self.line(offset))
    }

    fn key_line(&self, t: &dyn TableLike, key: &str) -> String {
        self.at(t.key(key).and_then(|k| k.span()).map(|s| s.start))
    }

    fn not_a_table(&mut self, table: &str, item: &Item) {
        if self
            .problems
            .iter()
            .any(|p| p.key.as_deref() == Some(table))
        {
            return;
        }
        let then = if table == "trust" {
            "so `trust.pin_scripts` is taken as true".to_owned()
        } else if table == "sandbox" {
            "so no sandboxed hook runs until it is fixed".to_owned()
        } else {
            format!("so every `{table}` setting keeps its default")
        };
        self.problems.push(Problem {
            key: Some(table.to_owned()),
            severity: table_severity(table).unwrap_or(Severity::Warn),
            message: format!(
                "`{table}` must be a table (`[{table}]`), not {}, {then}",
                type_name(item)
            ),
            fix: format!("make `{table}` a `[{table}]` table in `{}`", self.shown),
        });
    }

    fn wrong_type(&mut self, table: &str, key: &str, kind: Kind, item: &Item, line: Option<usize>) {
        let name = dotted(table, key);
        let expected = match kind {
            Kind::Bool => "true or false",
            Kind::Path => "an absolute path",
            _ => "a non-negative integer",
        };
        let then = if name == "trust.pin_scripts" {
            "so it is taken as true until it is fixed"
        } else if name == "sandbox.launcher" {
            "so no sandboxed hook runs until it is fixed"
        } else {
            "so it keeps its default"
        };
        let severity = KEYS
            .iter()
            .find(|(t, k, ..)| *t == table && *k == key)
            .map_or(Severity::Warn, |k| k.3);
        self.problems.push(Problem {
            key: Some(name.clone()),
            severity,
            message: format!(
                "`{name}`{} must be {expected}, not {}, {then}",
                self.at(line),
                type_name(item)
            ),
            fix: format!("set `{name}` in `{}` to {expected}", self.shown),
        });
    }

    fn unknown(&mut self, name: String, what: &str, line: String, nearest: Option<String>) {
        let fix = match &nearest {
            Some(n) => format!("rename it to `{n}` in `{}`", self.shown),
            None => format!(
                "remove it from `{}` (docs/CONFIG.md's `runtime.toml` section lists every key)",
                self.shown
            ),
        };
        self.problems.push(Problem {
            message: format!(
                "unknown {what} `{}`{line}, which keryx-hooks does not read{}",
                escape(&name),
                nearest
                    .map(|n| format!("; did you mean `{n}`?"))
                    .unwrap_or_default()
            ),
            key: Some(name),
            severity: Severity::Warn,
            fix,
        });
    }

    /// Every table and key the file has that keryx-hooks does not read.
    fn unknown_keys(&mut self, root: &Table) {
        for (name, item) in root.iter() {
            if name == "profile" {
                continue;
            }
            let Some(_) = table_severity(name) else {
                let line = self.key_line(root, name);
                let what = if item.is_table_like() { "table" } else { "key" };
                let nearest = nearest_key("", name);
                self.unknown(name.to_owned(), what, line, nearest);
                continue;
            };
            let Some(t) = item.as_table_like() else {
                continue;
            };
            for (key, value) in t.iter() {
                if KEYS.iter().any(|(tb, k, ..)| *tb == name && *k == key) {
                    if name == "security" && key == "rules" {
                        self.unknown_rule_fields(value);
                    }
                    continue;
                }
                let line = self.key_line(t, key);
                self.unknown(format!("{name}.{key}"), "key", line, nearest_key(name, key));
            }
        }
    }

    fn unknown_rule_fields(&mut self, rules: &Item) {
        let tables: Vec<&dyn TableLike> = match (rules.as_array_of_tables(), rules.as_array()) {
            (Some(aot), _) => aot.iter().map(|t| t as &dyn TableLike).collect(),
            (None, Some(a)) => a
                .iter()
                .filter_map(|v| v.as_inline_table().map(|t| t as &dyn TableLike))
                .collect(),
            (None, None) => return,
        };
        for (i, t) in tables.into_iter().enumerate() {
            for (field, _) in t.iter() {
                if scanner::RULE_FIELDS.contains(&field) {
                    continue;
                }
                let nearest = nearest(field, scanner::RULE_FIELDS.iter().copied())
                    .map(|f| format!("security.rules[{i}].{f}"));
                let line = self.key_line(t, field);
                self.unknown(
                    format!("security.rules[{i}].{field}"),
                    "rule field",
                    line,
                    nearest,
                );
            }
        }
    }
}

/// The known key closest to `key` in `table` (`""`: the top level, whose
/// keys are `profile` and the table names), else the key of that exact
/// name in another table: a key written under the wrong table header.
fn nearest_key(table: &str, key: &str) -> Option<String> {
    let here: Vec<&str> = if table.is_empty() {
        let mut names: Vec<&str> = KEYS
            .iter()
            .map(|(t, ..)| *t)
            .filter(|t| !t.is_empty())
            .collect();
        names.dedup();
        names.push("profile");
        names
    } else {
        KEYS.iter()
            .filter(|(t, ..)| *t == table)
            .map(|(_, k, ..)| *k)
            .collect()
    };
    if let Some(n) = nearest(key, here.into_iter()) {
        return Some(dotted(table, n));
    }
    KEYS.iter()
        .find(|(t, k, ..)| *k == key && *t != table)
        .map(|(t, k, ..)| dotted(t, k))
}

/// The candidate a typo away from `word`: at most two edits, and fewer
/// than half its length.
fn nearest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| {
            (
                crate::base::text::edit_distance(
                    &word.to_ascii_lowercase(),
                    &c.to_ascii_lowercase(),
                ),
                c,
            )
        })
        .filter(|(d, _)| *d <= 2 && d * 2 < word.chars().count().max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn profile_names() -> String {
    Profile::ALL
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn type_name(item: &Item) -> &'static str {
    use toml_edit::Value;
    match item {
        Item::None => "nothing",
        Item::Table(_) => "a table",
        Item::ArrayOfTables(_) => "an array of tables",
        Item::Value(v) => match v {
            Value::String(_) => "a string",
            Value::Integer(i) if *i.value() < 0 => "a negative integer",
            Value::Integer(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Boolean(_) => "a boolean",
            Value::Datetime(_) => "a date-time",
            Value::Array(_) => "an array",
            Value::InlineTable(_) => "a table",
        },
    }
}

/// The file's text: `Ok(None)` when there is none; `Err(why)` when it
/// cannot be used, so the caller fails closed.
fn read_limited(path: &Path) -> Result<Option<String>, FileError> {
    let unreadable = |e| FileError::Unreadable {
        path: path.to_path_buf(),
        error: IoError(std::sync::Arc::new(e)),
    };
    // Checked before opening: opening a FIFO would wait for a writer.
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e)),
        Ok(m) if !m.is_file() => {
            return Err(FileError::NotAFile {
                path: path.to_path_buf(),
            });
        }
        Ok(_) => {}
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(unreadable)?;
    if bytes.len() > MAX_BYTES {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| FileError::NotUtf8 {
            path: path.to_path_buf(),
        })
}

/// `` `path` is not valid TOML at line 1, column 7: … ``, in one line.
fn not_toml(path: &Path, text: &str, e: &toml_edit::TomlError) -> FileError {
    FileError::NotToml {
        path: path.to_path_buf(),
        at: e.span().map(|s| line_col(text, s.start)),
        message: e.message().lines().collect::<Vec<_>>().join(" "),
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

// ------------------------------------------------------------------ the built-ins' tables

/// `cat` of a file larger than this floods the context (`[ctx_guard]
/// max_cat_bytes` in runtime.toml).
pub const DEFAULT_MAX_CAT_BYTES: u64 = 256 * 1024;

/// The bounds, from `[impact]` in runtime.toml.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImpactLimits {
    /// Files walked at most (`max_files`); a bigger repository is sampled
    /// in walk order, and the context says so.
    pub max_files: usize,
    /// Entries per list (`max_entries`).
    pub max_entries: usize,
    /// Files larger than this are not read for imports (`max_file_bytes`).
    pub max_file_bytes: u64,
    /// The whole additional context (`max_context_bytes`).
    pub max_context_bytes: usize,
}
impl Default for ImpactLimits {
    fn default() -> Self {
        ImpactLimits {
            max_files: 50_000,
            max_entries: 10,
            max_file_bytes: 512 * 1024,
            max_context_bytes: 4096,
        }
    }
}
impl ImpactLimits {
    pub fn from_table(t: Option<&dyn TableLike>) -> ImpactLimits {
        let d = ImpactLimits::default();
        ImpactLimits {
            max_files: int_setting(t, "max_files", d.max_files as u64) as usize,
            max_entries: (int_setting(t, "max_entries", d.max_entries as u64) as usize).max(1),
            max_file_bytes: int_setting(t, "max_file_bytes", d.max_file_bytes),
            max_context_bytes: (int_setting(t, "max_context_bytes", d.max_context_bytes as u64)
                as usize)
                .max(256),
        }
    }
}
/// `[impact]` in runtime.toml, as the provider takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImpactSettings {
    pub limits: ImpactLimits,
    /// `ask_when_importers_at_least` (0, absent or not a non-negative
    /// integer: never ask).
    pub ask_threshold: Option<usize>,
}
impl ImpactSettings {
    pub fn from_table(t: Option<&dyn TableLike>) -> ImpactSettings {
        let n = int_setting(t, "ask_when_importers_at_least", 0) as usize;
        ImpactSettings {
            limits: ImpactLimits::from_table(t),
            ask_threshold: (n > 0).then_some(n),
        }
    }
}

/// The bounds, from `[learning]` in runtime.toml.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LearningLimits {
    /// One line, newline included (`max_record_bytes`, default 8 KiB).
    pub max_record_bytes: usize,
    /// Everything one session may write (`max_session_bytes`, default 1 MiB).
    pub max_session_bytes: u64,
    /// The live file rotates past this (`max_file_bytes`, default 8 MiB).
    pub max_file_bytes: u64,
    /// Rotated files kept (`keep_files`, default 3).
    pub keep_files: usize,
}
impl Default for LearningLimits {
    fn default() -> Self {
        LearningLimits {
            max_record_bytes: 8 * 1024,
            max_session_bytes: 1024 * 1024,
            max_file_bytes: 8 * 1024 * 1024,
            keep_files: 3,
        }
    }
}
impl LearningLimits {
    pub fn from_table(t: Option<&dyn TableLike>) -> LearningLimits {
        let d = LearningLimits::default();
        LearningLimits {
            // Below 512 bytes not even the envelope of a record fits.
            max_record_bytes: (int_setting(t, "max_record_bytes", d.max_record_bytes as u64)
                as usize)
                .max(512),
            max_session_bytes: int_setting(t, "max_session_bytes", d.max_session_bytes),
            max_file_bytes: int_setting(t, "max_file_bytes", d.max_file_bytes).max(4096),
            keep_files: int_setting(t, "keep_files", d.keep_files as u64) as usize,
        }
    }
}

/// Why the secret rules are not in force, as the gates, the learning sink
/// and `doctor` all say it (escaped).
pub fn rules_unavailable(why: &SettingError) -> String {
    format!(
        "keryx-hooks cannot load its secret rules: {}",
        escape(&why.to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> Settings {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("runtime.toml");
        std::fs::write(&p, text).unwrap();
        Settings::read(&p)
    }

    /// Why each setting that cannot be used cannot, word for word.
    #[test]
    fn each_unusable_setting_says_why() {
        let s = of("[trust]\npin_scripts = 1\n[sandbox]\nlauncher = \"bwrap\"\n");
        let path = s.path.display().to_string();
        assert_eq!(
            s.pin_scripts.unwrap_err().to_string(),
            format!("`{path}`: `trust.pin_scripts` must be true or false, not an integer")
        );
        assert_eq!(
            s.launcher.unwrap_err().to_string(),
            format!("`{path}`: `sandbox.launcher` must be an absolute path")
        );
        let s = of("trust = []\nsandbox = 1\n");
        let path = s.path.display().to_string();
        assert_eq!(
            s.pin_scripts.unwrap_err().to_string(),
            format!("`{path}`: `trust` must be a table, not an array")
        );
        assert_eq!(
            s.launcher.unwrap_err().to_string(),
            format!("`{path}`: `sandbox` must be a table")
        );
        let fallback = |text: &str| {
            let s = of(text);
            let path = s.path.display().to_string();
            s.profile_fallback().unwrap().replace(&path, "P")
        };
        let strictest = format!(
            "; using the strictest profile, `{STRICTEST}`, until it is fixed (`keryx-hooks doctor` shows every problem)"
        );
        assert_eq!(
            fallback("profile = 3\n"),
            format!("`P`: `profile` must be a string (line 1), not an integer{strictest}")
        );
        assert_eq!(
            fallback("profile = \"strict\"\n"),
            format!(
                "`P`: `profile` is \"strict\" (line 1), which is not a profile; expected one of {}{strictest}",
                profile_names()
            )
        );
        assert_eq!(
            fallback("profile = \"read-only-reveiw\"\n"),
            format!(
                "`P`: `profile` is \"read-only-reveiw\" (line 1), which is not a profile; did you mean `read-only-review`?{strictest}"
            )
        );
        assert_eq!(
            fallback("[trust\n"),
            format!(
                "`P` is not valid TOML at line 1, column 7: unclosed table, expected `]`{strictest}"
            )
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Settings::read(dir.path()).broken.unwrap().to_string(),
            format!("`{}` is not a regular file", dir.path().display())
        );
    }

    fn problems(text: &str) -> Vec<(Option<String>, Severity, String)> {
        of(text)
            .problems()
            .into_iter()
            .map(|p| (p.key, p.severity, p.message))
            .collect()
    }

    #[test]
    fn no_file_is_every_default() {
        let dir = tempfile::tempdir().unwrap();
        let s = Settings::read(&dir.path().join("runtime.toml"));
        assert!(!s.exists && s.broken.is_none());
        assert_eq!(s.profile(), Profile::DEFAULT);
        assert_eq!(s.profile_fallback(), None);
        assert_eq!(s.pin_scripts, Ok(false));
        // The learning observer is on by default, impact evidence off.
        assert_eq!(s.learning, Some(LearningLimits::default()));
        assert!(s.impact.is_none());
        assert_eq!(s.rules().unwrap().ids(), Rules::builtin().ids());
        assert!(s.problems().is_empty());
    }

    #[test]
    fn sandbox_launcher_is_an_absolute_path_or_fails_closed() {
        assert_eq!(of("").launcher, Ok(None));
        assert_eq!(of("[sandbox]\nlauncher = \"\"\n").launcher, Ok(None));
        assert_eq!(
            of("[sandbox]\nlauncher = \"/opt/bwrap\"\n").launcher,
            Ok(Some(PathBuf::from("/opt/bwrap")))
        );
        for text in [
            "[sandbox]\nlauncher = \"bwrap\"\n",
            "[sandbox]\nlauncher = 1\n",
            "sandbox = 1\n",
            "[sandbox\n",
        ] {
            assert!(of(text).launcher.is_err(), "{text}");
            let p = problems(text);
            assert!(
                p.iter().any(|(_, sev, _)| *sev == Severity::Fail),
                "{text}: {p:?}"
            );
        }
        let p = problems("[sandbox]\nlauncher = \"bwrap\"\n");
        assert_eq!(p[0].0.as_deref(), Some("sandbox.launcher"), "{p:?}");
        assert!(p[0].2.contains("no sandboxed hook runs"), "{p:?}");
    }

    #[test]
    fn pin_scripts_in_the_forms_a_user_writes() {
        assert_eq!(of("").pin_scripts, Ok(false));
        assert_eq!(
            of("profile = \"read-only-review\"\n").pin_scripts,
            Ok(false)
        );
        assert_eq!(of("[trust]\npin_scripts = true\n").pin_scripts, Ok(true));
        assert_eq!(of("trust.pin_scripts = true\n").pin_scripts, Ok(true));
        assert_eq!(
            of("trust = { pin_scripts = false }\n").pin_scripts,
            Ok(false)
        );
        assert!(of("[trust]\npin_scripts = \"yes\"\n").pin_scripts.is_err());
        assert!(of("trust = true\n").pin_scripts.is_err());
        assert!(of("[trust\n").pin_scripts.is_err());
    }

    #[test]
    fn a_broken_file_or_profile_gives_the_strictest_profile() {
        assert_eq!(
            of("profile = \"read-only-review\"\n").profile(),
            Profile::ReadOnlyReview
        );
        for text in [
            "profile = \"read-only-review\"\n[trust\n",
            "profile = \"unattended-untrusted\"\n[trust\n",
            "profile = \"unattended\"\n",
            "profile = 3\n",
            "[profile]\ndefault = \"read-only-review\"\n",
        ] {
            let s = of(text);
            assert_eq!(s.profile(), STRICTEST, "{text}");
            let why = s.profile_fallback().unwrap();
            assert!(why.contains("using the strictest profile"), "{why}");
        }
        let why = of("[trust\n").profile_fallback().unwrap();
        assert!(
            why.contains("is not valid TOML at line 1, column 7"),
            "{why}"
        );
        let why = of("profile = \"unatended-untrusted\"\n")
            .profile_fallback()
            .unwrap();
        assert!(
            why.contains("did you mean `unattended-untrusted`?"),
            "{why}"
        );
        let why = of("x = 1\nprofile = \"strict\"\n")
            .profile_fallback()
            .unwrap();
        assert!(
            why.contains("`profile` is \"strict\" (line 2), which is not a profile"),
            "{why}"
        );
        // Other problems keep the profile the user chose.
        let s = of("profile = \"read-only-review\"\n[[security.rules]]\nid = \"x\"\nregex = '('\n");
        assert_eq!(s.profile(), Profile::ReadOnlyReview);
        assert!(s.profile_fallback().is_none());
    }

    /// The strictest profile is the one whose failures and isolation allow
    /// the least: the only one with isolation required, and the only one
    /// where a failing gate-advisory hook denies.
    #[test]
    fn the_strictest_profile_allows_the_least() {
        use crate::config::model::HookClass;
        use crate::events::Event;
        use crate::runtime::semantics::{Effect, on_failure};
        use crate::runtime::types::{FailureKind, Outcome};
        for &p in Profile::ALL {
            assert_eq!(p.isolation_required(), p == STRICTEST, "{p}");
            let effect = on_failure(
                HookClass::GateAdvisory,
                Event::PreToolUse,
                p,
                FailureKind::Crash,
                Outcome::Allow,
            );
            assert_eq!(matches!(effect, Effect::Deny(_)), p == STRICTEST, "{p}");
        }
    }

    #[test]
    fn a_file_over_the_limit_is_refused_not_cut() {
        // Valid TOML for its first MiB: read in part, it would pass.
        let mut text = "profile = \"read-only-review\"\n".to_owned();
        while text.len() <= MAX_BYTES {
            text.push_str("# padding padding padding padding padding padding\n");
        }
        let s = of(&text);
        assert!(
            s.broken
                .as_ref()
                .unwrap()
                .to_string()
                .contains("larger than 1 MiB")
        );
        assert_eq!(s.profile(), STRICTEST);
        assert!(s.pin_scripts.is_err());
    }

    #[test]
    fn unreadable_and_non_utf8_files_are_broken() {
        let dir = tempfile::tempdir().unwrap();
        let s = Settings::read(dir.path());
        assert!(
            s.broken
                .unwrap()
                .to_string()
                .contains("is not a regular file")
        );
        let p = dir.path().join("runtime.toml");
        std::fs::write(&p, b"profile = \"\xff\"\n").unwrap();
        assert!(
            Settings::read(&p)
                .broken
                .unwrap()
                .to_string()
                .contains("not UTF-8")
        );
    }

    #[test]
    fn unknown_keys_are_named_with_the_nearest_known_one() {
        let got = problems(
            "profil = \"read-only-review\"\n[learning]\nenabeld = true\npin_scripts = true\n\
             [lerning]\n[ctx_guard]\nmax_cat = 1\n[[security.rules]]\nid = \"a\"\nregex = 'a'\nkewords = [\"a\"]\n",
        );
        let msgs: Vec<&str> = got.iter().map(|p| p.2.as_str()).collect();
        assert!(got.iter().all(|p| p.1 == Severity::Warn), "{got:?}");
        for want in [
            "unknown key `profil` (line 1), which keryx-hooks does not read; did you mean `profile`?",
            "unknown key `learning.enabeld` (line 3), which keryx-hooks does not read; did you mean `learning.enabled`?",
            "unknown key `learning.pin_scripts` (line 4), which keryx-hooks does not read; did you mean `trust.pin_scripts`?",
            "unknown table `lerning` (line 5), which keryx-hooks does not read; did you mean `learning`?",
            "unknown key `ctx_guard.max_cat` (line 7), which keryx-hooks does not read",
            "unknown rule field `security.rules[0].kewords` (line 11), which keryx-hooks does not read; did you mean `security.rules[0].keywords`?",
        ] {
            assert!(msgs.contains(&want), "{want}\n{msgs:#?}");
        }
        assert_eq!(got.len(), 6, "{msgs:#?}");
    }

    #[test]
    fn wrong_types_fail_where_they_guard_and_warn_elsewhere() {
        let got = problems(
            "[trust]\npin_scripts = \"yes\"\n[ctx_guard]\nmax_cat_bytes = -1\n\
             [learning]\nenabled = \"true\"\nkeep_files = 1.5\n[impact]\nenabled = 1\n",
        );
        let find = |key: &str| {
            got.iter()
                .find(|p| p.0.as_deref() == Some(key))
                .unwrap_or_else(|| panic!("{key}: {got:#?}"))
        };
        assert_eq!(find("trust.pin_scripts").1, Severity::Fail);
        assert!(
            find("trust.pin_scripts")
                .2
                .contains("must be true or false, not a string, so it is taken as true")
        );
        assert_eq!(find("ctx_guard.max_cat_bytes").1, Severity::Fail);
        assert!(
            find("ctx_guard.max_cat_bytes")
                .2
                .contains("(line 4) must be a non-negative integer, not a negative integer")
        );
        assert_eq!(find("learning.enabled").1, Severity::Warn);
        assert_eq!(find("learning.keep_files").1, Severity::Warn);
        assert_eq!(find("impact.enabled").1, Severity::Fail);
        assert_eq!(got.len(), 5, "{got:#?}");
        // Fails come first.
        assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "{got:#?}");

        let got = problems("learning = true\nctx_guard = 5\n");
        assert_eq!(got.len(), 2, "{got:#?}");
        assert_eq!(got[0].0.as_deref(), Some("ctx_guard"));
        assert_eq!(got[0].1, Severity::Fail);
        assert_eq!(got[1].1, Severity::Warn);
    }

    #[test]
    fn security_problems_are_the_gate_s_own_message() {
        let s = of("[[security.rules]]\nid = \"x\"\nregex = '('\n");
        let why = s.rules().unwrap_err().clone();
        let p = s.problems();
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(p[0].severity, Severity::Fail);
        assert!(p[0].message.starts_with(&rules_unavailable(&why)), "{p:#?}");
        assert!(
            why.to_string()
                .contains("`security.rules[0]`: rule `x`: invalid `regex`"),
            "{why}"
        );
        // A `security` that is not a table is no longer silently nothing.
        assert!(of("security = \"off\"\n").rules().is_err());
        // A broken file is one problem, not one per reader.
        let p = of("[security\n").problems();
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(p[0].key, None);
        assert!(
            p[0].message
                .contains("is not valid TOML at line 1, column 10"),
            "{p:#?}"
        );
    }

    #[test]
    fn every_setting_is_read_from_its_key() {
        let s = of(
            "[ctx_guard]\nmax_cat_bytes = 10\n[learning]\nenabled = true\nkeep_files = 5\n\
             [impact]\nenabled = true\nask_when_importers_at_least = 4\n",
        );
        assert_eq!(s.max_cat_bytes, 10);
        assert_eq!(s.learning.unwrap().keep_files, 5);
        assert_eq!(s.impact.unwrap().ask_threshold, Some(4));
        assert!(s.problems().is_empty(), "{:#?}", s.problems());
        let on = of("[learning]\nkeep_files = 5\n");
        assert_eq!(on.learning.unwrap().keep_files, 5);
        let off = of("[learning]\nenabled = false\n[impact]\nenabled = false\n");
        assert!(off.learning.is_none() && off.impact.is_none());
    }

    #[test]
    fn nearest_is_a_typo_away_or_nothing() {
        assert_eq!(
            nearest("enable", ["enabled", "keep_files"].into_iter()),
            Some("enabled")
        );
        assert_eq!(nearest("ab", ["abc"].into_iter()), None);
        assert_eq!(nearest("colour", ["enabled"].into_iter()), None);
        assert_eq!(crate::base::text::edit_distance("kitten", "sitting"), 3);
        assert_eq!(line_col("ab\ncdé\nx", 7), (2, 4));
    }
}
