//! [`SqliteStore`]: the [`Store`] on one SQLite file (WAL, 30 s busy timeout) that many
//! processes may share.
//!
//! Every write is one `BEGIN IMMEDIATE` transaction, so waiting writers queue on the
//! busy timeout instead of failing with "database is locked"; a group of runs' writes
//! ([`Store::write`]) is one transaction with a savepoint per write. What is stored, and
//! how, is shared with the other backends ([`rows`](super::rows)); this file gives its
//! SQL. The `events` rows and plain-text checkpoints of older versions are still read.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::types::Value as SqlValue;
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Params, Row, Transaction, TransactionBehavior, params,
};
use serde_json::Value;

mod agents;
mod batch;
mod retention;
mod schema;

pub use schema::SCHEMA_VERSION;

use super::record::{RawRun, RawTurn, like_prefix, one_match, to_json};
use super::rows::{
    self, Body, Candidate, CheckpointRow, ChunkRow, FirstTurn, LeaseRow, NewCheckpoint, NewChunk,
    PruneQuery, Rows, TurnEndRow,
};
use super::{
    Checkpointer, PruneFilter, Reclaimed, Result, RowFinish, RunRecord, RunStatus, RunWrite, Store,
    StoreError, StoreSize, TurnKind, TurnRecord, lease, record::MAX_MATCHES, unix_now,
};
use schema::sql;

/// The WAL is checkpointed into the file once it holds 256 pages (1 MiB), and cut back
/// to 1 MiB when it outgrew that.
const WAL_LIMITS: &str = "PRAGMA wal_autocheckpoint = 256; PRAGMA journal_size_limit = 1048576;";

/// How long a writer waits for another process's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// A run's columns, its canvas text from `canvases` (one row per distinct canvas: the
/// run's row stays small, so the updates a turn makes to it stay cheap); with
/// [`RUN_FROM`].
pub(crate) const RUN_FIELDS: &str = "r.id, r.source, c.text, r.canvas_hash, r.status, r.parent, \
                                     r.created_at, r.updated_at, r.turns, r.error, r.waiting, \
                                     r.options";
/// The tables [`RUN_FIELDS`] come from.
pub(crate) const RUN_FROM: &str = "runs r JOIN canvases c ON c.hash = r.canvas_hash";

/// The SQLite implementation of [`Store`].
pub struct SqliteStore {
    inner: Mutex<Inner>,
    path: Option<PathBuf>,
}

pub(crate) struct Inner {
    pub(crate) conn: Connection,
    /// Checkpoint bytes (as stored) written by this store.
    checkpoint_bytes: u64,
    /// The writes' buffer for joining event chunks, kept from one write to the next.
    joined: String,
}

/// What an operation was, for error messages (formatted only on error).
#[derive(Clone, Copy)]
struct Op<'a>(&'static str, &'a str);

impl Op<'_> {
    fn err(self, e: rusqlite::Error) -> StoreError {
        if self.1.is_empty() {
            return sql(self.0, e);
        }
        sql(&format!("{} (run {})", self.0, self.1), e)
    }
}

/// Execute a cached statement; the number of rows changed.
fn exec(c: &Connection, op: Op<'_>, q: &str, p: impl Params) -> Result<usize> {
    c.prepare_cached(q)
        .and_then(|mut s| s.execute(p))
        .map_err(|e| op.err(e))
}

/// The first row of a cached query, if any.
fn one<T>(
    c: &Connection,
    op: Op<'_>,
    q: &str,
    p: impl Params,
    f: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Option<T>> {
    c.prepare_cached(q)
        .and_then(|mut s| s.query_row(p, f).optional())
        .map_err(|e| op.err(e))
}

/// Every row of a cached query.
fn all<T>(
    c: &Connection,
    op: Op<'_>,
    q: &str,
    p: impl Params,
    f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    c.prepare_cached(q)
        .and_then(|mut s| s.query_map(p, f)?.collect())
        .map_err(|e| op.err(e))
}

impl SqliteStore {
    /// Open (creating it, its directory, and the schema as needed) the store at `path`.
    /// A new file is created readable by its owner only.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore> {
        let path = path.as_ref();
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        if path.is_dir() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "it is a directory, not a store file",
            )));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if dir.exists() && !dir.is_dir() {
                return Err(io(std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    format!("{} is not a directory", dir.display()),
                )));
            }
            create_private_dir(dir).map_err(io)?;
        }
        create_private_file(path).map_err(io)?;
        let conn =
            Connection::open(path).map_err(|e| sql(&format!("opening {}", path.display()), e))?;
        // Set first: a file refused below (newer, damaged, another program's) must not
        // have its write-ahead log folded into it when the connection closes.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(|e| sql("configuring the connection", e))?;
        let store = SqliteStore::setup(conn, Some(path.to_path_buf()))?;
        restrict_side_files(path);
        Ok(store)
    }

    /// Open an existing store for reading only: nothing is created, migrated or switched
    /// (for `runs`, `show`, `events`). Writes through it fail. `None` when the file holds
    /// no store yet (a process was killed while creating it).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Option<SqliteStore>> {
        let path = path.as_ref();
        if path.is_dir() {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "it is a directory, not a store file",
                ),
            });
        }
        // Read-write without CREATE, then `query_only`: a store left by a killed writer
        // needs its WAL recovered on open, which a read-only connection cannot do.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| sql(&format!("opening {}", path.display()), e))?;
        // Reading must not fold the WAL into the file when it closes (a write, with
        // fsyncs): the writers leave that to the WAL's own checkpoints. And a file
        // refused below must be left as it is.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(|e| sql("configuring the connection", e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| sql("setting the busy timeout", e))?;
        conn.pragma_update(None, "query_only", true)
            .map_err(|e| sql("making the connection read-only", e))?;
        let version = schema::check_file(&conn)?;
        if version == 0 {
            return Ok(None);
        }
        let inner = Inner {
            conn,
            checkpoint_bytes: 0,
            joined: String::new(),
        };
        Ok(Some(SqliteStore {
            inner: Mutex::new(inner),
            path: Some(path.to_path_buf()),
        }))
    }

    /// A private in-memory store (tests).
    pub fn open_in_memory() -> Result<SqliteStore> {
        let conn =
            Connection::open_in_memory().map_err(|e| sql("opening an in-memory store", e))?;
        SqliteStore::setup(conn, None)
    }

    /// The file, `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Checkpoint bytes (full snapshots and deltas) this store has written.
    pub fn checkpoint_bytes_written(&self) -> u64 {
        self.lock().checkpoint_bytes
    }

    fn setup(mut conn: Connection, path: Option<PathBuf>) -> Result<SqliteStore> {
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| sql("setting the busy timeout", e))?;
        // Nothing is written (WAL mode included) before the file is known to be a run
        // store this binary can write: a newer store, another program's database, a
        // damaged file or one this user cannot write is refused and left as it is.
        schema::check_file(&conn)?;
        let read_only = conn
            .is_readonly(rusqlite::DatabaseName::Main)
            .map_err(|e| sql("opening the store", e))?;
        if read_only {
            return Err(StoreError::ReadOnly(
                "the file is not writable by this user".into(),
            ));
        }
        // Before WAL mode writes the file's first page: a new store can shrink.
        retention::incremental_vacuum_if_new(&conn)?;
        if path.is_some() {
            set_wal(&conn)?;
            // The last connection to close would fold the WAL into the file, with two
            // fsyncs and the WAL's removal (and its re-creation, with a directory fsync,
            // by the next process): a millisecond or more on every short run. The WAL
            // stays instead, kept small by checkpoints as it grows (on the writer's
            // commits), so the next process's recovery of it stays cheap.
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
                .map_err(|e| sql("configuring the connection", e))?;
            conn.execute_batch(WAL_LIMITS)
                .map_err(|e| sql("configuring the connection", e))?;
        }
        // A 1 MiB page cache (SQLite's default is 2 MiB): a run's writes are small
        // groups of pages, and the cache is most of the memory a short run uses.
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -1024;",
        )
        .map_err(|e| sql("configuring the connection", e))?;
        schema::migrate(&mut conn)?;
        conn.set_prepared_statement_cache_capacity(32);
        let inner = Inner {
            conn,
            checkpoint_bytes: 0,
            joined: String::new(),
        };
        Ok(SqliteStore {
            inner: Mutex::new(inner),
            path,
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic mid-transaction rolled it back when the transaction was dropped.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `f` in one `BEGIN IMMEDIATE` transaction.
    fn write<T>(&self, op: Op<'_>, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut g = self.lock();
        let tx = g
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| op.err(e))?;
        let out = f(&tx)?;
        tx.commit().map_err(|e| op.err(e))?;
        Ok(out)
    }

    /// Insert `run` and do `f`, in one `BEGIN IMMEDIATE` transaction.
    pub(crate) fn write_with_run(
        &self,
        run: &RunRecord,
        f: impl FnOnce(&Transaction<'_>) -> Result<()>,
    ) -> Result<()> {
        let op = Op("creating the run", &run.id);
        self.write(op, |tx| {
            insert_run(tx, op, run, run.turns, run.status)?;
            f(tx)
        })
    }

    /// The run's turns, in order; `NotFound` when there is no such run.
    pub(crate) fn all_turns(&self, run_id: &str) -> Result<Vec<TurnRecord>> {
        let op = Op("reading the turns", run_id);
        let g = self.lock();
        let q = "SELECT turn, kind, query, inputs, started_at, ended_at, status FROM turns
                 WHERE run_id = ?1 ORDER BY turn";
        let rows = all(&g.conn, op, q, [run_id], |r| {
            Ok(RawTurn {
                turn: r.get(0)?,
                kind: r.get(1)?,
                query: r.get(2)?,
                inputs: r.get(3)?,
                started_at: r.get(4)?,
                ended_at: r.get(5)?,
                status: r.get(6)?,
            })
        })?;
        if rows.is_empty() && !SqliteRows::new(&g.conn, op.0).run_exists(run_id)? {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        rows.into_iter().map(|r| r.into_record(run_id)).collect()
    }

    /// A write of one statement to the run's row; `NotFound` when there is no such run.
    fn update_run(&self, op: Op<'_>, q: &str, p: impl Params) -> Result<()> {
        if self.write(op, |tx| exec(tx, op, q, p))? == 0 {
            return Err(StoreError::NotFound(op.1.to_string()));
        }
        Ok(())
    }

    fn get_run(c: &Connection, id: &str) -> Result<Option<RunRecord>> {
        let q = format!("SELECT {RUN_FIELDS} FROM {RUN_FROM} WHERE r.id = ?1");
        let raw = one(c, Op("reading the run", id), &q, [id], read_run)?;
        raw.map(RawRun::into_record).transpose()
    }

    /// Insert the run of `t` with its first turn (and its lease), in one transaction.
    fn create_first_turn(&self, t: &FirstTurn<'_>) -> Result<u32> {
        self.write(Op("creating the run", &t.rec.id), |tx| {
            insert_first_turn(tx, t)?;
            Ok(1)
        })
    }

    fn take_lease(&self, run_id: &str, owner: &str, ttl: Duration) -> Result<bool> {
        let op = Op("taking the lease", run_id);
        self.write(op, |tx| {
            let now = unix_now();
            let n = exec(
                tx,
                op,
                "UPDATE runs SET lease_owner = ?2, lease_expires = ?3 WHERE id = ?1
                 AND (lease_owner IS NULL OR lease_owner = ?2
                      OR lease_expires IS NULL OR lease_expires <= ?4)",
                params![run_id, owner, now + ttl.as_secs_f64(), now],
            )?;
            if n == 1 {
                return Ok(true);
            }
            let holder: Option<Option<String>> = one(
                tx,
                op,
                "SELECT lease_owner FROM runs WHERE id = ?1",
                [run_id],
                |r| r.get(0),
            )?;
            let Some(holder) = holder else {
                return Err(StoreError::NotFound(run_id.to_string()));
            };
            // A lease held by a process of this machine that is gone is stale at once:
            // a killed run can be resumed without waiting for the lease to expire.
            match holder {
                Some(h) if lease::holder_is_dead(&h) => {
                    let n = exec(
                        tx,
                        op,
                        "UPDATE runs SET lease_owner = ?2, lease_expires = ?3
                         WHERE id = ?1 AND lease_owner = ?4",
                        params![run_id, owner, now + ttl.as_secs_f64(), h],
                    )?;
                    Ok(n == 1)
                }
                _ => Ok(false),
            }
        })
    }

    /// The run's events as JSON lines, in order (`turn` narrows them to one turn).
    fn event_lines(&self, run_id: &str, turn: Option<u32>) -> Result<Vec<String>> {
        let g = self.lock();
        rows::event_lines(
            &mut SqliteRows::new(&g.conn, "reading the events"),
            run_id,
            turn,
        )
    }
}

/// A stored checkpoint body as JSON text: compressed (a blob) or, as older versions
/// wrote it, plain text.
fn body_of(v: SqlValue) -> rusqlite::Result<Body> {
    match v {
        SqlValue::Blob(b) => Ok(Body::Packed(b)),
        SqlValue::Text(t) => Ok(Body::Text(t)),
        _ => Ok(Body::Invalid),
    }
}

/// The row operations of [`rows`] on one SQLite connection (in its caller's transaction).
pub(crate) struct SqliteRows<'c> {
    c: &'c Connection,
    /// What the store is doing, for error messages.
    what: &'static str,
}

impl<'c> SqliteRows<'c> {
    pub(crate) fn new(c: &'c Connection, what: &'static str) -> SqliteRows<'c> {
        SqliteRows { c, what }
    }

    fn op<'a>(&self, run_id: &'a str) -> Op<'a> {
        Op(self.what, run_id)
    }
}

impl Rows for SqliteRows<'_> {
    fn run_exists(&mut self, run_id: &str) -> Result<bool> {
        let q = "SELECT 1 FROM runs WHERE id = ?1";
        Ok(one(self.c, self.op(run_id), q, [run_id], |_| Ok(()))?.is_some())
    }

    fn last_event_seq(&mut self, run_id: &str) -> Result<i64> {
        let op = self.op(run_id);
        let chunked: Option<i64> = one(
            self.c,
            op,
            "SELECT seq + n - 1 FROM event_chunks WHERE run_id = ?1 ORDER BY seq DESC LIMIT 1",
            [run_id],
            |r| r.get(0),
        )?;
        if let Some(n) = chunked {
            return Ok(n);
        }
        let q = "SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?1";
        Ok(one(self.c, op, q, [run_id], |r| r.get(0))?.unwrap_or(0))
    }

    fn insert_chunk(&mut self, c: &NewChunk<'_>) -> Result<()> {
        exec(
            self.c,
            self.op(c.run_id),
            "INSERT INTO event_chunks (run_id, seq, n, turn, message_id, created_at, body, cuts)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                c.run_id,
                c.chunk.seq,
                c.chunk.n,
                c.turn,
                c.chunk.message_id,
                c.chunk.created_at,
                c.chunk.body,
                c.chunk.cuts
            ],
        )
        .map(drop)
    }

    fn last_checkpoint_seq(&mut self, run_id: &str) -> Result<i64> {
        let q = "SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE run_id = ?1";
        Ok(one(self.c, self.op(run_id), q, [run_id], |r| r.get(0))?.unwrap_or(0))
    }

    fn insert_checkpoint(&mut self, c: &NewCheckpoint<'_>) -> Result<()> {
        exec(
            self.c,
            self.op(c.run_id),
            "INSERT INTO checkpoints (run_id, seq, turn, kind, body, cuts)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                c.run_id,
                c.seq,
                c.turn,
                if c.full { "full" } else { "delta" },
                c.body,
                c.cuts
            ],
        )
        .map(drop)
    }

    fn drop_checkpoints_before(&mut self, run_id: &str, seq: i64) -> Result<()> {
        let q = "DELETE FROM checkpoints WHERE run_id = ?1 AND seq < ?2";
        exec(self.c, self.op(run_id), q, params![run_id, seq]).map(drop)
    }

    fn ref_blob(&mut self, run_id: &str, hash: &str) -> Result<bool> {
        let op = self.op(run_id);
        let q = "INSERT OR IGNORE INTO blob_refs (run_id, hash) VALUES (?1, ?2)";
        exec(self.c, op, q, params![run_id, hash])?;
        let q = "SELECT 1 FROM blobs WHERE hash = ?1";
        Ok(one(self.c, op, q, [hash], |_| Ok(()))?.is_some())
    }

    fn insert_blob(&mut self, run_id: &str, hash: &str, body: &[u8]) -> Result<()> {
        // The reference was noted by `ref_blob`, which found no blob.
        let q = "INSERT INTO blobs (hash, body) VALUES (?1, ?2)";
        exec(self.c, self.op(run_id), q, params![hash, body]).map(drop)
    }

    fn create_run(&mut self, t: &FirstTurn<'_>) -> Result<()> {
        insert_first_turn(self.c, t)
    }

    fn finish_row(&mut self, f: &RowFinish) -> Result<()> {
        batch::record_row_end(self.c, &f.batch_id, f.idx, &f.owner, &f.end)
    }

    fn end_turn(&mut self, run_id: &str, turn: u32, end: &TurnEndRow<'_>) -> Result<()> {
        let op = self.op(run_id);
        exec(
            self.c,
            op,
            "UPDATE runs SET status = ?2, error = ?3, waiting = ?4, updated_at = ?5 WHERE id = ?1",
            params![run_id, end.status.as_str(), end.error, end.waiting, end.now],
        )?;
        exec(
            self.c,
            op,
            "UPDATE turns SET ended_at = ?3, status = ?4 WHERE run_id = ?1 AND turn = ?2",
            params![run_id, turn, end.now, end.status.as_str()],
        )
        .map(drop)
    }

    fn blob(&mut self, run_id: &str, hash: &str) -> Result<Option<Vec<u8>>> {
        let q = "SELECT body FROM blobs WHERE hash = ?1";
        one(self.c, self.op(run_id), q, [hash], |r| r.get(0))
    }

    fn legacy_events(&mut self, run_id: &str, turn: Option<u32>) -> Result<Vec<String>> {
        all(
            self.c,
            self.op(run_id),
            "SELECT body FROM events WHERE run_id = ?1 AND (?2 IS NULL OR turn = ?2)
             ORDER BY seq",
            params![run_id, turn],
            |r| r.get(0),
        )
    }

    fn chunks(&mut self, run_id: &str, turn: Option<u32>) -> Result<Vec<ChunkRow>> {
        all(
            self.c,
            self.op(run_id),
            "SELECT seq, n, message_id, created_at, body, cuts FROM event_chunks
             WHERE run_id = ?1 AND (?2 IS NULL OR turn = ?2) ORDER BY seq",
            params![run_id, turn],
            |r| {
                Ok(ChunkRow {
                    seq: r.get(0)?,
                    n: r.get(1)?,
                    message_id: r.get(2)?,
                    created_at: r.get(3)?,
                    body: r.get(4)?,
                    cuts: r.get(5)?,
                })
            },
        )
    }

    fn last_full_checkpoint(&mut self, run_id: &str) -> Result<Option<CheckpointRow>> {
        one(
            self.c,
            self.op(run_id),
            "SELECT seq, body, cuts FROM checkpoints WHERE run_id = ?1 AND kind = 'full'
             ORDER BY seq DESC LIMIT 1",
            [run_id],
            read_checkpoint,
        )
    }

    fn checkpoints_after(&mut self, run_id: &str, seq: i64) -> Result<Vec<CheckpointRow>> {
        all(
            self.c,
            self.op(run_id),
            "SELECT seq, body, cuts FROM checkpoints WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
            params![run_id, seq],
            read_checkpoint,
        )
    }

    fn lease_clock(&mut self) -> Result<f64> {
        // One machine: its clock stamps the leases.
        Ok(unix_now())
    }

    fn prune_candidates(&mut self, q: &PruneQuery<'_>) -> Result<Vec<Candidate>> {
        retention::prune_candidates(self.c, q)
    }

    fn live_leases(&mut self, ids: &[String], now: f64) -> Result<Vec<LeaseRow>> {
        retention::live_leases(self.c, ids, now)
    }

    fn delete_runs(&mut self, ids: &[&str], starting: f64) -> Result<usize> {
        retention::delete_runs(self.c, ids, starting)
    }
}

fn read_checkpoint(r: &Row<'_>) -> rusqlite::Result<CheckpointRow> {
    Ok(CheckpointRow {
        seq: r.get(0)?,
        body: body_of(r.get(1)?)?,
        cuts: r.get(2)?,
    })
}

impl Store for SqliteStore {
    fn calls_are_quick(&self) -> bool {
        // A local file: a call is microseconds, unless another process holds the write
        // lock (then it waits out the busy timeout, as the process's other work would).
        true
    }

    fn create_run(&self, rec: &RunRecord) -> Result<()> {
        let op = Op("creating the run", &rec.id);
        self.write(op, |tx| insert_run(tx, op, rec, rec.turns, rec.status))
    }

    fn create_run_with_turn(
        &self,
        rec: &RunRecord,
        kind: TurnKind,
        query: &str,
        inputs: &Value,
    ) -> Result<u32> {
        self.create_first_turn(&FirstTurn::new(rec, (kind, query, inputs), None))
    }

    fn create_run_leased(
        &self,
        rec: &RunRecord,
        turn: (TurnKind, &str, &Value),
        owner: &str,
        ttl: Duration,
    ) -> Result<u32> {
        self.create_first_turn(&FirstTurn::new(rec, turn, Some((owner, ttl))))
    }

    fn find_run(&self, id_or_prefix: &str) -> Result<RunRecord> {
        let q = id_or_prefix.trim();
        let not_found = || StoreError::NotFound(id_or_prefix.to_string());
        if q.is_empty() {
            return Err(not_found());
        }
        let g = self.lock();
        if let Some(rec) = SqliteStore::get_run(&g.conn, q)? {
            return Ok(rec);
        }
        let op = Op("finding the run", q);
        let ids: Vec<String> = if q.eq_ignore_ascii_case("latest") {
            let newest = "SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT 1";
            all(&g.conn, op, newest, [], |r| r.get(0))?
        } else {
            // LIKE is case-insensitive for ASCII.
            all(
                &g.conn,
                op,
                "SELECT id FROM runs WHERE id LIKE ?1 ESCAPE '\\'
                 ORDER BY created_at DESC, id DESC LIMIT ?2",
                params![like_prefix(q), MAX_MATCHES as i64 + 1],
                |r| r.get(0),
            )?
        };
        match one_match(q, ids)? {
            Some(id) => SqliteStore::get_run(&g.conn, &id)?.ok_or_else(not_found),
            None => Err(not_found()),
        }
    }

    fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>> {
        // SQLite reads a negative LIMIT as none.
        let limit = if limit == 0 {
            -1
        } else {
            i64::try_from(limit).unwrap_or(i64::MAX)
        };
        let q = format!(
            "SELECT {RUN_FIELDS} FROM {RUN_FROM} WHERE (?1 IS NULL OR r.status = ?1)
             ORDER BY r.created_at DESC, r.id DESC LIMIT ?2"
        );
        let p = params![status.map(RunStatus::as_str), limit];
        let g = self.lock();
        let raws = all(&g.conn, Op("listing runs", "*"), &q, p, read_run)?;
        raws.into_iter().map(RawRun::into_record).collect()
    }

    fn count_runs(&self, status: Option<RunStatus>) -> Result<u64> {
        let q = "SELECT COUNT(*) FROM runs WHERE (?1 IS NULL OR status = ?1)";
        let g = self.lock();
        let n = one(
            &g.conn,
            Op("counting runs", "*"),
            q,
            params![status.map(RunStatus::as_str)],
            |r| r.get::<_, i64>(0),
        )?;
        Ok(n.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
    }

    fn write(&self, writes: &[RunWrite]) -> Result<Vec<Result<()>>> {
        let op = Op("committing a group of writes", "");
        let mut g = self.lock();
        let Inner {
            conn,
            checkpoint_bytes,
            joined,
        } = &mut *g;
        let mut tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| op.err(e))?;
        let mut results = Vec::with_capacity(writes.len());
        let mut bytes = 0;
        for w in writes {
            let mut sp = tx.savepoint().map_err(|e| op.err(e))?;
            let r = rows::write_run(&mut SqliteRows::new(&sp, "committing"), w, joined);
            let r = match r {
                Ok(written) => {
                    sp.commit().map_err(|e| op.err(e))?;
                    bytes += written;
                    Ok(())
                }
                Err(e) => {
                    sp.rollback().map_err(|e| op.err(e))?;
                    Err(e)
                }
            };
            results.push(r);
        }
        tx.commit().map_err(|e| op.err(e))?;
        *checkpoint_bytes += bytes;
        Ok(results)
    }

    fn load_checkpoint(&self, run_id: &str) -> Result<Checkpointer> {
        let op = Op("reading the checkpoint", run_id);
        let texts = {
            let mut g = self.lock();
            // One read transaction: the snapshot and its deltas as of one moment.
            let tx = g.conn.transaction().map_err(|e| op.err(e))?;
            let texts = rows::checkpoint_texts(
                &mut SqliteRows::new(&tx, "reading the checkpoint"),
                run_id,
            )?;
            tx.commit().map_err(|e| op.err(e))?;
            texts
        };
        rows::rebuild(run_id, texts)
    }

    fn events(&self, run_id: &str) -> Result<Vec<String>> {
        self.event_lines(run_id, None)
    }

    fn events_of_turn(&self, run_id: &str, turn: u32) -> Result<Vec<String>> {
        self.event_lines(run_id, Some(turn))
    }

    fn set_status(
        &self,
        run_id: &str,
        status: RunStatus,
        error: Option<&str>,
        waiting: Option<&Value>,
    ) -> Result<()> {
        let waiting = waiting.map(to_json).transpose()?;
        self.update_run(
            Op("setting the status", run_id),
            "UPDATE runs SET status = ?2, error = ?3, waiting = ?4, updated_at = ?5 WHERE id = ?1",
            params![run_id, status.as_str(), error, waiting, unix_now()],
        )
    }

    fn begin_turn(&self, run_id: &str, kind: TurnKind, query: &str, inputs: &Value) -> Result<u32> {
        let op = Op("beginning a turn", run_id);
        let inputs = to_json(inputs)?;
        let q = "UPDATE runs SET turns = turns + 1, status = 'running', error = NULL,
                 waiting = NULL, updated_at = ?2 WHERE id = ?1 RETURNING turns";
        let now = unix_now();
        let turns: Option<i64> = self.write(op, |tx| {
            let n: Option<i64> = one(tx, op, q, params![run_id, now], |r| r.get(0))?;
            if let Some(n) = n {
                exec(
                    tx,
                    op,
                    "INSERT INTO turns (run_id, turn, kind, query, inputs, started_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![run_id, n, kind.as_str(), query, inputs, now],
                )?;
            }
            Ok(n)
        })?;
        let turns = turns.ok_or_else(|| StoreError::NotFound(run_id.to_string()))?;
        u32::try_from(turns)
            .map_err(|_| StoreError::Corrupt(format!("run {run_id} has {turns} turns")))
    }

    fn last_turn(&self, run_id: &str) -> Result<Option<TurnRecord>> {
        let op = Op("reading the last turn", run_id);
        let g = self.lock();
        let q = "SELECT turn, kind, query, inputs, started_at, ended_at, status FROM turns
                 WHERE run_id = ?1 ORDER BY turn DESC LIMIT 1";
        let row = one(&g.conn, op, q, [run_id], |r| {
            Ok(RawTurn {
                turn: r.get(0)?,
                kind: r.get(1)?,
                query: r.get(2)?,
                inputs: r.get(3)?,
                started_at: r.get(4)?,
                ended_at: r.get(5)?,
                status: r.get(6)?,
            })
        })?;
        match row {
            Some(raw) => raw.into_record(run_id).map(Some),
            None if SqliteRows::new(&g.conn, op.0).run_exists(run_id)? => Ok(None),
            None => Err(StoreError::NotFound(run_id.to_string())),
        }
    }

    fn acquire_lease(&self, run_id: &str, owner: &str, ttl: Duration) -> Result<bool> {
        self.take_lease(run_id, owner, ttl)
    }

    fn renew_lease(&self, run_id: &str, owner: &str, ttl: Duration) -> Result<()> {
        if self.take_lease(run_id, owner, ttl)? {
            return Ok(());
        }
        let owner = self.lease_owner(run_id)?.unwrap_or_default();
        Err(StoreError::Leased {
            run_id: run_id.to_string(),
            owner,
        })
    }

    fn release_lease(&self, run_id: &str, owner: &str) -> Result<()> {
        let op = Op("releasing the lease", run_id);
        let q = "UPDATE runs SET lease_owner = NULL, lease_expires = NULL
                 WHERE id = ?1 AND lease_owner = ?2";
        self.write(op, |tx| exec(tx, op, q, params![run_id, owner]).map(drop))
    }

    fn lease_owner(&self, run_id: &str) -> Result<Option<String>> {
        let g = self.lock();
        let q = "SELECT lease_owner, lease_expires FROM runs WHERE id = ?1";
        let row: Option<(Option<String>, Option<f64>)> =
            one(&g.conn, Op("reading the lease", run_id), q, [run_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        match row {
            None => Err(StoreError::NotFound(run_id.to_string())),
            Some((Some(owner), Some(expires))) if expires > unix_now() => Ok(Some(owner)),
            Some(_) => Ok(None),
        }
    }

    fn request_cancel(&self, run_id: &str) -> Result<()> {
        let q = "UPDATE runs SET cancel_requested = 1 WHERE id = ?1";
        self.update_run(Op("requesting a cancel", run_id), q, [run_id])
    }

    fn cancel_requested(&self, run_id: &str) -> Result<bool> {
        let g = self.lock();
        let q = "SELECT cancel_requested FROM runs WHERE id = ?1";
        let op = Op("reading the cancel flag", run_id);
        one(&g.conn, op, q, [run_id], |r| r.get(0))?
            .ok_or_else(|| StoreError::NotFound(run_id.to_string()))
    }

    fn clear_cancel(&self, run_id: &str) -> Result<()> {
        let q = "UPDATE runs SET cancel_requested = 0 WHERE id = ?1";
        self.update_run(Op("clearing the cancel flag", run_id), q, [run_id])
    }

    fn select_prunable(&self, filter: &PruneFilter) -> Result<Vec<RunRecord>> {
        let g = self.lock();
        crate::retention::prunable(
            &mut SqliteRows::new(&g.conn, "selecting runs to prune"),
            filter,
        )
    }

    fn run_bytes(&self, ids: &[String]) -> Result<u64> {
        self.payload_bytes(ids)
    }

    fn delete_runs(&self, ids: &[String]) -> Result<usize> {
        self.delete_in_chunks(ids)
    }

    fn reclaim(&self) -> Result<Reclaimed> {
        self.give_back_space()
    }

    fn size(&self) -> Result<StoreSize> {
        self.measure()
    }
}

/// Insert `rec` into `runs` with `turns` and `status` (a new run's first turn is
/// written with it), and its canvas into `canvases` unless it is there.
fn insert_run(
    tx: &Connection,
    op: Op<'_>,
    rec: &RunRecord,
    turns: u32,
    status: RunStatus,
) -> Result<()> {
    let waiting = rec.waiting.as_ref().map(to_json).transpose()?;
    let options = rec.options.as_ref().map(to_json).transpose()?;
    // Looked up first: binding the text to an `INSERT OR IGNORE` would copy it (and
    // build its record) on every run of a canvas the store already has.
    let known = one(
        tx,
        op,
        "SELECT 1 FROM canvases WHERE hash = ?1",
        [&rec.canvas_hash],
        |_| Ok(()),
    )?;
    if known.is_none() {
        exec(
            tx,
            op,
            "INSERT INTO canvases (hash, text) VALUES (?1, ?2)",
            params![rec.canvas_hash, rec.canvas],
        )?;
    }
    let q = "INSERT INTO runs (id, source, canvas_hash, status, parent, created_at, updated_at, \
             turns, error, waiting, options) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
    let p = params![
        rec.id,
        rec.source,
        rec.canvas_hash,
        status.as_str(),
        rec.parent,
        rec.created_at,
        rec.updated_at,
        turns,
        rec.error,
        waiting,
        options,
    ];
    exec(tx, op, q, p).map(drop)
}

/// Insert a new run with its first turn, its lease and its tie to a batch row (see
/// [`Rows::create_run`]).
fn insert_first_turn(c: &Connection, t: &FirstTurn<'_>) -> Result<()> {
    let rec = t.rec;
    let op = Op("creating the run", &rec.id);
    if let (Some((batch_id, idx)), Some((owner, _))) = (t.row, t.lease) {
        batch::tie_row_run(c, batch_id, idx, owner, &rec.id)?;
    }
    let inputs = to_json(t.inputs)?;
    insert_run(c, op, rec, 1, RunStatus::Running)?;
    exec(
        c,
        op,
        "INSERT INTO turns (run_id, turn, kind, query, inputs, started_at)
         VALUES (?1, 1, ?2, ?3, ?4, ?5)",
        params![rec.id, t.kind.as_str(), t.query, inputs, rec.created_at],
    )?;
    if let Some((owner, ttl)) = t.lease {
        exec(
            c,
            op,
            "UPDATE runs SET lease_owner = ?2, lease_expires = ?3 WHERE id = ?1",
            params![rec.id, owner, unix_now() + ttl.as_secs_f64()],
        )?;
    }
    Ok(())
}

/// Read the [`RUN_FIELDS`] of a row.
pub(crate) fn read_run(r: &Row<'_>) -> rusqlite::Result<RawRun> {
    Ok(RawRun {
        id: r.get(0)?,
        source: r.get(1)?,
        canvas: r.get(2)?,
        canvas_hash: r.get(3)?,
        status: r.get(4)?,
        parent: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
        turns: r.get(8)?,
        error: r.get(9)?,
        waiting: r.get(10)?,
        options: r.get(11)?,
    })
}

/// WAL lets readers and one writer work at once; switching needs a moment alone with
/// the file, so a fresh file opened by several processes may report busy briefly.
fn set_wal(conn: &Connection) -> Result<()> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(sql("switching to WAL mode", e)),
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Create the (empty) database file with owner-only permissions before SQLite does.
fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    match opts.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// SQLite gives `-wal` and `-shm` the main file's mode; make sure of it (best effort:
/// they may belong to another user's process).
fn restrict_side_files(path: &Path) {
    #[cfg(unix)]
    for suffix in ["-wal", "-shm"] {
        use std::os::unix::fs::PermissionsExt;
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        let side = PathBuf::from(side);
        let loose = std::fs::metadata(&side).is_ok_and(|m| m.permissions().mode() & 0o077 != 0);
        if loose {
            let _ = std::fs::set_permissions(&side, std::fs::Permissions::from_mode(0o600));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    //! SQLite's own matters: its file, older SQLite schemas and layouts. The behaviour
    //! every backend shares is tested in `behaviour.rs`, on each.

    use super::*;
    use crate::testkit::{big_state, commit, lines, load, run, step};
    use crate::{SCHEMA_VERSION, StoreError};

    fn mem() -> SqliteStore {
        SqliteStore::open_in_memory().unwrap()
    }

    #[test]
    fn a_read_only_store_never_writes_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        {
            let store = SqliteStore::open(&path).unwrap();
            run(&store, "01R", 1.0);
            commit(&store, &mut Checkpointer::new(), "01R", 1, &[1], None).unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let ro = SqliteStore::open_read_only(&path).unwrap().unwrap();
        assert_eq!(ro.events("01R").unwrap(), lines("01R", &[1]));
        assert!(ro.request_cancel("01R").is_err(), "a write went through");
        drop(ro);
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert!(SqliteStore::open_read_only(dir.path().join("none.db")).is_err());
        assert!(!dir.path().join("none.db").exists());
        // A file left empty by a process killed while creating the store.
        std::fs::write(dir.path().join("empty.db"), b"").unwrap();
        assert!(matches!(
            SqliteStore::open_read_only(dir.path().join("empty.db")),
            Ok(None)
        ));
    }

    #[test]
    fn events_stored_by_an_older_version_come_first() {
        let store = mem();
        run(&store, "01R", 1.0);
        let old = r#"{"event":"message","data":{"content":0},"message_id":"old","created_at":1,"task_id":"01R"}"#;
        store
            .lock()
            .conn
            .execute(
                "INSERT INTO events (run_id, seq, turn, body) VALUES ('01R', 1, 1, ?1)",
                [old],
            )
            .unwrap();
        commit(&store, &mut Checkpointer::new(), "01R", 2, &[1], None).unwrap();
        let mut want = vec![old.to_string()];
        want.extend(lines("01R", &[1]));
        assert_eq!(store.events("01R").unwrap(), want);
        assert_eq!(store.events_of_turn("01R", 2).unwrap(), lines("01R", &[1]));
        let g = store.lock();
        let first: i64 = g
            .conn
            .query_row("SELECT seq FROM event_chunks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(first, 2, "numbering goes on after the older rows");
    }

    #[test]
    fn checkpoints_stored_as_text_by_an_older_version_load() {
        let store = mem();
        run(&store, "01R", 1.0);
        let mut s = big_state(2);
        let full = serde_json::to_string(&s).unwrap();
        let mut next = s.clone();
        step(&mut next, 1);
        let delta = serde_json::to_string(&crate::diff(&s, &next)).unwrap();
        store
            .lock()
            .conn
            .execute(
                "INSERT INTO checkpoints (run_id, seq, turn, kind, body)
                 VALUES ('01R', 1, 1, 'full', ?1), ('01R', 2, 1, 'delta', ?2)",
                [full, delta],
            )
            .unwrap();
        let mut cp = store.load_checkpoint("01R").unwrap();
        assert_eq!(cp.state(), Some(&next));
        step(&mut s, 1);
        step(&mut s, 2);
        commit(&store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
        assert_eq!(load(&store, "01R"), Some(s));
    }

    #[test]
    fn store_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/canvas.db");
        let store = SqliteStore::open(&path).unwrap();
        run(&store, "01R", 1.0);
        commit(
            &store,
            &mut Checkpointer::new(),
            "01R",
            1,
            &[1],
            Some(&big_state(1)),
        )
        .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("a/b")), 0o700);
        for side in ["canvas.db-wal", "canvas.db-shm"] {
            let p = dir.path().join("a/b").join(side);
            assert!(p.exists(), "{side} exists in WAL mode");
            assert_eq!(mode(&p), 0o600, "{side}");
        }
    }

    #[test]
    fn a_store_of_schema_version_2_is_migrated_with_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            let tx = conn.transaction().unwrap();
            for m in &schema::MIGRATIONS[..2] {
                tx.execute_batch(m).unwrap();
            }
            tx.pragma_update(None, "user_version", 2).unwrap();
            tx.execute(
                "INSERT INTO runs (id, source, canvas, canvas_hash, status, created_at, updated_at)
                 VALUES ('01OLD', 'f.json', '{\"components\": {}}', 'h1', 'succeeded', 1, 1)",
                [],
            )
            .unwrap();
            tx.commit().unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        let rec = store.find_run("01OLD").unwrap();
        assert_eq!(
            (rec.canvas.as_str(), rec.status),
            ("{\"components\": {}}", RunStatus::Succeeded)
        );
        let v: i64 = store
            .lock()
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
    }

    #[test]
    fn another_programs_database_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('x');")
            .unwrap();
        drop(c);
        let before = std::fs::read(&path).unwrap();
        for e in [
            SqliteStore::open(&path).err(),
            SqliteStore::open_read_only(&path).err(),
        ] {
            let e = e.expect("refused");
            assert!(matches!(e, StoreError::NotAStore(_)), "{e}");
            assert_eq!(e.fault(), crate::Fault::Damaged);
            assert!(e.to_string().contains("tables notes"), "{e}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), before);
        // An empty file is a store not made yet.
        std::fs::write(dir.path().join("empty.db"), b"").unwrap();
        assert!(SqliteStore::open(dir.path().join("empty.db")).is_ok());
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        drop(SqliteStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(conn);
        let before = std::fs::read(&path).unwrap();
        match SqliteStore::open(&path) {
            Err(StoreError::NewerSchema { found, supported }) => {
                assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
            }
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("opened a newer store"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing was written");
    }
}
