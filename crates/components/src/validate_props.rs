//! Property: whatever `canvas run` refuses before it starts (load, normalize, compile with
//! each component's params check), `canvas validate` reports as an error that stops the
//! run, and not only through its catch-all (C049): over every RAGFlow fixture, mutations
//! of valid canvases, and random canvases.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::Registry;
use super::lint_props::canvas as random_canvas;
use super::validate::check;
use canvas_dsl::Format;
use canvas_engine::Canvas;

/// Why `canvas run` refuses `text` before it starts (its load and compile), if it does.
fn run_refuses(text: &str) -> Option<String> {
    match canvas_dsl::parse(text, Format::Json) {
        Err(e) => Some(e.to_string()),
        Ok(dsl) => Canvas::compile(dsl, &Registry).err().map(|e| e.to_string()),
    }
}

/// The property, for one canvas text.
fn holds(text: &str) -> Result<(), TestCaseError> {
    let Some(why) = run_refuses(text) else {
        return Ok(());
    };
    let found = check(text, Format::Json);
    let stopping: Vec<&str> = found
        .iter()
        .filter(|l| l.finding.stops_run)
        .map(|l| l.finding.code)
        .collect();
    prop_assert!(
        !stopping.is_empty(),
        "run refuses ({why}) but validate has no error that stops it: {found:#?}\n{text}"
    );
    prop_assert!(
        stopping.iter().any(|c| *c != "C049"),
        "run refuses ({why}) and only the catch-all says so: {found:#?}\n{text}"
    );
    Ok(())
}

#[test]
fn every_fixture_run_refuses_is_a_validate_error() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/ragflow");
    let mut seen = 0;
    for sub in ["go-testdata", "test-dsl"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(text) = std::fs::read_to_string(e.path()) else {
                continue;
            };
            seen += 1;
            if let Err(e) = holds(&text) {
                panic!("{}: {e}", e_path(&dir, sub));
            }
        }
    }
    // The fixtures are absent outside CI's checkout of ../shared.
    assert!(seen == 0 || seen >= 13, "{seen} fixtures");
}

fn e_path(dir: &std::path::Path, sub: &str) -> String {
    dir.join(sub).display().to_string()
}

/// A valid canvas: begin → Switch → two Messages, a Loop with its body, an Agent with a
/// Retrieval tool.
fn valid() -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Switch:S"], "upstream": []},
        "Switch:S": {"obj": {"component_name": "Switch", "params": {
            "conditions": [{"logical_operator": "and", "to": ["Message:A"],
                "items": [{"cpn_id": "sys.query", "operator": "contains", "value": "x"}]}],
            "end_cpn_ids": ["Loop:L"]}}, "downstream": ["Message:A", "Loop:L"], "upstream": ["begin"]},
        "Message:A": {"obj": {"component_name": "Message", "params": {"content": ["yes {sys.query}"]}}, "downstream": [], "upstream": ["Switch:S"]},
        "Loop:L": {"obj": {"component_name": "Loop", "params": {"maximum_loop_count": 2, "logical_operator": "or",
            "loop_variables": [], "loop_termination_condition": []}}, "downstream": ["Agent:G"], "upstream": ["Switch:S"]},
        "LoopItem:I": {"obj": {"component_name": "LoopItem", "params": {}}, "downstream": ["ExitLoop:E"], "upstream": [], "parent_id": "Loop:L"},
        "ExitLoop:E": {"obj": {"component_name": "ExitLoop", "params": {}}, "downstream": [], "upstream": ["LoopItem:I"], "parent_id": "Loop:L"},
        "Agent:G": {"obj": {"component_name": "Agent", "params": {"llm_id": "m@p", "sys_prompt": "be brief",
            "prompts": [{"role": "user", "content": "{sys.query}"}],
            "tools": [{"component_name": "Retrieval", "name": "R", "params": {"kb_ids": ["k"]}}]}},
            "downstream": ["Message:B"], "upstream": ["Loop:L"]},
        "Message:B": {"obj": {"component_name": "Message", "params": {"content": ["{Agent:G@content}"]}}, "downstream": [], "upstream": ["Agent:G"]}
    }, "path": [], "history": [], "retrieval": [], "globals": {"sys.query": ""}})
}

/// Places a mutation writes to (pointers into [`valid`]).
const SPOTS: &[&str] = &[
    "/components/begin/downstream",
    "/components/Switch:S/obj/params/conditions",
    "/components/Switch:S/obj/params/conditions/0/items/0/operator",
    "/components/Switch:S/obj/params/conditions/0/to",
    "/components/Switch:S/obj/params/end_cpn_ids",
    "/components/Message:A/obj/params/content",
    "/components/Message:A/obj/params/output_format",
    "/components/Message:A/obj/params/stream",
    "/components/Message:A/obj/params",
    "/components/Message:A/obj/component_name",
    "/components/Message:A/upstream",
    "/components/Message:A/parent_id",
    "/components/Loop:L/obj/params/maximum_loop_count",
    "/components/LoopItem:I/parent_id",
    "/components/Agent:G/obj/params/tools/0/params/retrieval_from",
    "/components/Agent:G/obj/params/tools/0/component_name",
    "/components/Agent:G/obj/params/tools",
    "/components/Agent:G/obj/params/llm_id",
    "/components/Message:B/downstream",
    "/path",
    "/globals",
    "/history",
];

/// Values a mutation writes.
fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!(42)),
        Just(json!(0)),
        Just(json!(true)),
        Just(json!("")),
        Just(json!("html")),
        Just(json!("memory")),
        Just(json!("Message:A")),
        Just(json!("Nope:1")),
        Just(json!("oops")),
        Just(json!([])),
        Just(json!(["Message:A"])),
        Just(json!(["Nope:1"])),
        Just(json!([1, "x"])),
        Just(json!({})),
        Just(json!({"a": 1})),
        Just(json!("Loop:L")),
        Just(json!("ExeSQL")),
    ]
}

/// A valid canvas with one to three places overwritten.
fn mutated() -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(SPOTS), value()), 1..4).prop_map(|edits| {
        let mut doc = valid();
        for (spot, v) in edits {
            let (parent, key) = spot.rsplit_once('/').unwrap_or(("", spot));
            match doc.pointer_mut(parent) {
                Some(Value::Object(o)) => {
                    o.insert(key.replace("~1", "/").replace("~0", "~"), v);
                }
                Some(Value::Array(a)) => {
                    if let Some(slot) = key.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                        *slot = v;
                    }
                }
                _ => {}
            }
        }
        doc
    })
}

#[test]
fn the_valid_canvas_runs() {
    let text = valid().to_string();
    assert_eq!(run_refuses(&text), None);
    let errors: Vec<_> = check(&text, Format::Json)
        .into_iter()
        .filter(|l| l.finding.level == canvas_dsl::Level::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn what_run_refuses_in_a_mutated_canvas_validate_reports(doc in mutated()) {
        holds(&serde_json::to_string_pretty(&doc).unwrap_or_default())?;
    }

    #[test]
    fn what_run_refuses_in_a_random_canvas_validate_reports(doc in random_canvas()) {
        holds(&serde_json::to_string_pretty(&doc).unwrap_or_default())?;
    }
}
