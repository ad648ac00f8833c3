//! Where CodeExec runs code.

/// Sandbox settings.
#[derive(Debug, Clone, Default)]
pub struct SandboxConfig {}

impl SandboxConfig {
    /// Settings from the environment.
    pub fn from_env() -> SandboxConfig {
        SandboxConfig {}
    }
}
