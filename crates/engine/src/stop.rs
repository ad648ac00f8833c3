//! Stopping a turn at the next node boundary: Ctrl-C (interrupted) or `canvas cancel`
//! (cancelled). The scheduler checks the signal after each node's checkpoint, so a
//! stopped turn continues from that checkpoint on resume.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a turn stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Ctrl-C (SIGINT) or SIGTERM.
    Interrupted,
    /// `canvas cancel` from another process.
    Cancelled,
    /// The turn ran as many components as `RunConfig::max_steps` allows (a runaway
    /// cycle or loop): the scheduler stops itself; it is not a request.
    StepLimit,
}

/// A shared request to stop; cheap to check (two atomic loads).
#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    interrupt: Arc<AtomicBool>,
    cancel: Arc<AtomicBool>,
}

impl StopSignal {
    /// A signal nobody has raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// A signal of its own whose interrupt is `interrupt`, shared with others: one
    /// Ctrl-C stops every run of a process, a cancel only this one.
    pub fn sharing_interrupt(interrupt: Arc<AtomicBool>) -> Self {
        StopSignal {
            interrupt,
            cancel: Arc::default(),
        }
    }

    /// The flag a signal handler sets for an interrupt.
    pub fn interrupt_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.interrupt)
    }

    /// Ask the turn to stop for `reason`.
    pub fn request(&self, reason: StopReason) {
        match reason {
            StopReason::Interrupted => self.interrupt.store(true, Ordering::SeqCst),
            StopReason::Cancelled => self.cancel.store(true, Ordering::SeqCst),
            // The scheduler's own stop; nothing outside it raises one.
            StopReason::StepLimit => {}
        }
    }

    /// The pending request, if any (an interrupt wins over a cancel).
    pub fn requested(&self) -> Option<StopReason> {
        if self.interrupt.load(Ordering::SeqCst) {
            Some(StopReason::Interrupted)
        } else if self.cancel.load(Ordering::SeqCst) {
            Some(StopReason::Cancelled)
        } else {
            None
        }
    }
}
