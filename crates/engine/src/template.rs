//! RAGFlow's text substitution routines (`engine.md` §3.4). They differ from each other
//! in which spaces they eat and how they stringify; each is mirrored separately.

use serde_json::Value;

use super::refs::{REF_PATTERN, REF_PATTERN_CASED, RefError, resolve_with};
use super::state::RunState;
use canvas_pyrt::{py_json, py_str};

/// Routine (b), `Canvas.get_value_with_variable`: every match (spaces and extra braces
/// included) is replaced; `None` → `""`, strings as they are, other values as JSON.
pub fn value_with_variable(state: &RunState, text: &str) -> Result<String, RefError> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in REF_PATTERN.find_iter(text) {
        out.push_str(&text[last..m.start()]);
        resolve_with(state, m.group(), |v| match v {
            Value::Null => {}
            Value::String(s) => out.push_str(s),
            other => out.push_str(&py_json(other)),
        })?;
        last = m.end();
    }
    out.push_str(&text[last..]);
    Ok(out)
}

/// `None` → `""`, strings as they are, anything else `json.dumps`.
pub fn plain_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => py_json(other),
    }
}

/// Routine (c), `ComponentBase.string_format`: exact `{name}` replaced by Python `str()`
/// of the value (`None` → `""`); surrounding spaces kept.
pub fn string_format(text: &str, kv: &[(String, Value)]) -> String {
    let mut out = text.to_string();
    for (k, v) in kv {
        let needle = format!("{{{k}}}");
        if out.contains(&needle) {
            let s = if v.is_null() {
                String::new()
            } else {
                py_str(v)
            };
            out = out.replace(&needle, &s);
        }
    }
    out
}

/// `re.sub("[@:.]", "_", exp)`: the Jinja variable name standing for a reference.
pub fn identifier(exp: &str) -> String {
    // Sized once, and copied a run at a time between the (ASCII) bytes replaced: a
    // merge makes its identifiers on every pass of a loop.
    let mut id = String::with_capacity(exp.len());
    let mut from = 0;
    for (i, b) in exp.bytes().enumerate() {
        if matches!(b, b'@' | b':' | b'.') {
            id.push_str(&exp[from..i]);
            id.push('_');
            from = i + 1;
        }
    }
    id.push_str(&exp[from..]);
    id
}

/// True when a text uses Jinja syntax (`{% … %}`, `{{` or `}}`).
pub fn has_jinja(text: &str) -> bool {
    // `(?s)\{%.*?%\}` matches when a `%}` follows the first `{%` (a later `{%` has
    // fewer `%}` after it, and the two may not overlap): one pass over the pairs of
    // bytes, without building the regex.
    let mut block_from = None;
    for (i, pair) in text.as_bytes().windows(2).enumerate() {
        match pair {
            b"{{" | b"}}" => return true,
            b"{%" if block_from.is_none() => block_from = Some(i + 2),
            b"%}" if block_from.is_some_and(|from| i >= from) => return true,
            _ => {}
        }
    }
    false
}

/// One reference of a merge, with the text its value renders as.
#[derive(Debug, Clone)]
pub struct MergeRef<'r> {
    /// The expression as written inside the braces.
    pub raw: &'r str,
    /// The resolved expression (aliases expanded).
    pub exp: &'r str,
    /// The value as text.
    pub text: String,
}

/// When the Jinja step of a merge runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JinjaMode {
    /// Always (Message's non-streaming path); a render error keeps the text unrendered.
    Always,
    /// Only when the text has Jinja markers (StringTransform merge).
    WhenMarked,
}

/// Routine (d), steps 2–4: references → identifiers, Jinja, identifiers → values.
pub fn merge(template: &str, refs: &[MergeRef<'_>], mode: JinjaMode) -> String {
    let mut text = template.to_string();
    let ids: Vec<String> = refs.iter().map(|r| identifier(r.exp)).collect();
    // The replacements go back and forth between two buffers, and one buffer serves
    // every `{raw}`: a merge runs on every pass of a loop.
    let mut spare = String::new();
    let mut needle = String::new();
    for (r, id) in refs.iter().zip(&ids) {
        needle.clear();
        needle.push('{');
        needle.push_str(r.raw);
        needle.push('}');
        replace_in(&mut text, &mut spare, &needle, id);
    }
    let render = match mode {
        JinjaMode::Always => true,
        JinjaMode::WhenMarked => has_jinja(&text),
    };
    if render {
        let vars = ids
            .iter()
            .zip(refs)
            .map(|(id, r)| (id.as_str(), r.text.as_str()));
        if let Ok(t) = super::jinja::render_pairs(&text, vars) {
            text = t;
        }
    }
    // RAGFlow uses each identifier as a regex and the value as a replacement template;
    // a plain replace gives the same text without the crash on `\d` (differences.md).
    for (id, r) in ids.iter().zip(refs) {
        replace_in(&mut text, &mut spare, id, &r.text);
    }
    text
}

/// `*text = text.replace(from, to)`, building the result in `spare` (kept for the next
/// call) and copying nothing when `from` does not occur.
fn replace_in(text: &mut String, spare: &mut String, from: &str, to: &str) {
    if from.is_empty() {
        // Every char boundary, as `str::replace` has it (an identifier is never empty).
        *text = text.replace(from, to);
        return;
    }
    let mut found = occurrences(text, from).peekable();
    if found.peek().is_none() {
        return;
    }
    spare.clear();
    spare.reserve(text.len() + to.len());
    let mut last = 0;
    for at in found {
        spare.push_str(&text[last..at]);
        spare.push_str(to);
        last = at + from.len();
    }
    spare.push_str(&text[last..]);
    std::mem::swap(text, spare);
}

/// Where a non-empty `needle` occurs in `text`, without overlaps, as
/// `str::match_indices` finds it.
/// Templates and needles are short, and a merge runs on every pass of a loop: finding
/// the first byte and comparing there costs less than building a two-way searcher.
fn occurrences<'t>(text: &'t str, needle: &'t str) -> impl Iterator<Item = usize> + 't {
    let bytes = text.as_bytes();
    let first = needle.as_bytes().first().copied();
    let mut from = 0;
    std::iter::from_fn(move || {
        let first = first?;
        while from < bytes.len() {
            let at = from + bytes[from..].iter().position(|&b| b == first)?;
            if bytes[at..].starts_with(needle.as_bytes()) {
                from = at + needle.len();
                return Some(at);
            }
            from = at + 1;
        }
        None
    })
}

/// A piece of a streamed template: literal text, or a reference (routine (a)).
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Text between references, as it is.
    Text(String),
    /// A reference expression; the whole match, spaces and braces included, is replaced.
    Ref(String),
}

/// Split a template the way the streaming Message walks it (case-sensitive regex).
pub fn stream_pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut last = 0;
    for m in REF_PATTERN_CASED.find_iter(text) {
        if m.start() > last {
            out.push(Piece::Text(text[last..m.start()].to_string()));
        }
        out.push(Piece::Ref(m.group().to_string()));
        last = m.end();
    }
    if last < text.len() {
        out.push(Piece::Text(text[last..].to_string()));
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn replacing_in_place_gives_what_str_replace_gives() {
        let mut spare = String::new();
        // Every text and needle of up to four letters over an alphabet with a repeated
        // letter, braces and a two-byte char: overlaps, matches at either end, none.
        let alphabet = ["a", "{", "}", "é"];
        let words = |n: usize| -> Vec<String> {
            let mut out = vec![String::new()];
            for _ in 0..n {
                let mut next = Vec::new();
                for w in &out {
                    for c in alphabet {
                        next.push(format!("{w}{c}"));
                    }
                }
                out.extend(next);
                out.dedup();
            }
            out.sort();
            out.dedup();
            out
        };
        let texts = words(4);
        let needles = words(2);
        for text in &texts {
            for from in &needles {
                let mut got = text.clone();
                replace_in(&mut got, &mut spare, from, "<x>");
                assert_eq!(got, text.replace(from.as_str(), "<x>"), "{text:?} {from:?}");
                if !from.is_empty() {
                    let at: Vec<usize> = occurrences(text, from).collect();
                    let want: Vec<usize> = text.match_indices(from.as_str()).map(|m| m.0).collect();
                    assert_eq!(at, want, "{text:?} {from:?}");
                }
            }
        }
    }

    proptest::proptest! {
        /// Identifiers replace `@`, `:` and `.` with `_`, whatever else the text holds.
        #[test]
        fn identifiers_replace_the_separators(exp in "[a@:.é_{} ]{0,16}") {
            let want: String = exp
                .chars()
                .map(|c| if matches!(c, '@' | ':' | '.') { '_' } else { c })
                .collect();
            proptest::prop_assert_eq!(identifier(&exp), want);
        }
    }

    #[test]
    fn has_jinja_finds_what_the_block_pattern_found() {
        let block = regex::Regex::new(r"(?s)\{%.*?%\}").unwrap();
        // Every string of up to 6 characters over the pattern's alphabet.
        let alphabet = ['{', '%', '}', 'a', '\n'];
        let mut texts = vec![String::new()];
        for _ in 0..6 {
            let longer: Vec<String> = texts
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            texts.extend(longer);
            texts.dedup();
        }
        for t in &texts {
            let want = t.contains("{{") || t.contains("}}") || block.is_match(t);
            assert_eq!(has_jinja(t), want, "{t:?}");
        }
    }
    use super::*;
    use crate::state::NodeState;
    use serde_json::json;

    fn state() -> RunState {
        let mut s = RunState::default();
        s.globals.insert("sys.query".into(), json!("hello"));
        let mut n = NodeState::default();
        n.outputs.insert("obj".into(), json!({"a": 1}));
        s.nodes.insert("begin".into(), n.into());
        s
    }

    #[test]
    fn value_with_variable_eats_spaces() {
        let s = state();
        assert_eq!(
            value_with_variable(&s, "hi {sys.query}!").unwrap(),
            "hihello!"
        );
        assert_eq!(
            value_with_variable(&s, "o={begin@obj}").unwrap(),
            "o={\"a\": 1}"
        );
    }

    #[test]
    fn string_format_keeps_spaces_and_uses_str() {
        let kv = vec![
            ("begin@obj".to_string(), json!({"a": 1})),
            ("x".into(), Value::Null),
        ];
        assert_eq!(string_format("a {begin@obj} b{x}", &kv), "a {'a': 1} b");
        assert_eq!(string_format("{{begin@obj}}", &kv), "{{'a': 1}}");
    }

    #[test]
    fn merge_matches_ragflow_examples() {
        // engine.md §9 item 48 and 49.
        let refs = vec![
            MergeRef {
                raw: "begin@l",
                exp: "begin@l",
                text: "a-1-{'k': 'v'}".into(),
            },
            MergeRef {
                raw: "sys.query",
                exp: "sys.query",
                text: "hello".into(),
            },
        ];
        assert_eq!(
            merge("{begin@l} | {sys.query}!", &refs, JinjaMode::WhenMarked),
            "a-1-{'k': 'v'} | hello!"
        );
        let refs = vec![MergeRef {
            raw: "begin@l",
            exp: "begin@l",
            text: "ab-c".into(),
        }];
        assert_eq!(
            merge(
                "{{begin@l}} {% for x in begin_l %}[{{x}}]{% endfor %}",
                &refs,
                JinjaMode::WhenMarked
            ),
            "{ab-c} [a][b][-][c]"
        );
    }

    #[test]
    fn stream_pieces_split_like_the_streaming_message() {
        let p = stream_pieces("Answer: {a@b} / {c@d}");
        assert_eq!(
            p,
            vec![
                Piece::Text("Answer:".into()),
                Piece::Ref("a@b".into()),
                Piece::Text("/".into()),
                Piece::Ref("c@d".into())
            ]
        );
    }
}
