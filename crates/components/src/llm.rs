//! LLM: one model call with the canvas's prompts and history; its answer is streamed
//! into a downstream Message, or returned as `content`, or parsed into `structured`
//! (`llm-and-tools.md` §3).

use async_trait::async_trait;
use std::borrow::Cow;

use super::chat::answer::{Ask, answer_into_outputs};
use super::chat::params::LlmParams;
use super::chat::prepare;
use canvas_engine::refs::RefElement;
use canvas_engine::{BuildError, CResult, Component, NodeCx};
use canvas_pyrt::Object;

/// Build an LLM from its DSL parameters.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(Llm {
        params: LlmParams::parse(params, "LLM", 13)?,
    }))
}

/// The LLM component.
pub struct Llm {
    params: LlmParams,
}

#[async_trait]
impl Component for Llm {
    fn thoughts(&self, cx: &NodeCx<'_>) -> Cow<'static, str> {
        prepare::thoughts(cx, &self.params).into()
    }

    fn text_refs(&self, cx: &NodeCx<'_>) -> Option<Vec<RefElement>> {
        Some(cx.collect_refs(&self.params.texts()))
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        answer_into_outputs(
            cx,
            Ask {
                params: &self.params,
                prompts: None,
                tools: None,
                max_rounds: 0,
                record: true,
            },
        )
        .await
    }
}
