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
pub use canvas_pyrt::FloatFmt;
use canvas_pyrt::{TableCell as TCell, pipe_table, py_str};

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

/// The `formalized_content` entry of one result set.
pub fn markdown(rs: &ResultSet) -> String {
    markdown_with(rs, FloatFmt::F6)
}

/// `df.to_markdown(index=False, floatfmt=...)` of a frame.
pub fn markdown_with(rs: &ResultSet, ff: FloatFmt) -> String {
    let cols = columns(rs);
    pipe_table(&rs.columns, &table_cells(&cols), ff)
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
}
