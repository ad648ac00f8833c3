//! `canvas serve` driven by the clients its users have: RAGFlow's Python SDK and OpenAI's
//! (from the virtual environment `scripts/test-python.sh` makes; missing, these tests
//! skip with a note, except under `CI=true`), and curl for the SSE framing and the error
//! shapes. Servers listen on 127.0.0.1 (port 0, found through `--ready-file`) and run
//! every model on the mock LLM. Also: a client that goes away, a graceful stop and a
//! restart, and two servers sharing one store (SQLite; PostgreSQL with
//! `CANVAS_TEST_PG`), one of them killed mid-answer.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::postgres::PgSchema;
use crate::util::TIMEOUT;

const KEY: &str = "test-key-1";

/// The tests' agents (`chat`, `form`) and their mock model.
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/serve")
}

/// The venv's python, or `None` (skip, with a note) outside CI.
fn python() -> Option<PathBuf> {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin/python");
    if py.exists() {
        return Some(py);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "{} is missing: .ci/run runs scripts/test-python.sh first",
            py.display()
        );
    }
    eprintln!(
        "skipping: no {} (scripts/test-python.sh makes it)",
        py.display()
    );
    None
}

/// A `canvas serve` process on 127.0.0.1, killed when dropped.
struct Server {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Server {
    /// Serve the fixtures from `dir` (its home, keys and logs) on `store`, with `mock`.
    fn start(dir: &Path, store: &str, mock: &Path, extra: &[&str]) -> Server {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let keys = dir.join("keys.txt");
        std::fs::write(&keys, format!("# the test's key\n{KEY}\n")).unwrap();
        let ready = dir.join(format!("ready-{n}"));
        let log = dir.join(format!("serve-{n}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_canvas"))
            .args(["serve"])
            .arg(fixtures())
            .args(["--addr", "127.0.0.1:0", "--api-key-file"])
            .arg(&keys)
            .arg("--mock-llm")
            .arg(mock)
            .args(["--store", store, "--ready-file"])
            .arg(&ready)
            .args(extra)
            .current_dir(dir)
            .env("HOME", dir)
            .env_remove("CANVAS_API_KEYS")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start canvas serve");
        let deadline = Instant::now() + TIMEOUT;
        let mut server = Server {
            child,
            url: String::new(),
            log,
        };
        loop {
            if let Ok(addr) = std::fs::read_to_string(&ready) {
                if !addr.trim().is_empty() {
                    server.url = format!("http://{}", addr.trim());
                    return server;
                }
            }
            if let Ok(Some(st)) = server.child.try_wait() {
                panic!("canvas serve exited ({st}): {}", server.log());
            }
            assert!(Instant::now() < deadline, "canvas serve never got ready");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stop it with SIGTERM, and wait for it: its exit code.
    fn terminate(mut self) -> i32 {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: signalling the child this test started.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "canvas serve did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `curl` on 127.0.0.1: (HTTP status, body).
fn curl(url: &str, args: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "60", "-o", "-", "-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// POST `body` as JSON with the key.
fn post(url: &str, body: &str) -> (u16, String) {
    let auth = format!("Authorization: Bearer {KEY}");
    curl(
        url,
        &[
            "-X",
            "POST",
            "-H",
            &auth,
            "-H",
            "Content-Type: application/json",
            "-d",
            body,
        ],
    )
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// A new session of `agent`: its id.
fn session(s: &Server, agent: &str) -> String {
    let (code, body) = post(&format!("{}/api/v1/agents/{agent}/sessions", s.url), "{}");
    assert_eq!(code, 200, "{body}");
    json(&body)["data"]["id"].as_str().unwrap().to_string()
}

/// The SSE frames of a body: each `data:` payload, in order.
fn frames(body: &str) -> Vec<String> {
    assert!(
        body.ends_with("\n\n"),
        "a body of frames ends with a blank line: {body:?}"
    );
    body.split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| {
            let payload = f
                .strip_prefix("data:")
                .unwrap_or_else(|| panic!("a frame starts with data: {f:?}"));
            assert!(
                !payload.starts_with(' '),
                "no space after data: (RAGFlow's framing)"
            );
            assert!(!payload.contains('\n'), "one line per frame: {f:?}");
            payload.to_string()
        })
        .collect()
}

/// Ask `agent`'s session a question on the events endpoint: the events streamed.
fn ask_events(s: &Server, agent: &str, session: &str, query: &str) -> Vec<Value> {
    let body = serde_json::json!({"agent_id": agent, "session_id": session, "query": query});
    let (code, text) = post(
        &format!("{}/api/v1/agents/chat/completions", s.url),
        &body.to_string(),
    );
    assert_eq!(code, 200, "{text}");
    let f = frames(&text);
    assert_eq!(f.last().map(String::as_str), Some("[DONE]"), "{text}");
    f[..f.len() - 1].iter().map(|p| json(p)).collect()
}

/// The text of the `message` events.
fn answer(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["event"] == "message")
        .filter_map(|e| e["data"]["content"].as_str())
        .collect()
}

/// Run a Python script of the fixtures against `s`.
fn run_python(py: &Path, s: &Server, script: &str) {
    let out = Command::new(py)
        .arg(fixtures().join(script))
        .env("CANVAS_URL", &s.url)
        .env("CANVAS_KEY", KEY)
        .env("NO_PROXY", "127.0.0.1")
        .output()
        .expect("run python");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"),
        "{script} failed:\n{}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        s.log()
    );
}

fn store_path(dir: &Path) -> String {
    dir.join("canvas.db").display().to_string()
}

#[test]
fn ragflow_sdk_lists_agents_opens_sessions_and_streams_answers() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &store_path(dir.path()),
        &fixtures().join("mock.yaml"),
        &[],
    );
    run_python(&py, &s, "sdk_chat.py");
}

#[test]
fn ragflow_sdk_answers_a_form_across_two_asks() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &store_path(dir.path()),
        &fixtures().join("mock.yaml"),
        &[],
    );
    run_python(&py, &s, "sdk_form.py");
}

#[test]
fn openai_client_gets_whole_and_streamed_answers() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &store_path(dir.path()),
        &fixtures().join("mock.yaml"),
        &[],
    );
    run_python(&py, &s, "openai_client.py");
}

#[test]
fn the_stream_is_canvas_runs_sse_with_the_session_id() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_path(dir.path());
    let mock = fixtures().join("mock.yaml");
    let s = Server::start(dir.path(), &store, &mock, &[]);
    let id = session(&s, "chat");
    let served = ask_events(&s, "chat", &id, "my order is late");
    assert!(
        served
            .iter()
            .all(|e| e["session_id"] == id.as_str() && e["task_id"] == id.as_str()),
        "every event names the session: {served:?}"
    );
    // The same canvas, model and question through `canvas run --format sse`.
    let run = Command::new(env!("CARGO_BIN_EXE_canvas"))
        .args(["run"])
        .arg(fixtures().join("chat.yaml"))
        .args(["-q", "my order is late", "--format", "sse", "--mock-llm"])
        .arg(&mock)
        .args([
            "--store",
            &dir.path().join("other.db").display().to_string(),
        ])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(run.status.success());
    let cli = frames(&String::from_utf8_lossy(&run.stdout));
    assert_eq!(cli.last().map(String::as_str), Some("[DONE]"));
    let cli: Vec<Value> = cli[..cli.len() - 1].iter().map(|p| json(p)).collect();
    assert_eq!(crate::util::trace(&served), crate::util::trace(&cli));
    assert_eq!(answer(&served), "Sorry, your order ships today.");
    assert_eq!(answer(&served), answer(&cli));
    // What was streamed is what was stored, line for line (less RAGFlow's session_id).
    let stored = Command::new(env!("CARGO_BIN_EXE_canvas"))
        .args(["events", &id, "--format", "jsonl", "--store", &store])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let mut streamed = served.clone();
    for e in &mut streamed {
        e.as_object_mut().unwrap().remove("session_id");
    }
    assert_eq!(crate::util::events(&stored.stdout), streamed);
    // The SDK's endpoint: only the messages, then [DONE].
    let (_, text) = post(
        &format!("{}/api/v1/agents/form/completions", s.url),
        r#"{"question": "book", "stream": true}"#,
    );
    assert_eq!(frames(&text), ["[DONE]"], "a form shows no message");
}

#[test]
fn errors_have_ragflows_shape_and_never_a_500() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &store_path(dir.path()),
        &fixtures().join("mock.yaml"),
        &["--max-body", "2000"],
    );
    let agents = format!("{}/api/v1/agents", s.url);
    let shape = |(code, body): (u16, String), status: u16, ragflow: i64, says: &str| {
        assert_eq!(code, status, "{body}");
        let v = json(&body);
        assert_eq!(v["code"], ragflow, "{body}");
        let m = v["message"].as_str().unwrap_or_default();
        assert!(m.contains(says), "{says:?} not in {m:?}");
    };
    shape(
        curl(&agents, &[]),
        401,
        109,
        "`Authorization` can't be empty",
    );
    shape(
        curl(&agents, &["-H", "Authorization: Bearer wrong"]),
        401,
        109,
        "API key is invalid",
    );
    shape(
        curl(&agents, &["-H", &format!("Authorization: Bearer {KEY}x")]),
        401,
        109,
        "API key is invalid",
    );
    let ask = format!("{}/api/v1/agents/chat/completions", s.url);
    shape(post(&ask, "{not json"), 400, 101, "not a JSON object");
    shape(post(&ask, "[1, 2]"), 400, 101, "not a JSON object");
    shape(
        post(
            &ask,
            &format!(r#"{{"agent_id": "chat", "query": "{}"}}"#, "x".repeat(5000)),
        ),
        413,
        101,
        "too large",
    );
    shape(
        post(&ask, r#"{"agent_id": "nope", "query": "hi"}"#),
        200,
        102,
        "nope",
    );
    shape(
        post(
            &ask,
            r#"{"agent_id": "chat", "session_id": "01NOPE", "query": "hi"}"#,
        ),
        200,
        102,
        "Session not found!",
    );
    let form_session = session(&s, "form");
    shape(
        post(
            &ask,
            &format!(r#"{{"agent_id": "chat", "session_id": "{form_session}"}}"#),
        ),
        200,
        103,
        "does not belong",
    );
    shape(
        post(
            &format!("{}/api/v1/agents_openai/chat/chat/completions", s.url),
            r#"{"model": "m"}"#,
        ),
        200,
        101,
        "required argument are missing: messages",
    );
    shape(
        post(&agents, r#"{"title": "t"}"#),
        200,
        101,
        "No DSL data in request.",
    );
    shape(
        post(
            &agents,
            r#"{"title": "t", "dsl": {"components": {"x": 1}}}"#,
        ),
        200,
        101,
        "agent \"t\"",
    );
    shape(
        curl(
            &format!("{}/api/v1/nothing", s.url),
            &["-H", &format!("Authorization: Bearer {KEY}")],
        ),
        404,
        404,
        "Not found",
    );
    shape(
        curl(
            &format!("{agents}/nope/sessions"),
            &["-H", &format!("Authorization: Bearer {KEY}")],
        ),
        200,
        102,
        "You don't own the agent nope",
    );
    // Still serving, with no key needed for the health check.
    let (code, body) = curl(&format!("{}/healthz", s.url), &[]);
    assert_eq!((code, json(&body)["ok"].clone()), (200, Value::Bool(true)));
    assert!(!s.log().contains("panicked"), "{}", s.log());
}

/// A mock whose answer to `late` takes about `words × chunk_delay` to stream.
fn slow_mock(dir: &Path, chunk_delay_ms: u64) -> PathBuf {
    let words: Vec<String> = (1..=30).map(|i| format!("w{i}")).collect();
    let path = dir.join("slow.yaml");
    std::fs::write(
        &path,
        format!(
            "rules:\n  - {{match: \"(?i)late\", on: user, answer: \"{}\"}}\ndefault: echo\nchunk_delay_ms: {chunk_delay_ms}\n",
            words.join(" ")
        ),
    )
    .unwrap();
    path
}

const SLOW_ANSWER_WORDS: usize = 30;

/// Start a streamed question and return once its first `message` arrived: the curl
/// process, still reading.
fn ask_until_first_message(s: &Server, session: &str) -> Child {
    let body =
        serde_json::json!({"agent_id": "chat", "session_id": session, "query": "my order is late"});
    let mut child = Command::new("curl")
        .args(["-sSN", "--max-time", "60", "-X", "POST", "-H"])
        .arg(format!("Authorization: Bearer {KEY}"))
        .args(["-d", &body.to_string()])
        .arg(format!("{}/api/v1/agents/chat/completions", s.url))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("the stream ended early").unwrap();
        if line.contains(r#""event":"message""#) {
            break;
        }
    }
    // Keep reading in the background so the server is not held up by a full pipe.
    std::thread::spawn(move || for _ in lines {});
    child
}

/// Wait until the run's stored status is `want`.
fn wait_status(store: &str, home: &Path, run: &str, want: &str) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let out = Command::new(env!("CARGO_BIN_EXE_canvas"))
            .args(["show", run, "--format", "json", "--store", store])
            .env("HOME", home)
            .output()
            .unwrap();
        let status = serde_json::from_slice::<Value>(&out.stdout)
            .map(|v| v["status"].clone())
            .unwrap_or(Value::Null);
        if status == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "run {run} never got {want} (is {status})"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The next question continues the stopped turn: the whole answer, once.
fn assert_continued(s: &Server, session: &str) {
    let again = ask_events(s, "chat", session, "my order is late");
    let text = answer(&again);
    let words: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(words.len(), SLOW_ANSWER_WORDS, "{text:?}");
    assert_eq!(words.first(), Some(&"w1"));
    let finished = again
        .iter()
        .filter(|e| e["event"] == "workflow_finished")
        .count();
    assert_eq!(finished, 1, "one turn, finished once");
    assert_eq!(
        again[0]["event"], "workflow_started",
        "the turn comes whole"
    );
}

#[test]
fn a_client_that_goes_away_stops_the_turn_and_the_next_ask_continues_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_path(dir.path());
    let s = Server::start(dir.path(), &store, &slow_mock(dir.path(), 60), &[]);
    let id = session(&s, "chat");
    let mut client = ask_until_first_message(&s, &id);
    client.kill().unwrap();
    client.wait().unwrap();
    wait_status(&store, dir.path(), &id, "interrupted");
    assert_continued(&s, &id);
}

#[test]
fn a_graceful_stop_checkpoints_the_turn_and_a_restart_continues_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_path(dir.path());
    let mock = slow_mock(dir.path(), 60);
    let s = Server::start(dir.path(), &store, &mock, &[]);
    let id = session(&s, "chat");
    let client = ask_until_first_message(&s, &id);
    assert_eq!(s.terminate(), 0);
    let out = client.wait_with_output().unwrap();
    assert!(out.status.success(), "the stream ended cleanly");
    wait_status(&store, dir.path(), &id, "interrupted");
    let again = Server::start(dir.path(), &store, &mock, &[]);
    assert_continued(&again, &id);
}

/// Two servers on `store`: a session started on the first is answered by the second;
/// the first killed mid-answer, the second continues that answer.
fn two_servers_share_sessions(dir: &Path, store: &str) {
    let mock = slow_mock(dir, 40);
    let first = Server::start(dir, store, &mock, &["--lease", "2"]);
    let second = Server::start(dir, store, &mock, &["--lease", "2"]);
    let id = session(&first, "chat");
    let on_second = ask_events(&second, "chat", &id, "where is it");
    assert_eq!(answer(&on_second), "ECHO: where is it");
    let mut client = ask_until_first_message(&first, &id);
    drop(first);
    client.kill().unwrap();
    client.wait().unwrap();
    assert_continued(&second, &id);
    let (_, listed) = curl(
        &format!("{}/api/v1/agents/chat/sessions?id={id}", second.url),
        &["-H", &format!("Authorization: Bearer {KEY}")],
    );
    let messages = json(&listed)["data"][0]["messages"].clone();
    let said: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        said.len(),
        5,
        "the greeting and two questions with their answers: {said:?}"
    );
    assert_eq!(said[1], "where is it");
    assert_eq!(said[3], "my order is late");
}

#[test]
fn a_session_answering_a_question_is_busy_for_another_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_path(dir.path());
    let mock = slow_mock(dir.path(), 200);
    let first = Server::start(dir.path(), &store, &mock, &[]);
    let second = Server::start(dir.path(), &store, &mock, &[]);
    let id = session(&first, "chat");
    let mut answering = ask_until_first_message(&first, &id);
    let body = serde_json::json!({"agent_id": "chat", "session_id": id, "query": "hi"});
    for s in [&second, &first] {
        let (code, text) = post(
            &format!("{}/api/v1/agents/chat/completions", s.url),
            &body.to_string(),
        );
        assert_eq!(code, 409, "{text}");
        assert_eq!(json(&text)["code"], 106, "{text}");
    }
    answering.kill().unwrap();
    answering.wait().unwrap();
}

#[test]
fn two_servers_on_one_sqlite_store_continue_each_others_sessions() {
    let dir = tempfile::tempdir().unwrap();
    two_servers_share_sessions(dir.path(), &store_path(dir.path()));
}

#[test]
fn two_servers_on_one_postgres_store_continue_each_others_sessions() {
    let Some(schema) = PgSchema::new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    two_servers_share_sessions(dir.path(), &schema.url());
}

#[test]
fn serve_needs_an_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_canvas"))
        .arg("serve")
        .arg(fixtures())
        .args(["--addr", "127.0.0.1:0", "--mock-llm"])
        .arg(fixtures().join("mock.yaml"))
        .env("HOME", dir.path())
        .env("CANVAS_STORE", dir.path().join("c.db"))
        .env_remove("CANVAS_API_KEYS")
        .env_remove("CANVAS_API_KEY_FILE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs at least one API key"), "{err}");
}

#[test]
fn files_traces_and_the_openai_compatible_flag_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_path(dir.path());
    let s = Server::start(dir.path(), &store, &fixtures().join("mock.yaml"), &[]);
    let agents = format!("{}/api/v1/agents", s.url);
    // An agent made over the API, whose answer is the files it is given.
    let dsl = serde_json::json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}},
                  "downstream": ["Message:Out"], "upstream": []},
        "Message:Out": {"obj": {"component_name": "Message",
                                "params": {"content": ["{sys.files}"]}},
                        "downstream": [], "upstream": ["begin"]},
    }});
    let (code, body) = post(
        &agents,
        &serde_json::json!({"title": "files", "dsl": dsl}).to_string(),
    );
    assert_eq!(
        (code, json(&body)["data"].clone()),
        (200, Value::Bool(true)),
        "{body}"
    );
    let (_, body) = curl(
        &format!("{agents}?title=files"),
        &["-H", &format!("Authorization: Bearer {KEY}")],
    );
    let agent = json(&body)["data"][0]["id"].as_str().unwrap().to_string();
    let id = session(&s, &agent);
    let ask = |files: Value| {
        let body = serde_json::json!({
            "agent_id": agent, "session_id": id, "query": "read these",
            "stream": false, "files": files,
        });
        let (code, text) = post(
            &format!("{}/api/v1/agents/chat/completions", s.url),
            &body.to_string(),
        );
        assert_eq!(code, 200, "{text}");
        json(&text)
    };
    // A data URL and a file given as text each reach sys.files as their text.
    let reply = ask(serde_json::json!([
        "data:text/plain;base64,aGVsbG8gZnJvbSBhIGZpbGU=",
        {"name": "notes.md", "content": "# my notes"},
    ]));
    let content = reply["data"]["data"]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        content.contains("hello from a file") && content.contains("# my notes"),
        "{reply}"
    );
    // A file that is neither text nor an image is refused, named.
    let reply = ask(serde_json::json!([
        {"name": "blob.bin", "mime_type": "application/octet-stream", "data": "AAEC"},
    ]));
    assert_eq!(reply["code"], 101, "{reply}");
    let message = reply["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("files[0]") && message.contains("blob.bin"),
        "{reply}"
    );

    // `return_trace` on the SDK's endpoint: each node_finished, with the trace so far.
    let (code, text) = post(
        &format!("{agents}/chat/completions"),
        r#"{"question": "my order is late", "stream": true, "return_trace": true}"#,
    );
    assert_eq!(code, 200, "{text}");
    let events: Vec<Value> = frames(&text)
        .iter()
        .filter(|f| *f != "[DONE]")
        .map(|f| json(f))
        .collect();
    let traces: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "node_finished")
        .collect();
    let ids: Vec<&str> = traces
        .iter()
        .map(|e| e["data"]["component_id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids, ["begin", "LLM:Reply", "Message:Out"], "{text}");
    for (n, e) in traces.iter().enumerate() {
        let trace = e["data"]["trace"].as_array().expect("a trace");
        assert_eq!(trace.len(), n + 1, "the trace grows by one a node: {e}");
        assert_eq!(trace[n]["component_id"], ids[n]);
    }
    assert_eq!(answer(&events), "Sorry, your order ships today.");

    // `"openai-compatible": true` on the events endpoint answers as OpenAI's does.
    let body = serde_json::json!({
        "agent_id": "chat", "openai-compatible": true, "stream": false,
        "messages": [{"role": "user", "content": "my order is late"}],
    });
    let (code, text) = post(
        &format!("{}/api/v1/agents/chat/completions", s.url),
        &body.to_string(),
    );
    assert_eq!(code, 200, "{text}");
    let reply = json(&text);
    assert_eq!(reply["object"], "chat.completion", "{text}");
    assert_eq!(
        reply["choices"][0]["message"]["content"],
        "Sorry, your order ships today."
    );
}

#[test]
fn sessions_are_listed_by_last_change_unless_asked_by_creation() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_path(dir.path());
    let s = Server::start(dir.path(), &store, &fixtures().join("mock.yaml"), &[]);
    let first = session(&s, "chat");
    let second = session(&s, "chat");
    // The first session answers a question after the second was opened.
    ask_events(&s, "chat", &first, "my order is late");
    let listed = |query: &str| -> Vec<String> {
        let url = format!("{}/api/v1/agents/chat/sessions?dsl=false{query}", s.url);
        let (code, body) = curl(&url, &["-H", &format!("Authorization: Bearer {KEY}")]);
        assert_eq!(code, 200, "{body}");
        json(&body)["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(listed(""), [first.clone(), second.clone()]);
    assert_eq!(
        listed("&orderby=create_time"),
        [second.clone(), first.clone()]
    );
    assert_eq!(listed("&orderby=create_time&desc=false"), [first, second]);
}
