//! Building the messages of a model call (`llm-and-tools.md` §3.2): variables
//! substituted into the prompts, images pulled out, `sys.files` appended, conversation
//! history prepended, tagged sections cut from the system prompt, the citation prompt,
//! and fitting into the model's context.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use super::params::{LlmParams, Prompt};
use canvas_engine::template::string_format;
use canvas_engine::{CResult, ComponentError, NodeCx};
use canvas_llm::{Message, Role};
use canvas_pyrt::py_json;

static IMAGE_URI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"data:image/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+/=]+").expect("static regex")
});

/// Whether `s` may hold an image URI: every match starts with this text. The regex,
/// a good part of a millisecond to build, is built only for text that does.
fn may_hold_image(s: &str) -> bool {
    s.contains("data:image/")
}

/// Sections of a system prompt RAGFlow's older planner used; cut before the call.
/// Every match holds `</` (see [`may_hold_image`] for why that is looked for first).
static TAGGED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?is)<(TASK_ANALYSIS|PLAN_GENERATION|REFLECTION|CONTEXT_SUMMARY|CONTEXT_RANKING|CITATION_GUIDELINES)>.*?</(TASK_ANALYSIS|PLAN_GENERATION|REFLECTION|CONTEXT_SUMMARY|CONTEXT_RANKING|CITATION_GUIDELINES)>",
    )
    .expect("static regex")
});

/// The messages of one call, system prompt first (when not empty).
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The conversation to send.
    pub messages: Vec<Message>,
}

/// RAGFlow's `get_history(n)`: the last `2n` turns as (role, text); an assistant turn
/// stored as an output dict reads as its `content`.
pub fn history(cx: &NodeCx<'_>, window: i64) -> Vec<(String, String)> {
    if window <= 0 {
        return Vec::new();
    }
    cx.with_state(|st| {
        let n = (window as usize).saturating_mul(2);
        let skip = st.history.len().saturating_sub(n);
        st.history[skip..]
            .iter()
            .map(|(role, v)| {
                let text = match v {
                    Value::Object(o) => match o.get("content") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Null) | None => String::new(),
                        Some(other) => py_json(other),
                    },
                    Value::String(s) => s.clone(),
                    Value::Null => "None".to_string(),
                    other => py_json(other),
                };
                (role.clone(), text)
            })
            .collect()
    })
}

fn role_of(r: &str) -> Role {
    match r {
        "assistant" => Role::Assistant,
        "system" => Role::System,
        _ => Role::User,
    }
}

/// Collect `data:image/...` URIs found in a value (a dict is read through its
/// `content` key when it has one).
fn collect_images(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if may_hold_image(s) => {
            out.extend(IMAGE_URI.find_iter(s).map(|m| m.as_str().to_string()))
        }
        Value::String(_) => {}
        Value::Array(a) => a.iter().for_each(|x| collect_images(x, out)),
        Value::Object(o) => match o.get("content") {
            Some(c) => collect_images(c, out),
            None => o.values().for_each(|x| collect_images(x, out)),
        },
        _ => {}
    }
}

/// The substitution table of a text: each reference's value as prompt text (images
/// pulled out, `None` → "", non-strings as JSON). Values are recorded as the
/// component's inputs when `record` is set.
fn substitutions(
    cx: &NodeCx<'_>,
    text: &str,
    record: bool,
    images: &mut Vec<String>,
) -> CResult<Vec<(String, Value)>> {
    let mut kv = Vec::new();
    for e in cx.collect_refs(text) {
        let v = cx.resolve(&e.exp)?;
        let s = match &v {
            Value::Null => String::new(),
            Value::String(s) if !may_hold_image(s) => s.clone(),
            Value::String(s) => {
                let before = images.len();
                images.extend(IMAGE_URI.find_iter(s).map(|m| m.as_str().to_string()));
                if images.len() > before {
                    IMAGE_URI.replace_all(s, "").into_owned()
                } else {
                    s.clone()
                }
            }
            other => py_json(other),
        };
        if record {
            cx.set_input(&e.exp, json!(s));
        }
        kv.push((e.raw, Value::String(s)));
    }
    Ok(kv)
}

/// The node-started text: the last prompt, rendered.
pub fn thoughts(cx: &NodeCx<'_>, p: &LlmParams) -> String {
    let last = p.prompts.last().map(|m| m.content.as_str()).unwrap_or("");
    let mut images = Vec::new();
    let text = match substitutions(cx, last, false, &mut images) {
        Ok(kv) => string_format(last, &kv),
        Err(_) => last.to_string(),
    };
    let text = text.replace("User's query:", "").replace('\\', "");
    format!("⌛Give me a moment—starting from: \n\n{text}\n\nI’ll figure out our best next move.")
}

/// Build the messages of a call. `prompts` replaces the configured prompts (a
/// sub-Agent called as a tool); `record` stores variable values as inputs.
pub fn prepare(
    cx: &NodeCx<'_>,
    p: &LlmParams,
    prompts: Option<&[Prompt]>,
    record: bool,
    context_length: usize,
) -> CResult<Prepared> {
    let prompts = prompts.unwrap_or(&p.prompts);
    let mut images = Vec::new();
    if let Some(var) = &p.visual_files_var {
        if let Ok(v) = cx.resolve(var) {
            collect_images(&v, &mut images);
        }
    }
    let mut all = p.sys_prompt.clone();
    for m in prompts {
        all.push(' ');
        all.push_str(&m.content);
    }
    let kv = substitutions(cx, &all, record, &mut images)?;
    let mut msgs: Vec<Message> = Vec::new();
    let hist = history(cx, p.window);
    let keep = hist.len().saturating_sub(1);
    for (role, text) in hist.into_iter().take(keep) {
        msgs.push(Message::text(role_of(&role), text));
    }
    for (i, m) in prompts.iter().enumerate() {
        let msg = Message::text(role_of(&m.role), string_format(&m.content, &kv));
        if i == 0 && msgs.last().is_some_and(|l| l.role == msg.role) {
            if let Some(l) = msgs.last_mut() {
                *l = msg;
            }
            continue;
        }
        msgs.push(msg);
    }
    if !all.contains("{sys.files}") {
        append_files(cx, &mut msgs, &mut images);
    }
    let mut system = string_format(&p.sys_prompt, &kv);
    if system.contains("</") {
        system = TAGGED.replace_all(&system, "").into_owned();
    }
    if p.cite && has_references(cx) {
        system.push_str(&super::prompts::citation_prompt());
    }
    let mut full = Vec::with_capacity(msgs.len() + 1);
    if !system.is_empty() {
        full.push(Message::text(Role::System, system));
    }
    full.extend(msgs);
    let budget = (context_length as f64 * 0.97) as usize;
    let mut fitted = super::fit::fit(full, budget);
    let users = fitted.iter().filter(|m| m.role != Role::System).count();
    match fitted.last() {
        _ if users == 0 => {
            return Err(ComponentError::Failed(
                "**ERROR**: LLM has insufficient messages after prompt fitting; check the prompts and the model's context length".into(),
            ));
        }
        Some(last) if last.role != Role::User || last.text_content().trim().is_empty() => {
            return Err(ComponentError::Failed(
                "**ERROR**: LLM user message is empty after prompt fitting; check model max_tokens context setting".into(),
            ));
        }
        _ => {}
    }
    images.dedup();
    if !images.is_empty() {
        attach_images(&mut fitted, &images);
    }
    Ok(Prepared { messages: fitted })
}

/// True when the run's reference store holds chunks (citations then make sense).
pub fn has_references(cx: &NodeCx<'_>) -> bool {
    cx.with_state(|st| {
        st.retrieval.last().is_some_and(|r| match r.get("chunks") {
            Some(Value::Object(o)) => !o.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            _ => false,
        })
    })
}

/// `sys.files`: images go with the images, other files' text is appended to the last
/// user message (or sent as a new one).
fn append_files(cx: &NodeCx<'_>, msgs: &mut Vec<Message>, images: &mut Vec<String>) {
    let Ok(Value::Array(files)) = cx.resolve("sys.files") else {
        return;
    };
    let mut texts = Vec::new();
    for f in files {
        match f {
            Value::String(s) if s.starts_with("data:image/") => images.push(s),
            Value::String(s) => texts.push(s),
            Value::Null => {}
            other => texts.push(py_json(&other)),
        }
    }
    if texts.is_empty() {
        return;
    }
    let extra = texts.join("\n\n");
    match msgs.iter_mut().rev().find(|m| m.role == Role::User) {
        Some(m) => {
            let t = format!("{}\n\n{extra}", m.text_content());
            m.content = Value::String(t);
        }
        None => msgs.push(Message::text(Role::User, extra)),
    }
}

/// Images ride on the first user message as `image_url` parts, after its text.
fn attach_images(msgs: &mut [Message], images: &[String]) {
    if let Some(m) = msgs.iter_mut().find(|m| m.role == Role::User) {
        let mut parts = vec![json!({"type": "text", "text": m.text_content()})];
        for url in images {
            parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
        }
        m.content = Value::Array(parts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;

    fn harness(params: Value) -> Harness {
        Harness::single(
            &crate::Registry,
            "LLM:A",
            "Begin",
            params,
            json!({"sys.query": "hello", "sys.date": "2025-01-01", "sys.files": []}),
        )
    }

    fn params(v: Value) -> LlmParams {
        LlmParams::parse(v.as_object().unwrap(), "LLM", 13).unwrap()
    }

    #[test]
    fn prompts_history_and_system() {
        let h = harness(json!({}));
        h.with_state(|st| {
            st.history = vec![
                ("user".into(), json!("earlier")),
                ("assistant".into(), json!({"content": "answer", "x": 1})),
                ("user".into(), json!("hello")),
            ];
        });
        let p = params(
            json!({"sys_prompt": "Today is {sys.date}.<REFLECTION>cut</reflection>",
            "prompts": [{"role": "user", "content": "Q: {sys.query}"}], "cite": false}),
        );
        let out = h
            .with_cx("LLM:A", |cx| prepare(cx, &p, None, true, 8192))
            .unwrap();
        let got: Vec<(Role, String)> = out
            .messages
            .iter()
            .map(|m| (m.role, m.text_content()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Role::System, "Today is 2025-01-01.".to_string()),
                (Role::User, "earlier".to_string()),
                (Role::Assistant, "answer".to_string()),
                (Role::User, "Q: hello".to_string()),
            ]
        );
        assert_eq!(h.input("LLM:A", "sys.query"), json!("hello"));
        assert_eq!(h.input("LLM:A", "sys.date"), json!("2025-01-01"));
    }

    #[test]
    fn first_prompt_replaces_a_last_history_turn_of_its_role() {
        let h = harness(json!({}));
        h.with_state(|st| {
            st.history = vec![
                ("user".into(), json!("a")),
                ("assistant".into(), json!("b")),
                ("user".into(), json!("c")),
                ("assistant".into(), json!("d")),
            ];
        });
        let p = params(
            json!({"prompts": [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]}),
        );
        let out = h
            .with_cx("LLM:A", |cx| prepare(cx, &p, None, false, 8192))
            .unwrap();
        let texts: Vec<String> = out.messages.iter().map(|m| m.text_content()).collect();
        // History minus its last entry is [a, b, c]; "x" (assistant) follows "c" (user).
        assert_eq!(texts, vec!["a", "b", "c", "x", "y"]);
    }

    #[test]
    fn an_empty_user_message_is_an_error() {
        let h = harness(json!({}));
        let p = params(json!({"prompts": [{"role": "user", "content": "   "}]}));
        let e = h
            .with_cx("LLM:A", |cx| prepare(cx, &p, None, false, 8192))
            .unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
    }

    #[test]
    fn images_are_pulled_out_of_values_and_attached() {
        let h = harness(json!({}));
        h.set_output("begin", "pic", json!("see data:image/png;base64,AAAA end"));
        let p = params(json!({"prompts": [{"role": "user", "content": "look {begin@pic}"}]}));
        let out = h
            .with_cx("LLM:A", |cx| prepare(cx, &p, None, false, 8192))
            .unwrap();
        let last = out.messages.last().unwrap();
        assert_eq!(
            last.content,
            json!([{"type": "text", "text": "look see  end"},
                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}])
        );
    }

    /// The old planner's sections are cut from the system prompt whatever their case;
    /// other tags, and a prompt with no closing tag, stay as they are.
    #[test]
    fn planner_sections_are_cut_from_the_system_prompt() {
        let h = harness(json!({}));
        let system = |sys: &str| {
            let p = params(json!({ "sys_prompt": sys }));
            let out = h
                .with_cx("LLM:A", |cx| prepare(cx, &p, None, false, 8192))
                .unwrap();
            out.messages[0].text_content()
        };
        assert_eq!(
            system("A<task_analysis>x\ny</TASK_ANALYSIS>B<Reflection>z</reflection>C"),
            "ABC"
        );
        assert_eq!(system("A<note>x</note>B"), "A<note>x</note>B");
        assert_eq!(
            system("A<REFLECTION>never closed"),
            "A<REFLECTION>never closed"
        );
    }

    #[test]
    fn file_text_goes_to_the_last_user_message() {
        let h = harness(json!({}));
        h.with_state(|st| {
            st.globals
                .insert("sys.files".into(), json!(["file one", "file two"]));
        });
        let p = params(json!({}));
        let out = h
            .with_cx("LLM:A", |cx| prepare(cx, &p, None, false, 8192))
            .unwrap();
        assert_eq!(
            out.messages.last().unwrap().text_content(),
            "hello\n\nfile one\n\nfile two"
        );
    }

    #[test]
    fn citations_only_with_references() {
        let h = harness(json!({}));
        let p = params(json!({"sys_prompt": "S"}));
        let out = h
            .with_cx("LLM:A", |cx| prepare(cx, &p, None, false, 8192))
            .unwrap();
        assert_eq!(out.messages[0].text_content(), "S");
        h.with_state(|st| {
            st.retrieval
                .push(json!({"chunks": {"1": {"content": "c"}}, "doc_aggs": {}}))
        });
        let out = h
            .with_cx("LLM:A", |cx| prepare(cx, &p, None, false, 8192))
            .unwrap();
        assert!(out.messages[0].text_content().len() > 1);
        assert!(out.messages[0].text_content().starts_with('S'));
    }
}
