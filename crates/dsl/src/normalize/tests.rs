//! Tests of the normalisation rules.

use serde_json::{Value, json};

use super::*;

fn rules_of(n: &Normalized) -> Vec<&'static str> {
    let mut r: Vec<_> = n.applied.iter().map(|a| a.rule).collect();
    r.dedup();
    r
}

fn comp<'a>(n: &'a Normalized, id: &str) -> &'a Value {
    &n.value["components"][id]
}

/// Normalizing the result again changes nothing.
fn assert_idempotent(n: &Normalized) {
    let again = normalize(n.value.clone());
    assert_eq!(again.value, n.value);
    assert!(
        again.applied.is_empty(),
        "second pass applied {:?}",
        again.applied
    );
}

fn node(id: &str, label: &str, form: Value) -> Value {
    json!({"id": id, "type": "x", "data": {"label": label, "name": format!("{label} node"), "form": form}})
}

fn edge(s: &str, sh: &str, t: &str, th: &str) -> Value {
    json!({"id": format!("xy-edge__{s}{sh}-{t}{th}"), "source": s, "sourceHandle": sh, "target": t, "targetHandle": th})
}

#[test]
fn graph_only_switch_gets_components_with_routes_from_handles() {
    let doc = json!({
        "globals": {"sys.query": ""},
        "graph": {
            "nodes": [
                node("begin", "Begin", Value::Null),
                node("Switch:S", "Switch", json!({"conditions": [
                    {"items": [{"cpn_id": "sys.query", "operator": "=", "value": "a"}], "logical_operator": "and", "to": ["Message:A"]},
                    {"items": [{"cpn_id": "sys.query", "operator": "=", "value": "b"}], "logical_operator": "and"}
                ]})),
                node("Message:A", "Message", json!({"content": ["a"]})),
                node("Message:B", "Message", json!({"content": ["b"]})),
                node("Message:E", "Message", json!({"content": ["e"]})),
                node("Note:N", "Note", json!({"text": "hi"})),
            ],
            "edges": [
                edge("begin", "start", "Switch:S", "end"),
                edge("Switch:S", "Case 1", "Message:A", "end"),
                edge("Switch:S", "Case 2", "Message:B", "end"),
                edge("Switch:S", "end_cpn_ids", "Message:E", "end"),
            ]
        },
        "variables": {"v": {"name": "v", "type": "string", "value": "x"}}
    });
    let n = normalize(doc);
    let keys: Vec<&String> = n.value["components"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["begin", "Switch:S", "Message:A", "Message:B", "Message:E"]
    );
    assert_eq!(
        n.value.as_object().unwrap().keys().next().unwrap(),
        "components"
    );
    assert_eq!(
        comp(&n, "begin")["obj"],
        json!({"component_name": "Begin", "params": {}})
    );
    let s = comp(&n, "Switch:S");
    assert_eq!(
        s["downstream"],
        json!(["Message:A", "Message:B", "Message:E"])
    );
    assert_eq!(s["upstream"], json!(["begin"]));
    assert_eq!(
        s["obj"]["params"]["conditions"][1]["to"],
        json!(["Message:B"])
    );
    assert_eq!(s["obj"]["params"]["end_cpn_ids"], json!(["Message:E"]));
    assert_eq!(comp(&n, "Message:E")["upstream"], json!(["Switch:S"]));
    assert_eq!(n.value["globals"]["env.v"], json!("x"));
    assert_eq!(n.value["path"], json!([]));
    assert!(n.value.get("graph").is_some(), "the graph is kept");
    assert_eq!(rules_of(&n), ["components_from_graph"]);
    assert_idempotent(&n);
}

#[test]
fn categorize_items_become_category_description() {
    let doc = json!({"graph": {
    "nodes": [
        node("begin", "Begin", json!({})),
        node("Categorize:C", "Categorize", json!({"llm_id": "m", "items": [
            {"name": "casual", "description": "chat", "examples": [{"value": "hi"}], "uuid": "u1"},
            {"name": "angry", "description": "complaints", "examples": [], "uuid": "u2"}
        ]})),
        node("Message:X", "Message", json!({"content": ["x"]})),
        node("Message:Y", "Message", json!({"content": ["y"]})),
    ],
    "edges": [
        edge("begin", "start", "Categorize:C", "end"),
        edge("Categorize:C", "u1", "Message:X", "end"),
        edge("Categorize:C", "u2", "Message:Y", "end"),
    ]}});
    let n = normalize(doc);
    let p = &comp(&n, "Categorize:C")["obj"]["params"];
    assert!(p.get("items").is_none());
    assert_eq!(
        p["category_description"],
        json!({
            "casual": {"description": "chat", "examples": ["hi"], "to": ["Message:X"]},
            "angry": {"description": "complaints", "examples": [], "to": ["Message:Y"]},
        })
    );
    assert_idempotent(&n);
}

#[test]
fn sub_agents_become_tools_and_tool_nodes_are_dropped() {
    let doc = json!({"graph": {
    "nodes": [
        node("begin", "Begin", json!({})),
        node("Agent:Main", "Agent", json!({"llm_id": "m", "tools": []})),
        node("Agent:Sub", "Agent", json!({"llm_id": "m", "description": "helps"})),
        node("Agent:Deep", "Agent", json!({"llm_id": "m"})),
        node("Tool:T", "Tool", json!({})),
        node("Message:M", "Message", json!({"content": ["{Agent:Main@content}"]})),
        node("Message:Err", "Message", json!({"content": ["failed"]})),
    ],
    "edges": [
        edge("begin", "start", "Agent:Main", "end"),
        edge("Agent:Main", "agentBottom", "Agent:Sub", "agentTop"),
        edge("Agent:Sub", "agentBottom", "Agent:Deep", "agentTop"),
        edge("Agent:Sub", "tool", "Tool:T", "end"),
        edge("Agent:Main", "start", "Message:M", "end"),
        edge("Agent:Main", "agentException", "Message:Err", "end"),
    ]}});
    let n = normalize(doc);
    let ids: Vec<&String> = n.value["components"].as_object().unwrap().keys().collect();
    assert_eq!(ids, ["begin", "Agent:Main", "Message:M", "Message:Err"]);
    let main = comp(&n, "Agent:Main");
    assert_eq!(main["downstream"], json!(["Message:M"]));
    assert_eq!(
        main["obj"]["params"]["exception_goto"],
        json!(["Message:Err"])
    );
    let tools = &main["obj"]["params"]["tools"];
    assert_eq!(tools[0]["component_name"], "Agent");
    assert_eq!(tools[0]["id"], "Agent:Sub");
    assert_eq!(tools[0]["name"], "Agent node");
    assert_eq!(tools[0]["params"]["description"], "helps");
    assert_eq!(tools[0]["params"]["tools"][0]["id"], "Agent:Deep");
    // The exception route counts as a route into the handler.
    assert_eq!(comp(&n, "Message:Err")["upstream"], json!(["Agent:Main"]));
    assert_idempotent(&n);
}

#[test]
fn handles_and_parents_are_repaired_from_the_graph() {
    let doc = json!({
        "components": {
            "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Loop:L"], "upstream": []},
            "Loop:L": {"obj": {"component_name": "Loop", "params": {}}, "downstream": [], "upstream": ["begin"]},
            "LoopItem:I": {"obj": {"component_name": "LoopItem", "params": {}}, "downstream": [], "upstream": []},
        },
        "graph": {
            "nodes": [{"id": "LoopItem:I", "parentId": "Loop:L", "data": {"label": "LoopItem"}}],
            "edges": [edge("begin", "end", "Loop:L", "start")]
        }
    });
    let n = normalize(doc);
    assert_eq!(comp(&n, "LoopItem:I")["parent_id"], "Loop:L");
    assert_eq!(n.value["graph"]["edges"][0]["sourceHandle"], "start");
    assert_eq!(n.value["graph"]["edges"][0]["targetHandle"], "end");
    assert_eq!(rules_of(&n), ["handle_ids", "parents_from_graph"]);
    assert_eq!(n.applied[2].pointer, "/components/LoopItem:I/parent_id");
    assert_idempotent(&n);
}

#[test]
fn chunker_renames_rewrite_ids_everywhere() {
    let doc = json!({
        "components": {
            "File": {"obj": {"component_name": "File", "params": {}}, "downstream": ["Splitter:A"], "upstream": []},
            "Splitter:A": {"obj": {"component_name": "Splitter", "params": {"x": "{Splitter:A@chunks} and { Splitter:A@y }", "who": "Splitter:A"}}, "downstream": [], "upstream": ["File"]},
        },
        "path": ["File", "Splitter:A"],
        "history": [["assistant", "see {Splitter:A@chunks}"]],
        "graph": {
            "nodes": [{"id": "Splitter:A", "type": "splitterNode", "data": {"label": "Splitter", "name": "Splitter", "form": {"t": "{Splitter:A@z}"}}}],
            "edges": [{"id": "xy-edge__Filestart-Splitter:Aend", "source": "File", "target": "Splitter:A"}]
        }
    });
    let n = normalize(doc);
    let c = comp(&n, "TokenChunker:A");
    assert_eq!(c["obj"]["component_name"], "TokenChunker");
    assert_eq!(
        c["obj"]["params"]["x"],
        "{TokenChunker:A@chunks} and { TokenChunker:A@y }"
    );
    assert_eq!(c["obj"]["params"]["who"], "TokenChunker:A");
    assert_eq!(comp(&n, "File")["downstream"], json!(["TokenChunker:A"]));
    assert_eq!(n.value["path"], json!(["File", "TokenChunker:A"]));
    assert_eq!(n.value["history"][0][1], "see {TokenChunker:A@chunks}");
    let g = &n.value["graph"];
    assert_eq!(g["nodes"][0]["id"], "TokenChunker:A");
    assert_eq!(g["nodes"][0]["type"], "chunkerNode");
    assert_eq!(g["nodes"][0]["data"]["label"], "TokenChunker");
    assert_eq!(g["nodes"][0]["data"]["form"]["t"], "{TokenChunker:A@z}");
    assert_eq!(g["edges"][0]["id"], "xy-edge__Filestart-TokenChunker:Aend");
    assert_eq!(g["edges"][0]["target"], "TokenChunker:A");
    assert_idempotent(&n);
}

#[test]
fn legacy_generate_answer_and_message_are_rewritten() {
    let doc = json!({
        "components": {
            "begin": {"obj": {"component_name": "Begin", "params": {"prologue": "hi"}}, "downstream": ["answer:0"], "upstream": []},
            "answer:0": {"obj": {"component_name": "Answer", "params": {}}, "downstream": ["categorize:0"], "upstream": ["begin", "generate:0", "message:0"]},
            "categorize:0": {"obj": {"component_name": "Categorize", "params": {"category_description": {"a": {"to": "retrieval:0"}, "b": {"to": "message:0"}}}}, "downstream": ["retrieval:0", "message:0"], "upstream": ["answer:0"]},
            "retrieval:0": {"obj": {"component_name": "Retrieval", "params": {"kb_ids": []}}, "downstream": ["generate:0"], "upstream": ["categorize:0"]},
            "generate:0": {"obj": {"component_name": "Generate", "params": {"llm_id": "m", "prompt": "Use this:\n{input}\nName: {who}", "parameters": [{"key": "who", "component_id": "answer:0"}]}}, "downstream": ["answer:0"], "upstream": ["retrieval:0"]},
            "message:0": {"obj": {"component_name": "Message", "params": {"messages": ["bye"]}}, "downstream": ["answer:0"], "upstream": ["categorize:0"]},
        },
        "path": [], "history": [], "answer": []
    });
    let n = normalize(doc);
    let a = comp(&n, "answer:0");
    assert_eq!(a["obj"]["component_name"], "UserFillUp");
    assert_eq!(a["obj"]["params"]["inputs"]["answer"]["type"], "paragraph");
    assert_eq!(
        comp(&n, "categorize:0")["obj"]["params"]["query"],
        "{answer:0@answer}"
    );
    assert_eq!(
        comp(&n, "retrieval:0")["obj"]["params"]["query"],
        "{answer:0@answer}"
    );
    let g = &comp(&n, "generate:0")["obj"];
    assert_eq!(g["component_name"], "LLM");
    assert_eq!(
        g["params"]["sys_prompt"],
        "Use this:\n{retrieval:0@formalized_content}\nName: {answer:0@answer}"
    );
    assert!(g["params"].get("prompt").is_none());
    assert_eq!(
        g["params"]["prompts"],
        json!([{"role": "user", "content": "{answer:0@answer}"}])
    );
    // The LLM's answer is shown by a Message before the form, as the Answer did.
    assert_eq!(
        comp(&n, "generate:0")["downstream"],
        json!(["Message:generate_0"])
    );
    let m = comp(&n, "Message:generate_0");
    assert_eq!(
        m["obj"]["params"]["content"],
        json!(["{generate:0@content}"])
    );
    assert_eq!(m["downstream"], json!(["answer:0"]));
    assert_eq!(
        comp(&n, "answer:0")["upstream"],
        json!(["begin", "Message:generate_0", "message:0"])
    );
    let msg = &comp(&n, "message:0")["obj"]["params"];
    assert_eq!(msg["content"], json!(["bye"]));
    assert!(msg.get("messages").is_none());
    assert_eq!(n.value["answer"], json!([]), "unknown keys are kept");
    assert_idempotent(&n);
}

#[test]
fn upstream_drops_repeats_quietly_non_ids_with_a_note_and_replaces_a_non_list() {
    let doc = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["A", "B", "C"]},
        "X": {"obj": {"component_name": "Message", "params": {}}, "downstream": ["C"]},
        "A": {"obj": {"component_name": "Message", "params": {}}, "downstream": [], "upstream": ["begin", "begin", 3]},
        "B": {"obj": {"component_name": "Message", "params": {}}, "downstream": [], "upstream": "begin"},
        "C": {"obj": {"component_name": "Message", "params": {}}, "downstream": [], "upstream": ["X", "begin"]},
    }});
    let n = normalize(doc);
    assert_eq!(comp(&n, "A")["upstream"], json!(["begin"]));
    assert_eq!(comp(&n, "B")["upstream"], json!(["begin"]));
    assert_eq!(
        comp(&n, "C")["upstream"],
        json!(["X", "begin"]),
        "order kept"
    );
    let details: Vec<&str> = n.applied.iter().map(|a| a.detail.as_str()).collect();
    assert_eq!(
        details,
        [
            "dropped 3: it does not route to \"A\"",
            "added \"begin\": it routes to \"B\"",
        ]
    );
    assert_idempotent(&n);
}

#[test]
fn a_source_that_routes_to_a_target_several_ways_is_listed_once_in_component_order() {
    // S reaches T by downstream twice, a Switch case and its else branch; U and V reach
    // T too. T's sources are listed once each, in component order, not route order.
    let doc = json!({"components": {
        "V": {"obj": {"component_name": "Message", "params": {}}, "downstream": ["T"]},
        "S": {"obj": {"component_name": "Switch", "params": {
            "conditions": [{"to": ["T"]}, {"to": "T"}], "end_cpn_ids": ["T", "T"]}},
            "downstream": ["T", "T"]},
        "U": {"obj": {"component_name": "Message", "params": {}}, "downstream": ["T"]},
        "T": {"obj": {"component_name": "Message", "params": {}}, "downstream": [], "upstream": []},
    }});
    let n = normalize(doc);
    assert_eq!(comp(&n, "T")["upstream"], json!(["V", "S", "U"]));
    let details: Vec<&str> = n.applied.iter().map(|a| a.detail.as_str()).collect();
    assert_eq!(
        details,
        [
            "added \"V\": it routes to \"T\"",
            "added \"S\": it routes to \"T\"",
            "added \"U\": it routes to \"T\"",
        ]
    );
    assert_idempotent(&n);
}

#[test]
fn upstream_is_made_to_match_downstream() {
    let doc = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["A", "B"]},
        "A": {"obj": {"component_name": "Message", "params": {}}, "downstream": [], "upstream": ["nowhere", "begin"]},
        "B": {"obj": {"component_name": "Message", "params": {}}, "downstream": [], "upstream": []},
    }});
    let n = normalize(doc);
    assert_eq!(comp(&n, "A")["upstream"], json!(["begin"]));
    assert_eq!(comp(&n, "B")["upstream"], json!(["begin"]));
    assert!(
        comp(&n, "begin").get("upstream").is_none(),
        "no key added when nothing is missing"
    );
    assert_eq!(rules_of(&n), ["links"]);
    assert_eq!(n.applied.len(), 2);
    assert!(
        n.applied[0].detail.contains("\"nowhere\""),
        "{:?}",
        n.applied
    );
    assert_idempotent(&n);
}

#[test]
fn flat_components_and_template_wrapper() {
    let doc = json!({"id": 7, "title": {"en": "t"}, "dsl": {"components": {
        "begin": {"name": "Begin", "params": {}, "downstream": ["M"], "upstream": []},
        "M": {"obj": {"component_name": "Message", "params": {"content": ["x"]}, "downstream": ["N"]}, "downstream": [], "upstream": ["begin"]},
        "N": {"obj": {"component_name": "Message", "params": {}}, "downstream": [], "upstream": ["M"]},
    }}});
    let n = normalize(doc);
    assert_eq!(n.value["id"], 7);
    let d = &n.value["dsl"]["components"];
    assert_eq!(
        d["begin"]["obj"],
        json!({"component_name": "Begin", "params": {}})
    );
    assert_eq!(d["M"]["downstream"], json!(["N"]));
    assert!(d["M"]["obj"].get("downstream").is_none());
    assert!(
        n.applied.iter().all(|a| a.pointer.starts_with("/dsl/")),
        "{:?}",
        n.applied
    );
    assert_idempotent(&n);
}

#[test]
fn current_canvases_are_left_alone() {
    let doc = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["M"], "upstream": []},
        "M": {"obj": {"component_name": "Message", "params": {"content": ["x"]}}, "downstream": [], "upstream": ["begin"]},
    }, "path": [], "history": [], "retrieval": [], "globals": {}});
    let n = normalize(doc.clone());
    assert_eq!(n.value, doc);
    assert!(n.applied.is_empty());
    // Not even an object: nothing to do, no panic.
    assert_eq!(normalize(json!([1, 2])).value, json!([1, 2]));
}

#[test]
fn every_ragflow_fixture_normalizes_idempotently() {
    let canvases = crate::fixtures::ragflow_canvases();
    if canvases.is_empty() {
        return;
    }
    assert!(canvases.len() >= 13, "only {} canvases", canvases.len());
    for (path, v) in canvases {
        let n = normalize(v);
        assert!(
            n.value.get("components").is_some_and(Value::is_object),
            "{}: no components after normalize",
            path.display()
        );
        assert_idempotent(&n);
    }
}
