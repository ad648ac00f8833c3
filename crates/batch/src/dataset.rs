//! Reading a dataset: JSON lines, CSV or YAML, one row per case. A row has a `query`,
//! `inputs` (Begin's, and form fields'), `answers` for forms, an optional `id`, and
//! optional `expect` checks.
//!
//! - JSONL: one object per line (`{"id", "query", "inputs", "answers", "expect"}`);
//!   blank lines are skipped.
//! - CSV: a header row; columns `id`, `query`, `inputs.KEY`, `answers.KEY`,
//!   `expect.CHECK` (on the answer) and `expect.REF.CHECK` (on an output); empty cells
//!   are absent values, and every value is text (typed later by the canvas's fields).
//! - YAML: a list of row mappings, or a mapping whose `rows` is that list.

use std::path::Path;

use canvas_dsl::load::{Format, parse_value};
use canvas_pyrt::Object;
use serde_json::Value;

use super::expect::Expect;

/// The keys a row may have.
const ROW_KEYS: &[&str] = &["id", "query", "inputs", "answers", "expect"];

/// One row of a dataset, its values as written (not yet typed by the canvas's fields).
#[derive(Debug, Clone, PartialEq)]
pub struct DataRow {
    /// Where it is: its line (JSONL, CSV) or its position in the list (YAML), 1-based.
    pub line: usize,
    /// Its `id`, when it has one.
    pub id: Option<String>,
    /// `sys.query`.
    pub query: String,
    /// Values for Begin's inputs and form fields, by field key.
    pub inputs: Object,
    /// Answers for forms, by field key.
    pub answers: Object,
    /// Its checks.
    pub expect: Expect,
}

/// A dataset that cannot be read, naming the file and the row.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct DatasetError {
    /// The dataset file as given.
    pub file: String,
    /// The line (or YAML item) of the row at fault.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// The file's format, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFormat {
    /// `.jsonl`, `.ndjson`.
    Jsonl,
    /// `.csv`.
    Csv,
    /// `.yaml`, `.yml`, `.json` (a list).
    Yaml,
}

impl DataFormat {
    /// The format of `path`, by extension.
    pub fn of(path: &Path) -> Option<DataFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" | "ndjson" => Some(DataFormat::Jsonl),
            "csv" => Some(DataFormat::Csv),
            "yaml" | "yml" | "json" => Some(DataFormat::Yaml),
            _ => None,
        }
    }
}

/// Read the dataset at `path` (named `label` in errors).
pub fn read(path: &Path, label: &str) -> Result<Vec<DataRow>, DatasetError> {
    let err = |line: Option<usize>, message: String| DatasetError {
        file: label.to_string(),
        line,
        message,
    };
    let format = DataFormat::of(path).ok_or_else(|| {
        err(
            None,
            "a dataset is .jsonl, .csv or .yaml (by its extension)".into(),
        )
    })?;
    let text =
        std::fs::read_to_string(path).map_err(|e| err(None, format!("cannot read it: {e}")))?;
    parse(&text, format, label)
}

/// Parse a dataset's text.
pub fn parse(text: &str, format: DataFormat, label: &str) -> Result<Vec<DataRow>, DatasetError> {
    let rows = match format {
        DataFormat::Jsonl => jsonl(text, label)?,
        DataFormat::Csv => csv_rows(text, label)?,
        DataFormat::Yaml => yaml(text, label)?,
    };
    check_ids(&rows, label)?;
    Ok(rows)
}

fn jsonl(text: &str, label: &str) -> Result<Vec<DataRow>, DatasetError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim_start_matches('\u{feff}');
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| DatasetError {
            file: label.to_string(),
            line: Some(n),
            message: format!("not a JSON object: {e}"),
        })?;
        rows.push(row_of(v, n, label)?);
    }
    Ok(rows)
}

fn yaml(text: &str, label: &str) -> Result<Vec<DataRow>, DatasetError> {
    let err = |message: String| DatasetError {
        file: label.to_string(),
        line: None,
        message,
    };
    let v = parse_value(text, Format::Yaml).map_err(|e| err(e.to_string()))?;
    let list = match v {
        Value::Array(list) => list,
        Value::Object(mut o) if o.get("rows").is_some_and(Value::is_array) => {
            match o.remove("rows") {
                Some(Value::Array(list)) => list,
                _ => Vec::new(),
            }
        }
        _ => return Err(err("expected a list of rows (or `rows:` with one)".into())),
    };
    list.into_iter()
        .enumerate()
        .map(|(i, v)| row_of(v, i + 1, label))
        .collect()
}

/// A row from a JSON or YAML value.
fn row_of(v: Value, line: usize, label: &str) -> Result<DataRow, DatasetError> {
    let err = |message: String| DatasetError {
        file: label.to_string(),
        line: Some(line),
        message,
    };
    let Value::Object(o) = v else {
        return Err(err("a row is an object with `query`, `inputs`, ...".into()));
    };
    for k in o.keys() {
        if !ROW_KEYS.contains(&k.as_str()) {
            let hint = canvas_dsl::suggest::closest(k, ROW_KEYS.iter().copied())
                .map(|near| format!(" (did you mean \"{near}\"?)"))
                .unwrap_or_else(|| format!(" (a row has {})", ROW_KEYS.join(", ")));
            return Err(err(format!("unknown key \"{k}\"{hint}")));
        }
    }
    let id = match o.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(other) => return Err(err(format!("`id` must be text or a number, not {other}"))),
    };
    let query = match o.get("query") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
        Some(other) => return Err(err(format!("`query` must be text, not {other}"))),
    };
    let map = |key: &str| -> Result<Object, DatasetError> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(Object::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(other) => Err(err(format!(
                "`{key}` must map field keys to values, not {other}"
            ))),
        }
    };
    let expect = match o.get("expect") {
        None | Some(Value::Null) => Expect::default(),
        Some(v) => Expect::from_value(v).map_err(err)?,
    };
    Ok(DataRow {
        line,
        id,
        query,
        inputs: map("inputs")?,
        answers: map("answers")?,
        expect,
    })
}

fn csv_rows(text: &str, label: &str) -> Result<Vec<DataRow>, DatasetError> {
    let err = |line: Option<usize>, message: String| DatasetError {
        file: label.to_string(),
        line,
        message,
    };
    let text = text.trim_start_matches('\u{feff}');
    let mut rd = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers: Vec<String> = rd
        .headers()
        .map_err(|e| err(Some(1), format!("cannot read the header row: {e}")))?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    enum Col {
        Id,
        Query,
        Input(String),
        Answer(String),
        Expect(String),
    }
    let mut cols = Vec::with_capacity(headers.len());
    for h in &headers {
        let col = if h == "id" {
            Col::Id
        } else if h == "query" {
            Col::Query
        } else if let Some(k) = h.strip_prefix("inputs.").filter(|k| !k.is_empty()) {
            Col::Input(k.to_string())
        } else if let Some(k) = h.strip_prefix("answers.").filter(|k| !k.is_empty()) {
            Col::Answer(k.to_string())
        } else if let Some(k) = h.strip_prefix("expect.").filter(|k| !k.is_empty()) {
            Col::Expect(k.to_string())
        } else {
            return Err(err(
                Some(1),
                format!(
                    "unknown column \"{h}\" (columns are id, query, inputs.KEY, answers.KEY, \
                     expect.CHECK, expect.REF.CHECK)"
                ),
            ));
        };
        cols.push(col);
    }
    let mut rows = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map(|p| p.line() as usize);
            err(line, format!("not valid CSV: {e}"))
        })?;
        let line = rec.position().map_or(rows.len() + 2, |p| p.line() as usize);
        if rec.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        let mut row = DataRow {
            line,
            id: None,
            query: String::new(),
            inputs: Object::new(),
            answers: Object::new(),
            expect: Expect::default(),
        };
        let mut expect = Object::new();
        for (col, cell) in cols.iter().zip(rec.iter()) {
            if cell.is_empty() {
                continue;
            }
            let cell = Value::String(cell.to_string());
            match col {
                Col::Id => row.id = cell.as_str().map(str::to_string),
                Col::Query => row.query = cell.as_str().unwrap_or_default().to_string(),
                Col::Input(k) => {
                    row.inputs.insert(k.clone(), cell);
                }
                Col::Answer(k) => {
                    row.answers.insert(k.clone(), cell);
                }
                Col::Expect(k) => match k.rsplit_once('.') {
                    // `expect.REF.CHECK`: a check on an output.
                    Some((target, check)) if !target.is_empty() => {
                        let outputs = expect
                            .entry("outputs")
                            .or_insert_with(|| Value::Object(Object::new()));
                        if let Value::Object(outputs) = outputs {
                            let on = outputs
                                .entry(target.to_string())
                                .or_insert_with(|| Value::Object(Object::new()));
                            if let Value::Object(on) = on {
                                on.insert(check.to_string(), cell);
                            }
                        }
                    }
                    _ => {
                        expect.insert(k.clone(), cell);
                    }
                },
            }
        }
        if !expect.is_empty() {
            row.expect =
                Expect::from_value(&Value::Object(expect)).map_err(|m| err(Some(line), m))?;
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Row ids are unique: a result must name one row.
fn check_ids(rows: &[DataRow], label: &str) -> Result<(), DatasetError> {
    let mut seen = std::collections::HashMap::new();
    for r in rows {
        if let Some(id) = &r.id {
            if let Some(first) = seen.insert(id.as_str(), r.line) {
                return Err(DatasetError {
                    file: label.to_string(),
                    line: Some(r.line),
                    message: format!("row id \"{id}\" was already used at {first}"),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jsonl_rows_with_every_key() {
        let text = r#"{"id": "a", "query": "hi", "inputs": {"n": 3}, "answers": {"ok": true}, "expect": {"contains": "x"}}

{"query": 42}
"#;
        let rows = parse(text, DataFormat::Jsonl, "d.jsonl").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].id.as_deref(), Some("a"));
        assert_eq!(rows[0].inputs["n"], json!(3));
        assert_eq!(rows[0].answers["ok"], json!(true));
        assert_eq!(rows[0].expect.checks.len(), 1);
        assert_eq!((rows[1].line, rows[1].query.as_str()), (3, "42"));
    }

    #[test]
    fn bad_rows_are_named_by_line() {
        let e = parse("{\"query\": 1}\n{oops\n", DataFormat::Jsonl, "d.jsonl").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(
            e.to_string().starts_with("d.jsonl:2: not a JSON object"),
            "{e}"
        );
        let e = parse("{\"quer\": \"x\"}", DataFormat::Jsonl, "d.jsonl").unwrap_err();
        assert!(e.to_string().contains("did you mean \"query\""), "{e}");
        let e = parse("{\"inputs\": [1]}", DataFormat::Jsonl, "d.jsonl").unwrap_err();
        assert!(e.message.contains("`inputs` must map"), "{e}");
        let e = parse(
            "{\"id\": \"x\"}\n{\"id\": \"x\"}",
            DataFormat::Jsonl,
            "d.jsonl",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.jsonl:2: row id \"x\" was already used at 1"
        );
    }

    #[test]
    fn csv_columns_map_to_keys() {
        let text = "id,query,inputs.days,answers.pace,expect.contains,expect.Agent:A@content.equals\n\
                    r1,\"hello, you\",3,relaxed,hi,yes\n\
                    ,,,,,\n\
                    r2,bye,,,,\n";
        let rows = parse(text, DataFormat::Csv, "d.csv").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].query, "hello, you");
        assert_eq!(rows[0].inputs["days"], json!("3"));
        assert_eq!(rows[0].answers["pace"], json!("relaxed"));
        assert_eq!(rows[0].expect.checks.len(), 2);
        assert!(rows[1].inputs.is_empty());
        assert_eq!(rows[1].line, 4);
        let e = parse("id,qury\n1,x\n", DataFormat::Csv, "d.csv").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("d.csv:1: unknown column \"qury\""),
            "{e}"
        );
        let e = parse("id,query\n1,x,extra\n", DataFormat::Csv, "d.csv").unwrap_err();
        assert!(e.to_string().contains("not valid CSV"), "{e}");
    }

    #[test]
    fn yaml_is_a_list_or_rows() {
        let list = "- query: a\n- query: b\n  inputs: {n: 2}\n";
        assert_eq!(parse(list, DataFormat::Yaml, "d.yaml").unwrap().len(), 2);
        let wrapped = "rows:\n  - query: a\n";
        assert_eq!(parse(wrapped, DataFormat::Yaml, "d.yaml").unwrap().len(), 1);
        let e = parse("query: a\n", DataFormat::Yaml, "d.yaml").unwrap_err();
        assert!(e.message.contains("a list of rows"), "{e}");
        let e = parse("- 5\n", DataFormat::Yaml, "d.yaml").unwrap_err();
        assert_eq!(e.line, Some(1));
    }

    #[test]
    fn formats_come_from_extensions() {
        assert_eq!(
            DataFormat::of(Path::new("a.JSONL")),
            Some(DataFormat::Jsonl)
        );
        assert_eq!(DataFormat::of(Path::new("a.csv")), Some(DataFormat::Csv));
        assert_eq!(DataFormat::of(Path::new("a.yml")), Some(DataFormat::Yaml));
        assert_eq!(DataFormat::of(Path::new("a.txt")), None);
    }
}
