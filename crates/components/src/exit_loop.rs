//! ExitLoop: does nothing itself; the scheduler routes to the enclosing Loop's
//! downstream.

use async_trait::async_trait;

use canvas_engine::{BuildError, CResult, Component, NodeCx, Role};
use canvas_pyrt::Object;

/// Build an ExitLoop.
pub fn build(_params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(ExitLoop))
}

/// The ExitLoop component.
pub struct ExitLoop;

#[async_trait]
impl Component for ExitLoop {
    fn instant(&self) -> bool {
        true
    }

    fn role(&self) -> Role {
        Role::LoopBreak
    }

    async fn invoke(&self, _cx: &NodeCx<'_>) -> CResult<()> {
        Ok(())
    }
}
