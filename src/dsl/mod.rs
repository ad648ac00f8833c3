//! The canvas document: serde types and loading (JSON, YAML, stdin, template wrapper).
//!
//! It never runs anything and never touches the network.

pub mod load;
pub mod model;

pub use load::{DslError, Format, Loaded, load_path, parse};
pub use model::{ComponentDef, ComponentObj, Dsl};
