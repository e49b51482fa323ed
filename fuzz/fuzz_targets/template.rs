//! The `template` checks of nyl_render_fuzz (fuzz/src/lib.rs), on what libFuzzer generates.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nyl_render_fuzz::template(data));
