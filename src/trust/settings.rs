//! The trust setting a user can opt into: `trust.pin_scripts` in
//! `$KERYX_HOME/runtime.toml`, as [`crate::settings`] reads it. It is read
//! from the user's own keryx home only (a `KERYX_HOME` inside the project
//! is already refused by `paths`), so a repository can never turn pinning
//! off for itself.
//!
//! # `trust.pin_scripts = true`
//!
//! By default trust covers the command line only, as the spec says: a hook
//! `["/bin/sh", "scripts/deploy.sh"]` stays trusted when `scripts/deploy.sh`
//! is rewritten. With pinning on, the digest also covers the bytes of every
//! file inside the project that an argv token (or the value of a
//! `--flag=value` token) resolves to, so editing such a script makes the
//! project "changed since trusted" until you trust it again.
//!
//! The trade-off, for the README:
//! - Every edit to a pinned script, including your own and every `git pull`
//!   that touches one, needs a new `keryx-hooks trust` before the hook runs
//!   again. That is the point, and also the cost.
//! - It pins only files named directly on argv. Whatever those scripts
//!   source, import or download is not covered; an inline `sh -c` command
//!   or a small self-contained script is what makes pinning meaningful.
//! - It is a check at load time, not a lock: the script is read again when
//!   the hook spawns, so a file rewritten in the instant between the check
//!   and the spawn is not caught.
//! - Files outside the project (system binaries, your own tools) are never
//!   pinned; trust them the way you trust anything else on your PATH.
//! - Turning pinning on does not by itself revoke trust: `trust` records
//!   both digests, so a project trusted while pinning was off is still
//!   trusted afterwards if its scripts are unchanged since then.

use crate::settings::Here;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustSettings {
    pub pin_scripts: bool,
    /// Why the setting could not be read, when it could not.
    pub warning: Option<String>,
}

/// Reads the trust settings. An unreadable or malformed file (or a
/// `trust.pin_scripts` that is not a boolean) turns pinning on, with a
/// warning: a user who asked for pinning and then broke the file must not
/// silently lose it, and the stricter check is the safe guess.
pub fn read(loc: &Here) -> TrustSettings {
    match &loc.settings().pin_scripts {
        Ok(pin_scripts) => TrustSettings {
            pin_scripts: *pin_scripts,
            warning: None,
        },
        Err(why) => TrustSettings {
            pin_scripts: true,
            warning: Some(format!(
                "{why}; treating `trust.pin_scripts` as true until it is fixed"
            )),
        },
    }
}
