//! Web service tools (DeepL, QWeather, WenCai, AkShare, YahooFinance, Email) driven as
//! an Agent's tools from a mock script and as canvas nodes, against local fake peers:
//! each test checks what the peer received and what the tool produced.

use serde_json::{Value, json};

use crate::canvases::{self, WITH_TOOLS};
use crate::harness::CanvasCli;
use crate::peer::{FakeServer, Reply, Seen};
use crate::util::{streamed, trace};

/// Begin → Agent (with `tools`) → Message.
fn agent_canvas(tools: Value) -> Value {
    canvases::agent_canvas("Agent:A", WITH_TOOLS, tools)
}

/// Begin → the tool as node `Tool:T` (class `class`) → Message showing `output`.
fn node_canvas(class: &str, params: Value, output: &str) -> Value {
    canvases::node_canvas(class, "Tool:T", params, output)
}

/// Run `flow` with query `q` (and `mock`, if any) and `env`; the exit code and the
/// events.
fn run_code(
    flow: &Value,
    mock: Option<&Value>,
    q: &str,
    env: &[(&str, String)],
) -> (Option<i32>, Vec<Value>) {
    let mut cli = CanvasCli::new().json("flow.json", flow).args([
        "run",
        "flow.json",
        "-q",
        q,
        "--format",
        "jsonl",
        "--allow-private-network",
    ]);
    if let Some(m) = mock {
        cli = cli.mock_llm(m);
    }
    let ran = cli.envs(env.iter().cloned()).run();
    let code = ran.exit_code();
    if code != Some(0) && code != Some(1) {
        panic!("{}", ran.stderr());
    }
    (code, ran.events())
}

/// A run that must succeed; its events.
fn run(flow: &Value, mock: Option<&Value>, q: &str, env: &[(&str, String)]) -> Vec<Value> {
    let (code, evs) = run_code(flow, mock, q, env);
    assert_eq!(code, Some(0), "{:?}", trace(&evs));
    evs
}

/// A run whose tool node fails (a node's `_ERROR` fails the run, as in RAGFlow); the
/// tool's `_ERROR`.
fn run_failing(flow: &Value, q: &str, env: &[(&str, String)]) -> String {
    let (code, evs) = run_code(flow, None, q, env);
    assert_eq!(code, Some(1), "{:?}", trace(&evs));
    node_outputs(&evs)["_ERROR"]
        .as_str()
        .unwrap_or_else(|| panic!("no _ERROR: {:?}", node_outputs(&evs)))
        .to_string()
}

/// `node_finished.outputs` of `Tool:T`.
fn node_outputs(evs: &[Value]) -> Value {
    evs.iter()
        .find(|e| e["event"] == "node_finished" && e["data"]["component_id"] == "Tool:T")
        .unwrap_or_else(|| panic!("no node_finished for Tool:T: {:?}", trace(evs)))["data"]
        ["outputs"]
        .clone()
}

/// `node_started.thoughts` of `Tool:T`.
fn node_thoughts(evs: &[Value]) -> String {
    evs.iter()
        .find(|e| e["event"] == "node_started" && e["data"]["component_id"] == "Tool:T")
        .and_then(|e| e["data"]["thoughts"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The decoded value of query parameter `name` of a request.
fn query_param(req: &Seen, name: &str) -> Option<String> {
    let url = reqwest::Url::parse(&format!("http://x{}", req.target())).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

// ---------------------------------------------------------------- DeepL

fn deepl_server() -> FakeServer {
    // The first call is rate limited; DeepL's client library retries it.
    FakeServer::with(|req: &Seen, n| {
        if req.path() != "/v2/translate" {
            return Reply::json(404, json!({"message": "no route"}));
        }
        if req.header("authorization") == Some("DeepL-Auth-Key bad-key") {
            return Reply::json(403, json!({"message": "Wrong key"}));
        }
        if n == 1 {
            return Reply::json(429, json!({"message": "Too many requests"}));
        }
        Reply::json(
            200,
            json!({"translations": [{"detected_source_language": "ZH", "text": "Hello, world"}]}),
        )
    })
}

#[test]
fn deepl_translates_for_an_agent_after_a_rate_limit() {
    let server = deepl_server();
    let flow = agent_canvas(json!([
        {"component_name": "DeepL", "name": "DeepL", "params": {"auth_key": "k-1:fx", "target_lang": "EN-US"}},
    ]));
    let mock = json!({"rules": [
        {"match": "Hello, world", "on": "any", "answer": "It says: Hello, world."},
        {"match": "translate", "tool_calls": [{"name": "deepl_translate_0", "arguments": {"query": "你好，世界"}}]},
    ]});
    let evs = run(
        &flow,
        Some(&mock),
        "translate 你好，世界",
        &[("CANVAS_DEEPL_BASE_URL", server.url(""))],
    );
    assert_eq!(
        streamed(&evs),
        "Running the deepl_translate_0 tool...It says: Hello, world."
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "one 429, then the retry");
    for s in &seen {
        assert_eq!(s.method(), "POST");
        assert_eq!(s.header("authorization"), Some("DeepL-Auth-Key k-1:fx"));
        assert_eq!(
            s.json(),
            json!({"text": ["你好，世界"], "source_lang": "ZH", "target_lang": "EN-US"})
        );
    }
}

#[test]
fn deepl_as_a_node_reads_its_key_from_the_environment_and_reports_errors() {
    let server = deepl_server();
    let flow = node_canvas("DeepL", json!({}), "formalized_content");
    let evs = run(
        &flow,
        None,
        "你好",
        &[
            ("CANVAS_DEEPL_BASE_URL", server.url("")),
            ("DEEPL_AUTH_KEY", "env-key".into()),
        ],
    );
    let out = node_outputs(&evs);
    assert_eq!(out["formalized_content"], "Hello, world");
    assert_eq!(node_thoughts(&evs), "Translating into EN-GB: 你好");
    assert_eq!(
        server.seen()[1].header("authorization"),
        Some("DeepL-Auth-Key env-key")
    );

    let flow = node_canvas(
        "DeepL",
        json!({"auth_key": "bad-key"}),
        "formalized_content",
    );
    let err = run_failing(&flow, "你好", &[("CANVAS_DEEPL_BASE_URL", server.url(""))]);
    assert_eq!(
        err,
        "DeepL error: Authorization failure, check auth_key, message: Wrong key"
    );

    // No key at all: said before any request.
    let before = server.seen().len();
    let err = run_failing(
        &node_canvas("DeepL", json!({}), "formalized_content"),
        "你好",
        &[("CANVAS_DEEPL_BASE_URL", server.url(""))],
    );
    assert_eq!(
        err,
        "DeepL error: no DeepL API key: set the `auth_key` parameter or DEEPL_AUTH_KEY"
    );
    assert_eq!(server.seen().len(), before);
}

// ---------------------------------------------------------------- QWeather

fn qweather_server() -> FakeServer {
    FakeServer::with(|req: &Seen, _| {
        let location = query_param(req, "location").unwrap_or_default();
        match req.path() {
            "/v2/city/lookup" if location == "北京" => Reply::json(
                200,
                json!({"code": "200", "location": [{"name": "北京", "id": "101010100", "lat": "39.90", "lon": "116.40"}]}),
            ),
            "/v2/city/lookup" if location == "busy" => Reply::json(429, json!({"code": "429"})),
            "/v2/city/lookup" => Reply::json(200, json!({"code": "404"})),
            "/v7/weather/now" => Reply::json(
                200,
                json!({"code": "200", "updateTime": "2024-06-01T10:00+08:00",
                    "now": {"obsTime": "2024-06-01T09:50+08:00", "temp": "24", "text": "晴", "humidity": "40"}}),
            ),
            "/v7/indices/1d" => Reply::json(
                200,
                json!({"code": "200", "daily": [
                    {"date": "2024-06-01", "type": "1", "name": "运动指数", "level": "2", "category": "较适宜", "text": "天气较好"},
                    {"date": "2024-06-01", "type": "2", "name": "洗车指数", "level": "1", "category": "适宜", "text": "无雨"}]}),
            ),
            _ => Reply::text(500, "text/html", "<html>oops</html>"),
        }
    })
}

#[test]
fn qweather_looks_up_the_location_then_the_weather_for_an_agent() {
    let server = qweather_server();
    let flow = agent_canvas(json!([
        {"component_name": "QWeather", "name": "QWeather", "params": {"web_apikey": "qw-key", "lang": "en"}},
    ]));
    let mock = json!({"rules": [
        {"match": "'temp': '24', 'text': '晴'", "on": "any", "answer": "Sunny, 24 degrees."},
        {"match": "weather", "tool_calls": [{"name": "qweather_0", "arguments": {"query": "北京"}}]},
    ]});
    let evs = run(
        &flow,
        Some(&mock),
        "weather in Beijing?",
        &[
            ("CANVAS_QWEATHER_GEO_BASE_URL", server.url("")),
            ("CANVAS_QWEATHER_BASE_URL", server.url("")),
        ],
    );
    assert_eq!(
        streamed(&evs),
        "Running the qweather_0 tool...Sunny, 24 degrees."
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path(), "/v2/city/lookup");
    assert_eq!(query_param(&seen[0], "key").as_deref(), Some("qw-key"));
    assert_eq!(seen[1].path(), "/v7/weather/now");
    assert_eq!(
        query_param(&seen[1], "location").as_deref(),
        Some("101010100")
    );
    assert_eq!(query_param(&seen[1], "lang").as_deref(), Some("en"));
    assert_eq!(query_param(&seen[1], "key").as_deref(), Some("qw-key"));
}

#[test]
fn qweather_as_a_node_gives_indices_api_codes_and_errors() {
    let server = qweather_server();
    let env = [
        ("CANVAS_QWEATHER_GEO_BASE_URL", server.url("")),
        ("CANVAS_QWEATHER_BASE_URL", server.url("")),
        ("QWEATHER_API_KEY", "env-key".to_string()),
    ];
    let evs = run(
        &node_canvas("QWeather", json!({"type": "indices"}), "formalized_content"),
        None,
        "北京",
        &env,
    );
    assert_eq!(
        node_outputs(&evs)["formalized_content"],
        "2024-06-01\n运动指数: 较适宜, 天气较好\n洗车指数: 适宜, 无雨"
    );
    assert_eq!(node_thoughts(&evs), "Looking up the weather for: 北京");
    let seen = server.seen();
    assert_eq!(query_param(&seen[1], "type").as_deref(), Some("0"));
    assert_eq!(query_param(&seen[1], "key").as_deref(), Some("env-key"));

    // QWeather's rate limit answer carries its own code: RAGFlow's explanation, no retry.
    let before = server.seen().len();
    let evs = run(
        &node_canvas(
            "QWeather",
            json!({"max_retries": 2, "delay_after_error": 0}),
            "formalized_content",
        ),
        None,
        "busy",
        &env,
    );
    assert_eq!(
        node_outputs(&evs)["formalized_content"],
        "**Error** Exceeded the limited QPM (number of accesses per minute), please refer to the QPM description"
    );
    assert_eq!(server.seen().len(), before + 1);

    // An answer that is not JSON is retried, then reported.
    let before = server.seen().len();
    let err = run_failing(
        &node_canvas(
            "QWeather",
            json!({"type": "airquality", "max_retries": 1, "delay_after_error": 0}),
            "formalized_content",
        ),
        "北京",
        &env,
    );
    assert_eq!(err, "Expecting value: line 1 column 1 (char 0)");
    assert_eq!(
        server.seen().len(),
        before + 4,
        "two attempts of two requests"
    );
}

// ---------------------------------------------------------------- WenCai

#[test]
fn wencai_is_ragflows_empty_stub() {
    let flow = agent_canvas(json!([
        {"component_name": "WenCai", "name": "WenCai", "params": {"top_n": 5, "query_type": "stock"}},
    ]));
    // The tool result is empty: the mock's `any` text then ends with the user message
    // and one empty result line.
    let mock = json!({"rules": [
        {"match": "stocks to pick\\?\n\\z", "on": "any", "answer": "no data"},
        {"match": "stocks", "tool_calls": [{"name": "iwencai_0", "arguments": {"query": "低估值白酒股"}}]},
    ]});
    let evs = run(&flow, Some(&mock), "stocks to pick?", &[]);
    assert_eq!(streamed(&evs), "Running the iwencai_0 tool...no data");

    let evs = run(
        &node_canvas("WenCai", json!({}), "report"),
        None,
        "白酒",
        &[],
    );
    assert_eq!(node_outputs(&evs)["report"], "");
    assert_eq!(
        node_thoughts(&evs),
        "Pulling live financial data for `白酒`."
    );
}

// ---------------------------------------------------------------- AkShare

fn akshare_server() -> FakeServer {
    FakeServer::with(|req: &Seen, n| {
        if req.path() != "/search/jsonp" {
            return Reply::json(404, json!({}));
        }
        if n == 1 {
            return Reply::text(429, "text/html", "<html>Too Many Requests</html>");
        }
        let cb = query_param(req, "cb").unwrap_or_default();
        let body = json!({"code": 0, "msg": "", "result": {"cmsArticleWebOld": [
            {"date": "2024-06-01 09:30:00", "mediaName": "证券时报", "code": "202406013000",
             "title": "<em>贵州茅台</em>：股东大会通过分红方案", "content": "(<em>600519</em>)每股派息30.876元\u{3000}\r\n详见公告",
             "url": "http://finance.eastmoney.com/a/202406013000.html", "image": ""},
            {"date": "2024-05-31 18:00:00", "mediaName": "新华社", "code": "2",
             "title": "白酒板块走强", "content": "板块整体上涨", "url": "http://finance.eastmoney.com/a/2.html", "image": ""},
        ]}});
        Reply::text(200, "text/javascript", &format!("{cb}({body})"))
    })
}

#[test]
fn akshare_fetches_stock_news_after_a_rate_limit() {
    let server = akshare_server();
    let flow = agent_canvas(json!([
        {"component_name": "AkShare", "name": "AkShare", "params": {"top_n": 1, "max_retries": 1, "delay_after_error": 0}},
    ]));
    let mock = json!({"rules": [
        {"match": "(?s)贵州茅台：股东大会通过分红方案</a>\\n 新闻内容: 600519每股派息30.876元 详见公告 \\n发布时间:2024-06-01 09:30:00 \\n文章来源: 证券时报", "on": "any",
         "answer": "Moutai pays a dividend."},
        {"match": "news", "tool_calls": [{"name": "akshare_stock_news_0", "arguments": {"query": "600519"}}]},
    ]});
    let evs = run(
        &flow,
        Some(&mock),
        "news of 600519?",
        &[("CANVAS_AKSHARE_BASE_URL", server.url(""))],
    );
    assert_eq!(
        streamed(&evs),
        "Running the akshare_stock_news_0 tool...Moutai pays a dividend."
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "the 429 was retried once");
    let param: Value = serde_json::from_str(&query_param(&seen[1], "param").unwrap()).unwrap();
    assert_eq!(param["keyword"], "600519");
    assert_eq!(param["type"], json!(["cmsArticleWebOld"]));
    assert_eq!(param["param"]["cmsArticleWebOld"]["pageIndex"], 1);
}

#[test]
fn akshare_as_a_node_formats_every_article_or_reports_the_failure() {
    let server = akshare_server();
    let env = [("CANVAS_AKSHARE_BASE_URL", server.url(""))];
    // Without retries the first (rate-limited) answer is the failure.
    let err = run_failing(
        &node_canvas("AkShare", json!({}), "formalized_content"),
        "600519",
        &env,
    );
    assert_eq!(
        err,
        "East Money answered HTTP 429: <html>Too Many Requests</html>"
    );
    let evs = run(
        &node_canvas("AkShare", json!({"top_n": 10}), "formalized_content"),
        None,
        "600519",
        &env,
    );
    let text = node_outputs(&evs)["formalized_content"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(text.split("\n\n").count(), 2, "{text}");
    assert!(text.ends_with(
        "<a href=\"http://finance.eastmoney.com/a/2.html\">白酒板块走强</a>\n 新闻内容: 板块整体上涨 \n发布时间:2024-05-31 18:00:00 \n文章来源: 新华社"
    ), "{text}");
    assert_eq!(
        node_thoughts(&evs),
        "Looking up the latest stock news for: 600519"
    );
}

// ---------------------------------------------------------------- Email

/// One SMTP session a sink accepted.
#[derive(Debug, Clone, Default)]
struct SmtpSession {
    /// Command lines, in order.
    commands: Vec<String>,
    /// The message data, without the final dot line.
    data: String,
}

/// A plain-text SMTP server on 127.0.0.1 (no STARTTLS offered): greets connection n
/// with `greeting(n)`, accepts `AUTH PLAIN` for `user`/`secret` only, and records
/// each session.
struct SmtpSink {
    port: u16,
    sessions: std::sync::Arc<std::sync::Mutex<Vec<SmtpSession>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SmtpSink {
    fn start(user: &str, greeting: fn(usize) -> &'static str) -> SmtpSink {
        use std::io::{BufRead, BufReader, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sessions = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (sessions2, stop2) = (sessions.clone(), stop.clone());
        let plain = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(format!("\0{user}\0secret"))
        };
        let thread = std::thread::spawn(move || {
            for (i, conn) in listener.incoming().enumerate() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
                    .unwrap();
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut session = SmtpSession::default();
                let greet = greeting(i + 1);
                let _ = conn.write_all(format!("{greet}\r\n").as_bytes());
                if !greet.starts_with("220") {
                    sessions2.lock().unwrap().push(session);
                    continue;
                }
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let line = line.trim_end().to_string();
                    session.commands.push(line.clone());
                    let upper = line.to_ascii_uppercase();
                    let reply = if upper.starts_with("EHLO") {
                        "250-sink\r\n250-AUTH PLAIN LOGIN\r\n250 8BITMIME".to_string()
                    } else if upper.starts_with("AUTH PLAIN") {
                        if line[10..].trim() == plain {
                            "235 2.7.0 Authentication successful".into()
                        } else {
                            "535 5.7.8 Authentication credentials invalid".into()
                        }
                    } else if upper.starts_with("DATA") {
                        let _ = conn.write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n");
                        loop {
                            let mut l = String::new();
                            if reader.read_line(&mut l).unwrap_or(0) == 0 || l == ".\r\n" {
                                break;
                            }
                            session.data.push_str(&l);
                        }
                        "250 2.0.0 queued".into()
                    } else if upper.starts_with("QUIT") {
                        let _ = conn.write_all(b"221 bye\r\n");
                        break;
                    } else {
                        "250 2.1.0 ok".into()
                    };
                    let _ = conn.write_all(format!("{reply}\r\n").as_bytes());
                }
                sessions2.lock().unwrap().push(session);
            }
        });
        SmtpSink {
            port,
            sessions,
            stop,
            thread: Some(thread),
        }
    }

    fn sessions(&self) -> Vec<SmtpSession> {
        self.sessions.lock().unwrap().clone()
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn email_params(sink: &SmtpSink, password: &str) -> Value {
    json!({"smtp_server": "127.0.0.1", "smtp_port": sink.port, "email": "bot@example.com",
        "smtp_username": "bot-user", "password": password, "sender_name": "Canvas Bot",
        "max_retries": 1, "delay_after_error": 0})
}

/// The decoded HTML body of a message built as Python's `email` package builds it.
fn html_body(data: &str) -> String {
    use base64::Engine as _;
    let part = data
        .split("Content-Transfer-Encoding: base64\r\n\r\n")
        .nth(1)
        .expect("a base64 part");
    let b64: String = part
        .lines()
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .concat();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
    )
    .unwrap()
}

#[test]
fn email_is_sent_for_an_agent_after_a_busy_greeting() {
    // The first connection is turned away (RAGFlow's SMTPConnectError: retried).
    let sink = SmtpSink::start("bot-user", |n| {
        if n == 1 {
            "421 4.3.2 busy, try later"
        } else {
            "220 sink ESMTP"
        }
    });
    let flow = agent_canvas(json!([
        {"component_name": "Email", "name": "Email", "params": email_params(&sink, "secret")},
    ]));
    let mock = json!({"rules": [
        {"match": "\\nTrue\\z", "on": "any", "answer": "Sent."},
        {"match": "report", "tool_calls": [{"name": "email_0", "arguments": {
            "to_email": "alice@example.com", "cc_email": "bob@example.com, carol@example.com",
            "subject": "Weekly report", "content": "<b>All good</b>"}}]},
    ]});
    let evs = run(&flow, Some(&mock), "send the report", &[]);
    assert_eq!(streamed(&evs), "Running the email_0 tool...Sent.");
    let sessions = sink.sessions();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert!(sessions[0].commands.is_empty());
    let s = &sessions[1];
    let plain = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode("\0bot-user\0secret")
    };
    assert!(s.commands.contains(&format!("AUTH PLAIN {plain}")), "{s:?}");
    let envelope: Vec<&String> = s
        .commands
        .iter()
        .filter(|c| c.starts_with("MAIL") || c.starts_with("RCPT"))
        .collect();
    assert_eq!(
        envelope,
        [
            "MAIL FROM:<bot@example.com>",
            "RCPT TO:<alice@example.com>",
            "RCPT TO:<bob@example.com>",
            "RCPT TO:<carol@example.com>"
        ]
    );
    for header in [
        "\r\nFrom: Canvas Bot <bot@example.com>\r\n",
        "\r\nTo: alice@example.com\r\n",
        "\r\nCc: bob@example.com, carol@example.com\r\n",
        "\r\nSubject: =?utf-8?q?Weekly_report?=\r\n",
    ] {
        assert!(s.data.contains(header), "{header:?} in {}", s.data);
    }
    assert!(
        s.data
            .starts_with("Content-Type: multipart/alternative; boundary=\"===============")
    );
    assert!(
        s.data
            .contains("Content-Type: text/html; charset=\"utf-8\"")
    );
    assert_eq!(html_body(&s.data), "<b>All good</b>");
}

#[test]
fn email_as_a_node_reports_success_or_a_refused_login() {
    let sink = SmtpSink::start("bot-user", |_| "220 sink ESMTP");
    let params = email_params(&sink, "secret");
    let mut with_subject = params.clone();
    with_subject["subject"] = json!("周报");
    with_subject["content"] = json!("<p>完成</p>");
    let evs = run(
        &node_canvas("Email", with_subject, "success"),
        None,
        "alice@example.com",
        &[],
    );
    assert_eq!(node_outputs(&evs)["success"], true);
    assert_eq!(
        node_thoughts(&evs),
        "\nTo: alice@example.com\nSubject: 周报\nYour email is on its way—sit tight!\n"
    );
    let s = &sink.sessions()[0];
    assert!(
        s.data.contains("\r\nSubject: =?utf-8?b?5ZGo5oql?=\r\n"),
        "{}",
        s.data
    );
    assert_eq!(html_body(&s.data), "<p>完成</p>");

    // A refused login is final: no retry, `success` false.
    let err = run_failing(
        &node_canvas("Email", email_params(&sink, "wrong"), "success"),
        "alice@example.com",
        &[],
    );
    assert_eq!(
        err,
        "SMTP Authentication failed. Please check your SMTP username(email) and authorization code."
    );
    assert_eq!(sink.sessions().len(), 2, "the login was not retried");
}

// ---------------------------------------------------------------- YahooFinance

/// Yahoo's hosts on one fake server: the cookie page, the crumb, quoteSummary, the v7
/// quote, fundamentals timeseries, the chart and the news stream. The first
/// quoteSummary call is rate limited when `limit_first` is set; the news stream always
/// is when `news_limited` is.
fn yahoo_server(limit_first: bool, news_limited: bool) -> FakeServer {
    let summaries = std::sync::atomic::AtomicUsize::new(0);
    FakeServer::with(move |req: &Seen, _| {
        let path = req.path().to_string();
        if path == "/cookie" {
            let mut r = Reply::text(404, "text/html", "<html>Not found</html>");
            r.headers.push((
                "Set-Cookie".into(),
                "A3=d=AQABBtest&S=AQAAA; Expires=Sun, 22 Nov 2027 02:00:00 GMT; Max-Age=31557600; Domain=.yahoo.com; Path=/; SameSite=None; Secure; HttpOnly".into(),
            ));
            return r;
        }
        let has_cookie = req.header("cookie") == Some("A3=d=AQABBtest&S=AQAAA");
        if path == "/v1/test/getcrumb" {
            return if has_cookie {
                Reply::text(200, "text/plain", "Cr4mb.x")
            } else {
                Reply::text(401, "text/plain", "")
            };
        }
        if !has_cookie || query_param(req, "crumb").as_deref() != Some("Cr4mb.x") {
            return Reply::json(
                401,
                json!({"finance": {"error": {"code": "Unauthorized", "description": "Invalid Crumb"}}}),
            );
        }
        match path.as_str() {
            "/v10/finance/quoteSummary/AAPL" => {
                let n = summaries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if limit_first && n == 0 {
                    return Reply::text(429, "text/html", "Too Many Requests");
                }
                if query_param(req, "modules").as_deref() == Some("calendarEvents") {
                    return Reply::json(
                        200,
                        json!({"quoteSummary": {"result": [{"calendarEvents": {
                        "maxAge": 1, "earnings": {"earningsDate": [1722470400], "earningsCallDate": [1722544200],
                        "isEarningsDateEstimate": false, "earningsAverage": 1.34, "earningsLow": 1.31,
                        "earningsHigh": 1.4, "revenueAverage": 84378000000i64, "revenueLow": 82000000000i64,
                        "revenueHigh": 86000000000i64},
                        "exDividendDate": 1715558400, "dividendDate": 1715817600}}], "error": null}}),
                    );
                }
                Reply::json(
                    200,
                    json!({"quoteSummary": {"result": [{
                    "assetProfile": {"city": "Cupertino", "fullTimeEmployees": 150000, "maxAge": 86400},
                    "summaryDetail": {"beta": 1.264, "dividendYield": null, "maxAge": 1},
                }], "error": null}}),
                )
            }
            "/v7/finance/quote" => Reply::json(
                200,
                json!({"quoteResponse": {"result": [{
                "language": "en-US", "quoteType": "EQUITY", "longName": "Apple Inc.", "symbol": "AAPL"}],
                "error": null}}),
            ),
            "/ws/fundamentals-timeseries/v1/finance/timeseries/AAPL" => {
                let types = query_param(req, "type").unwrap_or_default();
                if types == "trailingPegRatio" {
                    return Reply::json(
                        200,
                        json!({"timeseries": {"result": [{"meta": {"symbol": ["AAPL"], "type": ["trailingPegRatio"]},
                        "timestamp": [1719705600], "trailingPegRatio": [{"asOfDate": "2024-06-30", "periodType": "TTM",
                        "reportedValue": {"raw": 2.1234, "fmt": "2.12"}}]}], "error": null}}),
                    );
                }
                let prefix = if types.starts_with("annual") {
                    "annual"
                } else {
                    "quarterly"
                };
                let key = if types.contains("TotalAssets") {
                    "TotalAssets"
                } else {
                    "FreeCashFlow"
                };
                let name = format!("{prefix}{key}");
                Reply::json(
                    200,
                    json!({"timeseries": {"result": [
                    {"meta": {"symbol": ["AAPL"], "type": [name.clone()]}, "timestamp": [1696032000],
                     name: [{"asOfDate": "2023-09-30", "periodType": "12M", "currencyCode": "USD",
                             "reportedValue": {"raw": 352583000000i64, "fmt": "352.58B"}}]}], "error": null}}),
                )
            }
            "/v8/finance/chart/AAPL" => Reply::json(
                200,
                json!({"chart": {"result": [{
                "meta": {"currency": "USD", "symbol": "AAPL", "instrumentType": "EQUITY", "gmtoffset": -14400,
                         "exchangeTimezoneName": "America/New_York", "validRanges": ["1d", "5d", "1mo", "max"]},
                "timestamp": [1714570200],
                "indicators": {"quote": [{"open": [169.58], "high": [172.71], "low": [169.11],
                               "close": [169.3], "volume": [50383100]}],
                               "adjclose": [{"adjclose": [169.3]}]}}], "error": null}}),
            ),
            "/xhr/ncp" if news_limited => Reply::text(429, "text/html", "Too Many Requests"),
            "/xhr/ncp" => Reply::json(
                200,
                json!({"data": {"tickerStream": {"stream": [
                    {"id": "n1", "content": {"title": "Apple beats estimates", "pubDate": "2024-05-02T20:30:00Z"}},
                    {"id": "ad1", "ad": [{"id": "x"}]},
                ]}}}),
            ),
            _ => Reply::json(404, json!({"finance": {"error": {"code": "Not Found"}}})),
        }
    })
}

fn yahoo_env(server: &FakeServer) -> [(&'static str, String); 2] {
    [
        ("CANVAS_YAHOO_FINANCE_BASE_URL", server.url("")),
        ("CANVAS_YAHOO_FINANCE_COOKIE_URL", server.url("/cookie")),
    ]
}

#[test]
fn yahoo_finance_reports_every_section_for_an_agent_after_a_rate_limit() {
    let server = yahoo_server(true, false);
    let flow = agent_canvas(json!([
        {"component_name": "YahooFinance", "name": "YahooFinance", "params": {
            "history": true, "financials": true, "balance_sheet": true, "cash_flow_statement": true,
            "max_retries": 1, "delay_after_error": 0}},
    ]));
    // Each section's header and one telling cell: the info series, the dated history
    // row, the calendar, both statements (floats as `g`), the news stream.
    let mock = json!({"rules": [
        {"match": "(?s)# Information:\\n\\|\\s+\\| 0 .*\\| city +\\| Cupertino .*\\| maxAge +\\| 86400 .*\\| trailingPegRatio +\\| 2\\.1234 .*# History:\\n\\| Date .*\\| 2024-05-01 00:00:00-04:00 \\| +169\\.58 .*5\\.03831e\\+07.*# Calendar:\\n.*\\| +0 \\| 2024-05-16 +\\| 2024-05-13 +\\| 2024-08-01 .*# Balance sheet:\\n.*\\| TotalAssets \\| +3\\.52583e\\+11 \\|.*# Quarterly cash flow statement:\\n.*\\| FreeCashFlow .*# News:\\n.*\\| +0 \\| n1 +\\| \\{'title': 'Apple beats estimates'", "on": "any",
         "answer": "Apple looks fine."},
        {"match": "Apple", "tool_calls": [{"name": "yahoo_finance_0", "arguments": {"stock_code": "aapl"}}]},
    ]});
    let evs = run(
        &flow,
        Some(&mock),
        "How is Apple doing?",
        &yahoo_env(&server),
    );
    assert_eq!(
        streamed(&evs),
        "Running the yahoo_finance_0 tool...Apple looks fine."
    );
    let seen = server.seen();
    let paths: Vec<&str> = seen.iter().map(Seen::path).collect();
    // The rate-limited first attempt stops at its first quoteSummary call; the retry
    // redoes the handshake and fetches every section in RAGFlow's order.
    assert_eq!(
        paths,
        [
            "/cookie",
            "/v1/test/getcrumb",
            "/v10/finance/quoteSummary/AAPL",
            "/cookie",
            "/v1/test/getcrumb",
            "/v10/finance/quoteSummary/AAPL",
            "/v7/finance/quote",
            "/ws/fundamentals-timeseries/v1/finance/timeseries/AAPL",
            "/v8/finance/chart/AAPL",
            "/v10/finance/quoteSummary/AAPL",
            "/ws/fundamentals-timeseries/v1/finance/timeseries/AAPL",
            "/ws/fundamentals-timeseries/v1/finance/timeseries/AAPL",
            "/ws/fundamentals-timeseries/v1/finance/timeseries/AAPL",
            "/ws/fundamentals-timeseries/v1/finance/timeseries/AAPL",
            "/xhr/ncp",
        ]
    );
    let info = &seen[5];
    assert_eq!(
        query_param(info, "modules").as_deref(),
        Some("financialData,quoteType,defaultKeyStatistics,assetProfile,summaryDetail")
    );
    assert_eq!(query_param(info, "formatted").as_deref(), Some("false"));
    assert_eq!(query_param(&seen[6], "symbols").as_deref(), Some("AAPL"));
    let chart = &seen[8];
    assert_eq!(query_param(chart, "range").as_deref(), Some("1mo"));
    assert_eq!(query_param(chart, "interval").as_deref(), Some("1d"));
    assert_eq!(
        query_param(chart, "events").as_deref(),
        Some("div,splits,capitalGains")
    );
    let annual = query_param(&seen[10], "type").unwrap();
    assert!(annual.starts_with("annualTreasurySharesNumber,annualPreferredSharesNumber,"));
    assert_eq!(annual.split(',').count(), 145);
    assert_eq!(
        query_param(&seen[10], "period1").as_deref(),
        Some("1483142400")
    );
    assert!(
        query_param(&seen[11], "type")
            .unwrap()
            .starts_with("quarterly")
    );
    assert!(
        query_param(&seen[12], "type")
            .unwrap()
            .starts_with("annualForeignSales,")
    );
    let news = &seen[14];
    assert_eq!(news.method(), "POST");
    assert_eq!(query_param(news, "queryRef").as_deref(), Some("latestNews"));
    assert_eq!(
        news.json(),
        json!({"serviceConfig": {"snippetCount": 10, "s": ["AAPL"]}})
    );
    assert!(
        seen[2..].iter().all(|r| r.path() == "/v1/test/getcrumb"
            || r.path() == "/cookie"
            || query_param(r, "crumb").as_deref() == Some("Cr4mb.x")),
        "every data call carries the crumb"
    );
}

#[test]
fn yahoo_finance_as_a_node_gives_the_default_report_or_the_rate_limit() {
    let server = yahoo_server(false, false);
    let evs = run(
        &node_canvas("YahooFinance", json!({}), "report"),
        None,
        "aapl",
        &yahoo_env(&server),
    );
    // RAGFlow's defaults: the information and the news, blank-line separated.
    let report = node_outputs(&evs)["report"].as_str().unwrap().to_string();
    let (info, news) = report.split_once("\n\n# News:\n").expect(&report);
    let lines: Vec<&str> = info.lines().collect();
    assert_eq!(lines[0], "# Information:");
    assert_eq!(lines[1], "|                   | 0          |");
    assert_eq!(lines[2], "|:------------------|:-----------|");
    let rows: Vec<&str> = lines[3..].to_vec();
    assert_eq!(
        rows,
        [
            "| city              | Cupertino  |",
            "| fullTimeEmployees | 150000     |",
            // Modules' `maxAge` 1 (days) read as 86400 seconds; null values dropped.
            "| maxAge            | 86400      |",
            "| beta              | 1.264      |",
            // The quote's `quoteType` string, after the summary's `symbol`.
            "| symbol            | AAPL       |",
            "| language          | en-US      |",
            "| quoteType         | EQUITY     |",
            "| longName          | Apple Inc. |",
            "| trailingPegRatio  | 2.1234     |",
        ]
    );
    assert_eq!(
        news,
        "|    | id   | content                                                               |\n\
         |---:|:-----|:----------------------------------------------------------------------|\n\
         |  0 | n1   | {'title': 'Apple beats estimates', 'pubDate': '2024-05-02T20:30:00Z'} |\n"
    );
    assert_eq!(
        node_thoughts(&evs),
        "Pulling live financial data for `aapl`."
    );

    let limited = yahoo_server(false, true);
    let err = run_failing(
        &node_canvas("YahooFinance", json!({"info": false}), "report"),
        "AAPL",
        &yahoo_env(&limited),
    );
    assert_eq!(err, "Too Many Requests. Rate limited. Try after a while.");
}
