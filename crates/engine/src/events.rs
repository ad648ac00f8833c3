//! The seven events RAGFlow's canvas emits (`engine.md` §5), in its JSON shape:
//! `{"event", "message_id", "created_at", "task_id", "data"}`.
//!
//! Payloads are fixed at emission time, as RAGFlow's API serialises them then: they own
//! their values, or share a component's outputs with the run state, which copies a
//! shared component before changing it (`Arc::make_mut`). Later mutations of the run
//! state never change an emitted event.

use std::borrow::Cow;
use std::sync::Arc;

pub use super::usage::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use canvas_pyrt::Object;

/// One event with RAGFlow's envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The payload, tagged with the event name.
    #[serde(flatten)]
    pub kind: EventKind,
    /// One id per turn (RAGFlow: uuid1 hex).
    pub message_id: String,
    /// Unix seconds at turn start.
    pub created_at: i64,
    /// The run id.
    pub task_id: String,
}

#[cfg(any(test, feature = "testkit"))]
impl Event {
    /// An event of run `run` with a fixed message id and time (tests).
    pub fn test(kind: EventKind, run: &str) -> Event {
        Event {
            kind,
            message_id: "m".into(),
            created_at: 0,
            task_id: run.into(),
        }
    }
}

/// The event payloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum EventKind {
    /// A turn started (not emitted when a form is answered).
    WorkflowStarted {
        /// The run's `inputs`.
        inputs: Value,
    },
    /// A component is about to run.
    NodeStarted(NodeStarted),
    /// A chunk of message text.
    Message(MessageChunk),
    /// A message is complete.
    MessageEnd(Object),
    /// A component finished.
    NodeFinished(NodeFinished),
    /// The run waits for a form.
    UserInputs {
        /// Fields still to answer.
        inputs: Object,
        /// The form's tips.
        tips: String,
    },
    /// The turn finished.
    WorkflowFinished(WorkflowFinished),
}

/// `node_started` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeStarted {
    /// Always null.
    pub inputs: Value,
    /// Unix seconds.
    pub created_at: i64,
    /// Component id (shared with the canvas: a node's events copy no id).
    pub component_id: Arc<str>,
    /// Human name from the graph, or "".
    pub component_name: Arc<str>,
    /// Class name.
    pub component_type: Arc<str>,
    /// Progress text.
    pub thoughts: Cow<'static, str>,
}

/// `message` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageChunk {
    /// The text (may be null or non-string for a non-streamed Message).
    pub content: Value,
    /// Set on the `<think>` marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_to_think: Option<bool>,
    /// Set on the `</think>` marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_to_think: Option<bool>,
}

/// `node_finished` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeFinished {
    /// Input values.
    pub inputs: Object,
    /// Every output.
    pub outputs: Outputs,
    /// Component id.
    pub component_id: Arc<str>,
    /// Human name, or "".
    pub component_name: Arc<str>,
    /// Class name.
    pub component_type: Arc<str>,
    /// The `_ERROR` output, or null.
    pub error: Option<String>,
    /// Seconds since the component started.
    pub elapsed_time: f64,
    /// When the component started (Unix seconds with fractions).
    pub created_at: f64,
    /// Tokens this component's model calls used (ours; model components only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// The outputs in a `node_finished`: shared with the run state's copy of the component
/// while the event is sent (a node's event then copies no output), or owned (an event
/// read back, or built by hand). Reads as the [`Object`] it holds. The run state
/// changes a shared component only through `Arc::make_mut`, which copies it first, so
/// an event never changes after it was emitted.
#[derive(Clone, Default)]
pub struct Outputs(OutputsRepr);

#[derive(Clone)]
enum OutputsRepr {
    Owned(Object),
    Node(std::sync::Arc<super::state::NodeState>),
}

impl Default for OutputsRepr {
    fn default() -> Self {
        OutputsRepr::Owned(Object::new())
    }
}

impl Outputs {
    /// The outputs of component state `node`, shared with it.
    pub fn of_node(node: std::sync::Arc<super::state::NodeState>) -> Outputs {
        Outputs(OutputsRepr::Node(node))
    }

    /// The outputs as an owned map (copied only when shared).
    pub fn into_object(self) -> Object {
        match self.0 {
            OutputsRepr::Owned(o) => o,
            OutputsRepr::Node(n) => std::sync::Arc::unwrap_or_clone(n).outputs,
        }
    }
}

impl std::ops::Deref for Outputs {
    type Target = Object;

    fn deref(&self) -> &Object {
        match &self.0 {
            OutputsRepr::Owned(o) => o,
            OutputsRepr::Node(n) => &n.outputs,
        }
    }
}

impl From<Object> for Outputs {
    fn from(o: Object) -> Outputs {
        Outputs(OutputsRepr::Owned(o))
    }
}

impl std::fmt::Debug for Outputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl PartialEq for Outputs {
    fn eq(&self, other: &Outputs) -> bool {
        **self == **other
    }
}

impl Serialize for Outputs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Outputs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Outputs, D::Error> {
        Object::deserialize(d).map(Outputs::from)
    }
}

/// `workflow_finished` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowFinished {
    /// The run's `inputs`.
    pub inputs: Value,
    /// Outputs of the last component of the path (or the cancel text).
    pub outputs: Value,
    /// Seconds the turn took.
    pub elapsed_time: f64,
    /// When the turn started (Unix seconds with fractions).
    pub created_at: f64,
    /// Token usage of model calls.
    pub usage: Usage,
}

impl EventKind {
    /// RAGFlow's event name.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::WorkflowStarted { .. } => "workflow_started",
            EventKind::NodeStarted(_) => "node_started",
            EventKind::Message(_) => "message",
            EventKind::MessageEnd(_) => "message_end",
            EventKind::NodeFinished(_) => "node_finished",
            EventKind::UserInputs { .. } => "user_inputs",
            EventKind::WorkflowFinished(_) => "workflow_finished",
        }
    }
}

/// The serialised form of events: RAGFlow's JSON line, built from its parts so an event
/// is serialised once and the store can keep its payload without the envelope that
/// every event of a turn repeats.
pub mod wire {

    use std::collections::HashMap;
    use std::sync::Arc;

    use serde::ser::{Serialize, SerializeMap, Serializer};
    use serde_json::Value;

    use super::{Event, EventKind, MessageChunk, NodeFinished, NodeStarted};

    /// What every event of one turn shares: `message_id`, `created_at`, `task_id`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Envelope<'a> {
        /// One id per turn.
        pub message_id: &'a str,
        /// Unix seconds at turn start.
        pub created_at: i64,
        /// The run id.
        pub task_id: &'a str,
    }

    impl<'a> Envelope<'a> {
        /// The envelope of `ev`.
        pub fn of(ev: &'a Event) -> Envelope<'a> {
            Envelope {
                message_id: &ev.message_id,
                created_at: ev.created_at,
                task_id: &ev.task_id,
            }
        }
    }

    /// The `data` member of an event, serialised alone (the shape serde gives it inside
    /// the envelope).
    struct Data<'a>(&'a EventKind);

    impl Serialize for Data<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self.0 {
                EventKind::WorkflowStarted { inputs } => {
                    let mut m = s.serialize_map(Some(1))?;
                    m.serialize_entry("inputs", inputs)?;
                    m.end()
                }
                EventKind::NodeStarted(d) => d.serialize(s),
                EventKind::Message(d) => d.serialize(s),
                EventKind::MessageEnd(d) => d.serialize(s),
                EventKind::NodeFinished(d) => d.serialize(s),
                EventKind::UserInputs { inputs, tips } => {
                    let mut m = s.serialize_map(Some(2))?;
                    m.serialize_entry("inputs", inputs)?;
                    m.serialize_entry("tips", tips)?;
                    m.end()
                }
                EventKind::WorkflowFinished(d) => d.serialize(s),
            }
        }
    }

    /// Append the JSON of `kind`'s `data` to `out`.
    pub fn write_data(kind: &EventKind, out: &mut String) -> serde_json::Result<()> {
        write_kind(kind, None, out)
    }

    /// Writes events' `data` as [`write_data`] does, keeping the text of each
    /// component's three members (`component_id`, `component_name`, `component_type`)
    /// once written: a node's events all repeat them, and escaping them again was a
    /// third of the writing of a node's event. It keeps at most 128 components at a
    /// time.
    #[derive(Debug, Default)]
    pub struct DataWriter {
        /// Keyed by the address of the id's text, which the entry keeps alive (so no
        /// other id can take that address while it is here).
        idents: HashMap<usize, Ident, foldhash::fast::RandomState>,
    }

    /// One component's members, as written.
    #[derive(Debug)]
    struct Ident {
        id: Arc<str>,
        name: Arc<str>,
        class: Arc<str>,
        text: Box<str>,
    }

    /// Most components a [`DataWriter`] keeps before it forgets them all: a loop's body
    /// stays in it, and a long chain of components that each run once reuses the
    /// memory of the ones before (keeping all 1,002 of perf_a's took about 40 more page
    /// faults a run).
    const IDENTS_KEPT: usize = 128;

    impl DataWriter {
        /// Append the JSON of `kind`'s `data` to `out` (what [`write_data`] writes).
        pub fn write(&mut self, kind: &EventKind, out: &mut String) -> serde_json::Result<()> {
            write_kind(kind, Some(self), out)
        }

        /// The three members of the component of `id`, `name` and `class`, to `out`.
        fn component(
            &mut self,
            id: &Arc<str>,
            name: &Arc<str>,
            class: &Arc<str>,
            out: &mut String,
        ) {
            let key = Arc::as_ptr(id).cast::<u8>() as usize;
            if let Some(i) = self.idents.get(&key) {
                // The same id text (the key); its name and class are the node's own,
                // shared the same way (an event built by hand may pair them otherwise).
                if Arc::ptr_eq(&i.id, id)
                    && Arc::ptr_eq(&i.name, name)
                    && Arc::ptr_eq(&i.class, class)
                {
                    out.push_str(&i.text);
                    return;
                }
            } else {
                if self.idents.len() >= IDENTS_KEPT {
                    self.idents.clear();
                }
                let start = out.len();
                component(id, name, class, out);
                let ident = Ident {
                    id: id.clone(),
                    name: name.clone(),
                    class: class.clone(),
                    text: out[start..].into(),
                };
                self.idents.insert(key, ident);
                return;
            }
            component(id, name, class, out);
        }
    }

    fn write_kind(
        kind: &EventKind,
        idents: Option<&mut DataWriter>,
        out: &mut String,
    ) -> serde_json::Result<()> {
        match kind {
            // The two events of every node are written here: serde's generic path was
            // most of their cost. Byte for byte what serde writes (tested).
            EventKind::NodeStarted(d) => node_started(d, idents, out),
            EventKind::NodeFinished(d) => node_finished(d, idents, out)?,
            // One per streamed chunk: a long answer's thousands.
            EventKind::Message(d) => message(d, out),
            _ => out.push_str(&serde_json::to_string(&Data(kind))?),
        }
        Ok(())
    }

    /// The component members of a node's event, kept by `idents` when there is one.
    fn members(
        id: &Arc<str>,
        name: &Arc<str>,
        class: &Arc<str>,
        idents: Option<&mut DataWriter>,
        out: &mut String,
    ) {
        match idents {
            Some(w) => w.component(id, name, class, out),
            None => component(id, name, class, out),
        }
    }

    fn message(d: &MessageChunk, out: &mut String) {
        out.push_str("{\"content\":");
        value(&d.content, out);
        if let Some(b) = d.start_to_think {
            out.push_str(",\"start_to_think\":");
            out.push_str(if b { "true" } else { "false" });
        }
        if let Some(b) = d.end_to_think {
            out.push_str(",\"end_to_think\":");
            out.push_str(if b { "true" } else { "false" });
        }
        out.push('}');
    }

    fn node_started(d: &NodeStarted, idents: Option<&mut DataWriter>, out: &mut String) {
        out.push_str("{\"inputs\":");
        value(&d.inputs, out);
        out.push_str(",\"created_at\":");
        int(d.created_at, out);
        members(
            &d.component_id,
            &d.component_name,
            &d.component_type,
            idents,
            out,
        );
        out.push_str(",\"thoughts\":");
        json_str(&d.thoughts, out);
        out.push('}');
    }

    /// The three members both node events give their component, in their order.
    fn component(id: &str, name: &str, class: &str, out: &mut String) {
        out.push_str(",\"component_id\":");
        json_str(id, out);
        out.push_str(",\"component_name\":");
        json_str(name, out);
        out.push_str(",\"component_type\":");
        json_str(class, out);
    }

    fn node_finished(
        d: &NodeFinished,
        idents: Option<&mut DataWriter>,
        out: &mut String,
    ) -> serde_json::Result<()> {
        out.push_str("{\"inputs\":");
        object(&d.inputs, out);
        out.push_str(",\"outputs\":");
        let created = outputs(&d.outputs, out);
        members(
            &d.component_id,
            &d.component_name,
            &d.component_type,
            idents,
            out,
        );
        out.push_str(",\"error\":");
        match &d.error {
            Some(e) => json_str(e, out),
            None => out.push_str("null"),
        }
        out.push_str(",\"elapsed_time\":");
        float(d.elapsed_time, out);
        out.push_str(",\"created_at\":");
        match created {
            // A float's digits are at most 24 bytes.
            Some((bits, at)) if bits == d.created_at.to_bits() && at.len() <= 32 => {
                let mut digits = [0u8; 32];
                let n = at.len();
                digits[..n].copy_from_slice(&out.as_bytes()[at]);
                match std::str::from_utf8(&digits[..n]) {
                    Ok(text) => out.push_str(text),
                    Err(_) => float(d.created_at, out),
                }
            }
            _ => float(d.created_at, out),
        }
        if let Some(usage) = &d.usage {
            out.push_str(",\"usage\":");
            out.push_str(&serde_json::to_string(usage)?);
        }
        out.push('}');
        Ok(())
    }

    /// A JSON value as serde_json writes it (compact; object members in their order).
    fn value(v: &Value, out: &mut String) {
        match v {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Number(n) => number(n, out),
            Value::String(s) => json_str(s, out),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    value(item, out);
                }
                out.push(']');
            }
            Value::Object(m) => object(m, out),
        }
    }

    fn object(m: &serde_json::Map<String, Value>, out: &mut String) {
        out.push('{');
        for (i, (k, v)) in m.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_str(k, out);
            out.push(':');
            value(v, out);
        }
        out.push('}');
    }

    /// [`object`] for a node's outputs, also giving where it wrote a `_created_time`
    /// float and that float's bits: the event's `created_at` is the same time, and a
    /// float's shortest digits are a good part of the cost of an event.
    fn outputs(
        m: &serde_json::Map<String, Value>,
        out: &mut String,
    ) -> Option<(u64, std::ops::Range<usize>)> {
        let mut created = None;
        out.push('{');
        for (i, (k, v)) in m.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_str(k, out);
            out.push(':');
            let start = out.len();
            value(v, out);
            if let Value::Number(n) = v {
                if n.is_f64() && k == "_created_time" {
                    created = n.as_f64().map(|f| (f.to_bits(), start..out.len()));
                }
            }
        }
        out.push('}');
        created
    }

    /// A JSON number as serde_json writes it.
    fn number(n: &serde_json::Number, out: &mut String) {
        if let Some(u) = n.as_u64() {
            out.push_str(itoa::Buffer::new().format(u));
        } else if let Some(i) = n.as_i64() {
            int(i, out);
        } else if let Some(f) = n.as_f64() {
            float(f, out);
        }
    }

    /// An integer as serde_json writes it.
    fn int(i: i64, out: &mut String) {
        out.push_str(itoa::Buffer::new().format(i));
    }

    /// A float as serde_json writes it: its shortest digits (zmij, serde_json's own
    /// writer), or `null` when it is not finite.
    fn float(f: f64, out: &mut String) {
        if f.is_finite() {
            out.push_str(zmij::Buffer::new().format_finite(f));
        } else {
            out.push_str("null");
        }
    }

    /// Append the event line (no newline) made of its name, its serialised `data` and
    /// the envelope to `out`: byte for byte what `serde_json::to_string(&event)` gives.
    pub fn write_line(name: &str, data: &[u8], env: &Envelope<'_>, out: &mut Vec<u8>) {
        line_head(name, data, out);
        let mut tail = String::new();
        envelope(env, &mut tail);
        out.extend_from_slice(tail.as_bytes());
    }

    /// [`write_line`] with the envelope's text made once by [`EnvelopeText`].
    pub fn write_line_with(name: &str, data: &[u8], envelope: &[u8], out: &mut Vec<u8>) {
        line_head(name, data, out);
        out.extend_from_slice(envelope);
    }

    fn line_head(name: &str, data: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"event\":\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\",\"data\":");
        out.extend_from_slice(data);
    }

    /// What follows an event's data on its line: the envelope's members and the end.
    fn envelope(env: &Envelope<'_>, out: &mut String) {
        out.push_str(",\"message_id\":");
        json_str(env.message_id, out);
        out.push_str(",\"created_at\":");
        int(env.created_at, out);
        out.push_str(",\"task_id\":");
        json_str(env.task_id, out);
        out.push('}');
    }

    /// The end of the lines of one envelope, written once and reused while the envelope
    /// stays the same (every event of a turn shares it).
    #[derive(Debug, Clone, Default)]
    pub struct EnvelopeText {
        message_id: String,
        created_at: i64,
        task_id: String,
        text: String,
    }

    impl EnvelopeText {
        /// The text that ends a line of `env` (see [`write_line_with`]).
        pub fn of(&mut self, env: &Envelope<'_>) -> &[u8] {
            let same = !self.text.is_empty()
                && self.created_at == env.created_at
                && self.message_id == env.message_id
                && self.task_id == env.task_id;
            if !same {
                self.message_id = env.message_id.to_string();
                self.created_at = env.created_at;
                self.task_id = env.task_id.to_string();
                self.text.clear();
                envelope(env, &mut self.text);
            }
            self.text.as_bytes()
        }
    }

    /// `s` as a JSON string, as serde_json writes it. Ids (the envelope's strings)
    /// need no escape: they are copied whole instead of byte by byte.
    fn json_str(s: &str, out: &mut String) {
        out.push('"');
        if needs_escape(s.as_bytes()) {
            escaped(s, out);
        } else {
            out.push_str(s);
        }
        out.push('"');
    }

    /// The inside of `s` as a JSON string, with serde_json's escapes: `\"`, `\\`, the
    /// short forms of backspace, tab, line feed, form feed and carriage return, and
    /// `\u00xx` (lowercase hex) for the other control characters.
    fn escaped(s: &str, out: &mut String) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut from = 0;
        for (i, &b) in s.as_bytes().iter().enumerate() {
            let short = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                0x08 => "\\b",
                b'\t' => "\\t",
                b'\n' => "\\n",
                0x0c => "\\f",
                b'\r' => "\\r",
                0..0x20 => "",
                _ => continue,
            };
            // Escaped bytes are ASCII: the text before them ends on a char boundary.
            out.push_str(&s[from..i]);
            if short.is_empty() {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            } else {
                out.push_str(short);
            }
            from = i + 1;
        }
        out.push_str(&s[from..]);
    }

    /// True when `b` holds a byte serde_json escapes: a control character, `"` or `\\`.
    /// Eight bytes at a time (a byte-wise test was most of the writing of an event).
    fn needs_escape(b: &[u8]) -> bool {
        const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
        const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
        // Exact "some byte is below n" / "some byte is zero" word tests (n <= 128).
        let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH != 0;
        let zero = |x: u64| below(x, 1);
        let mut words = b.chunks_exact(8);
        for w in &mut words {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            let x = u64::from_ne_bytes(a);
            if below(x, 0x20) || zero(x ^ (ONES * 0x22)) || zero(x ^ (ONES * 0x5c)) {
                return true;
            }
        }
        words
            .remainder()
            .iter()
            .any(|&c| c < 0x20 || c == b'"' || c == b'\\')
    }

    /// True when `name` is one of the seven event names (what a stored payload may be
    /// tagged with).
    pub fn is_event_name(name: &str) -> bool {
        matches!(
            name,
            "workflow_started"
                | "node_started"
                | "message"
                | "message_end"
                | "node_finished"
                | "user_inputs"
                | "workflow_finished"
        )
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Every byte value at every position of words and their tails (lengths 0 to
        /// 19): the word test agrees with the byte test, and the string written is
        /// serde_json's.
        #[test]
        fn escapes_are_found_wherever_they_are() {
            let bytewise = |b: &[u8]| b.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\');
            for len in 0..20 {
                for pos in 0..len.max(1) {
                    for c in 0..=255u8 {
                        let mut b = vec![b'a'; len];
                        if len > 0 {
                            b[pos] = c;
                        }
                        assert_eq!(needs_escape(&b), bytewise(&b), "{b:?}");
                        if let Ok(s) = std::str::from_utf8(&b) {
                            let mut out = String::new();
                            json_str(s, &mut out);
                            assert_eq!(out, serde_json::to_string(s).unwrap(), "{s:?}");
                        }
                    }
                }
            }
            // Bytes around the limits beside each other, and text that is not ASCII.
            for s in ["\x1f\x20\x21\"#\\]", "é\u{7f}\u{80}ÿ", "日本語のテキスト\n"] {
                assert!(needs_escape(s.as_bytes()) == bytewise(s.as_bytes()));
            }
        }
    }
}

/// Where the scheduler sends events. An error stops the run at the next boundary.
pub trait EventSink: Send {
    /// Take one event.
    fn emit(&mut self, ev: &Event) -> std::io::Result<()>;

    /// The state after a component finished (its `node_finished` was just emitted):
    /// a durable sink commits it with the events so far.
    fn checkpoint(&mut self, _state: &super::state::RunState) -> std::io::Result<()> {
        Ok(())
    }
}

/// A sink that keeps events in memory (tests, benchmarks).
#[derive(Debug, Default)]
pub struct VecSink(pub Vec<Event>);

impl EventSink for VecSink {
    fn emit(&mut self, ev: &Event) -> std::io::Result<()> {
        self.0.push(ev.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialises_in_ragflow_shape_and_round_trips() {
        let ev = Event {
            kind: EventKind::Message(MessageChunk {
                content: json!("hi"),
                start_to_think: None,
                end_to_think: None,
            }),
            message_id: "m".into(),
            created_at: 1,
            task_id: "t".into(),
        };
        let s = serde_json::to_value(&ev).unwrap();
        assert_eq!(
            s,
            json!({"event": "message", "data": {"content": "hi"}, "message_id": "m", "created_at": 1, "task_id": "t"})
        );
        let back: Event = serde_json::from_value(s).unwrap();
        assert_eq!(back, ev);
        let end = Event {
            kind: EventKind::MessageEnd(Object::new()),
            ..ev
        };
        assert_eq!(serde_json::to_value(&end).unwrap()["data"], json!({}));
    }

    /// One event of every kind, with the values that need escaping or special floats.
    fn every_kind() -> Vec<EventKind> {
        let obj = |v: Value| v.as_object().cloned().unwrap();
        vec![
            EventKind::WorkflowStarted {
                inputs: json!({"q": "a \"b\"\n"}),
            },
            EventKind::NodeStarted(NodeStarted {
                inputs: Value::Null,
                created_at: 7,
                component_id: "Agent:x".into(),
                component_name: "名前".into(),
                component_type: "Agent".into(),
                thoughts: "t\u{1}".into(),
            }),
            EventKind::Message(MessageChunk {
                content: json!("hi"),
                start_to_think: Some(true),
                end_to_think: None,
            }),
            EventKind::MessageEnd(obj(json!({"reference": []}))),
            EventKind::NodeFinished(NodeFinished {
                inputs: obj(json!({"a": 1})),
                outputs: obj(json!({"content": "x", "_elapsed_time": 1e-6})).into(),
                component_id: "c".into(),
                component_name: "".into(),
                component_type: "Message".into(),
                error: None,
                elapsed_time: 0.25,
                created_at: 1.5,
                usage: None,
            }),
            EventKind::UserInputs {
                inputs: obj(json!({"f": {"type": "line"}})),
                tips: "answer".into(),
            },
            EventKind::WorkflowFinished(WorkflowFinished {
                inputs: json!({}),
                outputs: json!({"content": "done"}),
                elapsed_time: 3.0,
                created_at: 2.0,
                usage: Usage::default(),
            }),
        ]
    }

    #[test]
    fn events_written_by_hand_are_what_serde_writes() {
        let obj = |v: Value| v.as_object().cloned().unwrap();
        let nested = json!({
            "s": "quote \" back \\ nl \n ctl \u{1f} del \u{7f} é ✓ 😀",
            "key \"q\"\t": [1, -2, 3.5, -0.0, 1e300, 5e-324, u64::MAX, i64::MIN, true, false, null],
            "deep": {"a": [[], {}, [{"b": "c"}]], "": ""},
            "_created_time": 1_795_764_185.653_447_6,
        });
        let mut kinds = every_kind();
        for elapsed in [
            0.0,
            -0.0,
            3.337_860_107_421_875e-6,
            f64::NAN,
            f64::INFINITY,
            1e21,
        ] {
            kinds.push(EventKind::NodeFinished(NodeFinished {
                inputs: obj(nested.clone()),
                outputs: obj(json!({"result": nested, "_elapsed_time": elapsed})).into(),
                component_id: "Iteration:Big\u{2028}".into(),
                component_name: "名前 \"x\"".into(),
                component_type: "Iteration".into(),
                error: Some("boom\r\n".into()),
                elapsed_time: elapsed,
                created_at: -elapsed,
                usage: Some(Usage {
                    prompt_tokens: 1,
                    completion_tokens: 2,
                    total_tokens: 3,
                    calls: 1,
                }),
            }));
            // `created_at` the same time as the `_created_time` output, or not quite.
            for created in [elapsed, -elapsed, 1_795_764_185.653_447_6] {
                kinds.push(EventKind::NodeFinished(NodeFinished {
                    inputs: Object::new(),
                    outputs: obj(json!({"_created_time": elapsed, "x": {"_created_time": 1}}))
                        .into(),
                    component_id: "A".into(),
                    component_name: "".into(),
                    component_type: "Loop".into(),
                    error: None,
                    elapsed_time: 1.0,
                    created_at: created,
                    usage: None,
                }));
            }
            kinds.push(EventKind::Message(MessageChunk {
                content: json!(elapsed),
                start_to_think: None,
                end_to_think: Some(elapsed.is_nan()),
            }));
            kinds.push(EventKind::NodeStarted(NodeStarted {
                inputs: json!([elapsed.to_string()]),
                created_at: i64::MIN,
                component_id: "".into(),
                component_name: "\u{0}".into(),
                component_type: "Loop".into(),
                thoughts: format!("{elapsed}").into(),
            }));
        }
        for content in [
            json!("w1 "),
            nested.clone(),
            Value::Null,
            json!(["a", {"b": 1}]),
        ] {
            for (start, end) in [(None, None), (Some(true), None), (None, Some(false))] {
                kinds.push(EventKind::Message(MessageChunk {
                    content: content.clone(),
                    start_to_think: start,
                    end_to_think: end,
                }));
            }
        }
        for kind in kinds {
            let ev = Event::test(kind, "r");
            assert_eq!(wire_line(&ev), serde_json::to_string(&ev).unwrap());
        }
    }

    /// A `DataWriter` writes what `write_data` writes: for events of one node again and
    /// again, for an id shared with another name or class (built by hand), for ids
    /// with escapes, and past the number of components it keeps.
    #[test]
    fn a_data_writer_writes_what_write_data_writes() {
        let started = |id: &Arc<str>, name: &Arc<str>, class: &Arc<str>| {
            EventKind::NodeStarted(NodeStarted {
                inputs: Value::Null,
                created_at: 7,
                component_id: id.clone(),
                component_name: name.clone(),
                component_type: class.clone(),
                thoughts: "t".into(),
            })
        };
        let finished = |id: &Arc<str>, name: &Arc<str>, class: &Arc<str>| {
            EventKind::NodeFinished(NodeFinished {
                inputs: Object::new(),
                outputs: json!({"a": 1}).as_object().cloned().unwrap().into(),
                component_id: id.clone(),
                component_name: name.clone(),
                component_type: class.clone(),
                error: None,
                elapsed_time: 0.5,
                created_at: 1.5,
                usage: None,
            })
        };
        let a: [Arc<str>; 3] = ["Loop:A \"q\"".into(), "名前".into(), "Loop".into()];
        let b: [Arc<str>; 3] = ["Item:B\n".into(), "".into(), "LoopItem".into()];
        let other_name: Arc<str> = "another".into();
        let other_class: Arc<str> = "Message".into();
        let mut kinds = every_kind();
        for _ in 0..3 {
            for [id, name, class] in [&a, &b] {
                kinds.push(started(id, name, class));
                kinds.push(finished(id, name, class));
            }
            kinds.push(started(&a[0], &other_name, &a[2]));
            kinds.push(finished(&a[0], &a[1], &other_class));
        }
        // More components than it keeps, each twice.
        let many: Vec<Arc<str>> = (0..5000).map(|i| format!("C:{i}").into()).collect();
        for id in many.iter().chain(&many) {
            kinds.push(started(id, &a[1], &a[2]));
        }
        let mut writer = wire::DataWriter::default();
        for kind in &kinds {
            let (mut want, mut got) = (String::new(), String::new());
            wire::write_data(kind, &mut want).unwrap();
            writer.write(kind, &mut got).unwrap();
            assert_eq!(got, want);
        }
    }

    /// `ev`'s line as the wire module builds it, from its data and envelope.
    fn wire_line(ev: &Event) -> String {
        let mut data = String::new();
        wire::write_data(&ev.kind, &mut data).unwrap();
        let mut line = Vec::new();
        wire::write_line(
            ev.kind.name(),
            data.as_bytes(),
            &wire::Envelope::of(ev),
            &mut line,
        );
        String::from_utf8(line).unwrap()
    }

    /// Outputs shared with the run state read, compare and serialise as the owned map,
    /// and a change the state makes afterwards (through `make_mut`) leaves them as
    /// they were.
    #[test]
    fn shared_outputs_are_the_outputs_as_they_were() {
        let mut node = std::sync::Arc::new(crate::state::NodeState::default());
        std::sync::Arc::make_mut(&mut node)
            .outputs
            .insert("content".into(), json!("before"));
        let shared = Outputs::of_node(node.clone());
        let owned = Outputs::from(node.outputs.clone());
        std::sync::Arc::make_mut(&mut node)
            .outputs
            .insert("content".into(), json!("after"));
        assert_eq!(shared["content"], json!("before"));
        assert_eq!(shared, owned);
        assert_eq!(format!("{shared:?}"), format!("{owned:?}"));
        assert_eq!(
            serde_json::to_string(&shared).unwrap(),
            r#"{"content":"before"}"#
        );
        let back: Outputs = serde_json::from_str(r#"{"content":"before"}"#).unwrap();
        assert_eq!(back, shared);
        assert_eq!(shared.into_object(), owned.into_object());
        assert_eq!(node.outputs["content"], json!("after"));
    }

    #[test]
    fn a_line_built_from_its_parts_is_the_serde_line() {
        let ids = [
            ("m\"1", -3),
            ("01a21b08d1aadee949a64d57fd16ac84", 1_795_749_892),
            ("back\\slash", 0),
            ("tab\tand\u{1}control", i64::MAX),
            ("unicodé ✓ \u{7f}", i64::MIN),
            ("", 7),
        ];
        // One envelope text for all: it is made again whenever the envelope changes
        // (each of the three members in turn, and back to an earlier one).
        let mut text = wire::EnvelopeText::default();
        let envelopes = ids
            .iter()
            .map(|&(m, at)| (m.to_string(), at, format!("01RUN{m}")))
            .chain([
                ("m".into(), 1, "t".into()),
                ("m".into(), 2, "t".into()),
                ("m".into(), 2, "u".into()),
                ("n".into(), 2, "u".into()),
                ("m\"1".into(), -3, "01RUNm\"1".into()),
            ]);
        for (kind, (message_id, created_at, task_id)) in
            every_kind().into_iter().cycle().zip(envelopes)
        {
            let ev = Event {
                kind,
                message_id,
                created_at,
                task_id,
            };
            let want = serde_json::to_string(&ev).unwrap();
            assert_eq!(wire_line(&ev), want);
            let mut data = String::new();
            wire::write_data(&ev.kind, &mut data).unwrap();
            let mut line = Vec::new();
            let tail = text.of(&wire::Envelope::of(&ev));
            wire::write_line_with(ev.kind.name(), data.as_bytes(), tail, &mut line);
            assert_eq!(String::from_utf8(line).unwrap(), want);
            assert!(wire::is_event_name(ev.kind.name()));
        }
        assert!(!wire::is_event_name("node_finishe"));
    }
}
