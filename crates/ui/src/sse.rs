//! RAGFlow's SSE framing (`--format sse`): `data:{json}\n\n` per event, then
//! `data:[DONE]\n\n` (no space after `data:`, as RAGFlow's API writes it).

use std::io::{self, Write};

use super::{Renderer, RunEnd};
use crate::output::write_parts;
use canvas_engine::Event;

/// Writes events as SSE frames.
pub struct SseRenderer<W: Write + Send> {
    out: W,
}

impl<W: Write + Send> SseRenderer<W> {
    /// A renderer writing to `out`.
    pub fn new(out: W) -> Self {
        SseRenderer { out }
    }
}

impl<W: Write + Send> Renderer for SseRenderer<W> {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        self.out.write_all(b"data:")?;
        serde_json::to_writer(&mut self.out, ev)?;
        self.out.write_all(b"\n\n")?;
        self.out.flush()
    }

    fn event_line(&mut self, _ev: &Event, line: &[u8]) -> io::Result<()> {
        write_parts(&mut self.out, [b"data:", line, b"\n\n"])?;
        self.out.flush()
    }

    fn finish(&mut self, _end: &RunEnd) -> io::Result<()> {
        self.out.write_all(b"data:[DONE]\n\n")?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::EventKind;
    use canvas_pyrt::Object;

    #[test]
    fn frames_like_ragflow() {
        let mut buf = Vec::new();
        let mut r = SseRenderer::new(&mut buf);
        let ev = Event {
            kind: EventKind::MessageEnd(Object::new()),
            message_id: "m".into(),
            created_at: 0,
            task_id: "t".into(),
        };
        r.event(&ev).unwrap();
        r.finish(&RunEnd::Finished).unwrap();
        let s = String::from_utf8(buf).unwrap();
        assert!(s.starts_with("data:{\"event\":\"message_end\""), "{s}");
        assert!(s.ends_with("}\n\ndata:[DONE]\n\n"), "{s}");
    }
}
