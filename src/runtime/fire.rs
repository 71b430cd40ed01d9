//! Firing one event: select the registrations that apply, run gates one
//! after another in merge order (the first deny stops the rest), run
//! observe/context hooks in parallel, classify failures, compose, and
//! produce one record per invocation.

use crate::settings::Here;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::base::text::{TRUNCATED, cap, truncate_utf8};
use crate::config::model::{
    BuiltinPort, Handler, HookClass, Profile, Registration, RunsIn, SELF_EXE,
};
use crate::events::Event;
use crate::paths::Locations;
use crate::runner::{self, Cancel, Exit, GRACE, Sandbox, SandboxSpec, SpawnRequest};
use crate::runtime::codec::{self, PayloadContext};
use crate::runtime::compose;
use crate::runtime::native;
use crate::runtime::reply::{self, HookReply};
use crate::runtime::semantics::{self, Effect};
use crate::runtime::types::{
    Anomaly, EventInput, FailureKind, FireResult, HookInvocationRecord, Outcome,
};

/// additionalContext kept per hook (1% of a ~2 MiB session context).
pub const MAX_CONTEXT_BYTES: usize = 20 * 1024;
/// reason / stderr-as-reason kept per hook.
pub const MAX_REASON_BYTES: usize = 4000;
/// Observe/context hooks running at once: enough that a typical event's
/// observers all start together, bounded so 500 registrations cannot fork
/// 500 processes at once.
pub const MAX_PARALLEL: usize = 32;

/// Runs an in-process built-in (the learning observer, impact evidence).
// TODO(typed-errors): this and `InProcessCommand` return a typed error
// once `commands::test` (and the `fire` bench tool) stop building these
// closures with a `String` error and `commands::explain` stops reading
// `run_in_process`'s as one. The type must live in `runtime` or below
// (`builtins`, whose `PortError` it carries, is a layer above).
pub type BuiltinRunner<'a> =
    dyn Fn(BuiltinPort, &EventInput) -> Result<HookReply, String> + Sync + 'a;

/// Runs a built-in command hook in-process instead of spawning this binary
/// (`None` = spawn it). Only used when the hook runs unsandboxed.
pub type InProcessCommand<'a> =
    dyn Fn(&Registration, &serde_json::Value) -> Option<Result<HookReply, String>> + Sync + 'a;

/// Everything firing needs besides the registrations and the event.
pub struct FireContext<'a> {
    pub profile: Profile,
    pub project_root: Option<&'a Path>,
    pub cwd: &'a Path,
    pub run_id: &'a str,
    pub builtin: &'a BuiltinRunner<'a>,
    pub in_process: &'a InProcessCommand<'a>,
    /// The ambient environment hooks may inherit from (allowlisted).
    pub ambient: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// The running host's own hook variables (its adapter's `hookEnv`),
    /// passed through the allowlist; empty outside a host.
    pub host_env: &'a [&'a str],
    /// Where the home, keryx's own directories and the settings are: what a
    /// sandboxed hook must not read or write.
    pub locations: &'a Here,
    /// When the host stops waiting for this event, less the time answering
    /// takes: no hook runs past it, and a gate still running then denies.
    /// `None` when no host waits (only the hooks' own timeouts bound it).
    pub deadline: Option<Instant>,
}

/// The least time worth starting a hook with; with less left before the
/// deadline it is over budget without being run.
const LEAST_RUN: Duration = Duration::from_millis(20);

/// Why a hook's run was ended by its event rather than by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The event's time budget ran out (or was used up before it started):
    /// a gate then denies.
    Budget,
    /// The call was denied and the answer does not wait for it.
    Denied,
}

/// What one invocation came to, before composition.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub result: Result<HookReply, (FailureKind, String)>,
    pub exit_code: Option<i32>,
    pub duration: Duration,
    pub stdout: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr: Vec<u8>,
    pub stderr_truncated: bool,
    /// Set when the event, not the hook, ended the run.
    pub cut: Option<Cut>,
}

impl Invocation {
    fn of(result: Result<HookReply, (FailureKind, String)>, start: Instant) -> Self {
        Invocation {
            result,
            cut: None,
            exit_code: None,
            duration: start.elapsed(),
            stdout: Vec::new(),
            stdout_truncated: false,
            stderr: Vec::new(),
            stderr_truncated: false,
        }
    }
}

/// The registrations that fire for `input` under `profile`.
pub fn select<'r>(
    regs: &'r [Registration],
    input: &EventInput,
    profile: Profile,
) -> Vec<&'r Registration> {
    let f = crate::runtime::select::Filters::plain(profile);
    regs.iter()
        .filter(|r| crate::runtime::select::verdict(r, input, &f).is_none())
        .collect()
}

/// Ids a child agent inherits: one per distinct id with
/// appliesToChildAgents, in registration order.
pub fn inherited_hook_ids(regs: &[Registration]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in regs
        .iter()
        .filter(|r| r.enabled && r.applies_to_child_agents)
    {
        if !out.contains(&r.id) {
            out.push(r.id.clone());
        }
    }
    out
}

/// A reason as a host shows it: its invisible characters made visible
/// (which can lengthen it), then capped at [`MAX_REASON_BYTES`], the marker
/// included. Applying it twice changes nothing.
pub fn reason_text(reason: &str) -> String {
    // Escaping only ever lengthens: escape no more than can be kept.
    let (head, cut) = truncate_utf8(reason, MAX_REASON_BYTES);
    // A hook's colours are dropped; every other escape stays visible.
    let shown = crate::escape::hook_text(head);
    if !cut {
        return cap(&shown, MAX_REASON_BYTES);
    }
    let (kept, _) = truncate_utf8(&shown, MAX_REASON_BYTES - TRUNCATED.len());
    format!("{kept}{TRUNCATED}")
}

/// Runs one hook once.
pub fn invoke(reg: &Registration, input: &EventInput, ctx: &FireContext) -> Invocation {
    invoke_until(reg, input, ctx, None)
}

/// [`invoke`], stopped when `cancel` is raised.
fn invoke_until(
    reg: &Registration,
    input: &EventInput,
    ctx: &FireContext,
    cancel: Option<&Cancel>,
) -> Invocation {
    match &reg.handler {
        // A built-in reads the event itself: its hook payload is never made.
        Handler::Builtin(port) => {
            let start = Instant::now();
            let r = (ctx.builtin)(*port, input).map_err(|e| (FailureKind::Crash, e));
            Invocation::of(r, start)
        }
        Handler::Command(_) => {
            invoke_command_until(reg, input, &hook_payload(reg, input, ctx), ctx, cancel)
        }
    }
}

/// What a hook whose event ran out of time before it could start comes to.
fn over_budget(start: Instant) -> Invocation {
    Invocation {
        cut: Some(Cut::Budget),
        ..Invocation::of(
            Err((
                FailureKind::Timeout,
                "was not started: the event's time budget (what its host waits) was used up"
                    .to_owned(),
            )),
            start,
        )
    }
}

/// The JSON command hook `reg` gets on its stdin for `input`, stamped now.
pub fn hook_payload(reg: &Registration, input: &EventInput, ctx: &FireContext) -> Value {
    if let Some(p) = reg.command().and_then(|c| c.protocol) {
        return native::payload(p.host, input);
    }
    let project_root = ctx.project_root.map(|p| p.to_string_lossy().into_owned());
    codec::build_hook_stdin(
        input,
        &PayloadContext {
            hook_id: &reg.id,
            run_id: ctx.run_id,
            timestamp: &crate::base::time::timestamp_now(),
            profile: ctx.profile,
            project_root: project_root.as_deref(),
        },
    )
}

/// Runs command hook `reg` once with `payload` (what [`hook_payload`]
/// made) on its stdin; a built-in, which reads the event itself, as
/// [`invoke`] runs it.
pub fn invoke_command(
    reg: &Registration,
    input: &EventInput,
    payload: &Value,
    ctx: &FireContext,
) -> Invocation {
    invoke_command_until(reg, input, payload, ctx, None)
}

fn invoke_command_until(
    reg: &Registration,
    input: &EventInput,
    payload: &Value,
    ctx: &FireContext,
    cancel: Option<&Cancel>,
) -> Invocation {
    let Handler::Command(command) = &reg.handler else {
        return invoke_until(reg, input, ctx, cancel);
    };
    let start = Instant::now();
    // The hook's own timeout, or what is left of the event's budget when
    // that is less: the kill grace must end before the deadline too.
    let own = Duration::from_millis(reg.clamped_timeout_ms());
    let (timeout, budgeted) = match ctx.deadline {
        None => (own, false),
        Some(deadline) => {
            let left = deadline
                .saturating_duration_since(start)
                .saturating_sub(GRACE);
            if left < LEAST_RUN {
                return over_budget(start);
            }
            (own.min(left), left < own)
        }
    };
    let runs_in = reg.effective_runs_in(ctx.profile);
    if runs_in == RunsIn::Unsandboxed && ctx.profile.isolation_required() {
        return Invocation::of(
            Err((
                FailureKind::Refused,
                format!(
                    "runsIn \"unsandboxed\" is refused under the {} profile",
                    ctx.profile
                ),
            )),
            start,
        );
    }
    if runs_in == RunsIn::Unsandboxed
        && let Some(r) = (ctx.in_process)(reg, payload)
    {
        return Invocation::of(r.map_err(|e| (FailureKind::Crash, e)), start);
    }
    // A user hook's relative script is the one beside the user hooks file
    // it was read from (the snapshot), never the project's.
    let mut argv = reg.resolved_argv();
    if reg.scope == crate::config::model::Scope::Builtin && argv[0] == SELF_EXE {
        argv[0] = crate::paths::self_exe().to_string_lossy().into_owned();
    }
    let base = ctx.project_root.unwrap_or(ctx.cwd);
    let cwd = command
        .cwd
        .as_deref()
        .map_or_else(|| base.to_path_buf(), |d| base.join(d));
    let root = base.to_string_lossy().into_owned();
    // What the host itself set wins (Claude Code sets it to the main
    // checkout in a linked worktree); otherwise the project root.
    let claude_project_dir = (ctx.ambient)("CLAUDE_PROJECT_DIR")
        .filter(|d| Path::new(d).is_absolute())
        .unwrap_or_else(|| root.clone());
    let fixed = [
        ("KERYX_HOOK_EVENT", input.event.as_str().to_owned()),
        ("KERYX_HOOK_ID", reg.id.clone()),
        ("KERYX_SESSION_ID", input.session_id.clone()),
        ("KERYX_RUN_ID", ctx.run_id.to_owned()),
        ("KERYX_PROJECT_ROOT", root.clone()),
        ("KERYX_POLICY_PROFILE", ctx.profile.as_str().to_owned()),
        ("CLAUDE_PROJECT_DIR", claude_project_dir),
    ];
    let passthrough: Vec<String> = ctx
        .host_env
        .iter()
        .map(|v| (*v).to_owned())
        .chain(command.env_passthrough.iter().cloned())
        .collect();
    let mut env = runner::hook_env_with(ctx.ambient, &passthrough, &fixed, &command.env);
    let sandbox = match runs_in {
        RunsIn::Unsandboxed => SandboxSpec::None,
        RunsIn::Sandbox => match sandbox_for(reg, ctx, &mut env) {
            Ok(s) => SandboxSpec::Required(s),
            Err(failure) => return Invocation::of(Err(failure), start),
        },
    };
    let out = runner::spawn_cancellable(
        &SpawnRequest {
            argv,
            cwd,
            env,
            stdin: serde_json::to_vec(payload).unwrap_or_default(),
            timeout,
            sandbox,
        },
        cancel,
    );
    let cut = match &out.exit {
        Exit::Timeout if budgeted => Some(Cut::Budget),
        Exit::Cancelled => Some(Cut::Denied),
        _ => None,
    };
    // Written for a host's hooks: an exit that host gives a meaning is
    // read as it reads it; any other is a failed hook, as below.
    let mut native_reply = match (&out.exit, command.protocol) {
        (Exit::Code(n), Some(p)) if !out.stdout_truncated => p
            .host
            .hook_protocol()
            .and_then(|h| native::read(h, input.event, *n, &out.stdout, &out.stderr)),
        _ => None,
    };
    let (result, exit_code) = match &out.exit {
        Exit::Code(n) if native_reply.is_some() => {
            (native_reply.take().expect("checked"), Some(*n))
        }
        // A reply cut at the capture cap is not the hook's answer: reading
        // what is left could turn a deny into "malformed" and let it pass,
        // so it fails like a crash (a gate then denies).
        Exit::Code(0) if out.stdout_truncated => (
            Err((
                FailureKind::Crash,
                format!(
                    "printed more than {} bytes on stdout; the reply was cut, so it is not read",
                    runner::OUTPUT_CAP
                ),
            )),
            Some(0),
        ),
        Exit::Code(0) => (
            reply::parse_for(&out.stdout, input.event)
                .map_err(|e| (FailureKind::Malformed, e.to_string())),
            Some(0),
        ),
        Exit::Code(2) => (
            Ok(HookReply {
                decision: Some(Outcome::Deny),
                reason: Some(reply::exit2_reason(&out.stdout, &out.stderr)),
                system_message: reply::parse(&out.stdout)
                    .ok()
                    .and_then(|r| r.system_message),
                ..HookReply::default()
            }),
            Some(2),
        ),
        Exit::Code(n) => {
            let text = String::from_utf8_lossy(&out.stderr);
            let detail = text.trim().lines().last().unwrap_or("").to_owned();
            let msg = if detail.is_empty() {
                format!("exited {n}")
            } else {
                format!("exited {n}: {detail}")
            };
            (Err((FailureKind::Crash, msg)), Some(*n))
        }
        Exit::Signal(s) => (
            Err((FailureKind::Crash, format!("killed by signal {s}"))),
            None,
        ),
        Exit::Timeout if budgeted => (
            Err((
                FailureKind::Timeout,
                format!(
                    "was still running after {} ms, when the event's time budget (what its host waits) ran out",
                    timeout.as_millis()
                ),
            )),
            None,
        ),
        Exit::Timeout => (
            Err((
                FailureKind::Timeout,
                format!("did not finish within {} ms", reg.clamped_timeout_ms()),
            )),
            None,
        ),
        Exit::Cancelled => (
            Err((
                FailureKind::Timeout,
                "was stopped: the call was denied, and a deny does not wait for observers"
                    .to_owned(),
            )),
            None,
        ),
        Exit::SpawnFailed(m) => (Err((FailureKind::Crash, m.clone())), None),
        Exit::SandboxUnavailable(m) => (Err((FailureKind::SandboxUnavailable, m.clone())), None),
    };
    // A hook that set git up to run a command of its choosing is refused,
    // whatever it answered (what it did has been undone).
    let result = match out.undone.as_slice() {
        [] => result,
        undone => Err((
            FailureKind::Refused,
            format!(
                "it set up a command to run outside its sandbox: {}",
                undone.join("; ")
            ),
        )),
    };
    Invocation {
        result,
        cut,
        exit_code,
        duration: out.duration,
        stdout: out.stdout,
        stdout_truncated: out.stdout_truncated,
        stderr: out.stderr,
        stderr_truncated: out.stderr_truncated,
    }
}

/// The confinement of one sandboxed run of `reg`: the project (its
/// protected paths are the runner's business), the hook's own cache
/// (exported as `XDG_CACHE_HOME` in `env`), its `sandbox.writable` paths,
/// and what must stay unreadable. Only called for a sandboxed hook: the
/// stats and the cache directory cost nothing on the unsandboxed path.
fn sandbox_for(
    reg: &Registration,
    ctx: &FireContext,
    env: &mut Vec<(String, String)>,
) -> Result<Sandbox, (FailureKind, String)> {
    let loc = ctx.locations;
    let launcher = loc.settings().launcher.clone().map_err(|why| {
        (
            FailureKind::SandboxUnavailable,
            crate::escape::escape(&why.to_string()),
        )
    })?;
    let cache = hook_cache_dir(loc, reg, ctx.project_root);
    make_private_dir(&cache).map_err(|e| {
        (
            FailureKind::Crash,
            format!(
                "its cache directory `{}` cannot be made: {e}",
                cache.display()
            ),
        )
    })?;
    env.retain(|(k, _)| k != "XDG_CACHE_HOME");
    env.push((
        "XDG_CACHE_HOME".into(),
        cache.to_string_lossy().into_owned(),
    ));
    if cfg!(target_os = "linux") {
        // The private /tmp is the scratch space; a TMPDIR elsewhere would be
        // read-only inside.
        env.retain(|(k, _)| k != "TMPDIR");
        env.push(("TMPDIR".into(), "/tmp".into()));
    }
    let mut writable = vec![cache];
    for entry in &reg.sandbox_writable {
        let Some(path) = resolve_writable(entry, loc, ctx.project_root) else {
            continue;
        };
        let refused = |why: String| {
            (
                FailureKind::Refused,
                format!(
                    "`sandbox.writable` entry `{}` is refused: {why}",
                    crate::escape::escape(entry)
                ),
            )
        };
        // A project path is reviewed as one: it must still be one now, with
        // no symlink (one a hook planted since) leading out of the project.
        let path = match ctx.project_root {
            Some(root) if is_project_relative(entry) => {
                project_writable(root, entry).map_err(refused)?
            }
            _ => path,
        };
        if let Some(why) = writable_refusal(&path, loc, ctx.project_root) {
            return Err(refused(why));
        }
        // A file entry (an imported logger's `~/activity.jsonl`) is bound
        // as a file: made empty if missing, never as a directory, which
        // would break the hook here and under its host alike.
        if path.is_file() || (!path.exists() && names_a_file(&path)) {
            if let Err(e) = make_private_file(&path) {
                return Err((
                    FailureKind::Crash,
                    format!("its writable file `{}` cannot be made: {e}", path.display()),
                ));
            }
            writable.push(path);
            continue;
        }
        if let Err(e) = make_private_dir(&path)
            && !path.exists()
        {
            return Err((
                FailureKind::Crash,
                format!("its writable path `{}` cannot be made: {e}", path.display()),
            ));
        }
        writable.push(path);
    }
    let mut hidden = vec![loc.data_dir.clone(), loc.state_dir.clone()];
    if let Some(dir) = (ctx.ambient)("XDG_RUNTIME_DIR").map(std::path::PathBuf::from)
        && dir.is_absolute()
    {
        // Sockets live there (the D-Bus session bus, agents); hidden when
        // the hook has no network, like /run.
        hidden.push(dir);
    }
    Ok(Sandbox {
        project: ctx.project_root.map(Path::to_path_buf),
        writable,
        home: Some(loc.home.clone()),
        hidden,
        network: false,
        launcher,
    })
}

/// `<state>/hook-cache/<id>-<hash of scope, anchor and id>`: the hook's own,
/// kept across runs, never the user's cache (what a hook leaves in a shared
/// cache could run later outside the sandbox). The anchor is the project for
/// a project hook, so that one project's hook never fills the cache another
/// project's hook of the same id reads, and the file the hook was read from
/// (its snapshot) for any other; `project` is the project root in play.
pub fn hook_cache_dir(
    loc: &Locations,
    reg: &Registration,
    project: Option<&Path>,
) -> std::path::PathBuf {
    use sha2::{Digest, Sha256};
    let anchor = match reg.scope {
        crate::config::model::Scope::Project => project,
        _ => reg.source.as_deref(),
    };
    let anchor = anchor.map(crate::paths::real_path).unwrap_or_default();
    let mut hash = Sha256::new();
    for part in [
        reg.scope.as_str().as_bytes(),
        anchor.as_os_str().as_encoded_bytes(),
        reg.id.as_bytes(),
    ] {
        // Length-prefixed, so no two triples hash the same bytes.
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    let key = hash.finalize();
    let short = crate::base::text::hex(&key[..8]);
    loc.state_dir.join("hook-cache").join(format!(
        "{}-{short}",
        crate::paths::sanitize_component(&reg.id)
    ))
}

/// Whether a path that does not exist yet names a file: its last part has
/// an extension (`x.jsonl`; not `.config` or `proof-log`).
fn names_a_file(path: &Path) -> bool {
    let Some(last) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    last.trim_start_matches('.').contains('.')
}

/// Creates `file` empty and private if it is missing (its directory too);
/// an existing file is left as it is.
fn make_private_file(file: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// A `sandbox.writable` entry as a path: `~/` in the home, absolute as
/// written, otherwise in the project (none without a project).
fn resolve_writable(
    entry: &str,
    loc: &Locations,
    project: Option<&Path>,
) -> Option<std::path::PathBuf> {
    if let Some(rest) = entry.strip_prefix("~/") {
        return Some(loc.home.join(rest));
    }
    if Path::new(entry).is_absolute() {
        return Some(entry.into());
    }
    project.map(|p| p.join(entry))
}

fn is_project_relative(entry: &str) -> bool {
    !entry.starts_with('~') && !Path::new(entry).is_absolute()
}

/// The real path of the project-relative `entry` under `root`, each of its
/// components looked at in turn (`lstat`): a symlink is followed only to
/// somewhere inside the project; a missing component ends the walk (the rest
/// is created as plain directories). Why not, when a symlink leads out of
/// the project or nowhere.
pub fn project_writable(root: &Path, entry: &str) -> Result<std::path::PathBuf, String> {
    use std::path::Component;
    let root = std::fs::canonicalize(root)
        .map_err(|e| format!("the project `{}` cannot be resolved: {e}", root.display()))?;
    let mut at = root.clone();
    let mut missing = false;
    for part in Path::new(entry).components() {
        let name = match part {
            Component::Normal(name) => name,
            Component::CurDir => continue,
            _ => return Err("it is not a plain path inside the project".into()),
        };
        at.push(name);
        if missing {
            continue;
        }
        match std::fs::symlink_metadata(&at) {
            Err(_) => missing = true,
            Ok(meta) if meta.file_type().is_symlink() => {
                let shown = crate::escape::escape(&at.display().to_string());
                let target = std::fs::canonicalize(&at)
                    .map_err(|_| format!("`{shown}` is a symlink that leads nowhere"))?;
                if !target.starts_with(&root) {
                    return Err(format!(
                        "`{shown}` is a symlink that leads out of the project, to `{}`",
                        crate::escape::escape(&target.display().to_string())
                    ));
                }
                at = target;
            }
            Ok(_) => {}
        }
    }
    Ok(at)
}

/// Why the real `path` must not be writable: it is `/`, the home or an
/// ancestor of either; it covers keryx's own directories; or seen from the
/// home or the project it covers what the loader refuses there.
pub fn writable_refusal(path: &Path, loc: &Locations, project: Option<&Path>) -> Option<String> {
    let real = crate::paths::real_path(path);
    let holds = |inner: &Path| crate::paths::is_inside(inner, &real);
    if real == Path::new("/") || holds(&loc.home) {
        return Some("it holds your home directory".into());
    }
    for own in [
        &loc.keryx_home,
        &loc.data_dir,
        &loc.state_dir,
        &loc.snapshot_root,
    ] {
        if holds(own) || crate::paths::is_inside(&real, own) {
            return Some(format!("it covers keryx-hooks' own `{}`", own.display()));
        }
    }
    if let Some(root) = project {
        if holds(root) {
            return Some("it holds the whole project".into());
        }
        if let Ok(rel) = real.strip_prefix(crate::paths::real_path(root)) {
            return crate::config::load::sandbox_writable_refusal(&rel.to_string_lossy());
        }
    }
    let home = crate::paths::real_path(&loc.home);
    if let Ok(rel) = real.strip_prefix(&home) {
        return crate::config::load::sandbox_writable_refusal(&format!("~/{}", rel.display()));
    }
    None
}

/// A hook's `systemMessage` as a notice for the person: cut like a reason,
/// its invisible characters made visible, and named after the hook.
fn system_message_notice(reg: &Registration, line: &str) -> String {
    reason_text(&format!(
        "{}: {}",
        crate::escape::escape(&reg.id),
        line.trim()
    ))
}

/// Accumulates records, anomalies and context while hooks finish.
struct Acc {
    result: FireResult,
    contexts: Vec<String>,
}

impl Acc {
    fn anomaly(&mut self, kind: &str, hook: &str, detail: Option<String>) {
        self.result.anomalies.push(Anomaly {
            kind: kind.to_owned(),
            hook_id: hook.to_owned(),
            detail,
        });
    }
}

/// Fires `input` against `regs` (already trust-filtered). `policy` is
/// decide()'s outcome for PreToolUse, or the implicit allow elsewhere.
pub fn fire(regs: &[Registration], input: &EventInput, ctx: &FireContext) -> FireResult {
    fire_selected(&select(regs, input, ctx.profile), input, ctx)
}

/// Fires `input` against `selected`, the registrations selection chose
/// for it, in load order.
pub fn fire_selected(
    selected: &[&Registration],
    input: &EventInput,
    ctx: &FireContext,
) -> FireResult {
    let event = input.event;
    let gate_capable = event.is_gate_capable();
    let policy = if event == Event::PreToolUse {
        input.decide_outcome
    } else {
        Outcome::Allow
    };

    let (gates, others): (Vec<&Registration>, Vec<&Registration>) =
        selected.iter().copied().partition(|r| r.decides_on(event));
    // Observers and context hooks that answer in this process (the
    // built-in ports) take microseconds: run here, after the gates, rather
    // than on a thread of their own.
    let (here_only, others): (Vec<&Registration>, Vec<&Registration>) = others
        .into_iter()
        .partition(|r| matches!(r.handler, Handler::Builtin(_)));

    let mut acc = Acc {
        result: FireResult::none(),
        contexts: Vec::new(),
    };
    let mut outcome = policy;
    let mut hook_outcomes = Vec::new();
    // Gates invoked; the rest never ran, the call being denied already.
    let mut ran = 0;

    // Observers and context hooks run alongside the gates. With no gate to
    // run, this thread is one of the workers (one observer, no thread).
    // Once the call is denied the answer is final, and it does not wait
    // for them: those running are stopped, the rest never start.
    let stop = Cancel::default();
    if gate_capable && policy == Outcome::Deny {
        stop.raise();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while !stop.raised() {
            let i = next.fetch_add(1, Ordering::SeqCst);
            let Some(reg) = others.get(i) else { break };
            done.push((i, invoke_until(reg, input, ctx, Some(&stop))));
        }
        done
    };
    let gates_run = policy != Outcome::Deny && !gates.is_empty();
    let workers_n = if stop.raised() {
        0
    } else {
        others.len().min(MAX_PARALLEL)
    };
    let spawned = if gates_run {
        workers_n
    } else {
        workers_n.saturating_sub(1)
    };
    let parallel: Vec<(usize, Invocation)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..spawned).map(|_| scope.spawn(work)).collect();
        let here = if gates_run { Vec::new() } else { work() };

        if gates_run {
            for reg in &gates {
                ran += 1;
                let inv = invoke(reg, input, ctx);
                let before = outcome;
                let decided = account(&mut acc, reg, &inv, event, ctx.profile, outcome);
                hook_outcomes.push(decided);
                outcome = compose::tighten(outcome, decided);
                if outcome == Outcome::Ask && event.ask_means_deny() {
                    outcome = Outcome::Deny;
                }
                if let Some(rec) = acc.result.records.last_mut() {
                    rec.changed_outcome = outcome != before;
                }
                if outcome == Outcome::Deny {
                    stop.raise();
                    break;
                }
            }
        }
        let mut all: Vec<(usize, Invocation)> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .chain(here)
            .collect();
        all.sort_by_key(|(i, _)| *i);
        all
    });
    for (i, inv) in &parallel {
        account(&mut acc, others[*i], inv, event, ctx.profile, outcome);
    }
    let mut started = vec![false; others.len()];
    for (i, _) in &parallel {
        started[*i] = true;
    }
    for (reg, _) in others.iter().zip(started).filter(|(_, s)| !s) {
        acc.result.not_reached.push(not_run(
            reg,
            event,
            "not run: the call was denied, and a deny does not wait for observers".into(),
        ));
    }
    for reg in here_only {
        let inv = invoke(reg, input, ctx);
        account(&mut acc, reg, &inv, event, ctx.profile, outcome);
    }
    let by = match ran {
        0 => "the policy".to_owned(),
        n => format!("gate `{}`", gates[n - 1].id),
    };
    for reg in gates.iter().skip(ran) {
        acc.result.not_reached.push(not_run(
            reg,
            event,
            format!("not run: {by} already denied this call"),
        ));
    }

    // SubagentStop composes only when a host-native gate could block it.
    if gate_capable || !gates.is_empty() {
        let (composed, headless) =
            compose::compose_decision(event, policy, &hook_outcomes, input.interactive);
        if headless {
            acc.result.matched_rules.push("headless-fail-closed".into());
        }
        acc.result.outcome = composed;
        if composed == Outcome::Allow && policy == Outcome::Allow {
            acc.result.reason = None;
        }
    } else {
        acc.result.outcome = Outcome::None;
        acc.result.reason = None;
    }
    if !acc.contexts.is_empty() {
        acc.result.additional_context = Some(acc.contexts.join("\n\n"));
    }
    acc.result
}

/// The record of a hook that did not run for `event`, and why.
pub fn not_run(reg: &Registration, event: Event, why: String) -> HookInvocationRecord {
    HookInvocationRecord {
        hook_id: reg.id.clone(),
        event: event.as_str(),
        class: reg.class,
        scope: reg.scope,
        outcome: Outcome::None,
        failure: None,
        reason: Some(why),
        duration_ms: 0,
        changed_outcome: false,
        exit_code: None,
    }
}

/// Records one invocation and returns the outcome it contributes.
fn account(
    acc: &mut Acc,
    reg: &Registration,
    inv: &Invocation,
    event: Event,
    profile: Profile,
    so_far: Outcome,
) -> Outcome {
    let mut record = HookInvocationRecord {
        hook_id: reg.id.clone(),
        event: event.as_str(),
        class: reg.class,
        scope: reg.scope,
        outcome: Outcome::None,
        failure: None,
        reason: None,
        duration_ms: inv.duration.as_millis() as u64,
        changed_outcome: false,
        exit_code: inv.exit_code,
    };
    let decision_power = reg.decides_on(event);
    let mut contributed = Outcome::None;
    match &inv.result {
        Ok(reply) => {
            if reply.attempted_rewrite {
                acc.anomaly("hook-attempted-input-rewrite", &reg.id, None);
            }
            // Under its host this allow would have skipped the permission
            // prompt; here it only leaves the call as it was.
            if reply.decision == Some(Outcome::Allow)
                && decision_power
                && reg.command().is_some_and(|c| c.protocol.is_some())
            {
                acc.anomaly("hook-allow-not-passed-on", &reg.id, None);
            }
            if let Some(line) = reply
                .system_message
                .as_deref()
                .filter(|m| !m.trim().is_empty())
            {
                acc.result.notices.push(system_message_notice(reg, line));
            }
            // Shown in the host's UI: bidi overrides, zero-width and
            // control characters become visible escapes.
            let reason = reply.reason.as_deref().map(reason_text);
            if let Some(d) = reply.decision {
                if decision_power {
                    contributed = d;
                    record.outcome = d;
                    record.reason = reason.clone();
                    if d == Outcome::Deny || d == Outcome::Ask {
                        acc.result.matched_rules.push(format!("hook:{}", reg.id));
                        if acc.result.reason.is_none() || d == Outcome::Deny {
                            acc.result.reason = Some(
                                reason
                                    .clone()
                                    .unwrap_or_else(|| format!("denied by hook `{}`", reg.id)),
                            );
                        }
                    }
                } else {
                    acc.anomaly(
                        "hook-decision-ignored",
                        &reg.id,
                        Some(format!(
                            "{} on {event} from a {} hook",
                            d.as_str(),
                            reg.class
                        )),
                    );
                }
            }
            if let Some(c) = &reply.additional_context {
                if reg.class == HookClass::Observe {
                    acc.anomaly(
                        "hook-context-ignored",
                        &reg.id,
                        Some("observe hooks cannot add context".into()),
                    );
                } else {
                    let (kept, cut) = truncate_utf8(c, MAX_CONTEXT_BYTES);
                    if cut {
                        acc.anomaly(
                            "hook-context-truncated",
                            &reg.id,
                            Some(format!("{} bytes kept of {}", kept.len(), c.len())),
                        );
                    }
                    if !kept.is_empty() {
                        let context = compose::screen_context(kept);
                        if let Some(found) = context.findings {
                            acc.anomaly("hook-context-secret-redacted", &reg.id, Some(found));
                        }
                        acc.contexts.push(context.text);
                    }
                }
            }
        }
        Err((kind, msg)) => {
            record.failure = Some(*kind);
            record.reason = Some(msg.clone());
            if *kind == FailureKind::SandboxUnavailable {
                acc.anomaly("hook-sandbox-unavailable", &reg.id, Some(msg.clone()));
            }
            let effect = match (inv.cut, reg.command().and_then(|c| c.protocol)) {
                // Past the budget the host no longer waits: a gate that has
                // not answered by then denies, whatever its failures
                // usually mean.
                (Some(Cut::Budget), _) if decision_power => Effect::Deny("hook-over-budget"),
                (Some(Cut::Budget), _) => Effect::Proceed("hook-over-budget"),
                (Some(Cut::Denied), _) => Effect::Proceed("hook-stopped-by-deny"),
                // A hook written for a host fails as it does there, unless
                // the person chose fail-closed.
                (None, Some(p)) if !p.fail_closed => {
                    let denies = p
                        .host
                        .hook_protocol()
                        .is_some_and(|h| native::failure_denies(h, event, *kind));
                    if denies && decision_power {
                        Effect::Deny(semantics::gate_code(*kind))
                    } else {
                        if decision_power {
                            acc.result.notices.push(reason_text(&format!(
                                "hook `{}` failed ({msg}); as under {}, its failure changes nothing",
                                crate::escape::escape(&reg.id),
                                p.host.display_name()
                            )));
                        }
                        Effect::Proceed("hook-failed-as-under-its-host")
                    }
                }
                (None, _) => semantics::on_failure(reg.class, event, profile, *kind, so_far),
            };
            match effect {
                Effect::Deny(code) => {
                    contributed = Outcome::Deny;
                    record.outcome = Outcome::Deny;
                    acc.result.matched_rules.push(format!("{code}:{}", reg.id));
                    acc.result.reason =
                        Some(reason_text(&format!("{code}: hook `{}` {msg}", reg.id)));
                }
                Effect::Proceed(code) => acc.anomaly(code, &reg.id, Some(msg.clone())),
            }
        }
    }
    acc.result.records.push(record);
    contributed
}
