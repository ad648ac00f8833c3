#![no_main]
//! The `stored_events` target; its body is `canvas_fuzz_targets::stored_events`, which the stable test
//! replaying `fuzz/regressions/stored_events/` calls too.

#[global_allocator]
static ALLOC: canvas_fuzz_targets::Bounded = canvas_fuzz_targets::Bounded;

libfuzzer_sys::fuzz_target!(|data: &[u8]| canvas_fuzz_targets::stored_events(data));
