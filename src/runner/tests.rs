//! Real processes against the runner: exit codes, the env allowlist, pipe
//! deadlocks, output caps, timeouts with escaping descendants, spawn
//! failures, signal deaths, and the bubblewrap sandbox for real.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;

const PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// Slack on every upper bound: a loaded CI machine must not fail these.
const SLACK: Duration = Duration::from_millis(1500);

fn request(argv: &[&str], cwd: &Path) -> SpawnRequest {
    SpawnRequest {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: cwd.to_path_buf(),
        env: vec![("PATH".into(), PATH.into())],
        stdin: Vec::new(),
        timeout: Duration::from_secs(20),
        sandbox: SandboxSpec::None,
    }
}

fn sh(body: &str) -> SpawnRequest {
    request(&["/bin/sh", "-c", body], Path::new("/"))
}

fn with_timeout(mut req: SpawnRequest, ms: u64) -> SpawnRequest {
    req.timeout = Duration::from_millis(ms);
    req
}

fn write_script(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn spawn_failed(out: &SpawnOutcome) -> &str {
    match &out.exit {
        Exit::SpawnFailed(msg) => msg,
        other => panic!("expected SpawnFailed, got {other:?}"),
    }
}

/// Dead, or a zombie nobody has reaped yet (its parent, the hook, is gone).
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

fn kill9(pid: i32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}

#[test]
fn exit_codes_and_output() {
    assert_eq!(spawn(&sh("exit 0")).exit, Exit::Code(0));
    assert_eq!(spawn(&sh("exit 3")).exit, Exit::Code(3));
    let out = spawn(&sh("echo out; echo err >&2; exit 2"));
    assert_eq!(out.exit, Exit::Code(2));
    assert_eq!(text(&out.stdout), "out\n");
    assert_eq!(text(&out.stderr), "err\n");
    assert!(!out.stdout_truncated && !out.stderr_truncated);
}

#[test]
fn argv_is_not_a_shell_line() {
    let out = spawn(&request(
        &["/bin/echo", "$HOME; rm -rf /", "*"],
        Path::new("/"),
    ));
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(text(&out.stdout), "$HOME; rm -rf / *\n");
}

#[test]
fn env_is_exactly_the_allowlist() {
    // cargo sets this for every test run: a stand-in for a secret in the
    // parent environment that must not reach the hook.
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
        "run under cargo test"
    );
    let ambient = |name: &str| match name {
        "CARGO_MANIFEST_DIR" | "AWS_SECRET_ACCESS_KEY" => Some("secret".to_owned()),
        _ => std::env::var(name).ok(),
    };
    let fixed = [("KERYX_HOOK_ID", "h1".to_owned())];
    let command_env = BTreeMap::from([
        ("HOME".to_owned(), "/override".to_owned()),
        ("KERYX_HOOK_ID".to_owned(), "from-command".to_owned()),
        ("EXTRA".to_owned(), "x y".to_owned()),
    ]);
    let mut req = request(&["/usr/bin/env"], Path::new("/"));
    req.env = hook_env(&ambient, &fixed, &command_env);
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Code(0));
    let seen: BTreeMap<String, String> = text(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(seen.get("HOME").map(String::as_str), Some("/override"));
    assert_eq!(
        seen.get("KERYX_HOOK_ID").map(String::as_str),
        Some("from-command")
    );
    assert_eq!(seen.get("EXTRA").map(String::as_str), Some("x y"));
    assert!(!seen.contains_key("CARGO_MANIFEST_DIR"));
    assert!(!seen.contains_key("AWS_SECRET_ACCESS_KEY"));
    let allowed: Vec<&str> = crate::env_vars::HOOK_INHERITED
        .into_iter()
        .chain(["KERYX_HOOK_ID", "EXTRA"])
        .collect();
    for key in seen.keys() {
        assert!(
            allowed.contains(&key.as_str()),
            "`{key}` leaked into the hook"
        );
    }
}

#[test]
fn hook_that_never_reads_a_large_payload() {
    let payload = vec![b'x'; 2 << 20];
    let mut req = sh("exit 0");
    req.stdin = payload.clone();
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Code(0));
    assert!(out.duration < SLACK, "{:?}", out.duration);

    // Never reads and never exits: the timeout still fires.
    let mut req = with_timeout(sh("sleep 60"), 300);
    req.stdin = payload;
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Timeout);
    assert!(out.duration < req.timeout + SLACK, "{:?}", out.duration);
}

#[test]
fn hook_writes_a_mebibyte_before_reading_stdin() {
    let mut req = sh("head -c 1048576 /dev/zero; wc -c >&2");
    req.stdin = vec![b'{'; 2 << 20];
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(out.stdout.len(), 1 << 20);
    assert!(!out.stdout_truncated, "exactly the cap is not truncated");
    assert_eq!(text(&out.stderr).trim(), (2 << 20).to_string());
}

#[test]
fn ten_megabytes_on_both_streams_is_capped() {
    let out = spawn(&sh(
        "head -c 10485760 /dev/zero >&2 & head -c 10485760 /dev/zero; wait",
    ));
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(out.stdout.len(), OUTPUT_CAP);
    assert_eq!(out.stderr.len(), OUTPUT_CAP);
    assert!(out.stdout_truncated && out.stderr_truncated);
    // Memory stays bounded: the buffers never grew past the cap.
    assert!(
        out.stdout.capacity() <= OUTPUT_CAP,
        "{}",
        out.stdout.capacity()
    );
    assert!(
        out.stderr.capacity() <= OUTPUT_CAP,
        "{}",
        out.stderr.capacity()
    );
}

#[test]
fn term_ignoring_hook_is_killed_at_the_deadline() {
    let req = with_timeout(sh("trap '' TERM; sleep 999"), 300);
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Timeout);
    assert!(out.duration >= req.timeout);
    assert!(out.duration < req.timeout + SLACK, "{:?}", out.duration);
}

#[test]
fn stdin_is_closed_after_the_payload() {
    let mut req = sh("cat >/dev/null; echo eof");
    req.stdin = b"{\"a\":1}".to_vec();
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(text(&out.stdout), "eof\n");

    // Blocked in read(0), then wedged: the deadline applies all along.
    let mut req = with_timeout(sh("read x; sleep 60"), 300);
    req.stdin = b"{\"no\":\"newline\"}".to_vec();
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Timeout);
    assert!(out.duration < req.timeout + SLACK, "{:?}", out.duration);
}

#[test]
fn hook_that_closes_its_outputs_is_still_fed_and_timed() {
    let payload = vec![b'x'; 2 << 20];
    // Outputs closed first, then the whole payload read, then an exit code.
    let mut req = sh("exec >&- 2>&-; cat >/dev/null; exit 4");
    req.stdin = payload.clone();
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Code(4));

    // Outputs closed, then wedged: the deadline still applies.
    let mut req = with_timeout(sh("exec >/dev/null 2>&1; cat >/dev/null; sleep 60"), 300);
    req.stdin = payload;
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Timeout);
    assert!(out.duration < req.timeout + SLACK, "{:?}", out.duration);
}

#[test]
fn hook_that_closes_its_outputs_with_no_payload_is_waited_for_and_timed() {
    // Nothing to feed and nothing to drain: the wait is on the exit alone.
    let req = with_timeout(sh("exec >&- 2>&-; sleep 0.3; exit 5"), 5_000);
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Code(5));
    assert!(
        out.duration >= Duration::from_millis(300),
        "{:?}",
        out.duration
    );
    assert!(out.duration < req.timeout, "{:?}", out.duration);

    // The same, wedged: the deadline still applies.
    let req = with_timeout(sh("exec >&- 2>&-; sleep 60"), 300);
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Timeout);
    assert!(out.duration >= req.timeout);
    assert!(out.duration < req.timeout + SLACK, "{:?}", out.duration);
}

#[test]
fn background_child_holding_stdout_is_a_timeout() {
    let req = with_timeout(sh("sleep 60 & echo started; exit 0"), 300);
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Timeout);
    assert!(
        out.duration >= req.timeout,
        "resolved early: {:?}",
        out.duration
    );
    assert!(
        out.duration < req.timeout + Duration::from_secs(1),
        "{:?}",
        out.duration
    );
    assert_eq!(
        text(&out.stdout),
        "started\n",
        "output before the kill is kept"
    );
}

#[test]
fn setsid_grandchild_holding_stdout_is_abandoned_after_grace() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let body = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 30' & exit 0",
        pidfile.display()
    );
    let req = with_timeout(sh(&body), 300);
    let out = spawn(&req);
    let pids = read_pids(&pidfile);
    assert_eq!(out.exit, Exit::Timeout);
    assert!(
        out.duration >= req.timeout,
        "resolved early: {:?}",
        out.duration
    );
    assert!(
        out.duration < req.timeout + GRACE + SLACK,
        "{:?}",
        out.duration
    );
    // The grandchild really escaped the group (else this test proves less).
    assert_eq!(pids.len(), 1, "the grandchild wrote its pid");
    assert!(
        !is_dead(pids[0]),
        "the setsid grandchild should outlive the group kill"
    );
    kill9(pids[0]);
}

#[test]
fn whole_group_is_dead_after_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let body = format!(
        "sleep 60 & echo $! > {p}; (sleep 60 & echo $! >> {p}; wait) & sleep 60",
        p = pidfile.display()
    );
    let out = spawn(&with_timeout(sh(&body), 500));
    assert_eq!(out.exit, Exit::Timeout);
    let pids = read_pids(&pidfile);
    assert_eq!(pids.len(), 2, "both background pids recorded");
    for pid in pids {
        assert!(
            wait_until(Duration::from_secs(2), || is_dead(pid)),
            "pid {pid} survived"
        );
    }
}

#[test]
fn descendants_of_a_hook_that_finished_in_time_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let body = format!(
        "nohup sleep 30 </dev/null >/dev/null 2>&1 & echo $! > {}",
        pidfile.display()
    );
    let out = spawn(&sh(&body));
    assert_eq!(out.exit, Exit::Code(0));
    assert!(out.duration < SLACK, "{:?}", out.duration);
    let pids = read_pids(&pidfile);
    assert!(
        !is_dead(pids[0]),
        "a detached daemon survives a successful hook"
    );
    kill9(pids[0]);
}

#[test]
fn timeout_is_clamped() {
    let out = spawn(&with_timeout(sh("sleep 5"), 0));
    assert_eq!(out.exit, Exit::Timeout);
    assert!(out.duration < SLACK, "{:?}", out.duration);
}

#[test]
fn spawn_failures_name_the_path_and_a_fix() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let out = spawn(&request(&["/nonexistent/hook"], d));
    let msg = spawn_failed(&out);
    assert!(msg.contains("`/nonexistent/hook` does not exist"), "{msg}");

    let out = spawn(&request(&["keryx-no-such-command"], d));
    let msg = spawn_failed(&out);
    assert!(
        msg.contains("`keryx-no-such-command` was not found on the hook's PATH"),
        "{msg}"
    );

    let plain = write_script(d, "plain.sh", "#!/bin/sh\nexit 0\n", 0o644);
    let out = spawn(&request(&[plain.to_str().unwrap()], d));
    let msg = spawn_failed(&out);
    assert!(
        msg.contains("is not executable") && msg.contains("chmod +x"),
        "{msg}"
    );

    let bad = write_script(d, "bad.sh", "#!/nonexistent/interp -x\nexit 0\n", 0o755);
    let out = spawn(&request(&["./bad.sh"], d));
    let msg = spawn_failed(&out);
    assert!(
        msg.contains("`/nonexistent/interp`") && msg.contains("#!"),
        "{msg}"
    );
    assert!(msg.contains(&bad.display().to_string()), "{msg}");

    // CRLF after the interpreter: the kernel looks for `/bin/sh\r`.
    write_script(d, "crlf.sh", "#!/bin/sh\r\nexit 0\r\n", 0o755);
    let out = spawn(&request(&["./crlf.sh"], d));
    let msg = spawn_failed(&out);
    assert!(
        msg.contains("`/bin/sh\\x0D`") && msg.contains("dos2unix"),
        "{msg}"
    );

    let out = spawn(&request(&[d.to_str().unwrap()], d));
    assert!(spawn_failed(&out).contains("is a directory"));

    let out = spawn(&request(&[], d));
    assert!(spawn_failed(&out).contains("empty"));

    let out = spawn(&request(&["/bin/true"], &d.join("gone")));
    assert!(spawn_failed(&out).contains("working directory"));

    // Word for word.
    let failed = |argv: &[&str], cwd: &Path| spawn_failed(&spawn(&request(argv, cwd))).to_owned();
    assert_eq!(
        failed(&["/nonexistent/hook"], d),
        "`/nonexistent/hook` does not exist; check the path (a relative one resolves against \
         the hook's working directory)"
    );
    let plain = plain.display();
    assert_eq!(
        failed(&[&plain.to_string()], d),
        format!("`{plain}` is not executable; run `chmod +x {plain}`")
    );
    assert_eq!(
        failed(&["./bad.sh"], d),
        format!(
            "the interpreter `/nonexistent/interp` on the `#!` line of `{}` does not exist; \
             fix the `#!` line (e.g. `#!/usr/bin/env bash`) or install the interpreter",
            bad.display()
        )
    );
    assert_eq!(
        failed(&["./crlf.sh"], d),
        format!(
            "the interpreter `/bin/sh\\x0D` on the `#!` line of `{}` does not exist; \
             the file has Windows (CRLF) line endings; convert it with `dos2unix`",
            d.join("crlf.sh").display()
        )
    );
    assert_eq!(
        failed(&[d.to_str().unwrap()], d),
        format!("`{}` is a directory, not a program", d.display())
    );
    assert_eq!(
        failed(&[], d),
        "the hook's command is empty; give it an `argv` whose first element is the program"
    );
    assert_eq!(
        failed(&["/bin/true"], &d.join("gone")),
        format!(
            "the hook's working directory `{}` does not exist or is not a directory",
            d.join("gone").display()
        )
    );
}

#[test]
fn relative_argv0_resolves_against_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "hook.sh",
        "#!/bin/sh\necho \"$0\"; pwd\n",
        0o755,
    );
    let out = spawn(&request(&["./hook.sh"], dir.path()));
    assert_eq!(out.exit, Exit::Code(0));
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        text(&out.stdout),
        format!("{}\n{}\n", script.display(), real.display())
    );
}

#[test]
fn signal_death_is_reported() {
    let out = spawn(&sh("kill -SEGV $$"));
    assert_eq!(out.exit, Exit::Signal(libc::SIGSEGV));
}

#[test]
fn many_threads_at_once() {
    let handles: Vec<_> = (0..16)
        .map(|i| {
            std::thread::spawn(move || {
                let mut req = sh(&format!("cat; echo {i}; exit {i}"));
                req.stdin = format!("in{i} ").into_bytes();
                spawn(&req)
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let out = h.join().unwrap();
        assert_eq!(out.exit, Exit::Code(i as i32));
        assert_eq!(text(&out.stdout), format!("in{i} {i}\n"));
    }
}

const SIGTERM_CHILD_DIR: &str = "KERYX_RUNNER_TEST_SIGTERM_DIR";

/// Only does something when re-run by `sigterm_kills_live_hook_groups`:
/// installs the handlers and starts a hook that would outlive us.
#[test]
fn sigterm_child_process() {
    let Some(dir) = std::env::var_os(SIGTERM_CHILD_DIR) else {
        return;
    };
    install_signal_handlers();
    let pidfile = PathBuf::from(dir).join("pids");
    let body = format!(
        "sleep 60 & echo $! > {p}.tmp; echo $$ >> {p}.tmp; mv {p}.tmp {p}; wait",
        p = pidfile.display()
    );
    spawn(&with_timeout(sh(&body), 30_000));
    panic!("the hook should not have ended before SIGTERM");
}

#[test]
fn sigterm_kills_live_hook_groups() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "runner::tests::sigterm_child_process",
            "--nocapture",
        ])
        .env(SIGTERM_CHILD_DIR, dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pidfile = dir.path().join("pids");
    assert!(
        wait_until(Duration::from_secs(10), || pidfile.exists()),
        "the child's hook never started"
    );
    let pids = read_pids(&pidfile);
    assert_eq!(pids.len(), 2);
    for pid in &pids {
        assert!(!is_dead(*pid));
    }
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    for pid in pids {
        assert!(
            wait_until(Duration::from_secs(2), || is_dead(pid)),
            "pid {pid} orphaned"
        );
    }
}

// --- the sandbox, for real -------------------------------------------------

fn bwrap() -> Launcher {
    let launcher = find_launcher(&LauncherSearch::ANY);
    assert!(
        Path::new("/usr/bin/bwrap").exists() || launcher.is_ok(),
        "bubblewrap is required for these tests: `apt-get install -y bubblewrap`"
    );
    launcher.unwrap_or_else(|e| panic!("bwrap is installed but unusable here: {e}"))
}

fn sandboxed(argv: &[&str], project: &Path, network: bool) -> SpawnRequest {
    let mut req = request(argv, project);
    req.sandbox = SandboxSpec::Required(Sandbox {
        project: Some(project.to_path_buf()),
        network,
        ..Sandbox::default()
    });
    req
}

#[test]
fn sandbox_launcher_is_bwrap_here() {
    let launcher = bwrap();
    assert_eq!(launcher.kind, LauncherKind::Bubblewrap);
    assert_eq!(probe_bwrap(&launcher.program).ok(), Some(launcher));
}

#[test]
fn sandbox_confines_writes_and_sees_its_cwd() {
    bwrap();
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let leak = format!("/tmp/keryx-sandbox-leak-{}", std::process::id());
    let script = write_script(
        project.path(),
        "hook.sh",
        &format!(
            "#!/bin/sh\n\
             pwd\n\
             touch \"$PROJECT/inside\" && echo wrote-inside\n\
             touch \"$OUTSIDE/outside\" 2>/dev/null && echo wrote-outside\n\
             touch /etc/keryx-sandbox-test 2>/dev/null && echo wrote-etc\n\
             mount -o remount,rw,bind / 2>/dev/null && echo remounted\n\
             echo x > {leak} && echo wrote-private-tmp\n\
             kill -SEGV $$\n"
        ),
        0o755,
    );
    let mut req = sandboxed(&[script.to_str().unwrap()], project.path(), false);
    req.env
        .push(("PROJECT".into(), project.path().display().to_string()));
    req.env
        .push(("OUTSIDE".into(), outside.path().display().to_string()));
    let out = spawn(&req);
    let stdout = text(&out.stdout);
    let real = std::fs::canonicalize(project.path()).unwrap();
    assert_eq!(
        stdout,
        format!("{}\nwrote-inside\nwrote-private-tmp\n", real.display()),
        "stderr: {}",
        text(&out.stderr)
    );
    assert!(project.path().join("inside").exists());
    assert!(!outside.path().join("outside").exists());
    assert!(!Path::new("/etc/keryx-sandbox-test").exists());
    assert!(!Path::new(&leak).exists(), "the sandbox's /tmp is private");
    // bwrap reports a signal death as 128 + n.
    assert_eq!(out.exit, Exit::Code(128 + libc::SIGSEGV));
}

/// The home is the project (a `.metaproject` in `~`, the session started
/// there): the project's writable bind must not uncover the home's
/// credential stores or keryx's own data, and `.metaproject` stays
/// read-only. Run at this level because the shim accepts a home that is
/// the project only for the password database's home.
#[test]
fn credential_stores_stay_hidden_when_the_project_holds_the_home() {
    bwrap();
    let tmp = tempfile::tempdir_in("/var/tmp").unwrap();
    let home = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(home.join(".metaproject")).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "TOPSECRET\n").unwrap();
    let data = home.join(".local/share/keryx");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("hook-trust.json"), "TOPSECRET\n").unwrap();
    let script = "cat .ssh/id_ed25519 .local/share/keryx/hook-trust.json 2>/dev/null; \
                  echo x > .metaproject/hooks.json 2>/dev/null && echo WROTE; \
                  echo x > notes.txt && echo project-writable";
    let mut req = request(&["/bin/sh", "-c", script], &home);
    req.sandbox = SandboxSpec::Required(Sandbox {
        project: Some(home.clone()),
        home: Some(home.clone()),
        hidden: vec![data.clone()],
        ..Sandbox::default()
    });
    let out = spawn(&req);
    assert_eq!(
        text(&out.stdout),
        "project-writable\n",
        "stderr: {}",
        text(&out.stderr)
    );
    assert!(!home.join(".metaproject/hooks.json").exists());
}

#[test]
fn sandbox_has_no_network_unless_asked() {
    bwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let project = tempfile::tempdir().unwrap();
    let probe =
        format!("grep -c : /proc/net/dev; exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let out = spawn(&sandboxed(
        &["/bin/bash", "-c", &probe],
        project.path(),
        false,
    ));
    assert_eq!(
        text(&out.stdout),
        "1\n",
        "only `lo`; stderr: {}",
        text(&out.stderr)
    );
    assert_ne!(out.exit, Exit::Code(0));

    let out = spawn(&sandboxed(
        &["/bin/bash", "-c", &probe],
        project.path(),
        true,
    ));
    assert!(
        text(&out.stdout).ends_with("connected\n"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(out.exit, Exit::Code(0));
}

#[test]
fn sandboxed_descendants_die_with_the_hook() {
    bwrap();
    let project = tempfile::tempdir().unwrap();
    // The sandbox has its own pid namespace: when the hook exits, even a
    // setsid grandchild holding stdout dies with it, so the run ends at once.
    let escaped = "setsid sleep 60 & exit 0";
    let out = spawn(&sandboxed(
        &["/bin/sh", "-c", escaped],
        project.path(),
        false,
    ));
    assert_eq!(out.exit, Exit::Code(0));
    assert!(out.duration < SLACK, "{:?}", out.duration);

    // A wedged sandboxed hook: killing bwrap's group takes the rest along.
    let wedged = "setsid sleep 60 & trap '' TERM; sleep 60";
    let req = with_timeout(
        sandboxed(&["/bin/sh", "-c", wedged], project.path(), false),
        300,
    );
    let out = spawn(&req);
    assert_eq!(out.exit, Exit::Timeout);
    assert!(
        out.duration < req.timeout + GRACE + SLACK,
        "{:?}",
        out.duration
    );
}

#[test]
fn sandboxed_hook_kept_under_tmp_sees_only_its_own_directory() {
    bwrap();
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("lib.sh"), "echo sourced\n").unwrap();
    std::fs::write(other.path().join("secret"), "s").unwrap();
    let script = write_script(
        home.path(),
        "hook.sh",
        &format!(
            "#!/bin/sh\n. \"$(dirname \"$0\")/lib.sh\"\n\
             cat {}/secret 2>/dev/null && echo read-other-tmp\n\
             touch \"$(dirname \"$0\")/x\" 2>/dev/null && echo wrote-own-dir\n",
            other.path().display()
        ),
        0o755,
    );
    let out = spawn(&sandboxed(
        &[script.to_str().unwrap()],
        project.path(),
        false,
    ));
    assert_eq!(text(&out.stdout), "sourced\n", "{}", text(&out.stderr));

    let mut req = sandboxed(&["/bin/true"], project.path(), false);
    req.cwd = other.path().to_path_buf();
    let out = spawn(&req);
    assert!(spawn_failed(&out).contains("private inside the sandbox"));
}

#[test]
fn no_launcher_means_sandbox_unavailable_never_unsandboxed() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let body = format!("touch {}", marker.display());
    let req = sandboxed(&["/bin/sh", "-c", &body], dir.path(), false);

    let missing = probe_bwrap(Path::new("/nonexistent/bwrap"));
    let out = spawn_with_launcher(&req, &missing);
    match &out.exit {
        Exit::SandboxUnavailable(why) => assert!(why.contains("/nonexistent/bwrap"), "{why}"),
        other => panic!("{other:?}"),
    }

    // Installed but unable to create namespaces (a typical container).
    let fake = write_script(
        dir.path(),
        "bwrap",
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n",
        0o755,
    );
    let broken = probe_bwrap(&fake);
    let out = spawn_with_launcher(&req, &broken);
    match &out.exit {
        Exit::SandboxUnavailable(why) => {
            assert!(
                why.contains("No permissions to create new namespace"),
                "{why}"
            );
            assert!(why.contains("user.max_user_namespaces"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        broken.unwrap_err().to_string(),
        format!(
            "`{}` cannot create a sandbox here (exit 1: bwrap: No permissions to create new \
             namespace); user namespaces may be disabled: check `sysctl \
             user.max_user_namespaces`, `kernel.unprivileged_userns_clone` and, on Ubuntu, \
             `kernel.apparmor_restrict_unprivileged_userns`",
            fake.display()
        )
    );
    assert_eq!(
        missing.unwrap_err().to_string(),
        "`/nonexistent/bwrap` does not exist"
    );
    assert!(!marker.exists(), "the hook must not run unsandboxed");
}

#[test]
fn the_probe_fails_a_sandbox_without_the_seccomp_filter() {
    let launcher = bwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "probe.sh", sandbox::PROBE_SCRIPT, 0o700);
    let socket = dir.path().join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let dir_s = dir.path().to_str().unwrap();
    // The same sandbox minus `--seccomp`: the probe script must refuse it.
    let out = std::process::Command::new(&launcher.program)
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
        .args([
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            dir_s,
            dir_s,
            "--unshare-all",
        ])
        .args(["--cap-drop", "ALL", "--die-with-parent", "--"])
        .arg(&script)
        .arg(&socket)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    // With it, through the runner, the probe passes.
    assert_eq!(
        probe_bwrap(&launcher.program).map(|l| l.kind).ok(),
        Some(LauncherKind::Bubblewrap)
    );
}

/// Why no launcher was found, word for word.
#[test]
fn no_launcher_says_why() {
    let search = LauncherSearch {
        pin: Ok(None),
        project: None,
        cwd: None,
    };
    assert_eq!(
        sandbox::find_bwrap_in(&[], "", &search)
            .unwrap_err()
            .to_string(),
        "bubblewrap (`bwrap`) is not installed; install it (e.g. `apt-get install bubblewrap`) \
         or mark the hook `runsIn: \"unsandboxed\"` where the profile allows it"
    );
    let pin_error = crate::settings::SettingError::SandboxNotATable {
        path: "runtime.toml".into(),
    };
    let pin = LauncherSearch {
        pin: Err(&pin_error),
        ..search
    };
    assert_eq!(
        find_launcher(&pin).unwrap_err().to_string(),
        "the pinned launcher cannot be used: `runtime.toml`: `sandbox` must be a table"
    );
}

#[test]
fn a_launcher_someone_else_could_replace_is_refused() {
    let launcher_refusal_of = |p: &Path| sandbox::launcher_refusal(p, &LauncherSearch::ANY);
    let launcher = bwrap();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("bwrap");
    std::fs::copy(&launcher.program, &copy).unwrap();
    fn search(pin: &Path) -> LauncherSearch<'_> {
        LauncherSearch {
            pin: Ok(Some(pin)),
            project: None,
            cwd: None,
        }
    }
    // The real one, pinned (a copy elsewhere may lack the AppArmor profile
    // that lets bwrap create namespaces, so only refusals use the copy).
    let ok = find_launcher(&search(&launcher.program));
    assert_eq!(ok.map(|l| l.source).ok(), Some("pinned in runtime.toml"));
    if let Some(why) = launcher_refusal_of(&copy) {
        panic!("{why}");
    }
    for mode in [0o775, 0o757] {
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(mode)).unwrap();
        let why = find_launcher(&search(&copy)).unwrap_err().to_string();
        assert_eq!(
            why,
            format!(
                "`{}` is writable by others (mode {mode:o}), so it could be replaced",
                copy.display()
            )
        );
    }
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A group-writable directory (tempdir is 0700) lets others swap it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o770)).unwrap();
    let why = find_launcher(&search(&copy)).unwrap_err().to_string();
    assert!(why.contains("writable by others"), "{why}");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    // Inside the project or the cwd, never.
    let inside = LauncherSearch {
        pin: Ok(Some(&copy)),
        project: Some(dir.path()),
        cwd: None,
    };
    assert!(
        find_launcher(&inside)
            .unwrap_err()
            .to_string()
            .contains("inside the project")
    );
    let in_cwd = LauncherSearch {
        pin: Ok(Some(&copy)),
        project: None,
        cwd: Some(dir.path()),
    };
    assert!(
        find_launcher(&in_cwd)
            .unwrap_err()
            .to_string()
            .contains("inside the working directory")
    );
}

#[test]
fn inherited_descriptors_are_closed_for_every_hook() {
    bwrap();
    let project = tempfile::tempdir().unwrap();
    // An fd without close-on-exec, as a host could leave the shim.
    let file = std::fs::File::open("/dev/null").unwrap();
    #[allow(unsafe_code)]
    // SAFETY: dup returns a new descriptor without FD_CLOEXEC, owned below.
    let leaked = unsafe { std::os::fd::OwnedFd::from_raw_fd(libc::dup(file.as_raw_fd())) };
    let fd = leaked.as_raw_fd();
    let check = format!("[ -e /proc/self/fd/{fd} ] && echo LEAKED || echo closed");
    let plain = spawn(&sh(&check));
    assert_eq!(text(&plain.stdout), "closed\n");
    let boxed = spawn(&sandboxed(
        &["/bin/sh", "-c", &check],
        project.path(),
        false,
    ));
    assert_eq!(text(&boxed.stdout), "closed\n", "{}", text(&boxed.stderr));
    drop(leaked);
}

#[test]
fn protected_paths_are_created_for_bubblewrap_only_and_named_for_sandbox_exec() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "").unwrap();
    let program = write_script(&root, "hook.sh", "#!/bin/sh\n", 0o755);
    let mut req = request(&[program.to_str().unwrap()], &root);
    let sandbox = Sandbox {
        project: Some(root.clone()),
        ..Sandbox::default()
    };
    req.sandbox = SandboxSpec::Required(sandbox.clone());
    let macos = Launcher {
        kind: LauncherKind::SandboxExec,
        program: "/usr/bin/sandbox-exec".into(),
        source: "system directory",
        empty_as_tmpfs: false,
    };
    let argv = spawn::confine(&macos, &program, &req, &sandbox, None).unwrap();
    let args: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into()).collect();
    assert!(
        !root.join(".claude").exists(),
        "sandbox-exec needs no placeholder"
    );
    for rel in [".claude", ".git/hooks", ".git/config", ".github/hooks"] {
        let named = root.join(rel).to_string_lossy().into_owned();
        assert!(
            args.iter()
                .any(|a| a.starts_with("-D P") && a.ends_with(&named)),
            "{rel}: {args:?}"
        );
    }
    let linux = Launcher {
        kind: LauncherKind::Bubblewrap,
        program: "/usr/bin/bwrap".into(),
        source: "system directory",
        empty_as_tmpfs: false,
    };
    let argv = spawn::confine(&linux, &program, &req, &sandbox, Some(3)).unwrap();
    let args: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into()).collect();
    for rel in [".claude", ".github/hooks", ".metaproject", ".kimi-code"] {
        assert!(
            root.join(rel).is_dir(),
            "{rel} is created to be mounted over"
        );
        let named = root.join(rel).to_string_lossy().into_owned();
        assert!(
            args.windows(3)
                .any(|w| w[0] == "--ro-bind" && w[1] == named && w[2] == named),
            "{rel}: {args:?}"
        );
    }
    // Where bubblewrap takes `--perms` for a tmpfs, an empty one is a tmpfs
    // of mode 0555 instead; a directory with something in it stays a bind.
    let tmpfs = Launcher {
        empty_as_tmpfs: true,
        ..linux.clone()
    };
    let argv = spawn::confine(&tmpfs, &program, &req, &sandbox, Some(3)).unwrap();
    let args: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into()).collect();
    for rel in [".claude", ".github/hooks", ".metaproject", ".git/hooks"] {
        let named = root.join(rel).to_string_lossy().into_owned();
        assert!(
            args.windows(4)
                .any(|w| w == ["--perms", "0555", "--tmpfs", named.as_str()]),
            "{rel}: {args:?}"
        );
    }
    let config = root.join(".git/config").to_string_lossy().into_owned();
    assert!(
        args.windows(3)
            .any(|w| w[0] == "--ro-bind" && w[1] == config && w[2] == config),
        "{args:?}"
    );
    // The parents inside the project are pinned by a bind onto themselves.
    let git = root.join(".git").to_string_lossy().into_owned();
    assert!(
        args.windows(2).any(|w| w[0] == "--bind" && w[1] == git),
        "{args:?}"
    );
}

#[test]
fn without_a_project_a_cwd_under_tmp_is_seen_read_only() {
    bwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("in-cwd"), "here\n").unwrap();
    let mut req = request(
        &[
            "/bin/sh",
            "-c",
            "cat in-cwd; echo x > new 2>/dev/null && echo WROTE; pwd",
        ],
        cwd.path(),
    );
    req.sandbox = SandboxSpec::Required(Sandbox::default());
    let out = spawn(&req);
    let real = std::fs::canonicalize(cwd.path()).unwrap();
    assert_eq!(
        text(&out.stdout),
        format!("here\n{}\n", real.display()),
        "{}",
        text(&out.stderr)
    );
    assert!(!cwd.path().join("new").exists());
}

#[test]
fn a_path_entry_inside_the_project_or_cwd_is_passed_over() {
    let launcher = bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let project = root.join("proj");
    let cwd = root.join("cwd");
    let good = root.join("good");
    for dir in [project.join("bin"), cwd.join("bin"), good.clone()] {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&launcher.program, dir.join("bwrap")).unwrap();
    }
    let search = LauncherSearch {
        pin: Ok(None),
        project: Some(&project),
        cwd: Some(&cwd),
    };
    let path = format!(
        "bin:{}:{}:{}",
        project.join("bin").display(),
        cwd.join("bin").display(),
        good.display()
    );
    let found = sandbox::find_bwrap_in(&[], &path, &search);
    assert_eq!(found.ok(), Some((good.join("bwrap"), "PATH entry")));
    // A system directory comes first.
    let found = sandbox::find_bwrap_in(&[good.to_str().unwrap()], &path, &search);
    assert_eq!(found.ok(), Some((good.join("bwrap"), "system directory")));
    // With only planted ones, none, and the reason says why.
    let only_planted = format!("{}", project.join("bin").display());
    let why = sandbox::find_bwrap_in(&[], &only_planted, &search)
        .unwrap_err()
        .to_string();
    assert!(why.contains("inside the project"), "{why}");
}

#[test]
fn a_writable_project_path_that_became_a_symlink_since_it_was_checked_is_not_bound() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let project = root.join("proj");
    let outside = root.join("outside");
    std::fs::create_dir_all(project.join("build")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let program = write_script(&project, "hook.sh", "#!/bin/sh\n", 0o755);
    let mut req = request(&[program.to_str().unwrap()], &project);
    let sandbox = Sandbox {
        project: Some(project.clone()),
        writable: vec![project.join("build/out")],
        ..Sandbox::default()
    };
    req.sandbox = SandboxSpec::Required(sandbox.clone());
    let linux = Launcher {
        kind: LauncherKind::Bubblewrap,
        program: "/usr/bin/bwrap".into(),
        source: "system directory",
        empty_as_tmpfs: false,
    };
    std::fs::create_dir_all(project.join("build/out")).unwrap();
    let argv = spawn::confine(&linux, &program, &req, &sandbox, Some(3)).unwrap();
    let named = project.join("build/out").to_string_lossy().into_owned();
    assert!(argv.iter().any(|a| a.to_string_lossy() == named));
    // Swapped for a symlink out of the project after the check.
    std::fs::remove_dir(project.join("build/out")).unwrap();
    std::os::unix::fs::symlink(&outside, project.join("build/out")).unwrap();
    let err = spawn::confine(&linux, &program, &req, &sandbox, Some(3)).unwrap_err();
    assert!(err.to_string().contains("became a symlink"), "{err}");
}
