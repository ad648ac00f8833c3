//! `canvas_pyrt::literal_eval` against CPython's `ast.literal_eval` on seeded random
//! sources built from the tokens it meets: numbers in every base and form, strings
//! with prefixes, escapes and implicit concatenation, containers, signs, names, white
//! space, line continuations and comments. Named escapes (`\N{...}`) are not read
//! (docs/differences.md) and are left out.
//!
//! What CPython returns is turned into JSON as ours is (tuples as lists, keys as
//! `json.dumps` writes them); a value with no JSON form (bytes, sets, complex numbers,
//! infinities, ints beyond 64 bits, tuple keys) is "no JSON form" on both sides.
//! Needs `python3`; without it the test fails under `CI=true` and is skipped otherwise.

mod common;

use canvas_pyrt::{LiteralError, literal_eval};
use serde_json::{Value, json};

/// Python side: one source a line; prints `{"ok": value}`, `"invalid"` where
/// `literal_eval` raises, or `"nojson"`.
const PYTHON: &str = r#"
import ast, json, sys

class NoJson(Exception):
    pass

def plain(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        if not -2**63 <= v < 2**64:
            raise NoJson
        return v
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise NoJson
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if isinstance(k, (tuple, bytes, complex, frozenset)):
                raise NoJson
            key = plain(k)
            out[key if isinstance(key, str) else json.dumps(key)] = plain(x)
        return out
    raise NoJson

for line in sys.stdin:
    src = json.loads(line)
    try:
        v = ast.literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        print(json.dumps("invalid"))
        continue
    try:
        print(json.dumps({"ok": plain(v)}))
    except NoJson:
        print(json.dumps("nojson"))
"#;

/// A deterministic xorshift, so every run checks the same cases.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// The tokens sources are made of.
const TOKENS: [&str; 60] = [
    "1",
    "0",
    "-",
    "+",
    "1.5",
    "1e3",
    "1E-2",
    ".5",
    "5.",
    "0x1F",
    "0o17",
    "0b101",
    "1_000",
    "1j",
    "007",
    "00",
    "9999999999999999999999",
    "1__0",
    "0_7",
    "'a'",
    "\"b\"",
    "'''c'''",
    "r'\\n'",
    "b'x'",
    "u'y'",
    "f'z'",
    "'\\x41\\u00e9\\U0001F600'",
    "'\\q'",
    "'\\777'",
    "'a' 'b'",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    ",",
    ":",
    " ",
    "\t",
    "\n",
    "\\\n",
    "# c\n",
    "None",
    "True",
    "False",
    "nan",
    "inf",
    "set()",
    "()",
    "(1,)",
    "[1, 2]",
    "{1: 2}",
    "{'k': 1, 'k': 2}",
    "{1, 2}",
    "{1: 'a', True: 'b'}",
    "-1.5",
    "+ 2",
    "- -3",
    "1 + 2j",
];

fn sources() -> Vec<String> {
    let mut seed = 0x1157_e7a1_5eed_0007_u64;
    let mut out: Vec<String> = TOKENS.iter().map(|t| t.to_string()).collect();
    for _ in 0..20_000 {
        let n = 1 + rng(&mut seed) % 7;
        out.push(
            (0..n)
                .map(|_| TOKENS[(rng(&mut seed) % TOKENS.len() as u64) as usize])
                .collect(),
        );
    }
    out
}

#[test]
fn literal_eval_matches_cpython() {
    let sources = sources();
    let input: Vec<Value> = sources.iter().map(|s| json!(s)).collect();
    let Some(theirs) = common::python_json(PYTHON, &input) else {
        return;
    };
    assert_eq!(theirs.len(), sources.len());
    let mut valid = 0;
    for (src, want) in sources.iter().zip(&theirs) {
        let ours = match literal_eval(src) {
            Ok(v) => {
                valid += 1;
                json!({ "ok": v })
            }
            Err(LiteralError::Invalid) => json!("invalid"),
            Err(LiteralError::NoJsonForm) => json!("nojson"),
        };
        assert_eq!(&ours, want, "literal_eval({src:?})");
    }
    assert!(valid > 500, "only {valid} sources were literals");
}
