//! `canvas resume RUN_ID`: answer the form a run waits on, continue a turn that was
//! interrupted, cancelled or killed from its last checkpoint, or send the next turn of
//! a finished run (RAGFlow's multi-turn session).

use clap::Args;
use serde_json::Value;

use super::remember::RunOptions;
use super::session::{Next, Session, TurnArgs, TurnRequest};
use super::{CliError, exit, inputs};
use canvas_components::Registry;
use canvas_dsl::{self as dsl, Format};
use canvas_engine::{Canvas, Checks};
use canvas_store::{RunStatus, Store, TurnKind, canvas_hash};

/// Options of `canvas resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run id (a unique prefix, or `latest`).
    pub run_id: String,
    /// Run the stored canvas even if its file changed since the run started.
    #[arg(long = "canvas-changed", value_name = "ok", value_parser = ["ok"], hide_possible_values = true)]
    pub canvas_changed: Option<String>,
    /// Options shared with `run`.
    #[command(flatten)]
    pub turn: TurnArgs,
    /// The ids of the options given explicitly (the rest come from what the run
    /// remembers of its start); filled in from the parsed command line.
    #[arg(skip)]
    pub explicit: std::collections::HashSet<String>,
}

/// Run `canvas resume`.
pub fn exec(mut args: ResumeArgs) -> Result<u8, CliError> {
    let store = args.turn.store.open()?;
    let rec = super::opts::find_in(&*store, &args.run_id)?;
    tracing::info!(run_id = %rec.id, status = %rec.status, source = %rec.source, "run found");
    let label = rec.source.clone();
    // `-q ''` given is a turn with an empty query (RAGFlow keeps the previous one).
    let next_turn_given = !args.turn.query.is_empty()
        || args.explicit.contains("query")
        || !args.turn.input.is_empty()
        || args.turn.inputs.is_some();
    if matches!(rec.status, RunStatus::Succeeded | RunStatus::Failed) && !next_turn_given {
        // A finished run has no turn to continue; running a new one with an empty query
        // is never what "resume to be safe" meant.
        return Err(CliError::invalid(format!(
            "run {} already finished ({}): there is nothing to resume",
            rec.id, rec.status
        ))
        .hint(format!(
            "`canvas resume {} -q TEXT` sends the next turn; `canvas run {}` starts a new run",
            rec.id, rec.source
        )));
    }
    // The run goes on as it was started (its model source above all), unless this
    // command line says otherwise.
    if let Some(kept) = rec.options.as_ref().and_then(RunOptions::from_value) {
        kept.apply(&mut args.turn, &args.explicit);
    }
    if rec.source != "-" && args.canvas_changed.is_none() {
        if let Ok(now) = std::fs::read_to_string(&rec.source) {
            if canvas_hash(&now) != rec.canvas_hash {
                return Err(CliError::invalid(format!(
                    "{label}: the canvas changed since run {} started",
                    rec.id
                ))
                .hint(format!(
                    "canvas resume {} --canvas-changed=ok runs the stored copy anyway",
                    rec.id
                )));
            }
        }
    }
    let dsl = dsl::parse(&rec.canvas, Format::Sniff)
        .map_err(|e| CliError::invalid(format!("{label} (stored copy): {e}")))?;
    // The run was admitted when it started (maybe with `--no-validate`, or by a build
    // that checked less): the parameter checks would only strand it; what they refuse
    // fails when the run reaches it.
    let canvas = Canvas::compile_with(dsl, &Registry, Checks::Skip)
        .map_err(|e| super::error::uncompilable(&format!("{label} (stored copy)"), &e))?;
    let checkpoints = store.load_checkpoint(&rec.id)?;
    let state = checkpoints.state().cloned();
    let models = args.turn.models.setup()?;
    models.check(&canvas, &label)?;
    let session = Session {
        label,
        canvas: &canvas,
        store: &*store,
        run_id: rec.id.clone(),
        args: &args.turn,
        models: &models,
        tools: std::sync::Arc::new(args.turn.tools.env(args.turn.models.llm_config())?),
        checkpoints: std::cell::RefCell::new(checkpoints),
    };
    if let Some(code) = record_unrecorded_end(&*store, &rec, state.as_ref(), &args.turn)? {
        return Ok(code);
    }
    let resume = match rec.status {
        RunStatus::Waiting => true,
        RunStatus::Succeeded | RunStatus::Failed => false,
        RunStatus::Running | RunStatus::Interrupted | RunStatus::Cancelled => {
            if !args.turn.query.is_empty() {
                eprintln!(
                    "note: run {} is {}: resume continues its turn; -q is not used \
                     (-i answers the forms it reaches)",
                    rec.id, rec.status
                );
            }
            let last = store.last_turn(&rec.id)?;
            let next = match (&state, last) {
                (Some(st), Some(t)) if st.cursor.is_some() => Next::Continue {
                    turn: t.turn,
                    again: None,
                    fresh: false,
                },
                // Stopped before its first checkpoint: run that turn again from the
                // state before it.
                (_, Some(t)) => Next::Continue {
                    turn: t.turn,
                    again: Some(TurnRequest {
                        kind: t.kind,
                        query: t.query,
                        inputs: t.inputs.as_object().cloned().unwrap_or_default(),
                    }),
                    fresh: false,
                },
                (_, None) => {
                    return Err(CliError::invalid(format!(
                        "run {} never started a turn: there is nothing to continue",
                        rec.id
                    ))
                    .hint("run the canvas again with canvas run"));
                }
            };
            let state = state.unwrap_or_else(|| canvas.fresh_state());
            return session.drive(state, next).map(|d| d.code);
        }
    };
    // Answers are typed by the waiting form's fields (or Begin's, for a new turn).
    let declared = if resume {
        rec.waiting
            .as_ref()
            .and_then(|w| w.get("inputs"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    } else {
        canvas
            .node("begin")
            .and_then(|b| b.params.get("inputs"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut run_inputs = inputs::collect(args.turn.inputs.as_deref(), &args.turn.input, &declared)?;
    if resume {
        let missing: Vec<&String> = declared
            .iter()
            .filter(|(k, def)| {
                !def.get("optional")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    && !run_inputs.contains_key(*k)
            })
            .map(|(k, _)| k)
            .collect();
        if !missing.is_empty() {
            if !canvas_ui::prompt::can_prompt(args.turn.non_interactive) {
                let list: Vec<String> = missing.iter().map(|k| format!("-i {k}=…")).collect();
                eprintln!(
                    "waiting for input: canvas resume {} {}",
                    rec.id,
                    list.join(" ")
                );
                return Ok(exit::WAITING);
            }
            // Some answers given: the rest are asked here (with none given, the whole
            // form is asked below).
            if !run_inputs.is_empty() {
                let rest: serde_json::Map<String, Value> = missing
                    .iter()
                    .filter_map(|k| declared.get(*k).map(|d| ((*k).clone(), d.clone())))
                    .collect();
                let term = dialoguer::console::Term::stderr();
                let answers = canvas_ui::prompt::ask_fields(&rest, "", &term).map_err(|e| {
                    CliError::new(
                        exit::WAITING,
                        format!(
                            "the questions were not answered ({e}); run {} waits",
                            rec.id
                        ),
                    )
                    .hint(format!("canvas resume {} -i key=value …", rec.id))
                })?;
                run_inputs.extend(inputs::from_answers(answers, &declared));
            }
        }
    }
    let state = state.unwrap_or_else(|| canvas.fresh_state());
    let ask_here = resume && run_inputs.is_empty();
    let next = if !ask_here {
        let kind = if resume {
            TurnKind::Answer
        } else {
            TurnKind::Next
        };
        Next::Turn(args.turn.request(kind, run_inputs))
    } else {
        // Waiting, nothing given, and a terminal: ask the pending form there.
        Next::Ask {
            form: rec.waiting.clone().unwrap_or(Value::Null),
        }
    };
    session.drive(state, next).map(|d| d.code)
}

/// A run left "running" by a process that died after its last turn ended and was
/// stored, but before its status said so (the end of a turn is shown between the two:
/// see `Reporter::finish_turn`). Record that end, show the turn (in JSON lines or SSE:
/// the process that ended it may have died before printing it), and say how the run
/// stands. `None` when the run is not in that case.
fn record_unrecorded_end(
    store: &dyn Store,
    rec: &canvas_store::RunRecord,
    state: Option<&canvas_engine::RunState>,
    turn_args: &TurnArgs,
) -> Result<Option<u8>, CliError> {
    use canvas_engine::{Event, EventKind};
    use canvas_store::{RunWrite, TurnEnd};
    if !matches!(
        rec.status,
        RunStatus::Running | RunStatus::Interrupted | RunStatus::Cancelled
    ) || state.is_none_or(|s| s.cursor.is_some())
    {
        return Ok(None);
    }
    let Some(turn) = store.last_turn(&rec.id)? else {
        return Ok(None);
    };
    let lines = store.events_of_turn(&rec.id, turn.turn)?;
    let Some(last) = lines.last() else {
        return Ok(None);
    };
    let Ok(ev) = serde_json::from_str::<Event>(last) else {
        return Ok(None);
    };
    let (status, waiting, code) = match ev.kind {
        EventKind::WorkflowFinished(_) => (RunStatus::Succeeded, None, exit::OK),
        EventKind::UserInputs { .. } => {
            let form = serde_json::from_str::<Value>(last)
                .ok()
                .map(|v| v["data"].clone());
            (RunStatus::Waiting, form, exit::WAITING)
        }
        _ => return Ok(None),
    };
    store.write_one(RunWrite {
        run_id: rec.id.clone(),
        turn: turn.turn,
        events: Vec::new(),
        checkpoint: None,
        end: Some(TurnEnd {
            status,
            error: None,
            waiting: waiting.clone(),
        }),
        ..RunWrite::default()
    })?;
    tracing::info!(run_id = %rec.id, turn = turn.turn, %status, "an ended turn recorded");
    if turn_args.output.format() != super::opts::RunFormat::Text {
        // The same renderers as a running turn's, so the framing is theirs.
        let output = turn_args.output.output();
        let mut r = turn_args.output.renderer(false, output.writer());
        let end = if status == RunStatus::Waiting {
            canvas_ui::RunEnd::Waiting
        } else {
            canvas_ui::RunEnd::Finished
        };
        let shown = (|| {
            for line in &lines {
                let ev: Event = serde_json::from_str(line).map_err(std::io::Error::other)?;
                r.event_line(&ev, line.as_bytes())?;
            }
            r.finish(&end)?;
            output.drain()
        })();
        super::runs::output_result(shown)?;
    }
    if status == RunStatus::Waiting {
        let fields: Vec<String> = waiting
            .as_ref()
            .and_then(|f| f["inputs"].as_object())
            .map(|o| o.keys().map(|k| format!("-i {k}=…")).collect())
            .unwrap_or_default();
        eprintln!(
            "run {} had reached its form; waiting for input: canvas resume {} {}",
            rec.id,
            rec.id,
            fields.join(" ")
        );
    } else {
        eprintln!("run {} had finished its turn {}", rec.id, turn.turn);
    }
    Ok(Some(code))
}
