//! TavilyExtract (`tavily_extract`, `agent/tools/tavily.py`, `llm-and-tools.md` §7.2):
//! page contents of URLs through Tavily's `POST /extract`, as the `tavily-python`
//! client sends it. The results list is the `json` output and what the model reads.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::tavily_search::tavily_answer;
use super::web::{api_key, check_valid_value, failed, http_client, input_text, send_answer};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult, ComponentError};
use canvas_pyrt::Object;

const BASE_VAR: &str = "CANVAS_TAVILY_BASE_URL";
const BASE_DEFAULT: &str = "https://api.tavily.com";
/// `tavily-python`'s extract timeout (also sent in the body); a little more for the
/// transfer.
const TIMEOUT_SECS: u64 = 30;

/// Build TavilyExtract from its DSL parameters (RAGFlow's `check()`).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    check_valid_value(
        params,
        "extract_depth",
        "Tavily extract depth should be in 'basic/advanced'",
        &["basic", "advanced"],
    )?;
    check_valid_value(
        params,
        "format",
        "Tavily extract format should be in 'markdown/text'",
        &["markdown", "text"],
    )?;
    Ok(Box::new(TavilyExtract { meta: meta() }))
}

fn meta() -> ToolMeta {
    ToolMeta {
        name: "tavily_extract",
        description: "Extract web page content from one or more specified URLs using Tavily Extract.",
        parameters: vec![
            Param {
                kind: "array",
                items: Some(json!({"type": "string",
                    "description": "The URL to extract content from, e.g. www.yahoo.com"})),
                ..Param::string("urls", "The URLs to extract content from.", "")
            },
            Param {
                choices: &["basic", "advanced"],
                required: false,
                ..Param::string(
                    "extract_depth",
                    "The depth of the extraction process. advanced extraction retrieves more data, including tables and embedded content, with higher success but may increase latency.basic extraction costs 1 credit per 5 successful URL extractions, while advanced extraction costs 2 credits per 5 successful URL extractions.",
                    "basic",
                )
            },
            Param {
                choices: &["markdown", "text"],
                required: false,
                ..Param::string(
                    "format",
                    "The format of the extracted web page content. markdown returns content in markdown format. text returns plain text and may increase latency.",
                    "markdown",
                )
            },
        ],
    }
}

/// The TavilyExtract tool.
pub struct TavilyExtract {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for TavilyExtract {
    crate::tool_facts!("TavilyExtract", outputs: ["json"], env: ["TAVILY_API_KEY", BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        format!(
            "Opened {}—pulling out the main text…",
            input_text(args, "urls")
        )
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let Some(key) = api_key(call, "api_key", "TAVILY_API_KEY") else {
            return Err(ComponentError::Failed(
                "No API key provided. Please provide the api_key attribute or set the TAVILY_API_KEY environment variable.".into(),
            ));
        };
        let body = extract_body(args, |k| call.param(k).cloned());
        let url = format!("{}/extract", call.env().base_url(BASE_VAR, BASE_DEFAULT));
        let client = match http_client(call, &url, Duration::from_secs(TIMEOUT_SECS + 5)).await {
            Ok(c) => c,
            Err(e) => return failed(call, "Tavily", e),
        };
        // As RAGFlow: retried `max_retries` times, without the delay other tools take.
        let retries = call.param_f64("max_retries", 0.0).max(0.0) as u32;
        let mut last = String::new();
        for _ in 0..=retries {
            let req = client
                .post(&url)
                .bearer_auth(&key)
                .header("X-Client-Source", "tavily-python")
                .json(&body);
            let res = match send_answer(req).await {
                Ok(a) => tavily_answer(&a),
                Err(e) => Err(e),
            };
            match res {
                Ok(res) => {
                    let results = res.get("results").cloned().unwrap_or_else(|| json!([]));
                    call.set_output("json", results.clone());
                    return Ok(Some(results));
                }
                Err(e) => last = e,
            }
        }
        failed(call, "Tavily", last)
    }
}

/// The request body: the call's arguments, `urls`/`extract_depth`/`format` from the
/// parameters when missing (a comma-separated `urls` string split), images off, and the
/// client's own `timeout`; nulls left out.
fn extract_body(args: &Object, param: impl Fn(&str) -> Option<Value>) -> Value {
    let mut body = Map::new();
    for (k, v) in args {
        body.insert(k.clone(), v.clone());
    }
    for (k, default) in [
        ("urls", json!([])),
        ("extract_depth", json!("basic")),
        ("format", json!("markdown")),
    ] {
        if !body.contains_key(k) {
            body.insert(k.to_string(), param(k).unwrap_or(default));
        }
    }
    if let Some(Value::String(s)) = body.get("urls") {
        if !s.is_empty() {
            let parts: Vec<Value> = s.split(',').map(|p| json!(p)).collect();
            body.insert("urls".into(), Value::Array(parts));
        }
    }
    body.insert("include_images".into(), json!(false));
    body.entry("timeout").or_insert(json!(TIMEOUT_SECS));
    body.retain(|_, v| !v.is_null());
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn body_splits_url_strings_and_fills_parameters() {
        let params = obj(json!({"format": "text"}));
        let body = extract_body(&obj(json!({"urls": "https://a.com,https://b.com"})), |k| {
            params.get(k).cloned()
        });
        assert_eq!(
            body,
            json!({"urls": ["https://a.com", "https://b.com"], "extract_depth": "basic",
                "format": "text", "include_images": false, "timeout": 30})
        );
        let body = extract_body(
            &obj(json!({"urls": ["https://c.com"], "format": "markdown"})),
            |_| None,
        );
        assert_eq!(body["urls"], json!(["https://c.com"]));
        assert_eq!(body["format"], "markdown");
    }

    #[test]
    fn check_rejects_bad_depth_and_format() {
        let err = |p: Value| match build(&obj(p)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted"),
        };
        assert_eq!(
            err(json!({"format": "html"})),
            "Tavily extract format should be in 'markdown/text' html is not supported, it should be in ['markdown', 'text']"
        );
        assert!(err(json!({"extract_depth": 1})).contains("1 is not supported"));
    }

    #[test]
    fn thoughts_print_the_urls_as_python_does() {
        let t = TavilyExtract { meta: meta() };
        assert_eq!(
            t.thoughts(&obj(json!({"urls": ["https://a.com"]}))),
            "Opened ['https://a.com']—pulling out the main text…"
        );
    }
}
