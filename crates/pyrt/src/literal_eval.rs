//! Python's `ast.literal_eval`, with its results as JSON values.
//!
//! One recursive-descent reader that follows CPython's tokenizer (white space, line
//! continuations, nesting limit) and `literal_eval`'s rules (signed numbers, complex
//! sums, sets, bytes, repeated dict keys).

use std::collections::HashMap;

use serde_json::{Number, Value};

use crate::Object;
use crate::float::py_float;

/// Why a text is no literal this module can return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LiteralError {
    /// Python's `literal_eval` raises on it.
    #[error("malformed node or string")]
    Invalid,
    /// A valid literal whose value has no JSON form (bytes, sets, complex numbers...).
    #[error("the literal has no JSON form")]
    NoJsonForm,
}

/// How ints beyond 64 bits come out (JSON numbers here are `i64`, `u64` or `f64`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BigInts {
    /// No JSON form: [`LiteralError::NoJsonForm`].
    #[default]
    Reject,
    /// The nearest float, for decimal literals and ints within 128 bits (`0x` literals
    /// beyond 128 bits are still rejected).
    Float,
}

/// Which dict keys are one key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DictKeys {
    /// Python's: `1`, `1.0` and `True` are one key (first spelling, last value).
    #[default]
    PythonEqual,
    /// Keys are one only when `json.dumps` spells them alike (`1` and `True` stay two).
    SameSpelling,
}

/// Choices for values without an exact JSON form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiteralOptions {
    /// Ints beyond 64 bits.
    pub big_ints: BigInts,
    /// Repeated dict keys.
    pub dict_keys: DictKeys,
}

/// The deepest bracket nesting Python's tokenizer accepts.
const MAX_NESTING: usize = 200;

/// Python's `ast.literal_eval`, as JSON: tuples become arrays and dict keys are written
/// as `json.dumps` writes them. `None` where Python raises, and also where the result has
/// no JSON form (bytes, complex numbers, sets, tuple keys, infinities, ints beyond 64
/// bits unless [`BigInts::Float`]; `\N{...}` escapes and lone surrogates too).
pub fn literal_eval(src: &str) -> Result<Value, LiteralError> {
    literal_eval_with(src, &LiteralOptions::default())
}

/// [`literal_eval`] with a choice for what has no exact JSON form.
pub fn literal_eval_with(src: &str, opts: &LiteralOptions) -> Result<Value, LiteralError> {
    // "source code string cannot contain null bytes"
    if src.contains('\0') {
        return Err(LiteralError::Invalid);
    }
    // `literal_eval` strips leading spaces and tabs; the tokenizer reads `\r\n` and `\r`
    // as `\n`.
    let src = src.trim_start_matches([' ', '\t']);
    let mut chars = Vec::with_capacity(src.len());
    let mut it = src.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\r' {
            if it.peek() == Some(&'\n') {
                it.next();
            }
            chars.push('\n');
        } else {
            chars.push(c);
        }
    }
    let mut p = Reader {
        s: chars,
        i: 0,
        depth: 0,
    };
    let lit = (|| {
        p.leading()?;
        let lit = p.top()?;
        p.trailing()?;
        Some(lit)
    })()
    .ok_or(LiteralError::Invalid)?;
    lit.to_json(opts).ok_or(LiteralError::NoJsonForm)
}

/// A Python value as `ast.literal_eval` builds it.
enum Lit {
    None,
    Bool(bool),
    /// Ints beyond 128 bits are `BigInt`.
    Int(i128),
    /// An int beyond 128 bits: the nearest float of a decimal literal, `None` for
    /// `0x`/`0o`/`0b` ones (hashable).
    BigInt(Option<f64>),
    /// Possibly infinite (`1e400`).
    Float(f64),
    Str(String),
    /// Valid in Python without a JSON form: bytes, complex numbers and huge ints
    /// (hashable), sets (not).
    Opaque {
        hashable: bool,
    },
    List(Vec<Lit>),
    Tuple(Vec<Lit>),
    /// Entries as written; repeated keys are resolved by [`Lit::to_json`].
    Dict(Vec<(Lit, Lit)>),
}

/// A dict key with Python's equality (`1 == 1.0 == True`).
#[derive(PartialEq, Eq, Hash)]
enum DictKey {
    Str(String),
    Int(i128),
    Float(u64),
    None,
}

impl Lit {
    fn hashable(&self) -> bool {
        match self {
            Lit::List(_) | Lit::Dict(_) => false,
            Lit::Opaque { hashable } => *hashable,
            Lit::Tuple(items) => items.iter().all(Lit::hashable),
            _ => true,
        }
    }

    fn to_json(&self, opts: &LiteralOptions) -> Option<Value> {
        let big = |f: Option<f64>| match opts.big_ints {
            BigInts::Reject => None,
            BigInts::Float => Number::from_f64(f?).map(Value::Number),
        };
        Some(match self {
            Lit::None => Value::Null,
            Lit::Bool(b) => Value::Bool(*b),
            Lit::Int(i) => match (i64::try_from(*i), u64::try_from(*i)) {
                (Ok(i), _) => Value::from(i),
                (_, Ok(u)) => Value::from(u),
                _ => big(Some(*i as f64))?,
            },
            Lit::BigInt(f) => big(*f)?,
            Lit::Float(f) => Value::Number(Number::from_f64(*f)?),
            Lit::Str(s) => Value::String(s.clone()),
            Lit::Opaque { .. } => return None,
            Lit::List(items) | Lit::Tuple(items) => Value::Array(
                items
                    .iter()
                    .map(|x| x.to_json(opts))
                    .collect::<Option<_>>()?,
            ),
            Lit::Dict(entries) => {
                // A repeated key keeps its first spelling and place, with the last value.
                let mut slots: Vec<(String, &Lit)> = Vec::new();
                let mut index: HashMap<DictKey, usize> = HashMap::new();
                for (k, v) in entries {
                    let (id, text) = k.dict_key()?;
                    let id = match opts.dict_keys {
                        DictKeys::PythonEqual => id,
                        DictKeys::SameSpelling => DictKey::Str(text.clone()),
                    };
                    match index.get(&id) {
                        Some(&at) => slots[at].1 = v,
                        None => {
                            index.insert(id, slots.len());
                            slots.push((text, v));
                        }
                    }
                }
                let mut out = Object::new();
                // Distinct keys with one JSON spelling (`1` and `'1'`) collapse here, where
                // `json.dumps` would write both.
                for (k, v) in slots {
                    out.insert(k, v.to_json(opts)?);
                }
                Value::Object(out)
            }
        })
    }

    /// A key's identity and its `json.dumps` spelling; `None` for keys JSON cannot hold.
    fn dict_key(&self) -> Option<(DictKey, String)> {
        Some(match self {
            Lit::Str(s) => (DictKey::Str(s.clone()), s.clone()),
            Lit::None => (DictKey::None, "null".into()),
            Lit::Bool(b) => (DictKey::Int(i128::from(*b)), b.to_string()),
            Lit::Int(i) => (DictKey::Int(*i), i.to_string()),
            Lit::Float(f) => {
                let id = if f.fract() == 0.0 && f.abs() < 1.7e38 {
                    DictKey::Int(*f as i128)
                } else {
                    DictKey::Float(f.to_bits())
                };
                let text = match *f {
                    f if f == f64::INFINITY => "Infinity".into(),
                    f if f == f64::NEG_INFINITY => "-Infinity".into(),
                    f => py_float(f),
                };
                (id, text)
            }
            _ => return None,
        })
    }
}

/// A number token.
#[derive(Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
    /// An imaginary literal (`2j`).
    Imag,
    /// An int beyond 128 bits, with the nearest float of a decimal one.
    Huge(Option<f64>),
}

impl Num {
    fn lit(self) -> Lit {
        match self {
            Num::Int(i) => Lit::Int(i),
            Num::Float(f) => Lit::Float(f),
            Num::Huge(f) => Lit::BigInt(f),
            Num::Imag => Lit::Opaque { hashable: true },
        }
    }

    fn negate(self) -> Num {
        match self {
            Num::Int(i) => i.checked_neg().map_or(Num::Huge(None), Num::Int),
            Num::Float(f) => Num::Float(-f),
            Num::Huge(f) => Num::Huge(f.map(|f| -f)),
            other => other,
        }
    }
}

/// What an element is to the number rules: a bare number constant (possibly
/// parenthesised; a sign applies only to these) or a signed one (which may still start a
/// complex sum).
#[derive(Clone, Copy)]
enum NumKind {
    Plain(Num),
    Signed(Num),
}

/// An element as parsed, with its number kind when it is a number.
type Elem = (Lit, Option<NumKind>);

/// A recursive-descent reader of one Python expression made of literals.
struct Reader {
    s: Vec<char>,
    i: usize,
    /// Bracket nesting: newlines are white space inside brackets.
    depth: usize,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn skip_comment(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.i += 1;
        }
    }

    /// Blank and comment lines before the expression; its own line must not be
    /// indented (form feeds reset the indentation, as in CPython's tokenizer).
    fn leading(&mut self) -> Option<()> {
        loop {
            let mut col = 0;
            loop {
                match self.peek() {
                    Some(' ' | '\t') => col += 1,
                    Some('\x0c') => col = 0,
                    Some('\\') if self.peek_at(1) == Some('\n') => self.i += 1,
                    _ => break,
                }
                self.i += 1;
            }
            match self.peek()? {
                '\n' => self.i += 1,
                '#' => self.skip_comment(),
                _ => return (col == 0).then_some(()),
            }
        }
    }

    /// After the expression: white space, comments and blank lines; a last line of
    /// only spaces without a newline is an indentation error in CPython.
    fn trailing(&mut self) -> Option<()> {
        self.ws()?;
        match self.peek() {
            None => return Some(()),
            Some('\n') => self.i += 1,
            Some(_) => return None,
        }
        loop {
            let mut col = 0;
            loop {
                match self.peek() {
                    Some(' ' | '\t') => col += 1,
                    Some('\x0c') => col = 0,
                    _ => break,
                }
                self.i += 1;
            }
            match self.peek() {
                None => return (col == 0).then_some(()),
                Some('\n') => self.i += 1,
                Some('#') => self.skip_comment(),
                Some(_) => return None,
            }
        }
    }

    /// White space between tokens: comments, line continuations, and newlines inside
    /// brackets. `None` for a stray backslash or a continuation at the very end.
    fn ws(&mut self) -> Option<()> {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\x0c') => self.i += 1,
                Some('\n') if self.depth > 0 => self.i += 1,
                Some('#') => self.skip_comment(),
                Some('\\') => {
                    if self.peek_at(1) != Some('\n') {
                        return None;
                    }
                    self.i += 2;
                    self.peek()?;
                }
                _ => return Some(()),
            }
        }
    }

    /// The whole expression: one value, or a tuple without parentheses (`1, 2`).
    fn top(&mut self) -> Option<Lit> {
        let (first, _) = self.expr()?;
        self.ws()?;
        if self.peek() != Some(',') {
            return Some(first);
        }
        let mut items = vec![first];
        while self.peek() == Some(',') {
            self.i += 1;
            self.ws()?;
            if matches!(self.peek(), None | Some('\n')) {
                break;
            }
            items.push(self.expr()?.0);
            self.ws()?;
        }
        Some(Lit::Tuple(items))
    }

    /// One element: a literal, a signed number, or a complex sum (`1+2j`, `-1-2j`).
    fn expr(&mut self) -> Option<Elem> {
        self.ws()?;
        let (lit, kind) = match self.peek()? {
            sign @ ('-' | '+') => {
                self.i += 1;
                let Some(NumKind::Plain(num)) = self.atom()?.1 else {
                    return None;
                };
                let num = if sign == '-' { num.negate() } else { num };
                (num.lit(), Some(NumKind::Signed(num)))
            }
            _ => self.atom()?,
        };
        self.ws()?;
        if !matches!(self.peek(), Some('+' | '-')) {
            return Some((lit, kind));
        }
        // `real ± imaginary` is the only binary operation `literal_eval` accepts.
        let Some(NumKind::Plain(left) | NumKind::Signed(left)) = kind else {
            return None;
        };
        if matches!(left, Num::Imag) {
            return None;
        }
        self.i += 1;
        match self.atom()?.1 {
            Some(NumKind::Plain(Num::Imag)) => Some((Lit::Opaque { hashable: true }, None)),
            _ => None,
        }
    }

    fn atom(&mut self) -> Option<Elem> {
        self.ws()?;
        let c = self.peek()?;
        match c {
            '[' => self.list(),
            '(' => self.paren(),
            '{' => self.braces(),
            '0'..='9' => self.number().map(|n| (n.lit(), Some(NumKind::Plain(n)))),
            '.' if self.peek_at(1).is_some_and(|d| d.is_ascii_digit()) => {
                self.number().map(|n| (n.lit(), Some(NumKind::Plain(n))))
            }
            _ if self.at_string() => self.strings(),
            c if c == '_' || c.is_alphabetic() => self.word(),
            _ => None,
        }
    }

    fn open(&mut self) -> Option<()> {
        self.i += 1;
        self.depth += 1;
        (self.depth <= MAX_NESTING).then_some(())
    }

    fn close(&mut self) {
        self.i += 1;
        self.depth -= 1;
    }

    /// Comma-separated elements up to `end` (a trailing comma allowed).
    fn items(&mut self, end: char) -> Option<Vec<Lit>> {
        let mut items = Vec::new();
        loop {
            self.ws()?;
            if self.peek() == Some(end) {
                break;
            }
            items.push(self.expr()?.0);
            self.ws()?;
            match self.peek()? {
                ',' => self.i += 1,
                c if c == end => break,
                _ => return None,
            }
        }
        self.close();
        Some(items)
    }

    fn list(&mut self) -> Option<Elem> {
        self.open()?;
        Some((Lit::List(self.items(']')?), None))
    }

    /// `(x)` is `x` itself; `()`, `(x,)` and `(x, y)` are tuples.
    fn paren(&mut self) -> Option<Elem> {
        self.open()?;
        self.ws()?;
        if self.peek() == Some(')') {
            self.close();
            return Some((Lit::Tuple(Vec::new()), None));
        }
        let first = self.expr()?;
        self.ws()?;
        match self.peek()? {
            ')' => {
                self.close();
                Some(first)
            }
            ',' => {
                self.i += 1;
                let mut items = vec![first.0];
                items.extend(self.items(')')?);
                Some((Lit::Tuple(items), None))
            }
            _ => None,
        }
    }

    /// A dict, or a set (`{1, 2}`).
    fn braces(&mut self) -> Option<Elem> {
        self.open()?;
        self.ws()?;
        if self.peek() == Some('}') {
            self.close();
            return Some((Lit::Dict(Vec::new()), None));
        }
        let (first, _) = self.expr()?;
        self.ws()?;
        if self.peek()? != ':' {
            // A set: its items must be hashable ("unhashable type").
            let mut items = vec![first];
            if self.peek()? == ',' {
                self.i += 1;
                items.extend(self.items('}')?);
            } else if self.peek()? == '}' {
                self.close();
            } else {
                return None;
            }
            return items
                .iter()
                .all(Lit::hashable)
                .then_some((Lit::Opaque { hashable: false }, None));
        }
        let mut entries = Vec::new();
        let mut key = first;
        loop {
            // At the colon after `key`.
            self.i += 1;
            let (v, _) = self.expr()?;
            if !key.hashable() {
                return None;
            }
            entries.push((key, v));
            self.ws()?;
            match self.peek()? {
                ',' => self.i += 1,
                '}' => break,
                _ => return None,
            }
            self.ws()?;
            if self.peek() == Some('}') {
                break;
            }
            key = self.expr()?.0;
            self.ws()?;
            if self.peek()? != ':' {
                return None;
            }
        }
        self.close();
        Some((Lit::Dict(entries), None))
    }

    /// At a string literal: a quote, or a one- or two-letter prefix and a quote.
    fn at_string(&self) -> bool {
        let mut k = 0;
        while k < 2 && self.peek_at(k).is_some_and(|c| c.is_ascii_alphabetic()) {
            k += 1;
        }
        if !matches!(self.peek_at(k), Some('\'' | '"')) {
            return false;
        }
        let prefix: String = self.s[self.i..self.i + k].iter().collect();
        matches!(
            prefix.to_ascii_lowercase().as_str(),
            "" | "r" | "u" | "b" | "f" | "br" | "rb" | "fr" | "rf"
        )
    }

    /// Adjacent string literals, concatenated (`'a' "b"` is `'ab'`); bytes do not mix
    /// with strings.
    fn strings(&mut self) -> Option<Elem> {
        let mut out = String::new();
        let mut bytes = None;
        loop {
            let b = self.string_into(&mut out)?;
            if *bytes.get_or_insert(b) != b {
                return None;
            }
            self.ws()?;
            if !self.at_string() {
                break;
            }
        }
        let lit = if bytes == Some(true) {
            Lit::Opaque { hashable: true }
        } else {
            Lit::Str(out)
        };
        Some((lit, None))
    }

    /// One string literal appended to `out`; returns whether it is a bytes literal.
    fn string_into(&mut self, out: &mut String) -> Option<bool> {
        let (mut raw, mut bytes) = (false, false);
        while let Some(c) = self.peek().filter(|c| c.is_ascii_alphabetic()) {
            match c.to_ascii_lowercase() {
                'r' => raw = true,
                'b' => bytes = true,
                'u' => {}
                // f-strings are not literals.
                _ => return None,
            }
            self.i += 1;
        }
        let q = self.peek()?;
        let triple = self.peek_at(1) == Some(q) && self.peek_at(2) == Some(q);
        self.i += if triple { 3 } else { 1 };
        loop {
            let c = self.peek()?;
            if c == q {
                if !triple {
                    self.i += 1;
                    return Some(bytes);
                }
                if self.peek_at(1) == Some(q) && self.peek_at(2) == Some(q) {
                    self.i += 3;
                    return Some(bytes);
                }
            }
            if (c == '\n' && !triple) || (bytes && !c.is_ascii()) {
                return None;
            }
            if c != '\\' {
                out.push(c);
                self.i += 1;
                continue;
            }
            let d = self.peek_at(1)?;
            self.i += 2;
            if raw {
                // A backslash still protects the quote, and both are kept.
                out.push('\\');
                out.push(d);
                continue;
            }
            match d {
                '\n' => {}
                '\\' | '\'' | '"' => out.push(d),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'v' => out.push('\x0b'),
                '0'..='7' => {
                    let mut code = d.to_digit(8)?;
                    for _ in 0..2 {
                        match self.peek().and_then(|e| e.to_digit(8)) {
                            Some(e) => {
                                code = code * 8 + e;
                                self.i += 1;
                            }
                            None => break,
                        }
                    }
                    // Bytes keep the low 8 bits; the content is dropped anyway.
                    out.push(if bytes { '?' } else { char::from_u32(code)? });
                }
                'x' => out.push(self.hex_escape(2)?),
                'u' | 'U' | 'N' if bytes => {
                    out.push('\\');
                    out.push(d);
                }
                'u' => out.push(self.hex_escape(4)?),
                'U' => out.push(self.hex_escape(8)?),
                // Named escapes need Unicode's name table.
                'N' => return None,
                // Unknown escapes keep the backslash.
                _ => {
                    out.push('\\');
                    out.push(d);
                }
            }
        }
    }

    /// Exactly `n` hex digits naming a scalar value (surrogates fail).
    fn hex_escape(&mut self, n: usize) -> Option<char> {
        let mut code = 0u32;
        for _ in 0..n {
            code = code * 16 + self.peek()?.to_digit(16)?;
            self.i += 1;
        }
        char::from_u32(code)
    }

    /// Digits of `radix` with single `_` separators; `lead` allows one `_` first (after
    /// `0x` and friends). `None` for a misplaced `_`.
    fn digits(&mut self, radix: u32, lead: bool) -> Option<String> {
        let mut out = String::new();
        loop {
            let under = self.peek() == Some('_');
            if under {
                if out.is_empty() && !lead {
                    return None;
                }
                self.i += 1;
            }
            match self.peek().filter(|c| c.is_digit(radix)) {
                Some(c) => {
                    out.push(c);
                    self.i += 1;
                }
                None if under => return None,
                None => return Some(out),
            }
        }
    }

    fn number(&mut self) -> Option<Num> {
        let radix = match (self.peek(), self.peek_at(1).map(|c| c.to_ascii_lowercase())) {
            (Some('0'), Some('x')) => 16,
            (Some('0'), Some('o')) => 8,
            (Some('0'), Some('b')) => 2,
            _ => 10,
        };
        let mut num = if radix != 10 {
            self.i += 2;
            let ds = self.digits(radix, true)?;
            if ds.is_empty() {
                return None;
            }
            i128::from_str_radix(&ds, radix).map_or(Num::Huge(None), Num::Int)
        } else {
            let int_part = self.digits(10, false)?;
            let mut float = false;
            let mut frac = String::new();
            if self.peek() == Some('.') {
                self.i += 1;
                frac = self.digits(10, false)?;
                float = true;
            }
            let mut exp = String::new();
            if matches!(self.peek(), Some('e' | 'E')) {
                self.i += 1;
                if let Some(sign @ ('+' | '-')) = self.peek() {
                    exp.push(sign);
                    self.i += 1;
                }
                let ds = self.digits(10, false)?;
                if ds.is_empty() {
                    return None;
                }
                exp.push_str(&ds);
                float = true;
            }
            if float {
                let text = format!(
                    "{}.{}e{}",
                    if int_part.is_empty() { "0" } else { &int_part },
                    if frac.is_empty() { "0" } else { &frac },
                    if exp.is_empty() { "0" } else { &exp }
                );
                Num::Float(text.parse().ok()?)
            } else {
                // "leading zeros in decimal integer literals are not permitted"; an
                // imaginary literal may have them (`01j`).
                if int_part.len() > 1
                    && int_part.starts_with('0')
                    && int_part.contains(|c| c != '0')
                    && !matches!(self.peek(), Some('j' | 'J'))
                {
                    return None;
                }
                int_part
                    .parse()
                    .map_or_else(|_| Num::Huge(int_part.parse().ok()), Num::Int)
            }
        };
        if radix == 10 && matches!(self.peek(), Some('j' | 'J')) {
            self.i += 1;
            num = Num::Imag;
        }
        // `1L`, `1_`, `0b2`, `1jx`...: no literal continues with a name character.
        if self.peek().is_some_and(|c| c == '_' || c.is_alphanumeric()) {
            return None;
        }
        Some(num)
    }

    /// `True`, `False`, `None`, `set()`; any other name is not a literal.
    fn word(&mut self) -> Option<Elem> {
        let start = self.i;
        while self.peek().is_some_and(|c| c == '_' || c.is_alphanumeric()) {
            self.i += 1;
        }
        let w: String = self.s[start..self.i].iter().collect();
        let lit = match w.as_str() {
            "True" => Lit::Bool(true),
            "False" => Lit::Bool(false),
            "None" => Lit::None,
            "set" => {
                self.ws()?;
                if self.peek()? != '(' {
                    return None;
                }
                self.open()?;
                self.ws()?;
                if self.peek()? != ')' {
                    return None;
                }
                self.close();
                Lit::Opaque { hashable: false }
            }
            _ => return None,
        };
        Some((lit, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The default flavour, `None` where the text is kept (as DataOperations uses it).
    fn literal_eval(src: &str) -> Option<Value> {
        super::literal_eval(src).ok()
    }

    #[test]
    fn literal_parser_numbers() {
        let le = literal_eval;
        assert_eq!(le("[1, -2.5e3, +3]"), Some(json!([1, -2500.0, 3])));
        assert_eq!(
            le("[0x1F, 0o17, 0b101, 0x_1, 1_000, 1_0.5]"),
            Some(json!([31, 15, 5, 1, 1000, 10.5]))
        );
        assert_eq!(
            le("[1e5, 1E-2, 5., .5, 1.e3, 00, 0e0, -0.0]"),
            Some(json!([100000.0, 0.01, 5.0, 0.5, 1000.0, 0, 0.0, -0.0]))
        );
        assert_eq!(le("[-(1), (-1), - 1]"), Some(json!([-1, -1, -1])));
        assert_eq!(
            le("18446744073709551615"),
            Some(json!(18446744073709551615u64))
        );
        assert_eq!(le("[-9223372036854775808]"), Some(json!([i64::MIN])));
        for bad in [
            "01", "0_1", "1__0", "1_", "0x", "0b2", "1L", "1e", "1.e", "[--1]", "[-True]", "-(-1)",
            "[1+2]", "[1 2]", "[,]", "[1,,2]", "1.2.3", "x",
        ] {
            assert_eq!(le(bad), None, "{bad:?}");
        }
        // Valid Python without a JSON form keeps the string.
        for opaque in [
            "1j",
            "[1+2j]",
            "1e400",
            "123456789012345678901",
            "{1, 2}",
            "set()",
            "b'x'",
        ] {
            assert_eq!(le(opaque), None, "{opaque:?}");
        }
    }

    #[test]
    fn literal_parser_strings() {
        let le = literal_eval;
        assert_eq!(
            le(r"'\x41\101\u00e9\U0001F600\n\t'"),
            Some(json!("AAé😀\n\t"))
        );
        assert_eq!(le(r"'\d\8'"), Some(json!(r"\d\8")));
        assert_eq!(le("'a\\\nb'"), Some(json!("ab")));
        assert_eq!(le(r#""it's" 'x' "\"q\"""#), Some(json!("it'sx\"q\"")));
        assert_eq!(le(r"u'x' r'\d'"), Some(json!(r"x\d")));
        assert_eq!(le(r"r'\''"), Some(json!(r"\'")));
        assert_eq!(le("'''a\r\nb''' \"\"\"c\"d\"\"\""), Some(json!("a\nbc\"d")));
        assert_eq!(le("('a'\n'b')"), Some(json!("ab")));
        for bad in [
            "'a",
            r"'\'",
            "'a\nb'",
            "'a\rb'",
            r"'\x4'",
            r"'\u12'",
            r"'\U00110000'",
            r"'\N{DASH}'",
            r"'\ud800'",
            "f'x'",
            "ur'a'",
            "b'a' 'b'",
            "'a'\n'b'",
            "'\0'",
        ] {
            assert_eq!(le(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn literal_parser_containers() {
        let le = literal_eval;
        assert_eq!(
            le("{'a': (1, [2, None]), 'b': {}}"),
            Some(json!({"a": [1, [2, null]], "b": {}}))
        );
        assert_eq!(
            le("[(), (1,), (1), [1,2,], {'a':1,}]"),
            Some(json!([[], [1], 1, [1, 2], {"a": 1}]))
        );
        assert_eq!(le("'a', 'b'"), Some(json!(["a", "b"])));
        assert_eq!(le("1,"), Some(json!([1])));
        // Keys are written as json.dumps writes them; equal keys keep the first spelling
        // and the last value.
        assert_eq!(le("{1: 'x', 1.0: 'y', True: 'z'}"), Some(json!({"1": "z"})));
        assert_eq!(
            le("{None: 1, False: 2, 2.5: 3, -1: 4}"),
            Some(json!({"null": 1, "false": 2, "2.5": 3, "-1": 4}))
        );
        assert_eq!(le("{1e400: 1}"), Some(json!({"Infinity": 1})));
        // A value without a JSON form is fine once overwritten.
        assert_eq!(le("{'a': {1, 2}, 'a': 3}"), Some(json!({"a": 3})));
        assert_eq!(le("{'a': b'x', 'a': [1j]}"), None);
        for bad in [
            "{[1]: 2}",
            "{'a': {[1]}, 'a': 2}",
            "{(1, [2]): 1}",
            "{(1, 2): 3}",
            "{'a' 1}",
            "{'a':}",
            "{**{}}",
            "[*[]]",
            "(,)",
            "1 if 1 else 2",
            "[1][0]",
            "{}.x",
        ] {
            assert_eq!(le(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn literal_parser_white_space_follows_the_tokenizer() {
        for ok in [
            "\n[1]",
            "  [1]",
            "\t[1]",
            "\x0c[1]",
            "\n\x0c[1]",
            "[1]\n",
            "[1]\r\n",
            "[1]  ",
            "[1] # c",
            "[1,\n # c\n 2]",
            "[1]\n  \n",
            "[1]\n  # c",
            "[1] \\\n  ",
            "\\\n[1]",
            "\n\n# c\n[1]\n# d\n",
        ] {
            assert!(literal_eval(ok).is_some(), "{ok:?}");
        }
        for bad in [
            "\n [1]",
            "\x0c [1]",
            "[1]\n  ",
            "[1]\n\t",
            "[1] \\\n",
            "[1] \\ 2",
            "1\n2",
            "[1] \\\n1",
            "\x0b[1]",
        ] {
            assert_eq!(literal_eval(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn literal_parser_nesting_stops_where_pythons_does() {
        let nest = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert!(literal_eval(&nest(200)).is_some());
        assert_eq!(literal_eval(&nest(201)), None);
        for s in ["[", "(", "{", "-", "{'a':"] {
            assert_eq!(literal_eval(&s.repeat(100_000)), None);
        }
    }

    #[test]
    fn errors_say_why() {
        assert_eq!(super::literal_eval("[1"), Err(LiteralError::Invalid));
        assert_eq!(super::literal_eval("{1, 2}"), Err(LiteralError::NoJsonForm));
        // Leading zeros: refused in an int, allowed in an imaginary number.
        assert_eq!(super::literal_eval("01"), Err(LiteralError::Invalid));
        assert_eq!(super::literal_eval("01j"), Err(LiteralError::NoJsonForm));
    }

    #[test]
    fn big_ints_as_floats_when_asked() {
        let float = LiteralOptions {
            big_ints: BigInts::Float,
            ..LiteralOptions::default()
        };
        let le = |s: &str| literal_eval_with(s, &float).ok();
        assert_eq!(
            le("123456789012345678901"),
            Some(json!(123456789012345678901.0))
        );
        assert_eq!(
            le("-18446744073709551616"),
            Some(json!(-18446744073709551616.0))
        );
        assert_eq!(le(&"1".repeat(50)), Some(json!(1.1111111111111111e49)));
        assert_eq!(le(&format!("0x{}", "f".repeat(40))), None);
        assert_eq!(
            le("18446744073709551615"),
            Some(json!(18446744073709551615u64))
        );
        assert_eq!(literal_eval("123456789012345678901"), None);
    }

    #[test]
    fn dict_keys_by_spelling_when_asked() {
        let spelling = LiteralOptions {
            dict_keys: DictKeys::SameSpelling,
            ..LiteralOptions::default()
        };
        let le = |s: &str| literal_eval_with(s, &spelling).ok();
        assert_eq!(
            le("{1: 'a', True: 'b', 1.0: 'c', 1: 'd'}"),
            Some(json!({"1": "d", "true": "b", "1.0": "c"}))
        );
        assert_eq!(literal_eval("{1: 'a', True: 'b'}"), Some(json!({"1": "b"})));
    }
}
