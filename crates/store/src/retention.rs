//! Retention, as every backend does it: which runs a prune deletes ([`PruneFilter`]),
//! deleting them without touching a run a live process holds, and the shapes of what a
//! store reports ([`StoreSize`], [`Reclaimed`]). Giving space back and measuring it is
//! each backend's own (SQLite's file, PostgreSQL's tables).
//!
//! Deleting names only the `runs` table: every other table references it with `ON
//! DELETE CASCADE`, so a run's turns, events and checkpoints (and the rows of any table
//! added later that does the same) go with it.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::rows::{PruneQuery, Rows};
use super::{Result, RunRecord, RunStatus, lease, unix_now};

/// Runs deleted per write transaction, so that a big prune never holds the write lock
/// for long (a run of a 1000-node canvas has a few thousand rows).
pub(crate) const DELETE_CHUNK: usize = 32;

/// A `running` run without a lease that changed this recently is starting (a process
/// stores the run, then takes its lease): it is left alone like a leased one.
const STARTING: f64 = 60.0;

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

/// How a store gives the space of deleted rows back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AutoVacuum {
    /// SQLite: free pages stay in the file until a full `VACUUM` (stores made before
    /// retention).
    None,
    /// SQLite: every commit gives free pages back.
    Full,
    /// SQLite: `PRAGMA incremental_vacuum` gives free pages back (new stores).
    Incremental,
    /// PostgreSQL: the server's autovacuum makes the space reusable; the tables keep it.
    Server,
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
    /// Nothing done here: PostgreSQL's autovacuum makes the deleted rows' space reusable
    /// by later writes (the tables do not shrink; that takes a `VACUUM FULL`, a
    /// database administrator's call, as it locks them).
    Autovacuum,
}

/// How big a store is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreSize {
    /// The store's file, `None` in memory or on a server.
    pub path: Option<PathBuf>,
    /// Bytes on disk: SQLite's file and its `-wal` (in memory: pages × page size);
    /// PostgreSQL's tables with their indexes and TOAST (`pg_total_relation_size`).
    pub bytes: u64,
    /// The page (block) size.
    pub page_size: u64,
    /// Pages in the database (SQLite: as of the last commit, including the WAL's;
    /// PostgreSQL: `bytes` in blocks).
    pub page_count: u64,
    /// Pages that are free (SQLite: reused by later writes, given back by a reclaim;
    /// PostgreSQL: not counted, 0).
    pub freelist_count: u64,
    /// How the store gives free pages back.
    pub auto_vacuum: AutoVacuum,
    /// Runs stored.
    pub runs: u64,
    /// Events stored, from each run's last event number (approximate should the event
    /// layout change; `None` when it cannot be read).
    pub events: Option<u64>,
}

/// [`crate::Store::select_prunable`], over a backend's rows.
pub(crate) fn prunable(rows: &mut impl Rows, f: &PruneFilter) -> Result<Vec<RunRecord>> {
    if f.is_empty() {
        return Ok(Vec::new());
    }
    let now = unix_now();
    let statuses: Vec<&str> = f.statuses.iter().map(|s| s.as_str()).collect();
    let q = PruneQuery {
        before: f.older_than.map(|d| now - d.as_secs_f64()),
        statuses: &statuses,
        // LIMIT 0 keeps nothing.
        keep: f.keep.map_or(0, |k| i64::try_from(k).unwrap_or(i64::MAX)),
        starting: now - STARTING,
    };
    let candidates = rows.prune_candidates(&q)?;
    let lease_now = rows.lease_clock()?;
    candidates
        .into_iter()
        .filter(|c| !held(c.owner.as_deref(), c.expires, lease_now))
        .map(|c| c.run.into_record())
        .collect()
}

/// Delete one chunk of runs inside the caller's write transaction. The leases are read
/// again there: a run a process took since it was selected stays.
pub(crate) fn delete_chunk(rows: &mut impl Rows, ids: &[String]) -> Result<usize> {
    let now = rows.lease_clock()?;
    let leased = rows.live_leases(ids, now)?;
    let busy: Vec<&str> = leased
        .iter()
        .filter(|l| held(l.owner.as_deref(), l.expires, now))
        .map(|l| l.id.as_str())
        .collect();
    let go: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|id| !busy.contains(id))
        .collect();
    if go.is_empty() {
        return Ok(0);
    }
    rows.delete_runs(&go, unix_now() - STARTING)
}

/// Whether a lease is held by a process that may be running the run now: unexpired,
/// and not left by a process of this machine that has died.
fn held(owner: Option<&str>, expires: Option<f64>, now: f64) -> bool {
    matches!((owner, expires), (Some(o), Some(e)) if e > now && !lease::holder_is_dead(o))
}
