//! The trust setting a user can opt into: `trust.pin_scripts` in
//! `$KERYX_HOME/runtime.toml`. It is read from the user's own keryx home
//! only (a `KERYX_HOME` inside the project is already refused by `paths`),
//! so a repository can never turn pinning off for itself.
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

use std::io::Read;

use crate::paths::Locations;

/// A runtime.toml larger than this is not a settings file.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustSettings {
    pub pin_scripts: bool,
    /// Why the setting could not be read, when it could not.
    pub warning: Option<String>,
}

/// Reads the trust settings. An unreadable or malformed file turns pinning
/// on, with a warning: a user who asked for pinning and then broke the file
/// must not silently lose it, and the stricter check is the safe guess.
pub fn read(loc: &Locations) -> TrustSettings {
    let path = loc.runtime_settings_file();
    let text = match read_limited(&path) {
        Ok(None) => return TrustSettings::default(),
        Ok(Some(text)) => text,
        Err(e) => return strict(format!("cannot read `{}`: {e}", path.display())),
    };
    match parse(&text) {
        Ok(pin_scripts) => TrustSettings {
            pin_scripts,
            warning: None,
        },
        Err(e) => strict(format!("`{}`: {e}", path.display())),
    }
}

fn strict(why: String) -> TrustSettings {
    TrustSettings {
        pin_scripts: true,
        warning: Some(format!(
            "{why}; treating `trust.pin_scripts` as true until it is fixed"
        )),
    }
}

fn read_limited(path: &std::path::Path) -> std::io::Result<Option<String>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut text = String::new();
    file.take(MAX_SETTINGS_BYTES).read_to_string(&mut text)?;
    Ok(Some(text))
}

/// `trust.pin_scripts` from the text of a runtime.toml; absent is false.
pub fn parse(text: &str) -> Result<bool, String> {
    let doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("is not valid TOML: {}", e.message()))?;
    let Some(trust) = doc.get("trust") else {
        return Ok(false);
    };
    let Some(item) = trust.get("pin_scripts") else {
        return Ok(false);
    };
    item.as_bool()
        .ok_or_else(|| "`trust.pin_scripts` must be true or false".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_a_user_writes() {
        assert_eq!(parse(""), Ok(false));
        assert_eq!(parse("profile = \"read-only-review\"\n"), Ok(false));
        assert_eq!(parse("[trust]\npin_scripts = true\n"), Ok(true));
        assert_eq!(parse("trust.pin_scripts = true\n"), Ok(true));
        assert_eq!(parse("trust = { pin_scripts = false }\n"), Ok(false));
        assert!(parse("[trust]\npin_scripts = \"yes\"\n").is_err());
        assert!(parse("[trust\n").is_err());
    }
}
