//! Markdown blocks → a Word document with docx-rs: heading styles sized from the body
//! font size, lists, code, bold/italic runs, and RAGFlow's header and footer (footer
//! text, timestamp, page number field).

use docx_rs::{
    AlignmentType, Docx, Footer, Header, PageNum, Paragraph, Run, RunFonts, Shading,
    SpecialIndentType, Style, StyleType, Tab, TabValueType,
};

use super::markdown::{Block, BlockKind, Span};

/// What the DOCX writer needs besides the markdown.
#[derive(Debug, Clone, Default)]
pub struct DocxOptions {
    /// Body font size in points (headings 6, 4 and 2 points larger).
    pub font_size: usize,
    /// Header text.
    pub header: String,
    /// Footer text (left).
    pub footer: String,
    /// Timestamp text (footer centre), when wanted.
    pub timestamp: Option<String>,
    /// A `PAGE` field at the footer's right.
    pub page_numbers: bool,
}

/// Twentieths of a point per indent level, and the text width of a Letter page with
/// one-inch margins (Word's defaults).
const INDENT: i32 = 360;
const TEXT_WIDTH: usize = 9360;

fn mono() -> RunFonts {
    RunFonts::new()
        .ascii("Courier New")
        .hi_ansi("Courier New")
        .cs("Courier New")
}

fn run(s: &Span) -> Run {
    let mut r = Run::new().add_text(s.text.as_str());
    if s.style.bold {
        r = r.bold();
    }
    if s.style.italic {
        r = r.italic();
    }
    if s.style.code {
        r = r.fonts(mono());
    }
    r
}

/// Runs of a block; `\n` in a span is a line break.
fn runs(mut p: Paragraph, spans: &[Span]) -> Paragraph {
    for s in spans {
        for (i, part) in s.text.split('\n').enumerate() {
            if i > 0 {
                p = p.add_run(Run::new().add_break(docx_rs::BreakType::TextWrapping));
            }
            if !part.is_empty() {
                p = p.add_run(run(&Span {
                    text: part.to_string(),
                    style: s.style,
                }));
            }
        }
    }
    p
}

/// Build the document's bytes.
pub fn render(blocks: &[Block], opts: &DocxOptions) -> Result<Vec<u8>, String> {
    let fs = opts.font_size.max(1);
    let mut doc = Docx::new().default_size(fs * 2);
    for (id, name, size) in [
        ("Heading1", "Heading 1", fs + 6),
        ("Heading2", "Heading 2", fs + 4),
        ("Heading3", "Heading 3", fs + 2),
        ("Heading4", "Heading 4", fs),
        ("Heading5", "Heading 5", fs),
        ("Heading6", "Heading 6", fs),
    ] {
        let level = id[7..].parse::<usize>().unwrap_or(1) - 1;
        doc = doc.add_style(
            Style::new(id, StyleType::Paragraph)
                .name(name)
                .based_on("Normal")
                .next("Normal")
                .size(size * 2)
                .bold()
                .outline_lvl(level),
        );
    }
    for b in blocks {
        let left = INDENT * b.indent as i32;
        let p = match &b.kind {
            BlockKind::Heading(l) => runs(Paragraph::new().style(&format!("Heading{l}")), &b.spans),
            BlockKind::Paragraph => {
                let p = Paragraph::new();
                let p = if left > 0 {
                    p.indent(Some(left), None, None, None)
                } else {
                    p
                };
                runs(p, &b.spans)
            }
            BlockKind::Item(m) => {
                let p = Paragraph::new()
                    .indent(
                        Some(left + INDENT * 2),
                        Some(SpecialIndentType::Hanging(INDENT)),
                        None,
                        None,
                    )
                    .add_run(Run::new().add_text(m.as_str()).add_tab());
                runs(p, &b.spans)
            }
            BlockKind::Code => {
                let mut p = Paragraph::new();
                if left > 0 {
                    p = p.indent(Some(left), None, None, None);
                }
                let text = b.text();
                for (i, line) in text.split('\n').enumerate() {
                    let mut r = Run::new()
                        .fonts(mono())
                        .shading(Shading::new().fill("F2F2F2"));
                    if i > 0 {
                        r = r.add_break(docx_rs::BreakType::TextWrapping);
                    }
                    p = p.add_run(r.add_text(line));
                }
                p
            }
            BlockKind::Rule => Paragraph::new()
                .align(AlignmentType::Center)
                .add_run(Run::new().add_text("* * *")),
        };
        doc = doc.add_paragraph(p);
    }
    if !opts.header.is_empty() {
        doc = doc.header(
            Header::new()
                .add_paragraph(Paragraph::new().add_run(Run::new().add_text(&opts.header))),
        );
    }
    if !opts.footer.is_empty() || opts.timestamp.is_some() || opts.page_numbers {
        let mut p = Paragraph::new()
            .add_tab(Tab::new().val(TabValueType::Center).pos(TEXT_WIDTH / 2))
            .add_tab(Tab::new().val(TabValueType::Right).pos(TEXT_WIDTH));
        if !opts.footer.is_empty() {
            p = p.add_run(Run::new().add_text(&opts.footer));
        }
        if opts.timestamp.is_some() || opts.page_numbers {
            p = p.add_run(Run::new().add_tab());
        }
        if let Some(ts) = &opts.timestamp {
            p = p.add_run(Run::new().add_text(ts));
        }
        if opts.page_numbers {
            p = p.add_run(Run::new().add_tab()).add_page_num(PageNum::new());
        }
        doc = doc.footer(Footer::new().add_paragraph(p));
    }
    let mut out = std::io::Cursor::new(Vec::new());
    doc.build()
        .pack(&mut out)
        .map_err(|e| format!("cannot write the DOCX archive: {e}"))?;
    Ok(out.into_inner())
}
