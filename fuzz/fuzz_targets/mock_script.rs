#![no_main]
//! The `mock_script` target; its body is `canvas_fuzz_targets::mock_script`, which the stable test
//! replaying `fuzz/regressions/mock_script/` calls too.

#[global_allocator]
static ALLOC: canvas_fuzz_targets::Bounded = canvas_fuzz_targets::Bounded;

libfuzzer_sys::fuzz_target!(|data: &[u8]| canvas_fuzz_targets::mock_script(data));
