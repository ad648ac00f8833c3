//! Forms: when a field of a UserFillUp counts as answered (RAGFlow's
//! `Canvas._is_input_field_satisfied`, `engine.md` §6.1).

use serde_json::Value;

/// Whether a field's current value answers it (RAGFlow's `_is_input_field_satisfied`:
/// `optional` only matters for file fields).
pub fn field_satisfied(def: &Value, value: &Value) -> bool {
    let Some(d) = def.as_object() else {
        return !value.is_null();
    };
    let ty = d
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    if ty.contains("file") {
        let optional = d.get("optional").and_then(Value::as_bool).unwrap_or(false);
        let empty = match value {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            Value::String(s) => s.is_empty(),
            _ => false,
        };
        return (optional && value.is_null()) || !empty;
    }
    !value.is_null()
}
