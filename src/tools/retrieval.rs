//! Retrieval.

/// A RAGFlow server's HTTP API.
#[derive(Debug, Clone)]
pub struct RagflowApi {
    /// `https://ragflow.example.com`.
    pub base_url: String,
    /// The API key.
    pub api_key: String,
}

use crate::engine::BuildError;
use crate::engine::value::Object;

/// Build from DSL parameters.
pub fn build(_params: &Object) -> Result<Box<dyn super::Tool>, BuildError> {
    Err(BuildError::Params("Retrieval is being built".into()))
}
