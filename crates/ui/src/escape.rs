//! Text from outside (queries, model answers, component errors, canvas fields) made
//! safe to write to a terminal: a control character in it would be obeyed, not shown
//! (`ESC [ 2 J` clears the screen, OSC sequences set the title or write links, a
//! carriage return overwrites the line). Only human text output needs this: JSON
//! escapes control characters itself.

use std::borrow::Cow;

/// `text` with its control characters made visible: C0 controls in caret notation
/// (`^[` for ESC, `^M` for a lone carriage return, `^?` for DEL), C1 controls and the
/// bidirectional overrides that reorder what is shown as `\u{…}`. Line feeds and tabs
/// stay, and so does a carriage return before a line feed (Windows line ends).
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => out.push('\r'),
            c if !needs_escape(c) => out.push(c),
            '\x7f' => out.push_str("^?"),
            c if u32::from(c) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    Cow::Owned(out)
}

/// Whether `c` must not reach a terminal as it is.
fn needs_escape(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Bidirectional embeddings, overrides and isolates: text shown in another order
        // than it is.
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::visible;

    #[test]
    fn controls_are_shown_not_obeyed() {
        assert_eq!(visible("plain text, ünïcode"), "plain text, ünïcode");
        assert!(matches!(visible("a\nb\tc"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(visible("\x1b[2J\x1b]0;pwned\x07"), "^[[2J^[]0;pwned^G");
        assert_eq!(visible("done\rfake"), "done^Mfake");
        assert_eq!(visible("line\r\nnext"), "line\r\nnext");
        assert_eq!(visible("end\r"), "end^M");
        assert_eq!(visible("\0\x08\x7f"), "^@^H^?");
        assert_eq!(visible("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(visible("abc\u{202e}fed"), "abc\\u{202e}fed");
    }
}
