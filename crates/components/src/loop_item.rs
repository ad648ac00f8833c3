//! LoopItem: counts passes and decides, before each pass, whether the Loop ends
//! (`engine.md` §7.6).

use std::borrow::Cow;
use std::sync::OnceLock;

use async_trait::async_trait;
use serde_json::Value;

use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx, Role};
use canvas_pyrt::{Object, py_eq, py_type_name};

/// Build a LoopItem.
pub fn build(_params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(LoopItem::default()))
}

/// The LoopItem component.
#[derive(Default)]
pub struct LoopItem {
    /// Its Loop's pass limit and termination conditions, read from the Loop's
    /// parameters at the first pass (they are the same at every pass).
    rules: OnceLock<Rules>,
}

/// What a LoopItem reads from its Loop's parameters.
struct Rules {
    /// `maximum_loop_count`.
    max: i64,
    /// Each termination condition, or why it is unusable (reported when reached, in
    /// order, as each pass used to find it).
    conditions: Vec<Result<Condition, String>>,
    /// `logical_operator`: true for "and", false for "or", or why it is unusable.
    all: Result<bool, String>,
}

/// One termination condition.
struct Condition {
    variable: String,
    operator: String,
    value: Operand,
}

/// What a condition compares its variable with.
enum Operand {
    /// `input_mode` "constant": the value as written.
    Constant(Value),
    /// `input_mode` "variable": a reference resolved at each pass.
    Variable(String),
}

impl Rules {
    fn read(params: &Object) -> Rules {
        let conditions = params
            .get("loop_termination_condition")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(condition)
            .collect();
        let all = match params
            .get("logical_operator")
            .and_then(Value::as_str)
            .unwrap_or("and")
        {
            "and" => Ok(true),
            "or" => Ok(false),
            other => Err(format!("Invalid logical operator: {other}")),
        };
        Rules {
            max: max_count(params.get("maximum_loop_count")),
            conditions,
            all,
        }
    }
}

fn condition(c: &Value) -> Result<Condition, String> {
    let var = c
        .get("variable")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let op = c
        .get("operator")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let (Some(var), Some(op)) = (var, op) else {
        return Err("Loop condition is incomplete.".into());
    };
    let raw = c.get("value").cloned().unwrap_or(Value::Null);
    let value = match c
        .get("input_mode")
        .and_then(Value::as_str)
        .unwrap_or("constant")
    {
        "constant" => Operand::Constant(raw),
        "variable" => Operand::Variable(raw.as_str().unwrap_or_default().to_string()),
        other => return Err(format!("Invalid input mode: {other}")),
    };
    Ok(Condition {
        variable: var.to_string(),
        operator: op.to_string(),
        value,
    })
}

impl LoopItem {
    fn rules(&self, parent: &canvas_engine::Node) -> &Rules {
        self.rules.get_or_init(|| Rules::read(&parent.params))
    }
}

fn max_count(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(0),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
        _ => 0,
    }
}

/// RAGFlow's `evaluate_condition`, by the variable's type.
pub fn evaluate(var: &Value, op: &str, value: &Value) -> Result<bool, String> {
    let invalid = || Err(format!("Invalid operator: {op}"));
    match var {
        Value::String(s) => {
            let needle = || match value {
                Value::String(v) => Ok(v.as_str()),
                other => Err(format!(
                    "'in <string>' requires string as left operand, not {}",
                    py_type_name(other)
                )),
            };
            match op {
                "contains" => Ok(s.contains(needle()?)),
                "not contains" => Ok(!s.contains(needle()?)),
                "start with" => Ok(s.starts_with(needle()?)),
                "end with" => Ok(s.ends_with(needle()?)),
                "is" => Ok(py_eq(var, value)),
                "is not" => Ok(!py_eq(var, value)),
                "empty" => Ok(s.is_empty()),
                "not empty" => Ok(!s.is_empty()),
                _ => invalid(),
            }
        }
        Value::Bool(b) => match op {
            // Identity in Python: only a JSON boolean can be `is` a boolean.
            "is" => Ok(value.as_bool() == Some(*b)),
            "is not" => Ok(value.as_bool() != Some(*b)),
            "empty" => Ok(false),
            "not empty" => Ok(true),
            _ => invalid(),
        },
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            let ordered = |f: fn(f64, f64) -> bool| match value {
                Value::Number(m) => Ok(f(x, m.as_f64().unwrap_or(0.0))),
                Value::Bool(b) => Ok(f(x, if *b { 1.0 } else { 0.0 })),
                other => Err(format!(
                    "'{}' not supported between instances of '{}' and '{}'",
                    op_symbol(op),
                    py_type_name(var),
                    py_type_name(other)
                )),
            };
            match op {
                "=" => Ok(py_eq(var, value)),
                "≠" => Ok(!py_eq(var, value)),
                ">" => ordered(|a, b| a > b),
                "<" => ordered(|a, b| a < b),
                "≥" => ordered(|a, b| a >= b),
                "≤" => ordered(|a, b| a <= b),
                "empty" => Ok(false),
                "not empty" => Ok(true),
                _ => invalid(),
            }
        }
        Value::Object(o) => match op {
            "empty" => Ok(o.is_empty()),
            "not empty" => Ok(!o.is_empty()),
            _ => invalid(),
        },
        Value::Array(a) => match op {
            "contains" => Ok(a.iter().any(|x| py_eq(x, value))),
            "not contains" => Ok(!a.iter().any(|x| py_eq(x, value))),
            "is" => Ok(py_eq(var, value)),
            "is not" => Ok(!py_eq(var, value)),
            "empty" => Ok(a.is_empty()),
            "not empty" => Ok(!a.is_empty()),
            _ => invalid(),
        },
        Value::Null => Ok(op == "empty"),
    }
}

fn op_symbol(op: &str) -> &str {
    match op {
        "≥" => ">=",
        "≤" => "<=",
        o => o,
    }
}

#[async_trait]
impl Component for LoopItem {
    fn instant(&self) -> bool {
        true
    }

    fn role(&self) -> Role {
        Role::ContainerItem
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "Next pass.".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let max = cx.parent().map_or(0, |p| self.rules(p).max);
        let idx = cx.counter(cx.id());
        cx.set_counter(cx.id(), if idx < 0 || idx >= max { -1 } else { idx + 1 });
        Ok(())
    }

    fn end(&self, cx: &NodeCx<'_>) -> CResult<bool> {
        if cx.counter(cx.id()) == -1 {
            return Ok(true);
        }
        let parent = cx
            .parent()
            .ok_or_else(|| ComponentError::Fatal("this LoopItem has no parent Loop".into()))?;
        // Read once: this runs before every pass.
        let rules = self.rules(parent);
        let fatal =
            |m: String| ComponentError::Fatal(format!("loop condition of {:?}: {m}", parent.id));
        // Every condition is evaluated (an error in any one stops the loop), then combined.
        let (mut every, mut some) = (true, false);
        for c in &rules.conditions {
            let c = c.as_ref().map_err(|m| fatal(m.clone()))?;
            let resolved;
            let value = match &c.value {
                Operand::Constant(v) => v,
                Operand::Variable(exp) => {
                    resolved = cx.resolve(exp).map_err(|e| fatal(e.to_string()))?;
                    &resolved
                }
            };
            let v = cx.resolve(&c.variable).map_err(|e| fatal(e.to_string()))?;
            let r = evaluate(&v, &c.operator, value).map_err(fatal)?;
            every &= r;
            some |= r;
        }
        let done = match &rules.all {
            Ok(true) => every,
            Ok(false) => some,
            Err(m) => return Err(fatal(m.clone())),
        };
        if done {
            cx.set_counter(cx.id(), -1);
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(params: Value) -> Rules {
        Rules::read(params.as_object().unwrap())
    }

    #[test]
    fn a_loops_rules_are_read_with_each_problem_kept_for_its_turn() {
        let r = rules(json!({
            "maximum_loop_count": "7",
            "logical_operator": "or",
            "loop_termination_condition": [
                {"variable": "Loop:L@i", "operator": "≥", "value": 3},
                {"variable": "Loop:L@i", "operator": "=", "input_mode": "variable", "value": "env.stop"},
                {"variable": "", "operator": "="},
                {"variable": "Loop:L@i", "operator": "=", "input_mode": "magic"}
            ]
        }));
        assert_eq!(r.max, 7);
        assert_eq!(r.all, Ok(false));
        assert_eq!(r.conditions.len(), 4);
        let first = r.conditions[0].as_ref().unwrap();
        assert_eq!(
            (first.variable.as_str(), first.operator.as_str()),
            ("Loop:L@i", "≥")
        );
        assert!(matches!(&first.value, Operand::Constant(v) if v == &json!(3)));
        let second = r.conditions[1].as_ref().unwrap();
        assert!(matches!(&second.value, Operand::Variable(e) if e == "env.stop"));
        assert_eq!(
            r.conditions[2].as_ref().err().map(String::as_str),
            Some("Loop condition is incomplete.")
        );
        assert_eq!(
            r.conditions[3].as_ref().err().map(String::as_str),
            Some("Invalid input mode: magic")
        );
        let r = rules(json!({"logical_operator": "xor"}));
        assert_eq!(r.all, Err("Invalid logical operator: xor".into()));
        assert_eq!((r.max, r.conditions.len()), (0, 0));
        assert_eq!(rules(json!({})).all, Ok(true));
    }

    #[test]
    fn conditions_follow_the_variable_type() {
        assert_eq!(evaluate(&json!(3), "≥", &json!(3)), Ok(true));
        assert_eq!(evaluate(&json!(2.5), "<", &json!(3)), Ok(true));
        assert!(evaluate(&json!(3), ">", &json!("3")).is_err());
        assert_eq!(evaluate(&json!(3), "=", &json!("3")), Ok(false));
        assert_eq!(evaluate(&json!("abc"), "contains", &json!("b")), Ok(true));
        assert_eq!(evaluate(&json!("abc"), "empty", &json!("")), Ok(false));
        assert_eq!(evaluate(&json!(true), "is", &json!(true)), Ok(true));
        assert_eq!(evaluate(&json!(true), "is", &json!(1)), Ok(false));
        assert_eq!(evaluate(&json!([1, 2]), "contains", &json!(2.0)), Ok(true));
        assert_eq!(evaluate(&Value::Null, "empty", &json!("")), Ok(true));
        assert_eq!(evaluate(&Value::Null, "is", &json!("")), Ok(false));
        assert_eq!(
            evaluate(&json!({}), "contains", &json!("x")),
            Err("Invalid operator: contains".into())
        );
    }
}
