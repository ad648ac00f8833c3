//! VariableAggregator: per group, the first truthy value among its selectors becomes
//! the group's output (`engine.md` §7.8).

use async_trait::async_trait;
use serde_json::Value;
use std::borrow::Cow;

use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx};
use canvas_pyrt::{Object, py_str, py_type_name, truthy};

/// Build a VariableAggregator, applying RAGFlow's `check()`: `groups` non-empty, each
/// with a non-empty `group_name` and a non-empty `variables` list.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let err = |text: String| BuildError::Params(text);
    let groups = params.get("groups").unwrap_or(&Value::Null);
    if !truthy(groups) {
        return Err(err(
            "[VariableAggregator] groups does not support empty value.".into(),
        ));
    }
    // Python iterates whatever `groups` is; only a list of dicts gets through `g.get`.
    let items: Vec<&Value> = match groups {
        Value::Array(items) => items.iter().collect(),
        // A dict iterates its keys, a string its characters: both are strings.
        Value::Object(_) | Value::String(_) => {
            return Err(err("'str' object has no attribute 'get'".into()));
        }
        other => {
            return Err(err(format!(
                "'{}' object is not iterable",
                py_type_name(other)
            )));
        }
    };
    let mut parsed = Vec::with_capacity(items.len());
    for g in items {
        let Value::Object(g) = g else {
            return Err(err(format!(
                "'{}' object has no attribute 'get'",
                py_type_name(g)
            )));
        };
        let name = g.get("group_name").unwrap_or(&Value::Null);
        if !truthy(name) {
            return Err(err(
                "[VariableAggregator] group_name can not be empty!".into()
            ));
        }
        let name = py_str(name);
        let variables = g.get("variables").unwrap_or(&Value::Null);
        if !truthy(variables) {
            return Err(err(format!(
                "[VariableAggregator] variables of group `{name}` can not be empty"
            )));
        }
        let Value::Array(selectors) = variables else {
            return Err(err(format!(
                "[VariableAggregator] variables of group `{name}` should be a list of strings"
            )));
        };
        parsed.push(Group {
            name,
            selectors: selectors.clone(),
        });
    }
    Ok(Box::new(VariableAggregator { groups: parsed }))
}

/// One checked group.
struct Group {
    /// `str(group_name)`: the output name.
    name: String,
    /// The `variables` list as written (`[{value: selector}, …]`).
    selectors: Vec<Value>,
}

/// The VariableAggregator component.
pub struct VariableAggregator {
    groups: Vec<Group>,
}

/// `selector["value"]`, failing with the text Python's exception gives.
fn selector_expression(selector: &Value) -> CResult<&str> {
    let failed = |text: String| ComponentError::Failed(text);
    let value = match selector {
        Value::Object(o) => o.get("value").ok_or_else(|| failed("'value'".into()))?,
        Value::String(_) => {
            return Err(failed("string indices must be integers, not 'str'".into()));
        }
        Value::Array(_) => {
            return Err(failed(
                "list indices must be integers or slices, not str".into(),
            ));
        }
        other => {
            return Err(failed(format!(
                "'{}' object is not subscriptable",
                py_type_name(other)
            )));
        }
    };
    // `get_variable_value` strips the expression, which only a string can do.
    value.as_str().ok_or_else(|| {
        failed(format!(
            "'{}' object has no attribute 'strip'",
            py_type_name(value)
        ))
    })
}

#[async_trait]
impl Component for VariableAggregator {
    fn instant(&self) -> bool {
        true
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "Picking the first non-empty value of each group.".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        for group in &self.groups {
            // Recorded before resolving, so it shows even when a selector fails.
            cx.set_input(
                &format!("{}.variables", group.name),
                Value::Array(group.selectors.clone()),
            );
            for selector in &group.selectors {
                let value = cx.resolve(selector_expression(selector)?)?;
                // `0`, `""`, `[]`, `False` are skipped; with no truthy value the output
                // keeps whatever it held.
                if truthy(&value) {
                    cx.set_output(&group.name, value);
                    break;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;
    use serde_json::json;

    const ID: &str = "VariableAggregator:X";

    fn harness(groups: Value, globals: Value) -> Harness {
        Harness::single(
            &crate::Registry,
            ID,
            "VariableAggregator",
            json!({ "groups": groups }),
            globals,
        )
    }

    fn group(name: &str, selectors: &[&str]) -> Value {
        let vars: Vec<Value> = selectors.iter().map(|s| json!({ "value": s })).collect();
        json!({"group_name": name, "type": "string", "variables": vars})
    }

    fn has_output(h: &Harness, name: &str) -> bool {
        h.state()
            .nodes
            .get(ID)
            .is_some_and(|n| n.outputs.contains_key(name))
    }

    fn build_error(params: Value) -> String {
        let Value::Object(params) = params else {
            panic!("params must be an object")
        };
        match build(&params) {
            Err(BuildError::Params(text)) => text,
            Err(other) => panic!("unexpected error {other:?}"),
            Ok(_) => panic!("build should fail"),
        }
    }

    #[test]
    fn thoughts_text() {
        let h = Harness::single(
            &crate::Registry,
            ID,
            "VariableAggregator",
            json!({"groups": [group("g", &["sys.query"])]}),
            json!({}),
        );
        assert_eq!(
            h.thoughts(ID),
            "Picking the first non-empty value of each group."
        );
    }

    /// §9 item 50.
    #[test]
    fn checklist_50_first_truthy_wins_and_all_falsy_leaves_output_unset() {
        let h = harness(
            json!([
                group("g", &["begin@a", "begin@b"]),
                group("none", &["begin@a", "begin@z"])
            ]),
            json!({}),
        );
        h.set_output("begin", "a", json!(""));
        h.set_output("begin", "b", json!("B"));
        h.set_output("begin", "z", json!(0));
        h.invoke(ID).unwrap();
        assert_eq!(h.output(ID, "g"), json!("B"));
        assert!(!has_output(&h, "none"));
    }

    /// `conformance/cases/03_vars`: the values the VariableAssigner left behind.
    #[test]
    fn conformance_03_vars_groups() {
        let h = harness(
            json!([
                group("first_non_empty", &["env.empty", "env.name", "env.bad"]),
                {"group_name": "list_pick", "type": "array",
                 "variables": [{"value": "env.none_list"}, {"value": "env.copy"}]}
            ]),
            json!({"env.empty": "", "env.name": "HelloBob!",
                   "env.bad": "ERROR:VARIABLE_NOT_NUMBER or PARAMETER_NOT_NUMBER",
                   "env.none_list": [], "env.copy": [2, 3, 4, 5]}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(h.output(ID, "first_non_empty"), json!("HelloBob!"));
        assert_eq!(h.output(ID, "list_pick"), json!([2, 3, 4, 5]));
        assert_eq!(
            h.input(ID, "first_non_empty.variables"),
            json!([{"value": "env.empty"}, {"value": "env.name"}, {"value": "env.bad"}])
        );
        assert_eq!(
            h.input(ID, "list_pick.variables"),
            json!([{"value": "env.none_list"}, {"value": "env.copy"}])
        );
        let st = h.state();
        let keys: Vec<&String> = st.nodes[ID].inputs.keys().collect();
        assert_eq!(keys, ["first_non_empty.variables", "list_pick.variables"]);
    }

    /// `conformance/cases/all_var_aggregator`.
    #[test]
    fn conformance_all_var_aggregator_pick() {
        let h = harness(
            json!([group("picked", &["env.a", "env.b", "env.c"])]),
            json!({"env.a": "1", "env.b": "2", "env.c": "c"}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(h.output(ID, "picked"), json!("1"));
        assert_eq!(
            h.input(ID, "picked.variables"),
            json!([{"value": "env.a"}, {"value": "env.b"}, {"value": "env.c"}])
        );
    }

    #[test]
    fn falsy_values_are_skipped() {
        let h = harness(
            json!([group(
                "g",
                &[
                    "env.s", "env.i", "env.f", "env.b", "env.l", "env.d", "env.n", "env.ok"
                ]
            )]),
            json!({"env.s": "", "env.i": 0, "env.f": 0.0, "env.b": false, "env.l": [],
                   "env.d": {}, "env.n": null, "env.ok": {"k": 0}}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(h.output(ID, "g"), json!({"k": 0}));
    }

    #[test]
    fn truthy_non_strings_are_kept_as_they_are() {
        for v in [
            json!(5),
            json!(-0.5),
            json!(true),
            json!("0"),
            json!([0]),
            json!({"a": null}),
        ] {
            let h = harness(json!([group("g", &["env.v"])]), json!({"env.v": v.clone()}));
            h.invoke(ID).unwrap();
            assert_eq!(h.output(ID, "g"), v);
        }
    }

    #[test]
    fn unset_output_keeps_previous_value() {
        let h = harness(json!([group("g", &["env.a"])]), json!({"env.a": ""}));
        h.set_output(ID, "g", json!("before"));
        h.invoke(ID).unwrap();
        assert_eq!(h.output(ID, "g"), json!("before"));
    }

    #[test]
    fn selectors_after_the_first_truthy_are_not_resolved() {
        // `env.nope` would raise a KeyError if it were looked up.
        let h = harness(
            json!([group("g", &["sys.query", "env.nope"])]),
            json!({"sys.query": "hello"}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(h.output(ID, "g"), json!("hello"));
    }

    #[test]
    fn selectors_accept_braces_and_dotted_paths() {
        let h = harness(
            json!([
                group("g", &["{begin@obj.a.1}"]),
                group("q", &["{ {sys.query} }"])
            ]),
            json!({"sys.query": "hello"}),
        );
        h.set_output("begin", "obj", json!({"a": [10, 20]}));
        h.invoke(ID).unwrap();
        assert_eq!(h.output(ID, "g"), json!(20));
        assert_eq!(h.output(ID, "q"), json!("hello"));
    }

    #[test]
    fn unknown_references_fail_after_recording_inputs() {
        let h = harness(
            json!([
                group("ok", &["sys.query"]),
                group("bad", &["env.empty", "env.nope"])
            ]),
            json!({"sys.query": "hello", "env.empty": ""}),
        );
        assert_eq!(
            h.invoke(ID),
            Err(ComponentError::Failed("'env.nope'".into()))
        );
        assert_eq!(h.output(ID, "ok"), json!("hello"));
        assert_eq!(
            h.input(ID, "bad.variables"),
            json!([{"value": "env.empty"}, {"value": "env.nope"}])
        );
        let h = harness(json!([group("g", &["Nope:X@y"])]), json!({}));
        assert_eq!(
            h.invoke(ID),
            Err(ComponentError::Failed(
                "Can't find variable: 'Nope:X@y'".into()
            ))
        );
    }

    #[test]
    fn malformed_selectors_fail_like_python() {
        let cases = [
            (json!({"val": "sys.query"}), "'value'"),
            (
                json!("sys.query"),
                "string indices must be integers, not 'str'",
            ),
            (
                json!(["sys.query"]),
                "list indices must be integers or slices, not str",
            ),
            (json!(5), "'int' object is not subscriptable"),
            (json!(null), "'NoneType' object is not subscriptable"),
            (json!({"value": 5}), "'int' object has no attribute 'strip'"),
            (
                json!({"value": null}),
                "'NoneType' object has no attribute 'strip'",
            ),
        ];
        for (selector, text) in cases {
            let h = harness(
                json!([{"group_name": "g", "variables": [selector.clone()]}]),
                json!({}),
            );
            assert_eq!(
                h.invoke(ID),
                Err(ComponentError::Failed(text.into())),
                "{selector}"
            );
            assert_eq!(h.input(ID, "g.variables"), json!([selector]));
        }
    }

    #[test]
    fn non_string_group_name_is_formatted_with_str() {
        let h = harness(
            json!([{"group_name": 7, "variables": [{"value": "sys.query"}]}]),
            json!({"sys.query": "hello"}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(h.output(ID, "7"), json!("hello"));
        assert_eq!(h.input(ID, "7.variables"), json!([{"value": "sys.query"}]));
    }

    #[test]
    fn check_rejects_bad_groups() {
        assert_eq!(
            build_error(json!({})),
            "[VariableAggregator] groups does not support empty value."
        );
        assert_eq!(
            build_error(json!({"groups": []})),
            "[VariableAggregator] groups does not support empty value."
        );
        assert_eq!(
            build_error(
                json!({"groups": [{"group_name": "", "variables": [{"value": "sys.query"}]}]})
            ),
            "[VariableAggregator] group_name can not be empty!"
        );
        assert_eq!(
            build_error(json!({"groups": [{"variables": [{"value": "sys.query"}]}]})),
            "[VariableAggregator] group_name can not be empty!"
        );
        assert_eq!(
            build_error(json!({"groups": [{"group_name": "g", "variables": []}]})),
            "[VariableAggregator] variables of group `g` can not be empty"
        );
        assert_eq!(
            build_error(json!({"groups": [{"group_name": "g"}]})),
            "[VariableAggregator] variables of group `g` can not be empty"
        );
        assert_eq!(
            build_error(json!({"groups": [{"group_name": "g", "variables": "sys.query"}]})),
            "[VariableAggregator] variables of group `g` should be a list of strings"
        );
        assert_eq!(
            build_error(json!({"groups": [{"group_name": "g", "variables": {"value": "x"}}]})),
            "[VariableAggregator] variables of group `g` should be a list of strings"
        );
        assert_eq!(
            build_error(json!({"groups": ["g"]})),
            "'str' object has no attribute 'get'"
        );
        assert_eq!(
            build_error(json!({"groups": {"g": 1}})),
            "'str' object has no attribute 'get'"
        );
        assert_eq!(
            build_error(json!({"groups": 5})),
            "'int' object is not iterable"
        );
        assert_eq!(
            build_error(json!({"groups": true})),
            "'bool' object is not iterable"
        );
        // A later bad group fails the whole check.
        assert_eq!(
            build_error(
                json!({"groups": [group("a", &["sys.query"]), {"group_name": "b", "variables": []}]})
            ),
            "[VariableAggregator] variables of group `b` can not be empty"
        );
    }

    #[test]
    fn check_accepts_extra_keys() {
        let params =
            json!({"groups": [group("g", &["sys.query"])], "outputs": {"g": {"type": "string"}}});
        let Value::Object(params) = params else {
            unreachable!()
        };
        assert!(build(&params).is_ok());
    }
}
