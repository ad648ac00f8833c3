#![no_main]
//! The `dsl` target; its body is `canvas_fuzz_targets::dsl`, which the stable test
//! replaying `fuzz/regressions/dsl/` calls too.

#[global_allocator]
static ALLOC: canvas_fuzz_targets::Bounded = canvas_fuzz_targets::Bounded;

libfuzzer_sys::fuzz_target!(|data: &[u8]| canvas_fuzz_targets::dsl(data));
