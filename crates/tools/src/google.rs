//! Google (`google_search`, `agent/tools/google.py`, `llm-and-tools.md` §7.2): Google
//! results through SerpApi (`GET /search?engine=google`, as the `serpapi` client asks).
//! Organic results become reference chunks.
//!
//! As RAGFlow, the model's `start` and `num` are accepted but not sent, and the
//! progress text never shows the query (it reads an input named `query`, the
//! parameter is `q`). Ours: the key may come from `SERPAPI_API_KEY` (so its absence is
//! a run error, not a load error), and a SerpApi `error` answer is the error text
//! (RAGFlow shows `'organic_results'`).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::reference::{Found, retrieve_chunks};
use super::web::{
    api_key, check_valid_value, failed, http_client, input_text, send_answer, text_field, text_of,
};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::template::plain_text;
use canvas_engine::{BuildError, CResult, ComponentError};
use canvas_pyrt::{Object, py_str, truthy};

const BASE_VAR: &str = "CANVAS_GOOGLE_BASE_URL";
const BASE_DEFAULT: &str = "https://serpapi.com";
/// The `serpapi` client waits 60 000 s; one minute is plenty.
const TIMEOUT: Duration = Duration::from_secs(60);

/// `gl` values RAGFlow accepts.
const COUNTRIES: &[&str] = &[
    "af", "al", "dz", "as", "ad", "ao", "ai", "aq", "ag", "ar", "am", "aw", "au", "at", "az", "bs",
    "bh", "bd", "bb", "by", "be", "bz", "bj", "bm", "bt", "bo", "ba", "bw", "bv", "br", "io", "bn",
    "bg", "bf", "bi", "kh", "cm", "ca", "cv", "ky", "cf", "td", "cl", "cn", "cx", "cc", "co", "km",
    "cg", "cd", "ck", "cr", "ci", "hr", "cu", "cy", "cz", "dk", "dj", "dm", "do", "ec", "eg", "sv",
    "gq", "er", "ee", "et", "fk", "fo", "fj", "fi", "fr", "gf", "pf", "tf", "ga", "gm", "ge", "de",
    "gh", "gi", "gr", "gl", "gd", "gp", "gu", "gt", "gn", "gw", "gy", "ht", "hm", "va", "hn", "hk",
    "hu", "is", "in", "id", "ir", "iq", "ie", "il", "it", "jm", "jp", "jo", "kz", "ke", "ki", "kp",
    "kr", "kw", "kg", "la", "lv", "lb", "ls", "lr", "ly", "li", "lt", "lu", "mo", "mk", "mg", "mw",
    "my", "mv", "ml", "mt", "mh", "mq", "mr", "mu", "yt", "mx", "fm", "md", "mc", "mn", "ms", "ma",
    "mz", "mm", "na", "nr", "np", "nl", "an", "nc", "nz", "ni", "ne", "ng", "nu", "nf", "mp", "no",
    "om", "pk", "pw", "ps", "pa", "pg", "py", "pe", "ph", "pn", "pl", "pt", "pr", "qa", "re", "ro",
    "ru", "rw", "sh", "kn", "lc", "pm", "vc", "ws", "sm", "st", "sa", "sn", "rs", "sc", "sl", "sg",
    "sk", "si", "sb", "so", "za", "gs", "es", "lk", "sd", "sr", "sj", "sz", "se", "ch", "sy", "tw",
    "tj", "tz", "th", "tl", "tg", "tk", "to", "tt", "tn", "tr", "tm", "tc", "tv", "ug", "ua", "ae",
    "uk", "gb", "us", "um", "uy", "uz", "vu", "ve", "vn", "vg", "vi", "wf", "eh", "ye", "zm", "zw",
];

/// `hl` values RAGFlow accepts.
const LANGUAGES: &[&str] = &[
    "af",
    "ak",
    "sq",
    "ws",
    "am",
    "ar",
    "hy",
    "az",
    "eu",
    "be",
    "bem",
    "bn",
    "bh",
    "xx-bork",
    "bs",
    "br",
    "bg",
    "bt",
    "km",
    "ca",
    "chr",
    "ny",
    "zh-cn",
    "zh-tw",
    "co",
    "hr",
    "cs",
    "da",
    "nl",
    "xx-elmer",
    "en",
    "eo",
    "et",
    "ee",
    "fo",
    "tl",
    "fi",
    "fr",
    "fy",
    "gaa",
    "gl",
    "ka",
    "de",
    "el",
    "kl",
    "gn",
    "gu",
    "xx-hacker",
    "ht",
    "ha",
    "haw",
    "iw",
    "hi",
    "hu",
    "is",
    "ig",
    "id",
    "ia",
    "ga",
    "it",
    "ja",
    "jw",
    "kn",
    "kk",
    "rw",
    "rn",
    "xx-klingon",
    "kg",
    "ko",
    "kri",
    "ku",
    "ckb",
    "ky",
    "lo",
    "la",
    "lv",
    "ln",
    "lt",
    "loz",
    "lg",
    "ach",
    "mk",
    "mg",
    "ms",
    "ml",
    "mt",
    "mv",
    "mi",
    "mr",
    "mfe",
    "mo",
    "mn",
    "sr-me",
    "my",
    "ne",
    "pcm",
    "nso",
    "no",
    "nn",
    "oc",
    "or",
    "om",
    "ps",
    "fa",
    "xx-pirate",
    "pl",
    "pt",
    "pt-br",
    "pt-pt",
    "pa",
    "qu",
    "ro",
    "rm",
    "nyn",
    "ru",
    "gd",
    "sr",
    "sh",
    "st",
    "tn",
    "crs",
    "sn",
    "sd",
    "si",
    "sk",
    "sl",
    "so",
    "es",
    "es-419",
    "su",
    "sw",
    "sv",
    "tg",
    "ta",
    "tt",
    "te",
    "th",
    "ti",
    "to",
    "lua",
    "tum",
    "tr",
    "tk",
    "tw",
    "ug",
    "uk",
    "ur",
    "uz",
    "vu",
    "vi",
    "cy",
    "wo",
    "xh",
    "yi",
    "yo",
    "zu",
];

/// Build Google from its DSL parameters (RAGFlow's `check()`, the key excepted).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    check_valid_value(params, "country", "Google Country", COUNTRIES)?;
    check_valid_value(params, "language", "Google languages", LANGUAGES)?;
    let text = |k: &str, d: &str| {
        params
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or(d)
            .to_string()
    };
    Ok(Box::new(Google {
        meta: meta(),
        country: text("country", "cn"),
        language: text("language", "en"),
    }))
}

fn meta() -> ToolMeta {
    let int = |name, description, default| Param {
        kind: "integer",
        required: false,
        ..Param::string(name, description, default)
    };
    ToolMeta {
        name: "google_search",
        description: "Search the world's information, including webpages, images, videos and more. Google has many special features to help you find exactly what you're looking ...",
        parameters: vec![
            Param::string(
                "q",
                "The search keywords to execute with Google. The keywords should be the most important words/terms(includes synonyms) from the original request.",
                "{sys.query}",
            ),
            int(
                "start",
                "Parameter defines the result offset. It skips the given number of results. It's used for pagination. (e.g., 0 (default) is the first page of results, 10 is the 2nd page of results, 20 is the 3rd page of results, etc.). Google Local Results only accepts multiples of 20(e.g. 20 for the second page results, 40 for the third page results, etc.) as the `start` value.",
                "0",
            ),
            int(
                "num",
                "Parameter defines the maximum number of results to return. (e.g., 10 (default) returns 10 results, 40 returns 40 results, and 100 returns 100 results). The use of num may introduce latency, and/or prevent the inclusion of specialized result types. It is better to omit this parameter unless it is strictly necessary to increase the number of results per page. Results are not guaranteed to have the number of results specified in num.",
                "6",
            ),
        ],
    }
}

/// The Google tool.
pub struct Google {
    meta: ToolMeta,
    country: String,
    language: String,
}

#[async_trait]
impl Tool for Google {
    crate::tool_facts!("Google", outputs: ["formalized_content", "json"], env: ["SERPAPI_API_KEY", BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        // RAGFlow reads `query`, which this tool does not have: always `-_-!`.
        format!(
            "\nKeywords: {} \nLooking for the most relevant articles.\n        ",
            input_text(args, "query")
        )
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let Some(q) = args.get("q").filter(|v| truthy(v)) else {
            call.set_output("formalized_content", json!(""));
            return Ok(Some(json!("")));
        };
        let Some(key) = api_key(call, "api_key", "SERPAPI_API_KEY") else {
            return Err(ComponentError::Failed(
                "SerpApi API key does not support empty value. (Set the Google tool's api_key parameter or SERPAPI_API_KEY.)".into(),
            ));
        };
        let url = format!("{}/search", call.env().base_url(BASE_VAR, BASE_DEFAULT));
        let client = match http_client(call, &url, TIMEOUT).await {
            Ok(c) => c,
            Err(e) => return failed(call, "Google", e),
        };
        let q = plain_text(q);
        let query = [
            ("api_key", key.as_str()),
            ("engine", "google"),
            ("q", q.as_str()),
            ("google_domain", "google.com"),
            ("gl", self.country.as_str()),
            ("hl", self.language.as_str()),
            ("source", "python"),
            ("output", "json"),
        ];
        // A result without a snippet fails the attempt, as RAGFlow's `KeyError` does.
        let res = super::with_retries(call, || async {
            let answer = send_answer(client.get(&url).query(&query)).await?;
            let results = organic_results(&answer.json()?)?;
            let found = results.iter().map(found).collect::<Result<Vec<_>, _>>()?;
            Ok((results, found))
        })
        .await;
        let results = match res {
            Ok(r) => r,
            Err(e) => return failed(call, "Google", e),
        };
        let (chunks, aggs, text) = retrieve_chunks(&results.1);
        call.add_reference(&chunks, &aggs);
        call.set_output("formalized_content", json!(text));
        call.set_output("json", Value::Array(results.0));
        Ok(Some(json!(text)))
    }
}

/// `organic_results` of a SerpApi answer; without them SerpApi's `error`, else the
/// `KeyError` text RAGFlow shows.
fn organic_results(res: &Value) -> Result<Vec<Value>, String> {
    match res.get("organic_results") {
        Some(Value::Array(a)) => Ok(a.clone()),
        Some(_) => Err("'organic_results' is not a list".into()),
        None => Err(res
            .get("error")
            .map(py_str)
            .unwrap_or_else(|| "'organic_results'".into())),
    }
}

/// An organic result as a reference: `about_this_result.source.description`, else the
/// snippet (which RAGFlow requires: a result without one fails the search).
fn found(r: &Value) -> Result<Found, String> {
    let Some(snippet) = r.get("snippet") else {
        return Err("'snippet'".into());
    };
    let about = r
        .get("about_this_result")
        .and_then(|a| a.get("source"))
        .and_then(|s| s.get("description"));
    Ok(Found {
        title: text_field(r, "title"),
        url: text_field(r, "link"),
        content: text_of(about.unwrap_or(snippet)),
        score: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_read_snippets_or_source_descriptions() {
        let f = found(&json!({"title": "T", "link": "https://a", "snippet": "s"})).unwrap();
        assert_eq!(
            (f.title.as_str(), f.url.as_str(), f.content.as_str()),
            ("T", "https://a", "s")
        );
        let f = found(&json!({"title": "T", "link": "l", "snippet": "s",
            "about_this_result": {"source": {"description": "about"}}}))
        .unwrap();
        assert_eq!(f.content, "about");
        assert_eq!(found(&json!({"title": "T"})).unwrap_err(), "'snippet'");
    }

    #[test]
    fn serpapi_errors_are_the_error_text() {
        assert_eq!(
            organic_results(&json!({"error": "Invalid API key."})).unwrap_err(),
            "Invalid API key."
        );
        assert_eq!(
            organic_results(&json!({})).unwrap_err(),
            "'organic_results'"
        );
    }

    #[test]
    fn check_country_and_language() {
        let p = |v: Value| -> Object { serde_json::from_value(v).unwrap() };
        assert!(build(&p(json!({"country": "us", "language": "zh-cn"}))).is_ok());
        match build(&p(json!({"country": "xx"}))) {
            Err(e) => assert!(
                e.to_string().starts_with(
                    "Google Country xx is not supported, it should be in ['af', 'al',"
                ),
                "{e}"
            ),
            Ok(_) => panic!("accepted"),
        }
        let g = build(&Object::new()).unwrap();
        assert_eq!(
            g.thoughts(&p(json!({"q": "rust"}))),
            "\nKeywords: -_-! \nLooking for the most relevant articles.\n        "
        );
    }
}
