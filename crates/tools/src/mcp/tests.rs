//! Sessions against the fake MCP server (`tests/fixtures/mcp/fake_server.py`) on
//! each transport: stdio, streamable HTTP (JSON and SSE answers), legacy SSE.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::*;
use crate::net::NetPolicy;

const OPEN: NetPolicy = NetPolicy {
    allow_private: true,
};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mcp/fake_server.py")
}

/// A fake HTTP server process, killed when dropped.
struct Fake {
    _child: tokio::process::Child,
    port: u16,
}

async fn start(args: &[&str]) -> Fake {
    let mut child = tokio::process::Command::new("python3")
        .arg(script())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 is needed for the MCP tests");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("the fake server prints its port")
    .expect("read the port");
    let port = line.trim().parse().expect("a port number");
    Fake {
        _child: child,
        port,
    }
}

fn config(yaml: &str) -> McpConfig {
    McpConfig::parse(yaml).expect("valid config")
}

fn http_server(url: &str, transport: &str) -> McpServer {
    let cfg = config(&format!(
        "servers:\n  weather:\n    url: {url}\n    transport: {transport}\n    headers:\n      Authorization: \"Bearer ${{TOKEN}}\"\n      X-Blank: \"Bearer ${{NOTHING}}\"\n    variables: {{TOKEN: s3cret, NOTHING: ''}}\n"
    ));
    cfg.server("weather").expect("configured").clone()
}

fn stdio_server(pidfile: Option<&std::path::Path>) -> McpServer {
    let env = pidfile.map_or(String::new(), |p| {
        format!(
            "    env: {{FAKE_MCP_PIDFILE: \"${{PIDFILE}}\"}}\n    variables: {{PIDFILE: {}}}\n",
            p.display()
        )
    });
    let cfg = config(&format!(
        "servers:\n  files:\n    command: python3\n    args: [{}, stdio]\n{env}",
        script().display()
    ));
    cfg.server("files").expect("configured").clone()
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("test finished in time")
}

const SECOND: Duration = Duration::from_secs(1);

/// Everything a session must do, whatever the transport.
async fn exercise(s: &McpSession) {
    let tools = s.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["add", "echo", "fail", "slow", "image", "empty"]);
    assert_eq!(tools[0]["description"], "Add two numbers.");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["a", "b"]));

    let long = Duration::from_secs(10);
    assert_eq!(s.call_tool("add", json!({"a": 2, "b": 3}), long).await, "5");
    assert_eq!(
        s.call_tool("echo", json!({"text": "héllo"}), long).await,
        "héllo"
    );
    assert_eq!(
        s.call_tool("fail", json!({}), long).await,
        "MCP server error: [TextContent(type='text', text='boom', annotations=None, meta=None)]"
    );
    assert_eq!(
        s.call_tool("image", Value::Null, long).await,
        "Unsupported content type <class 'list'>"
    );
    assert_eq!(
        s.call_tool("empty", json!({}), long).await,
        "MCP server returned empty content."
    );
    assert_eq!(
        s.call_tool("nope", json!({}), long).await,
        "Error calling tool 'nope': Unknown tool: nope."
    );
    assert_eq!(
        s.call_tool("add", json!([1, 2]), long).await,
        "Error calling tool 'add': arguments must be a JSON object."
    );
    let started = std::time::Instant::now();
    assert_eq!(
        s.call_tool("slow", json!({"seconds": 20}), Duration::from_millis(300))
            .await,
        "Timeout calling tool 'slow' (timeout=0.3)."
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // Calls run concurrently: a quick one is not held by a slow one, and the
    // session still works after a timed-out call.
    let t0 = std::time::Instant::now();
    let (slow, quick) = tokio::join!(
        s.call_tool("slow", json!({"seconds": 1.5}), Duration::from_secs(10)),
        async {
            let r = s.call_tool("add", json!({"a": 1, "b": 1}), SECOND).await;
            (r, t0.elapsed())
        }
    );
    assert_eq!(slow, "done");
    assert!(quick.1 < Duration::from_millis(1200), "{:?}", quick.1);
    assert_eq!(quick.0, "2");
}

#[tokio::test]
async fn stdio_server_lists_and_calls_tools_and_stops_on_close() {
    within(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let pidfile = dir.path().join("pid");
        // Stdio servers come from the user's configuration: no network check.
        let s = McpSession::connect(&stdio_server(Some(&pidfile)), &NetPolicy::default(), &[])
            .await
            .expect("connect");
        assert_eq!(s.id(), "files");
        exercise(&s).await;
        // Stdio servers get no headers.
        assert_eq!(
            s.call_tool("echo", json!({"header": "authorization"}), SECOND)
                .await,
            ""
        );
        let pid = std::fs::read_to_string(&pidfile).expect("the ${PIDFILE} env reached the server");
        let proc_dir = PathBuf::from(format!("/proc/{}", pid.trim()));
        assert!(proc_dir.exists());
        s.close().await;
        for _ in 0..50 {
            if !proc_dir.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(!proc_dir.exists(), "the server process is gone after close");
    })
    .await;
}

async fn http_session(transport: &str, fake_args: &[&str], path: &str) {
    let fake = start(fake_args).await;
    let url = format!("http://127.0.0.1:{}{path}", fake.port);
    let server = http_server(&url, transport);
    let custom = [("X-Request".to_string(), "r1".to_string())];
    let s = McpSession::connect(&server, &OPEN, &custom)
        .await
        .expect("connect");
    exercise(&s).await;
    let header = |name: &str, place: &str| {
        let args = json!({"header": name, "where": place});
        let s = &s;
        async move { s.call_tool("echo", args, Duration::from_secs(5)).await }
    };
    // ${TOKEN} came from the server's variables; the Bearer-only header was dropped.
    assert_eq!(header("Authorization", "request").await, "Bearer s3cret");
    assert_eq!(header("X-Request", "request").await, "r1");
    assert_eq!(header("X-Blank", "request").await, "");
    if transport == "sse" {
        // The stream's GET carries them too.
        assert_eq!(header("Authorization", "stream").await, "Bearer s3cret");
        assert_eq!(header("X-Request", "stream").await, "r1");
    }
    s.close().await;
}

#[tokio::test]
async fn streamable_http_with_json_answers() {
    within(http_session("streamable-http", &["http"], "/mcp")).await;
}

#[tokio::test]
async fn streamable_http_with_sse_answers() {
    within(http_session(
        "streamable-http",
        &["http", "--sse-responses"],
        "/mcp",
    ))
    .await;
}

#[tokio::test]
async fn legacy_sse_transport() {
    within(http_session("sse", &["sse"], "/sse")).await;
}

#[tokio::test]
async fn private_addresses_need_allow_private() {
    within(async {
        let fake = start(&["http"]).await;
        for (transport, path) in [("streamable-http", "/mcp"), ("sse", "/sse")] {
            let url = format!("http://127.0.0.1:{}{path}", fake.port);
            let server = http_server(&url, transport);
            let e = McpSession::connect(&server, &NetPolicy::default(), &[])
                .await
                .expect_err("loopback is refused by default");
            assert!(matches!(e, McpError::Blocked { .. }), "{e:?}");
            let msg = e.to_string();
            assert!(
                msg.contains("\"weather\"") && msg.contains("--allow-private-network"),
                "{msg}"
            );
        }
        let url = format!("http://127.0.0.1:{}/mcp", fake.port);
        let s = McpSession::connect(&http_server(&url, "streamable-http"), &OPEN, &[])
            .await
            .expect("allowed with allow_private");
        assert_eq!(
            s.call_tool("add", json!({"a": 1, "b": 2}), SECOND).await,
            "3"
        );
        s.close().await;
    })
    .await;
}

#[tokio::test]
async fn unknown_variables_fail_before_connecting() {
    within(async {
        let cfg = config(
            "servers:\n  w:\n    url: http://127.0.0.1:9/mcp\n    headers: {Authorization: \"Bearer ${CANVAS_MCP_TEST_NEVER_SET}\"}\n",
        );
        let e = McpSession::connect(cfg.server("w").expect("w"), &OPEN, &[])
            .await
            .expect_err("unknown variable");
        assert!(
            matches!(&e, McpError::UnknownVariable { server, var } if server == "w" && var == "CANVAS_MCP_TEST_NEVER_SET"),
            "{e:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn connection_failures_are_one_line_errors() {
    within(async {
        let fake = start(&["http"]).await;
        // Wrong path: HTTP 404 to initialize.
        let url = format!("http://127.0.0.1:{}/nope", fake.port);
        let e = McpSession::connect(&http_server(&url, "streamable-http"), &OPEN, &[])
            .await
            .expect_err("404");
        assert!(
            matches!(e, McpError::Connect { .. }) && e.to_string().contains("404"),
            "{e:?}"
        );
        // Legacy SSE against a server without the stream.
        let url = format!("http://127.0.0.1:{}/sse", fake.port);
        let e = McpSession::connect(&http_server(&url, "sse"), &OPEN, &[])
            .await
            .expect_err("no SSE stream");
        let msg = e.to_string();
        assert!(msg.contains("HTTP 405") && !msg.contains('\n'), "{msg}");
        // Nothing listening.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let url = format!("http://127.0.0.1:{port}/mcp");
        let e = McpSession::connect(&http_server(&url, "streamable-http"), &OPEN, &[])
            .await
            .expect_err("refused");
        assert!(
            matches!(e, McpError::Connect { .. }) && e.to_string().contains("refused"),
            "{e:?}"
        );
        // Missing program.
        let cfg = config("servers: {p: {command: /nonexistent/canvas-mcp-server}}");
        let e = McpSession::connect(cfg.server("p").expect("p"), &OPEN, &[])
            .await
            .expect_err("no program");
        assert!(matches!(e, McpError::Spawn { .. }), "{e:?}");
        // A program that dies at once: its stderr explains.
        let cfg = config(
            "servers: {p: {command: python3, args: ['-c', 'import sys; sys.stderr.write(\"bad token\"); sys.exit(3)']}}",
        );
        let e = McpSession::connect(cfg.server("p").expect("p"), &OPEN, &[])
            .await
            .expect_err("exits");
        let msg = e.to_string();
        assert!(matches!(e, McpError::Connect { .. }) && msg.contains("bad token"), "{msg}");
    })
    .await;
}

#[tokio::test]
async fn a_silent_server_times_out_initialize_in_5_s() {
    within(async {
        // Accepts connections and never answers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let hold = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((sock, _)) = listener.accept().await {
                open.push(sock);
            }
        });
        for (transport, path) in [("streamable-http", "/mcp"), ("sse", "/sse")] {
            let url = format!("http://127.0.0.1:{port}{path}");
            let started = std::time::Instant::now();
            let e = McpSession::connect(&http_server(&url, transport), &OPEN, &[])
                .await
                .expect_err("silent");
            let took = started.elapsed();
            assert!(
                took >= Duration::from_millis(4900) && took < Duration::from_secs(8),
                "{took:?}"
            );
            assert!(
                matches!(&e, McpError::InitTimeout { server, secs: 5 } if server == "weather"),
                "{e:?}"
            );
        }
        hold.abort();
    })
    .await;
}

/// Sessions are shared by an Agent's concurrent tool calls.
#[allow(dead_code)]
fn sessions_and_their_futures_are_send(s: &McpSession, server: &McpServer, net: &NetPolicy) {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: T) {}
    send_sync::<McpSession>();
    send_sync::<McpConfig>();
    send(s.call_tool("x", Value::Null, CALL_TIMEOUT));
    send(s.list_tools());
    send(McpSession::connect(server, net, &[]));
}

#[test]
fn failed_connections_read_as_ragflow_call_errors() {
    let timeout = McpError::InitTimeout {
        server: "w".into(),
        secs: 5,
    };
    assert_eq!(
        timeout.call_error_text("maps_weather"),
        "Error calling tool 'maps_weather': Timeout initializing client_session for server w."
    );
    let refused = McpError::Connect {
        server: "w".into(),
        reason: "refused".into(),
        hint: "h",
    };
    assert_eq!(
        refused.call_error_text("t"),
        "Error calling tool 't': Connection failed (possibly due to auth error). Please check authentication settings first."
    );
    let blocked = McpError::Blocked {
        server: "w".into(),
        reason: "URL is private".into(),
    };
    assert_eq!(
        blocked.call_error_text("t"),
        "Error calling tool 't': MCP server \"w\": URL is private."
    );
}
