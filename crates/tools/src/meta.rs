//! RAGFlow's tool `meta` and the OpenAI function schema built from it (`get_meta`,
//! `llm-and-tools.md` §4.2). Unlike RAGFlow, array parameters keep their `items`
//! (strict providers reject arrays without them).

use serde_json::{Map, Value, json};

use canvas_pyrt::Object;

/// One function parameter.
#[derive(Debug, Clone)]
pub struct Param {
    /// The argument name.
    pub name: &'static str,
    /// JSON schema type (`string`, `integer`, `array`, ...).
    pub kind: &'static str,
    /// What the model is told about it.
    pub description: &'static str,
    /// The value a node uses when the DSL omits the parameter (often `{sys.query}`).
    pub default: Value,
    /// Allowed values.
    pub choices: &'static [&'static str],
    /// Item schema of an array parameter.
    pub items: Option<Value>,
    /// The model must supply it.
    pub required: bool,
}

impl Param {
    /// A required string parameter with a default.
    pub fn string(name: &'static str, description: &'static str, default: &str) -> Param {
        Param {
            name,
            kind: "string",
            description,
            default: Value::String(default.to_string()),
            choices: &[],
            items: None,
            required: true,
        }
    }
}

/// RAGFlow's `meta`.
#[derive(Debug, Clone)]
pub struct ToolMeta {
    /// Default function name (`search_my_dateset`).
    pub name: &'static str,
    /// Default description.
    pub description: &'static str,
    /// Parameters in order.
    pub parameters: Vec<Param>,
}

impl ToolMeta {
    /// The function name: the `function_name` param when set, else the meta name.
    pub fn function_name(&self, params: &Object) -> String {
        params
            .get("function_name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or(self.name)
            .to_string()
    }

    /// The OpenAI `tools[]` entry, named `name` (the indexed name the Agent gives).
    pub fn schema(&self, params: &Object, name: &str) -> Value {
        let mut props = Map::new();
        for p in &self.parameters {
            let mut s = json!({"type": p.kind, "description": p.description});
            if !p.choices.is_empty() {
                s["enum"] = json!(p.choices);
            }
            if let Some(items) = &p.items {
                s["items"] = items.clone();
            } else if p.kind == "array" {
                s["items"] = json!({"type": "string"});
            }
            props.insert(p.name.to_string(), s);
        }
        let description = params
            .get("description")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or(self.description);
        let required: Vec<&str> = self
            .parameters
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name)
            .collect();
        json!({"type": "function", "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required}
        }})
    }

    /// The parameters with their defaults, for the engine (`Component::input_params`).
    pub fn input_params(&self) -> Vec<(String, Value)> {
        self.parameters
            .iter()
            .map(|p| (p.name.to_string(), p.default.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> ToolMeta {
        ToolMeta {
            name: "execute_code",
            description: "runs code",
            parameters: vec![
                Param {
                    choices: &["python", "javascript"],
                    ..Param::string("lang", "the language", "python")
                },
                Param {
                    kind: "array",
                    required: false,
                    default: json!([]),
                    ..Param::string("urls", "pages", "")
                },
            ],
        }
    }

    #[test]
    fn schema_keeps_enums_items_and_required() {
        let s = meta().schema(&Object::new(), "execute_code_2");
        let f = &s["function"];
        assert_eq!(f["name"], "execute_code_2");
        assert_eq!(f["description"], "runs code");
        assert_eq!(
            f["parameters"]["properties"]["lang"]["enum"],
            json!(["python", "javascript"])
        );
        assert_eq!(
            f["parameters"]["properties"]["urls"]["items"],
            json!({"type": "string"})
        );
        assert_eq!(f["parameters"]["required"], json!(["lang"]));
        assert!(
            f["parameters"]["properties"]["lang"]
                .get("default")
                .is_none()
        );
    }

    #[test]
    fn params_override_name_and_description() {
        let params: Object =
            serde_json::from_value(json!({"function_name": "run_it", "description": "mine"}))
                .unwrap();
        let m = meta();
        assert_eq!(m.function_name(&params), "run_it");
        assert_eq!(
            m.schema(&params, "run_it_0")["function"]["description"],
            "mine"
        );
        assert_eq!(m.function_name(&Object::new()), "execute_code");
    }
}
