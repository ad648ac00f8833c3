//! QWeather (`agent/tools/qweather.py`, function `qweather`): look the location up
//! (`GET <geo>/v2/city/lookup`), then ask the v7 API for the current weather or a
//! forecast (`weather/<period>`), life indices (`indices/1d?type=0`) or air quality
//! (`air/now`), the key in the query string. Free subscriptions use `devapi.`, paid
//! ones `api.`. An answer whose `code` is not `"200"` is reported as RAGFlow's
//! `**Error** <explanation>` result (not retried); a failed request or an unexpected
//! answer is retried and ends as `QWeather error: <Python-like text>`.
//!
//! Differences from RAGFlow: the key may also come from `QWEATHER_API_KEY` (the
//! placeholder `xxx` counts as unset); query values are URL-encoded (RAGFlow pastes
//! them into the URL); `CANVAS_QWEATHER_GEO_BASE_URL` and `CANVAS_QWEATHER_BASE_URL`
//! override the hosts (QWeather now gives accounts their own API host).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::net::{ClientOptions, describe};
use super::web::{failed, valid_value};
use super::{Call, Param, Tool, ToolMeta, with_retries};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_str, truthy};

const GEO_VAR: &str = "CANVAS_QWEATHER_GEO_BASE_URL";
const BASE_VAR: &str = "CANVAS_QWEATHER_BASE_URL";
const KEY_VAR: &str = "QWEATHER_API_KEY";
const GEO_HOST: &str = "https://geoapi.qweather.com";
const FREE_HOST: &str = "https://devapi.qweather.com";
const PAID_HOST: &str = "https://api.qweather.com";
/// RAGFlow's `DEFAULT_TIMEOUT` for one request.
const TIMEOUT: Duration = Duration::from_secs(15);

const LANGS: &[&str] = &[
    "zh", "zh-hant", "en", "de", "es", "fr", "it", "ja", "ko", "ru", "hi", "th", "ar", "pt", "bn",
    "ms", "nl", "el", "la", "sv", "id", "pl", "tr", "cs", "et", "vi", "fil", "fi", "he", "is",
    "nb",
];

/// RAGFlow's `error_code` table.
fn error_text(code: &str) -> String {
    let known = match code {
        "204" => {
            "The request was successful, but the region you are querying does not have the data you need at this time."
        }
        "400" => {
            "Request error, may contain incorrect request parameters or missing mandatory request parameters."
        }
        "401" => {
            "Authentication fails, possibly using the wrong KEY, wrong digital signature, wrong type of KEY (e.g. using the SDK's KEY to access the Web API)."
        }
        "402" => {
            "Exceeded the number of accesses or the balance is not enough to support continued access to the service, you can recharge, upgrade the accesses or wait for the accesses to be reset."
        }
        "403" => {
            "No access, may be the binding PackageName, BundleID, domain IP address is inconsistent, or the data that requires additional payment."
        }
        "404" => "The queried data or region does not exist.",
        "429" => {
            "Exceeded the limited QPM (number of accesses per minute), please refer to the QPM description"
        }
        "500" => "No response or timeout, interface service abnormality please contact us",
        other => return format!("**Error** QWeather API returned code {other}."),
    };
    format!("**Error** {known}")
}

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    if !params.get("web_apikey").map(truthy).unwrap_or(true) {
        return Err(BuildError::Params(
            "QWeather API key does not support empty value.".into(),
        ));
    }
    let kind = valid_value(
        params,
        "type",
        "weather",
        "Type",
        &["weather", "indices", "airquality"],
    )?;
    let user_type = valid_value(
        params,
        "user_type",
        "free",
        "Free subscription or paid subscription",
        &["free", "paid"],
    )?;
    let lang = valid_value(params, "lang", "zh", "Use language", LANGS)?;
    let time_period = valid_value(
        params,
        "time_period",
        "now",
        "Time period",
        &["now", "3d", "7d", "10d", "15d", "30d"],
    )?;
    Ok(Box::new(QWeather {
        meta: ToolMeta {
            name: "qweather",
            description: "QWeather (和风天气) looks up the current weather, a multi-day forecast, life indices, or air quality for a location using the QWeather API.",
            parameters: vec![Param::string(
                "query",
                "The location to look up weather for, e.g. a city name like 'Beijing' or '北京'.",
                "{sys.query}",
            )],
        },
        kind,
        paid: user_type == "paid",
        lang,
        time_period,
    }))
}

/// The QWeather tool.
pub struct QWeather {
    meta: ToolMeta,
    /// `weather`, `indices` or `airquality`.
    kind: String,
    paid: bool,
    lang: String,
    time_period: String,
}

/// `d[key]`, failing with Python's `KeyError` text.
fn field<'v>(v: &'v Value, key: &str) -> Result<&'v Value, String> {
    v.get(key).ok_or_else(|| format!("'{key}'"))
}

/// `l[i]`, failing with Python's `IndexError` text.
fn item(v: &Value, i: usize) -> Result<&Value, String> {
    match v {
        Value::Array(a) => a
            .get(i)
            .ok_or_else(|| "list index out of range".to_string()),
        other => Err(format!(
            "'{}' object is not subscriptable",
            canvas_pyrt::py_type_name(other)
        )),
    }
}

/// The API's `code`, as a string (`"200"`).
fn code_of(v: &Value) -> Result<String, String> {
    Ok(py_str(field(v, "code")?))
}

/// The tool's text for a successful v7 answer.
fn format_answer(kind: &str, time_period: &str, v: &Value) -> Result<String, String> {
    match kind {
        "weather" if time_period == "now" => Ok(py_str(field(v, "now")?)),
        "weather" => match field(v, "daily")? {
            Value::Array(days) => Ok(days.iter().map(py_str).collect::<Vec<_>>().join("\n")),
            other => Err(format!(
                "'{}' object is not iterable",
                canvas_pyrt::py_type_name(other)
            )),
        },
        "indices" => {
            let daily = field(v, "daily")?;
            let date = py_str(field(item(daily, 0)?, "date")?);
            let mut lines = Vec::new();
            if let Value::Array(a) = daily {
                for i in a {
                    lines.push(format!(
                        "{}: {}, {}",
                        py_str(field(i, "name")?),
                        py_str(field(i, "category")?),
                        py_str(field(i, "text")?)
                    ));
                }
            }
            Ok(format!("{date}\n{}", lines.join("\n")))
        }
        _ => Ok(py_str(field(v, "now")?)),
    }
}

/// GET a JSON answer (any HTTP status: QWeather's own `code` says what happened).
async fn get_json(
    client: &reqwest::Client,
    call: &Call<'_>,
    url: &str,
    query: &[(&str, &str)],
) -> Result<Value, String> {
    call.env()
        .net
        .check_url(url)
        .await
        .map_err(|e| e.to_string())?;
    let res = client
        .get(url)
        .query(query)
        .send()
        .await
        .map_err(|e| describe(&e))?;
    let text = res.text().await.map_err(|e| describe(&e))?;
    // requests' `.json()` failure text for a body that is not JSON.
    serde_json::from_str(&text).map_err(|_| "Expecting value: line 1 column 1 (char 0)".into())
}

impl QWeather {
    /// One attempt: `Ok` is the tool's text (answers with an error `code` included).
    async fn attempt(&self, call: &Call<'_>, key: &str, location: &str) -> Result<String, String> {
        let env = call.env();
        let client = env
            .net
            .client(&ClientOptions {
                timeout: Some(TIMEOUT),
                ..Default::default()
            })
            .map_err(|e| e.to_string())?;
        let geo = format!("{}/v2/city/lookup", env.base_url(GEO_VAR, GEO_HOST));
        let lookup = get_json(&client, call, &geo, &[("location", location), ("key", key)]).await?;
        let code = code_of(&lookup)?;
        if code != "200" {
            return Ok(error_text(&code));
        }
        let id = py_str(field(item(field(&lookup, "location")?, 0)?, "id")?);
        let host = env.base_url(BASE_VAR, if self.paid { PAID_HOST } else { FREE_HOST });
        let (path, mut query) = match self.kind.as_str() {
            "weather" => (format!("weather/{}", self.time_period), vec![]),
            "indices" => ("indices/1d".to_string(), vec![("type", "0")]),
            _ => ("air/now".to_string(), vec![]),
        };
        query.extend([
            ("location", id.as_str()),
            ("key", key),
            ("lang", &self.lang),
        ]);
        let url = format!("{host}/v7/{path}");
        let answer = get_json(&client, call, &url, &query).await?;
        let code = code_of(&answer)?;
        if code != "200" {
            return Ok(error_text(&code));
        }
        format_answer(&self.kind, &self.time_period, &answer)
    }
}

#[async_trait]
impl Tool for QWeather {
    fn class(&self) -> &'static str {
        "QWeather"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[KEY_VAR, GEO_VAR, BASE_VAR]
    }

    fn thoughts(&self, args: &Object) -> String {
        let q = args
            .get("query")
            .map(py_str)
            .unwrap_or_else(|| "-_-!".into());
        format!("Looking up the weather for: {q}")
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let location = args.get("query").map(py_str).unwrap_or_default();
        if location.is_empty() {
            call.set_output("formalized_content", json!(""));
            return Ok(Some(json!("")));
        }
        let key = match call.param("web_apikey").map(py_str).as_deref() {
            None | Some("") | Some("xxx") => call.env().var(KEY_VAR).map(str::to_string),
            Some(k) => Some(k.to_string()),
        };
        let res = match key {
            Some(k) => with_retries(call, || self.attempt(call, &k, &location)).await,
            None => Err(format!(
                "no QWeather API key: set the `web_apikey` parameter or {KEY_VAR}"
            )),
        };
        match res {
            Ok(text) => {
                call.set_output("formalized_content", json!(text));
                Ok(Some(json!(text)))
            }
            Err(e) => failed(call, "QWeather", e),
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
    fn check_mirrors_ragflow() {
        assert!(build(&obj(json!({}))).is_ok());
        assert_eq!(
            build(&obj(json!({"web_apikey": ""})))
                .err()
                .unwrap()
                .to_string(),
            "QWeather API key does not support empty value."
        );
        assert_eq!(
            build(&obj(json!({"type": "rain"})))
                .err()
                .unwrap()
                .to_string(),
            "Type rain is not supported, it should be in ['weather', 'indices', 'airquality']"
        );
        assert_eq!(
            build(&obj(json!({"time_period": "5d"})))
                .err()
                .unwrap()
                .to_string(),
            "Time period 5d is not supported, it should be in ['now', '3d', '7d', '10d', '15d', '30d']"
        );
    }

    #[test]
    fn answers_are_formatted_as_python_prints_them() {
        let now = json!({"code": "200", "now": {"temp": "24", "text": "晴", "windScale": 3}});
        assert_eq!(
            format_answer("weather", "now", &now).unwrap(),
            "{'temp': '24', 'text': '晴', 'windScale': 3}"
        );
        let daily = json!({"code": "200", "daily": [{"fxDate": "2024-06-01", "tempMax": "30"}, {"fxDate": "2024-06-02", "tempMax": "28"}]});
        assert_eq!(
            format_answer("weather", "3d", &daily).unwrap(),
            "{'fxDate': '2024-06-01', 'tempMax': '30'}\n{'fxDate': '2024-06-02', 'tempMax': '28'}"
        );
        let indices = json!({"code": "200", "daily": [
            {"date": "2024-06-01", "name": "运动指数", "category": "适宜", "text": "天气较好"},
            {"date": "2024-06-01", "name": "洗车指数", "category": "较适宜", "text": "无雨"}]});
        assert_eq!(
            format_answer("indices", "now", &indices).unwrap(),
            "2024-06-01\n运动指数: 适宜, 天气较好\n洗车指数: 较适宜, 无雨"
        );
        assert_eq!(
            format_answer("indices", "now", &json!({"daily": []})).unwrap_err(),
            "list index out of range"
        );
        assert_eq!(
            format_answer("airquality", "now", &json!({"code": "200"})).unwrap_err(),
            "'now'"
        );
    }

    #[test]
    fn error_codes_have_ragflow_texts() {
        assert_eq!(
            error_text("404"),
            "**Error** The queried data or region does not exist."
        );
        assert_eq!(
            error_text("999"),
            "**Error** QWeather API returned code 999."
        );
    }
}
