//! Python's float formatting and number parsing: `repr(float)`, `float(x)`, `int(x)`.

use std::borrow::Cow;

use serde_json::{Number, Value};

/// How every Python float format spells NaN and the infinities.
fn non_finite(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("nan")
    } else if f.is_infinite() {
        Some(if f > 0.0 { "inf" } else { "-inf" })
    } else {
        None
    }
}

/// Python `repr(float)`: shortest round-trip digits, exponent form outside 1e-4..1e16.
pub fn py_float(f: f64) -> String {
    if let Some(s) = non_finite(f) {
        return s.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let (digits, exp) = shortest(f);
    let sign = if f < 0.0 { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let s = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            let (a, b) = digits.split_at(point as usize);
            format!("{a}.{b}")
        };
        format!("{sign}{s}")
    } else {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    }
}

/// The shortest digits that read back as the finite, non-zero `f`, and the decimal
/// exponent of the first: 1.5e20 gives ("15", 20), 0.003 ("3", -3). Where two such
/// strings are equally near `f`, the even last digit is taken, as Python's `repr` does
/// (Rust's own `{:e}` takes the other: 655460019195558.25 gave ...558.3, not ...558.2).
fn shortest(f: f64) -> (String, i32) {
    let mut buf = zmij::Buffer::new();
    let text = buf.format_finite(f.abs());
    let (mantissa, exp) = text.split_once(['e', 'E']).unwrap_or((text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int}{frac}");
    let significant = all.trim_start_matches('0');
    let lead = all.len() - significant.len();
    let first = i32::try_from(int.len()).unwrap_or(0) - 1 - i32::try_from(lead).unwrap_or(0);
    (significant.trim_end_matches('0').to_string(), first + exp)
}

/// An int or float as Python prints it (ints exactly, floats by [`py_float`]), written
/// at the end of `out`: an int needs no string of its own.
pub(crate) fn write_py_number(n: &Number, out: &mut String) {
    use std::fmt::Write;
    // Writing into a String cannot fail.
    let _ = if let Some(i) = n.as_i64() {
        write!(out, "{i}")
    } else if let Some(u) = n.as_u64() {
        write!(out, "{u}")
    } else {
        out.push_str(&py_float(n.as_f64().unwrap_or(0.0)));
        Ok(())
    };
}

/// Python `float(x)` for a JSON value: numbers, bools, and strings Python would parse
/// (surrounding white space, `_` separators, `inf`/`nan`, exponents).
pub fn py_float_of(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_py_float(s),
        _ => None,
    }
}

/// A number's text as Python's `int()` and `float()` read it: a decimal digit of any
/// script (`١٢٣`, full-width `１２３`) as its ASCII digit, white space outside ASCII as
/// a space, then C's white space stripped (`\x1c`..`\x1f`, white space to
/// `str.strip`, are kept). `None` for any other character outside ASCII.
fn number_text(s: &str) -> Option<Cow<'_, str>> {
    const C_SPACE: [char; 6] = [' ', '\t', '\n', '\x0b', '\x0c', '\r'];
    if s.is_ascii() {
        return Some(Cow::Borrowed(s.trim_matches(C_SPACE)));
    }
    let mut ascii = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else if crate::py_isspace(c) {
            ascii.push(' ');
        } else {
            ascii.push(char::from(b'0' + decimal_value(c)?));
        }
    }
    Some(Cow::Owned(ascii.trim_matches(C_SPACE).to_string()))
}

/// Parse a string the way Python's `int()` does (base 10: one sign, digits with single
/// `_` between them, any script's digits); `None` where Python raises. Past 128 bits
/// the value saturates: only its sign matters to the range checks that read it.
pub fn parse_py_int(s: &str) -> Option<i128> {
    let (neg, digits) = int_digits(s)?;
    let n = digits.bytes().fold(0i128, |n, d| {
        n.saturating_mul(10).saturating_add(i128::from(d - b'0'))
    });
    Some(if neg { -n } else { n })
}

/// True when Python's `int(s)` succeeds, however many digits `s` has.
pub fn is_py_int(s: &str) -> bool {
    int_digits(s).is_some()
}

/// The sign and the ASCII digits of a text `int()` takes; `None` where it raises.
fn int_digits(s: &str) -> Option<(bool, String)> {
    let t = number_text(s)?;
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(&t)),
    };
    let b = body.as_bytes();
    let digits_only = b.iter().all(|c| c.is_ascii_digit() || *c == b'_');
    if !digits_only
        || !b.first().is_some_and(u8::is_ascii_digit)
        || !b.last().is_some_and(u8::is_ascii_digit)
        || body.contains("__")
    {
        return None;
    }
    Some((neg, body.replace('_', "")))
}

/// Parse a string the way Python's `float()` does; `None` where Python raises. Digits
/// and white space are read as `int()` reads them (`１２３.５` is 123.5).
pub fn parse_py_float(s: &str) -> Option<f64> {
    let t = number_text(s)?;
    if t.is_empty() {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    let (sign, body) = match lower.strip_prefix('-') {
        Some(b) => (-1.0, b),
        None => (1.0, lower.strip_prefix('+').unwrap_or(&lower)),
    };
    match body {
        "inf" | "infinity" => return Some(sign * f64::INFINITY),
        "nan" => return Some(f64::NAN),
        // One sign only: Rust's parser would take a second.
        _ if body.starts_with(['+', '-']) => return None,
        _ => {}
    }
    // Underscores are allowed only between digits.
    if body.contains('_') {
        let b = body.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            if c == b'_' {
                let ok = i > 0
                    && i + 1 < b.len()
                    && b[i - 1].is_ascii_digit()
                    && b[i + 1].is_ascii_digit();
                if !ok {
                    return None;
                }
            }
        }
    }
    let cleaned: String = body.chars().filter(|&c| c != '_').collect();
    if !cleaned
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | '+' | '-'))
    {
        return None;
    }
    cleaned.parse::<f64>().ok().map(|f| sign * f)
}

/// The value of a decimal digit (Unicode category Nd) outside ASCII, as Python's
/// `unicodedata.decimal`. Unicode assigns these in runs of ten, zero to nine, some runs
/// back to back (the mathematical digits): the value is the distance from the start of
/// the run of digits `c` is in, modulo ten.
fn decimal_value(c: char) -> Option<u8> {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    let is_digit = |c: char| c.general_category() == GeneralCategory::DecimalNumber;
    if !is_digit(c) {
        return None;
    }
    let code = u32::from(c);
    let mut start = code;
    while let Some(before) = start.checked_sub(1).and_then(char::from_u32) {
        if !is_digit(before) {
            break;
        }
        start -= 1;
    }
    u8::try_from((code - start) % 10).ok()
}

/// A JSON value from an `f64`, as an integer when Python would keep an int.
pub fn float_value(f: f64) -> Value {
    Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// Python `format(x, ".6f")`.
pub fn py_format_f6(f: f64) -> String {
    non_finite(f).map_or_else(|| format!("{f:.6}"), String::from)
}

/// Python `format(x, "g")`: 6 significant digits, trailing zeros dropped, scientific
/// notation below 1e-4 and from 1e6.
pub fn py_format_g(f: f64) -> String {
    if let Some(s) = non_finite(f) {
        return s.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // The exponent after rounding to 6 significant digits.
    let sci = format!("{f:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..6).contains(&exp) {
        let decimals = (5 - exp).max(0) as usize;
        trim(&format!("{f:.decimals$}"))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python() {
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(2.5), "2.5");
        assert_eq!(py_float(0.88), "0.88");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(1.5e20), "1.5e+20");
        assert_eq!(py_float(123456789012345.0), "123456789012345.0");
        assert_eq!(py_float(0.0001), "0.0001");
        assert_eq!(py_float(0.00001), "1e-05");
        assert_eq!(py_float(-2.5e-7), "-2.5e-07");
        assert_eq!(py_float(11.0), "11.0");
        assert_eq!(py_float(-0.0), "-0.0");
        // 655460019195558.25 exactly: two shortest spellings are equally near, and
        // Python takes the even digit.
        let tie = f64::from_bits(0x4302_a119_6cde_7532);
        assert_eq!(py_float(tie), "655460019195558.2");
    }

    #[test]
    fn python_float_parsing() {
        assert_eq!(parse_py_float(" 3 "), Some(3.0));
        assert_eq!(parse_py_float("1_000"), Some(1000.0));
        assert_eq!(parse_py_float("1e3"), Some(1000.0));
        assert_eq!(parse_py_float("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_py_float(""), None);
        assert_eq!(parse_py_float("abc"), None);
        assert_eq!(parse_py_float("1__0"), None);
        assert_eq!(parse_py_float("0x10"), None);
        assert_eq!(parse_py_float("++5"), None);
        assert_eq!(parse_py_float("\u{3000}１２３.５\u{a0}"), Some(123.5));
        assert_eq!(parse_py_float("١٢٣"), Some(123.0));
        assert_eq!(parse_py_float("\u{1c}5"), None);
        assert_eq!(parse_py_float("5\u{2460}"), None);
    }
}

#[cfg(test)]
mod format_g_tests {
    use super::py_format_g;

    #[test]
    fn general_format_matches_python() {
        // Values from Python's format(x, "g").
        for (x, want) in [
            (1.5, "1.5"),
            (2.0, "2"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (1.23456789, "1.23457"),
            (-2.5e-7, "-2.5e-07"),
            (100000.4, "100000"),
            (999999.5, "1e+06"),
        ] {
            assert_eq!(py_format_g(x), want, "{x}");
        }
    }
}
