//! ExcelProcessor (`llm-and-tools.md` §8.3): read spreadsheets (xlsx, xls, ods, csv)
//! into records and markdown tables, merge them (concat or outer join), turn a
//! referenced value into tables, and write xlsx or csv files. Tables follow what pandas
//! makes of the same data (`tools::sql::frame`).
//!
//! RAGFlow reads uploaded files from its storage; here a file value is a local path
//! (a string, or an object with `path`), or a `data:` URL as in RAGFlow.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Map, Value, json};

use canvas_engine::template::plain_text;
use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx};
use canvas_pyrt::{Object, py_str};
use canvas_tools::ToolEnv;
use canvas_tools::sql::frame::{self, FloatFmt};
use canvas_tools::sql::{Cell, ResultSet, datetime_cell};

const OPERATIONS: &[&str] = &["read", "merge", "transform", "output"];
const FORMATS: &[&str] = &["xlsx", "csv"];

/// Build from DSL parameters (RAGFlow's `check()`).
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let get = |k: &str, d: &str| {
        params
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or(d)
            .to_string()
    };
    let operation = get("operation", "read");
    let output_format = get("output_format", "xlsx");
    for (v, what, list) in [
        (&operation, "[ExcelProcessor] Operation", OPERATIONS),
        (&output_format, "[ExcelProcessor] Output format", FORMATS),
    ] {
        if !list.contains(&v.as_str()) {
            let list: Vec<Value> = list.iter().map(|s| json!(s)).collect();
            return Err(BuildError::Params(format!(
                "{what} {} is not supported, it should be in {}",
                canvas_pyrt::py_repr(&json!(v)),
                canvas_pyrt::py_repr(&Value::Array(list))
            )));
        }
    }
    Ok(Box::new(ExcelProcessor {
        operation,
        output_format,
    }))
}

/// The ExcelProcessor component.
pub struct ExcelProcessor {
    operation: String,
    output_format: String,
}

/// One sheet: its name and its frame.
type Sheet = (String, ResultSet);

#[async_trait]
impl Component for ExcelProcessor {
    fn default_outputs(&self) -> &'static [&'static str] {
        &["data", "summary", "markdown"]
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        match self.operation.as_str() {
            "read" => "Reading Excel files...",
            "merge" => "Merging Excel data...",
            "transform" => "Transforming data...",
            "output" => "Generating Excel output...",
            _ => "Processing Excel...",
        }
        .into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        match self.operation.as_str() {
            "read" => read(cx),
            "merge" => merge(cx),
            "transform" => transform(cx),
            _ => output(cx, &self.output_format),
        }
    }
}

/// The references of `input_files`, each resolved (RAGFlow records `str(value)[:200]`).
fn input_files(cx: &NodeCx<'_>) -> CResult<Vec<(String, Value)>> {
    let refs: Vec<String> = match cx.param("input_files") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for r in refs {
        let exp = r
            .trim()
            .trim_start_matches('{')
            .trim_end_matches('}')
            .to_string();
        let v = cx.resolve(&exp)?;
        let shown: String = if canvas_dsl::model::truthy(&v) {
            py_str(&v).chars().take(200).collect()
        } else {
            String::new()
        };
        cx.set_input(&r, json!(shown));
        out.push((r, v));
    }
    Ok(out)
}

/// A file value's bytes and name: a local path (string or `path`/`id`), a `data:` URL,
/// or the first of a list. `None` when it names no readable file.
fn file_content(v: &Value) -> CResult<Option<(Vec<u8>, String)>> {
    let read = |p: &str| -> CResult<Option<(Vec<u8>, String)>> {
        let path = Path::new(p);
        let bytes = std::fs::read(path)
            .map_err(|e| ComponentError::Failed(format!("cannot read the spreadsheet {p}: {e}")))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "unknown.xlsx".into());
        Ok(Some((bytes, name)))
    };
    match v {
        Value::String(s) if s.starts_with("data:") => {
            let encoded = s.split_once(',').map(|(_, e)| e).unwrap_or("");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .map_err(|e| ComponentError::Failed(format!("a data: URL is not base64: {e}")))?;
            Ok(Some((bytes, "uploaded.xlsx".into())))
        }
        Value::String(s) if !s.is_empty() => read(s),
        Value::Object(o) => {
            let path = ["path", "id", "file_id"]
                .iter()
                .find_map(|k| o.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()));
            let Some(path) = path else { return Ok(None) };
            let Some((bytes, base)) = read(path)? else {
                return Ok(None);
            };
            let name = ["name", "filename"]
                .iter()
                .find_map(|k| o.get(*k).and_then(Value::as_str))
                .map(String::from)
                .unwrap_or(base);
            Ok(Some((bytes, name)))
        }
        Value::Array(a) => match a.first() {
            Some(first @ Value::Object(_)) => file_content(first),
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

/// `pd.read_csv` / `pd.read_excel` for the sheets `sheet_selection` picks. A file that
/// cannot be parsed gives no sheets, as in RAGFlow.
fn parse(bytes: &[u8], filename: &str, selection: &str) -> Vec<Sheet> {
    if filename.to_lowercase().ends_with(".csv") {
        return parse_csv(bytes)
            .map(|rs| vec![("Sheet1".to_string(), rs)])
            .unwrap_or_default();
    }
    use calamine::Reader as _;
    let Ok(mut book) = calamine::open_workbook_auto_from_rs(std::io::Cursor::new(bytes.to_vec()))
    else {
        return Vec::new();
    };
    let names = book.sheet_names();
    let wanted: Vec<String> = match selection {
        "all" => names.clone(),
        "first" => names.first().cloned().into_iter().collect(),
        list => list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| names.contains(s))
            .collect(),
    };
    wanted
        .into_iter()
        .filter_map(|name| {
            let range = book.worksheet_range(&name).ok()?;
            Some((name, sheet_frame(&range)))
        })
        .collect()
}

/// A worksheet as pandas reads it: the first row is the header.
fn sheet_frame(range: &calamine::Range<calamine::Data>) -> ResultSet {
    use calamine::{Data, DataType as _};
    let mut rows = range.rows();
    let header: Vec<String> = match rows.next() {
        Some(r) => r
            .iter()
            .enumerate()
            .map(|(i, c)| match c {
                Data::Empty => format!("Unnamed: {i}"),
                other => other.to_string(),
            })
            .collect(),
        None => return ResultSet::default(),
    };
    let cell = |d: &Data| -> Cell {
        match d {
            Data::Empty => Cell::Null,
            Data::Bool(b) => Cell::Bool(*b),
            Data::Int(i) => Cell::Int(i128::from(*i)),
            // openpyxl gives whole numbers stored without a fraction as ints.
            Data::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => Cell::Int(*f as i128),
            Data::Float(f) => Cell::Float(*f),
            Data::String(s) => Cell::Text(s.clone()),
            Data::DateTime(_) | Data::DateTimeIso(_) => d
                .as_datetime()
                .and_then(|t| datetime_cell(&t.format("%Y-%m-%d %H:%M:%S").to_string()))
                .unwrap_or_else(|| Cell::Text(d.to_string())),
            other => Cell::Text(other.to_string()),
        }
    };
    let body: Vec<Vec<Cell>> = rows
        .filter(|r| r.iter().any(|c| !matches!(c, Data::Empty)))
        .map(|r| {
            (0..header.len())
                .map(|i| r.get(i).map(cell).unwrap_or(Cell::Null))
                .collect()
        })
        .collect();
    ResultSet {
        columns: header,
        rows: body,
    }
}

/// `pd.read_csv`: header row, numbers and `True`/`False` typed, empty fields missing.
fn parse_csv(bytes: &[u8]) -> Option<ResultSet> {
    let mut rdr = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let columns: Vec<String> = rdr.headers().ok()?.iter().map(String::from).collect();
    let mut rows = Vec::new();
    for rec in rdr.records() {
        let rec = rec.ok()?;
        rows.push(
            (0..columns.len())
                .map(|i| typed(rec.get(i).unwrap_or("")))
                .collect(),
        );
    }
    Some(ResultSet { columns, rows })
}

/// A CSV field as pandas types it.
fn typed(s: &str) -> Cell {
    let t = s.trim();
    if t.is_empty() {
        return Cell::Null;
    }
    if let Ok(i) = t.parse::<i128>() {
        return Cell::Int(i);
    }
    if let Ok(f) = t.parse::<f64>() {
        return Cell::Float(f);
    }
    match t {
        "True" | "TRUE" | "true" => Cell::Bool(true),
        "False" | "FALSE" | "false" => Cell::Bool(false),
        _ => Cell::Text(s.to_string()),
    }
}

/// `df.head(n)`.
fn head(rs: &ResultSet, n: usize) -> ResultSet {
    ResultSet {
        columns: rs.columns.clone(),
        rows: rs.rows.iter().take(n).cloned().collect(),
    }
}

fn markdown(rs: &ResultSet) -> String {
    frame::markdown_with(rs, FloatFmt::G)
}

/// Every sheet of every input file.
fn sheets_of_inputs(cx: &NodeCx<'_>) -> CResult<Vec<(String, Vec<Sheet>)>> {
    let selection = cx.param_str("sheet_selection", "all").to_string();
    let mut out = Vec::new();
    for (_, v) in input_files(cx)? {
        if v.is_null() {
            continue;
        }
        let Some((bytes, filename)) = file_content(&v)? else {
            continue;
        };
        out.push((filename.clone(), parse(&bytes, &filename, &selection)));
    }
    Ok(out)
}

fn read(cx: &NodeCx<'_>) -> CResult<()> {
    let mut data = Map::new();
    let mut summaries = Vec::new();
    let mut parts = Vec::new();
    for (filename, sheets) in sheets_of_inputs(cx)? {
        let many = sheets.len() > 1;
        for (sheet, rs) in &sheets {
            let key = if many {
                format!("{filename}_{sheet}")
            } else {
                filename.clone()
            };
            data.insert(key.clone(), frame::records(rs));
            let shown: Vec<&str> = rs.columns.iter().take(5).map(String::as_str).collect();
            let more = if rs.columns.len() > 5 { "..." } else { "" };
            summaries.push(format!(
                "**{key}**: {} rows, {} columns ({}{more})",
                rs.rows.len(),
                rs.columns.len(),
                shown.join(", ")
            ));
            parts.push(format!("### {key}\n\n{}\n", markdown(&head(rs, 10))));
        }
    }
    cx.set_output("data", Value::Object(data));
    cx.set_output(
        "summary",
        json!(if summaries.is_empty() {
            "No Excel files found".to_string()
        } else {
            summaries.join("\n")
        }),
    );
    cx.set_output(
        "markdown",
        json!(if parts.is_empty() {
            "No data".to_string()
        } else {
            parts.join("\n\n")
        }),
    );
    Ok(())
}

/// `pd.concat(frames, ignore_index=True)`: columns in order of first appearance,
/// missing cells empty.
fn concat(frames: &[ResultSet]) -> ResultSet {
    let mut columns: Vec<String> = Vec::new();
    for f in frames {
        for c in &f.columns {
            if !columns.contains(c) {
                columns.push(c.clone());
            }
        }
    }
    let mut rows = Vec::new();
    for f in frames {
        for r in &f.rows {
            rows.push(
                columns
                    .iter()
                    .map(|c| {
                        f.columns
                            .iter()
                            .position(|x| x == c)
                            .and_then(|i| r.get(i).cloned())
                            .unwrap_or(Cell::Null)
                    })
                    .collect(),
            );
        }
    }
    ResultSet { columns, rows }
}

/// A cell's sort and match key for joins.
fn key_of(c: &Cell) -> String {
    match c {
        Cell::Null => String::new(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) if f.fract() == 0.0 => format!("{}", *f as i128),
        other => plain_text(
            &frame::records(&ResultSet {
                columns: vec!["k".into()],
                rows: vec![vec![other.clone()]],
            })[0]["k"],
        ),
    }
}

/// `left.merge(right, on=key, how="outer")`: matching rows combined, the others kept
/// with empty cells, sorted by the key; clashing column names get `_x`/`_y`.
fn outer_join(left: &ResultSet, right: &ResultSet, key: &str) -> Option<ResultSet> {
    let lk = left.columns.iter().position(|c| c == key)?;
    let rk = right.columns.iter().position(|c| c == key)?;
    let rest_r: Vec<usize> = (0..right.columns.len()).filter(|i| *i != rk).collect();
    let mut columns = Vec::new();
    for (i, c) in left.columns.iter().enumerate() {
        let clash = i != lk
            && right
                .columns
                .iter()
                .enumerate()
                .any(|(j, d)| j != rk && d == c);
        columns.push(if clash { format!("{c}_x") } else { c.clone() });
    }
    for &j in &rest_r {
        let c = &right.columns[j];
        let clash = left
            .columns
            .iter()
            .enumerate()
            .any(|(i, d)| i != lk && d == c);
        columns.push(if clash { format!("{c}_y") } else { c.clone() });
    }
    let mut rows: Vec<(String, Vec<Cell>)> = Vec::new();
    let mut used = vec![false; right.rows.len()];
    for l in &left.rows {
        let k = key_of(&l[lk]);
        let mut matched = false;
        for (j, r) in right.rows.iter().enumerate() {
            if key_of(&r[rk]) == k && !k.is_empty() {
                matched = true;
                used[j] = true;
                let mut row = l.clone();
                row.extend(rest_r.iter().map(|&i| r[i].clone()));
                rows.push((k.clone(), row));
            }
        }
        if !matched {
            let mut row = l.clone();
            row.extend(rest_r.iter().map(|_| Cell::Null));
            rows.push((k, row));
        }
    }
    for (j, r) in right.rows.iter().enumerate() {
        if used[j] {
            continue;
        }
        let mut row: Vec<Cell> = (0..left.columns.len())
            .map(|i| if i == lk { r[rk].clone() } else { Cell::Null })
            .collect();
        row.extend(rest_r.iter().map(|&i| r[i].clone()));
        rows.push((key_of(&r[rk]), row));
    }
    // pandas sorts an outer merge by the key (numbers numerically).
    rows.sort_by(
        |(a, _), (b, _)| match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) => x.total_cmp(&y),
            _ => a.cmp(b),
        },
    );
    Some(ResultSet {
        columns,
        rows: rows.into_iter().map(|(_, r)| r).collect(),
    })
}

fn merge(cx: &NodeCx<'_>) -> CResult<()> {
    let frames: Vec<ResultSet> = sheets_of_inputs(cx)?
        .into_iter()
        .flat_map(|(_, sheets)| sheets.into_iter().map(|(_, rs)| rs))
        .collect();
    if frames.is_empty() {
        cx.set_output("data", json!({}));
        cx.set_output("summary", json!("No data to merge"));
        return Ok(());
    }
    let on = cx.param_str("join_on", "").to_string();
    let merged = if cx.param_str("merge_strategy", "concat") == "join" && !on.is_empty() {
        let mut acc = frames[0].clone();
        for f in &frames[1..] {
            acc = outer_join(&acc, f, &on)
                .ok_or_else(|| ComponentError::Failed(format!("KeyError: '{on}'")))?;
        }
        acc
    } else {
        concat(&frames)
    };
    cx.set_output("data", json!({"merged": frame::records(&merged)}));
    cx.set_output(
        "summary",
        json!(format!(
            "Merged {} sources into {} rows, {} columns",
            frames.len(),
            merged.rows.len(),
            merged.columns.len()
        )),
    );
    cx.set_output("markdown", json!(markdown(&head(&merged, 20))));
    Ok(())
}

/// A JSON value as a frame cell.
fn json_cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Bool(b) => Cell::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cell::Int(i128::from(i)),
            None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cell::Text(s.clone()),
        other => Cell::Json(other.clone()),
    }
}

/// `pd.DataFrame(rows)` of a list: records by key (first-seen order), or one column
/// `0` of scalars.
fn frame_of(rows: &[Value]) -> ResultSet {
    if rows.iter().all(Value::is_object) {
        let mut columns: Vec<String> = Vec::new();
        for r in rows {
            for k in r.as_object().into_iter().flat_map(|o| o.keys()) {
                if !columns.contains(k) {
                    columns.push(k.clone());
                }
            }
        }
        let body = rows
            .iter()
            .map(|r| {
                columns
                    .iter()
                    .map(|c| json_cell(r.get(c).unwrap_or(&Value::Null)))
                    .collect()
            })
            .collect();
        return ResultSet {
            columns,
            rows: body,
        };
    }
    ResultSet {
        columns: vec!["0".into()],
        rows: rows.iter().map(|v| vec![json_cell(v)]).collect(),
    }
}

/// The `transform_data` value, recorded as RAGFlow does (`str(data)[:300]`).
fn transform_value(cx: &NodeCx<'_>) -> CResult<Option<Value>> {
    let r = cx.param_str("transform_data", "").to_string();
    if r.is_empty() {
        return Ok(None);
    }
    let exp = r
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .to_string();
    let v = cx.resolve(&exp)?;
    let shown: String = if canvas_dsl::model::truthy(&v) {
        py_str(&v).chars().take(300).collect()
    } else {
        String::new()
    };
    cx.set_input(&r, json!(shown));
    Ok(Some(v))
}

/// The named frames a value makes (`{sheet: [rows]}`, one object, or a list).
fn frames_of(v: &Value) -> Option<Vec<Sheet>> {
    match v {
        Value::Object(o) if !o.is_empty() && o.values().all(Value::is_array) => Some(
            o.iter()
                .map(|(k, rows)| (k.clone(), frame_of(rows.as_array().map_or(&[][..], |a| a))))
                .collect(),
        ),
        Value::Object(_) => Some(vec![("Sheet1".into(), frame_of(std::slice::from_ref(v)))]),
        Value::Array(a) => Some(vec![("Sheet1".into(), frame_of(a))]),
        _ => None,
    }
}

fn transform(cx: &NodeCx<'_>) -> CResult<()> {
    let Some(data) = transform_value(cx)? else {
        cx.set_output("summary", json!("No transform data reference provided"));
        return Ok(());
    };
    if data.is_null() {
        cx.set_output("summary", json!("Transform data is empty"));
        return Ok(());
    }
    match (&data, frames_of(&data)) {
        (Value::Object(o), Some(sheets)) if !o.is_empty() && o.values().all(Value::is_array) => {
            let md: Vec<String> = sheets
                .iter()
                .map(|(name, rs)| format!("### {name}\n\n{}", markdown(rs)))
                .collect();
            cx.set_output("data", data.clone());
            cx.set_output("markdown", json!(md.join("\n\n")));
        }
        (_, Some(sheets)) => {
            let rs = &sheets[0].1;
            cx.set_output("data", frame::records(rs));
            cx.set_output("markdown", json!(markdown(rs)));
        }
        (other, None) => {
            let text = py_str(other);
            cx.set_output("data", json!({"raw": text}));
            cx.set_output("markdown", json!(text));
        }
    }
    cx.set_output("summary", json!("Transformed data ready for processing"));
    Ok(())
}

/// RAGFlow's sheet names: `\ / * ? : [ ]` replaced, quotes trimmed, `History` avoided,
/// at most 31 characters, unique (case-insensitively) with `_2`, `_3`...
fn sheet_names(names: &[String]) -> Vec<String> {
    let mut used: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for original in names {
        let mut n: String = original
            .chars()
            .map(|c| if "\\/*?:[]".contains(c) { '_' } else { c })
            .collect();
        n = n.trim_matches('\'').to_string();
        if n.to_lowercase() == "history" {
            n.push('_');
        }
        let base: String = n.chars().take(31).collect();
        let base = if base.is_empty() {
            "Sheet".to_string()
        } else {
            base
        };
        let mut name = base.clone();
        let mut counter = 2;
        while used.contains(&name.to_lowercase()) {
            let suffix = format!("_{counter}");
            let keep = 31usize.saturating_sub(suffix.chars().count());
            name = format!("{}{suffix}", base.chars().take(keep).collect::<String>());
            counter += 1;
        }
        used.push(name.to_lowercase());
        out.push(name);
    }
    out
}

/// `df.to_csv(index=False)`.
fn to_csv(rs: &ResultSet) -> Result<Vec<u8>, String> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(&rs.columns).map_err(|e| e.to_string())?;
    let records = frame::records(rs);
    for rec in records.as_array().into_iter().flatten() {
        let fields: Vec<String> = rs
            .columns
            .iter()
            .map(|c| match rec.get(c) {
                None | Some(Value::Null) => String::new(),
                Some(Value::Bool(b)) => if *b { "True" } else { "False" }.into(),
                Some(Value::Number(n)) if n.is_f64() => {
                    let f = n.as_f64().unwrap_or(f64::NAN);
                    if f.fract() == 0.0 && f.abs() < 1e16 {
                        format!("{f:.1}")
                    } else {
                        f.to_string()
                    }
                }
                Some(v) => plain_text(v),
            })
            .collect();
        w.write_record(&fields).map_err(|e| e.to_string())?;
    }
    w.into_inner().map_err(|e| e.to_string())
}

/// An xlsx workbook with one sheet per frame.
fn to_xlsx(sheets: &[Sheet]) -> Result<Vec<u8>, String> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let names: Vec<String> = sheets.iter().map(|(n, _)| n.clone()).collect();
    for ((_, rs), name) in sheets.iter().zip(sheet_names(&names)) {
        let ws = book.add_worksheet();
        ws.set_name(&name).map_err(|e| e.to_string())?;
        let bold = rust_xlsxwriter::Format::new().set_bold();
        for (j, c) in rs.columns.iter().enumerate() {
            ws.write_string_with_format(0, j as u16, c, &bold)
                .map_err(|e| e.to_string())?;
        }
        for (i, row) in rs.rows.iter().enumerate() {
            let r = (i + 1) as u32;
            for (j, cell) in row.iter().enumerate() {
                let col = j as u16;
                let res = match cell {
                    Cell::Null => Ok(&mut *ws),
                    Cell::Bool(b) => ws.write_boolean(r, col, *b),
                    Cell::Int(v) => ws.write_number(r, col, *v as f64),
                    Cell::Float(f) | Cell::Decimal(f, _) if f.is_finite() => {
                        ws.write_number(r, col, *f)
                    }
                    Cell::Float(_) | Cell::Decimal(..) => Ok(&mut *ws),
                    Cell::Text(s) => ws.write_string(r, col, s),
                    Cell::DateTime { text, .. } => ws.write_string(r, col, text),
                    Cell::Timedelta(us) => ws.write_string(r, col, frame::timedelta_str(*us)),
                    Cell::Json(v) => ws.write_string(r, col, py_str(v)),
                };
                res.map_err(|e| e.to_string())?;
            }
        }
    }
    book.save_to_buffer().map_err(|e| e.to_string())
}

/// Where the file goes: `--output-dir`, else the current directory; an existing file
/// is never overwritten (`name-2.ext`, ...).
fn target_path(dir: Option<&Path>, filename: &str) -> PathBuf {
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let first = dir.join(filename);
    if !first.exists() {
        return first;
    }
    let (stem, ext) = filename.rsplit_once('.').unwrap_or((filename, ""));
    (2..)
        .map(|n| dir.join(format!("{stem}-{n}.{ext}")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

fn output(cx: &NodeCx<'_>, format: &str) -> CResult<()> {
    let Some(data) = transform_value(cx)? else {
        cx.set_output("summary", json!("No data reference for output"));
        return Ok(());
    };
    if data.is_null() {
        cx.set_output("summary", json!("No data to output"));
        return Ok(());
    }
    let Some(sheets) = frames_of(&data) else {
        cx.set_output("summary", json!("Invalid data format for Excel output"));
        return Ok(());
    };
    let stem = cx.param_str("output_filename", "output").to_string();
    let (bytes, filename) = if format == "csv" {
        (to_csv(&sheets[0].1), format!("{stem}.csv"))
    } else {
        (to_xlsx(&sheets), format!("{stem}.xlsx"))
    };
    let written = bytes.and_then(|b| {
        let dir = ToolEnv::of(cx).artifacts_dir.as_deref();
        if let Some(d) = dir {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let path = target_path(dir, &filename);
        std::fs::write(&path, &b).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(std::fs::canonicalize(&path).unwrap_or(path))
    });
    match written {
        Ok(path) => {
            let doc_id = ulid::Ulid::new().to_string().to_lowercase();
            cx.set_output(
                "attachment",
                json!({"doc_id": doc_id, "format": format, "file_name": filename,
                    "path": path.to_string_lossy()}),
            );
            let rows: usize = sheets.iter().map(|(_, rs)| rs.rows.len()).sum();
            cx.set_output(
                "summary",
                json!(format!(
                    "Generated {filename} with {} sheet(s), {rows} total rows",
                    sheets.len()
                )),
            );
            let data: Map<String, Value> = sheets
                .iter()
                .map(|(k, rs)| (k.clone(), frame::records(rs)))
                .collect();
            cx.set_output("data", Value::Object(data));
        }
        Err(e) => cx.set_output("summary", json!(format!("Error generating output: {e}"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(cols: &[&str], rows: Vec<Vec<Cell>>) -> ResultSet {
        ResultSet {
            columns: cols.iter().map(|s| s.to_string()).collect(),
            rows,
        }
    }

    #[test]
    fn checks_use_ragflows_messages() {
        let p: Object = serde_json::from_value(json!({"operation": "sort"})).unwrap();
        let e = build(&p).err().unwrap().to_string();
        assert_eq!(
            e,
            "[ExcelProcessor] Operation 'sort' is not supported, it should be in ['read', 'merge', 'transform', 'output']"
        );
        let p: Object = serde_json::from_value(json!({"output_format": "pdf"})).unwrap();
        assert!(build(&p).is_err());
    }

    #[test]
    fn csv_fields_are_typed_as_pandas_does() {
        let f = parse_csv(b"name,qty,price,ok\napple,3,1.5,True\npear,,2,False\n").unwrap();
        assert_eq!(f.columns, ["name", "qty", "price", "ok"]);
        assert_eq!(
            f.rows[0],
            vec![
                Cell::Text("apple".into()),
                Cell::Int(3),
                Cell::Float(1.5),
                Cell::Bool(true)
            ]
        );
        assert_eq!(f.rows[1][1], Cell::Null);
        // qty has a missing value: pandas makes the column float.
        assert_eq!(frame::records(&f)[0]["qty"], json!(3.0));
    }

    #[test]
    fn concat_unions_columns_and_join_is_an_outer_merge_sorted_by_key() {
        let a = rs(
            &["id", "x"],
            vec![
                vec![Cell::Int(2), Cell::Text("b".into())],
                vec![Cell::Int(1), Cell::Text("a".into())],
            ],
        );
        let b = rs(
            &["id", "y"],
            vec![
                vec![Cell::Int(3), Cell::Text("z".into())],
                vec![Cell::Int(1), Cell::Text("w".into())],
            ],
        );
        let c = concat(&[a.clone(), b.clone()]);
        assert_eq!(c.columns, ["id", "x", "y"]);
        assert_eq!(c.rows.len(), 4);
        assert_eq!(
            c.rows[2],
            vec![Cell::Int(3), Cell::Null, Cell::Text("z".into())]
        );
        let j = outer_join(&a, &b, "id").unwrap();
        assert_eq!(j.columns, ["id", "x", "y"]);
        let ids: Vec<Cell> = j.rows.iter().map(|r| r[0].clone()).collect();
        assert_eq!(ids, [Cell::Int(1), Cell::Int(2), Cell::Int(3)]);
        assert_eq!(
            j.rows[0],
            vec![Cell::Int(1), Cell::Text("a".into()), Cell::Text("w".into())]
        );
        assert_eq!(j.rows[2][1], Cell::Null);
        assert!(outer_join(&a, &b, "nope").is_none());
    }

    #[test]
    fn sheet_names_follow_excels_rules() {
        let names: Vec<String> = ["a/b", "History", "A/B", &"x".repeat(40), "'q'"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            sheet_names(&names),
            ["a_b", "History_", "A_B_2", &"x".repeat(31), "q"]
        );
    }

    #[test]
    fn xlsx_written_reads_back() {
        let sheet = rs(
            &["name", "n"],
            vec![
                vec![Cell::Text("é".into()), Cell::Int(7)],
                vec![Cell::Text("z".into()), Cell::Float(2.5)],
            ],
        );
        let bytes = to_xlsx(&[("Data".into(), sheet)]).unwrap();
        let back = parse(&bytes, "out.xlsx", "all");
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].0, "Data");
        assert_eq!(back[0].1.columns, ["name", "n"]);
        assert_eq!(
            back[0].1.rows[0],
            vec![Cell::Text("é".into()), Cell::Int(7)]
        );
        assert_eq!(back[0].1.rows[1][1], Cell::Float(2.5));
    }

    #[test]
    fn csv_output_is_pandas_to_csv() {
        let sheet = rs(
            &["a", "b"],
            vec![
                vec![Cell::Int(1), Cell::Text("x,y".into())],
                vec![Cell::Null, Cell::Bool(true)],
            ],
        );
        let out = String::from_utf8(to_csv(&sheet).unwrap()).unwrap();
        // `a` has a missing value, so pandas writes it as floats.
        assert_eq!(out, "a,b\n1.0,\"x,y\"\n,True\n");
    }
}
