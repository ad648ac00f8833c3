//! Batches: one canvas run over the rows of a dataset. A batch and its rows live in
//! the store beside the runs they make (one run per row), so a batch survives the
//! process that runs it: any process may work on it, claiming rows with leases
//! ([`Batches::claim_rows`]), and a row whose worker died is claimed again when its
//! lease expires (at once when the worker was a dead process of this machine), and
//! continued from its run's last checkpoint.
//!
//! The store keeps a row's spec and result as opaque JSON: what a row asks and how its
//! outcome is judged belong to the batch runner.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Result;

/// One batch as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    /// The batch id, a ULID (uppercase).
    pub id: String,
    /// What identifies "the same batch" for workers joining it: a digest of the canvas
    /// and the dataset.
    pub key: String,
    /// The canvas path as given, made absolute.
    pub source: String,
    /// The canvas text as read (what every row runs).
    pub canvas: String,
    /// Hex SHA-256 of `canvas`.
    pub canvas_hash: String,
    /// The dataset path as given, made absolute.
    pub dataset: String,
    /// Creation time, Unix seconds.
    pub created_at: f64,
    /// Rows in the batch.
    pub rows: u64,
    /// The options the batch was started with (opaque to the store: the CLI's).
    pub options: Option<Value>,
}

/// Where a row stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RowStatus {
    /// Not claimed yet (or given back by a worker that stopped).
    Pending,
    /// Claimed by a worker, whose lease says until when.
    Running,
    /// Its run finished.
    Succeeded,
    /// Its run failed (or stopped at its step budget).
    Failed,
    /// Its run waits at a form the row gives no answer for.
    Waiting,
}

impl RowStatus {
    /// Every status, in declaration order.
    pub const ALL: [RowStatus; 5] = [
        RowStatus::Pending,
        RowStatus::Running,
        RowStatus::Succeeded,
        RowStatus::Failed,
        RowStatus::Waiting,
    ];

    /// The stored (and displayed) name.
    pub fn as_str(self) -> &'static str {
        match self {
            RowStatus::Pending => "pending",
            RowStatus::Running => "running",
            RowStatus::Succeeded => "succeeded",
            RowStatus::Failed => "failed",
            RowStatus::Waiting => "waiting",
        }
    }

    /// True once the row is done with (succeeded, failed or waiting).
    pub fn is_done(self) -> bool {
        matches!(
            self,
            RowStatus::Succeeded | RowStatus::Failed | RowStatus::Waiting
        )
    }
}

impl fmt::Display for RowStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RowStatus {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        RowStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| format!("unknown row status \"{s}\""))
    }
}

/// A row as given to [`Batches::create_batch`].
#[derive(Debug, Clone, PartialEq)]
pub struct RowSpec {
    /// The row's id: the dataset's `id`, else its position (1-based).
    pub row_id: String,
    /// What the row asks (query, inputs, answers, checks), as the runner reads it.
    pub spec: Value,
}

/// A row a worker claimed.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedRow {
    /// Its position in the dataset (0-based).
    pub idx: u64,
    /// Its id.
    pub row_id: String,
    /// What it asks.
    pub spec: Value,
    /// The run made for it by an earlier claim, to be continued.
    pub run_id: Option<String>,
    /// How many times it was claimed, this claim included.
    pub attempts: u32,
}

/// A row as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRow {
    /// Its position in the dataset (0-based).
    pub idx: u64,
    /// Its id.
    pub row_id: String,
    /// Where it stands.
    pub status: RowStatus,
    /// Its run, once one was made.
    pub run_id: Option<String>,
    /// Whether its checks passed (`None`: it has none, or is not done).
    pub passed: Option<bool>,
    /// Its result, once done.
    pub result: Option<Value>,
    /// How many times it was claimed.
    pub attempts: u32,
}

/// How many rows of a batch stand where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RowCounts {
    /// Not claimed yet.
    pub pending: u64,
    /// Claimed, not done.
    pub running: u64,
    /// Finished.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Waiting at a form.
    pub waiting: u64,
    /// Done rows whose checks failed.
    pub checks_failed: u64,
}

impl RowCounts {
    /// Rows done with.
    pub fn done(&self) -> u64 {
        self.succeeded + self.failed + self.waiting
    }

    /// Every row.
    pub fn total(&self) -> u64 {
        self.pending + self.running + self.done()
    }

    /// Count one row of `status` (whose checks `passed`).
    pub fn add(&mut self, status: RowStatus, passed: Option<bool>) {
        match status {
            RowStatus::Pending => self.pending += 1,
            RowStatus::Running => self.running += 1,
            RowStatus::Succeeded => self.succeeded += 1,
            RowStatus::Failed => self.failed += 1,
            RowStatus::Waiting => self.waiting += 1,
        }
        if status.is_done() && passed == Some(false) {
            self.checks_failed += 1;
        }
    }
}

/// How a row ended, as [`Batches::finish_row`] stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct RowEnd {
    /// Succeeded, failed or waiting.
    pub status: RowStatus,
    /// Whether its checks passed (`None`: it has none).
    pub passed: Option<bool>,
    /// The result line.
    pub result: Value,
    /// The row's run, whose lease the worker gives up as the row is recorded (`None`:
    /// it holds none).
    pub release_run: Option<String>,
}

/// The batches of a store. Every method is blocking, as [`super::Store`]'s are.
pub trait Batches {
    /// Store a new batch and its rows, all pending, in one transaction.
    fn create_batch(&self, rec: &BatchRecord, rows: &[RowSpec]) -> Result<()>;
    /// The newest batch with `rec.key` that has rows not done, else `rec` stored as a new
    /// batch with `rows`. Two processes joining at once get the same batch.
    fn join_batch(&self, rec: &BatchRecord, rows: &[RowSpec]) -> Result<BatchRecord>;
    /// A batch by full id, `latest` (newest created) or unique case-insensitive prefix.
    fn find_batch(&self, id_or_prefix: &str) -> Result<BatchRecord>;
    /// Batches newest first with their row counts; `limit` 0 means all.
    fn list_batches(&self, limit: usize) -> Result<Vec<(BatchRecord, RowCounts)>>;
    /// How many rows of the batch stand where.
    fn row_counts(&self, batch_id: &str) -> Result<RowCounts>;
    /// Claim up to `max` rows for `owner` until `ttl` from now, in dataset order: pending
    /// rows first, then rows whose worker's lease expired or who is a dead process of
    /// this machine. Each claim counts an attempt.
    fn claim_rows(
        &self,
        batch_id: &str,
        owner: &str,
        max: usize,
        ttl: Duration,
    ) -> Result<Vec<ClaimedRow>>;
    /// Extend the leases of every row `owner` holds in the batch; how many it holds.
    fn renew_rows(&self, batch_id: &str, owner: &str, ttl: Duration) -> Result<u64>;
    /// Record how a row `owner` holds ended (and give up the lease of
    /// [`RowEnd::release_run`], in the same transaction); [`super::StoreError::Leased`]
    /// when `owner` does not hold it any more (another worker took it over).
    fn finish_row(&self, batch_id: &str, idx: u64, owner: &str, end: &RowEnd) -> Result<()>;
    /// Give back the rows `owner` holds and has not finished, or only `row` of them
    /// (pending again; their runs stay tied to them, to be continued); how many.
    fn release_rows(&self, batch_id: &str, owner: &str, row: Option<u64>) -> Result<u64>;
    /// Every row of the batch, in dataset order.
    fn batch_rows(&self, batch_id: &str) -> Result<Vec<BatchRow>> {
        let mut rows = Vec::new();
        self.each_batch_row(batch_id, &mut |row| {
            rows.push(row);
            Ok(())
        })?;
        Ok(rows)
    }
    /// Hand every row of the batch to `f`, in dataset order, one at a time (a large
    /// batch's rows and results are never all in memory); stops at `f`'s first error.
    fn each_batch_row(
        &self,
        batch_id: &str,
        f: &mut dyn FnMut(BatchRow) -> Result<()>,
    ) -> Result<()>;
}
