//! Model features end to end: the scripted mock with an Agent and a sub-Agent, tools this
//! build does not run, retries against an OpenAI-compatible server, provider checks
//! before the run, the default model, record/replay, and keys kept out of every output.
//! The "provider" is a fake OpenAI-compatible server on 127.0.0.1: nothing reaches the
//! internet.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::harness::CanvasCli;
use crate::peer::{FakeServer, Reply};
use crate::util::{events, expect_code, stderr, trace};

// ---------------------------------------------------------------------------------------
// Helpers.

/// `canvas` without any provider configuration or key from the environment of the test
/// process (the configuration file under the private HOME does not exist).
pub(crate) fn bare() -> CanvasCli {
    [
        "CANVAS_LLM_CONFIG",
        "XDG_CONFIG_HOME",
        "OPENAI_API_COMPATIBLE_KEY",
        "DEEPSEEK_API_KEY",
        "OLLAMA_HOST",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .into_iter()
    .fold(CanvasCli::new(), CanvasCli::env_remove)
}

/// Write `text` to `dir/name`.
pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    f
}

/// Write a canvas (JSON) to `dir/name`.
pub(crate) fn write_canvas(dir: &Path, name: &str, dsl: &Value) -> PathBuf {
    write(dir, name, &serde_json::to_string_pretty(dsl).unwrap())
}

/// `llm.yaml` with one model pointing at the fake server.
fn llm_config(dir: &Path, llm_id: &str, server: &FakeServer, extra: &str) -> PathBuf {
    write(
        dir,
        "llm.yaml",
        &format!(
            "models:\n  \"{llm_id}\":\n    base_url: \"{}\"\n{extra}",
            server.base_url()
        ),
    )
}

/// `begin → LLM:G → Message:M ["{LLM:G@content}"]`.
fn llm_canvas(llm_id: &str, extra: Value) -> Value {
    let mut params = json!({
        "llm_id": llm_id,
        "sys_prompt": "You answer briefly.",
        "prompts": [{"role": "user", "content": "{sys.query}"}],
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:G"]},
        "LLM:G": {"obj": {"component_name": "LLM", "params": params}, "downstream": ["Message:M"]},
        "Message:M": {"obj": {"component_name": "Message",
            "params": {"content": ["{LLM:G@content}"]}}, "downstream": []},
    }})
}

/// The `node_finished` event of a component.
pub(crate) fn finished<'a>(evs: &'a [Value], id: &str) -> &'a Value {
    evs.iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == id)
        .unwrap_or_else(|| panic!("no node_finished for {id}: {:?}", trace(evs)))
}

/// The non-empty text of the `message` events (think markers left out), in order.
pub(crate) fn message_texts(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["event"] == "message")
        .filter(|e| e["data"]["start_to_think"] != true && e["data"]["end_to_think"] != true)
        .filter_map(|e| e["data"]["content"].as_str())
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The one `error:` line of stderr (hints and causes aside).
pub(crate) fn one_error_line(out: &Output) -> String {
    let err = stderr(out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("hint:") && !l.starts_with("caused by:"))
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "one error line expected: {err:?}");
    assert!(lines[0].starts_with("error: "), "{err:?}");
    assert!(!err.contains("panicked"), "{err}");
    lines[0].to_string()
}

/// The `hint:` line that follows an error.
fn hint_line(out: &Output) -> String {
    let err = stderr(out);
    let hints: Vec<&str> = err.lines().filter(|l| l.starts_with("hint: ")).collect();
    assert_eq!(hints.len(), 1, "one hint line expected: {err:?}");
    hints[0].to_string()
}

/// What two runs must share: event kinds, component ids, message texts, outputs and
/// usage; ids and times left out.
fn comparable(evs: &[Value]) -> Vec<Value> {
    let strip = |v: &Value| -> Value {
        match v.as_object() {
            Some(o) => Value::Object(
                o.iter()
                    .filter(|(k, _)| !k.starts_with('_'))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            None => v.clone(),
        }
    };
    evs.iter()
        .map(|e| {
            let d = &e["data"];
            json!({
                "event": e["event"],
                "component_id": d["component_id"],
                "content": if e["event"] == "message" { d["content"].clone() } else { Value::Null },
                "start_to_think": d["start_to_think"],
                "end_to_think": d["end_to_think"],
                "outputs": strip(&d["outputs"]),
                "error": d["error"],
                "usage": d["usage"],
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
fn agent_calls_a_sub_agent_over_two_rounds_then_streams_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let flow = write_canvas(
        dir.path(),
        "boss.json",
        &json!({"components": {
            "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Agent:Boss"]},
            "Agent:Boss": {"obj": {"component_name": "Agent", "params": {
                "llm_id": "",
                "sys_prompt": "You lead.",
                "prompts": [{"role": "user", "content": "{sys.query}"}],
                "max_rounds": 3,
                "tools": [{"component_name": "Agent", "name": "Researcher", "params": {
                    "llm_id": "",
                    "sys_prompt": "You research.",
                    "description": "Finds facts.",
                }}],
            }}, "downstream": ["Message:Out"]},
            "Message:Out": {"obj": {"component_name": "Message",
                "params": {"content": ["Answer: {Agent:Boss@content}"]}}, "downstream": []},
        }}),
    );
    let mock = write(
        dir.path(),
        "mock.yaml",
        r#"
rules:
  - match: find alpha
    answer: FACT-A
  - match: find beta
    answer: FACT-B
  - match: FACT-B
    on: any
    answer: "Done: alpha and beta."
  - match: FACT-A
    on: any
    tool_calls:
      - name: Researcher_0
        arguments: {user_prompt: find beta}
  - match: Plan
    tool_calls:
      - name: Researcher_0
        arguments: {user_prompt: find alpha}
"#,
    );
    let out = bare()
        .args([
            "run",
            "-q",
            "Plan my trip",
            "--format",
            "jsonl",
            "--mock-llm",
        ])
        .arg(&mock)
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 0, "canvas run with a sub-Agent");
    let evs = events(&out.stdout);
    let t = trace(&evs);

    // The supervisor streams into the Message: its node_finished comes after message_end.
    let after_begin: Vec<&str> = t
        .iter()
        .map(String::as_str)
        .skip_while(|e| *e != "node_started Agent:Boss")
        .collect();
    let n = after_begin.len();
    assert!(n >= 6, "{t:?}");
    assert_eq!(
        after_begin[..2],
        ["node_started Agent:Boss", "node_started Message:Out"],
        "{t:?}"
    );
    assert!(
        after_begin[2..n - 4].iter().all(|e| *e == "message"),
        "{t:?}"
    );
    assert_eq!(
        after_begin[n - 4..],
        [
            "message_end",
            "node_finished Agent:Boss",
            "node_finished Message:Out",
            "workflow_finished"
        ],
        "{t:?}"
    );

    // The streamed text ends with the supervisor's final answer.
    let texts = message_texts(&evs);
    let all = texts.concat();
    assert!(all.starts_with("Answer:"), "{texts:?}");
    assert!(all.ends_with("Done: alpha and beta."), "{texts:?}");

    // A tool call is announced between think markers. The second round's identical
    // announcement starts with all the text streamed so far, so RAGFlow's think
    // splitter takes it for a cumulative chunk and drops it (`llm-and-tools.md` §3.4
    // item 1): one announcement shows.
    let msgs: Vec<&Value> = evs.iter().filter(|e| e["event"] == "message").collect();
    let announced = msgs.windows(3).filter(|w| {
        w[0]["data"]["start_to_think"] == true
            && w[1]["data"]["content"]
                .as_str()
                .is_some_and(|s| s.contains("Running the Researcher_0 tool..."))
            && w[2]["data"]["end_to_think"] == true
    });
    assert_eq!(
        announced.count(),
        1,
        "one announced tool call expected: {msgs:?}"
    );

    let message = finished(&evs, "Message:Out");
    let content = message["data"]["outputs"]["content"].as_str().unwrap();
    assert!(content.ends_with("Done: alpha and beta."), "{content:?}");

    // Three supervisor calls and two sub-Agent calls.
    let boss = finished(&evs, "Agent:Boss");
    assert_eq!(boss["data"]["usage"]["calls"], 5, "{boss}");
    let usage = &boss["data"]["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap(),
        "{usage}"
    );
    let last = evs.last().unwrap();
    assert_eq!(last["data"]["usage"]["calls"], 5, "{last}");
}

#[test]
fn a_tool_this_build_does_not_run_fails_the_agent_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let flow = write_canvas(
        dir.path(),
        "search.json",
        &json!({"components": {
            "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Agent:Searcher"]},
            "Agent:Searcher": {"obj": {"component_name": "Agent", "params": {
                "llm_id": "",
                "sys_prompt": "You search.",
                "prompts": [{"role": "user", "content": "{sys.query}"}],
                "tools": [{"component_name": "Bing", "name": "Bing", "params": {}}],
            }}, "downstream": ["Message:Out"]},
            "Message:Out": {"obj": {"component_name": "Message",
                "params": {"content": ["{Agent:Searcher@content}"]}}, "downstream": []},
        }}),
    );
    let mock = write(
        dir.path(),
        "mock.json",
        &json!({"rules": [
            {"match": "weather", "tool_calls": [{"name": "bing_0", "arguments": {"query": "weather"}}]},
        ], "default": "no tool needed"})
        .to_string(),
    );
    // RAGFlow cannot load an Agent with a tool it does not know: the run is refused.
    let out = bare()
        .args([
            "run",
            "-q",
            "the weather?",
            "--format",
            "jsonl",
            "--mock-llm",
        ])
        .arg(&mock)
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 2, "a canvas whose Agent has the Bing tool");
    let line = one_error_line(&out);
    assert!(
        line.contains(": Agent:Searcher: tool 0 (`Bing`)"),
        "{line:?}"
    );
    // With `--no-validate`, the Agent fails when the model calls the tool.
    let out = bare()
        .args([
            "run",
            "--no-validate",
            "-q",
            "the weather?",
            "--format",
            "jsonl",
            "--mock-llm",
        ])
        .arg(&mock)
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 1, "an Agent calling Bing");
    let line = one_error_line(&out);
    for needle in [
        "Agent:Searcher",
        "bing_0",
        "the Bing tool",
        "does not run yet",
    ] {
        assert!(line.contains(needle), "{needle:?} missing from {line:?}");
    }
    let evs = events(&out.stdout);
    assert_ne!(
        evs.last().map(|e| e["event"].clone()),
        Some(json!("workflow_finished")),
        "{:?}",
        trace(&evs)
    );

    // The same canvas without a tool call runs.
    let out = bare()
        .args([
            "run",
            "--no-validate",
            "-q",
            "hello",
            "--format",
            "jsonl",
            "--mock-llm",
        ])
        .arg(&mock)
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 0, "the Agent answering without its tool");
    let evs = events(&out.stdout);
    assert_eq!(
        finished(&evs, "Message:Out")["data"]["outputs"]["content"],
        "no tool needed"
    );
}

#[test]
fn retries_follow_max_retries() {
    let dir = tempfile::tempdir().unwrap();
    let flow = write_canvas(
        dir.path(),
        "retry.json",
        &llm_canvas(
            "fake@OpenAI-API-Compatible",
            json!({"max_retries": 2, "delay_after_error": 0.01}),
        ),
    );
    let run = |server: &FakeServer| {
        let config = llm_config(dir.path(), "fake@OpenAI-API-Compatible", server, "");
        bare()
            .args([
                "run",
                "-q",
                "say hello",
                "--format",
                "jsonl",
                "--llm-config",
            ])
            .arg(&config)
            .arg(&flow)
            .run()
            .into_output()
    };

    // (a) Two server errors, then an answer: three requests.
    let server = FakeServer::start(vec![
        Reply::status(503, "busy"),
        Reply::status(503, "busy"),
        Reply::sse(&["Hel", "lo ", "world"]),
    ]);
    let out = run(&server);
    expect_code(&out, 0, "503, 503, then an answer");
    let seen = server.seen();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for s in &seen {
        assert_eq!(s.line, "POST /v1/chat/completions HTTP/1.1", "{s:?}");
        let body = s.json();
        assert_eq!(body["stream"], true, "{body}");
        assert_eq!(body["model"], "fake", "{body}");
        let user = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(user["content"], "say hello", "{body}");
    }
    let evs = events(&out.stdout);
    assert_eq!(
        finished(&evs, "Message:M")["data"]["outputs"]["content"],
        "Hello world"
    );
    assert_eq!(message_texts(&evs).concat(), "Hello world");
    drop(server);

    // (b) Server errors only: three requests. The LLM streams into the Message, so, as
    // in RAGFlow, the failure only ends the stream: the error text is not streamed, the
    // LLM never finishes, the Message finishes with nothing from it, and the run ends
    // normally.
    let server = FakeServer::start(vec![Reply::status(503, "engine overloaded")]);
    let out = run(&server);
    expect_code(&out, 0, "503 always, streamed into a Message");
    assert_eq!(server.seen().len(), 3);
    expect_stream_cut_short(&out);
    drop(server);

    // (c) A bad request is not retried (and ends the stream the same way).
    let server = FakeServer::start(vec![Reply::status(400, "unknown field")]);
    let out = run(&server);
    expect_code(&out, 0, "400, streamed into a Message");
    assert_eq!(server.seen().len(), 1);
    expect_stream_cut_short(&out);
}

/// A failed call of `LLM:G` streamed into `Message:M` before any text: no error text
/// streamed, no `node_finished` for the LLM, an empty input for the Message, then
/// `workflow_finished`.
fn expect_stream_cut_short(out: &Output) {
    let evs = events(&out.stdout);
    let t = trace(&evs);
    assert!(!t.iter().any(|e| e == "node_finished LLM:G"), "{t:?}");
    assert_eq!(
        t.last().map(String::as_str),
        Some("workflow_finished"),
        "{t:?}"
    );
    let texts = message_texts(&evs);
    assert!(
        !texts.iter().any(|m| m.contains("**ERROR**")),
        "the error text was streamed: {texts:?}"
    );
    assert_eq!(
        finished(&evs, "Message:M")["data"]["inputs"],
        json!({"LLM:G@content": ""})
    );
}

#[test]
fn a_missing_key_is_named_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let flow = write_canvas(
        dir.path(),
        "ds.json",
        &llm_canvas("deepseek-chat@DeepSeek", json!({})),
    );
    let store = dir.path().join("own.db");
    let out = bare()
        .args(["run", "-q", "hi", "--format", "jsonl"])
        .arg(&flow)
        .env("CANVAS_STORE", &store)
        .run()
        .into_output();
    expect_code(&out, 2, "a missing DeepSeek key");
    // Refused before it started: no run is left behind, stuck as running.
    let runs = bare()
        .args(["runs", "--format", "json"])
        .env("CANVAS_STORE", &store)
        .run()
        .into_output();
    assert_eq!(
        serde_json::from_slice::<Value>(&runs.stdout).unwrap(),
        json!([]),
        "{}",
        String::from_utf8_lossy(&runs.stderr)
    );
    let line = one_error_line(&out);
    for needle in ["needs an API key", "LLM:G"] {
        assert!(line.contains(needle), "{needle:?} missing from {line:?}");
    }
    assert!(
        hint_line(&out).contains("set DEEPSEEK_API_KEY"),
        "{}",
        stderr(&out)
    );
    assert!(
        out.stdout.is_empty(),
        "no run events expected: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn an_empty_llm_id_uses_model_or_says_how() {
    let dir = tempfile::tempdir().unwrap();
    let flow = write_canvas(dir.path(), "empty.json", &llm_canvas("", json!({})));

    let out = bare()
        .args(["run", "-q", "hi", "--format", "jsonl"])
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 2, "an empty llm_id and no --model");
    let line = one_error_line(&out);
    assert!(line.contains("no model"), "{line}");
    assert!(line.contains("LLM:G"), "{line}");
    assert!(hint_line(&out).contains("--model"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());

    let server = FakeServer::start(vec![Reply::sse(&["from ", "the default"])]);
    let config = llm_config(dir.path(), "fake@OpenAI-API-Compatible", &server, "");
    let out = bare()
        .args(["run", "-q", "hi", "--format", "jsonl"])
        .args(["--model", "fake@OpenAI-API-Compatible", "--llm-config"])
        .arg(&config)
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 0, "an empty llm_id with --model");
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].json()["model"], "fake");
    let evs = events(&out.stdout);
    assert_eq!(
        finished(&evs, "Message:M")["data"]["outputs"]["content"],
        "from the default"
    );
}

#[test]
fn record_then_replay_gives_the_same_events() {
    let dir = tempfile::tempdir().unwrap();
    let flow = write_canvas(dir.path(), "rec.json", &llm_canvas("", json!({})));
    let mock = write(
        dir.path(),
        "mock.yaml",
        "rules:\n  - match: weather\n    answer: \"It rains in {user}.\"\n",
    );
    let rec = dir.path().join("recording.json");

    let out = bare()
        .args([
            "run",
            "-q",
            "weather Paris",
            "--format",
            "jsonl",
            "--mock-llm",
        ])
        .arg(&mock)
        .arg("--record")
        .arg(&rec)
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 0, "a recorded run");
    let recorded = events(&out.stdout);
    assert!(rec.is_file(), "no recording written");
    assert_eq!(
        finished(&recorded, "Message:M")["data"]["outputs"]["content"],
        "It rains in weather Paris."
    );

    let out = bare()
        .args([
            "run",
            "-q",
            "weather Paris",
            "--format",
            "jsonl",
            "--replay",
        ])
        .arg(&rec)
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 0, "a replayed run");
    let replayed = events(&out.stdout);
    assert_eq!(trace(&replayed), trace(&recorded));
    assert_eq!(message_texts(&replayed), message_texts(&recorded));
    assert_eq!(comparable(&replayed), comparable(&recorded));

    let out = bare()
        .args([
            "run",
            "-q",
            "another question",
            "--format",
            "jsonl",
            "--replay",
        ])
        .arg(&rec)
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 1, "a call the recording does not have");
    let err = stderr(&out);
    assert!(err.contains("no recorded answer"), "{err}");
    assert!(err.contains("recording.json"), "{err}");
}

#[test]
fn keys_never_reach_events_or_store() {
    const KEY: &str = "sk-SECRET-123";
    let dir = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = store_dir.path().join("canvas.db");
    let flow = write_canvas(
        dir.path(),
        "key.json",
        &llm_canvas("fake@OpenAI-API-Compatible", json!({})),
    );
    let server = FakeServer::start(vec![Reply::sse(&["All ", "fine."])]);
    let config = llm_config(
        dir.path(),
        "fake@OpenAI-API-Compatible",
        &server,
        &format!("    api_key: {KEY}\n"),
    );
    let rec = dir.path().join("recording.json");
    let out = bare()
        .args(["run", "-q", "hi", "--format", "jsonl", "--llm-config"])
        .arg(&config)
        .arg("--record")
        .arg(&rec)
        .arg("--store")
        .arg(&store)
        .arg(&flow)
        .run()
        .into_output();
    expect_code(&out, 0, "a run with a key in llm.yaml");
    let evs = events(&out.stdout);
    assert_eq!(
        finished(&evs, "Message:M")["data"]["outputs"]["content"],
        "All fine."
    );

    let seen = server.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );

    let contains = |bytes: &[u8]| bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
    assert!(!contains(&out.stdout), "the key is in stdout");
    assert!(!contains(&out.stderr), "the key is in stderr");
    let mut files = 0;
    for entry in std::fs::read_dir(store_dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(!contains(&bytes), "the key is in {}", path.display());
        files += 1;
    }
    assert!(files >= 1 && store.exists(), "no store written");
    assert!(rec.is_file(), "no recording written");
    assert!(
        !contains(&std::fs::read(&rec).unwrap()),
        "the key is in the recording"
    );
}
