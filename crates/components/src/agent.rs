//! Agent: an LLM that may call tools through native function calling
//! (`llm-and-tools.md` §4). Its tools are the DSL's embedded component configs (the
//! `tools/` of this build: Retrieval, CodeExec, ExeSQL, ...), MCP servers' tools, and
//! nested Agents (a sub-Agent answers the supervisor's order). Tools this build does not
//! run yet are offered with what the DSL says of them, and fail the Agent with a clear
//! error when the model calls one.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::chat::answer::{Ask, answer_into_outputs, text};
use super::chat::call::ToolBox;
use super::chat::params::{LlmParams, Prompt};
use super::chat::prepare;
use super::chat::prompts::sanitize_function_name;
use canvas_engine::component::lock;
use canvas_engine::refs::RefElement;
use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx, ParamError};
use canvas_pyrt::Object;
#[cfg(feature = "mcp")]
use canvas_tools::ToolEnv;
#[cfg(feature = "mcp")]
use canvas_tools::mcp::{McpConfig, McpError, McpServer, McpSession};
use canvas_tools::{Call, Tool};

/// Build an Agent from its DSL parameters (its tools included, recursively).
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(Agent::new(params, "Agent")?))
}

/// The Agent component.
pub struct Agent {
    params: LlmParams,
    tools: Arc<Tools>,
    max_rounds: usize,
    /// The default order when called as a tool without one.
    user_prompt: String,
}

/// What a tool entry runs.
enum ToolKind {
    /// A nested Agent.
    SubAgent(Arc<Agent>),
    /// A component tool of `tools/`.
    Component {
        tool: Box<dyn Tool>,
        /// Its DSL parameters.
        params: Object,
        /// RAGFlow's component id: `<agent id>--><name>`.
        id: String,
    },
    /// A tool of an MCP server.
    #[cfg(feature = "mcp")]
    Mcp {
        /// The canvas's `mcp` entry (server id, maybe the server itself).
        entry: Value,
        /// The tool's own name on the server.
        tool: String,
    },
    /// A component or MCP tool this build does not run yet.
    NotYet {
        /// How the DSL names it.
        what: String,
    },
}

struct ToolEntry {
    /// The indexed function name the model calls.
    name: String,
    schema: Value,
    kind: ToolKind,
}

/// Open MCP sessions by server id (none in a build without the `mcp` feature).
#[cfg(feature = "mcp")]
type Sessions = tokio::sync::Mutex<Vec<(String, Arc<McpSession>)>>;
#[cfg(not(feature = "mcp"))]
type Sessions = std::marker::PhantomData<()>;

/// The tools of one Agent, its open MCP sessions (by server id, opened on first use and
/// kept for the process), and the files its tools produced, by calling component id,
/// until the answer takes them.
struct Tools(
    Vec<ToolEntry>,
    Sessions,
    std::sync::Mutex<Vec<(String, Value)>>,
);

impl Agent {
    fn new(params: &Object, who: &str) -> Result<Agent, BuildError> {
        let llm = LlmParams::parse(params, who, 13)?;
        let max_rounds = params
            .get("max_rounds")
            .and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64)))
            .unwrap_or(5)
            .min(100) as usize;
        let mut entries = Vec::new();
        let tool_list = params.get("tools").and_then(Value::as_array);
        for t in tool_list.into_iter().flatten() {
            let i = entries.len();
            let class = t
                .get("component_name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let name = t
                .get("name")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or(&class)
                .to_string();
            let tparams = t
                .get("params")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if class.eq_ignore_ascii_case("Agent") {
                let sub = Agent::new(&tparams, &format!("Agent tool {name:?}"))?;
                let fname = format!("{}_{i}", sanitize_function_name(&name.replace(' ', "_")));
                let mut user_prompt = json!({"type": "string",
                    "description": "This is the order you need to send to the agent."});
                if !sub.user_prompt.is_empty() {
                    user_prompt["default"] = json!(sub.user_prompt);
                }
                let description = tparams
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let schema = json!({"type": "function", "function": {
                    "name": fname,
                    "description": description,
                    "parameters": {"type": "object", "properties": {
                        "user_prompt": user_prompt,
                        "reasoning": {"type": "string", "description": "Supervisor's reasoning for choosing this agent. Explain why this agent is being invoked and what is expected of it."},
                        "context": {"type": "string", "description": "All relevant background information, prior findings, decisions, and constraints this agent needs, as detailed and self-contained as possible."}
                    }, "required": ["user_prompt", "reasoning", "context"]}}});
                entries.push(ToolEntry {
                    name: fname,
                    schema,
                    kind: ToolKind::SubAgent(Arc::new(sub)),
                });
            } else if let Some((_, build)) = super::TOOLS
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(&class))
            {
                let tool = build(&tparams)
                    .map_err(|e| BuildError::Params(format!("{who}: tool {name:?}: {e}")))?;
                let base = tool.meta().function_name(&tparams);
                let fname = format!("{}_{i}", sanitize_function_name(&base));
                let schema = tool.meta().schema(&tparams, &fname);
                entries.push(ToolEntry {
                    name: fname,
                    schema,
                    kind: ToolKind::Component {
                        tool,
                        params: tparams,
                        id: name.replace(' ', "_"),
                    },
                });
            } else {
                let base = tparams
                    .get("function_name")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .unwrap_or_else(|| snake(&class));
                let fname = format!("{}_{i}", sanitize_function_name(&base));
                let description = tparams
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let schema = json!({"type": "function", "function": {"name": fname,
                    "description": description,
                    "parameters": {"type": "object", "properties": {}, "required": []}}});
                entries.push(ToolEntry {
                    name: fname,
                    schema,
                    kind: ToolKind::NotYet {
                        what: format!("the {class} tool"),
                    },
                });
            }
        }
        let mcp = params.get("mcp").and_then(Value::as_array);
        for server in mcp.into_iter().flatten() {
            let tools = server.get("tools").and_then(Value::as_object);
            for (tname, meta) in tools.into_iter().flatten() {
                let i = entries.len();
                let fname = format!("{}_{i}", sanitize_function_name(tname));
                let schema = json!({"type": "function", "function": {"name": fname,
                    "description": meta.get("description").cloned().unwrap_or(json!("")),
                    "parameters": meta.get("inputSchema").cloned()
                        .unwrap_or(json!({"type": "object", "properties": {}}))}});
                let tool = meta
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or(tname)
                    .to_string();
                #[cfg(feature = "mcp")]
                let kind = ToolKind::Mcp {
                    entry: server.clone(),
                    tool,
                };
                // `validate` reports these; a run stops if the model calls one.
                #[cfg(not(feature = "mcp"))]
                let kind = ToolKind::NotYet {
                    what: format!("the MCP tool {tool}: the cargo feature `mcp` is left out"),
                };
                entries.push(ToolEntry {
                    name: fname,
                    schema,
                    kind,
                });
            }
        }
        Ok(Agent {
            params: llm,
            tools: Arc::new(Tools(
                entries,
                Sessions::default(),
                std::sync::Mutex::new(Vec::new()),
            )),
            max_rounds,
            user_prompt: params
                .get("user_prompt")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        })
    }

    /// The first tool (sub-agents' tools included) whose parameters its check refuses,
    /// with the path from this Agent's `params`. (Tools this build cannot run at all are
    /// `validate`'s C041.)
    fn check_tools(&self) -> Result<(), ParamError> {
        for (i, entry) in self.tools.0.iter().enumerate() {
            let checked = match &entry.kind {
                ToolKind::SubAgent(agent) => agent.check_tools(),
                ToolKind::Component { tool, params, .. } => tool.check(params),
                _ => Ok(()),
            };
            if let Err(e) = checked {
                // Component and sub-agent entries come first, one per `tools` item.
                let mut path = vec!["tools".to_string(), i.to_string(), "params".to_string()];
                path.extend(e.path);
                return Err(ParamError {
                    message: format!("tool {i} ({}): {}", entry.name, e.message),
                    path,
                });
            }
        }
        Ok(())
    }

    fn tools(&self) -> Option<Arc<dyn ToolBox>> {
        if self.tools.0.is_empty() {
            None
        } else {
            Some(self.tools.clone())
        }
    }

    /// Answer as a sub-Agent: the supervisor's order is the only prompt
    /// (`llm-and-tools.md` §4.3); never streamed.
    async fn answer_as_tool(&self, cx: &NodeCx<'_>, args: &Value) -> CResult<String> {
        let arg = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string()
        };
        let mut order = arg("user_prompt");
        if order.is_empty() {
            order.clone_from(&self.user_prompt);
        }
        let (reasoning, context) = (arg("reasoning"), arg("context"));
        let content = if reasoning.is_empty() && context.is_empty() {
            order
        } else {
            let mut s = String::new();
            if !reasoning.is_empty() {
                s.push_str(&format!("\nREASONING:\n{reasoning}\n"));
            }
            if !context.is_empty() {
                s.push_str(&format!("\nCONTEXT:\n{context}\n"));
            }
            s.push_str(&format!("\nQUERY:\n{order}\n"));
            s
        };
        let prompts = [Prompt {
            role: "user".into(),
            content,
        }];
        text(
            cx,
            &Ask {
                params: &self.params,
                prompts: Some(&prompts),
                tools: self.tools(),
                max_rounds: self.max_rounds,
                record: false,
            },
        )
        .await
    }
}

/// `TavilySearch` → `tavily_search`.
fn snake(class: &str) -> String {
    let mut out = String::new();
    for (i, c) in class.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(c.to_lowercase());
    }
    if out.is_empty() { "tool".into() } else { out }
}

/// RAGFlow's limit on one MCP tool call.
#[cfg(feature = "mcp")]
const MCP_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(feature = "mcp")]
impl Tools {
    /// The session with the MCP server an `mcp` entry names: the server given in the
    /// entry itself, else the one of `--mcp-config` with its `mcp_id`.
    /// A server missing from the configuration, a `${VAR}` of it nobody set, or a
    /// server that cannot be reached is the inner error: its text is what the model
    /// reads, as RAGFlow answers every call of a server whose session failed. What
    /// only the user can decide is `Fatal` (it fails the Agent).
    async fn mcp_session(
        &self,
        cx: &NodeCx<'_>,
        entry: &Value,
    ) -> CResult<Result<Arc<McpSession>, McpError>> {
        let id = entry
            .get("mcp_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut open = self.1.lock().await;
        if let Some((_, s)) = open.iter().find(|(k, _)| *k == id) {
            return Ok(Ok(s.clone()));
        }
        let server: McpServer = match McpConfig::from_entry(entry) {
            Some(s) => s,
            None => match ToolEnv::of(cx).mcp.get(&id) {
                Ok(s) => s.clone(),
                Err(e) => return Ok(Err(e)),
            },
        };
        let session = match McpSession::connect(&server, &ToolEnv::of(cx).net, &[]).await {
            Ok(s) => Arc::new(s),
            // Fatal, not the model's text: a malformed header in the configuration file
            // and an address the private-network guard refuses are the user's to fix
            // (the file, or --allow-private-network) and the model cannot work around
            // them; the Agent fails with the way to fix it.
            Err(e @ (McpError::BadHeader { .. } | McpError::Blocked { .. })) => {
                return Err(ComponentError::Fatal(e.to_string()));
            }
            Err(e) => return Ok(Err(e)),
        };
        open.push((id, session.clone()));
        Ok(Ok(session))
    }
}

/// Call a component tool for the model (`llm-and-tools.md` §4.4): arguments the model
/// left out come from the tool's parameters (resolved as a node would); a failure is
/// the tool's `_ERROR` and its text is the result the model reads. Also returns the
/// files the tool produced (`_ARTIFACTS`).
async fn call_component(
    cx: &NodeCx<'_>,
    tool: &dyn Tool,
    params: &Object,
    name: &str,
    args: &Value,
) -> CResult<(String, Vec<Value>)> {
    let mut kwargs = args.as_object().cloned().unwrap_or_default();
    for p in &tool.meta().parameters {
        if kwargs.contains_key(p.name) {
            continue;
        }
        let v = params.get(p.name).unwrap_or(&p.default);
        if !v.is_null() {
            kwargs.insert(p.name.to_string(), cx.input_value(v)?);
        }
    }
    let call = Call::agent_tool(cx, params, format!("{}-->{name}", cx.id()));
    let res = tool.run(&call, &kwargs).await;
    let artifacts = match call.output("_ARTIFACTS") {
        Value::Array(a) => a,
        _ => Vec::new(),
    };
    let text = match res {
        Ok(Some(Value::String(s))) => Ok(s),
        Ok(Some(v)) => Ok(v.to_string()),
        Ok(None) => {
            let outputs = call.outputs();
            let main = ["formalized_content", "content", "result"]
                .iter()
                .find_map(|k| outputs.get(*k).filter(|v| !v.is_null()));
            Ok(match main {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => Value::Object(outputs).to_string(),
            })
        }
        Err(ComponentError::Failed(m)) => {
            call.set_output("_ERROR", json!(m));
            Ok(m)
        }
        Err(e) => Err(e),
    }?;
    Ok((text, artifacts))
}

#[async_trait]
impl ToolBox for Tools {
    fn schemas(&self) -> Vec<Value> {
        self.0.iter().map(|t| t.schema.clone()).collect()
    }

    fn take_artifacts(&self, cx: &NodeCx<'_>) -> Vec<Value> {
        let mut kept = lock(&self.2);
        let (mine, others): (Vec<_>, Vec<_>) = kept.drain(..).partition(|(id, _)| id == cx.id());
        *kept = others;
        mine.into_iter().map(|(_, a)| a).collect()
    }

    async fn call(&self, cx: &NodeCx<'_>, name: &str, args: &Value) -> CResult<String> {
        let Some(entry) = self.0.iter().find(|t| t.name == name) else {
            return Err(ComponentError::Failed(format!(
                "Tool call error: there is no tool named {name:?}"
            )));
        };
        match &entry.kind {
            ToolKind::SubAgent(agent) => agent.answer_as_tool(cx, args).await,
            ToolKind::Component { tool, params, id } => {
                let (text, artifacts) = call_component(cx, tool.as_ref(), params, id, args).await?;
                let mut kept = lock(&self.2);
                kept.extend(artifacts.into_iter().map(|a| (cx.id().to_string(), a)));
                Ok(text)
            }
            #[cfg(feature = "mcp")]
            ToolKind::Mcp { entry, tool } => match self.mcp_session(cx, entry).await? {
                Ok(session) => Ok(session
                    .call_tool(tool, args.clone(), MCP_CALL_TIMEOUT)
                    .await),
                // As RAGFlow: a server that cannot be reached answers each call with
                // the failure's text.
                Err(e) => Ok(e.call_error_text(tool)),
            },
            // Fatal: RAGFlow would run this tool and this build cannot (`validate`
            // reports it); the canvas must change before it runs here.
            ToolKind::NotYet { what } => Err(ComponentError::Fatal(format!(
                "the model called {name} ({what}), which this build of canvas does not run yet"
            ))),
        }
    }
}

#[async_trait]
impl Component for Agent {
    fn check(&self) -> Result<(), ParamError> {
        self.check_tools()
    }

    fn thoughts(&self, cx: &NodeCx<'_>) -> Cow<'static, str> {
        prepare::thoughts(cx, &self.params).into()
    }

    fn text_refs(&self, cx: &NodeCx<'_>) -> Option<Vec<RefElement>> {
        Some(cx.collect_refs(&self.params.texts()))
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        answer_into_outputs(
            cx,
            Ask {
                params: &self.params,
                prompts: None,
                tools: self.tools(),
                max_rounds: self.max_rounds,
                record: true,
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_check_refuses_the_agent_with_the_path_to_the_tool() {
        let p = json!({"llm_id": "m@F", "tools": [
            {"component_name": "Agent", "name": "Sub", "params": {"llm_id": "m@F", "tools": [
                {"component_name": "Retrieval", "params": {"kb_ids": ["k"]}},
                {"component_name": "Retrieval", "name": "Memo", "params": {"retrieval_from": "memory"}}]}}]});
        let Value::Object(p) = p else { unreachable!() };
        let Ok(agent) = build(&p) else {
            panic!("the agent builds")
        };
        let Err(e) = agent.check() else {
            panic!("memory retrieval is refused")
        };
        assert_eq!(
            e.path,
            [
                "tools",
                "0",
                "params",
                "tools",
                "1",
                "params",
                "retrieval_from"
            ]
        );
        assert!(e.message.contains("memory"), "{e}");
    }

    #[test]
    fn tools_get_indexed_function_names() {
        let params = json!({"llm_id": "m@F", "tools": [
            {"component_name": "TavilySearch", "name": "TavilySearch", "params": {}},
            {"component_name": "Agent", "name": "Web Search Specialist", "params": {"description": "finds things", "user_prompt": "search"}},
        ], "mcp": [{"mcp_id": "x", "tools": {"lookup": {"name": "lookup", "description": "d", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}}}]});
        let a = Agent::new(params.as_object().unwrap(), "Agent").unwrap();
        let names: Vec<String> = a.tools.0.iter().map(|t| t.name.clone()).collect();
        assert_eq!(
            names,
            vec!["tavily_search_0", "Web_Search_Specialist_1", "lookup_2"]
        );
        let sub = &a.tools.0[1].schema["function"];
        assert_eq!(sub["description"], json!("finds things"));
        assert_eq!(
            sub["parameters"]["properties"]["user_prompt"]["default"],
            json!("search")
        );
        assert_eq!(
            sub["parameters"]["required"],
            json!(["user_prompt", "reasoning", "context"])
        );
        assert_eq!(a.max_rounds, 5);
    }
}
