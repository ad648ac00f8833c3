//! Test support: run one component of a small canvas against a chosen state.

use std::sync::MutexGuard;

use serde_json::{Value, json};

use super::compile::{BuildError, Canvas, Checks, Registry};
use super::component::{CResult, Component, NodeCx, RunContext, Shared, lock};
use super::role::Role;
use super::state::RunState;
use canvas_pyrt::Object;

/// A compiled canvas with a live state, for driving components directly.
pub struct Harness {
    canvas: Canvas,
    shared: Shared,
    run: RunContext,
}

impl Harness {
    /// A canvas from a full DSL JSON (`{"components": ...}`) built with `registry`, in
    /// its fresh state.
    pub fn new(registry: &dyn Registry, dsl: Value) -> Harness {
        let dsl = canvas_dsl::load::from_value(dsl).expect("test DSL loads");
        // Without the parameter checks: tests drive components with parameters a run
        // would refuse, to pin how `invoke` still guards against them.
        let canvas = Canvas::compile_with(dsl, registry, Checks::Skip).expect("test DSL compiles");
        let state = canvas.fresh_state();
        Harness {
            canvas,
            shared: Shared::new(state),
            run: RunContext::seeded("test", Object::new(), 7),
        }
    }

    /// `begin` plus one component `id` of class `class` with `params`; `globals` are
    /// set as given (`sys.*`, `env.*`).
    pub fn single(
        registry: &dyn Registry,
        id: &str,
        class: &str,
        params: Value,
        globals: Value,
    ) -> Harness {
        let h = Harness::new(
            registry,
            json!({
                "components": {
                    "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": [id]},
                    id: {"obj": {"component_name": class, "params": params}, "downstream": []}
                },
            }),
        );
        // Set after the fresh state: `reset()` would blank undeclared `env.*` globals.
        if let Value::Object(g) = globals {
            for (k, v) in g {
                h.set_global(&k, v);
            }
        }
        h
    }

    /// Invoke component `id` (kwargs empty) and return its result.
    pub fn invoke(&self, id: &str) -> CResult<()> {
        let node = self.canvas.node(id).expect("node exists");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        self.with_cx(id, |cx| rt.block_on(self.canvas.component(node).invoke(cx)))
    }

    /// The run state.
    pub fn state(&self) -> MutexGuard<'_, RunState> {
        lock(&self.shared.state)
    }

    /// Output `name` of component `id`.
    pub fn output(&self, id: &str, name: &str) -> Value {
        self.state().output(id, name)
    }

    /// Recorded input `name` of component `id` (null when absent).
    pub fn input(&self, id: &str, name: &str) -> Value {
        self.state()
            .nodes
            .get(id)
            .and_then(|n| n.inputs.get(name))
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Set an output of a component (e.g. `begin`) before invoking another.
    pub fn set_output(&self, id: &str, name: &str, v: Value) {
        self.state().set_output(id, name, v);
    }

    /// Set a global (`sys.*` / `env.*`).
    pub fn set_global(&self, name: &str, v: Value) {
        self.state().globals_mut().insert(name.to_string(), v);
    }

    /// Change the run state.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut RunState) -> R) -> R {
        f(&mut self.state())
    }

    /// The progress text component `id` shows in its `node_started`.
    pub fn thoughts(&self, id: &str) -> String {
        let node = self.canvas.node(id).expect("node exists");
        self.with_cx(id, |cx| {
            self.canvas.component(node).thoughts(cx).into_owned()
        })
    }

    /// Run `f` with the context component `id` sees.
    pub fn with_cx<R>(&self, id: &str, f: impl FnOnce(&NodeCx<'_>) -> R) -> R {
        let node = self.canvas.node(id).expect("node exists");
        let cx = NodeCx {
            canvas: &self.canvas.graph,
            node,
            shared: &self.shared,
            run: &self.run,
            kwargs: Object::new(),
        };
        f(&cx)
    }
}

/// A registry of one class plus a do-nothing `Begin`, for crates that test a component
/// without the full component set.
pub struct OneClass(
    /// The class name.
    pub &'static str,
    /// Its constructor.
    pub fn(&Object) -> Result<Box<dyn Component>, BuildError>,
);

impl Registry for OneClass {
    fn build(&self, name: &str, params: &Object) -> Result<Box<dyn Component>, BuildError> {
        if name.eq_ignore_ascii_case("begin") {
            return Ok(Box::new(Entry));
        }
        if name.eq_ignore_ascii_case(self.0) {
            return (self.1)(params);
        }
        Err(BuildError::Unknown(name.to_string()))
    }
}

/// A `Begin` that does nothing (its outputs are set by the test).
struct Entry;

#[async_trait::async_trait]
impl Component for Entry {
    fn role(&self) -> Role {
        Role::Entry
    }

    async fn invoke(&self, _cx: &NodeCx<'_>) -> CResult<()> {
        Ok(())
    }
}
