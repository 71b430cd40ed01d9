#!/usr/bin/env bash
# The built-ins' measured targets (issue 7), in process, offline:
#
#   bench/builtins.sh              # build, generate, measure, print medians
#   bench/builtins.sh --quick      # 5 runs each: a smoke test, not a result
#
#   (a) the secret scanner on a 1 MiB write, through security::check_output
#       (the body of `keryx-hooks security check-output`)      target < 10 ms
#   (b) ctx-guard on each command of tests/fixtures/commands/ordinary.txt
#                                                              target < 1 ms
#   (c) impact evidence on a generated 20,000-file repository (bench/make-repo.py:
#       Rust, Python, TS/JS, Go, docs; 5,000 more files .gitignore excludes),
#       for one widely imported file of each language:
#         cold  no saved index (deleted before each consult)   target < 300 ms
#         warm  the saved index, nothing changed               target < 30 ms
#         edit  the edited file rewritten before each consult  (no target)
#       The tree is in the page cache (one consult first warms it): "cold"
#       is about the index, not about the disk.
#
# It builds bench/tools' `builtins` binary (release, `--features builtins`,
# which links the keryx-hooks library) and prints, per measurement:
#   name  median_ms  p90_ms  min_ms  cpu_ms  runs  note
# cpu_ms is CPU time (user + system, all threads) per run: it hardly moves
# when other work shares the machine, unlike the wall-clock columns.
#
# Settings (environment):
#   BENCH_RUNS=20                    runs per measurement
#   BENCH_FILES=20000                files in the generated repository
#   BENCH_ONLY=rust                  generate a one-language repository instead (rust, python,
#                                    js or go: 95% of the files), the worst case for (c)
#   BENCH_WORK=<dir>                 keep the repository and index here (default: a temp dir, removed)
#   BENCH_TOOLS_TARGET=target/bench-tools   cargo target dir for bench/tools
#   BENCH_QUIET_LOAD=1.0             before measuring, wait until the 1-minute load
#   BENCH_QUIET_WAIT=0               average is below this, for at most this many seconds
# Relative paths are taken from the repository root.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

RUNS="${BENCH_RUNS:-20}"
FILES="${BENCH_FILES:-20000}"
if [[ "${1:-}" == "--quick" ]]; then RUNS=5; fi
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$REPO/$1" ;; esac; }
TOOLS_TARGET="$(abs "${BENCH_TOOLS_TARGET:-target/bench-tools}")"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is needed to generate the repository"

if [[ -n "${BENCH_WORK:-}" ]]; then
    WORK="$(abs "$BENCH_WORK")"
    mkdir -p "$WORK"
else
    WORK="$(mktemp -d)"
    trap 'rm -rf "$WORK"' EXIT
fi

say "building bench/tools builtins (release, --features builtins)"
CARGO_TARGET_DIR="$TOOLS_TARGET" cargo build --release --quiet \
    --manifest-path bench/tools/Cargo.toml --features builtins --bin builtins
BIN="$TOOLS_TARGET/release/builtins"

# (a) a 1 MiB write of ordinary source: this repository's own Rust, repeated.
WRITE="$WORK/write-1mib.txt"
python3 - "$WRITE" <<'PY'
import pathlib, sys
parts = [p.read_text(encoding="utf-8") for p in sorted(pathlib.Path("src").rglob("*.rs"))]
text, i = "", 0
while len(text.encode()) < 1 << 20:
    text += parts[i % len(parts)]
    i += 1
data = text.encode()[: 1 << 20]
cut = data.rfind(b"\n") + 1
pathlib.Path(sys.argv[1]).write_bytes(data[:cut])
PY

# (c) the generated repository, made once per work dir.
ONLY="${BENCH_ONLY:-}"
TREE="$WORK/repo-$FILES${ONLY:+-$ONLY}"
if [[ ! -f "$TREE.json" ]]; then
    say "generating a $FILES-file repository${ONLY:+ ($ONLY only)}"
    rm -rf "$TREE"
    python3 bench/make-repo.py "$TREE" --files "$FILES" ${ONLY:+--only "$ONLY"} >"$TREE.json.tmp"
    mv "$TREE.json.tmp" "$TREE.json"
fi
mapfile -t HUBS < <(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["hubs"].values()))' "$TREE.json")

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
wait_quiet() {
    local limit="${BENCH_QUIET_LOAD:-1.0}" wait="${BENCH_QUIET_WAIT:-0}" start=$SECONDS
    while ((SECONDS - start < wait)) && awk -v l="$(load)" -v m="$limit" 'BEGIN { exit !(l > m) }'; do
        sleep 5
    done
}
wait_quiet

CPU="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)"
echo "machine: ${CPU:-unknown CPU}, $(nproc) cores; $(uname -sr)"
echo "load average at start: $(load)"
printf '%-28s %10s %10s %10s %8s %6s  %s\n' name median_ms p90_ms min_ms cpu_ms runs note
"$BIN" scanner "$WRITE" "$RUNS"
"$BIN" ctx-guard tests/fixtures/commands/ordinary.txt "$RUNS"
"$BIN" impact "$TREE" "$WORK/impact-cache" "${HUBS[@]}" "$RUNS"
echo "load average at end: $(load)"
