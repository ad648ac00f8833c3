//! Asking a form's questions on the terminal: the fields of a paused UserFillUp (and
//! Begin's task-mode inputs, which use the same field definitions
//! `{key: {name, type, optional, options, value?}}`).
//!
//! Prompts are drawn on the terminal given (the caller passes `Term::stderr()`) because
//! stdout carries the event stream. Type dispatch and validation are pure functions
//! ([`field_kind`], [`parse_answer`]) so they are tested without a terminal; the
//! dialoguer prompts only collect raw answers and re-ask until [`parse_answer`] accepts.

use std::io::{self, IsTerminal};
use std::path::PathBuf;

use dialoguer::console::{Key, Term, colors_enabled_stderr, measure_text_width};
use dialoguer::theme::{ColorfulTheme, SimpleTheme, Theme};
use dialoguer::{Confirm, Input, Select};
use serde_json::{Map, Value};

/// How a field is asked, and how its answer is typed.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// One line of text (`line`, `string`, `text`, and any type we do not know).
    Line,
    /// Several lines of text (`paragraph`).
    Paragraph,
    /// One of the listed options (`options` with a non-empty `options` list).
    Options(Vec<Value>),
    /// A whole number (`integer`, `int`).
    Integer,
    /// A finite number (`float`, `number`).
    Float,
    /// Yes or no (`boolean`, `bool`).
    Boolean,
    /// Any JSON value (`object`).
    Object,
    /// The path of an existing file (any type containing `file`).
    File,
}

/// The kind of a field definition, from its `type` (case-insensitive) and `options`.
pub fn field_kind(def: &Value) -> FieldKind {
    let ty = def
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match ty.as_str() {
        "paragraph" => FieldKind::Paragraph,
        "integer" | "int" => FieldKind::Integer,
        "float" | "number" => FieldKind::Float,
        "boolean" | "bool" => FieldKind::Boolean,
        "object" => FieldKind::Object,
        // An options field without options cannot be a menu; a free answer beats a dead end.
        "options" => match def.get("options").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => FieldKind::Options(list.clone()),
            _ => FieldKind::Line,
        },
        t if t.contains("file") => FieldKind::File,
        _ => FieldKind::Line,
    }
}

/// Whether the definition marks the field optional.
fn is_optional(def: &Value) -> bool {
    matches!(def.get("optional"), Some(Value::Bool(true)))
}

/// How an option is shown and matched: strings as they are, anything else as JSON.
pub fn option_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The typed value of a raw answer for a field definition, or why it is not acceptable.
/// An empty answer is `null` for an optional field and an error otherwise.
pub fn parse_answer(def: &Value, raw: &str) -> Result<Value, String> {
    let text = raw.trim();
    if text.is_empty() {
        return if is_optional(def) {
            Ok(Value::Null)
        } else {
            Err("an answer is required".into())
        };
    }
    match field_kind(def) {
        // Text is kept as typed: surrounding spaces may be meant.
        FieldKind::Line | FieldKind::Paragraph => Ok(Value::String(raw.to_string())),
        FieldKind::Integer => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{text:?} is not a whole number (for example 42)")),
        FieldKind::Float => {
            let f: f64 = text
                .parse()
                .map_err(|_| format!("{text:?} is not a number (for example 3.5)"))?;
            serde_json::Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| format!("{text:?} is not a finite number"))
        }
        FieldKind::Boolean => match text.to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" | "1" | "on" => Ok(Value::Bool(true)),
            "false" | "no" | "n" | "0" | "off" => Ok(Value::Bool(false)),
            _ => Err(format!("{text:?} is not yes or no")),
        },
        FieldKind::Object => serde_json::from_str::<Value>(text)
            .map_err(|e| format!("not valid JSON ({e}); for example {{\"key\": \"value\"}}")),
        FieldKind::File => {
            let path = expand_home(text);
            if !path.exists() {
                Err(format!("no such file: {text}"))
            } else if !path.is_file() {
                Err(format!("{text} is not a file"))
            } else {
                Ok(Value::String(path.to_string_lossy().into_owned()))
            }
        }
        FieldKind::Options(list) => pick_option(&list, text).ok_or_else(|| {
            format!(
                "{text:?} is not one of: {}",
                list.iter().map(option_text).collect::<Vec<_>>().join(", ")
            )
        }),
    }
}

/// The option `text` names: the one shown exactly so, else the only one equal to it
/// ignoring case (a case slip is forgiven only when it cannot pick the wrong option).
pub fn pick_option(list: &[Value], text: &str) -> Option<Value> {
    if let Some(v) = list.iter().find(|v| option_text(v) == text) {
        return Some(v.clone());
    }
    let folded: Vec<&Value> = list
        .iter()
        .filter(|v| option_text(v).to_lowercase() == text.to_lowercase())
        .collect();
    match folded.as_slice() {
        [one] => Some((*one).clone()),
        _ => None,
    }
}

/// `~/x` → `$HOME/x`: the shell does not expand a path typed at a prompt.
fn expand_home(text: &str) -> PathBuf {
    match (text.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(text),
    }
}

/// The prompt for a field: its `name` (else its key) and notes on what to type.
fn prompt_text(key: &str, def: &Value) -> String {
    let label = def
        .get("name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(key);
    let mut notes = Vec::new();
    if is_optional(def) {
        notes.push("optional");
    }
    match field_kind(def) {
        FieldKind::Integer => notes.push("whole number"),
        FieldKind::Float => notes.push("number"),
        FieldKind::Object => notes.push("JSON"),
        FieldKind::File => notes.push("file path"),
        FieldKind::Paragraph => notes.push("end with an empty line"),
        FieldKind::Line | FieldKind::Boolean | FieldKind::Options(_) => {}
    }
    let mut text = if notes.is_empty() {
        label.to_string()
    } else {
        format!("{label} ({})", notes.join(", "))
    };
    if field_kind(def) == FieldKind::Boolean {
        // The capital letter is what Enter alone answers.
        text.push_str(match def.get("value") {
            Some(Value::Bool(true)) => " [Y/n]",
            Some(Value::Bool(false)) => " [y/N]",
            _ => " [y/n]",
        });
    }
    text
}

/// The field's current value as the text offered by default (a Begin input may carry
/// one; a paused form's values are `null`).
fn default_text(def: &Value) -> Option<String> {
    match def.get("value")? {
        Value::Null => None,
        Value::String(s) if s.trim().is_empty() => None,
        Value::String(s) => Some(s.clone()),
        v => Some(v.to_string()),
    }
}

/// Ask a paused form on the terminal: prints `form["tips"]` (if any) once, then asks
/// every field of `form["inputs"]` in order; returns field key → typed value.
pub fn ask_form(form: &Value, term: &Term) -> io::Result<Map<String, Value>> {
    let empty = Map::new();
    let fields = form
        .get("inputs")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let tips = form.get("tips").and_then(Value::as_str).unwrap_or("");
    ask_fields(fields, tips, term)
}

/// Ask `fields` (`{key: definition}`, e.g. Begin's inputs) after printing `tips` (if
/// non-empty); returns key → typed value, `null` for an unanswered optional field.
/// Errors: `NotConnected` when `term` is not a terminal, `UnexpectedEof` on Ctrl-D or a
/// closed terminal, `Interrupted` on Ctrl-C when the process handles SIGINT (console
/// raises SIGINT on Ctrl-C, so without a handler the process ends as on any Ctrl-C).
pub fn ask_fields(
    fields: &Map<String, Value>,
    tips: &str,
    term: &Term,
) -> io::Result<Map<String, Value>> {
    // Without a terminal every read returns "" at once: a required field would loop.
    if !term.is_term() {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "cannot ask the form: not a terminal",
        ));
    }
    let theme: Box<dyn Theme> = if colors_enabled_stderr() {
        Box::new(ColorfulTheme::default())
    } else {
        Box::new(SimpleTheme)
    };
    let tips = tips.trim_end();
    if !tips.trim().is_empty() {
        term.write_line(tips)?;
    }
    let mut answers = Map::new();
    for (key, def) in fields {
        let value = ask_field(key, def, term, theme.as_ref())?;
        answers.insert(key.clone(), value);
    }
    Ok(answers)
}

/// Ctrl-D: raw mode delivers it as a character, not as end of input.
fn is_eof(s: &str) -> bool {
    s.contains('\x04')
}

fn eof() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "input ended (Ctrl-D)")
}

/// Ask one field, re-asking until the answer is acceptable.
fn ask_field(key: &str, def: &Value, term: &Term, theme: &dyn Theme) -> io::Result<Value> {
    let prompt = prompt_text(key, def);
    let optional = is_optional(def);
    match field_kind(def) {
        FieldKind::Options(list) => {
            let mut items: Vec<String> = list.iter().map(option_text).collect();
            if optional {
                items.push("(no answer)".into());
            }
            let current = default_text(def)
                .and_then(|d| items.iter().position(|i| *i == d))
                .unwrap_or(0);
            let picked = Select::with_theme(theme)
                .with_prompt(prompt)
                .items(&items)
                .default(current)
                .interact_on(term);
            let picked = restore_cursor(term, picked)?;
            Ok(list.get(picked).cloned().unwrap_or(Value::Null))
        }
        FieldKind::Paragraph => ask_paragraph(&prompt, def, term, theme),
        _ => {
            let mut input = Input::<String>::with_theme(theme)
                .with_prompt(prompt)
                .allow_empty(true)
                // Ctrl-D passes validation so it can end the prompt below.
                .validate_with(|s: &String| -> Result<(), String> {
                    if is_eof(s) {
                        Ok(())
                    } else {
                        parse_answer(def, s).map(|_| ())
                    }
                });
            // Yes/no is typed and checked like any answer, so that a word that merely
            // contains a y or an n (`maybe`) is asked again rather than taken.
            let yes_no = (field_kind(def) == FieldKind::Boolean)
                .then(|| def.get("value").and_then(Value::as_bool))
                .flatten();
            if let Some(b) = yes_no {
                let answer = if b { "yes" } else { "no" };
                input = input.default(answer.to_string()).show_default(false);
            } else if let Some(d) = default_text(def) {
                input = input.default(d);
            }
            let raw = input.interact_on(term)?;
            if is_eof(&raw) {
                return Err(eof());
            }
            parse_answer(def, &raw).map_err(io::Error::other)
        }
    }
}

/// Several lines, ended by an empty line. dialoguer has no multi-line input without its
/// `editor` feature, and a single-line input would send the rest of a pasted paragraph
/// to the next questions.
fn ask_paragraph(prompt: &str, def: &Value, term: &Term, theme: &dyn Theme) -> io::Result<Value> {
    let mut header = String::new();
    theme
        .format_prompt(&mut header, prompt)
        .map_err(io::Error::other)?;
    loop {
        term.write_line(&header)?;
        let mut lines = Vec::new();
        loop {
            term.write_str("> ")?;
            term.flush()?;
            let line = term.read_line()?;
            if is_eof(&line) {
                return Err(eof());
            }
            if line.trim().is_empty() {
                break;
            }
            lines.push(line);
        }
        match parse_answer(def, &lines.join("\n")) {
            Ok(v) => return Ok(v),
            Err(msg) => {
                let mut err = String::new();
                theme
                    .format_error(&mut err, &msg)
                    .map_err(io::Error::other)?;
                term.write_line(&err)?;
            }
        }
    }
}

/// Confirm and Select hide the cursor while they run; an interrupted one must not leave
/// it hidden.
fn restore_cursor<T>(term: &Term, r: dialoguer::Result<T>) -> io::Result<T> {
    r.map_err(|e| {
        let _ = term.show_cursor();
        io::Error::from(e)
    })
}

/// Ask a yes/no question on `term`, `[y/N]`: true only for an explicit yes. Enter alone,
/// no, Ctrl-D or a closed terminal are no; `NotConnected` when `term` is not a terminal.
pub fn confirm(question: &str, term: &Term) -> io::Result<bool> {
    if !term.is_term() {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "cannot ask: not a terminal",
        ));
    }
    let theme: Box<dyn Theme> = if colors_enabled_stderr() {
        Box::new(ColorfulTheme::default())
    } else {
        Box::new(SimpleTheme)
    };
    let answer = Confirm::with_theme(theme.as_ref())
        .with_prompt(question)
        .default(false)
        .wait_for_newline(true)
        .interact_on_opt(term);
    Ok(restore_cursor(term, answer)?.unwrap_or(false))
}

/// Read one line typed on `term` after `prompt`, as a chat reads its messages: `None`
/// at the end of input, that is Ctrl-D on an empty line (as a shell takes it) or a
/// closed terminal. Printable characters and Backspace edit the line, Enter ends it.
/// Raw mode delivers Ctrl-D as a character, and dialoguer's text input drops control
/// characters, so it could never end a chat: this reads the keys itself.
pub fn read_line(prompt: &str, term: &Term) -> io::Result<Option<String>> {
    if !term.is_term() {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "cannot read a line: not a terminal",
        ));
    }
    term.write_str(&format!("{prompt}: "))?;
    term.flush()?;
    let mut line = String::new();
    loop {
        match term.read_key() {
            Ok(Key::Enter) => {
                term.write_line("")?;
                return Ok(Some(line));
            }
            Ok(Key::Char('\x04')) if line.is_empty() => {
                term.write_line("")?;
                return Ok(None);
            }
            Ok(Key::Backspace) => {
                if let Some(c) = line.pop() {
                    term.clear_chars(measure_text_width(&c.to_string()))?;
                }
            }
            Ok(Key::Char(c)) if !c.is_control() => {
                line.push(c);
                term.write_str(c.encode_utf8(&mut [0; 4]))?;
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        term.flush()?;
    }
}

/// Whether a form may be asked: stdin and stderr are terminals, `--non-interactive` was
/// not given, and `CI` is not set to `true` or `1`.
pub fn can_prompt(non_interactive: bool) -> bool {
    prompt_allowed(
        non_interactive,
        io::stdin().is_terminal() && io::stderr().is_terminal(),
        std::env::var("CI").ok().as_deref(),
    )
}

fn prompt_allowed(non_interactive: bool, ttys: bool, ci: Option<&str>) -> bool {
    let ci = ci.is_some_and(|v| {
        let v = v.trim();
        v == "1" || v.eq_ignore_ascii_case("true")
    });
    !non_interactive && ttys && !ci
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(ty: &str) -> Value {
        json!({"name": "F", "type": ty, "optional": false, "value": null})
    }

    fn optional(ty: &str) -> Value {
        json!({"name": "F", "type": ty, "optional": true})
    }

    #[test]
    fn kinds_by_type() {
        assert_eq!(field_kind(&field("line")), FieldKind::Line);
        assert_eq!(field_kind(&field("string")), FieldKind::Line);
        assert_eq!(field_kind(&field("mystery")), FieldKind::Line);
        assert_eq!(field_kind(&json!({"name": "untyped"})), FieldKind::Line);
        assert_eq!(field_kind(&Value::Null), FieldKind::Line);
        assert_eq!(field_kind(&field("paragraph")), FieldKind::Paragraph);
        assert_eq!(field_kind(&field("integer")), FieldKind::Integer);
        assert_eq!(field_kind(&field("int")), FieldKind::Integer);
        assert_eq!(field_kind(&field("Integer")), FieldKind::Integer);
        assert_eq!(field_kind(&field("float")), FieldKind::Float);
        assert_eq!(field_kind(&field("number")), FieldKind::Float);
        assert_eq!(field_kind(&field("Number")), FieldKind::Float);
        assert_eq!(field_kind(&field("boolean")), FieldKind::Boolean);
        assert_eq!(field_kind(&field("bool")), FieldKind::Boolean);
        assert_eq!(field_kind(&field("object")), FieldKind::Object);
        assert_eq!(field_kind(&field("Object")), FieldKind::Object);
        assert_eq!(field_kind(&field("file")), FieldKind::File);
        assert_eq!(field_kind(&field("image_file")), FieldKind::File);
        assert_eq!(field_kind(&field("FILE")), FieldKind::File);
        let opts = json!({"type": "options", "options": ["loop", "message"]});
        assert_eq!(
            field_kind(&opts),
            FieldKind::Options(vec![json!("loop"), json!("message")])
        );
        // The real fixtures carry `"options": []` on every field; without a list an
        // options field falls back to free text.
        assert_eq!(
            field_kind(&json!({"type": "options", "options": []})),
            FieldKind::Line
        );
        assert_eq!(field_kind(&json!({"type": "options"})), FieldKind::Line);
    }

    #[test]
    fn text_answers_are_kept_as_typed() {
        assert_eq!(parse_answer(&field("line"), "Rome"), Ok(json!("Rome")));
        assert_eq!(parse_answer(&field("line"), " Rome "), Ok(json!(" Rome ")));
        assert_eq!(parse_answer(&field("string"), "42"), Ok(json!("42")));
        assert_eq!(
            parse_answer(&field("paragraph"), "one\ntwo"),
            Ok(json!("one\ntwo"))
        );
        assert_eq!(parse_answer(&field("mystery"), "[1]"), Ok(json!("[1]")));
    }

    #[test]
    fn integers() {
        let def = field("integer");
        assert_eq!(parse_answer(&def, "3"), Ok(json!(3)));
        assert_eq!(parse_answer(&def, " -12 "), Ok(json!(-12)));
        let err = parse_answer(&def, "abc").unwrap_err();
        assert!(err.contains("\"abc\" is not a whole number"), "{err}");
        assert!(parse_answer(&def, "3.5").is_err());
        assert!(parse_answer(&def, "99999999999999999999").is_err());
        assert_eq!(parse_answer(&field("int"), "7"), Ok(json!(7)));
    }

    #[test]
    fn floats() {
        let def = field("float");
        assert_eq!(parse_answer(&def, "3.5"), Ok(json!(3.5)));
        assert_eq!(parse_answer(&def, "2"), Ok(json!(2.0)));
        assert_eq!(parse_answer(&field("number"), "-1e3"), Ok(json!(-1000.0)));
        let err = parse_answer(&def, "abc").unwrap_err();
        assert!(err.contains("is not a number"), "{err}");
        for bad in ["inf", "NaN", "-infinity"] {
            let err = parse_answer(&def, bad).unwrap_err();
            assert!(err.contains("not a finite number"), "{bad}: {err}");
        }
    }

    #[test]
    fn booleans() {
        let def = field("boolean");
        for yes in ["true", "Yes", "y", "1", "on"] {
            assert_eq!(parse_answer(&def, yes), Ok(json!(true)), "{yes}");
        }
        for no in ["false", "NO", "n", "0", "off"] {
            assert_eq!(parse_answer(&def, no), Ok(json!(false)), "{no}");
        }
        let err = parse_answer(&field("bool"), "maybe").unwrap_err();
        assert!(err.contains("is not yes or no"), "{err}");
    }

    #[test]
    fn objects_are_json() {
        let def = field("object");
        assert_eq!(parse_answer(&def, r#"{"a": 1}"#), Ok(json!({"a": 1})));
        assert_eq!(parse_answer(&def, "[1, 2]"), Ok(json!([1, 2])));
        let err = parse_answer(&def, "{a: 1}").unwrap_err();
        assert!(err.starts_with("not valid JSON"), "{err}");
        assert!(parse_answer(&def, "Rome").is_err());
    }

    #[test]
    fn files_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "x").unwrap();
        let text = path.to_string_lossy().into_owned();
        let def = field("file");
        assert_eq!(parse_answer(&def, &text), Ok(json!(text)));
        let missing = dir.path().join("nope.txt").to_string_lossy().into_owned();
        let err = parse_answer(&def, &missing).unwrap_err();
        assert!(err.starts_with("no such file"), "{err}");
        let err = parse_answer(&def, &dir.path().to_string_lossy()).unwrap_err();
        assert!(err.ends_with("is not a file"), "{err}");
    }

    #[test]
    fn options_must_be_listed() {
        let def = json!({"name": "Room", "type": "options", "options": ["Single", "Suite", "suite"], "optional": false});
        assert_eq!(parse_answer(&def, "Suite"), Ok(json!("Suite")));
        assert_eq!(parse_answer(&def, " Single "), Ok(json!("Single")));
        assert_eq!(parse_answer(&def, "single"), Ok(json!("Single")));
        // Two options differ only in case: no guessing.
        let err = parse_answer(&def, "SUITE").unwrap_err();
        assert_eq!(err, "\"SUITE\" is not one of: Single, Suite, suite");
        assert!(parse_answer(&def, "Double").is_err());
        let numbers = json!({"type": "options", "options": [1, 2]});
        assert_eq!(parse_answer(&numbers, "2"), Ok(json!(2)));
        assert_eq!(
            pick_option(&[json!("a"), json!("b")], "B"),
            Some(json!("b"))
        );
        assert_eq!(pick_option(&[json!("a")], "c"), None);
    }

    #[test]
    fn empty_answers() {
        for ty in [
            "line",
            "paragraph",
            "integer",
            "float",
            "boolean",
            "object",
            "file",
            "options",
        ] {
            assert_eq!(parse_answer(&optional(ty), ""), Ok(Value::Null), "{ty}");
            assert_eq!(parse_answer(&optional(ty), "  "), Ok(Value::Null), "{ty}");
            assert_eq!(
                parse_answer(&field(ty), " "),
                Err("an answer is required".to_string()),
                "{ty}"
            );
        }
        // A non-object definition (RAGFlow allows them) is a required line.
        assert!(parse_answer(&json!("x"), "").is_err());
    }

    #[test]
    fn prompts_name_the_field() {
        assert_eq!(prompt_text("dest", &field("line")), "F");
        assert_eq!(prompt_text("dest", &json!({"type": "line"})), "dest");
        assert_eq!(
            prompt_text("dest", &json!({"name": " ", "type": "line"})),
            "dest"
        );
        assert_eq!(prompt_text("n", &field("integer")), "F (whole number)");
        assert_eq!(prompt_text("n", &optional("object")), "F (optional, JSON)");
        assert_eq!(prompt_text("n", &optional("boolean")), "F (optional) [y/n]");
        assert_eq!(prompt_text("n", &field("bool")), "F [y/n]");
        let yes = json!({"name": "F", "type": "boolean", "value": true});
        assert_eq!(prompt_text("n", &yes), "F [Y/n]");
        assert_eq!(
            prompt_text("n", &field("paragraph")),
            "F (end with an empty line)"
        );
        assert_eq!(prompt_text("n", &field("file")), "F (file path)");
    }

    #[test]
    fn defaults_come_from_values() {
        assert_eq!(default_text(&field("line")), None);
        assert_eq!(default_text(&json!({"value": ""})), None);
        assert_eq!(default_text(&json!({"value": "loop"})), Some("loop".into()));
        assert_eq!(default_text(&json!({"value": 3})), Some("3".into()));
        assert_eq!(
            default_text(&json!({"value": {"a": 1}})),
            Some(r#"{"a":1}"#.into())
        );
    }

    #[test]
    fn prompting_needs_terminals_and_no_ci() {
        assert!(prompt_allowed(false, true, None));
        assert!(prompt_allowed(false, true, Some("false")));
        assert!(prompt_allowed(false, true, Some("")));
        assert!(!prompt_allowed(true, true, None));
        assert!(!prompt_allowed(false, false, None));
        assert!(!prompt_allowed(false, true, Some("true")));
        assert!(!prompt_allowed(false, true, Some("TRUE")));
        assert!(!prompt_allowed(false, true, Some("1")));
        assert!(!can_prompt(true));
    }

    #[test]
    fn no_terminal_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let read = std::fs::File::create(dir.path().join("in")).unwrap();
        let write = std::fs::File::create(dir.path().join("out")).unwrap();
        let term = Term::read_write_pair(read, write);
        let form = json!({"inputs": {"dest": field("line")}, "tips": "Where to?"});
        let err = ask_form(&form, &term).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotConnected);
        let err = ask_form(&json!({}), &term).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotConnected);
    }

    #[test]
    fn ctrl_d_is_end_of_input() {
        assert!(is_eof("ab\x04"));
        assert!(!is_eof("abc"));
        assert_eq!(eof().kind(), io::ErrorKind::UnexpectedEof);
    }
}
