//! GoogleScholar (`agent/tools/googlescholar.py`, `google_scholar_search`): scrapes
//! Google Scholar's result pages as the `scholarly` library (1.7.11) does
//! (`search_pubs`): the query URL with its year, patent and sort options, result rows
//! (`div.gs_r.gs_or.gs_scl`) read into scholarly's publication dicts, next pages
//! followed until `top_n` results. Each becomes a chunk (`author:` and `Abstract:`
//! lines) and the list is the `json` output.
//!
//! As scholarly, a page is tried up to 5 times on a non-200 answer (1 s apart here;
//! scholarly sleeps 1–2 s before every request and rotates sessions), then fails with
//! "Cannot Fetch from Google Scholar."; a CAPTCHA page fails at once (scholarly
//! would need a browser to solve it). Differences: a row without a title link gets an
//! empty URL where RAGFlow fails the whole search with `'pub_url'`; rows scholarly
//! would crash on (no `gs_ri` box) are skipped.
//!
//! `CANVAS_GOOGLESCHOLAR_BASE_URL` overrides `https://scholar.google.com`.

use std::time::Duration;

use async_trait::async_trait;
use scraper::{ElementRef, Html, Node};
use serde_json::{Map, Value, json};

use super::reference::Found;
use super::web::{self, SearchOutcome};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_str};

const BASE_VAR: &str = "CANVAS_GOOGLESCHOLAR_BASE_URL";
const DEFAULT_BASE: &str = "https://scholar.google.com";
/// RAGFlow's `COMPONENT_EXEC_TIMEOUT` default for this tool, per request here.
const TIMEOUT: Duration = Duration::from_secs(12);
/// scholarly's `_max_retries`.
const MAX_TRIES: usize = 5;
const RETRY_DELAY: Duration = Duration::from_secs(1);
/// scholarly's failure text.
const CANNOT_FETCH: &str = "Cannot Fetch from Google Scholar.";

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    web::check_positive_integer(params, "top_n", "Top N")?;
    web::check_valid_value(
        params,
        "sort_by",
        "GoogleScholar Sort_by",
        &["date", "relevance"],
    )?;
    web::check_boolean(
        params,
        "patents",
        "Whether or not to include patents, defaults to True",
    )?;
    Ok(Box::new(GoogleScholar {
        meta: ToolMeta {
            name: "google_scholar_search",
            description: "Google Scholar provides a simple way to broadly search for scholarly literature. From one place, you can search across many disciplines and sources: articles, theses, books, abstracts and court opinions, from academic publishers, professional societies, online repositories, universities and other web sites. Google Scholar helps you find relevant work across the world of scholarly research.",
            parameters: vec![Param::string(
                "query",
                "The search keyword to execute with Google Scholar. The keywords should be the most important words/terms(includes synonyms) from the original request.",
                "{sys.query}",
            )],
        },
    }))
}

/// The GoogleScholar tool.
pub struct GoogleScholar {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for GoogleScholar {
    crate::tool_facts!("GoogleScholar", outputs: ["formalized_content", "json"], env: [BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        web::scholarly_thoughts(args)
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let base = call.env().base_url(BASE_VAR, DEFAULT_BASE);
        let year = |k: &str| match call.param(k) {
            None | Some(Value::Null) => None,
            Some(v) => Some(py_str(v)),
        };
        let opts = Options {
            patents: call.param_bool("patents", true),
            year_low: year("year_low"),
            year_high: year("year_high"),
            by_date: call.param_str("sort_by", "relevance") == "date",
        };
        let top_n = web::top_n(call, 12);
        web::run_search(call, args, "GoogleScholar", Some(json!([])), |query| {
            let client = web::client(call, TIMEOUT);
            let base = base.clone();
            let path = search_path(&query, &opts);
            async move {
                let client = client?;
                let pubs = search(&client, &base, &path, top_n).await?;
                let found = pubs.iter().map(found).collect();
                Ok(SearchOutcome {
                    found,
                    json: Some(Value::Array(pubs)),
                })
            }
        })
        .await
    }
}

/// `search_pubs` options.
struct Options {
    patents: bool,
    year_low: Option<String>,
    year_high: Option<String>,
    by_date: bool,
}

/// `requests.utils.quote`: everything but unreserved characters and `/` encoded.
fn quote(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `_construct_url` of the first result page.
fn search_path(query: &str, o: &Options) -> String {
    let mut url = format!("/scholar?hl=en&q={}", quote(query));
    if let Some(y) = &o.year_low {
        url.push_str(&format!("&as_ylo={y}"));
    }
    if let Some(y) = &o.year_high {
        url.push_str(&format!("&as_yhi={y}"));
    }
    url.push_str("&as_vis=0");
    url.push_str(&format!("&as_sdt={},33", if o.patents { 0 } else { 1 }));
    if o.by_date {
        url.push_str("&scisbd=1");
    }
    url
}

/// scholarly's `_get_page`.
async fn get_page(client: &reqwest::Client, url: &str) -> Result<String, String> {
    for attempt in 0..MAX_TRIES {
        if attempt > 0 {
            tokio::time::sleep(RETRY_DELAY).await;
        }
        if let Ok((status, body, _)) = web::send(client.get(url)).await {
            if has_captcha(&body) {
                return Err(format!(
                    "{CANNOT_FETCH} (Google Scholar answered with a CAPTCHA)"
                ));
            }
            if status == 200 {
                return Ok(body.replace('\u{a0}', " "));
            }
        }
    }
    Err(CANNOT_FETCH.to_string())
}

/// scholarly's `_requests_has_captcha` (its DOS page included).
fn has_captcha(body: &str) -> bool {
    ["gs_captcha_ccl", "recaptcha", "captcha-form"]
        .iter()
        .any(|i| body.contains(&format!("id=\"{i}\"")))
        || body.contains("class=\"rc-doscaptcha-body\"")
}

/// Results until `top_n`, following the next-page link.
async fn search(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    top_n: usize,
) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let mut next = Some(path.to_string());
    // Pages a search may walk (Google Scholar stops at 100 results).
    let mut pages = 0;
    while let Some(p) = next.take() {
        pages += 1;
        let body = get_page(client, &format!("{base}{p}")).await?;
        let (pubs, more) = parse_page(&body);
        out.extend(pubs);
        if out.len() >= top_n || pages >= 100 {
            break;
        }
        next = more;
    }
    out.truncate(top_n);
    Ok(out)
}

/// A result as RAGFlow turns it into a chunk.
fn found(p: &Value) -> Found {
    let bib = &p["bib"];
    let authors: Vec<&str> = bib["author"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Found {
        title: bib["title"].as_str().unwrap_or("").to_string(),
        url: p["pub_url"].as_str().unwrap_or("").to_string(),
        content: format!(
            "\n author: {}\n Abstract: {}",
            authors.join(","),
            bib["abstract"].as_str().unwrap_or("no abstract")
        ),
        score: None,
    }
}

/// Whether an element's class attribute is exactly `classes` (BeautifulSoup's match
/// of a class string with spaces) or, for one class, contains it.
fn has_class(e: &ElementRef<'_>, classes: &str) -> bool {
    let Some(c) = e.value().attr("class") else {
        return false;
    };
    if classes.contains(' ') {
        c == classes
    } else {
        c.split_ascii_whitespace().any(|x| x == classes)
    }
}

/// The first descendant (not itself) named `tag` with `class`.
fn find<'a>(e: &ElementRef<'a>, tag: &str, class: &str) -> Option<ElementRef<'a>> {
    e.descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .find(|d| d.value().name() == tag && (class.is_empty() || has_class(d, class)))
}

/// The publications of a page and the next page's path.
fn parse_page(body: &str) -> (Vec<Value>, Option<String>) {
    let doc = Html::parse_document(body);
    let root = doc.root_element();
    let publib = root
        .descendants()
        .filter_map(ElementRef::wrap)
        .find(|e| e.value().name() == "div" && e.value().id() == Some("gs_res_glb"))
        .and_then(|e| e.value().attr("data-sva").map(str::to_string))
        .unwrap_or_default();
    let pubs = root
        .descendants()
        .filter_map(ElementRef::wrap)
        .filter(|e| e.value().name() == "div" && has_class(e, "gs_r gs_or gs_scl"))
        .filter_map(|row| publication(&row, &publib))
        .collect();
    let next = root
        .descendants()
        .filter_map(ElementRef::wrap)
        .find(|e| has_class(e, "gs_ico gs_ico_nav_next"))
        .and_then(|e| e.parent().and_then(ElementRef::wrap))
        .and_then(|p| p.value().attr("href").map(str::to_string));
    (pubs, next)
}

/// Text of `e` with the subtree `skip` left out.
fn text_without(e: &ElementRef<'_>, skip: Option<ElementRef<'_>>) -> String {
    let mut out = String::new();
    let mut it = e.descendants();
    while let Some(n) = it.next() {
        if skip.is_some_and(|s| s.id() == n.id()) {
            // Jump past the skipped subtree.
            let mut last = n;
            while let Some(c) = last.last_child() {
                last = c;
            }
            if last.id() == n.id() {
                continue;
            }
            for m in it.by_ref() {
                if m.id() == last.id() {
                    break;
                }
            }
            continue;
        }
        if let Node::Text(t) = n.value() {
            out.push_str(t);
        }
    }
    out
}

/// scholarly's `_get_authorlist`.
fn author_list(info: &str) -> Vec<String> {
    let head = info.split(" - ").next().unwrap_or("");
    head.split(',')
        .map(str::trim)
        .filter(|i| !i.chars().any(|c| c.is_ascii_digit()))
        .filter(|i| {
            ![
                "Proceedings",
                "Conference",
                "Journal",
                "(",
                ")",
                "[",
                "]",
                "Transactions",
            ]
            .iter()
            .any(|w| i.contains(w))
        })
        .map(|i| i.replace('…', ""))
        .collect()
}

/// scholarly's `_get_author_id_list`.
fn author_ids(inner_html: &str) -> Vec<String> {
    static USER: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\?user=(.*?)&amp;").expect("valid regex"));
    let head = inner_html.split(" - ").next().unwrap_or("");
    head.split(',')
        .map(|a| {
            USER.captures(a.trim())
                .and_then(|c| c.get(1))
                .map_or_else(String::new, |m| m.as_str().to_string())
        })
        .collect()
}

/// scholarly's `_scholar_pub`: one result row as its publication dict.
fn publication(row: &ElementRef<'_>, publib: &str) -> Option<Value> {
    let databox = find(row, "div", "gs_ri")?;
    let title = find(&databox, "h3", "gs_rt")?;
    let cid = row.value().attr("data-cid").unwrap_or("");
    let pos = row.value().attr("data-rp").unwrap_or("");
    let mut p = Map::new();
    let mut bib = Map::new();
    p.insert("container_type".into(), json!("Publication"));
    p.insert("source".into(), json!("PUBLICATION_SEARCH_SNIPPET"));
    p.insert("bib".into(), json!({}));
    p.insert("filled".into(), json!(false));
    p.insert(
        "gsrank".into(),
        pos.trim()
            .parse::<i64>()
            .map_or(Value::Null, |n| json!(n + 1)),
    );
    // A [CITATION]/[PDF] marker span is dropped from the title.
    let marked =
        find(&title, "span", "gs_ctu").is_some() || find(&title, "span", "gs_ctc").is_some();
    let span = if marked {
        find(&title, "span", "")
    } else {
        None
    };
    bib.insert("title".into(), json!(text_without(&title, span).trim()));
    let link = title
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .filter(|a| span.is_none_or(|s| !a.ancestors().any(|x| x.id() == s.id())))
        .find(|a| a.value().name() == "a");
    if let Some(a) = link {
        p.insert(
            "pub_url".into(),
            json!(a.value().attr("href").unwrap_or("")),
        );
    }
    let author_div = find(&databox, "div", "gs_a");
    let info = author_div
        .map(|d| d.text().collect::<String>())
        .unwrap_or_default()
        .replace('\u{a0}', " ")
        .replace("&amp;", "&");
    bib.insert("author".into(), json!(author_list(&info)));
    p.insert(
        "author_id".into(),
        json!(author_ids(
            &author_div.map(|d| d.inner_html()).unwrap_or_default()
        )),
    );
    let parts: Vec<&str> = info.split(" - ").collect();
    if parts.len() <= 2 {
        bib.insert("venue".into(), json!("NA"));
        bib.insert("pub_year".into(), json!("NA"));
    } else {
        let vy: Vec<&str> = parts[1].split(',').collect();
        let year = vy.last().map(|y| y.trim()).unwrap_or("");
        let mut venue = "NA".to_string();
        if year.chars().count() == 4 && year.chars().all(|c| c.is_numeric()) {
            bib.insert("pub_year".into(), json!(year));
            if vy.len() >= 2 {
                venue = vy[..vy.len() - 1].join(",");
            }
        } else {
            venue = vy.join(",");
            bib.insert("pub_year".into(), json!("NA"));
        }
        bib.insert("venue".into(), json!(venue));
    }
    if let Some(rs) = find(&databox, "div", "gs_rs") {
        let text = rs
            .text()
            .collect::<String>()
            .replace('\u{2026}', "")
            .replace('\n', " ");
        let mut text = text.trim().to_string();
        if text.chars().take(8).collect::<String>().to_lowercase() == "abstract" {
            text = text.chars().skip(9).collect::<String>().trim().to_string();
        }
        bib.insert("abstract".into(), json!(text));
    }
    p.insert("num_citations".into(), json!(0));
    let links: Vec<ElementRef<'_>> = find(&databox, "div", "gs_fl")
        .map(|fl| {
            fl.descendants()
                .skip(1)
                .filter_map(ElementRef::wrap)
                .filter(|a| a.value().name() == "a")
                .collect()
        })
        .unwrap_or_default();
    for a in links {
        let text: String = a.text().collect();
        let href = a.value().attr("href").unwrap_or("");
        if a.value().attr("title") == Some("Cite") {
            p.insert(
                "url_scholarbib".into(),
                json!(format!(
                    "/scholar?q=info:{cid}:scholar.google.com/&output=cite&scirp={pos}&hl=en"
                )),
            );
            p.insert("url_add_sclib".into(), json!(publib.replace("{id}", cid)));
        }
        if text.contains("Cited by") {
            let n = text
                .split(|c: char| !c.is_ascii_digit())
                .find(|s| !s.is_empty())
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or(0);
            p.insert("num_citations".into(), json!(n));
            p.insert("citedby_url".into(), json!(href));
        }
        if text.contains("Related articles") {
            p.insert("url_related_articles".into(), json!(href));
        }
    }
    if let Some(eprint) = find(row, "div", "gs_ggs gs_fl") {
        if let Some(a) = find(&eprint, "a", "") {
            p.insert(
                "eprint_url".into(),
                json!(a.value().attr("href").unwrap_or("")),
            );
        }
    }
    p.insert("bib".into(), Value::Object(bib));
    Some(Value::Object(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<html><body><div id="gs_res_glb" data-sva="/citations?hl=en&amp;info={id}&amp;update_op=library_add"></div>
<div id="gs_res_ccl_mid">
<div class="gs_r gs_or gs_scl" data-cid="AbC123" data-did="AbC123" data-rp="0">
 <div class="gs_ggs gs_fl"><div class="gs_ggsd"><a href="https://arxiv.org/pdf/1706.03762">[PDF] arxiv.org</a></div></div>
 <div class="gs_ri"><h3 class="gs_rt"><span class="gs_ctc"><span class="gs_ct1">[PDF]</span></span> <a id="AbC123" href="https://arxiv.org/abs/1706.03762">Attention is all you need</a></h3>
 <div class="gs_a"><a href="/citations?user=oR9sCGYAAAAJ&amp;hl=en&amp;oi=sra">A Vaswani</a>, N Shazeer, N Parmar… - Advances in neural information processing, 2017 - proceedings.neurips.cc</div>
 <div class="gs_rs">Abstract The dominant sequence transduction models are based on complex recurrent …
 networks.</div>
 <div class="gs_fl gs_flb"><a href="javascript:void(0)" title="Save">Save</a><a href="javascript:void(0)" title="Cite">Cite</a>
 <a href="/scholar?cites=2960712678066186980&amp;as_sdt=2005&amp;sciodt=0,5&amp;hl=en">Cited by 150000</a>
 <a href="/scholar?q=related:AbC123:scholar.google.com/&amp;scioq=attention&amp;hl=en&amp;as_sdt=0,5">Related articles</a></div></div>
</div>
<div class="gs_r gs_or gs_scl" data-cid="Xy" data-rp="1"><div class="gs_ri"><h3 class="gs_rt"><span class="gs_ctu"><span class="gs_ct1">[CITATION]</span></span><span class="gs_ct2">[C]</span> A book only</h3>
 <div class="gs_a">J Doe - Publisher</div><div class="gs_fl"></div></div></div>
</div>
<div id="gs_n"><a href="/scholar?start=10&amp;q=attention&amp;hl=en"><span class="gs_ico gs_ico_nav_next"></span><b>Next</b></a></div>
</body></html>"#;

    #[test]
    fn rows_read_as_scholarly_reads_them() {
        let (pubs, next) = parse_page(PAGE);
        assert_eq!(next.as_deref(), Some("/scholar?start=10&q=attention&hl=en"));
        assert_eq!(pubs.len(), 2);
        assert_eq!(
            pubs[0],
            json!({
                "container_type": "Publication",
                "source": "PUBLICATION_SEARCH_SNIPPET",
                "bib": {"title": "Attention is all you need",
                    "author": ["A Vaswani", "N Shazeer", "N Parmar"],
                    "pub_year": "2017", "venue": "Advances in neural information processing",
                    "abstract": "The dominant sequence transduction models are based on complex recurrent   networks."},
                "filled": false,
                "gsrank": 1,
                "pub_url": "https://arxiv.org/abs/1706.03762",
                "author_id": ["oR9sCGYAAAAJ", "", ""],
                "num_citations": 150000,
                "url_scholarbib": "/scholar?q=info:AbC123:scholar.google.com/&output=cite&scirp=0&hl=en",
                "url_add_sclib": "/citations?hl=en&info=AbC123&update_op=library_add",
                "citedby_url": "/scholar?cites=2960712678066186980&as_sdt=2005&sciodt=0,5&hl=en",
                "url_related_articles": "/scholar?q=related:AbC123:scholar.google.com/&scioq=attention&hl=en&as_sdt=0,5",
                "eprint_url": "https://arxiv.org/pdf/1706.03762",
            })
        );
        // The first span (the citation marker) is dropped, the second kept.
        assert_eq!(pubs[1]["bib"]["title"], "[C] A book only");
        assert_eq!(pubs[1]["bib"]["venue"], "NA");
        assert!(pubs[1].get("pub_url").is_none());
        let f = found(&pubs[1]);
        assert_eq!(f.content, "\n author: J Doe\n Abstract: no abstract");
        assert_eq!(f.url, "");
    }

    #[test]
    fn query_urls_are_built_as_scholarly_builds_them() {
        let o = Options {
            patents: true,
            year_low: None,
            year_high: None,
            by_date: false,
        };
        assert_eq!(
            search_path("deep learning/α & b", &o),
            "/scholar?hl=en&q=deep%20learning/%CE%B1%20%26%20b&as_vis=0&as_sdt=0,33"
        );
        let o = Options {
            patents: false,
            year_low: Some("2020".into()),
            year_high: Some("2023".into()),
            by_date: true,
        };
        assert_eq!(
            search_path("x", &o),
            "/scholar?hl=en&q=x&as_ylo=2020&as_yhi=2023&as_vis=0&as_sdt=1,33&scisbd=1"
        );
    }

    #[test]
    fn authors_and_captchas() {
        assert_eq!(
            author_list("A Smith, Journal of X, B Jones…, 2019 - x"),
            ["A Smith", "B Jones"]
        );
        assert!(has_captcha("<div id=\"gs_captcha_ccl\">"));
        assert!(!has_captcha("<div id=\"gs_res_ccl\">"));
    }
}
