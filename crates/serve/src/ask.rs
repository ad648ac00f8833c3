//! A question to a session, driven as turns of its run: the run's lease is taken (a
//! session another request runs waits briefly, then is refused as busy), the turn is
//! driven on its own task, and its events reach the response through a channel as the
//! run emits them (a `node_finished` once durable). A client that goes away stops the
//! turn at its next node boundary, resumable: the next question continues it.
//!
//! What a question does depends on where the session stands:
//! - new, finished or failed: a new turn with the question;
//! - waiting at a form: the `inputs` answer it (when they cover its required fields),
//!   else the form is shown again;
//! - stopped mid-turn (a restart, a crash, a client gone): that turn continues from its
//!   last checkpoint, its stored events first, so the answer comes whole; a different
//!   question then gets a turn of its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use canvas_engine::{Canvas, RunConfig, StopReason, StopSignal};
use canvas_pyrt::Object;
use canvas_runner::{Drive, DriveError, Ended, Forms, GivenAnswers, Next, Plan, TurnRequest};
use canvas_store::{RunRecord, RunStatus, TurnKind};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::App;
use super::reply::ApiError;

/// What a question asks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Question {
    /// The agent.
    pub agent_id: String,
    /// The session; none opens a new one.
    pub session_id: Option<String>,
    /// `sys.query`.
    pub query: String,
    /// Begin's inputs and form answers, as given.
    pub inputs: Object,
    /// `sys.user_id` (default: the session's user).
    pub user_id: Option<String>,
    /// `sys.files`.
    pub files: Vec<Value>,
}

/// What the turn's task sends the response.
#[derive(Debug)]
pub(crate) enum Out {
    /// An event's JSON line.
    Line(String),
    /// The question is done: how the session stands, or why driving it failed.
    End(Result<Ended, String>),
}

/// How often a question to a session this process is running looks again.
const BUSY_POLL: Duration = Duration::from_millis(50);

impl App {
    /// Start answering `q`: returns the session id and the channel of its events.
    pub(crate) async fn ask(
        self: &Arc<Self>,
        q: Question,
    ) -> Result<(String, mpsc::UnboundedReceiver<Out>), ApiError> {
        if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(ApiError::running("The server is shutting down."));
        }
        let Some(agent) = self.agent(&q.agent_id)? else {
            return Err(ApiError::data(format!(
                "You don't own the agent {}",
                q.agent_id
            )));
        };
        let (sess, run) = match &q.session_id {
            Some(id) => match self.session_of(&agent.id, id)? {
                Some(found) => found,
                None => return Err(self.why_not_found(id)?),
            },
            None => {
                let user = q.user_id.clone().unwrap_or_default();
                let (run, sess) = self.new_session(&agent, &user)?;
                (sess, run)
            }
        };
        let canvas = self.compiled(&run.source, &run.canvas_hash, &run.canvas)?;
        let stop = StopSignal::new();
        self.claim(&canvas, &run.id, &stop).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let me = Arc::clone(self);
        let user = q.user_id.clone().unwrap_or_else(|| sess.user_id.clone());
        let run_id = run.id.clone();
        tokio::spawn(async move {
            // Let go of the session however the task ends (a panic included): a lease
            // left held would be renewed, and the session busy, for ever.
            let held = Held {
                app: Arc::clone(&me),
                canvas: Arc::clone(&canvas),
                run_id: run.id.clone(),
            };
            let out = me.answer(&canvas, &run, q, user, &tx, &stop).await;
            if let Err(e) = &out {
                tracing::warn!(session = %run.id, error = %e, "a question failed");
            }
            // Let go first: the client's next question must find the session free.
            drop(held);
            let _ = tx.send(Out::End(out.map_err(|e| e.to_string())));
        });
        Ok((run_id, rx))
    }

    /// Why a session id matches nothing here.
    fn why_not_found(&self, id: &str) -> Result<ApiError, ApiError> {
        Ok(match self.call(|st| st.session(id))? {
            Some(_) => ApiError::operating("Session does not belong to the requested agent."),
            None => ApiError::data("Session not found!"),
        })
    }

    /// Take the session: not run by another request here, and its lease ours; each
    /// waited for at most the busy wait.
    async fn claim(
        &self,
        canvas: &Canvas,
        run_id: &str,
        stop: &StopSignal,
    ) -> Result<(), ApiError> {
        let deadline = Instant::now() + self.settings.busy_wait;
        loop {
            {
                let mut active = self.active();
                if !active.contains_key(run_id) {
                    active.insert(run_id.to_string(), stop.clone());
                    break;
                }
            }
            if Instant::now() >= deadline {
                return Err(busy(run_id));
            }
            tokio::time::sleep(BUSY_POLL).await;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self
            .drive(canvas, &self.deps.config, None)
            .acquire(run_id, left)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) => {
                self.active().remove(run_id);
                Err(match e {
                    DriveError::Leased { .. } => busy(run_id),
                    other => ApiError::exception(other.to_string()),
                })
            }
        }
    }

    /// Give the session up: its lease, and its place among those running here.
    fn let_go(&self, canvas: &Canvas, run_id: &str) {
        self.drive(canvas, &self.deps.config, None).release(run_id);
        self.active().remove(run_id);
    }

    /// A drive of `canvas` under this process's lease.
    fn drive<'a>(
        &'a self,
        canvas: &'a Canvas,
        config: &'a RunConfig,
        observer: Option<canvas_runner::Observer>,
    ) -> Drive<'a> {
        Drive {
            canvas,
            store: self.store(),
            writer: &self.deps.writer,
            config,
            lease: Some(&self.lease),
            observer,
        }
    }

    /// Answer `q` on the session `run` (its lease held), sending events to `tx`.
    async fn answer(
        &self,
        canvas: &Canvas,
        run: &RunRecord,
        q: Question,
        user: String,
        tx: &mpsc::UnboundedSender<Out>,
        stop: &StopSignal,
    ) -> Result<Ended, DriveError> {
        let sent = tx.clone();
        let gone = stop.clone();
        let observer: canvas_runner::Observer = Arc::new(move |line: &str| {
            if sent.send(Out::Line(line.to_string())).is_err() {
                // The client went away: stop at the next node boundary (resumable).
                gone.request(StopReason::Interrupted);
            }
        });
        let config = RunConfig {
            user_id: Some(user).filter(|u| !u.is_empty()),
            files: Some(q.files.clone()).filter(|f| !f.is_empty()),
            ..self.deps.config.clone()
        };
        let drive = self.drive(canvas, &config, Some(observer));
        let timer = {
            let stop = stop.clone();
            let after = self.settings.timeout;
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                stop.request(StopReason::Interrupted);
            })
        };
        let out = self.turns(&drive, canvas, run, q, tx, stop).await;
        timer.abort();
        out
    }

    async fn turns(
        &self,
        drive: &Drive<'_>,
        canvas: &Canvas,
        run: &RunRecord,
        q: Question,
        tx: &mpsc::UnboundedSender<Out>,
        stop: &StopSignal,
    ) -> Result<Ended, DriveError> {
        let inputs = api_inputs(&q.inputs, canvas);
        let mut forms = GivenAnswers::new(inputs.clone());
        let (rec, checkpoints, planned) = drive.stand(&run.id)?;
        let begin = begin_inputs(&inputs, canvas);
        let next_turn = |kind| {
            Next::Turn(TurnRequest {
                kind,
                query: q.query.clone(),
                inputs: begin.clone(),
            })
        };
        match planned {
            Plan::Run(next) => {
                let stopped = self.call(|st| st.last_turn(&rec.id))?;
                if let Some(t) = &stopped {
                    // The stopped turn's stream so far: the answer comes whole.
                    for line in self.call(|st| st.events_of_turn(&rec.id, t.turn))? {
                        let _ = tx.send(Out::Line(line));
                    }
                }
                let ended = drive
                    .run_next(&rec.id, checkpoints, next, &mut forms, stop)
                    .await?;
                let asked_again = stopped.is_some_and(|t| t.query == q.query);
                let done = matches!(ended.status, RunStatus::Succeeded | RunStatus::Failed);
                if q.query.is_empty() || asked_again || !done || stop.requested().is_some() {
                    return Ok(ended);
                }
                let (_, checkpoints, _) = drive.stand(&rec.id)?;
                drive
                    .run_next(
                        &rec.id,
                        checkpoints,
                        next_turn(TurnKind::Next),
                        &mut forms,
                        stop,
                    )
                    .await
            }
            Plan::Ended(ended) if ended.status == RunStatus::Waiting => {
                let answers = ended.form.as_ref().and_then(|f| forms.answer(f));
                let Some(answers) = answers else {
                    // Not answered: the form again, as the turn that stopped there ended.
                    let last = self.call(|st| st.events_of_turn(&rec.id, rec.turns))?;
                    if let Some(line) = last.last() {
                        let _ = tx.send(Out::Line(line.clone()));
                    }
                    return Ok(ended);
                };
                let next = Next::Turn(TurnRequest::answer(answers));
                drive
                    .run_next(&rec.id, checkpoints, next, &mut forms, stop)
                    .await
            }
            Plan::Ended(_) => {
                let kind = if rec.turns == 0 {
                    TurnKind::Start
                } else {
                    TurnKind::Next
                };
                drive
                    .run_next(&rec.id, checkpoints, next_turn(kind), &mut forms, stop)
                    .await
            }
        }
    }
}

/// A session this process is answering; dropped, it is let go of.
struct Held {
    app: Arc<App>,
    canvas: Arc<Canvas>,
    run_id: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.app.let_go(&self.canvas, &self.run_id);
    }
}

fn busy(run_id: &str) -> ApiError {
    ApiError::running(format!(
        "Session {run_id} is answering another question; try again when it is done."
    ))
}

/// Every field the canvas asks for, by key: Begin's inputs, then its forms' fields.
fn canvas_fields(canvas: &canvas_engine::Canvas) -> Object {
    let mut fields = Object::new();
    let begin = canvas.node("begin").into_iter();
    let forms = canvas
        .nodes
        .values()
        .filter(|n| n.class.eq_ignore_ascii_case("UserFillUp"));
    for node in begin.chain(forms) {
        if let Some(inputs) = node.params.get("inputs").and_then(Value::as_object) {
            for (k, def) in inputs {
                fields.entry(k.clone()).or_insert_with(|| def.clone());
            }
        }
    }
    fields
}

/// Inputs in RAGFlow's API shape (`{key: {value, type?}}`): an entry already in it is
/// taken as given, a bare value is wrapped (typed by its field, when it declares one).
pub(crate) fn api_inputs(given: &Object, canvas: &canvas_engine::Canvas) -> Object {
    let fields = canvas_fields(canvas);
    given
        .iter()
        .map(|(k, v)| {
            let shaped = match v {
                Value::Object(o) if o.contains_key("value") => v.clone(),
                bare => {
                    let mut o = json!({"value": bare});
                    if let Some(t) = fields.get(k).and_then(|d| d.get("type")) {
                        o["type"] = t.clone();
                    }
                    o
                }
            };
            (k.clone(), shaped)
        })
        .collect()
}

/// The inputs Begin takes: its own fields, and keys no form asks for (form fields wait
/// for their form, as with `canvas run -i`).
fn begin_inputs(inputs: &Object, canvas: &canvas_engine::Canvas) -> Object {
    let begin: Object = canvas
        .node("begin")
        .and_then(|b| b.params.get("inputs"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let asked_by_form = |k: &str| {
        canvas.nodes.values().any(|n| {
            n.class.eq_ignore_ascii_case("UserFillUp")
                && n.params
                    .get("inputs")
                    .and_then(Value::as_object)
                    .is_some_and(|i| i.contains_key(k))
        })
    };
    inputs
        .iter()
        .filter(|(k, _)| begin.contains_key(*k) || !asked_by_form(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
