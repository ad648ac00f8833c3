//! A fake HTTP peer on 127.0.0.1 for the tests: an OpenAI-compatible model server, a
//! RAGFlow retrieval API, an HTTP target of Invoke, a sandbox executor... One connection
//! per request; each request is recorded and answered by the peer's handler.

// Not every test file uses every helper of this shared peer.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// One answer of a fake peer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// How the reply is sent.
    pub delivery: Delivery,
}

/// How a fake peer sends a reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Delivery {
    /// The head and the whole body, then the connection closes.
    #[default]
    Whole,
    /// Nothing: the connection is held, unanswered, until the client leaves (at most
    /// [`SILENT_HOLD`]).
    Silent,
    /// The head announces [`CUT_MISSING`] more bytes than the body has; the body is
    /// sent, then the connection closes.
    Cut,
}

/// The longest a [`Delivery::Silent`] reply holds its connection.
pub const SILENT_HOLD: Duration = Duration::from_secs(10);

/// How many bytes a [`Delivery::Cut`] reply announces but never sends.
pub const CUT_MISSING: usize = 100;

impl Reply {
    /// An error status with an OpenAI-style JSON body.
    pub fn status(status: u16, message: &str) -> Reply {
        Reply::json(status, json!({"error": {"message": message}}))
    }

    /// A JSON body.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: body.to_string(),
            headers: Vec::new(),
            delivery: Delivery::Whole,
        }
    }

    /// A text body of the given content type.
    pub fn text(status: u16, content_type: &'static str, body: &str) -> Reply {
        Reply {
            status,
            content_type,
            body: body.to_string(),
            headers: Vec::new(),
            delivery: Delivery::Whole,
        }
    }

    /// A redirect to `location`.
    pub fn redirect(location: &str) -> Reply {
        Reply {
            status: 302,
            content_type: "text/plain",
            body: String::new(),
            headers: vec![("Location".into(), location.into())],
            delivery: Delivery::Whole,
        }
    }

    /// A streamed chat answer: one SSE chunk per piece, then `[DONE]`.
    pub fn sse(pieces: &[&str]) -> Reply {
        let mut body = String::new();
        for p in pieces {
            let chunk = json!({"choices": [{"index": 0, "delta": {"content": p}}]});
            body.push_str(&format!("data: {chunk}\n\n"));
        }
        body.push_str("data: [DONE]\n\n");
        Reply::text(200, "text/event-stream", &body)
    }

    /// No answer at all: the request is read and the connection held until the client
    /// gives up (a timeout for the client).
    pub fn silent() -> Reply {
        Reply {
            delivery: Delivery::Silent,
            ..Reply::text(200, "text/plain", "")
        }
    }

    /// A streamed chat answer cut midway: one SSE chunk per piece, no `[DONE]`, and the
    /// connection closes before the announced `Content-Length` is reached.
    pub fn cut_sse(pieces: &[&str]) -> Reply {
        let mut body = String::new();
        for p in pieces {
            let chunk = json!({"choices": [{"index": 0, "delta": {"content": p}}]});
            body.push_str(&format!("data: {chunk}\n\n"));
        }
        Reply {
            delivery: Delivery::Cut,
            ..Reply::text(200, "text/event-stream", &body)
        }
    }
}

/// A request a fake peer received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request line (`POST /v1/chat/completions HTTP/1.1`).
    pub line: String,
    /// Header names in lower case, with their values.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    /// A header's value (name in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("request body is not JSON: {e}: {}", self.body))
    }

    /// The method (`POST`).
    pub fn method(&self) -> &str {
        self.line.split(' ').next().unwrap_or("")
    }

    /// The request target (`/v1/chat/completions?x=1`).
    pub fn target(&self) -> &str {
        self.line.split(' ').nth(1).unwrap_or("")
    }

    /// The path without the query string.
    pub fn path(&self) -> &str {
        self.target().split('?').next().unwrap_or("")
    }
}

type Handler = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

/// A fake HTTP peer on 127.0.0.1.
pub struct FakeServer {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// A peer answering the n-th request with the n-th reply of `script` (the last one
    /// once the script is used up).
    pub fn start(script: Vec<Reply>) -> FakeServer {
        assert!(!script.is_empty(), "a fake server needs a reply");
        FakeServer::with(move |_, n| script[(n - 1).min(script.len() - 1)].clone())
    }

    /// A peer answering each request with `handler(request, n)` (n counts from 1).
    pub fn with(handler: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> FakeServer {
        let handler: Arc<Handler> = Arc::new(handler);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let Some(req) = read_request(&mut conn) else {
                    continue;
                };
                let n = {
                    let mut seen = seen2.lock().unwrap();
                    seen.push(req.clone());
                    seen.len()
                };
                let reply = handler(&req, n);
                if reply.delivery == Delivery::Silent {
                    hold(&mut conn);
                    continue;
                }
                let announced = match reply.delivery {
                    Delivery::Cut => reply.body.len() + CUT_MISSING,
                    _ => reply.body.len(),
                };
                let mut head = format!(
                    "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
                    reply.status,
                    reason(reply.status),
                    reply.content_type,
                    announced
                );
                for (k, v) in &reply.headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = conn.write_all(head.as_bytes());
                let _ = conn.write_all(reply.body.as_bytes());
                let _ = conn.flush();
                let _ = conn.shutdown(std::net::Shutdown::Both);
            }
        });
        FakeServer {
            port,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// The base URL a model configuration gives (`/chat/completions` is added by the
    /// client).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Hold a connection without answering until the client closes it or [`SILENT_HOLD`]
/// passes.
fn hold(conn: &mut TcpStream) {
    let until = std::time::Instant::now() + SILENT_HOLD;
    let mut byte = [0u8; 1024];
    while std::time::Instant::now() < until {
        let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
        match conn.read(&mut byte) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// Read one HTTP request: the head up to the blank line, then `Content-Length` bytes.
fn read_request(conn: &mut TcpStream) -> Option<Seen> {
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut buf = Vec::new();
    let mut byte = [0u8; 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = conn.read(&mut byte).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&byte[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = conn.read(&mut byte).ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&byte[..n]);
    }
    Some(Seen {
        line,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// An HTTP peer that answers every request at once with `{"ok": true}`, except the
/// `held`-th, which it holds until [`Gate::release`]. A run that calls it cannot get past
/// that call until the test lets it, however fast the engine is: the stop tests stop a
/// run there instead of racing it.
pub struct Gate {
    server: FakeServer,
    open: Arc<(Mutex<bool>, std::sync::Condvar)>,
    held: usize,
}

impl Gate {
    /// A gate that holds its `held`-th request (from 1).
    pub fn holding(held: usize) -> Gate {
        let open = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let open2 = open.clone();
        let server = FakeServer::with(move |_, n| {
            if n == held {
                let (lock, cv) = &*open2;
                let mut released = lock.lock().unwrap();
                while !*released {
                    released = cv.wait(released).unwrap();
                }
            }
            Reply::json(200, json!({"ok": true}))
        });
        Gate { server, open, held }
    }

    /// A gate that never holds.
    pub fn open() -> Gate {
        Gate::holding(usize::MAX)
    }

    /// The URL to call.
    pub fn url(&self) -> String {
        self.server.url("/gate")
    }

    /// Wait (at most the tests' timeout) until the held request has arrived.
    pub fn wait_held(&self) {
        let deadline = std::time::Instant::now() + crate::util::TIMEOUT;
        while self.server.seen().len() < self.held {
            assert!(
                std::time::Instant::now() < deadline,
                "the gate's request #{} never came ({} did)",
                self.held,
                self.server.seen().len()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// How many requests came so far.
    pub fn calls(&self) -> usize {
        self.server.seen().len()
    }

    /// Let the held request (and every later one) through.
    pub fn release(&self) {
        let (lock, cv) = &*self.open;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        // The server's thread may be waiting in the handler: let it go so it can stop.
        self.release();
    }
}
