//! CodeExec's output contract (RAGFlow's `build_code_exec_contract`): exactly one
//! business output, whose declared type (`String`, `Number`, `Boolean`, `Object`,
//! `Null`, `Any`, `Array<T>`) `main()`'s value must have; the value's actual type; and
//! its canonical text (`content`).

use serde_json::Value;

use canvas_pyrt::{Object, py_json, py_str};

/// Output names CodeExec sets itself; never the business output.
pub const SYSTEM_OUTPUT_KEYS: &[&str] = &[
    "content",
    "actual_type",
    "attachments",
    "_ERROR",
    "_ARTIFACTS",
    "_ATTACHMENT_CONTENT",
    "raw_result",
    "_created_time",
    "_elapsed_time",
];

/// A broken contract; the text is RAGFlow's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ContractError(pub String);

/// A value that satisfies the contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    /// The business output's name.
    pub business_output: String,
    /// Its value.
    pub value: Value,
    /// The value's type (`Number`, `Array<String>`, ...).
    pub actual_type: String,
    /// The value as text.
    pub content: String,
}

/// True for a name CodeExec sets itself.
pub fn is_system_output(name: &str) -> bool {
    SYSTEM_OUTPUT_KEYS.contains(&name)
}

fn check_business_name(name: &str) -> Result<(), ContractError> {
    if name.trim().is_empty() {
        return Err(ContractError(
            "CodeExec business output name must not be empty".into(),
        ));
    }
    if is_system_output(name) {
        return Err(ContractError(format!(
            "CodeExec reserved output name is not allowed: {name}"
        )));
    }
    if name.contains('.') {
        return Err(ContractError(format!(
            "CodeExec business output name must not contain '.': {name}"
        )));
    }
    Ok(())
}

/// The one business output of the declared `outputs`, with its declaration.
pub fn select_business_output(outputs: &Object) -> Result<(String, Value), ContractError> {
    if outputs.len() == 1 {
        let (name, decl) = outputs.iter().next().ok_or_else(|| {
            ContractError(
                "CodeExec contract must contain exactly one business output, got 0".into(),
            )
        })?;
        check_business_name(name)?;
        return Ok((name.clone(), decl.clone()));
    }
    let business: Vec<(&String, &Value)> = outputs
        .iter()
        .filter(|(k, _)| !is_system_output(k))
        .collect();
    if business.len() != 1 {
        return Err(ContractError(format!(
            "CodeExec contract must contain exactly one business output, got {}",
            business.len()
        )));
    }
    let (name, decl) = business[0];
    check_business_name(name)?;
    Ok((name.clone(), decl.clone()))
}

/// The type name of a value (`Null`, `Boolean`, `Number`, `String`, `Object`,
/// `Array<T>`; `Array<Any>` when empty or mixed).
pub fn infer_actual_type(v: &Value) -> String {
    match v {
        Value::Null => "Null".into(),
        Value::Bool(_) => "Boolean".into(),
        Value::Number(_) => "Number".into(),
        Value::String(_) => "String".into(),
        Value::Object(_) => "Object".into(),
        Value::Array(items) => {
            let mut kinds: Vec<String> = items.iter().map(infer_actual_type).collect();
            kinds.sort();
            kinds.dedup();
            match kinds.as_slice() {
                [one] => format!("Array<{one}>"),
                _ => "Array<Any>".into(),
            }
        }
    }
}

/// The value as `content`: `""` for null, strings as they are, objects and arrays as
/// `json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`, others as Python `str()`.
pub fn render_canonical_content(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => {
            let mut out = String::new();
            write_indented(v, 0, &mut out);
            out
        }
        other => py_str(other),
    }
}

/// `json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)`.
fn write_indented(v: &Value, level: usize, out: &mut String) {
    let pad = |n: usize| "  ".repeat(n);
    match v {
        Value::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&pad(level + 1));
                write_indented(x, level + 1, out);
            }
            out.push('\n');
            out.push_str(&pad(level));
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("{\n");
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&pad(level + 1));
                out.push_str(&py_json(&Value::String(k.clone())));
                out.push_str(": ");
                write_indented(&map[k], level + 1, out);
            }
            out.push('\n');
            out.push_str(&pad(level));
            out.push('}');
        }
        other => out.push_str(&py_json(other)),
    }
}

/// RAGFlow's `_normalize_expected_type`: simple names in any case, `Array<T>` inside.
fn normalize_expected_type(expected: &str) -> Result<String, ContractError> {
    let etype = expected.trim();
    let low = etype.to_ascii_lowercase();
    let simple = match low.as_str() {
        "string" => Some("String"),
        "number" => Some("Number"),
        "boolean" => Some("Boolean"),
        "object" => Some("Object"),
        "null" => Some("Null"),
        "any" => Some("Any"),
        _ => None,
    };
    if let Some(s) = simple {
        return Ok(s.into());
    }
    if low.starts_with("array<") && low.ends_with('>') {
        let start = etype.find('<').map(|i| i + 1).unwrap_or(0);
        let inner = etype[start..etype.len() - 1].trim();
        if inner.is_empty() {
            return Err(ContractError(format!(
                "Unsupported expected type: {expected}"
            )));
        }
        return Ok(format!("Array<{}>", normalize_expected_type(inner)?));
    }
    Ok(etype.to_string())
}

/// RAGFlow's `_validate_expected_type`.
fn validate_expected_type(expected: &str, v: &Value, path: &str) -> Result<(), ContractError> {
    let etype = normalize_expected_type(expected)?;
    if etype.is_empty() || etype.eq_ignore_ascii_case("any") {
        return Ok(());
    }
    let mismatch = || {
        ContractError(format!(
            "CodeExec contract mismatch at {}: expected type {etype}, got {}",
            if path.is_empty() { "value" } else { path },
            infer_actual_type(v)
        ))
    };
    if let Some(inner) = etype
        .strip_prefix("Array<")
        .and_then(|s| s.strip_suffix('>'))
    {
        let Value::Array(items) = v else {
            return Err(mismatch());
        };
        for (i, item) in items.iter().enumerate() {
            let child = format!("{path}[{i}]");
            validate_expected_type(inner.trim(), item, &child)?;
        }
        return Ok(());
    }
    let valid = match etype.as_str() {
        "String" => v.is_string(),
        "Number" => v.is_number(),
        "Boolean" => v.is_boolean(),
        "Object" => v.is_object(),
        "Null" => v.is_null(),
        _ => {
            return Err(ContractError(format!(
                "Unsupported expected type: {expected}"
            )));
        }
    };
    if valid { Ok(()) } else { Err(mismatch()) }
}

/// Check `raw` against the declared `outputs` and describe it.
pub fn build_contract(outputs: &Object, raw: &Value) -> Result<Contract, ContractError> {
    let (name, decl) = select_business_output(outputs)?;
    let expected = match &decl {
        Value::Object(o) => o
            .get("type")
            .filter(|t| canvas_pyrt::truthy(t))
            .map(py_str)
            .unwrap_or_default(),
        _ => String::new(),
    };
    validate_expected_type(&expected, raw, "")?;
    Ok(Contract {
        business_output: name,
        value: raw.clone(),
        actual_type: infer_actual_type(raw),
        content: render_canonical_content(raw),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn outputs(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    fn check(ty: &str, v: Value) -> Result<Contract, ContractError> {
        build_contract(&outputs(json!({"result": {"type": ty}})), &v)
    }

    #[test]
    fn declared_types_accept_matching_values() {
        assert_eq!(check("Number", json!(42)).unwrap().content, "42");
        assert_eq!(check("number", json!(1.5)).unwrap().actual_type, "Number");
        assert!(check("String", json!("x")).is_ok());
        assert!(check("Boolean", json!(false)).is_ok());
        assert!(check("Object", json!({})).is_ok());
        assert!(check("Null", Value::Null).is_ok());
        assert!(check("Any", json!([1, "a"])).is_ok());
        assert!(check("", json!(3)).is_ok());
        assert!(check("array<string>", json!(["a", "b"])).is_ok());
        assert!(check("Array<Array<Number>>", json!([[1], [2, 3]])).is_ok());
        assert!(check("Array<Any>", json!([1, "x"])).is_ok());
    }

    #[test]
    fn mismatches_say_where_and_what() {
        let e = check("Number", json!("42")).unwrap_err();
        assert_eq!(
            e.0,
            "CodeExec contract mismatch at value: expected type Number, got String"
        );
        let e = check("Array<Number>", json!([1, true])).unwrap_err();
        assert_eq!(
            e.0,
            "CodeExec contract mismatch at [1]: expected type Number, got Boolean"
        );
        let e = check("Boolean", json!(1)).unwrap_err();
        assert!(e.0.ends_with("expected type Boolean, got Number"), "{e}");
        let e = check("Object", json!([1])).unwrap_err();
        assert!(e.0.ends_with("got Array<Number>"), "{e}");
        assert_eq!(
            check("integer", json!(1)).unwrap_err().0,
            "Unsupported expected type: integer"
        );
        assert_eq!(
            check("Array<>", json!([])).unwrap_err().0,
            "Unsupported expected type: Array<>"
        );
    }

    #[test]
    fn exactly_one_business_output() {
        let two = outputs(json!({"a": {"type": "Any"}, "b": {"type": "Any"}}));
        assert_eq!(
            build_contract(&two, &json!(1)).unwrap_err().0,
            "CodeExec contract must contain exactly one business output, got 2"
        );
        let with_system = outputs(json!({"result": {"type": "object"}, "attachments": {}}));
        assert_eq!(select_business_output(&with_system).unwrap().0, "result");
        let reserved = outputs(json!({"content": {"type": "String"}}));
        assert_eq!(
            build_contract(&reserved, &json!("x")).unwrap_err().0,
            "CodeExec reserved output name is not allowed: content"
        );
        let dotted = outputs(json!({"a.b": {}}));
        assert!(build_contract(&dotted, &json!(1)).is_err());
        assert!(build_contract(&Object::new(), &json!(1)).is_err());
    }

    #[test]
    fn actual_types() {
        assert_eq!(infer_actual_type(&json!([])), "Array<Any>");
        assert_eq!(infer_actual_type(&json!([1, 2.5])), "Array<Number>");
        assert_eq!(infer_actual_type(&json!([1, "a"])), "Array<Any>");
        assert_eq!(
            infer_actual_type(&json!([[1], [2]])),
            "Array<Array<Number>>"
        );
        assert_eq!(infer_actual_type(&Value::Null), "Null");
    }

    #[test]
    fn canonical_content_is_pythons_indented_sorted_json() {
        assert_eq!(
            render_canonical_content(&json!({"b": [1, {"z": "é", "a": null}], "a": {}, "c": []})),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    {\n      \"a\": null,\n      \"z\": \"é\"\n    }\n  ],\n  \"c\": []\n}"
        );
        assert_eq!(render_canonical_content(&json!(true)), "True");
        assert_eq!(render_canonical_content(&json!(2.0)), "2.0");
        assert_eq!(render_canonical_content(&Value::Null), "");
        assert_eq!(render_canonical_content(&json!("x")), "x");
    }
}
