//! BGPT (`bgpt_search`, `agent/tools/bgpt.py`, `llm-and-tools.md` §7.2): scientific
//! papers with structured evidence through `POST https://bgpt.pro/api/mcp-search`. Each
//! paper becomes a reference chunk of labelled evidence lines. Client errors other than
//! 429 are not retried.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::reference::Found;
use super::web::{failed, http_client, input_text, publish, send_answer};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_str};

const BASE_VAR: &str = "CANVAS_BGPT_BASE_URL";
const BASE_DEFAULT: &str = "https://bgpt.pro";
/// RAGFlow's request timeout.
const TIMEOUT: Duration = Duration::from_secs(25);

/// A positive integer parameter read leniently as RAGFlow's `check()` does (numeric
/// strings converted); `None` when absent.
fn lenient_int(v: &Value, descr: &str, strict: bool) -> Result<i64, BuildError> {
    let n = match v {
        Value::String(s) => match s.trim().parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) if strict => {
                return Err(BuildError::Params("days_back must be an integer".into()));
            }
            Err(_) => None,
        },
        // Python's `int()` truncates floats.
        Value::Number(n) if strict => n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64)),
        Value::Number(n) if !n.is_f64() => n.as_i64(),
        Value::Bool(_) | Value::Array(_) | Value::Object(_) | Value::Null if strict => {
            return Err(BuildError::Params("days_back must be an integer".into()));
        }
        _ => None,
    };
    match n {
        Some(n) if n > 0 => Ok(n),
        _ => Err(BuildError::Params(format!(
            "{descr} {} not supported, should be positive integer",
            match (n, v) {
                (Some(n), _) => n.to_string(),
                (None, v) => py_str(v),
            }
        ))),
    }
}

/// Build BGPT from its DSL parameters (RAGFlow's `check()`).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    let top_n = match params.get("top_n") {
        None => 10,
        Some(v) => lenient_int(v, "Top N", false)?,
    };
    let days_back = match params.get("days_back") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(v) => Some(lenient_int(v, "Days back", true)?),
    };
    Ok(Box::new(Bgpt {
        meta: ToolMeta {
            name: "bgpt_search",
            description: "BGPT searches scientific papers and returns structured evidence extracted from full-text studies: methods, sample sizes, results, limitations, conflicts of interest, data/code availability, study blind spots, quality scores, and falsification prompts. Useful when the agent must judge a scientific claim, not just find abstracts.",
            parameters: vec![Param::string(
                "query",
                "Natural-language scientific search query. Use the most important terms from the user's request.",
                "{sys.query}",
            )],
        },
        top_n,
        days_back,
    }))
}

/// The BGPT tool.
pub struct Bgpt {
    meta: ToolMeta,
    top_n: i64,
    days_back: Option<i64>,
}

/// Why one attempt failed.
enum Attempt {
    /// A client error other than 429: no more attempts.
    Final(String),
    /// Worth another attempt.
    Retry(String),
}

#[async_trait]
impl Tool for Bgpt {
    crate::tool_facts!("BGPT", outputs: ["formalized_content", "json"], env: [BASE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        format!(
            "Searching BGPT for structured scientific evidence on `{}`.",
            input_text(args, "query")
        )
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let query = match args.get("query") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            _ => {
                call.set_output("formalized_content", json!(""));
                return Ok(Some(json!("")));
            }
        };
        let mut payload = Map::new();
        payload.insert("query".into(), json!(query));
        payload.insert("num_results".into(), json!(self.top_n));
        let key = call.param_str("api_key", "");
        if !key.is_empty() {
            payload.insert("api_key".into(), json!(key));
        }
        if let Some(d) = self.days_back {
            payload.insert("days_back".into(), json!(d));
        }
        let payload = Value::Object(payload);
        let url = format!(
            "{}/api/mcp-search",
            call.env().base_url(BASE_VAR, BASE_DEFAULT)
        );
        let client = match http_client(call, &url, TIMEOUT).await {
            Ok(c) => c,
            Err(e) => return failed(call, "BGPT", e),
        };
        let retries = call.param_f64("max_retries", 0.0).max(0.0) as u32;
        let delay = call.param_f64("delay_after_error", 2.0).clamp(0.0, 3600.0);
        let mut last = String::new();
        for attempt in 0..=retries {
            match self.attempt(&client, &url, &payload).await {
                Ok(results) => return publish(call, results, found),
                Err(Attempt::Final(e)) => {
                    last = e;
                    break;
                }
                Err(Attempt::Retry(e)) => last = e,
            }
            if attempt < retries && delay > 0.0 {
                tokio::time::sleep(Duration::from_secs_f64(delay)).await;
            }
        }
        failed(call, "BGPT", last)
    }
}

impl Bgpt {
    async fn attempt(
        &self,
        client: &reqwest::Client,
        url: &str,
        payload: &Value,
    ) -> Result<Vec<Value>, Attempt> {
        let network = |e: String| Attempt::Retry(format!("Network error: {e}"));
        let a = send_answer(client.post(url).json(payload))
            .await
            .map_err(network)?;
        if let Err(e) = a.raise_for_status() {
            return Err(if (400..500).contains(&a.status) && a.status != 429 {
                Attempt::Final(format!("HTTP error: {e}"))
            } else {
                network(e)
            });
        }
        // A body that is not JSON is a `requests` exception too.
        let data = a.json().map_err(network)?;
        results(&data).map_err(Attempt::Retry)
    }
}

/// The `results` list of an answer, or RAGFlow's complaint about its shape.
fn results(data: &Value) -> Result<Vec<Value>, String> {
    let Some(o) = data.as_object().filter(|o| !o.is_empty()) else {
        return Err("Invalid response from BGPT".into());
    };
    match o.get("results") {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => Ok(a.clone()),
        Some(_) => Err("Invalid results format from BGPT".into()),
    }
}

/// A paper as a reference: title (or "Untitled"), URL (or DOI), evidence lines.
fn found(paper: &Value) -> Found {
    let text = |k: &str| {
        paper
            .get(k)
            .filter(|v| !v.is_null())
            .map(py_str)
            .filter(|s| !s.is_empty())
    };
    Found {
        title: text("title").unwrap_or_else(|| "Untitled".into()),
        url: text("url").or_else(|| text("doi")).unwrap_or_default(),
        content: evidence(paper),
        score: None,
    }
}

/// RAGFlow's `_format_bgpt_paper`: one labelled line per field, the first non-blank
/// of its names, `-` when none.
fn evidence(paper: &Value) -> String {
    let field = |names: &[&str]| {
        names
            .iter()
            .filter_map(|n| paper.get(*n).filter(|v| !v.is_null()))
            .map(|v| py_str(v).trim().to_string())
            .find(|s| !s.is_empty())
            .unwrap_or_else(|| "-".into())
    };
    let lines = [
        ("Title", field(&["title"])),
        ("Authors", field(&["authors"])),
        ("Journal", field(&["journal"])),
        ("Year", field(&["year"])),
        ("DOI", field(&["doi"])),
        ("Abstract", field(&["abstract"])),
        (
            "Methods",
            field(&["methods_and_experimental_techniques", "methods"]),
        ),
        (
            "Sample size / population",
            field(&[
                "sample_size_and_population_characteristics",
                "sample_size_and_population",
            ]),
        ),
        ("Results", field(&["results_and_conclusions", "results"])),
        (
            "Limitations",
            field(&["paper_limitations_and_biases", "limitations"]),
        ),
        (
            "Conflicts of interest",
            field(&["conflict_of_interest_statements", "conflict_of_interest"]),
        ),
        (
            "Data availability",
            field(&["data_availability_statements", "data_availability"]),
        ),
        ("Blind spots", field(&["study_blindspots"])),
        ("How to falsify", field(&["how_to_falsify"])),
    ];
    lines
        .iter()
        .map(|(label, v)| format!("{label}: {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn papers_become_evidence_lines() {
        let p = json!({"title": "Coffee and sleep", "authors": ["A. B", "C. D"], "year": 2021,
            "doi": "10.1/x", "methods": "  RCT  ", "results_and_conclusions": "", "results": "less sleep"});
        let f = found(&p);
        assert_eq!(f.title, "Coffee and sleep");
        assert_eq!(f.url, "10.1/x");
        assert_eq!(
            f.content,
            "Title: Coffee and sleep\nAuthors: ['A. B', 'C. D']\nJournal: -\nYear: 2021\nDOI: 10.1/x\nAbstract: -\nMethods: RCT\nSample size / population: -\nResults: less sleep\nLimitations: -\nConflicts of interest: -\nData availability: -\nBlind spots: -\nHow to falsify: -"
        );
        assert_eq!(found(&json!({})).title, "Untitled");
    }

    #[test]
    fn check_reads_numbers_leniently() {
        let p = |v: Value| -> Object { serde_json::from_value(v).unwrap() };
        let err = |v: Value| match build(&p(v)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted"),
        };
        assert!(build(&p(json!({"top_n": "5", "days_back": "30"}))).is_ok());
        assert!(build(&p(json!({"days_back": ""}))).is_ok());
        assert_eq!(
            err(json!({"days_back": "soon"})),
            "days_back must be an integer"
        );
        assert_eq!(
            err(json!({"days_back": 0})),
            "Days back 0 not supported, should be positive integer"
        );
        assert_eq!(
            err(json!({"top_n": "many"})),
            "Top N many not supported, should be positive integer"
        );
    }

    #[test]
    fn result_shapes() {
        assert_eq!(
            results(&json!({})).unwrap_err(),
            "Invalid response from BGPT"
        );
        assert_eq!(
            results(&json!({"results": "x"})).unwrap_err(),
            "Invalid results format from BGPT"
        );
        assert_eq!(results(&json!({"results": [{}]})).unwrap().len(), 1);
    }
}
