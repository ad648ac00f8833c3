//! Driving a stored run, shared by `run`, `resume` and `chat`: the store's writer beside
//! the turns (the [`Reporter`] hands it events and checkpoints), the run's
//! lease and its watcher (lease renewal, cancel requests), Ctrl-C, the questions asked
//! in the terminal, and each turn's final status.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::Value;

use super::{CliError, exit};
use canvas_engine::scheduler::{DEFAULT_MAX_PARALLEL, DEFAULT_MAX_STEPS};
use canvas_engine::{
    Canvas, Outcome, RunConfig, RunError, RunState, StopReason, StopSignal, run_turn,
};
use canvas_pyrt::Object;
use canvas_runner::error_line;
use canvas_store::writer::WriterHandle;
use canvas_store::{
    Checkpointer, Fault, RunRecord, RunStatus, Store, StoreError, TurnEnd, TurnKind, lease_holder,
};
use canvas_ui::RunEnd;

use super::opts::{OutputOpts, RunFormat, StoreOpts};
use super::reporter::{Reporter, StoreFailure};

/// Options shared by `run`, `resume` and `chat`.
#[derive(Debug, Clone, Args)]
pub struct TurnArgs {
    /// `sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @).
    #[arg(
        short = 'q',
        long = "query",
        value_name = "TEXT",
        default_value = "",
        hide_default_value = true,
        value_parser = super::inputs::query_value
    )]
    pub query: String,
    /// A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE).
    #[arg(short = 'i', long = "input", value_name = "KEY=VALUE")]
    pub input: Vec<String>,
    /// A JSON or YAML file mapping field keys to values.
    #[arg(long = "inputs", value_name = "FILE")]
    pub inputs: Option<PathBuf>,
    /// How events are shown.
    #[command(flatten)]
    pub output: OutputOpts,
    /// Where runs are stored.
    #[command(flatten)]
    pub store: StoreOpts,
    /// Never prompt (implied when stdin is not a terminal).
    #[arg(long)]
    pub non_interactive: bool,
    /// Most components running at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PARALLEL as u16, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_parallel: u16,
    /// Step budget of a turn: a resumable stop (0: none).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STEPS)]
    pub max_steps: u64,
    /// Wall-clock limit for the whole turn, in seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Seed for random choices (Message alternatives): reproducible runs.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    // The groups with their own help headings come last: a heading applies to the
    // flags declared after it.
    /// Where model calls go.
    #[command(flatten)]
    pub models: super::models::ModelArgs,
    /// What tools may reach and how.
    #[command(flatten)]
    pub tools: super::tools::ToolArgs,
}

/// How often the watcher looks for a cancel request.
const WATCH_EVERY: Duration = Duration::from_millis(200);
/// The lease's lifetime; the watcher renews it well before it runs out.
const LEASE_TTL: Duration = Duration::from_secs(60);
const RENEW_EVERY: Duration = Duration::from_secs(20);

/// What one turn asks for, built once from the command line (or read back from the
/// store's turns row when a stopped turn is run again) and handed down to `RunConfig`.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// Which turn: the first, an answer to the pending form, or a next conversational one.
    pub kind: TurnKind,
    /// `sys.query`.
    pub query: String,
    /// `inputs` in API shape.
    pub inputs: Object,
}

impl TurnRequest {
    /// A turn with no query (answers to a form).
    pub fn answer(inputs: Object) -> Self {
        TurnRequest {
            kind: TurnKind::Answer,
            query: String::new(),
            inputs,
        }
    }

    /// The inputs as the store keeps them.
    fn inputs_json(&self) -> Value {
        Value::Object(self.inputs.clone())
    }
}

impl TurnArgs {
    /// The request for a turn of `kind`: `-q` and the inputs, already typed by the
    /// fields they answer.
    pub fn request(&self, kind: TurnKind, inputs: Object) -> TurnRequest {
        TurnRequest {
            kind,
            query: self.query.clone(),
            inputs,
        }
    }
}

/// What the next turn of a run is.
#[derive(Debug, Clone)]
pub enum Next {
    /// A new turn of a stored run.
    Turn(TurnRequest),
    /// The run waits on `form`: ask it in the terminal, then answer it.
    Ask {
        /// The pending form (`{"inputs", "tips"}`).
        form: Value,
    },
    /// Continue the stored turn `turn` (stopped, interrupted or crashed) from the state's
    /// cursor (which holds the turn's request); or, when the state has none (no
    /// checkpoint of it was made), run it again from its start with `again`.
    Continue {
        /// The turn's number.
        turn: u32,
        /// When the turn must be run again: its stored request.
        again: Option<TurnRequest>,
        /// The run was stored for this turn just now: it is running already, and a
        /// cancel pending for it came after it was stored, so it is kept.
        fresh: bool,
    },
}

/// A stored run being driven by this process.
pub struct Session<'a> {
    /// How the canvas file is named in messages.
    pub label: String,
    /// The compiled canvas.
    pub canvas: &'a Canvas,
    /// The store holding the run.
    pub store: &'a dyn Store,
    /// The run id.
    pub run_id: String,
    /// The command's options.
    pub args: &'a TurnArgs,
    /// Where model calls go.
    pub models: &'a super::models::ModelSetup,
    /// What tools may reach and how.
    pub tools: std::sync::Arc<canvas_tools::ToolEnv>,
    /// Plans the run's checkpoints (as of its last one).
    pub checkpoints: std::cell::RefCell<Checkpointer>,
}

/// How a drive ended: the exit code and the run's state.
pub struct Driven {
    /// The process exit code.
    pub code: u8,
    /// The state after the last turn.
    pub state: RunState,
}

/// How one turn ended, as the store records it and the renderer shows it.
struct Ending {
    /// What the renderer's summary says.
    end: RunEnd,
    /// The run's status after the turn.
    status: RunStatus,
    /// The stored error text.
    error: Option<String>,
    /// The form the run waits on.
    form: Option<Value>,
    /// The exit code, or the error to report.
    result: Result<u8, CliError>,
}

/// The engine's answer for one turn: the state after it and how it ended.
type Ran = (RunState, Result<Outcome, RunError>);

/// What a finished turn hands back to the loop in `turns`.
struct TurnOutcome {
    state: RunState,
    code: u8,
    /// The form the run waits on, when it waits.
    form: Option<Value>,
    /// Answers given up front (`-i`) that cover that form.
    preset: Option<Object>,
}

impl Session<'_> {
    /// Run `next`, then keep going while the run waits on a form that can be asked in
    /// the terminal. Holds the run's lease throughout; Ctrl-C stops at the next node
    /// boundary (a second Ctrl-C exits at once: the last checkpoint is kept).
    pub fn drive(&self, state: RunState, next: Next) -> Result<Driven, CliError> {
        let run_id = &self.run_id;
        let holder = lease_holder();
        let taken = self
            .store
            .acquire_lease(run_id, &holder, LEASE_TTL)
            .map_err(|e| self.store_error(e))?;
        if !taken {
            let owner = self.store.lease_owner(run_id).ok().flatten();
            return Err(CliError::invalid(format!(
                "run {run_id} is being run by another process{}",
                owner.map(|o| format!(" ({o})")).unwrap_or_default()
            ))
            .hint(format!(
                "wait for it, or stop it with `canvas cancel {run_id}`"
            )));
        }
        self.drive_leased(state, next, &holder)
    }

    /// [`drive`](Self::drive) once `holder` holds the run's lease; gives it up at the end.
    fn drive_leased(&self, state: RunState, next: Next, holder: &str) -> Result<Driven, CliError> {
        let run_id = self.run_id.clone();
        let stop = StopSignal::new();
        let signals = Signals::watch(&stop, &run_id);
        let res = std::thread::scope(|s| {
            let writer = canvas_store::writer::spawn_scoped(s, self.store);
            self.turns(state, next, &stop, &writer)
        });
        drop(signals);
        let _ = self.store.release_lease(&run_id, holder);
        res
    }

    /// Store the run `record` with its first turn (so it never exists without one), then
    /// drive that turn from `state`.
    pub fn start(
        &self,
        record: &RunRecord,
        request: TurnRequest,
        state: RunState,
    ) -> Result<Driven, CliError> {
        // Stored with its lease: one transaction where two were.
        let holder = lease_holder();
        let first = (request.kind, request.query.as_str(), &request.inputs_json());
        let turn = self
            .store
            .create_run_leased(record, first, &holder, LEASE_TTL)
            .map_err(|e| {
                // Nothing was stored: the same command can be given again once the store
                // takes writes.
                let reason = e.reason();
                let err = CliError::from(e);
                let msg = format!(
                    "{}: cannot store the run in {} ({reason}); nothing was stored",
                    self.label,
                    self.args.store.path().display()
                );
                CliError {
                    message: msg,
                    ..err
                }
            })?;
        tracing::info!(run_id = %record.id, source = %record.source, turn, "run created");
        let next = Next::Continue {
            turn,
            again: Some(request),
            fresh: true,
        };
        self.drive_leased(state, next, &holder)
    }

    fn turns(
        &self,
        mut state: RunState,
        mut next: Next,
        stop: &StopSignal,
        writer: &WriterHandle,
    ) -> Result<Driven, CliError> {
        // `-i` answers forms ahead only when it is not the answer to the pending form
        // itself (`resume` of a waiting run) or a next turn's inputs.
        let mut presets = Presets {
            enabled: matches!(next, Next::Continue { .. }),
            ..Presets::default()
        };
        loop {
            // A turn continued from a checkpoint: its stored events come first.
            let mut replay = None;
            // A new turn forgets a cancel asked of the run's last one.
            let mut clear_cancel = true;
            let (turn_no, cfg) = match next {
                Next::Ask { form } => {
                    next = self.ask(&form)?;
                    continue;
                }
                Next::Turn(request) => {
                    let n = self
                        .store
                        .begin_turn(
                            &self.run_id,
                            request.kind,
                            &request.query,
                            &request.inputs_json(),
                        )
                        .map_err(|e| self.store_error(e))?;
                    tracing::info!(run_id = %self.run_id, turn = n, kind = ?request.kind, "turn begun");
                    (n, self.config(request, stop))
                }
                Next::Continue { turn, again, fresh } => {
                    if !fresh {
                        self.store
                            .set_status(&self.run_id, RunStatus::Running, None, None)
                            .map_err(|e| self.store_error(e))?;
                    }
                    clear_cancel = !fresh;
                    tracing::info!(run_id = %self.run_id, turn, from_checkpoint = again.is_none(), "turn continued");
                    if again.is_none() {
                        replay = Some(turn);
                    }
                    // From a checkpoint the engine takes the request from the cursor.
                    let request = again.unwrap_or_else(|| TurnRequest {
                        kind: TurnKind::Next,
                        query: String::new(),
                        inputs: Object::new(),
                    });
                    (turn, self.config(request, stop))
                }
            };
            if clear_cancel {
                self.store
                    .clear_cancel(&self.run_id)
                    .map_err(|e| self.store_error(e))?;
            }
            let out = self.one_turn(state, turn_no, replay, &cfg, &mut presets, writer)?;
            state = out.state;
            if let Some(inputs) = out.preset {
                // Answers given with -i cover the form: answer it and go on.
                next = Next::Turn(TurnRequest::answer(inputs));
                continue;
            }
            let Some(form) = out.form else {
                return Ok(Driven {
                    code: out.code,
                    state,
                });
            };
            if !canvas_ui::prompt::can_prompt(self.args.non_interactive) {
                return Ok(Driven {
                    code: out.code,
                    state,
                });
            }
            next = self.ask(&form)?;
        }
    }

    /// Ask a pending form in the terminal (the run is already stored as waiting).
    fn ask(&self, form: &Value) -> Result<Next, CliError> {
        let term = dialoguer::console::Term::stderr();
        let answers = canvas_ui::prompt::ask_form(form, &term).map_err(|e| {
            CliError::new(
                exit::WAITING,
                format!(
                    "the questions were not answered ({e}); run {} waits",
                    self.run_id
                ),
            )
            .hint(format!("canvas resume {} -i key=value …", self.run_id))
        })?;
        let declared = form["inputs"].as_object().cloned().unwrap_or_default();
        Ok(Next::Turn(TurnRequest::answer(
            super::inputs::from_answers(answers, &declared),
        )))
    }

    /// The engine's configuration for one turn: the request, and the command's settings.
    fn config(&self, request: TurnRequest, stop: &StopSignal) -> RunConfig {
        RunConfig {
            run_id: self.run_id.clone(),
            resume: request.kind == TurnKind::Answer,
            query: request.query,
            inputs: request.inputs,
            user_id: None,
            files: None,
            max_parallel: usize::from(self.args.max_parallel),
            seed: self.args.seed,
            stop: stop.clone(),
            checkpoint_group: canvas_engine::scheduler::CHECKPOINT_GROUP,
            models: self.models.source.clone(),
            date: self.models.date.clone(),
            services: canvas_engine::Services::new().with(self.tools.clone()),
            max_steps: self.args.max_steps,
        }
    }

    /// One turn: run it with the watcher beside it, store how it ended, report.
    fn one_turn(
        &self,
        state: RunState,
        turn_no: u32,
        replay: Option<u32>,
        cfg: &RunConfig,
        presets: &mut Presets,
        writer: &WriterHandle,
    ) -> Result<TurnOutcome, CliError> {
        let output = self.args.output.output();
        let renderer = self.args.output.renderer(
            canvas_ui::prompt::can_prompt(self.args.non_interactive),
            output.writer(),
        );
        let mut checkpoints = self
            .checkpoints
            .try_borrow_mut()
            .map_err(|_| CliError::new(exit::FAILED, "a turn is already under way"))?;
        let mut reporter = Reporter::new(
            &self.run_id,
            turn_no,
            renderer,
            &output,
            writer,
            &mut checkpoints,
        );
        if let Some(t) = replay.filter(|_| self.args.output.format() != RunFormat::Text) {
            // The stdout guarantee (docs/resume.md): each turn appears whole in the
            // output of the process that ends it, so a pipeline can drop a dead
            // process's unfinished turn and lose nothing, see nothing twice.
            let lines = self
                .store
                .events_of_turn(&self.run_id, t)
                .map_err(|e| self.store_error(e))?;
            if let Err(e) = reporter.replay(&lines) {
                return if e.kind() == io::ErrorKind::BrokenPipe {
                    Ok(TurnOutcome {
                        state,
                        code: exit::BROKEN_PIPE,
                        form: None,
                        preset: None,
                    })
                } else {
                    Err(CliError::new(
                        exit::FAILED,
                        format!("run {}: cannot replay turn {t}: {e}", self.run_id),
                    ))
                };
            }
        }
        let Some((state, result)) = self.run_watched(state, cfg, &mut reporter)? else {
            return Err(self.timed_out(&mut reporter));
        };
        let mut ending = match result {
            Err(RunError::Sink(e)) => return self.sink_failed(&mut reporter, state, e),
            other => self.ending(other),
        };
        tracing::info!(run_id = %self.run_id, turn = turn_no, status = %ending.status, "turn ended");
        // A badly typed answer given up front is reported once the run is stored as
        // waiting, so it can be answered again.
        let preset = match &ending.form {
            Some(f) => presets.answers(f, self.args),
            None => Ok(None),
        };
        if matches!(preset, Ok(Some(_))) {
            ending.end = RunEnd::Answered;
        }
        if self.record_end(&mut reporter, &state, &ending)? {
            // Whoever reads stdout is gone: stop quietly (no question, no message), with
            // the shell's code for a broken pipe; the turn is stored as it ended.
            return Ok(TurnOutcome {
                state,
                code: exit::BROKEN_PIPE,
                form: None,
                preset: None,
            });
        }
        if matches!(ending.end, RunEnd::Finished) {
            self.warn_streaming_failures(&state);
        }
        let preset = preset.map_err(|e| {
            e.hint(format!(
                "the run waits at its form: canvas resume {} -i key=value …",
                self.run_id
            ))
        })?;
        if preset.is_none() {
            self.tell_waiting(ending.form.as_ref());
        }
        let code = ending.result?;
        Ok(TurnOutcome {
            state,
            code,
            form: ending.form,
            preset,
        })
    }

    /// Run the turn on a current-thread runtime, with the watcher (cancel requests, lease
    /// renewal) beside it from its first look on. `None` when `--timeout` dropped it.
    fn run_watched(
        &self,
        state: RunState,
        cfg: &RunConfig,
        reporter: &mut Reporter<'_>,
    ) -> Result<Option<Ran>, CliError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                CliError::new(exit::FAILED, format!("cannot start the async runtime: {e}"))
            })?;
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let run_id = &self.run_id;
        Ok(std::thread::scope(|s| {
            let r = rt.block_on(async {
                let turn = run_turn(self.canvas, state, cfg, reporter);
                let fut = async {
                    tokio::pin!(turn);
                    // The watcher's first look comes WATCH_EVERY in: a turn done before
                    // then (most of a short canvas's) needs no thread for it at all.
                    tokio::select! {
                        ran = &mut turn => return ran,
                        () = tokio::time::sleep(WATCH_EVERY) => {}
                    }
                    s.spawn(|| watch(self.store, run_id, &cfg.stop, done_rx));
                    turn.await
                };
                match self.args.timeout {
                    Some(secs) if secs > 0.0 => {
                        tokio::time::timeout(Duration::from_secs_f64(secs), fut)
                            .await
                            .ok()
                    }
                    _ => Some(fut.await),
                }
            });
            drop(done_tx);
            r
        }))
    }

    /// The turn was dropped mid-node by `--timeout`: the last checkpoint stands.
    fn timed_out(&self, reporter: &mut Reporter<'_>) -> CliError {
        let end = TurnEnd {
            status: RunStatus::Interrupted,
            error: Some("timed out".into()),
            waiting: None,
        };
        let _ = reporter.abandon_turn(end);
        let _ = reporter.finish_output(&RunEnd::Interrupted);
        tracing::info!(run_id = %self.run_id, "turn timed out");
        CliError::new(
            exit::FAILED,
            format!(
                "{}: the run timed out after {} s",
                self.label,
                self.args.timeout.unwrap_or(0.0)
            ),
        )
        .hint(format!("canvas resume {} continues it", self.run_id))
    }

    /// Output or store failed mid-turn: keep the turn to be continued.
    fn sink_failed(
        &self,
        reporter: &mut Reporter<'_>,
        state: RunState,
        e: io::Error,
    ) -> Result<TurnOutcome, CliError> {
        let end = TurnEnd {
            status: RunStatus::Interrupted,
            error: Some(e.to_string()),
            waiting: None,
        };
        let _ = reporter.abandon_turn(end);
        tracing::info!(run_id = %self.run_id, error = %e, "output or store failed mid-turn");
        if e.kind() == io::ErrorKind::BrokenPipe {
            return Ok(TurnOutcome {
                state,
                code: exit::BROKEN_PIPE,
                form: None,
                preset: None,
            });
        }
        if let Some(f) = reporter.store_failure() {
            return Err(self.store_refused(&f));
        }
        Err(CliError::new(
            exit::FAILED,
            format!(
                "{}: run {} stopped: cannot write the output: {e}",
                self.label, self.run_id
            ),
        )
        .hint(format!(
            "canvas resume {} continues it from its last checkpoint",
            self.run_id
        )))
    }

    /// The store refused a write of the turn: the run stopped, and keeps what was
    /// committed before (its last checkpoint), from where `resume` continues it.
    fn store_refused(&self, f: &StoreFailure) -> CliError {
        tracing::debug!(run_id = %self.run_id, error = %f.message, "the store refused a write");
        let store = self.args.store.path();
        let resume = format!(
            "`canvas resume {}` continues it from its last checkpoint",
            self.run_id
        );
        let hint = match f.fault {
            Fault::WriteFailed => format!("is the disk full? free some space, then {resume}"),
            Fault::ReadOnly => format!("make the store writable again, then {resume}"),
            _ => resume,
        };
        CliError::new(
            exit::FAILED,
            format!(
                "{}: run {} stopped: cannot write to the run store {} ({})",
                self.label,
                self.run_id,
                store.display(),
                f.reason
            ),
        )
        .hint(hint)
    }

    /// A store operation on the stored run failed: the run is kept as of its last
    /// checkpoint, and `resume` continues it.
    fn store_error(&self, e: StoreError) -> CliError {
        let fault = e.fault();
        if matches!(fault, Fault::WriteFailed | Fault::ReadOnly) {
            return self.store_refused(&StoreFailure {
                fault,
                message: e.to_string(),
                reason: e.reason(),
            });
        }
        let err = CliError::from(e);
        if err.hint.is_some() {
            return err;
        }
        err.hint(format!(
            "canvas resume {} continues it from its last checkpoint",
            self.run_id
        ))
    }

    /// How the engine's result ends the turn (a sink failure is handled before).
    fn ending(&self, result: Result<Outcome, RunError>) -> Ending {
        let run_id = &self.run_id;
        let label = &self.label;
        let stopped = |end, status, error: &str, err: CliError| Ending {
            end,
            status,
            error: Some(error.to_string()),
            form: None,
            result: Err(err.hint(format!("canvas resume {run_id} continues it"))),
        };
        match result {
            Ok(Outcome::Finished { .. }) => Ending {
                end: RunEnd::Finished,
                status: RunStatus::Succeeded,
                error: None,
                form: None,
                result: Ok(exit::OK),
            },
            Ok(Outcome::Waiting { form }) => Ending {
                end: RunEnd::Waiting,
                status: RunStatus::Waiting,
                error: None,
                form: Some(form),
                result: Ok(exit::WAITING),
            },
            Ok(Outcome::Stopped {
                reason: StopReason::Interrupted,
            }) => stopped(
                RunEnd::Interrupted,
                RunStatus::Interrupted,
                "interrupted",
                CliError::new(exit::INTERRUPTED, format!("run {run_id} interrupted")),
            ),
            Ok(Outcome::Stopped {
                reason: StopReason::StepLimit,
            }) => Ending {
                end: RunEnd::Interrupted,
                status: RunStatus::Interrupted,
                error: Some(format!(
                    "stopped after {} components (--max-steps)",
                    self.args.max_steps
                )),
                form: None,
                result: Err(CliError::new(
                    exit::FAILED,
                    format!(
                        "{label}: run {run_id} stopped after {} components (--max-steps): \
                         a cycle or a loop may not end",
                        self.args.max_steps
                    ),
                )
                .hint(format!(
                    "`canvas resume {run_id}` continues it for as many more (`--max-steps N` \
                     sets the budget, 0 removes it); `canvas graph {label}` shows its cycles"
                ))),
            },
            Ok(Outcome::Stopped {
                reason: StopReason::Cancelled,
            }) => stopped(
                RunEnd::Cancelled,
                RunStatus::Cancelled,
                "cancelled",
                CliError::new(exit::FAILED, format!("run {run_id} was cancelled")),
            ),
            Ok(Outcome::Failed {
                component_id,
                error,
            }) => {
                let msg = format!(
                    "{label}: component {component_id:?}{} failed: {}",
                    self.class_of(&component_id),
                    error_line(&error)
                );
                Ending {
                    end: RunEnd::Failed {
                        component_id,
                        error: error.clone(),
                    },
                    status: RunStatus::Failed,
                    error: Some(error),
                    form: None,
                    result: Err(CliError::new(exit::FAILED, msg).hint(format!(
                        "the run is stored: `canvas events {run_id}` shows what led there"
                    ))),
                }
            }
            Err(RunError::Crash {
                component_id,
                message,
            }) => {
                let msg = format!(
                    "{label}: component {component_id:?}{}: {}",
                    self.class_of(&component_id),
                    error_line(&message)
                );
                Ending {
                    end: RunEnd::Crashed,
                    status: RunStatus::Failed,
                    error: Some(message),
                    form: None,
                    result: Err(CliError::new(exit::FAILED, msg).hint(format!(
                        "the run is stored: `canvas events {run_id}` shows what led there; \
                         `canvas validate` checks the canvas"
                    ))),
                }
            }
            Err(RunError::Sink(e)) => Ending {
                // `one_turn` handles it first; kept total rather than panicking.
                end: RunEnd::Interrupted,
                status: RunStatus::Interrupted,
                error: Some(e.to_string()),
                form: None,
                result: Err(CliError::new(exit::FAILED, format!("{label}: {e}"))),
            },
        }
    }

    /// ` (Class)` of a component, for messages.
    fn class_of(&self, id: &str) -> String {
        self.canvas
            .node(id)
            .map(|n| format!(" ({})", n.class))
            .unwrap_or_default()
    }

    /// RAGFlow finishes a run whose streamed answer failed without a handler, and so do
    /// we; a script reading only the exit code would miss it, so say it on stderr.
    fn warn_streaming_failures(&self, state: &RunState) {
        for id in &state.streaming {
            if let Some(e) = state.error_of(id).filter(|e| !e.is_empty()) {
                eprintln!(
                    "warning: {}: component {id:?}{} failed while streaming its answer, \
                     and the run went on without it (as in RAGFlow): {}",
                    self.label,
                    self.class_of(id),
                    error_line(&e)
                );
            }
        }
    }

    /// Store how the turn ended (events, state, status), then finish the output. True
    /// when stdout was closed by its reader (the turn is stored all the same).
    fn record_end(
        &self,
        reporter: &mut Reporter<'_>,
        state: &RunState,
        ending: &Ending,
    ) -> Result<bool, CliError> {
        let end_rec = TurnEnd {
            status: ending.status,
            error: ending.error.clone(),
            waiting: ending.form.clone(),
        };
        let mut closed = false;
        if let Err(e) = reporter.finish_turn(Some(state), end_rec) {
            if e.kind() != io::ErrorKind::BrokenPipe {
                if let Some(f) = reporter.store_failure() {
                    return Err(self.store_refused(&f));
                }
                return Err(CliError::new(exit::FAILED, format!("{}: {e}", self.label)));
            }
            closed = true;
        }
        if let Err(e) = reporter.finish_output(&ending.end) {
            if e.kind() != io::ErrorKind::BrokenPipe {
                return Err(CliError::new(
                    exit::FAILED,
                    format!("cannot write the output: {e}"),
                ));
            }
            closed = true;
        }
        Ok(closed)
    }

    /// A run left waiting with no terminal to ask on: stderr carries the run id and the
    /// fields (the text summary on a terminal already says how to answer).
    fn tell_waiting(&self, form: Option<&Value>) {
        let Some(f) = form else { return };
        if canvas_ui::prompt::can_prompt(self.args.non_interactive)
            || self.args.output.shows_text_on_terminal()
        {
            return;
        }
        let fields: Vec<String> = f["inputs"]
            .as_object()
            .map(|o| o.keys().map(|k| format!("-i {k}=…")).collect())
            .unwrap_or_default();
        eprintln!(
            "waiting for input: canvas resume {} {}",
            self.run_id,
            fields.join(" ")
        );
    }
}

/// Form answers given up front (`-i`, `--inputs`): a form whose required fields they
/// all cover is answered with them, once (the same form asked again, in a Loop, waits).
#[derive(Default)]
struct Presets {
    /// Whether the command's `-i` values may answer forms.
    enabled: bool,
    /// The field sets already answered.
    used: std::collections::HashSet<Vec<String>>,
}

impl Presets {
    fn answers(&mut self, form: &Value, args: &TurnArgs) -> Result<Option<Object>, CliError> {
        if !self.enabled || (args.input.is_empty() && args.inputs.is_none()) {
            return Ok(None);
        }
        let declared = form["inputs"].as_object().cloned().unwrap_or_default();
        let keys: Vec<String> = declared.keys().cloned().collect();
        if keys.is_empty() || self.used.contains(&keys) {
            return Ok(None);
        }
        let given = super::inputs::collect(args.inputs.as_deref(), &args.input, &declared)?;
        let answers: Object = given
            .into_iter()
            .filter(|(k, _)| declared.contains_key(k))
            .collect();
        let covered = declared.iter().all(|(k, def)| {
            answers.contains_key(k) || def.get("optional").and_then(Value::as_bool) == Some(true)
        });
        if answers.is_empty() || !covered {
            return Ok(None);
        }
        self.used.insert(keys);
        Ok(Some(answers))
    }
}

/// Beside a running turn: stop it when a cancel is requested, and renew the lease.
/// Ends when `done` is dropped.
fn watch(store: &dyn Store, run_id: &str, stop: &StopSignal, done: mpsc::Receiver<()>) {
    let holder = lease_holder();
    let mut renewed = Instant::now();
    // Started at its first look: it looks, then every WATCH_EVERY.
    loop {
        if store.cancel_requested(run_id).unwrap_or(false) {
            stop.request(StopReason::Cancelled);
        }
        if renewed.elapsed() >= RENEW_EVERY {
            renewed = Instant::now();
            if store.renew_lease(run_id, &holder, LEASE_TTL).is_err() {
                // Another process took the run over: stop here rather than both run it.
                stop.request(StopReason::Cancelled);
            }
        }
        if !matches!(
            done.recv_timeout(WATCH_EVERY),
            Err(mpsc::RecvTimeoutError::Timeout)
        ) {
            return;
        }
    }
}

/// Ctrl-C and SIGTERM while a run is driven: the first stops the turn at the next node
/// boundary (the engine checks the flag); a second one stops the process at once, exit
/// 130, with the terminal tidied up and one line saying so. Either way the run keeps
/// its last checkpoint, and `resume` continues from there without running a finished
/// node again (a `node_finished` is shown only once it is stored).
struct Signals {
    /// The flag handlers, set in the handler itself (no thread between the signal and
    /// the stop request).
    ids: Vec<signal_hook::SigId>,
    /// Counts the signals, on a thread of its own (where the second one may do what a
    /// signal handler may not: draw, lock, exit).
    handle: Option<signal_hook::iterator::Handle>,
}

impl Signals {
    fn watch(stop: &StopSignal, run_id: &str) -> Signals {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let flag: Arc<AtomicBool> = stop.interrupt_flag();
        let ids = [SIGINT, SIGTERM]
            .into_iter()
            .filter_map(|sig| signal_hook::flag::register(sig, Arc::clone(&flag)).ok())
            .collect();
        canvas_ui::terminal::remember_settings();
        // The thread is not joined: closing the handle ends its loop, and waiting for its
        // teardown would only delay the end of the run.
        let handle = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
            Ok(mut signals) => {
                let handle = signals.handle();
                let run_id = run_id.to_string();
                let counting = std::thread::Builder::new()
                    .name("signals".into())
                    .spawn(move || {
                        for (n, _) in signals.forever().enumerate() {
                            if n == 0 {
                                if io::stderr().is_terminal() {
                                    canvas_ui::terminal::note(
                                        "stopping at the next node boundary \
                                         (Ctrl-C again stops at once)",
                                    );
                                }
                            } else {
                                stop_at_once(&run_id);
                            }
                        }
                    })
                    .is_ok();
                counting.then_some(handle)
            }
            Err(e) => {
                tracing::warn!(error = %e, "a second Ctrl-C will only stop at a node boundary");
                None
            }
        };
        Signals { ids, handle }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
        if let Some(h) = self.handle.take() {
            h.close();
        }
    }
}

/// The second Ctrl-C: exit now, 130. What the store holds stays (its last commit, as
/// after a crash); the output still held back for the store is dropped, not shown.
fn stop_at_once(run_id: &str) {
    fn leave() -> ! {
        std::process::exit(i32::from(exit::INTERRUPTED))
    }
    // The terminal is tidied up on the way out; should that fail or hang (a terminal
    // that takes no output), the process leaves all the same.
    let _ = std::thread::Builder::new().spawn(|| {
        std::thread::sleep(Duration::from_secs(1));
        leave()
    });
    let line = format!(
        "error: interrupted again: stopped at once; run {run_id} keeps its last checkpoint \
         — canvas resume {run_id}"
    );
    let _ = std::panic::catch_unwind(|| canvas_ui::terminal::abandon(&line, leave));
    leave()
}
