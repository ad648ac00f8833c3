//! `canvas_pyrt`'s float formatting and parsing against CPython: `repr(x)`,
//! `format(x, "g")` and `format(x, ".6f")` for seeded random doubles and edge values,
//! and `float(s)` and `int(s)` for seeded random strings around what they accept.
//!
//! Needs `python3`; without it the test fails under `CI=true` and is skipped otherwise.

mod common;

use canvas_pyrt::{parse_py_float, parse_py_int, py_float, py_format_f6, py_format_g};
use serde_json::{Value, json};

/// Python side: one JSON line in, one out. `{"f": bits}` gives the double's three
/// spellings; `{"s": text}` gives `float(text)`'s bits and `int(text)`, each null where
/// it raises.
const PYTHON: &str = r#"
import json, struct, sys
for line in sys.stdin:
    case = json.loads(line)
    if "f" in case:
        x = struct.unpack("<d", struct.pack("<Q", case["f"]))[0]
        print(json.dumps([repr(x), format(x, "g"), format(x, ".6f")]))
    else:
        try:
            y = float(case["s"])
            y = struct.unpack("<Q", struct.pack("<d", y))[0]
        except ValueError:
            y = None
        try:
            i = int(case["s"])
        except ValueError:
            i = None
        print(json.dumps([y, i]))
"#;

/// A deterministic xorshift, so every run checks the same cases.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Doubles: edge values, random bit patterns (every exponent), and short decimals
/// of the sizes canvases hold (where rounding ties and the format switches sit).
fn doubles() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        0.1,
        0.5,
        2.5,
        1e16,
        9_999_999_999_999_998.0,
        1e-4,
        9.999_999_999_999_999e-5,
        1e-5,
        999_999.5,
        1e6,
        0.000_123_456_5,
        f64::MIN_POSITIVE,
        f64::MAX,
        5e-324,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let mut seed = 0xf10a_7c0d_e5ee_d001_u64;
    for _ in 0..4000 {
        v.push(f64::from_bits(rng(&mut seed)));
    }
    for _ in 0..4000 {
        let digits = rng(&mut seed) % 10_000_000;
        let scale = 10f64.powi((rng(&mut seed) % 24) as i32 - 12);
        let sign = if rng(&mut seed) % 2 == 0 { 1.0 } else { -1.0 };
        v.push(sign * digits as f64 * scale);
    }
    v
}

/// Strings: numbers as people and programs write them, with signs, separators, white
/// space, exponents, special words and the mistakes around them.
fn strings() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        " ",
        "1",
        " 1.5 ",
        "+2",
        "-3.",
        ".5",
        ".",
        "-.5e3",
        "1e",
        "1e+",
        "e5",
        "1.e5",
        "1_000",
        "1__0",
        "_1",
        "1_",
        "1_.5",
        "1._5",
        "1e1_0",
        "0x10",
        "inf",
        "-Infinity",
        "+nan",
        "-NaN",
        "infin",
        "nan1",
        "1 2",
        "1e400",
        "-1e400",
        "1e-400",
        "00012",
        "\t\n 7 \r",
        "0.1e-3",
        "1,5",
        "١٢٣",
        "１２３.５",
        "\u{a0}4\u{2003}",
        "\u{1c}5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let parts = [
        "0", "1", "7", "9", "42", ".", "e", "E", "+", "-", "_", " ", "inf", "nan", "x", "5", "١",
        "５", "\u{3000}", "\u{1c}", "\t", "ity", "\u{7f}",
    ];
    let mut seed = 0x5eed_f10a_7000_0001_u64;
    for _ in 0..6000 {
        let n = 1 + rng(&mut seed) % 6;
        let s: String = (0..n)
            .map(|_| parts[(rng(&mut seed) % parts.len() as u64) as usize])
            .collect();
        v.push(s);
    }
    v
}

#[test]
fn floats_format_and_parse_as_cpython_does() {
    let doubles = doubles();
    let strings = strings();
    let input: Vec<Value> = doubles
        .iter()
        .map(|f| json!({"f": f.to_bits()}))
        .chain(strings.iter().map(|s| json!({"s": s})))
        .collect();
    let Some(theirs) = common::python_json(PYTHON, &input) else {
        return;
    };
    assert_eq!(theirs.len(), doubles.len() + strings.len());
    let (formats, parses) = theirs.split_at(doubles.len());
    for (f, want) in doubles.iter().zip(formats) {
        let ours = json!([py_float(*f), py_format_g(*f), py_format_f6(*f)]);
        assert_eq!(&ours, want, "repr, g and .6f of {f:e} ({:#x})", f.to_bits());
    }
    for (s, want) in strings.iter().zip(parses) {
        // NaN's sign and payload are not compared: Python's float("-nan") is a NaN too.
        let ours = parse_py_float(s).map(|y| if y.is_nan() { f64::NAN } else { y });
        let theirs = want[0]
            .as_u64()
            .map(f64::from_bits)
            .map(|y| if y.is_nan() { f64::NAN } else { y });
        assert_eq!(
            ours.map(f64::to_bits),
            theirs.map(f64::to_bits),
            "float({s:?})"
        );
        assert_eq!(
            parse_py_int(s).and_then(|i| i64::try_from(i).ok()),
            want[1].as_i64(),
            "int({s:?})"
        );
    }
}
