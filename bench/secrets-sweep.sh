#!/usr/bin/env bash
# False denies of keryx.security-check-output over a large body of ordinary
# code (docs/SECRETS.md): every text file (up to 1 MiB) under the given
# directories, default the cargo registry's unpacked sources, written as a
# Write through security::check_output, in process (bench/tools'
# `secrets-sweep`, release, `--features builtins`).
#
#   bench/secrets-sweep.sh [DIR ...]
#
# Prints every deny with its reason (rule and position only), then
#   N files  MiB  denied  percent  scan ms  us/KiB
# Settings: BENCH_TOOLS_TARGET=target/bench-tools (cargo target dir).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
TOOLS_TARGET="${BENCH_TOOLS_TARGET:-target/bench-tools}"
case "$TOOLS_TARGET" in /*) ;; *) TOOLS_TARGET="$REPO/$TOOLS_TARGET" ;; esac

CARGO_TARGET_DIR="$TOOLS_TARGET" cargo build --release --quiet \
    --manifest-path bench/tools/Cargo.toml --features builtins --bin secrets-sweep
if [[ $# -eq 0 ]]; then
    set -- "${CARGO_HOME:-$HOME/.cargo}/registry/src"
fi
exec "$TOOLS_TARGET/release/secrets-sweep" "$@"
