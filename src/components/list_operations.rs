//! PLACEHOLDER (being written).

use async_trait::async_trait;

use crate::engine::value::Object;
use crate::engine::{BuildError, CResult, Component, NodeCx};

/// Build from params.
pub fn build(_params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(ListOperations))
}

/// Placeholder.
pub struct ListOperations;

#[async_trait]
impl Component for ListOperations {
    async fn invoke(&self, _cx: &NodeCx<'_>) -> CResult<()> {
        Ok(())
    }
}
