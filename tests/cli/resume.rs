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

/// `begin → UserFillUp:Ask (name) → LLM:Greet → Message:Out`: the model is called only
/// after the form is answered, so the answer's model source is the resume's.
const FORM_THEN_MODEL: &str = r#"{"components": {
  "begin": {"obj": {"component_name": "Begin", "params": {"mode": "conversational", "inputs": {}}},
            "downstream": ["UserFillUp:Ask"], "upstream": []},
  "UserFillUp:Ask": {"obj": {"component_name": "UserFillUp", "params": {"enable_tips": true, "tips": "Name?",
            "inputs": {"name": {"name": "Name", "type": "line", "optional": false}}}},
            "downstream": ["LLM:Greet"], "upstream": ["begin"]},
  "LLM:Greet": {"obj": {"component_name": "LLM", "params": {"llm_id": "qwen2.5:7b@Ollama",
            "sys_prompt": "You greet people.", "prompts": [{"role": "user", "content": "{UserFillUp:Ask@name}"}]}},
            "downstream": ["Message:Out"], "upstream": ["UserFillUp:Ask"]},
  "Message:Out": {"obj": {"component_name": "Message", "params": {"content": ["{LLM:Greet@content}"]}},
            "downstream": [], "upstream": ["LLM:Greet"]}
}, "globals": {"sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0, "sys.files": [], "sys.history": []},
   "history": [], "path": [], "retrieval": [], "variables": {}}"#;

#[test]
fn resume_runs_with_the_options_the_run_was_started_with() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flow.json"), FORM_THEN_MODEL).unwrap();
    std::fs::write(
        dir.path().join("mock.yaml"),
        "rules: []\ndefault: \"Hello from the script\"\n",
    )
    .unwrap();
    let store = dir.path().join("s.db");
    // Started with a relative --mock-llm, in the canvas's directory.
    let out = canvas()
        .current_dir(dir.path())
        .args([
            "run",
            "flow.json",
            "--mock-llm",
            "mock.yaml",
            "--format",
            "jsonl",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    expect_code(&out, 3, "run");
    // Resumed from elsewhere without it, and with no provider configured (HOME is empty,
    // and a provider would be refused: nothing listens on 11434 here).
    let elsewhere = tempfile::tempdir().unwrap();
    let out = canvas()
        .current_dir(elsewhere.path())
        .env("HOME", elsewhere.path())
        .env_remove("CANVAS_LLM_CONFIG")
        .args([
            "resume", "latest", "-i", "name=Ada", "--format", "jsonl", "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    expect_code(&out, 0, "resume");
    let evs = events(&out.stdout);
    assert_eq!(
        evs.last().unwrap()["data"]["outputs"]["content"],
        "Hello from the script"
    );
}

#[test]
fn a_finished_run_is_not_resumed_again() {
    let (_dir, _flow, store, out) = run_form("book");
    expect_code(&out, 3, "run");
    let out = canvas()
        .args([
            "resume", "latest", "-i", "name=Ada", "--format", "jsonl", "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    expect_code(&out, 0, "answer");
    let before = crate::util::show(&store, "latest");
    assert_eq!(before["status"], "succeeded");

    let out = canvas()
        .args(["resume", "latest", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    expect_code(&out, 2, "resume of a finished run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("already finished (succeeded)") && err.contains("-q TEXT"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let after = crate::util::show(&store, "latest");
    assert_eq!(after["status"], "succeeded");
    assert_eq!(after["turns"], before["turns"]);

    // With -q it is the next conversational turn, as before.
    let out = canvas()
        .args([
            "resume", "latest", "-q", "again", "--format", "jsonl", "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    expect_code(&out, 3, "next turn");
}
