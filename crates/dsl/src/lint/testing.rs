//! Test helpers shared by the rule files: a fake [`Catalog`], a clean base canvas, and
//! short ways to run lint and read its findings.

use serde_json::{Value, json};

use super::{Catalog, Support, lint};
use crate::finding::Finding;
use crate::model::Object;

/// A small catalog: the control components run, a few RAGFlow classes do not.
pub(super) struct Fake;

impl Catalog for Fake {
    fn component(&self, name: &str) -> Support {
        const RUNS: &[&str] = &[
            "Begin",
            "Message",
            "Switch",
            "Categorize",
            "LLM",
            "Agent",
            "UserFillUp",
            "Iteration",
            "IterationItem",
            "Loop",
            "LoopItem",
            "ExitLoop",
            "VariableAssigner",
            "VariableAggregator",
            "DataOperations",
            "ListOperations",
            "StringTransform",
        ];
        let is = |n: &str| name.eq_ignore_ascii_case(n);
        if RUNS.iter().any(|n| is(n)) {
            Support::Runs
        } else if is("CodeExec") || is("Retrieval") {
            Support::NotYet(format!("{name} is not supported yet"))
        } else if is("TuShare") {
            Support::Dead(
                "TuShare is a legacy component that RAGFlow itself can no longer run".into(),
            )
        } else if is("File") || is("Parser") || is("TokenChunker") {
            Support::Ingestion
        } else {
            Support::Unknown
        }
    }

    fn tool(&self, name: &str) -> Support {
        if name.eq_ignore_ascii_case("Agent") || name == "MCP" {
            Support::Runs
        } else if name.eq_ignore_ascii_case("TavilySearch") {
            Support::NotYet(format!("the {name} tool is not supported yet"))
        } else {
            Support::Unknown
        }
    }

    fn check_params(&self, name: &str, params: &Object) -> Option<super::Refusal> {
        // Stands for a component's own check: a Message refuses an attachment format.
        let f = params.get("output_format").and_then(Value::as_str)?;
        name.eq_ignore_ascii_case("Message")
            .then(|| super::Refusal {
                message: format!("output_format {f:?} is not supported"),
                path: vec!["output_format".into()],
            })
    }

    fn outputs(&self, name: &str, params: &Object) -> Option<Vec<String>> {
        match name.to_ascii_lowercase().as_str() {
            "message" => Some(vec!["content".into()]),
            "llm" => Some(vec!["content".into(), "structured".into()]),
            "userfillup" | "begin" => Some(
                params
                    .get("inputs")
                    .and_then(Value::as_object)
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default(),
            ),
            _ => None,
        }
    }
}

/// Lint `doc` with the fake catalog.
pub(super) fn run(doc: &Value) -> Vec<Finding> {
    lint(doc, &Fake)
}

/// `(code, pointer)` of each finding, in order.
pub(super) fn codes(found: &[Finding]) -> Vec<(&'static str, String)> {
    found.iter().map(|f| (f.code, f.pointer.clone())).collect()
}

/// The findings of `doc` with code `code`, as `(code, pointer)`.
pub(super) fn only(doc: &Value, code: &str) -> Vec<(&'static str, String)> {
    codes(&run(doc))
        .into_iter()
        .filter(|(c, _)| *c == code)
        .collect()
}

/// The single finding of `doc` with code `code` (panics unless there is exactly one).
pub(super) fn one(doc: &Value, code: &str) -> Finding {
    let found: Vec<Finding> = run(doc).into_iter().filter(|f| f.code == code).collect();
    assert_eq!(found.len(), 1, "{code} in {found:#?}");
    found.into_iter().next().unwrap_or_else(|| unreachable!())
}

/// A clean canvas: `begin` (one input `name`) → `Message:M` quoting the query and the input.
pub(super) fn base() -> Value {
    json!({
        "components": {
            "begin": {
                "obj": {"component_name": "Begin", "params": {
                    "inputs": {"name": {"name": "Name", "type": "line", "optional": false}}}},
                "downstream": ["Message:M"], "upstream": []
            },
            "Message:M": {
                "obj": {"component_name": "Message", "params": {
                    "content": ["hi {begin@name}, you said {sys.query} ({env.x})"]}},
                "downstream": [], "upstream": ["begin"]
            }
        },
        "globals": {"sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0,
                    "sys.files": [], "env.x": 1},
        "variables": {"x": {"name": "x", "type": "number", "value": 1}},
        "path": [], "history": [], "retrieval": []
    })
}

/// `base()` plus `components`, with `begin` routed to `first` instead of `Message:M`.
pub(super) fn with(first: &str, components: Value) -> Value {
    let mut doc = base();
    if let (Some(all), Value::Object(add)) = (doc["components"].as_object_mut(), components) {
        all.extend(add);
    }
    doc["components"]["begin"]["downstream"] = json!([first]);
    doc["components"]["Message:M"]["upstream"] = json!([]);
    doc
}

/// A component entry `{obj: {component_name, params}, downstream}`.
pub(super) fn cpn(class: &str, params: Value, downstream: &[&str]) -> Value {
    json!({"obj": {"component_name": class, "params": params}, "downstream": downstream})
}

/// The fixture `../shared/fixtures/ragflow/<rel>`.
macro_rules! fixture_path {
    ($rel:literal) => {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/fixtures/ragflow/",
            $rel
        )
    };
}
pub(super) use fixture_path;

/// The JSON at `path`, or `None` (with a note) when the shared fixtures are absent
/// outside CI.
pub(super) fn fixture(path: &str) -> Option<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) => match serde_json::from_str(&text) {
            Ok(v) => Some(v),
            Err(e) => panic!("{path}: {e}"),
        },
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{path}: {e} (fixtures are required under CI)"
            );
            eprintln!("skipped: {path}: {e}");
            None
        }
    }
}
