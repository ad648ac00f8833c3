//! One live connection to an MCP server (RAGFlow's `MCPToolCallSession`): connect
//! with the server's transport behind the SSRF guard, list its tools, call one and
//! turn the result into the text the model reads (§4.4, §7.5).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use canvas_pyrt::py_repr;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{ClientInitializeError, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::McpError;
use super::config::{McpEndpoint, McpServer, McpTransport};
use super::sse::SseTransport;
use crate::net::{ClientOptions, NetPolicy};

/// RAGFlow's `initialize` timeout.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `tools/list` may take (RAGFlow's `get_tools` default).
pub const LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// RAGFlow's tool call timeout.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a stdio server's stderr is kept for error messages.
const STDERR_TAIL: usize = 2000;

/// An initialised session with one MCP server; calls may run concurrently.
pub struct McpSession {
    id: String,
    service: RunningService<RoleClient, ()>,
    stderr: Option<Arc<Mutex<String>>>,
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession").field("id", &self.id).finish()
    }
}

impl McpSession {
    /// Connect to `server` and run the MCP handshake (5 s limit). HTTP URLs pass the
    /// SSRF guard of `net`; `custom_headers` (the request's `custom_header`) go with
    /// every HTTP request after the server's own headers.
    pub async fn connect(
        server: &McpServer,
        net: &NetPolicy,
        custom_headers: &[(String, String)],
    ) -> Result<McpSession, McpError> {
        let id = server.id.clone();
        let hint = match &server.endpoint {
            McpEndpoint::Http { .. } => {
                "check the URL, the transport and the authentication headers"
            }
            McpEndpoint::Stdio { .. } => "check `command`, `args` and `env`",
        };
        let connect_err = |reason: String| McpError::Connect {
            server: id.clone(),
            reason,
            hint,
        };
        match &server.endpoint {
            McpEndpoint::Http { url, transport, .. } => {
                let headers = server.headers(custom_headers)?;
                let checked = net.check_url(url).await.map_err(|e| McpError::Blocked {
                    server: id.clone(),
                    reason: e.to_string(),
                })?;
                // Redirects are not followed: a hop could leave the checked address.
                let client = net
                    .client(&ClientOptions {
                        user_agent: Some(format!("canvas/{}", env!("CARGO_PKG_VERSION"))),
                        ..ClientOptions::default()
                    })
                    .map_err(|e| connect_err(e.to_string()))?;
                let mut map = HeaderMap::new();
                for (name, value) in &headers {
                    let bad = || McpError::BadHeader {
                        server: id.clone(),
                        name: name.clone(),
                    };
                    let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
                    let v = HeaderValue::from_str(value).map_err(|_| bad())?;
                    map.insert(n, v);
                }
                // One limit for the whole handshake, the SSE stream's opening included.
                let handshake = async {
                    match transport {
                        McpTransport::StreamableHttp => {
                            let custom: HashMap<HeaderName, HeaderValue> = map
                                .into_iter()
                                .filter_map(|(n, v)| n.map(|n| (n, v)))
                                .collect();
                            let config =
                                StreamableHttpClientTransportConfig::with_uri(checked.as_str())
                                    .custom_headers(custom);
                            let t = StreamableHttpClientTransport::with_client(client, config);
                            ().serve(t)
                                .await
                                .map_err(|e| connect_err(init_error_text(&e)))
                        }
                        McpTransport::Sse => {
                            let t = SseTransport::connect(client, checked, map)
                                .await
                                .map_err(|e| connect_err(error_chain(&e)))?;
                            ().serve(t)
                                .await
                                .map_err(|e| connect_err(init_error_text(&e)))
                        }
                    }
                };
                let service = tokio::time::timeout(INIT_TIMEOUT, handshake)
                    .await
                    .map_err(|_| McpError::InitTimeout {
                        server: id.clone(),
                        secs: INIT_TIMEOUT.as_secs(),
                    })??;
                Ok(McpSession {
                    id,
                    service,
                    stderr: None,
                })
            }
            McpEndpoint::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                for a in args {
                    cmd.arg(server.substitute(a)?);
                }
                for (k, v) in env {
                    cmd.env(k, server.substitute(v)?);
                }
                let (proc, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| McpError::Spawn {
                        server: id.clone(),
                        command: command.clone(),
                        reason: e.to_string(),
                    })?;
                let tail = stderr.map(keep_tail);
                let served = tokio::time::timeout(INIT_TIMEOUT, ().serve(proc)).await;
                let with_stderr = |reason: String| {
                    let said = tail.as_ref().map(|t| lock(t).trim().to_string());
                    match said {
                        Some(s) if !s.is_empty() => format!("{reason}; its stderr: {s}"),
                        _ => reason,
                    }
                };
                let service = match served {
                    Err(_) => {
                        return Err(McpError::InitTimeout {
                            server: id,
                            secs: INIT_TIMEOUT.as_secs(),
                        });
                    }
                    Ok(Err(e)) => {
                        // Let the stderr reader catch the dying program's last words.
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        return Err(connect_err(with_stderr(init_error_text(&e))));
                    }
                    Ok(Ok(s)) => s,
                };
                Ok(McpSession {
                    id,
                    service,
                    stderr: tail,
                })
            }
        }
    }

    /// The server id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The server's tools as `{name, description, inputSchema, ...}` (all pages).
    pub async fn list_tools(&self) -> Result<Vec<Value>, McpError> {
        let err = |reason: String| McpError::Request {
            server: self.id.clone(),
            what: "tools/list",
            reason,
        };
        let tools = tokio::time::timeout(LIST_TIMEOUT, self.service.list_all_tools())
            .await
            .map_err(|_| err(format!("no answer within {} s", LIST_TIMEOUT.as_secs())))?
            .map_err(|e| err(self.with_stderr(service_error_text(&e))))?;
        let mut out = Vec::with_capacity(tools.len());
        for tool in tools {
            let mut v = serde_json::to_value(&tool).map_err(|e| err(e.to_string()))?;
            if let Value::Object(o) = &mut v {
                // RAGFlow reads `description` unconditionally.
                o.entry("description").or_insert(Value::Null);
            }
            out.push(v);
        }
        Ok(out)
    }

    /// Call tool `name` (its original name) with `args` (a JSON object, or null):
    /// the text the model reads, by RAGFlow's rules — the first text content,
    /// `MCP server error: …` when the server flags an error, or a timeout / error
    /// text. Never fails.
    pub async fn call_tool(&self, name: &str, args: Value, timeout: Duration) -> String {
        let mut params = CallToolRequestParams::new(name.to_string());
        match args {
            Value::Null => {}
            Value::Object(o) => params = params.with_arguments(o),
            _ => return format!("Error calling tool '{name}': arguments must be a JSON object."),
        }
        match tokio::time::timeout(timeout, self.service.call_tool(params)).await {
            Err(_) => format!(
                "Timeout calling tool '{name}' (timeout={}).",
                py_secs(timeout)
            ),
            Ok(Err(e)) => format!(
                "Error calling tool '{name}': {}.",
                self.with_stderr(service_error_text(&e))
            ),
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(v) => result_text(&v),
                Err(e) => format!("Error calling tool '{name}': {e}."),
            },
        }
    }

    /// End the session (a stdio server's program is stopped).
    pub async fn close(self) {
        // Bounded: a server that ignores the shutdown must not hold the run.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.service.cancel()).await;
    }

    fn with_stderr(&self, reason: String) -> String {
        if !self.service.is_transport_closed() {
            return reason;
        }
        match self.stderr.as_ref().map(|t| lock(t).trim().to_string()) {
            Some(s) if !s.is_empty() => format!("{reason} (server stderr: {s})"),
            _ => reason,
        }
    }
}

fn lock(m: &Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Drain a stdio server's stderr (so it never blocks on a full pipe), keeping the end.
fn keep_tail(mut stderr: tokio::process::ChildStderr) -> Arc<Mutex<String>> {
    let tail = Arc::new(Mutex::new(String::new()));
    let keep = tail.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut t = lock(&keep);
            t.push_str(&String::from_utf8_lossy(&buf[..n]));
            if t.len() > STDERR_TAIL {
                let mut cut = t.len() - STDERR_TAIL;
                while !t.is_char_boundary(cut) {
                    cut += 1;
                }
                t.drain(..cut);
            }
        }
    });
    tail
}

/// An error and its sources, as one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    // rmcp wraps reqwest's error without exposing it as a source.
    if let Some(StreamableHttpError::Client(inner)) =
        e.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return error_chain(inner);
    }
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if parts.last().is_none_or(|p| !p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

fn init_error_text(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::TransportError { error, context } => {
            format!("{} ({context})", error_chain(error.error.as_ref()))
        }
        ClientInitializeError::JsonRpcError(d) => {
            format!("the server refused initialize: {}", d.message)
        }
        other => error_chain(other),
    }
}

/// Python's `str(exception)` for what the MCP SDK raises: a JSON-RPC error is its
/// message.
fn service_error_text(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(d) => d.message.to_string(),
        ServiceError::TransportSend(t) => error_chain(t.error.as_ref()),
        other => other.to_string(),
    }
}

/// Seconds as Python prints the timeout it was given (`10`, `2.5`).
fn py_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", d.as_secs())
    } else {
        format!("{s}")
    }
}

/// RAGFlow's `_call_mcp_tool` on a `CallToolResult` as JSON.
fn result_text(result: &Value) -> String {
    let empty = Vec::new();
    let content = result
        .get("content")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return format!("MCP server error: {}", py_content_repr(content));
    }
    let Some(first) = content.first() else {
        return "MCP server returned empty content.".to_string();
    };
    match (first.get("type").and_then(Value::as_str), first.get("text")) {
        (Some("text"), Some(Value::String(t))) => t.clone(),
        // Python prints the type of the content *list*.
        _ => "Unsupported content type <class 'list'>".to_string(),
    }
}

/// The Python repr of a list of MCP content models (`[TextContent(type='text',
/// text='boom', annotations=None, meta=None)]`), which RAGFlow puts in error texts.
fn py_content_repr(content: &[Value]) -> String {
    let items: Vec<String> = content
        .iter()
        .map(|c| {
            let Value::Object(o) = c else {
                return py_repr(c);
            };
            let class = match o.get("type").and_then(Value::as_str) {
                Some("text") => "TextContent",
                Some("image") => "ImageContent",
                Some("audio") => "AudioContent",
                Some("resource_link") => "ResourceLink",
                Some("resource") => "EmbeddedResource",
                _ => return py_repr(c),
            };
            let mut fields: Vec<String> = o
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "annotations" | "_meta"))
                .map(|(k, v)| format!("{k}={}", py_repr(v)))
                .collect();
            for (key, name) in [("annotations", "annotations"), ("_meta", "meta")] {
                fields.push(format!(
                    "{name}={}",
                    o.get(key).map_or("None".to_string(), py_repr)
                ));
            }
            format!("{class}({})", fields.join(", "))
        })
        .collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_text_follows_ragflow() {
        assert_eq!(
            result_text(
                &json!({"content": [{"type": "text", "text": "42"}, {"type": "text", "text": "x"}]})
            ),
            "42"
        );
        assert_eq!(
            result_text(
                &json!({"content": [{"type": "text", "text": "it's \"bad\"\n"}], "isError": true})
            ),
            "MCP server error: [TextContent(type='text', text='it\\'s \"bad\"\\n', annotations=None, meta=None)]"
        );
        assert_eq!(
            result_text(&json!({"content": [], "isError": false})),
            "MCP server returned empty content."
        );
        assert_eq!(
            result_text(
                &json!({"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]})
            ),
            "Unsupported content type <class 'list'>"
        );
        assert_eq!(
            result_text(
                &json!({"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}], "isError": true})
            ),
            "MCP server error: [ImageContent(type='image', data='aGk=', mimeType='image/png', annotations=None, meta=None)]"
        );
    }

    #[test]
    fn python_reprs() {
        assert_eq!(canvas_pyrt::py_repr_str("it's"), "\"it's\"");
        assert_eq!(canvas_pyrt::py_repr_str("a\\b\u{1}"), "'a\\\\b\\x01'");
        assert_eq!(
            py_repr(&json!({"a": [1, null, true]})),
            "{'a': [1, None, True]}"
        );
        assert_eq!(py_secs(Duration::from_secs(10)), "10");
        assert_eq!(py_secs(Duration::from_millis(2500)), "2.5");
    }
}
