//! Where a stored run stands and what continuing it means: a finished run stays as it
//! is, a waiting one waits for answers, and a stopped one (interrupted, cancelled, or
//! left "running" by a process that died) continues its last turn from the last
//! checkpoint, or runs that turn again when it stopped before its first checkpoint.

use canvas_engine::{Event, EventKind, RunState};
use canvas_store::{RunRecord, RunStatus, RunWrite, Store, TurnEnd};
use serde_json::Value;

use super::drive::{DriveError, Ended, Next, TurnRequest};

/// What continuing a stored run means.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Run this turn.
    Run(Next),
    /// Nothing to run: the run stands as this (a waiting run may be answered).
    Ended(Ended),
}

/// What continuing `rec` means, given its last checkpoint's `state`. A run a dead
/// process left "running" after its last turn was stored whole (its end not yet
/// recorded) gets that end recorded here.
pub fn plan(
    store: &dyn Store,
    rec: &RunRecord,
    state: Option<&RunState>,
) -> Result<Plan, DriveError> {
    let as_is = |status| {
        Plan::Ended(Ended {
            status,
            error: rec.error.clone(),
            component: None,
            form: rec.waiting.clone(),
            step_limit: false,
            turn: rec.turns,
        })
    };
    match rec.status {
        RunStatus::Succeeded | RunStatus::Failed | RunStatus::Waiting => {
            return Ok(as_is(rec.status));
        }
        RunStatus::Running | RunStatus::Interrupted | RunStatus::Cancelled => {}
    }
    let Some(last) = store.last_turn(&rec.id)? else {
        return Err(DriveError::NoTurn(rec.id.clone()));
    };
    if let Some(st) = state {
        if st.cursor.is_some() {
            return Ok(Plan::Run(Next::Continue {
                turn: last.turn,
                again: None,
            }));
        }
        if let Some(ended) = record_stored_end(store, &rec.id, last.turn)? {
            return Ok(Plan::Ended(ended));
        }
    }
    Ok(Plan::Run(Next::Continue {
        turn: last.turn,
        again: Some(TurnRequest {
            kind: last.kind,
            query: last.query,
            inputs: last.inputs.as_object().cloned().unwrap_or_default(),
        }),
    }))
}

/// The end of turn `turn` when its stored events are complete (they end with
/// `workflow_finished` or `user_inputs`), recorded as the run's status.
fn record_stored_end(
    store: &dyn Store,
    run_id: &str,
    turn: u32,
) -> Result<Option<Ended>, DriveError> {
    let lines = store.events_of_turn(run_id, turn)?;
    let Some(last) = lines.last() else {
        return Ok(None);
    };
    let Ok(ev) = serde_json::from_str::<Event>(last) else {
        return Ok(None);
    };
    let (status, form) = match ev.kind {
        EventKind::WorkflowFinished(_) => (RunStatus::Succeeded, None),
        EventKind::UserInputs { .. } => {
            let form = serde_json::from_str::<Value>(last)
                .ok()
                .map(|v| v["data"].clone());
            (RunStatus::Waiting, form)
        }
        _ => return Ok(None),
    };
    store.write_one(RunWrite {
        run_id: run_id.to_string(),
        turn,
        events: Vec::new(),
        checkpoint: None,
        end: Some(TurnEnd {
            status,
            error: None,
            waiting: form.clone(),
        }),
        ..RunWrite::default()
    })?;
    tracing::info!(run_id, turn, %status, "an ended turn recorded");
    Ok(Some(Ended {
        status,
        error: None,
        component: None,
        form,
        step_limit: false,
        turn,
    }))
}
