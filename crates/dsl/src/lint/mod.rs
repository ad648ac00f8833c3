//! `lint`: the static checks of `canvas validate` (codes and fixes in `docs/validate.md`).
//!
//! It reads a canvas DSL object (components form, already normalized) as plain JSON, so
//! it accepts any shape without panicking, and returns [`Finding`]s; it prints nothing,
//! runs nothing and knows no concrete component: what this build runs comes from a
//! [`Catalog`]. Each rule file owns one concern:
//! - `graph`: the indexed canvas and the traversals the rules share;
//! - `shape`: the JSON types the loader requires (C009);
//! - `structure`: classes, ids, routes and parents (C003–C016);
//! - `flow`: reachability, cycles and RAGFlow's silent drop (C020, C021, C050);
//! - `refs`: variable references (C030–C033);
//! - `params`: component parameters (C040–C047).

mod flow;
mod graph;
mod params;
mod refs;
mod shape;
mod structure;
#[cfg(test)]
mod testing;

use std::collections::HashSet;

use crate::finding::{Finding, Level};
use crate::model::Object;

use self::graph::Canvas;

/// How this build treats a component class or tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// This build runs it.
    Runs,
    /// A RAGFlow component/tool this build does not run yet; the text says what (e.g. "CodeExec is not supported yet").
    NotYet(String),
    /// A legacy class RAGFlow itself can no longer run (TuShare, Jin10); the text says so.
    Dead(String),
    /// A data-ingestion pipeline component (File, Parser, TokenChunker, ...): not an agent canvas.
    Ingestion,
    /// Not a RAGFlow class at all.
    Unknown,
}

/// What this build knows about component classes (implemented in `components/`, so lint stays free of concrete components).
pub trait Catalog {
    /// How this build treats component class `name` (matched case-insensitively).
    fn component(&self, name: &str) -> Support;
    /// How this build treats an Agent tool whose `component_name` is `name` (`"MCP"` for entries of `params.mcp`).
    fn tool(&self, name: &str) -> Support;
    /// Every output a component of class `name` with these params can set, or `None` when that cannot be known statically. Includes declared `params.outputs` keys. (`_ERROR`, `_created_time`, `_elapsed_time` are always allowed by lint itself.)
    fn outputs(&self, name: &str, params: &Object) -> Option<Vec<String>>;
    /// The classes this build runs, to suggest one for a mistyped class (none by default).
    fn classes(&self) -> Vec<&str> {
        Vec::new()
    }
    /// Build a component of class `name` (one this build runs) as `canvas run` does and check its params: the first refusal, if any (C047). The default checks nothing, for callers that build the components themselves anyway (`run` compiles right after).
    fn check_params(&self, _name: &str, _params: &Object) -> Option<Refusal> {
        None
    }
}

/// Why a component's parameters are refused (RAGFlow's `check()`, or a value this build cannot run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What is wrong, in one line.
    pub message: String,
    /// Where, as keys (and array indices) below the component's `params`; empty when only the component is known.
    pub path: Vec<String>,
}

/// Check a canvas DSL object (components form, already normalized) and return every finding, in a deterministic order: document-level findings first, then per component in `components` order, then by code, then by pointer.
pub fn lint(doc: &serde_json::Value, catalog: &dyn Catalog) -> Vec<Finding> {
    let Some(canvas) = Canvas::new(doc, catalog) else {
        return vec![not_a_canvas(doc)];
    };
    let mut out = Vec::new();
    shape::check(&canvas, &mut out);
    structure::check(&canvas, catalog, &mut out);
    flow::check(&canvas, &mut out);
    refs::check(&canvas, catalog, &mut out);
    params::check(&canvas, catalog, &mut out);
    order(&canvas, out)
}

/// C002: RAGFlow reads `dsl["components"]` first and fails on anything else.
fn not_a_canvas(doc: &serde_json::Value) -> Finding {
    let what = match doc.as_object().map(|o| o.get("components")) {
        None => "the document is not a JSON object",
        Some(None) => "the document has no `components`",
        Some(Some(_)) => "`components` is not an object",
    };
    Finding::new("C002", Level::Error, format!("not a canvas: {what}"))
        .hint("a canvas is an object whose `components` maps ids to components; run `canvas migrate` on other RAGFlow exports")
}

/// Sort into the documented order and drop exact duplicates (the same reference written
/// twice in one text is one finding).
fn order(canvas: &Canvas<'_>, mut out: Vec<Finding>) -> Vec<Finding> {
    let rank = |f: &Finding| match &f.component {
        None => (0, 0),
        Some(id) => (1, canvas.index(id).unwrap_or(usize::MAX)),
    };
    out.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| a.code.cmp(b.code))
            .then_with(|| a.pointer.cmp(&b.pointer))
    });
    let mut seen = HashSet::new();
    out.retain(|f| seen.insert((f.code, f.pointer.clone(), f.message.clone())));
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::testing::{base, codes, fixture, fixture_path, run};
    use crate::finding::Level;

    #[test]
    fn c002_only_for_documents_without_components() {
        for doc in [
            json!(null),
            json!("x"),
            json!([1]),
            json!({}),
            json!({"components": []}),
            json!({"components": null}),
        ] {
            assert_eq!(codes(&run(&doc)), [("C002", String::new())], "{doc}");
        }
        assert_eq!(codes(&run(&base())), []);
    }

    #[test]
    fn findings_come_document_first_then_in_component_order() {
        let doc = json!({"components": {
            "Message:B": {"obj": {"component_name": "Nope"}, "downstream": ["X"]},
            "Message:A": {"obj": {"component_name": "Message", "params": {"content": ["{Y@z} {Y@z}"]}}, "downstream": ["W"]},
        }});
        assert_eq!(
            codes(&run(&doc)),
            [
                ("C003", "/components".to_owned()),
                (
                    "C004",
                    "/components/Message:B/obj/component_name".to_owned()
                ),
                ("C010", "/components/Message:B/downstream/0".to_owned()),
                ("C010", "/components/Message:A/downstream/0".to_owned()),
                (
                    "C030",
                    "/components/Message:A/obj/params/content/0".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn any_value_anywhere_in_all_json_lints_without_panicking() {
        let Some(all) = fixture(fixture_path!("go-testdata/all.json")) else {
            return;
        };
        let clean = run(&all);
        // Replace every value inside `components` (to depth 6) by null and by another shape.
        let mut pointers = Vec::new();
        collect(&all["components"], "/components", 0, &mut pointers);
        assert!(pointers.len() > 500, "{}", pointers.len());
        let shapes = [json!("k"), json!([7, {"to": 1}]), json!({"x": 1.5})];
        for (i, p) in pointers.iter().enumerate() {
            for odd in [json!(null), shapes[i % shapes.len()].clone()] {
                let mut doc = all.clone();
                if let Some(slot) = doc.pointer_mut(p) {
                    *slot = odd;
                }
                let found = run(&doc);
                // Still a canvas, and everything else is still checked.
                assert!(found.iter().all(|f| f.code != "C002"), "{p}");
                if !p.starts_with("/components/Switch:Route") {
                    assert!(found.iter().any(|f| f.code == "C013"), "{p}");
                }
            }
        }
        assert!(clean.iter().any(|f| f.code == "C013"));
        assert_eq!(clean, run(&all), "deterministic");
    }

    #[test]
    fn all_json_has_its_two_known_defects_and_no_bad_reference() {
        let Some(all) = fixture(fixture_path!("go-testdata/all.json")) else {
            return;
        };
        let found = run(&all);
        for f in &found {
            eprintln!("{} {:?} {} {}", f.code, f.level, f.pointer, f.message);
        }
        let has = |code: &str, pointer: &str| {
            found
                .iter()
                .any(|f| f.code == code && f.pointer == pointer && f.level == Level::Error)
        };
        assert!(has(
            "C013",
            "/components/Switch:Route/obj/params/conditions/4/to/1"
        ));
        assert!(has(
            "C045",
            "/components/Loop:InputUntil1/obj/params/loop_variables/0"
        ));
        let bad_refs: Vec<_> = found
            .iter()
            .filter(|f| matches!(f.code, "C030" | "C031" | "C032" | "C033"))
            .collect();
        assert!(bad_refs.is_empty(), "{bad_refs:#?}");
        // The whole list, so a change in any rule shows up here.
        assert_eq!(
            codes(&found),
            [
                (
                    "C005",
                    "/components/CodeExec:Double/obj/component_name".to_owned()
                ),
                (
                    "C045",
                    "/components/Loop:InputUntil1/obj/params/loop_variables/0".to_owned()
                ),
                (
                    "C005",
                    "/components/Retrieval:KBSearch/obj/component_name".to_owned()
                ),
                (
                    "C013",
                    "/components/Switch:Route/obj/params/conditions/4/to/1".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn every_fixture_lints() {
        let mut seen = 0;
        for rel in [
            fixture_path!("go-testdata/agent_msg.json"),
            fixture_path!("test-dsl/categorize_and_agent_with_tavily.json"),
            fixture_path!("test-dsl/exesql.json"),
            fixture_path!("test-dsl/headhunter_zh.json"),
            fixture_path!("test-dsl/iteration.json"),
            fixture_path!("test-dsl/retrieval_and_generate.json"),
            fixture_path!("test-dsl/retrieval_categorize_and_generate.json"),
            fixture_path!("test-dsl/tavily_and_generate.json"),
        ] {
            let Some(doc) = fixture(rel) else {
                continue;
            };
            seen += 1;
            let found = run(&doc);
            eprintln!("== {}", rel.rsplit('/').next().unwrap_or(rel));
            for f in &found {
                eprintln!(
                    "{} {} {} {}",
                    f.code,
                    f.level.as_str(),
                    f.pointer,
                    f.message
                );
            }
            assert!(found.iter().all(|f| f.code != "C002"), "{rel}");
        }
        assert!(seen == 0 || seen == 8);
    }

    fn collect(v: &serde_json::Value, at: &str, depth: usize, out: &mut Vec<String>) {
        if depth > 6 {
            return;
        }
        let esc = |k: &str| k.replace('~', "~0").replace('/', "~1");
        match v {
            serde_json::Value::Object(o) => {
                for (k, x) in o {
                    let p = format!("{at}/{}", esc(k));
                    out.push(p.clone());
                    collect(x, &p, depth + 1, out);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    let p = format!("{at}/{i}");
                    out.push(p.clone());
                    collect(x, &p, depth + 1, out);
                }
            }
            _ => {}
        }
    }
}
