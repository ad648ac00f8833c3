//! Human text output: a spinner per running node (stderr, terminals only; several at
//! once for parallel branches), message text as it streams (reasoning dimmed), one line
//! per finished node with its time and tokens, and a compact summary.

use std::collections::HashMap;
use std::io::{self, Write};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Renderer, RunEnd, visible};
use canvas_engine::{Event, EventKind};

/// Presentation choices for text output.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// ANSI colors.
    pub color: bool,
    /// Spinners on stderr while nodes run.
    pub spinner: bool,
    /// More lines (node starts).
    pub verbose: bool,
    /// Only message text.
    pub quiet: bool,
    /// A waiting form is asked on the terminal right after the turn, so neither the form
    /// nor a summary is printed: the questions follow.
    pub prompts: bool,
    /// The form the turn stopped at was answered since (a replayed earlier turn): the
    /// summary tells no next step.
    pub answered_later: bool,
}

/// The spinners of running nodes.
struct Spinners {
    multi: MultiProgress,
    style: ProgressStyle,
    running: HashMap<String, ProgressBar>,
    /// Hidden while message text streams, so bars never split a line of text.
    hidden: bool,
}

impl Spinners {
    fn new(color: bool) -> Self {
        let template = if color {
            "{spinner:.cyan} {msg} {elapsed:.dim}"
        } else {
            "{spinner} {msg} {elapsed}"
        };
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        // Known to the terminal module, which erases them if the process must stop at once.
        super::terminal::spinners_shown(Some(&multi));
        Spinners {
            multi,
            style: ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            running: HashMap::new(),
            hidden: false,
        }
    }

    fn start(&mut self, id: &str, label: String) {
        let pb = self.multi.add(ProgressBar::new_spinner());
        pb.set_style(self.style.clone());
        pb.set_message(label);
        pb.enable_steady_tick(Duration::from_millis(100));
        if let Some(old) = self.running.insert(id.to_string(), pb) {
            old.finish_and_clear();
            self.multi.remove(&old);
        }
    }

    fn stop(&mut self, id: &str) {
        if let Some(pb) = self.running.remove(id) {
            pb.finish_and_clear();
            self.multi.remove(&pb);
        }
    }

    fn hide(&mut self) {
        if !self.hidden {
            self.hidden = true;
            let _ = self.multi.clear();
            self.multi.set_draw_target(ProgressDrawTarget::hidden());
        }
    }

    fn show(&mut self) {
        if self.hidden {
            self.hidden = false;
            self.multi.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    fn clear(&mut self) {
        for (_, pb) in self.running.drain() {
            pb.finish_and_clear();
            self.multi.remove(&pb);
        }
        let _ = self.multi.clear();
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        super::terminal::spinners_shown(None);
    }
}

/// Renders events as text for people.
pub struct TextRenderer<W: Write + Send> {
    out: W,
    opts: TextOptions,
    in_message: bool,
    /// Inside a model's reasoning (between `start_to_think` and `end_to_think`).
    thinking: bool,
    nodes: usize,
    tokens: u64,
    /// The turn's span, from the finished nodes' start and end times (live and replayed
    /// streams alike).
    first_start: Option<f64>,
    last_end: f64,
    /// The fields of the form the turn stopped at.
    form_fields: Vec<String>,
    spinners: Option<Spinners>,
    run_id: String,
}

impl<W: Write + Send> TextRenderer<W> {
    /// A renderer writing to `out`.
    pub fn new(out: W, opts: TextOptions) -> Self {
        TextRenderer {
            out,
            opts,
            in_message: false,
            thinking: false,
            nodes: 0,
            tokens: 0,
            first_start: None,
            last_end: 0.0,
            form_fields: Vec::new(),
            spinners: (opts.spinner && !opts.quiet).then(|| Spinners::new(opts.color)),
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
            self.out.flush()?;
            super::terminal::mid_line(false);
        }
        if let Some(sp) = &mut self.spinners {
            sp.show();
        }
        Ok(())
    }

    /// Write text above the spinners.
    fn write(&mut self, text: &str) -> io::Result<()> {
        if !text.is_empty() {
            super::terminal::mid_line(!text.ends_with('\n'));
        }
        let out = &mut self.out;
        match &self.spinners {
            Some(sp) if !sp.hidden => sp.multi.suspend(|| {
                out.write_all(text.as_bytes())?;
                out.flush()
            }),
            _ => {
                out.write_all(text.as_bytes())?;
                out.flush()
            }
        }
    }

    fn line(&mut self, s: &str) -> io::Result<()> {
        self.end_message()?;
        self.write(&format!("{s}\n"))
    }

    /// `4 nodes · 1.25 s · 523 tokens · run 01J…`
    fn tally(&self) -> String {
        let mut parts = vec![format!(
            "{} node{}",
            self.nodes,
            if self.nodes == 1 { "" } else { "s" }
        )];
        if let Some(start) = self.first_start {
            parts.push(human_duration(self.last_end - start));
        }
        if self.tokens > 0 {
            parts.push(format!("{} tokens", self.tokens));
        }
        parts.push(format!("run {}", self.run_id));
        parts.join(" · ")
    }
}

/// Seconds as a short human duration.
pub fn human_duration(secs: f64) -> String {
    let secs = secs.max(0.0);
    if secs < 0.001 {
        format!("{:.0} µs", secs * 1e6)
    } else if secs < 1.0 {
        format!("{:.1} ms", secs * 1e3)
    } else if secs < 60.0 {
        format!("{secs:.2} s")
    } else {
        format!("{}m {:02}s", (secs / 60.0).floor(), (secs % 60.0).floor())
    }
}

impl<W: Write + Send> Renderer for TextRenderer<W> {
    fn event(&mut self, ev: &Event) -> io::Result<()> {
        self.run_id.clone_from(&ev.task_id);
        match &ev.kind {
            EventKind::WorkflowStarted { .. } => {}
            EventKind::NodeStarted(n) => {
                let label = format!(
                    "{} ({})",
                    visible(&n.component_id),
                    visible(&n.component_type)
                );
                if let Some(sp) = &mut self.spinners {
                    sp.start(&n.component_id, label.clone());
                }
                if self.opts.verbose && !self.opts.quiet {
                    let s = self.paint("2", &format!("▸ {label}"));
                    self.line(&s)?;
                }
            }
            EventKind::Message(m) => {
                if m.start_to_think == Some(true) {
                    self.thinking = true;
                    return Ok(());
                }
                // Model text and echoed queries may carry escape sequences: shown, never
                // obeyed.
                let mut text = match &m.content {
                    serde_json::Value::String(s) => visible(s).into_owned(),
                    serde_json::Value::Null => String::new(),
                    other => visible(&other.to_string()).into_owned(),
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
                if let Some(sp) = &mut self.spinners {
                    sp.hide();
                }
                self.write(&text)?;
                self.in_message = true;
            }
            EventKind::MessageEnd(_) => self.end_message()?,
            EventKind::NodeFinished(n) => {
                self.nodes += 1;
                if let Some(u) = &n.usage {
                    self.tokens += u.total_tokens;
                }
                if n.created_at > 0.0 {
                    let start = self.first_start.get_or_insert(n.created_at);
                    *start = start.min(n.created_at);
                    self.last_end = self.last_end.max(n.created_at + n.elapsed_time);
                }
                if let Some(sp) = &mut self.spinners {
                    sp.stop(&n.component_id);
                }
                if self.opts.quiet {
                    return Ok(());
                }
                let mut time = human_duration(n.elapsed_time);
                if let Some(u) = &n.usage {
                    time.push_str(&format!(" · {} tokens", u.total_tokens));
                }
                let (id, ty) = (visible(&n.component_id), visible(&n.component_type));
                let s = match &n.error {
                    Some(e) => self.paint("31", &format!("✗ {id} ({ty}) {time}: {}", visible(e))),
                    None => format!(
                        "{} {id} {}",
                        self.paint("32", "✓"),
                        self.paint("2", &format!("({ty}) {time}"))
                    ),
                };
                self.line(&s)?;
            }
            EventKind::UserInputs { inputs, tips } => {
                self.form_fields = inputs.keys().map(|k| visible(k).into_owned()).collect();
                // A form asked right away shows its own tips and fields.
                if self.opts.quiet || self.opts.prompts {
                    return Ok(());
                }
                let mut s = format!("? form: {}", self.form_fields.join(", "));
                if !tips.is_empty() {
                    s.push_str(&format!("\n  {}", visible(tips)));
                }
                let s = self.paint("33", &s);
                self.line(&s)?;
            }
            EventKind::WorkflowFinished(w) => {
                self.tokens = self.tokens.max(w.usage.total_tokens);
                if self.first_start.is_none() && w.elapsed_time > 0.0 {
                    self.first_start = Some(0.0);
                    self.last_end = w.elapsed_time;
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self, end: &RunEnd) -> io::Result<()> {
        if let Some(sp) = &mut self.spinners {
            sp.clear();
        }
        self.spinners = None;
        self.end_message()?;
        let asked_here = self.opts.prompts && *end == RunEnd::Waiting;
        if self.opts.quiet || asked_here || *end == RunEnd::Answered {
            return self.out.flush();
        }
        let tally = self.tally();
        let summary = match end {
            RunEnd::Finished => self.paint("32", &format!("✓ finished · {tally}")),
            RunEnd::Failed { component_id, .. } => self.paint(
                "31",
                &format!("✗ failed at {} · {tally}", visible(component_id)),
            ),
            RunEnd::Crashed => self.paint("31", &format!("✗ stopped · {tally}")),
            RunEnd::Waiting if self.opts.answered_later => {
                self.paint("33", &format!("⏸ waited for input · {tally}"))
            }
            RunEnd::Waiting => {
                let answers: Vec<String> = self
                    .form_fields
                    .iter()
                    .map(|k| format!(" -i {k}=…"))
                    .collect();
                let s = format!(
                    "⏸ waiting for input · {tally}\n  next: canvas resume {}{}",
                    self.run_id,
                    answers.concat()
                );
                self.paint("33", &s)
            }
            RunEnd::Interrupted => self.paint("33", &format!("⏸ interrupted · {tally}")),
            RunEnd::Answered => String::new(),
            RunEnd::Cancelled => self.paint("33", &format!("⏸ cancelled · {tally}")),
        };
        self.line(&summary)?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::events::{MessageChunk, NodeFinished};
    use canvas_pyrt::Object;
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
            outputs: Object::new().into(),
            component_id: "Message:M".into(),
            component_name: "".into(),
            component_type: "Message".into(),
            error: None,
            elapsed_time: 0.0123,
            created_at: 100.0,
            usage: None,
        })))
        .unwrap();
        r.finish(&RunEnd::Finished).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "Hello world\n✓ Message:M (Message) 12.3 ms\n✓ finished · 1 node · 12.3 ms · run run1\n"
        );
    }

    fn finished(id: &str, start: f64, secs: f64, tokens: Option<u64>) -> Event {
        ev(EventKind::NodeFinished(NodeFinished {
            inputs: Object::new(),
            outputs: Object::new().into(),
            component_id: id.into(),
            component_name: "".into(),
            component_type: "LLM".into(),
            error: None,
            elapsed_time: secs,
            created_at: start,
            usage: tokens.map(|t| canvas_engine::events::Usage {
                prompt_tokens: t - 1,
                completion_tokens: 1,
                total_tokens: t,
                calls: 1,
            }),
        }))
    }

    fn form() -> Event {
        let mut inputs = Object::new();
        inputs.insert("days".into(), json!({"type": "integer"}));
        inputs.insert("pace".into(), json!({"type": "options"}));
        ev(EventKind::UserInputs {
            inputs,
            tips: String::new(),
        })
    }

    #[test]
    fn a_waiting_summary_spans_parallel_nodes_and_says_how_to_answer() {
        let mut buf = Vec::new();
        let mut r = TextRenderer::new(&mut buf, TextOptions::default());
        // Two nodes that overlapped: 10.0–10.5 and 10.1–11.25; the turn spans 1.25 s.
        r.event(&finished("LLM:A", 10.0, 0.5, Some(30))).unwrap();
        r.event(&finished("LLM:B", 10.1, 1.15, Some(12))).unwrap();
        r.event(&form()).unwrap();
        r.finish(&RunEnd::Waiting).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let tail: Vec<&str> = text.lines().skip(2).collect();
        assert_eq!(
            tail,
            [
                "? form: days, pace",
                "⏸ waiting for input · 2 nodes · 1.25 s · 42 tokens · run run1",
                "  next: canvas resume run1 -i days=… -i pace=…",
            ]
        );
    }

    #[test]
    fn a_form_asked_on_the_terminal_is_left_to_the_prompt_and_quiet_gets_no_summary() {
        let mut buf = Vec::new();
        let opts = TextOptions {
            prompts: true,
            ..TextOptions::default()
        };
        let mut r = TextRenderer::new(&mut buf, opts);
        r.event(&form()).unwrap();
        r.finish(&RunEnd::Waiting).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), "");

        let mut buf = Vec::new();
        let quiet = TextOptions {
            quiet: true,
            ..TextOptions::default()
        };
        let mut r = TextRenderer::new(&mut buf, quiet);
        r.event(&finished("LLM:A", 10.0, 0.5, Some(30))).unwrap();
        r.event(&form()).unwrap();
        r.finish(&RunEnd::Waiting).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), "");
    }

    #[test]
    fn a_replayed_turn_whose_form_was_answered_tells_no_next_step() {
        let mut buf = Vec::new();
        let opts = TextOptions {
            answered_later: true,
            ..TextOptions::default()
        };
        let mut r = TextRenderer::new(&mut buf, opts);
        r.event(&form()).unwrap();
        r.finish(&RunEnd::Waiting).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "? form: days, pace\n⏸ waited for input · 0 nodes · run run1\n"
        );
    }

    #[test]
    fn colors_only_when_asked() {
        let mut plain = Vec::new();
        let mut r = TextRenderer::new(&mut plain, TextOptions::default());
        r.event(&finished("LLM:A", 10.0, 0.5, None)).unwrap();
        r.finish(&RunEnd::Finished).unwrap();
        assert!(!String::from_utf8(plain).unwrap().contains('\x1b'));
        let mut colored = Vec::new();
        let opts = TextOptions {
            color: true,
            ..TextOptions::default()
        };
        let mut r = TextRenderer::new(&mut colored, opts);
        r.event(&finished("LLM:A", 10.0, 0.5, None)).unwrap();
        r.finish(&RunEnd::Finished).unwrap();
        assert!(
            String::from_utf8(colored)
                .unwrap()
                .contains("\x1b[32m✓\x1b[0m")
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
    fn control_characters_are_shown_not_written() {
        let mut buf = Vec::new();
        let mut r = TextRenderer::new(&mut buf, TextOptions::default());
        r.event(&ev(EventKind::Message(MessageChunk {
            content: json!("hi\x1b[2J\x1b]0;owned\x07\nnext\tline"),
            start_to_think: None,
            end_to_think: None,
        })))
        .unwrap();
        r.event(&ev(EventKind::MessageEnd(Object::new()))).unwrap();
        let mut failed = finished("LLM:\x1bA", 10.0, 0.5, None);
        if let EventKind::NodeFinished(n) = &mut failed.kind {
            n.error = Some("bad\rworse".into());
        }
        r.event(&failed).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "hi^[[2J^[]0;owned^G\nnext\tline\n✗ LLM:^[A (LLM) 500.0 ms: bad^Mworse\n"
        );
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(human_duration(0.0000042), "4 µs");
        assert_eq!(human_duration(2.5), "2.50 s");
        assert_eq!(human_duration(125.0), "2m 05s");
    }
}
