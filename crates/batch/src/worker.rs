//! [`Worker`]: one process's share of a batch. It claims rows with leases, runs up to
//! `concurrency` of them at once on the runtime (each a stored run of its own, with its
//! own state: one row failing never disturbs another), renews its leases while they run,
//! and records each row's result. A row whose run another worker started is continued
//! from that run's last checkpoint. Ctrl-C stops every run at its next node boundary
//! and gives the unfinished rows back, to be resumed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use canvas_engine::{Canvas, RunConfig, StopReason, StopSignal};
use canvas_runner::{
    Drive, DriveError, Ended, GivenAnswers, HeldRuns, Lease, Observer, TurnRequest, error_line,
};
use canvas_store::call;
use canvas_store::writer::WriterHandle;
use canvas_store::{
    ClaimedRow, NewLease, NewRun, RowEnd, RowFinish, RowStatus, RunRecord, RunStatus, RunWrite,
    Store, StoreError, TurnKind,
};
use serde_json::Value;
use tokio::task::JoinSet;

use super::expect::Expect;
use super::observe::Observed;
use super::{BatchError, RowAsk, RowResult};

/// One process working on one batch.
pub struct Worker {
    /// The batch.
    pub batch_id: String,
    /// Its canvas, compiled.
    pub canvas: Arc<Canvas>,
    /// What each row's new run is stored as (its id and times are set per run).
    pub record: RunRecord,
    /// The store holding the batch and its runs.
    pub store: Arc<dyn Store>,
    /// The store's writer (shared by every row's run: their writes are committed
    /// together).
    pub writer: WriterHandle,
    /// Models, services and limits of every run.
    pub config: RunConfig,
    /// This process's name as a lease holder.
    pub owner: String,
    /// How long a claim lasts without renewal (renewed every third of it).
    pub lease: Duration,
    /// Rows run at once.
    pub concurrency: usize,
    /// Keep going, while rows another worker holds are not done, to take them over if
    /// that worker dies (a worker draining a shared batch); else stop when nothing is
    /// left to claim.
    pub wait_for_others: bool,
    /// Raised by Ctrl-C: every run stops at its next node boundary.
    pub interrupt: Arc<AtomicBool>,
}

/// What a worker reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A row is done (with its result).
    Done(Box<RowResult>),
    /// A row stopped (Ctrl-C) and is given back, to be resumed.
    Stopped {
        /// The row, 1-based.
        row: u64,
    },
    /// A row could not be finished here and is given back (tried again later, here or
    /// by another worker): its run is held elsewhere, or the store refused.
    Left {
        /// The row, 1-based.
        row: u64,
        /// Why.
        why: String,
    },
}

/// How a worker's work ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerEnd {
    /// Rows this worker finished.
    pub finished: u64,
    /// Ctrl-C stopped it.
    pub interrupted: bool,
    /// Rows it gave back.
    pub released: u64,
    /// Rows given back after a failure, with why.
    pub left: Vec<(u64, String)>,
}

/// How often a worker with nothing to run looks for rows again (a dead worker's rows,
/// given-back rows), and for Ctrl-C.
const POLL: Duration = Duration::from_millis(250);

impl Worker {
    /// Work on the batch until every row is done (or, without `wait_for_others`, until
    /// nothing is left to claim), or Ctrl-C. `progress` hears of every row this worker
    /// ends.
    pub async fn run(
        self: Arc<Self>,
        progress: Arc<dyn Fn(Progress) + Send + Sync>,
    ) -> Result<WorkerEnd, BatchError> {
        let active: Arc<Mutex<HashMap<String, StopSignal>>> = Arc::default();
        let held = HeldRuns::default();
        let renewer = tokio::spawn(Arc::clone(&self).renew(Arc::clone(&active), held.clone()));
        let out = self.work(&active, &held, progress).await;
        renewer.abort();
        let released = call(self.store.as_ref(), || {
            self.store.release_rows(&self.batch_id, &self.owner, None)
        });
        let mut end = out?;
        end.released = released?;
        Ok(end)
    }

    async fn work(
        self: &Arc<Self>,
        active: &Arc<Mutex<HashMap<String, StopSignal>>>,
        held: &HeldRuns,
        progress: Arc<dyn Fn(Progress) + Send + Sync>,
    ) -> Result<WorkerEnd, BatchError> {
        let mut end = WorkerEnd::default();
        let mut running: JoinSet<(u64, Outcome)> = JoinSet::new();
        let concurrency = self.concurrency.max(1);
        loop {
            if self.interrupt.load(Ordering::SeqCst) {
                end.interrupted = true;
                break;
            }
            if running.len() < concurrency {
                let want = concurrency - running.len();
                let claimed = call(self.store.as_ref(), || {
                    self.store
                        .claim_rows(&self.batch_id, &self.owner, want, self.lease)
                })?;
                let none = claimed.is_empty();
                for row in claimed {
                    let me = Arc::clone(self);
                    let active = Arc::clone(active);
                    let held = held.clone();
                    running.spawn(async move {
                        let n = row.idx + 1;
                        (n, me.row(row, &active, held).await)
                    });
                }
                if none && running.is_empty() {
                    let counts = call(self.store.as_ref(), || {
                        self.store.row_counts(&self.batch_id)
                    })?;
                    if counts.pending + counts.running == 0 || !self.wait_for_others {
                        break;
                    }
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                if !none && running.len() < concurrency {
                    continue;
                }
            }
            tokio::select! {
                joined = running.join_next() => {
                    if let Some(joined) = joined {
                        self.report(joined, &mut end, progress.as_ref());
                    }
                    // Every row done by now, so that one claim replaces them all.
                    while let Some(joined) = running.try_join_next() {
                        self.report(joined, &mut end, progress.as_ref());
                    }
                }
                () = tokio::time::sleep(POLL) => {}
            }
        }
        // Ctrl-C: the runs under way stop at their next node boundary.
        while let Some(joined) = running.join_next().await {
            self.report(joined, &mut end, progress.as_ref());
        }
        Ok(end)
    }

    fn report(
        &self,
        joined: Result<(u64, Outcome), tokio::task::JoinError>,
        end: &mut WorkerEnd,
        progress: &(dyn Fn(Progress) + Send + Sync),
    ) {
        match joined {
            Ok((_, Outcome::Done(result))) => {
                end.finished += 1;
                progress(Progress::Done(result));
            }
            Ok((row, Outcome::Stopped)) => progress(Progress::Stopped { row }),
            Ok((row, Outcome::Left(why))) => {
                tracing::warn!(batch = %self.batch_id, row, %why, "row given back");
                // Given back now: it is tried again (here or by another worker) rather
                // than held until this worker stops.
                if let Err(e) = call(self.store.as_ref(), || {
                    self.store
                        .release_rows(&self.batch_id, &self.owner, row.checked_sub(1))
                }) {
                    tracing::warn!(batch = %self.batch_id, row, error = %e, "giving a row back failed");
                }
                end.left.push((row, why.clone()));
                progress(Progress::Left { row, why });
            }
            Err(e) => {
                // A panic in one row's task: that row is left to its lease; the rest go on.
                let why = format!("the row's task failed: {e}");
                end.left.push((0, why.clone()));
                progress(Progress::Left { row: 0, why });
            }
        }
    }

    /// Renew the leases of the rows and runs under way, every third of their lifetime;
    /// a run whose lease another process took is cancelled (it is that process's now).
    /// Only runs whose lease a row's drive has taken are renewed: one still waiting for
    /// another holder's lease, or not stored yet, is not ours to lose.
    async fn renew(
        self: Arc<Self>,
        active: Arc<Mutex<HashMap<String, StopSignal>>>,
        held: HeldRuns,
    ) {
        let every = (self.lease / 3).max(Duration::from_millis(50));
        loop {
            tokio::time::sleep(every).await;
            let runs: Vec<(String, StopSignal)> = active
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .filter(|(k, _)| held.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            // Runs first: a row's lease must not outlive its run's.
            for (run_id, stop) in runs {
                let renewed = call(self.store.as_ref(), || {
                    held.while_held(&run_id, || {
                        self.store.renew_lease(&run_id, &self.owner, self.lease)
                    })
                });
                if let Some(Err(e)) = renewed {
                    tracing::warn!(batch = %self.batch_id, run = %run_id, error = %e, "the run's lease was lost");
                    stop.request(StopReason::Cancelled);
                }
            }
            if let Err(e) = call(self.store.as_ref(), || {
                self.store
                    .renew_rows(&self.batch_id, &self.owner, self.lease)
            }) {
                tracing::warn!(batch = %self.batch_id, error = %e, "renewing the row leases failed");
            }
        }
    }

    /// Run one claimed row to its end.
    async fn row(
        &self,
        row: ClaimedRow,
        active: &Mutex<HashMap<String, StopSignal>>,
        held: HeldRuns,
    ) -> Outcome {
        let started = Instant::now();
        let ask: RowAsk = match serde_json::from_value(row.spec.clone()) {
            Ok(a) => a,
            Err(e) => return self.unreadable(&row, &format!("its stored row cannot be read: {e}")),
        };
        let expect = match &ask.expect {
            Value::Null => Expect::default(),
            v => match Expect::from_value(v) {
                Ok(e) => e,
                Err(e) => return self.unreadable(&row, &e),
            },
        };
        let stop = StopSignal::sharing_interrupt(Arc::clone(&self.interrupt));
        let lease = Lease {
            owner: self.owner.clone(),
            ttl: self.lease,
            held,
        };
        // A new row's run is heard as it goes (every turn of it is driven here), so
        // its events need not be read back; a run continued is read back whole.
        let heard: Arc<Mutex<Vec<String>>> = Arc::default();
        let observer = row.run_id.is_none().then(|| {
            let heard = Arc::clone(&heard);
            let hear: Observer = Arc::new(move |line: &str| {
                heard
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line.to_string());
            });
            hear
        });
        let fresh = observer.is_some();
        let drive = Drive {
            canvas: &self.canvas,
            store: self.store.as_ref(),
            writer: &self.writer,
            config: &self.config,
            lease: Some(&lease),
            observer,
        };
        let mut forms = GivenAnswers::new(ask.answers.clone());
        let run_id = row
            .run_id
            .clone()
            .unwrap_or_else(|| ulid::Ulid::new().to_string());
        active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run_id.clone(), stop.clone());
        let existing = match row.run_id {
            Some(_) => call(self.store.as_ref(), || self.store.find_run(&run_id)).map(Some),
            None => Ok(None),
        };
        // A run this row creates keeps its lease until the row's result is recorded,
        // which gives it up in the same transaction.
        let mut holding = false;
        let ended = match existing {
            Ok(Some(rec)) => drive.resume(&rec, &mut forms, &stop).await,
            // New, or tied to the row by a worker that died before creating it.
            Ok(None) | Err(StoreError::NotFound(_)) => {
                match self.create_run(&row, &run_id, &ask).await {
                    Ok((turn, request)) => {
                        holding = true;
                        drive
                            .started(&run_id, turn, request, &mut forms, &stop)
                            .await
                    }
                    Err(e) => {
                        // Another worker holds the row now, or the store refused: the
                        // row is given back.
                        active
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .remove(&run_id);
                        return Outcome::Left(e.to_string());
                    }
                }
            }
            Err(e) => Err(e.into()),
        };
        active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&run_id);
        if holding {
            // Not renewed from here on: given up below.
            drive.forget(&run_id);
        }
        let heard = (fresh && holding)
            .then(|| std::mem::take(&mut *heard.lock().unwrap_or_else(PoisonError::into_inner)));
        let out = self
            .conclude(&row, &run_id, ended, holding, heard, &expect, started)
            .await;
        if holding && !matches!(out, Outcome::Done(_)) {
            // Failing to let go only delays the next holder until the lease expires.
            let _ = call(self.store.as_ref(), || {
                self.store.release_lease(&run_id, &self.owner)
            });
        }
        out
    }

    /// Store the row's new run `run_id` (tied to the row, with its first turn and its
    /// lease, in one write: committed with other rows' writes): its first turn's number
    /// and request.
    async fn create_run(
        &self,
        row: &ClaimedRow,
        run_id: &str,
        ask: &RowAsk,
    ) -> Result<(u32, TurnRequest), StoreError> {
        let mut record = self.record.clone();
        record.id = run_id.to_string();
        let now = rec_now();
        record.created_at = now;
        record.updated_at = now;
        let request = TurnRequest {
            kind: TurnKind::Start,
            query: ask.query.clone(),
            inputs: ask.inputs.clone(),
        };
        let create = NewRun {
            record,
            kind: request.kind,
            query: request.query.clone(),
            inputs: Value::Object(request.inputs.clone()),
            lease: Some(NewLease {
                owner: self.owner.clone(),
                ttl: self.lease,
                row: Some((self.batch_id.clone(), row.idx)),
            }),
        };
        let turn = 1;
        self.commit(RunWrite {
            create: Some(Box::new(create)),
            ..RunWrite::new(run_id, turn)
        })
        .await?;
        Ok((turn, request))
    }

    /// Commit `write`: on a local file, queued on the writer and committed with the
    /// other rows' writes (what a commit costs there is the pages it writes, and rows
    /// written together share them); on a server, in a transaction of its own on one of
    /// the pool's connections (there each statement costs a round trip, and the rows'
    /// transactions go side by side instead of queueing on the writer's connection).
    async fn commit(&self, write: RunWrite) -> Result<(), StoreError> {
        if !self.store.calls_are_quick() {
            return call(self.store.as_ref(), || self.store.write_one(write));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.writer.submit(
            write,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.await.unwrap_or(Err(StoreError::WriterGone))
    }

    /// Judge and record a row whose run `run_id` ended (`holding`: with its lease, to
    /// give up with the row's result), from its events: `heard` as they were stored,
    /// else read back.
    #[allow(clippy::too_many_arguments)]
    async fn conclude(
        &self,
        row: &ClaimedRow,
        run_id: &str,
        ended: Result<Ended, DriveError>,
        holding: bool,
        heard: Option<Vec<String>>,
        expect: &Expect,
        started: Instant,
    ) -> Outcome {
        let n = row.idx + 1;
        let ended = match ended {
            Ok(e) => e,
            Err(e @ DriveError::Leased { .. }) => return Outcome::Left(e.to_string()),
            Err(e) => return Outcome::Left(format!("run {run_id}: {e}")),
        };
        let status = match ended.status {
            RunStatus::Succeeded => RowStatus::Succeeded,
            RunStatus::Waiting => RowStatus::Waiting,
            RunStatus::Failed => RowStatus::Failed,
            RunStatus::Interrupted if ended.step_limit => RowStatus::Failed,
            RunStatus::Interrupted | RunStatus::Running | RunStatus::Cancelled => {
                return if self.interrupt.load(Ordering::SeqCst) {
                    Outcome::Stopped
                } else {
                    Outcome::Left(format!("run {run_id} was taken over by another process"))
                };
            }
        };
        let events = match heard {
            Some(lines) => lines,
            None => match call(self.store.as_ref(), || self.store.events(run_id)) {
                Ok(ev) => ev,
                Err(e) => return Outcome::Left(e.to_string()),
            },
        };
        let seen = Observed::of(&events);
        let seconds = started.elapsed().as_secs_f64();
        // A row's checks judge its answer: one that failed or waits has none to judge
        // (it counts as not finished already).
        let checks = if status == RowStatus::Succeeded {
            expect.judge(&seen, seconds)
        } else {
            Vec::new()
        };
        let passed = (!checks.is_empty()).then(|| checks.iter().all(|c| c.passed));
        let result = RowResult {
            row: n,
            id: row.row_id.clone(),
            run_id: Some(run_id.to_string()),
            status,
            error: self.error_of(&ended, status),
            answer: seen.answer,
            outputs: seen.outputs,
            checks,
            passed,
            usage: seen.usage,
            seconds: (seconds * 1e6).round() / 1e6,
        };
        let end = RowEnd {
            status,
            passed,
            result: serde_json::to_value(&result).unwrap_or(Value::Null),
            release_run: holding.then(|| run_id.to_string()),
        };
        let finish = RowFinish {
            batch_id: self.batch_id.clone(),
            idx: row.idx,
            owner: self.owner.clone(),
            end,
        };
        let write = RunWrite {
            row_end: Some(Box::new(finish)),
            ..RunWrite::new(run_id, ended.turn)
        };
        match self.commit(write).await {
            Ok(()) => Outcome::Done(Box::new(result)),
            Err(e) => Outcome::Left(e.to_string()),
        }
    }

    /// A stored row this binary cannot read fails, naming why.
    fn unreadable(&self, row: &ClaimedRow, why: &str) -> Outcome {
        let result = RowResult {
            row: row.idx + 1,
            id: row.row_id.clone(),
            run_id: row.run_id.clone(),
            status: RowStatus::Failed,
            answer: String::new(),
            outputs: Value::Null,
            checks: Vec::new(),
            passed: None,
            usage: Default::default(),
            seconds: 0.0,
            error: Some(why.to_string()),
        };
        let end = RowEnd {
            status: RowStatus::Failed,
            passed: None,
            result: serde_json::to_value(&result).unwrap_or(Value::Null),
            release_run: None,
        };
        match call(self.store.as_ref(), || {
            self.store
                .finish_row(&self.batch_id, row.idx, &self.owner, &end)
        }) {
            Ok(()) => Outcome::Done(Box::new(result)),
            Err(e) => Outcome::Left(e.to_string()),
        }
    }

    /// What the results say of a failed or waiting row.
    fn error_of(&self, ended: &Ended, status: RowStatus) -> Option<String> {
        match status {
            RowStatus::Waiting => {
                let fields: Vec<String> = ended
                    .form
                    .as_ref()
                    .and_then(|f| f.get("inputs"))
                    .and_then(Value::as_object)
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default();
                Some(format!(
                    "waits at a form: no answer for {}",
                    if fields.is_empty() {
                        "it".to_string()
                    } else {
                        fields.join(", ")
                    }
                ))
            }
            RowStatus::Failed => {
                let why = ended.error.as_deref().map(error_line).unwrap_or_default();
                Some(match &ended.component {
                    Some(id) => {
                        let class = self
                            .canvas
                            .node(id)
                            .map(|n| format!(" ({})", n.class))
                            .unwrap_or_default();
                        format!("component \"{id}\"{class} failed: {why}")
                    }
                    None => why,
                })
            }
            _ => None,
        }
    }
}

/// How one row's task ended.
enum Outcome {
    Done(Box<RowResult>),
    Stopped,
    Left(String),
}

fn rec_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
