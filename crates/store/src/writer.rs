//! The store's writer: one thread that takes runs' writes ([`RunWrite`]) off their hot
//! path and group-commits them. Whatever queued while one transaction was committing
//! goes into the next, so many runs (or one run emitting fast) pay one commit per group
//! rather than one per write. Each write says when it is durable (or failed) through
//! its own callback, in submission order.

use std::sync::mpsc;
use std::thread;

use super::{ChunkBatch, ChunkPool, Result, RunWrite, Store, StoreError};

/// Most writes committed in one transaction.
const MAX_GROUP: usize = 256;

/// Called once a write is durable, or with why it failed.
pub type Done = Box<dyn FnOnce(Result<()>) + Send>;

/// A write and its callback.
struct Job {
    write: RunWrite,
    done: Done,
}

/// Hands writes to a writer thread. Cloneable; the thread ends when every handle is
/// dropped (after committing what was queued).
#[derive(Clone)]
pub struct WriterHandle {
    tx: mpsc::Sender<Job>,
    /// The buffers of the event chunks the writer has written, back for reuse.
    pool: ChunkPool,
}

impl WriterHandle {
    /// Queue `write`; `done` is called when it is durable or failed (at once, with
    /// [`StoreError::WriterGone`], when the writer thread has stopped).
    pub fn submit(&self, write: RunWrite, done: Done) {
        if let Err(mpsc::SendError(job)) = self.tx.send(Job { write, done }) {
            (job.done)(Err(StoreError::WriterGone));
        }
    }

    /// An empty batch of events whose chunks reuse the buffers of chunks written before.
    pub fn batch(&self) -> ChunkBatch {
        ChunkBatch::pooled(self.pool.clone())
    }

    /// Queue `write` and wait until it is durable.
    pub fn submit_and_wait(&self, write: RunWrite) -> Result<()> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(
            write,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.recv().unwrap_or(Err(StoreError::WriterGone))
    }
}

/// Start a writer on `store` inside `scope` (it is joined when the scope ends).
pub fn spawn_scoped<'scope, 'env>(
    scope: &'scope thread::Scope<'scope, 'env>,
    store: &'env dyn Store,
) -> WriterHandle {
    let (tx, rx) = mpsc::channel();
    let pool = ChunkPool::default();
    let back = pool.clone();
    scope.spawn(move || run(store, &rx, &back));
    WriterHandle { tx, pool }
}

/// Start a writer on a shared `store` in a thread of its own; it ends, after committing
/// what was queued, when every handle is dropped (join it to wait for that).
pub fn spawn(store: std::sync::Arc<dyn Store>) -> (WriterHandle, thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let pool = ChunkPool::default();
    let back = pool.clone();
    let join = thread::spawn(move || run(store.as_ref(), &rx, &back));
    (WriterHandle { tx, pool }, join)
}

/// The writer's loop: commit what is queued, in groups, until every handle is gone.
fn run(store: &dyn Store, rx: &mpsc::Receiver<Job>, pool: &ChunkPool) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let (writes, dones): (Vec<RunWrite>, Vec<Done>) =
            jobs.into_iter().map(|j| (j.write, j.done)).unzip();
        let written = store.write(&writes);
        // Before the callbacks: a run that waited on this write finds its buffers back.
        pool.recycle(writes.into_iter().flat_map(|w| w.events));
        match written {
            Ok(results) => {
                let mut results = results.into_iter();
                for done in dones {
                    done(results.next().unwrap_or(Ok(())));
                }
            }
            Err(e) => {
                let e = std::sync::Arc::new(e);
                for done in dones {
                    done(Err(StoreError::Group(std::sync::Arc::clone(&e))));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_after_the_writer_stopped_fails_at_once() {
        let (tx, rx) = mpsc::channel();
        drop(rx);
        let w = WriterHandle {
            tx,
            pool: ChunkPool::default(),
        };
        let e = w.submit_and_wait(RunWrite::new("x", 1)).unwrap_err();
        assert!(matches!(e, StoreError::WriterGone), "{e}");
    }
}
