//! ExeSQL.

use crate::engine::BuildError;
use crate::engine::value::Object;

/// Build from DSL parameters.
pub fn build(_params: &Object) -> Result<Box<dyn super::Tool>, BuildError> {
    Err(BuildError::Params("ExeSQL is being built".into()))
}
