//! `RunState`: everything needed to continue a run (path, outputs, globals, history).
//!
//! It is plain data, serialisable as a checkpoint. Component outputs follow RAGFlow's
//! storage model (`engine.md` §2.2): a declared output that has no value yet holds
//! `null`; an output that was never declared nor set reads as `""`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::usage::Usage;
use canvas_pyrt::Object;

/// The hash maps of the run state, looked up several times per node: foldhash (the
/// hasher hashbrown itself defaults to) instead of SipHash, which was a twentieth of a
/// run's time; seeded per process.
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
/// A set with [`FastMap`]'s hasher.
pub type FastSet<T> = HashSet<T, foldhash::fast::RandomState>;
/// The components' states by id ([`RunState::nodes`]): [`FastMap`]'s hasher, and
/// hashbrown's map, which finds or adds a component by `&str` in one lookup.
pub type NodeMap = hashbrown::HashMap<String, Arc<NodeState>, foldhash::fast::RandomState>;

/// Outputs and recorded input values of one component.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NodeState {
    /// Output name → value (insertion order is RAGFlow's: declared, then as first set).
    pub outputs: Object,
    /// Input name → value recorded while the component ran.
    pub inputs: Object,
}

impl NodeState {
    /// The `_ERROR` output, when set to a non-null value.
    pub fn error(&self) -> Option<String> {
        match key_get(&self.outputs, "_ERROR")? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }
}

/// The mutable state of one run (a RAGFlow session).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunState {
    /// RAGFlow's execution path: every component id appended so far in this session.
    pub path: Vec<Arc<str>>,
    /// `sys.*` and `env.*` variables.
    pub globals: Object,
    /// Conversation turns: `[role, value]`.
    pub history: Vec<(String, Value)>,
    /// References per run (`engine.md` §4.8).
    pub retrieval: Vec<Value>,
    /// Per component state, keyed by component id. Shared, not copied, with the copies
    /// of the state a checkpointer keeps: a node is copied when it changes after one
    /// ([`RunState::node_mut`]).
    pub nodes: NodeMap,
    /// IterationItem / LoopItem pass counters (`_idx`), keyed by the item's id.
    pub counters: FastMap<String, i64>,
    /// Where the turn under way stands; `None` between turns (finished or waiting).
    #[serde(default)]
    pub cursor: Option<Cursor>,
    /// Components whose `content` is a model answer not streamed yet (RAGFlow's lazy
    /// generator). The stream itself lives in memory; a continued turn prepares it again.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub streaming: BTreeSet<String>,
    /// Tokens used by this turn's model calls.
    #[serde(default, skip_serializing_if = "UsageBook::is_empty")]
    pub usage: UsageBook,
    /// Components changed since the last checkpoint (bookkeeping, never stored).
    #[serde(skip)]
    pub touched: Touched,
}

/// Token usage of the turn under way: in total and per component.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct UsageBook {
    /// All calls of the turn.
    pub turn: Usage,
    /// Calls per component id.
    pub nodes: BTreeMap<String, Usage>,
}

impl UsageBook {
    /// True when no call was counted.
    pub fn is_empty(&self) -> bool {
        self.turn.calls == 0 && self.nodes.is_empty()
    }
}

/// The ids of components whose state changed since the last checkpoint, and whether
/// `globals` did, so a checkpoint compares those instead of everything. Changes made
/// through [`RunState::node_mut`] (and the setters built on it),
/// [`RunState::append_output`] and [`RunState::globals_mut`] are recorded; saying more
/// than what changed is harmless.
/// It takes no part in equality.
#[derive(Debug, Clone, Default)]
pub struct Touched {
    ids: FastSet<String>,
    /// Any of `globals` may have changed (through [`RunState::globals_mut`]).
    globals_all: bool,
    /// These keys of `globals` changed (through [`RunState::set_global`]).
    global_keys: FastSet<String>,
    /// Strings of ids forgotten at the last checkpoint, reused for the next marks so
    /// marking the same components again copies no id into a new allocation.
    spare: Vec<String>,
    /// (component, output) lists that only had items appended (through
    /// [`RunState::append_output`]), for components not in `ids`: a checkpoint stores
    /// the new items instead of the whole component.
    appends: Vec<(String, String)>,
}

impl Touched {
    /// The recorded ids.
    pub fn ids(&self) -> impl Iterator<Item = &String> {
        self.ids.iter()
    }

    /// True when component `id` is recorded as changed (in any way).
    pub fn has(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// The (component, output) lists that had items appended, and may have had nothing
    /// else changed unless their component is also among [`Touched::ids`].
    pub fn appends(&self) -> impl Iterator<Item = (&str, &str)> {
        self.appends.iter().map(|(c, o)| (c.as_str(), o.as_str()))
    }

    /// What of `globals` may have changed.
    pub fn globals(&self) -> GlobalsTouched<'_> {
        if self.globals_all {
            GlobalsTouched::All
        } else if self.global_keys.is_empty() {
            GlobalsTouched::None
        } else {
            GlobalsTouched::Keys(&self.global_keys)
        }
    }

    /// Forget them (after a checkpoint).
    pub fn clear(&mut self) {
        self.spare.extend(self.ids.drain());
        self.appends.clear();
        self.global_keys.clear();
        self.globals_all = false;
    }

    fn mark_append(&mut self, id: &str, output: &str) {
        if !self.appends.iter().any(|(c, o)| c == id && o == output) {
            self.appends.push((id.to_string(), output.to_string()));
        }
    }

    fn mark(&mut self, id: &str) {
        if !self.ids.contains(id) {
            let mut s = self.spare.pop().unwrap_or_default();
            s.clear();
            s.push_str(id);
            self.ids.insert(s);
        }
    }
}

/// What of `globals` changed since the last checkpoint ([`Touched::globals`]).
#[derive(Debug, Clone, Copy)]
pub enum GlobalsTouched<'a> {
    /// Nothing.
    None,
    /// At most these keys (set, or removed).
    Keys(&'a FastSet<String>),
    /// Anything.
    All,
}

impl PartialEq for Touched {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Maps up to this size are searched key by key: a node's outputs, inputs and parameters
/// hold a few keys, and comparing them is cheaper than hashing the name with the map's
/// SipHash.
const SCAN_UP_TO: usize = 8;

/// `map.get(name)`, scanning a small map instead of hashing.
pub fn key_get<'m>(map: &'m Object, name: &str) -> Option<&'m Value> {
    if map.len() <= SCAN_UP_TO {
        map.iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v)
    } else {
        map.get(name)
    }
}

/// `map.get_mut(name)`, scanning a small map instead of hashing.
pub fn key_get_mut<'m>(map: &'m mut Object, name: &str) -> Option<&'m mut Value> {
    if map.len() <= SCAN_UP_TO {
        map.iter_mut()
            .find(|(k, _)| k.as_str() == name)
            .map(|(_, v)| v)
    } else {
        map.get_mut(name)
    }
}

/// `map[name] = v`: an existing key keeps its place and is not copied again (this runs
/// for every output and input a component sets).
pub fn set_key(map: &mut Object, name: &str, v: Value) {
    match key_get_mut(map, name) {
        Some(slot) => *slot = v,
        None => {
            map.insert(name.to_string(), v);
        }
    }
}

/// The scheduler's position inside a turn, checkpointed with the state so a turn
/// stopped by a crash, Ctrl-C or a cancel continues where it stopped.
///
/// `path[idx..to]` is the batch being run; `path[idx..next]` are post-processed (their
/// `node_finished` is committed); `path[next..to]` ran but are not post-processed yet.
/// `to == None` means the batch at `idx` is not scheduled yet.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Cursor {
    /// The turn's `message_id` (kept so a continued turn's events match).
    pub message_id: String,
    /// The turn's start, Unix seconds (the envelope's `created_at` and elapsed time).
    pub started: f64,
    /// `sys.query` of the turn.
    pub query: String,
    /// The turn's `inputs` in API shape.
    pub inputs: Object,
    /// The turn answers a form (RAGFlow's resume).
    pub resume: bool,
    /// First path position of the current batch.
    pub idx: usize,
    /// End of the current batch, once scheduled.
    pub to: Option<usize>,
    /// Next position of the batch to post-process.
    pub next: usize,
    /// The unhandled component error (id, message) that ends the turn after this batch.
    pub error: Option<(String, String)>,
    /// Streaming components whose `node_finished` waits for a Message to drain them
    /// (RAGFlow's `partials`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partials: Vec<String>,
    /// When this cursor was stored, Unix seconds: a turn continued later was stopped
    /// from then on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_at: Option<f64>,
    /// The spans `[from, to]` (Unix seconds) the turn spent stopped before it was
    /// continued, oldest first: timings count only the time it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopped: Vec<(f64, f64)>,
}

/// Seconds of `[from, to]` that fall in the spans `stopped` (see [`Cursor::stopped`]).
pub fn time_stopped(stopped: &[(f64, f64)], from: f64, to: f64) -> f64 {
    stopped
        .iter()
        .map(|&(a, b)| (b.min(to) - a.max(from)).max(0.0))
        .sum()
}

impl RunState {
    /// RAGFlow's `output(name)`: the value, or `""` when the key was never declared.
    pub fn output(&self, cpn: &str, name: &str) -> Value {
        self.nodes
            .get(cpn)
            .and_then(|n| key_get(&n.outputs, name))
            .cloned()
            .unwrap_or_else(|| Value::String(String::new()))
    }

    /// RAGFlow's `set_output`: creates the key at the end when new.
    pub fn set_output(&mut self, cpn: &str, name: &str, v: Value) {
        set_key(&mut self.node_mut(cpn).outputs, name, v);
    }

    /// Append `v` to the list output `name` of `cpn`; an output that is missing, empty
    /// or not a list becomes `[v]`. An append to a list is recorded as only that, so the
    /// next checkpoint stores the new items, not the whole growing list.
    pub fn append_output(&mut self, cpn: &str, name: &str, v: Value) {
        if !self.nodes.contains_key(cpn) {
            self.nodes.insert(cpn.to_string(), Arc::default());
        }
        let Some(node) = self.nodes.get_mut(cpn) else {
            return;
        };
        let outputs = &mut Arc::make_mut(node).outputs;
        match key_get_mut(outputs, name) {
            Some(Value::Array(a)) if !a.is_empty() => {
                a.push(v);
                self.touched.mark_append(cpn, name);
            }
            _ => {
                set_key(outputs, name, Value::Array(vec![v]));
                self.touched.mark(cpn);
            }
        }
    }

    /// `globals` for changing; recorded as touched, so a checkpoint compares them all.
    pub fn globals_mut(&mut self) -> &mut Object {
        self.touched.globals_all = true;
        &mut self.globals
    }

    /// `globals[key] = v` (an existing key keeps its place); only this key is recorded
    /// as touched, so a checkpoint compares only it.
    pub fn set_global(&mut self, key: &str, v: Value) {
        if !self.touched.globals_all && !self.touched.global_keys.contains(key) {
            self.touched.global_keys.insert(key.to_string());
        }
        set_key(&mut self.globals, key, v);
    }

    /// A component's state for changing (created when missing); recorded as touched.
    pub fn node_mut(&mut self, cpn: &str) -> &mut NodeState {
        self.touched.mark(cpn);
        // The id is copied only when the component is new.
        Arc::make_mut(self.nodes.entry_ref(cpn).or_default())
    }

    /// The `_ERROR` output of a component, when set to a non-null value.
    pub fn error_of(&self, cpn: &str) -> Option<String> {
        self.nodes.get(cpn)?.error()
    }

    /// True when the component id exists in this run.
    pub fn has_node(&self, cpn: &str) -> bool {
        self.nodes.contains_key(cpn)
    }
}

#[cfg(test)]
mod tests {
    use super::{Object, RunState, key_get, key_get_mut, set_key, time_stopped};
    use serde_json::{Value, json};

    /// Small maps are scanned, larger ones hashed: either way the answers are the
    /// map's own, and a set key keeps its place.
    #[test]
    fn keys_are_found_in_small_and_large_maps() {
        for size in [0, 1, 7, 8, 9, 20] {
            let mut m = Object::new();
            for i in 0..size {
                m.insert(format!("k{i}"), json!(i));
            }
            for i in 0..size + 1 {
                let k = format!("k{i}");
                assert_eq!(key_get(&m, &k), m.get(&k), "{size} {k}");
            }
            if size > 1 {
                set_key(&mut m, "k0", json!("first"));
                *key_get_mut(&mut m, &format!("k{}", size - 1)).unwrap() = json!("last");
                assert_eq!(m.keys().next().map(String::as_str), Some("k0"));
                assert_eq!(m["k0"], json!("first"));
                assert_eq!(m[&format!("k{}", size - 1)], json!("last"));
            }
            set_key(&mut m, "new", json!(1));
            assert_eq!(m.keys().next_back().map(String::as_str), Some("new"));
            assert_eq!(m.len(), size + 1);
        }
    }

    /// A component changed after a checkpoint forgot the marks is marked again, an
    /// empty id is marked, and each component is recorded once.
    #[test]
    fn a_component_changed_after_a_checkpoint_is_marked_again() {
        let mut st = RunState::default();
        st.set_output("a", "x", Value::from(1));
        st.set_output("a", "y", Value::from(2));
        assert!(st.touched.has("a"));
        st.touched.clear();
        assert!(!st.touched.has("a"));
        st.set_output("a", "x", Value::from(3));
        assert!(st.touched.has("a"), "marked again after the checkpoint");
        st.touched.clear();
        st.set_output("", "x", Value::from(1));
        assert!(st.touched.has(""), "an empty id is marked");
        st.touched.clear();
        st.set_output("b", "x", Value::from(1));
        st.set_output("a", "x", Value::from(1));
        st.set_output("b", "x", Value::from(1));
        assert_eq!(st.touched.ids().count(), 2);
        assert!(st.touched.has("a") && st.touched.has("b"));
    }

    #[test]
    fn only_the_stops_within_a_span_count() {
        let stops = [(10.0, 20.0), (30.0, 35.0)];
        assert_eq!(time_stopped(&stops, 0.0, 40.0), 15.0);
        // Started during the first stop (run again after it), or after both.
        assert_eq!(time_stopped(&stops, 15.0, 40.0), 10.0);
        assert_eq!(time_stopped(&stops, 36.0, 40.0), 0.0);
        // Ended before the second.
        assert_eq!(time_stopped(&stops, 0.0, 25.0), 10.0);
        assert_eq!(time_stopped(&[], 0.0, 40.0), 0.0);
    }
}
