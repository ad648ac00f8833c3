//! WenCai (`agent/tools/wencai.py`, function `iwencai`). RAGFlow's current tool is an
//! empty stub: its `pywencai` call is commented out and replaced by an empty result,
//! so every call sets an empty `report` and returns an empty text. This mirrors it
//! exactly (no request is made); only `check()` and `thoughts()` have any substance.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Call, Param, Tool, ToolMeta};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_repr, py_str};

const QUERY_TYPES: &[&str] = &[
    "stock",
    "zhishu",
    "fund",
    "hkstock",
    "usstock",
    "threeboard",
    "conbond",
    "insurance",
    "futures",
    "lccp",
    "foreign_exchange",
];

const DESCRIPTION: &str = "
iwencai search: search platform is committed to providing hundreds of millions of investors with the most timely, accurate and comprehensive information, covering news, announcements, research reports, blogs, forums, Weibo, characters, etc.
robo-advisor intelligent stock selection platform: through AI technology, is committed to providing investors with intelligent stock selection, quantitative investment, main force tracking, value investment, technical analysis and other types of stock selection technologies.
fund selection platform: through AI technology, is committed to providing excellent fund, value investment, quantitative analysis and other fund selection technologies for foundation citizens.
";

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    if let Some(v) = params.get("top_n") {
        let ok = v.as_i64().is_some_and(|n| n > 0) && !v.is_f64();
        if !ok {
            return Err(BuildError::Params(format!(
                "Top N {} not supported, should be positive integer",
                py_str(v)
            )));
        }
    }
    let query_type = params.get("query_type").cloned().unwrap_or(json!("stock"));
    if !query_type
        .as_str()
        .is_some_and(|s| QUERY_TYPES.contains(&s))
    {
        let list: Vec<Value> = QUERY_TYPES.iter().map(|s| json!(s)).collect();
        return Err(BuildError::Params(format!(
            "Query type {} is not supported, it should be in {}",
            py_str(&query_type),
            py_repr(&Value::Array(list))
        )));
    }
    Ok(Box::new(WenCai {
        meta: ToolMeta {
            name: "iwencai",
            description: DESCRIPTION,
            parameters: vec![Param::string(
                "query",
                "The question/conditions to select stocks.",
                "{sys.query}",
            )],
        },
    }))
}

/// The WenCai tool: RAGFlow's stub.
pub struct WenCai {
    meta: ToolMeta,
}

#[async_trait]
impl Tool for WenCai {
    fn class(&self) -> &'static str {
        "WenCai"
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn thoughts(&self, args: &Object) -> String {
        let q = args
            .get("query")
            .map(py_str)
            .unwrap_or_else(|| "-_-!".into());
        format!("Pulling live financial data for `{q}`.")
    }

    async fn run(&self, call: &Call<'_>, _args: &Object) -> CResult<Option<Value>> {
        // With or without a query, RAGFlow's stub ends with `"\n\n".join([])`.
        call.set_output("report", json!(""));
        Ok(Some(json!("")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn check_mirrors_ragflow() {
        assert!(build(&obj(json!({"top_n": 5, "query_type": "fund"}))).is_ok());
        assert_eq!(
            build(&obj(json!({"top_n": 0}))).err().unwrap().to_string(),
            "Top N 0 not supported, should be positive integer"
        );
        assert_eq!(
            build(&obj(json!({"query_type": "bond"})))
                .err()
                .unwrap()
                .to_string(),
            "Query type bond is not supported, it should be in ['stock', 'zhishu', 'fund', 'hkstock', 'usstock', 'threeboard', 'conbond', 'insurance', 'futures', 'lccp', 'foreign_exchange']"
        );
    }

    #[test]
    fn thoughts_quote_the_query() {
        let t = build(&Object::new()).unwrap();
        assert_eq!(
            t.thoughts(&obj(json!({"query": "白酒龙头"}))),
            "Pulling live financial data for `白酒龙头`."
        );
    }
}
