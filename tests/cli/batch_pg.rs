//! `canvas batch` on a PostgreSQL store, with workers as separate processes: a batch
//! killed and resumed, listed and shown; four workers draining one 1000-row batch
//! with no row run twice; and a worker stopped mid-row, whose row another worker
//! continues from its run's last checkpoint. Each test uses a schema of its own
//! ([`PgSchema`]); without `CANVAS_TEST_PG` they skip with a note, except under
//! `CI=true`, where they fail.

use std::collections::{BTreeSet, HashMap};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use canvas_store::{Batches, PgStore, PgUrl, RowStatus, Store};
use serde_json::{Value, json};

use crate::harness::CanvasCli;
use crate::postgres::PgSchema;
use crate::util::TIMEOUT;

/// `begin → StringTransform:Wrap (<query>) → Message:Out (done <query>)`: a row is quick.
fn wrap_canvas() -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {"inputs": {}}},
                  "downstream": ["StringTransform:Wrap"], "upstream": []},
        "StringTransform:Wrap": {"obj": {"component_name": "StringTransform", "params": {
            "method": "merge", "script": "<{sys.query}>", "delimiters": [","],
            "outputs": {"result": {"type": "string"}}}},
            "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message", "params": {
            "stream": false, "content": ["done {StringTransform:Wrap@result}"]}},
            "downstream": [], "upstream": ["StringTransform:Wrap"]}
    }})
}

/// `n` rows, each checking its answer.
fn wrap_rows(n: usize) -> String {
    (1..=n)
        .map(|i| {
            json!({"id": format!("r{i}"), "query": format!("q{i}"),
                   "expect": {"equals": format!("done <q{i}>")}})
            .to_string()
                + "\n"
        })
        .collect()
}

/// `begin → Agent:First → Agent:Second → Message:Out`: two model calls, so a row stands
/// between two checkpoints for as long as the mock model waits.
fn two_agents() -> Value {
    let agent = |prompt: &str, down: &str, up: &str| {
        json!({"obj": {"component_name": "Agent", "params": {
            "llm_id": "", "sys_prompt": "You answer.",
            "prompts": [{"role": "user", "content": prompt}], "max_rounds": 1, "tools": []}},
            "downstream": [down], "upstream": [up]})
    };
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {"inputs": {}}},
                  "downstream": ["Agent:First"], "upstream": []},
        "Agent:First": agent("{sys.query}", "Agent:Second", "begin"),
        "Agent:Second": agent("again: {Agent:First@content}", "Message:Out", "Agent:First"),
        "Message:Out": {"obj": {"component_name": "Message", "params": {
            "stream": false, "content": ["{Agent:Second@content}"]}},
            "downstream": [], "upstream": ["Agent:Second"]}
    }})
}

/// The components of [`two_agents`].
const TWO_AGENTS: [&str; 4] = ["begin", "Agent:First", "Agent:Second", "Message:Out"];

/// The store, opened as another process would (`None` until it exists).
fn open(url: &str) -> Option<PgStore> {
    PgStore::open_read_only(&PgUrl::parse(url).expect("a store URL")).expect("open the store")
}

/// `canvas ARGS --quiet --store URL`, a process of its own, in `cli`'s directory.
fn canvas(cli: &CanvasCli, url: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_canvas"));
    cmd.args(args)
        .args(["--quiet", "--store", url])
        .current_dir(cli.path("."))
        .env("HOME", cli.path("."))
        .env("NO_COLOR", "1")
        .env_remove("CANVAS_STORE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Wait for `child` until `deadline`; past it, it is killed and the test fails.
fn finish(mut child: Child, deadline: Instant, what: &str) -> Output {
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return child.wait_with_output().expect("collect the output");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("collect the output");
    panic!(
        "{what} did not finish in time; stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JSON summary `canvas batch --format json` printed, its exit code checked.
fn summary_of(out: &Output, code: i32, what: &str) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: stderr:\n{stderr}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): stderr:\n{stderr}"))
}

/// How many `workflow_finished` events the run stored, and `node_finished` per
/// component.
fn finished(store: &dyn Store, run: &str) -> (usize, HashMap<String, usize>) {
    let mut nodes: HashMap<String, usize> = HashMap::new();
    let mut workflows = 0;
    for line in store.events(run).expect("read the run's events") {
        let ev: Value = serde_json::from_str(&line).expect("a JSON event");
        match ev["event"].as_str() {
            Some("node_finished") => {
                let id = ev["data"]["component_id"].as_str().unwrap_or_default();
                *nodes.entry(id.to_string()).or_default() += 1;
            }
            Some("workflow_finished") => workflows += 1,
            _ => {}
        }
    }
    (workflows, nodes)
}

/// Poll until `cond` holds on the store (once it exists); false past [`TIMEOUT`].
fn wait_for(url: &str, mut cond: impl FnMut(&PgStore) -> bool) -> bool {
    let deadline = Instant::now() + TIMEOUT;
    let mut store = None;
    while Instant::now() < deadline {
        if store.is_none() {
            store = open(url);
        }
        if store.as_ref().is_some_and(&mut cond) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}

/// The run of the latest batch's first row, once it has finished `component`.
fn first_row_finished(store: &PgStore, component: &str) -> Option<String> {
    let batch = store.find_batch("latest").ok()?;
    let run = store.batch_rows(&batch.id).ok()?.first()?.run_id.clone()?;
    // Tied to the row before it is stored.
    store.find_run(&run).ok()?;
    let (_, nodes) = finished(store, &run);
    nodes.contains_key(component).then_some(run)
}

#[test]
fn a_batch_killed_on_postgres_resumes_and_is_listed_and_shown() {
    let Some(pg) = PgSchema::new() else { return };
    let url = pg.url();
    let cli = CanvasCli::new()
        .json("flow.json", &wrap_canvas())
        .file("rows.jsonl", wrap_rows(200));
    let args = [
        "batch",
        "flow.json",
        "--dataset",
        "rows.jsonl",
        "--concurrency",
        "2",
    ];
    let mut first = canvas(&cli, &url, &args)
        .spawn()
        .expect("spawn canvas batch");
    // Killed once 20 rows are done: the rest are pending, or held by the dead process.
    let started = wait_for(&url, |s| {
        s.find_batch("latest")
            .and_then(|b| s.row_counts(&b.id))
            .is_ok_and(|n| n.done() >= 20)
    });
    let _ = first.kill();
    let killed = first.wait().expect("reap the killed batch");
    assert!(started, "the batch never got 20 rows done");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed),
        Some(9),
        "the batch ended before the kill"
    );
    let store = open(&url).expect("the store exists");
    let batch = store.find_batch("latest").expect("the batch is stored");
    let before = store.row_counts(&batch.id).unwrap();
    assert!(before.done() >= 20 && before.done() < 200, "{before:?}");

    // Resumed by a prefix of its id: the rows not done run, here.
    let prefix = batch.id[..10].to_lowercase();
    let out = canvas(
        &cli,
        &url,
        &["batch", "--resume", &prefix, "--format", "json"],
    )
    .output()
    .expect("run canvas batch --resume");
    let resumed = summary_of(&out, 0, "the resumed batch");
    assert_eq!(resumed["batch"], batch.id.as_str());
    assert_eq!(resumed["summary"]["counts"]["succeeded"], 200, "{resumed}");
    assert_eq!(resumed["summary"]["counts"]["checks_failed"], 0);
    assert_eq!(
        resumed["finished_here"].as_u64(),
        Some(200 - before.done()),
        "{resumed}"
    );
    let told = String::from_utf8_lossy(&out.stderr).to_string();
    let done_before = format!("{} done before", before.done());
    assert!(told.contains(&done_before), "{told}");
    assert_eq!(store.count_runs(None).unwrap(), 200, "one run per row");

    // Listed, and shown by its id, through CANVAS_STORE.
    let with_env = |args: &[&str]| -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_canvas"))
            .args(args)
            .current_dir(cli.path("."))
            .env("HOME", cli.path("."))
            .env("NO_COLOR", "1")
            .env("CANVAS_STORE", &url)
            .stdin(Stdio::null())
            .output()
            .expect("run canvas");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "canvas {args:?}: {stderr}");
        out
    };
    let json_of = |out: Output| -> Value { serde_json::from_slice(&out.stdout).expect("JSON") };
    let text_of = |out: Output| String::from_utf8_lossy(&out.stdout).into_owned();
    let listed = json_of(with_env(&["batches", "--format", "json"]));
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["id"], batch.id.as_str());
    assert_eq!(listed[0]["counts"]["succeeded"], 200, "{listed}");
    let table = text_of(with_env(&["batches"]));
    assert!(table.contains(&batch.id), "{table}");
    let shown = json_of(with_env(&["show", &batch.id, "--format", "json"]));
    assert_eq!(shown["batch"], batch.id.as_str());
    assert_eq!(shown["summary"]["counts"]["succeeded"], 200, "{shown}");
    assert_eq!(shown["passed"], true);
    let text = text_of(with_env(&["show", &batch.id]));
    assert!(
        text.starts_with(&format!("batch {}\n", batch.id)) && text.contains("200 succeeded"),
        "{text}"
    );
    // A row's run is still shown as a run.
    let run = store.batch_rows(&batch.id).unwrap()[0]
        .run_id
        .clone()
        .expect("a done row has its run");
    let shown_run = json_of(with_env(&["show", &run, "--format", "json"]));
    assert_eq!(shown_run["id"], run.as_str());
    assert_eq!(shown_run["status"], "succeeded");
}

#[test]
fn four_workers_drain_a_thousand_rows_and_no_row_runs_twice() {
    const ROWS: usize = 1000;
    const WORKERS: usize = 4;
    let Some(pg) = PgSchema::new() else { return };
    let url = pg.url();
    let cli = CanvasCli::new()
        .json("flow.json", &wrap_canvas())
        .file("rows.jsonl", wrap_rows(ROWS));
    let args = [
        "batch",
        "flow.json",
        "--dataset",
        "rows.jsonl",
        "--worker",
        "--concurrency",
        "8",
        "--format",
        "json",
    ];
    // Started at once: they join one batch and share its rows.
    let workers: Vec<Child> = (0..WORKERS)
        .map(|_| canvas(&cli, &url, &args).spawn().expect("spawn a worker"))
        .collect();
    let deadline = Instant::now() + 4 * TIMEOUT;
    let mut batch_ids = BTreeSet::new();
    let mut shares = Vec::new();
    for (i, w) in workers.into_iter().enumerate() {
        let out = finish(w, deadline, &format!("worker {i}"));
        let s = summary_of(&out, 0, &format!("worker {i}"));
        assert_eq!(s["summary"]["counts"]["succeeded"], ROWS, "worker {i}: {s}");
        batch_ids.insert(s["batch"].as_str().unwrap_or_default().to_string());
        shares.push(s["finished_here"].as_u64().unwrap_or(0));
    }
    eprintln!("rows finished by each worker: {shares:?}");
    assert_eq!(
        batch_ids.len(),
        1,
        "the workers joined one batch: {batch_ids:?}"
    );
    assert_eq!(shares.iter().sum::<u64>(), ROWS as u64, "{shares:?}");
    assert!(
        shares.iter().filter(|n| **n > 0).count() >= 2,
        "the rows were shared: {shares:?}"
    );

    // Counted from the store: one run per row, each finished once, no row claimed twice.
    let store = open(&url).expect("the store exists");
    let batch = store.find_batch("latest").unwrap();
    assert_eq!(store.list_batches(0).unwrap().len(), 1);
    let rows = store.batch_rows(&batch.id).unwrap();
    assert_eq!(rows.len(), ROWS);
    assert_eq!(
        store.count_runs(None).unwrap(),
        ROWS as u64,
        "one run per row"
    );
    let mut runs = BTreeSet::new();
    for row in &rows {
        assert_eq!(row.status, RowStatus::Succeeded, "{row:?}");
        assert_eq!(row.attempts, 1, "row {} was claimed twice", row.row_id);
        let run = row.run_id.clone().expect("a done row has its run");
        assert!(runs.insert(run.clone()), "run {run} serves two rows");
        let (workflows, nodes) = finished(&store, &run);
        assert_eq!(workflows, 1, "row {} ({run})", row.row_id);
        assert_eq!(nodes.len(), 3, "row {}: {nodes:?}", row.row_id);
        assert!(
            nodes.values().all(|&n| n == 1),
            "row {}: a node ran twice: {nodes:?}",
            row.row_id
        );
        let result = row.result.as_ref().expect("a done row has its result");
        assert_eq!(result["answer"], format!("done <q{}>", row.idx + 1));
    }
}

/// What [`rescue`] saw.
struct Rescued {
    /// The second worker's summary.
    summary: Value,
    /// The store.
    store: PgStore,
    /// When (by the server's clock) row 1 was first seen taken over.
    taken_at: f64,
    /// When the first worker's lease on row 1 expired (it renews no more once stopped).
    expired_at: f64,
    /// The store's schema, dropped last.
    _pg: PgSchema,
}

/// A worker holding row 1 mid-run (its first model call done, its second under way) is
/// stopped by `stop`; a worker started with `--worker` then drains the batch, row 1
/// included, continuing its run: no component of it runs twice.
/// With `run_held_elsewhere`, the run's lease is then taken for that many seconds by a
/// holder of another machine (as a `canvas resume` of it there would).
fn rescue(
    stop: impl FnOnce(&mut Child, &PgSchema),
    run_held_elsewhere: Option<f64>,
) -> Option<Rescued> {
    let pg = PgSchema::new()?;
    let url = pg.url();
    let rows: String = (1..=3)
        .map(|i| json!({"id": format!("r{i}"), "query": format!("q{i}")}).to_string() + "\n")
        .collect();
    let cli = CanvasCli::new()
        .json("flow.json", &two_agents())
        .file("rows.jsonl", rows)
        .json("mock.json", &json!({"default": "fine", "delay_ms": 1500}));
    let common = [
        "batch",
        "flow.json",
        "--dataset",
        "rows.jsonl",
        "--mock-llm",
        "mock.json",
        "--lease",
        "2",
        "--format",
        "json",
    ];
    let mut victim = canvas(&cli, &url, &[&common[..], &["--concurrency", "1"]].concat())
        .spawn()
        .expect("spawn the first worker");
    let mut run = None;
    let reached = wait_for(&url, |s| {
        run = first_row_finished(s, "Agent:First");
        run.is_some()
    });
    if !reached {
        let _ = victim.kill();
        let out = victim.wait_with_output().expect("reap the first worker");
        panic!(
            "row 1 never finished its first model call; stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let run = run.expect("the row's run");
    stop(&mut victim, &pg);
    let mut admin = pg.client();
    let q = format!(
        "SELECT attempts, lease_expires, extract(epoch FROM clock_timestamp())::float8
         FROM \"{}\".batch_rows WHERE idx = 0",
        pg.name()
    );
    let row1 = |c: &mut postgres::Client| -> (i64, Option<f64>, f64) {
        let r = c.query_one(&q, &[]).expect("read row 1");
        (r.get(0), r.get(1), r.get(2))
    };
    let expired_at = row1(&mut admin).1.expect("row 1 is leased");
    if let Some(secs) = run_held_elsewhere {
        let q = format!(
            "UPDATE \"{}\".runs SET lease_owner = 'elsewhere:1:1',
                 lease_expires = extract(epoch FROM clock_timestamp())::float8 + $2
             WHERE id = $1",
            pg.name()
        );
        admin
            .execute(&q, &[&run, &secs])
            .expect("lease the run elsewhere");
    }
    let store = open(&url).expect("the store exists");
    let batch = store.find_batch("latest").unwrap();
    let (_, nodes) = finished(&store, &run);
    assert!(
        !nodes.contains_key("Agent:Second"),
        "stopped too late: row 1 is done: {nodes:?}"
    );
    let rescuer = canvas(&cli, &url, &[&common[..], &["--worker"]].concat())
        .spawn()
        .expect("spawn the second worker");
    // When row 1 changes hands.
    let mut taken_at = None;
    let deadline = Instant::now() + TIMEOUT;
    while taken_at.is_none() && Instant::now() < deadline {
        let (attempts, _, now) = row1(&mut admin);
        if attempts > 1 {
            taken_at = Some(now);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = finish(rescuer, Instant::now() + TIMEOUT, "the second worker");
    let _ = victim.kill();
    let _ = victim.wait();
    let summary = summary_of(&out, 0, "the second worker");
    let row = &store.batch_rows(&batch.id).unwrap()[0];
    assert_eq!(row.attempts, 2, "{row:?}");
    assert_eq!(
        row.run_id.as_deref(),
        Some(run.as_str()),
        "the same run goes on"
    );
    for r in store.batch_rows(&batch.id).unwrap() {
        let answer = r.result.as_ref().map(|v| v["answer"].clone());
        assert_eq!(answer, Some(json!("fine")), "row {}: {r:?}", r.row_id);
    }
    let (workflows, nodes) = finished(&store, &run);
    assert_eq!(workflows, 1, "{nodes:?}");
    for c in TWO_AGENTS {
        assert_eq!(nodes.get(c), Some(&1), "{c} ran again, or never: {nodes:?}");
    }
    Some(Rescued {
        summary,
        store,
        taken_at: taken_at.expect("row 1 was taken over"),
        expired_at,
        _pg: pg,
    })
}

#[test]
fn a_worker_killed_mid_row_has_its_row_continued_by_another() {
    let Some(r) = rescue(kill, None) else {
        return;
    };
    let s = &r.summary;
    assert_eq!(s["summary"]["counts"]["succeeded"], 3, "{s}");
    assert_eq!(s["passed"], true);
    assert_eq!(s["finished_here"], 3, "{s}");
    assert_eq!(r.store.count_runs(None).unwrap(), 3);
}

#[test]
fn a_row_whose_run_is_held_elsewhere_waits_for_it_and_runs_once() {
    // The row is free at once (its worker died here), its run not for 2.5 s: the worker
    // taking the row waits for the run without giving the row up (its lease renewals
    // meanwhile renew only what it holds), then continues it.
    let Some(r) = rescue(kill, Some(2.5)) else {
        return;
    };
    let s = &r.summary;
    assert_eq!(s["summary"]["counts"]["succeeded"], 3, "{s}");
    assert_eq!(s["finished_here"], 3, "{s}");
}

fn kill(victim: &mut Child, _: &PgSchema) {
    let _ = victim.kill();
    let _ = victim.wait();
}

#[test]
fn a_worker_that_stops_mid_row_loses_it_when_its_lease_expires() {
    // A stopped process is alive: its row, like that of a worker on another machine, is
    // taken over only when its lease runs out (2 s, renewed every 2/3 s until the stop);
    // seen taken before that, it was taken too early.
    let Some(r) = rescue(sigstop_outside_a_transaction, None) else {
        return;
    };
    let s = &r.summary;
    assert_eq!(s["summary"]["counts"]["succeeded"], 3, "{s}");
    assert_eq!(s["finished_here"], 3, "{s}");
    assert!(
        r.taken_at >= r.expired_at,
        "row 1 was taken over {:.3} s before its lease expired",
        r.expired_at - r.taken_at
    );
}

/// SIGSTOP `child`; again when it stopped inside a transaction on the schema (its locks
/// would be held as long as it stays stopped).
fn sigstop_outside_a_transaction(child: &mut Child, pg: &PgSchema) {
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {pid}");
    };
    let mut c = pg.client();
    for _ in 0..50 {
        signal("-STOP");
        std::thread::sleep(Duration::from_millis(50));
        let locks: i64 = c
            .query_one(
                "SELECT COUNT(*) FROM pg_locks l JOIN pg_class r ON r.oid = l.relation
                 JOIN pg_namespace n ON n.oid = r.relnamespace WHERE n.nspname = $1",
                &[&pg.name()],
            )
            .expect("read pg_locks")
            .get(0);
        if locks == 0 {
            return;
        }
        signal("-CONT");
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the worker was inside a transaction at every stop");
}
