//! `keryx-hooks init`: a first hooks.json with an example gate and observer
//! that validates, whose gate denies what its description says, and that
//! never overwrites without --force.

use serde_json::json;

use crate::common::{Env, claude_bash, mode, read_json};

#[test]
fn init_writes_a_user_config_that_validates_and_whose_gate_denies_a_force_push() {
    let env = Env::new();
    env.run(&["init"]).code(0).stdout_has("wrote");
    let cfg = read_json(env.user_hooks());
    assert!(
        cfg["$schema"]
            .as_str()
            .unwrap()
            .ends_with("hook-config.schema.json")
    );
    for (event, list) in cfg["hooks"].as_object().unwrap() {
        for h in list.as_array().unwrap() {
            assert!(
                !h["description"].as_str().unwrap_or_default().is_empty(),
                "{event}: {h}"
            );
        }
    }
    for script in ["example-gate.sh", "example-observer.sh"] {
        assert_eq!(mode(env.keryx_home().join("scripts").join(script)), 0o755);
    }
    let validate = env.run(&["validate"]);
    validate.code(0).stdout_has("valid");
    assert!(!validate.stdout.contains("warning"), "{}", validate.stdout);

    let gate = cfg["hooks"]["PreToolUse"][0].clone();
    assert!(
        gate["description"]
            .as_str()
            .unwrap()
            .contains("git push --force")
    );
    let id = gate["id"].as_str().unwrap();
    let force = env.write(
        env.home.join("force.json"),
        claude_bash(&env, "c1", "git push --force origin main").to_string(),
    );
    env.run(&["test", id, "--payload-file", force.to_str().unwrap()])
        .code(0)
        .stdout_has("decision: deny")
        .stdout_has("use --force-with-lease");
    let lease = env.write(
        env.home.join("lease.json"),
        claude_bash(&env, "c2", "git push --force-with-lease origin main").to_string(),
    );
    env.run(&["test", id, "--payload-file", lease.to_str().unwrap()])
        .code(0)
        .stdout_has("decision: none");

    // Through the shim as a host runs it: the same deny.
    let run = env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "c3", "git push -f origin main").to_string(),
    );
    run.code(0);
    assert_eq!(
        run.json()["hookSpecificOutput"]["permissionDecision"],
        json!("deny"),
        "{}",
        run.stdout
    );
}

#[test]
fn init_keeps_a_script_of_yours_under_an_example_name_unless_force() {
    let env = Env::new();
    let gate = env.keryx_home().join("scripts/example-gate.sh");
    env.write(&gate, "mine");
    env.run(&["init"])
        .code(1)
        .stderr_has("example-gate.sh")
        .stderr_has("already exists with other content; nothing was written")
        .stderr_has("--force");
    assert!(!env.user_hooks().exists());
    assert_eq!(std::fs::read_to_string(&gate).unwrap(), "mine");

    env.run(&["init", "--force"])
        .code(0)
        .stdout_has("kept your");
    assert!(read_json(env.user_hooks())["hooks"]["PreToolUse"].is_array());
    assert_eq!(
        std::fs::read_to_string(env.keryx_home().join("scripts/example-gate.sh.bak")).unwrap(),
        "mine"
    );
}

#[test]
fn init_for_a_project_writes_under_metaproject_and_validates() {
    let env = Env::new();
    env.run(&["init", "--scope", "project"])
        .code(0)
        .stdout_has("trust");
    let cfg = read_json(env.project_hooks());
    let argv0 = cfg["hooks"]["PreToolUse"][0]["command"]["argv"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(env.project.join(&argv0).is_file(), "{argv0}");
    assert_eq!(
        mode(env.project.join(".metaproject/hooks/example-observer.sh")),
        0o755
    );
    assert!(!env.user_hooks().exists());
    let validate = env.run(&["validate"]);
    validate.code(0).stdout_has("valid");
    assert!(!validate.stdout.contains("warning"), "{}", validate.stdout);
}
