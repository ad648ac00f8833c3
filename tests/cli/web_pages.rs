//! The web tools that read public pages and APIs (Wikipedia, ArXiv, PubMed, DuckDuckGo,
//! GoogleScholar, Crawler) against fake servers on 127.0.0.1 answering in the real
//! APIs' shapes: each runs as an Agent's tool driven by a mock script (the model's
//! final answer depends on the tool's result) and as a canvas node (its
//! `node_finished` outputs read from `--format jsonl`), with the requests the server
//! received checked, plus an error answer and the rate-limit retry behaviour.

use serde_json::{Value, json};

use crate::canvases::{WITH_TOOLS, agent_canvas, node_canvas};
use crate::harness::{CanvasCli, Ran};
use crate::peer::{FakeServer, Reply, Seen};
use crate::util::{streamed, trace};

/// begin → `Tool:T` (`class` with `params`) → Message:Out showing its result.
fn node_flow(class: &str, params: Value) -> CanvasCli {
    CanvasCli::new().json(
        "node.json",
        &node_canvas(class, "Tool:T", params, "formalized_content"),
    )
}

/// begin → an Agent with the one tool `class` → Message:Out.
fn agent_flow(class: &str, params: Value) -> CanvasCli {
    let tools = json!([{"component_name": class, "name": class, "params": params}]);
    CanvasCli::new().json("agent.json", &agent_canvas("Agent:A", WITH_TOOLS, tools))
}

/// Run `flow` (a file of `cli`) with `-q query`, `env` and `extra`.
fn run(
    cli: CanvasCli,
    flow: &str,
    query: &str,
    env: &[(&str, String)],
    extra: &[&str],
) -> (Ran, Vec<Value>) {
    let ran = cli
        .args(["run", flow, "-q", query, "--format", "jsonl"])
        .args(extra)
        .envs(env.iter().cloned())
        .run();
    let evs = ran.events();
    (ran, evs)
}

/// `Tool:T`'s `node_finished` data.
fn finished(ran: &Ran, evs: &[Value]) -> Value {
    evs.iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "Tool:T")
        .unwrap_or_else(|| {
            panic!(
                "no node_finished for Tool:T: {:?}\nstderr: {}",
                trace(evs),
                ran.stderr()
            )
        })["data"]
        .clone()
}

/// Run the tool as an Agent's tool: the model calls `function` with `arguments`, then
/// answers `answer` when its conversation matches `expect` (else "no match"). The
/// streamed text.
fn run_agent(
    class: &str,
    params: Value,
    function: &str,
    arguments: Value,
    expect: &str,
    env: &[(&str, String)],
) -> (Ran, Vec<Value>, String) {
    let cli = agent_flow(class, params).mock_llm(&json!({"rules": [
        {"match": expect, "on": "any", "answer": "FOUND IT"},
        {"match": "^ask", "tool_calls": [{"name": function, "arguments": arguments}]},
    ], "default": "no match"}));
    let (ran, evs) = run(
        cli,
        "agent.json",
        "ask the tool",
        env,
        &["--allow-private-network"],
    );
    let ran = ran.code(0);
    let text = streamed(&evs);
    (ran, evs, text)
}

/// Run the tool as a canvas node with `-q query`: its `node_finished` data. The run
/// succeeds, or (`_ERROR` set: RAGFlow stops the run) fails naming the error.
fn run_node(class: &str, params: Value, query: &str, env: &[(&str, String)]) -> Value {
    let cli = node_flow(class, params);
    let (ran, evs) = run(cli, "node.json", query, env, &["--allow-private-network"]);
    let f = finished(&ran, &evs);
    match f["outputs"]["_ERROR"].as_str().filter(|e| !e.is_empty()) {
        None => {
            ran.code(0);
        }
        Some(e) => {
            let ran = ran.code(1);
            assert!(ran.stderr().contains(e), "{}", ran.stderr());
            assert_eq!(f["error"], json!(e), "node_finished.error is _ERROR");
        }
    }
    f
}

/// `%XX` and `+` decoded.
fn decode(s: &str) -> String {
    let s = s.replace('+', " ");
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

/// Decoded `key=value` pairs of a query string or form body.
fn pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// A query parameter of a request.
fn param(req: &Seen, key: &str) -> Option<String> {
    let q = req.target().split_once('?').map(|(_, q)| q).unwrap_or("");
    pairs(q).into_iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// The reference chunks of the final `message_end`.
fn reference_chunks(evs: &[Value]) -> Vec<Value> {
    evs.iter()
        .rev()
        .find(|e| e["event"] == "message_end")
        .and_then(|e| e["data"]["reference"]["chunks"].as_object())
        .map(|m| m.values().cloned().collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------
// Wikipedia

/// A MediaWiki API for the `de` edition: a search finds two titles; page info follows
/// "Rost" to "Rost (Korrosion)"; each page has an intro.
fn wikipedia_server(fail_first: bool) -> FakeServer {
    FakeServer::with(move |req: &Seen, n| {
        if fail_first && n == 1 {
            return Reply::text(429, "text/html", "<html>Too many requests</html>");
        }
        if req.path() != "/de/w/api.php" {
            return Reply::json(
                404,
                json!({"error": {"code": "nope", "info": "wrong path"}}),
            );
        }
        let p = |k: &str| param(req, k);
        match (p("list").as_deref(), p("prop").as_deref()) {
            (Some("search"), _) if p("srinfo").is_some() => {
                // The auto-suggest search of `page()`: the title itself.
                let t = p("srsearch").unwrap_or_default();
                Reply::json(
                    200,
                    json!({"batchcomplete": "", "query": {"search": [{"ns": 0, "title": t}]}}),
                )
            }
            (Some("search"), _) => Reply::json(
                200,
                json!({"batchcomplete": "", "query": {"searchinfo": {"totalhits": 2},
                    "search": [{"ns": 0, "title": "Rost", "pageid": 11}, {"ns": 0, "title": "Ferris", "pageid": 12}]}}),
            ),
            (_, Some("info|pageprops")) => match p("titles").as_deref() {
                Some("Rost") => Reply::json(
                    200,
                    json!({"query": {"redirects": [{"from": "Rost", "to": "Rost (Korrosion)"}],
                        "pages": {"21": {"pageid": 21, "ns": 0, "title": "Rost (Korrosion)"}}}}),
                ),
                Some("Rost (Korrosion)") => Reply::json(
                    200,
                    json!({"query": {"pages": {"21": {"pageid": 21, "ns": 0, "title": "Rost (Korrosion)",
                        "fullurl": "https://de.wikipedia.org/wiki/Rost_(Korrosion)"}}}}),
                ),
                Some("Ferris") => Reply::json(
                    200,
                    json!({"query": {"pages": {"-1": {"ns": 0, "title": "Ferris", "missing": ""}}}}),
                ),
                _ => Reply::json(200, json!({"query": {"pages": {}}})),
            },
            (_, Some("extracts")) => Reply::json(
                200,
                json!({"query": {"pages": {"21": {"pageid": 21, "title": "Rost (Korrosion)",
                    "extract": "Rost ist das Korrosionsprodukt von Eisen."}}}}),
            ),
            _ => Reply::json(
                200,
                json!({"error": {"code": "badparams", "info": "Unrecognized value"}}),
            ),
        }
    })
}

#[test]
fn wikipedia_as_an_agent_tool_searches_the_chosen_edition() {
    let server = wikipedia_server(false);
    let (_, evs, text) = run_agent(
        "Wikipedia",
        json!({"language": "de", "top_n": 2}),
        "wikipedia_search_0",
        json!({"query": "Rost"}),
        "(?s)Title: Rost \\(Korrosion\\).*URL: https://de.wikipedia.org/wiki/Rost_\\(Korrosion\\).*Korrosionsprodukt von Eisen",
        &[("CANVAS_WIKIPEDIA_BASE_URL", server.url("/{lang}"))],
    );
    assert_eq!(text, "Running the wikipedia_search_0 tool...FOUND IT");
    let seen = server.seen();
    let first = &seen[0];
    assert_eq!(first.method(), "GET");
    assert_eq!(param(first, "action").as_deref(), Some("query"));
    assert_eq!(param(first, "format").as_deref(), Some("json"));
    assert_eq!(param(first, "list").as_deref(), Some("search"));
    assert_eq!(param(first, "srsearch").as_deref(), Some("Rost"));
    assert_eq!(param(first, "srlimit").as_deref(), Some("2"));
    // The redirect was followed, the missing page skipped, one intro fetched.
    assert!(seen.iter().any(
        |s| param(s, "titles").as_deref() == Some("Rost (Korrosion)")
            && param(s, "prop").as_deref() == Some("info|pageprops")
    ));
    assert_eq!(
        seen.iter()
            .filter(|s| param(s, "prop").as_deref() == Some("extracts"))
            .count(),
        1
    );
    let chunks = reference_chunks(&evs);
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    assert_eq!(chunks[0]["document_name"], "Rost (Korrosion)");
    assert_eq!(
        chunks[0]["url"],
        "https://de.wikipedia.org/wiki/Rost_(Korrosion)"
    );
    assert_eq!(
        chunks[0]["content"],
        "Rost ist das Korrosionsprodukt von Eisen."
    );
}

#[test]
fn wikipedia_as_a_node_retries_a_rate_limit_then_reports_api_errors() {
    let server = wikipedia_server(true);
    let env = [("CANVAS_WIKIPEDIA_BASE_URL", server.url("/{lang}"))];
    let f = run_node(
        "Wikipedia",
        json!({"language": "de", "top_n": 2, "max_retries": 1, "delay_after_error": 0}),
        "Rost",
        &env,
    );
    let text = f["outputs"]["formalized_content"].as_str().unwrap();
    assert!(
        text.contains("└── Content:\nRost ist das Korrosionsprodukt von Eisen."),
        "{text}"
    );
    assert_eq!(server.seen()[0].path(), "/de/w/api.php");
    assert_eq!(
        param(&server.seen()[1], "srsearch").as_deref(),
        Some("Rost")
    );

    // The API's own error, every time: RAGFlow's library text in `_ERROR`.
    let failing = FakeServer::start(vec![Reply::json(
        200,
        json!({"error": {"code": "internal_api_error", "info": "Database down"}}),
    )]);
    let f = run_node(
        "Wikipedia",
        json!({"max_retries": 1, "delay_after_error": 0}),
        "Rost",
        &[("CANVAS_WIKIPEDIA_BASE_URL", failing.url("/{lang}"))],
    );
    assert_eq!(
        f["outputs"]["_ERROR"],
        "An unknown error occured: \"Database down\". Please report it on GitHub!"
    );
    assert_eq!(failing.seen().len(), 2, "one try and one retry");
    assert_eq!(failing.seen()[0].path(), "/en/w/api.php");
}

// ---------------------------------------------------------------------------------
// ArXiv

const ATOM: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query%3Dall%3Aattention" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=all:attention</title>
  <id>http://arxiv.org/api/x</id>
  <updated>2024-01-01T00:00:00-05:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">2</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">100</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/abs/1706.03762v7</id>
    <updated>2023-08-02T00:41:18Z</updated>
    <published>2017-06-12T17:57:34Z</published>
    <title>Attention Is All You
  Need</title>
    <summary>  The dominant sequence transduction models are based on complex recurrent networks.
</summary>
    <author><name>Ashish Vaswani</name></author>
    <link href="http://arxiv.org/abs/1706.03762v7" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/1706.03762v7" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
  <entry>
    <id>http://arxiv.org/abs/2001.00001v1</id>
    <title>Second &amp; last</title>
    <summary>Another abstract.</summary>
    <link title="pdf" href="http://arxiv.org/pdf/2001.00001v1" rel="related" type="application/pdf"/>
  </entry>
</feed>"#;

#[test]
fn arxiv_as_an_agent_tool_reads_the_atom_feed() {
    let server = FakeServer::start(vec![Reply::text(200, "application/atom+xml", ATOM)]);
    let (_, evs, text) = run_agent(
        "ArXiv",
        json!({"top_n": 1, "sort_by": "relevance"}),
        "arxiv_search_0",
        json!({"query": "all:attention"}),
        "(?s)Title: Attention Is All You\\s+Need.*URL: http://arxiv.org/pdf/1706.03762v7.*complex recurrent networks\\.",
        &[("CANVAS_ARXIV_BASE_URL", server.url(""))],
    );
    assert_eq!(text, "Running the arxiv_search_0 tool...FOUND IT");
    let req = &server.seen()[0];
    assert_eq!(req.path(), "/api/query");
    assert_eq!(param(req, "search_query").as_deref(), Some("all:attention"));
    assert_eq!(param(req, "sortBy").as_deref(), Some("relevance"));
    assert_eq!(param(req, "sortOrder").as_deref(), Some("descending"));
    assert_eq!(param(req, "start").as_deref(), Some("0"));
    assert_eq!(param(req, "max_results").as_deref(), Some("100"));
    // top_n 1: only the first entry is kept.
    let chunks = reference_chunks(&evs);
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0]["url"], "http://arxiv.org/pdf/1706.03762v7");
}

#[test]
fn arxiv_as_a_node_retries_a_rate_limit_and_reports_http_errors() {
    let server = FakeServer::start(vec![
        Reply::text(429, "text/plain", "Rate exceeded."),
        Reply::text(200, "application/atom+xml", ATOM),
    ]);
    let f = run_node(
        "ArXiv",
        json!({}),
        "attention",
        &[("CANVAS_ARXIV_BASE_URL", server.url(""))],
    );
    let text = f["outputs"]["formalized_content"].as_str().unwrap();
    assert!(text.contains("├── Title: Second & last"), "{text}");
    assert_eq!(server.seen().len(), 2, "the library tries the page again");
    assert_eq!(
        param(&server.seen()[1], "sortBy").as_deref(),
        Some("submittedDate")
    );

    let failing = FakeServer::start(vec![Reply::text(503, "text/plain", "down")]);
    let f = run_node(
        "ArXiv",
        json!({}),
        "attention",
        &[("CANVAS_ARXIV_BASE_URL", failing.url(""))],
    );
    let err = f["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.starts_with(&format!(
            "Page request resulted in HTTP 503 ({}/api/query?search_query=attention&",
            failing.url("")
        )),
        "{err}"
    );
    assert_eq!(
        failing.seen().len(),
        4,
        "one try and the library's 3 retries"
    );
}

// ---------------------------------------------------------------------------------
// PubMed

const ESEARCH: &str = r#"<?xml version="1.0" encoding="UTF-8" ?>
<!DOCTYPE eSearchResult PUBLIC "-//NLM//DTD esearch 20060628//EN" "https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20060628/esearch.dtd">
<eSearchResult><Count>2</Count><RetMax>2</RetMax><RetStart>0</RetStart><IdList>
<Id>38000001</Id>
<Id>38000002</Id>
</IdList><TranslationSet/><QueryTranslation>"aspirin"[MeSH Terms]</QueryTranslation></eSearchResult>"#;

const EFETCH: &str = r#"<?xml version="1.0" ?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">
<PubmedArticleSet>
<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">38000001</PMID>
<Article PubModel="Print"><Journal><JournalIssue CitedMedium="Internet"><Volume>9</Volume><Issue>2</Issue></JournalIssue><Title>BMJ</Title></Journal>
<ArticleTitle>Aspirin for <i>primary</i> prevention</ArticleTitle><Pagination><MedlinePgn>e1</MedlinePgn></Pagination>
<Abstract><AbstractText>Aspirin lowers risk.</AbstractText></Abstract>
<AuthorList><Author><LastName>Smith</LastName><ForeName>Ann</ForeName></Author></AuthorList></Article></MedlineCitation>
<PubmedData><ArticleIdList><ArticleId IdType="doi">10.1136/bmj.1</ArticleId></ArticleIdList></PubmedData></PubmedArticle>
<PubmedArticle><MedlineCitation><PMID>38000002</PMID><Article><ArticleTitle>Second study</ArticleTitle></Article></MedlineCitation></PubmedArticle>
</PubmedArticleSet>"#;

fn pubmed_server(limit_first: bool) -> FakeServer {
    FakeServer::with(move |req: &Seen, n| {
        if limit_first && n == 1 {
            let mut r = Reply::json(
                429,
                json!({"error": "API rate limit exceeded", "count": "4"}),
            );
            r.headers.push(("Retry-After".into(), "1".into()));
            return r;
        }
        match req.path() {
            "/esearch.fcgi" => Reply::text(200, "text/xml", ESEARCH),
            "/efetch.fcgi" => Reply::text(200, "text/xml", EFETCH),
            _ => Reply::text(404, "text/plain", "no"),
        }
    })
}

#[test]
fn pubmed_as_an_agent_tool_searches_then_fetches() {
    let server = pubmed_server(false);
    let (_, evs, text) = run_agent(
        "PubMed",
        json!({"top_n": 2, "email": "me@example.org"}),
        "pubmed_search_0",
        json!({"query": "aspirin"}),
        "(?s)URL: https://pubmed.ncbi.nlm.nih.gov/38000001.*Title: Aspirin for primary prevention\nAuthors: Ann Smith\nJournal: BMJ\nVolume: 9\nIssue: 2\nPages: e1\nDOI: 10.1136/bmj.1\nAbstract: Aspirin lowers risk\\.",
        &[("CANVAS_PUBMED_BASE_URL", server.url(""))],
    );
    assert_eq!(text, "Running the pubmed_search_0 tool...FOUND IT");
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path(), "/esearch.fcgi");
    assert_eq!(param(&seen[0], "db").as_deref(), Some("pubmed"));
    assert_eq!(param(&seen[0], "term").as_deref(), Some("aspirin"));
    assert_eq!(param(&seen[0], "retmax").as_deref(), Some("2"));
    assert_eq!(param(&seen[0], "email").as_deref(), Some("me@example.org"));
    assert_eq!(seen[1].path(), "/efetch.fcgi");
    assert_eq!(param(&seen[1], "id").as_deref(), Some("38000001,38000002"));
    assert_eq!(param(&seen[1], "retmode").as_deref(), Some("xml"));
    assert_eq!(reference_chunks(&evs).len(), 2);
}

#[test]
fn pubmed_as_a_node_waits_out_a_rate_limit_and_reports_bad_requests() {
    let server = pubmed_server(true);
    let f = run_node(
        "PubMed",
        json!({}),
        "aspirin",
        &[("CANVAS_PUBMED_BASE_URL", server.url(""))],
    );
    let text = f["outputs"]["formalized_content"].as_str().unwrap();
    assert!(text.contains("├── Title: Second study"), "{text}");
    let seen = server.seen();
    assert_eq!(
        seen.len(),
        3,
        "esearch tried again after the 429, then efetch"
    );
    assert_eq!(
        param(&seen[1], "email").as_deref(),
        Some("A.N.Other@example.com")
    );

    let failing = FakeServer::start(vec![Reply::text(400, "text/plain", "bad")]);
    let f = run_node(
        "PubMed",
        json!({}),
        "aspirin",
        &[("CANVAS_PUBMED_BASE_URL", failing.url(""))],
    );
    assert_eq!(f["outputs"]["_ERROR"], "HTTP Error 400: Bad Request");
    assert_eq!(failing.seen().len(), 1, "a 400 is not tried again");
}

// ---------------------------------------------------------------------------------
// DuckDuckGo

const DDG_PAGE: &str = r#"<!DOCTYPE html><html><body><div id="links" class="results">
<div class="result results_links results_links_deep result--ad"><div class="links_main links_deep result__body">
<h2 class="result__title"><a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=ads.example">Sponsored</a></h2>
<a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=ads.example">Buy things</a></div></div>
<div class="result results_links results_links_deep web-result"><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="https://www.rust-lang.org/">Rust Programming Language</a></h2>
<div class="result__extras"><div class="result__extras__url"><a class="result__url" href="https://www.rust-lang.org/">www.rust-lang.org</a></div></div>
<a class="result__snippet" href="https://www.rust-lang.org/">A language empowering <b>everyone</b> to build reliable software.</a></div></div>
</div></body></html>"#;

#[test]
fn duckduckgo_as_an_agent_tool_posts_the_html_form_and_ignores_channel() {
    let server = FakeServer::start(vec![Reply::text(200, "text/html", DDG_PAGE)]);
    // `channel: news` does not switch to news (RAGFlow checks `topic`).
    let (_, evs, text) = run_agent(
        "DuckDuckGo",
        json!({}),
        "duckduckgo_search_0",
        json!({"query": "rust language", "channel": "news"}),
        "(?s)Title: Rust Programming Language.*URL: https://www.rust-lang.org/.*empowering everyone to build",
        &[("CANVAS_DUCKDUCKGO_BASE_URL", server.url(""))],
    );
    assert_eq!(text, "Running the duckduckgo_search_0 tool...FOUND IT");
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method(), "POST");
    assert_eq!(seen[0].path(), "/html");
    let form = pairs(&seen[0].body);
    let get = |k: &str| form.iter().find(|(x, _)| x == k).map(|(_, v)| v.as_str());
    assert_eq!(get("q"), Some("rust language"));
    assert_eq!(get("kl"), Some("wt-wt"));
    assert_eq!(get("s"), Some("0"));
    assert_eq!(reference_chunks(&evs).len(), 1, "the ad is left out");
}

#[test]
fn duckduckgo_as_a_node_sets_json_and_reports_rate_limits() {
    let server = FakeServer::start(vec![
        Reply::text(202, "text/html", "<html>please wait</html>"),
        Reply::text(200, "text/html", DDG_PAGE),
    ]);
    let env = [("CANVAS_DUCKDUCKGO_BASE_URL", server.url(""))];
    let f = run_node(
        "DuckDuckGo",
        json!({"max_retries": 1, "delay_after_error": 0}),
        "rust",
        &env,
    );
    assert_eq!(
        f["outputs"]["json"],
        json!([{"title": "Rust Programming Language", "href": "https://www.rust-lang.org/",
            "body": "A language empowering everyone to build reliable software."}])
    );
    assert_eq!(server.seen().len(), 2);

    let limited = FakeServer::start(vec![Reply::text(202, "text/html", "<html>wait</html>")]);
    let f = run_node(
        "DuckDuckGo",
        json!({}),
        "rust",
        &[("CANVAS_DUCKDUCKGO_BASE_URL", limited.url(""))],
    );
    assert_eq!(
        f["outputs"]["_ERROR"],
        format!("{} 202 Ratelimit", limited.url("/html"))
    );
}

#[test]
fn a_failed_search_reaches_the_model_as_ragflow_words_it() {
    let limited = FakeServer::start(vec![Reply::text(429, "text/html", "<html>wait</html>")]);
    let (_, _, text) = run_agent(
        "DuckDuckGo",
        json!({}),
        "duckduckgo_search_0",
        json!({"query": "rust"}),
        "DuckDuckGo error: http://127\\.0\\.0\\.1:[0-9]+/html 429 Ratelimit",
        &[("CANVAS_DUCKDUCKGO_BASE_URL", limited.url(""))],
    );
    assert_eq!(text, "Running the duckduckgo_search_0 tool...FOUND IT");
}

// ---------------------------------------------------------------------------------
// GoogleScholar

const SCHOLAR_PAGE: &str = r#"<html><body><div id="gs_res_glb" data-sva="/citations?hl=en&amp;info={id}"></div>
<div id="gs_res_ccl_mid">
<div class="gs_r gs_or gs_scl" data-cid="Q1" data-rp="0"><div class="gs_ri">
<h3 class="gs_rt"><a id="Q1" href="https://example.org/paper">Deep <b>residual</b> learning</a></h3>
<div class="gs_a">K He, X Zhang, S Ren - Proceedings of the IEEE, 2016 - openaccess.thecvf.com</div>
<div class="gs_rs">Deeper neural networks are more difficult to train.</div>
<div class="gs_fl"><a href="/scholar?cites=1&amp;hl=en">Cited by 200000</a></div></div></div>
</div></body></html>"#;

#[test]
fn google_scholar_as_an_agent_tool_scrapes_the_results_page() {
    let server = FakeServer::start(vec![Reply::text(200, "text/html", SCHOLAR_PAGE)]);
    let (_, _, text) = run_agent(
        "GoogleScholar",
        json!({"year_low": 2015, "sort_by": "date", "patents": false}),
        "google_scholar_search_0",
        json!({"query": "residual learning"}),
        "(?s)Title: Deep residual learning.*URL: https://example.org/paper.*author: K He,X Zhang,S Ren\n Abstract: Deeper neural networks",
        &[("CANVAS_GOOGLESCHOLAR_BASE_URL", server.url(""))],
    );
    assert_eq!(text, "Running the google_scholar_search_0 tool...FOUND IT");
    assert_eq!(
        server.seen()[0].target(),
        "/scholar?hl=en&q=residual%20learning&as_ylo=2015&as_vis=0&as_sdt=1,33&scisbd=1"
    );
}

#[test]
fn google_scholar_as_a_node_retries_and_fails_on_captcha() {
    let server = FakeServer::start(vec![
        Reply::text(429, "text/html", "<html>sorry</html>"),
        Reply::text(200, "text/html", SCHOLAR_PAGE),
    ]);
    let f = run_node(
        "GoogleScholar",
        json!({"top_n": 1}),
        "resnet",
        &[("CANVAS_GOOGLESCHOLAR_BASE_URL", server.url(""))],
    );
    let j = &f["outputs"]["json"];
    assert_eq!(j[0]["bib"]["title"], "Deep residual learning");
    assert_eq!(j[0]["bib"]["venue"], "Proceedings of the IEEE");
    assert_eq!(j[0]["bib"]["pub_year"], "2016");
    assert_eq!(j[0]["num_citations"], 200000);
    assert_eq!(server.seen().len(), 2);

    let captcha = FakeServer::start(vec![Reply::text(
        200,
        "text/html",
        "<html><form id=\"captcha-form\"></form></html>",
    )]);
    let f = run_node(
        "GoogleScholar",
        json!({}),
        "resnet",
        &[("CANVAS_GOOGLESCHOLAR_BASE_URL", captcha.url(""))],
    );
    let err = f["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.starts_with("Cannot Fetch from Google Scholar."),
        "{err}"
    );
    assert_eq!(f["outputs"]["json"], Value::Null);
}

// ---------------------------------------------------------------------------------
// Crawler

const ARTICLE: &str = r#"<html><head><title>T</title><script>var x = 1;</script></head><body>
<nav><a href="/">Home</a></nav>
<h1>Release notes</h1>
<p>Version <b>2.0</b> is out. See <a href="/docs/intro">the docs</a>.</p>
<ul><li>Faster</li><li>Smaller</li></ul>
<script>alert(1)</script>
</body></html>"#;

fn crawl_server() -> FakeServer {
    FakeServer::with(|req: &Seen, _| match req.path() {
        "/old" => Reply::redirect("/article"),
        "/article" => Reply::text(200, "text/html; charset=utf-8", ARTICLE),
        _ => Reply::text(
            404,
            "text/html",
            "<html><body><p>Not here</p></body></html>",
        ),
    })
}

#[test]
fn crawler_as_an_agent_tool_gives_the_page_as_markdown() {
    let server = crawl_server();
    let url = server.url("/old");
    let (_, _, text) = run_agent(
        "Crawler",
        json!({}),
        "web_crawler_0",
        json!({"query": url}),
        "(?s)# Release notes\n\nVersion \\*\\*2.0\\*\\* is out. See \\[the docs\\]\\(http://127.0.0.1:[0-9]+/docs/intro\\)\\.\n\n- Faster\n- Smaller",
        &[],
    );
    assert_eq!(text, "Running the web_crawler_0 tool...FOUND IT");
    let paths: Vec<String> = server.seen().iter().map(|s| s.path().to_string()).collect();
    assert_eq!(paths, ["/old", "/article"], "the redirect is followed");
}

#[test]
fn crawler_as_a_node_extracts_html_or_text_and_refuses_private_urls() {
    let server = crawl_server();
    let url = server.url("/article");
    let f = run_node("Crawler", json!({"extract_type": "content"}), &url, &[]);
    assert_eq!(
        f["outputs"]["formalized_content"],
        "Home\n# Release notes\nVersion 2.0 is out. See the docs.\nFaster\nSmaller"
    );
    let f = run_node("Crawler", json!({"extract_type": "html"}), &url, &[]);
    let html = f["outputs"]["formalized_content"].as_str().unwrap();
    assert!(html.starts_with("<body>"), "{html}");
    assert!(
        html.contains("<a href=\"/docs/intro\">the docs</a>"),
        "{html}"
    );
    assert!(!html.contains("alert") && !html.contains("var x"), "{html}");

    // Without --allow-private-network the loopback server is refused.
    let (ran, evs) = run(node_flow("Crawler", json!({})), "node.json", &url, &[], &[]);
    let f = finished(&ran.code(1), &evs);
    let err = f["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.starts_with("URL not valid: refused to connect"),
        "{err}"
    );
    assert!(err.contains("--allow-private-network"), "{err}");
    assert_eq!(server.seen().len(), 2, "the refused request never left");
}
