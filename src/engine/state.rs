//! `RunState`: everything needed to continue a run (path, outputs, globals, history).
//!
//! It is plain data, serialisable as a checkpoint. Component outputs follow RAGFlow's
//! storage model (`engine.md` §2.2): a declared output that has no value yet holds
//! `null`; an output that was never declared nor set reads as `""`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::value::Object;

/// Outputs and recorded input values of one component.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NodeState {
    /// Output name → value (insertion order is RAGFlow's: declared, then as first set).
    pub outputs: Object,
    /// Input name → value recorded while the component ran.
    pub inputs: Object,
}

/// The mutable state of one run (a RAGFlow session).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunState {
    /// RAGFlow's execution path: every component id appended so far in this session.
    pub path: Vec<String>,
    /// `sys.*` and `env.*` variables.
    pub globals: Object,
    /// Conversation turns: `[role, value]`.
    pub history: Vec<(String, Value)>,
    /// References per run (`engine.md` §4.8).
    pub retrieval: Vec<Value>,
    /// Per component state, keyed by component id.
    pub nodes: HashMap<String, NodeState>,
    /// IterationItem / LoopItem pass counters (`_idx`), keyed by the item's id.
    pub counters: HashMap<String, i64>,
}

impl RunState {
    /// RAGFlow's `output(name)`: the value, or `""` when the key was never declared.
    pub fn output(&self, cpn: &str, name: &str) -> Value {
        self.nodes
            .get(cpn)
            .and_then(|n| n.outputs.get(name))
            .cloned()
            .unwrap_or_else(|| Value::String(String::new()))
    }

    /// RAGFlow's `set_output`: creates the key at the end when new.
    pub fn set_output(&mut self, cpn: &str, name: &str, v: Value) {
        self.nodes
            .entry(cpn.to_string())
            .or_default()
            .outputs
            .insert(name.to_string(), v);
    }

    /// The `_ERROR` output of a component, when set to a non-null value.
    pub fn error_of(&self, cpn: &str) -> Option<String> {
        match self.nodes.get(cpn)?.outputs.get("_ERROR")? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }

    /// True when the component id exists in this run.
    pub fn has_node(&self, cpn: &str) -> bool {
        self.nodes.contains_key(cpn)
    }
}
