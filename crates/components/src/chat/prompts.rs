//! Prompt texts the model-calling components send. RAGFlow's prompt scaffolding is
//! ours to word (decisions.md), so these say what RAGFlow's say in our own words; the
//! shapes the engine depends on (`ID:` blocks, `[ID:n]` markers) are RAGFlow's.

use serde_json::Value;

/// The instructions appended to the system prompt when a JSON answer following
/// `schema` is wanted.
pub fn structured_output_prompt(schema: &Value) -> String {
    // serde_json's pretty printer indents by two spaces, as RAGFlow's json.dumps does.
    let pretty = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
    format!(
        "Answer with JSON only: a single JSON value that follows the schema below. \
Write no explanation or other prose, and do not wrap the JSON in markdown code fences.

Rules:
- Use the property names the schema defines and include every required property.
- Give every value the type the schema gives it: numbers as JSON numbers (not \
strings), strings as JSON strings, lists as arrays, objects as objects.

Example:
Schema: {{\"type\": \"object\", \"properties\": {{\"city\": {{\"type\": \"string\"}}, \
\"population\": {{\"type\": \"integer\"}}}}, \"required\": [\"city\", \"population\"]}}
Question: Which city is the capital of France, and how many people live there?
Answer: {{\"city\": \"Paris\", \"population\": 2100000}}

Here is the JSON schema:
{pretty}"
    )
}

/// Instructions to cite facts from the knowledge blocks with `[ID:n]` markers.
///
/// Starts with a blank line so it can be appended straight to a system prompt, as
/// RAGFlow appends its citation prompt.
pub fn citation_prompt() -> String {
    "

# Citing your sources
The knowledge blocks you were given each start with `ID: n`. When a sentence of your \
answer states a fact taken from one of those blocks, cite it:
- Write the marker as [ID:n], where n is the number of the block the fact comes from.
- Several sources for one sentence are written one after another: [ID:3][ID:8]. Never \
combine them as [ID:3, ID:8] or [ID:3,8].
- Use at most 4 markers per sentence, choosing the most relevant blocks.
- Put the markers at the end of the sentence, before its final punctuation.
- Cite only facts that come from the provided knowledge blocks. Do not cite your own \
reasoning, general knowledge or greetings.
- Use only IDs that appear in the knowledge blocks; never invent an ID.
- Do not change the wording of the facts you cite because of the markers.
- In right-to-left languages, place the markers the same way, at the end of the sentence.

## Example 1
<context>
ID: 12
└── Content: The Eiffel Tower was completed in 1889 for the World's Fair in Paris.
ID: 31
└── Content: The tower is about 330 metres tall including its antennas.
</context>
USER: When was the Eiffel Tower built, and how tall is it?
ASSISTANT: The Eiffel Tower was completed in 1889 for the World's Fair [ID:12]. It is \
about 330 metres tall including its antennas [ID:31].

## Example 2
<context>
ID: 7
└── Content: Honey bees communicate the location of flowers with a waggle dance.
ID: 19
└── Content: The angle of the waggle run tells other bees the direction of the food \
relative to the sun.
ID: 23
└── Content: Bumblebees live in colonies of a few hundred individuals.
</context>
USER: How do bees tell each other where food is?
ASSISTANT: Honey bees use a waggle dance to share where flowers are, and the angle of \
the dance gives the direction of the food relative to the sun [ID:7][ID:19]. This is \
a well-studied example of animal communication.

Remember: one marker per ID, side by side as [ID:i][ID:j]; the [ID:0, ID:5] form is \
not allowed.
IMPORTANT: The IDs in the examples above (12, 31, 7, 19, 23) are illustrations only. \
Use the actual IDs of the knowledge blocks you were given."
        .to_string()
}

/// Maps a name to what function-calling APIs accept: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn sanitize_function_name(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if mapped.is_empty() {
        "tool".to_string()
    } else {
        mapped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_prompt_ends_with_pretty_schema() {
        let schema = json!({"type": "object", "properties": {"answer": {"type": "number"}}});
        let p = structured_output_prompt(&schema);
        assert!(p.starts_with("Answer with JSON only"));
        assert!(p.contains("numbers as JSON numbers"));
        let tail = "Here is the JSON schema:\n{\n  \"type\": \"object\",\n  \"properties\": {\n    \
\"answer\": {\n      \"type\": \"number\"\n    }\n  }\n}";
        assert!(p.ends_with(tail), "{p}");
        // The example in it is valid JSON.
        let example = p.lines().find_map(|l| l.strip_prefix("Answer: ")).unwrap();
        assert!(serde_json::from_str::<Value>(example).is_ok());
    }

    #[test]
    fn citation_prompt_states_the_rules() {
        let p = citation_prompt();
        assert!(p.starts_with("\n\n"));
        for needle in [
            "[ID:n]",
            "[ID:3][ID:8]",
            "at most 4",
            "never invent",
            "[ID:0, ID:5]",
        ] {
            assert!(p.contains(needle), "missing {needle}");
        }
        assert_eq!(p.matches("<context>").count(), 2);
        assert!(p.ends_with("knowledge blocks you were given."));
    }

    #[test]
    fn sanitize_function_name_maps_to_api_names() {
        assert_eq!(sanitize_function_name("web search"), "web_search");
        assert_eq!(sanitize_function_name("Agent:Bob.v2"), "Agent_Bob_v2");
        assert_eq!(sanitize_function_name("ok-name_1"), "ok-name_1");
        assert_eq!(sanitize_function_name("日本"), "__");
        assert_eq!(sanitize_function_name(""), "tool");
        let long = "x".repeat(100);
        assert_eq!(sanitize_function_name(&long).len(), 64);
        let re = regex::Regex::new("^[a-zA-Z0-9_-]{1,64}$").unwrap();
        for n in ["", " ", "a b c", "🙂🙂", &"é".repeat(80)] {
            assert!(re.is_match(&sanitize_function_name(n)));
        }
    }
}
