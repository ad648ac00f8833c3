//! `canvas runs prune`: a dry run by default, `--yes` deletes and the store file shrinks,
//! a selector is required, `--keep`, JSON output, a run a live process holds stays; and
//! the store's size in `canvas runs` and `canvas show`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::canvases::chain_canvas;
use crate::harness::{CanvasCli, Ran};
use crate::util::TIMEOUT;

/// Nodes of the chain canvas each run runs: a few hundred events and checkpoints.
const NODES: usize = 120;

/// A store holding `n` runs of the chain canvas; returns the last command (to run more
/// in the same directory and store) and the run ids, newest first.
fn store_with_runs(n: usize) -> (Ran, Vec<String>) {
    let cli = CanvasCli::new().json("chain.json", &chain_canvas(NODES));
    let mut last = cli
        .args(["run", "chain.json", "-q", "go", "--format", "jsonl"])
        .run()
        .code(0);
    for _ in 1..n {
        last = last
            .fresh()
            .args(["run", "chain.json", "-q", "go", "--format", "jsonl"])
            .run()
            .code(0);
    }
    let ids = run_ids(&last);
    assert_eq!(ids.len(), n);
    (last, ids)
}

/// Every run id in the store, newest first.
fn run_ids(ran: &Ran) -> Vec<String> {
    let list = ran
        .fresh()
        .args(["runs", "--limit", "0", "--format", "json"])
        .run()
        .code(0)
        .json();
    list.as_array()
        .expect("an array")
        .iter()
        .map(|r| r["id"].as_str().expect("an id").to_string())
        .collect()
}

/// The store's bytes on disk: the file and its `-wal`.
fn store_bytes(dir: &Path) -> u64 {
    ["canvas.db", "canvas.db-wal"]
        .iter()
        .map(|f| std::fs::metadata(dir.join(f)).map_or(0, |m| m.len()))
        .sum()
}

#[test]
fn a_dry_run_lists_what_would_go_and_deletes_nothing() {
    let (ran, ids) = store_with_runs(3);
    let before = store_bytes(ran.dir());
    let dry = ran
        .fresh()
        .args(["runs", "prune", "--keep", "1"])
        .run()
        .code(0);
    let out = dry.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["ID", "STATUS", "TURNS", "UPDATED", "CANVAS"],
        "{out}"
    );
    assert!(
        lines[1].starts_with(&format!("{}  succeeded", ids[1])),
        "{out}"
    );
    assert!(
        lines[2].starts_with(&format!("{}  succeeded", ids[2])),
        "{out}"
    );
    assert!(!out.contains(&ids[0]), "the newest run is kept: {out}");
    assert!(lines[3].starts_with("2 runs selected, about "), "{out}");
    assert!(
        lines[3].contains(" kB") || lines[3].contains(" MB"),
        "{out}"
    );
    assert!(lines[3].contains("canvas.db"), "{out}");
    assert_eq!(
        lines[4], "dry run: nothing deleted; add --yes to delete these 2",
        "{out}"
    );
    assert_eq!(run_ids(&ran), ids, "nothing was deleted");
    assert_eq!(store_bytes(ran.dir()), before);
}

#[test]
fn yes_deletes_and_the_store_file_shrinks() {
    let (ran, ids) = store_with_runs(6);
    let before = store_bytes(ran.dir());
    let done = ran
        .fresh()
        .args(["runs", "prune", "--keep", "2", "--yes"])
        .run()
        .code(0);
    let out = done.stdout();
    let last = out.lines().last().unwrap_or_default();
    assert!(last.starts_with("deleted 4 runs; store "), "{out}");
    assert!(last.contains(" → "), "{out}");
    let after = store_bytes(ran.dir());
    assert!(
        after * 2 < before,
        "the store did not shrink enough: {before} → {after} bytes"
    );
    assert_eq!(run_ids(&ran), ids[..2]);
    // A deleted run is gone with its events; a kept one reads back whole.
    ran.fresh().args(["show", &ids[5]]).run().code(2);
    ran.fresh().args(["events", &ids[5]]).run().code(2);
    let kept = ran
        .fresh()
        .args(["events", &ids[0], "--format", "jsonl"])
        .run()
        .code(0);
    assert!(kept.events().len() > 2 * NODES);
    // A new run after the prune reuses and extends the store as before.
    ran.fresh()
        .args(["run", "chain.json", "-q", "again", "--format", "jsonl"])
        .run()
        .code(0);
    assert_eq!(run_ids(&ran).len(), 3);
}

#[test]
fn without_a_selector_prune_is_a_usage_error() {
    let ran = CanvasCli::new().args(["runs", "prune"]).run().code(2);
    assert!(ran.stdout().is_empty(), "{}", ran.stdout());
    let err = ran.stderr();
    assert!(
        err.starts_with("error: canvas runs prune: say which runs"),
        "{err}"
    );
    assert!(err.contains("hint: give --older-than DURATION"), "{err}");
    assert!(!ran.dir().join("canvas.db").exists(), "a store was created");
    // Even with --yes.
    ran.fresh().args(["runs", "prune", "--yes"]).run().code(2);
}

#[test]
fn keep_status_and_age_select_runs() {
    let (ran, ids) = store_with_runs(3);
    let json_of = |args: &[&str]| -> Value {
        ran.fresh()
            .args(["runs", "prune", "--format", "json"])
            .args(args)
            .run()
            .code(0)
            .json()
    };
    let ids_of = |doc: &Value| -> Vec<String> {
        doc["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids_of(&json_of(&["--keep", "0"])), ids);
    assert_eq!(ids_of(&json_of(&["--keep", "2"])), ids[2..]);
    assert!(ids_of(&json_of(&["--keep", "5"])).is_empty());
    // Every run is a few seconds old and succeeded.
    assert!(ids_of(&json_of(&["--older-than", "1h"])).is_empty());
    assert_eq!(
        ids_of(&json_of(&["--older-than", "0s", "--keep", "1"])),
        ids[1..]
    );
    assert!(ids_of(&json_of(&["--status", "failed,waiting"])).is_empty());
    assert_eq!(
        ids_of(&json_of(&["--status", "FAILED", "--status", "succeeded"])),
        ids
    );
    // Nothing matches: said in a table too, and the exit is 0.
    let none = ran
        .fresh()
        .args(["runs", "prune", "--status", "cancelled", "--yes"])
        .run()
        .code(0);
    assert!(
        none.stdout().starts_with("no runs to prune (store: "),
        "{}",
        none.stdout()
    );
    assert_eq!(run_ids(&ran), ids);
    // A bad duration is a usage error naming the format.
    let bad = ran
        .fresh()
        .args(["runs", "prune", "--older-than", "30"])
        .run()
        .code(2);
    assert!(bad.stderr().contains("e.g. 30d"), "{}", bad.stderr());
}

#[test]
fn json_output_describes_the_dry_run_and_the_deletion() {
    let (ran, ids) = store_with_runs(3);
    let dry = ran
        .fresh()
        .args(["runs", "prune", "--keep", "1", "--format", "json"])
        .run()
        .code(0)
        .json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["count"], 2);
    assert_eq!(dry["deleted"], 0);
    assert!(dry["approx_bytes"].as_u64().unwrap() > 10_000, "{dry}");
    assert_eq!(dry["bytes_before"], dry["bytes_after"]);
    assert!(
        dry["store"].as_str().unwrap().ends_with("canvas.db"),
        "{dry}"
    );
    assert_eq!(dry["runs"][0]["id"], ids[1].as_str());
    assert_eq!(dry["runs"][0]["status"], "succeeded");
    assert!(dry["runs"][0].get("canvas").is_none());
    assert_eq!(dry["reclaim"], Value::Null);

    let done = ran
        .fresh()
        .args(["runs", "prune", "--keep", "1", "--format", "json", "--yes"])
        .run()
        .code(0)
        .json();
    assert_eq!(done["dry_run"], false);
    assert_eq!(
        (done["count"].clone(), done["deleted"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(done["reclaim"], "incremental");
    let (b, a) = (
        done["bytes_before"].as_u64().unwrap(),
        done["bytes_after"].as_u64().unwrap(),
    );
    assert!(a < b, "{done}");
    assert_eq!(run_ids(&ran), ids[..1]);
}

/// A child process, killed and reaped when dropped (a failing test leaves none behind).
struct Killed(Child);

impl Killed {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn a_run_a_live_process_is_running_is_never_pruned() {
    let (ran, ids) = store_with_runs(2);
    let store = ran.dir().join("canvas.db");
    // An LLM node whose (mock) answer takes longer than the test.
    let slow = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:A"]},
        "LLM:A": {"obj": {"component_name": "LLM", "params": {
            "llm_id": "slow@OpenAI-API-Compatible",
            "sys_prompt": "You answer briefly.",
            "prompts": [{"role": "user", "content": "{sys.query}"}]}},
            "downstream": ["Message:M"]},
        "Message:M": {"obj": {"component_name": "Message",
            "params": {"content": ["{LLM:A@content}"]}}, "downstream": []}}});
    std::fs::write(ran.dir().join("slow.json"), slow.to_string()).unwrap();
    std::fs::write(
        ran.dir().join("slow.mock.json"),
        json!({"rules": [], "default": "late", "delay_ms": 60_000}).to_string(),
    )
    .unwrap();
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_canvas"))
            .args(["run", "slow.json", "-q", "hi", "--format", "jsonl"])
            .args(["--mock-llm", "slow.mock.json"])
            .current_dir(ran.dir())
            .env("CANVAS_STORE", &store)
            .env("HOME", ran.dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn canvas run"),
    );
    // Wait until the store shows it running.
    let deadline = Instant::now() + TIMEOUT;
    let running = loop {
        let now = run_ids(&ran);
        if now.len() == 3 {
            break now[0].clone();
        }
        assert!(Instant::now() < deadline, "the slow run never started");
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "the slow run ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let done = ran
        .fresh()
        .args(["runs", "prune", "--keep", "0", "--yes", "--format", "json"])
        .run()
        .code(0)
        .json();
    child.kill();
    assert_eq!(done["deleted"], 2, "{done}");
    assert!(
        !done.to_string().contains(&running),
        "the running run was selected: {done}"
    );
    assert_eq!(run_ids(&ran), std::slice::from_ref(&running));
    assert!(!ids.contains(&running));
    // Killed, its lease is left by a dead process: now it can go.
    let again = ran
        .fresh()
        .args([
            "runs", "prune", "--status", "running", "--yes", "--format", "json",
        ])
        .run()
        .code(0)
        .json();
    assert_eq!(again["deleted"], 1, "{again}");
    assert!(run_ids(&ran).is_empty());
}

#[test]
fn runs_and_show_report_the_store_size() {
    let (ran, ids) = store_with_runs(2);
    let store = ran.dir().join("canvas.db");
    let listed = ran.fresh().args(["runs"]).run().code(0);
    let err = listed.stderr();
    let line = err.lines().last().unwrap_or_default();
    assert!(
        line.starts_with(&format!("store: {}, ", store.display())) && line.ends_with(", 2 runs"),
        "{err}"
    );
    assert_eq!(listed.stdout().lines().count(), 3, "stdout stays the table");
    // JSON stays an array of runs.
    let json = ran.fresh().args(["runs", "--format", "json"]).run().code(0);
    assert!(json.json().is_array());
    assert!(json.stderr().is_empty(), "{}", json.stderr());

    let shown = ran.fresh().args(["show", &ids[0]]).run().code(0).stdout();
    let field = shown
        .lines()
        .find(|l| l.trim_start().starts_with("store:"))
        .unwrap_or_else(|| panic!("no store line: {shown}"));
    assert!(
        field.contains(&store.display().to_string()) && field.ends_with(", 2 runs)"),
        "{shown}"
    );
    assert!(
        shown.lines().last().unwrap().starts_with("next: "),
        "{shown}"
    );
    let doc = ran
        .fresh()
        .args(["show", &ids[0], "--format", "json"])
        .run()
        .code(0)
        .json();
    assert!(doc["store_bytes"].as_u64().unwrap() > 10_000, "{doc}");
}
