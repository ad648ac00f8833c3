//! Helpers shared by the integration tests.

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

/// The `canvas` binary under test, with its store in a fresh temporary directory
/// (kept for the whole test process) so tests never touch the user's store.
pub fn canvas() -> Command {
    static STORE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = STORE.get_or_init(|| tempfile::tempdir().expect("temp dir"));
    let mut c = Command::cargo_bin("canvas").expect("binary is built");
    c.env("CANVAS_STORE", dir.path().join("canvas.db"))
        .env("NO_COLOR", "1")
        .env("HOME", dir.path());
    c
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
