//! The managed layer at `/etc/keryx`, whose path no environment variable
//! moves. Each test runs the real binary in a private mount namespace
//! (`unshare -m`) with an overlay over `/etc`, so the managed files it
//! writes there exist for that process alone, root-owned the way a package
//! manager or MDM would leave them.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{BIN, Env, Run, run_fed, user_hooks};

fn gate(id: &str, script: &str) -> Value {
    json!({"id": id, "class": "gate", "runsIn": "unsandboxed", "timeoutMs": 3000,
           "command": {"argv": ["/bin/sh", "-c", script]}})
}

/// What the namespace does before it runs the binary: `/etc` overlaid,
/// `/etc/keryx/hooks.json` written from `managed` with `mode`, and the
/// directory itself given `dir_mode`.
fn in_namespace(env: &Env, managed: &Value, mode: &str, dir_mode: &str, args: &[&str]) -> Command {
    let t = env.tmp.path();
    let src = env.write(t.join("managed-src.json"), managed.to_string());
    for d in ["etc-upper", "etc-work"] {
        std::fs::create_dir_all(t.join(d)).unwrap();
    }
    let q = |p: &Path| format!("'{}'", p.display());
    let mut line = format!(
        "set -e; mount -t overlay overlay -o lowerdir=/etc,upperdir={},workdir={} /etc; \
         mkdir -p /etc/keryx; cp {} /etc/keryx/hooks.json; chown -R root:root /etc/keryx; \
         chmod {mode} /etc/keryx/hooks.json; chmod {dir_mode} /etc/keryx; exec '{BIN}'",
        q(&t.join("etc-upper")),
        q(&t.join("etc-work")),
        q(&src),
    );
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let mut c = env.program("unshare");
    c.args(["-m", "--propagation", "private", "/bin/sh", "-c", &line]);
    c
}

fn fire(env: &Env, managed: &Value, mode: &str, dir_mode: &str) -> Value {
    let payload = json!({"event": "UserPromptSubmit", "sessionId": "s-1",
                         "cwd": env.project, "prompt": "hello"});
    let run: Run = run_fed(
        in_namespace(
            env,
            managed,
            mode,
            dir_mode,
            &["run", "keryx", "UserPromptSubmit"],
        ),
        payload.to_string().into_bytes(),
    );
    run.code(0);
    run.json()
}

fn managed_gate() -> Value {
    json!({"schemaVersion": "1.0.0", "hooks": {"UserPromptSubmit": [
        gate("org-no-prompts", "echo 'refused by the organisation' >&2; exit 2")
    ]}})
}

#[test]
fn a_managed_gate_runs_and_denies() {
    let env = Env::new();
    let v = fire(&env, &managed_gate(), "0644", "0755");
    assert_eq!(v["outcome"], "deny", "{v}");
    assert_eq!(v["reason"], "refused by the organisation", "{v}");
    let rec = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["hookId"] == "org-no-prompts")
        .unwrap_or_else(|| panic!("no record of the managed gate: {v}"));
    assert_eq!(rec["exitCode"], 2, "{v}");
}

#[test]
fn without_the_namespace_there_is_no_managed_layer_here() {
    // The tests above write /etc/keryx only inside their namespace.
    assert!(!Path::new("/etc/keryx").exists());
}

#[test]
fn a_lower_layer_cannot_disable_or_shadow_a_managed_hook() {
    for user in [
        // A disable-only override of the managed id.
        json!({"UserPromptSubmit": [{"id": "org-no-prompts", "enabled": false,
                                       "acknowledge": "disable-builtin-gate"}]}),
        // A hook of the same id that allows.
        json!({"UserPromptSubmit": [gate("org-no-prompts", "exit 0")]}),
    ] {
        let env = Env::new();
        user_hooks(&env, user.clone());
        let v = fire(&env, &managed_gate(), "0644", "0755");
        assert_eq!(v["outcome"], "deny", "{user}: {v}");
        let reason = v["reason"].as_str().unwrap();
        assert!(
            reason.contains("managed layer `/etc/keryx/hooks.json`"),
            "{user}: {reason}"
        );
        assert!(reason.contains("hook-config-invalid"), "{user}: {reason}");
    }
}

#[test]
fn the_environment_does_not_move_or_hide_the_managed_layer() {
    let env = Env::new()
        .env("KERYX_HOME", "/nonexistent/keryx")
        .env("XDG_CONFIG_HOME", "/nonexistent/xdg");
    let v = fire(&env, &managed_gate(), "0644", "0755");
    assert_eq!(v["outcome"], "deny", "{v}");
    assert_eq!(v["reason"], "refused by the organisation", "{v}");
}

#[test]
fn a_managed_layer_a_non_root_user_can_write_denies_and_says_why() {
    for (mode, dir_mode, says) in [
        ("0646", "0755", "writable by every user"),
        ("0644", "0777", "`/etc/keryx` is writable by every user"),
    ] {
        let env = Env::new();
        let v = fire(&env, &managed_gate(), mode, dir_mode);
        assert_eq!(v["outcome"], "deny", "{mode} {dir_mode}: {v}");
        let reason = v["reason"].as_str().unwrap();
        assert!(reason.contains("managed layer is refused"), "{reason}");
        assert!(reason.contains(says), "{mode} {dir_mode}: {reason}");
        assert!(reason.contains("chmod go-w"), "{reason}");
        // The managed gate's own reason is not what answered: the load failed.
        assert!(!reason.contains("refused by the organisation"), "{reason}");
    }
}

#[test]
fn a_managed_hook_whose_program_a_non_root_user_can_write_denies() {
    let env = Env::new();
    // The script lives under the temporary directory, which every user may write.
    let script = env.script(env.tmp.path().join("org-gate.sh"), "exit 0");
    let managed = json!({"schemaVersion": "1.0.0", "hooks": {"UserPromptSubmit": [
        {"id": "org-gate", "class": "gate", "runsIn": "unsandboxed",
         "command": {"argv": [script]}}
    ]}});
    let v = fire(&env, &managed, "0644", "0755");
    assert_eq!(v["outcome"], "deny", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.contains("managed hook `org-gate`"), "{reason}");
    assert!(reason.contains("writable by every user"), "{reason}");
}

#[test]
fn rules_off_cannot_switch_off_a_managed_rule() {
    let env = Env::new();
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {}, "rules_off": ["org-no-rm"]}).to_string(),
    );
    let managed = json!({"schemaVersion": "1.0.0", "hooks": {}, "rules": [
        {"id": "org-no-rm", "on": ["UserPromptSubmit"], "match": {"prompt": ["rm"]},
         "decision": "deny", "reason": "no"}
    ]});
    let v = fire(&env, &managed, "0644", "0755");
    assert_eq!(v["outcome"], "deny", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.contains("a rule of the managed layer"), "{reason}");
}
