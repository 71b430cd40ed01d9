#!/usr/bin/env bash
# The keryx-hooks benchmark suite (issue 9): one command, offline, hermetic.
#
#   bench/run.sh            # build, prepare, measure, summarise
#   bench/run.sh --quick    # 3 rounds x 4 runs: a smoke test, not a result (-> target/bench-quick)
#
# It builds keryx-hooks (release) and the helpers in bench/tools, installs
# what it needs (hyperfine and GNU time from apt, agent-harness-adapter
# 0.2.2 with cargo into a cache dir), gives every case its own temp HOME and
# XDG_* dirs, then times every case with hyperfine in ROUNDS rounds of
# RUNS_PER_ROUND runs (plus warmups), the order of the cases shuffled anew
# each round, so slow drift of the machine is spread over all cases instead
# of landing on one. Medians are taken over all the runs of a case.
#
# Settings (environment):
#   BENCH_ROUNDS=6 BENCH_RUNS_PER_ROUND=5 BENCH_WARMUP=3   -> 30 timed runs per case
#   BENCH_RSS_RUNS=10          runs under GNU time for peak RSS, per case
#   BENCH_CASES="a b c-read"   only these cases (ids as printed); default all
#   BENCH_OUT=bench/results    where results.json / results.md go
#   BENCH_CACHE=.cache/bench   where agent-harness-adapter is installed
#   BENCH_TOOLS_TARGET=target/bench-tools   cargo target dir for bench/tools
#   BENCH_WORK=<dir>           keep the per-case homes here (default: a temp dir, removed)
#   KERYX_BIN=<path>           use this keryx-hooks binary instead of building one
#   KERYX_BIN_B=<path>         also time a second binary (e.g. a candidate fix) in the same
#   KERYX_BIN_B_LABEL=<text>   rounds; its cases get the suffix @B
#   CARGO_TARGET_DIR           honoured for the keryx-hooks build
#   PYTHON=/usr/bin/python3    the system python3 the Python dispatcher runs on
#   BENCH_NO_INSTALL=1         never apt-get/cargo install; skip what is missing
#   BENCH_QUIET_LOAD=0.5       before timing, wait until the 1-minute load average is
#   BENCH_QUIET_WAIT=0         below this, for at most this many seconds (0: don't wait)
# Relative paths are taken from the repository root.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

ROUNDS="${BENCH_ROUNDS:-6}"
RUNS="${BENCH_RUNS_PER_ROUND:-5}"
WARMUP="${BENCH_WARMUP:-3}"
RSS_RUNS="${BENCH_RSS_RUNS:-10}"
QUICK=0
if [[ "${1:-}" == "--quick" ]]; then
    QUICK=1 ROUNDS=3 RUNS=4 WARMUP=1 RSS_RUNS=3
fi
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$REPO/$1" ;; esac; }
# A quick run never replaces the recorded results unless told to.
if ((QUICK)); then OUT="$(abs "${BENCH_OUT:-target/bench-quick}")"; else OUT="$(abs "${BENCH_OUT:-bench/results}")"; fi
CACHE="$(abs "${BENCH_CACHE:-.cache/bench}")"
TOOLS_TARGET="$(abs "${BENCH_TOOLS_TARGET:-target/bench-tools}")"
AHA_VERSION=0.2.2

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

apt_install() { # apt_install PACKAGE: when allowed and possible
    [[ "${BENCH_NO_INSTALL:-}" == 1 ]] && return 1
    local sudo=""
    [[ "$(id -u)" == 0 ]] || sudo="sudo -n"
    say "installing $1 (apt)"
    $sudo apt-get install -y "$1" >/dev/null 2>&1 ||
        { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y "$1" >/dev/null 2>&1; }
}

# ---------------------------------------------------------------- tools
command -v hyperfine >/dev/null || apt_install hyperfine || die "hyperfine is needed (apt-get install hyperfine)"
[[ -x /usr/bin/time ]] || apt_install time || die "GNU time is needed for peak RSS (apt-get install time)"
command -v cargo >/dev/null || die "cargo is needed"
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
    if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON="$(command -v python3 || true)"; fi
fi
[[ -n "$PYTHON" ]] || die "python3 is needed (the Python peer and the summary)"

# ---------------------------------------------------------------- builds
# How the shipped binary is built (static, non-PIE on Linux/glibc): both the
# keryx-hooks build below and the honest floors (a-static, a-spawn-static).
# shellcheck source=install/release-env.sh disable=SC1091
. install/release-env.sh
if [[ -n "${KERYX_BIN:-}" ]]; then
    KERYX="$(abs "$KERYX_BIN")"
    KERYX_BUILD="given binary (KERYX_BIN), $("$KERYX" --version 2>/dev/null || echo '?')"
else
    KERYX_BUILD="built from $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock build.rs adapters schema 2>/dev/null || echo ' + uncommitted changes')"
    # Built as install/install.sh builds it (static, non-PIE on Linux/glibc).
    say "building keryx-hooks (release, $KERYX_RELEASE_TARGET${KERYX_RELEASE_RUSTFLAGS:+, $KERYX_RELEASE_RUSTFLAGS})"
    RUSTFLAGS="${RUSTFLAGS:-} $KERYX_RELEASE_RUSTFLAGS" \
        cargo build --release --quiet --bin keryx-hooks --target "$KERYX_RELEASE_TARGET"
    target_dir="$(cargo metadata --format-version 1 --no-deps | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
    KERYX="$target_dir/$KERYX_RELEASE_TARGET/release/keryx-hooks"
fi
[[ -x "$KERYX" ]] || die "no keryx-hooks binary at $KERYX"

say "building bench/tools (release)"
CARGO_TARGET_DIR="$TOOLS_TARGET" cargo build --release --quiet --manifest-path bench/tools/Cargo.toml
TOOLS="$TOOLS_TARGET/release"
FLOOR="$TOOLS/floor" SPAWNER="$TOOLS/spawner" FEED="$TOOLS/feed" FRESHEN="$TOOLS/freshen"
# The honest floors: the same two helpers built exactly as the shipped
# keryx-hooks is (install/release-env.sh: flags, explicit --target), so a
# ratio over them measures the runtime's own work and nothing of the loader.
say "building the floors as the shipped binary is built ($KERYX_RELEASE_TARGET${KERYX_RELEASE_RUSTFLAGS:+, $KERYX_RELEASE_RUSTFLAGS})"
RUSTFLAGS="${RUSTFLAGS:-} $KERYX_RELEASE_RUSTFLAGS" CARGO_TARGET_DIR="$TOOLS_TARGET/shipped" \
    cargo build --release --quiet --manifest-path bench/tools/Cargo.toml --target "$KERYX_RELEASE_TARGET" \
    --bin floor --bin spawner
FLOOR_STATIC="$TOOLS_TARGET/shipped/$KERYX_RELEASE_TARGET/release/floor"
SPAWNER_STATIC="$TOOLS_TARGET/shipped/$KERYX_RELEASE_TARGET/release/spawner"
SHIPPED_FLAGS="${KERYX_RELEASE_RUSTFLAGS:-the default flags: this platform ships a plain build}"
# The feeder is linked statically where the C library allows it: no dynamic
# loader work, so it adds as little as possible in front of every case.
if RUSTFLAGS="-C target-feature=+crt-static" CARGO_TARGET_DIR="$TOOLS_TARGET/static" \
    cargo build --release --quiet --manifest-path bench/tools/Cargo.toml --bin feed 2>/dev/null; then
    FEED="$TOOLS_TARGET/static/release/feed"
fi

AHA="$CACHE/agent-harness-adapter-$AHA_VERSION/bin/agent-harness-adapter"
if [[ ! -x "$AHA" && "${BENCH_NO_INSTALL:-}" != 1 ]]; then
    say "installing agent-harness-adapter $AHA_VERSION (cargo, into $CACHE)"
    CARGO_TARGET_DIR="$CACHE/agent-harness-adapter-build" \
        cargo install agent-harness-adapter --version "$AHA_VERSION" --locked --quiet \
        --root "$CACHE/agent-harness-adapter-$AHA_VERSION" ||
        say "agent-harness-adapter could not be installed; its case is skipped"
fi

# ---------------------------------------------------------------- cases
WORK="${BENCH_WORK:-}"
if [[ -z "$WORK" ]]; then
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/keryx-bench.XXXXXX")"
    trap 'rm -rf "$WORK"' EXIT
else
    WORK="$(abs "$WORK")"
    rm -rf "$WORK/cases" "$WORK/raw"
fi
mkdir -p "$WORK/cases" "$WORK/raw" "$OUT"

# Quote one word for hyperfine's --shell=none splitting.
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
join_q() { local s="" w; for w in "$@"; do s+="$(q "$w") "; done; printf '%s' "${s% }"; }

# in_case_dir DIR CMD...: a case's hermetic environment.
. bench/case-env.sh
in_case() { local id="$1"; shift; in_case_dir "${CASE_DIR[$id]}" "$@"; }

CASE_IDS=()
declare -A CASE_LABEL CASE_CMD CASE_DIR CASE_TPL CASE_FEED CASE_SEED CASE_PREP

# add_case ID LABEL PAYLOAD(Read|Bash|SessionStart|-) USER_HOOKS(file|-) FEED(1|0) CMD...
add_case() {
    local id="$1" label="$2" payload="$3" hooks="$4" feed="$5"
    shift 5
    if [[ -n "${BENCH_CASES:-}" && " $BENCH_CASES " != *" $id "* ]]; then return; fi
    local dir="$WORK/cases/$id"
    mkdir -p "$dir"/{home,state,data,config,cache,snapshots,project/.git,project/src}
    : >"$dir/project/src/main.rs"
    if [[ "$hooks" != - ]]; then
        mkdir -p "$dir/home/.keryx"
        cp "bench/fixtures/$hooks" "$dir/home/.keryx/hooks.json"
    fi
    local tpl="$dir/payload.template.json" fixture
    case "$payload" in
        -) fixture=bench/fixtures/PreToolUse-Read.json ;;
        SessionStart) fixture=bench/fixtures/SessionStart.json ;;
        *) fixture="bench/fixtures/PreToolUse-$payload.json" ;;
    esac
    sed -e "s#__PROJECT__#$dir/project#g" -e "s#__HOME__#$dir/home#g" "$fixture" >"$tpl"
    local cmd
    if [[ "$feed" == 1 ]]; then
        cmd="$(join_q "$FEED" "$dir/payload.json" "$@")"
    else
        cmd="$(join_q "$@")"
    fi
    CASE_IDS+=("$id")
    CASE_LABEL[$id]="$label"
    CASE_CMD[$id]="$cmd"
    CASE_DIR[$id]="$dir"
    CASE_TPL[$id]="$tpl"
    CASE_FEED[$id]="$feed"
    CASE_SEED[$id]=0
    CASE_PREP[$id]="$(join_q "$FRESHEN" "$tpl" "$dir/payload.json")"
}

add_case a "floor: Rust, reads stdin, prints {}" Read - 1 "$FLOOR"
add_case b "/bin/true, spawned directly" - - 0 /bin/true
add_case b-feed "/bin/true behind the stdin feeder (calibration)" Read - 1 /bin/true
# The least any shim pays for (d): the floor plus one /bin/true started in
# its own group with the payload piped in and its outputs drained. Linked like
# the floor, so a-spawn − a is one spawn from a fresh process.
add_case a-spawn "floor + one /bin/true hook, piped and waited for (no config, state or record)" Read - 1 "$SPAWNER" /bin/true
# The same two, linked as keryx-hooks ships ($SHIPPED_FLAGS): every target
# is a ratio over these.
add_case a-static "floor, built like the shipped binary (static, non-PIE)" Read - 1 "$FLOOR_STATIC"
add_case a-spawn-static "floor + one /bin/true hook, built like the shipped binary" Read - 1 "$SPAWNER_STATIC" /bin/true

# add_keryx_cases BINARY ID_SUFFIX LABEL_SUFFIX: the cases that run keryx-hooks.
add_keryx_cases() {
    local bin="$1" sfx="$2" lsfx="$3"
    local run=("$bin" run claude-code PreToolUse)
    add_case "x-version$sfx" "keryx-hooks --version (binary start, no work)$lsfx" Read - 1 "$bin" --version
    add_case "c-read$sfx" "run, built-ins only, Read (ctx-guard checks the path in-process; every default rule pack on, none matches)$lsfx" Read - 1 "${run[@]}"
    add_case "c-bash$sfx" "run, built-ins only, Bash (ctx-guard matches; every default rule pack on, none matches)$lsfx" Bash - 1 "${run[@]}"
    # Decided by a rule alone: the destructive pack denies, nothing spawned.
    add_case "c-deny$sfx" "run, Bash \`git push --force origin main\` denied by a default rule pack (no hook, no process)$lsfx" Bash-deny - 1 "${run[@]}"
    # The same two no-match calls with every default pack switched off
    # (rules_off): what the packs add to a call they do not answer.
    add_case "c-read-nopacks$sfx" "run, Read as c-read, every default rule pack off (rules_off)$lsfx" Read hooks-packs-off.json 1 "${run[@]}"
    add_case "c-bash-nopacks$sfx" "run, Bash as c-bash, every default rule pack off (rules_off)$lsfx" Bash hooks-packs-off.json 1 "${run[@]}"
    # A session that has already seen many tool calls: its state and
    # records have grown, so this is the steady state of a long session.
    add_case "c-read-long$sfx" "run, built-ins only, Read, after 300 earlier calls in the session$lsfx" Read - 1 "${run[@]}"
    if [[ -n "${CASE_DIR[c-read-long$sfx]:-}" ]]; then CASE_SEED[c-read-long$sfx]=300; fi
    add_case "d-unsandboxed$sfx" "run + 1 matching unsandboxed /bin/true gate (Read)$lsfx" Read hooks-gate-unsandboxed.json 1 "${run[@]}"
    add_case "d-sandboxed$sfx" "run + 1 matching sandboxed /bin/true gate (Read)$lsfx" Read hooks-gate-sandboxed.json 1 "${run[@]}"
    add_case "e-observe20$sfx" "run + 20 unsandboxed observe hooks of 100 ms (Read)$lsfx" Read hooks-observe-20.json 1 "${run[@]}"
}
add_keryx_cases "$KERYX" "" ""

# The sandbox floor: what bubblewrap itself costs, beside d-sandboxed in the
# same rounds. s-bwrap is a bare bwrap with the namespaces and base mounts
# every sandboxed hook gets (bench/sandbox-floor.sh), running /bin/true;
# s-bwrap-spawn is the static spawner starting that same bwrap as a gate is
# started (own group, payload piped, outputs drained). d-sandboxed over
# s-bwrap is the sandboxed gate's target (≤ 1.5×).
if BWRAP="$(command -v bwrap)"; then
    mapfile -t SANDBOX_FLOOR < <(bench/sandbox-floor.sh "$BWRAP")
    add_case s-bwrap "sandbox floor: bare bwrap (keryx's namespaces, no project mounts) running /bin/true" Read - 1 \
        "${SANDBOX_FLOOR[@]}" /bin/true
    add_case s-bwrap-spawn "sandbox floor + one spawn: the static spawner starting that bwrap, piped and waited for" Read - 1 \
        "$SPAWNER_STATIC" "${SANDBOX_FLOOR[@]}" /bin/true
else
    say "no bwrap on PATH: the sandbox floor (s-bwrap) is not measured"
fi

# (f) The SessionStart drift check over a 1,000-file, 50 MB hook source,
# installed as a snapshot with the real installer. Warm: the source-hash stat
# cache is in place (a normal session start). Cold: the stat cache is removed
# before every run, so every file is read and hashed again (from the page
# cache; the OS cache is not dropped). Only when this binary has `install`.
if "$KERYX" install --help >/dev/null 2>&1; then
    DRIFT_SOURCE="$WORK/drift-source/team-hooks"
    for id in f-none f-warm f-cold; do
        if [[ -n "${BENCH_CASES:-}" && " $BENCH_CASES " != *" $id "* ]]; then continue; fi
        if [[ ! -d "$DRIFT_SOURCE" ]]; then
            say "writing the 1,000-file, 50 MB hook source for (f)"
            "$PYTHON" bench/make-source.py "$DRIFT_SOURCE" 1000 50
            # The stat cache does not trust a file whose mtime or ctime is
            # under two seconds old (it could change again within the same
            # timestamp): a source written just now would be hashed afresh
            # on every run of the first seconds. A real hook source is old.
            sleep 3
        fi
        break
    done
    add_drift_case() { # add_drift_case ID LABEL COLD(0|1)
        local id="$1" label="$2" cold="$3"
        add_case "$id" "$label" SessionStart - 1 "$KERYX" run claude-code SessionStart --snapshot __KEY__
        [[ -n "${CASE_DIR[$id]:-}" ]] || return 0
        local dir="${CASE_DIR[$id]}" key
        in_case_dir "$dir" "$KERYX" install claude-code --source "$DRIFT_SOURCE" >"$dir/install.log" 2>&1 ||
            die "$id: keryx-hooks install failed (see $dir/install.log)"
        key="$(ls "$dir/snapshots")"
        [[ -n "$key" && -d "$dir/snapshots/$key" ]] || die "$id: install made no snapshot under $dir/snapshots"
        CASE_CMD[$id]="${CASE_CMD[$id]//__KEY__/$key}"
        if [[ "$cold" == 1 ]]; then
            CASE_PREP[$id]="$(join_q rm -f "$dir/state/keryx/source-hash/$key.json")"
        fi
    }
    add_case f-none "run SessionStart, no snapshot (beside f-warm/f-cold)" SessionStart - 1 "$KERYX" run claude-code SessionStart
    add_drift_case f-warm "run SessionStart --snapshot: drift check, 1,000 files / 50 MB, warm" 0
    add_drift_case f-cold "run SessionStart --snapshot: drift check, 1,000 files / 50 MB, cold" 1
else
    say "this keryx-hooks has no installer (no \`install\` command): case (f) is not measured"
fi
# A second binary (a candidate fix) measured in the same rounds, interleaved.
if [[ -n "${KERYX_BIN_B:-}" ]]; then
    add_keryx_cases "$(abs "$KERYX_BIN_B")" "@B" " [B: ${KERYX_BIN_B_LABEL:-second binary}]"
fi
if [[ -x "$AHA" ]]; then
    add_case g-aha "agent-harness-adapter $AHA_VERSION hook claude pre-tool -- /bin/true" Read - 1 \
        "$AHA" hook claude pre-tool -- /bin/true
fi
add_case g-python "Python dispatcher (system python3), 1 /bin/true hook" Read - 1 \
    "$PYTHON" "$REPO/bench/peers/dispatch.py" "$REPO/bench/fixtures/dispatch-config.json"
[[ ${#CASE_IDS[@]} -gt 0 ]] || die "no case selected (BENCH_CASES=${BENCH_CASES:-})"


# ---------------------------------------------------------------- answers
say "what each case answers (one run each, also a first warmup)"
: >"$WORK/answers.tsv"
for id in "${CASE_IDS[@]}"; do
    dir="${CASE_DIR[$id]}"
    eval "set -- ${CASE_CMD[$id]}"
    if ((CASE_SEED[$id] > 0)); then
        say "  $id: ${CASE_SEED[$id]} earlier events first"
        for ((i = 0; i < CASE_SEED[$id]; i++)); do
            "$FRESHEN" "${CASE_TPL[$id]}" "$dir/payload.json"
            in_case "$id" "$@" >/dev/null 2>&1 || true
        done
    fi
    "$FRESHEN" "${CASE_TPL[$id]}" "$dir/payload.json"
    set +e
    answer="$(in_case "$id" "$@" 2>"$dir/first.stderr")"
    rc=$?
    set -e
    printf '%s\t%s\t%s\n' "$id" "$rc" "$(printf '%s' "$answer" | tr '\n\t' '  ' | cut -c1-300)" >>"$WORK/answers.tsv"
    printf '  %-14s exit %-3s %s\n' "$id" "$rc" "$(printf '%s' "$answer" | tr '\n' ' ' | cut -c1-110)" >&2
done

# ---------------------------------------------------------------- timing
load1() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0; }
quiet_load="${BENCH_QUIET_LOAD:-0.5}" quiet_wait="${BENCH_QUIET_WAIT:-0}"
waited=0
while ((waited < quiet_wait)) && awk -v l="$(load1)" -v q="$quiet_load" 'BEGIN { exit !(l > q) }'; do
    ((waited % 60 == 0)) && say "load average $(load1) > $quiet_load; waiting (up to ${quiet_wait}s)"
    sleep 10
    waited=$((waited + 10))
done
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
if awk -v l="$(load1)" 'BEGIN { exit !(l > 1.0) }'; then
    say "warning: load average is $(load1) on $(nproc) cores; other work is running and will inflate the times"
fi
total=$((ROUNDS * RUNS))
say "timing ${#CASE_IDS[@]} cases: $ROUNDS rounds x $RUNS runs (+$WARMUP warmups) = $total runs each, shuffled per round"
for ((r = 1; r <= ROUNDS; r++)); do
    mapfile -t order < <(printf '%s\n' "${CASE_IDS[@]}" | shuf)
    printf '    round %d/%d: %s\n' "$r" "$ROUNDS" "${order[*]}" >&2
    for id in "${order[@]}"; do
        dir="${CASE_DIR[$id]}"
        in_case "$id" hyperfine --shell=none --style none --ignore-failure \
            --warmup "$WARMUP" --runs "$RUNS" \
            --prepare "${CASE_PREP[$id]}" \
            --export-json "$WORK/raw/$id.$r.json" \
            "${CASE_CMD[$id]}" >/dev/null
    done
done

LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

# ---------------------------------------------------------------- peak RSS
say "peak RSS: $RSS_RUNS runs per case under GNU time (max RSS of the process and any child it waited for)"
for id in "${CASE_IDS[@]}"; do
    dir="${CASE_DIR[$id]}"
    : >"$WORK/raw/$id.rss"
    eval "set -- ${CASE_CMD[$id]}"
    for ((i = 0; i < RSS_RUNS; i++)); do
        (eval "set -- ${CASE_PREP[$id]}" && "$@")
        in_case "$id" /usr/bin/time -f '%M' -o "$dir/rss.txt" "$@" >/dev/null 2>&1 || true
        tail -n1 "$dir/rss.txt" >>"$WORK/raw/$id.rss"
    done
done

# ---------------------------------------------------------------- summary
{
    for id in "${CASE_IDS[@]}"; do
        printf '%s\t%s\t%s\n' "$id" "${CASE_LABEL[$id]}" "${CASE_FEED[$id]}"
    done
} >"$WORK/cases.tsv"
cpu="$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)"
# shellcheck disable=SC1091 # /etc/os-release is read where it exists
"$PYTHON" bench/summarize.py \
    --raw "$WORK/raw" --cases "$WORK/cases.tsv" --answers "$WORK/answers.tsv" --out "$OUT" \
    --meta "cpu=${cpu:-unknown}" \
    --meta "cores=$(nproc)" \
    --meta "kernel=$(uname -sr)" \
    --meta "os=$(. /etc/os-release 2>/dev/null && printf '%s' "${PRETTY_NAME:-unknown}")" \
    --meta "hyperfine=$(hyperfine --version | cut -d' ' -f2)" \
    --meta "python=$("$PYTHON" -c 'import platform; print(platform.python_version())')" \
    --meta "rustc=$(rustc --version 2>/dev/null | cut -d' ' -f2)" \
    --meta "keryx_build=$KERYX_BUILD" \
    --meta "shipped_flags=$SHIPPED_FLAGS" \
    --meta "date=$(date -u +%Y-%m-%dT%H:%MZ)" \
    --meta "loadavg_start=$LOAD_START" --meta "loadavg_end=$LOAD_END" \
    --meta "rounds=$ROUNDS" --meta "runs_per_round=$RUNS" --meta "warmup=$WARMUP" --meta "rss_runs=$RSS_RUNS"
"$PYTHON" bench/chart.py "$OUT/results.json" "$OUT/ratios.svg"
say "wrote $OUT/results.json, $OUT/results.md and $OUT/ratios.svg"
