//! The environment a hook process gets, and nothing more: the spec's fixed
//! allowlist, so a secret in the host's shell never reaches a hook unless a
//! registration names it (`command.env`, `command.envPassthrough`) or the
//! host running the shim sets it for its hooks (the adapter's `hookEnv`).

use std::collections::BTreeMap;

use crate::env_vars::HOOK_INHERITED;

/// Builds a hook's complete environment: the allowlisted names
/// (`PATH HOME TMPDIR LANG LC_ALL TERM`) from `ambient` when set, then
/// `fixed` (the `KERYX_*` and `CLAUDE_PROJECT_DIR` pairs), then
/// `command_env`, each later source overriding an earlier one.
///
/// A name that is empty or contains `=` or NUL cannot be represented in an
/// environment block; it is dropped with a warning rather than letting it
/// redefine some other variable.
pub fn hook_env(
    ambient: &dyn Fn(&str) -> Option<String>,
    fixed: &[(&str, String)],
    command_env: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    hook_env_with(ambient, &[], fixed, command_env)
}

/// Whether `name` is one of `patterns`: an exact name, or a prefix ending in
/// `*` (`CLAUDE_CODE_*`). A lone `*` matches nothing.
pub fn name_matches(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => !prefix.is_empty() && name.starts_with(prefix),
        None => p == name,
    })
}

/// [`hook_env`] with `passthrough` as well: names (a `*` suffix for a
/// prefix) taken from `ambient` after the allowlist and before `fixed`, so
/// a host variable or one a registration names never replaces a `KERYX_*`
/// value. A prefix is looked up for each name the process environment
/// holds.
pub fn hook_env_with(
    ambient: &dyn Fn(&str) -> Option<String>,
    passthrough: &[String],
    fixed: &[(&str, String)],
    command_env: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut set = |name: &str, value: &str| {
        if name.is_empty() || name.contains(['=', '\0']) {
            tracing::warn!(
                name = name.escape_debug().to_string(),
                "dropping invalid env name"
            );
            return;
        }
        match env.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => value.clone_into(v),
            None => env.push((name.to_owned(), value.to_owned())),
        }
    };
    for name in HOOK_INHERITED {
        if let Some(value) = ambient(name) {
            set(name, &value);
        }
    }
    let mut names: Vec<String> = Vec::new();
    for p in passthrough {
        match p.strip_suffix('*') {
            Some("") => {}
            Some(prefix) => {
                let mut found: Vec<String> = std::env::vars_os()
                    .filter_map(|(k, _)| k.into_string().ok())
                    .filter(|k| k.starts_with(prefix))
                    .collect();
                found.sort();
                names.extend(found);
            }
            None => names.push(p.clone()),
        }
    }
    for name in &names {
        if let Some(value) = ambient(name) {
            set(name, &value);
        }
    }
    for (name, value) in fixed {
        set(name, value);
    }
    for (name, value) in command_env {
        set(name, value);
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passthrough_names_come_from_ambient_and_never_replace_fixed() {
        let ambient = |name: &str| match name {
            "CLAUDE_ENV_FILE" => Some("/s/env".to_owned()),
            "KERYX_HOOK_ID" => Some("forged".to_owned()),
            "GEMINI_API_KEY" => Some("secret".to_owned()),
            "PATH" => Some("/usr/bin".to_owned()),
            _ => None,
        };
        let fixed = [("KERYX_HOOK_ID", "h1".to_owned())];
        let pass = vec![
            "CLAUDE_ENV_FILE".to_owned(),
            "KERYX_HOOK_ID".to_owned(),
            "UNSET_ONE".to_owned(),
        ];
        let env = hook_env_with(&ambient, &pass, &fixed, &BTreeMap::new());
        let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("PATH", "/usr/bin"),
                ("CLAUDE_ENV_FILE", "/s/env"),
                ("KERYX_HOOK_ID", "h1"),
            ]
        );
    }

    #[test]
    fn name_patterns() {
        let p = vec![
            "CLAUDE_ENV_FILE".to_owned(),
            "CLAUDE_CODE_*".to_owned(),
            "*".to_owned(),
        ];
        assert!(name_matches(&p, "CLAUDE_ENV_FILE"));
        assert!(name_matches(&p, "CLAUDE_CODE_REMOTE"));
        assert!(!name_matches(&p, "CLAUDE_ENV_FILE2"));
        assert!(!name_matches(&p, "AWS_SECRET_ACCESS_KEY"));
    }

    #[test]
    fn allowlist_then_fixed_then_command_env() {
        let ambient = |name: &str| match name {
            "PATH" => Some("/usr/bin".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            "AWS_SECRET_ACCESS_KEY" => Some("hunter2".to_owned()),
            _ => None,
        };
        let fixed = [
            ("KERYX_HOOK_ID", "h1".to_owned()),
            ("CLAUDE_PROJECT_DIR", "/p".to_owned()),
        ];
        let command_env = BTreeMap::from([
            ("HOME".to_owned(), "/override".to_owned()),
            ("EXTRA".to_owned(), "1".to_owned()),
            ("BAD=NAME".to_owned(), "x".to_owned()),
        ]);
        let env = hook_env(&ambient, &fixed, &command_env);
        let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("PATH", "/usr/bin"),
                ("HOME", "/override"),
                ("KERYX_HOOK_ID", "h1"),
                ("CLAUDE_PROJECT_DIR", "/p"),
                ("EXTRA", "1"),
            ]
        );
    }
}
