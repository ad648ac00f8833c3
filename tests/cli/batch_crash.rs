//! Crash safety of `canvas batch`: a 1000-row batch SIGKILLed at twenty or more points
//! (each kill lands after a pseudo-random number of rows more are done) and resumed
//! with `canvas batch --resume latest` ends with every row finished exactly once:
//! counted from the store's events, each row has one run, and each run one
//! `workflow_finished` and one `node_finished` per component.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use canvas_store::{Batches, RowStatus, SqliteStore, Store};
use serde_json::{Value, json};

use crate::harness::CanvasCli;

const ROWS: usize = 1000;
/// Distinct kill points required (rows done when the process died).
const MIN_KILLS: usize = 20;
const MAX_ATTEMPTS: usize = 80;

/// `begin → StringTransform:Wrap (<query>) → Message:Out (done <query>)`.
fn canvas() -> Value {
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

fn dataset() -> String {
    (1..=ROWS)
        .map(|i| {
            json!({"id": format!("r{i}"), "query": format!("q{i}"),
                   "expect": {"equals": format!("done <q{i}>")}})
            .to_string()
                + "\n"
        })
        .collect()
}

/// Rows done so far (0 before the batch exists).
fn done(store: &Path) -> usize {
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    conn.query_row(
        "SELECT COUNT(*) FROM batch_rows WHERE status IN ('succeeded', 'failed', 'waiting')",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map_or(0, |n| n as usize)
}

fn has_batch(store: &Path) -> bool {
    SqliteStore::open_read_only(store)
        .ok()
        .flatten()
        .is_some_and(|s| s.find_batch("latest").is_ok())
}

/// A deterministic xorshift.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn a_batch_killed_at_twenty_points_finishes_every_row_exactly_once() {
    let cli = CanvasCli::new()
        .json("flow.json", &canvas())
        .file("rows.jsonl", dataset());
    let store = cli.path("batch.db");
    let flow = cli.path_str("flow.json");
    let rows = cli.path_str("rows.jsonl");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut kills = BTreeSet::new();
    let mut attempts = 0;
    while kills.len() < MIN_KILLS && attempts < MAX_ATTEMPTS {
        attempts += 1;
        let started = has_batch(&store);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_canvas"));
        if started {
            cmd.args(["batch", "--resume", "latest"]);
        } else {
            cmd.args(["batch", &flow, "--dataset", &rows]);
        }
        let before = done(&store);
        let mut child = cmd
            .args(["--concurrency", "8", "--quiet", "--store"])
            .arg(&store)
            .env("HOME", cli.path("."))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn canvas");
        let target = before + 1 + (rng.next() % 60) as usize;
        let deadline = Instant::now() + crate::util::TIMEOUT;
        while Instant::now() < deadline
            && matches!(child.try_wait(), Ok(None))
            && done(&store) < target
        {
            std::thread::sleep(Duration::from_micros(300));
        }
        std::thread::sleep(Duration::from_micros(rng.next() % 3000));
        let _ = child.kill();
        let st = child.wait().expect("wait for the killed child");
        if std::os::unix::process::ExitStatusExt::signal(&st) != Some(9) {
            // It finished (or stopped) before the kill: the batch is done.
            break;
        }
        kills.insert(done(&store));
    }
    eprintln!("batch kill points (rows done when killed): {kills:?}");
    assert!(
        kills.len() >= MIN_KILLS,
        "only {} distinct kill points in {attempts} attempts: {kills:?}",
        kills.len()
    );
    // Resume to the end.
    let ran = cli
        .args(["batch", "--resume", "latest", "--format", "json", "--store"])
        .arg(&store)
        .run()
        .code(0);
    let summary = &ran.json()["summary"];
    assert_eq!(summary["counts"]["succeeded"], ROWS, "{summary}");
    assert_eq!(summary["counts"]["checks_failed"], 0, "{summary}");

    // Counted from the store: one run per row, each finished once, nothing run twice.
    let s = SqliteStore::open_read_only(&store).unwrap().unwrap();
    let batch = s.find_batch("latest").unwrap();
    let rows = s.batch_rows(&batch.id).unwrap();
    assert_eq!(rows.len(), ROWS);
    assert_eq!(s.count_runs(None).unwrap(), ROWS as u64, "one run per row");
    let mut seen_runs = BTreeSet::new();
    for row in &rows {
        assert_eq!(row.status, RowStatus::Succeeded, "{row:?}");
        let run = row.run_id.clone().expect("a done row has its run");
        assert!(seen_runs.insert(run.clone()), "run {run} serves two rows");
        let mut finished: HashMap<String, usize> = HashMap::new();
        let mut workflows = 0;
        for line in s.events(&run).unwrap() {
            let ev: Value = serde_json::from_str(&line).unwrap();
            match ev["event"].as_str() {
                Some("node_finished") => {
                    *finished
                        .entry(ev["data"]["component_id"].as_str().unwrap().to_string())
                        .or_default() += 1;
                }
                Some("workflow_finished") => workflows += 1,
                _ => {}
            }
        }
        assert_eq!(
            workflows, 1,
            "row {} ({run}) finished {workflows} times",
            row.row_id
        );
        assert_eq!(finished.len(), 3, "row {}: {finished:?}", row.row_id);
        assert!(
            finished.values().all(|&n| n == 1),
            "row {}: a node ran twice: {finished:?}",
            row.row_id
        );
        let result = row.result.as_ref().unwrap();
        assert_eq!(result["answer"], format!("done <q{}>", row.idx + 1));
    }
    assert!(
        rows.iter().any(|r| r.attempts > 1),
        "some row was taken over from a killed worker"
    );
}

#[test]
fn ctrl_c_gives_the_rows_back_and_resume_finishes_them_once() {
    // Rows wait 40 ms on the model: the batch is under way when Ctrl-C comes.
    let flow = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:A"], "upstream": []},
        "LLM:A": {"obj": {"component_name": "LLM", "params": {
            "llm_id": "", "sys_prompt": "Answer.", "prompts": [{"role": "user", "content": "{sys.query}"}]}},
            "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message", "params": {
            "stream": false, "content": ["{LLM:A@content}"]}}, "downstream": [], "upstream": ["LLM:A"]}
    }});
    let rows: String = (1..=120)
        .map(|i| {
            json!({"query": format!("q{i}"), "expect": {"contains": format!("q{i}")}}).to_string()
                + "\n"
        })
        .collect();
    let cli = CanvasCli::new()
        .json("flow.json", &flow)
        .json(
            "mock.json",
            &json!({"rules": [], "default": "echo", "delay_ms": 40}),
        )
        .file("rows.jsonl", rows);
    let store = cli.path("batch.db");
    let child = Command::new(env!("CARGO_BIN_EXE_canvas"))
        .args([
            "batch",
            "flow.json",
            "--dataset",
            "rows.jsonl",
            "--mock-llm",
            "mock.json",
        ])
        .args(["--concurrency", "4", "--quiet", "--store"])
        .arg(&store)
        .current_dir(cli.path("."))
        .env("HOME", cli.path("."))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn canvas");
    let deadline = Instant::now() + crate::util::TIMEOUT;
    while done(&store) < 10 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(interrupted.success());
    let out = child.wait_with_output().expect("the batch ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("rows left; `canvas batch --resume"), "{err}");
    let left = 120 - done(&store);
    assert!(left > 0, "Ctrl-C came after the last row");
    {
        let s = SqliteStore::open_read_only(&store).unwrap().unwrap();
        let batch = s.find_batch("latest").unwrap();
        let counts = s.row_counts(&batch.id).unwrap();
        assert_eq!(counts.running, 0, "rows are given back: {counts:?}");
        assert_eq!(counts.pending as usize, left);
    }
    let ran = cli
        .args(["batch", "--resume", "latest", "--format", "json", "--store"])
        .arg(&store)
        .run()
        .code(0);
    assert_eq!(ran.json()["summary"]["counts"]["succeeded"], 120);
    let s = SqliteStore::open_read_only(&store).unwrap().unwrap();
    assert_eq!(s.count_runs(None).unwrap(), 120, "one run per row");
    let batch = s.find_batch("latest").unwrap();
    for row in s.batch_rows(&batch.id).unwrap() {
        let run = row.run_id.unwrap();
        let llm_calls = s
            .events(&run)
            .unwrap()
            .iter()
            .filter(|l| {
                l.contains("\"event\":\"node_finished\"")
                    && l.contains("\"component_id\":\"LLM:A\"")
            })
            .count();
        assert_eq!(
            llm_calls, 1,
            "row {}: LLM:A finished {llm_calls} times",
            row.row_id
        );
    }
}
