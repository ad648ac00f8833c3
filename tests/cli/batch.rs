//! `canvas batch`: a canvas over a dataset, with checks, resumable.

use canvas_batch::Observed;
use canvas_store::{SqliteStore, Store};
use serde_json::{Value, json};

use crate::harness::CanvasCli;

/// `begin` (a required `topic`) → an Agent answering `{sys.query}` → a form asking a
/// `rating` → a Message with both.
fn form_and_agent() -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {
            "inputs": {"topic": {"name": "Topic", "type": "line", "optional": false}}}},
            "downstream": ["Agent:Answer"], "upstream": []},
        "Agent:Answer": {"obj": {"component_name": "Agent", "params": {
            "llm_id": "", "sys_prompt": "You answer support questions.",
            "prompts": [{"role": "user", "content": "{sys.query}"}], "max_rounds": 1, "tools": []}},
            "downstream": ["UserFillUp:Rate"], "upstream": ["begin"]},
        "UserFillUp:Rate": {"obj": {"component_name": "UserFillUp", "params": {
            "enable_tips": true, "tips": "How was it?",
            "inputs": {"rating": {"name": "Rating", "type": "options", "options": ["good", "bad"], "optional": false}}}},
            "downstream": ["Message:Out"], "upstream": ["Agent:Answer"]},
        "Message:Out": {"obj": {"component_name": "Message", "params": {"stream": false,
            "content": ["{Agent:Answer@content} (topic {begin@topic}, rated {UserFillUp:Rate@rating})"]}},
            "downstream": [], "upstream": ["UserFillUp:Rate"]}
    }})
}

fn mock() -> Value {
    json!({"rules": [{"match": "refund", "answer": "Your refund is on its way."}],
           "default": "We are looking into it."})
}

/// Row `i` of 1..=200: even rows ask about a refund (their check passes), odd rows
/// about a delay (their check fails); every tenth row gives no rating (it waits).
fn dataset() -> String {
    (1..=200)
        .map(|i| {
            let query = if i % 2 == 0 {
                format!("refund for order {i}")
            } else {
                format!("where is order {i}")
            };
            let mut row = json!({"id": format!("case-{i}"), "query": query,
                                 "inputs": {"topic": "orders"},
                                 "expect": {"contains": "refund", "max_tokens": 10000}});
            if i % 10 != 0 {
                row["answers"] = json!({"rating": "good"});
            }
            row.to_string() + "\n"
        })
        .collect()
}

fn summary(ran: &crate::harness::Ran) -> Value {
    ran.json()["summary"].clone()
}

#[test]
fn a_batch_with_forms_and_checks_reports_exact_counts_and_resumes_to_nothing() {
    let ran = CanvasCli::new()
        .json("flow.json", &form_and_agent())
        .file("cases.jsonl", dataset())
        .mock_llm(&mock())
        .args([
            "batch",
            "flow.json",
            "--dataset",
            "cases.jsonl",
            "--output",
            "results.jsonl",
            "--format",
            "json",
        ])
        .run()
        .code(1);
    let s = summary(&ran);
    let counts = &s["counts"];
    assert_eq!(s["rows"], 200);
    assert_eq!(counts["succeeded"], 180, "{s}");
    assert_eq!(counts["waiting"], 20, "{s}");
    assert_eq!(counts["failed"], 0, "{s}");
    assert_eq!(counts["pending"], 0);
    // Odd rows (100) finished without "refund" in the answer.
    assert_eq!(counts["checks_failed"], 100, "{s}");
    assert_eq!(s["checks_failed"].as_array().unwrap().len(), 100);
    assert_eq!(s["checks_failed"][0][0], "case-1");
    assert_eq!(s["waiting"].as_array().unwrap().len(), 20);
    assert_eq!(s["waiting"][0], "case-10");
    assert!(s["usage"]["total_tokens"].as_u64().unwrap() > 0, "{s}");
    let batch = ran.json()["batch"].as_str().unwrap().to_string();

    let text = std::fs::read_to_string(ran.dir().join("results.jsonl")).unwrap();
    let results: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), 200);
    let r2 = &results[1];
    assert_eq!(
        (r2["row"].as_u64(), r2["id"].as_str()),
        (Some(2), Some("case-2"))
    );
    assert_eq!(r2["status"], "succeeded");
    assert_eq!(
        r2["answer"],
        "Your refund is on its way. (topic orders, rated good)"
    );
    assert_eq!(r2["passed"], true);
    assert_eq!(r2["checks"][0]["check"], "contains");
    let r1 = &results[0];
    assert_eq!(r1["passed"], false);
    assert_eq!(r1["checks"][0]["passed"], false);
    let r10 = &results[9];
    assert_eq!(r10["status"], "waiting");
    assert!(r10["error"].as_str().unwrap().contains("rating"), "{r10}");
    assert_eq!(r10["checks"], json!([]));

    // What each row's result says of its run is what the run's stored events say (a
    // new row's run is judged from its events as they were stored, not read back).
    let store = SqliteStore::open_read_only(ran.dir().join("canvas.db"))
        .unwrap()
        .expect("the store exists");
    for r in &results {
        let run = r["run_id"].as_str().expect("every row has its run");
        let seen = Observed::of(&store.events(run).unwrap());
        assert_eq!(r["answer"], seen.answer.as_str(), "{r}");
        assert_eq!(r["outputs"], seen.outputs, "{r}");
        assert_eq!(r["usage"], serde_json::to_value(seen.usage).unwrap(), "{r}");
    }

    // Every row's run is stored, once.
    let runs = ran
        .fresh()
        .args(["runs", "--limit", "0", "--format", "json"])
        .run()
        .code(0);
    assert_eq!(runs.json().as_array().unwrap().len(), 200);

    // Resuming a finished batch runs nothing more and reports the same.
    let again = ran
        .fresh()
        .args(["batch", "--resume", &batch, "--format", "json"])
        .run()
        .code(1);
    assert_eq!(summary(&again), s);
    let runs = ran
        .fresh()
        .args(["runs", "--limit", "0", "--format", "json"])
        .run()
        .code(0);
    assert_eq!(runs.json().as_array().unwrap().len(), 200);
    let listed = ran
        .fresh()
        .args(["batches", "--format", "json"])
        .run()
        .code(0);
    assert_eq!(listed.json()[0]["id"], batch.as_str());
    assert_eq!(listed.json()[0]["counts"]["waiting"], 20);
    let shown = ran.fresh().args(["show", &batch]).run().code(0);
    assert!(
        shown.stdout().contains("180 succeeded"),
        "{}",
        shown.stdout()
    );
}

#[test]
fn csv_rows_are_typed_by_the_canvas_and_every_check_passing_exits_zero() {
    let csv = "id,query,inputs.topic,answers.rating,expect.contains,expect.Agent:Answer@content.equals\n\
               a,refund please,billing,good,refund,Your refund is on its way.\n\
               b,refund now,billing,bad,rated bad,\n";
    let ran = CanvasCli::new()
        .json("flow.json", &form_and_agent())
        .file("cases.csv", csv)
        .mock_llm(&mock())
        .args([
            "batch",
            "flow.json",
            "--dataset",
            "cases.csv",
            "-o",
            "out.csv",
        ])
        .run()
        .code(0);
    let out = ran.stdout();
    assert!(
        out.contains("2 rows · 2 succeeded · 0 failed · 0 waiting · 0 checks failed"),
        "{out}"
    );
    let written = std::fs::read_to_string(ran.dir().join("out.csv")).unwrap();
    assert_eq!(written.lines().count(), 3, "{written}");
    assert!(
        written.lines().nth(2).unwrap().starts_with("2,b,"),
        "{written}"
    );
}

#[test]
fn a_bad_dataset_is_refused_before_anything_is_stored() {
    let cli = || {
        CanvasCli::new()
            .json("flow.json", &form_and_agent())
            .mock_llm(&mock())
    };
    let ran = cli()
        .file("d.jsonl", "{\"query\": \"x\", \"inputs\": {\"topic\": \"t\"}}\n{\"query\": \"\", \"inputs\": {}}\n")
        .args(["batch", "flow.json", "--dataset", "d.jsonl"])
        .run()
        .code(2)
        .stderr_contains("d.jsonl:2:")
        .stderr_contains("topic");
    let listed = ran
        .fresh()
        .args(["batches", "--format", "json"])
        .run()
        .code(0);
    assert_eq!(listed.json(), json!([]));
    cli()
        .file("d.jsonl", "{\"query\": \"x\", \"inputs\": {\"topic\": \"t\"}, \"answers\": {\"rating\": \"meh\"}}\n")
        .args(["batch", "flow.json", "--dataset", "d.jsonl"])
        .run()
        .code(2)
        .stderr_contains("d.jsonl:1: input \"rating\" expects one of \"good\", \"bad\"");
    cli()
        .file(
            "d.jsonl",
            "{\"query\": \"x\", \"expect\": {\"contain\": \"a\"}}\n",
        )
        .args(["batch", "flow.json", "--dataset", "d.jsonl"])
        .run()
        .code(2)
        .stderr_contains("did you mean \"contains\"");
    cli()
        .file("d.txt", "x")
        .args(["batch", "flow.json", "--dataset", "d.txt"])
        .run()
        .code(2)
        .stderr_contains(".jsonl, .csv or .yaml");
    cli()
        .args(["batch", "--resume", "NOPE"])
        .run()
        .code(2)
        .stderr_contains("no batch matches \"NOPE\"");
}

/// `begin → LLM:A (a fake provider) → Message:Out`.
fn llm_canvas() -> Value {
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["LLM:A"], "upstream": []},
        "LLM:A": {"obj": {"component_name": "LLM", "params": {
            "llm_id": "fake@OpenAI-API-Compatible", "sys_prompt": "Answer.",
            "prompts": [{"role": "user", "content": "{sys.query}"}]}},
            "downstream": ["Message:Out"], "upstream": ["begin"]},
        "Message:Out": {"obj": {"component_name": "Message", "params": {
            "stream": false, "content": ["{LLM:A@content}"]}}, "downstream": [], "upstream": ["LLM:A"]}
    }})
}

fn rows(n: usize) -> String {
    (1..=n)
        .map(|i| json!({"query": format!("q{i}")}).to_string() + "\n")
        .collect()
}

#[test]
fn rps_spaces_a_providers_calls_and_a_429_pauses_them_all_without_failing_rows() {
    use crate::peer::{FakeServer, Reply};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    // The first two calls are refused with 429 (Retry-After: 1 s); every later one
    // answers. The component has no retries of its own (RAGFlow's default).
    let times: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let seen = Arc::clone(&times);
    let server = FakeServer::with(move |_, n| {
        seen.lock().unwrap().push(Instant::now());
        if n <= 2 {
            let mut r = Reply::status(429, "Rate limit reached, slow down");
            r.headers.push(("Retry-After".into(), "1".into()));
            r
        } else {
            Reply::json(
                200,
                json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                                  "finish_reason": "stop"}]}),
            )
        }
    });
    let llm = format!(
        "models:\n  \"fake@OpenAI-API-Compatible\":\n    base_url: \"{}\"\n",
        server.base_url()
    );
    let ran = CanvasCli::new()
        .json("flow.json", &llm_canvas())
        .file("rows.jsonl", rows(6))
        .file("llm.yaml", llm)
        .args([
            "batch",
            "flow.json",
            "--dataset",
            "rows.jsonl",
            "--llm-config",
            "llm.yaml",
            "--rps",
            "4",
            "--concurrency",
            "6",
            "--format",
            "json",
            "-o",
            "out.jsonl",
        ])
        .run()
        .code(0);
    assert_eq!(
        ran.json()["summary"]["counts"]["succeeded"],
        6,
        "{}",
        ran.stdout()
    );
    let times = times.lock().unwrap().clone();
    let results = std::fs::read_to_string(ran.dir().join("out.jsonl")).unwrap();
    let answers: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["answer"].clone())
        .collect();
    assert_eq!(answers, vec![json!("ok"); 6], "no row saw the refusals");
    assert_eq!(times.len(), 8, "six answers after two refusals");
    // After the refusals, nothing reached the provider for the second it asked for.
    let paused = times[2].duration_since(times[1]);
    assert!(paused >= Duration::from_millis(950), "{paused:?}");
    // At 4 calls per second the six answered calls span at least 5 × 250 ms (arrival
    // times carry the client's scheduling jitter: a margin for a loaded machine).
    let span = times[7].duration_since(times[2]);
    assert!(
        span >= Duration::from_millis(1100),
        "six calls in {span:?}: {times:?}"
    );
}
