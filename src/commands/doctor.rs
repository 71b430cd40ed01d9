//! `keryx-hooks doctor [--fix [--yes]] [--json] [--source DIR]`: every check
//! of the installation as data (name, ok|warn|fail, detail, the command that
//! fixes it). `--fix` resyncs every known source's snapshot, rewires the
//! hosts its manifest records where it records them (scope, format, file),
//! with timeouts that cover the snapshot's hooks, prunes old session state,
//! runs the checks again and says what it fixed and what it could not, with
//! the command that would. A resync that would start running command hooks
//! the snapshot does not run yet shows them first, as `trust` does, and asks
//! on a terminal; without one it needs `--yes`, and otherwise only says what
//! would change.
//!
//! Exit 1 when a check fails or a fix did not work; warnings alone exit 0.

use super::shared::kill_switch;
use super::shared::shim_probe;
use crate::settings::Here;
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::ExitStatus;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::json;

use crate::cli::DoctorArgs;
use crate::config::{self, load};
use crate::error::CmdResult;
use crate::escape::escape;
use crate::hosts::{self, ConfigFormat, HookReview};
use crate::install::classify::Scope;
use crate::install::classify::{self, DriftState, HostWiring};
use crate::install::codex_trust::{self, Review};
use crate::install::manifest::{Wiring, WiringFormat, WiringScope};
use crate::install::preflight;
use crate::install::resync::{self, CommandChanges};
use crate::install::{fail_closed, host_sandbox, hostfile, manifest, plugin, snapshot};
use crate::output;
use crate::trust::TrustState;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub status: Level,
    pub detail: String,
    /// The command (or step) that fixes it.
    pub fix: Option<String>,
    /// A drift check's state, spelled as `status --json` spells it
    /// (`never_migrated`, …); the detail says it in plain words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'static str>,
}

impl Check {
    fn new(name: impl Into<String>, status: Level, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            status,
            detail: detail.into(),
            fix: None,
            state: None,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

/// One thing `--fix` tried.
#[derive(Debug, Clone, Serialize)]
pub struct FixAction {
    pub action: String,
    pub ok: bool,
    pub detail: String,
    /// For a fix that did not work, the command that would.
    pub command: Option<String>,
}

pub fn run(args: &DoctorArgs) -> CmdResult {
    let loc = super::here();
    super::print_location_warnings(&loc);
    crate::runner::set_probe_cache_dir(loc.state_dir.clone());
    let source = args.source.as_deref();

    let before = checks(&loc, source);
    let mut actions = Vec::new();
    let mut consent = Consent {
        yes: args.yes,
        ask: !args.json && std::io::stdin().is_terminal(),
        show: !args.json,
        reviews: Vec::new(),
    };
    let after = if args.fix {
        actions = fix(&loc, source, &mut consent);
        checks(&loc, source)
    } else {
        before.clone()
    };
    let fixed: Vec<&Check> = if args.fix {
        before
            .iter()
            .filter(|b| b.status != Level::Ok)
            .filter(|b| {
                after
                    .iter()
                    .any(|a| a.name == b.name && a.status == Level::Ok)
                    || !after.iter().any(|a| a.name == b.name)
            })
            .collect()
    } else {
        Vec::new()
    };
    let open: Vec<&Check> = after.iter().filter(|c| c.status != Level::Ok).collect();
    let failed = after.iter().any(|c| c.status == Level::Fail) || actions.iter().any(|a| !a.ok);

    if args.json {
        let mut v = json!({
            "schemaVersion": "1",
            "ok": !failed,
            "checks": after,
        });
        if args.fix {
            v["fixes"] = json!(actions);
            v["resyncReviews"] = json!(consent.reviews);
            v["fixed"] = json!(fixed.iter().map(|c| &c.name).collect::<Vec<_>>());
            v["notFixed"] = json!(open);
        }
        output::json(&v);
    } else {
        for c in &after {
            output::stdout(&check_text(c));
        }
        if args.fix {
            output::line("");
            if actions.is_empty() {
                output::line("--fix: nothing to do");
            }
            for a in &actions {
                output::line(&format!(
                    "{} {}: {}",
                    if a.ok { "fixed:" } else { "not fixed:" },
                    a.action,
                    a.detail
                ));
                if let Some(cmd) = &a.command {
                    output::line(&format!("  run: {cmd}"));
                }
            }
            for c in &open {
                if let Some(cmd) = &c.fix {
                    output::line(&format!(
                        "still {}: {} — run: {cmd}",
                        c.status.as_str(),
                        c.name
                    ));
                }
            }
        }
    }
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn check_text(c: &Check) -> String {
    let mut s = format!("{:<5} {}: {}\n", c.status.as_str(), c.name, c.detail);
    if c.status != Level::Ok
        && let Some(f) = &c.fix
    {
        s.push_str(&format!("      fix: {f}\n"));
    }
    s
}

/// Every check, in a stable order.
pub fn checks(loc: &Here, source: Option<&Path>) -> Vec<Check> {
    let mut out = Vec::new();
    kill_switch_check(&mut out);
    let mut wired_hosts = host_checks(loc, &mut out);
    failure_checks(loc, &mut out);
    plugin_checks(loc, &mut out, &mut wired_hosts);
    double_registration(&wired_hosts, &mut out);
    snapshot_checks(loc, &mut out);
    let statuses = classify::assess_all(loc, source);
    drift_checks(loc, &statuses, &mut out);
    settings_check(loc, &mut out);
    let regs = config_checks(loc, &mut out);
    user_script_check(&regs, &mut out);
    for d in load::missing_imported_scripts(&regs, loc.project_root_or_cwd(), &loc.home) {
        out.push(Check::new("imported-scripts", Level::Fail, escape(&d.to_string())).fix(
            "put the script back where the hook's command names it, or `keryx-hooks import --undo <host>` and import again",
        ));
    }
    sandbox_check(loc, &regs, &mut out);
    sessions_check(loc, &mut out);
    out
}

/// The host configs: which binary each of our entries runs, whether every
/// mapped event is wired to an existing snapshot, Codex's review step.
/// Returns the hosts that carry any entry of ours.
fn host_checks(loc: &Here, out: &mut Vec<Check>) -> BTreeSet<String> {
    let mut wired = BTreeSet::new();
    let this = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok());
    for name in hosts::host_names() {
        let Some(adapter) = hosts::adapter(name) else {
            continue;
        };
        if adapter.config_files().format == ConfigFormat::None {
            continue;
        }
        for file in classify::host_config_entries(loc, adapter) {
            let shown = escape(&file.path.to_string_lossy());
            let entries = match file.entries {
                Ok(e) => e,
                Err(e) => {
                    // A file the host skips is broken, whatever we can read of it.
                    let what = if e.host_would_not_load() {
                        let why = e.to_string();
                        let prefix = format!("`{}`: ", file.path.display());
                        let why = why.strip_prefix(&prefix).unwrap_or(&why).to_owned();
                        format!("`{shown}` is broken: {}", escape(&why))
                    } else {
                        format!("`{shown}` cannot be read: {}", escape(&e.to_string()))
                    };
                    out.push(
                        Check::new(format!("host-config ({name})"), Level::Fail, what).fix(
                            format!(
                                "repair `{shown}` by hand, then run `keryx-hooks install {name}`"
                            ),
                        ),
                    );
                    continue;
                }
            };
            if entries.is_empty() {
                continue;
            }
            wired.insert((*name).to_owned());
            let install = match file.scope {
                Scope::Project => format!("keryx-hooks install {name} --scope project"),
                Scope::User => format!("keryx-hooks install {name}"),
            };

            // The binary each entry runs.
            let binaries: BTreeSet<String> = entries
                .iter()
                .map(|e| e.binary.clone())
                .filter(|b| !b.is_empty())
                .collect();
            for b in binaries {
                let (level, detail) =
                    binary_state(Path::new(&b), this.as_deref(), file.scope == Scope::User);
                let mut c = Check::new(
                    format!("binary ({name})"),
                    level,
                    format!("`{shown}` runs `{}`: {detail}", escape(&b)),
                );
                if level != Level::Ok {
                    c = c.fix(install.clone());
                }
                out.push(c);
            }

            // Every mapped event, each at a snapshot that exists.
            let missing: Vec<&str> = adapter
                .wired_events()
                .map(|(ev, _)| ev)
                .filter(|ev| !entries.iter().any(|e| e.host_event == *ev))
                .collect();
            let dangling: BTreeSet<&str> = entries
                .iter()
                .filter_map(|e| e.snapshot_key.as_deref())
                .filter(|k| !loc.snapshot_dir(k).join(manifest::MANIFEST_FILE).is_file())
                .collect();
            let check = if !dangling.is_empty() {
                Check::new(
                    format!("wiring ({name})"),
                    Level::Fail,
                    format!(
                        "`{shown}` points at snapshot {} that is not installed, so those events are denied",
                        dangling
                            .iter()
                            .map(|k| format!("`{}`", escape(k)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .fix("keryx-hooks doctor --fix")
            } else if !missing.is_empty() {
                Check::new(
                    format!("wiring ({name})"),
                    Level::Fail,
                    format!(
                        "`{shown}` does not wire {}",
                        missing
                            .iter()
                            .map(|e| format!("`{e}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .fix(install.clone())
            } else {
                Check::new(
                    format!("wiring ({name})"),
                    Level::Ok,
                    format!(
                        "`{shown}` wires all {} events",
                        adapter.wired_events().count()
                    ),
                )
            };
            out.push(check);
            if let Some(c) = timeout_check(loc, adapter, file.scope, &shown, &entries) {
                out.push(c);
            }
            if let Some(c) = host_max_check(loc, adapter, file.scope, &entries) {
                out.push(c);
            }

            if adapter.reviews_hooks() == Some(HookReview::CodexTrustedHash) {
                out.push(codex_review_check(loc, adapter, &file.path, false));
            }
            if let Some(spec) = adapter.host_sandbox() {
                out.push(host_sandbox_check(
                    loc, adapter, spec, file.scope, &file.path,
                ));
            }
            if let Some(trust) = adapter.project_trust()
                && file.scope == Scope::Project
            {
                out.push(
                    Check::new(
                        format!("{name}-trust"),
                        Level::Warn,
                        trust.warning.replace("$file", &shown),
                    )
                    .fix(trust.fix),
                );
            }
        }
    }
    wired
}

/// Whether the host's own sandbox keeps the agent's commands from writing
/// what decides enforcement: the text guards cannot read a program the
/// agent wrote and then ran, the kernel can stop its writes.
fn host_sandbox_check(
    loc: &Here,
    adapter: &hosts::Adapter,
    spec: &hosts::HostSandbox,
    scope: Scope,
    path: &Path,
) -> Check {
    let name = format!("host sandbox ({})", adapter.name());
    let shown = escape(&path.to_string_lossy());
    let fix = host_sandbox::fix_command(adapter, scope);
    match host_sandbox::state(loc, spec, path) {
        Err(e) => Check::new(
            name,
            Level::Warn,
            format!("`{shown}`: the sandbox settings cannot be read: {}", escape(&e.to_string())),
        )
        .fix(fix),
        Ok(c) if c.complete() => Check::new(
            name,
            Level::Ok,
            format!("`{shown}`: {}", host_sandbox::describe(&c)),
        ),
        Ok(c) if c.on => Check::new(
            name,
            Level::Warn,
            format!("`{shown}`: {}", host_sandbox::describe(&c)),
        )
        .fix(fix),
        Ok(_) => Check::new(
            name,
            Level::Warn,
            format!(
                "`{shown}`: off, so a program the agent writes and then runs can still change keryx-hooks' files and the host configs (the guards read commands, not programs)"
            ),
        )
        .fix(fix),
    }
}

/// Per wired host file: what a missing, killed or hung shim does to a tool
/// call there (the host's own effect, or its fail-closed switch where our
/// entries carry it), and a live run of the exact command the host runs
/// on a tool call ([`shim_probe`]).
fn failure_checks(loc: &Here, out: &mut Vec<Check>) {
    let this = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok());
    for adapter in hosts::all() {
        let Some(failure) = adapter.shim_failure() else {
            continue;
        };
        for file in classify::host_config_entries(loc, adapter) {
            let Ok(entries) = file.entries else { continue };
            if entries.is_empty() {
                continue;
            }
            let shown = escape(&file.path.to_string_lossy());
            out.push(fail_closed_check(loc, adapter, failure, &shown, &entries));

            let Some(event) = shim_probe::tool_event(adapter) else {
                continue;
            };
            let Some(entry) = entries.iter().find(|e| e.host_event == event) else {
                continue;
            };
            // A project file is the repository's: doctor runs only what
            // is this very binary there.
            let ours = std::fs::canonicalize(&entry.binary).ok();
            if file.scope == Scope::Project && (ours.is_none() || ours != this) {
                continue;
            }
            out.push(live_check(adapter, &shown, event, &entry.command));
        }
    }
}

fn fail_closed_check(
    loc: &Here,
    adapter: &hosts::Adapter,
    failure: &hosts::ShimFailure,
    shown: &str,
    entries: &[hostfile::WiredEntry],
) -> Check {
    let name = adapter.name();
    let host = adapter.display_name();
    let check = |level, detail: String| Check::new(format!("fail-closed ({name})"), level, detail);
    let switched: Vec<&str> = match adapter.fail_closed_switch() {
        Some(sw) => entries
            .iter()
            .filter(|e| e.fail_closed)
            .map(|e| e.host_event.as_str())
            .filter(|e| sw.applies_to(e))
            .collect(),
        None => Vec::new(),
    };
    if let Some(sw) = adapter.fail_closed_switch()
        && !switched.is_empty()
    {
        if let fail_closed::Verdict::Withhold { why } = fail_closed::verdict(adapter, &loc.home) {
            return check(
                Level::Warn,
                format!(
                    "`{shown}` sets `{}: {}`, but not every {host} here honours it: {why}",
                    sw.key,
                    sw.value()
                ),
            )
            .fix("keryx-hooks doctor --fix");
        }
        return check(
            Level::Ok,
            format!(
                "`{shown}` sets `{}: {}` on {}: if keryx-hooks is missing, killed or hung, {host} refuses the call; \
                 after moving or reinstalling keryx-hooks run `keryx-hooks doctor --fix` to point it at the new binary",
                sw.key,
                sw.value(),
                switched
                    .iter()
                    .map(|e| format!("`{e}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    let open: Vec<&str> = [
        ("missing", failure.missing),
        ("killed", failure.killed),
        ("hung", failure.hung),
    ]
    .into_iter()
    .filter(|(_, f)| *f == hosts::Failing::Open)
    .map(|(w, _)| w)
    .collect();
    if open.is_empty() {
        return check(
            Level::Ok,
            format!("{host} refuses a tool call when keryx-hooks is missing, killed or hung"),
        );
    }
    let when = match open.as_slice() {
        [one] => (*one).to_owned(),
        [a, b] => format!("{a} or {b}"),
        _ => format!("{}, {} or {}", open[0], open[1], open[2]),
    };
    let detail = format!("{host} lets the tool run when keryx-hooks is {when}");
    match adapter.fail_closed_switch() {
        None => check(
            Level::Warn,
            format!("{detail}; {host} has no setting that refuses it instead"),
        ),
        Some(sw) => match fail_closed::verdict(adapter, &loc.home) {
            fail_closed::Verdict::Withhold { why } => check(
                Level::Warn,
                format!("{detail}: {why}"),
            )
            .fix(format!(
                "install or update every copy of {host} to {} or later (and remove older ones), then run `keryx-hooks doctor --fix`",
                sw.min_version.unwrap_or("the version that knows it")
            )),
            _ => check(
                Level::Warn,
                format!(
                    "{detail}: `{shown}` does not set `{}: {}`, which every {host} found here honours",
                    sw.key,
                    sw.value()
                ),
            )
            .fix("keryx-hooks doctor --fix"),
        },
    }
}

/// Runs the host's own command line for a tool call, as [`shim_probe`] does.
fn live_check(adapter: &hosts::Adapter, shown: &str, event: &str, command: &str) -> Check {
    let name = adapter.name();
    let host = adapter.display_name();
    let p = shim_probe::probe(adapter, event, command);
    let what = format!("the `{event}` command in `{shown}`");
    let reinstall = format!("keryx-hooks doctor --fix (or `keryx-hooks install {name}`)");
    let check = |level, detail: String| Check::new(format!("live ({name})"), level, detail);
    match (p.allow, p.deny) {
        (Ok(()), Ok(())) => check(
            Level::Ok,
            format!(
                "{what} answered a harmless call and denied a read of `~/.ssh/id_rsa`, both as {host} reads them"
            ),
        ),
        (Err(e), _) => {
            check(Level::Fail, format!("{what}, run as {host} runs it: {e}")).fix(reinstall)
        }
        (Ok(()), Err(e)) => check(Level::Warn, format!("{what}, run as {host} runs it: {e}"))
            .fix("keryx-hooks enable keryx.ctx-guard"),
    }
}

/// A failing check when any of our entries in a host file has a timeout
/// below what its snapshot's hooks need on that event (the host would kill
/// the shim first; Claude Code then lets the tool run).
fn timeout_check(
    loc: &Here,
    adapter: &hosts::Adapter,
    scope: Scope,
    shown: &str,
    entries: &[hostfile::WiredEntry],
) -> Option<Check> {
    let project = (scope == Scope::Project).then(|| loc.project_root_or_cwd());
    let keys: BTreeSet<&str> = entries
        .iter()
        .filter_map(|e| e.snapshot_key.as_deref())
        .collect();
    let short: Vec<classify::ShortTimeout> = keys
        .into_iter()
        .flat_map(|k| classify::short_timeouts(loc, adapter, entries, k, project))
        .collect();
    if short.is_empty() {
        return None;
    }
    let unit = match adapter.timeout_unit() {
        hosts::TimeoutUnit::Seconds => "s",
        hosts::TimeoutUnit::Milliseconds => "ms",
    };
    let list = short
        .iter()
        .map(|t| {
            format!(
                "`{}` {} {unit} where its hooks need {} {unit}",
                t.host_event, t.timeout, t.needed
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    Some(
        Check::new(
            format!("timeouts ({})", adapter.name()),
            Level::Fail,
            format!(
                "`{shown}` gives {list}: the host can kill the shim before a gate answers (Claude Code then lets the tool run)"
            ),
        )
        .fix("keryx-hooks doctor --fix"),
    )
}

/// A warning when the hooks on an event can need more than the host
/// accepts as a hook timeout (Kimi: 600 s): the shim answers within it,
/// and a gate still running then denies.
fn host_max_check(
    loc: &Here,
    adapter: &hosts::Adapter,
    scope: Scope,
    entries: &[hostfile::WiredEntry],
) -> Option<Check> {
    let project = (scope == Scope::Project).then(|| loc.project_root_or_cwd());
    let key = entries.iter().find_map(|e| e.snapshot_key.as_deref())?;
    let regs = classify::snapshot_registrations(loc, key, project)?;
    let text = hostfile::wiring::over_host_max_text(adapter, &regs)?;
    Some(Check::new(
        format!("timeouts ({})", adapter.name()),
        Level::Warn,
        text,
    ))
}

/// Whether Codex has recorded the user's trust for our entries in the
/// hooks source `source` (a `config.toml`, or a plugin's `hooks/hooks.json`
/// when `plugin`): Codex runs new or changed hooks only after the user
/// trusts them in `/hooks`, and keeps that trust in the user config.
fn codex_review_check(loc: &Here, codex: &hosts::Adapter, source: &Path, plugin: bool) -> Check {
    let shown = escape(&source.to_string_lossy());
    let Some(user_config) = hostfile::config_files(codex, Scope::User, loc)
        .into_iter()
        .next()
    else {
        return Check::new("codex-review", Level::Warn, "no Codex user config location");
    };
    let fix = format!(
        "open Codex, type `/hooks` and trust the keryx-hooks entries; Codex records the trust in `{}` \
         under [hooks.state], and this check passes once it has",
        escape(&user_config.to_string_lossy())
    );
    let entries = match codex_trust::review(source, plugin, &user_config) {
        Ok(e) => e,
        Err(e) => {
            return Check::new(
                "codex-review",
                Level::Warn,
                format!(
                    "cannot tell whether Codex trusts the keryx-hooks entries in `{shown}`: {}",
                    escape(&e.to_string())
                ),
            )
            .fix(fix);
        }
    };
    let count = |r: Review| entries.iter().filter(|e| e.review == r).count();
    let (new, changed, off) = (
        count(Review::New),
        count(Review::Changed),
        count(Review::Disabled),
    );
    if new + changed + off == 0 {
        return Check::new(
            "codex-review",
            Level::Ok,
            format!(
                "Codex trusts all {} keryx-hooks entries in `{shown}`",
                entries.len()
            ),
        );
    }
    let mut why = Vec::new();
    if new > 0 {
        why.push(format!("{new} never reviewed"));
    }
    if changed > 0 {
        why.push(format!("{changed} changed since you trusted them"));
    }
    let mut detail = String::new();
    if new + changed > 0 {
        detail = format!(
            "{} of {} keryx-hooks entries in `{shown}` await your review in Codex ({}), and Codex does not run them until then",
            new + changed,
            entries.len(),
            why.join(", ")
        );
    }
    if off > 0 {
        if !detail.is_empty() {
            detail.push_str("; ");
        }
        detail.push_str(&format!(
            "{off} keryx-hooks entr{} in `{shown}` turned off in Codex's `/hooks`",
            if off == 1 { "y is" } else { "ies are" }
        ));
    }
    Check::new("codex-review", Level::Warn, detail).fix(fix)
}

/// The packages `install --format plugin` generated, as their manifests
/// record them: still there, still ours, every event wired to an installed
/// snapshot, and (Codex) trusted. Adds each such host to `wired`.
fn plugin_checks(loc: &Here, out: &mut Vec<Check>, wired: &mut BTreeSet<String>) {
    let this = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok());
    for s in snapshot::installed(&loc.snapshot_root) {
        let Ok(m) = &s.manifest else {
            continue;
        };
        for w in &m.wirings {
            let Some(adapter) = hosts::adapter(&w.host) else {
                continue;
            };
            // OpenCode's plugin file is its config file: checked with the others.
            if w.format != WiringFormat::Plugin || hostfile::is_plugin_file_host(adapter) {
                continue;
            }
            let name = format!("plugin ({})", w.host);
            let path = Path::new(&w.path);
            let shown = escape(&w.path);
            let reinstall = format!(
                "keryx-hooks install {} --format plugin --out '{}'",
                w.host,
                escape(&path.parent().unwrap_or(path).to_string_lossy())
            );
            let entries = match plugin::wired_events(adapter, path) {
                Ok(e) if e.is_empty() => {
                    out.push(
                        Check::new(
                            name,
                            Level::Fail,
                            format!("the {} recorded at `{shown}` is gone", kind_noun(adapter)),
                        )
                        .fix(reinstall),
                    );
                    continue;
                }
                Ok(e) => e,
                Err(e) => {
                    out.push(Check::new(name, Level::Fail, escape(&e.to_string())).fix(reinstall));
                    continue;
                }
            };
            wired.insert(w.host.clone());
            let binaries: BTreeSet<&str> = entries.iter().map(|e| e.binary.as_str()).collect();
            for b in binaries {
                let (level, detail) = binary_state(Path::new(b), this.as_deref(), true);
                let mut c = Check::new(
                    format!("binary ({})", w.host),
                    level,
                    format!("`{shown}` runs `{}`: {detail}", escape(b)),
                );
                if level != Level::Ok {
                    c = c.fix(reinstall.clone());
                }
                out.push(c);
            }
            let dangling = entries
                .iter()
                .filter_map(|e| e.snapshot_key.as_deref())
                .any(|k| !loc.snapshot_dir(k).join(manifest::MANIFEST_FILE).is_file());
            out.push(if dangling {
                Check::new(
                    name,
                    Level::Fail,
                    format!("`{shown}` points at a snapshot that is not installed, so its events are denied"),
                )
                .fix("keryx-hooks doctor --fix")
            } else if !classify::all_events_at(adapter, &entries, &s.key) {
                Check::new(
                    name,
                    Level::Fail,
                    format!("`{shown}` does not wire every event to snapshot `{}`", escape(&s.key)),
                )
                .fix("keryx-hooks doctor --fix")
            } else {
                Check::new(
                    name,
                    Level::Ok,
                    format!("`{shown}` wires all {} events", entries.len()),
                )
            });
            if adapter.reviews_hooks() == Some(HookReview::CodexTrustedHash) {
                out.push(codex_review_check(
                    loc,
                    adapter,
                    &path.join("hooks/hooks.json"),
                    true,
                ));
            }
        }
    }
}

fn kind_noun(adapter: &hosts::Adapter) -> &'static str {
    plugin::kind(adapter).map_or("plugin", |k| k.noun())
}

/// Whether the binary at `path` exists, is executable and is this version.
/// Another binary is asked for its version only when a user-scope file
/// names it: a project file is repository-controlled, and doctor must not
/// run what a repository points it at.
fn binary_state(path: &Path, this: Option<&Path>, may_run: bool) -> (Level, String) {
    let Ok(meta) = std::fs::metadata(path) else {
        return (
            Level::Fail,
            "it does not exist, so every event fails in the host".into(),
        );
    };
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return (Level::Fail, "it is not an executable file".into());
    }
    let canonical = std::fs::canonicalize(path).ok();
    if canonical.is_some() && canonical.as_deref() == this {
        return (
            Level::Ok,
            format!("this binary, version {}", env!("CARGO_PKG_VERSION")),
        );
    }
    if !may_run {
        return (
            Level::Warn,
            "not this binary (a project file; its version was not checked)".into(),
        );
    }
    match binary_version(path) {
        Ok(v) if v == env!("CARGO_PKG_VERSION") => (Level::Ok, format!("version {v}")),
        Ok(v) => (
            Level::Warn,
            format!(
                "version {} there, but this is {}",
                escape(&v),
                env!("CARGO_PKG_VERSION")
            ),
        ),
        Err(e) => (Level::Warn, format!("its version is unknown: {e}")),
    }
}

fn binary_version(path: &Path) -> Result<String, String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(_) => break,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("`--version` did not answer within 3 s".into());
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let mut text = String::new();
    if let Some(mut o) = child.stdout.take() {
        use std::io::Read;
        let _ = o.by_ref().take(4096).read_to_string(&mut text);
    }
    text.trim()
        .strip_prefix("keryx-hooks ")
        .map(str::to_owned)
        .ok_or_else(|| "it does not answer `--version` like keryx-hooks".into())
}

/// A host that also runs another host's hook files (Cursor with its
/// third-party configs on, and Copilot, run `.claude/settings.json`), wired
/// with that host too, delivers events twice.
fn double_registration(wired: &BTreeSet<String>, out: &mut Vec<Check>) {
    for adapter in hosts::all() {
        let host = adapter.name();
        let Some(also) = adapter.also_runs() else {
            continue;
        };
        if wired.contains(also.host) && wired.contains(host) {
            out.push(
                Check::new(
                    "double-registration",
                    Level::Warn,
                    format!(
                        "both `{}` and `{host}` are wired: {}, so events reach keryx-hooks twice \
                         (tool calls are de-duplicated by session and call id; other events run twice)",
                        also.host, also.how
                    ),
                )
                .fix(format!(
                    "keryx-hooks uninstall {host}, or turn off its third-party hook configs"
                )),
            );
        }
    }
}

/// Every installed snapshot: a readable manifest, and files that match it.
fn snapshot_checks(loc: &Here, out: &mut Vec<Check>) {
    for s in snapshot::installed(&loc.snapshot_root) {
        let name = format!("snapshot ({})", s.key);
        let shown = escape(&s.dir.to_string_lossy());
        match &s.manifest {
            Err(e) => out.push(
                Check::new(name, Level::Fail, escape(&e.to_string())).fix(format!(
                    "move `{shown}` away, then run `keryx-hooks install <host>...`"
                )),
            ),
            Ok(m) => match manifest::verify(&s.dir, m) {
                Ok(()) => out.push(Check::new(
                    name,
                    Level::Ok,
                    format!(
                        "{} file{} from `{}`, taken {} by keryx-hooks {}",
                        m.files.len(),
                        if m.files.len() == 1 { "" } else { "s" },
                        escape(&m.source_path),
                        escape(&m.created_at),
                        escape(&m.binary_version)
                    ),
                )),
                Err(e) => out.push(
                    Check::new(
                        name,
                        Level::Fail,
                        format!(
                            "the snapshot differs from its manifest: {}",
                            escape(&e.to_string())
                        ),
                    )
                    .fix("keryx-hooks doctor --fix"),
                ),
            },
        }
    }
    let leftovers = snapshot::leftovers(&loc.snapshot_root);
    if !leftovers.is_empty() {
        out.push(
            Check::new(
                "snapshot-leftovers",
                Level::Warn,
                format!(
                    "{} temp director{} left by an interrupted sync under `{}`",
                    leftovers.len(),
                    if leftovers.len() == 1 { "y" } else { "ies" },
                    escape(&loc.snapshot_root.to_string_lossy())
                ),
            )
            .fix("keryx-hooks doctor --fix"),
        );
    }
}

fn drift_checks(loc: &Here, statuses: &[classify::SourceStatus], out: &mut Vec<Check>) {
    for s in statuses {
        let name = format!("drift ({})", escape(&s.source.to_string_lossy()));
        let c = match &s.result {
            Ok(a) => {
                let level = match a.state {
                    DriftState::Current => Level::Ok,
                    DriftState::NeverMigrated | DriftState::StaleButStable => Level::Warn,
                    DriftState::HalfApplied => Level::Fail,
                };
                let mut detail = format!("{}: {}", a.state.as_str(), a.state.meaning());
                let broken: Vec<String> = a
                    .unwired()
                    .filter_map(|h| {
                        h.broken()
                            .map(|why| format!("{}: {}", h.describe(), escape(&why)))
                    })
                    .collect();
                let unwired: Vec<String> = a
                    .unwired()
                    .filter(|h| h.broken().is_none())
                    .map(HostWiring::describe)
                    .collect();
                if !broken.is_empty() {
                    detail.push_str(&format!(" (broken: {})", broken.join("; ")));
                }
                if !unwired.is_empty() {
                    detail.push_str(&format!(" (not wired: {})", unwired.join(", ")));
                } else if a.state == DriftState::HalfApplied && broken.is_empty() {
                    detail.push_str(" (no host is recorded as using it)");
                }
                Check {
                    state: Some(a.state.as_str()),
                    ..Check::new(name, level, detail)
                }
            }
            Err(w) => Check::new(
                name,
                Level::Warn,
                format!(
                    "the state could not be determined: {}",
                    escape(&w.to_string())
                ),
            ),
        };
        // A resync of a source that fails its checks is refused: say what
        // to fix first, not a command that will not work.
        let blocked = matches!(&s.result, Ok(a) if a.state == DriftState::StaleButStable)
            .then(|| preflight::check(&s.source, loc))
            .filter(|p| !p.is_empty());
        out.push(match (blocked, s.fix()) {
            (Some(problems), _) => {
                let (whats, fixes) = preflight::render(&problems);
                let detail = format!(
                    "{}; a resync is refused until fixed: {}",
                    c.detail,
                    whats.join("; ")
                );
                Check { detail, ..c }.fix(format!(
                    "{}, then `keryx-hooks doctor --fix`",
                    fixes.join("; ")
                ))
            }
            (None, Some(f)) => c.fix(f),
            (None, None) => c,
        });
    }
}

/// Loads the live config (user and project layers) and each snapshot's own
/// `hooks.json`; returns every registration that may run, for the sandbox check.
fn config_checks(loc: &Here, out: &mut Vec<Check>) -> Vec<config::model::Registration> {
    let mut regs = Vec::new();
    let (live, _) = crate::pipeline::load_layers(loc, None, None);
    push_config_check(out, "config", &live, "keryx-hooks validate");
    let trust = crate::trust::evaluate(&live, loc);
    let file = trust
        .file
        .as_ref()
        .map(|f| escape(&f.to_string_lossy()))
        .unwrap_or_default();
    out.push(match &trust.state {
        TrustState::NoCommandHooks => Check::new(
            "project-trust",
            Level::Ok,
            "this project defines no command hooks",
        ),
        TrustState::Trusted => Check::new(
            "project-trust",
            Level::Ok,
            format!("the command hooks in `{file}` are trusted"),
        ),
        TrustState::Untrusted => Check::new(
            "project-trust",
            Level::Warn,
            format!("the command hooks in `{file}` are not trusted, so they do not run"),
        )
        .fix("keryx-hooks trust"),
        TrustState::Changed => Check::new(
            "project-trust",
            Level::Warn,
            format!("`{file}` changed since you trusted it, so its command hooks do not run"),
        )
        .fix("keryx-hooks trust"),
        TrustState::StoreRefused(why) => Check::new(
            "project-trust",
            Level::Fail,
            format!("the trust store cannot be used: {}", escape(why)),
        ),
    });
    for w in &trust.warnings {
        out.push(Check::new("project-trust", Level::Warn, escape(w)));
    }
    let mut off_gates = disabled_gates(&live);
    let mut kept = live;
    crate::trust::apply(&mut kept, loc);
    regs.extend(kept.registrations);

    for s in snapshot::installed(&loc.snapshot_root) {
        if s.manifest.is_err() {
            continue;
        }
        let loaded = load::load(&load::Sources {
            user_file: s.dir.join("hooks.json"),
            project_file: None,
            project_root: None,
            cache_dir: Some(loc.config_cache_dir()),
        });
        push_config_check(
            out,
            &format!("config (snapshot {})", s.key),
            &loaded,
            "fix the source's hooks.json (`keryx-hooks validate`), then `keryx-hooks doctor --fix`",
        );
        for g in disabled_gates(&loaded) {
            if !off_gates.contains(&g) {
                off_gates.push(g);
            }
        }
        regs.extend(
            loaded
                .registrations
                .into_iter()
                .filter(|r| r.scope == crate::config::model::Scope::User),
        );
    }
    if !off_gates.is_empty() {
        out.push(
            Check::new(
                "builtin-gates",
                Level::Warn,
                format!(
                    "built-in gates turned off, so what they deny is let through: {}",
                    off_gates.join(", ")
                ),
            )
            .fix("keryx-hooks enable <id> --user (or remove the override from the file named)"),
        );
    }
    unsandboxed_check(&regs, out);
    regs
}

/// `` `id` (in `file`) `` for each built-in gate `loaded` turns off.
fn disabled_gates(loaded: &load::Loaded) -> Vec<String> {
    loaded
        .disabled_builtin_gates
        .iter()
        .map(|id| {
            let file = loaded
                .disabled_by
                .iter()
                .rev()
                .find(|(i, _)| i == id)
                .map(|(_, p)| format!(" (in `{}`)", escape(&p.to_string_lossy())))
                .unwrap_or_default();
            format!("`{}`{file}", escape(id))
        })
        .collect()
}

/// User command hooks that run outside the sandbox, with the user's full
/// permissions: said, since nothing else confines them.
fn unsandboxed_check(regs: &[config::model::Registration], out: &mut Vec<Check>) {
    use crate::config::model::{RunsIn, Scope};
    let mut ids: Vec<String> = Vec::new();
    for r in regs.iter().filter(|r| {
        r.scope == Scope::User
            && r.enabled
            && r.command().is_some()
            && r.runs_in == RunsIn::Unsandboxed
    }) {
        let id = format!("`{}`", escape(&r.id));
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if !ids.is_empty() {
        out.push(
            Check::new(
                "unsandboxed-hooks",
                Level::Warn,
                format!(
                    "user hooks that run outside the sandbox, with your full permissions: {}",
                    ids.join(", ")
                ),
            )
            .fix("drop `\"runsIn\": \"unsandboxed\"` from the hooks that do not need it"),
        );
    }
}

/// A user hook whose relative script is not beside the hooks file it is
/// read from (the live file or a snapshot) fails on every run.
fn user_script_check(regs: &[config::model::Registration], out: &mut Vec<Check>) {
    let missing = load::missing_user_scripts(regs);
    if missing.is_empty() {
        return;
    }
    for d in missing {
        out.push(
            Check::new("user-scripts", Level::Fail, escape(&d.to_string())).fix(
                "put the script beside the user hooks.json, then `keryx-hooks doctor --fix` to take a new snapshot",
            ),
        );
    }
}

fn push_config_check(out: &mut Vec<Check>, name: &str, loaded: &load::Loaded, fix: &str) {
    let errors: Vec<String> = loaded.errors().map(|d| d.to_string()).collect();
    let warnings: Vec<String> = loaded.warnings().map(|d| d.to_string()).collect();
    out.push(if let Some(first) = errors.first() {
        Check::new(
            name,
            Level::Fail,
            format!(
                "{} error{} (every gate-capable event is denied until fixed); first: {}",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" },
                escape(first)
            ),
        )
        .fix(fix)
    } else if let Some(first) = warnings.first() {
        Check::new(
            name,
            Level::Warn,
            format!("{} warning(s); first: {}", warnings.len(), escape(first)),
        )
        .fix(fix)
    } else {
        Check::new(name, Level::Ok, "loads without errors")
    });
}

/// `runtime.toml`: one check per problem, as [`crate::settings`] finds them
/// (the secret gates' own message when `[security]` does not load), or one
/// `ok` naming the profile `run` uses.
/// `KERYX_HOOKS=off` turns every hook and gate off for whatever is started
/// from this environment; nothing else says so outside a SessionStart.
fn kill_switch_check(out: &mut Vec<Check>) {
    if let Some(detail) = kill_switch() {
        out.push(
            Check::new("KERYX_HOOKS", Level::Warn, detail)
                .fix("unset KERYX_HOOKS (and remove it from your shell profile and the hosts' `env` settings)"),
        );
    }
}

fn settings_check(loc: &Here, out: &mut Vec<Check>) {
    const NAME: &str = "runtime.toml";
    let settings = loc.settings();
    let shown = escape(&settings.path.to_string_lossy());
    let problems = settings.problems();
    if problems.is_empty() {
        out.push(Check::new(
            NAME,
            Level::Ok,
            if settings.exists {
                format!("`{shown}` loads; profile `{}`", settings.profile())
            } else {
                format!(
                    "no `{shown}`: every setting has its default (profile `{}`)",
                    settings.profile()
                )
            },
        ));
    }
    for p in problems {
        let level = match p.severity {
            crate::settings::Severity::Fail => Level::Fail,
            crate::settings::Severity::Warn => Level::Warn,
        };
        out.push(Check::new(NAME, level, p.message).fix(p.fix));
    }
}

fn sandbox_check(loc: &Here, regs: &[config::model::Registration], out: &mut Vec<Check>) {
    // The profile `run` uses when the host names none.
    let profile = loc.settings().profile();
    let needing = crate::install::preflight::needing_sandbox(regs, loc);
    let list = needing
        .iter()
        .map(|i| format!("`{}`", escape(i)))
        .collect::<Vec<_>>()
        .join(", ");
    let search = crate::runner::LauncherSearch {
        pin: loc.settings().launcher.as_ref().map(Option::as_deref),
        project: loc.project_root.as_deref(),
        cwd: Some(&loc.cwd),
    };
    out.push(match crate::runner::find_launcher(&search) {
        Ok(l) => Check::new(
            "sandbox",
            Level::Ok,
            format!(
                "`{}` works here ({})",
                escape(&l.program.display().to_string()),
                l.source
            ),
        ),
        Err(why) if needing.is_empty() => Check::new(
            "sandbox",
            Level::Warn,
            format!(
                "no sandbox launcher ({}); no hook needs one under profile `{}`",
                escape(&why.to_string()),
                profile.as_str()
            ),
        ),
        Err(why) => Check::new(
            "sandbox",
            Level::Fail,
            format!(
                "no sandbox launcher ({}); these hooks fail without one under profile `{}` \
                 (a failing gate denies): {list}",
                escape(&why.to_string()),
                profile.as_str()
            ),
        )
        .fix("install bubblewrap (e.g. `apt-get install bubblewrap`), or mark the hooks `runsIn: \"unsandboxed\"` where the profile allows"),
    });
}

fn stale_sessions(loc: &Here) -> Vec<PathBuf> {
    let now = SystemTime::now();
    let Ok(entries) = std::fs::read_dir(loc.sessions_dir()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > crate::session::MAX_AGE)
        })
        .map(|e| e.path())
        .collect()
}

fn sessions_check(loc: &Here, out: &mut Vec<Check>) {
    let stale = stale_sessions(loc);
    out.push(if stale.is_empty() {
        Check::new("sessions", Level::Ok, "no session state older than 7 days")
    } else {
        Check::new(
            "sessions",
            Level::Warn,
            format!(
                "{} session director{} under `{}` untouched for over 7 days",
                stale.len(),
                if stale.len() == 1 { "y" } else { "ies" },
                escape(&loc.sessions_dir().to_string_lossy())
            ),
        )
        .fix("keryx-hooks doctor --fix")
    });
}

/// How `--fix` may replace a snapshot that would start running new
/// commands, and the reviews it showed (for `--json`).
struct Consent {
    /// `--yes`: resync without asking.
    yes: bool,
    /// Ask on the terminal.
    ask: bool,
    /// Print each review (not with `--json`).
    show: bool,
    reviews: Vec<serde_json::Value>,
}

impl Consent {
    /// Whether `src` may be resynced now that `changes` were shown.
    fn resync(&mut self, src: &Path, key: &str, changes: &CommandChanges) -> Result<(), String> {
        let text = changes.render(src, key);
        if self.show {
            output::stdout(&text);
        }
        let verdict = if self.yes {
            Ok(())
        } else if self.ask {
            match super::shared::ask("Resync the snapshot with these commands?") {
                Ok(true) => Ok(()),
                _ => Err("you did not confirm it".to_owned()),
            }
        } else {
            Err("there is no terminal to ask in and `--yes` was not given".to_owned())
        };
        self.reviews.push(json!({
            "source": src,
            "key": key,
            "hookIds": changes.new.iter().map(|r| &r.id).collect::<Vec<_>>(),
            "review": text,
            "resynced": verdict.is_ok(),
        }));
        verdict
    }
}

/// What `--fix` does: resync every known source (a no-op when its snapshot
/// is already exact; a resync that would start new commands only with the
/// user's consent, see [`Consent`]), rewire the hosts its manifest records
/// where they no longer point at it or their timeouts fall short of its
/// hooks, clear temp leftovers and prune old sessions.
fn fix(loc: &Here, source: Option<&Path>, consent: &mut Consent) -> Vec<FixAction> {
    let mut actions = Vec::new();
    for src in classify::known_sources(loc, source) {
        let shown = escape(&src.to_string_lossy());
        let key = snapshot::snapshot_key(&src);
        // What `install` would refuse, a resync refuses too: the last good
        // snapshot keeps running, and the person is told what to fix.
        let problems = preflight::check(&src, loc);
        if !problems.is_empty() {
            let (whats, fixes) = preflight::render(&problems);
            actions.push(FixAction {
                action: "resync".into(),
                ok: false,
                detail: format!(
                    "`{shown}` not copied into snapshot `{key}`, which sessions keep running as it is: {}",
                    whats.join("; ")
                ),
                command: Some(format!(
                    "{}, then `{}`",
                    fixes.join("; "),
                    match source {
                        Some(_) => format!("keryx-hooks doctor --fix --source '{shown}'"),
                        None => "keryx-hooks doctor --fix".to_owned(),
                    }
                )),
            });
            rewire_where_needed(loc, &src, &mut actions);
            continue;
        }
        if let Some(changes) = resync::command_changes(&src, &loc.snapshot_root.join(&key), loc)
            && let Err(why) = consent.resync(&src, &key, &changes)
        {
            actions.push(FixAction {
                action: "resync".into(),
                ok: false,
                detail: format!(
                    "`{shown}` not copied into snapshot `{key}`: it would start running {} (shown above), and {why}; sessions keep running the snapshot as it is",
                    changes.ids()
                ),
                command: Some(match source {
                    Some(_) => format!("keryx-hooks doctor --fix --yes --source '{shown}'"),
                    None => "keryx-hooks doctor --fix --yes".to_owned(),
                }),
            });
            rewire_where_needed(loc, &src, &mut actions);
            continue;
        }
        match snapshot::sync(&src, &loc.snapshot_root, &[], false) {
            Ok(r) => {
                if r.changed {
                    actions.push(FixAction {
                        action: "resync".into(),
                        ok: true,
                        detail: format!("copied `{shown}` into snapshot `{}`", r.key),
                        command: None,
                    });
                }
                for w in r.warnings {
                    actions.push(FixAction {
                        action: "resync".into(),
                        ok: true,
                        detail: format!("note: {}", escape(&w)),
                        command: None,
                    });
                }
            }
            Err(e) => {
                actions.push(FixAction {
                    action: "resync".into(),
                    ok: false,
                    detail: format!("`{shown}`: {}", escape(&e.to_string())),
                    command: Some(format!(
                        "fix the cause, then `keryx-hooks doctor --fix --source '{shown}'`"
                    )),
                });
                continue;
            }
        }
        rewire_where_needed(loc, &src, &mut actions);
    }
    let leftovers = snapshot::leftovers(&loc.snapshot_root);
    if !leftovers.is_empty() {
        let left = snapshot::clean_all_leftovers(&loc.snapshot_root);
        actions.push(FixAction {
            action: "leftovers".into(),
            ok: left == 0,
            detail: format!(
                "removed {} of {} temp directories",
                leftovers.len() - left.min(leftovers.len()),
                leftovers.len()
            ),
            command: None,
        });
    }
    let stale = stale_sessions(loc).len();
    if stale > 0 {
        let removed = crate::session::prune(&loc.sessions_dir());
        actions.push(FixAction {
            action: "sessions".into(),
            ok: removed >= stale,
            detail: format!("removed {removed} session directories older than 7 days"),
            command: None,
        });
    }
    actions
}

/// Rewires the hosts the snapshot of `src` records where they no longer
/// point at it, or where their timeouts fall short of its hooks.
fn rewire_where_needed(loc: &Here, src: &Path, actions: &mut Vec<FixAction>) {
    let wired = |r: &classify::Recorded<'_>, k: &str| classify::recorded_wired(loc, r, k);
    let Ok(a) = classify::assess(src, &loc.snapshot_root, None, &wired) else {
        return;
    };
    // Wired to the snapshot, but through a binary that is gone (moved,
    // reinstalled elsewhere), or without the fail-closed switch every copy
    // of the host now honours (or with it where one no longer does).
    let outdated: Vec<&Wiring> = a
        .hosts
        .iter()
        .filter_map(|h| h.wiring.as_ref())
        .filter(|w| outdated_wiring(loc, w))
        .collect();
    if a.state != DriftState::HalfApplied {
        for w in outdated {
            actions.push(rewire_recorded(loc, src, &a.key, w));
        }
        return;
    }

    if a.hosts.is_empty() {
        actions.push(FixAction {
            action: "rewire".into(),
            ok: false,
            detail: format!("no host is recorded as using snapshot `{}`", a.key),
            command: Some(install_command(loc, src, "<host>...")),
        });
        return;
    }
    // Hosts recorded without a wiring (older manifests): where their
    // entries are.
    let legacy: Vec<String> = a
        .unwired()
        .filter(|h| h.wiring.is_none())
        .map(|h| h.host.clone())
        .collect();
    if !legacy.is_empty() {
        actions.push(match rewire(loc, &legacy, src) {
            Ok(detail) => FixAction {
                action: "rewire".into(),
                ok: true,
                detail,
                command: None,
            },
            Err(why) => FixAction {
                action: "rewire".into(),
                ok: false,
                detail: format!(
                    "{} not wired to snapshot `{}`: {}",
                    legacy.join(", "),
                    a.key,
                    escape(&why)
                ),
                command: Some(install_command(loc, src, &legacy.join(" "))),
            },
        });
    }
    let unwired: Vec<&Wiring> = a.unwired().filter_map(|h| h.wiring.as_ref()).collect();
    for w in &unwired {
        actions.push(rewire_recorded(loc, src, &a.key, w));
    }
    for w in outdated.into_iter().filter(|w| !unwired.contains(w)) {
        actions.push(rewire_recorded(loc, src, &a.key, w));
    }
}

/// Whether a recorded wiring runs a binary that is no longer an executable
/// file, or carries the host's fail-closed switch where install would not
/// write it now (or lacks it where install would).
fn outdated_wiring(loc: &Here, w: &Wiring) -> bool {
    let Some(adapter) = hosts::adapter(&w.host) else {
        return false;
    };
    let path = Path::new(&w.path);
    let entries = match w.format {
        WiringFormat::Settings => hostfile::wired_events(adapter, path),
        WiringFormat::Plugin => plugin::wired_events(adapter, path),
    };
    let Ok(entries) = entries else {
        return false;
    };
    let dead = entries.iter().any(|e| {
        std::fs::metadata(&e.binary)
            .map(|m| !m.is_file() || m.permissions().mode() & 0o111 == 0)
            .unwrap_or(true)
    });
    if dead {
        return true;
    }
    if w.format != WiringFormat::Settings || adapter.fail_closed_switch().is_none() {
        return false;
    }
    let wanted = fail_closed::verdict(adapter, &loc.home).writes();
    let should: Vec<String> = hostfile::desired(adapter, Path::new(""), Path::new(""), &[], wanted)
        .into_iter()
        .filter(|d| d.fail_closed)
        .map(|d| d.host_event)
        .collect();
    entries
        .iter()
        .any(|e| e.fail_closed != should.contains(&e.host_event))
}

/// Where the hooks a rewire's timeouts must cover are read from: the
/// snapshot of `source` (what sessions run, also when a resync was not
/// confirmed), or the source itself when there is no snapshot yet.
fn budget_source(loc: &Here, source: &Path) -> PathBuf {
    let dir = loc.snapshot_root.join(snapshot::snapshot_key(source));
    if dir.join(manifest::MANIFEST_FILE).is_file() {
        dir
    } else {
        source.to_path_buf()
    }
}

fn install_command(loc: &Here, source: &Path, hosts: &str) -> String {
    if snapshot::snapshot_key(source) == snapshot::snapshot_key(&loc.keryx_home) {
        format!("keryx-hooks install {hosts}")
    } else {
        format!(
            "keryx-hooks install {hosts} --source '{}'",
            escape(&source.to_string_lossy())
        )
    }
}

/// Rewires one recorded wiring where it was made: the same file (or
/// package) at the same scope, with timeouts for that scope's hooks. A
/// project-scope wiring whose project is gone is forgotten instead.
fn rewire_recorded(loc: &Here, source: &Path, key: &str, w: &Wiring) -> FixAction {
    let what = format!(
        "{} ({} {}, `{}`)",
        w.host,
        w.scope.as_str(),
        w.format.as_str(),
        escape(&w.path)
    );
    let failed = |why: String| FixAction {
        action: "rewire".into(),
        ok: false,
        detail: format!("{what} not wired to snapshot `{key}`: {}", escape(&why)),
        command: Some(match (w.scope, w.format) {
            (WiringScope::Project, _) => format!(
                "cd '{}' && keryx-hooks install {} --scope project{}",
                escape(w.project.as_deref().unwrap_or("<project>")),
                w.host,
                if w.format == WiringFormat::Plugin {
                    " --format plugin"
                } else {
                    ""
                }
            ),
            (WiringScope::User, WiringFormat::Plugin) => format!(
                "keryx-hooks install {} --format plugin --out '{}'",
                w.host,
                escape(
                    &Path::new(&w.path)
                        .parent()
                        .unwrap_or(Path::new("/"))
                        .to_string_lossy()
                )
            ),
            (WiringScope::User, WiringFormat::Settings) => install_command(loc, source, &w.host),
        }),
    };
    let Some(adapter) = hosts::adapter(&w.host) else {
        return failed(format!("unknown host `{}`", w.host));
    };
    let project = w.project.as_deref().map(Path::new);
    if w.scope == WiringScope::Project
        && let Some(root) = project
        && !root.is_dir()
    {
        let forgot = snapshot::update_wirings(&loc.snapshot_root, key, |_, wirings| {
            wirings.retain(|r| r != w);
        });
        return FixAction {
            action: "forget".into(),
            ok: forgot.is_ok(),
            detail: match forgot {
                Ok(_) => format!(
                    "{what}: the project `{}` no longer exists; its wiring is forgotten",
                    escape(&root.to_string_lossy())
                ),
                Err(e) => format!(
                    "{what}: the project is gone, but the manifest could not forget it: {}",
                    escape(&e.to_string())
                ),
            },
            command: None,
        };
    }
    let regs = match project.filter(|_| w.scope == WiringScope::Project) {
        Some(root) => hostfile::budget_registrations_in(&budget_source(loc, source), root, loc),
        None => hostfile::budget_registrations(&budget_source(loc, source), loc),
    };
    let regs = match regs {
        Ok(r) => r,
        Err(errors) => return failed(format!("the hooks do not load: {}", errors.join("; "))),
    };
    let binary = match hostfile::shim_binary() {
        Ok(b) => b,
        Err(e) => return failed(e.to_string()),
    };
    let fail_closed = fail_closed::verdict(adapter, &loc.home).writes();
    let wanted = hostfile::desired(adapter, &binary, &loc.snapshot_dir(key), &regs, fail_closed);
    let path = Path::new(&w.path);
    if w.scope == WiringScope::Project
        && let Some(root) = project
        && let Err(e) = hostfile::file::refuse_outside(path, root)
    {
        return failed(e.to_string());
    }
    let result = match w.format {
        WiringFormat::Plugin => plugin::install(adapter, path, &wanted, false),
        WiringFormat::Settings => hostfile::install(adapter, path, &wanted, false),
    };
    match result {
        Ok(_) => FixAction {
            action: "rewire".into(),
            ok: true,
            detail: format!("wired {what} to snapshot `{key}`"),
            command: None,
        },
        // Never overwritten: the person repairs it, then fixes again.
        Err(e) if e.host_would_not_load() => FixAction {
            command: Some(format!(
                "repair `{}` by hand, then run `keryx-hooks doctor --fix`",
                escape(&w.path)
            )),
            ..failed(e.to_string())
        },
        Err(e) => failed(e.to_string()),
    }
}

/// Rewires `hosts` to the snapshot of `source` with the installer's own
/// host editor, in the scope(s) where their entries of ours already are
/// (user scope when none are left).
fn rewire(loc: &Here, hosts: &[String], source: &Path) -> Result<String, String> {
    let key = snapshot::snapshot_key(source);
    let mut done = Vec::new();
    for name in hosts {
        let adapter =
            hosts::adapter(name).ok_or_else(|| format!("unknown host `{}`", escape(name)))?;
        let mut scopes: Vec<Scope> = classify::host_config_entries(loc, adapter)
            .into_iter()
            .filter(|f| f.entries.as_ref().is_ok_and(|e| !e.is_empty()))
            .map(|f| f.scope)
            .collect();
        scopes.dedup();
        if scopes.is_empty() {
            scopes.push(Scope::User);
        }
        for scope in scopes {
            let regs = hostfile::budget_registrations(&budget_source(loc, source), loc)
                .map_err(|errors| format!("the hooks do not load: {}", errors.join("; ")))?;
            let files = hostfile::wire_host(adapter, scope, loc, &key, &regs, false)
                .map_err(|e| e.to_string())?;
            for f in files {
                done.push(format!("`{}`", escape(&f.path.to_string_lossy())));
            }
        }
    }
    Ok(format!(
        "wired {} to snapshot `{key}` in {}",
        hosts.join(", "),
        done.join(", ")
    ))
}
