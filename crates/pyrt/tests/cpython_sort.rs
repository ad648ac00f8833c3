//! `canvas_pyrt::timsort` against CPython's `list.sort` on seeded random inputs: the
//! same result, the same number of `<` calls, and, when the n-th `<` raises, the same
//! list state left behind.
//!
//! Needs `python3`; without it the test fails under `CI=true` and is skipped otherwise.

mod common;

use serde_json::{Value, json};

/// Python side: sorts each case's items with a `<` that counts its calls and raises on
/// call number `fail_at`, and prints one JSON line per case.
const PYTHON: &str = r#"
import json, sys

class Boom(Exception):
    pass

class K:
    __slots__ = ("i", "k")
    def __init__(self, i, k):
        self.i, self.k = i, k
    def __lt__(self, other):
        global calls
        calls += 1
        if calls == fail_at:
            raise Boom
        return self.k < other.k

for line in sys.stdin:
    case = json.loads(line)
    fail_at = case["fail_at"]
    calls = 0
    items = [K(i, k) for i, k in enumerate(case["keys"])]
    try:
        items.sort()
        raised = None
    except Boom:
        raised = calls
    print(json.dumps({"order": [x.i for x in items], "calls": calls, "raised": raised}))
"#;

/// A deterministic xorshift, so every run checks the same cases.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Random keys in shapes that reach every timsort path: many ties, ascending and
/// descending runs (galloping), and plain noise.
fn cases() -> Vec<(Vec<u64>, u64)> {
    let mut seed = 0x5eed_1234_abcd_ef01_u64;
    (0..400)
        .map(|round| {
            let n = match round % 5 {
                0 => (rng(&mut seed) % 8) as usize,
                1 => (rng(&mut seed) % 70) as usize,
                _ => (rng(&mut seed) % 1200) as usize,
            };
            let keys: Vec<u64> = (0..n)
                .map(|i| {
                    let i = i as u64;
                    match round % 4 {
                        0 => rng(&mut seed) % 10,
                        1 => i / 7 + rng(&mut seed) % 3,
                        2 => (n as u64 - i) + rng(&mut seed) % 2,
                        _ => rng(&mut seed) % 1_000_000,
                    }
                })
                .collect();
            // A third of the cases never raise (call number 0 never happens).
            let fail_at = match round % 3 {
                0 => 0,
                _ => 1 + rng(&mut seed) % (n as u64 * 10 + 1),
            };
            (keys, fail_at)
        })
        .collect()
}

/// Ours, reported like the Python side.
fn ours(keys: &[u64], fail_at: u64) -> Value {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    let mut calls = 0u64;
    let res = canvas_pyrt::timsort(&mut order, &mut |i: usize, j: usize| {
        calls += 1;
        if calls == fail_at {
            Err(calls)
        } else {
            Ok(keys[i] < keys[j])
        }
    });
    json!({"order": order, "calls": calls, "raised": res.err()})
}

#[test]
fn timsort_matches_cpython() {
    let cases = cases();
    let input: Vec<Value> = cases
        .iter()
        .map(|(keys, fail_at)| json!({"keys": keys, "fail_at": fail_at}))
        .collect();
    let Some(theirs) = common::python_json(PYTHON, &input) else {
        return;
    };
    assert_eq!(theirs.len(), cases.len());
    let mut raised = 0;
    for (k, ((keys, fail_at), want)) in cases.iter().zip(&theirs).enumerate() {
        raised += usize::from(!want["raised"].is_null());
        assert_eq!(
            &ours(keys, *fail_at),
            want,
            "case {k}: n={}, fail_at={fail_at}",
            keys.len()
        );
    }
    // The cases must exercise both outcomes.
    assert!(raised > 50 && raised < cases.len() - 50, "{raised} raised");
}
