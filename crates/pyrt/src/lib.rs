//! Python semantics RAGFlow's behaviour depends on, one implementation each: `str` and
//! `repr`, float formatting, `==`, truthiness, `json.dumps` flavours.
//!
//! It knows nothing of canvases.

mod value;

pub use value::*;
