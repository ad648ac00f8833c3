//! The validate pipeline over this build: `dsl`'s checks (parse, normalize, lint, with
//! every component built and checked as `canvas run` builds it, C047), then the run's own
//! load and compile. A refusal of theirs that no finding states yet becomes one (C049),
//! so whatever `canvas run` refuses, `canvas validate` reports first as an error, and the
//! two cannot drift apart as rules or components change.

use canvas_dsl::check::{Checked, Located, check_with};
use canvas_dsl::{DslError, Finding, Format, Level, load};
use canvas_engine::{Canvas, CompileError};

use super::{Catalog, Registry};

/// Every finding of a canvas text, placed in the file.
pub fn check(text: &str, format: Format) -> Vec<Located> {
    check_with(text, format, &Catalog, &mut refusals)
}

/// Load and compile `checked` as `canvas run` does: a refusal marks the findings that
/// explain it as stopping the run, or, when none does, adds C049.
pub fn refusals(checked: &Checked, findings: &mut Vec<Finding>) {
    let refused = match load::from_value(checked.doc.clone()) {
        Err(e) => load_refusal(&e),
        Ok(dsl) => match Canvas::compile(dsl, &Registry) {
            Ok(_) => return,
            Err(e) => compile_refusal(&e),
        },
    };
    let explains = |f: &Finding| {
        f.level == Level::Error
            && refused.codes.contains(&f.code)
            && (refused.component.is_none() || f.component == refused.component)
    };
    let mut explained = false;
    for f in findings.iter_mut().filter(|f| explains(f)) {
        f.stops_run = true;
        explained = true;
    }
    if explained {
        return;
    }
    let mut f = Finding::new(
        "C049",
        Level::Error,
        format!("`canvas run` refuses the canvas: {}", refused.message),
    )
    .hint("no other rule of `canvas validate` says why: please report it");
    if let Some(id) = refused.component {
        f = f.component(id.clone()).at(&["components", id.as_str()]);
    }
    findings.push(f);
}

/// A refusal of the loader or of compile, and the findings that would explain it.
struct Refused {
    /// The codes of the rules that report this cause.
    codes: &'static [&'static str],
    /// The component it is about (None: the whole document).
    component: Option<String>,
    /// The refusal's own text.
    message: String,
}

/// What explains a refusal of the loader (`dsl::load::from_value`).
fn load_refusal(e: &DslError) -> Refused {
    match e {
        DslError::Component { id, .. } => Refused {
            codes: &["C004", "C009", "C010"],
            component: Some(id.clone()),
            message: e.to_string(),
        },
        _ => Refused {
            codes: &["C002", "C009"],
            component: None,
            message: e.to_string(),
        },
    }
}

/// What explains a refusal of compile.
fn compile_refusal(e: &CompileError) -> Refused {
    let (codes, component): (&'static [&'static str], Option<&String>) = match e {
        CompileError::MissingBegin { .. } => (&["C003", "C007"], None),
        CompileError::Legacy { id, .. } => (&["C006"], Some(id)),
        // An ingestion pipeline's classes are reported once, for the document.
        CompileError::UnknownComponent { .. } => (&["C004", "C005", "C007"], None),
        CompileError::DanglingDownstream { id, .. } => (&["C010"], Some(id)),
        CompileError::DanglingParent { id, .. } => (&["C016"], Some(id)),
        CompileError::Params { id, .. } => (&["C047"], Some(id)),
    };
    Refused {
        codes,
        component: component.cloned(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str) -> Vec<(&'static str, Option<String>, bool)> {
        check(text, Format::Json)
            .into_iter()
            .map(|l| (l.finding.code, l.finding.component, l.finding.stops_run))
            .collect()
    }

    const HEAD: &str = r#"{"components": {"begin": {"obj": {"component_name": "Begin", "params": {}}, "downstream": ["Message:M"]},"#;

    #[test]
    fn a_parameter_the_run_refuses_is_an_error_at_its_line() {
        let text = format!(
            "{HEAD}\n\"Message:M\": {{\"obj\": {{\"component_name\": \"Message\", \"params\": {{\"content\": [\"hi\"],\n  \"output_format\": \"html\"}}}}}}}}}}"
        );
        let found = check(&text, Format::Json);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = &found[0];
        assert_eq!(f.finding.code, "C047");
        assert_eq!(f.finding.component.as_deref(), Some("Message:M"));
        assert!(f.finding.stops_run);
        assert_eq!((f.line, f.column), (Some(3), Some(20)));
        assert!(f.finding.message.contains("output_format \"html\""));
    }

    #[test]
    fn a_refusal_a_rule_explains_adds_nothing() {
        // Compile refuses a parent that does not exist; C016 says so.
        let text = format!(
            "{HEAD}\"Message:M\": {{\"obj\": {{\"component_name\": \"Message\", \"params\": {{\"content\": [\"hi\"]}}}}, \"parent_id\": \"Loop:Gone\"}}}}}}"
        );
        assert_eq!(
            codes(&text),
            [("C016", Some("Message:M".to_string()), true)]
        );
    }

    #[test]
    fn a_refusal_no_rule_explains_becomes_c049() {
        let text = format!(
            "{HEAD}\"Message:M\": {{\"obj\": {{\"component_name\": \"Message\", \"params\": {{\"content\": [\"hi\"], \"output_format\": \"pdf\"}}}}}}}}}}"
        );
        // The lint of `run` does not build components: nothing states the refusal.
        let checked = match canvas_dsl::check::read(&text, Format::Json, &crate::RunCatalog) {
            Ok(c) => c,
            Err(e) => panic!("the text parses: {e}"),
        };
        let mut findings = checked.findings.clone();
        assert_eq!(findings, []);
        refusals(&checked, &mut findings);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        let f = &findings[0];
        assert_eq!((f.code, f.level, f.stops_run), ("C049", Level::Error, true));
        assert_eq!(f.component.as_deref(), Some("Message:M"));
        assert_eq!(f.pointer, "/components/Message:M");
        assert!(f.message.contains("output_format \"pdf\""), "{}", f.message);
    }
}
