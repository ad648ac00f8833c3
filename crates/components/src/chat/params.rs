//! The parameters every model-calling component shares (`llm-and-tools.md` §3.1, §2.2):
//! model, prompts, sampling flags, history window, retries, exception handling, and
//! the structured-output schema.

use std::time::Duration;

use serde_json::{Map, Value};

use canvas_engine::BuildError;
use canvas_llm::Retry;
use canvas_pyrt::{Object, parse_py_float, truthy};

/// One prompt template of `prompts`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// `user` or `assistant` (anything else is sent as `user`).
    pub role: String,
    /// The template text.
    pub content: String,
}

/// What a model-calling component was configured with.
#[derive(Debug, Clone)]
pub struct LlmParams {
    /// The model reference (may be empty: the run's default model is used).
    pub llm_id: String,
    /// System prompt template.
    pub sys_prompt: String,
    /// Prompt templates appended after the history.
    pub prompts: Vec<Prompt>,
    /// Sampling parameters sent with each call (only those whose flag is on).
    pub sampling: Map<String, Value>,
    /// Turns of conversation history to prepend.
    pub window: i64,
    /// Add citation instructions when the run has references.
    pub cite: bool,
    /// Retry policy of each call.
    pub retry: Retry,
    /// Variable holding images to send (`data:image/...` URIs).
    pub visual_files_var: Option<String>,
    /// The JSON Schema of `outputs.structured`, when structured output is on.
    pub schema: Option<Value>,
    /// `exception_method: comment` with a truthy default: the text used on failure.
    pub comment_default: Option<Value>,
    /// `exception_method: goto` targets are set (no streaming then).
    pub has_goto: bool,
}

fn num(params: &Object, key: &str) -> Option<f64> {
    match params.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_py_float(s),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

fn flag(params: &Object, key: &str) -> bool {
    params.get(key).is_some_and(truthy)
}

impl LlmParams {
    /// Read and check the parameters (RAGFlow's `LLMParam.check`); `who` names the
    /// component class in messages; `default_window` is the class's history default.
    pub fn parse(params: &Object, who: &str, default_window: i64) -> Result<Self, BuildError> {
        let bad = |m: String| BuildError::Params(format!("[{who}] {m}"));
        for key in [
            "temperature",
            "top_p",
            "presence_penalty",
            "frequency_penalty",
        ] {
            if let Some(v) = params.get(key).filter(|v| !v.is_null()) {
                match num(params, key) {
                    Some(f) if (0.0..=1.0).contains(&f) => {}
                    _ => {
                        return Err(bad(format!(
                            "{key} must be a number between 0 and 1, not {v}"
                        )));
                    }
                }
            }
        }
        let mut sampling = Map::new();
        let mut put = |key: &str, enabled: &str, ok: fn(f64) -> bool| {
            if let Some(f) = num(params, key).filter(|f| ok(*f)) {
                if flag(params, enabled) {
                    sampling.insert(key.to_string(), serde_json::json!(f));
                }
            }
        };
        put("temperature", "temperatureEnabled", |f| f >= 0.0);
        put("top_p", "topPEnabled", |f| f > 0.0);
        put("presence_penalty", "presencePenaltyEnabled", |f| f > 0.0);
        put("frequency_penalty", "frequencyPenaltyEnabled", |f| f > 0.0);
        // `max_tokens` is computed by RAGFlow but dropped before the request
        // (llm-and-tools.md finding 3): not sent.
        if let Some(t) = params
            .get("thinking")
            .filter(|t| t.as_str() != Some("default"))
        {
            if !t.is_null() {
                sampling.insert("thinking".into(), t.clone());
            }
        }
        let prompts = match params.get("prompts") {
            None | Some(Value::Null) => vec![Prompt {
                role: "user".into(),
                content: "{sys.query}".into(),
            }],
            Some(Value::String(s)) => vec![Prompt {
                role: "user".into(),
                content: s.clone(),
            }],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|p| {
                    let o = p.as_object()?;
                    Some(Prompt {
                        role: o
                            .get("role")
                            .and_then(Value::as_str)
                            .unwrap_or("user")
                            .to_string(),
                        content: match o.get("content") {
                            Some(Value::String(s)) => s.clone(),
                            Some(Value::Null) | None => String::new(),
                            Some(other) => other.to_string(),
                        },
                    })
                })
                .collect(),
            Some(other) => return Err(bad(format!("prompts must be a list, not {other}"))),
        };
        let max_retries = match params.get("max_retries") {
            None | Some(Value::Null) => 0,
            Some(v) => match v.as_u64().or_else(|| {
                num(params, "max_retries")
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            }) {
                Some(n) if n <= 100 => n as u32,
                _ => return Err(bad(format!("max_retries must be an integer >= 0, not {v}"))),
            },
        };
        let delay = num(params, "delay_after_error")
            .unwrap_or(2.0)
            .clamp(0.0, 3600.0);
        let window = params
            .get("message_history_window_size")
            .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
            .unwrap_or(default_window);
        let method = params
            .get("exception_method")
            .and_then(Value::as_str)
            .unwrap_or("");
        let comment_default = params
            .get("exception_default_value")
            .filter(|v| method == "comment" && truthy(v))
            .cloned();
        let has_goto = params
            .get("exception_goto")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        Ok(LlmParams {
            llm_id: params
                .get("llm_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            sys_prompt: params
                .get("sys_prompt")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            prompts,
            sampling,
            window,
            cite: params.get("cite").is_none_or(truthy),
            retry: Retry {
                max_retries,
                delay: Duration::from_secs_f64(delay),
            },
            visual_files_var: params
                .get("visual_files_var")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(String::from),
            schema: schema_of(params),
            comment_default,
            has_goto,
        })
    }

    /// Every template text (system prompt first), for collecting references.
    pub fn texts(&self) -> String {
        let mut all = self.sys_prompt.clone();
        for p in &self.prompts {
            all.push(' ');
            all.push_str(&p.content);
        }
        all
    }
}

/// The structured-output schema: `outputs.structured` (or a `schema`/`structured` key
/// inside it) when it has non-empty `properties`; the stray runtime `value` key RAGFlow
/// writes into the same dict is dropped.
fn schema_of(params: &Object) -> Option<Value> {
    let s = params.get("outputs")?.get("structured")?;
    let candidates = [Some(s), s.get("schema"), s.get("structured")];
    for c in candidates.into_iter().flatten() {
        let has = c
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if has {
            let mut c = c.clone();
            if let Some(o) = c.as_object_mut() {
                o.remove("value");
            }
            return Some(c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<LlmParams, BuildError> {
        LlmParams::parse(v.as_object().unwrap(), "LLM", 13)
    }

    #[test]
    fn sampling_params_are_sent_only_when_enabled() {
        let p = parse(json!({"llm_id": "m@F", "temperature": 0.1, "top_p": 0.3,
            "topPEnabled": true, "frequency_penalty": 0.7, "frequencyPenaltyEnabled": false,
            "max_tokens": 256, "maxTokensEnabled": true}))
        .unwrap();
        assert_eq!(Value::Object(p.sampling), json!({"top_p": 0.3}));
        let p = parse(json!({"temperature": "0.1", "temperatureEnabled": true})).unwrap();
        assert_eq!(Value::Object(p.sampling), json!({"temperature": 0.1}));
    }

    #[test]
    fn out_of_range_values_are_refused() {
        let e = parse(json!({"temperature": 1.5})).unwrap_err();
        assert!(e.to_string().contains("temperature"), "{e}");
        assert!(parse(json!({"max_retries": "many"})).is_err());
        assert!(parse(json!({"max_retries": -1})).is_err());
    }

    #[test]
    fn defaults_and_prompt_forms() {
        let p = parse(json!({})).unwrap();
        assert_eq!(
            p.prompts,
            vec![Prompt {
                role: "user".into(),
                content: "{sys.query}".into()
            }]
        );
        assert_eq!(p.window, 13);
        assert!(p.cite);
        assert_eq!(p.retry.max_retries, 0);
        let p =
            parse(json!({"prompts": "hi {sys.query}", "max_retries": 3, "delay_after_error": 1}))
                .unwrap();
        assert_eq!(p.prompts[0].content, "hi {sys.query}");
        assert_eq!(p.retry.max_retries, 3);
        assert_eq!(p.retry.delay, Duration::from_secs(1));
    }

    #[test]
    fn structured_schema_needs_properties() {
        let p = parse(json!({"outputs": {"structured": {"type": "object", "properties": {"a": {"type": "string"}}, "value": {"a": "x"}}}})).unwrap();
        assert_eq!(
            p.schema,
            Some(json!({"type": "object", "properties": {"a": {"type": "string"}}}))
        );
        let p = parse(json!({"outputs": {"structured": {"type": "object", "properties": {}}}}))
            .unwrap();
        assert_eq!(p.schema, None);
    }

    #[test]
    fn comment_default_and_goto() {
        let p = parse(json!({"exception_method": "comment", "exception_default_value": "sorry"}))
            .unwrap();
        assert_eq!(p.comment_default, Some(json!("sorry")));
        let p = parse(json!({"exception_method": "goto", "exception_goto": ["M"]})).unwrap();
        assert!(p.has_goto && p.comment_default.is_none());
    }
}
