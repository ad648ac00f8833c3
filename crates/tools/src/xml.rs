//! A small XML reader for the APIs the web tools read (arXiv's Atom feed, NCBI's
//! E-utilities): elements, attributes, text and CDATA, the predefined and numeric
//! entities; declarations, comments, processing instructions and the DOCTYPE (with an
//! internal subset) are skipped. Names are kept as written; lookups compare local names
//! (the part after `:`), as those APIs use fixed prefixes. No DTD is read, no external
//! entity is resolved. Nesting is capped so a hostile answer cannot exhaust the stack.

/// Deepest element nesting accepted.
const MAX_DEPTH: usize = 512;

/// Why a document could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum XmlError {
    /// Not well-formed, at the given byte offset.
    #[error("not well-formed XML ({what}) at byte {at}")]
    Malformed {
        /// What is wrong.
        what: &'static str,
        /// Byte offset in the input.
        at: usize,
    },
    /// A closing tag does not match the open element.
    #[error("mismatched tag: </{found}> closes <{open}> at byte {at}")]
    Mismatched {
        /// The element that is open.
        open: String,
        /// The closing tag found.
        found: String,
        /// Byte offset in the input.
        at: usize,
    },
    /// Elements nested deeper than the cap.
    #[error("XML nested deeper than {MAX_DEPTH} elements")]
    TooDeep,
}

/// A node of the tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A child element.
    Element(Element),
    /// Text (entities decoded; CDATA included as text).
    Text(String),
}

/// An element with its attributes and children in document order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Element {
    /// The name as written (`arxiv:doi`).
    pub name: String,
    /// Attributes in order, values decoded.
    pub attrs: Vec<(String, String)>,
    /// Children in order.
    pub children: Vec<Node>,
}

/// The part of a name after its prefix.
fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, l)| l)
}

impl Element {
    /// Its name without prefix.
    pub fn local_name(&self) -> &str {
        local(&self.name)
    }

    /// An attribute's value (by local name).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| local(k) == local(name))
            .map(|(_, v)| v.as_str())
    }

    /// Child elements in order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|c| match c {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// Child elements named `name` (local name).
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.elements()
            .filter(move |e| e.local_name() == local(name))
    }

    /// The first child element named `name` (ElementTree's `find(name)`).
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.elements().find(|e| e.local_name() == local(name))
    }

    /// `find("a/b/c")`: the first match of a path of child names.
    pub fn find(&self, path: &str) -> Option<&Element> {
        let mut node = self;
        for step in path.split('/') {
            node = node.child(step)?;
        }
        Some(node)
    }

    /// ElementTree's `.text`: the text before the first child element.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.children {
            match c {
                Node::Text(t) => out.push_str(t),
                Node::Element(_) => break,
            }
        }
        out
    }

    /// All text inside, in document order (`itertext()` joined).
    pub fn all_text(&self) -> String {
        let mut out = String::new();
        self.collect_text(&mut out);
        out
    }

    fn collect_text(&self, out: &mut String) {
        for c in &self.children {
            match c {
                Node::Text(t) => out.push_str(t),
                Node::Element(e) => e.collect_text(out),
            }
        }
    }

    /// Descendant elements named `name`, in document order (`iter(name)` without
    /// the element itself).
    pub fn descendants<'a>(&'a self, name: &str, out: &mut Vec<&'a Element>) {
        for e in self.elements() {
            if e.local_name() == local(name) {
                out.push(e);
            }
            e.descendants(name, out);
        }
    }
}

/// Parse a document; the root element.
pub fn parse(input: &str) -> Result<Element, XmlError> {
    let b = input.as_bytes();
    let mut i = 0usize;
    // The open elements; the bottom one is a holder for the root.
    let mut stack: Vec<Element> = vec![Element::default()];
    let bad = |what: &'static str, at: usize| XmlError::Malformed { what, at };
    while i < b.len() {
        if b[i] != b'<' {
            let end = input[i..].find('<').map_or(b.len(), |n| i + n);
            let raw = &input[i..end];
            if stack.len() > 1 {
                push_text(&mut stack, &decode(raw));
            } else if !raw.trim().is_empty() {
                return Err(bad("text outside the root element", i));
            }
            i = end;
            continue;
        }
        let rest = &input[i..];
        if rest.starts_with("<!--") {
            let n = rest.find("-->").ok_or(bad("unclosed comment", i))?;
            i += n + 3;
        } else if rest.starts_with("<![CDATA[") {
            let n = rest.find("]]>").ok_or(bad("unclosed CDATA", i))?;
            if stack.len() == 1 {
                return Err(bad("CDATA outside the root element", i));
            }
            push_text(&mut stack, &rest[9..n]);
            i += n + 3;
        } else if rest.starts_with("<?") {
            let n = rest.find("?>").ok_or(bad("unclosed declaration", i))?;
            i += n + 2;
        } else if rest.starts_with("<!") {
            i += skip_declaration(rest).ok_or(bad("unclosed DOCTYPE", i))?;
        } else if rest.starts_with("</") {
            let n = rest.find('>').ok_or(bad("unclosed end tag", i))?;
            let name = rest[2..n].trim();
            if stack.len() == 1 {
                return Err(bad("end tag without an open element", i));
            }
            let Some(done) = stack.pop() else {
                return Err(bad("end tag without an open element", i));
            };
            if done.name != name {
                return Err(XmlError::Mismatched {
                    open: done.name,
                    found: name.to_string(),
                    at: i,
                });
            }
            attach(&mut stack, done, i)?;
            i += n + 1;
        } else {
            let (el, len, closed) = start_tag(rest).ok_or(bad("bad start tag", i))?;
            if stack.len() == 1 && !stack[0].children.is_empty() {
                return Err(bad("a second root element", i));
            }
            if closed {
                attach(&mut stack, el, i)?;
            } else {
                if stack.len() > MAX_DEPTH {
                    return Err(XmlError::TooDeep);
                }
                stack.push(el);
            }
            i += len;
        }
    }
    if stack.len() != 1 {
        return Err(bad("unclosed element at the end", b.len()));
    }
    let holder = stack.pop().unwrap_or_default();
    holder
        .children
        .into_iter()
        .find_map(|c| match c {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
        .ok_or(bad("no root element", 0))
}

/// Add a finished element to its parent.
fn attach(stack: &mut [Element], el: Element, at: usize) -> Result<(), XmlError> {
    let parent = stack.last_mut().ok_or(XmlError::Malformed {
        what: "end tag without an open element",
        at,
    })?;
    parent.children.push(Node::Element(el));
    Ok(())
}

/// Append text to the open element, merging with a preceding text node.
fn push_text(stack: &mut [Element], text: &str) {
    let Some(top) = stack.last_mut() else { return };
    if let Some(Node::Text(t)) = top.children.last_mut() {
        t.push_str(text);
    } else {
        top.children.push(Node::Text(text.to_string()));
    }
}

/// The length of a `<!…>` declaration, brackets of an internal subset included.
fn skip_declaration(rest: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (n, c) in rest.char_indices().skip(2) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => depth = depth.saturating_sub(1),
            (None, '>') if depth == 0 => return Some(n + 1),
            _ => {}
        }
    }
    None
}

/// A start tag at the beginning of `rest`: the element, the tag's length, and whether
/// it closes itself.
fn start_tag(rest: &str) -> Option<(Element, usize, bool)> {
    let b = rest.as_bytes();
    let mut i = 1;
    let name_end = rest[i..]
        .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
        .map(|n| i + n)?;
    let name = &rest[i..name_end];
    if name.is_empty() {
        return None;
    }
    let mut el = Element {
        name: name.to_string(),
        ..Element::default()
    };
    i = name_end;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        match b.get(i)? {
            b'>' => return Some((el, i + 1, false)),
            b'/' => return (b.get(i + 1)? == &b'>').then_some((el, i + 2, true)),
            _ => {}
        }
        let eq = rest[i..].find('=').map(|n| i + n)?;
        let key = rest[i..eq].trim();
        if key.is_empty() || key.contains(|c: char| c.is_whitespace() || c == '>') {
            return None;
        }
        i = eq + 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let q = *b.get(i)?;
        if q != b'"' && q != b'\'' {
            return None;
        }
        let close = rest[i + 1..].find(q as char).map(|n| i + 1 + n)?;
        el.attrs
            .push((key.to_string(), decode(&rest[i + 1..close])));
        i = close + 1;
    }
}

/// Decode the predefined and numeric entities; unknown ones are kept as written.
pub fn decode(raw: &str) -> String {
    if !raw.contains('&') {
        return raw.to_string();
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(n) = rest.find('&') {
        out.push_str(&rest[..n]);
        rest = &rest[n..];
        let Some(semi) = rest.find(';').filter(|&s| s <= 12) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let name = &rest[1..semi];
        let c = match name {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => {
                let num = if let Some(h) = name.strip_prefix("#x").or(name.strip_prefix("#X")) {
                    u32::from_str_radix(h, 16).ok()
                } else if let Some(d) = name.strip_prefix('#') {
                    d.parse().ok()
                } else {
                    None
                };
                num.and_then(char::from_u32)
            }
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_elements_text_attributes_and_entities() {
        let doc = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd" [ <!ENTITY x "y"> ]>
<!-- comment -->
<root a='1' b="x &amp; y">
  <t>Fish &amp; chips &#233;&#x41; &unknown; <![CDATA[<raw>]]></t>
  <ns:item ns:id="7"/>
  <m>head<sub>2</sub>tail</m>
</root>"#;
        let r = parse(doc).unwrap();
        assert_eq!(r.name, "root");
        assert_eq!(r.attr("b"), Some("x & y"));
        assert_eq!(
            r.child("t").unwrap().text(),
            "Fish & chips éA &unknown; <raw>"
        );
        assert_eq!(r.child("item").unwrap().attr("id"), Some("7"));
        assert_eq!(r.child("ns:item").unwrap().name, "ns:item");
        let m = r.child("m").unwrap();
        assert_eq!(m.text(), "head");
        assert_eq!(m.all_text(), "head2tail");
        let mut subs = Vec::new();
        r.descendants("sub", &mut subs);
        assert_eq!(subs.len(), 1);
        assert_eq!(r.find("m/sub").unwrap().text(), "2");
        assert!(r.find("m/nope").is_none());
    }

    #[test]
    fn malformed_documents_are_errors_not_panics() {
        for bad in [
            "",
            "text only",
            "<a>",
            "<a></b>",
            "<a><b></a>",
            "</a>",
            "<a x=1></a>",
            "<a x=\"1></a>",
            "<a></a><b></b>",
            "<a><!-- x</a>",
            "<a><![CDATA[x</a>",
            "<",
            "<>",
            "<a/",
            "<!DOCTYPE x [",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(
            parse(&"<a>".repeat(10_000)),
            Err(XmlError::TooDeep)
        ));
        assert!(matches!(parse("<a></b>"), Err(XmlError::Mismatched { .. })));
    }

    #[test]
    fn multibyte_text_is_kept() {
        let r = parse("<a>日本語 — ü<b k='é'/></a>").unwrap();
        assert_eq!(r.text(), "日本語 — ü");
        assert_eq!(r.child("b").unwrap().attr("k"), Some("é"));
    }
}
