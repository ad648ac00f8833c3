//! The durable run store: runs, their turns, checkpoints of their `RunState`, their
//! event streams, leases (one process runs a run at a time), cancel requests, batches of
//! runs ([`batch`]), and the schema migrations of the file that holds them.
//!
//! [`Store`] is the seam; [`SqliteStore`] implements it on one SQLite file that many
//! processes may share, [`PgStore`] on a PostgreSQL database that many machines may
//! share (`--store postgres://…`: [`Location`]). Both store the same things the same
//! way (`rows.rs` makes the stored form over each backend's row operations). Store
//! calls block: async code makes them through [`blocking`] (a PostgreSQL store refuses
//! a call made straight from a thread driving an async runtime). A process running a run plans its checkpoints itself
//! ([`Checkpointer`]: deltas from the last one, [`delta`]) and hands them, with the
//! run's events, to a [`writer`] thread that commits what many runs give it in one
//! transaction. Events are kept compact ([`EventChunk`]): the payloads, without the
//! envelope a turn's events share; reading them back gives the JSON lines as emitted.

pub mod agents;
pub mod batch;
mod blobs;
mod blocking;
mod checkpoint;
mod chunk;
pub mod delta;
mod json_text;
pub mod lease;
pub mod postgres;
mod record;
mod retention;
mod rows;
mod sqlite;
pub mod writer;

#[cfg(test)]
mod behaviour;
#[cfg(test)]
mod testkit;

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use agents::{AgentChange, AgentRecord, Agents, SessionQuery, SessionRecord};
pub use batch::{
    BatchRecord, BatchRow, Batches, ClaimedRow, RowCounts, RowEnd, RowSpec, RowStatus,
};
pub use blocking::{blocking, call};
pub use checkpoint::{CheckpointWrite, Checkpointer};
pub use chunk::{ChunkBatch, ChunkPool, Encoded, EventChunk, StoredChunk};
pub use delta::{CursorDelta, Delta, apply, diff};
pub use lease::holder as lease_holder;
pub use postgres::{PG_SCHEMA_VERSION, PgStore, PgUrl};
pub use retention::{AutoVacuum, PruneFilter, Reclaimed, StoreSize};
pub use sqlite::{SCHEMA_VERSION, SqliteStore};

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// A process is running a turn.
    Running,
    /// Waiting for user input (a pending form).
    Waiting,
    /// The last turn finished.
    Succeeded,
    /// The last turn failed.
    Failed,
    /// Stopped by Ctrl-C (or a crash noticed later); resumable.
    Interrupted,
    /// Stopped by `canvas cancel`; resumable.
    Cancelled,
}

impl RunStatus {
    /// Every status, in declaration order.
    pub const ALL: [RunStatus; 6] = [
        RunStatus::Running,
        RunStatus::Waiting,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Interrupted,
        RunStatus::Cancelled,
    ];

    /// The stored (and displayed) name: `running`, `waiting`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run status name that is not one of [`RunStatus::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown run status \"{0}\" (expected running, waiting, succeeded, failed, interrupted or cancelled)"
)]
pub struct UnknownStatus(pub String);

impl FromStr for RunStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RunStatus::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// One run (a RAGFlow session) as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run id, a ULID (uppercase); also the events' `task_id`.
    pub id: String,
    /// The canvas path as given on the command line, `-` for stdin.
    pub source: String,
    /// The canvas text as read (what resume runs).
    pub canvas: String,
    /// Hex SHA-256 of `canvas` (see [`canvas_hash`]).
    pub canvas_hash: String,
    /// Where the run stands.
    pub status: RunStatus,
    /// The run this one was started from, if any.
    pub parent: Option<String>,
    /// Creation time, Unix seconds.
    pub created_at: f64,
    /// Last change, Unix seconds.
    pub updated_at: f64,
    /// Turns begun so far.
    pub turns: u32,
    /// Why the last turn failed.
    pub error: Option<String>,
    /// The pending form while waiting for user input.
    pub waiting: Option<Value>,
    /// The options the run was started with (opaque to the store: the CLI's).
    pub options: Option<Value>,
}

impl RunRecord {
    /// A fresh running record with a new ULID, the canvas hash and the current time.
    pub fn new(source: impl Into<String>, canvas: impl Into<String>) -> RunRecord {
        let canvas = canvas.into();
        let now = unix_now();
        RunRecord {
            id: ulid::Ulid::new().to_string(),
            source: source.into(),
            canvas_hash: canvas_hash(&canvas),
            canvas,
            status: RunStatus::Running,
            parent: None,
            created_at: now,
            updated_at: now,
            turns: 0,
            error: None,
            waiting: None,
            options: None,
        }
    }
}

/// What kind of turn a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnKind {
    /// The run's first turn (`canvas run`).
    Start,
    /// Answers the form the run waits on.
    Answer,
    /// A next conversational turn (`canvas resume -q`).
    Next,
}

impl TurnKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnKind::Start => "start",
            TurnKind::Answer => "answer",
            TurnKind::Next => "next",
        }
    }
}

/// One turn of a run, as stored when it began.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// Its number (1 for the first).
    pub turn: u32,
    /// What started it.
    pub kind: TurnKind,
    /// `sys.query` given for it.
    pub query: String,
    /// Its `inputs` in API shape.
    pub inputs: Value,
    /// When it began, Unix seconds.
    pub started_at: f64,
    /// When it ended, if it did.
    pub ended_at: Option<f64>,
    /// The run's status when it ended.
    pub status: Option<RunStatus>,
}

/// How a turn ended: the run's new status, error and pending form.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    /// The run's status from now on.
    pub status: RunStatus,
    /// Why it failed or stopped.
    pub error: Option<String>,
    /// The pending form, when waiting.
    pub waiting: Option<Value>,
}

/// What one run writes in one commit: its events since the last write, a checkpoint,
/// and how the turn ended, all or nothing.
#[derive(Debug, Clone, Default)]
pub struct RunWrite {
    /// The run.
    pub run_id: String,
    /// The turn the events and checkpoint belong to.
    pub turn: u32,
    /// Events, in order, appended to the run's stream.
    pub events: Vec<EventChunk>,
    /// The run's state after them.
    pub checkpoint: Option<CheckpointWrite>,
    /// Set when the turn ends with this write.
    pub end: Option<TurnEnd>,
    /// Done before the rest: the run created, with its first turn (a write that makes
    /// a batch row's run commits with other runs' writes instead of alone).
    pub create: Option<Box<NewRun>>,
    /// Done after the rest: the end of the batch row the run was made for recorded.
    pub row_end: Option<Box<RowFinish>>,
}

/// A run a [`RunWrite`] creates: stored running with its first turn, its lease when it
/// has one, and tied to a batch row when it is one's.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// The run (its id is the write's).
    pub record: RunRecord,
    /// The first turn's kind.
    pub kind: TurnKind,
    /// Its query.
    pub query: String,
    /// Its inputs (an object).
    pub inputs: Value,
    /// The lease taken on it.
    pub lease: Option<NewLease>,
}

/// The lease a [`NewRun`] is created with.
#[derive(Debug, Clone)]
pub struct NewLease {
    /// The holder.
    pub owner: String,
    /// How long it lasts from now.
    pub ttl: Duration,
    /// The batch and row (0-based) the run is made for, which the holder must hold
    /// ([`StoreError::Leased`] else, and nothing is created).
    pub row: Option<(String, u64)>,
}

/// A batch row's end, recorded by a [`RunWrite`] of the row's run (see
/// [`Batches::finish_row`]).
#[derive(Debug, Clone)]
pub struct RowFinish {
    /// The batch.
    pub batch_id: String,
    /// The row (0-based).
    pub idx: u64,
    /// The worker holding it.
    pub owner: String,
    /// How it ended.
    pub end: RowEnd,
}

impl RunWrite {
    /// An empty write for `run_id`'s turn `turn`.
    pub fn new(run_id: impl Into<String>, turn: u32) -> RunWrite {
        RunWrite {
            run_id: run_id.into(),
            turn,
            ..RunWrite::default()
        }
    }
}

/// Hex SHA-256 of a canvas text (to notice a canvas file changed before a resume).
pub fn canvas_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused an operation.
    #[error("{context}: {source}")]
    Sqlite {
        /// What the store was doing.
        context: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// PostgreSQL refused an operation (or could not be reached).
    #[error("{context}: {}", postgres::one_line(.source))]
    Postgres {
        /// What the store was doing.
        context: String,
        /// The client's or the server's error.
        #[source]
        source: ::postgres::Error,
    },
    /// A store URL that cannot be used (shown without its password).
    #[error("invalid store URL {url}: {why}")]
    BadUrl {
        /// The URL, its password hidden.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// A blocking store (PostgreSQL) was called straight from a thread driving an async
    /// runtime, not through [`blocking`].
    #[error(
        "store: called from inside an async runtime, where a blocking PostgreSQL call would stall it (call it through canvas_store::blocking, or from a plain thread)"
    )]
    AsyncContext,
    /// No connection to the server became free in time.
    #[error("store: {0}")]
    Busy(String),
    /// No run has this id (or prefix).
    #[error("no run matches \"{0}\"")]
    NotFound(String),
    /// A prefix that matches more than one run.
    #[error("run id prefix \"{prefix}\" matches {} runs: {}", matches.len(), matches.join(", "))]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// The matching ids, newest first.
        matches: Vec<String>,
    },
    /// The file was written by a newer `canvas`; this one will not write to it.
    #[error("the store's schema version {found} is newer than this canvas supports ({supported})")]
    NewerSchema {
        /// The file's schema version.
        found: i64,
        /// The newest version this binary knows.
        supported: i64,
    },
    /// The file is an SQLite database, but not a run store (it is left as it is).
    #[error("{0}")]
    NotAStore(String),
    /// The file (or its directory) cannot be written, so runs cannot be stored in it.
    #[error("{0}")]
    ReadOnly(String),
    /// The store file or its directory could not be created.
    #[error("cannot create the store at {}: {source}", path.display())]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A stored JSON value (state, delta, form) could not be read or written.
    #[error("{context}: {source}")]
    Json {
        /// What the store was doing.
        context: String,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// Another process holds the run's lease.
    #[error("run {run_id} is being run by another process ({owner})")]
    Leased {
        /// The run.
        run_id: String,
        /// The lease holder.
        owner: String,
    },
    /// A value that must be unique is taken (an agent's title).
    #[error("{0}")]
    Duplicate(String),
    /// A stored value that this binary cannot read.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The run's checkpoints moved on without this process: another one runs it.
    #[error(
        "run {run_id} was checkpointed by another process (its checkpoint {found}, this process expected {expected}); stop here and resume it again"
    )]
    Conflict {
        /// The run.
        run_id: String,
        /// The newest stored checkpoint.
        found: i64,
        /// The one this process based its write on.
        expected: i64,
    },
    /// A group commit failed as a whole (every write in it is undone): the group's error,
    /// shared by each write of the group.
    #[error("{0}")]
    Group(std::sync::Arc<StoreError>),
    /// The writer thread is gone (it stopped after an earlier failure).
    #[error("the store's writer has stopped")]
    WriterGone,
}

/// What kind of trouble a [`StoreError`] is: what a user can do about it decides the
/// message and the exit code a command gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The file or its directory cannot be written (permissions, a read-only file system).
    ReadOnly,
    /// A write failed: the disk is full, a file-size limit or quota was reached, or the
    /// disk itself failed.
    WriteFailed,
    /// The file is not a run store, or a damaged one.
    Damaged,
    /// The file was written by a newer `canvas`.
    Newer,
    /// Anything else (a missing run, a busy store, a lease held elsewhere...).
    Other,
}

impl StoreError {
    /// The kind of trouble this is.
    pub fn fault(&self) -> Fault {
        match self {
            StoreError::Sqlite { source, .. } => sqlite_fault(source),
            StoreError::Postgres { source, .. } => postgres_fault(source),
            StoreError::NewerSchema { .. } => Fault::Newer,
            StoreError::NotAStore(_) | StoreError::Corrupt(_) | StoreError::Json { .. } => {
                Fault::Damaged
            }
            StoreError::ReadOnly(_) => Fault::ReadOnly,
            StoreError::Io { source, .. } => match source.kind() {
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                    Fault::ReadOnly
                }
                std::io::ErrorKind::StorageFull
                | std::io::ErrorKind::FileTooLarge
                | std::io::ErrorKind::QuotaExceeded => Fault::WriteFailed,
                _ => Fault::Other,
            },
            StoreError::Group(e) => e.fault(),
            StoreError::BadUrl { .. } | StoreError::AsyncContext | StoreError::Busy(_) => {
                Fault::Other
            }
            StoreError::NotFound(_)
            | StoreError::Ambiguous { .. }
            | StoreError::Leased { .. }
            | StoreError::Duplicate(_)
            | StoreError::Conflict { .. }
            | StoreError::WriterGone => Fault::Other,
        }
    }

    /// What went wrong, without what the store was doing: SQLite's own words for its
    /// errors (`database or disk is full`), the whole message otherwise.
    pub fn reason(&self) -> String {
        match self {
            StoreError::Sqlite { source, .. } => source.to_string(),
            StoreError::Json { source, .. } => source.to_string(),
            StoreError::Io { source, .. } => source.to_string(),
            StoreError::Group(e) => e.reason(),
            other => other.to_string(),
        }
    }
}

/// The fault of an SQLite error, by its primary result code.
fn sqlite_fault(e: &rusqlite::Error) -> Fault {
    use rusqlite::ErrorCode as C;
    match e.sqlite_error_code() {
        Some(C::ReadOnly) => Fault::ReadOnly,
        Some(C::DiskFull | C::SystemIoFailure) => Fault::WriteFailed,
        Some(C::DatabaseCorrupt | C::NotADatabase) => Fault::Damaged,
        _ => Fault::Other,
    }
}

/// The fault of a PostgreSQL error, by its SQLSTATE.
fn postgres_fault(e: &::postgres::Error) -> Fault {
    use ::postgres::error::SqlState as S;
    match e.code() {
        Some(c) if *c == S::DISK_FULL || *c == S::OUT_OF_MEMORY => Fault::WriteFailed,
        Some(c) if *c == S::READ_ONLY_SQL_TRANSACTION || *c == S::INSUFFICIENT_PRIVILEGE => {
            Fault::ReadOnly
        }
        Some(c) if *c == S::DATA_CORRUPTED || *c == S::INDEX_CORRUPTED => Fault::Damaged,
        _ => Fault::Other,
    }
}

/// The store's result type.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Durable storage of runs, their events and checkpoints, of batches of runs, and of
/// `canvas serve`'s agents and sessions (SQLite or PostgreSQL). Calls block: from async code, make them through [`call`] (or
/// [`blocking`]).
pub trait Store: Batches + Agents + Send + Sync {
    /// Whether its calls return in microseconds (a local file): async code then makes
    /// them in place rather than hand its thread's tasks over first ([`call`]).
    fn calls_are_quick(&self) -> bool {
        false
    }

    /// Insert a new run.
    fn create_run(&self, rec: &RunRecord) -> Result<()>;
    /// Insert a new run and record its first turn, in one transaction (so a run never
    /// exists without the query and inputs it was started with); returns the turn number.
    fn create_run_with_turn(
        &self,
        rec: &RunRecord,
        kind: TurnKind,
        query: &str,
        inputs: &Value,
    ) -> Result<u32>;
    /// [`create_run_with_turn`](Store::create_run_with_turn) with the run's lease taken
    /// for `owner` in the same transaction: a new run is never seen unheld by a `prune`
    /// or another process.
    fn create_run_leased(
        &self,
        rec: &RunRecord,
        turn: (TurnKind, &str, &Value),
        owner: &str,
        ttl: Duration,
    ) -> Result<u32>;
    /// A run by full id, `latest` (newest created) or unique case-insensitive prefix.
    fn find_run(&self, id_or_prefix: &str) -> Result<RunRecord>;
    /// Runs newest first, optionally of one status; `limit` 0 means all.
    fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>>;
    /// How many runs there are, optionally of one status (what `list_runs` without a
    /// limit would list).
    fn count_runs(&self, status: Option<RunStatus>) -> Result<u64>;
    /// Group commit: every write in one transaction, each write all or nothing on its
    /// own (one failing leaves the others in). The outer error fails them all.
    fn write(&self, writes: &[RunWrite]) -> Result<Vec<Result<()>>>;
    /// One write, committed before this returns.
    fn write_one(&self, write: RunWrite) -> Result<()> {
        self.write(std::slice::from_ref(&write))?
            .pop()
            .unwrap_or(Ok(()))
    }
    /// The run's latest checkpoint, as the planner of its next ones (its state is `None`
    /// when the run has no checkpoint yet).
    fn load_checkpoint(&self, run_id: &str) -> Result<Checkpointer>;
    /// Every stored event of the run, in order, as the JSON lines emitted.
    fn events(&self, run_id: &str) -> Result<Vec<String>>;
    /// The stored events of one turn, in order.
    fn events_of_turn(&self, run_id: &str, turn: u32) -> Result<Vec<String>>;
    /// Set the status, error and pending form (`None` clears them), and `updated_at`.
    fn set_status(
        &self,
        run_id: &str,
        status: RunStatus,
        error: Option<&str>,
        waiting: Option<&Value>,
    ) -> Result<()>;
    /// Record a new turn and mark the run running; returns its number (1 for the first).
    fn begin_turn(&self, run_id: &str, kind: TurnKind, query: &str, inputs: &Value) -> Result<u32>;
    /// The run's latest turn, `None` before the first.
    fn last_turn(&self, run_id: &str) -> Result<Option<TurnRecord>>;
    /// Take the run's lease for `ttl`: true when it was free, expired or already ours.
    fn acquire_lease(&self, run_id: &str, owner: &str, ttl: Duration) -> Result<bool>;
    /// Extend our lease by `ttl`; [`StoreError::Leased`] when another owner holds it.
    fn renew_lease(&self, run_id: &str, owner: &str, ttl: Duration) -> Result<()>;
    /// Give the lease up (no-op when `owner` does not hold it).
    fn release_lease(&self, run_id: &str, owner: &str) -> Result<()>;
    /// The current, unexpired lease holder.
    fn lease_owner(&self, run_id: &str) -> Result<Option<String>>;
    /// Ask the process running the run to stop at the next node boundary.
    fn request_cancel(&self, run_id: &str) -> Result<()>;
    /// True when a cancel was requested and not cleared.
    fn cancel_requested(&self, run_id: &str) -> Result<bool>;
    /// Forget a cancel request (done when a run is resumed).
    fn clear_cancel(&self, run_id: &str) -> Result<()>;
    /// The runs a prune with `filter` deletes, newest first; never a run a live process
    /// holds the lease of, nor one just stored whose lease is about to be taken.
    fn select_prunable(&self, filter: &PruneFilter) -> Result<Vec<RunRecord>>;
    /// About how many bytes these runs and every row referencing them hold.
    fn run_bytes(&self, ids: &[String]) -> Result<u64>;
    /// Delete these runs and (by cascade) all that references them, a few runs per
    /// transaction, skipping a run a live process holds; returns how many went.
    fn delete_runs(&self, ids: &[String]) -> Result<usize>;
    /// Give the space of deleted rows back to the file system (the file shrinks).
    fn reclaim(&self) -> Result<Reclaimed>;
    /// How big the store is: bytes on disk, pages, free pages, runs and events.
    fn size(&self) -> Result<StoreSize>;
}

/// Where a store is: a SQLite file, or a PostgreSQL database (`postgres://…` or
/// `postgresql://…`). Shown, it never holds a password.
#[derive(Debug, Clone)]
pub enum Location {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database and schema.
    Postgres(Box<PgUrl>),
}

impl Location {
    /// A `--store` value: a PostgreSQL URL, else a file path.
    pub fn parse(value: &std::path::Path) -> Result<Location> {
        match value.to_str() {
            Some(s) if PgUrl::is_postgres(s) => Ok(Location::Postgres(Box::new(PgUrl::parse(s)?))),
            _ => Ok(Location::File(value.to_path_buf())),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(u) => write!(f, "{u}"),
        }
    }
}

/// The default store file: `$CANVAS_STORE`, else `$XDG_DATA_HOME/canvas/canvas.db`, else
/// `$HOME/.local/share/canvas/canvas.db`.
pub fn default_path() -> PathBuf {
    default_path_from(|k| std::env::var_os(k))
}

fn default_path_from(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let set = |k: &str| var(k).filter(|v| !v.is_empty());
    if let Some(p) = set("CANVAS_STORE") {
        return PathBuf::from(p);
    }
    // XDG: a relative XDG_DATA_HOME is invalid and ignored.
    if let Some(p) = set("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return p.join("canvas").join("canvas.db");
    }
    match set("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/canvas/canvas.db"),
        None => PathBuf::from("canvas.db"),
    }
}

/// Now, in Unix seconds.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_round_trip() {
        for st in RunStatus::ALL {
            assert_eq!(st.as_str().parse::<RunStatus>(), Ok(st));
            assert_eq!(serde_json::to_value(st).unwrap(), st.as_str());
        }
        assert_eq!("Waiting".parse::<RunStatus>(), Ok(RunStatus::Waiting));
        let e = "done".parse::<RunStatus>().unwrap_err();
        assert!(e.to_string().starts_with("unknown run status \"done\""));
    }

    #[test]
    fn canvas_hash_is_hex_sha256() {
        assert_eq!(
            canvas_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let rec = RunRecord::new("-", "{}");
        assert_eq!(rec.canvas_hash, canvas_hash("{}"));
        assert_eq!(rec.id.len(), 26);
        assert_eq!(rec.status, RunStatus::Running);
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn default_path_order() {
        let all = [
            ("CANVAS_STORE", "/s/c.db"),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(default_path_from(env(&all)), PathBuf::from("/s/c.db"));
        let xdg = [
            ("CANVAS_STORE", ""),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(
            default_path_from(env(&xdg)),
            PathBuf::from("/x/canvas/canvas.db")
        );
        let home = [("XDG_DATA_HOME", "rel"), ("HOME", "/h")];
        let want = PathBuf::from("/h/.local/share/canvas/canvas.db");
        assert_eq!(default_path_from(env(&home)), want);
        assert_eq!(default_path_from(env(&[])), PathBuf::from("canvas.db"));
    }
}
