//! A bound on how deeply a YAML text nests, checked before it is parsed. The YAML
//! parser's time grows with the square of the depth of flow collections (`[[[…`, `{a:
//! {a: …`): 100,000 levels took 20 s or more before its recursion limit (128, as JSON's)
//! refused them, where JSON refuses them at once. Block nesting (indentation, `- - -`)
//! is cheap for the parser and left to its own limit.

/// The deepest nesting a canvas, inputs file, mock script or `llm.yaml` may have:
/// serde_json's and yaml_serde's recursion limit.
pub const MAX_DEPTH: usize = 128;

/// A YAML text nested deeper than [`MAX_DEPTH`], and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("nested deeper than {MAX_DEPTH} levels at line {line} column {column}")]
pub struct TooDeep {
    /// 1-based line of the bracket one level too deep.
    pub line: usize,
    /// 1-based column (in characters) of that bracket.
    pub column: usize,
}

/// Refuse a YAML text whose flow collections nest deeper than [`MAX_DEPTH`]. A linear
/// scan, not a parse: where it cannot tell (a bracket inside a multi-line plain
/// scalar, say) it counts nothing, so it never refuses a text the parser would take;
/// the parser's own limit still applies to what it lets through.
pub fn check_yaml(text: &str) -> Result<(), TooDeep> {
    Scan::new(text).run()
}

/// The scanner's position and what it knows of the context there.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    line_start: usize,
    /// Open flow collections; 0 is block context.
    depth: usize,
    /// A node may start here: in block context only right after indentation or an
    /// indicator (`- `, `? `, `: `); in flow context after any indicator or space.
    token_start: bool,
    /// Block context: the column where the line's innermost node starts (a block
    /// scalar's content is indented deeper).
    node_col: usize,
    /// Inside a block scalar (`|`, `>`) whose parent node is at this column: lines
    /// indented deeper (and blank lines) are its content.
    block_scalar: Option<usize>,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Self {
        let b = text.as_bytes();
        let i = if b.starts_with("\u{feff}".as_bytes()) {
            3
        } else {
            0
        };
        Scan {
            b,
            i,
            line: 1,
            line_start: i,
            depth: 0,
            token_start: true,
            node_col: 0,
            block_scalar: None,
        }
    }

    fn peek(&self, k: usize) -> Option<u8> {
        self.b.get(self.i + k).copied()
    }

    /// Whether the byte `k` ahead ends a token (space, tab, line end, end of text).
    fn blank_at(&self, k: usize) -> bool {
        matches!(self.peek(k), None | Some(b' ' | b'\t' | b'\r' | b'\n'))
    }

    /// The column (0-based byte offset in the line) of the current byte.
    fn col(&self) -> usize {
        self.i - self.line_start
    }

    fn too_deep(&self) -> TooDeep {
        // Columns are counted in characters: skip UTF-8 continuation bytes.
        let chars = self.b[self.line_start..self.i]
            .iter()
            .filter(|&&c| c & 0xC0 != 0x80)
            .count();
        TooDeep {
            line: self.line,
            column: chars + 1,
        }
    }

    fn newline(&mut self) {
        self.i += 1;
        self.line += 1;
        self.line_start = self.i;
    }

    /// Skip to the end of the line (the newline itself is left).
    fn skip_line(&mut self) {
        while let Some(c) = self.peek(0) {
            if c == b'\n' {
                return;
            }
            self.i += 1;
        }
    }

    /// Skip a quoted scalar starting at the current quote, lines and escapes included.
    fn skip_quoted(&mut self, quote: u8) {
        self.i += 1;
        while let Some(c) = self.peek(0) {
            match c {
                b'\n' => self.newline(),
                b'\\' if quote == b'"' => {
                    self.i += 1;
                    if self.peek(0) == Some(b'\n') {
                        self.newline();
                    } else {
                        self.i += 1;
                    }
                }
                b'\'' if quote == b'\'' && self.peek(1) == Some(b'\'') => self.i += 2,
                c if c == quote => {
                    self.i += 1;
                    return;
                }
                _ => self.i += 1,
            }
        }
    }

    /// Skip a word (an anchor, tag or alias) up to the next blank.
    fn skip_word(&mut self) {
        while !self.blank_at(0) {
            self.i += 1;
        }
    }

    /// At the start of a line: skip its indentation, and the whole line when it belongs
    /// to a block scalar.
    fn line_start(&mut self) {
        let mut indent = 0;
        while self.peek(indent) == Some(b' ') {
            indent += 1;
        }
        if let Some(parent) = self.block_scalar {
            let blank = matches!(self.peek(indent), None | Some(b'\n' | b'\r'));
            if blank || indent > parent {
                self.skip_line();
                return;
            }
            self.block_scalar = None;
        }
        self.i += indent;
        self.token_start = true;
        if self.depth == 0 {
            self.node_col = indent;
        }
    }

    fn run(mut self) -> Result<(), TooDeep> {
        let mut at_line_start = true;
        while let Some(c) = self.peek(0) {
            if at_line_start {
                at_line_start = false;
                self.line_start();
                continue;
            }
            if c == b'\n' {
                self.newline();
                at_line_start = true;
                continue;
            }
            let after_blank =
                self.i == self.line_start || matches!(self.b.get(self.i - 1), Some(b' ' | b'\t'));
            if c == b'#' && after_blank {
                self.skip_line();
                continue;
            }
            if self.depth > 0 {
                self.flow(c)?;
            } else {
                self.block(c);
            }
        }
        Ok(())
    }

    /// One byte in flow context, where every bracket outside quotes nests.
    fn flow(&mut self, c: u8) -> Result<(), TooDeep> {
        match c {
            b'[' | b'{' => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(self.too_deep());
                }
                self.token_start = true;
            }
            b']' | b'}' => {
                self.depth -= 1;
                self.token_start = false;
            }
            // Eager: a quote taken for an opening one skips text, which can only hide
            // brackets, never add some.
            b',' | b':' | b'?' | b' ' | b'\t' | b'\r' => self.token_start = true,
            b'"' | b'\'' if self.token_start => {
                self.skip_quoted(c);
                self.token_start = false;
                return Ok(());
            }
            _ => self.token_start = false,
        }
        self.i += 1;
        Ok(())
    }

    /// One byte in block context, where a bracket opens a flow collection only where a
    /// node starts (elsewhere it is text of a plain scalar).
    fn block(&mut self, c: u8) {
        if !self.token_start {
            if c == b':' && self.blank_at(1) {
                self.token_start = true;
            }
            self.i += 1;
            return;
        }
        match c {
            b'[' | b'{' => self.depth = 1,
            b'"' | b'\'' => {
                self.skip_quoted(c);
                self.token_start = false;
                return;
            }
            b'|' | b'>' => {
                self.block_scalar = Some(self.node_col);
                self.skip_line();
                return;
            }
            b'-' | b'.' if self.col() == 0 && self.b[self.i..].starts_with(&[c, c, c]) => {
                // `---` / `...`: document markers.
                if self.blank_at(3) {
                    self.i += 3;
                    return;
                }
                self.token_start = false;
            }
            b'-' | b'?' | b':' if self.blank_at(1) => {
                if c == b'-' {
                    self.node_col = self.col();
                }
            }
            b'&' | b'!' => {
                self.skip_word();
                return;
            }
            b'*' => {
                self.skip_word();
                self.token_start = false;
                return;
            }
            b'%' if self.col() == 0 => {
                self.skip_line();
                return;
            }
            b' ' | b'\t' | b'\r' => {}
            _ => {
                self.node_col = self.col();
                self.token_start = false;
            }
        }
        self.i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep(open: &str, close: &str, n: usize) -> String {
        format!("{}{}", open.repeat(n), close.repeat(n))
    }

    #[test]
    fn deep_flow_collections_are_refused_where_they_get_too_deep() {
        let text = format!("a: {}\n", deep("[", "]", 100_000));
        assert_eq!(
            check_yaml(&text),
            Err(TooDeep {
                line: 1,
                column: 4 + MAX_DEPTH
            })
        );
        let maps = format!("k: v\nx: {}1{}\n", "{a: ".repeat(200), "}".repeat(200));
        let err = check_yaml(&maps).unwrap_err();
        assert_eq!(err.line, 2);
        let lines = "[\n".repeat(200);
        assert_eq!(check_yaml(&lines).unwrap_err().line, MAX_DEPTH + 1);
        let json_like = format!("{}1{}", r#"{"a":"#.repeat(200), "}".repeat(200));
        assert!(check_yaml(&json_like).is_err());
        let unicode = format!("é: {}", "[".repeat(200));
        assert_eq!(check_yaml(&unicode).unwrap_err().column, 4 + MAX_DEPTH);
        assert_eq!(
            TooDeep { line: 3, column: 9 }.to_string(),
            "nested deeper than 128 levels at line 3 column 9"
        );
    }

    #[test]
    fn a_tagged_or_anchored_collection_still_counts() {
        let many = "[".repeat(500);
        assert!(check_yaml(&format!("l: !tag {many}\n")).is_err());
        assert!(check_yaml(&format!("l: &a {many}\n")).is_err());
        assert!(check_yaml(&format!("- - {many}\n")).is_err());
    }

    #[test]
    fn the_limit_itself_is_allowed() {
        assert_eq!(check_yaml(&deep("[", "]", MAX_DEPTH)), Ok(()));
        let twice = format!("a: {}\nb: {}\n", deep("[", "]", 100), deep("{", "}", 100));
        assert_eq!(check_yaml(&twice), Ok(()));
    }

    #[test]
    fn brackets_that_are_text_do_not_count() {
        let many = "[".repeat(500);
        let texts = [
            format!("k: \"{many}\"\n"),
            format!("k: '{many} it''s'\n"),
            format!("k: \"a\\\"{many}\"\n"),
            format!("k: |\n  {many}\n\n  {many}\nn: 1\n"),
            format!("- key: >-\n    {many}\n  other: 1\n"),
            format!("k: some {many} text\n"),
            format!("# {many}\nk: v # {many}\n"),
            format!("k: [\"{many}\", '{many}', x]\n"),
            format!("k: [a, b] {many}\n"),
            format!("k: a#{many}\n"),
            format!("k: \"multi\n  line {many}\"\n"),
            format!("--- |\n  {many}\n"),
            format!("k: &anchor [a]\nl: !tag text {many}\n"),
        ];
        for t in &texts {
            assert_eq!(check_yaml(t), Ok(()), "{t:?}");
        }
    }

    #[test]
    fn canvases_as_written_pass() {
        let canvas = "# a comment\ncomponents:\n  begin:\n    obj:\n      component_name: Begin\n      params: {inputs: {a: {type: line, options: [x, y]}}}\n    downstream: [\"Message:M\"]\n  Message:M:\n    obj: {component_name: Message, params: {content: [\"{begin@a} [done]\"]}}\n";
        assert_eq!(check_yaml(canvas), Ok(()));
        assert_eq!(check_yaml(""), Ok(()));
        assert_eq!(check_yaml("\u{feff}[a]"), Ok(()));
    }
}
