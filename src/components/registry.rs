//! DSL class names → component constructors. RAGFlow matches class names exactly;
//! we match them case-insensitively, as its Go port does.

use crate::engine::value::Object;
use crate::engine::{self, BuildError, Component, Kind};

use super::unsupported::Unsupported;
use super::{
    agent, begin, categorize, data_operations, excel_processor, exit_loop, invoke, iteration,
    iteration_item, list_operations, llm, loop_, loop_item, message, string_transform, switch,
    user_fill_up, variable_aggregator, variable_assigner,
};
use crate::tools::node::ToolNode;
use crate::tools::{
    ToolBuilder, arxiv, code_exec, crawler, duckduckgo, exe_sql, google_scholar, pubmed, retrieval,
    wikipedia,
};

type Builder = fn(&Object) -> Result<Box<dyn Component>, BuildError>;

/// Components this build runs: (DSL name, constructor).
pub const SUPPORTED: &[(&str, Builder)] = &[
    ("Begin", begin::build),
    ("Message", message::build),
    ("Switch", switch::build),
    ("Iteration", iteration::build),
    ("IterationItem", iteration_item::build),
    ("Loop", loop_::build),
    ("LoopItem", loop_item::build),
    ("ExitLoop", exit_loop::build),
    ("VariableAssigner", variable_assigner::build),
    ("VariableAggregator", variable_aggregator::build),
    ("DataOperations", data_operations::build),
    ("ListOperations", list_operations::build),
    ("StringTransform", string_transform::build),
    ("UserFillUp", user_fill_up::build),
    // RAGFlow's older name for UserFillUp.
    ("Fillup", user_fill_up::build),
    ("LLM", llm::build),
    ("Agent", agent::build),
    ("Categorize", categorize::build),
    ("Invoke", invoke::build),
    ("ExcelProcessor", excel_processor::build),
    ("Retrieval", |p| ToolNode::build(retrieval::build, p)),
    ("CodeExec", |p| ToolNode::build(code_exec::build, p)),
    ("ExeSQL", |p| ToolNode::build(exe_sql::build, p)),
    ("Wikipedia", |p| ToolNode::build(wikipedia::build, p)),
    ("ArXiv", |p| ToolNode::build(arxiv::build, p)),
    ("PubMed", |p| ToolNode::build(pubmed::build, p)),
    ("DuckDuckGo", |p| ToolNode::build(duckduckgo::build, p)),
    ("GoogleScholar", |p| {
        ToolNode::build(google_scholar::build, p)
    }),
    ("Crawler", |p| ToolNode::build(crawler::build, p)),
];

/// Tools an Agent can call, by DSL class name (RAGFlow's aliases of Retrieval included).
pub const TOOLS: &[(&str, ToolBuilder)] = &[
    ("Retrieval", retrieval::build),
    ("SearchMyDataset", retrieval::build),
    ("search_my_dataset", retrieval::build),
    ("search_my_dateset", retrieval::build),
    ("CodeExec", code_exec::build),
    ("ExeSQL", exe_sql::build),
    ("Wikipedia", wikipedia::build),
    ("ArXiv", arxiv::build),
    ("PubMed", pubmed::build),
    ("DuckDuckGo", duckduckgo::build),
    ("GoogleScholar", google_scholar::build),
    ("Crawler", crawler::build),
];

/// RAGFlow components this build recognises but cannot run yet: (name, routing kind,
/// what is missing).
pub const UNSUPPORTED: &[(&str, Kind, &str)] = &[
    (
        "DocGenerator",
        Kind::Generic,
        "DocGenerator is not supported yet",
    ),
    (
        "Browser",
        Kind::Generic,
        "Browser (a headless web browser) is not supported",
    ),
    (
        "TavilySearch",
        Kind::Generic,
        "the TavilySearch tool is not supported yet",
    ),
    (
        "TavilyExtract",
        Kind::Generic,
        "the TavilyExtract tool is not supported yet",
    ),
    (
        "GitHub",
        Kind::Generic,
        "the GitHub tool is not supported yet",
    ),
    (
        "Google",
        Kind::Generic,
        "the Google tool is not supported yet",
    ),
    (
        "SearXNG",
        Kind::Generic,
        "the SearXNG tool is not supported yet",
    ),
    (
        "Email",
        Kind::Generic,
        "the Email tool is not supported yet",
    ),
    (
        "DeepL",
        Kind::Generic,
        "the DeepL tool is not supported yet",
    ),
    (
        "QWeather",
        Kind::Generic,
        "the QWeather tool is not supported yet",
    ),
    (
        "AkShare",
        Kind::Generic,
        "the AkShare tool is not supported yet",
    ),
    (
        "YahooFinance",
        Kind::Generic,
        "the YahooFinance tool is not supported yet",
    ),
    (
        "WenCai",
        Kind::Generic,
        "the WenCai tool is not supported yet",
    ),
    (
        "KeenableSearch",
        Kind::Generic,
        "the KeenableSearch tool is not supported yet",
    ),
    (
        "QueritSearch",
        Kind::Generic,
        "the QueritSearch tool is not supported yet",
    ),
    (
        "QueritContents",
        Kind::Generic,
        "the QueritContents tool is not supported yet",
    ),
    ("BGPT", Kind::Generic, "the BGPT tool is not supported yet"),
];

/// Legacy classes RAGFlow itself can no longer run: (name, why). (Renamed legacy classes,
/// such as `Generate` and `Answer`, are rewritten by `dsl::normalize` on load.)
pub const LEGACY: &[(&str, &str)] = &[
    (
        "TuShare",
        "TuShare is a legacy component that RAGFlow itself can no longer run",
    ),
    (
        "Jin10",
        "Jin10 is a legacy component that RAGFlow itself can no longer run",
    ),
];

/// The component registry used by `canvas run`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Registry;

impl engine::Registry for Registry {
    fn build(&self, name: &str, params: &Object) -> Result<Box<dyn Component>, BuildError> {
        if let Some((_, b)) = SUPPORTED.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return b(params);
        }
        if let Some((n, kind, why)) = UNSUPPORTED
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
        {
            return Ok(Box::new(Unsupported {
                name: n,
                kind: *kind,
                why,
            }));
        }
        Err(BuildError::Unknown(name.to_string()))
    }

    fn legacy(&self, name: &str) -> Option<&'static str> {
        LEGACY
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, why)| *why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Registry as _;

    #[test]
    fn names_are_case_insensitive_and_unknown_names_fail() {
        let r = Registry;
        assert!(r.build("begin", &Object::new()).is_ok());
        assert!(r.build("EXITLOOP", &Object::new()).is_ok());
        assert!(matches!(
            r.build("Nope", &Object::new()),
            Err(BuildError::Unknown(_))
        ));
        assert_eq!(
            r.build(
                "categorize",
                json_obj(r#"{"category_description": {"a": {"to": ["M"]}}}"#)
            )
            .unwrap()
            .kind(),
            Kind::Categorize
        );
    }

    fn json_obj(s: &str) -> &'static Object {
        Box::leak(Box::new(serde_json::from_str(s).unwrap()))
    }
}
