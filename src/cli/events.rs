//! `canvas events RUN_ID`: replay a stored run's event stream as JSON lines (the stored
//! bytes), SSE frames or text, without running anything.

use std::io::{self, IsTerminal, Write};

use clap::{Args, ValueEnum};

use super::opts::StoreOpts;
use super::runs::{output_result, write_stdout};
use super::{CliError, exit};
use canvas_engine::{Event, EventKind};
use canvas_store::{RunRecord, RunStatus};
use canvas_ui::{Renderer, RunEnd, SseRenderer, TextOptions, TextRenderer};

/// Output formats of `canvas events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventsFormat {
    /// Readable text (default on a terminal).
    Text,
    /// The stored JSON lines, unchanged (default otherwise).
    Jsonl,
    /// RAGFlow's SSE framing: `data:{json}` frames, then `data:[DONE]`.
    Sse,
}

/// Options of `canvas events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// The run id (a unique prefix, or `latest`).
    pub run_id: String,
    /// Output format [default: text on a terminal, jsonl otherwise].
    #[arg(long, value_enum)]
    pub format: Option<EventsFormat>,
    /// Only the events of turn N (the first turn is 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub turn: Option<u32>,
    /// Where runs are stored.
    #[command(flatten)]
    pub store: StoreOpts,
}

/// Run `canvas events`.
pub fn exec(args: EventsArgs) -> Result<u8, CliError> {
    let (store, rec) = args.store.find_run(&args.run_id)?;
    if let Some(t) = args.turn.filter(|&t| t > rec.turns) {
        return Err(CliError::invalid(format!(
            "run {} has {} turn{}; there is no turn {t}",
            rec.id,
            rec.turns,
            if rec.turns == 1 { "" } else { "s" }
        )));
    }
    let stdout = io::stdout();
    let format = args.format.unwrap_or(if stdout.is_terminal() {
        EventsFormat::Text
    } else {
        EventsFormat::Jsonl
    });
    let turns: Vec<u32> = match args.turn {
        Some(t) => vec![t],
        None => (1..=rec.turns).collect(),
    };
    if format == EventsFormat::Jsonl {
        // The stored lines are exactly what `run --format jsonl` printed: no re-encoding.
        let lines = match args.turn {
            Some(t) => store.events_of_turn(&rec.id, t),
            None => store.events(&rec.id),
        }?;
        return write_stdout(|out| {
            for line in &lines {
                out.write_all(line.as_bytes())?;
                out.write_all(b"\n")?;
            }
            Ok(())
        });
    }
    // Parse everything first so a corrupt line fails before any output.
    let mut groups: Vec<(u32, Vec<Event>)> = Vec::with_capacity(turns.len());
    for t in turns {
        let lines = store.events_of_turn(&rec.id, t)?;
        let events = lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                serde_json::from_str::<Event>(line).map_err(|e| {
                    CliError::new(
                        exit::FAILED,
                        format!(
                            "run {}: stored event {} of turn {t} is not a valid event: {e}",
                            rec.id,
                            i + 1
                        ),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        groups.push((t, events));
    }
    let ends: Vec<RunEnd> = groups
        .iter()
        .map(|(t, evs)| end_of(evs, (*t == rec.turns).then_some(&rec)))
        .collect();
    let res = match format {
        EventsFormat::Sse => {
            // One stream, one `[DONE]`, as a client reading the replay expects.
            let mut r = SseRenderer::new(io::BufWriter::new(stdout));
            (|| {
                for (_, evs) in &groups {
                    for ev in evs {
                        r.event(ev)?;
                    }
                }
                r.finish(ends.last().unwrap_or(&RunEnd::Crashed))
            })()
        }
        EventsFormat::Text | EventsFormat::Jsonl => render_text(stdout, &groups, &ends, rec.turns),
    };
    output_result(res)
}

/// Text: one renderer per turn (each turn has its own summary), a header between turns.
fn render_text(
    stdout: io::Stdout,
    groups: &[(u32, Vec<Event>)],
    ends: &[RunEnd],
    last_turn: u32,
) -> io::Result<()> {
    let color = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    for ((t, evs), end) in groups.iter().zip(ends) {
        let opts = TextOptions {
            color,
            // Only a run's last turn can still be waiting for its answers.
            answered_later: *t != last_turn,
            ..TextOptions::default()
        };
        if groups.len() > 1 {
            let header = format!("── turn {t} ──");
            let mut out = io::stdout();
            if color {
                writeln!(out, "\x1b[2m{header}\x1b[0m")?;
            } else {
                writeln!(out, "{header}")?;
            }
            out.flush()?;
        }
        let mut r = TextRenderer::new(io::stdout(), opts);
        for ev in evs {
            r.event(ev)?;
        }
        r.finish(end)?;
    }
    Ok(())
}

/// How a replayed turn ended: from the run's status for its last turn (`last`), else
/// from the turn's own events.
fn end_of(events: &[Event], last: Option<&RunRecord>) -> RunEnd {
    let failed_at = |want: Option<&str>| {
        events.iter().rev().find_map(|e| match &e.kind {
            EventKind::NodeFinished(n) => n
                .error
                .as_ref()
                .filter(|err| want.is_none_or(|w| w == err.as_str()))
                .map(|err| RunEnd::Failed {
                    component_id: n.component_id.to_string(),
                    error: err.clone(),
                }),
            _ => None,
        })
    };
    match last.map(|r| (r.status, r.error.as_deref())) {
        Some((RunStatus::Succeeded, _)) => RunEnd::Finished,
        Some((RunStatus::Waiting, _)) => RunEnd::Waiting,
        // A component's unhandled error names the component; a crash does not, and its
        // message is no node's error.
        Some((RunStatus::Failed, error)) => error
            .and_then(|e| failed_at(Some(e)))
            .unwrap_or(RunEnd::Crashed),
        Some((RunStatus::Interrupted, _)) => RunEnd::Interrupted,
        Some((RunStatus::Cancelled, _)) => RunEnd::Cancelled,
        // Still running elsewhere, or died without saying: the stream just stops.
        Some((RunStatus::Running, _)) => RunEnd::Crashed,
        None => match events.last().map(|e| &e.kind) {
            Some(EventKind::WorkflowFinished(_)) => RunEnd::Finished,
            Some(EventKind::UserInputs { .. }) => RunEnd::Waiting,
            _ => failed_at(None).unwrap_or(RunEnd::Crashed),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::events::NodeFinished;
    use canvas_pyrt::Object;

    fn ev(kind: EventKind) -> Event {
        Event::test(kind, "r")
    }

    fn finished(id: &str, error: Option<&str>) -> Event {
        ev(EventKind::NodeFinished(NodeFinished {
            inputs: Object::new(),
            outputs: Object::new().into(),
            component_id: id.into(),
            component_name: "".into(),
            component_type: "X".into(),
            error: error.map(String::from),
            elapsed_time: 0.0,
            created_at: 0.0,
            usage: None,
        }))
    }

    #[test]
    fn failed_run_names_the_component_whose_error_it_stored() {
        let evs = [finished("A", Some("handled")), finished("B", Some("boom"))];
        let mut rec = RunRecord::new("-", "{}");
        rec.status = RunStatus::Failed;
        rec.error = Some("handled".into());
        assert_eq!(
            end_of(&evs, Some(&rec)),
            RunEnd::Failed {
                component_id: "A".into(),
                error: "handled".into()
            }
        );
        rec.error = Some("a crash message".into());
        assert_eq!(end_of(&evs, Some(&rec)), RunEnd::Crashed);
        rec.status = RunStatus::Succeeded;
        assert_eq!(end_of(&evs, Some(&rec)), RunEnd::Finished);
        rec.status = RunStatus::Interrupted;
        assert_eq!(end_of(&evs, Some(&rec)), RunEnd::Interrupted);
        rec.status = RunStatus::Cancelled;
        assert_eq!(end_of(&evs, Some(&rec)), RunEnd::Cancelled);
    }

    #[test]
    fn earlier_turns_end_as_their_events_say() {
        let waiting = ev(EventKind::UserInputs {
            inputs: Object::new(),
            tips: String::new(),
        });
        assert_eq!(end_of(&[waiting], None), RunEnd::Waiting);
        assert_eq!(
            end_of(&[finished("B", Some("boom"))], None),
            RunEnd::Failed {
                component_id: "B".into(),
                error: "boom".into()
            }
        );
        assert_eq!(end_of(&[finished("B", None)], None), RunEnd::Crashed);
    }
}
