//! Property tests over random canvases built from this build's component set: `normalize` is
//! idempotent and never loses a top-level key, and `lint` (through the whole validate
//! pipeline) never panics.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::Catalog;
use canvas_dsl::check::check;
use canvas_dsl::load::Format;
use canvas_dsl::normalize::normalize;

const CLASSES: &[&str] = &[
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
    "CodeExec",
    "Retrieval",
    "Generate",
    "Answer",
    "Fillup",
    "Parallel",
    "DocsGenerator",
    "Splitter",
    "TuShare",
    "Nonsense",
];

const IDS: &[&str] = &[
    "begin",
    "Message:A",
    "Switch:B",
    "Categorize:C",
    "LLM:D",
    "Agent:E",
    "UserFillUp:F",
    "Loop:G",
    "LoopItem:H",
    "Iteration:I",
    "IterationItem:J",
    "Splitter:K",
    "answer:0",
    "generate:0",
    "Tool:T",
    "Note:N",
];

/// Arbitrary JSON, biased towards the shapes params have.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::from),
        prop::sample::select(IDS).prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Texts with references in every form lint looks at.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,8}",
        prop::sample::select(IDS).prop_map(|id| format!("{{{id}@content}}")),
        prop::sample::select(IDS).prop_map(|id| format!("{id}@x.y")),
        Just("{sys.query}".to_string()),
        Just("{SYS.query} {env.nope} {input}".to_string()),
        Just("{{ Message:A@content }}".to_string()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            &[
                "content",
                "conditions",
                "end_cpn_ids",
                "category_description",
                "items",
                "to",
                "exception_goto",
                "loop_variables",
                "loop_termination_condition",
                "items_ref",
                "inputs",
                "outputs",
                "tools",
                "mcp",
                "llm_id",
                "prompt",
                "messages",
                "query",
                "parameters",
                "variable",
                "input_mode",
                "type",
                "value",
            ][..]
        )
        .prop_map(String::from),
        "[a-z]{1,5}",
    ]
}

fn ids() -> impl Strategy<Value = Value> {
    prop::collection::vec(prop::sample::select(IDS), 0..4).prop_map(|v| json!(v))
}

fn component() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(CLASSES),
        prop::collection::vec((key(), any_json()), 0..5),
        ids(),
        ids(),
        prop::option::of(prop::sample::select(IDS)),
    )
        .prop_map(|(class, params, down, up, parent)| {
            let params: serde_json::Map<String, Value> = params.into_iter().collect();
            let mut c = json!({"obj": {"component_name": class, "params": params}, "downstream": down, "upstream": up});
            if let Some(p) = parent {
                c["parent_id"] = json!(p);
            }
            c
        })
}

fn graph() -> impl Strategy<Value = Value> {
    let node = (
        prop::sample::select(IDS),
        prop::sample::select(CLASSES),
        prop::collection::vec((key(), any_json()), 0..4),
        prop::option::of(prop::sample::select(IDS)),
    )
        .prop_map(|(id, label, form, parent)| {
            let form: serde_json::Map<String, Value> = form.into_iter().collect();
            let mut n = json!({"id": id, "data": {"label": label, "name": id, "form": form}});
            if let Some(p) = parent {
                n["parentId"] = json!(p);
            }
            n
        });
    let handle = prop::sample::select(
        &[
            "start",
            "end",
            "Case 1",
            "Case 2",
            "end_cpn_ids",
            "agentBottom",
            "agentTop",
            "agentException",
            "tool",
            "u1",
        ][..],
    );
    let edge = (
        prop::sample::select(IDS),
        handle.clone(),
        prop::sample::select(IDS),
        handle,
    )
        .prop_map(|(s, sh, t, th)| json!({"source": s, "sourceHandle": sh, "target": t, "targetHandle": th}));
    (
        prop::collection::vec(node, 0..8),
        prop::collection::vec(edge, 0..10),
    )
        .prop_map(|(nodes, edges)| json!({"nodes": nodes, "edges": edges}))
}

/// A random canvas (components, graph, variables; sometimes in a template's wrapper).
pub(crate) fn canvas() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::collection::vec(
            (prop::sample::select(IDS), component()),
            0..10,
        )),
        prop::option::of(graph()),
        any::<bool>(),
        prop::option::of(any_json()),
    )
        .prop_map(|(comps, graph, wrap, variables)| {
            let mut dsl = serde_json::Map::new();
            if let Some(c) = comps {
                dsl.insert(
                    "components".into(),
                    Value::Object(c.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
                );
            }
            if let Some(g) = graph {
                dsl.insert("graph".into(), g);
            }
            if let Some(v) = variables {
                dsl.insert("variables".into(), v);
            }
            dsl.insert("globals".into(), json!({"sys.query": "", "env.x": 1}));
            dsl.insert("mine".into(), json!({"kept": true}));
            let dsl = Value::Object(dsl);
            if wrap {
                json!({"id": 1, "title": "t", "dsl": dsl})
            } else {
                dsl
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn normalize_is_idempotent_and_lint_never_panics(doc in canvas()) {
        let once = normalize(doc.clone());
        let twice = normalize(once.value.clone());
        prop_assert_eq!(&twice.value, &once.value);
        prop_assert!(twice.applied.is_empty(), "second pass applied {:?}", twice.applied);
        // Nothing is lost: every top-level key (and the wrapper's) survives.
        for k in doc.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            prop_assert!(once.value.get(&k).is_some(), "lost {}", k);
        }
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let findings = check(&text, Format::Json, &Catalog);
        for f in &findings {
            prop_assert!(f.finding.code.starts_with('C'));
            prop_assert!(f.finding.pointer.is_empty() || f.finding.pointer.starts_with('/'));
        }
    }
}
