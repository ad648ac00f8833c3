//! Admitting a canvas to `run` or `chat`: read it, check it as `canvas validate` does,
//! compile it, and refuse it before anything is stored when that finds an error that
//! stops a run (exit 2, the first errors as `FILE:LINE:COL: node: message`).
//!
//! The work is done once: the normalized document lint reads is the one compiled, and
//! lint does not build the components (compile builds each one and runs its check). Only
//! a refusal runs the whole validate pipeline again, to say everything that is wrong.

use std::path::Path;

use clap::Args;

use super::CliError;
use super::validate::{format_of, read};
use canvas_components::{Registry, RunCatalog};
use canvas_dsl::check::{self, Located};
use canvas_dsl::{DslError, Finding, Format, Level, load};
use canvas_engine::{Canvas, Checks};

/// How many problems a refused or warned run lists before "and N more".
const SHOWN: usize = 5;

/// Options of the checks a new run starts with.
#[derive(Debug, Clone, Default, Args)]
pub struct AdmitOpts {
    // A component whose parameters the checks refuse then runs until the run reaches
    // it, and fails there; what cannot be loaded or built at all is still refused
    // (docs/validate.md). One line of help: `--help` must fit a screen.
    /// Skip the checks of `canvas validate` (expert use; see docs/validate.md)
    #[arg(long)]
    pub no_validate: bool,
}

/// A canvas a run may start with, and its text as read (stored with the run).
pub struct Admitted {
    /// The compiled canvas.
    pub canvas: Canvas,
    /// The file's text.
    pub text: String,
}

/// Read, check and compile the canvas at `path` (`-`: stdin), named `label` in messages.
/// `quiet` leaves out the warnings about errors the run only meets if it gets there.
pub fn admit(
    path: &Path,
    label: &str,
    opts: &AdmitOpts,
    quiet: bool,
) -> Result<Admitted, CliError> {
    let text = read(path).map_err(|e| super::error::unreadable(label, DslError::Io(e)))?;
    admit_text(text, format_of(path), label, opts, quiet)
}

/// Check and compile a canvas text (of `format`), named `label` in messages.
pub fn admit_text(
    text: String,
    format: Format,
    label: &str,
    opts: &AdmitOpts,
    quiet: bool,
) -> Result<Admitted, CliError> {
    if opts.no_validate {
        let dsl =
            canvas_dsl::parse(&text, format).map_err(|e| super::error::unreadable(label, e))?;
        let canvas = Canvas::compile_with(dsl, &Registry, Checks::Skip)
            .map_err(|e| super::error::uncompilable(label, &e))?;
        return Ok(Admitted { canvas, text });
    }
    let checked =
        check::read(&text, format, &RunCatalog).map_err(|e| super::error::unreadable(label, e))?;
    // Not a canvas at all: the loader says best what it is instead.
    if checked.findings.iter().any(|f| f.code == "C002") {
        if let Err(e) = load::from_value(checked.doc.clone()) {
            return Err(super::error::unreadable(label, e));
        }
    }
    let reached = checked
        .findings
        .iter()
        .any(|f| f.level == Level::Error && !f.stops_run);
    // Placed now: the document goes to the loader next.
    let warnings = if reached && !quiet {
        let only: Vec<Finding> = checked
            .findings
            .iter()
            .filter(|f| f.level == Level::Error && !f.stops_run)
            .cloned()
            .collect();
        check::place(&text, format, &checked, only)
    } else {
        Vec::new()
    };
    if checked.stops_run() {
        return Err(refuse(label, &text, format, None));
    }
    let dsl = load::from_value(checked.doc).map_err(|e| {
        refuse(
            label,
            &text,
            format,
            Some(super::error::unreadable(label, e)),
        )
    })?;
    let canvas = Canvas::compile(dsl, &Registry).map_err(|e| {
        refuse(
            label,
            &text,
            format,
            Some(super::error::uncompilable(label, &e)),
        )
    })?;
    warn(label, &warnings);
    Ok(Admitted { canvas, text })
}

/// The refusal of a canvas: the errors of the whole validate pipeline that stop a run,
/// else (which the pipeline's property tests rule out) `fallback`.
fn refuse(label: &str, text: &str, format: Format, fallback: Option<CliError>) -> CliError {
    let found = canvas_components::validate::check(text, format);
    let stopping: Vec<&Located> = found.iter().filter(|l| l.finding.stops_run).collect();
    let Some(first) = stopping.first() else {
        return fallback.unwrap_or_else(|| {
            CliError::invalid(format!("{label}: the canvas cannot run"))
                .hint(format!("`canvas validate {label}` lists every problem"))
        });
    };
    let mut more: Vec<String> = stopping
        .iter()
        .skip(1)
        .take(SHOWN - 1)
        .map(|l| line(label, l))
        .collect();
    if stopping.len() > SHOWN {
        more.push(format!("… and {} more", stopping.len() - SHOWN));
    }
    let hint = match (&first.finding.hint, stopping.len()) {
        (Some(h), 1) => format!("{h} (`canvas validate {label}` lists every problem)"),
        _ => format!("`canvas validate {label}` lists every problem and how to fix it"),
    };
    CliError::invalid(line(label, first)).more(more).hint(hint)
}

/// Errors the run meets only if it gets there, as RAGFlow does: the run goes on.
fn warn(label: &str, warnings: &[Located]) {
    for l in warnings.iter().take(SHOWN) {
        eprintln!(
            "warning: {} (the run fails if it gets there)",
            line(label, l)
        );
    }
    if warnings.len() > SHOWN {
        eprintln!(
            "warning: … and {} more: `canvas validate {label}` lists them",
            warnings.len() - SHOWN
        );
    }
}

/// `FILE:LINE:COL: node: message`, with what is known of the place.
fn line(label: &str, l: &Located) -> String {
    let at = match (l.line, l.column) {
        (Some(line), Some(col)) => format!("{label}:{line}:{col}"),
        (Some(line), None) => format!("{label}:{line}"),
        _ => label.to_string(),
    };
    match &l.finding.component {
        Some(c) => format!("{at}: {c}: {}", l.finding.message),
        None => format!("{at}: {}", l.finding.message),
    }
}
