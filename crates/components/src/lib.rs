//! Components: one file per RAGFlow component behind the `engine::Component` trait,
//! `registry.rs`, which maps DSL class names (case-insensitive, with legacy aliases) to
//! constructors, `catalog.rs`, what `dsl::lint` learns of them, and `validate.rs`, the
//! validate pipeline over this build (lint, then the run's own load and compile).

mod agent;
mod begin;
mod catalog;
mod categorize;
pub mod chat;
mod data_operations;
#[cfg(feature = "doc")]
mod doc_generator;
#[cfg(feature = "excel")]
mod excel_processor;
mod exit_loop;
mod form;
mod invoke;
mod iteration;
mod iteration_item;
#[cfg(test)]
mod lint_props;
mod list_operations;
mod llm;
mod loop_;
mod loop_item;
mod message;
mod registry;
mod string_transform;
mod switch;
mod unsupported;
mod user_fill_up;
pub mod validate;
#[cfg(test)]
mod validate_props;
mod variable_aggregator;
mod variable_assigner;

pub use catalog::{Catalog, RunCatalog};
pub use registry::{LEFT_OUT, LEGACY, MCP_BUILT, Registry, SUPPORTED, TOOLS, UNSUPPORTED};
