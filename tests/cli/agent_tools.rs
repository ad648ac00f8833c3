//! agent_tools tests.
