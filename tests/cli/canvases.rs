//! Canvases generated for tests and the engine bench.
//!
//! Shared by the CLI tests (`crate::canvases`) and by `benches/engine.rs`, which
//! includes this file with `#[path]`.

use serde_json::{Map, Value, json};

/// `begin → VariableAssigner:1 … :n (env.count += 1) → Message:End`.
pub fn chain_canvas(n: usize) -> Value {
    let va = |i: usize| format!("VariableAssigner:{i}");
    let mut comps = Map::new();
    comps.insert("begin".into(), begin(&va(1)));
    for i in 1..=n {
        let up = if i == 1 {
            "begin".to_string()
        } else {
            va(i - 1)
        };
        let down = if i == n {
            "Message:End".to_string()
        } else {
            va(i + 1)
        };
        comps.insert(
            va(i),
            json!({
                "obj": {"component_name": "VariableAssigner",
                        "params": {"variables": [
                            {"variable": "env.count", "operator": "+=", "parameter": 1}
                        ]}},
                "downstream": [down],
                "upstream": [up]
            }),
        );
    }
    comps.insert(
        "Message:End".into(),
        json!({
            "obj": {"component_name": "Message", "params": {"content": ["count={env.count}"]}},
            "downstream": [],
            "upstream": [va(n)]
        }),
    );
    with_globals(comps)
}

/// `begin → Loop:L (i from 0 until i ≥ passes) → Message:Done`, body
/// `LoopItem:Start → VariableAssigner:Inc (Loop:L@i += 1)`; the final message is
/// `i=<passes>`.
pub fn loop_canvas(passes: u64) -> Value {
    json!({
        "components": {
            "begin": begin("Loop:L"),
            "Loop:L": {
                "obj": {"component_name": "Loop", "params": {
                    "loop_variables": [
                        {"variable": "i", "input_mode": "constant", "type": "number", "value": 0}
                    ],
                    "loop_termination_condition": [
                        {"variable": "Loop:L@i", "operator": "≥", "input_mode": "constant",
                         "value": passes}
                    ],
                    "logical_operator": "and",
                    "maximum_loop_count": 100_000
                }},
                "downstream": ["Message:Done"],
                "upstream": ["begin"]
            },
            "LoopItem:Start": {
                "obj": {"component_name": "LoopItem", "params": {}},
                "downstream": ["VariableAssigner:Inc"],
                "upstream": [],
                "parent_id": "Loop:L"
            },
            "VariableAssigner:Inc": {
                "obj": {"component_name": "VariableAssigner", "params": {"variables": [
                    {"variable": "Loop:L@i", "operator": "+=", "parameter": 1}
                ]}},
                "downstream": [],
                "upstream": ["LoopItem:Start"],
                "parent_id": "Loop:L"
            },
            "Message:Done": {
                "obj": {"component_name": "Message", "params": {"content": ["i={Loop:L@i}"]}},
                "downstream": [],
                "upstream": ["Loop:L"]
            }
        },
        "globals": {
            "sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0,
            "sys.files": [], "sys.history": []
        },
        "history": [], "path": [], "retrieval": [],
        "variables": {}
    })
}

/// [`loop_canvas`] with a call in every pass: the body is `LoopItem:Start →
/// VariableAssigner:Inc → Invoke:Gate` (GET `gate`). With a [`crate::peer::Gate`] there,
/// a test stops the run at a pass of its choosing whatever the engine's speed. The final
/// message is still `i=<passes>`.
pub fn gated_loop_canvas(passes: u64, gate: &str) -> Value {
    let mut c = loop_canvas(passes);
    let comps = &mut c["components"];
    comps["VariableAssigner:Inc"]["downstream"] = json!(["Invoke:Gate"]);
    comps["Invoke:Gate"] = json!({
        "obj": {"component_name": "Invoke",
                "params": {"url": gate, "method": "get", "timeout": 60}},
        "downstream": [],
        "upstream": ["VariableAssigner:Inc"],
        "parent_id": "Loop:L"
    });
    c
}

/// A conversational `begin` (prologue `Welcome.`, no inputs) leading to `downstream`.
pub fn begin(downstream: &str) -> Value {
    json!({
        "obj": {"component_name": "Begin",
                "params": {"mode": "conversational", "prologue": "Welcome.", "inputs": {}}},
        "downstream": [downstream],
        "upstream": []
    })
}

/// The canvas around `components`, with `env.count` declared.
pub fn with_globals(comps: Map<String, Value>) -> Value {
    json!({
        "components": comps,
        "globals": {
            "sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0,
            "sys.files": [], "sys.history": [], "env.count": 0
        },
        "history": [], "path": [], "retrieval": [],
        "variables": {"count": {"name": "count", "type": "number", "value": 0}}
    })
}

/// A form canvas: `UserFillUp:Ask` (tips `You asked '{sys.query}'. Name?`, a required
/// `name` and an optional `note`) → `Message:Hi` (`Hi <name> (<query>, turn <n>)`).
/// Used by the CLI tests only.
pub const FORM: &str = r#"{"components": {
  "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["UserFillUp:Ask"]},
  "UserFillUp:Ask": {"obj": {"component_name": "UserFillUp", "params": {"enable_tips": true,
      "tips": "You asked '{sys.query}'. Name?", "inputs": {"name": {"name": "Name", "type": "line", "optional": false},
      "note": {"name": "Note", "type": "line", "optional": true}}}}, "downstream": ["Message:Hi"]},
  "Message:Hi": {"obj": {"component_name": "Message", "params": {"content": ["Hi {UserFillUp:Ask@name} ({sys.query}, turn {sys.conversation_turns})"]}}, "downstream": []}}}"#;

/// The system prompt of [`agent_canvas`]'s tool-using Agents.
pub const WITH_TOOLS: &str = "You answer with the tools.";

/// `begin → <id> → Message:Out`: `<id>` is an Agent asked `{sys.query}` with
/// `sys_prompt`, at most 3 rounds and `tools`; Message:Out shows its content.
/// Used by the CLI tests only.
pub fn agent_canvas(id: &str, sys_prompt: &str, tools: Value) -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": [id], "upstream": []},
        id: {"obj": {"component_name": "Agent", "params": {
            "llm_id": "",
            "sys_prompt": sys_prompt,
            "prompts": [{"role": "user", "content": "{sys.query}"}],
            "max_rounds": 3,
            "tools": tools,
        }}, "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message",
            "params": {"content": [format!("{{{id}@content}}")]}}, "downstream": [], "upstream": [id]},
    }})
}

/// `begin → <id> → Message:Out`: `<id>` is a `class` node with `params`; Message:Out
/// shows its `output`. Used by the CLI tests only.
pub fn node_canvas(class: &str, id: &str, params: Value, output: &str) -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": [id], "upstream": []},
        id: {"obj": {"component_name": class, "params": params},
            "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message",
            "params": {"content": [format!("{{{id}@{output}}}")]}}, "downstream": [], "upstream": [id]},
    }})
}
