//! Running a canvas: compile (component instances from a registry), the scheduler
//! (RAGFlow's path algorithm), run state, references and templates, events.
//!
//! The engine knows the `Component` trait and the `Role` each component declares, never
//! a concrete component or tool; services a component needs (tool settings) travel in
//! `Services` without the engine naming their types. Modules, bottom up: `role` and
//! `usage` (plain data), `graph` (the nodes as data and the queries on them),
//! `component` (the trait and a running component's context), `compile` (a canvas: its
//! graph plus one component per node), `scheduler` (RAGFlow's run algorithm).

pub mod compile;
pub mod component;
pub mod events;
pub mod forms;
pub mod graph;
pub mod jinja;
pub mod refs;
pub mod role;
pub mod scheduler;
pub mod services;
pub mod state;
pub mod stop;
pub mod template;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod usage;

pub use compile::{BuildError, Canvas, Checks, CompileError, Registry};
pub use component::{CResult, Chunk, Component, ComponentError, Deferred, NodeCx, ParamError};
pub use events::{Event, EventKind, EventSink, VecSink};
pub use graph::{Graph, Node};
pub use role::{ContainerKind, Role};
pub use scheduler::{Outcome, RunConfig, RunError, run_turn};
pub use services::Services;
pub use state::{Cursor, RunState};
pub use stop::{StopReason, StopSignal};
