//! Buffered output for a running turn. Renderers write through an [`OutputWriter`];
//! the bytes reach the sink (stdout) in batches: a flusher thread writes what is ready
//! a few milliseconds after it became ready (at once in eager mode, for a terminal),
//! and [`Output::drain`] writes everything when a reader needs it (before a prompt, at
//! the end of a turn). A write path of one `write` per batch instead of one per event.
//!
//! Bytes may be held behind a *gate* (a number): they stay back, with everything
//! written after them, until [`Output::open`] opens that gate. A durable sink uses it
//! so a `node_finished` is never shown before the store has it.
//!
//! Bytes are kept in segments of 64 KB, not one growing buffer: a batch of a
//! few hundred KB (what a busy run writes while the store commits) is then neither
//! copied on every doubling nor kept at twice its size, and released held bytes move
//! to the ready ones without a copy. Emptied segments are reused.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::mem;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

/// How long ready bytes may wait for more before they are written (not in eager mode).
pub const FLUSH_EVERY: Duration = Duration::from_millis(4);
/// Ready bytes that are written at once rather than wait (by the writing thread, or by
/// the flusher when an opened gate released them): keeps the buffer, and the memory a
/// fast run touches, small.
const SPILL: usize = 64 * 1024;
/// The size of one buffer segment.
const SEGMENT: usize = 64 * 1024;
/// Emptied segments kept for reuse (1 MiB): what a run holds at a time, usually.
const POOL: usize = 16;

/// Buffered, gated output (see the module docs). Dropping it writes what is ready and
/// stops the flusher; held bytes whose gate never opened are dropped.
pub struct Output {
    shared: Arc<Shared>,
    flusher: Option<thread::JoinHandle<()>>,
}

/// Where renderers write: into the [`Output`], behind the current gate.
#[derive(Clone)]
pub struct OutputWriter {
    shared: Arc<Shared>,
}

/// Opens or fails gates from another thread (the store's writer).
#[derive(Clone)]
pub struct Gates {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Signals new ready bytes, opened gates and closing.
    changed: Condvar,
    /// The sink; held while writing so batches reach it in order.
    sink: Mutex<Box<dyn Write + Send>>,
    eager: bool,
    /// [`FLUSH_EVERY`], but for tests.
    flush_every: Duration,
}

#[derive(Default)]
struct State {
    /// Bytes that may be written now, in segments.
    ready: VecDeque<Vec<u8>>,
    /// Their length.
    ready_len: usize,
    /// Emptied segments, reused (see [`State::recycle`]).
    pool: Vec<Vec<u8>>,
    /// Held bytes in segments, each behind its gate, in order (gates never decrease;
    /// several segments may share one).
    held: VecDeque<(u64, Vec<u8>)>,
    /// The gate for bytes written from now on (`None`: not held).
    gate: Option<u64>,
    /// Gates up to this one are open.
    opened: u64,
    /// Gates from this one on failed: their bytes are never shown.
    failed: Option<u64>,
    /// Why the sink refused a write; every later write fails with it.
    broken: Option<(io::ErrorKind, String)>,
    closing: bool,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    /// Move held bytes whose gate is open to `ready` (segments move, bytes are not
    /// copied); true when some moved.
    fn release(&mut self) -> bool {
        let mut moved = false;
        while self.held.front().is_some_and(|(g, _)| *g <= self.opened) {
            if let Some((_, bytes)) = self.held.pop_front() {
                self.ready_len += bytes.len();
                self.ready.push_back(bytes);
                moved = true;
            }
        }
        moved
    }

    /// A segment with room for `n` more bytes, from the pool when it has one.
    fn segment(&mut self, n: usize) -> Vec<u8> {
        match self.pool.pop() {
            Some(seg) if seg.capacity() >= n => seg,
            _ => Vec::with_capacity(SEGMENT.max(n)),
        }
    }

    /// Append `buf` to the last segment of `segs` while it has room (a held segment
    /// only when it is behind `gate`), else to a new one.
    fn append(&mut self, held: Option<u64>, buf: &[u8]) {
        let last = match held {
            Some(g) => self
                .held
                .back_mut()
                .filter(|(last, _)| *last >= g)
                .map(|(_, seg)| seg),
            None => self.ready.back_mut(),
        };
        match last {
            Some(seg) if seg.capacity() - seg.len() >= buf.len() => seg.extend_from_slice(buf),
            _ => {
                let mut seg = self.segment(buf.len());
                seg.extend_from_slice(buf);
                match held {
                    Some(g) => self.held.push_back((g, seg)),
                    None => self.ready.push_back(seg),
                }
            }
        }
        if held.is_none() {
            self.ready_len += buf.len();
        }
    }

    /// Keep an emptied segment for reuse: a few, and only segments of the usual size
    /// (one grown by a single large line goes back to the allocator).
    fn recycle(&mut self, mut seg: Vec<u8>) {
        if self.pool.len() < POOL && seg.capacity() == SEGMENT {
            seg.clear();
            self.pool.push(seg);
        }
    }

    fn error(&self) -> Option<io::Error> {
        self.broken
            .as_ref()
            .map(|(kind, msg)| io::Error::new(*kind, msg.clone()))
    }
}

impl Output {
    /// Output to `sink`. `eager`: write as soon as bytes are ready (a terminal, where
    /// a person reads along); otherwise batch over [`FLUSH_EVERY`].
    pub fn new(sink: Box<dyn Write + Send>, eager: bool) -> Output {
        Output::with_flush_every(sink, eager, FLUSH_EVERY)
    }

    fn with_flush_every(sink: Box<dyn Write + Send>, eager: bool, every: Duration) -> Output {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            sink: Mutex::new(sink),
            eager,
            flush_every: every,
        });
        let flusher = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("canvas-output".into())
                .spawn(move || shared.flush_loop())
                .ok()
        };
        Output { shared, flusher }
    }

    /// True when bytes are written as soon as they are ready.
    pub fn is_eager(&self) -> bool {
        self.shared.eager
    }

    /// A writer for renderers.
    pub fn writer(&self) -> OutputWriter {
        OutputWriter {
            shared: Arc::clone(&self.shared),
        }
    }

    /// A handle that opens and fails gates.
    pub fn gates(&self) -> Gates {
        Gates {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Hold what is written from now on behind `gate` (`None`: show it as soon as
    /// nothing before it is held).
    pub fn set_gate(&self, gate: Option<u64>) {
        lock(&self.shared.state).gate = gate;
    }

    /// Gates up to `gate` are open (see [`Gates::open`]).
    pub fn open(&self, gate: u64) {
        self.gates().open(gate);
    }

    /// Gate `gate` will never open (see [`Gates::fail`]).
    pub fn fail(&self, gate: u64) {
        self.gates().fail(gate);
    }

    /// An empty buffer with room for at least `n` bytes, of the segment size when `n`
    /// fits one (then from the segments kept for reuse), to fill and [`Output::push_held`].
    pub fn segment(&self, n: usize) -> Vec<u8> {
        lock(&self.shared.state).segment(n)
    }

    /// Append `bytes`, written by the caller, behind `gate` after everything written so
    /// far: many lines for one lock. Bytes of a gate that failed are dropped.
    pub fn push_held(&self, gate: u64, bytes: Vec<u8>) {
        let mut st = lock(&self.shared.state);
        if bytes.is_empty() || st.failed.is_some_and(|f| gate >= f) {
            st.recycle(bytes);
            return;
        }
        // Gates of held bytes never decrease (see `State::held`).
        let gate = st.held.back().map_or(gate, |(g, _)| gate.max(*g));
        st.held.push_back((gate, bytes));
        if st.release() {
            self.shared.changed.notify_all();
        }
    }

    /// Write what is ready now (held bytes stay held).
    pub fn flush(&self) -> io::Result<()> {
        self.shared.write_ready()
    }

    /// Wait until nothing is held (every gate opened or failed), then write it all.
    pub fn drain(&self) -> io::Result<()> {
        {
            let mut st = lock(&self.shared.state);
            while !st.held.is_empty() {
                st = self
                    .shared
                    .changed
                    .wait(st)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        self.shared.write_ready()
    }

    /// Why the sink failed, if it did (a closed pipe, a full disk).
    pub fn error(&self) -> Option<io::Error> {
        lock(&self.shared.state).error()
    }
}

impl Gates {
    /// Gates up to `gate` are open: their bytes may be shown.
    pub fn open(&self, gate: u64) {
        let mut st = lock(&self.shared.state);
        st.opened = st.opened.max(gate);
        if st.release() {
            self.shared.changed.notify_all();
        }
    }

    /// Gate `gate` will never open: its bytes, and all held after them, are dropped.
    pub fn fail(&self, gate: u64) {
        let mut st = lock(&self.shared.state);
        st.failed = Some(st.failed.map_or(gate, |f| f.min(gate)));
        st.held.retain(|(g, _)| *g < gate);
        self.shared.changed.notify_all();
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        lock(&self.shared.state).closing = true;
        self.shared.changed.notify_all();
        if let Some(f) = self.flusher.take() {
            let _ = f.join();
        }
        let _ = self.shared.write_ready();
    }
}

impl Shared {
    /// Write the ready bytes to the sink, in order with any other batch.
    fn write_ready(&self) -> io::Result<()> {
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        let segs = {
            let mut st = lock(&self.state);
            if let Some(e) = st.error() {
                return Err(e);
            }
            if st.ready.is_empty() {
                return Ok(());
            }
            st.ready_len = 0;
            mem::take(&mut st.ready)
        };
        let res = segs
            .iter()
            .try_for_each(|seg| sink.write_all(seg))
            .and_then(|()| sink.flush());
        let mut st = lock(&self.state);
        if let Err(e) = &res {
            st.broken = Some((e.kind(), e.to_string()));
        }
        for seg in segs {
            st.recycle(seg);
        }
        res
    }

    /// The flusher thread: wait for ready bytes, let more gather, write them. Closing
    /// wakes it at once (its owner writes what is left).
    fn flush_loop(&self) {
        loop {
            {
                let mut st = lock(&self.state);
                while st.ready.is_empty() && !st.closing {
                    st = self
                        .changed
                        .wait(st)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if !self.eager && !st.closing {
                    st = self
                        .changed
                        .wait_timeout_while(st, self.flush_every, |st| {
                            !st.closing && st.ready_len < SPILL
                        })
                        .map_or_else(|e| e.into_inner().0, |(st, _)| st);
                }
                if st.closing {
                    return;
                }
            }
            if self.write_ready().is_err() {
                // Writers see the error; nothing more can be shown.
                return;
            }
        }
    }
}

impl OutputWriter {
    /// Append `parts`, in order, under one lock (a line and its ending cost one).
    fn put(&self, parts: &[&[u8]]) -> io::Result<usize> {
        let mut st = lock(&self.shared.state);
        if let Some(e) = st.error() {
            return Err(e);
        }
        let len = parts.iter().map(|p| p.len()).sum();
        // Held: behind the current gate, or behind bytes held before (order is kept).
        let gate = match st.gate {
            Some(g) if g > st.opened => Some(g),
            _ => st.held.back().map(|(g, _)| *g),
        };
        match gate {
            Some(g) if st.failed.is_some_and(|f| g >= f) => {}
            Some(g) => parts.iter().for_each(|p| st.append(Some(g), p)),
            None => {
                let was_empty = st.ready.is_empty();
                parts.iter().for_each(|p| st.append(None, p));
                if st.ready_len >= SPILL {
                    drop(st);
                    self.shared.write_ready()?;
                } else if was_empty {
                    self.shared.changed.notify_all();
                }
            }
        }
        Ok(len)
    }
}

impl Write for OutputWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.put(&[buf])
    }

    /// Every slice is taken, under one lock.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match bufs {
            [] => Ok(0),
            [a] => self.put(&[a]),
            [a, b] => self.put(&[a, b]),
            more => {
                let parts: Vec<&[u8]> = more.iter().map(|b| &**b).collect();
                self.put(&parts)
            }
        }
    }

    /// Renderers flush after each event. In eager mode the ready bytes are written now
    /// (a terminal renderer draws spinners between its lines, so they must not lag);
    /// otherwise the [`Output`] decides when bytes go out, and a sink that broke since
    /// the last write is reported by the next one (or by [`Output::drain`]).
    fn flush(&mut self) -> io::Result<()> {
        if self.shared.eager {
            return self.shared.write_ready();
        }
        Ok(())
    }
}

/// Write `parts` to `out` in order: one vectored write when `out` takes them all at
/// once (an [`OutputWriter`] does, under one lock), the rest a part at a time.
pub fn write_parts<const N: usize, W: Write + ?Sized>(
    out: &mut W,
    parts: [&[u8]; N],
) -> io::Result<()> {
    let mut skip = out.write_vectored(&parts.map(io::IoSlice::new))?;
    for p in parts {
        if skip >= p.len() {
            skip -= p.len();
            continue;
        }
        out.write_all(&p[skip..])?;
        skip = 0;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink tests can read while the output writes to it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// A line's parts arrive whole and in order: through the output (held or not),
    /// and through a writer that takes a few bytes per call.
    #[test]
    fn parts_are_written_whole_and_in_order() {
        let sink = Shared::default();
        let out = Output::new(Box::new(sink.clone()), false);
        let mut w = out.writer();
        write_parts(&mut w, [b"data:", b"{}", b"\n\n"]).unwrap();
        out.set_gate(Some(1));
        write_parts(&mut w, [b"held", b"\n"]).unwrap();
        out.flush().unwrap();
        assert_eq!(sink.text(), "data:{}\n\n");
        out.open(1);
        out.drain().unwrap();
        assert_eq!(sink.text(), "data:{}\n\nheld\n");

        struct Trickle(Vec<u8>);
        impl Write for Trickle {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let n = buf.len().min(3);
                self.0.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut t = Trickle(Vec::new());
        write_parts(&mut t, [b"ab", b"", b"cdefg", b"h"]).unwrap();
        assert_eq!(t.0, b"abcdefgh");
    }

    #[test]
    fn held_bytes_and_what_follows_wait_for_their_gate() {
        let sink = Shared::default();
        let out = Output::new(Box::new(sink.clone()), false);
        let mut w = out.writer();
        w.write_all(b"a ").unwrap();
        out.set_gate(Some(1));
        w.write_all(b"b ").unwrap();
        out.set_gate(None);
        w.write_all(b"c ").unwrap();
        out.flush().unwrap();
        assert_eq!(sink.text(), "a ", "b is held, and c behind it");
        out.open(1);
        out.flush().unwrap();
        assert_eq!(sink.text(), "a b c ");
        w.write_all(b"d").unwrap();
        out.drain().unwrap();
        assert_eq!(sink.text(), "a b c d");
    }

    #[test]
    fn pushed_bytes_wait_for_their_gate_in_order_with_written_ones() {
        let sink = Shared::default();
        let out = Output::new(Box::new(sink.clone()), false);
        let mut w = out.writer();
        w.write_all(b"a ").unwrap();
        let mut seg = out.segment(4);
        assert!(seg.capacity() >= SEGMENT, "a whole segment");
        seg.extend_from_slice(b"b ");
        out.push_held(1, seg);
        w.write_all(b"c ").unwrap();
        let mut seg = out.segment(4);
        seg.extend_from_slice(b"d ");
        out.push_held(2, seg);
        out.flush().unwrap();
        assert_eq!(sink.text(), "a ", "b is held, and c behind it");
        out.open(1);
        out.flush().unwrap();
        assert_eq!(sink.text(), "a b c ", "d waits for gate 2");
        out.open(2);
        out.drain().unwrap();
        assert_eq!(sink.text(), "a b c d ");
    }

    #[test]
    fn pushed_bytes_of_a_failed_gate_are_never_shown() {
        let sink = Shared::default();
        let out = Output::new(Box::new(sink.clone()), false);
        out.push_held(1, b"a ".to_vec());
        out.fail(1);
        out.push_held(2, b"b ".to_vec());
        out.open(2);
        out.drain().unwrap();
        assert_eq!(sink.text(), "");
        assert!(out.error().is_none());
    }

    #[test]
    fn bytes_past_many_segments_and_a_line_larger_than_one_keep_their_order() {
        let sink = Shared::default();
        let out = Output::new(Box::new(sink.clone()), false);
        let mut w = out.writer();
        let mut expected = String::new();
        let big = "x".repeat(3 * SEGMENT + 17);
        for i in 0..4_000u64 {
            // Gates 1, 2, 3, … every 500 lines, with ungated stretches between them.
            out.set_gate((i % 1_000 >= 500).then_some(i / 1_000 + 1));
            let line = if i == 1_234 {
                format!("{big}\n")
            } else {
                format!("line {i:05} {}\n", "-".repeat(i as usize % 97))
            };
            w.write_all(line.as_bytes()).unwrap();
            expected.push_str(&line);
            if i % 1_000 == 999 && i < 3_000 {
                out.open(i / 1_000 + 1);
            }
        }
        out.flush().unwrap();
        assert!(
            sink.text().len() < expected.len(),
            "gate 4 still holds its bytes"
        );
        assert!(expected.starts_with(&sink.text()));
        out.open(4);
        out.drain().unwrap();
        assert_eq!(sink.text(), expected);
        let st = lock(&out.shared.state);
        assert!(
            st.pool.len() <= POOL
                && st
                    .pool
                    .iter()
                    .all(|s| s.capacity() == SEGMENT && s.is_empty())
        );
    }

    #[test]
    fn the_flusher_writes_ready_bytes_without_being_asked() {
        let sink = Shared::default();
        let out = Output::new(Box::new(sink.clone()), false);
        out.writer().write_all(b"x").unwrap();
        for _ in 0..500 {
            if sink.text() == "x" {
                return;
            }
            thread::sleep(Duration::from_millis(2));
        }
        panic!("never written: {:?}", sink.text());
    }

    #[test]
    fn bytes_a_gate_releases_past_the_spill_are_written_without_waiting() {
        let sink = Shared::default();
        // The flusher's own interval never comes: only the spill can write them.
        let out =
            Output::with_flush_every(Box::new(sink.clone()), false, Duration::from_secs(3600));
        out.set_gate(Some(1));
        let line = [b'x'; 1000];
        let mut w = out.writer();
        for _ in 0..(SPILL / line.len() + 1) {
            w.write_all(&line).unwrap();
        }
        assert_eq!(sink.text(), "", "held");
        out.open(1);
        for _ in 0..500 {
            if sink.text().len() > SPILL {
                return;
            }
            thread::sleep(Duration::from_millis(2));
        }
        panic!("released bytes waited: {} written", sink.text().len());
    }

    #[test]
    fn a_failed_gate_drops_its_bytes_and_drain_does_not_wait_for_it() {
        let sink = Shared::default();
        let out = Output::new(Box::new(sink.clone()), true);
        let mut w = out.writer();
        out.set_gate(Some(1));
        w.write_all(b"kept ").unwrap();
        out.set_gate(Some(2));
        w.write_all(b"lost").unwrap();
        out.open(1);
        out.fail(2);
        out.drain().unwrap();
        drop(out);
        assert_eq!(sink.text(), "kept ");
    }

    #[test]
    fn a_broken_sink_fails_later_writes() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let out = Output::new(Box::new(Closed), true);
        let mut w = out.writer();
        w.write_all(b"x").unwrap();
        assert_eq!(out.drain().unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(
            w.write_all(b"y").unwrap_err().kind(),
            io::ErrorKind::BrokenPipe
        );
        assert_eq!(
            out.error().map(|e| e.kind()),
            Some(io::ErrorKind::BrokenPipe)
        );
    }
}
