//! Python `==` between JSON values.

use serde_json::Value;

use crate::float::py_float_of;

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
    fn equality() {
        assert!(py_eq(&json!(5), &json!(5.0)));
        assert!(py_eq(&json!(true), &json!(1.0)));
        assert!(!py_eq(&json!("5"), &json!(5)));
    }
}
