//! A tool placed on the canvas: the engine's `Component` over a [`Tool`]. Its meta
//! parameters are its inputs (defaults such as `{sys.query}` resolved by the
//! scheduler, RAGFlow's `get_input`); its return value is not used, only its outputs.
//! A failure is RAGFlow's `ToolBase.invoke`: the text is stored in `_ERROR` by the tool
//! itself (`engine.md` §2.3), so the canvas's exception handling applies as for any
//! error, but `exception_method: comment` shows its default as a `message` instead of
//! putting it in `result` (that fallback is `ComponentBase`'s, which tools replace).

use async_trait::async_trait;
use serde_json::{Value, json};
use std::borrow::Cow;

use super::{Call, Tool};
use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx, ParamError};
use canvas_pyrt::Object;

/// A tool as a canvas node, and what its [`Tool::check`] said of the node's parameters
/// (the node does not keep them: the run hands them to each call).
pub struct ToolNode(pub Box<dyn Tool>, Result<(), ParamError>);

impl ToolNode {
    /// Build with `build` and wrap.
    pub fn build(
        build: super::ToolBuilder,
        params: &Object,
    ) -> Result<Box<dyn Component>, BuildError> {
        let tool = build(params)?;
        let checked = tool.check(params);
        Ok(Box::new(ToolNode(tool, checked)))
    }

    /// The node's arguments as RAGFlow's `get_input` gives them, without recording
    /// them (for `thoughts`, which runs before the scheduler resolves them).
    fn args(&self, cx: &NodeCx<'_>) -> Object {
        let mut args = Object::new();
        for p in &self.0.meta().parameters {
            let Some(v) = cx.param(p.name).filter(|v| !v.is_null()) else {
                continue;
            };
            if let Ok(v) = cx.input_value(v) {
                args.insert(p.name.to_string(), v);
            }
        }
        args
    }
}

#[async_trait]
impl Component for ToolNode {
    fn default_outputs(&self) -> &'static [&'static str] {
        self.0.default_outputs()
    }

    fn check(&self) -> Result<(), ParamError> {
        self.1.clone()
    }

    fn input_params(&self) -> Vec<(String, Value)> {
        self.0.meta().input_params()
    }

    fn thoughts(&self, cx: &NodeCx<'_>) -> Cow<'static, str> {
        self.0.thoughts(&self.args(cx)).into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let call = Call::node(cx);
        match self.0.run(&call, cx.kwargs()).await {
            Ok(_) => Ok(()),
            Err(ComponentError::Failed(m)) => {
                call.set_output("_ERROR", json!(m));
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
