//! RAGFlow's `message_fit_in`: fitting a conversation into a token budget by dropping
//! the middle of the conversation and then truncating the system prompt or the last
//! message.

use serde_json::Value;

use canvas_llm::{Message, Role, count_tokens};

/// RAGFlow's budget when the model gives none.
const DEFAULT_MAX: usize = 8192;

/// Fits `messages` into `max_tokens` (0 means 8192) the way RAGFlow's `message_fit_in`
/// does.
pub fn fit(messages: Vec<Message>, max_tokens: usize) -> Vec<Message> {
    let max = if max_tokens == 0 {
        DEFAULT_MAX
    } else {
        max_tokens
    };
    if total(&messages) < max {
        return messages;
    }
    // Keep the system message(s) and the last message. A last message that is itself a
    // system message is kept once (RAGFlow would list it twice).
    let last_idx = messages.len().saturating_sub(1);
    let mut kept: Vec<Message> = messages
        .into_iter()
        .enumerate()
        .filter(|(i, m)| m.role == Role::System || *i == last_idx)
        .map(|(_, m)| m)
        .collect();
    if total(&kept) < max {
        return kept;
    }
    let n = kept.len();
    if n == 0 {
        return kept;
    }
    if n == 1 {
        // Only one message left: it alone is cut to the budget.
        truncate_message(&mut kept[0], max);
        return kept;
    }
    let sys_tokens = tokens(&kept[0]);
    let last_tokens = tokens(&kept[n - 1]);
    // ll / (ll + ll2) > 0.8, in integers (both are non-zero here: their sum is ≥ max).
    if sys_tokens * 5 > (sys_tokens + last_tokens) * 4 {
        truncate_message(&mut kept[n - 1], max);
        let rest = max.saturating_sub(tokens(&kept[n - 1]));
        truncate_message(&mut kept[0], rest);
    } else {
        truncate_message(&mut kept[0], max);
        let rest = max.saturating_sub(tokens(&kept[0]));
        truncate_message(&mut kept[n - 1], rest);
    }
    kept
}

/// The longest prefix of `text` holding at most `n` tokens (as [`count_tokens`] counts).
pub fn truncate_tokens(text: &str, n: usize) -> String {
    // count_tokens counts each run of alphanumerics and each other non-space char as one
    // token; cut right after the n-th token so the following whitespace goes with the
    // next (dropped) token, as tiktoken's leading-space tokens do.
    let mut count = 0usize;
    let mut end = 0usize;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            if !in_word {
                if count == n {
                    break;
                }
                count += 1;
            }
            in_word = true;
            end = i + c.len_utf8();
        } else {
            in_word = false;
            if !c.is_whitespace() {
                if count == n {
                    break;
                }
                count += 1;
                end = i + c.len_utf8();
            }
        }
    }
    text[..end].to_string()
}

/// The token count of every message together.
fn total(messages: &[Message]) -> usize {
    messages.iter().map(tokens).sum()
}

/// A message's token count.
fn tokens(m: &Message) -> usize {
    usize::try_from(count_tokens(&m.text_content())).unwrap_or(usize::MAX)
}

/// Cuts a string content to `n` tokens; list contents are left as they are.
fn truncate_message(m: &mut Message, n: usize) {
    if let Value::String(s) = &m.content {
        m.content = Value::String(truncate_tokens(s, n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: Role, text: &str) -> Message {
        Message::text(role, text)
    }

    fn words(n: usize) -> String {
        (0..n)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn count(s: &str) -> usize {
        count_tokens(s) as usize
    }

    #[test]
    fn under_budget_is_unchanged() {
        let ms = vec![
            msg(Role::System, "sys"),
            msg(Role::User, "a"),
            msg(Role::Assistant, "b"),
            msg(Role::User, "c"),
        ];
        assert_eq!(fit(ms.clone(), 10), ms);
    }

    #[test]
    fn zero_budget_means_8192() {
        let ms = vec![msg(Role::System, &words(100)), msg(Role::User, &words(100))];
        assert_eq!(fit(ms.clone(), 0), ms);
        let big = vec![
            msg(Role::System, "s"),
            msg(Role::User, &words(5000)),
            msg(Role::User, &words(5000)),
        ];
        let out = fit(big, 0);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn equal_to_budget_is_over() {
        // RAGFlow keeps the list only when it is strictly below the budget.
        let ms = vec![
            msg(Role::System, "s"),
            msg(Role::User, "a b"),
            msg(Role::User, "c"),
        ];
        let out = fit(ms, 4);
        assert_eq!(out, vec![msg(Role::System, "s"), msg(Role::User, "c")]);
    }

    #[test]
    fn drops_the_middle_when_that_fits() {
        let ms = vec![
            msg(Role::System, "sys"),
            msg(Role::User, &words(50)),
            msg(Role::Assistant, &words(50)),
            msg(Role::User, "last question"),
        ];
        let out = fit(ms, 20);
        assert_eq!(
            out,
            vec![msg(Role::System, "sys"), msg(Role::User, "last question")]
        );
    }

    #[test]
    fn large_system_prompt_is_truncated() {
        let ms = vec![
            msg(Role::System, &words(90)),
            msg(Role::User, "one two three"),
        ];
        let out = fit(ms, 50);
        assert_eq!(out[1], msg(Role::User, "one two three"));
        assert_eq!(count(&out[0].text_content()), 47);
        assert!(words(90).starts_with(&out[0].text_content()));
    }

    #[test]
    fn large_last_message_is_truncated() {
        let ms = vec![
            msg(Role::System, &words(30)),
            msg(Role::User, "x"),
            msg(Role::User, &words(60)),
        ];
        let out = fit(ms, 50);
        assert_eq!(out[0], msg(Role::System, &words(30)));
        assert_eq!(count(&out[1].text_content()), 20);
        assert!(words(60).starts_with(&out[1].text_content()));
    }

    #[test]
    fn system_alone_over_budget_leaves_last_empty() {
        // System ≤ 80 % of the pair, but over the budget by itself: cut to max, and the
        // last message gets nothing (the caller reports the empty user message).
        let ms = vec![msg(Role::System, &words(60)), msg(Role::User, &words(40))];
        let out = fit(ms, 30);
        assert_eq!(count(&out[0].text_content()), 30);
        assert_eq!(out[1], msg(Role::User, ""));
    }

    #[test]
    fn last_message_over_budget_with_large_system() {
        // System > 80 % of the pair, and the last message alone exceeds the budget.
        let ms = vec![msg(Role::System, &words(500)), msg(Role::User, &words(60))];
        let out = fit(ms, 50);
        assert_eq!(count(&out[1].text_content()), 50);
        assert_eq!(out[0], msg(Role::System, ""));
    }

    #[test]
    fn single_message_is_truncated() {
        let out = fit(vec![msg(Role::User, &words(20))], 5);
        assert_eq!(out, vec![msg(Role::User, "w0 w1 w2 w3 w4")]);
    }

    #[test]
    fn list_contents_are_not_truncated() {
        let parts = serde_json::json!([{"type": "text", "text": words(60)}]);
        let user = Message {
            role: Role::User,
            content: parts.clone(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        };
        let out = fit(vec![msg(Role::System, "s"), user], 10);
        assert_eq!(out[1].content, parts);
    }

    #[test]
    fn truncate_tokens_is_a_counted_prefix() {
        assert_eq!(truncate_tokens("hello, world!", 0), "");
        assert_eq!(truncate_tokens("hello, world!", 1), "hello");
        assert_eq!(truncate_tokens("hello, world!", 2), "hello,");
        assert_eq!(truncate_tokens("hello, world!", 3), "hello, world");
        assert_eq!(truncate_tokens("hello, world!", 9), "hello, world!");
        assert_eq!(truncate_tokens("  héllo  wörld  ", 1), "  héllo");
        for text in ["a b c", "日本語 テキスト。", "x--y  z", "🙂🙂 a🙂", ""] {
            for n in 0..8 {
                let cut = truncate_tokens(text, n);
                assert!(text.starts_with(&cut));
                assert!(count(&cut) <= n);
                if count(text) <= n {
                    assert_eq!(count(&cut), count(text));
                } else {
                    assert_eq!(count(&cut), n);
                }
            }
        }
    }
}
