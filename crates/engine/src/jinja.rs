//! The Jinja step of a merge (`engine.md` §3.4d): RAGFlow renders with Jinja2's
//! `SandboxedEnvironment`; here minijinja, with Jinja2's ways where they differ and a
//! canvas can see them (how values print; the filters `escape`, `truncate`,
//! `wordcount`, `center`, `int`, `float`, `tojson`, `urlencode`; Python's string
//! methods minijinja lacks), and bounds on a render's work and output. `tests/jinja2.rs` compares the two; docs/differences.md
//! says what is left.

use std::sync::LazyLock;

use minijinja::value::{Kwargs, Value as MjValue, ValueKind, from_args};
use minijinja::{Environment, Error, ErrorKind, Output, State, UndefinedBehavior};
use serde_json::Value;

use canvas_pyrt::{
    parse_py_float, parse_py_int, py_expandtabs, py_float, py_isdecimal, py_istitle, py_json_dumps,
    py_str, py_swapcase,
};

/// Instructions one Jinja render may run (minijinja's fuel). A render runs inside a
/// node, where `--timeout` cannot stop it and Ctrl-C only by exiting at once, so a
/// runaway loop (two nested `range(100000)`) must end by itself: this is a second or
/// so of rendering, and over 100 times what a template looping over 10,000 items takes
/// (a million passes of `{{x}}` fit). Past it the render fails, as a template error
/// does (docs/differences.md).
pub const JINJA_FUEL: u64 = 20_000_000;

static JINJA: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    // Jinja2's default Undefined renders as "" and tolerates filters.
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_fuel(Some(JINJA_FUEL));
    env.set_unknown_method_callback(python_method);
    minijinja_contrib::add_to_environment(&mut env);
    env.set_formatter(python_formatter);
    env.add_filter("escape", escape);
    env.add_filter("e", escape);
    env.add_filter("center", center);
    env.add_filter("truncate", truncate);
    env.add_filter("wordcount", wordcount);
    env.add_filter("tojson", tojson);
    env.add_filter("int", int);
    env.add_filter("float", float);
    env.add_filter("urlencode", urlencode);
    env
});

/// A Python method of a string or a list that minijinja does not have: the padding
/// ones (`center`, `ljust`, `rjust`, `zfill`), `removeprefix`, `removesuffix`,
/// `rsplit`, `partition`, `rpartition` (a list where Python gives a tuple), `index`,
/// `swapcase`, `istitle`, `isdecimal` and `expandtabs`; minijinja-contrib's Python
/// methods for the rest.
fn python_method(
    state: &State,
    value: &MjValue,
    method: &str,
    args: &[MjValue],
) -> Result<MjValue, Error> {
    if let Some(s) = value.as_str() {
        if let Some(v) = string_method(s, method, args)? {
            return Ok(v);
        }
    } else if method == "index" && value.kind() == ValueKind::Seq {
        let (x,): (MjValue,) = from_args(args)?;
        return value
            .try_iter()?
            .position(|item| item == x)
            .map(MjValue::from)
            .ok_or_else(|| Error::new(ErrorKind::InvalidOperation, "x not in list"));
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// `s.method(*args)` for the string methods [`python_method`] adds; `None` for others.
fn string_method(s: &str, method: &str, args: &[MjValue]) -> Result<Option<MjValue>, Error> {
    let pad = |args: &[MjValue]| -> Result<(usize, char), Error> {
        let (width, fill): (usize, Option<String>) = from_args(args)?;
        let mut chars = fill.as_deref().unwrap_or(" ").chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => Ok((width, c)),
            _ => Err(Error::new(
                ErrorKind::InvalidOperation,
                "the fill character must be exactly one character long",
            )),
        }
    };
    let len = s.chars().count();
    let fill = |n: usize, c: char| c.to_string().repeat(n);
    let v = match method {
        "center" => {
            let (width, c) = pad(args)?;
            centered(s, width, c)
        }
        "ljust" => {
            let (width, c) = pad(args)?;
            format!("{s}{}", fill(width.saturating_sub(len), c))
        }
        "rjust" => {
            let (width, c) = pad(args)?;
            format!("{}{s}", fill(width.saturating_sub(len), c))
        }
        "zfill" => {
            let (width,): (usize,) = from_args(args)?;
            let zeros = fill(width.saturating_sub(len), '0');
            match s.strip_prefix(['+', '-']) {
                Some(rest) => format!("{}{zeros}{rest}", &s[..1]),
                None => format!("{zeros}{s}"),
            }
        }
        "removeprefix" => {
            let (p,): (String,) = from_args(args)?;
            s.strip_prefix(p.as_str()).unwrap_or(s).to_string()
        }
        "removesuffix" => {
            let (p,): (String,) = from_args(args)?;
            s.strip_suffix(p.as_str()).unwrap_or(s).to_string()
        }
        "rsplit" => {
            let (sep, max): (Option<String>, Option<i64>) = from_args(args)?;
            return Ok(Some(MjValue::from(rsplit(s, sep.as_deref(), max)?)));
        }
        "partition" | "rpartition" => {
            let (sep,): (String,) = from_args(args)?;
            if sep.is_empty() {
                return Err(Error::new(ErrorKind::InvalidOperation, "empty separator"));
            }
            let found = if method == "partition" {
                s.split_once(sep.as_str())
            } else {
                s.rsplit_once(sep.as_str())
            };
            let parts = match (found, method) {
                (Some((a, b)), _) => [a, sep.as_str(), b],
                (None, "partition") => [s, "", ""],
                (None, _) => ["", "", s],
            };
            let parts: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
            return Ok(Some(MjValue::from(parts)));
        }
        "swapcase" => {
            let () = from_args(args)?;
            py_swapcase(s)
        }
        "istitle" => {
            let () = from_args(args)?;
            return Ok(Some(MjValue::from(py_istitle(s))));
        }
        "isdecimal" => {
            let () = from_args(args)?;
            return Ok(Some(MjValue::from(py_isdecimal(s))));
        }
        "expandtabs" => {
            let (tabsize,): (Option<usize>,) = from_args(args)?;
            py_expandtabs(s, tabsize.unwrap_or(8))
        }
        "index" => {
            let (sub,): (String,) = from_args(args)?;
            let at = s
                .find(sub.as_str())
                .ok_or_else(|| Error::new(ErrorKind::InvalidOperation, "substring not found"))?;
            return Ok(Some(MjValue::from(s[..at].chars().count())));
        }
        _ => return Ok(None),
    };
    Ok(Some(MjValue::from(v)))
}

/// Python's `str.rsplit(sep=None, maxsplit=-1)`: from the right, at most `maxsplit`
/// cuts; without `sep`, at runs of white space, leading and trailing ones dropped.
fn rsplit(s: &str, sep: Option<&str>, max: Option<i64>) -> Result<Vec<String>, Error> {
    let max = max.and_then(|m| usize::try_from(m).ok());
    let mut parts: Vec<String> = match sep {
        Some("") => return Err(Error::new(ErrorKind::InvalidOperation, "empty separator")),
        Some(sep) => match max {
            Some(m) => s.rsplitn(m + 1, sep).map(str::to_string).collect(),
            None => s.rsplit(sep).map(str::to_string).collect(),
        },
        None => {
            let mut out = Vec::new();
            let mut rest = s.trim_end();
            while !rest.is_empty() {
                if max.is_some_and(|m| out.len() == m) {
                    out.push(rest.to_string());
                    break;
                }
                let cut = rest.rfind(char::is_whitespace);
                let word_start = cut.map_or(0, |i| {
                    i + rest[i..].chars().next().map_or(1, char::len_utf8)
                });
                out.push(rest[word_start..].to_string());
                rest = rest[..cut.unwrap_or(0)].trim_end();
            }
            out
        }
    };
    parts.reverse();
    Ok(parts)
}

/// Jinja2 prints a value as Python's `str()` does: lists and dicts in Python's
/// spelling (`['a', 1]`, single-quoted strings), floats as `repr` (`1e+20`). Strings,
/// ints, booleans, `None` and what is undefined print as minijinja prints them, which
/// is the same.
fn python_formatter(out: &mut Output, state: &State, value: &MjValue) -> Result<(), Error> {
    match value.kind() {
        ValueKind::Number if !value.is_integer() => {
            if let Ok(f) = f64::try_from(value.clone()) {
                return out.write_str(&py_float(f)).map_err(Error::from);
            }
        }
        ValueKind::Seq | ValueKind::Map => {
            // A value serde cannot take (a macro in a list, an int past 64 bits) keeps
            // minijinja's spelling.
            if let Ok(v) = serde_json::to_value(value) {
                return out.write_str(&py_str(&v)).map_err(Error::from);
            }
        }
        _ => {}
    }
    minijinja::escape_formatter(out, state, value)
}

/// A value as Python's `str()` gives it (what Jinja2's filters see of a non-string).
fn python_text(value: &MjValue) -> String {
    if value.is_undefined() {
        return String::new();
    }
    match value.as_str() {
        Some(s) => s.to_string(),
        None => serde_json::to_value(value).map_or_else(|_| value.to_string(), |v| py_str(&v)),
    }
}

/// Jinja2's `escape` (MarkupSafe): `&`, `<`, `>`, `"` and `'` as entities, `/` left
/// alone (minijinja's own writes `&#x2f;`); text already safe as it is.
fn escape(value: &MjValue) -> MjValue {
    if value.is_safe() {
        return value.clone();
    }
    let text = python_text(value);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    MjValue::from_safe_string(out)
}

/// Jinja2's `truncate(length=255, killwords=False, end='...', leeway=5)`, its
/// arguments by position or by name (minijinja's takes names only; `leeway` by name
/// here, minijinja's functions take at most five arguments): a text longer than
/// `length + leeway` is cut to `length` with `end`, at the last space unless
/// `killwords`.
fn truncate(
    value: &MjValue,
    length: Option<usize>,
    killwords: Option<bool>,
    end: Option<String>,
    kwargs: Kwargs,
) -> Result<MjValue, Error> {
    if value.is_undefined() || value.is_none() {
        return Ok(MjValue::from(""));
    }
    let length = arg(length, &kwargs, "length")?.unwrap_or(255);
    let killwords = arg(killwords, &kwargs, "killwords")?.unwrap_or(false);
    let end = arg(end, &kwargs, "end")?.unwrap_or_else(|| "...".into());
    let leeway = kwargs.get::<Option<usize>>("leeway")?.unwrap_or(5);
    kwargs.assert_all_used()?;
    let text = value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string);
    let end_len = end.chars().count();
    if length < end_len {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("expected length >= {end_len}, got {length}"),
        ));
    }
    if text.chars().count() <= length + leeway {
        return Ok(value.clone());
    }
    let kept: String = text.chars().take(length - end_len).collect();
    let kept = if killwords {
        kept.as_str()
    } else {
        kept.rsplit_once(' ')
            .map_or(kept.as_str(), |(head, _)| head)
    };
    Ok(MjValue::from(format!("{kept}{end}")))
}

/// An argument given by position, else by name.
fn arg<'a, T: minijinja::value::ArgType<'a, Output = T>>(
    positional: Option<T>,
    kwargs: &'a Kwargs,
    name: &'a str,
) -> Result<Option<T>, Error> {
    match positional {
        Some(v) => Ok(Some(v)),
        None => kwargs.get::<Option<T>>(name),
    }
}

/// Jinja2's `wordcount`: the runs of word characters (Python's `\w`: letters,
/// digits and `_`).
fn wordcount(value: &str) -> usize {
    let mut count = 0;
    let mut in_word = false;
    for c in value.chars() {
        let word = c.is_alphanumeric() || c == '_';
        if word && !in_word {
            count += 1;
        }
        in_word = word;
    }
    count
}

/// Jinja2's `tojson`: `json.dumps` with sorted keys (its default policy), ASCII only,
/// then `<`, `>`, `&` and `'` as `\u` escapes, so the text is safe in HTML.
fn tojson(value: &MjValue) -> Result<MjValue, Error> {
    let v = serde_json::to_value(value).map_err(|e| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("cannot serialize to JSON: {e}"),
        )
    })?;
    let text = py_json_dumps(&v, true, true)
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\'', "\\u0027");
    Ok(MjValue::from_safe_string(text))
}

/// Jinja2's `int(default=0, base=10)`: Python's `int()`, else `int(float())` (so
/// `'42.5'` is 42), else `default` (`'x'` is 0; minijinja's refused it).
fn int(
    value: &MjValue,
    default: Option<MjValue>,
    base: Option<u32>,
    kwargs: Kwargs,
) -> Result<MjValue, Error> {
    let default = arg(default, &kwargs, "default")?;
    let base = arg(base, &kwargs, "base")?;
    kwargs.assert_all_used()?;
    let default = || default.clone().unwrap_or(MjValue::from(0));
    let from_float = |f: f64| {
        if f.is_nan() {
            Ok(default())
        } else if f.is_infinite() {
            Err(Error::new(
                ErrorKind::InvalidOperation,
                "cannot convert float infinity to integer",
            ))
        } else {
            // In range: Python's ints are unbounded, a float past 2**127 is rare.
            Ok(MjValue::from(f.trunc() as i128))
        }
    };
    match value.kind() {
        ValueKind::Bool => Ok(MjValue::from(i64::from(value.is_true()))),
        ValueKind::Number if value.is_integer() => Ok(value.clone()),
        ValueKind::Number => {
            f64::try_from(value.clone()).map_or_else(|_| Ok(default()), from_float)
        }
        ValueKind::String => {
            let text = value.as_str().unwrap_or_default();
            let parsed = match base {
                None | Some(10) => parse_py_int(text),
                Some(b) if (2..=36).contains(&b) => {
                    i128::from_str_radix(&text.trim().replace('_', ""), b).ok()
                }
                Some(_) => None,
            };
            match (parsed, parse_py_float(text)) {
                (Some(n), _) => Ok(MjValue::from(n)),
                (None, Some(f)) => from_float(f),
                (None, None) => Ok(default()),
            }
        }
        _ => Ok(default()),
    }
}

/// Jinja2's `float(default=0.0)`: Python's `float()`, else `default`.
fn float(value: &MjValue, default: Option<MjValue>, kwargs: Kwargs) -> Result<MjValue, Error> {
    let default = arg(default, &kwargs, "default")?;
    kwargs.assert_all_used()?;
    let parsed = match value.kind() {
        ValueKind::Bool => Some(if value.is_true() { 1.0 } else { 0.0 }),
        ValueKind::Number => f64::try_from(value.clone()).ok(),
        ValueKind::String => value.as_str().and_then(parse_py_float),
        _ => None,
    };
    Ok(match parsed {
        Some(f) => MjValue::from(f),
        None => default.unwrap_or(MjValue::from(0.0)),
    })
}

/// Jinja2's `urlencode`: a text (or any value but a dict or list, by its `str()`)
/// percent-encoded with `/` kept; a dict or a list of pairs as a query string, each
/// part encoded with spaces as `+`.
fn urlencode(value: &MjValue) -> Result<MjValue, Error> {
    let text = python_text;
    let pairs: Vec<(MjValue, MjValue)> = match value.kind() {
        ValueKind::Map => value
            .try_iter()?
            .map(|k| {
                let v = value.get_item(&k).unwrap_or_default();
                (k, v)
            })
            .collect(),
        ValueKind::Seq | ValueKind::Iterable => value
            .try_iter()?
            .map(|pair| {
                let k = pair.get_item_by_index(0).unwrap_or_default();
                let v = pair.get_item_by_index(1).unwrap_or_default();
                (k, v)
            })
            .collect(),
        _ => return Ok(MjValue::from(url_quote(&text(value), false))),
    };
    let parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                url_quote(&text(k), true),
                url_quote(&text(v), true)
            )
        })
        .collect();
    Ok(MjValue::from(parts.join("&")))
}

/// Python's `quote_from_bytes` of the UTF-8 text: letters, digits and `-._~` kept,
/// and `/` unless `for_query`, where a space becomes `+`.
fn url_quote(text: &str, for_query: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(b));
            }
            b'/' if !for_query => out.push('/'),
            b' ' if for_query => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Jinja2's `center(width=80)`: Python's `str.center`, the odd space on the side
/// CPython puts it.
fn center(value: &str, width: Option<usize>) -> String {
    centered(value, width.unwrap_or(80), ' ')
}

/// `s` in the middle of `width` characters of `fill`, the odd one on the side CPython
/// puts it.
fn centered(s: &str, width: usize, fill: char) -> String {
    let margin = width.saturating_sub(s.chars().count());
    let left = margin / 2 + (margin & width & 1);
    let pad = |n: usize| fill.to_string().repeat(n);
    format!("{}{s}{}", pad(left), pad(margin - left))
}

/// Render a text with Jinja; variables are the reference identifiers with their text.
pub fn render_jinja(text: &str, vars: &[(String, String)]) -> Result<String, String> {
    render_pairs(text, vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

pub(crate) fn render_pairs<'v>(
    text: &str,
    vars: impl Iterator<Item = (&'v str, &'v str)>,
) -> Result<String, String> {
    let ctx: serde_json::Map<String, Value> = vars
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    let template = JINJA.template_from_str(text).map_err(|e| e.to_string())?;
    let mut out = Capped {
        text: Vec::new(),
        left: JINJA_MAX_OUTPUT,
    };
    template.render_captured_to(ctx, &mut out).map_err(|e| {
        // A refused write is the error's source; minijinja's text does not say it.
        match std::error::Error::source(&e) {
            Some(why) => format!("{e}: {why}"),
            None => e.to_string(),
        }
    })?;
    // minijinja writes `str`s only.
    String::from_utf8(out.text).map_err(|e| e.to_string())
}

/// The most text one Jinja render may write (the references' values go in after it).
/// Fuel bounds the instructions, not what each writes: a loop printing
/// `{{ "x" * 100000000 }}` must fail here, not exhaust memory.
pub const JINJA_MAX_OUTPUT: usize = 64 << 20;

/// A render's output, refusing to grow past `left` more bytes.
struct Capped {
    text: Vec<u8>,
    left: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.left {
            return Err(std::io::Error::other(format!(
                "the rendered text is over {} MiB",
                JINJA_MAX_OUTPUT >> 20
            )));
        }
        self.left -= buf.len();
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_jinja_variables_render_empty() {
        assert_eq!(render_jinja("q={{ sys_query|upper }}", &[]).unwrap(), "q=");
        assert_eq!(
            render_jinja("{% for i in range(2) %}[x]{% endfor %}", &[]).unwrap(),
            "[x][x]"
        );
    }

    #[test]
    fn a_runaway_loop_ends_in_an_error() {
        let endless =
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}";
        let err = render_jinja(endless, &[]).unwrap_err();
        assert!(err.contains("fuel"), "{err}");
        let many = "{% for a in range(100) %}{% for b in range(100) %}x{% endfor %}{% endfor %}";
        assert_eq!(render_jinja(many, &[]).unwrap().len(), 10_000);
    }

    #[test]
    fn a_runaway_output_ends_in_an_error() {
        let huge = "{% for a in range(100) %}{{ 'x' * 10000000 }}{% endfor %}";
        let err = render_jinja(huge, &[]).unwrap_err();
        assert!(err.contains("over 64 MiB"), "{err}");
        let big = "{{ 'x' * 1000000 }}\n{{ v }}\n";
        let out = render_jinja(big, &[("v".into(), "é".into())]).unwrap();
        assert_eq!(out.len(), 1_000_000 + 1 + 2, "{:?}", &out[out.len() - 4..]);
    }

    /// Values print as Python's `str()`; `escape` and `center` as Jinja2's.
    #[test]
    fn values_print_as_python_and_filters_as_jinja2() {
        let r = |t: &str| render_jinja(t, &[("v".into(), "<a href='x'>&</a>".into())]).unwrap();
        assert_eq!(r("{{ ['a', 1, none, 2.5] }}"), "['a', 1, None, 2.5]");
        assert_eq!(
            r("{{ {'k': 'v'} }} {{ 1e20 }} {{ 8 / 2 }}"),
            "{'k': 'v'} 1e+20 4.0"
        );
        assert_eq!(
            r("{{ v | e }}"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(
            r("[{{ 'ab' | center(5) }}][{{ 'ab' | center(6) }}][{{ 'abc' | center(6) }}]"),
            "[  ab ][  ab  ][ abc  ]"
        );
    }
}
