//! CodeExec: code run for real by the local sandbox (python3, node) or sent to a fake
//! self-managed executor, read back from `node_finished` in `--format jsonl` events.

use std::net::TcpListener;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::harness::{CanvasCli, Ran};
use crate::peer::{FakeServer, Reply};

/// begin (input `x`) → CodeExec:Run (`params`) → Message:Out.
fn flow(params: Value) -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {
            "mode": "task",
            "inputs": {"x": {"name": "x", "type": "integer", "optional": true}}
        }}, "downstream": ["CodeExec:Run"]},
        "CodeExec:Run": {"obj": {"component_name": "CodeExec", "params": params},
            "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message", "params": {
            "content": ["result={CodeExec:Run@result} error={CodeExec:Run@_ERROR}"]
        }}, "downstream": [], "upstream": ["CodeExec:Run"]}
    }})
}

/// Python code with `x` from Begin, one business output `result` of type `ty`.
fn python(script: &str, ty: &str) -> Value {
    json!({
        "lang": "python",
        "script": script,
        "arguments": {"x": "begin@x"},
        "outputs": {"result": {"type": ty, "value": ""}}
    })
}

/// Run the flow with `x` and extra environment; the run and CodeExec's
/// `node_finished` data.
fn run(params: Value, x: &str, env: &[(&str, &str)], extra: &[&str]) -> (Ran, Value) {
    let cli = CanvasCli::new().json("flow.json", &flow(params));
    let flow = cli.path("flow.json");
    let ran = cli
        .args(["run", "--format", "jsonl", "-i", &format!("x={x}")])
        .args(extra)
        .arg(&flow)
        .envs(env.iter().copied())
        .run();
    let evs = ran.events();
    let finished = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "CodeExec:Run")
        .unwrap_or_else(|| {
            panic!(
                "no node_finished for CodeExec:Run\nstdout: {}\nstderr: {}",
                ran.stdout(),
                ran.stderr()
            )
        })["data"]
        .clone();
    (ran, finished)
}

fn error(finished: &Value) -> String {
    let e = finished["outputs"]["_ERROR"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_eq!(finished["error"], json!(e), "node_finished.error is _ERROR");
    e
}

#[test]
fn python_result_from_a_begin_input() {
    let (out, f) = run(
        python(
            "def main(x):\n    return {'doubled': x * 2, 'kind': type(x).__name__}",
            "Object",
        ),
        "21",
        &[],
        &[],
    );
    let out = out.code(0);
    let o = &f["outputs"];
    assert_eq!(o["result"], json!({"doubled": 42, "kind": "int"}));
    assert_eq!(o["raw_result"], o["result"]);
    assert_eq!(o["actual_type"], "Object");
    assert_eq!(o["_ERROR"], "");
    assert_eq!(o["_ARTIFACTS"], Value::Null);
    assert_eq!(o["attachments"], json!([]));
    assert_eq!(
        o["content"],
        "{\n  \"doubled\": 42,\n  \"kind\": \"int\"\n}"
    );
    assert_eq!(f["inputs"]["lang"], "python");
    // Downstream nodes read the business output.
    let evs = out.events();
    let answer = evs.last().unwrap()["data"]["outputs"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        answer.starts_with("result={") && answer.contains("\"doubled\": 42"),
        "{answer}"
    );
}

#[test]
fn javascript_result() {
    let (out, f) = run(
        json!({
            "lang": "javascript",
            "script": "async function main(args) {\n  return [args.x + 1, typeof args.x, process.version.startsWith('v')];\n}\nmodule.exports = { main };",
            "arguments": {"x": "begin@x"},
            "outputs": {"result": {"type": "Array<Any>", "value": ""}}
        }),
        "41",
        &[],
        &[],
    );
    out.code(0);
    assert_eq!(f["outputs"]["result"], json!([42, "number", true]));
    assert_eq!(f["outputs"]["actual_type"], "Array<Any>");
    assert_eq!(f["inputs"]["lang"], "javascript");
}

#[test]
fn a_declared_type_mismatch_nulls_the_output() {
    let (_, f) = run(
        python("def main(x):\n    return x + 1", "String"),
        "1",
        &[],
        &[],
    );
    let o = &f["outputs"];
    assert_eq!(
        error(&f),
        "CodeExec contract mismatch at value: expected type String, got Number"
    );
    assert_eq!(o["result"], Value::Null);
    assert_eq!(o["raw_result"], 2);
    assert_eq!(o["actual_type"], "Number");
    assert_eq!(o["content"], "2");
}

#[test]
fn an_exception_leaves_the_traceback() {
    let (out, f) = run(
        python(
            "def main(x):\n    print('before')\n    return x / 0",
            "Number",
        ),
        "1",
        &[],
        &[],
    );
    let e = error(&f);
    assert!(e.contains("ZeroDivisionError"), "{e}");
    assert!(
        e.contains("line 3, in main"),
        "user line numbers are kept: {e}"
    );
    assert_ne!(out.exit_code(), Some(0));
}

#[test]
fn artifacts_are_kept_and_linked() {
    let store = tempfile::tempdir().unwrap();
    let script = "def main(x):\n    with open('artifacts/out.csv', 'w') as f:\n        f.write('n,square\\n%d,%d\\n' % (x, x * x))\n    return 'written'";
    let (out, f) = run(
        python(script, "String"),
        "7",
        &[],
        &["--output-dir", store.path().to_str().unwrap()],
    );
    let out = out.code(0);
    let o = &f["outputs"];
    let run_id = out.events()[0]["task_id"].as_str().unwrap().to_string();
    let arts = o["_ARTIFACTS"].as_array().expect("artifacts");
    assert_eq!(arts.len(), 1);
    assert_eq!(arts[0]["name"], "out.csv");
    assert_eq!(arts[0]["mime_type"], "text/csv");
    assert_eq!(arts[0]["size"], "n,square\n7,49\n".len());
    let url = arts[0]["url"].as_str().unwrap();
    let path = url.strip_prefix("file://").expect("a file URL");
    let expected = std::path::absolute(store.path().join(&run_id).join("out.csv")).unwrap();
    assert_eq!(Path::new(path), expected);
    assert_eq!(std::fs::read_to_string(path).unwrap(), "n,square\n7,49\n");
    assert_eq!(
        o["attachments"],
        json!([format!("[Download out.csv]({url})")])
    );
    assert_eq!(
        o["_ATTACHMENT_CONTENT"],
        "attachment_count: 1\n\nattachment1 (csv): out.csv\nn,square\n7,49"
    );
    assert_eq!(
        o["content"],
        "written\n\nattachment_count: 1\n\nattachment1 (csv): out.csv\nn,square\n7,49"
    );
}

#[test]
fn an_endless_loop_is_stopped_by_the_timeout() {
    let started = std::time::Instant::now();
    let (_, f) = run(
        python("def main(x):\n    while True:\n        pass", "Any"),
        "1",
        &[("CANVAS_SANDBOX_TIMEOUT", "1")],
        &[],
    );
    assert_eq!(error(&f), "the code ran longer than 1 s and was stopped");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn allocating_4_gb_hits_the_memory_limit() {
    let (_, f) = run(
        python(
            "def main(x):\n    block = bytearray(4 * 1024 ** 3)\n    return len(block)",
            "Number",
        ),
        "1",
        &[],
        &[],
    );
    assert_eq!(error(&f), "the code ran out of memory (limit 512 MB)");
    let (_, f) = run(
        json!({
            "lang": "javascript",
            "script": "function main(args) { const b = Buffer.alloc(4 * 1024 ** 3, 1); return b.length; }",
            "outputs": {"result": {"type": "Number"}}
        }),
        "1",
        &[],
        &[],
    );
    assert_eq!(error(&f), "the code ran out of memory (limit 512 MB)");
}

#[test]
fn the_network_is_unreachable() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "import socket\ndef main(x):\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=5)\n    s.close()\n    return 'connected'"
    );
    let (_, f) = run(python(&script, "String"), "1", &[], &[]);
    let e = error(&f);
    assert!(
        e.starts_with("the code tried to use the network, which the local sandbox does not allow")
            && e.contains("Network is unreachable"),
        "{e}"
    );
    assert!(listener.accept().is_err(), "nothing may have connected");
    // The same code reaches the listener once the network is allowed: the isolation,
    // not the listener, made the difference.
    let (_, f) = run(
        python(&script, "String"),
        "1",
        &[("CANVAS_SANDBOX_ALLOW_NETWORK", "1")],
        &[],
    );
    assert_eq!(f["outputs"]["result"], "connected", "{f}");
    assert!(listener.accept().is_ok());
}

#[test]
fn an_unknown_reference_fails_like_ragflow() {
    let mut p = python("def main(x):\n    return x", "Any");
    p["arguments"] = json!({"x": "Nope:Gone@x"});
    let (_, f) = run(p, "1", &[], &[]);
    assert_eq!(error(&f), "Can't find variable: 'Nope:Gone@x'");
}

#[test]
fn a_self_managed_executor_runs_the_code() {
    let server = FakeServer::start(vec![Reply::json(
        200,
        json!({
            "status": "success", "stdout": "", "stderr": "", "exit_code": 0,
            "result": {"present": true, "value": {"sum": 3}, "type": "json"},
            "artifacts": [{"name": "chart.png", "mime_type": "image/png", "size": 4,
                           "content_b64": STANDARD.encode(b"\x89PNG")}]
        }),
    )]);
    let store = tempfile::tempdir().unwrap();
    let url = server.url("");
    let (out, f) = run(
        python("def main(x):\n    return {'sum': x + 2}", "Object"),
        "1",
        &[("SANDBOX_EXECUTOR_MANAGER_URL", url.as_str())],
        &[
            "--allow-private-network",
            "--output-dir",
            store.path().to_str().unwrap(),
        ],
    );
    out.code(0);
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method(), "POST");
    assert_eq!(seen[0].path(), "/run");
    let body = seen[0].json();
    assert_eq!(body["language"], "python");
    assert_eq!(body["arguments"], json!({"x": 1}));
    let code = STANDARD.decode(body["code_b64"].as_str().unwrap()).unwrap();
    assert_eq!(code, b"def main(x):\n    return {'sum': x + 2}");
    let o = &f["outputs"];
    assert_eq!(o["result"], json!({"sum": 3}));
    let link = o["attachments"][0].as_str().unwrap();
    assert!(link.starts_with("![chart.png](file://"), "{link}");
    let path = o["_ARTIFACTS"][0]["url"]
        .as_str()
        .unwrap()
        .strip_prefix("file://")
        .unwrap();
    assert_eq!(std::fs::read(path).unwrap(), b"\x89PNG");
    assert!(
        o["content"]
            .as_str()
            .unwrap()
            .contains("attachment1 (image): chart.png"),
        "{o}"
    );
}

#[test]
fn executor_failures_are_reported() {
    // CodeExec's error when the executor at `server` answers.
    let error_from = |server: &FakeServer| {
        let url = server.url("");
        let (_, f) = run(
            python("def main(x):\n    return x", "Any"),
            "1",
            &[("SANDBOX_EXECUTOR_MANAGER_URL", url.as_str())],
            &["--allow-private-network"],
        );
        error(&f)
    };
    let server = FakeServer::start(vec![Reply::text(500, "text/plain", "pool exhausted")]);
    let url = server.url("");
    assert_eq!(
        error_from(&server),
        format!("the sandbox executor at {url}/run answered HTTP 500: pool exhausted")
    );
    // A failed program: the executor's stderr is the error (RAGFlow's contract).
    let server = FakeServer::start(vec![Reply::json(
        200,
        json!({"status": "resource_limit_exceeded", "stdout": "", "stderr": "Execution timeout",
               "exit_code": -124, "result": null, "artifacts": []}),
    )]);
    assert_eq!(error_from(&server), "Execution timeout");
}
