#!/bin/sh
# Builds keryx-hooks from this checkout and installs it with cargo.
set -eu
cd "$(dirname "$0")/.."
cargo install --locked --path .
bin="${CARGO_HOME:-$HOME/.cargo}/bin/keryx-hooks"
"$bin" --version
echo "installed: $bin"
