//! KeenableSearch (`keenable_search`, `agent/tools/keenable.py`, `llm-and-tools.md`
//! §7.2): web search through Keenable's `POST /v1/search` with `X-API-Key`, or the
//! keyless `/v1/search/public` without a key. The base URL is `KEENABLE_API_URL` as in
//! RAGFlow (https only, plain http for loopback hosts), or our `CANVAS_KEENABLE_BASE_URL`.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::reference::Found;
use super::web::{
    check_positive_integer, check_valid_value, failed, http_client, input_text, publish,
    send_answer, text_field,
};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_repr, truthy};

const BASE_VAR: &str = "CANVAS_KEENABLE_BASE_URL";
/// RAGFlow's own override.
const RAGFLOW_VAR: &str = "KEENABLE_API_URL";
const BASE_DEFAULT: &str = "https://api.keenable.ai";
/// RAGFlow's request timeout.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Build KeenableSearch from its DSL parameters (RAGFlow's `check()`).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    check_valid_value(
        params,
        "mode",
        "Keenable search mode should be in 'pro/realtime'",
        &["pro", "realtime"],
    )?;
    let top_n = check_positive_integer(params, "top_n", "Top N")?.unwrap_or(10);
    let mode = params.get("mode").and_then(Value::as_str).unwrap_or("pro");
    let api_key = params
        .get("api_key")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();
    if mode == "realtime" && api_key.is_empty() {
        return Err(BuildError::Params(
            "Keenable 'realtime' mode requires an API key".into(),
        ));
    }
    Ok(Box::new(Keenable {
        meta: ToolMeta {
            name: "keenable_search",
            description: "\nKeenable is a web search API built for AI agents. It returns fresh, relevant web\nresults for a query and works without an API key by default (keyless free tier).\nWhen searching:\n   - Use a focused query of the most important terms (and synonyms).\n   - Optionally restrict to a single site/domain.\n             ",
            parameters: vec![
                Param::string(
                    "query",
                    "The search keywords to execute with Keenable. The keywords should be the most important words/terms(includes synonyms) from the original request.",
                    "{sys.query}",
                ),
                Param {
                    required: false,
                    ..Param::string(
                        "site",
                        "default:''. Restrict results to a single domain, e.g. 'techcrunch.com'.",
                        "",
                    )
                },
            ],
        },
        mode: mode.to_string(),
        api_key,
        top_n: usize::try_from(top_n).unwrap_or(usize::MAX),
    }))
}

/// The KeenableSearch tool.
pub struct Keenable {
    meta: ToolMeta,
    mode: String,
    api_key: String,
    top_n: usize,
}

#[async_trait]
impl Tool for Keenable {
    crate::tool_facts!("KeenableSearch", outputs: ["formalized_content", "json"], env: [RAGFLOW_VAR, BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        format!(
            "\nKeywords: {}\nLooking for the most relevant articles.\n                ",
            input_text(args, "query")
        )
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let Some(query) = args.get("query").filter(|v| truthy(v)) else {
            call.set_output("formalized_content", json!(""));
            return Ok(Some(json!("")));
        };
        let mut payload = Map::new();
        payload.insert("query".into(), query.clone());
        payload.insert("mode".into(), json!(self.mode));
        if let Some(site) = args.get("site").filter(|v| truthy(v)) {
            payload.insert("site".into(), site.clone());
        }
        // A bad base URL is a configuration error: no retries.
        let env = call.env();
        let configured = env.var(BASE_VAR).or_else(|| env.var(RAGFLOW_VAR));
        let base = match base_url(configured) {
            Ok(b) => b,
            Err(e) => return failed(call, "Keenable", e),
        };
        let path = if self.api_key.is_empty() {
            "/v1/search/public"
        } else {
            "/v1/search"
        };
        let url = format!("{base}{path}");
        let client = match http_client(call, &url, TIMEOUT).await {
            Ok(c) => c,
            Err(e) => return failed(call, "Keenable", e),
        };
        let payload = Value::Object(payload);
        let res = super::with_retries(call, || async {
            let mut req = client
                .post(&url)
                .header("User-Agent", "keenable-ragflow")
                .header("X-Keenable-Title", "RAGFlow")
                .json(&payload);
            if !self.api_key.is_empty() {
                req = req.header("X-API-Key", &self.api_key);
            }
            let answer = send_answer(req).await?;
            answer.raise_for_status()?;
            results(&answer.json()?, self.top_n)
        })
        .await;
        match res {
            Ok(results) => publish(call, results, found),
            Err(e) => failed(call, "Keenable", e),
        }
    }
}

/// RAGFlow's `_base_url`: the configured URL (or the default) without a trailing `/`;
/// https with a host, or http to a loopback host.
fn base_url(configured: Option<&str>) -> Result<String, String> {
    let base = configured.unwrap_or(BASE_DEFAULT).trim_end_matches('/');
    if let Ok(u) = reqwest::Url::parse(base) {
        let host = u.host_str().unwrap_or("");
        let loopback = matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1");
        if !host.is_empty() && (u.scheme() == "https" || (u.scheme() == "http" && loopback)) {
            return Ok(base.to_string());
        }
    }
    Err(format!(
        "KEENABLE_API_URL must be an https:// URL with a host, got {}",
        py_repr(&json!(base))
    ))
}

/// The first `top_n` results (`results` missing or null: none).
fn results(data: &Value, top_n: usize) -> Result<Vec<Value>, String> {
    let Some(o) = data.as_object() else {
        return Err(format!(
            "'{}' object has no attribute 'get'",
            if data.is_array() { "list" } else { "str" }
        ));
    };
    match o.get("results") {
        Some(Value::Array(a)) => Ok(a.iter().take(top_n).cloned().collect()),
        Some(v) if truthy(v) => Err("results is not a list".into()),
        _ => Ok(Vec::new()),
    }
}

fn found(r: &Value) -> Found {
    Found {
        title: text_field(r, "title"),
        url: text_field(r, "url"),
        content: text_field(r, "description"),
        score: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_requires_https_or_loopback_http() {
        assert_eq!(base_url(None).unwrap(), "https://api.keenable.ai");
        assert_eq!(
            base_url(Some("http://127.0.0.1:9000/")).unwrap(),
            "http://127.0.0.1:9000"
        );
        assert_eq!(base_url(Some("http://[::1]:9")).unwrap(), "http://[::1]:9");
        assert_eq!(
            base_url(Some("http://example.com")).unwrap_err(),
            "KEENABLE_API_URL must be an https:// URL with a host, got 'http://example.com'"
        );
        assert!(base_url(Some("nonsense")).is_err());
    }

    #[test]
    fn realtime_needs_a_key() {
        let p = |v: Value| -> Object { serde_json::from_value(v).unwrap() };
        match build(&p(json!({"mode": "realtime"}))) {
            Err(e) => assert_eq!(
                e.to_string(),
                "Keenable 'realtime' mode requires an API key"
            ),
            Ok(_) => panic!("accepted"),
        }
        assert!(build(&p(json!({"mode": "realtime", "api_key": "k"}))).is_ok());
        match build(&p(json!({"mode": "fast"}))) {
            Err(e) => assert!(e.to_string().contains("['pro', 'realtime']"), "{e}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn results_use_descriptions() {
        let data = json!({"results": [{"title": "A", "url": "https://a", "description": "about a"},
            {"title": "B", "url": "https://b", "description": "about b"}]});
        let r = results(&data, 1).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(found(&r[0]).content, "about a");
        assert!(results(&json!({"results": null}), 3).unwrap().is_empty());
    }
}
