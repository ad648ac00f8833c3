//! QueritSearch (`querit_search`, `agent/tools/querit.py`, `llm-and-tools.md` §7.2): web
//! search through Querit's `POST /v1/search` (Bearer key from `api_key` or
//! `QUERIT_API_KEY`). Results become reference chunks; `json` is the whole response.
//!
//! Also the Querit request loop QueritContents shares: three attempts whatever
//! `max_retries` says, retrying 429/5xx answers and transport errors, the key
//! redacted from every error text.

use std::time::Duration;

use async_trait::async_trait;
use regex::Regex;
use serde_json::{Map, Value, json};

use super::reference::{Found, retrieve_chunks};
use super::web::{DefaultValue, HttpAnswer, api_key, failed, http_client, send_answer, text_field};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::Object;

/// Base URL override (tests, mirrors); shared with QueritContents.
pub(crate) const BASE_VAR: &str = "CANVAS_QUERIT_BASE_URL";
/// Querit's API.
pub(crate) const BASE_DEFAULT: &str = "https://api.querit.ai";
/// The key's environment variable.
pub(crate) const KEY_VAR: &str = "QUERIT_API_KEY";
/// RAGFlow's `DEFAULT_TIMEOUT` of its HTTP client.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
const ATTEMPTS: usize = 3;
const RETRYABLE: [u16; 5] = [429, 500, 502, 503, 504];

/// The search parameters RAGFlow validates, in its order, with their defaults.
const FIELDS: [(&str, DefaultValue); 7] = [
    ("count", || json!(10)),
    ("chunks_per_doc", || json!(3)),
    ("site_include", || json!([])),
    ("site_exclude", || json!([])),
    ("time_range", || json!("")),
    ("country_include", || json!([])),
    ("language_include", || json!([])),
];

/// Build QueritSearch from its DSL parameters (RAGFlow's `check()`).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    validate(&values(params, &Object::new())).map_err(BuildError::Params)?;
    let list = |name, description| Param {
        kind: "array",
        default: json!([]),
        items: Some(json!({"type": "string"})),
        required: false,
        ..Param::string(name, description, "")
    };
    let int = |name, description, default: i64| Param {
        kind: "integer",
        default: json!(default),
        required: false,
        ..Param::string(name, description, "")
    };
    Ok(Box::new(QueritSearch {
        meta: ToolMeta {
            name: "querit_search",
            description: "Search the live web with Querit and return the complete Querit API response.",
            parameters: vec![
                Param::string(
                    "query",
                    "The search query to execute with Querit.",
                    "{sys.query}",
                ),
                int(
                    "count",
                    "The maximum number of results to return. Defaults to 10.",
                    10,
                ),
                int(
                    "chunks_per_doc",
                    "The number of summary chunks per document. Supports values from 1 to 3.",
                    3,
                ),
                list("site_include", "Sites that search results must include."),
                list("site_exclude", "Sites that search results must exclude."),
                Param {
                    required: false,
                    ..Param::string(
                        "time_range",
                        "A Querit time range such as d7, w1, m3, y1, or YYYY-MM-DDtoYYYY-MM-DD.",
                        "",
                    )
                },
                list(
                    "country_include",
                    "Return results associated with the specified countries.",
                ),
                list(
                    "language_include",
                    "Languages that search results must include.",
                ),
            ],
        },
    }))
}

/// The QueritSearch tool.
pub struct QueritSearch {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for QueritSearch {
    crate::tool_facts!("QueritSearch", outputs: ["formalized_content", "json"], env: [KEY_VAR, BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        format!(
            "Searching Querit for `{}`.",
            super::web::input_text(args, "query")
        )
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let fail = |m: String| failed(call, "Querit", m);
        let query = match args.get("query") {
            Some(Value::String(s)) => s.clone(),
            _ => return fail("Querit query must be a string.".into()),
        };
        if query.is_empty() {
            call.set_output("formalized_content", json!(""));
            call.set_output("json", json!({}));
            return Ok(Some(json!("")));
        }
        let Some(key) = api_key(call, "api_key", KEY_VAR) else {
            return fail(
                "Querit API key is required. Configure api_key or set QUERIT_API_KEY.".into(),
            );
        };
        let values = values(call.params, args);
        if let Err(e) = validate(&values) {
            return fail(redact(&e, &key));
        }
        let url = format!("{}/v1/search", call.env().base_url(BASE_VAR, BASE_DEFAULT));
        let response = match post(call, &url, &payload(&query, &values), &key, DEFAULT_TIMEOUT)
            .await
            .and_then(|r| search_results(&r).map(|found| (r, found)))
        {
            Ok(r) => r,
            Err(e) => return fail(redact(&e, &key)),
        };
        let (data, found) = response;
        if found.is_empty() {
            call.set_output("formalized_content", json!(""));
        } else {
            let (chunks, aggs, text) = retrieve_chunks(&found);
            call.add_reference(&chunks, &aggs);
            call.set_output("formalized_content", json!(text));
        }
        call.set_output("json", data);
        Ok(Some(call.output("formalized_content")))
    }
}

/// Each search field: the call's argument when given, else the parameter, else the
/// default.
fn values(params: &Object, args: &Object) -> Vec<(&'static str, Value)> {
    FIELDS
        .iter()
        .map(|(k, default)| {
            let v = args
                .get(*k)
                .or_else(|| params.get(*k))
                .cloned()
                .unwrap_or_else(default);
            (*k, v)
        })
        .collect()
}

/// A JSON integer (Python `type(v) is int`: not a float, not a bool).
fn int_of(v: &Value) -> Option<i64> {
    if v.is_f64() { None } else { v.as_i64() }
}

/// RAGFlow's `_validate_search_inputs`.
fn validate(values: &[(&str, Value)]) -> Result<(), String> {
    static TIME_RANGE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"^([dwmy][1-9][0-9]*|\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2})$")
            .expect("valid regex")
    });
    let get = |k: &str| {
        values
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v)
            .unwrap_or(&Value::Null)
    };
    if int_of(get("count")).is_none_or(|c| c < 1) {
        return Err("Querit count must be an integer greater than or equal to 1.".into());
    }
    let cpd = get("chunks_per_doc");
    if !cpd.is_null() && !int_of(cpd).is_some_and(|c| (1..=3).contains(&c)) {
        return Err("Querit chunks_per_doc must be an integer from 1 to 3.".into());
    }
    let Value::String(tr) = get("time_range") else {
        return Err("Querit time_range must be a string.".into());
    };
    if !tr.is_empty() && !TIME_RANGE.is_match(tr) {
        return Err("Querit time_range must use dN, wN, mN, yN, or YYYY-MM-DDtoYYYY-MM-DD.".into());
    }
    for name in [
        "site_include",
        "site_exclude",
        "country_include",
        "language_include",
    ] {
        let ok = matches!(get(name), Value::Array(a) if a.iter().all(Value::is_string));
        if !ok {
            return Err(format!("Querit {name} must be an array of strings."));
        }
    }
    Ok(())
}

/// RAGFlow's `_build_payload`: the filters Querit knows, only those given.
fn payload(query: &str, values: &[(&str, Value)]) -> Value {
    let get = |k: &str| {
        values
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or(Value::Null)
    };
    let given = |v: &Value| match v {
        Value::Array(a) => !a.is_empty(),
        Value::String(s) => !s.is_empty(),
        Value::Null => false,
        _ => true,
    };
    let mut p = Map::new();
    p.insert("query".into(), json!(query));
    p.insert("count".into(), get("count"));
    if !get("chunks_per_doc").is_null() {
        p.insert("chunksPerDoc".into(), get("chunks_per_doc"));
    }
    let mut filters = Map::new();
    let (inc, exc) = (get("site_include"), get("site_exclude"));
    if given(&inc) || given(&exc) {
        let mut sites = Map::new();
        if given(&inc) {
            sites.insert("include".into(), inc);
        }
        if given(&exc) {
            sites.insert("exclude".into(), exc);
        }
        filters.insert("sites".into(), Value::Object(sites));
    }
    if given(&get("time_range")) {
        filters.insert("timeRange".into(), json!({"date": get("time_range")}));
    }
    if given(&get("country_include")) {
        filters.insert(
            "geo".into(),
            json!({"countries": {"include": get("country_include")}}),
        );
    }
    if given(&get("language_include")) {
        filters.insert(
            "languages".into(),
            json!({"include": get("language_include")}),
        );
    }
    if !filters.is_empty() {
        p.insert("filters".into(), Value::Object(filters));
    }
    Value::Object(p)
}

/// The response's `results.result` items that are objects, as references.
fn search_results(data: &Value) -> Result<Vec<Found>, String> {
    let Some(o) = data.as_object() else {
        return Err("Querit API response must be a JSON object.".into());
    };
    let container = match o.get("results") {
        None => return Ok(Vec::new()),
        Some(Value::Object(c)) => c,
        Some(_) => return Err("Querit API response field results must be an object.".into()),
    };
    let items = match container.get("result") {
        None => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => {
            return Err("Querit API response field results.result must be an array.".into());
        }
    };
    Ok(items
        .iter()
        .filter(|i| i.is_object())
        .map(|i| Found {
            title: text_field(i, "title"),
            url: text_field(i, "url"),
            content: text_field(i, "snippet"),
            // RAGFlow scores every result 1 (an int), as a missing score reads.
            score: None,
        })
        .collect())
}

/// RAGFlow's `_post_querit`: up to three attempts; a 429/5xx answer or a transport
/// error is retried after `delay_after_error` (the last one fails); other error
/// statuses fail at once.
pub(crate) async fn post(
    call: &Call<'_>,
    url: &str,
    payload: &Value,
    key: &str,
    timeout: Duration,
) -> Result<Value, String> {
    let client = http_client(call, url, timeout).await?;
    let delay = call.param_f64("delay_after_error", 2.0).clamp(0.0, 3600.0);
    let mut last = "Querit request failed after three attempts.".to_string();
    for attempt in 0..ATTEMPTS {
        let req = client
            .post(url)
            .header("Accept", "application/json")
            .bearer_auth(key)
            .json(payload);
        let more = attempt + 1 < ATTEMPTS;
        match send_answer(req).await {
            Ok(a) => {
                if let Some(res) = answer(&a, more) {
                    return res;
                }
            }
            Err(e) if more => last = e,
            Err(e) => return Err(e),
        }
        if delay > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(delay)).await;
        }
    }
    Err(last)
}

/// What one answer means: `None` to retry (429/5xx while attempts remain).
fn answer(a: &HttpAnswer, more: bool) -> Option<Result<Value, String>> {
    if more && RETRYABLE.contains(&a.status) {
        return None;
    }
    Some(a.raise_for_status().and_then(|_| a.json()))
}

/// RAGFlow's `_safe_error_message`: the key never appears in an error text.
pub(crate) fn redact(msg: &str, key: &str) -> String {
    let msg = if msg.is_empty() { "Exception" } else { msg };
    if key.is_empty() {
        msg.to_string()
    } else {
        msg.replace(key, "[REDACTED]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    fn check(params: Value) -> Result<(), String> {
        validate(&values(&obj(params), &Object::new()))
    }

    #[test]
    fn inputs_are_validated_as_ragflow_does() {
        assert!(check(json!({})).is_ok());
        assert_eq!(
            check(json!({"count": 0})).unwrap_err(),
            "Querit count must be an integer greater than or equal to 1."
        );
        assert!(check(json!({"count": 2.0})).is_err());
        assert!(check(json!({"count": "5"})).is_err());
        assert_eq!(
            check(json!({"chunks_per_doc": 4})).unwrap_err(),
            "Querit chunks_per_doc must be an integer from 1 to 3."
        );
        assert!(check(json!({"chunks_per_doc": null})).is_ok());
        assert!(check(json!({"time_range": "d7"})).is_ok());
        assert!(check(json!({"time_range": "2024-01-01to2024-02-01"})).is_ok());
        assert_eq!(
            check(json!({"time_range": "d0"})).unwrap_err(),
            "Querit time_range must use dN, wN, mN, yN, or YYYY-MM-DDtoYYYY-MM-DD."
        );
        assert_eq!(
            check(json!({"time_range": 7})).unwrap_err(),
            "Querit time_range must be a string."
        );
        assert_eq!(
            check(json!({"site_exclude": ["a", 1]})).unwrap_err(),
            "Querit site_exclude must be an array of strings."
        );
        assert!(build(&obj(json!({"language_include": "en"}))).is_err());
    }

    #[test]
    fn payload_has_only_given_filters() {
        let v = values(&Object::new(), &Object::new());
        assert_eq!(
            payload("q", &v),
            json!({"query": "q", "count": 10, "chunksPerDoc": 3})
        );
        let args = obj(
            json!({"count": 2, "site_exclude": ["x.com"], "time_range": "w1",
            "country_include": ["us"], "language_include": ["en"]}),
        );
        assert_eq!(
            payload("q", &values(&Object::new(), &args)),
            json!({"query": "q", "count": 2, "chunksPerDoc": 3, "filters": {
                "sites": {"exclude": ["x.com"]}, "timeRange": {"date": "w1"},
                "geo": {"countries": {"include": ["us"]}}, "languages": {"include": ["en"]}}})
        );
    }

    #[test]
    fn results_and_shapes() {
        let data = json!({"error_code": 200, "results": {"result": [
            {"url": "https://a", "title": "A", "snippet": "about a"}, "junk"]}});
        let f = search_results(&data).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].content.as_str(), f[0].score), ("about a", None));
        assert_eq!(
            search_results(&json!({"results": []})).unwrap_err(),
            "Querit API response field results must be an object."
        );
        assert_eq!(
            search_results(&json!({"results": {"result": {}}})).unwrap_err(),
            "Querit API response field results.result must be an array."
        );
        assert!(search_results(&json!([])).is_err());
    }

    #[test]
    fn answers_retry_only_429_and_5xx_while_attempts_remain() {
        let a = |status| HttpAnswer {
            status,
            url: "https://api.querit.ai/v1/search".into(),
            body: "{}".into(),
        };
        assert!(answer(&a(429), true).is_none());
        assert!(answer(&a(503), true).is_none());
        assert_eq!(
            answer(&a(429), false).unwrap().unwrap_err(),
            "429 Client Error: Too Many Requests for url: https://api.querit.ai/v1/search"
        );
        assert!(answer(&a(401), true).unwrap().is_err());
        assert_eq!(answer(&a(200), true).unwrap().unwrap(), json!({}));
        assert_eq!(
            redact("bad key sk-1 here", "sk-1"),
            "bad key [REDACTED] here"
        );
    }
}
