//! Compile a DSL into a `Canvas`: one component instance per node, checked references
//! between nodes, and the fresh run state (RAGFlow's `Canvas.reset()`).

use indexmap::IndexMap;
use serde_json::{Value, json};

use super::component::{Component, ContainerKind, Role};
use super::refs::{self, RefElement};
use super::state::{NodeState, RunState};
use canvas_dsl::Dsl;
use canvas_pyrt::Object;

/// RAGFlow starts every run at the component with this id.
pub const ENTRY_ID: &str = "begin";

/// Builds component instances from DSL class names (implemented by `components::Registry`).
pub trait Registry {
    /// Build the component for class `name` with these params.
    fn build(&self, name: &str, params: &Object) -> Result<Box<dyn Component>, BuildError>;

    /// Why a legacy class (from RAGFlow's older DSL) cannot run, if `name` is one.
    fn legacy(&self, _name: &str) -> Option<&'static str> {
        None
    }
}

/// Why a component could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// No such component class.
    #[error("unknown component type {0:?}")]
    Unknown(String),
    /// The parameters fail RAGFlow's `check()`.
    #[error("{0}")]
    Params(String),
}

/// Why a canvas cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompileError {
    /// No component with id `begin`.
    #[error("no component with id \"begin\"{}", found.as_ref().map(|f| format!(" (the Begin component is {f:?}; RAGFlow requires the id \"begin\")")).unwrap_or_default())]
    MissingBegin {
        /// The id of a Begin component with another id, if any.
        found: Option<String>,
    },
    /// A legacy component RAGFlow itself can no longer run.
    #[error("component {id:?} ({name}): {why}")]
    Legacy {
        /// Component id.
        id: String,
        /// Class name.
        name: String,
        /// What replaced it.
        why: String,
    },
    /// A component class this build does not know.
    #[error("component {id:?}: unknown component type {name:?}")]
    UnknownComponent {
        /// Component id.
        id: String,
        /// Class name.
        name: String,
    },
    /// A `downstream` id that does not exist.
    #[error("component {id:?}: downstream {target:?} does not exist")]
    DanglingDownstream {
        /// Component id.
        id: String,
        /// The missing target.
        target: String,
    },
    /// A `parent_id` that does not exist.
    #[error("component {id:?}: parent_id {parent:?} does not exist")]
    DanglingParent {
        /// Component id.
        id: String,
        /// The missing parent.
        parent: String,
    },
    /// Parameters RAGFlow's `check()` rejects.
    #[error("component {id:?} ({name}): {message}")]
    Params {
        /// Component id.
        id: String,
        /// Class name.
        name: String,
        /// The check's message.
        message: String,
    },
}

impl CompileError {
    /// What to do about it, for the line after the error.
    pub fn hint(&self) -> &'static str {
        match self {
            CompileError::UnknownComponent { .. } => {
                "`canvas components` lists the components this build runs"
            }
            CompileError::Legacy { .. } => {
                "replace the component in RAGFlow's editor, then export the canvas again"
            }
            _ => "`canvas validate FILE` lists every problem with its line and column",
        }
    }
}

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
    /// The implementation.
    pub component: Box<dyn Component>,
}

/// A canvas ready to run.
pub struct Canvas {
    /// Nodes in DSL order.
    pub nodes: IndexMap<String, Node>,
    /// The DSL it was compiled from (globals, variables, extra keys).
    pub dsl: Dsl,
}

impl Canvas {
    /// Compile a DSL with a component registry.
    pub fn compile(dsl: Dsl, registry: &dyn Registry) -> Result<Canvas, CompileError> {
        if !dsl.components.contains_key(ENTRY_ID) {
            let found = dsl
                .components
                .iter()
                .find(|(_, c)| {
                    registry
                        .build(&c.obj.component_name, &c.obj.params)
                        .is_ok_and(|b| b.role() == Role::Entry)
                })
                .map(|(id, _)| id.clone());
            return Err(CompileError::MissingBegin { found });
        }
        // Legacy classes first: they explain every other oddity of an old canvas.
        for (id, def) in &dsl.components {
            if let Some(why) = registry.legacy(&def.obj.component_name) {
                return Err(CompileError::Legacy {
                    id: id.clone(),
                    name: def.obj.component_name.clone(),
                    why: why.to_string(),
                });
            }
        }
        let mut nodes = IndexMap::with_capacity(dsl.components.len());
        for (id, def) in &dsl.components {
            let name = &def.obj.component_name;
            let component = registry.build(name, &def.obj.params).map_err(|e| match e {
                BuildError::Unknown(_) => CompileError::UnknownComponent {
                    id: id.clone(),
                    name: name.clone(),
                },
                BuildError::Params(message) => CompileError::Params {
                    id: id.clone(),
                    name: name.clone(),
                    message,
                },
            })?;
            for t in &def.downstream {
                if !dsl.components.contains_key(t) {
                    return Err(CompileError::DanglingDownstream {
                        id: id.clone(),
                        target: t.clone(),
                    });
                }
            }
            let parent_id = def.parent_id.clone().filter(|p| !p.is_empty());
            if let Some(p) = &parent_id {
                if !dsl.components.contains_key(p) {
                    return Err(CompileError::DanglingParent {
                        id: id.clone(),
                        parent: p.clone(),
                    });
                }
            }
            let mut params = def.obj.params.clone();
            let mut declared_inputs: Vec<String> = match params.get("inputs") {
                Some(Value::Object(o)) => o.keys().cloned().collect(),
                _ => Vec::new(),
            };
            // A tool's meta parameters are inputs too, with their defaults.
            for (k, default) in component.input_params() {
                if !declared_inputs.contains(&k) {
                    declared_inputs.push(k.clone());
                }
                params.entry(k).or_insert(default);
            }
            let declared_outputs = match params.get("outputs") {
                Some(Value::Object(o)) => o.keys().cloned().collect(),
                _ => component
                    .default_outputs()
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            };
            nodes.insert(
                id.clone(),
                Node {
                    id: id.clone(),
                    class: name.clone(),
                    name: dsl.graph_name(id),
                    role: component.role(),
                    params,
                    downstream: def.downstream.clone(),
                    parent_id,
                    declared_inputs,
                    declared_outputs,
                    component,
                },
            );
        }
        Ok(Canvas { nodes, dsl })
    }

    /// A node by id.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// RAGFlow's resume test on a path's first id: it contains, case-insensitively, the
    /// class name of a form (`"userfillup"`), whatever that component is.
    pub fn names_a_form(&self, id: &str) -> bool {
        let id = id.to_lowercase();
        self.nodes
            .values()
            .filter(|n| n.role == Role::Form)
            .any(|n| id.contains(&n.class.to_lowercase()))
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
        let mut globals = self.dsl.globals.clone().unwrap_or_default();
        for (k, v) in globals.iter_mut() {
            if k.starts_with("sys.") {
                *v = reset_by_type(v);
            }
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
        let decls = self.dsl.variables.as_object();
        let env_keys: Vec<String> = globals
            .keys()
            .filter(|k| k.starts_with("env."))
            .cloned()
            .collect();
        for k in env_keys {
            let name = &k["env.".len()..];
            let v = decls
                .and_then(|d| d.get(name))
                .map(variable_default)
                .unwrap_or(json!(""));
            globals.insert(k, v);
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
        st.globals = globals;
        for (id, n) in &self.nodes {
            let mut ns = NodeState::default();
            for o in &n.declared_outputs {
                ns.outputs.insert(o.clone(), Value::Null);
            }
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
