//! The run store on PostgreSQL: every command given `--store postgres://…` (or
//! `CANVAS_STORE=postgres://…`) works as on a file. Each test uses a schema of its own
//! in `$CANVAS_TEST_PG`'s database (`?schema=`), dropped after. Without `CANVAS_TEST_PG`
//! the tests print why they skip, except under `CI=true`, where a missing variable fails.

use std::process::{Child, Command, Stdio};
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::canvases::gated_loop_canvas;
use crate::harness::{CanvasCli, Ran};
use crate::peer::Gate;
use crate::util::{TIMEOUT, canvases};

/// A schema of the test database for one test; dropped (with everything in it) after.
pub(crate) struct PgSchema {
    base: String,
    name: String,
}

impl PgSchema {
    /// A fresh schema name, or `None` (skip) outside CI without `CANVAS_TEST_PG`.
    pub(crate) fn new() -> Option<PgSchema> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let base = match std::env::var("CANVAS_TEST_PG") {
            Ok(v) if !v.trim().is_empty() => v,
            _ if std::env::var("CI").as_deref() == Ok("true") => {
                panic!("CANVAS_TEST_PG is not set: .ci/run starts PostgreSQL and sets it")
            }
            _ => {
                eprintln!(
                    "skipping: CANVAS_TEST_PG is not set (scripts/test-databases.sh start sets it)"
                );
                return None;
            }
        };
        let name = format!(
            "cli_{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        );
        Some(PgSchema { base, name })
    }

    /// The store URL: the test database, this schema.
    pub(crate) fn url(&self) -> String {
        let sep = if self.base.contains('?') { '&' } else { '?' };
        format!("{}{sep}schema={}", self.base, self.name)
    }

    /// The schema's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// A plain client on the test database.
    pub(crate) fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.base, postgres::NoTls).expect("connect to CANVAS_TEST_PG")
    }

    /// Whether the schema exists (a read-only command must not create it).
    fn exists(&self) -> bool {
        self.client()
            .query_opt(
                "SELECT 1 FROM pg_namespace WHERE nspname = $1",
                &[&self.name],
            )
            .expect("query pg_namespace")
            .is_some()
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
        }
    }
}

/// `canvas ARGS` in `ran`'s directory with `CANVAS_STORE` naming the PostgreSQL store.
fn on(ran: &Ran, url: &str, args: &[&str]) -> Ran {
    ran.fresh().env("CANVAS_STORE", url).args(args).run()
}

fn run_ids(ran: &Ran, url: &str) -> Vec<String> {
    let list = on(ran, url, &["runs", "--limit", "0", "--format", "json"])
        .code(0)
        .json();
    list.as_array()
        .expect("an array")
        .iter()
        .map(|r| r["id"].as_str().expect("an id").to_string())
        .collect()
}

#[test]
fn run_resume_runs_show_events_and_prune_work_on_postgres() {
    let Some(pg) = PgSchema::new() else { return };
    let url = pg.url();
    let hello = canvases().join("hello.json");
    let trip = canvases().join("trip.yaml");
    let mock = canvases().join("trip.mock.yaml");
    // --store names the store here; CANVAS_STORE (which the harness points at a file)
    // is overridden by the flag.
    let first = CanvasCli::new()
        .args(["run", "-q", "hi", "--format", "jsonl", "--store", &url])
        .arg(&hello)
        .run()
        .code(0);
    let done = first.events();
    assert_eq!(
        done.last().map(|e| e["event"].clone()),
        Some("workflow_finished".into())
    );
    assert!(
        !first.dir().join("canvas.db").exists(),
        "the file store was not used"
    );
    first
        .fresh()
        .args([
            "run",
            "-i",
            "destination=Lisbon",
            "--format",
            "jsonl",
            "--store",
            &url,
        ])
        .arg(&trip)
        .arg("--mock-llm")
        .arg(&mock)
        .run()
        .code(3)
        .stderr_contains("waiting for input");
    // From here on through CANVAS_STORE.
    let ids = run_ids(&first, &url);
    assert_eq!(ids.len(), 2);
    let waiting = &ids[0];
    let shown = on(&first, &url, &["show", "latest", "--format", "json"])
        .code(0)
        .json();
    assert_eq!(shown["id"], waiting.as_str());
    assert_eq!(shown["status"], "waiting");
    assert!(shown["store_bytes"].as_u64().unwrap_or(0) > 0, "{shown}");
    let text = on(&first, &url, &["show", &waiting[..10]]).code(0).stdout();
    assert!(text.contains("postgres://"), "{text}");
    on(
        &first,
        &url,
        &[
            "resume",
            "latest",
            "-i",
            "days=3",
            "-i",
            "pace=relaxed",
            "--format",
            "jsonl",
        ],
    )
    .code(0);
    let stored = on(&first, &url, &["events", waiting, "--format", "jsonl"])
        .code(0)
        .events();
    assert_eq!(
        stored.last().map(|e| e["event"].clone()),
        Some("workflow_finished".into())
    );
    let second = on(
        &first,
        &url,
        &["events", waiting, "--turn", "2", "--format", "jsonl"],
    )
    .code(0)
    .events();
    assert!(
        !second.is_empty() && second.len() < stored.len(),
        "both turns are stored"
    );
    let listed = on(&first, &url, &["runs"]).code(0);
    assert!(listed.stdout().contains("succeeded"), "{}", listed.stdout());
    assert!(
        listed.stderr().contains("store: postgres://"),
        "{}",
        listed.stderr()
    );
    // A finished run is not cancelled.
    on(&first, &url, &["cancel", waiting])
        .code(2)
        .stderr_contains("is not running");
    let pruned = on(
        &first,
        &url,
        &["runs", "prune", "--keep", "1", "--yes", "--format", "json"],
    )
    .code(0)
    .json();
    assert_eq!(pruned["deleted"], 1, "{pruned}");
    assert_eq!(pruned["reclaim"], "autovacuum", "{pruned}");
    assert_eq!(run_ids(&first, &url), std::slice::from_ref(waiting));
    // A chat is stored there too, a turn per line.
    let support = canvases().join("support.yaml");
    let support_mock = canvases().join("support.mock.yaml");
    first
        .fresh()
        .env("CANVAS_STORE", &url)
        .arg("chat")
        .arg(&support)
        .arg("--mock-llm")
        .arg(&support_mock)
        .stdin("my order is late\nhow do I reset it?\n")
        .run()
        .code(0);
    let chat = on(&first, &url, &["show", "latest", "--format", "json"])
        .code(0)
        .json();
    assert_eq!(
        (chat["turns"].as_u64(), chat["status"].as_str()),
        (Some(2), Some("succeeded"))
    );
}

#[test]
fn read_only_commands_leave_no_store_behind() {
    let Some(pg) = PgSchema::new() else { return };
    let url = pg.url();
    let ran = CanvasCli::new()
        .env("CANVAS_STORE", &url)
        .args(["runs"])
        .run()
        .code(0)
        .stderr_contains("no runs in postgres://");
    on(&ran, &url, &["show", "latest"])
        .code(2)
        .stderr_contains("there is no run store at postgres://");
    on(&ran, &url, &["events", "latest"]).code(2);
    on(&ran, &url, &["cancel", "latest"])
        .code(2)
        .stderr_contains("no run store at");
    on(&ran, &url, &["runs", "prune", "--keep", "0", "--yes"]).code(0);
    assert!(!pg.exists(), "a read-only command created the schema");
}

#[test]
fn the_password_never_shows() {
    let Some(pg) = PgSchema::new() else { return };
    let base = pg.url();
    // The test URL's password replaced by a wrong one (`user:password@`).
    let (head, rest) = base.split_once("://").expect("a URL");
    let (auth, host) = rest
        .split_once('@')
        .expect("user:password@ in CANVAS_TEST_PG");
    let user = auth.split(':').next().unwrap_or(auth);
    let url = format!("{head}://{user}:wrong-secret-4711@{host}");
    let ran = CanvasCli::new()
        .args(["runs", "--store", &url])
        .run()
        .code(2);
    let err = ran.stderr();
    assert!(!err.contains("4711"), "{err}");
    assert!(err.contains(":***@"), "{err}");
    assert!(err.contains("password authentication failed"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// A child `canvas` process, killed if the test fails.
struct Bg(Option<Child>);

impl Drop for Bg {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn cancel_from_another_process_stops_a_run_on_postgres() {
    let Some(pg) = PgSchema::new() else { return };
    let url = pg.url();
    let dir = tempfile::tempdir().expect("temp dir");
    let flow = dir.path().join("loop.json");
    // The 10th pass's call is held until the cancel is in: the run cannot end first.
    let gate = Gate::holding(10);
    let canvas = gated_loop_canvas(40, &gate.url());
    std::fs::write(&flow, canvas.to_string()).expect("write the canvas");
    let child = Command::new(env!("CARGO_BIN_EXE_canvas"))
        .args(["run", "--format", "jsonl"])
        .arg(&flow)
        .env("CANVAS_STORE", &url)
        .env("HOME", dir.path())
        .env("CANVAS_ALLOW_PRIVATE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn canvas run");
    let mut bg = Bg(Some(child));
    let probe = CanvasCli::new()
        .env("CANVAS_STORE", &url)
        .args(["runs"])
        .run();
    // Wait until the run is at the gate, stored, running, with events.
    gate.wait_held();
    let deadline = Instant::now() + TIMEOUT;
    let run_id = loop {
        assert!(Instant::now() < deadline, "the run never showed as running");
        assert!(
            bg.0.as_mut().map(|c| c.try_wait().expect("try_wait")) == Some(None),
            "the run ended before it could be cancelled"
        );
        let shown = on(&probe, &url, &["show", "latest", "--format", "json"]);
        if shown.exit_code() == Some(0) {
            let v: Value = shown.json();
            if v["status"] == "running" && v["events"].as_u64().unwrap_or(0) > 0 {
                break v["id"].as_str().expect("an id").to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    on(&probe, &url, &["cancel", &run_id])
        .code(0)
        .stderr_contains("next node boundary");
    // The run looks for a cancel request every 200 ms.
    std::thread::sleep(Duration::from_secs(1));
    gate.release();
    let out =
        bg.0.take()
            .expect("the run")
            .wait_with_output()
            .expect("wait for the run");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = on(&probe, &url, &["show", &run_id, "--format", "json"])
        .code(0)
        .json();
    assert_eq!(shown["status"], "cancelled", "{shown}");
    // And it continues from its checkpoint.
    let resumed = on(
        &probe,
        &url,
        &[
            "resume",
            &run_id,
            "--format",
            "jsonl",
            "--allow-private-network",
        ],
    )
    .code(0);
    let evs = resumed.events();
    assert_eq!(
        evs.last().map(|e| e["event"].clone()),
        Some("workflow_finished".into())
    );
    // No pass ran twice: the gate saw one call per pass.
    assert_eq!(gate.calls(), 40);
}

#[test]
fn several_processes_share_one_postgres_store() {
    const WORKERS: usize = 6;
    const RUNS_EACH: usize = 5;
    let Some(pg) = PgSchema::new() else { return };
    let url = pg.url();
    let hello = canvases().join("hello.json");
    let start = Barrier::new(WORKERS);
    let codes: Vec<(Option<i32>, String)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let (url, hello, start) = (&url, &hello, &start);
                s.spawn(move || {
                    start.wait();
                    (0..RUNS_EACH)
                        .map(|_| {
                            let ran = CanvasCli::new()
                                .env("CANVAS_STORE", url)
                                .args(["run", "-q", "hi", "--format", "jsonl"])
                                .arg(hello)
                                .run();
                            (ran.exit_code(), ran.stderr())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    for (code, err) in &codes {
        assert_eq!(*code, Some(0), "{err}");
    }
    let probe = CanvasCli::new().run();
    let listed = on(&probe, &url, &["runs", "--limit", "0", "--format", "json"])
        .code(0)
        .json();
    let runs = listed.as_array().expect("an array");
    assert_eq!(runs.len(), WORKERS * RUNS_EACH);
    assert!(runs.iter().all(|r| r["status"] == "succeeded"), "{listed}");
}
