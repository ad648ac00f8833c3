//! DataOperations: reshape the objects found behind a list of selectors — select, parse
//! literals, combine, filter, update, remove or rename keys (`engine.md` §7.9).
//!
//! Results keep Python's dict order (insertion order; a renamed key moves to the end, an
//! updated one stays where it was). Unlike RAGFlow, `combine` never mutates its inputs.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::borrow::Cow;

use super::list_operations::{MAX_DEPTH, no_attribute};
use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx};
use canvas_pyrt::py_type_name;
use canvas_pyrt::{Object, literal_eval, py_str, py_strip, truthy};

/// The operations RAGFlow's `check()` accepts.
const OPERATIONS: [&str; 7] = [
    "select_keys",
    "literal_eval",
    "combine",
    "filter_values",
    "append_or_update",
    "remove_keys",
    "rename_keys",
];

/// Build a DataOperations; `operations` must be one of the seven (default
/// `literal_eval`).
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let op = params
        .get("operations")
        .cloned()
        .unwrap_or_else(|| json!("literal_eval"));
    let op = match op.as_str() {
        Some("select_keys") => Op::SelectKeys,
        Some("literal_eval") => Op::LiteralEval,
        Some("combine") => Op::Combine,
        Some("filter_values") => Op::FilterValues,
        Some("append_or_update") => Op::AppendOrUpdate,
        Some("remove_keys") => Op::RemoveKeys,
        Some("rename_keys") => Op::RenameKeys,
        _ => {
            return Err(BuildError::Params(format!(
                "[DataOperations] Support operations {} is not supported, it should be in {}",
                py_str(&op),
                py_str(&json!(OPERATIONS))
            )));
        }
    };
    let get = |k: &str| params.get(k).cloned().unwrap_or_else(|| json!([]));
    Ok(Box::new(DataOperations {
        // A missing `query` is RAGFlow's default `[]`; any other non-list is wrapped.
        query: match params.get("query") {
            None => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(other) => vec![other.clone()],
        },
        op,
        select_keys: get("select_keys"),
        filter_values: get("filter_values"),
        updates: get("updates"),
        remove_keys: get("remove_keys"),
        rename_keys: get("rename_keys"),
    }))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    SelectKeys,
    LiteralEval,
    Combine,
    FilterValues,
    AppendOrUpdate,
    RemoveKeys,
    RenameKeys,
}

/// The DataOperations component. Parameters are kept as written: RAGFlow reads them
/// with Python semantics at run time, errors included.
pub struct DataOperations {
    query: Vec<Value>,
    op: Op,
    select_keys: Value,
    filter_values: Value,
    updates: Value,
    remove_keys: Value,
    rename_keys: Value,
}

#[async_trait]
impl Component for DataOperations {
    fn instant(&self) -> bool {
        true
    }

    fn default_outputs(&self) -> &'static [&'static str] {
        &["result"]
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "DataOperation in progress".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let objects = self.input_objects(cx)?;
        let result = match self.op {
            Op::SelectKeys => self.select_keys(objects)?,
            Op::LiteralEval => recursive_eval(&Value::Array(objects), 0)?,
            Op::Combine => combine(objects),
            Op::FilterValues => self.filter_values(cx, objects)?,
            Op::AppendOrUpdate => self.append_or_update(cx, objects)?,
            Op::RemoveKeys => self.remove_keys(objects)?,
            Op::RenameKeys => self.rename_keys(objects)?,
        };
        cx.set_output("result", result);
        Ok(())
    }
}

impl DataOperations {
    /// Resolve every selector (recorded as an input): dicts are kept, lists contribute
    /// their dict items, anything else is skipped.
    fn input_objects(&self, cx: &NodeCx<'_>) -> CResult<Vec<Value>> {
        let mut objects = Vec::new();
        for selector in &self.query {
            let Value::String(s) = selector else {
                return Err(no_attribute(selector, "strip"));
            };
            let v = cx.resolve(s)?;
            cx.set_input(s, v.clone());
            match v {
                Value::Object(_) => objects.push(v),
                Value::Array(items) => objects.extend(items.into_iter().filter(Value::is_object)),
                _ => {}
            }
        }
        Ok(objects)
    }

    /// Each object reduced to the keys listed in `select_keys` (in the object's order).
    fn select_keys(&self, objects: Vec<Value>) -> CResult<Value> {
        let mut out = Vec::with_capacity(objects.len());
        for obj in objects.into_iter().filter_map(into_object) {
            let mut kept = Object::new();
            for (k, v) in obj {
                if py_contains(&self.select_keys, &k)? {
                    kept.insert(k, v);
                }
            }
            out.push(Value::Object(kept));
        }
        Ok(Value::Array(out))
    }

    /// Objects matching every rule; no rules keep all.
    fn filter_values(&self, cx: &NodeCx<'_>, objects: Vec<Value>) -> CResult<Value> {
        let rules = py_iter(&self.filter_values)?;
        let mut out = Vec::new();
        for obj in objects {
            let Value::Object(o) = &obj else { continue };
            let mut keep = true;
            // `all(...)`: rules after the first mismatch are not evaluated.
            for rule in &rules {
                if !match_rule(cx, o, rule)? {
                    keep = false;
                    break;
                }
            }
            if keep {
                out.push(obj);
            }
        }
        Ok(Value::Array(out))
    }

    /// A copy of each object with `updates` applied; values are templated.
    fn append_or_update(&self, cx: &NodeCx<'_>, objects: Vec<Value>) -> CResult<Value> {
        let updates = py_iter(&self.updates)?;
        let mut out = Vec::with_capacity(objects.len());
        for mut obj in objects.into_iter().filter_map(into_object) {
            for item in &updates {
                let Value::Object(item) = item else { continue };
                let key = stripped_param(item.get("key"))?;
                if key.is_empty() {
                    continue;
                }
                let raw = item.get("value").unwrap_or(&Value::Null);
                let Value::String(text) = raw else {
                    return Err(ComponentError::Failed(format!(
                        "expected string or bytes-like object, got '{}'",
                        py_type_name(raw)
                    )));
                };
                let rendered = cx.value_with_variable(text)?;
                let v = if rendered.is_empty() {
                    text.clone()
                } else {
                    rendered
                };
                obj.insert(key, Value::String(v));
            }
            out.push(Value::Object(obj));
        }
        Ok(Value::Array(out))
    }

    /// A copy of each object without the listed string keys.
    fn remove_keys(&self, objects: Vec<Value>) -> CResult<Value> {
        let keys = py_iter(&self.remove_keys)?;
        let out = objects
            .into_iter()
            .filter_map(into_object)
            .map(|mut obj| {
                for k in keys.iter().filter_map(Value::as_str) {
                    obj.shift_remove(k);
                }
                Value::Object(obj)
            })
            .collect();
        Ok(Value::Array(out))
    }

    /// A copy of each object with `old_key` moved to `new_key` (appended at the end, or
    /// overwriting an existing `new_key` in its place).
    fn rename_keys(&self, objects: Vec<Value>) -> CResult<Value> {
        let pairs = py_iter(&self.rename_keys)?;
        let mut out = Vec::with_capacity(objects.len());
        for mut obj in objects.into_iter().filter_map(into_object) {
            for pair in &pairs {
                let Value::Object(pair) = pair else { continue };
                let old = stripped_param(pair.get("old_key"))?;
                let new = stripped_param(pair.get("new_key"))?;
                if old.is_empty() || new.is_empty() || old == new {
                    continue;
                }
                if let Some(v) = obj.shift_remove(&old) {
                    obj.insert(new, v);
                }
            }
            out.push(Value::Object(obj));
        }
        Ok(Value::Array(out))
    }
}

fn into_object(v: Value) -> Option<Object> {
    match v {
        Value::Object(o) => Some(o),
        _ => None,
    }
}

/// `combine`: one dict; a repeated key collects its values in a list (list values are
/// spliced in). Works on copies: RAGFlow extends the first object's lists in place.
fn combine(objects: Vec<Value>) -> Value {
    let mut result = Object::new();
    for obj in objects.into_iter().filter_map(into_object) {
        for (k, v) in obj {
            match result.get_mut(&k) {
                None => {
                    result.insert(k, v);
                }
                Some(Value::Array(acc)) => match v {
                    Value::Array(more) => acc.extend(more),
                    other => acc.push(other),
                },
                Some(prev) => {
                    let mut list = vec![prev.take()];
                    match v {
                        Value::Array(more) => list.extend(more),
                        other => list.push(other),
                    }
                    *prev = Value::Array(list);
                }
            }
        }
    }
    Value::Object(result)
}

/// `match_rule`: `str(obj[key])` against the templated `str(value)`.
fn match_rule(cx: &NodeCx<'_>, obj: &Object, rule: &Value) -> CResult<bool> {
    let Value::Object(rule) = rule else {
        return Err(no_attribute(rule, "get"));
    };
    let op = match rule.get("operator") {
        Some(v) if truthy(v) => match v {
            Value::String(s) => s.to_lowercase(),
            other => return Err(no_attribute(other, "lower")),
        },
        _ => "equals".to_string(),
    };
    let target = match rule.get("value") {
        None | Some(Value::Null) => String::new(),
        Some(v) => py_str(v),
    };
    // Templated for every object, before the key check (a bad reference fails even
    // when the object lacks the key).
    let rendered = cx.value_with_variable(&target)?;
    let target = if rendered.is_empty() {
        target
    } else {
        rendered
    };
    let value = match rule.get("key") {
        Some(Value::String(k)) => obj.get(k),
        Some(v @ (Value::Array(_) | Value::Object(_))) => {
            return Err(ComponentError::Failed(format!(
                "unhashable type: '{}'",
                py_type_name(v)
            )));
        }
        // Non-string keys are never in a dict parsed from JSON.
        _ => None,
    };
    let Some(value) = value else {
        return Ok(false);
    };
    let v = match value {
        Value::Null => String::new(),
        other => py_str(other),
    };
    Ok(match op.as_str() {
        "=" => v == target,
        "≠" => v != target,
        "contains" => v.contains(&target),
        "start with" => v.starts_with(&target),
        "end with" => v.ends_with(&target),
        _ => false,
    })
}

/// `(param or "").strip()` for `key`, `old_key` and `new_key`.
fn stripped_param(v: Option<&Value>) -> CResult<String> {
    match v {
        Some(Value::String(s)) => Ok(py_strip(s).to_string()),
        Some(v) if truthy(v) => Err(no_attribute(v, "strip")),
        _ => Ok(String::new()),
    }
}

/// `for x in (param or [])`: lists give their items, dicts their keys, strings their
/// characters; other truthy values are not iterable.
fn py_iter(v: &Value) -> CResult<Vec<Value>> {
    Ok(match v {
        v if !truthy(v) => Vec::new(),
        Value::Array(a) => a.clone(),
        Value::Object(o) => o.keys().map(|k| Value::String(k.clone())).collect(),
        Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
        other => {
            return Err(ComponentError::Failed(format!(
                "'{}' object is not iterable",
                py_type_name(other)
            )));
        }
    })
}

/// Python `key in container` for a string key.
fn py_contains(container: &Value, key: &str) -> CResult<bool> {
    match container {
        Value::Array(a) => Ok(a.iter().any(|x| x.as_str() == Some(key))),
        Value::Object(o) => Ok(o.contains_key(key)),
        Value::String(s) => Ok(s.contains(key)),
        other => Err(ComponentError::Failed(format!(
            "argument of type '{}' is not iterable",
            py_type_name(other)
        ))),
    }
}

// ---------------------------------------------------------------------------------------
// literal_eval

/// `_recursive_eval`: strings that look like Python literals are parsed with
/// Python's `ast.literal_eval` (failures, and values without a JSON form, keep the string); containers are walked.
fn recursive_eval(v: &Value, depth: usize) -> CResult<Value> {
    if depth > MAX_DEPTH {
        return Err(ComponentError::Failed(
            "maximum recursion depth exceeded".into(),
        ));
    }
    Ok(match v {
        Value::Object(o) => {
            let mut out = Object::new();
            for (k, x) in o {
                out.insert(k.clone(), recursive_eval(x, depth + 1)?);
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| recursive_eval(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::String(s) if looks_literal(s) => literal_eval(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    })
}

/// The strings RAGFlow hands to `ast.literal_eval`: (stripped) starting with a bracket
/// or quote, `true`/`false`/`none` in any case, or digits once dots are removed.
fn looks_literal(s: &str) -> bool {
    let t = py_strip(s);
    if t.starts_with(['{', '[', '(', '\'', '"']) {
        return true;
    }
    if matches!(t.to_lowercase().as_str(), "true" | "false" | "none") {
        return true;
    }
    // Python's `isdigit` also accepts non-ASCII digits, but those never parse.
    let mut digits = t.chars().filter(|&c| c != '.').peekable();
    digits.peek().is_some() && digits.all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;

    const ID: &str = "DataOperations:X";

    /// A DataOperations with `params`, `begin` outputs set from `begin`, and
    /// `sys.query = "hello"`.
    fn harness(params: Value, begin: Value) -> Harness {
        let h = Harness::single(
            &crate::Registry,
            ID,
            "DataOperations",
            params,
            json!({"sys.query": "hello"}),
        );
        if let Value::Object(outs) = begin {
            for (k, v) in outs {
                h.set_output("begin", &k, v);
            }
        }
        h
    }

    fn result(params: Value, begin: Value) -> Value {
        let h = harness(params, begin);
        h.invoke(ID).unwrap();
        h.output(ID, "result")
    }

    fn error(params: Value, begin: Value) -> String {
        harness(params, begin).invoke(ID).unwrap_err().to_string()
    }

    /// One string through the `literal_eval` operation: parsed, or kept.
    fn eval(s: &str) -> Value {
        recursive_eval(&json!(s), 0).unwrap()
    }

    // engine.md §9 item 51.
    #[test]
    fn select_keys_keeps_listed_keys_of_every_object() {
        let begin = json!({"a": {"x": 1, "y": 2}, "b": [{"x": 3}, 5, {"y": 4}]});
        let p = json!({"query": ["begin@a", "begin@b"], "operations": "select_keys", "select_keys": ["x"]});
        assert_eq!(result(p, begin), json!([{"x": 1}, {"x": 3}, {}]));
    }

    #[test]
    fn select_keys_keeps_the_objects_order_and_uses_python_membership() {
        let begin = json!({"a": {"y": 1, "x": 2, "xy": 3}});
        let p =
            json!({"query": ["begin@a"], "operations": "select_keys", "select_keys": ["x", "y"]});
        assert_eq!(result(p, begin.clone()), json!([{"y": 1, "x": 2}]));
        // `key in "xy"` is a substring test.
        let p = json!({"query": ["begin@a"], "operations": "select_keys", "select_keys": "xy"});
        assert_eq!(result(p, begin.clone()), json!([{"y": 1, "x": 2, "xy": 3}]));
        let p = json!({"query": ["begin@a"], "operations": "select_keys", "select_keys": null});
        assert_eq!(
            error(p, begin),
            "argument of type 'NoneType' is not iterable"
        );
    }

    #[test]
    fn inputs_are_recorded_and_only_dicts_are_used() {
        let begin = json!({"a": {"k": 1}, "b": [{"k": 2}, "s", [3], null], "c": "text", "d": null});
        let p = json!({"query": ["begin@a", "begin@b", "begin@c", "begin@d"], "operations": "select_keys", "select_keys": ["k"]});
        let h = harness(p, begin);
        h.invoke(ID).unwrap();
        assert_eq!(h.output(ID, "result"), json!([{"k": 1}, {"k": 2}]));
        assert_eq!(h.input(ID, "begin@a"), json!({"k": 1}));
        assert_eq!(h.input(ID, "begin@c"), json!("text"));
        // A single selector is wrapped in a list.
        let p = json!({"query": "begin@a", "operations": "select_keys", "select_keys": ["k"]});
        assert_eq!(result(p, json!({"a": {"k": 1}})), json!([{"k": 1}]));
        // No query: nothing to combine.
        assert_eq!(
            result(json!({"operations": "combine"}), json!({})),
            json!({})
        );
    }

    #[test]
    fn bad_selectors_fail_like_python() {
        let p = json!({"query": ["Nope:X@out"], "operations": "combine"});
        assert_eq!(error(p, json!({})), "Can't find variable: 'Nope:X@out'");
        let p = json!({"query": ["env.missing"], "operations": "combine"});
        assert_eq!(error(p, json!({})), "'env.missing'");
        let p = json!({"query": [5], "operations": "combine"});
        assert_eq!(error(p, json!({})), "'int' object has no attribute 'strip'");
    }

    // engine.md §9 item 52.
    #[test]
    fn literal_eval_parses_python_literals_and_keeps_failures() {
        let obj = json!({"x": "1", "y": "[1, 2]", "z": "True", "w": "none", "v": "'q'",
            "u": "1.5", "t": "1.2.3", "s": "(1,2)", "r": "abc"});
        let p = json!({"query": ["begin@o"], "operations": "literal_eval"});
        assert_eq!(
            result(p, json!({"o": obj})),
            json!([{"x": 1, "y": [1, 2], "z": true, "w": "none", "v": "q",
                "u": 1.5, "t": "1.2.3", "s": [1, 2], "r": "abc"}])
        );
    }

    #[test]
    fn literal_eval_walks_nested_values_but_not_its_own_results() {
        let obj = json!({"a": ["1", {"b": "[1, '2']"}], "c": 5, "d": null, "e": "-5"});
        // `literal_eval` is the default operation.
        let p = json!({"query": "begin@o"});
        assert_eq!(
            result(p, json!({"o": obj})),
            json!([{"a": [1, {"b": [1, "2"]}], "c": 5, "d": null, "e": "-5"}])
        );
    }

    #[test]
    fn literal_eval_attempts_what_ragflow_attempts() {
        // Not attempted: no bracket/quote start, not true/false/none, not digits and dots.
        for s in ["-5", "0x1F", "1_000", "r'x'", "abc", "", "..."] {
            assert_eq!(eval(s), json!(s), "{s:?}");
        }
        assert_eq!(eval("007"), json!("007")); // leading zeros are a SyntaxError
        assert_eq!(eval("1."), json!(1.0));
        assert_eq!(eval(".5"), json!(0.5));
        assert_eq!(eval("12"), json!(12));
        assert_eq!(eval(" True "), json!(true));
        assert_eq!(eval("None"), Value::Null);
        assert_eq!(eval("TRUE"), json!("TRUE"));
        assert_eq!(eval(" [1, 'a'] "), json!([1, "a"]));
        // JSON is a Python literal only without true/false/null.
        assert_eq!(eval(r#"{"a": 1}"#), json!({"a": 1}));
        assert_eq!(eval(r#"{"a": true}"#), json!(r#"{"a": true}"#));
    }

    #[test]
    fn deep_input_fails_instead_of_overflowing() {
        let mut deep = json!("1");
        for _ in 0..(MAX_DEPTH + 10) {
            deep = json!([deep]);
        }
        assert!(recursive_eval(&deep, 0).is_err());
    }

    // engine.md §9 item 53.
    #[test]
    fn combine_merges_repeated_keys_into_lists_without_mutating_inputs() {
        let begin =
            json!({"p": {"x": 1, "l": [1]}, "q": {"x": 2, "l": 2}, "r": {"x": [3, 4], "y": 0}});
        let p = json!({"query": ["begin@p", "begin@q", "begin@r"], "operations": "combine"});
        let h = harness(p, begin);
        h.invoke(ID).unwrap();
        assert_eq!(
            h.output(ID, "result"),
            json!({"x": [1, 2, 3, 4], "l": [1, 2], "y": 0})
        );
        // RAGFlow would have extended `p.l` in place.
        assert_eq!(h.output("begin", "p"), json!({"x": 1, "l": [1]}));
    }

    // engine.md §9 item 54.
    #[test]
    fn filter_values_keeps_objects_matching_every_rule() {
        let begin = json!({"rows": [{"x": 1}, {"x": "1"}, {"x": 2}, {"y": 1}]});
        let p = |rules: Value| json!({"query": ["begin@rows"], "operations": "filter_values", "filter_values": rules});
        assert_eq!(
            result(
                p(json!([{"key": "x", "operator": "=", "value": "1"}])),
                begin.clone()
            ),
            json!([{"x": 1}, {"x": "1"}])
        );
        assert_eq!(
            result(p(json!([{"key": "x", "value": "1"}])), begin.clone()),
            json!([])
        );
        assert_eq!(result(p(json!([])), begin.clone()), begin["rows"]);
        assert_eq!(
            result(
                p(json!([{"key": "x", "operator": "≠", "value": 1}])),
                begin.clone()
            ),
            json!([{"x": 2}])
        );
        let both = json!([
            {"key": "x", "operator": "contains", "value": "1"},
            {"key": "x", "operator": "start with", "value": "1"}
        ]);
        assert_eq!(result(p(both), begin), json!([{"x": 1}, {"x": "1"}]));
        let words = json!({"rows": [{"w": "Hello"}, {"w": "hello!"}, {"w": 1.0}]});
        assert_eq!(
            result(
                p(json!([{"key": "w", "operator": "end with", "value": "!"}])),
                words.clone()
            ),
            json!([{"w": "hello!"}])
        );
        // Values are compared through `str()`.
        assert_eq!(
            result(
                p(json!([{"key": "w", "operator": "=", "value": "1.0"}])),
                words.clone()
            ),
            json!([{"w": 1.0}])
        );
        // The rule's value is templated; an empty result keeps the raw value.
        assert_eq!(
            result(
                p(json!([{"key": "w", "operator": "start with", "value": "{sys.query}"}])),
                words
            ),
            json!([{"w": "hello!"}])
        );
        let rows = json!({"rows": [{"w": "{begin@none}"}]});
        assert_eq!(
            result(
                p(json!([{"key": "w", "operator": "=", "value": "{begin@none}"}])),
                rows
            ),
            json!([{"w": "{begin@none}"}])
        );
    }

    #[test]
    fn filter_values_errors_follow_python_evaluation_order() {
        let begin = json!({"rows": [{"x": 1}]});
        let p = |rules: Value| json!({"query": ["begin@rows"], "operations": "filter_values", "filter_values": rules});
        // A bad reference fails even when the object lacks the key...
        assert_eq!(
            error(
                p(json!([{"key": "zz", "value": "{env.nope}"}])),
                begin.clone()
            ),
            "'env.nope'"
        );
        // ...but rules after the first mismatch are never evaluated.
        let rules = json!([{"key": "zz", "value": "a"}, {"key": "x", "value": "{env.nope}"}]);
        assert_eq!(result(p(rules), begin.clone()), json!([]));
        assert_eq!(
            error(p(json!(["x"])), begin.clone()),
            "'str' object has no attribute 'get'"
        );
        assert_eq!(
            error(p(json!(5)), begin.clone()),
            "'int' object is not iterable"
        );
        assert_eq!(
            error(p(json!([{"key": "x", "operator": 5}])), begin.clone()),
            "'int' object has no attribute 'lower'"
        );
        assert_eq!(
            error(p(json!([{"key": ["x"]}])), begin),
            "unhashable type: 'list'"
        );
    }

    // engine.md §9 item 55.
    #[test]
    fn append_or_update_sets_templated_values() {
        let begin = json!({"o": {"n": 0, "k": "v"}});
        let updates = json!([
            {"key": "q", "value": "{sys.query}!"}, {"key": " n ", "value": ""},
            {"key": "  ", "value": "skipped"}, "not a dict"
        ]);
        let p = json!({"query": ["begin@o"], "operations": "append_or_update", "updates": updates});
        // An updated key keeps its place; a new one is appended.
        assert_eq!(
            result(p, begin),
            json!([{"n": "", "k": "v", "q": "hello!"}])
        );
    }

    #[test]
    fn append_or_update_errors() {
        let begin = json!({"o": {"k": 1}});
        let p = |u: Value| json!({"query": ["begin@o"], "operations": "append_or_update", "updates": u});
        assert_eq!(
            error(p(json!([{"key": "a"}])), begin.clone()),
            "expected string or bytes-like object, got 'NoneType'"
        );
        assert_eq!(
            error(p(json!([{"key": 3, "value": "x"}])), begin.clone()),
            "'int' object has no attribute 'strip'"
        );
        assert_eq!(
            error(p(json!([{"key": "a", "value": "{env.nope}"}])), begin),
            "'env.nope'"
        );
    }

    // conformance/cases/all_fixed_data_ops (DataOperations:UpdateSample).
    #[test]
    fn recorded_update_sample() {
        let rows = json!([
            {"id": 2, "score": 0.88, "title": "Beta"}, {"id": 3, "score": 0.76, "title": "Gamma"}
        ]);
        let p = json!({"query": ["env.sample_rows"], "operations": "append_or_update",
            "updates": [{"key": "tag", "value": "demo"}]});
        let h = Harness::single(
            &crate::Registry,
            ID,
            "DataOperations",
            p,
            json!({"env.sample_rows": rows.clone()}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(
            h.output(ID, "result"),
            json!([
                {"id": 2, "score": 0.88, "title": "Beta", "tag": "demo"},
                {"id": 3, "score": 0.76, "title": "Gamma", "tag": "demo"}
            ])
        );
        assert_eq!(h.input(ID, "env.sample_rows"), rows);
    }

    #[test]
    fn remove_keys_drops_string_keys_and_keeps_order() {
        let begin = json!({"o": {"a": 1, "b": 2, "c": 3, "1": 4}});
        let p =
            |k: Value| json!({"query": ["begin@o"], "operations": "remove_keys", "remove_keys": k});
        assert_eq!(
            result(p(json!(["b", 1, "zz"])), begin.clone()),
            json!([{"a": 1, "c": 3, "1": 4}])
        );
        // A string is iterated character by character.
        assert_eq!(
            result(p(json!("ab")), begin.clone()),
            json!([{"c": 3, "1": 4}])
        );
        assert_eq!(
            error(p(json!(true)), begin),
            "'bool' object is not iterable"
        );
    }

    // conformance/cases/05_listdata (DataOperations:Select, then DataOperations:Rename).
    #[test]
    fn recorded_select_then_rename() {
        let rows = json!([
            {"id": 2, "score": 0.88, "title": "Beta", "tag": "x"},
            {"id": 1, "score": 0.91, "title": "Alpha", "tag": "x"}
        ]);
        let p = json!({"query": ["env.rows"], "operations": "select_keys", "select_keys": ["id", "title", "score"]});
        let h = Harness::single(
            &crate::Registry,
            ID,
            "DataOperations",
            p,
            json!({"env.rows": rows.clone()}),
        );
        h.invoke(ID).unwrap();
        let selected = h.output(ID, "result");
        assert_eq!(
            selected,
            json!([{"id": 2, "score": 0.88, "title": "Beta"}, {"id": 1, "score": 0.91, "title": "Alpha"}])
        );
        assert_eq!(h.input(ID, "env.rows"), rows);
        let p = json!({"query": ["begin@sel"], "operations": "rename_keys",
            "rename_keys": [{"old_key": "title", "new_key": "name"}]});
        assert_eq!(
            result(p, json!({"sel": selected})),
            json!([{"id": 2, "score": 0.88, "name": "Beta"}, {"id": 1, "score": 0.91, "name": "Alpha"}])
        );
    }

    #[test]
    fn rename_keys_edge_cases() {
        let begin = json!({"o": {"a": 1, "b": 2, "c": 3}});
        let p =
            |r: Value| json!({"query": ["begin@o"], "operations": "rename_keys", "rename_keys": r});
        // Onto an existing key: that key keeps its place and takes the value.
        assert_eq!(
            result(p(json!([{"old_key": "a", "new_key": "c"}])), begin.clone()),
            json!([{"b": 2, "c": 1}])
        );
        let skipped = json!([
            {"old_key": "a", "new_key": " a "}, {"old_key": "zz", "new_key": "y"},
            {"old_key": "", "new_key": "y"}, {"old_key": "b"}, "pair"
        ]);
        assert_eq!(
            result(p(skipped), begin.clone()),
            json!([{"a": 1, "b": 2, "c": 3}])
        );
        assert_eq!(
            error(p(json!([{"old_key": 1, "new_key": "y"}])), begin),
            "'int' object has no attribute 'strip'"
        );
    }

    #[test]
    fn build_checks_the_operation() {
        let err = |p: Value| match build(p.as_object().unwrap()) {
            Err(BuildError::Params(m)) => m,
            _ => panic!("expected a params error"),
        };
        assert_eq!(
            err(json!({"operations": "select keys"})),
            "[DataOperations] Support operations select keys is not supported, it should be in \
             ['select_keys', 'literal_eval', 'combine', 'filter_values', 'append_or_update', \
             'remove_keys', 'rename_keys']"
        );
        assert!(err(json!({"operations": null})).contains("operations None is not supported"));
        assert!(build(&Object::new()).is_ok());
    }

    #[test]
    fn declares_result_by_default() {
        let h = Harness::single(&crate::Registry, ID, "DataOperations", json!({}), json!({}));
        let names: Vec<String> = h.state().nodes[ID].outputs.keys().cloned().collect();
        assert_eq!(names, ["result"]);
    }
}
