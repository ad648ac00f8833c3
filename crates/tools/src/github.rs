//! GitHub (`github_search`, `agent/tools/github.py`, `llm-and-tools.md` §7.2): repository
//! search through `GET /search/repositories`, most stars first. Each repository becomes
//! a reference chunk "description + stars".
//!
//! As RAGFlow, the query goes into the URL as written (only what a URL cannot hold is
//! percent-encoded). Ours: a `GITHUB_TOKEN` in the environment is sent as a bearer token
//! (RAGFlow always asks unauthenticated, with GitHub's low rate limit), and when GitHub
//! answers without `items` its `message` is the error text (RAGFlow shows `'items'`).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::reference::Found;
use super::web::{
    check_positive_integer, failed, http_client, input_text, publish, send_answer, text_field,
};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::template::plain_text;
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_str, truthy};

const BASE_VAR: &str = "CANVAS_GITHUB_BASE_URL";
const BASE_DEFAULT: &str = "https://api.github.com";
/// RAGFlow sets none; a hung connection must not hold the run forever.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Build GitHub from its DSL parameters (RAGFlow's `check()`).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    let top_n = check_positive_integer(params, "top_n", "Top N")?.unwrap_or(10);
    Ok(Box::new(GitHub {
        meta: ToolMeta {
            name: "github_search",
            description: "GitHub repository search is a feature that enables users to find specific repositories on the GitHub platform. This search functionality allows users to locate projects, codebases, and other content hosted on GitHub based on various criteria.",
            parameters: vec![Param::string(
                "query",
                "The search keywords to execute with GitHub. The keywords should be the most important words/terms(includes synonyms) from the original request.",
                "{sys.query}",
            )],
        },
        top_n,
    }))
}

/// The GitHub tool.
pub struct GitHub {
    meta: ToolMeta,
    top_n: i64,
}

#[async_trait]
impl Tool for GitHub {
    crate::tool_facts!("GitHub", outputs: ["formalized_content", "json"], env: ["GITHUB_TOKEN", BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        format!(
            "Scanning GitHub repos related to `{}`.",
            input_text(args, "query")
        )
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let Some(query) = args.get("query").filter(|v| truthy(v)) else {
            call.set_output("formalized_content", json!(""));
            return Ok(Some(json!("")));
        };
        let base = call.env().base_url(BASE_VAR, BASE_DEFAULT);
        let url = search_url(&base, &plain_text(query), self.top_n);
        let client = match http_client(call, &url, TIMEOUT).await {
            Ok(c) => c,
            Err(e) => return failed(call, "GitHub", e),
        };
        let token = call.env().var("GITHUB_TOKEN").map(str::to_string);
        let res = super::with_retries(call, || async {
            let mut req = client
                .get(&url)
                .header("Content-Type", "application/vnd.github+json")
                .header("X-GitHub-Api-Version", "2022-11-28")
                .header("User-Agent", "canvas");
            if let Some(t) = &token {
                req = req.bearer_auth(t);
            }
            items(&send_answer(req).await?.json()?)
        })
        .await;
        match res {
            Ok(items) => publish(call, items, found),
            Err(e) => failed(call, "GitHub", e),
        }
    }
}

/// RAGFlow's URL, the query concatenated as written.
fn search_url(base: &str, query: &str, top_n: i64) -> String {
    format!("{base}/search/repositories?q={query}&sort=stars&order=desc&per_page={top_n}")
}

/// The `items` of an answer; without them, GitHub's `message` (or RAGFlow's `'items'`).
fn items(res: &Value) -> Result<Vec<Value>, String> {
    match res.get("items") {
        Some(Value::Array(a)) => Ok(a.clone()),
        Some(_) => Err("'items' is not a list".into()),
        None => Err(res
            .get("message")
            .map(py_str)
            .unwrap_or_else(|| "'items'".into())),
    }
}

/// A repository as a reference: `<description>\n stars:<watchers>` (Python's `str()`,
/// so a missing description reads `None`).
fn found(r: &Value) -> Found {
    let py = |v: Option<&Value>| v.map(py_str).unwrap_or_else(|| "None".into());
    Found {
        title: text_field(r, "name"),
        url: text_field(r, "html_url"),
        content: format!(
            "{}\n stars:{}",
            py(r.get("description").filter(|v| !v.is_null())),
            py(r.get("watchers"))
        ),
        score: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_read_as_description_and_stars() {
        let f = found(
            &json!({"name": "tokio", "html_url": "https://github.com/tokio-rs/tokio",
            "description": "A runtime", "watchers": 30000}),
        );
        assert_eq!(f.title, "tokio");
        assert_eq!(f.content, "A runtime\n stars:30000");
        let f = found(&json!({"name": "x", "html_url": "u", "description": null, "watchers": 1}));
        assert_eq!(f.content, "None\n stars:1");
    }

    #[test]
    fn answers_without_items_fail_with_githubs_message() {
        assert_eq!(items(&json!({"items": [{"a": 1}]})).unwrap().len(), 1);
        assert_eq!(
            items(&json!({"message": "API rate limit exceeded"})).unwrap_err(),
            "API rate limit exceeded"
        );
        assert_eq!(items(&json!({})).unwrap_err(), "'items'");
    }

    #[test]
    fn url_and_check() {
        assert_eq!(
            search_url("https://api.github.com", "rust web", 5),
            "https://api.github.com/search/repositories?q=rust web&sort=stars&order=desc&per_page=5"
        );
        let params: Object = serde_json::from_value(json!({"top_n": -1})).unwrap();
        match build(&params) {
            Err(e) => assert_eq!(
                e.to_string(),
                "Top N -1 not supported, should be positive integer"
            ),
            Ok(_) => panic!("accepted"),
        }
    }
}
