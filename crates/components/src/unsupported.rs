//! A RAGFlow component this build recognises but cannot run: the run stops at it with
//! a one-line error naming it (never a silent pass).

use async_trait::async_trait;

use canvas_engine::{CResult, Component, ComponentError, NodeCx, Role};

/// Placeholder for a recognised component without an implementation.
pub struct Unsupported {
    /// RAGFlow's class name.
    pub name: &'static str,
    /// The part it would play in the run.
    pub role: Role,
    /// What is missing, for the error message.
    pub why: String,
}

#[async_trait]
impl Component for Unsupported {
    fn role(&self) -> Role {
        self.role
    }

    async fn invoke(&self, _cx: &NodeCx<'_>) -> CResult<()> {
        Err(ComponentError::Fatal(format!(
            "{} cannot run: {} in this build of canvas",
            self.name, self.why
        )))
    }
}
