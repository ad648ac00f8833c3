//! Variable references: RAGFlow's regexes, `get_variable_value`, `set_variable_value`,
//! `is_reff`, and the reference collector (`engine.md` §3.1–§3.3).

use serde_json::Value;

use super::state::{RunState, key_get};
use canvas_pyrt::Object;

use canvas_dsl::syntax::is_bare_cpn_ref;
pub use canvas_dsl::syntax::{ALIAS_PATTERN, REF_PATTERN, REF_PATTERN_CASED, RefPattern};

/// A reference that cannot be resolved. RAGFlow raises here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RefError {
    /// `sys.*`/`env.*` (or any name without `@`) that is not a global.
    #[error("unknown variable `{0}`")]
    UnknownGlobal(String),
    /// `cpn@var` whose component does not exist.
    #[error("reference `{0}` names a component that does not exist")]
    UnknownComponent(String),
}

impl RefError {
    /// The text Python's `str(exception)` gives, which RAGFlow stores in `_ERROR`.
    pub fn py_message(&self) -> String {
        match self {
            RefError::UnknownGlobal(k) => canvas_pyrt::py_repr_str(k),
            RefError::UnknownComponent(e) => format!("Can't find variable: '{e}'"),
        }
    }
}

/// Python `str.strip(chars)` for one character.
fn strip_char(s: &str, c: char) -> &str {
    s.trim_matches(c)
}

/// The stripping `get_variable_value` applies: `{`, `}`, spaces, `{`, `}`.
pub fn strip_ref(exp: &str) -> &str {
    // Most expressions are stored bare: nothing at either end to strip, nothing to scan.
    let strippable = |b: Option<&u8>| matches!(b, Some(b'{' | b'}' | b' '));
    if !strippable(exp.as_bytes().first()) && !strippable(exp.as_bytes().last()) {
        return exp;
    }
    let s = strip_char(exp, '{');
    let s = strip_char(s, '}');
    let s = strip_char(s, ' ');
    let s = strip_char(s, '{');
    strip_char(s, '}')
}

/// RAGFlow's `get_variable_value`.
pub fn resolve(state: &RunState, exp: &str) -> Result<Value, RefError> {
    let exp = strip_ref(exp);
    let Some((cpn, var)) = exp.split_once('@') else {
        return state
            .globals
            .get(exp)
            .cloned()
            .ok_or_else(|| RefError::UnknownGlobal(exp.to_string()));
    };
    if !state.has_node(cpn) {
        return Err(RefError::UnknownComponent(exp.to_string()));
    }
    let (root, rest) = match var.split_once('.') {
        Some((r, rest)) => (r, Some(rest)),
        None => (var, None),
    };
    Ok(match rest {
        // Walked in place: only the value reached is copied, not the whole output.
        Some(rest) if !rest.is_empty() => {
            match state.nodes.get(cpn).and_then(|n| key_get(&n.outputs, root)) {
                Some(v) => walk_path_ref(v, rest),
                None => walk_path(state.output(cpn, root), rest),
            }
        }
        _ => state.output(cpn, root),
    })
}

/// [`walk_path`] on a borrowed value: it copies only the value reached, or, when a
/// JSON string has to be parsed on the way, the rest of the walk from that string.
fn walk_path_ref(mut cur: &Value, mut path: &str) -> Value {
    loop {
        if cur.is_string() {
            return walk_path(cur.clone(), path);
        }
        let (key, tail) = match path.split_once('.') {
            Some((k, t)) => (k, Some(t)),
            None => (path, None),
        };
        let next = match cur {
            Value::Object(o) => key_get(o, key),
            Value::Array(a) => py_int(key).and_then(|i| {
                let len = a.len() as i64;
                let idx = if i < 0 { len + i } else { i };
                usize::try_from(idx).ok().and_then(|i| a.get(i))
            }),
            _ => None,
        };
        match (next, tail) {
            (None, _) => return Value::Null,
            (Some(v), None) => return v.clone(),
            (Some(v), Some(t)) => {
                cur = v;
                path = t;
            }
        }
    }
}

/// [`resolve`], handing `f` the value without copying it when `exp` names an output or
/// a global directly (a dotted path is walked on a copy).
pub fn resolve_with<R>(
    state: &RunState,
    exp: &str,
    f: impl FnOnce(&Value) -> R,
) -> Result<R, RefError> {
    let plain = strip_ref(exp);
    if let Some((cpn, var)) = plain.split_once('@') {
        if !var.contains('.') {
            if let Some(v) = state.nodes.get(cpn).and_then(|n| key_get(&n.outputs, var)) {
                return Ok(f(v));
            }
        }
    } else if let Some(v) = state.globals.get(plain) {
        return Ok(f(v));
    }
    resolve(state, exp).map(|v| f(&v))
}

/// `get_variable_param_value`: walk `a.b.0` into dicts, lists and JSON strings.
pub fn walk_path(mut cur: Value, path: &str) -> Value {
    for key in path.split('.') {
        if let Value::String(s) = &cur {
            cur = serde_json::from_str(s).unwrap_or(Value::Null);
        }
        cur = match cur {
            Value::Null => return Value::Null,
            Value::Object(mut o) => o.remove(key).unwrap_or(Value::Null),
            Value::Array(mut a) => match py_int(key) {
                Some(i) => {
                    let len = a.len() as i64;
                    let idx = if i < 0 { len + i } else { i };
                    if idx >= 0 && idx < len {
                        a.swap_remove(idx as usize)
                    } else {
                        Value::Null
                    }
                }
                None => Value::Null,
            },
            _ => Value::Null,
        };
    }
    cur
}

/// Python `int(str)` for the cases a path index can take.
fn py_int(s: &str) -> Option<i64> {
    let t = s.trim();
    if t.contains('_') {
        t.replace('_', "").parse::<i64>().ok()
    } else {
        t.parse::<i64>().ok()
    }
}

/// RAGFlow's `set_variable_value`: globals, outputs, and dotted paths (creating dicts).
pub fn assign(state: &mut RunState, exp: &str, value: Value) -> Result<(), RefError> {
    let exp = strip_ref(exp);
    let Some((cpn, var)) = exp.split_once('@') else {
        state.set_global(exp, value);
        return Ok(());
    };
    if !state.has_node(cpn) {
        return Err(RefError::UnknownComponent(exp.to_string()));
    }
    let Some((root, rest)) = var.split_once('.') else {
        state.set_output(cpn, var, value);
        return Ok(());
    };
    let mut obj = match state.output(cpn, root) {
        Value::Object(o) => o,
        _ => Object::new(),
    };
    let keys: Vec<&str> = rest.split('.').collect();
    set_in(&mut obj, &keys, value);
    state.set_output(cpn, root, Value::Object(obj));
    Ok(())
}

fn set_in(obj: &mut Object, keys: &[&str], value: Value) {
    match keys {
        [] => {}
        [last] => {
            obj.insert((*last).to_string(), value);
        }
        [first, rest @ ..] => {
            let entry = obj
                .entry((*first).to_string())
                .or_insert_with(|| Value::Object(Object::new()));
            if !entry.is_object() {
                *entry = Value::Object(Object::new());
            }
            if let Value::Object(inner) = entry {
                set_in(inner, rest, value);
            }
        }
    }
}

/// RAGFlow's `is_reff`, fixed: the whole string must be one reference (RAGFlow also
/// accepts `"{a@b} tail"` and then resolves it to `""`; see docs/differences.md).
pub fn is_ref(state: &RunState, exp: &str) -> bool {
    let s = strip_char(strip_char(exp, '{'), '}');
    if !s.contains('@') {
        return state.globals.contains_key(s);
    }
    is_bare_cpn_ref(s) && s.split_once('@').is_some_and(|(c, _)| state.has_node(c))
}

/// The group of a [`REF_PATTERN`], [`REF_PATTERN_CASED`] or [`ALIAS_PATTERN`] match,
/// taken from the whole match: `{* *{GROUP} *}*` where the group holds no brace nor
/// space.
pub fn braced(whole: &str) -> &str {
    let inner = whole.trim_start_matches(['{', ' ']);
    inner.split_once('}').map_or(inner, |(g, _)| g)
}

/// One reference found in a text (`get_input_elements_from_text`).
#[derive(Debug, Clone, PartialEq)]
pub struct RefElement {
    /// The expression used as key (`cpn@var`, `sys.x`; aliases resolved).
    pub exp: String,
    /// The expression as written inside the braces (differs for aliases).
    pub raw: String,
    /// The component id, or `""` for `sys.*`/`env.*`.
    pub cpn_id: String,
}

/// Collect the references of a text in order, duplicates collapsed. `alias` maps
/// `item`/`index`/`result` to a full expression when the component is inside an
/// Iteration.
pub fn collect(text: &str, alias: &dyn Fn(&str) -> Option<String>) -> Vec<RefElement> {
    let mut out: Vec<RefElement> = Vec::new();
    // Every reference has a brace: a text without one needs no pattern (building the
    // patterns is most of a small run's start).
    if !text.contains('{') {
        return out;
    }
    for m in REF_PATTERN.find_iter(text) {
        let exp = m.group();
        if out.iter().any(|e| e.exp == exp) {
            continue;
        }
        let exp = exp.to_string();
        let cpn_id = exp
            .split_once('@')
            .map(|(c, _)| c.to_string())
            .unwrap_or_default();
        out.push(RefElement {
            raw: exp.clone(),
            exp,
            cpn_id,
        });
    }
    for m in ALIAS_PATTERN.find_iter(text) {
        let raw = m.group();
        let Some(exp) = alias(raw) else { continue };
        if out.iter().any(|e| e.exp == exp) {
            continue;
        }
        let cpn_id = exp
            .split_once('@')
            .map(|(c, _)| c.to_string())
            .unwrap_or_default();
        out.push(RefElement {
            exp,
            raw: raw.to_string(),
            cpn_id,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::NodeState;
    use serde_json::json;

    fn state() -> RunState {
        let mut s = RunState::default();
        s.globals.insert("sys.query".into(), json!("hello"));
        let mut n = NodeState::default();
        n.outputs
            .insert("obj".into(), json!({"a": {"b": [10, 20]}}));
        n.outputs.insert("lst".into(), json!([1, "x", {"k": 2}]));
        n.outputs.insert("js".into(), json!("{\"k\": [5]}"));
        n.outputs.insert("none".into(), Value::Null);
        s.nodes.insert("begin".into(), n.into());
        s
    }

    proptest::proptest! {
        /// The shortcut for bare expressions strips what Python's five `strip` calls
        /// strip: `"{ {a@b} }"` and `"a@b"` alike, and text made only of those characters.
        #[test]
        fn strip_ref_is_the_five_strips(exp in "[{} a@.é]{0,12}") {
            let slow = ['{', '}', ' ', '{', '}']
                .iter()
                .fold(exp.as_str(), |s, c| s.trim_matches(*c));
            proptest::prop_assert_eq!(strip_ref(&exp), slow);
        }
    }

    #[test]
    fn resolves_paths_and_globals() {
        let s = state();
        assert_eq!(resolve(&s, "{ {sys.query} }").unwrap(), json!("hello"));
        assert_eq!(resolve(&s, "begin@obj.a.b.1").unwrap(), json!(20));
        assert_eq!(resolve(&s, "begin@obj.a.b.-1").unwrap(), json!(20));
        assert_eq!(resolve(&s, "begin@lst.2.k").unwrap(), json!(2));
        assert_eq!(resolve(&s, "begin@js.k.0").unwrap(), json!(5));
        assert_eq!(resolve(&s, "begin@nope").unwrap(), json!(""));
        assert_eq!(resolve(&s, "begin@none").unwrap(), Value::Null);
        assert_eq!(resolve(&s, "begin@obj.zz.1").unwrap(), Value::Null);
        assert_eq!(resolve(&s, "begin@lst.-1.k").unwrap(), json!(2));
        assert_eq!(resolve(&s, "begin@lst.1_0").unwrap(), Value::Null);
        assert_eq!(resolve(&s, "begin@lst.-4").unwrap(), Value::Null);
        assert_eq!(resolve(&s, "begin@obj.a.b.x").unwrap(), Value::Null);
        assert_eq!(resolve(&s, "begin@obj.a.").unwrap(), Value::Null);
        assert_eq!(resolve(&s, "begin@lst.1.0").unwrap(), Value::Null);
        assert_eq!(resolve(&s, "begin@none.a").unwrap(), Value::Null);
        assert_eq!(
            resolve(&s, "env.foo"),
            Err(RefError::UnknownGlobal("env.foo".into()))
        );
        assert_eq!(
            resolve(&s, "Nope:X@y").unwrap_err().py_message(),
            "Can't find variable: 'Nope:X@y'"
        );
    }

    #[test]
    fn walking_in_place_matches_walking_a_copy() {
        let v = json!({"a": {"b": [10, "{\"c\": [1, 2]}", {"d": null}]}, "s": "[3, 4]"});
        for p in [
            "a",
            "a.b",
            "a.b.0",
            "a.b.-1.d",
            "a.b.1.c.1",
            "a.b.1.c.-3",
            "s.1",
            "s.x",
            "a.b.9",
            "a.b.1_0",
            "a..b",
            "",
            "a.b.0.x",
            "a.b. 1",
        ] {
            assert_eq!(walk_path_ref(&v, p), walk_path(v.clone(), p), "{p}");
        }
    }

    #[test]
    fn assigns_dotted_paths() {
        let mut s = state();
        assign(&mut s, "begin@fresh.a.b", json!(1)).unwrap();
        assert_eq!(s.output("begin", "fresh"), json!({"a": {"b": 1}}));
        assign(&mut s, "env.cnt", json!(2)).unwrap();
        assert_eq!(s.globals["env.cnt"], json!(2));
    }

    #[test]
    fn is_ref_requires_a_whole_reference() {
        let s = state();
        assert!(is_ref(&s, "sys.query"));
        assert!(is_ref(&s, "{begin@obj}"));
        assert!(!is_ref(&s, "{begin@obj} tail"));
        assert!(!is_ref(&s, "nope@x"));
    }

    #[test]
    fn regex_eats_spaces_and_braces() {
        let m = REF_PATTERN.find("a {x@y} b").unwrap();
        assert_eq!(m.as_str(), " {x@y} ");
        // The space before an inner brace is not part of the match.
        let m = REF_PATTERN.find("A { {begin@obj} } B").unwrap();
        assert_eq!(m.as_str(), "{ {begin@obj} }");
        assert!(REF_PATTERN.is_match("{SYS.query}"));
        assert!(!REF_PATTERN_CASED.is_match("{SYS.query}"));
    }

    #[test]
    fn braced_is_the_first_group() {
        for text in [
            "a {x@y} b",
            "{ {Begin:A@obj.k-1} } ",
            "{{ {sys.query}}}",
            "{ITEM}",
        ] {
            for p in [&REF_PATTERN, &REF_PATTERN_CASED, &ALIAS_PATTERN] {
                for m in p.find_iter(text) {
                    assert_eq!(braced(m.as_str()), m.group());
                }
            }
        }
    }

    #[test]
    fn collects_in_order_without_duplicates() {
        let refs = collect("{sys.query}{a@b} {sys.query} {item}", &|a| {
            (a == "item").then(|| "II:1@item".to_string())
        });
        let exps: Vec<_> = refs.iter().map(|r| r.exp.as_str()).collect();
        assert_eq!(exps, ["sys.query", "a@b", "II:1@item"]);
        assert_eq!(refs[1].cpn_id, "a");
        assert_eq!(refs[2].raw, "item");
    }
}
