//! DocGenerator end to end: an Agent (mock model) writes markdown, DocGenerator turns it
//! into a file under `--output-dir` (or the current directory), and the Message that
//! references its `download` lists the file in `message_end.downloads`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::harness::CanvasCli;
use crate::util::trace;

fn flow(doc_params: Value, message: &str) -> Value {
    let mut params = json!({"content": "{Agent:Writer@content}"});
    if let (Some(p), Some(extra)) = (params.as_object_mut(), doc_params.as_object()) {
        for (k, v) in extra {
            p.insert(k.clone(), v.clone());
        }
    }
    json!({"components": {
        "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Agent:Writer"], "upstream": []},
        "Agent:Writer": {"obj": {"component_name": "Agent", "params": {
            "llm_id": "",
            "sys_prompt": "You write reports in markdown.",
            "prompts": [{"role": "user", "content": "{sys.query}"}],
            "max_rounds": 1,
        }}, "downstream": ["DocGenerator:Doc"], "upstream": ["begin"]},
        "DocGenerator:Doc": {"obj": {"component_name": "DocGenerator", "params": params},
            "downstream": ["Message:Out"], "upstream": ["Agent:Writer"]},
        "Message:Out": {"obj": {"component_name": "Message", "params": {"content": [message]}},
            "downstream": [], "upstream": ["DocGenerator:Doc"]},
    }})
}

/// Run the canvas in `dir` with the model answering `answer`; returns the events.
fn run(
    dir: &Path,
    doc_params: Value,
    message: &str,
    answer: &str,
    out_dir: Option<&Path>,
) -> Vec<Value> {
    let mut cli = CanvasCli::new()
        .json("flow.json", &flow(doc_params, message))
        .mock_llm(&json!({"rules": [], "default": answer}))
        .current_dir(dir);
    let flow = cli.path("flow.json");
    cli = cli
        .arg("run")
        .arg(flow)
        .args(["-q", "write the report", "--format", "jsonl"]);
    if let Some(o) = out_dir {
        cli = cli.arg("--output-dir").arg(o);
    }
    cli.run().code(0).events()
}

fn downloads(evs: &[Value]) -> Vec<Value> {
    let end = evs
        .iter()
        .find(|e| e["event"] == "message_end")
        .unwrap_or_else(|| panic!("no message_end: {:?}", trace(evs)));
    end["data"]["downloads"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no downloads in {end}"))
}

fn pdf_text(path: &Path) -> String {
    let doc = lopdf::Document::load(path).expect("a readable PDF");
    let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
    let text = doc.extract_text(&pages).expect("extractable text");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn an_agent_answer_becomes_a_pdf_listed_in_message_end_downloads() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let answer =
        "# Refund report\n\nRefunds are paid within **14 days**.\n\n- by card\n- by transfer";
    let evs = run(
        dir.path(),
        json!({"output_format": "pdf", "filename": "refunds", "header_text": "ACME"}),
        "Your file: {DocGenerator:Doc@download}",
        answer,
        Some(&out_dir),
    );
    let dl = downloads(&evs);
    assert_eq!(dl.len(), 1, "{dl:?}");
    let d = &dl[0];
    assert_eq!(d["filename"], "refunds.pdf");
    assert_eq!(d["mime_type"], "application/pdf");
    assert!(d.get("include_download_info_in_content").is_none(), "{d}");
    let path = PathBuf::from(d["path"].as_str().expect("a path"));
    assert_eq!(
        path,
        std::path::absolute(out_dir.join("refunds.pdf")).unwrap()
    );
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(d["size"], json!(bytes.len()));
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    assert_eq!(d["base64"].as_str(), Some(b64.as_str()));
    let text = pdf_text(&path);
    for want in [
        "Refund report",
        "Refunds are paid within 14 days",
        "by transfer",
        "ACME",
        "Page 1",
    ] {
        assert!(text.contains(want), "{want:?} not in {text:?}");
    }
    // The download info renders as nothing in the message (RAGFlow's reference
    // pattern takes the space before it too).
    let last = evs.last().unwrap();
    assert_eq!(last["event"], "workflow_finished");
    assert_eq!(last["data"]["outputs"]["content"], "Your file:");

    // A second run never overwrites the first file.
    let evs = run(
        dir.path(),
        json!({"output_format": "pdf", "filename": "refunds"}),
        "{DocGenerator:Doc@download}",
        "Second version",
        Some(&out_dir),
    );
    let d = &downloads(&evs)[0];
    assert_eq!(d["filename"], "refunds-2.pdf");
    assert!(pdf_text(&out_dir.join("refunds.pdf")).contains("Refund report"));
    assert!(pdf_text(&out_dir.join("refunds-2.pdf")).contains("Second version"));
}

#[test]
fn a_cjk_answer_renders_in_the_pdf() {
    let dir = tempfile::tempdir().unwrap();
    let answer = "# 退款政策\n\n退款将在十四天内支付。";
    let evs = run(
        dir.path(),
        json!({"output_format": "pdf"}),
        "{DocGenerator:Doc@download}",
        answer,
        Some(dir.path()),
    );
    let d = &downloads(&evs)[0];
    let name = d["filename"].as_str().unwrap();
    assert!(
        name.starts_with("document_") && name.ends_with(".pdf"),
        "{name}"
    );
    let text = pdf_text(Path::new(d["path"].as_str().unwrap()));
    assert!(text.contains("退款政策"), "{text:?}");
    assert!(text.contains("退款将在十四天内支付。"), "{text:?}");
}

#[test]
fn docx_txt_markdown_and_html_are_written_to_the_current_directory_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let answer = "# Weekly notes\n\nShip the **release** on Friday.";
    for (format, ext, mime) in [
        (
            "docx",
            "docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        ("txt", "txt", "text/plain"),
        ("markdown", "md", "text/markdown"),
        ("html", "html", "text/html"),
    ] {
        let evs = run(
            dir.path(),
            json!({"output_format": format, "filename": "notes", "add_timestamp": false}),
            "{DocGenerator:Doc@download}",
            answer,
            None,
        );
        let d = &downloads(&evs)[0];
        assert_eq!(d["filename"], format!("notes.{ext}"));
        assert_eq!(d["mime_type"], mime);
        let path = dir.path().join(format!("notes.{ext}"));
        assert_eq!(
            std::fs::canonicalize(d["path"].as_str().unwrap()).unwrap(),
            std::fs::canonicalize(&path).unwrap()
        );
        let bytes = std::fs::read(&path).unwrap();
        match format {
            "docx" => {
                let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
                let mut xml = String::new();
                std::io::Read::read_to_string(
                    &mut zip.by_name("word/document.xml").unwrap(),
                    &mut xml,
                )
                .unwrap();
                assert!(
                    xml.contains("Weekly notes") && xml.contains("release"),
                    "{xml}"
                );
            }
            "txt" => assert_eq!(
                String::from_utf8(bytes).unwrap(),
                "Weekly notes\n\nShip the release on Friday.\n"
            ),
            "markdown" => assert_eq!(String::from_utf8(bytes).unwrap(), format!("{answer}\n")),
            _ => {
                let h = String::from_utf8(bytes).unwrap();
                assert!(h.contains("<h1>Weekly notes</h1>"), "{h}");
                assert!(h.contains("<strong>release</strong>"), "{h}");
            }
        }
    }
}

#[test]
fn include_download_info_in_content_inlines_the_info() {
    let dir = tempfile::tempdir().unwrap();
    let evs = run(
        dir.path(),
        json!({"output_format": "txt", "filename": "a", "include_download_info_in_content": true}),
        "File: {DocGenerator:Doc@download}",
        "hello",
        Some(dir.path()),
    );
    let d = &downloads(&evs)[0];
    assert!(d.get("include_download_info_in_content").is_none(), "{d}");
    let content = evs.last().unwrap()["data"]["outputs"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let rest = content
        .strip_prefix("File:")
        .unwrap_or_else(|| panic!("{content:?}"));
    let inlined: Value = serde_json::from_str(rest).unwrap();
    assert_eq!(inlined["filename"], "a.txt");
    assert!(inlined.get("include_download_info_in_content").is_none());
}
