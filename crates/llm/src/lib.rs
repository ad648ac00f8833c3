//! Chat models: the [`ChatModel`] seam every model call goes through (LLM, Agent,
//! Categorize), its request and streamed answer types, and the implementations: the
//! scripted mock ([`mock`]) today.
//!
//! An answer is a stream of [`Delta`]s: text as it arrives, reasoning, native tool calls,
//! and the token usage at the end. Components turn it into events; this module knows
//! nothing of canvases.

pub mod limit;
pub mod mock;
pub mod openai;
pub mod provider;
pub mod record;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use mock::{MockModel, MockScript};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The user (or the canvas speaking for them).
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// One message of a conversation, in the OpenAI shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Its author.
    pub role: Role,
    /// Text, or a list of content parts (`{"type": "text", "text"}`, images), or null.
    pub content: Value,
    /// Tool calls the assistant made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A text message.
    pub fn text(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            content: Value::String(text.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// The message's text: a string as is, the text parts of a list joined by one space,
    /// anything else as JSON (null as "").
    pub fn text_content(&self) -> String {
        match &self.content {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(o) => o.get("text").and_then(Value::as_str),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(" "),
            other => other.to_string(),
        }
    }
}

/// A native function call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id (answered by a [`Role::Tool`] message).
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments (a JSON object).
    pub arguments: Value,
}

/// One model call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// The model (`llm_id`), as the canvas names it.
    pub model: String,
    /// The conversation, system prompt first when there is one.
    pub messages: Vec<Message>,
    /// Function schemas the model may call (OpenAI `tools` entries).
    pub tools: Vec<Value>,
    /// Sampling parameters sent as they are (`temperature`, `top_p`, penalties, and
    /// provider switches such as `enable_thinking`).
    pub params: serde_json::Map<String, Value>,
    /// How failed attempts are retried.
    pub retry: Retry,
}

/// RAGFlow's retry rule: `max_retries` more attempts after the first, for rate limits,
/// server errors, timeouts and lost connections only, waiting about `delay` (growing)
/// between attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    /// Attempts after the first.
    pub max_retries: u32,
    /// The base wait between attempts (the component's `delay_after_error`).
    pub delay: std::time::Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max_retries: 0,
            delay: std::time::Duration::from_secs(2),
        }
    }
}

impl ChatRequest {
    /// The system prompt ("" when there is none).
    pub fn system(&self) -> String {
        self.messages
            .iter()
            .find(|m| m.role == Role::System)
            .map(Message::text_content)
            .unwrap_or_default()
    }

    /// The content of the last user message ("" when there is none).
    pub fn last_user(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(Message::text_content)
            .unwrap_or_default()
    }
}

/// Tokens a call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// Answer text.
    Text(String),
    /// Reasoning text (providers that stream it apart from the answer).
    Reasoning(String),
    /// Native tool calls, complete.
    ToolCalls(Vec<ToolCall>),
    /// Token usage, once, at the end.
    Usage(Usage),
}

/// RAGFlow's classification of a failed call (the `CODE` of `**ERROR**: CODE - text`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// HTTP 429 or a rate-limit message.
    RateLimitExceeded,
    /// HTTP 401/403.
    AuthError,
    /// HTTP 400/404/422 and other refusals of the request.
    InvalidRequest,
    /// HTTP 5xx.
    ServerError,
    /// No answer in time.
    Timeout,
    /// The connection failed or broke.
    ConnectionError,
    /// The provider answered something that is not a valid answer.
    ModelError,
    /// The provider's content filter refused.
    ContentFiltered,
    /// Quota, credit or billing.
    QuotaExceeded,
    /// The last attempt allowed failed (RAGFlow names every failure of the last
    /// attempt so, whatever its cause; the message keeps the cause).
    MaxRetriesExceeded,
    /// Anything else.
    GenericError,
}

impl ErrorCode {
    /// RAGFlow's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::RateLimitExceeded => "RATE_LIMIT_EXCEEDED",
            ErrorCode::AuthError => "AUTH_ERROR",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::ServerError => "SERVER_ERROR",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::ConnectionError => "CONNECTION_ERROR",
            ErrorCode::ModelError => "MODEL_ERROR",
            ErrorCode::ContentFiltered => "CONTENT_FILTERED",
            ErrorCode::QuotaExceeded => "QUOTA_EXCEEDED",
            ErrorCode::MaxRetriesExceeded => "MAX_RETRIES_EXCEEDED",
            ErrorCode::GenericError => "GENERIC_ERROR",
        }
    }

    /// Whether another attempt may succeed (RAGFlow retries rate limits and server
    /// errors; we also retry timeouts and broken connections).
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::RateLimitExceeded
                | ErrorCode::ServerError
                | ErrorCode::Timeout
                | ErrorCode::ConnectionError
        )
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The mock script cannot be used.
    #[error("{path}: {message}")]
    Script {
        /// The script file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The provider configuration cannot be used, or a model cannot be resolved (no
    /// factory, unknown factory, missing key). The message says what to do.
    #[error("{0}")]
    Config(String),
    /// A model cannot be resolved (no model, no factory, unknown factory, no base URL,
    /// missing key): what is wrong and what to do, shown apart by the CLI.
    #[error("{message}: {hint}")]
    Resolve {
        /// What is wrong.
        message: String,
        /// What to do about it.
        hint: String,
    },
    /// A call failed (after its retries).
    #[error("{code} - {message}")]
    Call {
        /// RAGFlow's classification.
        code: ErrorCode,
        /// What happened, with the endpoint and the number of attempts.
        message: String,
    },
    /// A replayed run made a call the recording does not hold.
    #[error("{0}")]
    Replay(String),
}

/// The mark RAGFlow's chat layer puts in place of an answer when a call fails, and its
/// components look for to tell a failed call.
pub const ERROR_MARK: &str = "**ERROR**";

impl LlmError {
    /// The text RAGFlow puts in a component's `_ERROR`: `**ERROR**: CODE - text`.
    pub fn ragflow_text(&self) -> String {
        match self {
            LlmError::Call { .. } => format!("{ERROR_MARK}: {self}"),
            other => format!("{ERROR_MARK}: {} - {other}", ErrorCode::GenericError),
        }
    }
}

/// A streamed answer.
pub type DeltaStream = BoxStream<'static, Result<Delta, LlmError>>;

/// A chat model: one call in, a stream of deltas out.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Answer `req`.
    async fn chat(&self, req: &ChatRequest) -> Result<DeltaStream, LlmError>;

    /// Whether tools may be bound (RAGFlow's `is_tools`; without it an Agent runs as a
    /// plain LLM).
    fn supports_tools(&self) -> bool {
        true
    }

    /// The context length prompts are fitted into (RAGFlow's fallback is 8192).
    fn context_length(&self) -> usize {
        8192
    }
}

/// Where components get their models: resolves an `llm_id` ("model@Factory", possibly
/// empty) to a model to call.
pub trait ModelSource: Send + Sync {
    /// The model for `llm_id`.
    fn model(&self, llm_id: &str) -> Result<std::sync::Arc<dyn ChatModel>, LlmError>;
}

impl std::fmt::Debug for dyn ModelSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ModelSource")
    }
}

/// Every call answered by one model whatever the `llm_id` (the mock).
pub struct OneModel(pub std::sync::Arc<dyn ChatModel>);

impl ModelSource for OneModel {
    fn model(&self, _llm_id: &str) -> Result<std::sync::Arc<dyn ChatModel>, LlmError> {
        Ok(self.0.clone())
    }
}

/// No model configured: every call is an error saying how to configure one.
pub struct NoModels;

impl ModelSource for NoModels {
    fn model(&self, llm_id: &str) -> Result<std::sync::Arc<dyn ChatModel>, LlmError> {
        Err(LlmError::Config(format!(
            "no model is configured for {llm_id:?}: pass --mock-llm FILE or configure a provider"
        )))
    }
}

/// Rough token count (words and punctuation runs): usage is reported, not compared.
pub fn count_tokens(text: &str) -> u64 {
    let mut n = 0u64;
    let mut in_word = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if !in_word {
                n += 1;
            }
            in_word = true;
        } else {
            in_word = false;
            if !c.is_whitespace() {
                n += 1;
            }
        }
    }
    n
}
