# shellcheck shell=sh disable=SC2034
# How the shipped keryx-hooks binary is built; sourced by install/install.sh
# and bench/run.sh so both measure and install the same thing.
#
# keryx-hooks starts once per tool call of every session, so its start-up is
# paid thousands of times a day. A position-independent Rust binary of this
# size carries ~17,000 load-time relocations and binds every libc symbol at
# start; on Linux with glibc it is therefore linked static and non-PIE, which
# removes both (docs/PERFORMANCE.md, Finding 3). The flags are passed with an
# explicit --target so that they reach only the binary, never the build
# scripts and proc-macros cargo builds for the host.
#
# Sets KERYX_RELEASE_TARGET (the host triple) and KERYX_RELEASE_RUSTFLAGS
# (empty where the plain default is used). KERYX_RELEASE_PLAIN=1 opts out.

KERYX_RELEASE_TARGET=$(rustc -vV | sed -n 's/^host: //p')
KERYX_RELEASE_RUSTFLAGS=
case "${KERYX_RELEASE_PLAIN:-0}:$KERYX_RELEASE_TARGET" in
    0:x86_64-unknown-linux-gnu | 0:aarch64-unknown-linux-gnu)
        KERYX_RELEASE_RUSTFLAGS="-C relocation-model=static -C target-feature=+crt-static"
        ;;
esac
