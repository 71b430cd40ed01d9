//! `cargo +nightly fuzz run hostfile_toml`: see fuzz/README.md for the property.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| keryx_hooks_fuzz::hostfile_toml(data));
