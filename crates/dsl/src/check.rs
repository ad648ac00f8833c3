//! One file through the validate pipeline: parse, normalize, lint, and place every
//! finding at its line and column in the file as written. `run` goes through the first
//! half ([`read`]) and keeps the normalized document to run it.

use serde::Serialize;
use serde_json::Value;

use super::finding::{Finding, Level};
use super::lint::{self, Catalog};
use super::load::{DslError, Format, parse_value};
use super::locate::{locate_all, repeated_keys};
use super::normalize::{Applied, RULES, dsl_prefix, normalize};

/// A finding placed in its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Located {
    /// The finding (its pointer is relative to the DSL object).
    #[serde(flatten)]
    pub finding: Finding,
    /// 1-based line of the offending value, when it could be placed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column of the offending value, when it could be placed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
}

/// A canvas text parsed, normalized and linted, its findings not yet placed in the file.
#[derive(Debug)]
pub struct Checked {
    /// The normalized document (a template's wrapper kept): what `run` goes on with.
    pub doc: Value,
    /// Where the DSL object is in `doc` (`""`, or `"/dsl"` in a template's wrapper).
    pub prefix: &'static str,
    /// What normalization changed (C012, C070), then lint's findings in lint's order.
    pub findings: Vec<Finding>,
}

impl Checked {
    /// Whether a finding stops `canvas run` ([`Finding::stops_run`]).
    pub fn stops_run(&self) -> bool {
        self.findings.iter().any(|f| f.stops_run)
    }
}

/// Parse, normalize and lint a canvas text: the normalized document and the findings.
/// Fails only when the text does not parse.
pub fn read(text: &str, format: Format, catalog: &dyn Catalog) -> Result<Checked, DslError> {
    let raw = parse_value(text, format)?;
    let prefix = dsl_prefix(&raw);
    let normalized = normalize(raw);
    let mut findings = migration_findings(&normalized.applied, prefix);
    let dsl = normalized.value.pointer(prefix).unwrap_or(&Value::Null);
    findings.extend(lint::lint(dsl, catalog));
    Ok(Checked {
        doc: normalized.value,
        prefix,
        findings,
    })
}

/// Check a canvas text. Never fails: an unparsable text is a finding.
pub fn check(text: &str, format: Format, catalog: &dyn Catalog) -> Vec<Located> {
    check_with(text, format, catalog, &mut |_, _| {})
}

/// [`check`], with `more` adding findings (or marking found ones) after lint's, from
/// the checked document: the checks of the layers above, which know what runs.
pub fn check_with(
    text: &str,
    format: Format,
    catalog: &dyn Catalog,
    more: &mut dyn FnMut(&Checked, &mut Vec<Finding>),
) -> Vec<Located> {
    let mut checked = match read(text, format, catalog) {
        Ok(c) => c,
        Err(e) => return vec![unparsable(e)],
    };
    let mut findings = repeated(text, format, checked.prefix);
    findings.append(&mut checked.findings);
    more(&checked, &mut findings);
    place(text, format, &checked, findings)
}

/// Place findings about a [`read`] text at their lines and columns (JSON only: YAML
/// findings keep their pointers).
pub fn place(
    text: &str,
    format: Format,
    checked: &Checked,
    findings: Vec<Finding>,
) -> Vec<Located> {
    let unplaced = |findings: Vec<Finding>| {
        findings
            .into_iter()
            .map(|finding| Located {
                finding,
                line: None,
                column: None,
            })
            .collect()
    };
    if findings.is_empty() || !is_json(text, format) {
        return unplaced(findings);
    }
    // The file as written: graph-only exports place derived components in their nodes.
    let Ok(raw) = parse_value(text, Format::Json) else {
        return unplaced(findings);
    };
    let dsl = checked.doc.pointer(checked.prefix).unwrap_or(&Value::Null);
    let candidates: Vec<Vec<String>> = findings
        .iter()
        .map(|f| candidates(&raw, dsl, checked.prefix, &f.pointer))
        .collect();
    let asked: Vec<&str> = candidates.iter().flatten().map(String::as_str).collect();
    let mut found = locate_all(text, &asked).into_iter();
    findings
        .into_iter()
        .zip(&candidates)
        .map(|(finding, cands)| {
            // Every candidate's answer is consumed, the first found is kept.
            let answers: Vec<_> = found.by_ref().take(cands.len()).collect();
            let pos = answers.into_iter().flatten().next();
            Located {
                line: pos.map(|p| p.line),
                column: pos.map(|p| p.column),
                finding,
            }
        })
        .collect()
}

/// Whether the text is JSON (only JSON files get positions).
fn is_json(text: &str, format: Format) -> bool {
    !matches!(format, Format::Yaml)
        && text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with('{')
}

/// C008: a key an object repeats. Python's `json` (RAGFlow) and this build both keep
/// the last value, so the canvas runs the same in both: a warning, as the earlier value
/// is silently ignored.
fn repeated(text: &str, format: Format, prefix: &str) -> Vec<Finding> {
    if !is_json(text, format) {
        return Vec::new();
    }
    repeated_keys(text)
        .into_iter()
        .map(|r| {
            let key = r.pointer.rsplit('/').next().unwrap_or_default();
            let key = key.replace("~1", "/").replace("~0", "~");
            let rel = r.pointer.strip_prefix(prefix).unwrap_or(&r.pointer);
            let mut f = Finding::new(
                "C008",
                Level::Warning,
                format!(
                    "key `{key}` is written twice in this object: the one at line {}, column {} is ignored",
                    r.first.line, r.first.column
                ),
            )
            .hint("remove one of them; RAGFlow also keeps only the last value");
            f.pointer = rel.to_string();
            match component_of(rel) {
                Some(c) => f.component(c),
                None => f,
            }
        })
        .collect()
}

/// C002 for a text that does not parse, at the parser's position.
fn unparsable(e: DslError) -> Located {
    let (line, column) = match &e {
        DslError::Json { line, column, .. } => (Some(*line), Some(*column)),
        DslError::Yaml { line, column, .. } => (*line, *column),
        _ => (None, None),
    };
    Located {
        finding: Finding::new("C002", Level::Error, format!("not a canvas: {e}"))
            .hint("fix the syntax; RAGFlow exports canvases as JSON"),
        line,
        column,
    }
}

/// What normalisation changed, as findings: disagreeing `upstream`/`downstream` lists
/// (C012, a warning: RAGFlow's Go port routes by `upstream`), and one C070 note per
/// other rule that rewrote the file's legacy form.
fn migration_findings(applied: &[Applied], prefix: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for a in applied.iter().filter(|a| a.rule == "links") {
        let rel = a.pointer.strip_prefix(prefix).unwrap_or(&a.pointer);
        let component = component_of(rel);
        let mut f = Finding::new(
            "C012",
            Level::Warning,
            format!("upstream and downstream disagree: {}", a.detail),
        )
        .hint("`canvas migrate --write` rewrites upstream from downstream, which is what runs");
        f.pointer = rel.to_string();
        if let Some(c) = component {
            f = f.component(c);
        }
        out.push(f);
    }
    for rule in RULES.iter().filter(|r| r.name != "links") {
        let mine: Vec<&Applied> = applied.iter().filter(|a| a.rule == rule.name).collect();
        let Some(first) = mine.first() else { continue };
        let mut f = Finding::new(
            "C070",
            Level::Info,
            format!(
                "legacy form ({}, {} change{}): {}",
                rule.name,
                mine.len(),
                if mine.len() == 1 { "" } else { "s" },
                rule.about
            ),
        )
        .hint("canvas runs it as rewritten; `canvas migrate FILE` shows the rewrite, `--write` saves it");
        f.pointer = first
            .pointer
            .strip_prefix(prefix)
            .unwrap_or(&first.pointer)
            .to_string();
        out.push(f);
    }
    out
}

/// The component id of a `/components/<id>/...` pointer.
fn component_of(pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix("/components/")?;
    let seg = rest.split('/').next()?;
    Some(seg.replace("~1", "/").replace("~0", "~"))
}

/// Where a DSL-relative pointer may be in the file, best first: the value itself, else
/// (for components derived from a graph-only export) the graph node's form — the
/// sub-agent's own node for a pointer into an Agent tool derived from one — each followed
/// by the values enclosing it.
fn candidates(raw: &Value, dsl: &Value, prefix: &str, pointer: &str) -> Vec<String> {
    let mut bases = vec![format!("{prefix}{pointer}")];
    bases.extend(graph_candidate(raw, dsl, prefix, pointer));
    let mut out = Vec::new();
    for c in bases {
        let mut p = c.as_str();
        loop {
            out.push(p.to_string());
            match p.rfind('/') {
                Some(i) if i > prefix.len() => p = &p[..i],
                _ => break,
            }
        }
    }
    out
}

/// The pointer into the graph node a derived component (or sub-agent tool) came from.
fn graph_candidate(raw: &Value, dsl: &Value, prefix: &str, pointer: &str) -> Option<String> {
    let nodes = raw.pointer(&format!("{prefix}/graph/nodes"))?.as_array()?;
    let node_of = |id: &str| {
        nodes
            .iter()
            .position(|n| n.get("id").and_then(Value::as_str) == Some(id))
    };
    let id = component_of(pointer)?;
    let esc = id.replace('~', "~0").replace('/', "~1");
    let mut anchor = node_of(&id)?;
    let mut seen = format!("/components/{esc}/obj/params");
    let Some(mut rest) = pointer.strip_prefix(seen.as_str()).map(str::to_string) else {
        return Some(format!("{prefix}/graph/nodes/{anchor}"));
    };
    // `/tools/<k>/params/...` of a sub-agent: continue in the sub-agent's own node.
    loop {
        let segs: Vec<&str> = rest.splitn(5, '/').collect();
        if !(segs.len() >= 4 && segs[1] == "tools" && segs[3] == "params") {
            break;
        }
        let entry = format!("{seen}/tools/{}", segs[2]);
        let sub = dsl.pointer(&format!("{entry}/id")).and_then(Value::as_str);
        let Some(j) = sub.and_then(node_of) else {
            break;
        };
        anchor = j;
        seen = format!("{entry}/params");
        rest = segs.get(4).map(|r| format!("/{r}")).unwrap_or_default();
    }
    Some(format!("{prefix}/graph/nodes/{anchor}/data/form{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::Support;
    use crate::model::Object;

    /// Every class runs; outputs are unknown.
    struct All;

    impl Catalog for All {
        fn component(&self, _: &str) -> Support {
            Support::Runs
        }

        fn tool(&self, _: &str) -> Support {
            Support::Runs
        }

        fn outputs(&self, _: &str, _: &Object) -> Option<Vec<String>> {
            None
        }
    }

    const TEXT: &str = r#"{"components": {
  "begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["A", "Gone"]},
  "A": {"obj": {"component_name": "Message", "params": {"content": ["{Nope@x}"],
        "content": ["{B@x} {sys.nope}"]}}, "downstream": []},
  "B": {"obj": {"component_name": "Message", "params": {"content": ["hi"]}}, "downstream": ["Lost"]}
}}"#;

    #[test]
    fn every_finding_is_placed_at_its_own_value() {
        let found: Vec<(&str, Option<usize>, Option<usize>)> = check(TEXT, Format::Json, &All)
            .iter()
            .map(|l| (l.finding.code, l.line, l.column))
            .collect();
        assert_eq!(
            found,
            [
                ("C008", Some(4), Some(20)),
                ("C010", Some(2), Some(83)),
                ("C032", Some(4), Some(21)),
                ("C010", Some(5), Some(93)),
                ("C020", Some(5), Some(8)),
            ]
        );
    }

    #[test]
    fn a_repeated_key_says_which_one_is_ignored() {
        let found = check(TEXT, Format::Json, &All);
        let f = &found[0].finding;
        assert_eq!(
            (f.code, f.level, f.component.as_deref()),
            ("C008", Level::Warning, Some("A"))
        );
        assert_eq!(f.pointer, "/components/A/obj/params/content");
        assert!(
            f.message.contains("line 3, column 57 is ignored"),
            "{}",
            f.message
        );
        assert!(!f.stops_run);
    }

    #[test]
    fn yaml_findings_have_no_positions() {
        let yaml =
            "components:\n  begin:\n    obj: {component_name: Begin}\n    downstream: [Gone]\n";
        let found = check(yaml, Format::Yaml, &All);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!((found[0].line, found[0].column), (None, None));
    }

    #[test]
    fn read_keeps_the_normalized_document_for_the_run() {
        let checked = match read(TEXT, Format::Json, &All) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert!(checked.stops_run(), "a dangling downstream stops a run");
        assert_eq!(checked.prefix, "");
        assert_eq!(
            checked.doc["components"]["A"]["obj"]["params"]["content"][0],
            "{B@x} {sys.nope}"
        );
    }
}
