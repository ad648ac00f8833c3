//! The legacy MCP HTTP+SSE transport (protocol 2024-11-05), which `rmcp` 3.9 no
//! longer ships: GET the SSE URL, wait for the `endpoint` event, POST each JSON-RPC
//! message to that endpoint, and read the server's messages from the stream.
//!
//! The event parser is ours rather than `sse-stream`'s (in the tree through rmcp):
//! that crate fails a stream on an unknown field or a repeated `event:` line, where the
//! SSE specification ignores the one and keeps the last of the other, and it bounds no
//! event's size, which a hostile server could grow without end.

use futures::StreamExt;
use reqwest::header::{ACCEPT, HeaderMap};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{mpsc, oneshot};

/// Largest SSE event accepted: a hostile server must not exhaust memory.
const MAX_EVENT: usize = 16 * 1024 * 1024;

/// What went wrong on the SSE transport.
#[derive(Debug, thiserror::Error)]
pub(super) enum SseError {
    /// The HTTP request failed.
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// The server answered with something else than an event stream.
    #[error("{0}")]
    Protocol(String),
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SseEvent {
    /// `event:` (default `message`).
    pub event: String,
    /// `data:` lines joined by newlines.
    pub data: String,
}

/// Incremental parser of a `text/event-stream` body.
#[derive(Debug, Default)]
pub(super) struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feed bytes; return the events they complete.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        self.buf.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b != b'\n' && b != b'\r' {
                i += 1;
                continue;
            }
            // A CR at the end may be the first half of CRLF: wait for more bytes.
            if b == b'\r' && i + 1 == self.buf.len() {
                break;
            }
            let line = String::from_utf8_lossy(&self.buf[start..i]).into_owned();
            i += if b == b'\r' && self.buf[i + 1] == b'\n' {
                2
            } else {
                1
            };
            start = i;
            if let Some(ev) = self.line(&line) {
                events.push(ev);
            }
        }
        self.buf.drain(..start);
        if self.buf.len() + self.data.len() > MAX_EVENT {
            return Err(SseError::Protocol(format!(
                "an SSE event exceeds {MAX_EVENT} bytes"
            )));
        }
        Ok(events)
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let ev = self.has_data.then(|| SseEvent {
                event: if self.event.is_empty() {
                    "message".to_string()
                } else {
                    std::mem::take(&mut self.event)
                },
                data: std::mem::take(&mut self.data),
            });
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return ev;
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        None
    }
}

/// The task reading the stream; stopped when its owner is dropped.
struct Reader(tokio::task::JoinHandle<()>);

impl Drop for Reader {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An open legacy SSE session.
pub(super) struct SseTransport {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: Reader,
}

impl SseTransport {
    /// Open the stream at `url` and wait for the `endpoint` event, which must stay
    /// on the stream's origin. The caller bounds the time.
    pub async fn connect(
        client: reqwest::Client,
        url: reqwest::Url,
        headers: HeaderMap,
    ) -> Result<SseTransport, SseError> {
        let opened = client
            .get(url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await?;
        let status = opened.status();
        if !status.is_success() {
            return Err(SseError::Protocol(format!(
                "GET {url} answered HTTP {status}"
            )));
        }
        let ctype = opened
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !ctype.to_ascii_lowercase().starts_with("text/event-stream") {
            return Err(SseError::Protocol(format!(
                "GET {url} answered {ctype:?}, not an event stream"
            )));
        }
        let (tx, rx) = mpsc::channel(64);
        let (endpoint_tx, endpoint_rx) = oneshot::channel::<String>();
        let mut body = opened.bytes_stream();
        let reader = Reader(tokio::spawn(async move {
            let mut parser = SseParser::default();
            let mut endpoint_tx = Some(endpoint_tx);
            while let Some(Ok(chunk)) = body.next().await {
                let Ok(events) = parser.feed(&chunk) else {
                    return;
                };
                for ev in events {
                    if ev.event == "endpoint" {
                        if let Some(t) = endpoint_tx.take() {
                            let _ = t.send(ev.data);
                        }
                    } else if ev.event == "message" {
                        // Messages that are not JSON-RPC are skipped, as noise.
                        if let Ok(msg) = serde_json::from_str::<ServerJsonRpcMessage>(&ev.data)
                            && tx.send(msg).await.is_err()
                        {
                            return;
                        }
                    }
                }
            }
        }));
        let data = endpoint_rx.await.map_err(|_| {
            SseError::Protocol("the SSE stream ended before the `endpoint` event".into())
        })?;
        let endpoint = url
            .join(data.trim())
            .map_err(|e| SseError::Protocol(format!("bad endpoint {data:?}: {e}")))?;
        if endpoint.origin() != url.origin() {
            return Err(SseError::Protocol(format!(
                "the endpoint {endpoint} is not on the stream's origin"
            )));
        }
        Ok(SseTransport {
            client,
            endpoint,
            headers,
            rx,
            reader,
        })
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let req = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let resp = req.send().await?;
            let status = resp.status();
            if !status.is_success() {
                return Err(SseError::Protocol(format!(
                    "POST to the endpoint answered HTTP {status}"
                )));
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        self.rx.recv().await
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.reader.0.abort();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn parses_events_split_anywhere() {
        let text = ": comment\r\nevent: endpoint\r\ndata: /messages?id=1\r\n\r\ndata: {\"a\":\ndata:1}\n\nid: 7\nretry: 5\n\nevent: x\rdata\r\r\n";
        let want = vec![
            ev("endpoint", "/messages?id=1"),
            ev("message", "{\"a\":\n1}"),
            ev("x", ""),
        ];
        // Whole, and byte by byte (CRLF split across chunks included).
        let mut p = SseParser::default();
        assert_eq!(p.feed(text.as_bytes()).unwrap(), want);
        let mut p = SseParser::default();
        let mut got = Vec::new();
        for b in text.as_bytes() {
            got.extend(p.feed(&[*b]).unwrap());
        }
        assert_eq!(got, want);
    }

    #[test]
    fn an_unfinished_event_is_not_emitted_and_size_is_bounded() {
        let mut p = SseParser::default();
        assert!(p.feed(b"event: message\ndata: half").unwrap().is_empty());
        assert_eq!(p.feed(b"\n\n").unwrap(), vec![ev("message", "half")]);
        let mut p = SseParser::default();
        let big = vec![b'a'; MAX_EVENT + 1];
        assert!(p.feed(&big).is_err());
    }
}
