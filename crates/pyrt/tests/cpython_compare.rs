//! `canvas_pyrt`'s `==` and `<` against CPython's, for seeded random pairs of JSON
//! values drawn from a small set (so that equal and ordered pairs are common): ints
//! against floats beyond 2**53, bools, -0.0, strings by code point, lists item by item,
//! dicts, and the `TypeError` of `<` between types that do not order.
//!
//! Needs `python3`; without it the test fails under `CI=true` and is skipped otherwise.

mod common;

use canvas_pyrt::{CompareError, PyKey, py_eq, py_lt_key};
use serde_json::{Value, json};

/// Python side: one pair a line; prints `[a == b, a < b]`, the second as the
/// `TypeError`'s message where `<` raises.
const PYTHON: &str = r#"
import json, sys
for line in sys.stdin:
    a, b = json.loads(line)
    try:
        lt = a < b
    except TypeError as e:
        lt = str(e)
    print(json.dumps([a == b, lt]))
"#;

/// A deterministic xorshift, so every run checks the same cases.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// The values pairs are drawn from.
fn atoms() -> Vec<Value> {
    serde_json::from_str(
        r#"[null, true, false, 0, 1, -1, 0.0, -0.0, 1.0, 0.5, 1.5, -2.5, 2,
            9007199254740993, 9007199254740992.0, 9007199254740992, 18446744073709551615,
            1e300, -1e300, "", "a", "b", "ab", "B", "é", "😀", "1",
            [], [1], [1.0], [true], [1, 2], [1, "a"], ["a", 1], [[1]], [null],
            {}, {"a": 1}, {"a": 1.0}, {"a": true}, {"b": 1}, {"a": 1, "b": 2}, {"b": 2, "a": 1}]"#,
    )
    .expect("the atoms are JSON")
}

#[test]
fn equality_and_order_match_cpython() {
    let atoms = atoms();
    let mut seed = 0xc0de_ca5e_0bad_f00d_u64;
    let mut pairs: Vec<(Value, Value)> = Vec::new();
    for a in &atoms {
        for b in &atoms {
            pairs.push((a.clone(), b.clone()));
        }
    }
    // Lists of atoms against lists of atoms: the first difference decides.
    let pick = |seed: &mut u64| atoms[(rng(seed) % atoms.len() as u64) as usize].clone();
    for _ in 0..2000 {
        let n = (rng(&mut seed) % 3) as usize;
        let a: Vec<Value> = (0..n).map(|_| pick(&mut seed)).collect();
        let mut b = a.clone();
        if let Some(last) = b.last_mut() {
            *last = pick(&mut seed);
        } else {
            b.push(pick(&mut seed));
        }
        pairs.push((json!(a), json!(b)));
    }
    let input: Vec<Value> = pairs.iter().map(|(a, b)| json!([a, b])).collect();
    let Some(theirs) = common::python_json(PYTHON, &input) else {
        return;
    };
    assert_eq!(theirs.len(), pairs.len());
    let mut raised = 0;
    for ((a, b), want) in pairs.iter().zip(&theirs) {
        let lt = match py_lt_key(&PyKey::Val(a), &PyKey::Val(b), 100) {
            Ok(x) => json!(x),
            Err(e @ CompareError::Unorderable(..)) => {
                raised += 1;
                json!(e.to_string())
            }
            Err(e) => panic!("{a} < {b}: {e}"),
        };
        assert_eq!(&json!([py_eq(a, b), lt]), want, "{a} ==, < {b}");
    }
    assert!(
        raised > 100,
        "only {raised} pairs raised: the types should often not order"
    );
}
