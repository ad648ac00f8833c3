//! Shape rules: the JSON types the loader requires (C009). `canvas run` reads a canvas
//! into typed fields (`model.rs`: lists of ids, objects of params); a field of another
//! type stops it before anything runs, so each one is an error here, at the field.
//! (RAGFlow reads the same fields with Python's duck typing and fails later, or iterates
//! the characters of a string where a list belongs.) The class (`obj.component_name`)
//! is C004's.

use serde_json::Value;

use super::graph::{Canvas, Comp, comp_path};
use crate::finding::{Finding, Level};
use crate::model::kind_name;

/// Run every shape rule.
pub(super) fn check(c: &Canvas<'_>, out: &mut Vec<Finding>) {
    let doc = c.doc;
    if let Some(v) = doc.get("path") {
        ids(None, &["path"], v, "the run's path", out);
    }
    match doc.get("history") {
        None | Some(Value::Null | Value::Array(_)) => {}
        Some(v) => out.push(wrong(None, &["history"], "`history` must be a list", v)),
    }
    match doc.get("globals") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(v) => out.push(wrong(None, &["globals"], "`globals` must be an object", v)),
    }
    for comp in &c.comps {
        entry(comp, out);
    }
}

/// The fields of one component entry the loader types.
fn entry(comp: &Comp<'_>, out: &mut Vec<Finding>) {
    let id = Some(comp.id);
    match comp.downstream {
        // Entries that are not ids are C010's.
        None | Some(Value::Null | Value::Array(_)) => {}
        Some(v) => out.push(
            wrong(
                id,
                &["downstream"],
                "`downstream` must be a list of component ids",
                v,
            )
            .hint(match v {
                Value::String(s) => format!("write it as a list: [\"{s}\"]"),
                _ => "write the ids of the components that run next as a list".to_owned(),
            }),
        ),
    }
    if let Some(v) = comp.upstream {
        ids(id, &["upstream"], v, "the components that route here", out);
    }
    match comp.parent_raw {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(v) => out.push(wrong(
            id,
            &["parent_id"],
            "`parent_id` must be the id of a Loop or an Iteration",
            v,
        )),
    }
    match comp.raw_params {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(v) => out.push(wrong(
            id,
            &["obj", "params"],
            "`obj.params` must be an object",
            v,
        )),
    }
}

/// A field that must be null or a list of strings (ids).
fn ids(id: Option<&str>, at: &[&str], v: &Value, what: &str, out: &mut Vec<Finding>) {
    let field = at.join(".");
    match v {
        Value::Null => {}
        Value::Array(items) => {
            for (j, x) in items.iter().enumerate() {
                if !x.is_string() {
                    let j = j.to_string();
                    let mut p = at.to_vec();
                    p.push(&j);
                    let msg = format!("`{field}` must list component ids ({what})");
                    out.push(wrong(id, &p, &msg, x));
                }
            }
        }
        other => {
            let msg = format!("`{field}` must be a list of component ids ({what})");
            out.push(wrong(id, at, &msg, other));
        }
    }
}

/// A C009 finding: `what`, then what was found instead.
fn wrong(id: Option<&str>, at: &[&str], what: &str, found: &Value) -> Finding {
    let f = Finding::new(
        "C009",
        Level::Error,
        format!("{what}, not {}", kind_name(found)),
    )
    .hint("fix the value's type; `canvas run` cannot read the canvas until then");
    match id {
        Some(id) => f.component(id).at(&comp_path(id, at)),
        None => f.at(at),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{base, codes, one, only, run};

    #[test]
    fn c009_fields_the_loader_types() {
        let mut doc = base();
        doc["components"]["begin"]["downstream"] = json!("Message:M");
        doc["components"]["Message:M"]["upstream"] = json!(["begin", 7]);
        doc["components"]["Message:M"]["parent_id"] = json!(0);
        doc["components"]["Message:M"]["obj"]["params"] = json!(["x"]);
        doc["path"] = json!("begin");
        doc["globals"] = json!([]);
        assert_eq!(
            only(&doc, "C009"),
            [
                ("C009", "/globals".to_owned()),
                ("C009", "/path".to_owned()),
                ("C009", "/components/begin/downstream".to_owned()),
                ("C009", "/components/Message:M/obj/params".to_owned()),
                ("C009", "/components/Message:M/parent_id".to_owned()),
                ("C009", "/components/Message:M/upstream/1".to_owned()),
            ]
        );
        let found = run(&doc);
        let at = |p: &str| found.iter().find(|f| f.pointer == p);
        let globals = at("/globals").map(|f| f.message.as_str());
        assert_eq!(globals, Some("`globals` must be an object, not an array"));
        let hint = at("/components/begin/downstream").and_then(|f| f.hint.as_deref());
        assert_eq!(hint, Some("write it as a list: [\"Message:M\"]"));
        assert!(
            found
                .iter()
                .filter(|f| f.code == "C009")
                .all(|f| f.stops_run)
        );
        let mut one_wrong = base();
        one_wrong["history"] = json!({});
        let f = one(&one_wrong, "C009");
        assert_eq!(f.message, "`history` must be a list, not an object");
    }

    #[test]
    fn c009_not_for_null_or_missing_fields() {
        let mut doc = base();
        doc["components"]["begin"]["downstream"] = json!(null);
        doc["components"]["Message:M"]["obj"]["params"] = json!(null);
        doc["path"] = json!(null);
        doc["history"] = json!(null);
        assert!(codes(&run(&doc)).iter().all(|(c, _)| *c != "C009"));
    }
}
