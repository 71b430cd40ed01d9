//! The environment a hook process gets, and nothing more: the spec's fixed
//! allowlist, so a secret in the host's shell never reaches a hook unless a
//! registration names it in `command.env`.

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
