//! Wikipedia (`agent/tools/wikipedia.py`, `wikipedia_search`): searches the MediaWiki
//! API of the chosen language edition and gives the intro of each page found, the way
//! the `wikipedia` Python library (1.4.0) does it: `search(query, results=top_n)`, then
//! `page(title)` for each title (with the library's auto-suggest: a one-result search
//! whose spelling suggestion, when any, replaces the title; redirects followed;
//! missing and disambiguation pages skipped), then each page's `summary` (the plain
//! text intro). Pages become chunks; `formalized_content` is what the model reads.
//!
//! The API base is `https://{lang}.wikipedia.org`; `CANVAS_WIKIPEDIA_BASE_URL`
//! overrides it (`{lang}` in it is replaced by the language). Differences: an answer
//! that is not JSON (an HTTP error page) fails with its status where the library
//! reports a JSON decode error.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::reference::Found;
use super::web::{self, SearchOutcome};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::Object;

/// The base URL override variable.
const BASE_VAR: &str = "CANVAS_WIKIPEDIA_BASE_URL";
/// `{lang}` is replaced by the `language` parameter.
const DEFAULT_BASE: &str = "https://{lang}.wikipedia.org";
/// RAGFlow's `COMPONENT_EXEC_TIMEOUT` default for this tool, per request here.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Redirects followed for one page at most (the library has no bound).
const MAX_REDIRECTS: usize = 5;

/// The language editions RAGFlow accepts.
const LANGUAGES: &[&str] = &[
    "af", "pl", "ar", "ast", "az", "bg", "nan", "bn", "be", "ca", "cs", "cy", "da", "de", "et",
    "el", "en", "es", "eo", "eu", "fa", "fr", "gl", "ko", "hy", "hi", "hr", "id", "it", "he", "ka",
    "lld", "la", "lv", "lt", "hu", "mk", "arz", "ms", "min", "my", "nl", "ja", "nb", "nn", "ce",
    "uz", "pt", "kk", "ro", "ru", "ceb", "sk", "sl", "sr", "sh", "fi", "sv", "ta", "tt", "th",
    "tg", "azb", "tr", "uk", "ur", "vi", "war", "zh", "yue",
];

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    web::check_positive_integer(params, "top_n", "Top N")?;
    web::check_valid_value(params, "language", "Wikipedia languages", LANGUAGES)?;
    Ok(Box::new(Wikipedia {
        meta: ToolMeta {
            name: "wikipedia_search",
            description: "A wide range of how-to and information pages are made available in wikipedia. Since 2001, it has grown rapidly to become the world's largest reference website. From Wikipedia, the free encyclopedia.",
            parameters: vec![Param::string(
                "query",
                "The search keyword to execute with wikipedia. The keyword MUST be a specific subject that can match the title.",
                "{sys.query}",
            )],
        },
    }))
}

/// The Wikipedia tool.
pub struct Wikipedia {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for Wikipedia {
    crate::tool_facts!("Wikipedia", outputs: ["formalized_content"], env: [BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        web::keywords_thoughts(args, 8)
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let lang = call.param_str("language", "en").to_string();
        let api = format!(
            "{}/w/api.php",
            call.env()
                .base_url(BASE_VAR, DEFAULT_BASE)
                .replace("{lang}", &lang)
        );
        let top_n = web::top_n(call, 10);
        web::run_search(call, args, "Wikipedia", None, |query| {
            let api = api.clone();
            async move {
                let wiki = Wiki {
                    client: web::client(call, TIMEOUT)?,
                    api,
                };
                wiki.search_pages(&query, top_n).await
            }
        })
        .await
    }
}

/// One language edition's API.
struct Wiki {
    client: reqwest::Client,
    api: String,
}

/// A page as `wikipedia.page()` loads it.
struct Page {
    pageid: String,
    title: String,
    url: String,
}

impl Wiki {
    /// `_wiki_request`: GET with `format=json&action=query`; the API's own error
    /// becomes the library's exception text.
    async fn request(&self, params: &[(&str, String)]) -> Result<Value, String> {
        let mut q: Vec<(&str, String)> = params.to_vec();
        q.push(("format", "json".into()));
        q.push(("action", "query".into()));
        let (status, body, _) = web::send(self.client.get(&self.api).query(&q)).await?;
        let Ok(v) = serde_json::from_str::<Value>(&body) else {
            return Err(format!(
                "HTTP {status} {}: the answer is not JSON",
                web::reason(status)
            ));
        };
        if let Some(err) = v.get("error") {
            let info = err.get("info").and_then(Value::as_str).unwrap_or_default();
            return Err(error_text(info, params));
        }
        if !(200..300).contains(&status) {
            return Err(format!("HTTP {status} {}", web::reason(status)));
        }
        Ok(v)
    }

    /// `wikipedia.search(query, results, suggestion)`: titles, and the suggestion.
    async fn search(
        &self,
        query: &str,
        results: usize,
        suggestion: bool,
    ) -> Result<(Vec<String>, Option<String>), String> {
        let mut params = vec![
            ("list", "search".to_string()),
            ("srprop", String::new()),
            ("srlimit", results.to_string()),
            ("limit", results.to_string()),
            ("srsearch", query.to_string()),
        ];
        if suggestion {
            params.push(("srinfo", "suggestion".into()));
        }
        let v = self.request(&params).await?;
        Ok(parse_search(&v))
    }

    /// `wikipedia.page(title)`; `None` where the library raises (missing page,
    /// disambiguation, nothing found): RAGFlow skips those.
    async fn page(&self, title: &str) -> Result<Option<Page>, String> {
        // auto_suggest: a one-result search with the spelling suggestion.
        let (found, suggestion) = self.search(title, 1, true).await?;
        let Some(mut title) = suggestion.or_else(|| found.into_iter().next()) else {
            return Ok(None);
        };
        for _ in 0..=MAX_REDIRECTS {
            let v = self
                .request(&[
                    ("prop", "info|pageprops".into()),
                    ("inprop", "url".into()),
                    ("ppprop", "disambiguation".into()),
                    ("redirects", String::new()),
                    ("titles", title.clone()),
                ])
                .await?;
            match parse_info(&v) {
                Info::Page(p) => return Ok(Some(p)),
                Info::Redirect(to) => title = to,
                Info::Skip => return Ok(None),
            }
        }
        Ok(None)
    }

    /// `page.summary`: the plain-text intro.
    async fn summary(&self, page: &Page) -> Result<String, String> {
        let v = self
            .request(&[
                ("prop", "extracts".into()),
                ("explaintext", String::new()),
                ("exintro", String::new()),
                ("titles", page.title.clone()),
            ])
            .await?;
        v.pointer(&format!("/query/pages/{}/extract", page.pageid))
            .and_then(Value::as_str)
            .map(str::to_string)
            // The library's KeyError.
            .ok_or_else(|| format!("'{}'", page.pageid))
    }

    /// RAGFlow's attempt: pages of the search (failures of `page()` skipped), then
    /// their summaries.
    async fn search_pages(&self, query: &str, top_n: usize) -> Result<SearchOutcome, String> {
        let (titles, _) = self.search(query, top_n, false).await?;
        let mut pages = Vec::new();
        for t in titles {
            if let Ok(Some(p)) = self.page(&t).await {
                pages.push(p);
            }
        }
        let mut found = Vec::new();
        for p in pages {
            let content = self.summary(&p).await?;
            found.push(Found {
                title: p.title,
                url: p.url,
                content,
                score: None,
            });
        }
        Ok(SearchOutcome { found, json: None })
    }
}

/// The library's exception text for an API error.
fn error_text(info: &str, params: &[(&str, String)]) -> String {
    if info == "HTTP request timed out." || info == "Pool queue is full" {
        let q = params
            .iter()
            .find(|(k, _)| *k == "srsearch" || *k == "titles")
            .map(|(_, v)| v.as_str())
            .unwrap_or_default();
        return format!(
            "Searching for \"{q}\" resulted in a timeout. Try again in a few seconds, and make sure you have rate limiting set to True."
        );
    }
    format!("An unknown error occured: \"{info}\". Please report it on GitHub!")
}

/// Titles of a search answer and its spelling suggestion.
fn parse_search(v: &Value) -> (Vec<String>, Option<String>) {
    let titles = v
        .pointer("/query/search")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|d| d.get("title").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let suggestion = v
        .pointer("/query/searchinfo/suggestion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    (titles, suggestion)
}

/// What a page-info answer says.
enum Info {
    Page(Page),
    Redirect(String),
    Skip,
}

/// The library's `__load`: the first page of the answer; missing and disambiguation
/// pages are errors there (skipped here), a redirect reloads with its target.
fn parse_info(v: &Value) -> Info {
    let Some(query) = v.get("query") else {
        return Info::Skip;
    };
    let Some((pageid, page)) = query
        .get("pages")
        .and_then(Value::as_object)
        .and_then(|p| p.iter().next())
    else {
        return Info::Skip;
    };
    if page.get("missing").is_some() {
        return Info::Skip;
    }
    if let Some(to) = query.pointer("/redirects/0/to").and_then(Value::as_str) {
        return Info::Redirect(to.to_string());
    }
    if page.pointer("/pageprops/disambiguation").is_some() {
        return Info::Skip;
    }
    let text = |k: &str| {
        page.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Info::Page(Page {
        pageid: pageid.clone(),
        title: text("title"),
        url: text("fullurl"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn check_refuses_what_ragflow_refuses() {
        let err = |p: Value| build(&obj(p)).err().map(|e| e.to_string());
        assert_eq!(
            err(json!({"language": "xx"})).unwrap(),
            format!(
                "Wikipedia languages xx is not supported, it should be in [{}]",
                LANGUAGES
                    .iter()
                    .map(|l| format!("'{l}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
        assert_eq!(
            err(json!({"top_n": -1})).unwrap(),
            "Top N -1 not supported, should be positive integer"
        );
        assert!(err(json!({"top_n": 3, "language": "zh"})).is_none());
        assert_eq!(LANGUAGES.len(), 70);
    }

    #[test]
    fn search_answers_give_titles_and_suggestions() {
        let v = json!({"batchcomplete": "", "query": {"searchinfo": {"totalhits": 2, "suggestion": "rust lang"},
            "search": [{"ns": 0, "title": "Rust", "pageid": 1}, {"ns": 0, "title": "Rust (programming language)"}]}});
        assert_eq!(
            parse_search(&v),
            (
                vec![
                    "Rust".to_string(),
                    "Rust (programming language)".to_string()
                ],
                Some("rust lang".to_string())
            )
        );
        assert_eq!(parse_search(&json!({})), (vec![], None));
    }

    #[test]
    fn page_info_follows_redirects_and_skips_missing_and_disambiguation() {
        let ok = json!({"query": {"pages": {"42": {"pageid": 42, "title": "Rust", "fullurl": "https://en.wikipedia.org/wiki/Rust"}}}});
        let Info::Page(p) = parse_info(&ok) else {
            panic!("a page")
        };
        assert_eq!(
            (p.pageid.as_str(), p.title.as_str(), p.url.as_str()),
            ("42", "Rust", "https://en.wikipedia.org/wiki/Rust")
        );
        let redirect = json!({"query": {"redirects": [{"from": "Rust lang", "to": "Rust (programming language)"}],
            "pages": {"7": {"pageid": 7, "title": "Rust (programming language)"}}}});
        assert!(
            matches!(parse_info(&redirect), Info::Redirect(t) if t == "Rust (programming language)")
        );
        let missing = json!({"query": {"pages": {"-1": {"title": "Nope", "missing": ""}}}});
        assert!(matches!(parse_info(&missing), Info::Skip));
        let dab = json!({"query": {"pages": {"3": {"title": "Mercury", "pageprops": {"disambiguation": ""}}}}});
        assert!(matches!(parse_info(&dab), Info::Skip));
    }

    #[test]
    fn api_errors_read_as_the_library_reports_them() {
        assert_eq!(
            error_text("Invalid search", &[]),
            "An unknown error occured: \"Invalid search\". Please report it on GitHub!"
        );
        assert!(
            error_text("Pool queue is full", &[("srsearch", "x".into())])
                .starts_with("Searching for \"x\" resulted in a timeout.")
        );
    }
}
