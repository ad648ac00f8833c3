//! Large values kept once. A JSON string of at least [`MIN_LEN`] bytes in a stored event
//! chunk or checkpoint is cut out of it and kept in `blobs`, keyed by the SHA-256 of its
//! JSON text; the chunk or checkpoint keeps where it was cut and the key (its `cuts`
//! column). A 10 MB input that every node's events and every checkpoint repeat is then
//! stored once, however many times it appears, in however many runs.
//!
//! The cut is made on the serialised text, not on values: serde writes a given string
//! the same way wherever it appears, so equal values share a key, and reading back is a
//! splice of bytes (the stored stream replays byte for byte). A run's references to its
//! blobs are rows of `blob_refs`, deleted with the run; the last reference to a blob
//! deletes it (a trigger).

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::{Result, StoreError};

/// Strings shorter than this (in JSON text, quotes included) stay where they are.
pub(crate) const MIN_LEN: usize = 16 * 1024;

/// A value cut out of a text: where it goes back (a byte offset into the text left),
/// and the key of its blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Byte offset into the text left after cutting.
    pub at: usize,
    /// Hex SHA-256 of the value's JSON text.
    pub hash: String,
}

/// A text with its large strings cut out.
#[derive(Debug)]
pub(crate) struct Split<'a> {
    /// What is left.
    pub text: String,
    /// Where each value was, in order.
    pub cuts: Vec<Cut>,
    /// The values cut out (JSON string tokens, quotes included), in the order of `cuts`.
    pub values: Vec<&'a str>,
}

impl Split<'_> {
    /// The `cuts` column: `[[at, "hash"], ...]`.
    pub fn cuts_json(&self) -> String {
        let list: Vec<(usize, &str)> = self.cuts.iter().map(|c| (c.at, c.hash.as_str())).collect();
        // A list of numbers and hex strings always serialises.
        serde_json::to_string(&list).unwrap_or_default()
    }
}

/// The width of the windows [`may_hold_long_token`] looks into: a token of [`MIN_LEN`]
/// bytes or more holds a whole window that starts at a multiple of it.
const WINDOW: usize = 8000;

/// The windows (their starts) that may lie inside a string token of [`MIN_LEN`] bytes
/// or more: those without an unescaped quote. A token that long holds a whole window
/// that starts at a multiple of [`WINDOW`], so every such token holds one of them.
/// A quick look (most windows have a quote in their first bytes).
fn quoteless_windows(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    (0..bytes.len() / WINDOW).map(|k| k * WINDOW).filter(|&p| {
        let window = &bytes[p..p + WINDOW];
        !memchr::memchr_iter(b'"', window).any(|q| {
            let at = p + q;
            let backslashes = bytes[..at]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\\')
                .count();
            backslashes % 2 == 0
        })
    })
}

/// False when `bytes` surely holds no string token of [`MIN_LEN`] bytes or more (see
/// [`quoteless_windows`]).
#[cfg(test)]
fn may_hold_long_token(bytes: &[u8]) -> bool {
    quoteless_windows(bytes).next().is_some()
}

/// Push the string tokens of `line` (start and end, offsets into the text: the line
/// starts at `base`) of at least [`MIN_LEN`] bytes to `tokens`.
fn long_tokens_of_line(line: &[u8], base: usize, tokens: &mut Vec<(usize, usize)>) {
    let mut i = 0;
    while let Some(q) = memchr::memchr(b'"', &line[i..]) {
        // A string token: to the next quote not escaped (or the end of a cut-off line).
        let start = i + q;
        i = start + 1;
        let end = loop {
            match memchr::memchr2(b'"', b'\\', &line[i.min(line.len())..]) {
                None => break line.len(),
                Some(k) if line[i + k] == b'"' => break i + k + 1,
                Some(k) => i += k + 2,
            }
        };
        if end - start >= MIN_LEN {
            tokens.push((base + start, base + end));
        }
        i = end;
    }
}

/// Cut the JSON string tokens of at least [`MIN_LEN`] bytes out of `text` (JSON, or lines
/// of `NAME JSON`); `None` when there is none (every text shorter than `MIN_LEN`, at no
/// cost).
pub(crate) fn split(text: &str) -> Option<Split<'_>> {
    if text.len() < MIN_LEN {
        return None;
    }
    let bytes = text.as_bytes();
    // Only the lines that hold a quoteless window are read token by token: a JSON
    // string never spans lines (its line breaks are escaped), so each line starts
    // outside one, and an event chunk's other lines (thousands of small events) are
    // skipped.
    let mut tokens = Vec::new();
    let mut read_to = 0;
    for p in quoteless_windows(bytes) {
        if p < read_to {
            continue;
        }
        let start = memchr::memrchr(b'\n', &bytes[..p]).map_or(0, |n| n + 1);
        let end = memchr::memchr(b'\n', &bytes[p..]).map_or(bytes.len(), |n| p + n);
        long_tokens_of_line(&bytes[start..end], start, &mut tokens);
        read_to = end;
    }
    if tokens.is_empty() {
        return None;
    }
    let mut left =
        String::with_capacity(text.len() - tokens.iter().map(|(s, e)| e - s).sum::<usize>());
    let mut cuts: Vec<Cut> = Vec::with_capacity(tokens.len());
    let mut values = Vec::with_capacity(tokens.len());
    let mut prev = 0;
    for (start, end) in tokens {
        // Token bounds are ASCII quotes (or a line's end): char boundaries.
        left.push_str(&text[prev..start]);
        let value = &text[start..end];
        // A value seen earlier in this text (an event's inputs and outputs) is not
        // hashed again: comparing is much cheaper.
        let seen = values.iter().position(|v: &&str| *v == value);
        let hash = match seen {
            Some(k) => cuts[k].hash.clone(),
            None => hash(value),
        };
        cuts.push(Cut {
            at: left.len(),
            hash,
        });
        values.push(value);
        prev = end;
    }
    left.push_str(&text[prev..]);
    Some(Split {
        text: left,
        cuts,
        values,
    })
}

/// The key of a value: hex SHA-256 of its text.
pub(crate) fn hash(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

/// Put the values back into a text cut by [`split`]: `cuts` is its `cuts` column, `fetch`
/// gives a blob's text by key (each key is fetched once). `what` names the text in errors.
pub(crate) fn join(
    text: String,
    cuts: &str,
    mut fetch: impl FnMut(&str) -> Result<String>,
    what: impl Fn() -> String,
) -> Result<String> {
    let list: Vec<(usize, String)> = serde_json::from_str(cuts)
        .map_err(|e| StoreError::Corrupt(format!("{}: its list of large values: {e}", what())))?;
    let mut got: HashMap<String, String> = HashMap::new();
    let mut total = text.len();
    for (_, key) in &list {
        if !got.contains_key(key) {
            let v = fetch(key)?;
            got.insert(key.clone(), v);
        }
        total += got.get(key).map_or(0, String::len);
    }
    let mut out = String::with_capacity(total);
    let mut prev = 0;
    for (at, key) in &list {
        let piece = text.get(prev..*at).filter(|_| *at >= prev).ok_or_else(|| {
            StoreError::Corrupt(format!("{}: a large value at {at} is out of place", what()))
        })?;
        out.push_str(piece);
        out.push_str(got.get(key).map_or("", String::as_str));
        prev = *at;
    }
    let rest = text.get(prev..).ok_or_else(|| {
        StoreError::Corrupt(format!(
            "{}: a large value at {prev} is out of place",
            what()
        ))
    })?;
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(c: char) -> String {
        std::iter::repeat_n(c, MIN_LEN).collect()
    }

    /// The tokens of at least MIN_LEN bytes, found the slow way (no quick look).
    fn long_tokens(text: &str) -> usize {
        let b = text.as_bytes();
        let (mut n, mut i) = (0, 0);
        while i < b.len() {
            if b[i] != b'"' {
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            let end = (i + 1).min(b.len());
            if end - start >= MIN_LEN {
                n += 1;
            }
            i = end;
        }
        n
    }

    /// Pseudo-random numbers below `m`, the same on every run for one seed.
    fn numbers(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |m| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        }
    }

    #[test]
    fn the_quick_look_never_misses_a_long_string() {
        // Strings of every size around the limit, full of escaped quotes and
        // backslashes, at every offset against the windows.
        let mut next = numbers(7);
        for case in 0..300 {
            let mut text = String::new();
            for _ in 0..(1 + next(6)) {
                text.push_str(&"x".repeat(next(9000) as usize));
                text.push('"');
                let len = match next(3) {
                    0 => next(100),
                    1 => MIN_LEN as u64 - 40 + next(80),
                    _ => next(40_000),
                };
                for _ in 0..len / 2 {
                    text.push_str(match next(4) {
                        0 => "\\\"",
                        1 => "\\\\",
                        _ => "ab",
                    });
                }
                if next(8) != 0 {
                    text.push('"');
                }
            }
            let long = long_tokens(&text);
            if long > 0 {
                assert!(may_hold_long_token(text.as_bytes()), "case {case}: missed");
            }
            assert_eq!(
                split(&text).map_or(0, |s| s.cuts.len()),
                long,
                "case {case}"
            );
        }
    }

    /// Lines of events, some with long strings: the strings are found in whichever
    /// lines they are, next to lines of many small ones and lines with none.
    #[test]
    fn long_strings_are_found_in_every_line_of_a_chunk() {
        let mut next = numbers(11);
        for case in 0..200 {
            let mut lines = Vec::new();
            for _ in 0..(1 + next(8)) {
                let mut line = String::from("message {");
                for k in 0..(1 + next(4)) {
                    let len = match next(4) {
                        0 => next(50),
                        1 => MIN_LEN as u64 - 20 + next(40),
                        2 => next(30_000),
                        _ => 0,
                    };
                    let body: String = (0..len / 2)
                        .map(|_| match next(5) {
                            0 => "\\\"",
                            1 => "\\n",
                            _ => "ab",
                        })
                        .collect();
                    // Long runs outside strings too: numbers a window wide.
                    let pad = if next(5) == 0 {
                        "1,".repeat(4100)
                    } else {
                        String::new()
                    };
                    line.push_str(&format!("\"k{k}\":[{pad}\"{body}\"],"));
                }
                line.push_str("\"end\":0}");
                lines.push(line);
            }
            let text = lines.join("\n") + "\n";
            let long = long_tokens(&text);
            let got = split(&text);
            assert_eq!(
                got.as_ref().map_or(0, |s| s.cuts.len()),
                long,
                "case {case}"
            );
            if let Some(s) = got {
                let blobs: HashMap<&str, &str> = s
                    .cuts
                    .iter()
                    .zip(&s.values)
                    .map(|(c, v)| (c.hash.as_str(), *v))
                    .collect();
                let back = join(
                    s.text.clone(),
                    &s.cuts_json(),
                    |k| Ok(blobs[k].to_string()),
                    || "t".into(),
                )
                .unwrap();
                assert_eq!(back, text, "case {case}");
            }
        }
    }

    #[test]
    fn short_texts_and_short_strings_are_left_alone() {
        assert!(split(r#"{"a":"b"}"#).is_none());
        let many_small: String = (0..5000).map(|i| format!("\"s{i}\",")).collect();
        assert!(many_small.len() > MIN_LEN);
        assert!(split(&many_small).is_none());
    }

    #[test]
    fn large_strings_are_cut_and_put_back_byte_for_byte() {
        let v = serde_json::to_string(&format!("{}\"é\\\n", big('x'))).unwrap();
        let other = serde_json::to_string(&big('y')).unwrap();
        let text = format!(
            "node_finished {{\"in\":{v},\"out\":{v},\"k\":\"\\\"\"}}\nmessage {{\"c\":{other}}}\n"
        );
        let s = split(&text).unwrap();
        assert_eq!(s.cuts.len(), 3);
        assert_eq!(s.cuts[0].hash, s.cuts[1].hash, "equal values share a key");
        assert_ne!(s.cuts[0].hash, s.cuts[2].hash);
        assert!(s.text.len() < 200, "{}", s.text);
        assert_eq!(s.values[0], v);
        let blobs: HashMap<String, String> = s
            .cuts
            .iter()
            .zip(&s.values)
            .map(|(c, v)| (c.hash.clone(), v.to_string()))
            .collect();
        let mut fetched = Vec::new();
        let back = join(
            s.text.clone(),
            &s.cuts_json(),
            |k| {
                fetched.push(k.to_string());
                Ok(blobs[k].clone())
            },
            || "t".into(),
        )
        .unwrap();
        assert_eq!(back, text);
        assert_eq!(fetched.len(), 2, "each key fetched once");
    }

    #[test]
    fn texts_that_are_not_json_do_not_panic() {
        let big = big('z');
        for text in [
            format!("\"{big}"),
            format!("\"{big}\\"),
            format!("\"{big}\\é\""),
            format!("{big}\"é"),
            format!("\"é{big}\"\""),
        ] {
            if let Some(s) = split(&text) {
                let back = join(
                    s.text.clone(),
                    &s.cuts_json(),
                    |_| Ok(s.values[0].to_string()),
                    || "t".into(),
                );
                assert_eq!(back.unwrap(), text);
            }
        }
    }

    #[test]
    fn bad_cut_lists_are_corrupt_not_panics() {
        let fetch = |_: &str| Ok("\"v\"".to_string());
        for cuts in [
            "nope",
            "[[99,\"k\"]]",
            "[[2,\"k\"],[1,\"k\"]]",
            "[[1,\"k\"]]",
        ] {
            let e = join("éa".into(), cuts, fetch, || "chunk 3".into()).unwrap_err();
            assert!(matches!(e, StoreError::Corrupt(_)), "{cuts}: {e}");
            assert!(e.to_string().contains("chunk 3"), "{e}");
        }
    }
}
