#![no_main]
//! The `inputs` target; its body is `canvas_fuzz_targets::inputs`, which the stable test
//! replaying `fuzz/regressions/inputs/` calls too.

#[global_allocator]
static ALLOC: canvas_fuzz_targets::Bounded = canvas_fuzz_targets::Bounded;

libfuzzer_sys::fuzz_target!(|data: &[u8]| canvas_fuzz_targets::inputs(data));
