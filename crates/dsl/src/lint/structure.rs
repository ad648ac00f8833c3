//! Structure rules: component classes (C004–C007), the `begin` id (C003), ids named by
//! routes and `upstream` (C010–C015) and `parent_id` (C016).

use serde_json::Value;

use super::graph::{Canvas, Comp, EdgeAt, comp_path};
use super::{Catalog, Support};
use crate::finding::{Finding, Level};

/// Run every structure rule.
pub(super) fn check(c: &Canvas<'_>, catalog: &dyn Catalog, out: &mut Vec<Finding>) {
    let ingestion = classes(c, catalog, out);
    if ingestion {
        out.push(ingestion_pipeline());
    } else {
        begin_id(c, out);
    }
    for comp in &c.comps {
        dangling_routes(comp, out);
        dangling_upstream(c, comp, out);
        bad_parent(c, comp, out);
    }
}

/// C004–C006: RAGFlow refuses to load an unknown class, and this build cannot run a class
/// it does not implement. Returns whether any component belongs to an ingestion pipeline.
fn classes(c: &Canvas<'_>, catalog: &dyn Catalog, out: &mut Vec<Finding>) -> bool {
    let mut ingestion = false;
    for comp in &c.comps {
        let Some(class) = comp.class else {
            out.push(no_class(comp));
            continue;
        };
        let found = match comp.support.clone() {
            Support::Runs => continue,
            Support::Ingestion => {
                ingestion = true;
                continue;
            }
            Support::Unknown => {
                let f = Finding::new(
                    "C004",
                    Level::Error,
                    format!("unknown component class `{class}`"),
                );
                match crate::suggest::closest(class, catalog.classes()) {
                    Some(near) => f.hint(format!(
                        "did you mean \"{near}\"? `canvas components` lists the supported ones"
                    )),
                    None => f.hint("`canvas components` lists the supported ones"),
                }
            }
            Support::NotYet(why) => Finding::new("C005", Level::Error, why)
                .hint("`canvas components` lists what this build runs; replace or remove it"),
            Support::Dead(why) => Finding::new("C006", Level::Error, why)
                .hint("RAGFlow cannot run it either: replace it with a current component"),
        };
        let at = comp_path(comp.id, &["obj", "component_name"]);
        out.push(found.component(comp.id).at(&at));
    }
    ingestion
}

/// C004 for an entry without a class name: RAGFlow reads `obj.component_name` first.
fn no_class(comp: &Comp<'_>) -> Finding {
    let (what, at) = match (comp.entry, comp.obj) {
        (None, _) => ("the component is not an object", comp_path(comp.id, &[])),
        (Some(_), None) => ("the component has no `obj`", comp_path(comp.id, &[])),
        (Some(_), Some(Value::Object(o))) if o.contains_key("component_name") => (
            "`obj.component_name` is not a string",
            comp_path(comp.id, &["obj", "component_name"]),
        ),
        (Some(_), Some(Value::Object(_))) => (
            "the component has no `obj.component_name`",
            comp_path(comp.id, &["obj"]),
        ),
        (Some(_), Some(_)) => ("`obj` is not an object", comp_path(comp.id, &["obj"])),
    };
    Finding::new("C004", Level::Error, format!("unknown component class: {what}"))
        .hint("write `{\"obj\": {\"component_name\": \"Message\", \"params\": {...}}}`; `canvas components` lists the classes")
        .component(comp.id)
        .at(&at)
}

/// C007: a data-ingestion pipeline is another kind of RAGFlow canvas.
fn ingestion_pipeline() -> Finding {
    Finding::new(
        "C007",
        Level::Error,
        "this is a data-ingestion pipeline, not an agent canvas; `canvas run` does not run it",
    )
    .hint("run it in RAGFlow; `canvas` runs agent canvases")
}

/// C003: every fresh run starts by appending the id `begin`; without it RAGFlow crashes.
fn begin_id(c: &Canvas<'_>, out: &mut Vec<Finding>) {
    if c.index("begin").is_some() {
        return;
    }
    let misnamed = c.comps.iter().find(|comp| comp.is("begin"));
    let found = match misnamed {
        Some(b) => Finding::new(
            "C003",
            Level::Error,
            format!(
                "no component with id `begin`: the Begin component has id `{}`",
                b.id
            ),
        )
        .hint(
            "rename it to `begin` (and every reference to it): RAGFlow requires the id \"begin\"",
        ),
        None => Finding::new("C003", Level::Error, "no component with id `begin`")
            .hint("add a Begin component with the id `begin`; every run starts there"),
    };
    out.push(found.at(&["components"]));
}

/// C010/C013/C014/C015: the engine appends these ids to its path and crashes on (or, in
/// RAGFlow's Go port, silently drops) one that is not a component.
fn dangling_routes(comp: &Comp<'_>, out: &mut Vec<Finding>) {
    for e in comp.edges.iter().filter(|e| e.to.is_none()) {
        let target = match e.target {
            Some(t) => format!("unknown component `{t}`"),
            None => "a value that is not a component id".to_owned(),
        };
        let (code, what, hint) = match e.at {
            EdgeAt::Downstream(_) => (
                "C010",
                "`downstream` lists".to_owned(),
                "fix the id or remove it from `downstream`",
            ),
            EdgeAt::Case(i, _) => (
                "C013",
                // 1-based, as RAGFlow's editor labels cases ("Case 1").
                format!("case {} routes to", i + 1),
                "fix the id or remove it from the case's `to`",
            ),
            EdgeAt::Else(_) => (
                "C013",
                "the else branch (`end_cpn_ids`) routes to".to_owned(),
                "fix the id or remove it from `end_cpn_ids`",
            ),
            EdgeAt::Category(name, _) => (
                "C014",
                format!("category `{name}` routes to"),
                "fix the id or remove it from the category's `to`",
            ),
            EdgeAt::Goto(_) => (
                "C015",
                "`exception_goto` lists".to_owned(),
                "fix the id or remove it from `exception_goto`",
            ),
        };
        out.push(
            Finding::new(code, Level::Error, format!("{what} {target}"))
                .hint(hint)
                .component(comp.id)
                .at(&e.at.path(comp.id)),
        );
    }
}

/// C011: `upstream` is never read by RAGFlow, but a stale one shows the graph was edited
/// by hand and other tools (the Go port) build their graph from it.
fn dangling_upstream(c: &Canvas<'_>, comp: &Comp<'_>, out: &mut Vec<Finding>) {
    // A value that is not an id, or an `upstream` that is not a list, is C009's.
    let Some(Value::Array(items)) = comp.upstream else {
        return;
    };
    for (j, id) in items.iter().enumerate() {
        let Some(id) = id.as_str() else { continue };
        if c.index(id).is_some() {
            continue;
        }
        let what = format!("`upstream` lists unknown component `{id}`");
        let at = comp_path(comp.id, &["upstream", &j.to_string()]);
        out.push(
            Finding::new("C011", Level::Warning, what)
                .hint("remove it; `canvas migrate` rebuilds `upstream` from `downstream`")
                .component(comp.id)
                .at(&at),
        );
    }
}

/// C016: body components find their Loop/Iteration through `parent_id`; any other parent
/// breaks the loop-back and crashes RAGFlow when the body ends.
fn bad_parent(c: &Canvas<'_>, comp: &Comp<'_>, out: &mut Vec<Finding>) {
    let Some(parent) = comp.parent else {
        return;
    };
    if comp.parent_idx.is_some() {
        return;
    }
    // A `parent_id` that is not a string is C009's.
    let Some(p) = parent.as_str() else {
        return;
    };
    // Compile refuses a parent that does not exist; RAGFlow runs a body whose parent is
    // some other component, and crashes when the body ends.
    let (what, refused) = match c.index(p) {
        None => (format!("`parent_id` names unknown component `{p}`"), true),
        Some(i) => (
            format!(
                "`parent_id` names `{p}`, a {}, not a Loop or an Iteration",
                c.comps[i].class.unwrap_or("component without a class")
            ),
            false,
        ),
    };
    out.push(
        Finding::new("C016", Level::Error, what)
            .stops_run(refused)
            .hint("set `parent_id` to the enclosing Loop or Iteration, or remove it")
            .component(comp.id)
            .at(&comp_path(comp.id, &["parent_id"])),
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{base, cpn, one, only, with};

    #[test]
    fn c003_begin_missing_or_misnamed() {
        let mut doc = base();
        let b = doc["components"]
            .as_object_mut()
            .and_then(|o| o.shift_remove("begin"));
        assert_eq!(only(&base(), "C003"), []);
        let f = one(&doc, "C003");
        assert_eq!(f.pointer, "/components");
        assert_eq!(f.message, "no component with id `begin`");
        if let (Some(all), Some(b)) = (doc["components"].as_object_mut(), b) {
            all.insert("Begin:Start".into(), b);
        }
        let f = one(&doc, "C003");
        assert!(f.message.contains("`Begin:Start`"), "{}", f.message);
        assert!(f.hint.unwrap_or_default().contains("\"begin\""));
    }

    #[test]
    fn c004_unknown_or_missing_class() {
        let doc = with(
            "Foo:A",
            json!({"Foo:A": cpn("Foo", json!({}), &["Message:M"]), "B": {"obj": {}}, "C": 3}),
        );
        assert_eq!(
            only(&doc, "C004"),
            [
                ("C004", "/components/Foo:A/obj/component_name".to_owned()),
                ("C004", "/components/B/obj".to_owned()),
                ("C004", "/components/C".to_owned()),
            ]
        );
        let f = one(
            &with("Foo:A", json!({"Foo:A": cpn("Foo", json!({}), &[])})),
            "C004",
        );
        assert_eq!(f.message, "unknown component class `Foo`");
        assert_eq!(
            f.hint.as_deref(),
            Some("`canvas components` lists the supported ones")
        );
        assert_eq!(only(&base(), "C004"), []);
    }

    #[test]
    fn c005_c006_not_yet_and_dead_classes() {
        let doc = with(
            "CodeExec:A",
            json!({"CodeExec:A": cpn("CodeExec", json!({}), &["TuShare:B"]),
                   "TuShare:B": cpn("TuShare", json!({}), &["Message:M"])}),
        );
        let f = one(&doc, "C005");
        assert_eq!(f.pointer, "/components/CodeExec:A/obj/component_name");
        assert_eq!(f.message, "CodeExec is not supported yet");
        let f = one(&doc, "C006");
        assert_eq!(f.pointer, "/components/TuShare:B/obj/component_name");
        assert!(f.message.contains("can no longer run"));
        assert_eq!(only(&base(), "C005"), []);
        assert_eq!(only(&base(), "C006"), []);
    }

    #[test]
    fn c007_ingestion_pipelines_once_without_c003_or_c004() {
        let doc = json!({"components": {
            "File": cpn("File", json!({}), &["Parser:A"]),
            "Parser:A": cpn("Parser", json!({}), &["TokenChunker:B"]),
            "TokenChunker:B": cpn("TokenChunker", json!({}), &[]),
        }});
        let found = super::super::testing::run(&doc);
        assert_eq!(
            super::super::testing::codes(&found),
            [("C007", String::new())]
        );
        assert_eq!(found[0].level, crate::finding::Level::Error);
        assert!(found[0].stops_run);
        assert_eq!(only(&base(), "C007"), []);
    }

    #[test]
    fn c010_c011_dangling_downstream_and_upstream() {
        let mut doc = base();
        doc["components"]["Message:M"]["downstream"] = json!(["Nope", 5]);
        doc["components"]["Message:M"]["upstream"] = json!(["begin", "Gone"]);
        assert_eq!(
            only(&doc, "C010"),
            [
                ("C010", "/components/Message:M/downstream/0".to_owned()),
                ("C010", "/components/Message:M/downstream/1".to_owned()),
            ]
        );
        let f = one(&doc, "C011");
        assert_eq!(f.pointer, "/components/Message:M/upstream/1");
        assert_eq!(f.level, crate::finding::Level::Warning);
        assert_eq!(only(&base(), "C010"), []);
        assert_eq!(only(&base(), "C011"), []);
    }

    #[test]
    fn c013_c014_c015_dangling_route_targets() {
        let doc = with(
            "Switch:S",
            json!({
                "Switch:S": cpn("Switch", json!({
                    "conditions": [{"items": [], "logical_operator": "and", "to": ["Message:M", "X"]},
                                   {"to": "Y"}],
                    "end_cpn_ids": ["Categorize:C", "Z"]}), &["Message:M", "Categorize:C"]),
                "Categorize:C": cpn("Categorize", json!({"llm_id": "m",
                    "category_description": {"a b": {"to": ["Message:M"]}, "x/y": {"to": "W"}},
                    "exception_method": "goto", "exception_goto": ["Message:M", "V"]}), &["Message:M"]),
            }),
        );
        assert_eq!(
            only(&doc, "C013"),
            [
                (
                    "C013",
                    "/components/Switch:S/obj/params/conditions/0/to/1".to_owned()
                ),
                (
                    "C013",
                    "/components/Switch:S/obj/params/conditions/1/to".to_owned()
                ),
                (
                    "C013",
                    "/components/Switch:S/obj/params/end_cpn_ids/1".to_owned()
                ),
            ]
        );
        assert_eq!(
            only(&doc, "C014"),
            [(
                "C014",
                "/components/Categorize:C/obj/params/category_description/x~1y/to".to_owned()
            )]
        );
        assert_eq!(
            only(&doc, "C015"),
            [(
                "C015",
                "/components/Categorize:C/obj/params/exception_goto/1".to_owned()
            )]
        );
        let f = one(&doc, "C014");
        assert_eq!(f.message, "category `x/y` routes to unknown component `W`");
    }

    #[test]
    fn c013_c014_not_for_existing_targets() {
        let doc = with(
            "Switch:S",
            json!({
                "Switch:S": cpn("Switch", json!({
                    "conditions": [{"items": [], "logical_operator": "and", "to": "Categorize:C"}],
                    "end_cpn_ids": ["Message:M"]}), &["Message:M", "Categorize:C"]),
                "Categorize:C": cpn("Categorize", json!({"llm_id": "m",
                    "category_description": {"a": {"to": "Message:M"}, "b": {"to": ["Message:M"]}}}), &[]),
            }),
        );
        let found = super::super::testing::run(&doc);
        assert_eq!(super::super::testing::codes(&found), []);
    }

    #[test]
    fn c015_only_when_an_exception_method_is_set() {
        let doc = with(
            "LLM:A",
            json!({"LLM:A": cpn("LLM", json!({"llm_id": "m", "exception_method": "",
                "exception_goto": ["Nope"]}), &["Message:M"])}),
        );
        assert_eq!(only(&doc, "C015"), []);
    }

    #[test]
    fn c016_parent_missing_or_not_a_loop() {
        let mut doc = with(
            "Loop:L",
            json!({
                "Loop:L": cpn("Loop", json!({"maximum_loop_count": 3, "logical_operator": "or"}), &["Message:M"]),
                "LoopItem:S": {"obj": {"component_name": "LoopItem", "params": {}}, "downstream": ["ExitLoop:E"], "parent_id": "Loop:L"},
                "ExitLoop:E": {"obj": {"component_name": "ExitLoop", "params": {}}, "downstream": [], "parent_id": "Loop:L"},
            }),
        );
        assert_eq!(only(&doc, "C016"), []);
        doc["components"]["ExitLoop:E"]["parent_id"] = json!("Message:M");
        doc["components"]["LoopItem:S"]["parent_id"] = json!("Loop:Gone");
        assert_eq!(
            only(&doc, "C016"),
            [
                ("C016", "/components/LoopItem:S/parent_id".to_owned()),
                ("C016", "/components/ExitLoop:E/parent_id".to_owned()),
            ]
        );
        let messages: Vec<String> = super::super::testing::run(&doc)
            .into_iter()
            .filter(|f| f.code == "C016")
            .map(|f| f.message)
            .collect();
        assert_eq!(
            messages,
            [
                "`parent_id` names unknown component `Loop:Gone`",
                "`parent_id` names `Message:M`, a Message, not a Loop or an Iteration",
            ]
        );
    }
}
