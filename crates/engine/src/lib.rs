//! Running a canvas: compile (component instances from a registry), the scheduler
//! (RAGFlow's path algorithm), run state, references and templates, events.
//!
//! The engine knows the `Component` trait, never a concrete component.

pub mod compile;
pub mod component;
pub mod events;
pub mod forms;
pub mod refs;
pub mod scheduler;
pub mod services;
pub mod state;
pub mod stop;
pub mod template;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use compile::{BuildError, Canvas, CompileError, Node, Registry};
pub use component::{
    CResult, Chunk, Component, ComponentError, ContainerKind, Deferred, NodeCx, Role,
};
pub use events::{Event, EventKind, EventSink, VecSink};
pub use scheduler::{Outcome, RunConfig, RunError, run_turn};
pub use services::Services;
pub use state::{Cursor, RunState};
pub use stop::{StopReason, StopSignal};
