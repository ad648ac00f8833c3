//! ArXiv (`agent/tools/arxiv.py`, `arxiv_search`): searches the arXiv export API
//! (Atom feed) as the `arxiv` Python library (2.1.3) does: pages of 100 results sorted
//! by `sort_by` (descending), at least 3 seconds between requests, up to 3 more tries
//! of a page on an HTTP error, a connection failure or an unexpectedly empty later
//! page; the first `top_n` entries become chunks (title, PDF link, abstract).
//!
//! The API base is `https://export.arxiv.org`; `CANVAS_ARXIV_BASE_URL` overrides it.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::reference::Found;
use super::web::{self, SearchOutcome};
use super::xml;
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::Object;

const BASE_VAR: &str = "CANVAS_ARXIV_BASE_URL";
const DEFAULT_BASE: &str = "https://export.arxiv.org";
/// RAGFlow's `COMPONENT_EXEC_TIMEOUT` default for this tool, per request here.
const TIMEOUT: Duration = Duration::from_secs(12);
/// The library's `Client()` defaults.
const PAGE_SIZE: usize = 100;
const DELAY: Duration = Duration::from_secs(3);
const NUM_RETRIES: usize = 3;

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    web::check_positive_integer(params, "top_n", "Top N")?;
    web::check_valid_value(
        params,
        "sort_by",
        "ArXiv Search Sort_by",
        &["submittedDate", "lastUpdatedDate", "relevance"],
    )?;
    Ok(Box::new(ArXiv {
        meta: ToolMeta {
            name: "arxiv_search",
            description: "arXiv is a free distribution service and an open-access archive for nearly 2.4 million scholarly articles in the fields of physics, mathematics, computer science, quantitative biology, quantitative finance, statistics, electrical engineering and systems science, and economics. Materials on this site are not peer-reviewed by arXiv.",
            parameters: vec![Param::string(
                "query",
                "The search keywords to execute with arXiv. The keywords should be the most important words/terms(includes synonyms) from the original request.",
                "{sys.query}",
            )],
        },
    }))
}

/// The ArXiv tool.
pub struct ArXiv {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for ArXiv {
    crate::tool_facts!("ArXiv", outputs: ["formalized_content"], env: [BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        web::keywords_thoughts(args, 16)
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let url = format!("{}/api/query", call.env().base_url(BASE_VAR, DEFAULT_BASE));
        let sort_by = call.param_str("sort_by", "submittedDate").to_string();
        let top_n = web::top_n(call, 12);
        web::run_search(call, args, "ArXiv", None, |query| {
            let (url, sort_by) = (url.clone(), sort_by.clone());
            async move {
                let client = web::client(call, TIMEOUT)?;
                let entries = search(&client, &url, &query, &sort_by, top_n).await?;
                let found = entries
                    .into_iter()
                    .map(|e| Found {
                        title: e.title,
                        url: e.pdf_url,
                        content: e.summary,
                        score: None,
                    })
                    .collect();
                Ok(SearchOutcome { found, json: None })
            }
        })
        .await
    }
}

/// One result.
#[derive(Debug, PartialEq)]
struct Entry {
    title: String,
    pdf_url: String,
    summary: String,
}

/// One page of the feed: its entries and `opensearch:totalResults`.
#[derive(Debug)]
struct Feed {
    entries: Vec<Entry>,
    total: usize,
}

/// `Client.results(search)`: pages until `top_n` entries or the end.
async fn search(
    client: &reqwest::Client,
    url: &str,
    query: &str,
    sort_by: &str,
    top_n: usize,
) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    let mut first = true;
    loop {
        if !first {
            tokio::time::sleep(DELAY).await;
        }
        let feed = page(client, url, query, sort_by, offset, first).await?;
        if feed.entries.is_empty() {
            break;
        }
        offset += feed.entries.len();
        out.extend(feed.entries);
        if out.len() >= top_n || offset >= feed.total {
            break;
        }
        first = false;
    }
    out.truncate(top_n);
    Ok(out)
}

/// One page, with the library's retries.
async fn page(
    client: &reqwest::Client,
    url: &str,
    query: &str,
    sort_by: &str,
    start: usize,
    first: bool,
) -> Result<Feed, String> {
    let params = [
        ("search_query", query.to_string()),
        ("id_list", String::new()),
        ("sortBy", sort_by.to_string()),
        ("sortOrder", "descending".to_string()),
        ("start", start.to_string()),
        ("max_results", PAGE_SIZE.to_string()),
    ];
    let mut last = String::new();
    for attempt in 0..=NUM_RETRIES {
        if attempt > 0 {
            tokio::time::sleep(DELAY).await;
        }
        let req = client.get(url).query(&params);
        let full = req
            .try_clone()
            .and_then(|r| r.build().ok())
            .map(|r| r.url().to_string())
            .unwrap_or_else(|| url.to_string());
        match web::send(req).await {
            Ok((200, body, _)) => {
                let feed = parse_feed(&body)?;
                if feed.entries.is_empty() && !first {
                    last = format!("Page of results was unexpectedly empty ({full})");
                    continue;
                }
                return Ok(feed);
            }
            Ok((status, _, _)) => {
                last = format!("Page request resulted in HTTP {status} ({full})");
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Entries of an Atom page: title and abstract trimmed (as feedparser gives them), the
/// link titled `pdf` as the URL; an entry without an id is skipped, one without a title
/// is titled `0`, as the library does.
fn parse_feed(body: &str) -> Result<Feed, String> {
    let root = xml::parse(body).map_err(|e| e.to_string())?;
    let total = root
        .child("opensearch:totalResults")
        .and_then(|t| t.text().trim().parse().ok())
        .unwrap_or(0);
    let entries = root
        .children_named("entry")
        .filter(|e| e.child("id").is_some())
        .map(|e| Entry {
            title: e
                .child("title")
                .map(|t| t.all_text().trim().to_string())
                .unwrap_or_else(|| "0".to_string()),
            pdf_url: e
                .children_named("link")
                .find(|l| l.attr("title") == Some("pdf"))
                .and_then(|l| l.attr("href"))
                .unwrap_or_default()
                .to_string(),
            summary: e
                .child("summary")
                .map(|s| s.all_text().trim().to_string())
                .unwrap_or_default(),
        })
        .collect();
    Ok(Feed { entries, total })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FEED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query%3Dall%3Aelectron" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=all:electron&amp;id_list=&amp;start=0&amp;max_results=1</title>
  <id>http://arxiv.org/api/cHxbiOdZaP56ODnBPIenZhzg5f8</id>
  <updated>2007-10-08T00:00:00-04:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1000</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <entry>
    <id>http://arxiv.org/abs/hep-ex/0307015</id>
    <published>2003-07-07T13:46:39-04:00</published>
    <title>Multi-Electron Production at High Transverse
  Momenta in ep Collisions at HERA</title>
    <summary>  Multi-electron production is studied at high electron transverse momentum &amp; more.
</summary>
    <author><name>H1 Collaboration</name></author>
    <arxiv:journal_ref xmlns:arxiv="http://arxiv.org/schemas/atom">Eur.Phys.J. C31 (2003) 17-29</arxiv:journal_ref>
    <link href="http://arxiv.org/abs/hep-ex/0307015v1" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/hep-ex/0307015v1" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="hep-ex" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
  <entry><title>no id</title></entry>
</feed>"#;

    #[test]
    fn entries_give_title_pdf_link_and_abstract() {
        let f = parse_feed(FEED).unwrap();
        assert_eq!(f.total, 1000);
        assert_eq!(
            f.entries,
            vec![Entry {
                title: "Multi-Electron Production at High Transverse\n  Momenta in ep Collisions at HERA".into(),
                pdf_url: "http://arxiv.org/pdf/hep-ex/0307015v1".into(),
                summary: "Multi-electron production is studied at high electron transverse momentum & more.".into(),
            }]
        );
        assert!(parse_feed("<html>").is_err());
    }

    #[test]
    fn check_refuses_what_ragflow_refuses() {
        let p: Object = serde_json::from_value(json!({"sort_by": "stars"})).unwrap();
        assert_eq!(
            build(&p).err().unwrap().to_string(),
            "ArXiv Search Sort_by stars is not supported, it should be in ['submittedDate', 'lastUpdatedDate', 'relevance']"
        );
        let p: Object = serde_json::from_value(json!({"top_n": "5"})).unwrap();
        assert!(build(&p).is_err());
    }
}
