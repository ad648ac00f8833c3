//! What RAGFlow's ExeSQL makes of a result set with pandas: `pd.DataFrame(rows)`, dates
//! formatted `%Y-%m-%d`, `df.where(pd.notnull(df), None)`, then `to_dict("records")`
//! (the `json` output, after `convert_decimals`) and `to_markdown(index=False,
//! floatfmt=".6f")` (tabulate 0.9's "pipe" table, with wcwidth's wide characters).
//!
//! Both depend on the dtype pandas infers per column (ints with a NULL become floats,
//! an all-numeric frame hands numpy scalars to tabulate, which formats them as floats),
//! so the column dtypes are inferred first, as `maybe_convert_objects` does.

use serde_json::{Map, Number, Value};

use super::{Cell, ResultSet};
use canvas_pyrt::{parse_py_float, py_float, py_str};

/// The dtype pandas gives a column built from Python objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dtype {
    Int64,
    UInt64,
    Float64,
    Bool,
    /// `datetime64`: formatted to `%Y-%m-%d` strings (an object column) right away.
    Datetime,
    Timedelta,
    Object,
}

fn infer(cells: &[&Cell]) -> Dtype {
    let mut has_null = false;
    let (mut ints, mut floats, mut bools, mut dts, mut tds, mut other) = (0, 0, 0, 0, 0, 0);
    let (mut fits_i64, mut fits_u64) = (true, true);
    for c in cells {
        match c {
            Cell::Null => has_null = true,
            Cell::Int(i) => {
                ints += 1;
                fits_i64 &= i64::try_from(*i).is_ok();
                fits_u64 &= u64::try_from(*i).is_ok();
            }
            Cell::Float(_) => floats += 1,
            Cell::Bool(_) => bools += 1,
            Cell::DateTime { .. } => dts += 1,
            Cell::Timedelta(_) => tds += 1,
            _ => other += 1,
        }
    }
    let n = ints + floats + bools + dts + tds + other;
    if n == 0 || other > 0 {
        return Dtype::Object;
    }
    if dts == n {
        return Dtype::Datetime;
    }
    if tds == n {
        return Dtype::Timedelta;
    }
    if bools == n {
        return if has_null { Dtype::Object } else { Dtype::Bool };
    }
    if ints + floats == n {
        if floats > 0 || has_null {
            return Dtype::Float64;
        }
        if fits_i64 {
            return Dtype::Int64;
        }
        if fits_u64 {
            return Dtype::UInt64;
        }
    }
    Dtype::Object
}

/// One column after pandas: its dtype and values (`Float64` columns hold `Cell::Float`,
/// NaN standing for missing values; `Datetime` columns are already strings).
struct Column {
    dtype: Dtype,
    cells: Vec<Cell>,
}

fn columns(rs: &ResultSet) -> Vec<Column> {
    (0..rs.columns.len())
        .map(|j| {
            let raw: Vec<&Cell> = rs
                .rows
                .iter()
                .map(|r| r.get(j).unwrap_or(&Cell::Null))
                .collect();
            let dtype = infer(&raw);
            let cells = raw
                .into_iter()
                .map(|c| match (dtype, c) {
                    (Dtype::Float64, Cell::Int(i)) => Cell::Float(*i as f64),
                    (Dtype::Float64, Cell::Null) => Cell::Float(f64::NAN),
                    (Dtype::Datetime, Cell::DateTime { day, .. }) => Cell::Text(day.clone()),
                    // `where(notnull, None)` turns an object column's NaN into None.
                    (Dtype::Object, Cell::Float(f)) if f.is_nan() => Cell::Null,
                    (_, c) => c.clone(),
                })
                .collect();
            let dtype = if dtype == Dtype::Datetime {
                Dtype::Object
            } else {
                dtype
            };
            Column { dtype, cells }
        })
        .collect()
}

/// pandas' `str(Timedelta)`: `-1 days +23:00:00`, `0 days 00:00:00.500000`.
pub fn timedelta_str(micros: i64) -> String {
    let total = i128::from(micros);
    let day = 86_400_000_000i128;
    let days = total.div_euclid(day);
    let rest = total.rem_euclid(day);
    let (secs, frac) = (rest / 1_000_000, rest % 1_000_000);
    let sign = if total < 0 { "+" } else { "" };
    let mut s = format!(
        "{days} days {sign}{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if frac != 0 {
        s.push_str(&format!(".{frac:06}"));
    }
    s
}

fn number_f64(f: f64) -> Value {
    Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn int_value(i: i128) -> Value {
    if let Ok(v) = i64::try_from(i) {
        Value::from(v)
    } else if let Ok(v) = u64::try_from(i) {
        Value::from(v)
    } else {
        number_f64(i as f64)
    }
}

/// `to_dict` then `convert_decimals`: NaN/inf → null, decimals → float.
fn json_value(c: &Cell) -> Value {
    match c {
        Cell::Null => Value::Null,
        Cell::Bool(b) => Value::Bool(*b),
        Cell::Int(i) => int_value(*i),
        Cell::Float(f) | Cell::Decimal(f, _) => number_f64(*f),
        Cell::Text(s) => Value::String(s.clone()),
        Cell::DateTime { text, .. } => Value::String(text.clone()),
        Cell::Timedelta(us) => Value::String(timedelta_str(*us)),
        Cell::Json(v) => v.clone(),
    }
}

/// The `json` entry of one result set: a list of records.
pub fn records(rs: &ResultSet) -> Value {
    let cols = columns(rs);
    let rows = (0..rs.rows.len())
        .map(|i| {
            let mut rec = Map::new();
            for (name, col) in rs.columns.iter().zip(&cols) {
                rec.insert(name.clone(), json_value(&col.cells[i]));
            }
            Value::Object(rec)
        })
        .collect();
    Value::Array(rows)
}

/// A value as tabulate receives it from `df.values`.
#[derive(Debug, Clone, PartialEq)]
enum TCell {
    None,
    Bool(bool),
    Int(i128),
    /// A Python float, or a numpy number (formatted as a float).
    Float(f64),
    /// A numpy `timedelta64[ns]`: a number whose `str()` is `N nanoseconds`.
    NpTimedelta(i128),
    /// `decimal.Decimal`: a number, its text.
    Decimal(f64, String),
    /// A Python `str`: tabulate parses numbers and booleans out of it.
    Str(String),
    /// Any other object, by its `str()` (always typed as text).
    Obj(String),
}

/// `df.values`: one dtype for the whole frame. Without an object column the values are
/// numpy scalars, which tabulate 0.9 does not take for ints, so they come out as floats.
fn table_cells(cols: &[Column]) -> Vec<Vec<TCell>> {
    let numeric = |d: Dtype| matches!(d, Dtype::Int64 | Dtype::UInt64 | Dtype::Float64);
    let dtypes: Vec<Dtype> = cols.iter().map(|c| c.dtype).collect();
    let all_numpy = !dtypes.is_empty()
        && (dtypes.iter().all(|d| numeric(*d))
            || dtypes.iter().all(|d| *d == Dtype::Bool)
            || dtypes.iter().all(|d| *d == Dtype::Timedelta));
    cols.iter()
        .map(|col| {
            col.cells
                .iter()
                .map(|c| match (all_numpy, col.dtype, c) {
                    (true, Dtype::Timedelta, Cell::Timedelta(us)) => {
                        TCell::NpTimedelta(i128::from(*us) * 1000)
                    }
                    (true, Dtype::Timedelta, _) => TCell::Obj("NaT".into()),
                    (true, _, Cell::Bool(b)) => TCell::Float(if *b { 1.0 } else { 0.0 }),
                    (true, _, Cell::Int(i)) => TCell::Float(*i as f64),
                    (true, _, Cell::Float(f)) => TCell::Float(*f),
                    (_, Dtype::Timedelta, Cell::Null) => TCell::Obj("NaT".into()),
                    (_, _, c) => object_cell(c),
                })
                .collect()
        })
        .collect()
}

fn object_cell(c: &Cell) -> TCell {
    match c {
        Cell::Null => TCell::None,
        Cell::Bool(b) => TCell::Bool(*b),
        Cell::Int(i) => TCell::Int(*i),
        Cell::Float(f) => TCell::Float(*f),
        Cell::Decimal(f, s) => TCell::Decimal(*f, s.clone()),
        Cell::Text(s) => TCell::Str(s.clone()),
        Cell::DateTime { text, .. } => TCell::Obj(text.clone()),
        Cell::Timedelta(us) => TCell::Obj(timedelta_str(*us)),
        Cell::Json(v) => TCell::Obj(py_str(v)),
    }
}

/// How tabulate formats float columns (`floatfmt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatFmt {
    /// `".6f"` (ExeSQL).
    F6,
    /// `"g"`, tabulate's default (pandas `to_markdown()` without `floatfmt`).
    G,
}

/// The `formalized_content` entry of one result set.
pub fn markdown(rs: &ResultSet) -> String {
    markdown_with(rs, FloatFmt::F6)
}

/// `df.to_markdown(index=False, floatfmt=...)` of a frame.
pub fn markdown_with(rs: &ResultSet, ff: FloatFmt) -> String {
    let cols = columns(rs);
    pipe_table(&rs.columns, &table_cells(&cols), ff)
}

// ---- tabulate 0.9 ("pipe", numalign "decimal", stralign "left", missingval "") ----

/// tabulate's column types, least generic first (`_more_generic`).
const T_BOOL: u8 = 1;
const T_INT: u8 = 2;
const T_FLOAT: u8 = 3;
const T_STR: u8 = 5;

/// Python `str.isspace()` for one character.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn py_strip(s: &str) -> &str {
    s.trim_matches(py_space)
}

/// Python `int(s)` succeeds (base 10, surrounding white space, `_` between digits).
fn py_int_ok(s: &str) -> bool {
    let t = py_strip(s);
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let b = t.as_bytes();
    !b.is_empty()
        && b.first().is_some_and(u8::is_ascii_digit)
        && b.last().is_some_and(u8::is_ascii_digit)
        && b.iter().all(|c| c.is_ascii_digit() || *c == b'_')
        && !t.contains("__")
}

/// tabulate's `_isnumber` for a string.
fn is_number_str(s: &str) -> bool {
    match parse_py_float(s) {
        None => false,
        Some(f) if f.is_nan() || f.is_infinite() => {
            matches!(s.to_lowercase().as_str(), "inf" | "-inf" | "nan")
        }
        Some(_) => true,
    }
}

/// tabulate's `_isnumber_with_thousands_separator` (`1,000.5`, `.5`, and `""`).
fn is_number_with_thousands(s: &str) -> bool {
    // Python's `$` also matches before a final newline.
    let s = s.strip_suffix('\n').unwrap_or(s);
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let lead = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if lead == 0 {
        // No integer part: only `(\.[0-9]+)?`, without a sign.
        return i == 0
            && (b.is_empty()
                || (b[0] == b'.' && b.len() > 1 && b[1..].iter().all(u8::is_ascii_digit)));
    }
    if lead > 3 {
        return false;
    }
    i += lead;
    while i < b.len() && b[i] == b',' {
        if b.len() < i + 4 || !b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            return false;
        }
        i += 4;
    }
    if i == b.len() {
        return true;
    }
    b[i] == b'.' && b[i + 1..].iter().all(u8::is_ascii_digit)
}

fn cell_type(c: &TCell) -> u8 {
    match c {
        TCell::None => 0,
        TCell::Bool(_) => T_BOOL,
        TCell::Int(_) => T_INT,
        TCell::Float(_) | TCell::NpTimedelta(_) | TCell::Decimal(..) => T_FLOAT,
        TCell::Obj(_) => T_STR,
        TCell::Str(s) => {
            if s == "True" || s == "False" {
                T_BOOL
            } else if py_int_ok(s) {
                T_INT
            } else if is_number_str(s) {
                T_FLOAT
            } else {
                T_STR
            }
        }
    }
}

/// Python `str(v)`.
fn cell_str(c: &TCell) -> String {
    match c {
        TCell::None => "None".into(),
        TCell::Bool(b) => if *b { "True" } else { "False" }.into(),
        TCell::Int(i) => i.to_string(),
        TCell::Float(f) => py_float(*f),
        TCell::NpTimedelta(ns) => format!("{ns} nanoseconds"),
        TCell::Decimal(_, s) | TCell::Str(s) | TCell::Obj(s) => s.clone(),
    }
}

/// Python `format(x, ".6f")`.
fn fmt_f6(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{f:.6}")
    }
}

/// Python `format(x, "g")`: 6 significant digits, trailing zeros dropped, scientific
/// notation below 1e-4 and from 1e6.
pub fn fmt_g(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // The exponent after rounding to 6 significant digits.
    let sci = format!("{f:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..6).contains(&exp) {
        let decimals = (5 - exp).max(0) as usize;
        trim(&format!("{f:.decimals$}"))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

/// tabulate's `_format`.
fn format_cell(c: &TCell, coltype: u8, ff: FloatFmt) -> String {
    if *c == TCell::None {
        return String::new();
    }
    match coltype {
        T_FLOAT => {
            let f = match c {
                TCell::Bool(b) => f64::from(u8::from(*b)),
                TCell::Int(i) => *i as f64,
                TCell::Float(f) | TCell::Decimal(f, _) => *f,
                TCell::NpTimedelta(ns) => *ns as f64,
                TCell::Str(s) => parse_py_float(s).unwrap_or(f64::NAN),
                TCell::Obj(_) | TCell::None => f64::NAN,
            };
            match ff {
                FloatFmt::F6 => fmt_f6(f),
                FloatFmt::G => fmt_g(f),
            }
        }
        _ => cell_str(c),
    }
}

/// Characters after the decimal point, -1 without one (`_afterpoint`).
fn afterpoint(s: &str) -> i64 {
    if !(is_number_str(s) || is_number_with_thousands(s)) || py_int_ok(s) {
        return -1;
    }
    let chars: Vec<char> = s.chars().collect();
    let pos = chars
        .iter()
        .rposition(|c| *c == '.')
        .or_else(|| chars.iter().rposition(|c| c.eq_ignore_ascii_case(&'e')));
    match pos {
        Some(p) => (chars.len() - p - 1) as i64,
        None => -1,
    }
}

/// wcwidth 0.2's `wcswidth`: -1 when a character is non-printable.
fn wcswidth(s: &str) -> i64 {
    let mut total = 0i64;
    for c in s.chars() {
        let w = match c {
            '\0' | '\u{34f}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' => 0,
            '\u{2060}'..='\u{2063}' => 0,
            c if c < ' ' || ('\u{7f}'..'\u{a0}').contains(&c) => return -1,
            c => unicode_width::UnicodeWidthChar::width(c).unwrap_or(0) as i64,
        };
        total += w;
    }
    total
}

/// `re.split("[\r\n]", s)`.
fn split_cr_lf(s: &str) -> Vec<&str> {
    s.split(['\r', '\n']).collect()
}

/// Python `str.splitlines()`.
fn splitlines(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let brk = matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !brk {
            continue;
        }
        out.push(&s[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r' && it.peek().is_some_and(|(_, n)| *n == '\n') {
            it.next();
            end += 1;
        }
        start = end;
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

fn char_len(s: &str) -> i64 {
    s.chars().count() as i64
}

/// `"{0:<%ds}".format(s)` / `"{0:>%ds}".format(s)`: pads by characters.
fn pad(s: &str, width: i64, left_align: bool) -> String {
    let fill = (width - char_len(s)).max(0) as usize;
    if left_align {
        format!("{s}{}", " ".repeat(fill))
    } else {
        format!("{}{s}", " ".repeat(fill))
    }
}

/// The visible width of a cell (the widest line in multiline mode).
fn width_of(s: &str, multiline: bool) -> i64 {
    if multiline {
        split_cr_lf(s).into_iter().map(wcswidth).max().unwrap_or(0)
    } else {
        wcswidth(s)
    }
}

/// `_align_column` with wide characters on and no ANSI codes.
fn align_column(
    strings: Vec<String>,
    decimal: bool,
    minwidth: i64,
    multiline: bool,
) -> Vec<String> {
    let strings: Vec<String> = if decimal {
        let decs: Vec<i64> = strings.iter().map(|s| afterpoint(s)).collect();
        let maxdec = decs.iter().copied().max().unwrap_or(-1);
        strings
            .into_iter()
            .zip(decs)
            .map(|(s, d)| format!("{s}{}", " ".repeat((maxdec - d).max(0) as usize)))
            .collect()
    } else {
        strings.iter().map(|s| py_strip(s).to_string()).collect()
    };
    let left = !decimal;
    let widths: Vec<Vec<i64>> = strings
        .iter()
        .map(|s| {
            if multiline {
                split_cr_lf(s).into_iter().map(wcswidth).collect()
            } else {
                vec![wcswidth(s)]
            }
        })
        .collect();
    let maxwidth = widths
        .iter()
        .flatten()
        .copied()
        .max()
        .unwrap_or(0)
        .max(minwidth);
    strings
        .iter()
        .zip(&widths)
        .map(|(s, ws)| {
            if multiline {
                let lens: Vec<i64> = split_cr_lf(s).into_iter().map(char_len).collect();
                let visible: Vec<i64> = ws
                    .iter()
                    .zip(&lens)
                    .map(|(w, l)| maxwidth - (w - l))
                    .collect();
                splitlines(s)
                    .into_iter()
                    .zip(visible)
                    .map(|(line, w)| pad(line, w, left))
                    .collect::<Vec<_>>()
                    .join("\n")
            } else {
                pad(s, maxwidth - (ws[0] - char_len(s)), left)
            }
        })
        .collect()
}

/// `_align_header`.
fn align_header(h: &str, decimal: bool, width: i64, multiline: bool) -> String {
    if multiline {
        return split_cr_lf(h)
            .into_iter()
            .map(|line| align_header(line, decimal, width, false))
            .collect::<Vec<_>>()
            .join("\n");
    }
    let width = width + (char_len(h) - wcswidth(h));
    pad(h, width, !decimal)
}

/// One table row (`_build_simple_row` with padding 1); several lines in multiline mode,
/// none when every cell is empty (as tabulate drops such rows).
fn push_row(lines: &mut Vec<String>, cells: &[String], widths: &[i64], multiline: bool) {
    if !multiline {
        lines.push(format!("| {} |", cells.join(" | ")));
        return;
    }
    let cell_lines: Vec<Vec<&str>> = cells.iter().map(|c| splitlines(c)).collect();
    let n = cell_lines.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..n {
        let parts: Vec<String> = cell_lines
            .iter()
            .zip(widths)
            .map(|(cl, w)| {
                cl.get(i)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| " ".repeat((*w).max(0) as usize))
            })
            .collect();
        lines.push(format!("| {} |", parts.join(" | ")));
    }
}

/// `tabulate(rows, headers, tablefmt="pipe", floatfmt=".6f")`, rows given by column.
fn pipe_table(headers: &[String], cols: &[Vec<TCell>], ff: FloatFmt) -> String {
    if headers.is_empty() {
        return String::new();
    }
    let multiline = headers
        .iter()
        .map(String::as_str)
        .chain(cols.iter().flatten().map(|c| match c {
            TCell::Str(s) | TCell::Obj(s) => s.as_str(),
            _ => "",
        }))
        .any(|s| s.contains(['\r', '\n']));
    let types: Vec<u8> = cols
        .iter()
        .map(|c| c.iter().map(cell_type).fold(T_BOOL, u8::max))
        .collect();
    let decimal: Vec<bool> = types.iter().map(|t| *t == T_INT || *t == T_FLOAT).collect();
    let mut aligned = Vec::with_capacity(cols.len());
    let mut widths = Vec::with_capacity(cols.len());
    for (j, col) in cols.iter().enumerate() {
        let h = headers.get(j).map(String::as_str).unwrap_or("");
        let minw = width_of(h, multiline) + 2;
        let strings = col.iter().map(|c| format_cell(c, types[j], ff)).collect();
        let a = align_column(strings, decimal[j], minw, multiline);
        let w = a
            .iter()
            .map(|s| width_of(s, multiline))
            .max()
            .unwrap_or(0)
            .max(minw);
        aligned.push(a);
        widths.push(w);
    }
    let head: Vec<String> = headers
        .iter()
        .zip(&decimal)
        .zip(&widths)
        .map(|((h, d), w)| align_header(h, *d, *w, multiline))
        .collect();
    let mut lines = Vec::new();
    push_row(&mut lines, &head, &widths, multiline);
    let rule: Vec<String> = decimal
        .iter()
        .zip(&widths)
        .map(|(d, w)| {
            let dashes = "-".repeat((*w + 1).max(0) as usize);
            if *d {
                format!("{dashes}:")
            } else {
                format!(":{dashes}")
            }
        })
        .collect();
    lines.push(format!("|{}|", rule.join("|")));
    let nrows = cols.first().map(Vec::len).unwrap_or(0);
    for i in 0..nrows {
        let row: Vec<String> = aligned.iter().map(|c| c[i].clone()).collect();
        push_row(&mut lines, &row, &widths, multiline);
    }
    lines.join("\n")
}

#[cfg(test)]
mod fmt_g_tests {
    use super::fmt_g;

    #[test]
    fn general_format_matches_python() {
        // Values from Python's format(x, "g").
        for (x, want) in [
            (1.5, "1.5"),
            (2.0, "2"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (1.23456789, "1.23457"),
            (-2.5e-7, "-2.5e-07"),
            (100000.4, "100000"),
            (999999.5, "1e+06"),
        ] {
            assert_eq!(fmt_g(x), want, "{x}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs(columns: &[&str], rows: Vec<Vec<Cell>>) -> ResultSet {
        ResultSet {
            columns: columns.iter().map(|s| s.to_string()).collect(),
            rows,
        }
    }

    fn text(s: &str) -> Cell {
        Cell::Text(s.into())
    }

    fn dt(day: &str, time: &str) -> Cell {
        Cell::DateTime {
            day: day.into(),
            text: format!("{day} {time}"),
        }
    }

    // Expected tables below follow tabulate's rules by hand: width = max(header + 2,
    // widest cell); numbers right-aligned on the decimal point ("-…:" rule), text
    // left-aligned (":-…" rule); a missing value is an empty cell.

    #[test]
    fn mixed_frame_keeps_ints_and_formats_floats() {
        let r = rs(
            &["id", "price", "name", "seen"],
            vec![
                vec![
                    Cell::Int(1),
                    Cell::Float(1.5),
                    text("apple"),
                    dt("2024-01-05", "10:30:00"),
                ],
                vec![Cell::Int(22), Cell::Null, Cell::Null, Cell::Null],
            ],
        );
        // `id`: ints, width 4 ("id" + 2). `price`: float with a NaN ("nan" padded by 7 on
        // the right to line up with 6 decimals); width 10. `name`/`seen`: text.
        let expected = "\
|   id |      price | name   | seen       |
|-----:|-----------:|:-------|:-----------|
|    1 |   1.500000 | apple  | 2024-01-05 |
|   22 | nan        |        |            |";
        assert_eq!(markdown(&r), expected);
        assert_eq!(
            records(&r),
            json!([
                {"id": 1, "price": 1.5, "name": "apple", "seen": "2024-01-05"},
                {"id": 22, "price": null, "name": null, "seen": null}
            ])
        );
    }

    #[test]
    fn all_numeric_frame_prints_ints_as_floats() {
        // df.values is an int64/float64 array: tabulate sees numpy scalars, not ints.
        let r = rs(
            &["n", "x"],
            vec![
                vec![Cell::Int(-1), Cell::Float(2.25)],
                vec![Cell::Int(100), Cell::Float(0.5)],
            ],
        );
        let expected = "\
|          n |        x |
|-----------:|---------:|
|  -1.000000 | 2.250000 |
| 100.000000 | 0.500000 |";
        assert_eq!(markdown(&r), expected);
        assert_eq!(
            records(&r),
            json!([{"n": -1, "x": 2.25}, {"n": 100, "x": 0.5}])
        );
    }

    #[test]
    fn int_column_with_null_becomes_float() {
        let r = rs(
            &["k", "s"],
            vec![vec![Cell::Int(3), text("a")], vec![Cell::Null, text("b")]],
        );
        let md = markdown(&r);
        assert_eq!(
            md,
            "\
|          k | s   |
|-----------:|:----|
|   3.000000 | a   |
| nan        | b   |"
        );
        // pandas turned the column into float64: 3 is 3.0, and the NaN becomes null.
        let j = records(&r);
        assert_eq!(j[0]["k"], json!(3.0));
        assert!(j[0]["k"].is_f64());
        assert_eq!(j[1]["k"], Value::Null);
    }

    #[test]
    fn decimals_are_floats_and_text_that_looks_numeric_is_a_number() {
        let r = rs(
            &["amount", "code"],
            vec![
                vec![Cell::Decimal(10.0, "10.00".into()), text("12")],
                vec![Cell::Decimal(0.125, "0.125".into()), text("3.5")],
            ],
        );
        let expected = "\
|    amount |      code |
|----------:|----------:|
| 10.000000 | 12.000000 |
|  0.125000 |  3.500000 |";
        assert_eq!(markdown(&r), expected);
        // JSON keeps the strings as strings and turns decimals into floats.
        assert_eq!(
            records(&r),
            json!([{"amount": 10.0, "code": "12"}, {"amount": 0.125, "code": "3.5"}])
        );
    }

    #[test]
    fn booleans_text_and_all_null_columns() {
        let r = rs(
            &["flag", "nothing"],
            vec![
                vec![Cell::Bool(true), Cell::Null],
                vec![Cell::Bool(false), Cell::Null],
            ],
        );
        // bool + object frame: Python bools, a "bool" column (left-aligned); the all-None
        // column is a bool column too (tabulate starts its reduce at bool).
        let expected = "\
| flag   | nothing   |
|:-------|:----------|
| True   |           |
| False  |           |";
        assert_eq!(markdown(&r), expected);
        // Only bools: a numpy bool array, formatted as floats.
        let only = rs(
            &["b"],
            vec![vec![Cell::Bool(true)], vec![Cell::Bool(false)]],
        );
        assert_eq!(
            markdown(&only),
            "\
|        b |
|---------:|
| 1.000000 |
| 0.000000 |"
        );
    }

    #[test]
    fn text_is_stripped_and_wide_characters_count_twice() {
        let r = rs(
            &["名前", "v"],
            vec![
                vec![text("  東京 "), text("x")],
                vec![text("ab"), text("yz")],
            ],
        );
        // Header "名前" is 4 columns wide, so the column is 6 wide; "東京" fills 4 of them.
        let expected = "\
| 名前   | v   |
|:-------|:----|
| 東京   | x   |
| ab     | yz  |";
        assert_eq!(markdown(&r), expected);
    }

    #[test]
    fn multiline_cells_split_rows_and_empty_rows_vanish() {
        let r = rs(
            &["a", "b"],
            vec![
                vec![text("one\ntwo"), text("x")],
                vec![text(""), Cell::Null],
                vec![text("z"), text("w")],
            ],
        );
        // The all-empty second row has no lines at all in tabulate's multiline mode.
        let expected = "\
| a   | b   |
|:----|:----|
| one | x   |
| two |     |
| z   | w   |";
        assert_eq!(markdown(&r), expected);
    }

    #[test]
    fn json_values_print_as_python_reprs() {
        let r = rs(
            &["doc"],
            vec![
                vec![Cell::Json(json!({"a": 1, "b": [true, null]}))],
                vec![Cell::Json(json!(["x"]))],
            ],
        );
        let expected = "\
| doc                         |
|:----------------------------|
| {'a': 1, 'b': [True, None]} |
| ['x']                       |";
        assert_eq!(markdown(&r), expected);
        assert_eq!(
            records(&r),
            json!([{"doc": {"a": 1, "b": [true, null]}}, {"doc": ["x"]}])
        );
    }

    #[test]
    fn timedeltas_as_pandas_prints_them() {
        assert_eq!(timedelta_str(36_000_000_000), "0 days 10:00:00");
        assert_eq!(timedelta_str(-3_600_000_000), "-1 days +23:00:00");
        assert_eq!(timedelta_str(500_000), "0 days 00:00:00.500000");
        let r = rs(
            &["t", "s"],
            vec![vec![Cell::Timedelta(3_600_000_000), text("a")]],
        );
        assert_eq!(
            markdown(&r),
            "\
| t               | s   |
|:----------------|:----|
| 0 days 01:00:00 | a   |"
        );
    }

    #[test]
    fn nan_and_infinity_are_null_in_json() {
        let r = rs(
            &["f"],
            vec![vec![Cell::Float(f64::INFINITY)], vec![Cell::Float(2.0)]],
        );
        assert_eq!(records(&r), json!([{"f": null}, {"f": 2.0}]));
        assert_eq!(
            markdown(&r),
            "\
|          f |
|-----------:|
| inf        |
|   2.000000 |"
        );
    }

    #[test]
    fn tabulate_number_tests() {
        assert!(
            py_int_ok(" 12 ") && py_int_ok("-1_000") && !py_int_ok("1__0") && !py_int_ok("1.0")
        );
        assert!(is_number_str("1e5") && is_number_str("nan") && !is_number_str("Infinity"));
        assert!(is_number_with_thousands("1,000.5") && is_number_with_thousands(""));
        assert!(!is_number_with_thousands("1000") && !is_number_with_thousands("1,00"));
        assert_eq!(afterpoint("1.500000"), 6);
        assert_eq!(afterpoint("nan"), -1);
        assert_eq!(afterpoint("12"), -1);
        assert_eq!(afterpoint("1e5"), 1);
        assert_eq!(splitlines("a\r\nb\n"), vec!["a", "b"]);
        assert_eq!(wcswidth("a中"), 3);
        assert_eq!(wcswidth("a\tb"), -1);
    }
}
