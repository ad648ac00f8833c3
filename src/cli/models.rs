//! Where a run's model calls go, from the command line: the scripted mock
//! (`--mock-llm`), a recording (`--replay`), or providers (`--llm-config`, `--model`,
//! environment keys), optionally recorded (`--record`). Real providers are checked
//! before the run starts, so a missing key is an error naming the variable, not a
//! failure half-way through.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde_json::Value;

use super::error::CliError;
use canvas_engine::Canvas;
use canvas_llm::provider::{LlmConfig, Providers};
use canvas_llm::record::{Recorder, Replayer};
use canvas_llm::{MockModel, MockScript, ModelSource, OneModel};

/// Model options shared by run, resume and chat.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Models")]
pub struct ModelArgs {
    /// Answer every model call from a script (docs/mock-llm.md), offline.
    #[arg(long = "mock-llm", value_name = "FILE", conflicts_with = "replay")]
    pub mock_llm: Option<PathBuf>,
    /// Provider configuration (docs/providers.md).
    #[arg(
        long = "llm-config",
        value_name = "FILE",
        env = "CANVAS_LLM_CONFIG",
        hide_env_values = true,
        value_parser = super::opts::lenient_path
    )]
    pub(super) llm_config: Option<PathBuf>,
    /// The model of components whose llm_id is empty.
    #[arg(long, value_name = "MODEL@FACTORY")]
    pub model: Option<String>,
    /// Save every model call and its answer (for --replay).
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer model calls from a --record file; any other call fails.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
}

/// The model source of a run and the `sys.date` it runs with.
pub struct ModelSetup {
    /// Where calls go.
    pub source: Arc<dyn ModelSource>,
    /// A fixed `sys.date` (scripted and replayed runs are reproducible).
    pub date: Option<String>,
    /// The providers, when real ones are used (checked before the run).
    providers: Option<Arc<Providers>>,
}

struct Shared(Arc<Providers>);

impl ModelSource for Shared {
    fn model(&self, llm_id: &str) -> Result<Arc<dyn canvas_llm::ChatModel>, canvas_llm::LlmError> {
        self.0.model(llm_id)
    }
}

impl ModelArgs {
    /// The provider configuration named by `--llm-config` or `$CANVAS_LLM_CONFIG` (a
    /// blank value is no name: the default file is used).
    pub fn llm_config(&self) -> Option<&Path> {
        self.llm_config
            .as_deref()
            .filter(|p| !p.to_string_lossy().trim().is_empty())
    }

    /// Build the model source these options ask for.
    pub fn setup(&self) -> Result<ModelSetup, CliError> {
        self.setup_limited(None)
    }

    /// [`ModelArgs::setup`] with providers' calls going through `limits` (many runs at
    /// once: a rate per provider, and a backoff its calls share).
    pub fn setup_limited(
        &self,
        limits: Option<Arc<canvas_llm::limit::Limits>>,
    ) -> Result<ModelSetup, CliError> {
        tracing::info!(
            mock_llm = ?self.mock_llm,
            replay = ?self.replay,
            record = ?self.record,
            llm_config = ?self.llm_config(),
            model = ?self.model,
            "model source chosen: {}",
            if self.replay.is_some() {
                "replay"
            } else if self.mock_llm.is_some() {
                "mock script"
            } else {
                "providers"
            }
        );
        if let Some(path) = &self.replay {
            let r = Replayer::load(path).map_err(|e| CliError::invalid(e.to_string()))?;
            let date = Some(r.date().to_string());
            return Ok(ModelSetup {
                source: Arc::new(r),
                date,
                providers: None,
            });
        }
        let (inner, date, providers): (Arc<dyn ModelSource>, Option<String>, _) = match &self
            .mock_llm
        {
            Some(path) => {
                let script =
                    MockScript::load(path).map_err(|e| CliError::invalid(e.to_string()))?;
                let date = script.date().map(String::from);
                (
                    Arc::new(OneModel(Arc::new(MockModel::new(script)))),
                    date,
                    None,
                )
            }
            None => {
                let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
                let config = LlmConfig::load(self.llm_config(), &env)
                    .map_err(|e| CliError::invalid(e.to_string()))?;
                let p = Providers::new(config, self.model.clone(), Box::new(move |k: &str| env(k)));
                let p = Arc::new(match limits {
                    Some(l) => p.with_limits(l),
                    None => p,
                });
                (Arc::new(Shared(p.clone())), None, Some(p))
            }
        };
        match &self.record {
            Some(path) => {
                let date = date.unwrap_or_else(now);
                let rec = Recorder::new(inner, path.clone(), date.clone())
                    .map_err(|e| CliError::invalid(e.to_string()))?;
                Ok(ModelSetup {
                    source: Arc::new(rec),
                    date: Some(date),
                    providers,
                })
            }
            None => Ok(ModelSetup {
                source: inner,
                date,
                providers,
            }),
        }
    }
}

fn now() -> String {
    chrono::Local::now().format("%Y-%m-%d %H:%M:%S").to_string()
}

impl ModelSetup {
    /// With real providers: every model the canvas names must resolve (factory known,
    /// key set) before the run starts.
    pub fn check(&self, canvas: &Canvas, label: &str) -> Result<(), CliError> {
        let Some(p) = &self.providers else {
            return Ok(());
        };
        for node in canvas.nodes.values().filter(|n| is_model_class(&n.class)) {
            let mut ids = Vec::new();
            model_ids(&node.params, &mut ids);
            if ids.is_empty() {
                ids.push(String::new());
            }
            for id in ids {
                p.resolve(&id).map_err(|e| {
                    let place = format!("{label}: component {:?} ({})", node.id, node.class);
                    match e {
                        canvas_llm::LlmError::Resolve { message, hint } => {
                            CliError::invalid(format!("{place}: {message}")).hint(hint)
                        }
                        other => CliError::invalid(format!("{place}: {other}")),
                    }
                })?;
            }
        }
        Ok(())
    }
}

fn is_model_class(class: &str) -> bool {
    ["llm", "agent", "categorize"].contains(&class.to_lowercase().as_str())
}

/// The `llm_id`s of a component's parameters, its Agent tools' included.
fn model_ids(params: &canvas_pyrt::Object, out: &mut Vec<String>) {
    if let Some(id) = params.get("llm_id") {
        out.push(id.as_str().unwrap_or("").to_string());
    }
    for t in params
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let agent = t
            .get("component_name")
            .and_then(Value::as_str)
            .is_some_and(|c| c.eq_ignore_ascii_case("agent"));
        if let (true, Some(p)) = (agent, t.get("params").and_then(Value::as_object)) {
            model_ids(p, out);
        }
    }
}
