//! The three ways an LLM (or an Agent) answers (`llm-and-tools.md` §3.3, §4.5):
//! structured output (JSON following a schema), a lazy stream a downstream Message
//! drains, or a plain text answer.

use std::sync::Arc;

use serde_json::{Value, json};

use super::call::{
    AnswerStream, ToolBox, artifact_markdown, complete, converse, failure, read_all,
};
use super::json_repair::{clean_structured_answer, parse_lenient};
use super::params::{LlmParams, Prompt};
use super::prepare::prepare;
use super::prompts::structured_output_prompt;
use super::think::{strip_think, strip_tool_call_blocks};
use canvas_engine::{CResult, ComponentError, NodeCx};
use canvas_llm::{ChatModel, ChatRequest, ERROR_MARK, Message, Role};

/// How a component asks for its answer.
pub struct Ask<'p> {
    /// Its parameters.
    pub params: &'p LlmParams,
    /// Prompts replacing the configured ones (a sub-Agent called as a tool).
    pub prompts: Option<&'p [Prompt]>,
    /// Tools offered (an Agent with tools).
    pub tools: Option<Arc<dyn ToolBox>>,
    /// Rounds of tool calls allowed.
    pub max_rounds: usize,
    /// Record variable values as the component's inputs.
    pub record: bool,
}

/// The model an `llm_id` names, or the component's error.
pub fn model_for(cx: &NodeCx<'_>, llm_id: &str) -> CResult<Arc<dyn ChatModel>> {
    cx.model(llm_id).map_err(|e| failure(&e))
}

fn request(p: &LlmParams, messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: p.llm_id.clone(),
        messages,
        tools: Vec::new(),
        params: p.sampling.clone(),
        retry: p.retry,
    }
}

/// Answer into the component's outputs: `structured` when a schema is set, else a
/// stream left for the downstream Message (when there is one and no exception goto),
/// else `content`. A failure with an exception default puts the default in `content`.
pub async fn answer_into_outputs(cx: &NodeCx<'_>, ask: Ask<'_>) -> CResult<()> {
    let p = ask.params;
    let res = if p.schema.is_some() {
        structured(cx, &ask).await
    } else if cx.feeds_message() && !p.has_goto {
        stream(cx, &ask)
    } else {
        plain(cx, &ask).await
    };
    match (res, &p.comment_default) {
        (Err(ComponentError::Failed(_)), Some(d)) => {
            cx.set_output("content", d.clone());
            Ok(())
        }
        (res, _) => res,
    }
}

/// The plain path (`llm-and-tools.md` §3.3 C, §4.5 step 6): an answer holding
/// `**ERROR**` is the component's error. An LLM (or an Agent without tools) asks again
/// at once, `max_retries` more times; an Agent with tools does not.
async fn plain(cx: &NodeCx<'_>, ask: &Ask<'_>) -> CResult<()> {
    let attempts = if ask.tools.is_some() {
        1
    } else {
        ask.params.retry.max_retries.saturating_add(1)
    };
    let mut error = String::new();
    for _ in 0..attempts {
        let answer = text(cx, ask).await?;
        if answer.contains(ERROR_MARK) {
            error = answer;
            continue;
        }
        cx.set_output("content", json!(answer));
        return Ok(());
    }
    Err(ComponentError::Failed(error))
}

/// A plain answer: the conversation (with tools when given), think text and tool-call
/// blocks removed; a failed call answers its `**ERROR**` text, as RAGFlow's chat layer.
pub async fn text(cx: &NodeCx<'_>, ask: &Ask<'_>) -> CResult<String> {
    let p = ask.params;
    let model = model_for(cx, &p.llm_id)?;
    let prepared = prepare(cx, p, ask.prompts, ask.record, model.context_length())?;
    let req = request(p, prepared.messages);
    let raw = converse(
        cx,
        model.as_ref(),
        req,
        ask.tools.as_deref(),
        ask.max_rounds,
        false,
        &mut read_all,
    )
    .await?;
    let mut answer = strip_tool_call_blocks(&strip_think(&raw)).into_owned();
    if let Some(tools) = &ask.tools {
        let extra = artifact_markdown(&answer, &tools.take_artifacts(cx));
        answer.push_str(&extra);
    }
    Ok(answer)
}

/// Leave the answer as a stream for the Message downstream: the messages are prepared
/// now (with the variables of now), the model is called when the Message pulls.
fn stream(cx: &NodeCx<'_>, ask: &Ask<'_>) -> CResult<()> {
    let p = ask.params;
    let model = model_for(cx, &p.llm_id)?;
    let prepared = prepare(cx, p, ask.prompts, ask.record, model.context_length())?;
    cx.set_output("content", Value::Null);
    cx.defer_stream(Box::new(AnswerStream {
        model,
        req: request(p, prepared.messages),
        tools: ask.tools.clone(),
        max_rounds: ask.max_rounds,
        comment_default: p.comment_default.clone(),
    }));
    Ok(())
}

/// Structured output: the schema prompt is added to the system prompt; the answer is
/// cleaned (think text, code fences) and parsed leniently into `structured`. A reply
/// that does not parse is asked again, up to `max_retries` more times; with tools, the
/// re-ask is a formatting call on the previous answer.
async fn structured(cx: &NodeCx<'_>, ask: &Ask<'_>) -> CResult<()> {
    let p = ask.params;
    let Some(schema) = &p.schema else {
        return Ok(());
    };
    let model = model_for(cx, &p.llm_id)?;
    let schema_prompt = structured_output_prompt(schema);
    let mut prepared = prepare(cx, p, ask.prompts, ask.record, model.context_length())?;
    match prepared.messages.first_mut() {
        Some(m) if m.role == Role::System => {
            let s = format!("{}\n{schema_prompt}", m.text_content());
            m.content = Value::String(s);
        }
        _ => prepared
            .messages
            .insert(0, Message::text(Role::System, schema_prompt.clone())),
    }
    let req = request(p, prepared.messages);
    let mut last = String::new();
    let mut error = String::new();
    for attempt in 0..=p.retry.max_retries {
        let raw = if attempt == 0 || ask.tools.is_none() || last.is_empty() {
            let raw = converse(
                cx,
                model.as_ref(),
                req.clone(),
                ask.tools.as_deref(),
                ask.max_rounds,
                false,
                &mut read_all,
            )
            .await?;
            strip_tool_call_blocks(&strip_think(&raw)).into_owned()
        } else {
            let fix = request(
                p,
                vec![
                    Message::text(
                        Role::System,
                        format!(
                            "{schema_prompt}\nIMPORTANT: Output ONLY valid JSON. No markdown, no extra text."
                        ),
                    ),
                    Message::text(Role::User, last.clone()),
                ],
            );
            complete(cx, model.as_ref(), &fix).await?
        };
        // A failed call is asked again as it is (RAGFlow's loop `continue`s).
        if raw.contains(ERROR_MARK) {
            error = raw;
            continue;
        }
        if let Some(v) = parse_lenient(&clean_structured_answer(&raw)) {
            cx.set_output("structured", v);
            return Ok(());
        }
        let head: String = raw.chars().take(200).collect();
        error = format!("The answer can't be parsed as JSON following the output schema: {head}");
        last = raw;
    }
    Err(ComponentError::Failed(error))
}
