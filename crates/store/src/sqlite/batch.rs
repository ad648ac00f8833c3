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

    fn assign_row_run(&self, batch_id: &str, idx: u64, owner: &str, run_id: &str) -> Result<()> {
        let what = format!("tying run {run_id} to row {} of batch {batch_id}", idx + 1);
        self.batch_tx(&what, |tx| {
            let n = tx
                .execute(
                    "UPDATE batch_rows SET run_id = ?4
                     WHERE batch_id = ?1 AND idx = ?2 AND owner = ?3 AND status = 'running'",
                    params![batch_id, idx as i64, owner, run_id],
                )
                .map_err(|e| sql(&what, e))?;
            if n == 0 {
                return Err(not_held(batch_id, idx, tx));
            }
            Ok(())
        })
    }

    fn finish_row(&self, batch_id: &str, idx: u64, owner: &str, end: &RowEnd) -> Result<()> {
        let what = format!("recording row {} of batch {batch_id}", idx + 1);
        let result = to_json(&end.result)?;
        self.batch_tx(&what, |tx| {
            let err = |e| sql(&what, e);
            let n = tx
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
                return Err(not_held(batch_id, idx, tx));
            }
            // The last row done closes the batch: a worker joining later starts anew.
            tx.prepare_cached(
                "UPDATE batches SET open = 0 WHERE id = ?1 AND open AND NOT EXISTS
                 (SELECT 1 FROM batch_rows WHERE batch_id = ?1
                  AND status IN ('pending', 'running'))",
            )
            .and_then(|mut st| st.execute([batch_id]))
            .map_err(err)?;
            Ok(())
        })
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

    fn batch_rows(&self, batch_id: &str) -> Result<Vec<BatchRow>> {
        let what = format!("reading the rows of batch {batch_id}");
        let g = self.lock();
        let mut st = g
            .conn
            .prepare(
                "SELECT idx, row_id, status, run_id, passed, result, attempts FROM batch_rows
                 WHERE batch_id = ?1 ORDER BY idx",
            )
            .map_err(|e| sql(&what, e))?;
        let raws = st
            .query_map([batch_id], |r| {
                Ok(RawBatchRow {
                    idx: r.get(0)?,
                    row_id: r.get(1)?,
                    status: r.get(2)?,
                    run_id: r.get(3)?,
                    passed: r.get(4)?,
                    result: r.get(5)?,
                    attempts: r.get(6)?,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| sql(&what, e))?;
        raws.into_iter().map(|raw| raw.into_row(batch_id)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RowStatus, lease};
    use serde_json::json;

    fn batch(key: &str, n: usize) -> (BatchRecord, Vec<RowSpec>) {
        let rec = BatchRecord {
            id: ulid::Ulid::new().to_string(),
            key: key.into(),
            source: "/c.json".into(),
            canvas: "{}".into(),
            canvas_hash: crate::canvas_hash("{}"),
            dataset: "/d.jsonl".into(),
            created_at: unix_now(),
            rows: n as u64,
            options: Some(json!({"mock_llm": "/m.yaml"})),
        };
        let rows = (0..n)
            .map(|i| RowSpec {
                row_id: format!("r{i}"),
                spec: json!({"query": format!("q{i}")}),
            })
            .collect();
        (rec, rows)
    }

    fn end(status: RowStatus, passed: Option<bool>) -> RowEnd {
        RowEnd {
            status,
            passed,
            result: json!({"status": status.as_str()}),
        }
    }

    const TTL: Duration = Duration::from_secs(60);

    #[test]
    fn rows_are_claimed_once_in_order_and_counted() {
        let s = SqliteStore::open_in_memory().unwrap();
        let (rec, rows) = batch("k", 5);
        s.create_batch(&rec, &rows).unwrap();
        assert_eq!(s.find_batch("latest").unwrap(), rec);
        assert_eq!(
            s.find_batch(&rec.id[..8].to_lowercase()).unwrap().id,
            rec.id
        );
        let a = s.claim_rows(&rec.id, "a", 2, TTL).unwrap();
        let b = s.claim_rows(&rec.id, "b", 10, TTL).unwrap();
        assert_eq!(a.iter().map(|r| r.idx).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(b.iter().map(|r| r.idx).collect::<Vec<_>>(), [2, 3, 4]);
        assert_eq!(a[1].spec, json!({"query": "q1"}));
        assert_eq!(a[1].row_id, "r1");
        assert!(s.claim_rows(&rec.id, "c", 10, TTL).unwrap().is_empty());
        s.finish_row(&rec.id, 0, "a", &end(RowStatus::Succeeded, Some(true)))
            .unwrap();
        s.finish_row(&rec.id, 1, "a", &end(RowStatus::Succeeded, Some(false)))
            .unwrap();
        s.finish_row(&rec.id, 2, "b", &end(RowStatus::Failed, None))
            .unwrap();
        let n = s.row_counts(&rec.id).unwrap();
        assert_eq!(
            n,
            RowCounts {
                pending: 0,
                running: 2,
                succeeded: 2,
                failed: 1,
                waiting: 0,
                checks_failed: 1
            }
        );
        let listed = s.list_batches(0).unwrap();
        assert_eq!(listed, vec![(rec.clone(), n)]);
        let rows = s.batch_rows(&rec.id).unwrap();
        assert_eq!(rows[1].passed, Some(false));
        assert_eq!(rows[2].result, Some(json!({"status": "failed"})));
        assert_eq!(rows[3].status, RowStatus::Running);
    }

    #[test]
    fn only_the_holder_ties_a_run_or_finishes_a_row() {
        let s = SqliteStore::open_in_memory().unwrap();
        let (rec, rows) = batch("k", 1);
        s.create_batch(&rec, &rows).unwrap();
        s.claim_rows(&rec.id, "a", 1, TTL).unwrap();
        let e = s.assign_row_run(&rec.id, 0, "b", "RUN").unwrap_err();
        assert!(
            matches!(e, StoreError::Leased { ref owner, .. } if owner == "a"),
            "{e}"
        );
        s.assign_row_run(&rec.id, 0, "a", "RUN").unwrap();
        let e = s
            .finish_row(&rec.id, 0, "b", &end(RowStatus::Succeeded, None))
            .unwrap_err();
        assert!(matches!(e, StoreError::Leased { .. }), "{e}");
        assert_eq!(
            s.batch_rows(&rec.id).unwrap()[0].run_id.as_deref(),
            Some("RUN")
        );
    }

    #[test]
    fn an_expired_or_released_row_is_claimed_again_with_its_run() {
        let s = SqliteStore::open_in_memory().unwrap();
        let (rec, rows) = batch("k", 2);
        s.create_batch(&rec, &rows).unwrap();
        s.claim_rows(&rec.id, "a", 1, Duration::ZERO).unwrap();
        s.assign_row_run(&rec.id, 0, "a", "RUN0").unwrap();
        s.claim_rows(&rec.id, "a", 1, TTL).unwrap();
        assert_eq!(s.renew_rows(&rec.id, "a", Duration::ZERO).unwrap(), 2);
        std::thread::sleep(Duration::from_millis(5));
        let b = s.claim_rows(&rec.id, "b", 5, TTL).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].run_id.as_deref(), Some("RUN0"));
        assert_eq!(b[0].attempts, 2);
        // The first worker lost them.
        let e = s
            .finish_row(&rec.id, 0, "a", &end(RowStatus::Succeeded, None))
            .unwrap_err();
        assert!(matches!(e, StoreError::Leased { .. }), "{e}");
        assert_eq!(s.release_rows(&rec.id, "b", Some(1)).unwrap(), 1);
        assert_eq!(s.release_rows(&rec.id, "b", None).unwrap(), 1);
        let c = s.claim_rows(&rec.id, "c", 5, TTL).unwrap();
        assert_eq!(c[0].run_id.as_deref(), Some("RUN0"));
        assert_eq!(c[0].attempts, 3);
    }

    #[test]
    fn a_dead_local_worker_loses_its_rows_at_once() {
        let s = SqliteStore::open_in_memory().unwrap();
        let (rec, rows) = batch("k", 1);
        s.create_batch(&rec, &rows).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let me = lease::holder();
        let host = me.rsplitn(3, ':').nth(2).unwrap().to_string();
        let dead = format!("{host}:{pid}:1");
        s.claim_rows(&rec.id, &dead, 1, TTL).unwrap();
        assert_eq!(s.claim_rows(&rec.id, "live", 1, TTL).unwrap().len(), 1);
    }

    #[test]
    fn workers_join_the_open_batch_of_their_key_until_it_is_done() {
        let s = SqliteStore::open_in_memory().unwrap();
        let (first, rows) = batch("same", 1);
        assert_eq!(s.join_batch(&first, &rows).unwrap().id, first.id);
        let (second, rows2) = batch("same", 1);
        assert_eq!(s.join_batch(&second, &rows2).unwrap().id, first.id);
        s.claim_rows(&first.id, "a", 1, TTL).unwrap();
        s.finish_row(&first.id, 0, "a", &end(RowStatus::Succeeded, None))
            .unwrap();
        // Done: a later worker starts a new batch.
        let (third, rows3) = batch("same", 1);
        assert_eq!(s.join_batch(&third, &rows3).unwrap().id, third.id);
        assert_eq!(s.list_batches(0).unwrap().len(), 2);
    }
}
