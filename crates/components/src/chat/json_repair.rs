//! Lenient JSON for model answers, in the spirit of Python's `json_repair` (which RAGFlow
//! uses for every JSON the model writes): models wrap JSON in prose and code fences, use
//! Python literals, single quotes and trailing commas, or stop mid-value.

use serde_json::{Map, Number, Value};

/// Drops reasoning, an opening ```` ```json ```` fence and a closing ```` ``` ```` fence
/// from a structured answer, as RAGFlow does before parsing it.
pub fn clean_structured_answer(text: &str) -> String {
    let mut s = text;
    if let Some(i) = s.rfind("</think>") {
        s = &s[i + "</think>".len()..];
    }
    if let Some(i) = s.rfind("```json") {
        s = &s[i + "```json".len()..];
    }
    let trimmed = s.trim_end();
    if let Some(body) = trimmed.strip_suffix("```") {
        s = body;
    }
    s.trim().to_string()
}

/// Parses a model's JSON leniently; `None` only when nothing JSON-like can be recovered.
pub fn parse_lenient(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Some(v);
    }
    if let Some(start) = text.find(['{', '[']) {
        let mut p = Parser::new(&text[start..]);
        return p.parse_value(0);
    }
    // No object or array: accept a lone scalar (a quoted string, a number, a literal).
    let t = text.trim();
    let first = t.chars().next()?;
    let mut p = Parser::new(t);
    match first {
        '"' | '\'' => p.parse_value(0),
        _ => match p.parse_value(0)? {
            v @ (Value::Number(_) | Value::Bool(_) | Value::Null) if p.rest_is_blank() => Some(v),
            _ => None,
        },
    }
}

/// Deeper nesting than this is skipped rather than recursed into (stack safety).
const MAX_DEPTH: usize = 256;

/// A recursive-descent parser that never fails: it closes what is left open at the end
/// and skips what it cannot use.
struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn new(text: &str) -> Parser {
        Parser {
            chars: text.chars().collect(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn rest_is_blank(&mut self) -> bool {
        self.skip_blank();
        self.peek().is_none()
    }

    /// Skips whitespace and `//`, `/* */` and `#` comments.
    fn skip_blank(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.pos += 1;
            } else if c == '#' || (c == '/' && self.peek_at(1) == Some('/')) {
                while let Some(c) = self.peek() {
                    if c == '\n' {
                        break;
                    }
                    self.pos += 1;
                }
            } else if c == '/' && self.peek_at(1) == Some('*') {
                self.pos += 2;
                while self.peek().is_some() {
                    if self.peek() == Some('*') && self.peek_at(1) == Some('/') {
                        self.pos += 2;
                        break;
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// A value, or `None` at the end of the text or a closing delimiter.
    fn parse_value(&mut self, depth: usize) -> Option<Value> {
        self.skip_blank();
        let c = self.peek()?;
        match c {
            '{' | '[' if depth >= MAX_DEPTH => None,
            '{' => Some(self.parse_object(depth + 1)),
            '[' => Some(self.parse_array(depth + 1)),
            '"' | '\'' => Some(Value::String(self.parse_string(c))),
            '}' | ']' | ',' | ':' => None,
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => {
                Some(self.parse_number())
            }
            _ => Some(self.parse_bare_word()),
        }
    }

    fn parse_object(&mut self, depth: usize) -> Value {
        self.pos += 1; // '{'
        let mut map = Map::new();
        loop {
            self.skip_blank();
            let before = self.pos;
            match self.peek() {
                None => break,
                Some('}') => {
                    self.pos += 1;
                    break;
                }
                // A mismatched close ends the object; the enclosing array takes it.
                Some(']') => break,
                Some(',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
            }
            let Some(key) = self.parse_key() else {
                if self.pos == before {
                    self.pos += 1;
                }
                continue;
            };
            self.skip_blank();
            if self.peek() == Some(':') {
                self.pos += 1;
            }
            self.skip_blank();
            // A missing value becomes "" (as json_repair does).
            let value = match self.peek() {
                None | Some(',') | Some('}') | Some(']') => Value::String(String::new()),
                Some(_) => self
                    .parse_value(depth)
                    .unwrap_or(Value::String(String::new())),
            };
            map.insert(key, value);
            if self.pos == before {
                self.pos += 1;
            }
        }
        Value::Object(map)
    }

    /// An object key: quoted, or a bare word up to the colon.
    fn parse_key(&mut self) -> Option<String> {
        let c = self.peek()?;
        if c == '"' || c == '\'' {
            return Some(self.parse_string(c));
        }
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c == ':' || c == ',' || c == '{' || c == '}' || c == '[' || c == ']' {
                break;
            }
            self.pos += 1;
        }
        let key: String = self.chars[start..self.pos].iter().collect();
        let key = key.trim();
        if key.is_empty() {
            None
        } else {
            Some(key.to_string())
        }
    }

    fn parse_array(&mut self, depth: usize) -> Value {
        self.pos += 1; // '['
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            let before = self.pos;
            match self.peek() {
                None => break,
                Some(']') => {
                    self.pos += 1;
                    break;
                }
                // A mismatched close ends the array; the enclosing object takes it.
                Some('}') => break,
                Some(',') | Some(':') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
            }
            if let Some(v) = self.parse_value(depth) {
                items.push(v);
            }
            if self.pos == before {
                self.pos += 1;
            }
        }
        Value::Array(items)
    }

    /// A string in `quote`; an unclosed one ends with the text. Raw newlines are kept.
    fn parse_string(&mut self, quote: char) -> String {
        self.pos += 1; // opening quote
        let mut out = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == quote {
                return out;
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.peek() else {
                break;
            };
            self.pos += 1;
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'u' => out.push_str(&self.parse_unicode_escape()),
                '"' | '\'' | '\\' | '/' => out.push(e),
                // An unknown escape is kept as written (Windows paths, regexes).
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
        out
    }

    /// The rest of a `\u` escape (surrogate pairs joined); bad escapes are kept as text.
    fn parse_unicode_escape(&mut self) -> String {
        let Some(hi) = self.hex4() else {
            return "\\u".to_string();
        };
        if (0xD800..0xDC00).contains(&hi)
            && self.peek() == Some('\\')
            && self.peek_at(1) == Some('u')
        {
            let save = self.pos;
            self.pos += 2;
            if let Some(lo) = self.hex4().filter(|lo| (0xDC00..0xE000).contains(lo)) {
                let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                if let Some(c) = char::from_u32(code) {
                    return c.to_string();
                }
            }
            self.pos = save;
        }
        char::from_u32(hi).map_or_else(|| '\u{FFFD}'.to_string(), |c| c.to_string())
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits: String = self.chars.get(self.pos..self.pos + 4)?.iter().collect();
        let v = u32::from_str_radix(&digits, 16).ok()?;
        if !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += 4;
        Some(v)
    }

    /// A number; something like `12px` becomes a string.
    fn parse_number(&mut self) -> Value {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E') {
                self.pos += 1;
            } else {
                break;
            }
        }
        if self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.pos = start;
            return self.parse_bare_word();
        }
        let token: String = self.chars[start..self.pos].iter().collect();
        number(&token).unwrap_or(Value::String(token))
    }

    /// An unquoted value: a Python/JSON literal, or else the text up to the next
    /// delimiter as a string.
    fn parse_bare_word(&mut self) -> Value {
        let start = self.pos;
        while let Some(c) = self.peek() {
            let comment = c == '/' && matches!(self.peek_at(1), Some('/' | '*'));
            if matches!(c, ',' | '}' | ']' | '\n') || comment {
                break;
            }
            self.pos += 1;
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        let word = word.trim();
        match word {
            "true" | "True" | "TRUE" => Value::Bool(true),
            "false" | "False" | "FALSE" => Value::Bool(false),
            "null" | "None" | "NULL" | "none" => Value::Null,
            _ => Value::String(word.to_string()),
        }
    }
}

/// A JSON number from a lenient token (`+1`, `1.`, `.5` accepted).
fn number(token: &str) -> Option<Value> {
    if let Ok(v @ Value::Number(_)) = serde_json::from_str::<Value>(token) {
        return Some(v);
    }
    let t = token.strip_prefix('+').unwrap_or(token);
    if let Ok(i) = t.parse::<i64>() {
        return Some(Value::Number(i.into()));
    }
    let f = t.parse::<f64>().ok()?;
    Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Value {
        parse_lenient(s).unwrap_or_else(|| panic!("no value from {s:?}"))
    }

    #[test]
    fn clean_drops_think_and_fences() {
        let s = "<think>hmm ```json no</think>\nSure:\n```json\n{\"a\": 1}\n```\n\n";
        assert_eq!(clean_structured_answer(s), "{\"a\": 1}");
        assert_eq!(clean_structured_answer("{\"a\": 1}"), "{\"a\": 1}");
        assert_eq!(clean_structured_answer("```json\n[1]\n``` \n"), "[1]");
        // Only the last fence opener counts.
        assert_eq!(clean_structured_answer("```json a ```json\n{}\n```"), "{}");
    }

    #[test]
    fn valid_json_round_trips() {
        let s = r#"{"z": 1, "a": [true, null, 2.5, "x\n\"y\""], "m": {"b": {}, "a": []}}"#;
        let v = p(s);
        assert_eq!(
            v.to_string(),
            serde_json::from_str::<Value>(s).unwrap().to_string()
        );
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["z", "a", "m"]);
        assert_eq!(p("\"just a string\""), json!("just a string"));
        assert_eq!(p("42"), json!(42));
    }

    #[test]
    fn repairs_single_quotes() {
        assert_eq!(
            p("{'a': 'it\\'s', 'b': \"x\"}"),
            json!({"a": "it's", "b": "x"})
        );
    }

    #[test]
    fn repairs_unquoted_keys_and_values() {
        assert_eq!(
            p("{name: Alice Smith, age: 30}"),
            json!({"name": "Alice Smith", "age": 30})
        );
    }

    #[test]
    fn repairs_trailing_commas() {
        assert_eq!(
            p("{\"a\": [1, 2,], \"b\": 3,}"),
            json!({"a": [1, 2], "b": 3})
        );
    }

    #[test]
    fn repairs_python_literals() {
        assert_eq!(
            p("{'ok': True, 'bad': False, 'none': None}"),
            json!({"ok": true, "bad": false, "none": null})
        );
    }

    #[test]
    fn repairs_comments() {
        let s = "{\n  // the name\n  \"a\": 1, /* inline */ \"b\": 2 # py\n}";
        assert_eq!(p(s), json!({"a": 1, "b": 2}));
        assert_eq!(p("{\"a\": true // c\n}"), json!({"a": true}));
    }

    #[test]
    fn closes_what_is_left_open() {
        assert_eq!(p("{\"a\": \"hello"), json!({"a": "hello"}));
        assert_eq!(p("{\"a\": [1, {\"b\": 2"), json!({"a": [1, {"b": 2}]}));
        assert_eq!(p("[1, 2"), json!([1, 2]));
        assert_eq!(p("{\"a\":"), json!({"a": ""}));
    }

    #[test]
    fn keeps_raw_newlines_in_strings() {
        assert_eq!(p("{\"a\": \"line1\nline2\"}"), json!({"a": "line1\nline2"}));
    }

    #[test]
    fn ignores_text_around_the_value() {
        assert_eq!(
            p("Here you go:\n```json\n{\"a\": 1}\n```\nHope it helps {x}"),
            json!({"a": 1})
        );
        assert_eq!(p("{\"a\": 1} {\"b\": 2}"), json!({"a": 1}));
    }

    #[test]
    fn mismatched_closers_end_containers() {
        assert_eq!(p("{\"a\": [1, 2}"), json!({"a": [1, 2]}));
        assert_eq!(p("[{\"a\": 1]"), json!([{"a": 1}]));
    }

    #[test]
    fn numbers_are_lenient() {
        assert_eq!(
            p("[+1, 1., .5, -2e3, 12px]"),
            json!([1, 1.0, 0.5, -2000.0, "12px"])
        );
        assert!(p("{\"big\": 123456789012345678901234}")["big"].is_number());
    }

    #[test]
    fn unicode_escapes() {
        assert_eq!(
            p("{'a': '\\u00e9\\ud83d\\ude00', 'b': '\\x'}"),
            json!({"a": "é😀", "b": "\\x"})
        );
        assert_eq!(p("{'a': '\\u12'}"), json!({"a": "\\u12"}));
    }

    #[test]
    fn scalars_without_container() {
        assert_eq!(p("'single'"), json!("single"));
        assert_eq!(p("  True "), json!(true));
        assert_eq!(p("None"), json!(null));
        assert_eq!(p(" -3.5 "), json!(-3.5));
        assert_eq!(parse_lenient("no json here"), None);
        assert_eq!(parse_lenient(""), None);
        assert_eq!(parse_lenient("   "), None);
        assert_eq!(parse_lenient("42 apples"), None);
    }

    #[test]
    fn never_panics_or_hangs() {
        let deep = "[".repeat(10_000);
        assert!(parse_lenient(&deep).is_some());
        let odd = [
            "{",
            "[",
            "{:}",
            "{,,,}",
            "[,:,]",
            "{'a'",
            "{\"a\\",
            "{a b c}",
            "{]}",
            "[}]",
            "{\"é\": 'ü🙂'}",
            "{/*",
            "{#",
            "[1 2 3]",
            "{\"a\" 1}",
            "{'\\u'}",
            "{{{}}}",
        ];
        for s in odd {
            let _ = parse_lenient(s);
        }
        assert_eq!(p("[1 2 3]"), json!([1, 2, 3]));
        assert_eq!(p("{\"a\" 1}"), json!({"a": 1}));
    }
}
