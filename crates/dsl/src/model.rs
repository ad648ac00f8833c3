//! Serde types of the stored DSL (`engine.md` §1.1). Unknown keys are kept in `extra`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A JSON object with key order kept.
pub type Object = Map<String, Value>;

/// A canvas in RAGFlow's stored form (`components` + run state).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Dsl {
    /// Component id → component, in file order.
    pub components: indexmap::IndexMap<String, ComponentDef>,
    /// The session's execution path (`[]` for a fresh canvas).
    #[serde(default, deserialize_with = "null_default")]
    pub path: Vec<String>,
    /// Conversation turns `[role, value]`.
    #[serde(default, deserialize_with = "null_default")]
    pub history: Vec<Value>,
    /// References per run.
    #[serde(default)]
    pub retrieval: Value,
    /// `sys.*` / `env.*` variables.
    #[serde(default)]
    pub globals: Option<Object>,
    /// Conversation-variable declarations (may be `null`, `[]` or an object).
    #[serde(default)]
    pub variables: Value,
    /// The editor's graph (only used for human names here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<Value>,
    /// Every other top-level key, kept as is.
    #[serde(flatten)]
    pub extra: Object,
}

/// One entry of `components`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ComponentDef {
    /// The class and its parameters.
    pub obj: ComponentObj,
    /// Routing targets.
    #[serde(default, deserialize_with = "null_default")]
    pub downstream: Vec<String>,
    /// Sources (never used by the engine).
    #[serde(default, deserialize_with = "null_default")]
    pub upstream: Vec<String>,
    /// The enclosing Iteration/Loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Every other key, kept as is.
    #[serde(flatten)]
    pub extra: Object,
}

/// `obj`: the component class name and its parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ComponentObj {
    /// RAGFlow class name (`Begin`, `Message`, ...).
    pub component_name: String,
    /// Parameters as written.
    #[serde(default, deserialize_with = "null_default")]
    pub params: Object,
    /// Every other key, kept as is.
    #[serde(flatten)]
    pub extra: Object,
}

/// Treat an explicit `null` like a missing key.
fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl Dsl {
    /// The human name of a component from `graph.nodes[].data.name`, or `""`.
    pub fn graph_name(&self, id: &str) -> String {
        let Some(nodes) = self
            .graph
            .as_ref()
            .and_then(|g| g.get("nodes"))
            .and_then(Value::as_array)
        else {
            return String::new();
        };
        nodes
            .iter()
            .find(|n| n.get("id").and_then(Value::as_str) == Some(id))
            .and_then(|n| n.get("data")?.get("name")?.as_str())
            .unwrap_or("")
            .to_string()
    }
}

pub use canvas_pyrt::truthy;

/// "null", "a string", "an array", ... for messages.
pub fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
