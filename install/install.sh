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
set -eu
cd "$(dirname "$0")/.."

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
