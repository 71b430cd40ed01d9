//! `cargo +nightly fuzz run hook_reply`: see fuzz/README.md for the property.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| keryx_hooks_fuzz::hook_reply(data));
