//! tabulate 0.9's "pipe" tables as pandas' `to_markdown(index=False)` prints them:
//! column types, number alignment on the decimal point, `floatfmt`, multiline cells and
//! wcwidth's display widths. The caller turns its rows into [`TableCell`]s, by column.

use crate::float::{is_py_int, parse_py_float, py_float, py_format_f6, py_format_g};
use crate::str::py_strip;

/// A value as tabulate receives it from `df.values`.
#[derive(Debug, Clone, PartialEq)]
pub enum TableCell {
    /// Python `None` (an empty cell).
    None,
    /// A Python bool.
    Bool(bool),
    /// A Python int.
    Int(i128),
    /// A Python float, or a numpy number (formatted as a float).
    Float(f64),
    /// A numpy `timedelta64[ns]`: a number whose `str()` is `N nanoseconds`.
    NpTimedelta(i128),
    /// `decimal.Decimal`: a number, its text.
    Decimal(f64, String),
    /// A Python `str`: tabulate parses numbers and booleans out of it.
    Str(String),
    /// Any other object, by its `str()` (always typed as text).
    Obj(String),
}

/// How tabulate formats float columns (`floatfmt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatFmt {
    /// `".6f"` (ExeSQL).
    F6,
    /// `"g"`, tabulate's default (pandas `to_markdown()` without `floatfmt`).
    G,
}

// ---- tabulate 0.9 ("pipe", numalign "decimal", stralign "left", missingval "") ----

/// tabulate's column types, least generic first (`_more_generic`).
const T_BOOL: u8 = 1;
const T_INT: u8 = 2;
const T_FLOAT: u8 = 3;
const T_STR: u8 = 5;

/// tabulate's `_isnumber` for a string.
fn is_number_str(s: &str) -> bool {
    match parse_py_float(s) {
        None => false,
        Some(f) if f.is_nan() || f.is_infinite() => {
            matches!(s.to_lowercase().as_str(), "inf" | "-inf" | "nan")
        }
        Some(_) => true,
    }
}

/// tabulate's `_isnumber_with_thousands_separator` (`1,000.5`, `.5`, and `""`).
fn is_number_with_thousands(s: &str) -> bool {
    // Python's `$` also matches before a final newline.
    let s = s.strip_suffix('\n').unwrap_or(s);
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let lead = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if lead == 0 {
        // No integer part: only `(\.[0-9]+)?`, without a sign.
        return i == 0
            && (b.is_empty()
                || (b[0] == b'.' && b.len() > 1 && b[1..].iter().all(u8::is_ascii_digit)));
    }
    if lead > 3 {
        return false;
    }
    i += lead;
    while i < b.len() && b[i] == b',' {
        if b.len() < i + 4 || !b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            return false;
        }
        i += 4;
    }
    if i == b.len() {
        return true;
    }
    b[i] == b'.' && b[i + 1..].iter().all(u8::is_ascii_digit)
}

fn cell_type(c: &TableCell) -> u8 {
    match c {
        TableCell::None => 0,
        TableCell::Bool(_) => T_BOOL,
        TableCell::Int(_) => T_INT,
        TableCell::Float(_) | TableCell::NpTimedelta(_) | TableCell::Decimal(..) => T_FLOAT,
        TableCell::Obj(_) => T_STR,
        TableCell::Str(s) => {
            if s == "True" || s == "False" {
                T_BOOL
            } else if is_py_int(s) {
                T_INT
            } else if is_number_str(s) {
                T_FLOAT
            } else {
                T_STR
            }
        }
    }
}

/// Python `str(v)`.
fn cell_str(c: &TableCell) -> String {
    match c {
        TableCell::None => "None".into(),
        TableCell::Bool(b) => if *b { "True" } else { "False" }.into(),
        TableCell::Int(i) => i.to_string(),
        TableCell::Float(f) => py_float(*f),
        TableCell::NpTimedelta(ns) => format!("{ns} nanoseconds"),
        TableCell::Decimal(_, s) | TableCell::Str(s) | TableCell::Obj(s) => s.clone(),
    }
}

/// tabulate's `_format`.
fn format_cell(c: &TableCell, coltype: u8, ff: FloatFmt) -> String {
    if *c == TableCell::None {
        return String::new();
    }
    match coltype {
        T_FLOAT => {
            let f = match c {
                TableCell::Bool(b) => f64::from(u8::from(*b)),
                TableCell::Int(i) => *i as f64,
                TableCell::Float(f) | TableCell::Decimal(f, _) => *f,
                TableCell::NpTimedelta(ns) => *ns as f64,
                TableCell::Str(s) => parse_py_float(s).unwrap_or(f64::NAN),
                TableCell::Obj(_) | TableCell::None => f64::NAN,
            };
            match ff {
                FloatFmt::F6 => py_format_f6(f),
                FloatFmt::G => py_format_g(f),
            }
        }
        _ => cell_str(c),
    }
}

/// Characters after the decimal point, -1 without one (`_afterpoint`).
fn afterpoint(s: &str) -> i64 {
    if !(is_number_str(s) || is_number_with_thousands(s)) || is_py_int(s) {
        return -1;
    }
    let chars: Vec<char> = s.chars().collect();
    let pos = chars
        .iter()
        .rposition(|c| *c == '.')
        .or_else(|| chars.iter().rposition(|c| c.eq_ignore_ascii_case(&'e')));
    match pos {
        Some(p) => (chars.len() - p - 1) as i64,
        None => -1,
    }
}

/// wcwidth 0.2's `wcswidth`: -1 when a character is non-printable.
fn wcswidth(s: &str) -> i64 {
    let mut total = 0i64;
    for c in s.chars() {
        let w = match c {
            '\0' | '\u{34f}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' => 0,
            '\u{2060}'..='\u{2063}' => 0,
            c if c < ' ' || ('\u{7f}'..'\u{a0}').contains(&c) => return -1,
            c => unicode_width::UnicodeWidthChar::width(c).unwrap_or(0) as i64,
        };
        total += w;
    }
    total
}

/// `re.split("[\r\n]", s)`.
fn split_cr_lf(s: &str) -> Vec<&str> {
    s.split(['\r', '\n']).collect()
}

/// Python `str.splitlines()`.
fn splitlines(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let brk = matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !brk {
            continue;
        }
        out.push(&s[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r' && it.peek().is_some_and(|(_, n)| *n == '\n') {
            it.next();
            end += 1;
        }
        start = end;
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

fn char_len(s: &str) -> i64 {
    s.chars().count() as i64
}

/// `"{0:<%ds}".format(s)` / `"{0:>%ds}".format(s)`: pads by characters.
fn pad(s: &str, width: i64, left_align: bool) -> String {
    let fill = (width - char_len(s)).max(0) as usize;
    if left_align {
        format!("{s}{}", " ".repeat(fill))
    } else {
        format!("{}{s}", " ".repeat(fill))
    }
}

/// The visible width of a cell (the widest line in multiline mode).
fn width_of(s: &str, multiline: bool) -> i64 {
    if multiline {
        split_cr_lf(s).into_iter().map(wcswidth).max().unwrap_or(0)
    } else {
        wcswidth(s)
    }
}

/// `_align_column` with wide characters on and no ANSI codes.
fn align_column(
    strings: Vec<String>,
    decimal: bool,
    minwidth: i64,
    multiline: bool,
) -> Vec<String> {
    let strings: Vec<String> = if decimal {
        let decs: Vec<i64> = strings.iter().map(|s| afterpoint(s)).collect();
        let maxdec = decs.iter().copied().max().unwrap_or(-1);
        strings
            .into_iter()
            .zip(decs)
            .map(|(s, d)| format!("{s}{}", " ".repeat((maxdec - d).max(0) as usize)))
            .collect()
    } else {
        strings.iter().map(|s| py_strip(s).to_string()).collect()
    };
    let left = !decimal;
    let widths: Vec<Vec<i64>> = strings
        .iter()
        .map(|s| {
            if multiline {
                split_cr_lf(s).into_iter().map(wcswidth).collect()
            } else {
                vec![wcswidth(s)]
            }
        })
        .collect();
    let maxwidth = widths
        .iter()
        .flatten()
        .copied()
        .max()
        .unwrap_or(0)
        .max(minwidth);
    strings
        .iter()
        .zip(&widths)
        .map(|(s, ws)| {
            if multiline {
                let lens: Vec<i64> = split_cr_lf(s).into_iter().map(char_len).collect();
                let visible: Vec<i64> = ws
                    .iter()
                    .zip(&lens)
                    .map(|(w, l)| maxwidth - (w - l))
                    .collect();
                splitlines(s)
                    .into_iter()
                    .zip(visible)
                    .map(|(line, w)| pad(line, w, left))
                    .collect::<Vec<_>>()
                    .join("\n")
            } else {
                pad(s, maxwidth - (ws[0] - char_len(s)), left)
            }
        })
        .collect()
}

/// `_align_header`.
fn align_header(h: &str, decimal: bool, width: i64, multiline: bool) -> String {
    if multiline {
        return split_cr_lf(h)
            .into_iter()
            .map(|line| align_header(line, decimal, width, false))
            .collect::<Vec<_>>()
            .join("\n");
    }
    let width = width + (char_len(h) - wcswidth(h));
    pad(h, width, !decimal)
}

/// One table row (`_build_simple_row` with padding 1); several lines in multiline mode,
/// none when every cell is empty (as tabulate drops such rows).
fn push_row(lines: &mut Vec<String>, cells: &[String], widths: &[i64], multiline: bool) {
    if !multiline {
        lines.push(format!("| {} |", cells.join(" | ")));
        return;
    }
    let cell_lines: Vec<Vec<&str>> = cells.iter().map(|c| splitlines(c)).collect();
    let n = cell_lines.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..n {
        let parts: Vec<String> = cell_lines
            .iter()
            .zip(widths)
            .map(|(cl, w)| {
                cl.get(i)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| " ".repeat((*w).max(0) as usize))
            })
            .collect();
        lines.push(format!("| {} |", parts.join(" | ")));
    }
}

/// `tabulate(rows, headers, tablefmt="pipe", floatfmt=...)`, rows given by column.
pub fn pipe_table(headers: &[String], cols: &[Vec<TableCell>], ff: FloatFmt) -> String {
    if headers.is_empty() {
        return String::new();
    }
    let multiline = headers
        .iter()
        .map(String::as_str)
        .chain(cols.iter().flatten().map(|c| match c {
            TableCell::Str(s) | TableCell::Obj(s) => s.as_str(),
            _ => "",
        }))
        .any(|s| s.contains(['\r', '\n']));
    let types: Vec<u8> = cols
        .iter()
        .map(|c| c.iter().map(cell_type).fold(T_BOOL, u8::max))
        .collect();
    let decimal: Vec<bool> = types.iter().map(|t| *t == T_INT || *t == T_FLOAT).collect();
    let mut aligned = Vec::with_capacity(cols.len());
    let mut widths = Vec::with_capacity(cols.len());
    for (j, col) in cols.iter().enumerate() {
        let h = headers.get(j).map(String::as_str).unwrap_or("");
        let minw = width_of(h, multiline) + 2;
        let strings = col.iter().map(|c| format_cell(c, types[j], ff)).collect();
        let a = align_column(strings, decimal[j], minw, multiline);
        let w = a
            .iter()
            .map(|s| width_of(s, multiline))
            .max()
            .unwrap_or(0)
            .max(minw);
        aligned.push(a);
        widths.push(w);
    }
    let head: Vec<String> = headers
        .iter()
        .zip(&decimal)
        .zip(&widths)
        .map(|((h, d), w)| align_header(h, *d, *w, multiline))
        .collect();
    let mut lines = Vec::new();
    push_row(&mut lines, &head, &widths, multiline);
    let nrows = cols.first().map(Vec::len).unwrap_or(0);
    let rule: Vec<String> = decimal
        .iter()
        .zip(&widths)
        .map(|(d, w)| {
            let dashes = "-".repeat((*w + 1).max(0) as usize);
            // No rows: tabulate has no column types, so no alignment to mark.
            if nrows == 0 {
                format!("-{dashes}")
            } else if *d {
                format!("{dashes}:")
            } else {
                format!(":{dashes}")
            }
        })
        .collect();
    lines.push(format!("|{}|", rule.join("|")));
    for i in 0..nrows {
        let row: Vec<String> = aligned.iter().map(|c| c[i].clone()).collect();
        push_row(&mut lines, &row, &widths, multiline);
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabulate_number_tests() {
        assert!(
            is_py_int(" 12 ") && is_py_int("-1_000") && !is_py_int("1__0") && !is_py_int("1.0")
        );
        assert!(is_number_str("1e5") && is_number_str("nan") && !is_number_str("Infinity"));
        assert!(is_number_with_thousands("1,000.5") && is_number_with_thousands(""));
        assert!(!is_number_with_thousands("1000") && !is_number_with_thousands("1,00"));
        assert_eq!(afterpoint("1.500000"), 6);
        assert_eq!(afterpoint("nan"), -1);
        assert_eq!(afterpoint("12"), -1);
        assert_eq!(afterpoint("1e5"), 1);
        assert_eq!(splitlines("a\r\nb\n"), vec!["a", "b"]);
        assert_eq!(wcswidth("a中"), 3);
        assert_eq!(wcswidth("a\tb"), -1);
    }
}
