//! mcp tests.
