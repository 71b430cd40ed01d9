//! `cargo +nightly fuzz run host_payload`: see fuzz/README.md for the property.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| keryx_hooks_fuzz::host_payload(data));
