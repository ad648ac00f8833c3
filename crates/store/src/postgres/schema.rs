//! The PostgreSQL schema and its migrations, versioned by the `canvas_schema` table of
//! the store's schema (a row per migration applied; the version is the highest).
//!
//! `MIGRATIONS[i]` takes a store from version `i` to `i + 1`; append, never edit. A store
//! newer than [`PG_SCHEMA_VERSION`] is refused ([`StoreError::NewerSchema`]). Migrating
//! holds an advisory lock on the schema's name, so processes opening a new store at once
//! migrate it once.
//!
//! Version 1 is the layout of SQLite's version 6 in PostgreSQL's types. JSON is kept as
//! text (`jsonb` would reorder object keys); compressed bodies are `bytea` stored without
//! PostgreSQL's own compression (LZ4 already did it). A canvas or large value is deleted
//! with the last row using it, by triggers that first lock its row: a run or checkpoint
//! written meanwhile that uses it holds a key-share lock on it (a foreign key), so the
//! trigger waits for that write and sees it.
//!
//! Version 2 adds batches and their rows, as SQLite's version 7 has them; version 3
//! `canvas serve`'s agents and sessions, as SQLite's version 8; version 4 checkpoint
//! deltas with appends, as SQLite's version 9.

use postgres::Client;

use super::{col, ident, pg_err};
use crate::{Result, StoreError};

/// The PostgreSQL schema version this binary writes.
pub const PG_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

const MIGRATIONS: &[&str] = &[
    // 1: the store as SQLite's version 6 has it (no `events` table: there is no older
    // PostgreSQL store to read).
    "CREATE TABLE canvases (
        hash text PRIMARY KEY,              -- hex SHA-256 of the text
        text text NOT NULL
    );
    CREATE TABLE runs (
        id               text PRIMARY KEY,
        source           text NOT NULL,
        canvas_hash      text NOT NULL REFERENCES canvases (hash),
        status           text NOT NULL,
        parent           text,
        created_at       double precision NOT NULL,
        updated_at       double precision NOT NULL,
        turns            bigint NOT NULL DEFAULT 0,
        error            text,
        waiting          text,              -- JSON of the pending form
        cancel_requested boolean NOT NULL DEFAULT false,
        lease_owner      text,
        lease_expires    double precision,  -- Unix seconds, by the server's clock
        options          text               -- JSON
    );
    CREATE INDEX runs_by_created ON runs (created_at DESC, id DESC);
    CREATE INDEX runs_by_status ON runs (status, created_at DESC);
    CREATE INDEX runs_by_canvas ON runs (canvas_hash);
    CREATE TABLE turns (
        run_id     text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        turn       bigint NOT NULL,
        kind       text NOT NULL CHECK (kind IN ('start', 'answer', 'next')),
        query      text NOT NULL,
        inputs     text NOT NULL,           -- JSON, API shape
        started_at double precision NOT NULL,
        ended_at   double precision,
        status     text,
        PRIMARY KEY (run_id, turn)
    );
    CREATE TABLE event_chunks (
        run_id     text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq        bigint NOT NULL,         -- the first event's number in the run
        n          bigint NOT NULL,         -- events in the chunk
        turn       bigint NOT NULL,
        message_id text NOT NULL,
        created_at bigint NOT NULL,
        body       bytea NOT NULL,          -- LZ4 of one `NAME DATA` line per event
        cuts       text,                    -- JSON [[offset, hash], ...] or NULL
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE checkpoints (
        run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq    bigint NOT NULL,
        turn   bigint NOT NULL,
        kind   text NOT NULL CHECK (kind IN ('full', 'delta')),
        body   bytea NOT NULL,              -- LZ4 of RunState JSON, or of delta::Delta JSON
        cuts   text,
        PRIMARY KEY (run_id, seq)
    );
    CREATE TABLE blobs (
        hash text PRIMARY KEY,              -- hex SHA-256 of the value's JSON text
        body bytea NOT NULL                 -- LZ4 of that text
    );
    CREATE TABLE blob_refs (
        run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        hash   text NOT NULL REFERENCES blobs (hash),
        PRIMARY KEY (run_id, hash)
    );
    CREATE INDEX blob_refs_by_hash ON blob_refs (hash);
    ALTER TABLE event_chunks ALTER COLUMN body SET STORAGE EXTERNAL;
    ALTER TABLE checkpoints ALTER COLUMN body SET STORAGE EXTERNAL;
    ALTER TABLE blobs ALTER COLUMN body SET STORAGE EXTERNAL;
    CREATE FUNCTION runs_forget_canvas() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        PERFORM 1 FROM canvases WHERE hash = OLD.canvas_hash FOR UPDATE;
        DELETE FROM canvases WHERE hash = OLD.canvas_hash
            AND NOT EXISTS (SELECT 1 FROM runs WHERE canvas_hash = OLD.canvas_hash);
        RETURN NULL;
    END $$;
    CREATE TRIGGER runs_forget_canvas AFTER DELETE ON runs
        FOR EACH ROW EXECUTE FUNCTION runs_forget_canvas();
    CREATE FUNCTION blobs_forget() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
        PERFORM 1 FROM blobs WHERE hash = OLD.hash FOR UPDATE;
        DELETE FROM blobs WHERE hash = OLD.hash
            AND NOT EXISTS (SELECT 1 FROM blob_refs WHERE hash = OLD.hash);
        RETURN NULL;
    END $$;
    CREATE TRIGGER blobs_forget AFTER DELETE ON blob_refs
        FOR EACH ROW EXECUTE FUNCTION blobs_forget();",
    // 2: batches (a canvas run over a dataset's rows) and their rows, claimed by workers
    // with leases (stamped by the server's clock); a row's run is tied to it before it
    // is created. `open` is cleared when the last row is done: workers join the open
    // batch of their key, and the partial unique index keeps it one.
    "CREATE TABLE batches (
        id          text PRIMARY KEY,
        key         text NOT NULL,          -- digest of the canvas and the dataset
        source      text NOT NULL,
        canvas      text NOT NULL,
        canvas_hash text NOT NULL,
        dataset     text NOT NULL,
        created_at  double precision NOT NULL,
        rows        bigint NOT NULL,
        options     text,                   -- JSON: the options it was started with
        open        boolean NOT NULL DEFAULT true
    );
    CREATE INDEX batches_by_created ON batches (created_at DESC, id DESC);
    CREATE UNIQUE INDEX batches_open_key ON batches (key) WHERE open;
    CREATE TABLE batch_rows (
        batch_id      text NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
        idx           bigint NOT NULL,      -- 0-based position in the dataset
        row_id        text NOT NULL,
        spec          text NOT NULL,        -- JSON: what the row asks
        status        text NOT NULL CHECK (status IN
                          ('pending', 'running', 'succeeded', 'failed', 'waiting')),
        run_id        text,
        owner         text,                 -- the worker holding it while running
        lease_expires double precision,     -- Unix seconds, by the server's clock
        attempts      bigint NOT NULL DEFAULT 0,
        passed        boolean,              -- its checks: true, false, or NULL (none)
        result        text,                 -- JSON result line once done
        PRIMARY KEY (batch_id, idx)
    );
    CREATE INDEX batch_rows_by_status ON batch_rows (batch_id, status, idx);",
    // 3: `canvas serve`'s agents and sessions, as SQLite's version 8 has them.
    "CREATE TABLE agents (
        id          text PRIMARY KEY,
        title       text NOT NULL UNIQUE,
        description text,
        dsl         text NOT NULL,          -- the canvas, JSON
        created_at  double precision NOT NULL,
        updated_at  double precision NOT NULL
    );
    CREATE TABLE sessions (
        run_id     text PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
        agent_id   text NOT NULL,
        user_id    text NOT NULL,
        created_at double precision NOT NULL
    );
    CREATE INDEX sessions_by_agent ON sessions (agent_id, created_at DESC);",
    // 4: checkpoint deltas with appends, as SQLite's version 9 (no table changes; older
    // binaries must refuse the store rather than drop the appended items).
    "-- checkpoint deltas with appends",
];

/// The store's schema version: `None` when the schema holds no store.
pub(super) fn version(c: &mut Client, schema: &str) -> Result<Option<i64>> {
    let ctx = "reading the schema version";
    let table = format!("{}.canvas_schema", ident(schema));
    let row = c
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .map_err(|e| pg_err(ctx, e))?;
    if !col::<bool>(&row, 0)? {
        return Ok(None);
    }
    let q = format!("SELECT COALESCE(MAX(version), 0) FROM {table}");
    let row = c.query_one(&q, &[]).map_err(|e| pg_err(ctx, e))?;
    Ok(Some(col(&row, 0)?))
}

/// Refuse a store newer than this binary.
pub(super) fn check_not_newer(found: i64) -> Result<()> {
    if found > PG_SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found,
            supported: PG_SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// Create the schema when missing and bring it up to [`PG_SCHEMA_VERSION`], in one
/// transaction under an advisory lock.
pub(super) fn migrate(c: &mut Client, schema: &str) -> Result<()> {
    if let Some(found) = version(c, schema)? {
        check_not_newer(found)?;
        if found == PG_SCHEMA_VERSION {
            return Ok(());
        }
    }
    let ctx = |what: &str| format!("{what} (schema {schema})");
    let mut tx = c
        .transaction()
        .map_err(|e| pg_err(&ctx("starting the schema migration"), e))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('canvas-store'), hashtext($1))",
        &[&schema],
    )
    .map_err(|e| pg_err(&ctx("locking the schema for its migration"), e))?;
    let s = ident(schema);
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.canvas_schema (
             version    bigint PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );
         SET LOCAL search_path TO {s};"
    ))
    .map_err(|e| pg_err(&ctx("creating the schema"), e))?;
    let row = tx
        .query_one(
            &format!("SELECT COALESCE(MAX(version), 0) FROM {s}.canvas_schema"),
            &[],
        )
        .map_err(|e| pg_err(&ctx("reading the schema version"), e))?;
    let found: i64 = col(&row, 0)?;
    check_not_newer(found)?;
    let from = usize::try_from(found)
        .map_err(|_| StoreError::Corrupt(format!("negative schema version {found}")))?;
    for (i, m) in MIGRATIONS.iter().enumerate().skip(from) {
        let v = i as i64 + 1;
        tx.batch_execute(m)
            .map_err(|e| pg_err(&ctx(&format!("migrating the schema to version {v}")), e))?;
        tx.execute(
            &format!("INSERT INTO {s}.canvas_schema (version) VALUES ($1)"),
            &[&v],
        )
        .map_err(|e| pg_err(&ctx("writing the schema version"), e))?;
    }
    tx.commit()
        .map_err(|e| pg_err(&ctx("committing the schema migration"), e))
}
