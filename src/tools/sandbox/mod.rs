//! Where CodeExec runs code.

/// Sandbox settings.
#[derive(Debug, Clone, Default)]
pub struct SandboxConfig {}
