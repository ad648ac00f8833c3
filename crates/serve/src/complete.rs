//! The completion endpoints and how each frames a question's events:
//!
//! - `POST /api/v1/agents/chat/completions` (RAGFlow 0.27's): every event, as `canvas
//!   run --format sse` prints it, with the `session_id` RAGFlow's API adds;
//! - `POST /api/v1/agents/{agent_id}/completions` (the Python SDK's): the `message` and
//!   `message_end` events (and `node_finished` with `return_trace`), as RAGFlow filters
//!   them;
//! - `POST /api/v1/agents_openai/{agent_id}/chat/completions` (and the first with
//!   `"openai-compatible": true`): OpenAI's chat-completion shape.
//!
//! Streamed, each ends with `data:[DONE]`; not streamed, RAGFlow's last event with the
//! whole answer as its `content` (or OpenAI's `chat.completion`).

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use canvas_pyrt::Object;
use canvas_runner::Ended;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::App;
use super::ask::{Out, Question};
use super::body::{JsonBody, opt_str, truthy};
use super::files::sys_files;
use super::reply::{ApiError, Reply, ok};

/// How a question's events reach the client.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Every event.
    Events,
    /// The SDK's: messages, and traces when asked.
    Sdk { trace: bool },
    /// OpenAI's chat completions.
    OpenAi,
}

/// `POST /api/v1/agents/{agent_id}/completions`: `question`, `stream` (default true),
/// `session_id`, `inputs`, `user_id`, `files`, `return_trace`.
pub(crate) async fn sdk(
    State(app): State<Arc<App>>,
    Path(agent_id): Path<String>,
    JsonBody(req): JsonBody,
) -> Reply {
    let q = question(&req, agent_id, &["question", "query"])?;
    let mode = Mode::Sdk {
        trace: truthy(&req, "return_trace", false),
    };
    respond(&app, q, mode, truthy(&req, "stream", true)).await
}

/// `POST /api/v1/agents/chat/completions`: `agent_id`, `query` (or `question`),
/// `stream` (default true), `session_id`, `inputs`, `user_id`, `files`; with
/// `"openai-compatible": true`, `messages` as OpenAI's endpoint takes them. Without an
/// `agent_id`, and with an agent whose id is `chat`, it is the SDK's call to that agent.
pub(crate) async fn chat(State(app): State<Arc<App>>, JsonBody(req): JsonBody) -> Reply {
    let Some(agent_id) = opt_str(&req, "agent_id")?.filter(|a| !a.is_empty()) else {
        // The SDK's path for an agent whose id is `chat` is this one.
        if app.agent("chat")?.is_some() {
            return sdk(State(app), Path("chat".to_string()), JsonBody(req)).await;
        }
        return Err(ApiError::argument("`agent_id` is required."));
    };
    if truthy(&req, "openai-compatible", false) {
        return openai_answer(&app, agent_id, &req).await;
    }
    let q = question(&req, agent_id, &["query", "question"])?;
    respond(&app, q, Mode::Events, truthy(&req, "stream", true)).await
}

/// `POST /api/v1/agents_openai/{agent_id}/chat/completions`: OpenAI's `model`,
/// `messages` (the last user message is the question) and `stream`; the session is
/// `session_id` (or `id`, or `metadata.id`); none opens a new one.
pub(crate) async fn openai(
    State(app): State<Arc<App>>,
    Path(agent_id): Path<String>,
    JsonBody(req): JsonBody,
) -> Reply {
    let missing: Vec<&str> = ["model", "messages"]
        .into_iter()
        .filter(|k| !req.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(ApiError::argument(format!(
            "required argument are missing: {}; ",
            missing.join(",")
        )));
    }
    openai_answer(&app, agent_id, &req).await
}

async fn openai_answer(app: &Arc<App>, agent_id: String, req: &Object) -> Reply {
    let messages = match req.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        Some(Value::Array(_)) | None | Some(Value::Null) => {
            return Err(ApiError::data("You must provide at least one message."));
        }
        Some(_) => return Err(ApiError::argument("`messages` must be a list.")),
    };
    let query = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| text_of(&m["content"]))
        .unwrap_or_default();
    let session_id = [
        req.get("session_id"),
        req.get("id"),
        req.get("metadata").and_then(|m| m.get("id")),
    ]
    .into_iter()
    .flatten()
    .filter_map(Value::as_str)
    .find(|s| !s.is_empty())
    .map(str::to_string);
    let q = Question {
        agent_id,
        session_id,
        query,
        inputs: inputs_of(req)?,
        user_id: opt_str(req, "user_id")?,
        files: sys_files(req.get("files").unwrap_or(&Value::Null))?,
    };
    respond(app, q, Mode::OpenAi, truthy(req, "stream", false)).await
}

/// A message's text: a string, or the text parts of a list.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn inputs_of(req: &Object) -> Result<Object, ApiError> {
    match req.get("inputs") {
        None | Some(Value::Null) => Ok(Object::new()),
        Some(Value::Object(o)) => Ok(o.clone()),
        Some(_) => Err(ApiError::argument("`inputs` must be an object.")),
    }
}

fn question(req: &Object, agent_id: String, query_keys: &[&str]) -> Result<Question, ApiError> {
    let mut query = String::new();
    for k in query_keys {
        if let Some(s) = opt_str(req, k)? {
            query = s;
            break;
        }
    }
    Ok(Question {
        agent_id,
        session_id: opt_str(req, "session_id")?.filter(|s| !s.is_empty()),
        query,
        inputs: inputs_of(req)?,
        user_id: opt_str(req, "user_id")?,
        files: sys_files(req.get("files").unwrap_or(&Value::Null))?,
    })
}

async fn respond(app: &Arc<App>, q: Question, mode: Mode, stream: bool) -> Reply {
    let agent_id = q.agent_id.clone();
    let (session_id, rx) = app.ask(q).await?;
    let framer = Framer::new(mode, session_id, agent_id);
    if stream {
        Ok(sse(framer, rx))
    } else {
        collect(framer, rx).await
    }
}

/// The events as a stream of frames; the response ends after the question does.
fn sse(framer: Framer, rx: mpsc::UnboundedReceiver<Out>) -> Response {
    let frames = futures::stream::unfold(Some((framer, rx)), |state| async move {
        let (mut f, mut rx) = state?;
        let (bytes, more) = match rx.recv().await {
            Some(Out::Line(line)) => (f.line(&line), true),
            Some(Out::End(end)) => (f.end(&end), false),
            // The question's task died without a word (it panicked).
            None => (f.end(&Err("the question's task failed".into())), false),
        };
        Some((bytes, more.then_some((f, rx))))
    })
    .filter(|b| std::future::ready(!b.is_empty()))
    .map(Ok::<Bytes, Infallible>);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(frames),
    )
        .into_response()
}

/// The whole answer at once.
async fn collect(mut f: Framer, mut rx: mpsc::UnboundedReceiver<Out>) -> Reply {
    let end = loop {
        match rx.recv().await {
            Some(Out::Line(line)) => {
                f.line(&line);
            }
            Some(Out::End(end)) => break end,
            None => break Err("the question's task failed".into()),
        }
    };
    f.whole(end)
}

/// Frames a question's events for one mode, and keeps what the last frame (or a whole
/// answer) needs: the text, references, structured outputs, traces, usage.
struct Framer {
    mode: Mode,
    session_id: String,
    agent_id: String,
    content: String,
    reference: Object,
    structured: Object,
    trace: Vec<Value>,
    last: Option<Value>,
    usage: [u64; 2],
    created: i64,
}

impl Framer {
    fn new(mode: Mode, session_id: String, agent_id: String) -> Self {
        Framer {
            mode,
            session_id,
            agent_id,
            content: String::new(),
            reference: Object::new(),
            structured: Object::new(),
            trace: Vec::new(),
            last: None,
            usage: [0, 0],
            created: super::now() as i64,
        }
    }

    /// One event: its frames, if this mode shows it.
    fn line(&mut self, line: &str) -> Bytes {
        let Ok(mut ev) = serde_json::from_str::<Value>(line) else {
            return Bytes::new();
        };
        let name = ev["event"].as_str().unwrap_or_default().to_string();
        let data = ev["data"].clone();
        let piece = match &data["content"] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        if name == "message" {
            self.content.push_str(&piece);
        }
        if let Some(r) = data.get("reference").and_then(Value::as_object) {
            self.reference.extend(r.clone());
        }
        if name == "node_finished" {
            if let (Some(id), Some(s)) = (
                data["component_id"].as_str(),
                data["outputs"].get("structured"),
            ) {
                self.structured.insert(id.to_string(), s.clone());
            }
        }
        if name == "workflow_finished" {
            let u = &data["usage"];
            self.usage[0] += u["prompt_tokens"].as_u64().unwrap_or(0);
            self.usage[1] += u["completion_tokens"].as_u64().unwrap_or(0);
        }
        ev["session_id"] = json!(self.session_id);
        let shown = match self.mode {
            Mode::Events => Some(with_session(line, &self.session_id)),
            Mode::Sdk { trace } => match name.as_str() {
                "message" | "message_end" => Some(with_session(line, &self.session_id)),
                "node_finished" if trace => {
                    self.trace.push(json!({
                        "component_id": ev["data"]["component_id"],
                        "trace": [ev["data"].clone()],
                    }));
                    ev["data"]["trace"] = Value::Array(self.trace.clone());
                    Some(ev.to_string())
                }
                _ => None,
            },
            Mode::OpenAi => None,
        };
        let bytes = match (self.mode, shown) {
            (Mode::OpenAi, _) => match name.as_str() {
                "message" if !piece.is_empty() => {
                    self.chunk(json!({"role": "assistant", "content": piece}), None)
                }
                "message_end" if data.get("reference").is_some() => {
                    self.chunk(json!({"content": "", "reference": data["reference"]}), None)
                }
                _ => Bytes::new(),
            },
            (_, Some(s)) => Bytes::from(format!("data:{s}\n\n")),
            (_, None) => Bytes::new(),
        };
        self.last = Some(ev);
        bytes
    }

    /// The question ended: the last frames.
    fn end(&mut self, end: &Result<Ended, String>) -> Bytes {
        let mut out = String::new();
        if self.mode == Mode::OpenAi {
            if let Err(e) = end {
                let chunk = self.chunk(json!({"content": format!("**ERROR**: {e}")}), None);
                out.push_str(&String::from_utf8_lossy(&chunk));
            }
            let last = self.chunk(json!({}), Some(self.usage_json()));
            out.push_str(&String::from_utf8_lossy(&last));
            out.push_str("data: [DONE]\n\n");
            return Bytes::from(out);
        }
        if let Err(e) = end {
            let err = json!({"code": 500, "message": e, "data": false});
            out.push_str(&format!("data:{err}\n\n"));
        }
        out.push_str("data:[DONE]\n\n");
        Bytes::from(out)
    }

    /// An OpenAI chunk; the last one says why it stopped and what it used.
    fn chunk(&self, delta: Value, usage: Option<Value>) -> Bytes {
        let finish = usage.as_ref().map(|_| "stop");
        let mut c = json!({
            "id": self.session_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.agent_id,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
        });
        if let Some(u) = usage {
            c["usage"] = u;
        }
        Bytes::from(format!("data: {c}\n\n"))
    }

    fn usage_json(&self) -> Value {
        let [p, c] = self.usage;
        json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})
    }

    /// The whole answer, as RAGFlow gives it when not streaming.
    fn whole(self, end: Result<Ended, String>) -> Reply {
        if self.mode == Mode::OpenAi {
            let content = match &end {
                Ok(_) => self.content.clone(),
                Err(e) => format!("**ERROR**: {e}"),
            };
            let mut message = json!({"role": "assistant", "content": content});
            if !self.reference.is_empty() {
                message["reference"] = Value::Object(self.reference.clone());
            }
            let mut usage = self.usage_json();
            usage["completion_tokens_details"] = json!({
                "reasoning_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            });
            return Ok(axum::Json(json!({
                "id": self.session_id,
                "object": "chat.completion",
                "created": self.created,
                "model": self.agent_id,
                "param": null,
                "usage": usage,
                "choices": [{"message": message, "logprobs": null, "finish_reason": "stop", "index": 0}],
            }))
            .into_response());
        }
        if let Err(e) = end {
            return Err(ApiError::exception(e));
        }
        let Some(mut last) = self.last else {
            return Ok(ok(json!({})));
        };
        if !last["data"].is_object() {
            last["data"] = json!({});
        }
        last["data"]["content"] = Value::String(self.content);
        last["data"]["reference"] = Value::Object(self.reference);
        if !self.structured.is_empty() {
            last["data"]["structured"] = Value::Object(self.structured);
        }
        if matches!(self.mode, Mode::Sdk { trace: true }) {
            last["data"]["trace"] = Value::Array(self.trace);
        }
        Ok(ok(last))
    }
}

/// The event line with RAGFlow's `session_id` added after its other keys.
fn with_session(line: &str, session_id: &str) -> String {
    let body = line.trim_end();
    match body.strip_suffix('}') {
        Some(head) => format!(
            "{head},\"session_id\":{}}}",
            Value::String(session_id.to_string())
        ),
        None => body.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"event":"message","data":{"content":"Hi "},"message_id":"m","created_at":1,"task_id":"t"}"#;

    #[test]
    fn the_session_id_follows_the_envelope() {
        let s = with_session(LINE, "S1");
        assert!(s.ends_with(r#""task_id":"t","session_id":"S1"}"#), "{s}");
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["data"]["content"], "Hi ");
    }

    #[test]
    fn the_sdk_sees_messages_and_events_mode_everything() {
        let started = r#"{"event":"workflow_started","data":{"inputs":{}},"message_id":"m","created_at":1,"task_id":"t"}"#;
        let mut sdk = Framer::new(Mode::Sdk { trace: false }, "S".into(), "a".into());
        assert!(sdk.line(started).is_empty());
        let framed = sdk.line(LINE);
        assert!(framed.starts_with(b"data:{\"event\":\"message\""));
        assert!(framed.ends_with(b"}\n\n"));
        let mut all = Framer::new(Mode::Events, "S".into(), "a".into());
        assert!(!all.line(started).is_empty());
        let end = all.end(&Err("boom".into()));
        let end = String::from_utf8_lossy(&end);
        assert!(end.ends_with("data:[DONE]\n\n"), "{end}");
        assert!(end.contains(r#""message":"boom""#), "{end}");
    }

    #[test]
    fn openai_chunks_carry_the_text_and_end_with_stop() {
        let mut f = Framer::new(Mode::OpenAi, "S".into(), "a".into());
        let c = f.line(LINE);
        let c = String::from_utf8_lossy(&c);
        let v: Value = serde_json::from_str(c.trim().trim_start_matches("data: ")).unwrap();
        assert_eq!(v["choices"][0]["delta"]["content"], "Hi ");
        assert_eq!(v["object"], "chat.completion.chunk");
        let end = f.end(&Ok(Ended {
            status: canvas_store::RunStatus::Succeeded,
            error: None,
            component: None,
            form: None,
            step_limit: false,
            turn: 1,
        }));
        let end = String::from_utf8_lossy(&end);
        assert!(end.contains(r#""finish_reason":"stop""#), "{end}");
        assert!(end.ends_with("data: [DONE]\n\n"), "{end}");
    }
}
