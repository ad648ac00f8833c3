//! The bodies of the fuzz targets: one function per target, taking the fuzzer's bytes.
//!
//! The cargo-fuzz crate (`fuzz/`, nightly, outside the workspace) calls them, and so does
//! the stable test `tests/regressions.rs`, which replays every input committed under
//! `fuzz/regressions/<target>/`: an input that once crashed a target stays fixed. Each
//! function must never panic on any input; where an invariant is cheap and real it is
//! asserted (an assertion failing is a crash the fuzzer reports). `docs/fuzzing.md`
//! says how to run them.
//!
//! Targets taking several texts split their input at NUL bytes (see [`parts`]): texts
//! rarely hold one, and a fuzzer inserts one easily.

mod alloc;
mod dsl;
mod events;
mod inputs;
mod llm_config;
mod mock_script;
mod pyrt;
mod template;

pub use alloc::{Bounded, MAX_ALLOC};
pub use dsl::dsl;
pub use events::stored_events;
pub use inputs::inputs;
pub use llm_config::llm_config;
pub use mock_script::mock_script;
pub use pyrt::pyrt;
pub use template::template;

/// A target's body: the fuzzer's bytes in, a panic for a failure.
pub type Target = fn(&[u8]);

/// Every target by name (the name of its `fuzz/fuzz_targets/` file and of its corpus
/// and regression directories).
pub const TARGETS: &[(&str, Target)] = &[
    ("dsl", dsl),
    ("template", template),
    ("pyrt", pyrt),
    ("mock_script", mock_script),
    ("llm_config", llm_config),
    ("inputs", inputs),
    ("stored_events", stored_events),
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// `data` cut at its first `N - 1` NUL bytes into `N` parts (missing parts are empty;
/// the last part keeps any further NUL).
pub fn parts<const N: usize>(data: &[u8]) -> [&[u8]; N] {
    let mut out = [&data[..0]; N];
    let mut rest = data;
    for (i, slot) in out.iter_mut().enumerate() {
        if i + 1 == N {
            *slot = rest;
            break;
        }
        match rest.iter().position(|&b| b == 0) {
            Some(at) => {
                *slot = &rest[..at];
                rest = &rest[at + 1..];
            }
            None => {
                *slot = rest;
                rest = &rest[rest.len()..];
            }
        }
    }
    out
}

/// The bytes as text, when they are UTF-8 (every file the targets stand for is read as
/// UTF-8 text, so other bytes never reach the code under test).
fn text(b: &[u8]) -> Option<&str> {
    std::str::from_utf8(b).ok()
}

/// [`parts`] as text, when every part is UTF-8 (see [`text`]).
fn text_parts<const N: usize>(data: &[u8]) -> Option<[&str; N]> {
    let parts = parts::<N>(data);
    let mut out = [""; N];
    for (slot, part) in out.iter_mut().zip(parts) {
        *slot = text(part)?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_split_at_nul_bytes() {
        let [a, b, c] = parts::<3>(b"x\0y\0z\0w");
        assert_eq!((a, b, c), (&b"x"[..], &b"y"[..], &b"z\0w"[..]));
        let [a, b] = parts::<2>(b"only");
        assert_eq!((a, b), (&b"only"[..], &b""[..]));
        let [a] = parts::<1>(b"a\0b");
        assert_eq!(a, b"a\0b");
    }

    #[test]
    fn every_target_takes_empty_and_odd_bytes() {
        for (name, f) in TARGETS {
            for data in [&b""[..], b"\0", b"\xff\xfe", b"{", b"\0\0\0\0\0"] {
                f(data);
            }
            assert!(target(name).is_some());
        }
    }
}
