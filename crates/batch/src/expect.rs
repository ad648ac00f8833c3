//! A row's checks (`expect`) and how they are judged against what its run gave.
//!
//! ```yaml
//! expect:
//!   contains: refund            # text (or a list: each must be there) in the answer
//!   not_contains: [sorry]       # text that must not be
//!   equals: "Refund approved."  # the whole answer (surrounding whitespace aside)
//!   regex: "order #\\d+"        # a regular expression that must match
//!   max_tokens: 2000            # tokens the run's model calls used, at most
//!   max_seconds: 30             # seconds the row took, at most
//!   outputs:                    # the same text checks on a named output
//!     "Categorize:Router@category_name": {equals: billing}
//! ```
//!
//! A named output is `COMPONENT_ID@NAME` (its last `node_finished` in the run; `NAME`
//! may be dotted into an object), or a key of the run's final outputs.

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::observe::Observed;

/// The checks of one row.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// Each check, in the order given.
    pub checks: Vec<Check>,
}

impl PartialEq for Expect {
    fn eq(&self, other: &Self) -> bool {
        self.to_value() == other.to_value()
    }
}

/// What a check looks at.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// The run's answer: the text of its last turn's messages.
    Answer,
    /// A named output (`COMPONENT_ID@NAME`, or a key of the final outputs).
    Output(String),
}

/// One check.
#[derive(Debug, Clone)]
pub enum Check {
    /// The target holds this text.
    Contains(Target, String),
    /// The target does not hold this text.
    NotContains(Target, String),
    /// The target is this text (surrounding whitespace aside).
    Equals(Target, String),
    /// The target matches this expression.
    Regex(Target, Regex),
    /// The run's model calls used at most this many tokens.
    MaxTokens(u64),
    /// The row took at most this many seconds.
    MaxSeconds(f64),
}

/// How one check went, as the results show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check's name (`contains`, `max_tokens`, ...).
    pub check: String,
    /// What it looked at: `answer`, an output's name, `usage` or `seconds`.
    pub on: String,
    /// What was expected.
    pub expected: Value,
    /// Whether it held.
    pub passed: bool,
    /// What was found, for the checks whose finding is short (tokens, seconds, a
    /// missing output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
}

/// The text checks, by name.
const TEXT_CHECKS: &[&str] = &["contains", "not_contains", "equals", "regex"];

impl Expect {
    /// The checks of an `expect` value (see the module docs); the message says what is
    /// wrong.
    pub fn from_value(v: &Value) -> Result<Expect, String> {
        let Value::Object(o) = v else {
            return Err(format!("`expect` must be a mapping of checks, not {v}"));
        };
        let mut checks = Vec::new();
        for (k, v) in o {
            match k.as_str() {
                "max_tokens" => {
                    let n = number(v)
                        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
                        .ok_or_else(|| {
                            format!("`expect.max_tokens` must be a whole number, not {v}")
                        })?;
                    checks.push(Check::MaxTokens(n as u64));
                }
                "max_seconds" => {
                    let n = number(v).filter(|n| *n >= 0.0).ok_or_else(|| {
                        format!("`expect.max_seconds` must be a number of seconds, not {v}")
                    })?;
                    checks.push(Check::MaxSeconds(n));
                }
                "outputs" => {
                    let Value::Object(outs) = v else {
                        return Err(format!(
                            "`expect.outputs` must map output names to checks, not {v}"
                        ));
                    };
                    for (name, on) in outs {
                        let Value::Object(on) = on else {
                            return Err(format!(
                                "`expect.outputs.{name}` must be a mapping of checks, not {on}"
                            ));
                        };
                        for (check, arg) in on {
                            text_check(&mut checks, Target::Output(name.clone()), check, arg)?;
                        }
                    }
                }
                name if TEXT_CHECKS.contains(&name) => {
                    text_check(&mut checks, Target::Answer, name, v)?;
                }
                other => {
                    let known = [
                        "contains",
                        "not_contains",
                        "equals",
                        "regex",
                        "max_tokens",
                        "max_seconds",
                        "outputs",
                    ];
                    let hint = canvas_dsl::suggest::closest(other, known.iter().copied())
                        .map(|near| format!(" (did you mean \"{near}\"?)"))
                        .unwrap_or_else(|| format!(" (checks are {})", known.join(", ")));
                    return Err(format!("unknown check \"{other}\"{hint}"));
                }
            }
        }
        Ok(Expect { checks })
    }

    /// The checks as an `expect` value again (stored with the row).
    pub fn to_value(&self) -> Value {
        let mut o = serde_json::Map::new();
        let mut outputs = serde_json::Map::new();
        for c in &self.checks {
            let (target, name, arg) = match c {
                Check::Contains(t, s) => (Some(t), "contains", Value::from(s.as_str())),
                Check::NotContains(t, s) => (Some(t), "not_contains", Value::from(s.as_str())),
                Check::Equals(t, s) => (Some(t), "equals", Value::from(s.as_str())),
                Check::Regex(t, r) => (Some(t), "regex", Value::from(r.as_str())),
                Check::MaxTokens(n) => (None, "max_tokens", Value::from(*n)),
                Check::MaxSeconds(n) => (None, "max_seconds", Value::from(*n)),
            };
            let slot = match target {
                Some(Target::Output(name)) => {
                    let on = outputs
                        .entry(name.clone())
                        .or_insert_with(|| Value::Object(serde_json::Map::new()));
                    match on {
                        Value::Object(m) => m,
                        _ => continue,
                    }
                }
                _ => &mut o,
            };
            push_arg(slot, name, arg);
        }
        if !outputs.is_empty() {
            o.insert("outputs".into(), Value::Object(outputs));
        }
        Value::Object(o)
    }

    /// Judge every check against what the row's run gave.
    pub fn judge(&self, seen: &Observed, seconds: f64) -> Vec<CheckResult> {
        self.checks.iter().map(|c| c.judge(seen, seconds)).collect()
    }
}

/// Add `arg` under `name`, a list when a name comes more than once (`contains`).
fn push_arg(o: &mut serde_json::Map<String, Value>, name: &str, arg: Value) {
    match o.get_mut(name) {
        None => {
            o.insert(name.into(), arg);
        }
        Some(Value::Array(list)) => list.push(arg),
        Some(first) => {
            let first = first.take();
            o.insert(name.into(), Value::Array(vec![first, arg]));
        }
    }
}

/// `text` cut to a length a summary line can show.
fn shortened(text: &str) -> String {
    const MAX: usize = 80;
    let t = text.trim();
    match t.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

/// A number, or text that is one (CSV cells are text).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Text as a check's argument: numbers and booleans are their text (YAML reads `42` as
/// a number).
fn text_arg(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
        _ => None,
    }
}

fn text_check(checks: &mut Vec<Check>, on: Target, name: &str, arg: &Value) -> Result<(), String> {
    let args: Vec<&Value> = match arg {
        Value::Array(list) if name == "contains" || name == "not_contains" => list.iter().collect(),
        one => vec![one],
    };
    for a in args {
        let text = text_arg(a).ok_or_else(|| format!("`{name}` takes text, not {a}"))?;
        checks.push(match name {
            "contains" => Check::Contains(on.clone(), text),
            "not_contains" => Check::NotContains(on.clone(), text),
            "equals" => Check::Equals(on.clone(), text),
            "regex" => Check::Regex(
                on.clone(),
                Regex::new(&text).map_err(|e| format!("`regex` {text:?} is not valid: {e}"))?,
            ),
            other => {
                let hint = canvas_dsl::suggest::closest(other, TEXT_CHECKS.iter().copied())
                    .map(|near| format!(" (did you mean \"{near}\"?)"))
                    .unwrap_or_default();
                return Err(format!("unknown check \"{other}\" on an output{hint}"));
            }
        });
    }
    Ok(())
}

impl Check {
    fn judge(&self, seen: &Observed, seconds: f64) -> CheckResult {
        let text = |t: &Target| -> Option<String> {
            match t {
                Target::Answer => Some(seen.answer.clone()),
                Target::Output(name) => seen.output(name).map(|v| match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                }),
            }
        };
        let on = |t: &Target| match t {
            Target::Answer => "answer".to_string(),
            Target::Output(name) => name.clone(),
        };
        let textual = |name: &str, t: &Target, expected: &str, holds: &dyn Fn(&str) -> bool| {
            let found = text(t);
            let passed = found.as_deref().is_some_and(holds);
            CheckResult {
                check: name.to_string(),
                on: on(t),
                expected: Value::from(expected),
                passed,
                actual: match found {
                    None => Some(Value::from("no such output")),
                    // What a failed `equals` found says why at once (the answer itself
                    // is in the results).
                    Some(f) if !passed && name == "equals" => Some(Value::from(shortened(&f))),
                    Some(_) => None,
                },
            }
        };
        match self {
            Check::Contains(t, s) => textual("contains", t, s, &|x| x.contains(s.as_str())),
            Check::NotContains(t, s) => textual("not_contains", t, s, &|x| !x.contains(s.as_str())),
            Check::Equals(t, s) => textual("equals", t, s, &|x| x.trim() == s.trim()),
            Check::Regex(t, r) => textual("regex", t, r.as_str(), &|x| r.is_match(x)),
            Check::MaxTokens(n) => CheckResult {
                check: "max_tokens".into(),
                on: "usage".into(),
                expected: Value::from(*n),
                passed: seen.usage.total_tokens <= *n,
                actual: Some(Value::from(seen.usage.total_tokens)),
            },
            Check::MaxSeconds(n) => CheckResult {
                check: "max_seconds".into(),
                on: "seconds".into(),
                expected: Value::from(*n),
                passed: seconds <= *n,
                actual: Some(Value::from((seconds * 1000.0).round() / 1000.0)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_engine::usage::Usage;
    use serde_json::json;

    fn seen(answer: &str) -> Observed {
        let mut o = Observed {
            answer: answer.into(),
            ..Observed::default()
        };
        o.nodes.insert(
            "Categorize:R".into(),
            json!({"category_name": "billing", "deep": {"n": 3}})
                .as_object()
                .cloned()
                .unwrap(),
        );
        o.outputs = json!({"content": "final"});
        o.usage = Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            calls: 1,
        };
        o
    }

    fn passed(expect: Value, answer: &str, seconds: f64) -> Vec<bool> {
        Expect::from_value(&expect)
            .unwrap()
            .judge(&seen(answer), seconds)
            .iter()
            .map(|r| r.passed)
            .collect()
    }

    #[test]
    fn text_checks_on_the_answer() {
        assert_eq!(
            passed(
                json!({"contains": ["refund", "order"], "not_contains": "sorry"}),
                "your refund for order 5",
                0.0
            ),
            [true, true, true]
        );
        assert_eq!(passed(json!({"contains": "refund"}), "no", 0.0), [false]);
        assert_eq!(passed(json!({"equals": "ok"}), " ok\n", 0.0), [true]);
        assert_eq!(passed(json!({"equals": "ok"}), "ok!", 0.0), [false]);
        let r = Expect::from_value(&json!({"equals": "ok"}))
            .unwrap()
            .judge(&seen(&"x".repeat(200)), 0.0);
        assert_eq!(r[0].actual, Some(json!(format!("{}…", "x".repeat(80)))));
        assert_eq!(passed(json!({"regex": "#\\d+$"}), "order #42", 0.0), [true]);
        assert_eq!(passed(json!({"not_contains": "x"}), "xyz", 0.0), [false]);
    }

    #[test]
    fn limits_and_outputs() {
        assert_eq!(
            passed(json!({"max_tokens": 15, "max_seconds": "0.5"}), "", 0.4),
            [true, true]
        );
        assert_eq!(
            passed(json!({"max_tokens": 14, "max_seconds": 0.3}), "", 0.4),
            [false, false]
        );
        let e = json!({"outputs": {
            "Categorize:R@category_name": {"equals": "billing"},
            "Categorize:R@deep.n": {"equals": 3},
            "content": {"contains": "fin"},
            "Nope:X@y": {"contains": "a"}
        }});
        assert_eq!(passed(e.clone(), "", 0.0), [true, true, true, false]);
        let r = Expect::from_value(&e).unwrap().judge(&seen(""), 0.0);
        assert_eq!(r[3].actual, Some(json!("no such output")));
        assert_eq!(r[0].on, "Categorize:R@category_name");
    }

    #[test]
    fn bad_checks_say_what_is_wrong() {
        let err = |v: Value| Expect::from_value(&v).unwrap_err();
        assert!(err(json!({"contain": "x"})).contains("did you mean \"contains\""));
        assert!(err(json!({"max_tokens": -1})).contains("whole number"));
        assert!(err(json!({"regex": "("})).contains("is not valid"));
        assert!(err(json!({"contains": {"a": 1}})).contains("takes text"));
        assert!(err(json!("x")).contains("mapping of checks"));
        assert!(err(json!({"outputs": {"a@b": {"bigger": 1}}})).contains("unknown check"));
    }

    #[test]
    fn checks_round_trip_through_their_value() {
        let v =
            json!({"contains": ["a", "b"], "max_tokens": 5, "outputs": {"x@y": {"equals": "z"}}});
        let e = Expect::from_value(&v).unwrap();
        assert_eq!(e.to_value(), v);
        assert_eq!(Expect::from_value(&e.to_value()).unwrap(), e);
    }
}
