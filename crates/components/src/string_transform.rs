//! StringTransform: split a string on delimiters, or merge references into a template
//! (`engine.md` §7.11, §3.4 (d)).

use async_trait::async_trait;
use regex::Regex;
use serde_json::{Value, json};
use std::borrow::Cow;

use super::message::stringify;
use canvas_engine::refs::RefElement;
use canvas_engine::template::{self, JinjaMode, MergeRef};
use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx};
use canvas_pyrt::{Object, py_str, py_type, truthy};

/// Build a StringTransform; `method` is split or merge, `delimiters` non-empty.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let method = params
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("split")
        .to_string();
    if method != "split" && method != "merge" {
        return Err(BuildError::Params(format!(
            "[StringTransform] Support method {method} is not supported, it should be in ['split', 'merge']"
        )));
    }
    let delimiters: Vec<String> = match params.get("delimiters") {
        None => vec![",".into()],
        Some(Value::Array(a)) => a.iter().map(py_str).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(_) => Vec::new(),
    };
    if delimiters.is_empty() {
        return Err(BuildError::Params(
            "[StringTransform] Delimiters does not support empty value.".into(),
        ));
    }
    let pattern = delimiters
        .iter()
        .map(|d| regex::escape(d))
        .collect::<Vec<_>>()
        .join("|");
    let splitter = Regex::new(&pattern).map_err(|e| BuildError::Params(e.to_string()))?;
    Ok(Box::new(StringTransform {
        method,
        script: params
            .get("script")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        split_ref: params
            .get("split_ref")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        delimiters,
        splitter,
    }))
}

/// The StringTransform component.
pub struct StringTransform {
    method: String,
    script: String,
    split_ref: String,
    delimiters: Vec<String>,
    splitter: Regex,
}

impl StringTransform {
    fn split(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let v = cx.resolve(&self.split_ref)?;
        let v = if truthy(&v) { v } else { json!("") };
        let Value::String(s) = v else {
            return Err(ComponentError::Failed(format!(
                "The input variable is not a string: {}",
                py_type(&v)
            )));
        };
        let parts: Vec<Value> = self.splitter.split(&s).map(|p| json!(p)).collect();
        cx.set_output("result", Value::Array(parts));
        Ok(())
    }

    fn merge(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let delim = &self.delimiters[0];
        let mut downloads = Vec::new();
        let mut refs = Vec::new();
        // The scheduler's copy of `text_refs` (the same references) when it has one.
        let collected;
        let elements = match cx.known_text_refs() {
            Some(e) => e,
            None => {
                collected = cx.collect_refs(&self.script);
                &collected[..]
            }
        };
        for e in elements {
            let s = cx.resolve_with(&e.exp, |v| match v {
                Value::Array(items) => items
                    .iter()
                    .map(|x| {
                        if x.is_null() {
                            "None".to_string()
                        } else {
                            py_str(x)
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(delim),
                other => stringify(other, &mut downloads),
            })?;
            cx.set_input(&e.exp, Value::String(s.clone()));
            refs.push(MergeRef {
                raw: &e.raw,
                exp: &e.exp,
                text: s,
            });
        }
        let out = template::merge(&self.script, &refs, JinjaMode::WhenMarked);
        cx.set_output("result", Value::String(out));
        Ok(())
    }
}

#[async_trait]
impl Component for StringTransform {
    fn instant(&self) -> bool {
        true
    }

    fn default_outputs(&self) -> &'static [&'static str] {
        &["result"]
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        if self.method == "split" {
            "Splitting the text.".into()
        } else {
            "Merging the text.".into()
        }
    }

    fn text_refs(&self, cx: &NodeCx<'_>) -> Option<Vec<RefElement>> {
        Some(cx.collect_refs(&self.script))
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        if self.method == "split" {
            self.split(cx)
        } else {
            self.merge(cx)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;

    #[test]
    fn split_keeps_empty_pieces() {
        // engine.md §9 item 47.
        let h = Harness::single(
            &crate::Registry,
            "StringTransform:S",
            "StringTransform",
            json!({"method": "split", "split_ref": "sys.query", "delimiters": [",", ";"]}),
            json!({"sys.query": "a,b;;c"}),
        );
        h.invoke("StringTransform:S").unwrap();
        assert_eq!(
            h.output("StringTransform:S", "result"),
            json!(["a", "b", "", "c"])
        );
        h.set_global("sys.query", json!(["x"]));
        assert_eq!(
            h.invoke("StringTransform:S"),
            Err(ComponentError::Failed(
                "The input variable is not a string: <class 'list'>".into()
            ))
        );
    }

    #[test]
    fn merge_joins_lists_with_the_first_delimiter() {
        // engine.md §9 items 48 and 49.
        let h = Harness::single(
            &crate::Registry,
            "StringTransform:M",
            "StringTransform",
            json!({"method": "merge", "script": "{begin@l} | {sys.query}!", "delimiters": ["-"]}),
            json!({"sys.query": "hello"}),
        );
        h.set_output("begin", "l", json!(["a", 1, {"k": "v"}]));
        h.invoke("StringTransform:M").unwrap();
        assert_eq!(
            h.output("StringTransform:M", "result"),
            json!("a-1-{'k': 'v'} | hello!")
        );

        let h = Harness::single(
            &crate::Registry,
            "StringTransform:J",
            "StringTransform",
            json!({"method": "merge", "script": "{{begin@l}} {% for x in begin_l %}[{{x}}]{% endfor %}", "delimiters": ["-"]}),
            json!({}),
        );
        h.set_output("begin", "l", json!(["ab", "c"]));
        h.invoke("StringTransform:J").unwrap();
        assert_eq!(
            h.output("StringTransform:J", "result"),
            json!("{ab-c} [a][b][-][c]")
        );
    }
}
