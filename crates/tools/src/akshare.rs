//! AkShare (`agent/tools/akshare.py`, function `akshare_stock_news`): the latest news
//! of a Chinese A-share stock from East Money, through the search endpoint that
//! `akshare.stock_news_em` calls (`GET /search/jsonp?cb=…&param=<JSON>`, a JSONP
//! answer). Articles are cleaned as akshare cleans them (`<em>` highlight tags, ideographic
//! spaces and CRLFs removed), the first `top_n` kept and formatted as RAGFlow does:
//! an HTML link and Chinese labels, blank-line separated, in `formalized_content`.
//!
//! Differences from RAGFlow: no article gives an empty result (akshare's DataFrame
//! step fails on an empty list); an answer that is not the expected JSONP fails with a
//! description of it rather than a pandas/json exception text. `CANVAS_AKSHARE_BASE_URL`
//! overrides the host.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::net::describe;
use super::web::{failed, http_client};
use super::{Call, Param, Tool, ToolMeta, with_retries};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_str};

const BASE_VAR: &str = "CANVAS_AKSHARE_BASE_URL";
const HOST: &str = "https://search-api-web.eastmoney.com";
/// The JSONP callback name akshare sends.
const CALLBACK: &str = "jQuery3510875346244069884_1668256937995";
const TIMEOUT: Duration = Duration::from_secs(15);

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    let top_n = match params.get("top_n") {
        None => 10,
        Some(v) => match v.as_u64().filter(|n| *n > 0 && !v.is_f64()) {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => {
                return Err(BuildError::Params(format!(
                    "Top N {} not supported, should be positive integer",
                    py_str(v)
                )));
            }
        },
    };
    Ok(Box::new(AkShare {
        meta: ToolMeta {
            name: "akshare_stock_news",
            description: "AkShare retrieves the latest news articles for a given Chinese A-share stock from East Money (东方财富).",
            parameters: vec![Param::string(
                "query",
                "The stock symbol/code to fetch news for, e.g. '600519'.",
                "{sys.query}",
            )],
        },
        top_n,
    }))
}

/// The AkShare tool.
pub struct AkShare {
    meta: ToolMeta,
    top_n: usize,
}

/// The `param` query value of `stock_news_em`.
fn search_param(symbol: &str, page_size: usize) -> String {
    json!({
        "uid": "",
        "keyword": symbol,
        "type": ["cmsArticleWebOld"],
        "client": "web",
        "clientType": "web",
        "clientVersion": "curr",
        "param": {"cmsArticleWebOld": {
            "searchScope": "default",
            "sort": "default",
            "pageIndex": 1,
            "pageSize": page_size,
            "preTag": "<em>",
            "postTag": "</em>",
        }},
    })
    .to_string()
}

/// akshare's clean-up of a title or content.
fn clean(s: &str) -> String {
    s.replace("(<em>", "")
        .replace("</em>)", "")
        .replace("<em>", "")
        .replace("</em>", "")
}

/// The articles of a JSONP answer.
fn parse_articles(body: &str) -> Result<Vec<Value>, String> {
    let start = body.find('(').map(|i| i + 1).unwrap_or(0);
    let end = body
        .rfind(')')
        .filter(|e| *e >= start)
        .unwrap_or(body.len());
    let v: Value = serde_json::from_str(body[start..end].trim()).map_err(|e| {
        let head: String = body.chars().take(200).collect();
        format!("unexpected answer from East Money ({e}): {head}")
    })?;
    let list = v
        .get("result")
        .ok_or("'result'")?
        .get("cmsArticleWebOld")
        .ok_or("'cmsArticleWebOld'")?;
    match list {
        Value::Array(a) => Ok(a.clone()),
        Value::Null => Ok(Vec::new()),
        _ => Err("unexpected answer from East Money: cmsArticleWebOld is not a list".into()),
    }
}

/// RAGFlow's text for the first `top_n` articles.
fn format_articles(articles: &[Value], top_n: usize) -> String {
    let text = |a: &Value, k: &str| a.get(k).map(py_str).unwrap_or_default();
    articles
        .iter()
        .take(top_n)
        .map(|a| {
            let content = clean(&text(a, "content"))
                .replace('\u{3000}', "")
                .replace("\r\n", " ");
            format!(
                "<a href=\"{}\">{}</a>\n 新闻内容: {} \n发布时间:{} \n文章来源: {}",
                text(a, "url"),
                clean(&text(a, "title")),
                content,
                text(a, "date"),
                text(a, "mediaName")
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

impl AkShare {
    async fn attempt(&self, call: &Call<'_>, symbol: &str) -> Result<String, String> {
        let env = call.env();
        let url = format!("{}/search/jsonp", env.base_url(BASE_VAR, HOST));
        let client = http_client(call, &url, TIMEOUT).await?;
        let param = search_param(symbol, self.top_n.max(10));
        let res = client
            .get(&url)
            .query(&[
                ("cb", CALLBACK),
                ("param", param.as_str()),
                ("_", "1668256937996"),
            ])
            .send()
            .await
            .map_err(|e| describe(&e))?;
        let status = res.status().as_u16();
        let body = res.text().await.map_err(|e| describe(&e))?;
        if !(200..300).contains(&status) {
            let head: String = body.chars().take(200).collect();
            return Err(format!("East Money answered HTTP {status}: {head}"));
        }
        Ok(format_articles(&parse_articles(&body)?, self.top_n))
    }
}

#[async_trait]
impl Tool for AkShare {
    fn class(&self) -> &'static str {
        "AkShare"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[BASE_VAR]
    }

    fn thoughts(&self, args: &Object) -> String {
        let q = args
            .get("query")
            .map(py_str)
            .unwrap_or_else(|| "-_-!".into());
        format!("Looking up the latest stock news for: {q}")
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let symbol = args.get("query").map(py_str).unwrap_or_default();
        if symbol.is_empty() {
            call.set_output("formalized_content", json!(""));
            return Ok(Some(json!("")));
        }
        match with_retries(call, || self.attempt(call, &symbol)).await {
            Ok(text) => {
                call.set_output("formalized_content", json!(text));
                Ok(Some(json!(text)))
            }
            Err(e) => failed(call, "AkShare", e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonp_articles_are_cleaned_and_formatted() {
        let body = format!(
            "{CALLBACK}({})",
            json!({"code": 0, "result": {"cmsArticleWebOld": [
                {"date": "2024-06-01 09:30:00", "mediaName": "证券时报", "code": "1",
                 "title": "<em>贵州茅台</em>发布公告", "content": "公司\u{3000}(<em>600519</em>)公告\r\n全文",
                 "url": "http://finance.eastmoney.com/a/1.html", "image": ""},
                {"date": "2024-06-02 10:00:00", "mediaName": "新华社", "title": "第二条",
                 "content": "内容", "url": "http://x/2"}]}})
        );
        let articles = parse_articles(&body).unwrap();
        assert_eq!(articles.len(), 2);
        assert_eq!(
            format_articles(&articles, 1),
            "<a href=\"http://finance.eastmoney.com/a/1.html\">贵州茅台发布公告</a>\n 新闻内容: 公司600519公告 全文 \n发布时间:2024-06-01 09:30:00 \n文章来源: 证券时报"
        );
        assert_eq!(format_articles(&articles, 5).matches("<a href=").count(), 2);
        assert!(
            format_articles(&articles, 5).contains(
                "</a>\n 新闻内容: 内容 \n发布时间:2024-06-02 10:00:00 \n文章来源: 新华社"
            )
        );
    }

    #[test]
    fn bad_answers_fail_with_a_reason() {
        assert!(
            parse_articles("<html>blocked</html>")
                .unwrap_err()
                .starts_with("unexpected answer from East Money")
        );
        assert_eq!(parse_articles("cb({\"code\": 1})").unwrap_err(), "'result'");
        assert!(
            parse_articles("cb({\"result\": {\"cmsArticleWebOld\": null}})")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn check_requires_a_positive_top_n() {
        let p: Object = serde_json::from_value(json!({"top_n": -1})).unwrap();
        assert_eq!(
            build(&p).err().unwrap().to_string(),
            "Top N -1 not supported, should be positive integer"
        );
    }
}
