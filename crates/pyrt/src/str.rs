//! Python `str()`, `repr()` and type names of JSON values.

use serde_json::Value;

use crate::float::write_py_number;

/// Python `str(v)`: strings as they are, `None`, `True`, `1.0`, `['a', 1]`, `{'k': 1}`.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python `repr(v)`.
pub fn py_repr(v: &Value) -> String {
    let mut out = String::new();
    write_repr(v, &mut out);
    out
}

fn write_repr(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Number(n) => write_py_number(n, out),
        Value::String(s) => write_repr_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(x, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr_str(k, out);
                out.push_str(": ");
                write_repr(x, out);
            }
            out.push('}');
        }
    }
}

/// Python `repr(str)`: single quotes unless the text has `'` and no `"`.
pub fn py_repr_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_repr_str(s, &mut out);
    out
}

/// [`py_repr_str`], appended to `out`. The text between escapes is copied as it is, a
/// run at a time (a long answer's repr was a character at a time).
fn write_repr_str(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        b'"'
    } else {
        b'\''
    };
    out.reserve(s.len() + 2);
    out.push(char::from(quote));
    let bytes = s.as_bytes();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii() {
            let escape = match b {
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                b if b == quote && quote == b'"' => "\\\"",
                b if b == quote => "\\'",
                b if b < 0x20 || b == 0x7f => "",
                _ => {
                    i += 1;
                    continue;
                }
            };
            out.push_str(&s[copied..i]);
            if escape.is_empty() {
                push_hex_escape(u32::from(b), out);
            } else {
                out.push_str(escape);
            }
            i += 1;
            copied = i;
            continue;
        }
        // `i` is at a character boundary: ASCII bytes step by one, others by their length.
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        let next = i + c.len_utf8();
        if !printable(c) {
            out.push_str(&s[copied..i]);
            push_hex_escape(u32::from(c), out);
            copied = next;
        }
        i = next;
    }
    out.push_str(&s[copied..]);
    out.push(char::from(quote));
}

/// Python's `str.isprintable()` for a character outside ASCII: what `repr` leaves as
/// it is. Control, format, private-use, unassigned and separator characters (the
/// no-break space among them) are escaped.
fn printable(c: char) -> bool {
    use unicode_properties::{GeneralCategory as G, UnicodeGeneralCategory};
    !matches!(
        c.general_category(),
        G::Control
            | G::Format
            | G::Surrogate
            | G::PrivateUse
            | G::Unassigned
            | G::SpaceSeparator
            | G::LineSeparator
            | G::ParagraphSeparator
    )
}

/// `\xhh`, `\uhhhh` or `\Uhhhhhhhh`, as `repr` escapes a character (lower-case hex).
fn push_hex_escape(code: u32, out: &mut String) {
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let _ = match code {
        0..=0xff => write!(out, "\\x{code:02x}"),
        0x100..=0xffff => write!(out, "\\u{code:04x}"),
        _ => write!(out, "\\U{code:08x}"),
    };
}

/// Python type name as `str(type(v))` prints it.
pub fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<class 'NoneType'>",
        Value::Bool(_) => "<class 'bool'>",
        Value::Number(n) if n.is_f64() => "<class 'float'>",
        Value::Number(_) => "<class 'int'>",
        Value::String(_) => "<class 'str'>",
        Value::Array(_) => "<class 'list'>",
        Value::Object(_) => "<class 'dict'>",
    }
}

/// Python's type name, as `type(v).__name__` gives it (`int`, `str`, `NoneType`, ...).
pub fn py_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Python `str.isspace()` for one character (Unicode white space and the separators
/// `\x1c`..`\x1f`).
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python `str.strip()` without arguments.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// Python `str.swapcase()`: upper case to lower (a capital sigma to a final `ς` where
/// Unicode's rule says, as `str.lower` does) and lower case to upper, by the full
/// mappings (`ß` to `SS`).
pub fn py_swapcase(s: &str) -> String {
    // The whole text lowered once gives each capital sigma its form in context; every
    // other character lowers alone, to as many characters as `char::to_lowercase`.
    let lowered: Vec<char> = s.to_lowercase().chars().collect();
    let mut at = 0;
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let n = c.to_lowercase().count();
        if c.is_uppercase() {
            out.extend(lowered.get(at..at + n).into_iter().flatten());
        } else if c.is_lowercase() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        at += n;
    }
    out
}

/// Python `str.istitle()`: at least one cased character, upper and title case ones
/// only after uncased ones, lower case ones only after cased ones.
pub fn py_istitle(s: &str) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    let (mut cased, mut previous_cased) = (false, false);
    for c in s.chars() {
        if c.is_uppercase() || c.general_category() == GeneralCategory::TitlecaseLetter {
            if previous_cased {
                return false;
            }
            (cased, previous_cased) = (true, true);
        } else if c.is_lowercase() {
            if !previous_cased {
                return false;
            }
            (cased, previous_cased) = (true, true);
        } else {
            previous_cased = false;
        }
    }
    cased
}

/// Python `str.isdecimal()`: not empty, and every character a decimal digit of some
/// script (Unicode category Nd).
pub fn py_isdecimal(s: &str) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    !s.is_empty()
        && s.chars()
            .all(|c| c.general_category() == GeneralCategory::DecimalNumber)
}

/// Python `str.expandtabs(tabsize)`: each tab to the spaces that reach the next
/// multiple of `tabsize` (none when it is 0), columns counted in characters from the
/// last line break.
pub fn py_expandtabs(s: &str, tabsize: usize) -> String {
    let mut out = String::with_capacity(s.len());
    let mut column = 0;
    for c in s.chars() {
        match c {
            '\t' => {
                if tabsize > 0 {
                    let n = tabsize - column % tabsize;
                    out.extend(std::iter::repeat_n(' ', n));
                    column += n;
                }
            }
            '\n' | '\r' => {
                out.push(c);
                column = 0;
            }
            c => {
                out.push(c);
                column += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn str_matches_python() {
        assert_eq!(py_str(&json!({"a": 1})), "{'a': 1}");
        assert_eq!(py_str(&json!(["a", 1])), "['a', 1]");
        assert_eq!(py_str(&json!(true)), "True");
        assert_eq!(py_str(&json!(1.0)), "1.0");
        assert_eq!(py_str(&Value::Null), "None");
        assert_eq!(py_str(&json!("it's")), "it's");
        assert_eq!(py_repr(&json!(["it's"])), "[\"it's\"]");
        assert_eq!(py_repr(&json!(["a\nb"])), "['a\\nb']");
    }

    /// What CPython gives for these.
    #[test]
    fn case_and_tab_methods_match_python() {
        for (s, swapped, title) in [
            ("ΣΑΣ ΟΔΟΣ.", "σας οδος.", false),
            ("ǅemal", "ǅEMAL", true),
            ("İstanbul", "i\u{307}STANBUL", true),
            ("Straße", "sTRASSE", true),
            ("Hello World", "hELLO wORLD", true),
            ("Hello world", "hELLO WORLD", false),
            ("ΑΣ'Σ", "ασ'ς", false),
            ("", "", false),
        ] {
            assert_eq!(py_swapcase(s), swapped, "{s}");
            assert_eq!(py_istitle(s), title, "{s}");
        }
        for (s, decimal) in [
            ("١٢٣", true),
            ("１２", true),
            ("123", true),
            ("", false),
            ("½", false),
            ("²", false),
            ("1.5", false),
        ] {
            assert_eq!(py_isdecimal(s), decimal, "{s}");
        }
        assert_eq!(py_expandtabs("a\tb\tc", 8), "a       b       c");
        assert_eq!(py_expandtabs("\tx\n\ty", 4), "    x\n    y");
        assert_eq!(py_expandtabs("ab\tc", 0), "abc");
    }

    #[test]
    fn strip_matches_python() {
        assert_eq!(py_strip("\u{1c} a b\u{a0}\u{3000}\n"), "a b");
        assert_eq!(py_strip("\u{200b}x"), "\u{200b}x");
    }

    /// What CPython's `repr` prints for these strings and values.
    #[test]
    fn repr_quotes_and_escapes_as_python_does() {
        let cases = [
            ("plain", r"'plain'"),
            ("it's", r#""it's""#),
            (r#"say "hi""#, r#"'say "hi"'"#),
            (r#"it's "x""#, r#"'it\'s "x"'"#),
            ("a\\b\n\r\t\u{0}\u{1f}\u{7f} ", r"'a\\b\n\r\t\x00\x1f\x7f '"),
            ("日本語 é", "'日本語 é'"),
            ("\t日\n", r"'\t日\n'"),
            ("", "''"),
            // Not printable outside ASCII: no-break space, a C1 control, zero-width
            // space, line separator, private use, a tag character; printable ones stay.
            ("a\u{a0}b\u{85}", r"'a\xa0b\x85'"),
            ("\u{200b}\u{2028}\u{3000}", r"'\u200b\u2028\u3000'"),
            ("\u{e000}\u{e0001}é\u{1f600}", r"'\ue000\U000e0001é😀'"),
        ];
        for (s, want) in cases {
            assert_eq!(py_repr_str(s), want, "{s:?}");
        }
        let v = json!({"k'": ["x", 1, null, true, 1.5], "n": {"a\n": "b"}});
        assert_eq!(
            py_repr(&v),
            r#"{"k'": ['x', 1, None, True, 1.5], 'n': {'a\n': 'b'}}"#
        );
    }
}
