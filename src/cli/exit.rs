//! Exit codes, as `spec/cli.md` documents them.

use std::process::ExitCode;

/// Finished (validate: no error-level findings).
pub const OK: u8 = 0;
/// The run failed (an unhandled component error, or a crash RAGFlow would have).
pub const FAILED: u8 = 1;
/// Bad invocation, or an unreadable or invalid canvas file.
pub const INVALID: u8 = 2;
/// The run waits for input it could not ask for.
pub const WAITING: u8 = 3;
/// Interrupted by Ctrl-C.
pub const INTERRUPTED: u8 = 130;
/// Standard output was closed by its reader (`| head`): the shell's code for a process
/// killed by SIGPIPE (128 + 13), as `yes | head` gives. Nothing more is printed; the run
/// is stored and resumable.
pub const BROKEN_PIPE: u8 = 141;

/// An `ExitCode` from one of the constants.
pub fn code(c: u8) -> ExitCode {
    ExitCode::from(c)
}
