//! Python semantics over JSON values.
//!
//! RAGFlow's engine is Python: its observable text comes from `str()`, `repr()` and
//! `json.dumps(..., ensure_ascii=False)`, and its decisions from Python truthiness and
//! `float()`. Every component renders values through these helpers so the bytes match.

use serde_json::{Map, Number, Value};

/// A JSON object with insertion order kept (Python dicts keep it too).
pub type Object = Map<String, Value>;

/// Python truthiness of a JSON value (`""`, `0`, `0.0`, `False`, `[]`, `{}` and `None` are
/// false): RAGFlow tests most params with a bare `if x:`.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Python `repr(float)`: shortest round-trip digits, exponent form outside 1e-4..1e16.
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // `{:e}` gives the shortest round-trip mantissa, e.g. "1.5e20" or "-2.5e-5".
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let s = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            let (a, b) = digits.split_at(point as usize);
            format!("{a}.{b}")
        };
        format!("{sign}{s}")
    } else {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    }
}

fn py_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        py_float(n.as_f64().unwrap_or(0.0))
    }
}

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
        Value::Number(n) => out.push_str(&py_number(n)),
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

/// Python `str(v)`: strings as they are, `None`, `True`, `1.0`, `['a', 1]`, `{'k': 1}`.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python `repr(v)`.
pub fn py_repr(v: &Value) -> String {
    let mut out = String::new();
    write_repr(v, &mut out);
    out
}

fn write_repr(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Number(n) => out.push_str(&py_number(n)),
        Value::String(s) => out.push_str(&py_repr_str(s)),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(x, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&py_repr_str(k));
                out.push_str(": ");
                write_repr(x, out);
            }
            out.push('}');
        }
    }
}

/// Python `repr(str)`: single quotes unless the text has `'` and no `"`.
pub fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python `float(x)` for a JSON value: numbers, bools, and strings Python would parse
/// (surrounding white space, `_` separators, `inf`/`nan`, exponents).
pub fn py_float_of(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_py_float(s),
        _ => None,
    }
}

/// Parse a string the way Python's `float()` does; `None` where Python raises.
pub fn parse_py_float(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    let (sign, body) = match lower.strip_prefix('-') {
        Some(b) => (-1.0, b),
        None => (1.0, lower.strip_prefix('+').unwrap_or(&lower)),
    };
    match body {
        "inf" | "infinity" => return Some(sign * f64::INFINITY),
        "nan" => return Some(f64::NAN),
        _ => {}
    }
    // Underscores are allowed only between digits.
    if body.contains('_') {
        let b = body.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            if c == b'_' {
                let ok = i > 0
                    && i + 1 < b.len()
                    && b[i - 1].is_ascii_digit()
                    && b[i + 1].is_ascii_digit();
                if !ok {
                    return None;
                }
            }
        }
    }
    let cleaned: String = body.chars().filter(|&c| c != '_').collect();
    if !cleaned
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | '+' | '-'))
    {
        return None;
    }
    cleaned.parse::<f64>().ok().map(|f| sign * f)
}

/// True for JSON numbers (Python int/float) and booleans (a Python bool is an int).
pub fn is_number_like(v: &Value) -> bool {
    matches!(v, Value::Number(_) | Value::Bool(_))
}

/// A JSON value from an `f64`, as an integer when Python would keep an int.
pub fn float_value(f: f64) -> Value {
    Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// Python type name as `str(type(v))` prints it.
pub fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<class 'NoneType'>",
        Value::Bool(_) => "<class 'bool'>",
        Value::Number(n) if n.is_f64() => "<class 'float'>",
        Value::Number(_) => "<class 'int'>",
        Value::String(_) => "<class 'str'>",
        Value::Array(_) => "<class 'list'>",
        Value::Object(_) => "<class 'dict'>",
    }
}

/// Python's type name, as `type(v).__name__` gives it (`int`, `str`, `NoneType`, ...).
pub fn py_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Python `==` between JSON values: numbers compare by value (`5 == 5.0`,
/// `True == 1`), everything else structurally.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_) | Value::Bool(_), Value::Number(_) | Value::Bool(_)) => match (a, b) {
            (Value::Bool(x), Value::Bool(y)) => x == y,
            _ => match (py_float_of(a), py_float_of(b)) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| py_eq(p, q)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_python() {
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(2.5), "2.5");
        assert_eq!(py_float(0.88), "0.88");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(1.5e20), "1.5e+20");
        assert_eq!(py_float(123456789012345.0), "123456789012345.0");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(0.00001), "1e-05");
        assert_eq!(py_float(-2.5e-7), "-2.5e-07");
        assert_eq!(py_float(11.0), "11.0");
        assert_eq!(py_float(-0.0), "-0.0");
    }

    #[test]
    fn json_dumps_matches_python() {
        let v = json!({"a": {"b": [10, 20]}, "s": "é\"\n", "f": 1.0, "t": true, "n": null});
        assert_eq!(
            py_json(&v),
            r#"{"a": {"b": [10, 20]}, "s": "é\"\n", "f": 1.0, "t": true, "n": null}"#
        );
        assert_eq!(py_json(&json!([1, "x", {"k": 2}])), r#"[1, "x", {"k": 2}]"#);
    }

    #[test]
    fn str_matches_python() {
        assert_eq!(py_str(&json!({"a": 1})), "{'a': 1}");
        assert_eq!(py_str(&json!(["a", 1])), "['a', 1]");
        assert_eq!(py_str(&json!(true)), "True");
        assert_eq!(py_str(&json!(1.0)), "1.0");
        assert_eq!(py_str(&Value::Null), "None");
        assert_eq!(py_str(&json!("it's")), "it's");
        assert_eq!(py_repr(&json!(["it's"])), "[\"it's\"]");
        assert_eq!(py_repr(&json!(["a\nb"])), "['a\\nb']");
    }

    #[test]
    fn python_float_parsing() {
        assert_eq!(parse_py_float(" 3 "), Some(3.0));
        assert_eq!(parse_py_float("1_000"), Some(1000.0));
        assert_eq!(parse_py_float("1e3"), Some(1000.0));
        assert_eq!(parse_py_float("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_py_float(""), None);
        assert_eq!(parse_py_float("abc"), None);
        assert_eq!(parse_py_float("1__0"), None);
        assert_eq!(parse_py_float("0x10"), None);
    }

    #[test]
    fn truthiness_and_equality() {
        for v in [
            json!(""),
            json!(0),
            json!(0.0),
            json!(false),
            json!([]),
            json!({}),
            Value::Null,
        ] {
            assert!(!truthy(&v), "{v} should be falsy");
        }
        assert!(truthy(&json!("0")));
        assert!(py_eq(&json!(5), &json!(5.0)));
        assert!(py_eq(&json!(true), &json!(1.0)));
        assert!(!py_eq(&json!("5"), &json!(5)));
    }
}
