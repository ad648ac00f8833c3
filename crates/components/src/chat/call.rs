//! Calling a model for a component: one call with its deltas collected (reasoning
//! wrapped in `<think>`, usage counted), the native tool-call loop of an Agent
//! (`llm-and-tools.md` §2.5), and the lazy answer stream a Message drains (§3.3 B).

use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

use super::think::{Piece, ReasoningWrapper, ThinkSplitter, strip_think, strip_tool_call_blocks};
use canvas_engine::component::{ModelStream, StreamEnd};
use canvas_engine::{CResult, Chunk, ComponentError, NodeCx};
use canvas_llm::{ChatModel, ChatRequest, Delta, ERROR_MARK, LlmError, Message, Role, ToolCall};

/// Tools an Agent offers the model.
#[async_trait]
pub trait ToolBox: Send + Sync {
    /// The OpenAI `tools` entries, names indexed (`name_0`, `name_1`, …).
    fn schemas(&self) -> Vec<Value>;

    /// Run the tool called `name`. `Failed` is fed back to the model as the result
    /// text (RAGFlow never fails an Agent for a tool error); `Fatal` fails the Agent.
    async fn call(&self, cx: &NodeCx<'_>, name: &str, args: &Value) -> CResult<String>;

    /// The files (`_ARTIFACTS` entries: `name`, `url`, `mime_type`) the tools called for
    /// component `cx` produced since the last call of this, taken away.
    fn take_artifacts(&self, _cx: &NodeCx<'_>) -> Vec<Value> {
        Vec::new()
    }
}

/// The markdown RAGFlow appends to an Agent's answer for the files its tools produced
/// (`llm-and-tools.md` §4.7): after a blank line, `![name](url)` for images and
/// `[Download name](url)` for other files, leaving out links the answer already has.
/// Empty when there is nothing to add.
pub fn artifact_markdown(answer: &str, artifacts: &[Value]) -> String {
    let mut lines = Vec::new();
    for a in artifacts {
        let (Some(name), Some(url)) = (
            a.get("name").and_then(Value::as_str),
            a.get("url").and_then(Value::as_str),
        ) else {
            continue;
        };
        if url.is_empty() || answer.contains(url) {
            continue;
        }
        let mime = a.get("mime_type").and_then(Value::as_str).unwrap_or("");
        let lower = name.to_ascii_lowercase();
        let image = mime.starts_with("image/")
            || [".png", ".jpg", ".jpeg", ".svg", ".gif", ".webp"]
                .iter()
                .any(|e| lower.ends_with(e));
        lines.push(if image {
            format!("![{name}]({url})")
        } else {
            format!("[Download {name}]({url})")
        });
    }
    if lines.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", lines.join("\n"))
    }
}

/// A model failure as the component's error text.
pub fn failure(e: &LlmError) -> ComponentError {
    ComponentError::Failed(e.ragflow_text())
}

/// What a text callback says after each piece: read on, or stop reading the answer
/// (RAGFlow stops consuming a stream at an `**ERROR**` piece).
pub type Flow = ControlFlow<()>;

/// A text callback that reads everything.
pub fn read_all(_: &str) -> Flow {
    Flow::Continue(())
}

/// What one call answered.
#[derive(Default)]
struct Answer {
    /// Text, reasoning wrapped as `<think>…</think>`.
    text: String,
    /// Native tool calls.
    tool_calls: Vec<ToolCall>,
    /// The call failed: RAGFlow's `**ERROR**: CODE - text`, which RAGFlow's chat layer
    /// returns (or streams as the last chunk) in place of an answer.
    error: Option<String>,
    /// The text callback asked to stop reading.
    stopped: bool,
}

/// How a failed call goes on: a provider's failure is RAGFlow's `**ERROR**` answer; a
/// setup problem (a replay that lacks the call, an unusable script or configuration)
/// stops the run, since no answer can come and the user must fix it.
fn call_failure(e: LlmError) -> CResult<String> {
    match e {
        LlmError::Call { .. } => Ok(e.ragflow_text()),
        other => Err(ComponentError::Fatal(other.to_string())),
    }
}

/// One call: text is forwarded to `on_text` as it arrives and collected; the usage is
/// counted on `cx`. A provider's failure, at the start or midway, is forwarded and
/// returned as RAGFlow's error text.
async fn one_call(
    cx: &NodeCx<'_>,
    model: &dyn ChatModel,
    req: &ChatRequest,
    on_text: &mut (dyn FnMut(&str) -> Flow + Send),
) -> CResult<Answer> {
    let mut answer = Answer::default();
    // A call that fails before its first delta fails like one that breaks midway.
    let mut stream = match model.chat(req).await {
        Ok(s) => s,
        Err(e) => futures::stream::once(async { Err(e) }).boxed(),
    };
    let mut wrap = ReasoningWrapper::default();
    let mut push = |s: String, answer: &mut Answer| {
        if s.is_empty() {
            return Flow::Continue(());
        }
        answer.text.push_str(&s);
        on_text(&s)
    };
    while let Some(d) = stream.next().await {
        let flow = match d {
            Ok(Delta::Text(t)) => push(wrap.text(t), &mut answer),
            Ok(Delta::Reasoning(r)) => push(wrap.reasoning(&r), &mut answer),
            Ok(Delta::ToolCalls(calls)) => {
                answer.tool_calls.extend(calls);
                Flow::Continue(())
            }
            Ok(Delta::Usage(u)) => {
                cx.add_usage(u.prompt_tokens, u.completion_tokens);
                Flow::Continue(())
            }
            Err(e) => {
                let text = call_failure(e)?;
                let _ = push(text.clone(), &mut answer);
                answer.error = Some(text);
                return Ok(answer);
            }
        };
        if flow.is_break() {
            answer.stopped = true;
            return Ok(answer);
        }
    }
    if let Some(close) = wrap.finish() {
        if push(close, &mut answer).is_break() {
            answer.stopped = true;
        }
    }
    Ok(answer)
}

/// A non-streamed answer as RAGFlow's model layer returns it: text after the last
/// `</think>`, `<tool_call>` blocks removed; a failed call answers its `**ERROR**` text.
pub async fn complete(
    cx: &NodeCx<'_>,
    model: &dyn ChatModel,
    req: &ChatRequest,
) -> CResult<String> {
    let a = one_call(cx, model, req, &mut read_all).await?;
    if let Some(error) = a.error {
        return Ok(error);
    }
    Ok(strip_tool_call_blocks(&strip_think(&a.text)).into_owned())
}

/// The conversation with tools: up to `max_rounds + 1` requests offering the tools;
/// each round's calls run concurrently and their results are fed back; when the rounds
/// are used up, "Exceed max rounds: N" and one last request without tools. Returns
/// the raw text of every round (reasoning in `<think>`), or, when a call fails, only its
/// `**ERROR**` text (as RAGFlow's chat layer returns it). With `announce`, each tool call
/// is announced in the text as RAGFlow's stream does. `on_text` may stop the
/// conversation: what was received until then is returned.
pub async fn converse(
    cx: &NodeCx<'_>,
    model: &dyn ChatModel,
    mut req: ChatRequest,
    tools: Option<&dyn ToolBox>,
    max_rounds: usize,
    announce: bool,
    on_text: &mut (dyn FnMut(&str) -> Flow + Send),
) -> CResult<String> {
    let tools = tools.filter(|_| model.supports_tools());
    let schemas = tools.map(|t| t.schemas()).unwrap_or_default();
    let Some(tools) = tools.filter(|_| !schemas.is_empty()) else {
        let a = one_call(cx, model, &req, on_text).await?;
        return Ok(a.error.unwrap_or(a.text));
    };
    req.tools = schemas;
    let mut full = String::new();
    for _ in 0..=max_rounds {
        let a = one_call(cx, model, &req, on_text).await?;
        if let Some(error) = a.error {
            return Ok(error);
        }
        full.push_str(&a.text);
        if a.stopped || a.tool_calls.is_empty() {
            return Ok(full);
        }
        if announce {
            for c in &a.tool_calls {
                let note = format!("<think>Running the {} tool...</think>", c.name);
                full.push_str(&note);
                if on_text(&note).is_break() {
                    return Ok(full);
                }
            }
        }
        let results =
            futures::future::join_all(a.tool_calls.iter().map(|c| run_tool(cx, tools, c))).await;
        req.messages.push(Message {
            role: Role::Assistant,
            content: Value::Null,
            tool_calls: a.tool_calls.clone(),
            tool_call_id: None,
        });
        for (c, r) in a.tool_calls.iter().zip(results) {
            let text = match r {
                Ok(s) => s,
                Err(ComponentError::Failed(m)) => m,
                // What the model cannot fix (a tool this build does not run, a server
                // the user must allow) stops the run.
                Err(fatal @ ComponentError::Fatal(_)) => return Err(fatal),
            };
            req.messages.push(Message {
                role: Role::Tool,
                content: Value::String(text),
                tool_calls: Vec::new(),
                tool_call_id: Some(c.id.clone()),
            });
        }
    }
    req.messages.push(Message::text(
        Role::User,
        format!("Exceed max rounds: {max_rounds}"),
    ));
    req.tools.clear();
    let a = one_call(cx, model, &req, on_text).await?;
    if let Some(error) = a.error {
        return Ok(error);
    }
    full.push_str(&a.text);
    Ok(full)
}

async fn run_tool(cx: &NodeCx<'_>, tools: &dyn ToolBox, call: &ToolCall) -> CResult<String> {
    let args = match &call.arguments {
        Value::Object(_) => call.arguments.clone(),
        Value::String(s) => match super::json_repair::parse_lenient(s) {
            Some(v @ Value::Object(_)) => v,
            _ => {
                return Err(ComponentError::Failed(format!(
                    "Tool call error: the arguments of {} are not a JSON object: {s}",
                    call.name
                )));
            }
        },
        Value::Null => json!({}),
        other => {
            return Err(ComponentError::Failed(format!(
                "Tool call error: the arguments of {} are not a JSON object: {other}",
                call.name
            )));
        }
    };
    tools.call(cx, &call.name, &args).await
}

/// A streamed answer left for a Message: the model is called when the Message pulls
/// it; pieces go through RAGFlow's think splitter; at the end the producer's `content`
/// holds the whole text (markers included).
///
/// A piece holding `**ERROR**` stops the stream (`llm-and-tools.md` §3.3 B, §3.4 item
/// 8): with a `comment` default, the default is streamed and becomes `content`; else an
/// Agent with tools streams the error piece and keeps it in `content` and `_ERROR`,
/// while an LLM (or a tool-less Agent) streams nothing more and sets only `_ERROR`:
/// its `content` stays an unconsumed stream, so it never gets its `node_finished`.
pub struct AnswerStream {
    /// The model to call.
    pub model: Arc<dyn ChatModel>,
    /// The prepared request.
    pub req: ChatRequest,
    /// The Agent's tools, if any.
    pub tools: Option<Arc<dyn ToolBox>>,
    /// Rounds of tool calls allowed.
    pub max_rounds: usize,
    /// The exception default text that replaces a failed answer.
    pub comment_default: Option<Value>,
}

/// The pieces of a stream as `content` gathers them and the Message receives them.
fn forward(
    pieces: impl IntoIterator<Item = Piece>,
    content: &mut String,
    emit: &mut (dyn FnMut(Chunk) + Send),
) {
    for p in pieces {
        match p {
            Piece::Text(t) => {
                content.push_str(&t);
                emit(Chunk::Text(t));
            }
            Piece::StartThink => {
                content.push_str("<think>");
                emit(Chunk::StartThink);
            }
            Piece::EndThink => {
                content.push_str("</think>");
                emit(Chunk::EndThink);
            }
        }
    }
}

#[async_trait]
impl ModelStream for AnswerStream {
    async fn run(
        self: Box<Self>,
        cx: &NodeCx<'_>,
        emit: &mut (dyn FnMut(Chunk) + Send),
    ) -> CResult<StreamEnd> {
        let with_tools = self.tools.is_some();
        let shows_error = with_tools && self.comment_default.is_none();
        let mut splitter = ThinkSplitter::default();
        let mut content = String::new();
        // The piece that carried `**ERROR**`.
        let mut failed: Option<String> = None;
        // The pieces of one chunk; the buffer is reused from chunk to chunk.
        let mut pieces = Vec::new();
        let res = {
            let mut on_text = |t: &str| {
                splitter.push(&strip_tool_call_blocks(t), &mut pieces);
                if let Some(at) = pieces
                    .iter()
                    .position(|p| matches!(p, Piece::Text(x) if x.contains(ERROR_MARK)))
                {
                    let rest = pieces.split_off(at);
                    forward(pieces.drain(..), &mut content, &mut *emit);
                    if let Some(Piece::Text(e)) = rest.into_iter().next() {
                        if shows_error {
                            forward(vec![Piece::Text(e.clone())], &mut content, &mut *emit);
                        }
                        failed = Some(e);
                    }
                    return Flow::Break(());
                }
                forward(pieces.drain(..), &mut content, &mut *emit);
                Flow::Continue(())
            };
            converse(
                cx,
                self.model.as_ref(),
                self.req,
                self.tools.as_deref(),
                self.max_rounds,
                true,
                &mut on_text,
            )
            .await
        };
        if let Some(error) = failed {
            if let Some(d) = self.comment_default {
                forward(
                    vec![Piece::Text(canvas_engine::template::plain_text(&d))],
                    &mut content,
                    emit,
                );
                cx.set_output("content", d);
                return Ok(StreamEnd::Done);
            }
            cx.set_output("_ERROR", json!(error));
            if with_tools {
                cx.set_output("content", Value::String(content));
                return Ok(StreamEnd::Done);
            }
            return Ok(StreamEnd::Abandoned);
        }
        res?;
        forward(splitter.finish(), &mut content, emit);
        let artifacts = self
            .tools
            .as_ref()
            .map(|t| t.take_artifacts(cx))
            .unwrap_or_default();
        let extra = artifact_markdown(&content, &artifacts);
        if !extra.is_empty() {
            forward(vec![Piece::Text(extra)], &mut content, emit);
        }
        cx.set_output("content", Value::String(content));
        Ok(StreamEnd::Done)
    }
}

#[cfg(test)]
mod artifact_tests {
    use super::*;

    #[test]
    fn artifacts_become_images_and_download_links_once() {
        let arts = [
            json!({"name": "chart.png", "url": "file:///o/chart.png", "mime_type": "image/png"}),
            json!({"name": "data.csv", "url": "file:///o/data.csv", "mime_type": "text/csv"}),
            json!({"name": "seen.pdf", "url": "file:///o/seen.pdf"}),
            json!({"name": "no-url"}),
        ];
        assert_eq!(
            artifact_markdown("see file:///o/seen.pdf", &arts),
            "\n\n![chart.png](file:///o/chart.png)\n[Download data.csv](file:///o/data.csv)"
        );
        assert_eq!(artifact_markdown("x", &[]), "");
    }
}
