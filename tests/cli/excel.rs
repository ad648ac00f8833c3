//! ExcelProcessor end to end: a referenced value written as an xlsx workbook, that
//! workbook read back into records and a markdown table, two CSV files merged.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::CanvasCli;

/// Begin (one `object` input `x`) → ExcelProcessor with `params` → Message.
fn flow(dir: &Path, params: Value, begin_type: &str) -> String {
    let c = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {"inputs": {"x": {"name": "x", "type": begin_type}, "y": {"name": "y", "type": begin_type, "optional": true}}}}, "downstream": ["ExcelProcessor:X"], "upstream": []},
        "ExcelProcessor:X": {"obj": {"component_name": "ExcelProcessor", "params": params}, "downstream": ["Message:M"], "upstream": ["begin"]},
        "Message:M": {"obj": {"component_name": "Message", "params": {"content": ["{ExcelProcessor:X@summary}"]}}, "downstream": [], "upstream": ["ExcelProcessor:X"]},
    }});
    let p = dir.join("flow.json");
    std::fs::write(&p, c.to_string()).unwrap();
    p.to_string_lossy().into_owned()
}

/// Run and return the ExcelProcessor's outputs.
fn outputs(flow: &str, inputs: &[String], out_dir: &Path) -> Value {
    let mut c = CanvasCli::new()
        .args(["run", flow, "--format", "jsonl", "--output-dir"])
        .arg(out_dir);
    for i in inputs {
        c = c.args(["-i", i]);
    }
    let evs = c.run().code(0).events();
    evs.iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "ExcelProcessor:X")
        .map(|e| e["data"]["outputs"].clone())
        .unwrap_or_else(|| panic!("{evs:#?}"))
}

#[test]
fn a_workbook_written_from_data_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let write = flow(
        dir.path(),
        json!({"operation": "output", "transform_data": "{begin@x}", "output_format": "xlsx", "output_filename": "report"}),
        "object",
    );
    let data = json!({"Sales": [{"region": "north", "units": 3}, {"region": "south", "units": 5}],
                      "Notes": [{"text": "ok"}]});
    let o = outputs(&write, &[format!("x={data}")], &out_dir);
    assert_eq!(
        o["summary"],
        "Generated report.xlsx with 2 sheet(s), 3 total rows"
    );
    assert_eq!(o["attachment"]["format"], "xlsx");
    assert_eq!(o["attachment"]["file_name"], "report.xlsx");
    let path = o["attachment"]["path"].as_str().unwrap().to_string();
    assert!(
        path.starts_with(out_dir.canonicalize().unwrap().to_str().unwrap()),
        "{path}"
    );

    // A second file of the same name does not overwrite the first.
    let again = outputs(&write, &[format!("x={data}")], &out_dir);
    assert!(
        again["attachment"]["path"]
            .as_str()
            .unwrap()
            .ends_with("report-2.xlsx")
    );

    let read = flow(
        dir.path(),
        json!({"operation": "read", "input_files": ["{begin@x}"], "sheet_selection": "Sales"}),
        "line",
    );
    let o = outputs(&read, &[format!("x={path}")], &out_dir);
    assert_eq!(
        o["data"],
        json!({"report.xlsx": [{"region": "north", "units": 3}, {"region": "south", "units": 5}]})
    );
    assert_eq!(
        o["summary"],
        "**report.xlsx**: 2 rows, 2 columns (region, units)"
    );
    assert_eq!(
        o["markdown"],
        "### report.xlsx\n\n| region   |   units |\n|:---------|--------:|\n| north    |       3 |\n| south    |       5 |\n"
    );

    let all = flow(
        dir.path(),
        json!({"operation": "read", "input_files": ["{begin@x}"]}),
        "line",
    );
    let o = outputs(&all, &[format!("x={path}")], &out_dir);
    let keys: Vec<&String> = o["data"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["report.xlsx_Sales", "report.xlsx_Notes"]);
}

#[test]
fn csv_files_are_merged_and_written() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    let b = dir.path().join("b.csv");
    std::fs::write(&a, "id,name\n1,ann\n2,bob\n").unwrap();
    std::fs::write(&b, "id,score\n2,9.5\n3,7\n").unwrap();
    let concat = flow(
        dir.path(),
        json!({"operation": "merge", "input_files": ["{begin@x}", "{begin@y}"]}),
        "line",
    );
    let inputs = [format!("x={}", a.display()), format!("y={}", b.display())];
    let o = outputs(&concat, &inputs, dir.path());
    assert_eq!(o["summary"], "Merged 2 sources into 4 rows, 3 columns");
    assert_eq!(
        o["data"]["merged"][2],
        json!({"id": 2, "name": null, "score": 9.5})
    );

    let join = flow(
        dir.path(),
        json!({"operation": "merge", "merge_strategy": "join", "join_on": "id", "input_files": ["{begin@x}", "{begin@y}"]}),
        "line",
    );
    let o = outputs(&join, &inputs, dir.path());
    assert_eq!(o["summary"], "Merged 2 sources into 3 rows, 3 columns");
    assert_eq!(
        o["data"]["merged"],
        json!([{"id": 1, "name": "ann", "score": null}, {"id": 2, "name": "bob", "score": 9.5}, {"id": 3, "name": null, "score": 7.0}])
    );

    let write = flow(
        dir.path(),
        json!({"operation": "output", "transform_data": "{begin@x}", "output_format": "csv", "output_filename": "rows"}),
        "object",
    );
    let o = outputs(
        &write,
        &[r#"x=[{"k": "a", "v": 1}, {"k": "b", "v": 2}]"#.to_string()],
        dir.path(),
    );
    let path = o["attachment"]["path"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(path).unwrap(), "k,v\na,1\nb,2\n");
}
