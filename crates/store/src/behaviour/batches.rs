//! Batches and their rows, the same on every backend ([`Batches`]): claims, leases,
//! joining, and workers sharing one batch from several threads (as processes would).

use std::collections::BTreeSet;
use std::sync::Barrier;
use std::time::Duration;

use serde_json::json;

use crate::testkit::{Fixture, on_both};
use crate::{
    BatchRecord, NewLease, NewRun, RowCounts, RowEnd, RowFinish, RowSpec, RowStatus, RunRecord,
    RunStatus, RunWrite, StoreError, TurnKind, lease, unix_now,
};

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
        release_run: None,
    }
}

/// A new run record with id `id` (not stored).
fn run_rec(id: &str) -> RunRecord {
    let mut rec = RunRecord::new("flow.json", "{\"components\": {}}");
    rec.id = id.to_string();
    rec
}

/// A write creating the run `run_id` of row `idx` for `owner`, with its first turn.
fn create_row_run(batch_id: &str, idx: u64, owner: &str, run_id: &str) -> RunWrite {
    RunWrite {
        create: Some(Box::new(NewRun {
            record: run_rec(run_id),
            kind: TurnKind::Start,
            query: "q".into(),
            inputs: json!({}),
            lease: Some(NewLease {
                owner: owner.into(),
                ttl: TTL,
                row: Some((batch_id.into(), idx)),
            }),
        })),
        ..RunWrite::new(run_id, 1)
    }
}

/// A write of the run `run_id` recording its row's end (giving up its lease).
fn finish_with_run(batch_id: &str, idx: u64, owner: &str, run_id: &str) -> RunWrite {
    let end = RowEnd {
        release_run: Some(run_id.into()),
        ..end(RowStatus::Succeeded, None)
    };
    RunWrite {
        row_end: Some(Box::new(RowFinish {
            batch_id: batch_id.into(),
            idx,
            owner: owner.into(),
            end,
        })),
        ..RunWrite::new(run_id, 1)
    }
}

const TTL: Duration = Duration::from_secs(60);

fn rows_are_claimed_once_in_order_and_counted(f: &Fixture) {
    let s = f.store();
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
    // Row by row, in order; the first error stops it.
    let mut seen = Vec::new();
    let e = s
        .each_batch_row(&rec.id, &mut |row| {
            seen.push(row.idx);
            match row.idx {
                2 => Err(StoreError::NotFound("enough".into())),
                _ => Ok(()),
            }
        })
        .unwrap_err();
    assert!(
        matches!(e, StoreError::NotFound(ref w) if w == "enough"),
        "{e}"
    );
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(rows[2].result, Some(json!({"status": "failed"})));
    assert_eq!(rows[3].status, RowStatus::Running);
}

fn only_the_holder_ties_a_run_or_finishes_a_row(f: &Fixture) {
    let s = f.store();
    let (rec, rows) = batch("k", 1);
    s.create_batch(&rec, &rows).unwrap();
    s.claim_rows(&rec.id, "a", 1, TTL).unwrap();
    let e = s
        .write_one(create_row_run(&rec.id, 0, "b", "RUN"))
        .unwrap_err();
    assert!(
        matches!(e, StoreError::Leased { ref owner, .. } if owner == "a"),
        "{e}"
    );
    // Refused as a whole: no run was made.
    assert!(matches!(s.find_run("RUN"), Err(StoreError::NotFound(_))));
    assert_eq!(s.batch_rows(&rec.id).unwrap()[0].run_id, None);
    s.write_one(create_row_run(&rec.id, 0, "a", "RUN")).unwrap();
    // The run, its first turn and its lease, tied to the row.
    let run = s.find_run("RUN").unwrap();
    assert_eq!((run.status, run.turns), (RunStatus::Running, 1));
    assert_eq!(s.last_turn("RUN").unwrap().unwrap().query, "q");
    assert_eq!(s.lease_owner("RUN").unwrap().as_deref(), Some("a"));
    let e = s
        .finish_row(&rec.id, 0, "b", &end(RowStatus::Succeeded, None))
        .unwrap_err();
    assert!(matches!(e, StoreError::Leased { .. }), "{e}");
    assert_eq!(
        s.batch_rows(&rec.id).unwrap()[0].run_id.as_deref(),
        Some("RUN")
    );
    assert_eq!(s.lease_owner("RUN").unwrap().as_deref(), Some("a"));
}

fn finishing_a_row_gives_up_its_runs_lease(f: &Fixture) {
    let s = f.store();
    let (rec, rows) = batch("k", 3);
    s.create_batch(&rec, &rows).unwrap();
    s.claim_rows(&rec.id, "a", 3, TTL).unwrap();
    for (i, run) in ["RUN0", "RUN1", "RUN2"].into_iter().enumerate() {
        s.write_one(create_row_run(&rec.id, i as u64, "a", run))
            .unwrap();
    }
    let done = RowEnd {
        release_run: Some("RUN0".into()),
        ..end(RowStatus::Succeeded, None)
    };
    s.finish_row(&rec.id, 0, "a", &done).unwrap();
    assert_eq!(s.lease_owner("RUN0").unwrap(), None);
    assert_eq!(
        s.batch_rows(&rec.id).unwrap()[0].status,
        RowStatus::Succeeded
    );
    // Another holder's lease is not ours to give up.
    s.release_lease("RUN1", "a").unwrap();
    assert!(s.acquire_lease("RUN1", "c", TTL).unwrap());
    s.write_one(finish_with_run(&rec.id, 1, "a", "RUN1"))
        .unwrap();
    assert_eq!(s.lease_owner("RUN1").unwrap().as_deref(), Some("c"));
    assert_eq!(
        s.batch_rows(&rec.id).unwrap()[1].status,
        RowStatus::Succeeded
    );
    // A row refused leaves the lease as it was.
    let e = s
        .write_one(finish_with_run(&rec.id, 2, "b", "RUN2"))
        .unwrap_err();
    assert!(matches!(e, StoreError::Leased { .. }), "{e}");
    assert_eq!(s.lease_owner("RUN2").unwrap().as_deref(), Some("a"));
    assert_eq!(s.batch_rows(&rec.id).unwrap()[2].status, RowStatus::Running);
}

fn rows_made_and_finished_in_one_group_stand_alone(f: &Fixture) {
    let s = f.store();
    let (rec, rows) = batch("k", 3);
    s.create_batch(&rec, &rows).unwrap();
    s.claim_rows(&rec.id, "a", 2, TTL).unwrap();
    s.claim_rows(&rec.id, "b", 1, TTL).unwrap();
    s.write_one(create_row_run(&rec.id, 0, "a", "RUN0"))
        .unwrap();
    // One group: row 0 ends, row 1's run is made, row 2 is not "a"'s to make a run for.
    let results = s
        .write(&[
            finish_with_run(&rec.id, 0, "a", "RUN0"),
            create_row_run(&rec.id, 1, "a", "RUN1"),
            create_row_run(&rec.id, 2, "a", "RUN2"),
        ])
        .unwrap();
    assert!(results[0].is_ok() && results[1].is_ok(), "{results:?}");
    assert!(
        matches!(&results[2], Err(StoreError::Leased { owner, .. }) if owner == "b"),
        "{results:?}"
    );
    let stored = s.batch_rows(&rec.id).unwrap();
    assert_eq!(
        stored
            .iter()
            .map(|r| (r.status, r.run_id.as_deref()))
            .collect::<Vec<_>>(),
        [
            (RowStatus::Succeeded, Some("RUN0")),
            (RowStatus::Running, Some("RUN1")),
            (RowStatus::Running, None),
        ]
    );
    assert_eq!(s.lease_owner("RUN0").unwrap(), None);
    assert_eq!(s.lease_owner("RUN1").unwrap().as_deref(), Some("a"));
    assert!(matches!(s.find_run("RUN2"), Err(StoreError::NotFound(_))));
    // The statements the refused write ran, in a savepoint rolled back, serve the next
    // group (on PostgreSQL they stay prepared on the connection).
    s.write(&[create_row_run(&rec.id, 2, "b", "RUN2")])
        .unwrap()
        .pop()
        .unwrap()
        .unwrap();
    assert_eq!(s.lease_owner("RUN2").unwrap().as_deref(), Some("b"));
    assert_eq!(
        s.batch_rows(&rec.id).unwrap()[2].run_id.as_deref(),
        Some("RUN2")
    );
}

fn an_expired_or_released_row_is_claimed_again_with_its_run(f: &Fixture) {
    let s = f.store();
    let (rec, rows) = batch("k", 2);
    s.create_batch(&rec, &rows).unwrap();
    s.claim_rows(&rec.id, "a", 1, Duration::ZERO).unwrap();
    s.write_one(create_row_run(&rec.id, 0, "a", "RUN0"))
        .unwrap();
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

fn a_dead_local_worker_loses_its_rows_at_once(f: &Fixture) {
    let s = f.store();
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

fn workers_join_the_open_batch_of_their_key_until_it_is_done(f: &Fixture) {
    let s = f.store();
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

fn find_batch_reports_ambiguous_and_not_found(f: &Fixture) {
    let s = f.store();
    assert!(matches!(
        s.find_batch("latest"),
        Err(StoreError::NotFound(_))
    ));
    let (mut a, rows) = batch("a", 1);
    a.id = "01J0AAAAAAAAAAAAAAAAAAAAAA".into();
    let (mut b, _) = batch("b", 1);
    b.id = "01J0ABBBBBBBBBBBBBBBBBBBBB".into();
    b.created_at = a.created_at + 1.0;
    s.create_batch(&a, &rows).unwrap();
    s.create_batch(&b, &rows).unwrap();
    match s.find_batch("01j0a") {
        Err(StoreError::Ambiguous { matches, .. }) => {
            assert_eq!(matches, [b.id.clone(), a.id.clone()])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.find_batch("01J0AB").unwrap(), b);
    assert_eq!(s.find_batch("latest").unwrap(), b);
    // LIKE wildcards are literal.
    assert!(matches!(
        s.find_batch("01J0_"),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(s.find_batch("%"), Err(StoreError::NotFound(_))));
    assert_eq!(s.list_batches(1).unwrap().len(), 1);
    assert_eq!(s.list_batches(0).unwrap().len(), 2);
}

fn workers_claiming_at_once_never_get_the_same_row(f: &Fixture) {
    const ROWS: usize = 300;
    const WORKERS: usize = 6;
    let (rec, rows) = batch("shared", ROWS);
    f.store().create_batch(&rec, &rows).unwrap();
    let start = Barrier::new(WORKERS);
    // Every worker holds its first claim before any goes on: on a loaded machine one
    // worker could otherwise take every row before the others start, and the test
    // would not test claims made at once.
    let first = Barrier::new(WORKERS);
    let claimed: Vec<Vec<u64>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let (start, first, rec) = (&start, &first, &rec);
                s.spawn(move || {
                    let store = f.reopen().unwrap();
                    let owner = format!("elsewhere:{w}:1");
                    let mut mine = Vec::new();
                    start.wait();
                    // Claims of 1 to 4 rows, finished in the order claimed.
                    for round in 0.. {
                        let got = store
                            .claim_rows(&rec.id, &owner, 1 + (w + round) % 4, TTL)
                            .unwrap();
                        if round == 0 {
                            first.wait();
                        }
                        if got.is_empty() {
                            break;
                        }
                        for row in got {
                            assert_eq!(row.attempts, 1, "row {} claimed again", row.idx);
                            let done = end(RowStatus::Succeeded, None);
                            store.finish_row(&rec.id, row.idx, &owner, &done).unwrap();
                            mine.push(row.idx);
                        }
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut all = BTreeSet::new();
    for idx in claimed.iter().flatten() {
        assert!(all.insert(*idx), "row {idx} was claimed twice");
    }
    assert_eq!(all.len(), ROWS);
    assert!(
        claimed.iter().filter(|c| !c.is_empty()).count() >= 2,
        "{:?}",
        claimed.iter().map(Vec::len).collect::<Vec<_>>()
    );
    let n = f.store().row_counts(&rec.id).unwrap();
    assert_eq!((n.succeeded, n.total()), (ROWS as u64, ROWS as u64));
    // Done: the next worker of the key starts a new batch.
    let (next, rows) = batch("shared", 1);
    assert_eq!(f.store().join_batch(&next, &rows).unwrap().id, next.id);
}

fn the_last_rows_finished_at_once_close_the_batch(f: &Fixture) {
    const WORKERS: usize = 4;
    for round in 0..5 {
        let key = format!("last-{round}");
        let (rec, rows) = batch(&key, WORKERS);
        f.store().create_batch(&rec, &rows).unwrap();
        let start = Barrier::new(WORKERS);
        std::thread::scope(|s| {
            for w in 0..WORKERS {
                let (start, rec) = (&start, &rec);
                s.spawn(move || {
                    let store = f.reopen().unwrap();
                    let owner = format!("elsewhere:{w}:1");
                    let row = store.claim_rows(&rec.id, &owner, 1, TTL).unwrap();
                    start.wait();
                    let done = end(RowStatus::Succeeded, None);
                    store
                        .finish_row(&rec.id, row[0].idx, &owner, &done)
                        .unwrap();
                });
            }
        });
        let (next, rows) = batch(&key, 1);
        assert_eq!(
            f.store().join_batch(&next, &rows).unwrap().id,
            next.id,
            "round {round}: the finished batch was left open"
        );
    }
}

fn workers_joining_at_once_join_one_batch(f: &Fixture) {
    const WORKERS: usize = 6;
    let start = Barrier::new(WORKERS);
    let joined: BTreeSet<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let start = &start;
                s.spawn(move || {
                    let store = f.reopen().unwrap();
                    let (rec, rows) = batch("together", 50);
                    start.wait();
                    store.join_batch(&rec, &rows).unwrap().id
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(joined.len(), 1, "{joined:?}");
    let listed = f.store().list_batches(0).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].1.pending, 50);
}

on_both!(
    rows_are_claimed_once_in_order_and_counted,
    only_the_holder_ties_a_run_or_finishes_a_row,
    finishing_a_row_gives_up_its_runs_lease,
    rows_made_and_finished_in_one_group_stand_alone,
    an_expired_or_released_row_is_claimed_again_with_its_run,
    a_dead_local_worker_loses_its_rows_at_once,
    workers_join_the_open_batch_of_their_key_until_it_is_done,
    find_batch_reports_ambiguous_and_not_found,
    workers_claiming_at_once_never_get_the_same_row,
    the_last_rows_finished_at_once_close_the_batch,
    workers_joining_at_once_join_one_batch,
);
