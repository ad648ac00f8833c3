//! [`StoreSink`]: a turn's events and checkpoints, handed to the store's writer as
//! they come (nothing waits for a write on the hot path), with the turn's end written
//! last and waited for without blocking the runtime.

use std::sync::{Arc, Mutex, PoisonError};

use canvas_engine::events::wire;
use canvas_engine::{Event, EventSink, RunState};
use canvas_store::writer::WriterHandle;
use canvas_store::{CheckpointWrite, Checkpointer, EventChunk, RunWrite, StoreError, TurnEnd};

/// The durable sink of one turn of a run driven without a terminal.
pub struct StoreSink<'a> {
    run_id: String,
    turn: u32,
    writer: &'a WriterHandle,
    checkpoints: &'a mut Checkpointer,
    /// Events since the last write.
    chunks: Vec<EventChunk>,
    /// Scratch buffer for one event's `data`.
    data: Vec<u8>,
    /// The first write the store refused.
    failed: Arc<Mutex<Option<String>>>,
}

impl<'a> StoreSink<'a> {
    /// A sink for turn `turn` of run `run_id`, planning checkpoints with `checkpoints`.
    pub fn new(
        run_id: &str,
        turn: u32,
        writer: &'a WriterHandle,
        checkpoints: &'a mut Checkpointer,
    ) -> Self {
        StoreSink {
            run_id: run_id.to_string(),
            turn,
            writer,
            checkpoints,
            chunks: Vec::new(),
            data: Vec::new(),
            failed: Arc::default(),
        }
    }

    fn failure(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn write(&mut self, checkpoint: Option<CheckpointWrite>, end: Option<TurnEnd>) -> RunWrite {
        RunWrite {
            run_id: self.run_id.clone(),
            turn: self.turn,
            events: std::mem::take(&mut self.chunks),
            checkpoint,
            end,
        }
    }

    /// End the turn: its last events with `state`'s checkpoint and the run's new status,
    /// in one write; returns once that write is durable. After a refused write the turn
    /// is abandoned instead (and the refusal returned).
    pub async fn finish(&mut self, state: &RunState, end: TurnEnd) -> Result<(), StoreError> {
        if let Some(e) = self.failure() {
            // What follows a refused write would not follow on: keep the last checkpoint.
            self.abandon(end).await?;
            return Err(StoreError::Group(e));
        }
        let checkpoint = self.checkpoints.plan(state)?;
        let write = self.write(checkpoint, Some(end));
        self.commit(write).await?;
        match self.failure() {
            Some(e) => Err(StoreError::Group(e)),
            None => Ok(()),
        }
    }

    /// End a turn that did not reach a node boundary (its output failed, a deadline):
    /// the events since the last checkpoint are dropped, as a crash would drop them, so
    /// resuming runs those nodes once; the run's status is written.
    pub async fn abandon(&mut self, end: TurnEnd) -> Result<(), StoreError> {
        self.chunks.clear();
        let write = self.write(None, Some(end));
        self.commit(write).await
    }

    /// Hand `write` to the writer and wait, without blocking a thread, until it is
    /// durable.
    async fn commit(&self, write: RunWrite) -> Result<(), StoreError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.writer.submit(
            write,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.await.unwrap_or(Err(StoreError::WriterGone))
    }
}

fn store_error(e: &str) -> std::io::Error {
    std::io::Error::other(format!("cannot write to the run store: {e}"))
}

impl EventSink for StoreSink<'_> {
    fn emit(&mut self, ev: &Event) -> std::io::Result<()> {
        if let Some(e) = self.failure() {
            return Err(store_error(&e));
        }
        self.data.clear();
        wire::write_data(&ev.kind, &mut self.data).map_err(std::io::Error::other)?;
        let data = std::str::from_utf8(&self.data).map_err(std::io::Error::other)?;
        EventChunk::append(
            &mut self.chunks,
            &ev.message_id,
            ev.created_at,
            ev.kind.name(),
            data,
        );
        Ok(())
    }

    fn checkpoint(&mut self, state: &RunState) -> std::io::Result<()> {
        if let Some(e) = self.failure() {
            return Err(store_error(&e));
        }
        let checkpoint = self
            .checkpoints
            .plan(state)
            .map_err(|e| store_error(&e.to_string()))?;
        let write = self.write(checkpoint, None);
        if write.events.is_empty() && write.checkpoint.is_none() {
            return Ok(());
        }
        let failed = Arc::clone(&self.failed);
        self.writer.submit(
            write,
            Box::new(move |r| {
                if let Err(e) = r {
                    let mut f = failed.lock().unwrap_or_else(PoisonError::into_inner);
                    f.get_or_insert_with(|| e.to_string());
                }
            }),
        );
        Ok(())
    }
}
