//! The one error type the CLI reports: what went wrong, where, a hint, and the exit code.

use std::fmt;

use super::exit;

/// A failure to report on stderr, with its exit code.
#[derive(Debug)]
pub struct CliError {
    /// The one-line message (without the `error: ` prefix).
    pub message: String,
    /// Further errors, one line each (a canvas refused for several problems).
    pub more: Vec<String>,
    /// A follow-up line telling the user what to do.
    pub hint: Option<String>,
    /// The process exit code.
    pub code: u8,
    /// Causes, shown with `-v`.
    pub causes: Vec<String>,
}

impl CliError {
    /// An error with an exit code.
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            more: Vec::new(),
            hint: None,
            code,
            causes: Vec::new(),
        }
    }

    /// Bad invocation or invalid input (exit 2).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(exit::INVALID, message)
    }

    /// Add a hint line.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Add further error lines.
    pub fn more(mut self, lines: Vec<String>) -> Self {
        self.more = lines;
        self
    }

    /// Print to stderr: `error: ...` (a line each), then `hint: ...`, then causes when
    /// verbose. Control characters (a component's error may quote model text) are
    /// shown, not written as they are.
    pub fn report(&self, verbose: bool) {
        use canvas_ui::visible;
        eprintln!("error: {}", visible(&self.message));
        for m in &self.more {
            eprintln!("error: {}", visible(m));
        }
        if let Some(h) = &self.hint {
            eprintln!("hint: {}", visible(h));
        }
        if verbose {
            for c in &self.causes {
                eprintln!("caused by: {}", visible(c));
            }
        }
    }
}

/// A canvas that cannot be loaded (`what` is the loader's message).
pub fn unreadable(label: &str, what: impl fmt::Display) -> CliError {
    CliError::invalid(format!("{label}: {what}"))
        .hint("give a RAGFlow canvas: its JSON export (or YAML), or `-` for stdin")
}

/// A canvas that does not compile; an unknown class suggests the closest known one.
pub fn uncompilable(label: &str, e: &canvas_engine::CompileError) -> CliError {
    let err = CliError::invalid(format!("{label}: {e}"));
    if let canvas_engine::CompileError::UnknownComponent { name, .. } = e {
        let known = canvas_components::SUPPORTED.iter().map(|(n, _)| *n);
        if let Some(near) = canvas_dsl::suggest::closest(name, known) {
            return err.hint(format!("did you mean {near:?}? ({})", e.hint()));
        }
    }
    err.hint(e.hint())
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}
