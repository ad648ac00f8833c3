//! CodeExec (`agent/tools/code_exec.py`, `llm-and-tools.md` §7.4): runs a Python or
//! JavaScript `main` in the sandbox (`super::sandbox`) with arguments taken from the
//! canvas, checks its value against the one declared business output, keeps the files
//! it left in `artifacts/` (copied under the run's artifacts directory, linked as
//! `file://` URLs) and sets RAGFlow's outputs: the business output, `content`,
//! `actual_type`, `raw_result`, `attachments`, `_ARTIFACTS`, `_ATTACHMENT_CONTENT`,
//! `_ERROR`. The model reads the whole output dict.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::sandbox::contract::{
    build_contract, infer_actual_type, is_system_output, render_canonical_content,
};
use super::sandbox::{self, Artifact, Execution, Job, Language, protocol};
use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_repr, py_str, truthy};

/// RAGFlow's default script.
const DEFAULT_SCRIPT: &str =
    r#"def main(arg1: str, arg2: str) -> dict: return {"result": arg1 + arg2}"#;

/// Languages `check()` accepts.
const LANGUAGES: &[&str] = &["python", "python3", "nodejs", "javascript"];

/// Parsed artifact text kept in `content`, per artifact.
const MAX_ATTACHMENT_CHARS: usize = 200_000;

/// RAGFlow's tool description, as the model reads it.
const DESCRIPTION: &str = r#"
This tool has a sandbox that can execute code written in 'Python'/'Javascript'. It receives a piece of code and return a Json string.

Here's a code example for Python(`main` function MUST be included):
def main() -> dict:
    """
    Generate Fibonacci numbers within 100.
    """
    def fibonacci_recursive(n):
        if n <= 1:
            return n
        else:
            return fibonacci_recursive(n-1) + fibonacci_recursive(n-2)
    return {
        "result": fibonacci_recursive(100),
    }

To generate charts or files (images, PDFs, CSVs, etc.), save them to the `artifacts/` directory (relative to the working directory). The sandbox will automatically collect these files and return them. Example:
def main() -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    df = pd.DataFrame({"x": [1, 2, 3, 4], "y": [10, 20, 25, 30]})
    fig, ax = plt.subplots()
    ax.plot(df["x"], df["y"])
    ax.set_title("Sample Chart")
    fig.savefig("artifacts/chart.png", dpi=150, bbox_inches="tight")
    plt.close(fig)
    return {"summary": "Chart saved to artifacts/chart.png"}

Available Python packages: pandas, numpy, matplotlib, requests.
Supported artifact file types: .png, .jpg, .jpeg, .svg, .pdf, .csv, .json, .html

Collected artifacts are also parsed automatically and appended to the stable text output `content`. The content includes sections like `attachment1 (image): ...`, `attachment2 (pdf): ...`, so downstream nodes can consume a single text output without depending on unstable attachment-specific variables.

Here's a code example for Javascript(`main` function MUST be included and exported):
const axios = require('axios');
async function main(args) {
  try {
    const response = await axios.get('https://github.com/infiniflow/ragflow');
    console.log('Body:', response.data);
  } catch (error) {
    console.error('Error:', error.message);
  }
}
module.exports = { main };
            "#;

/// The CodeExec tool.
pub struct CodeExec {
    meta: ToolMeta,
}

/// Build from DSL parameters (RAGFlow's `check()`: a supported `lang`, a `script`).
pub fn build(params: &Object) -> Result<Box<dyn super::Tool>, BuildError> {
    let lang = params
        .get("lang")
        .cloned()
        .unwrap_or_else(|| json!("python"));
    if !lang.as_str().is_some_and(|l| LANGUAGES.contains(&l)) {
        return Err(BuildError::Params(format!(
            "[CodeExec] Support languages {} is not supported, it should be in {}",
            py_str(&lang),
            py_repr(&json!(LANGUAGES))
        )));
    }
    if params.get("script").is_some_and(|s| !truthy(s)) {
        return Err(BuildError::Params(
            "[CodeExec] Script does not support empty value.".into(),
        ));
    }
    Ok(Box::new(CodeExec {
        meta: ToolMeta {
            name: "execute_code",
            description: DESCRIPTION,
            parameters: vec![
                Param {
                    choices: &["python", "javascript"],
                    ..Param::string(
                        "lang",
                        "The programming language of this piece of code.",
                        "python",
                    )
                },
                Param::string(
                    "script",
                    "A piece of code in right format. There MUST be main function.",
                    DEFAULT_SCRIPT,
                ),
            ],
        },
    }))
}

#[async_trait]
impl Tool for CodeExec {
    fn class(&self) -> &'static str {
        "CodeExec"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn env_vars(&self) -> &'static [&'static str] {
        &[
            "SANDBOX_EXECUTOR_MANAGER_URL",
            "CANVAS_SANDBOX_TIMEOUT",
            "CANVAS_SANDBOX_MEMORY_MB",
            "CANVAS_SANDBOX_PYTHON",
            "CANVAS_SANDBOX_NODE",
            "CANVAS_SANDBOX_ALLOW_NETWORK",
        ]
    }

    fn default_outputs(&self) -> &'static [&'static str] {
        &["result", "attachments"]
    }

    fn thoughts(&self, _args: &Object) -> String {
        "Running a short script to process data.".into()
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let lang = text_arg(call, args, "lang", "python");
        let script = text_arg(call, args, "script", DEFAULT_SCRIPT);
        let arguments = arguments(call, args)?;
        let Some(language) = Language::parse(&lang) else {
            call.set_output("_ERROR", json!(format!("Unsupported language: {lang}")));
            return Ok(None);
        };
        let job = Job {
            language,
            code: script,
            arguments,
        };
        let env = call.env();
        match sandbox::execute(&env.sandbox, &env.net, &job).await {
            Ok(exec) => process(call, exec),
            Err(e) => call.set_output("_ERROR", json!(e.to_string())),
        }
        // RAGFlow returns the whole output dict to the model (an Agent's tool; a node's
        // return value is not used).
        let outputs: Object = call
            .outputs()
            .into_iter()
            .filter(|(k, _)| !k.starts_with('_') || k == "_ERROR")
            .collect();
        Ok(Some(Value::Object(outputs)))
    }
}

/// `kwargs.get(name, param)` as text.
fn text_arg(call: &Call<'_>, args: &Object, name: &str, default: &str) -> String {
    match args.get(name).or_else(|| call.param(name)) {
        Some(Value::Null) | None => default.to_string(),
        Some(v) => py_str(v),
    }
}

/// `main`'s keyword arguments: for each `arguments` entry, the caller's value when it
/// gives a truthy one (an Agent's tool call), else the referenced canvas value
/// (RAGFlow's `get_variable_value`: an unknown reference fails the tool), `None` when
/// the entry is empty. Non-text entries are taken as literal values.
fn arguments(call: &Call<'_>, args: &Object) -> CResult<Object> {
    let mut out = Object::new();
    let Some(Value::Object(decl)) = call.param("arguments") else {
        return Ok(out);
    };
    for (k, v) in decl {
        if let Some(given) = args.get(k).filter(|a| truthy(a)) {
            out.insert(k.clone(), given.clone());
            continue;
        }
        let value = match v {
            Value::String(s) if !s.is_empty() => call.cx.resolve(s)?,
            v if !truthy(v) => Value::Null,
            other => other.clone(),
        };
        out.insert(k.clone(), value);
    }
    Ok(out)
}

/// The declared `outputs`, RAGFlow's default when the DSL has none.
fn declared_outputs(call: &Call<'_>) -> Object {
    match call.param("outputs") {
        Some(Value::Object(o)) => o.clone(),
        _ => match json!({
            "result": {"value": "", "type": "object"},
            "attachments": {"value": [], "type": "Array<String>"},
        }) {
            Value::Object(o) => o,
            _ => Object::new(),
        },
    }
}

/// RAGFlow's `_process_execution_result`.
fn process(call: &Call<'_>, exec: Execution) {
    let structured = exec.result.is_some();
    if !exec.stderr.is_empty()
        && !structured
        && exec.artifacts.is_empty()
        && exec.stdout.trim().is_empty()
    {
        let mut err = exec.stderr;
        for n in &exec.notes {
            err.push_str(&format!("\n({n})"));
        }
        call.set_output("_ERROR", json!(err));
        return;
    }
    call.set_output("_ERROR", json!(""));
    let resolved = exec
        .result
        .unwrap_or_else(|| protocol::deserialize_stdout(&exec.stdout));
    let mut parts = Vec::new();
    let base = apply_business_output(call, resolved);
    if !base.is_empty() {
        parts.push(base);
    }
    if exec.artifacts.is_empty() {
        call.set_output("_ARTIFACTS", Value::Null);
        call.set_output("_ATTACHMENT_CONTENT", json!(""));
        call.set_output("attachments", json!([]));
    } else {
        let stored = store_artifacts(call, &exec.artifacts);
        let links: Vec<Value> = stored
            .iter()
            .flatten()
            .map(
                |s| json!({"name": s.name, "url": s.url, "mime_type": s.mime_type, "size": s.size}),
            )
            .collect();
        let text = attachment_content(&exec.artifacts, &stored);
        call.set_output("attachments", json!(markdown_links(&stored)));
        call.set_output(
            "_ARTIFACTS",
            if links.is_empty() {
                Value::Null
            } else {
                Value::Array(links)
            },
        );
        call.set_output("_ATTACHMENT_CONTENT", json!(text));
        if !text.is_empty() {
            parts.push(text);
        }
    }
    call.set_output("content", json!(parts.join("\n\n").trim()));
}

/// RAGFlow's `_apply_business_output`: `raw_result`, `actual_type` and the business
/// output (null, with `_ERROR`, when the value breaks the contract); returns the text.
fn apply_business_output(call: &Call<'_>, value: Value) -> String {
    let outputs = declared_outputs(call);
    call.set_output("raw_result", value.clone());
    match build_contract(&outputs, &value) {
        Ok(c) => {
            call.set_output("actual_type", json!(c.actual_type));
            call.set_output(&c.business_output, c.value);
            c.content
        }
        Err(e) => {
            for name in outputs.keys().filter(|k| !is_system_output(k)) {
                call.set_output(name, Value::Null);
            }
            call.set_output("actual_type", json!(infer_actual_type(&value)));
            call.set_output("_ERROR", json!(e.0));
            render_canonical_content(&value)
        }
    }
}

/// An artifact kept on disk.
#[derive(Debug, Clone)]
struct Stored {
    name: String,
    url: String,
    mime_type: String,
    size: u64,
}

/// Copy the artifacts under `<artifacts dir>/<run id>/` (a name already taken gets a
/// `-2`, `-3`... suffix). `None` for one that could not be written.
fn store_artifacts(call: &Call<'_>, artifacts: &[Artifact]) -> Vec<Option<Stored>> {
    let base = call
        .env()
        .artifacts_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("canvas-artifacts"));
    let run: String = call
        .cx
        .run_id()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = std::path::absolute(base.join(if run.is_empty() { "run".into() } else { run }));
    let Ok(dir) = dir else {
        return vec![None; artifacts.len()];
    };
    if std::fs::create_dir_all(&dir).is_err() {
        return vec![None; artifacts.len()];
    }
    artifacts
        .iter()
        .map(|a| {
            let path = write_new(&dir, &a.name, &a.bytes)?;
            Some(Stored {
                name: a.name.clone(),
                url: file_url(&path),
                mime_type: a.mime_type.clone(),
                size: a.bytes.len() as u64,
            })
        })
        .collect()
}

/// Write `bytes` to a new file named `name` in `dir`, or `stem-N.ext` when taken.
fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> Option<PathBuf> {
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, format!(".{e}")),
        _ => (name, String::new()),
    };
    for n in 1..=1000 {
        let candidate = if n == 1 {
            dir.join(name)
        } else {
            dir.join(format!("{stem}-{n}{ext}"))
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(mut f) => return f.write_all(bytes).ok().map(|_| candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
    None
}

/// `file://` URL of an absolute path (bytes outside the unreserved set escaped).
fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for &b in path.to_string_lossy().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// RAGFlow's `_build_attachment_markdown_list`.
fn markdown_links(stored: &[Option<Stored>]) -> Vec<String> {
    stored
        .iter()
        .flatten()
        .map(|s| {
            if s.mime_type.to_ascii_lowercase().starts_with("image/") {
                format!("![{}]({})", s.name, s.url)
            } else {
                format!("[Download {}]({})", s.name, s.url)
            }
        })
        .collect()
}

/// RAGFlow's `_normalize_attachment_type`.
fn attachment_type(name: &str, mime: &str) -> String {
    let mime = mime.trim().to_ascii_lowercase();
    if mime.starts_with("image/") {
        return "image".into();
    }
    match mime.as_str() {
        "application/pdf" => return "pdf".into(),
        "text/csv" => return "csv".into(),
        "application/json" => return "json".into(),
        "text/html" => return "html".into(),
        _ => {}
    }
    match name.rsplit_once('.') {
        Some((_, ext)) if !ext.is_empty() => ext.to_ascii_lowercase(),
        _ => "file".into(),
    }
}

/// The text of a text-like artifact (CSV, JSON, SVG as they are; HTML as its text);
/// `None` for binary ones (images, PDF), which are not parsed here.
fn artifact_text(a: &Artifact) -> Option<String> {
    let ext = a
        .name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let text = match ext.as_str() {
        "csv" | "json" | "svg" => String::from_utf8_lossy(&a.bytes).into_owned(),
        "html" => html_text(&String::from_utf8_lossy(&a.bytes)),
        _ => return None,
    };
    Some(match text.char_indices().nth(MAX_ATTACHMENT_CHARS) {
        Some((cut, _)) => format!("{}\n... (truncated)", &text[..cut]),
        None => text,
    })
}

/// Elements that start a new line of text.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "tr",
    "table",
    "ul",
    "ol",
    "section",
    "article",
    "header",
    "footer",
    "pre",
    "blockquote",
];

/// The visible text of an HTML page, one block per line.
fn html_text(html: &str) -> String {
    let doc = scraper::Html::parse_document(html);
    let mut out = String::new();
    for node in doc.root_element().descendants() {
        if let Some(e) = node.value().as_element() {
            if BLOCKS.contains(&e.name()) {
                out.push('\n');
            }
            continue;
        }
        let Some(t) = node.value().as_text() else {
            continue;
        };
        let hidden = node.ancestors().any(|a| {
            a.value()
                .as_element()
                .is_some_and(|e| matches!(e.name(), "script" | "style" | "head"))
        });
        if !hidden {
            out.push_str(t);
        }
    }
    out.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// RAGFlow's `_build_attachment_content`: `attachment_count: N` and one section each.
fn attachment_content(artifacts: &[Artifact], stored: &[Option<Stored>]) -> String {
    let sections: Vec<String> = artifacts
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let key = format!("attachment{}", i + 1);
            let body = artifact_text(a).unwrap_or_else(|| {
                let mut t = "Artifact generated but parse failed.".to_string();
                if let Some(Some(s)) = stored.get(i) {
                    t.push_str(&format!(" Download: {}", s.url));
                }
                t
            });
            let title = format!(
                "{key} ({}): {}",
                attachment_type(&a.name, &a.mime_type),
                a.name
            );
            format!("{title}\n{body}").trim().to_string()
        })
        .collect();
    if sections.is_empty() {
        "attachment_count: 0".into()
    } else {
        format!(
            "attachment_count: {}\n\n{}",
            sections.len(),
            sections.join("\n\n")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn art(name: &str, mime: &str, bytes: &[u8]) -> Artifact {
        Artifact {
            name: name.into(),
            mime_type: mime.into(),
            bytes: bytes.to_vec(),
        }
    }

    fn params(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn check_rejects_unknown_languages_and_empty_scripts() {
        let err = |p: Value| match build(&params(p)) {
            Err(BuildError::Params(m)) => m,
            _ => panic!("accepted"),
        };
        assert_eq!(
            err(json!({"lang": "ruby"})),
            "[CodeExec] Support languages ruby is not supported, it should be in ['python', 'python3', 'nodejs', 'javascript']"
        );
        assert_eq!(
            err(json!({"script": ""})),
            "[CodeExec] Script does not support empty value."
        );
        let t = build(&params(json!({"lang": "nodejs", "script": "x"}))).unwrap();
        assert_eq!(t.meta().name, "execute_code");
        let schema = t.meta().schema(&Object::new(), "execute_code");
        assert_eq!(
            schema["function"]["parameters"]["required"],
            json!(["lang", "script"])
        );
        assert_eq!(t.default_outputs(), ["result", "attachments"]);
    }

    #[test]
    fn attachment_sections_and_links() {
        let arts = [
            art("t.csv", "text/csv", b"a,b\n1,2"),
            art("p.png", "image/png", b"\x89PNG"),
        ];
        let stored = vec![
            Some(Stored {
                name: "t.csv".into(),
                url: "file:///x/t.csv".into(),
                mime_type: "text/csv".into(),
                size: 7,
            }),
            Some(Stored {
                name: "p.png".into(),
                url: "file:///x/p.png".into(),
                mime_type: "image/png".into(),
                size: 4,
            }),
        ];
        assert_eq!(
            attachment_content(&arts, &stored),
            "attachment_count: 2\n\nattachment1 (csv): t.csv\na,b\n1,2\n\nattachment2 (image): p.png\nArtifact generated but parse failed. Download: file:///x/p.png"
        );
        assert_eq!(
            markdown_links(&stored),
            [
                "[Download t.csv](file:///x/t.csv)",
                "![p.png](file:///x/p.png)"
            ]
        );
        assert_eq!(attachment_type("a.svg", "image/svg+xml"), "image");
        assert_eq!(attachment_type("a.txt", ""), "txt");
        assert_eq!(attachment_type("noext", ""), "file");
    }

    #[test]
    fn html_artifacts_become_text() {
        let a = art(
            "r.html",
            "text/html",
            b"<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1><p>Some <b>bold</b> text</p><script>var x;</script></body></html>",
        );
        assert_eq!(artifact_text(&a).unwrap(), "Title\nSome bold text");
        let a = art("r.html", "text/html", b"<p>one</p>\n<p>two</p>");
        assert_eq!(artifact_text(&a).unwrap(), "one\ntwo");
    }

    #[test]
    fn files_never_overwrite_and_urls_are_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let a = write_new(dir.path(), "out.csv", b"1").unwrap();
        let b = write_new(dir.path(), "out.csv", b"2").unwrap();
        assert_eq!(a.file_name().unwrap(), "out.csv");
        assert_eq!(b.file_name().unwrap(), "out-2.csv");
        assert_eq!(std::fs::read(&a).unwrap(), b"1");
        assert_eq!(
            file_url(Path::new("/tmp/a b/é.png")),
            "file:///tmp/a%20b/%C3%A9.png"
        );
    }
}
