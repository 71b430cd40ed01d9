//! The typed form of one `adapters/<host>/adapter.json` and the questions the
//! rest of the crate asks of a host (can it gate, can it ask, where is its
//! config). Nothing here is parsed at run time: build.rs reads every adapter
//! file into these types with serde (so the types and their serde
//! attributes are the one description of the file, beside the JSON schema)
//! and writes each adapter back out as a `static` literal of them, so every
//! string is `&'static str`, every list a `&'static [T]`, every name-to-name
//! table a slice sorted by key, and every output template a [`Json`] tree
//! in the file's own key order.
//!
//! Also build.rs's (`#[path]`): it uses nothing of the crate but the
//! canonical [`Event`], which its parent module provides.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Event;

/// A name-to-name table (`tools`, a field's `values`), sorted by key.
pub(crate) type Table = &'static [(&'static str, &'static str)];

/// The value `key` maps to in a [`Table`].
pub(crate) fn table_get(table: Table, key: &str) -> Option<&'static str> {
    table
        .binary_search_by(|(k, _)| (*k).cmp(key))
        .ok()
        .map(|i| table[i].1)
}

/// A JSON value written into the binary: an output template or a `skip`'s
/// `equals`. Objects keep the adapter file's key order; numbers are
/// integers (build.rs refuses any other number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[allow(
    dead_code,
    reason = "build.rs emits the variants the adapter files use"
)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Str(&'static str),
    Arr(&'static [Json]),
    Obj(&'static [(&'static str, Json)]),
}

impl Json {
    /// The same value as a `serde_json::Value`.
    pub fn to_value(self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(b),
            Json::Int(n) => Value::from(n),
            Json::Str(s) => Value::String(s.to_owned()),
            Json::Arr(items) => Value::Array(items.iter().map(|j| j.to_value()).collect()),
            Json::Obj(entries) => Value::Object(object(entries)),
        }
    }

    /// Whether `v` is this value, as `Value`'s own `==` would say (an
    /// integer never equals a float, objects compare regardless of order).
    pub fn matches(self, v: &Value) -> bool {
        match (self, v) {
            (Json::Null, Value::Null) => true,
            (Json::Bool(a), Value::Bool(b)) => a == *b,
            (Json::Int(a), Value::Number(b)) => b.as_i64() == Some(a),
            (Json::Str(a), Value::String(b)) => a == b,
            (Json::Arr(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.matches(y))
            }
            (Json::Obj(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, x)| b.get(*k).is_some_and(|y| x.matches(y)))
            }
            _ => false,
        }
    }
}

impl Json {
    /// The value with each string that is a whole placeholder (`$name`)
    /// replaced by what `value` gives for it; an object entry whose
    /// placeholder has no value is left out, and text that is no
    /// placeholder stays as it is.
    pub fn fill(self, value: &dyn Fn(&str) -> Option<Value>) -> Value {
        match self {
            Json::Str(s) if s.starts_with('$') => {
                value(s).unwrap_or_else(|| Value::String(s.to_owned()))
            }
            Json::Arr(items) => Value::Array(items.iter().map(|j| j.fill(value)).collect()),
            Json::Obj(entries) => {
                let unfilled = |j: &Json| matches!(j, Json::Str(s) if s.starts_with('$') && value(s).is_none());
                Value::Object(
                    entries
                        .iter()
                        .filter(|(_, j)| !unfilled(j))
                        .map(|(k, j)| ((*k).to_owned(), j.fill(value)))
                        .collect(),
                )
            }
            other => other.to_value(),
        }
    }

    /// Every whole-string placeholder in the value, in order.
    #[cfg(test)]
    pub fn placeholders(self) -> Vec<&'static str> {
        match self {
            Json::Str(s) if s.starts_with('$') => vec![s],
            Json::Arr(items) => items.iter().flat_map(|j| j.placeholders()).collect(),
            Json::Obj(entries) => entries.iter().flat_map(|(_, j)| j.placeholders()).collect(),
            _ => Vec::new(),
        }
    }
}

/// A static object's entries as a `serde_json` object, in order.
pub(crate) fn object(entries: &[(&'static str, Json)]) -> Map<String, Value> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.to_value()))
        .collect()
}

// The file's spelling is camelCase (lowercase for enum values); a field
// with a default says so; `deserialize_with` reads what serde cannot lend
// as `&'static` (a list, a table, the events object, a template). The file
// is read from a value that lives for good, so its strings are lent, not
// copied: `borrow` says so where no field is a plain `&'static str`.

/// One host, as its adapter file describes it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub struct Adapter {
    pub(crate) name: &'static str,
    pub(crate) display_name: &'static str,
    /// Other names people type for the host (`claude`), for the human
    /// commands; never `run`'s.
    #[serde(default, deserialize_with = "list")]
    pub(crate) aliases: &'static [&'static str],
    /// How notices reach the person on events without a `notice` of their
    /// own. Never the model's context: a notice names a command to run,
    /// and only a person should be told to run it.
    pub(crate) notice: Option<Output>,
    /// The host gives a deny's stderr to the model (Kimi: it is the tool
    /// result): a notice on stderr would go with it, so on such a deny
    /// notices are held for `keryx-hooks status` instead.
    #[serde(default)]
    pub(crate) deny_stderr_reaches_model: bool,
    pub(crate) encoder: EncoderKind,
    #[serde(default, deserialize_with = "list")]
    pub(crate) sources: &'static [&'static str],
    pub(crate) timeout: Timeout,
    pub(crate) config_files: ConfigFiles,
    /// The host's own packaging, for `install --format plugin`.
    pub(crate) package: Option<Package>,
    /// What `import` reads of the host's own hooks; `None`: it does not.
    pub(crate) import: Option<Import>,
    /// How it runs hooks written for it and reads their answers; without
    /// it, no registration can speak its protocol.
    pub(crate) hook_protocol: Option<HookProtocol>,
    /// How the host has the user review new hooks before it runs them.
    pub(crate) reviews_hooks: Option<HookReview>,
    /// What a project-scope wiring needs before the host runs it.
    pub(crate) project_trust: Option<ProjectTrust>,
    /// Another host whose hook files this host runs too.
    pub(crate) also_runs: Option<AlsoRuns>,
    /// What the host does when the shim cannot answer a gate event, and
    /// its own switch that makes it refuse instead, where it has one.
    pub(crate) shim_failure: Option<ShimFailure>,
    /// The host's own OS sandbox for the agent's commands, as
    /// `install --host-sandbox` sets it.
    pub(crate) host_sandbox: Option<HostSandbox>,
    pub(crate) match_all: Option<&'static str>,
    pub(crate) closes_stdin: bool,
    pub(crate) exit_rule: &'static str,
    #[serde(default)]
    pub(crate) passthrough: bool,
    #[serde(default)]
    pub(crate) host_fields: bool,
    /// The variables the host sets for its own hooks, passed through the
    /// environment allowlist when the shim runs under this host.
    #[serde(default, deserialize_with = "list")]
    pub(crate) hook_env: &'static [&'static str],
    /// The host's own programs, each of which starts an agent session.
    #[serde(default, deserialize_with = "list")]
    pub(crate) executables: &'static [&'static str],
    /// The variables that move where the host reads its config (its
    /// `homeEnv` among them, if it has one).
    #[serde(default, deserialize_with = "list")]
    pub(crate) config_env: &'static [&'static str],
    /// Project paths (relative to the project root; a trailing `/` marks a
    /// directory) from which the host loads code or starts commands: never
    /// written by a sandboxed hook, nor by the agent through the write gate.
    #[serde(default, deserialize_with = "list")]
    pub(crate) project_code: &'static [&'static str],
    #[serde(default, deserialize_with = "list")]
    pub(crate) ignore: &'static [&'static str],
    #[serde(default, deserialize_with = "list")]
    pub(crate) fields: &'static [FieldMap],
    /// Host tool name → canonical tool name, sorted by host name.
    #[serde(default, deserialize_with = "table")]
    pub(crate) tools: Table,
    pub(crate) mcp: Option<Mcp>,
    /// In file order, which is the order the installer wires them.
    #[serde(deserialize_with = "host_events")]
    pub(crate) events: &'static [HostEvent],
    #[serde(default, deserialize_with = "list")]
    pub(crate) unmapped: &'static [&'static str],
    #[serde(default, deserialize_with = "list")]
    pub(crate) bridges: &'static [BridgeSpec],
    #[serde(default, deserialize_with = "list")]
    pub(crate) notes: &'static [&'static str],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
pub(crate) enum EncoderKind {
    Template,
    Keryx,
}

/// The unit a host's own config expresses hook timeouts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
pub enum TimeoutUnit {
    Seconds,
    Milliseconds,
}

impl TimeoutUnit {
    /// A keryx timeout (milliseconds) in this unit, rounded up so a host
    /// never kills a hook earlier than its registration allows.
    pub fn from_millis(self, ms: u64) -> u64 {
        match self {
            TimeoutUnit::Seconds => ms.div_ceil(1000),
            TimeoutUnit::Milliseconds => ms,
        }
    }

    /// A timeout in this unit, in milliseconds.
    pub fn to_millis(self, n: u64) -> u64 {
        match self {
            TimeoutUnit::Seconds => n.saturating_mul(1000),
            TimeoutUnit::Milliseconds => n,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Timeout {
    pub unit: TimeoutUnit,
    pub default: Option<u64>,
    /// The longest hook timeout the host accepts, in `unit`.
    pub max: Option<u64>,
}

/// Where a host reads its hook registrations, before `~` and `homeEnv` are
/// resolved (that happens in `paths`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub struct ConfigFiles {
    pub format: ConfigFormat,
    #[serde(borrow, deserialize_with = "list")]
    pub user: &'static [&'static str],
    #[serde(deserialize_with = "list")]
    pub project: &'static [&'static str],
    pub home_env: Option<HomeEnv>,
    /// How a settings file holds its entries under each event.
    #[serde(default)]
    pub layout: Layout,
    /// A JSON settings file also needs `"version": 1` at its top.
    #[serde(default)]
    pub version: bool,
    /// The keys a handler may keep its shell command under; install writes
    /// the first (the entry template says where).
    #[serde(default = "command_keys", deserialize_with = "list")]
    pub command_keys: &'static [&'static str],
    /// The keys a handler may keep its timeout under, likewise.
    #[serde(default = "timeout_keys", deserialize_with = "list")]
    pub timeout_keys: &'static [&'static str],
    /// The key a flat list's entry names its event under (`event`; Mistral
    /// Vibe's `type`).
    #[serde(default = "event_key")]
    pub event_key: &'static str,
    /// The item install puts into a settings file for one event, with the
    /// placeholders of [`ConfigFiles::entry`].
    pub(crate) entry: Option<Json>,
    /// Other files the host reads hooks from, which install does not write.
    #[serde(default)]
    pub also_read: AlsoRead,
    /// How strictly the host reads its settings file: one it cannot load
    /// runs none of its hooks, so it is broken, not wired.
    #[serde(default)]
    pub reads: Reads,
}

/// What a host's reader accepts beyond plain JSON (or TOML), and what it
/// checks: each `false` is the strict choice.
#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub struct Reads {
    /// `//` and `/* */` comments are taken out before the file is parsed.
    #[serde(default)]
    pub comments: bool,
    /// A key given twice in one object is an error (a typed parser), not
    /// the last one winning.
    #[serde(default)]
    pub unique_keys: bool,
    /// The types in the hooks table are checked (`hooks` an object, each
    /// event a list, `command` a string, `timeout` a number), and the whole
    /// file is skipped on a wrong one.
    #[serde(default)]
    pub typed_hooks: bool,
}

/// Files a host reads hooks from beside the ones install writes: `user`
/// paths as written (`~` the home), `project` paths relative to a project.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlsoRead {
    #[serde(borrow, default, deserialize_with = "list")]
    pub user: &'static [&'static str],
    #[serde(default, deserialize_with = "list")]
    pub project: &'static [&'static str],
}

fn event_key() -> &'static str {
    "event"
}

fn command_keys() -> &'static [&'static str] {
    &["command"]
}

fn timeout_keys() -> &'static [&'static str] {
    &["timeout"]
}

/// How a settings file holds the entries under each event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
pub enum Layout {
    /// Matcher groups, each holding a list of handlers (`{matcher, hooks:
    /// [handler]}`; a TOML file: `[[hooks.<Event>]]` tables).
    #[default]
    Nested,
    /// Each entry one handler (JSON: `hooks.<event>: [handler]`; a TOML
    /// file: one top-level `[[hooks]]` list whose entries name their event).
    Flat,
}

impl ConfigFiles {
    /// The entry install writes for one event: the adapter's template with
    /// each whole-string placeholder (`$command`, `$timeout`, `$event`,
    /// `$matcher`, `$failClosed`, `$name`: `keryx-hooks-<event>`) replaced by what `value` gives for it, and an
    /// object key whose placeholder has no value left out. `None` for a host
    /// without a settings file.
    pub fn entry(&self, value: &dyn Fn(&str) -> Option<Value>) -> Option<Value> {
        self.entry.map(|t| t.fill(value))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
pub enum ConfigFormat {
    Json,
    Toml,
    /// The host loads a plugin file from a directory (OpenCode); the
    /// installer generates the whole file instead of editing one.
    Plugin,
    /// The host runs the binary itself; there is nothing to install into.
    None,
}

/// A package the host loads (`install --format plugin`): a directory of
/// its manifest files and `hooks/hooks.json`, or a generated module.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Package {
    pub(crate) kind: PackageKind,
    /// What the host calls it: `plugin`, `extension`.
    pub(crate) noun: &'static str,
    /// How the user turns the package on, one sentence: `$path` is where
    /// it is (quoted for a shell), `$name` its name.
    pub(crate) load: &'static str,
    /// A directory package's own files by path, each a JSON template
    /// (`$name`, `$version`, `$description`, `$license`); the first is its
    /// manifest, whose `name` says the directory is ours.
    #[serde(default, deserialize_with = "an_object")]
    pub(crate) files: Object,
    /// The template of its `hooks/hooks.json`: `$hooks` is our entries
    /// (and `$description` as above).
    #[serde(default = "hooks_file")]
    pub(crate) hooks: Json,
}

fn hooks_file() -> Json {
    Json::Obj(&[("hooks", Json::Str("$hooks"))])
}

/// What a package is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "kebab-case"))]
pub enum PackageKind {
    /// A directory holding the package's files and `hooks/hooks.json`.
    Directory,
    /// One generated module in OpenCode's plugin directory, which hands
    /// its events to the shim (see `install::plugin`).
    OpencodeModule,
    /// One generated TypeScript extension in Pi's extension directory,
    /// which hands Pi's events to the shim (see `install::plugin`).
    PiExtension,
    /// One generated executable per event in a hooks directory the host
    /// scans, each named after its event (Cline), which runs the shim and
    /// answers the adapter's fallback refusal itself when the shim cannot
    /// (see `install::plugin`).
    HookScripts,
}

impl Package {
    pub fn kind(&self) -> PackageKind {
        self.kind
    }

    /// What the host calls it: `plugin`, `extension`.
    pub fn noun(&self) -> &'static str {
        self.noun
    }

    /// How the user turns the package on, with `$path` and `$name`.
    pub fn load(&self) -> &'static str {
        self.load
    }

    /// The file whose `name` says a directory is ours.
    pub fn manifest(&self) -> Option<&'static str> {
        self.files.first().map(|(path, _)| *path)
    }

    /// The paths of the package's own files (not `hooks/hooks.json`).
    pub fn file_paths(&self) -> impl Iterator<Item = &'static str> + use<> {
        self.files.iter().map(|(path, _)| *path)
    }

    /// Each of the package's own files (not `hooks/hooks.json`) with its
    /// value, the placeholders replaced by `value`'s.
    pub fn files<'a>(
        &'a self,
        value: &'a dyn Fn(&str) -> Option<Value>,
    ) -> impl Iterator<Item = (&'static str, Value)> + use<'a> {
        self.files
            .iter()
            .map(move |(path, t)| (*path, t.fill(value)))
    }

    /// The `hooks/hooks.json` value, the placeholders replaced.
    pub fn hooks_file(&self, value: &dyn Fn(&str) -> Option<Value>) -> Value {
        self.hooks.fill(value)
    }
}

/// Where `import` finds a host's own hooks, beyond the settings files it
/// reads as install writes them.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Import {
    pub reads: ImportReads,
    /// Where the host runs a user hook's command: `project` (the default),
    /// or `file`, the directory of the file the hook is in (Cursor: a
    /// `./hooks/x.sh` beside `~/.cursor/hooks.json`). A project hook runs
    /// from the project root either way (Cursor's `.cursor/hooks/x.sh`).
    #[serde(default, rename(deserialize = "runsFrom"))]
    pub runs_from: RunsFrom,
    /// Files beside each settings file that hold hooks too.
    #[serde(borrow, default, deserialize_with = "list")]
    pub siblings: &'static [Sibling],
    /// Hooks that come with the host's own packages (Claude Code plugins,
    /// Gemini CLI extensions): where they are, so `import` can list them.
    pub packages: Option<PackageHooks>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
pub enum RunsFrom {
    #[default]
    Project,
    File,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
pub enum ImportReads {
    /// The settings files.
    Files,
    /// Every file of the settings file's format in each settings file's
    /// directory (a host that loads every hooks file there).
    Directory,
}

/// Where a host's installed packages keep their hooks.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub struct PackageHooks {
    /// What the host calls one (`plugin`, `extension`).
    pub noun: &'static str,
    /// A JSON file (`~/…`) listing them: `plugins.<id>[].installPath`
    /// (Claude Code), or `plugins[]` of `{id, root, enabled}` (Kimi Code).
    pub registry: Option<&'static str>,
    /// A directory (`~/…`) with one package per subdirectory, or per
    /// subdirectory `depth` levels down (Codex's
    /// `cache/<marketplace>/<name>/<version>`).
    pub directory: Option<&'static str>,
    #[serde(default = "one")]
    pub depth: usize,
    /// A package's id from its path under `directory`: `{0}`, `{1}`… are
    /// its components (`{1}@{0}`); by default the first.
    pub id: Option<&'static str>,
    /// The settings key whose `<id>: true` (or `<id>.enabled = true`)
    /// turns a listed one on.
    pub enabled_key: Option<&'static str>,
    /// The file inside a package that holds its hooks: the first of these
    /// that exists.
    #[serde(deserialize_with = "list")]
    pub hooks: &'static [&'static str],
    /// That file's `hooks` is one list of handlers, each naming its
    /// `event` (Kimi Code's plugin manifest), not an object of events.
    #[serde(default)]
    pub event_list: bool,
    /// The variable the host sets to the package's directory, or the text
    /// it substitutes there (`${extensionPath}`).
    pub root: &'static str,
}

fn one() -> usize {
    1
}

/// A file beside a settings file, by name, and how it holds its hooks.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sibling {
    pub file: &'static str,
    pub format: ConfigFormat,
    pub layout: Layout,
}

/// How the host runs a hook written for it and reads the hook's answer:
/// the contract a registration with `command.protocol` naming this host is
/// held to. Paths are dotted keys into the hook's JSON answer, read in
/// order (the first present wins); events are canonical names.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub struct HookProtocol {
    /// The payload key that names the event, when the host sends one.
    pub(crate) event_field: Option<&'static str>,
    /// Where a JSON answer says allow, ask or deny (`approve` and `block`
    /// are read as allow and deny).
    #[serde(default, deserialize_with = "list")]
    pub(crate) decision: &'static [&'static str],
    /// Where `false` refuses (`continue: false`): read as a deny.
    #[serde(default, deserialize_with = "list")]
    pub(crate) denies_when_false: &'static [&'static str],
    #[serde(default, deserialize_with = "list")]
    pub(crate) reason: &'static [&'static str],
    /// Where a Stop answer sends the agent on with a message of its own
    /// (Cursor's `followup_message`): a non-empty text there blocks the
    /// stop with that text as the reason.
    #[serde(default, deserialize_with = "list")]
    pub(crate) followup: &'static [&'static str],
    /// Where it adds context for the model; every one present is kept.
    #[serde(default, deserialize_with = "list")]
    pub(crate) context: &'static [&'static str],
    /// Where it shows a line to the person.
    #[serde(default, deserialize_with = "list")]
    pub(crate) notice: &'static [&'static str],
    /// A deny without a reason is a failed hook (the call proceeds).
    #[serde(default)]
    pub(crate) deny_needs_reason: bool,
    /// Events on which stdout that is not a JSON answer is context for the
    /// model, and on which it is a line for the person; elsewhere it is
    /// ignored, as JSON that does not parse is.
    #[serde(default, deserialize_with = "list")]
    pub(crate) text_context: &'static [On],
    #[serde(default, deserialize_with = "list")]
    pub(crate) text_notice: &'static [On],
    /// Events on which exit 2 denies, with stderr (or `exit2Reason`) as
    /// the reason, and on which its stderr is context for the model;
    /// elsewhere exit 2 is a failed hook.
    #[serde(default, deserialize_with = "list")]
    pub(crate) exit2_denies: &'static [On],
    #[serde(default, deserialize_with = "list")]
    pub(crate) exit2_context: &'static [On],
    /// Exit 2 with nothing on stderr is a failed hook.
    #[serde(default)]
    pub(crate) exit2_needs_stderr: bool,
    /// The reason exit 2 denies with when the host does not pass stderr on.
    pub(crate) exit2_reason: Option<&'static str>,
    /// Events on which a failed hook (another exit code, a signal) denies,
    /// and on which a timeout does; elsewhere the call proceeds.
    #[serde(default, deserialize_with = "list")]
    pub(crate) error_denies: &'static [On],
    #[serde(default, deserialize_with = "list")]
    pub(crate) timeout_denies: &'static [On],
    /// How the host reads an `ask` answer.
    #[serde(default)]
    pub(crate) ask: AskReading,
}

/// What a host makes of a hook that answers `ask`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
pub enum AskReading {
    /// It asks the person.
    #[default]
    Ask,
    /// It rejects the answer as unsupported: a failed hook.
    Failed,
    /// It reads no decision: the call goes on as if the hook said nothing.
    Nothing,
}

impl HookProtocol {
    /// Whether a hook speaking this protocol can refuse `event`: the four
    /// gate-capable events, and an event only a host-native hook may block
    /// ([`Event::blocks_only_natively`]) where this host reads exit 2 on it
    /// as a block.
    pub fn blocks(&self, event: Event) -> bool {
        event.is_gate_capable()
            || (event.blocks_only_natively() && self.exit2_denies.iter().any(|o| o.0 == event))
    }
}

/// A canonical event named in an adapter list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct On(#[serde(with = "event_name")] pub(crate) Event);

impl<'de> Deserialize<'de> for On {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<On, D::Error> {
        event_name::deserialize(d).map(On)
    }
}

/// How a host has the user review new or changed hooks before it runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "kebab-case"))]
pub enum HookReview {
    /// Trusted in the host's `/hooks`, which records a hash of each hook in
    /// the user's config: Codex (see `install::codex_trust`).
    CodexTrustedHash,
}

/// A host that runs a repository's hooks only in a folder the user trusts.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectTrust {
    /// `doctor`'s warning for a project file (`$file` names it).
    pub warning: &'static str,
    /// What fixes it.
    pub fix: &'static str,
    /// `install`'s note after wiring a project file.
    pub note: &'static str,
}

/// Another host whose hook files this host runs too, so wiring both can
/// deliver one event twice.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlsoRuns {
    /// The other host's name.
    pub host: &'static str,
    /// How, for `doctor` ("… also runs the hooks in …").
    pub how: &'static str,
    /// `install`'s note when both are wired.
    pub note: &'static str,
}

/// What a host does with a tool call when the shim cannot answer it: the
/// binary is missing (moved, deleted), the process is killed, or it hangs
/// past the host's timeout. Recorded against the real CLI, not taken from
/// its docs; `doctor` reports it for every wired host.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub struct ShimFailure {
    /// Without the switch (or on a host that has none).
    pub missing: Failing,
    pub killed: Failing,
    pub hung: Failing,
    /// The host's own fail-closed switch on a handler: with it every such
    /// failure refuses the call.
    pub switch: Option<FailClosedSwitch>,
    /// On a host without a switch, the refusal the wired command answers
    /// itself when the shim cannot start or exits non-zero:
    /// `<shim command> || <fallback>`.
    pub fallback: Option<ShimFallback>,
    /// Where the behaviour was seen.
    pub source: &'static str,
}

/// The shell command a host's wiring runs after the shim (`<shim> ||
/// <command>`) when the shim is missing, crashes or is killed, answering
/// the refusal in the host's own terms (deepagents-code: exit 2 with the
/// reason on stderr), for a host that would otherwise let the call run.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub struct ShimFallback {
    /// The host events whose command carries it.
    #[serde(borrow, deserialize_with = "list")]
    pub events: &'static [&'static str],
    /// One line of POSIX shell without ` || `; `$event` is the host event.
    pub command: &'static str,
}

/// The settings that turn on a host's sandbox for the agent's commands and
/// deny them writes to listed paths (Claude Code's `sandbox`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub struct HostSandbox {
    /// Dotted settings paths that must be `true`.
    #[serde(borrow, default, deserialize_with = "list")]
    pub require_true: &'static [&'static str],
    /// Dotted settings paths that must be `false`.
    #[serde(default, deserialize_with = "list")]
    pub require_false: &'static [&'static str],
    /// The dotted path of the list of paths its commands may not write.
    pub deny_write: &'static str,
    /// What goes before an absolute path in that list.
    pub absolute_prefix: &'static str,
    /// Where the behaviour was seen.
    pub source: &'static str,
}

/// Whether the tool call goes ahead when the shim cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
pub enum Failing {
    /// The call runs.
    Open,
    /// The call is refused.
    Closed,
}

/// A handler key that makes the host refuse the guarded action when the
/// hook fails (Claude Code `onFailure: "block"`, Cursor `failClosed: true`);
/// install writes it through the entry template's `$failClosed`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub struct FailClosedSwitch {
    /// The handler key (the entry template puts `$failClosed` under it).
    pub key: &'static str,
    /// The value that turns it on.
    pub(crate) value: Json,
    /// The host events that honour it; empty: every event that can gate.
    #[serde(borrow, default, deserialize_with = "list")]
    pub events: &'static [&'static str],
    /// The first host version that knows the key: install writes it only
    /// when every copy of the host's executables found reports at least
    /// this (an older one ignores the key, and the person would believe
    /// the wiring fails closed).
    pub min_version: Option<&'static str>,
    /// Where a copy of the host may be installed besides `PATH` (`~` the
    /// home; one `*` per path component matches any name there).
    #[serde(default, deserialize_with = "list")]
    pub installs: &'static [&'static str],
}

impl FailClosedSwitch {
    /// The value that turns it on, as JSON.
    pub fn value(&self) -> Value {
        self.value.to_value()
    }

    /// Whether host event `host_event` honours the switch.
    pub fn applies_to(&self, host_event: &str) -> bool {
        self.events.is_empty() || self.events.contains(&host_event)
    }
}

/// `var`, when set, replaces the `replaces` prefix (e.g. `~/.codex`) of the
/// user paths.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HomeEnv {
    pub var: &'static str,
    pub replaces: &'static str,
}

/// One payload field mapping: the first `from` path present wins. A `from`
/// written as one string is a one-element list.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FieldMap {
    pub to: &'static str,
    #[serde(deserialize_with = "one_or_list")]
    pub from: &'static [&'static str],
    /// `type` in the file; `string` when absent.
    #[serde(rename(deserialize = "type"), default)]
    pub kind: ValueKind,
    pub transform: Option<Transform>,
    #[serde(default)]
    pub required: bool,
    /// Host values renamed to canonical ones (Copilot's `source: "new"` is
    /// `startup`), sorted by host value; values not listed pass through
    /// unchanged.
    #[serde(default, deserialize_with = "table")]
    pub values: Table,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
#[allow(
    dead_code,
    reason = "build.rs emits the variants the adapter files use"
)]
pub(crate) enum ValueKind {
    #[default]
    String,
    Boolean,
    Number,
    Object,
    Array,
    Any,
}

impl ValueKind {
    pub fn accepts(self, v: &Value) -> bool {
        match self {
            ValueKind::String => v.is_string(),
            ValueKind::Boolean => v.is_boolean(),
            ValueKind::Number => v.is_number(),
            ValueKind::Object => v.is_object(),
            ValueKind::Array => v.is_array(),
            ValueKind::Any => true,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ValueKind::String => "a string",
            ValueKind::Boolean => "a boolean",
            ValueKind::Number => "a number",
            ValueKind::Object => "an object",
            ValueKind::Array => "an array",
            ValueKind::Any => "any value",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "lowercase"))]
pub(crate) enum Transform {
    Tool,
    Json,
    Error,
    Positive,
    Text,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all(deserialize = "camelCase"))]
pub(crate) struct Mcp {
    pub prefix: &'static str,
    pub server_path: Option<&'static str>,
    pub tool_path: Option<&'static str>,
    pub default_server: Option<&'static str>,
}

/// One host event and how it maps and answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostEvent {
    /// The key of the event in the file's `events` object.
    #[serde(skip_deserializing)]
    pub(crate) name: &'static str,
    #[serde(with = "event_name")]
    pub(crate) event: Event,
    /// `wire` in the file; true when absent.
    #[serde(default = "yes")]
    pub(crate) wire: bool,
    #[serde(default, deserialize_with = "list")]
    pub(crate) fields: &'static [FieldMap],
    #[serde(borrow, default, deserialize_with = "list")]
    pub(crate) require: &'static [&'static str],
    pub(crate) refine: Option<Refine>,
    pub(crate) skip: Option<Skip>,
    pub(crate) deny: Option<Output>,
    pub(crate) ask: Option<Output>,
    pub(crate) context: Option<Output>,
    pub(crate) notice: Option<Output>,
}

impl HostEvent {
    /// The host's own name for the event (`BeforeTool`, `preToolUse`, …).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The canonical event it maps to (before any payload refinement).
    pub fn event(&self) -> Event {
        self.event
    }

    /// Whether the installer registers it (false for aliases of a wired event).
    pub fn wired(&self) -> bool {
        self.wire
    }

    /// Whether a deny on this host event reaches the host at all.
    pub fn can_deny(&self) -> bool {
        self.deny.is_some()
    }

    /// Whether this host event has its own ask (otherwise an ask is sent as a deny).
    pub fn can_ask(&self) -> bool {
        self.ask.is_some()
    }

    /// Whether additional context reaches the model on this host event.
    pub fn can_add_context(&self) -> bool {
        self.context.is_some()
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Refine {
    pub when: &'static str,
    #[serde(with = "event_name")]
    pub event: Event,
}

/// A delivery that repeats what another host event already reported (Qwen
/// Code re-fires UserPromptSubmit with an empty prompt after every tool
/// round; Copilot fires agentStop inside a subagent before its
/// subagentStop): skipped when the payload path is present, or, with
/// `equals`, when it holds that value.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Skip {
    pub when: &'static str,
    pub equals: Option<Json>,
    pub why: &'static str,
}

/// One kind of answer in the host's shape: a stdout object (placeholders
/// `$reason`, `$context`, `$notices`), a stderr line, an exit code.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The stdout object's entries, in file order.
    #[serde(default, deserialize_with = "entries")]
    pub(crate) stdout: Option<&'static [(&'static str, Json)]>,
    pub(crate) stderr: Option<&'static str>,
    #[serde(default)]
    pub(crate) exit: u8,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BridgeSpec {
    #[serde(with = "event_name")]
    pub event: Event,
    #[serde(with = "event_name")]
    pub via: Event,
    pub tool: &'static str,
}

/// An event the host cannot gate, enforced at another event for one
/// canonical tool: SubagentStart gates run at the PreToolUse of `Agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bridge<'a> {
    pub event: Event,
    pub via: Event,
    pub tool: &'a str,
}

impl Adapter {
    /// The `<host>` argument of `run`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn display_name(&self) -> &'static str {
        self.display_name
    }

    /// Other names the human commands accept for the host (`claude` for
    /// claude-code), in file order.
    pub fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }

    /// The host's own programs (`claude`, `kimi-code`), each of which starts
    /// an agent session of its own.
    pub fn executables(&self) -> &'static [&'static str] {
        self.executables
    }

    /// The variables that move where the host reads its config
    /// (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`).
    pub fn config_env(&self) -> &'static [&'static str] {
        self.config_env
    }

    /// `hookEnv`: names (a `*` suffix for a prefix) of the variables the
    /// host sets for its hooks, which its hooks get through the allowlist.
    pub fn hook_env(&self) -> &'static [&'static str] {
        self.hook_env
    }

    /// Where the facts in the adapter file come from.
    pub fn sources(&self) -> &'static [&'static str] {
        self.sources
    }

    /// Whether the host speaks the keryx native protocol (the caller gets the
    /// whole composed result back instead of a host-shaped answer).
    pub fn is_native(&self) -> bool {
        self.encoder == EncoderKind::Keryx
    }

    /// Every host event the adapter maps, in file order.
    pub fn events(&self) -> &'static [HostEvent] {
        self.events
    }

    /// The host events the installer registers, with their canonical event.
    pub fn wired_events(&self) -> impl Iterator<Item = (&'static str, Event)> + use<> {
        self.events
            .iter()
            .filter(|e| e.wire)
            .map(|e| (e.name, e.event))
    }

    /// Host events that exist but are deliberately not handled.
    /// The project paths it loads code or starts commands from.
    pub fn project_code(&self) -> &'static [&'static str] {
        self.project_code
    }

    pub fn unmapped_events(&self) -> &'static [&'static str] {
        self.unmapped
    }

    pub(crate) fn host_event(&self, host_event: &str) -> Option<&'static HostEvent> {
        self.events.iter().find(|e| e.name == host_event)
    }

    /// The canonical event a host event maps to; `None` for unknown and
    /// unmapped host events. A payload may still refine it (Gemini's AfterTool
    /// with an error decodes as PostToolUseFailure).
    pub fn canonical_event(&self, host_event: &str) -> Option<Event> {
        self.host_event(host_event).map(|e| e.event)
    }

    /// The wired host event for a canonical event (`PreToolUse` → `BeforeTool`).
    pub fn host_event_for(&self, event: Event) -> Option<&'static str> {
        self.events
            .iter()
            .find(|e| e.wire && e.event == event)
            .map(|e| e.name)
    }

    fn mapped(&self, event: Event) -> impl Iterator<Item = &'static HostEvent> + use<> {
        self.events.iter().filter(move |e| e.event == event)
    }

    /// Whether an ask can reach a person on this host (on PreToolUse, the one
    /// place an ask means anything); otherwise asks are sent as denies.
    pub fn can_ask(&self) -> bool {
        match self.encoder {
            EncoderKind::Keryx => true,
            EncoderKind::Template => self.events.iter().any(|e| e.ask.is_some()),
        }
    }

    /// Whether a deny on `event` changes what the host does. Only the four
    /// gate-capable events can; a host may still lack a way to say it.
    pub fn can_gate(&self, event: Event) -> bool {
        if !event.is_gate_capable() {
            return false;
        }
        match self.encoder {
            EncoderKind::Keryx => true,
            EncoderKind::Template => self.mapped(event).any(|e| e.deny.is_some()),
        }
    }

    /// Where the gates of an event this host cannot gate are enforced instead.
    pub fn bridge_for(&self, event: Event) -> Option<Bridge<'static>> {
        if self.can_gate(event) {
            return None;
        }
        self.bridges
            .iter()
            .find(|b| b.event == event)
            .map(|b| Bridge {
                event: b.event,
                via: b.via,
                tool: b.tool,
            })
    }

    pub fn timeout_unit(&self) -> TimeoutUnit {
        self.timeout.unit
    }

    /// The host's default hook timeout, in [`Adapter::timeout_unit`].
    pub fn default_timeout(&self) -> Option<u64> {
        self.timeout.default
    }

    /// The longest hook timeout the host accepts, in
    /// [`Adapter::timeout_unit`].
    pub fn max_timeout(&self) -> Option<u64> {
        self.timeout.max
    }

    pub fn config_files(&self) -> &ConfigFiles {
        &self.config_files
    }

    /// The host's own packaging, if `install --format plugin` makes one.
    pub fn package(&self) -> Option<&Package> {
        self.package.as_ref()
    }

    /// What `import` reads of the host's own hooks, if it reads them.
    pub fn hook_protocol(&self) -> Option<&HookProtocol> {
        self.hook_protocol.as_ref()
    }

    pub fn import(&self) -> Option<&Import> {
        self.import.as_ref()
    }

    /// How the host has the user review new hooks, if it does.
    pub fn reviews_hooks(&self) -> Option<HookReview> {
        self.reviews_hooks
    }

    /// What a project-scope wiring needs before the host runs it, if anything.
    pub fn project_trust(&self) -> Option<&ProjectTrust> {
        self.project_trust.as_ref()
    }

    /// Another host whose hook files this host runs too, if any.
    pub fn also_runs(&self) -> Option<&AlsoRuns> {
        self.also_runs.as_ref()
    }

    /// What the host does when the shim cannot answer, if recorded.
    pub fn shim_failure(&self) -> Option<&ShimFailure> {
        self.shim_failure.as_ref()
    }

    /// The host's own sandbox for the agent's commands, if keryx-hooks
    /// can set it.
    pub fn host_sandbox(&self) -> Option<&HostSandbox> {
        self.host_sandbox.as_ref()
    }

    /// The host's fail-closed switch, if it has one.
    pub fn fail_closed_switch(&self) -> Option<&FailClosedSwitch> {
        self.shim_failure.as_ref().and_then(|f| f.switch.as_ref())
    }

    /// The refusal the wired command for `host_event` runs after the shim
    /// when the shim cannot answer (`<shim> || <this>`), if the adapter
    /// has one for that event.
    pub fn shim_fallback(&self, host_event: &str) -> Option<String> {
        let f = self.shim_failure.as_ref()?.fallback.as_ref()?;
        f.events
            .contains(&host_event)
            .then(|| f.command.replace("$event", host_event))
    }

    /// The host's match-everything matcher; `None` means omit the matcher.
    pub fn match_all(&self) -> Option<&'static str> {
        self.match_all
    }

    /// Whether the host closes stdin after the payload (the guard never
    /// depends on it; this is for `doctor`).
    pub fn closes_stdin(&self) -> bool {
        self.closes_stdin
    }

    /// The host's exit-code rule, one sentence.
    pub fn exit_rule(&self) -> &'static str {
        self.exit_rule
    }

    /// Known limitations, one sentence each.
    pub fn notes(&self) -> &'static [&'static str] {
        self.notes
    }
}

// ---------------------------------------------------------- reading a file

/// `wire`'s default.
fn yes() -> bool {
    true
}

/// A list, kept for good: only build.rs (and the tests of the data) read
/// an adapter file, once.
fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<&'static [T], D::Error> {
    Vec::<T>::deserialize(d).map(|v| &*v.leak())
}

/// A string-to-string object as a [`Table`], sorted by key.
fn table<'de, D: Deserializer<'de>>(d: D) -> Result<Table, D::Error> {
    struct Pairs;
    impl<'de> Visitor<'de> for Pairs {
        type Value = Table;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of strings")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Table, A::Error> {
            let mut pairs: Vec<(&'static str, &'static str)> = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                let v = map.next_value::<String>()?;
                pairs.push((k.leak(), v.leak()));
            }
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            Ok(pairs.leak())
        }
    }
    d.deserialize_map(Pairs)
}

/// `from`: one path, or a list of them; one path is a list of one.
fn one_or_list<'de, D: Deserializer<'de>>(d: D) -> Result<&'static [&'static str], D::Error> {
    struct Paths;
    impl<'de> Visitor<'de> for Paths {
        type Value = &'static [&'static str];

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a string or a list of strings")
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            Ok(vec![&*s.to_owned().leak()].leak())
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out: Vec<&'static str> = Vec::new();
            while let Some(s) = seq.next_element::<String>()? {
                out.push(s.leak());
            }
            Ok(out.leak())
        }
    }
    d.deserialize_any(Paths)
}

/// The `events` object, in file order, each event named by its key.
fn host_events<'de: 'static, D: Deserializer<'de>>(d: D) -> Result<&'static [HostEvent], D::Error> {
    struct Events;
    impl<'de: 'static> Visitor<'de> for Events {
        type Value = &'static [HostEvent];

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of host events")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(name) = map.next_key::<String>()? {
                let mut event: HostEvent = map.next_value()?;
                event.name = name.leak();
                out.push(event);
            }
            Ok(out.leak())
        }
    }
    d.deserialize_map(Events)
}

/// An output template's `stdout` object: its entries in file order.
fn entries<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Object>, D::Error> {
    Ok(Option::<Entries>::deserialize(d)?.map(|e| e.0))
}

/// A JSON object (a package's files by path): its entries in file order.
fn an_object<'de, D: Deserializer<'de>>(d: D) -> Result<Object, D::Error> {
    Entries::deserialize(d).map(|e| e.0)
}

/// A JSON object's entries, in file order.
type Object = &'static [(&'static str, Json)];

struct Entries(Object);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Entries, D::Error> {
        struct AnObject;
        impl<'de> Visitor<'de> for AnObject {
            type Value = Entries;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Entries, A::Error> {
                object_entries(map).map(Entries)
            }
        }
        d.deserialize_map(AnObject)
    }
}

fn object_entries<'de, A: MapAccess<'de>>(mut map: A) -> Result<Object, A::Error> {
    let mut out: Vec<(&'static str, Json)> = Vec::new();
    while let Some(k) = map.next_key::<String>()? {
        let v = map.next_value()?;
        out.push((k.leak(), v));
    }
    Ok(out.leak())
}

/// Any JSON value but a number that is not an integer.
impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Int(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Json, E> {
        i64::try_from(n).map(Json::Int).map_err(|_| unsupported(n))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
        Err(unsupported(n))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Json, E> {
        Ok(Json::Str(s.to_owned().leak()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Json::Arr(out.leak()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Json, A::Error> {
        object_entries(map).map(Json::Obj)
    }
}

fn unsupported<E: de::Error>(n: impl std::fmt::Display) -> E {
    E::custom(format!(
        "the number {n} is not supported: only integers that fit an i64 are"
    ))
}

/// A canonical event by its name, written as the `Event` variant.
mod event_name {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    use super::Event;

    pub fn serialize<S: Serializer>(e: &Event, s: S) -> Result<S::Ok, S::Error> {
        let index = Event::ALL.iter().position(|x| x == e).unwrap_or_default();
        s.serialize_unit_variant("Event", index as u32, e.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        d.deserialize_str(Name)
    }

    struct Name;

    impl Visitor<'_> for Name {
        type Value = Event;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a canonical event name")
        }

        fn visit_str<E: de::Error>(self, name: &str) -> Result<Event, E> {
            name.parse().map_err(|_| {
                let all: Vec<&str> = Event::ALL.iter().map(|e| e.as_str()).collect();
                E::custom(format!(
                    "unknown event `{name}`, expected one of `{}`",
                    all.join("`, `")
                ))
            })
        }
    }
}

/// The value at a dotted path of an adapter (a payload field's `from`, a
/// hook answer's `decision`); numeric segments index arrays. JSON null
/// counts as absent, as hosts send null for "not known" (Codex, Cursor).
pub(crate) fn lookup_path<'v>(payload: &'v Value, path: &str) -> Option<&'v Value> {
    let mut cur = payload;
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(m) => m.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    (!cur.is_null()).then_some(cur)
}

/// How an error message names the JSON type of `v`: build.rs's reading of
/// an adapter file and the decoder of a host payload say it alike.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
