//! A failed model call, end to end, along RAGFlow's `**ERROR**` path
//! (`llm-and-tools.md` §1.3, §2.3, §2.4, §3.3): the error text
//! `**ERROR**: CODE - MESSAGE`, which failures the model layer retries, the
//! component-level retries of a plain call, and what each exception handler (none,
//! comment, goto) makes of a failure, in the streaming position (the LLM feeds a
//! Message) and in the plain one. The provider is a fake OpenAI-compatible server on
//! 127.0.0.1 (or a port nobody listens on).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::models::{bare, finished, message_texts, one_error_line, write, write_canvas};
use crate::peer::{FakeServer, Reply};
use crate::util::{events, expect_code, trace};

const LLM_ID: &str = "fake@OpenAI-API-Compatible";
const FALLBACK: &str = "fallback text";
const QUERY: &str = "say hello";

// ---------------------------------------------------------------------------------------
// The canvases.

/// Where LLM:A stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Position {
    /// `LLM:A → Message:M ["Got: {LLM:A@content}"]`: the answer is streamed into the
    /// Message (unless LLM:A has an exception goto).
    Streaming,
    /// `LLM:A → StringTransform:S → Message:M`: one non-streamed call.
    Plain,
}

/// LLM:A's exception handling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handler {
    None,
    /// `exception_method: comment`, default value [`FALLBACK`].
    Comment,
    /// `exception_method: goto` to `Message:Oops ["Oops: {LLM:A@_ERROR}"]`, which is not
    /// downstream of LLM:A.
    Goto,
}

const HANDLERS: [Handler; 3] = [Handler::None, Handler::Comment, Handler::Goto];

/// `begin → LLM:A → …` as described by `position`, with `handler` and `max_retries`.
fn canvas_for(position: Position, handler: Handler, max_retries: u32) -> Value {
    let mut llm = json!({
        "llm_id": LLM_ID,
        "sys_prompt": "You answer briefly.",
        "prompts": [{"role": "user", "content": "{sys.query}"}],
        "max_retries": max_retries,
        "delay_after_error": 0.01,
    });
    match handler {
        Handler::None => {}
        Handler::Comment => {
            llm["exception_method"] = json!("comment");
            llm["exception_default_value"] = json!(FALLBACK);
        }
        Handler::Goto => {
            llm["exception_method"] = json!("goto");
            llm["exception_goto"] = json!(["Message:Oops"]);
        }
    }
    let message = |content: &str| {
        json!({"obj": {"component_name": "Message", "params": {"content": [content]}},
               "downstream": []})
    };
    let mut components = json!({
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:A"]},
    });
    match position {
        Position::Streaming => {
            components["LLM:A"] = json!({"obj": {"component_name": "LLM", "params": llm},
                                         "downstream": ["Message:M"]});
            components["Message:M"] = message("Got: {LLM:A@content}");
        }
        Position::Plain => {
            components["LLM:A"] = json!({"obj": {"component_name": "LLM", "params": llm},
                                         "downstream": ["StringTransform:S"]});
            components["StringTransform:S"] = json!({"obj": {"component_name": "StringTransform",
                "params": {"method": "merge", "script": "<<{LLM:A@content}>>", "delimiters": [","]}},
                "downstream": ["Message:M"]});
            components["Message:M"] = message("{StringTransform:S@result}");
        }
    }
    if handler == Handler::Goto {
        components["Message:Oops"] = message("Oops: {LLM:A@_ERROR}");
    }
    json!({ "components": components })
}

/// Whether LLM:A streams into Message:M: streaming position and no exception goto.
fn streams(position: Position, handler: Handler) -> bool {
    position == Position::Streaming && handler != Handler::Goto
}

// ---------------------------------------------------------------------------------------
// Running them.

/// A failure of the model server, and what it must come to.
struct Failure {
    what: &'static str,
    /// The server's script; `None`: nobody listens on the port.
    script: Option<Vec<Reply>>,
    /// LLM:A's `max_retries`.
    max_retries: u32,
    /// `timeout_secs` of `llm.yaml`.
    timeout_secs: Option<u64>,
    /// The CODE of `**ERROR**: CODE - MESSAGE`.
    code: &'static str,
    /// What MESSAGE must contain.
    fragment: &'static str,
    /// Requests the server gets when LLM:A streams, and when its call is plain.
    requests: (usize, usize),
    /// The text the server sends before the failure (streamed to the Message).
    partial: &'static str,
}

/// One run of a canvas against a server.
struct Run {
    out: Output,
    evs: Vec<Value>,
    /// Requests the server received (0 without a server).
    requests: usize,
    /// `canvas run`'s wall time.
    took: Duration,
    label: String,
}

impl Run {
    fn trace(&self) -> Vec<String> {
        trace(&self.evs)
    }

    fn has(&self, entry: &str) -> bool {
        self.trace().iter().any(|e| e == entry)
    }

    fn position_of(&self, entry: &str) -> usize {
        let t = self.trace();
        t.iter()
            .position(|e| e == entry)
            .unwrap_or_else(|| panic!("{}: no {entry:?} in {t:?}", self.label))
    }

    fn last_event(&self) -> Option<String> {
        self.trace().last().cloned()
    }

    /// The node_finished event of `id`.
    fn finished(&self, id: &str) -> &Value {
        finished(&self.evs, id)
    }

    /// The texts of the message events, concatenated.
    fn streamed(&self) -> String {
        message_texts(&self.evs).concat()
    }
}

/// `llm.yaml` pointing LLM_ID at `base_url`.
fn llm_yaml(dir: &Path, base_url: &str, timeout_secs: Option<u64>) -> PathBuf {
    let top = timeout_secs
        .map(|t| format!("timeout_secs: {t}\n"))
        .unwrap_or_default();
    write(
        dir,
        "llm.yaml",
        &format!("{top}models:\n  \"{LLM_ID}\":\n    base_url: \"{base_url}\"\n"),
    )
}

/// A base URL on a port nobody listens on (bound, then let go).
fn refused_base_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}/v1")
}

/// Run `canvas` against a server playing `script` (or against a closed port).
fn run(
    canvas: &Value,
    script: Option<Vec<Reply>>,
    timeout_secs: Option<u64>,
    label: String,
) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let server = script.map(FakeServer::start);
    let base_url = match &server {
        Some(s) => s.base_url(),
        None => refused_base_url(),
    };
    let config = llm_yaml(dir.path(), &base_url, timeout_secs);
    let flow = write_canvas(dir.path(), "flow.json", canvas);
    let start = Instant::now();
    let out = bare()
        .args(["run", "-q", QUERY, "--format", "jsonl", "--llm-config"])
        .arg(&config)
        .arg("--store")
        .arg(dir.path().join("canvas.db"))
        .arg(&flow)
        .run()
        .into_output();
    let took = start.elapsed();
    let requests = server.as_ref().map_or(0, |s| s.seen().len());
    if let Some(s) = &server {
        for r in s.seen() {
            assert_eq!(
                r.line, "POST /v1/chat/completions HTTP/1.1",
                "{label}: {r:?}"
            );
        }
    }
    drop(server);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{label}: {err}");
    let evs = events(&out.stdout);
    Run {
        out,
        evs,
        requests,
        took,
        label,
    }
}

/// `e` is `**ERROR**: CODE - …FRAGMENT…`, on one line.
fn assert_error_text(e: &Value, f: &Failure, label: &str) -> String {
    let Some(e) = e.as_str() else {
        panic!("{label}: the error is not a string: {e}");
    };
    assert!(e.starts_with("**ERROR**: "), "{label}: {e:?}");
    let code = format!("**ERROR**: {} - ", f.code);
    assert!(e.starts_with(&code), "{label}: {code:?} expected: {e:?}");
    assert!(
        e.contains(f.fragment),
        "{label}: {:?} missing from {e:?}",
        f.fragment
    );
    assert!(!e.contains('\n'), "{label}: not one line: {e:?}");
    e.to_string()
}

/// No message event carries an error text.
fn assert_error_not_streamed(r: &Run) {
    let texts = message_texts(&r.evs);
    assert!(
        !texts.iter().any(|m| m.contains("**ERROR**")),
        "{}: the error text was streamed: {texts:?}",
        r.label
    );
}

/// `failure` in `position` with `handler`: the events, exit code and request count the
/// contract says. Returns the run.
fn check(f: &Failure, position: Position, handler: Handler) -> Run {
    let label = format!("{} / {position:?} / handler {handler:?}", f.what);
    let r = run(
        &canvas_for(position, handler, f.max_retries),
        f.script.clone(),
        f.timeout_secs,
        label,
    );
    let label = r.label.as_str();
    let t = r.trace();

    if f.script.is_some() {
        let want = if streams(position, handler) {
            f.requests.0
        } else {
            f.requests.1
        };
        assert_eq!(r.requests, want, "{label}: requests");
    }

    match (streams(position, handler), handler) {
        (true, Handler::None) => {
            expect_code(&r.out, 0, label);
            assert!(!r.has("node_finished LLM:A"), "{label}: {t:?}");
            assert_error_not_streamed(&r);
            let m = r.finished("Message:M");
            if f.partial.is_empty() {
                assert_eq!(
                    m["data"]["inputs"],
                    json!({"LLM:A@content": ""}),
                    "{label}: {m}"
                );
                assert_eq!(r.streamed(), "Got:", "{label}: {t:?}");
            } else {
                assert_eq!(r.streamed(), format!("Got:{}", f.partial), "{label}: {t:?}");
            }
            assert!(
                !m.to_string().contains("**ERROR**"),
                "{label}: the Message got the error: {m}"
            );
            assert_eq!(
                r.last_event().as_deref(),
                Some("workflow_finished"),
                "{label}: {t:?}"
            );
        }
        (true, Handler::Comment) => {
            expect_code(&r.out, 0, label);
            assert_error_not_streamed(&r);
            let texts = message_texts(&r.evs);
            assert_eq!(
                texts.iter().filter(|m| *m == FALLBACK).count(),
                1,
                "{label}: one message event with the default value expected: {texts:?}"
            );
            assert_eq!(
                texts.last().map(String::as_str),
                Some(FALLBACK),
                "{label}: the default value comes last: {texts:?}"
            );
            assert_eq!(
                r.streamed(),
                format!("Got:{}{FALLBACK}", f.partial),
                "{label}: {texts:?}"
            );
            let llm = r.finished("LLM:A");
            assert!(
                r.position_of("node_finished LLM:A") > r.position_of("message_end"),
                "{label}: LLM:A finishes after the stream: {t:?}"
            );
            assert_eq!(
                llm["data"]["outputs"]["content"], FALLBACK,
                "{label}: {llm}"
            );
            assert!(llm["data"]["error"].is_null(), "{label}: {llm}");
            assert_eq!(
                r.last_event().as_deref(),
                Some("workflow_finished"),
                "{label}: {t:?}"
            );
        }
        (false, Handler::None) => {
            expect_code(&r.out, 1, label);
            let llm = r.finished("LLM:A");
            let e = assert_error_text(&llm["data"]["error"], f, label);
            assert_eq!(llm["data"]["outputs"]["_ERROR"], e, "{label}: {llm}");
            assert!(
                llm["data"]["outputs"]["content"].is_null(),
                "{label}: {llm}"
            );
            assert!(!r.has("node_started StringTransform:S"), "{label}: {t:?}");
            assert!(!r.has("workflow_finished"), "{label}: {t:?}");
            let line = one_error_line(&r.out);
            assert!(line.contains("LLM:A"), "{label}: {line:?}");
        }
        (false, Handler::Comment) => {
            expect_code(&r.out, 0, label);
            let llm = r.finished("LLM:A");
            assert_eq!(
                llm["data"]["outputs"]["content"], FALLBACK,
                "{label}: {llm}"
            );
            assert!(llm["data"]["error"].is_null(), "{label}: {llm}");
            let s = r.finished("StringTransform:S");
            assert_eq!(
                s["data"]["outputs"]["result"],
                format!("<<{FALLBACK}>>"),
                "{label}: {s}"
            );
            assert_eq!(
                r.finished("Message:M")["data"]["outputs"]["content"],
                format!("<<{FALLBACK}>>"),
                "{label}"
            );
            assert_eq!(
                r.last_event().as_deref(),
                Some("workflow_finished"),
                "{label}: {t:?}"
            );
        }
        (_, Handler::Goto) => {
            expect_code(&r.out, 0, label);
            let llm = r.finished("LLM:A");
            let e = assert_error_text(&llm["data"]["error"], f, label);
            let oops = r.finished("Message:Oops");
            let want = format!("Oops:{e}");
            assert_eq!(oops["data"]["outputs"]["content"], want, "{label}: {oops}");
            assert_eq!(r.streamed(), want, "{label}: {t:?}");
            assert!(!r.has("node_started StringTransform:S"), "{label}: {t:?}");
            assert!(!r.has("node_started Message:M"), "{label}: {t:?}");
            assert_eq!(
                r.last_event().as_deref(),
                Some("workflow_finished"),
                "{label}: {t:?}"
            );
        }
    }
    r
}

/// `f` in `position` with every handler.
fn check_all(f: &Failure, position: Position) {
    for handler in HANDLERS {
        check(f, position, handler);
    }
}

// ---------------------------------------------------------------------------------------
// The failures.

fn server_error() -> Failure {
    Failure {
        what: "HTTP 500 always",
        script: Some(vec![Reply::status(500, "boom")]),
        max_retries: 1,
        timeout_secs: None,
        code: "MAX_RETRIES_EXCEEDED",
        fragment: "HTTP 500",
        // Retried by the model layer (2 attempts); a plain call twice more.
        requests: (2, 4),
        partial: "",
    }
}

fn bad_request() -> Failure {
    Failure {
        what: "HTTP 400",
        script: Some(vec![Reply::status(400, "unknown field")]),
        max_retries: 1,
        timeout_secs: None,
        code: "INVALID_REQUEST",
        fragment: "HTTP 400",
        // Not retried by the model layer; a plain call is asked twice.
        requests: (1, 2),
        partial: "",
    }
}

fn refused() -> Failure {
    Failure {
        what: "connection refused",
        script: None,
        max_retries: 1,
        timeout_secs: None,
        code: "MAX_RETRIES_EXCEEDED",
        fragment: "cannot connect",
        requests: (0, 0),
        partial: "",
    }
}

fn timeout(max_retries: u32) -> Failure {
    Failure {
        what: "no answer within timeout_secs",
        script: Some(vec![Reply::silent()]),
        max_retries,
        timeout_secs: Some(1),
        code: "MAX_RETRIES_EXCEEDED",
        fragment: "within 1 s",
        requests: (
            max_retries as usize + 1,
            (max_retries as usize + 1) * (max_retries as usize + 1),
        ),
        partial: "",
    }
}

fn malformed() -> Failure {
    Failure {
        what: "malformed SSE chunk",
        script: Some(vec![Reply::text(
            200,
            "text/event-stream",
            "data: {not json\n\n",
        )]),
        max_retries: 1,
        timeout_secs: None,
        code: "MODEL_ERROR",
        fragment: "malformed",
        requests: (1, 2),
        partial: "",
    }
}

fn cut_midway() -> Failure {
    Failure {
        what: "stream cut midway",
        script: Some(vec![Reply::cut_sse(&["Hel", "lo "])]),
        max_retries: 1,
        timeout_secs: None,
        code: "CONNECTION_ERROR",
        fragment: "failed",
        // Never retried once text arrived; a plain call is asked twice.
        requests: (1, 2),
        partial: "Hello ",
    }
}

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
fn server_error_after_retries_streaming() {
    check_all(&server_error(), Position::Streaming);
}

#[test]
fn server_error_after_retries_plain() {
    check_all(&server_error(), Position::Plain);
}

#[test]
fn bad_request_is_not_retried_streaming() {
    check_all(&bad_request(), Position::Streaming);
}

#[test]
fn bad_request_is_not_retried_plain() {
    check_all(&bad_request(), Position::Plain);
}

#[test]
fn connection_refused_streaming() {
    check_all(&refused(), Position::Streaming);
}

#[test]
fn connection_refused_plain() {
    check_all(&refused(), Position::Plain);
}

#[test]
fn timeout_streaming() {
    check_all(&timeout(0), Position::Streaming);
}

#[test]
fn timeout_plain() {
    check_all(&timeout(0), Position::Plain);
}

#[test]
fn a_timeout_is_retried() {
    // Two attempts of at least a second each.
    let r = check(&timeout(1), Position::Streaming, Handler::None);
    assert!(
        r.took >= Duration::from_secs(2),
        "{}: {:?}",
        r.label,
        r.took
    );
}

#[test]
fn malformed_stream_streaming() {
    check_all(&malformed(), Position::Streaming);
}

#[test]
fn malformed_stream_plain() {
    check_all(&malformed(), Position::Plain);
}

#[test]
fn stream_cut_midway_streaming() {
    check_all(&cut_midway(), Position::Streaming);
}

#[test]
fn stream_cut_midway_plain() {
    check_all(&cut_midway(), Position::Plain);
}

#[test]
fn rate_limit_then_answer() {
    for position in [Position::Streaming, Position::Plain] {
        for handler in [Handler::None, Handler::Comment] {
            let label = format!("429 then an answer / {position:?} / handler {handler:?}");
            let r = run(
                &canvas_for(position, handler, 1),
                Some(vec![
                    Reply::status(429, "slow down"),
                    Reply::sse(&["Hello", " world"]),
                ]),
                None,
                label,
            );
            let label = r.label.as_str();
            let t = r.trace();
            expect_code(&r.out, 0, label);
            assert_eq!(r.requests, 2, "{label}: requests");
            let stdout = String::from_utf8_lossy(&r.out.stdout);
            assert!(!stdout.contains("**ERROR**"), "{label}: {stdout}");
            for e in r.evs.iter().filter(|e| e["event"] == "node_finished") {
                assert!(e["data"]["error"].is_null(), "{label}: {e}");
            }
            assert_eq!(
                r.finished("LLM:A")["data"]["outputs"]["content"],
                "Hello world",
                "{label}"
            );
            let shown = match position {
                Position::Streaming => "Got:Hello world",
                Position::Plain => "<<Hello world>>",
            };
            assert_eq!(
                r.finished("Message:M")["data"]["outputs"]["content"],
                shown,
                "{label}"
            );
            assert_eq!(r.streamed(), shown, "{label}: {t:?}");
            assert_eq!(
                r.last_event().as_deref(),
                Some("workflow_finished"),
                "{label}: {t:?}"
            );
        }
    }
}
