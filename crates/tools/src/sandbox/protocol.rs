//! How a run reports `main()`'s return value (RAGFlow's `result_protocol.py`): the
//! program wrappers, the result marker line `__RAGFLOW_RESULT__:<base64 JSON envelope>`,
//! and the fallbacks when there is no marker (stdout as JSON, then as a Python literal,
//! then as text).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use canvas_pyrt::{BigInts, DictKeys, LiteralOptions, literal_eval_with};

/// The prefix of the line carrying the structured result.
pub const RESULT_MARKER: &str = "__RAGFLOW_RESULT__:";

/// The file the wrappers read `main`'s arguments from (beside the program). RAGFlow's
/// local provider pastes the JSON into the source instead, where `null`, `true` and
/// `false` are not Python.
pub const ARGS_FILE: &str = "args.json";

/// The Python program: the code, then a call of `main(**arguments)` printing the
/// result marker. The code comes first so tracebacks keep its line numbers.
pub fn python_program(code: &str) -> String {
    format!(
        r#"{code}


if __name__ == "__main__":
    import base64 as __rf_base64
    import json as __rf_json
    import os as __rf_os

    with open(__rf_os.path.join(__rf_os.path.dirname(__rf_os.path.abspath(__file__)), "{ARGS_FILE}"), encoding="utf-8") as __rf_file:
        __rf_args = __rf_json.load(__rf_file)
    __rf_result = main(**__rf_args)
    __rf_payload = __rf_json.dumps({{"present": True, "value": __rf_result, "type": "json"}}, ensure_ascii=False, separators=(",", ":"))
    print("{RESULT_MARKER}" + __rf_base64.b64encode(__rf_payload.encode("utf-8")).decode("ascii"))
"#
    )
}

/// The JavaScript program: the code, then `main(args)` (declared or exported), awaited,
/// printing the result marker. An error or a missing value ends with a non-zero status.
pub fn javascript_program(code: &str) -> String {
    format!(
        r#"{code}

;(async () => {{
  const __rfArgs = JSON.parse(require('fs').readFileSync(require('path').join(__dirname, '{ARGS_FILE}'), 'utf8'));
  const __rfMain = typeof main !== 'undefined' ? main : (module.exports && module.exports.main);
  if (typeof __rfMain !== 'function') {{
    throw new Error('main() must be defined or exported.');
  }}
  const __rfOutput = await Promise.resolve(__rfMain(__rfArgs));
  if (typeof __rfOutput === 'undefined') {{
    throw new Error('main() must return a value. Use null for an empty result.');
  }}
  const __rfPayload = JSON.stringify({{ present: true, value: __rfOutput, type: 'json' }});
  if (typeof __rfPayload === 'undefined') {{
    throw new Error('main() returned a non-JSON-serializable value.');
  }}
  console.log('{RESULT_MARKER}' + Buffer.from(__rfPayload, 'utf8').toString('base64'));
}})();
"#
    )
}

/// Split the marker line out of stdout: the remaining text (RAGFlow's
/// `extract_structured_result`) and `main()`'s value when the envelope says it is
/// present (`Some(Null)` for a `None` result). Undecodable marker lines stay in the text.
pub fn extract_result(stdout: &str) -> (String, Option<Value>) {
    let mut kept: Vec<&str> = Vec::new();
    let mut envelope: Option<Value> = None;
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix(RESULT_MARKER) else {
            kept.push(line);
            continue;
        };
        let decoded = STANDARD
            .decode(rest.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| serde_json::from_str::<Value>(&s).ok());
        match decoded {
            Some(v) if !rest.trim().is_empty() => envelope = Some(v),
            _ => kept.push(line),
        }
    }
    let mut text = kept.join("\n");
    if stdout.ends_with('\n') && !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let value = envelope.and_then(|e| match e {
        Value::Object(mut o) if o.get("present") == Some(&Value::Bool(true)) => {
            Some(o.remove("value").unwrap_or(Value::Null))
        }
        _ => None,
    });
    (text, value)
}

/// RAGFlow's `_deserialize_stdout`: the stripped text as JSON, else as a Python
/// literal, else the text itself (`""` when empty).
pub fn deserialize_stdout(stdout: &str) -> Value {
    let text = stdout.trim();
    if text.is_empty() {
        return Value::String(String::new());
    }
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return v;
    }
    if let Some(v) = literal_eval(text) {
        return v;
    }
    Value::String(text.to_string())
}

/// Python's `ast.literal_eval` for the values JSON can hold: strings, numbers,
/// `True`/`False`/`None`, lists, tuples (as lists) and dicts; ints beyond 64 bits as
/// floats, and dict keys distinct while `json.dumps` spells them apart. Bytes, sets,
/// complex numbers and anything else give `None`.
pub fn literal_eval(text: &str) -> Option<Value> {
    let opts = LiteralOptions {
        big_ints: BigInts::Float,
        dict_keys: DictKeys::SameSpelling,
    };
    literal_eval_with(text, &opts).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn marker(envelope: &Value) -> String {
        format!("{RESULT_MARKER}{}", STANDARD.encode(envelope.to_string()))
    }

    #[test]
    fn marker_line_is_taken_out_of_stdout() {
        let line = marker(&json!({"present": true, "value": {"a": [1, 2]}, "type": "json"}));
        let (text, v) = extract_result(&format!("hello\n{line}\nbye\n"));
        assert_eq!(text, "hello\nbye\n");
        assert_eq!(v, Some(json!({"a": [1, 2]})));
    }

    #[test]
    fn a_none_result_is_present_and_null() {
        let line = marker(&json!({"present": true, "value": null, "type": "json"}));
        assert_eq!(extract_result(&line), (String::new(), Some(Value::Null)));
    }

    #[test]
    fn bad_or_absent_markers_stay_in_stdout() {
        let (text, v) = extract_result("__RAGFLOW_RESULT__:not base64!\n42\n");
        assert_eq!(text, "__RAGFLOW_RESULT__:not base64!\n42\n");
        assert_eq!(v, None);
        let (text, v) = extract_result("__RAGFLOW_RESULT__:\n");
        assert_eq!((text.as_str(), v), ("__RAGFLOW_RESULT__:\n", None));
        // An envelope without `present: true` is no result.
        let line = marker(&json!({"present": false, "value": 1}));
        assert_eq!(extract_result(&line), (String::new(), None));
        // Only at the start of a line.
        let inner = format!("x {}", marker(&json!({"present": true, "value": 1})));
        assert_eq!(extract_result(&inner).1, None);
    }

    #[test]
    fn stdout_fallbacks_json_then_python_then_text() {
        assert_eq!(deserialize_stdout("  {\"a\": 1}\n"), json!({"a": 1}));
        assert_eq!(deserialize_stdout("42\n"), json!(42));
        assert_eq!(
            deserialize_stdout("{'a': (1, 2.5), 'b': None, 'c': True}"),
            json!({"a": [1, 2.5], "b": null, "c": true})
        );
        assert_eq!(deserialize_stdout("hello world\n"), json!("hello world"));
        assert_eq!(deserialize_stdout("   \n"), json!(""));
        // A set or bytes are not JSON values: the text is kept.
        assert_eq!(deserialize_stdout("{1, 2}"), json!("{1, 2}"));
        assert_eq!(deserialize_stdout("b'x'"), json!("b'x'"));
    }

    #[test]
    fn python_literals() {
        let cases = [
            ("'it''s' \"x\"", json!("itsx")),
            (r#"'a\nb\x41\u00e9\101'"#, json!("a\nbAéA")),
            (r"r'a\nb'", json!("a\\nb")),
            ("'''multi\nline'''", json!("multi\nline")),
            ("-1_000", json!(-1000)),
            ("0x1F", json!(31)),
            ("1e3", json!(1000.0)),
            ("-.5", json!(-0.5)),
            ("(1,)", json!([1])),
            ("(1)", json!(1)),
            ("()", json!([])),
            ("1, 2", json!([1, 2])),
            ("[1, [2, {'k': [3]}],]", json!([1, [2, {"k": [3]}]])),
            (
                "{1: 'a', True: 'b', None: 'c'}",
                json!({"1": "a", "true": "b", "null": "c"}),
            ),
            ("18446744073709551615", json!(18446744073709551615u64)),
        ];
        for (text, want) in cases {
            assert_eq!(literal_eval(text), Some(want), "{text}");
        }
        for bad in [
            "1j",
            "01",
            "1__0",
            "abc",
            "[1, 2",
            "{'a' 1}",
            "f'x'",
            "--1",
            "1 2",
            "'a\nb'",
            "{(1, 2): 3}",
        ] {
            assert_eq!(literal_eval(bad), None, "{bad}");
        }
        let deep = "[".repeat(10_000);
        assert_eq!(literal_eval(&deep), None);
    }

    #[test]
    fn wrappers_run_main_with_the_arguments_file() {
        let py = python_program("def main(x):\n    return x");
        assert!(py.starts_with("def main(x):\n    return x\n"));
        assert!(py.contains("main(**__rf_args)") && py.contains(ARGS_FILE));
        assert!(py.contains(RESULT_MARKER));
        let js = javascript_program("function main(a) { return a }");
        assert!(js.starts_with("function main(a) { return a }\n"));
        assert!(js.contains("module.exports.main") && js.contains(RESULT_MARKER));
    }
}
