//! Chat models: the [`ChatModel`] seam every model call goes through (LLM, Agent,
//! Categorize), its request and streamed answer types, and the implementations: the
//! scripted mock ([`mock`]) today.
//!
//! An answer is a stream of [`Delta`]s: text as it arrives, reasoning, native tool calls,
//! and the token usage at the end. Components turn it into events; this module knows
//! nothing of canvases.

pub mod mock;

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
}

/// A streamed answer.
pub type DeltaStream = BoxStream<'static, Result<Delta, LlmError>>;

/// A chat model: one call in, a stream of deltas out.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Answer `req`.
    async fn chat(&self, req: &ChatRequest) -> Result<DeltaStream, LlmError>;
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
