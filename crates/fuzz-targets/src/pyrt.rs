//! `pyrt`: Python semantics over any text: `ast.literal_eval` (and `repr`, `str`,
//! `json.dumps`, `==`, `sorted` of what it gives), `float()`, `html.unescape`.

use canvas_pyrt::{
    BigInts, DictKeys, LiteralOptions, PyKey, html_unescape, literal_eval, literal_eval_with,
    parse_py_float, py_eq, py_float, py_format_f6, py_format_g, py_json, py_lt_key, py_repr,
    py_repr_str, py_str, py_type, sorted_order, truthy,
};
use serde_json::Value;

/// Python's own recursion limit for comparisons, as RAGFlow meets it.
const COMPARE_DEPTH: usize = 1000;

/// A text as Python source for `literal_eval` and as a `float()` argument; what comes
/// out goes back in (`repr` round-trips through `literal_eval`).
pub fn pyrt(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    for big_ints in [BigInts::Reject, BigInts::Float] {
        for dict_keys in [DictKeys::PythonEqual, DictKeys::SameSpelling] {
            let opts = LiteralOptions {
                big_ints,
                dict_keys,
            };
            if let Ok(v) = literal_eval_with(text, &opts) {
                value(&v, &opts);
            }
        }
    }

    // Any text is a Python string whose repr reads back as itself.
    assert_eq!(
        literal_eval(&py_repr_str(text)),
        Ok(Value::String(text.to_string())),
        "repr of {text:?}"
    );

    if let Some(f) = parse_py_float(text) {
        let _ = (py_format_g(f), py_format_f6(f));
        if !f.is_nan() {
            assert_eq!(parse_py_float(&py_float(f)), Some(f), "float {text:?}");
        }
    }
    let _ = html_unescape(text);
}

/// What `literal_eval` gives: every view of it agrees with it.
fn value(v: &Value, opts: &LiteralOptions) {
    let repr = py_repr(v);
    // Keys: `repr` writes them as strings, which stay one key each either way.
    assert_eq!(
        literal_eval_with(&repr, opts).as_ref(),
        Ok(v),
        "literal_eval(repr(v)) == v for {repr}"
    );
    let _ = (py_str(v), py_type(v), truthy(v));
    assert!(py_eq(v, v), "v == v for {repr}");
    // JSON deeper than serde_json's limit is refused on reading; anything else reads back.
    if let Ok(back) = serde_json::from_str::<Value>(&py_json(v)) {
        assert_eq!(&back, v, "json.loads(json.dumps(v)) == v");
    }
    if let Value::Array(items) = v {
        let lt = |i: usize, j: usize| {
            py_lt_key(
                &PyKey::Val(&items[i]),
                &PyKey::Val(&items[j]),
                COMPARE_DEPTH,
            )
        };
        for reverse in [false, true] {
            if let Ok(order) = sorted_order(items.len(), reverse, lt) {
                let mut seen = order.clone();
                seen.sort_unstable();
                assert!(seen.iter().copied().eq(0..items.len()), "a permutation");
            }
        }
    }
}
