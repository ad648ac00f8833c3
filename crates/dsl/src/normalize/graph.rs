//! Rules that read the editor's graph (`graph.nodes`, `graph.edges`): handle repair,
//! components derived from a graph-only export, and Loop/Iteration membership.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{Log, Object, components_mut, graph_list_mut, id_list};

/// Labels of graph nodes that are not components (`buildDslComponentsByGraph`).
const NOT_COMPONENTS: &[&str] = &["Note", "Tool", "Placeholder"];

/// The edges of the graph, or none.
fn edges(dsl: &Object) -> Vec<Edge> {
    dsl.get("graph")
        .and_then(|g| g.get("edges"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Edge::read).collect())
        .unwrap_or_default()
}

/// One edge of the editor's graph.
struct Edge {
    source: String,
    target: String,
    source_handle: String,
    target_handle: String,
}

impl Edge {
    fn read(v: &Value) -> Option<Edge> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (source, target) = (s("source"), s("target"));
        if source.is_empty() || target.is_empty() {
            return None;
        }
        Some(Edge {
            source,
            target,
            source_handle: s("sourceHandle"),
            target_handle: s("targetHandle"),
        })
    }
}

/// N1 (the Go port's handle repair): a source handle `"end"` becomes `"start"` and a
/// target handle `"start"` becomes `"end"`, so every edge leaves a node's right side and
/// enters the next one's left side. Other handles (`Case 1`, category uuids,
/// `agentBottom`, ...) carry routing and are left alone.
pub(super) fn handle_ids(dsl: &mut Object, log: &mut Log) {
    let Some(edges) = graph_list_mut(dsl, "edges") else {
        return;
    };
    for (i, e) in edges.iter_mut().enumerate() {
        let Some(e) = e.as_object_mut() else { continue };
        for (key, from, to) in [
            ("sourceHandle", "end", "start"),
            ("targetHandle", "start", "end"),
        ] {
            if e.get(key).and_then(Value::as_str) == Some(from) {
                e.insert(key.to_string(), json!(to));
                log.note(
                    &["graph", "edges", &i.to_string(), key],
                    format!("{key} {from:?} → {to:?}"),
                );
            }
        }
    }
}

/// Components derived from a graph-only export (`{globals, graph, variables}`), with the
/// rules of RAGFlow's web editor (`buildDslComponentsByGraph`, `go-port.md` §2.2): notes,
/// tool nodes and sub-agents are not components; Agent exception edges become
/// `exception_goto`, sub-agents become Agent tools; Categorize routes come from the
/// item-uuid handles; Switch routes missing from the form come from `Case N` handles.
/// `upstream` is the mirror of `downstream`. The run-state keys RAGFlow requires
/// (`history`, `path`, `retrieval`) are added empty.
pub(super) fn components_from_graph(dsl: &mut Object, log: &mut Log) {
    if dsl
        .get("components")
        .and_then(Value::as_object)
        .is_some_and(|c| !c.is_empty())
    {
        return;
    }
    let Some(nodes) = dsl
        .get("graph")
        .and_then(|g| g.get("nodes"))
        .and_then(Value::as_array)
        .filter(|n| !n.is_empty())
        .cloned()
    else {
        return;
    };
    let edges = edges(dsl);
    let sub_agents: HashSet<&str> = edges
        .iter()
        .filter(|e| e.target_handle == "agentTop" || e.source_handle == "agentBottom")
        .map(|e| e.target.as_str())
        .collect();
    let node_by_id = |id: &str| {
        nodes
            .iter()
            .find(|n| n.get("id").and_then(Value::as_str) == Some(id))
    };
    let mut comps = Object::new();
    for (index, node) in nodes.iter().enumerate() {
        let Some(id) = node.get("id").and_then(Value::as_str) else {
            continue;
        };
        let label = label_of(node);
        if label.is_empty() || NOT_COMPONENTS.contains(&label) || sub_agents.contains(id) {
            continue;
        }
        let mut params = form_of(node);
        let downstream = downstream_of(id, label, &edges);
        match label {
            "Agent" => {
                let mut seen = HashSet::from([id.to_string()]);
                agent_links(id, &mut params, &edges, &node_by_id, &mut seen);
            }
            "Categorize" => categorize_routes(id, &mut params, &edges),
            "Switch" => switch_routes(id, &mut params, &edges),
            "Begin" => begin_inputs(&mut params),
            _ => {}
        }
        let mut comp = Object::new();
        comp.insert(
            "obj".into(),
            json!({"component_name": label, "params": Value::Object(params)}),
        );
        comp.insert("downstream".into(), json!(downstream));
        comp.insert("upstream".into(), json!([]));
        if let Some(p) = node.get("parentId").and_then(Value::as_str) {
            if !p.is_empty() {
                comp.insert("parent_id".into(), json!(p));
            }
        }
        log.note(
            &["components", id],
            format!("derived from graph node {index} ({label})"),
        );
        comps.insert(id.to_string(), Value::Object(comp));
    }
    mirror_upstream(&mut comps);
    dsl.shift_insert(0, "components".into(), Value::Object(comps));
    env_globals(dsl, log);
    for key in ["history", "path", "retrieval"] {
        if !dsl.contains_key(key) {
            dsl.insert(key.into(), json!([]));
            log.note(&[key], format!("added an empty `{key}`"));
        }
    }
}

fn label_of(node: &Value) -> &str {
    node.get("data")
        .and_then(|d| d.get("label"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `data.form` (a `null` form is `{}`).
fn form_of(node: &Value) -> Object {
    node.get("data")
        .and_then(|d| d.get("form"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Targets of the node's edges, in edge order, without duplicates. An Agent's exception
/// edges, tool edges and sub-agent edges are not routes.
fn downstream_of(id: &str, label: &str, edges: &[Edge]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in edges.iter().filter(|e| e.source == id) {
        if label == "Agent"
            && (e.source_handle == "agentException"
                || e.target.starts_with("Tool")
                || (e.target.starts_with("Agent") && e.target_handle == "agentTop"))
        {
            continue;
        }
        if !out.contains(&e.target) {
            out.push(e.target.clone());
        }
    }
    out
}

/// An Agent's `exception_goto` (its exception-handle edges) and its sub-agents as
/// `tools` entries, recursively.
fn agent_links<'a>(
    id: &str,
    params: &mut Object,
    edges: &[Edge],
    node_by_id: &dyn Fn(&str) -> Option<&'a Value>,
    seen: &mut HashSet<String>,
) {
    let goto: Vec<String> = edges
        .iter()
        .filter(|e| e.source == id && e.source_handle == "agentException")
        .map(|e| e.target.clone())
        .collect();
    if !goto.is_empty() {
        params.insert("exception_goto".into(), json!(goto));
    }
    let subs: Vec<&str> = edges
        .iter()
        .filter(|e| e.source == id && e.source_handle == "agentBottom")
        .map(|e| e.target.as_str())
        .collect();
    if subs.is_empty() {
        return;
    }
    let mut tools = match params.remove("tools") {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    for sub in subs {
        if !seen.insert(sub.to_string()) {
            continue;
        }
        let Some(node) = node_by_id(sub) else {
            continue;
        };
        let mut sub_params = form_of(node);
        agent_links(sub, &mut sub_params, edges, node_by_id, seen);
        let name = node
            .get("data")
            .and_then(|d| d.get("name"))
            .and_then(Value::as_str)
            .unwrap_or(sub);
        tools.push(json!({"component_name": "Agent", "id": sub, "name": name, "params": Value::Object(sub_params)}));
    }
    params.insert("tools".into(), Value::Array(tools));
}

/// Categorize `items` (editor form) → `category_description`, with each category's
/// targets read from the edges leaving its uuid handle.
fn categorize_routes(id: &str, params: &mut Object, edges: &[Edge]) {
    let Some(Value::Array(items)) = params.remove("items") else {
        return;
    };
    let mut cats = match params.remove("category_description") {
        Some(Value::Object(o)) => o,
        _ => Object::new(),
    };
    for item in &items {
        let Some(name) = item.get("name").and_then(Value::as_str) else {
            continue;
        };
        let uuid = item.get("uuid").and_then(Value::as_str).unwrap_or("");
        let examples: Vec<Value> = match item.get("examples") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|e| match e {
                    Value::String(s) => Some(json!(s)),
                    Value::Object(o) => o.get("value").cloned(),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let to: Vec<&str> = edges
            .iter()
            .filter(|e| e.source == id && !uuid.is_empty() && e.source_handle == uuid)
            .map(|e| e.target.as_str())
            .collect();
        cats.insert(
            name.to_string(),
            json!({
                "description": item.get("description").cloned().unwrap_or(json!("")),
                "examples": examples,
                "to": to,
            }),
        );
    }
    params.insert("category_description".into(), Value::Object(cats));
}

/// Switch routes the form lacks, from the `Case N` and `end_cpn_ids` edge handles (the
/// editor normally keeps the form in sync, so filled routes are left as they are).
fn switch_routes(id: &str, params: &mut Object, edges: &[Edge]) {
    let out: Vec<&Edge> = edges.iter().filter(|e| e.source == id).collect();
    if let Some(Value::Array(conds)) = params.get_mut("conditions") {
        for (i, c) in conds.iter_mut().enumerate() {
            let Some(c) = c.as_object_mut() else { continue };
            if !id_list(c.get("to")).is_empty() {
                continue;
            }
            let handle = format!("Case {}", i + 1);
            let to: Vec<&str> = out
                .iter()
                .filter(|e| e.source_handle == handle)
                .map(|e| e.target.as_str())
                .collect();
            c.insert("to".into(), json!(to));
        }
    }
    if id_list(params.get("end_cpn_ids")).is_empty() {
        let to: Vec<&str> = out
            .iter()
            .filter(|e| e.source_handle == "end_cpn_ids")
            .map(|e| e.target.as_str())
            .collect();
        params.insert("end_cpn_ids".into(), json!(to));
    }
}

/// The editor's Begin form may list inputs as `[{key, name, type, ...}]`; the stored DSL
/// keys them by `key` (`transformBeginParams`).
fn begin_inputs(params: &mut Object) {
    let Some(Value::Array(list)) = params.get("inputs") else {
        return;
    };
    let mut inputs = Object::new();
    for item in list {
        let Some(o) = item.as_object() else { continue };
        let Some(key) = o.get("key").and_then(Value::as_str) else {
            continue;
        };
        let mut rest = o.clone();
        rest.remove("key");
        inputs.insert(key.to_string(), Value::Object(rest));
    }
    params.insert("inputs".into(), Value::Object(inputs));
}

/// Fill every component's `upstream` from the others' `downstream`.
fn mirror_upstream(comps: &mut Object) {
    let mut pairs = Vec::new();
    for (id, c) in comps.iter() {
        for t in id_list(c.get("downstream")) {
            pairs.push((t, id.clone()));
        }
    }
    for (target, source) in pairs {
        if let Some(Value::Array(up)) = comps.get_mut(&target).and_then(|c| c.get_mut("upstream")) {
            if !up.iter().any(|u| u.as_str() == Some(&source)) {
                up.push(json!(source));
            }
        }
    }
}

/// `env.<name>` globals for declared conversation variables (`buildDslGlobalVariables`).
fn env_globals(dsl: &mut Object, log: &mut Log) {
    let Some(vars) = dsl.get("variables").and_then(Value::as_object).cloned() else {
        return;
    };
    if vars.is_empty() {
        return;
    }
    let globals = dsl
        .entry("globals")
        .or_insert_with(|| Value::Object(Object::new()));
    let Some(globals) = globals.as_object_mut() else {
        return;
    };
    for (name, decl) in vars {
        let key = format!("env.{name}");
        if !globals.contains_key(&key) {
            let v = decl.get("value").cloned().unwrap_or(json!(""));
            globals.insert(key.clone(), v);
            log.note(&["globals", &key], "added from `variables`");
        }
    }
}

/// Loop and Iteration membership lives in `parent_id`; an export whose components lack it
/// but whose graph nodes carry `parentId` gets it filled in (the Go port reads only the
/// graph, Python only `parent_id`).
pub(super) fn parents_from_graph(dsl: &mut Object, log: &mut Log) {
    let parents: Vec<(String, String)> = dsl
        .get("graph")
        .and_then(|g| g.get("nodes"))
        .and_then(Value::as_array)
        .map(|nodes| {
            nodes
                .iter()
                .filter_map(|n| {
                    let id = n.get("id")?.as_str()?;
                    let p = n.get("parentId")?.as_str()?;
                    (!p.is_empty()).then(|| (id.to_string(), p.to_string()))
                })
                .collect()
        })
        .unwrap_or_default();
    let Some(comps) = components_mut(dsl) else {
        return;
    };
    for (id, parent) in parents {
        let Some(c) = comps.get_mut(&id).and_then(Value::as_object_mut) else {
            continue;
        };
        let has = c
            .get("parent_id")
            .and_then(Value::as_str)
            .is_some_and(|p| !p.is_empty());
        // A parent that is not a component is still recorded: lint reports it as
        // dangling rather than the membership being lost.
        if !has {
            c.insert("parent_id".into(), json!(parent));
            log.note(
                &["components", &id, "parent_id"],
                format!("set to {parent:?} from the graph"),
            );
        }
    }
}
