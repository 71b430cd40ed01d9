//! What `import` makes of a host's own hook entries: for each handler, a
//! keryx registration (id, class, matcher, timeout, `/bin/sh -c` argv as
//! the host runs it) with exactly the grants its command text shows it
//! needs, or the reason it stays with the host. Pure: the command reads
//! the files and writes the results.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::hostfile::json::{Listed, Shape};
use super::hostfile::wiring::{self, Format};
use super::hostfile::{HostFileError, Scope, config_files};
use super::own_dir;
use crate::config::model::HookClass;
use crate::events::Event;
use crate::hosts::{Adapter, ConfigFormat, ImportReads, TimeoutUnit};
use crate::paths::Locations;

/// Whether `import` reads `host`'s own hook entries (its adapter's `import`).
pub fn reads(host: &Adapter) -> bool {
    host.import().is_some()
}

/// The hosts whose own hook entries `import` reads, sorted by name.
pub fn hosts() -> Vec<&'static Adapter> {
    crate::hosts::all().filter(|a| reads(a)).collect()
}

/// The `$schema` a hooks file created by `import` names.
pub const SCHEMA_URL: &str = "https://keryx.dev/schema/hook-config.schema.json";

/// The longest a registration may run (`timeoutMs` maximum).
const MAX_TIMEOUT_MS: u64 = 60_000;

/// The environment every hook gets anyway (the allowlist and the runner's
/// own variables): never worth a passthrough.
const ALWAYS_SET: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "LANG",
    "LC_ALL",
    "TERM",
    "CLAUDE_PROJECT_DIR",
    "XDG_CACHE_HOME",
];

/// What a hook granted the network needs to reach it from where the person
/// is: the proxy settings and the CA bundles the common clients read.
const NETWORK_ENV: &[&str] = &[
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
    "UV_NATIVE_TLS",
];

/// What a notifier needs to reach the desktop session.
const DESKTOP_ENV: &[&str] = &[
    "DBUS_SESSION_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "XAUTHORITY",
];

/// Shell variables that are the shell's own, not the environment's.
const SHELL_OWN: &[&str] = &[
    "PWD",
    "OLDPWD",
    "IFS",
    "RANDOM",
    "LINENO",
    "SECONDS",
    "BASH_SOURCE",
    "BASH_REMATCH",
    "BASHPID",
    "FUNCNAME",
    "PIPESTATUS",
    "REPLY",
    "OPTARG",
    "OPTIND",
    "HOSTNAME",
    "UID",
    "EUID",
    "PPID",
    "SHLVL",
    "BASH_VERSION",
    "ZSH_VERSION",
    "_",
];

/// One host file `import` reads, and how it is laid out.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: PathBuf,
    pub format: Format,
}

/// The files `host` keeps its hooks in at `scope`, as its adapter's
/// `import` says: the ones `install` edits, or every file of their format
/// in their directories (Copilot), plus the siblings beside each (Codex's
/// `hooks.json` beside its `config.toml`).
pub fn source_files(host: &Adapter, scope: Scope, loc: &Locations) -> Vec<SourceFile> {
    let Some(format) = wiring::format(host) else {
        return Vec::new();
    };
    let import = host.import();
    let whole_directory = import.is_some_and(|i| i.reads == ImportReads::Directory);
    let siblings = import.map_or(&[][..], |i| i.siblings);
    let extension = match host.config_files().format {
        ConfigFormat::Toml => "toml",
        _ => "json",
    };
    let mut out = Vec::new();
    for path in config_files(host, scope, loc) {
        if whole_directory {
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == extension) && p.is_file())
                .collect();
            found.sort();
            out.extend(found.into_iter().map(|path| SourceFile { path, format }));
        } else {
            out.push(SourceFile {
                path: path.clone(),
                format,
            });
        }
        for sibling in siblings {
            if let Some(format) = wiring::file_format(sibling.format, sibling.layout) {
                out.push(SourceFile {
                    path: path.with_file_name(sibling.file),
                    format,
                });
            }
        }
    }
    out
}

/// Every handler in `text`, laid out as `format`.
pub fn list(text: &str, format: Format) -> Result<Vec<Listed>, HostFileError> {
    match format {
        Format::Json(shape) => super::hostfile::json::list(text, &shape),
        Format::Toml(shape) => super::hostfile::toml::list(text, shape),
        Format::PluginFile => Ok(Vec::new()),
    }
}

/// `text` without the handlers `pick` names.
pub fn remove(
    text: &str,
    format: Format,
    pick: super::hostfile::json::Pick,
) -> Result<String, HostFileError> {
    match format {
        Format::Json(shape) => super::hostfile::json::remove(text, &shape, pick),
        Format::Toml(shape) => super::hostfile::toml::remove(text, shape, pick),
        Format::PluginFile => Ok(text.to_owned()),
    }
}

fn command_keys(format: Format) -> &'static [&'static str] {
    match format {
        Format::Json(Shape { command_keys, .. }) => command_keys,
        _ => &["command"],
    }
}

fn timeout_keys(format: Format) -> &'static [&'static str] {
    match format {
        Format::Json(Shape { timeout_keys, .. }) => timeout_keys,
        _ => &["timeout"],
    }
}

/// A hooks file that came with one of the host's packages (a plugin, an
/// extension).
#[derive(Debug, Clone)]
pub struct PackageFile {
    /// The package's id or directory name.
    pub name: String,
    pub file: SourceFile,
    /// The file's `hooks` is one list of handlers naming their `event`.
    pub event_list: bool,
}

/// The hooks files of `host`'s installed (and, where the host says which,
/// enabled) packages, as its adapter's `import.packages` says. They are
/// listed, never edited: they belong to the package.
pub fn package_files(host: &Adapter, scope: Scope, loc: &Locations) -> Vec<PackageFile> {
    let (Some(pkg), Some(_), Scope::User) = (
        host.import().and_then(|i| i.packages.as_ref()),
        wiring::format(host),
        scope,
    ) else {
        return Vec::new();
    };
    let home = |p: &str| super::hostfile::user_path(host.config_files(), p, loc);
    let enabled: Option<BTreeSet<String>> = pkg.enabled_key.map(|key| enabled_ids(host, key, loc));
    let mut roots: Vec<(String, PathBuf)> = Vec::new();
    if let Some(registry) = pkg.registry.map(home).as_deref().and_then(read_json) {
        roots.extend(registered(&registry));
    }
    if let Some(dir) = pkg.directory.map(home) {
        roots.extend(package_dirs(&dir, pkg.depth, pkg.id));
    }
    // Packages keep Claude Code's nested JSON on every host (or, with
    // `eventList`, a list that `list_package` reads).
    let format = Format::Json(wiring::NESTED_JSON);
    roots
        .into_iter()
        .filter(|(id, _)| enabled.as_ref().is_none_or(|on| on.contains(id)))
        .filter_map(|(name, root)| {
            let path = pkg
                .hooks
                .iter()
                .map(|h| root.join(h))
                .find(|p| p.is_file())?;
            Some(PackageFile {
                name,
                file: SourceFile { path, format },
                event_list: pkg.event_list,
            })
        })
        .collect()
}

/// Every handler in a package's hooks file.
pub fn list_package(text: &str, pkg: &PackageFile) -> Result<Vec<Listed>, HostFileError> {
    if !pkg.event_list {
        return list(text, pkg.file.format);
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let root = crate::textfile::json::parse(body).map_err(HostFileError::Json)?;
    let v = crate::textfile::json::to_value(body, &root);
    Ok(v.get("hooks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|h| Listed {
            key: h
                .get("event")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            matcher: h.get("matcher").and_then(Value::as_str).map(str::to_owned),
            handler: h.clone(),
        })
        .collect())
}

fn read_json(p: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

/// The packages a registry file lists, with their directories: Claude
/// Code's `plugins.<id>[].installPath`, or Kimi Code's `plugins[]` of
/// `{id, root, enabled}` (a disabled one left out).
fn registered(registry: &Value) -> Vec<(String, PathBuf)> {
    match registry.get("plugins") {
        Some(Value::Object(by_id)) => by_id
            .iter()
            .flat_map(|(id, installs)| {
                installs
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i.get("installPath").and_then(Value::as_str))
                    .map(|path| (id.clone(), PathBuf::from(path)))
            })
            .collect(),
        Some(Value::Array(list)) => list
            .iter()
            .filter(|p| p.get("enabled") != Some(&Value::Bool(false)))
            .filter_map(|p| {
                let id = p.get("id").and_then(Value::as_str)?;
                let root = p.get("root").and_then(Value::as_str)?;
                Some((id.to_owned(), PathBuf::from(root)))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The directories `depth` levels under `dir`, sorted, each with its id:
/// `id` filled from the path's components (`{1}@{0}`), or the first.
fn package_dirs(dir: &Path, depth: usize, id: Option<&str>) -> Vec<(String, PathBuf)> {
    let mut level: Vec<(Vec<String>, PathBuf)> = vec![(Vec::new(), dir.to_path_buf())];
    for _ in 0..depth {
        level = level
            .into_iter()
            .flat_map(|(parts, d)| {
                std::fs::read_dir(&d)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|e| e.path().is_dir())
                    .map(move |e| {
                        let mut parts = parts.clone();
                        parts.push(e.file_name().to_string_lossy().into_owned());
                        (parts, e.path())
                    })
            })
            .collect();
    }
    let mut found: Vec<(String, PathBuf)> = level
        .into_iter()
        .map(|(parts, path)| {
            let name = match id {
                Some(template) => parts
                    .iter()
                    .enumerate()
                    .fold(template.to_owned(), |t, (i, p)| {
                        t.replace(&format!("{{{i}}}"), p)
                    }),
                None => parts.first().cloned().unwrap_or_default(),
            };
            (name, path)
        })
        .collect();
    found.sort();
    found
}

/// The package ids the host's user settings turn on under `key`: `<id>:
/// true` (Claude Code's `enabledPlugins`) or `<id>.enabled = true`
/// (Codex's `[plugins."<id>"]`), in JSON or TOML settings.
fn enabled_ids(host: &Adapter, key: &str, loc: &Locations) -> BTreeSet<String> {
    let on = |v: &Value| v == &Value::Bool(true) || v.get("enabled") == Some(&Value::Bool(true));
    config_files(host, Scope::User, loc)
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            match host.config_files().format {
                ConfigFormat::Toml => text
                    .parse::<toml_edit::DocumentMut>()
                    .ok()
                    .map(|d| crate::textfile::toml::table_json(d.as_table())),
                _ => serde_json::from_str(&text).ok(),
            }
        })
        .filter_map(|v| v.get(key).and_then(Value::as_object).cloned())
        .flat_map(|o| o.into_iter())
        .filter(|(_, v)| on(v))
        .map(|(id, _)| id)
        .collect()
}

/// Every handler in a package's hooks file, each staying with the host.
pub fn plan_package(host: &Adapter, pkg: &PackageFile, handlers: &[Listed]) -> Vec<Planned> {
    let noun = host
        .import()
        .and_then(|i| i.packages.as_ref())
        .map_or("package", |p| p.noun);
    handlers
        .iter()
        .map(|l| Planned {
            host: host.name().to_owned(),
            file: pkg.file.path.clone(),
            host_event: l.key.clone(),
            matcher: l.matcher.clone(),
            command: command_keys(pkg.file.format)
                .iter()
                .find_map(|k| l.handler.get(*k).and_then(Value::as_str))
                .map(str::to_owned),
            outcome: Outcome::Leave {
                reason: format!(
                    "it comes with the {noun} `{}`, which {} installs, updates and runs; a copy in keryx-hooks would run it twice, so it stays there (keryx-hooks still guards the calls it sees)",
                    pkg.name,
                    host.display_name()
                ),
            },
        })
        .collect()
}

/// What a handler's command needs beyond the sandbox's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Grants {
    /// `sandbox.writable` entries.
    pub writable: Vec<String>,
    /// `runsIn: "unsandboxed"`.
    pub unsandboxed: bool,
    /// `command.envPassthrough`.
    pub env_passthrough: Vec<String>,
    /// One line per grant: what it is and what in the command asked for it.
    pub why: Vec<String>,
}

/// What `import` does with one handler.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase", tag = "action")]
pub enum Outcome {
    /// It becomes a keryx registration.
    Import(Box<Imported>),
    /// It stays in the host config, for this reason.
    Leave { reason: String },
}

/// One handler as a keryx registration.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Imported {
    pub id: String,
    pub event: &'static str,
    pub class: &'static str,
    /// The host whose hook contract it keeps (`command.protocol`).
    pub protocol: &'static str,
    /// What its crash or timeout does once imported.
    pub failure: String,
    pub matcher: String,
    pub timeout_ms: u64,
    pub grants: Grants,
    /// Notes on the conversion (a clamped timeout, a renamed tool).
    pub notes: Vec<String>,
    /// The entry written under `hooks.<event>`.
    pub registration: Value,
}

/// One handler found in a host file and what happens to it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Planned {
    pub host: String,
    pub file: PathBuf,
    pub host_event: String,
    pub matcher: Option<String>,
    /// `None` for a handler that is not a shell command (a prompt, an agent, a URL).
    pub command: Option<String>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Reads a script a command names, for the grant detection.
pub type ReadScript<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The plan for every handler in one host file; keryx-hooks' own wiring is
/// skipped. `read_script` gives the text of a local file the command names
/// (or `None`).
pub fn plan_file(
    host: &Adapter,
    scope: Scope,
    file: &SourceFile,
    handlers: &[Listed],
    read_script: ReadScript,
    fail_closed: bool,
) -> Vec<Planned> {
    let current = crate::paths::self_exe();
    let mut out: Vec<Planned> = Vec::new();
    for l in handlers {
        let command = command_keys(file.format)
            .iter()
            .find_map(|k| l.handler.get(*k).and_then(Value::as_str))
            .map(str::to_owned);
        if command
            .as_deref()
            .is_some_and(|c| wiring::is_ours(c, host.name(), Some(current)))
        {
            continue;
        }
        let outcome = plan_one(
            host,
            scope,
            file,
            l,
            command.as_deref(),
            read_script,
            fail_closed,
        );
        out.push(Planned {
            host: host.name().to_owned(),
            file: file.path.clone(),
            host_event: l.key.clone(),
            matcher: l.matcher.clone(),
            command,
            outcome,
        });
    }
    // A command left with the host under an event cannot also be taken out
    // of it there (the editor picks handlers by event and command).
    let left: BTreeSet<(String, String)> = out
        .iter()
        .filter(|p| matches!(p.outcome, Outcome::Leave { .. }))
        .filter_map(|p| Some((p.host_event.clone(), p.command.clone()?)))
        .collect();
    for p in &mut out {
        if let (Outcome::Import(_), Some(c)) = (&p.outcome, &p.command)
            && left.contains(&(p.host_event.clone(), c.clone()))
        {
            p.outcome = Outcome::Leave {
                reason: "the same command is registered again under this event in a form that stays with the host".into(),
            };
        }
    }
    out
}

fn plan_one(
    host: &Adapter,
    scope: Scope,
    file: &SourceFile,
    l: &Listed,
    command: Option<&str>,
    read_script: ReadScript,
    fail_closed: bool,
) -> Outcome {
    let format = file.format;
    let leave = |reason: String| Outcome::Leave { reason };
    let Some(event) = host.canonical_event(&l.key) else {
        return leave(format!(
            "keryx-hooks has no `{}` event; {} keeps running it",
            l.key,
            host.display_name()
        ));
    };
    // A host whose list names the event under `type` (Mistral Vibe) has
    // only command hooks.
    let ty = l
        .handler
        .get("type")
        .and_then(Value::as_str)
        .filter(|_| host.config_files().event_key != "type");
    if let Some(t) = ty.filter(|t| *t != "command") {
        return leave(format!(
            "a `type: \"{t}\"` hook is not a shell command; keryx-hooks runs only commands"
        ));
    }
    let Some(command) = command.filter(|c| !c.trim().is_empty()) else {
        return leave("it has no shell command keryx-hooks can run".into());
    };
    if l.handler.get("async").and_then(Value::as_bool) == Some(true) {
        return leave(
            "it runs in the background (`async: true`), which keryx-hooks does not do".into(),
        );
    }
    if l.handler.get("enabled").and_then(Value::as_bool) == Some(false) {
        return leave("it is turned off in the host config".into());
    }
    // Mistral Vibe's `match` is an fnmatch glob (or `re:` regex) on the
    // qualified tool name, or the agent name on `post_agent`: not a pattern
    // keryx-hooks can carry over as it is.
    if let Some(m) = l.handler.get("match").and_then(Value::as_str)
        && m != "*"
    {
        return leave(format!(
            "its `match` `{m}` selects {} names in {}'s own terms, which keryx-hooks does not translate; {} keeps running it",
            if event.is_per_tool() { "tool" } else { "agent" },
            host.display_name(),
            host.display_name()
        ));
    }
    let mut notes = Vec::new();
    let matcher = match l.matcher.as_deref() {
        None | Some("") | Some("*") => "*".to_owned(),
        Some(m) if !event.is_per_tool() => {
            return leave(format!(
                "its matcher `{m}` picks which {} events it runs on (a source or trigger), which keryx-hooks cannot select",
                l.key
            ));
        }
        Some(m) => {
            if crate::config::load::looks_like_permission_rule(m) {
                return leave(format!(
                    "its matcher `{m}` looks like a permission rule, not a tool-name pattern"
                ));
            }
            let mapped = canonical_matcher(host, m);
            if crate::config::matcher::Matcher::compile(&mapped).is_err() {
                return leave(format!("its matcher `{m}` is not a valid pattern"));
            }
            if mapped != m {
                notes.push(format!(
                    "matcher `{m}` becomes `{mapped}`: keryx-hooks matches the canonical tool names"
                ));
            }
            mapped
        }
    };
    // Claude Code's `if`: the same permission rule, matched the same way.
    let condition = match l.handler.get("if") {
        None => None,
        Some(v) => {
            let src = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            let compiled = v
                .as_str()
                .filter(|_| event.is_per_tool())
                .map(crate::config::condition::Condition::compile);
            match compiled {
                Some(Ok(_)) => Some(src),
                Some(Err(e)) => {
                    return leave(format!(
                        "its `if` `{src}` cannot be matched by keryx-hooks ({e}); moved without it, it would run on every {} call",
                        l.key
                    ));
                }
                None => {
                    return leave(format!(
                        "its `if` `{src}` cannot be matched by keryx-hooks on {}; moved without it, it would run on every call",
                        l.key
                    ));
                }
            }
        }
    };
    let Some(contract) = host.hook_protocol() else {
        return leave(format!(
            "keryx-hooks does not know how {} reads a hook's answer",
            host.display_name()
        ));
    };
    let host_ev = host.events().iter().find(|e| e.name() == l.key);
    let timeout_ms = timeout_ms(host, format, &l.handler, &mut notes);
    // Cursor runs a user hook from its hooks file's directory (`~/.cursor`)
    // and a project hook from the project root, like every other host.
    let runs_from_file = scope == Scope::User
        && host
            .import()
            .is_some_and(|i| i.runs_from == crate::hosts::RunsFrom::File);
    let base = runs_from_file.then(|| file.path.parent()).flatten();
    let (scripts, unread, own_writes) = scripts_read(command, read_script, base);
    let decides = unread
        || contract.error_denies.iter().any(|o| o.0 == event)
        || std::iter::once(command)
            .chain(scripts.iter().map(String::as_str))
            .any(can_decide);
    let class = match host_ev {
        Some(ev) if ev.can_deny() && contract.blocks(event) && decides => HookClass::Gate,
        Some(ev) if ev.can_add_context() => HookClass::Context,
        _ => HookClass::Observe,
    };
    let grants = match detect_with(command, &scripts, &own_writes, scope, host) {
        Ok(g) => g,
        Err(reason) => return leave(reason),
    };
    let mut extra = match carried(&l.handler) {
        Ok(c) => c,
        Err(reason) => return leave(reason),
    };
    extra.condition = condition;
    if extra.cwd.is_none() && runs_from_file {
        extra.cwd = file.path.parent().map(|d| d.to_string_lossy().into_owned());
    }
    // A handler the host itself runs fail-closed (Cursor's `failClosed`)
    // keeps failing closed.
    let fail_closed = fail_closed
        || l.handler.get("failClosed").and_then(Value::as_bool) == Some(true)
        || (event.is_gate_capable()
            && host
                .fail_closed_switch()
                .is_some_and(|s| s.applies_to(&l.key))
            && wiring::carries_switch(host, &l.handler));
    let failure = failure_note(host, class, event, fail_closed);
    let all_text = || std::iter::once(command).chain(scripts.iter().map(String::as_str));
    if class == HookClass::Gate && all_text().any(|t| t.contains("updatedInput")) {
        notes.push(
            "it can rewrite the tool call (`updatedInput`); keryx-hooks does not apply a hook's rewrite, so the call runs as the agent wrote it (`log` records each attempt)".into(),
        );
    }
    if class == HookClass::Gate
        && all_text()
            .any(|t| t.contains("\"allow\"") || t.contains("'allow'") || t.contains("\"approve\""))
    {
        notes.push(
            "it can answer allow; keryx-hooks never passes an allow on, so the host still asks where it would without the hook (`log` records each one)".into(),
        );
    }
    let id = derive_id(host.name(), &l.key, &matcher, command);
    let registration = registration(
        &id,
        &matcher,
        class,
        command,
        timeout_ms,
        &grants,
        &format!("{} {} hook, imported", host.display_name(), l.key),
    );
    let registration = with_contract(
        registration,
        host,
        fail_closed && class == HookClass::Gate,
        &extra,
    );
    Outcome::Import(Box::new(Imported {
        id,
        event: event.as_str(),
        class: class.as_str(),
        protocol: host.name(),
        failure,
        matcher,
        timeout_ms,
        grants,
        notes,
        registration,
    }))
}

/// Whether a hook's text can answer with a decision: an exit 2, or a
/// decision word in a reply it prints. A hook none of whose code can be
/// read is taken to decide.
fn can_decide(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let compact: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    [
        "exit2",
        "exit(2",
        "exitcode=2",
        "exit\"2",
        "exit$",
        "exit\"$",
    ]
    .iter()
    .any(|m| compact.contains(m))
        || [
            "decision",
            "\"block\"",
            "'block'",
            "\"deny\"",
            "'deny'",
            "permission",
        ]
        .iter()
        .any(|m| t.contains(m))
}

/// The handler's own environment and working directory, which it runs with
/// under its host too.
#[derive(Debug, Default)]
struct Carried {
    env: Map<String, Value>,
    cwd: Option<String>,
    condition: Option<String>,
}

fn carried(handler: &Value) -> Result<Carried, String> {
    let mut c = Carried::default();
    if let Some(env) = handler.get("env") {
        let Some(obj) = env.as_object() else {
            return Err("its `env` is not an object of strings".into());
        };
        for (k, v) in obj {
            let ok = !k.is_empty()
                && !k.starts_with(|ch: char| ch.is_ascii_digit())
                && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            let Some(v) = v.as_str().filter(|_| ok) else {
                return Err(format!("its `env` entry `{k}` is not NAME: \"string\""));
            };
            c.env.insert(k.clone(), Value::String(v.to_owned()));
        }
    }
    if let Some(cwd) = handler.get("cwd") {
        match cwd.as_str().filter(|s| !s.is_empty()) {
            Some(s) => c.cwd = Some(s.to_owned()),
            None => return Err("its `cwd` is not a path".into()),
        }
    }
    Ok(c)
}

/// The registration with its host's contract: the protocol it speaks,
/// fail-closed when asked, and the handler's own env and cwd.
fn with_contract(mut r: Value, host: &Adapter, fail_closed: bool, extra: &Carried) -> Value {
    if let (Some(c), Some(obj)) = (&extra.condition, r.as_object_mut()) {
        // After the matcher, where a reader looks for it.
        let after = if obj.contains_key("matcher") {
            "matcher"
        } else {
            "id"
        };
        let entries: Vec<(String, Value)> = std::mem::take(obj).into_iter().collect();
        for (k, v) in entries {
            let here = k == after;
            obj.insert(k, v);
            if here {
                obj.insert("if".into(), c.clone().into());
            }
        }
    }
    if let Some(c) = r.get_mut("command").and_then(Value::as_object_mut) {
        c.insert("protocol".into(), host.name().into());
        if fail_closed {
            c.insert("failClosed".into(), true.into());
        }
        if !extra.env.is_empty() {
            c.insert("env".into(), Value::Object(extra.env.clone()));
        }
        if let Some(cwd) = &extra.cwd {
            c.insert("cwd".into(), cwd.clone().into());
        }
    }
    r
}

/// One sentence on what the hook's failures do once imported.
fn failure_note(host: &Adapter, class: HookClass, event: Event, fail_closed: bool) -> String {
    let gates = class == HookClass::Gate && host.hook_protocol().is_some_and(|h| h.blocks(event));
    if !gates {
        return "it never answers with a decision, so its failures change nothing".into();
    }
    if fail_closed {
        return "a crash or timeout denies (fail-closed)".into();
    }
    let denies = host
        .hook_protocol()
        .is_some_and(|h| h.error_denies.iter().any(|o| o.0 == event));
    if denies {
        format!(
            "a crash denies and a timeout lets the call through, as under {}",
            host.display_name()
        )
    } else {
        format!(
            "a crash or timeout lets the call through, as under {} (`--fail-closed` denies instead)",
            host.display_name()
        )
    }
}

/// The handler's timeout in milliseconds: the host's own unit converted,
/// the host's default when it names none, never above the keryx maximum.
fn timeout_ms(host: &Adapter, format: Format, h: &Value, notes: &mut Vec<String>) -> u64 {
    let to_ms = |v: u64| match host.timeout_unit() {
        TimeoutUnit::Seconds => v.saturating_mul(1000),
        TimeoutUnit::Milliseconds => v,
    };
    let unit = match host.timeout_unit() {
        TimeoutUnit::Seconds => "s",
        TimeoutUnit::Milliseconds => "ms",
    };
    let given = timeout_keys(format)
        .iter()
        .find_map(|k| h.get(*k).and_then(Value::as_u64));
    let (ms, said) = match given {
        Some(v) => (to_ms(v), format!("timeout {v} {unit}")),
        None => match host.default_timeout() {
            Some(d) => (
                to_ms(d),
                format!("the host's default timeout of {d} {unit}"),
            ),
            None => (5_000, String::new()),
        },
    };
    if ms > MAX_TIMEOUT_MS {
        notes.push(format!(
            "{said} is longer than keryx-hooks allows; it gets {} s",
            MAX_TIMEOUT_MS / 1000
        ));
        return MAX_TIMEOUT_MS;
    }
    ms.max(1)
}

/// A host matcher with the host's tool names replaced by the canonical
/// names the runtime matches (`run_shell_command` → `Bash`).
pub fn canonical_matcher(host: &Adapter, matcher: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if !word.is_empty() {
            let c = host.canonical_tool(word);
            out.push_str(if c.is_empty() { word } else { &c });
            word.clear();
        }
    };
    for ch in matcher.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `<host>-<event>-<words of the command>-<hash>`: the same handler gets
/// the same id on every run, two different ones never share it.
pub fn derive_id(host: &str, host_event: &str, matcher: &str, command: &str) -> String {
    let hash = Sha256::digest(format!("{host}\0{host_event}\0{matcher}\0{command}").as_bytes());
    let short = crate::base::text::hex(&hash[..3]);
    let mut slug = String::new();
    // The words that say what it is: the script's name, not its directory.
    let words = command
        .split_whitespace()
        .filter(|w| !w.contains('='))
        .map(|w| w.rsplit('/').next().unwrap_or(w))
        .flat_map(|w| w.split(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase);
    for w in words {
        if slug.len() + w.len() + 1 > 20 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&w);
    }
    let event: String = host_event
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let mut id = format!("{host}-{event}");
    if !slug.is_empty() {
        id.push('-');
        id.push_str(&slug);
    }
    id.truncate(64 - short.len() - 1);
    let id = id.trim_end_matches('-').to_owned();
    format!("{id}-{short}")
}

/// The registration `import` writes for one handler.
pub fn registration(
    id: &str,
    matcher: &str,
    class: HookClass,
    command: &str,
    timeout_ms: u64,
    grants: &Grants,
    description: &str,
) -> Value {
    let mut r = Map::new();
    r.insert("id".into(), id.into());
    if matcher != "*" {
        r.insert("matcher".into(), matcher.into());
    }
    r.insert("class".into(), class.as_str().into());
    let mut c = Map::new();
    c.insert("argv".into(), json!(["/bin/sh", "-c", command]));
    if !grants.env_passthrough.is_empty() {
        c.insert("envPassthrough".into(), json!(grants.env_passthrough));
    }
    r.insert("command".into(), Value::Object(c));
    r.insert("timeoutMs".into(), timeout_ms.into());
    if grants.unsandboxed {
        r.insert("runsIn".into(), "unsandboxed".into());
    } else if !grants.writable.is_empty() {
        r.insert("sandbox".into(), json!({ "writable": grants.writable }));
    }
    r.insert("description".into(), description.into());
    Value::Object(r)
}

// ------------------------------------------------------------------ grants

/// The text of the scripts `command` names that can be read: an absolute
/// path, or one under `~`, `$HOME` or the project directory variables.
/// Also whether a word that names a script could not be read.
#[cfg(test)]
fn script_texts(command: &str, read: ReadScript, base: Option<&Path>) -> (Vec<String>, bool) {
    let (texts, unread, _) = scripts_read(command, read, base);
    (texts, unread)
}

/// `script_texts`, and the paths the scripts write through their own
/// directory (`$(dirname "$0")/hooks.log`, `path.join(__dirname, …)`,
/// `Path(__file__).parent / …`), in the home (`~/…`) or the project.
fn scripts_read(
    command: &str,
    read: ReadScript,
    base: Option<&Path>,
) -> (Vec<String>, bool, Vec<String>) {
    let mut unread = false;
    let mut own: Vec<String> = Vec::new();
    let home = dirs::home_dir().map(|h| h.to_string_lossy().into_owned());
    let texts = command
        .split_whitespace()
        .map(|w| w.replace(['"', '\''], ""))
        .filter(|w| {
            w.starts_with('/')
                || w.starts_with("~/")
                || w.starts_with("$HOME/")
                || w.starts_with("${HOME}/")
                || w.contains("_PROJECT_DIR")
                || w.contains("_PLUGIN_ROOT")
                || w.starts_with("./")
                || is_relative_script(w)
        })
        .take(4)
        .filter_map(|w| {
            // Relative to the host file's directory, where the host runs it.
            let w = match (base, w.strip_prefix("./")) {
                (Some(b), Some(rest)) => b.join(rest).to_string_lossy().into_owned(),
                _ => w,
            };
            let text = read(&w);
            // A program such as /bin/sh or /usr/bin/env is not the script.
            if text.is_none() && !w.starts_with("/bin/") && !w.starts_with("/usr/") {
                unread = true;
            }
            if let (Some(t), Some(dir)) = (&text, own_dir::script_dir(&w, home.as_deref())) {
                for p in own_dir_writes(t, &dir) {
                    if !own.contains(&p) {
                        own.push(p);
                    }
                }
            }
            text
        })
        .collect();
    (texts, unread, own)
}

/// The paths script `text`, which lies in `dir`, writes through its own
/// directory: what the detection finds once that directory is written out
/// and did not find before, and the files Node or Python code names there
/// when the script writes files at all.
fn own_dir_writes(text: &str, dir: &str) -> Vec<String> {
    let (out, named) = own_dir::written_out(text, dir);
    if out == text {
        return vec![];
    }
    let before_home = home_writes(text);
    let before_project = host_dir_writes(text);
    let mut found: Vec<String> = home_writes(&out)
        .into_iter()
        .filter(|p| !before_home.contains(p))
        .chain(
            host_dir_writes(&out)
                .into_iter()
                .filter(|p| !before_project.contains(p)),
        )
        .collect();
    if writes_files(text) {
        found.extend(named);
    }
    found.dedup();
    found
}

/// The project paths in a host's directory that `text` writes
/// (`>> .gemini/tool-log.txt`, `"$CLAUDE_PROJECT_DIR/.claude/state.json"`,
/// `os.path.join(".codex", "state.json")`), project-relative.
/// A host's directories in a project.
const HOST_PROJECT_DIRS: &[&str] = &[".claude", ".gemini", ".codex", ".cursor", ".qwen"];

fn host_dir_writes(text: &str) -> Vec<String> {
    const DIRS: &[&str] = HOST_PROJECT_DIRS;
    let path_char = |c: char| c.is_ascii_alphanumeric() || "._-/".contains(c);
    let mut out: Vec<String> = Vec::new();
    let writes_any = writes_files(text);
    for line in text.lines() {
        let writing = line.contains('>')
            || line.contains("tee ")
            || line_writes(line)
            || assigned_then_written(text, line);
        for dir in DIRS {
            let mut rest = line;
            while let Some(i) = rest.find(dir) {
                let head = &rest[..i];
                let before = head.chars().last();
                let after = &rest[i + dir.len()..];
                rest = after;
                // In the project: bare, or after a project directory
                // variable; never a home path (`~/.claude/…`).
                let head = head.trim_end_matches(['"', '\'']);
                let project_var = head.ends_with("_DIR/")
                    || head.ends_with("_DIR}/")
                    || project_root_var(text, head);
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.')
                    || (before == Some('/') && !project_var)
                    || (head.ends_with('/') && !project_var)
                {
                    continue;
                }
                // `.codex/x.json`, or the joined `".codex", "x.json"`.
                let tail: String = if let Some(t) = after.strip_prefix('/') {
                    t.chars().take_while(|c| path_char(*c)).collect()
                } else if writes_any {
                    let t = after.trim_start_matches(['"', '\'']).trim_start();
                    match t.strip_prefix(',') {
                        Some(t) => t
                            .trim_start()
                            .trim_start_matches(['"', '\''])
                            .chars()
                            .take_while(|c| path_char(*c))
                            .collect(),
                        None => continue,
                    }
                } else {
                    continue;
                };
                let tail = tail.trim_end_matches('/');
                let joined = after
                    .trim_start_matches(['"', '\''])
                    .trim_start()
                    .starts_with(',');
                if tail.is_empty() || !(writing || joined) {
                    continue;
                }
                // A file: its name has an extension.
                if !tail.rsplit('/').next().unwrap_or("").contains('.') {
                    continue;
                }
                let target = format!("{dir}/{tail}");
                if !out.contains(&target) {
                    out.push(target);
                }
            }
        }
    }
    out
}

/// Whether `head` ends with a shell variable (`$root/`, `${root}/`) that
/// `text` sets to the project: from a project directory variable, `$PWD`,
/// `pwd` or `git rev-parse --show-toplevel`.
fn project_root_var(text: &str, head: &str) -> bool {
    let Some(h) = head.strip_suffix('/') else {
        return false;
    };
    let h = h.strip_suffix('}').unwrap_or(h);
    let start = h.bytes().rposition(|c| !is_name(c)).map_or(0, |i| i + 1);
    let name = &h[start..];
    let sigil = h[..start].strip_suffix('{').unwrap_or(&h[..start]);
    if name.is_empty() || !sigil.ends_with('$') {
        return false;
    }
    text.lines().any(|l| {
        let l = l.trim_start().trim_start_matches("local ").trim_start();
        l.strip_prefix(name)
            .and_then(|r| r.strip_prefix('='))
            .is_some_and(|v| {
                v.contains("_DIR")
                    || v.contains("PWD")
                    || v.contains("pwd")
                    || v.contains("--show-toplevel")
            })
    })
}

/// Whether `line` assigns a shell variable (`log="$root/.claude/x.log"`)
/// that `text` then writes through: a redirect, `tee`, `mkdir`, `touch` or
/// a move onto `$log` or `${log}`, or a path below it (`"$log/x"`).
fn assigned_then_written(text: &str, line: &str) -> bool {
    let line = line.trim_start().trim_start_matches("local ").trim_start();
    let Some((name, _)) = line.split_once('=') else {
        return false;
    };
    if name.is_empty() || !name.bytes().all(is_name) || !is_name_start(name.as_bytes()[0]) {
        return false;
    }
    let refs = [format!("${name}"), format!("${{{name}}}")];
    text.lines().any(|l| {
        let Some(at) = refs.iter().filter_map(|r| l.find(r.as_str())).min() else {
            return false;
        };
        let before = &l[..at];
        before.contains('>')
            || before.contains("tee ")
            || ["mkdir ", "touch ", "mv ", "cp "]
                .iter()
                .any(|w| before.contains(w))
    })
}

/// Whether a line of `text` writes where variable `var` points
/// (`>> "$CLAUDE_ENV_FILE"`, `tee -a $CLAUDE_ENV_FILE`, an `open(` or
/// `appendFile` of it).
fn writes_to(text: &str, var: &str) -> bool {
    text.lines().any(|l| {
        l.contains(var)
            && (l.contains('>') || l.contains("tee ") || line_writes(l) || l.contains(".write"))
    })
}

/// A relative path to a script (`.github/hooks/log.sh`): run from the
/// project, as a host runs it.
fn is_relative_script(w: &str) -> bool {
    w.contains('/')
        && !w.starts_with(['/', '-', '$', '~'])
        && crate::config::load::SCRIPT_EXTENSIONS
            .iter()
            .any(|x| w.ends_with(x))
}

/// What `command` (and the script text it runs) needs: the ambient
/// variables it reads, the places outside the project it writes, or, when
/// no narrower grant works, running unsandboxed (a user hook only; a
/// project hook that needs it stays with the host: `Err` says why).
pub fn detect(
    command: &str,
    scripts: &[String],
    scope: Scope,
    host: &Adapter,
) -> Result<Grants, String> {
    detect_with(command, scripts, &[], scope, host)
}

/// `detect`, also granting `own_writes`: the paths the scripts write
/// through their own directory (`scripts_read`), each exactly, unless its
/// directory is among them.
fn detect_with(
    command: &str,
    scripts: &[String],
    own_writes: &[String],
    scope: Scope,
    host: &Adapter,
) -> Result<Grants, String> {
    let mut g = Grants::default();
    let texts: Vec<&str> = std::iter::once(command)
        .chain(scripts.iter().map(String::as_str))
        .collect();

    let mut vars: Vec<String> = Vec::new();
    for t in &texts {
        let assigned = assigned_names(t);
        for v in env_references(t) {
            let skip = ALWAYS_SET.contains(&v.as_str())
                || SHELL_OWN.contains(&v.as_str())
                || v.starts_with("KERYX_")
                || host.hook_env().iter().any(|h| h == &v)
                || assigned.contains(&v);
            if !skip && !vars.contains(&v) {
                vars.push(v);
            }
        }
    }
    vars.truncate(64);
    if !vars.is_empty() {
        g.why.push(format!(
            "envPassthrough {}: the command reads {}",
            vars.join(", "),
            if vars.len() == 1 {
                "this variable"
            } else {
                "these variables"
            }
        ));
        g.env_passthrough = vars;
    }

    let mut unsandboxed_because: Option<String> = None;
    let mut needs: Vec<(&[&str], &str)> = Vec::new();
    if texts.iter().any(|t| runs_uv(t)) {
        unsandboxed_because = Some(
            "`uv` needs to lock and fill its cache in your home and may download packages".into(),
        );
        needs.push((NETWORK_ENV, "the network"));
    }
    if let Some(w) = texts.iter().find_map(|t| uses_network(t)) {
        unsandboxed_because.get_or_insert(format!(
            "it uses the network (`{w}`), which a sandboxed hook does not have"
        ));
        needs.push((NETWORK_ENV, "the network"));
    }
    // The session's environment file (Claude Code's `CLAUDE_ENV_FILE`) is
    // in the host's own directory, which a sandboxed hook cannot write: its
    // exports reach the session only when it runs as the host ran it.
    if let Some(v) = host
        .hook_env()
        .iter()
        .find(|v| v.ends_with("_ENV_FILE") && texts.iter().any(|t| writes_to(t, v)))
    {
        unsandboxed_because.get_or_insert(format!(
            "it writes the session's environment file (`${v}`), which lies in the host's own directory"
        ));
    }
    if let Some(w) = texts.iter().find_map(|t| uses_desktop(t)) {
        unsandboxed_because.get_or_insert(format!(
            "it talks to your desktop session (`{w}`), whose sockets the sandbox hides"
        ));
        needs.push((DESKTOP_ENV, "your desktop session"));
    }
    // What reaching them takes, as the host's own environment has it: a
    // proxy and its CA behind a TLS-inspecting network, the session bus
    // and display for a notifier. Absent variables pass nothing.
    for (names, what) in needs {
        let added: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !g.env_passthrough.iter().any(|v| v == n))
            .collect();
        if added.is_empty() {
            continue;
        }
        g.env_passthrough
            .extend(added.iter().map(|n| (*n).to_owned()));
        g.why.push(format!(
            "envPassthrough {}: what reaching {what} takes, when your environment has it",
            added.join(", ")
        ));
    }
    for t in &texts {
        for target in home_writes(t) {
            let dir = writable_dir(&target);
            if let Some(why) = crate::config::load::sandbox_writable_refusal(&dir) {
                unsandboxed_because.get_or_insert(format!(
                    "it writes `{target}`, and the nearest directory to grant is refused ({why})"
                ));
                continue;
            }
            if !g.writable.contains(&dir) {
                g.why.push(format!(
                    "sandbox.writable `{dir}`: the command writes `{target}`"
                ));
                g.writable.push(dir);
            }
        }
    }
    // A hook's own file in a host's project directory (a state file in
    // `.codex/`, a log in `.gemini/`): exactly that path, while the host's
    // settings and hooks there stay protected.
    for t in &texts {
        for target in host_dir_writes(t) {
            if crate::config::load::sandbox_writable_refusal(&target).is_none()
                && !g.writable.contains(&target)
            {
                g.why.push(format!(
                    "sandbox.writable `{target}`: the command writes it in the project"
                ));
                g.writable.push(target);
            }
        }
    }
    // Through the script's own directory (a log beside it, state one level
    // up): exactly that path, in the home or in a host's project
    // directory; elsewhere in the project the sandbox already lets it
    // write.
    // Several paths in one directory (a log and the archive it is moved
    // into): that directory, where it may be granted, since a file bound on
    // its own cannot be moved or replaced.
    let mut own: Vec<String> = Vec::new();
    for t in own_writes {
        let parent = t.rsplit_once('/').map(|(p, _)| p).unwrap_or("~");
        let shared = parent != "~"
            && parent.contains('/')
            && own_writes
                .iter()
                .any(|u| u != t && u.starts_with(&format!("{parent}/")))
            && crate::config::load::sandbox_writable_refusal(parent).is_none();
        let entry = if shared { parent.to_owned() } else { t.clone() };
        if !own.contains(&entry) {
            own.push(entry);
        }
    }
    for target in &own {
        let covered = own
            .iter()
            .any(|d| d != target && target.starts_with(&format!("{d}/")));
        let in_host_dir = HOST_PROJECT_DIRS
            .iter()
            .any(|d| target.starts_with(&format!("{d}/")));
        if covered || g.writable.contains(target) || !(target.starts_with("~/") || in_host_dir) {
            continue;
        }
        match crate::config::load::sandbox_writable_refusal(target) {
            Some(why) if target.starts_with("~/") => {
                unsandboxed_because.get_or_insert(format!(
                    "it writes `{target}` through its own directory, and that path is refused ({why})"
                ));
            }
            Some(_) => {}
            None => {
                g.why.push(format!(
                    "sandbox.writable `{target}`: the script writes it through its own directory"
                ));
                g.writable.push(target.clone());
            }
        }
    }
    g.writable.truncate(32);
    if let Some(why) = unsandboxed_because {
        if scope == Scope::Project {
            return Err(format!(
                "it needs to run unsandboxed ({why}), which import does not grant a project hook"
            ));
        }
        g.unsandboxed = true;
        g.writable.clear();
        g.why.retain(|w| !w.starts_with("sandbox.writable"));
        g.why.push(format!("runsIn unsandboxed: {why}"));
    }
    Ok(g)
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The environment variables a text reads: `$VAR`, `${VAR…}`,
/// `os.environ["VAR"]`, `os.environ.get("VAR")`, `os.getenv("VAR")`,
/// `process.env.VAR`, `process.env["VAR"]`, `Bun.env.VAR`, `Deno.env.get("VAR")`.
pub fn env_references(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        if !name.is_empty() && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    };
    let b = text.as_bytes();
    let mut in_single = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            // A shell's single quotes keep `$` literal, but a script in
            // another language uses them for strings: only a shell
            // command's own quoting is tracked, which is the command text.
            b'\'' if !text.contains('\n') => in_single = !in_single,
            b'\\' => i += 1,
            b'$' if !in_single => {
                let start = i + 1 + usize::from(b.get(i + 1) == Some(&b'{'));
                if b.get(start).copied().is_some_and(is_name_start) {
                    let mut end = start;
                    while b.get(end).copied().is_some_and(is_name) {
                        end += 1;
                    }
                    push(&text[start..end]);
                    i = end;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    for prefix in [
        "process.env.",
        "Bun.env.",
        "process.env[",
        "os.environ[",
        "os.environ.get(",
        "os.getenv(",
        "Deno.env.get(",
        "environ.get(",
    ] {
        for (at, _) in text.match_indices(prefix) {
            let rest = text[at + prefix.len()..].trim_start_matches(['"', '\'', '`']);
            let n = rest.bytes().take_while(|c| is_name(*c)).count();
            if rest.bytes().next().is_some_and(is_name_start) {
                push(&rest[..n]);
            }
        }
    }
    out
}

/// Names a shell text sets itself (`NAME=…`, `export NAME=…`, `local
/// NAME`, `read NAME`, `for NAME in`): reading those is not ambient.
fn assigned_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ';' || c == '(' || c == '|' || c == '&')
        .collect();
    for (i, w) in words.iter().enumerate() {
        if let Some((name, _)) = w.split_once('=')
            && !name.is_empty()
            && name.bytes().next().is_some_and(is_name_start)
            && name.bytes().all(is_name)
        {
            out.insert(name.to_owned());
        }
        if matches!(
            *w,
            "local" | "read" | "for" | "declare" | "typeset" | "readonly"
        ) && let Some(next) = words.get(i + 1)
            && next.bytes().next().is_some_and(is_name_start)
            && next.bytes().all(is_name)
        {
            out.insert((*next).to_owned());
        }
    }
    out
}

/// Whether the text runs `uv run` or `uvx`.
fn runs_uv(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| w[0].rsplit('/').next() == Some("uv") && w[1] == "run")
        || text
            .split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
            .any(|w| w.rsplit('/').next() == Some("uvx"))
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || ";&|()`$\"'".contains(c))
        .map(|w| w.rsplit('/').next().unwrap_or(w))
}

/// The first sign that a text talks to the network.
fn uses_network(text: &str) -> Option<String> {
    const PROGRAMS: &[&str] = &[
        "curl", "wget", "http", "nc", "ssh", "scp", "ntfy", "gh", "npx", "bunx", "pnpx",
    ];
    // Package runners and installers fetch what they run.
    const PAIRS: &[(&str, &str)] = &[
        ("pnpm", "dlx"),
        ("yarn", "dlx"),
        ("npm", "exec"),
        ("npm", "install"),
        ("pip", "install"),
        ("pip3", "install"),
        ("bun", "x"),
    ];
    let shell: Vec<&str> = shell_words(text).filter(|w| !w.is_empty()).collect();
    if let Some(w) = shell.windows(2).find(|w| PAIRS.contains(&(w[0], w[1]))) {
        return Some(format!("{} {}", w[0], w[1]));
    }
    const CALLS: &[&str] = &[
        "requests.",
        "urllib",
        "http.client",
        "httpx",
        "fetch(",
        "axios",
        "https://",
        "http://",
    ];
    shell_words(text)
        .find(|w| PROGRAMS.contains(w))
        .map(str::to_owned)
        .or_else(|| {
            CALLS
                .iter()
                .find(|c| text.contains(**c))
                .map(|c| (*c).to_owned())
        })
}

/// The first sign that a text needs the desktop session (notifications, sound).
fn uses_desktop(text: &str) -> Option<String> {
    const PROGRAMS: &[&str] = &[
        "notify-send",
        "osascript",
        "terminal-notifier",
        "paplay",
        "aplay",
        "afplay",
        "say",
        "espeak",
        "spd-say",
        "gdbus",
        "dbus-send",
    ];
    shell_words(text)
        .find(|w| PROGRAMS.contains(w))
        .map(str::to_owned)
}

/// The words of a text the shell runs. A Node, Python, Ruby or Bun script
/// names programs in strings and patterns (a blocker's `/\bcurl\b/`), not
/// as commands, so its words are not read as programs it starts.
fn shell_words(text: &str) -> Box<dyn Iterator<Item = &str> + '_> {
    let first = text.lines().next().unwrap_or("");
    let interpreted = first.starts_with("#!")
        && ["node", "python", "bun", "deno", "ruby", "perl", "uv"]
            .iter()
            .any(|i| first.contains(i));
    if interpreted {
        Box::new(std::iter::empty())
    } else {
        Box::new(words_outside_strings(text).into_iter())
    }
}

/// The shell words of `text` outside quoted strings: a word in a message
/// (`echo '{"reason": "say why"}'`) is not a program. A string after `-c`
/// is a command of its own, and its words count.
fn words_outside_strings(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut start = 0;
    let mut last_word = "";
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\'' || c == b'"' {
            let before = &text[start..i];
            out.extend(words(before).filter(|w| !w.is_empty()));
            if let Some(w) = before.split_whitespace().last() {
                last_word = w;
            }
            let close = text[i + 1..]
                .find(c as char)
                .map_or(bytes.len(), |j| i + 1 + j);
            let inner = &text[(i + 1).min(close)..close];
            if last_word == "-c" || before.trim_end().ends_with("-c") {
                out.extend(words_outside_strings(inner));
            } else if c == b'"' {
                // A command substitution inside double quotes still runs.
                for part in inner.split("$(").skip(1) {
                    let cmd = part.split(')').next().unwrap_or("");
                    out.extend(words(cmd).filter(|w| !w.is_empty()));
                }
            }
            i = close + 1;
            start = i;
            continue;
        }
        i += 1;
    }
    out.extend(words(&text[start.min(text.len())..]).filter(|w| !w.is_empty()));
    out
}

/// `~/…` form of a path written as `~/x`, `$HOME/x` or `${HOME}/x`.
fn home_form(word: &str) -> Option<String> {
    let w = word.trim_matches(|c| c == '"' || c == '\'' || c == '`' || c == ',' || c == ')');
    for p in ["~/", "$HOME/", "${HOME}/"] {
        if let Some(rest) = w.strip_prefix(p) {
            let rest: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace() && !"\"'`;|&)<>".contains(*c))
                .collect();
            // A segment the script names at run time (`$domain`,
            // `$(date +%F).log`): the fixed directories above it, when
            // there are two or more (never a whole directory of the home).
            let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
            let rest = match segments.iter().position(|s| s.contains('$')) {
                Some(i) if i < 2 => return None,
                Some(i) => segments[..i].join("/"),
                None => rest,
            };
            if rest.is_empty() {
                return None;
            }
            return Some(format!("~/{rest}"));
        }
    }
    None
}

/// Whether a value names a path in the home (`~/x`, `$HOME/x`,
/// `${HOME}/x`).
fn home_rooted(value: &str) -> bool {
    ["~/", "$HOME/", "${HOME}/"]
        .iter()
        .any(|p| value.strip_prefix(p).is_some_and(|r| !r.is_empty()))
}

/// Paths in the home a text writes: the target of a `>`/`>>` redirection,
/// of `tee`, `mkdir`, `touch`, `cp`/`mv`/`ln` (their last word), and any
/// home path on a line that opens a file for writing (`open(…, "a")`,
/// `appendFile`, `writeFile`, `mkdirSync`, `makedirs`, `write_text`).
pub fn home_writes(text: &str) -> Vec<String> {
    let text = &with_home_variables(text);
    let mut out: Vec<String> = Vec::new();
    let mut push = |p: String| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            // `>>~/x`, `> ~/x`, `2>>~/x`
            if let Some(pos) = w.find('>') {
                let after = w[pos..].trim_start_matches('>').trim_start_matches('&');
                let target = if after.is_empty() {
                    words.get(i + 1).copied()
                } else {
                    Some(after)
                };
                if let Some(p) = target.and_then(home_form) {
                    push(p);
                }
            }
            let cmd = w.rsplit('/').next().unwrap_or(w);
            if matches!(cmd, "tee" | "mkdir" | "touch") {
                for a in words[i + 1..]
                    .iter()
                    .take_while(|a| !a.starts_with(['|', ';', '&']))
                {
                    if let Some(p) = home_form(a) {
                        push(p);
                    }
                }
            }
            if matches!(cmd, "cp" | "mv" | "ln" | "rsync") {
                let args: Vec<&&str> = words[i + 1..]
                    .iter()
                    .take_while(|a| !a.starts_with(['|', ';', '&']))
                    .collect();
                if let Some(p) = args.last().and_then(|a| home_form(a)) {
                    push(p);
                }
            }
        }
        if line_writes(line) {
            for w in line.split(|c: char| c.is_whitespace() || c == '(' || c == ',') {
                if let Some(p) = home_form(w) {
                    push(p);
                }
            }
        }
    }
    // A script that builds a home path in one place and writes through a
    // variable elsewhere (`LOG_DIR = path.join(process.env.HOME, '.claude',
    // 'logs')` … `fs.appendFileSync(path.join(LOG_DIR, f), …)`): every home
    // path it builds counts when it writes any file at all.
    if writes_files(text) {
        for p in built_home_paths(text) {
            push(p);
        }
    }
    out
}

/// `text` with each shell variable assigned a home path
/// (`LOG="$HOME/.x/log"`, `DIR="${WORK_DIR:-$HOME/.y}"`, and one built on
/// such a variable, `STATS="$DIR/stats"`) written out where it is used, so
/// a write through the variable names the path.
fn with_home_variables(text: &str) -> String {
    let mut vars: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let line = line.strip_prefix("export ").unwrap_or(line);
        let line = line.strip_prefix("local ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name.is_empty()
            || name.starts_with(|c: char| c.is_ascii_digit())
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            continue;
        }
        let value = value.split_whitespace().next().unwrap_or("");
        let value = value.trim_matches(['"', '\'']);
        // `${NAME:-default}`: the default is what it is when unset.
        let value = match value
            .strip_prefix("${")
            .and_then(|v| v.strip_suffix('}'))
            .and_then(|v| v.split_once(":-"))
        {
            Some((_, default)) => default,
            None => value,
        };
        let value = expand(value.trim_matches(['"', '\'']), &vars);
        if home_rooted(&value) {
            vars.push((name.to_owned(), value));
        }
    }
    expand(text, &vars)
}

/// `text` with each of `vars` written out where it is used: `${NAME}`,
/// `"$NAME"`, `$NAME/` and `$NAME` at the end of a word.
fn expand(text: &str, vars: &[(String, String)]) -> String {
    let mut out = text.to_owned();
    for (name, value) in vars.iter().rev() {
        out = out
            .replace(&format!("${{{name}}}"), value)
            .replace(&format!("\"${name}\""), value)
            .replace(&format!("${name}/"), &format!("{value}/"));
        // `$NAME` at the end of a word.
        let bare = format!("${name}");
        let mut rebuilt = String::new();
        let mut rest = out.as_str();
        while let Some(i) = rest.find(&bare) {
            let after = &rest[i + bare.len()..];
            let boundary = !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
            rebuilt.push_str(&rest[..i]);
            rebuilt.push_str(if boundary { value } else { &bare });
            rest = after;
        }
        rebuilt.push_str(rest);
        out = rebuilt;
    }
    out
}

/// Whether a line opens or makes a file for writing (Node, Python):
/// `appendFile`, `writeFile`, `mkdirSync`, `createWriteStream`, `makedirs`,
/// `write_text`, `write_bytes`, `.mkdir(`, or `open(…)` with a write mode.
fn line_writes(line: &str) -> bool {
    const CALLS: &[&str] = &[
        "appendFile",
        "writeFile",
        "mkdirSync",
        "createWriteStream",
        "makedirs",
        "write_text",
        "write_bytes",
        ".mkdir(",
    ];
    const MODES: &[&str] = &[
        "'a'", "\"a\"", "'w'", "\"w\"", "'a+'", "\"a+\"", "'w+'", "\"w+\"",
    ];
    CALLS.iter().any(|c| line.contains(c))
        || (line.contains("open(") && MODES.iter().any(|m| line.contains(m)))
}

/// Whether a script text writes files anywhere.
fn writes_files(text: &str) -> bool {
    text.lines().any(line_writes)
}

/// The home itself, as a script names it in code.
const HOME_EXPRS: &[&str] = &[
    "process.env.HOME",
    "os.homedir()",
    "homedir()",
    "Path.home()",
    "str(Path.home())",
    "os.path.expanduser(\"~\")",
    "os.path.expanduser('~')",
    "os.environ[\"HOME\"]",
    "os.environ['HOME']",
    "os.environ.get(\"HOME\")",
    "os.environ.get('HOME')",
    "os.getenv(\"HOME\")",
    "os.getenv('HOME')",
];

/// A quoted string literal at the start of `s` (after blanks): its text
/// and the rest.
fn literal(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    let q = s.chars().next().filter(|c| matches!(c, '\'' | '"' | '`'))?;
    let body = &s[1..];
    let end = body.find(q)?;
    let text = &body[..end];
    (!text.contains(['\\', '$', '{', '\n'])).then_some((text, &body[end + 1..]))
}

/// The string literals that follow `rest`, each after what `sep` strips
/// (a `,` between arguments, a `/` between path parts).
fn literal_chain<'a>(mut rest: &'a str, sep: impl Fn(&'a str) -> Option<&'a str>) -> Vec<&'a str> {
    let mut parts = Vec::new();
    while let Some((t, r)) = sep(rest).and_then(literal) {
        parts.push(t);
        rest = r;
    }
    parts
}

/// `~/…` paths a script builds from the home in code:
/// `path.join(process.env.HOME, '.claude', 'logs')` (also `os.homedir()`,
/// `path.resolve`, `os.path.join(os.path.expanduser("~"), …)`),
/// `Path.home() / ".claude" / "logs"` and `os.path.expanduser("~/x")`.
pub fn built_home_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |parts: Vec<&str>| {
        let parts: Vec<&str> = parts
            .into_iter()
            .flat_map(|p| p.split('/'))
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.is_empty() || parts.contains(&"..") {
            return;
        }
        let p = format!("~/{}", parts.join("/"));
        if !out.contains(&p) {
            out.push(p);
        }
    };
    // join/resolve calls whose first argument is the home.
    for call in ["path.join(", "path.resolve(", "os.path.join("] {
        for (at, _) in text.match_indices(call) {
            let args = &text[at + call.len()..];
            let Some(home) = HOME_EXPRS
                .iter()
                .find(|h| args.trim_start().starts_with(**h))
            else {
                continue;
            };
            let mut rest = &args.trim_start()[home.len()..];
            // `process.env.HOME || '/tmp'`: the fallback is not the home.
            if let Some(r) = rest.trim_start().strip_prefix("||") {
                match literal(r) {
                    Some((_, r)) => rest = r,
                    None => continue,
                }
            }
            push(literal_chain(rest, |r| r.trim_start().strip_prefix(',')));
        }
    }
    // `Path.home() / ".claude" / "logs"`, also across the parentheses of a
    // fallback: `Path(os.environ.get("X", Path.home() / ".a")) / "b"`.
    for (at, _) in text.match_indices("Path.home()") {
        let rest = &text[at + "Path.home()".len()..];
        push(literal_chain(rest, |r| {
            r.trim_start()
                .trim_start_matches(')')
                .trim_start()
                .strip_prefix('/')
        }));
    }
    for call in ["expanduser(", "expandUser("] {
        for (at, _) in text.match_indices(call) {
            if let Some((t, _)) = literal(&text[at + call.len()..])
                && let Some(r) = t.strip_prefix("~/")
            {
                push(vec![r]);
            }
        }
    }
    out
}

/// The directory to make writable for a written path: the path itself when
/// it names a directory (no extension in its last part), else its parent.
fn writable_dir(target: &str) -> String {
    let t = target.trim_end_matches('/');
    let last = t.rsplit('/').next().unwrap_or(t);
    let is_file = last.contains('.') && !last.starts_with('.') || last.ends_with("log");
    if is_file {
        match t.rsplit_once('/') {
            Some((dir, _)) if dir != "~" => dir.to_owned(),
            _ => t.to_owned(),
        }
    } else {
        t.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude() -> &'static Adapter {
        crate::hosts::adapter("claude-code").unwrap()
    }

    #[test]
    fn env_references_in_shell_python_and_node() {
        assert_eq!(
            env_references("curl -d @- \"$SLACK_WEBHOOK_URL\" && echo ${DISPLAY:-:0} '$NOT_THIS'"),
            ["SLACK_WEBHOOK_URL", "DISPLAY"]
        );
        assert_eq!(
            env_references("import os\nu = os.environ[\"NTFY_URL\"]\nt = os.getenv('TOKEN_X')\n"),
            ["NTFY_URL", "TOKEN_X"]
        );
        assert_eq!(
            env_references("const a = process.env.PUSHOVER_KEY; process.env['B_C'];"),
            ["PUSHOVER_KEY", "B_C"]
        );
        assert!(env_references("echo $1 $@ $? \\$ESCAPED").is_empty());
    }

    #[test]
    fn detection_grants_exactly_what_the_command_uses() {
        let g = detect(
            "printf %s \"$DISPLAY\" $HOME $CLAUDE_PROJECT_DIR $CLAUDE_ENV_FILE",
            &[],
            Scope::User,
            claude(),
        )
        .unwrap();
        // HOME and CLAUDE_PROJECT_DIR are always set; CLAUDE_ENV_FILE is
        // Claude Code's own hook variable, which passes anyway.
        assert_eq!(g.env_passthrough, ["DISPLAY"]);
        assert!(!g.unsandboxed && g.writable.is_empty());
        assert_eq!(g.why.len(), 1, "{:?}", g.why);
        // Writing the session's environment file is what the host's own
        // directory takes.
        let g = detect(
            "echo 'export A=1' >> \"$CLAUDE_ENV_FILE\"",
            &[],
            Scope::User,
            claude(),
        )
        .unwrap();
        assert!(g.unsandboxed, "{g:?}");

        // A variable the script sets itself is not ambient.
        let g = detect(
            "f=/tmp/x; for n in a b; do echo $f $n; done",
            &[],
            Scope::User,
            claude(),
        )
        .unwrap();
        assert!(g.env_passthrough.is_empty(), "{:?}", g.env_passthrough);
    }

    #[test]
    fn detection_of_writes_in_the_home() {
        let g = detect(
            "jq -c . >> ~/.claude/logs/tool-use.jsonl",
            &[],
            Scope::Project,
            claude(),
        )
        .unwrap();
        assert_eq!(g.writable, ["~/.claude/logs"]);
        assert!(
            g.why[0].contains("~/.claude/logs/tool-use.jsonl"),
            "{:?}",
            g.why
        );

        // A script the command runs is read too.
        let script = "#!/usr/bin/env python3\nwith open(os.path.expanduser('~/.local/share/hooklog/x.log'), 'a') as f:\n    f.write(os.environ.get('WEBHOOK'))\n".to_owned();
        let g = detect("python3 /opt/h.py", &[script], Scope::User, claude()).unwrap();
        assert_eq!(g.writable, ["~/.local/share/hooklog"]);
        assert_eq!(g.env_passthrough, ["WEBHOOK"]);

        // Right beside the host's own settings: no directory there may be
        // granted, so a user hook runs unsandboxed and a project hook stays.
        let cmd = "cat >> ~/.claude/hooks.log";
        let g = detect(cmd, &[], Scope::User, claude()).unwrap();
        assert!(g.unsandboxed && g.writable.is_empty(), "{g:?}");
        assert!(g.why.iter().any(|w| w.starts_with("runsIn unsandboxed")));
        assert!(detect(cmd, &[], Scope::Project, claude()).is_err());

        // Nothing outside the project: nothing granted.
        let g = detect(
            "jq -r .tool_input.command | grep -q rm && exit 2",
            &[],
            Scope::User,
            claude(),
        )
        .unwrap();
        assert_eq!(g, Grants::default());
    }

    /// A home path built in steps (`kb="$HOME/.claude/knowledge"`,
    /// `stats="$kb/$domain/.stats"`) and written through the last variable
    /// is granted at its fixed directories, up to the segment only known
    /// at run time; a path whose first or second segment is such a value
    /// grants nothing.
    #[test]
    fn home_paths_through_chained_shell_variables() {
        let script = "kb=\"$HOME/.claude/knowledge\"\n\
                      case \"$path\" in \"$kb/code/\"*.md) domain=code ;; esac\n\
                      stats=\"$kb/$domain/.stats\"\n\
                      mkdir -p \"$stats\"\n\
                      jq -nc '{}' >> \"$stats/fetches.jsonl\"\n";
        let g = detect("bash ~/h.sh", &[script.to_owned()], Scope::User, claude()).unwrap();
        assert_eq!(g.writable, ["~/.claude/knowledge"]);
        assert!(!g.unsandboxed);
        assert!(home_writes("echo x >> \"$HOME/$NAME/log.txt\"").is_empty());
        assert!(home_writes("echo x >> ~/.cache/$(date +%F).log").is_empty());
        assert_eq!(
            home_writes("echo x >> ~/.cache/tool/$(date +%F).log"),
            ["~/.cache/tool"]
        );
    }

    #[test]
    fn home_paths_built_in_code_are_granted_when_the_script_writes() {
        let node = "const LOG_DIR = path.join(process.env.HOME, '.claude', 'hooks-logs');\n\
                    const STATE = path.join(process.env.HOME || '/tmp', '.claude', 'state', 'x');\n\
                    const OTHER = path.join(os.homedir(), \".cache/tool\", name);\n\
                    fs.mkdirSync(LOG_DIR, { recursive: true });\n";
        assert_eq!(
            built_home_paths(node),
            ["~/.claude/hooks-logs", "~/.claude/state/x", "~/.cache/tool"]
        );
        let g = detect("node ~/h.js", &[node.to_owned()], Scope::User, claude()).unwrap();
        assert_eq!(
            g.writable,
            ["~/.claude/hooks-logs", "~/.claude/state/x", "~/.cache/tool"]
        );

        let py = "logs = Path(os.environ.get(\"CLAUDE_CONFIG_DIR\", Path.home() / \".claude\")) / \"hooks-logs\"\n\
                  logs.mkdir(parents=True, exist_ok=True)\n\
                  cfg = os.path.expanduser(\"~/.config/tool/a.toml\")\n";
        assert_eq!(
            built_home_paths(py),
            ["~/.claude/hooks-logs", "~/.config/tool/a.toml"]
        );

        // Named but never written: nothing granted.
        let reads = "const CFG = path.join(os.homedir(), '.claude', 'cfg.json');\n\
                     const c = JSON.parse(fs.readFileSync(CFG));\n";
        let g = detect("node ~/h.js", &[reads.to_owned()], Scope::User, claude()).unwrap();
        assert!(g.writable.is_empty(), "{g:?}");
        // A join that climbs out (`..`) or has no literal part grants nothing.
        assert!(built_home_paths("path.join(process.env.HOME, '..', 'x')").is_empty());
        assert!(built_home_paths("path.join(os.homedir(), dir)").is_empty());
    }

    #[test]
    fn programs_named_in_a_scripts_patterns_are_not_programs_it_runs() {
        let js =
            "#!/usr/bin/env node\nconst RULES = [/\\bcurl\\b.*\\|\\s*sh/, 'say'];\n".to_owned();
        let g = detect("node ~/.claude/hooks/b.js", &[js], Scope::User, claude()).unwrap();
        assert!(!g.unsandboxed, "{g:?}");
        // The same word as a command in a shell script is a program it runs.
        let sh = "#!/bin/sh\ncurl -s -d done http://127.0.0.1:9/\n".to_owned();
        let g = detect("sh ~/n.sh", &[sh], Scope::User, claude()).unwrap();
        assert!(g.unsandboxed, "{g:?}");
    }

    #[test]
    fn network_and_desktop_need_unsandboxed() {
        let g = detect(
            "curl -s -d done \"$SLACK_WEBHOOK_URL\"",
            &[],
            Scope::User,
            claude(),
        )
        .unwrap();
        assert!(
            g.unsandboxed
                && g.env_passthrough[0] == "SLACK_WEBHOOK_URL"
                && g.env_passthrough.iter().any(|v| v == "HTTPS_PROXY")
                && g.env_passthrough.iter().any(|v| v == "NODE_EXTRA_CA_CERTS"),
            "{g:?}"
        );
        assert!(
            g.why.iter().any(|w| w.contains("network (`curl`)")),
            "{:?}",
            g.why
        );
        let g = detect("notify-send 'Claude' done", &[], Scope::User, claude()).unwrap();
        assert!(g.unsandboxed);
        let e = detect("/usr/bin/osascript -e x", &[], Scope::Project, claude()).unwrap_err();
        assert!(e.contains("desktop session"), "{e}");
        let py = "import requests\nrequests.post(os.environ['HOOK_URL'])\n".to_owned();
        assert!(
            detect("python3 /x.py", &[py], Scope::User, claude())
                .unwrap()
                .unsandboxed
        );
        assert!(
            !detect("grep -q curly file", &[], Scope::User, claude())
                .unwrap()
                .unsandboxed
        );
    }

    #[test]
    fn a_hooks_own_file_in_a_host_directory_is_granted_exactly() {
        assert_eq!(
            host_dir_writes("echo x >> .gemini/tool-log.txt"),
            [".gemini/tool-log.txt"]
        );
        assert_eq!(
            host_dir_writes("echo x > \"$CLAUDE_PROJECT_DIR/.claude/state/last.json\""),
            [".claude/state/last.json"]
        );
        let py = "path = os.path.join(\".codex\", \"working_state.json\")\nwith open(path, \"w\") as f:\n  f.write(x)\n";
        assert_eq!(host_dir_writes(py), [".codex/working_state.json"]);
        assert!(host_dir_writes("cat .claude/settings.json").is_empty());
        let g = detect(
            "echo x >> .gemini/tool-log.txt",
            &[],
            Scope::Project,
            claude(),
        )
        .unwrap();
        assert_eq!(g.writable, [".gemini/tool-log.txt"]);
        // The host's settings and hook scripts are never granted; a log
        // beside the scripts is the hook's own state.
        let g = detect(
            "echo x >> .claude/settings.json; echo y >> .gemini/hooks/debug.log; echo z > .gemini/hooks/gate.sh",
            &[],
            Scope::Project,
            claude(),
        )
        .unwrap();
        assert_eq!(g.writable, [".gemini/hooks/debug.log"]);
    }

    #[test]
    fn a_hooks_own_state_in_the_hooks_directory_is_granted_exactly() {
        let sh = "root=\"${CLAUDE_PROJECT_DIR:-$PWD}\"\nlocks=\"$root/.claude/hooks/.locks\"\nmkdir -p \"$locks\"\nlog=\"$root/.claude/hooks/.tracker.log\"\necho x >> \"$log\"\nseen=\"$root/.claude/hooks/.seen\"\ncat \"$seen\"\n";
        assert_eq!(
            host_dir_writes(sh),
            [".claude/hooks/.locks", ".claude/hooks/.tracker.log"]
        );
        let g = detect(sh, &[], Scope::Project, claude()).unwrap();
        assert_eq!(
            g.writable,
            [".claude/hooks/.locks", ".claude/hooks/.tracker.log"]
        );
        // Never the scripts beside them, nor the directory itself.
        let g = detect(
            "d=\"$CLAUDE_PROJECT_DIR/.claude/hooks\"\necho x > \"$d/gate.sh\"\necho y > \"$d/\"\necho z >> .claude/hooks/run.log",
            &[],
            Scope::Project,
            claude(),
        )
        .unwrap();
        assert_eq!(g.writable, [".claude/hooks/run.log"]);
    }

    #[test]
    fn words_in_messages_are_not_programs_and_package_runners_fetch() {
        let quiet = "echo '{\"decision\": \"block\", \"reason\": \"say why, then curl it\"}'";
        assert!(
            !detect(quiet, &[], Scope::User, claude())
                .unwrap()
                .unsandboxed
        );
        // A string after -c is a command.
        assert!(
            detect("bash -c 'notify-send done'", &[], Scope::User, claude())
                .unwrap()
                .unsandboxed
        );
        assert!(
            detect("echo \"$(curl -s x)\"", &[], Scope::User, claude())
                .unwrap()
                .unsandboxed
        );
        for runner in [
            "npx prettier --write",
            "pnpm dlx biome format",
            "bunx eslint",
        ] {
            let g = detect(runner, &[], Scope::User, claude()).unwrap();
            assert!(g.unsandboxed, "{runner}: {g:?}");
        }
        let n = detect("notify-send 'Claude' done", &[], Scope::User, claude()).unwrap();
        assert!(
            n.env_passthrough
                .iter()
                .any(|v| v == "DBUS_SESSION_BUS_ADDRESS"),
            "{n:?}"
        );
    }

    #[test]
    fn uv_runs_unsandboxed_as_a_user_hook_only() {
        let g = detect("uv run ~/.claude/hooks/gate.py", &[], Scope::User, claude()).unwrap();
        assert!(g.unsandboxed);
        assert!(detect("uvx ruff check .", &[], Scope::Project, claude()).is_err());
        assert!(
            !detect("echo uv", &[], Scope::User, claude())
                .unwrap()
                .unsandboxed
        );
    }

    #[test]
    fn ids_are_stable_valid_and_distinct() {
        let a = derive_id(
            "claude-code",
            "PreToolUse",
            "Bash",
            "~/.claude/hooks/block-rm.sh",
        );
        assert_eq!(
            a,
            derive_id(
                "claude-code",
                "PreToolUse",
                "Bash",
                "~/.claude/hooks/block-rm.sh"
            )
        );
        assert!(a.starts_with("claude-code-pretooluse-block-rm-sh-"), "{a}");
        assert!(crate::config::load::valid_id(&a), "{a}");
        assert_ne!(
            a,
            derive_id(
                "claude-code",
                "PreToolUse",
                "Edit",
                "~/.claude/hooks/block-rm.sh"
            )
        );
        let long = derive_id("qwen-code", "UserPromptSubmit", "*", &"x".repeat(300));
        assert!(
            long.len() <= 64 && crate::config::load::valid_id(&long),
            "{long}"
        );
        assert!(crate::config::load::valid_id(&derive_id(
            "kimi", "Stop", "*", "$$$ ---"
        )));
    }

    #[test]
    fn writes_through_a_scripts_own_directory_are_granted_exactly() {
        let sh = "#!/bin/bash\nLOG_DIR=\"$(dirname \"$0\")/../logs\"\nmkdir -p \"$LOG_DIR\"\necho x >> \"$LOG_DIR/current.log\"\n";
        let own = own_dir_writes(sh, "~/.claude/hooks");
        assert!(own.iter().any(|p| p == "~/.claude/logs"), "{own:?}");
        let g = detect_with(
            "~/.claude/hooks/x.sh",
            &[sh.to_owned()],
            &own,
            Scope::User,
            claude(),
        )
        .unwrap();
        assert_eq!(g.writable, ["~/.claude/logs"], "{:?}", g.why);
        assert!(!g.unsandboxed);
        // A log moved into an archive beside it: their directory.
        let rotate = "d=\"$(dirname \"$0\")/../logs\"\nmkdir -p \"$d/archive\"\nmv \"$d/current.log\" \"$d/archive/$(date +%s).log\"\necho x > \"$d/current.log\"\n";
        let own = own_dir_writes(rotate, "~/.claude/hooks");
        let g = detect_with(
            "~/.claude/hooks/r.sh",
            &[rotate.to_owned()],
            &own,
            Scope::User,
            claude(),
        )
        .unwrap();
        assert_eq!(g.writable, ["~/.claude/logs"], "{own:?}");
        let js = "const LOG = path.join(__dirname, 'hooks.log');\nfs.appendFileSync(LOG, l);\n";
        let own = own_dir_writes(js, ".cursor/hooks");
        assert_eq!(own, [".cursor/hooks/hooks.log"]);
        let g = detect_with(
            "node .cursor/hooks/g.js",
            &[js.to_owned()],
            &own,
            Scope::Project,
            claude(),
        )
        .unwrap();
        assert_eq!(g.writable, [".cursor/hooks/hooks.log"]);
        // A script that only finds its own modules there writes nothing.
        let py = "sys.path.insert(0, str(Path(__file__).parent))\nimport helpers\n";
        assert!(own_dir_writes(py, "~/.claude/hooks").is_empty());
        // The host's settings beside a project hook are never granted.
        let g = detect_with(
            "x",
            &[],
            &[".claude/settings.json".to_owned()],
            Scope::Project,
            claude(),
        )
        .unwrap();
        assert!(g.writable.is_empty());
    }

    #[test]
    fn quoted_script_paths_are_read() {
        let asked = std::cell::RefCell::new(Vec::new());
        let read = |w: &str| {
            asked.borrow_mut().push(w.to_owned());
            Some(String::new())
        };
        script_texts(
            "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/a.sh --x '~/b.py' plain",
            &read,
            None,
        );
        assert_eq!(
            *asked.borrow(),
            ["$CLAUDE_PROJECT_DIR/.claude/hooks/a.sh", "~/b.py"]
        );
    }

    /// Cursor runs `~/.cursor/hooks.json`'s commands from `~/.cursor` and a
    /// project's `.cursor/hooks.json` commands from the project root: the
    /// user hook's `./hooks/x.sh` is read beside the file and runs there,
    /// the project hook's `.cursor/hooks/x.js` is read and run from the
    /// project.
    #[test]
    fn cursor_hooks_run_from_its_file_for_a_user_and_the_project_root_for_a_project() {
        let cursor = crate::hosts::adapter("cursor").unwrap();
        let asked = std::cell::RefCell::new(Vec::new());
        let read = |w: &str| {
            asked.borrow_mut().push(w.to_owned());
            Some("echo '{\"permission\":\"deny\"}'".to_owned())
        };
        let plan = |scope: Scope, path: &str, command: &str| {
            let file = SourceFile {
                path: path.into(),
                format: wiring::format(cursor).unwrap(),
            };
            let listed = Listed {
                key: "preToolUse".into(),
                matcher: None,
                handler: json!({ "command": command }),
            };
            match plan_file(cursor, scope, &file, &[listed], &read, false)
                .remove(0)
                .outcome
            {
                Outcome::Import(i) => i.registration["command"].clone(),
                other => panic!("{other:?}"),
            }
        };
        let user = plan(Scope::User, "/h/.cursor/hooks.json", "./hooks/guard.sh");
        assert_eq!(user["cwd"], "/h/.cursor");
        let project = plan(
            Scope::Project,
            "/p/.cursor/hooks.json",
            "node .cursor/hooks/guard.js",
        );
        assert!(project.get("cwd").is_none(), "{project}");
        assert_eq!(
            *asked.borrow(),
            ["/h/.cursor/hooks/guard.sh", ".cursor/hooks/guard.js"]
        );
    }

    #[test]
    fn event_matchers_that_are_not_tool_names_stay_with_the_host() {
        let file = SourceFile {
            path: "/x/settings.json".into(),
            format: wiring::format(claude()).unwrap(),
        };
        let listed = |key: &str, matcher: &str| Listed {
            key: key.into(),
            matcher: Some(matcher.into()),
            handler: json!({"type": "command", "command": format!("echo {matcher}")}),
        };
        let none = |_: &str| None;
        let plan = plan_file(
            claude(),
            Scope::User,
            &file,
            &[
                listed("SessionStart", "startup"),
                listed("SessionStart", "*"),
                listed("PreToolUse", "Bash(rm:*)"),
            ],
            &none,
            false,
        );
        assert!(
            matches!(&plan[0].outcome, Outcome::Leave { reason } if reason.contains("`startup`"))
        );
        assert!(matches!(&plan[1].outcome, Outcome::Import(i) if i.class == "context"));
        assert!(
            matches!(&plan[2].outcome, Outcome::Leave { reason } if reason.contains("permission rule"))
        );
    }

    #[test]
    fn removal_picks_by_event_and_command_and_keeps_every_other_byte() {
        let text = "{\n  // mine\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"n.sh\"}]}],\n    \"Notification\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"n.sh\"}]}]\n  }\n}\n";
        let format = wiring::format(claude()).unwrap();
        let out = remove(text, format, &|k, c| k == "Stop" && c == "n.sh").unwrap();
        assert_eq!(
            out,
            "{\n  // mine\n  \"hooks\": {\n    \"Notification\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"n.sh\"}]}]\n  }\n}\n"
        );
        let kimi = crate::hosts::adapter("kimi").unwrap();
        let toml = "[[hooks]]\nevent = \"Stop\"\ncommand = \"n.sh\"\n\n[[hooks]]\nevent = \"Notification\"\ncommand = \"n.sh\"\n";
        let out = remove(toml, wiring::format(kimi).unwrap(), &|k, _| k == "Stop").unwrap();
        // The blank line that separated the two tables stays.
        assert_eq!(
            out,
            "\n[[hooks]]\nevent = \"Notification\"\ncommand = \"n.sh\"\n"
        );
    }

    #[test]
    fn matchers_name_canonical_tools() {
        let gemini = crate::hosts::adapter("gemini-cli").unwrap();
        assert_eq!(canonical_matcher(gemini, "run_shell_command"), "Bash");
        assert_eq!(
            canonical_matcher(gemini, "write_file|replace"),
            "Write|Edit"
        );
        assert_eq!(canonical_matcher(claude(), "Task|Bash"), "Agent|Bash");
        assert_eq!(
            canonical_matcher(claude(), "mcp__.*__write"),
            "mcp__.*__write"
        );
    }
}
