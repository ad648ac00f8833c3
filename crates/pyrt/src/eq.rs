//! Python `==` and `<` between JSON values, strings and tuples of them.
//!
//! Numbers compare exactly, as Python compares ints with floats (no rounding through
//! `f64`); `True == 1 == 1.0`. Ordering raises `TypeError` between types that do not
//! order, and deep values stop at a depth limit instead of overflowing the stack.

use std::cmp::Ordering;

use serde_json::Value;

use crate::Object;
use crate::str::py_type_name;

/// A number as Python holds it: an int (bools included) or a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PyNum {
    /// A Python int (or bool).
    Int(i128),
    /// A Python float.
    Float(f64),
}

/// The Python number a JSON number or bool is; `None` for other values.
pub fn py_num(v: &Value) -> Option<PyNum> {
    match v {
        Value::Bool(b) => Some(PyNum::Int(i128::from(*b))),
        Value::Number(n) => Some(if let Some(i) = n.as_i64() {
            PyNum::Int(i128::from(i))
        } else if let Some(u) = n.as_u64() {
            PyNum::Int(i128::from(u))
        } else {
            PyNum::Float(n.as_f64().unwrap_or(f64::NAN))
        }),
        _ => None,
    }
}

/// Exact comparison of Python numbers (ints against floats without rounding); `None`
/// when a NaN is involved.
pub fn py_num_cmp(a: PyNum, b: PyNum) -> Option<Ordering> {
    fn int_float(i: i128, f: f64) -> Option<Ordering> {
        if f.is_nan() {
            return None;
        }
        // Beyond every i128.
        if f >= 1.7e38 {
            return Some(Ordering::Less);
        }
        if f <= -1.7e38 {
            return Some(Ordering::Greater);
        }
        let t = f.trunc();
        Some(match i.cmp(&(t as i128)) {
            Ordering::Equal => {
                if f > t {
                    Ordering::Less
                } else if f < t {
                    Ordering::Greater
                } else {
                    Ordering::Equal
                }
            }
            o => o,
        })
    }
    match (a, b) {
        (PyNum::Int(x), PyNum::Int(y)) => Some(x.cmp(&y)),
        (PyNum::Float(x), PyNum::Float(y)) => x.partial_cmp(&y),
        (PyNum::Int(x), PyNum::Float(y)) => int_float(x, y),
        (PyNum::Float(x), PyNum::Int(y)) => int_float(y, x).map(Ordering::reverse),
    }
}

/// A Python value to compare: a JSON value, a `str` (a dict key), or a tuple.
#[derive(Debug)]
pub enum PyKey<'a> {
    /// A JSON value as Python sees it (arrays are lists, objects dicts).
    Val(&'a Value),
    /// A `str`.
    Str(&'a str),
    /// A tuple.
    Tuple(Vec<PyKey<'a>>),
}

/// Why a comparison raised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// Python's `RecursionError` for values nested past the limit.
    #[error("maximum recursion depth exceeded in comparison")]
    TooDeep,
    /// Python's `TypeError` for `<` between types that do not order.
    #[error("'<' not supported between instances of '{0}' and '{1}'")]
    Unorderable(&'static str, &'static str),
}

/// What a value is to Python's comparison operators.
#[derive(Clone, Copy)]
enum Py<'a> {
    None,
    Num(PyNum, &'static str),
    Str(&'a str),
    List(&'a [Value]),
    Dict(&'a Object),
    Tuple(&'a [PyKey<'a>]),
}

fn view_value(v: &Value) -> Py<'_> {
    match v {
        Value::Null => Py::None,
        Value::Bool(_) | Value::Number(_) => {
            Py::Num(py_num(v).unwrap_or(PyNum::Int(0)), py_type_name(v))
        }
        Value::String(s) => Py::Str(s),
        Value::Array(a) => Py::List(a),
        Value::Object(o) => Py::Dict(o),
    }
}

fn view_key<'a>(k: &'a PyKey<'a>) -> Py<'a> {
    match k {
        PyKey::Val(v) => view_value(v),
        PyKey::Str(s) => Py::Str(s),
        PyKey::Tuple(t) => Py::Tuple(t),
    }
}

fn py_name(p: Py<'_>) -> &'static str {
    match p {
        Py::None => "NoneType",
        Py::Num(_, name) => name,
        Py::Str(_) => "str",
        Py::List(_) => "list",
        Py::Dict(_) => "dict",
        Py::Tuple(_) => "tuple",
    }
}

/// Python `a == b` between JSON values: numbers by value (`5 == 5.0`, `True == 1`),
/// containers item by item.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    // Without a depth limit nothing raises.
    eq(view_value(a), view_value(b), 0, usize::MAX).unwrap_or(false)
}

/// Python `a == b` between keys, raising past `max_depth` levels of nesting.
pub fn py_eq_key(a: &PyKey<'_>, b: &PyKey<'_>, max_depth: usize) -> Result<bool, CompareError> {
    eq(view_key(a), view_key(b), 0, max_depth)
}

/// Python `a < b` between keys: `TypeError` for types that do not order, raising past
/// `max_depth` levels of nesting.
pub fn py_lt_key(a: &PyKey<'_>, b: &PyKey<'_>, max_depth: usize) -> Result<bool, CompareError> {
    lt(view_key(a), view_key(b), 0, max_depth)
}

fn too_deep(depth: usize, max: usize) -> Result<(), CompareError> {
    if depth > max {
        Err(CompareError::TooDeep)
    } else {
        Ok(())
    }
}

/// Python `a == b` (never raises for these types but for depth).
fn eq(a: Py<'_>, b: Py<'_>, depth: usize, max: usize) -> Result<bool, CompareError> {
    too_deep(depth, max)?;
    Ok(match (a, b) {
        (Py::None, Py::None) => true,
        (Py::Num(x, _), Py::Num(y, _)) => py_num_cmp(x, y) == Some(Ordering::Equal),
        (Py::Str(x), Py::Str(y)) => x == y,
        (Py::List(x), Py::List(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (p, q) in x.iter().zip(y) {
                if !eq(view_value(p), view_value(q), depth + 1, max)? {
                    return Ok(false);
                }
            }
            true
        }
        (Py::Tuple(x), Py::Tuple(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (p, q) in x.iter().zip(y) {
                if !eq(view_key(p), view_key(q), depth + 1, max)? {
                    return Ok(false);
                }
            }
            true
        }
        (Py::Dict(x), Py::Dict(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (k, p) in x {
                let Some(q) = y.get(k) else {
                    return Ok(false);
                };
                if !eq(view_value(p), view_value(q), depth + 1, max)? {
                    return Ok(false);
                }
            }
            true
        }
        _ => false,
    })
}

/// Python `a < b`.
fn lt(a: Py<'_>, b: Py<'_>, depth: usize, max: usize) -> Result<bool, CompareError> {
    too_deep(depth, max)?;
    match (a, b) {
        (Py::Num(x, _), Py::Num(y, _)) => Ok(py_num_cmp(x, y) == Some(Ordering::Less)),
        (Py::Str(x), Py::Str(y)) => Ok(x < y), // UTF-8 byte order is code point order
        (Py::List(x), Py::List(y)) => {
            // Sequences: the first unequal pair decides, else the shorter is smaller.
            for (p, q) in x.iter().zip(y) {
                let (p, q) = (view_value(p), view_value(q));
                if !eq(p, q, depth + 1, max)? {
                    return lt(p, q, depth + 1, max);
                }
            }
            Ok(x.len() < y.len())
        }
        (Py::Tuple(x), Py::Tuple(y)) => {
            for (p, q) in x.iter().zip(y) {
                let (p, q) = (view_key(p), view_key(q));
                if !eq(p, q, depth + 1, max)? {
                    return lt(p, q, depth + 1, max);
                }
            }
            Ok(x.len() < y.len())
        }
        _ => Err(CompareError::Unorderable(py_name(a), py_name(b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equality() {
        assert!(py_eq(&json!(5), &json!(5.0)));
        assert!(py_eq(&json!(true), &json!(1.0)));
        assert!(!py_eq(&json!("5"), &json!(5)));
    }

    #[test]
    fn numbers_compare_exactly() {
        let big = json!(9007199254740993u64);
        assert!(!py_eq(&big, &json!(9007199254740992.0)));
        assert!(py_eq(
            &json!(9007199254740992u64),
            &json!(9007199254740992.0)
        ));
        assert_eq!(
            py_num_cmp(PyNum::Int(i128::MAX), PyNum::Float(1e300)),
            Some(Ordering::Less)
        );
        assert_eq!(py_num_cmp(PyNum::Int(1), PyNum::Float(f64::NAN)), None);
        assert!(py_eq(&json!([1, {"a": null}]), &json!([1.0, {"a": null}])));
        assert!(!py_eq(&json!(f64::NAN.to_string()), &json!(1)));
    }

    #[test]
    fn ordering_follows_python() {
        let (a, b) = (json!([1, "b"]), json!([1, "c"]));
        assert_eq!(py_lt_key(&PyKey::Val(&a), &PyKey::Val(&b), 10), Ok(true));
        let t1 = PyKey::Tuple(vec![PyKey::Str("a"), PyKey::Val(&a)]);
        let t2 = PyKey::Tuple(vec![PyKey::Str("a")]);
        assert_eq!(py_lt_key(&t2, &t1, 10), Ok(true));
        let (s, n) = (json!("x"), json!(1));
        assert_eq!(
            py_lt_key(&PyKey::Val(&s), &PyKey::Val(&n), 10)
                .unwrap_err()
                .to_string(),
            "'<' not supported between instances of 'str' and 'int'"
        );
        let deep = json!([[[1]]]);
        assert_eq!(
            py_eq_key(&PyKey::Val(&deep), &PyKey::Val(&deep), 2),
            Err(CompareError::TooDeep)
        );
    }
}
