//! `canvas run FILE`: load, compile, run one turn, render events.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::Value;

use super::{CliError, exit, inputs};
use crate::components::Registry;
use crate::dsl;
use crate::engine::scheduler::DEFAULT_MAX_PARALLEL;
use crate::engine::{Canvas, Event, EventSink, Outcome, RunConfig, RunError, run_turn};
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

/// Options of `canvas run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The canvas file (JSON or YAML); `-` reads stdin.
    pub file: PathBuf,
    /// `sys.query` for this run.
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
    #[arg(long, value_name = "PATH", env = "CANVAS_STORE")]
    pub store: Option<PathBuf>,
    /// Answer every model call from a scripted file (see docs/mock-llm.md).
    #[arg(long = "mock-llm", value_name = "FILE")]
    pub mock_llm: Option<PathBuf>,
    /// Never prompt (implied when stdin is not a terminal).
    #[arg(long)]
    pub non_interactive: bool,
    /// Upper bound on components running at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PARALLEL as u16, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_parallel: u16,
    /// Wall-clock limit for the whole run, in seconds.
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

/// Feeds each event to the renderer.
struct Reporter {
    renderer: Box<dyn Renderer>,
}

impl EventSink for Reporter {
    fn emit(&mut self, ev: &Event) -> io::Result<()> {
        self.renderer.event(ev)
    }
}

fn renderer(format: RunFormat, args: &RunArgs) -> Box<dyn Renderer> {
    let stdout = io::stdout();
    match format {
        RunFormat::Jsonl => Box::new(JsonlRenderer::new(io::BufWriter::new(stdout))),
        RunFormat::Sse => Box::new(SseRenderer::new(io::BufWriter::new(stdout))),
        RunFormat::Text => {
            let tty = stdout.is_terminal();
            let color = tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let spinner = io::stderr().is_terminal() && !args.quiet;
            Box::new(TextRenderer::new(
                stdout,
                TextOptions {
                    color,
                    spinner,
                    verbose: args.verbose,
                    quiet: args.quiet,
                },
            ))
        }
    }
}

/// Run `canvas run`.
pub fn exec(args: RunArgs) -> Result<u8, CliError> {
    let file = args.file.display().to_string();
    let loaded =
        dsl::load_path(&args.file).map_err(|e| CliError::invalid(format!("{file}: {e}")))?;
    let canvas = Canvas::compile(loaded.dsl, &Registry)
        .map_err(|e| CliError::invalid(format!("{file}: {e}")))?;
    let declared = canvas
        .node("begin")
        .and_then(|b| b.params.get("inputs"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let run_inputs = inputs::collect(args.inputs.as_deref(), &args.input, &declared)?;
    let format = args.format.unwrap_or(if io::stdout().is_terminal() {
        RunFormat::Text
    } else {
        RunFormat::Jsonl
    });
    let cfg = RunConfig {
        run_id: ulid::Ulid::new().to_string(),
        query: args.query.clone(),
        inputs: run_inputs,
        user_id: None,
        max_parallel: usize::from(args.max_parallel),
        seed: args.seed,
    };
    let mut reporter = Reporter {
        renderer: renderer(format, &args),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(exit::FAILED, format!("cannot start the async runtime: {e}")))?;
    let state = canvas.fresh_state();
    let result = rt.block_on(async {
        let turn = run_turn(&canvas, state, &cfg, &mut reporter);
        match args.timeout {
            Some(secs) if secs > 0.0 => {
                tokio::time::timeout(std::time::Duration::from_secs_f64(secs), turn)
                    .await
                    .ok()
            }
            _ => Some(turn.await),
        }
    });
    let Some((_state, result)) = result else {
        let _ = reporter.renderer.finish(&RunEnd::Crashed);
        return Err(CliError::new(
            exit::FAILED,
            format!(
                "{file}: the run timed out after {} s",
                args.timeout.unwrap_or(0.0)
            ),
        ));
    };
    let (end, outcome) = match result {
        Ok(Outcome::Finished { .. }) => (RunEnd::Finished, Ok(exit::OK)),
        Ok(Outcome::Failed {
            component_id,
            error,
        }) => {
            let class = canvas
                .node(&component_id)
                .map(|n| n.class.clone())
                .unwrap_or_default();
            let msg = format!("{file}: component {component_id:?} ({class}) failed: {error}");
            (
                RunEnd::Failed {
                    component_id,
                    error,
                },
                Err(CliError::new(exit::FAILED, msg)),
            )
        }
        Err(RunError::Sink(e)) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(exit::OK),
        Err(RunError::Sink(e)) => {
            return Err(CliError::new(
                exit::FAILED,
                format!("cannot write the output: {e}"),
            ));
        }
        Err(RunError::Crash {
            component_id,
            message,
        }) => {
            let class = canvas
                .node(&component_id)
                .map(|n| n.class.clone())
                .unwrap_or_default();
            let what = if class.is_empty() {
                String::new()
            } else {
                format!(" ({class})")
            };
            let msg = format!("{file}: component {component_id:?}{what}: {message}");
            (RunEnd::Crashed, Err(CliError::new(exit::FAILED, msg)))
        }
    };
    match reporter.renderer.finish(&end) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(exit::OK),
        _ => {}
    }
    let _ = io::stdout().flush();
    outcome
}
