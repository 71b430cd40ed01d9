//! Every human command's whole output, pinned: stdout, stderr and the exit
//! code of one typical call each (and the common mistakes), in a hermetic
//! home whose environment is the same on every machine. What differs
//! between runs (temp paths, times, durations, snapshot keys, the version)
//! is replaced by placeholders; see `Env::filters`.
//!
//! After a deliberate change of output, `INSTA_UPDATE=always
//! INSTA_FORCE_PASS=1 cargo nextest run -E 'test(/^cli_snapshots::/)'`
//! records the new outputs beside the tests and `cargo insta accept`
//! (cargo-insta) writes them into the snapshots; the diff is the review.

use serde_json::json;

use crate::common::{Env, aws_key, claude_bash, cmd_snapshot, render};

/// A user gate on Bash that denies `git push --force` with a reason on
/// stderr, run outside the sandbox.
const NO_FORCE_PUSH: &str = r#"{
  "schemaVersion": "1.0.0",
  "hooks": {
    "PreToolUse": [
      {
        "id": "no-force-push",
        "class": "gate",
        "matcher": "Bash",
        "runsIn": "unsandboxed",
        "command": {"argv": ["/bin/sh", "-c", "grep -q 'push --force' && { echo 'use --force-with-lease' >&2; exit 2; }; exit 0"]}
      }
    ]
  }
}
"#;

/// The same gate as a project hook, which runs once the project is trusted.
fn project_gate(env: &Env) {
    env.write(env.project_hooks(), NO_FORCE_PUSH);
}

/// A home with `NO_FORCE_PUSH` installed for Claude Code.
fn installed() -> Env {
    let env = Env::fixed();
    env.write(env.user_hooks(), NO_FORCE_PUSH);
    env.run(&["install", "claude-code"]).code(0);
    env
}

// ------------------------------------------------------------------ help

#[test]
fn help() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["--help"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    One hook config that guards every coding agent you use: the keryx lifecycle-hook runtime, a per-event shim for each agent host, and the installer that wires it in

    Usage: keryx-hooks <COMMAND>

    Commands:
      run          Handle one event from an agent host (this is what hosts run)
      list         Show the merged, resolved hook registrations
      validate     Check the user and project hook files
      test         Run one hook once and show the payload it read and its answer
      trust        Review this project's command hooks and trust exactly this version
      untrust      Withdraw trust for this project's command hooks
      allow-once   Let one call a rule refused through that rule once (the refusal names its code; needs a terminal)
      enable       Turn a hook back on in the project file (or your own with --user)
      disable      Turn a hook off in the project file (or your own with --user)
      init         Write a starting hooks.json with an example gate and observer (and their scripts)
      hosts        List the agent hosts, which are set up here, and what install and import do with each
      install      Snapshot your hooks and wire keryx-hooks into agent hosts (merges, never overwrites)
      uninstall    Take keryx-hooks out of agent hosts' configs, leaving everything else as it was
      import       Move a host's own hooks into keryx-hooks, so they run once, sandboxed
      status       Show whether each hook snapshot is current and wired (exit 1 when not)
      doctor       Check the installation; with --fix, repair what can be repaired
      log          Show what the hooks decided and why, across sessions (newest last)
      export       Ship the hook records to an OpenTelemetry collector (OTLP/HTTP), from where the last export stopped
      explain      For one payload, which hooks `run` would fire, why the others would not, and its answer (runs no hook)
      security     Built-in hook bodies: scan a prompt or a write for secrets (payload on stdin)
      ctx          Built-in hook body: the context guard for shell commands (payload on stdin)
      completions  Print a shell completion script (e.g. `keryx-hooks completions bash > ~/.local/share/bash-completion/completions/keryx-hooks`)
      man          Print the manual page (roff), e.g. `keryx-hooks man | man -l -`
      help         Print this message or the help of the given subcommand(s)

    Options:
      -h, --help     Print help
      -V, --version  Print version

    ----- stderr -----
    ");
}

#[test]
fn export_help() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["export", "--help"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    Ship the hook records to an OpenTelemetry collector (OTLP/HTTP), from where the last export stopped

    Usage: keryx-hooks export [OPTIONS]

    Options:
          --follow           Keep shipping records as they are appended, retrying without end (for a service)
          --retries <N>      Without --follow: how many times to try a batch again before giving up (exit 1) [default: 5]
          --interval <SECS>  With --follow: seconds between looks for new records [default: 2]
          --batch <N>        The most records in one request [default: 512]
      -h, --help             Print help
      -V, --version          Print version

    ----- stderr -----
    ");
}

#[test]
fn export_without_a_collector() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["export"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: no collector is set, so there is nowhere to export to
    hint: add `[export]` with `endpoint = "http://collector.example:4318"` to `[HOME]/.keryx/runtime.toml` (README: Records to a collector)
    "#);
}

#[test]
fn version() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["--version"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    keryx-hooks [VERSION]

    ----- stderr -----
    ");
}

#[test]
fn an_unknown_command_is_a_usage_error() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["frob"]), @"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: unrecognized subcommand 'frob'

    Usage: keryx-hooks <COMMAND>

    For more information, try '--help'.
    ");
}

#[test]
fn an_unknown_option_is_a_usage_error() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["list", "--bogus"]), @"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: unexpected argument '--bogus' found

    Usage: keryx-hooks list [OPTIONS]

    For more information, try '--help'.
    ");
}

#[test]
fn a_missing_argument_is_a_usage_error() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["install"]), @"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: the following required arguments were not provided:
      <HOST>...

    Usage: keryx-hooks install <HOST>...

    For more information, try '--help'.
    ");
}

#[test]
fn an_unknown_host_is_named_with_the_one_meant() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["install", "claud"]), @"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: unknown host `claud`
    hint: did you mean `claude-code`? hosts that can be wired: claude-code, cline, codex, copilot, cursor, deepagents, gemini-cli, kilo, kimi, opencode, pi, qwen-code, vibe
    ");
}

// ------------------------------------------------------ hooks and config

#[test]
fn list() {
    let env = Env::fixed();
    env.write(env.user_hooks(), NO_FORCE_PUSH);
    cmd_snapshot!(env.filters(), env.cmd(&["list"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    keryx.ctx-guard
      scope=builtin class=gate enabled=true appliesToChildAgents=true
      events=PreToolUse matcher=^(Bash|Read|Grep|mcp__.+)$ timeoutMs=5000 runsIn=unsandboxed
      command: keryx-hooks ctx hook keryx
      effective: on, runsIn=unsandboxed
    keryx.security-check-input
      scope=builtin class=gate enabled=true appliesToChildAgents=true
      events=UserPromptSubmit matcher=* timeoutMs=5000 runsIn=unsandboxed
      command: keryx-hooks security check-input --source untrusted-external --runtime keryx
      effective: on, runsIn=unsandboxed
      cannot gate UserPromptSubmit on: cline, vibe
    keryx.security-check-output
      scope=builtin class=gate enabled=true appliesToChildAgents=true
      events=PreToolUse matcher=^(Write|Edit|MultiEdit|NotebookEdit|mcp__.+)$ timeoutMs=5000 runsIn=unsandboxed
      command: keryx-hooks security check-output --runtime keryx
      effective: on, runsIn=unsandboxed
    keryx.learning-observer
      scope=builtin class=observe enabled=true appliesToChildAgents=true
      events=PreToolUse,PostToolUse,PostToolUseFailure,UserPromptSubmit,SessionStart,Stop,SessionEnd matcher=* timeoutMs=5000
      in-process: LearningObserver port
      effective: on, in this process
    keryx.impact-evidence
      scope=builtin class=gate-advisory enabled=true appliesToChildAgents=true
      events=PreToolUse matcher=Write|Edit timeoutMs=5000
      in-process: ImpactEvidence port
      effective: off, runtime.toml leaves it off (`[impact] enabled` is not true)
    no-force-push
      scope=user class=gate enabled=true appliesToChildAgents=true
      events=PreToolUse matcher=Bash timeoutMs=5000 runsIn=unsandboxed
      command: /bin/sh -c grep -q 'push --force' && { echo 'use --force-with-lease' >&2; exit 2; }; exit 0
      effective: on, runsIn=unsandboxed
    rules:
      destructive/git-push-force-main  deny  on  (pack `destructive`): A force-push (--force, -f, a +refspec, even --force-with-lease) or a delete of main or master.
      destructive/git-push-force  ask  on  (pack `destructive`): A force-push (--force, -f, --mirror, a +refspec) to any branch; --force-with-lease is not matched.
      destructive/git-reset-hard  ask  on  (pack `destructive`): git reset --hard (and its plumbing form read-tree --reset -u).
      destructive/git-clean-force  ask  on  (pack `destructive`): git clean -f (any bundle: -fd, -fdx, -ffdx).
      destructive/git-discard-worktree  ask  on  (pack `destructive`): git checkout -- . / git checkout -f / git restore . / git switch --discard-changes: uncommitted edits are overwritten.
      destructive/git-branch-force-delete  ask  on  (pack `destructive`): git branch -D / --delete --force: a branch deleted whether or not it is merged.
      destructive/git-stash-drop  ask  on  (pack `destructive`): git stash drop / clear.
      destructive/git-history-purge  ask  on  (pack `destructive`): Expiring the reflog now or pruning unreachable objects now: the last way back to dropped commits.
      destructive/rm-root-or-home  deny  on  (pack `destructive`): A recursive rm of /, a system directory, the home (~, $HOME, /home/<user>, /Users/<user>), .. or everything in one of them.
      destructive/rm-everything-here  ask  on  (pack `destructive`): A recursive rm of * or . (everything in the current directory), or of a top-level directory of the home.
      destructive/find-delete-root  deny  on  (pack `destructive`): find from /, the home or .. with -delete or -exec rm/shred.
      destructive/disk-overwrite  deny  on  (pack `destructive`): dd to a block device, mkfs/wipefs/mkswap, shred of a device, a redirect onto a disk.
      destructive/chmod-chown-root  deny  on  (pack `destructive`): A recursive chmod/chown/chgrp of /, a system directory or the home.
      destructive/fork-bomb  deny  on  (pack `destructive`): The classic shell fork bomb.
      destructive/system-halt  ask  on  (pack `destructive`): shutdown, reboot, halt, poweroff, init 0/6.
      destructive/terraform-destroy  ask  on  (pack `destructive`): terraform/tofu destroy, apply -destroy, or a state rm.
      destructive/kubectl-delete-wide  ask  on  (pack `destructive`): kubectl delete of namespaces, persistent volumes or claims, CRDs, nodes, or --all.
      destructive/cloud-resource-delete  ask  on  (pack `destructive`): aws s3 rm/rb, terminate-instances, delete-*; gcloud … delete; az … delete.
      destructive/sql-drop-database  deny  on  (pack `destructive`): DROP DATABASE / DROP SCHEMA … CASCADE sent through a database client, or dropdb.
      destructive/sql-drop-or-wipe-table  ask  on  (pack `destructive`): DROP TABLE, TRUNCATE, DELETE FROM without WHERE, FLUSHALL, or a framework's database reset.
      exfiltration/credential-file-upload  deny  on  (pack `exfiltration`): A credentials-set file (private key, .env, cloud/registry token file) given to curl, wget, nc, socat, http, gh gist and the like.
      exfiltration/credential-file-copy-remote  ask  on  (pack `exfiltration`): scp, rsync or rclone of a credentials-set file to another host.
      exfiltration/secret-env-to-network  ask  on  (pack `exfiltration`): A secret-named variable ($AWS_SECRET_ACCESS_KEY, $GITHUB_TOKEN, *_TOKEN, *_KEY, *_SECRET, *_PASSWORD) on the command line of a network command to a host other than the service it belongs to.
      exfiltration/secret-env-to-exfil-host  deny  on  (pack `exfiltration`): A secret-named variable sent to a host that is not a known API, with the secret as request data or in the URL (curl -d "$GITHUB_TOKEN" https://…).
      exfiltration/environment-dump-to-network  deny  on  (pack `exfiltration`): env, printenv, set or export -p piped into, or substituted into, a network command.
      exfiltration/cloud-metadata-endpoint  deny  on  (pack `exfiltration`): The cloud instance metadata service (169.254.169.254, metadata.google.internal, fd00:ec2::254, 169.254.170.2, 100.100.100.200): where a machine's cloud credentials are served.
      exfiltration/secret-in-url  deny  on  (pack `exfiltration`): A URL whose query, userinfo or path carries what the secret scanner calls a secret.
      exfiltration/dns-exfiltration  deny  on  (pack `exfiltration`): dig, nslookup, host or drill of a name built from a command substitution (dig $(…).attacker.tld).
      exfiltration/exfil-service-host  deny  on  (pack `exfiltration`): A request to a paste, file-drop or request-capture service (webhook.site, requestbin, pipedream, interactsh/oast, burpcollaborator, transfer.sh, 0x0.st, termbin).
      exfiltration/tunnel-host  ask  on  (pack `exfiltration`): A request to a public tunnel endpoint (ngrok, trycloudflare, localtunnel, serveo, pinggy).
      exfiltration/reverse-shell  deny  on  (pack `exfiltration`): A shell wired to a network socket: /dev/tcp redirects, nc -e, socat exec:, mkfifo-and-nc, interpreter socket-and-dup2 code.
      exfiltration/inline-code-sends-credential-files  deny  on  (pack `exfiltration`): Inline interpreter code (python -c, node -e, perl -e, ruby -e) that both touches a credential file and makes a network request.
      exfiltration/inline-code-sends-environment  ask  on  (pack `exfiltration`): Inline interpreter code that makes a network request with the whole environment or a secret-named variable.
      exfiltration/build-forwards-credentials  ask  on  (pack `exfiltration`): A container build given the host's SSH agent or a credential file (docker build --ssh default, buildx build --ssh, --secret src=~/.aws/credentials): every RUN step of the Dockerfile can use them.
      persistence/shell-startup-payload  deny  on  (pack `persistence`): A shell startup file (~/.bashrc, ~/.zshrc, ~/.profile, …) written with a download, a decoder, a shutdown or a socket in it.
      persistence/shell-startup-write  ask  on  (pack `persistence`): Any write to a shell startup file: ~/.bashrc, ~/.zshrc, ~/.profile, ~/.bash_profile, ~/.zprofile, ~/.zshenv, fish config, /etc/profile*.
      persistence/git-hooks-write  ask  on  (pack `persistence`): A write into .git/hooks/ (or the configured core.hooksPath), or pointing core.hooksPath somewhere new.
      persistence/launch-agents-write  deny  on  (pack `persistence`): A write into ~/Library/LaunchAgents, /Library/LaunchAgents or /Library/LaunchDaemons.
      persistence/launchctl-load  ask  on  (pack `persistence`): launchctl load / bootstrap / submit / enable.
      persistence/cron-write  deny  on  (pack `persistence`): A write into /etc/cron*, /var/spool/cron, or a crontab installed from a file or stdin (crontab -, crontab file).
      persistence/systemd-units-write  ask  on  (pack `persistence`): A write into ~/.config/systemd/ or /etc/systemd/.
      persistence/systemctl-enable  ask  on  (pack `persistence`): systemctl (--user) enable / link / edit / set-property, or a transient systemd-run timer.
      persistence/ci-workflow-write  ask  on  (pack `persistence`): A write into .github/workflows/ or .gitlab-ci.yml (the CI configuration).
      persistence/ssh-authorized-keys  deny  on  (pack `persistence`): A write to ~/.ssh/authorized_keys (or authorized_keys2), or to ~/.ssh/rc and ~/.ssh/environment.
      persistence/system-auth-files  deny  on  (pack `persistence`): A write to sudoers, /etc/passwd, /etc/shadow, /etc/ld.so.preload or PAM configuration.
      persistence/autostart-write  ask  on  (pack `persistence`): A write into ~/.config/autostart/ (XDG autostart) or /etc/xdg/autostart/.
      persistence/inline-code-writes-persistence  deny  on  (pack `persistence`): Inline interpreter code (python -c, node -e, perl -e, ruby -e) that opens a startup file, authorized_keys, a crontab, a launch agent, a systemd unit, a git hook or a CI workflow for writing.
      secrets-in-context/cli-token-print  deny  on  (pack `secrets-in-context`): gh auth token, gh auth status --show-token, gcloud auth print-*-token, az account get-access-token, heroku auth:token, doctl auth token, npm config get of an auth token, git credential fill.
      secrets-in-context/cloud-credential-print  deny  on  (pack `secrets-in-context`): aws configure get of a secret, aws configure export-credentials, aws sts get-session-token / get-federation-token, aws ecr get-login-password not piped into a login.
      secrets-in-context/cloud-role-credentials-print  ask  on  (pack `secrets-in-context`): aws sts assume-role (prints temporary keys).
      secrets-in-context/kubernetes-secret-print  deny  on  (pack `secrets-in-context`): kubectl get secret … -o yaml/json/jsonpath, kubectl config view --raw / --flatten.
      secrets-in-context/secret-store-read  ask  on  (pack `secrets-in-context`): Reading a secret from a store: vault kv get / vault read, op read / op item get --reveal, aws secretsmanager get-secret-value, aws ssm get-parameter --with-decryption, gcloud secrets versions access, az keyvault secret show, pass show, bw get, sops -d, doppler secrets.
      secrets-in-context/password-manager-reveal  deny  on  (pack `secrets-in-context`): op read, op item get --reveal / --fields, security find-*-password -w / -g, secret-tool lookup, keyring get.
      secrets-in-context/secret-variable-print  deny  on  (pack `secrets-in-context`): printenv of a secret-named variable, or echo/printf of $…TOKEN, $…SECRET, $…KEY, $…PASSWORD to the terminal (not piped into a login, not redirected to a file).
      secrets-in-context/environment-dump  ask  on  (pack `secrets-in-context`): env, printenv, set or export -p on their own (the whole environment), not filtered through grep/wc.
      secrets-in-context/environment-grep-secrets  deny  on  (pack `secrets-in-context`): env / printenv / set filtered for token, secret, key, password or cloud credential names.
      secrets-in-context/credentials-in-git-history  deny  on  (pack `secrets-in-context`): git show / cat-file / log -p / diff / archive of a credentials file from history (git show HEAD:.env, git cat-file -p <rev>:id_rsa).
      secrets-in-context/bulk-credential-read  deny  on  (pack `secrets-in-context`): A list of credential files fed to a reader through xargs (find ~/.ssh -name 'id_*' | xargs cat, echo ~/.aws/credentials | xargs cat).
      secrets-in-context/registry-token-print  ask  on  (pack `secrets-in-context`): npm token list / create, pypi/twine and cargo token printing, docker login with a password on the command line.
      secrets-in-context/inline-code-reads-credential-file  deny  on  (pack `secrets-in-context`): Inline interpreter code (python -c, node -e, perl -e, ruby -e) that opens or reads a credentials file: a private key, ~/.aws/credentials, .env, .netrc, a registry token file.
      secrets-in-context/inline-code-prints-secret-variable  deny  on  (pack `secrets-in-context`): Inline interpreter code that prints a secret-named environment variable: print(os.environ["GITHUB_TOKEN"]), console.log(process.env.NPM_TOKEN), puts ENV["AWS_SECRET_ACCESS_KEY"].
      supply-chain/pipe-to-shell  ask  on  (pack `supply-chain`): curl/wget output piped into a shell or interpreter (curl … | sh, wget -O- | bash, curl … | sudo python3).
      supply-chain/remote-script-substitution  ask  on  (pack `supply-chain`): A downloaded script run through process or command substitution (bash <(curl …), sh -c "$(curl …)", source <(wget -qO- …), eval "$(curl …)") or PowerShell's iex (iwr …).
      supply-chain/install-from-unknown-url  ask  on  (pack `supply-chain`): pip/uv/pipx/poetry, npm/pnpm/yarn/bun or cargo installing from a URL or a git remote on a host other than the main forges and registries.
      supply-chain/unknown-package-index  ask  on  (pack `supply-chain`): A package manager pointed at another registry or index (--registry, --index-url, --extra-index-url, --trusted-host, npm/pip config set registry/index-url).
      supply-chain/npx-auto-yes-unknown  ask  on  (pack `supply-chain`): npx/bunx/pnpm dlx/npm exec with --yes (install without asking) of a package not in the list of common tools, e.g. npx -y some-package@latest.
      supply-chain/typosquat-pypi  deny  on  (pack `supply-chain`): pip/uv/pipx/poetry installing a known typosquat or one-edit lookalike of a top PyPI package (reqeusts, requets, urlib3, python-dateutils, colourama, jeIlyfish, setup-tools, djanga, …).
      supply-chain/typosquat-npm  deny  on  (pack `supply-chain`): npm/pnpm/yarn/bun/npx installing or running a known typosquat or one-edit lookalike of a top npm package (crossenv, electorn, loadsh, lodahs, raect, axois, mongose, jquery.js, …).
      mcp/credentials-access  deny  on  (pack `mcp`): An MCP string argument naming a credentials-set file (private key, .env, cloud/registry token file).
      mcp/write-startup-or-persistence  deny  on  (pack `mcp`): An MCP write/edit/create/move/copy tool aimed at a shell startup file, authorized_keys, a launch agent, cron or a systemd unit.
      mcp/write-workflows-or-hooks  ask  on  (pack `mcp`): An MCP write/edit/create tool aimed at .github/workflows/, .gitlab-ci.yml or .git/hooks/.
      mcp/secret-in-url  deny  on  (pack `mcp`): An MCP argument URL whose query, userinfo or path carries a secret.
      mcp/metadata-endpoint  deny  on  (pack `mcp`): An MCP fetch or browser call to a cloud metadata endpoint (169.254.169.254, metadata.google.internal, fd00:ec2::254, 169.254.170.2).
      mcp/exfil-service-host  deny  on  (pack `mcp`): An MCP call to a request-capture or paste service (webhook.site, requestbin, pipedream, oast/interactsh, transfer.sh).
      mcp/shell-tool-destructive  deny  on  (pack `mcp`): An MCP shell/exec tool given rm -rf of / or the home, a pipe from curl/wget or base64 -d into a shell, or a /dev/tcp redirect.
      mcp/sends-to-unknown-host  ask  on  (pack `mcp`): An MCP tool that sends data (send, submit, post, upload, publish, notify, webhook, share, email, form) or a fetch of an upload, collect or callback endpoint, aimed at a host that is not a known forge, chat or API service.
      obfuscation/decode-into-shell  deny  on  (pack `obfuscation`): base64/base32/basenc -d, xxd -r, openssl base64 -d, uudecode output piped into a shell or interpreter.
      obfuscation/transform-into-shell  deny  on  (pack `obfuscation`): gunzip/zcat/xz/bzip2/zstd, rev or tr (rot13) output piped into a shell, or printf/echo of hex or octal escapes piped into a shell.
      obfuscation/eval-decoded  deny  on  (pack `obfuscation`): eval, sh -c, source or a process substitution fed by a decoder: eval "$(echo … | base64 -d)", bash -c "$(… | xxd -r -p)", bash <(base64 -d <<< …).
      obfuscation/inline-decode-exec  deny  on  (pack `obfuscation`): Interpreter code that decodes and executes: exec(base64.b64decode(…)), eval(atob(…)), eval(Buffer.from(…, 'base64')…), new Function(atob(…)), exec(zlib.decompress(…)), marshal.loads, perl eval decode_base64, ruby eval Base64.decode64.
      obfuscation/assembled-sensitive-path  ask  on  (pack `obfuscation`): Interpreter code that builds a string from character codes or tiny fragments (chr(46)+chr(115)…, ''.join(map(chr, […])), String.fromCharCode(…), bytes([…]).decode(), '.s'+'sh'), the way payloads hide .ssh, id_rsa or .aws from checks.
      obfuscation/escaped-program-name  deny  on  (pack `obfuscation`): A program name written in ANSI-C escapes or hex ($'\\x72\\x6d' -rf …), or assembled from variables ($a$b …) at the start of a command.
      obfuscation/assembled-secret-string  deny  on  (pack `obfuscation`): Inline code that joins string fragments split inside a word into a credential path, a secret variable's name or a URL ("~/.s"+"sh/id_rsa", "GITHUB_"+"TOKEN", "http://e"+"vil.com").
      obfuscation/runs-agent-written-script  ask  on  (pack `obfuscation`): A command that runs a script the agent wrote earlier in the session (python3 x.py, bash x.sh, source x.sh, ./x.sh after a file write, a redirect, tee or inline code made x): what runs was written by the agent and read by nobody.

    ----- stderr -----
    "#);
}

#[test]
fn validate() {
    let env = Env::fixed();
    env.write(env.user_hooks(), NO_FORCE_PUSH);
    cmd_snapshot!(env.filters(), env.cmd(&["validate"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    ok: `[HOME]/.keryx/hooks.json` valid

    ----- stderr -----
    ");
}

#[test]
fn validate_an_unknown_event() {
    let env = Env::fixed();
    env.write(
        env.user_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {"PreToolUs": []}}"#,
    );
    cmd_snapshot!(env.filters(), env.cmd(&["validate"]), @"
    success: false
    exit_code: 1
    ----- stdout -----
    [HOME]/.keryx/hooks.json:1:51: error: unknown event `PreToolUs`; did you mean `PreToolUse`? (the keryx events are SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, PreCompact, Stop, SubagentStart, SubagentStop, SessionEnd) [hook-config-schema] (at /hooks/PreToolUs)

    ----- stderr -----
    ");
}

#[test]
fn test_a_hook_that_denies() {
    let env = Env::fixed();
    env.write(env.user_hooks(), NO_FORCE_PUSH);
    cmd_snapshot!(
        env.filters(),
        env.cmd(&["test", "no-force-push", "--command", "git push --force"]),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    hook no-force-push on PreToolUse (user gate, runsIn=unsandboxed, profile monitored-trusted-local)
    payload sent on stdin:
      {
        "schemaVersion": "1.0.0",
        "timestamp": "[TIME]",
        "hookId": "no-force-push",
        "event": "PreToolUse",
        "sessionId": "keryx-hooks-test",
        "runId": "test-run",
        "hook_event_name": "PreToolUse",
        "session_id": "keryx-hooks-test",
        "cwd": "[PROJECT]",
        "projectRoot": "[PROJECT]",
        "tool_use_id": "test-call-1",
        "toolCallId": "test-call-1",
        "tool_name": "Bash",
        "toolName": "Bash",
        "tool_input": {
          "command": "git push --force"
        },
        "toolInput": {
          "command": "git push --force"
        },
        "policyProfile": "monitored-trusted-local"
      }
    decision: deny
    reason: use --force-with-lease
    exit code: 2  duration: [MS] ms
    stderr:
      use --force-with-lease

    ----- stderr -----
    "#
    );
}

const RULES: &str = r#"{"schemaVersion": "1.0.0", "hooks": {},
  "rules": [{"id": "no-force-push-main", "description": "Never force-push main.",
             "tools": ["Bash"],
             "match": {"command": {"program": "git", "subcommand": "push",
                                   "flag": ["--force", "-f"], "arg": "^(origin/)?main$"}},
             "decision": "deny", "reason": "Push a branch instead."}]}"#;

#[test]
fn test_a_rule() {
    let env = Env::fixed();
    env.write(env.user_hooks(), RULES);
    cmd_snapshot!(
        env.filters(),
        env.cmd(&["test", "--rule", "no-force-push-main", "--command", "sudo git push -f origin main"]),
        @"
    success: true
    exit_code: 0
    ----- stdout -----
    rule `no-force-push-main` (user, `[HOME]/.keryx/hooks.json`)
      decision: deny
      matched:  command `git push -f origin main`
      reason:   Push a branch instead.

    ----- stderr -----
    "
    );
}

#[test]
fn list_with_rules() {
    let env = Env::fixed();
    env.write(env.user_hooks(), RULES);
    cmd_snapshot!(env.filters(), env.cmd(&["list"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    keryx.ctx-guard
      scope=builtin class=gate enabled=true appliesToChildAgents=true
      events=PreToolUse matcher=^(Bash|Read|Grep|mcp__.+)$ timeoutMs=5000 runsIn=unsandboxed
      command: keryx-hooks ctx hook keryx
      effective: on, runsIn=unsandboxed
    keryx.security-check-input
      scope=builtin class=gate enabled=true appliesToChildAgents=true
      events=UserPromptSubmit matcher=* timeoutMs=5000 runsIn=unsandboxed
      command: keryx-hooks security check-input --source untrusted-external --runtime keryx
      effective: on, runsIn=unsandboxed
      cannot gate UserPromptSubmit on: cline, vibe
    keryx.security-check-output
      scope=builtin class=gate enabled=true appliesToChildAgents=true
      events=PreToolUse matcher=^(Write|Edit|MultiEdit|NotebookEdit|mcp__.+)$ timeoutMs=5000 runsIn=unsandboxed
      command: keryx-hooks security check-output --runtime keryx
      effective: on, runsIn=unsandboxed
    keryx.learning-observer
      scope=builtin class=observe enabled=true appliesToChildAgents=true
      events=PreToolUse,PostToolUse,PostToolUseFailure,UserPromptSubmit,SessionStart,Stop,SessionEnd matcher=* timeoutMs=5000
      in-process: LearningObserver port
      effective: on, in this process
    keryx.impact-evidence
      scope=builtin class=gate-advisory enabled=true appliesToChildAgents=true
      events=PreToolUse matcher=Write|Edit timeoutMs=5000
      in-process: ImpactEvidence port
      effective: off, runtime.toml leaves it off (`[impact] enabled` is not true)
    rules:
      destructive/git-push-force-main  deny  on  (pack `destructive`): A force-push (--force, -f, a +refspec, even --force-with-lease) or a delete of main or master.
      destructive/git-push-force  ask  on  (pack `destructive`): A force-push (--force, -f, --mirror, a +refspec) to any branch; --force-with-lease is not matched.
      destructive/git-reset-hard  ask  on  (pack `destructive`): git reset --hard (and its plumbing form read-tree --reset -u).
      destructive/git-clean-force  ask  on  (pack `destructive`): git clean -f (any bundle: -fd, -fdx, -ffdx).
      destructive/git-discard-worktree  ask  on  (pack `destructive`): git checkout -- . / git checkout -f / git restore . / git switch --discard-changes: uncommitted edits are overwritten.
      destructive/git-branch-force-delete  ask  on  (pack `destructive`): git branch -D / --delete --force: a branch deleted whether or not it is merged.
      destructive/git-stash-drop  ask  on  (pack `destructive`): git stash drop / clear.
      destructive/git-history-purge  ask  on  (pack `destructive`): Expiring the reflog now or pruning unreachable objects now: the last way back to dropped commits.
      destructive/rm-root-or-home  deny  on  (pack `destructive`): A recursive rm of /, a system directory, the home (~, $HOME, /home/<user>, /Users/<user>), .. or everything in one of them.
      destructive/rm-everything-here  ask  on  (pack `destructive`): A recursive rm of * or . (everything in the current directory), or of a top-level directory of the home.
      destructive/find-delete-root  deny  on  (pack `destructive`): find from /, the home or .. with -delete or -exec rm/shred.
      destructive/disk-overwrite  deny  on  (pack `destructive`): dd to a block device, mkfs/wipefs/mkswap, shred of a device, a redirect onto a disk.
      destructive/chmod-chown-root  deny  on  (pack `destructive`): A recursive chmod/chown/chgrp of /, a system directory or the home.
      destructive/fork-bomb  deny  on  (pack `destructive`): The classic shell fork bomb.
      destructive/system-halt  ask  on  (pack `destructive`): shutdown, reboot, halt, poweroff, init 0/6.
      destructive/terraform-destroy  ask  on  (pack `destructive`): terraform/tofu destroy, apply -destroy, or a state rm.
      destructive/kubectl-delete-wide  ask  on  (pack `destructive`): kubectl delete of namespaces, persistent volumes or claims, CRDs, nodes, or --all.
      destructive/cloud-resource-delete  ask  on  (pack `destructive`): aws s3 rm/rb, terminate-instances, delete-*; gcloud … delete; az … delete.
      destructive/sql-drop-database  deny  on  (pack `destructive`): DROP DATABASE / DROP SCHEMA … CASCADE sent through a database client, or dropdb.
      destructive/sql-drop-or-wipe-table  ask  on  (pack `destructive`): DROP TABLE, TRUNCATE, DELETE FROM without WHERE, FLUSHALL, or a framework's database reset.
      exfiltration/credential-file-upload  deny  on  (pack `exfiltration`): A credentials-set file (private key, .env, cloud/registry token file) given to curl, wget, nc, socat, http, gh gist and the like.
      exfiltration/credential-file-copy-remote  ask  on  (pack `exfiltration`): scp, rsync or rclone of a credentials-set file to another host.
      exfiltration/secret-env-to-network  ask  on  (pack `exfiltration`): A secret-named variable ($AWS_SECRET_ACCESS_KEY, $GITHUB_TOKEN, *_TOKEN, *_KEY, *_SECRET, *_PASSWORD) on the command line of a network command to a host other than the service it belongs to.
      exfiltration/secret-env-to-exfil-host  deny  on  (pack `exfiltration`): A secret-named variable sent to a host that is not a known API, with the secret as request data or in the URL (curl -d "$GITHUB_TOKEN" https://…).
      exfiltration/environment-dump-to-network  deny  on  (pack `exfiltration`): env, printenv, set or export -p piped into, or substituted into, a network command.
      exfiltration/cloud-metadata-endpoint  deny  on  (pack `exfiltration`): The cloud instance metadata service (169.254.169.254, metadata.google.internal, fd00:ec2::254, 169.254.170.2, 100.100.100.200): where a machine's cloud credentials are served.
      exfiltration/secret-in-url  deny  on  (pack `exfiltration`): A URL whose query, userinfo or path carries what the secret scanner calls a secret.
      exfiltration/dns-exfiltration  deny  on  (pack `exfiltration`): dig, nslookup, host or drill of a name built from a command substitution (dig $(…).attacker.tld).
      exfiltration/exfil-service-host  deny  on  (pack `exfiltration`): A request to a paste, file-drop or request-capture service (webhook.site, requestbin, pipedream, interactsh/oast, burpcollaborator, transfer.sh, 0x0.st, termbin).
      exfiltration/tunnel-host  ask  on  (pack `exfiltration`): A request to a public tunnel endpoint (ngrok, trycloudflare, localtunnel, serveo, pinggy).
      exfiltration/reverse-shell  deny  on  (pack `exfiltration`): A shell wired to a network socket: /dev/tcp redirects, nc -e, socat exec:, mkfifo-and-nc, interpreter socket-and-dup2 code.
      exfiltration/inline-code-sends-credential-files  deny  on  (pack `exfiltration`): Inline interpreter code (python -c, node -e, perl -e, ruby -e) that both touches a credential file and makes a network request.
      exfiltration/inline-code-sends-environment  ask  on  (pack `exfiltration`): Inline interpreter code that makes a network request with the whole environment or a secret-named variable.
      exfiltration/build-forwards-credentials  ask  on  (pack `exfiltration`): A container build given the host's SSH agent or a credential file (docker build --ssh default, buildx build --ssh, --secret src=~/.aws/credentials): every RUN step of the Dockerfile can use them.
      persistence/shell-startup-payload  deny  on  (pack `persistence`): A shell startup file (~/.bashrc, ~/.zshrc, ~/.profile, …) written with a download, a decoder, a shutdown or a socket in it.
      persistence/shell-startup-write  ask  on  (pack `persistence`): Any write to a shell startup file: ~/.bashrc, ~/.zshrc, ~/.profile, ~/.bash_profile, ~/.zprofile, ~/.zshenv, fish config, /etc/profile*.
      persistence/git-hooks-write  ask  on  (pack `persistence`): A write into .git/hooks/ (or the configured core.hooksPath), or pointing core.hooksPath somewhere new.
      persistence/launch-agents-write  deny  on  (pack `persistence`): A write into ~/Library/LaunchAgents, /Library/LaunchAgents or /Library/LaunchDaemons.
      persistence/launchctl-load  ask  on  (pack `persistence`): launchctl load / bootstrap / submit / enable.
      persistence/cron-write  deny  on  (pack `persistence`): A write into /etc/cron*, /var/spool/cron, or a crontab installed from a file or stdin (crontab -, crontab file).
      persistence/systemd-units-write  ask  on  (pack `persistence`): A write into ~/.config/systemd/ or /etc/systemd/.
      persistence/systemctl-enable  ask  on  (pack `persistence`): systemctl (--user) enable / link / edit / set-property, or a transient systemd-run timer.
      persistence/ci-workflow-write  ask  on  (pack `persistence`): A write into .github/workflows/ or .gitlab-ci.yml (the CI configuration).
      persistence/ssh-authorized-keys  deny  on  (pack `persistence`): A write to ~/.ssh/authorized_keys (or authorized_keys2), or to ~/.ssh/rc and ~/.ssh/environment.
      persistence/system-auth-files  deny  on  (pack `persistence`): A write to sudoers, /etc/passwd, /etc/shadow, /etc/ld.so.preload or PAM configuration.
      persistence/autostart-write  ask  on  (pack `persistence`): A write into ~/.config/autostart/ (XDG autostart) or /etc/xdg/autostart/.
      persistence/inline-code-writes-persistence  deny  on  (pack `persistence`): Inline interpreter code (python -c, node -e, perl -e, ruby -e) that opens a startup file, authorized_keys, a crontab, a launch agent, a systemd unit, a git hook or a CI workflow for writing.
      secrets-in-context/cli-token-print  deny  on  (pack `secrets-in-context`): gh auth token, gh auth status --show-token, gcloud auth print-*-token, az account get-access-token, heroku auth:token, doctl auth token, npm config get of an auth token, git credential fill.
      secrets-in-context/cloud-credential-print  deny  on  (pack `secrets-in-context`): aws configure get of a secret, aws configure export-credentials, aws sts get-session-token / get-federation-token, aws ecr get-login-password not piped into a login.
      secrets-in-context/cloud-role-credentials-print  ask  on  (pack `secrets-in-context`): aws sts assume-role (prints temporary keys).
      secrets-in-context/kubernetes-secret-print  deny  on  (pack `secrets-in-context`): kubectl get secret … -o yaml/json/jsonpath, kubectl config view --raw / --flatten.
      secrets-in-context/secret-store-read  ask  on  (pack `secrets-in-context`): Reading a secret from a store: vault kv get / vault read, op read / op item get --reveal, aws secretsmanager get-secret-value, aws ssm get-parameter --with-decryption, gcloud secrets versions access, az keyvault secret show, pass show, bw get, sops -d, doppler secrets.
      secrets-in-context/password-manager-reveal  deny  on  (pack `secrets-in-context`): op read, op item get --reveal / --fields, security find-*-password -w / -g, secret-tool lookup, keyring get.
      secrets-in-context/secret-variable-print  deny  on  (pack `secrets-in-context`): printenv of a secret-named variable, or echo/printf of $…TOKEN, $…SECRET, $…KEY, $…PASSWORD to the terminal (not piped into a login, not redirected to a file).
      secrets-in-context/environment-dump  ask  on  (pack `secrets-in-context`): env, printenv, set or export -p on their own (the whole environment), not filtered through grep/wc.
      secrets-in-context/environment-grep-secrets  deny  on  (pack `secrets-in-context`): env / printenv / set filtered for token, secret, key, password or cloud credential names.
      secrets-in-context/credentials-in-git-history  deny  on  (pack `secrets-in-context`): git show / cat-file / log -p / diff / archive of a credentials file from history (git show HEAD:.env, git cat-file -p <rev>:id_rsa).
      secrets-in-context/bulk-credential-read  deny  on  (pack `secrets-in-context`): A list of credential files fed to a reader through xargs (find ~/.ssh -name 'id_*' | xargs cat, echo ~/.aws/credentials | xargs cat).
      secrets-in-context/registry-token-print  ask  on  (pack `secrets-in-context`): npm token list / create, pypi/twine and cargo token printing, docker login with a password on the command line.
      secrets-in-context/inline-code-reads-credential-file  deny  on  (pack `secrets-in-context`): Inline interpreter code (python -c, node -e, perl -e, ruby -e) that opens or reads a credentials file: a private key, ~/.aws/credentials, .env, .netrc, a registry token file.
      secrets-in-context/inline-code-prints-secret-variable  deny  on  (pack `secrets-in-context`): Inline interpreter code that prints a secret-named environment variable: print(os.environ["GITHUB_TOKEN"]), console.log(process.env.NPM_TOKEN), puts ENV["AWS_SECRET_ACCESS_KEY"].
      supply-chain/pipe-to-shell  ask  on  (pack `supply-chain`): curl/wget output piped into a shell or interpreter (curl … | sh, wget -O- | bash, curl … | sudo python3).
      supply-chain/remote-script-substitution  ask  on  (pack `supply-chain`): A downloaded script run through process or command substitution (bash <(curl …), sh -c "$(curl …)", source <(wget -qO- …), eval "$(curl …)") or PowerShell's iex (iwr …).
      supply-chain/install-from-unknown-url  ask  on  (pack `supply-chain`): pip/uv/pipx/poetry, npm/pnpm/yarn/bun or cargo installing from a URL or a git remote on a host other than the main forges and registries.
      supply-chain/unknown-package-index  ask  on  (pack `supply-chain`): A package manager pointed at another registry or index (--registry, --index-url, --extra-index-url, --trusted-host, npm/pip config set registry/index-url).
      supply-chain/npx-auto-yes-unknown  ask  on  (pack `supply-chain`): npx/bunx/pnpm dlx/npm exec with --yes (install without asking) of a package not in the list of common tools, e.g. npx -y some-package@latest.
      supply-chain/typosquat-pypi  deny  on  (pack `supply-chain`): pip/uv/pipx/poetry installing a known typosquat or one-edit lookalike of a top PyPI package (reqeusts, requets, urlib3, python-dateutils, colourama, jeIlyfish, setup-tools, djanga, …).
      supply-chain/typosquat-npm  deny  on  (pack `supply-chain`): npm/pnpm/yarn/bun/npx installing or running a known typosquat or one-edit lookalike of a top npm package (crossenv, electorn, loadsh, lodahs, raect, axois, mongose, jquery.js, …).
      mcp/credentials-access  deny  on  (pack `mcp`): An MCP string argument naming a credentials-set file (private key, .env, cloud/registry token file).
      mcp/write-startup-or-persistence  deny  on  (pack `mcp`): An MCP write/edit/create/move/copy tool aimed at a shell startup file, authorized_keys, a launch agent, cron or a systemd unit.
      mcp/write-workflows-or-hooks  ask  on  (pack `mcp`): An MCP write/edit/create tool aimed at .github/workflows/, .gitlab-ci.yml or .git/hooks/.
      mcp/secret-in-url  deny  on  (pack `mcp`): An MCP argument URL whose query, userinfo or path carries a secret.
      mcp/metadata-endpoint  deny  on  (pack `mcp`): An MCP fetch or browser call to a cloud metadata endpoint (169.254.169.254, metadata.google.internal, fd00:ec2::254, 169.254.170.2).
      mcp/exfil-service-host  deny  on  (pack `mcp`): An MCP call to a request-capture or paste service (webhook.site, requestbin, pipedream, oast/interactsh, transfer.sh).
      mcp/shell-tool-destructive  deny  on  (pack `mcp`): An MCP shell/exec tool given rm -rf of / or the home, a pipe from curl/wget or base64 -d into a shell, or a /dev/tcp redirect.
      mcp/sends-to-unknown-host  ask  on  (pack `mcp`): An MCP tool that sends data (send, submit, post, upload, publish, notify, webhook, share, email, form) or a fetch of an upload, collect or callback endpoint, aimed at a host that is not a known forge, chat or API service.
      obfuscation/decode-into-shell  deny  on  (pack `obfuscation`): base64/base32/basenc -d, xxd -r, openssl base64 -d, uudecode output piped into a shell or interpreter.
      obfuscation/transform-into-shell  deny  on  (pack `obfuscation`): gunzip/zcat/xz/bzip2/zstd, rev or tr (rot13) output piped into a shell, or printf/echo of hex or octal escapes piped into a shell.
      obfuscation/eval-decoded  deny  on  (pack `obfuscation`): eval, sh -c, source or a process substitution fed by a decoder: eval "$(echo … | base64 -d)", bash -c "$(… | xxd -r -p)", bash <(base64 -d <<< …).
      obfuscation/inline-decode-exec  deny  on  (pack `obfuscation`): Interpreter code that decodes and executes: exec(base64.b64decode(…)), eval(atob(…)), eval(Buffer.from(…, 'base64')…), new Function(atob(…)), exec(zlib.decompress(…)), marshal.loads, perl eval decode_base64, ruby eval Base64.decode64.
      obfuscation/assembled-sensitive-path  ask  on  (pack `obfuscation`): Interpreter code that builds a string from character codes or tiny fragments (chr(46)+chr(115)…, ''.join(map(chr, […])), String.fromCharCode(…), bytes([…]).decode(), '.s'+'sh'), the way payloads hide .ssh, id_rsa or .aws from checks.
      obfuscation/escaped-program-name  deny  on  (pack `obfuscation`): A program name written in ANSI-C escapes or hex ($'\\x72\\x6d' -rf …), or assembled from variables ($a$b …) at the start of a command.
      obfuscation/assembled-secret-string  deny  on  (pack `obfuscation`): Inline code that joins string fragments split inside a word into a credential path, a secret variable's name or a URL ("~/.s"+"sh/id_rsa", "GITHUB_"+"TOKEN", "http://e"+"vil.com").
      obfuscation/runs-agent-written-script  ask  on  (pack `obfuscation`): A command that runs a script the agent wrote earlier in the session (python3 x.py, bash x.sh, source x.sh, ./x.sh after a file write, a redirect, tee or inline code made x): what runs was written by the agent and read by nobody.
      no-force-push-main  deny  on  (user, `[HOME]/.keryx/hooks.json`): Never force-push main.

    ----- stderr -----
    "#);
}

#[test]
fn test_an_unknown_hook() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["test", "no-such-hook"]), @"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: no hook `no-such-hook`
    hint: keryx-hooks list
    ");
}

#[test]
fn init() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["init"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    wrote `[HOME]/.keryx/hooks.json`
    wrote `[HOME]/.keryx/scripts/example-gate.sh`
    wrote `[HOME]/.keryx/scripts/example-observer.sh`
    next: `keryx-hooks validate`, then `keryx-hooks test example-no-force-push`
    `keryx-hooks install <host>` snapshots them and wires keryx-hooks into a host

    ----- stderr -----
    ");
}

#[test]
fn init_project() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["init", "--scope", "project"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    wrote `[PROJECT]/.metaproject/hooks.json`
    wrote `[PROJECT]/.metaproject/hooks/example-gate.sh`
    wrote `[PROJECT]/.metaproject/hooks/example-observer.sh`
    next: `keryx-hooks validate`, then `keryx-hooks test example-no-force-push`
    project hooks run once you review them with `keryx-hooks trust`

    ----- stderr -----
    ");
}

#[test]
fn disable_and_enable() {
    let env = Env::fixed();
    project_gate(&env);
    cmd_snapshot!(env.filters(), env.cmd(&["disable", "no-force-push"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    Disabled `no-force-push` in `[PROJECT]/.metaproject/hooks.json`.
    `[PROJECT]/.metaproject/hooks.json` is not trusted, so its command hooks still do not run; review and trust it with `keryx-hooks trust`.

    ----- stderr -----
    ");
    cmd_snapshot!(env.filters(), env.cmd(&["enable", "no-force-push"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    Enabled `no-force-push` in `[PROJECT]/.metaproject/hooks.json`.
    `[PROJECT]/.metaproject/hooks.json` is not trusted, so its command hooks still do not run; review and trust it with `keryx-hooks trust`.

    ----- stderr -----
    ");
}

#[test]
fn disable_a_builtin_gate_without_acknowledging_the_risk() {
    let env = Env::fixed();
    cmd_snapshot!(
        env.filters(),
        env.cmd(&["disable", "--user", "keryx.ctx-guard"]),
        @"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `keryx.ctx-guard` is a built-in gate hook that can block what it finds; turning it off needs `--acknowledge-gate-risk`
    hint: `keryx-hooks disable keryx.ctx-guard --user --acknowledge-gate-risk` (every session start will name it while it is off)
    "
    );
}

// ----------------------------------------------------------------- trust

#[test]
fn trust_without_a_terminal_or_yes() {
    let env = Env::fixed();
    project_gate(&env);
    cmd_snapshot!(env.filters(), env.cmd(&["trust"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----
    `[PROJECT]/.metaproject/hooks.json` defines 1 command hook. Trusting it lets it run, exactly as shown:

    hook `no-force-push` on PreToolUse
      matcher="Bash" class=gate runsIn=unsandboxed network=none
      timeoutMs=5000 appliesToChildAgents=true profiles=all enabled=true
      argv: "/bin/sh" "-c" "grep -q 'push --force' && { echo 'use --force-with-lease' >&2; exit 2; }; exit 0"
      cwd: (the project root)
      warning: runs unsandboxed, outside the OS sandbox, with your full permissions

    note: this project is not trusted yet; its command hooks do not run until you trust it

    ----- stderr -----
    error: there is no terminal to ask in and `--yes` was not given; nothing was trusted
    hint: run `keryx-hooks trust` in a terminal to review and confirm, or `keryx-hooks trust --yes` once you have read the commands above
    "#);
}

#[test]
fn trust_outside_a_project() {
    let env = Env::fixed();
    let elsewhere = env.home.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut cmd = env.cmd(&["trust", "--yes"]);
    cmd.current_dir(&elsewhere);
    cmd_snapshot!(env.filters(), &mut cmd, @"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    error: `[ROOT]/elsewhere` is not inside a project (no git toplevel or `.metaproject` above it)
    hint: run this from inside the project whose hooks you mean
    ");
}

#[test]
fn trust_yes_and_untrust() {
    let env = Env::fixed();
    project_gate(&env);
    cmd_snapshot!(env.filters(), env.cmd(&["trust", "--yes"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    `[PROJECT]/.metaproject/hooks.json` defines 1 command hook. Trusting it lets it run, exactly as shown:

    hook `no-force-push` on PreToolUse
      matcher="Bash" class=gate runsIn=unsandboxed network=none
      timeoutMs=5000 appliesToChildAgents=true profiles=all enabled=true
      argv: "/bin/sh" "-c" "grep -q 'push --force' && { echo 'use --force-with-lease' >&2; exit 2; }; exit 0"
      cwd: (the project root)
      warning: runs unsandboxed, outside the OS sandbox, with your full permissions

    note: this project is not trusted yet; its command hooks do not run until you trust it
    Trusted: 1 command hook in `[PROJECT]/.metaproject/hooks.json` now runs in this project. `keryx-hooks untrust` withdraws this.

    ----- stderr -----
    "#);
    cmd_snapshot!(env.filters(), env.cmd(&["untrust"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    Withdrew trust for `[PROJECT]`: its command hooks no longer run. `keryx-hooks trust` reviews and trusts them again.

    ----- stderr -----
    ");
}

// ------------------------------------------------------ hosts and wiring

#[test]
fn hosts() {
    let env = Env::fixed();
    std::fs::create_dir_all(env.home.join(".claude")).unwrap();
    cmd_snapshot!(env.filters(), env.cmd(&["hosts"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    host         config directory    install writes               import  also
    claude-code  ~/.claude (found)   settings or plugin           yes     claude
    cline        ~/.cline            hook files                   no      cline-cli
    codex        ~/.codex            settings or plugin           yes     codex-cli, openai-codex
    copilot      ~/.copilot          settings                     yes     copilot-cli, github-copilot
    cursor       ~/.cursor           settings                     yes     cursor-agent, cursor-cli
    deepagents   ~/.deepagents       settings                     yes     deepagents-code, dcode
    gemini-cli   ~/.gemini           settings or plugin           yes     gemini
    keryx        -                   - (runs keryx-hooks itself)  no
    kilo         ~/.config/kilo      plugin file                  no      kilo-code, kilocode
    kimi         ~/.kimi-code        settings                     yes     kimi-code, kimi-cli
    opencode     ~/.config/opencode  plugin file                  no      open-code
    pi           ~/.pi               plugin file                  no      pi-coding-agent
    qwen-code    ~/.qwen             settings                     yes     qwen
    vibe         ~/.vibe             settings                     yes     mistral-vibe

    Wire the hosts set up here: `keryx-hooks install claude-code`

    ----- stderr -----
    ");
}

#[test]
fn hosts_detected_when_there_is_none() {
    let env = Env::fixed();
    cmd_snapshot!(env.filters(), env.cmd(&["hosts", "--detected"]), @"
    success: false
    exit_code: 1
    ----- stdout -----

    ----- stderr -----
    no agent host found: none of `~/.claude`, `~/.cline`, `~/.codex`, `~/.copilot`, `~/.cursor`, `~/.deepagents`, `~/.gemini`, `~/.config/kilo`, `~/.kimi-code`, `~/.config/opencode`, `~/.pi`, `~/.qwen`, `~/.vibe` exists
    hint: `keryx-hooks install <host>` wires one anyway (creating its directory), <host> one of: claude-code, cline, codex, copilot, cursor, deepagents, gemini-cli, kilo, kimi, opencode, pi, qwen-code, vibe
    ");
}

#[test]
fn install() {
    let env = Env::fixed();
    env.write(env.user_hooks(), NO_FORCE_PUSH);
    cmd_snapshot!(env.filters(), env.cmd(&["install", "claude-code"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    snapshot `[KEY]` of `[HOME]/.keryx`: updated (`[HOME]/.agentic/hooks-snapshot/[KEY]`)
    Claude Code: wired 10 events in new file `[HOME]/.claude/settings.json` (timeouts 24 s PreToolUse; 8 s SessionStart, UserPromptSubmit, PostToolUse, PostToolUseFailure, Stop, SessionEnd; 5 s PreCompact, SubagentStart, SubagentStop)
    note: Claude Code: no `claude` was found on PATH or where Claude Code installs itself, so `onFailure: "block"` (which needs Claude Code 2.1.295 or later) was not written; until then a missing, killed or hung keryx-hooks lets Claude Code run the tool. Install or update every copy to 2.1.295 or later (and remove older ones), then run `keryx-hooks doctor --fix`.

    ----- stderr -----
    "#);
}

#[test]
fn install_dry_run() {
    let env = Env::fixed();
    env.write(env.user_hooks(), NO_FORCE_PUSH);
    env.write(
        env.home.join(".claude/settings.json"),
        "{\n  \"model\": \"opus\"\n}\n",
    );
    cmd_snapshot!(
        env.filters(),
        env.cmd(&["install", "claude-code", "--dry-run"]),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    snapshot `[KEY]` of `[HOME]/.keryx`: would be updated (`[HOME]/.agentic/hooks-snapshot/[KEY]`)
    Claude Code: would wire 10 events in `[HOME]/.claude/settings.json` (timeouts 24 s PreToolUse; 8 s SessionStart, UserPromptSubmit, PostToolUse, PostToolUseFailure, Stop, SessionEnd; 5 s PreCompact, SubagentStart, SubagentStop)
    --- [HOME]/.claude/settings.json
    +++ [HOME]/.claude/settings.json
    @@ -1,3 +1,125 @@
     {
    -  "model": "opus"
    +  "model": "opus",
    +  "hooks": {
    +    "SessionStart": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code SessionStart --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 8
    +          }
    +        ]
    +      }
    +    ],
    +    "UserPromptSubmit": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code UserPromptSubmit --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 8
    +          }
    +        ]
    +      }
    +    ],
    +    "PreToolUse": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code PreToolUse --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 24
    +          }
    +        ]
    +      }
    +    ],
    +    "PostToolUse": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code PostToolUse --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 8
    +          }
    +        ]
    +      }
    +    ],
    +    "PostToolUseFailure": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code PostToolUseFailure --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 8
    +          }
    +        ]
    +      }
    +    ],
    +    "PreCompact": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code PreCompact --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 5
    +          }
    +        ]
    +      }
    +    ],
    +    "Stop": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code Stop --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 8
    +          }
    +        ]
    +      }
    +    ],
    +    "SubagentStart": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code SubagentStart --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 5
    +          }
    +        ]
    +      }
    +    ],
    +    "SubagentStop": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code SubagentStop --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 5
    +          }
    +        ]
    +      }
    +    ],
    +    "SessionEnd": [
    +      {
    +        "matcher": "*",
    +        "hooks": [
    +          {
    +            "type": "command",
    +            "command": "'[BIN]' run claude-code SessionEnd --snapshot [HOME]/.agentic/hooks-snapshot/[KEY]",
    +            "timeout": 8
    +          }
    +        ]
    +      }
    +    ]
    +  }
     }
    note: Claude Code: no `claude` was found on PATH or where Claude Code installs itself, so `onFailure: "block"` (which needs Claude Code 2.1.295 or later) was not written; until then a missing, killed or hung keryx-hooks lets Claude Code run the tool. Install or update every copy to 2.1.295 or later (and remove older ones), then run `keryx-hooks doctor --fix`.
    dry run: nothing was written

    ----- stderr -----
    "#
    );
}

#[test]
fn uninstall() {
    let env = installed();
    cmd_snapshot!(env.filters(), env.cmd(&["uninstall", "claude-code"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    Claude Code: removed `[HOME]/.claude/settings.json`, which held only keryx-hooks entries
    removed snapshot `[KEY]` (nothing is wired to it any more)

    ----- stderr -----
    ");
}

#[test]
fn import() {
    let env = Env::fixed();
    env.write(
        env.home.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo checked >&2", "timeout": 10}
        ]}]}})
        .to_string(),
    );
    cmd_snapshot!(env.filters(), env.cmd(&["import", "claude-code"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    claude-code PreToolUse [Bash] `echo checked >&2`: imported as `claude-code-pretooluse-echo-checked-2-2c85b2` (context on PreToolUse, timeout 10000 ms)
      keeps its Claude Code hook contract (its payload, its reading of the answer); it never answers with a decision, so its failures change nothing
      granted nothing beyond the sandbox's defaults
    1 new registration in `[HOME]/.keryx/hooks.json`
    note: Claude Code does not run keryx-hooks yet, so the imported hooks do not run until you wire it: `keryx-hooks install claude-code`

    ----- stderr -----
    ");
}

#[test]
fn status() {
    let env = installed();
    cmd_snapshot!(env.filters(), env.cmd(&["status"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    `[HOME]/.keryx` → snapshot `[KEY]`: current
      the snapshot matches the source and every host points at it
      claude-code (user settings, `[HOME]/.claude/settings.json`): wired
        host sandbox: off

    ----- stderr -----
    ");
}

#[test]
fn status_of_a_stale_snapshot() {
    let env = installed();
    env.write(
        env.user_hooks(),
        r#"{"schemaVersion": "1.0.0", "hooks": {}}"#,
    );
    cmd_snapshot!(env.filters(), env.cmd(&["status"]), @"
    success: false
    exit_code: 1
    ----- stdout -----
    `[HOME]/.keryx` → snapshot `[KEY]`: stale_but_stable
      the source has changed since the snapshot was taken; sessions still run the snapshot
      claude-code (user settings, `[HOME]/.claude/settings.json`): wired
        host sandbox: off
      hint: run `keryx-hooks doctor --fix`

    ----- stderr -----
    ");
}

#[test]
fn doctor() {
    let env = installed();
    cmd_snapshot!(env.filters(), env.cmd(&["doctor"]), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    ok    binary (claude-code): `[HOME]/.claude/settings.json` runs `[BIN]`: this binary, version [VERSION]
    ok    wiring (claude-code): `[HOME]/.claude/settings.json` wires all 10 events
    warn  host sandbox (claude-code): `[HOME]/.claude/settings.json`: off, so a program the agent writes and then runs can still change keryx-hooks' files and the host configs (the guards read commands, not programs)
          fix: keryx-hooks install claude-code --host-sandbox
    warn  fail-closed (claude-code): Claude Code lets the tool run when keryx-hooks is missing, killed or hung: no `claude` was found on PATH or where Claude Code installs itself, so `onFailure: "block"` (which needs Claude Code 2.1.295 or later) was not written
          fix: install or update every copy of Claude Code to 2.1.295 or later (and remove older ones), then run `keryx-hooks doctor --fix`
    ok    live (claude-code): the `PreToolUse` command in `[HOME]/.claude/settings.json` answered a harmless call and denied a read of `~/.ssh/id_rsa`, both as Claude Code reads them
    ok    snapshot ([KEY]): 1 file from `[HOME]/.keryx`, taken [TIME] by keryx-hooks [VERSION]
    ok    drift ([HOME]/.keryx): current: the snapshot matches the source and every host points at it
    ok    runtime.toml: no `[HOME]/.keryx/runtime.toml`: every setting has its default (profile `monitored-trusted-local`)
    ok    config: loads without errors
    ok    project-trust: this project defines no command hooks
    ok    config (snapshot [KEY]): loads without errors
    warn  unsandboxed-hooks: user hooks that run outside the sandbox, with your full permissions: `no-force-push`
          fix: drop `"runsIn": "unsandboxed"` from the hooks that do not need it
    ok    sandbox: `/usr/bin/bwrap` works here (system directory)
    ok    sessions: no session state older than 7 days

    ----- stderr -----
    "#);
}

/// `installed()` with a trailing comma added to Claude Code's settings,
/// which Claude Code does not load: it runs none of the hooks in it.
fn installed_then_broken() -> Env {
    let env = installed();
    let path = env.home.join(".claude/settings.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text.replacen("\"hooks\": {", "\"hooks\": {\"Stop\": [],", 1);
    let broken = broken.trim_end().strip_suffix('}').unwrap().to_owned() + ",}\n";
    env.write(&path, broken);
    env
}

#[test]
fn status_of_a_settings_file_the_host_does_not_load() {
    let env = installed_then_broken();
    cmd_snapshot!(env.filters(), env.cmd(&["status"]), @"
    success: false
    exit_code: 1
    ----- stdout -----
    `[HOME]/.keryx` → snapshot `[KEY]`: half_applied
      the snapshot exists, but not every host that should use it is wired to it with timeouts that cover its hooks
      claude-code (user settings, `[HOME]/.claude/settings.json`): broken: Claude Code would not load it (it is not plain JSON: trailing comma at line 124 column 2), so it runs none of the hooks in it; fix that by hand
        host sandbox: off
      hint: fix the broken file by hand, then run `keryx-hooks doctor --fix`

    ----- stderr -----
    ");
}

#[test]
fn doctor_of_a_settings_file_the_host_does_not_load() {
    let env = installed_then_broken();
    let before = std::fs::read(env.home.join(".claude/settings.json")).unwrap();
    cmd_snapshot!(env.filters(), env.cmd(&["doctor", "--fix"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----
    fail  host-config (claude-code): `[HOME]/.claude/settings.json` is broken: Claude Code would not load it (it is not plain JSON: trailing comma at line 124 column 2), so it runs none of the hooks in it; fix that by hand
          fix: repair `[HOME]/.claude/settings.json` by hand, then run `keryx-hooks install claude-code`
    ok    snapshot ([KEY]): 1 file from `[HOME]/.keryx`, taken [TIME] by keryx-hooks [VERSION]
    fail  drift ([HOME]/.keryx): half_applied: the snapshot exists, but not every host that should use it is wired to it with timeouts that cover its hooks (broken: claude-code (user settings, `[HOME]/.claude/settings.json`): Claude Code would not load it (it is not plain JSON: trailing comma at line 124 column 2), so it runs none of the hooks in it; fix that by hand)
          fix: keryx-hooks doctor --fix
    ok    runtime.toml: no `[HOME]/.keryx/runtime.toml`: every setting has its default (profile `monitored-trusted-local`)
    ok    config: loads without errors
    ok    project-trust: this project defines no command hooks
    ok    config (snapshot [KEY]): loads without errors
    warn  unsandboxed-hooks: user hooks that run outside the sandbox, with your full permissions: `no-force-push`
          fix: drop `"runsIn": "unsandboxed"` from the hooks that do not need it
    ok    sandbox: `/usr/bin/bwrap` works here (system directory)
    ok    sessions: no session state older than 7 days

    not fixed: rewire: claude-code (user settings, `[HOME]/.claude/settings.json`) not wired to snapshot `[KEY]`: cannot edit `[HOME]/.claude/settings.json`: Claude Code would not load it (it is not plain JSON: trailing comma at line 124 column 2), so it runs none of the hooks in it; fix that by hand; nothing was written
      run: repair `[HOME]/.claude/settings.json` by hand, then run `keryx-hooks doctor --fix`
    still fail: host-config (claude-code) — run: repair `[HOME]/.claude/settings.json` by hand, then run `keryx-hooks install claude-code`
    still fail: drift ([HOME]/.keryx) — run: keryx-hooks doctor --fix
    still warn: unsandboxed-hooks — run: drop `"runsIn": "unsandboxed"` from the hooks that do not need it

    ----- stderr -----
    "#);
    assert_eq!(
        std::fs::read(env.home.join(".claude/settings.json")).unwrap(),
        before,
        "doctor --fix overwrote a file it cannot read"
    );
}

/// Codex wired, then its `config.toml` broken: Codex does not start with a
/// config it cannot parse.
#[test]
fn status_and_doctor_of_a_codex_config_that_does_not_parse() {
    let env = Env::fixed();
    env.write(env.user_hooks(), NO_FORCE_PUSH);
    env.run(&["install", "codex"]).code(0);
    let path = env.home.join(".codex/config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    env.write(&path, format!("[hooks\n{text}"));
    cmd_snapshot!(env.filters(), env.cmd(&["status"]), @"
    success: false
    exit_code: 1
    ----- stdout -----
    `[HOME]/.keryx` → snapshot `[KEY]`: half_applied
      the snapshot exists, but not every host that should use it is wired to it with timeouts that cover its hooks
      codex (user settings, `[HOME]/.codex/config.toml`): broken: OpenAI Codex CLI would not load it (it is not valid TOML: unclosed table, expected `]`), so it runs none of the hooks in it; fix that by hand
      hint: fix the broken file by hand, then run `keryx-hooks doctor --fix`

    ----- stderr -----
    ");
    cmd_snapshot!(env.filters(), env.cmd(&["doctor", "--fix"]), @r#"
    success: false
    exit_code: 1
    ----- stdout -----
    fail  host-config (codex): `[HOME]/.codex/config.toml` is broken: OpenAI Codex CLI would not load it (it is not valid TOML: unclosed table, expected `]`), so it runs none of the hooks in it; fix that by hand
          fix: repair `[HOME]/.codex/config.toml` by hand, then run `keryx-hooks install codex`
    ok    snapshot ([KEY]): 1 file from `[HOME]/.keryx`, taken [TIME] by keryx-hooks [VERSION]
    fail  drift ([HOME]/.keryx): half_applied: the snapshot exists, but not every host that should use it is wired to it with timeouts that cover its hooks (broken: codex (user settings, `[HOME]/.codex/config.toml`): OpenAI Codex CLI would not load it (it is not valid TOML: unclosed table, expected `]`), so it runs none of the hooks in it; fix that by hand)
          fix: keryx-hooks doctor --fix
    ok    runtime.toml: no `[HOME]/.keryx/runtime.toml`: every setting has its default (profile `monitored-trusted-local`)
    ok    config: loads without errors
    ok    project-trust: this project defines no command hooks
    ok    config (snapshot [KEY]): loads without errors
    warn  unsandboxed-hooks: user hooks that run outside the sandbox, with your full permissions: `no-force-push`
          fix: drop `"runsIn": "unsandboxed"` from the hooks that do not need it
    ok    sandbox: `/usr/bin/bwrap` works here (system directory)
    ok    sessions: no session state older than 7 days

    not fixed: rewire: codex (user settings, `[HOME]/.codex/config.toml`) not wired to snapshot `[KEY]`: cannot edit `[HOME]/.codex/config.toml`: OpenAI Codex CLI would not load it (it is not valid TOML: unclosed table, expected `]`), so it runs none of the hooks in it; fix that by hand; nothing was written
      run: repair `[HOME]/.codex/config.toml` by hand, then run `keryx-hooks doctor --fix`
    still fail: host-config (codex) — run: repair `[HOME]/.codex/config.toml` by hand, then run `keryx-hooks install codex`
    still fail: drift ([HOME]/.keryx) — run: keryx-hooks doctor --fix
    still warn: unsandboxed-hooks — run: drop `"runsIn": "unsandboxed"` from the hooks that do not need it

    ----- stderr -----
    "#);
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("[hooks\n")
    );
}

// --------------------------------------------------------- what happened

#[test]
fn log() {
    let env = installed();
    env.run_stdin(
        &["run", "claude-code", "PreToolUse"],
        claude_bash(&env, "toolu_log", "git push --force").to_string(),
    )
    .code(0);
    cmd_snapshot!(env.filters(), env.cmd(&["log"]), @"
    success: true
    exit_code: 0
    ----- stdout -----
    TIME                 HOST         PROJECT  EVENT       TOOL                   HOOK                        OUTCOME  REASON
    [TIME]               claude-code  proj     PreToolUse  Bash git push --force  keryx.ctx-guard             none     -
    [TIME]               claude-code  proj     PreToolUse  Bash git push --force  no-force-push               deny     use --force-with-lease
    [TIME]               claude-code  proj     PreToolUse  Bash git push --force  keryx.learning-observer     none     -
    [TIME]               claude-code  proj     PreToolUse  Bash git push --force  destructive/git-push-force  ask      rule destructive/git-push-force matched command `git push --force`

    ----- stderr -----
    ");
}

#[test]
fn explain() {
    let env = Env::fixed();
    env.write(env.user_hooks(), NO_FORCE_PUSH);
    cmd_snapshot!(
        env.filters(),
        env.cmd(&["explain", "claude-code", "PreToolUse"]),
        stdin = claude_bash(&env, "toolu_explain", "git push --force").to_string(),
        @"
    success: true
    exit_code: 0
    ----- stdout -----
    claude-code PreToolUse: Bash git push --force
    profile monitored-trusted-local, the live user hooks file, project hooks no-command-hooks
      runs     keryx.ctx-guard (builtin gate, built-in): answers allow (evaluated in this process)
      not run  keryx.security-check-output (builtin gate, built-in): its matcher `^(Write|Edit|MultiEdit|NotebookEdit|mcp__.+)$` does not match the tool `Bash`
      runs     keryx.learning-observer (builtin observe, built-in)
      not run  keryx.impact-evidence (builtin gate-advisory, built-in): its matcher `Write|Edit` does not match the tool `Bash`
      runs     no-force-push (user gate, [HOME]/.keryx/hooks.json)
      on other events: keryx.security-check-input (UserPromptSubmit); keryx.learning-observer (PostToolUse, PostToolUseFailure, UserPromptSubmit, SessionStart, Stop, SessionEnd)
      rule     destructive/git-push-force (ask): matched command `git push --force`
      rules    75 more from the default packs fit this call and do not match (`explain --json` lists them)
    run would answer: depends on `no-force-push`
      allow if the hooks it depends on allow; they are commands explain does not run

    ----- stderr -----
    note: reading the live `~/.keryx/hooks.json`: no claude-code wiring names a snapshot
    "
    );
}

// -------------------------------------------------------- built-in bodies

#[test]
fn security_check_input() {
    let env = Env::fixed();
    let payload = json!({"event": "UserPromptSubmit", "cwd": env.project,
                         "prompt": format!("deploy with {}", aws_key())});
    cmd_snapshot!(
        env.filters(),
        env.cmd(&["security", "check-input", "--runtime", "keryx"]),
        stdin = payload.to_string(),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    {"decision":"deny","reason":"the prompt (source `untrusted-external`) contains AWS access key id (rule `aws-access-key-id`) at line 1, column 13; remove it and refer to the secret by name instead (an environment variable such as `$API_TOKEN`, or a secrets manager); if this is not a secret, switch the rule off for yourself with `[security] disable = [\"aws-access-key-id\"]` in $KERYX_HOME/runtime.toml, or turn the gate off for your user scope with `keryx-hooks disable keryx.security-check-input --user --acknowledge-gate-risk`"}

    ----- stderr -----
    "#
    );
}

#[test]
fn security_check_output() {
    let env = Env::fixed();
    let payload = json!({"event": "PreToolUse", "cwd": env.project, "toolName": "Write",
                         "toolInput": {"file_path": "config.py",
                                       "content": format!("KEY = \"{}\"\n", aws_key())}});
    cmd_snapshot!(
        env.filters(),
        env.cmd(&["security", "check-output", "--runtime", "keryx"]),
        stdin = payload.to_string(),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    {"decision":"deny","reason":"Write of `config.py` (content) would write AWS access key id (rule `aws-access-key-id`) at line 1, column 8; keep secrets out of files: write a placeholder and read the secret at run time from an environment variable or a secrets manager; if this is not a secret, switch the rule off for yourself with `[security] disable = [\"aws-access-key-id\"]` in $KERYX_HOME/runtime.toml, or turn the gate off for your user scope with `keryx-hooks disable keryx.security-check-output --user --acknowledge-gate-risk`"}

    ----- stderr -----
    "#
    );
}

#[test]
fn ctx_hook() {
    let env = Env::fixed();
    let payload = json!({"event": "PreToolUse", "cwd": env.project, "toolName": "Bash",
                         "toolInput": {"command": "cat .env"}});
    cmd_snapshot!(
        env.filters(),
        env.cmd(&["ctx", "hook", "keryx"]),
        stdin = payload.to_string(),
        @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    {"decision":"deny","reason":"ctx-guard: `cat .env` would put the contents of `.env` (a dotenv file, which holds secrets) into the model's context; check that a variable is set with `grep -q '^NAME=' .env` or count entries with `grep -c = .env`; load it without printing with `set -a; . .env; set +a`"}

    ----- stderr -----
    "#
    );
}

// ------------------------------------------------------------ packaging

#[test]
fn completions_start_as_a_bash_script() {
    let env = Env::fixed();
    let run = env.run(&["completions", "bash"]);
    insta::assert_snapshot!(render(&env.filters(), &run.first_lines(3)), @"
    success: true
    exit_code: 0
    ----- stdout -----
    _keryx__hooks() {
        local i cur prev opts cmd
        COMPREPLY=()

    ----- stderr -----
    ");
}

#[test]
fn man_starts_with_its_title_and_name() {
    let env = Env::fixed();
    let run = env.run(&["man"]);
    insta::assert_snapshot!(render(&env.filters(), &run.first_lines(5)), @r#"
    success: true
    exit_code: 0
    ----- stdout -----
    .ie \n(.g .ds Aq \(aq
    .el .ds Aq '
    .TH keryx-hooks 1  "keryx-hooks [VERSION]" 
    .SH NAME
    keryx\-hooks \- One hook config that guards every coding agent you use: the keryx lifecycle\-hook runtime, a per\-event shim for each agent host, and the installer that wires it in

    ----- stderr -----
    "#);
}
