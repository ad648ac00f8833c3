//! Email (`agent/tools/email.py`, function `email`): send one HTML email over SMTP.
//! The message is built as Python's `email` package builds RAGFlow's
//! (`multipart/alternative` holding one base64 `text/html; charset="utf-8"` part; `From`
//! from `formataddr((sender_name, email))`; `Subject` as a UTF-8 encoded word); it goes
//! to `to_email` and every comma-separated `cc_email` address. Outputs `success`; the
//! model reads `True` or `False`, as Python's `str()` of RAGFlow's return value.
//!
//! Connection rule: port 465 is implicit TLS (SMTPS); any other port connects in plain
//! text and upgrades with STARTTLS. When the server does not offer STARTTLS, the message
//! is sent in plain text only if the server's address is not public (loopback or a
//! private network, which canvases reach only with `--allow-private-network`): local
//! relays and test sinks; a public server without STARTTLS fails as in RAGFlow. The
//! host is resolved through the SSRF guard and the checked address is the one connected
//! to. Login uses `smtp_username` (or `email`) with `password` (PLAIN or LOGIN).
//!
//! Errors follow RAGFlow's classes: a refused login is final (`SMTP Authentication
//! failed…`); a server that greets with an error (`Failed to connect to SMTP server
//! h:p`) or answers a command with one (`SMTP error occurred: …`) is retried
//! `max_retries` times; anything else (connection refused, TLS) is final as
//! `Unexpected error: …`. Texts inside those come from our SMTP client, not Python's.

use std::net::SocketAddr;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lettre::Address;
use lettre::address::Envelope;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use serde_json::{Value, json};

use super::net::blocked_reason;
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_str, truthy};

/// Connection and per-command timeout (RAGFlow's tool budget is 60 s).
const TIMEOUT: Duration = Duration::from_secs(60);

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    for (name, descr) in [
        ("smtp_server", "SMTP Server"),
        ("email", "Email"),
        ("password", "Password"),
        ("sender_name", "Sender Name"),
    ] {
        if !params.get(name).is_some_and(truthy) {
            return Err(BuildError::Params(format!(
                "{descr} does not support empty value."
            )));
        }
    }
    let optional = |name, description| Param {
        required: false,
        ..Param::string(name, description, "")
    };
    Ok(Box::new(Email {
        meta: ToolMeta {
            name: "email",
            description: "The email is a method of electronic communication for sending and receiving information through the Internet. This tool helps users to send emails to one person or to multiple recipients with support for CC, BCC, file attachments, and markdown-to-HTML conversion.",
            parameters: vec![
                Param::string("to_email", "The target email address.", "{sys.query}"),
                optional(
                    "cc_email",
                    "The other email addresses needs to be send to. Comma splited.",
                ),
                optional("content", "The content of the email."),
                optional("subject", "The subject/title of the email."),
            ],
        },
    }))
}

/// The Email tool.
pub struct Email {
    meta: ToolMeta,
}

/// The SMTP settings of one call.
struct Settings {
    server: String,
    port: u16,
    email: String,
    username: String,
    password: String,
    sender_name: String,
}

/// How one attempt ended.
enum Failure {
    /// RAGFlow stops at once (sets `_ERROR`, `success` false).
    Final(String),
    /// RAGFlow sleeps and tries again.
    Retry(String),
}

/// Python's `email.utils.formataddr((name, addr))`.
fn format_addr(name: &str, addr: &str) -> String {
    if name.is_empty() {
        return addr.to_string();
    }
    if !name.is_ascii() {
        return format!("{} <{addr}>", encoded_word(name));
    }
    if name.chars().any(|c| "()<>@,:;.\"[]".contains(c)) {
        let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
        return format!("\"{escaped}\" <{addr}>");
    }
    format!("{name} <{addr}>")
}

/// Bytes `email.quoprimime` writes as themselves in a header (space becomes `_`).
fn qp_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-!*+/".contains(&b)
}

/// One RFC 2047 word, the shorter of `b` and `q` as `Charset("utf-8")` picks (ties
/// go to `q`).
fn one_word(s: &str) -> String {
    let bytes = s.as_bytes();
    let b_len = bytes.len().div_ceil(3) * 4;
    let q_len: usize = bytes
        .iter()
        .map(|&b| if b == b' ' || qp_safe(b) { 1 } else { 3 })
        .sum();
    if b_len < q_len {
        format!("=?utf-8?b?{}?=", STANDARD.encode(bytes))
    } else {
        let mut q = String::new();
        for &b in bytes {
            match b {
                b' ' => q.push('_'),
                b if qp_safe(b) => q.push(b as char),
                b => q.push_str(&format!("={b:02X}")),
            }
        }
        format!("=?utf-8?q?{q}?=")
    }
}

/// `Header(text, "utf-8").encode()`: encoded words of at most ~75 characters, folded
/// onto continuation lines (whole characters per word).
fn encoded_word(text: &str) -> String {
    let mut words = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        let mut next = cur.clone();
        next.push(c);
        if !cur.is_empty() && one_word(&next).len() > 75 {
            words.push(one_word(&cur));
            cur = c.to_string();
        } else {
            cur = next;
        }
    }
    if !cur.is_empty() {
        words.push(one_word(&cur));
    }
    words.join("\r\n ")
}

/// Python's `_make_boundary`: 15 `=`, 19 digits, `==`.
fn boundary() -> String {
    let n: u64 = rand::random::<u64>() % 9_223_372_036_854_775_807;
    format!("==============={n:019}==")
}

/// A header value as Python accepts it (no line breaks: they would inject headers).
fn header_value(v: &str) -> Result<&str, String> {
    if v.contains(['\r', '\n']) {
        return Err("Header values may not contain linefeed or carriage return characters".into());
    }
    Ok(v)
}

/// The message as `msg.as_string()` gives it, with CRLF line ends.
fn build_message(
    s: &Settings,
    to: &str,
    cc: &str,
    subject: &str,
    content: &str,
    boundary: &str,
) -> Result<String, String> {
    let mut head = vec![
        format!("Content-Type: multipart/alternative; boundary=\"{boundary}\""),
        "MIME-Version: 1.0".to_string(),
        format!(
            "From: {}",
            format_addr(header_value(&s.sender_name)?, header_value(&s.email)?)
        ),
        format!("To: {}", header_value(to)?),
    ];
    if !cc.is_empty() {
        head.push(format!("Cc: {}", header_value(cc)?));
    }
    head.push(format!("Subject: {}", encoded_word(subject)));
    let encoded = STANDARD.encode(content.as_bytes());
    let mut body_lines: Vec<&str> = Vec::new();
    let mut rest = encoded.as_str();
    while !rest.is_empty() {
        let (line, tail) = rest.split_at(rest.len().min(76));
        body_lines.push(line);
        rest = tail;
    }
    let mut out = head.join("\r\n");
    out.push_str("\r\n\r\n");
    out.push_str(&format!("--{boundary}\r\n"));
    out.push_str("Content-Type: text/html; charset=\"utf-8\"\r\nMIME-Version: 1.0\r\nContent-Transfer-Encoding: base64\r\n\r\n");
    for l in body_lines {
        out.push_str(l);
        out.push_str("\r\n");
    }
    out.push_str(&format!("\r\n--{boundary}--\r\n"));
    Ok(out)
}

/// The envelope recipients: `to_email` then each `cc_email` entry, trimmed.
fn recipients(to: &str, cc: &str) -> Vec<String> {
    std::iter::once(to)
        .chain(cc.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A text argument (absent or null: `default`).
fn arg(args: &Object, name: &str, default: &str) -> String {
    match args.get(name) {
        None | Some(Value::Null) => default.to_string(),
        Some(v) => py_str(v),
    }
}

impl Email {
    fn settings(call: &Call<'_>) -> Result<Settings, String> {
        let text = |name: &str| call.param(name).map(py_str).unwrap_or_default();
        let port_v = call.param("smtp_port").cloned().unwrap_or(json!(465));
        let port = match &port_v {
            Value::Number(n) => n.as_u64().and_then(|p| u16::try_from(p).ok()),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("invalid SMTP port {}", py_str(&port_v)))?;
        let email = text("email");
        let username = match text("smtp_username") {
            u if u.is_empty() => email.clone(),
            u => u,
        };
        Ok(Settings {
            server: text("smtp_server"),
            port,
            email,
            username,
            password: text("password"),
            sender_name: text("sender_name"),
        })
    }

    /// Connect (TLS as the rule says), log in and send.
    async fn send(
        call: &Call<'_>,
        s: &Settings,
        envelope: &Envelope,
        message: &str,
    ) -> Result<(), Failure> {
        let unexpected =
            |e: &dyn std::fmt::Display| Failure::Final(format!("Unexpected error: {e}"));
        let addr: SocketAddr = call
            .env()
            .net
            .resolve(&s.server, s.port)
            .await
            .map_err(|e| unexpected(&e))?;
        let hello = ClientId::default();
        let tls = || TlsParameters::new(s.server.clone()).map_err(|e| unexpected(&e));
        let implicit = if s.port == 465 { Some(tls()?) } else { None };
        let mut conn =
            match AsyncSmtpConnection::connect_tokio1(addr, Some(TIMEOUT), &hello, implicit, None)
                .await
            {
                Ok(c) => c,
                Err(e) if e.status().is_some() => {
                    return Err(Failure::Retry(format!(
                        "Failed to connect to SMTP server {}:{}",
                        s.server, s.port
                    )));
                }
                Err(e) => return Err(unexpected(&e)),
            };
        let result = Self::session(&mut conn, s, addr, &hello, envelope, message).await;
        // RAGFlow ignores errors on closing.
        if result.is_ok() {
            let _ = conn.quit().await;
        } else {
            conn.abort().await;
        }
        result
    }

    async fn session(
        conn: &mut AsyncSmtpConnection,
        s: &Settings,
        addr: SocketAddr,
        hello: &ClientId,
        envelope: &Envelope,
        message: &str,
    ) -> Result<(), Failure> {
        let smtp_error =
            |e: &dyn std::fmt::Display| Failure::Retry(format!("SMTP error occurred: {e}"));
        if !conn.is_encrypted() {
            if conn.can_starttls() {
                let params = TlsParameters::new(s.server.clone())
                    .map_err(|e| Failure::Final(format!("Unexpected error: {e}")))?;
                conn.starttls(params, hello).await.map_err(|e| {
                    if e.status().is_some() {
                        smtp_error(&e)
                    } else {
                        Failure::Final(format!("Unexpected error: {e}"))
                    }
                })?;
            } else if blocked_reason(addr.ip()).is_none() {
                // A public server must protect the password.
                return Err(smtp_error(&"STARTTLS extension not supported by server."));
            }
        }
        let creds = Credentials::new(s.username.clone(), s.password.clone());
        if let Err(e) = conn
            .auth(&[Mechanism::Plain, Mechanism::Login], &creds)
            .await
        {
            return Err(if e.status().is_some() {
                Failure::Final(
                    "SMTP Authentication failed. Please check your SMTP username(email) and authorization code."
                        .into(),
                )
            } else if e.is_client() {
                smtp_error(&"SMTP AUTH extension not supported by server.")
            } else {
                smtp_error(&e)
            });
        }
        conn.send(envelope, message.as_bytes())
            .await
            .map_err(|e| smtp_error(&e))?;
        Ok(())
    }

    /// One attempt: build the message and send it.
    async fn attempt(call: &Call<'_>, args: &Object) -> Result<(), Failure> {
        let unexpected = |e: String| Failure::Final(format!("Unexpected error: {e}"));
        let s = Self::settings(call).map_err(unexpected)?;
        let to = arg(args, "to_email", "");
        let cc = arg(args, "cc_email", "");
        let subject = arg(args, "subject", "No Subject");
        let content = arg(args, "content", "No content provided");
        let message =
            build_message(&s, &to, &cc, &subject, &content, &boundary()).map_err(unexpected)?;
        let from: Address = s
            .email
            .parse()
            .map_err(|e| unexpected(format!("invalid sender address {:?}: {e}", s.email)))?;
        let mut rcpt = Vec::new();
        for r in recipients(&to, &cc) {
            rcpt.push(
                r.parse::<Address>()
                    .map_err(|e| unexpected(format!("invalid recipient address {r:?}: {e}")))?,
            );
        }
        let envelope = Envelope::new(Some(from), rcpt).map_err(|e| unexpected(e.to_string()))?;
        Self::send(call, &s, &envelope, &message).await
    }
}

#[async_trait]
impl Tool for Email {
    fn class(&self) -> &'static str {
        "Email"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn thoughts(&self, args: &Object) -> String {
        let get = |k: &str| args.get(k).map(py_str).unwrap_or_else(|| "-_-!".into());
        format!(
            "\nTo: {}\nSubject: {}\nYour email is on its way—sit tight!\n",
            get("to_email"),
            get("subject")
        )
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        if !args.get("to_email").is_some_and(truthy) {
            call.set_output("success", json!(false));
            return Ok(Some(json!("")));
        }
        let retries = call.param_f64("max_retries", 0.0).max(0.0) as u32;
        let delay = call.param_f64("delay_after_error", 1.0).clamp(0.0, 3600.0);
        let mut last = String::new();
        for _ in 0..=retries {
            match Self::attempt(call, args).await {
                Ok(()) => {
                    call.set_output("success", json!(true));
                    return Ok(Some(json!("True")));
                }
                Err(Failure::Final(msg)) => {
                    call.set_output("_ERROR", json!(msg));
                    call.set_output("success", json!(false));
                    return Ok(Some(json!("False")));
                }
                Err(Failure::Retry(msg)) => last = msg,
            }
            if delay > 0.0 {
                tokio::time::sleep(Duration::from_secs_f64(delay)).await;
            }
        }
        call.set_output("_ERROR", json!(last));
        Ok(Some(json!("False")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    fn settings(name: &str) -> Settings {
        Settings {
            server: "smtp.example.com".into(),
            port: 465,
            email: "bot@example.com".into(),
            username: "bot@example.com".into(),
            password: "p".into(),
            sender_name: name.into(),
        }
    }

    #[test]
    fn check_requires_the_smtp_settings() {
        let ok = json!({"smtp_server": "s", "email": "e@x", "password": "p", "sender_name": "n"});
        assert!(build(&obj(ok)).is_ok());
        let err = build(&obj(
            json!({"smtp_server": "s", "email": "e@x", "password": "p"}),
        ))
        .err()
        .unwrap();
        assert_eq!(err.to_string(), "Sender Name does not support empty value.");
    }

    #[test]
    fn sender_names_are_formatted_as_formataddr() {
        assert_eq!(format_addr("Bot", "b@x.com"), "Bot <b@x.com>");
        assert_eq!(
            format_addr("Bot, Inc.", "b@x.com"),
            "\"Bot, Inc.\" <b@x.com>"
        );
        assert_eq!(
            format_addr("机器人", "b@x.com"),
            "=?utf-8?b?5py65Zmo5Lq6?= <b@x.com>"
        );
    }

    #[test]
    fn subjects_are_encoded_words() {
        assert_eq!(encoded_word("Hello world"), "=?utf-8?q?Hello_world?=");
        assert_eq!(encoded_word("周报"), "=?utf-8?b?5ZGo5oql?=");
        let long = encoded_word(&"季度报告".repeat(10));
        assert!(long.contains("\r\n "), "{long}");
        assert!(long.split("\r\n ").all(|w| w.len() <= 75), "{long}");
        let decoded: String = long
            .split("\r\n ")
            .map(|w| {
                let b64 = w.trim_start_matches("=?utf-8?b?").trim_end_matches("?=");
                String::from_utf8(STANDARD.decode(b64).unwrap()).unwrap()
            })
            .collect();
        assert_eq!(decoded, "季度报告".repeat(10));
    }

    #[test]
    fn the_message_is_multipart_alternative_with_a_base64_html_part() {
        let m = build_message(
            &settings("Bot"),
            "a@x.com",
            "b@x.com,c@x.com",
            "Hi",
            "<b>hello</b>",
            "===============0000000000000000042==",
        )
        .unwrap();
        assert_eq!(
            m,
            "Content-Type: multipart/alternative; boundary=\"===============0000000000000000042==\"\r\n\
MIME-Version: 1.0\r\nFrom: Bot <bot@example.com>\r\nTo: a@x.com\r\nCc: b@x.com,c@x.com\r\n\
Subject: =?utf-8?q?Hi?=\r\n\r\n--===============0000000000000000042==\r\n\
Content-Type: text/html; charset=\"utf-8\"\r\nMIME-Version: 1.0\r\nContent-Transfer-Encoding: base64\r\n\r\n\
PGI+aGVsbG88L2I+\r\n\r\n--===============0000000000000000042==--\r\n"
        );
        let err =
            build_message(&settings("Bot"), "a@x.com\r\nBcc: e@vil", "", "", "", "b").unwrap_err();
        assert!(err.contains("linefeed"), "{err}");
        assert_eq!(
            recipients("a@x.com", "b@x.com, c@x.com,"),
            vec!["a@x.com", "b@x.com", "c@x.com"]
        );
        assert!(boundary().len() == 36 && boundary().starts_with("==============="));
    }

    #[test]
    fn thoughts_show_recipient_and_subject() {
        let t = build(&obj(
            json!({"smtp_server": "s", "email": "e@x", "password": "p", "sender_name": "n"}),
        ))
        .unwrap();
        assert_eq!(
            t.thoughts(&obj(json!({"to_email": "a@x.com"}))),
            "\nTo: a@x.com\nSubject: -_-!\nYour email is on its way—sit tight!\n"
        );
    }
}
