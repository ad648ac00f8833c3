//! `inputs`: an `--inputs` file and `-i KEY=VALUE` values, typed by the fields a canvas
//! declares. Input: `DECLARED FIELDS (JSON object) \0 INPUTS FILE \0 -i VALUES (one a
//! line)`.

use canvas_dsl::load::Format;
use canvas_pyrt::Object;
use canvas_ui::inputs::{InputsError, from_answers, from_file_text, from_pair};
use serde_json::Value;

/// Every input comes out in RAGFlow's API shape (`{value, type?}`) or is refused with a
/// message.
pub fn inputs(data: &[u8]) {
    let [declared, file, pairs] = crate::parts::<3>(data);
    let declared = match serde_json::from_slice::<Value>(declared) {
        Ok(Value::Object(o)) => o,
        _ => Object::new(),
    };
    if let Some(file) = crate::text(file) {
        for format in [Format::Sniff, Format::Yaml] {
            let mut unfit = 0;
            let got = from_file_text(file, format, &declared, &mut |e| {
                assert!(!e.message.is_empty());
                unfit += 1;
            });
            match got {
                Ok(map) => {
                    for (k, v) in &map {
                        api_shaped(k, v, &declared);
                    }
                    assert!(unfit <= map.len());
                    let answers: Object = map.into_iter().collect();
                    for (k, v) in &from_answers(answers, &declared) {
                        api_shaped(k, v, &declared);
                    }
                }
                Err(InputsError::Unfit(e)) => assert!(e.hint.is_none()),
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
    }
    let Some(pairs) = crate::text(pairs) else {
        return;
    };
    for p in pairs.lines() {
        let (k, raw) = p.split_once('=').unwrap_or((p, ""));
        match from_pair(k, raw, &declared) {
            Ok(v) => api_shaped(k, &v, &declared),
            Err(e) => assert!(e.message.contains("expects"), "{}", e.message),
        }
    }
}

/// `{value, type?}`, with the declared type when the field has one.
fn api_shaped(key: &str, v: &Value, declared: &Object) {
    let Value::Object(o) = v else {
        panic!("{key}: not in API shape: {v}");
    };
    assert!(o.contains_key("value"), "{key}: {v}");
    let declared_type = declared.get(key).and_then(|d| d.get("type"));
    if declared_type.is_some_and(Value::is_string) {
        assert!(o.contains_key("type"), "{key}: {v}");
    }
}
