//! `canvas run FILE`: load, compile, store a new run, and run its first turn.

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::session::{self, Turn, TurnArgs};
use super::{CliError, inputs};
use crate::components::Registry;
use crate::dsl;
use crate::engine::{Canvas, RunConfig};
use crate::store::{RunRecord, Store};

/// Options of `canvas run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The canvas file (JSON or YAML); `-` reads stdin.
    pub file: PathBuf,
    /// Options shared with `resume`.
    #[command(flatten)]
    pub turn: TurnArgs,
}

/// Run `canvas run`.
pub fn exec(args: RunArgs) -> Result<u8, CliError> {
    let label = args.file.display().to_string();
    let loaded =
        dsl::load_path(&args.file).map_err(|e| CliError::invalid(format!("{label}: {e}")))?;
    let canvas = Canvas::compile(loaded.dsl, &Registry)
        .map_err(|e| CliError::invalid(format!("{label}: {e}")))?;
    let declared = canvas
        .node("begin")
        .and_then(|b| b.params.get("inputs"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let run_inputs = inputs::collect(args.turn.inputs.as_deref(), &args.turn.input, &declared)?;
    let store = args.turn.open_store()?;
    let source = if label == "-" {
        "-".to_string()
    } else {
        std::fs::canonicalize(&args.file)
            .map(|p| p.display().to_string())
            .unwrap_or(label.clone())
    };
    let record = RunRecord::new(source, loaded.text);
    store
        .create_run(&record)
        .map_err(|e| CliError::new(super::exit::FAILED, format!("run store: {e}")))?;
    let cfg = RunConfig {
        run_id: record.id.clone(),
        query: args.turn.query.clone(),
        inputs: run_inputs,
        ..RunConfig::default()
    };
    let turn = Turn {
        label,
        canvas: &canvas,
        state: canvas.fresh_state(),
        cfg,
        store: &store,
    };
    session::execute(turn, &args.turn)
}
