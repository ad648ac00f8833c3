//! `canvas`: run RAGFlow agent canvases locally with RAGFlow's exact event stream.
//!
//! This package is the command line only. Data flows one way through the library
//! crates: `canvas_dsl` (load) → `canvas_engine::Canvas::compile` (with the
//! `canvas_components` registry) → `canvas_engine::run_turn` → events → `canvas_ui`
//! renderers and `canvas_store`. `cli` wires them together and owns exit codes.

pub mod cli;
