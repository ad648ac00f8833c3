//! DeepL (`agent/tools/deepl.py`, function `deepl_translate`): translate the query with
//! DeepL's REST API (`POST /v2/translate`), as the `deepl` Python library does: keys
//! ending in `:fx` go to the free host, others to the pro host; 429 and 5xx answers are
//! retried with the library's back-off; failures become `DeepL error: <library text>`.
//!
//! Differences from RAGFlow: the key may also come from `DEEPL_AUTH_KEY` (the
//! parameter's placeholder `xxx` counts as unset, and a missing key is said so instead
//! of DeepL's 403); `CANVAS_DEEPL_BASE_URL` overrides the host.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::net::describe;
use super::web::{http_client, valid_value};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_str};

/// Base URL override variable.
const BASE_VAR: &str = "CANVAS_DEEPL_BASE_URL";
/// The key's usual variable (the `deepl` CLI's).
const KEY_VAR: &str = "DEEPL_AUTH_KEY";
const FREE_HOST: &str = "https://api-free.deepl.com";
const PRO_HOST: &str = "https://api.deepl.com";
/// The library's per-request timeout (`min_connection_timeout` is 10 s; we allow more
/// for long texts).
const TIMEOUT: Duration = Duration::from_secs(30);
/// The library's `max_network_retries` default.
const NETWORK_RETRIES: u32 = 5;

const SOURCE_LANGS: &[&str] = &[
    "AR", "BG", "CS", "DA", "DE", "EL", "EN", "ES", "ET", "FI", "FR", "HU", "ID", "IT", "JA", "KO",
    "LT", "LV", "NB", "NL", "PL", "PT", "RO", "RU", "SK", "SL", "SV", "TR", "UK", "ZH",
];
const TARGET_LANGS: &[&str] = &[
    "AR", "BG", "CS", "DA", "DE", "EL", "EN-GB", "EN-US", "ES", "ET", "FI", "FR", "HU", "ID", "IT",
    "JA", "KO", "LT", "LV", "NB", "NL", "PL", "PT-BR", "PT-PT", "RO", "RU", "SK", "SL", "SV", "TR",
    "UK", "ZH",
];

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    let source_lang = valid_value(params, "source_lang", "ZH", "Source language", SOURCE_LANGS)?;
    let target_lang = valid_value(
        params,
        "target_lang",
        "EN-GB",
        "Target language",
        TARGET_LANGS,
    )?;
    Ok(Box::new(DeepL {
        meta: ToolMeta {
            name: "deepl_translate",
            description: "DeepL translates text into a target language using the DeepL translation service.",
            parameters: vec![Param::string(
                "query",
                "The text to translate.",
                "{sys.query}",
            )],
        },
        source_lang,
        target_lang,
    }))
}

/// The DeepL tool.
pub struct DeepL {
    meta: ToolMeta,
    source_lang: String,
    target_lang: String,
}

/// The API host for a key, as the library picks it.
fn host_for(key: &str) -> &'static str {
    if key.ends_with(":fx") {
        FREE_HOST
    } else {
        PRO_HOST
    }
}

/// The library's exception text for an error status (`_raise_for_status`).
fn status_error(status: u16, body: &str) -> String {
    let mut message = String::new();
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(body) {
        if let Some(m) = o.get("message") {
            message.push_str(&format!(", message: {}", py_str(m)));
        }
        if let Some(d) = o.get("detail") {
            message.push_str(&format!(", detail: {}", py_str(d)));
        }
    }
    match status {
        403 => format!("Authorization failure, check auth_key{message}"),
        456 => format!("Quota for this billing period has been exceeded{message}"),
        404 => format!("Not found, check server_url{message}"),
        400 => format!("Bad request{message}"),
        429 => format!(
            "Too many requests, DeepL servers are currently experiencing high load{message}"
        ),
        503 => format!("Service unavailable{message}"),
        _ => format!("Unexpected status code: {status}, content: {body}."),
    }
}

/// The translated text of a `/v2/translate` answer.
fn parse_translation(body: &str) -> Result<String, String> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| format!("Invalid response from DeepL: {e}"))?;
    v.get("translations")
        .and_then(|t| t.get(0))
        .and_then(|t| t.get("text"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| "Invalid response from DeepL: no translations".to_string())
}

impl DeepL {
    /// One translation, with the library's retries of 429 and 5xx answers.
    async fn translate(&self, call: &Call<'_>, key: &str, text: &str) -> Result<String, String> {
        let env = call.env();
        let url = format!("{}/v2/translate", env.base_url(BASE_VAR, host_for(key)));
        let client = http_client(call, &url, TIMEOUT).await?;
        let body = json!({"text": [text], "source_lang": self.source_lang, "target_lang": self.target_lang});
        let mut backoff = 1.0_f64;
        let mut attempt = 0;
        loop {
            let res = client
                .post(&url)
                .header("Authorization", format!("DeepL-Auth-Key {key}"))
                .json(&body)
                .send()
                .await;
            let retry = match res {
                Ok(r) => {
                    let status = r.status().as_u16();
                    let text = r.text().await.map_err(|e| describe(&e))?;
                    if (200..300).contains(&status) {
                        return parse_translation(&text);
                    }
                    let retryable = status == 429 || status >= 500;
                    if !retryable || attempt >= NETWORK_RETRIES {
                        return Err(status_error(status, &text));
                    }
                    true
                }
                Err(e) if attempt >= NETWORK_RETRIES || !(e.is_timeout() || e.is_connect()) => {
                    return Err(describe(&e));
                }
                Err(_) => true,
            };
            if retry {
                attempt += 1;
                tokio::time::sleep(Duration::from_secs_f64(backoff)).await;
                // The library's back-off: ×1.6 per attempt, at most 120 s.
                backoff = (backoff * 1.6).min(120.0);
            }
        }
    }
}

#[async_trait]
impl Tool for DeepL {
    fn class(&self) -> &'static str {
        "DeepL"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[KEY_VAR, BASE_VAR]
    }

    fn thoughts(&self, args: &Object) -> String {
        let q = args
            .get("query")
            .map(py_str)
            .unwrap_or_else(|| "-_-!".into());
        format!("Translating into {}: {q}", self.target_lang)
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let text = args.get("query").map(py_str).unwrap_or_default();
        if text.is_empty() {
            call.set_output("formalized_content", json!(""));
            return Ok(Some(json!("")));
        }
        let param_key = call.param_str("auth_key", "").trim();
        let key = match param_key {
            "" | "xxx" => call.env().var(KEY_VAR).map(str::to_string),
            k => Some(k.to_string()),
        };
        let res = match key {
            Some(k) => self.translate(call, &k, &text).await,
            None => Err(format!(
                "no DeepL API key: set the `auth_key` parameter or {KEY_VAR}"
            )),
        };
        match res {
            Ok(t) => {
                call.set_output("formalized_content", json!(t));
                Ok(Some(json!(t)))
            }
            Err(e) => {
                let msg = format!("DeepL error: {e}");
                call.set_output("_ERROR", json!(msg));
                Ok(Some(json!(msg)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn check_rejects_unknown_languages() {
        assert!(build(&obj(json!({}))).is_ok());
        let err = build(&obj(json!({"target_lang": "EN"}))).err().unwrap();
        let msg = err.to_string();
        assert!(
            msg.starts_with("Target language EN is not supported, it should be in ['AR', 'BG',"),
            "{msg}"
        );
        let err = build(&obj(json!({"source_lang": "EN-GB"}))).err().unwrap();
        assert!(err.to_string().starts_with("Source language EN-GB is not"));
    }

    #[test]
    fn free_keys_go_to_the_free_host() {
        assert_eq!(host_for("abc:fx"), "https://api-free.deepl.com");
        assert_eq!(host_for("abc"), "https://api.deepl.com");
    }

    #[test]
    fn error_texts_follow_the_library() {
        assert_eq!(
            status_error(403, r#"{"message": "Wrong key"}"#),
            "Authorization failure, check auth_key, message: Wrong key"
        );
        assert_eq!(
            status_error(456, "{}"),
            "Quota for this billing period has been exceeded"
        );
        assert_eq!(
            status_error(500, "oops"),
            "Unexpected status code: 500, content: oops."
        );
        assert_eq!(
            parse_translation(
                r#"{"translations": [{"detected_source_language": "ZH", "text": "Hello"}]}"#
            )
            .unwrap(),
            "Hello"
        );
        assert!(parse_translation(r#"{"translations": []}"#).is_err());
    }

    #[test]
    fn thoughts_name_the_target_language() {
        let t = build(&obj(json!({"target_lang": "DE"}))).unwrap();
        let args = obj(json!({"query": "你好"}));
        assert_eq!(t.thoughts(&args), "Translating into DE: 你好");
        assert_eq!(t.thoughts(&Object::new()), "Translating into DE: -_-!");
    }
}
