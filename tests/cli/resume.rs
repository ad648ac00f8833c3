//! `canvas resume`: answering a form, the next turn, and refusals.

use serde_json::json;

use crate::canvases::FORM;
use crate::harness::CanvasCli;
use crate::util::{canvas, events, expect_code, trace};

/// Write the FORM canvas in a temp dir and run it with `-q query` on its own store.
fn run_form(
    query: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    std::process::Output,
) {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("form.json");
    std::fs::write(&flow, FORM).unwrap();
    let store = dir.path().join("s.db");
    let out = CanvasCli::new()
        .args(["run", "-q", query, "--format", "jsonl", "--store"])
        .arg(&store)
        .arg(&flow)
        .run()
        .into_output();
    (dir, flow, store, out)
}

#[test]
fn form_pauses_then_resume_answers_it() {
    let (_dir, _flow, store, out) = run_form("book");
    expect_code(&out, 3, "run");
    let evs = events(&out.stdout);
    let last = evs.last().unwrap();
    assert_eq!(last["event"], "user_inputs");
    assert_eq!(last["data"]["tips"], "You asked 'book'. Name?");
    assert_eq!(
        last["data"]["inputs"]["name"],
        json!({"name": "Name", "type": "line", "optional": false, "value": null})
    );
    let run_id = last["task_id"].as_str().unwrap().to_string();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&format!(
            "waiting for input: canvas resume {run_id} -i name="
        )),
        "{err}"
    );

    // A required answer missing: still waiting, nothing run.
    let out = canvas()
        .args([
            "resume", &run_id, "-i", "note=x", "--format", "jsonl", "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("-i name="));

    // Answered (by a unique prefix of the id): the run goes on, no workflow_started.
    let prefix = &run_id[..12];
    let out = canvas()
        .args([
            "resume", prefix, "-i", "name=Ada", "--format", "jsonl", "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    expect_code(&out, 0, "resume");
    let evs = events(&out.stdout);
    assert_eq!(trace(&evs)[0], "node_started UserFillUp:Ask");
    assert_eq!(
        evs.last().unwrap()["data"]["outputs"]["content"],
        "HiAda(book, turn2)"
    );
    assert!(evs.iter().all(|e| e["task_id"] == run_id.as_str()));

    // The next turn is a normal turn from Begin (RAGFlow's resume bug fixed).
    let out = canvas()
        .args([
            "resume", "latest", "-q", "again", "--format", "jsonl", "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let evs = events(&out.stdout);
    assert_eq!(trace(&evs)[..2], ["workflow_started", "node_started begin"]);
}

#[test]
fn changed_canvas_is_refused_unless_allowed() {
    let (_dir, flow, store, out) = run_form("x");
    let run_id = events(&out.stdout)[0]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(&flow, FORM.replace("Name?", "Your name?")).unwrap();
    let out = canvas()
        .args(["resume", &run_id, "-i", "name=A", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("changed since run") && err.contains("--canvas-changed=ok"),
        "{err}"
    );
    let out = canvas()
        .args([
            "resume",
            &run_id,
            "-i",
            "name=A",
            "--canvas-changed=ok",
            "--format",
            "jsonl",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    expect_code(&out, 0, "resume");
}

#[test]
fn unknown_run_id() {
    let dir = tempfile::tempdir().unwrap();
    let out = canvas()
        .args(["resume", "01NOPE", "--store"])
        .arg(dir.path().join("s.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
}
