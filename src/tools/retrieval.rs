//! Retrieval.

/// A RAGFlow server's HTTP API.
#[derive(Debug, Clone)]
pub struct RagflowApi {
    /// `https://ragflow.example.com`.
    pub base_url: String,
    /// The API key.
    pub api_key: String,
}
