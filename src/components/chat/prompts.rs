//! Prompt texts the model-calling components send. RAGFlow's prompt scaffolding is
//! ours to word (decisions.md), so these say what RAGFlow's say in our own words; the
//! shapes the engine depends on (`ID:` blocks, `[ID:n]` markers) are RAGFlow's.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::llm::count_tokens;

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

/// The `ID:` number a chunk is shown and cited under: a stable hash of its id mod 500.
///
/// RAGFlow uses `int(sha1(id)) % 500`; SHA-1 is not among our dependencies, so this
/// uses SHA-256 for now. The number only has to be stable within a run, since the
/// reference store keys chunks by this same function.
pub fn chunk_ref_id(chunk_id: &str) -> u64 {
    let digest = Sha256::digest(chunk_id.as_bytes());
    // The digest read as one big-endian integer, reduced as we go.
    digest
        .iter()
        .fold(0u64, |r, &b| (r * 256 + u64::from(b)) % 500)
}

/// Renders retrieved chunks as knowledge blocks for the model (RAGFlow's `kb_prompt`
/// with hashed ids); callers join them with `\n`.
pub fn kb_prompt(chunks: &[Value], max_tokens: usize) -> Vec<String> {
    // As RAGFlow: count the non-empty contents until they pass 97 % of the budget; the
    // chunk that passes it is still kept, and the count is applied to the list by
    // position (so an empty chunk early on pushes the last one out).
    let budget = max_tokens as f64 * 0.97;
    let mut used = 0u64;
    let mut kept = 0usize;
    for ck in chunks {
        let content = content_of(ck);
        if content.is_empty() {
            continue;
        }
        used += count_tokens(&content);
        kept += 1;
        if budget < used as f64 {
            break;
        }
    }
    chunks
        .iter()
        .take(kept)
        .map(|ck| {
            let id = field(ck, "id", "chunk_id").map(text_of).unwrap_or_default();
            let mut out = format!("\nID: {}", chunk_ref_id(&id));
            out.push_str(&node("Title", field(ck, "docnm_kwd", "document_name")));
            if let Some(url) = ck.get("url") {
                out.push_str(&node("URL", Some(url)));
            }
            if let Some(Value::Object(meta)) = ck.get("document_metadata") {
                for (k, v) in meta {
                    out.push_str(&node(k, Some(v)));
                }
            }
            out.push_str("\n└── Content:\n");
            out.push_str(&content_of(ck));
            out
        })
        .collect()
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

/// RAGFlow's `get_value`: the first key when present (even null), else the second.
fn field<'a>(ck: &'a Value, k1: &str, k2: &str) -> Option<&'a Value> {
    ck.get(k1).or_else(|| ck.get(k2))
}

/// A chunk's content (`content`, else `content_with_weight`).
fn content_of(ck: &Value) -> String {
    field(ck, "content", "content_with_weight")
        .map(text_of)
        .unwrap_or_default()
}

/// A value as Python's `str()` would show it (null as "", JSON for containers).
fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        other => other.to_string(),
    }
}

/// One `├── key: value` line; empty values are left out and newline runs become one
/// space so a value stays on its line.
fn node(key: &str, value: Option<&Value>) -> String {
    let text = value.map(text_of).unwrap_or_default();
    if text.is_empty() {
        return String::new();
    }
    let mut line = String::new();
    let mut in_newlines = false;
    for c in text.chars() {
        if c == '\n' {
            if !in_newlines {
                line.push(' ');
            }
            in_newlines = true;
        } else {
            line.push(c);
            in_newlines = false;
        }
    }
    format!("\n├── {key}: {line}")
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
    fn chunk_ref_id_is_stable_and_below_500() {
        assert_eq!(chunk_ref_id("abc"), chunk_ref_id("abc"));
        for id in ["", "abc", "chunk-1", "日本", "12345678"] {
            assert!(chunk_ref_id(id) < 500);
        }
        // Pinned so that a change of hash shows up here (Python:
        // int(hashlib.sha256(b"abc").hexdigest(), 16) % 500).
        assert_eq!(chunk_ref_id("abc"), 465);
    }

    #[test]
    fn kb_prompt_renders_blocks() {
        let chunks = vec![
            json!({
                "id": "c1",
                "content": "Paris is the capital.",
                "document_name": "geo.pdf",
                "url": "https://example.com/geo",
                "document_metadata": {"author": "Ann\n\nLee", "year": 2020, "empty": "", "none": null}
            }),
            json!({"chunk_id": "c2", "content_with_weight": "Second.", "docnm_kwd": "b.txt", "url": ""}),
        ];
        let out = kb_prompt(&chunks, 1000);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0],
            format!(
                "\nID: {}\n├── Title: geo.pdf\n├── URL: https://example.com/geo\n├── author: Ann Lee\n├── year: 2020\n└── Content:\nParis is the capital.",
                chunk_ref_id("c1")
            )
        );
        assert_eq!(
            out[1],
            format!(
                "\nID: {}\n├── Title: b.txt\n└── Content:\nSecond.",
                chunk_ref_id("c2")
            )
        );
    }

    #[test]
    fn kb_prompt_stops_after_the_chunk_passing_97_percent() {
        let chunk = |i: usize| json!({"id": format!("c{i}"), "content": "a b c d e f g h i j"});
        let chunks: Vec<Value> = (0..5).map(chunk).collect();
        // 10 tokens each; budget 25 * 0.97 = 24.25: passed by the third chunk, kept.
        assert_eq!(kb_prompt(&chunks, 25).len(), 3);
        assert_eq!(kb_prompt(&chunks, 1000).len(), 5);
        assert!(kb_prompt(&[], 100).is_empty());
    }

    #[test]
    fn kb_prompt_counts_empty_chunks_by_position() {
        let chunks = vec![
            json!({"id": "e", "content": ""}),
            json!({"id": "a", "content": "x"}),
            json!({"id": "b", "content": "y"}),
        ];
        // Two non-empty chunks counted, then the first two of the list are rendered.
        let out = kb_prompt(&chunks, 1000);
        assert_eq!(out.len(), 2);
        assert!(out[1].ends_with("Content:\nx"));
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
