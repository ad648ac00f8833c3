//! The SQLite schema and its migrations, versioned by `PRAGMA user_version`.
//!
//! `MIGRATIONS[i]` takes a database from version `i` to `i + 1`; append, never edit.
//! A database newer than [`SCHEMA_VERSION`] is refused ([`StoreError::NewerSchema`]).

use rusqlite::{Connection, TransactionBehavior};

use crate::{Result, StoreError};

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: runs, events, checkpoints.
    "CREATE TABLE runs (
        id               TEXT PRIMARY KEY NOT NULL,
        source           TEXT NOT NULL,
        canvas           TEXT NOT NULL,
        canvas_hash      TEXT NOT NULL,
        status           TEXT NOT NULL,
        parent           TEXT,
        created_at       REAL NOT NULL,
        updated_at       REAL NOT NULL,
        turns            INTEGER NOT NULL DEFAULT 0,
        error            TEXT,
        waiting          TEXT,              -- JSON of the pending form
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        lease_owner      TEXT,
        lease_expires    REAL               -- Unix seconds
    );
    CREATE INDEX runs_by_created ON runs (created_at DESC, id DESC);
    CREATE INDEX runs_by_status ON runs (status, created_at DESC);
    CREATE TABLE events (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq    INTEGER NOT NULL,            -- 1, 2, ... per run
        turn   INTEGER NOT NULL,
        body   TEXT NOT NULL,               -- one serialised event
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;
    CREATE INDEX events_by_turn ON events (run_id, turn, seq);
    CREATE TABLE checkpoints (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq    INTEGER NOT NULL,            -- 1, 2, ... per run
        turn   INTEGER NOT NULL,
        kind   TEXT NOT NULL CHECK (kind IN ('full', 'delta')),
        body   TEXT NOT NULL,               -- RunState JSON, or delta::Delta JSON
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;",
    // 2: turns, so a turn that stopped before its first checkpoint can be run again;
    // events without their second index (one page less written per checkpoint).
    "DROP INDEX events_by_turn;
    CREATE TABLE turns (
        run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        turn       INTEGER NOT NULL,        -- 1, 2, ... per run
        kind       TEXT NOT NULL CHECK (kind IN ('start', 'answer', 'next')),
        query      TEXT NOT NULL,
        inputs     TEXT NOT NULL,           -- JSON, API shape
        started_at REAL NOT NULL,
        ended_at   REAL,
        status     TEXT,                    -- the run's status when the turn ended
        PRIMARY KEY (run_id, turn)
    ) WITHOUT ROWID;",
    // 3: events in compact chunks (a rowid table: chunks are larger than a WITHOUT
    // ROWID row should be). Checkpoint bodies from now on are compressed blobs; the
    // older text bodies and `events` rows stay readable.
    "CREATE TABLE event_chunks (
        run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,        -- the first event's number in the run
        n          INTEGER NOT NULL,        -- events in the chunk
        turn       INTEGER NOT NULL,
        message_id TEXT NOT NULL,           -- the envelope the chunk's events share
        created_at INTEGER NOT NULL,
        body       BLOB NOT NULL,           -- LZ4 of one `NAME DATA` line per event
        UNIQUE (run_id, seq)
    );",
    // 4: canvas texts in a table of their own, once per distinct text. In the run's row
    // a large canvas made every status or lease update rewrite it whole; and a canvas
    // run many times is kept once. (A canvas no run refers to any more is deleted with
    // the last such run.)
    "CREATE TABLE canvases (
        hash TEXT PRIMARY KEY NOT NULL,     -- hex SHA-256 of the text
        text TEXT NOT NULL
    );
    INSERT OR IGNORE INTO canvases (hash, text) SELECT canvas_hash, canvas FROM runs;
    ALTER TABLE runs DROP COLUMN canvas;
    CREATE INDEX runs_by_canvas ON runs (canvas_hash);
    CREATE TRIGGER runs_forget_canvas AFTER DELETE ON runs
    WHEN NOT EXISTS (SELECT 1 FROM runs WHERE canvas_hash = OLD.canvas_hash)
    BEGIN DELETE FROM canvases WHERE hash = OLD.canvas_hash; END;",
    // 5: the options a run was started with (JSON: its model source, tool settings,
    // limits), so `resume` continues it the same way unless told otherwise.
    "ALTER TABLE runs ADD COLUMN options TEXT;",
    // 6: large values kept once (see `blobs.rs`): a chunk's or checkpoint's `cuts` say
    // where its large strings were cut out and their keys in `blobs`; `blob_refs` says
    // which runs use a blob, and the last reference gone deletes it.
    "CREATE TABLE blobs (
        hash TEXT PRIMARY KEY NOT NULL,     -- hex SHA-256 of the value's JSON text
        body BLOB NOT NULL                  -- LZ4 of that text
    );
    CREATE TABLE blob_refs (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        hash   TEXT NOT NULL,
        PRIMARY KEY (run_id, hash)
    ) WITHOUT ROWID;
    CREATE INDEX blob_refs_by_hash ON blob_refs (hash);
    CREATE TRIGGER blobs_forget AFTER DELETE ON blob_refs
    WHEN NOT EXISTS (SELECT 1 FROM blob_refs WHERE hash = OLD.hash)
    BEGIN DELETE FROM blobs WHERE hash = OLD.hash; END;
    ALTER TABLE event_chunks ADD COLUMN cuts TEXT;  -- JSON [[offset, hash], ...] or NULL
    ALTER TABLE checkpoints ADD COLUMN cuts TEXT;",
    // 7: batches (a canvas run over a dataset's rows) and their rows, claimed by workers
    // with leases; a row's run is tied to it before it is created. `open` is cleared
    // when the last row is done: workers join an open batch of the same key.
    "CREATE TABLE batches (
        id          TEXT PRIMARY KEY NOT NULL,
        key         TEXT NOT NULL,          -- digest of the canvas and the dataset
        source      TEXT NOT NULL,
        canvas      TEXT NOT NULL,
        canvas_hash TEXT NOT NULL,
        dataset     TEXT NOT NULL,
        created_at  REAL NOT NULL,
        rows        INTEGER NOT NULL,
        options     TEXT,                   -- JSON: the options it was started with
        open        INTEGER NOT NULL DEFAULT 1
    );
    CREATE INDEX batches_by_created ON batches (created_at DESC, id DESC);
    CREATE UNIQUE INDEX batches_open_key ON batches (key) WHERE open;
    CREATE TABLE batch_rows (
        batch_id      TEXT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
        idx           INTEGER NOT NULL,     -- 0-based position in the dataset
        row_id        TEXT NOT NULL,
        spec          TEXT NOT NULL,        -- JSON: what the row asks
        status        TEXT NOT NULL CHECK (status IN
                          ('pending', 'running', 'succeeded', 'failed', 'waiting')),
        run_id        TEXT,
        owner         TEXT,                 -- the worker holding it while running
        lease_expires REAL,
        attempts      INTEGER NOT NULL DEFAULT 0,
        passed        INTEGER,              -- its checks: 1, 0, or NULL (none)
        result        TEXT,                 -- JSON result line once done
        PRIMARY KEY (batch_id, idx)
    );
    CREATE INDEX batch_rows_by_status ON batch_rows (batch_id, status, idx);",
    // 8: `canvas serve`: the agents created through its API, and which agent (and user)
    // each session serves; a session is a run, and goes with it.
    "CREATE TABLE agents (
        id          TEXT PRIMARY KEY NOT NULL,
        title       TEXT NOT NULL UNIQUE,
        description TEXT,
        dsl         TEXT NOT NULL,          -- the canvas, JSON
        created_at  REAL NOT NULL,
        updated_at  REAL NOT NULL
    );
    CREATE TABLE sessions (
        run_id     TEXT PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        agent_id   TEXT NOT NULL,
        user_id    TEXT NOT NULL,
        created_at REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX sessions_by_agent ON sessions (agent_id, created_at DESC);",
    // 9: checkpoint deltas may carry items appended to a component's list outputs
    // (`appends` in delta.rs). No table changes; the version is what makes a binary that
    // does not know them refuse the store instead of dropping the items when it loads.
    "-- checkpoint deltas with appends",
];

/// The file's schema version.
pub(crate) fn version(conn: &Connection) -> Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| sql("reading the schema version", e))
}

/// The file's schema version, once it is known to be a run store this binary can use: a
/// store newer than this binary and another program's database are refused. Only reads:
/// a refused file is left exactly as it was.
pub(super) fn check_file(conn: &Connection) -> Result<i64> {
    // One read transaction: the version and the tables of one snapshot, not those of
    // either side of another process's migration.
    let snapshot = conn
        .unchecked_transaction()
        .map_err(|e| sql("reading the schema", e))?;
    let found = check_snapshot(&snapshot)?;
    snapshot
        .commit()
        .map_err(|e| sql("reading the schema", e))?;
    Ok(found)
}

fn check_snapshot(conn: &Connection) -> Result<i64> {
    let found = version(conn)?;
    check_not_newer(found)?;
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' \
             ESCAPE '\\' ORDER BY name",
        )
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| sql("reading the schema", e))?;
    // Version 0 with tables, or a version without `runs`: tables that no migration made.
    let ours = if found == 0 {
        tables.is_empty()
    } else {
        tables.iter().any(|t| t == "runs")
    };
    if !ours {
        let mut names: Vec<&str> = tables.iter().map(String::as_str).take(5).collect();
        if tables.len() > names.len() {
            names.push("…");
        }
        let has = if names.is_empty() {
            "no tables".to_string()
        } else {
            format!("tables {}", names.join(", "))
        };
        return Err(StoreError::NotAStore(format!(
            "not a canvas run store: an SQLite database with schema version {found} and {has}"
        )));
    }
    Ok(found)
}

/// Refuse a database newer than this binary.
pub(crate) fn check_not_newer(found: i64) -> Result<()> {
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// Bring the database up to [`SCHEMA_VERSION`] (in one write transaction, so
/// concurrent openers migrate once).
pub(crate) fn migrate(conn: &mut Connection) -> Result<()> {
    let found = version(conn)?;
    check_not_newer(found)?;
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sql("starting the schema migration", e))?;
    let found = version(&tx)?;
    check_not_newer(found)?;
    let from = usize::try_from(found)
        .map_err(|_| StoreError::Corrupt(format!("negative schema version {found}")))?;
    for (i, m) in MIGRATIONS.iter().enumerate().skip(from) {
        tx.execute_batch(m)
            .map_err(|e| sql(&format!("migrating the schema to version {}", i + 1), e))?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| sql("writing the schema version", e))?;
    tx.commit()
        .map_err(|e| sql("committing the schema migration", e))
}

/// Wrap a SQLite error with what the store was doing.
pub(crate) fn sql(context: &str, source: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        context: context.to_string(),
        source,
    }
}
