//! Command-line interface: clap definitions, one file per subcommand, exit codes.
//! It turns flags into plain values for the library and holds no engine logic.

mod admit;
mod batch;
mod batches;
mod cancel;
mod chat;
mod completions;
mod components;
mod error;
mod events;
pub mod exit;
mod graph;
mod inputs;
mod man;
mod migrate;
mod models;
mod opts;
mod prune;
mod remember;
mod reporter;
mod resume;
mod run;
mod runs;
mod serve;
mod session;
mod show;
#[cfg(test)]
mod tests;
mod tools;
mod validate;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use error::CliError;

/// Run RAGFlow agent canvases locally, with RAGFlow's exact event stream.
#[derive(Debug, Parser)]
#[command(
    name = "canvas",
    version,
    disable_help_subcommand = true,
    about,
    after_help = "Examples:\n  \
        canvas run canvases/hello.json -q hello\n  \
        canvas validate canvases/ --strict\n  \
        canvas runs --status waiting\n\n\
        Run `canvas <command> --help` for a command's options, `man canvas` for the manual."
)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Whether `-v` was given (only `run`, `resume` and `chat` have it).
    pub fn verbose(&self) -> bool {
        match &self.command {
            Command::Run(a) => a.turn.output.verbose,
            Command::Resume(a) => a.turn.output.verbose,
            Command::Chat(a) => a.turn.output.verbose,
            _ => false,
        }
    }
}

/// The `-v` logger: what the CLI does, on stderr (stdout carries only events and data).
/// `CANVAS_LOG` (an `EnvFilter` directive) overrides what `-v` shows.
fn logger() -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("CANVAS_LOG").unwrap_or_else(|_| EnvFilter::new("canvas=debug"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .without_time()
        .finish()
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a canvas (JSON or YAML; `-` reads stdin) and print its events.
    #[command(after_help = "Examples:\n  \
        canvas run canvases/hello.json -q hello\n  \
        canvas run canvases/router.yaml -i priority=urgent --format jsonl\n  \
        canvas run canvases/support.yaml -q \"my order is late\" --mock-llm canvases/support.mock.yaml")]
    Run(run::RunArgs),
    /// Continue a stored run: answer its form, go on after a stop, or send the next turn.
    #[command(after_help = "Examples:\n  \
        canvas resume latest -i days=3 -i pace=relaxed     # answer the waiting form\n  \
        canvas resume 01JABC                               # continue after Ctrl-C or a crash\n  \
        canvas resume latest -q \"and a cheaper hotel?\"     # the next conversational turn")]
    Resume(resume::ResumeArgs),
    /// Chat with a conversational canvas: each line you type is a turn of one run.
    #[command(after_help = "Example:\n  \
        canvas chat canvases/support.yaml --mock-llm canvases/support.mock.yaml")]
    Chat(chat::ChatArgs),
    /// List the stored runs, newest first; `canvas runs prune` deletes old ones.
    #[command(
        args_conflicts_with_subcommands = true,
        disable_help_subcommand = true,
        after_help = "Examples:\n  \
        canvas runs --status waiting\n  \
        canvas runs --limit 5 --format json\n  \
        canvas runs prune --older-than 30d --yes     # delete runs untouched for 30 days"
    )]
    Runs(runs::RunsArgs),
    /// Show one stored run: status, canvas, times, waiting form, error.
    #[command(after_help = "Example:\n  canvas show latest")]
    Show(show::ShowArgs),
    /// Replay a stored run's events in any output format.
    #[command(after_help = "Example:\n  canvas events latest --format jsonl")]
    Events(events::EventsArgs),
    /// Ask the process running a run to stop at its next node boundary (resumable).
    #[command(after_help = "Example:\n  canvas cancel 01JABC     # later: canvas resume 01JABC")]
    Cancel(cancel::CancelArgs),
    /// Check canvases statically (no network, no models): exit 1 on errors.
    #[command(after_help = "Examples:\n  \
        canvas validate canvases/ --strict\n  \
        canvas validate flows/ --format github     # annotations in a GitHub Actions log")]
    Validate(validate::ValidateArgs),
    /// Rewrite legacy or graph-only canvases into the current form; shows the diff.
    #[command(after_help = "Examples:\n  \
        canvas migrate old.json             # the rewrite, as a diff\n  \
        canvas migrate old.json --write     # save it\n  \
        canvas migrate flows/ --check       # CI: exit 1 when a file needs it")]
    Migrate(migrate::MigrateArgs),
    /// Run a canvas over every row of a dataset, with checks; resumable.
    #[command(after_help = "Examples:\n  \
        canvas batch flow.json --dataset cases.csv --concurrency 32 --output results.jsonl\n  \
        canvas batch --resume latest                 # after Ctrl-C or a crash\n  \
        canvas batch flow.json --dataset cases.yaml --store postgres://ci@db/canvas --worker")]
    Batch(batch::BatchArgs),
    /// List the stored batches: rows done, failed, waiting and pending.
    #[command(
        after_help = "Examples:\n  canvas batches\n  canvas show 01JBATCH      # one batch: its summary and failures"
    )]
    Batches(batches::BatchesArgs),
    /// Serve canvases through RAGFlow's agent API (its SDK and OpenAI clients work).
    #[command(after_help = "Examples:\n  \
        canvas serve canvases/ --api-key-file keys.txt --mock-llm canvases/support.mock.yaml\n  \
        canvas serve flows/ --addr 0.0.0.0:9380 --store postgres://app@db/canvas\n  \
        curl -H 'Authorization: Bearer KEY' http://127.0.0.1:9380/api/v1/agents")]
    Serve(serve::ServeArgs),
    /// Draw a canvas's execution graph as Mermaid or Graphviz DOT.
    #[command(after_help = "Examples:\n  \
        canvas graph canvases/trip.yaml\n  \
        canvas graph canvases/trip.yaml --format dot | dot -Tsvg > trip.svg")]
    Graph(graph::GraphArgs),
    /// List the components and tools this build knows, with their parameters.
    #[command(after_help = "Examples:\n  \
        canvas components\n  \
        canvas components --format json")]
    Components(components::ComponentsArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(completions::CompletionsArgs),
    /// Print the man page (or write every page with --dir).
    Man(man::ManArgs),
}

/// Parse the command line, run, and map the result to an exit code.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let parsed = match parse_one(&args) {
        Some(fast) => Ok(fast),
        None => Cli::command()
            .try_get_matches_from(&args)
            .and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m))),
    };
    let cli = match parsed {
        Ok((mut c, m)) => {
            match (&mut c.command, m.subcommand()) {
                (Command::Resume(a), Some(("resume", sub))) => a.explicit = explicit_ids(sub),
                (Command::Batch(a), Some(("batch", sub))) => a.explicit = explicit_ids(sub),
                _ => {}
            }
            c
        }
        Err(e) => {
            use clap::error::ErrorKind;
            // clap prints help/version to stdout (exit 0); help asked for by a missing
            // subcommand goes to stderr as it is.
            if !e.use_stderr() || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = e.print();
                return exit::code(if e.use_stderr() {
                    exit::INVALID
                } else {
                    exit::OK
                });
            }
            let args: Vec<String> = args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let err = usage_error(&e.render().to_string(), &command_path(&args));
            err.report(false);
            return exit::code(err.code);
        }
    };
    run_cli(cli)
}

/// A `run` or `resume` command line parsed against that subcommand's options alone:
/// building the definitions of all sixteen subcommands is most of clap's start-up, and
/// these two start every run. `None` for anything else, and for any line clap refuses
/// or answers with help: the full definition then parses it again, so help, versions
/// and errors read as they always do. A line this accepts, the full one accepts alike
/// (the subcommand's options are the same `Args`).
fn parse_one(args: &[std::ffi::OsString]) -> Option<(Cli, clap::ArgMatches)> {
    use clap::Args;
    let sub = match args.get(1)?.to_str()? {
        "run" => run::RunArgs::augment_args(clap::Command::new("run")),
        "resume" => resume::ResumeArgs::augment_args(clap::Command::new("resume")),
        _ => return None,
    };
    let m = clap::Command::new("canvas")
        .disable_help_subcommand(true)
        .subcommand(sub)
        .try_get_matches_from(args)
        .ok()?;
    let command = match m.subcommand()? {
        ("run", sub) => Command::Run(run::RunArgs::from_arg_matches(sub).ok()?),
        ("resume", sub) => Command::Resume(resume::ResumeArgs::from_arg_matches(sub).ok()?),
        _ => return None,
    };
    Some((Cli { command }, m))
}

/// `canvas` and the subcommands `args` names (`canvas runs prune`), for hints.
fn command_path(args: &[String]) -> String {
    let mut path = vec!["canvas".to_string()];
    let mut cmd = Cli::command();
    for a in args.iter().skip(1) {
        let Some(sub) = cmd.find_subcommand(a).cloned() else {
            break;
        };
        path.push(sub.get_name().to_string());
        cmd = sub;
    }
    path.join(" ")
}

/// A usage error as clap words it (an `error:` line, maybe continued on indented lines,
/// tips, the usage, a pointer to `--help`), as this CLI reports every error: one
/// `error:` line and a `hint:`.
fn usage_error(rendered: &str, command: &str) -> CliError {
    let mut message = String::new();
    let mut hints: Vec<String> = Vec::new();
    let mut usage = None;
    let lines = rendered.lines().map(str::trim);
    for line in lines.filter(|l| !l.is_empty() && !l.starts_with("For more information")) {
        if let Some(m) = line.strip_prefix("error: ") {
            message = m.to_string();
        } else if let Some(tip) = line.strip_prefix("tip: ") {
            hints.push(tip.to_string());
        } else if let Some(u) = line.strip_prefix("Usage: ") {
            usage = Some(u.to_string());
        } else {
            // What the error line goes on with: `<FILE>`, `[possible values: …]`.
            if !message.is_empty() {
                message.push(' ');
            }
            message.push_str(line);
        }
    }
    if let Some(u) = usage {
        hints.push(format!("usage: {u}"));
    }
    hints.push(format!("`{command} --help` shows every option"));
    CliError::invalid(message).hint(hints.join("; "))
}

/// The ids of the options a command line (or the environment) gave, as opposed to
/// their defaults: what `resume` keeps of its own over what the run remembers.
fn explicit_ids(m: &clap::ArgMatches) -> std::collections::HashSet<String> {
    use clap::parser::ValueSource;
    m.ids()
        .filter(|id| {
            matches!(
                m.value_source(id.as_str()),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
        })
        .map(|id| id.as_str().to_string())
        .collect()
}

/// Run a parsed command line (callable more than once: no global state).
pub fn run_cli(cli: Cli) -> ExitCode {
    // Scoped to this call, not installed globally, so `run_cli` can run twice. Without
    // `-v` there is none: tracing then records nothing, and building a subscriber only
    // to filter everything out cost a short run about 3 % of its instructions.
    let _logs = cli
        .verbose()
        .then(|| tracing::subscriber::set_default(logger()));
    tracing::debug!(command = ?cli.command, "parsed the command line");
    let (verbose, res) = match cli.command {
        Command::Run(args) => (args.turn.output.verbose, run::exec(args)),
        Command::Resume(args) => (args.turn.output.verbose, resume::exec(args)),
        Command::Chat(args) => (args.turn.output.verbose, chat::exec(args)),
        Command::Runs(args) => (false, runs::exec(args)),
        Command::Show(args) => (false, show::exec(args)),
        Command::Events(args) => (false, events::exec(args)),
        Command::Cancel(args) => (false, cancel::exec(args)),
        Command::Batch(args) => (false, batch::exec(args)),
        Command::Batches(args) => (false, batches::exec(args)),
        Command::Serve(args) => (false, serve::exec(args)),
        Command::Validate(args) => (false, validate::exec(args)),
        Command::Migrate(args) => (false, migrate::exec(args)),
        Command::Graph(args) => (false, graph::exec(args)),
        Command::Components(args) => (false, components::exec(args)),
        Command::Completions(args) => (false, completions::exec(args)),
        Command::Man(args) => (false, man::exec(args)),
    };
    match res {
        Ok(code) => exit::code(code),
        Err(e) => {
            e.report(verbose);
            exit::code(e.code)
        }
    }
}
