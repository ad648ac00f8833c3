//! An Agent calling this build's tools, driven by a mock script with native tool calls:
//! Retrieval against a fake RAGFlow server, CodeExec running Python, ExeSQL on the
//! PostgreSQL that `.ci/run` starts; the final answer streams and the retrieved chunks
//! are in `message_end.reference`.

use serde_json::{Value, json};

use crate::canvases::{self, WITH_TOOLS};
use crate::harness::CanvasCli;
use crate::peer::{FakeServer, Reply, Seen};
use crate::util::{reference_chunks, streamed, trace};

/// A fake RAGFlow answering one chunk for dataset `handbook` (id `ds-1`).
fn ragflow() -> FakeServer {
    FakeServer::with(|req: &Seen, _| match req.path() {
        "/api/v1/datasets" => Reply::json(
            200,
            json!({"code": 0, "data": [{"id": "ds-1", "name": "handbook"}]}),
        ),
        "/api/v1/retrieval" => Reply::json(
            200,
            json!({"code": 0, "data": {"total": 1,
            "chunks": [{"id": "ck-1", "content": "Refunds are paid within 14 days.",
                "document_id": "doc-1", "document_keyword": "refunds.pdf", "dataset_id": "ds-1",
                "similarity": 0.9}],
            "doc_aggs": [{"doc_name": "refunds.pdf", "doc_id": "doc-1", "count": 1}]}}),
        ),
        _ => Reply::json(404, json!({"code": 404, "message": "no route"})),
    })
}

/// `postgres://user:password@host:port/db` → ExeSQL parameters.
fn pg_params(url: &str) -> Value {
    let rest = url.split("://").nth(1).expect("a postgres:// URL");
    let (auth, hostdb) = rest.split_once('@').expect("user:password@ in the URL");
    let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
    let (hostport, db) = hostdb.split_once('/').expect("/database in the URL");
    let (host, port) = hostport.split_once(':').unwrap_or((hostport, "5432"));
    json!({"db_type": "postgres", "host": host, "port": port.parse::<u16>().unwrap(),
        "username": user, "password": password, "database": db})
}

/// The PostgreSQL of the test run, or `None` (with the reason printed) outside CI.
fn postgres() -> Option<String> {
    match std::env::var("CANVAS_TEST_PG") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CANVAS_TEST_PG is not set: .ci/run starts PostgreSQL and sets it")
        }
        _ => {
            eprintln!(
                "skipping: CANVAS_TEST_PG is not set (scripts/test-databases.sh start sets it)"
            );
            None
        }
    }
}

fn agent_canvas(tools: Value) -> Value {
    canvases::agent_canvas("Agent:Analyst", WITH_TOOLS, tools)
}

#[test]
fn an_agent_calls_retrieval_code_and_sql_in_one_run() {
    let Some(pg) = postgres() else { return };
    let server = ragflow();
    let flow = agent_canvas(json!([
        {"component_name": "Retrieval", "name": "Retrieval", "params": {"kb_ids": ["handbook"], "retrieval_from": "dataset"}},
        {"component_name": "CodeExec", "name": "CodeExec", "params": {"lang": "python"}},
        {"component_name": "ExeSQL", "name": "ExeSQL", "params": pg_params(&pg)},
    ]));
    // Round 1 calls the three tools at once; round 2 answers from their results (the
    // rule matches only once the tool results are in the conversation).
    let mock = json!({"rules": [
        {"match": "(?s)Refunds are paid within 14 days.*\"product\": ?42.*\\| *answer *\\|", "on": "any",
         "answer": "Refunds take 14 days, and the answer is 42."},
        {"match": "refund", "tool_calls": [
            {"name": "search_my_dateset_0", "arguments": {"query": "refund policy"}},
            {"name": "execute_code_1", "arguments": {"lang": "python", "script": "def main():\n    return {\"product\": 6 * 7}\n"}},
            {"name": "execute_sql_2", "arguments": {"sql": "SELECT 41 + 1 AS answer"}},
        ]},
    ], "default": "the tools gave nothing useful"});
    let evs = CanvasCli::new()
        .json("flow.json", &flow)
        .mock_llm(&mock)
        .env("RAGFLOW_BASE_URL", server.url(""))
        .env("RAGFLOW_API_KEY", "rf-key")
        .args([
            "run",
            "flow.json",
            "-q",
            "what is our refund policy?",
            "--format",
            "jsonl",
            "--allow-private-network",
        ])
        .run()
        .code(0)
        .events();
    assert_eq!(
        streamed(&evs),
        "Running the search_my_dateset_0 tool...Running the execute_code_1 tool...Running the execute_sql_2 tool...Refunds take 14 days, and the answer is 42.",
        "{:?}",
        trace(&evs)
    );
    assert!(
        server
            .seen()
            .iter()
            .any(|s| s.path() == "/api/v1/retrieval")
    );
    let ck = reference_chunks(&evs).values().next().unwrap();
    assert_eq!(ck["id"], "ck-1");
    assert_eq!(ck["content"], "Refunds are paid within 14 days.");
    assert_eq!(ck["document_name"], "refunds.pdf");
    let last = evs.last().unwrap();
    assert_eq!(last["event"], "workflow_finished");
    let content = last["data"]["outputs"]["content"].as_str().unwrap();
    assert!(
        content.ends_with("Refunds take 14 days, and the answer is 42."),
        "{content}"
    );
}

#[test]
fn a_tool_error_goes_back_to_the_model_as_text() {
    let flow = agent_canvas(json!([
        {"component_name": "Retrieval", "name": "Retrieval", "params": {"kb_ids": [], "retrieval_from": "dataset"}},
    ]));
    let mock = json!({"rules": [
        {"match": "No dataset is selected\\.", "on": "any", "answer": "I have no datasets to search."},
        {"match": "refund", "tool_calls": [{"name": "search_my_dateset_0", "arguments": {"query": "refunds"}}]},
    ]});
    let evs = CanvasCli::new()
        .json("flow.json", &flow)
        .mock_llm(&mock)
        .env_remove("RAGFLOW_BASE_URL")
        .args([
            "run",
            "flow.json",
            "-q",
            "refund policy?",
            "--format",
            "jsonl",
        ])
        .run()
        .code(0)
        .events();
    assert!(
        streamed(&evs).ends_with("I have no datasets to search."),
        "{}",
        streamed(&evs)
    );
    let end = evs.iter().find(|e| e["event"] == "message_end").unwrap();
    assert!(end["data"].get("reference").is_none());
}

#[test]
fn files_a_code_tool_writes_are_linked_after_the_answer() {
    let flow = agent_canvas(json!([
        {"component_name": "CodeExec", "name": "CodeExec", "params": {"lang": "python"}},
    ]));
    let script = "import os\ndef main():\n    os.makedirs('artifacts', exist_ok=True)\n    open('artifacts/chart.svg', 'w').write('<svg xmlns=\\'http://www.w3.org/2000/svg\\'/>')\n    open('artifacts/data.csv', 'w').write('a,b\\n1,2\\n')\n    return {'files': 2}\n";
    let mock = json!({"rules": [
        {"match": "\"files\": ?2", "on": "any", "answer": "Here is the chart."},
        {"match": "chart", "tool_calls": [{"name": "execute_code_0", "arguments": {"lang": "python", "script": script}}]},
    ]});
    let cli = CanvasCli::new().json("flow.json", &flow).mock_llm(&mock);
    let out_dir = cli.path("out");
    let ran = cli
        .args([
            "run",
            "flow.json",
            "-q",
            "draw a chart",
            "--format",
            "jsonl",
        ])
        .arg("--output-dir")
        .arg(&out_dir)
        .run()
        .code(0);
    let text = streamed(&ran.events());
    let (answer, links) = text
        .split_once("Here is the chart.")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        answer.starts_with("Running the execute_code_0 tool..."),
        "{text}"
    );
    let lines: Vec<&str> = links
        .strip_prefix("\n\n")
        .unwrap_or_else(|| panic!("{links:?}"))
        .lines()
        .collect();
    assert_eq!(lines.len(), 2, "{links:?}");
    assert!(lines[0].starts_with("![chart.svg](file://"), "{links:?}");
    assert!(
        lines[1].starts_with("[Download data.csv](file://"),
        "{links:?}"
    );
    // The links point at the files, kept under --output-dir.
    let path = lines[1]
        .trim_start_matches("[Download data.csv](file://")
        .trim_end_matches(')');
    assert_eq!(std::fs::read_to_string(path).unwrap(), "a,b\n1,2\n");
    assert!(path.starts_with(out_dir.to_str().unwrap()), "{path}");
}
