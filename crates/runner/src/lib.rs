//! Driving stored runs without a terminal, many at once in one process: the turns of a
//! run ([`Drive`]), what continuing a stored run means ([`plan()`]), and the sink that
//! stores a turn's events and checkpoints through the store's writer ([`StoreSink`]).
//!
//! The store is blocking; calls to it from a run's task go through
//! [`canvas_store::call`]: a local file's are made in place, a networked store's hand the
//! thread's other runs over first, so they never stall.

pub mod drive;
pub mod plan;
pub mod sink;

pub use drive::{
    Drive, DriveError, Ended, Forms, GivenAnswers, HeldRuns, Lease, Next, NoAnswers, TurnRequest,
};
pub use plan::{Plan, plan};
pub use sink::{Observer, StoreSink};

/// A component's error on one line, for the `error:` line (the whole text stays in the
/// stored events): a Python traceback's last line says what went wrong, any other text's
/// first line does.
pub fn error_line(error: &str) -> String {
    let mut lines = error.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.clone().next().unwrap_or_default();
    let pick = if error.contains("Traceback (most recent call last)") {
        lines.next_back().unwrap_or(first)
    } else {
        first
    };
    if error.trim().lines().count() > 1 {
        format!("{pick} (…)")
    } else {
        pick.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::error_line;

    #[test]
    fn component_errors_fit_one_line() {
        assert_eq!(error_line("boom"), "boom");
        assert_eq!(error_line("first\nsecond"), "first (…)");
        let tb = "pip says no\nTraceback (most recent call last):\n  File \"main.py\", line 2\n\
                  ModuleNotFoundError: No module named 'ezdxf'\n";
        assert_eq!(
            error_line(tb),
            "ModuleNotFoundError: No module named 'ezdxf' (…)"
        );
        assert_eq!(error_line(""), "");
    }
}
