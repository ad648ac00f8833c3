//! Values as CPython writes and reads them, for seeded random JSON values: `repr(v)`,
//! `str(v)`, `json.dumps(v, ensure_ascii=False)`, `ast.literal_eval(repr(v))` and
//! `json.dumps(v, sort_keys=True)` (ASCII only, as Jinja2's `tojson` writes); and
//! `html.unescape` for seeded random texts around character references.
//!
//! Needs `python3`; without it the test fails under `CI=true` and is skipped otherwise.

mod common;

use canvas_pyrt::{html_unescape, literal_eval, py_json, py_json_dumps, py_repr, py_str};
use serde_json::{Map, Value, json};

/// Python side: `{"v": value}` gives the value's spellings and what `literal_eval`
/// reads back from its repr; `{"h": text}` gives `html.unescape(text)`.
const PYTHON: &str = r#"
import ast, html, json, sys
for line in sys.stdin:
    case = json.loads(line)
    if "v" in case:
        v = case["v"]
        back = ast.literal_eval(repr(v))
        print(json.dumps([repr(v), str(v), json.dumps(v, ensure_ascii=False), back,
                          json.dumps(v, ensure_ascii=True, sort_keys=True)]))
    else:
        print(json.dumps(html.unescape(case["h"])))
"#;

/// A deterministic xorshift, so every run checks the same cases.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Pieces of strings: quotes, escapes, controls, non-ASCII letters, spaces Python
/// escapes in a repr, and an emoji.
const PIECES: [&str; 16] = [
    "a", "Z", " ", "'", "\"", "\\", "\n", "\t", "\u{1}", "\u{7f}", "é", "日本", "\u{a0}",
    "\u{200b}", "😀", "{x}",
];

fn string(seed: &mut u64) -> String {
    let n = rng(seed) % 6;
    (0..n)
        .map(|_| PIECES[(rng(seed) % PIECES.len() as u64) as usize])
        .collect()
}

fn value(seed: &mut u64, depth: u32) -> Value {
    let pick = rng(seed) % if depth > 2 { 6 } else { 8 };
    match pick {
        0 => Value::Null,
        1 => json!(rng(seed) % 2 == 0),
        2 => json!((rng(seed) % 2_000_001) as i64 - 1_000_000),
        3 => {
            let f =
                ((rng(seed) % 2_000_000) as f64 - 1e6) * 10f64.powi((rng(seed) % 30) as i32 - 15);
            json!(f)
        }
        4 => json!(f64::from_bits(rng(seed) >> 2)),
        5 => json!(string(seed)),
        6 => Value::Array((0..rng(seed) % 4).map(|_| value(seed, depth + 1)).collect()),
        _ => {
            let mut m = Map::new();
            for _ in 0..rng(seed) % 4 {
                m.insert(string(seed), value(seed, depth + 1));
            }
            Value::Object(m)
        }
    }
}

/// Texts around character references: named ones with and without `;`, the longest
/// prefix rule, numeric ones in range and out of it, and broken ones.
fn html_texts(seed: &mut u64) -> Vec<String> {
    let parts = [
        "&amp;",
        "&amp",
        "&lt;",
        "&gt",
        "&notin;",
        "&notit;",
        "&copy",
        "&#65;",
        "&#x41;",
        "&#X4a",
        "&#0;",
        "&#128;",
        "&#x110000;",
        "&#xd800;",
        "&#9999999999;",
        "&#;",
        "&#x;",
        "&;",
        "&",
        "a",
        " ",
        "&nbsp;",
        "&NotANamedOne;",
        "&AMP;",
        "&quot",
        "&#1114111;",
        "&#150;",
        "\t",
        "&apos;",
    ];
    (0..3000)
        .map(|_| {
            let n = 1 + rng(seed) % 5;
            (0..n)
                .map(|_| parts[(rng(seed) % parts.len() as u64) as usize])
                .collect()
        })
        .collect()
}

#[test]
fn values_and_html_read_and_write_as_cpython_does() {
    let mut seed = 0x7a1c_0de5_5eed_0042_u64;
    let values: Vec<Value> = (0..3000).map(|_| value(&mut seed, 0)).collect();
    let htmls = html_texts(&mut seed);
    let input: Vec<Value> = values
        .iter()
        .map(|v| json!({ "v": v }))
        .chain(htmls.iter().map(|h| json!({ "h": h })))
        .collect();
    let Some(theirs) = common::python_json(PYTHON, &input) else {
        return;
    };
    assert_eq!(theirs.len(), values.len() + htmls.len());
    let (written, unescaped) = theirs.split_at(values.len());
    for (v, want) in values.iter().zip(written) {
        let repr = py_repr(v);
        let back = literal_eval(&repr).unwrap_or_else(|e| panic!("literal_eval({repr}): {e}"));
        let ours = json!([
            repr,
            py_str(v),
            py_json(v),
            back,
            py_json_dumps(v, true, true)
        ]);
        assert_eq!(&ours, want, "{v}");
    }
    for (h, want) in htmls.iter().zip(unescaped) {
        assert_eq!(
            Some(html_unescape(h).as_str()),
            want.as_str(),
            "html.unescape({h:?})"
        );
    }
}
