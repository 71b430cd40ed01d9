//! The properties the fuzz targets check, one public function per target,
//! each panicking when a property fails. `tests/fuzz_regressions.rs` includes
//! this file as a module and replays every committed seed and every input
//! that once failed, so the properties hold on every test run, fuzzer or not.

use std::path::{Path, PathBuf};

use keryx_hooks::builtins;
use keryx_hooks::config::load::{self, Loaded, Sources};
use keryx_hooks::config::model::{Profile, Scope};
use keryx_hooks::config::schema;
use keryx_hooks::hosts::{self, Adapter, DecodeError, stdin_guard};
use keryx_hooks::install::hostfile::{self, Desired, HostFileError, json, toml, wiring};
use keryx_hooks::runtime::codec::{self, PayloadContext};
use keryx_hooks::runtime::events::Event;
use keryx_hooks::runtime::fire;
use keryx_hooks::runtime::reply::{self, HookReply};
use keryx_hooks::runtime::types::{EventInput, FireResult, Outcome};
use serde_json::{Map, Value};

// ------------------------------------------------------------------ host_payload

/// Reads `data` the way `run` reads stdin: through the bounded reader, from
/// a pipe whose writer has closed.
fn read_payload(data: &[u8]) -> Result<Value, stdin_guard::StdinError> {
    use std::io::Write;
    let (reader, mut writer) = std::io::pipe().expect("a pipe");
    // A pipe holds 64 KiB: smaller inputs go in at once, larger ones from a
    // thread so the reader can drain them.
    if data.len() <= 60 * 1024 {
        writer.write_all(data).expect("write to a pipe");
        drop(writer);
        return stdin_guard::read_json(reader, &stdin_guard::Limits::default());
    }
    let owned = data.to_vec();
    let feeder = std::thread::spawn(move || {
        // The reader may stop early (a complete value, or too deep).
        let _ = writer.write_all(&owned);
    });
    let r = stdin_guard::read_json(reader, &stdin_guard::Limits::default());
    feeder.join().expect("the pipe writer thread");
    r
}

/// Every host event name worth trying on `adapter`: the mapped ones, the
/// deliberately unmapped ones and one that does not exist.
fn host_events(adapter: &Adapter) -> Vec<String> {
    let mut out: Vec<String> = adapter
        .events()
        .iter()
        .map(|e| e.name().to_owned())
        .collect();
    out.extend(adapter.unmapped_events().iter().map(|e| (*e).to_owned()));
    out.push("NoSuchHostEvent".into());
    out
}

fn all_adapters() -> impl Iterator<Item = &'static Adapter> {
    hosts::host_names()
        .iter()
        .map(|h| hosts::adapter(h).expect("every listed host has an adapter"))
}

/// Every string inside a JSON value.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(m) => m.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// Encodes `result` for one host event as `run` would and checks the reply
/// is in the host's protocol: at most one JSON object on one stdout line,
/// silence for "no objection", and a deny that reaches a host able to hear
/// it carries its reason.
fn answer(adapter: &Adapter, host_event: &str, event: Event, result: &FireResult) {
    let enc = adapter.encode(host_event, event, result);
    let at = || format!("{} {host_event} {:?}", adapter.name(), result.outcome);
    let stdout_value = if enc.stdout.is_empty() {
        None
    } else {
        let line = enc
            .stdout
            .strip_suffix('\n')
            .unwrap_or_else(|| panic!("{}: stdout does not end in a newline", at()));
        assert!(
            !line.contains('\n'),
            "{}: stdout is more than one line: {:?}",
            at(),
            enc.stdout
        );
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{}: stdout is not JSON ({e}): {line}", at()));
        assert!(v.is_object(), "{}: stdout is not an object: {line}", at());
        Some(v)
    };
    if !enc.stderr.is_empty() {
        assert!(
            enc.stderr.ends_with('\n'),
            "{}: stderr without newline",
            at()
        );
    }
    if adapter.is_native() {
        let v = stdout_value.unwrap_or_else(|| panic!("{}: the native reply is empty", at()));
        assert_eq!(v["outcome"], result.outcome.as_str(), "{}", at());
        assert_eq!(enc.exit_code, 0, "{}", at());
        assert!(enc.stderr.is_empty(), "{}", at());
        return;
    }
    let quiet =
        result.reason.is_none() && result.additional_context.is_none() && result.notices.is_empty();
    if quiet && matches!(result.outcome, Outcome::Allow | Outcome::None) {
        assert!(
            enc.is_silent(),
            "{}: an allow must be silence, got {enc:?}",
            at()
        );
    }
    let can_deny = adapter
        .events()
        .iter()
        .find(|e| e.name() == host_event)
        .is_some_and(|e| e.can_deny());
    if result.outcome == Outcome::Deny && event.is_gate_capable() && can_deny {
        assert!(
            !enc.is_silent(),
            "{}: a deny the host can hear came out as silence",
            at()
        );
        if let Some(reason) = result.reason.as_deref().map(str::trim)
            && !reason.is_empty()
        {
            let mut texts = vec![enc.stderr.clone()];
            if let Some(v) = &stdout_value {
                strings(v, &mut texts);
            }
            assert!(
                texts.iter().any(|t| t.contains(reason)),
                "{}: the deny reason {reason:?} is lost: {enc:?}",
                at()
            );
        }
    }
}

/// The answers `run` can give after a decoded event: from silence to a
/// deny, with text taken from the payload itself.
fn results_for(input: &EventInput) -> Vec<FireResult> {
    let text = input
        .fields
        .values()
        .find_map(Value::as_str)
        .unwrap_or(&input.session_id)
        .to_owned();
    let mut out = vec![FireResult::none()];
    let mut allow = FireResult::none();
    allow.outcome = Outcome::Allow;
    out.push(allow);
    for outcome in [Outcome::Deny, Outcome::Ask] {
        let mut r = FireResult::none();
        r.outcome = outcome;
        r.reason = Some(text.clone());
        r.matched_rules.push("fuzz-rule".into());
        out.push(r);
    }
    let mut said = FireResult::none();
    said.additional_context = Some(text.clone());
    said.notices.push(input.session_id.clone());
    out.push(said);
    out
}

/// What a decoded input must satisfy before anything fires.
fn check_input(adapter: &Adapter, host_event: &str, input: &EventInput) {
    let at = format!("{} {host_event}", adapter.name());
    assert_eq!(
        input.event.as_str().parse::<Event>().ok(),
        Some(input.event),
        "{at}"
    );
    // The payload every hook receives: one object, stable through a round trip.
    let ctx = PayloadContext {
        hook_id: "fuzz-hook",
        run_id: input.run_id.as_deref().unwrap_or("run-0"),
        timestamp: "2026-01-01T00:00:00.000Z",
        profile: input.profile.unwrap_or(Profile::DEFAULT),
        project_root: input.cwd.as_deref().and_then(Path::to_str),
    };
    let stdin = codec::build_hook_stdin(input, &ctx);
    let line = serde_json::to_string(&stdin).expect("a Value serializes");
    assert!(
        !line.contains('\n'),
        "{at}: the hook payload is not one line"
    );
    let back: Value = serde_json::from_str(&line).expect("the hook payload re-parses");
    assert_eq!(back, stdin, "{at}");
    assert_eq!(stdin["sessionId"], input.session_id.as_str(), "{at}");
    assert_eq!(stdin["event"], input.event.as_str(), "{at}");
    // Selection runs every matcher against the payload's tool name.
    let regs = builtins::registrations();
    for &p in Profile::ALL {
        for r in fire::select(&regs, input, p) {
            assert_eq!(r.event, input.event, "{at}");
        }
    }
}

/// `host_payload`: arbitrary stdin bytes, read as `run` reads them, decoded
/// for every event of every host, and every answer encoded back.
pub fn host_payload(data: &[u8]) {
    let read = read_payload(data);
    // The reader stops at the end of the first value without parsing, so
    // check it against a real parser: a whole input that is one JSON value
    // reads as that value, and whatever it reads is the input's first value.
    if let Ok(whole) = serde_json::from_slice::<Value>(data) {
        match &read {
            Ok(v) => assert_eq!(v, &whole, "the reader and serde disagree"),
            Err(e) => panic!("valid JSON was refused: {e}"),
        }
    }
    if let Ok(v) = &read {
        let first = serde_json::Deserializer::from_slice(data)
            .into_iter::<Value>()
            .next();
        match first {
            Some(Ok(first)) => assert_eq!(&first, v, "the reader read past the first value"),
            other => panic!("the reader accepted what serde does not read: {other:?}"),
        }
    }

    for adapter in all_adapters() {
        for host_event in host_events(adapter) {
            let Some(event) = adapter.canonical_event(&host_event) else {
                if let Ok(payload) = &read {
                    let d = adapter.decode(&host_event, payload);
                    assert!(
                        matches!(
                            d,
                            Err(DecodeError::UnknownEvent { .. }
                                | DecodeError::UnmappedEvent { .. })
                        ),
                        "{} {host_event}: {d:?}",
                        adapter.name()
                    );
                }
                continue;
            };
            let payload = match &read {
                Ok(p) => p,
                Err(e) => {
                    let r = FireResult::broken(
                        Some(event),
                        format!("keryx-hooks could not read the {event} payload: {e}"),
                    );
                    answer(adapter, &host_event, event, &r);
                    continue;
                }
            };
            match adapter.decode(&host_event, payload) {
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    let r = FireResult::broken(
                        Some(event),
                        format!("keryx-hooks could not decode the {event} payload: {e}"),
                    );
                    answer(adapter, &host_event, event, &r);
                }
                Ok(input) => {
                    check_input(adapter, &host_event, &input);
                    for r in results_for(&input) {
                        answer(adapter, &host_event, event, &r);
                    }
                }
            }
        }
    }
}

// ------------------------------------------------------------------ hook_reply

/// The reply rules as the module documents them, written out plainly:
/// `Err` wherever a field has the wrong type or an unknown word.
fn reply_by_the_rules(obj: &Map<String, Value>) -> Result<HookReply, ()> {
    let specific = match obj.get("hookSpecificOutput") {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => Some(o),
        Some(_) => return Err(()),
    };
    let text = |m: Option<&Map<String, Value>>, k: &str| match m.and_then(|m| m.get(k)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(()),
    };
    let word = |s: Option<String>| match s.as_deref() {
        None => Ok(None),
        Some("allow" | "approve") => Ok(Some(Outcome::Allow)),
        Some("ask") => Ok(Some(Outcome::Ask)),
        Some("deny" | "block") => Ok(Some(Outcome::Deny)),
        Some(_) => Err(()),
    };
    let top = word(text(Some(obj), "decision")?)?;
    let nested = word(text(specific, "permissionDecision")?)?;
    if let (Some(a), Some(b)) = (top, nested)
        && a != b
    {
        return Err(());
    }
    let context = match (
        text(Some(obj), "additionalContext")?,
        text(specific, "additionalContext")?,
    ) {
        (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
        (a, b) => a.or(b),
    };
    let top_reason = text(Some(obj), "reason")?;
    let nested_reason = text(specific, "permissionDecisionReason")?;
    Ok(HookReply {
        decision: top.or(nested),
        additional_context: context,
        reason: top_reason.or(nested_reason),
        attempted_rewrite: obj.contains_key("updatedInput")
            || specific.is_some_and(|s| s.contains_key("updatedInput")),
        system_message: text(Some(obj), "systemMessage")?,
    })
}

/// `hook_reply`: arbitrary hook stdout through the reply parser, checked
/// against the documented rules and for layout independence; what it reads
/// then goes back out to every host.
pub fn hook_reply(data: &[u8]) {
    // Compared as text: the same reason for the same object, whatever its layout.
    let parse = |bytes: &[u8]| reply::parse(bytes).map_err(|e| e.to_string());
    let parsed = parse(data);
    let Ok(text) = std::str::from_utf8(data) else {
        assert!(parsed.is_err(), "non-UTF-8 stdout was accepted");
        return;
    };
    if text.trim().is_empty() {
        assert_eq!(
            parsed,
            Ok(HookReply::default()),
            "blank stdout is a silent approve"
        );
        return;
    }
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text.trim()) else {
        assert!(
            parsed.is_err(),
            "stdout that is not one JSON object was accepted"
        );
        return;
    };
    match (&parsed, reply_by_the_rules(&obj)) {
        (Ok(a), Ok(b)) => assert_eq!(a, &b),
        (Err(_), Err(())) => {}
        (got, _) => panic!("the parser and the documented rules disagree: {got:?}"),
    }
    // Layout is not meaning: the same object compact or pretty reads the same.
    let compact = serde_json::to_string(&obj).expect("a Value serializes");
    let pretty = serde_json::to_string_pretty(&obj).expect("a Value serializes");
    assert_eq!(parse(compact.as_bytes()), parsed, "compact form differs");
    assert_eq!(parse(pretty.as_bytes()), parsed, "pretty form differs");

    // A hook's words reach the host only through the encoder.
    let Ok(r) = parsed else { return };
    let mut result = FireResult::none();
    result.outcome = r.decision.unwrap_or(Outcome::None);
    result.reason = r.reason;
    result.additional_context = r.additional_context;
    for adapter in all_adapters() {
        for host_event in host_events(adapter) {
            if let Some(event) = adapter.canonical_event(&host_event) {
                answer(adapter, &host_event, event, &result);
            }
        }
    }
}

// ------------------------------------------------------------------ config_load

fn sources(user: PathBuf, project: Option<(PathBuf, PathBuf)>, cache: Option<PathBuf>) -> Sources {
    let (project_file, project_root) = match project {
        Some((file, root)) => (Some(file), Some(root)),
        None => (None, None),
    };
    Sources {
        user_file: user,
        project_file,
        project_root,
        cache_dir: cache,
    }
}

/// What a load decided, in a form two loads can be compared by.
fn decided(l: &Loaded) -> (bool, Vec<String>, Vec<String>, Vec<String>) {
    let regs = l.registrations.iter().map(|r| format!("{r:?}")).collect();
    let diags = l
        .diagnostics
        .iter()
        .map(|d| format!("{:?} {} {:?} {:?}", d.severity, d.code, d.pointer, d.line))
        .collect();
    (l.ok(), regs, diags, l.disabled_builtin_gates.clone())
}

fn check_loaded(l: &Loaded, data: &[u8], what: &str) {
    let lines = data.iter().filter(|b| **b == b'\n').count() + 1;
    for d in &l.diagnostics {
        assert!(!d.to_string().is_empty(), "{what}: an empty diagnostic");
        if let Some(line) = d.line {
            assert!(
                (1..=lines).contains(&line),
                "{what}: `{}` points at line {line} of {lines}",
                d.code
            );
            assert!(d.column.is_some_and(|c| c >= 1), "{what}: {d:?}");
        }
    }
    if !l.ok() {
        return;
    }
    let mut last = None;
    for r in &l.registrations {
        let rank = (r.scope, r.index);
        assert!(
            last <= Some(rank),
            "{what}: registrations out of merge order"
        );
        last = Some(rank);
        if r.scope != Scope::Builtin {
            assert!(load::valid_id(&r.id), "{what}: id `{}` loaded", r.id);
            assert!(!r.id.starts_with("keryx."), "{what}: `{}` loaded", r.id);
            assert!(
                (1..=keryx_hooks::config::model::Registration::MAX_TIMEOUT_MS)
                    .contains(&r.timeout_ms),
                "{what}: timeout {} loaded",
                r.timeout_ms
            );
            let argv = r.command().map(|c| c.argv.len()).unwrap_or(0);
            assert!((1..=256).contains(&argv), "{what}: argv of {argv} words");
        }
    }
    // A built-in with a say on the outcome is off only by the acknowledged
    // user-level override, and then it is reported.
    for r in l.registrations.iter().filter(|r| r.scope == Scope::Builtin) {
        if !r.enabled {
            let power = r.class.has_decision_power();
            assert!(
                !power || l.disabled_builtin_gates.contains(&r.id),
                "{what}: built-in gate `{}` is off without the acknowledgement",
                r.id
            );
        }
    }
}

/// `config_load`: arbitrary bytes as a `hooks.json`, loaded as the user
/// layer (with and without the validation cache, and with a planted cache
/// entry) and as the project layer.
pub fn config_load(data: &[u8]) {
    let tmp = tempfile::tempdir().expect("a temp dir");
    let root = std::fs::canonicalize(tmp.path()).expect("the temp dir resolves");
    let user = root.join("user").join("hooks.json");
    std::fs::create_dir_all(user.parent().expect("a parent")).expect("mkdir");
    std::fs::write(&user, data).expect("write hooks.json");

    let plain = load::load(&sources(user.clone(), None, None));
    check_loaded(&plain, data, "user layer");
    let cache = root.join("cache");
    let miss = load::load(&sources(user.clone(), None, Some(cache.clone())));
    let hit = load::load(&sources(user.clone(), None, Some(cache.clone())));
    assert_eq!(decided(&miss), decided(&plain), "the cache changed a load");
    assert_eq!(decided(&hit), decided(&plain), "a cache hit changed a load");

    // The cache only saves work: an entry planted for these very bytes skips
    // the schema pass, and the typed conversion must still refuse alone
    // whatever the schema refuses.
    let planted = root.join("planted");
    schema::cache_store(&planted, &schema::cache_key(data));
    let p = load::load(&sources(user.clone(), None, Some(planted)));
    // Duplicate keys are the one refusal a parsed value cannot show, so it
    // is made in the schema pass alone (config/schema.rs says so).
    let only_duplicates = plain
        .errors()
        .all(|d| d.code == "hook-config-duplicate-key");
    assert!(
        p.ok() == plain.ok() || (p.ok() && only_duplicates),
        "a planted cache entry changed whether the file loads: {:?}",
        plain.errors().next().map(ToString::to_string)
    );
    if p.ok() && plain.ok() {
        assert_eq!(
            decided(&p).1,
            decided(&plain).1,
            "a planted entry changed hooks"
        );
    }

    // The same bytes as a project file: the same verdict, and no project
    // file turns a built-in gate off.
    let proj = root.join("proj");
    let proj_file = proj.join(".keryx").join("hooks.json");
    std::fs::create_dir_all(proj_file.parent().expect("a parent")).expect("mkdir");
    std::fs::write(&proj_file, data).expect("write the project hooks.json");
    let as_project = load::load(&sources(
        root.join("absent.json"),
        Some((proj_file, proj)),
        None,
    ));
    check_loaded(&as_project, data, "project layer");
    assert_eq!(
        as_project.ok(),
        plain.ok(),
        "the layers disagree on validity"
    );
    assert!(
        as_project.disabled_builtin_gates.is_empty(),
        "a project file turned off {:?}",
        as_project.disabled_builtin_gates
    );
    for r in as_project
        .registrations
        .iter()
        .filter(|r| r.scope == Scope::Builtin && r.class.has_decision_power())
    {
        assert!(r.enabled, "a project file turned off `{}`", r.id);
    }
    if plain.ok() {
        let ids = |l: &Loaded| -> Vec<(String, Event)> {
            l.registrations
                .iter()
                .filter(|r| r.scope != Scope::Builtin)
                .map(|r| (r.id.clone(), r.event))
                .collect()
        };
        assert_eq!(
            ids(&as_project),
            ids(&plain),
            "the layers loaded different hooks"
        );
    }
}

// ------------------------------------------------------------------ host files

const BINARY: &str = "/opt/keryx/bin/keryx-hooks";

/// The two wirings every input is edited with: every event (a fresh
/// install) and one event under another snapshot (an update that must
/// also take stale entries of ours out).
fn wirings(host: &Adapter) -> [Vec<Desired>; 2] {
    let regs = builtins::registrations();
    let all = hostfile::desired(
        host,
        Path::new(BINARY),
        Path::new("/s/keryx-0123456789ab"),
        &regs,
        true,
    );
    let one = hostfile::desired(
        host,
        Path::new(BINARY),
        Path::new("/s/keryx-fedcba987654"),
        &regs,
        false,
    )
    .into_iter()
    .take(1)
    .collect();
    [all, one]
}

/// Recognises our entries exactly as the installer does.
fn ours_of(host: &Adapter) -> impl Fn(&str) -> bool + '_ {
    let current = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok());
    move |c: &str| wiring::is_ours(c, host.name(), current.as_deref())
}

/// Whether two lists of (event, entry) hold the same entries, in any order
/// (entries compare as values, so key order inside one does not matter).
fn same_entries(got: &[(String, Value)], want: &[(String, Value)]) -> bool {
    let mut left: Vec<&(String, Value)> = got.iter().collect();
    for w in want {
        match left.iter().position(|g| *g == w) {
            Some(i) => {
                left.remove(i);
            }
            None => return false,
        }
    }
    left.is_empty()
}

/// Takes every entry of ours out of a hooks list (a group of ours, or our
/// handler inside someone else's group) and reports what it took.
fn strip_list(
    items: &mut Vec<Value>,
    nested: bool,
    is_ours: &dyn Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut taken = Vec::new();
    if !nested {
        items.retain(|it| {
            let mine = is_ours(it);
            if mine {
                taken.push(it.clone());
            }
            !mine
        });
        return taken;
    }
    items.retain_mut(|group| {
        let Some(Value::Array(hs)) = group.get_mut("hooks") else {
            return true;
        };
        let mine = hs.iter().filter(|h| is_ours(h)).count();
        if mine == 0 {
            return true;
        }
        if mine == hs.len() {
            taken.push(group.clone());
            return false;
        }
        hs.retain(|h| {
            let m = is_ours(h);
            if m {
                taken.push(h.clone());
            }
            !m
        });
        true
    });
    taken
}

/// Splits a document (as its host reads it) into what is not ours, with
/// order kept, and the entries of ours by event. A list or `hooks` table
/// left empty counts as absent: installing fills one, uninstalling drops it.
fn split_doc(
    doc: &Value,
    list_under_hooks: bool,
    nested: bool,
    event_of: &dyn Fn(&str, &Value) -> String,
    is_ours: &dyn Fn(&Value) -> bool,
) -> (String, Vec<(String, Value)>) {
    let mut doc = doc.clone();
    let mut ours = Vec::new();
    if let Some(root) = doc.as_object_mut() {
        let mut drop_hooks = false;
        match root.get_mut("hooks") {
            Some(Value::Object(events)) if list_under_hooks => {
                for (key, list) in events.iter_mut() {
                    if let Value::Array(items) = list {
                        for it in strip_list(items, nested, is_ours) {
                            ours.push((event_of(key, &it), it));
                        }
                    }
                }
                events.retain(|_, v| !matches!(v, Value::Array(a) if a.is_empty()));
                drop_hooks = events.is_empty();
            }
            Some(Value::Array(items)) if !list_under_hooks => {
                for it in strip_list(items, false, is_ours) {
                    ours.push((event_of("", &it), it));
                }
                drop_hooks = items.is_empty();
            }
            _ => {}
        }
        if drop_hooks {
            root.shift_remove("hooks");
        }
    }
    (
        serde_json::to_string(&doc).expect("a Value serializes"),
        ours,
    )
}

/// The files the editors write, in a fresh directory.
struct Scratch {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Scratch {
    fn new(name: &str, data: &[u8]) -> Scratch {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join(name);
        std::fs::write(&path, data).expect("write the host file");
        Scratch { _dir: dir, path }
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).expect("the host file is there")
    }

    /// Everything in the directory: the file, and whatever else was left.
    fn listing(&self) -> Vec<String> {
        let dir = self.path.parent().expect("a parent");
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read the temp dir")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }
}

/// The file layer over the text editor: a refusal writes nothing (no
/// change, no backup, no temp file); an edit writes what the text editor
/// produced; and when ours was the only change, uninstall brings back the
/// input byte for byte and leaves nothing else behind.
fn check_file_layer(
    host: &Adapter,
    name: &str,
    wanted: &[Desired],
    data: &[u8],
    text_result: Option<&Result<String, HostFileError>>,
    had_ours: bool,
) {
    let s = Scratch::new(name, data);
    let only_file = vec![name.to_owned()];
    let dry = hostfile::install(host, &s.path, wanted, true);
    assert_eq!(s.bytes(), data, "{}: a dry run wrote", host.name());
    assert_eq!(
        s.listing(),
        only_file,
        "{}: a dry run left files",
        host.name()
    );
    let wet = hostfile::install(host, &s.path, wanted, false);
    assert_eq!(
        dry.is_ok(),
        wet.is_ok(),
        "{}: dry run and install disagree",
        host.name()
    );
    match (&wet, text_result) {
        // A file its host would not load (a comment in Claude Code's plain
        // JSON) is refused by the file layer, whatever the text editor
        // could do with it.
        (Err(e), _) if e.host_would_not_load() => {
            assert!(e.to_string().contains("nothing was written"), "{e}");
            assert_eq!(
                s.bytes(),
                data,
                "{}: a refused install wrote: {e}",
                host.name()
            );
        }
        (Err(e), None | Some(Err(_))) => {
            assert!(
                e.to_string().contains("nothing was written")
                    || e.to_string().contains("left as it is"),
                "{e}"
            );
            assert_eq!(
                s.bytes(),
                data,
                "{}: a refused install wrote: {e}",
                host.name()
            );
            assert_eq!(
                s.listing(),
                only_file,
                "{}: a refusal left files",
                host.name()
            );
        }
        (Ok(_), Some(Ok(text))) => {
            assert_eq!(
                s.bytes(),
                text.as_bytes(),
                "{}: file and text edits differ",
                host.name()
            );
            if had_ours {
                return;
            }
            hostfile::uninstall(host, &s.path, false)
                .unwrap_or_else(|e| panic!("{}: uninstall refused: {e}", host.name()));
            assert_eq!(
                String::from_utf8_lossy(&s.bytes()),
                String::from_utf8_lossy(data),
                "{}: uninstall did not restore the original",
                host.name()
            );
            assert_eq!(s.bytes(), data, "{}", host.name());
            assert_eq!(
                s.listing(),
                only_file,
                "{}: uninstall left files",
                host.name()
            );
        }
        (wet, text) => panic!(
            "{}: the file layer says {wet:?} but the text editor says {text:?}",
            host.name()
        ),
    }
}

// ------------------------------------------------------------------ hostfile_json

fn json_doc(text: &str) -> Result<Value, String> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    if body.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    json::parse(body)
        .map(|root| json::to_value(body, &root))
        .map_err(|e| e.to_string())
}

fn is_strict_json(text: &str) -> bool {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str::<Value>(body).is_ok()
}

fn json_split(
    shape: &json::Shape,
    ours: &dyn Fn(&str) -> bool,
    doc: &Value,
) -> (String, Vec<(String, Value)>) {
    let command = |h: &Value| {
        shape
            .command_keys
            .iter()
            .find_map(|k| h.get(*k).and_then(Value::as_str))
            .is_some_and(ours)
    };
    split_doc(doc, true, shape.nested, &|key, _| key.to_owned(), &command)
}

/// One host-file format's text editor, as the edit properties see it.
trait Editor {
    fn install(&self, text: &str, want: &[(String, Value)]) -> Result<String, HostFileError>;
    fn uninstall(&self, text: &str) -> Result<String, HostFileError>;
    /// The file as data; `Err` when it does not parse.
    fn doc(&self, text: &str) -> Result<Value, String>;
    /// The foreign content (as comparable text) and our entries, by key.
    fn split(&self, doc: &Value) -> (String, Vec<(String, Value)>);
    /// Rules for the edited text beyond the shared ones.
    fn check_output(&self, _name: &str, _text: &str, _out: &str) {}
    /// Takes out of `doc` what the editor adds besides our entries for a
    /// file that did not have it (`before`); `installed` says the install
    /// must have added it.
    fn strip_added(&self, _name: &str, _before: &Value, _doc: &mut Value, _installed: bool) {}
}

/// One edit at the text level, checked when it succeeds: it re-parses,
/// foreign content is untouched, our entries are as asked, a second
/// install changes nothing, and uninstall leaves exactly the foreign
/// content. `Err` is the editor's refusal.
fn edit_case(
    ed: &dyn Editor,
    name: &str,
    want: &[(String, Value)],
    text: &str,
) -> Result<String, HostFileError> {
    let out = ed.install(text, want)?;
    let before = ed
        .doc(text)
        .unwrap_or_else(|e| panic!("{name}: install read what cannot be read: {e}"));
    let mut after = ed
        .doc(&out)
        .unwrap_or_else(|e| panic!("{name}: the edit does not re-parse ({e}):\n{out}"));
    ed.check_output(name, text, &out);
    ed.strip_added(name, &before, &mut after, true);
    let (foreign_before, _) = ed.split(&before);
    let (foreign_after, ours_after) = ed.split(&after);
    assert_eq!(
        foreign_after, foreign_before,
        "{name}: foreign content changed:\n--- input\n{text}\n--- output\n{out}"
    );
    assert!(
        same_entries(&ours_after, want),
        "{name}: our entries are not as asked: {ours_after:?}\n{out}"
    );

    let again = ed
        .install(&out, want)
        .unwrap_or_else(|e| panic!("{name}: a second install refused: {e}\n{out}"));
    assert_eq!(again, out, "{name}: a second install changed the file");

    let removed = ed
        .uninstall(&out)
        .unwrap_or_else(|e| panic!("{name}: uninstall refused its own output: {e}\n{out}"));
    let mut left = ed
        .doc(&removed)
        .unwrap_or_else(|e| panic!("{name}: uninstall broke the file ({e}):\n{removed}"));
    ed.strip_added(name, &before, &mut left, false);
    let (foreign_left, ours_left) = ed.split(&left);
    assert!(
        ours_left.is_empty(),
        "{name}: uninstall left ours:\n{removed}"
    );
    assert_eq!(
        foreign_left, foreign_before,
        "{name}: uninstall changed foreign content:\n{removed}"
    );
    Ok(out)
}

/// (host event, entry) pairs as the editors take them (the JSON and the
/// TOML editor take the same entries).
fn as_entries(want: &[(String, Value)]) -> Vec<json::Entry> {
    want.iter()
        .map(|(key, item)| json::Entry {
            key: key.clone(),
            item: item.clone(),
        })
        .collect()
}

/// What `host` is asked to wire, as (host event, entry) pairs.
fn wanted_entries(host: &Adapter, wanted: &[Desired]) -> Vec<(String, Value)> {
    wanted
        .iter()
        .map(|d| (d.host_event.clone(), wiring::entry(host, d)))
        .collect()
}

struct JsonEditor<'a, F> {
    shape: &'a json::Shape,
    ours: F,
}

impl<F: Fn(&str) -> bool> Editor for JsonEditor<'_, F> {
    fn install(&self, text: &str, want: &[(String, Value)]) -> Result<String, HostFileError> {
        json::install(text, self.shape, &as_entries(want), &self.ours)
    }

    fn uninstall(&self, text: &str) -> Result<String, HostFileError> {
        json::uninstall(text, self.shape, &self.ours)
    }

    fn doc(&self, text: &str) -> Result<Value, String> {
        json_doc(text)
    }

    fn split(&self, doc: &Value) -> (String, Vec<(String, Value)>) {
        json_split(self.shape, &self.ours, doc)
    }

    fn check_output(&self, name: &str, text: &str, out: &str) {
        if is_strict_json(text) || text.trim().is_empty() {
            assert!(
                is_strict_json(out),
                "{name}: strict JSON became JSONC:\n{out}"
            );
        }
    }

    fn strip_added(&self, name: &str, before: &Value, doc: &mut Value, installed: bool) {
        if !self.shape.version || before.get("version").is_some() {
            return;
        }
        let Some(root) = doc.as_object_mut() else {
            assert!(!installed, "{name}: an edit leaves an object");
            return;
        };
        let version = root.shift_remove("version");
        if installed {
            assert_eq!(
                version,
                Some(Value::from(1)),
                "{name}: no `version: 1` added"
            );
        }
    }
}

/// One JSON edit at the text level (see [`edit_case`]).
fn json_case(
    host: &Adapter,
    shape: &json::Shape,
    wanted: &[Desired],
    text: &str,
) -> Result<String, HostFileError> {
    let ed = JsonEditor {
        shape,
        ours: ours_of(host),
    };
    edit_case(&ed, host.name(), &wanted_entries(host, wanted), text)
}

/// `hostfile_json`: arbitrary bytes as an existing Claude Code, Gemini CLI,
/// Cursor or Copilot settings file, edited at the text and the file level.
pub fn hostfile_json(data: &[u8]) {
    let text = std::str::from_utf8(data).ok();
    for host in all_adapters() {
        let Some(wiring::Format::Json(shape)) = wiring::format(host) else {
            continue;
        };
        let [all, one] = wirings(host);
        let had_ours = text
            .and_then(|t| json::find(t, &shape, &ours_of(host)).ok())
            .is_some_and(|f| !f.is_empty());
        let full = text.map(|t| json_case(host, &shape, &all, t));
        if let Some(t) = text {
            let _ = json_case(host, &shape, &one, t);
        }
        check_file_layer(host, "settings.json", &all, data, full.as_ref(), had_ours);
    }
}

// ------------------------------------------------------------------ hostfile_toml

fn toml_json_value(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as T;
    match v {
        T::String(s) => Value::from(s.value().as_str()),
        T::Integer(i) => Value::from(*i.value()),
        T::Float(f) => Value::from(*f.value()),
        T::Boolean(b) => Value::from(*b.value()),
        T::Datetime(d) => Value::from(d.value().to_string()),
        T::Array(a) => Value::Array(a.iter().map(toml_json_value).collect()),
        T::InlineTable(t) => toml_json_table(t),
    }
}

fn toml_json_item(item: &toml_edit::Item) -> Value {
    match item {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(v) => toml_json_value(v),
        toml_edit::Item::Table(t) => toml_json_table(t),
        toml_edit::Item::ArrayOfTables(a) => {
            Value::Array(a.iter().map(|t| toml_json_table(t)).collect())
        }
    }
}

fn toml_json_table(t: &dyn toml_edit::TableLike) -> Value {
    Value::Object(
        t.iter()
            .map(|(k, v)| (k.to_owned(), toml_json_item(v)))
            .collect(),
    )
}

fn toml_doc(text: &str) -> Result<Value, String> {
    text.parse::<toml_edit::DocumentMut>()
        .map(|d| toml_json_table(d.as_table()))
        .map_err(|e| e.to_string())
}

fn toml_split(
    shape: toml::Shape,
    ours: &dyn Fn(&str) -> bool,
    doc: &Value,
) -> (String, Vec<(String, Value)>) {
    // A TOML table is unordered: the order of its keys in the parsed data
    // is where each first appears in the text, so taking out an element of
    // ours that opened an array of tables moves that key after its
    // neighbours while every foreign line stays where it was. Tables are
    // compared as maps; arrays keep their order.
    let doc = &keys_sorted(doc);
    let command = |h: &Value| h.get("command").and_then(Value::as_str).is_some_and(ours);
    match shape {
        toml::Shape::Nested => split_doc(doc, true, true, &|key, _| key.to_owned(), &command),
        toml::Shape::Flat(event_key) => split_doc(
            doc,
            false,
            false,
            &|_, it| {
                it.get(event_key)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            },
            &command,
        ),
    }
}

/// `v` with the keys of every object in sorted order.
fn keys_sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), keys_sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(keys_sorted).collect()),
        other => other.clone(),
    }
}

struct TomlEditor<F> {
    shape: toml::Shape,
    ours: F,
}

impl<F: Fn(&str) -> bool> Editor for TomlEditor<F> {
    fn install(&self, text: &str, want: &[(String, Value)]) -> Result<String, HostFileError> {
        toml::install(text, self.shape, &as_entries(want), &self.ours)
    }

    fn uninstall(&self, text: &str) -> Result<String, HostFileError> {
        toml::uninstall(text, self.shape, &self.ours)
    }

    fn doc(&self, text: &str) -> Result<Value, String> {
        toml_doc(text)
    }

    fn split(&self, doc: &Value) -> (String, Vec<(String, Value)>) {
        toml_split(self.shape, &self.ours, doc)
    }
}

/// One TOML edit at the text level (see [`edit_case`]).
fn toml_case(
    host: &Adapter,
    shape: toml::Shape,
    wanted: &[Desired],
    text: &str,
) -> Result<String, HostFileError> {
    let ed = TomlEditor {
        shape,
        ours: ours_of(host),
    };
    edit_case(&ed, host.name(), &wanted_entries(host, wanted), text)
}

/// `hostfile_toml`: arbitrary bytes as an existing Codex or Kimi
/// `config.toml`, edited at the text and the file level.
pub fn hostfile_toml(data: &[u8]) {
    let text = std::str::from_utf8(data).ok();
    for host in all_adapters() {
        let Some(wiring::Format::Toml(shape)) = wiring::format(host) else {
            continue;
        };
        let [all, one] = wirings(host);
        let had_ours = text
            .and_then(|t| toml::find(t, shape, &ours_of(host)).ok())
            .is_some_and(|f| !f.is_empty());
        let full = text.map(|t| toml_case(host, shape, &all, t));
        if let Some(t) = text {
            let _ = toml_case(host, shape, &one, t);
        }
        check_file_layer(host, "config.toml", &all, data, full.as_ref(), had_ours);
    }
}
