#!/bin/sh
# Sets keryx-hooks up on this machine: builds and installs the binary from
# this checkout with cargo, then wires it into agent hosts.
#
#   install/install.sh                      # wire every host whose config dir exists
#   install/install.sh claude-code codex    # wire these hosts (their dirs are created)
#
# Wiring is `keryx-hooks install <host>...`: it snapshots ~/.keryx (created
# with the built-in hooks only when missing) and merges its entries into each
# host's config without touching anything else (OpenCode gets a generated
# plugin file in its plugin directory). Run it again at any time.
#
# KERYX_HOOKS_BIN=/path/to/keryx-hooks skips the build and wires with that binary.
#
# Hooks run sandboxed: under bubblewrap (`bwrap`) on Linux, under the
# system's sandbox-exec on macOS. Without bwrap it offers to install it (on a
# terminal) or stops, printing the command. KERYX_HOOKS_NO_SANDBOX=1 goes on
# without a sandbox: every hook that runs sandboxed (the default `runsIn`)
# then fails as sandbox-unavailable, so a gate denies what it guards and
# other hooks are skipped; the built-in hooks run inside keryx-hooks and are
# not affected.
set -eu
cd "$(dirname "$0")/.."

without_sandbox="KERYX_HOOKS_NO_SANDBOX=1 goes on without one: every hook that runs sandboxed (the default) then fails as sandbox-unavailable, so a gate denies what it guards and other hooks are skipped; the built-in hooks still run."

# The package manager's command that installs bubblewrap, as root.
bwrap_install_command() {
    if command -v apt-get >/dev/null 2>&1; then
        cmd="apt-get install -y bubblewrap"
    elif command -v dnf >/dev/null 2>&1; then
        cmd="dnf install -y bubblewrap"
    elif command -v pacman >/dev/null 2>&1; then
        cmd="pacman -S --noconfirm bubblewrap"
    elif command -v apk >/dev/null 2>&1; then
        cmd="apk add bubblewrap"
    elif command -v zypper >/dev/null 2>&1; then
        cmd="zypper --non-interactive install bubblewrap"
    else
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        cmd="sudo $cmd"
    fi
    echo "$cmd"
}

# Before the build, so a missing sandbox is said in seconds. bwrap is looked
# for on PATH (the binary also looks in /usr/bin, /usr/local/bin and /bin
# first, which are on any PATH a person has).
case "$(uname -s)" in
Linux)
    if ! command -v bwrap >/dev/null 2>&1 && [ "${KERYX_HOOKS_NO_SANDBOX:-}" != 1 ]; then
        cmd=$(bwrap_install_command)
        answer=
        if [ -n "$cmd" ] && [ -t 0 ]; then
            printf "keryx-hooks runs hooks inside bubblewrap (\`bwrap\`), which is not installed.\nInstall it now with \`%s\`? [y/N] " "$cmd"
            read -r answer || answer=
        fi
        case "$answer" in
        y | Y | yes)
            # The command is one line of plain words.
            # shellcheck disable=SC2086
            if ! $cmd; then
                echo "error: \`$cmd\` failed. $without_sandbox" >&2
                exit 1
            fi
            ;;
        *)
            echo "error: bubblewrap (\`bwrap\`) is not installed; keryx-hooks runs hooks inside it" >&2
            if [ -n "$cmd" ]; then
                echo "install it: $cmd" >&2
            else
                echo "install the \`bubblewrap\` package with your system's package manager" >&2
            fi
            echo "then run install/install.sh again. $without_sandbox" >&2
            exit 1
            ;;
        esac
        if ! command -v bwrap >/dev/null 2>&1; then
            echo "error: \`$cmd\` did not install \`bwrap\`. $without_sandbox" >&2
            exit 1
        fi
    fi
    if ! command -v bwrap >/dev/null 2>&1; then
        echo "warning: no bubblewrap (\`bwrap\`): sandboxed hooks will not run (KERYX_HOOKS_NO_SANDBOX=1)" >&2
    fi
    ;;
Darwin)
    # sandbox-exec ships with macOS: nothing to install.
    ;;
*)
    if [ "${KERYX_HOOKS_NO_SANDBOX:-}" != 1 ]; then
        echo "error: keryx-hooks sandboxes hooks on Linux (bubblewrap) and macOS (sandbox-exec), not on $(uname -s)." >&2
        echo "$without_sandbox" >&2
        exit 1
    fi
    echo "warning: no sandbox on $(uname -s): sandboxed hooks will not run (KERYX_HOOKS_NO_SANDBOX=1)" >&2
    ;;
esac

if [ -n "${KERYX_HOOKS_BIN:-}" ]; then
    bin=$KERYX_HOOKS_BIN
else
    if ! command -v cargo >/dev/null 2>&1; then
        echo "error: cargo not found; install Rust first (https://rustup.rs), then run this again" >&2
        exit 1
    fi
    # shellcheck source=install/release-env.sh disable=SC1091
    . install/release-env.sh
    RUSTFLAGS="${RUSTFLAGS:-} $KERYX_RELEASE_RUSTFLAGS" \
        cargo install --locked --path . --target "$KERYX_RELEASE_TARGET"
    bin="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin/keryx-hooks"
fi
"$bin" --version
echo "binary: $bin"

# Shell completions and the manual page, where bash-completion, zsh (with
# the directory on its fpath), fish and man-db look in the user's data dir.
data=${XDG_DATA_HOME:-$HOME/.local/share}
mkdir -p "$data/bash-completion/completions" "$data/zsh/site-functions" \
    "$data/fish/vendor_completions.d" "$data/man/man1"
"$bin" completions bash >"$data/bash-completion/completions/keryx-hooks"
"$bin" completions zsh >"$data/zsh/site-functions/_keryx-hooks"
"$bin" completions fish >"$data/fish/vendor_completions.d/keryx-hooks.fish"
"$bin" man >"$data/man/man1/keryx-hooks.1"
echo "completions: $data/{bash-completion/completions,zsh/site-functions,fish/vendor_completions.d}; manual: $data/man/man1/keryx-hooks.1"

# No hosts named: every host whose own config directory exists, as the
# binary finds them (`keryx-hooks hosts --detected`: each adapter's config
# path, moved by CODEX_HOME, COPILOT_HOME, KIMI_CODE_HOME or
# XDG_CONFIG_HOME as `install` moves it). With none it says where it
# looked and how to wire a host by name, and exits 1.
if [ "$#" -eq 0 ]; then
    status=0
    detected=$("$bin" hosts --detected) || status=$?
    if [ "$status" -ne 0 ]; then
        if [ "$status" -eq 1 ] && [ -z "$detected" ]; then
            echo "keryx-hooks is installed; no host was wired."
            exit 0
        fi
        exit "$status"
    fi
    # Host names are single words.
    # shellcheck disable=SC2086
    set -- $detected
fi
exec "$bin" install "$@"
