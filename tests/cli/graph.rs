//! `canvas graph`: drawing a canvas as Mermaid or Graphviz DOT.

use std::process::Output;

use crate::harness::CanvasCli;
use crate::util::{TIMEOUT, canvas, expect_code, stderr};

/// Begin → Switch (two cases and an else) → three Messages.
const SWITCH: &str = r#"{"components": {
  "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Switch:Route"]},
  "Switch:Route": {"obj": {"component_name": "Switch", "params": {
      "conditions": [
        {"logical_operator": "and", "items": [{"cpn_id": "sys.query", "operator": "=", "value": "a"}], "to": ["Message:A"]},
        {"logical_operator": "and", "items": [{"cpn_id": "sys.query", "operator": "=", "value": "b"}], "to": ["Message:B"]}
      ],
      "end_cpn_ids": ["Message:Other"]}},
    "downstream": ["Message:A", "Message:B", "Message:Other"]},
  "Message:A": {"obj": {"component_name": "Message", "params": {"content": ["A"]}}, "downstream": []},
  "Message:B": {"obj": {"component_name": "Message", "params": {"content": ["B"]}}, "downstream": []},
  "Message:Other": {"obj": {"component_name": "Message", "params": {"content": ["?"]}}, "downstream": []}
},
"graph": {"nodes": [{"id": "Switch:Route", "data": {"name": "Route"}}]}}"#;

/// `canvas graph ARGS...` in `dir`.
fn graph(dir: &std::path::Path, args: &[&str]) -> Output {
    CanvasCli::new()
        .current_dir(dir)
        .arg("graph")
        .args(args)
        .run()
        .into_output()
}

/// A temp dir holding the Switch canvas as `f.json`.
fn switch_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("f.json"), SWITCH).expect("write f.json");
    dir
}

fn stdout_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn mermaid_is_the_default() {
    let dir = switch_dir();
    let out = graph(dir.path(), &["f.json"]);
    expect_code(&out, 0, "canvas graph f.json");
    let lines = stdout_lines(&out);
    let text = lines.join("\n");
    assert_eq!(
        lines.first().map(String::as_str),
        Some("flowchart LR"),
        "{text}"
    );
    for want in [
        "    n0([\"begin<br/>Begin\"])",
        "    n1{\"Route<br/>Switch\"}",
        "    n0 --> n1",
        "    n1 -->|\"case 1\"| n2",
        "    n1 -->|\"case 2\"| n3",
        "    n1 -->|\"else\"| n4",
    ] {
        assert!(
            lines.iter().any(|l| l == want),
            "missing {want:?} in\n{text}"
        );
    }
    // The case targets are not drawn a second time as plain downstream edges.
    assert!(!lines.iter().any(|l| l == "    n1 --> n2"), "{text}");
    assert!(!text.contains("```"), "{text}");
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

#[test]
fn dot_format() {
    let dir = switch_dir();
    let out = graph(dir.path(), &["f.json", "--format", "dot"]);
    expect_code(&out, 0, "canvas graph --format dot");
    let lines = stdout_lines(&out);
    let text = lines.join("\n");
    assert_eq!(
        lines.first().map(String::as_str),
        Some("digraph canvas {"),
        "{text}"
    );
    assert_eq!(lines.last().map(String::as_str), Some("}"), "{text}");
    for want in [
        "    n1 [label=\"Route\\nSwitch\" shape=diamond];",
        "    n0 -> n1;",
        "    n1 -> n2 [label=\"case 1\"];",
        "    n1 -> n3 [label=\"case 2\"];",
        "    n1 -> n4 [label=\"else\"];",
    ] {
        assert!(
            lines.iter().any(|l| l == want),
            "missing {want:?} in\n{text}"
        );
    }
}

#[test]
fn reads_stdin() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = canvas()
        .current_dir(dir.path())
        .args(["graph", "-"])
        .write_stdin(SWITCH)
        .timeout(TIMEOUT)
        .output()
        .unwrap_or_else(|e| panic!("canvas graph -: {e}"));
    expect_code(&out, 0, "canvas graph -");
    assert!(
        stdout_lines(&out)
            .iter()
            .any(|l| l == "    n1 -->|\"else\"| n4"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn missing_file_is_invalid_input() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = graph(dir.path(), &["nope.json"]);
    expect_code(&out, 2, "canvas graph nope.json");
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("error: nope.json: "), "{err}");
}

#[test]
fn unknown_format_is_a_usage_error() {
    let dir = switch_dir();
    let out = graph(dir.path(), &["f.json", "--format", "svg"]);
    expect_code(&out, 2, "canvas graph --format svg");
    assert!(out.stdout.is_empty());
}
