//! `canvas graph FILE`: draw a canvas's execution graph as Mermaid or Graphviz DOT.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::CliError;
use super::runs::write_stdout;
use canvas_dsl as dsl;

/// Output formats of `canvas graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// A Mermaid flowchart (plain text, no fences: pipe it into `mmdc` or paste it in a
    /// Markdown mermaid block).
    Mermaid,
    /// A Graphviz digraph (pipe it into `dot -Tsvg`).
    Dot,
}

/// Options of `canvas graph`.
#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The canvas file (JSON or YAML); `-` reads stdin.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid)]
    pub format: GraphFormat,
}

/// Run `canvas graph`.
pub fn exec(args: GraphArgs) -> Result<u8, CliError> {
    let label = args.file.display().to_string();
    let loaded =
        dsl::load_path(&args.file).map_err(|e| CliError::invalid(format!("{label}: {e}")))?;
    let drawing = match args.format {
        GraphFormat::Mermaid => dsl::draw::mermaid(&loaded.dsl),
        GraphFormat::Dot => dsl::draw::dot(&loaded.dsl),
    };
    write_stdout(|out| out.write_all(drawing.as_bytes()))
}
