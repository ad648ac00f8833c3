//! Where CodeExec runs code (RAGFlow's `agent/sandbox`): the settings, one job and its
//! outcome, and the choice between the two providers: a self-managed executor over
//! HTTP (`executor`, when `SANDBOX_EXECUTOR_MANAGER_URL` is set) or a local child
//! process with resource limits and no network (`local`, the default). `protocol`
//! owns the program wrappers and the result marker; `contract` the business output's
//! declared type.

pub mod contract;
mod executor;
mod local;
pub mod protocol;

use std::time::Duration;

use serde_json::Value;

use super::net::NetPolicy;
use canvas_pyrt::Object;

/// The environment variable naming a self-managed executor (RAGFlow's executor manager).
pub const EXECUTOR_URL_VAR: &str = "SANDBOX_EXECUTOR_MANAGER_URL";

/// Sandbox settings.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Base URL of a self-managed executor (`POST {url}/run`); `None`: run locally.
    pub executor_url: Option<String>,
    /// Wall-clock limit of one local run.
    pub timeout: Duration,
    /// Memory limit of one local run, in MB.
    pub memory_mb: u64,
    /// The Python interpreter (looked up on `PATH`).
    pub python_bin: String,
    /// The Node.js binary (looked up on `PATH`).
    pub node_bin: String,
    /// Cap on stdout plus stderr of one local run, in bytes.
    pub max_output_bytes: usize,
    /// At most this many artifacts are kept per run.
    pub max_artifacts: usize,
    /// Largest artifact (and largest file the code may write), in bytes.
    pub max_artifact_bytes: u64,
    /// Run local code in its own network namespace (no network at all).
    pub isolate_network: bool,
    /// An invalid setting found in the environment, reported when code runs.
    pub problem: Option<String>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            executor_url: None,
            timeout: Duration::from_secs(30),
            memory_mb: 512,
            python_bin: "python3".into(),
            node_bin: "node".into(),
            max_output_bytes: 1024 * 1024,
            max_artifacts: 10,
            max_artifact_bytes: 10 * 1024 * 1024,
            isolate_network: true,
            problem: None,
        }
    }
}

impl SandboxConfig {
    /// The settings the process environment gives: `SANDBOX_EXECUTOR_MANAGER_URL`,
    /// `CANVAS_SANDBOX_TIMEOUT` (seconds), `CANVAS_SANDBOX_MEMORY_MB`,
    /// `CANVAS_SANDBOX_PYTHON`, `CANVAS_SANDBOX_NODE`, `CANVAS_SANDBOX_ALLOW_NETWORK=1`.
    pub fn from_env() -> SandboxConfig {
        SandboxConfig::from_vars(|k| std::env::var(k).ok())
    }

    /// [`SandboxConfig::from_env`] over any variable lookup.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> SandboxConfig {
        let mut cfg = SandboxConfig::default();
        let var = |k: &str| {
            get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mut problems = Vec::new();
        if let Some(url) = var(EXECUTOR_URL_VAR) {
            let url = url.trim_end_matches('/');
            cfg.executor_url = Some(if url.contains("://") {
                url.to_string()
            } else {
                format!("http://{url}")
            });
        }
        if let Some(t) = var("CANVAS_SANDBOX_TIMEOUT") {
            match t.parse::<f64>() {
                Ok(s) if s > 0.0 && s <= 86_400.0 => cfg.timeout = Duration::from_secs_f64(s),
                _ => problems.push(format!(
                    "CANVAS_SANDBOX_TIMEOUT must be a number of seconds between 0 and 86400, got {t:?}"
                )),
            }
        }
        if let Some(m) = var("CANVAS_SANDBOX_MEMORY_MB") {
            match m.parse::<u64>() {
                Ok(mb) if (16..=1 << 20).contains(&mb) => cfg.memory_mb = mb,
                _ => problems.push(format!(
                    "CANVAS_SANDBOX_MEMORY_MB must be a whole number of MB between 16 and 1048576, got {m:?}"
                )),
            }
        }
        if let Some(p) = var("CANVAS_SANDBOX_PYTHON") {
            cfg.python_bin = p;
        }
        if let Some(n) = var("CANVAS_SANDBOX_NODE") {
            cfg.node_bin = n;
        }
        if let Some(v) = var("CANVAS_SANDBOX_ALLOW_NETWORK") {
            cfg.isolate_network =
                !matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on");
        }
        if !problems.is_empty() {
            cfg.problem = Some(problems.join("; "));
        }
        cfg
    }

    /// The timeout as people read it: `30 s`, `0.5 s`.
    pub fn timeout_text(&self) -> String {
        seconds_text(self.timeout)
    }
}

/// `30 s`, `1.5 s`.
fn seconds_text(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{} s", s as u64)
    } else {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    }
}

/// `1 MB`, `512 KB`, `100 bytes`.
fn bytes_text(n: u64) -> String {
    if n >= 1024 * 1024 && n % (1024 * 1024) == 0 {
        format!("{} MB", n / (1024 * 1024))
    } else if n >= 1024 && n % 1024 == 0 {
        format!("{} KB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// The language of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Python 3: the code defines `main(**arguments)`.
    Python,
    /// JavaScript on Node.js: the code defines or exports `main(args)`.
    Nodejs,
}

impl Language {
    /// RAGFlow's accepted names: `python`/`python3`, `javascript`/`nodejs` (any case).
    pub fn parse(name: &str) -> Option<Language> {
        match name.trim().to_ascii_lowercase().as_str() {
            "python" | "python3" => Some(Language::Python),
            "javascript" | "nodejs" => Some(Language::Nodejs),
            _ => None,
        }
    }

    /// The name the executor manager expects.
    pub fn executor_name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Nodejs => "nodejs",
        }
    }
}

/// One piece of code to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Its language.
    pub language: Language,
    /// The code as the canvas gives it (it must define `main`).
    pub code: String,
    /// The keyword arguments of `main`.
    pub arguments: Object,
}

/// A file the code left in `artifacts/`.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    /// Its file name (no directory part).
    pub name: String,
    /// Its MIME type, from the extension.
    pub mime_type: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// What a finished run gives back (RAGFlow's `ExecutionResult`).
#[derive(Debug, Clone, Default)]
pub struct Execution {
    /// Standard output without the result marker line.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// `main()`'s return value when the wrapper reported it (`Some(Null)` for `None`).
    pub result: Option<Value>,
    /// Files left in `artifacts/`.
    pub artifacts: Vec<Artifact>,
    /// Remarks on how the run was confined (e.g. network isolation unavailable).
    pub notes: Vec<String>,
}

/// Why code could not run to an answer; the texts are CodeExec's `_ERROR`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SandboxError {
    /// The wall-clock limit was reached.
    #[error("the code ran longer than {0} and was stopped")]
    Timeout(String),
    /// The CPU-time limit was reached.
    #[error("the code used more than {0} of CPU time and was stopped")]
    CpuTime(String),
    /// An allocation failed under the memory limit.
    #[error("the code ran out of memory (limit {0} MB)")]
    OutOfMemory(u64),
    /// The code tried to reach the network from its empty network namespace.
    #[error("the code tried to use the network, which the local sandbox does not allow ({0})")]
    Network(String),
    /// Too much output.
    #[error("the code wrote more than {0} to stdout and stderr and was stopped")]
    OutputTooLarge(String),
    /// The interpreter is not installed.
    #[error("{bin} not found: {hint} or set SANDBOX_EXECUTOR_MANAGER_URL")]
    MissingRuntime {
        /// The binary looked for.
        bin: String,
        /// What to install.
        hint: &'static str,
    },
    /// Preparing or supervising the child process failed.
    #[error("the local sandbox failed: {0}")]
    Local(String),
    /// The executor could not be reached.
    #[error("cannot reach the sandbox executor at {url}: {reason}")]
    ExecutorUnreachable {
        /// Its `/run` URL.
        url: String,
        /// The transport error.
        reason: String,
    },
    /// The executor did not answer in time.
    #[error("the sandbox executor at {url} did not answer within {after}")]
    ExecutorTimeout {
        /// Its `/run` URL.
        url: String,
        /// The time waited.
        after: String,
    },
    /// The executor answered with an error status.
    #[error("the sandbox executor at {url} answered HTTP {status}: {body}")]
    ExecutorStatus {
        /// Its `/run` URL.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The executor's answer is not what RAGFlow's executor sends.
    #[error("the sandbox executor at {url} sent an invalid answer: {reason}")]
    ExecutorAnswer {
        /// Its `/run` URL.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A setting is invalid.
    #[error("{0}")]
    Config(String),
}

/// Run `job` where `cfg` says.
pub async fn execute(
    cfg: &SandboxConfig,
    net: &NetPolicy,
    job: &Job,
) -> Result<Execution, SandboxError> {
    if let Some(p) = &cfg.problem {
        return Err(SandboxError::Config(p.clone()));
    }
    match &cfg.executor_url {
        Some(url) => executor::run(url, cfg, net, job).await,
        None => local::run(cfg, job).await,
    }
}

/// Allowed artifact extensions and their MIME types (RAGFlow's executor list).
const ARTIFACT_TYPES: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("svg", "image/svg+xml"),
    ("pdf", "application/pdf"),
    ("csv", "text/csv"),
    ("json", "application/json"),
    ("html", "text/html"),
];

/// The MIME type of an artifact name, `None` when its extension is not allowed.
pub fn artifact_mime(name: &str) -> Option<&'static str> {
    let (_, ext) = name.rsplit_once('.')?;
    let ext = ext.to_ascii_lowercase();
    ARTIFACT_TYPES
        .iter()
        .find(|(e, _)| *e == ext)
        .map(|(_, m)| *m)
}

/// True for a name that is safe as a plain file name (no directories, no hidden files,
/// no control characters), as RAGFlow's executor sanitises them.
pub fn safe_artifact_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && !name.contains("..")
        && !name.chars().any(|c| (c as u32) < 32 || c as u32 == 127)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn defaults_are_ragflows_local_limits() {
        let c = SandboxConfig::from_vars(vars(&[]));
        assert_eq!(c.timeout, Duration::from_secs(30));
        assert_eq!(c.memory_mb, 512);
        assert_eq!(c.executor_url, None);
        assert!(c.isolate_network);
        assert!(c.problem.is_none());
    }

    #[test]
    fn environment_overrides() {
        let c = SandboxConfig::from_vars(vars(&[
            (EXECUTOR_URL_VAR, "sandbox:9385/"),
            ("CANVAS_SANDBOX_TIMEOUT", "2.5"),
            ("CANVAS_SANDBOX_MEMORY_MB", "256"),
            ("CANVAS_SANDBOX_ALLOW_NETWORK", "yes"),
        ]));
        assert_eq!(c.executor_url.as_deref(), Some("http://sandbox:9385"));
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert_eq!(c.timeout_text(), "2.5 s");
        assert_eq!(c.memory_mb, 256);
        assert!(!c.isolate_network);
    }

    #[test]
    fn bad_values_are_reported_not_ignored() {
        let c = SandboxConfig::from_vars(vars(&[
            ("CANVAS_SANDBOX_TIMEOUT", "soon"),
            ("CANVAS_SANDBOX_MEMORY_MB", "-1"),
        ]));
        let p = c.problem.unwrap();
        assert!(
            p.contains("CANVAS_SANDBOX_TIMEOUT") && p.contains("\"soon\""),
            "{p}"
        );
        assert!(p.contains("CANVAS_SANDBOX_MEMORY_MB"), "{p}");
        assert_eq!(c.timeout, Duration::from_secs(30));
    }

    #[test]
    fn languages_and_artifact_names() {
        assert_eq!(Language::parse("Python3"), Some(Language::Python));
        assert_eq!(Language::parse("javascript"), Some(Language::Nodejs));
        assert_eq!(Language::parse("ruby"), None);
        assert_eq!(artifact_mime("chart.PNG"), Some("image/png"));
        assert_eq!(artifact_mime("data.csv"), Some("text/csv"));
        assert_eq!(artifact_mime("run.sh"), None);
        assert_eq!(artifact_mime("noext"), None);
        assert!(safe_artifact_name("out.csv"));
        for bad in ["", ".hidden.csv", "a/b.csv", "..csv", "x\n.csv", "a\\b.png"] {
            assert!(!safe_artifact_name(bad), "{bad:?}");
        }
        assert_eq!(bytes_text(1024 * 1024), "1 MB");
        assert_eq!(seconds_text(Duration::from_secs(30)), "30 s");
    }
}
