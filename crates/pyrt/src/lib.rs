//! Python semantics RAGFlow's behaviour depends on, one implementation each: `str` and
//! `repr`, float formatting, `==`, truthiness, `json.dumps` flavours, `ast.literal_eval`, `list.sort`,
//! `html.unescape`, and pandas/tabulate markdown tables.
//!
//! It knows nothing of canvases: every function takes plain text or JSON values.

mod eq;
mod float;
mod html;
mod json;
mod literal_eval;
mod sort;
mod str;
mod table;
mod truth;

pub use eq::*;
pub use float::*;
pub use html::*;
pub use json::*;
pub use literal_eval::*;
pub use sort::*;
pub use str::*;
pub use table::*;
pub use truth::*;

/// A JSON object with insertion order kept (Python dicts keep it too).
pub type Object = serde_json::Map<String, serde_json::Value>;
