//! How a run reports `main()`'s return value (RAGFlow's `result_protocol.py`): the
//! program wrappers, the result marker line `__RAGFLOW_RESULT__:<base64 JSON envelope>`,
//! and the fallbacks when there is no marker (stdout as JSON, then as a Python literal,
//! then as text).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Number, Value};

use canvas_pyrt::py_float;

/// The prefix of the line carrying the structured result.
pub const RESULT_MARKER: &str = "__RAGFLOW_RESULT__:";

/// The file the wrappers read `main`'s arguments from (beside the program). RAGFlow's
/// local provider pastes the JSON into the source instead, where `null`, `true` and
/// `false` are not Python.
pub const ARGS_FILE: &str = "args.json";

/// The Python program: the code, then a call of `main(**arguments)` printing the
/// result marker. The code comes first so tracebacks keep its line numbers.
pub fn python_program(code: &str) -> String {
    format!(
        r#"{code}


if __name__ == "__main__":
    import base64 as __rf_base64
    import json as __rf_json
    import os as __rf_os

    with open(__rf_os.path.join(__rf_os.path.dirname(__rf_os.path.abspath(__file__)), "{ARGS_FILE}"), encoding="utf-8") as __rf_file:
        __rf_args = __rf_json.load(__rf_file)
    __rf_result = main(**__rf_args)
    __rf_payload = __rf_json.dumps({{"present": True, "value": __rf_result, "type": "json"}}, ensure_ascii=False, separators=(",", ":"))
    print("{RESULT_MARKER}" + __rf_base64.b64encode(__rf_payload.encode("utf-8")).decode("ascii"))
"#
    )
}

/// The JavaScript program: the code, then `main(args)` (declared or exported), awaited,
/// printing the result marker. An error or a missing value ends with a non-zero status.
pub fn javascript_program(code: &str) -> String {
    format!(
        r#"{code}

;(async () => {{
  const __rfArgs = JSON.parse(require('fs').readFileSync(require('path').join(__dirname, '{ARGS_FILE}'), 'utf8'));
  const __rfMain = typeof main !== 'undefined' ? main : (module.exports && module.exports.main);
  if (typeof __rfMain !== 'function') {{
    throw new Error('main() must be defined or exported.');
  }}
  const __rfOutput = await Promise.resolve(__rfMain(__rfArgs));
  if (typeof __rfOutput === 'undefined') {{
    throw new Error('main() must return a value. Use null for an empty result.');
  }}
  const __rfPayload = JSON.stringify({{ present: true, value: __rfOutput, type: 'json' }});
  if (typeof __rfPayload === 'undefined') {{
    throw new Error('main() returned a non-JSON-serializable value.');
  }}
  console.log('{RESULT_MARKER}' + Buffer.from(__rfPayload, 'utf8').toString('base64'));
}})();
"#
    )
}

/// Split the marker line out of stdout: the remaining text (RAGFlow's
/// `extract_structured_result`) and `main()`'s value when the envelope says it is
/// present (`Some(Null)` for a `None` result). Undecodable marker lines stay in the text.
pub fn extract_result(stdout: &str) -> (String, Option<Value>) {
    let mut kept: Vec<&str> = Vec::new();
    let mut envelope: Option<Value> = None;
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix(RESULT_MARKER) else {
            kept.push(line);
            continue;
        };
        let decoded = STANDARD
            .decode(rest.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| serde_json::from_str::<Value>(&s).ok());
        match decoded {
            Some(v) if !rest.trim().is_empty() => envelope = Some(v),
            _ => kept.push(line),
        }
    }
    let mut text = kept.join("\n");
    if stdout.ends_with('\n') && !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let value = envelope.and_then(|e| match e {
        Value::Object(mut o) if o.get("present") == Some(&Value::Bool(true)) => {
            Some(o.remove("value").unwrap_or(Value::Null))
        }
        _ => None,
    });
    (text, value)
}

/// RAGFlow's `_deserialize_stdout`: the stripped text as JSON, else as a Python
/// literal, else the text itself (`""` when empty).
pub fn deserialize_stdout(stdout: &str) -> Value {
    let text = stdout.trim();
    if text.is_empty() {
        return Value::String(String::new());
    }
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return v;
    }
    if let Some(v) = literal_eval(text) {
        return v;
    }
    Value::String(text.to_string())
}

/// Python's `ast.literal_eval` for the values JSON can hold: strings, numbers,
/// `True`/`False`/`None`, lists, tuples (as lists) and dicts. Bytes, sets, complex
/// numbers and anything else give `None`.
pub fn literal_eval(text: &str) -> Option<Value> {
    let mut p = Lit {
        c: text.chars().collect(),
        i: 0,
        depth: 0,
    };
    p.ws();
    let first = p.value()?;
    p.ws();
    let v = if p.eat(',') {
        // `1, 2` at the top is a tuple.
        let mut items = vec![first];
        loop {
            p.ws();
            if p.peek().is_none() {
                break;
            }
            items.push(p.value()?);
            p.ws();
            if !p.eat(',') {
                break;
            }
        }
        Value::Array(items)
    } else {
        first
    };
    p.ws();
    p.peek().is_none().then_some(v)
}

/// Nesting beyond this is refused (the parser recurses).
const MAX_DEPTH: usize = 256;

/// A cursor over a Python literal.
struct Lit {
    c: Vec<char>,
    i: usize,
    depth: usize,
}

impl Lit {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<char> {
        self.c.get(self.i + k).copied()
    }

    fn eat(&mut self, ch: char) -> bool {
        if self.peek() == Some(ch) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// White space, comments and line continuations.
    fn ws(&mut self) {
        while let Some(ch) = self.peek() {
            match ch {
                ' ' | '\t' | '\n' | '\r' | '\x0c' => self.i += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.i += 2,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        let v = match self.peek()? {
            '[' => {
                self.i += 1;
                Value::Array(self.items(']')?.0)
            }
            '(' => {
                self.i += 1;
                let (items, comma) = self.items(')')?;
                match (items.len(), comma) {
                    (1, false) => items.into_iter().next()?,
                    _ => Value::Array(items),
                }
            }
            '{' => {
                self.i += 1;
                self.dict()?
            }
            '-' | '+' => {
                let neg = self.peek() == Some('-');
                self.i += 1;
                self.ws();
                self.number(neg)?
            }
            c if c.is_ascii_digit() || (c == '.' && self.peek_at(1)?.is_ascii_digit()) => {
                self.number(false)?
            }
            '\'' | '"' => self.strings()?,
            c if c.is_alphabetic() || c == '_' => self.name()?,
            _ => return None,
        };
        self.depth -= 1;
        Some(v)
    }

    /// Comma-separated values up to `close`; also says whether a comma was seen.
    fn items(&mut self, close: char) -> Option<(Vec<Value>, bool)> {
        let mut items = Vec::new();
        let mut comma = false;
        loop {
            self.ws();
            if self.eat(close) {
                return Some((items, comma));
            }
            items.push(self.value()?);
            self.ws();
            if self.eat(',') {
                comma = true;
            } else if self.eat(close) {
                return Some((items, comma));
            } else {
                return None;
            }
        }
    }

    fn dict(&mut self) -> Option<Value> {
        let mut map = Map::new();
        loop {
            self.ws();
            if self.eat('}') {
                return Some(Value::Object(map));
            }
            let key = dict_key(self.value()?)?;
            self.ws();
            // `{1, 2}` is a set: not representable.
            if !self.eat(':') {
                return None;
            }
            let v = self.value()?;
            map.insert(key, v);
            self.ws();
            if !self.eat(',') {
                self.ws();
                return self.eat('}').then_some(Value::Object(map));
            }
        }
    }

    /// `True`, `False`, `None`, or a prefixed string (`r'..'`, `u".."`).
    fn name(&mut self) -> Option<Value> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.i += 1;
        }
        let word: String = self.c[start..self.i].iter().collect();
        if matches!(self.peek(), Some('\'' | '"')) {
            self.i = start;
            return self.strings();
        }
        match word.as_str() {
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            "None" => Some(Value::Null),
            _ => None,
        }
    }

    /// One or more adjacent string literals, concatenated.
    fn strings(&mut self) -> Option<Value> {
        let mut out = String::new();
        loop {
            out.push_str(&self.string()?);
            let save = self.i;
            self.ws();
            let next_is_string = match self.peek() {
                Some('\'' | '"') => true,
                Some(c) if c.is_alphabetic() => {
                    let mut k = 0;
                    while self.peek_at(k).is_some_and(|c| c.is_alphabetic()) {
                        k += 1;
                    }
                    matches!(self.peek_at(k), Some('\'' | '"'))
                }
                _ => false,
            };
            if !next_is_string {
                self.i = save;
                return Some(Value::String(out));
            }
        }
    }

    /// One string literal with an optional `r`/`u` prefix (bytes and f-strings refused).
    fn string(&mut self) -> Option<String> {
        let mut raw = false;
        let mut prefix = String::new();
        while let Some(c) = self.peek().filter(|c| c.is_alphabetic()) {
            prefix.push(c.to_ascii_lowercase());
            self.i += 1;
        }
        match prefix.as_str() {
            "" | "u" => {}
            "r" => raw = true,
            _ => return None,
        }
        let quote = self.peek()?;
        if quote != '\'' && quote != '"' {
            return None;
        }
        let triple = self.peek_at(1) == Some(quote) && self.peek_at(2) == Some(quote);
        self.i += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let ch = self.peek()?;
            if ch == quote {
                if !triple {
                    self.i += 1;
                    return Some(out);
                }
                if self.peek_at(1) == Some(quote) && self.peek_at(2) == Some(quote) {
                    self.i += 3;
                    return Some(out);
                }
                out.push(ch);
                self.i += 1;
                continue;
            }
            if ch == '\n' && !triple {
                return None;
            }
            if ch != '\\' {
                out.push(ch);
                self.i += 1;
                continue;
            }
            // A backslash.
            let next = self.peek_at(1)?;
            self.i += 2;
            if raw {
                out.push('\\');
                out.push(next);
                continue;
            }
            match next {
                '\n' => {}
                '\\' => out.push('\\'),
                '\'' => out.push('\''),
                '"' => out.push('"'),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'v' => out.push('\x0b'),
                '0'..='7' => {
                    let mut n = next.to_digit(8)?;
                    for _ in 0..2 {
                        match self.peek().and_then(|c| c.to_digit(8)) {
                            Some(d) => {
                                n = n * 8 + d;
                                self.i += 1;
                            }
                            None => break,
                        }
                    }
                    out.push(char::from_u32(n)?);
                }
                'x' => out.push(self.hex_escape(2)?),
                'u' => out.push(self.hex_escape(4)?),
                'U' => out.push(self.hex_escape(8)?),
                // `\N{name}` needs the Unicode name table.
                'N' => return None,
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }

    fn hex_escape(&mut self, n: usize) -> Option<char> {
        let digits: String = self.c.get(self.i..self.i + n)?.iter().collect();
        if !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.i += n;
        char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
    }

    /// An int or float literal (underscores between digits, `0x`/`0o`/`0b`).
    fn number(&mut self, neg: bool) -> Option<Value> {
        let start = self.i;
        let radix = match (self.peek(), self.peek_at(1).map(|c| c.to_ascii_lowercase())) {
            (Some('0'), Some('x')) => 16,
            (Some('0'), Some('o')) => 8,
            (Some('0'), Some('b')) => 2,
            _ => 10,
        };
        let is_digit = |c: char| c.is_digit(radix) || c == '_';
        if radix != 10 {
            self.i += 2;
            let ds = self.i;
            while self.peek().is_some_and(is_digit) {
                self.i += 1;
            }
            let body: String = self.c[ds..self.i].iter().collect();
            if self.peek().is_some_and(|c| c.is_alphanumeric()) {
                return None;
            }
            let digits = underscores_ok(body.strip_prefix('_').unwrap_or(&body))?;
            let n = i128::from_str_radix(&digits, radix).ok()?;
            return int_value(if neg { -n } else { n });
        }
        let mut float = false;
        while self.peek().is_some_and(is_digit) {
            self.i += 1;
        }
        if self.peek() == Some('.') {
            float = true;
            self.i += 1;
            while self.peek().is_some_and(is_digit) {
                self.i += 1;
            }
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            float = true;
            self.i += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.i += 1;
            }
            while self.peek().is_some_and(is_digit) {
                self.i += 1;
            }
        }
        // `1j` (complex) and `1abc` are not representable / not literals.
        if self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let text: String = self.c[start..self.i].iter().collect();
        if float {
            let cleaned = text.replace('_', "");
            // Underscores only between digits.
            for part in text.split(['.', 'e', 'E', '+', '-']) {
                if !part.is_empty() {
                    underscores_ok(part)?;
                }
            }
            let f: f64 = cleaned.parse().ok()?;
            return Number::from_f64(if neg { -f } else { f }).map(Value::Number);
        }
        let digits = underscores_ok(&text)?;
        if digits.len() > 1 && digits.starts_with('0') && digits.chars().any(|c| c != '0') {
            return None;
        }
        match digits.parse::<i128>() {
            Ok(n) => int_value(if neg { -n } else { n }),
            // Beyond i128: Python keeps it exact; JSON numbers here are floats.
            Err(_) => {
                let f: f64 = digits.parse().ok()?;
                Number::from_f64(if neg { -f } else { f }).map(Value::Number)
            }
        }
    }
}

/// The digits of a literal without its underscores, `None` when an underscore is not
/// between two digits.
fn underscores_ok(s: &str) -> Option<String> {
    if s.is_empty() || s.starts_with('_') || s.ends_with('_') || s.contains("__") {
        return None;
    }
    Some(s.replace('_', ""))
}

fn int_value(n: i128) -> Option<Value> {
    if let Ok(i) = i64::try_from(n) {
        Some(Value::from(i))
    } else if let Ok(u) = u64::try_from(n) {
        Some(Value::from(u))
    } else {
        Number::from_f64(n as f64).map(Value::Number)
    }
}

/// A dict key as `json.dumps` writes it (`1` → `"1"`, `True` → `"true"`).
fn dict_key(k: Value) -> Option<String> {
    match k {
        Value::String(s) => Some(s),
        Value::Bool(b) => Some(if b { "true" } else { "false" }.into()),
        Value::Null => Some("null".into()),
        Value::Number(n) => Some(match n.as_f64() {
            Some(f) if n.is_f64() => py_float(f),
            _ => n.to_string(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn marker(envelope: &Value) -> String {
        format!("{RESULT_MARKER}{}", STANDARD.encode(envelope.to_string()))
    }

    #[test]
    fn marker_line_is_taken_out_of_stdout() {
        let line = marker(&json!({"present": true, "value": {"a": [1, 2]}, "type": "json"}));
        let (text, v) = extract_result(&format!("hello\n{line}\nbye\n"));
        assert_eq!(text, "hello\nbye\n");
        assert_eq!(v, Some(json!({"a": [1, 2]})));
    }

    #[test]
    fn a_none_result_is_present_and_null() {
        let line = marker(&json!({"present": true, "value": null, "type": "json"}));
        assert_eq!(extract_result(&line), (String::new(), Some(Value::Null)));
    }

    #[test]
    fn bad_or_absent_markers_stay_in_stdout() {
        let (text, v) = extract_result("__RAGFLOW_RESULT__:not base64!\n42\n");
        assert_eq!(text, "__RAGFLOW_RESULT__:not base64!\n42\n");
        assert_eq!(v, None);
        let (text, v) = extract_result("__RAGFLOW_RESULT__:\n");
        assert_eq!((text.as_str(), v), ("__RAGFLOW_RESULT__:\n", None));
        // An envelope without `present: true` is no result.
        let line = marker(&json!({"present": false, "value": 1}));
        assert_eq!(extract_result(&line), (String::new(), None));
        // Only at the start of a line.
        let inner = format!("x {}", marker(&json!({"present": true, "value": 1})));
        assert_eq!(extract_result(&inner).1, None);
    }

    #[test]
    fn stdout_fallbacks_json_then_python_then_text() {
        assert_eq!(deserialize_stdout("  {\"a\": 1}\n"), json!({"a": 1}));
        assert_eq!(deserialize_stdout("42\n"), json!(42));
        assert_eq!(
            deserialize_stdout("{'a': (1, 2.5), 'b': None, 'c': True}"),
            json!({"a": [1, 2.5], "b": null, "c": true})
        );
        assert_eq!(deserialize_stdout("hello world\n"), json!("hello world"));
        assert_eq!(deserialize_stdout("   \n"), json!(""));
        // A set or bytes are not JSON values: the text is kept.
        assert_eq!(deserialize_stdout("{1, 2}"), json!("{1, 2}"));
        assert_eq!(deserialize_stdout("b'x'"), json!("b'x'"));
    }

    #[test]
    fn python_literals() {
        let cases = [
            ("'it''s' \"x\"", json!("itsx")),
            (r#"'a\nb\x41\u00e9\101'"#, json!("a\nbAéA")),
            (r"r'a\nb'", json!("a\\nb")),
            ("'''multi\nline'''", json!("multi\nline")),
            ("-1_000", json!(-1000)),
            ("0x1F", json!(31)),
            ("1e3", json!(1000.0)),
            ("-.5", json!(-0.5)),
            ("(1,)", json!([1])),
            ("(1)", json!(1)),
            ("()", json!([])),
            ("1, 2", json!([1, 2])),
            ("[1, [2, {'k': [3]}],]", json!([1, [2, {"k": [3]}]])),
            (
                "{1: 'a', True: 'b', None: 'c'}",
                json!({"1": "a", "true": "b", "null": "c"}),
            ),
            ("18446744073709551615", json!(18446744073709551615u64)),
        ];
        for (text, want) in cases {
            assert_eq!(literal_eval(text), Some(want), "{text}");
        }
        for bad in [
            "1j",
            "01",
            "1__0",
            "abc",
            "[1, 2",
            "{'a' 1}",
            "f'x'",
            "--1",
            "1 2",
            "'a\nb'",
            "{(1, 2): 3}",
        ] {
            assert_eq!(literal_eval(bad), None, "{bad}");
        }
        let deep = "[".repeat(10_000);
        assert_eq!(literal_eval(&deep), None);
    }

    #[test]
    fn wrappers_run_main_with_the_arguments_file() {
        let py = python_program("def main(x):\n    return x");
        assert!(py.starts_with("def main(x):\n    return x\n"));
        assert!(py.contains("main(**__rf_args)") && py.contains(ARGS_FILE));
        assert!(py.contains(RESULT_MARKER));
        let js = javascript_program("function main(a) { return a }");
        assert!(js.starts_with("function main(a) { return a }\n"));
        assert!(js.contains("module.exports.main") && js.contains(RESULT_MARKER));
    }
}
