//! Bounds a run keeps whatever its canvas does: the step budget (`--max-steps`) and a
//! reader that goes away (`| head`).

use std::io::Read;
use std::process::Stdio;

use serde_json::Value;

use crate::canvases::loop_canvas;
use crate::util::{cli, events, expect_code, final_content, status, stored_events};

/// Node events of a stream, without the envelope's times (for comparing runs).
fn nodes(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["event"] == "node_finished")
        .map(|e| {
            e["data"]["component_id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn a_step_budget_stops_a_turn_and_resume_continues_it() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("loop.json");
    std::fs::write(&flow, loop_canvas(30).to_string()).unwrap();
    let flow = flow.to_str().unwrap();
    let reference = cli(
        &["run", flow, "--format", "jsonl"],
        &dir.path().join("ref.db"),
    );
    expect_code(&reference, 0, "reference run");
    let total = nodes(&events(&reference.stdout)).len();
    assert!(total > 60, "{total} nodes");

    let store = dir.path().join("s.db");
    let out = cli(
        &["run", flow, "--format", "jsonl", "--max-steps", "25"],
        &store,
    );
    expect_code(&out, 1, "run at the budget");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("stopped after 25 components (--max-steps)"),
        "{err}"
    );
    assert!(err.contains("canvas resume"), "{err}");
    // 25 components ran: begin, Loop:L (whose node_finished comes when it ends) and 23
    // of its body.
    assert_eq!(nodes(&events(&out.stdout)).len(), 24);
    let run_id = events(&out.stdout)[0]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(status(&store, &run_id), "interrupted");

    // Each resume gets the budget the run was started with (it remembers its options).
    let mut resumes = 0;
    while status(&store, &run_id) != "succeeded" {
        resumes += 1;
        assert!(
            resumes <= total / 25 + 1,
            "still not finished after {resumes} resumes"
        );
        let before = nodes(&stored_events(&store, &run_id)).len();
        let out = cli(&["resume", &run_id, "--format", "jsonl"], &store);
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "resume: {:?}",
            out.status
        );
        // The resume shows the turn's stored events first, then runs at most 25 more.
        let after = nodes(&stored_events(&store, &run_id)).len();
        assert!(
            after > before && after <= before + 25,
            "{before} -> {after}"
        );
        assert_eq!(nodes(&events(&out.stdout)).len(), after);
    }
    assert_eq!(resumes, total.div_ceil(25) - 1);
    let stored = stored_events(&store, &run_id);
    assert_eq!(nodes(&stored), nodes(&events(&reference.stdout)));
    assert_eq!(final_content(&stored).as_deref(), Some("i=30"));
}

#[test]
fn a_closed_stdout_stops_the_run_quietly_with_the_broken_pipe_code() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("loop.json");
    std::fs::write(&flow, loop_canvas(3000).to_string()).unwrap();
    let store = dir.path().join("s.db");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("canvas"))
        .args(["run", "--format", "jsonl", "--store"])
        .arg(&store)
        .arg(&flow)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read the first event's line, then go away, as `| head -1` does.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = Vec::new();
    let mut byte = [0u8; 1];
    while stdout.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        first.push(byte[0]);
    }
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first: Value = serde_json::from_slice(&first).unwrap();
    let run_id = first["task_id"].as_str().unwrap();
    // Stored and resumable: resume finishes it.
    assert_eq!(status(&store, run_id), "interrupted");
    let out = cli(&["resume", run_id, "--format", "jsonl"], &store);
    expect_code(&out, 0, "resume");
    assert_eq!(status(&store, run_id), "succeeded");
    assert_eq!(
        final_content(&stored_events(&store, run_id)).as_deref(),
        Some("i=3000")
    );
}

/// A chain of `n` StringTransforms, each passing the query on, then a Message.
fn pass_on_chain(n: usize) -> Value {
    let mut comps = serde_json::Map::new();
    comps.insert(
        "begin".into(),
        serde_json::json!({"obj": {"component_name": "Begin", "params": {"mode": "conversational", "inputs": {}}},
                           "downstream": ["StringTransform:T0"]}),
    );
    for i in 0..n {
        let script = if i == 0 {
            "{sys.query}".to_string()
        } else {
            format!("{{StringTransform:T{}@result}}", i - 1)
        };
        let next = if i + 1 < n {
            format!("StringTransform:T{}", i + 1)
        } else {
            "Message:M".into()
        };
        comps.insert(
            format!("StringTransform:T{i}"),
            serde_json::json!({"obj": {"component_name": "StringTransform",
                                       "params": {"method": "merge", "script": script, "delimiters": [","]}},
                               "downstream": [next]}),
        );
    }
    comps.insert(
        "Message:M".into(),
        serde_json::json!({"obj": {"component_name": "Message",
                                   "params": {"content": [format!("{{StringTransform:T{}@result}}", n - 1)]}},
                           "downstream": []}),
    );
    serde_json::json!({"components": comps, "path": [], "history": []})
}

#[test]
fn a_large_input_is_stored_once_however_often_the_run_repeats_it() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("chain.json");
    std::fs::write(&flow, pass_on_chain(8).to_string()).unwrap();
    // 2 MB that LZ4 cannot shrink much: hex of a pseudo-random sequence.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let query: String = (0..2_000_000 / 16)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{x:016x}")
        })
        .collect();
    let qfile = dir.path().join("q.txt");
    std::fs::write(&qfile, &query).unwrap();
    let store = dir.path().join("s.db");
    let at_q = format!("@{}", qfile.display());
    let out = cli(
        &[
            "run",
            flow.to_str().unwrap(),
            "-q",
            &at_q,
            "--format",
            "jsonl",
        ],
        &store,
    );
    expect_code(&out, 0, "run");
    let evs = events(&out.stdout);
    assert_eq!(final_content(&evs).as_deref(), Some(query.as_str()));
    // The stream repeats the query in every node's inputs and outputs…
    assert!(out.stdout.len() > 15 * query.len(), "{}", out.stdout.len());
    // …the store keeps it in the turn (the query as given), once for all the events and
    // checkpoints, and in the two conversation lines of the state that quote it ("user:
    // …", "assistant: …"): 4 copies and free pages, where it used to be about 35.
    let file = |suffix: &str| {
        std::fs::metadata(format!("{}{suffix}", store.display())).map_or(0, |m| m.len())
    };
    let stored = file("") + file("-wal");
    assert!(
        stored < 6 * query.len() as u64,
        "{stored} bytes stored for a query of {}",
        query.len()
    );
    // And the stored stream is the one shown, byte for byte.
    let run_id = evs[0]["task_id"].as_str().unwrap();
    let replay = cli(&["events", run_id], &store);
    expect_code(&replay, 0, "events");
    assert!(replay.stdout == out.stdout, "the stored stream differs");
}
