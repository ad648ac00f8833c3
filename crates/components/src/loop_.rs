//! Loop: sets its loop variables and hands over to its LoopItem (`engine.md` §7.6).

use async_trait::async_trait;
use serde_json::Value;
use std::borrow::Cow;

use canvas_engine::{BuildError, CResult, Component, ComponentError, ContainerKind, NodeCx, Role};
use canvas_pyrt::Object;

/// Build a Loop.
pub fn build(_params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(Loop))
}

/// The Loop component.
pub struct Loop;

fn blank(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    }
}

#[async_trait]
impl Component for Loop {
    fn instant(&self) -> bool {
        true
    }

    fn role(&self) -> Role {
        Role::Container(ContainerKind::Breakable)
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "Starting the loop.".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        // Entering a Loop starts its pass count over: RAGFlow keeps the old counter, so a
        // second entry allows one pass too many (docs/differences.md).
        if let Some(start) = cx.canvas().start_of(cx.id()) {
            cx.set_counter(start, 0);
        }
        let vars = cx
            .param("loop_variables")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let incomplete = || ComponentError::Failed("Loop Variable is not complete.".into());
        for v in &vars {
            let (name, mode) = (v.get("variable"), v.get("input_mode"));
            if blank(name) || blank(mode) || blank(v.get("type")) {
                return Err(incomplete());
            }
            let name = name.and_then(Value::as_str).ok_or_else(incomplete)?;
            let value = v.get("value");
            match mode.and_then(Value::as_str) {
                Some("variable") => {
                    if blank(value) {
                        return Err(incomplete());
                    }
                    let exp = value.and_then(Value::as_str).ok_or_else(incomplete)?;
                    let resolved = cx.resolve(exp)?;
                    cx.set_output(name, resolved);
                }
                Some("constant") => match value {
                    None | Some(Value::Null) => return Err(incomplete()),
                    Some(v) => cx.set_output(name, v.clone()),
                },
                _ => return Err(incomplete()),
            }
        }
        Ok(())
    }
}
