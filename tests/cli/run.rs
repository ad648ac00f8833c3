//! `canvas run`: formats, inputs, stdin, YAML.

use serde_json::json;

use crate::canvases::{begin, loop_canvas, with_globals};
use crate::harness::CanvasCli;
use crate::util::{canvases, trace};

#[test]
fn hello_canvas_streams_ragflow_events() {
    let evs = CanvasCli::new()
        .args(["run", "--format", "jsonl", "-q", "hello there"])
        .arg(canvases().join("hello.json"))
        .run()
        .code(0)
        .events();
    assert_eq!(
        trace(&evs),
        [
            "workflow_started",
            "node_started begin",
            "node_finished begin",
            "node_started Switch:Greeting",
            "node_finished Switch:Greeting",
            "node_started Message:Hello",
            "message",
            "message",
            "message",
            "message_end",
            "node_finished Message:Hello",
            "workflow_finished",
        ]
    );
    // The streamed pieces: spaces around the reference are eaten, as RAGFlow does.
    let pieces: Vec<_> = evs
        .iter()
        .filter(|e| e["event"] == "message")
        .map(|e| e["data"]["content"].clone())
        .collect();
    assert_eq!(
        pieces,
        [
            json!("Hello to you too! This is turn #"),
            json!("1"),
            json!(".")
        ]
    );
    let run_id = evs[0]["task_id"].as_str().unwrap();
    assert_eq!(run_id.len(), 26, "a ULID run id");
    assert!(
        evs.iter()
            .all(|e| e["task_id"] == run_id && e["message_id"] == evs[0]["message_id"])
    );
    assert_eq!(
        evs.last().unwrap()["data"]["outputs"]["content"],
        "Hello to you too! This is turn #1."
    );
}

#[test]
fn sse_frames_end_with_done() {
    let s = CanvasCli::new()
        .args(["run", "--format", "sse", "-q", "x"])
        .arg(canvases().join("hello.json"))
        .run()
        .code(0)
        .stdout();
    assert!(s.starts_with("data:{\"event\":\"workflow_started\""), "{s}");
    assert!(s.ends_with("data:[DONE]\n\n"), "{s}");
    assert_eq!(s.matches("\n\n").count(), s.matches("data:").count());
}

#[test]
fn stdin_and_text_output() {
    let text = std::fs::read_to_string(canvases().join("hello.json")).unwrap();
    let s = CanvasCli::new()
        .args(["run", "-", "-q", "ping", "--format", "text"])
        .stdin(text)
        .run()
        .code(0)
        .stdout();
    assert!(s.starts_with("✓ begin (Begin)"), "{s}");
    assert!(
        s.contains("\nYou said \"ping\".\n✓ Message:Echo (Message)"),
        "{s}"
    );
    let summary = s.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("✓ finished · 3 nodes · ") && summary.contains(" · run "),
        "{s}"
    );
}

#[test]
fn yaml_canvas_with_typed_begin_inputs() {
    let cli = CanvasCli::new().file(
        "flow.yaml",
        r#"
components:
  begin:
    obj:
      component_name: Begin
      params:
        mode: task
        inputs:
          name: {name: Name, type: line}
          age: {name: Age, type: integer}
    downstream: ["Message:Out"]
  "Message:Out":
    obj: {component_name: Message, params: {content: ["{begin@name} is {begin@age} ({sys.query})"]}}
    downstream: []
"#,
    );
    let evs = cli
        .args(["run", "-i", "name=Ada", "-i", "age=36", "--format", "jsonl"])
        .arg("flow.yaml")
        .run()
        .code(0)
        .events();
    assert_eq!(
        evs[0]["data"]["inputs"],
        json!({"name": {"value": "Ada", "type": "line"}, "age": {"value": 36, "type": "integer"}})
    );
    let begin = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "begin")
        .unwrap();
    assert_eq!(begin["data"]["outputs"]["age"], 36);
    assert_eq!(
        evs.last().unwrap()["data"]["outputs"]["content"],
        "Adais36()"
    );
}

#[test]
fn yaml_example_runs_iteration_and_loop() {
    let evs = CanvasCli::new()
        .args(["run", "--format", "jsonl", "-q", "red,green,blue"])
        .arg(canvases().join("word-stats.yaml"))
        .run()
        .code(0)
        .events();
    assert_eq!(
        evs.last().unwrap()["data"]["outputs"]["content"],
        "words: [\"RED!\", \"GREEN!\", \"BLUE!\"] (loop ran 3 times)"
    );
}

#[test]
fn inputs_file_in_api_shape() {
    let cli = CanvasCli::new()
        .file("in.json", r#"{"x": {"type": "object", "value": "{\"a\": 1}"}}"#)
        .file(
            "flow.json",
            r#"{"components": {"begin": {"obj": {"component_name": "Begin", "params": {"inputs": {"x": {"type": "object"}}}}, "downstream": ["Message:M"]},
            "Message:M": {"obj": {"component_name": "Message", "params": {"content": ["a={begin@x.a}"]}}, "downstream": []}}}"#,
        );
    let evs = cli
        .args([
            "run",
            "--format",
            "jsonl",
            "--inputs",
            "in.json",
            "flow.json",
        ])
        .run()
        .code(0)
        .events();
    assert_eq!(evs.last().unwrap()["data"]["outputs"]["content"], "a=1");
}

#[test]
fn the_support_example_runs_offline_with_its_mock_script() {
    let dir = canvases();
    let evs = CanvasCli::new()
        .args([
            "run",
            "--format",
            "jsonl",
            "-q",
            "my order is broken",
            "--mock-llm",
        ])
        .arg(dir.join("support.mock.yaml"))
        .arg(dir.join("support.yaml"))
        .run()
        .code(0)
        .events();
    let last = evs.last().unwrap();
    assert_eq!(last["event"], "workflow_finished");
    assert_eq!(
        last["data"]["outputs"]["content"],
        "The customer is upset.I am sorry about that. A replacement is on its way."
    );
    assert_eq!(last["data"]["usage"]["calls"], 2);
}

/// Begin takes `who`; a form asks `days` (integer) and `pace` (options).
const TWO_STEP: &str = r#"{"components": {
  "begin": {"obj": {"component_name": "Begin", "params": {"inputs": {
      "who": {"name": "Who", "type": "line", "optional": false}}}},
    "downstream": ["UserFillUp:Plan"]},
  "UserFillUp:Plan": {"obj": {"component_name": "UserFillUp", "params": {"inputs": {
      "days": {"name": "Days", "type": "integer", "optional": false},
      "pace": {"name": "Pace", "type": "options", "options": ["relaxed", "packed"], "optional": false}}}},
    "downstream": ["Message:Done"]},
  "Message:Done": {"obj": {"component_name": "Message", "params": {"stream": false, "content": [
    "{begin@who}: {UserFillUp:Plan@days} days, {UserFillUp:Plan@pace}"]}},
    "downstream": []}}}"#;

/// `canvas run two.json`, `TWO_STEP` written as `two.json`.
fn two_step() -> CanvasCli {
    CanvasCli::new()
        .file("two.json", TWO_STEP)
        .args(["run", "two.json"])
}

#[test]
fn form_answers_given_up_front_answer_the_form_when_it_is_reached() {
    let evs = two_step()
        .args(["-i", "who=Ada", "-i", "days=4", "-i", "pace=packed"])
        .args(["--format", "jsonl"])
        .run()
        .code(0)
        .events();
    // Begin gets only its own field; the form's answers wait for the form.
    assert_eq!(
        evs[0]["data"]["inputs"],
        json!({"who": {"value": "Ada", "type": "line"}})
    );
    let form = evs
        .iter()
        .position(|e| e["event"] == "user_inputs")
        .unwrap();
    let done = evs.last().unwrap();
    assert_eq!(done["event"], "workflow_finished");
    assert!(form < evs.len() - 1);
    // The answer is typed by the form: 4 is an integer.
    let answered = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "UserFillUp:Plan")
        .unwrap();
    assert_eq!(answered["data"]["outputs"]["days"], json!(4));
    assert_eq!(done["data"]["outputs"]["content"], "Ada: 4 days, packed");
}

#[test]
fn a_form_answered_in_part_up_front_waits_and_says_what_is_missing() {
    let ran = two_step()
        .args(["-i", "who=Ada", "-i", "days=4", "--format", "jsonl"])
        .run()
        .code(3)
        .stderr_contains("waiting for input: canvas resume ")
        .stderr_contains("-i pace=");
    // The run by its id, in the same store.
    let id = ran.events()[0]["task_id"].as_str().unwrap().to_string();
    let evs = ran
        .fresh()
        .args([
            "resume",
            &id,
            "-i",
            "days=1",
            "-i",
            "pace=relaxed",
            "--format",
            "jsonl",
        ])
        .run()
        .code(0)
        .events();
    assert_eq!(
        evs.last().unwrap()["data"]["outputs"]["content"],
        "Ada: 1 days, relaxed"
    );
}

/// The times a run's events give follow the run: each component finishes after its
/// invoke ended, in the order the events come, a `node_started` does not name a second
/// after its component's start, and a streaming Message's time covers its stream. Run on
/// a chain of instant components (a Loop, where the scheduler reuses a reading of the
/// clock it has just taken), and on two slow models in one batch streamed by a Message.
#[test]
fn the_times_of_a_runs_events_follow_the_run() {
    let words = 12;
    let chunk_delay_ms = 10;
    let answer: Vec<String> = (1..=words).map(|i| format!("w{i}")).collect();
    let fanout = with_globals(
        [
            ("begin".to_string(), {
                let mut b = begin("LLM:A");
                b["downstream"] = json!(["LLM:A", "LLM:B"]);
                b
            }),
            ("LLM:A".to_string(), llm_into("Message:Out")),
            ("LLM:B".to_string(), llm_into("Message:Out")),
            (
                "Message:Out".to_string(),
                json!({
                    "obj": {"component_name": "Message",
                            "params": {"content": ["{LLM:A@content} / {LLM:B@content}"]}},
                    "downstream": [],
                    "upstream": ["LLM:A", "LLM:B"]
                }),
            ),
        ]
        .into_iter()
        .collect(),
    );
    let mock = json!({
        "rules": [], "default": answer.join(" "), "chunk": "word",
        "delay_ms": 30, "chunk_delay_ms": chunk_delay_ms
    });
    let cli = CanvasCli::new().json("fanout.json", &fanout);
    let flow = cli.path("fanout.json");
    let evs = cli
        .args(["run", "--format", "jsonl", "-q", "go"])
        .arg(flow)
        .mock_llm(&mock)
        .run()
        .code(0)
        .events();
    check_times(&evs);
    let out = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "Message:Out")
        .expect("Message:Out finished");
    // Both answers are drained through the Message, a chunk every `chunk_delay_ms`.
    let streamed = 2.0 * f64::from(words - 1) * f64::from(chunk_delay_ms) / 1000.0;
    let took = out["data"]["elapsed_time"].as_f64().expect("elapsed_time");
    assert!(
        took >= streamed,
        "Message:Out took {took} s by its event, but streaming alone took at least {streamed} s"
    );

    let cli = CanvasCli::new().json("loop.json", &loop_canvas(300));
    let flow = cli.path("loop.json");
    let evs = cli
        .args(["run", "--format", "jsonl"])
        .arg(flow)
        .run()
        .code(0)
        .events();
    let finished = evs.iter().filter(|e| e["event"] == "node_finished").count();
    // begin, each pass's LoopItem and VariableAssigner, the LoopItem that ends the Loop,
    // the Loop, the Message.
    assert_eq!(finished, 1 + 2 * 300 + 1 + 1 + 1);
    check_times(&evs);
}

/// A model component answering into `downstream`.
fn llm_into(downstream: &str) -> serde_json::Value {
    json!({
        "obj": {"component_name": "LLM", "params": {
            "llm_id": "fake-chat@Fake", "sys_prompt": "",
            "prompts": [{"role": "user", "content": "{sys.query}"}],
            "outputs": {"content": {"type": "string", "value": ""}}
        }},
        "downstream": [downstream],
        "upstream": ["begin"]
    })
}

/// The checks of [`the_times_of_a_runs_events_follow_the_run`] on one run's events.
fn check_times(evs: &[serde_json::Value]) {
    // Floats written and read back: allow for the last bits.
    const SLACK: f64 = 1e-6;
    let mut last_end = f64::NEG_INFINITY;
    let mut started_at = std::collections::HashMap::new();
    for e in evs {
        let d = &e["data"];
        let id = d["component_id"].as_str().unwrap_or_default().to_string();
        match e["event"].as_str() {
            Some("node_started") => {
                let second = d["created_at"].as_i64().expect("created_at");
                assert!(
                    second as f64 >= last_end.floor(),
                    "{id} started in second {second}, before the component before it ended ({last_end})"
                );
                started_at.insert(id, second);
            }
            Some("node_finished") => {
                let created = d["created_at"].as_f64().expect("created_at");
                let end = created + d["elapsed_time"].as_f64().expect("elapsed_time");
                let outputs = &d["outputs"];
                let invoked = outputs["_created_time"].as_f64().expect("_created_time");
                let invoke_end =
                    invoked + outputs["_elapsed_time"].as_f64().expect("_elapsed_time");
                assert!(
                    end + SLACK >= invoke_end,
                    "{id} finished at {end}, before its invoke ended at {invoke_end}"
                );
                assert!(
                    end + SLACK >= last_end,
                    "{id} finished at {end}, before the component finished before it ({last_end})"
                );
                let second = started_at.get(&id).copied().expect("a node_started first");
                assert!(
                    second as f64 <= invoked.floor(),
                    "{id}: node_started gives second {second}, after its invoke began at {invoked}"
                );
                last_end = end;
            }
            _ => {}
        }
    }
    assert!(last_end.is_finite(), "no node_finished");
}
