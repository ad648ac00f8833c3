//! Message: renders one of its content templates, streamed piece by piece after its
//! batch, or at once through Jinja (`engine.md` §7.2, §3.4 (a) and (d)).

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::{Value, json};

use canvas_dsl::model::kind_name;
use canvas_engine::refs::RefElement;
use canvas_engine::template::{self, JinjaMode, MergeRef, Piece};
use canvas_engine::{
    BuildError, CResult, Chunk, Component, ComponentError, Deferred, NodeCx, ParamError, Role,
};
use canvas_pyrt::{Object, py_json};

/// Build a Message; RAGFlow requires non-empty `content` and a boolean `stream`.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    // A truthy number or boolean passes RAGFlow's `check_empty`; its `random.choice`
    // then fails when the Message runs. It is built, and refused by `check`.
    let mut not_text = None;
    let contents: Vec<String> = match params.get("content") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(String::from).unwrap_or_else(|| py_json(v)))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(v @ (Value::Number(_) | Value::Bool(_))) if canvas_pyrt::truthy(v) => {
            not_text = Some(v.clone());
            Vec::new()
        }
        Some(Value::Object(o)) if !o.is_empty() => {
            return Err(BuildError::Params(
                "[Message] content must be a list of texts, not an object".into(),
            ));
        }
        _ => Vec::new(),
    };
    if contents.is_empty() && not_text.is_none() && params.contains_key("messages") {
        return Err(BuildError::Params(
            "its `content` is empty and it uses the legacy `messages` parameter (RAGFlow renamed it `content`)".into(),
        ));
    }
    if contents.is_empty() && not_text.is_none() {
        return Err(BuildError::Params(
            "[Message] content does not support empty value.".into(),
        ));
    }
    let stream = match params.get("stream") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(BuildError::Params(format!(
                "[Message] stream {} not supported, should be bool type",
                canvas_pyrt::py_str(other)
            )));
        }
    };
    let output_format = params
        .get("output_format")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(String::from);
    Ok(Box::new(Message {
        contents,
        not_text,
        stream,
        output_format,
    }))
}

/// The Message component.
pub struct Message {
    contents: Vec<String>,
    /// `content` when it is a number or a boolean (then `contents` is empty).
    not_text: Option<Value>,
    stream: bool,
    output_format: Option<String>,
}

/// Why a Message with `output_format` cannot run here.
fn unsupported_format(f: &str) -> String {
    format!(
        "Message output_format {f:?} (a file attachment) is not supported yet in this build of canvas"
    )
}

/// The template a streaming Message walks after its batch.
struct StreamPlan {
    template: String,
}

/// RAGFlow's `_stringify_message_value`: download infos move to `downloads` and render
/// as `""` (or inline JSON when asked); `None` → `""`; other non-strings → JSON.
pub fn stringify(v: &Value, downloads: &mut Vec<Value>) -> String {
    let parsed;
    let candidate = match v {
        Value::String(s) if s.trim_start().starts_with(['{', '[']) => {
            parsed = serde_json::from_str::<Value>(s).ok();
            parsed.as_ref()
        }
        Value::Object(_) | Value::Array(_) => Some(v),
        _ => None,
    };
    if let Some(c) = candidate {
        let infos: Option<Vec<&Value>> = match c {
            Value::Object(_) if is_download(c) => Some(vec![c]),
            Value::Array(a) if !a.is_empty() && a.iter().all(is_download) => {
                Some(a.iter().collect())
            }
            _ => None,
        };
        if let Some(infos) = infos {
            let inline = infos.iter().any(|i| {
                i.get("include_download_info_in_content")
                    .is_some_and(canvas_pyrt::truthy)
            });
            downloads.extend(infos.into_iter().map(without_flag));
            // RAGFlow inlines the whole value (minus the flags) when any info asks.
            return if inline {
                py_json(&without_flag(c))
            } else {
                String::new()
            };
        }
    }
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => py_json(other),
    }
}

/// The component whose pending answer `exp` reads (`cpn@content`), if any.
fn stream_source(cx: &NodeCx<'_>, exp: &str) -> Option<String> {
    let (cpn, var) = canvas_engine::refs::strip_ref(exp).split_once('@')?;
    (var == "content" && cx.has_stream(cpn)).then(|| cpn.to_string())
}

/// A download info (or a list of them) without `include_download_info_in_content`
/// (RAGFlow's `_normalize_download_info`).
fn without_flag(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(without_flag).collect()),
        Value::Object(o) => {
            let mut o = o.clone();
            o.remove("include_download_info_in_content");
            Value::Object(o)
        }
        other => other.clone(),
    }
}

fn is_download(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.contains_key("doc_id") && o.contains_key("filename") && o.contains_key("mime_type")
    })
}

impl Message {
    /// The Jinja path: every reference resolved to text, then rendered.
    async fn render(&self, cx: &NodeCx<'_>, text: &str) -> CResult<String> {
        let mut downloads = Vec::new();
        let mut refs = Vec::new();
        let elements = cx.collect_refs(text);
        for e in &elements {
            if let Some(cpn) = stream_source(cx, &e.exp) {
                if let Some(Err(ComponentError::Fatal(m))) = cx.pull_stream(&cpn, &mut |_| {}).await
                {
                    return Err(ComponentError::Fatal(m));
                }
            }
            let v = cx.resolve(&e.exp)?;
            let s = stringify(&v, &mut downloads);
            cx.set_input(&e.exp, json!(s));
            refs.push(MergeRef {
                raw: &e.raw,
                exp: &e.exp,
                text: s,
            });
        }
        cx.set_output("downloads", Value::Array(downloads));
        Ok(template::merge(text, &refs, JinjaMode::Always))
    }
}

#[async_trait]
impl Component for Message {
    fn role(&self) -> Role {
        Role::Streamer
    }

    fn default_outputs(&self) -> &'static [&'static str] {
        &["content", "downloads"]
    }

    fn text_refs(&self, cx: &NodeCx<'_>) -> Option<Vec<RefElement>> {
        Some(cx.collect_refs(&self.contents.concat()))
    }

    fn check(&self) -> Result<(), ParamError> {
        if let Some(v) = &self.not_text {
            return Err(ParamError::new(
                format!(
                    "[Message] content must be a list of texts, not {} ({})",
                    kind_name(v),
                    py_json(v)
                ),
                &["content"],
            ));
        }
        match &self.output_format {
            Some(f) => Err(ParamError::new(unsupported_format(f), &["output_format"])),
            None => Ok(()),
        }
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        // `check` refuses both before a run; these guard runs that skipped it.
        if let Some(v) = &self.not_text {
            // RAGFlow's `random.choice(content)`.
            return Err(ComponentError::Failed(format!(
                "object of type '{}' has no len()",
                canvas_pyrt::py_type_name(v)
            )));
        }
        if let Some(f) = &self.output_format {
            return Err(ComponentError::Fatal(unsupported_format(f)));
        }
        let text = &self.contents[cx.choose(self.contents.len())];
        if self.stream && !template::has_jinja(text) {
            cx.defer(Box::new(StreamPlan {
                template: text.clone(),
            }));
            return Ok(());
        }
        let content = self.render(cx, text).await?;
        cx.set_output("content", json!(content));
        Ok(())
    }

    async fn drain(
        &self,
        cx: &NodeCx<'_>,
        plan: Deferred,
        emit: &mut (dyn FnMut(Chunk) + Send),
    ) -> CResult<()> {
        let Ok(plan) = plan.downcast::<StreamPlan>() else {
            return Err(ComponentError::Fatal(
                "internal error: unexpected stream plan for a Message".into(),
            ));
        };
        let mut downloads = Vec::new();
        let mut cache: HashMap<String, String> = HashMap::new();
        for piece in template::stream_pieces(&plan.template) {
            match piece {
                Piece::Text(t) => emit(Chunk::Text(t)),
                Piece::Ref(exp) => {
                    let s = match cache.get(&exp) {
                        Some(s) => s.clone(),
                        None => {
                            // An upstream LLM/Agent answer streams through us.
                            let pulled = match stream_source(cx, &exp) {
                                Some(cpn) => cx.pull_stream(&cpn, &mut *emit).await,
                                None => None,
                            };
                            if let Some(Err(ComponentError::Fatal(m))) = pulled {
                                return Err(ComponentError::Fatal(m));
                            }
                            // RAGFlow evaluates the reference here, outside any try: an
                            // unknown one crashes the run.
                            let v = cx
                                .resolve(&exp)
                                .map_err(|e| ComponentError::Fatal(e.to_string()))?;
                            let s = stringify(&v, &mut downloads);
                            cx.set_input(&exp, json!(s));
                            cache.insert(exp, s.clone());
                            if pulled.is_some() {
                                continue;
                            }
                            s
                        }
                    };
                    emit(Chunk::Text(s));
                }
            }
        }
        cx.set_output("downloads", Value::Array(downloads));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;

    fn message(content: &str, stream: bool) -> Harness {
        let h = Harness::single(
            &crate::Registry,
            "Message:M",
            "Message",
            json!({"content": [content], "stream": stream}),
            json!({"sys.query": "hello"}),
        );
        h.set_output("begin", "obj", json!({"a": {"b": [10, 20]}}));
        h
    }

    #[test]
    fn jinja_path_keeps_spaces_and_wraps_double_braces() {
        // engine.md §9 items 4, 8, 11.
        let h = message("A {begin@obj} B", false);
        h.invoke("Message:M").unwrap();
        assert_eq!(
            h.output("Message:M", "content"),
            json!("A {\"a\": {\"b\": [10, 20]}} B")
        );
        let h = message("A {{begin@obj}} B", false);
        h.invoke("Message:M").unwrap();
        assert_eq!(
            h.output("Message:M", "content"),
            json!("A {{\"a\": {\"b\": [10, 20]}}} B")
        );
        let h = message("{sys.query}{sys.query}", false);
        h.invoke("Message:M").unwrap();
        assert_eq!(h.output("Message:M", "content"), json!("hellohello"));
        assert_eq!(h.input("Message:M", "sys.query"), json!("hello"));
    }

    #[test]
    fn backslashes_in_values_are_literal() {
        let h = message("v={begin@s}", false);
        h.set_output("begin", "s", json!("a\\d"));
        h.invoke("Message:M").unwrap();
        assert_eq!(h.output("Message:M", "content"), json!("v=a\\d"));
    }

    #[test]
    fn downloads_are_moved_out_of_the_text() {
        let mut d = Vec::new();
        let info = json!({"doc_id": "1", "filename": "a.pdf", "mime_type": "application/pdf"});
        assert_eq!(stringify(&info, &mut d), "");
        assert_eq!(d, vec![info.clone()]);
        assert_eq!(stringify(&json!(info.to_string()), &mut d), "");
        // The flag inlines the info and never reaches `downloads`.
        let mut d = Vec::new();
        let flagged = json!([info.clone(), {"doc_id": "2", "filename": "b.txt",
            "mime_type": "text/plain", "include_download_info_in_content": true}]);
        let inlined = stringify(&json!(flagged.to_string()), &mut d);
        let back: Value = serde_json::from_str(&inlined).unwrap();
        assert_eq!(
            back[1],
            json!({"doc_id": "2", "filename": "b.txt", "mime_type": "text/plain"})
        );
        assert_eq!(back[0], info);
        assert_eq!(d.len(), 2);
        assert!(d[1].get("include_download_info_in_content").is_none());
        assert_eq!(stringify(&json!([1, "x"]), &mut d), "[1, \"x\"]");
        assert_eq!(stringify(&Value::Null, &mut d), "");
    }

    #[test]
    fn empty_content_is_rejected() {
        assert!(build(&Object::new()).is_err());
    }

    /// What `check` says of a Message built with `params` (which must build).
    fn checked(params: Value) -> Result<(), ParamError> {
        let Value::Object(p) = params else {
            panic!("params are an object")
        };
        match build(&p) {
            Ok(m) => m.check(),
            Err(e) => panic!("{p:?} must build: {e}"),
        }
    }

    #[test]
    fn an_attachment_format_and_content_that_is_not_text_are_refused_before_the_run() {
        assert_eq!(checked(json!({"content": ["hi"]})), Ok(()));
        let e = checked(json!({"content": ["hi"], "output_format": "html"})).unwrap_err();
        assert_eq!(e.path, ["output_format"]);
        assert!(e.message.contains("\"html\""), "{e}");
        let e = checked(json!({"content": 42})).unwrap_err();
        assert_eq!(e.path, ["content"]);
        assert!(e.message.contains("not a number (42)"), "{e}");
        // RAGFlow's own check refuses these at load: they do not build.
        for p in [json!({"content": 0}), json!({"content": {"a": 1}})] {
            let Value::Object(p) = p else { unreachable!() };
            assert!(build(&p).is_err(), "{p:?}");
        }
    }

    #[test]
    fn a_run_that_skipped_the_check_fails_at_the_message_as_ragflow_does() {
        let h = Harness::single(
            &crate::Registry,
            "Message:M",
            "Message",
            json!({"content": 42}),
            json!({"sys.query": "hello"}),
        );
        assert_eq!(
            h.invoke("Message:M"),
            Err(ComponentError::Failed(
                "object of type 'int' has no len()".into()
            ))
        );
    }
}
