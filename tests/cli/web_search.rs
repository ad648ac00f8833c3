//! The web-search tools (TavilySearch, TavilyExtract, GitHub, Google, SearXNG,
//! KeenableSearch, QueritSearch, QueritContents, BGPT) against local fake APIs that
//! answer with the real APIs' response shapes. Each tool runs as an Agent's tool (a mock
//! script calls it, then answers only when the tool's result holds the expected text)
//! and as a canvas node (its `node_finished` outputs), with error and rate-limit answers.

use serde_json::{Value, json};

use crate::canvases::{self, WITH_TOOLS, node_canvas};
use crate::harness::{CanvasCli, Ran};
use crate::peer::{FakeServer, Reply, Seen};
use crate::util::{streamed, trace};

// ---- Harness ---------------------------------------------------------------------------

/// begin → Agent:A (with `tools`) → Message:Out.
fn agent_canvas(tools: Value) -> Value {
    canvases::agent_canvas("Agent:A", WITH_TOOLS, tools)
}

/// Run `flow` with query `q` (and a mock script), the private network allowed (the fake
/// APIs are on 127.0.0.1) and `env` set.
fn run(flow: &Value, q: &str, mock: Option<Value>, env: &[(&str, String)]) -> Ran {
    let mut cli = CanvasCli::new().json("flow.json", flow);
    for var in [
        "TAVILY_API_KEY",
        "SERPAPI_API_KEY",
        "QUERIT_API_KEY",
        "GITHUB_TOKEN",
        "KEENABLE_API_URL",
    ] {
        cli = cli.env_remove(var);
    }
    let flow = cli.path_str("flow.json");
    cli = cli.envs(env.iter().cloned()).args([
        "run",
        &flow,
        "-q",
        q,
        "--format",
        "jsonl",
        "--allow-private-network",
    ]);
    if let Some(m) = mock {
        cli = cli.mock_llm(&m);
    }
    cli.run()
}

/// Run an Agent with one tool; the streamed answer (the run must succeed) and events.
fn agent_run(tool: Value, mock: Value, env: &[(&str, String)]) -> (String, Vec<Value>) {
    let evs = run(
        &agent_canvas(json!([tool])),
        "search please",
        Some(mock),
        env,
    )
    .code(0)
    .events();
    (streamed(&evs), evs)
}

/// Run a tool as a node showing `output`; its `node_finished` data. A node whose
/// `_ERROR` is set stops the run (exit 1), as in RAGFlow; otherwise the run succeeds.
fn node_run_showing(
    class: &str,
    params: Value,
    output: &str,
    q: &str,
    env: &[(&str, String)],
) -> Value {
    let id = format!("{class}:N");
    let ran = run(&node_canvas(class, &id, params, output), q, None, env);
    let evs = ran.events();
    let data = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == id.as_str())
        .map(|e| e["data"].clone())
        .unwrap_or_else(|| {
            panic!(
                "no node_finished for {id}: {:?}\n{}",
                trace(&evs),
                ran.stderr()
            )
        });
    let code = if data["outputs"]["_ERROR"].is_null() {
        0
    } else {
        1
    };
    assert_eq!(ran.exit_code(), Some(code), "{data}\n{}", ran.stderr());
    data
}

/// [`node_run_showing`] its `formalized_content`.
fn node_run(class: &str, params: Value, q: &str, env: &[(&str, String)]) -> Value {
    node_run_showing(class, params, "formalized_content", q, env)
}

/// A mock script: the first call asks for `tool` with `args`; the model answers
/// `answer` only once a tool result matching `seen` is in the conversation.
fn mock(tool: &str, args: Value, seen: &str, answer: &str) -> Value {
    json!({"rules": [
        {"match": seen, "on": "any", "answer": answer},
        {"match": "search please", "tool_calls": [{"name": tool, "arguments": args}]},
    ], "default": "NO MATCH"})
}

/// The chunks of the run's `message_end` reference.
fn reference_chunks(evs: &[Value]) -> Vec<Value> {
    let end = evs
        .iter()
        .find(|e| e["event"] == "message_end")
        .expect("message_end");
    end["data"]["reference"]["chunks"]
        .as_object()
        .map(|o| o.values().cloned().collect())
        .unwrap_or_default()
}

/// The single request a server saw.
fn only(server: &FakeServer) -> Seen {
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    seen.into_iter().next().unwrap()
}

/// The decoded query string of a request, as pairs.
fn query_pairs(req: &Seen) -> Vec<(String, String)> {
    let url = reqwest::Url::parse(&format!("http://x{}", req.target())).unwrap();
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

// ---- Tavily ----------------------------------------------------------------------------

fn tavily_results() -> Value {
    json!({
        "query": "tokio runtime",
        "follow_up_questions": null,
        "answer": null,
        "images": [],
        "results": [
            {"title": "Tokio - An asynchronous Rust runtime", "url": "https://tokio.rs/",
             "content": "Tokio is an event-driven, non-blocking I/O platform.", "score": 0.91,
             "raw_content": null},
            {"title": "Empty", "url": "https://example.com/empty", "content": "", "score": 0.2,
             "raw_content": null}
        ],
        "response_time": 1.2
    })
}

fn tavily_env(server: &FakeServer) -> Vec<(&'static str, String)> {
    vec![
        ("CANVAS_TAVILY_BASE_URL", server.url("")),
        ("TAVILY_API_KEY", "tvly-test".into()),
    ]
}

#[test]
fn tavily_search_as_an_agent_tool_sends_the_client_body_and_returns_knowledge() {
    let server = FakeServer::with(|_, _| Reply::json(200, tavily_results()));
    let (text, evs) = agent_run(
        json!({"component_name": "TavilySearch", "name": "TavilySearch",
            "params": {"max_results": 3, "search_depth": "advanced"}}),
        mock(
            "tavily_search_0",
            json!({"query": "tokio runtime", "topic": "news"}),
            r"(?s)Title: Tokio - An asynchronous Rust runtime.*URL: https://tokio.rs/.*event-driven, non-blocking",
            "Tokio is a runtime.",
        ),
        &tavily_env(&server),
    );
    assert!(text.ends_with("Tokio is a runtime."), "{text}");
    let req = only(&server);
    assert_eq!((req.method(), req.path()), ("POST", "/search"));
    assert_eq!(req.header("authorization"), Some("Bearer tvly-test"));
    let body = req.json();
    assert_eq!(body["query"], "tokio runtime");
    assert_eq!(body["topic"], "news");
    assert_eq!(body["max_results"], 3);
    assert_eq!(body["search_depth"], "advanced");
    assert_eq!(body["days"], 14);
    assert_eq!(body["include_raw_content"], false);
    assert_eq!(body["include_images"], false);
    assert_eq!(body["include_domains"], json!([]));
    // Only the result with content becomes a reference chunk.
    let chunks = reference_chunks(&evs);
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    assert_eq!(
        chunks[0]["document_name"],
        "Tokio - An asynchronous Rust runtime"
    );
    assert_eq!(chunks[0]["url"], "https://tokio.rs/");
}

#[test]
fn tavily_search_as_a_node_retries_a_rate_limit_then_succeeds() {
    let server = FakeServer::with(|_, n| {
        if n == 1 {
            Reply::json(
                429,
                json!({"detail": {"error": "Your request has been blocked due to excessive requests."}}),
            )
        } else {
            Reply::json(200, tavily_results())
        }
    });
    let data = node_run(
        "TavilySearch",
        json!({"max_retries": 1, "delay_after_error": 0}),
        "tokio runtime",
        &tavily_env(&server),
    );
    assert_eq!(server.seen().len(), 2);
    // The node's query defaults to {sys.query}.
    assert_eq!(server.seen()[1].json()["query"], "tokio runtime");
    assert_eq!(server.seen()[1].json()["topic"], "general");
    let out = &data["outputs"];
    assert!(out["_ERROR"].is_null(), "{data}");
    let fc = out["formalized_content"].as_str().unwrap();
    assert!(
        fc.contains("├── Title: Tokio - An asynchronous Rust runtime"),
        "{fc}"
    );
    assert!(
        fc.contains("└── Content:\nTokio is an event-driven"),
        "{fc}"
    );
    assert_eq!(out["json"], tavily_results()["results"]);
}

#[test]
fn tavily_search_errors_reach_the_model_and_error_output() {
    let server = FakeServer::with(|_, _| {
        Reply::json(
            429,
            json!({"detail": {"error": "Your request has been blocked due to excessive requests."}}),
        )
    });
    let (text, _) = agent_run(
        json!({"component_name": "TavilySearch", "name": "TavilySearch",
            "params": {"max_retries": 2, "delay_after_error": 0}}),
        mock(
            "tavily_search_0",
            json!({"query": "x"}),
            r"Tavily error: Your request has been blocked due to excessive requests\.",
            "Search is rate limited.",
        ),
        &tavily_env(&server),
    );
    assert!(text.ends_with("Search is rate limited."), "{text}");
    assert_eq!(server.seen().len(), 3, "max_retries 2: three attempts");

    // A node without any key: the client's refusal, naming the parameter and variable.
    let data = node_run("TavilySearch", json!({}), "x", &[]);
    let err = data["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.contains("api_key") && err.contains("TAVILY_API_KEY"),
        "{err}"
    );
}

#[test]
fn tavily_extract_returns_the_results_list() {
    let body = json!({
        "results": [{"url": "https://tokio.rs/", "raw_content": "# Tokio\nBuild reliable network applications.", "images": []}],
        "failed_results": [],
        "response_time": 0.5
    });
    let reply = body.clone();
    let server = FakeServer::with(move |_, _| Reply::json(200, reply.clone()));
    let (text, _) = agent_run(
        json!({"component_name": "TavilyExtract", "name": "TavilyExtract", "params": {"format": "text"}}),
        mock(
            "tavily_extract_0",
            json!({"urls": ["https://tokio.rs/"]}),
            r"Build reliable network applications",
            "Extracted.",
        ),
        &tavily_env(&server),
    );
    assert!(text.ends_with("Extracted."), "{text}");
    let req = only(&server);
    assert_eq!(req.path(), "/extract");
    assert_eq!(req.header("authorization"), Some("Bearer tvly-test"));
    assert_eq!(
        req.json(),
        json!({"urls": ["https://tokio.rs/"], "extract_depth": "basic", "format": "text",
            "include_images": false, "timeout": 30})
    );

    // As a node, with a comma-separated URL string; a failure fills `_ERROR`.
    let server = FakeServer::with(|_, _| Reply::json(500, json!({"detail": "boom"})));
    let data = node_run_showing(
        "TavilyExtract",
        json!({"urls": "https://a.com,https://b.com"}),
        "json",
        "x",
        &tavily_env(&server),
    );
    assert_eq!(
        only(&server).json()["urls"],
        json!(["https://a.com", "https://b.com"])
    );
    let err = data["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.starts_with("500 Server Error: Internal Server Error for url: http://127.0.0.1:"),
        "{err}"
    );
}

// ---- GitHub ----------------------------------------------------------------------------

fn github_repos() -> Value {
    json!({"total_count": 2, "incomplete_results": false, "items": [
        {"id": 1, "name": "tokio", "full_name": "tokio-rs/tokio",
         "html_url": "https://github.com/tokio-rs/tokio",
         "description": "A runtime for writing reliable asynchronous applications with Rust.",
         "stargazers_count": 30000, "watchers_count": 30000, "watchers": 30000, "language": "Rust"},
        {"id": 2, "name": "smol", "full_name": "smol-rs/smol",
         "html_url": "https://github.com/smol-rs/smol", "description": null,
         "stargazers_count": 4000, "watchers_count": 4000, "watchers": 4000, "language": "Rust"}
    ]})
}

fn github_rate_limited() -> Reply {
    Reply::json(
        403,
        json!({"message": "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit.)",
            "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}),
    )
}

#[test]
fn github_search_as_an_agent_tool_asks_for_the_most_starred_repositories() {
    let server = FakeServer::with(|_, _| Reply::json(200, github_repos()));
    let (text, evs) = agent_run(
        json!({"component_name": "GitHub", "name": "GitHub", "params": {"top_n": 5}}),
        mock(
            "github_search_0",
            json!({"query": "async runtime"}),
            r"(?s)Title: tokio.*URL: https://github.com/tokio-rs/tokio.*reliable asynchronous applications with Rust\.\n stars:30000.*None\n stars:4000",
            "Use tokio.",
        ),
        &[
            ("CANVAS_GITHUB_BASE_URL", server.url("")),
            ("GITHUB_TOKEN", "ghp_test".into()),
        ],
    );
    assert!(text.ends_with("Use tokio."), "{text}");
    let req = only(&server);
    assert_eq!((req.method(), req.path()), ("GET", "/search/repositories"));
    assert_eq!(
        query_pairs(&req),
        [
            ("q", "async runtime"),
            ("sort", "stars"),
            ("order", "desc"),
            ("per_page", "5")
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    assert_eq!(req.header("x-github-api-version"), Some("2022-11-28"));
    assert_eq!(req.header("authorization"), Some("Bearer ghp_test"));
    assert_eq!(reference_chunks(&evs).len(), 2);
}

#[test]
fn github_search_as_a_node_retries_and_reports_the_rate_limit() {
    let server = FakeServer::with(|_, n| {
        if n == 1 {
            github_rate_limited()
        } else {
            Reply::json(200, github_repos())
        }
    });
    let env = [("CANVAS_GITHUB_BASE_URL", server.url(""))];
    let data = node_run(
        "GitHub",
        json!({"max_retries": 1, "delay_after_error": 0}),
        "async runtime",
        &env,
    );
    assert_eq!(server.seen().len(), 2);
    // Unauthenticated without GITHUB_TOKEN, as RAGFlow.
    assert_eq!(server.seen()[1].header("authorization"), None);
    let out = &data["outputs"];
    assert_eq!(out["json"], github_repos()["items"]);
    let fc = out["formalized_content"].as_str().unwrap();
    assert!(fc.contains("├── Title: smol"), "{fc}");

    let server = FakeServer::with(|_, _| github_rate_limited());
    let data = node_run(
        "GitHub",
        json!({"delay_after_error": 0}),
        "async runtime",
        &[("CANVAS_GITHUB_BASE_URL", server.url(""))],
    );
    assert_eq!(server.seen().len(), 1);
    let err = data["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.starts_with("API rate limit exceeded for 127.0.0.1."),
        "{err}"
    );
}

// ---- Google (SerpApi) ------------------------------------------------------------------

fn serpapi_results() -> Value {
    json!({
        "search_metadata": {"id": "6650", "status": "Success", "total_time_taken": 1.1},
        "search_parameters": {"engine": "google", "q": "rust language"},
        "organic_results": [
            {"position": 1, "title": "Rust Programming Language", "link": "https://www.rust-lang.org/",
             "snippet": "A language empowering everyone to build reliable and efficient software.",
             "source": "rust-lang.org"},
            {"position": 2, "title": "Rust (programming language) - Wikipedia",
             "link": "https://en.wikipedia.org/wiki/Rust_(programming_language)",
             "snippet": "Rust is a general-purpose programming language.",
             "about_this_result": {"source": {"description": "Wikipedia is a free online encyclopedia."}}}
        ]
    })
}

#[test]
fn google_search_as_an_agent_tool_queries_serpapi() {
    let server = FakeServer::with(|_, _| Reply::json(200, serpapi_results()));
    let (text, evs) = agent_run(
        json!({"component_name": "Google", "name": "Google",
            "params": {"country": "us", "language": "en"}}),
        mock(
            "google_search_0",
            json!({"q": "rust language", "start": 10, "num": 40}),
            r"(?s)Title: Rust Programming Language.*empowering everyone.*Wikipedia is a free online encyclopedia",
            "Rust is a language.",
        ),
        &[
            ("CANVAS_GOOGLE_BASE_URL", server.url("")),
            ("SERPAPI_API_KEY", "serp-key".into()),
        ],
    );
    assert!(text.ends_with("Rust is a language."), "{text}");
    let req = only(&server);
    assert_eq!((req.method(), req.path()), ("GET", "/search"));
    // The model's start/num are not sent, as RAGFlow.
    assert_eq!(
        query_pairs(&req),
        [
            ("api_key", "serp-key"),
            ("engine", "google"),
            ("q", "rust language"),
            ("google_domain", "google.com"),
            ("gl", "us"),
            ("hl", "en"),
            ("source", "python"),
            ("output", "json"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    assert_eq!(reference_chunks(&evs).len(), 2);
}

#[test]
fn google_search_errors_retry_and_reach_the_error_output() {
    let server = FakeServer::with(|_, n| {
        if n == 1 {
            Reply::json(
                429,
                json!({"error": "Your account has run out of searches."}),
            )
        } else {
            Reply::json(200, serpapi_results())
        }
    });
    let env = [
        ("CANVAS_GOOGLE_BASE_URL", server.url("")),
        ("SERPAPI_API_KEY", "serp-key".into()),
    ];
    let data = node_run(
        "Google",
        json!({"max_retries": 1, "delay_after_error": 0}),
        "rust language",
        &env,
    );
    assert_eq!(server.seen().len(), 2);
    assert_eq!(
        data["outputs"]["json"],
        serpapi_results()["organic_results"]
    );

    let server = FakeServer::with(|_, _| {
        Reply::json(
            401,
            json!({"error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"}),
        )
    });
    let (text, _) = agent_run(
        json!({"component_name": "Google", "name": "Google", "params": {"api_key": "bad", "delay_after_error": 0}}),
        mock(
            "google_search_0",
            json!({"q": "rust"}),
            r"Google error: Invalid API key\.",
            "Google refused the key.",
        ),
        &[("CANVAS_GOOGLE_BASE_URL", server.url(""))],
    );
    assert!(text.ends_with("Google refused the key."), "{text}");
    assert_eq!(query_pairs(&only(&server))[0].1, "bad");

    // No key at all: the node fails naming the parameter and the variable.
    let data = node_run("Google", json!({}), "rust", &[]);
    let err = data["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.contains("api_key") && err.contains("SERPAPI_API_KEY"),
        "{err}"
    );
}

// ---- SearXNG ---------------------------------------------------------------------------

fn searxng_results() -> Value {
    json!({"query": "rust", "number_of_results": 0, "results": [
        {"url": "https://www.rust-lang.org/", "title": "Rust Programming Language",
         "content": "A language empowering everyone.", "engine": "duckduckgo",
         "engines": ["duckduckgo", "brave"], "score": 2.0, "category": "general"},
        {"url": "https://doc.rust-lang.org/book/", "title": "The Rust Book",
         "content": "An introductory book about Rust.", "engine": "brave", "score": 1.0,
         "category": "general"},
        {"url": "https://crates.io/", "title": "crates.io", "content": "The Rust community's crate registry.",
         "engine": "brave", "score": 0.5, "category": "general"}
    ], "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []})
}

#[test]
fn searxng_as_an_agent_tool_uses_the_models_instance_url_when_none_is_set() {
    let server = FakeServer::with(|_, _| Reply::json(200, searxng_results()));
    let (text, evs) = agent_run(
        json!({"component_name": "SearXNG", "name": "SearXNG", "params": {"top_n": "2"}}),
        mock(
            "searxng_search_0",
            json!({"query": "rust", "searxng_url": server.url("/")}),
            r"(?s)Title: Rust Programming Language.*Title: The Rust Book",
            "Found Rust.",
        ),
        &[],
    );
    assert!(text.ends_with("Found Rust."), "{text}");
    let req = only(&server);
    assert_eq!((req.method(), req.path()), ("GET", "/search"));
    assert_eq!(
        query_pairs(&req),
        [
            ("q", "rust"),
            ("format", "json"),
            ("categories", "general"),
            ("language", "auto"),
            ("safesearch", "1"),
            ("pageno", "1"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    // top_n "2": the third result is cut.
    assert_eq!(reference_chunks(&evs).len(), 2);
}

#[test]
fn searxng_as_a_node_prefers_its_parameter_and_retries_429() {
    let server = FakeServer::with(|_, n| {
        if n == 1 {
            Reply::text(429, "text/plain", "Too Many Requests")
        } else {
            Reply::json(200, searxng_results())
        }
    });
    let data = node_run(
        "SearXNG",
        json!({"searxng_url": server.url(""), "max_retries": 1, "delay_after_error": 0}),
        "rust",
        &[],
    );
    assert_eq!(server.seen().len(), 2);
    assert_eq!(data["outputs"]["json"], searxng_results()["results"]);

    let server = FakeServer::with(|_, _| Reply::text(429, "text/plain", "Too Many Requests"));
    let data = node_run(
        "SearXNG",
        json!({"searxng_url": server.url(""), "delay_after_error": 0}),
        "rust",
        &[],
    );
    let err = data["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.starts_with(
            "Network error: 429 Client Error: Too Many Requests for url: http://127.0.0.1:"
        ) && err.contains("/search?q=rust&format=json"),
        "{err}"
    );
}

#[test]
fn searxng_refuses_a_private_instance_without_the_flag() {
    let server = FakeServer::with(|_, _| Reply::json(200, searxng_results()));
    let flow = node_canvas(
        "SearXNG",
        "SearXNG:N",
        json!({"searxng_url": server.url(""), "max_retries": 3}),
        "formalized_content",
    );
    let evs = CanvasCli::new()
        .json("flow.json", &flow)
        .env_remove("CANVAS_ALLOW_PRIVATE")
        .args(["run", "flow.json", "-q", "rust", "--format", "jsonl"])
        .run()
        .code(1)
        .events();
    assert!(server.seen().is_empty(), "the instance was reached");
    let fin = evs
        .iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "SearXNG:N")
        .unwrap();
    let err = fin["data"]["outputs"]["_ERROR"].as_str().unwrap();
    assert!(err.contains("refused to connect to 127.0.0.1"), "{err}");
}

// ---- Keenable --------------------------------------------------------------------------

fn keenable_results() -> Value {
    json!({"results": [
        {"title": "Keenable search", "url": "https://keenable.ai/", "description": "Web search built for AI agents."},
        {"title": "Docs", "url": "https://docs.keenable.ai/", "description": "How to call the API."}
    ]})
}

#[test]
fn keenable_without_a_key_uses_the_public_endpoint_of_keenable_api_url() {
    let server = FakeServer::with(|_, _| Reply::json(200, keenable_results()));
    let (text, evs) = agent_run(
        json!({"component_name": "KeenableSearch", "name": "KeenableSearch", "params": {"top_n": 1}}),
        mock(
            "keenable_search_0",
            json!({"query": "agent search", "site": "keenable.ai"}),
            r"(?s)Title: Keenable search.*Web search built for AI agents\.",
            "Keenable answered.",
        ),
        // RAGFlow's own variable is honoured.
        &[("KEENABLE_API_URL", server.url("/"))],
    );
    assert!(text.ends_with("Keenable answered."), "{text}");
    let req = only(&server);
    assert_eq!((req.method(), req.path()), ("POST", "/v1/search/public"));
    assert_eq!(req.header("x-api-key"), None);
    assert_eq!(req.header("x-keenable-title"), Some("RAGFlow"));
    assert_eq!(req.header("user-agent"), Some("keenable-ragflow"));
    assert_eq!(
        req.json(),
        json!({"query": "agent search", "mode": "pro", "site": "keenable.ai"})
    );
    assert_eq!(reference_chunks(&evs).len(), 1);
}

#[test]
fn keenable_with_a_key_retries_429_on_the_keyed_endpoint() {
    let server = FakeServer::with(|_, n| {
        if n == 1 {
            Reply::json(429, json!({"detail": "rate limited"}))
        } else {
            Reply::json(200, keenable_results())
        }
    });
    let env = [("CANVAS_KEENABLE_BASE_URL", server.url(""))];
    let data = node_run(
        "KeenableSearch",
        json!({"api_key": "kn-key", "mode": "realtime", "max_retries": 1, "delay_after_error": 0}),
        "agent search",
        &env,
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].path(), "/v1/search");
    assert_eq!(seen[1].header("x-api-key"), Some("kn-key"));
    assert_eq!(
        seen[1].json(),
        json!({"query": "agent search", "mode": "realtime"})
    );
    assert_eq!(data["outputs"]["json"], keenable_results()["results"]);

    let server = FakeServer::with(|_, _| Reply::json(429, json!({"detail": "rate limited"})));
    let data = node_run(
        "KeenableSearch",
        json!({"delay_after_error": 0}),
        "agent search",
        &[("CANVAS_KEENABLE_BASE_URL", server.url(""))],
    );
    let err = data["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.starts_with("429 Client Error: Too Many Requests for url: http://127.0.0.1:")
            && err.ends_with("/v1/search/public"),
        "{err}"
    );
}

// ---- Querit ----------------------------------------------------------------------------

fn querit_search_answer() -> Value {
    json!({"took": "0.42s", "error_code": 200, "error_msg": "", "search_id": 8812,
    "query_context": {"query": "solar power"},
    "results": {"result": [
        {"url": "https://example.org/solar", "page_age": "2025-01-03T00:00:00Z",
         "title": "Solar power today", "snippet": "Solar panels convert sunlight into electricity.",
         "site_name": "example.org", "site_icon": "https://example.org/favicon.ico"}
    ]}})
}

fn querit_env(server: &FakeServer) -> Vec<(&'static str, String)> {
    vec![
        ("CANVAS_QUERIT_BASE_URL", server.url("")),
        ("QUERIT_API_KEY", "qk-test".into()),
    ]
}

#[test]
fn querit_search_as_an_agent_tool_sends_filters_and_returns_knowledge() {
    let server = FakeServer::with(|_, _| Reply::json(200, querit_search_answer()));
    let (text, evs) = agent_run(
        json!({"component_name": "QueritSearch", "name": "QueritSearch", "params": {"count": 5}}),
        mock(
            "querit_search_0",
            json!({"query": "solar power", "site_include": ["example.org"], "time_range": "m3",
                "language_include": ["en"]}),
            r"(?s)Title: Solar power today.*Solar panels convert sunlight",
            "Solar answered.",
        ),
        &querit_env(&server),
    );
    assert!(text.ends_with("Solar answered."), "{text}");
    let req = only(&server);
    assert_eq!((req.method(), req.path()), ("POST", "/v1/search"));
    assert_eq!(req.header("authorization"), Some("Bearer qk-test"));
    assert_eq!(
        req.json(),
        json!({"query": "solar power", "count": 5, "chunksPerDoc": 3, "filters": {
            "sites": {"include": ["example.org"]}, "timeRange": {"date": "m3"},
            "languages": {"include": ["en"]}}})
    );
    let chunks = reference_chunks(&evs);
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0]["similarity"], 1);
}

#[test]
fn querit_search_makes_three_attempts_on_429_and_none_more() {
    let server = FakeServer::with(|_, n| {
        if n < 3 {
            Reply::json(429, json!({"error_code": 429, "error_msg": "rate limited"}))
        } else {
            Reply::json(200, querit_search_answer())
        }
    });
    let data = node_run(
        "QueritSearch",
        json!({"delay_after_error": 0}),
        "solar power",
        &querit_env(&server),
    );
    assert_eq!(server.seen().len(), 3);
    // `json` is the whole response.
    assert_eq!(data["outputs"]["json"], querit_search_answer());

    let server = FakeServer::with(|_, _| Reply::json(429, json!({"error_msg": "rate limited"})));
    let data = node_run(
        "QueritSearch",
        json!({"delay_after_error": 0, "max_retries": 5}),
        "solar power",
        &querit_env(&server),
    );
    assert_eq!(server.seen().len(), 3, "always three attempts");
    let err = data["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.starts_with("429 Client Error: Too Many Requests for url: http://127.0.0.1:"),
        "{err}"
    );

    // A client error is not retried; the model reads "Querit error: …".
    let server = FakeServer::with(|_, _| Reply::json(401, json!({"error_msg": "invalid key"})));
    let (text, _) = agent_run(
        json!({"component_name": "QueritSearch", "name": "QueritSearch", "params": {"delay_after_error": 0}}),
        mock(
            "querit_search_0",
            json!({"query": "solar"}),
            r"Querit error: 401 Client Error: Unauthorized",
            "Querit refused.",
        ),
        &querit_env(&server),
    );
    assert!(text.ends_with("Querit refused."), "{text}");
    assert_eq!(server.seen().len(), 1);

    // No key: RAGFlow's message.
    let data = node_run("QueritSearch", json!({}), "solar", &[]);
    assert_eq!(
        data["outputs"]["_ERROR"],
        "Querit API key is required. Configure api_key or set QUERIT_API_KEY."
    );
}

fn querit_contents_answer() -> Value {
    json!({"results": [{"url": "https://example.org/solar", "title": "Solar power today",
        "content": "# Solar\nPanels convert sunlight."}],
        "statuses": [{"url": "https://example.org/solar", "status": "success"}]})
}

#[test]
fn querit_contents_reads_pages() {
    let server = FakeServer::with(|_, _| Reply::json(200, querit_contents_answer()));
    let (text, _) = agent_run(
        json!({"component_name": "QueritContents", "name": "QueritContents",
            "params": {"urls": "https://example.org/default", "format": "text"}}),
        mock(
            "querit_contents_0",
            json!({"urls": ["https://example.org/solar"], "crawl_timeout": 20}),
            r"Panels convert sunlight",
            "Read it.",
        ),
        &querit_env(&server),
    );
    assert!(text.ends_with("Read it."), "{text}");
    let req = only(&server);
    assert_eq!((req.method(), req.path()), ("POST", "/v1/contents"));
    assert_eq!(req.header("authorization"), Some("Bearer qk-test"));
    assert_eq!(
        req.json(),
        json!({"urls": ["https://example.org/solar"], "format": "text", "crawlTimeout": 20,
            "extrasMeta": false})
    );

    // As a node: the configured URLs; a 5xx is retried.
    let server = FakeServer::with(|_, n| {
        if n == 1 {
            Reply::json(503, json!({}))
        } else {
            Reply::json(200, querit_contents_answer())
        }
    });
    let data = node_run_showing(
        "QueritContents",
        json!({"urls": "https://example.org/a, https://example.org/b", "delay_after_error": 0}),
        "json",
        "x",
        &querit_env(&server),
    );
    assert_eq!(server.seen().len(), 2);
    assert_eq!(
        server.seen()[1].json()["urls"],
        json!(["https://example.org/a", "https://example.org/b"])
    );
    assert_eq!(data["outputs"]["json"], querit_contents_answer());
}

// ---- BGPT ------------------------------------------------------------------------------

fn bgpt_answer() -> Value {
    json!({"results": [{
        "title": "Caffeine and sleep latency", "authors": "Doe J; Roe R", "journal": "Sleep Med",
        "year": 2022, "doi": "10.1000/sleep.2022.1", "url": "https://doi.org/10.1000/sleep.2022.1",
        "abstract": "Caffeine delays sleep onset.",
        "methods_and_experimental_techniques": "Randomised crossover trial.",
        "sample_size_and_population_characteristics": "n=48 healthy adults",
        "results_and_conclusions": "Latency rose by 12 minutes.",
        "paper_limitations_and_biases": "Small sample.", "study_blindspots": "Only young adults.",
        "how_to_falsify": "Replicate in older adults.", "quality_score": 7
    }], "total": 1})
}

#[test]
fn bgpt_as_an_agent_tool_returns_structured_evidence() {
    let server = FakeServer::with(|_, _| Reply::json(200, bgpt_answer()));
    let (text, evs) = agent_run(
        json!({"component_name": "BGPT", "name": "BGPT", "params": {"top_n": 3, "days_back": "30"}}),
        mock(
            "bgpt_search_0",
            json!({"query": "  caffeine sleep  "}),
            r"(?s)Sample size / population: n=48 healthy adults.*Conflicts of interest: -.*How to falsify: Replicate in older adults\.",
            "Caffeine delays sleep.",
        ),
        &[("CANVAS_BGPT_BASE_URL", server.url(""))],
    );
    assert!(text.ends_with("Caffeine delays sleep."), "{text}");
    let req = only(&server);
    assert_eq!((req.method(), req.path()), ("POST", "/api/mcp-search"));
    assert_eq!(
        req.json(),
        json!({"query": "caffeine sleep", "num_results": 3, "days_back": 30})
    );
    let chunks = reference_chunks(&evs);
    assert_eq!(chunks[0]["url"], "https://doi.org/10.1000/sleep.2022.1");
}

#[test]
fn bgpt_retries_429_but_not_other_client_errors() {
    let server = FakeServer::with(|_, n| {
        if n == 1 {
            Reply::json(429, json!({"error": "slow down"}))
        } else {
            Reply::json(200, bgpt_answer())
        }
    });
    let env = [("CANVAS_BGPT_BASE_URL", server.url(""))];
    let data = node_run(
        "BGPT",
        json!({"max_retries": 2, "delay_after_error": 0, "api_key": "bg-key"}),
        "caffeine",
        &env,
    );
    assert_eq!(server.seen().len(), 2);
    assert_eq!(server.seen()[1].json()["api_key"], "bg-key");
    assert_eq!(data["outputs"]["json"], bgpt_answer()["results"]);

    let server = FakeServer::with(|_, _| Reply::json(400, json!({"error": "bad query"})));
    let data = node_run(
        "BGPT",
        json!({"max_retries": 2, "delay_after_error": 0}),
        "caffeine",
        &[("CANVAS_BGPT_BASE_URL", server.url(""))],
    );
    assert_eq!(server.seen().len(), 1, "a 400 is not retried");
    let err = data["outputs"]["_ERROR"].as_str().unwrap();
    assert!(
        err.starts_with("HTTP error: 400 Client Error: Bad Request for url: http://127.0.0.1:"),
        "{err}"
    );
}
