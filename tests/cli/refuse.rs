//! `canvas run` refuses, before it stores anything, a canvas `canvas validate` reports
//! an error for that stops a run (exit 2, `FILE:LINE:COL: node: message`); `--no-validate`
//! runs it as far as it goes. One test per problem of the list.

use serde_json::{Value, json};

use crate::harness::{CanvasCli, Ran};

/// begin → Switch:S → Message:A (query contains "x") or Message:B: a valid canvas.
fn canvas() -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Switch:S"], "upstream": []},
        "Switch:S": {"obj": {"component_name": "Switch", "params": {
            "conditions": [{"logical_operator": "and", "to": ["Message:A"],
                "items": [{"cpn_id": "sys.query", "operator": "contains", "value": "x"}]}],
            "end_cpn_ids": ["Message:B"]}}, "downstream": ["Message:A", "Message:B"], "upstream": ["begin"]},
        "Message:A": {"obj": {"component_name": "Message", "params": {"content": ["yes"]}}, "downstream": [], "upstream": ["Switch:S"]},
        "Message:B": {"obj": {"component_name": "Message", "params": {"content": ["no"]}}, "downstream": [], "upstream": ["Switch:S"]}
    }, "path": [], "history": [], "retrieval": [], "globals": {"sys.query": ""}})
}

/// The canvas with the value at `pointer` (its parent must exist) set to `v`.
fn with(pointer: &str, v: Value) -> Value {
    let mut doc = canvas();
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    match doc.pointer_mut(parent) {
        Some(Value::Object(o)) => {
            o.insert(key.to_string(), v);
        }
        Some(Value::Array(a)) => a[key.parse::<usize>().unwrap()] = v,
        _ => panic!("{pointer}: no parent"),
    }
    doc
}

/// A test's directory with `flow.json` (pretty-printed, so findings have lines).
fn cli(text: &str) -> CanvasCli {
    CanvasCli::new().file("flow.json", text)
}

/// `canvas validate flow.json --format json`: its findings.
fn findings(text: &str) -> Vec<Value> {
    let ran = cli(text)
        .args(["validate", "flow.json", "--format", "json"])
        .run();
    match ran.json() {
        Value::Array(files) => files[0]["findings"].as_array().cloned().unwrap_or_default(),
        other => panic!("not a report: {other}"),
    }
}

/// The number of runs the store of `ran`'s directory holds.
fn stored_runs(ran: &Ran) -> usize {
    let listed = ran
        .fresh()
        .args(["runs", "--format", "json", "--limit", "0"])
        .run()
        .code(0);
    listed.json().as_array().map_or(0, Vec::len)
}

/// `canvas run flow.json` (with `extra` flags), in a fresh directory and store.
fn run(text: &str, extra: &[&str]) -> Ran {
    cli(text)
        .args([
            "run",
            "flow.json",
            "--format",
            "jsonl",
            "--non-interactive",
            "-q",
            "x",
        ])
        .args(extra)
        .run()
}

/// The problem at `pointer` (set to `v`): validate reports error `code` on `node`; run
/// refuses it (exit 2, `flow.json:LINE:COL: node: …` holding `says`, no run stored).
/// Returns the text for the `--no-validate` half.
fn refused(pointer: &str, v: Value, code: &str, node: &str, says: &str) -> String {
    let text = serde_json::to_string_pretty(&with(pointer, v)).unwrap();
    let found = findings(&text);
    let f = found
        .iter()
        .find(|f| f["code"] == code)
        .unwrap_or_else(|| panic!("no {code} in {found:#?}"));
    assert_eq!(f["level"], "error");
    assert_eq!(f["component"], node);
    assert!(f["line"].is_u64() && f["column"].is_u64(), "{f}");
    let ran = run(&text, &[]).code(2);
    let err = ran.stderr();
    let first = err.lines().next().unwrap_or_default();
    let at = format!("error: flow.json:{}:{}: {node}: ", f["line"], f["column"]);
    assert!(first.starts_with(&at), "{at:?} in {err}");
    assert!(first.contains(says), "{says:?} in {err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("hint:") && l.contains("canvas validate flow.json")),
        "{err}"
    );
    assert!(ran.events().is_empty());
    assert_eq!(stored_runs(&ran), 0, "a refused canvas leaves no run");
    text
}

/// `--no-validate` runs it: the run is stored and fails at `node` (exit 1).
fn runs_anyway_until(text: &str, node: &str, says: &str) {
    let ran = run(text, &["--no-validate"]).code(1);
    let err = ran.stderr();
    assert!(
        err.contains(&format!("\"{node}\"")) && err.contains(says),
        "{err}"
    );
    let started: Vec<Value> = ran
        .events()
        .into_iter()
        .filter(|e| e["event"] == "node_started")
        .map(|e| e["data"]["component_id"].clone())
        .collect();
    assert_eq!(started.last(), Some(&json!(node)));
    assert_eq!(stored_runs(&ran), 1);
}

/// `--no-validate` cannot run it either: RAGFlow refuses it when it loads the canvas, or
/// it cannot be read at all; the loader's or compiler's one line says why.
fn refused_anyway(text: &str, says: &str) {
    let ran = run(text, &["--no-validate"]).code(2);
    assert!(ran.stderr().contains(says), "{}", ran.stderr());
    assert_eq!(stored_runs(&ran), 0);
}

#[test]
fn a_message_attachment_format() {
    let text = refused(
        "/components/Message:A/obj/params/output_format",
        json!("html"),
        "C047",
        "Message:A",
        "Message output_format \"html\" (a file attachment) is not supported yet",
    );
    runs_anyway_until(&text, "Message:A", "output_format \"html\"");
}

#[test]
fn an_unknown_switch_operator() {
    let text = refused(
        "/components/Switch:S/obj/params/conditions/0/items/0/operator",
        json!("resembles"),
        "C047",
        "Switch:S",
        "[Switch] case 1 has an unknown operator 'resembles'",
    );
    runs_anyway_until(&text, "Switch:S", "Not supported operator: resembles");
}

#[test]
fn a_message_content_that_is_a_number() {
    let text = refused(
        "/components/Message:A/obj/params/content",
        json!(42),
        "C047",
        "Message:A",
        "[Message] content must be a list of texts, not a number (42)",
    );
    // RAGFlow loads it and fails in `random.choice`; so does the run.
    runs_anyway_until(&text, "Message:A", "object of type 'int' has no len()");
}

#[test]
fn switch_conditions_that_are_not_a_list() {
    let text = refused(
        "/components/Switch:S/obj/params/conditions",
        json!("oops"),
        "C047",
        "Switch:S",
        "[Switch] conditions must be a list of cases, not a string",
    );
    refused_anyway(&text, "conditions must be a list of cases");
}

#[test]
fn a_downstream_that_is_a_string() {
    let text = refused(
        "/components/begin/downstream",
        json!("Switch:S"),
        "C009",
        "begin",
        "`downstream` must be a list of component ids, not a string",
    );
    refused_anyway(&text, "expected a sequence");
}

#[test]
fn exe_sql_on_ragflows_own_database() {
    let exe_sql = json!({"obj": {"component_name": "ExeSQL", "params": {
        "database": "rag_flow", "username": "root", "host": "mysql", "port": 3306,
        "password": "infini_rag_flow", "sql": "SELECT 1"}},
        "downstream": [], "upstream": ["Switch:S"]});
    let mut doc = canvas();
    doc["components"]["ExeSQL:Q"] = exe_sql;
    doc["components"]["Switch:S"]["obj"]["params"]["end_cpn_ids"] = json!(["ExeSQL:Q"]);
    doc["components"]["Switch:S"]["downstream"] = json!(["Message:A", "ExeSQL:Q"]);
    doc["components"]["Message:B"]["upstream"] = json!([]);
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let found = findings(&text);
    let f = found
        .iter()
        .find(|f| f["code"] == "C047")
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert_eq!(f["component"], "ExeSQL:Q");
    let ran = run(&text, &[]).code(2);
    let err = ran.stderr();
    assert!(
        err.starts_with(&format!(
            "error: flow.json:{}:{}: ExeSQL:Q: For the security reason",
            f["line"], f["column"]
        )),
        "{err}"
    );
    assert_eq!(stored_runs(&ran), 0);
    // RAGFlow's own check refuses it when it loads the canvas: no override runs it.
    refused_anyway(&text, "does not support database named rag_flow");
}

#[test]
fn a_key_written_twice_is_a_warning_and_runs_as_ragflow_runs_it() {
    let pretty = serde_json::to_string_pretty(&canvas()).unwrap();
    // Message:B says "no" twice over: Python's json (and ours) keep the last value.
    let text = pretty.replacen(
        "\"no\"\n",
        "\"first\"\n          ],\n          \"content\": [\n            \"no\"\n",
        1,
    );
    assert_ne!(text, pretty);
    let found = findings(&text);
    let f = found
        .iter()
        .find(|f| f["code"] == "C008")
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert_eq!(
        (&f["level"], &f["component"]),
        (&json!("warning"), &json!("Message:B"))
    );
    let ran = cli(&text)
        .args(["run", "flow.json", "--format", "jsonl", "-q", "nothing"])
        .run()
        .code(0);
    let last = ran.events().pop().unwrap_or_default();
    assert_eq!(last["data"]["outputs"]["content"], "no");
}

#[test]
fn errors_the_run_meets_only_if_it_gets_there_are_warnings() {
    // RAGFlow crashes on a reference to a missing component only when it reaches it.
    let text = serde_json::to_string_pretty(&with(
        "/components/Message:A/obj/params/content",
        json!(["{Nope:1@content}"]),
    ))
    .unwrap();
    let ran = cli(&text)
        .args(["run", "flow.json", "--format", "jsonl", "-q", "nothing"])
        .run()
        .code(0);
    let err = ran.stderr();
    assert!(
        err.starts_with("warning: flow.json:")
            && err.contains("Message:A: reference `{Nope:1@content}`"),
        "{err}"
    );
    // `--quiet` leaves the warning out.
    let ran = cli(&text)
        .args([
            "run",
            "flow.json",
            "--format",
            "jsonl",
            "--quiet",
            "-q",
            "nothing",
        ])
        .run()
        .code(0);
    assert_eq!(ran.stderr(), "");
}

#[test]
fn chat_refuses_it_too() {
    let text = serde_json::to_string_pretty(&with(
        "/components/Message:A/obj/params/output_format",
        json!("pdf"),
    ))
    .unwrap();
    let ran = cli(&text)
        .args(["chat", "flow.json"])
        .stdin("x\n")
        .run()
        .code(2);
    assert!(
        ran.stderr().starts_with("error: flow.json:"),
        "{}",
        ran.stderr()
    );
    assert_eq!(stored_runs(&ran), 0);
}

#[test]
fn several_problems_each_get_a_line() {
    let mut doc = with(
        "/components/Message:A/obj/params/output_format",
        json!("html"),
    );
    doc["components"]["Message:B"]["obj"]["params"]["output_format"] = json!("docx");
    doc["components"]["Switch:S"]["downstream"] = json!(["Message:A", "Message:B", "Gone"]);
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let err = run(&text, &[]).code(2).stderr();
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 3, "{err}");
    assert!(
        errors[0].contains(": Switch:S: `downstream` lists unknown component `Gone`"),
        "{err}"
    );
    assert!(errors[1].contains(": Message:A: "), "{err}");
    assert!(errors[2].contains(": Message:B: "), "{err}");
}
