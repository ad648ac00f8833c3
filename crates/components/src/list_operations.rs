//! ListOperations: pick, slice, filter, sort or de-duplicate the items of one list
//! (`engine.md` §7.10).
//!
//! Sorting follows CPython's `list.sort` step by step (timsort with powersort merging, as
//! in Python 3.11 and 3.12). Any stable sort gives the same order for values Python can
//! compare, but which pair is compared first decides the text of the `TypeError` a mixed
//! list raises, and that text is the component's error.

use std::borrow::Cow;
use std::collections::HashSet;

use async_trait::async_trait;
use serde_json::{Value, json};

use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx};
use canvas_pyrt::{
    CompareError, Object, PyKey as Key, PyNum, py_lt_key, py_num, py_str, py_strip, py_type_name,
    truthy,
};

/// The operations RAGFlow's `check()` accepts (after normalisation).
const OPERATIONS: [&str; 6] = ["nth", "head", "tail", "filter", "sort", "drop_duplicates"];

/// Nesting depth past which comparisons, canonical keys and the literal walk give up,
/// as Python's recursion limit (about 1000) would. Lower than Python's so that debug
/// builds stay well inside a 2 MiB thread stack; JSON input is at most 128 deep.
pub(crate) const MAX_DEPTH: usize = 400;

/// `None`, for keys of dicts that lack a `sort_by` key.
static NULL: Value = Value::Null;

/// Build a ListOperations; `query` must be non-empty and `operations` (stripped, `topN`
/// read as `head`, empty as `nth`) one of the six RAGFlow supports.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let query = params.get("query").cloned().unwrap_or_else(|| json!(""));
    if !truthy(&query) {
        return Err(BuildError::Params(
            "[ListOperations] query does not support empty value.".into(),
        ));
    }
    let op = normalize_operation(params.get("operations").unwrap_or(&json!("nth")));
    let op = match op.as_str() {
        "nth" => Op::Nth,
        "head" => Op::Head,
        "tail" => Op::Tail,
        "filter" => Op::Filter,
        "sort" => Op::Sort,
        "drop_duplicates" => Op::DropDuplicates,
        other => {
            return Err(BuildError::Params(format!(
                "[ListOperations] Support operations {other} is not supported, it should be in {}",
                py_str(&json!(OPERATIONS))
            )));
        }
    };
    let get = |k: &str, d: Value| params.get(k).cloned().unwrap_or(d);
    Ok(Box::new(ListOperations {
        query,
        op,
        n: get("n", json!(0)),
        strict: get("strict", json!(false)),
        sort_method: get("sort_method", json!("asc")),
        sort_by: get("sort_by", json!("")),
        filter: get("filter", json!({"operator": "=", "value": ""})),
    }))
}

/// `_normalize_operation_name`: `str()`, stripped; `topN` in any case is `head`.
fn normalize_operation(v: &Value) -> String {
    let op = match v {
        Value::Null => String::new(),
        other => py_strip(&py_str(other)).to_string(),
    };
    if op.to_lowercase() == "topn" {
        "head".into()
    } else if op.is_empty() {
        "nth".into()
    } else {
        op
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Nth,
    Head,
    Tail,
    Filter,
    Sort,
    DropDuplicates,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Nth => "nth",
            Op::Head => "head",
            Op::Tail => "tail",
            Op::Filter => "filter",
            Op::Sort => "sort",
            Op::DropDuplicates => "drop_duplicates",
        }
    }
}

/// The ListOperations component. Parameters are kept as written: RAGFlow reads them
/// with Python semantics at run time, errors included.
pub struct ListOperations {
    query: Value,
    op: Op,
    n: Value,
    strict: Value,
    sort_method: Value,
    sort_by: Value,
    filter: Value,
}

#[async_trait]
impl Component for ListOperations {
    fn instant(&self) -> bool {
        true
    }

    fn default_outputs(&self) -> &'static [&'static str] {
        &["result", "first", "last"]
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "ListOperation in progress".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let Value::String(selector) = &self.query else {
            return Err(no_attribute(&self.query, "strip"));
        };
        let Value::Array(items) = cx.resolve(selector)? else {
            return Err(failed("The input of List Operations should be an array."));
        };
        cx.set_input(selector, Value::Array(items.clone()));
        let result = self.apply(items).map_err(ComponentError::Failed)?;
        let first = result.first().cloned().unwrap_or(Value::Null);
        let last = result.last().cloned().unwrap_or(Value::Null);
        // RAGFlow writes `outputs[name]["value"]` directly: an output missing from the
        // DSL's `outputs` is a KeyError, raised after the earlier ones were written.
        let declared = &cx.node().declared_outputs;
        for (name, v) in [
            ("result", Value::Array(result)),
            ("first", first),
            ("last", last),
        ] {
            if !declared.iter().any(|d| d == name) {
                return Err(failed(&format!("'{name}'")));
            }
            cx.set_output(name, v);
        }
        Ok(())
    }
}

impl ListOperations {
    /// The operation on the resolved list; `Err` holds Python's exception text.
    fn apply(&self, items: Vec<Value>) -> Result<Vec<Value>, String> {
        match self.op {
            Op::Nth | Op::Head | Op::Tail => slice(
                self.op,
                items,
                py_int(&self.n).unwrap_or(0),
                self.is_strict(),
            ),
            Op::Filter => self.filter(items),
            Op::Sort => self.sort(items),
            Op::DropDuplicates => drop_duplicates(items),
        }
    }

    /// `_is_strict`: strings `1/true/yes/on` (any case), else Python truthiness.
    fn is_strict(&self) -> bool {
        match &self.strict {
            Value::String(s) => {
                matches!(
                    py_strip(s).to_lowercase().as_str(),
                    "1" | "true" | "yes" | "on"
                )
            }
            other => truthy(other),
        }
    }

    /// `_filter`: keep items whose `str()` passes the filter against the raw value.
    fn filter(&self, items: Vec<Value>) -> Result<Vec<Value>, String> {
        if items.is_empty() {
            return Ok(items);
        }
        // Python reads `filter["operator"]` then `filter["value"]` for every item; the
        // first item raises any lookup error.
        let operator = subscript(&self.filter, "operator")?;
        let value = subscript(&self.filter, "value")?;
        let mut out = Vec::new();
        for item in items {
            let text = match &item {
                Value::Null => String::new(),
                other => py_str(other),
            };
            if matches_filter(&text, operator, value)? {
                out.push(item);
            }
        }
        Ok(out)
    }

    /// `_sort`: natural order, or dict items by `sort_by` keys or by their canonical form.
    fn sort(&self, items: Vec<Value>) -> Result<Vec<Value>, String> {
        let Some(first) = items.first() else {
            return Ok(items);
        };
        let reverse = self.sort_method.as_str() == Some("desc");
        let keys: Vec<Key<'_>> = if first.is_object() {
            let raw = match &self.sort_by {
                v if !truthy(v) => "",
                Value::String(s) => s.as_str(),
                other => return Err(no_attribute_text(other, "split")),
            };
            let sort_by: Vec<&str> = raw
                .split(',')
                .map(py_strip)
                .filter(|k| !k.is_empty())
                .collect();
            if sort_by.is_empty() {
                items
                    .iter()
                    .map(|x| hashable(x, 0))
                    .collect::<Result<_, _>>()?
            } else {
                let mut keys = Vec::with_capacity(items.len());
                for x in &items {
                    let Value::Object(o) = x else {
                        return Err(no_attribute_text(x, "get"));
                    };
                    keys.push(Key::Tuple(
                        sort_by
                            .iter()
                            .map(|k| Key::Val(o.get(*k).unwrap_or(&NULL)))
                            .collect(),
                    ));
                }
                keys
            }
        } else {
            items.iter().map(Key::Val).collect()
        };
        let order = sorted_order(&keys, reverse)?;
        drop(keys);
        let mut slots: Vec<Option<Value>> = items.into_iter().map(Some).collect();
        Ok(order
            .into_iter()
            .filter_map(|i| slots.get_mut(i).and_then(Option::take))
            .collect())
    }
}

/// `nth`, `head` and `tail`, with their strict-mode range errors.
fn slice(op: Op, items: Vec<Value>, n: i128, strict: bool) -> Result<Vec<Value>, String> {
    let len = items.len() as i128;
    let range_error = || {
        Err(format!(
            "{} requires n to be within the valid range in strict mode, got {n}.",
            op.name()
        ))
    };
    let pick = |i: i128| {
        items
            .get(i as usize)
            .cloned()
            .into_iter()
            .collect::<Vec<_>>()
    };
    match op {
        Op::Nth => {
            if n == 0 {
                if strict {
                    range_error()
                } else {
                    Ok(Vec::new())
                }
            } else if n > 0 && n <= len {
                Ok(pick(n - 1))
            } else if n < 0 && n >= -len {
                Ok(pick(len + n))
            } else if strict {
                range_error()
            } else {
                Ok(Vec::new())
            }
        }
        _ => {
            if strict && !(1 <= n && n <= len) {
                return range_error();
            }
            if n < 1 {
                return Ok(Vec::new());
            }
            let k = n.min(len) as usize;
            Ok(if op == Op::Head {
                items.into_iter().take(k).collect()
            } else {
                let skip = items.len() - k;
                items.into_iter().skip(skip).collect()
            })
        }
    }
}

/// `_eval`: compare `str(item)` with the filter's raw value.
fn matches_filter(text: &str, operator: &Value, value: &Value) -> Result<bool, String> {
    let needle = value.as_str();
    Ok(match operator.as_str() {
        Some("=") => needle == Some(text),
        Some("≠") => needle != Some(text),
        Some("contains") => match needle {
            Some(s) => text.contains(s),
            None => {
                return Err(format!(
                    "'in <string>' requires string as left operand, not {}",
                    py_type_name(value)
                ));
            }
        },
        Some(op @ ("start with" | "end with")) => {
            let method = if op == "start with" {
                "startswith"
            } else {
                "endswith"
            };
            match needle {
                Some(s) if op == "start with" => text.starts_with(s),
                Some(s) => text.ends_with(s),
                None => {
                    return Err(format!(
                        "{method} first arg must be str or a tuple of str, not {}",
                        py_type_name(value)
                    ));
                }
            }
        }
        _ => false,
    })
}

/// `_drop_duplicates`: first occurrence of each canonical value.
fn drop_duplicates(items: Vec<Value>) -> Result<Vec<Value>, String> {
    let keys = items
        .iter()
        .map(|x| canonical(x, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let mut seen = HashSet::new();
    let keep: Vec<bool> = keys.into_iter().map(|k| seen.insert(k)).collect();
    Ok(items
        .into_iter()
        .zip(keep)
        .filter_map(|(x, k)| k.then_some(x))
        .collect())
}

/// Python `d[key]` on the `filter` parameter.
fn subscript<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    match v {
        Value::Object(o) => o.get(key).ok_or_else(|| format!("'{key}'")),
        Value::Array(_) => Err("list indices must be integers or slices, not str".into()),
        Value::String(_) => Err("string indices must be integers, not 'str'".into()),
        other => Err(format!(
            "'{}' object is not subscriptable",
            py_type_name(other)
        )),
    }
}

/// Python `int(x)` for a parameter; `None` where Python raises.
fn py_int(v: &Value) -> Option<i128> {
    match v {
        Value::Bool(b) => Some(i128::from(*b)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(i128::from(i))
            } else if let Some(u) = n.as_u64() {
                Some(i128::from(u))
            } else {
                n.as_f64()
                    .filter(|f| f.is_finite())
                    .map(|f| f.trunc() as i128)
            }
        }
        Value::String(s) => canvas_pyrt::parse_py_int(s),
        _ => None,
    }
}

/// The AttributeError text for calling `.attr` on a value of the wrong type.
pub(crate) fn no_attribute_text(v: &Value, attr: &str) -> String {
    format!("'{}' object has no attribute '{attr}'", py_type_name(v))
}

/// [`no_attribute_text`] as a component error.
pub(crate) fn no_attribute(v: &Value, attr: &str) -> ComponentError {
    ComponentError::Failed(no_attribute_text(v, attr))
}

fn failed(text: &str) -> ComponentError {
    ComponentError::Failed(text.to_string())
}

// ---------------------------------------------------------------------------------------
// Python values as sort keys.

fn too_deep(depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        Err(CompareError::TooDeep.to_string())
    } else {
        Ok(())
    }
}

/// `_hashable` as a sort key: dicts become sorted tuples of `(key, value)` pairs, lists
/// tuples, everything else stays itself.
fn hashable(v: &Value, depth: usize) -> Result<Key<'_>, String> {
    too_deep(depth)?;
    Ok(match v {
        Value::Object(o) => {
            let mut pairs: Vec<(&str, Key<'_>)> = Vec::with_capacity(o.len());
            for (k, x) in o {
                pairs.push((k.as_str(), hashable(x, depth + 1)?));
            }
            // Keys are distinct, so the pairs order by key alone.
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            Key::Tuple(
                pairs
                    .into_iter()
                    .map(|(k, x)| Key::Tuple(vec![Key::Str(k), x]))
                    .collect(),
            )
        }
        Value::Array(a) => Key::Tuple(
            a.iter()
                .map(|x| hashable(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        other => Key::Val(other),
    })
}

/// A hashable canonical form with Python's equality: `1 == 1.0 == True`, dicts by sorted
/// items, lists (and dicts) as tuples.
#[derive(Debug, PartialEq, Eq, Hash)]
enum Canon<'a> {
    None,
    Int(i128),
    Float(u64),
    Str(&'a str),
    Tuple(Vec<Canon<'a>>),
}

fn canonical(v: &Value, depth: usize) -> Result<Canon<'_>, String> {
    if depth > MAX_DEPTH {
        return Err("maximum recursion depth exceeded".into());
    }
    Ok(match v {
        Value::Null => Canon::None,
        Value::Bool(_) | Value::Number(_) => match py_num(v) {
            Some(PyNum::Int(i)) => Canon::Int(i),
            Some(PyNum::Float(f)) if f.fract() == 0.0 && f.abs() < 1.7e38 => Canon::Int(f as i128),
            Some(PyNum::Float(f)) => Canon::Float(f.to_bits()),
            None => Canon::None,
        },
        Value::String(s) => Canon::Str(s),
        Value::Array(a) => Canon::Tuple(
            a.iter()
                .map(|x| canonical(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(o) => {
            let mut pairs: Vec<(&str, Canon<'_>)> = Vec::with_capacity(o.len());
            for (k, x) in o {
                pairs.push((k.as_str(), canonical(x, depth + 1)?));
            }
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            Canon::Tuple(
                pairs
                    .into_iter()
                    .map(|(k, x)| Canon::Tuple(vec![Canon::Str(k), x]))
                    .collect(),
            )
        }
    })
}

/// The order `sorted(..., key=..., reverse=reverse)` puts the keys in, as indices.
fn sorted_order(keys: &[Key<'_>], reverse: bool) -> Result<Vec<usize>, String> {
    canvas_pyrt::sorted_order(keys.len(), reverse, |i, j| {
        match (keys.get(i), keys.get(j)) {
            (Some(a), Some(b)) => py_lt_key(a, b, MAX_DEPTH).map_err(|e| e.to_string()),
            _ => Ok(false),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;

    const ID: &str = "ListOperations:X";

    /// Run one ListOperations over `env.words = words`: its outputs, or the error text.
    fn run(params: Value, words: Value) -> Result<(Value, Value, Value), String> {
        let h = Harness::single(
            &crate::Registry,
            ID,
            "ListOperations",
            params,
            json!({ "env.words": words }),
        );
        h.invoke(ID).map_err(|e| e.to_string())?;
        Ok((
            h.output(ID, "result"),
            h.output(ID, "first"),
            h.output(ID, "last"),
        ))
    }

    fn result(params: Value, words: Value) -> Value {
        run(params, words).unwrap().0
    }

    fn error(params: Value, words: Value) -> String {
        run(params, words).unwrap_err()
    }

    fn with_query(mut params: Value) -> Value {
        params["query"] = json!("env.words");
        params
    }

    fn words() -> Value {
        json!(["a", "bb", "c", "bb"])
    }

    fn op(op: &str, n: Value) -> Value {
        with_query(json!({"operations": op, "n": n}))
    }

    // engine.md §9 item 56.
    #[test]
    fn nth_picks_one_item_counting_from_one_or_from_the_end() {
        assert_eq!(result(op("nth", json!(2)), words()), json!(["bb"]));
        assert_eq!(result(op("nth", json!(-1)), words()), json!(["bb"]));
        assert_eq!(result(op("nth", json!(-4)), words()), json!(["a"]));
        assert_eq!(result(op("nth", json!(0)), words()), json!([]));
        assert_eq!(result(op("nth", json!(9)), words()), json!([]));
        assert_eq!(result(op("nth", json!(-5)), words()), json!([]));
    }

    #[test]
    fn strict_mode_range_errors_name_the_operation_and_n() {
        let strict = |o: &str, n: i64| {
            let mut p = op(o, json!(n));
            p["strict"] = json!(true);
            p
        };
        assert_eq!(
            error(strict("nth", 9), words()),
            "nth requires n to be within the valid range in strict mode, got 9."
        );
        assert_eq!(
            error(strict("nth", 0), words()),
            "nth requires n to be within the valid range in strict mode, got 0."
        );
        assert_eq!(
            error(strict("head", 0), words()),
            "head requires n to be within the valid range in strict mode, got 0."
        );
        assert_eq!(
            error(strict("tail", 5), words()),
            "tail requires n to be within the valid range in strict mode, got 5."
        );
        assert_eq!(result(strict("tail", 4), words()), words());
        // Strings count as true only for 1/true/yes/on.
        let mut p = op("nth", json!(9));
        p["strict"] = json!(" YES ");
        assert!(error(p, words()).starts_with("nth requires"));
        let mut p = op("nth", json!(9));
        p["strict"] = json!("no");
        assert_eq!(result(p, words()), json!([]));
    }

    #[test]
    fn head_and_tail_slice_like_python() {
        assert_eq!(result(op("head", json!(2)), words()), json!(["a", "bb"]));
        assert_eq!(result(op("tail", json!(2)), words()), json!(["c", "bb"]));
        assert_eq!(result(op("head", json!(10)), words()), words());
        assert_eq!(result(op("tail", json!(10)), words()), words());
        assert_eq!(result(op("head", json!(0)), words()), json!([]));
        assert_eq!(result(op("tail", json!(-2)), words()), json!([]));
    }

    #[test]
    fn topn_in_any_case_is_head_and_empty_is_nth() {
        assert_eq!(result(op("topN", json!(1)), words()), json!(["a"]));
        assert_eq!(
            result(op(" TOPN ", json!(3)), words()),
            json!(["a", "bb", "c"])
        );
        assert_eq!(result(op("", json!(3)), words()), json!(["c"]));
        assert_eq!(result(with_query(json!({"n": 1})), words()), json!(["a"]));
    }

    #[test]
    fn n_is_coerced_with_python_int() {
        assert_eq!(result(op("nth", json!("2")), words()), json!(["bb"]));
        assert_eq!(result(op("nth", json!(" +3 ")), words()), json!(["c"]));
        assert_eq!(result(op("nth", json!(2.9)), words()), json!(["bb"]));
        assert_eq!(result(op("nth", json!(-1.5)), words()), json!(["bb"]));
        assert_eq!(result(op("nth", json!(true)), words()), json!(["a"]));
        // `int("2.5")`, `int(None)` and `int([])` raise: n is 0.
        assert_eq!(result(op("head", json!("2.5")), words()), json!([]));
        assert_eq!(result(op("head", Value::Null), words()), json!([]));
        assert_eq!(result(op("head", json!([2])), words()), json!([]));
        assert_eq!(py_int(&json!("1_0")), Some(10));
        assert_eq!(py_int(&json!("1__0")), None);
        assert_eq!(py_int(&json!("_1")), None);
        // Huge values only need their sign to be right.
        assert_eq!(result(op("nth", json!(-1e300)), words()), json!([]));
        assert_eq!(result(op("tail", json!(1e300)), words()), words());
        let huge = "9".repeat(60);
        assert_eq!(result(op("head", json!(huge)), words()), words());
    }

    #[test]
    fn first_and_last_follow_the_result_or_are_none() {
        let (r, first, last) = run(op("head", json!(3)), words()).unwrap();
        assert_eq!(
            (r, first, last),
            (json!(["a", "bb", "c"]), json!("a"), json!("c"))
        );
        let (r, first, last) = run(op("nth", json!(0)), words()).unwrap();
        assert_eq!((r, first, last), (json!([]), Value::Null, Value::Null));
    }

    #[test]
    fn filter_compares_python_str_of_each_item() {
        let f = |operator: &str, value: Value| {
            with_query(
                json!({"operations": "filter", "filter": {"operator": operator, "value": value}}),
            )
        };
        assert_eq!(
            result(f("contains", json!("b")), words()),
            json!(["bb", "bb"])
        );
        assert_eq!(result(f("=", json!("c")), words()), json!(["c"]));
        assert_eq!(result(f("≠", json!("bb")), words()), json!(["a", "c"]));
        assert_eq!(
            result(f("start with", json!("b")), words()),
            json!(["bb", "bb"])
        );
        assert_eq!(result(f("end with", json!("c")), words()), json!(["c"]));
        assert_eq!(result(f("CONTAINS", json!("b")), words()), json!([]));
        // Items are compared through `str()`: None is "", True is "True", dicts repr.
        let mixed = json!([null, true, 1.0, {"k": 1}, ["x"]]);
        assert_eq!(result(f("=", json!("")), mixed.clone()), json!([null]));
        assert_eq!(result(f("=", json!("True")), mixed.clone()), json!([true]));
        assert_eq!(result(f("=", json!("1.0")), mixed.clone()), json!([1.0]));
        assert_eq!(
            result(f("=", json!("{'k': 1}")), mixed.clone()),
            json!([{"k": 1}])
        );
        assert_eq!(result(f("start with", json!("['")), mixed), json!([["x"]]));
        // The raw value is used: a number never equals a string.
        assert_eq!(result(f("=", json!(1)), json!(["1"])), json!([]));
        assert_eq!(result(f("≠", json!(1)), json!(["1"])), json!(["1"]));
    }

    #[test]
    fn filter_errors_are_pythons() {
        let f = |filter: Value| with_query(json!({"operations": "filter", "filter": filter}));
        assert_eq!(
            error(f(json!({"operator": "contains", "value": 1})), words()),
            "'in <string>' requires string as left operand, not int"
        );
        assert_eq!(
            error(
                f(json!({"operator": "start with", "value": ["a"]})),
                words()
            ),
            "startswith first arg must be str or a tuple of str, not list"
        );
        assert_eq!(error(f(json!({"operator": "="})), words()), "'value'");
        assert_eq!(error(f(json!({"value": "a"})), words()), "'operator'");
        assert_eq!(
            error(f(Value::Null), words()),
            "'NoneType' object is not subscriptable"
        );
        // Nothing is looked up for an empty list.
        assert_eq!(result(f(Value::Null), json!([])), json!([]));
    }

    #[test]
    fn sort_is_natural_order_and_desc_is_reverse() {
        let sort = |method: &str| with_query(json!({"operations": "sort", "sort_method": method}));
        assert_eq!(result(sort("asc"), words()), json!(["a", "bb", "bb", "c"]));
        assert_eq!(result(sort("desc"), words()), json!(["c", "bb", "bb", "a"]));
        assert_eq!(result(sort("asc"), json!([])), json!([]));
        // Python orders by code point and compares numbers by value.
        assert_eq!(
            result(sort("asc"), json!(["b", "B", "a", "é", "e"])),
            json!(["B", "a", "b", "e", "é"])
        );
        assert_eq!(
            result(sort("asc"), json!([true, 0.5, 2, -1, 1.0])),
            json!([-1, 0.5, true, 1.0, 2])
        );
        assert_eq!(
            result(sort("asc"), json!([[2], [1, 5], [1]])),
            json!([[1], [1, 5], [2]])
        );
        assert_eq!(result(sort("bogus"), json!([2, 1])), json!([1, 2]));
    }

    #[test]
    fn sort_errors_name_the_first_pair_python_compares() {
        let sort = with_query(json!({"operations": "sort"}));
        let e = |items: Value| error(sort.clone(), items);
        assert_eq!(
            e(json!(["a", 1])),
            "'<' not supported between instances of 'int' and 'str'"
        );
        assert_eq!(
            e(json!([1, "a"])),
            "'<' not supported between instances of 'str' and 'int'"
        );
        assert_eq!(
            e(json!(["c", "a", 3, "b"])),
            "'<' not supported between instances of 'int' and 'str'"
        );
        assert_eq!(
            e(json!([[1, "a"], [1, 2]])),
            "'<' not supported between instances of 'int' and 'str'"
        );
        assert_eq!(
            e(json!([[1, {"a": 1}], [1, {"a": 2}]])),
            "'<' not supported between instances of 'dict' and 'dict'"
        );
        // Longer lists go through runs and merges; Python's first failing pair is kept.
        let mut big: Vec<Value> = (0..70).map(|i| json!(i)).collect();
        big[40] = json!("x");
        assert_eq!(
            e(Value::Array(big)),
            "'<' not supported between instances of 'str' and 'int'"
        );
        let mut big: Vec<Value> = (1..=100).rev().map(|i| json!(i)).collect();
        big.push(json!("x"));
        big.extend((0..50).map(|i| json!(i)));
        assert_eq!(
            e(Value::Array(big)),
            "'<' not supported between instances of 'str' and 'int'"
        );
    }

    // engine.md §9 item 57.
    #[test]
    fn sort_dicts_by_listed_keys() {
        let rows = json!([{"a": 2, "b": 1}, {"a": 1, "b": 1}, {"a": 0, "b": 2}]);
        let p = with_query(json!({"operations": "sort", "sort_by": "b,a"}));
        assert_eq!(
            result(p, rows),
            json!([{"a": 1, "b": 1}, {"a": 2, "b": 1}, {"a": 0, "b": 2}])
        );
        // A missing key is None: an error against a value, fine against another None.
        let p = with_query(json!({"operations": "sort", "sort_by": " a "}));
        assert_eq!(
            error(p.clone(), json!([{"b": 1}, {"a": 2, "b": 0}])),
            "'<' not supported between instances of 'int' and 'NoneType'"
        );
        assert_eq!(
            result(p.clone(), json!([{"a": null}, {"b": 0}])),
            json!([{"a": null}, {"b": 0}])
        );
        assert_eq!(
            error(p.clone(), json!([{"a": 1}, "s"])),
            "'str' object has no attribute 'get'"
        );
        let p = with_query(json!({"operations": "sort", "sort_by": ["a"]}));
        assert_eq!(
            error(p, json!([{"a": 1}])),
            "'list' object has no attribute 'split'"
        );
    }

    #[test]
    fn desc_keeps_equal_items_in_their_original_order() {
        let rows = json!([{"k": 1, "id": "a"}, {"k": 2, "id": "b"}, {"k": 1, "id": "c"}]);
        let p = with_query(json!({"operations": "sort", "sort_by": "k", "sort_method": "desc"}));
        assert_eq!(
            result(p, rows),
            json!([{"k": 2, "id": "b"}, {"k": 1, "id": "a"}, {"k": 1, "id": "c"}])
        );
    }

    #[test]
    fn dicts_without_sort_by_sort_by_their_sorted_items() {
        let rows = json!([{"b": 2, "a": "x"}, {"a": "y"}, {"a": "x", "b": 1}]);
        let p = with_query(json!({"operations": "sort"}));
        assert_eq!(
            result(p, rows),
            json!([{"a": "x", "b": 1}, {"b": 2, "a": "x"}, {"a": "y"}])
        );
    }

    #[test]
    fn drop_duplicates_keeps_first_of_each_python_equal_value() {
        let p = with_query(json!({"operations": "drop_duplicates"}));
        assert_eq!(result(p.clone(), words()), json!(["a", "bb", "c"]));
        // Dicts compare by sorted items, lists element-wise; 1 == 1.0 == True; and a
        // dict's canonical form equals that of the list of its pairs.
        let items = json!([
            {"a": 1, "b": 2}, {"b": 2, "a": 1}, [1, 2], [1.0, 2], 1, 1.0, true, "1",
            [["a", 1]], {"a": 1}, null, null
        ]);
        assert_eq!(
            result(p, items),
            json!([{"a": 1, "b": 2}, [1, 2], 1, "1", [["a", 1]], null])
        );
    }

    #[test]
    fn input_must_be_a_list_and_is_recorded() {
        let h = Harness::single(
            &crate::Registry,
            ID,
            "ListOperations",
            op("nth", json!(1)),
            json!({"env.words": "abc"}),
        );
        assert_eq!(
            h.invoke(ID).unwrap_err().to_string(),
            "The input of List Operations should be an array."
        );
        assert_eq!(h.input(ID, "env.words"), Value::Null);
        let p = json!({"query": "{env.words}", "operations": "nth", "n": 1});
        let h = Harness::single(
            &crate::Registry,
            ID,
            "ListOperations",
            p,
            json!({"env.words": ["x"]}),
        );
        h.invoke(ID).unwrap();
        assert_eq!(h.input(ID, "{env.words}"), json!(["x"]));
    }

    #[test]
    fn unknown_references_fail_the_component() {
        let p = json!({"query": "Nope:X@out", "operations": "nth"});
        let h = Harness::single(&crate::Registry, ID, "ListOperations", p, json!({}));
        assert_eq!(
            h.invoke(ID).unwrap_err().to_string(),
            "Can't find variable: 'Nope:X@out'"
        );
    }

    // conformance/cases/05_listdata.
    #[test]
    fn recorded_listdata_pipeline() {
        let rows = json!([
            {"id": 2, "score": 0.88, "name": "Beta"},
            {"id": 3, "score": 0.76, "name": "Gamma"},
            {"id": 1, "score": 0.91, "name": "Alpha"},
            {"id": 2, "score": 0.88, "name": "Beta"}
        ]);
        let dedup = result(with_query(json!({"operations": "drop_duplicates"})), rows);
        assert_eq!(
            dedup,
            json!([
                {"id": 2, "score": 0.88, "name": "Beta"},
                {"id": 3, "score": 0.76, "name": "Gamma"},
                {"id": 1, "score": 0.91, "name": "Alpha"}
            ])
        );
        let sort = json!({"operations": "sort", "sort_by": "score", "sort_method": "desc"});
        let sorted = result(with_query(sort), dedup);
        assert_eq!(
            sorted,
            json!([
                {"id": 1, "score": 0.91, "name": "Alpha"},
                {"id": 2, "score": 0.88, "name": "Beta"},
                {"id": 3, "score": 0.76, "name": "Gamma"}
            ])
        );
        let (head, first, last) = run(op("head", json!(2)), sorted).unwrap();
        assert_eq!(head.as_array().map(Vec::len), Some(2));
        assert_eq!(first, json!({"id": 1, "score": 0.91, "name": "Alpha"}));
        assert_eq!(last, json!({"id": 2, "score": 0.88, "name": "Beta"}));
        let fruit = json!(["apple", "kiwi", "banana", "plum"]);
        assert_eq!(result(op("nth", json!(2)), fruit.clone()), json!(["kiwi"]));
        let filter =
            json!({"operations": "filter", "filter": {"operator": "contains", "value": "a"}});
        assert_eq!(
            result(with_query(filter), fruit),
            json!(["apple", "banana"])
        );
    }

    // conformance/cases/all_fixed_data_ops: `outputs` declares only `result`.
    #[test]
    fn undeclared_first_output_is_a_key_error_after_result_is_set() {
        let h = Harness::new(
            &crate::Registry,
            json!({
                "components": {
                    "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": [ID]},
                    ID: {"obj": {"component_name": "ListOperations", "params": {
                        "query": "begin@rows", "operations": "sort", "sort_by": "score",
                        "sort_method": "desc", "outputs": {"result": {"type": "Array<Object>"}}
                    }}, "downstream": []}
                }
            }),
        );
        h.set_output("begin", "rows", json!([{"score": 0.88}, {"score": 0.91}]));
        assert_eq!(h.invoke(ID).unwrap_err().to_string(), "'first'");
        assert_eq!(
            h.output(ID, "result"),
            json!([{"score": 0.91}, {"score": 0.88}])
        );
    }

    #[test]
    fn build_checks_query_and_operation() {
        let err = |p: Value| match build(p.as_object().unwrap()) {
            Err(BuildError::Params(m)) => m,
            _ => panic!("expected a params error"),
        };
        assert_eq!(
            err(json!({"operations": "nth"})),
            "[ListOperations] query does not support empty value."
        );
        assert_eq!(
            err(json!({"query": "env.x", "operations": "shuffle"})),
            "[ListOperations] Support operations shuffle is not supported, it should be in \
             ['nth', 'head', 'tail', 'filter', 'sort', 'drop_duplicates']"
        );
        assert!(
            build(
                json!({"query": "env.x", "operations": " topn "})
                    .as_object()
                    .unwrap()
            )
            .is_ok()
        );
        assert!(
            build(
                json!({"query": "env.x", "operations": null})
                    .as_object()
                    .unwrap()
            )
            .is_ok()
        );
    }

    #[test]
    fn declares_result_first_and_last_by_default() {
        let h = Harness::single(
            &crate::Registry,
            ID,
            "ListOperations",
            op("nth", json!(1)),
            json!({"env.words": []}),
        );
        let names: Vec<String> = h.state().nodes[ID].outputs.keys().cloned().collect();
        assert_eq!(names, ["result", "first", "last"]);
    }

    #[test]
    fn deep_values_do_not_overflow_the_stack() {
        let mut deep = json!(1);
        for _ in 0..(MAX_DEPTH + 50) {
            deep = json!([deep]);
        }
        let items = vec![deep.clone(), deep];
        assert!(drop_duplicates(items.clone()).is_err());
        let keys: Vec<Key<'_>> = items.iter().map(Key::Val).collect();
        assert!(sorted_order(&keys, false).is_err());
    }
}
