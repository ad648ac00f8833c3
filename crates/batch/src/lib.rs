//! A canvas run over a dataset: the rows ([`dataset`]), their checks ([`expect`]), what
//! a row's run gave ([`observe`]), the workers that claim rows and run many at once
//! ([`worker`]), and the summary and results files ([`summary`], [`results`]).
//!
//! A batch lives in the store ([`canvas_store::Batches`]): each row is claimed with a
//! lease and run as a stored run of its own, so a batch stopped anywhere (Ctrl-C, a
//! crash, a lost machine) is resumed without running a finished row again, and several
//! processes, on several machines sharing a store, can work on one batch.

pub mod dataset;
pub mod expect;
pub mod observe;
pub mod results;
pub mod summary;
pub mod worker;

use canvas_engine::usage::Usage;
use canvas_pyrt::Object;
use canvas_store::RowStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use dataset::{DataFormat, DataRow, DatasetError};
pub use expect::{CheckResult, Expect};
pub use observe::Observed;
pub use summary::{Summary, SummaryBuilder};
pub use worker::{Progress, Worker, WorkerEnd};

/// What a row asks, as stored with it: its inputs and answers already typed by the
/// canvas's fields, in RAGFlow's API shape.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RowAsk {
    /// `sys.query`.
    pub query: String,
    /// The first turn's `inputs` (Begin's, and keys no form asks).
    pub inputs: Object,
    /// Answers for the forms the run reaches.
    #[serde(skip_serializing_if = "Object::is_empty")]
    pub answers: Object,
    /// The checks (see [`Expect`]).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub expect: Value,
}

/// How a row ended, as stored with it and written to the results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowResult {
    /// Its position in the dataset, 1-based.
    pub row: u64,
    /// Its id (the dataset's, else its position).
    pub id: String,
    /// Its run.
    pub run_id: Option<String>,
    /// Succeeded, failed or waiting.
    pub status: RowStatus,
    /// The text of its last turn's messages.
    pub answer: String,
    /// Its last turn's final outputs.
    pub outputs: Value,
    /// Each check, judged.
    pub checks: Vec<CheckResult>,
    /// Whether every check held (`None`: it has none).
    pub passed: Option<bool>,
    /// Tokens its model calls used.
    pub usage: Usage,
    /// Seconds its run took in the process that finished it.
    pub seconds: f64,
    /// Why it failed, or what it waits for.
    pub error: Option<String>,
}

/// Why a batch could not go on (a row's own failure is its [`RowResult`]).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The store refused a read or a write.
    #[error(transparent)]
    Store(#[from] canvas_store::StoreError),
    /// A stored row that this binary cannot read.
    #[error("batch {batch}: row {row}: {message}")]
    Row {
        /// The batch.
        batch: String,
        /// The row, 1-based.
        row: u64,
        /// What is wrong.
        message: String,
    },
}
