//! Python `json.dumps(..., ensure_ascii=False)`.

use serde_json::Value;

use crate::float::write_py_number;

/// `json.dumps(v, ensure_ascii=False)`: separators `", "` and `": "`.
pub fn py_json(v: &Value) -> String {
    py_json_dumps(v, false, false)
}

/// `json.dumps(v, ensure_ascii=..., sort_keys=...)`, with the default separators.
pub fn py_json_dumps(v: &Value, ensure_ascii: bool, sort_keys: bool) -> String {
    let mut out = String::new();
    write_json(
        v,
        Dumps {
            ensure_ascii,
            sort_keys,
        },
        &mut out,
    );
    out
}

/// The options of `json.dumps` that change its text.
#[derive(Clone, Copy)]
struct Dumps {
    ensure_ascii: bool,
    sort_keys: bool,
}

fn write_json(v: &Value, how: Dumps, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_py_number(n, out),
        Value::String(s) => write_json_str(s, how, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(x, how, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            let mut members: Vec<(&String, &Value)> = o.iter().collect();
            if how.sort_keys {
                // Python orders str keys by code point, as UTF-8 bytes order.
                members.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (k, x)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json_str(k, how, out);
                out.push_str(": ");
                write_json(x, how, out);
            }
            out.push('}');
        }
    }
}

fn write_json_str(s: &str, how: Dumps, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        // ensure_ascii: everything outside ' '..'~' as \u escapes (UTF-16 pairs above
        // U+FFFF), as Python's ESCAPE_ASCII pattern says.
        if how.ensure_ascii
            && !(' '..='~').contains(&c)
            && !matches!(c, '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}')
        {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
            continue;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_dumps_matches_python() {
        let v = json!({"a": {"b": [10, 20]}, "s": "é\"\n", "f": 1.0, "t": true, "n": null});
        assert_eq!(
            py_json(&v),
            r#"{"a": {"b": [10, 20]}, "s": "é\"\n", "f": 1.0, "t": true, "n": null}"#
        );
        assert_eq!(py_json(&json!([1, "x", {"k": 2}])), r#"[1, "x", {"k": 2}]"#);
    }
}
