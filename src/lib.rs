//! `canvas`: run RAGFlow agent canvases locally with RAGFlow's exact event stream.
//!
//! Data flows one way: `dsl` (load) → `engine::Canvas::compile` (with the
//! `components` registry) → `engine::run_turn` → events → `ui` renderers. `cli` wires
//! them together and owns exit codes.

#![warn(missing_docs)]

pub mod cli;
pub mod components;
pub mod dsl;
pub mod engine;
pub mod llm;
pub mod store;
pub mod tools;
pub mod ui;
