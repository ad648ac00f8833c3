//! `canvas components`: the component classes this build knows, and whether it runs each.

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::CliError;
use super::runs::write_stdout;
use canvas_components::{LEFT_OUT, LEGACY, SUPPORTED, TOOLS, UNSUPPORTED};
use canvas_pyrt::Object;
use canvas_tools::Tool;

/// Output formats of `canvas components`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ComponentsFormat {
    /// A readable list.
    Text,
    /// One JSON array.
    Json,
}

/// Options of `canvas components`.
#[derive(Debug, Args)]
pub struct ComponentsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ComponentsFormat::Text)]
    pub format: ComponentsFormat,
}

/// One component class.
#[derive(Debug, Serialize)]
struct Entry {
    name: &'static str,
    /// `runs`, `not_yet` or `legacy`.
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'static str>,
    /// What an Agent offers the model for it, when it is a tool this build runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<ToolInfo>,
}

/// A tool's interface: its function schema, parameters with defaults, outputs and the
/// environment variables it reads.
#[derive(Debug, Serialize)]
struct ToolInfo {
    /// The OpenAI function (name without the Agent's `_<index>` suffix).
    function: serde_json::Value,
    /// Parameters: name, type, description, default, required.
    parameters: Vec<serde_json::Value>,
    /// Outputs declared by default.
    outputs: Vec<&'static str>,
    /// Environment variables it reads (keys, base URL overrides).
    env: Vec<&'static str>,
}

/// Parameters that pass a tool's load-time check, for describing it (the others load
/// with none).
const SAMPLE_PARAMS: &[(&str, &str)] = &[
    (
        "ExeSQL",
        r#"{"db_type": "sqlite", "database": "example.db"}"#,
    ),
    ("QueritContents", r#"{"urls": ["https://example.com"]}"#),
    (
        "Email",
        r#"{"smtp_server": "smtp.example.com", "email": "me@example.com", "password": "secret", "sender_name": "Me"}"#,
    ),
];

/// Describe a tool class, built with sample parameters.
fn tool_info(name: &str) -> Option<ToolInfo> {
    let (_, build) = TOOLS.iter().find(|(n, _)| *n == name)?;
    let sample = SAMPLE_PARAMS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("{}", |(_, p)| p);
    let params: Object = serde_json::from_str(sample).ok()?;
    let tool: Box<dyn Tool> = build(&params).ok()?;
    let meta = tool.meta();
    let fname = meta.function_name(&Object::new());
    let mut function = meta.schema(&Object::new(), &fname);
    let parameters = meta
        .parameters
        .iter()
        .map(|p| {
            serde_json::json!({"name": p.name, "type": p.kind, "description": p.description,
                "default": p.default, "required": p.required})
        })
        .collect();
    Some(ToolInfo {
        function: function["function"].take(),
        parameters,
        outputs: tool.default_outputs().to_vec(),
        env: tool.env_vars().to_vec(),
    })
}

fn entries() -> Vec<Entry> {
    let mut out: Vec<Entry> = SUPPORTED
        .iter()
        .map(|(name, _)| Entry {
            name,
            status: "runs",
            note: (*name == "Fillup").then_some("older name of UserFillUp"),
            tool: tool_info(name),
        })
        .collect();
    out.extend(UNSUPPORTED.iter().map(|(name, _, why)| Entry {
        name,
        status: "not_yet",
        note: Some(why),
        tool: None,
    }));
    out.extend(LEFT_OUT.iter().map(|(name, _)| Entry {
        name,
        status: "not_yet",
        note: Some("its cargo feature is left out of this build"),
        tool: None,
    }));
    out.extend(LEGACY.iter().map(|(name, why)| Entry {
        name,
        status: "legacy",
        note: Some(why),
        tool: None,
    }));
    out
}

/// Run `canvas components`.
pub fn exec(args: ComponentsArgs) -> Result<u8, CliError> {
    let list = entries();
    match args.format {
        ComponentsFormat::Json => write_stdout(|out| {
            serde_json::to_writer_pretty(&mut *out, &list)?;
            writeln!(out)
        }),
        ComponentsFormat::Text => write_stdout(|out| {
            for (status, title) in [
                ("runs", "Runs in this build:"),
                (
                    "not_yet",
                    "Recognised, not run yet (validate reports them, a run stops there):",
                ),
                ("legacy", "Legacy, no longer run by RAGFlow either:"),
            ] {
                writeln!(out, "{title}")?;
                for e in list.iter().filter(|e| e.status == status) {
                    let function = e.tool.as_ref().and_then(|t| t.function["name"].as_str());
                    match (e.note.filter(|_| status == "runs"), function) {
                        (Some(n), _) => writeln!(out, "  {:<20} {n}", e.name)?,
                        (None, Some(f)) => {
                            let env = &e
                                .tool
                                .as_ref()
                                .map(|t| t.env.join(", "))
                                .unwrap_or_default();
                            if env.is_empty() {
                                writeln!(out, "  {:<20} tool `{f}`", e.name)?
                            } else {
                                writeln!(out, "  {:<20} tool `{f}`; reads {env}", e.name)?
                            }
                        }
                        (None, None) => writeln!(out, "  {}", e.name)?,
                    }
                }
            }
            writeln!(
                out,
                "Older names (Generate, Answer, SearchMyDataset, DocsGenerator, Parallel, ...) are rewritten on load; see `canvas migrate`."
            )
        }),
    }
}
