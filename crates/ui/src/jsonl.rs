//! One JSON event per line, nothing else (`--format jsonl`).

use std::io::{self, Write};

use super::{Renderer, RunEnd};
use crate::output::write_parts;
use canvas_engine::Event;

/// Writes each event as one line of JSON.
pub struct JsonlRenderer<W: Write + Send> {
    out: W,
}

impl<W: Write + Send> JsonlRenderer<W> {
    /// A renderer writing to `out`.
    pub fn new(out: W) -> Self {
        JsonlRenderer { out }
    }
}

impl<W: Write + Send> Renderer for JsonlRenderer<W> {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, ev)?;
        self.out.write_all(b"\n")?;
        // Flushed per event so a consumer sees each one as it happens.
        self.out.flush()
    }

    fn event_line(&mut self, _ev: &Event, line: &[u8]) -> io::Result<()> {
        write_parts(&mut self.out, [line, b"\n"])?;
        self.out.flush()
    }

    fn finish(&mut self, _end: &RunEnd) -> io::Result<()> {
        self.out.flush()
    }

    fn lines_as_is(&self) -> bool {
        true
    }
}
