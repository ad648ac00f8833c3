//! DSL class names → component constructors. RAGFlow matches class names exactly;
//! we match them case-insensitively, as its Go port does.

use canvas_engine::{self as engine, BuildError, Component, Role};
use canvas_pyrt::Object;

#[cfg(feature = "doc")]
use super::doc_generator;
#[cfg(feature = "excel")]
use super::excel_processor;
use super::unsupported::Unsupported;
use super::{
    agent, begin, categorize, data_operations, exit_loop, invoke, iteration, iteration_item,
    list_operations, llm, loop_, loop_item, message, string_transform, switch, user_fill_up,
    variable_aggregator, variable_assigner,
};
#[cfg(feature = "email")]
use canvas_tools::email;
#[cfg(feature = "sql")]
use canvas_tools::exe_sql;
use canvas_tools::node::ToolNode;
use canvas_tools::{
    ToolBuilder, akshare, arxiv, bgpt, code_exec, crawler, deepl, duckduckgo, github, google,
    google_scholar, keenable, pubmed, querit_contents, querit_search, qweather, retrieval, searxng,
    tavily_extract, tavily_search, wencai, wikipedia, yahoo_finance,
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
    #[cfg(feature = "excel")]
    ("ExcelProcessor", excel_processor::build),
    #[cfg(feature = "doc")]
    ("DocGenerator", doc_generator::build),
    ("Retrieval", |p| ToolNode::build(retrieval::build, p)),
    ("CodeExec", |p| ToolNode::build(code_exec::build, p)),
    #[cfg(feature = "sql")]
    ("ExeSQL", |p| ToolNode::build(exe_sql::build, p)),
    ("Wikipedia", |p| ToolNode::build(wikipedia::build, p)),
    ("ArXiv", |p| ToolNode::build(arxiv::build, p)),
    ("PubMed", |p| ToolNode::build(pubmed::build, p)),
    ("DuckDuckGo", |p| ToolNode::build(duckduckgo::build, p)),
    ("GoogleScholar", |p| {
        ToolNode::build(google_scholar::build, p)
    }),
    ("Crawler", |p| ToolNode::build(crawler::build, p)),
    ("DeepL", |p| ToolNode::build(deepl::build, p)),
    ("QWeather", |p| ToolNode::build(qweather::build, p)),
    ("WenCai", |p| ToolNode::build(wencai::build, p)),
    ("AkShare", |p| ToolNode::build(akshare::build, p)),
    ("YahooFinance", |p| ToolNode::build(yahoo_finance::build, p)),
    #[cfg(feature = "email")]
    ("Email", |p| ToolNode::build(email::build, p)),
    ("TavilySearch", |p| ToolNode::build(tavily_search::build, p)),
    ("TavilyExtract", |p| {
        ToolNode::build(tavily_extract::build, p)
    }),
    ("GitHub", |p| ToolNode::build(github::build, p)),
    ("Google", |p| ToolNode::build(google::build, p)),
    ("SearXNG", |p| ToolNode::build(searxng::build, p)),
    ("KeenableSearch", |p| ToolNode::build(keenable::build, p)),
    ("QueritSearch", |p| ToolNode::build(querit_search::build, p)),
    ("QueritContents", |p| {
        ToolNode::build(querit_contents::build, p)
    }),
    ("BGPT", |p| ToolNode::build(bgpt::build, p)),
];

/// Tools an Agent can call, by DSL class name (RAGFlow's aliases of Retrieval included).
pub const TOOLS: &[(&str, ToolBuilder)] = &[
    ("Retrieval", retrieval::build),
    ("SearchMyDataset", retrieval::build),
    ("search_my_dataset", retrieval::build),
    ("search_my_dateset", retrieval::build),
    ("CodeExec", code_exec::build),
    #[cfg(feature = "sql")]
    ("ExeSQL", exe_sql::build),
    ("Wikipedia", wikipedia::build),
    ("ArXiv", arxiv::build),
    ("PubMed", pubmed::build),
    ("DuckDuckGo", duckduckgo::build),
    ("GoogleScholar", google_scholar::build),
    ("Crawler", crawler::build),
    ("DeepL", deepl::build),
    ("QWeather", qweather::build),
    ("WenCai", wencai::build),
    ("AkShare", akshare::build),
    ("YahooFinance", yahoo_finance::build),
    #[cfg(feature = "email")]
    ("Email", email::build),
    ("TavilySearch", tavily_search::build),
    ("TavilyExtract", tavily_extract::build),
    ("GitHub", github::build),
    ("Google", google::build),
    ("SearXNG", searxng::build),
    ("KeenableSearch", keenable::build),
    ("QueritSearch", querit_search::build),
    ("QueritContents", querit_contents::build),
    ("BGPT", bgpt::build),
];

/// RAGFlow components this build recognises but cannot run yet: (name, routing kind,
/// what is missing).
pub const UNSUPPORTED: &[(&str, Role, &str)] = &[(
    "Browser",
    Role::Plain,
    "Browser (a headless web browser) is not supported",
)];

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

/// Components whose cargo feature this build was compiled without: (name, feature).
/// They fail validation and stop a run, naming the feature.
pub const LEFT_OUT: &[(&str, &str)] = &[
    #[cfg(not(feature = "doc"))]
    ("DocGenerator", "doc"),
    #[cfg(not(feature = "excel"))]
    ("ExcelProcessor", "excel"),
    #[cfg(not(feature = "sql"))]
    ("ExeSQL", "sql"),
    #[cfg(not(feature = "email"))]
    ("Email", "email"),
];

/// An Agent's MCP servers need the `mcp` feature: false when it was left out.
pub const MCP_BUILT: bool = cfg!(feature = "mcp");

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
                role: *kind,
                why: (*why).to_string(),
            }));
        }
        if let Some((n, feature)) = LEFT_OUT.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return Ok(Box::new(Unsupported {
                name: n,
                role: Role::Plain,
                why: format!("the cargo feature `{feature}` is left out"),
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
    use canvas_engine::Registry as _;

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
            .role(),
            Role::Router
        );
    }

    fn json_obj(s: &str) -> &'static Object {
        Box::leak(Box::new(serde_json::from_str(s).unwrap()))
    }
}
