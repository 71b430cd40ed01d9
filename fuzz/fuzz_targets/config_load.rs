//! `cargo +nightly fuzz run config_load`: see fuzz/README.md for the property.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| keryx_hooks_fuzz::config_load(data));
