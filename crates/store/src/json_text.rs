//! Whether a stored text is one JSON value, checked before it is handed on as part of an
//! event line: stored bytes carry no checksum, and a corrupt chunk must be an error, not
//! a broken line in a pipeline reading `--format jsonl`.
//!
//! A scan, not a parse: nothing is built, and nesting is counted on the heap, so no
//! depth is refused (the writer serialises whatever depth a run reached) and none
//! overflows the stack.

/// Whether `s` is exactly one JSON value (RFC 8259, white space around it allowed) that
/// JSON readers take: strings without lone surrogates, numbers within `f64`.
pub(crate) fn is_value(s: &[u8]) -> bool {
    scan(s).is_some()
}

fn scan(s: &[u8]) -> Option<()> {
    // The closing bracket of each open container, innermost last.
    let mut open: Vec<u8> = Vec::new();
    let mut i = ws(s, 0);
    'value: loop {
        // A value starts at `i`.
        match *s.get(i)? {
            b'{' => {
                i = ws(s, i + 1);
                if s.get(i) == Some(&b'}') {
                    i += 1;
                } else {
                    i = key(s, i)?;
                    open.push(b'}');
                    continue 'value;
                }
            }
            b'[' => {
                i = ws(s, i + 1);
                if s.get(i) == Some(&b']') {
                    i += 1;
                } else {
                    open.push(b']');
                    continue 'value;
                }
            }
            b'"' => i = string(s, i)?,
            b't' => i = word(s, i, b"true")?,
            b'f' => i = word(s, i, b"false")?,
            b'n' => i = word(s, i, b"null")?,
            _ => i = number(s, i)?,
        }
        // After a value: the next element, or the ends of containers.
        loop {
            i = ws(s, i);
            let Some(&close) = open.last() else {
                return (i == s.len()).then_some(());
            };
            match *s.get(i)? {
                b',' => {
                    i = ws(s, i + 1);
                    if close == b'}' {
                        i = key(s, i)?;
                    }
                    continue 'value;
                }
                c if c == close => {
                    open.pop();
                    i += 1;
                }
                _ => return None,
            }
        }
    }
}

/// Past white space.
fn ws(s: &[u8], mut i: usize) -> usize {
    while matches!(s.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Past an object key and its colon, to where its value starts.
fn key(s: &[u8], i: usize) -> Option<usize> {
    if s.get(i) != Some(&b'"') {
        return None;
    }
    let i = ws(s, string(s, i)?);
    (s.get(i) == Some(&b':')).then(|| ws(s, i + 1))
}

fn word(s: &[u8], i: usize, w: &[u8]) -> Option<usize> {
    (s.get(i..i + w.len())? == w).then_some(i + w.len())
}

/// Past a string starting at its opening quote.
fn string(s: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match *s.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => match *s.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let u = hex4(s, i + 2)?;
                    i += 6;
                    if (0xD800..0xDC00).contains(&u) {
                        // A high surrogate stands only before a low one.
                        if s.get(i..i + 2)? != b"\\u" {
                            return None;
                        }
                        if !(0xDC00..0xE000).contains(&hex4(s, i + 2)?) {
                            return None;
                        }
                        i += 6;
                    } else if (0xDC00..0xE000).contains(&u) {
                        return None;
                    }
                }
                _ => return None,
            },
            c if c < 0x20 => return None,
            _ => i += 1,
        }
    }
}

fn hex4(s: &[u8], i: usize) -> Option<u32> {
    let h = std::str::from_utf8(s.get(i..i + 4)?).ok()?;
    if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(h, 16).ok()
}

fn digits(s: &[u8], mut i: usize) -> usize {
    while s.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// Past a number.
fn number(s: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    if s.get(i) == Some(&b'-') {
        i += 1;
    }
    match *s.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(s, i),
        _ => return None,
    }
    if s.get(i) == Some(&b'.') {
        let end = digits(s, i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    let mut exponent = false;
    if matches!(s.get(i), Some(b'e' | b'E')) {
        exponent = true;
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(s, i);
        if end == i {
            return None;
        }
        i = end;
    }
    // Beyond f64 a reader has no value for it (serde_json refuses it); only an exponent
    // or 309 digits get there.
    if exponent || i - start > 308 {
        let f: f64 = std::str::from_utf8(&s[start..i]).ok()?.parse().ok()?;
        if !f.is_finite() {
            return None;
        }
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::is_value;

    #[test]
    fn json_values_pass() {
        for ok in [
            "0",
            "-0.5e-3",
            "1E+2",
            " true ",
            "null",
            "\"\"",
            r#""a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00é""#,
            "[]",
            "{}",
            "[1, [2, {\"a\": [null]}], \"x\"]",
            "{\"a\":1,\"b\":{\"c\":[]}}",
            "12345678901234567890123",
        ] {
            assert!(is_value(ok.as_bytes()), "{ok}");
            assert!(
                serde_json::from_str::<serde_json::Value>(ok).is_ok(),
                "{ok}"
            );
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(is_value(deep.as_bytes()));
    }

    #[test]
    fn anything_else_fails() {
        for bad in [
            "",
            " ",
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "+1",
            "1e400",
            "tru",
            "nul",
            "[1,]",
            "[,1]",
            "{\"a\"}",
            "{\"a\":}",
            "{a:1}",
            "{\"a\":1,}",
            "[1 2]",
            "[1]]",
            "[[1]",
            "{\"a\":1]",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\ud800\"",
            "\"\\ud800\\u0041\"",
            "\"\\udc00\"",
            "\"tab\tin\"",
            "\"open",
            "1 2",
            "{}x",
        ] {
            assert!(!is_value(bad.as_bytes()), "{bad:?}");
        }
    }
}
