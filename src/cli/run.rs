//! `canvas run FILE`: load, check and compile (`admit`), store a new run, and run its
//! first turn.

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::admit::{AdmitOpts, Admitted, admit};
use super::session::{Session, TurnArgs};
use super::{CliError, inputs};
use canvas_engine::Canvas;
use canvas_store::{RunRecord, TurnKind};

/// Options of `canvas run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The canvas file (JSON or YAML); `-` reads stdin.
    pub file: PathBuf,
    /// The checks the run starts with.
    #[command(flatten)]
    pub admit: AdmitOpts,
    /// Options shared with `resume`.
    #[command(flatten)]
    pub turn: TurnArgs,
}

/// Run `canvas run`.
pub fn exec(args: RunArgs) -> Result<u8, CliError> {
    let label = args.file.display().to_string();
    if label == "-" && (inputs::stdin_taken() || inputs::pairs_read_stdin(&args.turn.input)) {
        return Err(
            CliError::invalid("stdin can carry the canvas (-) or a value (@-), not both")
                .hint("give the canvas as a file, or the value as @FILE"),
        );
    }
    // Refused here, a canvas leaves no run behind.
    let Admitted { canvas, text } = admit(&args.file, &label, &args.admit, args.turn.output.quiet)?;
    let declared = canvas
        .node("begin")
        .and_then(|b| b.params.get("inputs"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // Checked against every field of the canvas, forms' too: a bad answer is refused
    // before anything is stored.
    let fields = inputs::canvas_fields(&canvas);
    let mut run_inputs = inputs::collect(args.turn.inputs.as_deref(), &args.turn.input, &fields)?;
    let unknown = inputs::unknown_keys(&run_inputs, &fields);
    // Answers for the canvas's forms wait for their form (session::Presets); Begin gets
    // the rest, as RAGFlow's API would.
    run_inputs.retain(|k, _| declared.contains_key(k) || !form_field(&canvas, k));
    ask_missing_begin_inputs(&label, &declared, &mut run_inputs, &args.turn, &unknown)?;
    inputs::warn_unknown(&label, &unknown);
    // Setup errors (a missing key, a bad llm.yaml or mock script) come before the run
    // is stored, so they leave no run behind.
    let models = args.turn.models.setup()?;
    models.check(&canvas, &label)?;
    let tools = std::sync::Arc::new(args.turn.tools.env(args.turn.models.llm_config())?);
    let store = args.turn.store.open()?;
    let source = if label == "-" {
        "-".to_string()
    } else {
        std::fs::canonicalize(&args.file)
            .map(|p| p.display().to_string())
            .unwrap_or(label.clone())
    };
    let mut record = RunRecord::new(source, text);
    record.options = Some(super::remember::RunOptions::of(&args.turn).to_value());
    // The turn's request, built once: `-q` and the inputs, typed by Begin's fields.
    let request = args.turn.request(TurnKind::Start, run_inputs);
    let session = Session {
        label,
        canvas: &canvas,
        store: &*store,
        run_id: record.id.clone(),
        args: &args.turn,
        models: &models,
        tools,
        checkpoints: std::cell::RefCell::new(canvas_store::Checkpointer::new()),
    };
    let driven = session.start(&record, request, canvas.fresh_state());
    // The process ends next: freeing a large canvas and its final state piece by piece
    // would only delay the exit (a millisecond or more for a thousand nodes).
    let code = driven.map(|d| {
        let code = d.code;
        std::mem::forget(d.state);
        code
    });
    std::mem::forget(session);
    std::mem::forget(canvas);
    code
}

/// Begin's required inputs come with the run (`-i`, `--inputs`, or the query for a lone
/// field): Begin never pauses for them, and a run without them goes on with empty values
/// until something fails far from the cause. On a terminal the missing ones are asked;
/// without one the run is refused before it is stored, naming them.
fn ask_missing_begin_inputs(
    label: &str,
    declared: &canvas_pyrt::Object,
    run_inputs: &mut canvas_pyrt::Object,
    args: &TurnArgs,
    unknown: &[inputs::Unknown],
) -> Result<(), CliError> {
    let missing = inputs::missing_begin_inputs(declared, run_inputs, &args.query);
    if missing.is_empty() {
        return Ok(());
    }
    if !canvas_ui::prompt::can_prompt(args.non_interactive) {
        return Err(inputs::missing_error(label, &missing, unknown));
    }
    let term = dialoguer::console::Term::stderr();
    let answers = canvas_ui::prompt::ask_fields(&missing, "", &term).map_err(|e| {
        CliError::new(
            super::exit::INTERRUPTED,
            format!("the inputs were not answered ({e})"),
        )
        .hint("give them with -i key=value")
    })?;
    run_inputs.extend(inputs::from_answers(answers, declared));
    Ok(())
}

/// Whether a UserFillUp of the canvas asks for the field `key`.
fn form_field(canvas: &Canvas, key: &str) -> bool {
    canvas.nodes.values().any(|n| {
        n.class.eq_ignore_ascii_case("UserFillUp")
            && n.params
                .get("inputs")
                .and_then(Value::as_object)
                .is_some_and(|i| i.contains_key(key))
    })
}
