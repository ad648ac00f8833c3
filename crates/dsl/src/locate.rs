//! Where JSON pointers' values start in the source text, as lines and columns, so
//! findings can point into the file the user edits; and the object keys a text repeats.
//!
//! A small scanner walks the text once (no DOM, no recursion), however many pointers are
//! asked for: it validates the whole document as JSON and remembers the start of each
//! value a pointer names. Duplicate object keys resolve like serde_json: the last one
//! wins.

use std::collections::HashMap;

/// A 1-based line and column (column counted in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    /// 1-based line; only `\n` breaks lines, so `\r\n` counts once.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// Where the value at `pointer` (RFC 6901, e.g.
/// `"/components/Switch:Route/obj/params/conditions/4/to/1"`) starts in JSON `text`, or
/// None when the text has no such value or is not JSON.
pub fn locate(text: &str, pointer: &str) -> Option<Position> {
    locate_all(text, &[pointer]).pop().flatten()
}

/// [`locate`] for many pointers in one pass over the text: a position per pointer, in
/// order (all None when the text is not JSON).
pub fn locate_all<S: AsRef<str>>(text: &str, pointers: &[S]) -> Vec<Option<Position>> {
    if pointers.is_empty() {
        return Vec::new();
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut trie = Trie {
        nodes: vec![TrieNode::default()],
    };
    let nodes: Vec<Option<usize>> = pointers
        .iter()
        .map(|p| parse_pointer(p.as_ref()).map(|segs| trie.insert(&segs)))
        .collect();
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        at: 0,
        trie: Some(&mut trie),
        repeats: None,
    };
    if scanner.scan().is_none() {
        return vec![None; pointers.len()];
    }
    let offsets: Vec<Option<usize>> = nodes
        .iter()
        .map(|n| n.and_then(|n| trie.nodes[n].found))
        .collect();
    positions(text, &offsets)
}

/// A key an object of the text repeats: the pointer of the member (whose value is the
/// last one's) and where the key is written before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeated {
    /// The member's JSON pointer (RFC 6901).
    pub pointer: String,
    /// Where the key is first written (that value is ignored).
    pub first: Position,
}

/// Every key an object of JSON `text` repeats, in text order (none when the text is not
/// JSON). JSON allows them; Python's `json` and serde_json keep the last value.
pub fn repeated_keys(text: &str) -> Vec<Repeated> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut found = Vec::new();
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        at: 0,
        trie: None,
        repeats: Some(&mut found),
    };
    if scanner.scan().is_none() {
        return Vec::new();
    }
    let offsets: Vec<Option<usize>> = found.iter().map(|(_, at)| Some(*at)).collect();
    found
        .into_iter()
        .zip(positions(text, &offsets))
        .filter_map(|((pointer, _), first)| {
            Some(Repeated {
                pointer,
                first: first?,
            })
        })
        .collect()
}

/// The unescaped segments of a pointer (`~1` → `/`, `~0` → `~`); None when malformed.
fn parse_pointer(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/')
        .map(|seg| {
            let mut out = String::with_capacity(seg.len());
            let mut chars = seg.chars();
            while let Some(c) = chars.next() {
                match c {
                    '~' => match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => return None,
                    },
                    c => out.push(c),
                }
            }
            Some(out)
        })
        .collect()
}

/// Whether a segment can name an array element (`0`, or digits without a leading zero).
fn array_index(segment: &str) -> bool {
    let digits = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
    digits && !(segment.len() > 1 && segment.starts_with('0'))
}

/// The 1-based line and character column of each byte offset, in one walk of the text.
fn positions(text: &str, offsets: &[Option<usize>]) -> Vec<Option<Position>> {
    let bytes = text.as_bytes();
    let mut order: Vec<(usize, usize)> = offsets
        .iter()
        .enumerate()
        .filter_map(|(i, o)| Some(((*o)?, i)))
        .collect();
    order.sort_unstable();
    let mut out = vec![None; offsets.len()];
    let (mut at, mut line, mut column) = (0, 1, 1);
    for (offset, i) in order {
        for &b in bytes.get(at..offset).unwrap_or_default() {
            if b == b'\n' {
                line += 1;
                column = 1;
            } else if b & 0xC0 != 0x80 {
                // Characters are counted by their first byte (UTF-8 continuation bytes
                // are 0b10xxxxxx).
                column += 1;
            }
        }
        at = at.max(offset);
        out[i] = Some(Position { line, column });
    }
    out
}

/// The pointers asked for, as a tree of segments from the root (node 0): what the
/// scanner follows.
struct Trie {
    nodes: Vec<TrieNode>,
}

#[derive(Default)]
struct TrieNode {
    children: HashMap<String, usize>,
    /// Where the value of this node's pointer starts (the last one, for repeated keys).
    found: Option<usize>,
}

impl Trie {
    /// The node of a pointer's segments (added as needed).
    fn insert(&mut self, segments: &[String]) -> usize {
        let mut at = 0;
        for seg in segments {
            at = match self.nodes[at].children.get(seg) {
                Some(&n) => n,
                None => {
                    let n = self.nodes.len();
                    self.nodes.push(TrieNode::default());
                    self.nodes[at].children.insert(seg.clone(), n);
                    n
                }
            };
        }
        at
    }

    /// Forget what was found under `node` (a later repeated key replaces it).
    fn forget(&mut self, node: usize) {
        let mut todo = vec![node];
        while let Some(n) = todo.pop() {
            self.nodes[n].found = None;
            todo.extend(self.nodes[n].children.values().copied());
        }
    }
}

/// An open object or array.
struct Frame {
    /// `true` for an object, `false` for an array.
    object: bool,
    /// The trie node of the container, when a pointer goes through it.
    node: Option<usize>,
    /// The index of the current array element.
    index: usize,
    /// The keys read so far, with where each was first written (only when looking for
    /// repeated keys).
    keys: HashMap<String, usize>,
    /// The segment naming the current member or element (only when looking for
    /// repeated keys, to build pointers).
    segment: String,
}

/// One pass over the text.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The pointers to find, if any.
    trie: Option<&'a mut Trie>,
    /// Repeated keys found (pointer, byte offset of the first key), when looking for
    /// them.
    repeats: Option<&'a mut Vec<(String, usize)>>,
}

impl Scanner<'_> {
    /// Validate the document, recording what was asked for; None when it is not JSON.
    fn scan(&mut self) -> Option<()> {
        let mut stack: Vec<Frame> = Vec::new();
        // The trie node of the value about to be read.
        let mut live = Some(0).filter(|_| self.trie.is_some());
        loop {
            // A value starts here.
            self.skip_ws();
            if let (Some(n), Some(trie)) = (live, self.trie.as_deref_mut()) {
                trie.nodes[n].found = Some(self.at);
            }
            match self.peek()? {
                b'{' => {
                    self.at += 1;
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.at += 1;
                    } else {
                        stack.push(self.frame(true, live));
                        live = self.member(&mut stack)?;
                        continue;
                    }
                }
                b'[' => {
                    self.at += 1;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.at += 1;
                    } else {
                        stack.push(self.frame(false, live));
                        live = self.element(&mut stack);
                        continue;
                    }
                }
                b'"' => self.skip_string()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return None,
            }
            // A value ended: close containers until the next value starts.
            loop {
                self.skip_ws();
                let Some(top) = stack.last_mut() else {
                    return (self.at == self.bytes.len()).then_some(());
                };
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        if top.object {
                            live = self.member(&mut stack)?;
                        } else {
                            top.index += 1;
                            live = self.element(&mut stack);
                        }
                        break;
                    }
                    b'}' if top.object => {
                        self.at += 1;
                        stack.pop();
                    }
                    b']' if !top.object => {
                        self.at += 1;
                        stack.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    /// A container opening with the trie node `node`.
    fn frame(&self, object: bool, node: Option<usize>) -> Frame {
        Frame {
            object,
            node,
            index: 0,
            keys: HashMap::new(),
            segment: String::new(),
        }
    }

    /// Read `"key" :` of the member of the innermost object; the trie node of its value.
    /// A later repeated key forgets what the earlier one found (the last key wins).
    fn member(&mut self, stack: &mut [Frame]) -> Option<Option<usize>> {
        self.skip_ws();
        let key_at = self.at;
        let frame = stack.last_mut()?;
        let parent = frame.node.filter(|&n| {
            self.trie
                .as_ref()
                .is_some_and(|t| !t.nodes[n].children.is_empty())
        });
        let child = if parent.is_some() || self.repeats.is_some() {
            let key = self.string()?;
            let child = match (parent, self.trie.as_deref_mut()) {
                (Some(n), Some(trie)) => {
                    let child = trie.nodes[n].children.get(&key).copied();
                    if let Some(c) = child {
                        trie.forget(c);
                    }
                    child
                }
                _ => None,
            };
            if self.repeats.is_some() {
                if let Some(&first) = frame.keys.get(&key) {
                    let pointer = pointer_of(stack, &key);
                    if let Some(r) = self.repeats.as_deref_mut() {
                        r.push((pointer, first));
                    }
                } else {
                    frame.keys.insert(key.clone(), key_at);
                }
                if let Some(top) = stack.last_mut() {
                    top.segment = key;
                }
            }
            child
        } else {
            self.skip_string()?;
            None
        };
        self.skip_ws();
        self.eat(b':')?;
        Some(child)
    }

    /// The trie node of the current element of the innermost array.
    fn element(&mut self, stack: &mut [Frame]) -> Option<usize> {
        let frame = stack.last_mut()?;
        if self.repeats.is_some() {
            frame.segment = frame.index.to_string();
        }
        let trie = self.trie.as_deref()?;
        let children = &trie.nodes[frame.node?].children;
        if children.is_empty() {
            return None;
        }
        let index = frame.index.to_string();
        children
            .get(&index)
            .copied()
            .filter(|_| array_index(&index))
    }
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.at += 1)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            (self.digits() > 0).then_some(())?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            (self.digits() > 0).then_some(())?;
        }
        Some(())
    }

    /// Skip a string, checking its escapes.
    fn skip_string(&mut self) -> Option<()> {
        self.read_string(None)
    }

    /// Read and decode a string.
    fn string(&mut self) -> Option<String> {
        let mut out = Vec::new();
        self.read_string(Some(&mut out))?;
        String::from_utf8(out).ok()
    }

    /// Read a string at the cursor, decoding it into `out` when given.
    fn read_string(&mut self, mut out: Option<&mut Vec<u8>>) -> Option<()> {
        self.eat(b'"')?;
        loop {
            let b = self.peek()?;
            self.at += 1;
            match b {
                b'"' => return Some(()),
                0x00..=0x1F => return None,
                b'\\' => {
                    let e = self.peek()?;
                    self.at += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return None,
                    };
                    if let Some(out) = out.as_deref_mut() {
                        let mut buf = [0; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
                b => {
                    if let Some(out) = out.as_deref_mut() {
                        out.push(b);
                    }
                }
            }
        }
    }

    /// The character of `\uXXXX` (the `\u` already read), with surrogate pairs.
    fn unicode_escape(&mut self) -> Option<char> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) {
            self.literal(b"\\u")?;
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return None;
            }
            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
        } else {
            char::from_u32(hi)
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        let s = std::str::from_utf8(digits).ok()?;
        if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(s, 16).ok()
    }
}

/// The pointer of member `key` of the innermost object of `stack`.
fn pointer_of(stack: &[Frame], key: &str) -> String {
    let esc = |s: &str| s.replace('~', "~0").replace('/', "~1");
    let mut p = String::new();
    // Each open container's current segment leads to the next container.
    for f in &stack[..stack.len().saturating_sub(1)] {
        p.push('/');
        p.push_str(&esc(&f.segment));
    }
    p.push('/');
    p.push_str(&esc(key));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: usize, column: usize) -> Option<Position> {
        Some(Position { line, column })
    }

    const DOC: &str = r#"{
  "components": {
    "Switch:Route": {
      "obj": {"params": {"conditions": [
        {"to": ["a", "b"]},
        {"to": ["c",
                "d"]}
      ]}},
      "downstream": []
    }
  },
  "n": -1.5e3, "t": true, "z": null
}"#;

    #[test]
    fn nested_objects_and_arrays() {
        let p = "/components/Switch:Route/obj/params/conditions";
        assert_eq!(locate(DOC, p), at(4, 40));
        assert_eq!(locate(DOC, &format!("{p}/0")), at(5, 9));
        assert_eq!(locate(DOC, &format!("{p}/0/to/1")), at(5, 22));
        assert_eq!(locate(DOC, &format!("{p}/1/to/1")), at(7, 17));
        assert_eq!(
            locate(DOC, "/components/Switch:Route/downstream"),
            at(9, 21)
        );
        assert_eq!(locate(DOC, "/n"), at(12, 8));
        assert_eq!(locate(DOC, "/t"), at(12, 21));
        assert_eq!(locate(DOC, "/z"), at(12, 32));
    }

    #[test]
    fn root_pointer() {
        assert_eq!(locate(DOC, ""), at(1, 1));
        assert_eq!(locate("\u{feff}  \n  [1]", ""), at(2, 3));
        assert_eq!(locate(" 7 ", ""), at(1, 2));
    }

    #[test]
    fn bom_is_not_a_column() {
        assert_eq!(locate("\u{feff}{\"a\": 1}", "/a"), at(1, 7));
    }

    #[test]
    fn escaped_keys_and_pointer_segments() {
        let doc =
            r#"{"a\/b": 1, "c~d": 2, "\u4e0a\u6d77": 3, "q\"\\": 4, "": 5, "\ud83d\ude00": 6}"#;
        assert_eq!(locate(doc, "/a~1b"), at(1, 10));
        assert_eq!(locate(doc, "/c~0d"), at(1, 20));
        assert_eq!(locate(doc, "/上海"), at(1, 39));
        assert_eq!(locate(doc, "/q\"\\"), at(1, 51));
        assert_eq!(locate(doc, "/"), at(1, 58));
        assert_eq!(locate(doc, "/😀"), at(1, 77));
        assert_eq!(locate(doc, "/c~2d"), None);
        assert_eq!(locate(doc, "a"), None);
    }

    #[test]
    fn columns_count_characters() {
        let doc = "{\"名字\": \"上海\", \"x\": [\"é\", 2]}";
        assert_eq!(locate(doc, "/名字"), at(1, 8));
        assert_eq!(locate(doc, "/x/1"), at(1, 25));
    }

    #[test]
    fn crlf_counts_one_line_break() {
        let doc = "{\r\n  \"a\": {\r\n    \"b\": [1,\r\n 2]\r\n  }\r\n}\r\n";
        assert_eq!(locate(doc, "/a"), at(2, 8));
        assert_eq!(locate(doc, "/a/b/0"), at(3, 11));
        assert_eq!(locate(doc, "/a/b/1"), at(4, 2));
    }

    #[test]
    fn duplicate_keys_last_wins() {
        assert_eq!(locate(r#"{"a": 1, "a": 2}"#, "/a"), at(1, 15));
        assert_eq!(locate(r#"{"a": {"b": 1}, "a": {"c": 2}}"#, "/a/b"), None);
        assert_eq!(
            locate(r#"{"a": {"b": 1}, "a": {"c": 2}}"#, "/a/c"),
            at(1, 28)
        );
        assert_eq!(locate(r#"{"a": {"b": 1, "b": [2]}}"#, "/a/b/0"), at(1, 22));
    }

    #[test]
    fn many_pointers_in_one_pass_agree_with_one_at_a_time() {
        let p = "/components/Switch:Route/obj/params/conditions";
        let asked = [
            format!("{p}/1/to/1"),
            "/n".to_owned(),
            "/nope".to_owned(),
            format!("{p}/0"),
            "bad".to_owned(),
            format!("{p}/0"),
            String::new(),
        ];
        let one_by_one: Vec<_> = asked.iter().map(|q| locate(DOC, q)).collect();
        assert_eq!(locate_all(DOC, &asked), one_by_one);
        assert_eq!(one_by_one[0], at(7, 17));
        assert_eq!(locate_all(DOC, &[] as &[&str]), []);
        assert_eq!(locate_all("{", &["", "/a"]), [None, None]);
    }

    #[test]
    fn repeated_keys_with_their_pointers() {
        let doc = "{\"a\": {\"b\": 1, \"b\": 2},\n \"c\": [{\"x/y\": 1, \"x/y\": 2}], \"a\": 3}";
        let found: Vec<(String, Position)> = repeated_keys(doc)
            .into_iter()
            .map(|r| (r.pointer, r.first))
            .collect();
        assert_eq!(
            found,
            [
                ("/a/b".to_owned(), Position { line: 1, column: 8 }),
                ("/c/0/x~1y".to_owned(), Position { line: 2, column: 9 }),
                ("/a".to_owned(), Position { line: 1, column: 2 }),
            ]
        );
        assert_eq!(repeated_keys(r#"{"a": 1, "b": {"a": 2}}"#), []);
        assert_eq!(repeated_keys(r#"{"a": 1, "a": "#), []);
    }

    #[test]
    fn missing_paths() {
        for p in [
            "/nope",
            "/components/Switch:Route/obj/params/conditions/2",
            "/components/Switch:Route/obj/params/conditions/-",
            "/components/Switch:Route/obj/params/conditions/01",
            "/components/Switch:Route/obj/params/conditions/x",
            "/n/0",
            "/t/x",
            "/components/Switch:Route/downstream/0",
        ] {
            assert_eq!(locate(DOC, p), None, "{p}");
        }
    }

    #[test]
    fn garbage_is_none() {
        for text in [
            "",
            "   ",
            "nope",
            "{",
            "{\"a\": 1",
            "{\"a\": 1,}",
            "[1,]",
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\": 1}}",
            "{\"a\": 1} x",
            "{\"a\": \"\\x\"}",
            "{\"a\": \"\\u12\"}",
            "{\"a\": \"\\ud800\"}",
            "{\"a\": \"tab\tin string\"}",
            "{\"a\": 01}",
            "{\"a\": 1.}",
            "{\"a\": -}",
            "{\"a\": 1e}",
            "{\"a\": tru}",
            "{\"a\": [}",
            "[}",
            "{]",
            "{\"a\": 1]",
            "\"unterminated",
        ] {
            assert_eq!(locate(text, ""), None, "{text:?}");
            assert_eq!(locate(text, "/a"), None, "{text:?}");
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        assert_eq!(locate(&deep, "/0/0"), at(1, 3));
        assert_eq!(locate(&"[".repeat(200_000), ""), None);
    }

    /// The byte offset of a position (the inverse of `position`).
    fn offset(text: &str, pos: Position) -> usize {
        let line_start: usize = text
            .split_inclusive('\n')
            .take(pos.line - 1)
            .map(str::len)
            .sum();
        let rest = text.get(line_start..).unwrap_or_default();
        line_start
            + rest
                .char_indices()
                .nth(pos.column - 1)
                .map_or(rest.len(), |(i, _)| i)
    }

    /// Every value of `v` with its pointer.
    fn walk(v: &serde_json::Value, pointer: String, out: &mut Vec<(String, serde_json::Value)>) {
        out.push((pointer.clone(), v.clone()));
        match v {
            serde_json::Value::Object(m) => {
                for (k, child) in m {
                    let seg = k.replace('~', "~0").replace('/', "~1");
                    walk(child, format!("{pointer}/{seg}"), out);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    walk(child, format!("{pointer}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    /// The values of `text` (at most about 400, evenly spread) are found where
    /// serde_json reads the same value.
    fn agrees_with_serde_json(name: &str, text: &str) {
        let body = text.strip_prefix('\u{feff}').unwrap_or(text);
        let value: serde_json::Value = match serde_json::from_str(body) {
            Ok(v) => v,
            Err(e) => panic!("{name}: {e}"),
        };
        let mut all = Vec::new();
        walk(&value, String::new(), &mut all);
        let step = all.len().div_ceil(400);
        for (pointer, want) in all.into_iter().step_by(step) {
            let Some(pos) = locate(text, &pointer) else {
                panic!("{name}: {pointer:?} not found");
            };
            let rest = body.get(offset(body, pos)..).unwrap_or_default();
            let got = serde_json::Deserializer::from_str(rest)
                .into_iter::<serde_json::Value>()
                .next();
            match got {
                Some(Ok(got)) => assert_eq!(got, want, "{name}: {pointer:?} at {pos:?}"),
                other => panic!("{name}: {pointer:?} at {pos:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn agrees_with_serde_json_on_real_canvases() {
        agrees_with_serde_json("hello.json", include_str!("../../../canvases/hello.json"));
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/fixtures/ragflow"
        );
        let files = ["go-testdata/all.json", "go-testdata/switch.json"];
        for f in files {
            let path = format!("{dir}/{f}");
            match std::fs::read_to_string(&path) {
                Ok(text) => agrees_with_serde_json(f, &text),
                Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("{path}: {e}"),
                Err(e) => eprintln!("skipping: {path}: {e}"),
            }
        }
        let crlf = include_str!("../../../canvases/hello.json").replace('\n', "\r\n");
        agrees_with_serde_json("hello.json (CRLF, BOM)", &format!("\u{feff}{crlf}"));
    }
}
