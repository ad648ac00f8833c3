//! Python `str()`, `repr()` and type names of JSON values.

use serde_json::Value;

use crate::float::write_py_number;

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
        Value::Number(n) => write_py_number(n, out),
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

/// Python `str.isspace()` for one character (Unicode white space and the separators
/// `\x1c`..`\x1f`).
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python `str.strip()` without arguments.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn strip_matches_python() {
        assert_eq!(py_strip("\u{1c} a b\u{a0}\u{3000}\n"), "a b");
        assert_eq!(py_strip("\u{200b}x"), "\u{200b}x");
    }
}
