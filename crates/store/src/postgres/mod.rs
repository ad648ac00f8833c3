//! [`PgStore`]: the [`Store`] on a PostgreSQL database, for a store that several
//! machines share. It stores what [`SqliteStore`](crate::SqliteStore) stores, the same
//! way (`rows.rs` makes the stored form for both), in the tables of one
//! schema (`canvas` unless the URL names another: [`PgUrl`]).
//!
//! Calls are blocking, like the [`Store`] trait: each takes a connection from a small
//! pool for its duration (`pool.rs`). From async code they go through
//! [`blocking`](crate::blocking); one made straight from a thread that drives a tokio
//! runtime (where the blocking client would panic) fails with
//! [`StoreError::AsyncContext`] instead.
//!
//! What differs from SQLite, and why:
//! - Leases are stamped and judged by the server's clock (machines' clocks differ); a
//!   lease is taken by one `UPDATE … WHERE` free, expired or ours, which row locks make
//!   atomic across processes and machines. The shortcut for a holder that died applies to
//!   holders of this machine only ([`lease::holder_is_dead`]).
//! - A group of writes is one transaction with a savepoint per write, like SQLite's; a
//!   transaction the server aborts for a deadlock or a serialization failure is run again.
//! - [`Store::reclaim`] does nothing ([`Reclaimed::Autovacuum`]): the server's autovacuum
//!   makes deleted rows' space reusable. [`Store::size`] is `pg_total_relation_size` of
//!   the store's tables.

mod agents;
mod batch;
mod pool;
mod schema;
mod url;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use postgres::types::{FromSql, ToSql};
use postgres::{GenericClient, IsolationLevel, Row, Transaction};
use serde_json::Value;

pub use schema::PG_SCHEMA_VERSION;
pub use url::{DEFAULT_SCHEMA, PgUrl};

use pool::{Pool, Statements};

use crate::record::{MAX_MATCHES, RawRun, RawTurn, like_prefix, one_match, to_json};
use crate::retention::{self, AutoVacuum, DELETE_CHUNK, PruneFilter, Reclaimed, StoreSize};
use crate::rows::{
    self, Body, Candidate, CheckpointRow, ChunkRow, FirstTurn, LeaseRow, NewCheckpoint, NewChunk,
    PruneQuery, Rows, TurnEndRow,
};
use crate::{
    Checkpointer, Result, RowFinish, RunRecord, RunStatus, RunWrite, Store, StoreError, TurnKind,
    TurnRecord, lease, unix_now,
};

/// Connections a store opens at most.
const MAX_CONNECTIONS: usize = 4;
/// How long a statement waits for a row lock before it fails (SQLite's busy timeout).
const LOCK_TIMEOUT: &str = "30s";
/// Times a transaction aborted by a deadlock or a serialization failure is tried.
const TRIES: usize = 5;
/// Now by the server's clock, in Unix seconds (what leases are stamped with).
const NOW: &str = "extract(epoch FROM clock_timestamp())::float8";

/// A run's columns and its canvas text, as [`RawRun`] reads them; with [`RUN_FROM`].
const RUN_FIELDS: &str = "r.id, r.source, c.text, r.canvas_hash, r.status, r.parent, \
                          r.created_at, r.updated_at, r.turns, r.error, r.waiting, r.options";
const RUN_FROM: &str = "runs r JOIN canvases c ON c.hash = r.canvas_hash";
/// The store's tables (what `size` measures).
const TABLES: &[&str] = &[
    "canvas_schema",
    "canvases",
    "runs",
    "turns",
    "event_chunks",
    "checkpoints",
    "blobs",
    "blob_refs",
    "batches",
    "batch_rows",
];

/// The PostgreSQL implementation of [`Store`].
pub struct PgStore {
    pool: Pool,
    url: PgUrl,
    /// Checkpoint bytes (as stored) written by this store.
    checkpoint_bytes: AtomicU64,
}

/// Wrap a PostgreSQL error with what the store was doing.
pub(crate) fn pg_err(context: &str, source: postgres::Error) -> StoreError {
    StoreError::Postgres {
        context: context.to_string(),
        source,
    }
}

/// A PostgreSQL error on one line: the server's message (and its detail), or the
/// client's with its causes (`error connecting to server: Connection refused`).
pub(crate) fn one_line(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(d) => format!("{}: {} ({d})", db.severity(), db.message()),
            None => format!("{}: {}", db.severity(), db.message()),
        },
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                let more = c.to_string();
                // Some errors repeat their cause in their own text.
                if !text.contains(&more) {
                    text.push_str(": ");
                    text.push_str(&more);
                }
                cause = c.source();
            }
            text
        }
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An identifier, quoted.
pub(crate) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Column `i` of a row (a column of an unexpected type is an error, not a panic).
pub(crate) fn col<'a, T: FromSql<'a>>(row: &'a Row, i: usize) -> Result<T> {
    row.try_get(i)
        .map_err(|e| pg_err("reading a stored row", e))
}

/// True for the errors after which the same transaction may well succeed.
fn retryable(e: &StoreError) -> bool {
    match e {
        StoreError::Postgres { source, .. } => source.code().is_some_and(|c| {
            *c == postgres::error::SqlState::T_R_DEADLOCK_DETECTED
                || *c == postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
        }),
        _ => false,
    }
}

impl PgStore {
    /// Open the store at `url`, creating its schema and tables (or migrating them) as
    /// needed.
    pub fn open(url: &PgUrl) -> Result<PgStore> {
        let store = PgStore::connect(url, false);
        let mut c = store.pool.get()?;
        schema::migrate(&mut c, url.schema())?;
        drop(c);
        Ok(store)
    }

    /// Open an existing store for reading only: nothing is created or migrated, and
    /// writes through it fail. `None` when the schema holds no store.
    pub fn open_read_only(url: &PgUrl) -> Result<Option<PgStore>> {
        let store = PgStore::connect(url, true);
        let mut c = store.pool.get()?;
        let Some(found) = schema::version(&mut c, url.schema())? else {
            return Ok(None);
        };
        schema::check_not_newer(found)?;
        drop(c);
        Ok(Some(store))
    }

    fn connect(url: &PgUrl, read_only: bool) -> PgStore {
        let mut setup = format!(
            "SET search_path TO {}; SET lock_timeout = '{LOCK_TIMEOUT}';",
            ident(url.schema())
        );
        if read_only {
            setup.push_str(" SET default_transaction_read_only = on;");
        }
        PgStore {
            pool: Pool::new(url.config.clone(), setup, url.to_string(), MAX_CONNECTIONS),
            url: url.clone(),
            checkpoint_bytes: AtomicU64::new(0),
        }
    }

    /// The store's URL (its password hidden when shown).
    pub fn url(&self) -> &PgUrl {
        &self.url
    }

    /// Checkpoint bytes (full snapshots and deltas) this store has written.
    pub fn checkpoint_bytes_written(&self) -> u64 {
        self.checkpoint_bytes.load(Ordering::Relaxed)
    }

    /// Run `f` in one transaction (read committed), again when the server aborted it
    /// for a deadlock or a serialization failure.
    fn tx<T>(&self, what: &str, mut f: impl FnMut(&mut Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut c = self.pool.get()?;
        let mut tries = 0;
        loop {
            tries += 1;
            let mut tx = c.transaction().map_err(|e| pg_err(what, e))?;
            let out = f(&mut tx).and_then(|v| {
                tx.commit().map_err(|e| pg_err(what, e))?;
                Ok(v)
            });
            match out {
                Err(e) if tries < TRIES && retryable(&e) => continue,
                out => return out,
            }
        }
    }

    /// Run `f` in one read-only transaction that sees the store as of one moment.
    fn snapshot<T>(
        &self,
        what: &str,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut c = self.pool.get()?;
        let mut tx = c
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|e| pg_err(what, e))?;
        let out = f(&mut tx)?;
        tx.commit().map_err(|e| pg_err(what, e))?;
        Ok(out)
    }

    /// One statement changing the run's row; `NotFound` when there is no such run.
    fn update_run(
        &self,
        what: &str,
        run_id: &str,
        q: &str,
        p: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<()> {
        let ctx = format!("{what} (run {run_id})");
        let n = self.tx(&ctx, |tx| tx.execute(q, p).map_err(|e| pg_err(&ctx, e)))?;
        if n == 0 {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        Ok(())
    }

    /// Insert the run of `t` with its first turn (and its lease), in one transaction.
    fn create_first_turn(&self, t: &FirstTurn<'_>) -> Result<u32> {
        let ctx = format!("creating the run (run {})", t.rec.id);
        self.tx(&ctx, |tx| {
            insert_first_turn(&mut PgRows::new(tx, "creating the run"), t)?;
            Ok(1)
        })
    }

    fn take_lease(&self, run_id: &str, owner: &str, ttl: Duration) -> Result<bool> {
        let ctx = format!("taking the lease (run {run_id})");
        let ttl = ttl.as_secs_f64();
        self.tx(&ctx, |tx| {
            let err = |e| pg_err(&ctx, e);
            let n = tx
                .execute(
                    &format!(
                        "UPDATE runs SET lease_owner = $2, lease_expires = {NOW} + $3
                         WHERE id = $1 AND (lease_owner IS NULL OR lease_owner = $2
                               OR lease_expires IS NULL OR lease_expires <= {NOW})"
                    ),
                    &[&run_id, &owner, &ttl],
                )
                .map_err(err)?;
            if n == 1 {
                return Ok(true);
            }
            let row = tx
                .query_opt("SELECT lease_owner FROM runs WHERE id = $1", &[&run_id])
                .map_err(err)?;
            let Some(row) = row else {
                return Err(StoreError::NotFound(run_id.to_string()));
            };
            // A holder of this machine that is gone is stale at once (a killed run
            // resumes without waiting for its lease to expire); only if it still holds it.
            match col::<Option<String>>(&row, 0)? {
                Some(h) if lease::holder_is_dead(&h) => {
                    let n = tx
                        .execute(
                            &format!(
                                "UPDATE runs SET lease_owner = $2, lease_expires = {NOW} + $3
                                 WHERE id = $1 AND lease_owner = $4"
                            ),
                            &[&run_id, &owner, &ttl, &h],
                        )
                        .map_err(err)?;
                    Ok(n == 1)
                }
                _ => Ok(false),
            }
        })
    }

    fn event_lines(&self, run_id: &str, turn: Option<u32>) -> Result<Vec<String>> {
        let ctx = format!("reading the events (run {run_id})");
        self.snapshot(&ctx, |tx| {
            rows::event_lines(&mut PgRows::new(tx, "reading the events"), run_id, turn)
        })
    }

    fn get_run(c: &mut impl GenericClient, id: &str) -> Result<Option<RunRecord>> {
        let q = format!("SELECT {RUN_FIELDS} FROM {RUN_FROM} WHERE r.id = $1");
        let row = c
            .query_opt(&q, &[&id])
            .map_err(|e| pg_err(&format!("reading the run (run {id})"), e))?;
        row.map(|r| read_run(&r)?.into_record()).transpose()
    }
}

/// Read the [`RUN_FIELDS`] of a row.
fn read_run(r: &Row) -> Result<RawRun> {
    Ok(RawRun {
        id: col(r, 0)?,
        source: col(r, 1)?,
        canvas: col(r, 2)?,
        canvas_hash: col(r, 3)?,
        status: col(r, 4)?,
        parent: col(r, 5)?,
        created_at: col(r, 6)?,
        updated_at: col(r, 7)?,
        turns: col(r, 8)?,
        error: col(r, 9)?,
        waiting: col(r, 10)?,
        options: col(r, 11)?,
    })
}

fn read_checkpoint(r: &Row) -> Result<CheckpointRow> {
    Ok(CheckpointRow {
        seq: col(r, 0)?,
        body: Body::Packed(col(r, 1)?),
        cuts: col(r, 2)?,
    })
}

/// Insert a new run with its first turn, its lease and its tie to a batch row (see
/// [`Rows::create_run`]).
fn insert_first_turn<C: GenericClient>(c: &mut PgRows<'_, C>, t: &FirstTurn<'_>) -> Result<()> {
    let rec = t.rec;
    let ctx = format!("creating the run (run {})", rec.id);
    if let (Some((batch_id, idx)), Some((owner, _))) = (t.row, t.lease) {
        batch::tie_row_run(c, batch_id, idx, owner, &rec.id)?;
    }
    let inputs = to_json(t.inputs)?;
    insert_run(c, &ctx, rec, 1, RunStatus::Running)?;
    c.execute(
        "INSERT INTO turns (run_id, turn, kind, query, inputs, started_at)
         VALUES ($1, 1, $2, $3, $4, $5)",
        &[
            &rec.id,
            &t.kind.as_str(),
            &t.query,
            &inputs,
            &rec.created_at,
        ],
    )
    .map_err(|e| pg_err(&ctx, e))?;
    if let Some((owner, ttl)) = t.lease {
        c.execute(
            &format!(
                "UPDATE runs SET lease_owner = $2, lease_expires = {NOW} + $3 \
                 WHERE id = $1"
            ),
            &[&rec.id, &owner, &ttl.as_secs_f64()],
        )
        .map_err(|e| pg_err(&ctx, e))?;
    }
    Ok(())
}

/// Insert `rec` into `runs` with `turns` and `status` (a new run's first turn is
/// written with it), and its canvas into `canvases` unless it is there.
fn insert_run<C: GenericClient>(
    tx: &mut PgRows<'_, C>,
    ctx: &str,
    rec: &RunRecord,
    turns: u32,
    status: RunStatus,
) -> Result<()> {
    let waiting = rec.waiting.as_ref().map(to_json).transpose()?;
    let options = rec.options.as_ref().map(to_json).transpose()?;
    let err = |e| pg_err(ctx, e);
    // The canvas row is locked (not merely found) until the run that uses it is in: a
    // prune deleting its last other run waits, then sees this one and keeps it.
    tx.execute(
        "INSERT INTO canvases (hash, text) VALUES ($1, $2)
         ON CONFLICT (hash) DO UPDATE SET hash = EXCLUDED.hash",
        &[&rec.canvas_hash, &rec.canvas],
    )
    .map_err(err)?;
    tx.execute(
        "INSERT INTO runs (id, source, canvas_hash, status, parent, created_at, updated_at,
             turns, error, waiting, options)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        &[
            &rec.id,
            &rec.source,
            &rec.canvas_hash,
            &status.as_str(),
            &rec.parent,
            &rec.created_at,
            &rec.updated_at,
            &i64::from(turns),
            &rec.error,
            &waiting,
            &options,
        ],
    )
    .map_err(err)?;
    Ok(())
}

/// The row operations of [`rows`] on one PostgreSQL connection or transaction.
pub(crate) struct PgRows<'a, C: GenericClient> {
    c: &'a mut C,
    /// What the store is doing, for error messages.
    what: &'static str,
    /// The connection's prepared statements, when its statements are kept.
    statements: Option<&'a mut Statements>,
}

type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

impl<'a, C: GenericClient> PgRows<'a, C> {
    pub(crate) fn new(c: &'a mut C, what: &'static str) -> Self {
        PgRows {
            c,
            what,
            statements: None,
        }
    }

    /// Its statements prepared once on the connection, kept in `statements`.
    fn prepared(mut self, statements: &'a mut Statements) -> Self {
        self.statements = Some(statements);
        self
    }

    /// Run `q`: rows changed.
    pub(crate) fn execute(&mut self, q: &str, p: Params<'_>) -> PgResult<u64> {
        match self.statements.as_deref_mut() {
            Some(s) => {
                let st = s.get(self.c, q)?;
                self.c.execute(&st, p)
            }
            None => self.c.execute(q, p),
        }
    }

    /// Run `q`: its row, if any.
    pub(crate) fn query_opt(&mut self, q: &str, p: Params<'_>) -> PgResult<Option<Row>> {
        match self.statements.as_deref_mut() {
            Some(s) => {
                let st = s.get(self.c, q)?;
                self.c.query_opt(&st, p)
            }
            None => self.c.query_opt(q, p),
        }
    }

    /// Run `q`: its one row.
    fn query_one(&mut self, q: &str, p: Params<'_>) -> PgResult<Row> {
        match self.statements.as_deref_mut() {
            Some(s) => {
                let st = s.get(self.c, q)?;
                self.c.query_one(&st, p)
            }
            None => self.c.query_one(q, p),
        }
    }
}

type PgResult<T> = std::result::Result<T, postgres::Error>;

/// The error of doing `what` for run `run_id` (formatted only on error).
fn err_for<'a>(what: &'static str, run_id: &'a str) -> impl Fn(postgres::Error) -> StoreError + 'a {
    move |e| pg_err(&format!("{what} (run {run_id})"), e)
}

impl<C: GenericClient> Rows for PgRows<'_, C> {
    fn run_exists(&mut self, run_id: &str) -> Result<bool> {
        let err = err_for(self.what, run_id);
        let row = self
            .query_opt("SELECT 1 FROM runs WHERE id = $1", &[&run_id])
            .map_err(err)?;
        Ok(row.is_some())
    }

    fn last_event_seq(&mut self, run_id: &str) -> Result<i64> {
        let err = err_for(self.what, run_id);
        let row = self
            .query_opt(
                "SELECT seq + n - 1 FROM event_chunks WHERE run_id = $1
                 ORDER BY seq DESC LIMIT 1",
                &[&run_id],
            )
            .map_err(err)?;
        row.map_or(Ok(0), |r| col(&r, 0))
    }

    fn insert_chunk(&mut self, c: &NewChunk<'_>) -> Result<()> {
        let err = err_for(self.what, c.run_id);
        self.execute(
            "INSERT INTO event_chunks (run_id, seq, n, turn, message_id, created_at, body, cuts)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                &c.run_id,
                &c.chunk.seq,
                &c.chunk.n,
                &i64::from(c.turn),
                &c.chunk.message_id,
                &c.chunk.created_at,
                &c.chunk.body,
                &c.chunk.cuts,
            ],
        )
        .map_err(err)
        .map(drop)
    }

    fn last_checkpoint_seq(&mut self, run_id: &str) -> Result<i64> {
        let err = err_for(self.what, run_id);
        let row = self
            .query_one(
                "SELECT COALESCE(MAX(seq), 0)::bigint FROM checkpoints WHERE run_id = $1",
                &[&run_id],
            )
            .map_err(err)?;
        col(&row, 0)
    }

    fn insert_checkpoint(&mut self, c: &NewCheckpoint<'_>) -> Result<()> {
        let err = err_for(self.what, c.run_id);
        let kind = if c.full { "full" } else { "delta" };
        self.execute(
            "INSERT INTO checkpoints (run_id, seq, turn, kind, body, cuts)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &c.run_id,
                &c.seq,
                &i64::from(c.turn),
                &kind,
                &c.body,
                &c.cuts,
            ],
        )
        .map_err(err)
        .map(drop)
    }

    fn drop_checkpoints_before(&mut self, run_id: &str, seq: i64) -> Result<()> {
        let err = err_for(self.what, run_id);
        self.execute(
            "DELETE FROM checkpoints WHERE run_id = $1 AND seq < $2",
            &[&run_id, &seq],
        )
        .map_err(err)
        .map(drop)
    }

    fn ref_blob(&mut self, run_id: &str, hash: &str) -> Result<bool> {
        let err = err_for(self.what, run_id);
        // A key-share lock keeps the blob until this transaction ends: a prune deleting
        // its last other user waits for it (see `schema`).
        let stored = self
            .query_opt(
                "SELECT 1 FROM blobs WHERE hash = $1 FOR KEY SHARE",
                &[&hash],
            )
            .map_err(&err)?;
        if stored.is_none() {
            return Ok(false);
        }
        self.execute(
            "INSERT INTO blob_refs (run_id, hash) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&run_id, &hash],
        )
        .map_err(&err)?;
        Ok(true)
    }

    fn insert_blob(&mut self, run_id: &str, hash: &str, body: &[u8]) -> Result<()> {
        let err = err_for(self.what, run_id);
        // Another process may be storing the same value: then its row is the one kept
        // (and locked, as in `ref_blob`).
        self.execute(
            "INSERT INTO blobs (hash, body) VALUES ($1, $2)
                 ON CONFLICT (hash) DO UPDATE SET hash = EXCLUDED.hash",
            &[&hash, &body],
        )
        .map_err(&err)?;
        self.execute(
            "INSERT INTO blob_refs (run_id, hash) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&run_id, &hash],
        )
        .map_err(&err)
        .map(drop)
    }

    fn create_run(&mut self, t: &FirstTurn<'_>) -> Result<()> {
        insert_first_turn(self, t)
    }

    fn finish_row(&mut self, f: &RowFinish) -> Result<()> {
        batch::record_row_end(self, &f.batch_id, f.idx, &f.owner, &f.end)
    }

    fn end_turn(&mut self, run_id: &str, turn: u32, end: &TurnEndRow<'_>) -> Result<()> {
        let err = err_for(self.what, run_id);
        let status = end.status.as_str();
        self.execute(
            "UPDATE runs SET status = $2, error = $3, waiting = $4, updated_at = $5
                 WHERE id = $1",
            &[&run_id, &status, &end.error, &end.waiting, &end.now],
        )
        .map_err(&err)?;
        self.execute(
            "UPDATE turns SET ended_at = $3, status = $4 WHERE run_id = $1 AND turn = $2",
            &[&run_id, &i64::from(turn), &end.now, &status],
        )
        .map_err(&err)
        .map(drop)
    }

    fn blob(&mut self, run_id: &str, hash: &str) -> Result<Option<Vec<u8>>> {
        let err = err_for(self.what, run_id);
        let row = self
            .query_opt("SELECT body FROM blobs WHERE hash = $1", &[&hash])
            .map_err(err)?;
        row.map(|r| col(&r, 0)).transpose()
    }

    fn legacy_events(&mut self, _run_id: &str, _turn: Option<u32>) -> Result<Vec<String>> {
        // PostgreSQL stores began with chunks.
        Ok(Vec::new())
    }

    fn chunks(&mut self, run_id: &str, turn: Option<u32>) -> Result<Vec<ChunkRow>> {
        let err = err_for(self.what, run_id);
        let turn = turn.map(i64::from);
        let rows = self
            .c
            .query(
                "SELECT seq, n, message_id, created_at, body, cuts FROM event_chunks
                 WHERE run_id = $1 AND ($2::bigint IS NULL OR turn = $2) ORDER BY seq",
                &[&run_id, &turn],
            )
            .map_err(err)?;
        rows.iter()
            .map(|r| {
                Ok(ChunkRow {
                    seq: col(r, 0)?,
                    n: col(r, 1)?,
                    message_id: col(r, 2)?,
                    created_at: col(r, 3)?,
                    body: col(r, 4)?,
                    cuts: col(r, 5)?,
                })
            })
            .collect()
    }

    fn last_full_checkpoint(&mut self, run_id: &str) -> Result<Option<CheckpointRow>> {
        let err = err_for(self.what, run_id);
        let row = self
            .query_opt(
                "SELECT seq, body, cuts FROM checkpoints WHERE run_id = $1 AND kind = 'full'
                 ORDER BY seq DESC LIMIT 1",
                &[&run_id],
            )
            .map_err(err)?;
        row.map(|r| read_checkpoint(&r)).transpose()
    }

    fn checkpoints_after(&mut self, run_id: &str, seq: i64) -> Result<Vec<CheckpointRow>> {
        let err = err_for(self.what, run_id);
        let rows = self
            .c
            .query(
                "SELECT seq, body, cuts FROM checkpoints WHERE run_id = $1 AND seq > $2
                 ORDER BY seq",
                &[&run_id, &seq],
            )
            .map_err(err)?;
        rows.iter().map(read_checkpoint).collect()
    }

    fn lease_clock(&mut self) -> Result<f64> {
        let row = self
            .query_one(&format!("SELECT {NOW}"), &[])
            .map_err(|e| pg_err("reading the server's clock", e))?;
        col(&row, 0)
    }

    fn prune_candidates(&mut self, q: &PruneQuery<'_>) -> Result<Vec<Candidate>> {
        let rows = self
            .c
            .query(
                &format!(
                    "SELECT {RUN_FIELDS}, r.lease_owner, r.lease_expires FROM {RUN_FROM}
                     WHERE ($1::float8 IS NULL OR r.updated_at < $1)
                       AND (cardinality($2::text[]) = 0 OR r.status = ANY($2))
                       AND r.id NOT IN (SELECT id FROM runs
                                        ORDER BY created_at DESC, id DESC LIMIT $3)
                       AND NOT (r.status = 'running' AND r.lease_owner IS NULL
                                AND r.updated_at > $4)
                     ORDER BY r.created_at DESC, r.id DESC"
                ),
                &[&q.before, &q.statuses, &q.keep, &q.starting],
            )
            .map_err(|e| pg_err("selecting runs to prune", e))?;
        rows.iter()
            .map(|r| {
                Ok(Candidate {
                    run: read_run(r)?,
                    owner: col(r, 12)?,
                    expires: col(r, 13)?,
                })
            })
            .collect()
    }

    fn live_leases(&mut self, ids: &[String], now: f64) -> Result<Vec<LeaseRow>> {
        // Every run of the chunk is locked (in id order, as any other prune locks them),
        // so none is leased between this look and the delete.
        let rows = self
            .c
            .query(
                "SELECT id, lease_owner, lease_expires FROM runs WHERE id = ANY($1)
                 ORDER BY id FOR UPDATE",
                &[&ids],
            )
            .map_err(|e| pg_err("deleting runs", e))?;
        let mut out = Vec::new();
        for r in &rows {
            let lease = LeaseRow {
                id: col(r, 0)?,
                owner: col(r, 1)?,
                expires: col(r, 2)?,
            };
            if lease.owner.is_some() && lease.expires.is_some_and(|e| e > now) {
                out.push(lease);
            }
        }
        Ok(out)
    }

    fn delete_runs(&mut self, ids: &[&str], starting: f64) -> Result<usize> {
        let n = self
            .execute(
                "DELETE FROM runs WHERE id = ANY($1)
                 AND NOT (status = 'running' AND lease_owner IS NULL AND updated_at > $2)",
                &[&ids, &starting],
            )
            .map_err(|e| pg_err("deleting runs", e))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }
}

impl Store for PgStore {
    fn create_run(&self, rec: &RunRecord) -> Result<()> {
        let ctx = format!("creating the run (run {})", rec.id);
        self.tx(&ctx, |tx| {
            let mut rows = PgRows::new(tx, "creating the run");
            insert_run(&mut rows, &ctx, rec, rec.turns, rec.status)
        })
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
        let mut c = self.pool.get()?;
        if let Some(rec) = PgStore::get_run(&mut *c, q)? {
            return Ok(rec);
        }
        let ctx = format!("finding the run {q}");
        let rows = if q.eq_ignore_ascii_case("latest") {
            c.query(
                "SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT 1",
                &[],
            )
        } else {
            // ILIKE: case-insensitive, as SQLite's LIKE is for ids (ASCII).
            c.query(
                "SELECT id FROM runs WHERE id ILIKE $1 ESCAPE '\\'
                 ORDER BY created_at DESC, id DESC LIMIT $2",
                &[&like_prefix(q), &(MAX_MATCHES as i64 + 1)],
            )
        }
        .map_err(|e| pg_err(&ctx, e))?;
        let ids = rows.iter().map(|r| col(r, 0)).collect::<Result<_>>()?;
        match one_match(q, ids)? {
            Some(id) => PgStore::get_run(&mut *c, &id)?.ok_or_else(not_found),
            None => Err(not_found()),
        }
    }

    fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>> {
        // LIMIT NULL is none.
        let limit = (limit > 0).then(|| i64::try_from(limit).unwrap_or(i64::MAX));
        let q = format!(
            "SELECT {RUN_FIELDS} FROM {RUN_FROM} WHERE ($1::text IS NULL OR r.status = $1)
             ORDER BY r.created_at DESC, r.id DESC LIMIT $2"
        );
        let status = status.map(RunStatus::as_str);
        let rows = self
            .pool
            .get()?
            .query(&q, &[&status, &limit])
            .map_err(|e| pg_err("listing runs", e))?;
        rows.iter().map(|r| read_run(r)?.into_record()).collect()
    }

    fn count_runs(&self, status: Option<RunStatus>) -> Result<u64> {
        let status = status.map(RunStatus::as_str);
        let row = self
            .pool
            .get()?
            .query_one(
                "SELECT COUNT(*) FROM runs WHERE ($1::text IS NULL OR status = $1)",
                &[&status],
            )
            .map_err(|e| pg_err("counting runs", e))?;
        Ok(u64::try_from(col::<i64>(&row, 0)?).unwrap_or(0))
    }

    fn write(&self, writes: &[RunWrite]) -> Result<Vec<Result<()>>> {
        let ctx = "committing a group of writes";
        let mut c = self.pool.get()?;
        let (client, statements) = c.parts();
        let mut tries = 0;
        // Chunks are joined here, in one buffer for the group.
        let mut joined = String::new();
        // The batches whose rows end in the group, locked first and in order: a row's
        // end locks its batch and a new run its canvas, which two groups taking them the
        // other way round would deadlock on.
        let mut batches: Vec<&str> = writes
            .iter()
            .filter_map(|w| w.row_end.as_ref().map(|f| f.batch_id.as_str()))
            .collect();
        batches.sort_unstable();
        batches.dedup();
        loop {
            tries += 1;
            let mut tx = client.transaction().map_err(|e| pg_err(ctx, e))?;
            if !batches.is_empty() {
                let locked = tx.execute(
                    "SELECT 1 FROM batches WHERE id = ANY($1) ORDER BY id FOR UPDATE",
                    &[&batches],
                );
                if let Err(e) = locked.map_err(|e| pg_err(ctx, e)) {
                    if tries < TRIES && retryable(&e) {
                        continue;
                    }
                    return Err(e);
                }
            }
            let mut results = Vec::with_capacity(writes.len());
            let mut bytes = 0;
            for w in writes {
                let mut sp = tx.savepoint("canvas_write").map_err(|e| pg_err(ctx, e))?;
                let r = rows::write_run(
                    &mut PgRows::new(&mut sp, "committing").prepared(statements),
                    w,
                    &mut joined,
                );
                let r = match r {
                    Ok(written) => {
                        sp.commit().map_err(|e| pg_err(ctx, e))?;
                        bytes += written;
                        Ok(())
                    }
                    Err(e) => {
                        sp.rollback().map_err(|e| pg_err(ctx, e))?;
                        Err(e)
                    }
                };
                results.push(r);
            }
            // A write the server aborted for a deadlock would go through alone: the
            // group is run again rather than failing it.
            let again = results.iter().any(|r| r.as_ref().is_err_and(retryable));
            if again && tries < TRIES {
                tx.rollback().map_err(|e| pg_err(ctx, e))?;
                continue;
            }
            match tx.commit() {
                Ok(()) => {}
                Err(e) => {
                    let e = pg_err(ctx, e);
                    if tries < TRIES && retryable(&e) {
                        continue;
                    }
                    return Err(e);
                }
            }
            self.checkpoint_bytes.fetch_add(bytes, Ordering::Relaxed);
            return Ok(results);
        }
    }

    fn load_checkpoint(&self, run_id: &str) -> Result<Checkpointer> {
        let ctx = format!("reading the checkpoint (run {run_id})");
        let texts = self.snapshot(&ctx, |tx| {
            rows::checkpoint_texts(&mut PgRows::new(tx, "reading the checkpoint"), run_id)
        })?;
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
            "setting the status",
            run_id,
            "UPDATE runs SET status = $2, error = $3, waiting = $4, updated_at = $5 WHERE id = $1",
            &[&run_id, &status.as_str(), &error, &waiting, &unix_now()],
        )
    }

    fn begin_turn(&self, run_id: &str, kind: TurnKind, query: &str, inputs: &Value) -> Result<u32> {
        let ctx = format!("beginning a turn (run {run_id})");
        let inputs = to_json(inputs)?;
        let now = unix_now();
        let turns: Option<i64> = self.tx(&ctx, |tx| {
            let err = |e| pg_err(&ctx, e);
            let row = tx
                .query_opt(
                    "UPDATE runs SET turns = turns + 1, status = 'running', error = NULL,
                     waiting = NULL, updated_at = $2 WHERE id = $1 RETURNING turns",
                    &[&run_id, &now],
                )
                .map_err(err)?;
            let Some(row) = row else { return Ok(None) };
            let n: i64 = col(&row, 0)?;
            tx.execute(
                "INSERT INTO turns (run_id, turn, kind, query, inputs, started_at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[&run_id, &n, &kind.as_str(), &query, &inputs, &now],
            )
            .map_err(err)?;
            Ok(Some(n))
        })?;
        let turns = turns.ok_or_else(|| StoreError::NotFound(run_id.to_string()))?;
        u32::try_from(turns)
            .map_err(|_| StoreError::Corrupt(format!("run {run_id} has {turns} turns")))
    }

    fn last_turn(&self, run_id: &str) -> Result<Option<TurnRecord>> {
        let ctx = format!("reading the last turn (run {run_id})");
        let mut c = self.pool.get()?;
        let row = c
            .query_opt(
                "SELECT turn, kind, query, inputs, started_at, ended_at, status FROM turns
                 WHERE run_id = $1 ORDER BY turn DESC LIMIT 1",
                &[&run_id],
            )
            .map_err(|e| pg_err(&ctx, e))?;
        let Some(r) = row else {
            if PgRows::new(&mut *c, "reading the last turn").run_exists(run_id)? {
                return Ok(None);
            }
            return Err(StoreError::NotFound(run_id.to_string()));
        };
        let raw = RawTurn {
            turn: col(&r, 0)?,
            kind: col(&r, 1)?,
            query: col(&r, 2)?,
            inputs: col(&r, 3)?,
            started_at: col(&r, 4)?,
            ended_at: col(&r, 5)?,
            status: col(&r, 6)?,
        };
        raw.into_record(run_id).map(Some)
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
        let ctx = format!("releasing the lease (run {run_id})");
        self.tx(&ctx, |tx| {
            tx.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires = NULL
                 WHERE id = $1 AND lease_owner = $2",
                &[&run_id, &owner],
            )
            .map_err(|e| pg_err(&ctx, e))
            .map(drop)
        })
    }

    fn lease_owner(&self, run_id: &str) -> Result<Option<String>> {
        let row = self
            .pool
            .get()?
            .query_opt(
                &format!(
                    "SELECT CASE WHEN lease_expires > {NOW} THEN lease_owner END
                     FROM runs WHERE id = $1"
                ),
                &[&run_id],
            )
            .map_err(|e| pg_err(&format!("reading the lease (run {run_id})"), e))?;
        match row {
            Some(r) => col(&r, 0),
            None => Err(StoreError::NotFound(run_id.to_string())),
        }
    }

    fn request_cancel(&self, run_id: &str) -> Result<()> {
        let q = "UPDATE runs SET cancel_requested = true WHERE id = $1";
        self.update_run("requesting a cancel", run_id, q, &[&run_id])
    }

    fn cancel_requested(&self, run_id: &str) -> Result<bool> {
        let row = self
            .pool
            .get()?
            .query_opt(
                "SELECT cancel_requested FROM runs WHERE id = $1",
                &[&run_id],
            )
            .map_err(|e| pg_err(&format!("reading the cancel flag (run {run_id})"), e))?;
        match row {
            Some(r) => col(&r, 0),
            None => Err(StoreError::NotFound(run_id.to_string())),
        }
    }

    fn clear_cancel(&self, run_id: &str) -> Result<()> {
        let q = "UPDATE runs SET cancel_requested = false WHERE id = $1";
        self.update_run("clearing the cancel flag", run_id, q, &[&run_id])
    }

    fn select_prunable(&self, filter: &PruneFilter) -> Result<Vec<RunRecord>> {
        let mut c = self.pool.get()?;
        retention::prunable(&mut PgRows::new(&mut *c, "selecting runs to prune"), filter)
    }

    fn run_bytes(&self, ids: &[String]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let ctx = "measuring the runs";
        let err = |e| pg_err(ctx, e);
        let mut c = self.pool.get()?;
        // The runs' rows and every row referencing them (any table added later too), as
        // stored (`pg_column_size` of a row counts its values as compressed), and the
        // large values no other run uses. Indexes and page overhead are not counted.
        let refs = c
            .query(
                "SELECT cl.relname::text, a.attname::text FROM pg_constraint co
                 JOIN pg_class cl ON cl.oid = co.conrelid
                 JOIN pg_attribute a ON a.attrelid = co.conrelid AND a.attnum = co.conkey[1]
                 WHERE co.contype = 'f' AND co.confrelid = 'runs'::regclass
                 ORDER BY 1",
                &[],
            )
            .map_err(err)?;
        let mut tables = vec![("runs".to_string(), "id".to_string())];
        for r in &refs {
            tables.push((col(r, 0)?, col(r, 1)?));
        }
        let mut total = 0u64;
        for (table, column) in tables {
            let q = format!(
                "SELECT COALESCE(SUM(pg_column_size(t.*)), 0)::bigint FROM {} t WHERE {} = ANY($1)",
                ident(&table),
                ident(&column)
            );
            let row = c.query_one(&q, &[&ids]).map_err(err)?;
            total += u64::try_from(col::<i64>(&row, 0)?).unwrap_or(0);
        }
        let row = c
            .query_one(
                "SELECT COALESCE(SUM(pg_column_size(b.body)), 0)::bigint FROM blobs b
                 WHERE b.hash IN (SELECT hash FROM blob_refs WHERE run_id = ANY($1))
                   AND NOT EXISTS (SELECT 1 FROM blob_refs r
                                   WHERE r.hash = b.hash AND NOT (r.run_id = ANY($1)))",
                &[&ids],
            )
            .map_err(err)?;
        total += u64::try_from(col::<i64>(&row, 0)?).unwrap_or(0);
        Ok(total)
    }

    fn delete_runs(&self, ids: &[String]) -> Result<usize> {
        let mut deleted = 0;
        for chunk in ids.chunks(DELETE_CHUNK) {
            deleted += self.tx("deleting runs", |tx| {
                retention::delete_chunk(&mut PgRows::new(tx, "deleting runs"), chunk)
            })?;
        }
        Ok(deleted)
    }

    fn reclaim(&self) -> Result<Reclaimed> {
        // Deleted rows' space is the server's: autovacuum makes it reusable, and only a
        // `VACUUM FULL` (which locks the tables) would give it back to the file system.
        Ok(Reclaimed::Autovacuum)
    }

    fn size(&self) -> Result<StoreSize> {
        let ctx = "measuring the store";
        let err = |e| pg_err(ctx, e);
        let mut c = self.pool.get()?;
        let row = c
            .query_one(
                "SELECT COALESCE(SUM(pg_total_relation_size(cl.oid)), 0)::bigint,
                        current_setting('block_size')::bigint
                 FROM pg_class cl JOIN pg_namespace n ON n.oid = cl.relnamespace
                 WHERE n.nspname = $1 AND cl.relname = ANY($2) AND cl.relkind = 'r'",
                &[&self.url.schema(), &TABLES],
            )
            .map_err(err)?;
        let bytes = u64::try_from(col::<i64>(&row, 0)?).unwrap_or(0);
        let page_size = u64::try_from(col::<i64>(&row, 1)?).unwrap_or(8192).max(1);
        let row = c
            .query_one(
                "SELECT (SELECT COUNT(*) FROM runs),
                        (SELECT COALESCE(SUM(n), 0)::bigint FROM event_chunks)",
                &[],
            )
            .map_err(err)?;
        Ok(StoreSize {
            path: None,
            bytes,
            page_size,
            page_count: bytes / page_size,
            freelist_count: 0,
            auto_vacuum: AutoVacuum::Server,
            runs: u64::try_from(col::<i64>(&row, 0)?).unwrap_or(0),
            events: col::<i64>(&row, 1).ok().and_then(|n| u64::try_from(n).ok()),
        })
    }
}

#[cfg(test)]
mod tests {
    //! PostgreSQL's own matters: its schema, URL and server. The behaviour every backend
    //! shares is tested in `behaviour.rs`, on each.

    use super::*;
    use crate::testkit::{Fixture, test_pg_url, unique_schema};

    /// A URL for a schema of its own, and a plain client on the database.
    fn fresh() -> Option<(PgUrl, postgres::Client)> {
        let url = PgUrl::parse(&test_pg_url()?).unwrap();
        let url = url.with_schema(&unique_schema());
        let admin = url.config.connect(postgres::NoTls).unwrap();
        Some((url, admin))
    }

    fn schema_exists(admin: &mut postgres::Client, schema: &str) -> bool {
        admin
            .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
            .unwrap()
            .is_some()
    }

    fn drop_schema(admin: &mut postgres::Client, schema: &str) {
        let q = format!("DROP SCHEMA IF EXISTS {} CASCADE", ident(schema));
        admin.batch_execute(&q).unwrap();
    }

    #[test]
    fn reading_a_missing_store_creates_nothing() {
        let Some((url, mut admin)) = fresh() else {
            return;
        };
        assert!(PgStore::open_read_only(&url).unwrap().is_none());
        assert!(!schema_exists(&mut admin, url.schema()));
        let store = PgStore::open(&url).unwrap();
        assert!(schema_exists(&mut admin, url.schema()));
        drop(store);
        let ro = PgStore::open_read_only(&url).unwrap().unwrap();
        assert_eq!(ro.list_runs(None, 0).unwrap(), []);
        drop(ro);
        drop_schema(&mut admin, url.schema());
    }

    #[test]
    fn processes_opening_a_new_store_at_once_migrate_it_once() {
        let Some((url, mut admin)) = fresh() else {
            return;
        };
        let start = std::sync::Barrier::new(6);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    start.wait();
                    PgStore::open(&url).unwrap();
                });
            }
        });
        let q = format!("SELECT version FROM {}.canvas_schema", ident(url.schema()));
        let versions: Vec<i64> = admin
            .query(&q, &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(versions, (1..=PG_SCHEMA_VERSION).collect::<Vec<_>>());
        drop_schema(&mut admin, url.schema());
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let Some(f) = Fixture::postgres() else {
            return;
        };
        f.exec(&format!(
            "INSERT INTO canvas_schema (version) VALUES ({})",
            PG_SCHEMA_VERSION + 1
        ));
        let runs = f.number("SELECT COUNT(*) FROM runs");
        for e in [
            f.reopen().err(),
            PgStore::open_read_only(f.store_url()).err(),
        ] {
            match e {
                Some(StoreError::NewerSchema { found, supported }) => {
                    assert_eq!(
                        (found, supported),
                        (PG_SCHEMA_VERSION + 1, PG_SCHEMA_VERSION)
                    );
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(f.number("SELECT COUNT(*) FROM runs"), runs);
    }

    #[test]
    fn a_call_from_inside_an_async_runtime_is_an_error_not_a_panic() {
        let Some(f) = Fixture::postgres() else {
            return;
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let e = rt
            .block_on(async { f.store().list_runs(None, 0) })
            .unwrap_err();
        assert!(matches!(e, StoreError::AsyncContext), "{e}");
        // `blocking` cannot help on a current-thread runtime: still refused, no panic.
        let e = rt
            .block_on(async { crate::blocking(|| f.store().list_runs(None, 0)) })
            .unwrap_err();
        assert!(matches!(e, StoreError::AsyncContext), "{e}");
        assert_eq!(f.store().list_runs(None, 0).unwrap(), []);
    }

    #[test]
    fn a_call_through_blocking_works_from_a_multi_thread_runtime() {
        let Some(f) = Fixture::postgres() else {
            return;
        };
        let store = std::sync::Arc::new(PgStore::open(f.store_url()).unwrap());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let s = std::sync::Arc::clone(&store);
        let (through, straight) = rt.block_on(async move {
            tokio::spawn(async move {
                let through = crate::blocking(|| s.count_runs(None));
                // The same call made straight from the task is refused.
                let straight = s.count_runs(None);
                (through, straight)
            })
            .await
            .unwrap()
        });
        assert_eq!(through.unwrap(), 0);
        assert!(matches!(straight, Err(StoreError::AsyncContext)));
        // From the thread inside `block_on` too (the batch worker's own loop runs there).
        let s = std::sync::Arc::clone(&store);
        let n = rt.block_on(async move { crate::blocking(|| s.count_runs(None)) });
        assert_eq!(n.unwrap(), 0);
    }

    #[test]
    fn errors_are_one_line_without_the_password() {
        let Some(base) = test_pg_url() else {
            return;
        };
        let mut bad = PgUrl::parse(&base).unwrap().with_schema(&unique_schema());
        bad.config.password("not-the-password-4711");
        let e = PgStore::open(&bad).err().unwrap();
        let text = e.to_string();
        assert!(!text.contains("4711"), "{text}");
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("password authentication failed"), "{text}");
        // A server that is not there.
        let gone = PgUrl::parse("postgres://canvas:secret-4711@127.0.0.1:1/x").unwrap();
        let text = PgStore::open(&gone).err().unwrap().to_string();
        assert!(!text.contains("4711") && !text.contains('\n'), "{text}");
        assert!(
            text.contains("connecting to the server: error connecting to server: "),
            "{text}"
        );
    }

    #[test]
    fn size_is_the_tables_and_reclaim_leaves_it_to_autovacuum() {
        let Some(f) = Fixture::postgres() else {
            return;
        };
        let size = f.store().size().unwrap();
        assert_eq!(size.auto_vacuum, AutoVacuum::Server);
        assert!(size.bytes >= 8 * size.page_size, "{size:?}");
        assert_eq!(size.page_count, size.bytes / size.page_size);
        assert_eq!(f.store().reclaim().unwrap(), Reclaimed::Autovacuum);
    }
}
