//! Begin: the entry of every run; stores the run's inputs as its outputs
//! (`engine.md` §6.5).

use async_trait::async_trait;
use serde_json::Value;

use super::form::store_answers;
use canvas_engine::{BuildError, CResult, Component, NodeCx, Role};
use canvas_pyrt::Object;

/// Build a Begin; `mode` must be conversational, task or Webhook.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    if let Some(m) = params.get("mode").and_then(Value::as_str) {
        if !["conversational", "task", "Webhook"].contains(&m) {
            return Err(BuildError::Params(format!(
                "[Begin] mode {m} is not supported, it should be in ['conversational', 'task', 'Webhook']"
            )));
        }
    }
    Ok(Box::new(Begin))
}

/// The Begin component.
pub struct Begin;

#[async_trait]
impl Component for Begin {
    fn instant(&self) -> bool {
        true
    }

    fn role(&self) -> Role {
        Role::Entry
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let declared = cx
            .param("inputs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let supplied = cx.run_inputs();
        let runtime: Object = if !supplied.is_empty() {
            supplied.clone()
        } else {
            // With no inputs, a single declared field takes the query.
            let q = cx.resolve("sys.query").unwrap_or(Value::Null);
            match (&q, declared.len()) {
                (Value::String(s), 1) if !s.is_empty() => {
                    let key = declared.keys().next().cloned().unwrap_or_default();
                    Object::from_iter([(key, q.clone())])
                }
                _ => Object::new(),
            }
        };
        store_answers(cx, &runtime);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use canvas_engine::testkit::Harness;
    use serde_json::json;

    #[test]
    fn one_declared_field_takes_the_query() {
        let h = Harness::new(
            &crate::Registry,
            json!({"components": {"begin": {"obj": {"component_name": "Begin",
            "params": {"mode": "task", "inputs": {"topic": {"type": "line"}}}}}}}),
        );
        h.set_global("sys.query", json!("code"));
        h.invoke("begin").unwrap();
        assert_eq!(h.output("begin", "topic"), json!("code"));
    }
}
