//! The terminal when a run must stop at once (a second Ctrl-C): what the text output
//! drew is tidied up before the process exits, so the shell gets a clean screen back
//! (no frozen spinners, the cursor shown, the settings a prompt changed put back) and
//! one line saying what happened.
//!
//! The renderer tells this module what is on the screen (its spinners, a line of
//! streamed text not ended yet); [`abandon`] uses it from whichever thread notices the
//! second signal.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use indicatif::MultiProgress;

/// The spinners on the screen, if any.
static SPINNERS: Mutex<Option<MultiProgress>> = Mutex::new(None);
/// Streamed text was written without its line's end.
static MID_LINE: AtomicBool = AtomicBool::new(false);
/// The terminal's settings when the run began (stdin's, when it is a terminal).
#[cfg(unix)]
static SETTINGS: Mutex<Option<libc::termios>> = Mutex::new(None);

/// Spinners are drawn by `m` (`None`: none any more).
pub(crate) fn spinners_shown(m: Option<&MultiProgress>) {
    *SPINNERS.lock().unwrap_or_else(PoisonError::into_inner) = m.cloned();
}

/// Text was written that does (`false`) or does not (`true`) end its line.
pub(crate) fn mid_line(open: bool) {
    MID_LINE.store(open, Ordering::Relaxed);
}

/// Remember the terminal's settings, to put them back if the process must stop while a
/// prompt has changed them (a menu reads keys one at a time).
pub fn remember_settings() {
    #[cfg(unix)]
    if io::stdin().is_terminal() {
        // SAFETY: `termios` is plain data; tcgetattr fills it or fails (then unused).
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: fd 0 is open (it is a terminal), `t` is a valid termios to write.
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut t) } == 0 {
            *SETTINGS.lock().unwrap_or_else(PoisonError::into_inner) = Some(t);
        }
    }
}

/// A line on stderr while a run goes on (above the spinners, after any streamed text).
pub fn note(line: &str) {
    let spinners = SPINNERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let say = || {
        let mut err = io::stderr().lock();
        if MID_LINE.swap(false, Ordering::Relaxed) {
            let _ = err.write_all(b"\n");
        }
        let _ = writeln!(err, "{line}");
        let _ = err.flush();
    };
    match spinners {
        Some(m) => m.suspend(say),
        None => say(),
    }
}

/// Tidy the terminal up, write `line` on stderr, and call `exit`. The spinners are
/// erased and kept from drawing again (their lock is held until `exit` ends the
/// process), a line of streamed text is ended, the cursor is shown, and the terminal's
/// remembered settings are put back.
pub fn abandon(line: &str, exit: fn() -> !) -> ! {
    let spinners = SPINNERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    if let Some(m) = spinners {
        m.suspend(|| {
            leave(line);
            exit();
        });
    }
    leave(line);
    exit()
}

/// The terminal put back as it was, and `line` after whatever was on it.
fn leave(line: &str) {
    #[cfg(unix)]
    if let Some(t) = *SETTINGS.lock().unwrap_or_else(PoisonError::into_inner) {
        // SAFETY: `t` came from tcgetattr on the same descriptor.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t) };
    }
    let mut err = io::stderr().lock();
    if MID_LINE.swap(false, Ordering::Relaxed) {
        let _ = err.write_all(b"\n");
    }
    if io::stderr().is_terminal() {
        // A menu hides the cursor while it is shown.
        let _ = err.write_all(b"\x1b[?25h");
    }
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}
