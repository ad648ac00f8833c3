//! Python semantics RAGFlow's behaviour depends on, one implementation each: `str` and
//! `repr`, float formatting, `==`, truthiness, `json.dumps` flavours, `ast.literal_eval`, `list.sort`.
//!
//! It knows nothing of canvases: every function takes plain text or JSON values.

mod eq;
mod float;
mod json;
mod literal_eval;
mod sort;
mod str;
mod truth;

pub use eq::*;
pub use float::*;
pub use json::*;
pub use literal_eval::*;
pub use sort::*;
pub use str::*;
pub use truth::*;

/// A JSON object with insertion order kept (Python dicts keep it too).
pub type Object = serde_json::Map<String, serde_json::Value>;
