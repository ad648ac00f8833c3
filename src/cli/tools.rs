//! Tool options shared by run, resume and chat: what outgoing calls may reach, MCP
//! servers, the RAGFlow server Retrieval asks, where CodeExec runs and writes.

use std::path::{Path, PathBuf};

use clap::Args;

use super::CliError;
use canvas_llm::provider::{LlmConfig, os_env};
use canvas_tools::ToolEnv;
use canvas_tools::mcp::McpConfig;
use canvas_tools::retrieval::RagflowApi;
use canvas_tools::sandbox::SandboxConfig;

/// Tool options.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Tools")]
pub struct ToolArgs {
    /// Let tools reach private addresses.
    #[arg(
        long,
        env = "CANVAS_ALLOW_PRIVATE",
        hide_env_values = true,
        value_parser = super::opts::truthy
    )]
    pub allow_private_network: bool,
    /// Where the MCP servers an Agent names are (YAML).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// Let ExeSQL run INSERT, UPDATE and DELETE (refused by default).
    #[arg(long)]
    pub allow_sql_writes: bool,
    /// Where generated files go (documents, workbooks, code artifacts).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

/// True when an environment variable is set to a true-ish value.
fn env_flag(name: &str) -> bool {
    std::env::var(name)
        .map(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        })
        .unwrap_or(false)
}

impl ToolArgs {
    /// The tool environment these options, the process environment and the
    /// configuration file (`llm_config`, as `--llm-config` names it) give.
    pub fn env(&self, llm_config: Option<&Path>) -> Result<ToolEnv, CliError> {
        let mut env = ToolEnv {
            sql_writes: self.allow_sql_writes,
            artifacts_dir: self.output_dir.clone(),
            sandbox: SandboxConfig::from_env(),
            ragflow: ragflow(llm_config)?,
            vars: std::env::vars().collect(),
            ..ToolEnv::default()
        };
        // RAGFlow's own bypass variable is honoured too.
        env.net.allow_private = self.allow_private_network || env_flag("ALLOW_ANY_HOST");
        if let Some(path) = &self.mcp_config {
            env.mcp = McpConfig::load(path).map_err(|e| CliError::invalid(e.to_string()))?;
        }
        tracing::info!(
            allow_private_network = env.net.allow_private,
            allow_sql_writes = env.sql_writes,
            mcp_config = ?self.mcp_config,
            output_dir = ?env.artifacts_dir,
            ragflow = ?env.ragflow.as_ref().map(|r| &r.base_url),
            "tools configured"
        );
        Ok(env)
    }
}

/// The RAGFlow server: `RAGFLOW_BASE_URL` and `RAGFLOW_API_KEY`, else the `ragflow:`
/// section of the configuration file. `None` when no base URL is given.
fn ragflow(llm_config: Option<&Path>) -> Result<Option<RagflowApi>, CliError> {
    let var = |n: &str| os_env(n).filter(|v| !v.trim().is_empty());
    let section = if var("RAGFLOW_BASE_URL").is_some() && var("RAGFLOW_API_KEY").is_some() {
        None
    } else {
        LlmConfig::load(llm_config, &os_env)
            .map_err(|e| CliError::invalid(e.to_string()))?
            .ragflow
    };
    let section = section.unwrap_or_default();
    let Some(base_url) = var("RAGFLOW_BASE_URL").or(section.base_url) else {
        return Ok(None);
    };
    let api_key = var("RAGFLOW_API_KEY")
        .or_else(|| section.api_key_env.as_deref().and_then(var))
        .or_else(|| section.api_key.map(|k| k.expose().to_string()))
        .unwrap_or_default();
    Ok(Some(RagflowApi { base_url, api_key }))
}
