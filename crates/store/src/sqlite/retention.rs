//! SQLite's side of retention: the prune's SQL, giving the space back to the file
//! system, and how big the file is (the logic shared with other backends is in
//! [`crate::retention`]).
//!
//! Foreign keys are on, so deleting a run deletes every row referencing it.
//!
//! Space: a store created by this build has `auto_vacuum = INCREMENTAL` (set before its
//! first table, the only time it can be), so after a prune `PRAGMA incremental_vacuum`
//! moves the free pages to the end of the file and cuts them off. An older store
//! (`auto_vacuum = NONE`) is rewritten once by a full `VACUUM`, with the pragma set
//! first so that the rewrite switches it to incremental. Both end with a
//! `wal_checkpoint(TRUNCATE)`, so the `-wal` file does not keep the bytes either.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, TransactionBehavior, named_params, params};

use super::schema::{self, sql};
use super::{Inner, RUN_FIELDS, RUN_FROM, SqliteRows, SqliteStore, read_run};
use crate::retention::{self, AutoVacuum, DELETE_CHUNK, Reclaimed, StoreSize};
use crate::rows::{Candidate, LeaseRow, PruneQuery};
use crate::{Result, StoreError};

/// The condition of a run that is left alone because it is starting (`:starting` is
/// the time before which a lease-less running run is not starting any more).
const NOT_STARTING: &str =
    "NOT (status = 'running' AND lease_owner IS NULL AND updated_at > :starting)";

/// Switch a store that does not exist yet (no tables, schema version 0) to incremental
/// auto-vacuum. Must run before the first table is created and before WAL mode writes
/// the file's first page; on any other store it does nothing.
pub(crate) fn incremental_vacuum_if_new(conn: &Connection) -> Result<()> {
    let objects: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(|e| sql("reading the schema", e))?;
    if objects == 0 && schema::version(conn)? == 0 {
        conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL")
            .map_err(|e| sql("setting auto_vacuum", e))?;
    }
    Ok(())
}

/// The runs a prune selects, newest first, with their leases.
pub(crate) fn prune_candidates(c: &Connection, q: &PruneQuery<'_>) -> Result<Vec<Candidate>> {
    let statuses = (!q.statuses.is_empty())
        .then(|| id_list(q.statuses.iter().copied()))
        .transpose()?;
    let sql_text = format!(
        "SELECT {RUN_FIELDS}, r.lease_owner, r.lease_expires FROM {RUN_FROM}
         WHERE (:before IS NULL OR updated_at < :before)
           AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
           AND id NOT IN (SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT :keep)
           AND {NOT_STARTING}
         ORDER BY created_at DESC, id DESC"
    );
    let err = |e| sql("selecting runs to prune", e);
    let mut st = c.prepare(&sql_text).map_err(err)?;
    let rows = st
        .query_map(
            named_params! {
                ":before": q.before,
                ":statuses": statuses,
                ":keep": q.keep,
                ":starting": q.starting,
            },
            |r| {
                Ok(Candidate {
                    run: read_run(r)?,
                    owner: r.get(12)?,
                    expires: r.get(13)?,
                })
            },
        )
        .map_err(err)?;
    rows.collect::<rusqlite::Result<_>>().map_err(err)
}

/// The unexpired leases of these runs (the caller's `BEGIN IMMEDIATE` keeps them so).
pub(crate) fn live_leases(c: &Connection, ids: &[String], now: f64) -> Result<Vec<LeaseRow>> {
    let err = |e| sql("deleting runs", e);
    let list = id_list(ids.iter().map(String::as_str))?;
    let mut st = c
        .prepare(
            "SELECT id, lease_owner, lease_expires FROM runs
             WHERE id IN (SELECT value FROM json_each(?1))
               AND lease_owner IS NOT NULL AND lease_expires > ?2",
        )
        .map_err(err)?;
    let rows = st
        .query_map(params![list, now], |r| {
            Ok(LeaseRow {
                id: r.get(0)?,
                owner: r.get(1)?,
                expires: r.get(2)?,
            })
        })
        .map_err(err)?;
    rows.collect::<rusqlite::Result<_>>().map_err(err)
}

/// Delete these runs, except one that is starting.
pub(crate) fn delete_runs(c: &Connection, ids: &[&str], starting: f64) -> Result<usize> {
    c.execute(
        &format!(
            "DELETE FROM runs WHERE id IN (SELECT value FROM json_each(:ids)) AND {NOT_STARTING}"
        ),
        named_params! {
            ":ids": id_list(ids.iter().copied())?,
            ":starting": starting,
        },
    )
    .map_err(|e| sql("deleting runs", e))
}

impl SqliteStore {
    /// [`crate::Store::run_bytes`]: the bytes of every column of the runs' rows, of the
    /// rows of every table whose foreign key references `runs`, and of the large values
    /// no other run uses. Page overhead and
    /// indexes are not counted: the file shrinks by somewhat more.
    pub(crate) fn payload_bytes(&self, ids: &[String]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let list = id_list(ids.iter().map(String::as_str))?;
        let g = self.lock();
        let c = &g.conn;
        let err = |e| sql("measuring the runs", e);
        let mut tables: Vec<(String, String)> = vec![("runs".into(), "id".into())];
        let mut st = c
            .prepare(
                "SELECT m.name, f.\"from\" FROM sqlite_master AS m,
                 pragma_foreign_key_list(m.name) AS f
                 WHERE m.type = 'table' AND lower(f.\"table\") = 'runs' ORDER BY m.name",
            )
            .map_err(err)?;
        let refs = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(err)?;
        for r in refs {
            tables.push(r.map_err(err)?);
        }
        let mut total = 0u64;
        for (table, column) in tables {
            let mut st = c
                .prepare("SELECT name FROM pragma_table_info(?1)")
                .map_err(err)?;
            let cols: Vec<String> = st
                .query_map([&table], |r| r.get(0))
                .and_then(|rows| rows.collect())
                .map_err(err)?;
            let sum = cols
                .iter()
                .map(|c| format!("COALESCE(length(CAST({} AS BLOB)), 0)", ident(c)))
                .collect::<Vec<_>>()
                .join(" + ");
            let q = format!(
                "SELECT COALESCE(SUM({sum}), 0) FROM {} WHERE {} IN (SELECT value FROM json_each(?1))",
                ident(&table),
                ident(&column)
            );
            let n: i64 = c.query_row(&q, [&list], |r| r.get(0)).map_err(err)?;
            total += u64::try_from(n).unwrap_or(0);
        }
        // Large values kept once go with the last run that uses them.
        let n: i64 = c
            .query_row(
                "SELECT COALESCE(SUM(length(body)), 0) FROM blobs
                 WHERE hash IN (SELECT hash FROM blob_refs
                                WHERE run_id IN (SELECT value FROM json_each(?1)))
                   AND NOT EXISTS (SELECT 1 FROM blob_refs AS r WHERE r.hash = blobs.hash
                                   AND r.run_id NOT IN (SELECT value FROM json_each(?1)))",
                [&list],
                |r| r.get(0),
            )
            .map_err(err)?;
        total += u64::try_from(n).unwrap_or(0);
        Ok(total)
    }

    /// [`crate::Store::delete_runs`]: `DELETE FROM runs` in chunks of [`DELETE_CHUNK`]
    /// runs, one `BEGIN IMMEDIATE` transaction each.
    pub(crate) fn delete_in_chunks(&self, ids: &[String]) -> Result<usize> {
        let mut deleted = 0;
        for chunk in ids.chunks(DELETE_CHUNK) {
            let mut g = self.lock();
            let Inner { conn, .. } = &mut *g;
            let err = |e| sql("deleting runs", e);
            // Set on open; the cascade depends on it, so make sure.
            conn.execute_batch("PRAGMA foreign_keys = ON")
                .map_err(err)?;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            let n = retention::delete_chunk(&mut SqliteRows::new(&tx, "deleting runs"), chunk)?;
            tx.commit().map_err(err)?;
            deleted += n;
        }
        Ok(deleted)
    }

    /// [`crate::Store::reclaim`].
    pub(crate) fn give_back_space(&self) -> Result<Reclaimed> {
        let g = self.lock();
        let c = &g.conn;
        let done = match auto_vacuum(c)? {
            AutoVacuum::Incremental => {
                // One result row per page given back: step to the end, or only the first
                // page goes.
                let err = |e| sql("giving free pages back", e);
                let mut st = c.prepare("PRAGMA incremental_vacuum").map_err(err)?;
                let mut rows = st.query([]).map_err(err)?;
                while rows.next().map_err(err)?.is_some() {}
                Reclaimed::Incremental
            }
            AutoVacuum::None => {
                c.execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
                    .map_err(|e| sql("vacuuming the store", e))?;
                Reclaimed::FullVacuum
            }
            AutoVacuum::Full | AutoVacuum::Server => Reclaimed::Nothing,
        };
        if self.path().is_some() {
            // Best effort: a reader still on an older snapshot keeps the WAL until the
            // next checkpoint (SQLite's own, or the last connection closing).
            let _busy: i64 = c
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
                .map_err(|e| sql("checkpointing the WAL", e))?;
        }
        Ok(done)
    }

    /// [`crate::Store::size`].
    pub(crate) fn measure(&self) -> Result<StoreSize> {
        let g = self.lock();
        let c = &g.conn;
        let page_size = pragma_u64(c, "page_size")?;
        let page_count = pragma_u64(c, "page_count")?;
        let freelist_count = pragma_u64(c, "freelist_count")?;
        let auto_vacuum = auto_vacuum(c)?;
        let runs: i64 = c
            .query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
            .map_err(|e| sql("counting runs", e))?;
        // Chunks carry their event count; rows of the older `events` table are one
        // event each.
        let events: Option<i64> = c
            .query_row(
                "SELECT (SELECT COALESCE(SUM(n), 0) FROM event_chunks)
                      + (SELECT COUNT(*) FROM events)",
                [],
                |r| r.get(0),
            )
            .ok();
        let bytes = match self.path() {
            Some(p) => file_len(p) + file_len(&side_file(p, "-wal")),
            None => page_size * page_count,
        };
        Ok(StoreSize {
            path: self.path().map(Path::to_path_buf),
            bytes,
            page_size,
            page_count,
            freelist_count,
            auto_vacuum,
            runs: u64::try_from(runs).unwrap_or(0),
            events: events.and_then(|n| u64::try_from(n).ok()),
        })
    }
}

/// Ids (or names) as a JSON array, for `IN (SELECT value FROM json_each(?))`: one
/// parameter however many there are.
fn id_list<'a>(ids: impl Iterator<Item = &'a str>) -> Result<String> {
    serde_json::to_string(&ids.collect::<Vec<_>>()).map_err(|source| StoreError::Json {
        context: "listing run ids".into(),
        source,
    })
}

/// An SQL identifier, quoted.
pub(crate) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn pragma_u64(c: &Connection, name: &str) -> Result<u64> {
    let n: i64 = c
        .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
        .map_err(|e| sql(&format!("reading {name}"), e))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

fn auto_vacuum(c: &Connection) -> Result<AutoVacuum> {
    Ok(match pragma_u64(c, "auto_vacuum")? {
        1 => AutoVacuum::Full,
        2 => AutoVacuum::Incremental,
        _ => AutoVacuum::None,
    })
}

/// `path` with `suffix` appended (`canvas.db-wal`).
pub(crate) fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A file's length, 0 when it is missing.
pub(crate) fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

#[cfg(test)]
mod tests {
    //! SQLite's space: the file shrinks after a prune. What every backend's prune does
    //! is tested in `behaviour.rs`, on each.

    use super::*;
    use crate::Store;
    use crate::testkit::full_run;

    #[test]
    fn a_new_store_shrinks_after_a_prune() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).unwrap();
        let ids: Vec<String> = (0..10).map(|_| full_run(&store, 400, 500)).collect();
        let before = store.size().unwrap();
        assert_eq!(before.auto_vacuum, AutoVacuum::Incremental);
        assert_eq!((before.runs, before.events), (10, Some(4000)));
        assert!(before.bytes > 2_000_000, "{before:?}");
        let approx = store.run_bytes(&ids[..8]).unwrap();
        assert!(approx > 8 * 400 * 500, "{approx}");
        assert_eq!(store.delete_runs(&ids[..8]).unwrap(), 8);
        assert!(store.size().unwrap().freelist_count > 0);
        assert_eq!(store.reclaim().unwrap(), Reclaimed::Incremental);
        let after = store.size().unwrap();
        assert_eq!((after.runs, after.events), (2, Some(800)));
        assert_eq!(after.freelist_count, 0, "{after:?}");
        assert!(after.bytes * 3 < before.bytes, "{before:?} -> {after:?}");
        assert_eq!(
            file_len(&side_file(&path, "-wal")),
            0,
            "the WAL keeps nothing"
        );
        assert_eq!(file_len(&path), after.page_count * after.page_size);
        // The freed pages hold about what was estimated (the bytes on disk before
        // included the WAL's copies of pages too).
        let freed = (before.page_count - after.page_count) * after.page_size;
        assert!(freed >= approx && freed < approx * 2, "{approx} {freed}");
        // What is left reads back.
        assert_eq!(store.events(&ids[9]).unwrap().len(), 400);
    }

    #[test]
    fn an_old_store_is_vacuumed_once_and_then_shrinks_incrementally() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            // A store as an earlier build made it: WAL first, auto_vacuum NONE.
            let c = Connection::open(&path).unwrap();
            c.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.size().unwrap().auto_vacuum, AutoVacuum::None);
        let ids: Vec<String> = (0..6).map(|_| full_run(&store, 200, 500)).collect();
        let before = store.size().unwrap();
        store.delete_runs(&ids[..3]).unwrap();
        assert_eq!(store.reclaim().unwrap(), Reclaimed::FullVacuum);
        let after = store.size().unwrap();
        assert_eq!(after.auto_vacuum, AutoVacuum::Incremental);
        assert!(
            after.bytes * 3 < before.bytes * 2,
            "{before:?} -> {after:?}"
        );
        store.delete_runs(&ids[3..5]).unwrap();
        assert_eq!(store.reclaim().unwrap(), Reclaimed::Incremental);
        assert!(store.size().unwrap().bytes < after.bytes);
        assert_eq!(store.events(&ids[5]).unwrap().len(), 200);
    }

    #[test]
    fn size_of_an_empty_store_in_memory() {
        let store = SqliteStore::open_in_memory().unwrap();
        let s = store.size().unwrap();
        assert_eq!((s.runs, s.events, s.path), (0, Some(0), None));
        assert_eq!(s.bytes, s.page_size * s.page_count);
        assert_eq!(s.auto_vacuum, AutoVacuum::Incremental);
        assert_eq!(store.run_bytes(&[]).unwrap(), 0);
    }
}
