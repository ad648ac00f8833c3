//! `template`: references and templates (`engine::refs`, `engine::template`,
//! `engine::jinja`) over a run state. Input: `STATE \0 TEXT`, where STATE is
//! `{"globals": {...}, "nodes": {id: {output: value}}}` added to a small fixed state
//! (anything else adds nothing).

use canvas_engine::RunState;
use canvas_engine::refs::{self, RefError};
use canvas_engine::state::NodeState;
use canvas_engine::template::{self, JinjaMode, MergeRef, Piece};
use serde_json::{Value, json};

/// A text rendered by every routine RAGFlow substitutes references with, and each
/// reference in it resolved and assigned.
pub fn template(data: &[u8]) {
    let [state, text] = crate::parts::<2>(data);
    let Some(text) = crate::text(text) else {
        return;
    };
    let mut state = base_state(state);

    let found = refs::collect(text, &|alias| {
        (alias.eq_ignore_ascii_case("item")).then(|| "Iteration:It@item".to_string())
    });
    let mut merge_refs = Vec::new();
    let mut kv = Vec::new();
    for r in &found {
        let got = refs::resolve(&state, &r.exp);
        let with = refs::resolve_with(&state, &r.exp, Value::clone);
        assert_eq!(got, with, "resolve_with agrees with resolve: {}", r.exp);
        walks_agree(&state, &r.exp);
        if let Ok(v) = got {
            merge_refs.push((r.raw.as_str(), r.exp.as_str(), template::plain_text(&v)));
            kv.push((r.exp.clone(), v));
        }
    }

    match template::value_with_variable(&state, text) {
        Ok(out) if found.is_empty() => assert_eq!(out, text),
        Ok(_) | Err(RefError::UnknownGlobal(_) | RefError::UnknownComponent(_)) => {}
    }
    let _ = template::string_format(text, &kv);
    let merge_refs: Vec<MergeRef<'_>> = merge_refs
        .iter()
        .map(|(raw, exp, t)| MergeRef {
            raw,
            exp,
            text: t.clone(),
        })
        .collect();
    let marked = template::merge(text, &merge_refs, JinjaMode::WhenMarked);
    if merge_refs.is_empty() && !template::has_jinja(text) {
        assert_eq!(marked, text, "nothing to merge");
    }
    let _ = template::merge(text, &merge_refs, JinjaMode::Always);
    let vars: Vec<(String, String)> = merge_refs
        .iter()
        .map(|r| (template::identifier(r.exp), r.text.clone()))
        .collect();
    let _ = canvas_engine::jinja::render_jinja(text, &vars);
    pieces_cover(text);

    let id = template::identifier(text);
    assert_eq!(id.chars().count(), text.chars().count());
    assert!(!id.contains(['@', ':', '.']));

    // The whole text as an expression, as a Switch or VariableAssigner meets it.
    let _ = refs::is_ref(&state, text);
    let _ = refs::resolve(&state, text);
    assign_then_read(&mut state, text);
    for r in &found {
        assign_then_read(&mut state, &r.exp);
    }
}

/// The fixed state every input starts from, plus what `extra` adds.
fn base_state(extra: &[u8]) -> RunState {
    let mut s = RunState::default();
    s.globals.insert("sys.query".into(), json!("hello"));
    s.globals.insert("sys.user_id".into(), json!(7));
    s.globals
        .insert("env.list".into(), json!([1, "two", {"3": null}]));
    let mut begin = NodeState::default();
    begin
        .outputs
        .insert("obj".into(), json!({"a": {"b": [10, 20]}, "s": "[3, 4]"}));
    begin
        .outputs
        .insert("lst".into(), json!([1, "x", {"k": 2}, "{\"j\": [5]}"]));
    begin.outputs.insert("js".into(), json!("{\"k\": [5]}"));
    begin.outputs.insert("none".into(), Value::Null);
    begin.outputs.insert("n".into(), json!(1.5e300));
    s.nodes.insert("begin".into(), begin.into());
    s.nodes.insert("Iteration:It".into(), Default::default());

    let Ok(Value::Object(extra)) = serde_json::from_slice::<Value>(extra) else {
        return s;
    };
    if let Some(Value::Object(g)) = extra.get("globals") {
        for (k, v) in g {
            s.globals.insert(k.clone(), v.clone());
        }
    }
    if let Some(Value::Object(nodes)) = extra.get("nodes") {
        for (id, outputs) in nodes {
            let node = s.node_mut(id);
            if let Value::Object(o) = outputs {
                node.outputs.extend(o.clone());
            }
        }
    }
    s
}

/// A dotted reference reads the same walked in place as walked on a copy
/// (`get_variable_param_value`).
fn walks_agree(state: &RunState, exp: &str) {
    let plain = refs::strip_ref(exp);
    let Some((cpn, var)) = plain.split_once('@') else {
        return;
    };
    let Some((root, rest)) = var.split_once('.') else {
        return;
    };
    if rest.is_empty() || !state.has_node(cpn) {
        return;
    }
    let copy = refs::walk_path(state.output(cpn, root), rest);
    assert_eq!(refs::resolve(state, exp), Ok(copy), "{exp}");
}

/// A value assigned to an expression reads back from it (RAGFlow's
/// `set_variable_value` then `get_variable_value`), for paths without empty segments.
fn assign_then_read(state: &mut RunState, exp: &str) {
    let plain = refs::strip_ref(exp);
    let path_ok = match plain.split_once('@') {
        Some((_, var)) => var.split('.').all(|seg| !seg.is_empty()),
        None => true,
    };
    let value = json!({"fuzz": [plain.len()]});
    match refs::assign(state, exp, value.clone()) {
        Ok(()) if path_ok => assert_eq!(refs::resolve(state, exp), Ok(value), "{exp}"),
        Ok(()) | Err(_) => {}
    }
}

/// The streaming Message's pieces keep the text between references as it is, in order.
fn pieces_cover(text: &str) {
    let mut at = 0;
    for p in template::stream_pieces(text) {
        match p {
            Piece::Text(t) => {
                assert!(!t.is_empty());
                let found = text[at..].find(&t).expect("a piece is part of the text");
                at += found + t.len();
            }
            Piece::Ref(r) => assert!(!r.is_empty()),
        }
    }
}
