//! MCP servers' tools.

/// MCP servers by id.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {}
