//! The OpenAI-compatible chat client: one HTTP implementation of [`ChatModel`] for every
//! provider that speaks `/chat/completions` (OpenAI, DeepSeek, DashScope, Moonshot,
//! Zhipu, SiliconFlow, MiniMax, Ollama, vLLM, LM Studio, …).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use rand::Rng;
use serde_json::{Map, Value, json};

use super::limit::{Gate, MAX_THROTTLED};
use super::{
    ChatModel, ChatRequest, Delta, DeltaStream, ErrorCode, LlmError, Message, Retry, Role,
    ToolCall, Usage, count_tokens,
};

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

/// RAGFlow's notice after an answer the model cut at its length limit.
const LENGTH_NOTICE: &str =
    "...\nThe answer is truncated by your chosen LLM due to its limitation on context length.";

/// The longest wait between two attempts.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// How much of an error body is read: enough for any message, bounded against HTML pages.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// A model behind an OpenAI-compatible `/chat/completions` endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    endpoint: Endpoint,
    http: reqwest::Client,
    /// The provider's limits, when calls share them (many runs at once).
    gate: Option<Arc<Gate>>,
}

impl OpenAiModel {
    /// A model calling `endpoint` through `http` (share one client between models).
    pub fn new(endpoint: Endpoint, http: reqwest::Client) -> OpenAiModel {
        OpenAiModel {
            endpoint,
            http,
            gate: None,
        }
    }

    /// The same model with its attempts going through `gate` (its provider's rate and
    /// shared backoff).
    pub fn with_gate(mut self, gate: Arc<Gate>) -> OpenAiModel {
        self.gate = Some(gate);
        self
    }

    /// The HTTP client models share: 10 s connect timeout, `canvas/<version>` user agent.
    pub fn http_client() -> reqwest::Client {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("canvas/", env!("CARGO_PKG_VERSION")))
            .build()
            // Only a broken TLS backend fails here; the default client is the best left.
            .unwrap_or_else(|_| reqwest::Client::new())
    }

    /// The endpoint this model calls.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.endpoint.base_url.trim_end_matches('/')
        )
    }
}

#[async_trait]
impl ChatModel for OpenAiModel {
    async fn chat(&self, req: &ChatRequest) -> Result<DeltaStream, LlmError> {
        let body =
            serde_json::to_vec(&Value::Object(request_body(&self.endpoint, req))).map_err(|e| {
                LlmError::Call {
                    code: ErrorCode::GenericError,
                    message: format!("cannot encode the request: {e}"),
                }
            })?;
        let prompt_tokens = req
            .messages
            .iter()
            .map(|m| count_tokens(&m.text_content()))
            .sum();
        let mut call = Call {
            http: self.http.clone(),
            url: self.url(),
            key: self.endpoint.api_key.clone().filter(|k| !k.is_empty()),
            body,
            timeout: self.endpoint.timeout,
            retry: req.retry,
            attempts: req.retry.max_retries.saturating_add(1),
            attempt: 0,
            gate: self.gate.clone(),
            throttled: 0,
            prompt_tokens,
            phase: Phase::Send,
            out: VecDeque::new(),
            produced: false,
        };
        // Run until the first delta so that failures before any answer (after their
        // retries) are this call's error rather than a stream item.
        match call.next().await {
            Some(Err(e)) => Err(e),
            first => {
                let rest = futures::stream::unfold(call, |mut c| async move {
                    c.next().await.map(|item| (item, c))
                });
                Ok(futures::stream::iter(first).chain(rest).boxed())
            }
        }
    }

    fn supports_tools(&self) -> bool {
        self.endpoint.supports_tools
    }

    fn context_length(&self) -> usize {
        self.endpoint.context_length
    }
}

/// The JSON body of a streamed completion request for `req`.
fn request_body(endpoint: &Endpoint, req: &ChatRequest) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(endpoint.model.clone()));
    body.insert(
        "messages".into(),
        Value::Array(req.messages.iter().map(wire_message).collect()),
    );
    body.insert("stream".into(), Value::Bool(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    // Some servers reject `tools: []`; RAGFlow's port note says to omit it.
    if !req.tools.is_empty() {
        body.insert("tools".into(), Value::Array(req.tools.clone()));
        body.insert("tool_choice".into(), Value::String("auto".into()));
    }
    for (k, v) in &req.params {
        body.insert(k.clone(), v.clone());
    }
    apply_model_family_policies(&endpoint.factory, &endpoint.model, &mut body);
    body
}

/// A message in the OpenAI wire shape.
fn wire_message(m: &Message) -> Value {
    let mut o = Map::new();
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    o.insert("role".into(), Value::String(role.into()));
    o.insert("content".into(), m.content.clone());
    if !m.tool_calls.is_empty() {
        let calls = m
            .tool_calls
            .iter()
            .map(|c| {
                // The wire wants the arguments as a JSON-encoded string.
                let arguments = match &c.arguments {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": arguments},
                })
            })
            .collect();
        o.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        o.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    Value::Object(o)
}

/// RAGFlow's per-family request fixes (`_apply_model_family_policies`), on the body.
fn apply_model_family_policies(factory: &str, model: &str, body: &mut Map<String, Value>) {
    let model = model.to_lowercase();
    let factory = factory.to_lowercase();
    // A `thinking` switch given as "enabled"/"disabled" (or a bool): on or off.
    let switch = |v: &Value| match v {
        Value::String(s) => Some(s.eq_ignore_ascii_case("enabled")),
        Value::Bool(b) => Some(*b),
        _ => None,
    };
    if model.contains("qwen3") {
        // Qwen3 thinks by default and streams its reasoning for minutes: off unless
        // asked; the -preview models only exist in thinking mode.
        if model.ends_with("-preview") {
            body.remove("thinking");
            body.insert("enable_thinking".into(), Value::Bool(true));
        } else if !body.contains_key("enable_thinking") {
            match body.get("thinking").map(switch) {
                None => {
                    body.insert("enable_thinking".into(), Value::Bool(false));
                }
                Some(Some(on)) => {
                    body.remove("thinking");
                    body.insert("enable_thinking".into(), Value::Bool(on));
                }
                // An object is the caller's own provider payload: left alone.
                Some(None) => {}
            }
        }
    }
    if factory == "deepseek" {
        match body.get("thinking").map(switch) {
            None => {
                body.insert("thinking".into(), json!({"type": "disabled"}));
            }
            Some(Some(on)) => {
                let kind = if on { "enabled" } else { "disabled" };
                body.insert("thinking".into(), json!({ "type": kind }));
            }
            Some(None) => {}
        }
    }
    if model.starts_with("gpt-5") {
        // Reasoning models refuse sampling parameters.
        body.remove("temperature");
        body.remove("top_p");
    }
    if model.contains("kimi-k2.5") || model.contains("kimi-k2.6") {
        // Moonshot accepts only these fixed values for these models.
        body.remove("temperature");
        body.insert("top_p".into(), json!(0.95));
        body.insert("presence_penalty".into(), json!(0.0));
        body.insert("frequency_penalty".into(), json!(0.0));
        body.insert("n".into(), json!(1));
        if let Some(Some(on)) = body.get("thinking").map(switch) {
            let kind = if on { "enabled" } else { "disabled" };
            body.insert("thinking".into(), json!({ "type": kind }));
        }
    }
}

/// Why one attempt failed.
#[derive(Debug)]
enum Failure {
    /// A non-2xx answer.
    Status {
        status: reqwest::StatusCode,
        body: String,
        retry_after: Option<Duration>,
    },
    /// The per-attempt limit ran out.
    Timeout,
    /// No connection could be made.
    Connect(String),
    /// The connection failed after it was made.
    Broken(String),
    /// Anything else reqwest reports.
    Other(String),
    /// A stream line that is not an SSE line with JSON data.
    Malformed(String),
    /// A non-streamed answer that is not a completion.
    BadAnswer(String),
    /// An `{"error": …}` object in place of an answer.
    Provider(String),
}

impl Failure {
    fn code(&self) -> ErrorCode {
        match self {
            Failure::Status { status, body, .. } => classify_status(status.as_u16(), body),
            Failure::Timeout => ErrorCode::Timeout,
            Failure::Connect(_) | Failure::Broken(_) => ErrorCode::ConnectionError,
            Failure::Other(_) => ErrorCode::GenericError,
            Failure::Malformed(_) | Failure::BadAnswer(_) => ErrorCode::ModelError,
            Failure::Provider(text) => classify_text(text),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status {
                status,
                retry_after,
                ..
            } if status.as_u16() == 429 => *retry_after,
            _ => None,
        }
    }
}

fn mentions_quota(lower: &str) -> bool {
    ["quota", "credit", "billing", "insufficient balance"]
        .iter()
        .any(|w| lower.contains(w))
}

fn mentions_content_filter(lower: &str) -> bool {
    ["content filter", "content_filter", "sensitive"]
        .iter()
        .any(|w| lower.contains(w))
}

/// RAGFlow's code for an HTTP status and its body.
fn classify_status(status: u16, body: &str) -> ErrorCode {
    let lower = body.to_lowercase();
    match status {
        429 if mentions_quota(&lower) => ErrorCode::QuotaExceeded,
        429 => ErrorCode::RateLimitExceeded,
        402 => ErrorCode::QuotaExceeded,
        401 | 403 => ErrorCode::AuthError,
        400 | 404 | 413 | 422 if mentions_content_filter(&lower) => ErrorCode::ContentFiltered,
        400 | 404 | 413 | 422 => ErrorCode::InvalidRequest,
        500..=599 => ErrorCode::ServerError,
        _ => ErrorCode::GenericError,
    }
}

/// RAGFlow's keyword classification, for errors that come without a status.
fn classify_text(text: &str) -> ErrorCode {
    let lower = text.to_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if mentions_quota(&lower) {
        ErrorCode::QuotaExceeded
    } else if any(&["rate limit", "rate_limit", "too many requests"]) {
        ErrorCode::RateLimitExceeded
    } else if any(&["unauthorized", "invalid api key", "authentication"]) {
        ErrorCode::AuthError
    } else if mentions_content_filter(&lower) {
        ErrorCode::ContentFiltered
    } else if any(&[
        "overloaded",
        "unavailable",
        "server error",
        "internal error",
    ]) {
        ErrorCode::ServerError
    } else {
        ErrorCode::ModelError
    }
}

/// The wait after failed attempt `failed` (from 1): `delay * 2^(failed-1)` times
/// `jitter` (0.8–1.2), at least a 429's `Retry-After`, at most a minute.
fn backoff(retry: Retry, failed: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
    let doubling = f64::from(1u32 << failed.saturating_sub(1).min(16));
    let mut wait = (retry.delay.as_secs_f64() * doubling * jitter).min(MAX_WAIT.as_secs_f64());
    if let Some(after) = retry_after {
        wait = wait.max(after.as_secs_f64()).min(MAX_WAIT.as_secs_f64());
    }
    Duration::from_secs_f64(wait.max(0.0))
}

/// The causes under a reqwest error (its own text repeats the URL and says little).
fn cause(e: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = std::error::Error::source(e);
    while let Some(s) = next {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = s.source();
    }
    if parts.is_empty() {
        e.to_string()
    } else {
        parts.join(": ")
    }
}

fn request_failure(e: &reqwest::Error) -> Failure {
    if e.is_connect() {
        Failure::Connect(cause(e))
    } else if e.is_timeout() {
        Failure::Timeout
    } else if e.is_request() || e.is_body() || e.is_decode() {
        Failure::Broken(cause(e))
    } else {
        Failure::Other(cause(e))
    }
}

fn body_failure(e: &reqwest::Error) -> Failure {
    if e.is_timeout() {
        Failure::Timeout
    } else {
        Failure::Broken(cause(e))
    }
}

/// White space runs as one space, cut to `max` characters.
fn collapse(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

fn first_chars(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

fn show_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// The text of a provider's `error` value.
fn provider_message(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("message").and_then(Value::as_str) {
            Some(m) => {
                let code = o
                    .get("code")
                    .or_else(|| o.get("type"))
                    .filter(|c| !c.is_null())
                    .map(|c| match c {
                        Value::String(s) => format!(" ({s})"),
                        other => format!(" ({other})"),
                    })
                    .unwrap_or_default();
                format!("{m}{code}")
            }
            None => err.to_string(),
        },
        other => other.to_string(),
    }
}

/// One call in progress: its attempts and the answer assembled so far.
struct Call {
    http: reqwest::Client,
    url: String,
    key: Option<String>,
    body: Vec<u8>,
    timeout: Duration,
    retry: Retry,
    attempts: u32,
    /// The attempt under way (from 1).
    attempt: u32,
    /// The provider's limits, if shared.
    gate: Option<Arc<Gate>>,
    /// Attempts refused with 429 and sent again through the gate.
    throttled: u32,
    /// The estimate used when the server reports no usage.
    prompt_tokens: u64,
    phase: Phase,
    /// Items ready to be yielded.
    out: VecDeque<Result<Delta, LlmError>>,
    /// Whether a delta was produced: from then on a failure ends the stream, no retry.
    produced: bool,
}

enum Phase {
    /// The next attempt is to be sent.
    Send,
    /// An answer is being read.
    Body(Reading),
    /// Nothing more to read.
    Done,
}

struct Reading {
    body: BoxStream<'static, reqwest::Result<Vec<u8>>>,
    /// Bytes not yet split into lines (a chunk may end inside a line or a character).
    buf: Vec<u8>,
    /// The server sent one JSON completion instead of a stream.
    whole: bool,
    acc: Answer,
}

/// What a stream line meant.
enum Step {
    More,
    End,
    Fail(Failure),
}

impl Call {
    /// The next item of the answer, `None` after the last.
    async fn next(&mut self) -> Option<Result<Delta, LlmError>> {
        loop {
            if let Some(item) = self.out.pop_front() {
                return Some(item);
            }
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Send => {
                    if let Some(g) = self.gate.clone() {
                        g.admit().await;
                    }
                    self.attempt += 1;
                    match Call::send(self.request()).await {
                        Ok(reading) => {
                            if let Some(g) = &self.gate {
                                g.passed();
                            }
                            self.phase = Phase::Body(reading);
                        }
                        Err(f) => self.failed(f).await,
                    }
                }
                Phase::Body(r) => {
                    let step = match r.body.next().await {
                        Some(Ok(bytes)) => {
                            r.buf.extend_from_slice(&bytes);
                            if r.whole {
                                Step::More
                            } else {
                                r.lines(&mut self.out, false)
                            }
                        }
                        Some(Err(e)) => Step::Fail(body_failure(&e)),
                        None if r.whole => r.whole_answer(&mut self.out),
                        None => match r.lines(&mut self.out, true) {
                            // A stream may end without `[DONE]`.
                            Step::More => Step::End,
                            other => other,
                        },
                    };
                    if !self.out.is_empty() {
                        self.produced = true;
                    }
                    match step {
                        Step::More => {}
                        Step::End => {
                            r.acc.finish(self.prompt_tokens, &mut self.out);
                            self.phase = Phase::Done;
                        }
                        Step::Fail(f) => self.failed(f).await,
                    }
                }
            }
        }
    }

    /// The request of one attempt.
    fn request(&self) -> reqwest::RequestBuilder {
        use reqwest::header::{ACCEPT, CONTENT_TYPE};
        let rb = self
            .http
            .post(&self.url)
            .timeout(self.timeout)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream, application/json")
            .body(self.body.clone());
        match &self.key {
            Some(key) => rb.bearer_auth(key),
            None => rb,
        }
    }

    /// One attempt up to the response headers (no `self`: the stream state is not `Sync`).
    async fn send(rb: reqwest::RequestBuilder) -> Result<Reading, Failure> {
        use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
        let mut resp = rb.send().await.map_err(|e| request_failure(&e))?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| Duration::from_secs_f64(s.min(MAX_WAIT.as_secs_f64())));
            let mut body = Vec::new();
            // A body that breaks off still says enough; the status is the error.
            while let Ok(Some(chunk)) = resp.chunk().await {
                body.extend_from_slice(&chunk);
                if body.len() >= ERROR_BODY_LIMIT {
                    break;
                }
            }
            return Err(Failure::Status {
                status,
                body: String::from_utf8_lossy(&body).into_owned(),
                retry_after,
            });
        }
        let whole = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim()
                    .to_ascii_lowercase()
                    .starts_with("application/json")
            });
        Ok(Reading {
            body: resp.bytes_stream().map(|r| r.map(|b| b.to_vec())).boxed(),
            buf: Vec::new(),
            whole,
            acc: Answer::default(),
        })
    }

    /// Retry after a wait when the failure allows it, else end with its error.
    async fn failed(&mut self, f: Failure) {
        let code = f.code();
        // A provider's rate limit, with shared limits: every call to it waits, and this
        // attempt is sent again then, not counted against the component's retries.
        if let (Some(g), ErrorCode::RateLimitExceeded) = (&self.gate, code) {
            if !self.produced && self.throttled < MAX_THROTTLED {
                self.throttled += 1;
                g.throttled(f.retry_after());
                self.attempt -= 1;
                self.phase = Phase::Send;
                return;
            }
        }
        if code.retryable() && !self.produced && self.attempt < self.attempts {
            // Drop the failed answer's connection before waiting.
            self.phase = Phase::Send;
            let jitter = rand::rng().random_range(0.8..=1.2);
            let wait = backoff(self.retry, self.attempt, f.retry_after(), jitter);
            tokio::time::sleep(wait).await;
        } else {
            self.phase = Phase::Done;
            let message = self.message(&f);
            // RAGFlow: `if attempt == max_retries: error_code = ERROR_MAX_RETRIES`.
            let code = if self.attempt >= self.attempts {
                ErrorCode::MaxRetriesExceeded
            } else {
                code
            };
            self.out.push_back(Err(LlmError::Call { code, message }));
        }
    }

    /// The one-line text of a final failure, without the key.
    fn message(&self, f: &Failure) -> String {
        let (url, n, m) = (&self.url, self.attempt, self.attempts);
        let text = match f {
            Failure::Status { status, body, .. } => {
                let reason = status
                    .canonical_reason()
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default();
                let tries = if n == 1 {
                    "1 attempt".to_string()
                } else {
                    format!("{n} attempts")
                };
                let body = collapse(body, 300);
                let body = if body.is_empty() {
                    String::new()
                } else {
                    format!(": {body}")
                };
                format!(
                    "HTTP {}{reason} from {url} after {tries}{body}",
                    status.as_u16()
                )
            }
            Failure::Timeout if self.produced => format!(
                "the answer from {url} did not end within {} (attempt {n} of {m})",
                show_duration(self.timeout)
            ),
            Failure::Timeout => format!(
                "no answer from {url} within {} (attempt {n} of {m})",
                show_duration(self.timeout)
            ),
            Failure::Connect(c) => format!("cannot connect to {url}: {c} (attempt {n} of {m})"),
            Failure::Broken(c) => {
                format!("connection to {url} failed: {c} (attempt {n} of {m})")
            }
            Failure::Other(c) => format!("request to {url} failed: {c}"),
            Failure::Malformed(chunk) => format!(
                "malformed stream chunk from {url}: {}",
                first_chars(chunk, 200)
            ),
            Failure::BadAnswer(text) => {
                format!("malformed answer from {url}: {}", first_chars(text, 200))
            }
            Failure::Provider(text) => format!("error from {url}: {}", collapse(text, 300)),
        };
        let text = collapse(&text, usize::MAX);
        match &self.key {
            Some(key) => redact(&text, key.as_str()),
            None => text,
        }
    }
}

/// Servers echo keys in auth errors; a key must not reach logs or answers. Placeholder
/// keys local servers take (`EMPTY`, `x`) are no secret, and replacing every
/// occurrence of so short a string would garble the message, so they stay.
fn redact(text: &str, key: &str) -> String {
    if key.trim().chars().count() < 8 {
        return text.to_string();
    }
    text.replace(key, "<redacted>")
}

impl Reading {
    /// Handle every complete line in the buffer (and the rest too at the end).
    fn lines(&mut self, out: &mut VecDeque<Result<Delta, LlmError>>, at_end: bool) -> Step {
        while let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=pos).collect();
            match self.acc.line(&line[..pos], out) {
                Step::More => {}
                other => return other,
            }
        }
        if at_end && !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            return self.acc.line(&line, out);
        }
        Step::More
    }

    /// The buffered non-streamed answer.
    fn whole_answer(&mut self, out: &mut VecDeque<Result<Delta, LlmError>>) -> Step {
        let text = String::from_utf8_lossy(&self.buf).into_owned();
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v.is_object() => match self.acc.completion(&v, out) {
                Ok(()) => Step::End,
                Err(f) => Step::Fail(f),
            },
            _ => Step::Fail(Failure::BadAnswer(text)),
        }
    }
}

/// A tool call assembled from fragments.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The answer so far: what the closing deltas need.
#[derive(Debug, Default)]
struct Answer {
    /// Text and reasoning, for the token estimate.
    generated: String,
    tools: BTreeMap<u64, PartialCall>,
    usage: Option<Usage>,
    truncated: bool,
}

fn text_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

impl Answer {
    /// One SSE line (without its newline).
    fn line(&mut self, line: &[u8], out: &mut VecDeque<Result<Delta, LlmError>>) -> Step {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line[0] == b':' {
            return Step::More;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            return Step::Fail(Failure::Malformed(
                String::from_utf8_lossy(line).into_owned(),
            ));
        };
        let Some(data) = text.strip_prefix("data:") else {
            // Other SSE fields carry nothing an answer needs.
            let field = text.split(':').next().unwrap_or("");
            return if ["event", "id", "retry"].contains(&field) {
                Step::More
            } else {
                Step::Fail(Failure::Malformed(text.to_string()))
            };
        };
        let data = data.trim();
        if data.is_empty() {
            return Step::More;
        }
        if data == "[DONE]" {
            return Step::End;
        }
        match serde_json::from_str::<Value>(data) {
            Ok(v) if v.is_object() => match self.chunk(&v, out) {
                Ok(()) => Step::More,
                Err(f) => Step::Fail(f),
            },
            _ => Step::Fail(Failure::Malformed(data.to_string())),
        }
    }

    fn error_in(v: &Value) -> Result<(), Failure> {
        match v.get("error") {
            None | Some(Value::Null) => Ok(()),
            Some(err) => Err(Failure::Provider(provider_message(err))),
        }
    }

    fn take_usage(&mut self, v: &Value) {
        let Some(u) = v.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let count = |k: &str| u.get(k).and_then(Value::as_u64);
        if let (Some(prompt_tokens), Some(completion_tokens)) =
            (count("prompt_tokens"), count("completion_tokens"))
        {
            self.usage = Some(Usage {
                prompt_tokens,
                completion_tokens,
            });
        }
    }

    fn take_finish(&mut self, choice: &Value) {
        if choice.get("finish_reason").and_then(Value::as_str) == Some("length") {
            self.truncated = true;
        }
    }

    /// Reasoning then text, as deltas.
    fn texts(&mut self, from: &Value, out: &mut VecDeque<Result<Delta, LlmError>>) {
        let reasoning =
            text_field(from, "reasoning_content").or_else(|| text_field(from, "reasoning"));
        if let Some(r) = reasoning {
            self.generated.push_str(r);
            self.generated.push(' ');
            out.push_back(Ok(Delta::Reasoning(r.to_string())));
        }
        if let Some(t) = text_field(from, "content") {
            self.generated.push_str(t);
            out.push_back(Ok(Delta::Text(t.to_string())));
        }
    }

    /// One streamed chunk.
    fn chunk(
        &mut self,
        v: &Value,
        out: &mut VecDeque<Result<Delta, LlmError>>,
    ) -> Result<(), Failure> {
        Answer::error_in(v)?;
        self.take_usage(v);
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            self.texts(delta, out);
            if let Some(frags) = delta.get("tool_calls").and_then(Value::as_array) {
                for frag in frags {
                    self.fragment(frag);
                }
            }
        }
        self.take_finish(choice);
        Ok(())
    }

    /// Add a tool-call fragment to the call at its `index`.
    fn fragment(&mut self, frag: &Value) {
        let id = frag.get("id").and_then(Value::as_str).unwrap_or("");
        let last = self.tools.keys().next_back().copied();
        let key = match frag.get("index").and_then(Value::as_u64) {
            Some(i) => i,
            // Without an index, a new id starts a new call.
            None if !id.is_empty() && !self.tools.values().any(|p| p.id == id) => {
                last.map_or(0, |k| k + 1)
            }
            None => last.unwrap_or(0),
        };
        let call = self.tools.entry(key).or_default();
        if !id.is_empty() {
            call.id = id.to_string();
        }
        let Some(function) = frag.get("function") else {
            return;
        };
        if let Some(name) = text_field(function, "name") {
            // Most servers send the name once; some repeat it whole, a few split it.
            if call.name != name {
                call.name.push_str(name);
            }
        }
        match function.get("arguments") {
            Some(Value::String(s)) => call.arguments.push_str(s),
            Some(v @ Value::Object(_)) => call.arguments = v.to_string(),
            _ => {}
        }
    }

    /// A whole (non-streamed) completion.
    fn completion(
        &mut self,
        v: &Value,
        out: &mut VecDeque<Result<Delta, LlmError>>,
    ) -> Result<(), Failure> {
        Answer::error_in(v)?;
        self.take_usage(v);
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Err(Failure::BadAnswer(v.to_string()));
        };
        if let Some(message) = choice.get("message") {
            self.texts(message, out);
            if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
                for (i, call) in calls.iter().enumerate() {
                    let mut call = call.clone();
                    if let Some(o) = call.as_object_mut() {
                        o.entry("index").or_insert(json!(i));
                    }
                    self.fragment(&call);
                }
            }
        }
        self.take_finish(choice);
        Ok(())
    }

    /// The closing deltas: length notice, tool calls, usage.
    fn finish(&mut self, prompt_tokens: u64, out: &mut VecDeque<Result<Delta, LlmError>>) {
        if self.truncated {
            out.push_back(Ok(Delta::Text(LENGTH_NOTICE.to_string())));
        }
        let calls: Vec<ToolCall> = std::mem::take(&mut self.tools)
            .into_iter()
            .map(|(i, p)| ToolCall {
                id: if p.id.is_empty() {
                    format!("call_{i}")
                } else {
                    p.id
                },
                name: p.name,
                arguments: parse_arguments(p.arguments),
            })
            .collect();
        let usage = self.usage.unwrap_or_else(|| Usage {
            prompt_tokens,
            completion_tokens: count_tokens(&self.generated)
                + calls
                    .iter()
                    .map(|c| count_tokens(&c.name) + count_tokens(&c.arguments.to_string()))
                    .sum::<u64>(),
        });
        if !calls.is_empty() {
            out.push_back(Ok(Delta::ToolCalls(calls)));
        }
        out.push_back(Ok(Delta::Usage(usage)));
    }
}

/// Tool arguments as JSON; text that does not parse is kept for the caller to report.
fn parse_arguments(raw: String) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(&raw).unwrap_or(Value::String(raw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    const KEY: &str = "sk-test-5ecret-k3y-0123456789";

    /// One scripted answer of the fake server.
    #[derive(Clone)]
    struct Reply {
        status: u16,
        headers: Vec<(String, String)>,
        /// Body pieces, each written after its delay.
        pieces: Vec<(Duration, Vec<u8>)>,
        /// Read the request, then say nothing.
        hang: bool,
    }

    impl Reply {
        fn sse_pieces(pieces: &[&[u8]], gap_ms: u64) -> Reply {
            Reply {
                status: 200,
                headers: vec![("Content-Type".into(), "text/event-stream".into())],
                pieces: pieces
                    .iter()
                    .map(|p| (Duration::from_millis(gap_ms), p.to_vec()))
                    .collect(),
                hang: false,
            }
        }

        fn sse(events: &[Value]) -> Reply {
            Reply::sse_pieces(&[sse_text(events).as_bytes()], 0)
        }

        fn status(status: u16, body: &str) -> Reply {
            Reply {
                status,
                headers: vec![("Content-Type".into(), "application/json".into())],
                pieces: vec![(Duration::ZERO, body.as_bytes().to_vec())],
                hang: false,
            }
        }

        fn json(body: Value) -> Reply {
            Reply::status(200, &body.to_string())
        }

        fn hang() -> Reply {
            Reply {
                status: 200,
                headers: Vec::new(),
                pieces: Vec::new(),
                hang: true,
            }
        }

        fn header(mut self, name: &str, value: &str) -> Reply {
            self.headers.push((name.into(), value.into()));
            self
        }
    }

    /// SSE events, then `[DONE]`.
    fn sse_text(events: &[Value]) -> String {
        let mut s: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        s.push_str("data: [DONE]\n\n");
        s
    }

    fn content(text: &str) -> Value {
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
    }

    /// A request as the fake server saw it.
    #[derive(Debug, Clone)]
    struct Seen {
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        body: Value,
    }

    impl Seen {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    struct Server {
        base: String,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    impl Server {
        fn seen(&self) -> Vec<Seen> {
            self.seen.lock().unwrap().clone()
        }
    }

    /// A fake OpenAI-compatible server answering connections in order from `replies`
    /// (the last one repeats).
    async fn serve(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1/", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        tokio::spawn(async move {
            let mut n = 0;
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies.get(n).or(replies.last()).cloned().unwrap();
                n += 1;
                let record = record.clone();
                tokio::spawn(async move { answer(sock, reply, record).await });
            }
        });
        Server { base, seen }
    }

    async fn answer(mut sock: TcpStream, reply: Reply, record: Arc<Mutex<Vec<Seen>>>) {
        sock.set_nodelay(true).unwrap();
        let Some(req) = read_request(&mut sock).await else {
            return;
        };
        record.lock().unwrap().push(req);
        if reply.hang {
            tokio::time::sleep(Duration::from_secs(30)).await;
            return;
        }
        let reason = reqwest::StatusCode::from_u16(reply.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Whatever");
        let mut head = format!(
            "HTTP/1.1 {} {reason}\r\nConnection: close\r\n",
            reply.status
        );
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if sock.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for (delay, piece) in &reply.pieces {
            tokio::time::sleep(*delay).await;
            if sock.write_all(piece).await.is_err() || sock.flush().await.is_err() {
                return;
            }
        }
        let _ = sock.shutdown().await;
    }

    async fn read_request(sock: &mut TcpStream) -> Option<Seen> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            let n = sock.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let n = sock.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let body = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
        Some(Seen {
            method,
            path,
            headers,
            body,
        })
    }

    fn endpoint(base: &str) -> Endpoint {
        Endpoint {
            factory: "OpenAI-API-Compatible".into(),
            base_url: base.into(),
            api_key: Some(KEY.into()),
            model: "test-model".into(),
            supports_tools: true,
            context_length: 32768,
            timeout: Duration::from_secs(5),
        }
    }

    fn model(base: &str) -> OpenAiModel {
        OpenAiModel::new(endpoint(base), OpenAiModel::http_client())
    }

    fn request(max_retries: u32) -> ChatRequest {
        ChatRequest {
            model: "test-model@OpenAI-API-Compatible".into(),
            messages: vec![
                Message::text(Role::System, "You are terse."),
                Message::text(Role::User, "Say hello world"),
            ],
            retry: Retry {
                max_retries,
                delay: Duration::from_millis(5),
            },
            ..Default::default()
        }
    }

    /// Every delta, and the error that ended the call (from `chat` or the stream).
    async fn run(model: &OpenAiModel, req: &ChatRequest) -> (Vec<Delta>, Option<LlmError>) {
        let mut stream = match model.chat(req).await {
            Ok(s) => s,
            Err(e) => return (Vec::new(), Some(e)),
        };
        let mut deltas = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(d) => deltas.push(d),
                Err(e) => {
                    assert!(
                        stream.next().await.is_none(),
                        "the stream ends after an error"
                    );
                    return (deltas, Some(e));
                }
            }
        }
        (deltas, None)
    }

    fn text(deltas: &[Delta]) -> String {
        deltas
            .iter()
            .filter_map(|d| match d {
                Delta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    fn usage(deltas: &[Delta]) -> Usage {
        match deltas.last() {
            Some(Delta::Usage(u)) => *u,
            other => panic!("no closing usage: {other:?}"),
        }
    }

    fn call_error(e: Option<LlmError>) -> (ErrorCode, String) {
        match e {
            Some(LlmError::Call { code, message }) => (code, message),
            other => panic!("expected a call error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn streams_text_split_across_writes() {
        // "wö" split inside the two bytes of ö, and a line split mid-JSON.
        let all = sse_text(&[content("Hel"), content("lo wö"), content("rld")]);
        let bytes = all.as_bytes();
        let o = all.find('ö').unwrap();
        let mid_line = all.find("lo w").unwrap();
        let server = serve(vec![Reply::sse_pieces(
            &[&bytes[..mid_line], &bytes[mid_line..o + 1], &bytes[o + 1..]],
            30,
        )])
        .await;
        let m = model(&server.base);
        let (deltas, err) = run(&m, &request(0)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            deltas[..3],
            [
                Delta::Text("Hel".into()),
                Delta::Text("lo wö".into()),
                Delta::Text("rld".into())
            ]
        );
        // No usage from the server: estimated from the request and the answer.
        let u = usage(&deltas);
        assert_eq!(
            u.prompt_tokens,
            count_tokens("You are terse.") + count_tokens("Say hello world")
        );
        assert_eq!(u.completion_tokens, count_tokens("Hello wörld"));
        assert_eq!(deltas.len(), 4);
        let seen = server.seen();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].method.as_str(), seen[0].path.as_str()),
            ("POST", "/v1/chat/completions")
        );
    }

    #[tokio::test]
    async fn deltas_arrive_before_the_stream_ends() {
        let first = sse_text(&[content("early")]);
        let first = first.trim_end_matches("data: [DONE]\n\n").to_string();
        let server = serve(vec![Reply::sse_pieces(
            &[first.as_bytes(), b": keep-alive\n\n", b"data: [DONE]\n\n"],
            300,
        )])
        .await;
        let m = model(&server.base);
        let started = std::time::Instant::now();
        let mut s = m.chat(&request(0)).await.unwrap();
        assert_eq!(
            s.next().await.unwrap().unwrap(),
            Delta::Text("early".into())
        );
        assert!(
            started.elapsed() < Duration::from_millis(550),
            "{:?}",
            started.elapsed()
        );
        assert!(matches!(s.next().await, Some(Ok(Delta::Usage(_)))));
        assert!(s.next().await.is_none());
    }

    #[tokio::test]
    async fn reasoning_is_a_separate_delta() {
        let server = serve(vec![Reply::sse(&[
            json!({"choices": [{"delta": {"role": "assistant", "content": "", "reasoning_content": "Let me think."}}]}),
            json!({"choices": [{"delta": {"reasoning": " Done."}}]}),
            content("Answer."),
        ])])
        .await;
        let (deltas, err) = run(&model(&server.base), &request(0)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            deltas[..3],
            [
                Delta::Reasoning("Let me think.".into()),
                Delta::Reasoning(" Done.".into()),
                Delta::Text("Answer.".into())
            ]
        );
    }

    #[tokio::test]
    async fn tool_call_fragments_make_one_call() {
        let frag = |v: Value| json!({"choices": [{"delta": {"tool_calls": [v]}}]});
        let server = serve(vec![Reply::sse(&[
            content("Checking."),
            frag(json!({"index": 0, "id": "call_a", "type": "function", "function": {"name": "weather", "arguments": ""}})),
            frag(json!({"index": 0, "function": {"arguments": "{\"city\": "}})),
            frag(json!({"index": 1, "id": "call_b", "function": {"name": "clock", "arguments": "{not json"}})),
            frag(json!({"index": 0, "function": {"arguments": "\"Paris\"}"}})),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        ])])
        .await;
        let (deltas, err) = run(&model(&server.base), &request(0)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(deltas[0], Delta::Text("Checking.".into()));
        let calls: Vec<&Vec<ToolCall>> = deltas
            .iter()
            .filter_map(|d| match d {
                Delta::ToolCalls(c) => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 1, "one ToolCalls delta: {deltas:?}");
        assert_eq!(
            *calls[0],
            vec![
                ToolCall {
                    id: "call_a".into(),
                    name: "weather".into(),
                    arguments: json!({"city": "Paris"}),
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "clock".into(),
                    arguments: Value::String("{not json".into()),
                },
            ]
        );
        assert!(matches!(deltas.last(), Some(Delta::Usage(_))));
    }

    #[tokio::test]
    async fn usage_from_the_server() {
        let server = serve(vec![Reply::sse(&[
            content("Hi"),
            json!({"choices": [], "usage": {"prompt_tokens": 17, "completion_tokens": 3, "total_tokens": 20}}),
        ])])
        .await;
        let (deltas, err) = run(&model(&server.base), &request(0)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            deltas,
            [
                Delta::Text("Hi".into()),
                Delta::Usage(Usage {
                    prompt_tokens: 17,
                    completion_tokens: 3
                })
            ]
        );
    }

    #[tokio::test]
    async fn length_finish_appends_the_notice() {
        let server = serve(vec![Reply::sse(&[
            content("Once upon"),
            json!({"choices": [{"delta": {"content": " a time"}, "finish_reason": "length"}]}),
        ])])
        .await;
        let (deltas, err) = run(&model(&server.base), &request(0)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text(&deltas), format!("Once upon a time{LENGTH_NOTICE}"));
        assert_eq!(deltas[2], Delta::Text(LENGTH_NOTICE.into()));
    }

    #[tokio::test]
    async fn non_streamed_json_answer() {
        let server = serve(vec![Reply::json(json!({
            "id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "length", "message": {
                "role": "assistant", "content": "Hello", "reasoning_content": "hmm",
                "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "search", "arguments": "{\"q\": \"rust\"}"}}]
            }}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 4}
        }))])
        .await;
        let (deltas, err) = run(&model(&server.base), &request(0)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            deltas,
            [
                Delta::Reasoning("hmm".into()),
                Delta::Text("Hello".into()),
                Delta::Text(LENGTH_NOTICE.into()),
                Delta::ToolCalls(vec![ToolCall {
                    id: "c1".into(),
                    name: "search".into(),
                    arguments: json!({"q": "rust"}),
                }]),
                Delta::Usage(Usage {
                    prompt_tokens: 9,
                    completion_tokens: 4
                }),
            ]
        );
    }

    #[tokio::test]
    async fn request_body_shape() {
        let server = serve(vec![Reply::sse(&[content("ok")])]).await;
        let m = model(&server.base);
        let mut req = request(0);
        req.params.insert("temperature".into(), json!(0.1));
        req.params.insert("top_p".into(), json!(0.3));
        req.messages.push(Message {
            role: Role::Assistant,
            content: Value::Null,
            tool_calls: vec![
                ToolCall {
                    id: "call_1".into(),
                    name: "search".into(),
                    arguments: json!({"q": "x"}),
                },
                ToolCall {
                    id: "call_2".into(),
                    name: "raw".into(),
                    arguments: Value::String("{\"a\": 1}".into()),
                },
            ],
            tool_call_id: None,
        });
        req.messages.push(Message {
            role: Role::Tool,
            content: json!("result"),
            tool_calls: Vec::new(),
            tool_call_id: Some("call_1".into()),
        });
        req.messages.push(Message {
            role: Role::User,
            content: json!([{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]),
            tool_calls: Vec::new(),
            tool_call_id: None,
        });
        run(&m, &req).await;
        let mut with_tools = request(0);
        with_tools.tools = vec![
            json!({"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}),
        ];
        let keyless = OpenAiModel::new(
            Endpoint {
                api_key: None,
                ..endpoint(&server.base)
            },
            OpenAiModel::http_client(),
        );
        run(&keyless, &with_tools).await;

        let seen = server.seen();
        assert_eq!(seen.len(), 2);
        let b = &seen[0].body;
        assert_eq!(b["model"], "test-model");
        assert_eq!(b["stream"], true);
        assert_eq!(b["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            (b["temperature"].clone(), b["top_p"].clone()),
            (json!(0.1), json!(0.3))
        );
        for absent in ["tools", "tool_choice", "max_tokens"] {
            assert!(b.get(absent).is_none(), "{absent} sent: {b}");
        }
        assert_eq!(
            b["messages"],
            json!([
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Say hello world"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "raw", "arguments": "{\"a\": 1}"}}
                ]},
                {"role": "tool", "content": "result", "tool_call_id": "call_1"},
                {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]}
            ])
        );
        assert_eq!(
            seen[0].header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(seen[0].header("content-type"), Some("application/json"));
        assert!(seen[0].header("user-agent").unwrap().starts_with("canvas/"));

        let b = &seen[1].body;
        assert_eq!(b["tools"], json!(with_tools.tools));
        assert_eq!(b["tool_choice"], "auto");
        assert_eq!(seen[1].header("authorization"), None);
    }

    #[test]
    fn model_family_policies() {
        let apply = |factory: &str, model: &str, body: Value| {
            let mut body = body.as_object().unwrap().clone();
            apply_model_family_policies(factory, model, &mut body);
            Value::Object(body)
        };
        // Qwen3: thinking off unless asked; "-preview" always thinks.
        assert_eq!(
            apply("Tongyi-Qianwen", "qwen3-max", json!({})),
            json!({"enable_thinking": false})
        );
        assert_eq!(
            apply(
                "SILICONFLOW",
                "Qwen/Qwen3-8B",
                json!({"enable_thinking": true})
            ),
            json!({"enable_thinking": true})
        );
        assert_eq!(
            apply(
                "Tongyi-Qianwen",
                "qwen3-plus",
                json!({"thinking": "enabled", "temperature": 0.2})
            ),
            json!({"temperature": 0.2, "enable_thinking": true})
        );
        assert_eq!(
            apply(
                "Tongyi-Qianwen",
                "qwen3-plus",
                json!({"thinking": {"type": "enabled"}})
            ),
            json!({"thinking": {"type": "enabled"}})
        );
        assert_eq!(
            apply(
                "Tongyi-Qianwen",
                "qwen3-235b-preview",
                json!({"enable_thinking": false})
            ),
            json!({"enable_thinking": true})
        );
        assert_eq!(apply("Tongyi-Qianwen", "qwen-max", json!({})), json!({}));
        // DeepSeek: thinking disabled unless given.
        assert_eq!(
            apply("DeepSeek", "deepseek-chat", json!({"temperature": 0.1})),
            json!({"temperature": 0.1, "thinking": {"type": "disabled"}})
        );
        assert_eq!(
            apply("DeepSeek", "deepseek-chat", json!({"thinking": "enabled"})),
            json!({"thinking": {"type": "enabled"}})
        );
        assert_eq!(
            apply(
                "DeepSeek",
                "deepseek-chat",
                json!({"thinking": {"type": "enabled", "x": 1}})
            ),
            json!({"thinking": {"type": "enabled", "x": 1}})
        );
        assert_eq!(
            apply("OpenAI-API-Compatible", "deepseek-chat", json!({})),
            json!({})
        );
        // gpt-5: no sampling parameters.
        assert_eq!(
            apply(
                "OpenAI",
                "gpt-5-mini",
                json!({"temperature": 0.1, "top_p": 0.3, "presence_penalty": 0.4})
            ),
            json!({"presence_penalty": 0.4})
        );
        assert_eq!(
            apply("OpenAI", "gpt-4o", json!({"temperature": 0.1})),
            json!({"temperature": 0.1})
        );
        // Kimi K2.5/K2.6: fixed sampling.
        assert_eq!(
            apply(
                "Moonshot",
                "kimi-k2.5",
                json!({"temperature": 0.6, "top_p": 0.3, "presence_penalty": 0.4, "frequency_penalty": 0.7})
            ),
            json!({"top_p": 0.95, "presence_penalty": 0.0, "frequency_penalty": 0.0, "n": 1})
        );
        assert_eq!(
            apply(
                "Moonshot",
                "kimi-k2.6-preview",
                json!({"thinking": "disabled"})
            ),
            json!({"thinking": {"type": "disabled"}, "top_p": 0.95, "presence_penalty": 0.0, "frequency_penalty": 0.0, "n": 1})
        );
        assert_eq!(
            apply("Moonshot", "kimi-k2-turbo", json!({"temperature": 0.6})),
            json!({"temperature": 0.6})
        );
    }

    #[test]
    fn status_classification() {
        assert_eq!(
            classify_status(429, "slow down"),
            ErrorCode::RateLimitExceeded
        );
        assert_eq!(
            classify_status(429, r#"{"error": {"code": "insufficient_quota"}}"#),
            ErrorCode::QuotaExceeded
        );
        assert_eq!(
            classify_status(429, "Insufficient Balance"),
            ErrorCode::QuotaExceeded
        );
        assert_eq!(classify_status(401, ""), ErrorCode::AuthError);
        assert_eq!(classify_status(403, ""), ErrorCode::AuthError);
        for s in [400, 404, 413, 422] {
            assert_eq!(classify_status(s, "bad"), ErrorCode::InvalidRequest);
        }
        assert_eq!(
            classify_status(400, "blocked by the content_filter"),
            ErrorCode::ContentFiltered
        );
        assert_eq!(
            classify_status(400, "Sensitive words"),
            ErrorCode::ContentFiltered
        );
        assert_eq!(classify_status(502, ""), ErrorCode::ServerError);
        assert_eq!(classify_status(418, ""), ErrorCode::GenericError);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let retry = Retry {
            max_retries: 5,
            delay: Duration::from_secs(2),
        };
        assert_eq!(backoff(retry, 1, None, 1.0), Duration::from_secs(2));
        assert_eq!(backoff(retry, 3, None, 1.0), Duration::from_secs(8));
        assert_eq!(backoff(retry, 2, None, 0.8), Duration::from_secs_f64(3.2));
        assert_eq!(backoff(retry, 2, None, 1.2), Duration::from_secs_f64(4.8));
        assert_eq!(backoff(retry, 10, None, 1.2), MAX_WAIT);
        assert_eq!(backoff(retry, 40, None, 1.0), MAX_WAIT);
        assert_eq!(
            backoff(retry, 1, Some(Duration::from_secs(7)), 1.0),
            Duration::from_secs(7)
        );
        assert_eq!(
            backoff(retry, 1, Some(Duration::from_secs(1)), 1.0),
            Duration::from_secs(2)
        );
        assert_eq!(
            backoff(retry, 1, Some(Duration::from_secs(600)), 1.0),
            MAX_WAIT
        );
    }

    #[tokio::test]
    async fn rate_limit_then_success() {
        let server = serve(vec![
            Reply::status(429, r#"{"error": {"message": "Rate limit reached"}}"#)
                .header("Retry-After", "0"),
            Reply::sse(&[content("after the wait")]),
        ])
        .await;
        let (deltas, err) = run(&model(&server.base), &request(1)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text(&deltas), "after the wait");
        assert_eq!(server.seen().len(), 2);
    }

    #[tokio::test]
    async fn server_errors_are_retried() {
        let server = serve(vec![
            Reply::status(503, "busy"),
            Reply::status(503, "busy"),
            Reply::sse(&[content("third time")]),
        ])
        .await;
        let (deltas, err) = run(&model(&server.base), &request(2)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text(&deltas), "third time");
        assert_eq!(server.seen().len(), 3);
    }

    #[tokio::test]
    async fn server_errors_until_the_attempts_run_out() {
        let server = serve(vec![Reply::status(
            503,
            "{\"error\":\n  {\"message\": \"The   engine is\n overloaded\"}}",
        )])
        .await;
        let (deltas, err) = run(&model(&server.base), &request(2)).await;
        assert!(deltas.is_empty());
        let (code, message) = call_error(err);
        // RAGFlow names a failure of the last attempt so, whatever its class.
        assert_eq!(code, ErrorCode::MaxRetriesExceeded);
        assert_eq!(server.seen().len(), 3);
        let url = format!("{}chat/completions", server.base);
        assert_eq!(
            message,
            format!(
                "HTTP 503 Service Unavailable from {url} after 3 attempts: {{\"error\": {{\"message\": \"The engine is overloaded\"}}}}"
            )
        );
    }

    #[tokio::test]
    async fn bad_request_is_not_retried() {
        let server = serve(vec![Reply::status(
            400,
            r#"{"error": {"message": "unknown field"}}"#,
        )])
        .await;
        let (_, err) = run(&model(&server.base), &request(3)).await;
        let (code, message) = call_error(err);
        assert_eq!(code, ErrorCode::InvalidRequest);
        assert!(
            message.starts_with("HTTP 400 Bad Request from "),
            "{message}"
        );
        assert!(message.contains("after 1 attempt: "), "{message}");
        assert_eq!(server.seen().len(), 1);
    }

    #[tokio::test]
    async fn no_answer_in_time_is_a_timeout() {
        let server = serve(vec![Reply::hang()]).await;
        let m = OpenAiModel::new(
            Endpoint {
                timeout: Duration::from_millis(200),
                ..endpoint(&server.base)
            },
            OpenAiModel::http_client(),
        );
        let started = std::time::Instant::now();
        let (_, err) = run(&m, &request(1)).await;
        let (code, message) = call_error(err);
        assert_eq!(code, ErrorCode::MaxRetriesExceeded);
        // Timeouts before any answer are retried.
        assert_eq!(server.seen().len(), 2);
        assert_eq!(
            message,
            format!(
                "no answer from {}chat/completions within 200 ms (attempt 2 of 2)",
                server.base
            )
        );
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn failure_after_text_is_the_last_item_and_not_retried() {
        let first = sse_text(&[content("partial")]);
        let first = first.trim_end_matches("data: [DONE]\n\n").to_string();
        let mut reply = Reply::sse_pieces(&[first.as_bytes()], 0);
        reply
            .pieces
            .push((Duration::from_secs(30), b"data: [DONE]\n\n".to_vec()));
        let server = serve(vec![reply]).await;
        let m = OpenAiModel::new(
            Endpoint {
                timeout: Duration::from_millis(300),
                ..endpoint(&server.base)
            },
            OpenAiModel::http_client(),
        );
        let (deltas, err) = run(&m, &request(2)).await;
        assert_eq!(deltas, [Delta::Text("partial".into())]);
        let (code, message) = call_error(err);
        assert_eq!(code, ErrorCode::Timeout);
        assert!(
            message.contains("did not end within 300 ms (attempt 1 of 3)"),
            "{message}"
        );
        assert_eq!(server.seen().len(), 1);
    }

    #[tokio::test]
    async fn malformed_chunk_is_a_model_error() {
        let bad = "data: {\"choices\": [oops";
        let body = format!("data: {}\n\n{bad}\n\ndata: [DONE]\n\n", content("fine"));
        let server = serve(vec![Reply::sse_pieces(&[body.as_bytes()], 0)]).await;
        let m = model(&server.base);
        let (deltas, err) = run(&m, &request(2)).await;
        assert_eq!(deltas, [Delta::Text("fine".into())]);
        let (code, message) = call_error(err);
        assert_eq!(code, ErrorCode::ModelError);
        assert_eq!(
            message,
            format!(
                "malformed stream chunk from {}chat/completions: {{\"choices\": [oops",
                server.base
            )
        );
        assert_eq!(server.seen().len(), 1);

        // Before any delta: the call itself fails, without a retry.
        let server = serve(vec![Reply::sse_pieces(&[b"<html>Gateway</html>\n"], 0)]).await;
        let (deltas, err) = run(&model(&server.base), &request(2)).await;
        assert!(deltas.is_empty());
        let (code, message) = call_error(err);
        assert_eq!(code, ErrorCode::ModelError);
        assert!(message.ends_with(": <html>Gateway</html>"), "{message}");
        assert_eq!(server.seen().len(), 1);
    }

    #[tokio::test]
    async fn error_chunk_is_an_error() {
        let server = serve(vec![Reply::sse(&[
            content("a"),
            json!({"error": {"message": "Content blocked as sensitive", "code": "data_inspection_failed"}}),
        ])])
        .await;
        // Not the last attempt allowed, but never retried once text arrived: the
        // failure keeps its class.
        let (deltas, err) = run(&model(&server.base), &request(1)).await;
        assert_eq!(deltas, [Delta::Text("a".into())]);
        let (code, message) = call_error(err);
        assert_eq!(code, ErrorCode::ContentFiltered);
        assert!(
            message.ends_with(": Content blocked as sensitive (data_inspection_failed)"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn refused_connection_is_a_connection_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let base = format!("http://127.0.0.1:{port}/v1");
        let (_, err) = run(&model(&base), &request(1)).await;
        let (code, message) = call_error(err);
        assert_eq!(code, ErrorCode::MaxRetriesExceeded);
        assert!(
            message.starts_with(&format!("cannot connect to {base}/chat/completions: ")),
            "{message}"
        );
        assert!(message.ends_with("(attempt 2 of 2)"), "{message}");
        assert!(!message.contains('\n'));
    }

    #[tokio::test]
    async fn only_the_last_attempt_is_max_retries_exceeded() {
        // A refusal that is not retried keeps its class while attempts remain...
        let server = serve(vec![Reply::status(
            400,
            r#"{"error": {"message": "no such field"}}"#,
        )])
        .await;
        let (_, err) = run(&model(&server.base), &request(2)).await;
        let text = err.expect("an error").ragflow_text();
        assert!(
            text.starts_with("**ERROR**: INVALID_REQUEST - HTTP 400 Bad Request from "),
            "{text}"
        );
        assert_eq!(server.seen().len(), 1);
        // ...and is RAGFlow's MAX_RETRIES_EXCEEDED when it was the last one allowed.
        let (_, err) = run(&model(&server.base), &request(0)).await;
        let text = err.expect("an error").ragflow_text();
        assert!(
            text.starts_with("**ERROR**: MAX_RETRIES_EXCEEDED - HTTP 400 Bad Request from "),
            "{text}"
        );
        assert!(text.contains("after 1 attempt: "), "{text}");
        assert!(text.contains("no such field"), "{text}");
    }

    #[tokio::test]
    async fn the_key_never_appears() {
        // A server that echoes the key, as some do in their auth errors.
        let echo = format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}"#);
        let server = serve(vec![
            Reply::status(401, &echo),
            Reply::status(429, &echo),
            Reply::sse_pieces(&[format!("data: {{\"broken {KEY}\n").as_bytes()], 0),
            Reply::sse(&[json!({"error": {"message": format!("bad key {KEY}")}})]),
        ])
        .await;
        let m = model(&server.base);
        let mut texts = Vec::new();
        let mut codes = Vec::new();
        for _ in 0..4 {
            let (_, err) = run(&m, &request(0)).await;
            let err = err.expect("an error");
            texts.push(err.to_string());
            texts.push(err.ragflow_text());
            texts.push(format!("{err:?}"));
            codes.push(call_error(Some(err)).0);
        }
        // Each failed the only attempt allowed.
        assert_eq!(codes, [ErrorCode::MaxRetriesExceeded; 4]);
        assert_eq!(server.seen().len(), 4);
        assert_eq!(
            server.seen()[0].header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dead = format!("http://{}/v1", listener.local_addr().unwrap());
        drop(listener);
        let (_, err) = run(&model(&dead), &request(0)).await;
        texts.push(format!("{:?}", err.expect("an error")));
        texts.push(format!("{m:?}"));
        texts.push(format!("{:?}", m.endpoint()));
        for t in &texts {
            assert!(!t.contains(KEY), "key leaked: {t}");
        }
        assert!(
            texts[0].contains("Incorrect API key provided: <redacted>"),
            "{}",
            texts[0]
        );
    }

    #[test]
    fn the_model_reports_its_endpoint_limits() {
        let m = OpenAiModel::new(
            Endpoint {
                supports_tools: false,
                context_length: 4096,
                ..endpoint("http://x/v1")
            },
            OpenAiModel::http_client(),
        );
        assert!(!m.supports_tools());
        assert_eq!(m.context_length(), 4096);
        assert_eq!(m.url(), "http://x/v1/chat/completions");
    }

    #[test]
    fn only_real_keys_are_redacted() {
        let msg = "cannot connect: bad key sk-live-1234567890";
        assert_eq!(
            redact(msg, "sk-live-1234567890"),
            "cannot connect: bad key <redacted>"
        );
        assert_eq!(redact(msg, "a"), msg);
        assert_eq!(redact(msg, "EMPTY"), msg);
    }
}
