#!/bin/sh
# The test command: installs what the tests need, then runs every test.
# Works on a fresh Debian/Ubuntu machine with Rust, Node.js/npm and python3,
# with no stdin and CI=true.
set -eu
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# bubblewrap: the Linux sandbox launcher; sandbox tests run for real.
if ! command -v bwrap >/dev/null 2>&1; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap
fi

# socat: Claude Code's own sandbox needs it beside bubblewrap on Linux; the
# end-to-end tests of `install --host-sandbox` run the real one.
if ! command -v socat >/dev/null 2>&1; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq socat
fi

# jq and git: the real-hooks corpus (tests/fixtures/real-hooks/) runs public
# hooks that call them, as they do on a person's machine.
for tool in jq git; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$tool"
    fi
done

# uv: corpus hooks that are uv single-file scripts (`uv run`, PEP 723) run
# under it, as on a person's machine; it comes from PyPI.
if ! command -v uv >/dev/null 2>&1; then
    python3 -m pip install --quiet uv
fi

# Python >= 3.12 with venv: deepagents-code, one of the end-to-end hosts,
# needs it (install-hosts.sh makes its virtual environment with the first
# one found).
has_python312() {
    for py in python3.13 python3.12 python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
        "$py" -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && return 0
    done
    return 1
}
if ! has_python312; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.12 python3.12-venv
fi

# The loopback OTLP receiver's Python packages (opentelemetry-proto and
# protobuf, pinned) for the exporter's tests, in target/otlp-venv.
sh tests/otlp/install.sh

# cargo-nextest runs the suite; install it when missing.
if ! cargo nextest --version >/dev/null 2>&1; then
    cargo install --locked cargo-nextest
fi

# The real host CLIs for the end-to-end tests (Claude Code, Gemini CLI, Codex,
# OpenCode, Kilo Code, Copilot CLI, Qwen Code, Kimi Code, Pi, Node 22 for Qwen
# and Kimi; deepagents-code and Mistral Vibe from PyPI).
tests/e2e/install-hosts.sh

cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings
# The benchmark helpers use the library's API: keep them building.
cargo check --locked --quiet --manifest-path bench/tools/Cargo.toml --all-features --bins
cargo nextest run --locked --profile ci --no-fail-fast "$@"
# The README's quick start as written, then the usual mistakes, on a
# throwaway home, with the binary the suite just built.
sh tests/first-hour.sh target/debug/keryx-hooks
