//! DuckDuckGo (`agent/tools/duckduckgo.py`, `duckduckgo_search`): keyless web search
//! as the `duckduckgo_search` library (7.x) does it with its `html` backend: a form
//! POST to `https://html.duckduckgo.com/html` (more pages, and a `vqd` token from
//! `https://duckduckgo.com`, when `top_n` is above 20), results read from the page's
//! `div`s that have an `h2`. News (`duckduckgo.com/news.js`) is used only when the
//! arguments carry `topic` other than `general`: RAGFlow checks `topic`, not the
//! `channel` argument it declares, so its news mode never triggers from `channel`
//! (mirrored). Results become chunks and the `json` output (`title`, `href`, `body`).
//!
//! `CANVAS_DUCKDUCKGO_BASE_URL` replaces both hosts (`{base}/html`, `{base}/`,
//! `{base}/news.js`). Differences: the library picks the `html` or `lite` backend at
//! random and falls back to the other; we use `html` only; pages are fetched one after
//! the other, without the library's browser impersonation.

use std::time::Duration;

use async_trait::async_trait;
use scraper::{ElementRef, Html, Node};
use serde_json::{Value, json};

use super::reference::Found;
use super::web::{self, SearchOutcome};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::Object;

const BASE_VAR: &str = "CANVAS_DUCKDUCKGO_BASE_URL";
const HTML_URL: &str = "https://html.duckduckgo.com/html";
const SITE_URL: &str = "https://duckduckgo.com";
/// RAGFlow's `COMPONENT_EXEC_TIMEOUT` default for this tool, per request here.
const TIMEOUT: Duration = Duration::from_secs(12);
/// The library's region default.
const REGION: &str = "wt-wt";

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    web::check_positive_integer(params, "top_n", "Top N")?;
    web::check_valid_value(params, "channel", "Web Search or News", &["text", "news"])?;
    Ok(Box::new(DuckDuckGo {
        meta: ToolMeta {
            name: "duckduckgo_search",
            description: "DuckDuckGo is a search engine focused on privacy. It offers search capabilities for web pages, images, and provides translation services. DuckDuckGo also features a private AI chat interface, providing users with an AI assistant that prioritizes data protection.",
            parameters: vec![
                Param::string(
                    "query",
                    "The search keywords to execute with DuckDuckGo. The keywords should be the most important words/terms(includes synonyms) from the original request.",
                    "{sys.query}",
                ),
                Param {
                    choices: &["general", "news"],
                    required: false,
                    ..Param::string(
                        "channel",
                        "default:general. The category of the search. `news` is useful for retrieving real-time updates, particularly about politics, sports, and major current events covered by mainstream media sources. `general` is for broader, more general-purpose searches that may include a wide range of sources.",
                        "general",
                    )
                },
            ],
        },
    }))
}

/// The DuckDuckGo tool.
pub struct DuckDuckGo {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for DuckDuckGo {
    crate::tool_facts!("DuckDuckGo", outputs: ["formalized_content", "json"], env: [BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        web::keywords_thoughts(args, 16)
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let (html_url, site_url) = match call.env().var(BASE_VAR) {
            Some(b) => {
                let b = b.trim_end_matches('/');
                (format!("{b}/html"), b.to_string())
            }
            None => (HTML_URL.to_string(), SITE_URL.to_string()),
        };
        // RAGFlow's check reads `topic` (never declared), not `channel`.
        let news = args
            .get("topic")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "general");
        let top_n = web::top_n(call, 10);
        web::run_search(call, args, "DuckDuckGo", None, |query| {
            let ddg = Ddg {
                client: web::client(call, TIMEOUT),
                html_url: html_url.clone(),
                site_url: site_url.clone(),
            };
            async move {
                let rows = if news {
                    ddg.news(&query, top_n).await?
                } else {
                    ddg.text(&query, top_n).await?
                };
                let found = rows
                    .iter()
                    .map(|r| {
                        let s =
                            |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                        Found {
                            title: s("title"),
                            url: r.get("href").map_or_else(|| s("url"), |_| s("href")),
                            content: s("body"),
                            score: None,
                        }
                    })
                    .collect();
                Ok(SearchOutcome {
                    found,
                    json: Some(Value::Array(rows)),
                })
            }
        })
        .await
    }
}

/// The library's client, for one attempt.
struct Ddg {
    client: Result<reqwest::Client, String>,
    html_url: String,
    site_url: String,
}

impl Ddg {
    /// `_get_url`: the body of a 200 answer; rate-limit statuses and others as the
    /// library words them.
    async fn get(&self, req: reqwest::RequestBuilder, url: &str) -> Result<String, String> {
        match web::send(req).await {
            Ok((200, body, _)) => Ok(body),
            Ok((s @ (202 | 301 | 403 | 400 | 429 | 418), _, _)) => {
                Err(format!("{url} {s} Ratelimit"))
            }
            Ok((s, _, _)) => Err(format!("{url} return None. status={s}")),
            Err(e) => Err(format!("{url} {e}")),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, String> {
        self.client.as_ref().map_err(Clone::clone)
    }

    /// `_get_vqd`: the search token of the site's page for the keywords.
    async fn vqd(&self, query: &str) -> Result<String, String> {
        let url = format!("{}/", self.site_url);
        let req = self.client()?.get(&url).query(&[("q", query)]);
        let body = self.get(req, &url).await?;
        extract_vqd(&body)
            .ok_or_else(|| format!("_extract_vqd() keywords='{query}' Could not extract vqd."))
    }

    /// `_text_html`.
    async fn text(&self, query: &str, top_n: usize) -> Result<Vec<Value>, String> {
        let vqd = if top_n > 20 {
            self.vqd(query).await?
        } else {
            String::new()
        };
        let max = top_n.min(2023);
        let mut starts = vec![0];
        starts.extend((23..max).step_by(50));
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for s in starts {
            let form = [
                ("q", query.to_string()),
                ("s", s.to_string()),
                ("o", "json".into()),
                ("api", "d.js".into()),
                ("vqd", vqd.clone()),
                ("kl", REGION.into()),
                ("bing_market", REGION.into()),
            ];
            let req = self.client()?.post(&self.html_url).form(&form);
            let body = self.get(req, &self.html_url).await?;
            for r in parse_html(&body) {
                if seen.insert(r.1.clone()) {
                    out.push(json!({"title": r.0, "href": r.2, "body": r.3}));
                }
            }
        }
        out.truncate(top_n);
        Ok(out)
    }

    /// `news`: the site's news API with a `vqd` token.
    async fn news(&self, query: &str, top_n: usize) -> Result<Vec<Value>, String> {
        let vqd = self.vqd(query).await?;
        let url = format!("{}/news.js", self.site_url);
        let max = top_n.min(120);
        let mut starts = vec![0];
        starts.extend((30..max).step_by(30));
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for s in starts {
            let params = [
                ("l", REGION.to_string()),
                ("o", "json".into()),
                ("noamp", "1".into()),
                ("q", query.to_string()),
                ("vqd", vqd.clone()),
                ("p", "-1".into()),
                ("s", s.to_string()),
            ];
            let req = self.client()?.get(&url).query(&params);
            let body = self.get(req, &url).await?;
            let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
            for row in v
                .get("results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(r) = news_row(row) {
                    if seen.insert(r["url"].as_str().unwrap_or("").to_string()) {
                        out.push(r);
                    }
                }
            }
        }
        out.truncate(top_n);
        Ok(out)
    }
}

/// `_extract_vqd`.
fn extract_vqd(body: &str) -> Option<String> {
    for (open, close) in [("vqd=\"", '"'), ("vqd=", '&'), ("vqd='", '\'')] {
        if let Some(start) = body.find(open).map(|n| n + open.len()) {
            if let Some(end) = body[start..].find(close) {
                return Some(body[start..start + end].to_string());
            }
        }
    }
    None
}

/// `_normalize`: tags removed, entities decoded.
fn normalize(raw: &str) -> String {
    static TAGS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new("<.*?>").expect("valid regex"));
    web::html_unescape(&TAGS.replace_all(raw, ""))
}

/// `_normalize_url`.
fn normalize_url(url: &str) -> String {
    web::percent_decode(&url.replace(' ', "+"))
}

/// A news row as the library gives it; `None` for rows it would fail on.
fn news_row(row: &Value) -> Option<Value> {
    let date = row.get("date").and_then(Value::as_i64)?;
    let date = chrono::DateTime::from_timestamp(date, 0)?.to_rfc3339();
    let s = |k: &str| row.get(k).and_then(Value::as_str).unwrap_or("");
    Some(json!({
        "date": date,
        "title": s("title"),
        "body": normalize(s("excerpt")),
        "url": normalize_url(s("url")),
        "image": normalize_url(s("image")),
        "source": s("source"),
    }))
}

/// Results of an HTML page: (title, raw href, href, body) per `div` with an `h2`
/// child, as the library's XPath reads them; ads and Google fallbacks left out.
fn parse_html(body: &str) -> Vec<(String, String, String, String)> {
    if body.contains("No  results.") {
        return Vec::new();
    }
    let doc = Html::parse_document(body);
    let mut out = Vec::new();
    for node in doc.root_element().descendants() {
        let Some(div) = ElementRef::wrap(node) else {
            continue;
        };
        if div.value().name() != "div" {
            continue;
        }
        let kids: Vec<ElementRef<'_>> = div.children().filter_map(ElementRef::wrap).collect();
        let h2s: Vec<&ElementRef<'_>> = kids.iter().filter(|e| e.value().name() == "h2").collect();
        if h2s.is_empty() {
            continue;
        }
        let links: Vec<&ElementRef<'_>> = kids.iter().filter(|e| e.value().name() == "a").collect();
        let Some(href) = links.iter().find_map(|a| a.value().attr("href")) else {
            continue;
        };
        if href.is_empty()
            || href.starts_with("http://www.google.com/search?q=")
            || href.starts_with("https://duckduckgo.com/y.js?ad_domain")
        {
            continue;
        }
        // `./h2/a/text()`[0]: the first text node directly in a title link.
        let title = h2s
            .iter()
            .flat_map(|h| h.children().filter_map(ElementRef::wrap))
            .filter(|a| a.value().name() == "a")
            .flat_map(|a| a.children())
            .find_map(|c| match c.value() {
                Node::Text(t) => Some(t.to_string()),
                _ => None,
            })
            .unwrap_or_default();
        let body: String = links.iter().flat_map(|a| a.text()).collect();
        out.push((
            normalize(&title),
            href.to_string(),
            normalize_url(href),
            normalize(&body),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of `html.duckduckgo.com/html` results (an ad, two results, one
    /// repeated).
    const PAGE: &str = r#"<!DOCTYPE html><html><body><div id="links" class="results">
<div class="result results_links results_links_deep result--ad"><div class="links_main links_deep result__body">
<h2 class="result__title"><a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=x.com">Ad</a></h2>
<a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=x.com">Buy now</a></div></div>
<div class="result results_links results_links_deep web-result"><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="https://www.rust-lang.org/">Rust <b>Programming</b> Language</a></h2>
<div class="result__extras"><div class="result__extras__url"><a class="result__url" href="https://www.rust-lang.org/">www.rust-lang.org</a></div></div>
<a class="result__snippet" href="https://www.rust-lang.org/">A language empowering <b>everyone</b> &amp; more.</a></div></div>
<div class="result"><div class="links_main"><h2><a href="https://en.wikipedia.org/wiki/Rust_(programming%20language)">Rust (programming language)</a></h2>
<a class="result__snippet" href="https://en.wikipedia.org/wiki/Rust_(programming%20language)">Rust is a general-purpose language.</a></div></div>
<div class="result"><div class="links_main"><h2><a href="https://www.rust-lang.org/">Again</a></h2>
<a class="result__snippet" href="https://www.rust-lang.org/">dup</a></div></div>
</div></body></html>"#;

    #[test]
    fn html_results_are_read_as_the_library_reads_them() {
        let rows = parse_html(PAGE);
        let rows: Vec<(&str, &str, &str)> = rows
            .iter()
            .map(|r| (r.0.as_str(), r.2.as_str(), r.3.as_str()))
            .collect();
        assert_eq!(
            rows,
            vec![
                (
                    "Rust ",
                    "https://www.rust-lang.org/",
                    "A language empowering everyone & more."
                ),
                (
                    "Rust (programming language)",
                    "https://en.wikipedia.org/wiki/Rust_(programming language)",
                    "Rust is a general-purpose language."
                ),
                ("Again", "https://www.rust-lang.org/", "dup"),
            ]
        );
        assert!(parse_html("<p>No  results.</p>").is_empty());
    }

    #[test]
    fn vqd_and_news_rows() {
        assert_eq!(extract_vqd(r#"x vqd="4-123" y"#).as_deref(), Some("4-123"));
        assert_eq!(extract_vqd("a&vqd=4-9&b").as_deref(), Some("4-9"));
        assert_eq!(extract_vqd("nothing"), None);
        let row = json!({"date": 1700000000, "title": "T", "excerpt": "<b>big</b> news", "url": "https://n.example/a%20b", "source": "S"});
        assert_eq!(
            news_row(&row).unwrap(),
            json!({"date": "2023-11-14T22:13:20+00:00", "title": "T", "body": "big news",
                "url": "https://n.example/a b", "image": "", "source": "S"})
        );
    }

    #[test]
    fn channel_is_checked_as_ragflow_does() {
        let p: Object = serde_json::from_value(json!({"channel": "general"})).unwrap();
        assert_eq!(
            build(&p).err().unwrap().to_string(),
            "Web Search or News general is not supported, it should be in ['text', 'news']"
        );
    }
}
