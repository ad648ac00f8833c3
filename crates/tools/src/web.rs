//! Pieces shared by the web tools: RAGFlow's parameter checks (one implementation for
//! every tool), the HTTP client behind the SSRF guard, reading an answer, the run of a
//! search-type tool (empty query, retry loop, results turned into chunks and
//! `formalized_content`, final `"<Tool> error: …"`), and the JSON-API plumbing of the
//! search services (Tavily, GitHub, SerpApi, SearXNG, Keenable, Querit, BGPT).

use std::time::Duration;

use serde_json::{Value, json};

use super::Call;
use super::net::{ClientOptions, describe};
use super::reference::{Found, retrieve_chunks};
use canvas_engine::template::plain_text;
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_repr, py_str};

/// The `User-Agent` of the web tools.
pub const USER_AGENT: &str = concat!("canvas/", env!("CARGO_PKG_VERSION"));

/// `check_positive_integer`: absent (`None`), or a JSON integer above zero (not a
/// float, not a string, not a bool), which is returned.
pub fn check_positive_integer(
    params: &Object,
    name: &str,
    descr: &str,
) -> Result<Option<i64>, BuildError> {
    let Some(v) = params.get(name) else {
        return Ok(None);
    };
    let ok = match v {
        Value::Number(n) if !n.is_f64() => n.as_i64().is_none_or(|i| i > 0),
        _ => false,
    };
    if ok {
        Ok(Some(v.as_i64().unwrap_or(i64::MAX)))
    } else {
        Err(BuildError::Params(format!(
            "{descr} {} not supported, should be positive integer",
            py_str(v)
        )))
    }
}

/// `check_valid_value`: absent (the default is valid), or one of `valid`.
pub fn check_valid_value(
    params: &Object,
    name: &str,
    descr: &str,
    valid: &[&str],
) -> Result<(), BuildError> {
    let Some(v) = params.get(name) else {
        return Ok(());
    };
    if v.as_str().is_some_and(|s| valid.contains(&s)) {
        return Ok(());
    }
    let list: Vec<String> = valid.iter().map(|s| format!("'{s}'")).collect();
    Err(BuildError::Params(format!(
        "{descr} {} is not supported, it should be in [{}]",
        py_str(v),
        list.join(", ")
    )))
}

/// `check_valid_value`: `<descr> <value> is not supported, it should be in [...]`.
pub fn valid_value(
    params: &Object,
    name: &str,
    default: &str,
    descr: &str,
    allowed: &[&str],
) -> Result<String, BuildError> {
    let v = params.get(name).cloned().unwrap_or_else(|| json!(default));
    match v.as_str() {
        Some(s) if allowed.contains(&s) => Ok(s.to_string()),
        _ => {
            let list: Vec<Value> = allowed.iter().map(|s| json!(s)).collect();
            Err(BuildError::Params(format!(
                "{descr} {} is not supported, it should be in {}",
                py_str(&v),
                py_repr(&Value::Array(list))
            )))
        }
    }
}

/// `check_boolean`: absent, or a JSON boolean.
pub fn check_boolean(params: &Object, name: &str, descr: &str) -> Result<(), BuildError> {
    match params.get(name) {
        None | Some(Value::Bool(_)) => Ok(()),
        Some(v) => Err(BuildError::Params(format!(
            "{descr} {} not supported, should be bool type",
            py_str(v)
        ))),
    }
}

/// `top_n` (checked at build time), at least 1.
pub fn top_n(call: &Call<'_>, default: usize) -> usize {
    // NaN becomes 0, then 1.
    (call.param_f64("top_n", default as f64).clamp(1.0, 10_000.0) as usize).max(1)
}

/// The `query` argument as text (`None`: absent).
pub fn query_arg(args: &Object) -> Option<String> {
    args.get("query").map(plain_text)
}

/// RAGFlow's `thoughts()` of the search tools: the query, or `-_-!` when absent.
pub fn keywords_thoughts(args: &Object, trailing_spaces: usize) -> String {
    let q = query_arg(args).unwrap_or_else(|| "-_-!".to_string());
    format!(
        "\nKeywords: {q}\nLooking for the most relevant articles.\n{}",
        " ".repeat(trailing_spaces)
    )
}

/// PubMed's and GoogleScholar's `thoughts()` (RAGFlow's text, stray quote included).
pub fn scholarly_thoughts(args: &Object) -> String {
    let q = query_arg(args).unwrap_or_else(|| "-_-!".to_string());
    format!("Looking for scholarly papers on `{q}`,” prioritising reputable sources.")
}

/// An HTTP client behind the SSRF guard.
pub fn client(call: &Call<'_>, timeout: Duration) -> Result<reqwest::Client, String> {
    call.env()
        .net
        .client(&ClientOptions {
            timeout: Some(timeout),
            proxy: None,
            follow_redirects: true,
            user_agent: Some(USER_AGENT.to_string()),
        })
        .map_err(|e| e.to_string())
}

/// A sent request's answer: status, body text and `Retry-After` seconds (when given
/// as a number); transport errors as text.
pub async fn send(req: reqwest::RequestBuilder) -> Result<(u16, String, Option<f64>), String> {
    let resp = req.send().await.map_err(|e| describe(&e))?;
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0);
    let body = resp.text().await.map_err(|e| describe(&e))?;
    Ok((status, body, retry_after))
}

/// The reason phrase of a status (`429` → `Too Many Requests`).
pub fn reason(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

/// What one successful search gives: the results, and the `json` output when the tool
/// sets one.
pub struct SearchOutcome {
    /// Results in order.
    pub found: Vec<Found>,
    /// The `json` output (RAGFlow sets it for DuckDuckGo and GoogleScholar).
    pub json: Option<Value>,
}

/// The run of a search-type tool as RAGFlow's `_invoke`: an empty query sets an empty
/// `formalized_content` (and `empty_json`, when given) and returns `""`; otherwise
/// `search` runs in the retry loop; results become chunks in the reference store and
/// knowledge blocks in `formalized_content`, which the model reads; the last failure
/// sets `_ERROR` and returns `"<label> error: <message>"`.
pub async fn run_search<F, Fut>(
    call: &Call<'_>,
    args: &Object,
    label: &str,
    empty_json: Option<Value>,
    mut search: F,
) -> CResult<Option<Value>>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Result<SearchOutcome, String>>,
{
    let query = query_arg(args).unwrap_or_default();
    if query.is_empty() {
        call.set_output("formalized_content", json!(""));
        if let Some(j) = empty_json {
            call.set_output("json", j);
        }
        return Ok(Some(json!("")));
    }
    match super::with_retries(call, || search(query.clone())).await {
        Ok(out) => {
            let (chunks, aggs, text) = retrieve_chunks(&out.found);
            call.add_reference(&chunks, &aggs);
            call.set_output("formalized_content", json!(text));
            if let Some(j) = out.json {
                call.set_output("json", j);
            }
            Ok(Some(json!(text)))
        }
        Err(e) => {
            call.set_output("_ERROR", json!(e));
            Ok(Some(json!(format!("{label} error: {e}"))))
        }
    }
}

/// Python's `html.unescape`, for the tools that use it.
pub use canvas_pyrt::html_unescape;

/// Python's `urllib.parse.unquote`: `%XX` sequences decoded as UTF-8 (invalid bytes
/// replaced), other text kept.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ---- JSON API plumbing of the search tools (Tavily, GitHub, SerpApi, Querit, ...) ----

/// A field's default, built on demand.
pub type DefaultValue = fn() -> Value;

/// What a server answered: status, final URL, body.
pub struct HttpAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The URL answered (the query string included), for error texts.
    pub url: String,
    /// The body as text.
    pub body: String,
}

impl HttpAnswer {
    /// `requests`' `raise_for_status`: `404 Client Error: Not Found for url: …`.
    pub fn raise_for_status(&self) -> Result<(), String> {
        let kind = match self.status {
            400..=499 => "Client",
            500..=599 => "Server",
            _ => return Ok(()),
        };
        let reason = reqwest::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("");
        Err(format!(
            "{} {kind} Error: {reason} for url: {}",
            self.status, self.url
        ))
    }

    /// The body as JSON (`requests`' `.json()`).
    pub fn json(&self) -> Result<Value, String> {
        serde_json::from_str(&self.body).map_err(|e| e.to_string())
    }
}

/// Send a request; transport failures as one line.
pub async fn send_answer(req: reqwest::RequestBuilder) -> Result<HttpAnswer, String> {
    let resp = req.send().await.map_err(|e| describe(&e))?;
    let status = resp.status().as_u16();
    let url = resp.url().to_string();
    let body = resp.text().await.map_err(|e| describe(&e))?;
    Ok(HttpAnswer { status, url, body })
}

/// The SSRF-guarded client for requests to `url` (its address checked first: literal
/// IPs never reach the client's resolver).
pub async fn http_client(
    call: &Call<'_>,
    url: &str,
    timeout: Duration,
) -> Result<reqwest::Client, String> {
    let net = &call.env().net;
    net.check_url(url).await.map_err(|e| e.to_string())?;
    net.client(&ClientOptions {
        timeout: Some(timeout),
        ..Default::default()
    })
    .map_err(|e| e.to_string())
}

/// RAGFlow's final failure of a tool: the message in `_ERROR`, `"<Tool> error: …"` for
/// the model.
pub fn failed(call: &Call<'_>, tool: &str, msg: String) -> CResult<Option<Value>> {
    let text = format!("{tool} error: {msg}");
    call.set_output("_ERROR", json!(msg));
    Ok(Some(json!(text)))
}

/// A search tool's results, as RAGFlow's JSON-API search tools publish them: chunks in
/// the run's reference store, knowledge blocks in `formalized_content` (which the model
/// reads, and the call returns), the raw results in `json`.
pub fn publish(
    call: &Call<'_>,
    results: Vec<Value>,
    found: impl Fn(&Value) -> Found,
) -> CResult<Option<Value>> {
    let found: Vec<Found> = results.iter().map(found).collect();
    let (chunks, aggs, text) = retrieve_chunks(&found);
    call.add_reference(&chunks, &aggs);
    call.set_output("formalized_content", json!(text));
    call.set_output("json", Value::Array(results));
    Ok(Some(json!(text)))
}

/// A key: the parameter when non-blank, else the environment variable.
pub fn api_key(call: &Call<'_>, param: &str, var: &str) -> Option<String> {
    let p = call.param_str(param, "").trim();
    if !p.is_empty() {
        return Some(p.to_string());
    }
    call.env().var(var).map(|v| v.trim().to_string())
}

/// An input as RAGFlow's `thoughts` prints it (`-_-!` when absent).
pub fn input_text(args: &Object, name: &str) -> String {
    match args.get(name) {
        Some(v) => py_str(v),
        None => "-_-!".to_string(),
    }
}

/// A value as text: strings as they are, null as "", others as Python's `str()`.
pub fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => py_str(other),
    }
}

/// A field of a result as text ("" when absent or null).
pub fn text_field(r: &Value, name: &str) -> String {
    r.get(name).map(text_of).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn checks_give_ragflow_messages() {
        let p = obj(json!({"top_n": 0, "lang": "xx", "flag": "yes", "n2": 2.5, "n3": true}));
        assert_eq!(
            check_positive_integer(&p, "top_n", "Top N")
                .unwrap_err()
                .to_string(),
            "Top N 0 not supported, should be positive integer"
        );
        assert!(check_positive_integer(&p, "n2", "N").is_err());
        assert!(check_positive_integer(&p, "n3", "N").is_err());
        assert!(check_positive_integer(&p, "absent", "N").is_ok());
        assert!(check_positive_integer(&obj(json!({"n": 3})), "n", "N").is_ok());
        assert_eq!(
            check_valid_value(&p, "lang", "Languages", &["en", "de"])
                .unwrap_err()
                .to_string(),
            "Languages xx is not supported, it should be in ['en', 'de']"
        );
        assert!(check_valid_value(&obj(json!({"lang": "de"})), "lang", "L", &["en", "de"]).is_ok());
        assert_eq!(
            check_boolean(&p, "flag", "Patents")
                .unwrap_err()
                .to_string(),
            "Patents yes not supported, should be bool type"
        );
        assert!(check_boolean(&obj(json!({"flag": false})), "flag", "P").is_ok());
    }

    #[test]
    fn urls_and_entities_decode_as_python_does() {
        assert_eq!(percent_decode("a%20b%2Fc%E2%9C%93%zz%"), "a b/c✓%zz%");
        assert_eq!(percent_decode("%e2%9c"), "\u{fffd}");
        assert_eq!(
            html_unescape("a &amp; b&nbsp;&#39;c&#x27;"),
            "a & b\u{a0}'c'"
        );
    }

    #[test]
    fn thoughts_name_the_query() {
        let a = obj(json!({"query": "rust"}));
        assert_eq!(
            keywords_thoughts(&a, 8),
            "\nKeywords: rust\nLooking for the most relevant articles.\n        "
        );
        assert!(keywords_thoughts(&Object::new(), 0).contains("Keywords: -_-!"));
        assert_eq!(
            scholarly_thoughts(&a),
            "Looking for scholarly papers on `rust`,” prioritising reputable sources."
        );
    }
}
