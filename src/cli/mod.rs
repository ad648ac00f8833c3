//! Command-line interface: clap definitions, one file per subcommand, exit codes.
//! It turns flags into plain values for the library and holds no engine logic.

mod error;
pub mod exit;
mod inputs;
mod resume;
mod run;
mod session;

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
    /// Answer the form a run waits on, or send the next turn (`-q`) of a finished run.
    ///
    /// Example: canvas resume 01JABC -i name=Ada
    Resume(resume::ResumeArgs),
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
    };
    match res {
        Ok(code) => exit::code(code),
        Err(e) => {
            e.report(verbose);
            exit::code(e.code)
        }
    }
}
