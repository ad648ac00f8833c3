//! Where a JSON pointer's value starts in the source text, as a line and column, so
//! findings can point into the file the user edits.
//!
//! A small scanner walks the text once (no DOM, no recursion): it validates the whole
//! document as JSON and remembers the start of the value the pointer names. Duplicate
//! object keys resolve like serde_json: the last one wins.

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
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let segments = parse_pointer(pointer)?;
    let offset = Scanner {
        bytes: text.as_bytes(),
        at: 0,
        segments: &segments,
    }
    .find()?;
    Some(position(text, offset))
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

/// The array index a segment names (`0` or digits without a leading zero).
fn array_index(segment: &str) -> Option<usize> {
    let digits = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
    if !digits || (segment.len() > 1 && segment.starts_with('0')) {
        return None;
    }
    segment.parse().ok()
}

/// The 1-based line and character column of a byte offset.
fn position(text: &str, offset: usize) -> Position {
    let before = text.as_bytes().get(..offset).unwrap_or_default();
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    // Count characters by their first byte (UTF-8 continuation bytes are 0b10xxxxxx).
    let column = 1 + before
        .get(line_start..)
        .unwrap_or_default()
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count();
    Position { line, column }
}

/// An open object or array.
struct Frame {
    /// `true` for an object, `false` for an array.
    object: bool,
    /// The container is on the pointer's path.
    live: bool,
    /// The index of the current array element.
    index: usize,
}

/// One pass over the text.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
    segments: &'a [String],
}

impl Scanner<'_> {
    /// Validate the document; the byte offset of the pointed value, if any.
    fn find(mut self) -> Option<usize> {
        let mut found = None;
        let mut stack: Vec<Frame> = Vec::new();
        // Whether the value about to be read is on the pointer's path.
        let mut live = true;
        loop {
            // A value starts here.
            self.skip_ws();
            let depth = stack.len();
            if live && depth == self.segments.len() {
                found = Some(self.at);
            }
            let child_live = live && depth < self.segments.len();
            match self.peek()? {
                b'{' => {
                    self.at += 1;
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.at += 1;
                    } else {
                        stack.push(Frame {
                            object: true,
                            live: child_live,
                            index: 0,
                        });
                        live = self.member(&stack, &mut found)?;
                        continue;
                    }
                }
                b'[' => {
                    self.at += 1;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.at += 1;
                    } else {
                        stack.push(Frame {
                            object: false,
                            live: child_live,
                            index: 0,
                        });
                        live = child_live && self.index_matches(depth, 0);
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
                    return (self.at == self.bytes.len()).then_some(found).flatten();
                };
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        if top.object {
                            live = self.member(&stack, &mut found)?;
                        } else {
                            top.index += 1;
                            let (frame_live, index) = (top.live, top.index);
                            live = frame_live && self.index_matches(stack.len() - 1, index);
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

    /// Read `"key" :` of the member of the innermost object; whether its value is on
    /// the pointer's path. A later duplicate of a live key discards what an earlier
    /// one found (the last key wins).
    fn member(&mut self, stack: &[Frame], found: &mut Option<usize>) -> Option<bool> {
        self.skip_ws();
        let frame = stack.last()?;
        let live = if frame.live {
            let key = self.string()?;
            let depth = stack.len() - 1;
            self.segments.get(depth) == Some(&key)
        } else {
            self.skip_string()?;
            false
        };
        self.skip_ws();
        self.eat(b':')?;
        if live {
            *found = None;
        }
        Some(live)
    }

    /// Whether the pointer's segment at `depth` names array element `index`.
    fn index_matches(&self, depth: usize, index: usize) -> bool {
        self.segments
            .get(depth)
            .and_then(|s| array_index(s))
            .is_some_and(|i| i == index)
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
