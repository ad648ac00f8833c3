//! Switch: picks the branch of the first matching condition (`engine.md` §7.3).

use async_trait::async_trait;
use serde_json::{Value, json};
use std::borrow::Cow;

use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx, ParamError, Role};
use canvas_pyrt::{
    Object, is_number_like, py_eq, py_float_of, py_repr, py_str, py_type_name, truthy,
};

/// Build a Switch; RAGFlow requires conditions (each with targets) and an else branch.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let conditions = match params.get("conditions") {
        Some(Value::Array(a)) => a.clone(),
        // RAGFlow's check fails on these too (it indexes each item with `["to"]`).
        Some(v) if truthy(v) => {
            return Err(BuildError::Params(format!(
                "[Switch] conditions must be a list of cases, not {}",
                canvas_dsl::model::kind_name(v)
            )));
        }
        _ => Vec::new(),
    };
    if conditions.is_empty() {
        return Err(BuildError::Params(
            "[Switch] conditions does not support empty value.".into(),
        ));
    }
    for c in &conditions {
        if !c.get("to").is_some_and(truthy) {
            return Err(BuildError::Params("[Switch] 'To' can not be empty!".into()));
        }
    }
    let end = params.get("end_cpn_ids").cloned().unwrap_or(Value::Null);
    if !truthy(&end) {
        return Err(BuildError::Params(
            "[Switch] the ELSE/Other destination can not be empty.".into(),
        ));
    }
    Ok(Box::new(Switch {
        conditions,
        end: ids(&end),
    }))
}

fn ids(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// The Switch component.
pub struct Switch {
    conditions: Vec<Value>,
    end: Vec<String>,
}

impl Switch {
    fn choose(cx: &NodeCx<'_>, to: Vec<String>) {
        let names: Vec<Value> = to
            .iter()
            .map(|id| json!(cx.canvas().node(id).map(|n| n.name.as_str()).unwrap_or("")))
            .collect();
        cx.set_output("next", Value::Array(names));
        cx.set_output("_next", json!(to));
    }
}

/// Python `float(x)`'s error text for a value it cannot convert.
fn float_error(v: &Value) -> String {
    match v {
        Value::String(s) => format!("could not convert string to float: {}", py_repr(&json!(s))),
        Value::Null => "float() argument must be a string or a real number, not 'NoneType'".into(),
        Value::Array(_) => "float() argument must be a string or a real number, not 'list'".into(),
        _ => "float() argument must be a string or a real number, not 'dict'".into(),
    }
}

/// The operators [`process_operator`] knows: RAGFlow's, plus `in` and `not in`.
pub const OPERATORS: &[&str] = &[
    "contains",
    "not contains",
    "start with",
    "end with",
    "empty",
    "not empty",
    "=",
    "≠",
    ">",
    "<",
    "≥",
    "≤",
    "in",
    "not in",
];

/// RAGFlow's `process_operator`, plus `in` / `not in`.
pub fn process_operator(input: &Value, op: &str, value: &Value) -> Result<bool, String> {
    let text = |v: &Value| {
        if v.is_null() {
            String::new()
        } else {
            py_str(v).to_lowercase()
        }
    };
    match op {
        "contains" => Ok(text(input).contains(&text(value))),
        "not contains" => Ok(!text(input).contains(&text(value))),
        "start with" => Ok(text(input).starts_with(&text(value))),
        "end with" => Ok(text(input).ends_with(&text(value))),
        "empty" => Ok(!truthy(input)),
        "not empty" => Ok(truthy(input)),
        "=" => Ok(py_eq(input, value)),
        "≠" => Ok(!py_eq(input, value)),
        ">" | "<" | "≥" | "≤" => {
            let cmp = match (py_float_of(input), py_float_of(value)) {
                (Some(a), Some(b)) => a.partial_cmp(&b),
                _ => match (input, value) {
                    (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
                    _ => {
                        let sym = match op {
                            "≥" => ">=",
                            "≤" => "<=",
                            o => o,
                        };
                        return Err(format!(
                            "'{sym}' not supported between instances of '{}' and '{}'",
                            py_type_name(input),
                            py_type_name(value)
                        ));
                    }
                },
            };
            let Some(ord) = cmp else { return Ok(false) };
            Ok(match op {
                ">" => ord.is_gt(),
                "<" => ord.is_lt(),
                "≥" => ord.is_ge(),
                _ => ord.is_le(),
            })
        }
        // Offered by RAGFlow's editor but unsupported by its engine; ours: the
        // variable's text occurs in the value (a list value: is one of its elements).
        "in" | "not in" => {
            let found = match value {
                Value::Array(a) => a
                    .iter()
                    .any(|x| py_eq(x, input) || py_str(x) == py_str(input)),
                Value::String(s) => s.contains(&*py_str(input)),
                other => py_eq(other, input),
            };
            Ok(if op == "in" { found } else { !found })
        }
        other => Err(format!("Not supported operator: {other}")),
    }
}

#[async_trait]
impl Component for Switch {
    fn instant(&self) -> bool {
        true
    }

    fn role(&self) -> Role {
        Role::Router
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "Choosing a branch.".into()
    }

    /// An operator it does not know fails the Switch whenever it evaluates that item
    /// (RAGFlow: "Not supported operator"); RAGFlow's editor offers only known ones, so
    /// one is a typo in the file, refused before the run.
    fn check(&self) -> Result<(), ParamError> {
        for (i, cond) in self.conditions.iter().enumerate() {
            let items = cond.get("items").and_then(Value::as_array);
            for (j, item) in items.into_iter().flatten().enumerate() {
                // Items without a `cpn_id` are skipped, their operator never read.
                if !item.get("cpn_id").is_some_and(truthy) {
                    continue;
                }
                let op = item.get("operator").and_then(Value::as_str);
                if op.is_some_and(|op| OPERATORS.contains(&op)) {
                    continue;
                }
                let shown = match item.get("operator") {
                    Some(v) => py_repr(v),
                    None => "(none)".to_string(),
                };
                // Cases are 1-based, as RAGFlow's editor labels them ("Case 1").
                let message = format!(
                    "[Switch] case {} has an unknown operator {shown}; known: {}",
                    i + 1,
                    OPERATORS.join(", ")
                );
                let (i, j) = (i.to_string(), j.to_string());
                return Err(ParamError::new(
                    message,
                    &["conditions", &i, "items", &j, "operator"],
                ));
            }
        }
        Ok(())
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        for cond in &self.conditions {
            let mut res = Vec::new();
            let items = cond
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for item in &items {
                let cpn_id = item.get("cpn_id").cloned().unwrap_or(Value::Null);
                if !truthy(&cpn_id) {
                    continue;
                }
                let exp = cpn_id.as_str().unwrap_or_default();
                let v = cx.resolve(exp)?;
                cx.set_input(exp, v.clone());
                let mut operatee = item.get("value").cloned().unwrap_or(json!(""));
                if is_number_like(&v) {
                    let f = py_float_of(&operatee)
                        .ok_or_else(|| ComponentError::Failed(float_error(&operatee)))?;
                    operatee = canvas_pyrt::float_value(f);
                }
                let op = item.get("operator").and_then(Value::as_str).unwrap_or("");
                res.push(process_operator(&v, op, &operatee).map_err(ComponentError::Failed)?);
                let logical = cond
                    .get("logical_operator")
                    .ok_or_else(|| ComponentError::Failed("'logical_operator'".into()))?;
                if logical.as_str() != Some("and") && res.iter().any(|r| *r) {
                    Self::choose(cx, ids(cond.get("to").unwrap_or(&Value::Null)));
                    return Ok(());
                }
            }
            if !res.is_empty() && res.iter().all(|r| *r) {
                Self::choose(cx, ids(cond.get("to").unwrap_or(&Value::Null)));
                return Ok(());
            }
        }
        Self::choose(cx, self.end.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;

    fn switch(cond: Value, value: Value) -> Harness {
        let h = Harness::single(
            &crate::Registry,
            "Switch:S",
            "Switch",
            json!({"conditions": [cond], "end_cpn_ids": ["begin"]}),
            json!({"sys.query": "hello"}),
        );
        h.set_output("begin", "v", value);
        h
    }

    fn item(op: &str, value: Value) -> Value {
        json!({"logical_operator": "and", "items": [{"cpn_id": "begin@v", "operator": op, "value": value}], "to": ["Yes"]})
    }

    fn chosen(h: &Harness) -> Value {
        h.invoke("Switch:S").unwrap();
        h.output("Switch:S", "_next")
    }

    #[test]
    fn operators_match_engine_md_checklist() {
        // §9 item 18: `=` is case-sensitive, `contains` is not.
        assert_eq!(
            chosen(&switch(item("=", json!("Hello")), json!("hello"))),
            json!(["begin"])
        );
        assert_eq!(
            chosen(&switch(item("contains", json!("ELL")), json!("hello"))),
            json!(["Yes"])
        );
        // item 19: numbers coerce the value.
        assert_eq!(
            chosen(&switch(item(">", json!("3")), json!(5))),
            json!(["Yes"])
        );
        assert_eq!(
            chosen(&switch(item("=", json!("5")), json!(5))),
            json!(["Yes"])
        );
        let h = switch(item("=", json!("")), json!(5));
        assert_eq!(
            h.invoke("Switch:S"),
            Err(ComponentError::Failed(
                "could not convert string to float: ''".into()
            ))
        );
        // item 20: numeric strings compare as numbers, others lexicographically.
        assert_eq!(
            chosen(&switch(item(">", json!("10")), json!("9"))),
            json!(["begin"])
        );
        assert_eq!(
            chosen(&switch(item(">", json!("abc")), json!("b"))),
            json!(["Yes"])
        );
        // item 21 and 22.
        assert_eq!(
            chosen(&switch(item("contains", json!("x")), json!(["x", "y"]))),
            json!(["Yes"])
        );
        assert_eq!(
            chosen(&switch(item("empty", json!("")), json!([]))),
            json!(["Yes"])
        );
        assert_eq!(
            chosen(&switch(item("=", json!("1")), json!(true))),
            json!(["Yes"])
        );
        // item 24: unknown operators are errors.
        let h = switch(item("is", json!("x")), json!("x"));
        assert_eq!(
            h.invoke("Switch:S"),
            Err(ComponentError::Failed("Not supported operator: is".into()))
        );
    }

    /// What `check` says of a Switch with these conditions (which must build).
    fn checked(conditions: Value) -> Result<(), ParamError> {
        let Value::Object(p) = json!({"conditions": conditions, "end_cpn_ids": ["begin"]}) else {
            unreachable!()
        };
        match build(&p) {
            Ok(s) => s.check(),
            Err(e) => panic!("{p:?} must build: {e}"),
        }
    }

    #[test]
    fn an_unknown_operator_is_refused_before_the_run() {
        for op in OPERATORS {
            assert_eq!(checked(json!([item(op, json!("x"))])), Ok(()), "{op}");
        }
        let two = json!([item("=", json!(1)), item("oops", json!(1))]);
        let e = checked(two).unwrap_err();
        assert_eq!(e.path, ["conditions", "1", "items", "0", "operator"]);
        assert!(
            e.message
                .starts_with("[Switch] case 2 has an unknown operator 'oops'")
        );
        // An item without `cpn_id` is skipped at run time, its operator never read.
        let skipped = json!([{"logical_operator": "and", "to": ["Yes"],
            "items": [{"cpn_id": "", "operator": "nope"}]}]);
        assert_eq!(checked(skipped), Ok(()));
    }

    #[test]
    fn conditions_that_are_not_a_list_do_not_build() {
        let Value::Object(p) = json!({"conditions": "oops", "end_cpn_ids": ["begin"]}) else {
            unreachable!()
        };
        let Err(e) = build(&p) else {
            panic!("a string is no list of cases")
        };
        assert_eq!(
            e.to_string(),
            "[Switch] conditions must be a list of cases, not a string"
        );
    }

    #[test]
    fn logical_operators() {
        // §9 item 23.
        let or = json!({"logical_operator": "or", "items": [
            {"cpn_id": "begin@v", "operator": "=", "value": "no"},
            {"cpn_id": "begin@v", "operator": "=", "value": "x"}], "to": ["Yes"]});
        assert_eq!(chosen(&switch(or, json!("x"))), json!(["Yes"]));
        let and = json!({"logical_operator": "and", "items": [
            {"cpn_id": "begin@v", "operator": "=", "value": "x"},
            {"cpn_id": "begin@v", "operator": "=", "value": "no"}], "to": ["Yes"]});
        assert_eq!(chosen(&switch(and, json!("x"))), json!(["begin"]));
        let empty = json!({"logical_operator": "and", "items": [{"cpn_id": "", "operator": "=", "value": "x"}], "to": ["Yes"]});
        assert_eq!(chosen(&switch(empty, json!("x"))), json!(["begin"]));
    }

    #[test]
    fn in_and_not_in() {
        assert_eq!(
            chosen(&switch(item("in", json!("a,b,c")), json!("b"))),
            json!(["Yes"])
        );
        assert_eq!(
            chosen(&switch(item("not in", json!(["a", "c"])), json!("b"))),
            json!(["Yes"])
        );
    }

    #[test]
    fn records_inputs_and_names() {
        let h = switch(item("=", json!("x")), json!("x"));
        h.invoke("Switch:S").unwrap();
        assert_eq!(h.input("Switch:S", "begin@v"), json!("x"));
        assert_eq!(h.output("Switch:S", "next"), json!([""]));
    }

    #[test]
    fn empty_conditions_are_rejected() {
        assert!(build(&Object::new()).is_err());
    }
}
