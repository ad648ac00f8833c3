//! Planning a run's checkpoints in the process that runs it.
//!
//! A [`Checkpointer`] holds the state as of the run's last checkpoint; the next one is a
//! [`Delta`] from it, or a full snapshot when the deltas since the last snapshot would
//! outgrow it (or after [`MAX_DELTAS`] of them). Planning is pure CPU on the running
//! thread; the write itself goes to the store's writer. Each checkpoint has the next
//! number of the run's sequence, and the store refuses one whose predecessor is not the
//! newest stored ([`crate::StoreError::Conflict`]): a process never builds on a base
//! another process has moved past.

use canvas_engine::RunState;

use super::delta::{apply, diff_touched};
use super::{Result, StoreError};

/// Deltas after which a full snapshot is written anyway (bounds loading).
pub const MAX_DELTAS: u32 = 1000;

/// A checkpoint ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointWrite {
    /// Its number in the run's sequence (the stored newest must be `seq - 1`).
    pub seq: i64,
    /// A full snapshot (the rows before it can go) rather than a delta.
    pub full: bool,
    /// The `RunState` JSON, or the [`Delta`](super::Delta) JSON.
    pub json: String,
}

/// The state as of the last checkpoint, and what decides delta or snapshot.
#[derive(Debug, Clone)]
struct Base {
    state: RunState,
    full_bytes: usize,
    delta_bytes: usize,
    deltas: u32,
}

/// Plans one run's checkpoints (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Checkpointer {
    base: Option<Base>,
    /// The newest checkpoint's number (0: none yet).
    seq: i64,
}

impl Checkpointer {
    /// For a run with no checkpoint yet.
    pub fn new() -> Checkpointer {
        Checkpointer::default()
    }

    /// As of a loaded checkpoint: `state` is checkpoint `seq`, made of a snapshot of
    /// `full_bytes` and `deltas` deltas of `delta_bytes` in all.
    pub(crate) fn loaded(
        state: RunState,
        seq: i64,
        full_bytes: usize,
        deltas: u32,
        delta_bytes: usize,
    ) -> Checkpointer {
        Checkpointer {
            base: Some(Base {
                state,
                full_bytes,
                delta_bytes,
                deltas,
            }),
            seq,
        }
    }

    /// The state as of the last checkpoint planned (or loaded).
    pub fn state(&self) -> Option<&RunState> {
        self.base.as_ref().map(|b| &b.state)
    }

    /// The last checkpoint's number (0 when there is none).
    pub fn seq(&self) -> i64 {
        self.seq
    }

    /// The write that takes the stored checkpoint to `next`; `None` when nothing
    /// changed. Trusts `next.touched` to name every component changed since the last
    /// plan (the scheduler clears it after each checkpoint).
    pub fn plan(&mut self, next: &RunState) -> Result<Option<CheckpointWrite>> {
        if let Some(b) = &mut self.base {
            let d = diff_touched(&b.state, next);
            if d.is_empty() {
                return Ok(None);
            }
            let json = to_json(&d)?;
            let small = b.deltas < MAX_DELTAS && b.delta_bytes + json.len() <= b.full_bytes;
            // A delta that does not apply (it always should) falls back to a snapshot,
            // which replaces the base whatever state applying left it in.
            let applied = apply(&mut b.state, d).is_ok();
            if applied && small {
                b.deltas += 1;
                b.delta_bytes += json.len();
                self.seq += 1;
                return Ok(Some(CheckpointWrite {
                    seq: self.seq,
                    full: false,
                    json,
                }));
            }
            if applied {
                // A snapshot is due, and the base has caught up by the delta: no copy
                // of the whole state (its globals, a run's large variables among them,
                // and every node's id), most of which the steps since left alone.
                let json = to_json(next)?;
                b.full_bytes = json.len();
                b.delta_bytes = 0;
                b.deltas = 0;
                self.seq += 1;
                return Ok(Some(CheckpointWrite {
                    seq: self.seq,
                    full: true,
                    json,
                }));
            }
        }
        let json = to_json(next)?;
        self.base = Some(Base {
            state: next.clone(),
            full_bytes: json.len(),
            delta_bytes: 0,
            deltas: 0,
        });
        self.seq += 1;
        Ok(Some(CheckpointWrite {
            seq: self.seq,
            full: true,
            json,
        }))
    }
}

fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|source| StoreError::Json {
        context: "serialising a checkpoint".into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::Delta;
    use serde_json::{Value, json};

    fn step(s: &mut RunState, i: i64) {
        s.globals_mut().insert("env.i".into(), json!(i));
        s.path.push(format!("n{i}").into());
    }

    /// An Iteration's collected outputs grow by one item a pass: each checkpoint stores
    /// the new item, and a full snapshot comes only when the list has about doubled.
    #[test]
    fn a_growing_list_is_checkpointed_by_its_new_items() {
        let mut cp = Checkpointer::new();
        let mut s = RunState::default();
        let item = |i: usize| json!(format!("{i}:{}", "x".repeat(100)));
        s.append_output("Iteration:I", "out", item(0));
        assert!(cp.plan(&s).unwrap().unwrap().full);
        s.touched.clear();
        let mut fulls = 0;
        for i in 1..=500 {
            s.append_output("Iteration:I", "out", item(i));
            let w = cp.plan(&s).unwrap().unwrap();
            if w.full {
                fulls += 1;
            } else {
                assert!(w.json.len() < 200, "pass {i}: {}", w.json);
            }
            s.touched.clear();
        }
        assert!(fulls <= 10, "{fulls} full snapshots for 500 appends");
        assert_eq!(cp.state(), Some(&s));
    }

    #[test]
    fn the_first_plan_is_a_snapshot_then_deltas_that_rebuild_the_state() {
        let mut cp = Checkpointer::new();
        let mut s = RunState::default();
        // Big enough that a few small deltas stay under the snapshot's size.
        s.globals
            .insert("sys.query".into(), json!("x".repeat(2000)));
        step(&mut s, 0);
        let first = cp.plan(&s).unwrap().unwrap();
        assert!(first.full);
        assert_eq!(first.seq, 1);
        let mut rebuilt: RunState = serde_json::from_str(&first.json).unwrap();
        for i in 1..5 {
            step(&mut s, i);
            let w = cp.plan(&s).unwrap().unwrap();
            assert!(!w.full, "pass {i}");
            assert_eq!(w.seq, 1 + i);
            let d: Delta = serde_json::from_str(&w.json).unwrap();
            apply(&mut rebuilt, d).unwrap();
        }
        assert_eq!(rebuilt, s);
        assert_eq!(cp.state(), Some(&s));
        assert_eq!(cp.plan(&s).unwrap(), None, "unchanged: nothing to write");
        assert_eq!(cp.seq(), 5);
    }

    /// A snapshot after deltas brings the base up to date by the last delta: a large
    /// variable no step touched is not copied again, and the state is still the run's.
    #[test]
    fn a_snapshot_after_deltas_keeps_what_did_not_change() {
        let mut cp = Checkpointer::new();
        let mut s = RunState::default();
        let items: Vec<Value> = (0..2000).map(|i| json!(format!("it{i}"))).collect();
        s.globals.insert("env.items".into(), Value::Array(items));
        assert!(cp.plan(&s).unwrap().unwrap().full);
        s.touched.clear();
        let held = |cp: &Checkpointer| {
            cp.state().unwrap().globals["env.items"]
                .as_array()
                .unwrap()
                .as_ptr()
        };
        let first = held(&cp);
        let (mut fulls, mut rebuilt) = (0, None::<RunState>);
        for i in 0..3000 {
            s.set_global("env.count", json!(i));
            s.path.push(format!("VariableAssigner:{i}").into());
            let w = cp.plan(&s).unwrap().unwrap();
            s.touched.clear();
            if w.full {
                fulls += 1;
                rebuilt = Some(serde_json::from_str(&w.json).unwrap());
            } else if let Some(r) = rebuilt.as_mut() {
                apply(r, serde_json::from_str(&w.json).unwrap()).unwrap();
            }
        }
        assert!(
            fulls >= 2,
            "{fulls} snapshots: the test needs the path to outgrow them"
        );
        assert_eq!(
            held(&cp),
            first,
            "the untouched variable is the base's own, not a copy"
        );
        assert_eq!(cp.state(), Some(&s));
        assert_eq!(
            rebuilt.as_ref(),
            Some(&s),
            "the stored snapshot and deltas give the state"
        );
    }

    #[test]
    fn deltas_outgrowing_the_snapshot_give_a_new_snapshot() {
        let mut cp = Checkpointer::new();
        let mut s = RunState::default();
        assert!(cp.plan(&s).unwrap().unwrap().full);
        let mut kinds = Vec::new();
        for i in 0..40 {
            step(&mut s, i);
            kinds.push(cp.plan(&s).unwrap().unwrap().full);
        }
        // The first snapshot is tiny: deltas soon outgrow it, and snapshots recur.
        assert!(kinds.iter().filter(|f| **f).count() >= 2, "{kinds:?}");
        assert!(kinds.iter().any(|f| !f), "{kinds:?}");
    }
}
