//! Categorize: asks the model which category the query falls into and routes to that
//! category's components (`llm-and-tools.md` §5, `engine.md` §7.4). The answer is read
//! by counting category names in it; none found → the last category.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::borrow::Cow;

use super::chat::answer::model_for;
use super::chat::call::complete;
use super::chat::params::LlmParams;
use super::chat::prepare::history;
use canvas_engine::refs::RefElement;
use canvas_engine::{self as engine, BuildError, CResult, Component, ComponentError, NodeCx};
use canvas_llm::{ChatRequest, ERROR_MARK, Message, Role};
use canvas_pyrt::{Object, py_json};

/// One category of `category_description`, in map order.
#[derive(Debug, Clone)]
struct Category {
    name: String,
    description: String,
    examples: Vec<String>,
    to: Vec<String>,
}

/// Build a Categorize; every category needs a name and a non-empty `to`.
pub fn build(params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(parse(params)?))
}

fn parse(params: &Object) -> Result<Categorize, BuildError> {
    let llm = LlmParams::parse(params, "Categorize", 1)?;
    let bad = |m: String| BuildError::Params(format!("[Categorize] {m}"));
    let Some(map) = params
        .get("category_description")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
    else {
        return Err(bad(
            "category_description must be a non-empty map of categories".into(),
        ));
    };
    let mut categories = Vec::new();
    for (name, c) in map {
        if name.is_empty() {
            return Err(bad("a category has an empty name".into()));
        }
        let to: Vec<String> = match c.get("to") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        };
        if to.is_empty() {
            return Err(bad(format!(
                "category {name:?} routes nowhere: its `to` is empty"
            )));
        }
        let examples = match c.get("examples") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|e| match e {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(o) => o.get("value").and_then(Value::as_str).map(String::from),
                    _ => None,
                })
                .filter(|s| !s.is_empty())
                .collect(),
            Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
            _ => Vec::new(),
        };
        categories.push(Category {
            name: name.clone(),
            description: c
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            examples,
            to,
        });
    }
    let query = params
        .get("query")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("sys.query")
        .to_string();
    Ok(Categorize {
        llm,
        categories,
        query,
    })
}

/// The Categorize component.
pub struct Categorize {
    llm: LlmParams,
    categories: Vec<Category>,
    /// The reference to classify (bare like `sys.query`, or in braces).
    query: String,
}

impl Categorize {
    /// The query as a reference text (`{sys.query}`) for collecting.
    fn query_text(&self) -> String {
        if self.query.contains('{') {
            self.query.clone()
        } else {
            format!("{{{}}}", self.query)
        }
    }

    /// The system prompt (our wording of RAGFlow's structure, §5.2).
    fn system_prompt(&self) -> String {
        let names: Vec<&str> = self.categories.iter().map(|c| c.name.as_str()).collect();
        let mut s = format!(
            "\nYou are an advanced classification system. Classify the input into exactly ONE of these categories:\n{}\n",
            names.join("\n - ")
        );
        let described: Vec<String> = self
            .categories
            .iter()
            .filter(|c| !c.description.is_empty())
            .map(|c| {
                format!(
                    "\n------\nCategory: {}\nDescription: {}",
                    c.name, c.description
                )
            })
            .collect();
        s.push_str(&format!(
            "\nHere's description of each category:\n - {}\n",
            described.join("\n")
        ));
        s.push_str(
            "\n---- Instructions ----\n\
             - Consider both the explicit and the implied context of the input.\n\
             - Prefer the most specific category that fits.\n\
             - Answer with the category name only, without any explanation.\n\
             - Use \"Other\" only when no other category fits.\n",
        );
        let examples: Vec<String> = self
            .categories
            .iter()
            .flat_map(|c| {
                c.examples
                    .iter()
                    .map(move |e| format!("USER: \"{}\" → {}", e.replace('\n', "    "), c.name))
            })
            .collect();
        if !examples.is_empty() {
            s.push_str(&format!("\n---- Examples ----\n{}\n", examples.join("\n")));
        }
        s
    }

    /// RAGFlow's answer reading: the category whose name occurs most often
    /// (case-insensitively; ties to the first), else the last category.
    fn pick(&self, answer: &str) -> &Category {
        let lower = answer.to_lowercase();
        let mut best: Option<(&Category, usize)> = None;
        for c in &self.categories {
            let name = c.name.to_lowercase();
            let n = if name.is_empty() {
                0
            } else {
                lower.matches(&name).count()
            };
            if n > 0 && best.is_none_or(|(_, b)| n > b) {
                best = Some((c, n));
            }
        }
        match best {
            Some((c, _)) => c,
            None => &self.categories[self.categories.len() - 1],
        }
    }
}

#[async_trait]
impl Component for Categorize {
    fn role(&self) -> engine::Role {
        engine::Role::Router
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        let names: Vec<String> = self
            .categories
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect();
        format!("Which should it falls into {}? ...", names.join(",")).into()
    }

    fn text_refs(&self, cx: &NodeCx<'_>) -> Option<Vec<RefElement>> {
        Some(cx.collect_refs(&self.query_text()))
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let mut query = String::new();
        for e in cx.collect_refs(&self.query_text()) {
            let v = cx.resolve(&e.exp)?;
            cx.set_input(&e.exp, v.clone());
            query = match v {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => py_json(&other),
            };
        }
        let mut turns = history(cx, self.llm.window);
        match turns.last_mut() {
            Some(last) => last.1 = query,
            None => turns.push(("user".into(), query)),
        }
        let lines: Vec<String> = turns
            .iter()
            .map(|(role, text)| {
                format!(
                    "{}: \"{}\"",
                    role.to_uppercase(),
                    text.replace(['\r', '\n'], "")
                )
            })
            .collect();
        let user = format!("\n---- Real Data ----\n{} →\n", lines.join(" | "));
        let model = model_for(cx, &self.llm.llm_id)?;
        let req = ChatRequest {
            model: self.llm.llm_id.clone(),
            messages: vec![
                Message::text(Role::System, self.system_prompt()),
                Message::text(Role::User, user),
            ],
            tools: Vec::new(),
            params: self.llm.sampling.clone(),
            retry: self.llm.retry,
        };
        let answer = complete(cx, model.as_ref(), &req).await?;
        if answer.contains(ERROR_MARK) {
            return Err(ComponentError::Failed(answer));
        }
        let c = self.pick(&answer);
        cx.set_output("category_name", json!(c.name));
        cx.set_output("_next", json!(c.to));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn categorize() -> Categorize {
        let params = json!({"category_description": {
            "product": {"description": "product questions", "examples": ["how to use X"], "to": ["M:P"]},
            "complaint": {"description": "complaints", "to": ["M:C"]},
            "other": {"to": ["M:O"]}}});
        parse(params.as_object().unwrap()).unwrap()
    }

    #[test]
    fn answers_are_read_by_counting_names() {
        let c = categorize();
        assert_eq!(c.pick("complaint").name, "complaint");
        assert_eq!(
            c.pick("PRODUCT, not a complaint, a product").name,
            "product"
        );
        assert_eq!(c.pick("product or complaint").name, "product");
        assert_eq!(c.pick("I am not sure").name, "other");
    }

    #[test]
    fn prompt_lists_categories_descriptions_and_examples() {
        let s = categorize().system_prompt();
        assert!(s.contains("product\n - complaint\n - other"), "{s}");
        assert!(
            s.contains("Category: complaint\nDescription: complaints"),
            "{s}"
        );
        assert!(!s.contains("Category: other"), "{s}");
        assert!(s.contains("USER: \"how to use X\" → product"), "{s}");
    }

    #[test]
    fn categories_need_targets() {
        let e = build(
            json!({"category_description": {"a": {"to": []}}})
                .as_object()
                .unwrap(),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("\"a\""), "{e}");
        assert!(build(json!({}).as_object().unwrap()).is_err());
    }
}
