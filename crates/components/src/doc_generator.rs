//! DocGenerator (RAGFlow's `DocsGenerator` too): its markdown `content`, references
//! resolved, written as a PDF, DOCX, plain-text, markdown or HTML file in the run's
//! output directory (`--output-dir`, else the current directory); its `download`
//! output is the download info a Message moves into `message_end.downloads`.

mod docx;
mod markdown;
mod pdf;

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use async_trait::async_trait;
use base64::Engine;
use regex::Regex;
use serde_json::{Value, json};

use super::message::stringify;
use canvas_engine::refs::{REF_PATTERN, RefElement};
use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx};
use canvas_pyrt::{Object, py_json, py_str};
use canvas_tools::ToolEnv;

/// The formats RAGFlow accepts, in its order.
const FORMATS: &[&str] = &["pdf", "docx", "txt", "markdown", "html"];

/// Build a DocGenerator, with RAGFlow's parameter checks.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    let content = match params.get("content") {
        Some(Value::String(s)) => s.clone(),
        // `"".join(content)`, as RAGFlow's Message base does for its input elements.
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(Value::Null) | None => String::new(),
        Some(other) => py_str(other),
    };
    if content.is_empty() {
        return Err(BuildError::Params(
            "[DocGenerator] Content does not support empty value.".into(),
        ));
    }
    let format = match params.get("output_format") {
        None | Some(Value::Null) => "pdf".to_string(),
        Some(Value::String(s)) if s.is_empty() => "pdf".to_string(),
        Some(v) => py_str(v),
    };
    if !FORMATS.contains(&format.as_str()) {
        return Err(BuildError::Params(format!(
            "[DocGenerator] Output format {format} is not supported, it should be in ['pdf', 'docx', 'txt', 'markdown', 'html']"
        )));
    }
    let font_size = match params.get("font_size") {
        None => 12.0,
        Some(v @ Value::Number(n)) => {
            let f = n.as_f64().unwrap_or(0.0);
            if f <= 0.0 {
                return Err(BuildError::Params(format!(
                    "[DocGenerator] Font size {} not supported, should be positive numeric",
                    py_str(v)
                )));
            }
            f
        }
        Some(v) => {
            return Err(BuildError::Params(format!(
                "[DocGenerator] Font size {} not supported, should be positive numeric",
                py_str(v)
            )));
        }
    };
    if font_size < 12.0 {
        return Err(BuildError::Params(
            "[DocGenerator] Font size must be greater than or equal to 12".into(),
        ));
    }
    let text = |k: &str| match params.get(k) {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(v) => py_str(v),
    };
    let flag = |k: &str, default: bool| match params.get(k) {
        None | Some(Value::Null) => default,
        Some(Value::Bool(b)) => *b,
        Some(v) => canvas_pyrt::truthy(v),
    };
    Ok(Box::new(DocGenerator {
        content,
        format,
        filename: text("filename"),
        header: text("header_text"),
        footer: text("footer_text"),
        watermark: text("watermark_text"),
        page_numbers: flag("add_page_numbers", true),
        timestamp: flag("add_timestamp", true),
        include_in_content: flag("include_download_info_in_content", false),
        font_size,
    }))
}

/// The DocGenerator component.
pub struct DocGenerator {
    content: String,
    format: String,
    filename: String,
    header: String,
    footer: String,
    watermark: String,
    page_numbers: bool,
    timestamp: bool,
    include_in_content: bool,
    font_size: f64,
}

/// A generated document: its bytes and what to call it.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Its extension (`pdf`, `docx`, `txt`, `md`, `html`).
    pub ext: &'static str,
    /// Its MIME type.
    pub mime_type: &'static str,
}

/// Everything a format writer needs; owned, so it can run on a blocking thread.
#[derive(Debug, Clone)]
struct Job {
    markdown: String,
    format: String,
    title: String,
    header: String,
    footer: String,
    watermark: String,
    page_numbers: bool,
    timestamp: Option<String>,
    font_size: f64,
    font_file: Option<PathBuf>,
    home: Option<PathBuf>,
}

/// RAGFlow's `Generated: YYYY-mm-dd HH:MM:SS` line (local time).
fn timestamp_text() -> String {
    format!(
        "Generated: {}",
        chrono::Local::now().format("%Y-%m-%d %H:%M:%S")
    )
}

/// Write the document for `job` (CPU work: fonts, layout, compression).
fn generate(job: &Job) -> Result<Generated, String> {
    // The text formats carry the timestamp in the body, as RAGFlow's pandoc path does.
    let body = || match &job.timestamp {
        Some(t) => format!("{t}\n\n{}", job.markdown),
        None => job.markdown.clone(),
    };
    match job.format.as_str() {
        "pdf" => {
            let opts = pdf::PdfOptions {
                font_size: job.font_size as f32,
                header: job.header.clone(),
                footer: job.footer.clone(),
                watermark: job.watermark.clone(),
                page_numbers: job.page_numbers,
                timestamp: job.timestamp.clone(),
                font_file: job.font_file.clone(),
                home: job.home.clone(),
                font_dirs: None,
            };
            let bytes = pdf::render(&markdown::blocks(&job.markdown), &opts)
                .map_err(|e| format!("PDF generation failed: {e}"))?;
            Ok(Generated {
                bytes,
                ext: "pdf",
                mime_type: "application/pdf",
            })
        }
        "docx" => {
            let opts = docx::DocxOptions {
                font_size: job.font_size.round() as usize,
                header: job.header.clone(),
                footer: job.footer.clone(),
                timestamp: job.timestamp.clone(),
                page_numbers: job.page_numbers,
            };
            let bytes = docx::render(&markdown::blocks(&job.markdown), &opts)
                .map_err(|e| format!("DOCX generation failed: {e}"))?;
            Ok(Generated {
                bytes,
                ext: "docx",
                mime_type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            })
        }
        "txt" => Ok(Generated {
            bytes: markdown::plain(&body()).into_bytes(),
            ext: "txt",
            mime_type: "text/plain",
        }),
        "markdown" => {
            let mut s = body();
            if !s.ends_with('\n') {
                s.push('\n');
            }
            Ok(Generated {
                bytes: s.into_bytes(),
                ext: "md",
                mime_type: "text/markdown",
            })
        }
        "html" => Ok(Generated {
            bytes: markdown::html(&body(), &job.title).into_bytes(),
            ext: "html",
            mime_type: "text/html",
        }),
        other => Err(format!("Unsupported output format: {other}")),
    }
}

/// RAGFlow's `sanitize_filename`: path and control characters become spaces, the
/// extension is replaced by `ext`, the stem is cut to 180 characters.
pub fn sanitize_filename(name: &str, ext: &str) -> String {
    static BAD: LazyLock<Regex> = LazyLock::new(|| {
        // A fixed, valid pattern: compiling it cannot fail.
        Regex::new(r#"[\\/\x00-\x1f?#%*:|<>"]"#).expect("valid regex")
    });
    static SPACES: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s+").expect("valid regex"));
    let name = BAD.replace_all(name.trim(), " ");
    let name = SPACES.replace_all(&name, " ");
    let name = name.trim_matches([' ', '.']);
    if name.is_empty() {
        return format!("file.{ext}");
    }
    // Python's `os.path.splitext`: the last dot, unless only dots precede it.
    let stem = match name.rfind('.') {
        Some(i) if name[..i].chars().any(|c| c != '.') => &name[..i],
        _ => name,
    };
    let stem: String = stem.chars().take(180).collect();
    let stem = stem.trim_end();
    let stem = if stem.is_empty() { "file" } else { stem };
    format!("{stem}.{ext}")
}

/// Write `bytes` to a new file `name` in `dir`, or `stem-2.ext`, `stem-3.ext`... when
/// taken: an existing file is never overwritten.
pub fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, format!(".{e}")),
        _ => (name, String::new()),
    };
    for n in 1..=10_000 {
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
            Ok(mut f) => {
                f.write_all(bytes)?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "no free file name for {name} in {}",
        dir.display()
    )))
}

/// RAGFlow's `_strip_thinking`: reasoning blocks never reach an exported document.
fn strip_thinking(text: &str) -> String {
    static BLOCK: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?s)<think>.*?</think>").expect("valid regex"));
    static OPEN: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?s)<think>.*$").expect("valid regex"));
    static TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"</?think>").expect("valid regex"));
    static GAPS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\n{3,}").expect("valid regex"));
    let t = BLOCK.replace_all(text, "");
    let t = OPEN.replace_all(&t, "");
    let t = TAG.replace_all(&t, "");
    GAPS.replace_all(&t, "\n\n").trim().to_string()
}

impl DocGenerator {
    /// RAGFlow's `_resolve_content`: every reference replaced by its text (streams
    /// drained; download infos vanish; an unresolvable one becomes `[ERROR: …]`).
    async fn resolve(&self, cx: &NodeCx<'_>) -> CResult<String> {
        let mut values: std::collections::HashMap<String, String> = Default::default();
        for e in cx.collect_refs(&self.content) {
            let cpn = canvas_engine::refs::strip_ref(&e.exp)
                .split_once('@')
                .filter(|(c, v)| *v == "content" && cx.has_stream(c))
                .map(|(c, _)| c.to_string());
            if let Some(cpn) = cpn
                && let Some(Err(ComponentError::Fatal(m))) = cx.pull_stream(&cpn, &mut |_| {}).await
            {
                return Err(ComponentError::Fatal(m));
            }
            let s = match cx.resolve(&e.exp) {
                Ok(v) => stringify(&v, &mut Vec::new()),
                Err(err) => format!("[ERROR: {}]", err.py_message()),
            };
            cx.set_input(&e.exp, json!(s));
            values.insert(e.raw, s);
        }
        // RAGFlow's `re.sub` over its reference pattern: the braces and the spaces the
        // pattern takes around a reference go with it.
        let mut out = String::with_capacity(self.content.len());
        let mut last = 0;
        for m in REF_PATTERN.find_iter(&self.content) {
            out.push_str(&self.content[last..m.start()]);
            out.push_str(values.get(m.group()).map_or("", String::as_str));
            last = m.end();
        }
        out.push_str(&self.content[last..]);
        Ok(out)
    }
}

#[async_trait]
impl Component for DocGenerator {
    fn default_outputs(&self) -> &'static [&'static str] {
        &["download"]
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        format!(
            "Generating {} document with markdown conversion...",
            self.format.to_uppercase()
        )
        .into()
    }

    fn text_refs(&self, cx: &NodeCx<'_>) -> Option<Vec<RefElement>> {
        Some(cx.collect_refs(&self.content))
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let markdown = strip_thinking(&self.resolve(cx).await?);
        let ext = if self.format == "markdown" {
            "md"
        } else {
            self.format.as_str()
        };
        let filename = if self.filename.trim().is_empty() {
            let hex = format!("{:032x}", ulid::Ulid::new().0);
            format!(
                "document_{}_{}.{ext}",
                chrono::Local::now().format("%Y%m%d_%H%M%S"),
                &hex[hex.len() - 8..]
            )
        } else {
            sanitize_filename(&self.filename, ext)
        };
        let env = ToolEnv::of(cx);
        let job = Job {
            markdown,
            format: self.format.clone(),
            title: filename.clone(),
            header: self.header.clone(),
            footer: self.footer.clone(),
            watermark: self.watermark.clone(),
            page_numbers: self.page_numbers,
            timestamp: self.timestamp.then(timestamp_text),
            font_size: self.font_size,
            font_file: env.var("CANVAS_PDF_FONT").map(PathBuf::from),
            home: env.var("HOME").map(PathBuf::from),
        };
        let generated = tokio::task::spawn_blocking(move || generate(&job))
            .await
            .map_err(|e| ComponentError::Failed(format!("Document generation failed: {e}")))?
            .map_err(ComponentError::Failed)?;
        if generated.bytes.is_empty() {
            return Err(ComponentError::Failed("Document file is empty".into()));
        }
        let dir = match &env.artifacts_dir {
            Some(d) => d.clone(),
            None => PathBuf::from("."),
        };
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let written = std::fs::create_dir_all(&dir)
            .and_then(|_| write_new(&dir, &filename, &generated.bytes))
            .map_err(|e| {
                ComponentError::Failed(format!(
                    "Document generation failed: cannot write {filename} in {}: {e}",
                    dir.display()
                ))
            })?;
        let path = written.to_string_lossy().into_owned();
        let name = written
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or(filename);
        let doc_id = ulid::Ulid::new().to_string();
        let size = generated.bytes.len();
        let info = json!({
            "doc_id": doc_id,
            "filename": name,
            "path": path,
            "mime_type": generated.mime_type,
            "size": size,
            "base64": base64::engine::general_purpose::STANDARD.encode(&generated.bytes),
            "include_download_info_in_content": self.include_in_content,
        });
        cx.set_output("doc_id", json!(doc_id));
        cx.set_output("filename", json!(name));
        cx.set_output("mime_type", json!(generated.mime_type));
        cx.set_output("size", json!(size));
        cx.set_output("download", json!(py_json(&info)));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn job(format: &str, md: &str) -> Job {
        Job {
            markdown: md.into(),
            format: format.into(),
            title: "t".into(),
            header: String::new(),
            footer: String::new(),
            watermark: String::new(),
            page_numbers: true,
            timestamp: Some("Generated: 2026-01-02 03:04:05".into()),
            font_size: 12.0,
            font_file: None,
            home: None,
        }
    }

    #[test]
    fn filenames_are_sanitized_like_ragflow() {
        assert_eq!(
            sanitize_filename("my/report: v1?.docx", "pdf"),
            "my report v1.pdf"
        );
        assert_eq!(sanitize_filename("  ..  ", "txt"), "file.txt");
        // Leading dots go too (`strip(" .")`), then the extension is replaced.
        assert_eq!(sanitize_filename(".hidden", "md"), "hidden.md");
        assert_eq!(sanitize_filename("a.b.c", "md"), "a.b.md");
        assert_eq!(sanitize_filename(&"a".repeat(300), "pdf").len(), 184);
    }

    #[test]
    fn an_existing_file_is_never_overwritten() {
        let d = tempfile::tempdir().unwrap();
        let a = write_new(d.path(), "x.pdf", b"1").unwrap();
        let b = write_new(d.path(), "x.pdf", b"2").unwrap();
        assert_eq!(a, d.path().join("x.pdf"));
        assert_eq!(b, d.path().join("x-2.pdf"));
        assert_eq!(std::fs::read(&a).unwrap(), b"1");
        assert_eq!(std::fs::read(&b).unwrap(), b"2");
    }

    #[test]
    fn think_blocks_are_stripped() {
        assert_eq!(strip_thinking("<think>a</think>\n\n\n\nB"), "B");
        assert_eq!(strip_thinking("A<think>unfinished"), "A");
    }

    #[test]
    fn text_formats_carry_the_timestamp_line() {
        let g = generate(&job("txt", "# Title\n\n**Bold** body")).unwrap();
        assert_eq!(g.mime_type, "text/plain");
        assert_eq!(
            String::from_utf8(g.bytes).unwrap(),
            "Generated: 2026-01-02 03:04:05\n\nTitle\n\nBold body\n"
        );
        let g = generate(&job("markdown", "# Title")).unwrap();
        assert_eq!(g.ext, "md");
        assert_eq!(
            String::from_utf8(g.bytes).unwrap(),
            "Generated: 2026-01-02 03:04:05\n\n# Title\n"
        );
        let g = generate(&job("html", "# Title")).unwrap();
        let h = String::from_utf8(g.bytes).unwrap();
        assert!(h.contains("<p>Generated: 2026-01-02 03:04:05</p>"), "{h}");
        assert!(h.contains("<h1>Title</h1>"), "{h}");
    }

    fn pdf_text(bytes: &[u8]) -> String {
        let doc = lopdf::Document::load_mem(bytes).expect("a readable PDF");
        let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
        doc.extract_text(&pages).expect("extractable text")
    }

    #[test]
    fn pdf_holds_the_text_and_the_overlay() {
        let mut j = job(
            "pdf",
            "# Quarterly report\n\nRevenue grew **twelve** percent.\n\n- first point\n- second point\n\n```\nlet x = 1;\n```\n",
        );
        j.header = "ACME header".into();
        j.footer = "Confidential".into();
        j.watermark = "DRAFT".into();
        let g = generate(&j).unwrap();
        assert!(g.bytes.starts_with(b"%PDF-"));
        let text = pdf_text(&g.bytes);
        let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for want in [
            "Quarterly report",
            "Revenue grew twelve percent.",
            "first point",
            "let x = 1;",
            "ACME header",
            "Confidential",
            "Generated: 2026-01-02 03:04:05",
            "Page 1",
        ] {
            assert!(flat.contains(want), "{want:?} missing from {flat:?}");
        }
    }

    #[test]
    fn long_pdf_text_wraps_and_breaks_pages() {
        let para = "word ".repeat(400);
        let md = format!("{para}\n\n{para}\n\n{para}\n\nthe end");
        let g = generate(&job("pdf", &md)).unwrap();
        let doc = lopdf::Document::load_mem(&g.bytes).unwrap();
        assert!(doc.get_pages().len() >= 2);
        let last = *doc.get_pages().keys().last().unwrap();
        assert!(doc.extract_text(&[last]).unwrap().contains("the end"));
    }

    #[test]
    fn pdf_renders_cjk_text_with_a_system_font() {
        let g = generate(&job("pdf", "# 季度报告\n\n收入增长了百分之十二。")).unwrap();
        let text = pdf_text(&g.bytes);
        assert!(text.contains("季度报告"), "{text:?}");
        assert!(text.contains("收入增长了百分之十二。"), "{text:?}");
    }

    #[test]
    fn a_missing_font_file_is_a_clear_error() {
        let mut j = job("pdf", "x");
        j.font_file = Some(PathBuf::from("/nonexistent/font.ttf"));
        let e = generate(&j).unwrap_err();
        assert!(
            e.starts_with("PDF generation failed: CANVAS_PDF_FONT"),
            "{e}"
        );
    }

    #[test]
    fn docx_holds_the_text_headers_and_footers() {
        let mut j = job("docx", "# 标题\n\nPlain **bold** *it*\n\n1. one\n2. two\n");
        j.header = "Head".into();
        j.footer = "Foot".into();
        let g = generate(&j).unwrap();
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(g.bytes)).unwrap();
        let names: Vec<String> = zip.file_names().map(String::from).collect();
        let mut read = |name: &str| {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut zip.by_name(name).unwrap(), &mut s).unwrap();
            s
        };
        let doc = read("word/document.xml");
        for want in ["标题", "Plain ", "bold", "1.", "two", "Heading1"] {
            assert!(doc.contains(want), "{want:?} missing");
        }
        assert!(
            doc.contains("<w:b />") || doc.contains("<w:b/>"),
            "bold run"
        );
        let header = names.iter().find(|n| n.starts_with("word/header")).unwrap();
        let footer = names.iter().find(|n| n.starts_with("word/footer")).unwrap();
        assert!(read(header).contains("Head"));
        let f = read(footer);
        assert!(f.contains("Foot") && f.contains("PAGE") && f.contains("Generated: 2026"));
    }

    #[test]
    fn params_are_checked_like_ragflow() {
        let p = |v: Value| v.as_object().cloned().unwrap();
        assert!(build(&p(json!({"content": ""}))).is_err());
        let e = build(&p(json!({"content": "x", "output_format": "xlsx"})))
            .err()
            .unwrap();
        assert!(e.to_string().contains("is not supported"));
        assert!(build(&p(json!({"content": "x", "font_size": 10}))).is_err());
        assert!(build(&p(json!({"content": "x", "output_format": "markdown"}))).is_ok());
    }
}
