//! RAGFlow's run algorithm (`engine.md` §4): a growing `path` run in batches, routing
//! after each component, the missing-upstream drop rule, exception routes, and the end
//! of a turn. Event order follows §5.3 exactly.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};

use super::compile::{Canvas, ENTRY_ID};
use super::component::{
    Chunk, ComponentError, ContainerKind, NodeCx, Role, RunContext, Shared, lock,
};
use super::events::{
    Event, EventKind, EventSink, MessageChunk, NodeFinished, NodeStarted, Outputs, WorkflowFinished,
};
use super::graph::Node;
use super::refs::{self, RefElement};
use super::services::Services;
use super::state::{Cursor, RunState, key_get, time_stopped};
use super::stop::{StopReason, StopSignal};
use canvas_llm::ModelSource;
use canvas_pyrt::{Object, py_repr, truthy};

/// What a turn needs besides the canvas and its state.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The run id (`task_id`).
    pub run_id: String,
    /// `sys.query` for this turn (only set when non-empty, as RAGFlow).
    pub query: String,
    /// The run's `inputs` in API shape (`{key: {value, type?}}`).
    pub inputs: Object,
    /// `sys.user_id`, when given.
    pub user_id: Option<String>,
    /// `sys.files` for this turn, when given (RAGFlow's API: each file's text, or an
    /// image's data URL).
    pub files: Option<Vec<Value>>,
    /// Upper bound on components of one batch running at once.
    pub max_parallel: usize,
    /// Seed for random choices (Message alternatives).
    pub seed: Option<u64>,
    /// This turn answers the form the run is waiting on (RAGFlow's resume).
    pub resume: bool,
    /// Raised to stop the turn at the next node boundary.
    pub stop: StopSignal,
    /// How long finished instant components may wait to be checkpointed together
    /// (zero: a checkpoint after every node).
    pub checkpoint_group: std::time::Duration,
    /// Where model calls go.
    pub models: Arc<dyn ModelSource>,
    /// A fixed `sys.date` (scripted and replayed runs are reproducible); `None` = now.
    pub date: Option<String>,
    /// Services components take by type (tool settings: network policy, sandbox...).
    pub services: Services,
    /// Most components one run of the scheduler finishes before it stops itself
    /// ([`StopReason::StepLimit`], resumable); 0: no limit.
    pub max_steps: u64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            run_id: String::new(),
            query: String::new(),
            inputs: Object::new(),
            user_id: None,
            files: None,
            max_parallel: DEFAULT_MAX_PARALLEL,
            seed: None,
            resume: false,
            stop: StopSignal::new(),
            checkpoint_group: CHECKPOINT_GROUP,
            models: Arc::new(canvas_llm::NoModels),
            date: None,
            services: Services::new(),
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

/// How long finished instant components may wait to be checkpointed together. Commits
/// cost tens of microseconds, instant components a few: grouping keeps the store's cost
/// per node small, and loses at most this much pure computation to a crash (it is done
/// again on resume; what was not committed was never shown).
pub const CHECKPOINT_GROUP: std::time::Duration = std::time::Duration::from_millis(2);

/// Components of a batch run at once by default. RAGFlow's five is the size of a thread
/// pool its server shares among sessions; a run here has the process to itself, and
/// the events are the same at any bound (they are emitted in path order), so the bound
/// only keeps a burst of model calls below what providers accept at once.
pub const DEFAULT_MAX_PARALLEL: usize = 32;

/// Components one run of a turn finishes at most by default. Far above any canvas the
/// bench or the fixtures run (perf_b, 2,000 iterations, runs 6,004), and reached by a
/// runaway cycle in well under a minute, before its events fill the disk.
pub const DEFAULT_MAX_STEPS: u64 = 100_000;

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `workflow_finished` was emitted with these outputs.
    Finished {
        /// Outputs of the last component of the path.
        outputs: Value,
    },
    /// The run waits for a form (`user_inputs` was the last event).
    Waiting {
        /// The `user_inputs` payload: `{"inputs": {field: definition}, "tips": text}`.
        form: Value,
    },
    /// Ctrl-C or a cancel stopped the turn at a node boundary; the state's cursor says
    /// where it continues.
    Stopped {
        /// Why.
        reason: StopReason,
    },
    /// A component error no exception route handled stopped the turn.
    Failed {
        /// The failing component.
        component_id: String,
        /// Its `_ERROR`.
        error: String,
    },
}

/// Why a turn stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Where RAGFlow's Python engine crashes; we stop cleanly instead.
    #[error("component {component_id:?}: {message}")]
    Crash {
        /// The component being scheduled, run or routed.
        component_id: String,
        /// What went wrong.
        message: String,
    },
    /// The event sink failed (stdout closed, store error).
    #[error("cannot write events: {0}")]
    Sink(#[from] std::io::Error),
}

fn crash(id: &str, message: impl Into<String>) -> RunError {
    RunError::Crash {
        component_id: id.to_string(),
        message: message.into(),
    }
}

/// Unix time in seconds with fractions.
pub fn now_f64() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

struct Emitter<'s> {
    sink: &'s mut dyn EventSink,
    /// The envelope every event is sent in: only its `kind` changes from one event to
    /// the next, so the turn's ids are not copied into each event.
    ev: Event,
    /// When (Unix seconds) the first component whose `node_finished` is not yet
    /// checkpointed finished.
    unsaved: Option<f64>,
    /// When the last component whose `node_finished` was emitted finished: the end
    /// its event gives, so that grouping checkpoints reads no clock of its own.
    last_finished: f64,
}

impl Emitter<'_> {
    fn checkpoint(&mut self, shared: &Shared) -> std::io::Result<()> {
        self.unsaved = None;
        let mut st = lock(&shared.state);
        self.sink.checkpoint(&st)?;
        st.touched.clear();
        Ok(())
    }

    fn emit(&mut self, kind: EventKind) -> std::io::Result<()> {
        if let EventKind::NodeFinished(d) = &kind {
            self.last_finished = d.created_at + d.elapsed_time;
            self.unsaved.get_or_insert(self.last_finished);
        }
        self.ev.kind = kind;
        let res = self.sink.emit(&self.ev);
        // The payload is not kept until the next event (an empty map owns no memory).
        self.ev.kind = EventKind::MessageEnd(Object::new());
        res
    }
}

/// Run one turn of a canvas, or continue the turn the state's cursor says is under way
/// (then the cursor's query, inputs and resume flag replace `cfg`'s). Returns the state
/// (to be stored whatever happened) and how the turn ended.
pub async fn run_turn(
    canvas: &Canvas,
    state: RunState,
    cfg: &RunConfig,
    sink: &mut dyn EventSink,
) -> (RunState, Result<Outcome, RunError>) {
    let mut cfg = cfg.clone();
    if let Some(c) = &state.cursor {
        cfg.query = c.query.clone();
        cfg.inputs = c.inputs.clone();
        cfg.resume = c.resume;
    }
    let cfg = &cfg;
    let rng = match cfg.seed {
        Some(s) => StdRng::seed_from_u64(s),
        None => StdRng::from_os_rng(),
    };
    let run = RunContext {
        run_id: cfg.run_id.clone(),
        inputs: cfg.inputs.clone(),
        rng: Mutex::new(rng),
        models: cfg.models.clone(),
        services: cfg.services.clone(),
    };
    let shared = Shared::new(state);
    let created = now_f64() as i64;
    let mut em = Emitter {
        sink,
        ev: Event {
            kind: EventKind::MessageEnd(Object::new()),
            message_id: format!("{:032x}", ulid::Ulid::new().0),
            created_at: created,
            task_id: cfg.run_id.clone(),
        },
        unsaved: None,
        last_finished: 0.0,
    };
    let mut turn = Turn {
        canvas,
        shared: &shared,
        run: &run,
        cfg,
        error: None,
        partials: Vec::new(),
        steps: 0,
        stopped: Vec::new(),
        last_node: AtomicUsize::new(usize::MAX),
        recent: AtomicU64::new(NO_TIME),
    };
    let res = turn.run(&mut em).await;
    let mut state = shared.state.into_inner().unwrap_or_else(|e| e.into_inner());
    if matches!(res, Err(RunError::Crash { .. })) {
        // A crash ends the turn (stored as failed); only a stop or a lost sink leaves it
        // to be continued.
        state.cursor = None;
    }
    (state, res)
}

struct Turn<'a> {
    canvas: &'a Canvas,
    shared: &'a Shared,
    run: &'a RunContext,
    cfg: &'a RunConfig,
    /// The unhandled component error that stops the turn after this batch.
    error: Option<(String, String)>,
    /// Streaming components whose `node_finished` waits for a Message (RAGFlow's
    /// `partials`).
    partials: Vec<String>,
    /// Components finished by this run of the turn (against `RunConfig::max_steps`).
    steps: u64,
    /// When the turn was stopped before this process continued it (see
    /// [`Cursor::stopped`]).
    stopped: Vec<(f64, f64)>,
    /// The place in the canvas of the node [`Turn::node_of`] found last.
    last_node: AtomicUsize,
    /// A reading of the clock (`f64` bits, [`NO_TIME`] when none) that the next reading
    /// may take instead of asking the clock again: kept when an instant component's
    /// invoke ended or a `node_finished` was timed, dropped by anything that waits or
    /// runs longer (see [`Turn::now`]).
    recent: AtomicU64,
}

/// [`Turn::recent`] holds no reading.
const NO_TIME: u64 = u64::MAX;

impl<'a> Turn<'a> {
    /// The time now, for the scheduler's own timings (a `node_finished`, a batch's
    /// `node_started`): the reading kept by [`Turn::keep_time`] when there is one, else
    /// the clock's. Between the two only the scheduler's bookkeeping ran (well under a
    /// microsecond to a few), and a chain of instant components then reads the clock
    /// twice per component instead of four times (about 50 ns a reading here).
    fn now(&self) -> f64 {
        match self.recent.swap(NO_TIME, Ordering::Relaxed) {
            NO_TIME => now_f64(),
            bits => f64::from_bits(bits),
        }
    }

    /// Keep `t`, read just now, for the next [`Turn::now`].
    fn keep_time(&self, t: f64) {
        self.recent.store(t.to_bits(), Ordering::Relaxed);
    }

    /// Drop the kept reading: what comes next waits or may take long.
    fn forget_time(&self) {
        self.recent.store(NO_TIME, Ordering::Relaxed);
    }

    fn cx(&self, node: &'a Node, kwargs: Object) -> NodeCx<'a> {
        NodeCx {
            canvas: &self.canvas.graph,
            node,
            shared: self.shared,
            run: self.run,
            kwargs,
        }
    }

    /// The component's [`text_refs`](super::component::Component::text_refs), computed
    /// once per canvas: they depend only on its parameters and the graph.
    fn text_refs(&self, node: &'a Node) -> Option<&'a [RefElement]> {
        node.text_refs
            .get_or_init(|| {
                let cx = self.cx(node, Object::new());
                self.canvas.component(node).text_refs(&cx)
            })
            .as_deref()
    }

    /// The node at `path[i]`, looked up without copying its id out of the path.
    fn node_at(&self, i: usize) -> Result<&'a Node, RunError> {
        let st = lock(&self.shared.state);
        let id = &st.path[i];
        self.node_of(id).map_or_else(|| self.node(id), Ok)
    }

    /// The node a path entry names. A node is looked up several times in a row (to
    /// start, run, post-process and route it), and the path holds the canvas's own copy
    /// of its id: the node found last is tried first, by pointer, before hashing the id.
    fn node_of(&self, id: &Arc<str>) -> Option<&'a Node> {
        let nodes = &self.canvas.graph.nodes;
        if let Some((_, n)) = nodes.get_index(self.last_node.load(Ordering::Relaxed)) {
            if Arc::ptr_eq(&n.shared.id, id) {
                return Some(n);
            }
        }
        let (i, _, n) = nodes.get_full(&**id)?;
        self.last_node.store(i, Ordering::Relaxed);
        Some(n)
    }

    /// `id` as the path keeps it: the canvas's shared copy when it names a component
    /// (no new allocation), else a copy (the run stops when the path reaches it).
    fn path_id(&self, id: &str) -> Arc<str> {
        self.canvas
            .node(id)
            .map_or_else(|| Arc::from(id), |n| n.shared.id.clone())
    }

    fn node(&self, id: &str) -> Result<&'a Node, RunError> {
        self.canvas.node(id).ok_or_else(|| {
            crash(
                id,
                format!("the path reaches {id:?}, which is not a component of this canvas"),
            )
        })
    }

    async fn run(&mut self, em: &mut Emitter<'_>) -> Result<Outcome, RunError> {
        let saved = lock(&self.shared.state).cursor.clone();
        let mut cur = match saved {
            Some(mut c) => {
                // Continued: the turn was stopped from its last checkpoint until now (the
                // work after that checkpoint is done again), which no timing counts.
                let now = now_f64();
                if let Some(at) = c.saved_at.filter(|at| *at < now) {
                    c.stopped.push((at, now));
                }
                c
            }
            None => self.begin(em)?,
        };
        self.stopped.clone_from(&cur.stopped);
        em.ev.message_id.clone_from(&cur.message_id);
        em.ev.created_at = cur.started as i64;
        self.error = cur.error.clone();
        self.partials = cur.partials.clone();
        self.prepare_streams().await?;
        loop {
            let (from, to) = match cur.to {
                // Continuing a batch that was stopped part-way through post-processing.
                Some(to) => {
                    self.prepare_again(cur.next, to).await?;
                    (cur.next, to)
                }
                None => {
                    let to = lock(&self.shared.state).path.len();
                    if cur.idx >= to {
                        break;
                    }
                    if em.unsaved.is_some() && !self.all_instant(cur.idx, to) {
                        self.save(&cur, em)?;
                    }
                    // Whole seconds: one reading of the clock serves the batch.
                    let started = self.now() as i64;
                    for i in cur.idx..to {
                        let node = self.node_at(i)?;
                        let cx = self.cx(node, Object::new());
                        let thoughts = self.canvas.component(node).thoughts(&cx);
                        em.emit(EventKind::NodeStarted(NodeStarted {
                            inputs: Value::Null,
                            created_at: started,
                            component_id: node.shared.id.clone(),
                            component_name: node.shared.name.clone(),
                            component_type: node.shared.class.clone(),
                            thoughts,
                        }))?;
                    }
                    self.run_batch(cur.idx, to).await?;
                    (cur.idx, lock(&self.shared.state).path.len())
                }
            };
            cur.to = Some(to);
            for i in from..to {
                let instant = self.all_instant(i, i + 1);
                if em.unsaved.is_some() && !instant {
                    self.save(&cur, em)?;
                }
                self.post_process(i, em).await?;
                cur.next = i + 1;
                cur.error.clone_from(&self.error);
                cur.partials.clone_from(&self.partials);
                if let Some(since) = em.unsaved {
                    // A wall clock set back counts as time up: a checkpoint too many
                    // rather than none until the clock catches up.
                    let waited = em.last_finished - since;
                    let group = self.cfg.checkpoint_group.as_secs_f64();
                    if !instant || !(0.0..group).contains(&waited) {
                        self.save(&cur, em)?;
                    }
                }
                self.steps += 1;
                let budget_spent = self.cfg.max_steps > 0 && self.steps >= self.cfg.max_steps;
                let stop = self.cfg.stop.requested();
                if let Some(reason) = stop.or(budget_spent.then_some(StopReason::StepLimit)) {
                    // Stored with the state the turn ends with.
                    cur.saved_at = Some(now_f64());
                    lock(&self.shared.state).cursor = Some(cur);
                    return Ok(Outcome::Stopped { reason });
                }
            }
            if self.error.is_some() {
                break;
            }
            cur.idx = to;
            cur.to = None;
            cur.next = to;
            if let Some(form) = self.pause_check(cur.idx, em).await? {
                lock(&self.shared.state).cursor = None;
                return Ok(Outcome::Waiting { form });
            }
        }
        self.finish(cur.idx, cur.started, em).await
    }

    /// Checkpoint the state with the scheduler's position.
    fn save(&self, cur: &Cursor, em: &mut Emitter<'_>) -> std::io::Result<()> {
        self.forget_time();
        let mut saved = cur.clone();
        saved.saved_at = Some(now_f64());
        lock(&self.shared.state).cursor = Some(saved);
        em.checkpoint(self.shared)
    }

    /// True when every component of `path[from..to]` is instant (see
    /// [`Component::instant`](super::component::Component::instant)).
    fn all_instant(&self, from: usize, to: usize) -> bool {
        let st = lock(&self.shared.state);
        st.path[from..to.min(st.path.len())].iter().all(|id| {
            self.node_of(id)
                .is_some_and(|n| self.canvas.component(n).instant())
        })
    }

    /// Start a new turn: RAGFlow's turn start, `workflow_started`, and a first
    /// checkpoint so a turn stopped before any node finished is not started twice.
    fn begin(&mut self, em: &mut Emitter<'_>) -> Result<Cursor, RunError> {
        let started = now_f64();
        self.start();
        if !self.cfg.resume {
            em.emit(EventKind::WorkflowStarted {
                inputs: Value::Object(self.cfg.inputs.clone()),
            })?;
        }
        let cur = {
            let mut st = lock(&self.shared.state);
            st.retrieval.push(json!({"chunks": {}, "doc_aggs": {}}));
            // A resumed turn's first batch is the whole saved path (the pending forms
            // and the siblings appended with them).
            let idx = if self.cfg.resume {
                0
            } else {
                st.path.len() - 1
            };
            let cur = Cursor {
                message_id: em.ev.message_id.clone(),
                started,
                query: self.cfg.query.clone(),
                inputs: self.cfg.inputs.clone(),
                resume: self.cfg.resume,
                idx,
                to: None,
                next: idx,
                error: None,
                partials: Vec::new(),
                // The checkpoint below stores it.
                saved_at: Some(started),
                stopped: Vec::new(),
            };
            st.streaming.clear();
            st.usage = Default::default();
            st.cursor = Some(cur.clone());
            cur
        };
        em.checkpoint(self.shared)?;
        Ok(cur)
    }

    /// Before post-processing the rest of a stopped batch: Message nodes keep their
    /// stream plans in memory only, so they are prepared again (they have not
    /// finished, and preparing has no effect beyond their own outputs).
    async fn prepare_again(&self, from: usize, to: usize) -> Result<(), RunError> {
        for i in from..to {
            let node = self.node_at(i)?;
            if node.role == Role::Streamer && !lock(&self.shared.deferred).contains_key(&node.id) {
                let kwargs = self.declared_kwargs(node)?;
                self.invoke_one(node, kwargs).await?;
            }
        }
        Ok(())
    }

    /// Continuing a turn: model answers that were waiting to be streamed lived in
    /// memory only; their components prepare them again (preparing calls no model).
    async fn prepare_streams(&self) -> Result<(), RunError> {
        let waiting: Vec<String> = lock(&self.shared.state).streaming.iter().cloned().collect();
        for id in waiting {
            if lock(&self.shared.streams).contains_key(&id) {
                continue;
            }
            let node = self.node(&id)?;
            let kwargs = self.declared_kwargs(node)?;
            self.invoke_one(node, kwargs).await?;
        }
        Ok(())
    }

    /// Turn start (`engine.md` §4.1 steps 1–9).
    fn start(&self) {
        let mut st = lock(&self.shared.state);
        let date = match &self.cfg.date {
            Some(d) => d.clone(),
            None => chrono::Local::now().format("%Y-%m-%d %H:%M:%S").to_string(),
        };
        st.globals_mut().insert("sys.date".into(), json!(date));
        let q = self.cfg.query.clone();
        st.history.push(("user".into(), json!(q)));
        push_history(&mut st, format!("user: {q}"));
        // Components of the session path are reset (Begin keeps its inputs).
        let path = st.path.clone();
        for id in &path {
            let id: &str = id;
            let begin = self.canvas.node(id).is_some_and(|n| n.role == Role::Entry);
            if st.nodes.contains_key(id) {
                let ns = st.node_mut(id);
                for v in ns.outputs.values_mut() {
                    *v = Value::Null;
                }
                if !begin {
                    ns.inputs.clear();
                }
            }
        }
        if !q.is_empty() {
            st.globals_mut().insert("sys.query".into(), json!(q));
        }
        if let Some(u) = self.cfg.user_id.as_ref().filter(|u| !u.is_empty()) {
            st.globals_mut().insert("sys.user_id".into(), json!(u));
        }
        if let Some(f) = self.cfg.files.as_ref().filter(|f| !f.is_empty()) {
            st.globals_mut()
                .insert("sys.files".into(), Value::Array(f.clone()));
        }
        let turns = st
            .globals
            .get("sys.conversation_turns")
            .cloned()
            .unwrap_or(Value::Null);
        let n = if truthy(&turns) {
            turns.as_f64().unwrap_or(0.0)
        } else {
            0.0
        };
        let next = if turns.is_f64() {
            json!(n + 1.0)
        } else {
            json!(n as i64 + 1)
        };
        st.globals_mut()
            .insert("sys.conversation_turns".into(), next);
        if !self.cfg.resume {
            st.path.push(ENTRY_ID.into());
            st.retrieval.push(json!({"chunks": [], "doc_aggs": []}));
        }
    }

    /// RAGFlow's pause (`engine.md` §6.1): when forms were appended, ask each one
    /// (without answers) and, if any field is unanswered, replace the path with the
    /// pending forms and their siblings and emit `user_inputs`.
    async fn pause_check(
        &self,
        idx: usize,
        em: &mut Emitter<'_>,
    ) -> Result<Option<Value>, RunError> {
        // Looked for in place: the tail is copied only when it holds a form.
        let forms: Vec<&'a Node> = lock(&self.shared.state).path[idx..]
            .iter()
            .filter_map(|id| self.canvas.node(id))
            .filter(|n| n.role == Role::Form)
            .collect();
        if forms.is_empty() {
            return Ok(None);
        }
        let tail: Vec<Arc<str>> = lock(&self.shared.state).path[idx..].to_vec();
        let mut pending: Vec<Arc<str>> = forms.iter().map(|n| n.shared.id.clone()).collect();
        pending.extend(
            tail.iter()
                .filter(|id| self.canvas.node(id).is_some_and(|n| n.role != Role::Form))
                .cloned(),
        );
        let blank = RunContext::seeded(&self.run.run_id, Object::new(), 0);
        let mut unanswered = Object::new();
        let mut tips = String::new();
        for node in &forms {
            let cx = NodeCx {
                canvas: &self.canvas.graph,
                node,
                shared: self.shared,
                run: &blank,
                kwargs: Object::new(),
            };
            let created = now_f64();
            cx.set_output("_created_time", json!(created));
            match self.canvas.component(node).invoke(&cx).await {
                Ok(()) => {}
                Err(ComponentError::Failed(m)) => cx.set_output("_ERROR", json!(m)),
                Err(ComponentError::Fatal(m)) => return Err(crash(&node.id, m)),
            }
            cx.set_output("_elapsed_time", json!(now_f64() - created));
            let fields = node
                .params
                .get("inputs")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let st = lock(&self.shared.state);
            let recorded = st
                .nodes
                .get(&node.id)
                .map(|n| n.inputs.clone())
                .unwrap_or_default();
            for (k, def) in fields {
                let value = recorded.get(&k).cloned().unwrap_or(Value::Null);
                if !super::forms::field_satisfied(&def, &value) {
                    let mut d = match def {
                        Value::Object(o) => o,
                        other => Object::from_iter([("value".to_string(), other)]),
                    };
                    d.insert("value".into(), Value::Null);
                    unanswered.insert(k, Value::Object(d));
                }
            }
            if node.params.get("enable_tips").is_none_or(truthy) {
                tips = match st.output(&node.id, "tips") {
                    Value::String(s) => s,
                    _ => String::new(),
                };
            }
        }
        if unanswered.is_empty() {
            return Ok(None);
        }
        lock(&self.shared.state).path = pending;
        em.emit(EventKind::UserInputs {
            inputs: unanswered.clone(),
            tips: tips.clone(),
        })?;
        Ok(Some(json!({"inputs": unanswered, "tips": tips})))
    }

    /// RAGFlow's `_run_batch(f, t)`: schedule, drop, and invoke one batch.
    async fn run_batch(&self, f: usize, t: usize) -> Result<(), RunError> {
        // Most batches hold one component: the first is kept apart, so such a batch
        // needs no list and runs without the join machinery.
        let mut first: Option<(&'a Node, Object)> = None;
        let mut rest: Vec<(&'a Node, Object)> = Vec::new();
        let mut i = f;
        let mut t = t;
        while i < t {
            let node = self.node_at(i)?;
            let kwargs = match node.role {
                Role::Entry | Role::Form => Object::new(),
                _ => {
                    if let Some(elements) = self.text_refs(node) {
                        let mut st = lock(&self.shared.state);
                        // RAGFlow evaluates every reference here: unknown ones crash.
                        for e in elements {
                            refs::resolve_with(&st, &e.exp, |_| ())
                                .map_err(|err| crash(&node.id, err.to_string()))?;
                        }
                        // The path is searched from its end, where an upstream
                        // component usually is; the resume test only when it matters.
                        let missing =
                            elements.iter().any(|e| {
                                !e.cpn_id.is_empty()
                                    && !st.path[..i].iter().rev().any(|p| **p == *e.cpn_id)
                            }) && !st.path.first().is_some_and(|p| self.canvas.names_a_form(p));
                        if missing {
                            st.path.remove(i);
                            t -= 1;
                            continue;
                        }
                    }
                    self.declared_kwargs(node)?
                }
            };
            if first.is_none() {
                first = Some((node, kwargs));
            } else {
                rest.push((node, kwargs));
            }
            i += 1;
        }
        let Some(first) = first else {
            return Ok(());
        };
        if rest.is_empty() {
            return self.invoke_one(first.0, first.1).await;
        }
        let sem = tokio::sync::Semaphore::new(self.cfg.max_parallel.max(1));
        let futs = std::iter::once(first).chain(rest).map(|(node, kwargs)| {
            let sem = &sem;
            async move {
                let _permit = sem.acquire().await;
                self.invoke_one(node, kwargs).await
            }
        });
        let results = futures::future::join_all(futs).await;
        // Each component kept its own end; none is the time its post-processing starts.
        self.forget_time();
        for r in results {
            r?;
        }
        Ok(())
    }

    /// RAGFlow's generic `get_input()`: declared inputs resolved from same-named params.
    fn declared_kwargs(&self, node: &Node) -> Result<Object, RunError> {
        let mut kwargs = Object::new();
        if node.declared_inputs.is_empty() {
            return Ok(kwargs);
        }
        let mut st = lock(&self.shared.state);
        for k in &node.declared_inputs {
            let Some(v) = node.params.get(k).filter(|v| !v.is_null()) else {
                continue;
            };
            let value = self
                .canvas
                .input_value(&st, &node.id, v)
                .map_err(|e| crash(&node.id, e.to_string()))?;
            st.node_mut(&node.id)
                .inputs
                .insert(k.clone(), value.clone());
            kwargs.insert(k.clone(), value);
        }
        Ok(kwargs)
    }

    /// `ComponentBase.invoke`: timestamps, and errors into `_ERROR` (or the comment
    /// default into `result`).
    async fn invoke_one(&self, node: &'a Node, kwargs: Object) -> Result<(), RunError> {
        let cx = self.cx(node, kwargs);
        let created = now_f64();
        cx.set_output("_created_time", json!(created));
        match self.canvas.component(node).invoke(&cx).await {
            Ok(()) => {}
            Err(ComponentError::Failed(msg)) => {
                let comment =
                    node.params.get("exception_method").and_then(Value::as_str) == Some("comment");
                let default = node
                    .params
                    .get("exception_default_value")
                    .cloned()
                    .unwrap_or(Value::Null);
                if comment && truthy(&default) {
                    cx.set_output("result", default);
                } else {
                    cx.set_output("_ERROR", json!(msg));
                }
            }
            Err(ComponentError::Fatal(msg)) => return Err(crash(&node.id, msg)),
        }
        let end = now_f64();
        cx.set_output("_elapsed_time", json!(end - created));
        if self.canvas.component(node).instant() {
            self.keep_time(end);
        } else {
            self.forget_time();
        }
        Ok(())
    }

    /// Post-process `path[i]` (`engine.md` §4.4): message streaming, error routes,
    /// `node_finished`, routing.
    async fn post_process(&mut self, i: usize, em: &mut Emitter<'_>) -> Result<(), RunError> {
        let node = self.node_at(i)?;
        let id = &node.id;
        if node.role == Role::Streamer {
            self.forget_time();
            self.stream_message(node, em).await?;
        }
        let mut other_branch = false;
        let err = lock(&self.shared.state)
            .error_of(id)
            .filter(|e| !e.is_empty());
        if let Some(err) = err {
            let method = node
                .params
                .get("exception_method")
                .cloned()
                .unwrap_or(Value::Null);
            if truthy(&method) {
                let goto: Vec<String> = node
                    .params
                    .get("exception_goto")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                let default = node
                    .params
                    .get("exception_default_value")
                    .cloned()
                    .unwrap_or(Value::Null);
                if !goto.is_empty() {
                    let goto = goto.iter().map(|id| self.path_id(id));
                    lock(&self.shared.state).path.extend(goto);
                    other_branch = true;
                } else if truthy(&default) {
                    em.emit(EventKind::Message(MessageChunk {
                        content: default,
                        start_to_think: None,
                        end_to_think: None,
                    }))?;
                    em.emit(EventKind::MessageEnd(Object::new()))?;
                } else if self.error.is_none() {
                    self.error = Some((id.clone(), err));
                }
            } else if self.error.is_none() {
                self.error = Some((id.clone(), err));
            }
        }
        if !matches!(node.role, Role::Container(_)) {
            let streaming = lock(&self.shared.streams).contains_key(id);
            if streaming && self.error.is_none() {
                // Finished after the Message that drains it (RAGFlow's partials).
                self.partials.push(id.clone());
            } else {
                if streaming {
                    lock(&self.shared.streams).remove(id);
                    let mut st = lock(&self.shared.state);
                    st.streaming.remove(id);
                    st.set_output(id, "content", Value::Null);
                }
                em.emit(EventKind::NodeFinished(self.finished(node)))?;
            }
        }
        if !other_branch {
            self.route(node, em)?;
        }
        Ok(())
    }

    /// After a Message: the `node_finished` of streaming components it drained, in
    /// order, up to the first one still waiting (an abandoned stream waits forever, as
    /// RAGFlow's generator does). Their errors were handled before they streamed: an
    /// `_ERROR` set while streaming shows in the event but does not stop the turn.
    fn flush_partials(&mut self, em: &mut Emitter<'_>) -> Result<(), RunError> {
        while let Some(first) = self.partials.first().cloned() {
            let waiting = lock(&self.shared.streams).contains_key(&first)
                || lock(&self.shared.state).streaming.contains(&first);
            if waiting {
                break;
            }
            let node = self.node(&first)?;
            em.emit(EventKind::NodeFinished(self.finished(node)))?;
            self.partials.remove(0);
        }
        Ok(())
    }

    async fn stream_message(
        &mut self,
        node: &'a Node,
        em: &mut Emitter<'_>,
    ) -> Result<(), RunError> {
        let plan = lock(&self.shared.deferred).remove(&node.id);
        if let Some(plan) = plan {
            let cx = self.cx(node, Object::new());
            let mut text = String::new();
            let mut failed: Option<std::io::Error> = None;
            let mut emit = |c: Chunk| {
                let data = match c {
                    Chunk::Text(t) if t.is_empty() => return,
                    Chunk::Text(t) => {
                        text.push_str(&t);
                        MessageChunk {
                            // Moved, not serialised into a copy as `json!` would.
                            content: Value::String(t),
                            start_to_think: None,
                            end_to_think: None,
                        }
                    }
                    Chunk::StartThink => MessageChunk {
                        content: json!(""),
                        start_to_think: Some(true),
                        end_to_think: None,
                    },
                    Chunk::EndThink => MessageChunk {
                        content: json!(""),
                        start_to_think: None,
                        end_to_think: Some(true),
                    },
                };
                if failed.is_none() {
                    if let Err(e) = em.emit(EventKind::Message(data)) {
                        failed = Some(e);
                    }
                }
            };
            let res = self
                .canvas
                .component(node)
                .drain(&cx, plan, &mut emit)
                .await;
            if let Some(e) = failed {
                return Err(e.into());
            }
            match res {
                Ok(()) => cx.set_output("content", Value::String(text)),
                Err(ComponentError::Failed(m)) => {
                    cx.set_output("content", Value::String(text));
                    cx.set_output("_ERROR", json!(m));
                }
                Err(ComponentError::Fatal(m)) => return Err(crash(&node.id, m)),
            }
        } else {
            let content = lock(&self.shared.state).output(&node.id, "content");
            em.emit(EventKind::Message(MessageChunk {
                content,
                start_to_think: None,
                end_to_think: None,
            }))?;
        }
        em.emit(EventKind::MessageEnd(self.message_end(node)))?;
        self.flush_partials(em)
    }

    /// `_build_message_end`.
    fn message_end(&self, node: &Node) -> Object {
        let st = lock(&self.shared.state);
        let mut data = Object::new();
        if let Some(s) = node.params.get("status").filter(|s| truthy(s)) {
            data.insert("status".into(), s.clone());
        }
        let att = st.output(&node.id, "attachment");
        if att.is_object() {
            data.insert("attachment".into(), att);
        }
        let dl = st.output(&node.id, "downloads");
        if dl.as_array().is_some_and(|a| !a.is_empty()) {
            data.insert("downloads".into(), dl);
        }
        if let Some(r) = st.retrieval.last() {
            let has = |k: &str| r.get(k).is_some_and(truthy);
            if has("chunks") || has("doc_aggs") {
                data.insert("reference".into(), r.clone());
            }
        }
        data
    }

    fn finished(&self, node: &'a Node) -> NodeFinished {
        let refs = self.text_refs(node);
        let now = self.now();
        self.keep_time(now);
        let mut st = lock(&self.shared.state);
        // A node under way when the turn was stopped (a Loop, a batch not post-processed
        // yet): its start moves later by the time the turn was stopped, so that its
        // elapsed time counts only running time and start + elapsed is still its end.
        let started = (!self.stopped.is_empty())
            .then(|| st.nodes.get(&node.id))
            .flatten()
            .and_then(|n| key_get(&n.outputs, "_created_time"))
            .and_then(Value::as_f64);
        if let Some(created) = started {
            let shift = time_stopped(&self.stopped, created, now);
            if shift > 0.0 {
                st.set_output(&node.id, "_created_time", json!(created + shift));
            }
        }
        // Looked up once for the rest: inputs, outputs and error.
        let ns = st.nodes.get(&node.id);
        let recorded = ns.map(|n| &n.inputs);
        let get = |k: &str| {
            recorded
                .and_then(|r| key_get(r, k))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let mut inputs = Object::new();
        match refs {
            Some(elements) => {
                for e in elements {
                    inputs.insert(e.exp.clone(), get(&e.exp));
                }
            }
            None => {
                for k in &node.declared_inputs {
                    inputs.insert(k.clone(), get(k));
                }
                if let Some(r) = recorded {
                    for (k, v) in r {
                        if !inputs.contains_key(k) {
                            inputs.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
        }
        // Shared with the state, not copied: the event is gone before the component
        // changes again (and a change would copy it first).
        let outputs = ns.map(|n| Outputs::of_node(n.clone())).unwrap_or_default();
        let created = key_get(&outputs, "_created_time")
            .and_then(Value::as_f64)
            .unwrap_or(now);
        NodeFinished {
            inputs,
            outputs,
            component_id: node.shared.id.clone(),
            component_name: node.shared.name.clone(),
            component_type: node.shared.class.clone(),
            error: ns.and_then(|n| n.error()),
            elapsed_time: now - created,
            created_at: created,
            usage: st.usage.nodes.get(&node.id).copied(),
        }
    }

    /// Seconds from `started` until now that the turn ran (its stops left out).
    fn running_since(&self, started: f64) -> f64 {
        let now = now_f64();
        now - started - time_stopped(&self.stopped, started, now)
    }

    /// Routing after a component (`engine.md` §4.4 step 4).
    fn route(&self, node: &'a Node, em: &mut Emitter<'_>) -> Result<(), RunError> {
        let extend = |ids: &mut dyn Iterator<Item = &str>| {
            let mut st = lock(&self.shared.state);
            for x in ids {
                if st.path.last().map(|p| &**p) != Some(x) {
                    st.path.push(self.path_id(x));
                }
            }
        };
        let all = |ids: &'a [String]| ids.iter().map(String::as_str);
        match node.role {
            Role::ContainerItem => {
                let cx = self.cx(node, Object::new());
                let end = self
                    .canvas
                    .component(node)
                    .end(&cx)
                    .map_err(|e| crash(&node.id, e.to_string()))?;
                if end {
                    let parent_id = node
                        .parent_id
                        .as_deref()
                        .ok_or_else(|| crash(&node.id, "it has no parent Iteration/Loop"))?;
                    let parent = self.node(parent_id)?;
                    em.emit(EventKind::NodeFinished(self.finished(parent)))?;
                    extend(&mut all(&parent.downstream));
                    return Ok(());
                }
            }
            Role::Router => {
                let next = lock(&self.shared.state).output(&node.id, "_next");
                let ids: Vec<String> = next
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                extend(&mut ids.iter().map(String::as_str));
                return Ok(());
            }
            Role::Container(_) => {
                let start = self.canvas.start_of(&node.id).ok_or_else(|| {
                    crash(
                        &node.id,
                        "it has no IterationItem/LoopItem child to start from",
                    )
                })?;
                extend(&mut std::iter::once(start));
                return Ok(());
            }
            Role::LoopBreak => {
                if let Some(p) = node.parent_id.as_deref().and_then(|p| self.canvas.node(p)) {
                    if p.role == Role::Container(ContainerKind::Breakable) {
                        extend(&mut all(&p.downstream));
                        return Ok(());
                    }
                }
            }
            _ => {}
        }
        if node.downstream.is_empty() {
            if let Some(p) = node.parent_id.as_deref() {
                if let Some(start) = self.canvas.start_of(p) {
                    extend(&mut std::iter::once(start));
                }
                return Ok(());
            }
        }
        extend(&mut all(&node.downstream));
        Ok(())
    }

    /// End of a turn (`engine.md` §4.5).
    async fn finish(
        &mut self,
        idx: usize,
        started: f64,
        em: &mut Emitter<'_>,
    ) -> Result<Outcome, RunError> {
        let (last, usage) = {
            let mut st = lock(&self.shared.state);
            st.path.truncate(idx);
            st.cursor = None;
            (st.path.last().cloned().unwrap_or_default(), st.usage.turn)
        };
        if let Some((component_id, error)) = self.error.take() {
            if error.contains("Task has been canceled") {
                em.emit(EventKind::WorkflowFinished(WorkflowFinished {
                    inputs: Value::Object(self.cfg.inputs.clone()),
                    outputs: json!("Task has been canceled"),
                    elapsed_time: self.running_since(started),
                    created_at: started,
                    usage,
                }))?;
            }
            return Ok(Outcome::Failed {
                component_id,
                error,
            });
        }
        // RAGFlow would report an answer nobody streamed as null; we compute it.
        if let Ok(node) = self.node(&last) {
            let cx = self.cx(node, Object::new());
            if let Some(Err(ComponentError::Fatal(m))) = cx.pull_stream(&last, &mut |_| {}).await {
                return Err(crash(&last, m));
            }
        }
        let mut st = lock(&self.shared.state);
        let usage = st.usage.turn;
        let outputs = Value::Object(
            st.nodes
                .get(&*last)
                .map(|n| n.outputs.clone())
                .unwrap_or_default(),
        );
        st.history.push(("assistant".into(), outputs.clone()));
        push_history(&mut st, format!("assistant: {}", py_repr(&outputs)));
        drop(st);
        em.emit(EventKind::WorkflowFinished(WorkflowFinished {
            inputs: Value::Object(self.cfg.inputs.clone()),
            outputs: outputs.clone(),
            elapsed_time: self.running_since(started),
            created_at: started,
            usage,
        }))?;
        Ok(Outcome::Finished { outputs })
    }
}

fn push_history(st: &mut RunState, line: String) {
    let h = st
        .globals_mut()
        .entry("sys.history".to_string())
        .or_insert_with(|| json!([]));
    if !h.is_array() {
        *h = json!([]);
    }
    if let Value::Array(a) = h {
        a.push(Value::String(line));
    }
}
