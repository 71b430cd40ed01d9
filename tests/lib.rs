//! The one integration-test binary: every test runs the real binary in a
//! hermetic home (temp HOME, XDG_*, KERYX_HOME, KERYX_SNAPSHOT_ROOT) with a
//! cleared environment.

mod adversarial;
mod architecture;
mod budget;
mod builtins;
mod cli_snapshots;
mod common;
mod config;
mod conventions;
mod e2e;
mod explain;
mod fail_closed;
mod first_hour;
mod fuzz_regressions;
mod hardening_state;
mod hook_test;
mod hosts;
mod import;
mod init;
mod install;
mod log;
mod managed;
mod notices;
mod otlp;
mod readme;
mod real_hooks;
mod rules;
mod rules_packs;
mod runtime;
mod sandbox;
mod secrets_corpus;
mod self_protection;
mod settings;
mod shim;
mod snapshot;
mod trust;
mod user_scripts;
mod wired_snapshot;
