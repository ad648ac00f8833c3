//! MCP servers' tools (being built).

use std::time::Duration;

/// MCP servers by id.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {}

impl McpConfig {
    /// Load from a file.
    pub fn load(_path: &std::path::Path) -> Result<McpConfig, McpError> {
        Err(McpError)
    }

    /// The server with this id.
    pub fn server(&self, _id: &str) -> Option<&McpServer> {
        None
    }
}

/// One MCP server.
#[derive(Debug, Clone)]
pub struct McpServer {}

impl McpServer {
    /// A server given inline in a canvas `mcp` entry.
    pub fn from_entry(_entry: &serde_json::Value) -> Option<McpServer> {
        None
    }
}

/// An open session.
pub struct McpSession {}

/// Why a session failed.
#[derive(Debug, thiserror::Error)]
#[error("MCP is being built")]
pub struct McpError;

impl McpSession {
    /// Connect.
    pub async fn connect(
        _server: &McpServer,
        _net: &super::net::NetPolicy,
        _headers: &[(String, String)],
    ) -> Result<McpSession, McpError> {
        Err(McpError)
    }

    /// Call a tool.
    pub async fn call_tool(&self, _name: &str, _args: serde_json::Value, _t: Duration) -> String {
        String::new()
    }
}
