//! [`Drive`]: the turns of one stored run, without a terminal: a new run's first turn,
//! or a stored run continued where it stopped ([`plan()`]), then answers to the forms it
//! reaches for as long as [`Forms`] has them. Everything a turn does is stored through
//! a [`StoreSink`]; what this returns is how the run stands.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use canvas_engine::{
    Canvas, Outcome, RunConfig, RunError, RunState, StopReason, StopSignal, run_turn,
};
use canvas_pyrt::Object;
use canvas_store::{Checkpointer, RunRecord, RunStatus, Store, StoreError, TurnEnd, TurnKind};
use serde_json::Value;

use super::plan::{Plan, plan};
use super::sink::{Observer, StoreSink};
use canvas_store::call;

/// How often a run held by another holder is tried again.
const LEASE_POLL: std::time::Duration = std::time::Duration::from_millis(200);
/// How long past the lease's lifetime a run held by another holder is waited for.
const LEASE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// What one turn asks: its kind, `sys.query` and inputs (API shape).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    /// The first turn, an answer to the pending form, or a next conversational one.
    pub kind: TurnKind,
    /// `sys.query`.
    pub query: String,
    /// `inputs` in API shape.
    pub inputs: Object,
}

impl TurnRequest {
    /// An answer to the pending form.
    pub fn answer(inputs: Object) -> Self {
        TurnRequest {
            kind: TurnKind::Answer,
            query: String::new(),
            inputs,
        }
    }
}

/// What the next turn of a stored run is.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// A new turn.
    Turn(TurnRequest),
    /// Continue stored turn `turn` from the state's cursor; or, when no checkpoint of it
    /// was made, run it again from its start with `again`.
    Continue {
        /// The turn's number.
        turn: u32,
        /// Its stored request, when it must be run again.
        again: Option<TurnRequest>,
    },
}

/// Answers for the forms a run reaches.
pub trait Forms: Send {
    /// The answers (API shape) to `form` (`{"inputs": {field: definition}, "tips"}`), or
    /// `None` to leave the run waiting there.
    fn answer(&mut self, form: &Value) -> Option<Object>;
}

/// No answers: a run stops at its first form.
pub struct NoAnswers;

impl Forms for NoAnswers {
    fn answer(&mut self, _form: &Value) -> Option<Object> {
        None
    }
}

/// Answers given ahead (by field key): a form whose required fields they all cover is
/// answered with them, once (the same form asked again, in a Loop, waits).
#[derive(Debug, Clone, Default)]
pub struct GivenAnswers {
    /// The answers, in API shape.
    pub answers: Object,
    /// The field sets already answered.
    used: std::collections::HashSet<Vec<String>>,
}

impl GivenAnswers {
    /// Answers for the forms a run reaches.
    pub fn new(answers: Object) -> Self {
        GivenAnswers {
            answers,
            used: Default::default(),
        }
    }
}

impl Forms for GivenAnswers {
    fn answer(&mut self, form: &Value) -> Option<Object> {
        let declared = form.get("inputs").and_then(Value::as_object)?;
        let keys: Vec<String> = declared.keys().cloned().collect();
        if keys.is_empty() || self.used.contains(&keys) {
            return None;
        }
        let answers: Object = self
            .answers
            .iter()
            .filter(|(k, _)| declared.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let covered = declared.iter().all(|(k, def)| {
            answers.contains_key(k) || def.get("optional").and_then(Value::as_bool) == Some(true)
        });
        if answers.is_empty() || !covered {
            return None;
        }
        self.used.insert(keys);
        Some(answers)
    }
}

/// How a run stands after [`Drive`] let go of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    /// Succeeded, failed, waiting, interrupted or cancelled.
    pub status: RunStatus,
    /// Why it failed or stopped.
    pub error: Option<String>,
    /// The failing component, when a component failed.
    pub component: Option<String>,
    /// The form it waits at.
    pub form: Option<Value>,
    /// It stopped at its step budget (a runaway cycle or loop).
    pub step_limit: bool,
    /// Its last turn.
    pub turn: u32,
}

impl Ended {
    fn of(status: RunStatus, turn: u32) -> Ended {
        Ended {
            status,
            error: None,
            component: None,
            form: None,
            step_limit: false,
            turn,
        }
    }
}

/// Why driving a run failed (the run's own failures are an [`Ended`]).
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The store refused a read or a write; the run keeps its last checkpoint.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The turn's events could not be stored (the run keeps its last checkpoint).
    #[error("{0}")]
    Sink(String),
    /// A stored run with no turn to continue.
    #[error("run {0} never started a turn: there is nothing to continue")]
    NoTurn(String),
    /// Another process runs the run, and did not let go of it in time.
    #[error("run {run_id} is being run by another process ({owner})")]
    Leased {
        /// The run.
        run_id: String,
        /// Its lease holder.
        owner: String,
    },
}

/// The lease a [`Drive`] holds on the run it drives (renewing it is the caller's: the
/// runs to renew are those in `held`).
#[derive(Debug, Clone)]
pub struct Lease {
    /// The holder's name ([`canvas_store::lease_holder`]).
    pub owner: String,
    /// How long a taken lease lasts; a run held by another holder is waited for about
    /// this long (its lease may be about to expire), then given up on.
    pub ttl: std::time::Duration,
    /// The runs whose lease a [`Drive`] of this holder has taken and not let go of.
    pub held: HeldRuns,
}

/// The runs a holder holds the lease of, as its [`Drive`]s take and let go of them: what
/// the holder renews. A run still waiting for another holder's lease, or not stored yet,
/// is not in it (a failed renewal of it means nothing).
#[derive(Debug, Clone, Default)]
pub struct HeldRuns(Arc<Mutex<HashSet<String>>>);

impl HeldRuns {
    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        // A set of ids, consistent whenever the lock is free.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `f` (a renewal of `run_id`'s lease) if the run is held, with no [`Drive`]
    /// letting go of it meanwhile (a lease renewed just after its release would be taken
    /// again); `None` when it is not held.
    pub fn while_held<T>(&self, run_id: &str, f: impl FnOnce() -> T) -> Option<T> {
        let held = self.lock();
        held.contains(run_id).then(f)
    }

    /// Whether the run is held.
    pub fn contains(&self, run_id: &str) -> bool {
        self.lock().contains(run_id)
    }
}

/// The turns of stored runs of one canvas, with one configuration.
pub struct Drive<'a> {
    /// The compiled canvas.
    pub canvas: &'a Canvas,
    /// The store holding the runs.
    pub store: &'a dyn Store,
    /// Its writer.
    pub writer: &'a canvas_store::writer::WriterHandle,
    /// Models, services and limits; the run id, query, inputs and stop signal are set
    /// per turn.
    pub config: &'a RunConfig,
    /// The lease to hold on the run while driving it (none: the caller holds it).
    pub lease: Option<&'a Lease>,
    /// Hears every event of the turns driven, once it may be shown (a server's stream).
    pub observer: Option<Observer>,
}

impl Drive<'_> {
    /// Store `record` (a new run) with its first turn `request`, and drive it.
    pub async fn start(
        &self,
        record: &RunRecord,
        request: TurnRequest,
        forms: &mut dyn Forms,
        stop: &StopSignal,
    ) -> Result<Ended, DriveError> {
        let inputs = Value::Object(request.inputs.clone());
        // With its lease, when this drive holds one, in the same transaction: the run is
        // never seen unheld, and a served run commits once fewer.
        let first = (request.kind, request.query.as_str(), &inputs);
        let turn = call(self.store, || match self.lease {
            Some(l) => self.store.create_run_leased(record, first, &l.owner, l.ttl),
            None => self
                .store
                .create_run_with_turn(record, first.0, first.1, first.2),
        })?;
        let out = self.started(&record.id, turn, request, forms, stop).await;
        self.give_lease(&record.id);
        out
    }

    /// Drive the run `run_id` its caller has just stored, running, with its first turn
    /// `turn` (`request`) and, when this drive holds leases, its lease. The lease stays
    /// held when this returns: the caller gives it up ([`Drive::release`], or
    /// [`Drive::forget`] and a write of its own).
    pub async fn started(
        &self,
        run_id: &str,
        turn: u32,
        request: TurnRequest,
        forms: &mut dyn Forms,
        stop: &StopSignal,
    ) -> Result<Ended, DriveError> {
        if let Some(l) = self.lease {
            l.held.lock().insert(run_id.to_string());
        }
        let next = Next::Continue {
            turn,
            again: Some(request),
        };
        let fresh = self.canvas.fresh_state();
        self.turns(run_id, Checkpointer::new(), fresh, next, forms, stop, true)
            .await
    }

    /// Continue the stored run `record` where it stands: its stopped turn from the last
    /// checkpoint, or its pending form when `forms` answers it. A finished run, or one
    /// waiting at a form `forms` does not answer, is returned as it stands.
    pub async fn resume(
        &self,
        record: &RunRecord,
        forms: &mut dyn Forms,
        stop: &StopSignal,
    ) -> Result<Ended, DriveError> {
        self.take_lease(&record.id).await?;
        let out = self.resume_held(record, forms, stop).await;
        self.give_lease(&record.id);
        out
    }

    async fn resume_held(
        &self,
        record: &RunRecord,
        forms: &mut dyn Forms,
        stop: &StopSignal,
    ) -> Result<Ended, DriveError> {
        // Read again under the lease: the holder before may have moved it on.
        let (record, checkpoints, planned) = call(self.store, || -> Result<_, DriveError> {
            let record = self.store.find_run(&record.id)?;
            let checkpoints = self.store.load_checkpoint(&record.id)?;
            let planned = plan(self.store, &record, checkpoints.state())?;
            Ok((record, checkpoints, planned))
        })?;
        let state = checkpoints
            .state()
            .cloned()
            .unwrap_or_else(|| self.canvas.fresh_state());
        let next = match planned {
            Plan::Run(next) => next,
            Plan::Ended(ended) => {
                let Some(answers) = ended.form.as_ref().and_then(|f| forms.answer(f)) else {
                    return Ok(ended);
                };
                Next::Turn(TurnRequest::answer(answers))
            }
        };
        self.turns(&record.id, checkpoints, state, next, forms, stop, false)
            .await
    }

    /// Take the run's lease, when this drive holds one, waiting about the lease's
    /// lifetime for another holder's lease to run out.
    async fn take_lease(&self, run_id: &str) -> Result<(), DriveError> {
        let patience = self
            .lease
            .map_or(std::time::Duration::ZERO, |l| l.ttl + LEASE_GRACE);
        self.acquire(run_id, patience).await
    }

    /// Take the run's lease, when this drive holds one, waiting at most `patience` for
    /// another holder to let go (or its lease to run out); [`DriveError::Leased`] when
    /// it does not.
    pub async fn acquire(
        &self,
        run_id: &str,
        patience: std::time::Duration,
    ) -> Result<(), DriveError> {
        let Some(lease) = self.lease else {
            return Ok(());
        };
        let deadline = std::time::Instant::now() + patience;
        loop {
            if call(self.store, || {
                self.store.acquire_lease(run_id, &lease.owner, lease.ttl)
            })? {
                lease.held.lock().insert(run_id.to_string());
                return Ok(());
            }
            if std::time::Instant::now() >= deadline {
                let owner = call(self.store, || self.store.lease_owner(run_id))
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| "unknown".into());
                return Err(DriveError::Leased {
                    run_id: run_id.to_string(),
                    owner,
                });
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            tokio::time::sleep(LEASE_POLL.min(left)).await;
        }
    }

    /// Give the run's lease up, when this drive holds one.
    pub fn release(&self, run_id: &str) {
        self.give_lease(run_id);
    }

    /// Where the run stands, read under the lease the caller holds: its record, its
    /// checkpoints and what continuing it means.
    pub fn stand(&self, run_id: &str) -> Result<(RunRecord, Checkpointer, Plan), DriveError> {
        call(self.store, || {
            let record = self.store.find_run(run_id)?;
            let checkpoints = self.store.load_checkpoint(run_id)?;
            let planned = match record.turns {
                // A run stored without a turn (a new session) waits for its first.
                0 => Plan::Ended(Ended::of(record.status, 0)),
                _ => plan(self.store, &record, checkpoints.state())?,
            };
            Ok((record, checkpoints, planned))
        })
    }

    /// Run `next` on the run the caller holds the lease of, from `checkpoints` (the
    /// run's fresh state when it has none), then answer the forms it reaches while
    /// `forms` has answers.
    pub async fn run_next(
        &self,
        run_id: &str,
        checkpoints: Checkpointer,
        next: Next,
        forms: &mut dyn Forms,
        stop: &StopSignal,
    ) -> Result<Ended, DriveError> {
        let state = checkpoints
            .state()
            .cloned()
            .unwrap_or_else(|| self.canvas.fresh_state());
        self.turns(run_id, checkpoints, state, next, forms, stop, false)
            .await
    }

    /// Stop renewing the run's lease, when this drive holds one, without giving it up:
    /// the caller gives it up in a write of its own (a batch row's result). A lease
    /// renewal under way finishes first (see [`HeldRuns::while_held`]).
    pub fn forget(&self, run_id: &str) {
        if let Some(lease) = self.lease {
            lease.held.lock().remove(run_id);
        }
    }

    fn give_lease(&self, run_id: &str) {
        if let Some(lease) = self.lease {
            // Not renewed from here on (before the release: see `HeldRuns::while_held`).
            self.forget(run_id);
            // Failing to let go only delays the next holder until the lease expires.
            let _ = call(self.store, || {
                self.store.release_lease(run_id, &lease.owner)
            });
        }
    }

    /// Run `next`, then answer the forms the run reaches while `forms` has answers.
    /// `running`: the run is stored as running already (just created).
    #[allow(clippy::too_many_arguments)]
    async fn turns(
        &self,
        run_id: &str,
        mut checkpoints: Checkpointer,
        mut state: RunState,
        mut next: Next,
        forms: &mut dyn Forms,
        stop: &StopSignal,
        mut running: bool,
    ) -> Result<Ended, DriveError> {
        loop {
            let (turn, request) = match next {
                Next::Turn(request) => {
                    let inputs = Value::Object(request.inputs.clone());
                    let n = call(self.store, || {
                        self.store
                            .begin_turn(run_id, request.kind, &request.query, &inputs)
                    })?;
                    (n, request)
                }
                Next::Continue { turn, again } => {
                    if !running {
                        call(self.store, || {
                            self.store
                                .set_status(run_id, RunStatus::Running, None, None)
                        })?;
                    }
                    // From a checkpoint the engine takes the request from the cursor.
                    let request = again.unwrap_or(TurnRequest {
                        kind: TurnKind::Next,
                        query: String::new(),
                        inputs: Object::new(),
                    });
                    (turn, request)
                }
            };
            running = false;
            let cfg = RunConfig {
                run_id: run_id.to_string(),
                resume: request.kind == TurnKind::Answer,
                query: request.query,
                inputs: request.inputs,
                stop: stop.clone(),
                ..self.config.clone()
            };
            let mut sink = StoreSink::new(run_id, turn, self.writer, &mut checkpoints)
                .observed(self.observer.clone());
            let (after, result) = run_turn(self.canvas, state, &cfg, &mut sink).await;
            state = after;
            let ended = match ending(result, turn, cfg.max_steps) {
                Ok(ended) => ended,
                Err(e) => {
                    // Output failed mid-node: the events since the last checkpoint go,
                    // as in a crash, so resuming runs those nodes once.
                    let end = TurnEnd {
                        status: RunStatus::Interrupted,
                        error: Some(e.to_string()),
                        waiting: None,
                    };
                    sink.abandon(end).await?;
                    return Err(DriveError::Sink(e.to_string()));
                }
            };
            let end = TurnEnd {
                status: ended.status,
                error: ended.error.clone(),
                waiting: ended.form.clone(),
            };
            sink.finish(&state, end).await?;
            tracing::debug!(run_id, turn, status = %ended.status, "turn ended");
            let answers = match &ended.form {
                Some(form) if ended.status == RunStatus::Waiting => forms.answer(form),
                _ => None,
            };
            match answers {
                Some(a) => next = Next::Turn(TurnRequest::answer(a)),
                None => return Ok(ended),
            }
        }
    }
}

/// How the engine's result ends a turn; the sink's failure as an error.
fn ending(
    result: Result<Outcome, RunError>,
    turn: u32,
    max_steps: u64,
) -> Result<Ended, std::io::Error> {
    let stopped = |status, error: String| Ended {
        error: Some(error),
        ..Ended::of(status, turn)
    };
    Ok(match result {
        Ok(Outcome::Finished { .. }) => Ended::of(RunStatus::Succeeded, turn),
        Ok(Outcome::Waiting { form }) => Ended {
            form: Some(form),
            ..Ended::of(RunStatus::Waiting, turn)
        },
        Ok(Outcome::Stopped { reason }) => match reason {
            StopReason::Interrupted => stopped(RunStatus::Interrupted, "interrupted".into()),
            StopReason::Cancelled => stopped(RunStatus::Cancelled, "cancelled".into()),
            StopReason::StepLimit => Ended {
                step_limit: true,
                ..stopped(
                    RunStatus::Interrupted,
                    format!("stopped after {max_steps} components (--max-steps)"),
                )
            },
        },
        Ok(Outcome::Failed {
            component_id,
            error,
        }) => Ended {
            component: Some(component_id),
            ..stopped(RunStatus::Failed, error)
        },
        Err(RunError::Crash {
            component_id,
            message,
        }) => Ended {
            component: Some(component_id),
            ..stopped(RunStatus::Failed, message)
        },
        Err(RunError::Sink(e)) => return Err(e),
    })
}
