//! The scripted mock LLM (`--mock-llm FILE`, `mock-llm.md`): rules matched against the
//! last user message or the system prompt answer with text (streamed in word, character
//! or whole chunks) or with native tool calls; no rule → `"ECHO: " + user` or a fixed
//! default. Offline runs, tests, demos and the conformance suite use it.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::Value;

use super::{ChatModel, ChatRequest, Delta, DeltaStream, LlmError, ToolCall, Usage, count_tokens};

/// A regex error on one line: its last line says what is wrong (the lines before it
/// draw the pattern with a caret).
fn one_line(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(text) => {
            let what = text.lines().last().unwrap_or(text).trim();
            what.strip_prefix("error: ").unwrap_or(what).to_string()
        }
        other => other.to_string(),
    }
}

/// Which text a rule's regex searches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum On {
    /// The last user message (default).
    #[default]
    User,
    /// The system prompt.
    System,
    /// System prompt + "\n" + last user message.
    Any,
}

/// How an answer is split into streamed chunks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Chunking {
    /// Runs of non-space characters with their trailing white space (default).
    #[default]
    Word,
    /// One character per chunk.
    Char,
    /// The whole answer at once.
    Whole,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    #[serde(default)]
    rules: Vec<RawRule>,
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    chunk: Chunking,
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    chunk_delay_ms: u64,
    /// *ours*: the `sys.date` scripted runs see; `"now"` for the clock.
    #[serde(default)]
    date: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    #[serde(rename = "match")]
    pattern: String,
    #[serde(default)]
    on: On,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<RawToolCall>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolCall {
    name: String,
    #[serde(default = "empty_object")]
    arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// What a rule answers.
#[derive(Debug, Clone)]
enum Answer {
    Text(String),
    Tools(Vec<RawToolCall>),
}

#[derive(Debug, Clone)]
struct Rule {
    re: Regex,
    on: On,
    answer: Answer,
}

/// A parsed, checked mock script.
#[derive(Debug, Clone)]
pub struct MockScript {
    rules: Vec<Rule>,
    /// `None` = echo.
    default: Option<String>,
    chunk: Chunking,
    delay: Duration,
    chunk_delay: Duration,
    /// `None` = the clock.
    date: Option<String>,
}

/// The `sys.date` of scripted runs unless the script says otherwise: the one RAGFlow's
/// conformance recordings were made with, so scripted runs are reproducible.
pub const SCRIPTED_DATE: &str = "2025-01-01 00:00:00";

/// What an `any` rule searches: the system prompt, the last user message, then (ours)
/// the results of the tool calls made since, one a line, so a rule can match them.
fn any_text(req: &ChatRequest, system: &str, user: &str) -> String {
    let mut s = format!("{system}\n{user}");
    let last_user = req
        .messages
        .iter()
        .rposition(|m| m.role == super::Role::User);
    let after = last_user.map_or(0, |i| i + 1);
    for m in &req.messages[after..] {
        if m.role == super::Role::Tool {
            s.push('\n');
            s.push_str(&m.text_content());
        }
    }
    s
}

impl MockScript {
    /// Read a script file (JSON, or YAML for `.yaml`/`.yml` and anything not starting
    /// with `{`).
    pub fn load(path: &Path) -> Result<MockScript, LlmError> {
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| LlmError::Script {
            path: label.clone(),
            message: format!("cannot read the mock script: {e}"),
        })?;
        MockScript::parse(&text, &label)
    }

    /// Parse a script; `label` names it in errors.
    pub fn parse(text: &str, label: &str) -> Result<MockScript, LlmError> {
        let err = |message: String| LlmError::Script {
            path: label.to_string(),
            message,
        };
        let trimmed = text.trim_start_matches('\u{feff}').trim_start();
        let raw: RawScript = if trimmed.starts_with('{') {
            serde_json::from_str(trimmed).map_err(|e| err(format!("not a mock script: {e}")))?
        } else {
            canvas_dsl::nesting::check_yaml(trimmed)
                .map_err(|e| err(format!("not a mock script: invalid YAML: {e}")))?;
            yaml_serde::from_str(trimmed).map_err(|e| err(format!("not a mock script: {e}")))?
        };
        let mut rules = Vec::with_capacity(raw.rules.len());
        for (i, r) in raw.rules.into_iter().enumerate() {
            let n = i + 1;
            let re = RegexBuilder::new(&r.pattern)
                .dot_matches_new_line(true)
                .build()
                .map_err(|e| err(format!("rule {n}: bad match regex: {}", one_line(&e))))?;
            let answer = match (r.answer, r.tool_calls) {
                (Some(a), None) => Answer::Text(a),
                (None, Some(calls)) if !calls.is_empty() => Answer::Tools(calls),
                (Some(_), Some(_)) => {
                    return Err(err(format!(
                        "rule {n}: give either `answer` or `tool_calls`, not both"
                    )));
                }
                _ => return Err(err(format!("rule {n}: needs `answer` or `tool_calls`"))),
            };
            rules.push(Rule {
                re,
                on: r.on,
                answer,
            });
        }
        let default = match raw.default.as_deref() {
            None | Some("echo") => None,
            Some(other) => Some(other.to_string()),
        };
        Ok(MockScript {
            rules,
            default,
            chunk: raw.chunk,
            delay: Duration::from_millis(raw.delay_ms),
            chunk_delay: Duration::from_millis(raw.chunk_delay_ms),
            date: match raw.date.as_deref() {
                None => Some(SCRIPTED_DATE.to_string()),
                Some("now") => None,
                Some(d) => Some(d.to_string()),
            },
        })
    }

    /// The `sys.date` runs answered by this script see (`None`: the clock).
    pub fn date(&self) -> Option<&str> {
        self.date.as_deref()
    }

    /// The answer to a request: the first matching rule's, else the default.
    fn answer(&self, req: &ChatRequest) -> Answer {
        let user = req.last_user();
        let system = req.system();
        for rule in &self.rules {
            let hit = match rule.on {
                On::User => rule.re.is_match(&user),
                On::System => rule.re.is_match(&system),
                On::Any => rule.re.is_match(&any_text(req, &system, &user)),
            };
            if hit {
                return match &rule.answer {
                    Answer::Text(t) => {
                        let head: String = system.chars().take(200).collect();
                        Answer::Text(t.replace("{user}", &user).replace("{system}", &head))
                    }
                    tools => tools.clone(),
                };
            }
        }
        Answer::Text(match &self.default {
            None => format!("ECHO: {user}"),
            Some(d) => d.clone(),
        })
    }
}

/// The length of the first word chunk of `rest`, as the regex `\S+\s*|\s+` finds it: a
/// run of non-space characters with the white space after it (white space that starts
/// the text is a chunk of its own); `None` when `rest` is empty. Scanned by hand:
/// compiling that regex took a millisecond of every run.
fn next_word(rest: &str) -> Option<usize> {
    if rest.is_empty() {
        return None;
    }
    let word = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let end = rest[word..]
        .find(|c: char| !c.is_whitespace())
        .map_or(rest.len(), |n| word + n);
    Some(end)
}

/// The mock as a [`ChatModel`].
#[derive(Debug)]
pub struct MockModel {
    script: MockScript,
    /// Tool call ids are `call_1`, `call_2`, … in the order the mock makes them.
    calls: AtomicU64,
}

impl MockModel {
    /// A model answering from `script`.
    pub fn new(script: MockScript) -> MockModel {
        MockModel {
            script,
            calls: AtomicU64::new(0),
        }
    }

    /// What one call streams, in order, without the script's pauses: the answer's
    /// chunks (or its tool calls), then the usage. Each chunk is cut from the answer
    /// when it is taken, so a long answer is not held twice, once as chunks.
    pub fn deltas(&self, req: &ChatRequest) -> MockAnswer {
        let prompt_tokens = req
            .messages
            .iter()
            .map(|m| count_tokens(&m.text_content()))
            .sum();
        match self.script.answer(req) {
            Answer::Text(text) => {
                // The answer is the model's raw text, `<think>` tags and `**ERROR**`
                // included: RAGFlow's post-processing treats it as a provider's text.
                let completion_tokens = count_tokens(&text);
                MockAnswer {
                    text,
                    at: 0,
                    chunking: self.script.chunk,
                    calls: None,
                    usage: Some(Usage {
                        prompt_tokens,
                        completion_tokens,
                    }),
                }
            }
            Answer::Tools(calls) => {
                let calls: Vec<ToolCall> = calls
                    .into_iter()
                    .map(|c| ToolCall {
                        id: format!("call_{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1),
                        name: c.name,
                        arguments: c.arguments,
                    })
                    .collect();
                let completion_tokens = calls
                    .iter()
                    .map(|c| count_tokens(&c.name) + count_tokens(&c.arguments.to_string()))
                    .sum();
                MockAnswer {
                    text: String::new(),
                    at: usize::MAX,
                    chunking: self.script.chunk,
                    calls: Some(calls),
                    usage: Some(Usage {
                        prompt_tokens,
                        completion_tokens,
                    }),
                }
            }
        }
    }
}

/// One call's answer as it streams: the text's chunks (or the tool calls), then the
/// usage.
#[derive(Debug)]
pub struct MockAnswer {
    text: String,
    /// Where the next chunk starts (`usize::MAX` once the text is sent).
    at: usize,
    chunking: Chunking,
    calls: Option<Vec<ToolCall>>,
    usage: Option<Usage>,
}

impl Iterator for MockAnswer {
    type Item = Delta;

    fn next(&mut self) -> Option<Delta> {
        if let Some(calls) = self.calls.take() {
            return Some(Delta::ToolCalls(calls));
        }
        if self.at <= self.text.len() {
            let rest = &self.text[self.at..];
            let end = match self.chunking {
                // The whole answer, an empty one included, is one chunk.
                Chunking::Whole => Some(rest.len()),
                Chunking::Char => rest.chars().next().map(char::len_utf8),
                Chunking::Word => next_word(rest),
            };
            match end {
                Some(n) => {
                    let chunk = rest[..n].to_string();
                    self.at = if n == rest.len() {
                        usize::MAX
                    } else {
                        self.at + n
                    };
                    return Some(Delta::Text(chunk));
                }
                None => self.at = usize::MAX,
            }
        }
        self.usage.take().map(Delta::Usage)
    }
}

#[async_trait]
impl ChatModel for MockModel {
    async fn chat(&self, req: &ChatRequest) -> Result<DeltaStream, LlmError> {
        let deltas = self.deltas(req);
        let (delay, gap) = (self.script.delay, self.script.chunk_delay);
        if delay.is_zero() && gap.is_zero() {
            // No pauses: the chunks as they are, without a future made for each.
            return Ok(Box::pin(futures::stream::iter(deltas.map(Ok))));
        }
        let stream = futures::stream::unfold((deltas, true), move |(mut rest, first)| async move {
            let next = rest.next()?;
            let wait = if first { delay } else { gap };
            // No pause before the closing usage: it is not a chunk.
            let closing = matches!(next, Delta::Usage(_)) && !first;
            if !wait.is_zero() && !closing {
                tokio::time::sleep(wait).await;
            }
            Some((Ok(next), (rest, false)))
        });
        Ok(Box::pin(stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, Role};
    use futures::StreamExt;

    fn req(system: &str, user: &str) -> ChatRequest {
        let mut messages = Vec::new();
        if !system.is_empty() {
            messages.push(Message::text(Role::System, system));
        }
        messages.push(Message::text(Role::User, "earlier question"));
        messages.push(Message::text(Role::Assistant, "earlier answer"));
        messages.push(Message::text(Role::User, user));
        ChatRequest {
            model: String::new(),
            messages,
            ..Default::default()
        }
    }

    fn answer(script: &str, r: &ChatRequest) -> Vec<Delta> {
        let model = MockModel::new(MockScript::parse(script, "t.json").unwrap());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let s = model.chat(r).await.unwrap();
            s.map(|d| d.unwrap()).collect::<Vec<_>>().await
        })
    }

    fn text(deltas: &[Delta]) -> Vec<String> {
        deltas
            .iter()
            .filter_map(|d| match d {
                Delta::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn echo_by_default_in_word_chunks() {
        let d = answer("{}", &req("", "Plan my day"));
        assert_eq!(text(&d), ["ECHO: ", "Plan ", "my ", "day"]);
        assert!(matches!(d.last(), Some(Delta::Usage(u)) if u.completion_tokens == 5));
    }

    /// The hand-written word split finds the chunks the regex `\S+\s*|\s+` finds,
    /// Unicode white space and leading, trailing and repeated white space included.
    #[test]
    fn word_chunks_are_the_regex_matches() {
        let re = Regex::new(r"\S+\s*|\s+").unwrap();
        let texts = [
            "",
            " ",
            "a",
            "  lead and trail  ",
            "one\ttwo\n\nthree\r\n",
            "日本語 の\u{3000}テキスト\u{a0}x\u{2028}y\u{85}z",
            "\u{200b}zero-width is not space\u{feff}",
            "é  \u{1680}ü\u{180e}v",
        ];
        for t in texts {
            let want: Vec<&str> = re.find_iter(t).map(|m| m.as_str()).collect();
            let mut got = Vec::new();
            let mut rest = t;
            while let Some(n) = next_word(rest) {
                got.push(&rest[..n]);
                rest = &rest[n..];
            }
            assert_eq!(got, want, "{t:?}");
        }
    }
    #[test]
    fn rules_in_order_on_user_system_or_both() {
        let script = r#"{"rules": [
            {"match": "broken", "answer": "complaint"},
            {"match": "(?i)SUPPORT", "on": "system", "answer": "sys: {system}"},
            {"match": "agent.*\n.*refund", "on": "any", "answer": "any {user}"}
        ], "default": "nothing", "chunk": "whole"}"#;
        assert_eq!(
            text(&answer(script, &req("", "it is broken"))),
            ["complaint"]
        );
        assert_eq!(
            text(&answer(script, &req("You are support.", "hi"))),
            ["sys: You are support."]
        );
        assert_eq!(
            text(&answer(script, &req("an agent", "a refund"))),
            ["any a refund"]
        );
        assert_eq!(text(&answer(script, &req("x", "y"))), ["nothing"]);
        // Only the last user message is searched.
        assert_eq!(text(&answer(script, &req("", "earlier"))), ["nothing"]);
    }

    #[test]
    fn system_is_cut_to_200_characters_and_dot_matches_newlines() {
        let long = "s".repeat(300);
        let script = r#"{"rules": [{"match": "a.b", "answer": "{system}"}], "chunk": "whole"}"#;
        let got = text(&answer(script, &req(&long, "a\nb")));
        assert_eq!(got, [long[..200].to_string()]);
    }

    #[test]
    fn char_chunks_and_multimodal_user_text() {
        let mut r = req("", "");
        r.messages.last_mut().unwrap().content = serde_json::json!([
            {"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "x"}},
            {"type": "text", "text": "there"}
        ]);
        assert_eq!(
            text(&answer(r#"{"chunk": "char"}"#, &r)).concat(),
            "ECHO: hi there"
        );
        assert_eq!(text(&answer(r#"{"chunk": "char"}"#, &r)).len(), 14);
    }

    /// Each chunking cuts the answer as it says, empty answers included, with or
    /// without pauses, and the usage comes last with the answer's token count.
    #[test]
    fn answers_stream_in_the_scripted_chunks_then_the_usage() {
        let re = Regex::new(r"\S+\s*|\s+").unwrap();
        for answer_text in ["", " ", "a", "two  words\n", "é\u{3000}日本 x", "  lead"] {
            let words: Vec<String> = re
                .find_iter(answer_text)
                .map(|m| m.as_str().to_string())
                .collect();
            let chars: Vec<String> = answer_text.chars().map(String::from).collect();
            let cases = [
                ("word", words),
                ("char", chars),
                ("whole", vec![answer_text.to_string()]),
            ];
            for (chunk, want) in cases {
                for pause in ["", r#", "chunk_delay_ms": 1"#] {
                    let script = format!(
                        r#"{{"default": {}, "chunk": "{chunk}"{pause}}}"#,
                        serde_json::to_string(answer_text).unwrap()
                    );
                    let d = answer(&script, &req("", "q"));
                    assert_eq!(text(&d), want, "{script}");
                    assert_eq!(d.len(), want.len() + 1, "{script}");
                    assert!(
                        matches!(d.last(), Some(Delta::Usage(u))
                            if u.completion_tokens == count_tokens(answer_text)),
                        "{script}: {d:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn tool_calls_with_deterministic_ids() {
        let script = "rules:\n  - match: weather\n    tool_calls:\n      - name: wikipedia_0\n        arguments: {query: weather}\n      - name: clock_1\n";
        let d = answer(script, &req("", "the weather?"));
        let Delta::ToolCalls(calls) = &d[0] else {
            panic!("{d:?}")
        };
        assert_eq!(calls[0].id, "call_1");
        assert_eq!(calls[0].name, "wikipedia_0");
        assert_eq!(calls[0].arguments, serde_json::json!({"query": "weather"}));
        assert_eq!(
            (calls[1].id.as_str(), &calls[1].arguments),
            ("call_2", &serde_json::json!({}))
        );
    }

    #[test]
    fn delays_are_applied() {
        let script = r#"{"delay_ms": 30, "chunk_delay_ms": 10}"#;
        let t = std::time::Instant::now();
        let d = answer(script, &req("", "a b c"));
        assert_eq!(text(&d).len(), 4);
        // 30 ms before the first chunk, 10 ms between the next three.
        assert!(
            t.elapsed() >= Duration::from_millis(60),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn every_shared_mock_script_parses() {
        let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
        if !shared.join("conformance").is_dir() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{} is missing: CI must provide ../shared",
                shared.display()
            );
            return;
        }
        let mut seen = 0;
        for dir in ["conformance/cases", "bench"] {
            for entry in std::fs::read_dir(shared.join(dir)).unwrap() {
                let case = entry.unwrap().path().join("case.json");
                let Ok(text) = std::fs::read_to_string(&case) else {
                    continue;
                };
                let v: Value = serde_json::from_str(&text).unwrap();
                if let Some(llm) = v.get("llm").filter(|l| !l.is_null()) {
                    let label = case.display().to_string();
                    MockScript::parse(&llm.to_string(), &label).unwrap_or_else(|e| panic!("{e}"));
                    seen += 1;
                }
            }
        }
        assert!(seen >= 8, "only {seen} mock scripts found");
    }

    #[test]
    fn bad_scripts_are_named() {
        let cases = [
            (
                r#"{"rules": [{"match": "(", "answer": "x"}]}"#,
                "rule 1: bad match regex: unclosed group",
            ),
            (
                r#"{"rules": [{"match": "x"}]}"#,
                "rule 1: needs `answer` or `tool_calls`",
            ),
            (
                r#"{"rules": [{"match": "x", "answer": "a", "tool_calls": [{"name": "t"}]}]}"#,
                "not both",
            ),
            (r#"{"rulez": []}"#, "not a mock script"),
            ("- just\n- a list\n", "not a mock script"),
        ];
        for (text, want) in cases {
            let e = MockScript::parse(text, "m.yaml").unwrap_err().to_string();
            assert!(e.starts_with("m.yaml: ") && e.contains(want), "{text}: {e}");
            assert!(!e.contains('\n'), "one line: {e:?}");
        }
    }
}
