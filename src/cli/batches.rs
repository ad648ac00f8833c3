//! `canvas batches`: the stored batches, newest first, with how many rows stand where;
//! and one batch's summary, which `canvas show BATCH_ID` prints.

use std::fmt::Write as _;

use clap::{Args, ValueEnum};
use serde_json::json;

use super::CliError;
use super::opts::StoreOpts;
use super::runs::{local_time, output_result, write_stdout};
use canvas_batch::SummaryBuilder;
use canvas_store::{BatchRecord, RowCounts, Store};

/// Output formats of `canvas batches`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BatchesFormat {
    /// Aligned columns.
    Table,
    /// A JSON array of batches.
    Json,
}

/// Options of `canvas batches`.
#[derive(Debug, Args)]
pub struct BatchesArgs {
    /// At most N batches (0 = all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = BatchesFormat::Table)]
    pub format: BatchesFormat,
    /// Where runs are stored.
    #[command(flatten)]
    pub store: StoreOpts,
}

/// Run `canvas batches`.
pub fn exec(args: BatchesArgs) -> Result<u8, CliError> {
    let batches = match args.store.open_existing()? {
        Some(store) => store.list_batches(args.limit)?,
        None => Vec::new(),
    };
    match args.format {
        BatchesFormat::Json => {
            let doc: Vec<serde_json::Value> = batches
                .iter()
                .map(|(b, n)| {
                    json!({
                        "id": b.id,
                        "canvas": b.source,
                        "dataset": b.dataset,
                        "created_at": b.created_at,
                        "rows": b.rows,
                        "counts": n,
                    })
                })
                .collect();
            write_stdout(|out| {
                serde_json::to_writer_pretty(&mut *out, &doc)?;
                writeln!(out)
            })
        }
        BatchesFormat::Table => {
            if batches.is_empty() {
                eprintln!("no batches in {}", args.store.location()?);
                return Ok(super::exit::OK);
            }
            let text = canvas_ui::visible(&table(&batches)).into_owned();
            write_stdout(|out| out.write_all(text.as_bytes()))
        }
    }
}

fn table(batches: &[(BatchRecord, RowCounts)]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<26}  {:<16}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>6}  CANVAS",
        "ID", "CREATED", "ROWS", "DONE", "FAILED", "WAITING", "PENDING", "CHECKS"
    );
    for (b, n) in batches {
        let name = std::path::Path::new(&b.source)
            .file_name()
            .map_or_else(|| b.source.clone(), |f| f.to_string_lossy().into_owned());
        let _ = writeln!(
            s,
            "{:<26}  {:<16}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>6}  {name}",
            b.id,
            local_time(b.created_at),
            b.rows,
            n.succeeded,
            n.failed,
            n.waiting,
            n.pending + n.running,
            n.checks_failed,
        );
    }
    s
}

/// `canvas show` of a batch: its summary, failures and checks failed.
pub fn show(store: &dyn Store, batch: &BatchRecord, json_out: bool) -> Result<u8, CliError> {
    let mut b = SummaryBuilder::default();
    store.each_batch_row(&batch.id, &mut |row| {
        b.add(&row, canvas_batch::results::result_of(&row).as_ref());
        Ok(())
    })?;
    let s = b.finish();
    if json_out {
        let doc = json!({
            "batch": batch.id,
            "canvas": batch.source,
            "dataset": batch.dataset,
            "created_at": batch.created_at,
            "summary": s,
            "passed": s.passed(),
        });
        return write_stdout(|out| {
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            writeln!(out)
        });
    }
    let c = &s.counts;
    let mut t = format!("batch {}\n", batch.id);
    let mut field = |name: &str, value: String| {
        let _ = writeln!(t, "  {:<9}{value}", format!("{name}:"));
    };
    field("canvas", batch.source.clone());
    field("dataset", batch.dataset.clone());
    field("created", local_time(batch.created_at));
    field(
        "rows",
        format!(
            "{} · {} succeeded · {} failed · {} waiting · {} not done · {} checks failed",
            s.rows,
            c.succeeded,
            c.failed,
            c.waiting,
            c.pending + c.running,
            c.checks_failed
        ),
    );
    field("tokens", s.usage.total_tokens.to_string());
    if let (Some(p50), Some(p95)) = (s.p50_seconds, s.p95_seconds) {
        field("seconds", format!("p50 {p50:.3} · p95 {p95:.3}"));
    }
    for (error, ids) in &s.failures {
        let _ = writeln!(
            t,
            "  failed:  {}× {error} (rows {})",
            ids.len(),
            ids.join(", ")
        );
    }
    for (id, checks) in &s.checks_failed {
        let _ = writeln!(t, "  checks:  row {id}: {}", checks.join("; "));
    }
    let next = if c.pending + c.running > 0 {
        format!("canvas batch --resume {}", batch.id)
    } else {
        format!(
            "canvas events RUN_ID shows a row's run (`canvas batch --resume {}` reports it again)",
            batch.id
        )
    };
    let _ = writeln!(t, "next: {next}");
    let text = canvas_ui::visible(&t).into_owned();
    output_result(std::io::Write::write_all(
        &mut std::io::stdout().lock(),
        text.as_bytes(),
    ))
}
