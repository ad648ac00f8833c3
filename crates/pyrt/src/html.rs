//! Python's `html.unescape`, over the WHATWG entity table `htmlize` ships (the table
//! Python's `html.entities.html5` is made from).

/// Python's `_invalid_charrefs`: numeric references replaced as browsers do (mostly
/// Windows-1252 for 0x80..0x9f).
const INVALID_CHARREFS: [(u32, char); 34] = [
    (0x00, '\u{fffd}'),
    (0x0d, '\r'),
    (0x80, '\u{20ac}'),
    (0x81, '\u{81}'),
    (0x82, '\u{201a}'),
    (0x83, '\u{192}'),
    (0x84, '\u{201e}'),
    (0x85, '\u{2026}'),
    (0x86, '\u{2020}'),
    (0x87, '\u{2021}'),
    (0x88, '\u{2c6}'),
    (0x89, '\u{2030}'),
    (0x8a, '\u{160}'),
    (0x8b, '\u{2039}'),
    (0x8c, '\u{152}'),
    (0x8d, '\u{8d}'),
    (0x8e, '\u{17d}'),
    (0x8f, '\u{8f}'),
    (0x90, '\u{90}'),
    (0x91, '\u{2018}'),
    (0x92, '\u{2019}'),
    (0x93, '\u{201c}'),
    (0x94, '\u{201d}'),
    (0x95, '\u{2022}'),
    (0x96, '\u{2013}'),
    (0x97, '\u{2014}'),
    (0x98, '\u{2dc}'),
    (0x99, '\u{2122}'),
    (0x9a, '\u{161}'),
    (0x9b, '\u{203a}'),
    (0x9c, '\u{153}'),
    (0x9d, '\u{9d}'),
    (0x9e, '\u{17e}'),
    (0x9f, '\u{178}'),
];

/// Python's `_invalid_codepoints`: numeric references to these vanish.
fn invalid_codepoint(n: u32) -> bool {
    matches!(n, 0x1..=0x8 | 0xb | 0xe..=0x1f | 0x7f..=0x9f | 0xfdd0..=0xfdef)
        || (n & 0xfffe == 0xfffe && n <= 0x10ffff)
}

/// `_replace_charref` for `&#...`: the digits as written (without `;`).
fn numeric(digits: &str, radix: u32) -> String {
    // Python's int has no limit; anything past u32 is past 0x10FFFF too.
    let n = u32::from_str_radix(digits, radix).unwrap_or(u32::MAX);
    if let Some((_, c)) = INVALID_CHARREFS.iter().find(|(k, _)| *k == n) {
        return c.to_string();
    }
    if (0xd800..=0xdfff).contains(&n) || n > 0x10ffff {
        return '\u{fffd}'.to_string();
    }
    if invalid_codepoint(n) {
        return String::new();
    }
    char::from_u32(n).map_or_else(String::new, String::from)
}

/// The expansion of a named reference (`name` without `&`, with its `;` if any).
fn entity(name: &str) -> Option<&'static str> {
    let key = format!("&{name}");
    htmlize::ENTITIES
        .get(key.as_bytes())
        .and_then(|v| std::str::from_utf8(v).ok())
}

/// `_replace_charref` for a name: the whole name, else its longest prefix of at least
/// two characters (only the legacy names without `;` can match), else kept as written.
fn named(name: &str, out: &mut String) {
    if let Some(v) = entity(name) {
        out.push_str(v);
        return;
    }
    let ends: Vec<usize> = name.char_indices().map(|(i, _)| i).skip(2).collect();
    for &end in ends.iter().rev() {
        if let Some(v) = entity(&name[..end]) {
            out.push_str(v);
            out.push_str(&name[end..]);
            return;
        }
    }
    out.push('&');
    out.push_str(name);
}

/// Python's `html.unescape`: numeric and named character references replaced as the
/// HTML5 standard says, with Python's handling of invalid code points.
pub fn html_unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    // Python's pattern: &(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let b = after.as_bytes();
        let run = |from: usize, ok: fn(&u8) -> bool| {
            from + b[from.min(b.len())..].iter().take_while(|c| ok(c)).count()
        };
        let semi = |end: usize| usize::from(b.get(end) == Some(&b';'));
        let consumed = if b.first() == Some(&b'#') {
            let dec = run(1, u8::is_ascii_digit);
            if dec > 1 {
                out.push_str(&numeric(&after[1..dec], 10));
                Some(dec + semi(dec))
            } else if matches!(b.get(1), Some(b'x' | b'X')) && run(2, u8::is_ascii_hexdigit) > 2 {
                let hex = run(2, u8::is_ascii_hexdigit);
                out.push_str(&numeric(&after[2..hex], 16));
                Some(hex + semi(hex))
            } else {
                None
            }
        } else {
            let end = after
                .char_indices()
                .take(32)
                .find(|(_, c)| matches!(c, '\t' | '\n' | '\x0c' | ' ' | '<' | '&' | '#' | ';'))
                .map_or_else(
                    || after.char_indices().nth(32).map_or(after.len(), |(i, _)| i),
                    |(i, _)| i,
                );
            if end == 0 {
                None
            } else {
                let end = end + semi(end);
                named(&after[..end], &mut out);
                Some(end)
            }
        };
        match consumed {
            Some(n) => rest = &after[n..],
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs and what Python 3.11's `html.unescape` returns for them.
    #[test]
    fn matches_python() {
        let cases = [
            ("&amp;&lt;&gt;&quot;&#39;", "&<>\"'"),
            (
                "&ampxyz &amp;x; &notin; &notit; &noti",
                "&xyz &x; ∉ ¬it; ¬i",
            ),
            (
                "&#0;&#13;&#128;&#129;&#x9F;&#1;&#11;&#xD800;&#1114112;&#99999999999999999999;",
                "\u{fffd}\r€\u{81}Ÿ\u{fffd}\u{fffd}\u{fffd}",
            ),
            ("&#65&#x41;&#X42&#0x41&#;&#x;&;", "AAB\u{fffd}x41&#;&#x;&;"),
            (
                "&Eacute&eacute;&eacuteX &copy2 &CounterClockwiseContourIntegral; &NotNestedGreaterGreater;",
                "ÉééX ©2 ∳ ⪢̸",
            ),
            (
                "&fjlig; &zwj; &xfdd0; &#xfdd0;&#xffff;&#x10ffff;&#x10fffd;",
                "fj \u{200d} &xfdd0; \u{10fffd}",
            ),
            ("a &amp; b&nbsp;&#39;c&#x27;", "a & b\u{a0}'c'"),
            (
                "&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;",
                "&aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;",
            ),
            ("&lt&gt&ltx", "<><x"),
            ("&ÉCOLE; &amp\r; &x\tamp;", "&ÉCOLE; &\r; &x\tamp;"),
            ("no entities", "no entities"),
            ("&", "&"),
            ("x&#", "x&#"),
        ];
        for (input, want) in cases {
            assert_eq!(html_unescape(input), want, "{input:?}");
        }
    }

    #[test]
    fn the_table_is_pythons() {
        // len(html.entities.html5)
        assert_eq!(htmlize::ENTITIES.len(), 2231);
    }
}
