#![no_main]
//! The `llm_config` target; its body is `canvas_fuzz_targets::llm_config`, which the stable test
//! replaying `fuzz/regressions/llm_config/` calls too.

#[global_allocator]
static ALLOC: canvas_fuzz_targets::Bounded = canvas_fuzz_targets::Bounded;

libfuzzer_sys::fuzz_target!(|data: &[u8]| canvas_fuzz_targets::llm_config(data));
