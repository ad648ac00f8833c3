//! Tools: RAGFlow's `agent/tools`. A tool is a component an Agent can also call through
//! native function calling (`llm-and-tools.md` §4.2–§4.4, §7). Each tool is one file
//! behind [`Tool`]; [`node::ToolNode`] places a tool on the canvas as an engine
//! `Component`, and [`Call`] is one invocation of it, as a node or as an Agent's tool.
//!
//! Shared plumbing: `meta` (RAGFlow's `meta` and the function schema), `reference` (the
//! run's reference store and `formalized_content`), `net` (the HTTP client and the SSRF
//! guard every outgoing call a canvas controls goes through), `sandbox` (where CodeExec
//! runs code), `sql` (ExeSQL's database drivers), `mcp` (MCP servers' tools).

/// The fixed facts every tool states the same way, in a `Tool` impl: its class name,
/// its `meta` (a field of that name), its default outputs, the environment variables it
/// reads.
macro_rules! tool_facts {
    ($class:literal, outputs: [$($o:literal),* $(,)?], env: [$($e:expr),* $(,)?]) => {
        fn class(&self) -> &'static str {
            $class
        }

        fn meta(&self) -> &$crate::ToolMeta {
            &self.meta
        }

        fn default_outputs(&self) -> &'static [&'static str] {
            &[$($o),*]
        }

        fn env_vars(&self) -> &'static [&'static str] {
            &[$($e),*]
        }
    };
}
pub(crate) use tool_facts;

pub mod akshare;
pub mod arxiv;
pub mod bgpt;
pub mod code_exec;
pub mod crawler;
pub mod deepl;
pub mod duckduckgo;
#[cfg(feature = "email")]
pub mod email;
#[cfg(feature = "sql")]
pub mod exe_sql;
pub mod github;
pub mod google;
pub mod google_scholar;
pub mod html;
pub mod keenable;
pub mod mcp;
pub mod meta;
pub mod net;
pub mod node;
pub mod pubmed;
pub mod querit_contents;
pub mod querit_search;
pub mod qweather;
pub mod reference;
pub mod retrieval;
pub mod sandbox;
pub mod searxng;
pub mod sql;
pub mod tavily_extract;
pub mod tavily_search;
pub mod web;
pub mod wencai;
pub mod wikipedia;
pub mod xml;
pub mod yahoo_finance;

use std::path::PathBuf;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;

use canvas_engine::component::lock;
use canvas_engine::{BuildError, CResult, NodeCx};
use canvas_pyrt::Object;
pub use meta::{Param, ToolMeta};

/// What tools may reach and how: built once per run by the CLI from flags, the
/// environment and configuration files; plain values, no global state.
#[derive(Debug, Default)]
pub struct ToolEnv {
    /// Which addresses outgoing calls may reach.
    pub net: net::NetPolicy,
    /// The RAGFlow server Retrieval asks, when one is configured.
    pub ragflow: Option<retrieval::RagflowApi>,
    /// Where and how CodeExec runs code.
    pub sandbox: sandbox::SandboxConfig,
    /// ExeSQL may run INSERT/UPDATE/DELETE (RAGFlow never does).
    pub sql_writes: bool,
    /// MCP servers known by id (`--mcp-config`), for Agent `mcp` entries.
    pub mcp: mcp::McpConfig,
    /// Where produced files go (`--output-dir`): DocGenerator and ExcelProcessor
    /// write here (`None`: the current directory), CodeExec keeps its artifacts here
    /// (`None`: a temporary directory per run).
    pub artifacts_dir: Option<PathBuf>,
    /// The process environment as the CLI read it at start (API keys, base URL
    /// overrides), so tools read values, not global state.
    pub vars: std::collections::BTreeMap<String, String>,
}

impl ToolEnv {
    /// The settings of the run `cx` belongs to: the ones the caller put in the run's
    /// services, else the defaults (no network beyond the guard's, no services).
    pub fn of<'c>(cx: &'c NodeCx<'_>) -> &'c ToolEnv {
        static DEFAULT: std::sync::OnceLock<ToolEnv> = std::sync::OnceLock::new();
        cx.service::<ToolEnv>()
            .unwrap_or_else(|| DEFAULT.get_or_init(ToolEnv::default))
    }

    /// A non-empty environment variable.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    /// A tool's API base URL: the override variable `var` when set (tests, self-hosted
    /// mirrors), else `default`; without a trailing slash.
    pub fn base_url(&self, var: &str, default: &str) -> String {
        self.var(var)
            .unwrap_or(default)
            .trim_end_matches('/')
            .to_string()
    }
}

/// One RAGFlow tool.
#[async_trait]
pub trait Tool: Send + Sync {
    /// RAGFlow's class name (`Retrieval`).
    fn class(&self) -> &'static str;

    /// RAGFlow's `meta`: function name, description, parameters.
    fn meta(&self) -> &ToolMeta;

    /// Output names declared by default.
    fn default_outputs(&self) -> &'static [&'static str] {
        &[]
    }

    /// Environment variables the tool reads (API keys, base URL overrides), for
    /// `canvas components`.
    fn env_vars(&self) -> &'static [&'static str] {
        &[]
    }

    /// The progress text of `node_started`, from the resolved arguments.
    fn thoughts(&self, _args: &Object) -> String {
        String::new()
    }

    /// What in its DSL parameters the tool cannot run with, though it could be built (a
    /// feature this build lacks): checked before a run (`Component::check`), while `run`
    /// still guards against it for runs that skipped the check.
    fn check(&self, _params: &Object) -> Result<(), canvas_engine::ParamError> {
        Ok(())
    }

    /// Run with `args` (the resolved parameters as a node; the model's arguments, the
    /// missing ones filled from the parameters, as an Agent's tool). Outputs are set
    /// on `call`. Returns what the model reads; `None` means the outputs themselves.
    /// `Failed` is RAGFlow's caught exception (its text goes to `_ERROR` and to the
    /// model): a service or key that is not configured is one, with a message naming
    /// what to set. `Fatal` stops the run (an Agent calling the tool fails): only for
    /// what RAGFlow itself would crash on, or a feature this build lacks (the canvas
    /// must change before it runs here).
    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>>;
}

/// Builds a tool from its DSL parameters (RAGFlow's `check()` failures are errors).
pub type ToolBuilder = fn(&Object) -> Result<Box<dyn Tool>, BuildError>;

/// One invocation of a tool: its parameters, where its outputs go, and the run it
/// belongs to.
pub struct Call<'a> {
    /// The running node: the tool's own node, or the Agent calling it.
    pub cx: &'a NodeCx<'a>,
    /// The tool's DSL parameters.
    pub params: &'a Object,
    /// RAGFlow's component id of the tool (`<agent id>--><name>` for an Agent's tool).
    pub id: String,
    /// Outputs of an Agent's tool (a node's go to the run state).
    outputs: Option<Mutex<Object>>,
}

impl<'a> Call<'a> {
    /// A call of the tool placed as node `cx`.
    pub fn node(cx: &'a NodeCx<'a>) -> Call<'a> {
        Call {
            cx,
            params: cx.params(),
            id: cx.id().to_string(),
            outputs: None,
        }
    }

    /// A call of an Agent's tool: outputs are kept with the call.
    pub fn agent_tool(cx: &'a NodeCx<'a>, params: &'a Object, id: String) -> Call<'a> {
        Call {
            cx,
            params,
            id,
            outputs: Some(Mutex::new(Object::new())),
        }
    }

    /// What tools may reach and how.
    pub fn env(&self) -> &ToolEnv {
        ToolEnv::of(self.cx)
    }

    /// A parameter, `None` when absent.
    pub fn param(&self, name: &str) -> Option<&Value> {
        self.params.get(name)
    }

    /// A string parameter, or `default`.
    pub fn param_str<'b>(&'b self, name: &str, default: &'b str) -> &'b str {
        self.param(name).and_then(Value::as_str).unwrap_or(default)
    }

    /// A numeric parameter (numbers or numeric strings), or `default`.
    pub fn param_f64(&self, name: &str, default: f64) -> f64 {
        match self.param(name) {
            Some(Value::Number(n)) => n.as_f64().unwrap_or(default),
            Some(Value::String(s)) => s.trim().parse().unwrap_or(default),
            _ => default,
        }
    }

    /// A boolean parameter (Python truthiness), or `default` when absent.
    pub fn param_bool(&self, name: &str, default: bool) -> bool {
        self.param(name)
            .map(canvas_dsl::model::truthy)
            .unwrap_or(default)
    }

    /// Set an output.
    pub fn set_output(&self, name: &str, v: Value) {
        match &self.outputs {
            Some(m) => {
                lock(m).insert(name.to_string(), v);
            }
            None => self.cx.set_output(name, v),
        }
    }

    /// An output (`Null` when unset).
    pub fn output(&self, name: &str) -> Value {
        match &self.outputs {
            Some(m) => lock(m).get(name).cloned().unwrap_or(Value::Null),
            None => self.cx.output(name),
        }
    }

    /// The outputs of an Agent's tool (empty for a node).
    pub fn outputs(&self) -> Object {
        self.outputs
            .as_ref()
            .map(|m| lock(m).clone())
            .unwrap_or_default()
    }

    /// Record an input value shown in `node_finished.inputs` (nodes only).
    pub fn set_input(&self, name: &str, v: Value) {
        if self.outputs.is_none() {
            self.cx.set_input(name, v);
        }
    }

    /// Routine (b) of `engine.md` §3.4: every `{reference}` of `text` replaced by its
    /// value as text.
    pub fn render(&self, text: &str) -> CResult<String> {
        Ok(self.cx.value_with_variable(text)?)
    }

    /// Add chunks and document aggregates to the run's reference store.
    pub fn add_reference(&self, chunks: &[Value], doc_aggs: &[Value]) {
        self.cx
            .with_state(|st| reference::add(st, chunks, doc_aggs));
    }
}

/// Run `f` up to `max_retries + 1` times, sleeping `delay_after_error` seconds after
/// each failure (RAGFlow's tool retry loop). Returns the last error.
pub async fn with_retries<T, F, Fut>(call: &Call<'_>, mut f: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let retries = call.param_f64("max_retries", 0.0).max(0.0) as u32;
    let delay = call.param_f64("delay_after_error", 2.0).clamp(0.0, 3600.0);
    let mut last = String::new();
    for attempt in 0..=retries {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) => last = e,
        }
        if attempt < retries && delay > 0.0 {
            tokio::time::sleep(std::time::Duration::from_secs_f64(delay)).await;
        }
    }
    Err(last)
}
