//! Recording and replaying model calls: `--record FILE` saves every call of a run with
//! its streamed answer ([`Recorder`]); `--replay FILE` answers from the file
//! ([`Replayer`]), so a canvas can be regression-tested in CI without a provider.
//!
//! The file is pretty JSON: `{"version": 1, "date", "calls": [{"llm_id", "request":
//! {"messages", "tools"}, "deltas": [...]}], "models": {...}}`. Requests are stored
//! without sampling parameters; keys never reach this layer.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use async_trait::async_trait;
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    ChatModel, ChatRequest, Delta, DeltaStream, ErrorCode, LlmError, Message, ModelSource,
    ToolCall, Usage,
};

/// The file format version this build writes and reads.
const VERSION: u32 = 1;

/// A recording file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Recording {
    version: u32,
    /// `sys.date` of the recorded run, replayed as is.
    date: String,
    calls: Vec<RecordedCall>,
    /// What each model said of itself (tool support and context length change the
    /// requests components build, so a replay must see the same values).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    models: BTreeMap<String, ModelTraits>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelTraits {
    supports_tools: bool,
    context_length: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordedCall {
    llm_id: String,
    request: RecordedRequest,
    deltas: Vec<RecordedDelta>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordedRequest {
    messages: Vec<Message>,
    #[serde(default)]
    tools: Vec<Value>,
}

/// A delta as stored: one key naming its kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RecordedDelta {
    Text(String),
    Reasoning(String),
    ToolCalls(Vec<ToolCall>),
    Usage(Usage),
    Error { code: String, message: String },
}

impl RecordedDelta {
    fn of(delta: &Delta) -> RecordedDelta {
        match delta {
            Delta::Text(t) => RecordedDelta::Text(t.clone()),
            Delta::Reasoning(t) => RecordedDelta::Reasoning(t.clone()),
            Delta::ToolCalls(c) => RecordedDelta::ToolCalls(c.clone()),
            Delta::Usage(u) => RecordedDelta::Usage(*u),
        }
    }

    fn of_error(e: &LlmError) -> RecordedDelta {
        match e {
            LlmError::Call { code, message } => RecordedDelta::Error {
                code: code.as_str().to_string(),
                message: message.clone(),
            },
            other => RecordedDelta::Error {
                code: ErrorCode::GenericError.as_str().to_string(),
                message: other.to_string(),
            },
        }
    }

    /// Back to what the stream yields (codes were checked when the file was loaded).
    fn replay(&self) -> Result<Delta, LlmError> {
        match self {
            RecordedDelta::Text(t) => Ok(Delta::Text(t.clone())),
            RecordedDelta::Reasoning(t) => Ok(Delta::Reasoning(t.clone())),
            RecordedDelta::ToolCalls(c) => Ok(Delta::ToolCalls(c.clone())),
            RecordedDelta::Usage(u) => Ok(Delta::Usage(*u)),
            RecordedDelta::Error { code, message } => Err(LlmError::Call {
                code: parse_code(code).unwrap_or(ErrorCode::GenericError),
                message: message.clone(),
            }),
        }
    }
}

/// RAGFlow's error code name back to the code.
fn parse_code(name: &str) -> Option<ErrorCode> {
    use ErrorCode::*;
    [
        RateLimitExceeded,
        AuthError,
        InvalidRequest,
        ServerError,
        Timeout,
        ConnectionError,
        ModelError,
        ContentFiltered,
        QuotaExceeded,
        MaxRetriesExceeded,
        GenericError,
    ]
    .into_iter()
    .find(|c| c.as_str() == name)
}

/// JSON with object keys sorted, so equal requests compare equal whatever the key order
/// of their contents (tool arguments, content parts).
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// The matching key of a call.
fn call_key(llm_id: &str, messages: &[Message], tools: &[Value]) -> String {
    let messages = serde_json::to_value(messages).unwrap_or(Value::Null);
    canonical(&serde_json::json!([llm_id, messages, tools]))
}

/// Read and check a recording; `Ok(None)` when the file does not exist.
fn read_recording(path: &Path) -> Result<Option<Recording>, LlmError> {
    let label = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(LlmError::Config(format!(
                "{label}: cannot read the recording: {e}"
            )));
        }
    };
    let recording: Recording = serde_json::from_str(&text)
        .map_err(|e| LlmError::Config(format!("{label}: not a recording of model calls: {e}")))?;
    if recording.version != VERSION {
        return Err(LlmError::Config(format!(
            "{label}: recording version {} is not supported (this build reads version {VERSION})",
            recording.version
        )));
    }
    for (i, call) in recording.calls.iter().enumerate() {
        let unknown = call.deltas.iter().find_map(|d| match d {
            RecordedDelta::Error { code, .. } if parse_code(code).is_none() => Some(code),
            _ => None,
        });
        if let Some(code) = unknown {
            return Err(LlmError::Config(format!(
                "{label}: call {}: unknown error code {code:?}",
                i + 1
            )));
        }
    }
    Ok(Some(recording))
}

/// Write `recording` to `path` atomically: a temporary file in the same directory, then
/// a rename, so a crash never leaves half a file.
fn write_recording(path: &Path, recording: &Recording) -> Result<(), LlmError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let fail = |e: &dyn std::fmt::Display| {
        LlmError::Config(format!(
            "{}: cannot write the recording: {e}",
            path.display()
        ))
    };
    let mut text = serde_json::to_string_pretty(recording).map_err(|e| fail(&e))?;
    text.push('\n');
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "recording".to_string());
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    let result = written.and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(&e));
    }
    Ok(())
}

/// The recording being written, shared by every model of a run.
struct Journal {
    path: PathBuf,
    recording: Mutex<Recording>,
}

impl Journal {
    /// Add a finished call and rewrite the file (under the lock, so parallel calls never
    /// lose each other's writes).
    fn append(&self, call: RecordedCall) -> Result<(), LlmError> {
        let mut rec = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        rec.calls.push(call);
        write_recording(&self.path, &rec)
    }

    /// Note what a model says of itself (written with the next call).
    fn note_model(&self, llm_id: &str, traits: ModelTraits) {
        let mut rec = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        rec.models.insert(llm_id.to_string(), traits);
    }
}

/// Saves every model call of a run, with its answer, to a file (`--record FILE`).
pub struct Recorder {
    inner: Arc<dyn ModelSource>,
    journal: Arc<Journal>,
    date: String,
}

impl Recorder {
    /// Record calls to `inner` in `path`. An existing recording is appended to (a resumed
    /// run records into the same file) and keeps its date; anything else at `path` is an
    /// error rather than overwritten.
    pub fn new(
        inner: Arc<dyn ModelSource>,
        path: PathBuf,
        date: String,
    ) -> Result<Recorder, LlmError> {
        let existing = match std::fs::metadata(&path) {
            // An empty file (from `mktemp`, say) is a new recording.
            Ok(m) if m.len() == 0 => None,
            _ => read_recording(&path)?,
        };
        let recording = existing.unwrap_or(Recording {
            version: VERSION,
            date,
            calls: Vec::new(),
            models: BTreeMap::new(),
        });
        // Written now so an unwritable path fails before the run, and a run without
        // model calls still leaves a recording to replay.
        write_recording(&path, &recording)?;
        let date = recording.date.clone();
        Ok(Recorder {
            inner,
            journal: Arc::new(Journal {
                path,
                recording: Mutex::new(recording),
            }),
            date,
        })
    }

    /// The run's `sys.date`: the existing recording's when one was appended to.
    pub fn date(&self) -> &str {
        &self.date
    }
}

impl ModelSource for Recorder {
    fn model(&self, llm_id: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
        let inner = self.inner.model(llm_id)?;
        self.journal.note_model(
            llm_id,
            ModelTraits {
                supports_tools: inner.supports_tools(),
                context_length: inner.context_length(),
            },
        );
        Ok(Arc::new(RecordingModel {
            llm_id: llm_id.to_string(),
            inner,
            journal: self.journal.clone(),
        }))
    }
}

/// A model whose calls are recorded.
struct RecordingModel {
    llm_id: String,
    inner: Arc<dyn ChatModel>,
    journal: Arc<Journal>,
}

#[async_trait]
impl ChatModel for RecordingModel {
    async fn chat(&self, req: &ChatRequest) -> Result<DeltaStream, LlmError> {
        let call = RecordedCall {
            llm_id: self.llm_id.clone(),
            request: RecordedRequest {
                messages: req.messages.clone(),
                tools: req.tools.clone(),
            },
            deltas: Vec::new(),
        };
        match self.inner.chat(req).await {
            Ok(stream) => Ok(Box::pin(RecordingStream {
                inner: stream,
                call: Some(call),
                journal: self.journal.clone(),
                pending: None,
            })),
            Err(e) => {
                // A call refused before streaming is replayed as a failed stream.
                let mut call = call;
                call.deltas.push(RecordedDelta::of_error(&e));
                self.journal.append(call).map_err(|w| with_cause(w, &e))?;
                Err(e)
            }
        }
    }

    fn supports_tools(&self) -> bool {
        self.inner.supports_tools()
    }

    fn context_length(&self) -> usize {
        self.inner.context_length()
    }
}

/// A failure to write the recording, naming the call error it was recording.
fn with_cause(write: LlmError, call: &LlmError) -> LlmError {
    LlmError::Config(format!("{write} (while recording the error: {call})"))
}

/// Passes deltas through as they arrive; at the end (or the first error) the call is
/// appended to the recording. A stream dropped before its end (a cancelled run) is not
/// recorded: a resumed run makes the call again.
struct RecordingStream {
    inner: DeltaStream,
    /// `None` once recorded.
    call: Option<RecordedCall>,
    journal: Arc<Journal>,
    /// A write failure reported after the end of the answer.
    pending: Option<LlmError>,
}

impl Stream for RecordingStream {
    type Item = Result<Delta, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(e) = this.pending.take() {
            return Poll::Ready(Some(Err(e)));
        }
        let item = match this.inner.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        let Some(mut call) = this.call.take() else {
            return Poll::Ready(item);
        };
        match item {
            Some(Ok(delta)) => {
                call.deltas.push(RecordedDelta::of(&delta));
                this.call = Some(call);
                Poll::Ready(Some(Ok(delta)))
            }
            Some(Err(e)) => {
                call.deltas.push(RecordedDelta::of_error(&e));
                match this.journal.append(call) {
                    Ok(()) => Poll::Ready(Some(Err(e))),
                    Err(w) => Poll::Ready(Some(Err(with_cause(w, &e)))),
                }
            }
            None => match this.journal.append(call) {
                Ok(()) => Poll::Ready(None),
                // The answer is complete but unrecorded: the run must not pass as recorded.
                Err(w) => Poll::Ready(Some(Err(w))),
            },
        }
    }
}

/// Answers model calls from a recording (`--replay FILE`).
pub struct Replayer {
    path: PathBuf,
    date: String,
    /// Recorded answers by call key, in recorded order.
    answers: Arc<Mutex<HashMap<String, VecDeque<Vec<RecordedDelta>>>>>,
    models: BTreeMap<String, ModelTraits>,
}

impl Replayer {
    /// Load a recording made with [`Recorder`].
    pub fn load(path: &Path) -> Result<Replayer, LlmError> {
        let recording = read_recording(path)?.ok_or_else(|| {
            LlmError::Config(format!(
                "{}: cannot read the recording: no such file",
                path.display()
            ))
        })?;
        let mut answers: HashMap<String, VecDeque<Vec<RecordedDelta>>> = HashMap::new();
        for call in recording.calls {
            let key = call_key(&call.llm_id, &call.request.messages, &call.request.tools);
            answers.entry(key).or_default().push_back(call.deltas);
        }
        Ok(Replayer {
            path: path.to_path_buf(),
            date: recording.date,
            answers: Arc::new(Mutex::new(answers)),
            models: recording.models,
        })
    }

    /// The recorded run's `sys.date`, to run with again.
    pub fn date(&self) -> &str {
        &self.date
    }
}

impl ModelSource for Replayer {
    fn model(&self, llm_id: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
        Ok(Arc::new(ReplayModel {
            llm_id: llm_id.to_string(),
            path: self.path.clone(),
            answers: self.answers.clone(),
            traits: self.models.get(llm_id).copied(),
        }))
    }
}

/// A model answering from a recording.
struct ReplayModel {
    llm_id: String,
    path: PathBuf,
    answers: Arc<Mutex<HashMap<String, VecDeque<Vec<RecordedDelta>>>>>,
    traits: Option<ModelTraits>,
}

#[async_trait]
impl ChatModel for ReplayModel {
    async fn chat(&self, req: &ChatRequest) -> Result<DeltaStream, LlmError> {
        let key = call_key(&self.llm_id, &req.messages, &req.tools);
        let answer = {
            let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
            answers.get_mut(&key).and_then(VecDeque::pop_front)
        };
        let Some(deltas) = answer else {
            let user = req.last_user();
            let one_line: String = user
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            let mut head: String = one_line.chars().take(80).collect();
            if one_line.chars().count() > 80 {
                head.push('…');
            }
            return Err(LlmError::Replay(format!(
                "{} has no recorded answer for this call to \"{}\" (last user message: \
                 \"{head}\"); record the run again with --record",
                self.path.display(),
                self.llm_id
            )));
        };
        let items: Vec<Result<Delta, LlmError>> =
            deltas.iter().map(RecordedDelta::replay).collect();
        Ok(Box::pin(futures::stream::iter(items)))
    }

    fn supports_tools(&self) -> bool {
        self.traits.is_none_or(|t| t.supports_tools)
    }

    fn context_length(&self) -> usize {
        self.traits.map_or(8192, |t| t.context_length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Role;
    use futures::StreamExt;
    use serde_json::json;

    /// Answers every call with fixed deltas, then an optional error.
    struct Fake {
        deltas: Vec<Delta>,
        error: Option<ErrorCode>,
        tools: bool,
    }

    #[async_trait]
    impl ChatModel for Fake {
        async fn chat(&self, req: &ChatRequest) -> Result<DeltaStream, LlmError> {
            let mut items: Vec<Result<Delta, LlmError>> =
                vec![Ok(Delta::Text(format!("re: {}", req.last_user())))];
            items.extend(self.deltas.iter().cloned().map(Ok));
            if let Some(code) = self.error {
                items.push(Err(LlmError::Call {
                    code,
                    message: "boom after 3 attempts".into(),
                }));
            }
            Ok(Box::pin(futures::stream::iter(items)))
        }

        fn supports_tools(&self) -> bool {
            self.tools
        }

        fn context_length(&self) -> usize {
            32768
        }
    }

    /// A source handing out a fresh [`Fake`] for every id, counting calls.
    struct FakeSource(Vec<Delta>, Option<ErrorCode>);

    impl ModelSource for FakeSource {
        fn model(&self, _llm_id: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
            Ok(Arc::new(Fake {
                deltas: self.0.clone(),
                error: self.1,
                tools: false,
            }))
        }
    }

    fn full_answer() -> Vec<Delta> {
        vec![
            Delta::Reasoning("thinking".into()),
            Delta::Text(" more".into()),
            Delta::ToolCalls(vec![ToolCall {
                id: "call_1".into(),
                name: "search".into(),
                arguments: json!({"q": "x", "a": 1}),
            }]),
            Delta::Usage(Usage {
                prompt_tokens: 12,
                completion_tokens: 5,
            }),
        ]
    }

    fn req(user: &str) -> ChatRequest {
        let mut params = serde_json::Map::new();
        params.insert("temperature".into(), json!(0.1));
        ChatRequest {
            model: "m@X".into(),
            messages: vec![
                Message::text(Role::System, "sys"),
                Message::text(Role::User, user),
            ],
            tools: vec![json!({"type": "function", "function": {"name": "search"}})],
            params,
            ..Default::default()
        }
    }

    async fn collect(
        source: &dyn ModelSource,
        id: &str,
        r: ChatRequest,
    ) -> Vec<Result<Delta, LlmError>> {
        match source.model(id).unwrap().chat(&r).await {
            Ok(s) => s.collect().await,
            Err(e) => vec![Err(e)],
        }
    }

    fn show(items: &[Result<Delta, LlmError>]) -> Vec<String> {
        items
            .iter()
            .map(|i| match i {
                Ok(d) => format!("{d:?}"),
                Err(e) => format!("error {e:?}"),
            })
            .collect()
    }

    fn recorder(path: &Path, answer: Vec<Delta>, error: Option<ErrorCode>) -> Recorder {
        Recorder::new(
            Arc::new(FakeSource(answer, error)),
            path.to_path_buf(),
            "2025-01-02 03:04:05".into(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn record_then_replay_gives_identical_deltas() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.json");
        let rec = recorder(&path, full_answer(), None);
        let recorded = collect(&rec, "m@X", req("hello")).await;
        assert_eq!(recorded.len(), 5);
        let text = std::fs::read_to_string(&path).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(v["date"], "2025-01-02 03:04:05");
        assert_eq!(v["calls"][0]["llm_id"], "m@X");
        assert_eq!(v["calls"][0]["deltas"][0], json!({"text": "re: hello"}));
        assert_eq!(v["calls"][0]["deltas"][1], json!({"reasoning": "thinking"}));
        assert_eq!(
            v["calls"][0]["deltas"][4],
            json!({"usage": {"prompt_tokens": 12, "completion_tokens": 5}})
        );

        let rep = Replayer::load(&path).unwrap();
        assert_eq!(rep.date(), "2025-01-02 03:04:05");
        // Key order inside contents does not matter; sampling params are not compared.
        let mut again = req("hello");
        again.params.clear();
        again.tools = vec![json!({"function": {"name": "search"}, "type": "function"})];
        let model = rep.model("m@X").unwrap();
        assert!(!model.supports_tools());
        assert_eq!(model.context_length(), 32768);
        let replayed = collect(&rep, "m@X", again).await;
        assert_eq!(show(&replayed), show(&recorded));
    }

    #[tokio::test]
    async fn parallel_identical_calls_are_recorded_and_answered_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.json");
        let rec = recorder(&path, vec![], None);
        let (a, b, c) = tokio::join!(
            collect(&rec, "m@X", req("one")),
            collect(&rec, "m@X", req("two")),
            collect(&rec, "m@X", req("one")),
        );
        assert_eq!(a.len() + b.len() + c.len(), 3);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["calls"].as_array().unwrap().len(), 3);

        // Two identical calls with different answers: first recorded, first replayed.
        let mut rec: Recording = serde_json::from_value(v).unwrap();
        rec.calls[2].deltas = vec![RecordedDelta::Text("second".into())];
        let first = rec
            .calls
            .iter()
            .position(|c| c.request.messages[1].text_content() == "one")
            .unwrap();
        rec.calls[first].deltas = vec![RecordedDelta::Text("first".into())];
        rec.calls.swap(first, 0);
        write_recording(&path, &rec).unwrap();
        let rep = Replayer::load(&path).unwrap();
        let (x, y) = tokio::join!(
            collect(&rep, "m@X", req("one")),
            collect(&rep, "m@X", req("one")),
        );
        assert_eq!(show(&x), ["Text(\"first\")"]);
        assert_eq!(show(&y), ["Text(\"second\")"]);
        // A third identical call has no answer left.
        let z = collect(&rep, "m@X", req("one")).await;
        assert!(matches!(&z[..], [Err(LlmError::Replay(_))]));
    }

    #[tokio::test]
    async fn missing_call_error_names_the_file_and_the_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.json");
        recorder(&path, vec![], None);
        let rep = Replayer::load(&path).unwrap();
        let long = format!("line one\nline two {}", "x".repeat(100));
        let got = collect(&rep, "qwen@Tongyi-Qianwen", req(&long)).await;
        let [Err(LlmError::Replay(m))] = &got[..] else {
            panic!("{got:?}")
        };
        let head: String = long.replace('\n', " ").chars().take(80).collect();
        assert_eq!(
            m,
            &format!(
                "{} has no recorded answer for this call to \"qwen@Tongyi-Qianwen\" (last user \
                 message: \"{head}…\"); record the run again with --record",
                path.display()
            )
        );
        // Another model id does not match a recorded call either.
        let rec = recorder(&path, vec![], None);
        collect(&rec, "a@X", req("q")).await;
        let rep = Replayer::load(&path).unwrap();
        let got = collect(&rep, "b@X", req("q")).await;
        assert!(
            matches!(&got[..], [Err(LlmError::Replay(m))] if m.contains("\"b@X\"") && m.contains("\"q\")"))
        );
    }

    #[tokio::test]
    async fn appending_keeps_earlier_calls_and_the_date() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.json");
        let rec = recorder(&path, vec![], None);
        collect(&rec, "m@X", req("first run")).await;
        let rec = Recorder::new(
            Arc::new(FakeSource(vec![], None)),
            path.clone(),
            "2030-12-31 00:00:00".into(),
        )
        .unwrap();
        assert_eq!(rec.date(), "2025-01-02 03:04:05");
        collect(&rec, "m@X", req("resumed")).await;
        let rep = Replayer::load(&path).unwrap();
        assert_eq!(rep.date(), "2025-01-02 03:04:05");
        let a = collect(&rep, "m@X", req("first run")).await;
        let b = collect(&rep, "m@X", req("resumed")).await;
        assert_eq!(show(&a), ["Text(\"re: first run\")"]);
        assert_eq!(show(&b), ["Text(\"re: resumed\")"]);
        // Anything else at the path is not overwritten.
        let other = dir.path().join("notes.json");
        std::fs::write(&other, "{\"notes\": 1}").unwrap();
        let e = Recorder::new(
            Arc::new(FakeSource(vec![], None)),
            other.clone(),
            "d".into(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("notes.json") && e.contains("not a recording"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "{\"notes\": 1}");
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[tokio::test]
    async fn errors_are_recorded_and_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.json");
        let rec = recorder(&path, vec![], Some(ErrorCode::ServerError));
        let recorded = collect(&rec, "m@X", req("q")).await;
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            v["calls"][0]["deltas"][1],
            json!({"error": {"code": "SERVER_ERROR", "message": "boom after 3 attempts"}})
        );
        let rep = Replayer::load(&path).unwrap();
        let replayed = collect(&rep, "m@X", req("q")).await;
        assert_eq!(show(&replayed), show(&recorded));
        assert!(matches!(
            &replayed[1],
            Err(LlmError::Call { code: ErrorCode::ServerError, message }) if message == "boom after 3 attempts"
        ));
        // An unknown code in a file is refused at load.
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("SERVER_ERROR", "OOPS");
        std::fs::write(&path, text).unwrap();
        let e = Replayer::load(&path).err().unwrap().to_string();
        assert!(e.contains("unknown error code \"OOPS\""), "{e}");
    }

    #[tokio::test]
    async fn stored_request_has_messages_and_tools_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.json");
        let rec = recorder(&path, vec![], None);
        collect(&rec, "m@X", req("q")).await;
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let request = v["calls"][0]["request"].as_object().unwrap();
        let keys: Vec<_> = request.keys().map(String::as_str).collect();
        assert_eq!(keys, ["messages", "tools"]);
        assert_eq!(
            request["messages"],
            json!([{"role": "system", "content": "sys"}, {"role": "user", "content": "q"}])
        );
        let call = v["calls"][0].as_object().unwrap();
        let keys: Vec<_> = call.keys().map(String::as_str).collect();
        assert_eq!(keys, ["llm_id", "request", "deltas"]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("temperature") && !text.contains("api_key"));
    }

    #[tokio::test]
    async fn a_dropped_stream_is_not_recorded_and_a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.json");
        let rec = recorder(&path, full_answer(), None);
        let mut s = rec.model("m@X").unwrap().chat(&req("q")).await.unwrap();
        assert!(s.next().await.is_some());
        drop(s);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["calls"], json!([]));
        let e = Replayer::load(&dir.path().join("nope.json"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("nope.json"), "{e}");
    }
}
