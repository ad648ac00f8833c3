//! One file through the validate pipeline: parse, normalize, lint, and place every
//! finding at its line and column in the file as written.

use serde::Serialize;
use serde_json::Value;

use super::finding::{Finding, Level};
use super::lint::{self, Catalog};
use super::load::{DslError, Format, parse_value};
use super::locate::{Position, locate};
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

/// Check a canvas text. Never fails: an unparsable text is a finding.
pub fn check(text: &str, format: Format, catalog: &dyn Catalog) -> Vec<Located> {
    let raw = match parse_value(text, format) {
        Ok(v) => v,
        Err(e) => return vec![unparsable(e)],
    };
    let prefix = dsl_prefix(&raw);
    let normalized = normalize(raw.clone());
    let dsl = normalized
        .value
        .pointer(prefix)
        .cloned()
        .unwrap_or(Value::Null);
    let mut findings = migration_findings(&normalized.applied, prefix);
    findings.extend(lint::lint(&dsl, catalog));
    let is_json = !matches!(format, Format::Yaml)
        && text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with('{');
    findings
        .into_iter()
        .map(|f| {
            let pos = if is_json {
                place(text, &raw, &dsl, prefix, &f.pointer)
            } else {
                None
            };
            Located {
                line: pos.map(|p| p.line),
                column: pos.map(|p| p.column),
                finding: f,
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

/// Where a DSL-relative pointer is in the file: the value itself, else (for components
/// derived from a graph-only export) the graph node's form — the sub-agent's own node for
/// a pointer into an Agent tool derived from one — else the nearest enclosing value that
/// exists in the file.
fn place(text: &str, raw: &Value, dsl: &Value, prefix: &str, pointer: &str) -> Option<Position> {
    let mut candidates = vec![format!("{prefix}{pointer}")];
    if let Some(c) = graph_candidate(raw, dsl, prefix, pointer) {
        candidates.push(c);
    }
    for c in candidates {
        let mut p = c.as_str();
        loop {
            if raw.pointer(p).is_some() {
                if let Some(pos) = locate(text, p) {
                    return Some(pos);
                }
            }
            match p.rfind('/') {
                Some(i) if i > prefix.len() => p = &p[..i],
                _ => break,
            }
        }
    }
    None
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
