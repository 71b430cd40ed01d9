//! Whether install may write a host's fail-closed switch (Claude Code's
//! `onFailure: "block"`, which a missing, killed or hung shim then cannot
//! turn into an allow). A switch with a `minVersion` is written only when
//! every copy of the host a person may start knows it: the host's
//! executables on `PATH` and at the places it installs itself (editor
//! extensions bundle their own), each asked `--version` with a short
//! timeout. An older or silent copy would ignore the key while the config
//! reads as fail-closed, so then it is left out and install and doctor say
//! why. Asked once per host per process.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use crate::base::process;
use crate::env_vars;
use crate::hosts::{Adapter, FailClosedSwitch};

/// How long one copy may take to say its version.
const VERSION_TIMEOUT: Duration = Duration::from_secs(3);

/// One copy of a host's program and what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub path: PathBuf,
    /// Its version, or why it is unknown.
    pub version: Result<String, String>,
}

/// What install does with a host's switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The host has no switch: a failure has the host's own effect.
    NoSwitch,
    /// Write it: it needs no version, or every copy found is new enough.
    Write { copies: Vec<Copy> },
    /// Leave it out, for this reason (a sentence naming the copies).
    Withhold { why: String },
}

impl Verdict {
    pub fn writes(&self) -> bool {
        matches!(self, Verdict::Write { .. })
    }
}

/// The verdict for `host` with `home` the person's home, asked of the
/// copies once per process.
pub fn verdict(host: &Adapter, home: &Path) -> Verdict {
    static SEEN: Mutex<Vec<(&'static str, PathBuf, Verdict)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, v)) = seen.iter().find(|(h, p, _)| *h == host.name() && p == home) {
        return v.clone();
    }
    let path_var = env_vars::get(env_vars::PATH).unwrap_or_default();
    let v = decide(host, home, &path_var);
    seen.push((host.name(), home.to_path_buf(), v.clone()));
    v
}

/// [`verdict`] without the cache, with `path_var` for `PATH`.
pub fn decide(host: &Adapter, home: &Path, path_var: &str) -> Verdict {
    let Some(switch) = host.fail_closed_switch() else {
        return Verdict::NoSwitch;
    };
    let Some(min) = switch.min_version else {
        return Verdict::Write { copies: Vec::new() };
    };
    let copies: Vec<Copy> = copies(host, switch, home, path_var)
        .into_iter()
        .map(|path| Copy {
            version: version_of(&path),
            path,
        })
        .collect();
    let what = format!("`{}: {}`", switch.key, switch.value());
    let names = host.executables().join("`, `");
    if copies.is_empty() {
        return Verdict::Withhold {
            why: format!(
                "no `{names}` was found on PATH or where {} installs itself, so {what} (which needs {} {min} or later) was not written",
                host.display_name(),
                host.display_name()
            ),
        };
    }
    let short: Vec<String> = copies
        .iter()
        .filter_map(|c| {
            let shown = crate::escape::escape(&c.path.to_string_lossy());
            match &c.version {
                Ok(v) if at_least(v, min) => None,
                Ok(v) => Some(format!(
                    "`{shown}` is {}, older than {min}",
                    crate::escape::escape(v)
                )),
                Err(e) => Some(format!("`{shown}` did not tell its version ({e})")),
            }
        })
        .collect();
    if short.is_empty() {
        Verdict::Write { copies }
    } else {
        Verdict::Withhold {
            why: format!(
                "{}, so {what} (which {} {min} and later honour) was not written",
                short.join("; "),
                host.display_name()
            ),
        }
    }
}

/// Every copy of the host's executables: on `PATH` (absolute entries),
/// then at the switch's install places; each file once.
fn copies(host: &Adapter, switch: &FailClosedSwitch, home: &Path, path_var: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if !is_executable(&p) {
            return;
        }
        let real = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        if !seen.contains(&real) {
            seen.push(real);
            found.push(p);
        }
    };
    for dir in std::env::split_paths(path_var).filter(|d| d.is_absolute()) {
        for exe in host.executables() {
            add(dir.join(exe));
        }
    }
    for pattern in switch.installs {
        let expanded = match pattern.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => PathBuf::from(pattern),
        };
        for p in expand(&expanded) {
            add(p);
        }
    }
    found
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The paths `pattern` names, where a component holding `*` matches any
/// name in its directory with the same text around the star.
fn expand(pattern: &Path) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::new()];
    for comp in pattern.components() {
        let part = comp.as_os_str().to_string_lossy();
        match part.split_once('*') {
            None => out.iter_mut().for_each(|p| p.push(comp)),
            Some((head, tail)) => {
                let mut next = Vec::new();
                for dir in &out {
                    let Ok(rd) = std::fs::read_dir(dir) else {
                        continue;
                    };
                    let mut names: Vec<String> = rd
                        .filter_map(|e| e.ok()?.file_name().into_string().ok())
                        .filter(|n| {
                            n.len() >= head.len() + tail.len()
                                && n.starts_with(head)
                                && n.ends_with(tail)
                        })
                        .collect();
                    names.sort();
                    next.extend(names.into_iter().map(|n| dir.join(n)));
                }
                out = next;
            }
        }
    }
    out
}

/// What `path --version` says, as a version number.
fn version_of(path: &Path) -> Result<String, String> {
    let mut cmd = Command::new(path);
    cmd.arg("--version");
    let f = process::run(cmd, b"", VERSION_TIMEOUT).map_err(|e| format!("cannot run it: {e}"))?;
    if f.timed_out {
        return Err(format!(
            "`--version` did not answer within {} s",
            VERSION_TIMEOUT.as_secs()
        ));
    }
    parse_version(&f.stdout).ok_or_else(|| "`--version` printed no version".to_owned())
}

/// The first word of `text` that is a dotted version (`2.1.332 (Claude
/// Code)`, `v1.2`).
fn parse_version(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|w| w.trim_start_matches('v'))
        .find(|w| numbers(w).is_some())
        .map(str::to_owned)
}

fn numbers(v: &str) -> Option<Vec<u64>> {
    let parts: Option<Vec<u64>> = v.split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty())
}

/// Whether version `v` is `min` or later, compared part by part.
fn at_least(v: &str, min: &str) -> bool {
    match (numbers(v), numbers(min)) {
        (Some(mut a), Some(mut b)) => {
            let n = a.len().max(b.len());
            a.resize(n, 0);
            b.resize(n, 0);
            a >= b
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fake(dir: &Path, name: &str, script: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn versions_compare_by_part() {
        assert_eq!(
            parse_version("2.1.332 (Claude Code)\n").as_deref(),
            Some("2.1.332")
        );
        assert_eq!(parse_version("claude v2.2").as_deref(), Some("2.2"));
        assert_eq!(parse_version("Claude Code"), None);
        assert!(at_least("2.1.332", "2.1.295"));
        assert!(at_least("2.1.295", "2.1.295"));
        assert!(at_least("2.2", "2.1.295"));
        assert!(at_least("10.0.0", "2.1.295"));
        assert!(!at_least("2.1.294", "2.1.295"));
        assert!(!at_least("2.1.30", "2.1.295"));
        assert!(!at_least("x", "2.1.295"));
    }

    #[test]
    fn written_only_when_every_copy_is_new_enough() {
        let claude = crate::hosts::adapter("claude-code").unwrap();
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let bin = t.path().join("bin");
        let path = bin.to_string_lossy().into_owned();

        // None found: left out, and said so.
        let v = decide(claude, &home, &path);
        assert!(
            matches!(&v, Verdict::Withhold { why } if why.contains("no `claude` was found")),
            "{v:?}"
        );

        fake(&bin, "claude", "echo '2.1.332 (Claude Code)'");
        let v = decide(claude, &home, &path);
        assert!(v.writes(), "{v:?}");

        // An older copy bundled with an editor holds it back.
        let ext = home.join(
            ".vscode/extensions/anthropic.claude-code-2.1.100-linux-x64/resources/native-binary",
        );
        let old = fake(&ext, "claude", "echo '2.1.100 (Claude Code)'");
        let v = decide(claude, &home, &path);
        let Verdict::Withhold { why } = &v else {
            panic!("{v:?}")
        };
        assert!(
            why.contains(&format!(
                "`{}` is 2.1.100, older than 2.1.295",
                old.display()
            )),
            "{why}"
        );

        // So does one that does not answer.
        std::fs::remove_file(&old).unwrap();
        fake(&home.join(".local/bin"), "claude", "sleep 30");
        let t0 = std::time::Instant::now();
        let v = decide(claude, &home, &path);
        assert!(t0.elapsed() < VERSION_TIMEOUT + Duration::from_secs(2));
        assert!(
            matches!(&v, Verdict::Withhold { why } if why.contains("did not answer")),
            "{v:?}"
        );

        // A host without a switch, and one whose switch needs no version.
        assert_eq!(
            decide(crate::hosts::adapter("codex").unwrap(), &home, &path),
            Verdict::NoSwitch
        );
        assert!(decide(crate::hosts::adapter("cursor").unwrap(), &home, "").writes());
    }

    #[test]
    fn a_symlinked_copy_counts_once() {
        let claude = crate::hosts::adapter("claude-code").unwrap();
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let real = fake(&home.join(".claude/local"), "claude", "echo 2.1.300");
        let bin = t.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(&real, bin.join("claude")).unwrap();
        let Verdict::Write { copies } = decide(claude, &home, &bin.to_string_lossy()) else {
            panic!()
        };
        assert_eq!(copies.len(), 1, "{copies:?}");
    }
}
