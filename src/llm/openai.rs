//! The OpenAI-compatible chat client: one HTTP implementation of [`ChatModel`] for every
//! provider that speaks `/chat/completions` (OpenAI, DeepSeek, DashScope, Moonshot,
//! Zhipu, SiliconFlow, MiniMax, Ollama, vLLM, LM Studio, …).

use std::time::Duration;

/// Where and how to call one model.
#[derive(Clone)]
pub struct Endpoint {
    /// The factory as the canvas names it ("DeepSeek", "Tongyi-Qianwen", …): selects
    /// RAGFlow's per-family request policies.
    pub factory: String,
    /// Base URL ending before `/chat/completions` (e.g. `https://api.deepseek.com/v1`).
    pub base_url: String,
    /// The bearer key, if the endpoint needs one. Never printed.
    pub api_key: Option<String>,
    /// The model name sent on the wire.
    pub model: String,
    /// RAGFlow's `is_tools`.
    pub supports_tools: bool,
    /// Context length prompts are fitted into.
    pub context_length: usize,
    /// Limit for one attempt, from request to the last chunk.
    pub timeout: Duration,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("factory", &self.factory)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("supports_tools", &self.supports_tools)
            .field("context_length", &self.context_length)
            .field("timeout", &self.timeout)
            .finish()
    }
}
