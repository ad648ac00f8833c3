//! Python truthiness and number-ness of JSON values.

use serde_json::Value;

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

/// True for JSON numbers (Python int/float) and booleans (a Python bool is an int).
pub fn is_number_like(v: &Value) -> bool {
    matches!(v, Value::Number(_) | Value::Bool(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn truthiness() {
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
    }
}
