# shellcheck shell=bash
# Sourced by bench/run.sh and bench/counts.sh: one case's hermetic
# environment, so both measure keryx-hooks the same way.

# in_case_dir DIR CMD...: runs CMD in DIR's hermetic environment (its own
# home, XDG dirs and snapshot root, no KERYX_* from outside), from DIR/project.
in_case_dir() {
    local dir="$1"
    shift
    (cd "$dir/project" && env -u KERYX_HOME -u KERYX_HOOKS -u KERYX_SNAPSHOT_ROOT -u XDG_RUNTIME_DIR \
        HOME="$dir/home" XDG_STATE_HOME="$dir/state" XDG_DATA_HOME="$dir/data" \
        XDG_CONFIG_HOME="$dir/config" XDG_CACHE_HOME="$dir/cache" \
        KERYX_SNAPSHOT_ROOT="$dir/snapshots" "$@")
}
