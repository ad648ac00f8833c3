//! Outgoing HTTP for everything a canvas controls, behind the SSRF guard.

/// Which addresses outgoing calls may reach.
#[derive(Debug, Clone, Copy, Default)]
pub struct NetPolicy {
    /// Loopback, private, link-local and metadata addresses are allowed too.
    pub allow_private: bool,
}
