//! `canvas components`: the component classes this build knows, and whether it runs each.

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::CliError;
use super::runs::write_stdout;
use crate::components::{LEGACY, SUPPORTED, UNSUPPORTED};

/// Output formats of `canvas components`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ComponentsFormat {
    /// A readable list.
    Text,
    /// One JSON array.
    Json,
}

/// Options of `canvas components`.
#[derive(Debug, Args)]
pub struct ComponentsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ComponentsFormat::Text)]
    pub format: ComponentsFormat,
}

/// One component class.
#[derive(Debug, Serialize)]
struct Entry {
    name: &'static str,
    /// `runs`, `not_yet` or `legacy`.
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'static str>,
}

fn entries() -> Vec<Entry> {
    let mut out: Vec<Entry> = SUPPORTED
        .iter()
        .map(|(name, _)| Entry {
            name,
            status: "runs",
            note: (*name == "Fillup").then_some("older name of UserFillUp"),
        })
        .collect();
    out.extend(UNSUPPORTED.iter().map(|(name, _, why)| Entry {
        name,
        status: "not_yet",
        note: Some(why),
    }));
    out.extend(LEGACY.iter().map(|(name, why)| Entry {
        name,
        status: "legacy",
        note: Some(why),
    }));
    out
}

/// Run `canvas components`.
pub fn exec(args: ComponentsArgs) -> Result<u8, CliError> {
    let list = entries();
    match args.format {
        ComponentsFormat::Json => write_stdout(|out| {
            serde_json::to_writer_pretty(&mut *out, &list)?;
            writeln!(out)
        }),
        ComponentsFormat::Text => write_stdout(|out| {
            for (status, title) in [
                ("runs", "Runs in this build:"),
                (
                    "not_yet",
                    "Recognised, not run yet (validate reports them, a run stops there):",
                ),
                ("legacy", "Legacy, no longer run by RAGFlow either:"),
            ] {
                writeln!(out, "{title}")?;
                for e in list.iter().filter(|e| e.status == status) {
                    match e.note.filter(|_| status == "runs") {
                        Some(n) => writeln!(out, "  {:<20} {n}", e.name)?,
                        None => writeln!(out, "  {}", e.name)?,
                    }
                }
            }
            writeln!(
                out,
                "Older names (Generate, Answer, SearchMyDataset, DocsGenerator, Parallel, ...) are rewritten on load; see `canvas migrate`."
            )
        }),
    }
}
