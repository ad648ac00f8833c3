//! What the backends share. Each backend gives the row operations of [`Rows`] (its SQL,
//! inside a transaction it opened); the stored form is made here, once, over them: a
//! run's write (events as compact chunks, the checkpoint in its sequence, large values
//! kept once, how the turn ended), and reading events and checkpoints back.

use std::time::Duration;

use canvas_engine::RunState;
use serde_json::Value;

use super::checkpoint::Checkpointer;
use super::chunk::StoredChunk;
use super::delta::{Delta, apply};
use super::record::{RawRun, from_json, to_json};
use super::{
    NewRun, Result, RowFinish, RunRecord, RunStatus, RunWrite, StoreError, TurnKind, blobs, chunk,
    unix_now,
};

/// An event chunk to insert: a run's turn, and the chunk as it reads back.
pub(crate) struct NewChunk<'a> {
    pub run_id: &'a str,
    pub turn: u32,
    pub chunk: StoredChunk<'a>,
}

/// A new run with its first turn, as [`Rows::create_run`] stores it.
pub(crate) struct FirstTurn<'a> {
    /// The run.
    pub rec: &'a RunRecord,
    /// The first turn: its kind, query and inputs.
    pub kind: TurnKind,
    pub query: &'a str,
    pub inputs: &'a Value,
    /// The lease taken on the run: holder and lifetime.
    pub lease: Option<(&'a str, Duration)>,
    /// The batch and row (0-based) the run is tied to (never without a lease: its
    /// holder holds the row).
    pub row: Option<(&'a str, u64)>,
}

impl<'a> FirstTurn<'a> {
    /// Run `rec` with its first turn (kind, query, inputs) and `lease` (holder and
    /// lifetime), tied to no batch row.
    pub(crate) fn new(
        rec: &'a RunRecord,
        (kind, query, inputs): (TurnKind, &'a str, &'a Value),
        lease: Option<(&'a str, Duration)>,
    ) -> Self {
        FirstTurn {
            rec,
            kind,
            query,
            inputs,
            lease,
            row: None,
        }
    }
}

impl NewRun {
    /// As [`Rows::create_run`] takes it.
    pub(crate) fn first_turn(&self) -> FirstTurn<'_> {
        FirstTurn {
            rec: &self.record,
            kind: self.kind,
            query: &self.query,
            inputs: &self.inputs,
            lease: self.lease.as_ref().map(|l| (l.owner.as_str(), l.ttl)),
            row: self
                .lease
                .as_ref()
                .and_then(|l| l.row.as_ref())
                .map(|(b, i)| (b.as_str(), *i)),
        }
    }
}

/// A checkpoint to insert.
pub(crate) struct NewCheckpoint<'a> {
    pub run_id: &'a str,
    pub turn: u32,
    pub seq: i64,
    pub full: bool,
    pub body: &'a [u8],
    pub cuts: Option<&'a str>,
}

/// A stored event chunk.
pub(crate) struct ChunkRow {
    pub seq: i64,
    pub n: i64,
    pub message_id: String,
    pub created_at: i64,
    pub body: Vec<u8>,
    pub cuts: Option<String>,
}

impl ChunkRow {
    /// The row as [`StoredChunk`] reads it.
    pub fn stored(&self) -> StoredChunk<'_> {
        StoredChunk {
            seq: self.seq,
            n: self.n,
            message_id: &self.message_id,
            created_at: self.created_at,
            body: &self.body,
            cuts: self.cuts.as_deref(),
        }
    }
}

/// A stored checkpoint body: compressed, or plain text (as older SQLite stores wrote).
pub(crate) enum Body {
    Packed(Vec<u8>),
    Text(String),
    /// Neither (a corrupt row).
    Invalid,
}

/// A stored checkpoint.
pub(crate) struct CheckpointRow {
    pub seq: i64,
    pub body: Body,
    pub cuts: Option<String>,
}

/// What a prune selects: the criteria of a [`crate::PruneFilter`] as the query takes them.
pub(crate) struct PruneQuery<'a> {
    /// Only runs updated before this (Unix seconds).
    pub before: Option<f64>,
    /// Only runs with one of these statuses (empty: any).
    pub statuses: &'a [&'a str],
    /// Never the newest `keep` runs.
    pub keep: i64,
    /// A lease-less running run updated after this is starting: left alone.
    pub starting: f64,
}

/// A run a prune may delete, with its lease (judged by the caller).
pub(crate) struct Candidate {
    pub run: RawRun,
    pub owner: Option<String>,
    pub expires: Option<f64>,
}

/// A run's lease as stored.
pub(crate) struct LeaseRow {
    pub id: String,
    pub owner: Option<String>,
    pub expires: Option<f64>,
}

/// The row operations of one backend, inside one transaction (or savepoint) it opened.
pub(crate) trait Rows {
    /// True when the run exists.
    fn run_exists(&mut self, run_id: &str) -> Result<bool>;
    /// The number of the run's last stored event (0 when none).
    fn last_event_seq(&mut self, run_id: &str) -> Result<i64>;
    /// Insert an event chunk.
    fn insert_chunk(&mut self, c: &NewChunk<'_>) -> Result<()>;
    /// The number of the run's newest checkpoint (0 when none).
    fn last_checkpoint_seq(&mut self, run_id: &str) -> Result<i64>;
    /// Insert a checkpoint.
    fn insert_checkpoint(&mut self, c: &NewCheckpoint<'_>) -> Result<()>;
    /// Delete the run's checkpoints numbered below `seq` (a full one replaces them).
    fn drop_checkpoints_before(&mut self, run_id: &str, seq: i64) -> Result<()>;
    /// Note that the run uses blob `hash`, when it is stored (and keep it stored until
    /// the transaction ends); false when it is not stored.
    fn ref_blob(&mut self, run_id: &str, hash: &str) -> Result<bool>;
    /// Store blob `hash` (compressed `body`) and note that the run uses it.
    fn insert_blob(&mut self, run_id: &str, hash: &str, body: &[u8]) -> Result<()>;
    /// Insert a new run, running, with its first turn (and its lease, and its tie to a
    /// batch row the lease's holder holds: [`StoreError::Leased`] else).
    fn create_run(&mut self, t: &FirstTurn<'_>) -> Result<()>;
    /// Record a batch row's end (see [`crate::Batches::finish_row`]).
    fn finish_row(&mut self, f: &RowFinish) -> Result<()>;
    /// The run's status after its turn `turn` ended (and that turn's end).
    fn end_turn(&mut self, run_id: &str, turn: u32, end: &TurnEndRow<'_>) -> Result<()>;
    /// A blob's compressed body (run `run_id` uses it).
    fn blob(&mut self, run_id: &str, hash: &str) -> Result<Option<Vec<u8>>>;
    /// The run's events stored one per row by older versions (`turn` narrows them).
    fn legacy_events(&mut self, run_id: &str, turn: Option<u32>) -> Result<Vec<String>>;
    /// The run's event chunks in order (`turn` narrows them).
    fn chunks(&mut self, run_id: &str, turn: Option<u32>) -> Result<Vec<ChunkRow>>;
    /// The run's newest full checkpoint.
    fn last_full_checkpoint(&mut self, run_id: &str) -> Result<Option<CheckpointRow>>;
    /// The run's checkpoints numbered above `seq`, in order.
    fn checkpoints_after(&mut self, run_id: &str, seq: i64) -> Result<Vec<CheckpointRow>>;
    /// Now, by the clock leases are stamped with (Unix seconds).
    fn lease_clock(&mut self) -> Result<f64>;
    /// The runs a prune selects by `q`, newest first, with their leases.
    fn prune_candidates(&mut self, q: &PruneQuery<'_>) -> Result<Vec<Candidate>>;
    /// The leases of these runs that have not expired by `now` (locked against a
    /// change until the transaction ends).
    fn live_leases(&mut self, ids: &[String], now: f64) -> Result<Vec<LeaseRow>>;
    /// Delete these runs (and by cascade all that references them), except a running
    /// run without a lease updated after `starting`; how many went.
    fn delete_runs(&mut self, ids: &[&str], starting: f64) -> Result<usize>;
}

/// How a turn ended, as its columns.
pub(crate) struct TurnEndRow<'a> {
    pub status: RunStatus,
    pub error: Option<&'a str>,
    /// The pending form, as JSON text.
    pub waiting: Option<&'a str>,
    pub now: f64,
}

/// One run's write (see [`RunWrite`]) inside the group's transaction: its events as
/// chunks numbered after the stored ones, its checkpoint (refused unless it follows
/// the newest stored one), and how the turn ended. Returns the checkpoint bytes
/// written. The run's row is not touched per checkpoint, only by a turn's end.
/// `joined` is the writer's buffer for joining chunks ([`chunk::each_joined`]).
pub(crate) fn write_run(rows: &mut impl Rows, w: &RunWrite, joined: &mut String) -> Result<u64> {
    let run_id = w.run_id.as_str();
    match &w.create {
        Some(new) => rows.create_run(&new.first_turn())?,
        None if !rows.run_exists(run_id)? => {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        None => {}
    }
    let mut next: Option<i64> = None;
    chunk::each_joined(&w.events, joined, |first, count, text| {
        if count == 0 {
            return Ok(());
        }
        let seq = match next {
            Some(n) => n,
            None => rows.last_event_seq(run_id)? + 1,
        };
        let encoded = chunk::encode(text);
        let cuts = match &encoded.split {
            Some(s) => Some(keep_blobs(rows, run_id, s)?),
            None => None,
        };
        rows.insert_chunk(&NewChunk {
            run_id,
            turn: w.turn,
            chunk: StoredChunk {
                seq,
                n: i64::from(count),
                message_id: &first.message_id,
                created_at: first.created_at,
                body: &encoded.body,
                cuts: cuts.as_deref(),
            },
        })?;
        next = Some(seq + i64::from(count));
        Ok(())
    })?;
    let mut bytes = 0;
    if let Some(cp) = &w.checkpoint {
        let last = rows.last_checkpoint_seq(run_id)?;
        if last != cp.seq - 1 {
            return Err(StoreError::Conflict {
                run_id: run_id.to_string(),
                found: last,
                expected: cp.seq - 1,
            });
        }
        let split = blobs::split(&cp.json);
        let (json, cuts) = match &split {
            Some(s) => (s.text.as_str(), Some(keep_blobs(rows, run_id, s)?)),
            None => (cp.json.as_str(), None),
        };
        let body = chunk::compress(json);
        rows.insert_checkpoint(&NewCheckpoint {
            run_id,
            turn: w.turn,
            seq: cp.seq,
            full: cp.full,
            body: &body,
            cuts: cuts.as_deref(),
        })?;
        if cp.full {
            rows.drop_checkpoints_before(run_id, cp.seq)?;
        }
        bytes = body.len() as u64;
    }
    if let Some(end) = &w.end {
        let waiting = end.waiting.as_ref().map(to_json).transpose()?;
        let row = TurnEndRow {
            status: end.status,
            error: end.error.as_deref(),
            waiting: waiting.as_deref(),
            now: unix_now(),
        };
        rows.end_turn(run_id, w.turn, &row)?;
    }
    if let Some(f) = &w.row_end {
        rows.finish_row(f)?;
    }
    Ok(bytes)
}

/// Keep the values cut out of a text in `blobs` (each once) and note that the run uses
/// them; returns the text's `cuts` column.
fn keep_blobs(rows: &mut impl Rows, run_id: &str, s: &blobs::Split<'_>) -> Result<String> {
    for (cut, value) in s.cuts.iter().zip(&s.values) {
        // Compressing is the cost: only a value not stored yet is.
        if !rows.ref_blob(run_id, &cut.hash)? {
            rows.insert_blob(run_id, &cut.hash, &chunk::compress(value))?;
        }
    }
    Ok(s.cuts_json())
}

/// The text of a large value kept in `blobs`.
fn fetch_blob(rows: &mut impl Rows, run_id: &str, key: &str) -> Result<String> {
    let what = || format!("run {run_id}: large value {key}");
    let body = rows
        .blob(run_id, key)?
        .ok_or_else(|| StoreError::Corrupt(format!("{}: missing", what())))?;
    chunk::decompress(&body, what)
}

/// The run's events as JSON lines, in order: the rows of older versions, then the
/// chunks (`turn` narrows both to one turn). `NotFound` when there is no such run.
pub(crate) fn event_lines(
    rows: &mut impl Rows,
    run_id: &str,
    turn: Option<u32>,
) -> Result<Vec<String>> {
    let legacy = rows.legacy_events(run_id, turn)?;
    let chunks = rows.chunks(run_id, turn)?;
    if legacy.is_empty() && chunks.is_empty() && !rows.run_exists(run_id)? {
        return Err(StoreError::NotFound(run_id.to_string()));
    }
    // A run continued since an older version has its first events in rows of their own.
    let mut out = legacy;
    for c in chunks {
        out.extend(c.stored().lines(run_id, |k| fetch_blob(rows, run_id, k))?);
    }
    Ok(out)
}

/// The texts of a run's newest full checkpoint and of the deltas after it, each with its
/// number.
pub(crate) type CheckpointTexts = ((i64, String), Vec<(i64, String)>);

/// Read the texts [`rebuild`] needs (large values spliced back in), in the caller's
/// transaction; `None` when the run has no checkpoint, `NotFound` when there is no run.
pub(crate) fn checkpoint_texts(
    rows: &mut impl Rows,
    run_id: &str,
) -> Result<Option<CheckpointTexts>> {
    let Some(full) = rows.last_full_checkpoint(run_id)? else {
        if !rows.run_exists(run_id)? {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        return Ok(None);
    };
    let deltas = rows.checkpoints_after(run_id, full.seq)?;
    let mut text = |row: CheckpointRow| -> Result<(i64, String)> {
        let what = || format!("reading checkpoint {} of run {run_id}", row.seq);
        let text = match row.body {
            Body::Packed(b) => chunk::decompress(&b, what)?,
            Body::Text(t) => t,
            Body::Invalid => {
                return Err(StoreError::Corrupt(format!("{}: not a checkpoint", what())));
            }
        };
        let text = match &row.cuts {
            Some(cuts) => blobs::join(text, cuts, |k| fetch_blob(rows, run_id, k), what)?,
            None => text,
        };
        Ok((row.seq, text))
    };
    let full = text(full)?;
    let deltas = deltas.into_iter().map(&mut text).collect::<Result<_>>()?;
    Ok(Some((full, deltas)))
}

/// The run's state from its checkpoint texts, as the planner of its next checkpoints
/// (outside any transaction: pure CPU).
pub(crate) fn rebuild(run_id: &str, texts: Option<CheckpointTexts>) -> Result<Checkpointer> {
    let Some(((seq, body), deltas)) = texts else {
        return Ok(Checkpointer::new());
    };
    let what = |seq: i64| move || format!("reading checkpoint {seq} of run {run_id}");
    let mut state: RunState = from_json(&body, what(seq))?;
    let n = u32::try_from(deltas.len()).unwrap_or(u32::MAX);
    let (mut last, mut delta_bytes) = (seq, 0);
    for (seq, text) in deltas {
        let d: Delta = from_json(&text, what(seq))?;
        apply(&mut state, d).map_err(|source| StoreError::Json {
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
