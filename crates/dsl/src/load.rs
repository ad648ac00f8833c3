//! Loading a canvas file: JSON or YAML, a file or stdin, the stored DSL or the template
//! wrapper `{id, title, dsl: {...}}`.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::model::{Dsl, Object, kind_name};
use super::normalize::normalize;

/// Why a canvas could not be loaded. Messages are lowercase fragments; the CLI
/// prefixes the file name.
#[derive(Debug, thiserror::Error)]
pub enum DslError {
    /// The file (or stdin) could not be read.
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    /// Invalid JSON.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde_json said.
        message: String,
    },
    /// Invalid YAML.
    #[error("invalid YAML: {message}")]
    Yaml {
        /// What the parser said (with its location).
        message: String,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
    },
    /// Parsed, but not a canvas at all.
    #[error("not a canvas: {0}")]
    NotACanvas(String),
    /// One component entry is malformed.
    #[error("component {id:?}: {message}")]
    Component {
        /// The component id.
        id: String,
        /// What is wrong.
        message: String,
    },
}

/// A loaded canvas and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The DSL.
    pub dsl: Dsl,
    /// The source path (`-` for stdin).
    pub source: PathBuf,
    /// The raw bytes as read (for hashing and storing a copy).
    pub text: String,
}

/// The format of a canvas text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
    /// Decide from the content (stdin).
    Sniff,
}

/// Read and parse a canvas from a path, or stdin for `-`.
pub fn load_path(path: &Path) -> Result<Loaded, DslError> {
    let (text, format) = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        (s, Format::Sniff)
    } else {
        let s = std::fs::read_to_string(path)?;
        let fmt = match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml") => {
                Format::Yaml
            }
            Some(e) if e.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Sniff,
        };
        (s, fmt)
    };
    let dsl = parse(&text, format)?;
    Ok(Loaded {
        dsl,
        source: path.to_path_buf(),
        text,
    })
}

/// Parse a canvas text and bring it to the current form ([`normalize`]).
pub fn parse(text: &str, format: Format) -> Result<Dsl, DslError> {
    let value = parse_value(text, format)?;
    from_value(normalize(value).value)
}

/// Parse text into a JSON value (YAML is converted).
pub fn parse_value(text: &str, format: Format) -> Result<Value, DslError> {
    let format = match format {
        Format::Sniff => {
            let t = text.trim_start_matches('\u{feff}').trim_start();
            if t.starts_with('{') || t.starts_with('[') {
                Format::Json
            } else {
                Format::Yaml
            }
        }
        f => f,
    };
    match format {
        Format::Json => {
            super::json_value::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| {
                DslError::Json {
                    line: e.line(),
                    column: e.column(),
                    message: json_msg(&e),
                }
            })
        }
        _ => {
            // Before the parser, whose time grows with the square of the depth.
            if let Err(deep) = super::nesting::check_yaml(text) {
                return Err(DslError::Yaml {
                    message: deep.to_string(),
                    line: Some(deep.line),
                    column: Some(deep.column),
                });
            }
            yaml_serde::from_str(text).map_err(|e| {
                let loc = e.location();
                DslError::Yaml {
                    message: e.to_string(),
                    line: loc.as_ref().map(|l| l.line()),
                    column: loc.as_ref().map(|l| l.column()),
                }
            })
        }
    }
}

/// serde_json's message without its trailing " at line X column Y".
fn json_msg(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Turn a parsed (and normalized) value into a DSL: unwrap templates, reject non-canvases, and type-check
/// each component so errors name it.
pub fn from_value(mut value: Value) -> Result<Dsl, DslError> {
    let Some(obj) = value.as_object_mut() else {
        return Err(DslError::NotACanvas(format!(
            "the top level is {}, not an object",
            kind_name(&value)
        )));
    };
    if !obj.contains_key("components") {
        if let Some(inner) = obj.remove("dsl") {
            return from_value(inner);
        }
        return Err(DslError::NotACanvas(
            "it has no `components` object and no graph nodes to derive them from".into(),
        ));
    }
    // Each component is read on its own, so an error names it; taken out of the value,
    // so nothing is copied.
    let comps = match obj.insert("components".into(), Value::Object(Object::new())) {
        Some(Value::Object(c)) => c,
        Some(other) => {
            return Err(DslError::NotACanvas(format!(
                "`components` is {}, not an object",
                kind_name(&other)
            )));
        }
        None => unreachable!("checked above"),
    };
    let mut components = indexmap::IndexMap::with_capacity(comps.len());
    for (id, c) in comps {
        let read = super::model::ComponentDef::from_plain(c)
            .or_else(serde_json::from_value::<super::model::ComponentDef>);
        match read {
            Ok(def) => {
                components.insert(id, def);
            }
            Err(e) => {
                return Err(DslError::Component {
                    id,
                    message: e.to_string(),
                });
            }
        }
    }
    let mut dsl: Dsl =
        serde_json::from_value(value).map_err(|e| DslError::NotACanvas(e.to_string()))?;
    dsl.components = components;
    Ok(dsl)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI: &str = r#"{"components": {"begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": [], "upstream": []}}, "path": [], "history": [], "retrieval": [], "custom_key": 1}"#;

    #[test]
    fn loads_json_and_keeps_unknown_keys() {
        let d = parse(MINI, Format::Json).unwrap();
        assert!(d.components.contains_key("begin"));
        assert_eq!(d.extra["custom_key"], 1);
    }

    #[test]
    fn unwraps_templates_and_reads_yaml() {
        let wrapped = format!(r#"{{"id": 3, "title": {{"en": "x"}}, "dsl": {MINI}}}"#);
        assert!(parse(&wrapped, Format::Sniff).is_ok());
        let yaml = "components:\n  begin:\n    obj:\n      component_name: Begin\n      params: {}\n    downstream: []\n";
        let d = parse(yaml, Format::Yaml).unwrap();
        assert_eq!(d.components["begin"].obj.component_name, "Begin");
    }

    #[test]
    fn errors_are_precise() {
        match parse("{\n  \"components\": ,\n}", Format::Json) {
            Err(DslError::Json { line: 2, .. }) => {}
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            parse("[]", Format::Json),
            Err(DslError::NotACanvas(_))
        ));
        assert!(matches!(
            parse(r#"{"graph": {"nodes": []}}"#, Format::Json),
            Err(DslError::NotACanvas(_))
        ));
        match parse(r#"{"components": {"X:1": {"obj": {}}}}"#, Format::Json) {
            Err(DslError::Component { id, .. }) => assert_eq!(id, "X:1"),
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            parse("a: [", Format::Yaml),
            Err(DslError::Yaml { line: Some(_), .. })
        ));
    }
}
