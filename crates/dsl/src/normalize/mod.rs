//! `normalize`: rewrite any DSL form RAGFlow has produced into the current one. Pure,
//! deterministic and idempotent; applied on every load and shown by `canvas migrate`.
//!
//! Each rule is one named function over the DSL object (the object holding
//! `components`, inside the template wrapper when there is one). Rules keep every key
//! they do not own, and key order. They record what they changed as [`Applied`] entries.

mod graph;
mod legacy;
mod links;
mod renames;

use serde::Serialize;
use serde_json::Value;

use super::finding::pointer;
use super::model::{Object, member};

/// One change a rule made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// The rule's name (`components_from_graph`, `legacy_names`, ...).
    pub rule: &'static str,
    /// JSON pointer of what changed, relative to the file's top level.
    pub pointer: String,
    /// What changed, in a few words.
    pub detail: String,
}

/// A normalized document and the changes that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// The whole document (template wrapper kept).
    pub value: Value,
    /// Every change, in the order the rules made them.
    pub applied: Vec<Applied>,
}

/// A rule: its name, what it does (for `canvas migrate --format json` and the docs), and
/// the function.
pub struct Rule {
    /// Stable name.
    pub name: &'static str,
    /// One line on what it rewrites.
    pub about: &'static str,
    run: fn(&mut Object, &mut Log),
}

/// The rules, in the order they run.
pub const RULES: &[Rule] = &[
    Rule {
        name: "flat_components",
        about: "components saved in the Go port's flat shape {name, params, downstream} get the stored shape {obj: {component_name, params}, downstream, upstream}",
        run: legacy::flat_components,
    },
    Rule {
        name: "handle_ids",
        about: "graph edge handles \"end\"/\"start\" repaired (sources leave from \"start\", targets arrive at \"end\")",
        run: graph::handle_ids,
    },
    Rule {
        name: "components_from_graph",
        about: "a graph-only export gets its components, derived as RAGFlow's web editor does on save",
        run: graph::components_from_graph,
    },
    Rule {
        name: "chunker_renames",
        about: "RAGFlow's pipeline renames (Splitter → TokenChunker, HierarchicalMerger → TitleChunker, PDFGenerator → DocGenerator), ids rewritten everywhere",
        run: renames::chunker_renames,
    },
    Rule {
        name: "parents_from_graph",
        about: "Loop/Iteration members without parent_id get it from the graph node's parentId",
        run: graph::parents_from_graph,
    },
    Rule {
        name: "legacy_names",
        about: "legacy classes get their current names and params (Generate → LLM, Answer → UserFillUp, Fillup, SearchMyDataset, DocsGenerator, Parallel, Message `messages`)",
        run: legacy::legacy_names,
    },
    Rule {
        name: "links",
        about: "every upstream list made to match the downstream lists (downstream drives routing)",
        run: links::links,
    },
];

/// Collects the changes of one rule.
pub struct Log {
    rule: &'static str,
    applied: Vec<Applied>,
}

impl Log {
    /// Record a change at the pointer made of `segments` (relative to the DSL object).
    fn note<S: AsRef<str>>(&mut self, segments: &[S], detail: impl Into<String>) {
        self.applied.push(Applied {
            rule: self.rule,
            pointer: pointer(segments),
            detail: detail.into(),
        });
    }
}

/// Where the DSL object sits in a document: `""` at the top, `"/dsl"` inside a template
/// wrapper (`{id, title, dsl: {...}}`).
pub fn dsl_prefix(doc: &Value) -> &'static str {
    match doc {
        Value::Object(o)
            if !o.contains_key("components")
                && !o.contains_key("graph")
                && o.get("dsl").is_some_and(Value::is_object) =>
        {
            "/dsl"
        }
        _ => "",
    }
}

/// Apply every rule to a document.
pub fn normalize(mut doc: Value) -> Normalized {
    let prefix = dsl_prefix(&doc);
    let target = if prefix.is_empty() {
        doc.as_object_mut()
    } else {
        doc.get_mut("dsl").and_then(Value::as_object_mut)
    };
    let Some(dsl) = target else {
        return Normalized {
            value: doc,
            applied: Vec::new(),
        };
    };
    let mut applied = Vec::new();
    for rule in RULES {
        let mut log = Log {
            rule: rule.name,
            applied: Vec::new(),
        };
        (rule.run)(dsl, &mut log);
        applied.extend(log.applied.into_iter().map(|mut a| {
            a.pointer = format!("{prefix}{}", a.pointer);
            a
        }));
    }
    Normalized {
        value: doc,
        applied,
    }
}

/// The `components` object, if the DSL has one.
fn components_mut(dsl: &mut Object) -> Option<&mut Object> {
    dsl.get_mut("components").and_then(Value::as_object_mut)
}

/// `graph.nodes` or `graph.edges`, when the graph has that list.
fn graph_list_mut<'a>(dsl: &'a mut Object, key: &str) -> Option<&'a mut Vec<Value>> {
    dsl.get_mut("graph")?.get_mut(key)?.as_array_mut()
}

/// A component's class name (`obj.component_name`), or `""`.
fn class_of(c: &Value) -> &str {
    member(c, "obj")
        .and_then(|o| member(o, "component_name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Every id a component can hand over to: `downstream`, Switch cases and else branch,
/// Categorize targets and `exception_goto` (RAGFlow's editor draws an edge for each),
/// `downstream`'s first; appended to `out`, borrowed from `c`, duplicates left in (a
/// fan-out may list thousands: the caller sorts them out once).
fn routes<'a>(c: &'a Value, out: &mut Vec<&'a str>) {
    let add = |v: Option<&'a Value>, out: &mut Vec<&'a str>| match v {
        Some(Value::Array(a)) => out.extend(a.iter().filter_map(Value::as_str)),
        Some(Value::String(t)) if !t.is_empty() => out.push(t),
        _ => {}
    };
    add(member(c, "downstream"), out);
    let Some(p) = member(c, "obj").and_then(|o| member(o, "params")) else {
        return;
    };
    if let Some(Value::Array(conds)) = member(p, "conditions") {
        for cond in conds {
            add(member(cond, "to"), out);
        }
    }
    add(member(p, "end_cpn_ids"), out);
    if let Some(Value::Object(cats)) = member(p, "category_description") {
        for cat in cats.values() {
            add(member(cat, "to"), out);
        }
    }
    add(member(p, "exception_goto"), out);
}

/// A list of ids from a JSON value (array of strings, or one string).
fn id_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
