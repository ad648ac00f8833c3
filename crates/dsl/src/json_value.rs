//! JSON text into a `serde_json::Value` whose objects and arrays are built at their
//! final size.
//!
//! serde_json's own visitor inserts an object's members one by one into an empty map,
//! which grows its entries and its hash table as it goes (a five-member object ends
//! with room for seven, after three reallocations). A canvas is thousands of small
//! objects: here each object's members wait on one shared stack and the map is made
//! once, at its size. Arrays likewise (a one-item list, a component's `upstream`, took
//! room for four). The value is the same, member order and duplicate keys included
//! (a repeated key keeps its first place and takes the last value, as `insert` does).

use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parse `text` (one JSON document) as `serde_json::from_str` would, with the same
/// errors.
pub fn from_str(text: &str) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let (mut members, mut items) = (Vec::new(), Vec::new());
    let value = Exact {
        members: &mut members,
        items: &mut items,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// One value; the members of the objects and the items of the arrays being read wait
/// on these stacks.
struct Exact<'s> {
    members: &'s mut Vec<(String, Value)>,
    items: &'s mut Vec<Value>,
}

impl Exact<'_> {
    /// The same stacks, for a value inside this one (which leaves them as it found them).
    fn inner(&mut self) -> Exact<'_> {
        Exact {
            members: &mut *self.members,
            items: &mut *self.items,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Exact<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Exact<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let start = self.items.len();
        while let Some(item) = seq.next_element_seed(self.inner())? {
            self.items.push(item);
        }
        // Collected from an exact-size drain: the list's room is its length.
        let items: Vec<Value> = self.items.drain(start..).collect();
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let start = self.members.len();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self.inner())?;
            self.members.push((key, value));
        }
        let mut object = Map::with_capacity(self.members.len() - start);
        object.extend(self.members.drain(start..));
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Same value, and the same member order at every depth.
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|((k, v), (l, w))| k == l && same(v, w))
            }
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
            }
            _ => a == b,
        }
    }

    fn check(text: &str) {
        match (from_str(text), serde_json::from_str::<Value>(text)) {
            (Ok(a), Ok(b)) => assert!(same(&a, &b), "{text}: {a} vs {b}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
            (a, b) => panic!("{text}: {a:?} vs {b:?}"),
        }
    }

    #[test]
    fn reads_as_serde_json_does() {
        for text in [
            r#"{"b": 1, "a": [1, 2.5, -3, 1e400, "x\u00e9\n"], "c": {"z": null, "y": true}}"#,
            r#"{"k": 1, "j": 2, "k": 3}"#,
            r#"[{"a": {"b": {"c": {}}}}, [], {}, 18446744073709551615, -9223372036854775808]"#,
            r#"  "text"  "#,
            "0.1",
            r#"{"a": 1} x"#,
            r#"{"a": 1,}"#,
            r#"{"a" 1}"#,
            "[1, 2",
            "",
            &"[".repeat(200),
            &format!("{}{}", "[".repeat(100), "]".repeat(100)),
        ] {
            check(text);
        }
    }

    #[test]
    fn arrays_take_the_room_of_their_items() {
        let v =
            from_str(r#"{"up": ["begin"], "many": [1, [2, 3], {"x": []}], "none": []}"#).unwrap();
        for list in ["up", "many", "none"] {
            let a = v[list].as_array().unwrap();
            assert_eq!(a.capacity(), a.len(), "{list}");
        }
        assert_eq!(v["many"][1].as_array().unwrap().capacity(), 2);
    }

    #[test]
    fn reads_the_ragflow_canvases_as_serde_json_does() {
        for (path, _) in crate::fixtures::ragflow_canvases() {
            check(&std::fs::read_to_string(path).unwrap());
        }
    }

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-c\"\\\\\u{e9}\n]{0,4}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-d]{0,2}", inner), 0..8).prop_map(|members| {
                    // Written as text below, so repeated keys reach the parser.
                    Value::Array(
                        members
                            .into_iter()
                            .map(|(k, v)| Value::Array(vec![Value::String(k), v]))
                            .collect(),
                    )
                }),
            ]
        })
    }

    /// `v` as JSON text, with `[[k, v], …]` pairs written as an object (keys may repeat).
    fn text_of(v: &Value, out: &mut String) {
        match v {
            Value::Array(items)
                if !items.is_empty()
                    && items.iter().all(
                        |i| matches!(i, Value::Array(p) if p.len() == 2 && p[0].is_string()),
                    ) =>
            {
                out.push('{');
                for (n, i) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    out.push_str(&i[0].to_string());
                    out.push(':');
                    text_of(&i[1], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (n, i) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    text_of(i, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn generated_documents_read_as_serde_json_reads_them(v in json(), cut in 0usize..200) {
            let mut text = String::new();
            text_of(&v, &mut text);
            check(&text);
            // And cut short somewhere: the same error.
            let cut = cut.min(text.len());
            if text.is_char_boundary(cut) {
                check(&text[..cut]);
            }
        }
    }
}
