//! RAGFlow's `HtmlParser` as Invoke's `clean_html` and the Crawler use it: a page
//! turned into sections of text.

use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;
use scraper::{ElementRef, Html, Node};

/// Block-level tags: each starts a new section (`html_parser.py`'s `BLOCK_TAGS`).
const BLOCK_TAGS: &[&str] = &[
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "div",
    "article",
    "section",
    "aside",
    "ul",
    "ol",
    "li",
    "table",
    "pre",
    "code",
    "blockquote",
    "figure",
    "figcaption",
];

/// Elements serialised without a closing tag.
const VOID_TAGS: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr",
];

/// Marks a `<br>` between text pieces until whitespace is folded.
const HARD_BREAK: char = '\u{0b}';

/// One text piece of the document, or a whole table.
struct Piece {
    content: String,
    /// The tag directly around the text.
    tag: String,
    /// The enclosing block element, numbered in document order.
    block: Option<usize>,
    /// `<br>`s just before the text.
    breaks: usize,
    table: bool,
}

fn title_mark(tag: &str) -> Option<&'static str> {
    Some(match tag {
        "h1" => "#",
        "h2" => "##",
        "h3" => "###",
        "h4" => "####",
        "h5" => "#####",
        "h6" => "######",
        _ => return None,
    })
}

/// RAGFlow's `HtmlParser()(None, html)` as Invoke uses it: the text of each block
/// element (headings marked `#`), whitespace folded, then each table's HTML. Scripts,
/// styles and comments are dropped. Walks with explicit stacks: page depth is
/// attacker-controlled.
pub fn html_sections(html: &str) -> Vec<String> {
    static HAS_BODY: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)<body[\s/>]").expect("static regex"));
    let doc = Html::parse_document(html);
    // BeautifulSoup walks `<body>` when the page has one, else the whole document.
    let body = HAS_BODY
        .is_match(html)
        .then(|| {
            doc.root_element()
                .children()
                .find(|c| matches!(c.value(), Node::Element(e) if e.name() == "body"))
        })
        .flatten();
    let (root, root_name) = match body {
        Some(b) => (b, "body"),
        None => (doc.tree.root(), "[document]"),
    };

    let mut pieces: Vec<Piece> = Vec::new();
    let mut blocks = 0usize;
    // Frames: (next child to visit, tag name, block, pending <br>s, pieces at entry).
    let mut stack = vec![(
        root.first_child(),
        root_name.to_string(),
        None,
        0usize,
        0usize,
    )];
    while let Some(top) = stack.last_mut() {
        let Some(child) = top.0 else {
            let Some(done) = stack.pop() else { break };
            if let Some(parent) = stack.last_mut() {
                if pieces.len() > done.4 {
                    parent.3 = 0;
                }
            }
            continue;
        };
        top.0 = child.next_sibling();
        match child.value() {
            Node::Text(t) if !t.trim().is_empty() => {
                pieces.push(Piece {
                    content: t.to_string(),
                    tag: top.1.clone(),
                    block: top.2,
                    breaks: top.3,
                    table: false,
                });
                top.3 = 0;
            }
            Node::Element(e) => {
                let name = e.name().to_ascii_lowercase();
                match name.as_str() {
                    "br" => top.3 += 1,
                    "script" | "style" => {}
                    "table" => {
                        pieces.push(Piece {
                            content: ElementRef::wrap(child).map(table_html).unwrap_or_default(),
                            tag: name,
                            block: None,
                            breaks: 0,
                            table: true,
                        });
                        top.3 = 0;
                    }
                    _ => {
                        let block = if BLOCK_TAGS.contains(&name.as_str()) {
                            blocks += 1;
                            Some(blocks)
                        } else {
                            top.2
                        };
                        let pending = top.3;
                        stack.push((child.first_child(), name, block, pending, pieces.len()));
                    }
                }
            }
            _ => {}
        }
    }
    merge_pieces(pieces)
}

/// `merge_block_text` + `chunk_block`: consecutive pieces of one block joined (a `<br>`
/// is a line break), blocks folded, then the tables.
fn merge_pieces(pieces: Vec<Piece>) -> Vec<String> {
    let mut sections = Vec::new();
    let mut tables = Vec::new();
    let mut current = String::new();
    let mut current_pre = false;
    let mut last_block: Option<usize> = None;
    let breaks = |n: usize| HARD_BREAK.to_string().repeat(n);
    for p in pieces {
        if p.table {
            tables.push(p.content);
            continue;
        }
        match p.block {
            Some(b) => {
                let content = match title_mark(&p.tag) {
                    Some(mark) => format!("{mark} {}", p.content),
                    None => p.content,
                };
                if last_block != Some(b) {
                    if !current.is_empty() {
                        sections.push(fold(&current, current_pre));
                    }
                    current = content;
                    current_pre = p.tag == "pre" || p.tag == "textarea";
                    last_block = Some(b);
                } else {
                    current.push_str(&breaks(p.breaks));
                    current.push_str(&content);
                }
            }
            None => {
                current.push_str(&breaks(p.breaks));
                current.push_str(&p.content);
            }
        }
    }
    if !current.is_empty() {
        sections.push(fold(&current, current_pre));
    }
    sections.extend(tables);
    sections
}

/// CSS whitespace folding per line (`_fold_block`); `<pre>` text kept as is.
fn fold(raw: &str, preserve: bool) -> String {
    if preserve {
        return raw.replace(HARD_BREAK, "\n");
    }
    raw.split(HARD_BREAK)
        .map(|line| {
            line.split([' ', '\t', '\r', '\n', '\u{0c}'])
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
                .trim()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A table's HTML as `html.unescape(str(table))` gives it: text unescaped, `style`
/// attributes, scripts, styles and comments removed.
fn table_html(table: ElementRef<'_>) -> String {
    let mut out = String::new();
    // (node, closing): a close marker is pushed before the children.
    let mut stack = vec![(*table, false)];
    while let Some((node, closing)) = stack.pop() {
        match node.value() {
            Node::Text(t) if !closing => out.push_str(t),
            Node::Element(e) => {
                let name = e.name();
                if closing {
                    let _ = write!(out, "</{name}>");
                    continue;
                }
                if name == "script" || name == "style" {
                    continue;
                }
                out.push('<');
                out.push_str(name);
                for (k, v) in e.attrs() {
                    if k != "style" {
                        let _ = write!(out, " {k}=\"{v}\"");
                    }
                }
                if VOID_TAGS.contains(&name) {
                    out.push_str("/>");
                    continue;
                }
                out.push('>');
                stack.push((node, true));
                let mut child = node.last_child();
                while let Some(c) = child {
                    stack.push((c, false));
                    child = c.prev_sibling();
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected texts below come from RAGFlow's html_parser (BeautifulSoup), run
    // outside this repository on the same documents.
    #[test]
    fn clean_html_keeps_block_text() {
        let page = "<html><head><title>T</title><style>p{color:red}</style></head><body>\
            <h1>Main  title</h1><p>First\n   paragraph <b>bold</b> end.</p>\
            <script>var x=1;</script><div>Line one<br>Line two<br><br><span>three</span></div>\
            <!-- hidden --><ul><li>a</li><li>b</li></ul></body></html>";
        assert_eq!(
            html_sections(page).join("\n"),
            "# Main title\nFirst paragraph bold end.\nLine one\nLine two\n\nthree\na\nb"
        );
        // Without <body> the whole document is read.
        assert_eq!(
            html_sections("<p>no body here</p><div>second</div>").join("\n"),
            "no body here\nsecond"
        );
        // Loose text joins the block before it; <pre> keeps its spaces.
        assert_eq!(
            html_sections(
                "<body>loose text<p>para</p>tail text<pre>  keep\n  spaces </pre></body>"
            )
            .join("\n"),
            "loose text\nparatail text\n  keep\n  spaces "
        );
        // Every heading piece is marked; tables come last, as HTML.
        assert_eq!(
            html_sections(
                "<body><h2>A<b>B</b>C</h2><table style=\"x\" class=\"t\"><tbody><tr><td>1 &amp; 2</td></tr></tbody></table><p>after</p></body>"
            )
            .join("\n"),
            "## AB## C\nafter\n<table class=\"t\"><tbody><tr><td>1 & 2</td></tr></tbody></table>"
        );
        assert_eq!(html_sections("plain text only"), ["plain text only"]);
        assert!(html_sections("").is_empty());
    }

    #[test]
    fn clean_html_survives_deep_nesting() {
        let deep = "<div>".repeat(5_000) + "bottom" + &"</div>".repeat(5_000);
        assert_eq!(html_sections(&deep), ["bottom"]);
        let table = "<table><tr><td>".repeat(2_000) + "x";
        assert_eq!(html_sections(&table).len(), 1);
    }
}
