//! `canvas chat`: lines of stdin (not a terminal) are the turns of one run.

use std::path::Path;

use serde_json::Value;

use crate::harness::CanvasCli;
use crate::util::{events, runs};

/// Echoes the turn number and the query. A streamed Message drops the whitespace
/// around references: turn 1 of "hello" renders `turn1:hello`.
pub const ECHO: &str = r#"{"components": {
  "begin": {"obj": {"component_name": "Begin", "params": {"mode": "conversational",
      "prologue": "Welcome to the echo chat.", "inputs": {}}},
    "downstream": ["Message:Echo"], "upstream": []},
  "Message:Echo": {"obj": {"component_name": "Message",
      "params": {"content": ["turn {sys.conversation_turns}: {sys.query}"]}},
    "downstream": [], "upstream": ["begin"]}},
 "globals": {"sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0,
             "sys.files": [], "sys.history": []},
 "history": [], "path": [], "retrieval": []}"#;

/// `canvas chat FLOW --store STORE ARGS…` with `input` on stdin.
fn chat(flow: &Path, store: &Path, args: &[&str], input: &str) -> std::process::Output {
    CanvasCli::new()
        .arg("chat")
        .arg(flow)
        .arg("--store")
        .arg(store)
        .args(args)
        .stdin(input)
        .run()
        .into_output()
}

#[test]
fn each_stdin_line_is_a_turn_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("echo.json");
    std::fs::write(&flow, ECHO).unwrap();
    let store = dir.path().join("s.db");
    let out = chat(&flow, &store, &["--format", "jsonl"], "hello\nworld\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {err}");
    assert!(err.contains("Welcome to the echo chat."), "prologue: {err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("Welcome"),
        "the prologue stays off stdout: {stdout}"
    );

    let evs = events(&out.stdout);
    let finished: Vec<&Value> = evs
        .iter()
        .filter(|e| e["event"] == "workflow_finished")
        .collect();
    let contents: Vec<&Value> = finished
        .iter()
        .map(|e| &e["data"]["outputs"]["content"])
        .collect();
    assert_eq!(contents, ["turn1:hello", "turn2:world"]);
    let started = evs
        .iter()
        .filter(|e| e["event"] == "workflow_started")
        .count();
    assert_eq!(started, 2, "one workflow_started per turn");
    let run_id = evs[0]["task_id"].as_str().expect("a task_id");
    assert!(
        evs.iter().all(|e| e["task_id"] == run_id),
        "every event carries the one run id {run_id}"
    );

    let runs = runs(&store);
    assert_eq!(runs.len(), 1, "one run for the chat: {runs:?}");
    assert_eq!(runs[0]["id"], run_id);
    assert_eq!(runs[0]["turns"], 2);
    assert_eq!(runs[0]["status"], "succeeded");
}

#[test]
fn text_format_prints_the_answers() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("echo.json");
    std::fs::write(&flow, ECHO).unwrap();
    let store = dir.path().join("s.db");
    let out = chat(&flow, &store, &["--format", "text"], "hello\nworld\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {err}");
    assert!(err.contains("Welcome to the echo chat."), "prologue: {err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout
        .find("turn1:hello")
        .unwrap_or_else(|| panic!("no first answer in {stdout:?}"));
    let second = stdout
        .find("turn2:world")
        .unwrap_or_else(|| panic!("no second answer in {stdout:?}"));
    assert!(first < second, "answers out of order: {stdout:?}");
    assert!(
        !stdout.trim_start().starts_with('{'),
        "text, not JSON: {stdout:?}"
    );
}

#[test]
fn chat_refuses_a_canvas_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = chat(Path::new("-"), &store, &[], ECHO);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    assert!(!store.exists(), "a refused chat stored nothing");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stdin"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
