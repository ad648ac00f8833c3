//! `llm_config`: an `llm.yaml` provider configuration, and the `llm_id`s it resolves.
//! Input: `LLM.YAML \0 ENVIRONMENT (NAME=VALUE lines) \0 LLM_IDS (one a line)`.

use std::collections::HashMap;

use canvas_llm::provider::{LlmConfig, Providers, split_llm_id};

/// A configuration parses or is refused with a message naming it; a parsed one
/// resolves any `llm_id` (its own keys, the given ones) to an endpoint or an error.
pub fn llm_config(data: &[u8]) {
    let Some([config, env, ids]) = crate::text_parts::<3>(data) else {
        return;
    };
    let config = match LlmConfig::parse(config, "llm.yaml") {
        Ok(c) => c,
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("llm.yaml"), "{msg}");
            assert!(!msg.contains('\n'), "one line: {msg}");
            return;
        }
    };
    let mut wanted: Vec<String> = vec![String::new(), "qwen2.5:7b@Ollama".into()];
    wanted.extend(config.models.keys().cloned());
    wanted.extend(config.factories.keys().map(|f| format!("model@{f}")));
    wanted.extend(ids.lines().map(str::to_string));
    let vars: HashMap<String, String> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let providers = Providers::new(
        config,
        None,
        Box::new(move |name: &str| vars.get(name).cloned()),
    );
    for id in &wanted {
        let parts = split_llm_id(id);
        assert_eq!(parts.model, parts.model.trim());
        if let Ok(endpoint) = providers.resolve(id) {
            assert!(endpoint.context_length >= 1);
            assert!(endpoint.timeout.as_secs() >= 1);
        }
    }
}
