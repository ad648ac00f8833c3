//! `canvas runs`: list the stored runs, newest first (`canvas runs prune` is in
//! `prune.rs`). Also the helpers the read-only commands (`runs`, `show`, `events`)
//! share: local times, sizes, the JSON shape of a run, and writing to stdout.

use std::io::{self, Write};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use serde_json::Value;

use super::opts::StoreOpts;
use super::prune::PruneArgs;
use super::{CliError, exit};
use canvas_store::{RunRecord, RunStatus, Store};

/// Output formats of `canvas runs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunsFormat {
    /// Aligned columns.
    Table,
    /// A JSON array of runs.
    Json,
}

/// Options of `canvas runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// `canvas runs prune`; without it, the list.
    #[command(subcommand)]
    pub command: Option<RunsCommand>,
    /// Only runs with this status.
    #[arg(long, value_name = "S", ignore_case = true, value_parser = status_parser())]
    pub status: Option<RunStatus>,
    /// At most N runs (0 = all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunsFormat::Table)]
    pub format: RunsFormat,
    /// Where runs are stored.
    #[command(flatten)]
    pub store: StoreOpts,
}

/// A run status flag's value: one of the statuses, any case.
pub(super) fn status_parser() -> impl TypedValueParser<Value = RunStatus> {
    PossibleValuesParser::new(RunStatus::ALL.map(RunStatus::as_str))
        .try_map(|s| s.parse::<RunStatus>())
}

/// What `canvas runs` does besides listing.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Delete old runs and give their space back (a dry run without --yes).
    #[command(after_help = "Examples:\n  \
        canvas runs prune --older-than 30d                  # what would go; deletes nothing\n  \
        canvas runs prune --older-than 30d --yes\n  \
        canvas runs prune --status failed,cancelled --keep 100 --yes\n  \
        canvas runs prune --keep 50 --format json           # for scripts\n\n\
        A run that a live process is running is never deleted. Without --yes, a terminal\n\
        is asked to confirm; anywhere else nothing is deleted.")]
    Prune(PruneArgs),
}

/// Run `canvas runs`.
pub fn exec(args: RunsArgs) -> Result<u8, CliError> {
    if let Some(RunsCommand::Prune(prune)) = args.command {
        return super::prune::exec(prune);
    }
    let store = args.store.open_existing()?;
    let limit = args.limit;
    let runs = match &store {
        Some(store) => store.list_runs(args.status, limit)?,
        None => Vec::new(),
    };
    // A full page may hide older runs: say how many, and how to see them.
    let hidden = match &store {
        Some(store) if limit > 0 && runs.len() == limit => store
            .count_runs(args.status)?
            .saturating_sub(runs.len() as u64),
        _ => 0,
    };
    // A table is followed by the store's size, on stderr so that stdout stays the table
    // alone; the JSON array is unchanged.
    let footer = match (&store, args.format) {
        (Some(store), RunsFormat::Table) => Some(store_line(&**store, &args.store)?),
        _ => None,
    };
    let code = match args.format {
        RunsFormat::Json => {
            let rows: Vec<RunJson<'_>> = runs.iter().map(RunJson::from).collect();
            write_stdout(|out| {
                serde_json::to_writer_pretty(&mut *out, &rows)?;
                writeln!(out)
            })?
        }
        RunsFormat::Table if runs.is_empty() => {
            let which = args.status.map(|s| format!("{s} ")).unwrap_or_default();
            eprintln!("no {which}runs in {}", args.store.location()?);
            exit::OK
        }
        RunsFormat::Table => {
            // A canvas path may hold any character but a slash and NUL.
            let text = table(&runs);
            write_stdout(|out| out.write_all(canvas_ui::visible(&text).as_bytes()))?
        }
    };
    if hidden > 0 {
        let which = args.status.map(|s| format!("{s} ")).unwrap_or_default();
        let noun = if hidden == 1 { "run" } else { "runs" };
        eprintln!(
            "{hidden} older {which}{noun} not shown: --limit 0 lists every one, --limit N the N newest"
        );
    }
    if let Some(line) = footer {
        eprintln!("{line}");
    }
    Ok(code)
}

/// `store: PATH, 12.3 MB, 42 runs` (a URL without its password for PostgreSQL).
fn store_line(store: &dyn Store, opts: &StoreOpts) -> Result<String, CliError> {
    let size = store.size()?;
    let runs = runs_word(size.runs);
    Ok(format!(
        "store: {}, {}, {runs}",
        opts.location()?,
        human_bytes(size.bytes)
    ))
}

/// `1 run`, `5 runs`.
pub(super) fn runs_word(n: impl Into<u64>) -> String {
    match n.into() {
        1 => "1 run".into(),
        n => format!("{n} runs"),
    }
}

/// Bytes for people: `512 B`, `4.1 kB`, `12.3 MB`, `1.2 GB` (powers of 1000).
pub(super) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1000.0;
    let mut unit = UNITS[0];
    for next in &UNITS[1..] {
        if v < 999.95 {
            break;
        }
        v /= 1000.0;
        unit = next;
    }
    format!("{v:.1} {unit}")
}

/// The runs as aligned columns `ID  STATUS  TURNS  UPDATED  CANVAS`, one line each.
pub(super) fn table(runs: &[RunRecord]) -> String {
    let header = ["ID", "STATUS", "TURNS", "UPDATED", "CANVAS"];
    let rows: Vec<[String; 5]> = runs
        .iter()
        .map(|r| {
            [
                r.id.clone(),
                r.status.to_string(),
                r.turns.to_string(),
                local_time(r.updated_at),
                r.source.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut s = String::new();
    let mut push = |cells: [&str; 5]| {
        let [id, status, turns, updated, source] = cells;
        // The last column is not padded: no trailing spaces. Counts align right.
        s.push_str(&format!(
            "{id:<w0$}  {status:<w1$}  {turns:>w2$}  {updated:<w3$}  {source}\n",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
        ));
    };
    push(header);
    for row in &rows {
        push([&row[0], &row[1], &row[2], &row[3], &row[4]]);
    }
    s
}

/// A run as the read-only commands print it in JSON: the record without the canvas text.
#[derive(Debug, Serialize)]
pub(super) struct RunJson<'a> {
    id: &'a str,
    source: &'a str,
    canvas_hash: &'a str,
    status: RunStatus,
    parent: Option<&'a str>,
    created_at: f64,
    updated_at: f64,
    turns: u32,
    error: Option<&'a str>,
    waiting: Option<&'a Value>,
}

impl<'a> From<&'a RunRecord> for RunJson<'a> {
    fn from(r: &'a RunRecord) -> Self {
        RunJson {
            id: &r.id,
            source: &r.source,
            canvas_hash: &r.canvas_hash,
            status: r.status,
            parent: r.parent.as_deref(),
            created_at: r.created_at,
            updated_at: r.updated_at,
            turns: r.turns,
            error: r.error.as_deref(),
            waiting: r.waiting.as_ref(),
        }
    }
}

/// Unix seconds as local `YYYY-MM-DD HH:MM:SS` (`-` when out of range).
pub(super) fn local_time(secs: f64) -> String {
    let whole = secs.floor();
    // The float-to-int cast saturates; from_timestamp rejects what is out of range.
    let nanos = ((secs - whole) * 1e9) as u32;
    chrono::DateTime::from_timestamp(whole as i64, nanos.min(999_999_999))
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|| "-".to_string())
}

/// Write to stdout (buffered) and flush; a closed stdout (`| head`) is a quiet success.
pub(super) fn write_stdout(
    f: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<u8, CliError> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    output_result(f(&mut out).and_then(|()| out.flush()))
}

/// The exit code for the outcome of writing the output.
pub(super) fn output_result(res: io::Result<()>) -> Result<u8, CliError> {
    match res {
        Ok(()) => Ok(exit::OK),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(exit::OK),
        Err(e) => Err(CliError::new(
            exit::FAILED,
            format!("cannot write the output: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, source: &str, turns: u32) -> RunRecord {
        RunRecord {
            id: id.into(),
            turns,
            ..RunRecord::new(source, "{}")
        }
    }

    #[test]
    fn table_aligns_columns_without_trailing_spaces() {
        let t = table(&[rec("01AAA", "/x/flow.json", 12), rec("01B", "-", 3)]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0].starts_with("ID     STATUS   TURNS  UPDATED"),
            "{t}"
        );
        assert!(lines[1].starts_with("01AAA  running     12  "), "{t}");
        assert!(lines[2].starts_with("01B    running      3  "), "{t}");
        assert!(lines[1].ends_with("  /x/flow.json"), "{t}");
        assert!(lines[2].ends_with("  -"), "{t}");
        let col = lines[0].find("CANVAS").unwrap();
        assert_eq!(lines[1].find("/x/flow.json"), Some(col));
    }

    #[test]
    fn human_bytes_in_powers_of_a_thousand() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1000), "1.0 kB");
        assert_eq!(human_bytes(4_096), "4.1 kB");
        assert_eq!(human_bytes(999_949), "999.9 kB");
        assert_eq!(human_bytes(999_999), "1.0 MB");
        assert_eq!(human_bytes(12_345_678), "12.3 MB");
        assert_eq!(human_bytes(1_200_000_000), "1.2 GB");
    }

    #[test]
    fn local_time_shape_and_out_of_range() {
        let s = local_time(1_700_000_000.5);
        assert_eq!(s.len(), 19, "{s}");
        assert_eq!(&s[4..5], "-");
        assert_eq!(&s[13..14], ":");
        assert_eq!(local_time(f64::INFINITY), "-");
    }

    #[test]
    fn json_leaves_the_canvas_text_out() {
        let r = rec("01A", "-", 1);
        let v = serde_json::to_value(RunJson::from(&r)).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "id",
                "source",
                "canvas_hash",
                "status",
                "parent",
                "created_at",
                "updated_at",
                "turns",
                "error",
                "waiting"
            ]
        );
        assert_eq!(v["status"], "running");
    }
}
