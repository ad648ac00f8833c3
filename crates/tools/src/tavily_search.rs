//! TavilySearch (`tavily_search`, `agent/tools/tavily.py`, `llm-and-tools.md` §7.2): a
//! web search through Tavily's `POST /search`, as the `tavily-python` client sends it.
//! Results become reference chunks and knowledge blocks.
//!
//! This file also holds the small HTTP helpers the other web-search tools share
//! (`requests`-style error texts, argument and parameter reading), so each tool file
//! keeps to its own API.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::reference::Found;
use super::web::{
    DefaultValue, HttpAnswer, api_key, check_positive_integer, check_valid_value, failed,
    http_client, input_text, publish, send_answer, text_field, text_of,
};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult, ComponentError};
use canvas_pyrt::{Object, py_str, truthy};

/// Base URL override (tests, mirrors).
const BASE_VAR: &str = "CANVAS_TAVILY_BASE_URL";
const BASE_DEFAULT: &str = "https://api.tavily.com";
/// `tavily-python`'s search timeout.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Build TavilySearch from its DSL parameters (RAGFlow's `check()`).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    check_valid_value(
        params,
        "topic",
        "Tavily topic: should be in 'general/news'",
        &["general", "news"],
    )?;
    check_valid_value(
        params,
        "search_depth",
        "Tavily search depth should be in 'basic/advanced'",
        &["basic", "advanced"],
    )?;
    check_positive_integer(
        params,
        "max_results",
        "Tavily max result number should be within [1， 20]",
    )?;
    check_positive_integer(params, "days", "Tavily days should be greater than 1")?;
    Ok(Box::new(TavilySearch { meta: meta() }))
}

fn domains(name: &'static str, description: &'static str, item: &'static str) -> Param {
    Param {
        kind: "array",
        default: json!([]),
        items: Some(json!({"type": "string", "description": item})),
        required: false,
        ..Param::string(name, description, "")
    }
}

fn meta() -> ToolMeta {
    ToolMeta {
        name: "tavily_search",
        description: "\nTavily is a search engine optimized for LLMs, aimed at efficient, quick and persistent search results.\nWhen searching:\n   - Start with specific query which should focus on just a single aspect.\n   - Number of keywords in query should be less than 5.\n   - Broaden search terms if needed\n   - Cross-reference information from multiple sources\n             ",
        parameters: vec![
            Param::string(
                "query",
                "The search keywords to execute with Tavily. The keywords should be the most important words/terms(includes synonyms) from the original request.",
                "{sys.query}",
            ),
            Param {
                choices: &["general", "news"],
                required: false,
                ..Param::string(
                    "topic",
                    "default:general. The category of the search.news is useful for retrieving real-time updates, particularly about politics, sports, and major current events covered by mainstream media sources. general is for broader, more general-purpose searches that may include a wide range of sources.",
                    "general",
                )
            },
            domains(
                "include_domains",
                "default:[]. A list of domains only from which the search results can be included.",
                "Domain name that must be included, e.g. www.yahoo.com",
            ),
            domains(
                "exclude_domains",
                "default:[]. A list of domains from which the search results can not be included",
                "Domain name that must be excluded, e.g. www.yahoo.com",
            ),
        ],
    }
}

/// The TavilySearch tool.
pub struct TavilySearch {
    meta: ToolMeta,
}

/// Request fields the client fills from the parameters when the call does not give
/// them, with RAGFlow's defaults.
const FILLED: [(&str, DefaultValue); 10] = [
    ("search_depth", || json!("basic")),
    ("topic", || json!("general")),
    ("max_results", || json!(6)),
    ("days", || json!(14)),
    ("include_answer", || json!(false)),
    ("include_raw_content", || json!(false)),
    ("include_images", || json!(false)),
    ("include_image_descriptions", || json!(false)),
    ("include_domains", || json!([])),
    ("exclude_domains", || json!([])),
];

#[async_trait]
impl Tool for TavilySearch {
    crate::tool_facts!("TavilySearch", outputs: ["formalized_content", "json"], env: ["TAVILY_API_KEY", BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        format!(
            "\nKeywords: {}\nLooking for the most relevant articles.\n                ",
            input_text(args, "query")
        )
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        if !args.get("query").is_some_and(truthy) {
            call.set_output("formalized_content", json!(""));
            return Ok(Some(json!("")));
        }
        // `TavilyClient` refuses to start without a key (outside the retry loop).
        let Some(key) = api_key(call, "api_key", "TAVILY_API_KEY") else {
            return Err(ComponentError::Failed(
                "No API key provided. Please provide the api_key attribute or set the TAVILY_API_KEY environment variable.".into(),
            ));
        };
        let body = search_body(call, args);
        let url = format!("{}/search", call.env().base_url(BASE_VAR, BASE_DEFAULT));
        let client = match http_client(call, &url, TIMEOUT).await {
            Ok(c) => c,
            Err(e) => return failed(call, "Tavily", e),
        };
        let res = super::with_retries(call, || async {
            let req = client
                .post(&url)
                .bearer_auth(&key)
                .header("X-Client-Source", "tavily-python")
                .json(&body);
            let answer = send_answer(req).await?;
            let res = tavily_answer(&answer)?;
            Ok(results(&res))
        })
        .await;
        match res {
            Ok(results) => publish(call, results, found),
            Err(e) => failed(call, "Tavily", e),
        }
    }
}

/// The request body: the call's arguments (the model may add any Tavily field), the
/// missing fields from the parameters, raw content and images forced off; nulls left
/// out as the client does.
fn search_body(call: &Call<'_>, args: &Object) -> Value {
    let mut body = Map::new();
    for (k, v) in args {
        body.insert(k.clone(), v.clone());
    }
    for (k, default) in FILLED {
        if !body.contains_key(k) {
            body.insert(
                k.to_string(),
                call.param(k).cloned().unwrap_or_else(default),
            );
        }
    }
    body.insert("include_images".into(), json!(false));
    body.insert("include_raw_content".into(), json!(false));
    body.retain(|_, v| !v.is_null());
    Value::Object(body)
}

/// `tavily-python`'s reading of an answer: 200 is the result; the statuses it names
/// fail with the API's `detail.error`; others as `requests`' `raise_for_status`.
pub(crate) fn tavily_answer(a: &HttpAnswer) -> Result<Value, String> {
    if a.status == 200 {
        return a.json();
    }
    let detail = match serde_json::from_str::<Value>(&a.body) {
        Ok(Value::Object(o)) => match o.get("detail") {
            Some(Value::Object(d)) => d.get("error").map(py_str).unwrap_or("None".into()),
            None => "None".into(),
            // `str.get` fails inside the client's try: the detail stays "".
            Some(_) => String::new(),
        },
        _ => String::new(),
    };
    match a.status {
        429 | 403 | 432 | 433 | 401 | 400 => Err(detail),
        _ => a.raise_for_status().map(|_| Value::Null),
    }
}

/// The `results` list of an answer (the client defaults it to `[]`).
fn results(res: &Value) -> Vec<Value> {
    res.get("results")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// One Tavily result as a reference: raw content when there is some, else content.
fn found(r: &Value) -> Found {
    let raw = r.get("raw_content").filter(|v| truthy(v));
    Found {
        title: text_field(r, "title"),
        url: text_field(r, "url"),
        content: raw
            .or_else(|| r.get("content"))
            .map(text_of)
            .unwrap_or_default(),
        score: r.get("score").and_then(Value::as_f64),
    }
}

// ---- Helpers shared by the web-search tools ------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    fn answer(status: u16, body: &str) -> HttpAnswer {
        HttpAnswer {
            status,
            url: "https://api.tavily.com/search".into(),
            body: body.into(),
        }
    }

    #[test]
    fn check_rejects_bad_topic_depth_and_counts() {
        let err = |p: Value| match build(&obj(p)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted"),
        };
        assert_eq!(
            err(json!({"topic": "sports"})),
            "Tavily topic: should be in 'general/news' sports is not supported, it should be in ['general', 'news']"
        );
        assert_eq!(
            err(json!({"search_depth": "deep"})),
            "Tavily search depth should be in 'basic/advanced' deep is not supported, it should be in ['basic', 'advanced']"
        );
        assert_eq!(
            err(json!({"max_results": 0})),
            "Tavily max result number should be within [1， 20] 0 not supported, should be positive integer"
        );
        assert_eq!(
            err(json!({"days": "7"})),
            "Tavily days should be greater than 1 7 not supported, should be positive integer"
        );
        assert!(build(&obj(json!({"topic": "news", "max_results": 3}))).is_ok());
    }

    #[test]
    fn answers_fail_as_the_client_says() {
        assert_eq!(
            tavily_answer(&answer(200, r#"{"results": []}"#)).unwrap(),
            json!({"results": []})
        );
        assert_eq!(
            tavily_answer(&answer(429, r#"{"detail": {"error": "Rate limit"}}"#)).unwrap_err(),
            "Rate limit"
        );
        assert_eq!(
            tavily_answer(&answer(401, r#"{"detail": {}}"#)).unwrap_err(),
            "None"
        );
        assert_eq!(
            tavily_answer(&answer(400, r#"{"detail": "bad"}"#)).unwrap_err(),
            ""
        );
        assert_eq!(
            tavily_answer(&answer(502, "oops")).unwrap_err(),
            "502 Server Error: Bad Gateway for url: https://api.tavily.com/search"
        );
        assert_eq!(
            answer(404, "").raise_for_status().unwrap_err(),
            "404 Client Error: Not Found for url: https://api.tavily.com/search"
        );
        assert!(answer(302, "").raise_for_status().is_ok());
    }

    #[test]
    fn raw_content_wins_over_content() {
        let f = found(&json!({"title": "T", "url": "u", "content": "short",
            "raw_content": "long text", "score": 0.8}));
        assert_eq!(f.content, "long text");
        assert_eq!(f.score, Some(0.8));
        let f = found(&json!({"title": "T", "url": "u", "content": "short", "raw_content": null}));
        assert_eq!(f.content, "short");
        assert_eq!(f.score, None);
    }

    #[test]
    fn thoughts_show_the_query() {
        let t = TavilySearch { meta: meta() };
        assert_eq!(
            t.thoughts(&obj(json!({"query": "rust"}))),
            "\nKeywords: rust\nLooking for the most relevant articles.\n                "
        );
        assert!(t.thoughts(&Object::new()).contains("Keywords: -_-!"));
    }

    #[test]
    fn schema_keeps_enum_and_items() {
        let s = meta().schema(&Object::new(), "tavily_search_0");
        let p = &s["function"]["parameters"];
        assert_eq!(p["required"], json!(["query"]));
        assert_eq!(p["properties"]["topic"]["enum"], json!(["general", "news"]));
        assert_eq!(
            p["properties"]["exclude_domains"]["items"]["description"],
            "Domain name that must be excluded, e.g. www.yahoo.com"
        );
    }
}
