//! Command-line interface: clap definitions, one file per subcommand, exit codes.
//! It turns flags into plain values for the library and holds no engine logic.

mod cancel;
mod chat;
mod components;
mod error;
mod events;
pub mod exit;
mod graph;
mod inputs;
mod migrate;
mod models;
mod resume;
mod run;
mod runs;
mod session;
mod show;
mod tools;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use error::CliError;

/// Run RAGFlow agent canvases locally, with RAGFlow's exact event stream.
#[derive(Debug, Parser)]
#[command(name = "canvas", version, about, propagate_version = true)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a canvas (JSON or YAML; `-` reads stdin) and print its events.
    ///
    /// Example: canvas run flow.json -q "hello" --format jsonl
    Run(run::RunArgs),
    /// Continue a stored run: answer its form, continue a stopped turn, or send the next turn (`-q`).
    ///
    /// Example: canvas resume 01JABC -i name=Ada
    Resume(resume::ResumeArgs),
    /// Chat with a conversational canvas: each line you type is a turn of one run.
    ///
    /// Example: canvas chat support.json
    Chat(chat::ChatArgs),
    /// List the stored runs, newest first.
    ///
    /// Example: canvas runs --status waiting
    Runs(runs::RunsArgs),
    /// Show one stored run: status, canvas, times, waiting form, error.
    ///
    /// Example: canvas show latest
    Show(show::ShowArgs),
    /// Replay a stored run's events in any output format.
    ///
    /// Example: canvas events 01JABC --format jsonl
    Events(events::EventsArgs),
    /// Ask the process running a run to stop at its next node boundary (resumable).
    ///
    /// Example: canvas cancel 01JABC
    Cancel(cancel::CancelArgs),
    /// Check canvases statically (no network, no models): exit 1 on errors.
    ///
    /// Example: canvas validate flows/ --format github --strict
    Validate(validate::ValidateArgs),
    /// Rewrite legacy or graph-only canvases into the current form; shows the diff.
    ///
    /// Example: canvas migrate old.json --write
    Migrate(migrate::MigrateArgs),
    /// Draw a canvas's execution graph as Mermaid or Graphviz DOT.
    ///
    /// Example: canvas graph flow.json --format mermaid
    Graph(graph::GraphArgs),
    /// List the component classes this build knows and whether it runs each.
    ///
    /// Example: canvas components --format json
    Components(components::ComponentsArgs),
}

/// Parse the command line, run, and map the result to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr.
            let _ = e.print();
            return exit::code(if e.use_stderr() {
                exit::INVALID
            } else {
                exit::OK
            });
        }
    };
    run_cli(cli)
}

/// Run a parsed command line (callable more than once: no global state).
pub fn run_cli(cli: Cli) -> ExitCode {
    let (verbose, res) = match cli.command {
        Command::Run(args) => (args.turn.verbose, run::exec(args)),
        Command::Resume(args) => (args.turn.verbose, resume::exec(args)),
        Command::Chat(args) => (args.turn.verbose, chat::exec(args)),
        Command::Runs(args) => (false, runs::exec(args)),
        Command::Show(args) => (false, show::exec(args)),
        Command::Events(args) => (false, events::exec(args)),
        Command::Cancel(args) => (false, cancel::exec(args)),
        Command::Validate(args) => (false, validate::exec(args)),
        Command::Migrate(args) => (false, migrate::exec(args)),
        Command::Graph(args) => (false, graph::exec(args)),
        Command::Components(args) => (false, components::exec(args)),
    };
    match res {
        Ok(code) => exit::code(code),
        Err(e) => {
            e.report(verbose);
            exit::code(e.code)
        }
    }
}
