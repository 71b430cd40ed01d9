//! Loading, `list` and `validate`.

use crate::common::Env;

#[test]
fn list_on_a_fresh_home_prints_exactly_the_five_builtins() {
    let env = Env::new();
    let run = env.run(&["list", "--json"]);
    run.code(0);
    let v = run.json();
    let ids: Vec<&str> = v["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "keryx.ctx-guard",
            "keryx.security-check-input",
            "keryx.security-check-output",
            "keryx.learning-observer",
            "keryx.impact-evidence"
        ]
    );
    assert!(
        v["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["enabled"] == true)
    );
    assert_eq!(v["hooks"][3]["events"].as_array().unwrap().len(), 7);
}

#[test]
fn list_shows_each_hooks_effective_state_runtime_toml_included() {
    let env = Env::new();
    env.write(
        env.keryx_home().join("runtime.toml"),
        "[learning]\nenabled = false\n",
    );
    env.write(
        env.user_hooks(),
        serde_json::json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [
            {"id": "quiet", "class": "observe", "enabled": false,
             "command": {"argv": ["true"]}}
        ]}})
        .to_string(),
    );
    let v = env.run(&["list", "--json"]).json();
    let hook = |id: &str| {
        v["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .unwrap()
            .clone()
    };
    for id in ["keryx.learning-observer", "keryx.impact-evidence"] {
        let h = hook(id);
        assert_eq!(h["state"], "runtime-toml", "{h}");
        assert!(
            h["stateReason"].as_str().unwrap().contains("runtime.toml"),
            "{h}"
        );
    }
    let guard = hook("keryx.ctx-guard");
    assert_eq!(guard["state"], "on");
    assert_eq!(guard["effectiveRunsIn"], "unsandboxed");
    assert_eq!(hook("quiet")["state"], "disabled");
    assert_eq!(hook("quiet")["effectiveRunsIn"], "sandbox");

    let text = env.run(&["list"]);
    text.code(0)
        .stdout_has("  effective: off, runtime.toml turns it off (`[learning] enabled = false`)\n")
        .stdout_has(
            "  effective: off, runtime.toml leaves it off (`[impact] enabled` is not true)\n",
        )
        .stdout_has("  effective: on, runsIn=unsandboxed\n")
        .stdout_has("  effective: off, it is disabled (\"enabled\": false in `");
}

mod fixtures {
    use std::path::{Path, PathBuf};

    use keryx_hooks::config::load::{Sources, load};

    fn dir(kind: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/configs")
            .join(kind)
    }

    fn sources(file: &Path, cache: Option<PathBuf>) -> Sources {
        Sources {
            user_file: file.to_path_buf(),
            project_file: None,
            project_root: None,
            cache_dir: cache,
        }
    }

    fn json_files(kind: &str) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir(kind))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        v.sort();
        assert!(!v.is_empty());
        v
    }

    #[test]
    fn every_valid_fixture_loads() {
        for f in json_files("valid") {
            let loaded = load(&sources(&f, None));
            assert!(loaded.ok(), "{}: {:?}", f.display(), loaded.diagnostics);
        }
    }

    /// Each invalid fixture has a `.expect` file: the diagnostic code, and
    /// for located errors `line:col`.
    #[test]
    fn every_invalid_fixture_is_rejected_with_its_diagnostic() {
        for f in json_files("invalid") {
            let expect = std::fs::read_to_string(f.with_extension("expect")).unwrap();
            let mut parts = expect.split_whitespace();
            let code = parts.next().unwrap();
            let at = parts.next();
            let loaded = load(&sources(&f, None));
            assert!(!loaded.ok(), "{} loaded", f.display());
            assert!(
                loaded
                    .registrations
                    .iter()
                    .all(|r| r.scope == keryx_hooks::config::model::Scope::Builtin),
                "{}: nothing from a failed file is applied",
                f.display()
            );
            let d = loaded.errors().find(|d| d.code == code).unwrap_or_else(|| {
                panic!("{}: no {code} in {:?}", f.display(), loaded.diagnostics)
            });
            assert_eq!(
                d.path.as_deref(),
                Some(f.as_path()),
                "diagnostic names the file"
            );
            if let Some(at) = at {
                assert_eq!(
                    format!("{}:{}", d.line.unwrap(), d.column.unwrap()),
                    at,
                    "{}",
                    f.display()
                );
            }
        }
    }

    /// A cache entry planted for an invalid file is never trusted: the
    /// typed conversion rejects it on its own.
    #[test]
    fn a_planted_cache_entry_cannot_make_an_invalid_file_load() {
        let cache = tempfile::tempdir().unwrap();
        for f in json_files("invalid") {
            let bytes = std::fs::read(&f).unwrap();
            let key = keryx_hooks::config::schema::cache_key(&bytes);
            std::fs::write(cache.path().join(&key), &key).unwrap();
            let loaded = load(&sources(&f, Some(cache.path().to_path_buf())));
            assert!(
                !loaded.ok(),
                "{} loaded through a planted cache entry",
                f.display()
            );
        }
    }

    #[test]
    fn valid_files_are_cached_and_still_load() {
        let cache = tempfile::tempdir().unwrap();
        for f in json_files("valid") {
            assert!(load(&sources(&f, Some(cache.path().to_path_buf()))).ok());
            let key = keryx_hooks::config::schema::cache_key(&std::fs::read(&f).unwrap());
            assert!(
                cache.path().join(&key).exists(),
                "{} not cached",
                f.display()
            );
            assert!(load(&sources(&f, Some(cache.path().to_path_buf()))).ok());
        }
    }
}

mod bad_input {
    use crate::common::Env;

    fn validate_fails_with(env: &Env, code: &str) -> String {
        let run = env.run(&["validate"]);
        run.code(1).stdout_has(code);
        run.stdout.clone()
    }

    #[test]
    fn a_50_mb_hooks_file_is_refused_without_reading_it() {
        let env = Env::new();
        let f = std::fs::File::create({
            std::fs::create_dir_all(env.keryx_home()).unwrap();
            env.user_hooks()
        })
        .unwrap();
        f.set_len(50 * 1024 * 1024).unwrap();
        validate_fails_with(&env, "hook-config-too-large");
    }

    #[test]
    fn json_nested_100000_deep_is_a_clean_error() {
        let env = Env::new();
        env.write(env.user_hooks(), "[".repeat(100_000));
        let out = validate_fails_with(&env, "hook-config-invalid-json");
        assert!(out.contains("recursion limit"), "{out}");
    }

    #[test]
    fn a_directory_where_the_file_should_be() {
        let env = Env::new();
        std::fs::create_dir_all(env.user_hooks()).unwrap();
        let out = validate_fails_with(&env, "hook-config-unreadable");
        assert!(out.contains("is a directory"), "{out}");
    }

    #[test]
    fn a_project_hooks_file_symlinked_outside_the_project_is_refused_naming_the_target() {
        let env = Env::new();
        let outside = env.write(
            env.home.join("elsewhere/hooks.json"),
            r#"{"schemaVersion":"1.0.0","hooks":{}}"#,
        );
        std::fs::create_dir_all(env.project.join(".metaproject")).unwrap();
        std::os::unix::fs::symlink(&outside, env.project_hooks()).unwrap();
        let out = validate_fails_with(&env, "hook-config-outside-project");
        assert!(out.contains(&outside.display().to_string()), "{out}");
    }

    #[test]
    fn a_symlinked_metaproject_directory_pointing_outside_is_refused() {
        let env = Env::new();
        env.write(
            env.home.join("elsewhere/hooks.json"),
            r#"{"schemaVersion":"1.0.0","hooks":{}}"#,
        );
        std::os::unix::fs::symlink(env.home.join("elsewhere"), env.project.join(".metaproject"))
            .unwrap();
        validate_fails_with(&env, "hook-config-outside-project");
    }

    #[test]
    fn validate_reports_path_line_col_and_argv0_warnings() {
        let env = Env::new();
        env.write(
            env.project_hooks(),
            "{\n  \"schemaVersion\": \"1.0.0\",\n  \"hooks\": {\n    \"Stop\": [\n      {\"id\": \"s1\", \"matcher\": \"Bash\", \"class\": \"gate\", \"command\": {\"argv\": [\"x\"]}}\n    ]\n  }\n}\n",
        );
        let run = env.run(&["validate"]);
        run.code(1);
        let want = format!("{}:5:31: error:", env.project_hooks().display());
        run.stdout_has(&want).stdout_has("hook-matcher-not-allowed");

        env.write(
            env.project_hooks(),
            r#"{"schemaVersion":"1.0.0","hooks":{"Stop":[{"id":"s1","class":"gate","command":{"argv":["no-such-binary-anywhere"]}}]}}"#,
        );
        env.run(&["validate"])
            .code(0)
            .stdout_has("warning:")
            .stdout_has("hook-argv0-unresolved");
        let v = env.run(&["validate", "--json", "--ci"]).json();
        assert_eq!(v["ok"], true);
        assert_eq!(v["diagnostics"][0]["code"], "hook-argv0-unresolved");
    }

    /// A property or value the schema does not know, close to one it
    /// does, is told with the name meant: by case and separators, by a few
    /// edits, or where it belongs (inside `command`, or beside it).
    #[test]
    fn validate_suggests_the_name_meant_for_a_near_miss() {
        let env = Env::new();
        env.write(
            env.user_hooks(),
            r#"{
  "schemaVersion": "1.0.0",
  "hooks": {
    "PreToolUs": [],
    "Stopp": [],
    "PreToolUse": [
      {"id": "lint", "class": "observer", "timeout": 3000, "runs_in": "sandbox",
       "matchers": "Bash", "cwd": "scripts",
       "command": {"argv": ["true"], "env_passthrough": ["CI"], "timeoutMs": 100}},
      {"id": "guard", "class": "gates", "runsIn": "sandboxed", "env": {},
       "profiles": ["read-only"], "command": {"argv": ["true"]}},
      {"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gates"},
      {"id": "odd", "class": "gate", "failOpen": true, "command": {"argv": ["true"]}}
    ]
  },
  "hook": {}
}
"#,
        );
        let run = env.run(&["validate"]);
        run.code(1);
        assert_eq!(run.stderr, "");
        insta::assert_snapshot!(env.filters().apply(&run.stdout));
        let v = env.run(&["validate", "--json"]).json();
        let messages: Vec<&str> = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["message"].as_str().unwrap())
            .collect();
        assert!(
            messages.contains(
                &"\"observer\" is not one of \"gate\", \"gate-advisory\" or 2 other candidates \
                  (as a hook registration); did you mean `observe`?"
            ),
            "{messages:#?}"
        );
    }

    #[test]
    fn the_worked_example_validates() {
        let env = Env::new();
        let example = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/configs/valid/worked-example.json"
        ))
        .unwrap();
        env.write(env.project_hooks(), example);
        env.run(&["validate"]).code(0).stdout_has("ok:");
    }
}

mod overrides {
    use crate::common::Env;

    fn enabled(env: &Env, id: &str) -> bool {
        let v = env.run(&["list", "--json"]).json();
        v["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .unwrap()["enabled"]
            .as_bool()
            .unwrap()
    }

    #[test]
    fn a_project_cannot_turn_off_a_builtin_gate() {
        let env = Env::new();
        env.write(env.project_hooks(), r#"{"schemaVersion":"1.0.0","hooks":{"PreToolUse":[{"id":"keryx.ctx-guard","enabled":false,"acknowledge":"disable-builtin-gate"}]}}"#);
        assert!(enabled(&env, "keryx.ctx-guard"));
        env.run(&["list"])
            .code(0)
            .stderr_has("hook-override-ignored");
    }

    #[test]
    fn the_user_can_turn_off_a_gate_only_with_the_acknowledgement() {
        let env = Env::new();
        env.write(env.user_hooks(), r#"{"schemaVersion":"1.0.0","hooks":{"PreToolUse":[{"id":"keryx.ctx-guard","enabled":false}]}}"#);
        assert!(enabled(&env, "keryx.ctx-guard"));
        env.write(env.user_hooks(), r#"{"schemaVersion":"1.0.0","hooks":{"PreToolUse":[{"id":"keryx.ctx-guard","enabled":false,"acknowledge":"disable-builtin-gate"}]}}"#);
        assert!(!enabled(&env, "keryx.ctx-guard"));
        let v = env.run(&["list", "--json"]).json();
        assert_eq!(
            v["disabledBuiltinGates"],
            serde_json::json!(["keryx.ctx-guard"])
        );
    }

    #[test]
    fn the_learning_observer_can_be_turned_off_from_either_scope() {
        for user in [true, false] {
            let env = Env::new();
            let file = if user {
                env.user_hooks()
            } else {
                env.project_hooks()
            };
            env.write(file, r#"{"schemaVersion":"1.0.0","hooks":{"Stop":[{"id":"keryx.learning-observer","enabled":false}]}}"#);
            assert!(!enabled(&env, "keryx.learning-observer"));
        }
    }

    #[test]
    fn layers_merge_in_order_builtin_user_project() {
        let env = Env::new();
        env.write(env.user_hooks(), r#"{"schemaVersion":"1.0.0","hooks":{"Stop":[{"id":"u-b","class":"observe","command":{"argv":["true"]}},{"id":"u-a","class":"observe","command":{"argv":["true"]}}]}}"#);
        env.write(env.project_hooks(), r#"{"schemaVersion":"1.0.0","hooks":{"Stop":[{"id":"p-a","class":"observe","command":{"argv":["true"]}}]}}"#);
        let v = env.run(&["list", "--json"]).json();
        let ids: Vec<&str> = v["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            &ids[5..],
            ["u-b", "u-a", "p-a"],
            "file order within a layer; user before project"
        );
        assert_eq!(v["hooks"][5]["scope"], "user");
    }

    #[test]
    fn keryx_home_inside_the_project_is_refused() {
        let env = Env::new();
        let planted = env.project.join("planted");
        env.write(planted.join("hooks.json"), r#"{"schemaVersion":"1.0.0","hooks":{"Stop":[{"id":"planted","class":"observe","command":{"argv":["true"]}}]}}"#);
        let env = env.env("KERYX_HOME", planted.display().to_string());
        let run = env.run(&["list", "--json"]);
        run.stderr_has("resolves inside the project");
        assert!(!run.stdout.contains("\"planted\""));
    }
}

#[test]
fn list_json_matches_its_published_schema() {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/configs/valid/every-field.json"
        ))
        .unwrap(),
    );
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema/list-output.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    for args in [
        &["list", "--json"][..],
        &["list", "--json", "--profile", "unattended-untrusted"],
    ] {
        let v = env.run(args).json();
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{v:#}");
    }
    let v = env
        .run(&["list", "--json", "--profile", "unattended-untrusted"])
        .json();
    assert_eq!(
        v["hooks"][0]["effectiveRunsIn"], "sandbox",
        "built-ins stay sandboxed when isolation is required"
    );
    let v = env.run(&["list", "--json"]).json();
    assert_eq!(v["hooks"][0]["effectiveRunsIn"], "unsandboxed");
}
