//! UserFillUp: a form the run pauses on (`engine.md` §6). Invoked without answers it
//! renders its tips and clears its fields; invoked with the run's inputs it stores them.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::borrow::Cow;

use super::form::store_answers;
#[cfg(test)]
use canvas_engine::forms::field_satisfied;
use canvas_engine::{BuildError, CResult, Component, NodeCx, Role};
use canvas_pyrt::{Object, py_json, py_str, truthy};

/// Build a UserFillUp (RAGFlow's `check()` always passes).
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let enable_tips = params.get("enable_tips").is_none_or(truthy);
    let tips = match params.get("tips") {
        None => "Please fill up the form".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => String::new(),
        Some(other) => py_str(other),
    };
    Ok(Box::new(UserFillUp { enable_tips, tips }))
}

/// The UserFillUp component.
pub struct UserFillUp {
    enable_tips: bool,
    tips: String,
}

fn is_optional_file(def: &Value) -> bool {
    let ty = def
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    ty.contains("file")
        && def
            .get("optional")
            .and_then(Value::as_bool)
            .unwrap_or(false)
}

impl UserFillUp {
    /// Routine (e): tips with references as text (lists joined by `,`, other
    /// non-strings as JSON); surrounding spaces kept.
    fn render_tips(&self, cx: &NodeCx<'_>) -> CResult<String> {
        let mut tips = self.tips.clone();
        for e in cx.collect_refs(&self.tips) {
            let v = cx.resolve(&e.exp)?;
            let s = match &v {
                v if !truthy(v) => String::new(),
                Value::String(s) => s.clone(),
                Value::Array(a) => a.iter().map(py_str).collect::<Vec<_>>().join(","),
                other => py_json(other),
            };
            tips = tips.replace(&format!("{{{}}}", e.raw), &s);
        }
        Ok(tips)
    }
}

#[async_trait]
impl Component for UserFillUp {
    fn role(&self) -> Role {
        Role::Form
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "Waiting for your answers.".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        if self.enable_tips {
            let tips = self.render_tips(cx)?;
            cx.set_output("tips", json!(tips));
        }
        let supplied = cx.run_inputs();
        if supplied.is_empty() {
            // Asked without answers: the form starts empty (optional files excepted).
            let fields = cx
                .param("inputs")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for (k, def) in &fields {
                if !is_optional_file(def) {
                    cx.set_input(k, Value::Null);
                }
            }
            return Ok(());
        }
        store_answers(cx, supplied);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;

    #[test]
    fn satisfaction_follows_ragflow() {
        let line = json!({"type": "line", "optional": true});
        assert!(
            !field_satisfied(&line, &Value::Null),
            "optional text fields are still asked"
        );
        assert!(field_satisfied(&line, &json!("")));
        let file = json!({"type": "file", "optional": true});
        assert!(field_satisfied(&file, &Value::Null));
        assert!(!field_satisfied(&file, &json!([])));
        let req = json!({"type": "file", "optional": false});
        assert!(!field_satisfied(&req, &Value::Null));
        assert!(field_satisfied(&req, &json!(["a.pdf"])));
    }

    #[test]
    fn tips_keep_spaces_and_join_lists() {
        // engine.md §9 item 44.
        let h = Harness::single(
            &crate::Registry,
            "UserFillUp:F",
            "UserFillUp",
            json!({"tips": "Plan: {begin@plan}. OK? {begin@l} {begin@o}", "inputs": {"ok": {"type": "line"}}}),
            json!({}),
        );
        h.set_output("begin", "plan", json!("go"));
        h.set_output("begin", "l", json!(["a", 1]));
        h.set_output("begin", "o", json!({"k": 1}));
        h.invoke("UserFillUp:F").unwrap();
        assert_eq!(
            h.output("UserFillUp:F", "tips"),
            json!("Plan: go. OK? a,1 {\"k\": 1}")
        );
        assert_eq!(h.input("UserFillUp:F", "ok"), Value::Null);
    }
}
