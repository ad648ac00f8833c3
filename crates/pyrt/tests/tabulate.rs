//! `canvas_pyrt::pipe_table` against tabulate 0.9 with wcwidth (pinned in the virtual
//! environment `scripts/test-python.sh` makes), which ExeSQL's and ExcelProcessor's
//! markdown tables come from in RAGFlow: seeded random tables of ints, floats, bools,
//! empty cells and strings (numbers as text, thousands separators, white space,
//! multiline text, wide characters), with both float formats. Tables tabulate itself
//! fails on are left out.
//!
//! Without the environment the test fails under `CI=true` and is skipped otherwise.

mod common;

use canvas_pyrt::{FloatFmt, TableCell, pipe_table};
use serde_json::{Value, json};

/// Python side: `[headers, rows, floatfmt]` a line; prints the table, or null where
/// tabulate raises (a float column with a text it cannot convert, `1,000`).
const PYTHON: &str = r#"
import json, sys
from tabulate import tabulate
for line in sys.stdin:
    headers, rows, floatfmt = json.loads(line)
    try:
        print(json.dumps(tabulate(rows, headers=headers, tablefmt="pipe",
                                  floatfmt=floatfmt, showindex=False)))
    except ValueError:
        print("null")
"#;

/// A deterministic xorshift, so every run checks the same cases.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Cells a column of one kind is made of.
fn cell(seed: &mut u64, kind: u64) -> Value {
    let texts = [
        "a",
        "Ada Lovelace",
        "12",
        " 7 ",
        "-3",
        "1,000",
        "1,000.5",
        "3.25",
        "1e5",
        "inf",
        "nan",
        "True",
        "x\ny",
        "中文",
        "é",
        "",
        "0.1",
        "007",
        "1_000",
        "１２",
    ];
    if rng(seed) % 7 == 0 {
        return Value::Null;
    }
    match kind {
        0 => json!((rng(seed) % 2_000_001) as i64 - 1_000_000),
        1 => {
            let digits = (rng(seed) % 20_000_000) as f64 - 1e7;
            json!(digits * 10f64.powi((rng(seed) % 12) as i32 - 8))
        }
        2 => json!(rng(seed) % 2 == 0),
        3 => json!(texts[(rng(seed) % texts.len() as u64) as usize]),
        _ => match rng(seed) % 4 {
            0 => json!((rng(seed) % 1000) as i64),
            1 => json!((rng(seed) % 1000) as f64 / 8.0),
            2 => json!(rng(seed) % 2 == 0),
            _ => json!(texts[(rng(seed) % texts.len() as u64) as usize]),
        },
    }
}

fn table_cell(v: &Value) -> TableCell {
    match v {
        Value::Null => TableCell::None,
        Value::Bool(b) => TableCell::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => TableCell::Int(i128::from(i)),
            None => TableCell::Float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => TableCell::Str(s.clone()),
        other => TableCell::Obj(other.to_string()),
    }
}

#[test]
fn pipe_tables_match_tabulate() {
    let mut seed = 0x7ab1_e5ee_d000_0009_u64;
    let heads = ["id", "name", "价格", "", "a b", "value"];
    let mut cases = Vec::new();
    for _ in 0..1500 {
        let ncols = 1 + (rng(&mut seed) % 4) as usize;
        let nrows = (rng(&mut seed) % 5) as usize;
        let headers: Vec<&str> = (0..ncols)
            .map(|_| heads[(rng(&mut seed) % heads.len() as u64) as usize])
            .collect();
        let kinds: Vec<u64> = (0..ncols).map(|_| rng(&mut seed) % 5).collect();
        let rows: Vec<Vec<Value>> = (0..nrows)
            .map(|_| kinds.iter().map(|k| cell(&mut seed, *k)).collect())
            .collect();
        let fmt = if rng(&mut seed) % 2 == 0 { "g" } else { ".6f" };
        cases.push(json!([headers, rows, fmt]));
    }
    let Some(theirs) = common::venv_json(PYTHON, &cases) else {
        return;
    };
    assert_eq!(theirs.len(), cases.len());
    let mut compared = 0;
    for (case, want) in cases.iter().zip(&theirs) {
        if want.is_null() {
            continue;
        }
        compared += 1;
        let headers: Vec<String> = case[0]
            .as_array()
            .into_iter()
            .flatten()
            .map(|h| h.as_str().unwrap_or_default().to_string())
            .collect();
        let rows = case[1].as_array().cloned().unwrap_or_default();
        let cols: Vec<Vec<TableCell>> = (0..headers.len())
            .map(|j| rows.iter().map(|r| table_cell(&r[j])).collect())
            .collect();
        let ff = if case[2] == "g" {
            FloatFmt::G
        } else {
            FloatFmt::F6
        };
        let ours = pipe_table(&headers, &cols, ff);
        assert_eq!(Some(ours.as_str()), want.as_str(), "{case}");
    }
    assert!(compared > 1000, "only {compared} tables were compared");
}
