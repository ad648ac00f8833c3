//! Iteration: checks its list and hands over to its IterationItem (`engine.md` §7.5).

use async_trait::async_trait;
use serde_json::Value;
use std::borrow::Cow;

use canvas_engine::{BuildError, CResult, Component, ContainerKind, NodeCx, Role};
use canvas_pyrt::{Object, py_type};

/// Build an Iteration.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let items_ref = params
        .get("items_ref")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Ok(Box::new(Iteration { items_ref }))
}

/// The Iteration component.
pub struct Iteration {
    items_ref: String,
}

/// The message RAGFlow gives when `items_ref` is not a list.
pub fn not_a_list(items_ref: &str, v: &Value) -> String {
    format!(
        "{items_ref} must be an array, but its type is {}",
        py_type(v)
    )
}

#[async_trait]
impl Component for Iteration {
    fn instant(&self) -> bool {
        true
    }

    fn role(&self) -> Role {
        Role::Container(ContainerKind::OverList)
    }

    fn thoughts(&self, cx: &NodeCx<'_>) -> Cow<'static, str> {
        // RAGFlow calls len() here and crashes on values without one; we count 0.
        // Measured in place, not copied.
        let n = cx
            .resolve_with(&self.items_ref, |v| match v {
                Value::Array(a) => a.len(),
                Value::String(s) => s.chars().count(),
                Value::Object(o) => o.len(),
                _ => 0,
            })
            .unwrap_or(0);
        format!("Iterating over {n} items.").into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        // Re-entering an Iteration (e.g. inside a Loop) starts over: RAGFlow keeps the
        // old counter and collected outputs (docs/differences.md).
        if let Some(start) = cx.canvas().start_of(cx.id()) {
            cx.set_counter(start, 0);
        }
        for o in &cx.node().declared_outputs {
            cx.set_output(o, Value::Null);
        }
        let not_list = cx.resolve_with(&self.items_ref, |items| {
            (!items.is_array()).then(|| not_a_list(&self.items_ref, items))
        })?;
        if let Some(msg) = not_list {
            // Set directly, not raised: a "comment" default does not replace it.
            cx.set_output("_ERROR", Value::String(msg));
        }
        Ok(())
    }
}
