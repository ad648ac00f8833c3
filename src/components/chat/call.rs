//! Calling a model for a component: one call with its deltas collected (reasoning
//! wrapped in `<think>`, usage counted), the native tool-call loop of an Agent
//! (`llm-and-tools.md` §2.5), and the lazy answer stream a Message drains (§3.3 B).

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

use super::think::{Piece, ReasoningWrapper, ThinkSplitter, strip_think, strip_tool_call_blocks};
use crate::engine::component::ModelStream;
use crate::engine::{CResult, Chunk, ComponentError, NodeCx};
use crate::llm::{ChatModel, ChatRequest, Delta, LlmError, Message, Role, ToolCall};

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

/// What one call answered.
struct Answer {
    /// Text, reasoning wrapped as `<think>…</think>`.
    text: String,
    /// Native tool calls.
    tool_calls: Vec<ToolCall>,
}

/// One call: deltas are forwarded to `on_text` as they arrive and collected; the
/// usage is counted on `cx`.
async fn one_call(
    cx: &NodeCx<'_>,
    model: &dyn ChatModel,
    req: &ChatRequest,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> CResult<Answer> {
    let mut stream = model.chat(req).await.map_err(|e| failure(&e))?;
    let mut wrap = ReasoningWrapper::default();
    let mut answer = Answer {
        text: String::new(),
        tool_calls: Vec::new(),
    };
    let mut push = |s: String, answer: &mut Answer| {
        if !s.is_empty() {
            on_text(&s);
            answer.text.push_str(&s);
        }
    };
    while let Some(d) = stream.next().await {
        match d {
            Ok(Delta::Text(t)) => push(wrap.text(&t), &mut answer),
            Ok(Delta::Reasoning(r)) => push(wrap.reasoning(&r), &mut answer),
            Ok(Delta::ToolCalls(calls)) => answer.tool_calls.extend(calls),
            Ok(Delta::Usage(u)) => cx.add_usage(u.prompt_tokens, u.completion_tokens),
            Err(e) => return Err(failure(&e)),
        }
    }
    if let Some(close) = wrap.finish() {
        push(close, &mut answer);
    }
    Ok(answer)
}

/// A non-streamed answer as RAGFlow's model layer returns it: text after the last
/// `</think>`, `<tool_call>` blocks removed.
pub async fn complete(
    cx: &NodeCx<'_>,
    model: &dyn ChatModel,
    req: &ChatRequest,
) -> CResult<String> {
    let a = one_call(cx, model, req, &mut |_| {}).await?;
    Ok(strip_tool_call_blocks(&strip_think(&a.text)))
}

/// The conversation with tools: up to `max_rounds + 1` requests offering the tools;
/// each round's calls run concurrently and their results are fed back; when the rounds
/// are used up, "Exceed max rounds: N" and one last request without tools. Returns
/// the raw text of every round (reasoning in `<think>`). With `announce`, each tool
/// call is announced in the text as RAGFlow's stream does.
pub async fn converse(
    cx: &NodeCx<'_>,
    model: &dyn ChatModel,
    mut req: ChatRequest,
    tools: Option<&dyn ToolBox>,
    max_rounds: usize,
    announce: bool,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> CResult<String> {
    let tools = tools.filter(|_| model.supports_tools());
    let schemas = tools.map(|t| t.schemas()).unwrap_or_default();
    let Some(tools) = tools.filter(|_| !schemas.is_empty()) else {
        return Ok(one_call(cx, model, &req, on_text).await?.text);
    };
    req.tools = schemas;
    let mut full = String::new();
    for _ in 0..=max_rounds {
        let a = one_call(cx, model, &req, on_text).await?;
        full.push_str(&a.text);
        if a.tool_calls.is_empty() {
            return Ok(full);
        }
        if announce {
            for c in &a.tool_calls {
                let note = format!("<think>Running the {} tool...</think>", c.name);
                on_text(&note);
                full.push_str(&note);
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
                Err(ComponentError::Fatal(m)) => return Err(ComponentError::Failed(m)),
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

#[async_trait]
impl ModelStream for AnswerStream {
    async fn run(
        self: Box<Self>,
        cx: &NodeCx<'_>,
        emit: &mut (dyn FnMut(Chunk) + Send),
    ) -> CResult<()> {
        let mut splitter = ThinkSplitter::default();
        let mut content = String::new();
        let mut forward = |pieces: Vec<Piece>, content: &mut String| {
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
        };
        let res = {
            let mut on_text = |t: &str| {
                let pieces = splitter.push(&strip_tool_call_blocks(t));
                forward(pieces, &mut content);
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
        let tail = splitter.finish();
        forward(tail, &mut content);
        let artifacts = self
            .tools
            .as_ref()
            .map(|t| t.take_artifacts(cx))
            .unwrap_or_default();
        match res {
            Ok(_) => {
                let extra = artifact_markdown(&content, &artifacts);
                if !extra.is_empty() {
                    forward(vec![Piece::Text(extra)], &mut content);
                }
                cx.set_output("content", json!(content));
            }
            Err(e) => match self.comment_default {
                Some(d) => {
                    let text = crate::engine::template::plain_text(&d);
                    forward(vec![Piece::Text(text)], &mut content);
                    cx.set_output("content", d);
                }
                None => {
                    cx.set_output("content", json!(content));
                    cx.set_output("_ERROR", json!(e.to_string()));
                }
            },
        }
        Ok(())
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
