//! [`SqliteStore`]: the [`Store`] on one SQLite file (WAL, 30 s busy timeout) that many
//! processes may share.
//!
//! Every write is one `BEGIN IMMEDIATE` transaction, so waiting writers queue on the
//! busy timeout instead of failing with "database is locked"; a group of runs' writes
//! ([`Store::write`]) is one transaction with a savepoint per write. Events are stored
//! as LZ4-compressed chunks (`event_chunks`; the `events` rows of older versions are
//! still read), checkpoints as compressed JSON (older ones are plain text). A full
//! snapshot replaces the checkpoint rows before it.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::types::Value as SqlValue;
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Params, Row, Transaction, TransactionBehavior, params,
};
use serde_json::Value;

use super::blobs;
#[cfg(test)]
use super::checkpoint::MAX_DELTAS;
use super::chunk;
use super::delta::{Delta, apply};
use super::retention;
use super::schema::{self, sql};
use super::{
    Checkpointer, PruneFilter, Reclaimed, Result, RunRecord, RunStatus, RunWrite, Store,
    StoreError, StoreSize, TurnKind, TurnRecord, lease, unix_now,
};
use canvas_engine::RunState;

/// The WAL is checkpointed into the file once it holds 256 pages (1 MiB), and cut back
/// to 1 MiB when it outgrew that.
const WAL_LIMITS: &str = "PRAGMA wal_autocheckpoint = 256; PRAGMA journal_size_limit = 1048576;";

/// How long a writer waits for another process's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// Matches listed in an ambiguous-prefix error.
const MAX_MATCHES: usize = 20;

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

    /// The run's turns in order (only the last with `last`); `NotFound` for no run.
    pub(crate) fn read_turns(&self, run_id: &str, last: bool) -> Result<Vec<TurnRecord>> {
        let op = Op("reading the turns", run_id);
        let g = self.lock();
        let q = if last {
            "SELECT turn, kind, query, inputs, started_at, ended_at, status FROM turns
             WHERE run_id = ?1 ORDER BY turn DESC LIMIT 1"
        } else {
            "SELECT turn, kind, query, inputs, started_at, ended_at, status FROM turns
             WHERE run_id = ?1 ORDER BY turn"
        };
        type Raw = (
            i64,
            String,
            String,
            String,
            f64,
            Option<f64>,
            Option<String>,
        );
        let rows: Vec<Raw> = g
            .conn
            .prepare_cached(q)
            .and_then(|mut s| {
                s.query_map([run_id], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                    ))
                })?
                .collect()
            })
            .map_err(|e| op.err(e))?;
        if rows.is_empty() {
            SqliteStore::must_exist(&g.conn, run_id)?;
        }
        let mut out = Vec::with_capacity(rows.len());
        for (turn, kind, query, inputs, started_at, ended_at, status) in rows {
            let corrupt =
                |what: &str| StoreError::Corrupt(format!("run {run_id}: turn {turn}: {what}"));
            let kind = match kind.as_str() {
                "start" => TurnKind::Start,
                "answer" => TurnKind::Answer,
                "next" => TurnKind::Next,
                other => return Err(corrupt(&format!("unknown kind {other:?}"))),
            };
            let status = status
                .map(|st| st.parse::<RunStatus>().map_err(|e| corrupt(&e.to_string())))
                .transpose()?;
            out.push(TurnRecord {
                turn: u32::try_from(turn).map_err(|_| corrupt("bad number"))?,
                kind,
                query,
                inputs: from_json(&inputs, || format!("reading turn {turn} of run {run_id}"))?,
                started_at,
                ended_at,
                status,
            });
        }
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
            insert_run(tx, op, run)?;
            f(tx)
        })
    }

    /// A write of one statement to the run's row; `NotFound` when there is no such run.
    fn update_run(&self, op: Op<'_>, q: &str, p: impl Params) -> Result<()> {
        if self.write(op, |tx| exec(tx, op, q, p))? == 0 {
            return Err(StoreError::NotFound(op.1.to_string()));
        }
        Ok(())
    }

    /// `Ok(())` when the run exists, else `NotFound`.
    fn must_exist(c: &Connection, run_id: &str) -> Result<()> {
        let op = Op("looking up the run", run_id);
        match one(c, op, "SELECT 1 FROM runs WHERE id = ?1", [run_id], |_| {
            Ok(())
        })? {
            Some(()) => Ok(()),
            None => Err(StoreError::NotFound(run_id.to_string())),
        }
    }

    fn get_run(c: &Connection, id: &str) -> Result<Option<RunRecord>> {
        let q = format!("SELECT {RUN_FIELDS} FROM {RUN_FROM} WHERE r.id = ?1");
        let raw = one(c, Op("reading the run", id), &q, [id], RawRun::read)?;
        raw.map(RawRun::into_record).transpose()
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

    /// The run's events as JSON lines, in order: the legacy `events` rows, then the
    /// chunks (`turn` narrows both to one turn).
    fn event_lines(&self, run_id: &str, turn: Option<u32>) -> Result<Vec<String>> {
        let op = Op("reading the events", run_id);
        let g = self.lock();
        let turn = turn.map(i64::from);
        let legacy: Vec<(i64, String)> = all(
            &g.conn,
            op,
            "SELECT seq, body FROM events WHERE run_id = ?1 AND (?2 IS NULL OR turn = ?2)
             ORDER BY seq",
            params![run_id, turn],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        type Raw = (i64, i64, String, i64, Vec<u8>, Option<String>);
        let chunks: Vec<Raw> = all(
            &g.conn,
            op,
            "SELECT seq, n, message_id, created_at, body, cuts FROM event_chunks
             WHERE run_id = ?1 AND (?2 IS NULL OR turn = ?2) ORDER BY seq",
            params![run_id, turn],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )?;
        if legacy.is_empty() && chunks.is_empty() {
            SqliteStore::must_exist(&g.conn, run_id)?;
        }
        // A store written before chunks existed has rows in `events` only, and a run
        // continued since has its older events there: they come first.
        let mut out: Vec<String> = legacy.into_iter().map(|(_, body)| body).collect();
        for (seq, n, message_id, created_at, body, cuts) in chunks {
            let what = || format!("run {run_id}: stored events {seq}–{}", seq + n - 1);
            let mut text = chunk::decompress(&body, what)?;
            if let Some(cuts) = cuts {
                text = blobs::join(text, &cuts, |k| fetch_blob(&g.conn, op, k), what)?;
            }
            out.extend(chunk::lines(
                &text,
                n,
                seq,
                &message_id,
                created_at,
                run_id,
            )?);
        }
        drop(g);
        Ok(out)
    }

    /// One run's write inside the group's transaction.
    fn write_run(tx: &Connection, w: &RunWrite, checkpoint_bytes: &mut u64) -> Result<()> {
        let run_id = w.run_id.as_str();
        let op = Op("committing", run_id);
        // The run's row is not rewritten per checkpoint (it holds the canvas text, and
        // a row update rewrites it whole): only turn starts and ends touch it.
        SqliteStore::must_exist(tx, run_id)?;
        let chunks = w.events.iter().filter(|c| !c.is_empty());
        let mut next: Option<i64> = None;
        for c in chunks {
            let first = match next {
                Some(n) => n,
                None => SqliteStore::last_event_seq(tx, run_id)? + 1,
            };
            let split = blobs::split(&c.text);
            let (text, cuts) = match &split {
                Some(s) => (s.text.as_str(), Some(keep_blobs(tx, op, run_id, s)?)),
                None => (c.text.as_str(), None),
            };
            exec(
                tx,
                op,
                "INSERT INTO event_chunks (run_id, seq, n, turn, message_id, created_at, body, cuts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    run_id,
                    first,
                    c.count,
                    w.turn,
                    c.message_id,
                    c.created_at,
                    chunk::compress(text),
                    cuts
                ],
            )?;
            next = Some(first + i64::from(c.count));
        }
        if let Some(cp) = &w.checkpoint {
            let q = "SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE run_id = ?1";
            let last: i64 = one(tx, op, q, [run_id], |r| r.get(0))?.unwrap_or(0);
            if last != cp.seq - 1 {
                return Err(StoreError::Conflict {
                    run_id: run_id.to_string(),
                    found: last,
                    expected: cp.seq - 1,
                });
            }
            let split = blobs::split(&cp.json);
            let (json, cuts) = match &split {
                Some(s) => (s.text.as_str(), Some(keep_blobs(tx, op, run_id, s)?)),
                None => (cp.json.as_str(), None),
            };
            let body = chunk::compress(json);
            exec(
                tx,
                op,
                "INSERT INTO checkpoints (run_id, seq, turn, kind, body, cuts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    run_id,
                    cp.seq,
                    w.turn,
                    if cp.full { "full" } else { "delta" },
                    body,
                    cuts
                ],
            )?;
            if cp.full {
                let prune = "DELETE FROM checkpoints WHERE run_id = ?1 AND seq < ?2";
                exec(tx, op, prune, params![run_id, cp.seq])?;
            }
            *checkpoint_bytes += body.len() as u64;
        }
        if let Some(end) = &w.end {
            let now = unix_now();
            let waiting = end.waiting.as_ref().map(to_json).transpose()?;
            exec(
                tx,
                op,
                "UPDATE runs SET status = ?2, error = ?3, waiting = ?4, updated_at = ?5 WHERE id = ?1",
                params![run_id, end.status.as_str(), end.error, waiting, now],
            )?;
            exec(
                tx,
                op,
                "UPDATE turns SET ended_at = ?3, status = ?4 WHERE run_id = ?1 AND turn = ?2",
                params![run_id, w.turn, now, end.status.as_str()],
            )?;
        }
        Ok(())
    }

    /// The number of the run's last stored event (0 when none).
    fn last_event_seq(c: &Connection, run_id: &str) -> Result<i64> {
        let op = Op("numbering the events", run_id);
        let chunked: Option<i64> = one(
            c,
            op,
            "SELECT seq + n - 1 FROM event_chunks WHERE run_id = ?1 ORDER BY seq DESC LIMIT 1",
            [run_id],
            |r| r.get(0),
        )?;
        if let Some(n) = chunked {
            return Ok(n);
        }
        let q = "SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?1";
        Ok(one(c, op, q, [run_id], |r| r.get(0))?.unwrap_or(0))
    }
}

/// Keep the values cut out of a text in `blobs` (each once) and note that the run uses
/// them; returns the text's `cuts` column.
fn keep_blobs(tx: &Connection, op: Op<'_>, run_id: &str, s: &blobs::Split<'_>) -> Result<String> {
    for (cut, value) in s.cuts.iter().zip(&s.values) {
        exec(
            tx,
            op,
            "INSERT OR IGNORE INTO blob_refs (run_id, hash) VALUES (?1, ?2)",
            params![run_id, cut.hash],
        )?;
        let q = "SELECT 1 FROM blobs WHERE hash = ?1";
        let stored: Option<i64> = one(tx, op, q, [&cut.hash], |r| r.get(0))?;
        if stored.is_none() {
            exec(
                tx,
                op,
                "INSERT INTO blobs (hash, body) VALUES (?1, ?2)",
                params![cut.hash, chunk::compress(value)],
            )?;
        }
    }
    Ok(s.cuts_json())
}

/// The text of a large value kept in `blobs` (see [`keep_blobs`]).
fn fetch_blob(c: &Connection, op: Op<'_>, key: &str) -> Result<String> {
    let body: Option<Vec<u8>> = one(
        c,
        op,
        "SELECT body FROM blobs WHERE hash = ?1",
        [key],
        |r| r.get(0),
    )?;
    let what = || format!("run {}: large value {key}", op.1);
    let body = body.ok_or_else(|| StoreError::Corrupt(format!("{}: missing", what())))?;
    chunk::decompress(&body, what)
}

/// A stored checkpoint body as JSON text: compressed (a blob) or, as older versions
/// wrote it, plain text.
fn body_text(v: SqlValue, what: impl Fn() -> String) -> Result<String> {
    match v {
        SqlValue::Blob(b) => chunk::decompress(&b, what),
        SqlValue::Text(t) => Ok(t),
        _ => Err(StoreError::Corrupt(format!("{}: not a checkpoint", what()))),
    }
}

impl Store for SqliteStore {
    fn create_run(&self, rec: &RunRecord) -> Result<()> {
        let op = Op("creating the run", &rec.id);
        self.write(op, |tx| insert_run(tx, op, rec))
    }

    fn create_run_with_turn(
        &self,
        rec: &RunRecord,
        kind: TurnKind,
        query: &str,
        inputs: &Value,
    ) -> Result<u32> {
        let op = Op("creating the run", &rec.id);
        let inputs = to_json(inputs)?;
        let mut first = rec.clone();
        first.turns = 1;
        first.status = RunStatus::Running;
        self.write(op, |tx| {
            insert_run(tx, op, &first)?;
            exec(
                tx,
                op,
                "INSERT INTO turns (run_id, turn, kind, query, inputs, started_at)
                 VALUES (?1, 1, ?2, ?3, ?4, ?5)",
                params![rec.id, kind.as_str(), query, inputs, rec.created_at],
            )?;
            Ok(1)
        })
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
            // LIKE is case-insensitive for ASCII; its wildcards in `q` are escaped.
            let escaped = q
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            all(
                &g.conn,
                op,
                "SELECT id FROM runs WHERE id LIKE ?1 ESCAPE '\\'
                 ORDER BY created_at DESC, id DESC LIMIT ?2",
                params![format!("{escaped}%"), MAX_MATCHES as i64 + 1],
                |r| r.get(0),
            )?
        };
        match ids.as_slice() {
            [] => Err(not_found()),
            [id] => SqliteStore::get_run(&g.conn, id)?.ok_or_else(not_found),
            _ => Err(StoreError::Ambiguous {
                prefix: q.to_string(),
                matches: ids.into_iter().take(MAX_MATCHES).collect(),
            }),
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
        let raws = all(&g.conn, Op("listing runs", "*"), &q, p, RawRun::read)?;
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
        } = &mut *g;
        let mut tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| op.err(e))?;
        let mut results = Vec::with_capacity(writes.len());
        let mut bytes = 0;
        for w in writes {
            let mut sp = tx.savepoint().map_err(|e| op.err(e))?;
            let mut written = 0;
            let r = SqliteStore::write_run(&sp, w, &mut written);
            match r {
                Ok(()) => {
                    sp.commit().map_err(|e| op.err(e))?;
                    bytes += written;
                }
                Err(_) => sp.rollback().map_err(|e| op.err(e))?,
            }
            results.push(r);
        }
        tx.commit().map_err(|e| op.err(e))?;
        *checkpoint_bytes += bytes;
        Ok(results)
    }

    fn load_checkpoint(&self, run_id: &str) -> Result<Checkpointer> {
        let op = Op("reading the checkpoint", run_id);
        let mut g = self.lock();
        // One read transaction: the snapshot and its deltas as of one moment.
        let tx = g.conn.transaction().map_err(|e| op.err(e))?;
        let what = |seq: i64| move || format!("reading checkpoint {seq} of run {run_id}");
        type Raw = (i64, SqlValue, Option<String>);
        let full: Option<Raw> = one(
            &tx,
            op,
            "SELECT seq, body, cuts FROM checkpoints WHERE run_id = ?1 AND kind = 'full'
             ORDER BY seq DESC LIMIT 1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let Some((seq, body, cuts)) = full else {
            SqliteStore::must_exist(&tx, run_id)?;
            return Ok(Checkpointer::new());
        };
        let deltas: Vec<Raw> = all(
            &tx,
            op,
            "SELECT seq, body, cuts FROM checkpoints WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
            params![run_id, seq],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        // The large values, read in the same transaction as the rows that use them.
        let text = |seq: i64, body: SqlValue, cuts: Option<String>| -> Result<String> {
            let text = body_text(body, what(seq))?;
            match cuts {
                Some(cuts) => blobs::join(text, &cuts, |k| fetch_blob(&tx, op, k), what(seq)),
                None => Ok(text),
            }
        };
        let body = text(seq, body, cuts)?;
        let deltas = deltas
            .into_iter()
            .map(|(seq, v, cuts)| Ok((seq, text(seq, v, cuts)?)))
            .collect::<Result<Vec<(i64, String)>>>()?;
        tx.commit().map_err(|e| op.err(e))?;
        drop(g);

        let mut state: RunState = from_json(&body, what(seq))?;
        let n = u32::try_from(deltas.len()).unwrap_or(u32::MAX);
        let (mut last, mut delta_bytes) = (seq, 0);
        for (seq, text) in deltas {
            let d: Delta = from_json(&text, what(seq))?;
            apply(&mut state, &d).map_err(|source| StoreError::Json {
                context: what(seq)(),
                source,
            })?;
            last = seq;
            delta_bytes += text.len();
        }
        Ok(Checkpointer::loaded(
            state,
            last,
            body.len(),
            n,
            delta_bytes,
        ))
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
        Ok(self.read_turns(run_id, true)?.pop())
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
        self.prunable(filter)
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

/// Insert `rec` into `runs`, and its canvas into `canvases` unless it is there.
fn insert_run(tx: &Transaction<'_>, op: Op<'_>, rec: &RunRecord) -> Result<()> {
    let waiting = rec.waiting.as_ref().map(to_json).transpose()?;
    let options = rec.options.as_ref().map(to_json).transpose()?;
    exec(
        tx,
        op,
        "INSERT OR IGNORE INTO canvases (hash, text) VALUES (?1, ?2)",
        params![rec.canvas_hash, rec.canvas],
    )?;
    let q = "INSERT INTO runs (id, source, canvas_hash, status, parent, created_at, updated_at, \
             turns, error, waiting, options) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
    let p = params![
        rec.id,
        rec.source,
        rec.canvas_hash,
        rec.status.as_str(),
        rec.parent,
        rec.created_at,
        rec.updated_at,
        rec.turns,
        rec.error,
        waiting,
        options,
    ];
    exec(tx, op, q, p).map(drop)
}

/// A `runs` row before its text columns are checked.
pub(crate) struct RawRun {
    id: String,
    source: String,
    canvas: String,
    canvas_hash: String,
    status: String,
    parent: Option<String>,
    created_at: f64,
    updated_at: f64,
    turns: i64,
    error: Option<String>,
    waiting: Option<String>,
    options: Option<String>,
}

impl RawRun {
    /// Read the [`RUN_FIELDS`] of a row.
    pub(crate) fn read(r: &Row<'_>) -> rusqlite::Result<RawRun> {
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

    pub(crate) fn into_record(self) -> Result<RunRecord> {
        let id = self.id;
        let status = self
            .status
            .parse()
            .map_err(|e| StoreError::Corrupt(format!("run {id}: {e}")))?;
        let turns = u32::try_from(self.turns)
            .map_err(|_| StoreError::Corrupt(format!("run {id} has {} turns", self.turns)))?;
        let waiting = match self.waiting {
            None => None,
            Some(w) => Some(from_json(&w, || {
                format!("reading the pending form of run {id}")
            })?),
        };
        let options = match self.options {
            None => None,
            Some(o) => Some(from_json(&o, || {
                format!("reading the options of run {id}")
            })?),
        };
        Ok(RunRecord {
            options,
            source: self.source,
            canvas: self.canvas,
            canvas_hash: self.canvas_hash,
            status,
            parent: self.parent,
            created_at: self.created_at,
            updated_at: self.updated_at,
            turns,
            error: self.error,
            waiting,
            id,
        })
    }
}

fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|source| StoreError::Json {
        context: "serialising a stored value".into(),
        source,
    })
}

fn from_json<T: serde::de::DeserializeOwned>(s: &str, what: impl Fn() -> String) -> Result<T> {
    serde_json::from_str(s).map_err(|source| StoreError::Json {
        context: what(),
        source,
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
    use super::*;
    use crate::SCHEMA_VERSION;
    use serde_json::json;
    use std::sync::{Arc, Barrier};

    fn mem() -> SqliteStore {
        SqliteStore::open_in_memory().unwrap()
    }

    fn run(store: &SqliteStore, id: &str, created_at: f64) -> RunRecord {
        let mut rec = RunRecord::new("flow.json", "{\"components\": {}}");
        rec.id = id.to_string();
        rec.created_at = created_at;
        rec.updated_at = created_at;
        store.create_run(&rec).unwrap();
        rec
    }

    #[test]
    fn a_runs_options_are_kept_with_it() {
        let store = mem();
        let mut rec = RunRecord::new("flow.json", "{}");
        rec.options = Some(json!({"mock_llm": "/abs/mock.yaml", "max_parallel": 4}));
        store.create_run(&rec).unwrap();
        let back = store.find_run(&rec.id).unwrap();
        assert_eq!(back.options, rec.options);
        let plain = run(&store, "01PLAIN", 1.0);
        assert_eq!(store.find_run(&plain.id).unwrap().options, None);
    }

    /// A state shaped like a real run: `nodes` components with a few outputs each.
    fn big_state(nodes: usize) -> RunState {
        let mut s = RunState::default();
        s.globals
            .insert("sys.query".into(), json!("what is the weather in Paris?"));
        s.globals.insert("sys.user_id".into(), json!("u1"));
        s.globals.insert("env.counter".into(), json!(0));
        for i in 0..nodes {
            let id = format!("Message:Node{i}");
            s.path.push(id.clone());
            s.set_output(
                &id,
                "content",
                json!("lorem ipsum dolor sit amet ".repeat(8)),
            );
            s.set_output(&id, "_created_time", json!(1_700_000_000.25 + i as f64));
            s.set_output(&id, "_elapsed_time", json!(0.0123));
            s.nodes
                .entry(id)
                .or_default()
                .inputs
                .insert("text".into(), json!("{sys.query}"));
        }
        s
    }

    /// One pass of a loop: one counter and one small output change.
    fn step(s: &mut RunState, i: i64) {
        s.counters.insert("LoopItem:L".into(), i);
        s.set_output("Switch:S", "_elapsed_time", json!(i as f64 / 1000.0));
    }

    fn checkpoint_kinds(store: &SqliteStore, run_id: &str) -> Vec<String> {
        let g = store.lock();
        let mut st = g
            .conn
            .prepare("SELECT kind FROM checkpoints WHERE run_id = ?1 ORDER BY seq")
            .unwrap();
        st.query_map([run_id], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// What the CLI's reporter does: plan the checkpoint of `state` with `cp`, and
    /// write it with events `message {"content": e}` for each `e`, in one write.
    fn commit(
        store: &SqliteStore,
        cp: &mut Checkpointer,
        run_id: &str,
        turn: u32,
        events: &[i64],
        state: Option<&RunState>,
    ) -> Result<()> {
        let mut w = RunWrite::new(run_id, turn);
        if !events.is_empty() {
            let mut c = crate::EventChunk::new("m", 7);
            for e in events {
                c.push("message", &format!(r#"{{"content":{e}}}"#));
            }
            w.events.push(c);
        }
        w.checkpoint = state.map(|s| cp.plan(s)).transpose()?.flatten();
        store.write_one(w)
    }

    /// The JSON line event `e` of run `run_id` (as [`commit`] writes it) reads back as.
    fn line(run_id: &str, e: i64) -> String {
        format!(
            r#"{{"event":"message","data":{{"content":{e}}},"message_id":"m","created_at":7,"task_id":"{run_id}"}}"#
        )
    }

    fn lines(run_id: &str, es: &[i64]) -> Vec<String> {
        es.iter().map(|e| line(run_id, *e)).collect()
    }

    fn load(store: &SqliteStore, run_id: &str) -> Option<RunState> {
        store.load_checkpoint(run_id).unwrap().state().cloned()
    }

    #[test]
    fn create_and_find_by_id_prefix_and_latest() {
        let store = mem();
        let a = run(&store, "01J0AAAAAAAAAAAAAAAAAAAAAA", 100.0);
        let b = run(&store, "01J0BBBBBBBBBBBBBBBBBBBBBB", 200.0);
        assert_eq!(store.find_run(&a.id).unwrap(), a);
        assert_eq!(
            store.find_run("01j0a").unwrap(),
            a,
            "prefixes are case-insensitive"
        );
        assert_eq!(store.find_run("01J0B").unwrap(), b);
        assert_eq!(store.find_run("latest").unwrap(), b);
        assert_eq!(store.find_run("LATEST").unwrap(), b);
    }

    #[test]
    fn find_reports_ambiguous_and_not_found() {
        let store = mem();
        assert!(matches!(
            store.find_run("latest"),
            Err(StoreError::NotFound(_))
        ));
        run(&store, "01J0AAAAAAAAAAAAAAAAAAAAAA", 100.0);
        run(&store, "01J0ABBBBBBBBBBBBBBBBBBBBB", 200.0);
        match store.find_run("01j0a") {
            Err(StoreError::Ambiguous { prefix, matches }) => {
                assert_eq!(prefix, "01j0a");
                assert_eq!(
                    matches,
                    ["01J0ABBBBBBBBBBBBBBBBBBBBB", "01J0AAAAAAAAAAAAAAAAAAAAAA"]
                );
            }
            other => panic!("{other:?}"),
        }
        let e = store.find_run("01J0AC").unwrap_err();
        assert!(matches!(e, StoreError::NotFound(_)));
        assert_eq!(e.to_string(), "no run matches \"01J0AC\"");
        // LIKE wildcards in the input are literal.
        assert!(matches!(
            store.find_run("01J0_"),
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(store.find_run("%"), Err(StoreError::NotFound(_))));
        assert!(matches!(store.find_run(""), Err(StoreError::NotFound(_))));
    }

    #[test]
    fn list_runs_newest_first_with_filter_and_limit() {
        let store = mem();
        for (i, id) in ["01A", "01B", "01C", "01D"].iter().enumerate() {
            run(&store, id, 10.0 * i as f64);
        }
        store
            .set_status("01B", RunStatus::Failed, Some("boom"), None)
            .unwrap();
        store
            .set_status("01D", RunStatus::Failed, None, None)
            .unwrap();
        let ids = |v: Vec<RunRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(
            ids(store.list_runs(None, 0).unwrap()),
            ["01D", "01C", "01B", "01A"]
        );
        assert_eq!(ids(store.list_runs(None, 2).unwrap()), ["01D", "01C"]);
        assert_eq!(store.count_runs(None).unwrap(), 4);
        assert_eq!(store.count_runs(Some(RunStatus::Failed)).unwrap(), 2);
        assert_eq!(store.count_runs(Some(RunStatus::Waiting)).unwrap(), 0);
        assert_eq!(
            ids(store.list_runs(Some(RunStatus::Failed), 10).unwrap()),
            ["01D", "01B"]
        );
        assert!(
            store
                .list_runs(Some(RunStatus::Waiting), 10)
                .unwrap()
                .is_empty()
        );
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
    fn a_read_only_store_reads_and_never_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        {
            let store = SqliteStore::open(&path).unwrap();
            run(&store, "01R", 1.0);
            commit(&store, &mut Checkpointer::new(), "01R", 1, &[1], None).unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let ro = SqliteStore::open_read_only(&path).unwrap().unwrap();
        assert_eq!(ro.find_run("01R").unwrap().id, "01R");
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
    fn a_run_is_created_with_its_first_turn() {
        let store = mem();
        let rec = RunRecord::new("flow.json", "{}");
        let inputs = json!({"name": {"value": "Ada"}});
        let n = store
            .create_run_with_turn(&rec, TurnKind::Start, "hi", &inputs)
            .unwrap();
        assert_eq!(n, 1);
        let got = store.find_run(&rec.id).unwrap();
        assert_eq!((got.turns, got.status), (1, RunStatus::Running));
        let t = store.last_turn(&rec.id).unwrap().unwrap();
        assert_eq!(
            (t.turn, t.kind, t.query.as_str(), t.inputs),
            (1, TurnKind::Start, "hi", inputs)
        );
        // The same id twice: nothing half-written.
        assert!(
            store
                .create_run_with_turn(&rec, TurnKind::Start, "x", &json!({}))
                .is_err()
        );
        assert_eq!(store.last_turn(&rec.id).unwrap().unwrap().query, "hi");
    }

    #[test]
    fn end_turn_sets_the_status_with_the_checkpoint() {
        let store = mem();
        run(&store, "01R", 1.0);
        let turn = store
            .begin_turn("01R", TurnKind::Start, "q", &json!({}))
            .unwrap();
        let form = json!({"inputs": {"name": {"type": "line"}}, "tips": ""});
        let s = big_state(2);
        let mut w = RunWrite::new("01R", turn);
        let mut c = crate::EventChunk::new("m", 7);
        c.push("message", r#"{"content":1}"#);
        w.events.push(c);
        w.checkpoint = Checkpointer::new().plan(&s).unwrap();
        w.end = Some(crate::TurnEnd {
            status: RunStatus::Waiting,
            error: None,
            waiting: Some(form.clone()),
        });
        store.write_one(w).unwrap();
        let got = store.find_run("01R").unwrap();
        assert_eq!((got.status, got.waiting), (RunStatus::Waiting, Some(form)));
        assert_eq!(load(&store, "01R"), Some(s));
        assert_eq!(store.events("01R").unwrap(), lines("01R", &[1]));
        let last = store.last_turn("01R").unwrap().unwrap();
        assert_eq!(last.status, Some(RunStatus::Waiting));
        assert!(last.ended_at.is_some());
    }

    #[test]
    fn a_dead_local_holder_loses_the_lease_at_once() {
        let store = mem();
        run(&store, "01R", 1.0);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let me = crate::lease_holder();
        let host = me.split(':').next().unwrap();
        let dead = format!("{host}:{pid}:1");
        let ttl = Duration::from_secs(300);
        assert!(store.acquire_lease("01R", &dead, ttl).unwrap());
        if std::path::Path::new("/proc/self/stat").exists() {
            assert!(store.acquire_lease("01R", &me, ttl).unwrap());
            assert_eq!(store.lease_owner("01R").unwrap(), Some(me.clone()));
        }
        // A live holder keeps it.
        assert!(!store.acquire_lease("01R", "elsewhere:1:1", ttl).unwrap());
    }

    #[test]
    fn status_turns_and_waiting_form() {
        let store = mem();
        let rec = run(&store, "01R", 1.0);
        assert_eq!(store.last_turn("01R").unwrap(), None);
        let inputs = json!({"name": {"value": "Ada"}});
        assert_eq!(
            store
                .begin_turn("01R", TurnKind::Start, "hi", &inputs)
                .unwrap(),
            1
        );
        assert_eq!(
            store
                .begin_turn("01R", TurnKind::Next, "more", &json!({}))
                .unwrap(),
            2
        );
        let last = store.last_turn("01R").unwrap().unwrap();
        assert_eq!(
            (last.turn, last.kind, last.query.as_str(), last.ended_at),
            (2, TurnKind::Next, "more", None)
        );
        assert_eq!(store.find_run("01R").unwrap().status, RunStatus::Running);
        let form = json!({"component_id": "UserFillUp:Ask", "inputs": {"name": {"type": "line"}}});
        store
            .set_status("01R", RunStatus::Waiting, None, Some(&form))
            .unwrap();
        let got = store.find_run("01R").unwrap();
        assert_eq!(got.status, RunStatus::Waiting);
        assert_eq!(got.waiting, Some(form));
        assert_eq!(got.turns, 2);
        assert!(got.updated_at > rec.updated_at);
        store
            .set_status(
                "01R",
                RunStatus::Failed,
                Some("component \"X\" failed"),
                None,
            )
            .unwrap();
        let got = store.find_run("01R").unwrap();
        assert_eq!(
            (got.status, got.error.as_deref(), got.waiting),
            (RunStatus::Failed, Some("component \"X\" failed"), None)
        );
        assert!(matches!(
            store.begin_turn("nope", TurnKind::Start, "", &json!({})),
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            store.set_status("nope", RunStatus::Failed, None, None),
            Err(StoreError::NotFound(_))
        ));
    }

    #[test]
    fn commit_stores_events_in_order_and_the_state() {
        let store = mem();
        run(&store, "01R", 1.0);
        assert_eq!(load(&store, "01R"), None);
        assert!(store.events("01R").unwrap().is_empty());
        let mut cp = Checkpointer::new();
        let mut s = big_state(3);
        commit(&store, &mut cp, "01R", 1, &[1, 2], Some(&s)).unwrap();
        commit(&store, &mut cp, "01R", 1, &[3], None).unwrap();
        step(&mut s, 1);
        commit(&store, &mut cp, "01R", 2, &[4], Some(&s)).unwrap();
        assert_eq!(store.events("01R").unwrap(), lines("01R", &[1, 2, 3, 4]));
        assert_eq!(store.events_of_turn("01R", 1).unwrap().len(), 3);
        assert_eq!(store.events_of_turn("01R", 2).unwrap(), lines("01R", &[4]));
        assert!(store.events_of_turn("01R", 3).unwrap().is_empty());
        assert_eq!(load(&store, "01R"), Some(s));
        assert_eq!(checkpoint_kinds(&store, "01R"), ["full", "delta"]);
        assert!(matches!(
            commit(&store, &mut Checkpointer::new(), "nope", 1, &[1], None),
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(store.events("nope"), Err(StoreError::NotFound(_))));
        assert!(matches!(
            store.load_checkpoint("nope"),
            Err(StoreError::NotFound(_))
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
    fn commit_is_one_transaction() {
        let store = mem();
        run(&store, "01R", 1.0);
        store
            .lock()
            .conn
            .execute_batch(
                "CREATE TRIGGER no_checkpoints BEFORE INSERT ON checkpoints
                 BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
            )
            .unwrap();
        let e = commit(
            &store,
            &mut Checkpointer::new(),
            "01R",
            1,
            &[1],
            Some(&big_state(1)),
        )
        .unwrap_err();
        assert!(matches!(e, StoreError::Sqlite { .. }), "{e:?}");
        assert!(
            store.events("01R").unwrap().is_empty(),
            "the events were rolled back"
        );
        store
            .lock()
            .conn
            .execute_batch("DROP TRIGGER no_checkpoints")
            .unwrap();
        let s = big_state(2);
        commit(&store, &mut Checkpointer::new(), "01R", 1, &[1], Some(&s)).unwrap();
        assert_eq!(store.events("01R").unwrap(), lines("01R", &[1]));
        assert_eq!(load(&store, "01R"), Some(s));
    }

    #[test]
    fn deltas_survive_reopening_and_unchanged_states_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let mut s = big_state(5);
        {
            let store = SqliteStore::open(&path).unwrap();
            run(&store, "01R", 1.0);
            let mut cp = Checkpointer::new();
            commit(&store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
            for i in 1..=10 {
                step(&mut s, i);
                commit(&store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
            }
            let before = store.checkpoint_bytes_written();
            commit(&store, &mut cp, "01R", 1, &[1], Some(&s)).unwrap();
            assert_eq!(
                store.checkpoint_bytes_written(),
                before,
                "same state, no checkpoint"
            );
            assert_eq!(checkpoint_kinds(&store, "01R").len(), 11);
        }
        let store = SqliteStore::open(&path).unwrap();
        let mut cp = store.load_checkpoint("01R").unwrap();
        assert_eq!(cp.state(), Some(&s));
        assert_eq!(cp.seq(), 11);
        // After a load the next checkpoint continues with deltas.
        step(&mut s, 11);
        commit(&store, &mut cp, "01R", 2, &[], Some(&s)).unwrap();
        assert_eq!(
            checkpoint_kinds(&store, "01R").last().map(String::as_str),
            Some("delta")
        );
        assert_eq!(load(&SqliteStore::open(&path).unwrap(), "01R"), Some(s));
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
    fn two_thousand_passes_write_what_changed() {
        let store = mem();
        run(&store, "01R", 1.0);
        let mut s = big_state(40);
        let full = serde_json::to_string(&s).unwrap().len() as u64;
        let mut cp = Checkpointer::new();
        commit(&store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
        for i in 1..=2000 {
            step(&mut s, i);
            commit(&store, &mut cp, "01R", 1, &[i], Some(&s)).unwrap();
        }
        let written = store.checkpoint_bytes_written();
        assert!(
            written < 2000 * full / 10,
            "wrote {written} bytes; one full state is {full}"
        );
        assert_eq!(load(&store, "01R"), Some(s));
        // Snapshots replace what came before them: the table stays small too.
        let rows = checkpoint_kinds(&store, "01R");
        assert_eq!(rows[0], "full");
        assert!(rows.len() < 200, "{} rows", rows.len());
        assert_eq!(store.events("01R").unwrap().len(), 2000);
    }

    #[test]
    fn many_deltas_are_capped_by_a_snapshot() {
        let store = mem();
        run(&store, "01R", 1.0);
        let mut s = big_state(400);
        let mut cp = Checkpointer::new();
        commit(&store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
        for i in 1..=i64::from(MAX_DELTAS) {
            step(&mut s, i);
            commit(&store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
        }
        assert_eq!(
            checkpoint_kinds(&store, "01R").len(),
            1 + MAX_DELTAS as usize
        );
        // The next one is a snapshot, which replaces the rows before it.
        step(&mut s, 0);
        commit(&store, &mut cp, "01R", 1, &[], Some(&s)).unwrap();
        assert_eq!(checkpoint_kinds(&store, "01R"), ["full"]);
        assert_eq!(load(&store, "01R"), Some(s));
    }

    #[test]
    fn a_checkpoint_by_another_writer_stops_this_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let (a, b) = (
            SqliteStore::open(&path).unwrap(),
            SqliteStore::open(&path).unwrap(),
        );
        run(&a, "01R", 1.0);
        let mut s = big_state(3);
        let mut cp_a = Checkpointer::new();
        commit(&a, &mut cp_a, "01R", 1, &[], Some(&s)).unwrap();
        // Another process took the run over from that checkpoint.
        let mut cp_b = b.load_checkpoint("01R").unwrap();
        step(&mut s, 1);
        commit(&b, &mut cp_b, "01R", 1, &[1], Some(&s)).unwrap();
        let mut mine = s.clone();
        step(&mut mine, 2);
        let e = commit(&a, &mut cp_a, "01R", 1, &[2], Some(&mine)).unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::Conflict {
                    found: 2,
                    expected: 1,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(load(&SqliteStore::open(&path).unwrap(), "01R"), Some(s));
        assert_eq!(
            a.events("01R").unwrap(),
            lines("01R", &[1]),
            "nothing of a's write"
        );
    }

    #[test]
    fn leases_exclude_other_owners_until_they_expire() {
        let store = mem();
        run(&store, "01R", 1.0);
        let ttl = Duration::from_secs(30);
        assert!(store.acquire_lease("01R", "pid-1", ttl).unwrap());
        assert!(
            store.acquire_lease("01R", "pid-1", ttl).unwrap(),
            "own lease"
        );
        assert!(!store.acquire_lease("01R", "pid-2", ttl).unwrap());
        assert_eq!(store.lease_owner("01R").unwrap().as_deref(), Some("pid-1"));
        store.renew_lease("01R", "pid-1", ttl).unwrap();
        match store.renew_lease("01R", "pid-2", ttl) {
            Err(StoreError::Leased { run_id, owner }) => {
                assert_eq!((run_id.as_str(), owner.as_str()), ("01R", "pid-1"))
            }
            other => panic!("{other:?}"),
        }
        store.release_lease("01R", "pid-2").unwrap();
        assert_eq!(
            store.lease_owner("01R").unwrap().as_deref(),
            Some("pid-1"),
            "not released by another"
        );
        store.release_lease("01R", "pid-1").unwrap();
        assert_eq!(store.lease_owner("01R").unwrap(), None);
        // An expired lease is free for the taking.
        assert!(store.acquire_lease("01R", "pid-1", Duration::ZERO).unwrap());
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(store.lease_owner("01R").unwrap(), None);
        assert!(store.acquire_lease("01R", "pid-2", ttl).unwrap());
        assert!(matches!(
            store.acquire_lease("nope", "pid-1", ttl),
            Err(StoreError::NotFound(_))
        ));
    }

    #[test]
    fn cancel_flag_is_set_seen_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let (runner, canceller) = (
            SqliteStore::open(&path).unwrap(),
            SqliteStore::open(&path).unwrap(),
        );
        run(&runner, "01R", 1.0);
        assert!(!runner.cancel_requested("01R").unwrap());
        canceller.request_cancel("01R").unwrap();
        assert!(runner.cancel_requested("01R").unwrap());
        runner.clear_cancel("01R").unwrap();
        assert!(!canceller.cancel_requested("01R").unwrap());
        assert!(matches!(
            canceller.request_cancel("nope"),
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            runner.cancel_requested("nope"),
            Err(StoreError::NotFound(_))
        ));
    }

    #[cfg(unix)]
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
    fn a_canvas_is_kept_once_and_forgotten_with_its_last_run() {
        let store = mem();
        let a = run(&store, "01A", 1.0);
        let b = run(&store, "01B", 2.0);
        assert_eq!(a.canvas_hash, b.canvas_hash);
        let count = |q: &str| -> i64 { store.lock().conn.query_row(q, [], |r| r.get(0)).unwrap() };
        assert_eq!(count("SELECT COUNT(*) FROM canvases"), 1);
        assert_eq!(store.find_run("01B").unwrap().canvas, a.canvas);
        store
            .lock()
            .conn
            .execute("DELETE FROM runs WHERE id = '01A'", [])
            .unwrap();
        assert_eq!(
            count("SELECT COUNT(*) FROM canvases"),
            1,
            "01B still uses it"
        );
        store
            .lock()
            .conn
            .execute("DELETE FROM runs WHERE id = '01B'", [])
            .unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM canvases"), 0);
    }

    #[test]
    fn a_large_value_is_stored_once_and_forgotten_with_its_last_run() {
        let store = mem();
        let doc: String = (0..200_000)
            .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
            .collect();
        let doc_json = serde_json::to_string(&doc).unwrap();
        let mut states = Vec::new();
        for id in ["01A", "01B"] {
            run(&store, id, 1.0);
            let mut cp = Checkpointer::new();
            let mut state = RunState::default();
            state.globals.insert("sys.query".into(), json!(doc));
            for n in 0..3 {
                let node = format!("StringTransform:T{n}");
                state.set_output(&node, "result", json!(doc));
                let mut w = RunWrite::new(id, 1);
                let mut c = crate::EventChunk::new("m", 7);
                c.push(
                    "node_finished",
                    &format!(r#"{{"component_id":"{node}","inputs":{doc_json},"outputs":{{"result":{doc_json}}}}}"#),
                );
                w.events.push(c);
                w.checkpoint = cp.plan(&state).unwrap();
                store.write_one(w).unwrap();
            }
            states.push(state);
        }
        let count = |q: &str| -> i64 { store.lock().conn.query_row(q, [], |r| r.get(0)).unwrap() };
        assert_eq!(
            count("SELECT COUNT(*) FROM blobs"),
            1,
            "one value, stored once"
        );
        let kept = count("SELECT SUM(length(body)) FROM blobs")
            + count("SELECT SUM(length(body)) FROM event_chunks")
            + count("SELECT SUM(length(body)) FROM checkpoints");
        // Two runs of three nodes: 14 copies of the value as written, LZ4 inside each.
        let one = chunk::compress(&doc_json).len() as i64;
        assert!(kept < one + 4096, "{kept} bytes kept for a value of {one}");
        for (id, state) in ["01A", "01B"].iter().zip(&states) {
            let events = store.events(id).unwrap();
            assert_eq!(events.len(), 3);
            let e: Value = serde_json::from_str(&events[2]).unwrap();
            assert_eq!(e["data"]["outputs"]["result"], json!(doc));
            assert_eq!(e["data"]["inputs"], json!(doc));
            assert_eq!(load(&store, id).as_ref(), Some(state));
        }
        assert!(
            store.run_bytes(&["01A".into()]).unwrap() < 4096,
            "01B still uses the value: deleting 01A does not free it"
        );
        assert!(store.run_bytes(&["01A".into(), "01B".into()]).unwrap() > one as u64);
        store.delete_runs(&["01A".into()]).unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM blobs"), 1, "01B still uses it");
        assert_eq!(store.events("01B").unwrap().len(), 3);
        store.delete_runs(&["01B".into()]).unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM blobs"), 0);
        assert_eq!(count("SELECT COUNT(*) FROM blob_refs"), 0);
    }

    #[test]
    fn a_missing_large_value_is_a_corrupt_store_not_a_panic() {
        let store = mem();
        run(&store, "01A", 1.0);
        let big = serde_json::to_string(&"x".repeat(blobs::MIN_LEN)).unwrap();
        let mut w = RunWrite::new("01A", 1);
        let mut c = crate::EventChunk::new("m", 7);
        c.push("message", &format!(r#"{{"content":{big}}}"#));
        w.events.push(c);
        store.write_one(w).unwrap();
        store.lock().conn.execute("DELETE FROM blobs", []).unwrap();
        let e = store.events("01A").unwrap_err();
        assert!(matches!(e, StoreError::Corrupt(_)), "{e}");
        assert!(e.to_string().contains("run 01A"), "{e}");
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

    #[test]
    fn eight_processes_share_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = Arc::new(dir.path().join("shared.db"));
        let start = Arc::new(Barrier::new(8));
        let workers: Vec<_> = (0..8)
            .map(|w| {
                let (path, start) = (Arc::clone(&path), Arc::clone(&start));
                std::thread::spawn(move || -> Result<()> {
                    start.wait();
                    let store = SqliteStore::open(path.as_path())?;
                    for i in 0..25 {
                        let rec = RunRecord::new("flow.json", format!("{{\"w\": {w}}}"));
                        store.create_run(&rec)?;
                        let turn = store.begin_turn(&rec.id, TurnKind::Start, "", &json!({}))?;
                        assert!(store.acquire_lease(
                            &rec.id,
                            &format!("w{w}"),
                            Duration::from_secs(30)
                        )?);
                        let mut s = big_state(5);
                        let mut cp = Checkpointer::new();
                        commit(&store, &mut cp, &rec.id, turn, &[1], Some(&s))?;
                        step(&mut s, i);
                        commit(&store, &mut cp, &rec.id, turn, &[2], Some(&s))?;
                        store.set_status(&rec.id, RunStatus::Succeeded, None, None)?;
                        store.release_lease(&rec.id, &format!("w{w}"))?;
                        assert_eq!(store.load_checkpoint(&rec.id)?.state(), Some(&s));
                        assert_eq!(store.events(&rec.id)?, lines(&rec.id, &[1, 2]));
                    }
                    Ok(())
                })
            })
            .collect();
        for w in workers {
            if let Err(e) = w.join().unwrap() {
                panic!("a worker failed: {e} ({e:?})");
            }
        }
        let store = SqliteStore::open(path.as_path()).unwrap();
        let runs = store.list_runs(Some(RunStatus::Succeeded), 0).unwrap();
        assert_eq!(runs.len(), 200);
        assert!(runs.iter().all(|r| store.events(&r.id).unwrap().len() == 2));
    }
}
