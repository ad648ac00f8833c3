//! The canvas document: serde types, loading (JSON, YAML, stdin, template wrapper),
//! `normalize` (the migrate rules, applied on every load), `lint` (the validate rules),
//! and drawing the graph.
//!
//! It never runs anything and never touches the network.

pub mod check;
pub mod draw;
pub mod finding;
#[cfg(test)]
mod fixtures;
pub mod json_value;
pub mod lint;
pub mod load;
pub mod locate;
pub mod model;
pub mod nesting;
pub mod normalize;
pub mod suggest;
pub mod syntax;

pub use finding::{Finding, Level};
pub use load::{DslError, Format, Loaded, load_path, parse};
pub use model::{ComponentDef, ComponentObj, Dsl};
