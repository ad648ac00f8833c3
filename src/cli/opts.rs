//! Flag groups shared by several subcommands, each declared once and flattened where
//! it is used: the run store (`StoreOpts`) and a run's output (`OutputOpts`). The model
//! and tool groups live in `models.rs` and `tools.rs`.

use std::io::{self, IsTerminal};
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{CliError, exit};
use canvas_store::{Fault, Location, PgStore, RunRecord, SqliteStore, Store, StoreError};
use canvas_ui::{
    JsonlRenderer, Output, OutputWriter, Renderer, SseRenderer, TextOptions, TextRenderer,
};

/// A path flag's value, kept even when empty: an empty environment twin (`CANVAS_STORE=`)
/// means "not set", as it did before clap read the variable.
pub fn lenient_path(s: &str) -> Result<PathBuf, std::convert::Infallible> {
    Ok(PathBuf::from(s))
}

/// A boolean environment twin: `1`, `true`, `yes` or `on` (any case) is true, anything
/// else false, as the variables were read before clap read them.
pub fn truthy(s: &str) -> Result<bool, std::convert::Infallible> {
    Ok(matches!(
        s.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    ))
}

/// Where the run store is (`--store`, `$CANVAS_STORE`, else the data dir): a SQLite file,
/// or a PostgreSQL database (`postgres://…`).
#[derive(Debug, Clone, Default, Args)]
pub struct StoreOpts {
    /// Store [default: ~/.local/share/canvas/canvas.db].
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "CANVAS_STORE",
        hide_env_values = true,
        value_parser = lenient_path
    )]
    pub store: Option<PathBuf>,
}

impl StoreOpts {
    /// The store's path or URL: the flag or its environment twin, else the user's data dir.
    pub fn path(&self) -> PathBuf {
        match &self.store {
            Some(p) if !p.as_os_str().is_empty() => p.clone(),
            _ => canvas_store::default_path(),
        }
    }

    /// Where the store is (a URL that cannot be read is exit 2).
    pub fn location(&self) -> Result<Location, CliError> {
        let path = self.path();
        Location::parse(&path).map_err(|e| CliError::invalid(e.to_string()))
    }

    /// Open (creating it when missing) the store, for commands that write runs.
    pub fn open(&self) -> Result<Box<dyn Store>, CliError> {
        let at = self.location()?;
        let store: Box<dyn Store> = match &at {
            Location::File(path) => {
                Box::new(SqliteStore::open(path).map_err(|e| cannot_open(&at, &e))?)
            }
            Location::Postgres(url) => {
                Box::new(PgStore::open(url).map_err(|e| cannot_open(&at, &e))?)
            }
        };
        tracing::info!(store = %at, "run store opened");
        Ok(store)
    }

    /// Open the store read-only, or `None` when there is none (no file; no schema on the
    /// server): a read-only command must not leave an empty store behind.
    pub fn open_existing(&self) -> Result<Option<Box<dyn Store>>, CliError> {
        let at = self.location()?;
        let store: Option<Box<dyn Store>> = match &at {
            Location::File(path) => match path.try_exists() {
                Ok(false) => None,
                Ok(true) => SqliteStore::open_read_only(path)
                    .map_err(|e| cannot_open(&at, &e))?
                    .map(|s| Box::new(s) as Box<dyn Store>),
                Err(e) => return Err(cannot_look(path, &e)),
            },
            Location::Postgres(url) => PgStore::open_read_only(url)
                .map_err(|e| cannot_open(&at, &e))?
                .map(|s| Box::new(s) as Box<dyn Store>),
        };
        tracing::info!(store = %at, found = store.is_some(), "run store opened read-only");
        Ok(store)
    }

    /// Open an existing store for writing (`cancel`); `None` when there is none.
    pub fn open_if_exists(&self) -> Result<Option<Box<dyn Store>>, CliError> {
        let exists = match self.location()? {
            Location::File(path) => path.exists(),
            Location::Postgres(_) => self.open_existing()?.is_some(),
        };
        if !exists {
            return Ok(None);
        }
        self.open().map(Some)
    }

    /// The run `id` names (full id, unique prefix or `latest`), in a store that must exist.
    pub fn find_run(&self, id: &str) -> Result<(Box<dyn Store>, RunRecord), CliError> {
        let Some(store) = self.open_existing()? else {
            return Err(CliError::invalid(format!(
                "no run matches \"{id}\": there is no run store at {}",
                self.location()?
            ))
            .hint(RUNS_HINT));
        };
        let rec = find_in(&*store, id)?;
        Ok((store, rec))
    }
}

/// Where to look when a run id matches nothing.
const RUNS_HINT: &str = "canvas runs lists the stored runs";

/// The run `id` names in `store`; an unknown id suggests the closest stored one.
pub fn find_in(store: &dyn Store, id: &str) -> Result<RunRecord, CliError> {
    match store.find_run(id) {
        Ok(rec) => Ok(rec),
        Err(e @ StoreError::NotFound(_)) => {
            let ids: Vec<String> = store
                .list_runs(None, 0)
                .map(|runs| runs.into_iter().map(|r| r.id).collect())
                .unwrap_or_default();
            // Ids are often given as prefixes: compare with each id cut to the same length.
            let cut: Vec<&str> = ids.iter().map(|i| i.get(..id.len()).unwrap_or(i)).collect();
            let hint = match canvas_dsl::suggest::closest(id, cut.iter().copied()) {
                Some(near) => {
                    let full = ids.iter().find(|i| i.starts_with(near)).map_or(near, |i| i);
                    format!("{RUNS_HINT}; did you mean {full}?")
                }
                None => RUNS_HINT.to_string(),
            };
            Err(CliError::invalid(e.to_string()).hint(hint))
        }
        Err(e @ StoreError::Ambiguous { .. }) => {
            Err(CliError::invalid(e.to_string()).hint(RUNS_HINT))
        }
        Err(e) => Err(e.into()),
    }
}

/// The store at `at` could not be opened (exit 2): it was left as it is.
pub fn cannot_open(at: &Location, e: &StoreError) -> CliError {
    // A file has side files to mention; a server does not.
    let side = match at {
        Location::File(_) => format!(" (with any {at}-wal and {at}-shm beside it)"),
        Location::Postgres(_) => String::new(),
    };
    let err = match e.fault() {
        Fault::Newer => CliError::invalid(format!("{at}: {e}"))
            .hint("upgrade canvas, or give another --store (this one was left as it is)"),
        Fault::Damaged => {
            let what = match e {
                StoreError::NotAStore(_) => e.to_string(),
                _ => format!("not a canvas run store, or a damaged one ({})", e.reason()),
            };
            CliError::invalid(format!("{at}: {what}")).hint(format!(
                "it was left as it is: move it away{side}, or give another --store"
            ))
        }
        Fault::ReadOnly => CliError::invalid(format!(
            "{at}: the run store cannot be written ({})",
            e.reason()
        ))
        .hint(match at {
            Location::File(_) => format!(
                "runs are stored there: make it writable, and its directory (for {at}-wal and \
                 {at}-shm), or give another --store"
            ),
            Location::Postgres(_) => {
                "runs are stored there: grant this user write access, or give another --store"
                    .to_string()
            }
        }),
        Fault::WriteFailed => CliError::invalid(format!(
            "{at}: cannot write to the run store ({})",
            e.reason()
        ))
        .hint("is the disk full? free some space, or give another --store"),
        Fault::Other => {
            CliError::invalid(format!("{at}: cannot open the run store: {}", e.reason()))
        }
    };
    tracing::debug!(store = %at, error = ?e, "the run store was not opened");
    err
}

/// The existence of the store file at `path` could not be checked (exit 2).
fn cannot_look(path: &std::path::Path, e: &std::io::Error) -> CliError {
    CliError::invalid(format!(
        "{}: cannot open the run store: {e}",
        path.display()
    ))
}

/// A store that failed while a command used it (exit 1); one that cannot be opened is
/// `cannot_open` (exit 2).
impl From<StoreError> for CliError {
    fn from(e: StoreError) -> Self {
        let hint = (e.fault() == Fault::WriteFailed)
            .then_some("is the disk full? free some space and try again");
        let err = CliError::new(exit::FAILED, format!("run store: {e}"));
        match hint {
            Some(h) => err.hint(h),
            None => err,
        }
    }
}

/// Output formats of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunFormat {
    // Readable text (default on a terminal).
    Text,
    // One JSON event per line (default otherwise).
    Jsonl,
    // RAGFlow's SSE framing: `data:{json}` frames, then `data:[DONE]`.
    Sse,
}

/// How a run shows its events: `--format`, `-v`, `--quiet`.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputOpts {
    /// text (default on a terminal), jsonl (one event per line) or sse.
    #[arg(long, value_enum, hide_possible_values = true)]
    pub format: Option<RunFormat>,
    /// More output: node starts, logs on stderr, error causes.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Less output: message text and errors only.
    #[arg(long, conflicts_with = "verbose")]
    pub quiet: bool,
}

impl OutputOpts {
    /// The format in effect: the flag, else text on a terminal and JSON lines otherwise.
    pub fn format(&self) -> RunFormat {
        self.format.unwrap_or(if io::stdout().is_terminal() {
            RunFormat::Text
        } else {
            RunFormat::Jsonl
        })
    }

    /// Whether the turn's output is text on a terminal (which shows its own summary).
    pub fn shows_text_on_terminal(&self) -> bool {
        !self.quiet && io::stdout().is_terminal() && self.format() == RunFormat::Text
    }

    /// Buffered stdout for a turn: written as it comes on a terminal (a person reads
    /// along), in batches otherwise.
    pub fn output(&self) -> Output {
        let stdout = io::stdout();
        let eager = stdout.is_terminal();
        Output::new(Box::new(stdout), eager)
    }

    /// The renderer writing this format to `out` (`prompts`: forms can be asked here).
    pub fn renderer(&self, prompts: bool, out: OutputWriter) -> Box<dyn Renderer> {
        match self.format() {
            RunFormat::Jsonl => Box::new(JsonlRenderer::new(out)),
            RunFormat::Sse => Box::new(SseRenderer::new(out)),
            RunFormat::Text => {
                let tty = io::stdout().is_terminal();
                let color = tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
                let spinner = io::stderr().is_terminal() && !self.quiet;
                Box::new(TextRenderer::new(
                    out,
                    TextOptions {
                        color,
                        spinner,
                        verbose: self.verbose,
                        quiet: self.quiet,
                        prompts,
                        answered_later: false,
                    },
                ))
            }
        }
    }
}
