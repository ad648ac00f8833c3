//! `canvas runs`, `show` and `events`: reading stored runs back without running them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{canvas, canvases, events, trace};

/// A canvas that stops at a form with a required `name` and an optional `note`.
const FORM: &str = r#"{"components": {
  "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["UserFillUp:Ask"]},
  "UserFillUp:Ask": {"obj": {"component_name": "UserFillUp", "params": {"enable_tips": true,
      "tips": "Name please", "inputs": {"name": {"name": "Name", "type": "line", "optional": false},
      "note": {"name": "Note", "type": "line", "optional": true}}}}, "downstream": ["Message:Hi"]},
  "Message:Hi": {"obj": {"component_name": "Message", "params": {"content": ["Hi {UserFillUp:Ask@name}"]}}, "downstream": []}}}"#;

/// A private store in a fresh directory.
struct Fixture {
    dir: tempfile::TempDir,
    store: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s.db");
        Fixture { dir, store }
    }

    /// `canvas ARGS... --store S`, returning (exit code, stdout, stderr).
    fn cmd(&self, args: &[&str]) -> (Option<i32>, Vec<u8>, String) {
        let out = canvas()
            .args(args)
            .arg("--store")
            .arg(&self.store)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(!err.contains("panicked"), "{err}");
        (out.status.code(), out.stdout, err)
    }

    /// Like `cmd`, asserting the exit code and returning stdout as text.
    fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.cmd(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        String::from_utf8(out).unwrap()
    }

    /// Run the form canvas (it waits, exit 3); returns (run id, jsonl stdout).
    fn run_form(&self) -> (String, Vec<u8>) {
        let flow = self.dir.path().join("form.json");
        std::fs::write(&flow, FORM).unwrap();
        let (code, out, err) = self.cmd(&["run", "--format", "jsonl", path_str(&flow)]);
        assert_eq!(code, Some(3), "{err}");
        (task_id(&out), out)
    }

    /// Run canvases/hello.json (it finishes); returns (run id, jsonl stdout).
    fn run_hello(&self) -> (String, Vec<u8>) {
        let flow = canvases().join("hello.json");
        let (code, out, err) = self.cmd(&[
            "run",
            "-q",
            "hello there",
            "--format",
            "jsonl",
            path_str(&flow),
        ]);
        assert_eq!(code, Some(0), "{err}");
        (task_id(&out), out)
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

fn task_id(jsonl: &[u8]) -> String {
    events(jsonl)[0]["task_id"].as_str().unwrap().to_string()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON: {text:?}: {e}"))
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect()
}

#[test]
fn runs_lists_newest_first_filters_and_limits() {
    let f = Fixture::new();
    let (form_id, _) = f.run_form();
    let (hello_id, _) = f.run_hello();

    let all = json(&f.ok(&["runs", "--format", "json"]));
    assert_eq!(ids(&all), [hello_id.as_str(), form_id.as_str()]);
    assert_eq!(all[0]["status"], "succeeded");
    assert_eq!(all[1]["status"], "waiting");
    assert_eq!(all[0]["turns"], 1);
    assert!(
        all[0]["source"].as_str().unwrap().ends_with("hello.json"),
        "{all}"
    );
    assert_eq!(all[0]["canvas_hash"].as_str().unwrap().len(), 64);
    assert_eq!(all[1]["waiting"]["inputs"]["name"]["type"], "line");
    assert!(all[0]["waiting"].is_null() && all[0]["error"].is_null());
    assert!(
        all[0].get("canvas").is_none(),
        "the canvas text is left out"
    );

    let waiting = json(&f.ok(&["runs", "--status", "waiting", "--format", "json"]));
    assert_eq!(ids(&waiting), [form_id.as_str()]);
    let failed = json(&f.ok(&["runs", "--status", "FAILED", "--format", "json"]));
    assert_eq!(ids(&failed), Vec::<&str>::new());
    let one = json(&f.ok(&["runs", "--limit", "1", "--format", "json"]));
    assert_eq!(ids(&one), [hello_id.as_str()]);
    let unlimited = json(&f.ok(&["runs", "--limit", "0", "--format", "json"]));
    assert_eq!(ids(&unlimited).len(), 2);

    let table = f.ok(&["runs"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["ID", "STATUS", "TURNS", "UPDATED", "CANVAS"]);
    assert!(
        lines[1].starts_with(&format!("{hello_id}  succeeded")),
        "{table}"
    );
    assert!(lines[1].ends_with("hello.json"), "{table}");
    assert!(
        lines[2].starts_with(&format!("{form_id}  waiting")),
        "{table}"
    );
    assert!(lines[2].ends_with("form.json"), "{table}");

    // An empty selection in a table says so on stderr and prints nothing.
    let (code, out, err) = f.cmd(&["runs", "--status", "cancelled"]);
    assert_eq!(code, Some(0));
    assert!(out.is_empty());
    assert!(err.contains("no cancelled runs in"), "{err}");
}

#[test]
fn runs_rejects_an_unknown_status() {
    let f = Fixture::new();
    let (code, out, err) = f.cmd(&["runs", "--status", "done"]);
    assert_eq!(code, Some(2));
    assert!(out.is_empty());
    assert!(err.contains("done") && err.contains("waiting"), "{err}");
}

#[test]
fn read_only_commands_never_create_the_store() {
    let f = Fixture::new();
    let store = f.dir.path().join("nowhere").join("s.db");
    let run = |args: &[&str]| {
        let out = canvas()
            .args(args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code, out, err) = run(&["runs"]);
    assert_eq!(code, Some(0));
    assert_eq!(out, "");
    assert!(
        err.contains(&format!("no runs in {}", store.display())),
        "{err}"
    );
    let (code, out, _) = run(&["runs", "--format", "json"]);
    assert_eq!(code, Some(0));
    assert_eq!(out.trim(), "[]");
    for cmd in ["show", "events"] {
        let (code, out, err) = run(&[cmd, "latest"]);
        assert_eq!(code, Some(2), "{cmd}: {err}");
        assert!(out.is_empty());
        assert!(err.starts_with("error: no run matches"), "{err}");
    }
    assert!(!store.exists(), "a read-only command created the store");
    assert!(!store.parent().unwrap().exists());
}

#[test]
fn show_waiting_run_explains_the_form_and_how_to_answer() {
    let f = Fixture::new();
    let (id, jsonl) = f.run_form();
    let text = f.ok(&["show", &id]);
    assert!(text.starts_with(&format!("run {id}\n")), "{text}");
    assert!(text.contains("status:  waiting"), "{text}");
    assert!(text.contains("form.json"), "{text}");
    assert!(text.contains("turns:   1"), "{text}");
    let n = events(&jsonl).len();
    assert!(text.contains(&format!("events:  {n}\n")), "{text}");
    let field = |key: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no line for field {key}: {text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(field("name"), ["name", "line", "required"]);
    assert_eq!(field("note"), ["note", "line", "optional"]);
    assert!(text.contains("Name please"), "{text}");
    let next = text.lines().last().unwrap();
    assert_eq!(next, format!("next: canvas resume {id} -i name=…"));

    // A unique prefix and `latest` find the same run.
    assert_eq!(f.ok(&["show", &id[..10]]), text);
    assert_eq!(f.ok(&["show", &id.to_lowercase()]), text);
    assert_eq!(f.ok(&["show", "latest"]), text);

    let doc = json(&f.ok(&["show", &id, "--format", "json"]));
    assert_eq!(doc["id"], id.as_str());
    assert_eq!(doc["status"], "waiting");
    assert_eq!(doc["turns"], 1);
    assert_eq!(doc["events"], n);
    assert_eq!(doc["waiting"]["tips"], "Name please");
    assert!(doc.get("canvas").is_none());
}

#[test]
fn show_finished_run_suggests_the_next_turn() {
    let f = Fixture::new();
    let (form_id, _) = f.run_form();
    let (hello_id, _) = f.run_hello();
    let text = f.ok(&["show", "latest"]);
    assert!(text.starts_with(&format!("run {hello_id}\n")), "{text}");
    assert!(text.contains("status:  succeeded"), "{text}");
    assert!(!text.contains("required"), "{text}");
    assert!(
        text.contains(&format!("next: canvas resume {hello_id} -q ")),
        "{text}"
    );
    // `latest` is the newest run, not the newest waiting one.
    assert!(!text.contains(&form_id));
}

#[test]
fn unknown_run_is_a_usage_error_with_a_hint() {
    let f = Fixture::new();
    f.run_hello();
    for cmd in ["show", "events"] {
        let (code, out, err) = f.cmd(&[cmd, "01NOPE"]);
        assert_eq!(code, Some(2), "{cmd}: {err}");
        assert!(out.is_empty());
        assert!(err.starts_with("error: no run matches \"01NOPE\""), "{err}");
        assert!(
            err.contains("hint: canvas runs lists the stored runs"),
            "{err}"
        );
    }
}

#[test]
fn events_jsonl_is_the_original_output_byte_for_byte() {
    let f = Fixture::new();
    let (hello_id, hello_out) = f.run_hello();
    let replay = f.ok(&["events", &hello_id, "--format", "jsonl"]);
    assert_eq!(replay.as_bytes(), hello_out.as_slice());
    // Not a terminal: jsonl is the default.
    assert_eq!(
        f.ok(&["events", &hello_id]).as_bytes(),
        hello_out.as_slice()
    );

    // Two turns: the form, then its answer.
    let (id, turn1) = f.run_form();
    let (code, turn2, err) = f.cmd(&["resume", &id, "-i", "name=Ada", "--format", "jsonl"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!turn2.is_empty());
    let both = f.ok(&["events", &id, "--format", "jsonl"]);
    assert_eq!(
        both.as_bytes(),
        [turn1.as_slice(), turn2.as_slice()].concat()
    );
    let second = f.ok(&["events", &id, "--turn", "2", "--format", "jsonl"]);
    assert_eq!(second.as_bytes(), turn2.as_slice());
    let first = f.ok(&["events", &id, "--turn", "1", "--format", "jsonl"]);
    assert_eq!(first.as_bytes(), turn1.as_slice());

    let (code, _, err) = f.cmd(&["events", &id, "--turn", "3"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("has 2 turns"), "{err}");
}

#[test]
fn events_sse_frames_every_event_then_done() {
    let f = Fixture::new();
    let (id, jsonl) = f.run_hello();
    let sse = f.ok(&["events", &id, "--format", "sse"]);
    assert!(sse.ends_with("data:[DONE]\n\n"), "{sse}");
    let frames: Vec<&str> = sse.split_terminator("\n\n").collect();
    let (done, data) = frames.split_last().unwrap();
    assert_eq!(*done, "data:[DONE]");
    let from_sse: Vec<Value> = data
        .iter()
        .map(|fr| json(fr.strip_prefix("data:").unwrap_or_else(|| panic!("{fr:?}"))))
        .collect();
    assert_eq!(from_sse, events(&jsonl));
    assert_eq!(trace(&from_sse).last().unwrap(), "workflow_finished");
}

#[test]
fn events_text_shows_the_messages_and_forms() {
    let f = Fixture::new();
    let (id, _) = f.run_hello();
    let text = f.ok(&["events", &id, "--format", "text"]);
    assert!(
        text.contains("Hello to you too! This is turn #1.\n"),
        "{text}"
    );
    assert!(text.contains("✓ Message:Hello"), "{text}");
    assert!(text.contains(&format!("run {id}")), "{text}");
    assert!(!text.contains('\x1b'), "no color off a terminal: {text:?}");

    let (form_id, _) = f.run_form();
    let (code, _, err) = f.cmd(&["resume", &form_id, "-i", "name=Ada", "--format", "jsonl"]);
    assert_eq!(code, Some(0), "{err}");
    let text = f.ok(&["events", &form_id, "--format", "text"]);
    let waits = text.find("? form: name, note").expect(&text);
    // That form was answered since: no next step is suggested.
    assert!(text.contains("⏸ waited for input · "), "{text}");
    assert!(!text.contains("next: canvas resume"), "{text}");
    let turn2 = text.find("── turn 2 ──").expect(&text);
    let hi = text.find("HiAda").expect(&text);
    assert!(waits < turn2 && turn2 < hi, "{text}");
    let only2 = f.ok(&["events", &form_id, "--turn", "2", "--format", "text"]);
    assert!(
        only2.contains("HiAda") && !only2.contains("waiting"),
        "{only2}"
    );
}

#[test]
fn events_names_a_corrupt_stored_chunk() {
    let f = Fixture::new();
    let (id, _) = f.run_hello();
    let conn = rusqlite::Connection::open(&f.store).unwrap();
    let changed = conn
        .execute(
            "UPDATE event_chunks SET body = X'09000000FF' WHERE run_id = ?1 AND seq = 1",
            [&id],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    for format in ["text", "sse", "jsonl"] {
        let (code, out, err) = f.cmd(&["events", &id, "--format", format]);
        assert_eq!(code, Some(1), "{format}: {err}");
        assert!(out.is_empty(), "nothing is printed before the error");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("error: ") && err.contains(&format!("run {id}: stored events 1–")),
            "{err}"
        );
    }
}

#[test]
fn events_names_a_corrupt_event_stored_by_an_older_version() {
    let f = Fixture::new();
    let (id, jsonl) = f.run_hello();
    let conn = rusqlite::Connection::open(&f.store).unwrap();
    // Older versions kept one row per event in `events`: the stream reads them first.
    conn.execute(
        "INSERT INTO events (run_id, seq, turn, body) VALUES (?1, 0, 1, 'not an event')",
        [&id],
    )
    .unwrap();
    drop(conn);
    for format in ["text", "sse"] {
        let (code, out, err) = f.cmd(&["events", &id, "--format", format]);
        assert_eq!(code, Some(1), "{format}: {err}");
        assert!(out.is_empty(), "nothing is printed before the error");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("error: run {id}: stored event 1 ")),
            "{err}"
        );
    }
    // jsonl hands the stored bytes back as they are.
    let raw = f.ok(&["events", &id, "--format", "jsonl"]);
    let lines: Vec<&str> = raw.lines().collect();
    assert_eq!(lines[0], "not an event");
    assert_eq!(lines.len(), events(&jsonl).len() + 1);
    assert_eq!(
        lines[1..].join("\n"),
        String::from_utf8_lossy(&jsonl).trim_end(),
        "the rest byte for byte, as the run printed it"
    );
}

#[test]
fn events_into_a_closed_pipe_exits_quietly() {
    let f = Fixture::new();
    let (id, _) = f.run_hello();
    for format in ["jsonl", "sse", "text"] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("canvas"))
            .args(["events", &id, "--format", format, "--store"])
            .arg(&f.store)
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Closing the read end before the child writes makes every write fail (EPIPE).
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}");
        assert!(out.stderr.is_empty(), "{format}: {:?}", out.stderr);
    }
}

/// `canvas runs` shows 20 runs by default: a full page says how many older runs it
/// leaves out and how to see them.
#[test]
fn runs_says_how_many_older_runs_a_page_leaves_out() {
    let f = Fixture::new();
    for _ in 0..22 {
        f.run_hello();
    }
    let (code, out, err) = f.cmd(&["runs"]);
    assert_eq!(code, Some(0), "{err}");
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out.lines().count(), 21, "a header and 20 runs:\n{out}");
    assert!(
        err.contains("2 older runs not shown: --limit 0 lists every one, --limit N the N newest"),
        "{err}"
    );
    let (_, out, err) = f.cmd(&["runs", "--limit", "0"]);
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 23);
    assert!(!err.contains("not shown"), "{err}");
    let (_, _, err) = f.cmd(&["runs", "--limit", "21", "--status", "succeeded"]);
    assert!(err.contains("1 older succeeded run not shown"), "{err}");
    let (_, out, err) = f.cmd(&["runs", "--limit", "22"]);
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 23);
    assert!(!err.contains("not shown"), "{err}");
    let (_, out, err) = f.cmd(&["runs", "--format", "json"]);
    let rows: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 20);
    assert!(err.contains("2 older runs not shown"), "{err}");
}

/// `canvas show` of a run waiting on a form lists an options field's choices.
#[test]
fn show_lists_the_choices_of_a_waiting_options_field() {
    let f = Fixture::new();
    let trip = canvases().join("trip.yaml");
    let mock = canvases().join("trip.mock.yaml");
    let (code, _, err) = f.cmd(&[
        "run",
        path_str(&trip),
        "-i",
        "destination=Lisbon",
        "--mock-llm",
        path_str(&mock),
        "--format",
        "jsonl",
    ]);
    assert_eq!(code, Some(3), "{err}");
    let shown = f.ok(&["show", "latest"]);
    assert!(shown.contains("    days  integer  required\n"), "{shown}");
    assert!(
        shown.contains("    pace  options  required  one of: relaxed, packed\n"),
        "{shown}"
    );
}
