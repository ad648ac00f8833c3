//! `canvas runs prune`: delete old runs and give their space back to the file system.
//!
//! A dry run unless `--yes`: it lists the runs it would delete and about how many bytes
//! they hold. On a terminal (table output) it then asks; anywhere else it stops there.
//! Which runs: `--older-than`, `--status` and `--keep` (at least one; all must hold). A
//! run whose lease a live process holds is never deleted (the store checks again in the
//! transaction that deletes).

use std::io::Write;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::CliError;
use super::opts::StoreOpts;
use super::runs::{RunJson, human_bytes, runs_word, status_parser, table, write_stdout};
use canvas_store::{PruneFilter, Reclaimed, RunRecord, RunStatus, StoreSize};

/// Output formats of `canvas runs prune` (plain comments: clap lists the names on one
/// line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PruneFormat {
    // The runs as `canvas runs` shows them, then what was or would be freed.
    Table,
    // One object: counts, sizes in bytes, and the runs as `canvas runs --format json`.
    Json,
}

/// Options of `canvas runs prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Runs last updated more than DURATION ago: 30d, 12h, 90m, 2w (units s m h d w).
    #[arg(long, value_name = "DURATION", value_parser = parse_age)]
    pub older_than: Option<Duration>,
    /// Runs with status S (repeatable, or a comma list: failed,cancelled).
    #[arg(
        long,
        value_name = "S",
        value_delimiter = ',',
        ignore_case = true,
        value_parser = status_parser()
    )]
    pub status: Vec<RunStatus>,
    /// Never delete the N most recently created runs (counting every run).
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
    /// Delete without asking (without it: a dry run, or a question on a terminal).
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Output format: the table and a summary, or one JSON object (json never asks).
    #[arg(long, value_enum, default_value_t = PruneFormat::Table)]
    pub format: PruneFormat,
    /// Where runs are stored.
    #[command(flatten)]
    pub store: StoreOpts,
}

impl PruneArgs {
    fn filter(&self) -> PruneFilter {
        PruneFilter {
            older_than: self.older_than,
            statuses: self.status.clone(),
            keep: self.keep,
        }
    }
}

/// A duration as `--older-than` takes it: a whole number and a unit (`s`, `m`, `h`, `d`,
/// `w`), or several such (`1d12h`).
pub fn parse_age(s: &str) -> Result<Duration, String> {
    let text = s.trim();
    let bad =
        || format!("\"{s}\" is not a duration: give a number and a unit, e.g. 30d, 12h, 90m, 2w");
    let mut total: u64 = 0;
    let mut digits = String::new();
    for ch in text.chars() {
        if ch.is_ascii_digit() {
            digits.push(ch);
            continue;
        }
        let unit: u64 = match ch.to_ascii_lowercase() {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|secs| total.checked_add(secs))
            .ok_or_else(bad)?;
        digits.clear();
    }
    if text.is_empty() || !digits.is_empty() {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// What a prune found and did.
struct Outcome {
    path: String,
    runs: Vec<RunRecord>,
    approx_bytes: u64,
    before: Option<StoreSize>,
    done: Option<Done>,
}

/// A prune that deleted.
struct Done {
    deleted: usize,
    after: StoreSize,
    reclaim: Option<Reclaimed>,
    reclaim_time: Duration,
}

/// `canvas runs prune --format json`.
#[derive(Debug, Serialize)]
struct PruneJson<'a> {
    store: &'a str,
    dry_run: bool,
    count: usize,
    approx_bytes: u64,
    deleted: usize,
    bytes_before: u64,
    bytes_after: u64,
    reclaim: Option<Reclaimed>,
    reclaim_seconds: f64,
    runs: Vec<RunJson<'a>>,
}

/// Run `canvas runs prune`.
pub fn exec(args: PruneArgs) -> Result<u8, CliError> {
    let filter = args.filter();
    if filter.is_empty() {
        return Err(
            CliError::invalid("canvas runs prune: say which runs to delete").hint(
                "give --older-than DURATION (e.g. 30d), --status S or --keep N \
                 (--keep 0 alone means every run); nothing is deleted without --yes",
            ),
        );
    }
    let mut out = Outcome {
        path: args.store.location()?.to_string(),
        runs: Vec::new(),
        approx_bytes: 0,
        before: None,
        done: None,
    };
    // Select with a read-only connection: a dry run writes nothing, and creates no store.
    if let Some(store) = args.store.open_existing()? {
        out.runs = store.select_prunable(&filter)?;
        out.approx_bytes = store.run_bytes(&ids(&out.runs))?;
        out.before = Some(store.size()?);
    }
    let json = args.format == PruneFormat::Json;
    if json {
        if args.yes && !out.runs.is_empty() {
            out.done = Some(delete(&args.store, &out.runs)?);
        }
        return print_json(&out);
    }
    let code = write_stdout(|w| listing(w, &out))?;
    if out.runs.is_empty() {
        return Ok(code);
    }
    let asked = !args.yes && canvas_ui::prompt::can_prompt(false);
    if args.yes || (asked && ask(out.runs.len())) {
        out.done = Some(delete(&args.store, &out.runs)?);
    }
    write_stdout(|w| result(w, &out, asked))
}

fn ids(runs: &[RunRecord]) -> Vec<String> {
    runs.iter().map(|r| r.id.clone()).collect()
}

/// `delete N runs? [y/N]` on the terminal; anything but yes is no.
fn ask(n: usize) -> bool {
    let term = dialoguer::console::Term::stderr();
    canvas_ui::prompt::confirm(&format!("delete {}?", runs_word(n as u64)), &term).unwrap_or(false)
}

/// Delete the runs, then give the space back and measure the store again.
fn delete(store: &StoreOpts, runs: &[RunRecord]) -> Result<Done, CliError> {
    let store = store.open()?;
    let deleted = store.delete_runs(&ids(runs))?;
    let started = Instant::now();
    let reclaim = match deleted {
        0 => None,
        _ => Some(store.reclaim()?),
    };
    let reclaim_time = started.elapsed();
    tracing::info!(deleted, ?reclaim, ?reclaim_time, "pruned");
    Ok(Done {
        deleted,
        after: store.size()?,
        reclaim,
        reclaim_time,
    })
}

/// The table of selected runs and what deleting them would free.
fn listing(w: &mut dyn Write, out: &Outcome) -> std::io::Result<()> {
    let store = match &out.before {
        Some(b) => {
            format!(
                "{}, {}, {}",
                out.path,
                human_bytes(b.bytes),
                runs_word(b.runs)
            )
        }
        None => format!("{}, none yet", out.path),
    };
    if out.runs.is_empty() {
        return writeln!(w, "no runs to prune (store: {store})");
    }
    w.write_all(table(&out.runs).as_bytes())?;
    writeln!(
        w,
        "{} selected, about {} (store: {store})",
        runs_word(out.runs.len() as u64),
        human_bytes(out.approx_bytes)
    )
}

/// The line after the listing: what was deleted, or how to delete (`asked`: the
/// terminal was asked, and said no when nothing was deleted).
fn result(w: &mut dyn Write, out: &Outcome, asked: bool) -> std::io::Result<()> {
    let Some(done) = &out.done else {
        return match asked {
            true => writeln!(w, "nothing deleted"),
            false => writeln!(
                w,
                "dry run: nothing deleted; add --yes to delete {}",
                match out.runs.len() {
                    1 => "it".to_string(),
                    n => format!("these {n}"),
                }
            ),
        };
    };
    let before = out.before.as_ref().map_or(0, |b| b.bytes);
    write!(
        w,
        "deleted {}; store {} → {}",
        runs_word(done.deleted as u64),
        human_bytes(before),
        human_bytes(done.after.bytes)
    )?;
    if done.reclaim == Some(Reclaimed::FullVacuum) {
        write!(
            w,
            " (a one-time VACUUM took {:.1} s; from now on the store shrinks in place)",
            done.reclaim_time.as_secs_f64()
        )?;
    }
    if done.reclaim == Some(Reclaimed::Autovacuum) {
        write!(
            w,
            " (PostgreSQL reuses the space for new runs; its tables do not shrink)"
        )?;
    }
    writeln!(w)?;
    let kept = out.runs.len() - done.deleted;
    if kept > 0 {
        writeln!(
            w,
            "kept {}: a process took it up or deleted it meanwhile",
            runs_word(kept as u64)
        )?;
    }
    Ok(())
}

fn print_json(out: &Outcome) -> Result<u8, CliError> {
    let before = out.before.as_ref().map_or(0, |b| b.bytes);
    let doc = PruneJson {
        store: &out.path,
        dry_run: out.done.is_none(),
        count: out.runs.len(),
        approx_bytes: out.approx_bytes,
        deleted: out.done.as_ref().map_or(0, |d| d.deleted),
        bytes_before: before,
        bytes_after: out.done.as_ref().map_or(before, |d| d.after.bytes),
        reclaim: out.done.as_ref().and_then(|d| d.reclaim),
        reclaim_seconds: out
            .done
            .as_ref()
            .map_or(0.0, |d| d.reclaim_time.as_secs_f64()),
        runs: out.runs.iter().map(RunJson::from).collect(),
    };
    write_stdout(|w| {
        serde_json::to_writer_pretty(&mut *w, &doc)?;
        writeln!(w)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_in_units() {
        let secs = |s: &str| parse_age(s).map(|d| d.as_secs());
        assert_eq!(secs("30d"), Ok(30 * 86_400));
        assert_eq!(secs("12h"), Ok(12 * 3600));
        assert_eq!(secs("90m"), Ok(90 * 60));
        assert_eq!(secs("2w"), Ok(14 * 86_400));
        assert_eq!(secs("45s"), Ok(45));
        assert_eq!(secs("1d12h"), Ok(36 * 3600));
        assert_eq!(secs("0d"), Ok(0));
        assert_eq!(secs(" 7D "), Ok(7 * 86_400));
        for bad in [
            "",
            "30",
            "d",
            "3.5d",
            "30x",
            "-1d",
            "1d2",
            "99999999999999999999w",
        ] {
            let e = parse_age(bad).unwrap_err();
            assert!(e.contains("e.g. 30d"), "{bad}: {e}");
        }
    }
}
