//! The run's reference store (`engine.md` §4.8) and how tools feed it: chunks
//! normalised as RAGFlow's `chunks_format`, keyed by `sha1(chunk id) mod 500`, documents
//! by name; search results turned into chunks (`_retrieve_chunks`); and the knowledge
//! blocks (`kb_prompt`) a tool returns to the model as `formalized_content`.

use serde_json::{Map, Value, json};
use sha1::{Digest, Sha1};

use canvas_engine::RunState;
use canvas_llm::count_tokens;

/// `hash_str2int(text, modulus)`: the SHA-1 digest read as one big-endian integer,
/// reduced modulo `modulus`.
pub fn hash_str2int(text: &str, modulus: u64) -> u64 {
    Sha1::digest(text.as_bytes())
        .iter()
        .fold(0u64, |r, &b| (r * 256 + u64::from(b)) % modulus)
}

/// Add chunks and document aggregates to the last reference entry of the run
/// (`Canvas.add_reference`): chunks normalised and keyed by their `ID:` number, later
/// duplicates overwriting earlier ones as in RAGFlow.
pub fn add(st: &mut RunState, chunks: &[Value], doc_aggs: &[Value]) {
    if st.retrieval.is_empty() {
        st.retrieval.push(json!({"chunks": {}, "doc_aggs": {}}));
    }
    let Some(entry) = st.retrieval.last_mut() else {
        return;
    };
    let Value::Object(entry) = entry else {
        return;
    };
    for key in ["chunks", "doc_aggs"] {
        if !entry.get(key).is_some_and(Value::is_object) {
            entry.insert(key.to_string(), Value::Object(Map::new()));
        }
    }
    if let Some(Value::Object(store)) = entry.get_mut("chunks") {
        for ck in chunks {
            let ck = chunk_format(ck);
            let id = text_of(ck.get("id").unwrap_or(&Value::Null));
            store.insert(chunk_ref_id(&id).to_string(), ck);
        }
    }
    if let Some(Value::Object(store)) = entry.get_mut("doc_aggs") {
        for d in doc_aggs {
            let name = text_of(d.get("doc_name").unwrap_or(&Value::Null));
            store.insert(name, d.clone());
        }
    }
}

/// RAGFlow's `chunks_format` for one chunk: either naming accepted, the API's shape out.
pub fn chunk_format(ck: &Value) -> Value {
    let get = |a: &str, b: &str| field(ck, a, b).cloned().unwrap_or(Value::Null);
    json!({
        "id": get("chunk_id", "id"),
        "content": get("content", "content_with_weight"),
        "document_id": get("doc_id", "document_id"),
        "document_name": get("docnm_kwd", "document_name"),
        "dataset_id": get("kb_id", "dataset_id"),
        "image_id": get("image_id", "img_id"),
        "positions": get("positions", "position_int"),
        "url": ck.get("url").cloned().unwrap_or(Value::Null),
        "similarity": ck.get("similarity").cloned().unwrap_or(Value::Null),
        "vector_similarity": ck.get("vector_similarity").cloned().unwrap_or(Value::Null),
        "term_similarity": ck.get("term_similarity").cloned().unwrap_or(Value::Null),
        "row_id": ck.get("row_id").cloned().unwrap_or(Value::Null),
        "doc_type": get("doc_type_kwd", "doc_type"),
        "document_metadata": ck.get("document_metadata").cloned().unwrap_or(Value::Null),
    })
}

/// One search result as a tool gives it to `retrieve_chunks`.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// Document title.
    pub title: String,
    /// Where it is.
    pub url: String,
    /// Its text.
    pub content: String,
    /// Relevance (RAGFlow uses 1 when the source gives none).
    pub score: Option<f64>,
}

/// RAGFlow's `_retrieve_chunks`: results with content become chunks (inline base64 PNG
/// images removed, content cut to 10 000 characters, id = `sha1(content) mod 10^8`),
/// and document aggregates. Returns `(chunks, doc_aggs, formalized_content)`; the
/// caller adds them to the store and sets `formalized_content`.
pub fn retrieve_chunks(results: &[Found]) -> (Vec<Value>, Vec<Value>, String) {
    static IMG: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"!?\[[a-z]+\]\(data:image/png;base64,[ 0-9A-Za-z/_=+-]+\)")
            .expect("valid regex")
    });
    let mut chunks = Vec::new();
    let mut aggs = Vec::new();
    for r in results {
        if r.content.is_empty() {
            continue;
        }
        let content: String = IMG
            .replace_all(&r.content, "")
            .chars()
            .take(10_000)
            .collect();
        if content.is_empty() {
            continue;
        }
        let id = hash_str2int(&content, 100_000_000).to_string();
        let score = r.score.map(|s| json!(s)).unwrap_or(json!(1));
        chunks.push(json!({"chunk_id": id, "content": content, "doc_id": id,
            "docnm_kwd": r.title, "similarity": score, "url": r.url}));
        aggs.push(json!({"doc_name": r.title, "doc_id": id, "count": 1, "url": r.url}));
    }
    let formalized = kb_prompt(&chunks, 200_000).join("\n");
    (chunks, aggs, formalized)
}

/// The `ID:` number a chunk is shown and cited under: a stable hash of its id mod 500.
///
/// RAGFlow's `int(sha1(id)) % 500`: the reference store keys chunks by it too.
pub fn chunk_ref_id(chunk_id: &str) -> u64 {
    let digest = Sha1::digest(chunk_id.as_bytes());
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
    fn chunk_ref_id_is_stable_and_below_500() {
        assert_eq!(chunk_ref_id("abc"), chunk_ref_id("abc"));
        for id in ["", "abc", "chunk-1", "日本", "12345678"] {
            assert!(chunk_ref_id(id) < 500);
        }
        // Pinned so that a change of hash shows up here (Python:
        // int(hashlib.sha256(b"abc").hexdigest(), 16) % 500).
        assert_eq!(chunk_ref_id("abc"), 17);
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
    fn hash_matches_python() {
        // int(hashlib.sha1(b"hello").hexdigest(), 16) % 10**8
        assert_eq!(hash_str2int("hello", 100_000_000), 45743181);
    }

    #[test]
    fn chunks_are_keyed_by_ref_id_and_formatted() {
        let mut st = RunState::default();
        st.retrieval.push(json!({"chunks": {}, "doc_aggs": {}}));
        let ck = json!({"chunk_id": "c1", "content_with_weight": "text", "doc_id": "d1",
            "docnm_kwd": "Doc", "kb_id": "k", "similarity": 0.5});
        add(
            &mut st,
            &[ck],
            &[json!({"doc_name": "Doc", "doc_id": "d1", "count": 1})],
        );
        let r = &st.retrieval[0];
        let key = chunk_ref_id("c1").to_string();
        assert_eq!(r["chunks"][&key]["id"], "c1");
        assert_eq!(r["chunks"][&key]["content"], "text");
        assert_eq!(r["chunks"][&key]["document_name"], "Doc");
        assert_eq!(r["chunks"][&key]["dataset_id"], "k");
        assert_eq!(r["doc_aggs"]["Doc"]["doc_id"], "d1");
    }

    #[test]
    fn search_results_become_chunks_without_inline_images() {
        let found = [
            Found {
                title: "A".into(),
                url: "http://a".into(),
                content: "alpha ![img](data:image/png;base64,AAAA) end".into(),
                score: None,
            },
            Found {
                title: "B".into(),
                url: "http://b".into(),
                content: String::new(),
                score: Some(0.3),
            },
        ];
        let (chunks, aggs, text) = retrieve_chunks(&found);
        assert_eq!(chunks.len(), 1);
        assert_eq!(aggs.len(), 1);
        assert_eq!(chunks[0]["content"], "alpha  end");
        assert_eq!(chunks[0]["similarity"], 1);
        let id = hash_str2int("alpha  end", 100_000_000).to_string();
        assert_eq!(chunks[0]["chunk_id"], json!(id));
        assert!(text.contains("├── Title: A"), "{text}");
        assert!(text.contains("├── URL: http://a"), "{text}");
        assert!(text.contains("└── Content:\nalpha  end"), "{text}");
    }
}
