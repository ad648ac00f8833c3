//! The reporter of a running turn: each event is serialised once, and the same bytes go
//! to the renderer (through the buffered [`Output`]) and, in compact form, to the
//! store's writer with the checkpoint they belong to. A `node_finished`, and what
//! follows it, is held in the output until the write that carries it is durable.
//! Held JSON lines are written by the reporter itself into output segments, handed over
//! with the write they wait for: a busy run's lines cost no lock each.
//!
//! On a terminal the renderer draws spinners beside the text, so held events are not
//! rendered ahead as bytes: they are kept, and rendered once their write is durable
//! (the reporter waits for it there: a person reads along, nothing is gained by
//! running ahead).

use std::io;
use std::sync::{Arc, OnceLock, mpsc};

use canvas_engine::events::wire::{self, Envelope};
use canvas_engine::{Event, EventKind, EventSink, RunState};
use canvas_store::writer::WriterHandle;
use canvas_store::{Checkpointer, ChunkBatch, Fault, RunStatus, RunWrite, TurnEnd};
use canvas_ui::{Output, Renderer, RunEnd};

/// Commits events with checkpoints through the writer, and renders them.
pub(super) struct Reporter<'a> {
    run_id: String,
    turn: u32,
    renderer: Box<dyn Renderer>,
    output: &'a Output,
    writer: &'a WriterHandle,
    checkpoints: &'a mut Checkpointer,
    /// Events since the last write.
    chunks: ChunkBatch,
    /// A `node_finished` is among them: what is shown from it on waits for their write.
    holding: bool,
    /// The gate the output was last told (`None`: not held).
    gate: Option<u64>,
    /// Writes handed to the writer so far; a write's number is its output gate.
    submitted: u64,
    /// Why the store refused the first write it refused.
    failed: Arc<OnceLock<StoreFailure>>,
    /// Scratch buffers for one event's `data` and line.
    data: String,
    line: Vec<u8>,
    /// The end of every line of this turn, written once.
    envelope: wire::EnvelopeText,
    /// Writes each event's `data`, keeping what a node's events repeat.
    data_writer: wire::DataWriter,
    /// Render held events only once durable (a terminal), rather than hold their bytes.
    live: bool,
    /// Events held back in live mode, with their lines.
    held: Vec<(Event, Vec<u8>)>,
    /// The renderer writes lines as they are (JSON lines): held lines are then staged
    /// here and handed to the output a segment at a time, not one by one.
    as_is: bool,
    /// Lines held for the next write, staged (see `as_is`).
    staged: Vec<u8>,
}

impl<'a> Reporter<'a> {
    /// A reporter for turn `turn` of run `run_id`.
    pub(super) fn new(
        run_id: &str,
        turn: u32,
        renderer: Box<dyn Renderer>,
        output: &'a Output,
        writer: &'a WriterHandle,
        checkpoints: &'a mut Checkpointer,
    ) -> Self {
        Reporter {
            run_id: run_id.to_string(),
            turn,
            output,
            writer,
            checkpoints,
            chunks: writer.batch(),
            holding: false,
            gate: None,
            submitted: 0,
            failed: Arc::new(OnceLock::new()),
            data: String::new(),
            line: Vec::new(),
            envelope: wire::EnvelopeText::default(),
            data_writer: wire::DataWriter::default(),
            live: output.is_eager(),
            held: Vec::new(),
            as_is: renderer.lines_as_is(),
            staged: Vec::new(),
            renderer,
        }
    }

    /// The store's refusal of an earlier write, as an error for the engine.
    fn check(&self) -> io::Result<()> {
        // Asked before every event: a load, not a lock.
        match self.failed.get() {
            Some(f) => Err(store_error(&f.message)),
            None => Ok(()),
        }
    }

    /// Why the store refused a write of this turn, if it did.
    pub(super) fn store_failure(&self) -> Option<StoreFailure> {
        self.failed.get().cloned()
    }

    /// Hand the pending events, `checkpoint` and `end` to the writer as one write.
    /// With `wait`, return once it is durable (or failed).
    fn submit(
        &mut self,
        checkpoint: Option<canvas_store::CheckpointWrite>,
        end: Option<TurnEnd>,
        wait: bool,
    ) -> io::Result<()> {
        // Staged lines are the write's own: they show once it is durable.
        self.push_staged();
        let write = RunWrite {
            run_id: self.run_id.clone(),
            turn: self.turn,
            events: self.chunks.take(),
            checkpoint,
            end,
            ..RunWrite::default()
        };
        self.holding = false;
        self.set_gate(None);
        if write.events.is_empty() && write.checkpoint.is_none() && write.end.is_none() {
            return Ok(());
        }
        self.submitted += 1;
        let gate = self.submitted;
        let gates = self.output.gates();
        let failed = Arc::clone(&self.failed);
        // A channel only when this write is waited for (most are not).
        let waited = (wait || self.live).then(|| mpsc::sync_channel::<()>(1));
        let tx = waited.as_ref().map(|(tx, _)| tx.clone());
        self.writer.submit(
            write,
            Box::new(move |r| {
                match r {
                    Ok(()) => gates.open(gate),
                    Err(e) => {
                        // The first refusal is the one reported.
                        let _ = failed.set(StoreFailure {
                            fault: e.fault(),
                            message: e.to_string(),
                            reason: e.reason(),
                        });
                        gates.fail(gate);
                    }
                }
                if let Some(tx) = tx {
                    let _ = tx.send(());
                }
            }),
        );
        if let Some((tx, rx)) = waited {
            drop(tx);
            // The writer calls back exactly once, or is gone (then every sender dropped).
            let _ = rx.recv();
            self.check()?;
        }
        for (ev, line) in std::mem::take(&mut self.held) {
            self.renderer.event_line(&ev, &line)?;
        }
        Ok(())
    }

    /// Stage a held event's line (see `as_is`): no lock, and one copy of its data.
    /// `tail` is the envelope's text ([`wire::EnvelopeText`]).
    fn stage(&mut self, name: &str, data: &[u8], tail: &[u8]) {
        // The line: its head's words (under 32 bytes), name, data, tail and newline.
        let most = name.len() + data.len() + tail.len() + 32;
        if self.staged.capacity() - self.staged.len() < most {
            self.push_staged();
            self.staged = self.output.segment(most);
        }
        wire::write_line_with(name, data, tail, &mut self.staged);
        self.staged.push(b'\n');
    }

    /// Hand the staged lines to the output, behind the gate of the next write.
    fn push_staged(&mut self) {
        if !self.staged.is_empty() {
            let staged = std::mem::take(&mut self.staged);
            self.output.push_held(self.submitted + 1, staged);
        }
    }

    fn set_gate(&mut self, gate: Option<u64>) {
        if self.gate != gate {
            self.gate = gate;
            self.output.set_gate(gate);
        }
    }

    /// End the turn: write what is pending with `state`'s checkpoint (none when `state`
    /// is `None`, or when an earlier write failed: the checkpoint would not follow on)
    /// and the run's new status, wait until it is durable, then show everything.
    pub(super) fn finish_turn(&mut self, state: Option<&RunState>, end: TurnEnd) -> io::Result<()> {
        let checkpoint = match state {
            Some(st) if self.check().is_ok() => self
                .checkpoints
                .plan(st)
                .map_err(|e| io::Error::other(format!("cannot write to the run store: {e}")))?,
            _ => None,
        };
        if !matches!(end.status, RunStatus::Succeeded | RunStatus::Waiting) {
            let res = self.submit(checkpoint, Some(end), true);
            let shown = self.output.drain();
            return res.and(shown);
        }
        // A turn that ends with `workflow_finished` or `user_inputs`: its events are made
        // durable, then shown, and only then is the run marked ended. A process that
        // dies in between leaves a run still "running" whose stored turn is complete:
        // `resume` records its end and shows that turn again (docs/resume.md), so its
        // end reaches stdout at least once.
        self.submit(checkpoint, None, true)?;
        let shown = self.output.drain();
        let res = self.submit(None, Some(end), true);
        shown.and(res)
    }

    /// End a turn the engine could not take to a node boundary (a lost output, a timeout):
    /// the store keeps its last checkpoint, and the events since it are dropped, as a
    /// crash would have dropped them. Storing them, or the state as it stands, would
    /// have the nodes after that checkpoint run twice on resume. None of them was shown
    /// from a `node_finished` on (those wait for their write); the rest (starts, streamed
    /// chunks) are shown again when their nodes run again.
    pub(super) fn abandon_turn(&mut self, end: TurnEnd) -> io::Result<()> {
        self.chunks.clear();
        self.held.clear();
        self.staged.clear();
        let res = self.submit(None, Some(end), true);
        let shown = self.output.drain();
        res.and(shown)
    }

    /// Show stored events again (they are durable: nothing waits for a write).
    pub(super) fn replay(&mut self, lines: &[String]) -> io::Result<()> {
        for line in lines {
            let ev: Event = serde_json::from_str(line).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a stored event is not valid: {e}"),
                )
            })?;
            self.renderer.event_line(&ev, line.as_bytes())?;
        }
        Ok(())
    }

    /// The renderer's closing lines, shown at once.
    pub(super) fn finish_output(&mut self, end: &RunEnd) -> io::Result<()> {
        self.renderer.finish(end)?;
        self.output.drain()
    }
}

/// Why the store refused a write.
#[derive(Debug, Clone)]
pub(super) struct StoreFailure {
    /// The kind of trouble.
    pub fault: Fault,
    /// The whole message (what the store was doing, and why it failed).
    pub message: String,
    /// Why it failed, in SQLite's (or the system's) words.
    pub reason: String,
}

fn store_error(e: &str) -> io::Error {
    io::Error::other(format!("cannot write to the run store: {e}"))
}

impl EventSink for Reporter<'_> {
    fn emit(&mut self, ev: &Event) -> io::Result<()> {
        self.check()?;
        self.data.clear();
        self.data_writer
            .write(&ev.kind, &mut self.data)
            .map_err(io::Error::other)?;
        let name = ev.kind.name();
        self.chunks
            .append(&ev.message_id, ev.created_at, name, &self.data);
        if matches!(ev.kind, EventKind::NodeFinished(_)) {
            self.holding = true;
        }
        // Taken out while the line is written: `stage` borrows the reporter.
        let mut envelope = std::mem::take(&mut self.envelope);
        let tail = envelope.of(&Envelope::of(ev));
        if self.holding && self.as_is && !self.live {
            let data = std::mem::take(&mut self.data);
            self.stage(name, data.as_bytes(), tail);
            self.data = data;
            self.envelope = envelope;
            return Ok(());
        }
        self.line.clear();
        wire::write_line_with(name, self.data.as_bytes(), tail, &mut self.line);
        self.envelope = envelope;
        if self.live {
            if self.holding {
                self.held.push((ev.clone(), self.line.clone()));
                return Ok(());
            }
            return self.renderer.event_line(ev, &self.line);
        }
        let gate = self.holding.then_some(self.submitted + 1);
        self.set_gate(gate);
        self.renderer.event_line(ev, &self.line)
    }

    fn checkpoint(&mut self, state: &RunState) -> io::Result<()> {
        self.check()?;
        let checkpoint = self
            .checkpoints
            .plan(state)
            .map_err(|e| store_error(&e.to_string()))?;
        self.submit(checkpoint, None, false)
    }
}
