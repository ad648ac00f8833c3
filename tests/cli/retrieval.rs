//! Retrieval end to end against a fake RAGFlow server on 127.0.0.1: dataset names
//! resolved to ids, the canvas parameters mapped onto the retrieval API, chunks in the
//! outputs and in `message_end.reference`, and the errors a user can meet.

use serde_json::{Value, json};

use crate::canvases::agent_canvas;
use crate::harness::{CanvasCli, Ran};
use crate::peer::{FakeServer, Reply, Seen};
use crate::util::{final_content, message_end, reference_chunks, status, trace};

/// Begin → Retrieval → Message, the Retrieval's parameters merged over `params`.
fn canvas_json(params: Value) -> String {
    canvas_with(params, json!({}))
}

/// [`canvas_json`] with `extra` components added (exception routes' targets).
fn canvas_with(params: Value, extra: Value) -> String {
    let mut p = json!({
        "query": "{sys.query}",
        "kb_ids": ["handbook"],
        "top_n": 3,
        "top_k": 64,
        "similarity_threshold": 0.3,
        "keywords_similarity_weight": 0.7,
        "empty_response": "Nothing found.",
        "retrieval_from": "dataset",
        "outputs": {"formalized_content": {"type": "string", "value": ""}, "json": {"type": "Array<Object>", "value": []}}
    });
    for (k, v) in params.as_object().unwrap() {
        p[k] = v.clone();
    }
    let mut components = json!({
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Retrieval:Docs"], "upstream": []},
        "Retrieval:Docs": {"obj": {"component_name": "Retrieval", "params": p}, "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message", "params": {"content": ["{Retrieval:Docs@formalized_content}"]}}, "downstream": [], "upstream": ["Retrieval:Docs"]}
    });
    for (k, v) in extra.as_object().unwrap() {
        components[k] = v.clone();
    }
    json!({"components": components, "path": [], "history": [],
        "globals": {"sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0, "sys.files": []}})
    .to_string()
}

/// A fake RAGFlow: dataset `handbook` has id `ds-1`; retrieval answers two chunks.
fn ragflow() -> FakeServer {
    FakeServer::with(|req: &Seen, _| {
        if req.header("authorization") != Some("Bearer rf-key") {
            return Reply::json(
                200,
                json!({"code": 109, "message": "Authentication error: API key is invalid!"}),
            );
        }
        match (req.method(), req.path()) {
            ("GET", "/api/v1/datasets") if req.target().contains("name=handbook") => Reply::json(
                200,
                json!({"code": 0, "data": [{"id": "ds-1", "name": "handbook"}]}),
            ),
            ("GET", "/api/v1/datasets") => Reply::json(
                200,
                json!({"code": 102, "message": "You don't own the dataset"}),
            ),
            ("POST", "/api/v1/retrieval") => Reply::json(
                200,
                json!({"code": 0, "data": {
                    "total": 2,
                    "chunks": [
                        {"id": "ck-1", "content": "Refunds are paid within 14 days.", "document_id": "doc-1",
                         "document_keyword": "refunds.pdf", "dataset_id": "ds-1", "similarity": 0.91,
                         "vector_similarity": 0.9, "term_similarity": 0.95, "positions": [], "image_id": ""},
                        {"id": "ck-2", "content": "Shipping is free above 50 EUR.", "document_id": "doc-2",
                         "document_keyword": "shipping.md", "dataset_id": "ds-1", "similarity": 0.55,
                         "vector_similarity": 0.5, "term_similarity": 0.6, "positions": [], "image_id": ""}
                    ],
                    "doc_aggs": [{"doc_name": "refunds.pdf", "doc_id": "doc-1", "count": 1},
                                 {"doc_name": "shipping.md", "doc_id": "doc-2", "count": 1}]
                }}),
            ),
            _ => Reply::json(404, json!({"code": 404, "message": "no such route"})),
        }
    })
}

/// `canvas run flow.json --format jsonl -q QUERY --store store.db` (`flow` written to
/// the test's directory), with no RAGFlow server unless `base` names one: neither
/// variables nor an llm.yaml with a `ragflow:` section (HOME is the test's directory).
fn cli(flow: &str, base: Option<&str>, query: &str) -> CanvasCli {
    let mut c = CanvasCli::new()
        .file("flow.json", flow)
        .env_remove("RAGFLOW_BASE_URL")
        .env_remove("RAGFLOW_API_KEY")
        .env_remove("CANVAS_LLM_CONFIG");
    if let Some(b) = base {
        c = c
            .env("RAGFLOW_BASE_URL", b)
            .env("RAGFLOW_API_KEY", "rf-key");
    }
    let (file, store) = (c.path("flow.json"), c.path("store.db"));
    c.arg("run")
        .arg(file)
        .args(["--format", "jsonl", "-q", query, "--store"])
        .arg(store)
}

/// [`cli`] run; it must exit with `code`. The run and its events.
fn run(flow: &str, base: Option<&str>, query: &str, code: i32) -> (Ran, Vec<Value>) {
    let ran = cli(flow, base, query).run().code(code);
    let evs = ran.events();
    (ran, evs)
}

fn finished<'a>(evs: &'a [Value], id: &str) -> &'a Value {
    evs.iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == id)
        .unwrap_or_else(|| panic!("no node_finished for {id}: {evs:#?}"))
}

#[test]
fn datasets_are_searched_on_the_ragflow_server_with_the_canvas_parameters() {
    let server = ragflow();
    let (_, evs) = run(
        &canvas_json(json!({})),
        Some(&server.url("")),
        "user: refund policy?",
        0,
    );

    let seen = server.seen();
    let search = seen
        .iter()
        .find(|s| s.path() == "/api/v1/retrieval")
        .expect("a retrieval call");
    let body = search.json();
    assert_eq!(
        body["question"], "refund policy?",
        "the `user:` prefix is stripped"
    );
    assert_eq!(
        body["dataset_ids"],
        json!(["ds-1"]),
        "the name is resolved to its id"
    );
    assert_eq!(body["page"], 1);
    assert_eq!(body["page_size"], 3);
    assert_eq!(body["top_k"], 64);
    assert_eq!(body["similarity_threshold"], 0.3);
    let w = body["vector_similarity_weight"].as_f64().unwrap();
    assert!(
        (w - 0.3).abs() < 1e-9,
        "1 - keywords_similarity_weight, got {w}"
    );

    let r = finished(&evs, "Retrieval:Docs");
    assert_eq!(r["data"]["error"], Value::Null);
    let text = r["data"]["outputs"]["formalized_content"].as_str().unwrap();
    assert!(text.contains("├── Title: refunds.pdf"), "{text}");
    assert!(
        text.contains("└── Content:\nRefunds are paid within 14 days."),
        "{text}"
    );
    assert!(text.contains("├── Title: shipping.md"), "{text}");
    let json_out = &r["data"]["outputs"]["json"];
    assert_eq!(json_out[0]["chunk_id"], "ck-1");
    assert_eq!(json_out[0]["docnm_kwd"], "refunds.pdf");
    assert_eq!(json_out[0]["doc_id"], "doc-1");

    let end = message_end(&evs);
    let chunks = reference_chunks(&evs);
    assert_eq!(chunks.len(), 2);
    let first = chunks
        .values()
        .find(|c| c["id"] == "ck-1")
        .expect("chunk ck-1");
    assert_eq!(first["document_name"], "refunds.pdf");
    assert_eq!(first["content"], "Refunds are paid within 14 days.");
    assert_eq!(
        end["data"]["reference"]["doc_aggs"]["refunds.pdf"]["doc_id"],
        "doc-1"
    );
}

#[test]
fn nothing_found_gives_the_empty_response() {
    let server = FakeServer::with(|req: &Seen, _| match req.path() {
        "/api/v1/datasets" => Reply::json(200, json!({"code": 0, "data": [{"id": "ds-1"}]})),
        _ => Reply::json(
            200,
            json!({"code": 0, "data": {"total": 0, "chunks": [], "doc_aggs": []}}),
        ),
    });
    let (_, evs) = run(
        &canvas_json(json!({})),
        Some(&server.url("")),
        "anything",
        0,
    );
    let r = finished(&evs, "Retrieval:Docs");
    assert_eq!(r["data"]["outputs"]["formalized_content"], "Nothing found.");
    let end = evs.iter().find(|e| e["event"] == "message_end").unwrap();
    assert!(end["data"].get("reference").is_none(), "{end}");
}

#[test]
fn server_errors_become_the_component_error() {
    let server = ragflow();
    let (_, evs) = run(
        &canvas_json(json!({"kb_ids": ["nope"]})),
        Some(&server.url("")),
        "q",
        1,
    );
    let r = finished(&evs, "Retrieval:Docs");
    assert_eq!(r["data"]["error"], "Dataset(nope) does not exist.");
}

/// The error of Retrieval naming datasets with no RAGFlow server configured.
fn says_what_to_set(error: &Value) {
    let text = error
        .as_str()
        .unwrap_or_else(|| panic!("an error: {error}"));
    assert!(
        text.starts_with("Retrieval needs a RAGFlow server to search datasets handbook:"),
        "{text}"
    );
    for name in [
        "RAGFLOW_BASE_URL",
        "RAGFLOW_API_KEY",
        "`ragflow:`",
        "llm.yaml",
    ] {
        assert!(text.contains(name), "{name} in {text}");
    }
    assert!(!text.contains('\n'), "one line: {text:?}");
}

#[test]
fn named_datasets_without_a_server_fail_the_component_saying_what_to_set() {
    // A component error no exception route handles: the turn stops after the batch.
    let (out, evs) = run(&canvas_json(json!({})), None, "refunds", 1);
    let r = finished(&evs, "Retrieval:Docs");
    says_what_to_set(&r["data"]["error"]);
    assert!(
        !trace(&evs).contains(&"node_started Message:Out".to_string()),
        "{:?}",
        trace(&evs)
    );
    assert!(final_content(&evs).is_none(), "no workflow_finished");

    let err = out.stderr();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("Retrieval:Docs"), "{err}");
    assert!(lines[0].contains("RAGFLOW_BASE_URL"), "{err}");

    let run_id = evs[0]["task_id"].as_str().expect("a task_id");
    assert_eq!(status(&out.dir().join("store.db"), run_id), "failed");
}

#[test]
fn without_a_server_a_comment_default_lets_the_run_go_on() {
    let flow = canvas_json(json!({
        "exception_method": "comment",
        "exception_default_value": "The handbook cannot be searched right now."
    }));
    let (out, evs) = run(&flow, None, "refunds", 0);
    // RAGFlow's `ToolBase.invoke`: the error stays the tool's `_ERROR`; the canvas shows
    // the default as a message and goes on (`engine.md` §2.3, §4.4).
    let r = finished(&evs, "Retrieval:Docs");
    says_what_to_set(&r["data"]["error"]);
    let shown: Vec<&Value> = evs
        .iter()
        .filter(|e| e["event"] == "message")
        .map(|e| &e["data"]["content"])
        .collect();
    assert_eq!(
        shown.first(),
        Some(&&json!("The handbook cannot be searched right now.")),
        "{shown:?}"
    );
    finished(&evs, "Message:Out");
    assert_eq!(evs.last().unwrap()["event"], "workflow_finished");

    let run_id = evs[0]["task_id"].as_str().expect("a task_id");
    assert_eq!(status(&out.dir().join("store.db"), run_id), "succeeded");
}

#[test]
fn without_a_server_goto_runs_the_exception_route() {
    let flow = canvas_with(
        json!({"exception_method": "goto", "exception_goto": ["Message:Sorry"]}),
        json!({"Message:Sorry": {"obj": {"component_name": "Message",
            "params": {"content": ["Sorry, I cannot search: {Retrieval:Docs@_ERROR}"]}},
            "downstream": [], "upstream": ["Retrieval:Docs"]}}),
    );
    let (_, evs) = run(&flow, None, "refunds", 0);
    says_what_to_set(&finished(&evs, "Retrieval:Docs")["data"]["error"]);
    let steps = trace(&evs);
    assert!(
        steps.contains(&"node_finished Message:Sorry".to_string()),
        "{steps:?}"
    );
    assert!(
        !steps.contains(&"node_started Message:Out".to_string()),
        "the normal route is skipped: {steps:?}"
    );
    // The route reads the error (the space before a reference is eaten, as in RAGFlow).
    let answer = final_content(&evs).expect("workflow_finished");
    assert!(
        answer.starts_with("Sorry, I cannot search:Retrieval needs a RAGFlow server"),
        "{answer}"
    );
}

#[test]
fn as_an_agent_tool_without_a_server_the_model_reads_what_to_set() {
    let flow = agent_canvas(
        "Agent:Helper",
        "You answer from the handbook.",
        json!([{"component_name": "Retrieval", "name": "Retrieval",
            "params": {"kb_ids": ["handbook"], "retrieval_from": "dataset"}}]),
    );
    // The second call answers only when the tool's text reached the model.
    let mock = json!({"rules": [
        {"match": "(?s)Retrieval needs a RAGFlow server to search datasets handbook: set RAGFLOW_BASE_URL and RAGFLOW_API_KEY",
         "on": "any", "answer": "The handbook is not reachable: no RAGFlow server is set."},
        {"match": "refund", "tool_calls": [{"name": "search_my_dateset_0", "arguments": {"query": "refunds"}}]},
    ], "default": "the tool result never arrived"});
    // RAGFlow never fails an Agent for a tool's error: the text is the tool result.
    let ran = cli(&flow.to_string(), None, "refund policy?")
        .mock_llm(&mock)
        .run()
        .code(0);
    let evs = ran.events();
    assert_eq!(finished(&evs, "Agent:Helper")["data"]["error"], Value::Null);
    let answer = final_content(&evs).expect("workflow_finished");
    assert!(
        answer.ends_with("The handbook is not reachable: no RAGFlow server is set."),
        "{answer}"
    );
    let run_id = evs[0]["task_id"].as_str().expect("a task_id");
    assert_eq!(status(&ran.dir().join("store.db"), run_id), "succeeded");
}

#[test]
fn an_empty_dataset_list_is_ragflows_error_and_an_empty_query_its_empty_response() {
    let (_, evs) = run(&canvas_json(json!({"kb_ids": []})), None, "refunds", 1);
    assert_eq!(
        finished(&evs, "Retrieval:Docs")["data"]["error"],
        "No dataset is selected."
    );

    let (_, evs) = run(&canvas_json(json!({"query": ""})), None, "refunds", 0);
    let r = finished(&evs, "Retrieval:Docs");
    assert_eq!(r["data"]["outputs"]["formalized_content"], "Nothing found.");
    assert_eq!(r["data"]["inputs"], json!({"query": ""}));
}
