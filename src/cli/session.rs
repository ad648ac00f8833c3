//! One turn of a stored run, shared by `run` and `resume`: the reporter that commits
//! events and checkpoints to the store before showing a `node_finished`, the run's
//! lease, and the final status.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{CliError, exit};
use crate::engine::scheduler::DEFAULT_MAX_PARALLEL;
use crate::engine::{
    Canvas, Event, EventKind, EventSink, Outcome, RunConfig, RunError, RunState, run_turn,
};
use crate::store::{RunStatus, SqliteStore, Store};
use crate::ui::{JsonlRenderer, Renderer, RunEnd, SseRenderer, TextOptions, TextRenderer};

/// Output formats of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunFormat {
    /// Readable text (default on a terminal).
    Text,
    /// One JSON event per line (default otherwise).
    Jsonl,
    /// RAGFlow's SSE framing: `data:{json}` frames, then `data:[DONE]`.
    Sse,
}

/// Options shared by `run` and `resume`.
#[derive(Debug, Args)]
pub struct TurnArgs {
    /// `sys.query` for this turn.
    #[arg(short = 'q', long = "query", value_name = "TEXT", default_value = "")]
    pub query: String,
    /// A Begin input or form field, as KEY=VALUE (repeatable).
    #[arg(short = 'i', long = "input", value_name = "KEY=VALUE")]
    pub input: Vec<String>,
    /// A JSON or YAML file mapping field keys to values.
    #[arg(long = "inputs", value_name = "FILE")]
    pub inputs: Option<PathBuf>,
    /// Output format [default: text on a terminal, jsonl otherwise].
    #[arg(long, value_enum)]
    pub format: Option<RunFormat>,
    /// SQLite run store [default: $CANVAS_STORE, else ~/.local/share/canvas/canvas.db].
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Answer every model call from a scripted file (models are not supported yet).
    #[arg(long = "mock-llm", value_name = "FILE")]
    pub mock_llm: Option<PathBuf>,
    /// Never prompt (implied when stdin is not a terminal).
    #[arg(long)]
    pub non_interactive: bool,
    /// Upper bound on components running at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PARALLEL as u16, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_parallel: u16,
    /// Wall-clock limit for the whole turn, in seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Seed for random choices (Message alternatives), for reproducible runs.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// More output (node starts; error causes).
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Less output: only message text.
    #[arg(long, conflicts_with = "verbose")]
    pub quiet: bool,
}

impl TurnArgs {
    /// Open the store these options name.
    pub fn open_store(&self) -> Result<SqliteStore, CliError> {
        let path = self
            .store
            .clone()
            .unwrap_or_else(crate::store::default_path);
        SqliteStore::open(&path).map_err(|e| {
            CliError::invalid(format!(
                "{}: cannot open the run store: {e}",
                path.display()
            ))
        })
    }

    fn renderer(&self) -> Box<dyn Renderer> {
        let stdout = io::stdout();
        let format = self.format.unwrap_or(if stdout.is_terminal() {
            RunFormat::Text
        } else {
            RunFormat::Jsonl
        });
        match format {
            RunFormat::Jsonl => Box::new(JsonlRenderer::new(io::BufWriter::new(stdout))),
            RunFormat::Sse => Box::new(SseRenderer::new(io::BufWriter::new(stdout))),
            RunFormat::Text => {
                let tty = stdout.is_terminal();
                let color = tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
                let spinner = io::stderr().is_terminal() && !self.quiet;
                Box::new(TextRenderer::new(
                    stdout,
                    TextOptions {
                        color,
                        spinner,
                        verbose: self.verbose,
                        quiet: self.quiet,
                    },
                ))
            }
        }
    }
}

/// Commits events with checkpoints, then renders them: a `node_finished` (and what
/// follows it) is shown only once it is in the store.
struct Reporter<'s> {
    store: &'s dyn Store,
    run_id: String,
    turn: u32,
    renderer: Box<dyn Renderer>,
    uncommitted: Vec<String>,
    held: Vec<Event>,
}

impl Reporter<'_> {
    fn flush(&mut self, state: Option<&RunState>) -> io::Result<()> {
        if !self.uncommitted.is_empty() || state.is_some() {
            self.store
                .commit(&self.run_id, self.turn, &self.uncommitted, state)
                .map_err(|e| io::Error::other(format!("cannot write to the run store: {e}")))?;
            self.uncommitted.clear();
        }
        for ev in std::mem::take(&mut self.held) {
            self.renderer.event(&ev)?;
        }
        Ok(())
    }
}

impl EventSink for Reporter<'_> {
    fn emit(&mut self, ev: &Event) -> io::Result<()> {
        self.uncommitted
            .push(serde_json::to_string(ev).map_err(io::Error::other)?);
        if !self.held.is_empty() || matches!(ev.kind, EventKind::NodeFinished(_)) {
            self.held.push(ev.clone());
            Ok(())
        } else {
            self.renderer.event(ev)
        }
    }

    fn checkpoint(&mut self, state: &RunState) -> io::Result<()> {
        self.flush(Some(state))
    }
}

/// Everything one turn needs.
pub struct Turn<'a> {
    /// How the file is named in messages.
    pub label: String,
    /// The compiled canvas.
    pub canvas: &'a Canvas,
    /// The state to continue from.
    pub state: RunState,
    /// The turn's configuration (run id, query, inputs, resume).
    pub cfg: RunConfig,
    /// The store holding the run.
    pub store: &'a dyn Store,
}

/// Run one turn of a stored run and record its outcome; returns the exit code.
pub fn execute(turn: Turn<'_>, args: &TurnArgs) -> Result<u8, CliError> {
    let Turn {
        label,
        canvas,
        state,
        mut cfg,
        store,
    } = turn;
    cfg.max_parallel = usize::from(args.max_parallel);
    cfg.seed = args.seed;
    let run_id = cfg.run_id.clone();
    let owner = format!("pid {}", std::process::id());
    let store_err =
        |e: crate::store::StoreError| CliError::new(exit::FAILED, format!("run store: {e}"));
    if !store
        .acquire_lease(&run_id, &owner, Duration::from_secs(300))
        .map_err(store_err)?
    {
        return Err(
            CliError::invalid(format!("run {run_id} is being run by another process"))
                .hint(format!("wait for it, or `canvas cancel {run_id}`")),
        );
    }
    let turn_no = store.begin_turn(&run_id).map_err(store_err)?;
    store
        .set_status(&run_id, RunStatus::Running, None, None)
        .map_err(store_err)?;
    let mut reporter = Reporter {
        store,
        run_id: run_id.clone(),
        turn: turn_no,
        renderer: args.renderer(),
        uncommitted: Vec::new(),
        held: Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(exit::FAILED, format!("cannot start the async runtime: {e}")))?;
    let result = rt.block_on(async {
        let fut = run_turn(canvas, state, &cfg, &mut reporter);
        match args.timeout {
            Some(secs) if secs > 0.0 => tokio::time::timeout(Duration::from_secs_f64(secs), fut)
                .await
                .ok(),
            _ => Some(fut.await),
        }
    });
    let finish = |reporter: &mut Reporter<'_>, state: Option<&RunState>| reporter.flush(state);
    let outcome = match result {
        None => {
            let _ = finish(&mut reporter, None);
            let _ = reporter.renderer.finish(&RunEnd::Crashed);
            let _ = store.set_status(&run_id, RunStatus::Interrupted, Some("timed out"), None);
            let _ = store.release_lease(&run_id, &owner);
            return Err(CliError::new(
                exit::FAILED,
                format!(
                    "{label}: the run timed out after {} s",
                    args.timeout.unwrap_or(0.0)
                ),
            )
            .hint(format!("canvas resume {run_id}")));
        }
        Some((state, result)) => {
            let flushed = finish(&mut reporter, Some(&state));
            match (result, flushed) {
                (Err(RunError::Sink(e)), _) | (Ok(_), Err(e)) => Err(RunError::Sink(e)),
                (r, _) => r,
            }
        }
    };
    let class = |id: &str| {
        canvas
            .node(id)
            .map(|n| format!(" ({})", n.class))
            .unwrap_or_default()
    };
    let (end, status, error, waiting, res) = match outcome {
        Ok(Outcome::Finished { .. }) => (
            RunEnd::Finished,
            RunStatus::Succeeded,
            None,
            None,
            Ok(exit::OK),
        ),
        Ok(Outcome::Waiting { form }) => {
            let fields: Vec<String> = form["inputs"]
                .as_object()
                .map(|o| o.keys().map(|k| format!("-i {k}=…")).collect())
                .unwrap_or_default();
            eprintln!(
                "waiting for input: canvas resume {run_id} {}",
                fields.join(" ")
            );
            (
                RunEnd::Waiting,
                RunStatus::Waiting,
                None,
                Some(form),
                Ok(exit::WAITING),
            )
        }
        Ok(Outcome::Failed {
            component_id,
            error,
        }) => {
            let msg = format!(
                "{label}: component {component_id:?}{} failed: {error}",
                class(&component_id)
            );
            (
                RunEnd::Failed {
                    component_id,
                    error: error.clone(),
                },
                RunStatus::Failed,
                Some(error),
                None,
                Err(CliError::new(exit::FAILED, msg)),
            )
        }
        Err(RunError::Crash {
            component_id,
            message,
        }) => {
            let msg = format!(
                "{label}: component {component_id:?}{}: {message}",
                class(&component_id)
            );
            (
                RunEnd::Crashed,
                RunStatus::Failed,
                Some(message),
                None,
                Err(CliError::new(exit::FAILED, msg)),
            )
        }
        Err(RunError::Sink(e)) => {
            let _ = store.set_status(&run_id, RunStatus::Interrupted, Some(&e.to_string()), None);
            let _ = store.release_lease(&run_id, &owner);
            if e.kind() == io::ErrorKind::BrokenPipe {
                return Ok(exit::OK);
            }
            return Err(CliError::new(exit::FAILED, format!("{label}: {e}")));
        }
    };
    store
        .set_status(&run_id, status, error.as_deref(), waiting.as_ref())
        .map_err(store_err)?;
    let _ = store.release_lease(&run_id, &owner);
    if let Err(e) = reporter.renderer.finish(&end) {
        if e.kind() != io::ErrorKind::BrokenPipe {
            return Err(CliError::new(
                exit::FAILED,
                format!("cannot write the output: {e}"),
            ));
        }
    }
    let _ = io::stdout().flush();
    res
}
