//! `mock_script`: a `--mock-llm` script, and the answers it gives. Input:
//! `SCRIPT \0 USER MESSAGE \0 SYSTEM PROMPT`.

use canvas_llm::mock::{MockModel, MockScript};
use canvas_llm::{ChatRequest, Delta, Message, Role, count_tokens};

/// A script parses or is refused with a message; a parsed one answers any message with
/// chunks, then one usage.
pub fn mock_script(data: &[u8]) {
    let Some([script, user, system]) = crate::text_parts::<3>(data) else {
        return;
    };
    let script = match MockScript::parse(script, "mock.yaml") {
        Ok(s) => s,
        Err(e) => {
            assert!(e.to_string().starts_with("mock.yaml"), "{e}");
            return;
        }
    };
    let _ = script.date();
    let mut messages = Vec::new();
    if !system.is_empty() {
        messages.push(Message::text(Role::System, system));
    }
    messages.push(Message::text(Role::User, user));
    let req = ChatRequest {
        messages,
        ..Default::default()
    };
    let model = MockModel::new(script);
    for _ in 0..2 {
        answer(&model.deltas(&req).collect::<Vec<_>>());
    }
}

fn answer(deltas: &[Delta]) {
    let Some((Delta::Usage(usage), chunks)) = deltas.split_last() else {
        panic!("a usage closes every answer: {deltas:?}");
    };
    let mut text = String::new();
    for d in chunks {
        match d {
            // `chunk: whole` sends an empty answer as one empty chunk.
            Delta::Text(t) => {
                assert!(!t.is_empty() || chunks.len() == 1, "no empty chunk");
                text.push_str(t);
            }
            Delta::ToolCalls(calls) => assert!(!calls.is_empty()),
            Delta::Reasoning(_) | Delta::Usage(_) => panic!("unexpected {d:?}"),
        }
    }
    if chunks.iter().all(|d| matches!(d, Delta::Text(_))) {
        assert_eq!(usage.completion_tokens, count_tokens(&text));
    }
}
