//! MCP tools through the binary: an Agent's `mcp` entry names a server by id,
//! `--mcp-config` says where it is (a local command over stdio, or a streamable HTTP
//! server started by the test on 127.0.0.1), and the model's tool call reaches it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::harness::{CanvasCli, Ran};

fn fake_server() -> String {
    format!(
        "{}/tests/fixtures/mcp/fake_server.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn agent_canvas() -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Agent:Calc"], "upstream": []},
        "Agent:Calc": {"obj": {"component_name": "Agent", "params": {
            "llm_id": "",
            "sys_prompt": "You add with the tool.",
            "prompts": [{"role": "user", "content": "{sys.query}"}],
            "mcp": [{"mcp_id": "calc", "tools": {"add": {"name": "add", "description": "Add two numbers.",
                "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}}],
        }}, "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message",
            "params": {"content": ["{Agent:Calc@content}"]}}, "downstream": [], "upstream": ["Agent:Calc"]},
    }})
}

/// The model calls `add_0` (the MCP tool, indexed after no component tools), then
/// answers with what the tool returned.
fn mock() -> Value {
    json!({"rules": [
        {"match": "(?s)sum is: (\\d+)|\\b5\\b", "on": "any", "answer": "The tool says so."},
        {"match": "add", "tool_calls": [{"name": "add_0", "arguments": {"a": 2, "b": 3}}]},
    ], "default": "no"})
}

fn run(config: &str, extra: &[&str]) -> Ran {
    run_mock(config, &mock(), extra)
}

/// [`run`] with another mock script.
fn run_mock(config: &str, mock: &Value, extra: &[&str]) -> Ran {
    CanvasCli::new()
        .json("flow.json", &agent_canvas())
        .file("mcp.yaml", config)
        .mock_llm(mock)
        .args([
            "run",
            "flow.json",
            "-q",
            "please add 2 and 3",
            "--format",
            "jsonl",
            "--mcp-config",
            "mcp.yaml",
        ])
        .args(extra)
        .run()
}

fn answer(evs: &[Value]) -> String {
    evs.iter()
        .filter(|e| e["event"] == "message")
        .filter_map(|e| e["data"]["content"].as_str())
        .collect()
}

#[test]
fn an_agent_calls_a_stdio_mcp_server_from_the_config() {
    let config = format!(
        "servers:\n  calc:\n    command: python3\n    args: [{:?}, stdio]\n",
        fake_server()
    );
    let evs = run(&config, &[]).code(0).events();
    assert_eq!(answer(&evs), "Running the add_0 tool...The tool says so.");
}

/// A fake streamable-HTTP MCP server on 127.0.0.1; killed on drop.
struct HttpServer(Child, u16);

impl HttpServer {
    fn start() -> HttpServer {
        let mut child = Command::new("python3")
            .args([fake_server().as_str(), "http"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the fake MCP server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("a port, got {line:?}"));
        HttpServer(child, port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_http_mcp_server_on_loopback_needs_the_private_network_allowance() {
    let server = HttpServer::start();
    let config = format!(
        "servers:\n  calc:\n    url: http://127.0.0.1:{}/mcp\n    transport: streamable-http\n",
        server.1
    );
    run(&config, &[])
        .code(1)
        .stderr_contains("--allow-private-network")
        .stderr_contains("calc");

    let out = run(&config, &["--allow-private-network"]).code(0);
    assert_eq!(
        answer(&out.events()),
        "Running the add_0 tool...The tool says so."
    );
}

/// The model calls `add_0`; it answers once the tool result holds `error`.
fn mock_reading(error: &str) -> Value {
    json!({"rules": [
        {"match": format!("(?s){}", regex::escape(error)), "on": "any", "answer": "The calculator is not available."},
        {"match": "add", "tool_calls": [{"name": "add_0", "arguments": {"a": 2, "b": 3}}]},
    ], "default": "the tool result never arrived"})
}

/// A setting missing for an Agent's MCP server is a tool error: the model reads it (as
/// RAGFlow answers every call of a server whose session failed) and the run goes on.
fn assert_the_model_read(out: Ran) {
    let evs = out.code(0).events();
    assert_eq!(
        answer(&evs),
        "Running the add_0 tool...The calculator is not available."
    );
    let agent = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "Agent:Calc")
        .expect("the Agent finished");
    assert_eq!(agent["data"]["error"], Value::Null);
}

#[test]
fn an_mcp_server_missing_from_the_config_is_what_the_model_reads() {
    let said = "Error calling tool 'add': MCP server \"calc\" is not configured: pass --mcp-config FILE with the server under `servers:` (url, or command and args).";
    let out = run_mock("servers: {}\n", &mock_reading(said), &[]);
    assert_the_model_read(out);
}

#[test]
fn an_undefined_header_variable_is_what_the_model_reads() {
    // Headers are made before any connection: no server is needed.
    let config = "servers:\n  calc:\n    url: http://127.0.0.1:9/mcp\n    headers: {Authorization: 'Bearer ${CANVAS_MCP_TEST_NEVER_SET}'}\n";
    let said = "MCP server \"calc\": `${CANVAS_MCP_TEST_NEVER_SET}` is not defined: set the environment variable CANVAS_MCP_TEST_NEVER_SET";
    let out = run_mock(config, &mock_reading(said), &[]);
    assert_the_model_read(out);
}
