//! [`Batches`] on the PostgreSQL store: `batches` and `batch_rows` (schema 2), for
//! workers on several machines sharing one batch. What a stored row means is shared
//! with the other backends (`record.rs`); what differs from SQLite:
//! - A claim locks the rows it takes with `FOR UPDATE SKIP LOCKED`: workers claiming at
//!   once take different rows, without waiting for each other.
//! - Row leases are stamped and judged by the server's clock, as runs' leases are. A
//!   holder of this machine that died loses its rows at once ([`lease::holder_is_dead`]),
//!   as on SQLite; a holder elsewhere, when its lease expires.
//! - Joining holds an advisory lock on the batch's key, so workers joining at once join
//!   one batch (the unique index on an open key backs that up).
//! - Finishing a row locks its batch first, so the last two rows finished at once see
//!   each other, and the batch is closed.

use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{GenericClient, Row, Transaction};

use super::{NOW, PgRows, PgStore, col, pg_err};
use crate::batch::{BatchRecord, BatchRow, Batches, ClaimedRow, RowCounts, RowEnd, RowSpec};
use crate::record::{
    MAX_MATCHES, RawBatch, RawBatchRow, RawClaim, like_prefix, one_match, row_counts, row_not_held,
    to_json,
};
use crate::{Result, StoreError, lease};

const BATCH_FIELDS: &str =
    "id, key, source, canvas, canvas_hash, dataset, created_at, rows, options";
/// Rows inserted per statement when a batch is stored.
const INSERT_CHUNK: usize = 2000;

fn read_batch(r: &Row) -> Result<RawBatch> {
    Ok(RawBatch {
        id: col(r, 0)?,
        key: col(r, 1)?,
        source: col(r, 2)?,
        canvas: col(r, 3)?,
        canvas_hash: col(r, 4)?,
        dataset: col(r, 5)?,
        created_at: col(r, 6)?,
        rows: col(r, 7)?,
        options: col(r, 8)?,
    })
}

fn get_batch(c: &mut impl GenericClient, id: &str) -> Result<Option<BatchRecord>> {
    let q = format!("SELECT {BATCH_FIELDS} FROM batches WHERE id = $1");
    let row = c
        .query_opt(&q, &[&id])
        .map_err(|e| pg_err(&format!("reading batch {id}"), e))?;
    row.map(|r| read_batch(&r)?.into_record()).transpose()
}

fn insert_batch(tx: &mut Transaction<'_>, rec: &BatchRecord, rows: &[RowSpec]) -> Result<()> {
    let what = format!("storing batch {}", rec.id);
    let err = |e| pg_err(&what, e);
    let options = rec.options.as_ref().map(to_json).transpose()?;
    let n = i64::try_from(rows.len()).unwrap_or(i64::MAX);
    tx.execute(
        "INSERT INTO batches (id, key, source, canvas, canvas_hash, dataset, created_at, rows,
                              options, open)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &[
            &rec.id,
            &rec.key,
            &rec.source,
            &rec.canvas,
            &rec.canvas_hash,
            &rec.dataset,
            &rec.created_at,
            &n,
            &options,
            &!rows.is_empty(),
        ],
    )
    .map_err(err)?;
    // Many rows per statement: a statement per row would be a round trip per row.
    let insert = tx
        .prepare(
            "INSERT INTO batch_rows (batch_id, idx, row_id, spec, status)
             SELECT $1, t.idx, t.row_id, t.spec, 'pending'
             FROM unnest($2::bigint[], $3::text[], $4::text[]) AS t(idx, row_id, spec)",
        )
        .map_err(err)?;
    for (c, chunk) in rows.chunks(INSERT_CHUNK).enumerate() {
        let first = c * INSERT_CHUNK;
        let idx: Vec<i64> = (first..first + chunk.len()).map(|i| i as i64).collect();
        let ids: Vec<&str> = chunk.iter().map(|r| r.row_id.as_str()).collect();
        let specs = chunk
            .iter()
            .map(|r| to_json(&r.spec))
            .collect::<Result<Vec<_>>>()?;
        tx.execute(&insert, &[&rec.id, &idx, &ids, &specs])
            .map_err(err)?;
    }
    Ok(())
}

/// The counts of the rows of each of `ids`, in their order.
fn counts_of(c: &mut impl GenericClient, ids: &[String]) -> Result<Vec<RowCounts>> {
    let what = "counting the rows of batches";
    let groups = c
        .query(
            "SELECT batch_id, status, passed, COUNT(*) FROM batch_rows
             WHERE batch_id = ANY($1) GROUP BY batch_id, status, passed",
            &[&ids],
        )
        .map_err(|e| pg_err(what, e))?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let mut mine = Vec::new();
        for g in &groups {
            if col::<&str>(g, 0)? == id {
                mine.push((col(g, 1)?, col(g, 2)?, col(g, 3)?));
            }
        }
        out.push(row_counts(id, mine)?);
    }
    Ok(out)
}

/// The row is not held by the worker that asked: by whom it is.
fn not_held<C: GenericClient>(tx: &mut PgRows<'_, C>, batch_id: &str, idx: u64) -> StoreError {
    let owner = tx
        .query_opt(
            "SELECT owner FROM batch_rows WHERE batch_id = $1 AND idx = $2",
            &[&batch_id, &(idx as i64)],
        )
        .ok()
        .flatten()
        .and_then(|r| col::<Option<String>>(&r, 0).ok().flatten());
    row_not_held(batch_id, idx, owner)
}

/// Tie the run `run_id` to a row `owner` holds.
pub(super) fn tie_row_run<C: GenericClient>(
    c: &mut PgRows<'_, C>,
    batch_id: &str,
    idx: u64,
    owner: &str,
    run_id: &str,
) -> Result<()> {
    let n = c
        .execute(
            "UPDATE batch_rows SET run_id = $4
             WHERE batch_id = $1 AND idx = $2 AND owner = $3 AND status = 'running'",
            &[&batch_id, &(idx as i64), &owner, &run_id],
        )
        .map_err(|e| {
            let what = format!("tying run {run_id} to row {} of batch {batch_id}", idx + 1);
            pg_err(&what, e)
        })?;
    if n == 0 {
        return Err(not_held(c, batch_id, idx));
    }
    Ok(())
}

/// Record how a row `owner` holds ended, and give up the lease of its run
/// ([`RowEnd::release_run`]); the last row done closes the batch.
pub(super) fn record_row_end<C: GenericClient>(
    c: &mut PgRows<'_, C>,
    batch_id: &str,
    idx: u64,
    owner: &str,
    end: &RowEnd,
) -> Result<()> {
    let what = format!("recording row {} of batch {batch_id}", idx + 1);
    let result = to_json(&end.result)?;
    let err = |e| pg_err(&what, e);
    // The batch first: two workers finishing its last two rows at once would each see
    // the other's row still running, and neither close it.
    c.execute(
        "SELECT 1 FROM batches WHERE id = $1 FOR UPDATE",
        &[&batch_id],
    )
    .map_err(err)?;
    let n = c
        .execute(
            "UPDATE batch_rows SET status = $4, passed = $5, result = $6, owner = NULL,
                    lease_expires = NULL
             WHERE batch_id = $1 AND idx = $2 AND owner = $3 AND status = 'running'",
            &[
                &batch_id,
                &(idx as i64),
                &owner,
                &end.status.as_str(),
                &end.passed,
                &result,
            ],
        )
        .map_err(err)?;
    if n == 0 {
        return Err(not_held(c, batch_id, idx));
    }
    if let Some(run_id) = &end.release_run {
        c.execute(
            "UPDATE runs SET lease_owner = NULL, lease_expires = NULL
             WHERE id = $1 AND lease_owner = $2",
            &[run_id, &owner],
        )
        .map_err(err)?;
    }
    // The last row done closes the batch: a worker joining later starts anew.
    c.execute(
        "UPDATE batches SET open = false WHERE id = $1 AND open AND NOT EXISTS
         (SELECT 1 FROM batch_rows WHERE batch_id = $1
          AND status IN ('pending', 'running'))",
        &[&batch_id],
    )
    .map_err(err)?;
    Ok(())
}

/// What a claim takes: rows whose worker is gone (`dead`: holders of this machine that
/// died), or pending rows.
enum Take<'a> {
    Stale { dead: &'a [String] },
    Pending,
}

/// Claim up to `max` rows of `batch_id` for `owner`, in dataset order.
fn claim(
    tx: &mut Transaction<'_>,
    what: &str,
    take: Take<'_>,
    (batch_id, owner, ttl, max): (&str, &str, f64, usize),
) -> Result<Vec<RawClaim>> {
    let max = i64::try_from(max).unwrap_or(i64::MAX);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&batch_id, &owner, &ttl, &max];
    let which = match &take {
        Take::Stale { dead } => {
            params.push(dead);
            format!(
                "status = 'running' AND owner IS DISTINCT FROM $2
                 AND (lease_expires IS NULL OR lease_expires <= {NOW} OR owner IS NULL
                      OR owner = ANY($5))"
            )
        }
        Take::Pending => "status = 'pending'".to_string(),
    };
    let q = format!(
        "UPDATE batch_rows SET status = 'running', owner = $2, lease_expires = {NOW} + $3,
                attempts = attempts + 1
         WHERE (batch_id, idx) IN (
             SELECT batch_id, idx FROM batch_rows WHERE batch_id = $1 AND ({which})
             ORDER BY idx LIMIT $4 FOR UPDATE SKIP LOCKED)
         RETURNING idx, row_id, spec, run_id, attempts"
    );
    let rows = tx.query(&q, &params).map_err(|e| pg_err(what, e))?;
    let mut out = rows
        .iter()
        .map(|r| {
            Ok(RawClaim {
                idx: col(r, 0)?,
                row_id: col(r, 1)?,
                spec: col(r, 2)?,
                run_id: col(r, 3)?,
                attempts: col(r, 4)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_by_key(|r| r.idx);
    Ok(out)
}

impl Batches for PgStore {
    fn create_batch(&self, rec: &BatchRecord, rows: &[RowSpec]) -> Result<()> {
        self.tx(&format!("storing batch {}", rec.id), |tx| {
            insert_batch(tx, rec, rows)
        })
    }

    fn join_batch(&self, rec: &BatchRecord, rows: &[RowSpec]) -> Result<BatchRecord> {
        let what = format!("joining batch {}", rec.key);
        let schema = self.url.schema();
        self.tx(&what, |tx| {
            let err = |e| pg_err(&what, e);
            // Held until commit: a worker joining meanwhile waits, then finds this batch
            // (each statement of a read-committed transaction sees what committed before).
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtext('canvas-batch ' || $1), hashtext($2))",
                &[&schema, &rec.key],
            )
            .map_err(err)?;
            let open = tx
                .query_opt(
                    "SELECT id FROM batches WHERE key = $1 AND open
                     ORDER BY created_at DESC, id DESC LIMIT 1",
                    &[&rec.key],
                )
                .map_err(err)?;
            if let Some(row) = open {
                let id: String = col(&row, 0)?;
                return get_batch(tx, &id)?.ok_or(StoreError::NotFound(id));
            }
            insert_batch(tx, rec, rows)?;
            Ok(rec.clone())
        })
    }

    fn find_batch(&self, id_or_prefix: &str) -> Result<BatchRecord> {
        let q = id_or_prefix.trim();
        let not_found = || StoreError::NotFound(id_or_prefix.to_string());
        if q.is_empty() {
            return Err(not_found());
        }
        let mut c = self.pool.get()?;
        if let Some(rec) = get_batch(&mut *c, q)? {
            return Ok(rec);
        }
        let what = format!("finding batch {q}");
        let rows = if q.eq_ignore_ascii_case("latest") {
            c.query(
                "SELECT id FROM batches ORDER BY created_at DESC, id DESC LIMIT 1",
                &[],
            )
        } else {
            // ILIKE: case-insensitive, as SQLite's LIKE is for ids (ASCII).
            c.query(
                "SELECT id FROM batches WHERE id ILIKE $1 ESCAPE '\\'
                 ORDER BY created_at DESC, id DESC LIMIT $2",
                &[&like_prefix(q), &(MAX_MATCHES as i64 + 1)],
            )
        }
        .map_err(|e| pg_err(&what, e))?;
        let ids = rows.iter().map(|r| col(r, 0)).collect::<Result<_>>()?;
        match one_match(q, ids)? {
            Some(id) => get_batch(&mut *c, &id)?.ok_or_else(not_found),
            None => Err(not_found()),
        }
    }

    fn list_batches(&self, limit: usize) -> Result<Vec<(BatchRecord, RowCounts)>> {
        // LIMIT NULL is none.
        let limit = (limit > 0).then(|| i64::try_from(limit).unwrap_or(i64::MAX));
        self.snapshot("listing batches", |tx| {
            let q = format!(
                "SELECT {BATCH_FIELDS} FROM batches ORDER BY created_at DESC, id DESC LIMIT $1"
            );
            let rows = tx
                .query(&q, &[&limit])
                .map_err(|e| pg_err("listing batches", e))?;
            let recs = rows
                .iter()
                .map(|r| read_batch(r)?.into_record())
                .collect::<Result<Vec<_>>>()?;
            let ids: Vec<String> = recs.iter().map(|r| r.id.clone()).collect();
            let counts = counts_of(tx, &ids)?;
            Ok(recs.into_iter().zip(counts).collect())
        })
    }

    fn row_counts(&self, batch_id: &str) -> Result<RowCounts> {
        let mut c = self.pool.get()?;
        let mut counts = counts_of(&mut *c, &[batch_id.to_string()])?;
        Ok(counts.pop().unwrap_or_default())
    }

    fn claim_rows(
        &self,
        batch_id: &str,
        owner: &str,
        max: usize,
        ttl: Duration,
    ) -> Result<Vec<ClaimedRow>> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let what = format!("claiming rows of batch {batch_id}");
        let ttl = ttl.as_secs_f64();
        let raws = self.tx(&what, |tx| {
            // Holders of unexpired leases that are dead processes of this machine (only
            // this process can tell): their rows are stale at once.
            let holders = tx
                .query(
                    &format!(
                        "SELECT DISTINCT owner FROM batch_rows
                         WHERE batch_id = $1 AND status = 'running' AND owner <> $2
                           AND lease_expires > {NOW}"
                    ),
                    &[&batch_id, &owner],
                )
                .map_err(|e| pg_err(&what, e))?;
            let mut dead = Vec::new();
            for h in &holders {
                let h: String = col(h, 0)?;
                if lease::holder_is_dead(&h) {
                    dead.push(h);
                }
            }
            // Rows whose worker is gone come first: they were started before the rest.
            let stale = Take::Stale { dead: &dead };
            let mut out = claim(tx, &what, stale, (batch_id, owner, ttl, max))?;
            if out.len() < max {
                let left = max - out.len();
                out.extend(claim(
                    tx,
                    &what,
                    Take::Pending,
                    (batch_id, owner, ttl, left),
                )?);
            }
            Ok(out)
        })?;
        raws.into_iter().map(|r| r.into_claimed(batch_id)).collect()
    }

    fn renew_rows(&self, batch_id: &str, owner: &str, ttl: Duration) -> Result<u64> {
        let what = format!("renewing the leases of batch {batch_id}");
        let ttl = ttl.as_secs_f64();
        self.tx(&what, |tx| {
            tx.execute(
                &format!(
                    "UPDATE batch_rows SET lease_expires = {NOW} + $3
                     WHERE batch_id = $1 AND owner = $2 AND status = 'running'"
                ),
                &[&batch_id, &owner, &ttl],
            )
            .map_err(|e| pg_err(&what, e))
        })
    }

    fn finish_row(&self, batch_id: &str, idx: u64, owner: &str, end: &RowEnd) -> Result<()> {
        let what = format!("recording row {} of batch {batch_id}", idx + 1);
        self.tx(&what, |tx| {
            record_row_end(
                &mut PgRows::new(tx, "recording a row"),
                batch_id,
                idx,
                owner,
                end,
            )
        })
    }

    fn release_rows(&self, batch_id: &str, owner: &str, row: Option<u64>) -> Result<u64> {
        let what = format!("giving back the rows of batch {batch_id}");
        let row = row.map(|r| r as i64);
        self.tx(&what, |tx| {
            tx.execute(
                "UPDATE batch_rows SET status = 'pending', owner = NULL, lease_expires = NULL
                 WHERE batch_id = $1 AND owner = $2 AND status = 'running'
                 AND ($3::bigint IS NULL OR idx = $3)",
                &[&batch_id, &owner, &row],
            )
            .map_err(|e| pg_err(&what, e))
        })
    }

    fn each_batch_row(
        &self,
        batch_id: &str,
        f: &mut dyn FnMut(BatchRow) -> Result<()>,
    ) -> Result<()> {
        let what = format!("reading the rows of batch {batch_id}");
        let mut c = self.pool.get()?;
        // Streamed: rows arrive as the server sends them, not all at once.
        let mut rows = c
            .query_raw(
                "SELECT idx, row_id, status, run_id, passed, result, attempts FROM batch_rows
                 WHERE batch_id = $1 ORDER BY idx",
                [batch_id],
            )
            .map_err(|e| pg_err(&what, e))?;
        while let Some(r) = rows.next().map_err(|e| pg_err(&what, e))? {
            let raw = RawBatchRow {
                idx: col(&r, 0)?,
                row_id: col(&r, 1)?,
                status: col(&r, 2)?,
                run_id: col(&r, 3)?,
                passed: col(&r, 4)?,
                result: col(&r, 5)?,
                attempts: col(&r, 6)?,
            };
            f(raw.into_row(batch_id)?)?;
        }
        Ok(())
    }
}
