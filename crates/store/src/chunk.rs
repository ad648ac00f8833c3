//! The compact form of stored events: a chunk holds a run of one turn's events as
//! `NAME DATA\n` lines (the event name, a space, its `data` JSON), with the envelope they
//! share (`message_id`, `created_at`; `task_id` is the run id) kept once, and the lines
//! LZ4-compressed. Reading a chunk rebuilds each event's JSON line byte for byte
//! ([`canvas_engine::events::wire`]).

use canvas_engine::events::wire::{self, Envelope};

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
}

/// The stored bytes of `text`.
pub(crate) fn compress(text: &str) -> Vec<u8> {
    lz4_flex::compress_prepend_size(text.as_bytes())
}

/// The text of stored bytes (`what` names them in errors).
pub(crate) fn decompress(bytes: &[u8], what: impl Fn() -> String) -> Result<String> {
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
    let last = first + count - 1;
    let what = || format!("run {run_id}: stored events {first}–{last}");
    let env = Envelope {
        message_id,
        created_at,
        task_id: run_id,
    };
    let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    let mut buf = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let seq = first + i as i64;
        let bad =
            |why: &str| StoreError::Corrupt(format!("run {run_id}: stored event {seq}: {why}"));
        let (name, data) = l.split_once(' ').ok_or_else(|| bad("no event name"))?;
        if !wire::is_event_name(name) {
            return Err(bad(&format!("unknown event {name:?}")));
        }
        buf.clear();
        wire::write_line(name, data.as_bytes(), &env, &mut buf);
        // Made of a name checked above, stored UTF-8 and JSON punctuation.
        out.push(String::from_utf8(std::mem::take(&mut buf)).map_err(|_| bad("not UTF-8"))?);
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
    }
}
