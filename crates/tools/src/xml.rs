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

/// Parse a document; the root element. The tokenizer is quick-xml's; this builds the
/// tree without recursion and keeps unknown entities as written, as ElementTree's
/// callers here expect.
pub fn parse(input: &str) -> Result<Element, XmlError> {
    use quick_xml::events::Event;

    let mut reader = quick_xml::Reader::from_str(input);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let at = usize::try_from(reader.buffer_position()).unwrap_or(usize::MAX);
        let event = reader.read_event().map_err(|e| quick_error(e, at))?;
        match event {
            Event::Start(s) | Event::Empty(s) if root.is_some() => {
                let _ = s;
                return Err(XmlError::Malformed {
                    what: "content after the root element",
                    at,
                });
            }
            Event::Start(s) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(XmlError::TooDeep);
                }
                stack.push(element(&s, at)?);
            }
            Event::Empty(s) => close(element(&s, at)?, &mut stack, &mut root),
            Event::End(_) => match stack.pop() {
                Some(e) => close(e, &mut stack, &mut root),
                None => {
                    return Err(XmlError::Malformed {
                        what: "closing tag without an open element",
                        at,
                    });
                }
            },
            Event::Text(t) => text(&mut stack, &t.into_inner(), at)?,
            Event::CData(c) => text(&mut stack, &c.into_inner(), at)?,
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c.to_string()),
                    _ => quick_xml::escape::resolve_predefined_entity(&r).map(str::to_string),
                };
                let written = format!("&{};", &*r);
                text(&mut stack, resolved.as_deref().unwrap_or(&written), at)?;
            }
            Event::Decl(_) | Event::Comment(_) | Event::PI(_) | Event::DocType(_) => {}
            Event::Eof => break,
        }
    }
    match (root, stack.is_empty()) {
        (Some(r), true) => Ok(r),
        (_, false) => Err(XmlError::Malformed {
            what: "unclosed element",
            at: input.len(),
        }),
        (None, true) => Err(XmlError::Malformed {
            what: "no root element",
            at: input.len(),
        }),
    }
}

/// An element from its start tag, attribute values decoded.
fn element(s: &quick_xml::events::BytesStart<'_>, at: usize) -> Result<Element, XmlError> {
    let mut attrs = Vec::new();
    for a in s.attributes() {
        let a = a.map_err(|_| XmlError::Malformed {
            what: "bad attribute",
            at,
        })?;
        attrs.push((a.key.as_ref().to_string(), decode(&a.value)));
    }
    Ok(Element {
        name: s.name().as_ref().to_string(),
        attrs,
        children: Vec::new(),
    })
}

/// A finished element becomes a child of the open one, or the root.
fn close(e: Element, stack: &mut [Element], root: &mut Option<Element>) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Element(e)),
        None => *root = Some(e),
    }
}

/// Text inside the open element (adjacent pieces merged); only whitespace may stand
/// outside the root.
fn text(stack: &mut [Element], t: &str, at: usize) -> Result<(), XmlError> {
    let Some(open) = stack.last_mut() else {
        if t.trim().is_empty() {
            return Ok(());
        }
        return Err(XmlError::Malformed {
            what: "text outside the root element",
            at,
        });
    };
    match open.children.last_mut() {
        Some(Node::Text(prev)) => prev.push_str(t),
        _ => open.children.push(Node::Text(t.to_string())),
    }
    Ok(())
}

/// quick-xml's error as ours.
fn quick_error(e: quick_xml::Error, at: usize) -> XmlError {
    use quick_xml::errors::{Error, IllFormedError};
    match e {
        Error::IllFormed(IllFormedError::MismatchedEndTag { expected, found }) => {
            XmlError::Mismatched {
                open: expected,
                found,
                at,
            }
        }
        Error::IllFormed(IllFormedError::UnmatchedEndTag(_)) => XmlError::Malformed {
            what: "closing tag without an open element",
            at,
        },
        Error::Syntax(_) => XmlError::Malformed {
            what: "syntax error",
            at,
        },
        _ => XmlError::Malformed {
            what: "ill-formed document",
            at,
        },
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
