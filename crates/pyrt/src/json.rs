//! Python `json.dumps(..., ensure_ascii=False)`.

use serde_json::Value;

use crate::float::write_py_number;

/// `json.dumps(v, ensure_ascii=False)`: separators `", "` and `": "`.
pub fn py_json(v: &Value) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

fn write_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_py_number(n, out),
        Value::String(s) => write_json_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(x, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json_str(k, out);
                out.push_str(": ");
                write_json(x, out);
            }
            out.push('}');
        }
    }
}

fn write_json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
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
