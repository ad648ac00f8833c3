//! QueritContents (`querit_contents`, `agent/tools/querit.py`, `llm-and-tools.md` §7.2):
//! page contents of 1–10 URLs through Querit's `POST /v1/contents`, with QueritSearch's
//! key and request loop. The whole response is the `json` output and the model's result.
//!
//! As RAGFlow, the parameters are validated when the canvas loads, so a node (or an
//! Agent's tool) without configured `urls` does not load.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::querit_search::{BASE_DEFAULT, BASE_VAR, DEFAULT_TIMEOUT, KEY_VAR, post, redact};
use super::web::{DefaultValue, api_key, failed};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::Object;

/// The content parameters, in RAGFlow's order, with their defaults.
const FIELDS: [(&str, DefaultValue); 4] = [
    ("urls", || json!([])),
    ("format", || json!("markdown")),
    ("crawl_timeout", || json!(10)),
    ("extras_meta", || json!(false)),
];

/// Build QueritContents from its DSL parameters (RAGFlow's `check()`).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    validate(&values(params, &Object::new())).map_err(BuildError::Params)?;
    Ok(Box::new(QueritContents {
        meta: ToolMeta {
            name: "querit_contents",
            description: "Crawl one or more web pages with Querit and return their contents.",
            parameters: vec![
                Param {
                    kind: "array",
                    default: json!([]),
                    items: Some(json!({"type": "string"})),
                    ..Param::string(
                        "urls",
                        "The absolute HTTP or HTTPS URLs to crawl. Supports 1 to 10 URLs.",
                        "",
                    )
                },
                Param {
                    choices: &["text", "markdown", "html"],
                    required: false,
                    ..Param::string(
                        "format",
                        "Content format: text, markdown, or html. Defaults to markdown.",
                        "markdown",
                    )
                },
                Param {
                    kind: "integer",
                    default: json!(10),
                    required: false,
                    ..Param::string(
                        "crawl_timeout",
                        "Per-page crawl timeout in seconds. Must be between 1 and 60.",
                        "",
                    )
                },
                Param {
                    kind: "boolean",
                    default: json!(false),
                    required: false,
                    ..Param::string(
                        "extras_meta",
                        "Whether to include page metadata in each result.",
                        "",
                    )
                },
            ],
        },
    }))
}

/// The QueritContents tool.
pub struct QueritContents {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for QueritContents {
    crate::tool_facts!("QueritContents", outputs: ["json"], env: [KEY_VAR, BASE_VAR]);

    fn thoughts(&self, _args: &Object) -> String {
        "Reading web page contents with Querit.".to_string()
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let fail = |m: String| failed(call, "Querit contents", m);
        let values = values(call.params, args);
        let Some(key) = api_key(call, "api_key", KEY_VAR) else {
            return fail(
                "Querit API key is required. Configure api_key or set QUERIT_API_KEY.".into(),
            );
        };
        if let Err(e) = validate(&values) {
            return fail(redact(&e, &key));
        }
        let crawl = values[2].1.as_u64().unwrap_or(10);
        let payload = json!({"urls": values[0].1, "format": values[1].1,
            "crawlTimeout": values[2].1, "extrasMeta": values[3].1});
        let timeout = DEFAULT_TIMEOUT.max(Duration::from_secs(crawl + 5));
        let url = format!(
            "{}/v1/contents",
            call.env().base_url(BASE_VAR, BASE_DEFAULT)
        );
        match post(call, &url, &payload, &key, timeout)
            .await
            .and_then(|r| check_response(&r).map(|_| r))
        {
            Ok(data) => {
                call.set_output("json", data.clone());
                Ok(Some(data))
            }
            Err(e) => fail(redact(&e, &key)),
        }
    }
}

/// Each field from the call's arguments, else the parameters, else the default; a
/// comma-separated `urls` string split into trimmed, non-empty URLs.
fn values(params: &Object, args: &Object) -> Vec<(&'static str, Value)> {
    FIELDS
        .iter()
        .map(|(k, default)| {
            let mut v = args
                .get(*k)
                .or_else(|| params.get(*k))
                .cloned()
                .unwrap_or_else(default);
            if let (&"urls", Value::String(s)) = (k, &v) {
                let urls: Vec<Value> = s
                    .split(',')
                    .map(str::trim)
                    .filter(|u| !u.is_empty())
                    .map(|u| json!(u))
                    .collect();
                v = Value::Array(urls);
            }
            (*k, v)
        })
        .collect()
}

/// RAGFlow's `_validate_contents_inputs`.
fn validate(values: &[(&str, Value)]) -> Result<(), String> {
    let urls = match &values[0].1 {
        Value::Array(a)
            if (1..=10).contains(&a.len())
                && a.iter()
                    .all(|u| u.as_str().is_some_and(|s| !s.trim().is_empty())) =>
        {
            a
        }
        _ => return Err("Querit urls must contain between 1 and 10 non-empty strings.".into()),
    };
    for u in urls.iter().filter_map(Value::as_str) {
        let ok = reqwest::Url::parse(u)
            .is_ok_and(|p| matches!(p.scheme(), "http" | "https") && p.has_host());
        if !ok {
            return Err("Querit urls must be absolute HTTP or HTTPS URLs.".into());
        }
    }
    if !matches!(values[1].1.as_str(), Some("text" | "markdown" | "html")) {
        return Err("Querit format must be text, markdown, or html.".into());
    }
    let t = &values[2].1;
    if t.is_f64() || !t.as_i64().is_some_and(|n| (1..=60).contains(&n)) {
        return Err("Querit crawl_timeout must be an integer from 1 to 60.".into());
    }
    if !values[3].1.is_boolean() {
        return Err("Querit extras_meta must be a boolean.".into());
    }
    Ok(())
}

/// RAGFlow's `_validate_contents_response`.
fn check_response(data: &Value) -> Result<(), String> {
    let Some(o) = data.as_object() else {
        return Err("Querit API response must be a JSON object.".into());
    };
    if o.get("results").is_some_and(|r| !r.is_array()) {
        return Err("Querit API response field results must be an array.".into());
    }
    if o.get("statuses").is_some_and(|r| !r.is_array()) {
        return Err("Querit API response field statuses must be an array.".into());
    }
    Ok(())
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
    fn urls_are_required_at_load() {
        match build(&Object::new()) {
            Err(e) => assert_eq!(
                e.to_string(),
                "Querit urls must contain between 1 and 10 non-empty strings."
            ),
            Ok(_) => panic!("accepted"),
        }
        assert!(build(&obj(json!({"urls": "https://a.com, https://b.com"}))).is_ok());
    }

    #[test]
    fn inputs_are_validated_as_ragflow_does() {
        assert_eq!(
            values(
                &obj(json!({"urls": " https://a.com ,, https://b.com"})),
                &Object::new()
            )[0]
            .1,
            json!(["https://a.com", "https://b.com"])
        );
        assert_eq!(
            check(json!({"urls": ["ftp://a.com"]})).unwrap_err(),
            "Querit urls must be absolute HTTP or HTTPS URLs."
        );
        assert_eq!(
            check(json!({"urls": ["https://a.com"], "format": "pdf"})).unwrap_err(),
            "Querit format must be text, markdown, or html."
        );
        assert_eq!(
            check(json!({"urls": ["https://a.com"], "crawl_timeout": 61})).unwrap_err(),
            "Querit crawl_timeout must be an integer from 1 to 60."
        );
        assert!(check(json!({"urls": ["https://a.com"], "crawl_timeout": 5.0})).is_err());
        assert_eq!(
            check(json!({"urls": ["https://a.com"], "extras_meta": "yes"})).unwrap_err(),
            "Querit extras_meta must be a boolean."
        );
        let eleven: Vec<String> = (0..11).map(|i| format!("https://a{i}.com")).collect();
        assert!(check(json!({"urls": eleven})).is_err());
    }

    #[test]
    fn response_shapes_are_checked() {
        assert!(check_response(&json!({"results": [], "statuses": []})).is_ok());
        assert_eq!(
            check_response(&json!({"statuses": {}})).unwrap_err(),
            "Querit API response field statuses must be an array."
        );
        assert!(check_response(&json!("x")).is_err());
    }
}
