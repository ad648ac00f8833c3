//! `canvas batch FILE --dataset DATA`: run a canvas over every row of a dataset, many
//! rows at once, each a stored run; `--resume ID` continues a stopped batch, `--worker`
//! joins the batch of the same canvas and dataset that other processes (on other
//! machines sharing a store) work on. Prints a summary; exit 0 when every row finished
//! and every check held, 1 otherwise, 130 when Ctrl-C stopped it (resumable).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::admit::{AdmitOpts, Admitted, admit};
use super::models::ModelArgs;
use super::opts::StoreOpts;
use super::remember::RunOptions;
use super::tools::ToolArgs;
use super::{CliError, exit, inputs};
use canvas_batch::results::ResultsFile;
use canvas_batch::{DataRow, Progress, RowAsk, Summary, SummaryBuilder, Worker};
use canvas_components::Registry;
use canvas_dsl::{self as dsl, Format};
use canvas_engine::scheduler::{DEFAULT_MAX_PARALLEL, DEFAULT_MAX_STEPS};
use canvas_engine::{Canvas, Checks, RunConfig};
use canvas_pyrt::Object;
use canvas_store::{BatchRecord, RowSpec, RunRecord, Store, canvas_hash};

/// Rows run at once by default: model calls wait on the network, so many rows share
/// the two threads; far fewer than a provider's usual concurrent-request limits.
const DEFAULT_CONCURRENCY: usize = 16;
/// How long a worker's claim on a row lasts without renewal (renewed every third).
const DEFAULT_LEASE_SECS: f64 = 30.0;

/// Output formats of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    // Readable lines.
    Text,
    // One JSON object.
    Json,
}

/// Options of `canvas batch`.
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// The canvas file (JSON or YAML)
    #[arg(required_unless_present = "resume")]
    pub file: Option<PathBuf>,
    /// The rows: .jsonl, .csv or .yaml (docs/batch.md)
    #[arg(long, value_name = "DATA", required_unless_present = "resume")]
    pub dataset: Option<PathBuf>,
    /// Continue a stored batch (an id, a unique prefix, or `latest`)
    #[arg(long, value_name = "ID", conflicts_with_all = ["file", "dataset"])]
    pub resume: Option<String>,
    /// Join (or start) the unfinished batch of this canvas and dataset
    #[arg(long)]
    pub worker: bool,
    /// Rows run at once
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONCURRENCY,
          value_parser = concurrency)]
    pub concurrency: usize,
    /// Write one result per row here (.jsonl, or .csv)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The summary's format: text or json
    #[arg(long, value_enum, default_value_t = SummaryFormat::Text, hide_possible_values = true)]
    pub format: SummaryFormat,
    /// Seconds before a dead worker's rows are taken over
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_LEASE_SECS,
          value_parser = lease_secs)]
    pub lease: f64,
    /// No progress bar
    #[arg(long)]
    pub quiet: bool,
    /// Where runs are stored.
    #[command(flatten)]
    pub store: StoreOpts,
    /// The checks each run starts with.
    #[command(flatten)]
    pub admit: AdmitOpts,
    /// Most model calls per second to each provider
    #[arg(long, value_name = "N", value_parser = rps)]
    pub rps: Option<f64>,
    /// Most components of one run running at once (as `run`'s flag; not shown: rarely
    /// changed for a batch, whose rows already run side by side).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PARALLEL as u16, value_parser = clap::value_parser!(u16).range(1..), hide = true)]
    pub max_parallel: u16,
    /// Step budget of a row's turn (0: none)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STEPS)]
    pub max_steps: u64,
    /// Seed for random choices (Message alternatives)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Where model calls go.
    #[command(flatten)]
    pub models: ModelArgs,
    /// What tools may reach and how.
    #[command(flatten)]
    pub tools: ToolArgs,
    /// The ids of the options given explicitly (the rest come from what the batch
    /// remembers, with `--resume`).
    #[arg(skip)]
    pub explicit: std::collections::HashSet<String>,
}

fn concurrency(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(n),
        _ => Err("a number of rows from 1 to 4096".into()),
    }
}

fn rps(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => Err("a number of calls per second above 0".into()),
    }
}

fn lease_secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && (0.5..=86_400.0).contains(&n) => Ok(n),
        _ => Err("a number of seconds from 0.5 to 86400".into()),
    }
}

/// What a batch remembers of the command that started it.
#[derive(Debug, Default, Serialize, Deserialize)]
struct BatchOptions {
    #[serde(flatten)]
    run: RunOptions,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    concurrency: Option<usize>,
}

/// Run `canvas batch`.
pub fn exec(mut args: BatchArgs) -> Result<u8, CliError> {
    let store: Arc<dyn Store> = Arc::from(args.store.open()?);
    let (batch, canvas) = match args.resume.clone() {
        Some(id) => resume_batch(&mut args, store.as_ref(), &id)?,
        None => new_batch(&args, store.as_ref())?,
    };
    let label = batch.source.clone();
    let limits = Arc::new(canvas_llm::limit::Limits::new(args.rps));
    let models = args.models.setup_limited(Some(limits))?;
    models.check(&canvas, &label)?;
    let tools = Arc::new(args.tools.env(args.models.llm_config())?);
    let interrupt = Arc::new(AtomicBool::new(false));
    let signals = register_signals(&interrupt);
    let (writer, written) = canvas_store::writer::spawn(Arc::clone(&store));
    let mut record = RunRecord::new(batch.source.clone(), batch.canvas.clone());
    record.options = batch.options.clone();
    let worker = Arc::new(Worker {
        batch_id: batch.id.clone(),
        canvas: Arc::new(canvas),
        record,
        store: Arc::clone(&store),
        writer,
        config: RunConfig {
            max_parallel: usize::from(args.max_parallel),
            seed: args.seed,
            models: models.source.clone(),
            date: models.date.clone(),
            services: canvas_engine::Services::new().with(tools),
            max_steps: args.max_steps,
            ..RunConfig::default()
        },
        owner: canvas_store::lease_holder(),
        lease: Duration::from_secs_f64(args.lease),
        concurrency: args.concurrency,
        wait_for_others: args.worker || args.resume.is_some(),
        interrupt: Arc::clone(&interrupt),
    });
    let before = store.row_counts(&batch.id)?;
    eprintln!(
        "batch {}: {} of {} rows to run ({label}){}",
        batch.id,
        before.pending + before.running,
        batch.rows,
        if before.done() > 0 {
            format!(", {} done before", before.done())
        } else {
            String::new()
        }
    );
    let bar = progress_bar(args.quiet, batch.rows, before);
    let tally = std::sync::Mutex::new(Tally {
        passed: before.succeeded.saturating_sub(before.checks_failed),
        failed: before.failed + before.waiting + before.checks_failed,
        here: 0,
    });
    let shown = bar.clone();
    let started = Instant::now();
    let progress: Arc<dyn Fn(Progress) + Send + Sync> =
        Arc::new(move |p| show(shown.as_ref(), &tally, started, &p));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(exit::FAILED, format!("cannot start the async runtime: {e}")))?;
    let ended = rt.block_on(Arc::clone(&worker).run(progress));
    drop(rt);
    // Every write is durable once the writer has drained its queue.
    drop(worker);
    let _ = written.join();
    for id in signals {
        signal_hook::low_level::unregister(id);
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let ended = ended.map_err(|e| {
        CliError::new(exit::FAILED, format!("batch {}: {e}", batch.id))
            .hint(format!("canvas batch --resume {} continues it", batch.id))
    })?;
    // Row by row: a large batch's results are never all in memory.
    let cannot_write = |path: &std::path::Path, e: std::io::Error| {
        CliError::new(
            exit::FAILED,
            format!("{}: cannot write the results: {e}", path.display()),
        )
    };
    let mut file = match &args.output {
        Some(path) => Some(ResultsFile::create(path).map_err(|e| cannot_write(path, e))?),
        None => None,
    };
    let mut summary = SummaryBuilder::default();
    let mut failed_write = None;
    store.each_batch_row(&batch.id, &mut |row| {
        let result = canvas_batch::results::result_of(&row);
        if let (Some(f), Some(r), None) = (file.as_mut(), result.as_ref(), &failed_write) {
            failed_write = f.add(r).err();
        }
        summary.add(&row, result.as_ref());
        Ok(())
    })?;
    let summary = summary.finish();
    if let (Some(path), Some(f)) = (&args.output, file) {
        match failed_write {
            Some(e) => return Err(cannot_write(path, e)),
            None => f.finish().map_err(|e| cannot_write(path, e))?,
        }
    }
    print_summary(&args, &batch, &summary, started.elapsed(), &ended)?;
    if ended.interrupted {
        eprintln!(
            "interrupted: {} rows left; `canvas batch --resume {}` continues the batch",
            summary.counts.pending + summary.counts.running,
            batch.id
        );
        return Ok(exit::INTERRUPTED);
    }
    Ok(if summary.passed() {
        exit::OK
    } else {
        exit::FAILED
    })
}

/// A new batch (or, with `--worker`, the unfinished one of the same canvas and dataset):
/// the canvas admitted as `run` admits it, every row read and typed before anything is
/// stored.
fn new_batch(args: &BatchArgs, store: &dyn Store) -> Result<(BatchRecord, Canvas), CliError> {
    let (Some(file), Some(data)) = (&args.file, &args.dataset) else {
        return Err(
            CliError::invalid("canvas batch needs a canvas FILE and --dataset DATA").hint(
                "canvas batch flow.json --dataset cases.jsonl, or canvas batch --resume latest",
            ),
        );
    };
    let label = file.display().to_string();
    if label == "-" {
        return Err(CliError::invalid(
            "a batch's canvas is a file (it is read again by every worker)",
        ));
    }
    let Admitted { canvas, text } = admit(file, &label, &args.admit, args.quiet)?;
    let data_label = data.display().to_string();
    let data_text = std::fs::read(data)
        .map_err(|e| CliError::invalid(format!("{data_label}: cannot read it: {e}")))?;
    let rows = canvas_batch::dataset::read(data, &data_label)
        .map_err(|e| CliError::invalid(e.to_string()))?;
    if rows.is_empty() {
        return Err(CliError::invalid(format!(
            "{data_label}: the dataset has no rows"
        )));
    }
    let specs = type_rows(&canvas, &rows, &data_label)?;
    let options = BatchOptions {
        run: RunOptions::of_parts(
            &args.models,
            &args.tools,
            args.max_parallel,
            args.seed,
            args.max_steps,
        ),
        concurrency: Some(args.concurrency),
    };
    let hash = canvas_hash(&text);
    let key = {
        let mut h = Sha256::new();
        h.update(hash.as_bytes());
        h.update(b"\n");
        h.update(&data_text);
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    };
    let rec = BatchRecord {
        id: ulid::Ulid::new().to_string(),
        key,
        source: absolute(file),
        canvas: text,
        canvas_hash: hash,
        dataset: absolute(data),
        created_at: now(),
        rows: specs.len() as u64,
        options: Some(serde_json::to_value(&options).unwrap_or(Value::Null)),
    };
    let rec = if args.worker {
        store.join_batch(&rec, &specs)?
    } else {
        store.create_batch(&rec, &specs)?;
        rec
    };
    Ok((rec, canvas))
}

/// A stored batch, with the options it remembers (unless this command line gives them).
fn resume_batch(
    args: &mut BatchArgs,
    store: &dyn Store,
    id: &str,
) -> Result<(BatchRecord, Canvas), CliError> {
    let rec = store.find_batch(id).map_err(|e| match e {
        canvas_store::StoreError::NotFound(_) => {
            CliError::invalid(format!("no batch matches \"{id}\""))
                .hint("canvas batches lists the stored batches")
        }
        other => other.into(),
    })?;
    if let Some(kept) = rec
        .options
        .as_ref()
        .and_then(|v| serde_json::from_value::<BatchOptions>(v.clone()).ok())
    {
        kept.run.apply_parts(
            &mut args.models,
            &mut args.tools,
            &mut args.max_parallel,
            &mut args.seed,
            &mut args.max_steps,
            &args.explicit,
        );
        if let (false, Some(n)) = (args.explicit.contains("concurrency"), kept.concurrency) {
            args.concurrency = n;
        }
    }
    let label = format!("{} (stored copy)", rec.source);
    let doc = dsl::parse(&rec.canvas, Format::Sniff)
        .map_err(|e| CliError::invalid(format!("{label}: {e}")))?;
    // Admitted when the batch started: what the checks would refuse fails where a run
    // reaches it.
    let canvas = Canvas::compile_with(doc, &Registry, Checks::Skip)
        .map_err(|e| super::error::uncompilable(&label, &e))?;
    Ok((rec, canvas))
}

/// Each row's inputs and answers typed by the canvas's fields, as `-i` values are;
/// Begin's required inputs present. Errors name the dataset's line.
fn type_rows(canvas: &Canvas, rows: &[DataRow], label: &str) -> Result<Vec<RowSpec>, CliError> {
    let fields = inputs::canvas_fields(canvas);
    let begin: Object = canvas
        .node("begin")
        .and_then(|b| b.params.get("inputs"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut warned = false;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let at = format!("{label}:{}", row.line);
        let given = inputs::typed_map(row.inputs.clone(), &fields, &at)?;
        let answers = inputs::typed_map(row.answers.clone(), &fields, &at)?;
        let unknown = inputs::unknown_keys(&given, &fields);
        if !unknown.is_empty() && !warned {
            inputs::warn_unknown(&at, &unknown);
            warned = true;
        }
        // Begin takes its own fields and keys no form asks; form fields wait for their
        // form, as with `canvas run -i`.
        let (first, later): (Object, Object) = given
            .into_iter()
            .partition(|(k, _)| begin.contains_key(k) || !is_form_field(canvas, k));
        let missing = inputs::missing_begin_inputs(&begin, &first, &row.query);
        if !missing.is_empty() {
            return Err(inputs::missing_error(&at, &missing, &[]));
        }
        let mut all_answers = later;
        all_answers.extend(answers);
        let ask = RowAsk {
            query: row.query.clone(),
            inputs: first,
            answers: all_answers,
            expect: if row.expect.checks.is_empty() {
                Value::Null
            } else {
                row.expect.to_value()
            },
        };
        out.push(RowSpec {
            row_id: row
                .id
                .clone()
                .unwrap_or_else(|| (out.len() + 1).to_string()),
            spec: serde_json::to_value(&ask).unwrap_or(Value::Null),
        });
    }
    Ok(out)
}

/// Whether a UserFillUp of the canvas asks for the field `key`.
fn is_form_field(canvas: &Canvas, key: &str) -> bool {
    canvas.nodes.values().any(|n| {
        n.class.eq_ignore_ascii_case("UserFillUp")
            && n.params
                .get("inputs")
                .and_then(Value::as_object)
                .is_some_and(|i| i.contains_key(key))
    })
}

fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A progress bar on a terminal: rows done, rows per second, ETA, passed and failed.
fn progress_bar(
    quiet: bool,
    rows: u64,
    before: canvas_store::RowCounts,
) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(rows);
    let style =
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} rows · ETA {eta} · {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_position(before.done());
    Some(bar)
}

/// What the progress bar counts.
struct Tally {
    passed: u64,
    failed: u64,
    /// Rows this process finished (their rate is this process's).
    here: u64,
}

/// A row done: the bar moves, and the tally of passed and failed rows with it, and
/// this process's rows per second.
fn show(
    bar: Option<&indicatif::ProgressBar>,
    tally: &std::sync::Mutex<Tally>,
    started: Instant,
    p: &Progress,
) {
    let (Some(bar), Progress::Done(r)) = (bar, p) else {
        return;
    };
    let mut t = tally
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if r.status == canvas_store::RowStatus::Succeeded && r.passed != Some(false) {
        t.passed += 1;
    } else {
        t.failed += 1;
    }
    t.here += 1;
    let rate = t.here as f64 / started.elapsed().as_secs_f64().max(1e-3);
    bar.inc(1);
    bar.set_message(format!(
        "{rate:.0} rows/s · {} passed · {} failed",
        t.passed, t.failed
    ));
}

/// The summary on stdout.
fn print_summary(
    args: &BatchArgs,
    batch: &BatchRecord,
    s: &Summary,
    took: Duration,
    ended: &canvas_batch::WorkerEnd,
) -> Result<(), CliError> {
    let mut out = String::new();
    match args.format {
        SummaryFormat::Json => {
            let doc = serde_json::json!({
                "batch": batch.id,
                "canvas": batch.source,
                "dataset": batch.dataset,
                "summary": s,
                "passed": s.passed(),
                "interrupted": ended.interrupted,
                "finished_here": ended.finished,
                "seconds": took.as_secs_f64(),
                "results": args.output.as_ref().map(|p| p.display().to_string()),
            });
            out = serde_json::to_string_pretty(&doc).unwrap_or_default();
            out.push('\n');
        }
        SummaryFormat::Text => {
            use std::fmt::Write as _;
            let c = &s.counts;
            let _ = writeln!(
                out,
                "batch {} · {} rows · {} succeeded · {} failed · {} waiting{} · {} checks failed",
                batch.id,
                s.rows,
                c.succeeded,
                c.failed,
                c.waiting,
                if c.pending + c.running > 0 {
                    format!(" · {} not done", c.pending + c.running)
                } else {
                    String::new()
                },
                c.checks_failed
            );
            let secs = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.3} s"));
            let _ = writeln!(
                out,
                "seconds p50 {} · p95 {} · tokens {} (prompt {}, completion {}) · took {:.1} s",
                secs(s.p50_seconds),
                secs(s.p95_seconds),
                s.usage.total_tokens,
                s.usage.prompt_tokens,
                s.usage.completion_tokens,
                took.as_secs_f64()
            );
            if !s.failures.is_empty() {
                let _ = writeln!(out, "failures:");
                for (error, ids) in &s.failures {
                    let _ = writeln!(out, "  {}× {error}  (rows {})", ids.len(), list(ids));
                }
            }
            if !s.waiting.is_empty() {
                let _ = writeln!(
                    out,
                    "waiting at a form with no answer: rows {}",
                    list(&s.waiting)
                );
            }
            if !s.checks_failed.is_empty() {
                let _ = writeln!(out, "checks failed:");
                for (id, checks) in &s.checks_failed {
                    let _ = writeln!(out, "  row {id}: {}", checks.join("; "));
                }
            }
            if let Some(p) = &args.output {
                let _ = writeln!(out, "results: {}", p.display());
            }
            out = canvas_ui::visible(&out).into_owned();
        }
    }
    let mut stdout = std::io::stdout().lock();
    super::runs::output_result(
        stdout
            .write_all(out.as_bytes())
            .and_then(|()| stdout.flush()),
    )
    .map(drop)
}

/// Row ids, the first twenty.
fn list(ids: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut s = ids
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    s
}

/// Ctrl-C and SIGTERM stop every row at its next node boundary; a second one exits at
/// once with 130 (every row's last checkpoint is in the store; its lease, held by a
/// process that is gone, is taken over at once by a resume on this machine).
fn register_signals(flag: &Arc<AtomicBool>) -> Vec<signal_hook::SigId> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut ids = Vec::new();
    for sig in [SIGINT, SIGTERM] {
        if let Ok(id) = signal_hook::flag::register_conditional_shutdown(
            sig,
            i32::from(exit::INTERRUPTED),
            Arc::clone(flag),
        ) {
            ids.push(id);
        }
        if let Ok(id) = signal_hook::flag::register(sig, Arc::clone(flag)) {
            ids.push(id);
        }
    }
    ids
}
