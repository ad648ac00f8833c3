//! RAGFlow's handling of `<think>` reasoning text: stripping it from whole answers,
//! splitting a streamed answer into text and think markers, and wrapping a provider's
//! separate reasoning deltas into tagged text the way RAGFlow's model layer does.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// Keeps only what follows the last `</think>` when a `<think>` precedes it.
pub fn strip_think(text: &str) -> String {
    // RAGFlow checks for `<think>` and a later `</think>`, then cuts at the *last* close.
    let Some(open) = text.find(OPEN) else {
        return text.to_string();
    };
    match text.rfind(CLOSE) {
        Some(close) if close > open => text[close + CLOSE.len()..].to_string(),
        _ => text.to_string(),
    }
}

/// Removes every `<tool_call>…</tool_call>` block (non-greedy, across lines); borrowed
/// when there is none (a streamed chunk nearly always).
pub fn strip_tool_call_blocks(text: &str) -> Cow<'_, str> {
    static RE: LazyLock<Regex> = LazyLock::new(|| {
        // A fixed, valid pattern: compiling it cannot fail.
        Regex::new(r"(?s)<tool_call>.*?</tool_call>").expect("valid regex")
    });
    if !text.contains("<tool_call>") {
        return Cow::Borrowed(text);
    }
    RE.replace_all(text, "")
}

/// One item of a split stream: text, or a think marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text to show (reasoning or answer).
    Text(String),
    /// `<think>`: reasoning starts.
    StartThink,
    /// `</think>`: reasoning ends.
    EndThink,
}

/// RAGFlow's `_stream_with_think_delta` with `min_tokens = 0`, quirks included
/// (`llm-and-tools.md` §3.4).
///
/// A chunk that starts with all the text received so far is taken for a cumulative
/// chunk and only its remainder is new (so a repeated word chunk is dropped). Tags are
/// recognised only inside the new part of one chunk; a `</think>` followed by nothing
/// but white space in its chunk is held back, with that white space, until the next
/// chunk without a `</think>` or the end of the stream.
#[derive(Debug, Clone, Default)]
pub struct ThinkSplitter {
    /// Everything received, for the cumulative-chunk check.
    received: String,
    /// Inside a think block (a `<think>` fired and no `</think>` since).
    in_think: bool,
    /// A `</think>` whose end marker is held back, with the white space after it.
    held_close: Option<String>,
}

impl ThinkSplitter {
    /// A splitter at the start of a stream.
    pub fn new() -> ThinkSplitter {
        ThinkSplitter::default()
    }

    /// Feeds one chunk; appends the pieces it releases to `out` (a buffer the caller
    /// reuses: one chunk releases one piece, usually).
    pub fn push(&mut self, chunk: &str, out: &mut Vec<Piece>) {
        if chunk.is_empty() {
            return;
        }
        let new = if chunk.starts_with(self.received.as_str()) {
            let seen = self.received.len();
            self.received.clear();
            self.received.push_str(chunk);
            &chunk[seen..]
        } else {
            self.received.push_str(chunk);
            chunk
        };
        if new.is_empty() {
            return;
        }
        // Without a `<` there is no tag to look for: most chunks are plain text.
        let tagless = !new.contains('<');
        if tagless || !new.contains(CLOSE) {
            if let Some(space) = self.held_close.take() {
                // The held close is released: its marker, its white space, then this
                // chunk's text with every tag deleted (not scanned again).
                self.in_think = false;
                out.push(Piece::EndThink);
                text(out, &space);
                text(out, &without_tags(new));
                return;
            }
        }
        if tagless {
            text(out, new);
        } else {
            self.scan(new, out);
        }
    }

    /// Ends the stream: a close still held back is released, then its white space.
    pub fn finish(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        if let Some(space) = self.held_close.take() {
            self.in_think = false;
            out.push(Piece::EndThink);
            text(&mut out, &space);
        }
        out
    }

    /// Splits the new part of one chunk at its tags.
    fn scan(&mut self, part: &str, out: &mut Vec<Piece>) {
        let mut rest = part;
        loop {
            let close = rest.find(CLOSE);
            let open = rest.find(OPEN).filter(|o| close.is_none_or(|c| *o < c));
            if let Some(o) = open {
                text(out, &rest[..o]);
                // A `<think>` inside a think block is only removed.
                if !self.in_think {
                    self.in_think = true;
                    out.push(Piece::StartThink);
                }
                rest = &rest[o + OPEN.len()..];
                continue;
            }
            let Some(c) = close else {
                text(out, rest);
                return;
            };
            text(out, &rest[..c]);
            // After a close every tag of the chunk is deleted, not acted on.
            let after = without_tags(&rest[c + CLOSE.len()..]);
            if after.trim().is_empty() {
                self.held_close
                    .get_or_insert_with(String::new)
                    .push_str(&after);
            } else {
                self.in_think = false;
                out.push(Piece::EndThink);
                text(out, &after);
            }
            return;
        }
    }
}

/// A text piece, unless empty.
fn text(out: &mut Vec<Piece>, s: &str) {
    if !s.is_empty() {
        out.push(Piece::Text(s.to_string()));
    }
}

/// `s` with every `<think>` and `</think>` deleted.
fn without_tags(s: &str) -> String {
    s.replace(OPEN, "").replace(CLOSE, "")
}

/// Turns a provider's reasoning and text deltas into tagged text, as RAGFlow's model
/// layer does.
///
/// Every reasoning chunk is closed with `</think>`, and the first chunk of a run of
/// reasoning is also opened with `<think>`: `<think>a</think>`, `b</think>`, `answer`.
/// That is what [`ThinkSplitter`] expects: it only sees a close tag at a chunk's end.
#[derive(Debug, Clone, Default)]
pub struct ReasoningWrapper {
    in_reasoning: bool,
}

impl ReasoningWrapper {
    /// A wrapper at the start of a stream.
    pub fn new() -> ReasoningWrapper {
        ReasoningWrapper::default()
    }

    /// The text chunk for a reasoning delta.
    pub fn reasoning(&mut self, s: &str) -> String {
        let open = if self.in_reasoning { "" } else { OPEN };
        self.in_reasoning = true;
        format!("{open}{s}{CLOSE}")
    }

    /// The text chunk for an answer delta (it ends a run of reasoning), as it came.
    pub fn text(&mut self, s: String) -> String {
        self.in_reasoning = false;
        s
    }

    /// Anything left to send at the end: nothing, since every reasoning chunk is
    /// already closed (kept so callers need not know that).
    pub fn finish(&mut self) -> Option<String> {
        self.in_reasoning = false;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&str]) -> Vec<Piece> {
        let mut s = ThinkSplitter::new();
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut out);
        }
        out.extend(s.finish());
        out
    }

    fn t(s: &str) -> Piece {
        Piece::Text(s.to_string())
    }

    #[test]
    fn strip_think_keeps_text_after_last_close() {
        assert_eq!(strip_think("<think>a</think>b</think>answer"), "answer");
        assert_eq!(strip_think("x<think>r</think> done"), " done");
    }

    #[test]
    fn strip_think_leaves_text_without_a_pair() {
        assert_eq!(strip_think("plain"), "plain");
        assert_eq!(strip_think("a</think>b"), "a</think>b");
        assert_eq!(strip_think("</think>x<think>y"), "</think>x<think>y");
        assert_eq!(strip_think("<think>never closed"), "<think>never closed");
    }

    #[test]
    fn strip_tool_call_blocks_is_non_greedy_and_multiline() {
        let s = "a<tool_call>{\n\"x\":1}</tool_call>b<tool_call>y</tool_call>c";
        assert_eq!(strip_tool_call_blocks(s), "abc");
        assert_eq!(strip_tool_call_blocks("<tool_call>open"), "<tool_call>open");
    }

    #[test]
    fn splitter_plain_text_passes_through() {
        assert_eq!(split(&["Hello ", "world"]), vec![t("Hello "), t("world")]);
    }

    #[test]
    fn splitter_text_glued_to_tags_in_word_chunks() {
        // Conformance case 28: the recorded answer in word chunks.
        let got = split(&[
            "Sure<think>check ",
            "the  ",
            "facts</think>Done. ",
            "Final</think>  ",
            "words ",
            "here<think>again</think>",
        ]);
        assert_eq!(
            got,
            vec![
                t("Sure"),
                Piece::StartThink,
                t("check "),
                t("the  "),
                t("facts"),
                Piece::EndThink,
                t("Done. "),
                t("Final"),
                Piece::EndThink,
                t("  "),
                t("words "),
                t("here"),
                Piece::StartThink,
                t("again"),
                Piece::EndThink,
            ]
        );
    }

    #[test]
    fn splitter_tags_split_over_chunks_are_text() {
        // Conformance case 29: char chunks never make a whole tag.
        let chars: Vec<String> = "<think>hm</think>".chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        let got = split(&refs);
        assert!(got.iter().all(|p| matches!(p, Piece::Text(_))), "{got:?}");
        assert_eq!(got.len(), chars.len());
    }

    #[test]
    fn splitter_drops_chunks_repeating_the_text_so_far() {
        // Case 29: a second "o" after "o" is taken for a cumulative chunk.
        assert_eq!(split(&["o", "o", "h"]), vec![t("o"), t("h")]);
        // Case 31: "Yes  " after "Yes " adds only " ".
        assert_eq!(
            split(&["Yes ", "Yes  ", "Yes"]),
            vec![t("Yes "), t(" "), t("Yes")]
        );
        // Deltas that repeat a word lose it, as in RAGFlow.
        assert_eq!(split(&["ha ", "ha ", "ha"]), vec![t("ha "), t("ha")]);
    }

    #[test]
    fn splitter_holds_white_space_after_a_close() {
        // Case 30: the close and the white space after it wait for the next chunk.
        assert_eq!(
            split(&["<think> ", "idea ", "</think>   \n ", "Answer  "]),
            vec![
                Piece::StartThink,
                t(" "),
                t("idea "),
                Piece::EndThink,
                t("   \n "),
                t("Answer  "),
            ]
        );
        // At the end of the stream the held close comes out, then its white space.
        assert_eq!(
            split(&["<think>x</think>  "]),
            vec![Piece::StartThink, t("x"), Piece::EndThink, t("  ")]
        );
    }

    #[test]
    fn splitter_stray_close_fires_and_deletes_later_tags() {
        // Case 32: `</think>` with no `<think>` ends thinking; the tags after it in the
        // same chunk are deleted, not acted on.
        assert_eq!(
            split(&["Intro text</think>Body <think>inner <think>nested</think> tail"]),
            vec![
                t("Intro text"),
                Piece::EndThink,
                t("Body inner nested tail")
            ]
        );
    }

    #[test]
    fn splitter_think_only_answer_closes_at_the_end() {
        // Case 32: a whole-chunk answer that is all reasoning.
        assert_eq!(
            split(&["<think>only pondering, nothing to say</think>"]),
            vec![
                Piece::StartThink,
                t("only pondering, nothing to say"),
                Piece::EndThink
            ]
        );
    }

    #[test]
    fn splitter_a_held_close_stays_held_through_a_chunk_with_a_close() {
        // How the model layer wraps reasoning deltas: `<think>a</think>`, `b</think>`.
        assert_eq!(
            split(&["<think>a</think>", "b</think>", "answer"]),
            vec![
                Piece::StartThink,
                t("a"),
                t("b"),
                Piece::EndThink,
                t("answer")
            ]
        );
    }

    #[test]
    fn splitter_open_inside_a_block_is_removed() {
        assert_eq!(
            split(&["<think>", "<think>", "x"]),
            vec![Piece::StartThink, t("x")]
        );
    }

    #[test]
    fn splitter_skips_empty_chunks() {
        assert_eq!(split(&["", "a", "", "b"]), vec![t("a"), t("b")]);
    }

    #[test]
    fn splitter_never_panics() {
        let inputs: Vec<Vec<&str>> = vec![
            vec!["</think>"],
            vec!["</think>", "</think>", "x"],
            vec!["<think><think>", "</think></think>", "é"],
            vec!["日本語<think>思考</think>答え", "🙂", "🙂🙂"],
            vec!["<think>", "ü</think>", "ß", "<think>x", "</think>"],
            vec!["a", "ab", "abc", "<think>", "<think>abc"],
            vec!["<thi", "nk>", "</thi", "nk>"],
            vec!["<think>é</think>", "ñ</think>", "ü", "😀<think>"],
            vec!["</think><think>", "<think></think>", "", "</think>🙂"],
        ];
        for chunks in inputs {
            let mut s = ThinkSplitter::new();
            let mut all = Vec::new();
            for c in &chunks {
                s.push(c, &mut all);
            }
            all.extend(s.finish());
            // Text never carries a tag the splitter understood as one.
            for p in &all {
                if let Piece::Text(x) = p {
                    assert!(!x.is_empty());
                }
            }
        }
        // Every prefix cut of a multi-byte string, fed char by char and in pairs.
        let text = "é<think>ü🙂</think>日本</think>x<think>";
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        split(&refs);
        for (i, _) in text.char_indices() {
            split(&[&text[..i], &text[i..]]);
            split(&[&text[i..], &text[..i]]);
        }
    }

    #[test]
    fn wrapper_tags_reasoning_runs() {
        let mut w = ReasoningWrapper::new();
        assert_eq!(w.reasoning("a"), "<think>a</think>");
        assert_eq!(w.reasoning("b"), "b</think>");
        assert_eq!(w.text("answer".into()), "answer");
        assert_eq!(w.reasoning("c"), "<think>c</think>");
        assert_eq!(w.finish(), None);
    }

    #[test]
    fn wrapper_feeds_splitter() {
        let mut w = ReasoningWrapper::new();
        let chunks = [
            w.reasoning("Let "),
            w.reasoning("me "),
            w.reasoning("see."),
            w.text("The ".into()),
            w.text("answer.".into()),
        ];
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        assert_eq!(
            split(&refs),
            vec![
                Piece::StartThink,
                t("Let "),
                t("me "),
                t("see."),
                Piece::EndThink,
                t("The "),
                t("answer."),
            ]
        );
        let joined: String = chunks.concat();
        assert_eq!(strip_think(&joined), "The answer.");
    }
}
