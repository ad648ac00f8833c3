//! Tool options shared by run, resume and chat: what outgoing calls may reach, MCP
//! servers, the RAGFlow server Retrieval asks, where CodeExec runs and writes.

use std::path::PathBuf;

use clap::Args;

use super::CliError;
use crate::tools::ToolEnv;

/// Tool options.
#[derive(Debug, Clone, Args)]
pub struct ToolArgs {
    /// Let tools reach loopback, private, link-local and metadata addresses
    /// [also: CANVAS_ALLOW_PRIVATE=1].
    #[arg(long)]
    pub allow_private_network: bool,
    /// MCP servers for Agent `mcp` entries (YAML: servers by id with url/transport/headers, or command/args).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// Let ExeSQL run INSERT, UPDATE and DELETE statements (refused by default, as RAGFlow).
    #[arg(long)]
    pub allow_sql_writes: bool,
    /// Where files tools produce (CodeExec artifacts) are written [default: beside the store].
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
    /// The tool environment these options and the process environment give.
    pub fn env(&self) -> Result<ToolEnv, CliError> {
        let mut env = ToolEnv {
            sql_writes: self.allow_sql_writes,
            artifacts_dir: self.output_dir.clone(),
            ..ToolEnv::default()
        };
        env.net.allow_private = self.allow_private_network || env_flag("CANVAS_ALLOW_PRIVATE");
        Ok(env)
    }
}
