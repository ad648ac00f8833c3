//! [`StoreSink`]: a turn's events and checkpoints, handed to the store's writer as
//! they come (nothing waits for a write on the hot path), with the turn's end written
//! last and waited for without blocking the runtime.
//!
//! An optional [`Observer`] hears each event's line as `canvas run --format jsonl`
//! prints it, under the same rule: a `node_finished`, and every event after it, only
//! once the write carrying it is durable (a server streams a turn through it).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use canvas_engine::events::wire::{self, Envelope};
use canvas_engine::{Event, EventKind, EventSink, RunState};
use canvas_store::writer::WriterHandle;
use canvas_store::{CheckpointWrite, Checkpointer, ChunkBatch, RunWrite, StoreError, TurnEnd};

/// Hears each event's JSON line once it may be shown (see the module docs). Called from
/// the run's task, or from the store's writer thread once a write is durable: it must
/// not block.
pub type Observer = Arc<dyn Fn(&str) + Send + Sync>;

/// The lines an observer has not heard yet.
struct Watch {
    observer: Observer,
    /// Lines in order, each with the number of the write that must be durable first
    /// (0: none); a line waits for every line before it.
    queue: VecDeque<(u64, String)>,
    /// Writes up to this number are durable.
    opened: u64,
}

impl Watch {
    /// Hand over the lines whose write is durable, in order.
    fn release(&mut self) {
        while self
            .queue
            .front()
            .is_some_and(|(gate, _)| *gate <= self.opened)
        {
            if let Some((_, line)) = self.queue.pop_front() {
                (self.observer)(&line);
            }
        }
    }
}

fn watch_lock(w: &Mutex<Watch>) -> std::sync::MutexGuard<'_, Watch> {
    w.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The durable sink of one turn of a run driven without a terminal.
pub struct StoreSink<'a> {
    run_id: String,
    turn: u32,
    writer: &'a WriterHandle,
    checkpoints: &'a mut Checkpointer,
    /// Events since the last write.
    chunks: ChunkBatch,
    /// Scratch buffer for one event's `data`.
    data: String,
    /// The first write the store refused.
    failed: Arc<OnceLock<Arc<StoreError>>>,
    /// The observer's queue, when there is one.
    watch: Option<Arc<Mutex<Watch>>>,
    /// A `node_finished` is among the events since the last write: lines from it on
    /// wait for that write.
    holding: bool,
    /// Writes handed to the writer so far (a write's number is its gate).
    submitted: u64,
    /// Scratch buffer for one event's line.
    line: Vec<u8>,
    /// The end of every line of this turn, written once.
    envelope: wire::EnvelopeText,
    /// Writes each event's `data`, keeping what a node's events repeat.
    data_writer: wire::DataWriter,
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
            chunks: writer.batch(),
            data: String::new(),
            failed: Arc::default(),
            watch: None,
            holding: false,
            submitted: 0,
            line: Vec::new(),
            envelope: wire::EnvelopeText::default(),
            data_writer: wire::DataWriter::default(),
        }
    }

    /// Have `observer` hear this turn's events (see the module docs).
    pub fn observed(mut self, observer: Option<Observer>) -> Self {
        self.watch = observer.map(|observer| {
            Arc::new(Mutex::new(Watch {
                observer,
                queue: VecDeque::new(),
                opened: 0,
            }))
        });
        self
    }

    /// Number the next write, and have its acknowledgement release the lines waiting
    /// for it; returns what to call with the write's result.
    fn gate(&mut self) -> impl FnOnce(bool) + Send + 'static {
        self.submitted += 1;
        self.holding = false;
        let gate = self.submitted;
        let watch = self.watch.clone();
        move |durable| {
            let Some(w) = watch else { return };
            let mut w = watch_lock(&w);
            if durable {
                w.opened = w.opened.max(gate);
                w.release();
            } else {
                // What follows a refused write is never shown.
                w.queue.clear();
            }
        }
    }

    fn failure(&self) -> Option<Arc<StoreError>> {
        // Asked before every event: a load, not a lock.
        self.failed.get().cloned()
    }

    fn write(&mut self, checkpoint: Option<CheckpointWrite>, end: Option<TurnEnd>) -> RunWrite {
        RunWrite {
            run_id: self.run_id.clone(),
            turn: self.turn,
            events: self.chunks.take(),
            checkpoint,
            end,
            ..RunWrite::default()
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
        if let Some(w) = &self.watch {
            // The dropped events' lines: none of them may be heard now.
            let next = self.submitted + 1;
            watch_lock(w).queue.retain(|(gate, _)| *gate < next);
        }
        let write = self.write(None, Some(end));
        self.commit(write).await
    }

    /// Hand `write` to the writer and wait, without blocking a thread, until it is
    /// durable.
    async fn commit(&mut self, write: RunWrite) -> Result<(), StoreError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let opened = self.gate();
        self.writer.submit(
            write,
            Box::new(move |r| {
                opened(r.is_ok());
                let _ = tx.send(r);
            }),
        );
        rx.await.unwrap_or(Err(StoreError::WriterGone))
    }
}

fn store_error(e: &dyn std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("cannot write to the run store: {e}"))
}

impl EventSink for StoreSink<'_> {
    fn emit(&mut self, ev: &Event) -> std::io::Result<()> {
        if let Some(e) = self.failure() {
            return Err(store_error(&*e));
        }
        self.data.clear();
        self.data_writer
            .write(&ev.kind, &mut self.data)
            .map_err(std::io::Error::other)?;
        let data = self.data.as_str();
        self.chunks
            .append(&ev.message_id, ev.created_at, ev.kind.name(), data);
        if let Some(w) = &self.watch {
            if matches!(ev.kind, EventKind::NodeFinished(_)) {
                self.holding = true;
            }
            self.line.clear();
            let tail = self.envelope.of(&Envelope::of(ev));
            wire::write_line_with(ev.kind.name(), data.as_bytes(), tail, &mut self.line);
            let line = String::from_utf8_lossy(&self.line).into_owned();
            let gate = if self.holding { self.submitted + 1 } else { 0 };
            let mut w = watch_lock(w);
            w.queue.push_back((gate, line));
            w.release();
        }
        Ok(())
    }

    fn checkpoint(&mut self, state: &RunState) -> std::io::Result<()> {
        if let Some(e) = self.failure() {
            return Err(store_error(&*e));
        }
        let checkpoint = self.checkpoints.plan(state).map_err(|e| store_error(&e))?;
        let write = self.write(checkpoint, None);
        if write.events.is_empty() && write.checkpoint.is_none() {
            return Ok(());
        }
        let failed = Arc::clone(&self.failed);
        let opened = self.gate();
        self.writer.submit(
            write,
            Box::new(move |r| {
                opened(r.is_ok());
                if let Err(e) = r {
                    let e = match e {
                        StoreError::Group(shared) => shared,
                        own => Arc::new(own),
                    };
                    // The first refusal is the one reported.
                    let _ = failed.set(e);
                }
            }),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use canvas_store::{SqliteStore, Store, TurnKind};
    use serde_json::json;

    use super::*;

    fn event(name: &str, data: serde_json::Value, run: &str) -> Event {
        let line = json!({"event": name, "data": data, "message_id": "m", "created_at": 1,
                          "task_id": run});
        serde_json::from_value(line).unwrap()
    }

    fn finished(run: &str) -> Event {
        let data = json!({"inputs": {}, "outputs": {}, "component_id": "begin",
            "component_name": "", "component_type": "Begin", "error": null,
            "elapsed_time": 0.0, "created_at": 1.0});
        event("node_finished", data, run)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_node_finished_is_heard_only_once_its_write_is_durable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
        let rec = canvas_store::RunRecord::new("-", "{}");
        store
            .create_run_with_turn(&rec, TurnKind::Start, "", &json!({}))
            .unwrap();
        let (writer, written) = canvas_store::writer::spawn(Arc::clone(&store));
        let heard: Arc<Mutex<Vec<String>>> = Arc::default();
        let ears = Arc::clone(&heard);
        let observer: Observer = Arc::new(move |l: &str| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            ears.lock()
                .unwrap()
                .push(v["event"].as_str().unwrap().to_string());
        });
        let said = || heard.lock().unwrap().clone();
        let mut checkpoints = Checkpointer::new();
        let mut sink =
            StoreSink::new(&rec.id, 1, &writer, &mut checkpoints).observed(Some(observer));
        // Another process holds the store's write lock: the writer waits for it.
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let chunk = json!({"content": "Hi"});
        sink.emit(&event("message", chunk.clone(), &rec.id))
            .unwrap();
        assert_eq!(said(), ["message"], "a chunk is heard at once");
        sink.emit(&finished(&rec.id)).unwrap();
        sink.emit(&event("message", chunk, &rec.id)).unwrap();
        sink.checkpoint(&RunState::default()).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            said(),
            ["message"],
            "nothing from the node_finished on, before its write"
        );
        other.execute_batch("COMMIT").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while said().len() < 3 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            said(),
            ["message", "node_finished", "message"],
            "in order, once durable"
        );
        let stored = store.events(&rec.id).unwrap();
        assert_eq!(stored.len(), 3);
        drop(sink);
        drop(writer);
        written.join().unwrap();
    }
}
