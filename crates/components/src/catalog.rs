//! What this build knows about component classes and tools, for `canvas validate`
//! (`dsl::lint::Catalog`): which run, which do not yet, and the outputs each can set.

use serde_json::Value;

use super::registry::{LEFT_OUT, LEGACY, MCP_BUILT, Registry, SUPPORTED, TOOLS, UNSUPPORTED};
use canvas_dsl::lint::{self, Refusal, Support};
use canvas_engine::{BuildError, Registry as _};
use canvas_pyrt::Object;

/// Classes of RAGFlow's data-ingestion pipelines (`rag/flow`), which are not agent
/// canvases (the old chunker names included).
const INGESTION: &[&str] = &[
    "File",
    "Parser",
    "TokenChunker",
    "TitleChunker",
    "Tokenizer",
    "Extractor",
    "Compiler",
    "Splitter",
    "HierarchicalMerger",
];

/// The finding's text for a component whose cargo feature this build left out.
fn left_out(what: &str, feature: &str) -> String {
    format!(
        "{what} needs the cargo feature `{feature}`, which this build of canvas was compiled without (rebuild with `--features {feature}`)"
    )
}

/// The catalog of this build's components, for `canvas validate`: it builds each
/// component as `canvas run` does to check its parameters (C047).
#[derive(Debug, Default, Clone, Copy)]
pub struct Catalog;

/// [`Catalog`] without building the components: for `canvas run`, which builds every
/// component when it compiles the canvas right after linting it.
#[derive(Debug, Default, Clone, Copy)]
pub struct RunCatalog;

impl lint::Catalog for RunCatalog {
    fn classes(&self) -> Vec<&str> {
        lint::Catalog::classes(&Catalog)
    }

    fn component(&self, name: &str) -> Support {
        lint::Catalog::component(&Catalog, name)
    }

    fn tool(&self, name: &str) -> Support {
        lint::Catalog::tool(&Catalog, name)
    }

    fn outputs(&self, name: &str, params: &Object) -> Option<Vec<String>> {
        lint::Catalog::outputs(&Catalog, name, params)
    }
}

impl lint::Catalog for Catalog {
    fn classes(&self) -> Vec<&str> {
        SUPPORTED.iter().map(|(n, _)| *n).collect()
    }

    fn check_params(&self, name: &str, params: &Object) -> Option<Refusal> {
        match Registry.build(name, params) {
            Ok(c) => c.check().err().map(|e| Refusal {
                message: e.message,
                path: e.path,
            }),
            Err(BuildError::Params(message)) => Some(Refusal {
                message,
                path: Vec::new(),
            }),
            // C004's.
            Err(BuildError::Unknown(_)) => None,
        }
    }

    fn component(&self, name: &str) -> Support {
        let eq = |n: &&str| n.eq_ignore_ascii_case(name);
        if SUPPORTED.iter().any(|(n, _)| eq(n)) {
            return Support::Runs;
        }
        if let Some((_, _, why)) = UNSUPPORTED.iter().find(|(n, _, _)| eq(n)) {
            return Support::NotYet((*why).to_string());
        }
        if let Some((n, feature)) = LEFT_OUT.iter().find(|(n, _)| eq(n)) {
            return Support::NotYet(left_out(n, feature));
        }
        if let Some((_, why)) = LEGACY.iter().find(|(n, _)| eq(n)) {
            return Support::Dead((*why).to_string());
        }
        if INGESTION.iter().any(eq) {
            return Support::Ingestion;
        }
        Support::Unknown
    }

    fn tool(&self, name: &str) -> Support {
        if name.eq_ignore_ascii_case("Agent") {
            return Support::Runs;
        }
        if name.eq_ignore_ascii_case("MCP") {
            return match MCP_BUILT {
                true => Support::Runs,
                false => Support::NotYet(left_out("MCP", "mcp")),
            };
        }
        if TOOLS.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return Support::Runs;
        }
        match self.component(name) {
            Support::Runs => {
                Support::NotYet(format!("{name} cannot be an Agent tool in this build yet"))
            }
            other => other,
        }
    }

    fn outputs(&self, name: &str, params: &Object) -> Option<Vec<String>> {
        let keys = |k: &str| -> Vec<String> {
            params
                .get(k)
                .and_then(Value::as_object)
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        let fixed: &[&str] = match name.to_ascii_lowercase().as_str() {
            "begin" => &[],
            "userfillup" | "fillup" => &["tips"],
            "message" => &["content", "downloads"],
            "switch" => &["next", "_next"],
            "categorize" => &["category_name", "_next"],
            "iterationitem" => &["item", "index", "result"],
            "iteration" | "loopitem" | "exitloop" | "variableassigner" => &[],
            "loop" => &[],
            "dataoperations" | "stringtransform" => &["result"],
            "listoperations" => &["result", "first", "last"],
            "llm" | "agent" => &["content", "structured"],
            "invoke" => &["result"],
            "retrieval" => &["formalized_content", "json"],
            "exesql" => &["formalized_content", "json"],
            "docgenerator" | "docsgenerator" => {
                &["download", "doc_id", "filename", "mime_type", "size"]
            }
            // Group names and tool outputs are set at run time.
            _ => return None,
        };
        let mut out: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
        out.extend(keys("outputs"));
        match name.to_ascii_lowercase().as_str() {
            "begin" | "userfillup" | "fillup" => out.extend(keys("inputs")),
            "loop" => out.extend(
                params
                    .get("loop_variables")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.get("variable")?.as_str().map(String::from)),
            ),
            _ => {}
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canvas_dsl::lint::Catalog as _;

    /// Each component behind a cargo feature runs when the feature is on; otherwise
    /// validation names the feature (`.ci/run` tests a build without the features).
    #[test]
    fn a_component_behind_a_feature_runs_or_names_its_feature() {
        let c = Catalog;
        for (name, feature, on) in [
            ("DocGenerator", "doc", cfg!(feature = "doc")),
            ("ExcelProcessor", "excel", cfg!(feature = "excel")),
            ("ExeSQL", "sql", cfg!(feature = "sql")),
            ("Email", "email", cfg!(feature = "email")),
        ] {
            let got = c.component(name);
            match on {
                true => assert_eq!(got, Support::Runs, "{name}"),
                false => assert!(
                    matches!(&got, Support::NotYet(w) if w.starts_with(name) && w.contains(&format!("--features {feature}"))),
                    "{name}: {got:?}"
                ),
            }
            // As an Agent's tool too (DocGenerator and ExcelProcessor are not tools).
            if matches!(name, "ExeSQL" | "Email") {
                assert_eq!(c.tool(name) == Support::Runs, on, "{name} as a tool");
            }
        }
        let mcp = c.tool("MCP");
        match MCP_BUILT {
            true => assert_eq!(mcp, Support::Runs),
            false => assert!(
                matches!(&mcp, Support::NotYet(w) if w.contains("`mcp`")),
                "{mcp:?}"
            ),
        }
    }

    #[test]
    fn classes_are_sorted_into_what_runs_and_what_does_not() {
        let c = Catalog;
        assert_eq!(c.component("message"), Support::Runs);
        assert_eq!(c.component("CodeExec"), Support::Runs);
        assert!(matches!(c.component("Browser"), Support::NotYet(w) if w.contains("Browser")));
        assert!(matches!(c.component("TuShare"), Support::Dead(_)));
        assert_eq!(c.component("TokenChunker"), Support::Ingestion);
        assert_eq!(c.component("Nope"), Support::Unknown);
        assert_eq!(c.tool("Agent"), Support::Runs);
        assert_eq!(c.tool("TavilySearch"), Support::Runs);
        assert_eq!(c.tool("YahooFinance"), Support::Runs);
        assert!(matches!(c.tool("Browser"), Support::NotYet(_)));
        assert_eq!(c.tool("Retrieval"), Support::Runs);
        assert_eq!(c.tool("search_my_dateset"), Support::Runs);
    }

    #[test]
    fn outputs_include_form_fields_loop_variables_and_declared_ones() {
        let c = Catalog;
        let p: Object = serde_json::from_str(
            r#"{"inputs": {"name": {"type": "line"}}, "outputs": {"extra": {}}}"#,
        )
        .unwrap();
        assert_eq!(
            c.outputs("UserFillUp", &p).unwrap(),
            ["tips", "extra", "name"]
        );
        let l: Object = serde_json::from_str(r#"{"loop_variables": [{"variable": "i"}]}"#).unwrap();
        assert_eq!(c.outputs("Loop", &l).unwrap(), ["i"]);
        assert_eq!(c.outputs("VariableAggregator", &Object::new()), None);
        assert_eq!(c.outputs("CodeExec", &Object::new()), None);
    }
}
