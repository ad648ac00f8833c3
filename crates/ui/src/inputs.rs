//! Inputs given up front (`-i KEY=VALUE` values and `--inputs FILE` texts) → the run's
//! `inputs` in RAGFlow's API shape (`{key: {value, type?}}`), typed and checked by the
//! fields the canvas declares, as [`prompt`](crate::prompt) types answers asked on the
//! terminal. Pure: the CLI reads the files and prints the warnings.
//!
//! A `-i` value, and a bare value in an inputs file, must fit its field (an integer, one
//! of the options, ...). An entry already in RAGFlow's API shape (`{"value": ...,
//! "type": ...}`) is passed on as RAGFlow's API takes it, unchecked there too; the
//! caller is told when it does not fit.

use canvas_dsl::load::{DslError, Format, parse_value};
use canvas_pyrt::Object;
use serde_json::{Value, json};

use crate::prompt::{FieldKind, field_kind, option_text, pick_option};

/// A value that does not fit its field: what is wrong, and what to type instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Unfit {
    /// One line naming the input, what it expects and what it got.
    pub message: String,
    /// A `-i` the user could type instead, when there is one.
    pub hint: Option<String>,
}

/// Why an inputs file's text gives no inputs. Messages are lowercase fragments; the
/// caller prefixes the file name.
#[derive(Debug, thiserror::Error)]
pub enum InputsError {
    /// Neither JSON nor YAML (or nested too deeply).
    #[error("{0}")]
    Parse(#[from] DslError),
    /// Parsed, but not an object.
    #[error("the inputs file must map field keys to values")]
    NotAMap,
    /// A bare value that does not fit its field.
    #[error("{0}")]
    Unfit(Unfit),
}

/// The inputs of an inputs file's `text` (JSON, YAML, or sniffed), in API shape.
/// `declared` maps field keys to their definitions; values for undeclared keys are
/// taken as given. `unfit` hears about each entry in API shape whose value does not fit
/// its field (it is kept as given), in file order, before any error.
pub fn from_file_text(
    text: &str,
    format: Format,
    declared: &Object,
    unfit: &mut dyn FnMut(&Unfit),
) -> Result<Object, InputsError> {
    let Value::Object(map) = parse_value(text, format)? else {
        return Err(InputsError::NotAMap);
    };
    from_map(map, declared, unfit).map_err(InputsError::Unfit)
}

/// Values by key (an inputs file's, a dataset row's) in API shape: bare values typed
/// and checked by their fields (an error carries no hint: there is no `-i` to suggest);
/// `unfit` hears about each entry in API shape whose value does not fit, as in
/// [`from_file_text`].
pub fn from_map(
    map: Object,
    declared: &Object,
    unfit: &mut dyn FnMut(&Unfit),
) -> Result<Object, Unfit> {
    let mut out = Object::new();
    for (k, v) in map {
        let decl = declared.get(&k);
        let v = match v {
            Value::Object(o) if o.contains_key("value") => {
                let value = o.get("value").cloned().unwrap_or(Value::Null);
                if let Err(e) = checked(&k, value, decl) {
                    unfit(&e);
                }
                Value::Object(o)
            }
            bare => checked(&k, bare, decl).map_err(|e| Unfit {
                message: e.message,
                hint: None,
            })?,
        };
        out.insert(k, api_shape(v, decl));
    }
    Ok(out)
}

/// A `-i` value `raw` for `key`, in API shape: typed by its declared field (JSON when it
/// parses, else text, for an undeclared one).
pub fn from_pair(key: &str, raw: &str, declared: &Object) -> Result<Value, Unfit> {
    let decl = declared.get(key);
    Ok(api_shape(typed(key, raw, decl)?, decl))
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

/// The declared field type, lower-cased (empty when there is none).
fn field_type(decl: Option<&Value>) -> String {
    decl.and_then(|d| d.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The options of an options field (`None` for other fields, and for an options field
/// without a list, which takes any text as the terminal prompt does).
fn options_of(decl: Option<&Value>) -> Option<Vec<Value>> {
    match field_kind(decl?) {
        FieldKind::Options(list) => Some(list),
        _ => None,
    }
}

/// `"a", "b"`: the options as a user types them.
fn options_list(list: &[Value]) -> String {
    list.iter()
        .map(|o| format!("{:?}", option_text(o)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The error for a value `got` (as the user wrote it) that does not fit `key`.
fn unfit(key: &str, what: &str, got: &str) -> Unfit {
    Unfit {
        message: format!("input {key:?} expects {what}; got {got:?}"),
        hint: None,
    }
}

/// A value that is not one of the options of `key`.
fn not_an_option(key: &str, list: &[Value], got: &str) -> Unfit {
    let first = list.first().map(option_text).unwrap_or_default();
    Unfit {
        hint: Some(format!("-i {key}={first}")),
        ..unfit(key, &format!("one of {}", options_list(list)), got)
    }
}

/// A `-i` value typed by its declared field type (JSON when it parses, else text, for
/// undeclared fields).
fn typed(key: &str, raw: &str, decl: Option<&Value>) -> Result<Value, Unfit> {
    let bad = |what: &str| unfit(key, what, raw);
    Ok(match field_type(decl).as_str() {
        "options" => match options_of(decl) {
            Some(list) => pick_option(&list, raw.trim())
                .or_else(|| optional_blank(raw, decl))
                .ok_or_else(|| not_an_option(key, &list, raw))?,
            None => json!(raw),
        },
        "line" | "paragraph" | "text" | "string" | "object" => json!(raw),
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

/// An empty answer to an optional field: no answer (`null`).
fn optional_blank(raw: &str, decl: Option<&Value>) -> Option<Value> {
    let optional = decl
        .and_then(|d| d.get("optional"))
        .and_then(Value::as_bool)
        == Some(true);
    (optional && raw.trim().is_empty()).then_some(Value::Null)
}

/// A bare value from an inputs file, checked as `-i` checks its text: text is typed as
/// `-i` types it; any other JSON value must already have the field's type.
fn checked(key: &str, v: Value, decl: Option<&Value>) -> Result<Value, Unfit> {
    if let Value::String(s) = &v {
        return typed(key, s, decl);
    }
    if v.is_null() {
        return Ok(v);
    }
    let got = v.to_string();
    let ty = field_type(decl);
    let fits = match ty.as_str() {
        "options" => match options_of(decl) {
            Some(list) => {
                return pick_option(&list, &option_text(&v))
                    .ok_or_else(|| not_an_option(key, &list, &got));
            }
            None => true,
        },
        // A number or yes/no for a text field is its text, as `-i` would give it.
        "line" | "paragraph" | "text" | "string" => match &v {
            Value::Number(_) | Value::Bool(_) => return Ok(json!(got)),
            _ => return Err(unfit(key, "text", &got)),
        },
        t if t.contains("file") => v
            .as_array()
            .is_some_and(|files| files.iter().all(Value::is_string)),
        "integer" | "int" => v.is_i64() || v.is_u64(),
        "float" | "number" => v.is_number(),
        "boolean" | "bool" => v.is_boolean(),
        _ => true,
    };
    if fits {
        Ok(v)
    } else {
        let what = match ty.as_str() {
            "integer" | "int" => "an integer",
            "float" | "number" => "a number",
            "boolean" | "bool" => "true or false",
            _ => "a file path or a list of them",
        };
        Err(unfit(key, what, &got))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(v: Value) -> Object {
        match v {
            Value::Object(o) => o,
            _ => Object::new(),
        }
    }

    #[test]
    fn typed_by_declared_fields() {
        let d = decl(
            json!({"name": {"type": "line"}, "age": {"type": "integer"}, "ok": {"type": "boolean"}}),
        );
        let pair = |k: &str, raw: &str| from_pair(k, raw, &d);
        assert_eq!(
            pair("name", "123").unwrap(),
            json!({"value": "123", "type": "line"})
        );
        assert_eq!(
            pair("age", "36").unwrap(),
            json!({"value": 36, "type": "integer"})
        );
        assert_eq!(
            pair("ok", "yes").unwrap(),
            json!({"value": true, "type": "boolean"})
        );
        assert_eq!(pair("extra", "[1,2]").unwrap(), json!({"value": [1, 2]}));
        assert!(pair("age", "old").is_err());
    }

    #[test]
    fn options_must_be_listed() {
        let d = decl(json!({
            "pace": {"type": "options", "options": ["relaxed", "packed"]},
            "size": {"type": "options", "options": [1, 2]},
            "free": {"type": "options", "options": []},
            "maybe": {"type": "options", "options": ["a"], "optional": true}
        }));
        assert_eq!(from_pair("pace", "Packed", &d).unwrap()["value"], "packed");
        assert_eq!(from_pair("size", "2", &d).unwrap()["value"], 2);
        let err = from_pair("pace", "frantic", &d).unwrap_err();
        assert_eq!(
            err.message,
            r#"input "pace" expects one of "relaxed", "packed"; got "frantic""#
        );
        assert_eq!(err.hint.as_deref(), Some("-i pace=relaxed"));
        assert!(from_pair("free", "anything", &d).is_ok());
        assert_eq!(from_pair("maybe", "", &d).unwrap()["value"], Value::Null);
        assert!(from_pair("pace", "", &d).is_err());
    }

    #[test]
    fn bare_file_values_are_checked_like_typed_ones() {
        let d = decl(json!({
            "n": {"type": "integer"}, "x": {"type": "float"}, "b": {"type": "boolean"},
            "t": {"type": "line"}, "o": {"type": "object"}, "f": {"type": "file"},
            "p": {"type": "options", "options": ["a", 3]}
        }));
        let ok = |k: &str, v: Value| checked(k, v, d.get(k)).unwrap();
        let bad = |k: &str, v: Value| checked(k, v, d.get(k)).unwrap_err().message;
        assert_eq!(ok("n", json!("36")), json!(36));
        assert_eq!(ok("n", json!(36)), json!(36));
        assert_eq!(
            bad("n", json!(3.5)),
            r#"input "n" expects an integer; got "3.5""#
        );
        assert_eq!(
            bad("n", json!("many")),
            r#"input "n" expects an integer; got "many""#
        );
        assert_eq!(ok("x", json!(2)), json!(2));
        assert!(checked("b", json!(1), d.get("b")).is_err());
        assert_eq!(ok("b", json!(false)), json!(false));
        assert_eq!(ok("t", json!(123)), json!("123"));
        assert!(checked("t", json!([1]), d.get("t")).is_err());
        assert_eq!(ok("o", json!({"a": 1})), json!({"a": 1}));
        assert_eq!(ok("f", json!(["a.txt"])), json!(["a.txt"]));
        assert!(checked("f", json!(3), d.get("f")).is_err());
        assert_eq!(ok("p", json!(3)), json!(3));
        assert!(checked("p", json!(4), d.get("p")).is_err());
        assert_eq!(ok("undeclared", json!([1])), json!([1]));
        assert_eq!(ok("n", Value::Null), Value::Null);
    }

    #[test]
    fn files_give_api_shape_and_report_unfit_entries() {
        let d = decl(json!({"n": {"type": "integer"}, "p": {"type": "options", "options": ["a"]}}));
        let mut heard = Vec::new();
        let got = from_file_text(
            r#"{"n": "7", "m": {"value": "x", "type": "integer"}, "k": {"value": 1}}"#,
            Format::Sniff,
            &d,
            &mut |u| heard.push(u.message.clone()),
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"n": {"value": 7, "type": "integer"}, "m": {"value": "x", "type": "integer"}, "k": {"value": 1}})
        );
        assert!(heard.is_empty(), "{heard:?}");
        let mut heard = Vec::new();
        let err = from_file_text("n: {value: many}\np: b\n", Format::Yaml, &d, &mut |u| {
            heard.push(u.message.clone())
        })
        .unwrap_err();
        assert_eq!(heard, [r#"input "n" expects an integer; got "many""#]);
        // A file's error has no `-i` hint.
        assert!(
            matches!(err, InputsError::Unfit(Unfit { hint: None, .. })),
            "{err}"
        );
        assert!(matches!(
            from_file_text("[1]", Format::Json, &d, &mut |_| {}),
            Err(InputsError::NotAMap)
        ));
        assert!(matches!(
            from_file_text("{", Format::Json, &d, &mut |_| {}),
            Err(InputsError::Parse(_))
        ));
    }
}
