//! The `Component` trait every node implements, and `NodeCx`, the window a running
//! component has onto the run (references, outputs, its parameters, the run's inputs).

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use super::graph::{Graph, Node};
use super::refs::{self, RefElement, RefError};
pub use super::role::{ContainerKind, Role};
use super::services::Services;
use super::state::{RunState, key_get, set_key};
use super::template;
use canvas_llm::{ChatModel, LlmError, ModelSource};
use canvas_pyrt::Object;

/// Why a component's invocation did not succeed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ComponentError {
    /// An exception RAGFlow catches: the text becomes the `_ERROR` output.
    #[error("{0}")]
    Failed(String),
    /// Something RAGFlow would crash on (or we cannot run): the turn stops cleanly.
    #[error("{0}")]
    Fatal(String),
}

impl From<RefError> for ComponentError {
    fn from(e: RefError) -> Self {
        ComponentError::Failed(e.py_message())
    }
}

/// Shorthand for component results.
pub type CResult<T> = Result<T, ComponentError>;

/// A parameter a component is built with but cannot run with (a value this build does not
/// support, or one that fails whenever the component runs): compile refuses the canvas for
/// it, so `run` stops before anything is stored and `validate` reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParamError {
    /// What is wrong, in one line.
    pub message: String,
    /// Where, as the keys (and array indices) below the component's `params`.
    pub path: Vec<String>,
}

impl ParamError {
    /// A problem with the parameter at `path` (keys and indices below `params`).
    pub fn new<S: ToString>(message: impl Into<String>, path: &[S]) -> ParamError {
        ParamError {
            message: message.into(),
            path: path.iter().map(ToString::to_string).collect(),
        }
    }
}

/// A streamed piece a draining Message emits.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// Text shown to the user.
    Text(String),
    /// `<think>` marker.
    StartThink,
    /// `</think>` marker.
    EndThink,
}

/// A stream plan a component left to be drained after its batch (RAGFlow's generator).
pub type Deferred = Box<dyn Any + Send>;

/// How a drained model stream left its component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// Its `content` is final: the component gets its `node_finished`.
    Done,
    /// It stopped at a failure and left `content` unset, as RAGFlow leaves a generator
    /// that returned early: the component never gets its `node_finished`.
    Abandoned,
}

/// A model answer an LLM/Agent leaves as its `content` until a Message streams it
/// (RAGFlow's lazy generator): the model is called when the Message pulls it.
#[async_trait]
pub trait ModelStream: Send {
    /// Call the model and emit the answer's pieces (think markers included). `cx` is
    /// the producing component's: the stream sets its final `content` (or `_ERROR`)
    /// and counts its usage.
    async fn run(
        self: Box<Self>,
        cx: &NodeCx<'_>,
        emit: &mut (dyn FnMut(Chunk) + Send),
    ) -> CResult<StreamEnd>;
}

/// One node type. Implementations live in `components/`, one file each.
#[async_trait]
pub trait Component: Send + Sync {
    /// The part this component plays in the run algorithm.
    fn role(&self) -> Role {
        Role::Plain
    }

    /// True when the component only computes from the run state (no I/O, no waiting,
    /// no streaming), so microseconds pass between its start and its end: its
    /// checkpoint may be grouped with the next ones'.
    fn instant(&self) -> bool {
        false
    }

    /// Output names declared by default (RAGFlow's `outputs` param default).
    fn default_outputs(&self) -> &'static [&'static str] {
        &[]
    }

    /// Parameters resolved as the component's kwargs (RAGFlow's `get_input_elements`)
    /// besides the DSL's declared `inputs`, with the default each takes when the DSL
    /// omits it: a tool's `meta.parameters`.
    fn input_params(&self) -> Vec<(String, Value)> {
        Vec::new()
    }

    /// The progress text shown in `node_started`.
    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        Cow::Borrowed("")
    }

    /// References used in the component's texts (`get_input_elements`), when its inputs
    /// are text references rather than declared `inputs`. They drive the
    /// missing-upstream rule and the keys of `node_finished.inputs`. They must depend
    /// only on the component's parameters and the graph: the scheduler asks once per
    /// canvas and keeps them.
    fn text_refs(&self, _cx: &NodeCx<'_>) -> Option<Vec<RefElement>> {
        None
    }

    /// What in the parameters this component cannot run with, though it could be built
    /// (`ParamError`). Compile refuses the canvas for it unless told to skip the checks
    /// (`--no-validate`, a resumed run); the component then fails when it is reached, as
    /// `invoke` still guards against it.
    fn check(&self) -> Result<(), ParamError> {
        Ok(())
    }

    /// Run the component.
    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()>;

    /// Drain a deferred stream after the batch (Message only), emitting chunks in order.
    async fn drain(
        &self,
        _cx: &NodeCx<'_>,
        _plan: Deferred,
        _emit: &mut (dyn FnMut(Chunk) + Send),
    ) -> CResult<()> {
        Ok(())
    }

    /// For IterationItem/LoopItem: whether the enclosing Iteration/Loop is done.
    fn end(&self, _cx: &NodeCx<'_>) -> CResult<bool> {
        Ok(false)
    }
}

/// Per-turn facts every component can read.
pub struct RunContext {
    /// The run id (the events' `task_id`).
    pub run_id: String,
    /// The run's `inputs` kwarg in RAGFlow's API shape (`{key: {value, type?}}`).
    pub inputs: Object,
    /// Random choices (Message alternatives); seeded by `--seed`.
    pub rng: Mutex<StdRng>,
    /// Where model calls go.
    pub models: Arc<dyn ModelSource>,
    /// Services components take by type (tool settings).
    pub services: Services,
}

impl RunContext {
    /// A context with a seeded random source and no models (tests, pause checks).
    pub fn seeded(run_id: &str, inputs: Object, seed: u64) -> RunContext {
        RunContext {
            run_id: run_id.to_string(),
            inputs,
            rng: Mutex::new(rand::SeedableRng::seed_from_u64(seed)),
            models: Arc::new(canvas_llm::NoModels),
            services: Services::new(),
        }
    }
}

/// State shared by the components of a running batch.
pub struct Shared {
    /// The run state; locked briefly, never across an await.
    pub state: Mutex<RunState>,
    /// Streams left to drain, by component id.
    pub deferred: Mutex<HashMap<String, Deferred>>,
    /// Model answers left to stream, by producing component id.
    pub streams: Mutex<HashMap<String, Box<dyn ModelStream>>>,
}

impl Shared {
    /// Shared state around `state`, with nothing deferred.
    pub fn new(state: RunState) -> Shared {
        Shared {
            state: Mutex::new(state),
            deferred: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
        }
    }
}

/// Lock a mutex, recovering the data if a panicking thread poisoned it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a component sees while it runs.
pub struct NodeCx<'a> {
    pub(crate) canvas: &'a Graph,
    pub(crate) node: &'a Node,
    pub(crate) shared: &'a Shared,
    pub(crate) run: &'a RunContext,
    pub(crate) kwargs: Object,
}

impl<'a> NodeCx<'a> {
    /// This component's id.
    pub fn id(&self) -> &str {
        &self.node.id
    }

    /// This component's parameters as written in the DSL.
    pub fn params(&self) -> &Object {
        &self.node.params
    }

    /// One parameter, `None` when absent.
    pub fn param(&self, name: &str) -> Option<&Value> {
        key_get(&self.node.params, name)
    }

    /// A string parameter, or `default` when absent or not a string.
    pub fn param_str<'b>(&'b self, name: &str, default: &'b str) -> &'b str {
        self.param(name).and_then(Value::as_str).unwrap_or(default)
    }

    /// Arguments the scheduler resolved from declared `inputs` (RAGFlow's kwargs).
    pub fn kwargs(&self) -> &Object {
        &self.kwargs
    }

    /// The run's `inputs` (API shape).
    pub fn run_inputs(&self) -> &Object {
        &self.run.inputs
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run.run_id
    }

    /// The run's service of type `T`, if the caller gave one.
    pub fn service<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.run.services.get::<T>()
    }

    /// RAGFlow's `get_input` for one parameter value (`engine.md` §2.4): a bare
    /// reference resolves to its raw value, a text with references is formatted, any
    /// other value is itself.
    pub fn input_value(&self, v: &Value) -> Result<Value, RefError> {
        self.canvas
            .input_value(&lock(&self.shared.state), &self.node.id, v)
    }

    /// The canvas's graph.
    pub fn canvas(&self) -> &Graph {
        self.canvas
    }

    /// The compiled node.
    pub fn node(&self) -> &Node {
        self.node
    }

    /// Run a closure with the locked run state.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut RunState) -> R) -> R {
        f(&mut lock(&self.shared.state))
    }

    /// RAGFlow's `get_variable_value`.
    pub fn resolve(&self, exp: &str) -> Result<Value, RefError> {
        refs::resolve(&lock(&self.shared.state), exp)
    }

    /// [`resolve`](Self::resolve), handing `f` the value without copying it when `exp`
    /// names an output or a global directly. `f` runs with the run state locked.
    pub fn resolve_with<R>(&self, exp: &str, f: impl FnOnce(&Value) -> R) -> Result<R, RefError> {
        refs::resolve_with(&lock(&self.shared.state), exp, f)
    }

    /// RAGFlow's `set_variable_value`.
    pub fn assign(&self, exp: &str, v: Value) -> Result<(), RefError> {
        refs::assign(&mut lock(&self.shared.state), exp, v)
    }

    /// RAGFlow's `is_reff` (fixed; see `refs::is_ref`).
    pub fn is_ref(&self, exp: &str) -> bool {
        refs::is_ref(&lock(&self.shared.state), exp)
    }

    /// Routine (b): `get_value_with_variable`.
    pub fn value_with_variable(&self, text: &str) -> Result<String, RefError> {
        template::value_with_variable(&lock(&self.shared.state), text)
    }

    /// This component's [`Component::text_refs`] when the scheduler has computed them
    /// (it keeps them for the canvas's life), so a component reuses them.
    pub fn known_text_refs(&self) -> Option<&'a [RefElement]> {
        self.node.text_refs.get().and_then(Option::as_deref)
    }

    /// References of a text, Iteration aliases resolved for this component.
    pub fn collect_refs(&self, text: &str) -> Vec<RefElement> {
        self.canvas.collect_refs(&self.node.id, text)
    }

    /// This component's output `name` (`""` when undeclared).
    pub fn output(&self, name: &str) -> Value {
        lock(&self.shared.state).output(&self.node.id, name)
    }

    /// Set one of this component's outputs.
    pub fn set_output(&self, name: &str, v: Value) {
        lock(&self.shared.state).set_output(&self.node.id, name, v);
    }

    /// Set several outputs, in order, under one lock and one lookup of the component.
    pub fn set_outputs<const N: usize>(&self, outputs: [(&str, Value); N]) {
        let mut st = lock(&self.shared.state);
        let node = st.node_mut(&self.node.id);
        for (name, v) in outputs {
            set_key(&mut node.outputs, name, v);
        }
    }

    /// Record an input value (shown in `node_finished.inputs`).
    pub fn set_input(&self, name: &str, v: Value) {
        set_key(
            &mut lock(&self.shared.state).node_mut(&self.node.id).inputs,
            name,
            v,
        );
    }

    /// The enclosing Iteration/Loop, if any.
    pub fn parent(&self) -> Option<&'a Node> {
        self.node
            .parent_id
            .as_deref()
            .and_then(|p| self.canvas.node(p))
    }

    /// A pass counter (IterationItem/LoopItem `_idx`).
    pub fn counter(&self, id: &str) -> i64 {
        lock(&self.shared.state)
            .counters
            .get(id)
            .copied()
            .unwrap_or(0)
    }

    /// Set a pass counter.
    pub fn set_counter(&self, id: &str, v: i64) {
        let mut st = lock(&self.shared.state);
        match st.counters.get_mut(id) {
            Some(c) => *c = v,
            None => {
                st.counters.insert(id.to_string(), v);
            }
        }
    }

    /// Leave a stream plan to be drained after the batch.
    pub fn defer(&self, plan: Deferred) {
        lock(&self.shared.deferred).insert(self.node.id.clone(), plan);
    }

    /// The model an `llm_id` names.
    pub fn model(&self, llm_id: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
        self.run.models.model(llm_id)
    }

    /// Count one model call of this component (its `node_finished.usage` and the
    /// turn's `workflow_finished.usage`).
    pub fn add_usage(&self, prompt_tokens: u64, completion_tokens: u64) {
        let mut st = lock(&self.shared.state);
        st.usage.turn.add_call(prompt_tokens, completion_tokens);
        st.usage
            .nodes
            .entry(self.node.id.clone())
            .or_default()
            .add_call(prompt_tokens, completion_tokens);
        st.node_mut(&self.node.id);
    }

    /// True when a direct downstream component is a Message (RAGFlow streams an
    /// LLM/Agent answer only then).
    pub fn feeds_message(&self) -> bool {
        self.node.downstream.iter().any(|d| {
            self.canvas
                .node(d)
                .is_some_and(|n| n.role == Role::Streamer)
        })
    }

    /// Leave this component's answer to be streamed by the Message that reads it.
    pub fn defer_stream(&self, stream: Box<dyn ModelStream>) {
        lock(&self.shared.state)
            .streaming
            .insert(self.node.id.clone());
        lock(&self.shared.streams).insert(self.node.id.clone(), stream);
    }

    /// True when `cpn` has an answer waiting to be streamed.
    pub fn has_stream(&self, cpn: &str) -> bool {
        lock(&self.shared.streams).contains_key(cpn)
    }

    /// Stream `cpn`'s pending answer through `emit` (a Message draining an upstream
    /// LLM/Agent). `None` when it has none; afterwards its `content` is final.
    pub async fn pull_stream(
        &self,
        cpn: &str,
        emit: &mut (dyn FnMut(Chunk) + Send),
    ) -> Option<CResult<()>> {
        let stream = lock(&self.shared.streams).remove(cpn)?;
        let node = self.canvas.node(cpn)?;
        let pcx = NodeCx {
            canvas: self.canvas,
            node,
            shared: self.shared,
            run: self.run,
            kwargs: Object::new(),
        };
        let res = stream.run(&pcx, emit).await;
        // An abandoned stream stays "a generator" for the partials that wait on it.
        if !matches!(res, Ok(StreamEnd::Abandoned)) {
            lock(&self.shared.state).streaming.remove(cpn);
        }
        // A stream that stops the run names the component whose answer it was.
        Some(match res {
            Err(ComponentError::Fatal(m)) => Err(ComponentError::Fatal(format!(
                "while streaming the answer of {cpn}: {m}"
            ))),
            other => other.map(|_| ()),
        })
    }

    /// Pick an index in `0..n` (Message alternatives).
    pub fn choose(&self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        lock(&self.run.rng).random_range(0..n)
    }
}
