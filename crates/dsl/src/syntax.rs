//! The reference syntax of canvas texts (`engine.md` §3.1), shared by the engine
//! (resolution) and `lint` (static checks).
//!
//! RAGFlow finds references with regexes of the shape `\{* *\{(BODY)\} *\}*`. They are
//! matched here by hand, with the same leftmost-first results as those regexes (a
//! property test holds them against the regexes): building the regexes took about a
//! millisecond of every run whose canvas has a reference, more than running a small
//! canvas. Case-insensitive matching folds as the regexes' Unicode mode does: besides
//! ASCII case, `ſ` (U+017F) is an `s` and `K` (U+212A) a `k`.

/// The long s, which case-insensitive matching takes for an `s`.
const LONG_S: &[u8] = "\u{17F}".as_bytes();
/// The Kelvin sign, which case-insensitive matching takes for a `k`.
const KELVIN: &[u8] = "\u{212A}".as_bytes();

/// What a reference pattern accepts between its innermost braces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// `[a-zA-Z0-9_:]+@[A-Za-z0-9_.-]+|sys\.[A-Za-z0-9_.]+|env\.[A-Za-z0-9_.]+`
    Reference,
    /// `item|index|result`
    Alias,
}

/// One of RAGFlow's reference patterns, `\{* *\{(BODY)\} *\}*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefPattern {
    body: Body,
    /// Case-insensitive (Python's `re.I`).
    fold: bool,
}

/// The reference pattern, case-insensitive (`variable_ref_patt`, compiled with `re.I`).
pub static REF_PATTERN: RefPattern = RefPattern {
    body: Body::Reference,
    fold: true,
};

/// The same pattern without IGNORECASE, as the streaming Message uses it.
pub static REF_PATTERN_CASED: RefPattern = RefPattern {
    body: Body::Reference,
    fold: false,
};

/// Iteration aliases `{item}`, `{index}`, `{result}`, case-insensitive.
pub static ALIAS_PATTERN: RefPattern = RefPattern {
    body: Body::Alias,
    fold: true,
};

/// A match of a [`RefPattern`] in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefMatch<'t> {
    text: &'t str,
    start: usize,
    end: usize,
    group: (usize, usize),
}

impl<'t> RefMatch<'t> {
    /// Byte offset of the match's start (its leading braces and spaces included).
    pub fn start(&self) -> usize {
        self.start
    }

    /// Byte offset just past the match (its trailing spaces and braces included).
    pub fn end(&self) -> usize {
        self.end
    }

    /// The whole match, braces and spaces included: what a substitution replaces.
    pub fn as_str(&self) -> &'t str {
        &self.text[self.start..self.end]
    }

    /// The expression between the innermost braces (the regexes' group 1).
    pub fn group(&self) -> &'t str {
        &self.text[self.group.0..self.group.1]
    }
}

impl RefPattern {
    /// The first match in `text`.
    pub fn find<'t>(&self, text: &'t str) -> Option<RefMatch<'t>> {
        self.find_at(text, 0)
    }

    /// Whether `text` holds a match.
    pub fn is_match(&self, text: &str) -> bool {
        self.find(text).is_some()
    }

    /// The successive non-overlapping matches in `text`, left to right.
    pub fn find_iter<'p, 't>(&'p self, text: &'t str) -> Matches<'p, 't> {
        Matches {
            pattern: self,
            text,
            at: 0,
        }
    }

    /// The first match starting at or after byte `from`.
    fn find_at<'t>(&self, text: &'t str, from: usize) -> Option<RefMatch<'t>> {
        let b = text.as_bytes();
        let mut p = from;
        while p < b.len() {
            // A match starts with a brace or a space (`\{*` may be empty, ` *` may not).
            p += b[p..].iter().position(|&c| c == b'{' || c == b' ')?;
            let (found, next) = if b[p] == b' ' {
                // `\{*` empty: the spaces, then the brace that opens the body.
                let q = skip(b, p, b' ');
                let found = (q < b.len() && b[q] == b'{')
                    .then(|| self.body(b, q + 1))
                    .flatten();
                (found.map(|g| (q + 1, g)), q)
            } else {
                // `\{*` greedy, so it first takes the whole run of braces: then spaces
                // and one more brace must follow. Giving back one brace, the body starts
                // right after the run; giving back more leaves a brace where the body
                // starts, which it cannot take.
                let r = skip(b, p, b'{');
                let s = skip(b, r, b' ');
                let spaced = (s > r && s < b.len() && b[s] == b'{')
                    .then(|| self.body(b, s + 1).map(|g| (s + 1, g)))
                    .flatten();
                let found = spaced.or_else(|| self.body(b, r).map(|g| (r, g)));
                // Any later start inside the run, or in the spaces after it, reaches one
                // of the same two bodies: none matches if these did not.
                (found, s)
            };
            if let Some((g0, g1)) = found {
                // `\} *\}*`: the closing brace, then spaces and braces, greedily.
                let end = skip(b, skip(b, g1 + 1, b' '), b'}');
                return Some(RefMatch {
                    text,
                    start: p,
                    end,
                    group: (g0, g1),
                });
            }
            p = next;
        }
        None
    }

    /// Where the body that starts at `i` ends, when a body starts there and a `}`
    /// closes it.
    fn body(&self, b: &[u8], i: usize) -> Option<usize> {
        let end = match self.body {
            Body::Reference => self.reference(b, i),
            Body::Alias => ["item", "index", "result"]
                .iter()
                .find_map(|w| self.word(b, i, w)),
        }?;
        (b.get(end) == Some(&b'}')).then_some(end)
    }

    /// `[a-zA-Z0-9_:]+@[A-Za-z0-9_.-]+|sys\.[A-Za-z0-9_.]+|env\.[A-Za-z0-9_.]+`, tried
    /// in order; each run is taken whole (what follows a run can never be in its class).
    fn reference(&self, b: &[u8], i: usize) -> Option<usize> {
        let cpn = self.run(b, i, |c| {
            c.is_ascii_alphanumeric() || c == b'_' || c == b':'
        });
        if cpn > i && b.get(cpn) == Some(&b'@') {
            let var = self.run(b, cpn + 1, |c| {
                c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
            });
            if var > cpn + 1 && b.get(var) == Some(&b'}') {
                return Some(var);
            }
        }
        ["sys.", "env."].iter().find_map(|prefix| {
            let at = self.word(b, i, prefix)?;
            let end = self.run(b, at, |c| {
                c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.')
            });
            (end > at && b.get(end) == Some(&b'}')).then_some(end)
        })
    }

    /// The end of the longest run from `i` of bytes in `class` (and, folding, of the
    /// letters that fold into it: a class with letters has all of ASCII's).
    fn run(&self, b: &[u8], mut i: usize, class: impl Fn(u8) -> bool) -> usize {
        loop {
            match b.get(i) {
                Some(&c) if class(c) => i += 1,
                Some(_) if self.fold && b[i..].starts_with(LONG_S) => i += LONG_S.len(),
                Some(_) if self.fold && b[i..].starts_with(KELVIN) => i += KELVIN.len(),
                _ => return i,
            }
        }
    }

    /// The end of the lower-case ASCII `word` at `i` (folding: in any case, an `s` also
    /// as `ſ`).
    fn word(&self, b: &[u8], mut i: usize, word: &str) -> Option<usize> {
        for w in word.bytes() {
            let c = *b.get(i)?;
            if c == w || (self.fold && c.to_ascii_lowercase() == w) {
                i += 1;
            } else if self.fold && w == b's' && b[i..].starts_with(LONG_S) {
                i += LONG_S.len();
            } else {
                return None;
            }
        }
        Some(i)
    }
}

/// The end of the run of `c` bytes from `i`.
fn skip(b: &[u8], i: usize, c: u8) -> usize {
    i + b[i..].iter().take_while(|&&x| x == c).count()
}

/// The matches of a [`RefPattern`], from [`RefPattern::find_iter`].
#[derive(Debug)]
pub struct Matches<'p, 't> {
    pattern: &'p RefPattern,
    text: &'t str,
    at: usize,
}

impl<'t> Iterator for Matches<'_, 't> {
    type Item = RefMatch<'t>;

    fn next(&mut self) -> Option<RefMatch<'t>> {
        let m = self.pattern.find_at(self.text, self.at)?;
        // A match is never empty (it holds two braces at least): the next one starts
        // after it.
        self.at = m.end;
        Some(m)
    }
}

/// Whether the whole of `s` is one `cpn@var` reference without braces
/// (`^[a-zA-Z0-9_:]+@[A-Za-z0-9_.-]+$`).
pub fn is_bare_cpn_ref(s: &str) -> bool {
    s.split_once('@').is_some_and(|(cpn, var)| {
        !cpn.is_empty()
            && !var.is_empty()
            && cpn
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':')
            && var
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use regex::Regex;
    use std::sync::LazyLock;

    /// RAGFlow's regexes, as this module's matching must behave.
    static ORACLES: LazyLock<[(RefPattern, Regex); 3]> = LazyLock::new(oracles);

    fn oracles() -> [(RefPattern, Regex); 3] {
        let body = r"([a-zA-Z0-9_:]+@[A-Za-z0-9_.-]+|sys\.[A-Za-z0-9_.]+|env\.[A-Za-z0-9_.]+)";
        let re = |p: String| Regex::new(&p).expect("test regex");
        [
            (REF_PATTERN, re(format!(r"(?is)\{{* *\{{{body}\}} *\}}*"))),
            (
                REF_PATTERN_CASED,
                re(format!(r"(?s)\{{* *\{{{body}\}} *\}}*")),
            ),
            (
                ALIAS_PATTERN,
                re(r"(?i)\{* *\{(item|index|result)\} *\}*".to_string()),
            ),
        ]
    }

    /// Each match of a text as (start, end, group).
    type Spans = Vec<(usize, usize, String)>;

    /// Each match as (start, end, group), by the pattern and by its regex.
    fn both(p: &RefPattern, re: &Regex, text: &str) -> (Spans, Spans) {
        let ours = p
            .find_iter(text)
            .map(|m| (m.start(), m.end(), m.group().to_string()))
            .collect();
        let theirs = re
            .captures_iter(text)
            .map(|c| {
                let m = c.get(0).expect("group 0");
                (m.start(), m.end(), c[1].to_string())
            })
            .collect();
        (ours, theirs)
    }

    #[test]
    fn matches_as_the_regexes_do_on_known_texts() {
        for text in [
            "a {x@y} b",
            "A { {begin@obj} } B",
            "{{ {sys.query}}}",
            "{ITEM} {Result}{index }",
            "{SYS.query} {ſys.x} {Begin:\u{212A}@o\u{17F}}",
            "{ x {a@b}",
            "{{{{x@y",
            "{a@b}}}  }} tail {env.k}",
            "{@b} {a@} {sys.} {env.x y}",
            "  {  {  {sys.a}  }  }  ",
            "{{a@b}c@d}",
            "",
        ] {
            for (p, re) in ORACLES.iter() {
                let (ours, theirs) = both(p, re, text);
                assert_eq!(ours, theirs, "{p:?} on {text:?}");
                assert_eq!(p.is_match(text), re.is_match(text));
            }
        }
    }

    #[test]
    fn bare_cpn_ref_is_the_regex() {
        let re = Regex::new(r"^[a-zA-Z0-9_:]+@[A-Za-z0-9_.-]+$").expect("test regex");
        for s in [
            "a@b",
            "Begin:X@o.k-1",
            "a@b@c",
            "@b",
            "a@",
            "a b@c",
            "a@b\n",
            "é@b",
            "",
        ] {
            assert_eq!(is_bare_cpn_ref(s), re.is_match(s), "{s:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn matches_as_the_regexes_do(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("{"), Just("}"), Just(" "), Just("@"), Just("."), Just("_"),
                    Just("-"), Just(":"), Just("a"), Just("s"), Just("S"), Just("y"),
                    Just("Y"), Just("e"), Just("n"), Just("v"), Just("i"), Just("t"),
                    Just("m"), Just("r"), Just("u"), Just("l"), Just("x"), Just("d"),
                    Just("k"), Just("K"), Just("0"), Just("\u{17F}"), Just("\u{212A}"),
                    Just("\u{130}"), Just("\u{131}"), Just("é"), Just("\n"),
                    Just("sys."), Just("env."), Just("item"), Just("RESULT"),
                    Just("index"), Just("{{"), Just("}}"), Just(" {"), Just("a@b"),
                ],
                0..40,
            )
        ) {
            let text: String = parts.concat();
            for (p, re) in ORACLES.iter() {
                let (ours, theirs) = both(p, re, &text);
                prop_assert_eq!(ours, theirs, "{:?} on {:?}", p, text);
            }
        }

        #[test]
        fn bare_cpn_ref_as_the_regex_does(s in "[a-zA-Z0-9_:@.\\- é]{0,12}") {
            static BARE: LazyLock<Regex> = LazyLock::new(|| {
                Regex::new(r"^[a-zA-Z0-9_:]+@[A-Za-z0-9_.-]+$").expect("test regex")
            });
            prop_assert_eq!(is_bare_cpn_ref(&s), BARE.is_match(&s));
        }
    }
}
