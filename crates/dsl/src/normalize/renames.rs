//! RAGFlow's chunker renames (`agent/dsl_migration.py:normalize_chunker_dsl`, `engine.md`
//! §1.4), which Python applies to every DSL it loads.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::{Value, json};

use super::{Log, Object};

/// (old prefix/class, new prefix/class).
const RENAMES: &[(&str, &str)] = &[
    ("Splitter", "TokenChunker"),
    ("HierarchicalMerger", "TitleChunker"),
    ("PDFGenerator", "DocGenerator"),
];

/// Python's reference pattern for ids in texts.
static REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\{+\s*)([A-Za-z0-9:_-]+)(@[A-Za-z0-9_.-]+)(\s*\}+)").expect("static regex")
});

/// The renamed class, if `name` is one of the old ones.
fn renamed_class(name: &str) -> Option<&'static str> {
    RENAMES.iter().find(|(o, _)| *o == name).map(|(_, n)| *n)
}

/// The renamed id, if `id` starts with an old prefix (`Splitter:Foo` → `TokenChunker:Foo`).
fn renamed_id(id: &str) -> Option<String> {
    RENAMES.iter().find_map(|(o, n)| {
        id.strip_prefix(o)
            .filter(|rest| rest.starts_with(':'))
            .map(|rest| format!("{n}{rest}"))
    })
}

/// Component ids with the old prefixes, and classes with the old names, get the new
/// ones; ids are rewritten wherever RAGFlow rewrites them (routing lists, `parent_id`,
/// `path`, the graph's nodes and edges, `{id@var}` references and whole-string ids in
/// every component and in `history`/`messages`/`reference`).
pub(super) fn chunker_renames(dsl: &mut Object, log: &mut Log) {
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    if let Some(comps) = dsl.get("components").and_then(Value::as_object) {
        for id in comps.keys() {
            if let Some(n) = renamed_id(id) {
                ids.insert(id.clone(), n);
            }
        }
    }
    if let Some(nodes) = graph_nodes(dsl) {
        for n in nodes {
            if let Some(n) = n
                .get("id")
                .and_then(Value::as_str)
                .and_then(|id| renamed_id(id).map(|r| (id.to_string(), r)))
            {
                ids.insert(n.0, n.1);
            }
        }
    }
    let classes_to_rename = dsl
        .get("components")
        .and_then(Value::as_object)
        .is_some_and(|c| {
            c.values()
                .any(|v| renamed_class(super::class_of(v)).is_some())
        });
    if ids.is_empty() && !classes_to_rename {
        return;
    }
    let text = |s: &str| rewrite_text(s, &ids);
    if let Some(comps) = dsl.get_mut("components").and_then(Value::as_object_mut) {
        let old = std::mem::take(comps);
        for (id, mut c) in old {
            let new_id = ids.get(&id).cloned().unwrap_or_else(|| id.clone());
            if new_id != id {
                log.note(
                    &["components", new_id.as_str()],
                    format!("id {id} → {new_id}"),
                );
            }
            if let Some(obj) = c.get_mut("obj").and_then(Value::as_object_mut) {
                if let Some(n) = obj
                    .get("component_name")
                    .and_then(Value::as_str)
                    .and_then(renamed_class)
                {
                    log.note(
                        &["components", new_id.as_str(), "obj", "component_name"],
                        format!("class → {n}"),
                    );
                    obj.insert("component_name".into(), json!(n));
                }
                if let Some(p) = obj.get_mut("params") {
                    map_strings(p, &text);
                }
            }
            for key in ["downstream", "upstream"] {
                if let Some(Value::Array(a)) = c.get_mut(key) {
                    for v in a.iter_mut() {
                        rename_whole(v, &ids);
                    }
                }
            }
            if let Some(p) = c.get_mut("parent_id") {
                rename_whole(p, &ids);
            }
            comps.insert(new_id, c);
        }
    }
    if let Some(Value::Array(path)) = dsl.get_mut("path") {
        for v in path.iter_mut() {
            rename_whole(v, &ids);
        }
    }
    for key in ["history", "messages", "reference"] {
        if let Some(v) = dsl.get_mut(key) {
            map_strings(v, &text);
        }
    }
    rename_graph(dsl, &ids, &text);
}

fn graph_nodes(dsl: &Object) -> Option<&Vec<Value>> {
    dsl.get("graph")?.get("nodes")?.as_array()
}

fn rename_graph(dsl: &mut Object, ids: &BTreeMap<String, String>, text: &dyn Fn(&str) -> String) {
    let Some(graph) = dsl.get_mut("graph").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(Value::Array(nodes)) = graph.get_mut("nodes") {
        for n in nodes.iter_mut() {
            for key in ["id", "parentId"] {
                if let Some(v) = n.get_mut(key) {
                    rename_whole(v, ids);
                }
            }
            if n.get("type").and_then(Value::as_str) == Some("splitterNode") {
                n["type"] = json!("chunkerNode");
            }
            if let Some(d) = n.get_mut("data").and_then(Value::as_object_mut) {
                for key in ["label", "name"] {
                    if let Some(new) = d.get(key).and_then(Value::as_str).and_then(renamed_class) {
                        d.insert(key.into(), json!(new));
                    }
                }
                if let Some(f) = d.get_mut("form") {
                    map_strings(f, text);
                }
            }
        }
    }
    // Edge ids embed node ids: replace the longest first so a prefix never wins.
    let mut by_len: Vec<(&String, &String)> = ids.iter().collect();
    by_len.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
    if let Some(Value::Array(edges)) = graph.get_mut("edges") {
        for e in edges.iter_mut() {
            for key in ["source", "target"] {
                if let Some(v) = e.get_mut(key) {
                    rename_whole(v, ids);
                }
            }
            if let Some(Value::String(eid)) = e.get_mut("id") {
                for (old, new) in &by_len {
                    if eid.contains(old.as_str()) {
                        *eid = eid.replace(old.as_str(), new);
                    }
                }
            }
        }
    }
}

/// Replace a string value that is exactly an old id.
fn rename_whole(v: &mut Value, ids: &BTreeMap<String, String>) {
    if let Value::String(s) = v {
        if let Some(n) = ids.get(s.as_str()) {
            *s = n.clone();
        }
    }
}

/// A text with `{old@var}` references and a whole-string old id rewritten.
fn rewrite_text(s: &str, ids: &BTreeMap<String, String>) -> String {
    if let Some(n) = ids.get(s) {
        return n.clone();
    }
    if ids.is_empty() || !s.contains('@') {
        return s.to_string();
    }
    REF.replace_all(s, |c: &Captures| {
        let id = &c[2];
        let id = ids.get(id).map(String::as_str).unwrap_or(id);
        format!("{}{}{}{}", &c[1], id, &c[3], &c[4])
    })
    .into_owned()
}

/// Apply `f` to every string inside `v`.
fn map_strings(v: &mut Value, f: &dyn Fn(&str) -> String) {
    match v {
        Value::String(s) => {
            let n = f(s);
            if n != *s {
                *s = n;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| map_strings(x, f)),
        Value::Object(o) => o.values_mut().for_each(|x| map_strings(x, f)),
        _ => {}
    }
}
