//! `-i KEY=VALUE` and `--inputs FILE` → the run's `inputs` in RAGFlow's API shape
//! (`{key: {value, type?}}`), typed by the fields the canvas declares.

use std::path::Path;

use serde_json::{Value, json};

use super::CliError;
use canvas_dsl::load::{Format, parse_value};
use canvas_pyrt::Object;

/// Build the run's inputs. `declared` maps field keys to their definitions (Begin's
/// `inputs`), used to type `-i` values; a file's values are used as given.
pub fn collect(
    file: Option<&Path>,
    pairs: &[String],
    declared: &Object,
) -> Result<Object, CliError> {
    let mut out = Object::new();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::invalid(format!(
                "{}: cannot read the inputs file: {e}",
                path.display()
            ))
        })?;
        let fmt = match path.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => Format::Yaml,
            Some("json") => Format::Json,
            _ => Format::Sniff,
        };
        let v = parse_value(&text, fmt)
            .map_err(|e| CliError::invalid(format!("{}: {e}", path.display())))?;
        let Value::Object(map) = v else {
            return Err(CliError::invalid(format!(
                "{}: the inputs file must map field keys to values",
                path.display()
            )));
        };
        for (k, v) in map {
            out.insert(k.clone(), api_shape(v, declared.get(&k)));
        }
    }
    for p in pairs {
        let Some((k, raw)) = p.split_once('=') else {
            return Err(CliError::invalid(format!("input {p:?} is not KEY=VALUE"))
                .hint("canvas run flow.json -i name=Ada"));
        };
        let k = k.trim();
        let value = typed(k, raw, declared.get(k))?;
        out.insert(k.to_string(), api_shape(value, declared.get(k)));
    }
    Ok(out)
}

/// Answers asked in the terminal (bare typed values) → `inputs` in API shape.
pub fn from_answers(answers: Object, declared: &Object) -> Object {
    answers
        .into_iter()
        .map(|(k, v)| {
            // Always wrapped: an object answer may itself have a `value` key.
            let wrapped = json!({ "value": v });
            let shaped = api_shape(wrapped, declared.get(&k));
            (k, shaped)
        })
        .collect()
}

/// Wrap a bare value as `{value}`; an object that already has `value` is kept. The
/// declared field type is added when missing.
fn api_shape(v: Value, decl: Option<&Value>) -> Value {
    let mut o = match v {
        Value::Object(o) if o.contains_key("value") => o,
        other => Object::from_iter([("value".to_string(), other)]),
    };
    if !o.contains_key("type") {
        if let Some(t) = decl.and_then(|d| d.get("type")).filter(|t| t.is_string()) {
            o.insert("type".into(), t.clone());
        }
    }
    Value::Object(o)
}

/// A `-i` value typed by its declared field type (JSON when it parses, else text, for
/// undeclared fields).
fn typed(key: &str, raw: &str, decl: Option<&Value>) -> Result<Value, CliError> {
    let ty = decl
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    let bad = |what: &str| CliError::invalid(format!("input {key:?} expects {what}, got {raw:?}"));
    Ok(match ty.as_str() {
        "line" | "paragraph" | "options" | "text" | "string" | "object" => json!(raw),
        t if t.contains("file") => json!(raw),
        "integer" | "int" => json!(raw.trim().parse::<i64>().map_err(|_| bad("an integer"))?),
        "float" | "number" => {
            let f: f64 = raw.trim().parse().map_err(|_| bad("a number"))?;
            serde_json::Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| bad("a finite number"))?
        }
        "boolean" | "bool" => match raw.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" | "on" => json!(true),
            "false" | "no" | "0" | "off" => json!(false),
            _ => return Err(bad("true or false")),
        },
        _ => serde_json::from_str(raw).unwrap_or_else(|_| json!(raw)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_by_declared_fields() {
        let declared = json!({"name": {"type": "line"}, "age": {"type": "integer"}, "ok": {"type": "boolean"}});
        let declared = declared.as_object().unwrap();
        let pairs = [
            "name=123".to_string(),
            "age=36".into(),
            "ok=yes".into(),
            "extra=[1,2]".into(),
        ];
        let got = collect(None, &pairs, declared).unwrap();
        assert_eq!(got["name"], json!({"value": "123", "type": "line"}));
        assert_eq!(got["age"], json!({"value": 36, "type": "integer"}));
        assert_eq!(got["ok"], json!({"value": true, "type": "boolean"}));
        assert_eq!(got["extra"], json!({"value": [1, 2]}));
        assert!(collect(None, &["age=old".into()], declared).is_err());
        assert!(collect(None, &["novalue".into()], declared).is_err());
    }
}
