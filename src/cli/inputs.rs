//! `-i KEY=VALUE` and `--inputs FILE` → the run's `inputs` in RAGFlow's API shape
//! (`{key: {value, type?}}`), typed and checked by the fields the canvas declares.
//!
//! A `-i` value, and a bare value in an inputs file, must fit its field (an integer, one
//! of the options, ...): a bad one is a usage error before anything runs. An entry
//! already in RAGFlow's API shape (`{"value": ..., "type": ...}`) is passed on as
//! RAGFlow's API takes it, unchecked there too, with a warning when it does not fit.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

use super::CliError;
use canvas_dsl::load::{Format, parse_value};
use canvas_engine::Canvas;
use canvas_pyrt::Object;
use canvas_ui::prompt::{FieldKind, field_kind, option_text, pick_option};

/// Build the run's inputs. `declared` maps field keys to their definitions (Begin's
/// `inputs`, a form's fields), which type and check the values given for them; values
/// for undeclared keys are taken as given.
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
        let label = path.display().to_string();
        out = typed_map(map, declared, &label, &|k, o, decl| {
            warn_unfit(path, k, o, decl)
        })?;
    }
    for p in pairs {
        let Some((k, raw)) = p.split_once('=') else {
            return Err(CliError::invalid(format!("input {p:?} is not KEY=VALUE"))
                .hint("canvas run flow.json -i name=Ada"));
        };
        let k = k.trim();
        let raw = at_file(raw).map_err(|e| CliError::invalid(format!("input {k:?}: {e}")))?;
        let value = typed(k, &raw, declared.get(k))?;
        out.insert(k.to_string(), api_shape(value, declared.get(k)));
    }
    Ok(out)
}

/// Values from a file (an inputs file, a dataset row) → API shape: bare values typed
/// and checked by their fields, as `-i` values are (errors start with `label: `);
/// entries already in API shape are passed on, `unfit` told of those that do not fit.
pub fn typed_map(
    map: Object,
    declared: &Object,
    label: &str,
    unfit: &dyn Fn(&str, &Object, Option<&Value>),
) -> Result<Object, CliError> {
    let mut out = Object::new();
    for (k, v) in map {
        let decl = declared.get(&k);
        let v = match v {
            Value::Object(o) if o.contains_key("value") => {
                unfit(&k, &o, decl);
                Value::Object(o)
            }
            bare => checked(&k, bare, decl)
                .map_err(|e| CliError::invalid(format!("{label}: {}", e.message)))?,
        };
        out.insert(k.clone(), api_shape(v, decl));
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

/// Every field the canvas asks for, by key: Begin's inputs, then the fields of its
/// forms (UserFillUp); the first definition of a key wins.
pub fn canvas_fields(canvas: &Canvas) -> Object {
    let mut fields = Object::new();
    let begin = canvas.node("begin").into_iter();
    let forms = canvas
        .nodes
        .values()
        .filter(|n| n.class.eq_ignore_ascii_case("UserFillUp"));
    for node in begin.chain(forms) {
        if let Some(inputs) = node.params.get("inputs").and_then(Value::as_object) {
            for (k, def) in inputs {
                if !fields.contains_key(k) {
                    fields.insert(k.clone(), def.clone());
                }
            }
        }
    }
    fields
}

/// A given key that no field of the canvas declares, with the closest field's key.
pub struct Unknown {
    /// The key as given.
    pub key: String,
    /// The declared key it is probably a typo of.
    pub near: Option<String>,
}

/// The keys of `given` that `fields` does not declare (RAGFlow passes them to Begin all
/// the same, so they are warned about, not refused).
pub fn unknown_keys(given: &Object, fields: &Object) -> Vec<Unknown> {
    given
        .keys()
        .filter(|k| !fields.contains_key(*k))
        .map(|k| Unknown {
            key: k.clone(),
            near: canvas_dsl::suggest::closest(k, fields.keys().map(String::as_str))
                .map(str::to_string),
        })
        .collect()
}

/// Say on stderr that `unknown` keys match no field of the canvas `label`.
pub fn warn_unknown(label: &str, unknown: &[Unknown]) {
    for u in unknown {
        let near = u
            .near
            .as_ref()
            .map(|n| format!(" (did you mean {n:?}?)"))
            .unwrap_or_default();
        eprintln!(
            "warning: {label} has no field {:?}{near}; Begin gets it as given",
            u.key
        );
    }
}

/// The required Begin inputs that `given` lacks. Begin never pauses for them (RAGFlow
/// reads a missing one as empty); with no inputs at all, a non-empty query fills a lone
/// declared field, as Begin does.
pub fn missing_begin_inputs(declared: &Object, given: &Object, query: &str) -> Object {
    if given.is_empty() && !query.is_empty() && declared.len() == 1 {
        return Object::new();
    }
    declared
        .iter()
        .filter(|(k, def)| {
            !given.contains_key(*k) && def.get("optional").and_then(Value::as_bool) != Some(true)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The error for required Begin inputs not given: names them and how to give them (a
/// mistyped key given instead is pointed at).
pub fn missing_error(label: &str, missing: &Object, unknown: &[Unknown]) -> CliError {
    let names: Vec<String> = missing
        .iter()
        .map(|(k, def)| match def.get("name").and_then(Value::as_str) {
            Some(n) if !n.trim().is_empty() && n != k => format!("{k:?} ({})", n.trim()),
            _ => format!("{k:?}"),
        })
        .collect();
    let (noun, verb, them) = if names.len() == 1 {
        ("input", "is", "it")
    } else {
        ("inputs", "are", "them")
    };
    let flags: Vec<String> = missing.keys().map(|k| format!("-i {k}=…")).collect();
    let give = format!("with {} (or --inputs FILE)", flags.join(" "));
    let typos: Vec<String> = unknown
        .iter()
        .filter_map(|u| {
            let near = u.near.as_ref().filter(|n| missing.contains_key(*n))?;
            Some(format!("{near:?} for {:?}", u.key))
        })
        .collect();
    let hint = if typos.is_empty() {
        format!("give {them} {give}")
    } else {
        format!("did you mean {}? Give {them} {give}", typos.join(", "))
    };
    CliError::invalid(format!(
        "{label}: Begin {noun} {} {verb} required and not given",
        names.join(", ")
    ))
    .hint(hint)
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

/// The usage error for a value `got` (as the user wrote it) that does not fit `key`.
fn unfit(key: &str, what: &str, got: &str) -> CliError {
    CliError::invalid(format!("input {key:?} expects {what}; got {got:?}"))
}

/// A value that is not one of the options of `key`.
fn not_an_option(key: &str, list: &[Value], got: &str) -> CliError {
    let first = list.first().map(option_text).unwrap_or_default();
    unfit(key, &format!("one of {}", options_list(list)), got).hint(format!("-i {key}={first}"))
}

/// A `-i` value typed by its declared field type (JSON when it parses, else text, for
/// undeclared fields).
fn typed(key: &str, raw: &str, decl: Option<&Value>) -> Result<Value, CliError> {
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
fn checked(key: &str, v: Value, decl: Option<&Value>) -> Result<Value, CliError> {
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

/// Warn (once per process: a form's answers are read again when the form is reached)
/// about an entry in API shape whose value does not fit its field.
fn warn_unfit(path: &Path, key: &str, entry: &Object, decl: Option<&Value>) {
    let value = entry.get("value").cloned().unwrap_or(Value::Null);
    let Err(e) = checked(key, value, decl) else {
        return;
    };
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let msg = format!(
        "warning: {}: {}; passed on as given (RAGFlow's API shape is not checked)",
        path.display(),
        e.message
    );
    let Ok(mut warned) = WARNED.lock() else {
        return;
    };
    if warned.get_or_insert_with(HashSet::new).insert(msg.clone()) {
        eprintln!("{msg}");
    }
}

/// Stdin, read once: `-q @-` and `-i KEY=@-` share it.
static STDIN: OnceLock<Result<String, String>> = OnceLock::new();

/// Whether a `@-` value has read stdin already (the canvas cannot come from there too).
pub fn stdin_taken() -> bool {
    STDIN.get().is_some()
}

/// Whether any `-i` value reads stdin (`KEY=@-`).
pub fn pairs_read_stdin(pairs: &[String]) -> bool {
    pairs
        .iter()
        .any(|p| p.split_once('=').is_some_and(|(_, v)| v == "@-"))
}

/// A value given as `@FILE` (the file's text), `@-` (stdin) or `@@…` (the text after
/// the first `@`); any other value as it is. One trailing newline of a file is dropped:
/// files and pipes end their last line with one.
pub fn at_file(raw: &str) -> Result<std::borrow::Cow<'_, str>, String> {
    let Some(rest) = raw.strip_prefix('@') else {
        return Ok(raw.into());
    };
    if rest.starts_with('@') {
        return Ok(rest.into());
    }
    let text = match rest {
        "" => return Err("`@` needs a file name (`@@` starts a value with a literal @)".into()),
        "-" => STDIN
            .get_or_init(|| {
                let mut s = String::new();
                std::io::stdin()
                    .read_to_string(&mut s)
                    .map(|_| s)
                    .map_err(|e| format!("cannot read stdin: {e}"))
            })
            .clone()?,
        path => std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?,
    };
    let text = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .map(str::to_string)
        .unwrap_or(text);
    Ok(text.into())
}

/// clap's parser of `-q`: `@FILE`, `@-` and `@@` as [`at_file`] reads them.
pub fn query_value(raw: &str) -> Result<String, String> {
    at_file(raw).map(std::borrow::Cow::into_owned)
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

    #[test]
    fn options_must_be_listed() {
        let declared = json!({
            "pace": {"type": "options", "options": ["relaxed", "packed"]},
            "size": {"type": "options", "options": [1, 2]},
            "free": {"type": "options", "options": []},
            "maybe": {"type": "options", "options": ["a"], "optional": true}
        });
        let declared = declared.as_object().unwrap();
        let got = collect(None, &["pace=Packed".into(), "size=2".into()], declared).unwrap();
        assert_eq!(got["pace"]["value"], "packed");
        assert_eq!(got["size"]["value"], 2);
        let err = collect(None, &["pace=frantic".into()], declared).unwrap_err();
        assert_eq!(
            err.message,
            r#"input "pace" expects one of "relaxed", "packed"; got "frantic""#
        );
        assert_eq!(err.hint.as_deref(), Some("-i pace=relaxed"));
        assert!(collect(None, &["free=anything".into()], declared).is_ok());
        assert_eq!(
            collect(None, &["maybe=".into()], declared).unwrap()["maybe"]["value"],
            Value::Null
        );
        assert!(collect(None, &["pace=".into()], declared).is_err());
    }

    #[test]
    fn bare_file_values_are_checked_like_typed_ones() {
        let declared = json!({
            "n": {"type": "integer"}, "x": {"type": "float"}, "b": {"type": "boolean"},
            "t": {"type": "line"}, "o": {"type": "object"}, "f": {"type": "file"},
            "p": {"type": "options", "options": ["a", 3]}
        });
        let d = declared.as_object().unwrap();
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
    fn missing_begin_inputs_follow_begin() {
        let declared = json!({"a": {"type": "line"}, "b": {"type": "line", "optional": true}});
        let declared = declared.as_object().unwrap();
        let none = Object::new();
        let missing = missing_begin_inputs(declared, &none, "");
        assert_eq!(missing.keys().collect::<Vec<_>>(), ["a"]);
        // Two declared fields: the query fills neither.
        assert_eq!(missing_begin_inputs(declared, &none, "q").len(), 1);
        let lone = json!({"a": {"type": "line"}});
        let lone = lone.as_object().unwrap();
        assert!(missing_begin_inputs(lone, &none, "q").is_empty());
        assert_eq!(missing_begin_inputs(lone, &none, "").len(), 1);
        let given = json!({"a": {"value": "x"}});
        assert!(missing_begin_inputs(declared, given.as_object().unwrap(), "").is_empty());
    }

    #[test]
    fn at_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.txt");
        std::fs::write(&path, "line one\nline two\n").unwrap();
        let arg = format!("@{}", path.display());
        assert_eq!(at_file(&arg).unwrap(), "line one\nline two");
        assert_eq!(at_file("@@handle").unwrap(), "@handle");
        assert_eq!(at_file("plain @ text").unwrap(), "plain @ text");
        assert!(at_file("@").is_err());
        let err = at_file("@/nonexistent/q.txt").unwrap_err();
        assert!(err.starts_with("cannot read /nonexistent/q.txt"), "{err}");
        assert!(pairs_read_stdin(&["k=@-".into()]));
        assert!(!pairs_read_stdin(&["k=@@-".into()]));
    }
}
