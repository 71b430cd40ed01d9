//! The trust digest: sha256 over the canonical, executable shape of a
//! project's full command-hook registrations. It is computed from the typed
//! registrations the loader produced (defaults filled in), never from the
//! file's bytes, so formatting, key order, descriptions and Keryx's own
//! bookkeeping cannot revoke trust, while any change to what runs does.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::base::text::hex;
use crate::config::model::{Registration, Scope};
use crate::hash::{self, FileDigest};
use crate::paths;

/// Every digest is written `sha256:<64 hex>`.
pub const PREFIX: &str = "sha256:";

/// Bumped whenever the canonical form changes, so an old record reads as
/// "changed" rather than silently matching a different shape.
const DOMAIN: &[u8] = b"keryx-hooks project-hook trust v1\n";

/// A file larger than this is not pinned: `trust` refuses to record a
/// version that pins one, and a pinned digest that names one never matches.
/// Below it every byte is hashed; a stat cache keeps that from being read
/// again on every event.
pub const MAX_PINNED_BYTES: u64 = 64 * 1024 * 1024;

/// The prefix of a [`PinnedFile::hash`] for a file over [`MAX_PINNED_BYTES`].
const TOO_LARGE: &str = "too large to pin: ";

/// The project's full command-hook registrations in digest order.
///
/// Events are taken in the canonical event order and each event's hooks in
/// file order: order within one event is executable (gates run in sequence
/// and the first deny stops the rest), order between events is not, so
/// moving a whole event's block around the file keeps trust.
pub fn command_hooks(regs: &[Registration]) -> Vec<&Registration> {
    let mut out: Vec<&Registration> = regs
        .iter()
        .filter(|r| r.scope == Scope::Project && r.command().is_some())
        .collect();
    out.sort_by_key(|r| (r.event, r.index));
    out
}

/// The canonical form of `hooks`: every executable field, defaults already
/// filled in by the loader, keys in one fixed order (`json!` keeps insertion
/// order with `preserve_order`), sets sorted. `description` is left out on
/// purpose: it changes nothing that runs.
pub fn canonical(hooks: &[&Registration]) -> Value {
    let entries: Vec<Value> = hooks
        .iter()
        .map(|r| {
            let cmd = r.command().expect("command_hooks keeps only command hooks");
            // A profile list is a set; its written order means nothing.
            let mut profiles: Vec<&str> = r.profiles.iter().map(|p| p.as_str()).collect();
            profiles.sort_unstable();
            // The env map is a BTreeMap already; pairs make the order explicit.
            let env: Vec<Value> = cmd.env.iter().map(|(k, v)| json!([k, v])).collect();
            let mut entry = json!({
                "event": r.event.as_str(),
                "id": r.id,
                "matcher": r.matcher.source(),
                "class": r.class.as_str(),
                "argv": cmd.argv,
                "cwd": cmd.cwd,
                "env": env,
                "timeoutMs": r.timeout_ms,
                "runsIn": r.runs_in.as_str(),
                "network": r.network.as_str(),
                "appliesToChildAgents": r.applies_to_child_agents,
                "profiles": profiles,
                "enabled": r.enabled,
            });
            // Only when present, so every digest recorded before the field
            // existed still matches. Kept in written order: the paths are a
            // set, but sorting would not make two spellings of one path equal.
            if !r.sandbox_writable.is_empty() {
                entry["sandboxWritable"] = json!(r.sandbox_writable);
            }
            // The same: only when present. A set of names; sorted, so the
            // order they are written in changes nothing.
            if !cmd.env_passthrough.is_empty() {
                let mut names: Vec<&str> = cmd.env_passthrough.iter().map(String::as_str).collect();
                names.sort_unstable();
                entry["envPassthrough"] = json!(names);
            }
            if let Some(c) = &r.condition {
                entry["if"] = json!(c.source());
            }
            // Which contract the answer is read with, and how failures
            // count: both change what a hook can decide.
            if let Some(p) = cmd.protocol {
                entry["protocol"] = json!(p.host.name());
                if p.fail_closed {
                    entry["failClosed"] = json!(true);
                }
            }
            entry
        })
        .collect();
    json!({ "hooks": entries })
}

/// One in-project file an argv token names, and the hash of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedFile {
    /// Path relative to the real project root, `/`-separated.
    pub rel: String,
    /// `sha256:<hex>` of every byte, or a marker when it cannot be read or
    /// is too large to pin.
    pub hash: String,
}

impl PinnedFile {
    /// The file's size, when it is over [`MAX_PINNED_BYTES`].
    pub fn too_large(&self) -> Option<u64> {
        self.hash.strip_prefix(TOO_LARGE)?.parse().ok()
    }
}

/// The digest of `hooks`; with `pinned`, the bytes of those files too.
pub fn digest(hooks: &[&Registration], pinned: Option<&[PinnedFile]>) -> String {
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update(canonical(hooks).to_string().as_bytes());
    if let Some(files) = pinned {
        let files: Vec<Value> = files.iter().map(|f| json!([f.rel, f.hash])).collect();
        h.update(b"\npinned-files\n");
        h.update(Value::Array(files).to_string().as_bytes());
    }
    format!("{PREFIX}{}", hex(&h.finalize()))
}

/// `digest` extended with the project file's `rules`, when it has any: a
/// rule puts text in front of the model, so trusting a project covers its
/// rules as well as its commands. A file without rules keeps the digest it
/// had before rules existed.
pub fn with_rules(digest: String, loaded: &crate::config::load::Loaded) -> String {
    let rules = loaded
        .file(crate::config::model::Scope::Project)
        .and_then(|f| f.doc.get("rules"))
        .filter(|r| r.as_array().is_some_and(|a| !a.is_empty()));
    let Some(rules) = rules else {
        return digest;
    };
    let mut h = Sha256::new();
    h.update(digest.as_bytes());
    h.update(b"\nrules\n");
    h.update(rules.to_string().as_bytes());
    format!("{PREFIX}{}", hex(&h.finalize()))
}

/// Whether the project file of `loaded` defines rules.
pub fn has_project_rules(loaded: &crate::config::load::Loaded) -> bool {
    loaded
        .rules
        .iter()
        .any(|r| r.scope == crate::config::model::Scope::Project)
}

/// A file inside the project that an argv token resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFile {
    /// The token as written (or the value part of `--flag=value`).
    pub token: String,
    /// Path relative to the real project root.
    pub rel: String,
    pub real: PathBuf,
}

/// Every argv token of `reg` that resolves to a regular file inside `root`.
///
/// Tokens resolve against the hook's working directory (the project root,
/// or `command.cwd` joined onto it) the way the runner spawns it; the value
/// of a `--flag=value` token is tried too, since `--config=x.sh` is as much
/// a file the hook reads as a bare `x.sh`. A token whose real path leaves
/// the project is not named: it is not the project's file to review.
pub fn project_files(reg: &Registration, root: &Path) -> Vec<ProjectFile> {
    let Some(cmd) = reg.command() else {
        return Vec::new();
    };
    let real_root = paths::real_path(root);
    let base = match &cmd.cwd {
        Some(d) => root.join(d),
        None => root.to_path_buf(),
    };
    let mut out: Vec<ProjectFile> = Vec::new();
    for arg in &cmd.argv {
        let mut candidates = vec![arg.as_str()];
        if let Some((_, value)) = arg.split_once('=') {
            candidates.push(value);
        }
        for token in candidates {
            if token.is_empty() || token.contains('\0') {
                continue;
            }
            let path = base.join(token);
            if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                continue;
            }
            let real = paths::real_path(&path);
            if !paths::is_inside(&real, &real_root) {
                continue;
            }
            let rel = real
                .strip_prefix(&real_root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| real.to_string_lossy().into_owned());
            if !out.iter().any(|f| f.real == real) {
                out.push(ProjectFile {
                    token: token.to_owned(),
                    rel,
                    real,
                });
            }
        }
    }
    out
}

/// The pinned-file list for `hooks`: each in-project file once, sorted by
/// its relative path so argv order and duplicates do not matter. Every byte
/// of each file is hashed.
pub fn pinned_files(hooks: &[&Registration], root: &Path) -> Vec<PinnedFile> {
    pinned_files_cached(hooks, root, None)
}

/// [`pinned_files`] with a stat cache (see [`pin_cache`]): a file whose
/// stat is unchanged since it was last hashed is not read again.
pub fn pinned_files_cached(
    hooks: &[&Registration],
    root: &Path,
    cache: Option<&Path>,
) -> Vec<PinnedFile> {
    let mut files: Vec<ProjectFile> = Vec::new();
    for r in hooks {
        for f in project_files(r, root) {
            if !files.iter().any(|g| g.real == f.real) {
                files.push(f);
            }
        }
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    let named: Vec<(String, PathBuf)> = files.into_iter().map(|f| (f.rel, f.real)).collect();
    let real_root = paths::real_path(root);
    let digests = hash::whole_file_digests(&real_root, &named, MAX_PINNED_BYTES, cache);
    named
        .into_iter()
        .zip(digests)
        .map(|((rel, _), d)| PinnedFile {
            rel,
            // An unreadable file still pins a state: when it becomes
            // readable (or changes from readable to not) the digest moves.
            hash: match d {
                FileDigest::Sha256(d) => format!("{PREFIX}{d}"),
                FileDigest::TooLarge(size) => format!("{TOO_LARGE}{size}"),
                FileDigest::Unreadable(kind) => format!("unreadable: {kind:?}"),
            },
        })
        .collect()
}

/// Where the pinned-file stat cache for the project at `root` lives under
/// the state dir.
pub fn pin_cache(state_dir: &Path, root: &Path) -> PathBuf {
    state_dir
        .join("pin-hash")
        .join(format!("{}.json", crate::paths::snapshot_key(root)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load::{Loaded, Sources, load};

    /// Loads `project` as a project hooks file in a fresh temp project.
    fn load_project(tmp: &Path, project: &str) -> Loaded {
        let root = tmp.join("proj");
        std::fs::create_dir_all(root.join(".metaproject")).unwrap();
        let file = root.join(".metaproject/hooks.json");
        std::fs::write(&file, project).unwrap();
        let loaded = load(&Sources {
            user_file: tmp.join("no-user-hooks.json"),
            project_file: Some(file),
            project_root: Some(root),
            cache_dir: None,
        });
        assert!(loaded.ok(), "{:?}", loaded.diagnostics);
        loaded
    }

    fn digest_of(project: &str) -> String {
        let tmp = tempfile::tempdir().unwrap();
        let loaded = load_project(tmp.path(), project);
        digest(&command_hooks(&loaded.registrations), None)
    }

    const BASE: &str = r#"{
      "schemaVersion": "1.0.0",
      "hooks": {
        "PreToolUse": [
          {"id": "no-rm", "matcher": "Bash", "class": "gate",
           "command": {"argv": ["/bin/sh", "-c", "exit 0"], "env": {"A": "1", "B": "2"}}},
          {"id": "second", "class": "observe", "command": {"argv": ["/bin/true"]}}
        ],
        "Stop": [
          {"id": "on-stop", "class": "observe", "command": {"argv": ["/bin/true"]}}
        ]
      }
    }"#;

    #[test]
    fn formatting_key_order_and_defaults_do_not_matter() {
        let base = digest_of(BASE);
        assert!(base.starts_with(PREFIX) && base.len() == PREFIX.len() + 64);
        // Reformatted onto one line, keys inside entries and env reordered,
        // defaults written out, event blocks swapped, a description added.
        let same = r#"{"hooks": {"Stop": [{"class": "observe", "id": "on-stop", "command": {"argv": ["/bin/true"]}, "description": "notes"}],
          "PreToolUse": [{"command": {"env": {"B": "2", "A": "1"}, "argv": ["/bin/sh", "-c", "exit 0"]}, "class": "gate", "matcher": "Bash", "id": "no-rm",
            "timeoutMs": 5000, "runsIn": "sandbox", "network": "none", "appliesToChildAgents": true, "enabled": true, "profiles": []},
            {"id": "second", "class": "observe", "matcher": "*", "command": {"argv": ["/bin/true"]}}]},
          "schemaVersion": "1.0.0"}"#;
        assert_eq!(digest_of(same), base);
    }

    #[test]
    fn sandbox_writable_is_digested_and_absent_leaves_old_digests_alone() {
        let base = digest_of(BASE);
        let widened = BASE.replacen(
            r#""id": "second","#,
            r#""id": "second", "sandbox": {"writable": ["~/.claude/hooks-logs"]},"#,
            1,
        );
        let other = widened.replacen("hooks-logs", "other-logs", 1);
        let empty = BASE.replacen(
            r#""id": "second","#,
            r#""id": "second", "sandbox": {"writable": []},"#,
            1,
        );
        assert_ne!(digest_of(&widened), base);
        assert_ne!(digest_of(&other), digest_of(&widened));
        assert_eq!(digest_of(&empty), base);
        let tmp = tempfile::tempdir().unwrap();
        let loaded = load_project(tmp.path(), BASE);
        let canon = canonical(&command_hooks(&loaded.registrations)).to_string();
        assert!(!canon.contains("sandboxWritable"), "{canon}");
    }

    #[test]
    fn overrides_and_bookkeeping_are_excluded() {
        let with_override = BASE.replacen(
            r#""Stop": ["#,
            r#""Stop": [{"id": "keryx.learning-observer", "enabled": false},"#,
            1,
        );
        let with_managed = with_override.replacen(
            r#""schemaVersion": "1.0.0","#,
            r#""schemaVersion": "1.0.0", "_keryxManaged": {"managedHookIds": ["keryx.learning-observer"]},"#,
            1,
        );
        assert_eq!(digest_of(&with_managed), digest_of(BASE));
    }

    #[test]
    fn anything_that_runs_differently_changes_it() {
        let base = digest_of(BASE);
        let edits = [
            (r#""exit 0""#, r#""exit 1""#),                         // argv
            (r#""A": "1""#, r#""A": "x""#),                         // env value
            (r#""matcher": "Bash""#, r#""matcher": "Bash|Write""#), // matcher
            (r#""class": "gate""#, r#""class": "observe""#),        // class
            (r#""id": "second""#, r#""id": "second-b""#),           // id
            (
                r#""id": "second","#,
                r#""id": "second", "runsIn": "unsandboxed","#,
            ),
            (r#""id": "second","#, r#""id": "second", "enabled": false,"#),
            (
                r#""id": "second","#,
                r#""id": "second", "timeoutMs": 6000,"#,
            ),
            (
                r#""id": "second","#,
                r#""id": "second", "network": "restricted","#,
            ),
            (
                r#""id": "second","#,
                r#""id": "second", "appliesToChildAgents": false,"#,
            ),
            (
                r#""id": "second","#,
                r#""id": "second", "profiles": ["read-only-review"],"#,
            ),
            (
                r#""id": "on-stop", "class": "observe", "command": {"argv": ["/bin/true"]"#,
                r#""id": "on-stop", "class": "observe", "command": {"argv": ["/bin/true"], "cwd": "sub""#,
            ),
            (r#""Stop": ["#, r#""SessionEnd": ["#), // event
            (
                r#""id": "on-stop", "class": "observe", "command": {"argv": ["/bin/true"]"#,
                r#""id": "on-stop", "class": "observe", "command": {"argv": ["/bin/true"], "envPassthrough": ["DISPLAY"]"#,
            ),
            (
                r#""id": "on-stop", "class": "observe", "command": {"argv": ["/bin/true"]"#,
                r#""id": "on-stop", "class": "observe", "command": {"argv": ["/bin/true"], "protocol": "codex""#,
            ),
        ];
        for (from, to) in edits {
            let edited = BASE.replacen(from, to, 1);
            assert_ne!(edited, BASE, "edit {from} did not apply");
            assert_ne!(digest_of(&edited), base, "{from} -> {to} kept the digest");
        }
    }

    #[test]
    fn order_within_one_event_matters() {
        let swapped = r#"{
          "schemaVersion": "1.0.0",
          "hooks": {
            "PreToolUse": [
              {"id": "second", "class": "observe", "command": {"argv": ["/bin/true"]}},
              {"id": "no-rm", "matcher": "Bash", "class": "gate",
               "command": {"argv": ["/bin/sh", "-c", "exit 0"], "env": {"A": "1", "B": "2"}}}
            ],
            "Stop": [
              {"id": "on-stop", "class": "observe", "command": {"argv": ["/bin/true"]}}
            ]
          }
        }"#;
        assert_ne!(digest_of(swapped), digest_of(BASE));
    }

    #[test]
    fn no_command_hooks_has_a_stable_digest() {
        let a = digest_of(r#"{"schemaVersion": "1.0.0", "hooks": {}}"#);
        let b = digest_of(
            r#"{"schemaVersion": "1.0.0", "hooks": {"Stop": [{"id": "keryx.learning-observer", "enabled": false}]}}"#,
        );
        assert_eq!(a, b);
    }

    #[test]
    fn pinned_files_follow_file_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = std::fs::canonicalize(tmp.path()).unwrap();
        let root = tmp.join("proj");
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join("scripts/a.sh"), "echo a\n").unwrap();
        std::fs::write(tmp.join("outside.sh"), "echo out\n").unwrap();
        let loaded = load_project(
            &tmp,
            r#"{"schemaVersion": "1.0.0", "hooks": {"Stop": [
              {"id": "pin-a", "class": "observe", "command": {"argv": ["/bin/sh", "scripts/a.sh", "--config=scripts/a.sh", "../outside.sh", "-c"]}}
            ]}}"#,
        );
        let hooks = command_hooks(&loaded.registrations);
        let files = project_files(hooks[0], &root);
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(files[0].rel, "scripts/a.sh");
        assert_eq!(files[0].token, "scripts/a.sh");

        let pinned = pinned_files(&hooks, &root);
        let before = digest(&hooks, Some(&pinned));
        assert_ne!(before, digest(&hooks, None));
        std::fs::write(root.join("scripts/a.sh"), "echo b\n").unwrap();
        let after = digest(&hooks, Some(&pinned_files(&hooks, &root)));
        assert_ne!(before, after);
        // The unpinned digest never looks at the script.
        assert_eq!(digest(&hooks, None), digest(&hooks, None));
    }
}
