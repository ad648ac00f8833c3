//! Output: renderers turn events into text, JSON lines or SSE frames. They write to any
//! `io::Write`, so tests render into a buffer. They never decide control flow. Input:
//! terminal prompts ([`prompt`]) and the inputs given up front ([`inputs`]), typed by
//! the fields a canvas declares.

mod escape;
pub mod inputs;
mod jsonl;
pub mod output;
pub mod prompt;
mod sse;
pub mod terminal;
mod text;

use std::io;

use canvas_engine::Event;

pub use escape::visible;
pub use jsonl::JsonlRenderer;
pub use output::{Gates, Output, OutputWriter};
pub use sse::SseRenderer;
pub use text::{TextOptions, TextRenderer};

/// How a turn ended, for the closing lines of a renderer.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// `workflow_finished` was emitted.
    Finished,
    /// An unhandled component error stopped the turn.
    Failed {
        /// The failing component.
        component_id: String,
        /// Its error.
        error: String,
    },
    /// The run waits for a form.
    Waiting,
    /// The run reached a form that answers given up front (`-i`) cover; it goes on at
    /// once in this process.
    Answered,
    /// The run crashed where RAGFlow crashes (or hit something unsupported).
    Crashed,
    /// Ctrl-C stopped the run at a node boundary; resumable.
    Interrupted,
    /// `canvas cancel` stopped the run at a node boundary; resumable.
    Cancelled,
}

/// Turns events into output.
pub trait Renderer: Send {
    /// Render one event.
    fn event(&mut self, ev: &Event) -> io::Result<()>;
    /// Render one event already serialised to its JSON `line` (no newline): renderers
    /// of JSON use the bytes as they are rather than serialise the event again.
    fn event_line(&mut self, ev: &Event, line: &[u8]) -> io::Result<()> {
        let _ = line;
        self.event(ev)
    }
    /// Write whatever closes the stream.
    fn finish(&mut self, end: &RunEnd) -> io::Result<()>;
    /// True when [`Renderer::event_line`] writes the line as it is and a newline, and
    /// nothing else: its caller may then write such lines to the output itself, many
    /// at a time.
    fn lines_as_is(&self) -> bool {
        false
    }
}
