//! [`Batches`] on the SQLite store: `batches` and `batch_rows` (schema 7). Claims are
//! `BEGIN IMMEDIATE` transactions, so two processes on one file never claim a row twice.
//! What a stored row means is shared with the other backends (`record.rs`).

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use super::SqliteStore;
use super::schema::sql;
use crate::batch::{BatchRecord, BatchRow, Batches, ClaimedRow, RowCounts, RowEnd, RowSpec};
use crate::record::{
    MAX_MATCHES, RawBatch, RawBatchRow, RawClaim, like_prefix, one_match, row_counts, row_is_stale,
    row_not_held, to_json,
};
use crate::{Result, StoreError, unix_now};

const BATCH_FIELDS: &str =
    "id, key, source, canvas, canvas_hash, dataset, created_at, rows, options";

fn read_batch(r: &Row<'_>) -> rusqlite::Result<RawBatch> {
    Ok(RawBatch {
        id: r.get(0)?,
        key: r.get(1)?,
        source: r.get(2)?,
        canvas: r.get(3)?,
        canvas_hash: r.get(4)?,
        dataset: r.get(5)?,
        created_at: r.get(6)?,
        rows: r.get(7)?,
        options: r.get(8)?,
    })
}

/// The row is not held by the worker that asked: by whom it is.
fn not_held(batch_id: &str, idx: u64, c: &Connection) -> StoreError {
    let owner: Option<String> = c
        .query_row(
            "SELECT owner FROM batch_rows WHERE batch_id = ?1 AND idx = ?2",
            params![batch_id, idx as i64],
            |r| r.get(0),
        )
        .optional()
        .ok()
        .flatten()
        .flatten();
    row_not_held(batch_id, idx, owner)
}

/// Tie the run `run_id` to a row `owner` holds.
pub(super) fn tie_row_run(
    c: &Connection,
    batch_id: &str,
    idx: u64,
    owner: &str,
    run_id: &str,
) -> Result<()> {
    let what = || format!("tying run {run_id} to row {} of batch {batch_id}", idx + 1);
    let n = c
        .prepare_cached(
            "UPDATE batch_rows SET run_id = ?4
             WHERE batch_id = ?1 AND idx = ?2 AND owner = ?3 AND status = 'running'",
        )
        .and_then(|mut st| st.execute(params![batch_id, idx as i64, owner, run_id]))
        .map_err(|e| sql(&what(), e))?;
    if n == 0 {
        return Err(not_held(batch_id, idx, c));
    }
    Ok(())
}

/// Record how a row `owner` holds ended, and give up the lease of its run
/// ([`RowEnd::release_run`]); the last row done closes the batch.
pub(super) fn record_row_end(
    c: &Connection,
    batch_id: &str,
    idx: u64,
    owner: &str,
    end: &RowEnd,
) -> Result<()> {
    let what = || format!("recording row {} of batch {batch_id}", idx + 1);
    let err = |e| sql(&what(), e);
    let result = to_json(&end.result)?;
    let n = c
        .prepare_cached(
            "UPDATE batch_rows SET status = ?4, passed = ?5, result = ?6, owner = NULL,
                    lease_expires = NULL
             WHERE batch_id = ?1 AND idx = ?2 AND owner = ?3 AND status = 'running'",
        )
        .and_then(|mut st| {
            st.execute(params![
                batch_id,
                idx as i64,
                owner,
                end.status.as_str(),
                end.passed,
                result
            ])
        })
        .map_err(err)?;
    if n == 0 {
        return Err(not_held(batch_id, idx, c));
    }
    if let Some(run_id) = &end.release_run {
        c.prepare_cached(
            "UPDATE runs SET lease_owner = NULL, lease_expires = NULL
             WHERE id = ?1 AND lease_owner = ?2",
        )
        .and_then(|mut st| st.execute(params![run_id, owner]))
        .map_err(err)?;
    }
    // The last row done closes the batch: a worker joining later starts anew.
    c.prepare_cached(
        "UPDATE batches SET open = 0 WHERE id = ?1 AND open AND NOT EXISTS
         (SELECT 1 FROM batch_rows WHERE batch_id = ?1
          AND status IN ('pending', 'running'))",
    )
    .and_then(|mut st| st.execute([batch_id]))
    .map_err(err)?;
    Ok(())
}

impl SqliteStore {
    /// Run `f` in one `BEGIN IMMEDIATE` transaction.
    fn batch_tx<T>(&self, what: &str, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut g = self.lock();
        let tx = g
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sql(what, e))?;
        let out = f(&tx)?;
        tx.commit().map_err(|e| sql(what, e))?;
        Ok(out)
    }
}

fn insert_batch(tx: &Transaction<'_>, rec: &BatchRecord, rows: &[RowSpec]) -> Result<()> {
    let what = format!("storing batch {}", rec.id);
    let options = rec.options.as_ref().map(to_json).transpose()?;
    tx.execute(
        "INSERT INTO batches (id, key, source, canvas, canvas_hash, dataset, created_at, rows,
                              options, open)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            rec.id,
            rec.key,
            rec.source,
            rec.canvas,
            rec.canvas_hash,
            rec.dataset,
            rec.created_at,
            rows.len() as i64,
            options,
            !rows.is_empty(),
        ],
    )
    .map_err(|e| sql(&what, e))?;
    let mut st = tx
        .prepare(
            "INSERT INTO batch_rows (batch_id, idx, row_id, spec, status)
             VALUES (?1, ?2, ?3, ?4, 'pending')",
        )
        .map_err(|e| sql(&what, e))?;
    for (i, row) in rows.iter().enumerate() {
        st.execute(params![rec.id, i as i64, row.row_id, to_json(&row.spec)?])
            .map_err(|e| sql(&what, e))?;
    }
    Ok(())
}

fn counts(c: &Connection, batch_id: &str) -> Result<RowCounts> {
    let what = format!("counting the rows of batch {batch_id}");
    let mut st = c
        .prepare_cached(
            "SELECT status, passed, COUNT(*) FROM batch_rows WHERE batch_id = ?1
             GROUP BY status, passed",
        )
        .map_err(|e| sql(&what, e))?;
    let groups = st
        .query_map([batch_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| sql(&what, e))?;
    row_counts(batch_id, groups)
}

fn get_batch(c: &Connection, id: &str) -> Result<Option<BatchRecord>> {
    let q = format!("SELECT {BATCH_FIELDS} FROM batches WHERE id = ?1");
    c.query_row(&q, [id], read_batch)
        .optional()
        .map_err(|e| sql(&format!("reading batch {id}"), e))?
        .map(RawBatch::into_record)
        .transpose()
}

impl Batches for SqliteStore {
    fn create_batch(&self, rec: &BatchRecord, rows: &[RowSpec]) -> Result<()> {
        self.batch_tx(&format!("storing batch {}", rec.id), |tx| {
            insert_batch(tx, rec, rows)
        })
    }

    fn join_batch(&self, rec: &BatchRecord, rows: &[RowSpec]) -> Result<BatchRecord> {
        self.batch_tx(&format!("joining batch {}", rec.key), |tx| {
            let open: Option<String> = tx
                .query_row(
                    "SELECT id FROM batches WHERE key = ?1 AND open
                     ORDER BY created_at DESC, id DESC LIMIT 1",
                    [&rec.key],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| sql("looking for an open batch", e))?;
            if let Some(id) = open {
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
        let g = self.lock();
        if let Some(rec) = get_batch(&g.conn, q)? {
            return Ok(rec);
        }
        let what = format!("finding batch {q}");
        let ids: Vec<String> = if q.eq_ignore_ascii_case("latest") {
            let mut st = g
                .conn
                .prepare("SELECT id FROM batches ORDER BY created_at DESC, id DESC LIMIT 1")
                .map_err(|e| sql(&what, e))?;
            st.query_map([], |r| r.get(0))
                .and_then(|rows| rows.collect())
                .map_err(|e| sql(&what, e))?
        } else {
            let mut st = g
                .conn
                .prepare(
                    "SELECT id FROM batches WHERE id LIKE ?1 ESCAPE '\\'
                     ORDER BY created_at DESC, id DESC LIMIT ?2",
                )
                .map_err(|e| sql(&what, e))?;
            st.query_map(params![like_prefix(q), MAX_MATCHES as i64 + 1], |r| {
                r.get(0)
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| sql(&what, e))?
        };
        match one_match(q, ids)? {
            Some(id) => get_batch(&g.conn, &id)?.ok_or_else(not_found),
            None => Err(not_found()),
        }
    }

    fn list_batches(&self, limit: usize) -> Result<Vec<(BatchRecord, RowCounts)>> {
        let limit = if limit == 0 {
            -1
        } else {
            i64::try_from(limit).unwrap_or(i64::MAX)
        };
        let g = self.lock();
        let q = format!(
            "SELECT {BATCH_FIELDS} FROM batches ORDER BY created_at DESC, id DESC LIMIT ?1"
        );
        let raws = g
            .conn
            .prepare(&q)
            .and_then(|mut st| {
                st.query_map([limit], read_batch)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| sql("listing batches", e))?;
        raws.into_iter()
            .map(|raw| {
                let rec = raw.into_record()?;
                let n = counts(&g.conn, &rec.id)?;
                Ok((rec, n))
            })
            .collect()
    }

    fn row_counts(&self, batch_id: &str) -> Result<RowCounts> {
        counts(&self.lock().conn, batch_id)
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
        self.batch_tx(&what, |tx| {
            let now = unix_now();
            let err = |e| sql(&what, e);
            // Rows whose worker is gone come first: they were started before the rest.
            let mut stale: Vec<i64> = Vec::new();
            {
                let mut st = tx
                    .prepare_cached(
                        "SELECT idx, owner, lease_expires FROM batch_rows
                         WHERE batch_id = ?1 AND status = 'running' AND owner IS NOT ?2
                         ORDER BY idx",
                    )
                    .map_err(err)?;
                let rows = st
                    .query_map(params![batch_id, owner], |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, Option<String>>(1)?,
                            r.get::<_, Option<f64>>(2)?,
                        ))
                    })
                    .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                    .map_err(err)?;
                for (idx, holder, expires) in rows {
                    if row_is_stale(holder.as_deref(), expires, now) {
                        stale.push(idx);
                    }
                    if stale.len() == max {
                        break;
                    }
                }
            }
            let mut picked = stale;
            if picked.len() < max {
                let mut st = tx
                    .prepare_cached(
                        "SELECT idx FROM batch_rows WHERE batch_id = ?1 AND status = 'pending'
                         ORDER BY idx LIMIT ?2",
                    )
                    .map_err(err)?;
                let more = st
                    .query_map(params![batch_id, (max - picked.len()) as i64], |r| r.get(0))
                    .and_then(|rows| rows.collect::<rusqlite::Result<Vec<i64>>>())
                    .map_err(err)?;
                picked.extend(more);
            }
            let mut claim = tx
                .prepare_cached(
                    "UPDATE batch_rows SET status = 'running', owner = ?3, lease_expires = ?4,
                            attempts = attempts + 1
                     WHERE batch_id = ?1 AND idx = ?2
                     RETURNING row_id, spec, run_id, attempts",
                )
                .map_err(err)?;
            let mut out = Vec::with_capacity(picked.len());
            for idx in picked {
                let raw = claim
                    .query_row(
                        params![batch_id, idx, owner, now + ttl.as_secs_f64()],
                        |r| {
                            Ok(RawClaim {
                                idx,
                                row_id: r.get(0)?,
                                spec: r.get(1)?,
                                run_id: r.get(2)?,
                                attempts: r.get(3)?,
                            })
                        },
                    )
                    .map_err(err)?;
                out.push(raw.into_claimed(batch_id)?);
            }
            Ok(out)
        })
    }

    fn renew_rows(&self, batch_id: &str, owner: &str, ttl: Duration) -> Result<u64> {
        let what = format!("renewing the leases of batch {batch_id}");
        self.batch_tx(&what, |tx| {
            let n = tx
                .execute(
                    "UPDATE batch_rows SET lease_expires = ?3
                     WHERE batch_id = ?1 AND owner = ?2 AND status = 'running'",
                    params![batch_id, owner, unix_now() + ttl.as_secs_f64()],
                )
                .map_err(|e| sql(&what, e))?;
            Ok(n as u64)
        })
    }

    fn finish_row(&self, batch_id: &str, idx: u64, owner: &str, end: &RowEnd) -> Result<()> {
        let what = format!("recording row {} of batch {batch_id}", idx + 1);
        self.batch_tx(&what, |tx| record_row_end(tx, batch_id, idx, owner, end))
    }

    fn release_rows(&self, batch_id: &str, owner: &str, row: Option<u64>) -> Result<u64> {
        let what = format!("giving back the rows of batch {batch_id}");
        self.batch_tx(&what, |tx| {
            let n = tx
                .execute(
                    "UPDATE batch_rows SET status = 'pending', owner = NULL, lease_expires = NULL
                     WHERE batch_id = ?1 AND owner = ?2 AND status = 'running'
                     AND (?3 IS NULL OR idx = ?3)",
                    params![batch_id, owner, row.map(|r| r as i64)],
                )
                .map_err(|e| sql(&what, e))?;
            Ok(n as u64)
        })
    }

    fn each_batch_row(
        &self,
        batch_id: &str,
        f: &mut dyn FnMut(BatchRow) -> Result<()>,
    ) -> Result<()> {
        let what = format!("reading the rows of batch {batch_id}");
        let g = self.lock();
        let mut st = g
            .conn
            .prepare(
                "SELECT idx, row_id, status, run_id, passed, result, attempts FROM batch_rows
                 WHERE batch_id = ?1 ORDER BY idx",
            )
            .map_err(|e| sql(&what, e))?;
        let mut rows = st.query([batch_id]).map_err(|e| sql(&what, e))?;
        while let Some(r) = rows.next().map_err(|e| sql(&what, e))? {
            let raw = RawBatchRow {
                idx: r.get(0).map_err(|e| sql(&what, e))?,
                row_id: r.get(1).map_err(|e| sql(&what, e))?,
                status: r.get(2).map_err(|e| sql(&what, e))?,
                run_id: r.get(3).map_err(|e| sql(&what, e))?,
                passed: r.get(4).map_err(|e| sql(&what, e))?,
                result: r.get(5).map_err(|e| sql(&what, e))?,
                attempts: r.get(6).map_err(|e| sql(&what, e))?,
            };
            f(raw.into_row(batch_id)?)?;
        }
        Ok(())
    }
}
