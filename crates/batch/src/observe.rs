//! What a row's run gave, read from its stored events (so a row finished by a worker
//! that took it over reads the same as one finished in one go): the answer, the final
//! outputs, each component's last outputs, and the tokens used.

use std::collections::HashMap;

use canvas_engine::usage::Usage;
use canvas_engine::{Event, EventKind};
use canvas_pyrt::Object;
use serde_json::Value;

/// What a run gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// The text of the last turn's `message` events (reasoning left out).
    pub answer: String,
    /// The last `workflow_finished` outputs (null when no turn finished).
    pub outputs: Value,
    /// Each component's outputs at its last `node_finished`.
    pub nodes: HashMap<String, Object>,
    /// Tokens used by every turn's model calls (summed over `node_finished`).
    pub usage: Usage,
}

impl Observed {
    /// Read the run's stored event lines; unreadable lines are skipped (they are
    /// reported by `canvas events`, not here).
    pub fn of(lines: &[String]) -> Observed {
        let mut seen = Observed {
            outputs: Value::Null,
            ..Observed::default()
        };
        let mut turn: Option<String> = None;
        let mut thinking = false;
        for line in lines {
            let Ok(ev) = serde_json::from_str::<Event>(line) else {
                continue;
            };
            // Each turn has its own message id: the answer is the last turn's.
            if turn.as_deref() != Some(ev.message_id.as_str()) {
                turn = Some(ev.message_id.clone());
                seen.answer.clear();
                thinking = false;
            }
            match ev.kind {
                EventKind::Message(m) => {
                    if m.start_to_think == Some(true) {
                        thinking = true;
                    } else if m.end_to_think == Some(true) {
                        thinking = false;
                    } else if !thinking {
                        match m.content {
                            Value::String(s) => seen.answer.push_str(&s),
                            Value::Null => {}
                            other => seen.answer.push_str(&other.to_string()),
                        }
                    }
                }
                EventKind::NodeFinished(n) => {
                    // Per component: a turn that ends at a form has no workflow_finished
                    // to sum its calls.
                    if let Some(u) = n.usage {
                        add(&mut seen.usage, u);
                    }
                    seen.nodes
                        .insert(n.component_id.to_string(), n.outputs.into_object());
                }
                EventKind::WorkflowFinished(w) => seen.outputs = w.outputs,
                _ => {}
            }
        }
        seen
    }

    /// A named output: `COMPONENT_ID@NAME` (dotted into objects), else a key of the
    /// final outputs.
    pub fn output(&self, name: &str) -> Option<Value> {
        if let Some((id, path)) = name.split_once('@') {
            let mut parts = path.split('.');
            let first = parts.next()?;
            let mut v = self.nodes.get(id)?.get(first)?;
            for p in parts {
                v = match v {
                    Value::Object(o) => o.get(p)?,
                    Value::Array(a) => a.get(p.parse::<usize>().ok()?)?,
                    _ => return None,
                };
            }
            return Some(v.clone());
        }
        self.outputs.get(name).cloned()
    }
}

fn add(total: &mut Usage, u: Usage) {
    total.prompt_tokens += u.prompt_tokens;
    total.completion_tokens += u.completion_tokens;
    total.total_tokens += u.total_tokens;
    total.calls += u.calls;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(msg: &str, event: &str, data: Value) -> String {
        json!({"event": event, "message_id": msg, "created_at": 1, "task_id": "R", "data": data})
            .to_string()
    }

    #[test]
    fn the_answer_is_the_last_turns_text_without_reasoning() {
        let usage =
            json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, "calls": 1});
        let finished = |out: Value| json!({"inputs": {}, "outputs": out, "elapsed_time": 1.0, "created_at": 1.0, "usage": usage});
        let node = |id: &str, outputs: Value| {
            json!({"inputs": {}, "outputs": outputs, "component_id": id,
                   "component_name": "", "component_type": "C", "error": null,
                   "elapsed_time": 0.1, "created_at": 1.0, "usage": usage})
        };
        let lines = vec![
            line(
                "t1",
                "node_finished",
                node("LLM:a", json!({"content": "x"})),
            ),
            line("t1", "message", json!({"content": "first turn"})),
            line(
                "t1",
                "workflow_finished",
                finished(json!({"content": "first turn"})),
            ),
            line(
                "t2",
                "message",
                json!({"content": "", "start_to_think": true}),
            ),
            line("t2", "message", json!({"content": "hmm"})),
            line(
                "t2",
                "message",
                json!({"content": "", "end_to_think": true}),
            ),
            line("t2", "message", json!({"content": "Hello "})),
            line("t2", "message", json!({"content": "world"})),
            line(
                "t2",
                "node_finished",
                node("C:a", json!({"x": {"y": [1, 2]}})),
            ),
            "not json".to_string(),
            line(
                "t2",
                "workflow_finished",
                finished(json!({"content": "Hello world"})),
            ),
        ];
        let seen = Observed::of(&lines);
        assert_eq!(seen.answer, "Hello world");
        assert_eq!(seen.usage.total_tokens, 10);
        assert_eq!(seen.output("content"), Some(json!("Hello world")));
        assert_eq!(seen.output("C:a@x.y.1"), Some(json!(2)));
        assert_eq!(seen.output("C:a@nope"), None);
        assert_eq!(seen.output("D:b@x"), None);
    }
}
