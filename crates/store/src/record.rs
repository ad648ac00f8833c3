//! Stored rows (of runs, turns, batches and their rows) as the backends read them,
//! before their text columns are checked, and the JSON text of stored values. Both backends keep JSON as text (not PostgreSQL's
//! `jsonb`, which reorders object keys: RAGFlow's key order is part of the output).

use super::batch::{BatchRecord, BatchRow, ClaimedRow, RowCounts, RowStatus};
use super::{Result, RunRecord, RunStatus, StoreError, TurnKind, TurnRecord};

/// Most matches an ambiguous-prefix error lists.
pub(crate) const MAX_MATCHES: usize = 20;

/// A `runs` row (with its canvas text) as read, before its columns are checked.
pub(crate) struct RawRun {
    pub id: String,
    pub source: String,
    pub canvas: String,
    pub canvas_hash: String,
    pub status: String,
    pub parent: Option<String>,
    pub created_at: f64,
    pub updated_at: f64,
    pub turns: i64,
    pub error: Option<String>,
    pub waiting: Option<String>,
    pub options: Option<String>,
}

impl RawRun {
    /// The record, its status and JSON columns parsed.
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

/// A `turns` row as read.
pub(crate) struct RawTurn {
    pub turn: i64,
    pub kind: String,
    pub query: String,
    pub inputs: String,
    pub started_at: f64,
    pub ended_at: Option<f64>,
    pub status: Option<String>,
}

impl RawTurn {
    /// The record of a turn of run `run_id`, its names and inputs parsed.
    pub(crate) fn into_record(self, run_id: &str) -> Result<TurnRecord> {
        let turn = self.turn;
        let corrupt =
            |what: &str| StoreError::Corrupt(format!("run {run_id}: turn {turn}: {what}"));
        let kind = match self.kind.as_str() {
            "start" => TurnKind::Start,
            "answer" => TurnKind::Answer,
            "next" => TurnKind::Next,
            other => return Err(corrupt(&format!("unknown kind {other:?}"))),
        };
        let status = self
            .status
            .map(|st| st.parse::<RunStatus>().map_err(|e| corrupt(&e.to_string())))
            .transpose()?;
        Ok(TurnRecord {
            turn: u32::try_from(turn).map_err(|_| corrupt("bad number"))?,
            kind,
            query: self.query,
            inputs: from_json(&self.inputs, || {
                format!("reading turn {turn} of run {run_id}")
            })?,
            started_at: self.started_at,
            ended_at: self.ended_at,
            status,
        })
    }
}

/// A `batches` row as read.
pub(crate) struct RawBatch {
    pub id: String,
    pub key: String,
    pub source: String,
    pub canvas: String,
    pub canvas_hash: String,
    pub dataset: String,
    pub created_at: f64,
    pub rows: i64,
    pub options: Option<String>,
}

impl RawBatch {
    /// The record, its options parsed.
    pub(crate) fn into_record(self) -> Result<BatchRecord> {
        let id = self.id;
        let options = match self.options {
            None => None,
            Some(o) => Some(from_json(&o, || {
                format!("reading the options of batch {id}")
            })?),
        };
        Ok(BatchRecord {
            key: self.key,
            source: self.source,
            canvas: self.canvas,
            canvas_hash: self.canvas_hash,
            dataset: self.dataset,
            created_at: self.created_at,
            rows: count(self.rows),
            options,
            id,
        })
    }
}

/// A `batch_rows` row as read.
pub(crate) struct RawBatchRow {
    pub idx: i64,
    pub row_id: String,
    pub status: String,
    pub run_id: Option<String>,
    pub passed: Option<bool>,
    pub result: Option<String>,
    pub attempts: i64,
}

impl RawBatchRow {
    /// The row of batch `batch_id`, its status and result parsed.
    pub(crate) fn into_row(self, batch_id: &str) -> Result<BatchRow> {
        let idx = self.idx;
        let result = self
            .result
            .map(|r| {
                from_json(&r, || {
                    format!("reading row {} of batch {batch_id}", idx + 1)
                })
            })
            .transpose()?;
        Ok(BatchRow {
            idx: count(idx),
            row_id: self.row_id,
            status: row_status(batch_id, &self.status)?,
            run_id: self.run_id,
            passed: self.passed,
            result,
            attempts: attempts(self.attempts),
        })
    }
}

/// A row just claimed, as the claim returned it.
pub(crate) struct RawClaim {
    pub idx: i64,
    pub row_id: String,
    pub spec: String,
    pub run_id: Option<String>,
    pub attempts: i64,
}

impl RawClaim {
    /// The claimed row of batch `batch_id`, its spec parsed.
    pub(crate) fn into_claimed(self, batch_id: &str) -> Result<ClaimedRow> {
        let idx = self.idx;
        Ok(ClaimedRow {
            idx: count(idx),
            row_id: self.row_id,
            spec: from_json(&self.spec, || {
                format!("reading row {} of batch {batch_id}", idx + 1)
            })?,
            run_id: self.run_id,
            attempts: attempts(self.attempts),
        })
    }
}

/// The counts of a batch's rows from `(status, passed, rows)` groups.
pub(crate) fn row_counts(
    batch_id: &str,
    groups: impl IntoIterator<Item = (String, Option<bool>, i64)>,
) -> Result<RowCounts> {
    let mut out = RowCounts::default();
    for (status, passed, n) in groups {
        let status = row_status(batch_id, &status)?;
        for _ in 0..count(n) {
            out.add(status, passed);
        }
    }
    Ok(out)
}

/// The error of a worker that does not hold row `idx` (held by `owner`, if anyone).
pub(crate) fn row_not_held(batch_id: &str, idx: u64, owner: Option<String>) -> StoreError {
    StoreError::Leased {
        run_id: format!("batch {batch_id} row {}", idx + 1),
        owner: owner.unwrap_or_else(|| "no worker".into()),
    }
}

/// True when a running row held by `owner` until `expires` (`now` by the clock that
/// stamped it) may be claimed by another worker: its lease expired, or its holder is a
/// dead process of this machine.
pub(crate) fn row_is_stale(owner: Option<&str>, expires: Option<f64>, now: f64) -> bool {
    expires.is_none_or(|e| e <= now) || owner.is_none_or(crate::lease::holder_is_dead)
}

fn row_status(batch_id: &str, s: &str) -> Result<RowStatus> {
    s.parse()
        .map_err(|e| StoreError::Corrupt(format!("batch {batch_id}: {e}")))
}

/// A stored count (never negative unless corrupt: then 0).
fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn attempts(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

/// The `LIKE` pattern of an id prefix: its own `\`, `%` and `_` taken literally (with
/// `ESCAPE '\'`).
pub(crate) fn like_prefix(q: &str) -> String {
    let escaped = q
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("{escaped}%")
}

/// The one id a prefix search found (`None`: none), or the ambiguity of `prefix`.
pub(crate) fn one_match(prefix: &str, mut ids: Vec<String>) -> Result<Option<String>> {
    match ids.len() {
        0 => Ok(None),
        1 => Ok(Some(ids.remove(0))),
        _ => Err(StoreError::Ambiguous {
            prefix: prefix.to_string(),
            matches: ids.into_iter().take(MAX_MATCHES).collect(),
        }),
    }
}

/// A value as stored JSON text.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|source| StoreError::Json {
        context: "serialising a stored value".into(),
        source,
    })
}

/// A stored JSON text as a value (`what` names it in errors).
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    s: &str,
    what: impl Fn() -> String,
) -> Result<T> {
    serde_json::from_str(s).map_err(|source| StoreError::Json {
        context: what(),
        source,
    })
}
