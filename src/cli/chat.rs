//! `canvas chat FILE`: a conversational canvas as a chat in the terminal. One run; each
//! line typed is a turn (`sys.query`), with `sys.history` and `sys.conversation_turns`
//! carried between turns as RAGFlow's session does. Reads lines from stdin when it is
//! not a terminal.

use std::io::{self, BufRead, IsTerminal};
use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::admit::{AdmitOpts, Admitted, admit};
use super::session::{Next, Session, TurnArgs, TurnRequest};
use super::{CliError, exit};
use canvas_pyrt::Object;
use canvas_store::{RunRecord, TurnKind};

/// Options of `canvas chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The canvas file (JSON or YAML).
    pub file: PathBuf,
    /// The checks the chat starts with.
    #[command(flatten)]
    pub admit: AdmitOpts,
    /// Options shared with `run` (`-q` is the first message).
    #[command(flatten)]
    pub turn: TurnArgs,
}

/// Run `canvas chat`.
pub fn exec(args: ChatArgs) -> Result<u8, CliError> {
    let label = args.file.display().to_string();
    if label == "-" {
        return Err(CliError::invalid(
            "chat reads your messages from stdin: give the canvas as a file",
        ));
    }
    let Admitted { canvas, text } = admit(&args.file, &label, &args.admit, args.turn.output.quiet)?;
    let mut turn_args = args.turn.clone();
    // A chat shows the conversation; node lines only with -v.
    if !turn_args.output.verbose {
        turn_args.output.quiet = true;
    }
    let store = turn_args.store.open()?;
    let source = std::fs::canonicalize(&args.file)
        .map(|p| p.display().to_string())
        .unwrap_or(label.clone());
    // The run is stored with its first message, so it never exists without a turn.
    let mut record = RunRecord::new(source, text);
    record.options = Some(super::remember::RunOptions::of(&turn_args).to_value());
    let models = turn_args.models.setup()?;
    models.check(&canvas, &label)?;
    let session = Session {
        label,
        canvas: &canvas,
        store: &*store,
        run_id: record.id.clone(),
        args: &turn_args,
        models: &models,
        tools: std::sync::Arc::new(turn_args.tools.env(turn_args.models.llm_config())?),
        checkpoints: std::cell::RefCell::new(canvas_store::Checkpointer::new()),
    };
    let tty = io::stdin().is_terminal() && io::stderr().is_terminal();
    if let Some(p) = canvas
        .node("begin")
        .and_then(|b| b.params.get("prologue"))
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty())
    {
        eprintln!("{}", canvas_ui::visible(p));
    }
    if tty {
        eprintln!("(an empty line or Ctrl-D ends the chat)");
    }
    let mut state = canvas.fresh_state();
    let mut first = true;
    let mut pending = Some(args.turn.query.clone()).filter(|q| !q.is_empty());
    let mut stdin = io::stdin().lock();
    let mut code = exit::OK;
    loop {
        let line = match pending.take() {
            Some(q) => q,
            None => match read_line(tty, &mut stdin)? {
                Some(l) => l,
                None => break,
            },
        };
        let query = line.trim().to_string();
        if query.is_empty() {
            if tty {
                break;
            }
            continue;
        }
        // Each line is one turn's request; the first one stores the run with it.
        let request = TurnRequest {
            kind: if first {
                TurnKind::Start
            } else {
                TurnKind::Next
            },
            query,
            inputs: Object::new(),
        };
        let driven = if first {
            session.start(&record, request, state)
        } else {
            session.drive(state, Next::Turn(request))
        };
        first = false;
        match driven {
            Ok(d) => {
                state = d.state;
                code = d.code;
                if code == exit::WAITING {
                    // The form could not be asked here: the run waits for `resume -i`.
                    return Ok(code);
                }
            }
            Err(e) => {
                e.report(turn_args.output.verbose);
                if e.code == exit::INTERRUPTED {
                    return Err(CliError::new(exit::INTERRUPTED, "chat interrupted")
                        .hint(format!("canvas resume {} continues the run", record.id)));
                }
                code = e.code;
                // The failed turn is over; the next one starts from what was stored.
                let loaded = store.load_checkpoint(&record.id).ok();
                state = loaded
                    .as_ref()
                    .and_then(|cp| cp.state().cloned())
                    .map(|mut s| {
                        s.cursor = None;
                        s
                    })
                    .unwrap_or_else(|| canvas.fresh_state());
                // Checkpoints go on from what is stored, not from what failed.
                *session.checkpoints.borrow_mut() = loaded.unwrap_or_default();
            }
        }
    }
    Ok(code)
}

/// The next message: a prompt on a terminal, else a line of stdin. `None` at the end.
fn read_line(tty: bool, stdin: &mut impl BufRead) -> Result<Option<String>, CliError> {
    if tty {
        let term = dialoguer::console::Term::stderr();
        // Ctrl-D (and a terminal that went away) ends the chat; Ctrl-C interrupts.
        return Ok(canvas_ui::prompt::read_line("you", &term).unwrap_or(None));
    }
    let mut buf = String::new();
    match stdin.read_line(&mut buf) {
        Ok(0) => Ok(None),
        Ok(_) => Ok(Some(buf.trim_end_matches(['\n', '\r']).to_string())),
        Err(e) => Err(CliError::new(
            exit::FAILED,
            format!("cannot read stdin: {e}"),
        )),
    }
}
