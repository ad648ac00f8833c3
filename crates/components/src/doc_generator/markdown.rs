//! Markdown → a flat list of styled blocks (what the PDF and DOCX writers lay out), and
//! the text formats (plain text, HTML) DocGenerator writes directly.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// How a piece of inline text looks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// `**bold**` (and headings, table headers).
    pub bold: bool,
    /// `*italic*`.
    pub italic: bool,
    /// `` `code` `` and code blocks: a monospaced font.
    pub code: bool,
}

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The text; a `\n` is a hard line break.
    pub text: String,
    /// Its style.
    pub style: Style,
}

/// What a block is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockKind {
    /// `#`…`######` (level 1–6).
    Heading(u8),
    /// A paragraph (also a table row, cells separated by ` | `).
    Paragraph,
    /// A list item's first paragraph, with its marker (`•`, `1.`).
    Item(String),
    /// A fenced or indented code block: lines kept as they are.
    Code,
    /// A horizontal rule.
    Rule,
}

/// One block of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What it is.
    pub kind: BlockKind,
    /// Nesting depth (lists, block quotes): each level indents.
    pub indent: usize,
    /// Its inline content.
    pub spans: Vec<Span>,
}

impl Block {
    /// The block's text without styles.
    pub fn text(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Parse markdown into blocks.
pub fn blocks(md: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut cur: Option<Block> = None;
    let (mut bold, mut italic) = (0usize, 0usize);
    let mut in_code = false;
    // Open lists: the next number of each ordered one, `None` for bullets.
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut quotes = 0usize;
    // A list item whose marker has not been given to a paragraph yet.
    let mut pending_marker: Option<String> = None;
    let mut in_table_head = false;
    let mut cell_index = 0usize;

    fn flush(out: &mut Vec<Block>, cur: &mut Option<Block>) {
        if let Some(mut b) = cur.take() {
            // Trailing hard breaks and spaces add nothing.
            while b.spans.last().is_some_and(|s| s.text.trim().is_empty()) {
                b.spans.pop();
            }
            if !b.spans.is_empty() || matches!(b.kind, BlockKind::Rule | BlockKind::Code) {
                out.push(b);
            }
        }
    }
    let depth = |lists: &Vec<Option<u64>>, quotes: usize| lists.len() + quotes;

    for ev in Parser::new_ext(md, options()) {
        match ev {
            Event::Start(tag) => match tag {
                Tag::Heading { level, .. } => {
                    flush(&mut out, &mut cur);
                    cur = Some(Block {
                        kind: BlockKind::Heading(heading_level(level)),
                        indent: 0,
                        spans: Vec::new(),
                    });
                }
                Tag::Paragraph => {
                    flush(&mut out, &mut cur);
                    let kind = match pending_marker.take() {
                        Some(m) => BlockKind::Item(m),
                        None => BlockKind::Paragraph,
                    };
                    cur = Some(Block {
                        kind,
                        indent: depth(&lists, quotes),
                        spans: Vec::new(),
                    });
                }
                Tag::CodeBlock(_) => {
                    flush(&mut out, &mut cur);
                    in_code = true;
                    cur = Some(Block {
                        kind: BlockKind::Code,
                        indent: depth(&lists, quotes),
                        spans: Vec::new(),
                    });
                }
                Tag::List(start) => {
                    flush(&mut out, &mut cur);
                    pending_marker = None;
                    lists.push(start);
                }
                Tag::Item => {
                    flush(&mut out, &mut cur);
                    let marker = match lists.last_mut() {
                        Some(Some(n)) => {
                            let m = format!("{n}.");
                            *n += 1;
                            m
                        }
                        _ => "•".to_string(),
                    };
                    // Tight list items have no paragraph: their text opens the item.
                    cur = Some(Block {
                        kind: BlockKind::Item(marker.clone()),
                        indent: lists.len() - 1 + quotes,
                        spans: Vec::new(),
                    });
                    pending_marker = Some(marker);
                }
                Tag::BlockQuote(_) => {
                    flush(&mut out, &mut cur);
                    quotes += 1;
                }
                Tag::Strong => bold += 1,
                Tag::Emphasis => italic += 1,
                Tag::TableHead => in_table_head = true,
                Tag::TableRow => {
                    flush(&mut out, &mut cur);
                    cell_index = 0;
                    cur = Some(Block {
                        kind: BlockKind::Paragraph,
                        indent: depth(&lists, quotes),
                        spans: Vec::new(),
                    });
                }
                Tag::TableCell => {
                    if in_table_head && cur.is_none() {
                        cur = Some(Block {
                            kind: BlockKind::Paragraph,
                            indent: depth(&lists, quotes),
                            spans: Vec::new(),
                        });
                    }
                    if cell_index > 0 {
                        push(&mut cur, " | ", Style::default());
                    }
                    cell_index += 1;
                }
                _ => {}
            },
            Event::End(tag) => match tag {
                TagEnd::Heading(_) | TagEnd::Paragraph | TagEnd::TableRow => {
                    flush(&mut out, &mut cur)
                }
                TagEnd::TableHead => {
                    flush(&mut out, &mut cur);
                    in_table_head = false;
                }
                TagEnd::CodeBlock => {
                    in_code = false;
                    if let Some(b) = cur.as_mut()
                        && let Some(last) = b.spans.last_mut()
                        && last.text.ends_with('\n')
                    {
                        last.text.pop();
                    }
                    flush(&mut out, &mut cur);
                }
                TagEnd::Item => {
                    flush(&mut out, &mut cur);
                    pending_marker = None;
                }
                TagEnd::List(_) => {
                    flush(&mut out, &mut cur);
                    lists.pop();
                }
                TagEnd::BlockQuote(_) => {
                    flush(&mut out, &mut cur);
                    quotes = quotes.saturating_sub(1);
                }
                TagEnd::Strong => bold = bold.saturating_sub(1),
                TagEnd::Emphasis => italic = italic.saturating_sub(1),
                _ => {}
            },
            Event::Text(t) => {
                let style = Style {
                    bold: bold > 0 || in_table_head,
                    italic: italic > 0,
                    code: in_code,
                };
                ensure(&mut cur, &mut pending_marker, depth(&lists, quotes));
                push(&mut cur, &t, style);
            }
            Event::Code(t) => {
                ensure(&mut cur, &mut pending_marker, depth(&lists, quotes));
                push(
                    &mut cur,
                    &t,
                    Style {
                        bold: bold > 0,
                        italic: italic > 0,
                        code: true,
                    },
                );
            }
            Event::InlineHtml(t) | Event::Html(t) => {
                // Raw HTML is shown as text, as in a plain-text rendering.
                ensure(&mut cur, &mut pending_marker, depth(&lists, quotes));
                push(&mut cur, t.trim_end_matches('\n'), Style::default());
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => {
                ensure(&mut cur, &mut pending_marker, depth(&lists, quotes));
                push(&mut cur, &t, Style::default());
            }
            Event::SoftBreak => push(&mut cur, " ", Style::default()),
            Event::HardBreak => push(&mut cur, "\n", Style::default()),
            Event::Rule => {
                flush(&mut out, &mut cur);
                out.push(Block {
                    kind: BlockKind::Rule,
                    indent: 0,
                    spans: Vec::new(),
                });
            }
            Event::TaskListMarker(done) => {
                ensure(&mut cur, &mut pending_marker, depth(&lists, quotes));
                push(
                    &mut cur,
                    if done { "[x] " } else { "[ ] " },
                    Style::default(),
                );
            }
            Event::FootnoteReference(t) => push(&mut cur, &format!("[{t}]"), Style::default()),
        }
    }
    flush(&mut out, &mut cur);
    out
}

/// Text outside any block (a tight list item's, a table cell's) opens one.
fn ensure(cur: &mut Option<Block>, pending: &mut Option<String>, indent: usize) {
    if cur.is_none() {
        let kind = match pending.take() {
            Some(m) => BlockKind::Item(m),
            None => BlockKind::Paragraph,
        };
        *cur = Some(Block {
            kind,
            indent,
            spans: Vec::new(),
        });
    } else if pending.is_some() {
        // The item block itself was opened at `Tag::Item`.
        *pending = None;
    }
}

fn push(cur: &mut Option<Block>, text: &str, style: Style) {
    let Some(b) = cur.as_mut() else { return };
    match b.spans.last_mut() {
        Some(last) if last.style == style => last.text.push_str(text),
        _ => b.spans.push(Span {
            text: text.to_string(),
            style,
        }),
    }
}

fn heading_level(l: HeadingLevel) -> u8 {
    match l {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Plain text (pandoc's `plain` writer, roughly): blocks separated by blank lines,
/// list items with their markers, code indented.
pub fn plain(md: &str) -> String {
    let mut out = String::new();
    let mut prev_item = false;
    for b in blocks(md) {
        let pad = "  ".repeat(b.indent);
        let is_item = matches!(b.kind, BlockKind::Item(_));
        if !out.is_empty() {
            out.push_str(if is_item && prev_item { "\n" } else { "\n\n" });
        }
        prev_item = is_item;
        match &b.kind {
            BlockKind::Heading(_) | BlockKind::Paragraph => {
                out.push_str(&indent_lines(&b.text(), &pad));
            }
            BlockKind::Item(m) => {
                let marker = if m == "•" { "-" } else { m.as_str() };
                let text = indent_lines(&b.text(), &format!("{pad}  "));
                out.push_str(&format!("{pad}{marker} {}", text.trim_start()));
            }
            BlockKind::Code => out.push_str(&indent_lines(&b.text(), &format!("{pad}    "))),
            BlockKind::Rule => out.push_str(&"-".repeat(72)),
        }
    }
    out.push('\n');
    out
}

fn indent_lines(text: &str, pad: &str) -> String {
    text.lines()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An HTML document: the markdown rendered, in a UTF-8 page titled `title`.
pub fn html(md: &str, title: &str) -> String {
    let mut body = String::new();
    pulldown_cmark::html::push_html(&mut body, Parser::new_ext(md, options()));
    let t = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_lists_code_and_styles_become_blocks() {
        let md = "# Title\n\nSome **bold** and *it* text.\n\n- one\n- two\n  1. sub\n\n```\nfn x() {}\n```\n\n---\n";
        let b = blocks(md);
        assert_eq!(b[0].kind, BlockKind::Heading(1));
        assert_eq!(b[0].text(), "Title");
        assert_eq!(b[1].kind, BlockKind::Paragraph);
        assert_eq!(b[1].text(), "Some bold and it text.");
        assert!(b[1].spans.iter().any(|s| s.text == "bold" && s.style.bold));
        assert!(b[1].spans.iter().any(|s| s.text == "it" && s.style.italic));
        assert_eq!(b[2].kind, BlockKind::Item("•".into()));
        assert_eq!(b[2].text(), "one");
        assert_eq!(b[3].text(), "two");
        assert_eq!(b[4].kind, BlockKind::Item("1.".into()));
        assert_eq!(b[4].indent, 1);
        assert_eq!(b[4].text(), "sub");
        assert_eq!(b[5].kind, BlockKind::Code);
        assert_eq!(b[5].text(), "fn x() {}");
        assert!(b[5].spans[0].style.code);
        assert_eq!(b[6].kind, BlockKind::Rule);
        assert_eq!(b.len(), 7);
    }

    #[test]
    fn tables_become_rows() {
        let b = blocks("| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].text(), "a | b");
        assert!(b[0].spans[0].style.bold);
        assert_eq!(b[1].text(), "1 | 2");
    }

    #[test]
    fn plain_text_keeps_structure_without_markup() {
        let t = plain("# 标题\n\nHello **world**.\n\n1. a\n2. b\n");
        assert_eq!(t, "标题\n\nHello world.\n\n1. a\n2. b\n");
    }

    #[test]
    fn html_is_a_utf8_page() {
        let h = html("# Hi <b>\n\n*x*", "a&b");
        assert!(h.contains("<meta charset=\"utf-8\">"));
        assert!(h.contains("<title>a&amp;b</title>"));
        assert!(h.contains("<h1>Hi <b></h1>"));
        assert!(h.contains("<em>x</em>"));
    }
}
