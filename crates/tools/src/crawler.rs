//! Crawler (`agent/tools/crawler.py`, `web_crawler`): fetches the page at the URL the
//! canvas or the model gives (after the SSRF check, every redirect hop checked too)
//! and gives it as `extract_type` says: `markdown` (default), `html` (the body with
//! scripts, styles and presentation attributes removed) or `content` (the readable
//! text, Invoke's HTML-to-text reduction). The result is `formalized_content`.
//!
//! RAGFlow renders the page with crawl4ai's headless browser; this build fetches it
//! over HTTP without running scripts, so pages built by JavaScript come out emptier.
//! Other differences: `content` is the page text where crawl4ai gives its extraction
//! strategy's output (nothing without one); a fetch failure sets `_ERROR` ("An
//! unexpected error occurred: …") where crawl4ai usually yields an empty result; an
//! unsafe URL gives `URL not valid: <why>` (RAGFlow: `URL not valid`); crawl4ai's
//! remote server mode (`CRAWL4AI_SERVER_URL`) is not offered.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;
use scraper::{ElementRef, Html, Node};
use serde_json::{Value, json};

use super::html::html_sections;
use super::net::{ClientOptions, NetError, describe};
use super::web;
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::Object;

/// How long one page may take.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Pages above this size are cut (bytes of text).
const MAX_BODY: usize = 20 * 1024 * 1024;

/// Elements whose content is never page text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "head", "iframe", "svg", "canvas", "object",
    "embed", "link", "meta", "title", "button", "select", "option", "input", "textarea", "form",
];

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    web::check_valid_value(
        params,
        "extract_type",
        "Type of content from the crawler",
        &["html", "markdown", "content"],
    )?;
    Ok(Box::new(Crawler {
        meta: ToolMeta {
            name: "web_crawler",
            description: "This tool can be used to crawl a web page and return its content as HTML, Markdown, or the extracted main text.",
            parameters: vec![Param::string(
                "query",
                "The absolute URL (including the http:// or https:// scheme) of the web page to crawl.",
                "{sys.query}",
            )],
        },
    }))
}

/// The Crawler tool.
pub struct Crawler {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for Crawler {
    fn class(&self) -> &'static str {
        "Crawler"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn default_outputs(&self) -> &'static [&'static str] {
        &["formalized_content"]
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let url = web::query_arg(args).unwrap_or_default();
        let url = url.trim();
        if url.is_empty() {
            call.set_output("formalized_content", json!(""));
            return Ok(Some(json!("")));
        }
        let net = call.env().net;
        let not_valid = |why: String| {
            let msg = format!("URL not valid: {why}");
            call.set_output("_ERROR", json!(msg));
            Ok(Some(json!(msg)))
        };
        let target = match net.check_url(url).await {
            Ok(u) => u,
            Err(e) => return not_valid(e.to_string()),
        };
        let proxy = call
            .param("proxy")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string);
        if let Some(p) = &proxy {
            if let Err(e) = net.check_url(p).await {
                return not_valid(format!("proxy: {e}"));
            }
        }
        let opts = ClientOptions {
            timeout: Some(TIMEOUT),
            proxy,
            follow_redirects: true,
            user_agent: Some(web::USER_AGENT.to_string()),
        };
        let client = match net.client(&opts) {
            Ok(c) => c,
            Err(e) => return not_valid(e.to_string()),
        };
        let failed = |e: &reqwest::Error| match NetError::find_in(e) {
            Some(refusal) => Err(refusal.to_string()),
            None => Ok(describe(e)),
        };
        let page = async {
            let resp = client.get(target.clone()).send().await?;
            let final_url = resp.url().clone();
            let html_like = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_none_or(|ct| ct.contains("html") || ct.contains("xml"));
            let body = resp.text().await?;
            Ok::<_, reqwest::Error>((final_url, html_like, body))
        }
        .await;
        let (final_url, html_like, mut body) = match page {
            Ok(p) => p,
            Err(e) => {
                return match failed(&e) {
                    Err(refusal) => not_valid(refusal),
                    Ok(why) => {
                        let msg = format!("An unexpected error occurred: {why}");
                        call.set_output("_ERROR", json!(msg));
                        Ok(Some(json!(msg)))
                    }
                };
            }
        };
        if body.len() > MAX_BODY {
            let mut cut = MAX_BODY;
            while !body.is_char_boundary(cut) {
                cut -= 1;
            }
            body.truncate(cut);
        }
        let text = if !html_like {
            body
        } else {
            match call.param_str("extract_type", "markdown") {
                "html" => cleaned_html(&body),
                "content" => html_sections(&body).join("\n"),
                _ => markdown(&body, &final_url),
            }
        };
        call.set_output("formalized_content", json!(text));
        Ok(Some(json!(text)))
    }
}

/// Attributes kept by [`cleaned_html`].
const KEPT_ATTRS: &[&str] = &["href", "src", "alt", "title", "colspan", "rowspan"];
/// Elements serialised without a closing tag.
const VOID: &[&str] = &["area", "br", "col", "hr", "img", "source", "track", "wbr"];

/// The page body without scripts, styles, forms and comments, attributes reduced to
/// the meaningful ones (crawl4ai's `cleaned_html`).
fn cleaned_html(html: &str) -> String {
    let doc = Html::parse_document(html);
    let root = body(&doc);
    let mut out = String::new();
    // (node, closing): explicit stack, page depth is attacker-controlled.
    let mut stack = vec![(*root, false)];
    while let Some((node, closing)) = stack.pop() {
        match node.value() {
            Node::Text(t) if !closing => out.push_str(&escape(t)),
            Node::Element(e) => {
                let name = e.name();
                if closing {
                    out.push_str(&format!("</{name}>"));
                    continue;
                }
                if SKIPPED.contains(&name) {
                    continue;
                }
                out.push('<');
                out.push_str(name);
                for (k, v) in e.attrs() {
                    if KEPT_ATTRS.contains(&k) {
                        out.push_str(&format!(" {k}=\"{}\"", escape(v).replace('"', "&quot;")));
                    }
                }
                out.push('>');
                if VOID.contains(&name) {
                    continue;
                }
                stack.push((node, true));
                let mut child = node.last_child();
                while let Some(c) = child {
                    stack.push((c, false));
                    child = c.prev_sibling();
                }
            }
            _ => {}
        }
    }
    out
}

/// The page's `<body>`, else the whole document.
fn body(doc: &Html) -> ElementRef<'_> {
    doc.root_element()
        .children()
        .filter_map(ElementRef::wrap)
        .find(|e| e.value().name() == "body")
        .unwrap_or(doc.root_element())
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One step of the markdown walk.
enum Step<N> {
    Enter(N),
    Exit(N),
}

/// The page as markdown: headings, paragraphs, lists, links and images (made
/// absolute against the page URL), emphasis, code, quotes, rules and simple tables.
fn markdown(html: &str, base: &Url) -> String {
    let doc = Html::parse_document(html);
    let root = body(&doc);
    let mut md = Markdown {
        out: String::new(),
        lists: Vec::new(),
        pre: 0,
        links: Vec::new(),
        header_cells: 0,
    };
    // Explicit stack: page depth is attacker-controlled.
    let mut stack = vec![Step::Enter(*root)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Enter(node) => match node.value() {
                Node::Text(t) => md.text(t),
                Node::Element(_) => {
                    let Some(e) = ElementRef::wrap(node) else {
                        continue;
                    };
                    if !md.enter(&e, base) {
                        continue;
                    }
                    stack.push(Step::Exit(node));
                    let mut child = node.last_child();
                    while let Some(c) = child {
                        stack.push(Step::Enter(c));
                        child = c.prev_sibling();
                    }
                }
                _ => {}
            },
            Step::Exit(node) => {
                if let Some(e) = ElementRef::wrap(node) {
                    md.exit(&e);
                }
            }
        }
    }
    tidy(&md.out)
}

/// The markdown writer's state.
struct Markdown {
    out: String,
    /// Open lists: ordered?, next number.
    lists: Vec<(bool, usize)>,
    pre: usize,
    /// Open links' targets.
    links: Vec<String>,
    /// `th` cells of the current table row.
    header_cells: usize,
}

impl Markdown {
    fn at_line_start(&self) -> bool {
        self.out.is_empty() || self.out.ends_with('\n')
    }

    fn block(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push_str(if self.out.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            });
        }
    }

    fn line(&mut self) {
        if !self.at_line_start() {
            self.out.push('\n');
        }
    }

    fn text(&mut self, t: &str) {
        if self.pre > 0 {
            self.out.push_str(t);
            return;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        if words.is_empty() {
            if !t.is_empty() && !self.at_line_start() && !self.out.ends_with(' ') {
                self.out.push(' ');
            }
            return;
        }
        if t.starts_with(char::is_whitespace) && !self.at_line_start() && !self.out.ends_with(' ') {
            self.out.push(' ');
        }
        self.out.push_str(&words.join(" "));
        if t.ends_with(char::is_whitespace) {
            self.out.push(' ');
        }
    }

    /// Opening of an element; `false` when its content is skipped.
    fn enter(&mut self, e: &ElementRef<'_>, base: &Url) -> bool {
        let name = e.value().name();
        if SKIPPED.contains(&name) {
            return false;
        }
        let attr = |k: &str| e.value().attr(k).unwrap_or("").trim().to_string();
        let abs = |u: &str| {
            base.join(u)
                .map_or_else(|_| u.to_string(), |x| x.to_string())
        };
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.block();
                let n = name[1..].parse::<usize>().unwrap_or(1);
                self.out.push_str(&"#".repeat(n));
                self.out.push(' ');
            }
            "p" | "blockquote" | "table" | "dl" | "figure" => {
                self.block();
                if name == "blockquote" {
                    self.out.push_str("> ");
                }
            }
            "div" | "section" | "article" | "header" | "footer" | "main" | "nav" | "aside"
            | "tr" | "dt" | "dd" | "figcaption" => {
                self.line();
                if name == "tr" {
                    self.header_cells = 0;
                }
            }
            "ul" | "ol" => {
                if self.lists.is_empty() {
                    self.block();
                } else {
                    self.line();
                }
                self.lists.push((name == "ol", 1));
            }
            "li" => {
                self.line();
                let depth = self.lists.len().max(1) - 1;
                self.out.push_str(&"  ".repeat(depth));
                match self.lists.last_mut() {
                    Some((true, n)) => {
                        self.out.push_str(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => self.out.push_str("- "),
                }
            }
            "br" => self.out.push('\n'),
            "hr" => {
                self.block();
                self.out.push_str("---\n\n");
            }
            "pre" => {
                self.block();
                self.out.push_str("```\n");
                self.pre += 1;
            }
            "code" if self.pre == 0 => self.out.push('`'),
            "strong" | "b" if self.pre == 0 => self.out.push_str("**"),
            "em" | "i" if self.pre == 0 => self.out.push('*'),
            "a" => {
                let href = attr("href");
                if href.is_empty() || href.starts_with("javascript:") {
                    self.links.push(String::new());
                } else {
                    self.out.push('[');
                    self.links.push(abs(&href));
                }
            }
            "img" => {
                let src = attr("src");
                if !src.is_empty() && !src.starts_with("data:") {
                    self.out
                        .push_str(&format!("![{}]({})", attr("alt"), abs(&src)));
                }
            }
            "th" | "td" => {
                if name == "th" {
                    self.header_cells += 1;
                }
                self.out.push_str("| ");
            }
            _ => {}
        }
        true
    }

    fn exit(&mut self, e: &ElementRef<'_>) {
        let name = e.value().name();
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "p" | "blockquote" | "table" | "dl"
            | "figure" => self.block(),
            "ul" | "ol" => {
                self.lists.pop();
                if self.lists.is_empty() {
                    self.block();
                }
            }
            "pre" => {
                self.pre = self.pre.saturating_sub(1);
                self.line();
                self.out.push_str("```");
                self.block();
            }
            "code" if self.pre == 0 => self.out.push('`'),
            "strong" | "b" if self.pre == 0 => self.out.push_str("**"),
            "em" | "i" if self.pre == 0 => self.out.push('*'),
            "a" => {
                if let Some(href) = self.links.pop().filter(|h| !h.is_empty()) {
                    let trimmed = self.out.trim_end().len();
                    self.out.truncate(trimmed);
                    self.out.push_str(&format!("]({href})"));
                }
            }
            "th" | "td" => self.out.push(' '),
            "tr" => {
                self.out.push('|');
                if self.header_cells > 0 {
                    self.out.push('\n');
                    self.out.push_str(&"|---".repeat(self.header_cells));
                    self.out.push('|');
                }
            }
            _ => {}
        }
    }
}

/// Trailing spaces removed, runs of blank lines folded to one.
fn tidy(s: &str) -> String {
    let mut out = String::new();
    let mut blank = 0;
    for line in s.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}
