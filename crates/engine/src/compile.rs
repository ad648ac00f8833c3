//! Compile a DSL into a `Canvas`: one component instance per node, checked references
//! between nodes, and the fresh run state (RAGFlow's `Canvas.reset()`).

use indexmap::IndexMap;
use serde_json::Value;

use super::component::Component;
use super::graph::{Graph, Node, SharedIds};
use super::role::Role;
use canvas_dsl::Dsl;
use canvas_pyrt::Object;

/// RAGFlow starts every run at the component with this id.
pub const ENTRY_ID: &str = "begin";

/// Builds component instances from DSL class names (implemented by `components::Registry`).
pub trait Registry {
    /// Build the component for class `name` with these params.
    fn build(&self, name: &str, params: &Object) -> Result<Box<dyn Component>, BuildError>;

    /// Why a legacy class (from RAGFlow's older DSL) cannot run, if `name` is one.
    fn legacy(&self, _name: &str) -> Option<&'static str> {
        None
    }
}

/// Why a component could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// No such component class.
    #[error("unknown component type {0:?}")]
    Unknown(String),
    /// The parameters fail RAGFlow's `check()`.
    #[error("{0}")]
    Params(String),
}

/// Why a canvas cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompileError {
    /// No component with id `begin`.
    #[error("no component with id \"begin\"{}", found.as_ref().map(|f| format!(" (the Begin component is {f:?}; RAGFlow requires the id \"begin\")")).unwrap_or_default())]
    MissingBegin {
        /// The id of a Begin component with another id, if any.
        found: Option<String>,
    },
    /// A legacy component RAGFlow itself can no longer run.
    #[error("component {id:?} ({name}): {why}")]
    Legacy {
        /// Component id.
        id: String,
        /// Class name.
        name: String,
        /// What replaced it.
        why: String,
    },
    /// A component class this build does not know.
    #[error("component {id:?}: unknown component type {name:?}")]
    UnknownComponent {
        /// Component id.
        id: String,
        /// Class name.
        name: String,
    },
    /// A `downstream` id that does not exist.
    #[error("component {id:?}: downstream {target:?} does not exist")]
    DanglingDownstream {
        /// Component id.
        id: String,
        /// The missing target.
        target: String,
    },
    /// A `parent_id` that does not exist.
    #[error("component {id:?}: parent_id {parent:?} does not exist")]
    DanglingParent {
        /// Component id.
        id: String,
        /// The missing parent.
        parent: String,
    },
    /// Parameters RAGFlow's `check()` rejects.
    #[error("component {id:?} ({name}): {message}")]
    Params {
        /// Component id.
        id: String,
        /// Class name.
        name: String,
        /// The check's message.
        message: String,
    },
}

impl CompileError {
    /// What to do about it, for the line after the error.
    pub fn hint(&self) -> &'static str {
        match self {
            CompileError::UnknownComponent { .. } => {
                "`canvas components` lists the components this build runs"
            }
            CompileError::Legacy { .. } => {
                "replace the component in RAGFlow's editor, then export the canvas again"
            }
            _ => "`canvas validate FILE` lists every problem with its line and column",
        }
    }
}

/// Whether compile runs each component's [`Component::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// Refuse the canvas when a component's check fails (a new run).
    Enforce,
    /// Build without the checks: what they would refuse fails when the run reaches it
    /// (`--no-validate`, and resuming a run that was already admitted).
    Skip,
}

/// A canvas ready to run: its graph and one component instance per node.
pub struct Canvas {
    /// Nodes and the DSL they came from.
    pub graph: Graph,
    /// The implementations, by `Node::index`.
    components: Vec<Box<dyn Component>>,
}

impl std::ops::Deref for Canvas {
    type Target = Graph;

    fn deref(&self) -> &Graph {
        &self.graph
    }
}

impl Canvas {
    /// The implementation of `node`, a node of this canvas.
    pub fn component(&self, node: &Node) -> &dyn Component {
        self.components[node.index].as_ref()
    }

    /// Compile a DSL with a component registry, each component's parameters checked
    /// ([`Checks::Enforce`]).
    pub fn compile(dsl: Dsl, registry: &dyn Registry) -> Result<Canvas, CompileError> {
        Canvas::compile_with(dsl, registry, Checks::Enforce)
    }

    /// Compile a DSL with a component registry, running or skipping the components'
    /// parameter checks.
    pub fn compile_with(
        mut dsl: Dsl,
        registry: &dyn Registry,
        checks: Checks,
    ) -> Result<Canvas, CompileError> {
        if !dsl.components.contains_key(ENTRY_ID) {
            let found = dsl
                .components
                .iter()
                .find(|(_, c)| {
                    registry
                        .build(&c.obj.component_name, &c.obj.params)
                        .is_ok_and(|b| b.role() == Role::Entry)
                })
                .map(|(id, _)| id.clone());
            return Err(CompileError::MissingBegin { found });
        }
        // Legacy classes first: they explain every other oddity of an old canvas.
        for (id, def) in &dsl.components {
            if let Some(why) = registry.legacy(&def.obj.component_name) {
                return Err(CompileError::Legacy {
                    id: id.clone(),
                    name: def.obj.component_name.clone(),
                    why: why.to_string(),
                });
            }
        }
        // The nodes take the parameters and routing lists over from the DSL rather than
        // copying them (a canvas may hold thousands of components).
        let owned: Vec<(Object, Vec<String>)> = dsl
            .components
            .values_mut()
            .map(|d| {
                (
                    std::mem::take(&mut d.obj.params),
                    std::mem::take(&mut d.downstream),
                )
            })
            .collect();
        let mut nodes =
            IndexMap::with_capacity_and_hasher(dsl.components.len(), Default::default());
        let mut components = Vec::with_capacity(dsl.components.len());
        for ((id, def), (mut params, downstream)) in dsl.components.iter().zip(owned) {
            let name = &def.obj.component_name;
            let component = registry.build(name, &params).map_err(|e| match e {
                BuildError::Unknown(_) => CompileError::UnknownComponent {
                    id: id.clone(),
                    name: name.clone(),
                },
                BuildError::Params(message) => CompileError::Params {
                    id: id.clone(),
                    name: name.clone(),
                    message,
                },
            })?;
            if checks == Checks::Enforce {
                component.check().map_err(|e| CompileError::Params {
                    id: id.clone(),
                    name: name.clone(),
                    message: e.message,
                })?;
            }
            for t in &downstream {
                if !dsl.components.contains_key(t) {
                    return Err(CompileError::DanglingDownstream {
                        id: id.clone(),
                        target: t.clone(),
                    });
                }
            }
            let parent_id = def.parent_id.clone().filter(|p| !p.is_empty());
            if let Some(p) = &parent_id {
                if !dsl.components.contains_key(p) {
                    return Err(CompileError::DanglingParent {
                        id: id.clone(),
                        parent: p.clone(),
                    });
                }
            }
            let mut declared_inputs: Vec<String> = match params.get("inputs") {
                Some(Value::Object(o)) => o.keys().cloned().collect(),
                _ => Vec::new(),
            };
            // A tool's meta parameters are inputs too, with their defaults.
            for (k, default) in component.input_params() {
                if !declared_inputs.contains(&k) {
                    declared_inputs.push(k.clone());
                }
                params.entry(k).or_insert(default);
            }
            let declared_outputs = match params.get("outputs") {
                Some(Value::Object(o)) => o.keys().cloned().collect(),
                _ => component
                    .default_outputs()
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            };
            nodes.insert(
                id.clone(),
                Node {
                    shared: SharedIds::new(id, &dsl.graph_name(id), name),
                    id: id.clone(),
                    class: name.clone(),
                    name: dsl.graph_name(id),
                    role: component.role(),
                    params,
                    downstream,
                    parent_id,
                    declared_inputs,
                    declared_outputs,
                    index: components.len(),
                    text_refs: Default::default(),
                },
            );
            components.push(component);
        }
        Ok(Canvas {
            graph: Graph { nodes, dsl },
            components,
        })
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use serde_json::json;

    use super::*;
    use crate::component::{CResult, NodeCx, ParamError};

    /// `Begin` (the entry) and `Picky`, whose check refuses `mode: "bad"`.
    struct Fake;

    struct Stub(Role, bool);

    #[async_trait]
    impl Component for Stub {
        fn role(&self) -> Role {
            self.0
        }

        fn check(&self) -> Result<(), ParamError> {
            match self.1 {
                true => Err(ParamError::new("mode \"bad\" is not supported", &["mode"])),
                false => Ok(()),
            }
        }

        async fn invoke(&self, _cx: &NodeCx<'_>) -> CResult<()> {
            Ok(())
        }
    }

    impl Registry for Fake {
        fn build(&self, name: &str, params: &Object) -> Result<Box<dyn Component>, BuildError> {
            let bad = params.get("mode") == Some(&json!("bad"));
            match name {
                "Begin" => Ok(Box::new(Stub(Role::Entry, false))),
                "Picky" => Ok(Box::new(Stub(Role::Plain, bad))),
                other => Err(BuildError::Unknown(other.to_string())),
            }
        }
    }

    fn dsl(mode: &str) -> Dsl {
        let v = json!({"components": {
            "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Picky:P"]},
            "Picky:P": {"obj": {"component_name": "Picky", "params": {"mode": mode}}, "downstream": []},
        }});
        match canvas_dsl::load::from_value(v) {
            Ok(d) => d,
            Err(e) => panic!("the test DSL loads: {e}"),
        }
    }

    #[test]
    fn a_failed_check_refuses_the_canvas_unless_checks_are_skipped() {
        assert!(Canvas::compile(dsl("good"), &Fake).is_ok());
        match Canvas::compile(dsl("bad"), &Fake) {
            Err(CompileError::Params { id, name, message }) => {
                assert_eq!((id.as_str(), name.as_str()), ("Picky:P", "Picky"));
                assert_eq!(message, "mode \"bad\" is not supported");
            }
            Err(other) => panic!("expected a params error, got {other}"),
            Ok(_) => panic!("a failed check must refuse the canvas"),
        }
        let lenient = Canvas::compile_with(dsl("bad"), &Fake, Checks::Skip);
        assert!(lenient.is_ok_and(|c| c.node("Picky:P").is_some()));
    }
}
