//! Human text output: one line per finished node with its time, message text as it
//! streams, and a summary. A spinner (stderr, terminals only) shows running nodes.

use std::io::{self, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Renderer, RunEnd};
use crate::engine::{Event, EventKind};

/// Presentation choices for text output.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// ANSI colors.
    pub color: bool,
    /// A spinner on stderr while nodes run.
    pub spinner: bool,
    /// More lines (node starts).
    pub verbose: bool,
    /// Only message text.
    pub quiet: bool,
}

/// Renders events as text for people.
pub struct TextRenderer<W: Write + Send> {
    out: W,
    opts: TextOptions,
    in_message: bool,
    /// Inside a model's reasoning (between `start_to_think` and `end_to_think`).
    thinking: bool,
    nodes: usize,
    spinner: Option<ProgressBar>,
    run_id: String,
}

impl<W: Write + Send> TextRenderer<W> {
    /// A renderer writing to `out`.
    pub fn new(out: W, opts: TextOptions) -> Self {
        let spinner = opts.spinner.then(|| {
            let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            pb.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            pb.enable_steady_tick(Duration::from_millis(100));
            pb
        });
        TextRenderer {
            out,
            opts,
            in_message: false,
            thinking: false,
            nodes: 0,
            spinner,
            run_id: String::new(),
        }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.opts.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    fn end_message(&mut self) -> io::Result<()> {
        if self.in_message {
            self.in_message = false;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn line(&mut self, s: &str) -> io::Result<()> {
        self.end_message()?;
        let out = &mut self.out;
        match &self.spinner {
            Some(pb) => pb.suspend(|| writeln!(out, "{s}")),
            None => writeln!(out, "{s}"),
        }
    }
}

/// Seconds as a short human duration.
pub fn human_duration(secs: f64) -> String {
    let secs = secs.max(0.0);
    if secs < 0.001 {
        format!("{:.0} µs", secs * 1e6)
    } else if secs < 1.0 {
        format!("{:.1} ms", secs * 1e3)
    } else {
        format!("{secs:.2} s")
    }
}

impl<W: Write + Send> Renderer for TextRenderer<W> {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        self.run_id.clone_from(&ev.task_id);
        match &ev.kind {
            EventKind::WorkflowStarted { .. } => {}
            EventKind::NodeStarted(n) => {
                if let Some(pb) = &self.spinner {
                    pb.set_message(format!("{} ({})", n.component_id, n.component_type));
                }
                if self.opts.verbose && !self.opts.quiet {
                    let s =
                        self.paint("2", &format!("▸ {} ({})", n.component_id, n.component_type));
                    self.line(&s)?;
                }
            }
            EventKind::Message(m) => {
                if m.start_to_think == Some(true) {
                    self.thinking = true;
                    return Ok(());
                }
                let mut text = match &m.content {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Null => String::new(),
                    other => other.to_string(),
                };
                if m.end_to_think == Some(true) {
                    // Reasoning stands on lines of its own, apart from the answer.
                    self.thinking = false;
                    if !self.in_message {
                        return Ok(());
                    }
                    text = "\n".to_string();
                } else if self.thinking {
                    text = self.paint("2", &text);
                }
                if text.is_empty() {
                    return Ok(());
                }
                let out = &mut self.out;
                match &self.spinner {
                    Some(pb) => pb.suspend(|| out.write_all(text.as_bytes()))?,
                    None => out.write_all(text.as_bytes())?,
                }
                self.out.flush()?;
                self.in_message = true;
            }
            EventKind::MessageEnd(_) => self.end_message()?,
            EventKind::NodeFinished(n) => {
                self.nodes += 1;
                if self.opts.quiet {
                    return Ok(());
                }
                let mut time = human_duration(n.elapsed_time);
                if let Some(u) = &n.usage {
                    time.push_str(&format!(" · {} tokens", u.total_tokens));
                }
                let s = match &n.error {
                    Some(e) => self.paint(
                        "31",
                        &format!("✗ {} ({}) {time}: {e}", n.component_id, n.component_type),
                    ),
                    None => format!(
                        "{} {} {}",
                        self.paint("32", "✓"),
                        n.component_id,
                        self.paint("2", &format!("({}) {time}", n.component_type))
                    ),
                };
                self.line(&s)?;
            }
            EventKind::UserInputs { inputs, tips } => {
                let fields: Vec<&str> = inputs.keys().map(String::as_str).collect();
                let mut s = format!("? waiting for input: {}", fields.join(", "));
                if !tips.is_empty() {
                    s.push_str(&format!("\n  {tips}"));
                }
                let s = self.paint("33", &s);
                self.line(&s)?;
            }
            EventKind::WorkflowFinished(w) => {
                if !self.opts.quiet {
                    let s = self.paint(
                        "2",
                        &format!(
                            "finished in {} · {} nodes · run {}",
                            human_duration(w.elapsed_time),
                            self.nodes,
                            ev.task_id
                        ),
                    );
                    self.line(&s)?;
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self, end: &RunEnd) -> io::Result<()> {
        if let Some(pb) = self.spinner.take() {
            pb.finish_and_clear();
        }
        self.end_message()?;
        if let RunEnd::Failed { component_id, .. } = end {
            if !self.opts.quiet {
                let s = self.paint(
                    "31",
                    &format!(
                        "failed at {component_id} · {} nodes · run {}",
                        self.nodes, self.run_id
                    ),
                );
                self.line(&s)?;
            }
        }
        let stopped = match end {
            RunEnd::Interrupted => Some("interrupted"),
            RunEnd::Cancelled => Some("cancelled"),
            _ => None,
        };
        if let Some(how) = stopped.filter(|_| !self.opts.quiet) {
            let s = self.paint(
                "33",
                &format!(
                    "{how} · {} nodes · canvas resume {} continues it",
                    self.nodes, self.run_id
                ),
            );
            self.line(&s)?;
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::{MessageChunk, NodeFinished};
    use crate::engine::value::Object;
    use serde_json::json;

    fn ev(kind: EventKind) -> Event {
        Event::test(kind, "run1")
    }

    #[test]
    fn renders_messages_and_nodes() {
        let mut buf = Vec::new();
        let mut r = TextRenderer::new(&mut buf, TextOptions::default());
        r.event(&ev(EventKind::Message(MessageChunk {
            content: json!("Hello "),
            start_to_think: None,
            end_to_think: None,
        })))
        .unwrap();
        r.event(&ev(EventKind::Message(MessageChunk {
            content: json!("world"),
            start_to_think: None,
            end_to_think: None,
        })))
        .unwrap();
        r.event(&ev(EventKind::MessageEnd(Object::new()))).unwrap();
        r.event(&ev(EventKind::NodeFinished(NodeFinished {
            inputs: Object::new(),
            outputs: Object::new(),
            component_id: "Message:M".into(),
            component_name: String::new(),
            component_type: "Message".into(),
            error: None,
            elapsed_time: 0.0123,
            created_at: 0.0,
            usage: None,
        })))
        .unwrap();
        r.finish(&RunEnd::Finished).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "Hello world\n✓ Message:M (Message) 12.3 ms\n"
        );
    }

    #[test]
    fn reasoning_stands_on_its_own_line() {
        let mut buf = Vec::new();
        let mut r = TextRenderer::new(&mut buf, TextOptions::default());
        let chunk = |content: &str, start: Option<bool>, end: Option<bool>| {
            ev(EventKind::Message(MessageChunk {
                content: json!(content),
                start_to_think: start,
                end_to_think: end,
            }))
        };
        r.event(&chunk("", Some(true), None)).unwrap();
        r.event(&chunk("hmm", None, None)).unwrap();
        r.event(&chunk("", None, Some(true))).unwrap();
        r.event(&chunk("Answer", None, None)).unwrap();
        r.event(&ev(EventKind::MessageEnd(Object::new()))).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), "hmm\nAnswer\n");
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(human_duration(0.0000042), "4 µs");
        assert_eq!(human_duration(2.5), "2.50 s");
    }
}
