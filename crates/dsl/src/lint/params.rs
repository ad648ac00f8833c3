//! Parameter rules: models and tools of LLM/Agent/Categorize (C040, C041), form fields
//! (C042), Iteration input (C043), Loop settings RAGFlow rejects or mis-runs
//! (C044–C046), and each component's own check as `canvas run` makes it (C047).

use serde_json::Value;

use super::graph::{Canvas, Comp};
use super::{Catalog, Support};
use crate::finding::{Finding, Level};
use crate::model::{Object, kind_name};
use crate::syntax::is_bare_cpn_ref;

/// Run every parameter rule.
pub(super) fn check(c: &Canvas<'_>, catalog: &dyn Catalog, out: &mut Vec<Finding>) {
    for (i, comp) in c.comps.iter().enumerate() {
        refused(comp, catalog, out);
        match comp.kind.as_ref() {
            "llm" | "categorize" => empty_model(comp, comp.params, &[], out),
            "agent" => {
                empty_model(comp, comp.params, &[], out);
                tools(comp, catalog, comp.params, &[], out);
            }
            "begin" | "userfillup" | "fillup" => untyped_fields(comp, out),
            "iteration" => items_ref(c, comp, out),
            "loop" => {
                loop_never_ends_or_never_runs(c, i, out);
                loop_variables(comp, out);
                loop_conditions(comp, out);
            }
            _ => {}
        }
    }
}

/// C047: the component as `canvas run` builds it refuses its params (RAGFlow's `check()`
/// at load, or a value this build cannot run). Only for classes this build runs (the
/// others are C004–C007) and params the loader can read (else C009).
fn refused(comp: &Comp<'_>, catalog: &dyn Catalog, out: &mut Vec<Finding>) {
    let Some(class) = comp.class else { return };
    if !matches!(comp.raw_params, None | Some(Value::Null | Value::Object(_))) {
        return;
    }
    if comp.support != Support::Runs {
        return;
    }
    let Some(r) = catalog.check_params(class, comp.params) else {
        return;
    };
    let path: Vec<&str> = r.path.iter().map(String::as_str).collect();
    let at = match path.first() {
        Some(key) if comp.params.contains_key(*key) => comp.param_path(&path),
        _ => comp.param_or_parent(""),
    };
    out.push(
        Finding::new("C047", Level::Error, r.message)
            .hint("`canvas run` checks every component's parameters before it starts, as RAGFlow does when it loads a canvas; fix this one")
            .component(comp.id)
            .at(&at),
    );
}

/// Missing, `null` or `""` (RAGFlow's "not complete" test).
fn blank(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

/// The pointer `components/<id>/obj/params/<base...>/<rest...>`.
fn at(comp: &Comp<'_>, base: &[String], rest: &[&str]) -> Vec<String> {
    let mut p = comp.param_path(&[]);
    p.extend(base.iter().cloned());
    p.extend(rest.iter().map(|s| (*s).to_owned()));
    p
}

/// C040: a model node without `llm_id` has no model to call unless the run supplies one.
fn empty_model(comp: &Comp<'_>, params: &Object, base: &[String], out: &mut Vec<Finding>) {
    let llm_id = params.get("llm_id");
    if llm_id
        .and_then(Value::as_str)
        .is_some_and(|s| !s.trim().is_empty())
    {
        return;
    }
    let what = if base.is_empty() {
        String::new()
    } else {
        format!("sub-agent at `{}`: ", base.join("/"))
    };
    let (msg, ptr) = match (llm_id, base.is_empty()) {
        (Some(_), _) => (
            format!("{what}`llm_id` is empty"),
            at(comp, base, &["llm_id"]),
        ),
        (None, true) => ("no `llm_id`".to_owned(), comp.param_or_parent("llm_id")),
        (None, false) => (format!("{what}no `llm_id`"), at(comp, base, &[])),
    };
    out.push(
        Finding::new("C040", Level::Warning, msg)
            .hint("pass --model, or set default_model in llm.yaml")
            .component(comp.id)
            .at(&ptr),
    );
}

/// What a non-running `Support` means, for a message.
fn why_not(support: Support, name: &str) -> Option<String> {
    match support {
        Support::Runs => None,
        Support::NotYet(t) | Support::Dead(t) => Some(t),
        Support::Ingestion => Some(format!(
            "`{name}` is a data-ingestion component, not a tool"
        )),
        Support::Unknown => Some(format!("`{name}` is not a RAGFlow tool")),
    }
}

/// A C041 finding.
fn unrunnable_tool(comp: &Comp<'_>, msg: String, ptr: &[String]) -> Finding {
    Finding::new("C041", Level::Error, msg)
        .hint("remove the tool, or run the canvas in RAGFlow")
        .component(comp.id)
        .at(ptr)
}

/// C041 (and C040 for sub-agents): the Agent offers every tool to the model, and one this
/// build cannot run fails the Agent when the model calls it. Sub-agents are walked
/// recursively (bounded by JSON nesting depth).
fn tools(
    comp: &Comp<'_>,
    catalog: &dyn Catalog,
    params: &Object,
    base: &[String],
    out: &mut Vec<Finding>,
) {
    let listed = params.get("tools").and_then(Value::as_array);
    for (i, tool) in listed.into_iter().flatten().enumerate() {
        let i = i.to_string();
        let Some(name) = tool.get("component_name").and_then(Value::as_str) else {
            let msg = format!("tool {i} has no `component_name`");
            out.push(unrunnable_tool(comp, msg, &at(comp, base, &["tools", &i])));
            continue;
        };
        if let Some(why) = why_not(catalog.tool(name), name) {
            let msg = format!("tool {i} (`{name}`): {why}");
            let ptr = at(comp, base, &["tools", &i, "component_name"]);
            out.push(unrunnable_tool(comp, msg, &ptr));
        } else if name.eq_ignore_ascii_case("agent") {
            let mut sub = base.to_vec();
            sub.extend(["tools".to_owned(), i.clone()]);
            match tool.get("params").and_then(Value::as_object) {
                Some(sub_params) => {
                    sub.push("params".to_owned());
                    empty_model(comp, sub_params, &sub, out);
                    tools(comp, catalog, sub_params, &sub, out);
                }
                None => empty_model(comp, &Object::new(), &sub, out),
            }
        }
    }
    let mcp = params.get("mcp").and_then(Value::as_array);
    let servers = mcp.map_or(0, Vec::len);
    if servers == 0 {
        return;
    }
    if let Some(why) = why_not(catalog.tool("MCP"), "MCP") {
        for i in 0..servers {
            let i = i.to_string();
            let msg = format!("MCP server {i}: {why}");
            out.push(unrunnable_tool(comp, msg, &at(comp, base, &["mcp", &i])));
        }
        return;
    }
    // C048: RAGFlow keeps MCP servers' addresses in its database; the canvas has the id.
    for (i, entry) in mcp.into_iter().flatten().enumerate() {
        if entry
            .get("url")
            .is_some_and(|u| u.as_str().is_some_and(|u| !u.is_empty()))
        {
            continue;
        }
        let id = entry.get("mcp_id").and_then(Value::as_str).unwrap_or("");
        let i = i.to_string();
        out.push(
            Finding::new(
                "C048",
                Level::Info,
                format!("MCP server {i} (`{id}`) is named by its RAGFlow id only"),
            )
            .hint(format!(
                "give its address at run time: --mcp-config FILE with `servers: {{{id}: {{url: ...}}}}`"
            ))
            .component(comp.id)
            .at(&at(comp, base, &["mcp", &i])),
        );
    }
}

/// C042: RAGFlow decides how to ask for and parse a field by its `type`.
fn untyped_fields(comp: &Comp<'_>, out: &mut Vec<Finding>) {
    let Some(inputs) = comp.params.get("inputs").and_then(Value::as_object) else {
        return;
    };
    for (key, field) in inputs {
        if field
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty())
        {
            continue;
        }
        out.push(
            Finding::new(
                "C042",
                Level::Warning,
                format!("input field `{key}` has no `type`"),
            )
            .hint("set `type`: line, paragraph, options, file, integer, float, boolean or object")
            .component(comp.id)
            .at(&comp.param_path(&["inputs", key])),
        );
    }
}

/// C043: an Iteration whose `items_ref` does not give an array fails with "must be an
/// array" before its first item.
fn items_ref(c: &Canvas<'_>, comp: &Comp<'_>, out: &mut Vec<Finding>) {
    let raw = comp.params.get("items_ref");
    let problem = match raw.and_then(Value::as_str) {
        None if raw.is_some_and(|v| !v.is_null()) => Some("`items_ref` is not a string".to_owned()),
        None => Some("no `items_ref`".to_owned()),
        Some(s) => not_an_array(c, s),
    };
    if let Some(problem) = problem {
        out.push(
            Finding::new("C043", Level::Error, problem)
                .hint("point `items_ref` at an array: a component output of type Array<...> (e.g. a StringTransform split) or an array variable")
                .component(comp.id)
                .at(&comp.param_or_parent("items_ref")),
        );
    }
}

/// Why selector `s` cannot name an array, if it cannot.
fn not_an_array(c: &Canvas<'_>, s: &str) -> Option<String> {
    // Selector resolution strips braces and spaces (`engine.md` §3.2).
    let sel = s.trim_matches(|ch| ch == '{' || ch == '}' || ch == ' ');
    if sel.is_empty() {
        return Some("`items_ref` is empty".to_owned());
    }
    if is_bare_cpn_ref(sel) {
        let (id, var) = sel.split_once('@')?;
        let declared = c
            .index(id)
            .and_then(|i| c.comps[i].params.get("outputs"))
            .and_then(|o| o.get(var))
            .and_then(|o| o.get("type"))
            .and_then(Value::as_str)?;
        return (!array_type(declared))
            .then(|| format!("`items_ref` `{sel}` is declared as `{declared}`, not an array"));
    }
    let global = sel.starts_with("sys.") || sel.starts_with("env.");
    if !global || sel.len() <= 4 {
        return Some(format!("`items_ref` `{s}` is not a reference"));
    }
    if let Some(v) = c.doc.get("globals").and_then(|g| g.get(sel)) {
        if !v.is_array() && !v.is_null() {
            return Some(format!(
                "`items_ref` `{sel}` holds {}, not an array",
                kind_name(v)
            ));
        }
    } else if let Some(name) = sel.strip_prefix("sys.") {
        if matches!(name, "query" | "user_id" | "conversation_turns" | "date") {
            return Some(format!("`items_ref` `{sel}` is not an array"));
        }
    }
    let declared = sel
        .strip_prefix("env.")
        .and_then(|name| declared_type(c, name))?;
    (!array_type(declared))
        .then(|| format!("`items_ref` `{sel}` is declared as `{declared}`, not an array"))
}

/// Whether a declared type can hold an array (`Array<...>`, or a type that says nothing).
fn array_type(t: &str) -> bool {
    let t = t.trim().to_ascii_lowercase();
    t.starts_with("array") || t.is_empty() || t == "any" || t == "unknown"
}

/// The declared `type` of conversation variable `name`.
fn declared_type<'a>(c: &Canvas<'a>, name: &str) -> Option<&'a str> {
    let by_name = |v: &&'a Value| v.get("name").and_then(Value::as_str) == Some(name);
    let var = match c.doc.get("variables")? {
        Value::Object(vars) => vars.get(name).or_else(|| vars.values().find(by_name)),
        Value::Array(vars) => vars.iter().find(by_name),
        _ => None,
    }?;
    var.get("type").and_then(Value::as_str)
}

/// C044: a Loop that runs no pass, or always runs every pass (`engine.md` §7.6: the
/// termination test runs before each pass, and an empty `and` list is already true).
fn loop_never_ends_or_never_runs(c: &Canvas<'_>, i: usize, out: &mut Vec<Finding>) {
    let comp = &c.comps[i];
    let p = comp.params;
    let mut warn = |msg: String, key: &str| {
        out.push(
            Finding::new("C044", Level::Warning, msg)
                .hint("set `maximum_loop_count` above 0 and a termination condition (or an ExitLoop in the body)")
                .component(comp.id)
                .at(&comp.param_or_parent(key)),
        );
    };
    let max = match p.get("maximum_loop_count") {
        None | Some(Value::Null) => {
            Err("no `maximum_loop_count` (RAGFlow's default is 0)".to_owned())
        }
        Some(Value::Number(n)) => Ok(n.as_f64().unwrap_or(0.0)),
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("`maximum_loop_count` {s:?} is not a number")),
        Some(_) => Err("`maximum_loop_count` is not a number".to_owned()),
    };
    let passes = match max {
        Ok(m) if m > 0.0 => Some(m),
        Ok(m) => {
            let msg = format!("`maximum_loop_count` is {m}, so the loop body never runs");
            warn(msg, "maximum_loop_count");
            None
        }
        Err(why) => {
            warn(
                format!("{why}, so the loop body never runs"),
                "maximum_loop_count",
            );
            None
        }
    };
    let no_conditions = match p.get("loop_termination_condition") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if !no_conditions {
        return;
    }
    let exit = c.children[i].iter().any(|&ch| c.comps[ch].is("exitloop"));
    match p.get("logical_operator") {
        // A bad operator is C046.
        Some(op) if op.as_str() != Some("and") && op.as_str() != Some("or") => {}
        Some(op) if op.as_str() == Some("or") => {
            if let (Some(m), false) = (passes, exit) {
                let msg = format!("no termination condition and no ExitLoop: the loop always runs all `maximum_loop_count` ({m}) passes");
                warn(msg, "loop_termination_condition");
            }
        }
        _ => warn(
            "no termination condition with logical operator `and`: RAGFlow ends the loop before its first pass".to_owned(),
            "loop_termination_condition",
        ),
    }
}

/// C045: RAGFlow's Loop raises "Loop Variable is not complete." for any of these
/// (`engine.md` §7.6).
fn loop_variables(comp: &Comp<'_>, out: &mut Vec<Finding>) {
    let vars = match comp.params.get("loop_variables") {
        None | Some(Value::Null) => return,
        Some(Value::Array(a)) => a,
        Some(_) => {
            out.push(incomplete_variable(
                comp,
                "`loop_variables` is not a list".to_owned(),
                &["loop_variables"],
            ));
            return;
        }
    };
    for (i, var) in vars.iter().enumerate() {
        let Some(why) = variable_gap(var) else {
            continue;
        };
        let i = i.to_string();
        out.push(incomplete_variable(
            comp,
            format!("loop variable {i} is incomplete: {why}"),
            &["loop_variables", &i],
        ));
    }
}

/// What makes a loop variable incomplete, if anything.
fn variable_gap(var: &Value) -> Option<String> {
    let Some(o) = var.as_object() else {
        return Some("it is not an object".to_owned());
    };
    for key in ["variable", "input_mode", "type"] {
        if blank(o.get(key)) {
            return Some(format!("`{key}` is empty"));
        }
    }
    let value = o.get("value");
    match o.get("input_mode").and_then(Value::as_str) {
        Some("variable") if blank(value) => {
            Some("`variable` mode without a `value` to read".to_owned())
        }
        Some("constant") if value.is_none_or(Value::is_null) => {
            Some("`constant` mode without a `value`".to_owned())
        }
        Some("variable" | "constant") => None,
        _ => Some("`input_mode` is neither `constant` nor `variable`".to_owned()),
    }
}

/// A C045 finding.
fn incomplete_variable(comp: &Comp<'_>, msg: String, rest: &[&str]) -> Finding {
    Finding::new("C045", Level::Error, msg)
        .hint("give it a `variable` name, a `type`, and `input_mode` `constant` (with a `value`) or `variable` (with a reference in `value`); RAGFlow fails with \"Loop Variable is not complete.\"")
        .component(comp.id)
        .at(&comp.param_path(rest))
}

/// C046: RAGFlow's LoopItem raises "Loop condition is incomplete." (or an operator
/// error) from outside any error handling, which crashes the run.
fn loop_conditions(comp: &Comp<'_>, out: &mut Vec<Finding>) {
    let mut bad = |msg: String, rest: &[&str]| {
        out.push(
            Finding::new("C046", Level::Error, msg)
                .hint("give every condition a `variable`, an `operator`, and `input_mode` `constant` or `variable`; RAGFlow crashes with \"Loop condition is incomplete.\"")
                .component(comp.id)
                .at(&comp.param_path(rest)),
        );
    };
    let conditions = match comp.params.get("loop_termination_condition") {
        None | Some(Value::Null) => &Vec::new(),
        Some(Value::Array(a)) => a,
        Some(_) => {
            bad(
                "`loop_termination_condition` is not a list".to_owned(),
                &["loop_termination_condition"],
            );
            return;
        }
    };
    for (i, cond) in conditions.iter().enumerate() {
        let why = match cond.as_object() {
            None => Some("it is not an object".to_owned()),
            Some(o) => ["variable", "operator"]
                .into_iter()
                .find(|k| blank(o.get(*k)))
                .map(|k| format!("`{k}` is empty"))
                .or_else(|| match o.get("input_mode") {
                    None => None,
                    Some(Value::String(m)) if m == "constant" || m == "variable" => None,
                    Some(_) => Some("`input_mode` is neither `constant` nor `variable`".to_owned()),
                }),
        };
        if let Some(why) = why {
            let i = i.to_string();
            bad(
                format!("termination condition {i} is incomplete: {why}"),
                &["loop_termination_condition", &i],
            );
        }
    }
    match comp.params.get("logical_operator") {
        None => {}
        Some(Value::String(op)) if op == "and" || op == "or" => {}
        Some(op) => bad(
            format!("logical operator {op} is neither `and` nor `or`"),
            &["logical_operator"],
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{base, cpn, one, only, run, with};

    #[test]
    fn c047_the_catalog_refuses_the_params() {
        let mut doc = base();
        assert_eq!(only(&doc, "C047"), []);
        doc["components"]["Message:M"]["obj"]["params"]["output_format"] = json!("html");
        let f = one(&doc, "C047");
        assert_eq!(f.pointer, "/components/Message:M/obj/params/output_format");
        assert_eq!(f.component.as_deref(), Some("Message:M"));
        assert_eq!(f.message, "output_format \"html\" is not supported");
        assert!(f.stops_run);
        // Params the loader cannot read are C009's, not built.
        doc["components"]["Message:M"]["obj"]["params"] = json!("output_format");
        assert_eq!(only(&doc, "C047"), []);
    }

    #[test]
    fn c040_empty_llm_id_on_models_and_sub_agents() {
        let doc = with(
            "LLM:A",
            json!({
                "LLM:A": cpn("LLM", json!({"llm_id": ""}), &["Agent:B"]),
                "Agent:B": cpn("Agent", json!({"llm_id": "m", "tools": [
                    {"component_name": "Agent", "name": "sub", "params": {"tools": [
                        {"component_name": "Agent", "params": {"llm_id": " "}}]}}]}), &["Categorize:C"]),
                "Categorize:C": cpn("Categorize", json!({"category_description": {"a": {"to": ["Message:M"]}}}), &[]),
            }),
        );
        assert_eq!(
            only(&doc, "C040"),
            [
                ("C040", "/components/LLM:A/obj/params/llm_id".to_owned()),
                (
                    "C040",
                    "/components/Agent:B/obj/params/tools/0/params".to_owned()
                ),
                (
                    "C040",
                    "/components/Agent:B/obj/params/tools/0/params/tools/0/params/llm_id"
                        .to_owned()
                ),
                ("C040", "/components/Categorize:C/obj/params".to_owned()),
            ]
        );
        let f = run(&doc);
        assert_eq!(
            f.iter()
                .find(|f| f.code == "C040")
                .and_then(|f| f.hint.as_deref()),
            Some("pass --model, or set default_model in llm.yaml")
        );
        assert_eq!(only(&base(), "C040"), []);
    }

    #[test]
    fn c041_tools_this_build_cannot_run_and_c048_mcp_servers_by_id() {
        let doc = with(
            "Agent:A",
            json!({"Agent:A": cpn("Agent", json!({"llm_id": "m",
                "tools": [{"component_name": "TavilySearch", "params": {}},
                          {"component_name": "Agent", "params": {"llm_id": "m", "tools": [{"component_name": "Nope"}]}},
                          {"name": "x"}],
                "mcp": [{"mcp_id": "a"}, {"mcp_id": "b"}]}), &["Message:M"])}),
        );
        assert_eq!(
            only(&doc, "C041"),
            [
                (
                    "C041",
                    "/components/Agent:A/obj/params/tools/0/component_name".to_owned()
                ),
                (
                    "C041",
                    "/components/Agent:A/obj/params/tools/1/params/tools/0/component_name"
                        .to_owned()
                ),
                ("C041", "/components/Agent:A/obj/params/tools/2".to_owned()),
            ]
        );
        let msgs: Vec<String> = run(&doc)
            .into_iter()
            .filter(|f| f.code == "C041")
            .map(|f| f.message)
            .collect();
        assert!(
            msgs.contains(
                &"tool 0 (`TavilySearch`): the TavilySearch tool is not supported yet".to_owned()
            ),
            "{msgs:?}"
        );
        let ok = with(
            "Agent:A",
            json!({"Agent:A": cpn("Agent", json!({"llm_id": "m", "mcp": [],
                "tools": [{"component_name": "Agent", "params": {"llm_id": "m"}}]}), &["Message:M"])}),
        );
        assert_eq!(only(&ok, "C041"), []);
        assert_eq!(
            only(&doc, "C048"),
            [
                ("C048", "/components/Agent:A/obj/params/mcp/0".to_owned()),
                ("C048", "/components/Agent:A/obj/params/mcp/1".to_owned()),
            ]
        );
        let inline = with(
            "Agent:A",
            json!({"Agent:A": cpn("Agent", json!({"llm_id": "m",
                "mcp": [{"mcp_id": "a", "url": "https://mcp.example.com/mcp"}]}), &["Message:M"])}),
        );
        assert_eq!(only(&inline, "C048"), []);
    }

    #[test]
    fn c042_input_fields_without_type() {
        let mut doc = base();
        doc["components"]["begin"]["obj"]["params"]["inputs"] = json!({"a": {"name": "A", "type": "line"}, "b": {"name": "B"}, "c/d": "x", "e": {"type": ""}});
        assert_eq!(
            only(&doc, "C042"),
            [
                ("C042", "/components/begin/obj/params/inputs/b".to_owned()),
                (
                    "C042",
                    "/components/begin/obj/params/inputs/c~1d".to_owned()
                ),
                ("C042", "/components/begin/obj/params/inputs/e".to_owned()),
            ]
        );
        assert_eq!(only(&base(), "C042"), []);
    }

    fn iteration(items_ref: serde_json::Value) -> serde_json::Value {
        with(
            "StringTransform:Split",
            json!({
                "StringTransform:Split": cpn("StringTransform", json!({"method": "split", "split_ref": "sys.query",
                    "outputs": {"result": {"type": "Array<string>"}, "text": {"type": "string"}}}), &["Iteration:I"]),
                "Iteration:I": cpn("Iteration", json!({"items_ref": items_ref}), &["Message:M"]),
                "IterationItem:S": {"obj": {"component_name": "IterationItem", "params": {}}, "parent_id": "Iteration:I"},
            }),
        )
    }

    #[test]
    fn c043_items_ref_must_name_an_array() {
        for good in [
            json!("StringTransform:Split@result"),
            json!("{StringTransform:Split@result}"),
            json!("sys.files"),
            json!("env.list"),
            json!("LLM:Gone@x"),
        ] {
            let mut doc = iteration(good.clone());
            doc["globals"]["env.list"] = json!([1]);
            assert_eq!(only(&doc, "C043"), [], "{good}");
        }
        for (bad, msg) in [
            (json!(null), "no `items_ref`"),
            (json!(""), "`items_ref` is empty"),
            (json!(3), "`items_ref` is not a string"),
            (json!("hello"), "`items_ref` `hello` is not a reference"),
            (
                json!("sys.query"),
                "`items_ref` `sys.query` holds a string, not an array",
            ),
            (
                json!("env.x"),
                "`items_ref` `env.x` holds a number, not an array",
            ),
            (
                json!("StringTransform:Split@text"),
                "`items_ref` `StringTransform:Split@text` is declared as `string`, not an array",
            ),
        ] {
            let f = one(&iteration(bad.clone()), "C043");
            assert_eq!(f.message, msg, "{bad}");
            assert_eq!(f.pointer, "/components/Iteration:I/obj/params/items_ref");
        }
        // A conversation variable declared with another type.
        let mut doc = iteration(json!("env.s"));
        doc["variables"] = json!({"s": {"name": "s", "type": "string", "value": ""}});
        assert_eq!(
            one(&doc, "C043").message,
            "`items_ref` `env.s` is declared as `string`, not an array"
        );
    }

    fn looped(params: serde_json::Value, exit: bool) -> serde_json::Value {
        let mut doc = with(
            "Loop:L",
            json!({
                "Loop:L": cpn("Loop", params, &["Message:M"]),
                "LoopItem:S": {"obj": {"component_name": "LoopItem", "params": {}}, "downstream": ["Message:B"], "parent_id": "Loop:L"},
                "Message:B": {"obj": {"component_name": "Message", "params": {"content": ["b"]}}, "parent_id": "Loop:L"},
            }),
        );
        if exit {
            doc["components"]["Message:B"]["downstream"] = json!(["ExitLoop:E"]);
            doc["components"]["ExitLoop:E"] =
                json!({"obj": {"component_name": "ExitLoop", "params": {}}, "parent_id": "Loop:L"});
        }
        doc
    }

    const COND: &str =
        r#"[{"variable": "Loop:L@i", "operator": "≥", "value": 3, "input_mode": "constant"}]"#;

    #[test]
    fn c044_loops_that_never_run_or_never_stop() {
        let cond: serde_json::Value = serde_json::from_str(COND).unwrap_or_default();
        let ok = looped(
            json!({"maximum_loop_count": 5, "loop_termination_condition": cond}),
            false,
        );
        assert_eq!(only(&ok, "C044"), []);
        assert_eq!(
            only(
                &looped(
                    json!({"maximum_loop_count": 5, "logical_operator": "or"}),
                    true
                ),
                "C044"
            ),
            []
        );

        let f = one(
            &looped(
                json!({"maximum_loop_count": 0, "loop_termination_condition": cond}),
                false,
            ),
            "C044",
        );
        assert_eq!(
            f.pointer,
            "/components/Loop:L/obj/params/maximum_loop_count"
        );
        assert_eq!(
            f.message,
            "`maximum_loop_count` is 0, so the loop body never runs"
        );
        let f = one(
            &looped(json!({"loop_termination_condition": cond}), false),
            "C044",
        );
        assert_eq!(f.pointer, "/components/Loop:L/obj/params");
        assert!(
            f.message.starts_with("no `maximum_loop_count`"),
            "{}",
            f.message
        );

        let f = one(
            &looped(
                json!({"maximum_loop_count": 5, "logical_operator": "or", "loop_termination_condition": []}),
                false,
            ),
            "C044",
        );
        assert_eq!(
            f.pointer,
            "/components/Loop:L/obj/params/loop_termination_condition"
        );
        assert!(
            f.message
                .contains("always runs all `maximum_loop_count` (5) passes"),
            "{}",
            f.message
        );
        // No pass at all: only the count is reported.
        let f = one(
            &looped(
                json!({"maximum_loop_count": 0, "logical_operator": "or"}),
                false,
            ),
            "C044",
        );
        assert_eq!(
            f.pointer,
            "/components/Loop:L/obj/params/maximum_loop_count"
        );
        // With `and`, an empty condition list ends the loop before its first pass, even
        // with an ExitLoop in the body.
        let f = one(&looped(json!({"maximum_loop_count": 5}), true), "C044");
        assert!(f.message.contains("before its first pass"), "{}", f.message);
    }

    #[test]
    fn c045_incomplete_loop_variables_as_ragflow_checks_them() {
        let vars = json!([
            {"variable": "i", "input_mode": "constant", "type": "number", "value": 0},
            {"variable": "s", "input_mode": "constant", "type": "string", "value": ""},
            {"variable": "r", "input_mode": "variable", "type": "string", "value": "sys.query"},
            {"input_mode": "constant", "type": "string", "value": "", "variable": ""},
            {"variable": "v", "input_mode": "variable", "type": "string", "value": ""},
            {"variable": "c", "input_mode": "constant", "type": "string", "value": null},
            {"variable": "m", "input_mode": "other", "type": "string", "value": "1"},
            {"variable": "t", "input_mode": "constant", "value": "1"},
            "x",
        ]);
        let cond: serde_json::Value = serde_json::from_str(COND).unwrap_or_default();
        let doc = looped(
            json!({"maximum_loop_count": 5, "loop_termination_condition": cond, "loop_variables": vars}),
            false,
        );
        let found: Vec<String> = run(&doc)
            .into_iter()
            .filter(|f| f.code == "C045")
            .map(|f| {
                format!(
                    "{} {}",
                    f.pointer.rsplit('/').next().unwrap_or_default(),
                    f.message
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                "3 loop variable 3 is incomplete: `variable` is empty",
                "4 loop variable 4 is incomplete: `variable` mode without a `value` to read",
                "5 loop variable 5 is incomplete: `constant` mode without a `value`",
                "6 loop variable 6 is incomplete: `input_mode` is neither `constant` nor `variable`",
                "7 loop variable 7 is incomplete: `type` is empty",
                "8 loop variable 8 is incomplete: it is not an object",
            ]
        );
        assert_eq!(
            only(
                &looped(
                    json!({"maximum_loop_count": 5, "loop_termination_condition": cond}),
                    false
                ),
                "C045"
            ),
            []
        );
    }

    #[test]
    fn c046_incomplete_termination_conditions() {
        let conds = json!([
            {"variable": "Loop:L@i", "operator": "=", "value": 1},
            {"variable": "", "operator": "=", "value": 1},
            {"variable": "Loop:L@i", "value": 1},
            {"variable": "Loop:L@i", "operator": "=", "input_mode": "ref"},
            7,
        ]);
        let doc = looped(
            json!({"maximum_loop_count": 5, "loop_termination_condition": conds, "logical_operator": "xor"}),
            false,
        );
        assert_eq!(
            only(&doc, "C046"),
            [
                (
                    "C046",
                    "/components/Loop:L/obj/params/logical_operator".to_owned()
                ),
                (
                    "C046",
                    "/components/Loop:L/obj/params/loop_termination_condition/1".to_owned()
                ),
                (
                    "C046",
                    "/components/Loop:L/obj/params/loop_termination_condition/2".to_owned()
                ),
                (
                    "C046",
                    "/components/Loop:L/obj/params/loop_termination_condition/3".to_owned()
                ),
                (
                    "C046",
                    "/components/Loop:L/obj/params/loop_termination_condition/4".to_owned()
                ),
            ]
        );
        let cond: serde_json::Value = serde_json::from_str(COND).unwrap_or_default();
        assert_eq!(
            only(
                &looped(
                    json!({"maximum_loop_count": 5, "loop_termination_condition": cond}),
                    false
                ),
                "C046"
            ),
            []
        );
    }
}
