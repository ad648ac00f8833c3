//! The compact form of stored events: a chunk holds a run of one turn's events as
//! `NAME DATA\n` lines (the event name, a space, its `data` JSON), with the envelope they
//! share (`message_id`, `created_at`; `task_id` is the run id) kept once, and the lines
//! LZ4-compressed. Reading a chunk rebuilds each event's JSON line byte for byte
//! ([`canvas_engine::events::wire`]). Large values are cut out of the text first and
//! kept once (`blobs`).

use std::sync::{Arc, Mutex, PoisonError};

use canvas_engine::events::wire::{self, Envelope};

use super::blobs::{self, Split};
use super::json_text;
use super::{Result, StoreError};

/// A run of one turn's events in the store's compact form (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventChunk {
    /// `message_id` of every event in the chunk.
    pub message_id: String,
    /// `created_at` of every event in the chunk.
    pub created_at: i64,
    /// How many events `text` holds.
    pub count: u32,
    /// One line per event: its name, a space, its `data` JSON, a newline.
    pub text: String,
}

impl EventChunk {
    /// An empty chunk for events with this envelope.
    pub fn new(message_id: impl Into<String>, created_at: i64) -> EventChunk {
        EventChunk {
            message_id: message_id.into(),
            created_at,
            count: 0,
            text: String::new(),
        }
    }

    /// An empty chunk with room for `bytes` of event lines.
    pub fn with_capacity(message_id: &str, created_at: i64, bytes: usize) -> EventChunk {
        EventChunk {
            text: String::with_capacity(bytes),
            ..EventChunk::new(message_id, created_at)
        }
    }

    /// Append one event: its name and its serialised `data` (one line of JSON).
    pub fn push(&mut self, name: &str, data: &str) {
        self.text.push_str(name);
        self.text.push(' ');
        self.text.push_str(data);
        self.text.push('\n');
        self.count += 1;
    }

    /// Append one event to `chunks`: to the last chunk when it has the same envelope,
    /// else to a new one.
    pub fn append(
        chunks: &mut Vec<EventChunk>,
        message_id: &str,
        created_at: i64,
        name: &str,
        data: &str,
    ) {
        match chunks.last_mut() {
            Some(c) if c.message_id == message_id && c.created_at == created_at => {
                c.push(name, data);
            }
            _ => {
                let mut c = EventChunk::new(message_id, created_at);
                c.push(name, data);
                chunks.push(c);
            }
        }
    }

    /// True when it holds no event.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The chunk's stored form: its large values cut out, the rest compressed.
    pub fn encode(&self) -> Encoded<'_> {
        encode(&self.text)
    }
}

/// The most bytes of event lines a batch puts in one chunk (a single larger line gets a
/// chunk of its own): each chunk is made once, at its final size.
pub(crate) const CHUNK_BYTES: usize = 64 * 1024;

/// Most emptied chunk buffers a [`ChunkPool`] keeps (1 MiB).
const POOLED: usize = 16;

/// Chunk buffers the writer has written, kept for the next batches to fill. A busy run
/// keeps a few hundred kilobytes of events in flight; buffers that come back are
/// memory already touched, where each page of a new one faults in on the running
/// thread as it is first written (a few microseconds a page on a virtual machine).
#[derive(Debug, Clone, Default)]
pub struct ChunkPool(Arc<Mutex<Vec<String>>>);

impl ChunkPool {
    /// An empty buffer with room for a chunk, from the pool when it has one.
    fn take(&self) -> String {
        let pooled = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        pooled.unwrap_or_else(|| String::with_capacity(CHUNK_BYTES))
    }

    /// Keep the buffers of written `chunks` for reuse: a few, and only those of the
    /// usual size (one grown for a single large event goes back to the allocator).
    pub fn recycle(&self, chunks: impl IntoIterator<Item = EventChunk>) {
        let mut pool = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for c in chunks {
            if pool.len() >= POOLED {
                break;
            }
            if c.text.capacity() == CHUNK_BYTES {
                let mut text = c.text;
                text.clear();
                pool.push(text);
            }
        }
    }
}

/// The events gathered for a run's next write, in chunks of at most `CHUNK_BYTES` (64 KB).
/// A busy run gathers hundreds of kilobytes between checkpoints: one buffer grown by
/// doubling copied them over and over, into memory touched for the first time, on the
/// running thread. The writer joins them again (`coalesce`): one chunk compresses
/// better than several.
#[derive(Debug, Default)]
pub struct ChunkBatch {
    chunks: Vec<EventChunk>,
    /// Where new chunks' buffers come from (none: the allocator).
    pool: Option<ChunkPool>,
}

impl ChunkBatch {
    /// An empty batch.
    pub fn new() -> ChunkBatch {
        ChunkBatch::default()
    }

    /// An empty batch whose chunks reuse the buffers `pool` gets back.
    pub fn pooled(pool: ChunkPool) -> ChunkBatch {
        ChunkBatch {
            chunks: Vec::new(),
            pool: Some(pool),
        }
    }

    /// Append one event: to the last chunk when it has the same envelope and room, else
    /// to a new chunk.
    pub fn append(&mut self, message_id: &str, created_at: i64, name: &str, data: &str) {
        let line = name.len() + data.len() + 2;
        match self.chunks.last_mut() {
            Some(c)
                if c.message_id == message_id
                    && c.created_at == created_at
                    && c.text.len() + line <= CHUNK_BYTES.max(c.text.capacity()) =>
            {
                c.push(name, data);
            }
            _ => {
                let mut c = match &self.pool {
                    Some(pool) if line <= CHUNK_BYTES => EventChunk {
                        text: pool.take(),
                        ..EventChunk::new(message_id, created_at)
                    },
                    _ => EventChunk::with_capacity(message_id, created_at, CHUNK_BYTES.max(line)),
                };
                c.push(name, data);
                self.chunks.push(c);
            }
        }
    }

    /// The chunks gathered so far, leaving the batch empty for the next write.
    pub fn take(&mut self) -> Vec<EventChunk> {
        std::mem::take(&mut self.chunks)
    }

    /// Drop the events gathered so far.
    pub fn clear(&mut self) {
        self.chunks.clear();
    }
}

/// Most bytes a writer's join buffer keeps between writes (see [`each_joined`]).
pub(crate) const JOIN_KEPT: usize = 4 << 20;

/// Each run of neighbours in `chunks` that share an envelope, joined into one chunk (the
/// events in order), given to `f` with the run's first chunk (its envelope) and event
/// count: how a batch is stored. A lone chunk's text is given as it is; a run's is
/// joined in `buf`, which the writer keeps from one write to the next, so that joining
/// writes into memory already touched rather than a new buffer each time.
pub(crate) fn each_joined<E>(
    chunks: &[EventChunk],
    buf: &mut String,
    mut f: impl FnMut(&EventChunk, u32, &str) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let runs = chunks.chunk_by(|a, b| a.message_id == b.message_id && a.created_at == b.created_at);
    for run in runs {
        let count = run.iter().map(|c| c.count).sum();
        let text = match run {
            [one] => one.text.as_str(),
            _ => {
                buf.clear();
                buf.reserve(run.iter().map(|c| c.text.len()).sum());
                for c in run {
                    buf.push_str(&c.text);
                }
                buf.as_str()
            }
        };
        f(&run[0], count, text)?;
    }
    if buf.capacity() > JOIN_KEPT {
        *buf = String::new();
    }
    Ok(())
}

/// The stored form of a chunk's `text`: its large values cut out, the rest compressed.
pub(crate) fn encode(text: &str) -> Encoded<'_> {
    let split = blobs::split(text);
    let body = compress(split.as_ref().map_or(text, |s| s.text.as_str()));
    Encoded { body, split }
}

/// An [`EventChunk`] as the store writes it.
#[derive(Debug)]
pub struct Encoded<'a> {
    /// The `body` column: the text left after cutting, compressed.
    pub body: Vec<u8>,
    /// The large values cut out, when there are any.
    pub(crate) split: Option<Split<'a>>,
}

impl Encoded<'_> {
    /// The `cuts` column: where the large values go back (`None` when none was cut).
    pub fn cuts(&self) -> Option<String> {
        self.split.as_ref().map(Split::cuts_json)
    }

    /// The large values cut out, as (key, text), in order (a repeated value repeats).
    pub fn blobs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.split
            .iter()
            .flat_map(|s| s.cuts.iter().zip(&s.values))
            .map(|(c, v)| (c.hash.as_str(), *v))
    }
}

/// One row of `event_chunks` as read back: a run of `n` events from event `seq` on.
#[derive(Debug, Clone, Copy)]
pub struct StoredChunk<'a> {
    /// The number of the chunk's first event in the run (1-based).
    pub seq: i64,
    /// How many events it holds.
    pub n: i64,
    /// `message_id` of its events.
    pub message_id: &'a str,
    /// `created_at` of its events.
    pub created_at: i64,
    /// [`Encoded::body`].
    pub body: &'a [u8],
    /// [`Encoded::cuts`].
    pub cuts: Option<&'a str>,
}

impl StoredChunk<'_> {
    /// The events of run `run_id` in this chunk, as the JSON lines emitted; `blob`
    /// gives the text of a large value by key. Stored bytes are not trusted: anything
    /// that does not decode is [`StoreError::Corrupt`].
    pub fn lines(
        &self,
        run_id: &str,
        blob: impl FnMut(&str) -> Result<String>,
    ) -> Result<Vec<String>> {
        let what = || span(run_id, self.seq, self.n);
        let mut text = decompress(self.body, what)?;
        if let Some(cuts) = self.cuts {
            text = blobs::join(text, cuts, blob, what)?;
        }
        lines(
            &text,
            self.n,
            self.seq,
            self.message_id,
            self.created_at,
            run_id,
        )
    }
}

/// How errors name `count` stored events from event `first` on. Stored numbers are not
/// trusted: nothing here can overflow.
fn span(run_id: &str, first: i64, count: i64) -> String {
    match first.checked_add(count.saturating_sub(1)) {
        Some(last) if count >= 1 => format!("run {run_id}: stored events {first}–{last}"),
        _ => format!("run {run_id}: {count} stored events from event {first}"),
    }
}

/// The stored bytes of `text`.
pub(crate) fn compress(text: &str) -> Vec<u8> {
    lz4_flex::compress_prepend_size(text.as_bytes())
}

/// The most bytes one byte of an LZ4 block can give: a match length grows by 255 per
/// byte that extends it, and nothing grows faster.
const LZ4_MAX_RATIO: usize = 255;

/// The text of stored bytes (`what` names them in errors).
pub(crate) fn decompress(bytes: &[u8], what: impl Fn() -> String) -> Result<String> {
    // The size prefix sizes the buffer before a byte is decoded: a corrupt one must not
    // ask for gigabytes.
    if let Some((size, block)) = bytes.split_first_chunk::<4>() {
        let size = u32::from_le_bytes(*size);
        if usize::try_from(size).unwrap_or(usize::MAX) > block.len().saturating_mul(LZ4_MAX_RATIO) {
            return Err(StoreError::Corrupt(format!(
                "{}: {size} bytes cannot come out of {} stored bytes",
                what(),
                block.len()
            )));
        }
    }
    let raw = lz4_flex::decompress_size_prepended(bytes)
        .map_err(|e| StoreError::Corrupt(format!("{}: {e}", what())))?;
    String::from_utf8(raw).map_err(|_| StoreError::Corrupt(format!("{}: not UTF-8", what())))
}

/// The JSON lines of a stored chunk's text (decompressed, its large values back in) of
/// `count` events of run `run_id`, the first being event `first` of the run.
pub(crate) fn lines(
    text: &str,
    count: i64,
    first: i64,
    message_id: &str,
    created_at: i64,
    run_id: &str,
) -> Result<Vec<String>> {
    let what = || span(run_id, first, count);
    // A chunk holds at least one event, and its events' numbers fit.
    if count < 1 || first.checked_add(count - 1).is_none() {
        return Err(StoreError::Corrupt(format!(
            "{}: not a count of events",
            what()
        )));
    }
    let expected = usize::try_from(count).unwrap_or(usize::MAX);
    let env = Envelope {
        message_id,
        created_at,
        task_id: run_id,
    };
    let mut envelope = wire::EnvelopeText::default();
    let tail = envelope.of(&env);
    // The stored count does not size the buffer: each event takes a line of the text.
    let mut out = Vec::with_capacity(expected.min(text.len() / 2));
    for (i, l) in text.lines().enumerate() {
        if i == expected {
            return Err(StoreError::Corrupt(format!(
                "{}: {} events stored, {count} expected",
                what(),
                text.lines().count()
            )));
        }
        // At most the last event's number, checked above.
        let seq = first + i as i64;
        let bad =
            |why: &str| StoreError::Corrupt(format!("run {run_id}: stored event {seq}: {why}"));
        let (name, data) = l.split_once(' ').ok_or_else(|| bad("no event name"))?;
        if !wire::is_event_name(name) {
            return Err(bad(&format!("unknown event {name:?}")));
        }
        // LZ4 has no checksum: corrupt bytes can decompress to text that is not JSON.
        if !json_text::is_value(data.as_bytes()) {
            return Err(bad("its data is not JSON"));
        }
        let mut line = Vec::with_capacity(l.len() + tail.len() + 16);
        wire::write_line_with(name, data.as_bytes(), tail, &mut line);
        // Made of a name checked above, stored UTF-8 and JSON punctuation.
        out.push(String::from_utf8(line).map_err(|_| bad("not UTF-8"))?);
    }
    if out.len() as i64 != count {
        return Err(StoreError::Corrupt(format!(
            "{}: {} events stored, {count} expected",
            what(),
            out.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_reads_back_as_the_emitted_lines() {
        let mut c = EventChunk::new("m1", 42);
        c.push("node_started", r#"{"component_id":"a"}"#);
        c.push("message", r#"{"content":"x\ny"}"#);
        let text = decompress(&compress(&c.text), || "t".into()).unwrap();
        let got = lines(&text, 2, 7, "m1", 42, "RUN").unwrap();
        assert_eq!(
            got,
            [
                r#"{"event":"node_started","data":{"component_id":"a"},"message_id":"m1","created_at":42,"task_id":"RUN"}"#,
                r#"{"event":"message","data":{"content":"x\ny"},"message_id":"m1","created_at":42,"task_id":"RUN"}"#,
            ]
        );
    }

    #[test]
    fn a_chunk_made_with_room_holds_the_same_events() {
        let mut roomy = EventChunk::with_capacity("m1", 42, 4096);
        assert!(roomy.text.capacity() >= 4096);
        assert!(roomy.is_empty());
        let mut plain = EventChunk::new("m1", 42);
        for c in [&mut roomy, &mut plain] {
            c.push("node_started", r#"{"component_id":"a"}"#);
            c.push("node_finished", r#"{"component_id":"a"}"#);
        }
        assert_eq!(roomy, plain);
        assert_eq!(roomy.count, 2);
    }

    #[test]
    fn a_batch_gives_its_events_in_chunks_by_envelope() {
        let mut b = ChunkBatch::new();
        assert!(b.take().is_empty());
        b.append("m1", 42, "node_started", r#"{"component_id":"a"}"#);
        b.append("m1", 42, "node_finished", r#"{"component_id":"a"}"#);
        b.append("m2", 43, "message", r#"{"content":"x"}"#);
        let first = b.take();
        let mut plain = Vec::new();
        EventChunk::append(
            &mut plain,
            "m1",
            42,
            "node_started",
            r#"{"component_id":"a"}"#,
        );
        EventChunk::append(
            &mut plain,
            "m1",
            42,
            "node_finished",
            r#"{"component_id":"a"}"#,
        );
        EventChunk::append(&mut plain, "m2", 43, "message", r#"{"content":"x"}"#);
        assert_eq!(first, plain);
        b.append("m2", 43, "message", r#"{"content":"y"}"#);
        b.clear();
        assert!(b.take().is_empty(), "cleared");
    }

    #[test]
    fn a_batch_fills_chunks_of_bounded_size_without_growing_them() {
        let mut b = ChunkBatch::new();
        let data = format!(r#"{{"content":"{}"}}"#, "x".repeat(1000));
        for _ in 0..200 {
            b.append("m1", 42, "message", &data);
        }
        let big = format!(r#"{{"content":"{}"}}"#, "y".repeat(3 * CHUNK_BYTES));
        let big_line = "message".len() + big.len() + 2;
        b.append("m1", 42, "message", &big);
        b.append("m1", 42, "message", &data);
        let chunks = b.take();
        // 200 lines of 1,023 bytes: 64 to a chunk; the big line alone; the last after it.
        assert_eq!(
            chunks.iter().map(|c| c.count).collect::<Vec<_>>(),
            [64, 64, 64, 8, 1, 1]
        );
        for c in &chunks {
            assert!(
                c.text.len() <= CHUNK_BYTES.max(big_line),
                "{}",
                c.text.len()
            );
            assert!(
                c.text.capacity() < 2 * CHUNK_BYTES.max(c.text.len()),
                "made at its size, not grown by doubling"
            );
        }
        let mut plain = Vec::new();
        for _ in 0..200 {
            EventChunk::append(&mut plain, "m1", 42, "message", &data);
        }
        EventChunk::append(&mut plain, "m1", 42, "message", &big);
        EventChunk::append(&mut plain, "m1", 42, "message", &data);
        let joined: String = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(joined, plain[0].text, "the same lines, in order");
    }

    #[test]
    fn a_pooled_batch_fills_the_buffers_written_chunks_gave_back() {
        let pool = ChunkPool::default();
        let data = format!(r#"{{"content":"{}"}}"#, "x".repeat(1000));
        let mut b = ChunkBatch::pooled(pool.clone());
        for _ in 0..200 {
            b.append("m1", 42, "message", &data);
        }
        let big = format!(r#"{{"content":"{}"}}"#, "y".repeat(2 * CHUNK_BYTES));
        b.append("m1", 42, "message", &big);
        let first = b.take();
        assert_eq!(
            first.iter().map(|c| c.count).collect::<Vec<_>>(),
            [64, 64, 64, 8, 1],
            "chunks as an unpooled batch makes them"
        );
        let buffers: Vec<*const u8> = first[..4].iter().map(|c| c.text.as_ptr()).collect();
        pool.recycle(first);
        // The four chunks of the usual size come back; the large line's does not.
        let mut again = Vec::new();
        for _ in 0..4 {
            b.append("m2", 43, "message", &"z".repeat(CHUNK_BYTES - 20));
            again.extend(b.take());
        }
        let mut reused: Vec<*const u8> = again.iter().map(|c| c.text.as_ptr()).collect();
        reused.sort();
        let mut want = buffers.clone();
        want.sort();
        assert_eq!(reused, want, "each returned buffer is filled again");
        assert!(
            again
                .iter()
                .all(|c| c.text.capacity() == CHUNK_BYTES && c.message_id == "m2" && c.count == 1),
            "reused buffers hold only their new event"
        );
        // Emptied, and then a new buffer: the pool only holds what came back.
        b.append("m3", 44, "message", "{}");
        assert!(!buffers.contains(&b.take()[0].text.as_ptr()));
        // It keeps a bounded number.
        pool.recycle((0..3 * POOLED).map(|_| EventChunk::with_capacity("m", 1, CHUNK_BYTES)));
        assert_eq!(pool.0.lock().unwrap().len(), POOLED);
    }

    #[test]
    fn joining_joins_neighbours_that_share_an_envelope() {
        let chunk = |m: &str, at: i64, lines: &[&str]| {
            let mut c = EventChunk::new(m, at);
            for l in lines {
                c.push("message", l);
            }
            c
        };
        let chunks = [
            chunk("m1", 1, &["a", "b"]),
            chunk("m1", 1, &["c"]),
            chunk("m1", 1, &["d"]),
            chunk("m1", 2, &["e"]),
            chunk("m2", 2, &["f"]),
            chunk("m2", 2, &["g"]),
        ];
        let joined = |chunks: &[EventChunk], buf: &mut String| {
            let mut out = Vec::new();
            each_joined(chunks, buf, |first, count, text| {
                let lone = std::ptr::eq(text, first.text.as_str());
                out.push((
                    EventChunk {
                        count,
                        text: text.to_string(),
                        ..first.clone()
                    },
                    lone,
                ));
                Ok::<(), ()>(())
            })
            .unwrap();
            out
        };
        // A buffer left with another write's text is cleared before it is used.
        let mut buf = "left from before\n".to_string();
        let got = joined(&chunks, &mut buf);
        let want = [
            chunk("m1", 1, &["a", "b", "c", "d"]),
            chunk("m1", 2, &["e"]),
            chunk("m2", 2, &["f", "g"]),
        ];
        assert_eq!(got.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>(), want);
        assert_eq!(
            got.iter().map(|(_, lone)| *lone).collect::<Vec<_>>(),
            [false, true, false],
            "a lone chunk is not copied"
        );
        assert!(joined(&[], &mut buf).is_empty());
        // A join of more than the buffer may keep is not kept for the next write.
        let big = "x".repeat(JOIN_KEPT);
        let large = [chunk("m", 1, &[&big]), chunk("m", 1, &["y"])];
        assert_eq!(joined(&large, &mut buf)[0].0.count, 2);
        assert_eq!(
            buf.capacity(),
            0,
            "a buffer over {JOIN_KEPT} bytes is let go"
        );
    }

    #[test]
    fn any_text_reads_back_however_well_it_compresses() {
        for text in [
            String::new(),
            "a".into(),
            "a".repeat(10 << 20),
            "ab".repeat(5 << 20),
        ] {
            let back = decompress(&compress(&text), || "t".into()).unwrap();
            assert!(back == text, "{} bytes", text.len());
        }
    }

    #[test]
    fn a_size_no_block_can_give_is_corrupt() {
        let mut bytes = compress("hello");
        bytes[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = decompress(&bytes, || "run R: stored events 1–2".into()).unwrap_err();
        assert!(
            e.to_string()
                .contains("4294967295 bytes cannot come out of 6 stored bytes"),
            "{e}"
        );
    }

    #[test]
    fn corrupt_chunks_are_named() {
        let e = decompress(b"\x05\0\0\0zz", || "run R: stored events 4–6".into()).unwrap_err();
        assert!(e.to_string().contains("run R: stored events 4–6"), "{e}");
        let e = lines("node_done {}\n", 1, 9, "m", 0, "R").unwrap_err();
        assert!(
            e.to_string().contains("stored event 9: unknown event"),
            "{e}"
        );
        let e = lines("message {}\n", 2, 1, "m", 0, "R").unwrap_err();
        assert!(e.to_string().contains("1 events stored, 2 expected"), "{e}");
        let e = lines("message {\"a\":02}\n", 1, 5, "m", 0, "R").unwrap_err();
        assert!(
            e.to_string()
                .contains("stored event 5: its data is not JSON"),
            "{e}"
        );
        let e = lines("message {}\nmessage {}\n", 1, 1, "m", 0, "R").unwrap_err();
        assert!(e.to_string().contains("2 events stored, 1 expected"), "{e}");
        for (first, count) in [(1, 0), (1, -3), (i64::MAX, 2), (i64::MIN, i64::MIN)] {
            let e = lines("message {}\n", count, first, "m", 0, "R").unwrap_err();
            assert!(e.to_string().contains("not a count of events"), "{e}");
        }
    }
}
