//! Form values shared by Begin and UserFillUp (`engine.md` §6.3 step 4).

use serde_json::Value;

use canvas_engine::NodeCx;
use canvas_pyrt::Object;

/// Store supplied answers as both outputs and input values of the component.
pub fn store_answers(cx: &NodeCx<'_>, supplied: &Object) {
    for (k, v) in supplied {
        let value = resolve_input_value(v);
        cx.set_output(k, value.clone());
        cx.set_input(k, value);
    }
}

/// RAGFlow's `_resolve_input_value`: a supplied field (API shape `{value, type?, ...}`
/// or a bare value) → the value the component stores.
pub fn resolve_input_value(v: &Value) -> Value {
    let Value::Object(o) = v else {
        return v.clone();
    };
    let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
    let value = o.get("value").cloned().unwrap_or(Value::Null);
    if ty.to_ascii_lowercase().contains("file") {
        let optional = o.get("optional").and_then(Value::as_bool).unwrap_or(false);
        if optional && value.is_null() {
            return Value::Null;
        }
        // A CLI has no upload service: files are given as paths (or lists of them).
        return match value {
            Value::Array(_) => value,
            Value::Null => Value::Array(Vec::new()),
            other => Value::Array(vec![other]),
        };
    }
    if ty == "object" {
        if let Value::String(s) = &value {
            if !s.trim().is_empty() {
                return serde_json::from_str(s).unwrap_or(value);
            }
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_like_ragflow() {
        assert_eq!(
            resolve_input_value(&json!({"type": "object", "value": "[\"a\",\"b\"]"})),
            json!(["a", "b"])
        );
        assert_eq!(
            resolve_input_value(&json!({"type": "object", "value": "not json"})),
            json!("not json")
        );
        assert_eq!(resolve_input_value(&json!({"type": "line"})), Value::Null);
        assert_eq!(resolve_input_value(&json!(7)), json!(7));
        assert_eq!(
            resolve_input_value(&json!({"type": "file", "optional": true})),
            Value::Null
        );
    }
}
