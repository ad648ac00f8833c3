#![no_main]
//! The `pyrt` target; its body is `canvas_fuzz_targets::pyrt`, which the stable test
//! replaying `fuzz/regressions/pyrt/` calls too.

#[global_allocator]
static ALLOC: canvas_fuzz_targets::Bounded = canvas_fuzz_targets::Bounded;

libfuzzer_sys::fuzz_target!(|data: &[u8]| canvas_fuzz_targets::pyrt(data));
