//! The compiled canvas as data: its nodes (id, class, role, parameters, edges, declared
//! inputs and outputs) and the queries the scheduler and components make of them. It
//! holds no component instance, so a component's context can name it.

use std::sync::{Arc, OnceLock};

use indexmap::IndexMap;
use serde_json::{Value, json};

use super::refs::{self, RefElement};
use super::role::{ContainerKind, Role};
use super::state::{NodeState, RunState};
use canvas_dsl::Dsl;
use canvas_pyrt::Object;

/// One compiled node.
pub struct Node {
    /// Component id.
    pub id: String,
    /// Class name as written (`component_type` in events).
    pub class: String,
    /// Human name from the graph (`component_name` in events), or `""`.
    pub name: String,
    /// The part it plays in the run algorithm.
    pub role: Role,
    /// Parameters as written.
    pub params: Object,
    /// Routing targets.
    pub downstream: Vec<String>,
    /// Enclosing Iteration/Loop.
    pub parent_id: Option<String>,
    /// Declared input names (`params.inputs` keys).
    pub declared_inputs: Vec<String>,
    /// Declared output names (`params.outputs` keys, else the component's defaults).
    pub declared_outputs: Vec<String>,
    /// Its component's place in the canvas (the scheduler finds the implementation by it).
    pub index: usize,
    /// Its component's `text_refs`, once the scheduler asked for them.
    pub(crate) text_refs: OnceLock<Option<Vec<RefElement>>>,
    /// `id`, `name` and `class` as the events of its runs carry them.
    pub(crate) shared: SharedIds,
}

/// A node's id, name and class, shared by its events instead of copied into each.
#[derive(Debug, Clone)]
pub(crate) struct SharedIds {
    pub id: Arc<str>,
    pub name: Arc<str>,
    pub class: Arc<str>,
}

impl SharedIds {
    pub(crate) fn new(id: &str, name: &str, class: &str) -> SharedIds {
        SharedIds {
            id: id.into(),
            name: name.into(),
            class: class.into(),
        }
    }
}

/// The nodes of a canvas and the DSL they were compiled from.
pub struct Graph {
    /// Nodes in DSL order, hashed with foldhash: looked up by id several times a node.
    pub nodes: IndexMap<String, Node, foldhash::fast::RandomState>,
    /// The DSL it was compiled from (globals, variables, extra keys); each component's
    /// `params` and `downstream` were moved into its [`Node`].
    pub dsl: Dsl,
}

impl Graph {
    /// A node by id.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// RAGFlow's resume test on a path's first id: it contains, case-insensitively, the
    /// class name of a form (`"userfillup"`), whatever that component is.
    pub fn names_a_form(&self, id: &str) -> bool {
        let mut forms = self
            .nodes
            .values()
            .filter(|n| n.role == Role::Form)
            .peekable();
        if forms.peek().is_none() {
            return false;
        }
        let id = id.to_lowercase();
        forms.any(|n| id.contains(&n.class.to_lowercase()))
    }

    /// The first item child of container `parent` (RAGFlow's `get_start`).
    pub fn start_of(&self, parent: &str) -> Option<&str> {
        self.nodes
            .values()
            .find(|n| n.parent_id.as_deref() == Some(parent) && n.role == Role::ContainerItem)
            .map(|n| n.id.as_str())
    }

    /// Children of an Iteration/Loop in DSL order.
    pub fn children_of<'a>(&'a self, parent: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.nodes
            .values()
            .filter(move |n| n.parent_id.as_deref() == Some(parent))
    }

    /// RAGFlow's `get_input` for one parameter value of component `id` (`engine.md`
    /// §2.4): a bare reference resolves to its raw value, a text with references is
    /// formatted with Python `str()` of each value, any other value is itself.
    pub fn input_value(&self, st: &RunState, id: &str, v: &Value) -> Result<Value, refs::RefError> {
        match v {
            Value::String(s) if refs::is_ref(st, s) => refs::resolve(st, s),
            Value::String(s) => {
                let found = self.collect_refs(id, s);
                if found.is_empty() {
                    return Ok(v.clone());
                }
                let mut kv = Vec::with_capacity(found.len());
                for e in found {
                    let val = refs::resolve(st, &e.exp)?;
                    kv.push((e.raw, val));
                }
                Ok(Value::String(super::template::string_format(s, &kv)))
            }
            other => Ok(other.clone()),
        }
    }

    /// Collect a text's references for component `id`, resolving `{item}`-style aliases
    /// when `id` sits inside an Iteration.
    pub fn collect_refs(&self, id: &str, text: &str) -> Vec<RefElement> {
        let iteration = self
            .node(id)
            .and_then(|n| n.parent_id.as_deref())
            .and_then(|p| self.node(p))
            .filter(|p| p.role == Role::Container(ContainerKind::OverList))
            .map(|p| p.id.as_str());
        let alias = |a: &str| -> Option<String> {
            if !matches!(a, "item" | "index" | "result") {
                return None;
            }
            let start = self.start_of(iteration?)?;
            Some(format!("{start}@{a}"))
        };
        refs::collect(text, &alias)
    }

    /// The state of a fresh run: RAGFlow's `Canvas.reset()` applied to this DSL.
    pub fn fresh_state(&self) -> RunState {
        let mut st = RunState::default();
        let decls = self.dsl.variables.as_object();
        // Each value is copied once: `sys.*` reset by type, `env.*` from its
        // declaration (the DSL's value of a conversation variable is not used).
        let mut globals = Object::new();
        for (k, v) in self.dsl.globals.iter().flatten() {
            let v = if k.starts_with("sys.") {
                reset_by_type(v)
            } else if let Some(name) = k.strip_prefix("env.") {
                decls
                    .and_then(|d| d.get(name))
                    .map(variable_default)
                    .unwrap_or(json!(""))
            } else {
                v.clone()
            };
            globals.insert(k.clone(), v);
        }
        // Every sys key a run needs is back-filled (RAGFlow crashes without them).
        for (k, v) in [
            ("sys.query", json!("")),
            ("sys.user_id", json!("")),
            ("sys.conversation_turns", json!(0)),
            ("sys.files", json!([])),
            ("sys.history", json!([])),
        ] {
            globals.entry(k.to_string()).or_insert(v);
        }
        // Declared conversation variables missing from globals are added (RAGFlow
        // would crash on the first reference to them).
        if let Some(d) = decls {
            for (name, decl) in d {
                globals
                    .entry(format!("env.{name}"))
                    .or_insert_with(|| variable_default(decl));
            }
        }
        *st.globals_mut() = globals;
        // Nodes that declare no output share one empty state until they change.
        let empty = std::sync::Arc::new(NodeState::default());
        for (id, n) in &self.nodes {
            let ns = if n.declared_outputs.is_empty() {
                empty.clone()
            } else {
                let mut ns = NodeState::default();
                for o in &n.declared_outputs {
                    ns.outputs.insert(o.clone(), Value::Null);
                }
                std::sync::Arc::new(ns)
            };
            st.nodes.insert(id.clone(), ns);
        }
        st
    }
}

/// `reset()` of a `sys.*` value: by its current type.
fn reset_by_type(v: &Value) -> Value {
    match v {
        Value::String(_) => json!(""),
        Value::Bool(_) => json!(0),
        Value::Number(n) if n.is_f64() => json!(0),
        Value::Number(_) => json!(0),
        Value::Array(_) => json!([]),
        Value::Object(_) => json!({}),
        Value::Null => Value::Null,
    }
}

/// A conversation variable's starting value: its `value`, else a default by `type`.
fn variable_default(decl: &Value) -> Value {
    match decl.get("value") {
        Some(v) if !v.is_null() => v.clone(),
        _ => {
            let t = decl
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_ascii_lowercase();
            match t.as_str() {
                "number" => json!(0),
                "boolean" => json!(false),
                "object" => json!({}),
                t if t.starts_with("array") => json!([]),
                _ => json!(""),
            }
        }
    }
}
