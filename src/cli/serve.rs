//! `canvas serve DIR`: RAGFlow's agent HTTP API over the run store (`crates/serve`).
//! This file reads the flags and the served canvases, sets up models, tools, the store
//! and its writer, and starts the server; Ctrl-C or SIGTERM stops it gracefully (the
//! turns under way stop at their next node boundary, stored and resumable), a second
//! one at once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::Args;
use serde_json::Value;

use super::admit::{AdmitOpts, admit_text};
use super::models::ModelArgs;
use super::opts::StoreOpts;
use super::remember::RunOptions;
use super::tools::ToolArgs;
use super::validate::{expand, format_of, looks_like_canvas};
use super::{CliError, exit};
use canvas_components::Registry;
use canvas_dsl::Format;
use canvas_engine::scheduler::{DEFAULT_MAX_PARALLEL, DEFAULT_MAX_STEPS};
use canvas_engine::{Canvas, Checks, RunConfig};
use canvas_serve::{Access, Canvases, Deps, FileAgent, Settings};
use canvas_store::Store;

/// Options of `canvas serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The canvases served as agents: a directory of JSON/YAML canvases, or one file
    pub dir: PathBuf,
    /// Address to listen on (port 0: any free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9380")]
    pub addr: String,
    /// API keys, one a line (Bearer tokens)
    #[arg(
        long,
        value_name = "FILE",
        env = "CANVAS_API_KEY_FILE",
        hide_env_values = true
    )]
    pub api_key_file: Option<PathBuf>,
    /// API keys separated by commas (for containers; a file is safer)
    #[arg(
        long,
        value_name = "KEYS",
        env = "CANVAS_API_KEYS",
        hide = true,
        hide_env_values = true
    )]
    pub api_keys: Option<String>,
    /// Write the bound address to FILE once listening
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
    /// Largest request body, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 8 << 20)]
    pub max_body: usize,
    /// Seconds a request (or a turn) may take
    #[arg(long, value_name = "SECS", default_value_t = 300.0, value_parser = secs)]
    pub timeout: f64,
    /// Seconds before a dead instance's sessions are taken over
    #[arg(long, value_name = "SECS", default_value_t = 15.0, value_parser = secs)]
    pub lease: f64,
    /// No access log (JSON lines on stderr)
    #[arg(long)]
    pub quiet: bool,
    /// Where sessions and created agents are stored.
    #[command(flatten)]
    pub store: StoreOpts,
    /// The checks each canvas is admitted with.
    #[command(flatten)]
    pub admit: AdmitOpts,
    /// Most components of one turn running at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PARALLEL as u16, value_parser = clap::value_parser!(u16).range(1..), hide = true)]
    pub max_parallel: u16,
    /// Step budget of a turn (0: none).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STEPS, hide = true)]
    pub max_steps: u64,
    /// Seed for random choices (Message alternatives).
    #[arg(long, value_name = "N", hide = true)]
    pub seed: Option<u64>,
    /// Where model calls go.
    #[command(flatten)]
    pub models: ModelArgs,
    /// What tools may reach and how.
    #[command(flatten)]
    pub tools: ToolArgs,
}

fn secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && (0.05..=86_400.0).contains(&n) => Ok(n),
        _ => Err("a number of seconds from 0.05 to 86400".into()),
    }
}

/// The binary's checks and compiler, for canvases given to the API and stored copies.
struct Compiler {
    admit: AdmitOpts,
    models: Arc<super::models::ModelSetup>,
}

impl Canvases for Compiler {
    fn admit(&self, label: &str, text: &str) -> Result<Canvas, String> {
        let admitted = admit_text(text.to_string(), Format::Json, label, &self.admit, true)
            .map_err(|e| e.message)?;
        self.models
            .check(&admitted.canvas, label)
            .map_err(|e| e.message)?;
        Ok(admitted.canvas)
    }

    fn compile(&self, label: &str, text: &str) -> Result<Canvas, String> {
        let doc = canvas_dsl::parse(text, Format::Sniff).map_err(|e| format!("{label}: {e}"))?;
        Canvas::compile_with(doc, &Registry, Checks::Skip).map_err(|e| format!("{label}: {e}"))
    }

    fn document(&self, text: &str) -> Option<Value> {
        canvas_dsl::load::parse_value(text, Format::Sniff).ok()
    }
}

/// Run `canvas serve`.
pub fn exec(args: ServeArgs) -> Result<u8, CliError> {
    let keys = api_keys(&args)?;
    let store: Arc<dyn Store> = Arc::from(args.store.open()?);
    let models = Arc::new(args.models.setup()?);
    let served = served(&args, &models)?;
    let tools = Arc::new(args.tools.env(args.models.llm_config())?);
    let options = RunOptions::of_parts(
        &args.models,
        &args.tools,
        args.max_parallel,
        args.seed,
        args.max_steps,
    );
    let config = RunConfig {
        max_parallel: usize::from(args.max_parallel),
        seed: args.seed,
        models: models.source.clone(),
        date: models.date.clone(),
        services: canvas_engine::Services::new().with(tools),
        max_steps: args.max_steps,
        ..RunConfig::default()
    };
    let (writer, written) = canvas_store::writer::spawn(Arc::clone(&store));
    let quiet = args.quiet;
    let access: Arc<dyn Fn(&Access) + Send + Sync> = Arc::new(move |a: &Access| {
        if !quiet {
            eprintln!("{}", access_line(a));
        }
    });
    let deps = Deps {
        store,
        writer,
        config,
        canvases: Arc::new(Compiler {
            admit: args.admit.clone(),
            models,
        }),
        served,
        options: serde_json::to_value(&options).ok(),
        access,
    };
    let settings = Settings {
        keys,
        body_limit: args.max_body,
        timeout: Duration::from_secs_f64(args.timeout),
        lease: Duration::from_secs_f64(args.lease),
        busy_wait: Duration::from_secs(2),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(exit::FAILED, format!("cannot start the async runtime: {e}")))?;
    let interrupt = Arc::new(AtomicBool::new(false));
    let signals = register_signals(&interrupt);
    let res = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .map_err(|e| {
                CliError::invalid(format!("cannot listen on {}: {e}", args.addr))
                    .hint("--addr HOST:PORT, e.g. 127.0.0.1:9380 (port 0: any free port)")
            })?;
        let bound = listener
            .local_addr()
            .map_err(|e| CliError::new(exit::FAILED, format!("cannot listen: {e}")))?;
        eprintln!(
            "canvas serve: listening on http://{bound} ({} agents from {})",
            deps.served.len(),
            args.dir.display()
        );
        if let Some(f) = &args.ready_file {
            std::fs::write(f, bound.to_string()).map_err(|e| {
                CliError::new(
                    exit::FAILED,
                    format!("{}: cannot write it: {e}", f.display()),
                )
            })?;
        }
        let flag = Arc::clone(&interrupt);
        let shutdown = async move {
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        canvas_serve::serve(listener, settings, deps, shutdown)
            .await
            .map_err(|e| CliError::new(exit::FAILED, e.to_string()))
    });
    drop(rt);
    // Every write is durable once the writer has drained its queue.
    let _ = written.join();
    for id in signals {
        signal_hook::low_level::unregister(id);
    }
    res?;
    eprintln!("canvas serve: stopped");
    Ok(exit::OK)
}

/// The API keys: the file's lines (blank lines and `#` comments aside) and
/// `CANVAS_API_KEYS`. None is an error: the server never runs open.
fn api_keys(args: &ServeArgs) -> Result<Vec<String>, CliError> {
    let mut keys = Vec::new();
    if let Some(f) = &args.api_key_file {
        let text = std::fs::read_to_string(f).map_err(|e| {
            CliError::invalid(format!("{}: cannot read the API keys: {e}", f.display()))
        })?;
        keys.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string),
        );
    }
    if let Some(list) = &args.api_keys {
        keys.extend(
            list.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|k| !k.is_empty())
                .map(str::to_string),
        );
    }
    if keys.is_empty() {
        return Err(CliError::invalid("canvas serve needs at least one API key")
            .hint("--api-key-file FILE (one key a line), or CANVAS_API_KEYS=KEY"));
    }
    Ok(keys)
}

/// The served canvases, each admitted as `run` admits one; an agent id is the file's
/// name without its extension.
fn served(
    args: &ServeArgs,
    models: &super::models::ModelSetup,
) -> Result<Vec<FileAgent>, CliError> {
    let mut out: Vec<FileAgent> = Vec::new();
    for input in expand(std::slice::from_ref(&args.dir))? {
        let path = &input.path;
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::invalid(format!("{label}: cannot read it: {e}")))?;
        if input.found && !looks_like_canvas(&text, format_of(path)) {
            continue;
        }
        let admitted = admit_text(text, format_of(path), &label, &args.admit, false)?;
        models.check(&admitted.canvas, &label)?;
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(other) = out.iter().find(|a| a.id == id) {
            return Err(CliError::invalid(format!(
                "{label}: agent id {id:?} is taken by {}",
                other.path
            ))
            .hint("serve files with different names"));
        }
        let dsl =
            canvas_dsl::load::parse_value(&admitted.text, format_of(path)).unwrap_or(Value::Null);
        out.push(FileAgent {
            title: id.clone(),
            id,
            path: absolute(path),
            text: admitted.text,
            dsl,
            modified: modified(path),
        });
    }
    Ok(out)
}

fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

fn modified(p: &Path) -> f64 {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One access-log line: a JSON object.
fn access_line(a: &Access) -> String {
    serde_json::json!({
        "ts": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "method": a.method,
        "path": a.path,
        "status": a.status,
        "ms": (a.millis * 1000.0).round() / 1000.0,
    })
    .to_string()
}

/// Ctrl-C and SIGTERM stop the server gracefully; a second one exits at once with 130
/// (every session keeps its last checkpoint).
fn register_signals(flag: &Arc<AtomicBool>) -> Vec<signal_hook::SigId> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut ids = Vec::new();
    for sig in [SIGINT, SIGTERM] {
        if let Ok(id) = signal_hook::flag::register_conditional_shutdown(
            sig,
            i32::from(exit::INTERRUPTED),
            Arc::clone(flag),
        ) {
            ids.push(id);
        }
        if let Ok(id) = signal_hook::flag::register(sig, Arc::clone(flag)) {
            ids.push(id);
        }
    }
    ids
}
