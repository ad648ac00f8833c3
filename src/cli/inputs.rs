//! `-i KEY=VALUE` and `--inputs FILE` → the run's `inputs` in RAGFlow's API shape
//! (`{key: {value, type?}}`): this reads the files (`@FILE` values too) and prints the
//! warnings; typing and checking the values by the fields the canvas declares is
//! `canvas_ui::inputs`.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use super::CliError;
use canvas_dsl::load::Format;
use canvas_engine::Canvas;
use canvas_pyrt::Object;
use canvas_ui::inputs;
pub use canvas_ui::inputs::from_answers;

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
        out = inputs::from_file_text(&text, fmt, declared, &mut |e| warn_unfit(path, e))
            .map_err(|e| CliError::invalid(format!("{}: {e}", path.display())))?;
    }
    for p in pairs {
        let Some((k, raw)) = p.split_once('=') else {
            return Err(CliError::invalid(format!("input {p:?} is not KEY=VALUE"))
                .hint("canvas run flow.json -i name=Ada"));
        };
        let k = k.trim();
        let raw = at_file(raw).map_err(|e| CliError::invalid(format!("input {k:?}: {e}")))?;
        let value = inputs::from_pair(k, &raw, declared).map_err(|e| {
            let mut err = CliError::invalid(e.message);
            err.hint = e.hint;
            err
        })?;
        out.insert(k.to_string(), value);
    }
    Ok(out)
}

/// Values from a dataset row → API shape: bare values typed and checked by their
/// fields, as `-i` values are (errors start with `label: `); entries already in API
/// shape are passed on unchecked, as RAGFlow's API takes them.
pub fn typed_map(map: Object, declared: &Object, label: &str) -> Result<Object, CliError> {
    inputs::from_map(map, declared, &mut |_| {})
        .map_err(|e| CliError::invalid(format!("{label}: {}", e.message)))
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

/// Warn (once per process: a form's answers are read again when the form is reached)
/// about an entry in API shape whose value does not fit its field.
fn warn_unfit(path: &Path, e: &inputs::Unfit) {
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
    use serde_json::json;

    #[test]
    fn pairs_and_files_are_typed_by_declared_fields() {
        let declared = json!({"age": {"type": "integer"}});
        let declared = declared.as_object().unwrap();
        let got = collect(
            None,
            &["age=36".to_string(), "extra=[1,2]".into()],
            declared,
        )
        .unwrap();
        assert_eq!(got["age"], json!({"value": 36, "type": "integer"}));
        assert_eq!(got["extra"], json!({"value": [1, 2]}));
        assert!(collect(None, &["age=old".into()], declared).is_err());
        assert!(collect(None, &["novalue".into()], declared).is_err());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("in.yaml");
        std::fs::write(&file, "age: '40'\n").unwrap();
        let got = collect(Some(&file), &[], declared).unwrap();
        assert_eq!(got["age"], json!({"value": 40, "type": "integer"}));
        std::fs::write(&file, "age: forty\n").unwrap();
        let err = collect(Some(&file), &[], declared).unwrap_err();
        assert!(
            err.message
                .ends_with(r#"in.yaml: input "age" expects an integer; got "forty""#),
            "{}",
            err.message
        );
        assert_eq!(err.hint, None);
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
