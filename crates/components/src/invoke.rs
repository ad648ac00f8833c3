//! Invoke: RAGFlow's HTTP request node (`llm-and-tools.md` §6, `agent/component/invoke.py`).
//! It builds arguments from its `variables`, sends GET (query string) or POST/PUT (JSON
//! or form body) through the SSRF-guarded client of `tools::net`, and returns the
//! answer's text (optionally reduced to the text of its HTML) as `result`. Also owns
//! the HTML-to-sections reduction (RAGFlow's `HtmlParser`) behind `clean_html`.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use regex::Regex;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use serde_json::{Value, json};

use canvas_engine::refs::{REF_PATTERN_CASED, RefPattern, strip_ref};
use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx};
use canvas_pyrt::{Object, py_json, py_str, py_type_name};
use canvas_tools::ToolEnv;
use canvas_tools::html::html_sections;
use canvas_tools::net::{ClientOptions, NetError, describe};

/// RAGFlow's `header_variable_ref_patt`: plain `{name}` placeholders in header values.
static HEADER_REF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{([a-zA-Z_][a-zA-Z0-9_.@-]*)\}").expect("static regex"));

/// The `User-Agent` sent unless the canvas's headers name one.
const USER_AGENT: &str = concat!("canvas/", env!("CARGO_PKG_VERSION"));

/// The request method (`InvokeParam.check` allows these three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Get,
    Post,
    Put,
}

/// The Invoke component: its checked parameters.
pub struct Invoke {
    url: String,
    method: Method,
    /// `headers` as written: a JSON string (or an object), anything else ignored.
    headers: Value,
    /// `variables`: `[{key, ref?, value?}]`.
    variables: Vec<Value>,
    proxy: String,
    timeout: u64,
    clean_html: bool,
    /// `datatype` json (else formdata).
    json_mode: bool,
    max_retries: u32,
    delay_after_error: f64,
}

/// Build from DSL parameters, with `InvokeParam.check()`'s refusals.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let method = match params.get("method") {
        None => "get".to_string(),
        Some(Value::String(s)) => s.to_lowercase(),
        Some(other) => py_str(other),
    };
    let method = match method.as_str() {
        "get" => Method::Get,
        "post" => Method::Post,
        "put" => Method::Put,
        _ => {
            return Err(BuildError::Params(format!(
                "Type of content from the crawler {method} is not supported, it should be in ['get', 'post', 'put']"
            )));
        }
    };
    let url = match params.get("url") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => py_str(other),
    };
    if url.is_empty() {
        return Err(BuildError::Params(
            "End point URL does not support empty value.".into(),
        ));
    }
    // Python's `check_positive_integer`: an int (not a bool, not a float) above 0.
    let timeout = match params.get("timeout") {
        None => 60,
        Some(v) => match v.as_u64().filter(|t| *t > 0) {
            Some(t) => t,
            None => {
                return Err(BuildError::Params(format!(
                    "Timeout time in second {} not supported, should be positive integer",
                    py_str(v)
                )));
            }
        },
    };
    let clean_html = match params.get("clean_html") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(BuildError::Params(format!(
                "Clean HTML {} not supported, should be bool type",
                py_str(other)
            )));
        }
    };
    let datatype = match params.get("datatype") {
        None => "json".to_string(),
        Some(Value::String(s)) => s.to_lowercase(),
        Some(other) => py_str(other),
    };
    if datatype != "json" && datatype != "formdata" {
        return Err(BuildError::Params(format!(
            "Data post type {datatype} is not supported, it should be in ['json', 'formdata']"
        )));
    }
    let number = |name: &str, default: f64| {
        params
            .get(name)
            .and_then(Value::as_f64)
            .filter(|f| f.is_finite())
            .unwrap_or(default)
    };
    Ok(Box::new(Invoke {
        url,
        method,
        headers: params.get("headers").cloned().unwrap_or(Value::Null),
        variables: params
            .get("variables")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        proxy: params
            .get("proxy")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        timeout,
        clean_html,
        json_mode: datatype == "json",
        // A retry count past a thousand is a typo, not a plan.
        max_retries: number("max_retries", 0.0).clamp(0.0, 1000.0) as u32,
        delay_after_error: number("delay_after_error", 2.0).clamp(0.0, 3600.0),
    }))
}

/// How one request attempt ended, when it did not answer.
enum AttemptError {
    /// The SSRF guard (or an invalid URL/header) refused: not retried.
    NotValid(String),
    /// A network error, retried.
    Failed(String),
    /// The run must stop (a drained stream failed fatally).
    Fatal(String),
}

impl From<ComponentError> for AttemptError {
    fn from(e: ComponentError) -> Self {
        match e {
            ComponentError::Failed(m) => AttemptError::Failed(m),
            ComponentError::Fatal(m) => AttemptError::Fatal(m),
        }
    }
}

/// `_resolve_variable_value`: a kwarg, or the canvas variable; a pending model answer
/// is drained first (RAGFlow joins the generator) and recorded as an input. `None`
/// stays `Null` here; callers turn it into `""`.
async fn variable(cx: &NodeCx<'_>, name: &str) -> CResult<Value> {
    if let Some(v) = cx.kwargs().get(name) {
        return Ok(v.clone());
    }
    let mut drained = false;
    if let Some((cpn, var)) = strip_ref(name).split_once('@') {
        if var == "content" && cx.has_stream(cpn) {
            if let Some(Err(ComponentError::Fatal(m))) = cx.pull_stream(cpn, &mut |_| {}).await {
                return Err(ComponentError::Fatal(m));
            }
            drained = true;
        }
    }
    let v = cx.resolve(name)?;
    if drained {
        cx.set_input(name, v.clone());
    }
    Ok(v)
}

/// Python `str(value)` of a variable, `None` as `""`.
fn text_of(v: &Value) -> String {
    if v.is_null() {
        String::new()
    } else {
        py_str(v)
    }
}

/// Replace every reference in `text` by the variable's text (`_render_template`).
async fn render(cx: &NodeCx<'_>, pattern: &RefPattern, text: &str) -> CResult<String> {
    // Spans first: the matches are not held across the awaits below.
    let spans = pattern
        .find_iter(text)
        .map(|m| (m.start(), m.end(), m.group().to_string()))
        .collect();
    render_spans(cx, text, spans).await
}

/// Replace every match of `re` in `text` (group 1 naming a variable) by the variable's
/// text.
async fn render_re(cx: &NodeCx<'_>, re: &Regex, text: &str) -> CResult<String> {
    let spans = re
        .captures_iter(text)
        .filter_map(|c| {
            let m = c.get(0)?;
            Some((m.start(), m.end(), c.get(1)?.as_str().to_string()))
        })
        .collect();
    render_spans(cx, text, spans).await
}

/// `text` with each span `(start, end, variable)` replaced by the variable's text.
async fn render_spans(
    cx: &NodeCx<'_>,
    text: &str,
    spans: Vec<(usize, usize, String)>,
) -> CResult<String> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end, name) in spans {
        out.push_str(&text[last..start]);
        out.push_str(&text_of(&variable(cx, &name).await?));
        last = end;
    }
    out.push_str(&text[last..]);
    Ok(out)
}

/// `_coerce_json_arg_if_possible`: a string holding JSON becomes that JSON value.
fn coerce_json(key: &str, value: Value) -> CResult<Value> {
    let Value::String(s) = value else {
        return Ok(value);
    };
    match serde_json::from_str::<Value>(&s) {
        Ok(v) => Ok(v),
        // Python's json.loads accepts these, then json.dumps(allow_nan=False) refuses.
        Err(_) if matches!(s.trim(), "NaN" | "Infinity" | "-Infinity") => {
            Err(ComponentError::Failed(format!(
                "Invoke JSON argument '{key}' is not JSON-serializable."
            )))
        }
        Err(_) => Ok(Value::String(s)),
    }
}

/// requests' `_encode_params` + `urlencode(doseq=True)` on an argument dict: `None`
/// dropped, lists repeated, a dict gives its keys, other values their Python `str()`.
fn form_pairs(args: &Object) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in args {
        match v {
            Value::Null => {}
            Value::String(s) => out.push((k.clone(), s.clone())),
            Value::Object(o) => out.extend(o.keys().map(|key| (k.clone(), key.clone()))),
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::Null => {}
                        Value::Array(inner) => {
                            out.extend(inner.iter().map(|x| (k.clone(), py_str(x))));
                        }
                        Value::Object(o) => {
                            out.extend(o.keys().map(|key| (k.clone(), key.clone())));
                        }
                        other => out.push((k.clone(), py_str(other))),
                    }
                }
            }
            other => out.push((k.clone(), py_str(other))),
        }
    }
    out
}

/// `json.dumps(v)` as requests sends it: Python separators, non-ASCII escaped.
fn ascii_json(v: &Value) -> String {
    let s = py_json(v);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for u in c.encode_utf16(&mut buf) {
                let _ = write!(out, "\\u{u:04x}");
            }
        }
    }
    out
}

/// `_normalize_proxy_url`: none when only a scheme is left, `http://` added otherwise.
fn proxy_url(proxy: &str) -> Option<String> {
    static SCHEME_ONLY: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"https?:?/?/?").expect("static regex"));
    let p = proxy.trim();
    if SCHEME_ONLY.replace_all(p, "").is_empty() {
        return None;
    }
    if p.starts_with("http://") || p.starts_with("https://") {
        Some(p.to_string())
    } else {
        Some(format!("http://{p}"))
    }
}

impl Invoke {
    /// `_resolve_arg_value` for one `variables` item.
    async fn arg_value(&self, cx: &NodeCx<'_>, item: &Object) -> CResult<Value> {
        let r = item.get("ref").and_then(Value::as_str).unwrap_or("").trim();
        if !r.is_empty() {
            let in_kwargs = cx.kwargs().contains_key(r);
            let v = variable(cx, r).await?;
            if in_kwargs || !v.is_null() {
                return Ok(if v.is_null() { json!("") } else { v });
            }
        }
        Ok(match item.get("value") {
            Some(Value::String(s)) => json!(render(cx, &REF_PATTERN_CASED, s).await?),
            Some(v) if !v.is_null() => v.clone(),
            _ => json!(""),
        })
    }

    /// `_build_request_args`: the arguments by key; each `ref` is recorded as an input.
    async fn args(&self, cx: &NodeCx<'_>) -> CResult<Object> {
        let mut args = Object::new();
        for item in &self.variables {
            let Some(item) = item.as_object() else {
                return Err(ComponentError::Failed(format!(
                    "Invoke variables must be objects, not {}",
                    py_type_name(item)
                )));
            };
            let key = match item.get("key") {
                Some(Value::String(k)) => k.clone(),
                Some(other) => py_str(other),
                None => return Err(ComponentError::Failed("'key'".into())),
            };
            let mut value = self.arg_value(cx, item).await?;
            if self.json_mode {
                value = coerce_json(&key, value)?;
            }
            if let Some(r) = item.get("ref").filter(|r| canvas_pyrt::truthy(r)) {
                cx.set_input(&py_str(r), value.clone());
            }
            args.insert(key, value);
        }
        Ok(args)
    }

    /// `_build_headers`: a JSON object (an invalid one is ignored, as RAGFlow does),
    /// `{name}` placeholders resolved. A header requests would refuse to send is the
    /// inner error (RAGFlow reports it as `URL not valid`).
    async fn headers(&self, cx: &NodeCx<'_>) -> CResult<Result<HeaderMap, String>> {
        let obj = match &self.headers {
            Value::Object(o) => o.clone(),
            Value::String(s) if !s.trim().is_empty() => match serde_json::from_str(s) {
                Ok(Value::Object(o)) => o,
                _ => Object::new(),
            },
            _ => Object::new(),
        };
        let mut map = HeaderMap::new();
        for (k, v) in &obj {
            let Value::String(text) = v else {
                return Ok(Err(format!(
                    "header {k:?} must be a string, not {}",
                    py_type_name(v)
                )));
            };
            let text = render_re(cx, &HEADER_REF, text).await?;
            let Ok(name) = HeaderName::from_bytes(k.as_bytes()) else {
                return Ok(Err(format!("invalid header name {k:?}")));
            };
            let Ok(value) = HeaderValue::from_bytes(text.as_bytes()) else {
                return Ok(Err(format!("invalid value for header {k:?}: {text:?}")));
            };
            map.insert(name, value);
        }
        Ok(Ok(map))
    }

    /// One request: URL built and checked, sent, answer read.
    async fn attempt(
        &self,
        cx: &NodeCx<'_>,
        client: &reqwest::Client,
        args: &Object,
        headers: &Result<HeaderMap, String>,
    ) -> Result<String, AttemptError> {
        let mut url = render(cx, &REF_PATTERN_CASED, self.url.trim()).await?;
        if !url.starts_with("http://") && !url.starts_with("https://") {
            url = format!("http://{url}");
        }
        let url = ToolEnv::of(cx)
            .net
            .check_url(&url)
            .await
            .map_err(|e| AttemptError::NotValid(e.to_string()))?;
        let headers = headers.clone().map_err(AttemptError::NotValid)?;
        let mut req = match self.method {
            Method::Get => client.get(url),
            Method::Post => client.post(url),
            Method::Put => client.put(url),
        };
        if self.method == Method::Get {
            if !args.is_empty() {
                req = req.query(&form_pairs(args));
            }
        } else if self.json_mode {
            req = req
                .header(CONTENT_TYPE, "application/json")
                .body(ascii_json(&Value::Object(args.clone())));
        } else if !args.is_empty() {
            req = req.form(&form_pairs(args));
        }
        // Set last: the canvas's headers win over the body's content type.
        req = req.headers(headers);
        let failed = |e: reqwest::Error| match NetError::find_in(&e) {
            Some(refusal) => AttemptError::NotValid(refusal.to_string()),
            None => AttemptError::Failed(describe(&e)),
        };
        let resp = req.send().await.map_err(failed)?;
        let text = resp.text().await.map_err(failed)?;
        Ok(if self.clean_html {
            html_sections(&text).join("\n")
        } else {
            text
        })
    }
}

/// Record RAGFlow's SSRF refusal: `_ERROR` says `URL not valid`, then why.
fn not_valid(cx: &NodeCx<'_>, why: &str) {
    cx.set_output("_ERROR", json!(format!("URL not valid: {why}")));
}

#[async_trait]
impl Component for Invoke {
    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "Waiting for the server respond...".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let args = self.args(cx).await?;
        let headers = self.headers(cx).await?;
        let net = ToolEnv::of(cx).net;
        let proxy = proxy_url(&self.proxy);
        if let Some(p) = &proxy {
            if let Err(e) = net.check_url(p).await {
                not_valid(cx, &format!("proxy: {e}"));
                return Ok(());
            }
        }
        let opts = ClientOptions {
            timeout: Some(Duration::from_secs(self.timeout)),
            proxy,
            follow_redirects: false,
            user_agent: Some(USER_AGENT.into()),
        };
        let client = match net.client(&opts) {
            Ok(c) => c,
            Err(e) => {
                not_valid(cx, &e.to_string());
                return Ok(());
            }
        };
        let mut last = String::new();
        for attempt in 0..=self.max_retries {
            match self.attempt(cx, &client, &args, &headers).await {
                Ok(text) => {
                    cx.set_output("result", json!(text));
                    return Ok(());
                }
                // RAGFlow sets `_ERROR` itself and returns (no exception): the
                // `comment` fallback of the component base does not apply.
                Err(AttemptError::NotValid(why)) => {
                    not_valid(cx, &why);
                    return Ok(());
                }
                Err(AttemptError::Fatal(m)) => return Err(ComponentError::Fatal(m)),
                Err(AttemptError::Failed(m)) => last = m,
            }
            if attempt < self.max_retries && self.delay_after_error > 0.0 {
                tokio::time::sleep(Duration::from_secs_f64(self.delay_after_error)).await;
            }
        }
        cx.set_output("_ERROR", json!(last));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::testkit::Harness;

    fn build_err(params: Value) -> String {
        let Value::Object(o) = params else {
            panic!("params must be an object")
        };
        match build(&o) {
            Err(BuildError::Params(m)) => m,
            Err(other) => panic!("unexpected error {other:?}"),
            Ok(_) => panic!("built: {o:?}"),
        }
    }

    #[test]
    fn check_refuses_what_ragflow_refuses() {
        assert_eq!(
            build_err(json!({"url": "x", "method": "DELETE"})),
            "Type of content from the crawler delete is not supported, it should be in ['get', 'post', 'put']"
        );
        assert_eq!(
            build_err(json!({"url": ""})),
            "End point URL does not support empty value."
        );
        assert_eq!(
            build_err(json!({"url": "x", "timeout": 0})),
            "Timeout time in second 0 not supported, should be positive integer"
        );
        assert_eq!(
            build_err(json!({"url": "x", "timeout": 2.5})),
            "Timeout time in second 2.5 not supported, should be positive integer"
        );
        assert_eq!(
            build_err(json!({"url": "x", "clean_html": "yes"})),
            "Clean HTML yes not supported, should be bool type"
        );
        assert_eq!(
            build_err(json!({"url": "x", "datatype": "xml"})),
            "Data post type xml is not supported, it should be in ['json', 'formdata']"
        );
        let Value::Object(ok) =
            json!({"url": "x", "method": "POST", "datatype": "FormData", "timeout": 5})
        else {
            unreachable!()
        };
        assert!(build(&ok).is_ok());
    }

    // Expected pairs and bodies: what python-requests 2.x prepares for the same dicts.
    #[test]
    fn arguments_are_encoded_as_requests_does() {
        let Value::Object(args) = json!({
            "s": "a b&c", "n": 1, "f": 1.0, "b": true, "none": null,
            "l": [1, "x", null, [2, 3], {"k": 1}], "d": {"p": 1, "q": 2}
        }) else {
            unreachable!()
        };
        let pairs: Vec<String> = form_pairs(&args)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(
            pairs,
            [
                "s=a b&c", "n=1", "f=1.0", "b=True", "l=1", "l=x", "l=2", "l=3", "l=k", "d=p",
                "d=q"
            ]
        );
        assert_eq!(
            ascii_json(&json!({"a": "é", "b": [1, 2.5, null, true], "e": "😀"})),
            r#"{"a": "\u00e9", "b": [1, 2.5, null, true], "e": "\ud83d\ude00"}"#
        );
    }

    #[test]
    fn json_mode_decodes_json_strings() {
        assert_eq!(coerce_json("k", json!("[1, 2]")).unwrap(), json!([1, 2]));
        assert_eq!(coerce_json("k", json!("true")).unwrap(), json!(true));
        assert_eq!(coerce_json("k", json!("hello")).unwrap(), json!("hello"));
        assert_eq!(coerce_json("k", json!(3)).unwrap(), json!(3));
        assert_eq!(
            coerce_json("k", json!("NaN")),
            Err(ComponentError::Failed(
                "Invoke JSON argument 'k' is not JSON-serializable.".into()
            ))
        );
    }

    #[test]
    fn proxy_is_normalised() {
        assert_eq!(proxy_url(""), None);
        assert_eq!(proxy_url("http://"), None);
        assert_eq!(proxy_url("https:"), None);
        assert_eq!(
            proxy_url("proxy:3128").as_deref(),
            Some("http://proxy:3128")
        );
        assert_eq!(proxy_url(" https://p:1 ").as_deref(), Some("https://p:1"));
    }

    fn invoke_node(params: Value) -> Harness {
        Harness::single(
            &crate::Registry,
            "Invoke:I",
            "Invoke",
            params,
            json!({"sys.query": "q"}),
        )
    }

    #[test]
    fn private_targets_are_refused_with_the_flag_named() {
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "localhost:9/x",
            "http://[::1]/",
        ] {
            let h = invoke_node(json!({"url": url, "timeout": 1}));
            h.invoke("Invoke:I").unwrap();
            let err = h.output("Invoke:I", "_ERROR");
            let err = err.as_str().unwrap_or_default();
            assert!(
                err.starts_with("URL not valid: refused to connect to"),
                "{url}: {err}"
            );
            assert!(err.contains("--allow-private-network"), "{err}");
            // Nothing answered: `result` was never set.
            assert_eq!(h.output("Invoke:I", "result"), json!(""), "{url}");
        }
        // A proxy on a private address is refused before anything is sent.
        let h = invoke_node(json!({"url": "http://8.8.8.8/", "proxy": "10.0.0.1:3128"}));
        h.invoke("Invoke:I").unwrap();
        let err = h.output("Invoke:I", "_ERROR");
        assert!(
            err.as_str()
                .unwrap_or_default()
                .starts_with("URL not valid: proxy: refused to connect to 10.0.0.1"),
            "{err}"
        );
    }

    #[test]
    fn variables_resolve_and_are_recorded() {
        let h = invoke_node(json!({
            "url": "http://169.254.169.254/",
            "variables": [
                {"key": "q", "ref": "sys.query"},
                {"key": "n", "ref": "begin@n"},
                {"key": "lit", "value": "<{sys.query}>"},
                {"key": "fallback", "ref": "begin@unset", "value": "v"}
            ]
        }));
        h.set_output("begin", "n", json!("42"));
        h.set_output("begin", "unset", Value::Null);
        h.invoke("Invoke:I").unwrap();
        // JSON mode decodes "42"; the recorded input is the decoded value.
        assert_eq!(h.input("Invoke:I", "begin@n"), json!(42));
        assert_eq!(h.input("Invoke:I", "sys.query"), json!("q"));
        // A ref whose value is None falls back to the literal value.
        assert_eq!(h.input("Invoke:I", "begin@unset"), json!("v"));
        // An unknown global raises, as `get_variable_value` does.
        let h = invoke_node(json!({
            "url": "http://x/",
            "variables": [{"key": "a", "ref": "sys.nope"}]
        }));
        assert_eq!(
            h.invoke("Invoke:I"),
            Err(ComponentError::Failed("'sys.nope'".into()))
        );
        // So does a header placeholder naming no variable.
        let h = invoke_node(json!({
            "url": "http://x/",
            "headers": "{\"Authorization\": \"Bearer {token}\"}"
        }));
        assert_eq!(
            h.invoke("Invoke:I"),
            Err(ComponentError::Failed("'token'".into()))
        );
    }
}
