//! `canvas_pyrt::py_repr_str` against CPython's `repr` for every character outside
//! ASCII, and for mixed strings around the quotes and escapes.
//!
//! Characters CPython's Unicode database has not assigned yet are left out: they are
//! escaped by a Python whose database is older than ours, and printed by one that
//! knows them (docs/differences.md). Needs `python3`; without it the test fails under
//! `CI=true` and is skipped otherwise.

mod common;

use canvas_pyrt::py_repr_str;

/// Python side: reads JSON strings, one a line, and prints each one's `repr` as a JSON
/// line; the first line it prints lists the code points its database leaves
/// unassigned.
const PYTHON: &str = r#"
import json, sys, unicodedata
unassigned = [c for c in range(0x80, 0x110000)
              if unicodedata.category(chr(c)) == "Cn"]
print(json.dumps(unassigned))
for line in sys.stdin:
    print(json.dumps(repr(json.loads(line))))
"#;

/// Mixed strings: quotes, escapes and non-ASCII text side by side.
const MIXED: [&str; 8] = [
    "it's \u{a0}",
    "say \"hi\"\u{2028}",
    "it's \"both\"\u{200b}",
    "tab\there\u{85}",
    "日本語\u{3000}テキスト",
    "\u{feff}bom",
    "emoji 😀 and \u{e0001}",
    "\u{7f}\u{80}\u{9f}\u{a0}\u{a1}",
];

/// Every scalar value from U+0080 on that is not a surrogate.
fn non_ascii() -> impl Iterator<Item = char> {
    (0x80u32..0x11_0000).filter_map(char::from_u32)
}

#[test]
fn repr_matches_cpython_for_every_character() {
    // Every character alone, then the mixed strings.
    let singles: Vec<String> = non_ascii().map(String::from).collect();
    let mut cases: Vec<&str> = singles.iter().map(String::as_str).collect();
    cases.extend(MIXED);
    let input: Vec<serde_json::Value> = cases.iter().map(|s| serde_json::json!(s)).collect();
    let Some(lines) = common::python_json(PYTHON, &input) else {
        return;
    };
    let (first, theirs) = lines.split_first().expect("the unassigned list");
    let unassigned: Vec<u32> =
        serde_json::from_value(first.clone()).expect("a list of code points");
    assert!(
        unassigned.contains(&0x378) && !unassigned.contains(&0xa0),
        "Python's database lists U+0378 as unassigned and U+00A0 as assigned"
    );
    assert_eq!(theirs.len(), cases.len());

    let known = |c: char| unassigned.binary_search(&u32::from(c)).is_err();
    let mut compared = 0;
    for (s, want) in cases.iter().zip(theirs) {
        if !s.chars().all(known) {
            continue;
        }
        assert_eq!(
            Some(py_repr_str(s).as_str()),
            want.as_str(),
            "repr of {s:?}"
        );
        compared += 1;
    }
    assert!(
        compared > 250_000,
        "only {compared} strings were compared: most characters should be assigned"
    );
}

/// Every character's repr, escaped or not, reads back as the character.
#[test]
fn every_characters_repr_reads_back_through_literal_eval() {
    for c in non_ascii() {
        let s = c.to_string();
        assert_eq!(
            canvas_pyrt::literal_eval(&py_repr_str(&s)),
            Ok(serde_json::Value::String(s)),
            "U+{:04X}",
            u32::from(c)
        );
    }
}
