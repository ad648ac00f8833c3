//! Invoke (RAGFlow's HTTP request node) end to end: the real binary against HTTP peers on
//! 127.0.0.1 — query strings, JSON and form bodies, header placeholders, clean_html,
//! error pages, retries — and the SSRF guard: metadata and loopback targets refused
//! unless `--allow-private-network` or `CANVAS_ALLOW_PRIVATE=1` allows them. Every peer
//! is local; nothing reaches the internet (169.254.169.254 is link-local).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::CanvasCli;
use crate::peer::{FakeServer, Reply};
use crate::util::final_content;

const ALLOW: &str = "--allow-private-network";

/// begin (with a `city` input) → Invoke:I (`params`) → Message:M showing its result.
fn flow(params: Value) -> Value {
    json!({
        "components": {
            "begin": {
                "obj": {"component_name": "Begin", "params": {
                    "mode": "conversational",
                    "inputs": {"city": {"name": "City", "type": "line", "optional": true}}
                }},
                "downstream": ["Invoke:I"]
            },
            "Invoke:I": {
                "obj": {"component_name": "Invoke", "params": params},
                "upstream": ["begin"],
                "downstream": ["Message:M"]
            },
            "Message:M": {
                "obj": {"component_name": "Message", "params": {"content": ["{Invoke:I@result}"]}},
                "upstream": ["Invoke:I"],
                "downstream": []
            }
        }
    })
}

/// `canvas` with no allowance inherited from the test's environment.
fn bare() -> CanvasCli {
    CanvasCli::new().env_remove("CANVAS_ALLOW_PRIVATE")
}

/// What one run gave.
struct Run {
    code: Option<i32>,
    events: Vec<Value>,
    stderr: String,
}

impl Run {
    /// Invoke's `node_finished` data.
    fn invoke_finished(&self) -> &Value {
        self.events
            .iter()
            .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "Invoke:I")
            .map(|e| &e["data"])
            .unwrap_or_else(|| panic!("no node_finished for Invoke:I: {:?}", self.events))
    }

    /// Invoke's `_ERROR` text (`""` when none).
    fn invoke_error(&self) -> String {
        self.invoke_finished()["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The answer the run ended with.
    fn answer(&self) -> String {
        final_content(&self.events).unwrap_or_else(|| {
            panic!(
                "no workflow_finished content (exit {:?}): {}\n{:?}",
                self.code, self.stderr, self.events
            )
        })
    }
}

/// Run `dsl` with `args` (`--format jsonl` added) through `cli`.
fn run_with(cli: CanvasCli, dsl: &Value, args: &[&str]) -> Run {
    let text = serde_json::to_string_pretty(dsl).expect("a canvas prints as JSON");
    let cli = cli.file("invoke.json", text);
    let f = cli.path("invoke.json");
    let ran = cli
        .args(["run", "--format", "jsonl"])
        .args(args)
        .arg(&f)
        .run();
    Run {
        code: ran.exit_code(),
        events: ran.events(),
        stderr: ran.stderr(),
    }
}

fn run(dsl: &Value, args: &[&str]) -> Run {
    run_with(bare(), dsl, args)
}

#[test]
fn get_sends_variables_as_query_and_resolves_header_placeholders() {
    let server = FakeServer::start(vec![Reply::text(200, "text/plain", "sunny in Paris")]);
    let dsl = flow(json!({
        "url": server.url("/weather"),
        "method": "GET",
        "headers": "{\"Accept\": \"text/plain\", \"X-Query\": \"asked: {sys.query}\"}",
        "variables": [
            {"key": "city", "ref": "begin@city"},
            {"key": "units", "value": "metric"},
            {"key": "q", "value": "{sys.query}!"}
        ],
        "timeout": 10
    }));
    let r = run(&dsl, &[ALLOW, "-i", "city=São Paulo", "-q", "what weather"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.answer(), "sunny in Paris");
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method(), "GET");
    assert_eq!(
        seen[0].target(),
        "/weather?city=S%C3%A3o+Paulo&units=metric&q=what+weather%21"
    );
    assert_eq!(seen[0].header("x-query"), Some("asked: what weather"));
    assert_eq!(seen[0].header("accept"), Some("text/plain"));
    assert_eq!(seen[0].body, "");
    // RAGFlow records each `ref` as an input of the node.
    let fin = r.invoke_finished();
    assert_eq!(fin["inputs"], json!({"begin@city": "São Paulo"}));
    assert_eq!(fin["outputs"]["result"], "sunny in Paris");
    assert!(fin["error"].is_null(), "{fin}");
    // The progress text RAGFlow shows.
    let started = r
        .events
        .iter()
        .find(|e| e["event"] == "node_started" && e["data"]["component_id"] == "Invoke:I")
        .unwrap();
    assert_eq!(
        started["data"]["thoughts"],
        "Waiting for the server respond..."
    );
}

#[test]
fn post_sends_a_json_body_with_json_strings_decoded() {
    let server = FakeServer::start(vec![Reply::json(200, json!({"ok": true}))]);
    let dsl = flow(json!({
        "url": server.url("/api/items"),
        "method": "post",
        "datatype": "json",
        "variables": [
            {"key": "n", "value": "5"},
            {"key": "tags", "value": "[\"a\", \"b\"]"},
            {"key": "q", "ref": "sys.query"},
            {"key": "city", "ref": "begin@city"}
        ]
    }));
    let r = run(
        &dsl,
        &[ALLOW, "-q", "héllo", "-i", "city={\"name\": \"Oslo\"}"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method(), "POST");
    assert_eq!(seen[0].path(), "/api/items");
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    assert_eq!(
        seen[0].json(),
        json!({"n": 5, "tags": ["a", "b"], "q": "héllo", "city": {"name": "Oslo"}})
    );
    // requests' json.dumps: ASCII only, Python separators.
    assert!(
        seen[0].body.contains(r#""q": "h\u00e9llo""#),
        "{}",
        seen[0].body
    );
    // The recorded input is the decoded value.
    assert_eq!(
        r.invoke_finished()["inputs"]["begin@city"],
        json!({"name": "Oslo"})
    );
    assert_eq!(r.answer(), r#"{"ok":true}"#);
}

#[test]
fn put_sends_a_form_body_without_decoding() {
    let server = FakeServer::start(vec![Reply::text(200, "text/plain", "stored")]);
    let dsl = flow(json!({
        "url": server.url("/form"),
        "method": "PUT",
        "datatype": "formdata",
        "variables": [
            {"key": "n", "value": "5"},
            {"key": "text", "value": "a b&c"},
            {"key": "q", "ref": "sys.query"}
        ]
    }));
    let r = run(&dsl, &[ALLOW, "-q", "x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let seen = server.seen();
    assert_eq!(seen[0].method(), "PUT");
    assert_eq!(
        seen[0].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(seen[0].body, "n=5&text=a+b%26c&q=x");
    assert_eq!(r.answer(), "stored");
}

#[test]
fn url_without_scheme_and_with_variables() {
    let server = FakeServer::start(vec![Reply::text(200, "text/plain", "found")]);
    // `http://` is prepended; references in the URL are substituted.
    let dsl = flow(json!({
        "url": format!("127.0.0.1:{}/items/{{begin@city}}", server.port),
        "method": "get"
    }));
    let r = run(&dsl, &[ALLOW, "-i", "city=42", "-q", "x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(server.seen()[0].target(), "/items/42");
    assert_eq!(r.answer(), "found");
}

#[test]
fn clean_html_returns_the_page_text() {
    let page = "<html><head><title>Ignored</title><style>p{color:red}</style></head><body>\
                <h1>Report</h1><p>Sales  were\n <b>up</b>.</p><script>track()</script>\
                <div>Line one<br>Line two</div></body></html>";
    let server = FakeServer::start(vec![Reply::text(200, "text/html", page)]);
    let dsl = flow(json!({"url": server.url("/page"), "clean_html": true}));
    let r = run(&dsl, &[ALLOW, "-q", "x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.answer(), "# Report\nSales were up.\nLine one\nLine two");
    // Without clean_html the page comes back as is.
    let dsl = flow(json!({"url": server.url("/page")}));
    assert_eq!(run(&dsl, &[ALLOW, "-q", "x"]).answer(), page);
}

#[test]
fn error_status_pages_are_returned_as_text() {
    let server = FakeServer::start(vec![Reply::text(500, "text/plain", "internal boom")]);
    let dsl = flow(json!({"url": server.url("/fail"), "max_retries": 2, "delay_after_error": 0}));
    let r = run(&dsl, &[ALLOW, "-q", "x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.answer(), "internal boom");
    assert!(r.invoke_finished()["error"].is_null());
    // A status is an answer, not a failure: no retry.
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn redirects_are_not_followed() {
    let target = FakeServer::start(vec![Reply::text(200, "text/plain", "moved here")]);
    let mut hop = Reply::redirect(&target.url("/new"));
    hop.body = "see /new".into();
    let server = FakeServer::start(vec![hop]);
    let r = run(
        &flow(json!({"url": server.url("/old")})),
        &[ALLOW, "-q", "x"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.answer(), "see /new");
    assert!(target.seen().is_empty());
}

/// A peer that drops the first `drops` connections without answering, then answers
/// `ok on retry`; counts connections.
fn flaky_server(drops: usize) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let count2 = count.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let n = count2.fetch_add(1, Ordering::SeqCst) + 1;
            conn.set_read_timeout(Some(Duration::from_secs(5))).ok();
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            if n > drops {
                let body = "ok on retry";
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
            // Dropping the connection without a reply is a network error for the client.
        }
    });
    (port, count)
}

#[test]
fn network_errors_are_retried() {
    let (port, count) = flaky_server(1);
    let dsl = flow(json!({
        "url": format!("http://127.0.0.1:{port}/"),
        "max_retries": 1,
        "delay_after_error": 0.2
    }));
    let r = run(&dsl, &[ALLOW, "-q", "x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.answer(), "ok on retry");
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[test]
fn connection_refused_after_all_retries_is_the_error() {
    // A port nobody listens on: bind, note it, close.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dsl = flow(json!({
        "url": format!("http://127.0.0.1:{port}/"),
        "max_retries": 2,
        "delay_after_error": 0.3
    }));
    let t = Instant::now();
    let r = run(&dsl, &[ALLOW, "-q", "x"]);
    // Two sleeps between three attempts.
    assert!(
        t.elapsed() >= Duration::from_millis(600),
        "{:?}",
        t.elapsed()
    );
    let err = r.invoke_error();
    assert!(err.to_lowercase().contains("refused"), "{err}");
    assert!(!err.contains("URL not valid"), "{err}");
    // An unhandled component error ends the run without workflow_finished.
    assert_ne!(r.code, Some(0));
    assert!(final_content(&r.events).is_none());
}

#[test]
fn failures_can_be_commented_away() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dsl = flow(json!({
        "url": format!("http://127.0.0.1:{port}/"),
        "delay_after_error": 0,
        "exception_method": "comment",
        "exception_default_value": "service unavailable"
    }));
    let r = run(&dsl, &[ALLOW, "-q", "x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // RAGFlow: Invoke sets `_ERROR` itself; the canvas then shows the default value.
    assert!(r.invoke_error().to_lowercase().contains("refused"));
    let shown: Vec<&Value> = r
        .events
        .iter()
        .filter(|e| e["event"] == "message")
        .map(|e| &e["data"]["content"])
        .collect();
    assert!(shown.contains(&&json!("service unavailable")), "{shown:?}");
}

// ---------------------------------------------------------------------------------------
// The SSRF guard.

fn assert_refused(r: &Run, what: &str) {
    let err = r.invoke_error();
    assert!(err.starts_with("URL not valid"), "{what}: {err}");
    assert!(err.contains(ALLOW), "{what}: the flag is named: {err}");
    assert!(err.contains("CANVAS_ALLOW_PRIVATE=1"), "{what}: {err}");
    assert_ne!(r.code, Some(0), "{what}: the run fails");
}

#[test]
fn metadata_address_is_refused_without_the_allowance() {
    let dsl = flow(json!({"url": "http://169.254.169.254/latest/meta-data/", "timeout": 1}));
    let r = run(&dsl, &["-q", "x"]);
    assert_refused(&r, "169.254.169.254");
    assert!(
        r.invoke_error().contains("cloud metadata"),
        "{}",
        r.invoke_error()
    );
    // Allowed: the request is attempted (link-local, it times out or is unreachable
    // here); whatever happens, it is not the refusal.
    for allow in [
        run(&dsl, &[ALLOW, "-q", "x"]),
        run_with(bare().env("CANVAS_ALLOW_PRIVATE", "1"), &dsl, &["-q", "x"]),
    ] {
        let err = allow.invoke_error();
        assert!(!err.contains("URL not valid"), "{err}");
        assert!(!err.contains("refused to connect"), "{err}");
    }
}

#[test]
fn loopback_names_are_refused_without_the_allowance() {
    let server = FakeServer::start(vec![Reply::text(200, "text/plain", "local secret")]);
    let dsl = flow(json!({
        "url": format!("http://localhost:{}/admin", server.port),
        "timeout": 10
    }));
    let r = run(&dsl, &["-q", "x"]);
    assert_refused(&r, "localhost");
    assert!(
        r.invoke_error().contains("\"localhost\""),
        "{}",
        r.invoke_error()
    );
    assert!(server.seen().is_empty(), "nothing was sent");

    // The flag lets it through to the peer.
    let r = run(&dsl, &[ALLOW, "-q", "x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.answer(), "local secret");
    assert_eq!(server.seen().len(), 1);
    assert_eq!(server.seen()[0].path(), "/admin");

    // So does the environment variable.
    let r = run_with(bare().env("CANVAS_ALLOW_PRIVATE", "1"), &dsl, &["-q", "x"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.answer(), "local secret");
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn literal_loopback_and_private_proxies_are_refused() {
    let server = FakeServer::start(vec![Reply::text(200, "text/plain", "x")]);
    let r = run(&flow(json!({"url": server.url("/")})), &["-q", "x"]);
    assert_refused(&r, "127.0.0.1");
    // The proxy is checked too (RAGFlow's guard runs on it first).
    let r = run(
        &flow(json!({"url": "http://8.8.8.8/", "proxy": format!("127.0.0.1:{}", server.port)})),
        &["-q", "x"],
    );
    assert_refused(&r, "proxy");
    assert!(server.seen().is_empty());
}

#[test]
fn a_streamed_model_answer_is_drained_into_the_request() {
    // The LLM feeds a Message, so its answer is left as a stream; Invoke reads it in the
    // same batch and must send the whole text (RAGFlow joins the generator).
    let server = FakeServer::start(vec![Reply::text(200, "text/plain", "posted")]);
    let dsl = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:G"]},
        "LLM:G": {
            "obj": {"component_name": "LLM", "params": {
                "llm_id": "mock", "sys_prompt": "Be brief.",
                "prompts": [{"role": "user", "content": "{sys.query}"}]
            }},
            "downstream": ["Message:A", "Invoke:I"]
        },
        "Message:A": {"obj": {"component_name": "Message",
            "params": {"content": ["{LLM:G@content}"]}}, "downstream": []},
        "Invoke:I": {"obj": {"component_name": "Invoke", "params": {
            "url": server.url("/answers"), "method": "post",
            "variables": [{"key": "answer", "ref": "LLM:G@content"}]
        }}, "downstream": []}
    }});
    let cli = bare()
        .file("mock.json", r#"{"default": "echo"}"#)
        .json("flow.json", &dsl);
    let (mock, f) = (cli.path("mock.json"), cli.path("flow.json"));
    let ran = cli
        .arg("run")
        .arg("--mock-llm")
        .arg(&mock)
        .args(["--format", "jsonl", ALLOW, "-q", "plan my day"])
        .arg(&f)
        .run()
        .code(0);
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].json(), json!({"answer": "ECHO: plan my day"}));
    let evs = ran.events();
    let fin = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "Invoke:I")
        .unwrap();
    assert_eq!(fin["data"]["inputs"]["LLM:G@content"], "ECHO: plan my day");
    assert_eq!(fin["data"]["outputs"]["result"], "posted");
}
