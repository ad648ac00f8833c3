//! RAGFlow's handling of `<think>` reasoning text: stripping it from whole answers,
//! splitting a streamed answer into text and think markers, and wrapping a provider's
//! separate reasoning deltas into tagged text the way RAGFlow's model layer does.

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

/// Removes every `<tool_call>…</tool_call>` block (non-greedy, across lines).
pub fn strip_tool_call_blocks(text: &str) -> String {
    static RE: LazyLock<Regex> = LazyLock::new(|| {
        // A fixed, valid pattern: compiling it cannot fail.
        Regex::new(r"(?s)<tool_call>.*?</tool_call>").expect("valid regex")
    });
    RE.replace_all(text, "").into_owned()
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

/// RAGFlow's `_stream_with_think_delta` with `min_tokens = 0`, quirks included.
///
/// Tags are recognised only when whole inside one chunk, and a close tag at the end of a
/// chunk is held back until non-reasoning text arrives or the stream ends. RAGFlow also
/// drops a chunk that starts with all the text so far (taking it for a cumulative
/// chunk), which loses repeated words ("ha ha ha" shows "ha ha"); our clients only
/// stream deltas, so every chunk is kept (`docs/differences.md`).
#[derive(Debug, Clone, Default)]
pub struct ThinkSplitter {
    full_text: String,
    last_idx: usize,
    endswith_think: bool,
    /// Length of `full_text` when last read (it only grows: equal length, same text).
    last_len: usize,
    in_think: bool,
}

impl ThinkSplitter {
    /// A splitter at the start of a stream.
    pub fn new() -> ThinkSplitter {
        ThinkSplitter::default()
    }

    /// Feeds one chunk; returns the pieces it releases.
    pub fn push(&mut self, chunk: &str) -> Vec<Piece> {
        if chunk.is_empty() {
            return Vec::new();
        }
        self.full_text.push_str(chunk);
        // RAGFlow's model layer hands over reasoning as `<think>a</think>`, `b</think>`:
        // the text a marker held back in the same chunk comes right after it (this is
        // what RAGFlow's recorded streams show), so after a marker we read on.
        let mut out = Vec::new();
        let mut delta = self.next_delta();
        for _ in 0..64 {
            if delta.is_empty() {
                break;
            }
            if delta == OPEN || delta == CLOSE {
                let open = delta == OPEN;
                // A marker for the state we are already in is redundant.
                if open != self.in_think {
                    self.in_think = open;
                    out.push(if open {
                        Piece::StartThink
                    } else {
                        Piece::EndThink
                    });
                }
                delta = self.delta_from_last();
                continue;
            }
            out.push(Piece::Text(delta));
            break;
        }
        out
    }

    /// Ends the stream: a close tag still held back is released.
    pub fn finish(&mut self) -> Vec<Piece> {
        if self.endswith_think {
            self.endswith_think = false;
            vec![Piece::EndThink]
        } else {
            Vec::new()
        }
    }

    /// RAGFlow's `_next_think_delta`: what the latest chunk adds, or a bare marker.
    fn next_delta(&mut self) -> String {
        if self.full_text.len() == self.last_len {
            return String::new();
        }
        self.last_len = self.full_text.len();
        self.delta_from_last()
    }

    /// The delta from `last_idx` on (`_next_think_delta` past its no-change check).
    fn delta_from_last(&mut self) -> String {
        // `last_idx` only ever lands after a tag or at the end, so it is a char boundary;
        // `get` keeps this panic-free regardless.
        let d = self.full_text.get(self.last_idx..).unwrap_or("");
        match d.find(OPEN) {
            Some(0) => {
                self.last_idx += OPEN.len();
                return OPEN.to_string();
            }
            Some(p) => {
                let text = d[..p].to_string();
                self.last_idx += p;
                return text;
            }
            None => {}
        }
        if d.ends_with(CLOSE) {
            self.endswith_think = true;
        } else if self.endswith_think {
            self.endswith_think = false;
            return CLOSE.to_string();
        }
        let delta = d.replace(OPEN, "").replace(CLOSE, "");
        self.last_idx = self.full_text.len();
        if self.full_text.ends_with(CLOSE) {
            self.last_idx -= CLOSE.len();
        }
        delta
    }
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

    /// The text chunk for an answer delta (it ends a run of reasoning).
    pub fn text(&mut self, s: &str) -> String {
        self.in_reasoning = false;
        s.to_string()
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
            out.extend(s.push(c));
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
    fn splitter_close_inside_a_chunk_is_dropped_without_marker() {
        // A `</think>` in the middle of a chunk is only removed, not reported.
        let got = split(&[
            "<think>Let ",
            "me ",
            "think ",
            "about ",
            "it.</think>The ",
            "answer ",
        ]);
        assert_eq!(
            got,
            vec![
                Piece::StartThink,
                t("Let "),
                t("me "),
                t("think "),
                t("about "),
                t("it.The "),
                t("answer "),
            ]
        );
    }

    #[test]
    fn splitter_tags_in_their_own_chunks() {
        let got = split(&[
            "<think>", "Let ", "me ", "think ", "about ", "it.", "</think>", "The ", "answer ",
            "is ",
        ]);
        // The close is held until text arrives, then shown before that text.
        assert_eq!(
            got,
            vec![
                Piece::StartThink,
                t("Let "),
                t("me "),
                t("think "),
                t("about "),
                t("it."),
                Piece::EndThink,
                t("The "),
                t("answer "),
                t("is "),
            ]
        );
    }

    #[test]
    fn splitter_open_tag_split_across_chunks_is_text() {
        let got = split(&["<", "t", "h", "i", "n", "k", ">", "x"]);
        assert_eq!(
            got,
            vec![
                t("<"),
                t("t"),
                t("h"),
                t("i"),
                t("n"),
                t("k"),
                t(">"),
                t("x")
            ]
        );
    }

    #[test]
    fn splitter_keeps_repeated_chunks() {
        // RAGFlow would drop the second "ha " as a cumulative chunk; we keep it.
        assert_eq!(
            split(&["ha ", "ha ", "ha"]),
            vec![t("ha "), t("ha "), t("ha")]
        );
    }

    #[test]
    fn splitter_close_at_end_is_released_by_finish() {
        assert_eq!(
            split(&["<think>", "abc</think>"]),
            vec![Piece::StartThink, t("abc"), Piece::EndThink]
        );
        // RAGFlow releases it even when no reasoning was open.
        assert_eq!(split(&["abc</think>"]), vec![t("abc"), Piece::EndThink]);
    }

    #[test]
    fn splitter_text_releasing_a_close_comes_right_after_it() {
        // engine.md §4.4: the Message content of `<think>`, `hmm`, `</think>`,
        // `ECHO(THINK)` is `hmmECHO(THINK)`: nothing is lost.
        assert_eq!(
            split(&["<think>a", "b</think>", "The end"]),
            vec![
                Piece::StartThink,
                t("a"),
                t("b"),
                Piece::EndThink,
                t("The end")
            ]
        );
        assert_eq!(
            split(&["<think>", "hmm", "</think>", "ECHO(THINK)"]),
            vec![
                Piece::StartThink,
                t("hmm"),
                Piece::EndThink,
                t("ECHO(THINK)")
            ]
        );
    }

    #[test]
    fn splitter_text_before_open_tag_in_one_chunk() {
        assert_eq!(
            split(&["Hi <think>", "r", "</think>", "ok", "!"]),
            vec![
                t("Hi "),
                Piece::StartThink,
                t("r"),
                Piece::EndThink,
                t("ok"),
                t("!")
            ]
        );
    }

    #[test]
    fn splitter_redundant_markers_are_dropped() {
        // Second `<think>` while in reasoning yields nothing.
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
                all.extend(s.push(c));
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
        assert_eq!(w.text("answer"), "answer");
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
            w.text("The "),
            w.text("answer."),
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
