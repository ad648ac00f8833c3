//! Retrieval (`search_my_dateset`, `llm-and-tools.md` §7.3): searches the user's
//! RAGFlow datasets through a RAGFlow server's HTTP retrieval API (§10), since datasets
//! and their embedding models live there. RAGFlow's behaviour for an empty query and an
//! empty dataset list is kept exactly; found chunks go to the run's reference store and
//! come back to the model as knowledge blocks.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::meta::{Param, ToolMeta};
use super::reference::kb_prompt;
use super::{Call, Tool};
use canvas_engine::template::plain_text;
use canvas_engine::{BuildError, CResult, ComponentError, ParamError};
use canvas_pyrt::Object;

/// A RAGFlow server's HTTP API.
#[derive(Clone)]
pub struct RagflowApi {
    /// `https://ragflow.example.com` (without `/api/v1`).
    pub base_url: String,
    /// The API key (`Authorization: Bearer`).
    pub api_key: String,
}

impl std::fmt::Debug for RagflowApi {
    // The key stays out of every output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RagflowApi")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// Why a Retrieval from RAGFlow's memory cannot run here.
const NO_MEMORY: &str = "Retrieval from RAGFlow memory is not supported in this build of canvas; search datasets instead (retrieval_from: dataset)";

/// Why metadata filters an LLM writes cannot run here.
const NO_LLM_FILTERS: &str = "Retrieval: meta_data_filter methods \"auto\" and \"semi_auto\" (metadata filters written by an LLM) are not supported in this build of canvas; use \"manual\" conditions";

/// How long one request to the RAGFlow server may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Build Retrieval from its DSL parameters (RAGFlow's `check()`).
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    let num = |k: &str| match params.get(k) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Number(_)) => Ok(()),
        Some(Value::String(s)) if s.trim().parse::<f64>().is_ok() => Ok(()),
        Some(other) => Err(BuildError::Params(format!(
            "Retrieval: {k} must be a number, not {other}"
        ))),
    };
    for k in [
        "similarity_threshold",
        "keywords_similarity_weight",
        "top_n",
        "top_k",
    ] {
        num(k)?;
    }
    Ok(Box::new(Retrieval { meta: meta() }))
}

fn meta() -> ToolMeta {
    ToolMeta {
        name: "search_my_dateset",
        description: "This tool can be utilized for relevant content searching in the datasets.",
        parameters: vec![Param::string(
            "query",
            "The keywords to search the dataset. The keywords should be the most important words/terms(includes synonyms) from the original request.",
            "",
        )],
    }
}

/// The Retrieval tool.
pub struct Retrieval {
    meta: ToolMeta,
}

/// Where the search goes (`retrieval_from`).
enum Source {
    Datasets(Vec<String>),
    Memory,
    Nothing,
}

#[async_trait]
impl Tool for Retrieval {
    fn class(&self) -> &'static str {
        "Retrieval"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &["RAGFLOW_BASE_URL", "RAGFLOW_API_KEY"]
    }

    /// The features this build lacks are refused before a run where the parameters
    /// alone decide them; `run` keeps its guards for runs that skipped this.
    fn check(&self, params: &Object) -> Result<(), ParamError> {
        let listed = |k: &str| match params.get(k) {
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::String(s)) => !s.is_empty(),
            _ => false,
        };
        let from = params.get("retrieval_from").and_then(Value::as_str);
        let datasets = ["dataset_ids", "kb_ids", "kb_vars"]
            .iter()
            .any(|k| listed(k));
        let memory = match from {
            Some("memory") => true,
            Some("dataset") => false,
            _ => !datasets && listed("memory_ids"),
        };
        if memory {
            return Err(ParamError::new(NO_MEMORY, &["retrieval_from"]));
        }
        let method = params
            .get("meta_data_filter")
            .and_then(|f| f.get("method"))
            .and_then(Value::as_str);
        if matches!(method, Some("auto" | "semi_auto")) {
            return Err(ParamError::new(
                NO_LLM_FILTERS,
                &["meta_data_filter", "method"],
            ));
        }
        Ok(())
    }

    fn thoughts(&self, args: &Object) -> String {
        let query = args
            .get("query")
            .map(plain_text)
            .unwrap_or_else(|| "-_-!".to_string());
        format!("\nKeywords: {query}\nLooking for the most relevant articles.\n        ")
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let empty = call.param("empty_response").cloned().unwrap_or(json!(""));
        let raw = args.get("query").map(plain_text).unwrap_or_default();
        let query = call.render(&raw)?;
        if query.is_empty() {
            call.set_output("formalized_content", empty);
            return Ok(None);
        }
        let ids = match source(call)? {
            Source::Datasets(ids) => ids,
            // Fatal, not `Failed`: RAGFlow would search the memory here, and this build
            // cannot. A component error would let `exception_method` or an Agent's
            // model carry on as if RAGFlow had failed; the canvas must change first.
            Source::Memory => {
                return Err(ComponentError::Fatal(NO_MEMORY.into()));
            }
            Source::Nothing => {
                call.set_output("formalized_content", empty);
                return Ok(None);
            }
        };
        // RAGFlow raises inside the component when it cannot search (a caught
        // exception): the node's `_ERROR`, or the text an Agent's model reads.
        let Some(api) = call.env().ragflow.clone() else {
            return Err(ComponentError::Failed(format!(
                "Retrieval needs a RAGFlow server to search datasets {}: set RAGFLOW_BASE_URL and RAGFLOW_API_KEY (or a `ragflow:` section with base_url and api_key in llm.yaml, the --llm-config file)",
                ids.join(", ")
            )));
        };
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| ComponentError::Failed(format!("Retrieval: HTTP client: {e}")))?;
        let server = Server { api: &api, client };
        let mut dataset_ids = Vec::new();
        for id in ids {
            let id = server.dataset_id(&id).await?;
            if !dataset_ids.contains(&id) {
                dataset_ids.push(id);
            }
        }
        let query = strip_user_prefix(&query);
        let (chunks, doc_aggs) = server.retrieve(call, &query, &dataset_ids).await?;
        if chunks.is_empty() {
            call.set_output("formalized_content", empty);
            return Ok(None);
        }
        call.add_reference(&chunks, &doc_aggs);
        let text = kb_prompt(&chunks, 200_000).join("\n");
        call.set_output("formalized_content", json!(text));
        call.set_output("json", Value::Array(chunks));
        Ok(Some(json!(text)))
    }
}

/// The datasets (ids, or names/ids read from references) the parameters select,
/// following `retrieval_from`.
fn source(call: &Call<'_>) -> CResult<Source> {
    let list = |k: &str| -> Vec<Value> {
        match call.param(k) {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) if !s.is_empty() => vec![json!(s)],
            _ => Vec::new(),
        }
    };
    let mut entries = list("dataset_ids");
    if entries.is_empty() {
        entries = list("kb_ids");
    }
    entries.extend(list("kb_vars"));
    let mut ids = Vec::new();
    for e in entries {
        let Some(s) = e.as_str().filter(|s| !s.is_empty()) else {
            continue;
        };
        if !s.contains('@') {
            ids.push(s.to_string());
            continue;
        }
        // A reference whose value names datasets (by name or id), one or a list.
        let exp = s.trim_start_matches('{').trim_end_matches('}');
        match call.cx.resolve(exp)? {
            Value::Array(a) => ids.extend(a.iter().map(plain_text)),
            v => ids.push(plain_text(&v)),
        }
    }
    ids.retain(|s| !s.is_empty());
    let memory = !list("memory_ids").is_empty();
    Ok(match call.param_str("retrieval_from", "") {
        "dataset" if ids.is_empty() => {
            return Err(ComponentError::Failed("No dataset is selected.".into()));
        }
        "dataset" => Source::Datasets(ids),
        "memory" => Source::Memory,
        _ if !ids.is_empty() => Source::Datasets(ids),
        _ if memory => Source::Memory,
        _ => Source::Nothing,
    })
}

/// RAGFlow strips a leading `user:` (any case, full-width colon too) from the query.
fn strip_user_prefix(q: &str) -> String {
    static RE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(?i)^user[:：\s]*").expect("valid regex"));
    RE.replace(q, "").into_owned()
}

/// The RAGFlow server of a call.
struct Server<'a> {
    api: &'a RagflowApi,
    client: reqwest::Client,
}

impl Server<'_> {
    fn url(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.api.base_url.trim_end_matches('/'))
    }

    /// Send a request and read RAGFlow's `{code, data, message}` envelope.
    async fn send(&self, req: reqwest::RequestBuilder, what: &str) -> CResult<Value> {
        let failed = |m: String| ComponentError::Failed(format!("Retrieval: {what}: {m}"));
        let resp = req
            .bearer_auth(&self.api.api_key)
            .send()
            .await
            .map_err(|e| failed(format!("{} ({})", e, self.api.base_url)))?;
        let status = resp.status();
        let body: Value = resp
            .json()
            .await
            .map_err(|e| failed(format!("HTTP {status}, the answer is not JSON: {e}")))?;
        match body.get("code").and_then(Value::as_i64) {
            Some(0) => Ok(body.get("data").cloned().unwrap_or(Value::Null)),
            _ => Err(failed(
                body.get("message")
                    .map(plain_text)
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| format!("HTTP {status}")),
            )),
        }
    }

    /// A dataset name or id → its id (RAGFlow looks the name up first).
    async fn dataset_id(&self, name_or_id: &str) -> CResult<String> {
        for key in ["name", "id"] {
            let req = self.client.get(self.url("/datasets")).query(&[
                (key, name_or_id),
                ("page", "1"),
                ("page_size", "1"),
            ]);
            // A lookup by the wrong key fails with a message: try the other one.
            let Ok(data) = self.send(req, "looking up the dataset").await else {
                continue;
            };
            let found = data
                .as_array()
                .and_then(|a| a.first())
                .and_then(|d| d.get("id"))
                .and_then(Value::as_str);
            if let Some(id) = found {
                return Ok(id.to_string());
            }
        }
        Err(ComponentError::Failed(format!(
            "Dataset({name_or_id}) does not exist."
        )))
    }

    /// `POST /api/v1/retrieval` with the component's parameters (§10); chunks mapped
    /// back to RAGFlow's internal names.
    async fn retrieve(
        &self,
        call: &Call<'_>,
        query: &str,
        dataset_ids: &[String],
    ) -> CResult<(Vec<Value>, Vec<Value>)> {
        let top_n = call.param_f64("top_n", 8.0).max(1.0) as u64;
        let mut body = json!({
            "question": query,
            "dataset_ids": dataset_ids,
            "page": 1,
            "page_size": top_n,
            "similarity_threshold": call.param_f64("similarity_threshold", 0.2),
            "vector_similarity_weight": 1.0 - call.param_f64("keywords_similarity_weight", 0.5),
            "top_k": call.param_f64("top_k", 1024.0).max(1.0) as u64,
            "keyword": false,
            "highlight": false,
            "use_kg": call.param_bool("use_kg", false),
            "toc_enhance": call.param_bool("toc_enhance", false),
        });
        let rerank = call.param_str("rerank_id", "");
        if !rerank.is_empty() {
            body["rerank_id"] = json!(rerank);
        }
        if let Some(Value::Array(langs)) = call.param("cross_languages") {
            if !langs.is_empty() {
                body["cross_languages"] = Value::Array(langs.clone());
            }
        }
        if let Some(cond) = metadata_condition(call)? {
            body["metadata_condition"] = cond;
        }
        let req = self.client.post(self.url("/retrieval")).json(&body);
        let data = self.send(req, "searching the datasets").await?;
        let chunks = data
            .get("chunks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(internal_chunk)
            .collect();
        let aggs = data
            .get("doc_aggs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok((chunks, aggs))
    }
}

/// The manual conditions of `meta_data_filter` as the API's `metadata_condition`
/// (values may hold references). The LLM-generated modes need RAGFlow's own model
/// settings, so they are not offered.
fn metadata_condition(call: &Call<'_>) -> CResult<Option<Value>> {
    let Some(Value::Object(f)) = call.param("meta_data_filter") else {
        return Ok(None);
    };
    match f.get("method").and_then(Value::as_str) {
        Some("manual") => {}
        // Fatal, not `Failed`: RAGFlow would run these filters; this build cannot, and
        // the canvas must change before it runs here (as for memory retrieval).
        Some("auto") | Some("semi_auto") => {
            return Err(ComponentError::Fatal(NO_LLM_FILTERS.into()));
        }
        _ => return Ok(None),
    }
    let mut conditions = Vec::new();
    for c in f
        .get("manual")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let value = match c.get("value") {
            Some(Value::String(s)) => json!(call.render(s)?),
            Some(v) => v.clone(),
            None => Value::Null,
        };
        conditions.push(json!({
            "name": c.get("key").cloned().unwrap_or(Value::Null),
            "comparison_operator": c.get("op").cloned().unwrap_or(json!("=")),
            "value": value,
        }));
    }
    if conditions.is_empty() {
        return Ok(None);
    }
    let logic = f.get("logic").and_then(Value::as_str).unwrap_or("and");
    Ok(Some(json!({"logic": logic, "conditions": conditions})))
}

/// An API chunk with RAGFlow's internal key names back (`id→chunk_id`,
/// `document_keyword→docnm_kwd`, `document_id→doc_id`, `dataset_id→kb_id`); vectors
/// dropped.
fn internal_chunk(ck: Value) -> Value {
    let Value::Object(mut o) = ck else {
        return ck;
    };
    for (from, to) in [
        ("id", "chunk_id"),
        ("document_keyword", "docnm_kwd"),
        ("document_id", "doc_id"),
        ("dataset_id", "kb_id"),
    ] {
        if let Some(v) = o.shift_remove(from) {
            o.entry(to.to_string()).or_insert(v);
        }
    }
    o.retain(|k, _| k != "vector" && k != "content_ltks" && !k.starts_with("q_"));
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_prefix_is_stripped() {
        assert_eq!(strip_user_prefix("User: what"), "what");
        assert_eq!(strip_user_prefix("user：价格"), "价格");
        // As Python's `re.sub(r"^user[:：\s]*", "", q, flags=re.I)`.
        assert_eq!(strip_user_prefix("UserFillUp: x"), "FillUp: x");
        assert_eq!(strip_user_prefix("refund policy"), "refund policy");
    }

    #[test]
    fn api_chunks_get_internal_names() {
        let ck = internal_chunk(json!({"id": "c1", "content": "t", "document_id": "d",
            "document_keyword": "Doc.pdf", "dataset_id": "k", "vector": [0.1], "similarity": 0.9}));
        assert_eq!(ck["chunk_id"], "c1");
        assert_eq!(ck["doc_id"], "d");
        assert_eq!(ck["docnm_kwd"], "Doc.pdf");
        assert_eq!(ck["kb_id"], "k");
        assert!(ck.get("vector").is_none());
        assert!(ck.get("id").is_none());
    }

    #[test]
    fn memory_and_llm_filters_are_refused_before_the_run() {
        let check = |p: Value| {
            let Value::Object(p) = p else { unreachable!() };
            Retrieval { meta: meta() }.check(&p).map_err(|e| e.path)
        };
        assert_eq!(check(json!({"dataset_ids": ["kb"]})), Ok(()));
        assert_eq!(
            check(json!({"retrieval_from": "memory"})),
            Err(vec!["retrieval_from".to_string()])
        );
        assert!(check(json!({"memory_ids": ["m"]})).is_err());
        // Datasets first: memory ids beside them are not searched.
        assert_eq!(check(json!({"memory_ids": ["m"], "kb_ids": ["k"]})), Ok(()));
        assert_eq!(
            check(json!({"meta_data_filter": {"method": "auto"}})),
            Err(vec!["meta_data_filter".to_string(), "method".to_string()])
        );
        assert_eq!(
            check(json!({"meta_data_filter": {"method": "manual"}})),
            Ok(())
        );
    }

    #[test]
    fn thoughts_show_the_query() {
        let r = Retrieval { meta: meta() };
        let mut args = Object::new();
        args.insert("query".into(), json!("kb1"));
        assert_eq!(
            r.thoughts(&args),
            "\nKeywords: kb1\nLooking for the most relevant articles.\n        "
        );
        assert!(r.thoughts(&Object::new()).contains("-_-!"));
    }
}
