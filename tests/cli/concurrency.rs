//! Many processes on one store: 8 workers started together, each running
//! `canvas run canvases/hello.json` 25 times in a row on the same SQLite file. Every run
//! must succeed without "database is locked", and the store must list the 200 runs,
//! all succeeded, with distinct ids.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use serde_json::Value;

use crate::util::{TIMEOUT, canvas, canvases, events, runs};

const WORKERS: usize = 8;
const RUNS_EACH: usize = 25;

/// One finished `canvas run`.
struct Done {
    worker: usize,
    n: usize,
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

/// `canvas run hello.json -q hi` on `store`, `RUNS_EACH` times, after every worker is
/// ready.
fn worker(worker: usize, store: &Path, start: &Barrier) -> Vec<Done> {
    let hello = canvases().join("hello.json");
    start.wait();
    (0..RUNS_EACH)
        .map(|n| {
            let out = canvas()
                .args(["run", "-q", "hi", "--format", "jsonl", "--store"])
                .arg(store)
                .arg(&hello)
                .timeout(TIMEOUT)
                .output()
                .unwrap_or_else(|e| panic!("worker {worker} run {n}: {e}"));
            Done {
                worker,
                n,
                code: out.status.code(),
                stdout: out.stdout,
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .collect()
}

#[test]
fn eight_processes_share_one_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(dir.path().join("shared.db"));
    let start = Arc::new(Barrier::new(WORKERS));
    let t = Instant::now();
    let handles: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (store, start) = (Arc::clone(&store), Arc::clone(&start));
            std::thread::spawn(move || worker(w, &store, &start))
        })
        .collect();
    let done: Vec<Done> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("worker thread"))
        .collect();
    let elapsed = t.elapsed();
    assert_eq!(done.len(), WORKERS * RUNS_EACH);

    let mut ids = BTreeSet::new();
    for d in &done {
        let what = format!("worker {} run {}", d.worker, d.n);
        let err = d.stderr.to_lowercase();
        assert!(
            !err.contains("locked") && !err.contains("busy"),
            "{what}: the store was locked or busy: {}",
            d.stderr
        );
        assert_eq!(d.code, Some(0), "{what}: exit status, stderr: {}", d.stderr);
        let evs = events(&d.stdout);
        let last = evs.last().unwrap_or_else(|| panic!("{what}: no events"));
        assert_eq!(last["event"], "workflow_finished", "{what}");
        assert_eq!(
            last["data"]["outputs"]["content"], "Hello to you too! This is turn #1.",
            "{what}"
        );
        let id = evs[0]["task_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: no task_id"));
        assert!(ids.insert(id.to_string()), "{what}: run id {id} twice");
    }

    let listed = runs(&store);
    assert_eq!(listed.len(), WORKERS * RUNS_EACH, "runs listed");
    let not_ok: Vec<&Value> = listed
        .iter()
        .filter(|r| r["status"] != "succeeded")
        .collect();
    assert!(not_ok.is_empty(), "runs not succeeded: {not_ok:?}");
    let listed_ids: BTreeSet<String> = listed
        .iter()
        .map(|r| {
            r["id"]
                .as_str()
                .unwrap_or_else(|| panic!("a run without id: {r}"))
                .to_string()
        })
        .collect();
    assert_eq!(listed_ids.len(), WORKERS * RUNS_EACH, "distinct ids listed");
    assert_eq!(listed_ids, ids, "the listed runs are the runs made");
    println!(
        "concurrency: {} runs by {WORKERS} processes at once in {elapsed:?}",
        WORKERS * RUNS_EACH
    );
}
