//! PubMed (`agent/tools/pubmed.py`, `pubmed_search`): NCBI E-utilities as RAGFlow
//! calls them through Biopython's `Entrez`: `esearch` (ids of the first `top_n`
//! matches), then `efetch` of those ids as XML (`<b>`/`<i>` tags removed first), each
//! `PubmedArticle` becoming a chunk whose content lists title, authors, journal,
//! volume, issue, pages, DOI and abstract.
//!
//! As Biopython, requests are spaced (3 per second, 10 with an API key) and a 429 or
//! 5xx answer is tried again up to 3 times; Biopython waits 15 s between tries, we wait
//! the answer's `Retry-After` when it gives one (at most 15 s). Differences: `tool` is
//! `canvas`; an `NCBI_API_KEY` in the environment is sent as `api_key`; no `efetch` is
//! made when the search found nothing (NCBI answers an empty id list with an error
//! document, which gives the same empty result).
//!
//! The API base is `https://eutils.ncbi.nlm.nih.gov/entrez/eutils`;
//! `CANVAS_PUBMED_BASE_URL` overrides it.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use regex::Regex;
use serde_json::Value;

use super::reference::Found;
use super::web::{self, SearchOutcome};
use super::xml::{self, Element};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::Object;

const BASE_VAR: &str = "CANVAS_PUBMED_BASE_URL";
const KEY_VAR: &str = "NCBI_API_KEY";
const DEFAULT_BASE: &str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils";
/// RAGFlow's `COMPONENT_EXEC_TIMEOUT` default for this tool, per request here.
const TIMEOUT: Duration = Duration::from_secs(12);
/// Biopython's `max_tries` and `sleep_between_tries`.
const MAX_TRIES: usize = 3;
const SLEEP_BETWEEN_TRIES: f64 = 15.0;

const DESCRIPTION: &str = "
PubMed is an openly accessible, free database which includes primarily the MEDLINE database of references and abstracts on life sciences and biomedical topics.
In addition to MEDLINE, PubMed provides access to:
 - older references from the print version of Index Medicus, back to 1951 and earlier
 - references to some journals before they were indexed in Index Medicus and MEDLINE, for instance Science, BMJ, and Annals of Surgery
 - very recent entries to records for an article before it is indexed with Medical Subject Headings (MeSH) and added to MEDLINE
 - a collection of books available full-text and other subsets of NLM records[4]
 - PMC citations
 - NCBI Bookshelf
            ";

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    web::check_positive_integer(params, "top_n", "Top N")?;
    Ok(Box::new(PubMed {
        meta: ToolMeta {
            name: "pubmed_search",
            description: DESCRIPTION,
            parameters: vec![Param::string(
                "query",
                "The search keywords to execute with PubMed. The keywords should be the most important words/terms(includes synonyms) from the original request.",
                "{sys.query}",
            )],
        },
    }))
}

/// The PubMed tool.
pub struct PubMed {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for PubMed {
    crate::tool_facts!("PubMed", outputs: ["formalized_content"], env: [BASE_VAR, KEY_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        web::scholarly_thoughts(args)
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let base = call.env().base_url(BASE_VAR, DEFAULT_BASE);
        let email = call.param_str("email", "A.N.Other@example.com").to_string();
        let api_key = call.env().var(KEY_VAR).map(str::to_string);
        let top_n = web::top_n(call, 12);
        web::run_search(call, args, "PubMed", None, |query| {
            let entrez = Entrez {
                client: web::client(call, TIMEOUT),
                base: base.clone(),
                email: email.clone(),
                api_key: api_key.clone(),
            };
            async move { entrez.search(&query, top_n).await }
        })
        .await
    }
}

/// E-utilities as Biopython calls them.
struct Entrez {
    client: Result<reqwest::Client, String>,
    base: String,
    email: String,
    api_key: Option<String>,
}

impl Entrez {
    /// One E-utility call with Biopython's parameters and retries.
    async fn call(&self, cgi: &str, mut params: Vec<(&str, String)>) -> Result<String, String> {
        let client = self.client.as_ref().map_err(Clone::clone)?;
        params.push(("tool", "canvas".into()));
        params.push(("email", self.email.clone()));
        if let Some(k) = &self.api_key {
            params.push(("api_key", k.clone()));
        }
        let url = format!("{}/{cgi}", self.base);
        let mut last = String::new();
        for attempt in 0..MAX_TRIES {
            match web::send(client.get(&url).query(&params)).await {
                Ok((200, body, _)) => return Ok(body),
                Ok((status, _, retry_after)) => {
                    last = format!("HTTP Error {status}: {}", web::reason(status));
                    // Other 4xx answers are final, as in Biopython.
                    if status / 100 == 4 && status != 429 {
                        break;
                    }
                    if attempt + 1 < MAX_TRIES {
                        let wait = retry_after.unwrap_or(SLEEP_BETWEEN_TRIES);
                        tokio::time::sleep(Duration::from_secs_f64(wait.min(SLEEP_BETWEEN_TRIES)))
                            .await;
                    }
                }
                Err(e) => {
                    last = e;
                    if attempt + 1 < MAX_TRIES {
                        tokio::time::sleep(Duration::from_secs_f64(SLEEP_BETWEEN_TRIES)).await;
                    }
                }
            }
        }
        Err(last)
    }

    /// RAGFlow's attempt: esearch, efetch, articles as results.
    async fn search(&self, query: &str, top_n: usize) -> Result<SearchOutcome, String> {
        let body = self
            .call(
                "esearch.fcgi",
                vec![
                    ("db", "pubmed".into()),
                    ("retmax", top_n.to_string()),
                    ("term", query.to_string()),
                ],
            )
            .await?;
        let ids = parse_ids(&body)?;
        if ids.is_empty() {
            return Ok(SearchOutcome {
                found: Vec::new(),
                json: None,
            });
        }
        // Biopython's rate limit: at most 3 requests a second without a key, 10 with.
        let spacing = if self.api_key.is_some() { 0.1 } else { 0.34 };
        tokio::time::sleep(Duration::from_secs_f64(spacing)).await;
        let body = self
            .call(
                "efetch.fcgi",
                vec![
                    ("db", "pubmed".into()),
                    ("id", ids.join(",")),
                    ("retmode", "xml".into()),
                ],
            )
            .await?;
        let found = parse_articles(&body)?;
        Ok(SearchOutcome { found, json: None })
    }
}

/// The `IdList` of an esearch answer; its `ERROR` element is an error, as
/// `Entrez.read` raises it.
fn parse_ids(body: &str) -> Result<Vec<String>, String> {
    let root = xml::parse(body).map_err(|e| e.to_string())?;
    if let Some(e) = root.child("ERROR") {
        return Err(e.all_text());
    }
    Ok(root
        .child("IdList")
        .map(|l| {
            l.children_named("Id")
                .map(|i| i.text().trim().to_string())
                .filter(|i| !i.is_empty())
                .collect()
        })
        .unwrap_or_default())
}

/// The articles of an efetch answer as results.
fn parse_articles(body: &str) -> Result<Vec<Found>, String> {
    static BOLD_ITALIC: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"<(/?)b>|<(/?)i>").expect("valid regex"));
    let cleaned = BOLD_ITALIC.replace_all(body, "");
    let root = xml::parse(&cleaned).map_err(|e| e.to_string())?;
    Ok(root
        .children_named("PubmedArticle")
        .map(|a| Found {
            title: a
                .find("MedlineCitation/Article/ArticleTitle")
                .map(Element::text)
                .unwrap_or_default(),
            url: format!(
                "https://pubmed.ncbi.nlm.nih.gov/{}",
                a.find("MedlineCitation/PMID")
                    .map(Element::text)
                    .unwrap_or_default()
            ),
            content: format_article(a),
            score: None,
        })
        .collect())
}

/// RAGFlow's `_format_pubmed_content`.
fn format_article(a: &Element) -> String {
    let find = |path: &str, dflt: &str| {
        a.find(path)
            .map(Element::text)
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| dflt.to_string())
    };
    let title = find("MedlineCitation/Article/ArticleTitle", "No title");
    let abstract_ = find(
        "MedlineCitation/Article/Abstract/AbstractText",
        "No abstract available",
    );
    let journal = find("MedlineCitation/Article/Journal/Title", "Unknown Journal");
    let volume = find("MedlineCitation/Article/Journal/JournalIssue/Volume", "-");
    let issue = find("MedlineCitation/Article/Journal/JournalIssue/Issue", "-");
    let pages = find("MedlineCitation/Article/Pagination/MedlinePgn", "-");

    let mut lists = Vec::new();
    a.descendants("AuthorList", &mut lists);
    let authors: Vec<String> = lists
        .iter()
        .flat_map(|l| l.children_named("Author"))
        .filter_map(|au| {
            let part = |n: &str| au.child(n).map(Element::text).unwrap_or_default();
            let full = format!("{} {}", part("ForeName"), part("LastName"));
            let full = full.trim();
            (!full.is_empty()).then(|| full.to_string())
        })
        .collect();
    let authors = if authors.is_empty() {
        "Unknown Authors".to_string()
    } else {
        authors.join(", ")
    };

    let mut ids = Vec::new();
    a.descendants("ArticleId", &mut ids);
    let doi = ids
        .iter()
        .find(|e| e.attr("IdType") == Some("doi"))
        .map(|e| e.text())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "-".to_string());

    format!(
        "Title: {title}\nAuthors: {authors}\nJournal: {journal}\nVolume: {volume}\nIssue: {issue}\nPages: {pages}\nDOI: {doi}\nAbstract: {}",
        abstract_.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn esearch_ids_and_errors() {
        let ok = r#"<?xml version="1.0" encoding="UTF-8" ?>
<!DOCTYPE eSearchResult PUBLIC "-//NLM//DTD esearch 20060628//EN" "https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20060628/esearch.dtd">
<eSearchResult><Count>2</Count><RetMax>2</RetMax><RetStart>0</RetStart><IdList>
<Id>39000001</Id>
<Id>39000002</Id>
</IdList><TranslationSet/><QueryTranslation>aspirin[All Fields]</QueryTranslation></eSearchResult>"#;
        assert_eq!(parse_ids(ok).unwrap(), ["39000001", "39000002"]);
        let err =
            "<eSearchResult><ERROR>Empty term and query_key - nothing todo</ERROR></eSearchResult>";
        assert_eq!(
            parse_ids(err).unwrap_err(),
            "Empty term and query_key - nothing todo"
        );
        assert!(
            parse_ids("<eSearchResult><Count>0</Count><IdList/></eSearchResult>")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn articles_are_formatted_as_ragflow_does() {
        let body = r#"<?xml version="1.0" ?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">
<PubmedArticleSet>
<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">39000001</PMID>
<Article PubModel="Print"><Journal><JournalIssue CitedMedium="Internet"><Volume>12</Volume><Issue>3</Issue></JournalIssue>
<Title>The Lancet</Title></Journal>
<ArticleTitle>Aspirin and <i>bleeding</i> risk</ArticleTitle>
<Pagination><MedlinePgn>100-9</MedlinePgn></Pagination>
<Abstract><AbstractText Label="BACKGROUND">  Aspirin is <b>widely</b> used.  </AbstractText><AbstractText>Second part.</AbstractText></Abstract>
<AuthorList CompleteYN="Y"><Author><LastName>Smith</LastName><ForeName>Jane</ForeName></Author>
<Author><CollectiveName>The Group</CollectiveName></Author><Author><LastName>Lee</LastName></Author></AuthorList>
</Article></MedlineCitation>
<PubmedData><ArticleIdList><ArticleId IdType="pubmed">39000001</ArticleId><ArticleId IdType="doi">10.1000/xyz</ArticleId></ArticleIdList></PubmedData>
</PubmedArticle>
<PubmedArticle><MedlineCitation><PMID>39000002</PMID><Article><ArticleTitle>Bare</ArticleTitle></Article></MedlineCitation></PubmedArticle>
<PubmedBookArticle><BookDocument><PMID>1</PMID></BookDocument></PubmedBookArticle>
</PubmedArticleSet>"#;
        let found = parse_articles(body).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].title, "Aspirin and bleeding risk");
        assert_eq!(found[0].url, "https://pubmed.ncbi.nlm.nih.gov/39000001");
        assert_eq!(
            found[0].content,
            "Title: Aspirin and bleeding risk\nAuthors: Jane Smith, Lee\nJournal: The Lancet\nVolume: 12\nIssue: 3\nPages: 100-9\nDOI: 10.1000/xyz\nAbstract: Aspirin is widely used."
        );
        assert_eq!(
            found[1].content,
            "Title: Bare\nAuthors: Unknown Authors\nJournal: Unknown Journal\nVolume: -\nIssue: -\nPages: -\nDOI: -\nAbstract: No abstract available"
        );
        assert!(parse_articles("<PubmedArticleSet>").is_err());
    }
}
