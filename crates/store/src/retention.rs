//! Retention: which runs a prune deletes, deleting them, giving the space back to the
//! file system, and how big the store is.
//!
//! The prune code names only the `runs` table. Every other table references it with
//! `ON DELETE CASCADE` and foreign keys are on, so deleting a run deletes its turns,
//! events and checkpoints, and the rows of any table added later that does the same.
//!
//! Space: a store created by this build has `auto_vacuum = INCREMENTAL` (set before its
//! first table, the only time it can be), so after a prune `PRAGMA incremental_vacuum`
//! moves the free pages to the end of the file and cuts them off. An older store
//! (`auto_vacuum = NONE`) is rewritten once by a full `VACUUM`, with the pragma set
//! first so that the rewrite switches it to incremental. Both end with a
//! `wal_checkpoint(TRUNCATE)`, so the `-wal` file does not keep the bytes either.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior, named_params, params};
use serde::Serialize;

use super::schema::{self, sql};
use super::sqlite::{Inner, RUN_FIELDS, RUN_FROM, RawRun, SqliteStore};
use super::{Result, RunRecord, RunStatus, lease, unix_now};

/// Runs deleted per write transaction, so that a big prune never holds the write lock
/// for long (a run of a 1000-node canvas has a few thousand rows).
const DELETE_CHUNK: usize = 32;

/// A `running` run without a lease that changed this recently is starting (a process
/// stores the run, then takes its lease): it is left alone like a leased one.
const STARTING: f64 = 60.0;

/// The condition of a run that is left alone because it is starting (`:starting` is
/// the time before which a lease-less running run is not starting any more).
const NOT_STARTING: &str =
    "NOT (status = 'running' AND lease_owner IS NULL AND updated_at > :starting)";

/// Which runs a prune deletes: those matching every criterion given. A filter without
/// any criterion selects nothing (there is no accidental "delete everything"; `keep:
/// Some(0)` alone says it on purpose).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PruneFilter {
    /// Only runs last updated (`updated_at`) longer ago than this.
    pub older_than: Option<Duration>,
    /// Only runs with one of these statuses (empty: any status).
    pub statuses: Vec<RunStatus>,
    /// Never the N most recently created runs of the store (whatever their status).
    pub keep: Option<usize>,
}

impl PruneFilter {
    /// True when no criterion is given (the filter selects nothing).
    pub fn is_empty(&self) -> bool {
        self.older_than.is_none() && self.statuses.is_empty() && self.keep.is_none()
    }
}

/// SQLite's `auto_vacuum` mode of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AutoVacuum {
    /// Free pages stay in the file until a full `VACUUM` (stores made before retention).
    None,
    /// Every commit gives free pages back.
    Full,
    /// `PRAGMA incremental_vacuum` gives free pages back (new stores).
    Incremental,
}

/// What [`crate::Store::reclaim`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reclaimed {
    /// Gave the free pages back (`PRAGMA incremental_vacuum`): cheap.
    Incremental,
    /// Rewrote the whole file (`VACUUM`), switching it to incremental: a one-time cost
    /// in time and in temporary disk space about the size of the store.
    FullVacuum,
    /// Nothing to do: the store gives space back at every commit.
    Nothing,
}

/// How big a store is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreSize {
    /// The store's file, `None` in memory.
    pub path: Option<PathBuf>,
    /// Bytes on disk: the file and its `-wal` (in memory: pages × page size).
    pub bytes: u64,
    /// SQLite's page size.
    pub page_size: u64,
    /// Pages in the database (as of the last commit, including the WAL's).
    pub page_count: u64,
    /// Pages that are free (reused by later writes; given back by a reclaim).
    pub freelist_count: u64,
    /// How the store gives free pages back.
    pub auto_vacuum: AutoVacuum,
    /// Runs stored.
    pub runs: u64,
    /// Events stored, from each run's last event number (approximate should the event
    /// layout change; `None` when it cannot be read).
    pub events: Option<u64>,
}

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

impl SqliteStore {
    /// [`crate::Store::select_prunable`].
    pub(crate) fn prunable(&self, f: &PruneFilter) -> Result<Vec<RunRecord>> {
        if f.is_empty() {
            return Ok(Vec::new());
        }
        let now = unix_now();
        let before = f.older_than.map(|d| now - d.as_secs_f64());
        let statuses = (!f.statuses.is_empty())
            .then(|| id_list(f.statuses.iter().map(|s| s.as_str())))
            .transpose()?;
        // LIMIT 0 keeps nothing.
        let keep = f.keep.map_or(0, |k| i64::try_from(k).unwrap_or(i64::MAX));
        let q = format!(
            "SELECT {RUN_FIELDS}, r.lease_owner, r.lease_expires FROM {RUN_FROM}
             WHERE (:before IS NULL OR updated_at < :before)
               AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
               AND id NOT IN (SELECT id FROM runs ORDER BY created_at DESC, id DESC LIMIT :keep)
               AND {NOT_STARTING}
             ORDER BY created_at DESC, id DESC"
        );
        let g = self.lock();
        let err = |e| sql("selecting runs to prune", e);
        let mut st = g.conn.prepare(&q).map_err(err)?;
        let rows = st
            .query_map(
                named_params! {
                    ":before": before,
                    ":statuses": statuses,
                    ":keep": keep,
                    ":starting": now - STARTING,
                },
                |r| Ok((RawRun::read(r)?, r.get(12)?, r.get(13)?)),
            )
            .map_err(err)?;
        let mut out = Vec::new();
        for row in rows {
            let (raw, owner, expires): (RawRun, Option<String>, Option<f64>) = row.map_err(err)?;
            if !held(owner.as_deref(), expires, now) {
                out.push(raw.into_record()?);
            }
        }
        Ok(out)
    }

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
    /// runs, one `BEGIN IMMEDIATE` transaction each. Inside the transaction the leases are
    /// read again: a run a process took since it was selected stays.
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
            let now = unix_now();
            let list = id_list(chunk.iter().map(String::as_str))?;
            let leased: Vec<(String, Option<String>, Option<f64>)> = {
                let mut st = tx
                    .prepare(
                        "SELECT id, lease_owner, lease_expires FROM runs
                         WHERE id IN (SELECT value FROM json_each(?1))
                           AND lease_owner IS NOT NULL AND lease_expires > ?2",
                    )
                    .map_err(err)?;
                st.query_map(params![list, now], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .and_then(|rows| rows.collect())
                .map_err(err)?
            };
            let busy: Vec<&str> = leased
                .iter()
                .filter(|(_, owner, expires)| held(owner.as_deref(), *expires, now))
                .map(|(id, ..)| id.as_str())
                .collect();
            let go: Vec<&str> = chunk
                .iter()
                .map(String::as_str)
                .filter(|id| !busy.contains(id))
                .collect();
            let n = tx
                .execute(
                    &format!(
                        "DELETE FROM runs WHERE id IN (SELECT value FROM json_each(:ids))
                         AND {NOT_STARTING}"
                    ),
                    named_params! {
                        ":ids": id_list(go.iter().copied())?,
                        ":starting": now - STARTING,
                    },
                )
                .map_err(err)?;
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
            AutoVacuum::Full => Reclaimed::Nothing,
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

/// Whether a lease is held by a process that may be running the run now: unexpired,
/// and not left by a process of this machine that has died.
fn held(owner: Option<&str>, expires: Option<f64>, now: f64) -> bool {
    matches!((owner, expires), (Some(o), Some(e)) if e > now && !lease::holder_is_dead(o))
}

/// Ids (or names) as a JSON array, for `IN (SELECT value FROM json_each(?))`: one
/// parameter however many there are.
fn id_list<'a>(ids: impl Iterator<Item = &'a str>) -> Result<String> {
    serde_json::to_string(&ids.collect::<Vec<_>>()).map_err(|source| crate::StoreError::Json {
        context: "listing run ids".into(),
        source,
    })
}

/// An SQL identifier, quoted.
fn ident(name: &str) -> String {
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
fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A file's length, 0 when it is missing.
fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Store, TurnKind};
    use serde_json::json;

    const DAY: f64 = 86_400.0;

    /// A run created and last updated `age_days` ago, with `status`.
    fn run_aged(store: &SqliteStore, id: &str, age_days: f64, status: RunStatus) -> RunRecord {
        let mut rec = RunRecord::new("flow.json", "{\"components\": {}}");
        rec.id = id.to_string();
        rec.status = status;
        rec.created_at = unix_now() - age_days * DAY;
        rec.updated_at = rec.created_at;
        store.create_run(&rec).unwrap();
        rec
    }

    fn ids(runs: Vec<RunRecord>) -> Vec<String> {
        runs.into_iter().map(|r| r.id).collect()
    }

    fn select(store: &SqliteStore, f: PruneFilter) -> Vec<String> {
        ids(store.select_prunable(&f).unwrap())
    }

    /// Six runs, newest first: F (1 day old, running), E (2, failed), D (10, succeeded),
    /// C (20, failed), B (40, waiting), A (60, succeeded).
    fn six() -> SqliteStore {
        let store = SqliteStore::open_in_memory().unwrap();
        for (id, age, st) in [
            ("01A", 60.0, RunStatus::Succeeded),
            ("01B", 40.0, RunStatus::Waiting),
            ("01C", 20.0, RunStatus::Failed),
            ("01D", 10.0, RunStatus::Succeeded),
            ("01E", 2.0, RunStatus::Failed),
            ("01F", 1.0, RunStatus::Running),
        ] {
            run_aged(&store, id, age, st);
        }
        store
    }

    fn days(n: u64) -> Option<Duration> {
        Some(Duration::from_secs(n * 86_400))
    }

    #[test]
    fn filters_by_age_status_and_keep() {
        let store = six();
        let f = |older_than, statuses: &[RunStatus], keep| PruneFilter {
            older_than,
            statuses: statuses.to_vec(),
            keep,
        };
        assert_eq!(
            select(&store, f(days(15), &[], None)),
            ["01C", "01B", "01A"]
        );
        assert_eq!(
            select(&store, f(None, &[RunStatus::Failed], None)),
            ["01E", "01C"]
        );
        let done = [RunStatus::Failed, RunStatus::Succeeded];
        assert_eq!(
            select(&store, f(days(5), &done, None)),
            ["01D", "01C", "01A"]
        );
        // --keep alone: everything but the N newest (whatever their status).
        assert_eq!(select(&store, f(None, &[], Some(4))), ["01B", "01A"]);
        assert_eq!(select(&store, f(None, &[], Some(0))).len(), 6);
        assert!(select(&store, f(None, &[], Some(10))).is_empty());
        // --keep counts all runs, not the selection: the 3 newest are F, E, D.
        assert_eq!(select(&store, f(None, &done, Some(3))), ["01C", "01A"]);
        assert_eq!(select(&store, f(days(15), &[], Some(5))), ["01A"]);
        // No criterion: nothing.
        assert!(select(&store, PruneFilter::default()).is_empty());
        assert!(PruneFilter::default().is_empty());
    }

    #[test]
    fn a_run_a_live_process_holds_is_never_pruned() {
        let store = six();
        let ttl = Duration::from_secs(60);
        // F runs in this (live) process.
        assert!(
            store
                .acquire_lease("01F", &crate::lease_holder(), ttl)
                .unwrap()
        );
        // E was left running by a process that has died; D's lease has expired.
        store
            .set_status("01E", RunStatus::Running, None, None)
            .unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let me = crate::lease_holder();
        let host = me.split(':').next().unwrap();
        assert!(
            store
                .acquire_lease("01E", &format!("{host}:{pid}:1"), ttl)
                .unwrap()
        );
        assert!(
            store
                .acquire_lease("01D", "elsewhere:1:1", Duration::ZERO)
                .unwrap()
        );
        let all = PruneFilter {
            keep: Some(0),
            ..PruneFilter::default()
        };
        // G was stored just now by a process that has not taken its lease yet.
        run_aged(&store, "01G", 0.0, RunStatus::Running);
        let chosen = select(&store, all.clone());
        assert!(!chosen.contains(&"01F".to_string()), "{chosen:?}");
        assert!(!chosen.contains(&"01G".to_string()), "{chosen:?}");
        assert_eq!(store.delete_runs(&["01G".to_string()]).unwrap(), 0);
        assert!(chosen.contains(&"01D".to_string()), "{chosen:?}");
        if Path::new("/proc/self/stat").exists() {
            assert!(chosen.contains(&"01E".to_string()), "{chosen:?}");
        }
        // Asked to delete it anyway (it was taken after the selection): it stays.
        let n = store
            .delete_runs(&["01F".to_string(), "01A".to_string()])
            .unwrap();
        assert_eq!(n, 1);
        assert!(store.find_run("01F").is_ok());
        assert!(store.find_run("01A").is_err());
        // Once the process lets go, it can go.
        store.release_lease("01F", &crate::lease_holder()).unwrap();
        assert!(select(&store, all).contains(&"01F".to_string()));
    }

    /// Rows referencing `run_id` in every table with a `run_id` column.
    fn rows_of(store: &SqliteStore, run_id: &str) -> Vec<(String, i64)> {
        let g = store.lock();
        let mut st = g
            .conn
            .prepare(
                "SELECT m.name FROM sqlite_master AS m, pragma_table_info(m.name) AS c
                 WHERE m.type = 'table' AND c.name = 'run_id' ORDER BY m.name",
            )
            .unwrap();
        let tables: Vec<String> = st
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        tables
            .into_iter()
            .map(|t| {
                let n = g
                    .conn
                    .query_row(
                        &format!("SELECT COUNT(*) FROM {} WHERE run_id = ?1", ident(&t)),
                        [run_id],
                        |r| r.get(0),
                    )
                    .unwrap();
                (t, n)
            })
            .collect()
    }

    /// A succeeded run with its first turn, `n` events of `len` bytes, checkpoints and a
    /// second turn.
    fn full_run(store: &SqliteStore, n: usize, len: usize) -> String {
        let rec = RunRecord::new("flow.json", "{\"components\": {}}");
        let turn = store
            .create_run_with_turn(&rec, TurnKind::Start, "q", &json!({}))
            .unwrap();
        // Stored events are compressed: each payload is noise, so none compresses away.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ len as u64;
        let mut body = || {
            let noise: String = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(b'a' + (x % 26) as u8)
                })
                .collect();
            format!("{{\"noise\":\"{noise}\"}}")
        };
        let mut state = canvas_engine::RunState::default();
        let mut checkpoints = crate::Checkpointer::new();
        for i in 0..n / 10 {
            state.globals.insert("sys.i".into(), json!(i));
            let mut events = crate::EventChunk::new("m", 0);
            for _ in 0..10 {
                events.push("node_finished", &body());
            }
            let mut w = crate::RunWrite::new(rec.id.clone(), turn);
            w.events.push(events);
            w.checkpoint = checkpoints.plan(&state).unwrap();
            store.write_one(w).unwrap();
        }
        store
            .begin_turn(&rec.id, TurnKind::Next, "more", &json!({}))
            .unwrap();
        // Finished (a lease-less running run this fresh would be left alone as starting).
        store
            .set_status(&rec.id, RunStatus::Succeeded, None, None)
            .unwrap();
        rec.id
    }

    #[test]
    fn deleting_a_run_deletes_every_row_that_references_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
        let gone = full_run(&store, 50, 100);
        let kept = full_run(&store, 50, 100);
        let before = rows_of(&store, &gone);
        // (Events of older versions had a table of their own, empty here.)
        assert!(
            before.iter().filter(|(_, n)| *n > 0).count() >= 3,
            "{before:?}"
        );
        assert!(store.run_bytes(std::slice::from_ref(&gone)).unwrap() > 50 * 100);
        assert_eq!(store.delete_runs(std::slice::from_ref(&gone)).unwrap(), 1);
        let after = rows_of(&store, &gone);
        assert!(after.iter().all(|(_, n)| *n == 0), "{after:?}");
        assert_eq!(rows_of(&store, &kept), before, "the other run is untouched");
        assert_eq!(store.events(&kept).unwrap().len(), 50);
        assert!(store.load_checkpoint(&kept).unwrap().state().is_some());
        // Deleting what is not there deletes nothing.
        assert_eq!(store.delete_runs(&[gone, "nope".into()]).unwrap(), 0);
        assert_eq!(store.delete_runs(&[]).unwrap(), 0);
    }

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
