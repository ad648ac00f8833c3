//! The self-managed provider: RAGFlow's executor manager over HTTP. `POST {url}/run`
//! with `{code_b64, language, arguments}`; the answer carries `stdout`, `stderr`,
//! `exit_code`, the structured `result` envelope and base64 `artifacts`.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::super::net::NetPolicy;
use super::{
    Artifact, Execution, Job, SandboxConfig, SandboxError, artifact_mime, protocol,
    safe_artifact_name, seconds_text,
};

/// Time allowed to the executor beyond the run's own limit (queueing, container setup).
const SLACK: Duration = Duration::from_secs(30);

/// Largest answer read (ten 10 MB artifacts in base64, plus output).
const MAX_ANSWER_BYTES: usize = 160 * 1024 * 1024;

/// The HTTP client for the executor. The executor's address comes from the operator
/// (`SANDBOX_EXECUTOR_MANAGER_URL`), not from the canvas, so the SSRF guard does not
/// apply: it usually runs on loopback.
fn http_client(_net: &NetPolicy, timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| e.to_string())
}

/// Run `job` on the executor at `base`.
pub(super) async fn run(
    base: &str,
    cfg: &SandboxConfig,
    net: &NetPolicy,
    job: &Job,
) -> Result<Execution, SandboxError> {
    let url = format!("{}/run", base.trim_end_matches('/'));
    let wait = cfg.timeout + SLACK;
    let client = http_client(net, wait).map_err(|reason| SandboxError::ExecutorUnreachable {
        url: url.clone(),
        reason,
    })?;
    let body = json!({
        "code_b64": STANDARD.encode(job.code.as_bytes()),
        "language": job.language.executor_name(),
        "arguments": job.arguments,
    });
    let transport = |e: reqwest::Error| {
        if e.is_timeout() {
            SandboxError::ExecutorTimeout {
                url: url.clone(),
                after: seconds_text(wait),
            }
        } else {
            SandboxError::ExecutorUnreachable {
                url: url.clone(),
                reason: error_chain(&e),
            }
        }
    };
    let mut resp = client
        .post(&url)
        .json(&body)
        .send()
        .await
        .map_err(transport)?;
    let status = resp.status().as_u16();
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(transport)? {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(SandboxError::ExecutorAnswer {
                url,
                reason: format!("the answer is larger than {} MB", MAX_ANSWER_BYTES >> 20),
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    if status != 200 {
        let text = String::from_utf8_lossy(&bytes);
        let body: String = text.trim().chars().take(300).collect();
        return Err(SandboxError::ExecutorStatus { url, status, body });
    }
    let answer: Value =
        serde_json::from_slice(&bytes).map_err(|e| SandboxError::ExecutorAnswer {
            url: url.clone(),
            reason: format!("not JSON ({e})"),
        })?;
    parse_answer(&answer).map_err(|reason| SandboxError::ExecutorAnswer { url, reason })
}

/// The transport error with its causes (reqwest's own text is often just "error
/// sending request").
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !text.contains(&t) {
            text.push_str(": ");
            text.push_str(&t);
        }
        src = s.source();
    }
    text
}

/// Read the executor's answer (RAGFlow's `CodeExecutionResult`).
fn parse_answer(answer: &Value) -> Result<Execution, String> {
    let Value::Object(o) = answer else {
        return Err("not a JSON object".into());
    };
    let text = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut stdout = text("stdout");
    let stderr = text("stderr");
    let result = match o.get("result") {
        Some(Value::Object(r)) => (r.get("present") == Some(&Value::Bool(true)))
            .then(|| r.get("value").cloned().unwrap_or(Value::Null)),
        // Executors that leave the marker in stdout.
        _ => {
            let (rest, value) = protocol::extract_result(&stdout);
            stdout = rest;
            value
        }
    };
    let mut artifacts = Vec::new();
    for a in o
        .get("artifacts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = a.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(mime) = artifact_mime(name).filter(|_| safe_artifact_name(name)) else {
            continue;
        };
        let Some(bytes) = a
            .get("content_b64")
            .and_then(Value::as_str)
            .and_then(|b| STANDARD.decode(b.trim()).ok())
            .filter(|b| !b.is_empty())
        else {
            continue;
        };
        let mime_type = a
            .get("mime_type")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or(mime);
        artifacts.push(Artifact {
            name: name.to_string(),
            mime_type: mime_type.to_string(),
            bytes,
        });
    }
    Ok(Execution {
        stdout,
        stderr,
        result,
        artifacts,
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_with_result_and_artifacts() {
        let a = json!({
            "status": "success", "stdout": "log\n", "stderr": "", "exit_code": 0,
            "result": {"present": true, "value": [1, 2], "type": "json"},
            "artifacts": [
                {"name": "out.csv", "mime_type": "text/csv", "size": 4, "content_b64": STANDARD.encode("a,b\n")},
                {"name": "../evil.csv", "mime_type": "text/csv", "size": 1, "content_b64": "YQ=="},
                {"name": "x.exe", "mime_type": "application/octet-stream", "size": 1, "content_b64": "YQ=="},
                {"name": "bad.png", "mime_type": "image/png", "size": 1, "content_b64": "***"}
            ]
        });
        let e = parse_answer(&a).unwrap();
        assert_eq!(e.result, Some(json!([1, 2])));
        assert_eq!(e.stdout, "log\n");
        assert_eq!(e.artifacts.len(), 1);
        assert_eq!(e.artifacts[0].name, "out.csv");
        assert_eq!(e.artifacts[0].bytes, b"a,b\n");
    }

    #[test]
    fn answer_without_envelope_reads_the_marker() {
        let line = format!(
            "{}{}",
            protocol::RESULT_MARKER,
            STANDARD.encode(r#"{"present":true,"value":"hi","type":"json"}"#)
        );
        let e = parse_answer(&json!({"stdout": format!("{line}\n"), "stderr": null})).unwrap();
        assert_eq!(e.result, Some(json!("hi")));
        assert_eq!(e.stdout, "");
        assert_eq!(e.stderr, "");
    }

    #[test]
    fn failed_runs_keep_stderr() {
        let e = parse_answer(&json!({
            "status": "resource_limit_exceeded", "stdout": "", "stderr": "Execution timeout",
            "exit_code": -124, "result": null
        }))
        .unwrap();
        assert_eq!(e.result, None);
        assert_eq!(e.stderr, "Execution timeout");
        assert!(parse_answer(&json!([1])).is_err());
    }
}
