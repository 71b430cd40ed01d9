//! The resolved, typed form of a hook registration, shared by every layer
//! (built-in, user, project). Everything downstream works on these types,
//! never on raw JSON.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::config::matcher::Matcher;
use crate::events::Event;

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),+ }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$variant),)+ _ => None }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

string_enum!(
    /// What a hook may do to the outcome, and how its failures are treated.
    HookClass { Gate = "gate", GateAdvisory = "gate-advisory", Observe = "observe", Context = "context" }
);
string_enum!(
    /// Which layer a registration came from; also its precedence rank.
    Scope { Builtin = "builtin", Managed = "managed", User = "user", Project = "project" }
);
string_enum!(RunsIn { Sandbox = "sandbox", Unsandboxed = "unsandboxed" });
string_enum!(Network { None = "none", Restricted = "restricted" });
string_enum!(
    /// The three security profiles a session can run under.
    Profile {
        ReadOnlyReview = "read-only-review",
        MonitoredTrustedLocal = "monitored-trusted-local",
        UnattendedUntrusted = "unattended-untrusted",
    }
);

impl HookClass {
    pub fn has_decision_power(self) -> bool {
        matches!(self, HookClass::Gate | HookClass::GateAdvisory)
    }
}

impl Profile {
    pub const DEFAULT: Profile = Profile::MonitoredTrustedLocal;

    /// Under a required-fail-closed isolation profile nothing runs unsandboxed.
    pub fn isolation_required(self) -> bool {
        self == Profile::UnattendedUntrusted
    }
}

/// A spawned command: argv is executed directly, never through a shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    /// Applied last, over the allowlisted environment. Sorted by key.
    pub env: BTreeMap<String, String>,
    /// `envPassthrough`: ambient variables the hook gets as they are (a
    /// notifier's `DISPLAY`, a webhook URL), in file order.
    pub env_passthrough: Vec<String>,
    /// `protocol`: the host whose hook contract the command speaks (its
    /// payload in, its reading of the answer and of failures out). `None`:
    /// the spec's own protocol.
    pub protocol: Option<Protocol>,
}

/// A command written for a host's own hooks: which host, and whether its
/// failures deny as a keryx gate's do (`failClosed`) instead of having the
/// effect that host gives them.
#[derive(Debug, Clone, Copy)]
pub struct Protocol {
    pub host: &'static crate::adapter::Adapter,
    pub fail_closed: bool,
}

impl PartialEq for Protocol {
    fn eq(&self, other: &Protocol) -> bool {
        self.host.name() == other.host.name() && self.fail_closed == other.fail_closed
    }
}

impl Eq for Protocol {}

/// The two in-process built-ins run through injectable ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinPort {
    LearningObserver,
    ImpactEvidence,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handler {
    Command(CommandSpec),
    /// Only the two fixed built-in declarations use this; the schema makes it
    /// unreachable from a user or project file.
    Builtin(BuiltinPort),
}

/// Marker in a built-in argv: replaced by the running binary's own path.
pub const SELF_EXE: &str = "keryx-hooks";

/// One hook on one event.
#[derive(Debug, Clone)]
pub struct Registration {
    pub id: String,
    pub event: Event,
    pub matcher: Matcher,
    /// `if`: the calls of a matched tool it runs on (a permission rule).
    pub condition: Option<crate::config::condition::Condition>,
    pub class: HookClass,
    pub handler: Handler,
    pub timeout_ms: u64,
    pub runs_in: RunsIn,
    pub network: Network,
    /// `sandbox.writable` as written: extra paths the hook may write inside
    /// the sandbox (`~/…` in the home, absolute, or relative to the
    /// project), none of them covering a protected path.
    pub sandbox_writable: Vec<String>,
    pub applies_to_child_agents: bool,
    /// Empty means every profile.
    pub profiles: Vec<Profile>,
    pub enabled: bool,
    pub description: Option<String>,
    pub scope: Scope,
    /// The file it came from (None for built-ins).
    pub source: Option<PathBuf>,
    /// Position within its layer, for the deterministic merge order.
    pub index: usize,
}

impl Registration {
    pub const DEFAULT_TIMEOUT_MS: u64 = 5000;
    pub const MAX_TIMEOUT_MS: u64 = 60_000;

    pub fn applies_to_profile(&self, profile: Profile) -> bool {
        self.profiles.is_empty() || self.profiles.contains(&profile)
    }

    /// Whether this hook's decision on `event` counts: a gate's on a
    /// gate-capable event, and a host-native gate's on an event its host
    /// lets a hook block ([`HookProtocol::blocks`]).
    ///
    /// [`HookProtocol::blocks`]: crate::adapter::spec::HookProtocol::blocks
    pub fn decides_on(&self, event: Event) -> bool {
        self.class.has_decision_power()
            && (event.is_gate_capable()
                || self
                    .command()
                    .and_then(|c| c.protocol)
                    .and_then(|p| p.host.hook_protocol())
                    .is_some_and(|h| h.blocks(event)))
    }

    pub fn command(&self) -> Option<&CommandSpec> {
        match &self.handler {
            Handler::Command(c) => Some(c),
            Handler::Builtin(_) => None,
        }
    }

    /// The built-in command hooks spawn this binary, which is the same trust
    /// domain as the caller: off required-fail-closed they run unsandboxed.
    pub fn effective_runs_in(&self, profile: Profile) -> RunsIn {
        if self.scope == Scope::Builtin && !profile.isolation_required() {
            RunsIn::Unsandboxed
        } else {
            self.runs_in
        }
    }

    /// The timeout actually enforced.
    pub fn clamped_timeout_ms(&self) -> u64 {
        self.timeout_ms.clamp(1, Self::MAX_TIMEOUT_MS)
    }

    /// Where a user hook's relative scripts live: the directory of the user
    /// hooks file it was loaded from (an installed snapshot, or
    /// `$KERYX_HOME` for the live file). `None` for other layers.
    pub fn user_dir(&self) -> Option<&Path> {
        if self.scope != Scope::User {
            return None;
        }
        self.source.as_deref()?.parent()
    }

    /// The argv elements of a user hook that name a script in
    /// [`Self::user_dir`], with the path each resolves to: a relative
    /// `argv[0]` with a `/` in it (`./scripts/gate.sh`, `scripts/gate.sh`);
    /// a later element that starts with `./`, or names a file that exists
    /// there (`["bash", "scripts/x.sh"]`). Options and whatever follows a
    /// `-c` (a shell's command string) are left alone. Empty for other
    /// layers.
    pub fn user_scripts(&self) -> Vec<(usize, PathBuf)> {
        let (Some(dir), Some(cmd)) = (self.user_dir(), self.command()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, arg) in cmd.argv.iter().enumerate() {
            if i > 0 && arg == "-c" {
                break;
            }
            let path = Path::new(arg);
            if arg.is_empty() || path.is_absolute() || arg.starts_with('-') {
                continue;
            }
            let rel = arg.strip_prefix("./").unwrap_or(arg);
            let named = if i == 0 {
                arg.contains('/')
            } else {
                arg.starts_with("./") || dir.join(rel).is_file()
            };
            if named && !rel.is_empty() {
                out.push((i, dir.join(rel)));
            }
        }
        out
    }

    /// The argv a command hook runs with: [`Self::user_scripts`] replaced
    /// by their paths in the user hooks' directory, never the project's.
    pub fn resolved_argv(&self) -> Vec<String> {
        let Some(cmd) = self.command() else {
            return Vec::new();
        };
        let mut argv = cmd.argv.clone();
        for (i, path) in self.user_scripts() {
            argv[i] = path.to_string_lossy().into_owned();
        }
        argv
    }
}
