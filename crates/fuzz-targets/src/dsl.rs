//! `dsl`: a canvas file through load, normalize, lint and the rest of `canvas validate`
//! (compile included), as JSON and as YAML, and through `canvas migrate --write`.

use canvas_dsl::draw;
use canvas_dsl::load::{Format, from_value, parse, parse_value};
use canvas_dsl::normalize::normalize;
use serde_json::Value;

/// A canvas text (bytes as read from a file): loads or is refused, normalizes
/// idempotently, validates, and its migrated form reads back as written.
pub fn dsl(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    for format in [Format::Json, Format::Yaml] {
        one(text, format);
    }
}

fn one(text: &str, format: Format) {
    let Ok(value) = parse_value(text, format) else {
        // `validate` reports an unparsable text as one finding.
        let found = canvas_components::validate::check(text, format);
        assert_eq!(found.len(), 1, "{found:?}");
        return;
    };
    let once = normalize(value);
    let twice = normalize(once.value.clone());
    assert_eq!(twice.value, once.value, "normalize is idempotent");
    assert!(
        twice.applied.is_empty(),
        "a second normalize changes nothing: {:?}",
        twice.applied
    );

    // `run`'s loader agrees with the pieces `validate` uses.
    let loaded = parse(text, format);
    match (&loaded, from_value(once.value.clone())) {
        (Ok(a), Ok(b)) => assert_eq!(a, &b),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("parse and from_value disagree: {a:?} / {b:?}"),
    }
    migrated_reads_back(&once.value);
    if let Ok(dsl) = &loaded {
        let _ = draw::mermaid(dsl);
        let _ = draw::dot(dsl);
    }

    let lines = text.lines().count().max(1);
    for found in canvas_components::validate::check(text, format) {
        if let Some(line) = found.line {
            assert!((1..=lines + 1).contains(&line), "line {line} of {lines}");
            assert!(found.column.is_some_and(|c| c >= 1));
        }
        assert!(!found.finding.message.is_empty());
    }
}

/// The normalized document, written as `canvas migrate --write` writes it (JSON, or
/// YAML for a YAML file), reads back as that document.
fn migrated_reads_back(doc: &Value) {
    let json = serde_json::to_string(doc).expect("a JSON value serialises");
    match parse_value(&json, Format::Json) {
        Ok(back) => assert_eq!(&back, doc, "migrated JSON reads back"),
        Err(e) => panic!("migrated JSON does not read back: {e}"),
    }
    let yaml = match yaml_serde::to_string(doc) {
        Ok(y) => y,
        Err(e) => panic!("the migrated document has no YAML form: {e}"),
    };
    match parse_value(&yaml, Format::Yaml) {
        Ok(back) => assert_eq!(&back, doc, "migrated YAML reads back:\n{yaml}"),
        Err(e) => panic!("migrated YAML does not read back: {e}\n{yaml}"),
    }
}
