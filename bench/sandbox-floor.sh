#!/usr/bin/env bash
# The sandbox floor's argv, one word a line: bubblewrap with exactly the
# namespaces and base mounts keryx-hooks gives every sandboxed hook (the
# read-only root, /dev, /proc, a private /tmp; every namespace, no
# capabilities, dies with its parent, a new session), and nothing of the
# project, the hidden paths or the seccomp program (`bwrap_args` in
# src/runner/sandbox.rs is what it mirrors). The hook's argv follows.
# bench/run.sh and bench/counts.sh read its output.
#
#   bench/sandbox-floor.sh [BWRAP]
set -euo pipefail
bwrap="${1:-$(command -v bwrap)}"
printf '%s\n' "$bwrap" --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp \
    --unshare-all --cap-drop ALL --die-with-parent --new-session --
