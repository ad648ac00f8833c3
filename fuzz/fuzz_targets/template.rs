#![no_main]
//! The `template` target; its body is `canvas_fuzz_targets::template`, which the stable test
//! replaying `fuzz/regressions/template/` calls too.

#[global_allocator]
static ALLOC: canvas_fuzz_targets::Bounded = canvas_fuzz_targets::Bounded;

libfuzzer_sys::fuzz_target!(|data: &[u8]| canvas_fuzz_targets::template(data));
