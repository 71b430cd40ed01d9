#!/usr/bin/env bash
# Counts that do not move with the machine's load, for one event of each
# case: instructions (callgrind), heap allocations
# (malloc, calloc and realloc calls, from the same callgrind run), page faults
# (perf stat, mean over COUNTS_RUNS events) and system calls (strace -c -f).
#
#   bench/counts.sh KERYX_BINARY [SECOND_BINARY]
#
# Every event runs in its own hermetic home, as in bench/run.sh, after
# COUNTS_WARM earlier events of the same session (the steady state of a
# session: its state and records exist), each with a fresh tool-call id.
# The floors (a-static, a-spawn-static) are the ones bench/run.sh builds,
# taken from BENCH_TOOLS_TARGET (default target/bench-tools); run
# bench/run.sh --quick once to build them.
#
# Cases: read, bash (nothing matches; every default rule pack on), deny (a
# Bash `git push --force origin main` the destructive pack denies, no hook
# spawned), read-keys, gate (one /bin/true gate), and read-nopacks,
# bash-nopacks (the same calls with every default pack switched off by
# `rules_off`: what the packs add).
# The sandbox case runs one sandboxed /bin/true gate beside the bare-sandbox
# floor (bubblewrap alone, bench/sandbox-floor.sh): its counts cover the
# whole process tree (keryx-hooks, both bubblewrap processes and the hook),
# and a second table splits them per process, with bubblewrap's mounts.
#
# Settings: COUNTS_CASES="read read-keys bash deny gate sandbox" COUNTS_RUNS=20 COUNTS_WARM=3
#   COUNTS_WORK=<dir>  keep every case's home, callgrind profile (cg.out) and
#                      strace summary there (default: a temp dir, removed)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
. install/release-env.sh

CASES="${COUNTS_CASES:-read read-keys bash deny gate sandbox}"
RUNS="${COUNTS_RUNS:-20}"
WARM="${COUNTS_WARM:-3}"
TOOLS_TARGET="$(realpath -m "${BENCH_TOOLS_TARGET:-target/bench-tools}")"
FLOOR="$TOOLS_TARGET/shipped/$KERYX_RELEASE_TARGET/release/floor"
SPAWNER="$TOOLS_TARGET/shipped/$KERYX_RELEASE_TARGET/release/spawner"

die() { printf 'counts: %s\n' "$*" >&2; exit 1; }
[[ $# -ge 1 ]] || die "usage: bench/counts.sh KERYX_BINARY [SECOND_BINARY]"
for tool in valgrind perf strace; do
    command -v "$tool" >/dev/null || die "$tool is needed"
done
[[ -x "$FLOOR" && -x "$SPAWNER" ]] || die "no static floors under $TOOLS_TARGET (run bench/run.sh --quick once)"

if [[ -n "${COUNTS_WORK:-}" ]]; then
    WORK="$(realpath -m "$COUNTS_WORK")"
    rm -rf "$WORK" && mkdir -p "$WORK"
else
    WORK="$(mktemp -d "${TMPDIR:-/var/tmp}/keryx-counts.XXXXXX")"
    trap 'rm -rf "$WORK"' EXIT
fi

n=0
# payload CASE_DIR FIXTURE: CASE_DIR/p.json, with a fresh tool-call id.
payload() {
    n=$((n + 1))
    sed -e "s#__PROJECT__#$1/project#g" -e "s#__HOME__#$1/home#g" \
        -e "s#__TOOL_USE_ID__#toolu_counts_$$_$n#g" -e "$PAYLOAD_EDIT" "$2" >"$1/p.json"
}

# in_case DIR CMD...: CMD in DIR's hermetic environment, from its project.
. bench/case-env.sh
in_case() { in_case_dir "$@"; }

# malloc_calls CALLGRIND_OUT: how many times malloc, calloc and realloc were
# called (the binary is static, so a preloaded allocator cannot count them).
malloc_calls() {
    awk '
        /^cfn=/ {
            id = $1; sub(/^cfn=/, "", id)
            if (NF > 1) { name[id] = $2 }
            cur = name[id]
            next
        }
        /^calls=/ && (cur == "malloc" || cur == "calloc" || cur == "realloc") {
            c = $1; sub(/^calls=/, "", c); total += c
        }
        /^fn=/ {
            id = $1; sub(/^fn=/, "", id)
            if (NF > 1) { name[id] = $2 }
            cur = ""
        }
        END { print total + 0 }
    ' "$1"
}

# role COMMAND PID_IN_ITS_NAMESPACE: which process of a sandboxed run this
# is. Bubblewrap's child never calls execve: it builds the sandbox, then
# waits for the hook as pid 1 of the new pid namespace.
role() {
    case "$1" in
        *" run claude-code "*) printf '1 keryx-hooks' ;;
        "" | in-sandbox) printf '3 bwrap, its child: builds the sandbox, then pid 1' ;;
        *bwrap*) [[ "$2" == 1 ]] && printf '3 bwrap, its child: builds the sandbox, then pid 1' ||
            printf '2 bwrap, the launcher (from the fork that execs it)' ;;
        *) printf '4 the hook (%s)' "${1%% *}" ;;
    esac
}

# pid1_instructions CASE_DIR BWRAP_ARGV...: the instructions of bubblewrap's
# child, which --die-with-parent kills before valgrind can print them (the
# launcher exits as soon as the hook has): the same argv without it (and
# without --seccomp, whose fd is gone), waited for until it has printed them.
pid1_instructions() {
    local dir="$1" i
    shift
    local argv=() skip=0 a
    for a in "$@"; do
        if ((skip)); then skip=0; continue; fi
        case "$a" in
            --die-with-parent) continue ;;
            --seccomp) skip=1; continue ;;
        esac
        argv+=("$a")
    done
    in_case "$dir" valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=/dev/null \
        "${argv[@]}" </dev/null >/dev/null 2>"$dir/cg/pid1.log" || true
    for ((i = 0; i < 100; i++)); do
        grep -q '^==1== Collected' "$dir/cg/pid1.log" && break
        sleep 0.1
    done
    sed -n 's/^==1== Collected : \([0-9]*\).*/\1/p' "$dir/cg/pid1.log"
}

# sandbox_detail LABEL CASE_DIR CPU_MS: one row per process of a sandboxed
# run: instructions from its callgrind log (every "==PID==" line of
# cg/all.log), system calls and mounts from its strace -ff file; then the
# tree's CPU time (task-clock, mean of COUNTS_RUNS: the one column here that
# moves with the machine's load).
sandbox_detail() {
    local label="$1" dir="$2" cpu="$3" pid cmd t argv
    declare -A ir=() calls=() mounts=()
    while IFS=$'\t' read -r pid cmd; do
        ir["$(role "$cmd" "$pid")"]="$(sed -n "s/^==$pid== Collected : \([0-9]*\).*/\1/p" "$dir/cg/all.log")"
    done < <(sed -n 's/^==\([0-9]*\)== Command: \(.*\)/\1\t\2/p' "$dir/cg/all.log")
    for t in "$dir"/trace/t.*; do
        cmd="$(sed -n 's/^execve("[^"]*", \[\(.*\)\], .*= 0$/\1/p' "$t" | tail -n1 | tr -d '",')"
        calls["$(role "$cmd" -)"]="$(grep -c '' "$t")"
        mounts["$(role "$cmd" -)"]="$(grep -c '^mount(' "$t" || true)"
    done
    # The launcher's argv, as strace printed it (-v -s 4096), replayed.
    local pid1 launcher
    launcher="$(grep -l '^execve("[^"]*bwrap"' "$dir"/trace/t.* | head -n1)"
    if [[ -n "$launcher" ]]; then
        mapfile -t argv < <(sed -n 's/^execve("[^"]*bwrap", \(\[.*\]\), \[.*= 0$/\1/p' "$launcher" |
            python3 -c 'import json, sys; print("\n".join(json.loads(sys.stdin.read())))')
        pid1="$(pid1_instructions "$dir" "${argv[@]}")"
        ir["3 bwrap, its child: builds the sandbox, then pid 1"]="${pid1:-?} (replayed)"
        PID1_IR="${pid1:-0}"
    fi
    local r roles
    mapfile -t roles < <(printf '%s\n' "${!ir[@]}" "${!calls[@]}" | sort -u)
    for r in "${roles[@]}"; do
        printf '| %s | %s | %s | %s | %s |\n' "$label" "${r#* }" "${ir[$r]:-}" "${calls[$r]:-}" "${mounts[$r]:-}"
    done
    printf '| %s | whole tree: CPU ms (task-clock) | %s | | |\n' "$label" "$cpu"
}

# one CASE LABEL FIXTURE HOOKS(-|file) CMD...: prints a table row.
one() {
    local case="$1" label="$2" fixture="$REPO/bench/fixtures/$3" hooks="$4"
    shift 4
    local dir="$WORK/$case-$label"
    mkdir -p "$dir"/{home,state,data,config,cache,snapshots,project/.git,project/src}
    : >"$dir/project/src/main.rs"
    if [[ "$hooks" != - ]]; then
        mkdir -p "$dir/home/.keryx"
        cp "$REPO/bench/fixtures/$hooks" "$dir/home/.keryx/hooks.json"
    fi
    local i
    for ((i = 0; i < WARM; i++)); do
        payload "$dir" "$fixture"
        in_case "$dir" "$@" <"$dir/p.json" >/dev/null 2>&1 || true
    done
    local ir allocs faults=0 f calls cpu
    payload "$dir" "$fixture"
    if [[ "$case" == sandbox ]]; then
        # Every process of the tree, bubblewrap's and the hook's included.
        # Inside keryx-hooks' sandbox only the project is writable, at the
        # same path, so each process writes its profile and log there; the
        # bare floor has nothing writable, so its logs go to stderr and its
        # profiles nowhere.
        rm -rf "$dir/project/cg" "$dir/cg" && mkdir -p "$dir/project/cg" "$dir/cg"
        if [[ "$label" == floor ]]; then
            in_case "$dir" valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=/dev/null \
                "$@" <"$dir/p.json" >/dev/null 2>"$dir/cg/all.log" || true
            allocs=""
        else
            in_case "$dir" valgrind --tool=callgrind --trace-children=yes \
                --callgrind-out-file="$dir/project/cg/%p.out" --log-file="$dir/project/cg/%p.log" \
                "$@" <"$dir/p.json" >/dev/null 2>&1 || true
            cat "$dir"/project/cg/*.log >"$dir/cg/all.log"
            allocs="$(for out in "$dir"/project/cg/*.out; do malloc_calls "$out"; done |
                awk '{ s += $1 } END { print s + 0 }')"
        fi
        # Bubblewrap's child (pid 1) is added from its replay below, whether
        # or not it lived to print its count here.
        ir="$(sed -n '/^==1== /d; s/.*Collected : \([0-9]*\).*/\1/p' "$dir/cg/all.log" |
            awk '{ s += $1 } END { print s + 0 }')"
    else
        in_case "$dir" valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "$@" <"$dir/p.json" \
            >/dev/null 2>"$dir/cg.log" || true
        ir="$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/cg.log")"
        allocs="$(malloc_calls "$dir/cg.out")"
    fi
    for ((i = 0; i < RUNS; i++)); do
        payload "$dir" "$fixture"
        f="$(in_case "$dir" perf stat -x, -e page-faults "$@" <"$dir/p.json" 2>&1 >/dev/null |
            sed -n 's/^\([0-9]*\),.*page-faults.*/\1/p')"
        faults=$((faults + f))
    done
    payload "$dir" "$fixture"
    in_case "$dir" strace -c -f -o "$dir/strace.txt" "$@" <"$dir/p.json" >/dev/null 2>&1 || true
    calls="$(awk '$NF == "total" { print $4 }' "$dir/strace.txt")"
    if [[ "$case" == sandbox ]]; then
        payload "$dir" "$fixture"
        rm -rf "$dir/trace" && mkdir -p "$dir/trace"
        in_case "$dir" strace -ff -v -s 4096 -o "$dir/trace/t" "$@" <"$dir/p.json" >/dev/null 2>&1 || true
        cpu="$(for ((i = 0; i < RUNS; i++)); do
            payload "$dir" "$fixture"
            in_case "$dir" perf stat -x, -e task-clock "$@" <"$dir/p.json" 2>&1 >/dev/null |
                sed -n 's/^\([0-9.]*\),.*task-clock.*/\1/p'
        done | awk '{ s += $1 } END { printf "%.2f", s / NR }')"
        PID1_IR=0
        sandbox_detail "$label" "$dir" "$cpu" >>"$WORK/sandbox-detail.md"
        ir=$((ir + PID1_IR))
    fi
    printf '| %s | %s | %s | %s | %s | %s |\n' "$case" "$label" "${ir:-?}" "${allocs:-?}" \
        "$(awk -v s="$faults" -v n="$RUNS" 'BEGIN { printf "%.1f", s / n }')" "${calls:-?}"
}

printf '| case | binary | instructions | allocations | page faults | system calls |\n'
printf '|---|---|---:|---:|---:|---:|\n'
labels=(A) bins=("$1")
if [[ $# -ge 2 ]]; then labels+=(B) bins+=("$2"); fi
for case in $CASES; do
    PAYLOAD_EDIT=""
    case "$case" in
        read) fixture=PreToolUse-Read.json hooks=- floor=("$FLOOR") ;;
        bash) fixture=PreToolUse-Bash.json hooks=- floor=("$FLOOR") ;;
        deny) fixture=PreToolUse-Bash-deny.json hooks=- floor=("$FLOOR") ;;
        read-nopacks) fixture=PreToolUse-Read.json hooks=hooks-packs-off.json floor=("$FLOOR") ;;
        bash-nopacks) fixture=PreToolUse-Bash.json hooks=hooks-packs-off.json floor=("$FLOOR") ;;
        # A Read of a file whose name holds secret-rule keywords (`key`,
        # `sk`, `ac`, `dd`): the observation's redaction screens it.
        read-keys) fixture=PreToolUse-Read.json hooks=- floor=("$FLOOR")
            PAYLOAD_EDIT="s#src/main.rs#src/task_keys_add_react.rs#" ;;
        gate) fixture=PreToolUse-Read.json hooks=hooks-gate-unsandboxed.json floor=("$SPAWNER" /bin/true) ;;
        sandbox) fixture=PreToolUse-Read.json hooks=hooks-gate-sandboxed.json
            mapfile -t floor < <(bench/sandbox-floor.sh)
            floor+=(/bin/true) ;;
        *) die "unknown case $case (read, read-keys, bash, deny, gate, sandbox, read-nopacks, bash-nopacks)" ;;
    esac
    one "$case" floor "$fixture" - "${floor[@]}"
    for i in "${!bins[@]}"; do
        one "$case" "${labels[$i]}" "$fixture" "$hooks" "$(realpath "${bins[$i]}")" run claude-code PreToolUse
    done
done
if [[ -s "$WORK/sandbox-detail.md" ]]; then
    printf '\nThe sandbox case per process (allocations: every process but the bare floor'"'"'s, whose profiles cannot be written):\n\n'
    printf '| binary | process | instructions | system calls | mounts |\n'
    printf '|---|---|---:|---:|---:|\n'
    cat "$WORK/sandbox-detail.md"
fi
