//! Serde types of the stored DSL (`engine.md` §1.1). Unknown keys are kept in `extra`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A JSON object with key order kept.
pub type Object = Map<String, Value>;

/// `o[key]`, by a scan when `o` is small (params and entries mostly are: cheaper than
/// hashing the key with the map's SipHash).
pub(crate) fn field<'a>(o: &'a Object, key: &str) -> Option<&'a Value> {
    if o.len() > 8 {
        return o.get(key);
    }
    o.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
}

/// `v[key]` when `v` is an object, as [`field`] finds it.
pub(crate) fn member<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|o| field(o, key))
}

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

impl ComponentDef {
    /// The entry `c` as a `ComponentDef`, its parts moved out of the value, when it has
    /// the plain shape (`obj.component_name` a string, `params` an object, the id lists
    /// lists of strings); `Err(c)` untouched otherwise, for serde to read it and say what
    /// is wrong. Same result as serde's, without its cost: `#[serde(flatten)]` makes serde
    /// copy the whole entry, parameters included, into an intermediate tree first.
    pub fn from_plain(c: Value) -> Result<ComponentDef, Value> {
        if !plain_shape(&c) {
            return Err(c);
        }
        let Value::Object(entry) = c else {
            return Err(c);
        };
        let mut def = ComponentDef {
            obj: ComponentObj {
                component_name: String::new(),
                params: Object::new(),
                extra: Object::new(),
            },
            downstream: Vec::new(),
            upstream: Vec::new(),
            parent_id: None,
            extra: Object::new(),
        };
        for (k, v) in entry {
            match (k.as_str(), v) {
                ("obj", Value::Object(obj)) => {
                    for (k, v) in obj {
                        match (k.as_str(), v) {
                            ("component_name", Value::String(name)) => {
                                def.obj.component_name = name;
                            }
                            ("params", Value::Object(params)) => def.obj.params = params,
                            ("params", _) => {}
                            (_, v) => {
                                def.obj.extra.insert(k, v);
                            }
                        }
                    }
                }
                ("downstream", v) => def.downstream = strings(v),
                ("upstream", v) => def.upstream = strings(v),
                ("parent_id", Value::String(p)) => def.parent_id = Some(p),
                ("parent_id", _) => {}
                (_, v) => {
                    def.extra.insert(k, v);
                }
            }
        }
        Ok(def)
    }
}

/// Whether [`ComponentDef::from_plain`] can move `c` (see there).
fn plain_shape(c: &Value) -> bool {
    let Some(entry) = c.as_object() else {
        return false;
    };
    let ids = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.iter().all(Value::is_string),
        Some(_) => false,
    };
    // Six members of small objects: found by a scan, not by hashing each key.
    let Some(obj) = field(entry, "obj").and_then(Value::as_object) else {
        return false;
    };
    field(obj, "component_name").is_some_and(Value::is_string)
        && matches!(
            field(obj, "params"),
            None | Some(Value::Null | Value::Object(_))
        )
        && ids(field(entry, "downstream"))
        && ids(field(entry, "upstream"))
        && matches!(
            field(entry, "parent_id"),
            None | Some(Value::Null | Value::String(_))
        )
}

/// A list of strings checked by [`plain_shape`], moved out (`null`: empty).
fn strings(v: Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .into_iter()
            .filter_map(|s| match s {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// `from_plain` gives serde's result whenever it takes an entry.
    fn agrees(c: &Value) {
        let by_serde = serde_json::from_value::<ComponentDef>(c.clone());
        match ComponentDef::from_plain(c.clone()) {
            Ok(def) => assert_eq!(Some(&def), by_serde.as_ref().ok(), "{c}"),
            Err(back) => assert_eq!(&back, c, "an entry it refuses comes back untouched"),
        }
    }

    #[test]
    fn plain_entries_are_read_as_serde_reads_them() {
        for c in [
            json!({"obj": {"component_name": "Begin", "params": {}}, "downstream": ["a"], "upstream": []}),
            json!({"obj": {"component_name": "X", "params": null, "z": 1, "a": [1]}, "parent_id": "it", "k": {"b": 2, "a": 1}}),
            json!({"obj": {"component_name": "X"}, "downstream": null, "parent_id": null}),
        ] {
            assert!(ComponentDef::from_plain(c.clone()).is_ok(), "{c}");
            agrees(&c);
        }
    }

    #[test]
    fn other_shapes_are_left_to_serde() {
        for c in [
            json!([]),
            json!({"downstream": []}),
            json!({"obj": {"params": {}}}),
            json!({"obj": {"component_name": 3}}),
            json!({"obj": {"component_name": "X", "params": []}}),
            json!({"obj": {"component_name": "X"}, "downstream": [1]}),
            json!({"obj": {"component_name": "X"}, "upstream": "a"}),
            json!({"obj": {"component_name": "X"}, "parent_id": 1}),
        ] {
            assert_eq!(ComponentDef::from_plain(c.clone()), Err(c.clone()));
            agrees(&c);
        }
    }

    #[test]
    fn every_ragflow_fixture_component_is_read_as_serde_reads_it() {
        let canvases = crate::fixtures::ragflow_canvases();
        if canvases.is_empty() {
            return;
        }
        let mut seen = 0;
        for (_, v) in &canvases {
            let n = crate::normalize::normalize(v.clone()).value;
            let comps = n
                .pointer("/components")
                .or_else(|| n.pointer("/dsl/components"))
                .and_then(Value::as_object);
            for c in comps.into_iter().flat_map(|m| m.values()) {
                agrees(c);
                seen += 1;
            }
        }
        assert!(seen > 100, "only {seen} components read");
    }

    /// A JSON value of the shapes a component entry's parts take.
    fn part() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z]{0,3}".prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                proptest::collection::vec(("[a-z_]{1,4}", inner), 0..3)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_entry_is_read_as_serde_reads_it(
            name in prop_oneof![Just(json!("X")), part()],
            params in prop_oneof![Just(json!({"a": 1})), part()],
            obj_extra in proptest::collection::vec(("[a-z_]{1,4}", part()), 0..3),
            ids in prop_oneof![Just(json!(["a", "b"])), part()],
            parent in prop_oneof![Just(json!("p")), part()],
            extra in proptest::collection::vec(("[a-z_]{1,10}", part()), 0..4),
        ) {
            let mut obj: Object = obj_extra.into_iter().collect();
            obj.insert("component_name".into(), name);
            obj.insert("params".into(), params);
            let mut c: Object = extra.into_iter().collect();
            c.insert("obj".into(), Value::Object(obj));
            c.insert("downstream".into(), ids.clone());
            c.insert("upstream".into(), ids);
            c.insert("parent_id".into(), parent);
            agrees(&Value::Object(c));
        }
    }
}
