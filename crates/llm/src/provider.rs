//! Model resolution: an `llm_id` (`model`, `model@factory`, `model@instance@factory`) is
//! turned into an OpenAI-compatible [`Endpoint`] from the built-in factory table, the
//! user's `llm.yaml` and API keys in the environment. [`Providers`] is the
//! [`ModelSource`] of real runs.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;

use super::openai::{Endpoint, OpenAiModel};
use super::{ChatModel, LlmError, ModelSource};

/// Context length when neither the model nor its factory sets one (RAGFlow's fallback).
pub const DEFAULT_CONTEXT_LENGTH: usize = 8192;

/// Per-attempt timeout when the configuration sets none.
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;

/// An `llm_id` split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmId {
    /// The model as the canvas names it (may contain `@` and a `___` suffix).
    pub model: String,
    /// The tenant instance (`model@instance@factory`), if given.
    pub instance: Option<String>,
    /// The factory, without a `#...` suffix, if given.
    pub factory: Option<String>,
}

impl LlmId {
    /// The model name sent on the wire: the model cut at the first `___` (RAGFlow's
    /// `OpenAI_APIChat` does this: `glm-4-flash___OpenAI-API` → `glm-4-flash`).
    pub fn wire_name(&self) -> &str {
        self.model
            .split_once("___")
            .map_or(self.model.as_str(), |(head, _)| head)
    }
}

/// Split an `llm_id` the way RAGFlow does: from the right, at most two splits on `@`, so
/// a model name containing `@` survives.
pub fn split_llm_id(id: &str) -> LlmId {
    let non_empty = |s: &str| {
        let s = s.trim();
        (!s.is_empty()).then(|| s.to_string())
    };
    let mut parts = id.trim().rsplitn(3, '@');
    let last = parts.next().unwrap_or_default();
    let middle = parts.next();
    let first = parts.next();
    // `#admin` and the like are fixture artifacts, not part of the factory name.
    let factory_of = |s: &str| non_empty(s.split_once('#').map_or(s, |(head, _)| head));
    match (first, middle) {
        (Some(model), Some(instance)) => LlmId {
            model: model.trim().to_string(),
            instance: non_empty(instance),
            factory: factory_of(last),
        },
        (None, Some(model)) => LlmId {
            model: model.trim().to_string(),
            instance: None,
            factory: factory_of(last),
        },
        _ => LlmId {
            model: last.trim().to_string(),
            instance: None,
            factory: None,
        },
    }
}

/// A built-in model factory (provider) speaking the OpenAI chat-completions protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Factory {
    /// RAGFlow's name for it.
    pub name: &'static str,
    /// Default base URL (before `/chat/completions`); `None` when the user must give one.
    pub base_url: Option<&'static str>,
    /// The environment variable holding the API key, if there is a usual one.
    pub key_env: Option<&'static str>,
    /// Whether a call without a key is pointless (hosted services).
    pub key_required: bool,
    /// An environment variable holding the server's host (`OLLAMA_HOST`), used before the
    /// default base URL.
    pub host_env: Option<&'static str>,
    /// Local OpenAI-compatible servers: a configured base URL without a path gets `/v1`
    /// (RAGFlow ensures `/v1` for them, so RAGFlow's `api_base` values work as they are).
    pub ensure_v1: bool,
}

const fn hosted(name: &'static str, base_url: &'static str, key_env: &'static str) -> Factory {
    Factory {
        name,
        base_url: Some(base_url),
        key_env: Some(key_env),
        key_required: true,
        host_env: None,
        ensure_v1: false,
    }
}

const fn local(
    name: &'static str,
    base_url: Option<&'static str>,
    key_env: Option<&'static str>,
) -> Factory {
    Factory {
        name,
        base_url,
        key_env,
        key_required: false,
        host_env: None,
        ensure_v1: true,
    }
}

static FACTORIES: &[Factory] = &[
    hosted("OpenAI", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    hosted(
        "DeepSeek",
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
    ),
    hosted(
        "Tongyi-Qianwen",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
    ),
    hosted(
        "Dashscope",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
    ),
    hosted("Moonshot", "https://api.moonshot.cn/v1", "MOONSHOT_API_KEY"),
    hosted(
        "ZHIPU-AI",
        "https://open.bigmodel.cn/api/paas/v4",
        "ZHIPUAI_API_KEY",
    ),
    hosted(
        "SILICONFLOW",
        "https://api.siliconflow.cn/v1",
        "SILICONFLOW_API_KEY",
    ),
    hosted("MiniMax", "https://api.minimaxi.com/v1", "MINIMAX_API_KEY"),
    Factory {
        name: "Ollama",
        base_url: Some("http://localhost:11434/v1"),
        key_env: None,
        key_required: false,
        host_env: Some("OLLAMA_HOST"),
        ensure_v1: true,
    },
    hosted(
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
    ),
    hosted("Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    hosted("xAI", "https://api.x.ai/v1", "XAI_API_KEY"),
    hosted("Mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    hosted(
        "Gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GEMINI_API_KEY",
    ),
    hosted(
        "Anthropic",
        "https://api.anthropic.com/v1",
        "ANTHROPIC_API_KEY",
    ),
    hosted(
        "VolcEngine",
        "https://ark.cn-beijing.volces.com/api/v3",
        "ARK_API_KEY",
    ),
    hosted(
        "TogetherAI",
        "https://api.together.xyz/v1",
        "TOGETHER_API_KEY",
    ),
    hosted(
        "NVIDIA",
        "https://integrate.api.nvidia.com/v1",
        "NVIDIA_API_KEY",
    ),
    hosted("StepFun", "https://api.stepfun.com/v1", "STEPFUN_API_KEY"),
    local("LM-Studio", Some("http://localhost:1234/v1"), None),
    local(
        "OpenAI-API-Compatible",
        None,
        Some("OPENAI_API_COMPATIBLE_KEY"),
    ),
    local("VLLM", None, None),
    local("LocalAI", None, None),
    local("Xinference", None, None),
];

/// The built-in factories, in a stable order (for listings and docs).
pub fn factories() -> &'static [Factory] {
    FACTORIES
}

/// A factory name folded for comparison: case, `-`, `_` and spaces ignored.
fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The built-in factory called `name` (case, `-`, `_` and spaces ignored).
pub fn find_factory(name: &str) -> Option<&'static Factory> {
    let folded = fold(name);
    FACTORIES.iter().find(|f| fold(f.name) == folded)
}

/// An API key from the configuration file. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key itself, for the HTTP client only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A `factories:` entry of `llm.yaml`: adds a factory or overrides a built-in one.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactoryConfig {
    /// Base URL (before `/chat/completions`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// A literal key (never printed).
    #[serde(default)]
    pub api_key: Option<ApiKey>,
    /// Whether tools may be bound (default true).
    #[serde(default)]
    pub supports_tools: Option<bool>,
    /// Context length prompts are fitted into (default 8192).
    #[serde(default)]
    pub context_length: Option<usize>,
    /// Whether the models take images (default false).
    #[serde(default)]
    pub vision: Option<bool>,
}

/// A `models:` entry of `llm.yaml`, keyed by `llm_id` or bare model name.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The factory; wins over the one in the `llm_id` (a redirect).
    #[serde(default)]
    pub factory: Option<String>,
    /// The model name sent on the wire.
    #[serde(default)]
    pub name: Option<String>,
    /// Base URL (before `/chat/completions`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// A literal key (never printed).
    #[serde(default)]
    pub api_key: Option<ApiKey>,
    /// Whether tools may be bound (default true).
    #[serde(default)]
    pub supports_tools: Option<bool>,
    /// Context length prompts are fitted into (default 8192).
    #[serde(default)]
    pub context_length: Option<usize>,
    /// Whether the model takes images (default false).
    #[serde(default)]
    pub vision: Option<bool>,
}

/// The provider configuration (`llm.yaml`, or JSON).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// The model used for an empty `llm_id`.
    #[serde(default)]
    pub default_model: Option<String>,
    /// Limit for one attempt of a call, in seconds (default 600).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// Factories added or overridden, by name.
    #[serde(default)]
    pub factories: BTreeMap<String, FactoryConfig>,
    /// Per-model settings, by `llm_id` or bare model name.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// The RAGFlow server Retrieval searches (`RAGFLOW_BASE_URL`/`RAGFLOW_API_KEY`
    /// win over it).
    #[serde(default)]
    pub ragflow: Option<RagflowConfig>,
}

/// The `ragflow:` section of the configuration file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RagflowConfig {
    /// The server's base URL (`https://ragflow.example.com`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// A literal API key (never printed).
    #[serde(default)]
    pub api_key: Option<ApiKey>,
}

impl LlmConfig {
    /// Load the configuration: `explicit`, else `$CANVAS_LLM_CONFIG`, else
    /// `$XDG_CONFIG_HOME/canvas/llm.yaml` or `$HOME/.config/canvas/llm.yaml`. A missing
    /// default file is an empty configuration; a missing named file is an error.
    pub fn load(
        explicit: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<LlmConfig, LlmError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let named = explicit
            .map(Path::to_path_buf)
            .or_else(|| var("CANVAS_LLM_CONFIG").map(PathBuf::from));
        if let Some(path) = named {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                LlmError::Config(format!(
                    "{}: cannot read the LLM configuration: {e}",
                    path.display()
                ))
            })?;
            return LlmConfig::parse(&text, &path.display().to_string());
        }
        let dir = var("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| Path::new(&h).join(".config")));
        let Some(dir) = dir else {
            return Ok(LlmConfig::default());
        };
        let path = dir.join("canvas").join("llm.yaml");
        match std::fs::read_to_string(&path) {
            Ok(text) => LlmConfig::parse(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LlmConfig::default()),
            Err(e) => Err(LlmError::Config(format!(
                "{}: cannot read the LLM configuration: {e}",
                path.display()
            ))),
        }
    }

    /// Parse a configuration (YAML or JSON); `label` names it in errors.
    pub fn parse(text: &str, label: &str) -> Result<LlmConfig, LlmError> {
        let err = |message: String| {
            // One line: yaml_serde's messages may span several.
            let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
            LlmError::Config(format!("{label}: {message}"))
        };
        let text = text.trim_start_matches('\u{feff}');
        let blank = text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'));
        if blank {
            return Ok(LlmConfig::default());
        }
        canvas_dsl::nesting::check_yaml(text)
            .map_err(|e| err(format!("not a valid LLM configuration: invalid YAML: {e}")))?;
        let config: LlmConfig = yaml_serde::from_str(text)
            .map_err(|e| err(format!("not a valid LLM configuration: {e}")))?;
        if config.timeout_secs == Some(0) {
            return Err(err("timeout_secs must be at least 1".to_string()));
        }
        let zero = config
            .factories
            .iter()
            .map(|(k, f)| (format!("factories.{k}"), f.context_length))
            .chain(
                config
                    .models
                    .iter()
                    .map(|(k, m)| (format!("models.{k}"), m.context_length)),
            )
            .find(|(_, c)| *c == Some(0));
        if let Some((at, _)) = zero {
            return Err(err(format!("{at}: context_length must be at least 1")));
        }
        Ok(config)
    }
}

/// The process environment, for [`LlmConfig::load`] and [`Providers::new`].
pub fn os_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The environment as [`Providers`] reads it.
pub type Env = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Real models: `llm_id`s resolved through the factory table and `llm.yaml`, one
/// OpenAI-compatible client per resolved id, all sharing one HTTP connection pool.
pub struct Providers {
    config: LlmConfig,
    default_model: Option<String>,
    env: Env,
    http: OnceLock<reqwest::Client>,
    models: Mutex<HashMap<String, Arc<OpenAiModel>>>,
    /// Per-provider limits shared by every call (many runs at once), if any.
    limits: Option<Arc<crate::limit::Limits>>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The config's keys are redacted by `ApiKey`; the environment is not shown.
        f.debug_struct("Providers")
            .field("config", &self.config)
            .field("default_model", &self.default_model)
            .finish_non_exhaustive()
    }
}

impl Providers {
    /// Models from `config`; `default_model` (`--model`) wins over the configuration's.
    pub fn new(config: LlmConfig, default_model: Option<String>, env: Env) -> Providers {
        Providers {
            config,
            default_model,
            env,
            http: OnceLock::new(),
            models: Mutex::new(HashMap::new()),
            limits: None,
        }
    }

    /// The same providers with every call going through `limits` (a rate per provider
    /// and a backoff the provider's calls share).
    pub fn with_limits(mut self, limits: Arc<crate::limit::Limits>) -> Providers {
        self.limits = Some(limits);
        self
    }

    /// An environment variable, empty counting as unset.
    fn var(&self, name: &str) -> Option<String> {
        (self.env)(name).filter(|v| !v.trim().is_empty())
    }

    /// The `llm_id` an empty one stands for.
    fn default_id(&self) -> Option<&str> {
        [&self.default_model, &self.config.default_model]
            .into_iter()
            .flatten()
            .map(|s| s.trim())
            .find(|s| !s.is_empty())
    }

    /// The `llm_id` actually used for `llm_id` (the default model for an empty one).
    fn effective_id<'a>(&'a self, llm_id: &'a str) -> Result<&'a str, LlmError> {
        let llm_id = llm_id.trim();
        if !llm_id.is_empty() {
            return Ok(llm_id);
        }
        self.default_id().ok_or_else(|| {
            resolve_error(
                "component has no model (llm_id is empty)".to_string(),
                "pass --model MODEL@FACTORY or set default_model in llm.yaml".to_string(),
            )
        })
    }

    /// The `models:` entry for an id: the full id, then `model@factory` without the
    /// instance, then the bare model name (each also with the `___`-cut name).
    fn model_entry(&self, raw: &str, id: &LlmId) -> Option<&ModelConfig> {
        let mut keys = vec![raw.to_string()];
        for model in [id.model.as_str(), id.wire_name()] {
            if let Some(factory) = &id.factory {
                if let Some(instance) = &id.instance {
                    keys.push(format!("{model}@{instance}@{factory}"));
                }
                keys.push(format!("{model}@{factory}"));
            }
        }
        keys.push(id.model.clone());
        keys.push(id.wire_name().to_string());
        keys.iter().find_map(|k| self.config.models.get(k))
    }

    /// The `factories:` entry for a factory name (compared like [`find_factory`]).
    fn factory_entry(&self, name: &str) -> Option<(&str, &FactoryConfig)> {
        let folded = fold(name);
        self.config
            .factories
            .iter()
            .find(|(k, _)| fold(k) == folded)
            .map(|(k, v)| (k.as_str(), v))
    }

    /// Where and how to call `llm_id` (no network; the key comes from the configuration
    /// or the environment).
    pub fn resolve(&self, llm_id: &str) -> Result<Endpoint, LlmError> {
        let raw = self.effective_id(llm_id)?;
        let id = split_llm_id(raw);
        let entry = self.model_entry(raw, &id);
        let factory_name = entry
            .and_then(|e| e.factory.as_deref())
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .or(id.factory.as_deref());
        let Some(factory_name) = factory_name else {
            let m = &id.model;
            return Err(resolve_error(
                format!("model {raw:?} names no factory"),
                format!(
                    "write it as NAME@FACTORY (e.g. \"{m}@OpenAI\") or add it under models: in \
                     llm.yaml, e.g. models: {{\"{m}\": {{factory: OpenAI}}}}"
                ),
            ));
        };
        let builtin = find_factory(factory_name);
        let configured = self.factory_entry(factory_name);
        if builtin.is_none() && configured.is_none() {
            let env = suggested_key_env(factory_name);
            return Err(resolve_error(
                format!("model {raw:?}: unknown factory {factory_name:?}"),
                format!(
                    "add it under factories: in llm.yaml, e.g. factories: {{{factory_name}: \
                     {{base_url: https://HOST/v1, api_key_env: {env}}}}}"
                ),
            ));
        }
        let fconf = configured.map(|(_, c)| c);
        let factory = builtin
            .map(|f| f.name)
            .or(configured.map(|(k, _)| k))
            .unwrap_or(factory_name)
            .to_string();

        let base_url = self.base_url(raw, &factory, builtin, entry, fconf)?;
        let api_key = self.api_key(raw, builtin, entry, fconf)?;
        let model = entry
            .and_then(|e| e.name.as_deref())
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or(id.wire_name())
            .to_string();
        let supports_tools = entry
            .and_then(|e| e.supports_tools)
            .or(fconf.and_then(|f| f.supports_tools))
            .unwrap_or(true);
        let context_length = entry
            .and_then(|e| e.context_length)
            .or(fconf.and_then(|f| f.context_length))
            .unwrap_or(DEFAULT_CONTEXT_LENGTH);
        let timeout = Duration::from_secs(self.config.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS));
        Ok(Endpoint {
            factory,
            base_url,
            api_key,
            model,
            supports_tools,
            context_length,
            timeout,
        })
    }

    /// The base URL: the model's, the factory entry's, the factory's host variable
    /// (`OLLAMA_HOST`), the built-in default.
    fn base_url(
        &self,
        raw: &str,
        factory: &str,
        builtin: Option<&Factory>,
        entry: Option<&ModelConfig>,
        fconf: Option<&FactoryConfig>,
    ) -> Result<String, LlmError> {
        let ensure_v1 = builtin.is_some_and(|f| f.ensure_v1);
        let configured = entry
            .and_then(|e| e.base_url.as_deref())
            .or(fconf.and_then(|f| f.base_url.as_deref()))
            .map(str::trim)
            .filter(|u| !u.is_empty());
        if let Some(url) = configured {
            return Ok(if ensure_v1 {
                with_v1(url)
            } else {
                url.trim_end_matches('/').to_string()
            });
        }
        if let Some(host) = builtin.and_then(|f| f.host_env).and_then(|v| self.var(v)) {
            return Ok(with_v1(&host_url(&host, 11434)));
        }
        builtin
            .and_then(|f| f.base_url)
            .map(str::to_string)
            .ok_or_else(|| {
                resolve_error(
                    format!("model {raw:?} needs a base URL"),
                    format!(
                        "set base_url for it under models: or for {factory} under factories: \
                         in llm.yaml"
                    ),
                )
            })
    }

    /// The key: the model's literal or variable, the factory entry's, the built-in
    /// variable. Missing is an error for hosted factories and for an explicitly named
    /// variable.
    fn api_key(
        &self,
        raw: &str,
        builtin: Option<&Factory>,
        entry: Option<&ModelConfig>,
        fconf: Option<&FactoryConfig>,
    ) -> Result<Option<String>, LlmError> {
        let literal = entry
            .and_then(|e| e.api_key.as_ref())
            .or(fconf.and_then(|f| f.api_key.as_ref()))
            .map(|k| k.expose().trim().to_string())
            .filter(|k| !k.is_empty());
        if literal.is_some() {
            return Ok(literal);
        }
        let named = entry
            .and_then(|e| e.api_key_env.as_deref())
            .or(fconf.and_then(|f| f.api_key_env.as_deref()))
            .map(str::trim)
            .filter(|v| !v.is_empty());
        let var = named.or(builtin.and_then(|f| f.key_env));
        if let Some(key) = var.and_then(|v| self.var(v)) {
            return Ok(Some(key.trim().to_string()));
        }
        let required = named.is_some() || builtin.is_some_and(|f| f.key_required);
        match var {
            Some(var) if required => Err(resolve_error(
                format!("model {raw:?} needs an API key"),
                format!("set {var} (or api_key_env / api_key in llm.yaml)"),
            )),
            _ => Ok(None),
        }
    }

    /// The shared HTTP client, built on first use.
    fn http(&self) -> reqwest::Client {
        self.http.get_or_init(OpenAiModel::http_client).clone()
    }

    /// The client for `llm_id`, built once per resolved id.
    pub fn openai_model(&self, llm_id: &str) -> Result<Arc<OpenAiModel>, LlmError> {
        let key = self.effective_id(llm_id)?.to_string();
        let mut models = self.models.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = models.get(&key) {
            return Ok(m.clone());
        }
        let endpoint = self.resolve(&key)?;
        let gate = self.limits.as_ref().map(|l| l.gate(&endpoint.base_url));
        let model = OpenAiModel::new(endpoint, self.http());
        let model = Arc::new(match gate {
            Some(g) => model.with_gate(g),
            None => model,
        });
        models.insert(key, model.clone());
        Ok(model)
    }
}

impl ModelSource for Providers {
    fn model(&self, llm_id: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
        Ok(self.openai_model(llm_id)?)
    }
}

/// `FOO_API_KEY` for factory "Foo" (a suggestion in error messages).
fn suggested_key_env(factory: &str) -> String {
    let stem: String = factory
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{}_API_KEY", stem.trim_matches('_'))
}

/// A base URL with `/v1` added when it has no path (`http://host:8000` → `.../v1`).
fn with_v1(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    if rest.contains('/') {
        url.to_string()
    } else {
        format!("{url}/v1")
    }
}

/// A model that cannot be resolved: what, and what to do.
fn resolve_error(message: String, hint: String) -> LlmError {
    LlmError::Resolve { message, hint }
}

/// A host variable (`OLLAMA_HOST`) as a URL, the way Ollama reads it: no scheme means
/// `http` and the default port; an empty host means 127.0.0.1.
fn host_url(host: &str, default_port: u16) -> String {
    let host = host.trim();
    let (scheme, rest, explicit_scheme) = match host.split_once("://") {
        Some((scheme, rest)) => (scheme, rest, true),
        None => ("http", host, false),
    };
    let (hostport, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (name, port) = split_host_port(hostport);
    let name = if name.is_empty() { "127.0.0.1" } else { name };
    // With an explicit scheme, a missing port is the scheme's own.
    let port = match port {
        Some(p) => format!(":{p}"),
        None if explicit_scheme => String::new(),
        None => format!(":{default_port}"),
    };
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        format!("{scheme}://{name}{port}")
    } else {
        format!("{scheme}://{name}{port}/{path}")
    }
}

/// `host:port` split into host and non-empty port (`[::1]:80` keeps its brackets).
fn split_host_port(hostport: &str) -> (&str, Option<&str>) {
    if hostport.starts_with('[') {
        if let Some(end) = hostport.find(']') {
            let port = hostport[end + 1..]
                .strip_prefix(':')
                .filter(|p| !p.is_empty());
            return (&hostport[..=end], port);
        }
        return (hostport, None);
    }
    match hostport.rsplit_once(':') {
        // More than one colon: a bare IPv6 address, no port.
        Some((h, p)) if !h.contains(':') => (h, Some(p).filter(|p| !p.is_empty())),
        _ => (hostport, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn env_of(pairs: &[(&str, &str)]) -> Env {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Box::new(move |k| map.get(k).cloned())
    }

    fn providers(yaml: &str, flag: Option<&str>, env: &[(&str, &str)]) -> Providers {
        let config = LlmConfig::parse(yaml, "llm.yaml").unwrap();
        Providers::new(config, flag.map(str::to_string), env_of(env))
    }

    fn config_err(p: &Providers, id: &str) -> String {
        match p.resolve(id) {
            Err(e @ LlmError::Resolve { .. }) => e.to_string(),
            other => panic!("{id}: {other:?}"),
        }
    }

    #[test]
    fn every_form_of_llm_id() {
        let id = |model: &str, instance: Option<&str>, factory: Option<&str>| LlmId {
            model: model.into(),
            instance: instance.map(Into::into),
            factory: factory.map(Into::into),
        };
        assert_eq!(
            split_llm_id("deepseek-chat"),
            id("deepseek-chat", None, None)
        );
        assert_eq!(
            split_llm_id("deepseek-v4-pro@DeepSeek"),
            id("deepseek-v4-pro", None, Some("DeepSeek"))
        );
        assert_eq!(
            split_llm_id("glm-4.7-flashx@zz@ZHIPU-AI"),
            id("glm-4.7-flashx", Some("zz"), Some("ZHIPU-AI"))
        );
        // From the right, two splits at most: the model keeps its `@`.
        assert_eq!(
            split_llm_id("me@corp/model@default@Ollama"),
            id("me@corp/model", Some("default"), Some("Ollama"))
        );
        assert_eq!(
            split_llm_id("Qwen/Qwen3-8B@default@SILICONFLOW"),
            id("Qwen/Qwen3-8B", Some("default"), Some("SILICONFLOW"))
        );
        assert_eq!(split_llm_id(""), id("", None, None));
    }

    #[test]
    fn triple_underscore_cut_and_hash_suffix() {
        let id = split_llm_id("glm-4-flash___OpenAI-API@OpenAI-API-Compatible#admin");
        assert_eq!(id.model, "glm-4-flash___OpenAI-API");
        assert_eq!(id.wire_name(), "glm-4-flash");
        assert_eq!(id.factory.as_deref(), Some("OpenAI-API-Compatible"));
        let p = providers(
            "factories: {OpenAI-API-Compatible: {base_url: 'http://10.0.0.5:8000'}}",
            None,
            &[],
        );
        let e = p
            .resolve("glm-4-flash___OpenAI-API@OpenAI-API-Compatible#admin")
            .unwrap();
        assert_eq!(e.model, "glm-4-flash");
        assert_eq!(e.factory, "OpenAI-API-Compatible");
        // RAGFlow ensures /v1 for local OpenAI-compatible servers.
        assert_eq!(e.base_url, "http://10.0.0.5:8000/v1");
        assert_eq!(e.api_key, None);
    }

    #[test]
    fn hosted_factories_resolve_with_key_from_env() {
        let p = providers(
            "",
            None,
            &[
                ("DEEPSEEK_API_KEY", "sk-ds"),
                ("DASHSCOPE_API_KEY", "sk-qw"),
            ],
        );
        let e = p.resolve("deepseek-v4-pro@default@DeepSeek").unwrap();
        assert_eq!(e.base_url, "https://api.deepseek.com/v1");
        assert_eq!(e.api_key.as_deref(), Some("sk-ds"));
        assert_eq!(e.model, "deepseek-v4-pro");
        assert!(e.supports_tools);
        assert_eq!(e.context_length, 8192);
        assert_eq!(e.timeout, Duration::from_secs(600));
        let e = p.resolve("qwen-max@tongyi_qianwen").unwrap();
        assert_eq!(e.factory, "Tongyi-Qianwen");
        assert_eq!(
            e.base_url,
            "https://dashscope.aliyuncs.com/compatible-mode/v1"
        );
        assert_eq!(find_factory("zhipu ai").map(|f| f.name), Some("ZHIPU-AI"));
        assert_eq!(find_factory("lmstudio").map(|f| f.name), Some("LM-Studio"));
        assert!(factories().len() >= 20);
    }

    #[test]
    fn default_model_flag_beats_config() {
        let env = [("DEEPSEEK_API_KEY", "k"), ("MOONSHOT_API_KEY", "k")];
        let yaml = "default_model: kimi-k2.5@Moonshot";
        let p = providers(yaml, Some("deepseek-chat@DeepSeek"), &env);
        assert_eq!(p.resolve("").unwrap().model, "deepseek-chat");
        assert_eq!(p.resolve("  ").unwrap().factory, "DeepSeek");
        let p = providers(yaml, None, &env);
        assert_eq!(p.resolve("").unwrap().model, "kimi-k2.5");
        let p = providers(yaml, Some(""), &env);
        assert_eq!(p.resolve("").unwrap().factory, "Moonshot");
        let p = providers("", None, &env);
        let m = config_err(&p, "");
        assert!(m.contains("llm_id is empty") && m.contains("--model MODEL@FACTORY"));
        assert!(m.contains("default_model"), "{m}");
    }

    #[test]
    fn bare_id_needs_a_models_entry() {
        let p = providers("", None, &[("DEEPSEEK_API_KEY", "k")]);
        let m = config_err(&p, "deepseek-chat");
        assert!(m.contains("NAME@FACTORY") && m.contains("models:"), "{m}");
        let p = providers(
            "models: {deepseek-chat: {factory: DeepSeek}}",
            None,
            &[("DEEPSEEK_API_KEY", "k")],
        );
        let e = p.resolve("deepseek-chat").unwrap();
        assert_eq!(
            (e.factory.as_str(), e.model.as_str()),
            ("DeepSeek", "deepseek-chat")
        );
    }

    #[test]
    fn missing_key_names_the_variable() {
        let p = providers("", None, &[("DEEPSEEK_API_KEY", "")]);
        assert_eq!(
            config_err(&p, "deepseek-chat@DeepSeek"),
            "model \"deepseek-chat@DeepSeek\" needs an API key: set DEEPSEEK_API_KEY (or \
             api_key_env / api_key in llm.yaml)"
        );
        // An explicitly named variable must be set, even for a keyless factory.
        let p = providers(
            "models: {\"glm@OpenAI-API-Compatible\": {base_url: 'http://h/v1', api_key_env: GLM_KEY}}",
            None,
            &[],
        );
        assert!(config_err(&p, "glm@OpenAI-API-Compatible").contains("set GLM_KEY"));
        // Keyless factories need none.
        let p = providers("", None, &[]);
        assert_eq!(p.resolve("llama3@LM-Studio").unwrap().api_key, None);
    }

    #[test]
    fn unknown_factory_and_missing_base_url() {
        let p = providers("", None, &[]);
        let m = config_err(&p, "x@MyCorp");
        assert!(m.contains("unknown factory \"MyCorp\""), "{m}");
        assert!(
            m.contains("factories:") && m.contains("MYCORP_API_KEY"),
            "{m}"
        );
        let m = config_err(&p, "m@VLLM");
        assert!(
            m.contains("needs a base URL") && m.contains("base_url"),
            "{m}"
        );
        let p = providers(
            "factories: {MyCorp: {base_url: 'https://llm.corp/v1/', api_key_env: CORP_KEY}}",
            None,
            &[("CORP_KEY", "ck")],
        );
        let e = p.resolve("x@mycorp").unwrap();
        assert_eq!(e.factory, "MyCorp");
        assert_eq!(e.base_url, "https://llm.corp/v1");
        assert_eq!(e.api_key.as_deref(), Some("ck"));
    }

    #[test]
    fn ollama_base_url_from_ollama_host() {
        let url = |host: Option<&str>| {
            let env: Vec<(&str, &str)> = host.map(|h| ("OLLAMA_HOST", h)).into_iter().collect();
            providers("", None, &env)
                .resolve("agnuxo/cajal-4b-p2pclaw@Ollama")
                .unwrap()
                .base_url
        };
        assert_eq!(url(None), "http://localhost:11434/v1");
        assert_eq!(url(Some("gpu-box:11434")), "http://gpu-box:11434/v1");
        assert_eq!(url(Some("gpu-box")), "http://gpu-box:11434/v1");
        assert_eq!(url(Some("0.0.0.0")), "http://0.0.0.0:11434/v1");
        assert_eq!(url(Some(":9999")), "http://127.0.0.1:9999/v1");
        assert_eq!(url(Some("https://ollama.corp/")), "https://ollama.corp/v1");
        assert_eq!(url(Some("http://h:1/ollama/v1")), "http://h:1/ollama/v1");
        assert_eq!(url(Some("[::1]:11434")), "http://[::1]:11434/v1");
        // The configuration beats the variable.
        let p = providers(
            "factories: {Ollama: {base_url: 'http://gpu-box:11434/v1'}}",
            None,
            &[("OLLAMA_HOST", "elsewhere")],
        );
        assert_eq!(
            p.resolve("q@Ollama").unwrap().base_url,
            "http://gpu-box:11434/v1"
        );
        let e = p.resolve("q@Ollama").unwrap();
        assert_eq!((e.model.as_str(), e.api_key), ("q", None));
    }

    #[test]
    fn per_model_overrides() {
        let yaml = r#"
timeout_secs: 30
factories:
  DeepSeek: {context_length: 65536}
models:
  "glm-4-flash@OpenAI-API-Compatible": {base_url: http://10.0.0.5:8000/v1, api_key_env: GLM_KEY, supports_tools: false, context_length: 32768, name: glm-4-flash-0414}
  "deepseek-reasoner": {factory: DeepSeek, supports_tools: false}
  "qwen-max": {factory: OpenRouter, name: qwen/qwen-max}
"#;
        let env = [
            ("GLM_KEY", "g"),
            ("DEEPSEEK_API_KEY", "d"),
            ("OPENROUTER_API_KEY", "o"),
        ];
        let p = providers(yaml, None, &env);
        let e = p.resolve("glm-4-flash@OpenAI-API-Compatible").unwrap();
        assert!(!e.supports_tools);
        assert_eq!(e.context_length, 32768);
        assert_eq!(e.model, "glm-4-flash-0414");
        assert_eq!(e.base_url, "http://10.0.0.5:8000/v1");
        assert_eq!(e.api_key.as_deref(), Some("g"));
        assert_eq!(e.timeout, Duration::from_secs(30));
        // Found through model@factory without the instance, and through the `___` cut.
        let e = p.resolve("glm-4-flash@inst@OpenAI-API-Compatible").unwrap();
        assert_eq!(e.context_length, 32768);
        let e = p
            .resolve("glm-4-flash___X@OpenAI-API-Compatible#admin")
            .unwrap();
        assert_eq!(e.model, "glm-4-flash-0414");
        // A bare-name entry also applies to a full id; the factory entry fills the rest.
        let e = p.resolve("deepseek-reasoner@DeepSeek").unwrap();
        assert!(!e.supports_tools);
        assert_eq!(e.context_length, 65536);
        // An entry's factory redirects.
        let e = p.resolve("qwen-max@Tongyi-Qianwen").unwrap();
        assert_eq!(e.factory, "OpenRouter");
        assert_eq!(e.model, "qwen/qwen-max");
        assert_eq!(e.base_url, "https://openrouter.ai/api/v1");
    }

    #[test]
    fn models_are_cached_per_resolved_id() {
        let p = providers("default_model: q@Ollama", None, &[]);
        let a = p.openai_model("q@Ollama").unwrap();
        let b = p.openai_model("").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.endpoint().base_url, "http://localhost:11434/v1");
        let c = p.openai_model("r@Ollama").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(p.model("r@Ollama").is_ok());
        assert!(matches!(p.model("x@Nope"), Err(LlmError::Resolve { .. })));
    }

    #[test]
    fn keys_never_appear_in_debug_or_errors() {
        let yaml = r#"
factories:
  MyCorp: {base_url: https://llm.corp/v1, api_key: sk-literal-secret}
models:
  "m@OpenAI": {api_key: sk-model-secret}
"#;
        let p = providers(yaml, None, &[("DEEPSEEK_API_KEY", "sk-env-secret")]);
        let e = p.resolve("x@MyCorp").unwrap();
        assert_eq!(e.api_key.as_deref(), Some("sk-literal-secret"));
        let e2 = p.resolve("m@OpenAI").unwrap();
        assert_eq!(e2.api_key.as_deref(), Some("sk-model-secret"));
        let e3 = p.resolve("deepseek-chat@DeepSeek").unwrap();
        let shown = format!("{p:?} {e:?} {e2:?} {e3:?}");
        for secret in ["sk-literal-secret", "sk-model-secret", "sk-env-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("<redacted>"));
        let errors = ["", "x", "x@Nope", "m@VLLM", "z@OpenAI"]
            .iter()
            .map(|id| config_err(&p, id))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!errors.contains("sk-"), "{errors}");
        let bad = LlmConfig::parse("factories: {A: {api_key: sk-bad-secret, nope: 1}}", "f")
            .unwrap_err()
            .to_string();
        assert!(!bad.contains("sk-bad-secret"), "{bad}");
    }

    #[test]
    fn config_files_load_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::File::create(&path)
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            path
        };
        let no_env = |_: &str| None;
        // Explicit YAML and JSON.
        let yaml = write("a.yaml", "default_model: q@Ollama\n");
        let c = LlmConfig::load(Some(&yaml), &no_env).unwrap();
        assert_eq!(c.default_model.as_deref(), Some("q@Ollama"));
        let json = write("b.json", r#"{"models": {"x": {"factory": "OpenAI"}}}"#);
        let c = LlmConfig::load(Some(&json), &no_env).unwrap();
        assert_eq!(c.models["x"].factory.as_deref(), Some("OpenAI"));
        assert_eq!(
            LlmConfig::load(Some(&write("c.yaml", "# nothing\n")), &no_env).unwrap(),
            LlmConfig::default()
        );
        // Bad files: the file, the problem and the place, on one line.
        let bad = write(
            "bad.yaml",
            "default_model: x\nfactories:\n  A: {base_urll: y}\n",
        );
        let m = LlmConfig::load(Some(&bad), &no_env)
            .unwrap_err()
            .to_string();
        assert!(m.starts_with(&bad.display().to_string()), "{m}");
        assert!(m.contains("base_urll") && m.contains("line 3"), "{m}");
        assert!(!m.contains('\n'), "{m}");
        let m = LlmConfig::load(Some(&write("t.yaml", "timeout_secs: 0")), &no_env)
            .unwrap_err()
            .to_string();
        assert!(m.contains("timeout_secs"), "{m}");
        // A missing named file is an error, from the flag or the variable.
        let missing = dir.path().join("missing.yaml");
        let m = LlmConfig::load(Some(&missing), &no_env)
            .unwrap_err()
            .to_string();
        assert!(
            m.contains("missing.yaml") && m.contains("cannot read"),
            "{m}"
        );
        let missing_s = missing.display().to_string();
        let env = |k: &str| (k == "CANVAS_LLM_CONFIG").then(|| missing_s.clone());
        assert!(LlmConfig::load(None, &env).is_err());
        let yaml_s = yaml.display().to_string();
        let env = |k: &str| (k == "CANVAS_LLM_CONFIG").then(|| yaml_s.clone());
        let c = LlmConfig::load(None, &env).unwrap();
        assert_eq!(c.default_model.as_deref(), Some("q@Ollama"));
        // The default file: missing is empty; present is read; XDG beats HOME.
        let home = dir.path().display().to_string();
        let env = |k: &str| (k == "HOME").then(|| home.clone());
        assert_eq!(LlmConfig::load(None, &env).unwrap(), LlmConfig::default());
        std::fs::create_dir_all(dir.path().join(".config/canvas")).unwrap();
        write(".config/canvas/llm.yaml", "timeout_secs: 5");
        assert_eq!(LlmConfig::load(None, &env).unwrap().timeout_secs, Some(5));
        let xdg = dir.path().join("xdg");
        std::fs::create_dir_all(xdg.join("canvas")).unwrap();
        write("xdg/canvas/llm.yaml", "timeout_secs: 7");
        let xdg_s = xdg.display().to_string();
        let env = |k: &str| match k {
            "HOME" => Some(home.clone()),
            "XDG_CONFIG_HOME" => Some(xdg_s.clone()),
            _ => None,
        };
        assert_eq!(LlmConfig::load(None, &env).unwrap().timeout_secs, Some(7));
        write("xdg/canvas/llm.yaml", "timeout_secs: [");
        let m = LlmConfig::load(None, &env).unwrap_err().to_string();
        assert!(m.contains("xdg/canvas/llm.yaml"), "{m}");
        assert_eq!(
            LlmConfig::load(None, &no_env).unwrap(),
            LlmConfig::default()
        );
    }
}
