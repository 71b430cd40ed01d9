//! Layered loading: built-in → user → project, every load error, and the
//! disable-only overrides. A load either succeeds whole or reports
//! `ok: false` with diagnostics; nothing is partially applied.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::builtin as builtins;
use crate::config::diagnostic::Diagnostic;
use crate::config::locate::{line_col, locate};
use crate::config::matcher::Matcher;
use crate::config::model::{
    CommandSpec, Handler, HookClass, Network, Profile, Registration, RunsIn, Scope,
};
use crate::config::schema;
use crate::events::Event;
use crate::paths;

/// A hooks file larger than this is refused before it is read.
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;
/// The major `schemaVersion` this runtime reads.
pub const SUPPORTED_MAJOR: u64 = 1;

/// Where the layers come from.
#[derive(Debug, Clone)]
pub struct Sources {
    pub user_file: PathBuf,
    pub project_file: Option<PathBuf>,
    pub project_root: Option<PathBuf>,
    /// Where validated documents are remembered; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
}

/// One disable-only override as written.
#[derive(Debug, Clone)]
pub struct Override {
    pub id: String,
    pub acknowledged: bool,
    pub scope: Scope,
    pub event: Event,
    pub pointer: String,
}

/// A file that was present and parsed.
#[derive(Debug, Clone)]
pub struct LoadedFile {
    pub scope: Scope,
    pub path: PathBuf,
    pub doc: Value,
}

/// The merged result of a load.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// Every registration in merge order, disabled ones included.
    pub registrations: Vec<Registration>,
    pub diagnostics: Vec<Diagnostic>,
    /// Built-in gates the user turned off with the acknowledgement.
    pub disabled_builtin_gates: Vec<String>,
    pub files: Vec<LoadedFile>,
    /// The file each applied disable-only override came from, by built-in
    /// id, in the order applied.
    pub disabled_by: Vec<(String, PathBuf)>,
    /// The rules of the user and project files, in load order (the
    /// compiled-in packs are added by `crate::rules`).
    pub rules: Vec<crate::config::rules::Rule>,
    /// Pack and rule ids the user's own file switches off.
    pub rules_off: Vec<String>,
}

impl Loaded {
    pub fn ok(&self) -> bool {
        !self.diagnostics.iter().any(Diagnostic::is_error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| !d.is_error())
    }

    pub fn file(&self, scope: Scope) -> Option<&LoadedFile> {
        self.files.iter().find(|f| f.scope == scope)
    }
}

/// Loads all three layers.
pub fn load(sources: &Sources) -> Loaded {
    load_with(sources, None)
}

/// [`load`], with the sha256 the user file must have (an installed
/// snapshot's, from its manifest): other bytes, or no file, fail the load
/// (`hook-snapshot-tampered`), so what sessions run is what `install`
/// copied, checked on the very bytes that are parsed.
pub fn load_with(sources: &Sources, user_digest: Option<&str>) -> Loaded {
    let mut loaded = Loaded {
        registrations: builtins::registrations(),
        ..Loaded::default()
    };
    let mut overrides = Vec::new();

    let mut layers = Vec::new();
    // The managed layer is read from its fixed path, whatever the sources
    // say, and only once its ownership is checked.
    if let Some(managed) = crate::config::managed::hooks_file() {
        match crate::config::managed::check_owner(&managed) {
            Ok(()) => layers.push((Scope::Managed, managed)),
            Err(d) => {
                loaded.diagnostics.push(d);
                return loaded;
            }
        }
    }
    layers.push((Scope::User, sources.user_file.clone()));
    if let Some(p) = &sources.project_file {
        // Run from $HOME with the project file being the user file: load it once.
        if !same_file(p, &sources.user_file) {
            layers.push((Scope::Project, p.clone()));
        }
    }
    for (scope, path) in layers {
        let root = if scope == Scope::Project {
            sources.project_root.as_deref()
        } else {
            None
        };
        let digest = (scope == Scope::User).then_some(user_digest).flatten();
        let managed_ids: Vec<String> = loaded
            .registrations
            .iter()
            .filter(|r| r.scope == Scope::Managed)
            .map(|r| r.id.clone())
            .collect();
        let above = loaded
            .file(Scope::Managed)
            .map(|f| (f.path.as_path(), managed_ids.as_slice()));
        match load_file(
            &path,
            scope,
            root,
            sources.cache_dir.as_deref(),
            digest,
            above,
        ) {
            Ok(None) => {}
            Ok(Some(file)) => {
                loaded.registrations.extend(file.registrations);
                overrides.extend(file.overrides);
                loaded.rules.extend(file.rules.rules);
                loaded.rules_off.extend(file.rules.rules_off);
                loaded.files.push(LoadedFile {
                    scope,
                    path,
                    doc: file.doc,
                });
            }
            Err(diags) => loaded.diagnostics.extend(diags),
        }
    }
    if !loaded.ok() {
        return loaded;
    }
    let mut below = managed_below(&loaded, &overrides);
    below.extend(managed_programs(&loaded));
    if !below.is_empty() {
        loaded.diagnostics.extend(below);
        return loaded;
    }
    apply_overrides(&mut loaded, &overrides);
    let short = short_timeouts(&loaded.registrations);
    loaded.diagnostics.extend(short);
    loaded.registrations.sort_by(|a, b| {
        (a.scope, a.index)
            .cmp(&(b.scope, b.index))
            .then_with(|| a.id.cmp(&b.id))
    });
    loaded
}

/// What a lower layer does to the managed layer's hooks and rules: a hook
/// of the same id (a shadow), a disable-only override of one, or a
/// `rules_off` naming one of its rules or packs. Each is a load error
/// naming the managed file, so the policy above the person stays whole.
fn managed_below(loaded: &Loaded, overrides: &[Override]) -> Vec<Diagnostic> {
    let Some(managed) = loaded.file(Scope::Managed) else {
        return Vec::new();
    };
    let mpath = &managed.path;
    let lower_path = |scope: Scope| loaded.file(scope).map(|f| f.path.clone());
    let managed_ids: HashSet<&str> = loaded
        .registrations
        .iter()
        .filter(|r| r.scope == Scope::Managed)
        .map(|r| r.id.as_str())
        .collect();
    let mut out = Vec::new();
    let mut say = |scope: Scope, pointer: Option<String>, msg: String| {
        let mut d = Diagnostic::error("hook-managed-weakened", msg);
        if let Some(p) = lower_path(scope) {
            d = d.at(p);
        }
        if let Some(p) = pointer {
            d = d.pointer(p);
        }
        out.push(d);
    };
    for o in overrides.iter().filter(|o| o.scope > Scope::Managed) {
        if managed_ids.contains(o.id.as_str()) {
            say(
                o.scope,
                Some(o.pointer.clone()),
                format!(
                    "`{}` is a hook of the managed layer `{}`; a {} file cannot turn it off (remove this override)",
                    o.id,
                    mpath.display(),
                    o.scope
                ),
            );
        }
    }
    for r in loaded
        .registrations
        .iter()
        .filter(|r| r.scope > Scope::Managed)
    {
        if managed_ids.contains(r.id.as_str()) {
            say(
                r.scope,
                None,
                format!(
                    "`{}` is a hook id of the managed layer `{}`; a {} hook cannot take its id (rename it)",
                    r.id,
                    mpath.display(),
                    r.scope
                ),
            );
        }
    }
    for off in &loaded.rules_off {
        let hits = loaded
            .rules
            .iter()
            .any(|r| r.scope == Scope::Managed && r.is_off(std::slice::from_ref(off)));
        if hits {
            say(
                Scope::User,
                Some("/rules_off".into()),
                format!(
                    "`rules_off` names `{off}`, a rule of the managed layer `{}`; your file cannot switch it off (remove it from `rules_off`)",
                    mpath.display()
                ),
            );
        }
    }
    out
}

/// The program each managed hook runs, when named by an absolute path, is
/// held to the managed file's standard: root's, writable by no one else,
/// nor any directory above it. A relative name is found on `PATH`, which
/// the host sets; the docs say to name managed programs absolutely.
fn managed_programs(loaded: &Loaded) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for r in loaded
        .registrations
        .iter()
        .filter(|r| r.scope == Scope::Managed)
    {
        let Some(program) = r.command().and_then(|c| c.argv.first()) else {
            continue;
        };
        let program = Path::new(program);
        if !program.is_absolute() {
            continue;
        }
        if let Err(d) = crate::config::managed::check_owner(program) {
            out.push(
                Diagnostic::error(
                    "managed-layer-insecure",
                    format!("managed hook `{}`: {}", r.id, d.message),
                )
                .at(r.source.clone().unwrap_or_default()),
            );
        }
    }
    out
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // Most projects have no hooks file: stat the second only if the first is there.
    let Ok(x) = std::fs::metadata(a) else {
        return false;
    };
    std::fs::metadata(b).is_ok_and(|y| x.dev() == y.dev() && x.ino() == y.ino())
}

struct FileResult {
    doc: Value,
    registrations: Vec<Registration>,
    overrides: Vec<Override>,
    rules: crate::config::rules::FileRules,
}

/// Reads the bytes of a hooks file, or says why it cannot be used.
/// `Ok(None)` is an absent file.
pub fn read_config_bytes(
    path: &Path,
    project_root: Option<&Path>,
) -> Result<Option<Vec<u8>>, Diagnostic> {
    let unreadable = |msg: String| Diagnostic::error("hook-config-unreadable", msg).at(path);
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink in a parent is still absent; nothing to read.
            return Ok(None);
        }
        Err(e) => return Err(unreadable(format!("cannot read: {e}"))),
        Ok(_) => {}
    }
    if let Some(root) = project_root {
        let real = paths::real_path(path);
        if !paths::is_inside(&real, root) {
            return Err(Diagnostic::error(
                "hook-config-outside-project",
                format!(
                    "resolves to `{}`, outside the project `{}`; a project hooks file must live in the project",
                    real.display(),
                    root.display()
                ),
            )
            .at(path));
        }
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(unreadable(
                "is a symlink to a file that does not exist".into(),
            ));
        }
        Err(e) => return Err(unreadable(format!("cannot read: {e}"))),
    };
    if meta.is_dir() {
        return Err(unreadable("is a directory, not a hooks file".into()));
    }
    if !meta.is_file() {
        return Err(unreadable("is not a regular file".into()));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(Diagnostic::error(
            "hook-config-too-large",
            format!(
                "is {} bytes; a hooks file may be at most {} bytes",
                meta.len(),
                MAX_CONFIG_BYTES
            ),
        )
        .at(path));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| unreadable(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(Diagnostic::error(
            "hook-config-too-large",
            format!("grew past {MAX_CONFIG_BYTES} bytes while being read"),
        )
        .at(path));
    }
    Ok(Some(bytes))
}

/// Parses hooks-file bytes into a JSON document, with line and column on
/// every syntax error.
pub fn parse_config_bytes(path: &Path, bytes: &[u8]) -> Result<(String, Value), Diagnostic> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default();
            return Err(Diagnostic::error(
                "hook-config-invalid-json",
                format!("is not valid UTF-8 (byte offset {})", e.valid_up_to()),
            )
            .at(path)
            .line_col(Some(line_col(valid, valid.len()))));
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match serde_json::from_str::<Value>(text) {
        Ok(doc) => Ok((text.to_owned(), doc)),
        Err(e) => Err(
            Diagnostic::error("hook-config-invalid-json", format!("invalid JSON: {e}"))
                .at(path)
                // serde_json says column 0 at the very start of a line (an
                // empty file); every other location here is 1-based.
                .line_col(Some((e.line(), e.column().max(1)))),
        ),
    }
}

fn load_file(
    path: &Path,
    scope: Scope,
    project_root: Option<&Path>,
    cache_dir: Option<&Path>,
    digest: Option<&str>,
    managed: Option<(&Path, &[String])>,
) -> Result<Option<FileResult>, Vec<Diagnostic>> {
    let tampered = |what: &str| {
        vec![
            Diagnostic::error(
                "hook-snapshot-tampered",
                format!(
                    "`{}` {what} what was installed (its manifest); run `keryx-hooks doctor --fix` to take the snapshot again",
                    path.display()
                ),
            )
            .at(path),
        ]
    };
    let Some(bytes) = read_config_bytes(path, project_root).map_err(|d| vec![d])? else {
        return match digest {
            Some(_) => Err(tampered("is missing: it is not")),
            None => Ok(None),
        };
    };
    if let Some(want) = digest
        && crate::hash::digest_bytes(&bytes) != want
    {
        return Err(tampered("differs from"));
    }
    let (text, doc) = parse_config_bytes(path, &bytes).map_err(|d| vec![d])?;
    check_version(&doc, &text, path).map_err(|d| vec![d])?;

    let mut diags = collisions(&doc, &text, path);
    let turned_off = managed
        .map(|(mpath, ids)| managed_turned_off(&doc, &text, path, mpath, ids))
        .unwrap_or_default();
    let key = schema::cache_key(&bytes);
    let cached = turned_off.is_empty() && cache_dir.is_some_and(|dir| schema::cache_hit(dir, &key));
    if !cached {
        let colliding: Vec<String> = diags
            .iter()
            .chain(&turned_off)
            .filter_map(|d| d.pointer.clone())
            .collect();
        // An unknown event key is said once, by name, with what it looks
        // like; the schema's "additional properties" line would only repeat it.
        let unknown = unknown_events(&doc, &text, path);
        let named_unknown = !unknown.is_empty();
        diags.extend(unknown);
        diags.extend(schema::validate(&doc, &text, path).into_iter().filter(|d| {
            let p = d.pointer.as_deref().unwrap_or("");
            // ("'X' was unexpected", "'X', 'Y' were unexpected")
            if named_unknown && p == "/hooks" && d.message.contains(" unexpected)") {
                return false;
            }
            // Rules are said by their compiler, which names the rule.
            if p.starts_with("/rules") {
                return false;
            }
            !colliding
                .iter()
                .any(|c| p == c || p.starts_with(&format!("{c}/")))
        }));
    }
    diags.extend(turned_off);
    let rules = match crate::config::rules::from_doc(&doc, &text, path, scope) {
        Ok(r) => r,
        Err(e) => {
            diags.extend(e);
            Default::default()
        }
    };
    if !diags.is_empty() {
        return Err(diags);
    }
    let result = convert(&doc, &text, path, scope)?;
    if !cached && let Some(dir) = cache_dir {
        schema::cache_store(dir, &key);
    }
    Ok(Some(FileResult {
        doc,
        registrations: result.0,
        overrides: result.1,
        rules,
    }))
}

fn check_version(doc: &Value, text: &str, path: &Path) -> Result<(), Diagnostic> {
    let Some(version) = doc.get("schemaVersion").and_then(Value::as_str) else {
        return Ok(()); // the schema reports a missing or mistyped version
    };
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.parse::<u64>().ok());
    match major {
        Some(SUPPORTED_MAJOR) | None => Ok(()),
        Some(_) => Err(Diagnostic::error(
            "hook-config-unsupported-version",
            format!(
                "schemaVersion `{version}` is not supported; this keryx-hooks reads {SUPPORTED_MAJOR}.x.y"
            ),
        )
        .at(path)
        .pointer("/schemaVersion")
        .line_col(locate(text, "/schemaVersion"))),
    }
}

/// Full registrations that use a built-in's `keryx.` id.
/// The entries of a lower layer that try to turn a managed hook off: a
/// disable-only override (`{"id", "enabled": false}`) of a managed id.
/// Each is an error naming the managed file, said in place of the schema's
/// complaint about the entry's shape.
fn managed_turned_off(
    doc: &Value,
    text: &str,
    path: &Path,
    managed: &Path,
    ids: &[String],
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, entries) in hooks {
        for (i, entry) in entries.as_array().into_iter().flatten().enumerate() {
            let Some(obj) = entry.as_object() else {
                continue;
            };
            let Some(id) = obj.get("id").and_then(Value::as_str) else {
                continue;
            };
            let disable_only = obj.contains_key("enabled")
                && obj
                    .keys()
                    .all(|k| matches!(k.as_str(), "id" | "enabled" | "acknowledge"));
            if disable_only && ids.iter().any(|m| m == id) {
                let pointer = format!("/hooks/{event}/{i}");
                out.push(
                    Diagnostic::error(
                        "hook-managed-weakened",
                        format!(
                            "`{id}` is a hook of the managed layer `{}`; a lower layer cannot turn it off (remove this override)",
                            managed.display()
                        ),
                    )
                    .at(path)
                    .line_col(locate(text, &pointer))
                    .pointer(pointer),
                );
            }
        }
    }
    out
}

fn collisions(doc: &Value, text: &str, path: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, entries) in hooks {
        let Some(entries) = entries.as_array() else {
            continue;
        };
        for (i, entry) in entries.iter().enumerate() {
            let Some(id) = entry.get("id").and_then(Value::as_str) else {
                continue;
            };
            if id.starts_with("keryx.") && !schema::looks_like_override(entry) {
                let pointer = format!("/hooks/{}/{i}", escape_pointer(event));
                let what = if builtins::class_of(id).is_some() {
                    format!("`{id}` is a built-in hook")
                } else {
                    format!("`{id}` is in the built-in `keryx.` namespace")
                };
                out.push(
                    Diagnostic::error(
                        "hook-id-collides-with-builtin",
                        format!(
                            "{what}; a registration cannot use that id. To turn a built-in off, write only {{\"id\": \"{id}\", \"enabled\": false}}"
                        ),
                    )
                    .at(path)
                    .line_col(locate(text, &pointer))
                    .pointer(pointer),
                );
            }
        }
    }
    out
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Strict typed conversion. Every constraint the schema states is checked
/// again here, so this alone decides what loads.
fn convert(
    doc: &Value,
    text: &str,
    path: &Path,
    scope: Scope,
) -> Result<(Vec<Registration>, Vec<Override>), Vec<Diagnostic>> {
    let mut regs = Vec::new();
    let mut overrides = Vec::new();
    let mut errors = Vec::new();
    let err = |code: &'static str, msg: String, pointer: &str| {
        Diagnostic::error(code, msg)
            .at(path)
            .pointer(pointer)
            .line_col(locate(text, pointer))
    };
    let Some(top) = doc.as_object() else {
        return Err(vec![err(
            "hook-config-schema",
            "the document must be an object".into(),
            "",
        )]);
    };
    for key in top.keys() {
        if !matches!(
            key.as_str(),
            "$schema" | "schemaVersion" | "hooks" | "_keryxManaged" | "rules" | "rules_off"
        ) {
            errors.push(err(
                "hook-config-schema",
                format!("unknown top-level key `{key}`"),
                "",
            ));
        }
    }
    if top.get("$schema").is_some_and(|s| !s.is_string()) {
        errors.push(err(
            "hook-config-schema",
            "`$schema` must be a string".into(),
            "/$schema",
        ));
    }
    // The schema's pattern: digits only, no leading zero (`u64` parsing alone
    // would take `+1` and `01`).
    let version_ok = top
        .get("schemaVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| {
            v.split('.').count() == 3
                && v.split('.').all(|p| {
                    p.bytes().all(|b| b.is_ascii_digit())
                        && (p == "0" || !p.starts_with('0'))
                        && p.parse::<u64>().is_ok()
                })
        });
    if !version_ok {
        errors.push(err(
            "hook-config-schema",
            "`schemaVersion` must be a version like \"1.0.0\"".into(),
            "",
        ));
    }
    let Some(hooks) = top.get("hooks").and_then(Value::as_object) else {
        errors.push(err(
            "hook-config-schema",
            "`hooks` must be an object of events".into(),
            "",
        ));
        return Err(errors);
    };
    let mut index = 0;
    for (event_name, entries) in hooks {
        let event_ptr = format!("/hooks/{}", escape_pointer(event_name));
        let Ok(event) = event_name.parse::<Event>() else {
            errors.push(err(
                "hook-config-schema",
                unknown_event_message(event_name),
                &event_ptr,
            ));
            continue;
        };
        let Some(entries) = entries.as_array() else {
            errors.push(err(
                "hook-config-schema",
                "must be an array".into(),
                &event_ptr,
            ));
            continue;
        };
        let mut seen = HashSet::new();
        for (i, entry) in entries.iter().enumerate() {
            let ptr = format!("{event_ptr}/{i}");
            if schema::looks_like_override(entry) {
                match convert_override(entry, scope, event, &ptr) {
                    Ok(o) => overrides.push(o),
                    Err(m) => errors.push(err("hook-config-schema", m.to_string(), &ptr)),
                }
                continue;
            }
            match convert_registration(entry, event, scope, path, index) {
                Ok(reg) => {
                    if !seen.insert(reg.id.clone()) {
                        errors.push(err(
                            "hook-id-duplicate",
                            format!("`{}` is registered twice on {event}; ids must be unique within an event", reg.id),
                            &format!("{ptr}/id"),
                        ));
                    }
                    regs.push(reg);
                }
                Err((code, m, sub)) => errors.push(err(code, m, &format!("{ptr}{sub}"))),
            }
            index += 1;
        }
    }
    if let Some(managed) = top.get("_keryxManaged") {
        let ok = managed.as_object().is_some_and(|m| {
            m.iter().all(|(k, v)| {
                k == "managedHookIds"
                    && v.as_array().is_some_and(|ids| {
                        ids.iter().enumerate().all(|(i, id)| {
                            id.as_str()
                                .and_then(|s| s.strip_prefix("keryx."))
                                .is_some_and(valid_id)
                                && !ids[..i].contains(id)
                        })
                    })
            })
        });
        if !ok {
            errors.push(err(
                "hook-config-schema",
                "`_keryxManaged` must be {\"managedHookIds\": [\"keryx.…\"]}".into(),
                "/_keryxManaged",
            ));
        }
    }
    if errors.is_empty() {
        Ok((regs, overrides))
    } else {
        Err(errors)
    }
}

/// Why an entry that looks like an override of a built-in is not one.
#[derive(Debug, thiserror::Error)]
enum OverrideError {
    #[error("must be an object")]
    NotAnObject,
    #[error("`{id}` is not a valid built-in id")]
    InvalidId { id: String },
    #[error("a disable-only override must say \"enabled\": false")]
    NotDisableOnly,
    #[error("`acknowledge` may only be \"disable-builtin-gate\"")]
    BadAcknowledge,
}

fn convert_override(
    entry: &Value,
    scope: Scope,
    event: Event,
    ptr: &str,
) -> Result<Override, OverrideError> {
    let obj = entry.as_object().ok_or(OverrideError::NotAnObject)?;
    let id = obj.get("id").and_then(Value::as_str).unwrap_or_default();
    if !valid_id(id.strip_prefix("keryx.").unwrap_or_default()) {
        return Err(OverrideError::InvalidId { id: id.to_owned() });
    }
    if obj.get("enabled") != Some(&Value::Bool(false)) {
        return Err(OverrideError::NotDisableOnly);
    }
    let acknowledged = match obj.get("acknowledge") {
        None => false,
        Some(Value::String(s)) if s == "disable-builtin-gate" => true,
        Some(_) => return Err(OverrideError::BadAcknowledge),
    };
    Ok(Override {
        id: id.to_owned(),
        acknowledged,
        scope,
        event,
        pointer: ptr.to_owned(),
    })
}

/// `^[a-z0-9][a-z0-9-]{0,62}[a-z0-9]$`
pub fn valid_id(id: &str) -> bool {
    let b = id.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    (2..=64).contains(&b.len())
        && ok(&b[0])
        && ok(&b[b.len() - 1])
        && b.iter().all(|c| ok(c) || *c == b'-')
}

type ConvertError = (&'static str, String, String);

fn convert_registration(
    entry: &Value,
    event: Event,
    scope: Scope,
    path: &Path,
    index: usize,
) -> Result<Registration, ConvertError> {
    let schema_err = |m: String, sub: &str| ("hook-config-schema", m, sub.to_owned());
    let obj: &Map<String, Value> = entry
        .as_object()
        .ok_or_else(|| schema_err("must be an object".into(), ""))?;
    const KEYS: [&str; 13] = [
        "id",
        "matcher",
        "if",
        "command",
        "class",
        "timeoutMs",
        "runsIn",
        "network",
        "sandbox",
        "appliesToChildAgents",
        "profiles",
        "enabled",
        "description",
    ];
    if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(schema_err(format!("unknown key `{k}`"), ""));
    }
    let id = obj.get("id").and_then(Value::as_str).unwrap_or_default();
    if !valid_id(id) {
        return Err(schema_err(
            format!(
                "id `{id}` must be 2-64 characters of a-z, 0-9 and -, not starting or ending with -"
            ),
            "/id",
        ));
    }
    let str_field = |k: &str| -> Result<Option<&str>, ConvertError> {
        match obj.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(schema_err(
                format!("`{k}` must be a string"),
                &format!("/{k}"),
            )),
        }
    };
    let bool_field = |k: &str, default: bool| -> Result<bool, ConvertError> {
        match obj.get(k) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(schema_err(
                format!("`{k}` must be true or false"),
                &format!("/{k}"),
            )),
        }
    };
    let matcher_src = str_field("matcher")?.unwrap_or("*");
    if matcher_src.len() > 1024 {
        return Err(schema_err(
            "`matcher` is longer than 1024 characters".into(),
            "/matcher",
        ));
    }
    if !event.is_per_tool() && !matches!(matcher_src, "*" | "") {
        return Err((
            "hook-matcher-not-allowed",
            format!(
                "{event} is not a per-tool event; its matcher must be \"*\", not `{matcher_src}`"
            ),
            "/matcher".into(),
        ));
    }
    if looks_like_permission_rule(matcher_src) {
        return Err((
            "hook-matcher-permission-rule",
            format!(
                "matcher `{matcher_src}` is written like a Claude Code permission rule; a matcher is a tool-name regex (`Bash`, `Write|Edit`), tested against the tool name only, so this one never matches. Match `{}` and check the command inside the hook",
                matcher_src.split_once('(').map_or(matcher_src, |(t, _)| t)
            ),
            "/matcher".into(),
        ));
    }
    let matcher = Matcher::compile(matcher_src).map_err(|e| {
        (
            "hook-matcher-invalid",
            format!("matcher `{matcher_src}` is not a valid pattern: {e}"),
            "/matcher".to_owned(),
        )
    })?;
    let condition = match str_field("if")? {
        None => None,
        Some(_) if !event.is_per_tool() => {
            return Err(schema_err(
                format!("`if` narrows a tool event's hook to some calls; {event} has no tool"),
                "/if",
            ));
        }
        Some(src) => Some(
            crate::config::condition::Condition::compile(src)
                .map_err(|e| schema_err(format!("`if`: {e}"), "/if"))?,
        ),
    };
    let class = str_field("class")?
        .and_then(HookClass::parse)
        .ok_or_else(|| {
            schema_err(
                "`class` must be one of gate, gate-advisory, observe, context".into(),
                "/class",
            )
        })?;
    let command = convert_command(obj.get("command")).map_err(|(m, sub)| schema_err(m, &sub))?;
    if scope == Scope::Project {
        project_paths_stay_inside(&command)?;
    }
    let timeout_ms = match obj.get("timeoutMs") {
        None => Registration::DEFAULT_TIMEOUT_MS,
        Some(v) => v
            .as_u64()
            .filter(|t| (1..=Registration::MAX_TIMEOUT_MS).contains(t))
            .ok_or_else(|| {
                schema_err(
                    "`timeoutMs` must be an integer from 1 to 60000".into(),
                    "/timeoutMs",
                )
            })?,
    };
    let runs_in = match str_field("runsIn")? {
        None => RunsIn::Sandbox,
        Some(s) => RunsIn::parse(s).ok_or_else(|| {
            schema_err("`runsIn` must be sandbox or unsandboxed".into(), "/runsIn")
        })?,
    };
    let network = match str_field("network")? {
        None => Network::None,
        Some(s) => Network::parse(s)
            .ok_or_else(|| schema_err("`network` must be none or restricted".into(), "/network"))?,
    };
    let sandbox_writable = convert_sandbox(obj.get("sandbox"))?;
    let mut profiles = Vec::new();
    if let Some(v) = obj.get("profiles") {
        let arr = v
            .as_array()
            .ok_or_else(|| schema_err("`profiles` must be an array".into(), "/profiles"))?;
        for (i, p) in arr.iter().enumerate() {
            let p = p.as_str().and_then(Profile::parse).ok_or_else(|| {
                schema_err(
                    "profiles are read-only-review, monitored-trusted-local, unattended-untrusted"
                        .into(),
                    &format!("/profiles/{i}"),
                )
            })?;
            if profiles.contains(&p) {
                return Err(schema_err(
                    format!("profile `{p}` is listed twice"),
                    &format!("/profiles/{i}"),
                ));
            }
            profiles.push(p);
        }
    }
    Ok(Registration {
        id: id.to_owned(),
        event,
        matcher,
        condition,
        class,
        handler: Handler::Command(command),
        timeout_ms,
        runs_in,
        network,
        sandbox_writable,
        applies_to_child_agents: bool_field("appliesToChildAgents", true)?,
        profiles,
        enabled: bool_field("enabled", true)?,
        description: str_field("description")?.map(str::to_owned),
        scope,
        source: Some(path.to_path_buf()),
        index,
    })
}

/// `sandbox: {writable: [...]}`: each entry a `~/` path, an absolute one or
/// one relative to the project, with no `..`, and none covering a path the
/// sandbox protects ([`sandbox_writable_refusal`]).
fn convert_sandbox(v: Option<&Value>) -> Result<Vec<String>, ConvertError> {
    let schema_err = |m: String, sub: &str| ("hook-config-schema", m, sub.to_owned());
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let obj = v
        .as_object()
        .ok_or_else(|| schema_err("`sandbox` must be an object".into(), "/sandbox"))?;
    if let Some(k) = obj.keys().find(|k| k.as_str() != "writable") {
        return Err(schema_err(
            format!("unknown key `{k}` in `sandbox`"),
            "/sandbox",
        ));
    }
    let Some(list) = obj.get("writable") else {
        return Ok(Vec::new());
    };
    let arr = list.as_array().filter(|a| a.len() <= 32).ok_or_else(|| {
        schema_err(
            "`sandbox.writable` must be an array of at most 32 paths".into(),
            "/sandbox/writable",
        )
    })?;
    let mut out: Vec<String> = Vec::new();
    for (i, entry) in arr.iter().enumerate() {
        let pointer = format!("/sandbox/writable/{i}");
        let s = entry
            .as_str()
            .filter(|s| !s.is_empty() && s.len() <= 4096)
            .ok_or_else(|| schema_err("must be a non-empty path".into(), &pointer))?;
        if out.iter().any(|o| o == s) {
            return Err(schema_err(
                format!("`{}` is listed twice", crate::escape::escape(s)),
                &pointer,
            ));
        }
        if let Some(why) = sandbox_writable_refusal(s) {
            return Err(("hook-sandbox-writable-refused", why, pointer));
        }
        out.push(s.to_owned());
    }
    Ok(out)
}

/// Why the `sandbox.writable` entry `entry` is refused, judged from its
/// text alone (the runner checks the real paths again before each run): a
/// `..`, the home or `/` itself, or a path that equals, is inside or holds
/// a credential store, keryx's own files, `.git`, `.metaproject` or a
/// host's configuration.
/// One error per key of `hooks` that is not a keryx event.
fn unknown_events(doc: &Value, text: &str, path: &Path) -> Vec<Diagnostic> {
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return Vec::new();
    };
    hooks
        .keys()
        .filter(|k| k.parse::<Event>().is_err())
        .map(|k| {
            let ptr = format!("/hooks/{}", escape_pointer(k));
            Diagnostic::error("hook-config-schema", unknown_event_message(k))
                .at(path)
                .line_col(locate(text, &ptr))
                .pointer(ptr)
        })
        .collect()
}

/// What an event key keryx has no event for looks like: a keryx event
/// spelled differently, a host's name for a keryx event, or a host event
/// keryx has none for (which stays in the host's own settings).
pub fn unknown_event_message(name: &str) -> String {
    let shown = crate::escape::escape(name);
    if let Some(e) = Event::ALL
        .iter()
        .find(|e| e.as_str().eq_ignore_ascii_case(name.trim()))
    {
        return format!("unknown event `{shown}`; the keryx event is spelled `{e}`");
    }
    let mut renamed: Vec<(String, Event)> = Vec::new();
    let mut unmapped: Vec<String> = Vec::new();
    for host in crate::adapter::host_names() {
        let Some(a) = crate::adapter::adapter(host) else {
            continue;
        };
        if let Some(e) = a.events().iter().find(|e| e.name() == name) {
            renamed.push((a.display_name().to_owned(), e.event()));
        } else if a.unmapped_events().contains(&name) {
            unmapped.push(a.display_name().to_owned());
        }
    }
    if let Some((_, event)) = renamed.first() {
        let hosts: Vec<&str> = renamed.iter().map(|(h, _)| h.as_str()).collect();
        return format!(
            "unknown event `{shown}`: that is {}'s name for the keryx event `{event}`; register the hook under `{event}`",
            hosts.join(" and ")
        );
    }
    if !unmapped.is_empty() {
        return format!(
            "unknown event `{shown}`: it is a {} hook event that keryx-hooks has no event for; keep that hook in the host's own settings, where it goes on running (`keryx-hooks import` leaves such hooks there), and take it out of this file",
            unmapped.join(" and ")
        );
    }
    let known: Vec<&str> = Event::ALL.iter().map(|e| e.as_str()).collect();
    match crate::config::suggest::near_miss(name.trim(), &known) {
        Some(meant) => format!(
            "unknown event `{shown}`; did you mean `{meant}`? (the keryx events are {})",
            known.join(", ")
        ),
        None => format!(
            "unknown event `{shown}`; the keryx events are {}",
            known.join(", ")
        ),
    }
}

/// Whether a matcher is written like a Claude Code permission rule
/// (`Bash(rm:*)`, `Bash(git push:*)`, `Read(./.env)`): a tool name with an
/// argument pattern in parentheses, which as a regex never matches a tool.
/// A regex group of plain names (`Notebook(Edit)`, `(Write|Edit)`) is not.
pub fn looks_like_permission_rule(matcher: &str) -> bool {
    let Some((tool, rest)) = matcher.split_once('(') else {
        return false;
    };
    let Some(inner) = rest.strip_suffix(')') else {
        return false;
    };
    tool.starts_with(|c: char| c.is_ascii_uppercase())
        && tool.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !inner.contains(['|', '(', ')'])
        && inner.contains([':', ' ', '*', '/', '.', '~'])
}

/// The timeouts below this many milliseconds are almost always seconds
/// copied from a host's config.
pub const SHORT_TIMEOUT_MS: u64 = 100;

/// A warning per registration whose `timeoutMs` looks like seconds.
fn short_timeouts(regs: &[Registration]) -> Vec<Diagnostic> {
    regs.iter()
        .filter(|r| r.timeout_ms < SHORT_TIMEOUT_MS && r.command().is_some())
        .map(|r| {
            let mut d = Diagnostic::warning(
                "hook-timeout-short",
                format!(
                    "`{}` on {}: `timeoutMs` {} is {} ms, not seconds; a host's `timeout: {}` is `timeoutMs: {}` here",
                    r.id,
                    r.event,
                    r.timeout_ms,
                    r.timeout_ms,
                    r.timeout_ms,
                    (r.timeout_ms * 1000).min(Registration::MAX_TIMEOUT_MS)
                ),
            );
            if let Some(src) = &r.source {
                d = d.at(src.clone());
            }
            d
        })
        .collect()
}

/// One error per user hook whose script (see
/// [`Registration::user_scripts`]) is not a file in the directory of the
/// user hooks file it was loaded from: run from there, it would fail every
/// time (a gate then denies every call, in every project).
pub fn missing_user_scripts(regs: &[Registration]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for r in regs.iter().filter(|r| r.scope == Scope::User) {
        for (i, path) in r.user_scripts() {
            if path.is_file() {
                continue;
            }
            let dir = r.user_dir().map(Path::display);
            let mut d = Diagnostic::error(
                "hook-user-script-missing",
                format!(
                    "`{}` on {}: `{}` (argv[{i}]) is not in `{}`, the directory of the user hooks file it runs from; relative scripts of a user hook resolve there, never in the project",
                    r.id,
                    r.event,
                    path.display(),
                    dir.map(|d| d.to_string()).unwrap_or_default()
                ),
            );
            if let Some(src) = &r.source {
                d = d.at(src.clone());
            }
            out.push(d);
        }
    }
    out
}

/// How the name of a script a shell command runs ends (`gate.sh`, `log.py`).
pub const SCRIPT_EXTENSIONS: &[&str] = &[
    ".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl",
];

/// Imported hooks (a `protocol` command run as `/bin/sh -c <command>`)
/// whose command names a script that is not there: moved or deleted since
/// the import, the hook fails on every call while the config still loads.
/// `project` and `home` resolve `$…_PROJECT_DIR/…` and `~/…`.
pub fn missing_imported_scripts(
    regs: &[Registration],
    project: &Path,
    home: &Path,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for r in regs.iter().filter(|r| r.scope != Scope::Builtin) {
        let Some(c) = r.command().filter(|c| c.protocol.is_some()) else {
            continue;
        };
        let [sh, dash_c, command] = c.argv.as_slice() else {
            continue;
        };
        if sh != "/bin/sh" || dash_c != "-c" {
            continue;
        }
        let base = c
            .cwd
            .as_deref()
            .map_or_else(|| project.to_path_buf(), |d| project.join(d));
        for word in command.split_whitespace() {
            let w = word
                .trim_matches(['"', '\'', ';', '(', ')'])
                .replace(['"', '\''], "");
            if !SCRIPT_EXTENSIONS.iter().any(|x| w.ends_with(x))
                || w.contains("${") && !w.contains("_DIR}")
            {
                continue;
            }
            let path = if let Some(rest) = w
                .strip_prefix("~/")
                .or_else(|| w.strip_prefix("$HOME/"))
                .or_else(|| w.strip_prefix("${HOME}/"))
            {
                home.join(rest)
            } else if let Some((_, rest)) = w
                .split_once("_PROJECT_DIR}/")
                .or_else(|| w.split_once("_PROJECT_DIR/"))
            {
                project.join(rest)
            } else if w.starts_with('$') || w.contains("://") {
                continue;
            } else if w.starts_with('/') {
                std::path::PathBuf::from(&w)
            } else if w.contains('/') {
                base.join(w.strip_prefix("./").unwrap_or(&w))
            } else {
                continue;
            };
            if path.exists() {
                continue;
            }
            let mut d = Diagnostic::error(
                "hook-imported-script-missing",
                format!(
                    "`{}` on {}: its command runs `{}`, which is not there (moved or deleted since it was imported?), so it fails on every call; put the script back, or `keryx-hooks import --undo` and import again",
                    r.id,
                    r.event,
                    path.display()
                ),
            );
            if let Some(src) = &r.source {
                d = d.at(src.clone());
            }
            out.push(d);
        }
    }
    out
}

pub fn sandbox_writable_refusal(entry: &str) -> Option<String> {
    let shown = crate::escape::escape(entry);
    let refuse = |what: &str| {
        Some(format!(
            "`sandbox.writable` entry `{shown}` covers {what}, which a sandboxed hook must never write"
        ))
    };
    if Path::new(entry)
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Some(format!(
            "`sandbox.writable` entry `{shown}` contains `..`; name the directory itself"
        ));
    }
    let norm = |p: &str| -> String {
        p.split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect::<Vec<_>>()
            .join("/")
    };
    let covers = |entry: &str, protected: &str| {
        entry.is_empty()
            || entry == protected
            || protected.starts_with(&format!("{entry}/"))
            || entry.starts_with(&format!("{protected}/"))
    };
    if entry == "~" || entry.starts_with("~/") {
        let rel = norm(&entry[1..]);
        if rel.is_empty() {
            return refuse("your home directory");
        }
        for secret in crate::paths::HOME_SECRETS {
            if covers(&rel, secret) || (rel.starts_with(".cargo/credentials")) {
                return refuse(&format!("the credential store `~/{secret}`"));
            }
        }
        for own in KERYX_HOME_PATHS {
            if covers(&rel, own) {
                return refuse(&format!("keryx-hooks' own `~/{own}`"));
            }
        }
        for file in host_user_config() {
            if covers(&rel, &file) {
                return refuse(&format!("the host configuration `~/{file}`"));
            }
        }
        return None;
    }
    if entry.starts_with('~') {
        return Some(format!(
            "`sandbox.writable` entry `{shown}` must start with `~/`, `/` or a project-relative name"
        ));
    }
    if Path::new(entry).is_absolute() {
        let abs = norm(entry);
        if abs.is_empty() {
            return refuse("the whole filesystem");
        }
        if matches!(abs.as_str(), "home" | "Users" | "root") {
            return refuse("every home directory");
        }
        return None;
    }
    let rel = norm(entry);
    if rel.is_empty() {
        return refuse("the whole project, with its `.git` and host configuration,");
    }
    // Inside a host's project directory, a hook's own state or log file
    // may be granted (exactly that path), never the host's settings, its
    // hooks, or what the agent loads from there.
    let first = rel.split('/').next().unwrap_or_default();
    if HOST_STATE_DIRS.contains(&first) && rel.len() > first.len() {
        let mut below = rel[first.len() + 1..].split('/');
        let child = below.next().unwrap_or_default();
        let lower = child.to_ascii_lowercase();
        // A hook's own state inside the hooks directory
        // (`.claude/hooks/.locks`, `.gemini/hooks/debug.log`): a dot entry
        // or a log file, which no `*.sh`-style glob in a command that runs
        // the directory's scripts picks up, and which the host runs only
        // if its settings (protected) name it.
        if lower == "hooks" && below.next().is_some_and(is_hook_state_entry) {
            return None;
        }
        if HOST_RESERVED.iter().any(|r| lower.starts_with(r)) {
            return refuse(&format!(
                "the host's own `{first}/{child}` (its settings, hooks, or what the agent loads)"
            ));
        }
        return None;
    }
    if let Some(rest) = rel.strip_prefix(".github/hooks/")
        && rest.split('/').next().is_some_and(is_hook_state_entry)
    {
        return None;
    }
    for protected in crate::paths::PROJECT_PROTECTED.iter().chain(&[".git"]) {
        if covers(&rel, protected) || first.starts_with(".kimi") {
            return refuse(&format!("the project's `{protected}`"));
        }
    }
    None
}

/// A dot entry of its own (`.locks`, `.state`, not `.` or `..`), or a
/// log file (`debug.log`): what a hook keeps beside its scripts.
fn is_hook_state_entry(name: &str) -> bool {
    let hidden = name.len() > 1 && name.starts_with('.') && name != "..";
    let log = name.len() > 4 && name.ends_with(".log") && !name.contains('/');
    hidden || log
}

/// A host's directories in a project in which a hook may be granted a
/// path of its own (`.codex/working_state.json`).
const HOST_STATE_DIRS: &[&str] = &[".claude", ".gemini", ".codex", ".cursor", ".qwen"];

/// What in those directories stays protected, by the start of its name:
/// settings, hooks and every file the agent loads or runs from there.
const HOST_RESERVED: &[&str] = &[
    "settings",
    "config",
    "hooks",
    "commands",
    "agents",
    "skills",
    "plugins",
    "extensions",
    "rules",
    "mcp",
    "policies",
    "output-styles",
    "claude.md",
    "gemini.md",
    "agents.md",
    "environment",
    "env",
    ".env",
];

/// keryx-hooks' own files under the home, at their default places.
const KERYX_HOME_PATHS: &[&str] = &[
    ".keryx",
    ".local/share/keryx",
    ".local/state/keryx",
    ".agentic/hooks-snapshot",
];

/// Every host's user configuration files, home-relative (`.claude/settings.json`).
fn host_user_config() -> Vec<String> {
    crate::adapter::host_names()
        .iter()
        .filter_map(|h| crate::adapter::adapter(h))
        .flat_map(|a| a.config_files().user)
        .filter_map(|p| p.strip_prefix("~/").map(str::to_owned))
        .collect()
}

/// A project hook runs from the project root, and its `cwd` and a relative
/// program path must keep it there: trust covers the project's files, not
/// whatever `../..` reaches on the machine that runs it. (An absolute
/// program, such as `/usr/bin/python3`, is the machine's own and allowed.)
fn project_paths_stay_inside(command: &CommandSpec) -> Result<(), ConvertError> {
    let outside = |what: &str, value: &str, pointer: &str| {
        Err((
            "hook-config-outside-project",
            format!(
                "{what} `{}` leaves the project; a project hook's {what} must stay inside the project",
                crate::escape::escape(value)
            ),
            pointer.to_owned(),
        ))
    };
    if let Some(cwd) = &command.cwd
        && (Path::new(cwd).is_absolute() || climbs_out(cwd))
    {
        return outside("cwd", cwd, "/command/cwd");
    }
    let program = &command.argv[0];
    if program.contains('/') && !Path::new(program).is_absolute() && climbs_out(program) {
        return outside("program path", program, "/command/argv/0");
    }
    Ok(())
}

/// True when the relative path `p`, read component by component, goes above
/// where it starts (`..`, `a/../..`).
fn climbs_out(p: &str) -> bool {
    let mut depth: i64 = 0;
    for c in Path::new(p).components() {
        match c {
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

fn convert_command(v: Option<&Value>) -> Result<CommandSpec, (String, String)> {
    let obj = v.and_then(Value::as_object).ok_or_else(|| {
        (
            "`command` must be an object with `argv`".to_owned(),
            "/command".to_owned(),
        )
    })?;
    if let Some(k) = obj.keys().find(|k| {
        !matches!(
            k.as_str(),
            "argv" | "cwd" | "env" | "envPassthrough" | "protocol" | "failClosed"
        )
    }) {
        return Err((format!("unknown key `{k}` in `command`"), "/command".into()));
    }
    let argv: Vec<String> = obj
        .get("argv")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty() && a.len() <= 256)
        .and_then(|a| {
            a.iter()
                .map(|s| s.as_str().filter(|s| s.len() <= 16384).map(str::to_owned))
                .collect()
        })
        .ok_or_else(|| {
            (
                "`command.argv` must be a non-empty array of strings".to_owned(),
                "/command/argv".to_owned(),
            )
        })?;
    let cwd = match obj.get("cwd") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => {
            return Err((
                "`command.cwd` must be a non-empty string".into(),
                "/command/cwd".into(),
            ));
        }
    };
    let mut env = BTreeMap::new();
    if let Some(e) = obj.get("env") {
        let e = e.as_object().ok_or((
            "`command.env` must be an object of strings".to_owned(),
            "/command/env".to_owned(),
        ))?;
        for (k, v) in e {
            let name_ok = env_name_ok(k);
            let val = v.as_str().filter(|_| name_ok).ok_or_else(|| {
                (
                    format!("`command.env` entry `{k}` must be NAME: \"string\""),
                    format!("/command/env/{}", escape_pointer(k)),
                )
            })?;
            env.insert(k.clone(), val.to_owned());
        }
    }
    let mut env_passthrough: Vec<String> = Vec::new();
    if let Some(p) = obj.get("envPassthrough") {
        let list = p.as_array().ok_or((
            "`command.envPassthrough` must be an array of variable names".to_owned(),
            "/command/envPassthrough".to_owned(),
        ))?;
        for (i, name) in list.iter().enumerate() {
            let name = name.as_str().filter(|k| env_name_ok(k)).ok_or_else(|| {
                (
                    "`command.envPassthrough` entries must be variable names (letters, digits and _, not starting with a digit)".to_owned(),
                    format!("/command/envPassthrough/{i}"),
                )
            })?;
            if !env_passthrough.iter().any(|n| n == name) {
                env_passthrough.push(name.to_owned());
            }
        }
    }
    let protocol = match obj.get("protocol") {
        None => None,
        Some(v) => {
            let host = v
                .as_str()
                .and_then(crate::adapter::lookup)
                .filter(|a| a.hook_protocol().is_some())
                .ok_or_else(|| {
                    let known: Vec<&str> = crate::adapter::all()
                        .filter(|a| a.hook_protocol().is_some())
                        .map(|a| a.name())
                        .collect();
                    (
                        format!(
                            "`command.protocol` must name a host whose hook contract keryx-hooks knows: `{}`",
                            known.join("`, `")
                        ),
                        "/command/protocol".to_owned(),
                    )
                })?;
            let fail_closed = match obj.get("failClosed") {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => {
                    return Err((
                        "`command.failClosed` must be true or false".into(),
                        "/command/failClosed".into(),
                    ));
                }
            };
            Some(crate::config::model::Protocol { host, fail_closed })
        }
    };
    if protocol.is_none() && obj.contains_key("failClosed") {
        return Err((
            "`command.failClosed` applies only to a command with a `protocol` (a hook in the spec's protocol already fails as its class says)".into(),
            "/command/failClosed".into(),
        ));
    }
    Ok(CommandSpec {
        argv,
        cwd,
        env,
        env_passthrough,
        protocol,
    })
}

fn env_name_ok(k: &str) -> bool {
    !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Applies disable-only overrides with the spec's rules on who may turn
/// what off.
fn apply_overrides(loaded: &mut Loaded, overrides: &[Override]) {
    for o in overrides {
        let path = loaded.file(o.scope).map(|f| f.path.clone());
        let warn = |code, msg: String| {
            let mut d = Diagnostic::warning(code, msg).pointer(o.pointer.clone());
            if let Some(p) = &path {
                d = d.at(p.clone());
            }
            d
        };
        let Some(class) = builtins::class_of(&o.id) else {
            loaded.diagnostics.push(warn(
                "hook-override-unknown",
                format!(
                    "there is no built-in hook `{}`; this override does nothing",
                    o.id
                ),
            ));
            continue;
        };
        let allowed = match (class.has_decision_power(), o.scope) {
            (false, _) => true,
            (true, Scope::Project) => {
                loaded.diagnostics.push(warn(
                    "hook-override-ignored",
                    format!(
                        "`{}` is a built-in {class} hook; a project file cannot turn it off, so this override is ignored",
                        o.id
                    ),
                ));
                false
            }
            (true, _) if !o.acknowledged => {
                loaded.diagnostics.push(warn(
                    "hook-override-ignored",
                    format!(
                        "`{}` is a built-in {class} hook; turning it off needs \"acknowledge\": \"disable-builtin-gate\" (or `keryx-hooks disable {} --user --acknowledge-gate-risk`), so this override is ignored",
                        o.id, o.id
                    ),
                ));
                false
            }
            (true, _) => {
                if !loaded.disabled_builtin_gates.contains(&o.id) {
                    loaded.disabled_builtin_gates.push(o.id.clone());
                }
                true
            }
        };
        if allowed {
            if let Some(p) = &path {
                loaded.disabled_by.push((o.id.clone(), p.clone()));
            }
            for r in loaded
                .registrations
                .iter_mut()
                .filter(|r| r.scope == Scope::Builtin && r.id == o.id)
            {
                r.enabled = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sandbox_writable_refusal as refusal;
    use super::{looks_like_permission_rule, unknown_event_message};

    /// What a broken override of a built-in says.
    #[test]
    fn a_broken_override_says_why() {
        use crate::config::model::Scope;
        use crate::events::Event;
        use serde_json::json;
        let why = |v: serde_json::Value| {
            super::convert_override(&v, Scope::User, Event::Stop, "/hooks/Stop/0")
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(why(json!(1)).as_deref(), Some("must be an object"));
        assert_eq!(
            why(json!({"id": "keryx.X", "enabled": false})).as_deref(),
            Some("`keryx.X` is not a valid built-in id")
        );
        assert_eq!(
            why(json!({"id": "keryx.ctx-guard"})).as_deref(),
            Some("a disable-only override must say \"enabled\": false")
        );
        assert_eq!(
            why(json!({"id": "keryx.ctx-guard", "enabled": false, "acknowledge": true})).as_deref(),
            Some("`acknowledge` may only be \"disable-builtin-gate\"")
        );
        assert_eq!(
            why(json!({"id": "keryx.ctx-guard", "enabled": false})),
            None
        );
        // A matcher's error is the regex engine's own message.
        let source = String::from("Edit(");
        let bad = crate::config::matcher::Matcher::compile(&source).unwrap_err();
        assert_eq!(
            bad.to_string(),
            regex::Regex::new(&source).unwrap_err().to_string()
        );
    }

    #[test]
    fn permission_rules_are_told_from_regexes() {
        for rule in [
            "Bash(rm:*)",
            "Bash(git push:*)",
            "Read(./.env)",
            "Bash(npm run test)",
            "WebFetch(domain:example.com)",
            "Edit(~/.bashrc)",
        ] {
            assert!(looks_like_permission_rule(rule), "{rule}");
        }
        for regex in [
            "Bash",
            "Notebook(Edit)",
            "^(Write|Edit)$",
            "mcp__(github|gitlab)__.*",
            "(Bash)",
            "Write|Edit",
        ] {
            assert!(!looks_like_permission_rule(regex), "{regex}");
        }
    }

    #[test]
    fn unknown_event_messages_name_what_they_look_like() {
        assert!(unknown_event_message("posttooluse").contains("spelled `PostToolUse`"));
        let m = unknown_event_message("AfterTool");
        assert!(
            m.contains("Gemini CLI") && m.contains("`PostToolUse`"),
            "{m}"
        );
        let m = unknown_event_message("Notification");
        assert!(
            m.contains("Claude Code") && m.contains("has no event for"),
            "{m}"
        );
        assert!(unknown_event_message("Bogus").contains("the keryx events are SessionStart"));
        assert!(!unknown_event_message("Bogus").contains("did you mean"));
        for (typo, meant) in [
            ("PreToolUs", "PreToolUse"),
            ("PostToolUseFail", "PostToolUseFailure"),
            ("Pre_Compact", "PreCompact"),
            ("SubagentStp", "SubagentStop"),
            ("Stopp", "Stop"),
        ] {
            let m = unknown_event_message(typo);
            assert!(
                m.contains(&format!("did you mean `{meant}`?")),
                "{typo}: {m}"
            );
        }
    }

    #[test]
    fn sandbox_writable_refuses_what_covers_a_protected_path() {
        for entry in [
            "~",
            "~/",
            "/",
            "//",
            "~/.ssh",
            "~/.ssh/agent",
            "~/.config",
            "~/.cargo",
            "~/.cargo/credentials.toml",
            "~/.docker",
            "~/.local",
            "~/.local/state/keryx/hook-cache",
            "~/.keryx",
            "~/.agentic",
            "~/.claude",
            "~/.claude/settings.json",
            "~/.codex",
            "~other",
            "/home",
            "/root",
            ".",
            "./",
            ".git",
            ".git/objects",
            ".github",
            ".github/hooks/x",
            ".claude",
            ".claude/settings.local.json",
            ".claude/hooks",
            ".claude/hooks/",
            ".claude/hooks/./gate.sh",
            ".claude/hooks/..",
            ".github/hooks",
            ".claude/commands",
            ".gemini/settings.json",
            ".codex/config.toml",
            ".metaproject",
            ".kimi-anything",
            "a/../.git",
            "../sibling",
        ] {
            assert!(refusal(entry).is_some(), "`{entry}` must be refused");
        }
        for entry in [
            ".claude/logs",
            ".claude/hooks/x.log",
            ".gemini/hooks/debug.log",
            ".codex/working_state.json",
            ".gemini/tool-log.txt",
            "~/.claude/hooks-logs",
            "~/.cache/my-tool",
            "~/.config/my-tool",
            "~/.sshx",
            "/opt/data",
            "build",
            "target/cache",
            ".github/workflows-cache",
            ".gitignore-cache",
            ".claude/hooks/.locks",
            ".claude/hooks/.state/subagent.log",
            ".github/hooks/.cache",
        ] {
            assert_eq!(refusal(entry), None, "`{entry}` is fine");
        }
        let why = refusal("~/.ssh").unwrap();
        assert!(why.contains("credential store `~/.ssh`"), "{why}");
    }
}
