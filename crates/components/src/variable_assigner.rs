//! VariableAssigner: applies a list of assignment operations to globals (`env.*`) and
//! component outputs, in order (`engine.md` §7.7).
//!
//! RAGFlow's quirks are mirrored: the `"ERROR:…"` strings become the variable's value
//! (they are not component errors), `+=`…`/=` use the parameter raw while
//! `overwrite`/`append`/`extend` resolve it as a reference, and arithmetic follows
//! Python's int/float rules.

use async_trait::async_trait;
use serde_json::{Number, Value};
use std::borrow::Cow;

use canvas_engine::state::key_get;
use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx};
use canvas_pyrt::{Object, float_value, py_type_name, truthy};

const NOT_LIST: &str = "ERROR:VARIABLE_NOT_LIST";
const PARAM_NOT_LIST: &str = "ERROR:PARAMETER_NOT_LIST";
const NOT_ELEMENT_TYPE: &str = "ERROR:PARAMETER_NOT_LIST_ELEMENT_TYPE";
const NOT_NUMBER: &str = "ERROR:VARIABLE_NOT_NUMBER or PARAMETER_NOT_NUMBER";
const DIVIDE_BY_ZERO: &str = "ERROR:DIVIDE_BY_ZERO";
const INCOMPLETE: &str = "Variable is not complete.";

/// Build a VariableAssigner. RAGFlow's `check()` accepts anything; a `variables` that
/// is not a list makes every invocation a no-op.
pub fn build(_params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(VariableAssigner))
}

/// The VariableAssigner component. Its `variables` items (`{variable, operator,
/// parameter}`) are read from the node's parameters, not copied.
pub struct VariableAssigner;

#[async_trait]
impl Component for VariableAssigner {
    fn instant(&self) -> bool {
        true
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "Updating variables.".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        // Items apply one by one: a failing item leaves the earlier ones applied.
        let Some(Value::Array(items)) = cx.param("variables") else {
            return Ok(());
        };
        for item in items {
            apply(cx, item)?;
        }
        Ok(())
    }
}

fn failed(text: impl Into<String>) -> ComponentError {
    ComponentError::Failed(text.into())
}

fn error_value(text: &str) -> Value {
    Value::String(text.to_string())
}

/// A reference expression: `get_variable_value` calls `exp.strip(...)`, which raises
/// on anything but a string.
fn expression(v: &Value) -> CResult<&str> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(failed(format!(
            "'{}' object has no attribute 'strip'",
            py_type_name(other)
        ))),
    }
}

/// One `{variable, operator, parameter}` item.
fn apply(cx: &NodeCx<'_>, item: &Value) -> CResult<()> {
    let Value::Object(item) = item else {
        return Err(failed(format!(
            "'{}' object has no attribute 'get'",
            py_type_name(item)
        )));
    };
    let null = Value::Null;
    let variable = key_get(item, "variable").unwrap_or(&null);
    let operator = key_get(item, "operator").unwrap_or(&null);
    if !truthy(variable) || !truthy(operator) {
        return Err(failed(INCOMPLETE));
    }
    // A non-string operator matches no operator name, as in Python's `==` chain.
    let op = operator.as_str().unwrap_or("");
    let parameter = key_get(item, "parameter").unwrap_or(&null);
    // `0` and `""` are valid parameters: only None counts as missing.
    if parameter.is_null() && !matches!(op, "clear" | "remove_first" | "remove_last") {
        return Err(failed(INCOMPLETE));
    }
    let variable = expression(variable)?;
    let current = cx.resolve(variable)?;
    let new = operate(cx, current, op, parameter)?;
    cx.assign(variable, new)?;
    Ok(())
}

/// RAGFlow's `_operate`: the variable's new value.
fn operate(cx: &NodeCx<'_>, current: Value, op: &str, parameter: &Value) -> CResult<Value> {
    Ok(match op {
        "overwrite" => cx.resolve(expression(parameter)?)?,
        "clear" => clear(&current),
        "set" => match current {
            // Strings (and unset values) take the parameter as a template.
            Value::Null | Value::String(_) => {
                let Value::String(text) = parameter else {
                    return Err(failed(format!(
                        "expected string or bytes-like object, got '{}'",
                        py_type_name(parameter)
                    )));
                };
                Value::String(cx.value_with_variable(text)?)
            }
            _ => parameter.clone(),
        },
        "append" => {
            // The parameter is resolved first: its errors win over the type checks.
            let param = cx.resolve(expression(parameter)?)?;
            let mut list = match current {
                Value::Null => Vec::new(),
                Value::Array(list) => list,
                _ => return Ok(error_value(NOT_LIST)),
            };
            if list.first().is_some_and(|first| !isinstance(&param, first)) {
                return Ok(error_value(NOT_ELEMENT_TYPE));
            }
            list.push(param);
            Value::Array(list)
        }
        "extend" => {
            let param = cx.resolve(expression(parameter)?)?;
            let mut list = match current {
                Value::Null => Vec::new(),
                Value::Array(list) => list,
                _ => return Ok(error_value(NOT_LIST)),
            };
            let Value::Array(extra) = param else {
                return Ok(error_value(PARAM_NOT_LIST));
            };
            let mismatch = match (list.first(), extra.first()) {
                (Some(first), Some(new_first)) => !isinstance(new_first, first),
                _ => false,
            };
            if mismatch {
                return Ok(error_value(NOT_ELEMENT_TYPE));
            }
            list.extend(extra);
            Value::Array(list)
        }
        "remove_first" => match current {
            Value::Array(mut list) => {
                if !list.is_empty() {
                    list.remove(0);
                }
                Value::Array(list)
            }
            _ => error_value(NOT_LIST),
        },
        "remove_last" => match current {
            Value::Array(mut list) => {
                list.pop();
                Value::Array(list)
            }
            _ => error_value(NOT_LIST),
        },
        "+=" | "-=" | "*=" | "/=" => arithmetic(&current, op, parameter),
        // An unknown operator returns None, which is then assigned.
        _ => Value::Null,
    })
}

/// `_clear`: the empty value of the variable's type (bool is tested before int).
fn clear(v: &Value) -> Value {
    match v {
        Value::Array(_) => Value::Array(Vec::new()),
        Value::String(_) => Value::String(String::new()),
        Value::Object(_) => Value::Object(Object::new()),
        Value::Bool(_) => Value::Bool(false),
        Value::Number(n) if n.is_f64() => float_value(0.0),
        Value::Number(_) => Value::from(0),
        Value::Null => Value::Null,
    }
}

/// Python `isinstance(v, type(like))`: a bool is an int, an int is not a float.
fn isinstance(v: &Value, like: &Value) -> bool {
    match like {
        Value::Null => v.is_null(),
        Value::Bool(_) => v.is_boolean(),
        Value::Number(n) if n.is_f64() => matches!(v, Value::Number(m) if m.is_f64()),
        Value::Number(_) => match v {
            Value::Number(m) => !m.is_f64(),
            Value::Bool(_) => true,
            _ => false,
        },
        Value::String(_) => v.is_string(),
        Value::Array(_) => v.is_array(),
        Value::Object(_) => v.is_object(),
    }
}

/// A Python number (bool excluded, as RAGFlow's `is_number` does).
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

fn number(v: &Value) -> Option<Num> {
    let Value::Number(n) = v else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        Some(Num::Int(i128::from(i)))
    } else if let Some(u) = n.as_u64() {
        Some(Num::Int(i128::from(u)))
    } else {
        n.as_f64().map(Num::Float)
    }
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    fn is_zero(self) -> bool {
        match self {
            Num::Int(i) => i == 0,
            Num::Float(f) => f == 0.0,
        }
    }
}

/// A Python int as JSON. Python ints are unbounded; past u64 the nearest float is the
/// best a JSON number can hold.
fn int_value(i: i128) -> Value {
    if let Ok(v) = i64::try_from(i) {
        Value::Number(Number::from(v))
    } else if let Ok(v) = u64::try_from(i) {
        Value::Number(Number::from(v))
    } else {
        float_value(i as f64)
    }
}

/// `+=`, `-=`, `*=`, `/=` with Python's rules: int op int stays int except `/`, which
/// always gives a float; any float operand gives a float.
fn arithmetic(current: &Value, op: &str, parameter: &Value) -> Value {
    let (Some(a), Some(b)) = (number(current), number(parameter)) else {
        return error_value(NOT_NUMBER);
    };
    if op == "/=" {
        if b.is_zero() {
            return error_value(DIVIDE_BY_ZERO);
        }
        return float_value(a.as_f64() / b.as_f64());
    }
    if let (Num::Int(x), Num::Int(y)) = (a, b) {
        let exact = match op {
            "+=" => x.checked_add(y),
            "-=" => x.checked_sub(y),
            _ => x.checked_mul(y),
        };
        if let Some(r) = exact {
            return int_value(r);
        }
    }
    let (x, y) = (a.as_f64(), b.as_f64());
    float_value(match op {
        "+=" => x + y,
        "-=" => x - y,
        _ => x * y,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;
    use serde_json::json;

    const ID: &str = "VariableAssigner:X";

    /// A harness whose assigner applies `items`, with `sys.query = "hello"` and the
    /// given `env.*` globals.
    fn harness(items: Value, env: Value) -> Harness {
        let mut globals = json!({"sys.query": "hello"});
        if let (Some(g), Value::Object(env)) = (globals.as_object_mut(), env) {
            g.extend(env);
        }
        Harness::single(
            &crate::Registry,
            ID,
            "VariableAssigner",
            json!({ "variables": items }),
            globals,
        )
    }

    /// Apply one operation to `env.v` holding `start`; returns the new value.
    fn op_on(start: Value, operator: &str, parameter: Value) -> Value {
        let h = harness(
            json!([{"variable": "env.v", "operator": operator, "parameter": parameter}]),
            json!({"env.v": start}),
        );
        h.invoke(ID).unwrap();
        global(&h, "env.v")
    }

    fn global(h: &Harness, name: &str) -> Value {
        h.state().globals.get(name).cloned().unwrap()
    }

    fn is_int(v: &Value) -> bool {
        matches!(v, Value::Number(n) if !n.is_f64())
    }

    fn is_float(v: &Value) -> bool {
        matches!(v, Value::Number(n) if n.is_f64())
    }

    fn fails_with(h: &Harness, text: &str) {
        assert_eq!(h.invoke(ID), Err(ComponentError::Failed(text.to_string())));
    }

    #[test]
    fn thoughts_text() {
        let h = Harness::single(
            &crate::Registry,
            ID,
            "VariableAssigner",
            json!({}),
            json!({}),
        );
        assert_eq!(h.thoughts(ID), "Updating variables.");
    }

    /// `conformance/cases/03_vars`: the whole operation list and its recorded results.
    #[test]
    fn conformance_03_vars_sequence() {
        let h = harness(
            json!([
                {"variable": "env.count", "operator": "+=", "parameter": 5},
                {"variable": "env.count", "operator": "*=", "parameter": 3},
                {"variable": "env.ratio", "operator": "/=", "parameter": 4},
                {"variable": "env.items", "operator": "append", "parameter": "env.extra"},
                {"variable": "env.items", "operator": "extend", "parameter": "env.more"},
                {"variable": "env.items", "operator": "remove_first"},
                {"variable": "env.name", "operator": "set", "parameter": "Hello {sys.query}!"},
                {"variable": "env.copy", "operator": "overwrite", "parameter": "env.items"},
                {"variable": "env.flag", "operator": "clear"},
                {"variable": "env.bad", "operator": "+=", "parameter": 1}
            ]),
            json!({"env.count": 1, "env.ratio": 10, "env.items": [1, 2], "env.extra": 3,
                   "env.more": [4, 5], "env.name": "", "env.copy": [], "env.flag": "on",
                   "env.bad": "x"}),
        );
        h.set_global("sys.query", json!("Bob"));
        h.invoke(ID).unwrap();
        let count = global(&h, "env.count");
        assert_eq!(count, json!(18));
        assert!(is_int(&count), "1 += 5 then *= 3 stays an int");
        let ratio = global(&h, "env.ratio");
        assert_eq!(ratio, json!(2.5));
        assert!(is_float(&ratio));
        assert_eq!(global(&h, "env.items"), json!([2, 3, 4, 5]));
        assert_eq!(global(&h, "env.name"), json!("HelloBob!"));
        assert_eq!(global(&h, "env.copy"), json!([2, 3, 4, 5]));
        assert_eq!(global(&h, "env.flag"), json!(""));
        assert_eq!(global(&h, "env.bad"), json!(NOT_NUMBER));
        // node_finished.inputs is `{}`: nothing is recorded, no outputs of its own.
        let st = h.state();
        let node = st.nodes.get(ID).cloned().unwrap_or_default();
        assert!(node.inputs.is_empty());
        assert!(node.outputs.is_empty());
    }

    /// `conformance/cases/all_var_assigner`: reset from `env.zero`, then `+= 1`.
    #[test]
    fn conformance_counter_reset_then_increment() {
        let h = harness(
            json!([
                {"operator": "overwrite", "parameter": "env.zero", "variable": "env.counter"},
                {"operator": "+=", "parameter": 1, "variable": "env.counter"}
            ]),
            json!({"env.counter": 7, "env.zero": 0}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(global(&h, "env.counter"), json!(1));
    }

    /// §9 item 58, one case at a time.
    #[test]
    fn checklist_58_overwrite_literal_is_a_key_error() {
        let h = harness(
            json!([{"variable": "env.v", "operator": "overwrite", "parameter": "literal text"}]),
            json!({"env.v": "x"}),
        );
        fails_with(&h, "'literal text'");
        assert_eq!(global(&h, "env.v"), json!("x"));
    }

    #[test]
    fn checklist_58_set_renders_template_on_strings() {
        // Routine (b): the space before the reference is part of the match.
        assert_eq!(
            op_on(json!("old"), "set", json!("hi {sys.query}!")),
            json!("hihello!")
        );
    }

    #[test]
    fn checklist_58_set_on_number_keeps_raw_parameter() {
        assert_eq!(op_on(json!(3), "set", json!("7")), json!("7"));
    }

    #[test]
    fn checklist_58_append_wrong_element_type() {
        let h = harness(
            json!([{"variable": "env.v", "operator": "append", "parameter": "begin@p"}]),
            json!({"env.v": [1]}),
        );
        h.set_output("begin", "p", json!([9]));
        h.invoke(ID).unwrap();
        assert_eq!(global(&h, "env.v"), json!(NOT_ELEMENT_TYPE));
    }

    #[test]
    fn checklist_58_append_to_none_starts_a_list() {
        assert_eq!(
            op_on(Value::Null, "append", json!("sys.query")),
            json!(["hello"])
        );
    }

    #[test]
    fn checklist_58_remove_last_on_none() {
        assert_eq!(
            op_on(Value::Null, "remove_last", Value::Null),
            json!(NOT_LIST)
        );
    }

    #[test]
    fn checklist_58_add_string_parameter() {
        assert_eq!(op_on(json!(1), "+=", json!("2")), json!(NOT_NUMBER));
    }

    #[test]
    fn checklist_58_divide_by_zero() {
        assert_eq!(op_on(json!(5), "/=", json!(0)), json!(DIVIDE_BY_ZERO));
    }

    #[test]
    fn checklist_58_float_times_int_is_float() {
        let v = op_on(json!(5.5), "*=", json!(2));
        assert_eq!(v, json!(11.0));
        assert!(is_float(&v));
    }

    #[test]
    fn checklist_58_clear_true() {
        assert_eq!(op_on(json!(true), "clear", Value::Null), json!(false));
    }

    #[test]
    fn checklist_58_unknown_operator_assigns_none() {
        assert_eq!(op_on(json!(5), "**=", json!(2)), Value::Null);
    }

    #[test]
    fn checklist_58_null_parameter_is_incomplete() {
        let h = harness(
            json!([{"variable": "env.v", "operator": "+=", "parameter": null}]),
            json!({"env.v": 1}),
        );
        fails_with(&h, INCOMPLETE);
        assert_eq!(global(&h, "env.v"), json!(1));
    }

    /// §9 item 59.
    #[test]
    fn checklist_59_dotted_path_creates_dicts() {
        let h = harness(
            json!([{"variable": "begin@obj.a.b", "operator": "set", "parameter": "v"}]),
            json!({}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(h.output("begin", "obj"), json!({"a": {"b": "v"}}));
    }

    #[test]
    fn checklist_59_env_counter_increments() {
        let h = harness(
            json!([{"variable": "env.cnt", "operator": "+=", "parameter": 1}]),
            json!({"env.cnt": 1}),
        );
        h.invoke(ID).unwrap();
        let v = global(&h, "env.cnt");
        assert_eq!(v, json!(2));
        assert!(is_int(&v));
    }

    #[test]
    fn overwrite_resolves_references() {
        let h = harness(
            json!([
                {"variable": "env.v", "operator": "overwrite", "parameter": "begin@obj.a.1"},
                {"variable": "env.w", "operator": "overwrite", "parameter": "{sys.query}"},
                {"variable": "begin@copy", "operator": "overwrite", "parameter": "begin@obj"}
            ]),
            json!({"env.v": "", "env.w": 0}),
        );
        h.set_output("begin", "obj", json!({"a": [10, 20]}));
        h.invoke(ID).unwrap();
        assert_eq!(global(&h, "env.v"), json!(20));
        assert_eq!(global(&h, "env.w"), json!("hello"));
        assert_eq!(h.output("begin", "copy"), json!({"a": [10, 20]}));
    }

    #[test]
    fn overwrite_with_missing_output_gives_empty_string() {
        // A component output never set reads as "" (not an error).
        assert_eq!(op_on(json!(3), "overwrite", json!("begin@nope")), json!(""));
    }

    #[test]
    fn clear_by_type() {
        assert_eq!(op_on(json!([1, 2]), "clear", Value::Null), json!([]));
        assert_eq!(op_on(json!("abc"), "clear", Value::Null), json!(""));
        assert_eq!(op_on(json!({"k": 1}), "clear", Value::Null), json!({}));
        assert_eq!(op_on(json!(false), "clear", Value::Null), json!(false));
        let i = op_on(json!(42), "clear", Value::Null);
        assert_eq!(i, json!(0));
        assert!(is_int(&i));
        let f = op_on(json!(4.2), "clear", json!("ignored"));
        assert_eq!(f, json!(0.0));
        assert!(is_float(&f));
        assert_eq!(op_on(Value::Null, "clear", Value::Null), Value::Null);
    }

    #[test]
    fn set_on_none_renders_template_and_json() {
        let h = harness(
            json!([{"variable": "env.v", "operator": "set", "parameter": "o={begin@obj} n={begin@none}."}]),
            json!({"env.v": null}),
        );
        h.set_output("begin", "obj", json!({"a": [1, "é"]}));
        h.set_output("begin", "none", Value::Null);
        h.invoke(ID).unwrap();
        // The match eats the spaces after the reference; None renders as "".
        assert_eq!(global(&h, "env.v"), json!(r#"o={"a": [1, "é"]}n=."#));
    }

    #[test]
    fn set_on_non_strings_keeps_raw_parameter() {
        assert_eq!(
            op_on(json!(true), "set", json!("{sys.query}")),
            json!("{sys.query}")
        );
        assert_eq!(op_on(json!(1.5), "set", json!(2)), json!(2));
        assert_eq!(op_on(json!([1]), "set", json!([2, 3])), json!([2, 3]));
        assert_eq!(
            op_on(json!({"a": 1}), "set", json!({"b": 2})),
            json!({"b": 2})
        );
        // An empty string is a valid parameter.
        assert_eq!(op_on(json!("abc"), "set", json!("")), json!(""));
    }

    #[test]
    fn set_with_non_string_parameter_on_string_fails() {
        let h = harness(
            json!([{"variable": "env.v", "operator": "set", "parameter": 5}]),
            json!({"env.v": "abc"}),
        );
        fails_with(&h, "expected string or bytes-like object, got 'int'");
    }

    #[test]
    fn append_same_type_and_python_isinstance_rules() {
        let run = |start: Value, item: Value| {
            let h = harness(
                json!([{"variable": "env.v", "operator": "append", "parameter": "begin@p"}]),
                json!({"env.v": start}),
            );
            h.set_output("begin", "p", item);
            h.invoke(ID).unwrap();
            global(&h, "env.v")
        };
        assert_eq!(run(json!(["a"]), json!("b")), json!(["a", "b"]));
        assert_eq!(run(json!([]), json!({"k": 1})), json!([{"k": 1}]));
        assert_eq!(
            run(json!([{"x": 1}]), json!({"k": 1})),
            json!([{"x": 1}, {"k": 1}])
        );
        assert_eq!(run(json!([[1]]), json!([2])), json!([[1], [2]]));
        assert_eq!(run(json!([null]), json!(null)), json!([null, null]));
        // A bool is an int in Python; an int is not a bool nor a float.
        assert_eq!(run(json!([1]), json!(true)), json!([1, true]));
        assert_eq!(run(json!([true]), json!(1)), json!(NOT_ELEMENT_TYPE));
        assert_eq!(run(json!([1.5]), json!(2)), json!(NOT_ELEMENT_TYPE));
        assert_eq!(run(json!([1]), json!(2.5)), json!(NOT_ELEMENT_TYPE));
        assert_eq!(run(json!([1.5]), json!(2.5)), json!([1.5, 2.5]));
        assert_eq!(run(json!(["a"]), json!(1)), json!(NOT_ELEMENT_TYPE));
        assert_eq!(run(json!("text"), json!("b")), json!(NOT_LIST));
        assert_eq!(run(json!({"k": 1}), json!("b")), json!(NOT_LIST));
    }

    #[test]
    fn append_resolves_the_parameter_before_checking_the_variable() {
        let h = harness(
            json!([{"variable": "env.v", "operator": "append", "parameter": "env.nope"}]),
            json!({"env.v": "not a list"}),
        );
        fails_with(&h, "'env.nope'");
    }

    #[test]
    fn extend_rules() {
        let run = |start: Value, more: Value| {
            let h = harness(
                json!([{"variable": "env.v", "operator": "extend", "parameter": "begin@p"}]),
                json!({"env.v": start}),
            );
            h.set_output("begin", "p", more);
            h.invoke(ID).unwrap();
            global(&h, "env.v")
        };
        assert_eq!(run(json!([1]), json!([2, 3])), json!([1, 2, 3]));
        assert_eq!(run(Value::Null, json!(["a"])), json!(["a"]));
        assert_eq!(run(json!([]), json!(["a"])), json!(["a"]));
        assert_eq!(run(json!([1]), json!([])), json!([1]));
        // Only the first elements are compared.
        assert_eq!(
            run(json!([1, "x"]), json!([2, "y"])),
            json!([1, "x", 2, "y"])
        );
        assert_eq!(run(json!([1]), json!(["a"])), json!(NOT_ELEMENT_TYPE));
        assert_eq!(run(json!([1]), json!([false])), json!([1, false]));
        assert_eq!(run(json!("abc"), json!([1])), json!(NOT_LIST));
        assert_eq!(run(json!([1]), json!(2)), json!(PARAM_NOT_LIST));
        assert_eq!(run(Value::Null, json!("abc")), json!(PARAM_NOT_LIST));
    }

    #[test]
    fn remove_first_and_last() {
        assert_eq!(
            op_on(json!([1, 2, 3]), "remove_first", Value::Null),
            json!([2, 3])
        );
        assert_eq!(
            op_on(json!([1, 2, 3]), "remove_last", Value::Null),
            json!([1, 2])
        );
        assert_eq!(op_on(json!([]), "remove_first", Value::Null), json!([]));
        assert_eq!(op_on(json!([]), "remove_last", Value::Null), json!([]));
        assert_eq!(
            op_on(json!("abc"), "remove_first", Value::Null),
            json!(NOT_LIST)
        );
        assert_eq!(
            op_on(Value::Null, "remove_first", Value::Null),
            json!(NOT_LIST)
        );
        assert_eq!(
            op_on(json!({"a": 1}), "remove_last", Value::Null),
            json!(NOT_LIST)
        );
        // A parameter, when given, is ignored.
        assert_eq!(op_on(json!([1, 2]), "remove_last", json!("x")), json!([1]));
    }

    #[test]
    fn arithmetic_keeps_python_int_and_float_types() {
        let cases = [
            (json!(1), "+=", json!(5), json!(6), true),
            (json!(1), "-=", json!(5), json!(-4), true),
            (json!(4), "*=", json!(3), json!(12), true),
            (json!(1), "+=", json!(0.5), json!(1.5), false),
            (json!(1.5), "-=", json!(1), json!(0.5), false),
            (json!(2), "*=", json!(1.5), json!(3.0), false),
            (json!(10), "/=", json!(4), json!(2.5), false),
            (json!(6), "/=", json!(3), json!(2.0), false),
            (json!(7.5), "/=", json!(2.5), json!(3.0), false),
            (json!(1), "+=", json!(0), json!(1), true),
        ];
        for (start, op, param, want, int) in cases {
            let got = op_on(start.clone(), op, param.clone());
            assert_eq!(got, want, "{start} {op} {param}");
            assert_eq!(is_int(&got), int, "{start} {op} {param} int-ness");
            assert_eq!(is_float(&got), !int, "{start} {op} {param} float-ness");
        }
    }

    #[test]
    fn arithmetic_rejects_non_numbers_and_bools() {
        for (start, param) in [
            (json!(1), json!("2")),
            (json!("1"), json!(2)),
            (json!(true), json!(1)),
            (json!(1), json!(true)),
            (Value::Null, json!(1)),
            (json!([1]), json!(1)),
        ] {
            for op in ["+=", "-=", "*=", "/="] {
                assert_eq!(
                    op_on(start.clone(), op, param.clone()),
                    json!(NOT_NUMBER),
                    "{start} {op} {param}"
                );
            }
        }
        // The number check comes before the zero check.
        assert_eq!(op_on(json!("x"), "/=", json!(0)), json!(NOT_NUMBER));
        assert_eq!(op_on(json!(3), "/=", json!(0.0)), json!(DIVIDE_BY_ZERO));
        // `+=` uses the parameter raw: a reference is not resolved.
        assert_eq!(op_on(json!(1), "+=", json!("env.v")), json!(NOT_NUMBER));
    }

    #[test]
    fn arithmetic_on_huge_ints_does_not_panic() {
        let v = op_on(json!(i64::MAX), "+=", json!(1));
        assert_eq!(v, json!(9223372036854775808u64));
        let v = op_on(json!(u64::MAX), "*=", json!(u64::MAX));
        assert!(is_float(&v));
        let v = op_on(json!(i64::MIN), "-=", json!(i64::MAX));
        assert!(is_float(&v));
    }

    #[test]
    fn component_outputs_are_assigned() {
        let h = harness(
            json!([
                {"variable": "begin@n", "operator": "+=", "parameter": 2},
                {"variable": "begin@l", "operator": "append", "parameter": "begin@n"}
            ]),
            json!({}),
        );
        h.set_output("begin", "n", json!(1));
        h.set_output("begin", "l", json!([]));
        h.invoke(ID).unwrap();
        assert_eq!(h.output("begin", "n"), json!(3));
        assert_eq!(h.output("begin", "l"), json!([3]));
    }

    #[test]
    fn incomplete_items_fail_after_earlier_items_applied() {
        for bad in [
            json!({"operator": "+=", "parameter": 1}),
            json!({"variable": "", "operator": "+=", "parameter": 1}),
            json!({"variable": "env.v", "parameter": 1}),
            json!({"variable": "env.v", "operator": "", "parameter": 1}),
            json!({"variable": "env.v", "operator": "set"}),
            json!({"variable": "env.v", "operator": "overwrite", "parameter": null}),
            // Unknown operators still need a parameter.
            json!({"variable": "env.v", "operator": "nope"}),
        ] {
            let h = harness(
                json!([{"variable": "env.v", "operator": "+=", "parameter": 1}, bad, {"variable": "env.v", "operator": "+=", "parameter": 100}]),
                json!({"env.v": 1}),
            );
            fails_with(&h, INCOMPLETE);
            assert_eq!(
                global(&h, "env.v"),
                json!(2),
                "first item applied, third not"
            );
        }
    }

    #[test]
    fn parameterless_operators_accept_missing_parameter() {
        let h = harness(
            json!([
                {"variable": "env.a", "operator": "clear"},
                {"variable": "env.b", "operator": "remove_first", "parameter": null},
                {"variable": "env.c", "operator": "remove_last"}
            ]),
            json!({"env.a": "x", "env.b": [1, 2], "env.c": [1, 2]}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(global(&h, "env.a"), json!(""));
        assert_eq!(global(&h, "env.b"), json!([2]));
        assert_eq!(global(&h, "env.c"), json!([1]));
    }

    #[test]
    fn unknown_references_fail_like_python() {
        let h = harness(
            json!([{"variable": "env.nope", "operator": "+=", "parameter": 1}]),
            json!({}),
        );
        fails_with(&h, "'env.nope'");
        let h = harness(
            json!([{"variable": "Nope:X@y", "operator": "clear"}]),
            json!({}),
        );
        fails_with(&h, "Can't find variable: 'Nope:X@y'");
        let h = harness(
            json!([{"variable": "env.v", "operator": "set", "parameter": "a {env.nope} b"}]),
            json!({"env.v": ""}),
        );
        fails_with(&h, "'env.nope'");
    }

    #[test]
    fn malformed_items_fail_like_python() {
        let h = harness(json!(["env.v"]), json!({"env.v": 1}));
        fails_with(&h, "'str' object has no attribute 'get'");
        let h = harness(json!([null]), json!({}));
        fails_with(&h, "'NoneType' object has no attribute 'get'");
        let h = harness(json!([{"variable": 5, "operator": "clear"}]), json!({}));
        fails_with(&h, "'int' object has no attribute 'strip'");
        let h = harness(
            json!([{"variable": "env.v", "operator": "overwrite", "parameter": 0}]),
            json!({"env.v": 1}),
        );
        fails_with(&h, "'int' object has no attribute 'strip'");
        let h = harness(
            json!([{"variable": "env.v", "operator": "extend", "parameter": ["env.w"]}]),
            json!({"env.v": []}),
        );
        fails_with(&h, "'list' object has no attribute 'strip'");
        // A non-string operator matches nothing: the variable becomes None.
        let h = harness(
            json!([{"variable": "env.v", "operator": 1, "parameter": 2}]),
            json!({"env.v": 1}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(global(&h, "env.v"), Value::Null);
    }

    #[test]
    fn non_list_variables_is_a_no_op() {
        for params in [
            json!({"variables": {"variable": "env.v"}}),
            json!({}),
            json!({"variables": null}),
        ] {
            let h = Harness::single(
                &crate::Registry,
                ID,
                "VariableAssigner",
                params,
                json!({"env.v": 1}),
            );
            h.invoke(ID).unwrap();
            assert_eq!(global(&h, "env.v"), json!(1));
        }
    }
}
