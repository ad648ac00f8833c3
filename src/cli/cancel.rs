//! `canvas cancel RUN_ID`: ask the process running a run to stop at its next node
//! boundary. The run is stored as cancelled and stays resumable.

use clap::Args;

use super::opts::StoreOpts;
use super::{CliError, exit};
use canvas_store::{RunStatus, TurnEnd};

/// Options of `canvas cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run id (a unique prefix, or `latest`).
    pub run_id: String,
    /// Where runs are stored.
    #[command(flatten)]
    pub store: StoreOpts,
}

/// Run `canvas cancel`.
pub fn exec(args: CancelArgs) -> Result<u8, CliError> {
    let Some(store) = args.store.open_if_exists()? else {
        return Err(CliError::invalid(format!(
            "no run store at {}",
            args.store.location()?
        )));
    };
    let rec = super::opts::find_in(&*store, &args.run_id)?;
    if rec.status != RunStatus::Running {
        return Err(CliError::invalid(format!(
            "run {} is not running (it is {})",
            rec.id, rec.status
        )));
    }
    // Taking the lease succeeds only when no live process holds it.
    if store.acquire_lease(
        &rec.id,
        &canvas_store::lease_holder(),
        std::time::Duration::from_secs(5),
    )? {
        // Nobody runs it any more (the process died): mark it cancelled here.
        let end = TurnEnd {
            status: RunStatus::Cancelled,
            error: Some("cancelled".into()),
            waiting: None,
        };
        let turn = store.last_turn(&rec.id)?.map_or(0, |t| t.turn);
        store.write_one(canvas_store::RunWrite {
            end: Some(end),
            ..canvas_store::RunWrite::new(rec.id.clone(), turn)
        })?;
        let _ = store.release_lease(&rec.id, &canvas_store::lease_holder());
        eprintln!(
            "run {} was not being run; it is now cancelled (canvas resume {} continues it)",
            rec.id, rec.id
        );
        return Ok(exit::OK);
    }
    store.request_cancel(&rec.id)?;
    eprintln!(
        "cancel requested: run {} stops at its next node boundary (canvas resume {} continues it)",
        rec.id, rec.id
    );
    Ok(exit::OK)
}
