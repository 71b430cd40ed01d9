//! Attempts to get a project's commands to run without the user's trust,
//! or with trust meant for something else: symlinks, case variants of the
//! project path, worktree and gitdir tricks, a hooks file swapped during an
//! event, the keryx home or the trust store steered into the project, and a
//! project file trying to widen what the runtime allows (catalogue case 37).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{
    Env, Run, claude_bash, claude_payload, deny_reason, project_hooks, sh_hook, user_hooks,
};

/// A project hook on Stop that leaves `marker` when it runs.
fn marker_hook(marker: &Path) -> Value {
    json!({"Stop": [sh_hook("proj", "observe", &format!("touch {}", marker.display()))]})
}

fn hooks_text(hooks: Value) -> String {
    serde_json::to_string_pretty(&json!({"schemaVersion": "1.0.0", "hooks": hooks})).unwrap()
}

/// `list --json` run in `dir`.
fn list_in(env: &Env, dir: &Path) -> Run {
    Run::from(
        env.cmd(&["list", "--json"])
            .current_dir(dir)
            .output()
            .unwrap(),
    )
}

/// Fires Claude Code's Stop with `cwd` = `dir`.
fn stop_in(env: &Env, dir: &Path) -> Run {
    let mut p = claude_payload(env, "Stop-basic.json");
    p["cwd"] = json!(dir);
    env.run_in_stdin(
        dir,
        &["run", "claude-code", "Stop"],
        p.to_string().as_bytes(),
    )
}

fn trust_state(run: &Run) -> String {
    run.json()["projectTrust"]["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A second checkout next to `env`'s project, with a `.git` directory.
fn sibling(env: &Env, name: &str) -> PathBuf {
    let dir = env.project.parent().unwrap().join(name);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    dir
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git is needed for the worktree tests");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bypass_a_metaproject_symlinked_into_a_trusted_project_borrows_no_trust() {
    let env = Env::new();
    let marker = env.project.join("ran");
    project_hooks(&env, marker_hook(&marker));
    env.run(&["trust", "--yes"]).code(0);

    for link_file in [false, true] {
        let other = sibling(&env, if link_file { "other-file" } else { "other-dir" });
        if link_file {
            std::fs::create_dir_all(other.join(".metaproject")).unwrap();
            std::os::unix::fs::symlink(env.project_hooks(), other.join(".metaproject/hooks.json"))
                .unwrap();
        } else {
            std::os::unix::fs::symlink(
                env.project.join(".metaproject"),
                other.join(".metaproject"),
            )
            .unwrap();
        }
        // The other checkout was never trusted: its refused file is set
        // aside (said as a warning), so nothing of it runs.
        let run = list_in(&env, &other);
        run.code(0);
        assert!(
            run.stdout.contains("hook-config-outside-project"),
            "{}",
            run.stdout
        );
        stop_in(&env, &other).code(0);
        assert!(
            !marker.exists(),
            "the trusted project's hook ran for another checkout"
        );
        // Nor does the borrowed file deny anything there.
        let mut p = claude_bash(&env, "sym", "ls");
        p["cwd"] = json!(other);
        let run = env.run_in_stdin(
            &other,
            &["run", "claude-code", "PreToolUse"],
            p.to_string().as_bytes(),
        );
        run.code(0);
        assert_eq!(run.stdout, "", "{}", run.stderr);
        assert!(!marker.exists());
    }
    // The trusted project's own hook does run.
    stop_in(&env, &env.project).code(0);
    assert!(marker.exists());
}

#[test]
fn bypass_a_hooks_file_symlink_retargeted_after_trust_is_a_change() {
    let env = Env::new();
    let marker = env.project.join("ran");
    let evil = env.project.join("evil-ran");
    let dir = env.project.join(".metaproject");
    env.write(dir.join("v1.json"), hooks_text(marker_hook(&marker)));
    env.write(dir.join("v2.json"), hooks_text(marker_hook(&evil)));
    std::os::unix::fs::symlink("v1.json", dir.join("hooks.json")).unwrap();
    env.run(&["trust", "--yes"]).code(0);
    stop_in(&env, &env.project).code(0);
    assert!(marker.exists());

    std::fs::remove_file(dir.join("hooks.json")).unwrap();
    std::os::unix::fs::symlink("v2.json", dir.join("hooks.json")).unwrap();
    assert_eq!(trust_state(&list_in(&env, &env.project)), "changed");
    stop_in(&env, &env.project).code(0);
    assert!(!evil.exists(), "a retargeted hooks file ran untrusted");
}

/// `/…/PROJ` is not part of `/…/proj` on a case-sensitive filesystem: a
/// hooks file that leads there is outside the project.
#[test]
fn bypass_a_hooks_file_leading_into_a_case_variant_sibling_is_outside_the_project() {
    let env = Env::new();
    let marker = env.project.join("ran");
    let variant = env.project.parent().unwrap().join("PROJ");
    env.write(variant.join("hooks.json"), hooks_text(marker_hook(&marker)));
    std::fs::create_dir_all(env.project.join(".metaproject")).unwrap();
    std::os::unix::fs::symlink(variant.join("hooks.json"), env.project_hooks()).unwrap();
    let run = env.run(&["validate"]);
    run.code(1).stdout_has(&format!(
        "resolves to `{}`, outside the project `{}`",
        variant.join("hooks.json").display(),
        env.project.display()
    ));
    env.run(&["trust", "--yes"])
        .code(1)
        .stderr_has("outside the project");
    stop_in(&env, &env.project).code(0);
    assert!(!marker.exists());
}

/// On a case-sensitive filesystem `Proj` and `proj` are two checkouts, and
/// trusting one never trusts the other: the store is keyed by the exact
/// real path. (On a case-insensitive one they are one directory; a path
/// spelled differently from the one trusted reads as untrusted, never the
/// other way round: docs/SECURITY.md.)
#[test]
fn bypass_case_variants_of_the_project_path_are_distinct_projects() {
    let env = Env::new();
    let lower = env.project.clone();
    let upper = sibling(&env, "Proj");
    let upper_marker = upper.join("ran");
    let lower_marker = lower.join("ran");
    env.write(
        lower.join(".metaproject/hooks.json"),
        hooks_text(marker_hook(&lower_marker)),
    );
    env.write(
        upper.join(".metaproject/hooks.json"),
        hooks_text(marker_hook(&upper_marker)),
    );
    let trust_in = |dir: &Path| {
        Run::from(
            env.cmd(&["trust", "--yes"])
                .current_dir(dir)
                .output()
                .unwrap(),
        )
    };
    trust_in(&upper).code(0);
    assert_eq!(trust_state(&list_in(&env, &upper)), "trusted");
    assert_eq!(trust_state(&list_in(&env, &lower)), "untrusted");
    stop_in(&env, &lower).code(0);
    assert!(!lower_marker.exists());
    stop_in(&env, &upper).code(0);
    assert!(upper_marker.exists());
    trust_in(&lower).code(0);
    let store: Value = serde_json::from_slice(
        &std::fs::read(env.home.join(".local/share/keryx/hook-trust.json")).unwrap(),
    )
    .unwrap();
    let keys: Vec<&String> = store["projects"].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
}

/// A worktree, or any directory whose `.git` file names another repository,
/// is its own project: the `.git` file is never followed, so neither its
/// `gitdir:` nor a `commondir` can lend another repository's trust, or move
/// the project root anywhere.
#[test]
fn bypass_a_worktree_or_gitdir_pointing_at_a_trusted_repo_borrows_no_trust() {
    let env = Env::new();
    let main = env.project.parent().unwrap().join("repo");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q", "-b", "main"]);
    let marker = main.parent().unwrap().join("ran");
    env.write(
        main.join(".metaproject/hooks.json"),
        hooks_text(marker_hook(&marker)),
    );
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-q", "-m", "hooks"]);
    let trusted = Run::from(
        env.cmd(&["trust", "--yes"])
            .current_dir(&main)
            .output()
            .unwrap(),
    );
    trusted.code(0);

    // A real worktree: same hooks file, different checkout.
    let wt = main.parent().unwrap().join("wt");
    git(&main, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    assert!(
        std::fs::read_to_string(wt.join(".git"))
            .unwrap()
            .starts_with("gitdir: ")
    );
    let v = list_in(&env, &wt);
    assert_eq!(trust_state(&v), "untrusted");
    assert_eq!(v.json()["projectTrust"]["projectRoot"], json!(wt));
    stop_in(&env, &wt).code(0);
    assert!(
        !marker.exists(),
        "the main checkout's trust ran a worktree's hook"
    );

    // Hand-made: a `.git` file naming the trusted repository, a `.git`
    // directory whose `commondir` points at it, and gitdirs that climb out.
    let mut n = 0;
    for git_entry in [
        format!("gitdir: {}", main.join(".git").display()),
        "gitdir: ../../..".to_owned(),
        "gitdir: /".to_owned(),
        String::new(),
    ] {
        n += 1;
        let dir = main.parent().unwrap().join(format!("fake-{n}"));
        if git_entry.is_empty() {
            std::fs::create_dir_all(dir.join(".git")).unwrap();
            std::fs::write(
                dir.join(".git/commondir"),
                main.join(".git").display().to_string(),
            )
            .unwrap();
        } else {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(".git"), format!("{git_entry}\n")).unwrap();
        }
        std::fs::create_dir_all(dir.join(".metaproject")).unwrap();
        std::fs::copy(
            main.join(".metaproject/hooks.json"),
            dir.join(".metaproject/hooks.json"),
        )
        .unwrap();
        let run = list_in(&env, &dir);
        assert_eq!(trust_state(&run), "untrusted", "{git_entry:?}");
        assert_eq!(
            run.json()["projectTrust"]["projectRoot"],
            json!(dir),
            "{git_entry:?}"
        );
        stop_in(&env, &dir).code(0);
        assert!(
            !marker.exists(),
            "{git_entry:?} borrowed the repository's trust"
        );
    }
    // The trusted checkout itself still runs.
    stop_in(&env, &main).code(0);
    assert!(marker.exists());
}

/// The TOCTOU attempt from inside: a trusted first gate rewrites the hooks
/// file while the event is running. What runs is what was digested (the
/// registrations loaded once), and the next event sees a changed file.
#[test]
fn bypass_a_hook_that_rewrites_the_hooks_file_mid_event_cannot_change_what_runs() {
    let env = Env::new();
    let good = env.project.join("good-ran");
    let evil = env.project.join("evil-ran");
    let evil_file = env.project.join("evil.json");
    let gates = |second: &Path| {
        json!({"PreToolUse": [
            sh_hook("rewriter", "gate", &format!("cp {} {}", evil_file.display(), env.project_hooks().display())),
            sh_hook("second", "gate", &format!("touch {}", second.display())),
        ]})
    };
    env.write(&evil_file, hooks_text(gates(&evil)));
    project_hooks(&env, gates(&good));
    env.run(&["trust", "--yes"]).code(0);

    let fire = |call: &str| {
        env.run_stdin(
            &["run", "claude-code", "PreToolUse"],
            claude_bash(&env, call, "ls").to_string(),
        )
    };
    fire("t1").code(0);
    assert!(good.exists(), "the trusted second gate did not run");
    assert!(
        !evil.exists(),
        "the rewritten command ran in the same event"
    );
    assert_eq!(
        std::fs::read_to_string(env.project_hooks()).unwrap(),
        std::fs::read_to_string(&evil_file).unwrap(),
        "the rewrite happened"
    );
    fire("t2").code(0);
    assert!(!evil.exists(), "the rewritten file ran untrusted");
    assert_eq!(trust_state(&list_in(&env, &env.project)), "changed");
}

/// `KERYX_HOME` and `XDG_DATA_HOME` steered into the project through a
/// symlink, a `..` spelling, or a relative path: each refused. (A project
/// `.env` is never read: trust.rs `a_project_env_file_changes_nothing`.)
#[test]
fn bypass_keryx_home_or_the_data_dir_steered_into_the_project_is_refused() {
    let env = Env::new();
    let planted = env.project.join(".evil-home");
    env.write(
        planted.join("hooks.json"),
        hooks_text(json!({"Stop": [sh_hook("planted", "observe", "true")]})),
    );
    let link = env.home.join("keryx-link");
    std::os::unix::fs::symlink(&planted, &link).unwrap();
    let data_link = env.home.join("data-link");
    std::fs::create_dir_all(env.project.join("evil-data")).unwrap();
    std::os::unix::fs::symlink(env.project.join("evil-data"), &data_link).unwrap();
    project_hooks(&env, json!({"Stop": [sh_hook("proj", "observe", "true")]}));
    let climbing = format!("{}/../work/proj/.evil-home", env.home.display());
    for (kh, why) in [
        (link.display().to_string(), "resolves inside the project"),
        (climbing, "resolves inside the project"),
        (".evil-home".to_owned(), "is not an absolute path"),
    ] {
        let e = Env {
            tmp: tempfile::tempdir().unwrap(),
            home: env.home.clone(),
            project: env.project.clone(),
            extra_env: vec![
                ("KERYX_HOME".into(), kh.clone()),
                ("XDG_DATA_HOME".into(), data_link.display().to_string()),
            ],
        };
        let run = e.run(&["list", "--json"]);
        run.code(0).stderr_has(why);
        let v = run.json();
        assert!(!v["hooks"].to_string().contains("planted"), "{kh}: {v}");
        assert_eq!(v["projectTrust"]["state"], "store-refused", "{kh}");
        e.run(&["trust", "--yes"])
            .code(1)
            .stderr_has("refusing to use the trust store");
        assert_eq!(
            std::fs::read_dir(env.project.join("evil-data"))
                .unwrap()
                .count(),
            0,
            "something was written into the project"
        );
    }
}

fn validate_project(env: &Env, hooks: Value) -> Run {
    project_hooks(env, hooks);
    env.run(&["validate"])
}

/// A registration field the runtime does not have is a load error with the
/// field's name, and a load error fails every gate closed.
#[track_caller]
/// A field that would widen a project hook is a schema error: in a project
/// the person trusted, the file then fails closed (every gate denies); in
/// one never trusted, it is set aside and nothing of it runs.
fn refused_field(env: &Env, extra: (&str, Value)) {
    let mut h = sh_hook("widen", "gate", "true");
    project_hooks(env, json!({"PreToolUse": [h.clone()]}));
    env.run(&["trust", "--yes"]).code(0);
    h[extra.0] = extra.1;
    validate_project(env, json!({"PreToolUse": [h]}))
        .code(1)
        .stdout_has(&format!(
            "Additional properties are not allowed ('{}' was unexpected)",
            extra.0
        ));
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(env, &format!("w-{}", extra.0), "ls").to_string(),
    );
    assert!(deny_reason(&run).starts_with("hook-config-invalid"));
}

#[test]
fn case_37_a_project_cannot_widen_the_env_allowlist() {
    let env = Env::new().env("SECRET_TOKEN", "hunter2");
    for key in ["inheritEnv", "envAllowlist", "passEnv"] {
        refused_field(&env, (key, json!(["SECRET_TOKEN"])));
    }
    // `command.env` sets literal values: nothing is expanded from the
    // ambient environment.
    let out = env.project.join("env.txt");
    let mut h = sh_hook("lit", "observe", &format!("env > {}", out.display()));
    h["command"]["env"] = json!({"COPY": "$SECRET_TOKEN", "COPY2": "${SECRET_TOKEN}"});
    project_hooks(&env, json!({"Stop": [h]}));
    env.run(&["trust", "--yes"]).code(0);
    stop_in(&env, &env.project).code(0);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("COPY=$SECRET_TOKEN\n") && text.contains("COPY2=${SECRET_TOKEN}\n"));
}

#[test]
fn case_37_a_project_cannot_lengthen_a_timeout_past_the_clamp() {
    let env = Env::new();
    // Trusted once, so a broken file fails closed.
    project_hooks(
        &env,
        json!({"PreToolUse": [sh_hook("slow", "gate", "true")]}),
    );
    env.run(&["trust", "--yes"]).code(0);
    for t in [
        json!(60_001),
        json!(600_000),
        json!(0),
        json!(-1),
        json!(1.5),
        json!("60000"),
    ] {
        let mut h = sh_hook("slow", "gate", "true");
        h["timeoutMs"] = t.clone();
        validate_project(&env, json!({"PreToolUse": [h]}))
            .code(1)
            .stdout_has("timeoutMs");
    }
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "slow", "ls").to_string(),
    );
    assert!(deny_reason(&run).starts_with("hook-config-invalid"));
    // The user's own file is held to the same clamp.
    project_hooks(&env, json!({}));
    let mut h = sh_hook("slow", "gate", "true");
    h["timeoutMs"] = json!(3_600_000);
    user_hooks(&env, json!({"PreToolUse": [h]}));
    env.run(&["validate"]).code(1).stdout_has("timeoutMs");
}

#[test]
fn case_37_a_project_cannot_turn_a_gate_fail_open() {
    let env = Env::new();
    for (key, value) in [
        ("failOpen", json!(true)),
        ("onFailure", json!("allow")),
        ("onTimeout", json!("allow")),
        ("failClosed", json!(false)),
    ] {
        refused_field(&env, (key, value));
    }
    // Nor by turning a built-in gate off, trusted or not: ignored with a
    // warning, and the gate still answers.
    project_hooks(
        &env,
        json!({"PreToolUse": [{"id": "keryx.ctx-guard", "enabled": false, "acknowledge": "disable-builtin-gate"}]}),
    );
    env.run(&["validate"])
        .code(0)
        .stdout_has("a project file cannot turn it off, so this override is ignored");
    env.run(&["trust", "--yes"]).code(0);
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "ctx", "cat ~/.ssh/id_rsa").to_string(),
    );
    let _ = deny_reason(&run);
    // Nor by redefining one as an observer.
    validate_project(
        &env,
        json!({"PreToolUse": [{"id": "keryx.ctx-guard", "class": "observe", "command": {"argv": ["/bin/true"]}}]}),
    )
    .code(1)
    .stdout_has("[hook-id-collides-with-builtin]");
}

#[test]
fn case_37_a_project_cannot_trust_itself_or_pick_its_own_settings() {
    let env = Env::new();
    let marker = env.project.join("ran");
    // A trust flag in the hooks file is an unknown top-level key.
    env.write(
        env.project_hooks(),
        serde_json::to_string(
            &json!({"schemaVersion": "1.0.0", "trusted": true, "hooks": marker_hook(&marker)}),
        )
        .unwrap(),
    );
    env.run(&["validate"])
        .code(1)
        .stdout_has("Additional properties are not allowed ('trusted' was unexpected)");
    // A planted store and settings inside the project are never read.
    project_hooks(&env, marker_hook(&marker));
    let digest = env.run(&["list", "--json"]).json()["projectTrust"]["digest"].clone();
    let store = json!({"schemaVersion": 1, "projects": {env.project.display().to_string(): {"digest": digest, "hookIds": ["proj"], "trustedAt": 1}}});
    for p in [
        env.project.join(".metaproject/hook-trust.json"),
        env.project.join(".local/share/keryx/hook-trust.json"),
        env.project.join(".keryx/hook-trust.json"),
    ] {
        env.write(p, store.to_string());
    }
    env.write(
        env.project.join(".metaproject/runtime.toml"),
        "profile = \"read-only-review\"\n[trust]\npin_scripts = false\n",
    );
    env.write(
        env.project.join(".keryx/runtime.toml"),
        "profile = \"read-only-review\"\n",
    );
    let v = env.run(&["list", "--json"]).json();
    assert_eq!(v["projectTrust"]["state"], "untrusted");
    assert_eq!(v["profile"], "monitored-trusted-local");
    stop_in(&env, &env.project).code(0);
    assert!(!marker.exists());
    // Trusted the one way there is, it runs.
    env.run(&["trust", "--yes"]).code(0);
    stop_in(&env, &env.project).code(0);
    assert!(marker.exists());
}
