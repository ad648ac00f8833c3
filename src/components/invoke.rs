//! Invoke.

use crate::engine::value::Object;
use crate::engine::{BuildError, Component};

/// Build from DSL parameters.
pub fn build(_params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Err(BuildError::Params("Invoke is being built".into()))
}
