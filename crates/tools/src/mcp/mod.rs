//! MCP servers' tools for Agents (`llm-and-tools.md` §4.1, §4.4, §7.5): which servers
//! exist (`config`: the `--mcp-config` file and servers inline in a canvas entry), one
//! live connection to a server (`client`: streamable HTTP, legacy SSE or a local
//! stdio program, through the official `rmcp` SDK), and the legacy SSE transport
//! that SDK lacks (`sse`).

#[cfg(feature = "mcp")]
mod client;
mod config;
#[cfg(feature = "mcp")]
mod sse;
#[cfg(all(test, feature = "mcp"))]
mod tests;

#[cfg(feature = "mcp")]
pub use client::{CALL_TIMEOUT, INIT_TIMEOUT, LIST_TIMEOUT, McpSession};
pub use config::{McpConfig, McpEndpoint, McpServer, McpTransport};

/// Why an MCP server could not be configured, reached or asked.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The `--mcp-config` file cannot be read or is malformed.
    #[error("MCP config {path}: {reason}")]
    Config {
        /// The file.
        path: String,
        /// What is wrong, and where.
        reason: String,
    },
    /// A canvas names a server the configuration does not know.
    #[error(
        "MCP server {server:?} is not configured: pass --mcp-config FILE with the server under `servers:` (url, or command and args)"
    )]
    UnknownServer {
        /// The canvas's `mcp_id`.
        server: String,
    },
    /// A header (or stdio argument/env value) uses a `${VAR}` nobody defines.
    #[error(
        "MCP server {server:?}: `${{{var}}}` is not defined: set the environment variable {var} or add it to the server's `variables:`"
    )]
    UnknownVariable {
        /// The server id.
        server: String,
        /// The variable name.
        var: String,
    },
    /// A header name or value is not valid HTTP.
    #[error("MCP server {server:?}: invalid header {name:?}: fix it in the server's `headers:`")]
    BadHeader {
        /// The server id.
        server: String,
        /// The header name.
        name: String,
    },
    /// The SSRF guard refused the server's URL.
    #[error("MCP server {server:?}: {reason}")]
    Blocked {
        /// The server id.
        server: String,
        /// The guard's explanation (it says how to allow private addresses).
        reason: String,
    },
    /// The stdio server's program could not be started.
    #[error(
        "MCP server {server:?}: cannot start {command:?}: {reason}; check `command:` and `args:`"
    )]
    Spawn {
        /// The server id.
        server: String,
        /// The program.
        command: String,
        /// The OS error.
        reason: String,
    },
    /// The transport or the MCP handshake failed.
    #[error("MCP server {server:?}: connection failed: {reason} ({hint})")]
    Connect {
        /// The server id.
        server: String,
        /// What failed.
        reason: String,
        /// What to check.
        hint: &'static str,
    },
    /// The server did not answer `initialize` (or the SSE endpoint) in time.
    #[error(
        "MCP server {server:?}: no answer to initialize within {secs} s: check that it is running and speaks MCP"
    )]
    InitTimeout {
        /// The server id.
        server: String,
        /// The limit, in seconds.
        secs: u64,
    },
    /// A request (`tools/list`) failed or timed out.
    #[error("MCP server {server:?}: {what} failed: {reason}")]
    Request {
        /// The server id.
        server: String,
        /// The MCP method.
        what: &'static str,
        /// What failed.
        reason: String,
    },
}

impl McpError {
    /// What the model reads when `tool` was called on a server this error kept
    /// from connecting: RAGFlow keeps the Agent running and answers every call of
    /// such a server with its session's failure text.
    pub fn call_error_text(&self, tool: &str) -> String {
        let why = match self {
            McpError::InitTimeout { server, .. } => {
                format!("Timeout initializing client_session for server {server}")
            }
            McpError::Connect { .. } => "Connection failed (possibly due to auth error). \
                 Please check authentication settings first"
                .to_string(),
            other => other.to_string(),
        };
        format!("Error calling tool '{tool}': {why}.")
    }
}
