//! The shim command line a host runs, `'<abs binary>' run <host>
//! <HostEvent> --snapshot <key>`, on a host whose adapter says so followed
//! by ` || <fallback>` (the refusal the command answers itself when the
//! shim cannot): how `install` writes it and how the installer, `doctor`
//! and the write gate know it again in a host file.

use std::path::Path;

/// The shim command for one host event. The binary is always single-quoted
/// so the string stays the same wherever it is installed (Codex keys its
/// hook trust on the command's hash). The snapshot is named by its
/// absolute directory, so no variable in the host's environment
/// (`KERYX_SNAPSHOT_ROOT`, `HOME`) can point the shim at another one.
pub fn shim_command(binary: &Path, host: &str, host_event: &str, snapshot: &Path) -> String {
    format!(
        "{} run {} {} --snapshot {}",
        sh_quote(&binary.to_string_lossy()),
        sh_word(host),
        sh_word(host_event),
        sh_word(&snapshot.to_string_lossy())
    )
}

/// `command` (a [`shim_command`] for `host_event` of `host`) as the host
/// is wired to run it: followed by ` || <fallback>` where the adapter has
/// one for that event, so a missing, crashing or killed shim still answers
/// the refusal on a host that would otherwise let the call run.
pub fn with_fallback(command: String, host: &crate::adapter::Adapter, host_event: &str) -> String {
    match host.shim_fallback(host_event) {
        Some(fallback) => format!("{command} || {fallback}"),
        None => command,
    }
}

/// A `--snapshot` value: an installed snapshot's absolute directory (what
/// `install` writes) or, as older wirings wrote it, its bare key, found
/// under the snapshot root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotArg<'a>(pub &'a str);

impl<'a> SnapshotArg<'a> {
    /// The snapshot's key: the directory's name.
    pub fn key(&self) -> &'a str {
        let value: &'a str = self.0;
        if Path::new(value).is_absolute() {
            Path::new(value)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(value)
        } else {
            value
        }
    }

    /// The directory holding the snapshot, when the value names it.
    pub fn root(&self) -> Option<&'a Path> {
        let path: &'a Path = Path::new(self.0);
        path.is_absolute().then(|| path.parent()).flatten()
    }
}

/// Single-quotes `s` for a POSIX shell.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `s` as is when the shell would read it back unchanged, else quoted.
fn sh_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@+=,".contains(c))
    {
        s.to_owned()
    } else {
        sh_quote(s)
    }
}

/// A command line read back: the binary, then `run <host> <event>`, then flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShimCommand {
    pub binary: String,
    pub host: String,
    pub host_event: String,
    /// The `--snapshot` value as written ([`SnapshotArg`]).
    pub snapshot: Option<String>,
}

impl ShimCommand {
    /// The key of the snapshot the command names.
    pub fn snapshot_key(&self) -> Option<String> {
        self.snapshot
            .as_deref()
            .map(|s| SnapshotArg(s).key().to_owned())
    }

    /// The key of the snapshot the command names by its directory, as
    /// `install` writes it; `None` for an older wiring's bare key, which
    /// `status` then counts as not wired, so `doctor --fix` rewrites it.
    pub fn installed_key(&self) -> Option<String> {
        let arg = SnapshotArg(self.snapshot.as_deref()?);
        arg.root()?;
        Some(arg.key().to_owned())
    }
}

/// Reads `command` as a keryx-hooks shim invocation: the first word is a
/// binary named `keryx-hooks` (any directory: the binary may have moved
/// since) or `current`, followed by ` run <host> <event>`; after it, only
/// exactly the ` || <fallback>` that host's adapter gives that event (any
/// other tail would run something of someone else's).
pub fn parse_shim_command(command: &str, current: Option<&Path>) -> Option<ShimCommand> {
    if let Some((head, tail)) = command.rsplit_once(" || ") {
        let parsed = parse_plain(head, current)?;
        let fallback = crate::adapter::adapter(&parsed.host)?.shim_fallback(&parsed.host_event)?;
        return (fallback == tail).then_some(parsed);
    }
    parse_plain(command, current)
}

/// [`parse_shim_command`] of a command with no fallback.
fn parse_plain(command: &str, current: Option<&Path>) -> Option<ShimCommand> {
    let words = sh_split(command)?;
    let (binary, rest) = words.split_first()?;
    let named = Path::new(binary)
        .file_name()
        .is_some_and(|n| n == "keryx-hooks");
    let is_current = current.is_some_and(|c| Path::new(binary) == c);
    if !(named || is_current) {
        return None;
    }
    let [run, host, host_event, flags @ ..] = rest else {
        return None;
    };
    if run != "run" {
        return None;
    }
    let snapshot = flags
        .iter()
        .position(|f| f == "--snapshot")
        .and_then(|i| flags.get(i + 1).cloned())
        .or_else(|| {
            flags
                .iter()
                .find_map(|f| f.strip_prefix("--snapshot=").map(str::to_owned))
        });
    Some(ShimCommand {
        binary: binary.clone(),
        host: host.clone(),
        host_event: host_event.clone(),
        snapshot,
    })
}

/// Splits a command line the way `sh` would for plain words, quotes and
/// backslashes; `None` for anything fancier (a variable, a pipe) that we
/// never write.
fn sh_split(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => cur.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => cur.push(chars.next()?),
                        '$' | '`' => return None,
                        c => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next()?);
            }
            '$' | '`' | '|' | '&' | ';' | '<' | '>' | '(' | ')' | '\n' => return None,
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

/// Whether `command` is one of our entries for `host`.
pub fn is_ours(command: &str, host: &str, current: Option<&Path>) -> bool {
    parse_shim_command(command, current).is_some_and(|c| c.host == host)
}
