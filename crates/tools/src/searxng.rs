//! SearXNG (`searxng_search`, `agent/tools/searxng.py`, `llm-and-tools.md` §7.2): a search
//! on the user's SearXNG instance (`GET <url>/search?format=json`). The instance URL
//! comes from the canvas (the parameter wins over the model's argument), so it passes
//! the SSRF guard first; a refused URL fails at once, without retries.
//!
//! Ours: a trailing `/` of the instance URL is dropped (RAGFlow would ask `//search`).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::reference::Found;
use super::web::{failed, input_text, publish, send_answer, text_field};
use super::{Call, Param, Tool, ToolMeta, net::ClientOptions};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_str};

/// RAGFlow's request timeout.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Build SearXNG from its DSL parameters (RAGFlow's lenient `check()`: a numeric
/// string `top_n` is accepted).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    let top_n = match params.get("top_n") {
        None => 10,
        Some(Value::String(s)) if s.trim().parse::<i64>().is_ok_and(|n| n > 0) => {
            s.trim().parse().unwrap_or(10)
        }
        Some(v) => match v.as_i64() {
            Some(n) if n > 0 && !v.is_f64() => n,
            _ => {
                return Err(BuildError::Params(format!(
                    "Top N {} not supported, should be positive integer",
                    py_str(v)
                )));
            }
        },
    };
    Ok(Box::new(SearXng {
        meta: ToolMeta {
            name: "searxng_search",
            description: "SearXNG is a privacy-focused metasearch engine that aggregates results from multiple search engines without tracking users. It provides comprehensive web search capabilities.",
            parameters: vec![
                Param::string(
                    "query",
                    "The search keywords to execute with SearXNG. The keywords should be the most important words/terms(includes synonyms) from the original request.",
                    "{sys.query}",
                ),
                Param {
                    required: false,
                    ..Param::string(
                        "searxng_url",
                        "The base URL of your SearXNG instance (e.g., http://localhost:4000). This is required to connect to your SearXNG server.",
                        "",
                    )
                },
            ],
        },
        top_n: usize::try_from(top_n).unwrap_or(usize::MAX),
    }))
}

/// The SearXNG tool.
pub struct SearXng {
    meta: ToolMeta,
    top_n: usize,
}

#[async_trait]
impl Tool for SearXng {
    fn class(&self) -> &'static str {
        "SearXNG"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn default_outputs(&self) -> &'static [&'static str] {
        &["formalized_content", "json"]
    }

    fn thoughts(&self, args: &Object) -> String {
        format!(
            "\nKeywords: {}\nSearching with SearXNG for relevant results...\n                ",
            input_text(args, "query")
        )
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let query = match args.get("query") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => {
                call.set_output("formalized_content", json!(""));
                return Ok(Some(json!("")));
            }
        };
        let arg_url = args
            .get("searxng_url")
            .and_then(Value::as_str)
            .unwrap_or("");
        let base = instance_url(call.param_str("searxng_url", ""), arg_url);
        if base.is_empty() {
            call.set_output("formalized_content", json!(""));
            return Ok(Some(json!("")));
        }
        let url = format!("{base}/search");
        let net = &call.env().net;
        if let Err(e) = net.check_url(&url).await {
            return failed(call, "SearXNG", e.to_string());
        }
        let client = match net.client(&ClientOptions {
            timeout: Some(TIMEOUT),
            ..Default::default()
        }) {
            Ok(c) => c,
            Err(e) => return failed(call, "SearXNG", e.to_string()),
        };
        let top_n = self.top_n;
        let res = super::with_retries(call, || async {
            let req = client.get(&url).query(&[
                ("q", query.as_str()),
                ("format", "json"),
                ("categories", "general"),
                ("language", "auto"),
                ("safesearch", "1"),
                ("pageno", "1"),
            ]);
            // Transport, status and JSON failures are `requests` exceptions.
            let network = |e: String| format!("Network error: {e}");
            let answer = send_answer(req).await.map_err(network)?;
            answer.raise_for_status().map_err(network)?;
            let data = answer.json().map_err(network)?;
            results(&data, top_n)
        })
        .await;
        match res {
            Ok(results) => publish(call, results, found),
            Err(e) => failed(call, "SearXNG", e),
        }
    }
}

/// The instance: the parameter, else the argument; trimmed, without a trailing `/`.
fn instance_url(param: &str, arg: &str) -> String {
    let url = if param.is_empty() { arg } else { param };
    url.trim().trim_end_matches('/').to_string()
}

/// The first `top_n` results of an answer, or RAGFlow's complaint about its shape.
fn results(data: &Value, top_n: usize) -> Result<Vec<Value>, String> {
    let Some(o) = data.as_object().filter(|o| !o.is_empty()) else {
        return Err("Invalid response from SearXNG".into());
    };
    match o.get("results") {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => Ok(a.iter().take(top_n).cloned().collect()),
        Some(_) => Err("Invalid results format from SearXNG".into()),
    }
}

fn found(r: &Value) -> Found {
    Found {
        title: text_field(r, "title"),
        url: text_field(r, "url"),
        content: text_field(r, "content"),
        score: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_url_wins() {
        assert_eq!(instance_url("http://a:4000/", "http://b"), "http://a:4000");
        assert_eq!(instance_url("", " http://b "), "http://b");
        assert_eq!(instance_url("", ""), "");
    }

    #[test]
    fn results_are_cut_to_top_n_and_shapes_checked() {
        let data =
            json!({"query": "q", "results": [{"title": "a"}, {"title": "b"}, {"title": "c"}]});
        assert_eq!(results(&data, 2).unwrap().len(), 2);
        assert_eq!(
            results(&json!({}), 2).unwrap_err(),
            "Invalid response from SearXNG"
        );
        assert_eq!(
            results(&json!([1]), 2).unwrap_err(),
            "Invalid response from SearXNG"
        );
        assert_eq!(
            results(&json!({"results": {}}), 2).unwrap_err(),
            "Invalid results format from SearXNG"
        );
        assert!(
            results(&json!({"number_of_results": 0}), 2)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn top_n_may_be_a_numeric_string() {
        let p = |v: Value| -> Object { serde_json::from_value(v).unwrap() };
        assert!(build(&p(json!({"top_n": " 5 "}))).is_ok());
        match build(&p(json!({"top_n": "five"}))) {
            Err(e) => assert_eq!(
                e.to_string(),
                "Top N five not supported, should be positive integer"
            ),
            Ok(_) => panic!("accepted"),
        }
    }
}
