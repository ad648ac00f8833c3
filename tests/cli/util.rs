//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

/// Upper bound on one command (and on any wait of a test).
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The `canvas` binary under test, with its store in a fresh temporary directory
/// (kept for the whole test process) so tests never touch the user's store.
pub fn canvas() -> Command {
    static STORE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = STORE.get_or_init(|| tempfile::tempdir().expect("temp dir"));
    crate::harness::command(dir.path())
}

/// `../shared` (fixtures, conformance streams). Missing under `CI=true` is a failure;
/// elsewhere the caller skips with a printed reason.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CANVAS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    if dir.join("conformance").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{} is missing: CI must provide ../shared", dir.display());
    }
    eprintln!("skipping: {} is missing (set CANVAS_SHARED)", dir.display());
    None
}

/// The repository's `canvases/` folder.
pub fn canvases() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("canvases")
}

/// Parse JSON lines; every line must be JSON.
pub fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// `event` names, with the component id for node events.
pub fn trace(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let name = e["event"].as_str().unwrap_or("?").to_string();
            match e["data"]["component_id"].as_str() {
                Some(id) => format!("{name} {id}"),
                None => name,
            }
        })
        .collect()
}

/// Run `canvas ARGS --store STORE` to completion (with [`TIMEOUT`]); stdin is not a terminal.
pub fn cli(args: &[&str], store: &Path) -> Output {
    canvas()
        .args(args)
        .arg("--store")
        .arg(store)
        .timeout(TIMEOUT)
        .output()
        .unwrap_or_else(|e| panic!("canvas {args:?}: {e}"))
}

/// The command's stderr, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Panic unless `out` exited with `code`.
pub fn expect_code(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: exit status {}\nstderr: {}",
        out.status,
        stderr(out)
    );
}

/// Every run of the store (`canvas runs --format json --limit 0`).
pub fn runs(store: &Path) -> Vec<Value> {
    let out = cli(&["runs", "--format", "json", "--limit", "0"], store);
    expect_code(&out, 0, "canvas runs");
    match serde_json::from_slice(&out.stdout) {
        Ok(Value::Array(a)) => a,
        other => panic!(
            "canvas runs --format json: not a JSON array: {other:?}\nstdout: {}",
            String::from_utf8_lossy(&out.stdout)
        ),
    }
}

/// The run record (`canvas show --format json`).
pub fn show(store: &Path, run_id: &str) -> Value {
    let out = cli(&["show", run_id, "--format", "json"], store);
    expect_code(&out, 0, "canvas show");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "canvas show --format json: not JSON: {e}\nstdout: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The run's status, from `canvas show`.
pub fn status(store: &Path, run_id: &str) -> String {
    let rec = show(store, run_id);
    match rec["status"].as_str() {
        Some(s) => s.to_string(),
        None => panic!("canvas show: no status in {rec}"),
    }
}

/// The run's stored event stream (`canvas events --format jsonl`).
pub fn stored_events(store: &Path, run_id: &str) -> Vec<Value> {
    let out = cli(&["events", run_id, "--format", "jsonl"], store);
    expect_code(&out, 0, "canvas events");
    events(&out.stdout)
}

/// The final Message content of a stream (`workflow_finished` outputs).
pub fn final_content(evs: &[Value]) -> Option<String> {
    let last = evs.last()?;
    if last["event"] != "workflow_finished" {
        return None;
    }
    last["data"]["outputs"]["content"]
        .as_str()
        .map(str::to_string)
}

/// The text streamed by `message` events.
pub fn streamed(evs: &[Value]) -> String {
    evs.iter()
        .filter(|e| e["event"] == "message")
        .filter_map(|e| e["data"]["content"].as_str())
        .collect()
}

/// The first `message_end` event of a stream.
pub fn message_end(evs: &[Value]) -> &Value {
    evs.iter()
        .find(|e| e["event"] == "message_end")
        .expect("message_end")
}

/// `reference.chunks` of the first `message_end`.
pub fn reference_chunks(evs: &[Value]) -> &serde_json::Map<String, Value> {
    message_end(evs)["data"]["reference"]["chunks"]
        .as_object()
        .expect("reference chunks")
}
