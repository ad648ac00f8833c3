//! The scheduler with this build's components: a turn continued from any checkpoint, or
//! stopped at any node boundary and continued, ends as if it never stopped.

use std::sync::Arc;

use canvas_components::Registry;
use canvas_engine::{
    Canvas, Event, EventSink, Outcome, RunConfig, RunState, StopReason, StopSignal, run_turn,
};
use serde_json::{Value, json};
/// begin → (Message:A, VariableAssigner:V, Message:B) → Message:C → Loop:L (3 passes)
/// → LLM:G → Message:D: a batch of three, streaming Messages, a Loop, and a model
/// answer streamed into a Message (its `node_finished` after the Message's end).
fn canvas() -> Canvas {
    let dsl = json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}},
                  "downstream": ["Message:A", "VariableAssigner:V", "Message:B"]},
        "Message:A": {"obj": {"component_name": "Message", "params": {"content": ["a={sys.query}"]}},
                      "downstream": ["Message:C"]},
        "VariableAssigner:V": {"obj": {"component_name": "VariableAssigner", "params": {"variables": [
            {"variable": "env.n", "operator": "+=", "parameter": 1}]}}, "downstream": ["Message:C"]},
        "Message:B": {"obj": {"component_name": "Message", "params": {"content": ["b {env.n}"]}},
                      "downstream": ["Message:C"]},
        "Message:C": {"obj": {"component_name": "Message", "params": {"content": ["c={env.n}"]}},
                      "downstream": ["Loop:L"]},
        "Loop:L": {"obj": {"component_name": "Loop", "params": {
            "loop_variables": [{"variable": "i", "input_mode": "constant", "type": "number", "value": 0}],
            "loop_termination_condition": [{"variable": "Loop:L@i", "operator": "≥",
                "input_mode": "constant", "value": 3}],
            "logical_operator": "and", "maximum_loop_count": 10}}, "downstream": ["LLM:G"]},
        "LLM:G": {"obj": {"component_name": "LLM", "params": {"llm_id": "m"}},
                  "downstream": ["Message:D"]},
        "LoopItem:S": {"obj": {"component_name": "LoopItem", "params": {}},
                       "downstream": ["VariableAssigner:Inc"], "parent_id": "Loop:L"},
        "VariableAssigner:Inc": {"obj": {"component_name": "VariableAssigner", "params": {"variables": [
            {"variable": "Loop:L@i", "operator": "+=", "parameter": 1}]}},
            "downstream": [], "parent_id": "Loop:L"},
        "Message:D": {"obj": {"component_name": "Message", "params": {"content": ["i={Loop:L@i} n={env.n} {LLM:G@content}"]}},
                      "downstream": []}
    }, "globals": {"sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0,
                   "sys.files": [], "sys.history": [], "env.n": 0},
       "variables": {"n": {"name": "n", "type": "number", "value": 0}}});
    let dsl = canvas_dsl::load::from_value(dsl).unwrap();
    Canvas::compile(dsl, &Registry).unwrap()
}

/// Keeps every event, and a copy of the state (with the event count) at each
/// checkpoint: what a store would hold if the process died right after it.
#[derive(Default)]
struct Recorder {
    events: Vec<Event>,
    snaps: Vec<(usize, RunState)>,
    stop_after: Option<(usize, StopSignal)>,
}

impl EventSink for Recorder {
    fn emit(&mut self, ev: &Event) -> std::io::Result<()> {
        self.events.push(ev.clone());
        Ok(())
    }

    fn checkpoint(&mut self, state: &RunState) -> std::io::Result<()> {
        self.snaps.push((self.events.len(), state.clone()));
        if let Some((n, stop)) = &self.stop_after {
            if self.snaps.len() == *n {
                stop.request(StopReason::Interrupted);
            }
        }
        Ok(())
    }
}

/// What must not change when a turn is continued: the event, its component,
/// message text and outputs (times aside); and one message id for the whole turn.
fn norm(evs: &[Event]) -> Vec<String> {
    let ids: std::collections::HashSet<&str> = evs.iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(ids.len(), 1, "one turn, one message id");
    evs.iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap();
            let d = &mut v["data"];
            for k in ["created_at", "elapsed_time"] {
                if let Some(o) = d.as_object_mut() {
                    o.remove(k);
                }
            }
            if let Some(o) = d.get_mut("outputs").and_then(Value::as_object_mut) {
                o.remove("_created_time");
                o.remove("_elapsed_time");
            }
            format!("{} {}", v["event"], v["data"])
        })
        .collect()
}

/// A checkpoint after every node, so every boundary is exercised.
fn cfg() -> RunConfig {
    RunConfig {
        run_id: "r".into(),
        query: "q".into(),
        checkpoint_group: std::time::Duration::ZERO,
        models: Arc::new(canvas_llm::OneModel(Arc::new(canvas_llm::MockModel::new(
            canvas_llm::MockScript::parse("{}", "mock.json").unwrap(),
        )))),
        ..RunConfig::default()
    }
}

fn run(canvas: &Canvas, state: RunState, cfg: &RunConfig, sink: &mut Recorder) -> Outcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (_, out) = rt.block_on(run_turn(canvas, state, cfg, sink));
    out.unwrap()
}

#[test]
fn a_turn_continued_from_any_checkpoint_ends_as_if_never_stopped() {
    continue_from_every_checkpoint(&cfg(), 10);
}

#[test]
fn grouped_checkpoints_continue_as_well() {
    // An hour-long group: instant nodes are only checkpointed before the others.
    let cfg = RunConfig {
        checkpoint_group: std::time::Duration::from_secs(3600),
        ..cfg()
    };
    continue_from_every_checkpoint(&cfg, 4);
}

fn continue_from_every_checkpoint(cfg: &RunConfig, at_least: usize) {
    let canvas = canvas();
    let mut full = Recorder::default();
    let Outcome::Finished { outputs } = run(&canvas, canvas.fresh_state(), cfg, &mut full) else {
        panic!("the reference turn did not finish")
    };
    assert_eq!(outputs["content"], "i=3n=1ECHO: q");
    assert!(
        full.snaps.len() >= at_least,
        "{} checkpoints",
        full.snaps.len()
    );
    let want = norm(&full.events);
    for (k, (stored, snap)) in full.snaps.iter().enumerate() {
        assert!(snap.cursor.is_some(), "checkpoint {k} has no cursor");
        let mut rest = Recorder::default();
        let out = run(&canvas, snap.clone(), cfg, &mut rest);
        assert!(
            matches!(&out, Outcome::Finished { outputs } if outputs["content"] == "i=3n=1ECHO: q"),
            "continued from checkpoint {k}: {out:?}"
        );
        let mut got = full.events[..*stored].to_vec();
        got.extend(rest.events);
        assert_eq!(norm(&got), want, "continued from checkpoint {k}");
    }
}

#[test]
fn a_stop_request_ends_the_turn_at_a_node_boundary_and_it_continues() {
    let canvas = canvas();
    let mut full = Recorder::default();
    run(&canvas, canvas.fresh_state(), &cfg(), &mut full);
    let want = norm(&full.events);
    for n in 1..full.snaps.len() {
        let stop = StopSignal::new();
        let cfg = RunConfig {
            stop: stop.clone(),
            ..cfg()
        };
        let mut first = Recorder {
            stop_after: Some((n, stop)),
            ..Recorder::default()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (state, out) = rt.block_on(run_turn(&canvas, canvas.fresh_state(), &cfg, &mut first));
        assert_eq!(
            out.unwrap(),
            Outcome::Stopped {
                reason: StopReason::Interrupted
            },
            "stop after checkpoint {n}"
        );
        assert!(state.cursor.is_some());
        let mut rest = Recorder::default();
        // The cursor carries the query and inputs; the models come with the command.
        let again = RunConfig {
            models: cfg.models.clone(),
            ..RunConfig::default()
        };
        run(&canvas, state, &again, &mut rest);
        let mut got = first.events;
        got.extend(rest.events);
        assert_eq!(norm(&got), want, "stopped after checkpoint {n}");
    }
}
