//! Checkpoint deltas: what changed between two [`RunState`]s, field by field.
//!
//! `apply(&mut prev, &diff(&prev, &next))` gives `next` exactly, key order included (it
//! matters: outputs and globals keep RAGFlow's insertion order). Lists that only grow
//! (path, history, retrieval) are stored as a common-prefix length plus the new tail;
//! maps (globals, nodes, counters) as the changed entries plus the removed keys. A node
//! that changed is stored whole, unless all that changed is items appended to its list
//! outputs (an Iteration collecting its passes, [`RunState::append_output`]): then only
//! the new items are. Fields added to `RunState` after this file was written
//! are still carried, as whole JSON values, until they get their own delta here.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use canvas_engine::RunState;
use canvas_engine::state::{Cursor, FastSet, GlobalsTouched, NodeState, key_get, key_get_mut};
use canvas_pyrt::Object;

/// Top-level `RunState` fields this module diffs itself (the others go in `extra`).
const KNOWN_FIELDS: [&str; 7] = [
    "path",
    "globals",
    "history",
    "retrieval",
    "nodes",
    "counters",
    "cursor",
];

/// The changes that turn one [`RunState`] into the next (serialised as a checkpoint body).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    /// `path`: truncate, then append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<Splice<Arc<str>>>,
    /// `globals`: set and removed keys, or the whole map when its key order changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub globals: Option<ObjectDelta>,
    /// `history`: truncate, then append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Splice<(String, Value)>>,
    /// `retrieval`: truncate, then append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<Splice<Value>>,
    /// Nodes added or changed, stored whole (shared with the state they came from).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nodes: BTreeMap<String, Arc<NodeState>>,
    /// Nodes removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes_del: Vec<String>,
    /// Items appended to list outputs of nodes not otherwise changed: node id → output
    /// name → the new items. (Stores that may hold these are schema version 9: older
    /// binaries refuse them rather than drop the items.)
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub appends: BTreeMap<String, BTreeMap<String, Vec<Value>>>,
    /// Counters added or changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, i64>,
    /// Counters removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters_del: Vec<String>,
    /// The scheduler's position, when it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<CursorDelta>,
    /// Other top-level fields (not known to this module) that changed, whole.
    #[serde(default, skip_serializing_if = "Object::is_empty")]
    pub extra: Object,
    /// Other top-level fields that disappeared from the serialised state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_del: Vec<String>,
}

/// A change of the turn cursor (small: stored whole).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CursorDelta {
    /// The new position.
    Set(Box<Cursor>),
    /// No turn under way any more.
    Clear,
}

/// A list edit: keep the first `keep` items, then append `push`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Splice<T> {
    /// How many leading items stay.
    pub keep: usize,
    /// Items appended after them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub push: Vec<T>,
}

/// An ordered-map edit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectDelta {
    /// Remove `del` (keeping the others' order), then set `set` in order: existing keys
    /// keep their place, new ones go at the end.
    Patch {
        /// Keys added or changed, with their new values.
        #[serde(default, skip_serializing_if = "Object::is_empty")]
        set: Object,
        /// Keys removed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        del: Vec<String>,
    },
    /// The whole new map (used when the key order changed otherwise).
    Replace(Object),
}

impl Delta {
    /// True when the two states were identical.
    pub fn is_empty(&self) -> bool {
        self == &Delta::default()
    }
}

/// The changes from `prev` to `next`, trusting `next.touched` to name every component
/// changed since `prev`, and to say whether `globals` did (true when `prev` is the state
/// as of the last checkpoint): only those are compared, so a checkpoint costs what
/// changed, not the number of components or the size of the variables.
pub fn diff_touched(prev: &RunState, next: &RunState) -> Delta {
    let d = diff_nodes(prev, next, Some(next.touched.ids()));
    // Debug builds (and so the tests) check the trust is deserved: the delta takes
    // `prev` to a state no different from `next`.
    #[cfg(debug_assertions)]
    {
        let mut check = prev.clone();
        let applied = apply(&mut check, d.clone());
        debug_assert!(
            applied.is_ok() && diff(&check, next).is_empty(),
            "a component changed without being touched: {:?}",
            diff(&check, next)
        );
    }
    d
}

/// The changes from `prev` to `next`.
pub fn diff(prev: &RunState, next: &RunState) -> Delta {
    diff_nodes(prev, next, None::<std::iter::Empty<&String>>)
}

fn diff_nodes<'a>(
    prev: &RunState,
    next: &'a RunState,
    touched: Option<impl Iterator<Item = &'a String>>,
) -> Delta {
    // With a touched set, only the globals marked changed are compared.
    let globals = match (&touched, next.touched.globals()) {
        (None, _) | (Some(_), GlobalsTouched::All) => {
            object_delta(&prev.globals, &next.globals, None)
        }
        (Some(_), GlobalsTouched::None) => None,
        (Some(_), GlobalsTouched::Keys(keys)) => {
            object_delta(&prev.globals, &next.globals, Some(keys))
        }
    };
    let mut d = Delta {
        // The checkpointer's copy shares the path's ids: a pointer test settles all but
        // the new ones, with no text compared along a path of thousands.
        path: splice(&prev.path, &next.path, |a, b| Arc::ptr_eq(a, b) || a == b),
        globals,
        history: splice(&prev.history, &next.history, |a, b| {
            a.0 == b.0 && same_value(&a.1, &b.1)
        }),
        retrieval: splice(&prev.retrieval, &next.retrieval, same_value),
        ..Delta::default()
    };
    match touched {
        Some(ids) => {
            for id in ids {
                match (prev.nodes.get(id), next.nodes.get(id)) {
                    (p, Some(node))
                        if p.is_none_or(|p| !Arc::ptr_eq(p, node) && !same_node(p, node)) =>
                    {
                        d.nodes.insert(id.clone(), node.clone());
                    }
                    (Some(_), None) => d.nodes_del.push(id.clone()),
                    _ => {}
                }
            }
            appends(prev, next, &mut d);
            d.nodes_del.sort();
        }
        None => {
            for (id, node) in &next.nodes {
                if prev
                    .nodes
                    .get(id)
                    .is_none_or(|p| !Arc::ptr_eq(p, node) && !same_node(p, node))
                {
                    d.nodes.insert(id.clone(), node.clone());
                }
            }
            d.nodes_del = removed_keys(prev.nodes.keys(), |k| next.nodes.contains_key(k));
        }
    }
    for (id, n) in &next.counters {
        if prev.counters.get(id) != Some(n) {
            d.counters.insert(id.clone(), *n);
        }
    }
    d.counters_del = removed_keys(prev.counters.keys(), |k| next.counters.contains_key(k));
    if prev.cursor != next.cursor {
        d.cursor = Some(match &next.cursor {
            Some(c) => CursorDelta::Set(Box::new(c.clone())),
            None => CursorDelta::Clear,
        });
    }
    if has_unknown_fields() {
        let (p, n) = (unknown_fields(prev), unknown_fields(next));
        for (k, v) in &n {
            if p.get(k).is_none_or(|old| !same_value(old, v)) {
                d.extra.insert(k.clone(), v.clone());
            }
        }
        d.extra_del = removed_keys(p.keys(), |k| n.contains_key(k));
    }
    d
}

/// The appends recorded in `next.touched` for components not otherwise touched: their
/// new items, or the whole component when its list is not simply longer.
fn appends(prev: &RunState, next: &RunState, d: &mut Delta) {
    for (id, output) in next.touched.appends() {
        if next.touched.has(id) || d.nodes.contains_key(id) {
            continue;
        }
        let Some(node) = next.nodes.get(id) else {
            continue;
        };
        let old = match prev.nodes.get(id) {
            Some(p) if Arc::ptr_eq(p, node) => continue,
            Some(p) => key_get(&p.outputs, output),
            None => None,
        };
        match (old, key_get(&node.outputs, output)) {
            (Some(Value::Array(old)), Some(Value::Array(new))) if new.len() >= old.len() => {
                if new.len() > old.len() {
                    d.appends
                        .entry(id.to_string())
                        .or_default()
                        .insert(output.to_string(), new[old.len()..].to_vec());
                }
            }
            _ => {
                d.appends.remove(id);
                d.nodes.insert(id.to_string(), node.clone());
            }
        }
    }
}

fn not_applicable(msg: String) -> serde_json::Error {
    <serde_json::Error as serde::de::Error>::custom(format!(
        "a checkpoint delta does not apply: {msg}"
    ))
}

/// Apply `d` to `state` (which must be the `prev` the delta was computed from).
///
/// Fails when `extra` holds a value that no longer fits its field, or items are
/// appended to a list `state` does not have (`state` is then left part-applied).
pub fn apply(state: &mut RunState, d: Delta) -> Result<(), serde_json::Error> {
    if let Some(s) = d.path {
        apply_splice(&mut state.path, s);
    }
    match d.globals {
        None => {}
        Some(ObjectDelta::Replace(all)) => state.globals = all,
        Some(ObjectDelta::Patch { set, del }) => {
            for k in &del {
                state.globals.shift_remove(k);
            }
            for (k, v) in set {
                state.globals.insert(k, v);
            }
        }
    }
    if let Some(s) = d.history {
        apply_splice(&mut state.history, s);
    }
    if let Some(s) = d.retrieval {
        apply_splice(&mut state.retrieval, s);
    }
    for id in &d.nodes_del {
        state.nodes.remove(id);
    }
    for (id, node) in d.nodes {
        state.nodes.insert(id, node);
    }
    for (id, outputs) in d.appends {
        let node = state.nodes.get_mut(&id).ok_or_else(|| {
            not_applicable(format!(
                "items appended to {id:?}, a component the state does not have"
            ))
        })?;
        let node = Arc::make_mut(node);
        for (name, items) in outputs {
            match key_get_mut(&mut node.outputs, &name) {
                Some(Value::Array(list)) => list.extend(items),
                _ => {
                    return Err(not_applicable(format!(
                        "items appended to output {name:?} of {id:?}, which is not a list"
                    )));
                }
            }
        }
    }
    for id in &d.counters_del {
        state.counters.remove(id);
    }
    for (id, n) in d.counters {
        state.counters.insert(id, n);
    }
    match d.cursor {
        None => {}
        Some(CursorDelta::Set(c)) => state.cursor = Some(*c),
        Some(CursorDelta::Clear) => state.cursor = None,
    }
    if !d.extra.is_empty() || !d.extra_del.is_empty() {
        let mut v = serde_json::to_value(&*state)?;
        if let Value::Object(o) = &mut v {
            for k in &d.extra_del {
                o.shift_remove(k);
            }
            for (k, x) in d.extra {
                o.insert(k, x);
            }
        }
        *state = serde_json::from_value(v)?;
    }
    Ok(())
}

fn splice<T: Clone>(prev: &[T], next: &[T], same: impl Fn(&T, &T) -> bool) -> Option<Splice<T>> {
    let keep = prev
        .iter()
        .zip(next)
        .take_while(|(a, b)| same(a, b))
        .count();
    if keep == prev.len() && keep == next.len() {
        return None;
    }
    Some(Splice {
        keep,
        push: next[keep..].to_vec(),
    })
}

fn apply_splice<T>(list: &mut Vec<T>, s: Splice<T>) {
    list.truncate(s.keep);
    list.extend(s.push);
}

fn removed_keys<'a>(
    prev: impl Iterator<Item = &'a String>,
    kept: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut out: Vec<String> = prev.filter(|k| !kept(k)).cloned().collect();
    out.sort();
    out
}

/// A patch when applying it reproduces `next`'s key order, else the whole map.
fn object_delta(
    prev: &Object,
    next: &Object,
    changed: Option<&FastSet<String>>,
) -> Option<ObjectDelta> {
    let del: Vec<String> = prev
        .keys()
        .filter(|k| !next.contains_key(*k))
        .cloned()
        .collect();
    // After the removals, the surviving keys keep `prev`'s order and new keys are
    // appended: that is `next`'s order only if `next` starts with the survivors.
    let survivors = prev.keys().filter(|k| next.contains_key(*k));
    let order_kept = survivors.zip(next.keys()).all(|(a, b)| a == b);
    if !order_kept {
        return Some(ObjectDelta::Replace(next.clone()));
    }
    let mut set = Object::new();
    for (k, v) in next {
        // A key outside `changed` kept its value: it is not compared.
        if changed.is_some_and(|c| !c.contains(k)) && prev.contains_key(k) {
            continue;
        }
        if prev.get(k).is_none_or(|old| !same_value(old, v)) {
            set.insert(k.clone(), v.clone());
        }
    }
    if set.is_empty() && del.is_empty() {
        return None;
    }
    Some(ObjectDelta::Patch { set, del })
}

fn same_node(a: &NodeState, b: &NodeState) -> bool {
    same_object(&a.outputs, &b.outputs) && same_object(&a.inputs, &b.inputs)
}

/// Equality that, unlike `Value`'s `==`, also compares the key order of objects.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => same_object(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        _ => a == b,
    }
}

fn same_object(a: &Object, b: &Object) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
}

/// True when `RunState` serialises fields this module does not know (checked once).
fn has_unknown_fields() -> bool {
    static UNKNOWN: OnceLock<bool> = OnceLock::new();
    *UNKNOWN.get_or_init(|| !unknown_fields(&RunState::default()).is_empty())
}

fn unknown_fields(state: &RunState) -> Object {
    match serde_json::to_value(state) {
        Ok(Value::Object(mut o)) => {
            o.retain(|k, _| !KNOWN_FIELDS.contains(&k.as_str()));
            o
        }
        _ => Object::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
        fn chance(&mut self, percent: u64) -> bool {
            self.below(100) < percent
        }
    }

    fn key(r: &mut Rng) -> String {
        format!("k{}", r.below(8))
    }

    fn value(r: &mut Rng, depth: u32) -> Value {
        match r.below(if depth > 2 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => json!(r.below(5)),
            2 => json!(format!("s{}", r.below(5))),
            3 => json!(r.chance(50)),
            4 => Value::Array((0..r.below(4)).map(|_| value(r, depth + 1)).collect()),
            _ => Value::Object(object(r, depth + 1)),
        }
    }

    fn object(r: &mut Rng, depth: u32) -> Object {
        let mut o = Object::new();
        for _ in 0..r.below(5) {
            o.insert(key(r), value(r, depth));
        }
        o
    }

    /// A random edit of `s`: the kinds of change a run makes, plus reorders and removals.
    fn mutate(r: &mut Rng, s: &mut RunState) {
        for _ in 0..=r.below(4) {
            match r.below(14) {
                12 => {
                    let c = s.cursor.get_or_insert_with(Default::default);
                    c.next += 1;
                    c.to = Some(c.next + r.below(3) as usize);
                }
                13 => s.cursor = None,
                0 => s.path.push(format!("Node:{}", r.below(6)).into()),
                1 => {
                    let n = r.below(s.path.len() as u64 + 1) as usize;
                    s.path.truncate(n);
                }
                2 => {
                    s.globals.insert(format!("sys.{}", key(r)), value(r, 0));
                }
                3 => {
                    let k = format!("sys.{}", key(r));
                    s.globals.shift_remove(&k);
                }
                4 => {
                    // Reorder: move the first key to the end.
                    if let Some((k, v)) =
                        s.globals.iter().next().map(|(k, v)| (k.clone(), v.clone()))
                    {
                        s.globals.shift_remove(&k);
                        s.globals.insert(k, v);
                    }
                }
                5 => s.history.push((
                    if r.chance(50) { "user" } else { "assistant" }.into(),
                    value(r, 0),
                )),
                6 => {
                    let n = r.below(s.history.len() as u64 + 1) as usize;
                    s.history.truncate(n);
                    s.retrieval.push(value(r, 0));
                }
                7 => {
                    let id = format!("Node:{}", r.below(6));
                    s.set_output(&id, &key(r), value(r, 0));
                }
                8 => {
                    let id = format!("Node:{}", r.below(6));
                    std::sync::Arc::make_mut(s.nodes.entry(id).or_default()).inputs = object(r, 0);
                }
                9 => {
                    let id = format!("Node:{}", r.below(6));
                    s.nodes.remove(&id);
                }
                10 => {
                    *s.counters
                        .entry(format!("Item:{}", r.below(3)))
                        .or_default() += 1;
                }
                _ => {
                    s.counters.remove(&format!("Item:{}", r.below(3)));
                }
            }
        }
    }

    /// Equal, with the key order of every ordered map equal too.
    fn assert_exact(a: &RunState, b: &RunState) {
        assert_eq!(a, b);
        assert_eq!(
            serde_json::to_string(&a.globals).unwrap(),
            serde_json::to_string(&b.globals).unwrap()
        );
        for (id, n) in &a.nodes {
            assert!(same_node(n, &b.nodes[id]), "node {id} differs in key order");
        }
        assert_eq!(
            serde_json::to_string(&a.history).unwrap(),
            serde_json::to_string(&b.history).unwrap()
        );
    }

    #[test]
    fn touched_globals_are_the_only_ones_compared() {
        let mut prev = RunState::default();
        prev.globals_mut()
            .insert("env.items".into(), json!((0..2000).collect::<Vec<_>>()));
        prev.globals_mut().insert("env.n".into(), json!(1));
        let mut next = prev.clone();
        next.touched.clear();
        assert_eq!(diff_touched(&prev, &next).globals, None, "nothing touched");
        next.set_global("env.n", json!(2));
        next.set_global("env.new", json!("x"));
        let mut set = Object::new();
        set.insert("env.n".into(), json!(2));
        set.insert("env.new".into(), json!("x"));
        let d = diff_touched(&prev, &next);
        assert_eq!(d.globals, Some(ObjectDelta::Patch { set, del: vec![] }));
        let mut got = prev.clone();
        apply(&mut got, d).unwrap();
        assert_eq!(got.globals, next.globals);
        // A removal goes through globals_mut: everything is compared.
        next.globals_mut().shift_remove("env.items");
        let d = diff_touched(&prev, &next);
        let Some(ObjectDelta::Patch { del, .. }) = &d.globals else {
            panic!("{:?}", d.globals);
        };
        assert_eq!(del, &["env.items".to_string()]);
    }

    fn check(prev: &RunState, next: &RunState) -> Delta {
        let d = diff(prev, next);
        // The delta survives its own serialisation.
        let text = serde_json::to_string(&d).unwrap();
        let back: Delta = serde_json::from_str(&text).unwrap();
        assert_eq!(back, d);
        let mut got = prev.clone();
        apply(&mut got, back.clone()).unwrap();
        assert_exact(&got, next);
        d
    }

    fn with_path(ids: &[&str]) -> RunState {
        RunState {
            path: ids.iter().map(|s| Arc::from(*s)).collect(),
            ..RunState::default()
        }
    }

    #[test]
    fn identical_states_give_an_empty_delta() {
        let mut s = with_path(&["begin"]);
        s.set_output("begin", "x", json!(1));
        let d = diff(&s, &s.clone());
        assert!(d.is_empty());
        assert_eq!(serde_json::to_string(&d).unwrap(), "{}");
    }

    #[test]
    fn delta_holds_only_what_changed() {
        let mut prev = with_path(&["begin", "Loop:L"]);
        prev.globals.insert("sys.query".into(), json!("hi"));
        prev.globals.insert("env.n".into(), json!(0));
        prev.set_output("begin", "x", json!("big ".repeat(100)));
        prev.set_output("Msg:A", "content", json!("a"));
        prev.counters.insert("LoopItem:I".into(), 1);
        let mut next = prev.clone();
        next.path.push("Msg:A".into());
        next.globals.insert("env.n".into(), json!(1));
        next.set_output("Msg:A", "content", json!("b"));
        next.counters.insert("LoopItem:I".into(), 2);
        let d = check(&prev, &next);
        assert_eq!(
            d.path,
            Some(Splice {
                keep: 2,
                push: vec!["Msg:A".into()]
            })
        );
        assert_eq!(d.nodes.keys().collect::<Vec<_>>(), ["Msg:A"]);
        assert_eq!(
            d.globals,
            Some(ObjectDelta::Patch {
                set: [("env.n".to_string(), json!(1))].into_iter().collect(),
                del: vec![]
            })
        );
        assert!(!serde_json::to_string(&d).unwrap().contains("big"));
    }

    #[test]
    fn removals_and_truncations_round_trip() {
        let mut prev = RunState {
            history: vec![
                ("user".into(), json!("q")),
                ("assistant".into(), json!("a")),
            ],
            retrieval: vec![json!({"chunks": []})],
            ..with_path(&["a", "b", "c"])
        };
        prev.globals.insert("a".into(), json!(1));
        prev.globals.insert("b".into(), json!(2));
        prev.set_output("X", "o", json!(1));
        prev.counters.insert("I".into(), 3);
        let mut next = RunState {
            history: vec![("user".into(), json!("q"))],
            ..with_path(&["a", "d"])
        };
        next.globals.insert("b".into(), json!(2));
        let d = check(&prev, &next);
        assert_eq!(d.nodes_del, ["X"]);
        assert_eq!(d.counters_del, ["I"]);
        assert_eq!(
            d.retrieval,
            Some(Splice {
                keep: 0,
                push: vec![]
            })
        );
    }

    #[test]
    fn key_order_changes_are_kept() {
        let mut prev = RunState::default();
        prev.globals.insert("a".into(), json!(1));
        prev.globals.insert("b".into(), json!(2));
        prev.set_output("N", "x", json!({"p": 1, "q": 2}));
        let mut next = prev.clone();
        next.globals.shift_remove("a");
        next.globals.insert("a".into(), json!(1));
        next.set_output("N", "x", json!({"q": 2, "p": 1}));
        let d = check(&prev, &next);
        assert!(matches!(d.globals, Some(ObjectDelta::Replace(_))));
        assert!(
            d.nodes.contains_key("N"),
            "a reordered inner object is a change"
        );
    }

    #[test]
    fn random_states_round_trip() {
        for seed in 1..=300u64 {
            let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut prev = RunState::default();
            for _ in 0..r.below(5) {
                mutate(&mut r, &mut prev);
            }
            for _ in 0..20 {
                let mut next = prev.clone();
                mutate(&mut r, &mut next);
                check(&prev, &next);
                // Also between unrelated states.
                check(&next, &RunState::default());
                check(&RunState::default(), &next);
                prev = next;
            }
        }
    }

    #[test]
    fn appended_items_are_stored_instead_of_the_whole_list() {
        let mut prev = RunState::default();
        // A new list: the component is stored whole.
        prev.append_output("Iteration:I", "out", json!("a"));
        assert!(prev.touched.has("Iteration:I"));
        prev.set_output("Iteration:I", "_created_time", json!(1.5));
        prev.touched.clear();
        let mut next = prev.clone();
        next.append_output("Iteration:I", "out", json!("b"));
        next.append_output("Iteration:I", "out", json!({"c": [1]}));
        let d = diff_touched(&prev, &next);
        assert!(d.nodes.is_empty(), "{d:?}");
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            json!({"appends": {"Iteration:I": {"out": ["b", {"c": [1]}]}}})
        );
        let back: Delta = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        let mut got = prev.clone();
        apply(&mut got, back).unwrap();
        assert_exact(&got, &next);
        // Any other change to it: stored whole, its appends with it.
        next.set_output("Iteration:I", "_elapsed_time", json!(2.0));
        let d = diff_touched(&prev, &next);
        assert!(d.appends.is_empty(), "{d:?}");
        assert!(d.nodes.contains_key("Iteration:I"));
        let mut got = prev.clone();
        apply(&mut got, d).unwrap();
        assert_exact(&got, &next);
    }

    #[test]
    fn an_append_to_a_list_the_state_lacks_does_not_apply() {
        let d: Delta = serde_json::from_value(json!({"appends": {"X": {"out": [1]}}})).unwrap();
        let err = apply(&mut RunState::default(), d.clone()).unwrap_err();
        assert!(err.to_string().contains("\"X\""), "{err}");
        let mut s = RunState::default();
        s.set_output("X", "out", json!("not a list"));
        let err = apply(&mut s, d).unwrap_err();
        assert!(err.to_string().contains("not a list"), "{err}");
    }

    /// Appends, other changes and checkpoints in random order: each delta, through its
    /// JSON, takes the last checkpoint's state to the current one exactly.
    #[test]
    fn random_appends_and_changes_checkpoint_exactly() {
        for seed in 1..=200u64 {
            let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut prev = RunState::default();
            let mut next = prev.clone();
            for step in 0..60 {
                let id = format!("Node:{}", r.below(3));
                let out = format!("o{}", r.below(2));
                match r.below(6) {
                    0..=2 => next.append_output(&id, &out, value(&mut r, 0)),
                    3 => next.set_output(&id, &out, value(&mut r, 0)),
                    4 => {
                        let v = value(&mut r, 0);
                        next.node_mut(&id).inputs.insert(key(&mut r), v);
                    }
                    _ => {}
                }
                if step == 59 || r.chance(30) {
                    let d = diff_touched(&prev, &next);
                    let text = serde_json::to_string(&d).unwrap();
                    apply(&mut prev, serde_json::from_str(&text).unwrap()).unwrap();
                    assert_exact(&prev, &next);
                    next.touched.clear();
                }
            }
        }
    }

    #[test]
    fn known_fields_match_run_state() {
        // When this fails, `RunState` grew a field: give it a delta of its own above
        // (until then it is carried whole in `extra`, which costs a full serialisation).
        let v = serde_json::to_value(RunState::default()).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, KNOWN_FIELDS);
        assert!(!has_unknown_fields());
    }
}
